//! Builds an [`Index`] from parsed record batches.
//!
//! Batches arrive in record order and most records become entries at once. Records that span several MFT
//! records (a base record with an `$ATTRIBUTE_LIST` and its extension records, in any order) are set aside and
//! merged at the end. Then parents are resolved, cycles broken and directory totals summed, each in linear time.

use std::time::{Duration, Instant};

use crate::batch::{
    NameInfo, RecordBatch, RecordCounts, RecordInfo, StdInfo, StreamInfo, StreamSizes,
};
use crate::index::{flags, EntryId, Index, VolumeMeta};

const NONE: u32 = u32::MAX;
/// The root directory is always record 5.
const ROOT_RECORD: u64 = 5;
const DOS_NAMESPACE: u8 = 2;

#[derive(Debug, Clone, Copy, Default)]
pub struct BuildOptions {
    /// Make entries of records that are not in use (deleted files whose records still parse).
    pub include_deleted: bool,
}

/// What the build did, for the summary line and `uffs bench`.
#[derive(Debug, Clone, Default)]
pub struct BuildStats {
    pub counts: RecordCounts,
    /// Records that had no `$FILE_NAME` at all (no entry made).
    pub nameless: u64,
    /// Extension records merged into their base record.
    pub extensions_merged: u64,
    /// Extension records whose base record was not found (or did not match): dropped and counted.
    pub extensions_stray: u64,
    pub orphans: u64,
    pub cycles_broken: u64,
    /// Time spent merging extension records and resolving parents.
    pub merge: Duration,
    /// Time spent on depth ordering and directory totals.
    pub totals: Duration,
}

/// Accumulates batches into an index.
pub struct Builder {
    opts: BuildOptions,
    idx: Index,
    /// Parent reference (record | sequence << 48) of each entry, until parents are resolved.
    parent_ref: Vec<u64>,
    /// First entry of each record number (`NONE` if the record made no entry).
    record_entry: Vec<u32>,
    /// Records merged at the end: base records with an attribute list and all extension records.
    deferred: RecordBatch,
    /// The synthetic `$Orphan` folder, once made.
    orphan: EntryId,
    stats: BuildStats,
}

impl Builder {
    /// `expected_entries` sizes the columns up front so they never grow by doubling (which would double the
    /// peak memory); a good guess is the number of records in use.
    pub fn new(meta: VolumeMeta, opts: BuildOptions, expected_entries: usize) -> Builder {
        let cap = expected_entries + expected_entries / 16 + 16;
        let idx = Index {
            meta,
            names: Vec::with_capacity(cap * 20),
            name_start: {
                let mut v = Vec::with_capacity(cap + 1);
                v.push(0);
                v
            },
            parent: Vec::new(),
            record: Vec::with_capacity(cap),
            sequence: Vec::with_capacity(cap),
            flags: Vec::with_capacity(cap),
            size: Vec::with_capacity(cap),
            allocated: Vec::with_capacity(cap),
            created: Vec::with_capacity(cap),
            modified: Vec::with_capacity(cap),
            mft_changed: Vec::with_capacity(cap),
            accessed: Vec::with_capacity(cap),
            reparse_tag: Vec::with_capacity(cap),
            tree_size: Vec::new(),
            descendants: Vec::new(),
            root: 0,
        };
        let slots = usize::try_from(idx.meta.records_total)
            .unwrap_or(0)
            .min(1 << 32);
        Builder {
            opts,
            idx,
            parent_ref: Vec::with_capacity(cap),
            record_entry: vec![NONE; slots],
            deferred: RecordBatch::default(),
            orphan: NONE,
            stats: BuildStats::default(),
        }
    }

    /// Adds a batch of parsed records. Batches must come in ascending record order.
    pub fn add_batch(&mut self, batch: &RecordBatch) {
        self.stats.counts += batch.counts;
        for rec in &batch.records {
            if !rec.in_use() && !self.opts.include_deleted {
                continue;
            }
            if rec.base != 0 || rec.has_attribute_list {
                copy_record(batch, rec, &mut self.deferred);
                continue;
            }
            let names = &batch.names[rec.names.start as usize..rec.names.end as usize];
            let streams = &batch.streams[rec.streams.start as usize..rec.streams.end as usize];
            self.emit(rec, names, streams, &batch.text);
        }
    }

    /// Makes the entries of one complete record: one per name (DOS aliases skipped), then its named streams.
    fn emit(&mut self, rec: &RecordInfo, names: &[NameInfo], streams: &[StreamInfo], text: &[u8]) {
        let deleted = if rec.in_use() { 0 } else { flags::DELETED };
        let dir = if rec.is_directory() {
            flags::DIRECTORY
        } else {
            0
        };
        let si = rec.std_info.unwrap_or_else(|| {
            names.first().map_or(StdInfo::default(), |n| StdInfo {
                created: n.created,
                modified: n.modified,
                ..StdInfo::default()
            })
        });
        let attrs = (si.attributes & flags::WINDOWS_MASK & !flags::DIRECTORY) | dir | deleted;
        let data = if dir != 0 {
            StreamSizes::default()
        } else {
            rec.data.unwrap_or_default()
        };
        let has_long_name = names.iter().any(|n| n.namespace != DOS_NAMESPACE);
        let mut first = NONE;
        for n in names {
            if has_long_name && n.namespace == DOS_NAMESPACE {
                continue;
            }
            let id = self.push(text_of(text, &n.text), &[], n.parent, rec, attrs, data, &si);
            if first == NONE {
                first = id;
            }
        }
        if first == NONE {
            self.stats.nameless += 1;
            return;
        }
        if let Some(slot) = self.slot(rec.number) {
            *slot = first;
        }
        if streams.is_empty() {
            return;
        }
        // Streams hang beside the file's first name: `dir/file.txt:stream`.
        let (start, end) = (
            self.idx.name_start[first as usize] as usize,
            self.idx.name_start[first as usize + 1] as usize,
        );
        let mut primary = Vec::with_capacity(end - start + 1);
        primary.extend_from_slice(&self.idx.names[start..end]);
        primary.push(b':');
        let parent = self.parent_ref[first as usize];
        let stream_attrs = (attrs & !flags::DIRECTORY) | flags::STREAM;
        for s in streams {
            self.push(
                &primary,
                text_of(text, &s.text),
                parent,
                rec,
                stream_attrs,
                s.sizes,
                &si,
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        name: &[u8],
        name_suffix: &[u8],
        parent: u64,
        rec: &RecordInfo,
        attrs: u32,
        data: StreamSizes,
        si: &StdInfo,
    ) -> EntryId {
        let x = &mut self.idx;
        let id = x.record.len() as EntryId;
        x.names.extend_from_slice(name);
        x.names.extend_from_slice(name_suffix);
        x.name_start.push(x.names.len() as u32);
        self.parent_ref.push(parent);
        x.record.push(rec.number as u32);
        x.sequence.push(rec.sequence);
        x.flags.push(attrs | stream_attr_bits(data.attr_flags));
        x.size.push(data.size);
        x.allocated.push(data.allocated);
        x.created.push(si.created);
        x.modified.push(si.modified);
        x.mft_changed.push(si.mft_changed);
        x.accessed.push(si.accessed);
        x.reparse_tag.push(rec.reparse_tag);
        id
    }

    fn slot(&mut self, record: u64) -> Option<&mut u32> {
        let r = usize::try_from(record).ok().filter(|&r| r < (1 << 32))?;
        if r >= self.record_entry.len() {
            self.record_entry.resize(r + 1, NONE);
        }
        Some(&mut self.record_entry[r])
    }

    /// Merges the set-aside records, resolves parents and computes directory totals.
    pub fn finish(mut self) -> (Index, BuildStats) {
        let t = Instant::now();
        self.merge_deferred();
        self.link_parents();
        self.stats.merge = t.elapsed();
        let t = Instant::now();
        self.break_cycles_and_total();
        self.stats.totals = t.elapsed();
        (self.idx, self.stats)
    }

    /// Combines each base record with an attribute list with its extension records, then emits it.
    fn merge_deferred(&mut self) {
        let d = std::mem::take(&mut self.deferred);
        let (bases, mut exts): (Vec<&RecordInfo>, Vec<&RecordInfo>) =
            d.records.iter().partition(|r| r.base == 0);
        exts.sort_by_key(|r| (r.base & 0xFFFF_FFFF_FFFF, r.number));
        let mut used = vec![false; exts.len()];
        let mut names: Vec<NameInfo> = Vec::new();
        let mut streams: Vec<StreamInfo> = Vec::new();
        for base in bases {
            let mut rec = base.clone();
            names.clear();
            streams.clear();
            names.extend_from_slice(&d.names[base.names.start as usize..base.names.end as usize]);
            streams.extend_from_slice(
                &d.streams[base.streams.start as usize..base.streams.end as usize],
            );
            let lo = exts.partition_point(|e| e.base & 0xFFFF_FFFF_FFFF < base.number);
            for (i, e) in exts.iter().enumerate().skip(lo) {
                if e.base & 0xFFFF_FFFF_FFFF != base.number {
                    break;
                }
                let ref_seq = (e.base >> 48) as u16;
                // A deleted base record has had its sequence number bumped once since its extensions were written.
                let seq_ok = ref_seq == base.sequence
                    || (!base.in_use() && ref_seq.wrapping_add(1) == base.sequence);
                if !seq_ok {
                    continue;
                }
                used[i] = true;
                self.stats.extensions_merged += 1;
                names.extend_from_slice(&d.names[e.names.start as usize..e.names.end as usize]);
                streams.extend_from_slice(
                    &d.streams[e.streams.start as usize..e.streams.end as usize],
                );
                if rec.data.is_none() {
                    rec.data = e.data;
                }
                if rec.reparse_tag == 0 {
                    rec.reparse_tag = e.reparse_tag;
                }
            }
            self.emit(&rec, &names, &streams, &d.text);
        }
        self.stats.extensions_stray += used.iter().filter(|u| !**u).count() as u64;
    }

    /// Turns parent references into entry ids. A parent that is missing, not a directory, or whose sequence
    /// number does not match (the folder was deleted and its record reused) makes the entry an orphan.
    fn link_parents(&mut self) {
        let n = self.idx.record.len();
        let root = match self.record_entry.get(ROOT_RECORD as usize) {
            Some(&e) if e != NONE && self.idx.flags[e as usize] & flags::DIRECTORY != 0 => e,
            _ => self.push_synthetic(b"", ROOT_RECORD),
        };
        self.idx.root = root;
        let mut parent = Vec::with_capacity(self.idx.record.capacity());
        for i in 0..n {
            let pref = self.parent_ref[i];
            let p = if i as u32 == root {
                Some(root)
            } else {
                self.resolve(pref, self.idx.flags[i])
            };
            let p = p.unwrap_or_else(|| {
                self.stats.orphans += 1;
                self.idx.flags[i] |= flags::ORPHAN;
                if self.orphan == NONE {
                    self.orphan = self.push_synthetic(b"$Orphan", u64::from(u32::MAX));
                }
                self.orphan
            });
            parent.push(p);
        }
        // Synthetic entries made above hang under the root.
        parent.resize(self.idx.record.len(), root);
        self.idx.parent = parent;
        self.parent_ref = Vec::new();
        self.record_entry = Vec::new();
    }

    fn resolve(&self, pref: u64, child_flags: u32) -> Option<EntryId> {
        let rec = usize::try_from(pref & 0xFFFF_FFFF_FFFF).ok()?;
        let seq = (pref >> 48) as u16;
        let p = *self.record_entry.get(rec)?;
        if p == NONE {
            return None;
        }
        let pf = self.idx.flags[p as usize];
        if pf & flags::DIRECTORY == 0 || pf & flags::STREAM != 0 {
            return None;
        }
        let pseq = self.idx.sequence[p as usize];
        let parent_deleted = pf & flags::DELETED != 0;
        // A live entry must not hang below a deleted folder; a deleted one may, one sequence number behind.
        let ok = seq == 0
            || (pseq == seq && (!parent_deleted || child_flags & flags::DELETED != 0))
            || (parent_deleted && child_flags & flags::DELETED != 0 && pseq == seq.wrapping_add(1));
        ok.then_some(p)
    }

    fn push_synthetic(&mut self, name: &[u8], record: u64) -> EntryId {
        let rec = RecordInfo {
            number: record,
            header_flags: 3,
            ..RecordInfo::default()
        };
        let attrs = flags::DIRECTORY | flags::SYNTHETIC | flags::HIDDEN | flags::SYSTEM;
        self.push(
            name,
            &[],
            ROOT_RECORD,
            &rec,
            attrs,
            StreamSizes::default(),
            &StdInfo::default(),
        )
    }

    /// Orders entries by depth (breaking any parent cycle by moving the entry that closes it under `$Orphan`),
    /// then sums sizes and counts bottom-up so each directory gets its recursive totals.
    fn break_cycles_and_total(&mut self) {
        const UNKNOWN: u32 = u32::MAX;
        const VISITING: u32 = u32::MAX - 1;
        let root = self.idx.root;
        let mut depth = vec![UNKNOWN; self.idx.parent.len()];
        depth[root as usize] = 0;
        let mut stack: Vec<u32> = Vec::new();
        let mut start = 0;
        while start < depth.len() {
            let mut cur = start as u32;
            while depth[cur as usize] == UNKNOWN {
                depth[cur as usize] = VISITING;
                stack.push(cur);
                cur = self.idx.parent[cur as usize];
            }
            if depth[cur as usize] == VISITING {
                // `cur` is on the path being walked: a cycle. Cut it by moving `cur` under `$Orphan`, forget the
                // depths of this walk and walk again from the same start. Entries of the walk that are no longer
                // on it have larger ids than `start` (smaller ones are done), so the outer loop reaches them.
                let orphan = self.orphan_folder();
                depth.resize(self.idx.parent.len(), UNKNOWN);
                depth[orphan as usize] = 1;
                self.idx.parent[cur as usize] = orphan;
                self.idx.flags[cur as usize] |= flags::ORPHAN;
                self.stats.cycles_broken += 1;
                self.stats.orphans += 1;
                for s in stack.drain(..) {
                    depth[s as usize] = UNKNOWN;
                }
                continue;
            }
            let mut d = depth[cur as usize];
            while let Some(e) = stack.pop() {
                d += 1;
                depth[e as usize] = d;
            }
            start += 1;
        }
        // Counting sort by depth, then add each entry into its parent, deepest first.
        let n = depth.len();
        let max_depth = depth.iter().copied().max().unwrap_or(0) as usize;
        let mut bucket_start = vec![0u32; max_depth + 2];
        for &d in &depth {
            bucket_start[d as usize + 1] += 1;
        }
        for i in 1..bucket_start.len() {
            bucket_start[i] += bucket_start[i - 1];
        }
        let mut order = vec![0u32; n];
        for (i, &d) in depth.iter().enumerate() {
            let slot = &mut bucket_start[d as usize];
            order[*slot as usize] = i as u32;
            *slot += 1;
        }
        drop(depth);
        let x = &mut self.idx;
        x.tree_size = vec![0; n];
        x.descendants = vec![0; n];
        for &e in order.iter().rev() {
            let e = e as usize;
            if e as u32 == root {
                continue;
            }
            let p = x.parent[e] as usize;
            let f = x.flags[e];
            // Deleted entries count only towards deleted folders, so live totals stay what Explorer shows.
            if f & flags::DELETED != 0 && x.flags[p] & flags::DELETED == 0 {
                continue;
            }
            let (own, count) = if f & flags::DIRECTORY != 0 {
                (x.tree_size[e], x.descendants[e] + 1)
            } else {
                (x.size[e], u32::from(f & flags::STREAM == 0))
            };
            x.tree_size[p] += own;
            x.descendants[p] += count;
        }
    }

    /// The `$Orphan` folder under the root, made on first use (after parents are linked).
    fn orphan_folder(&mut self) -> EntryId {
        if self.orphan == NONE {
            self.orphan = self.push_synthetic(b"$Orphan", u64::from(u32::MAX));
            self.idx.parent.push(self.idx.root);
        }
        self.orphan
    }
}

/// The Windows attribute bits implied by a stream's attribute header flags.
fn stream_attr_bits(attr_flags: u16) -> u32 {
    let mut f = 0;
    if attr_flags & 0x0001 != 0 {
        f |= flags::COMPRESSED;
    }
    if attr_flags & 0x4000 != 0 {
        f |= flags::ENCRYPTED;
    }
    if attr_flags & 0x8000 != 0 {
        f |= flags::SPARSE;
    }
    f
}

fn text_of<'a>(text: &'a [u8], r: &std::ops::Range<u32>) -> &'a [u8] {
    &text[r.start as usize..r.end as usize]
}

/// Copies one record with its names, streams and their text from one batch to the end of another.
fn copy_record(src: &RecordBatch, rec: &RecordInfo, dst: &mut RecordBatch) {
    let mut r = rec.clone();
    let rebase = |dst: &mut RecordBatch, t: &std::ops::Range<u32>| {
        let start = dst.text.len() as u32;
        dst.text.extend_from_slice(src.text(t));
        start..dst.text.len() as u32
    };
    let names_start = dst.names.len() as u32;
    for n in &src.names[rec.names.start as usize..rec.names.end as usize] {
        let text = rebase(dst, &n.text);
        dst.names.push(NameInfo { text, ..n.clone() });
    }
    r.names = names_start..dst.names.len() as u32;
    let streams_start = dst.streams.len() as u32;
    for s in &src.streams[rec.streams.start as usize..rec.streams.end as usize] {
        let text = rebase(dst, &s.text);
        dst.streams.push(StreamInfo {
            text,
            sizes: s.sizes,
        });
    }
    r.streams = streams_start..dst.streams.len() as u32;
    dst.records.push(r);
}
