//! The system daemon's other users (guests): what each may ask, and the volumes as each sees them.
//!
//! Root's daemon (`uffs daemon start --system`) keeps the machine's folders; any user's `uffs QUERY` without a
//! daemon of their own asks it. A guest is answered only the entries its uid and groups could reach (plocate's
//! rule, [`uffs_index::reach`]): every folder above an entry, on this machine's path to the volume's folder too,
//! may be listed and entered. Counts, facets, totals, duplicates and child terms are made over those entries
//! alone ([`Searcher::restricted`]), so no number tells of what the guest may not see. A guest may search, not
//! read files' data (`content:`, `type:`, `hash:` would read as root what the guest may not read), and nothing
//! else: status, volumes, refreshes and stopping are root's.

use std::sync::{Arc, Mutex};

use uffs_index::reach::{self, Caller};
use uffs_query::bitset::Bitset;
use uffs_query::Searcher;

use crate::protocol::Request;
use crate::server::Loaded;

/// Callers whose views of one volume are kept (each a bit per entry and the totals made for it).
const KEPT: usize = 16;

/// A volume's searchers as each recent caller sees them; made anew with each snapshot of the volume.
#[derive(Default)]
pub struct Views(Mutex<Vec<(Caller, Arc<Vec<Searcher>>)>>);

/// Why a guest may not ask `req`, if it may not.
pub(crate) fn refused(req: &Request) -> Option<String> {
    match req {
        Request::Ping {} | Request::Query { .. } => None,
        _ => Some(
            "refused: the system daemon answers other users' searches only (its status, volumes and refreshes \
             are root's; `uffs daemon start` runs a daemon of your own)"
                .into(),
        ),
    }
}

/// What a guest's search may not do: read the files' data.
pub(crate) const NO_DATA: &str =
    "refused: content:, type: and hash: read the files' data, which the system daemon \
reads for root only; search with --source FOLDER to read them as yourself";

/// Volume `l`'s searchers as `caller` sees them (made on the first query of this caller on this snapshot).
pub(crate) fn seen_by(l: &Loaded, caller: &Caller) -> Arc<Vec<Searcher>> {
    let mut views = l.views.0.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, v)) = views.iter().find(|(c, _)| c == caller) {
        return Arc::clone(v);
    }
    let above = above_open(&l.entry.prefix(), caller);
    let bits = |words: Vec<u64>, s: &Searcher| Bitset::from_words(words, s.index().len());
    let unseen: Vec<Bitset> = match (&l.delta, &l.searchers[..]) {
        (Some(d), [b, ds]) => {
            let (wb, wd) = reach::unseen_layered(l.base(), &d.hidden, &d.index, caller, above);
            vec![bits(wb, b), bits(wd, ds)]
        }
        _ => l
            .searchers
            .iter()
            .map(|s| bits(reach::unseen(s.index(), caller, above), s))
            .collect(),
    };
    let v = Arc::new(Searcher::restricted(&l.searchers, &unseen));
    if views.len() == KEPT {
        views.remove(0);
    }
    views.push((caller.clone(), Arc::clone(&v)));
    v
}

/// Whether `caller` may list and enter every folder above `root`, the volume's folder on this machine (`/` and
/// `/home` for `/home/ana`), as they are now. A volume that is no folder here (a device, an image) is root's.
fn above_open(root: &str, caller: &Caller) -> bool {
    if caller.is_root() {
        return true;
    }
    let root = std::path::Path::new(root);
    if !root.is_absolute() {
        return false;
    }
    root.ancestors().skip(1).all(|dir| folder_open(dir, caller))
}

#[cfg(unix)]
fn folder_open(dir: &std::path::Path, caller: &Caller) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).is_ok_and(|m| {
        caller.may_list(uffs_index::Posix {
            mode: m.mode(),
            uid: m.uid(),
            gid: m.gid(),
        })
    })
}

#[cfg(not(unix))]
fn folder_open(_: &std::path::Path, _: &Caller) -> bool {
    false
}
