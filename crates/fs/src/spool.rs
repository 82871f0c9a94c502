//! A compact store of the entries a scan makes out of id order, handed over in id order.
//!
//! FAT and exFAT number an entry by where its directory entry lies, and a scan walks the tree, so its entries
//! come out in many ascending stretches (one a folder, roughly) rather than in id order. Kept as [`Entry`]s,
//! 200 bytes and two allocations each, a scan of a million entries held 270 MB before the index builder saw the
//! first. A [`Spool`] packs each entry into a few dozen bytes of variable-length integers in large chunks, notes
//! where each ascending stretch starts, and [`Spool::drain_sorted`] merges the stretches by id, letting each chunk
//! go once every entry in it has been handed over, so that the builder's columns grow as the spool shrinks.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::{Codec, Entry, Fork, Kind, Packed, Posix, Run, Sink, Times, BATCH_ENTRIES};

/// Bytes a chunk holds (a larger entry gets a chunk of its own).
const CHUNK: usize = 1 << 20;

/// Bytes of packed entries, in a map of their own: a chunk's pages go back to the system the moment it is let go
/// of. (Allocated memory did not: the builder's allocations between the chunks kept the freed ones resident, 90
/// MB of a million-entry FAT32 build's peak.)
#[derive(Default)]
struct Chunk {
    map: Option<memmap2::MmapMut>,
    len: usize,
}

impl Chunk {
    fn with_capacity(cap: usize) -> Chunk {
        // Anonymous memory fails only when the system has none left, as an allocation would.
        let map = memmap2::MmapMut::map_anon(cap).expect("out of memory for a scan's entries");
        Chunk {
            map: Some(map),
            len: 0,
        }
    }

    fn capacity(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn extend_from_slice(&mut self, b: &[u8]) {
        let map = self.map.as_mut().expect("only a live chunk is written");
        map[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_ref().map_or(&[], |m| &m[..self.len])
    }
}

/// Entries packed in id-ascending stretches; see the module doc.
#[derive(Default)]
pub struct Spool {
    chunks: Vec<Chunk>,
    /// Entries not yet handed over, per chunk: a chunk is let go of at zero.
    left: Vec<u32>,
    /// Where each ascending stretch starts, and how many entries it holds.
    stretches: Vec<Cursor>,
    last_id: Option<u64>,
    max_id: Option<u64>,
    len: u64,
    /// The entry being packed: one buffer for every push, not an allocation each.
    scratch: Vec<u8>,
}

/// A place in the chunks, and the entries from there on that belong to one stretch.
#[derive(Clone, Copy)]
struct Cursor {
    chunk: u32,
    at: u32,
    count: u32,
}

impl Spool {
    pub fn new() -> Spool {
        Spool::default()
    }

    /// Entries held.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The highest id held.
    pub fn max_id(&self) -> Option<u64> {
        self.max_id
    }

    /// Packs `e` (which is dropped).
    pub fn push(&mut self, e: Entry) {
        self.push_ref(&e);
    }

    /// Packs a copy of `e`: a scan that fills one [`Entry`] again and again allocates nothing an entry.
    pub fn push_ref(&mut self, e: &Entry) {
        let mut rec = std::mem::take(&mut self.scratch);
        rec.clear();
        encode(e, &mut rec);
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.len() + rec.len() <= c.capacity());
        if !fits {
            self.chunks.push(Chunk::with_capacity(CHUNK.max(rec.len())));
            self.left.push(0);
        }
        let chunk = self.chunks.len() - 1;
        let at = self.chunks[chunk].len();
        self.chunks[chunk].extend_from_slice(&rec);
        self.scratch = rec;
        self.left[chunk] += 1;
        match self.stretches.last_mut() {
            Some(s) if self.last_id.is_some_and(|l| l <= e.id) && s.count < u32::MAX => {
                s.count += 1
            }
            _ => self.stretches.push(Cursor {
                chunk: chunk as u32,
                at: at as u32,
                count: 1,
            }),
        }
        self.last_id = Some(e.id);
        self.max_id = Some(self.max_id.map_or(e.id, |m| m.max(e.id)));
        self.len += 1;
    }

    /// Takes in every entry of `other` (a spool another thread filled), without copying them: its chunks and
    /// stretches become this one's.
    pub fn absorb(&mut self, other: Spool) {
        let base = self.chunks.len() as u32;
        self.chunks.extend(other.chunks);
        self.left.extend(other.left);
        self.stretches
            .extend(other.stretches.into_iter().map(|s| Cursor {
                chunk: s.chunk + base,
                ..s
            }));
        // The next push starts a stretch of its own.
        self.last_id = None;
        self.max_id = self.max_id.max(other.max_id);
        self.len += other.len;
    }

    /// Hands every entry to `sink` in ascending id order ([`BATCH_ENTRIES`] at a time; entries of one id in the
    /// order they were pushed), as [`crate::sort_by_id`] would order them, letting the chunks go as it passes.
    pub fn drain_sorted(mut self, sink: &mut dyn Sink) {
        let mut heads: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
        for (k, s) in self.stretches.iter().enumerate() {
            heads.push(Reverse((self.peek_id(*s), k as u32)));
        }
        let mut batch = Vec::with_capacity(BATCH_ENTRIES);
        while let Some(Reverse((_, k))) = heads.pop() {
            let mut s = self.stretches[k as usize];
            // Take this stretch's entries while they stay ahead of every other stretch's next.
            loop {
                let (e, next) = self.take(s);
                batch.push(e);
                if batch.len() == BATCH_ENTRIES {
                    sink.take(std::mem::replace(
                        &mut batch,
                        Vec::with_capacity(BATCH_ENTRIES),
                    ));
                }
                s = next;
                if s.count == 0 {
                    break;
                }
                let id = self.peek_id(s);
                if heads.peek().is_some_and(|Reverse(h)| *h < (id, k)) {
                    heads.push(Reverse((id, k)));
                    break;
                }
            }
            self.stretches[k as usize] = s;
        }
        if !batch.is_empty() {
            sink.take(batch);
        }
    }

    /// Every entry, in id order.
    pub fn into_entries(self) -> Vec<Entry> {
        let mut all = Vec::with_capacity(self.len as usize);
        self.drain_sorted(&mut |b: Vec<Entry>| all.extend(b));
        all
    }

    /// The chunk position `s` points at, moved to the next chunk where this one ends.
    fn settle(&self, mut s: Cursor) -> Cursor {
        while s.at as usize >= self.chunks[s.chunk as usize].len() {
            s.chunk += 1;
            s.at = 0;
        }
        s
    }

    fn peek_id(&self, s: Cursor) -> u64 {
        let s = self.settle(s);
        let mut r = Reader {
            buf: self.chunks[s.chunk as usize].bytes(),
            at: s.at as usize,
        };
        r.int()
    }

    /// The entry at `s`, and the cursor past it; a chunk whose last entry that was is let go of.
    fn take(&mut self, s: Cursor) -> (Entry, Cursor) {
        let s = self.settle(s);
        let c = s.chunk as usize;
        let mut r = Reader {
            buf: self.chunks[c].bytes(),
            at: s.at as usize,
        };
        let e = decode(&mut r);
        let at = r.at as u32;
        self.left[c] -= 1;
        if self.left[c] == 0 {
            // Kept as an empty chunk: its bytes go back now, and a cursor that still points here (at its end)
            // moves on to the next.
            self.chunks[c] = Chunk::default();
        }
        let next = Cursor {
            chunk: s.chunk,
            at: if self.left[c] == 0 { 0 } else { at },
            count: s.count - 1,
        };
        (e, next)
    }
}

// Flags of a packed entry.
const FOLDER: u32 = 1;
const SYMLINK: u32 = 2;
const SPECIAL: u32 = 3;
const KIND: u32 = 3;
const LOCAL_TIMES: u32 = 1 << 2;
const DELETED: u32 = 1 << 3;
const METADATA: u32 = 1 << 4;
const FROM_INDEX_SLACK: u32 = 1 << 5;
const SHORT_NAME: u32 = 1 << 6;
const INLINE: u32 = 1 << 7;
const POSIX: u32 = 1 << 8;
const LINK_TARGET: u32 = 1 << 9;
const PACKED: u32 = 1 << 10;
const FORKS: u32 = 1 << 11;
const EXCLUSIVE: u32 = 1 << 12;

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn encode(e: &Entry, out: &mut Vec<u8>) {
    let mut flags = match e.kind {
        Kind::File => 0,
        Kind::Folder => FOLDER,
        Kind::Symlink => SYMLINK,
        Kind::Special => SPECIAL,
    };
    for (on, bit) in [
        (e.local_times, LOCAL_TIMES),
        (e.deleted, DELETED),
        (e.metadata, METADATA),
        (e.from_index_slack, FROM_INDEX_SLACK),
        (e.short_name.is_some(), SHORT_NAME),
        (e.inline.is_some(), INLINE),
        (e.posix.is_some(), POSIX),
        (e.link_target.is_some(), LINK_TARGET),
        (!e.packed.is_empty(), PACKED),
        (!e.forks.is_empty(), FORKS),
        (e.exclusive.is_some(), EXCLUSIVE),
    ] {
        if on {
            flags |= bit;
        }
    }
    // The id first: the merge peeks at it.
    for v in [
        e.id,
        e.parent,
        u64::from(flags),
        e.size,
        e.allocated,
        e.times.created,
        e.times.modified,
        e.times.changed,
        e.times.accessed,
        u64::from(e.attributes),
    ] {
        put(out, v);
    }
    put_bytes(out, e.name.as_bytes());
    if let Some(s) = &e.short_name {
        put_bytes(out, s.as_bytes());
    }
    put_runs(out, &e.runs);
    if let Some(i) = &e.inline {
        put_bytes(out, i);
    }
    if let Some(p) = e.posix {
        for v in [p.mode, p.uid, p.gid] {
            put(out, u64::from(v));
        }
    }
    if let Some(t) = &e.link_target {
        put_bytes(out, t);
    }
    if let Some(x) = e.exclusive {
        put(out, x);
    }
    if !e.packed.is_empty() {
        put(out, e.packed.len() as u64);
        for p in &e.packed {
            let codec = match p.codec {
                Codec::Zlib => 1,
                Codec::BtrfsLzo => 2,
                Codec::Zstd => 3,
                Codec::AppleZlib => 4,
                Codec::Lzvn => 5,
                Codec::Lzfse => 6,
            };
            for v in [
                p.file_offset,
                p.len,
                p.disk.offset,
                p.disk.len,
                codec,
                p.decoded_len,
                p.skip,
            ] {
                put(out, v);
            }
        }
    }
    if !e.forks.is_empty() {
        put(out, e.forks.len() as u64);
        for f in &e.forks {
            put_bytes(out, f.name.as_bytes());
            put(out, f.size);
            put(out, f.allocated);
            put_runs(out, &f.runs);
            match &f.inline {
                None => put(out, 0),
                Some(b) => {
                    put(out, 1);
                    put_bytes(out, b);
                }
            }
        }
    }
}

fn put_runs(out: &mut Vec<u8>, runs: &[Run]) {
    put(out, runs.len() as u64);
    for r in runs {
        put(out, r.offset);
        put(out, r.len);
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn int(&mut self) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.buf[self.at];
            self.at += 1;
            v |= u64::from(b & 0x7F) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    fn bytes(&mut self) -> Vec<u8> {
        let n = self.int() as usize;
        let b = self.buf[self.at..self.at + n].to_vec();
        self.at += n;
        b
    }

    fn runs(&mut self) -> Vec<Run> {
        (0..self.int())
            .map(|_| Run {
                offset: self.int(),
                len: self.int(),
            })
            .collect()
    }

    fn string(&mut self) -> String {
        // Packed from a `String`: valid UTF-8.
        String::from_utf8(self.bytes()).unwrap_or_default()
    }
}

fn decode(r: &mut Reader) -> Entry {
    let id = r.int();
    let parent = r.int();
    let flags = r.int() as u32;
    let size = r.int();
    let allocated = r.int();
    let times = Times {
        created: r.int(),
        modified: r.int(),
        changed: r.int(),
        accessed: r.int(),
    };
    let attributes = r.int() as u32;
    let name = r.string();
    let short_name = (flags & SHORT_NAME != 0).then(|| r.string());
    let runs = r.runs();
    let inline = (flags & INLINE != 0).then(|| r.bytes());
    let posix = (flags & POSIX != 0).then(|| Posix {
        mode: r.int() as u32,
        uid: r.int() as u32,
        gid: r.int() as u32,
    });
    let link_target = (flags & LINK_TARGET != 0).then(|| r.bytes());
    let exclusive = (flags & EXCLUSIVE != 0).then(|| r.int());
    let pieces = if flags & PACKED != 0 { r.int() } else { 0 };
    let packed = (0..pieces)
        .map(|_| Packed {
            file_offset: r.int(),
            len: r.int(),
            disk: Run {
                offset: r.int(),
                len: r.int(),
            },
            codec: match r.int() {
                1 => Codec::Zlib,
                2 => Codec::BtrfsLzo,
                4 => Codec::AppleZlib,
                5 => Codec::Lzvn,
                6 => Codec::Lzfse,
                _ => Codec::Zstd,
            },
            decoded_len: r.int(),
            skip: r.int(),
        })
        .collect();
    let forks = if flags & FORKS != 0 { r.int() } else { 0 };
    let forks = (0..forks)
        .map(|_| Fork {
            name: r.string(),
            size: r.int(),
            allocated: r.int(),
            runs: r.runs(),
            inline: (r.int() == 1).then(|| r.bytes()),
        })
        .collect();
    Entry {
        id,
        parent,
        name,
        short_name,
        kind: match flags & KIND {
            FOLDER => Kind::Folder,
            SYMLINK => Kind::Symlink,
            SPECIAL => Kind::Special,
            _ => Kind::File,
        },
        size,
        allocated,
        times,
        local_times: flags & LOCAL_TIMES != 0,
        attributes,
        deleted: flags & DELETED != 0,
        metadata: flags & METADATA != 0,
        from_index_slack: flags & FROM_INDEX_SLACK != 0,
        runs,
        inline,
        posix,
        link_target,
        packed,
        forks,
        exclusive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, name: &str, seed: u64) -> Entry {
        Entry {
            id,
            parent: seed % 7,
            name: name.into(),
            short_name: seed.is_multiple_of(3).then(|| format!("S{seed}~1")),
            kind: [Kind::File, Kind::Folder, Kind::Symlink, Kind::Special][(seed % 4) as usize],
            size: seed.wrapping_mul(0x9E37_79B9),
            allocated: seed << 12,
            times: Times {
                created: seed.wrapping_mul(31),
                modified: u64::MAX - seed,
                changed: 0,
                accessed: seed,
            },
            local_times: seed.is_multiple_of(2),
            attributes: (seed % 0x4000) as u32,
            deleted: seed.is_multiple_of(5),
            metadata: seed.is_multiple_of(11),
            from_index_slack: seed.is_multiple_of(13),
            runs: (0..seed % 4)
                .map(|k| {
                    if k == 2 {
                        Run::hole(seed)
                    } else {
                        Run {
                            offset: k << 20,
                            len: seed + k,
                        }
                    }
                })
                .collect(),
            inline: (seed % 6 == 1).then(|| vec![seed as u8; (seed % 60) as usize]),
            posix: (seed % 2 == 1).then_some(Posix {
                mode: 0o100644,
                uid: seed as u32,
                gid: u32::MAX,
            }),
            link_target: (seed % 9 == 4).then(|| b"../t\xff".to_vec()),
            packed: (0..seed % 5)
                .map(|k| Packed {
                    file_offset: k << 17,
                    len: seed % 131_072,
                    disk: Run {
                        offset: seed << 3,
                        len: seed % 4096,
                    },
                    codec: [Codec::Zlib, Codec::BtrfsLzo, Codec::Zstd, Codec::AppleZlib]
                        [k as usize % 4],
                    decoded_len: 131_072,
                    skip: seed % 77,
                })
                .collect(),
            forks: (0..seed % 3)
                .map(|k| Fork {
                    name: if k == 0 {
                        "rsrc".into()
                    } else {
                        format!("f{seed}")
                    },
                    size: seed >> 3,
                    allocated: seed << 1,
                    runs: vec![
                        Run {
                            offset: seed,
                            len: k + 1,
                        },
                        Run::hole(seed % 100),
                    ],
                    inline: (k == 1).then(|| vec![k as u8; (seed % 40) as usize]),
                })
                .collect(),
            exclusive: (seed % 4 == 3).then_some(seed << 12),
        }
    }

    #[test]
    fn hands_over_what_a_stable_sort_by_id_gives_every_field_intact() {
        let mut seed = 0x2545_F491_4F6C_DD1D_u64;
        for n in [0usize, 1, 2, 17, 5000, 40_000] {
            let mut spool = Spool::new();
            let mut want = Vec::new();
            for i in 0..n {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Ascending stretches of random length, ids repeating (hard links), names long enough to fill
                // several chunks.
                let id = if i.is_multiple_of(50) {
                    seed >> 50
                } else {
                    (seed >> 52) + i as u64
                };
                let e = entry(
                    id,
                    &format!("{i}-{}", "x".repeat((seed % 200) as usize)),
                    seed,
                );
                want.push(e.clone());
                spool.push(e);
            }
            assert_eq!(spool.len(), n as u64);
            assert_eq!(spool.max_id(), want.iter().map(|e| e.id).max());
            want.sort_by_key(|e| e.id);
            let mut batches = Vec::new();
            let mut got = Vec::new();
            spool.drain_sorted(&mut |b: Vec<Entry>| {
                batches.push(b.len());
                got.extend(b);
            });
            assert!(batches.iter().all(|&b| b > 0 && b <= BATCH_ENTRIES));
            assert_eq!(got.len(), want.len());
            assert!(got == want, "{n} entries");
        }
    }
}
