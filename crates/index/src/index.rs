//! The index of one volume: entries as parallel columns, names in one UTF-8 arena (folded, see [`Names`]).

use std::borrow::Cow;

use crate::aids::SearchAids;
use crate::column::Col;
use crate::names::Names;
use crate::sparse::{Allocated, Sizes, Sparse};
use crate::timecol::Times;

/// A 32-bit entry id: the position of the entry in every column.
pub type EntryId = u32;

/// The record number of an entry whose record is not known (a name from index slack whose entry header was
/// overwritten).
pub const NO_RECORD: u32 = u32::MAX;

/// The deepest an entry can be: every component of an NTFS path takes at least two of its bytes.
pub const MAX_DEPTH: usize = crate::build::MAX_PATH_BYTES as usize / 2;

/// Entry flag bits. The low 16 bits are the Windows file attributes from `$STANDARD_INFORMATION` (with the
/// directory bit set for directories); the high bits are uffs's own.
pub mod flags {
    pub const READONLY: u32 = 0x0001;
    pub const HIDDEN: u32 = 0x0002;
    pub const SYSTEM: u32 = 0x0004;
    pub const DIRECTORY: u32 = 0x0010;
    pub const ARCHIVE: u32 = 0x0020;
    pub const TEMPORARY: u32 = 0x0100;
    pub const SPARSE: u32 = 0x0200;
    pub const REPARSE_POINT: u32 = 0x0400;
    pub const COMPRESSED: u32 = 0x0800;
    pub const OFFLINE: u32 = 0x1000;
    pub const NOT_CONTENT_INDEXED: u32 = 0x2000;
    pub const ENCRYPTED: u32 = 0x4000;
    /// The Windows attribute bits kept from `$STANDARD_INFORMATION`.
    pub const WINDOWS_MASK: u32 = 0xFFFF;
    /// A named data stream (`file.txt:Zone.Identifier`).
    pub const STREAM: u32 = 1 << 16;
    /// The record is not in use: the file was deleted and its record not yet reused.
    pub const DELETED: u32 = 1 << 17;
    /// The parent could not be resolved (missing, reused or cyclic): the entry hangs under `$Orphan`.
    pub const ORPHAN: u32 = 1 << 18;
    /// Made by uffs, not read from the volume (`$Orphan`, or a root that the MFT did not have).
    pub const SYNTHETIC: u32 = 1 << 19;
    /// A deleted entry whose name was found only in the slack of its folder's `$I30` index (past the used end of
    /// an index node), not in any MFT record: its record number (when the index entry kept it) may belong to
    /// another file now, so nothing is read through it. Always with [`DELETED`].
    pub const FROM_INDEX_SLACK: u32 = 1 << 20;

    /// Attribute letters in the order `uffs export` prints them, with their bits.
    pub const LETTERS: [(char, u32); 11] = [
        ('r', READONLY),
        ('h', HIDDEN),
        ('s', SYSTEM),
        ('a', ARCHIVE),
        ('c', COMPRESSED),
        ('e', ENCRYPTED),
        ('p', SPARSE),
        ('l', REPARSE_POINT),
        ('o', OFFLINE),
        ('i', NOT_CONTENT_INDEXED),
        ('t', TEMPORARY),
    ];
}

/// What an entry's exclusive bytes ([`Index::exclusive`]) are unless kept apart: what a file shares with no
/// other has its allocated size; but a file its volume keeps compressed counts its extents as they read (Btrfs's
/// FIEMAP lengths), its size in whole 4 KiB sectors, where its allocation is what the compressed pieces take.
pub(crate) fn expected_exclusive(flags: u32, size: u64, allocated: u64) -> u64 {
    if flags & flags::COMPRESSED != 0 {
        size.div_ceil(4096).saturating_mul(4096)
    } else {
        allocated
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Directory,
    Stream,
    /// The kinds of files a POSIX file system (ext) keeps beside regular files and folders.
    Symlink,
    Socket,
    BlockDevice,
    CharDevice,
    Fifo,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Directory => "folder",
            EntryKind::Stream => "stream",
            EntryKind::Symlink => "symlink",
            EntryKind::Socket => "socket",
            EntryKind::BlockDevice => "block-device",
            EntryKind::CharDevice => "char-device",
            EntryKind::Fifo => "fifo",
        }
    }
}

/// What the index was built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeMeta {
    /// The source as given (path, optionally with `@N`).
    pub source: String,
    /// Volume serial number from the boot sector (0 for a raw `$MFT` capture).
    pub serial: u64,
    pub record_size: u32,
    /// MFT slots (records, used or not).
    pub records_total: u64,
    /// Deleted entries were read (the whole MFT, not only the records in use).
    pub has_deleted: bool,
    /// The change journal's next update sequence number when the index was built (the size of
    /// `$Extend/$UsnJrnl:$J`), 0 when the volume has no journal.
    pub journal_usn: u64,
    /// The change journal's id (`$Extend/$UsnJrnl:$Max`) when `journal_usn` was read; 0 without a journal. A
    /// journal with another id is a new journal: the index cannot follow it and is rebuilt.
    pub journal_id: u64,
    /// A fingerprint of the source's state when it was read (see `uffs_mft::Volume::change_stamp`): a different
    /// value later means the volume changed and the index is stale.
    pub change_stamp: u64,
    /// When the index was built (FILETIME, UTC).
    pub built_at: u64,
    /// The volume's bytes in use and in all, as its `$Bitmap` marked them when the index was built or last
    /// brought up to date: what the allocated sizes of its entries add up to. 0 when unknown (a raw `$MFT`
    /// capture, an index written before uffs kept them).
    pub bytes_in_use: u64,
    pub bytes_total: u64,
    /// The file system the entries were read from.
    pub filesystem: FileSystem,
}

/// The file system of a volume: all an index knows of where its entries came from (some columns are filled only
/// by some file systems). Stored in the index file's header as a number; 0, what files of before had there, is
/// NTFS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum FileSystem {
    #[default]
    Ntfs,
    Fat12,
    Fat16,
    Fat32,
    ExFat,
    Ext2,
    Ext3,
    Ext4,
    /// A mounted folder of any file system, walked (its source, the folder, ends with `/`: see
    /// [`folder_root`]).
    Folder,
    Xfs,
    Btrfs,
    /// HFS+ (names case-insensitive).
    HfsPlus,
    /// HFSX (HFS+ whose names may be case-sensitive).
    Hfsx,
    /// APFS: a container's volumes, or one of them.
    Apfs,
}

/// The folder a walked index's entries are below, from its source (`/home/ana/`): `/home/ana`, and `` for `/`
/// (an entry's path starts with `/`); `None` for a volume's source, which never ends with `/`.
pub fn folder_root(source: &str) -> Option<&str> {
    source.strip_suffix('/')
}

impl FileSystem {
    /// Its name as users know it (`NTFS`, `FAT32`, `exFAT`, `ext4`).
    pub fn name(self) -> &'static str {
        match self {
            FileSystem::Ntfs => "NTFS",
            FileSystem::Fat12 => "FAT12",
            FileSystem::Fat16 => "FAT16",
            FileSystem::Fat32 => "FAT32",
            FileSystem::ExFat => "exFAT",
            FileSystem::Ext2 => "ext2",
            FileSystem::Ext3 => "ext3",
            FileSystem::Ext4 => "ext4",
            FileSystem::Folder => "folder",
            FileSystem::Xfs => "XFS",
            FileSystem::Btrfs => "Btrfs",
            FileSystem::HfsPlus => "HFS+",
            FileSystem::Hfsx => "HFSX",
            FileSystem::Apfs => "APFS",
        }
    }

    /// Its number in an index file's header.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The file system of header number `code`; `None` for a number this version does not know.
    pub fn from_code(code: u32) -> Option<FileSystem> {
        use FileSystem::*;
        [
            Ntfs, Fat12, Fat16, Fat32, ExFat, Ext2, Ext3, Ext4, Folder, Xfs, Btrfs, HfsPlus, Hfsx,
            Apfs,
        ]
        .get(code as usize)
        .copied()
    }

    /// FAT12/16/32 and exFAT keep local time with no zone (exFAT may record the offset).
    pub fn is_fat(self) -> bool {
        matches!(
            self,
            FileSystem::Fat12 | FileSystem::Fat16 | FileSystem::Fat32 | FileSystem::ExFat
        )
    }
}

/// The entries of one volume. Every column has one element per entry; `name_start` has one more.
#[derive(Debug, Clone, Default)]
pub struct Index {
    pub meta: VolumeMeta,
    /// The names, folded with the bits that give them back as written; `name_start` has their offsets.
    pub(crate) names: Names,
    pub(crate) name_start: Col<u32>,
    pub(crate) parent: Col<EntryId>,
    pub(crate) record: Col<u32>,
    pub(crate) sequence: Col<u16>,
    pub(crate) flags: Col<u32>,
    /// The low halves, and the high halves of the few sizes of 4 GiB or more (see [`crate::sparse`]).
    pub(crate) size: Sizes,
    /// Derived from the size where it can be (see [`crate::sparse`]).
    pub(crate) allocated: Allocated,
    /// The `$STANDARD_INFORMATION` times, each as offsets in as few bits as they need (see [`crate::timecol`]).
    pub(crate) created: Times,
    pub(crate) modified: Times,
    pub(crate) mft_changed: Times,
    pub(crate) accessed: Times,
    /// The entries with a reparse tag, and their tags.
    pub(crate) reparse_tag: Sparse<u32>,
    /// The DOS 8.3 aliases of the entries that have one besides their long name.
    pub(crate) aliases: crate::apart::Apart,
    /// Owners and permissions (ext); empty on file systems that keep none.
    pub(crate) posix: crate::posix::PosixColumn,
    /// Symbolic links' targets (ext).
    pub(crate) link_targets: crate::apart::Apart,
    /// On volumes whose files share data (Btrfs, XFS with reflink): the entries whose exclusive bytes are not
    /// what [`expected_exclusive`] expects, and those bytes (see [`Index::exclusive`]); `None` on volumes that do
    /// not tell.
    pub(crate) exclusive: Option<Sparse<u64>>,
    pub(crate) root: EntryId,
    /// Search aids stored with the index (read from a file, or made by [`Index::add_search_aids`]).
    pub(crate) aids: Option<SearchAids>,
    /// A hash of each MFT record's bytes as read (0: not read), by record number: a re-scan compares them to
    /// find the records that changed (see `uffs_mft::update`). Empty when the index was built without them.
    pub(crate) record_hashes: Col<u32>,
    /// The `$FILE_NAME` times and attribute ids of every entry, for timelines (a cold section); `None` in an
    /// index file written before uffs kept them.
    pub(crate) timeline: Option<crate::timeline::Timeline>,
    /// For an index mapped from a file: the checksums of the file's chunks, and which have been checked.
    pub(crate) check: Option<std::sync::Arc<crate::check::FileCheck>>,
    /// The format version of the file it was read from (0: built in memory).
    pub(crate) format: u32,
    /// In a view of a base index under a delta: the hidden folders whose path changed, which paths resolve
    /// through (see [`crate::graft`]). Never written to a file.
    pub(crate) grafts: Option<std::sync::Arc<crate::graft::Grafts>>,
}

impl Index {
    pub fn len(&self) -> usize {
        self.parent.len()
    }
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }
    pub fn root(&self) -> EntryId {
        self.root
    }

    /// The format version of the index file this was read from; `None` for an index built in memory. A daemon
    /// rebuilds an index read from an older format, which is read at a cost (see [`crate::file::VERSION`]).
    pub fn file_format(&self) -> Option<u32> {
        (self.format != 0).then_some(self.format)
    }

    /// The folders whose path a delta over this index changed, when this is a view of a base under a delta
    /// ([`crate::layer::view`]).
    pub fn grafts(&self) -> Option<&crate::graft::Grafts> {
        self.grafts.as_deref()
    }

    /// This index (sharing a mapped file's columns; an index built in memory is copied) with `grafts` in place
    /// of its own.
    pub fn with_grafts(&self, grafts: crate::graft::Grafts) -> Index {
        Index {
            grafts: (!grafts.is_empty()).then(|| std::sync::Arc::new(grafts)),
            ..self.clone()
        }
    }

    /// The search aids, when they were read from the file or made.
    pub fn search_aids(&self) -> Option<&SearchAids> {
        self.aids.as_ref()
    }

    /// Builds the search aids (about half a second per million entries), so they are stored when the index is
    /// written.
    pub fn add_search_aids(&mut self) {
        if self.aids.is_none() {
            self.aids = Some(SearchAids::build(self));
        }
    }

    /// Puts `aids` in place of this index's search aids (those of a file read before are dropped), when their
    /// sizes fit this index.
    pub fn set_search_aids(&mut self, aids: SearchAids) -> Result<(), &'static str> {
        aids.validate(self.len())?;
        self.aids = Some(aids);
        Ok(())
    }

    /// Whether this index was opened without checking its file's data ([`crate::file::open`]) and some of it is
    /// still unchecked: then what a query read must be checked ([`Index::verify_touched`]) before it is shown.
    pub fn needs_check(&self) -> bool {
        self.check.as_ref().is_some_and(|c| !c.all_good())
    }

    /// Checks the chunks of this index's file that this process has read so far (all of them where the process
    /// cannot tell which): before anything read from a file opened with [`crate::file::open`] is shown.
    pub fn verify_touched(&self) -> Result<(), crate::file::FileError> {
        match &self.check {
            Some(c) => c.verify_touched(),
            None => Ok(()),
        }
    }

    /// Reads what showing the entries `ids` reads (each column at each entry, the names up its path), so that
    /// [`Index::verify_touched`] then covers all of it. Each folder's way up is walked once.
    pub fn touch_rows(&self, ids: &[EntryId]) {
        let n = self.len();
        let mut walked = vec![0u64; n.div_ceil(64)];
        let mut sum = 0u64;
        for &id in ids.iter().filter(|&&id| (id as usize) < n) {
            let i = id as usize;
            sum = sum
                .wrapping_add(u64::from(self.record[i]))
                .wrapping_add(u64::from(self.sequence[i]))
                .wrapping_add(u64::from(self.flags[i]))
                .wrapping_add(self.size(id))
                .wrapping_add(self.allocated(id))
                .wrapping_add(self.created.at(id))
                .wrapping_add(self.modified.at(id))
                .wrapping_add(self.mft_changed.at(id))
                .wrapping_add(self.accessed.at(id))
                .wrapping_add(u64::from(self.reparse_tag(id)));
            let mut cur = id as usize;
            for _ in 0..=MAX_DEPTH {
                if walked[cur / 64] & (1 << (cur % 64)) != 0 {
                    break;
                }
                walked[cur / 64] |= 1 << (cur % 64);
                let name = self.name_bytes(cur as EntryId);
                let ends = name.first().zip(name.last());
                sum = sum.wrapping_add(ends.map_or(0, |(&a, &b)| u64::from(a ^ b)));
                if cur == self.root as usize {
                    break;
                }
                cur = self.parent(cur as EntryId) as usize;
            }
        }
        std::hint::black_box(sum);
    }

    /// Whether the index keeps the `$FILE_NAME` times and attribute ids of its entries ([`Index::timeline`]).
    pub fn has_timeline(&self) -> bool {
        self.timeline.is_some()
    }

    /// The `$FILE_NAME` times and attribute ids of entry `id`; `None` when the index does not keep them (an older
    /// file), for an entry made by uffs, or (in a file not checked yet) on damaged bytes.
    pub fn timeline(&self, id: EntryId) -> Option<crate::timeline::EntryTimeline> {
        let i = id as usize;
        if i >= self.len() {
            return None;
        }
        self.timeline.as_ref()?.get(i, self.si_times(i))
    }

    /// The timelines of entries `ids`, decoded in one pass (for exports, which read every entry).
    pub fn timelines(&self, ids: std::ops::Range<EntryId>) -> crate::timeline::Timelines<'_> {
        crate::timeline::Timelines::new(self, ids.start as usize..ids.end as usize)
    }

    /// Reads the timeline records of entries `ids`, so that [`Index::verify_touched`] then covers them: before
    /// showing `$FILE_NAME` times read from a file opened without checking its data.
    pub fn touch_timeline(&self, ids: &[EntryId]) {
        let sum = ids
            .iter()
            .filter_map(|&id| self.timeline(id))
            .fold(0u64, |s, t| s.wrapping_add(t.fn_times[0]));
        std::hint::black_box(sum);
    }

    /// The four time columns: created, modified, MFT changed, accessed.
    pub(crate) fn times(&self) -> [&Times; 4] {
        [
            &self.created,
            &self.modified,
            &self.mft_changed,
            &self.accessed,
        ]
    }

    /// The `$STANDARD_INFORMATION` times of entry `i` (which must be in range): created, modified, MFT changed,
    /// accessed.
    pub(crate) fn si_times(&self, i: usize) -> [u64; 4] {
        let id = i as EntryId;
        [
            self.created.at(id),
            self.modified.at(id),
            self.mft_changed.at(id),
            self.accessed.at(id),
        ]
    }

    /// The hash of each record's bytes when it was read (0: not read), by record number; empty if not kept.
    pub fn record_hashes(&self) -> &[u32] {
        &self.record_hashes
    }

    pub fn set_record_hashes(&mut self, hashes: Vec<u32>) {
        self.record_hashes = hashes.into();
    }

    /// Columns as slices, one element per entry (`name_starts` has one more), for scans over every entry.
    /// The names folded to lower case, end to end (name `i` is at `name_starts()[i]..name_starts()[i + 1]`).
    pub fn folded_arena(&self) -> &[u8] {
        self.names.folded()
    }
    pub fn name_starts(&self) -> &[u32] {
        &self.name_start
    }
    pub fn flags_column(&self) -> &[u32] {
        &self.flags
    }
    /// The time columns (read by entry id: `get` is a sort [`crate::aids::Key`]).
    pub fn created_times(&self) -> &Times {
        &self.created
    }
    pub fn modified_times(&self) -> &Times {
        &self.modified
    }
    pub fn accessed_times(&self) -> &Times {
        &self.accessed
    }

    /// Where entry `id`'s name lies in the arena. (Offsets out of order or out of range, in a file not checked
    /// yet, give an empty range rather than a fault.)
    fn name_range(&self, id: EntryId) -> (usize, usize) {
        let i = id as usize;
        match (self.name_start.get(i), self.name_start.get(i + 1)) {
            (Some(&s), Some(&e)) if s <= e && e as usize <= self.names.len() => {
                (s as usize, e as usize)
            }
            _ => (0, 0),
        }
    }

    /// The length of the entry's name in bytes (folded or not).
    pub fn name_len(&self, id: EntryId) -> usize {
        let (s, e) = self.name_range(id);
        e - s
    }

    /// The entry's name folded to lower case (see [`crate::paths::fold_into`]).
    pub fn folded_name(&self, id: EntryId) -> &[u8] {
        let (s, e) = self.name_range(id);
        &self.names.folded()[s..e]
    }

    /// The entry's name as written, as bytes of UTF-8 (a stream's name is `file:stream`; the root's is empty):
    /// borrowed when it has no upper case.
    pub fn name_bytes(&self, id: EntryId) -> Cow<'_, [u8]> {
        let (s, e) = self.name_range(id);
        self.names.name(id, s, e)
    }

    /// Appends the entry's name as written to `out`.
    pub fn push_name(&self, id: EntryId, out: &mut Vec<u8>) {
        let (s, e) = self.name_range(id);
        self.names.name_into(id, s, e, out);
    }

    pub fn name(&self, id: EntryId) -> Cow<'_, str> {
        // Names are built from decoded UTF-16, so they are always valid UTF-8 (a file not checked yet may say
        // otherwise).
        match self.name_bytes(id) {
            Cow::Borrowed(b) => Cow::Borrowed(std::str::from_utf8(b).unwrap_or("\u{FFFD}")),
            Cow::Owned(v) => {
                Cow::Owned(String::from_utf8(v).unwrap_or_else(|_| "\u{FFFD}".to_string()))
            }
        }
    }

    /// The entry's parent folder (the root is its own parent). (A parent id out of range, in a file not checked
    /// yet, gives the root.)
    pub fn parent(&self, id: EntryId) -> EntryId {
        match self.parent[id as usize] {
            p if (p as usize) < self.parent.len() => p,
            _ => self.root,
        }
    }
    pub fn record(&self, id: EntryId) -> u32 {
        self.record[id as usize]
    }
    pub fn sequence(&self, id: EntryId) -> u16 {
        self.sequence[id as usize]
    }
    pub fn flags(&self, id: EntryId) -> u32 {
        self.flags[id as usize]
    }
    pub fn size(&self, id: EntryId) -> u64 {
        self.size.get(id).unwrap_or(0)
    }
    /// The size of `id`, `None` past the last entry: a key for the sorted size order.
    pub fn size_key(&self, id: EntryId) -> Option<u64> {
        self.size.get(id)
    }
    pub fn allocated(&self, id: EntryId) -> u64 {
        self.allocated.get(id, self.size(id))
    }
    pub fn created(&self, id: EntryId) -> u64 {
        self.created.at(id)
    }
    pub fn modified(&self, id: EntryId) -> u64 {
        self.modified.at(id)
    }
    pub fn mft_changed(&self, id: EntryId) -> u64 {
        self.mft_changed.at(id)
    }
    pub fn accessed(&self, id: EntryId) -> u64 {
        self.accessed.at(id)
    }
    pub fn reparse_tag(&self, id: EntryId) -> u32 {
        self.reparse_tag.get(id).unwrap_or(0)
    }
    /// The 8.3 alias of entry `id` (its DOS name beside a long one), when it has one.
    pub fn alias(&self, id: EntryId) -> Option<&[u8]> {
        self.aliases.of(id)
    }
    /// Every entry's 8.3 alias.
    pub fn aliases(&self) -> &crate::apart::Apart {
        &self.aliases
    }

    /// Entry `id`'s owner and permissions, on a file system that keeps them (ext).
    pub fn posix(&self, id: EntryId) -> Option<crate::posix::Posix> {
        self.posix.get(id)
    }
    /// Whether any entry has an owner and permissions.
    pub fn has_posix(&self) -> bool {
        !self.posix.is_empty()
    }
    /// A symbolic link's target (ext), as UTF-8 (bytes that are not were replaced).
    pub fn link_target(&self, id: EntryId) -> Option<&[u8]> {
        self.link_targets.of(id)
    }

    /// The bytes of entry `id`'s data that no other file or snapshot also holds, as `btrfs filesystem du`'s
    /// "Exclusive" counts them, on a volume whose files can share data (Btrfs, XFS with reflink); `None` on
    /// other volumes. Stored as the entries where it is not what it is expected to be (the allocated size; a
    /// compressed file's size in whole 4 KiB sectors), so a volume that shares little stores little.
    pub fn exclusive(&self, id: EntryId) -> Option<u64> {
        let apart = self.exclusive.as_ref()?;
        Some(apart.get(id).unwrap_or_else(|| {
            expected_exclusive(self.flags(id), self.size(id), self.allocated(id))
        }))
    }
    /// Whether the volume tells each entry's exclusive bytes ([`Index::exclusive`]).
    pub fn has_exclusive(&self) -> bool {
        self.exclusive.is_some()
    }

    pub fn kind(&self, id: EntryId) -> EntryKind {
        let f = self.flags(id);
        if f & flags::STREAM != 0 {
            EntryKind::Stream
        } else if f & flags::DIRECTORY != 0 {
            EntryKind::Directory
        } else {
            self.posix(id).map_or(EntryKind::File, |p| p.kind())
        }
    }
    pub fn is_deleted(&self, id: EntryId) -> bool {
        self.flags(id) & flags::DELETED != 0
    }

    /// Whether the entry's name comes from index slack ([`flags::FROM_INDEX_SLACK`]).
    pub fn is_from_index_slack(&self, id: EntryId) -> bool {
        self.flags(id) & flags::FROM_INDEX_SLACK != 0
    }

    /// Record number of the parent directory as the volume stores it (the synthetic `$Orphan` has none).
    pub fn parent_record(&self, id: EntryId) -> Option<u32> {
        let p = self.parent(id);
        (self.flags(p) & flags::SYNTHETIC == 0).then(|| self.record(p))
    }

    /// Appends the full path of `id` to `out`: `/` separated from the root, which is `/` itself. In a view with
    /// grafts, the walk up stops at the first grafted folder, whose path now is written instead of the base's.
    pub fn path_into(&self, id: EntryId, out: &mut String) {
        let mut chain = [0 as EntryId; 64];
        let mut overflow = Vec::new();
        let mut n = 0;
        let mut cur = id;
        let mut graft = None;
        // Parents are acyclic after the build, and the root is its own parent. (The walk is bounded all the same:
        // a file not checked yet may hold a cycle.)
        while cur != self.root && n <= MAX_DEPTH {
            if let Some(names) = self.grafts().and_then(|g| g.get(cur)) {
                graft = Some(names);
                break;
            }
            if n < chain.len() {
                chain[n] = cur;
            } else {
                overflow.push(cur);
            }
            n += 1;
            cur = self.parent(cur);
        }
        if n == 0 && graft.is_none_or(|g| g.is_empty()) {
            out.push('/');
            return;
        }
        // SAFETY (of `as_mut_vec`): only whole names are appended, and each is checked to be UTF-8 below.
        let buf = unsafe { out.as_mut_vec() };
        let push = |buf: &mut Vec<u8>, name: &mut dyn FnMut(&mut Vec<u8>)| {
            buf.push(b'/');
            let at = buf.len();
            name(buf);
            if std::str::from_utf8(&buf[at..]).is_err() {
                buf.truncate(at);
                buf.extend_from_slice("\u{FFFD}".as_bytes());
            }
        };
        for g in graft.unwrap_or_default() {
            push(buf, &mut |b| b.extend_from_slice(g));
        }
        for &e in overflow
            .iter()
            .rev()
            .chain(chain[..n.min(chain.len())].iter().rev())
        {
            push(buf, &mut |b| self.push_name(e, b));
        }
    }

    pub fn path(&self, id: EntryId) -> String {
        let mut s = String::new();
        self.path_into(id, &mut s);
        s
    }

    /// Depth below the root (the root is 0).
    pub fn depth(&self, id: EntryId) -> usize {
        let mut d = 0;
        let mut cur = id;
        while cur != self.root && d <= MAX_DEPTH {
            d += 1;
            cur = self.parent(cur);
        }
        d
    }
}

/// An index of the names `raw` (entry `i`'s name is `raw[starts[i]..starts[i + 1]]`), every entry under entry 0,
/// with `sizes` and `flags`, all times zero, and its search aids: for unit tests of what reads an index.
#[cfg(test)]
pub(crate) fn test_index(raw: &[u8], starts: &[u32], sizes: &[u64], flags: Vec<u32>) -> Index {
    let n = flags.len();
    let mut idx = Index {
        names: crate::names::Names::from_raw(raw, starts),
        name_start: starts.to_vec().into(),
        parent: vec![0; n].into(),
        record: (0..n as u32).collect::<Vec<_>>().into(),
        sequence: vec![1; n].into(),
        flags: flags.into(),
        allocated: crate::sparse::Allocated::from_values(sizes, sizes),
        size: crate::sparse::Sizes::from_values(sizes),
        ..Default::default()
    };
    for col in [
        &mut idx.created,
        &mut idx.modified,
        &mut idx.mft_changed,
        &mut idx.accessed,
    ] {
        *col = crate::timecol::Times::from_values(&vec![0; n]);
    }
    idx.add_search_aids();
    idx
}
