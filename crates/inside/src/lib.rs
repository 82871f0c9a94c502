//! The query terms a file's data answers, decided over a volume: `content:TEXT` (with `case:`, `wholeword:`,
//! `regex:`), `type:NAME` (a type, a group or `mismatch`, from the first bytes) and `hash:HEX` (md5, sha1,
//! sha256 or xxh3). [`VolumeContents`] is the [`uffs_search::Contents`] of a set of volumes at hand: the search
//! narrows by the rest of the query, then it reads the candidates with [`uffs_mft::content::many`] (in disk
//! order, on every core) and keeps those the terms hold for.
//!
//! The terms are decided one after the other, cheapest first (types read only each file's first
//! [`uffs_filetype::HEAD_BYTES`], then hashes, then text), each over the files the previous ones kept: a query
//! rarely has more than one, and every pass reads less than the one before. A file whose data cannot be read
//! (encrypted, a damaged runlist) matches no term and is counted ([`VolumeContents::unreadable`]); a file
//! without data (a metafile with named streams only) reads as empty. NTFS's own files (`$MFT`, `$LogFile`,
//! `$Extend/…`) are not candidates: they are the file system, not files on it, and a mount shows none of them.

use std::io::{Read, Seek};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use uffs_index::{flags, EntryId, EntryKind, Index};
use uffs_mft::content::many::{self, File, Options, Progress, Wanted};
use uffs_mft::content::ContentError;
use uffs_mft::Volume;
use uffs_query::ast::{ContentTerm, KindFilter};
use uffs_query::Searcher;
use uffs_search::{ContentFilter, Contents, Error};

mod utf16;

/// The volumes of a search, at hand to read: target `t` of the search reads `volumes[t]`.
pub struct VolumeContents<'a> {
    /// `None`: the target's volume is not at hand (its source gone): its files match no data term.
    volumes: Vec<Option<&'a Volume>>,
    unreadable: AtomicUsize,
    from_index_slack: AtomicUsize,
    /// Set by whoever asked when it went away: no further file is read (those left match no term).
    stop: Arc<AtomicBool>,
}

impl<'a> VolumeContents<'a> {
    /// `volumes[t]` is the volume of the search's target `t` (a volume under a delta is two targets, both its).
    pub fn new(volumes: Vec<&'a Volume>) -> VolumeContents<'a> {
        Self::partly(volumes.into_iter().map(Some).collect())
    }

    /// As [`VolumeContents::new`], where a `None` target's volume is not at hand: its files match no data term
    /// and have no type (whoever asked says so: they are not counted [`VolumeContents::unreadable`]).
    pub fn partly(volumes: Vec<Option<&'a Volume>>) -> VolumeContents<'a> {
        VolumeContents {
            volumes,
            unreadable: AtomicUsize::new(0),
            from_index_slack: AtomicUsize::new(0),
            stop: Arc::default(),
        }
    }

    /// Stops reading files once `stop` is set (a server's client went away).
    pub fn stopped_by(mut self, stop: Arc<AtomicBool>) -> VolumeContents<'a> {
        self.stop = stop;
        self
    }

    /// The volume of the search's target `target`.
    fn volume(&self, target: usize) -> Result<Option<&Volume>, Error> {
        self.volumes.get(target).copied().ok_or_else(|| {
            Error::Failed(format!(
                "no volume at hand for the search's target {target}"
            ))
        })
    }

    /// Files whose data could not be read so far (they matched no data term, or have no `type`).
    pub fn unreadable(&self) -> usize {
        self.unreadable.load(Ordering::Relaxed)
    }

    /// What to warn of when files could not be read (the answer is partial), in every front end's words.
    pub fn unreadable_warning(&self) -> Option<String> {
        let n = self.unreadable();
        (n > 0).then(|| {
            format!(
                "{n} file(s) could not be read (encrypted or damaged): they match no content:, type: or hash: term"
            )
        })
    }

    /// Names from index slack a data term passed over so far: their record may hold another file now, so
    /// nothing is read through them and they match no data term.
    pub fn from_index_slack(&self) -> usize {
        self.from_index_slack.load(Ordering::Relaxed)
    }
}

/// One term, made ready to decide.
enum Test {
    Type(uffs_filetype::Filter),
    Hash(uffs_hash::HashTerm),
    /// The text, and for a literal one its UTF-16LE form (see [`utf16`]).
    Text(uffs_grep::Grep, Option<utf16::Utf16Probe>),
}

impl Test {
    fn new(term: &ContentTerm) -> Result<Test, Error> {
        let bad = |e: String| Error::BadRequest(e);
        Ok(match term {
            ContentTerm::Type(name) => {
                Test::Type(uffs_filetype::Filter::parse(name).map_err(|e| bad(e.to_string()))?)
            }
            ContentTerm::Hash(hex) => {
                Test::Hash(uffs_hash::HashTerm::parse(hex).map_err(|e| bad(e.to_string()))?)
            }
            ContentTerm::Text {
                text,
                case_sensitive,
                whole_word,
                regex,
                utf16,
            } => {
                let mut opts = uffs_grep::Options::content(
                    text.as_str(),
                    *case_sensitive,
                    *whole_word,
                    *regex,
                );
                if *utf16 {
                    opts.encoding = Some("utf-16le".into());
                }
                let probe = (!*utf16 && !*regex)
                    .then(|| utf16::Utf16Probe::new(text, *case_sensitive, *whole_word))
                    .flatten();
                Test::Text(
                    uffs_grep::Grep::new(&opts).map_err(|e| bad(format!("content: {e}")))?,
                    probe,
                )
            }
        })
    }

    /// Decided first: what reads less.
    fn order(&self) -> u8 {
        match self {
            Test::Type(_) => 0,
            Test::Hash(_) => 1,
            Test::Text(..) => 2,
        }
    }
}

impl Contents for VolumeContents<'_> {
    fn filter(
        &self,
        target: usize,
        _prefix: &str,
        searcher: &Searcher,
        ids: Vec<EntryId>,
        filters: &[ContentFilter],
    ) -> Result<Vec<EntryId>, Error> {
        let Some(vol) = self.volume(target)? else {
            return Ok(Vec::new());
        };
        let idx = searcher.index();
        let mut tests: Vec<(Test, &ContentFilter)> = filters
            .iter()
            .map(|f| Ok((Test::new(&f.term)?, f)))
            .collect::<Result<_, Error>>()?;
        tests.sort_by_key(|(t, _)| t.order());
        let mut ids: Vec<EntryId> = ids
            .into_iter()
            .filter(|&id| !is_metafile(idx, id))
            .collect();
        for (test, f) in &tests {
            ids.retain(|&id| kind_fits(idx, id, f.only));
            if ids.is_empty() {
                break;
            }
            let held = self.pass(vol, idx, &ids, test);
            ids = ids
                .into_iter()
                .zip(held)
                .filter_map(|(id, h)| match h {
                    Some(h) if h != f.negated => Some(id),
                    _ => None,
                })
                .collect();
        }
        Ok(ids)
    }

    fn types(
        &self,
        target: usize,
        searcher: &Searcher,
        ids: &[EntryId],
    ) -> Result<Vec<Option<&'static str>>, Error> {
        let Some(vol) = self.volume(target)? else {
            return Ok(vec![None; ids.len()]);
        };
        let idx = searcher.index();
        // Folders and NTFS's own files have no type; the rest are read for their first bytes.
        let (files, at): (Vec<EntryId>, Vec<usize>) = ids
            .iter()
            .enumerate()
            .filter(|&(_, &id)| {
                (idx.kind(id) != EntryKind::Directory || idx.flags(id) & flags::STREAM != 0)
                    && !is_metafile(idx, id)
            })
            .map(|(i, &id)| (id, i))
            .unzip();
        let found = self.read_each(
            vol,
            idx,
            &files,
            uffs_filetype::HEAD_BYTES as u64,
            |_, file| match file {
                Ok(f) => {
                    let mut head = Vec::with_capacity(f.len() as usize);
                    f.read_to_end(&mut head).ok()?;
                    Some(uffs_filetype::detect(&head).map_or("", |t| t.name()))
                }
                Err(ContentError::NoStream { .. }) => Some(""),
                Err(_) => None,
            },
        );
        let mut types = vec![None; ids.len()];
        for (i, t) in at.into_iter().zip(found) {
            types[i] = t;
        }
        Ok(types)
    }
}

impl VolumeContents<'_> {
    /// Whether `test` holds for each of `ids` (`None`: the data could not be read).
    fn pass(&self, vol: &Volume, idx: &Index, ids: &[EntryId], test: &Test) -> Vec<Option<bool>> {
        let limit = match test {
            Test::Type(_) => uffs_filetype::HEAD_BYTES as u64,
            _ => u64::MAX,
        };
        let workers: Mutex<Vec<uffs_grep::Worker>> = Mutex::new(Vec::new());
        self.read_each(vol, idx, ids, limit, |id, file| match file {
            Ok(f) => decide(test, f, idx, id, &workers),
            Err(ContentError::NoStream { .. }) => decide_empty(test, idx, id),
            Err(_) => None,
        })
    }

    /// What `answer` says of each of `ids` from its data (its first `limit` bytes), read in disk order on every
    /// core; a `None` answer counts the file as unreadable.
    fn read_each<T: Clone + Send>(
        &self,
        vol: &Volume,
        idx: &Index,
        ids: &[EntryId],
        limit: u64,
        answer: impl Fn(EntryId, Result<&mut File<'_>, ContentError>) -> Option<T> + Sync,
    ) -> Vec<Option<T>> {
        // Names from index slack are not read (see `from_index_slack`): their answer stays `None`.
        let read: Vec<usize> = (0..ids.len())
            .filter(|&k| !idx.is_from_index_slack(ids[k]))
            .collect();
        self.from_index_slack
            .fetch_add(ids.len() - read.len(), Ordering::Relaxed);
        let wanted: Vec<Wanted> = read
            .iter()
            .map(|&k| Wanted {
                record: u64::from(idx.record(ids[k])),
                stream: stream_name(idx, ids[k]),
            })
            .collect();
        let plan = many::plan(
            vol,
            wanted,
            &Options {
                limit,
                ..Options::default()
            },
        );
        let answers = Mutex::new(vec![None; ids.len()]);
        plan.read(&Progress::stopped_by(&self.stop), |item, file| {
            let k = read[item];
            let held = answer(ids[k], file);
            if held.is_none() {
                self.unreadable.fetch_add(1, Ordering::Relaxed);
            }
            answers.lock().expect("answers")[k] = held;
        });
        answers.into_inner().expect("answers")
    }
}

/// Decides `test` on one file's data; `None` when reading it failed.
fn decide(
    test: &Test,
    f: &mut File<'_>,
    idx: &Index,
    id: EntryId,
    workers: &Mutex<Vec<uffs_grep::Worker>>,
) -> Option<bool> {
    match test {
        Test::Type(filter) => {
            let mut head = Vec::with_capacity(f.len() as usize);
            f.read_to_end(&mut head).ok()?;
            Some(filter.matches_head(&head, &extension(idx, id), idx.size(id)))
        }
        Test::Hash(term) => {
            let mut h = uffs_hash::Hasher::new(term.algos());
            match f.as_slice() {
                Some(b) => h.update(b),
                None => {
                    h.update_reader(f).ok()?;
                }
            }
            Some(term.matches(&h.finish()))
        }
        Test::Text(grep, probe) => {
            let mut w = workers
                .lock()
                .expect("workers")
                .pop()
                .unwrap_or_else(|| grep.worker());
            let found = match f.as_slice() {
                Some(b) => w.is_match_slice(b),
                None => w.is_match_seekable(&mut *f),
            };
            workers.lock().expect("workers").push(w);
            match (found.ok()?, probe) {
                (false, Some(p)) => match f.as_slice() {
                    Some(b) => Some(p.is_match(b)),
                    None => {
                        f.rewind().ok()?;
                        p.is_match_reader(&mut *f).ok()
                    }
                },
                (found, _) => Some(found),
            }
        }
    }
}

/// Decides `test` on a file without data (empty).
fn decide_empty(test: &Test, idx: &Index, id: EntryId) -> Option<bool> {
    Some(match test {
        Test::Type(filter) => filter.matches(None, &extension(idx, id), 0),
        Test::Hash(term) => term.matches(&uffs_hash::Hasher::new(term.algos()).finish()),
        Test::Text(..) => false,
    })
}

fn kind_fits(idx: &Index, id: EntryId, only: Option<KindFilter>) -> bool {
    let stream = idx.flags(id) & flags::STREAM != 0;
    match only {
        Some(KindFilter::File) => !stream,
        // Folders have no data of their own to match; their named streams do.
        Some(KindFilter::Folder) => false,
        None => true,
    }
}

/// A file's extension, lower-case (a stream has none: its name is the file's and the stream's).
fn extension(idx: &Index, id: EntryId) -> String {
    if idx.flags(id) & flags::STREAM != 0 {
        return String::new();
    }
    let name = idx.name(id);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => ext.to_lowercase(),
        _ => String::new(),
    }
}

/// The stream an entry names: a stream entry's name is `file:stream`; anything else reads its unnamed data.
pub fn stream_name(idx: &Index, id: EntryId) -> String {
    if idx.flags(id) & flags::STREAM == 0 {
        return String::new();
    }
    idx.name(id)
        .rsplit_once(':')
        .map_or(String::new(), |(_, s)| s.to_string())
}

/// A file system's metadata shown as a file: on NTFS records 0 to 15 (`$MFT` … `$Extend`, and those reserved) but
/// the root, and what `$Extend` holds; on the others the entries uffs makes of their tables (`$MBR`, `$FAT1`,
/// `$ALLOC_BITMAP` …: in the root, named `$…`, system and hidden).
pub fn is_metafile(idx: &Index, id: EntryId) -> bool {
    if idx.meta.filesystem != uffs_index::FileSystem::Ntfs {
        const SYSTEM_HIDDEN: u32 = flags::SYSTEM | flags::HIDDEN;
        return idx.parent(id) == idx.root()
            && idx.flags(id) & SYSTEM_HIDDEN == SYSTEM_HIDDEN
            && idx.name(id).starts_with('$');
    }
    const ROOT: u32 = 5;
    const EXTEND: u32 = 11;
    let mut at = id;
    for _ in 0..64 {
        let r = idx.record(at);
        if r < 16 && r != ROOT && idx.flags(at) & flags::SYNTHETIC == 0 {
            return at == id || r == EXTEND;
        }
        let up = idx.parent(at);
        if up == at || r == ROOT {
            return false;
        }
        at = up;
    }
    false
}
