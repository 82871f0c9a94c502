//! The file-system interface: what every file system that uffs reads raw implements, and all the source layer
//! (`uffs-source`) knows of it. A [`Driver`] recognises a volume from its first bytes and opens it; the opened
//! [`Reader`] scans it into neutral [`Entry`]s, tells its space, serial and `uffs info` lines. Data
//! is located through the [`Run`](crate::Run)s each entry keeps, and a re-scan for the daemon is a scan compared
//! with the index, so neither needs a method of its own.
//!
//! Adding a file system is a crate that implements these two traits and one line in `uffs-source`'s list
//! (`FILE_SYSTEMS`); docs/architecture.md ("Adding a file system") says what else it must bring.

use std::fmt;

use crate::{Entry, ReadAt, Scan, Space};

/// Which file system a volume holds: the index's own names and header codes (`uffs_index::FileSystem`).
pub use uffs_index::FileSystem;

/// The DOS code pages FAT's 8.3 names can be read in (`--fat-codepage`): the names' bytes are in the OEM code page
/// of the system that wrote them, which the volume does not record. 437 (DOS, US Windows, the Linux kernel's
/// default), 850 (Western Europe; mtools' default), 852 (Central Europe), 866 (Cyrillic).
pub const CODE_PAGES: [u16; 4] = [437, 850, 852, 866];

/// What a scan keeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanOptions {
    /// Deleted entries too, as the file system keeps them (FAT `0xE5`, exFAT's in-use bit, ext's slack).
    pub deleted: bool,
    /// The DOS code page FAT's 8.3 names are read in (one of [`CODE_PAGES`]; 0 is 437).
    pub code_page: u16,
}

/// A volume that cannot be read at all (a header that does not add up, a table past the end …); damage inside
/// a readable volume is a warning in [`Scan::warnings`] instead.
#[derive(Debug)]
pub struct Error {
    pub message: String,
}

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The bytes of a volume's start that every [`Driver::probe`] may look at: enough for Btrfs's superblock (at
/// 64 KiB; its whole 4 KiB for [`Driver::volume_len`]), and so for ext's (at byte 1,024) and any boot sector.
pub const PROBE_LEN: usize = 0x11000;

/// How the warning of an image shorter than its volume starts: the source layer says it once, where the volume
/// is opened, so a scan's own such warning is dropped.
pub const SHORT_IMAGE: &str = "the image holds ";

/// How a warning about a part of a volume that could not be read at all starts (a walk's folder it may not
/// list): the build counts these, and an index with any is partial (exit 3).
pub const UNREADABLE: &str = "cannot read folder ";

/// One family of file systems uffs reads raw (FAT12/16/32 and exFAT; ext2/3/4): how a volume of it is
/// recognised and opened. The source layer asks each registered driver in turn.
pub trait Driver: Sync {
    /// The family's names, for messages that list what uffs reads: `FAT12/16/32, exFAT`.
    fn names(&self) -> &'static str;

    /// The file system `head` (a volume's first bytes, up to [`PROBE_LEN`]) starts, when it is one of this
    /// family's; `None` for anything else. Cheap and never wrong about another family's volume: the source layer
    /// asks every driver, NTFS's first.
    fn probe(&self, head: &[u8]) -> Option<FileSystem>;

    /// The volume's length in bytes as its own header gives it: for a device that does not tell its size, and to
    /// say that an image was cut short.
    fn volume_len(&self, head: &[u8]) -> Option<u64>;

    /// Opens the volume whose first byte is offset 0 of `device`.
    fn open(&self, device: Box<dyn ReadAt>) -> Result<Box<dyn Reader>>;
}

/// An opened volume of a file system read through its own tables.
pub trait Reader: Send + Sync {
    /// Which file system it is (`FAT32`, `ext4` …).
    fn filesystem(&self) -> FileSystem;

    /// The volume's serial number (or UUID folded to 64 bits).
    fn serial(&self) -> u64;

    /// The root folder's id (2 on FAT, exFAT and ext, as The Sleuth Kit numbers them).
    fn root(&self) -> u64;

    /// What `uffs info` shows of it: geometry, label, serial, space, features; one (name, value) pair a line.
    fn facts(&self) -> Vec<(String, String)>;

    /// The volume's space as its own allocation table gives it (what `du /` must add up to); `None` when that
    /// table cannot be read.
    fn space(&self) -> Option<Space>;

    /// Every entry of the volume (deleted ones with `opts.deleted`), read from its own tables.
    fn scan(&self, opts: &ScanOptions) -> Result<Scan>;

    /// The entries [`Reader::scan`] makes, handed to `sink` a batch at a time in ascending id order (an id's names
    /// together, in their order), so that an index build never holds them all; returns the warnings. A reader
    /// that makes its entries in id order streams them, one that does not keeps them in a
    /// [`Spool`](crate::Spool) and tells the sink how many there are before the first batch; the default scans
    /// whole and sorts.
    fn scan_sorted(&self, opts: &ScanOptions, sink: &mut dyn Sink) -> Result<Vec<String>> {
        let scan = self.scan(opts)?;
        sink.expect(scan.entries.len() as u64);
        hand_over(scan.entries, sink);
        Ok(scan.warnings)
    }

    /// About how many entries a scan makes, to size an index up front; `None` when the volume does not say.
    fn expected_entries(&self) -> Option<u64> {
        None
    }

    /// The parts of the volume it can read alone (Btrfs's subvolumes and snapshots), oldest first: what
    /// `@snapN` opens, the snapshots among them what `--snapshots` adds as volumes of their own.
    fn states(&self) -> Vec<State> {
        Vec::new()
    }

    /// The volumes it holds when it is a container of several (an APFS container's), by name: a scan lists
    /// each as a folder of the root, `SOURCE@N` reads the Nth (from 1) alone through [`Reader::volume`], as a
    /// disk's partitions are picked. Empty for a volume.
    fn volumes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Volume `n` (from 1) of [`Reader::volumes`] alone, its root as the root.
    fn volume(&self, n: u32) -> Result<Box<dyn Reader>> {
        Err(Error::new(format!(
            "a {} volume holds no volumes of its own: it has no volume {n}",
            self.filesystem().name()
        )))
    }

    /// A reader of state `id` (of [`Reader::states`]) alone, its root as the root, as a mount of it shows it;
    /// made from this one's tables, not read again (a volume of hundreds of snapshots opens each of them).
    fn state(&self, id: u64) -> Result<Box<dyn Reader>> {
        Err(Error::new(format!(
            "{} keeps no snapshots (snap{id})",
            self.filesystem().name()
        )))
    }
}

/// A part of a volume it can read alone: a subvolume, or a snapshot (an earlier state of one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// What `@snapN` names it by: Btrfs's subvolume id.
    pub id: u64,
    /// Where it sits on the volume (`snaps/2026-12-01`), as a mount's root names it (`/snaps/2026-12-01`).
    pub name: String,
    /// When it was made (FILETIME; 0 unknown).
    pub created: u64,
    pub read_only: bool,
    /// A snapshot of another subvolume.
    pub snapshot: bool,
}

/// Where [`Reader::scan_sorted`] hands its entries: any `FnMut(Vec<Entry>)`, or an index build that also wants
/// to know how many are coming, to size its columns once.
pub trait Sink {
    /// How many entries the scan will hand over, when it knows before the first batch.
    fn expect(&mut self, _entries: u64) {}

    /// The next batch, in id order.
    fn take(&mut self, batch: Vec<Entry>);
}

impl<F: FnMut(Vec<Entry>)> Sink for F {
    fn take(&mut self, batch: Vec<Entry>) {
        self(batch)
    }
}

/// Entries a [`Reader::scan_sorted`] batch holds: the index builder's record batch of all of a volume's entries
/// would cost some 200 bytes an entry at the build's peak.
pub const BATCH_ENTRIES: usize = 4096;

/// Hands a whole scan's `entries` to `sink` as [`Reader::scan_sorted`] does: sorted by id, [`BATCH_ENTRIES`] at a
/// time, each entry's name and runs going with it.
pub fn hand_over(mut entries: Vec<Entry>, sink: &mut dyn Sink) {
    crate::sort_by_id(&mut entries);
    let mut entries = entries.into_iter();
    loop {
        let batch: Vec<Entry> = entries.by_ref().take(BATCH_ENTRIES).collect();
        if batch.is_empty() {
            return;
        }
        sink.take(batch);
    }
}
