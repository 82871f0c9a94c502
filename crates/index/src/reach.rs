//! Which entries a user may know of, by plocate's rule: an entry is seen when every folder above it may be listed
//! and entered (read and search permission) by the user's uid or one of their groups. The entry itself needs
//! nothing: a file of mode 0600 in a folder the user may list is seen, as `ls` shows it.
//!
//! The owners and permissions are the index's ([`crate::posix`]); an entry without them (a volume that keeps none)
//! is reached by no one but root. ACLs are not read: a folder that an ACL alone opens to a user stays closed.

use std::collections::HashMap;

use crate::index::{flags, EntryId, Index};
use crate::posix::Posix;

/// Who asks: a uid and every group it is in (its primary group too).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller {
    pub uid: u32,
    pub gids: Vec<u32>,
}

impl Caller {
    /// Whether the caller sees everything (root).
    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// Whether a folder of owner and mode `p` may be listed and entered: read and search permission in the
    /// owner's bits, else the group's, else the others' (the kernel's order: an owner denied by their own bits is
    /// denied, whatever the others' say).
    pub fn may_list(&self, p: Posix) -> bool {
        if self.is_root() {
            return true;
        }
        let bits = if p.uid == self.uid {
            p.mode >> 6
        } else if self.gids.contains(&p.gid) {
            p.mode >> 3
        } else {
            p.mode
        };
        bits & 0o5 == 0o5
    }
}

/// Per entry: reached (its folders may be listed down to it), not, or not known yet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Unknown,
    Yes,
    No,
}

/// Whether each folder of `idx` may be listed and entered by `caller` down from the root: the folder's own
/// permission and every folder's above it. `above`: whether the folders above the index's root may be (the
/// mount's path). `replaced(f)`: for a folder a delta replaces, the answer for its copy there, which is its own.
fn folders_open(
    idx: &Index,
    caller: &Caller,
    above: bool,
    replaced: &dyn Fn(EntryId) -> Option<bool>,
) -> Vec<State> {
    let n = idx.len();
    let mut state = vec![State::Unknown; n];
    let own = |f: EntryId| idx.posix(f).is_some_and(|p| caller.may_list(p));
    let root = idx.root();
    let mut chain = Vec::new();
    for start in 0..n as EntryId {
        if state[start as usize] != State::Unknown || idx.flags(start) & flags::DIRECTORY == 0 {
            continue;
        }
        // Up to a folder already known (or the root), then back down.
        let mut f = start;
        let mut known = loop {
            // A folder a delta replaces is open as its copy there is, whatever the base says.
            if let Some(r) = replaced(f) {
                state[f as usize] = if r { State::Yes } else { State::No };
                break r;
            }
            match state[f as usize] {
                State::Yes => break true,
                State::No => break false,
                State::Unknown => {}
            }
            chain.push(f);
            let p = idx.parent(f);
            // The root, a parent out of range or a cycle (a file not checked yet): nothing above to ask.
            if f == root || p as usize >= n || p == f || chain.len() > crate::MAX_DEPTH {
                break above && f == root;
            }
            f = p;
        };
        for &c in chain.iter().rev() {
            known = known && own(c);
            state[c as usize] = if known { State::Yes } else { State::No };
        }
        chain.clear();
    }
    state
}

/// The entries of `idx` that `caller` may not know of, a bit per entry (root: none). `above`: whether the
/// folders above the index's root may be listed and entered (those of the folder's path on this machine).
pub fn unseen(idx: &Index, caller: &Caller, above: bool) -> Vec<u64> {
    unseen_in(idx, caller, above, &|_| None)
}

/// [`unseen`] for an index and the delta over it ([`crate::layer`]), whose `hidden` base entries the delta
/// replaces: a base entry below a replaced folder is reached through the folder's copy in the delta (its new
/// place and permissions). Gives the bits of the base, then the delta's.
pub fn unseen_layered(
    base: &Index,
    hidden: &[u64],
    delta: &Index,
    caller: &Caller,
    above: bool,
) -> (Vec<u64>, Vec<u64>) {
    if caller.is_root() {
        return (
            vec![0; base.len().div_ceil(64)],
            vec![0; delta.len().div_ceil(64)],
        );
    }
    let open = folders_open(delta, caller, above, &|_| None);
    let copies: HashMap<(u32, u32), EntryId> = (0..delta.len() as EntryId)
        .filter(|&d| delta.flags(d) & flags::DIRECTORY != 0)
        .map(|d| ((delta.record(d), delta.flags(d) & flags::SYNTHETIC), d))
        .collect();
    let is_hidden = |id: EntryId| {
        hidden
            .get(id as usize / 64)
            .is_some_and(|w| w >> (id % 64) & 1 == 1)
    };
    let replaced = |f: EntryId| {
        is_hidden(f).then(|| {
            copies
                .get(&(base.record(f), base.flags(f) & flags::SYNTHETIC))
                .is_some_and(|&d| open[d as usize] == State::Yes)
        })
    };
    let d = bits_of(delta, caller, above, &open);
    let b = unseen_in(base, caller, above, &replaced);
    (b, d)
}

fn unseen_in(
    idx: &Index,
    caller: &Caller,
    above: bool,
    replaced: &dyn Fn(EntryId) -> Option<bool>,
) -> Vec<u64> {
    if caller.is_root() {
        return vec![0; idx.len().div_ceil(64)];
    }
    let open = folders_open(idx, caller, above, replaced);
    bits_of(idx, caller, above, &open)
}

/// The bit set of entries whose folder is not open (the root: when the folders above it are not).
fn bits_of(idx: &Index, caller: &Caller, above: bool, open: &[State]) -> Vec<u64> {
    let n = idx.len();
    let mut words = vec![0u64; n.div_ceil(64)];
    if caller.is_root() {
        return words;
    }
    let root = idx.root();
    for id in 0..n as EntryId {
        let seen = if id == root {
            above
        } else {
            let p = idx.parent(id);
            (p as usize) < n && open[p as usize] == State::Yes
        };
        if !seen {
            words[id as usize / 64] |= 1 << (id % 64);
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(mode: u32, uid: u32, gid: u32) -> Posix {
        Posix {
            mode: 0o040_000 | mode,
            uid,
            gid,
        }
    }

    #[test]
    fn the_owners_bits_then_the_groups_then_the_others() {
        let ana = Caller {
            uid: 1000,
            gids: vec![1000, 50],
        };
        assert!(ana.may_list(dir(0o700, 1000, 0)));
        assert!(!ana.may_list(dir(0o700, 0, 0)));
        assert!(ana.may_list(dir(0o750, 0, 50)));
        assert!(!ana.may_list(dir(0o750, 0, 51)));
        assert!(ana.may_list(dir(0o705, 0, 51)));
        // Read without search, or search without read, is not enough to list a folder's entries.
        assert!(!ana.may_list(dir(0o744, 0, 0)));
        assert!(!ana.may_list(dir(0o711, 0, 0)));
        // The owner's own bits decide for the owner, as the kernel decides.
        assert!(!ana.may_list(dir(0o077, 1000, 50)));
        assert!(!ana.may_list(dir(0o007, 0, 50)));
        let root = Caller {
            uid: 0,
            gids: vec![0],
        };
        assert!(root.may_list(dir(0o000, 1000, 1000)));
    }
}
