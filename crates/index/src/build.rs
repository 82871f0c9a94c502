//! Builds an [`Index`] from parsed record batches.
//!
//! Batches arrive in record order and most records become entries at once. Records that span several MFT
//! records (a base record with an `$ATTRIBUTE_LIST` and its extension records, in any order) are set aside and
//! merged at the end. Then parents are resolved, cycles broken and directory totals summed, each in linear time.

use std::time::{Duration, Instant};

use crate::apart::Apart;
use crate::batch::{
    NameInfo, RecordBatch, RecordCounts, RecordInfo, StdInfo, StreamInfo, StreamSizes,
};
use crate::column::grow_gently;
use crate::index::{flags, EntryId, Index, VolumeMeta};
use crate::names::Names;
use crate::posix::{Posix, PosixColumn};
use crate::sparse::{Allocated, Sizes, Sparse};
use crate::timecol::Times;
use crate::timeline::{self, EntryTimeline, Timeline};

const NONE: u32 = u32::MAX;
/// The root directory is always record 5.
const ROOT_RECORD: u64 = 5;
/// The root folder's record on the other file systems.
const OTHER_ROOT_RECORD: u64 = 2;
const DOS_NAMESPACE: u8 = 2;
/// The `$FILE_NAME` namespace of a Win32 long name, whose 8.3 alias a DOS name is.
const WIN32_NAMESPACE: u8 = 1;
/// Windows' longest path is 32,767 UTF-16 units, at most 3 bytes of UTF-8 each.
pub const MAX_PATH_BYTES: u32 = 3 * 32_767;
/// `/$Orphan`
const ORPHAN_PATH_BYTES: u32 = 8;
/// NTFS allows 1024 hard links; names past that come from a damaged record.
const NTFS_NAMES_PER_FILE: usize = 1024;
/// ext4 allows 65,000 hard links (ext2 and ext3 32,000); its link count is 16 bits.
const OTHER_NAMES_PER_FILE: usize = u16::MAX as usize;

/// What a file system's records may hold that NTFS's do not.
#[derive(Debug, Clone, Copy)]
struct Rules {
    /// Whether a DOS name beside a long one is kept as its alias: on file systems other than NTFS. NTFS's are
    /// dropped, as Everything drops them: one volume in five names a file so, and its aliases would cost 4 to 7
    /// bytes an entry on disk and in memory (the benchmark volume, the Windows XP sample).
    keep_aliases: bool,
    /// The most names (hard links) a file has; more come from damage.
    names_per_file: usize,
}

impl Rules {
    const NTFS: Rules = Rules {
        keep_aliases: false,
        names_per_file: NTFS_NAMES_PER_FILE,
    };

    fn of(fs: crate::FileSystem) -> Rules {
        match fs {
            crate::FileSystem::Ntfs => Rules::NTFS,
            _ => Rules {
                keep_aliases: true,
                names_per_file: OTHER_NAMES_PER_FILE,
            },
        }
    }
}
/// Streams are entries beside each link; past this many for one file, only beside the first.
const MAX_STREAM_ENTRIES_PER_FILE: usize = 4096;
/// Headroom below the 32-bit limits of entry ids and name offsets.
const LIMIT_ENTRIES: usize = u32::MAX as usize - (1 << 24);
const LIMIT_NAME_BYTES: usize = u32::MAX as usize - (1 << 26);

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
    /// Entries whose full path would pass Windows' limit of 32,767 UTF-16 units: cut off under `$Orphan`.
    pub paths_cut: u64,
    /// Entries past the 32-bit limits of the index (not reached by any real volume).
    pub entries_dropped: u64,
    /// Time spent merging extension records and resolving parents.
    pub merge: Duration,
    /// Time spent on depth ordering and directory totals.
    pub totals: Duration,
}

/// Entry columns under construction: the index's columns, with parents still as file references.
#[derive(Debug, Clone)]
pub struct Columns {
    names: Vec<u8>,
    name_start: Vec<u32>,
    parent_ref: Vec<u64>,
    record: Vec<u32>,
    sequence: Vec<u16>,
    flags: Vec<u32>,
    size: Vec<u64>,
    allocated: Vec<u64>,
    created: Vec<u64>,
    modified: Vec<u64>,
    mft_changed: Vec<u64>,
    accessed: Vec<u64>,
    reparse_tag: Vec<u32>,
    /// Each entry's timeline record (see [`crate::timeline`]).
    timeline: Vec<u8>,
    /// The 8.3 aliases of entries with a long name (see [`crate::aliases`]).
    aliases: Apart,
    /// Each entry's owner and permissions: empty until an entry has them, then one per entry.
    posix: Vec<Option<Posix>>,
    /// Symbolic links' targets (see [`crate::apart`]).
    link_targets: Apart,
    /// The exclusive bytes that are not the allocated size (see [`Index::exclusive`]): `None` until an entry
    /// tells them.
    exclusive: Option<Sparse<u64>>,
    rules: Rules,
}

impl Columns {
    fn with_capacity(entries: usize, name_bytes: usize) -> Columns {
        let mut name_start = Vec::with_capacity(entries + 1);
        name_start.push(0);
        Columns {
            names: Vec::with_capacity(name_bytes),
            name_start,
            parent_ref: Vec::with_capacity(entries),
            record: Vec::with_capacity(entries),
            sequence: Vec::with_capacity(entries),
            flags: Vec::with_capacity(entries),
            size: Vec::with_capacity(entries),
            allocated: Vec::with_capacity(entries),
            created: Vec::with_capacity(entries),
            modified: Vec::with_capacity(entries),
            mft_changed: Vec::with_capacity(entries),
            accessed: Vec::with_capacity(entries),
            reparse_tag: Vec::with_capacity(entries),
            timeline: Vec::with_capacity(entries * 3),
            aliases: Apart::default(),
            posix: Vec::new(),
            link_targets: Apart::default(),
            exclusive: None,
            rules: Rules::NTFS,
        }
    }

    fn len(&self) -> usize {
        self.record.len()
    }

    /// Sets entry `at`'s owner and permissions (entries before it without one have none).
    fn push_posix(&mut self, at: usize, p: Option<Posix>) {
        if p.is_some() || !self.posix.is_empty() {
            self.posix.resize(at, None);
            self.posix.push(p);
        }
    }

    /// Makes the entries of one complete record: one per name (DOS aliases skipped), then its named streams.
    /// Returns the first entry, or `None` when the record has no name.
    fn emit(
        &mut self,
        rec: &RecordInfo,
        names: &[NameInfo],
        streams: &[StreamInfo],
        text: &[u8],
    ) -> Option<u32> {
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
        // The entry's own allocation: its unnamed data's clusters and those of every other non-resident
        // attribute of the record that no stream entry shows (a folder's index, for one).
        let mut data = if dir != 0 {
            StreamSizes {
                allocated: rec.data.map_or(0, |d| d.allocated),
                ..StreamSizes::default()
            }
        } else {
            rec.data.unwrap_or_default()
        };
        data.allocated = data.allocated.saturating_add(rec.other_allocated);
        // Ids and name offsets are 32-bit: stop adding entries well before they would wrap.
        if self.len() > LIMIT_ENTRIES || self.names.len() > LIMIT_NAME_BYTES {
            return None;
        }
        let has_long_name = names.iter().any(|n| n.namespace != DOS_NAMESPACE);
        // A folder's row in a timeline is about its index of names, a file's about its unnamed data.
        let (main_id, index_root_size) = match (dir != 0, rec.index_root) {
            (true, Some(r)) => (Some(r.attr_id), Some(r.size)),
            (true, None) => (None, None),
            (false, _) => (rec.data.map(|d| d.attr_id), None),
        };
        // The names that make entries, in entry order, with their `$FILE_NAME` (which the streams beside each take).
        let names_per_file = self.rules.names_per_file;
        let kept = || {
            names
                .iter()
                .take(names_per_file)
                .filter(move |n| !(has_long_name && n.namespace == DOS_NAMESPACE))
                .map(move |n| {
                    let tl = EntryTimeline {
                        fn_times: [n.created, n.modified, n.mft_changed, n.accessed],
                        fn_id: n.attr_id,
                        main_id,
                        index_root_size,
                    };
                    (n, tl)
                })
        };
        let mut first = None;
        let mut made: Vec<(u32, &NameInfo)> = Vec::new();
        for (n, tl) in kept() {
            let id = self.push(
                text_of(text, &n.text),
                &[],
                n.parent,
                rec,
                attrs,
                data,
                &si,
                &tl,
            );
            first.get_or_insert(id);
            made.push((id, n));
            if let Some(t) = &rec.link_target {
                self.link_targets.push(id, text_of(text, t));
            }
        }
        let first = first?;
        // A DOS name beside a long one is that name's 8.3 alias: the Win32 name in the same folder (else any).
        for d in names
            .iter()
            .filter(|n| self.rules.keep_aliases && has_long_name && n.namespace == DOS_NAMESPACE)
        {
            let same_folder = made.iter().filter(|(_, n)| n.parent == d.parent);
            let owner = same_folder
                .clone()
                .find(|(_, n)| n.namespace == WIN32_NAMESPACE)
                .or_else(|| same_folder.clone().next());
            if let Some(&(id, _)) = owner {
                if self.aliases.of(id).is_none() {
                    self.aliases.push(id, text_of(text, &d.text));
                }
            }
        }
        // Streams hang beside each name of the file (every hard link is a path to them): `dir/file.txt:stream`.
        let names_end = self.len() as u32;
        // Tails were folded into their streams when the file's records were merged; one left here is damage.
        let streams: Vec<&StreamInfo> = streams.iter().filter(|s| !s.tail).collect();
        if !streams.is_empty() {
            let stream_attrs = (attrs & !flags::DIRECTORY) | flags::STREAM;
            let mut prefix = Vec::new();
            // Every link gets the streams, unless a damaged record would multiply them beyond reason.
            let links =
                if (names_end - first) as usize * streams.len() > MAX_STREAM_ENTRIES_PER_FILE {
                    first + 1
                } else {
                    names_end
                };
            for (id, (_, link)) in (first..links).zip(kept()) {
                let (start, end) = (
                    self.name_start[id as usize] as usize,
                    self.name_start[id as usize + 1] as usize,
                );
                prefix.clear();
                prefix.extend_from_slice(&self.names[start..end]);
                prefix.push(b':');
                let parent = self.parent_ref[id as usize];
                for &s in &streams {
                    let tl = EntryTimeline {
                        main_id: Some(s.sizes.attr_id),
                        index_root_size: None,
                        ..link
                    };
                    self.push(
                        &prefix,
                        text_of(text, &s.text),
                        parent,
                        rec,
                        stream_attrs,
                        s.sizes,
                        &si,
                        &tl,
                    );
                }
            }
        }
        Some(first)
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
        tl: &EntryTimeline,
    ) -> u32 {
        let id = self.record.len() as u32;
        self.push_posix(id as usize, rec.posix);
        // A record's exclusive bytes are its main data's: its streams' (none on the volumes that tell) are taken
        // as expected.
        let flags = attrs | stream_attr_bits(data.attr_flags);
        if let Some(x) = rec.exclusive.filter(|_| attrs & flags::STREAM == 0) {
            let apart = self.exclusive.get_or_insert_with(Sparse::default);
            if x != crate::index::expected_exclusive(flags, data.size, data.allocated) {
                apart.push(id, x);
            }
        }
        self.names.extend_from_slice(name);
        self.names.extend_from_slice(name_suffix);
        self.name_start.push(self.names.len() as u32);
        self.parent_ref.push(parent);
        self.record.push(rec.number as u32);
        self.sequence.push(rec.sequence);
        self.flags.push(flags);
        self.size.push(data.size);
        self.allocated.push(data.allocated);
        self.created.push(si.created);
        self.modified.push(si.modified);
        self.mft_changed.push(si.mft_changed);
        self.accessed.push(si.accessed);
        self.reparse_tag.push(rec.reparse_tag);
        let si = [si.created, si.modified, si.mft_changed, si.accessed];
        timeline::encode(Some(tl), si, &mut self.timeline);
        id
    }

    /// Appends `other`'s entries after this one's; returns the id the first of them got.
    fn append(&mut self, other: &Columns) -> u32 {
        let base = self.len() as u32;
        let name_base = self.names.len() as u32;
        grow_gently(&mut self.names, other.names.len());
        self.names.extend_from_slice(&other.names);
        self.name_start
            .extend(other.name_start[1..].iter().map(|e| e + name_base));
        self.parent_ref.extend_from_slice(&other.parent_ref);
        self.record.extend_from_slice(&other.record);
        self.sequence.extend_from_slice(&other.sequence);
        self.flags.extend_from_slice(&other.flags);
        self.size.extend_from_slice(&other.size);
        self.allocated.extend_from_slice(&other.allocated);
        self.created.extend_from_slice(&other.created);
        self.modified.extend_from_slice(&other.modified);
        self.mft_changed.extend_from_slice(&other.mft_changed);
        self.accessed.extend_from_slice(&other.accessed);
        self.reparse_tag.extend_from_slice(&other.reparse_tag);
        self.timeline.extend_from_slice(&other.timeline);
        self.aliases.append(&other.aliases, base);
        self.link_targets.append(&other.link_targets, base);
        if let Some(o) = &other.exclusive {
            let x = self.exclusive.get_or_insert_with(Sparse::default);
            for (&id, &v) in o.ids.iter().zip(o.values.iter()) {
                x.push(id + base, v);
            }
        }
        if !other.posix.is_empty() || !self.posix.is_empty() {
            self.posix.resize(base as usize, None);
            self.posix.extend_from_slice(&other.posix);
            self.posix.resize(self.record.len(), None);
        }
        base
    }
}

/// Makes [`Prepared`] batches as a [`Builder`] would, on any thread (then [`Builder::append`] them in order).
#[derive(Debug, Clone, Copy)]
pub struct Preparer {
    opts: BuildOptions,
    rules: Rules,
}

impl Preparer {
    pub fn prepare(&self, batch: &RecordBatch) -> Prepared {
        Prepared::made(batch, self.opts, self.rules)
    }
}

/// A batch turned into entries, ready to append: made on a parser thread so the builder's own (serial) work
/// is a few slice copies per batch.
#[derive(Debug)]
pub struct Prepared {
    cols: Columns,
    /// (record number, its first entry in `cols`) for every record that made entries.
    firsts: Vec<(u64, u32)>,
    /// Records merged at the end (with an attribute list, or extension records).
    deferred: RecordBatch,
    counts: RecordCounts,
    nameless: u64,
}

impl Prepared {
    /// Makes the entries of every complete record of `batch`; sets aside those that need merging.
    pub fn new(batch: &RecordBatch, opts: BuildOptions) -> Prepared {
        Prepared::made(batch, opts, Rules::NTFS)
    }

    /// As [`Prepared::new`], under a file system's `rules`.
    fn made(batch: &RecordBatch, opts: BuildOptions, rules: Rules) -> Prepared {
        let mut p = Prepared {
            cols: Columns::with_capacity(
                batch.records.len() + batch.streams.len() + 8,
                batch.text.len() + 64,
            ),
            firsts: Vec::with_capacity(batch.records.len()),
            deferred: RecordBatch::default(),
            counts: batch.counts,
            nameless: 0,
        };
        p.cols.rules = rules;
        for rec in &batch.records {
            if !rec.in_use() && !opts.include_deleted {
                continue;
            }
            if rec.base != 0 || rec.has_attribute_list {
                copy_record(batch, rec, &mut p.deferred);
                continue;
            }
            let names = &batch.names[rec.names.start as usize..rec.names.end as usize];
            let streams = &batch.streams[rec.streams.start as usize..rec.streams.end as usize];
            match p.cols.emit(rec, names, streams, &batch.text) {
                Some(first) => p.firsts.push((rec.number, first)),
                None => p.nameless += 1,
            }
        }
        p
    }
}

/// Accumulates batches into an index.
pub struct Builder {
    opts: BuildOptions,
    meta: VolumeMeta,
    cols: Columns,
    /// Filled from `cols` when parents are resolved.
    idx: Index,
    /// First entry of each record number (`NONE` if the record made no entry).
    record_entry: Vec<u32>,
    /// First entries of records numbered far beyond the entries read (FAT's and exFAT's, numbered by where their
    /// directory entries lie; a damaged volume's): kept apart so that such numbers cannot make the dense table
    /// huge.
    far_records: FarRecords,
    /// Records merged at the end: base records with an attribute list and all extension records.
    deferred: RecordBatch,
    /// The synthetic `$Orphan` folder, once made.
    orphan: EntryId,
    /// The entries' timeline records, moved here from `cols` with the other columns (synthetic entries are added
    /// after that), made the index's at the end.
    timeline: Vec<u8>,
    stats: BuildStats,
    /// The root folder's record number: NTFS's 5; 2 on the other file systems (FAT's and exFAT's in The Sleuth
    /// Kit's numbering, ext's root inode).
    root_record: u64,
}

/// Folders' record numbers and their first entries, beyond the dense table: appended in ascending record order
/// as the batches come (sorted once if not), looked up by binary search. A hash map of every far record cost
/// about fifty bytes a FAT entry at its growth's peak.
#[derive(Default)]
struct FarRecords {
    pairs: Vec<(u64, u32)>,
    unsorted: bool,
}

impl FarRecords {
    fn insert(&mut self, record: u64, entry: u32) {
        if self.pairs.last().is_some_and(|&(r, _)| r > record) {
            self.unsorted = true;
        }
        grow_gently(&mut self.pairs, 1);
        self.pairs.push((record, entry));
    }

    /// Sorts what came out of order; a record set twice keeps its last entry, as the dense table does.
    fn settle(&mut self) {
        if self.unsorted {
            // Stable: of a record's entries the last set stays last.
            self.pairs.sort_by_key(|&(r, _)| r);
            self.unsorted = false;
        }
    }

    fn get(&self, record: u64) -> Option<u32> {
        debug_assert!(!self.unsorted);
        let i = self.pairs.partition_point(|&(r, _)| r <= record);
        (i > 0 && self.pairs[i - 1].0 == record).then(|| self.pairs[i - 1].1)
    }
}

impl Builder {
    /// `expected_entries` sizes the columns up front so they never grow by doubling (which would double the
    /// peak memory); a good guess is the number of records in use.
    pub fn new(meta: VolumeMeta, opts: BuildOptions, expected_entries: usize) -> Builder {
        let root_record = if meta.filesystem == crate::FileSystem::Ntfs {
            ROOT_RECORD
        } else {
            OTHER_ROOT_RECORD
        };
        let rules = Rules::of(meta.filesystem);
        let cap = expected_entries + expected_entries / 16 + 16;
        // Slots for every record number; more are added on demand, so a hostile record count cannot make this
        // allocate more than the records really read.
        let slots = usize::try_from(meta.records_total)
            .unwrap_or(0)
            .min(cap * 2);
        Builder {
            opts,
            meta,
            cols: Columns {
                rules,
                ..Columns::with_capacity(cap, cap * 20)
            },
            idx: Index::default(),
            record_entry: vec![NONE; slots],
            far_records: FarRecords::default(),
            deferred: RecordBatch::default(),
            orphan: NONE,
            timeline: Vec::new(),
            stats: BuildStats::default(),
            root_record,
        }
    }

    /// The root folder's record number, when the file system's is not the one [`Builder::new`] assumes (XFS's
    /// root inode is the superblock's `rootino`, 128 on a volume `mkfs.xfs` made).
    pub fn with_root_record(mut self, record: u64) -> Builder {
        self.root_record = record;
        self
    }

    /// Copies the entries `ids` (ascending) of `old`, as they are: the start of an update, where only the changed
    /// records are parsed again (and added with [`Builder::add_batch`]). Each copied entry's parent becomes a file
    /// reference again (the parent's record and sequence), so parents are resolved afresh against the new
    /// entries: a renamed or moved folder carries its subtree along. Orphans (their original parent reference
    /// is not in the index; see `Index::records_to_recheck`) and synthetic entries (made again when needed) are
    /// never copied. May be called for several indexes (a base and a delta over it), as long as no record's
    /// entries come from two of them.
    pub fn seed(&mut self, old: &Index, ids: impl IntoIterator<Item = EntryId>) {
        self.copy_entries(old, ids, false);
    }

    /// Copies the entries `ids` (ascending) of `old` as they are, orphans too (they stay orphans: their parent
    /// reference is gone): for merging an index with a delta that describes the same state.
    pub fn seed_as_is(&mut self, old: &Index, ids: impl IntoIterator<Item = EntryId>) {
        self.copy_entries(old, ids, true);
    }

    fn copy_entries(&mut self, old: &Index, ids: impl IntoIterator<Item = EntryId>, orphans: bool) {
        let skip = flags::SYNTHETIC | if orphans { 0 } else { flags::ORPHAN };
        let kept = |i: usize| old.flags[i] & skip == 0;
        // (record, its first kept entry): a record's entries are adjacent, its names first, and the first
        // stands for the record when children resolve their parent.
        let mut firsts: Vec<(u64, u32)> = Vec::new();
        let c = &mut self.cols;
        if old.exclusive.is_some() {
            c.exclusive.get_or_insert_with(Sparse::default);
        }
        let mut ids = ids
            .into_iter()
            .map(|i| i as usize)
            .filter(|&i| kept(i))
            .peekable();
        while let Some(start) = ids.next() {
            // A run of consecutive kept entries is copied column by column.
            let mut id = start + 1;
            while ids.next_if_eq(&id).is_some() {
                id += 1;
            }
            let base = c.len() as u32;
            for i in start..id {
                old.push_name(i as EntryId, &mut c.names);
                c.name_start.push(c.names.len() as u32);
            }
            c.parent_ref
                .extend((start..id).map(|i| match old.parent[i] as usize {
                    // No record has this number: the entry is an orphan again.
                    _ if old.flags[i] & flags::ORPHAN != 0 => u64::MAX,
                    p => u64::from(old.record[p]) | u64::from(old.sequence[p]) << 48,
                }));
            c.record.extend_from_slice(&old.record[start..id]);
            c.sequence.extend_from_slice(&old.sequence[start..id]);
            c.flags.extend_from_slice(&old.flags[start..id]);
            c.size.extend((start..id).map(|i| old.size(i as EntryId)));
            c.allocated
                .extend((start..id).map(|i| old.allocated(i as EntryId)));
            c.created
                .extend((start..id).map(|i| old.created(i as EntryId)));
            c.modified
                .extend((start..id).map(|i| old.modified(i as EntryId)));
            c.mft_changed
                .extend((start..id).map(|i| old.mft_changed(i as EntryId)));
            c.accessed
                .extend((start..id).map(|i| old.accessed(i as EntryId)));
            c.reparse_tag
                .extend((start..id).map(|i| old.reparse_tag(i as EntryId)));
            // A record depends only on its entry, whose times are copied as they are: its bytes stay right.
            match old.timeline.as_ref().and_then(|t| t.records(start..id)) {
                Some(records) => c.timeline.extend_from_slice(records),
                None => c
                    .timeline
                    .extend(std::iter::repeat_n(timeline::NO_DATA, id - start)),
            }
            for i in start..id {
                let at = base + (i - start) as u32;
                if let Some(a) = old.aliases.of(i as EntryId) {
                    c.aliases.push(at, a);
                }
                if let Some(t) = old.link_targets.of(i as EntryId) {
                    c.link_targets.push(at, t);
                }
                c.push_posix(at as usize, old.posix(i as EntryId));
                if let (Some(x), Some(v)) = (
                    c.exclusive.as_mut(),
                    old.exclusive.as_ref().and_then(|o| o.get(i as EntryId)),
                ) {
                    x.push(at, v);
                }
                // Names from index slack stand for no record (see `add_from_index_slack`).
                if old.flags[i] & flags::FROM_INDEX_SLACK != 0 {
                    continue;
                }
                if i == start || old.record[i - 1] != old.record[i] {
                    firsts.push((u64::from(old.record[i]), base + (i - start) as u32));
                }
            }
        }
        for (r, e) in firsts {
            self.set_record_entry(r, e);
        }
    }

    /// Entries so far (before parents are linked).
    pub fn entries(&self) -> usize {
        self.cols.len()
    }

    /// What prepares batches for this builder on other threads.
    pub fn preparer(&self) -> Preparer {
        Preparer {
            opts: self.opts,
            rules: self.cols.rules,
        }
    }

    /// Adds a batch of parsed records. Batches must come in ascending record order.
    pub fn add_batch(&mut self, batch: &RecordBatch) {
        self.append(Prepared::made(batch, self.opts, self.cols.rules));
    }

    /// Adds a batch prepared with [`Prepared::new`] (on any thread). Batches must come in record order.
    pub fn append(&mut self, p: Prepared) {
        self.stats.counts += p.counts;
        self.stats.nameless += p.nameless;
        // Ids and name offsets are 32-bit: a volume past that keeps what fits and counts the rest.
        if self.cols.len() + p.cols.len() > LIMIT_ENTRIES
            || self.cols.names.len() + p.cols.names.len() > LIMIT_NAME_BYTES
        {
            self.stats.entries_dropped += p.cols.len() as u64;
            return;
        }
        let base = self.cols.append(&p.cols);
        for (record, first) in p.firsts {
            self.set_record_entry(record, base + first);
        }
        if !p.deferred.records.is_empty() {
            for rec in &p.deferred.records {
                copy_record(&p.deferred, rec, &mut self.deferred);
            }
        }
    }

    /// Adds deleted entries whose names only a folder's index slack keeps (one record of `batch` per name, not in
    /// use, numbered as the index entry named it or [`crate::NO_RECORD`]): flagged
    /// [`flags::FROM_INDEX_SLACK`], and never the entry of their record number, which other entries resolve
    /// their parent through (the record may hold another file now).
    pub fn add_from_index_slack(&mut self, batch: &RecordBatch) {
        let mut p = Prepared::made(
            batch,
            BuildOptions {
                include_deleted: true,
            },
            self.cols.rules,
        );
        for f in &mut p.cols.flags {
            *f |= flags::DELETED | flags::FROM_INDEX_SLACK;
        }
        p.firsts.clear();
        self.append(p);
    }

    /// The entries made so far, each as (its parent's file reference, name, record, sequence, flags): what a
    /// caller adding entries from elsewhere checks them against.
    pub fn entries_so_far(&self) -> impl Iterator<Item = (u64, &[u8], u32, u16, u32)> + '_ {
        let c = &self.cols;
        (0..c.len()).map(move |i| {
            let name = &c.names[c.name_start[i] as usize..c.name_start[i + 1] as usize];
            (
                c.parent_ref[i],
                name,
                c.record[i],
                c.sequence[i],
                c.flags[i],
            )
        })
    }

    /// Records that record `record`'s first entry is `entry`.
    fn set_record_entry(&mut self, record: u64, entry: u32) {
        let Ok(r) = usize::try_from(record) else {
            return;
        };
        if r >= self.record_entry.len() {
            // Grow the dense table only as far as the entries so far justify (not as far as the table itself:
            // sparse record numbers, such as FAT's TSK inode numbers, would double it up to the largest).
            if r > 2 * self.cols.len() + 4096 {
                // Only a folder is ever looked up (as a parent): other far records need no place. (A record
                // set twice, a folder then not, keeps the folder here: only a damaged volume numbers two
                // entries alike this far out.)
                if self.cols.flags[entry as usize] & flags::DIRECTORY != 0 {
                    self.far_records.insert(record, entry);
                }
                return;
            }
            self.record_entry.resize(r + 1, NONE);
        }
        self.record_entry[r] = entry;
    }

    /// The first entry of record `record`, if it made one.
    fn record_entry(&self, record: u64) -> Option<u32> {
        let dense = usize::try_from(record)
            .ok()
            .and_then(|r| self.record_entry.get(r).copied());
        dense
            .filter(|&e| e != NONE)
            .or_else(|| self.far_records.get(record))
    }

    /// Emits a merged record into the main columns and records its first entry.
    fn emit(&mut self, rec: &RecordInfo, names: &[NameInfo], streams: &[StreamInfo], text: &[u8]) {
        match self.cols.emit(rec, names, streams, text) {
            Some(first) => self.set_record_entry(rec.number, first),
            None => self.stats.nameless += 1,
        }
    }

    /// Merges the set-aside records, resolves parents and computes directory totals.
    pub fn finish(mut self) -> (Index, BuildStats) {
        let t = Instant::now();
        self.merge_deferred();
        self.move_columns();
        self.link_parents();
        self.stats.merge = t.elapsed();
        let t = Instant::now();
        self.break_cycles();
        self.stats.totals = t.elapsed();
        let records = std::mem::take(&mut self.timeline);
        self.idx.timeline = Some(Timeline::from_records(records, self.idx.len()));
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
                // NTFS frees a file's extension records with its base record: a freed extension of a live
                // file (or a live one of a deleted file) is left over from an earlier file.
                if !seq_ok || e.in_use() != base.in_use() {
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
                rec.other_allocated = rec.other_allocated.saturating_add(e.other_allocated);
                if rec.reparse_tag == 0 {
                    rec.reparse_tag = e.reparse_tag;
                }
                if rec.index_root.is_none() {
                    rec.index_root = e.index_root;
                }
            }
            fold_stream_tails(&mut rec, &mut streams, &d.text);
            self.emit(&rec, &names, &streams, &d.text);
        }
        self.stats.extensions_stray += used.iter().filter(|u| !**u).count() as u64;
    }

    /// Moves the finished columns into the index (parents stay in `parent_ref` until linked).
    fn move_columns(&mut self) {
        let c = &mut self.cols;
        self.timeline = std::mem::take(&mut c.timeline);
        // The names are stored folded, with the bits that give them back (see `crate::names`).
        // The columns are encoded side by side; each plain column is freed as soon as its encoding is made.
        let take = std::mem::take::<Vec<u64>>;
        let (created, modified, mft_changed, accessed) = (
            take(&mut c.created),
            take(&mut c.modified),
            take(&mut c.mft_changed),
            take(&mut c.accessed),
        );
        let times = |v: Vec<u64>| Times::from_values(&v);
        let (names, (allocated, ((created, modified), (mft_changed, accessed)))) = rayon::join(
            || Names::from_raw(&c.names, &c.name_start),
            || {
                rayon::join(
                    || Allocated::from_values(&c.allocated, &c.size),
                    || {
                        rayon::join(
                            || rayon::join(|| times(created), || times(modified)),
                            || rayon::join(|| times(mft_changed), || times(accessed)),
                        )
                    },
                )
            },
        );
        c.names = Vec::new();
        c.allocated = Vec::new();
        self.idx = Index {
            meta: std::mem::take(&mut self.meta),
            names,
            name_start: std::mem::take(&mut c.name_start).into(),
            parent: Default::default(),
            record: std::mem::take(&mut c.record).into(),
            sequence: std::mem::take(&mut c.sequence).into(),
            flags: std::mem::take(&mut c.flags).into(),
            size: Sizes::from_values(&take(&mut c.size)),
            allocated,
            created,
            modified,
            mft_changed,
            accessed,
            reparse_tag: Sparse::from_values(std::mem::take(&mut c.reparse_tag).into_iter(), 0),
            aliases: std::mem::take(&mut c.aliases),
            posix: PosixColumn::from_values(&std::mem::take(&mut c.posix)),
            link_targets: std::mem::take(&mut c.link_targets),
            exclusive: c.exclusive.take(),
            root: 0,
            aids: None,
            record_hashes: Default::default(),
            timeline: None,
            check: None,
            format: 0,
            grafts: None,
        };
    }

    /// Turns parent references into entry ids. A parent that is missing, not a directory, or whose sequence
    /// number does not match (the folder was deleted and its record reused) makes the entry an orphan.
    fn link_parents(&mut self) {
        self.far_records.settle();
        let n = self.idx.record.len();
        let root = match self.record_entry(self.root_record) {
            Some(e) if self.idx.flags[e as usize] & flags::DIRECTORY != 0 => e,
            _ => self.push_synthetic(b"", self.root_record),
        };
        self.idx.root = root;
        let mut parent = Vec::with_capacity(self.idx.record.len() + 2);
        // The last parent resolved: a folder's entries come together, and a far record's look-up is a search.
        let mut last: Option<((u64, bool), Option<EntryId>)> = None;
        for i in 0..n {
            let pref = self.cols.parent_ref[i];
            let key = (pref, self.idx.flags[i] & flags::DELETED != 0);
            let p = if i as u32 == root {
                Some(root)
            } else {
                match last {
                    Some((k, p)) if k == key => p,
                    _ => {
                        let p = self.resolve(pref, self.idx.flags[i]);
                        last = Some((key, p));
                        p
                    }
                }
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
        self.idx.parent = parent.into();
        self.cols.parent_ref = Vec::new();
        self.record_entry = Vec::new();
        self.far_records = FarRecords::default();
    }

    fn resolve(&self, pref: u64, child_flags: u32) -> Option<EntryId> {
        let seq = (pref >> 48) as u16;
        let p = self.record_entry(pref & 0xFFFF_FFFF_FFFF)?;
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

    /// Adds a folder made by uffs (the root when the MFT has none, `$Orphan`) to the linked columns.
    fn push_synthetic(&mut self, name: &[u8], record: u64) -> EntryId {
        let x = &mut self.idx;
        let id = x.record.len() as EntryId;
        x.names.push(id, name);
        x.name_start.make_owned().push(x.names.len() as u32);
        x.record.make_owned().push(record as u32);
        x.sequence.make_owned().push(0);
        x.flags
            .make_owned()
            .push(flags::DIRECTORY | flags::SYNTHETIC | flags::HIDDEN | flags::SYSTEM);
        x.allocated.push(id, 0, 0);
        x.size.push(id, 0);
        for col in [
            &mut x.created,
            &mut x.modified,
            &mut x.mft_changed,
            &mut x.accessed,
        ] {
            col.push(0);
        }
        self.timeline.push(timeline::NO_DATA);
        id
    }

    /// Walks every entry up to the root, breaking any parent cycle (by moving the entry that closes it under
    /// `$Orphan`) and cutting paths longer than Windows allows. (Folder totals are not stored: the query layer
    /// derives them when first asked, see `uffs_query::usage`.)
    fn break_cycles(&mut self) {
        const UNKNOWN: u32 = u32::MAX;
        const VISITING: u32 = u32::MAX - 1;
        let root = self.idx.root;
        let mut depth = vec![UNKNOWN; self.idx.parent.len()];
        depth[root as usize] = 0;
        // Bytes of each entry's full path (`/a/b`), to hold every path within Windows' limit.
        let mut path_len = vec![0u32; self.idx.parent.len()];
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
                self.move_to_orphan(cur, &mut depth, &mut path_len);
                self.stats.cycles_broken += 1;
                for s in stack.drain(..) {
                    depth[s as usize] = UNKNOWN;
                }
                continue;
            }
            let (mut d, mut len) = (depth[cur as usize], path_len[cur as usize]);
            while let Some(e) = stack.pop() {
                let name_len =
                    self.idx.name_start[e as usize + 1] - self.idx.name_start[e as usize];
                d += 1;
                len = len.saturating_add(1 + name_len);
                if len > MAX_PATH_BYTES {
                    // Longer than any path Windows can have: only a damaged or hostile volume nests this deep.
                    // Cut it off under `$Orphan`, which also bounds the memory full paths take.
                    self.move_to_orphan(e, &mut depth, &mut path_len);
                    self.stats.paths_cut += 1;
                    d = 2;
                    len = ORPHAN_PATH_BYTES + 1 + name_len;
                }
                depth[e as usize] = d;
                path_len[e as usize] = len;
            }
            start += 1;
        }
        drop(depth);
        drop(path_len);
    }

    /// Hangs `e` under `$Orphan` (made on first use, with its depth and path length known).
    fn move_to_orphan(&mut self, e: EntryId, depth: &mut Vec<u32>, path_len: &mut Vec<u32>) {
        let orphan = self.orphan_folder();
        depth.resize(self.idx.parent.len(), u32::MAX);
        path_len.resize(self.idx.parent.len(), 0);
        depth[orphan as usize] = 1;
        path_len[orphan as usize] = ORPHAN_PATH_BYTES;
        self.idx.parent[e as usize] = orphan;
        self.idx.flags[e as usize] |= flags::ORPHAN;
        self.stats.orphans += 1;
    }

    /// The `$Orphan` folder under the root, made on first use (after parents are linked).
    fn orphan_folder(&mut self) -> EntryId {
        if self.orphan == NONE {
            self.orphan = self.push_synthetic(b"$Orphan", u64::from(u32::MAX));
            self.idx.parent.make_owned().push(self.idx.root);
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

/// Adds the clusters of each later extent of a named stream (from an extension record) to the stream of that
/// name, and drops the extent; one whose stream is missing (damage) counts in the file's own entry.
fn fold_stream_tails(rec: &mut RecordInfo, streams: &mut Vec<StreamInfo>, text: &[u8]) {
    if !streams.iter().any(|s| s.tail) {
        return;
    }
    let tails: Vec<StreamInfo> = streams.iter().filter(|s| s.tail).cloned().collect();
    streams.retain(|s| !s.tail);
    for t in tails {
        let name = text_of(text, &t.text);
        match streams.iter_mut().find(|s| text_of(text, &s.text) == name) {
            Some(s) => s.sizes.allocated = s.sizes.allocated.saturating_add(t.sizes.allocated),
            None => rec.other_allocated = rec.other_allocated.saturating_add(t.sizes.allocated),
        }
    }
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
            tail: s.tail,
        });
    }
    r.streams = streams_start..dst.streams.len() as u32;
    dst.records.push(r);
}
