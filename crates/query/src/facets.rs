//! Facets and statistics over a query's answer: counts and sizes per group (extension, folder, year, month,
//! attribute, size bucket), and totals with the range of each time. One pass over the answer's bits on all
//! cores, reading only the columns asked for: no path is built except the labels of the folders shown.

use std::collections::HashMap;

use uffs_index::time::{known, to_civil};
use uffs_index::{flags, EntryId, Index};

use crate::bitset::Bitset;
use crate::search::Searcher;

/// What a facet groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FacetKey {
    /// A file's extension, lower-case (`""` for none; folders are not counted).
    Ext,
    /// The folder an entry is in.
    Folder,
    /// The year it was modified (`unknown` when the volume does not keep the time).
    Year,
    /// The month it was modified (`2024-05`, or `unknown`).
    Month,
    /// Each attribute letter set on it (an entry counts once for each of its letters).
    Attrib,
    /// Its size, in buckets that grow 16-fold: 0, under 1 KiB, under 16 KiB, … , 1 TiB and more.
    SizeBucket,
}

/// One group of a facet: how many entries and what size they have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub count: u64,
    pub size: u64,
    pub allocated: u64,
}

impl Tally {
    fn add(&mut self, idx: &Index, id: EntryId) {
        self.count += 1;
        self.size = self.size.saturating_add(idx.size(id));
        self.allocated = self.allocated.saturating_add(idx.allocated(id));
    }

    pub fn merge(&mut self, o: &Tally) {
        self.count += o.count;
        self.size = self.size.saturating_add(o.size);
        self.allocated = self.allocated.saturating_add(o.allocated);
    }
}

/// The size buckets' upper bounds (exclusive) and labels; the last has none.
const SIZE_BUCKETS: [(u64, &str); 9] = [
    (1, "0"),
    (1 << 10, "< 1 KiB"),
    (16 << 10, "1-16 KiB"),
    (256 << 10, "16-256 KiB"),
    (4 << 20, "256 KiB-4 MiB"),
    (64 << 20, "4-64 MiB"),
    (1 << 30, "64 MiB-1 GiB"),
    (16 << 30, "1-16 GiB"),
    (u64::MAX, ">= 16 GiB"),
];

/// The year and month group of a time the volume does not keep, after every date.
const UNKNOWN_DATE: u64 = u64::MAX;

/// A group's key before it is named: what sorts groups in their natural order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RawKey(pub u64);

/// A hasher for integer keys: one multiplication (SipHash would cost more than the rest of a facet's pass).
#[derive(Default)]
struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Groups = HashMap<u64, Tally, std::hash::BuildHasherDefault<IntHasher>>;

/// The groups of `key` over the entries in `set` of one searcher's index, with their labels (a folder's label is
/// its path after `prefix`; `path` makes it). Unordered.
pub fn facet(
    s: &Searcher,
    set: &Bitset,
    key: FacetKey,
    path: &dyn Fn(EntryId) -> String,
) -> Vec<(RawKey, String, Tally)> {
    use rayon::prelude::*;
    let idx = s.index();
    let aids = s.aids();
    let raw = |id: EntryId, out: &mut dyn FnMut(u64)| {
        let f = idx.flags(id);
        match key {
            FacetKey::Ext => {
                if f & (flags::DIRECTORY | flags::STREAM) == 0 {
                    out(u64::from(aids.ext_id.get(id)))
                }
            }
            FacetKey::Folder => out(u64::from(idx.parent(id))),
            FacetKey::Year | FacetKey::Month => out(match known(idx.modified(id)) {
                Some(t) => {
                    let c = to_civil(t);
                    let y = c.year.clamp(0, 9999) as u64;
                    if key == FacetKey::Year {
                        y
                    } else {
                        y * 100 + u64::from(c.month)
                    }
                }
                None => UNKNOWN_DATE,
            }),
            FacetKey::Attrib => {
                for (i, (_, bit)) in flags::LETTERS.iter().enumerate() {
                    if f & bit != 0 {
                        out(i as u64)
                    }
                }
            }
            FacetKey::SizeBucket => {
                if f & flags::DIRECTORY == 0 {
                    let v = idx.size(id);
                    out(SIZE_BUCKETS.iter().position(|b| v < b.0).unwrap_or(8) as u64)
                }
            }
        }
    };
    const WORDS: usize = 4096;
    let groups: Groups = set
        .words()
        .par_chunks(WORDS)
        .enumerate()
        .fold(Groups::default, |mut acc: Groups, (c, words)| {
            for (w, &bits) in words.iter().enumerate() {
                let mut b = bits;
                while b != 0 {
                    let id = ((c * WORDS + w) * 64) as EntryId + b.trailing_zeros();
                    b &= b - 1;
                    raw(id, &mut |k| acc.entry(k).or_default().add(idx, id));
                }
            }
            acc
        })
        .reduce(Groups::default, |mut a, b| {
            for (k, t) in b {
                a.entry(k).or_default().merge(&t);
            }
            a
        });
    groups
        .into_iter()
        .map(|(k, t)| {
            let label = match key {
                FacetKey::Ext => String::from_utf8_lossy(aids.ext(k as u32)).into_owned(),
                FacetKey::Folder => path(k as EntryId),
                FacetKey::Year | FacetKey::Month if k == UNKNOWN_DATE => "unknown".to_string(),
                FacetKey::Year => k.to_string(),
                FacetKey::Month => format!("{:04}-{:02}", k / 100, k % 100),
                FacetKey::Attrib => flags::LETTERS[k as usize].0.to_string(),
                FacetKey::SizeBucket => SIZE_BUCKETS[k as usize].1.to_string(),
            };
            (RawKey(k), label, t)
        })
        .collect()
}

/// Totals of a set of entries and the range of each of their times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub count: u64,
    pub files: u64,
    pub folders: u64,
    pub size: u64,
    pub allocated: u64,
    /// (earliest, latest) of created, modified, MFT-changed, accessed; `None` when no entry has the time set.
    pub times: [Option<(u64, u64)>; 4],
}

impl Stats {
    pub fn merge(&mut self, o: &Stats) {
        self.count += o.count;
        self.files += o.files;
        self.folders += o.folders;
        self.size = self.size.saturating_add(o.size);
        self.allocated = self.allocated.saturating_add(o.allocated);
        for (t, u) in self.times.iter_mut().zip(&o.times) {
            *t = match (*t, *u) {
                (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                (a, b) => a.or(b),
            };
        }
    }

    fn add(&mut self, idx: &Index, id: EntryId) {
        let f = idx.flags(id);
        self.count += 1;
        if f & flags::STREAM == 0 {
            if f & flags::DIRECTORY != 0 {
                self.folders += 1;
            } else {
                self.files += 1;
            }
        }
        self.size = self.size.saturating_add(idx.size(id));
        self.allocated = self.allocated.saturating_add(idx.allocated(id));
        let times = [
            idx.created(id),
            idx.modified(id),
            idx.mft_changed(id),
            idx.accessed(id),
        ];
        for (t, v) in self.times.iter_mut().zip(times) {
            // A time the volume does not keep is no earliest time.
            if let Some(v) = known(v) {
                *t = Some(t.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
            }
        }
    }
}

/// The statistics of the entries in `set` of `idx`.
pub fn stats(idx: &Index, set: &Bitset) -> Stats {
    use rayon::prelude::*;
    const WORDS: usize = 4096;
    set.words()
        .par_chunks(WORDS)
        .enumerate()
        .fold(Stats::default, |mut acc, (c, words)| {
            for (w, &bits) in words.iter().enumerate() {
                let mut b = bits;
                while b != 0 {
                    let id = ((c * WORDS + w) * 64) as EntryId + b.trailing_zeros();
                    b &= b - 1;
                    acc.add(idx, id);
                }
            }
            acc
        })
        .reduce(Stats::default, |mut a, b| {
            a.merge(&b);
            a
        })
}
