//! Search aids: structures derived from the columns that make queries fast, built once per index and stored in
//! the index file beside the columns (so a loaded index answers at once, and pages no query touches stay on disk).
//!
//! (The names folded to lower case, which most of these are made from, are the index's own name arena: see
//! [`crate::names`].)
//! * the entries in name order and in path order, with each entry's rank in both;
//! * the entries in size, created, modified, accessed and extension order (ties in name order), so the top of
//!   any of them is a walk from one end, and a range (`size:>1gb`, `dm:2021`) is a binary search of the order
//!   through its column and a slice of the order, reading nothing of the other entries;
//! * an extension id per file (ids in dictionary order, 0 for none) and the dictionary;
//! * a trigram filter: per hashed trigram, the set of blocks of 64 entries whose folded names hold it (4 bytes
//!   per entry); the blocks that can hold a needle are the AND of its trigrams' rows.

use std::borrow::Cow;
use std::collections::HashMap;

use rayon::prelude::*;

use crate::column::Col;
use crate::index::{flags, EntryId, Index};
use crate::packed::{self, Packed};

/// Entries per block of the trigram filter.
pub const TRIGRAM_BLOCK: usize = 64;
/// Hashed trigram keys in the filters written. A block of names holds a few hundred distinct trigrams, so about
/// a third of a block's keys are set and a needle of ten letters (eight trigrams) leaves one block in 6,000 that
/// holds none of it: on the benchmark volume `79rhkp1fnd` reads 3 blocks of names, where 1,024 keys (2 bytes per
/// entry, the filters of files written before) read 81.
pub const TRIGRAM_KEYS: usize = 2048;
/// The key counts a filter read from a file may have: the key of a trigram under the smaller is its key under
/// the larger, modulo the smaller.
pub const TRIGRAM_KEY_COUNTS: [usize; 2] = [1024, TRIGRAM_KEYS];

/// The filter key of a trigram, in a filter of `keys` keys (one of [`TRIGRAM_KEY_COUNTS`]).
pub fn trigram_key(t: &[u8], keys: usize) -> usize {
    let v = u32::from(t[0]) | u32::from(t[1]) << 8 | u32::from(t[2]) << 16;
    (v.wrapping_mul(0x9E37_79B1) >> 21) as usize % keys
}

/// Words in one key's row of the trigram filter: a bit per block.
pub fn trigram_row_words(entries: usize) -> usize {
    entries.div_ceil(TRIGRAM_BLOCK).div_ceil(64)
}

#[derive(Debug, Clone, Default)]
pub struct SearchAids {
    pub name_order: Packed,
    pub name_rank: Packed,
    /// Depth first from the root, each folder's children in name order: paths compared component by component.
    pub path_order: Packed,
    pub path_rank: Packed,
    pub size_order: Packed,
    pub created_order: Packed,
    pub modified_order: Packed,
    pub accessed_order: Packed,
    pub ext_order: Packed,
    pub ext_id: ExtIds,
    pub ext_text: Col<u8>,
    pub ext_starts: Col<u32>,
    pub trigrams: Col<u64>,
    /// The folded name of every [`NAME_FENCE`]th entry of the name order, as text and offsets: a prefix search
    /// picks the stretch of the order between two of them from this small table, then reads that stretch and a
    /// handful of names, not names all over the file (a one-shot `uiaclient*` checked 40 fewer chunks). Empty
    /// in files written before they were stored (format 6 files read them when present).
    pub name_fences: Col<u8>,
    pub name_fence_starts: Col<u32>,
    /// Every [`FENCE`]th key of the sorted columns, held in memory (not stored), sampled on first use: a binary
    /// search first picks the stretch between two fence posts, so it reads one stretch of the mapped column, not
    /// pages all over it.
    pub(crate) fences: std::sync::OnceLock<Fences>,
}

/// Each file's extension id: two bytes where the volume has under 65,536 extensions (nearly always), four
/// otherwise.
#[derive(Debug, Clone)]
pub enum ExtIds {
    Narrow(Col<u16>),
    Wide(Col<u32>),
}

impl Default for ExtIds {
    fn default() -> Self {
        ExtIds::Narrow(Col::default())
    }
}

impl ExtIds {
    /// The ids `ids` of a dictionary of `count` extensions (ids up to `count`).
    fn from_ids(ids: Vec<u32>, count: usize) -> ExtIds {
        if count <= usize::from(u16::MAX) {
            ExtIds::Narrow(ids.iter().map(|&e| e as u16).collect::<Vec<_>>().into())
        } else {
            ExtIds::Wide(ids.into())
        }
    }

    /// The extension id of entry `id` (0: none, also past the end).
    pub fn get(&self, id: EntryId) -> u32 {
        let i = id as usize;
        match self {
            ExtIds::Narrow(c) => c.get(i).map_or(0, |&e| u32::from(e)),
            ExtIds::Wide(c) => c.get(i).copied().unwrap_or(0),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ExtIds::Narrow(c) => c.len(),
            ExtIds::Wide(c) => c.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Entries between two fence posts.
pub const FENCE: usize = 4096;
/// Entries of the name order between two stored name fence posts.
pub const NAME_FENCE: usize = 256;

#[derive(Debug, Clone, Default)]
pub struct Fences {
    pub size: Vec<u64>,
    pub created: Vec<u64>,
    pub modified: Vec<u64>,
    pub accessed: Vec<u64>,
    /// Folded names in name order.
    pub names: Vec<Vec<u8>>,
}

impl SearchAids {
    /// How many keys the trigram filter of an index of `n` entries has: `None` when its size fits none of
    /// [`TRIGRAM_KEY_COUNTS`]. (An empty index has empty rows: any count will do.)
    pub fn trigram_keys(&self, n: usize) -> Option<usize> {
        let row = trigram_row_words(n);
        if row == 0 {
            return self.trigrams.is_empty().then_some(TRIGRAM_KEYS);
        }
        TRIGRAM_KEY_COUNTS
            .into_iter()
            .find(|&k| self.trigrams.len() == k * row)
    }

    pub fn build(idx: &Index) -> SearchAids {
        let n = idx.len();
        // (Bounded: a searcher builds aids for a file that has none, which may not be checked yet.)
        let fname = |id: EntryId| idx.folded_name(id);

        let mut name_order: Vec<EntryId> = (0..n as u32).collect();
        // What needs no name order is made beside the name sort, whose cores are not always both busy.
        let ((ext_id, ext_text, ext_starts), trigrams) = rayon::join(
            || rayon::join(|| extensions(idx, &fname), || trigram_blocks(n, &fname)),
            || sort_by_name(&mut name_order, 0, &fname, &|id| idx.name_bytes(id)),
        )
        .0;
        let plain_name_rank = ranks(&name_order, n);
        // Each order is the entries sorted by the column, ties in name order, packed as soon as it is made.
        let by = |key: Key<'_>| sort_by_key_then_rank(&name_order, &plain_name_rank, key);
        // The rest are one core's work each, in any order: a core that finishes one takes the next, where a sort
        // on both cores at once waits for the other core at every split (measured: 7% off the whole `uffs
        // index`). A sort holds 12 bytes an entry while it runs; two run at a time.
        let (mut paths, mut ext_order, mut name_rank) = (None, None, None);
        let (mut size_order, mut created_order, mut modified_order, mut accessed_order) =
            (None, None, None, None);
        rayon::scope(|s| {
            s.spawn(|_| {
                let order = path_order(idx, &name_order);
                paths = Some((
                    Packed::from_values(&order),
                    Packed::from_values(&ranks(&order, n)),
                ));
            });
            s.spawn(|_| {
                ext_order = Some(Packed::from_values(&counting_sort(
                    &name_order,
                    &ext_id,
                    ext_starts.len(),
                )))
            });
            s.spawn(|_| size_order = Some(by(&|id| idx.size_key(id))));
            s.spawn(|_| created_order = Some(by(&|id| idx.created_times().get(id))));
            s.spawn(|_| modified_order = Some(by(&|id| idx.modified_times().get(id))));
            s.spawn(|_| accessed_order = Some(by(&|id| idx.accessed_times().get(id))));
            s.spawn(|_| name_rank = Some(Packed::from_values(&plain_name_rank)));
        });
        let done = "each task of the scope has run";
        let (path_order, path_rank) = paths.expect(done);
        let mut name_fences = Vec::new();
        let mut name_fence_starts = vec![0u32];
        for &id in name_order.iter().step_by(NAME_FENCE) {
            name_fences.extend_from_slice(fname(id));
            name_fence_starts.push(name_fences.len() as u32);
        }
        SearchAids {
            name_order: Packed::from_values(&name_order),
            name_rank: name_rank.expect(done),
            path_order,
            path_rank,
            size_order: size_order.expect(done),
            created_order: created_order.expect(done),
            modified_order: modified_order.expect(done),
            accessed_order: accessed_order.expect(done),
            ext_id: ExtIds::from_ids(ext_id, ext_starts.len()),
            ext_text: ext_text.into(),
            ext_starts: ext_starts.into(),
            trigrams: trigrams.into(),
            ext_order: ext_order.expect(done),
            name_fences: name_fences.into(),
            name_fence_starts: name_fence_starts.into(),
            fences: Default::default(),
        }
    }

    /// How many stored name fence posts sort before `prefix` (a binary search of the table).
    pub fn name_fences_before(&self, prefix: &[u8]) -> usize {
        partition_point(0..self.name_fence_count(), |k| self.name_fence(k) < prefix)
    }

    /// How many name fence posts are stored (0 in a file written before they were).
    pub fn name_fence_count(&self) -> usize {
        self.name_fence_starts.len().saturating_sub(1)
    }

    /// The `k`th stored name fence post: the folded name of entry `k * NAME_FENCE` of the name order. (Offsets out
    /// of order, in a file not checked yet, give a wrong name, never a fault.)
    pub fn name_fence(&self, k: usize) -> &[u8] {
        match (
            self.name_fence_starts.get(k),
            self.name_fence_starts.get(k + 1),
        ) {
            (Some(&a), Some(&b)) => self
                .name_fences
                .get(a as usize..b as usize)
                .unwrap_or_default(),
            _ => b"",
        }
    }

    /// The fence posts, sampled on first call (reading every [`FENCE`]th element of the sorted orders and their
    /// keys in `idx`'s columns: pages all over them, worth it for a process that answers many queries).
    pub fn fences(&self, idx: &Index) -> &Fences {
        self.fences.get_or_init(|| self.make_fences(idx))
    }

    /// The fence posts if they were sampled: a one-shot query does not, and binary searches the whole column.
    pub fn made_fences(&self) -> Option<&Fences> {
        self.fences.get()
    }

    fn make_fences(&self, idx: &Index) -> Fences {
        let sample = |order: &Packed, key: Key<'_>| {
            (0..order.len())
                .step_by(FENCE)
                .map(|i| key_at(order, key, i))
                .collect()
        };
        Fences {
            size: sample(&self.size_order, &|id| idx.size_key(id)),
            created: sample(&self.created_order, &|id| idx.created_times().get(id)),
            modified: sample(&self.modified_order, &|id| idx.modified_times().get(id)),
            accessed: sample(&self.accessed_order, &|id| idx.accessed_times().get(id)),
            // Not where the file stores finer ones.
            names: match self.name_fence_count() {
                0 => self
                    .name_order
                    .iter()
                    .step_by(FENCE)
                    .map(|id| idx.folded_name(id).to_vec())
                    .collect(),
                _ => Vec::new(),
            },
        }
    }

    /// Number of distinct extensions (ids run from 1 to this).
    pub fn ext_count(&self) -> usize {
        self.ext_starts.len().saturating_sub(1)
    }

    /// The extension with id `i` (1-based; 0 is "none", the empty extension).
    pub fn ext(&self, i: u32) -> &[u8] {
        let i = i as usize;
        if i == 0 || i > self.ext_count() {
            return b"";
        }
        let (a, b) = (self.ext_starts[i - 1] as usize, self.ext_starts[i] as usize);
        self.ext_text.get(a..b).unwrap_or_default()
    }

    /// The id of extension `e` (folded, without its dot), if a file of the volume has it: a binary search of the
    /// dictionary. (In a file not checked yet, a dictionary out of order gives a wrong id, never a fault.)
    pub fn ext_id_of(&self, e: &[u8]) -> Option<u32> {
        let count = self.ext_count() as u32;
        let lo = partition_point(1..count + 1, |i| self.ext(i) < e);
        (lo <= count && self.ext(lo) == e).then_some(lo)
    }

    /// The O(1) checks of aids opened from a file ([`crate::file::open`]): every column has its size, so
    /// lookups by entry id stay in bounds whatever the bytes.
    pub(crate) fn check_shape(&self, n: usize) -> Result<(), &'static str> {
        let per_entry = [
            self.name_order.len(),
            self.name_rank.len(),
            self.path_order.len(),
            self.path_rank.len(),
            self.size_order.len(),
            self.created_order.len(),
            self.modified_order.len(),
            self.accessed_order.len(),
            self.ext_order.len(),
            self.ext_id.len(),
        ];
        if per_entry.iter().any(|&l| l != n) {
            return Err("a search aid has the wrong length");
        }
        if self.ext_starts.is_empty() {
            return Err("extension table is inconsistent");
        }
        if !self.name_fence_starts.is_empty() && self.name_fence_count() != n.div_ceil(NAME_FENCE) {
            return Err("name fence posts have the wrong count");
        }
        if self.trigram_keys(n).is_none() {
            return Err("trigram filter has the wrong size");
        }
        Ok(())
    }

    /// Checks what every lookup relies on, for aids read from a file: lengths agree with the index, offsets
    /// are in range and ordered, every order is a permutation of the entries.
    /// (That each order is sorted is not checked: the chunk checksums vouch that the bytes are the writer's, and
    /// a missorted order could only misplace answers; checking it reads the columns all over, slowing every
    /// daemon start.)
    pub(crate) fn validate(&self, n: usize) -> Result<(), &'static str> {
        // One scratch array for every order: order i marks the entries it holds with i + 1.
        let mut seen = vec![0u8; n];
        let mut perm = |o: &Packed, mark: u8| {
            o.len() == n
                && o.iter().all(|id| match seen.get_mut(id as usize) {
                    Some(s) if *s != mark => {
                        *s = mark;
                        true
                    }
                    _ => false,
                })
        };
        let offsets = |starts: &[u32], text_len: usize| {
            starts.first() == Some(&0)
                && starts.windows(2).all(|w| w[0] <= w[1])
                && starts.last().map(|&e| e as usize) == Some(text_len)
        };
        if !offsets(&self.ext_starts, self.ext_text.len()) || self.ext_starts.is_empty() {
            return Err("extension table is inconsistent");
        }
        if !self.name_fence_starts.is_empty()
            && (!offsets(&self.name_fence_starts, self.name_fences.len())
                || self.name_fence_count() != n.div_ceil(NAME_FENCE))
        {
            return Err("name fence posts are inconsistent");
        }
        let exts = self.ext_count() as u32;
        if self.ext_id.len() != n || (0..n as u32).any(|id| self.ext_id.get(id) > exts) {
            return Err("extension ids are out of range");
        }
        if self.name_rank.len() != n
            || self.path_rank.len() != n
            || self.name_rank.iter().any(|r| r as usize >= n)
            || self.path_rank.iter().any(|r| r as usize >= n)
        {
            return Err("ranks are out of range");
        }
        let orders = [
            &self.name_order,
            &self.path_order,
            &self.size_order,
            &self.created_order,
            &self.modified_order,
            &self.accessed_order,
            &self.ext_order,
        ];
        if !orders.iter().zip(1u8..).all(|(o, mark)| perm(o, mark)) {
            return Err("a stored order is not a permutation of the entries");
        }
        if self.trigram_keys(n).is_none() {
            return Err("trigram filter has the wrong size");
        }
        Ok(())
    }
}

/// The 8 bytes of `name` from `at` as a big-endian number, zero-padded: numbers compare as the bytes do, and a
/// name that ends sorts before any longer one (names hold no NUL).
/// (A copy of a slice of unknown length would be a call to `memmove` for every key: the whole 8 bytes are one
/// load, and a shorter tail is put together a byte at a time.)
fn name_key(name: &[u8], at: usize) -> u64 {
    let rest = name.get(at..).unwrap_or_default();
    match rest.first_chunk::<8>() {
        Some(whole) => u64::from_be_bytes(*whole),
        None => rest
            .iter()
            .enumerate()
            .fold(0, |k, (i, &b)| k | u64::from(b) << (56 - 8 * i)),
    }
}

/// Sorts `ids`, whose folded names agree on their first `at` bytes, by folded name (ties by `tie`, then by id):
/// a sort of 8-byte keys, then each run of equal keys the same way from 8 bytes further, in parallel. Numbers
/// compare in one instruction where whole-name comparisons chase pointers, so this is several times quicker.
fn sort_by_name<'a>(
    ids: &mut [EntryId],
    at: usize,
    fname: &(dyn Fn(EntryId) -> &'a [u8] + Sync),
    tie: &(dyn Fn(EntryId) -> Cow<'a, [u8]> + Sync),
) {
    let mut keyed: Vec<(u64, EntryId)> = ids
        .iter()
        .map(|&id| (name_key(fname(id), at), id))
        .collect();
    if keyed.len() > 4096 {
        keyed.par_sort_unstable();
    } else {
        keyed.sort_unstable();
    }
    for (slot, &(_, id)) in ids.iter_mut().zip(&keyed) {
        *slot = id;
    }
    // The runs of equal keys, as disjoint slices to sort further.
    let mut runs: Vec<&mut [EntryId]> = Vec::new();
    let mut rest = ids;
    for run in keyed.chunk_by(|a, b| a.0 == b.0) {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(run.len());
        rest = tail;
        if head.len() > 1 {
            runs.push(head);
        }
    }
    runs.into_par_iter().for_each(|run| {
        if run.iter().any(|&id| fname(id).len() > at + 8) {
            sort_by_name(run, at + 8, fname, tie);
        } else {
            sort_same_name(run, tie);
        }
    });
}

/// Sorts `run`, entries of the same folded name in ascending id order (as the sort by key and id left them), by
/// `tie`, then id. Mostly the name is written the same way every time and the run is in order already; else each
/// entry's tie is made once, not at every comparison (a name as written is rebuilt from its case bits).
fn sort_same_name<'a>(run: &mut [EntryId], tie: &(dyn Fn(EntryId) -> Cow<'a, [u8]> + Sync)) {
    let first = tie(run[0]);
    if run[1..].iter().all(|&id| tie(id) == first) {
        return;
    }
    run.sort_by_cached_key(|&id| (tie(id), id));
}

/// `order` sorted stably by `keys` (each entry's key, below `buckets`; larger keys sort last): one counting pass
/// and one placing pass, and no memory but the answer's, for a key of few values (the extension ids).
fn counting_sort(order: &[EntryId], keys: &[u32], buckets: usize) -> Vec<EntryId> {
    let key = |id: EntryId| {
        keys.get(id as usize)
            .map_or(buckets, |&k| (k as usize).min(buckets))
    };
    let mut start = vec![0usize; buckets + 2];
    for &id in order {
        start[key(id) + 1] += 1;
    }
    for b in 0..=buckets {
        start[b + 1] += start[b];
    }
    let mut out = vec![0; order.len()];
    for &id in order {
        let b = key(id);
        out[start[b]] = id;
        start[b] += 1;
    }
    out
}

/// A key and the rank that breaks its ties, 12 bytes where a tuple takes 16: the sorts by key move a third less
/// memory, and two of them at once hold 12 bytes an entry each.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(C, packed(4))]
struct KeyRank {
    key: u64,
    rank: u32,
}

/// The entries sorted by `key`, ties by `rank` (each entry's position in `order`), packed: keys read in entry
/// order (one sequential pass over the column, where reading them in `order` would jump all over it), then a sort
/// of (key, rank) pairs, which are all distinct, and each rank mapped back to its entry as it is packed. One
/// core's work: the build runs several at once.
fn sort_by_key_then_rank(order: &[EntryId], rank: &[u32], key: Key<'_>) -> Packed {
    let mut keyed: Vec<KeyRank> = rank
        .iter()
        .enumerate()
        .map(|(id, &rank)| KeyRank {
            key: key(id as EntryId).unwrap_or(u64::MAX),
            rank,
        })
        .collect();
    keyed.sort_unstable();
    // The width `Packed::from_values` would choose: that of the largest entry.
    let width = packed::bits(u64::from(order.iter().copied().max().unwrap_or(0)));
    let entry = |k: &KeyRank| u64::from(order.get(k.rank as usize).copied().unwrap_or(0));
    Packed::with_width(keyed.iter().map(entry), keyed.len(), width)
}

/// Each entry's position in `order` (which holds every entry of `n` once, except in an index not checked yet,
/// where unreachable entries keep rank 0).
fn ranks(order: &[EntryId], n: usize) -> Vec<u32> {
    let mut rank = vec![0u32; n];
    for (r, &id) in order.iter().enumerate() {
        rank[id as usize] = r as u32;
    }
    rank
}

/// Depth first from the root, each folder's children in name order. It compares paths component by component,
/// so `/a/b` sorts before `/a-c`.
fn path_order(idx: &Index, name_order: &[EntryId]) -> Vec<EntryId> {
    let n = idx.len();
    let root = idx.root();
    let mut start = vec![0u32; n + 1];
    for id in 0..n as u32 {
        if id != root {
            start[idx.parent(id) as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut children = vec![0u32; n];
    for &id in name_order {
        if id != root {
            let p = idx.parent(id) as usize;
            children[fill[p] as usize] = id;
            fill[p] += 1;
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        order.push(d);
        let (s, e) = (start[d as usize] as usize, start[d as usize + 1] as usize);
        stack.extend(children[s..e].iter().rev());
    }
    order
}

/// Extension ids of files (after the last dot of the folded name; folders and streams have none), numbered in
/// dictionary order from 1, and the dictionary as text and offsets.
fn extensions<'a>(
    idx: &Index,
    fname: &(dyn Fn(EntryId) -> &'a [u8] + Sync),
) -> (Vec<u32>, Vec<u8>, Vec<u32>) {
    let n = idx.len();
    let fl = idx.flags_column();
    let mut dict: HashMap<&[u8], u32> = HashMap::new();
    let mut found: Vec<&[u8]> = Vec::new();
    let mut raw = vec![0u32; n];
    // The last extension met and its id: the files of a folder, which sit together, often share theirs, and a
    // comparison of a few bytes is cheaper than the map's hash.
    let mut last: (&[u8], u32) = (b"", 0);
    for id in 0..n as u32 {
        if fl[id as usize] & (flags::DIRECTORY | flags::STREAM) != 0 {
            continue;
        }
        let name = fname(id);
        if let Some(dot) = memchr::memrchr(b'.', name) {
            let e = &name[dot + 1..];
            if last.1 == 0 || last.0 != e {
                let found_id = *dict.entry(e).or_insert_with(|| {
                    found.push(e);
                    found.len() as u32
                });
                last = (e, found_id);
            }
            raw[id as usize] = last.1;
        }
    }
    let mut sorted: Vec<u32> = (1..=found.len() as u32).collect();
    sorted.sort_unstable_by(|&x, &y| found[x as usize - 1].cmp(found[y as usize - 1]));
    let mut remap = vec![0u32; found.len() + 1];
    for (i, &old) in sorted.iter().enumerate() {
        remap[old as usize] = i as u32 + 1;
    }
    let ext_id = raw.iter().map(|&r| remap[r as usize]).collect();
    let mut text = Vec::new();
    let mut starts = vec![0u32];
    for &o in &sorted {
        text.extend_from_slice(found[o as usize - 1]);
        starts.push(text.len() as u32);
    }
    (ext_id, text, starts)
}

/// The filter, one row per key: row `k` has bit `b` set when block `b` holds a name with a trigram of key `k`.
/// Built per run of 64 blocks (one word of every row), in parallel, then laid out row by row.
fn trigram_blocks<'a>(n: usize, fname: &(dyn Fn(EntryId) -> &'a [u8] + Sync)) -> Vec<u64> {
    let row = trigram_row_words(n);
    let runs: Vec<Vec<u64>> = (0..row)
        .into_par_iter()
        .map(|w| {
            let mut keys = vec![0u64; TRIGRAM_KEYS];
            let first = w * 64 * TRIGRAM_BLOCK;
            for id in first..(first + 64 * TRIGRAM_BLOCK).min(n) {
                let bit = 1u64 << ((id - first) / TRIGRAM_BLOCK);
                for t in fname(id as EntryId).windows(3) {
                    keys[trigram_key(t, TRIGRAM_KEYS)] |= bit;
                }
            }
            keys
        })
        .collect();
    let mut bits = vec![0u64; TRIGRAM_KEYS * row];
    for (w, keys) in runs.iter().enumerate() {
        for (k, &v) in keys.iter().enumerate() {
            bits[k * row + w] = v;
        }
    }
    bits
}

/// The first of `range` for which `below` is false, where it holds up to some point and not after: a binary
/// search through an accessor, for tables that are not one slice.
fn partition_point<I>(range: std::ops::Range<I>, below: impl Fn(I) -> bool) -> I
where
    I: Copy
        + Ord
        + std::ops::Add<Output = I>
        + std::ops::Sub<Output = I>
        + std::ops::Div<Output = I>
        + From<u8>,
{
    let (mut lo, mut hi) = (range.start, range.end);
    while lo < hi {
        let mid = lo + (hi - lo) / I::from(2);
        if below(mid) {
            lo = mid + I::from(1);
        } else {
            hi = mid;
        }
    }
    lo
}

/// The value of a column by entry id: `None` for an id out of range (which only a file not checked yet holds).
pub type Key<'a> = &'a (dyn Fn(EntryId) -> Option<u64> + Sync);

/// The key of a plain column.
pub fn column_key(col: &[u64]) -> impl Fn(EntryId) -> Option<u64> + Sync + '_ {
    move |id| col.get(id as usize).copied()
}

/// The key of the `i`th entry of `order` (the largest value for an id out of range).
pub fn key_at(order: &Packed, key: Key<'_>, i: usize) -> u64 {
    order.get(i).and_then(key).unwrap_or(u64::MAX)
}

/// The first position in `order` (sorted by `col`) whose value is at least `v`. With fence posts (every
/// [`FENCE`]th value), only the stretch between two of them is searched: it reads one stretch of the order and a
/// dozen of the column's values.
pub fn lower_bound(order: &Packed, key: Key<'_>, fence: Option<&[u64]>, v: u64) -> usize {
    let search = |lo: usize, hi: usize| {
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key_at(order, key, mid) < v {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let Some(fence) = fence else {
        return search(0, order.len());
    };
    let k = fence.partition_point(|&f| f < v);
    if k == 0 {
        return 0;
    }
    let lo = ((k - 1) * FENCE).min(order.len());
    let hi = (k * FENCE).min(order.len());
    search(lo, hi)
}

#[cfg(test)]
mod tests {
    #[test]
    fn extension_ids_take_two_bytes_unless_they_cannot() {
        let ids = vec![0, 7, 65_534, 3];
        let narrow = super::ExtIds::from_ids(ids.clone(), 65_535);
        assert!(matches!(narrow, super::ExtIds::Narrow(_)));
        let wide = super::ExtIds::from_ids(vec![0, 7, 70_000, 3], 70_001);
        assert!(matches!(wide, super::ExtIds::Wide(_)));
        for (i, &e) in ids.iter().enumerate() {
            assert_eq!(narrow.get(i as u32), e);
        }
        assert_eq!(wide.get(2), 70_000);
        assert_eq!((narrow.get(9), wide.get(9)), (0, 0));
    }

    use super::*;

    /// The keyed sort gives the order of the plain comparison: names that share 8, 16 or more bytes, names that
    /// are prefixes of others, the same folded name in several cases, names of every length.
    #[test]
    fn sort_by_name_equals_the_comparison_sort() {
        let mut names: Vec<Vec<u8>> = Vec::new();
        let stems = [
            "",
            "a",
            "microsoft-windows-",
            "microsoft-windows-shell32",
            "Microsoft",
            "ab\u{e9}c",
        ];
        let mut x = 0x1234_5678_u64;
        for i in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut n = stems[i % stems.len()].as_bytes().to_vec();
            for _ in 0..(x % 23) {
                n.push([b'a', b'B', b'.', b'x', b'-', b'Z'][(x >> 8) as usize % 6]);
                x = x.rotate_left(5);
            }
            names.push(n);
        }
        let folded: Vec<Vec<u8>> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        let fname = |id: EntryId| &folded[id as usize][..];
        let tie = |id: EntryId| Cow::Borrowed(&names[id as usize][..]);
        let mut want: Vec<EntryId> = (0..names.len() as u32).collect();
        want.sort_by(|&a, &b| {
            (fname(a), &names[a as usize], a).cmp(&(fname(b), &names[b as usize], b))
        });
        let mut got: Vec<EntryId> = (0..names.len() as u32).collect();
        sort_by_name(&mut got, 0, &fname, &tie);
        assert_eq!(got, want);
    }

    /// The sorts by key are stable sorts by value: values that share high bits, small ones, equal ones, extremes.
    #[test]
    fn sorts_by_key_equal_a_stable_sort() {
        let mut x = 0x9E37_79B9_u64;
        let col: Vec<u64> = (0..20_000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match i % 5 {
                    0 => 0x01D9_0000_0000_0000 | (x & 0xFFFF_FFFF),
                    1 => x % 100,
                    2 => u64::MAX - x % 3,
                    3 => 7,
                    _ => x,
                }
            })
            .collect();
        let ids: Vec<EntryId> = (0..col.len() as u32).rev().collect();
        let mut want = ids.clone();
        want.sort_by_key(|&id| col[id as usize]);
        // The same order from a counting sort, for keys of few values.
        let small: Vec<u32> = col.iter().map(|&v| (v % 1000) as u32).collect();
        let mut want_small = ids.clone();
        want_small.sort_by_key(|&id| small[id as usize]);
        assert_eq!(counting_sort(&ids, &small, 1000), want_small);
        // The same order from the sort of (key, rank) pairs.
        let rank = ranks(&ids, ids.len());
        assert_eq!(
            sort_by_key_then_rank(&ids, &rank, &column_key(&col)).to_vec(),
            want
        );
    }
}
