//! The file-system-neutral form of a volume's files: what every file system reader (FAT, exFAT, ext; NTFS has
//! its own faster path into the index) yields and everything above it consumes, without asking which file
//! system an entry came from.
//!
//! * [`Entry`]: one name of one file or folder: its id, its parent's id, name, kind, sizes, times, attributes,
//!   whether it is deleted, and the [`Run`]s that hold its data.
//! * [`Scan`]: every entry of a volume, the warnings met on the way, and the volume's [`Space`].
//! * [`ReadAt`]: positional reads of a volume's bytes, the one thing a reader needs from the image layer (its
//!   trait, re-exported).
//! * [`driver`]: the file-system interface: a [`Driver`] recognises and opens a volume, its [`Reader`] scans it.
//! * [`packed`]: decoding the stretches of a file's data the file system keeps compressed ([`Packed`]).
//! * [`spool`]: a compact store of entries a scan makes out of id order, handed over in id order.
//! * [`time`]: FILETIME helpers the readers share.

pub mod driver;
pub mod packed;
pub mod spool;
pub mod time;

pub use driver::{
    hand_over, Driver, Error, FileSystem, Reader, Result, ScanOptions, Sink, State, BATCH_ENTRIES,
    CODE_PAGES, PROBE_LEN, SHORT_IMAGE, UNREADABLE,
};
pub use spool::Spool;

/// Positional reads of a volume's bytes (offset 0 is the volume's first byte): the image layer's, which its
/// devices, `[u8]` and `Vec<u8>` serve.
pub use uffs_image::ReadAt;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    File,
    Folder,
    Symlink,
    /// A device, FIFO or socket (ext).
    Special,
}

impl Kind {
    /// The kind a folder entry's file type byte names, as ext and XFS keep it (1 file, 2 folder, 3 and 4
    /// devices, 5 FIFO, 6 socket, 7 symlink); a file when there is none (0) or it is unknown.
    pub fn of_file_type(file_type: u8) -> Kind {
        match file_type {
            2 => Kind::Folder,
            7 => Kind::Symlink,
            3..=6 => Kind::Special,
            _ => Kind::File,
        }
    }
}

/// A UUID as `blkid` prints it (8-4-4-4-12 hex digits, bytes in the order stored).
pub fn uuid_text(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Times as FILETIME (100 ns units since 1601-01-01); 0 when the file system keeps no such time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Times {
    pub created: u64,
    pub modified: u64,
    /// Metadata changed (ext's ctime); 0 on FAT and exFAT.
    pub changed: u64,
    pub accessed: u64,
}

/// `len` bytes of an entry's data at byte `offset` of the volume, in file order; a hole (a sparse stretch, or
/// one allocated but never written, which reads as zeros) has the offset [`Run::HOLE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub offset: u64,
    pub len: u64,
}

impl Run {
    /// The offset of a hole.
    pub const HOLE: u64 = u64::MAX;

    /// `len` bytes of zeros that the volume does not hold.
    pub fn hole(len: u64) -> Run {
        Run {
            offset: Run::HOLE,
            len,
        }
    }

    pub fn is_hole(&self) -> bool {
        self.offset == Run::HOLE
    }
}

/// Windows file attribute bits, which FAT and exFAT keep as they are; other file systems map onto them.
pub mod attr {
    pub const READ_ONLY: u32 = 0x1;
    pub const HIDDEN: u32 = 0x2;
    pub const SYSTEM: u32 = 0x4;
    pub const DIRECTORY: u32 = 0x10;
    pub const ARCHIVE: u32 = 0x20;
    pub const SPARSE: u32 = 0x200;
    /// A link (NTFS's reparse point): ext's symlinks carry it.
    pub const REPARSE_POINT: u32 = 0x400;
    pub const COMPRESSED: u32 = 0x800;
    pub const ENCRYPTED: u32 = 0x4000;
}

/// A file's owner and permissions as a POSIX file system keeps them (ext).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Posix {
    /// `st_mode`: the file type in its top four bits, then set-user-id, set-group-id, sticky and the nine
    /// permission bits.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

/// One name of one file or folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// The file system's own address for it, unique on the volume and stable while the entry stays where it is:
    /// The Sleuth Kit's inode number for FAT and exFAT (from the directory entry's position), the inode number
    /// for ext. At most 48 bits.
    pub id: u64,
    /// The folder it is in (its id); the root is its own parent.
    pub parent: u64,
    pub name: String,
    /// FAT's 8.3 name, when the entry also has a long name that differs from it.
    pub short_name: Option<String>,
    pub kind: Kind,
    /// Logical size in bytes.
    pub size: u64,
    /// Bytes of the clusters or blocks it holds on the volume.
    pub allocated: u64,
    pub times: Times,
    /// The times are local time of an unknown zone (FAT; exFAT without a valid UTC offset), read as if UTC.
    pub local_times: bool,
    /// [`attr`] bits.
    pub attributes: u32,
    /// Deleted: kept by the file system the way it keeps deleted names (FAT `0xE5`, exFAT's in-use bit clear,
    /// ext's directory slack); its data runs are what the entry still points at, which may since hold other data.
    pub deleted: bool,
    /// A file system's metadata shown as an entry (`$FAT1`, `$ALLOC_BITMAP` …), as NTFS shows `$MFT`.
    pub metadata: bool,
    /// A deleted name only a folder's slack keeps whose file cannot be known (ext: its entry's inode is 0, or
    /// in use again by another file): listed by name and kind alone, with no size, times, runs or owner, and
    /// never as its inode's entry (the index flags it `from_index_slack`, as NTFS's names from `$I30` slack).
    /// `id` is the inode the entry names (0: none).
    pub from_index_slack: bool,
    /// Where its data is, in file order; their lengths add up to at least `size` (the last may run past it).
    pub runs: Vec<Run>,
    /// Data kept in the file system's own structures rather than in runs (ext's inline data, a fast symlink's
    /// target): the whole of it, `size` bytes.
    pub inline: Option<Vec<u8>>,
    /// Owner and permissions, on file systems that keep them.
    pub posix: Option<Posix>,
    /// A symbolic link's target, as the link holds it (bytes, not necessarily UTF-8).
    pub link_target: Option<Vec<u8>>,
    /// The stretches of its data the file system keeps compressed (Btrfs, HFS+), in file order; each is a hole of
    /// its length in `runs`, so that what reads `runs` alone sees the file's length (and zeros).
    pub packed: Vec<Packed>,
    /// Named data beside its main data (HFS+'s and APFS's resource fork, `rsrc`), listed and read as the
    /// entry's named streams are on NTFS (`FILE:rsrc`).
    pub forks: Vec<Fork>,
    /// On file systems whose files can share data (Btrfs reflinks and snapshots, XFS reflinks): the bytes of its data that
    /// no other file and no snapshot also holds, as `btrfs filesystem du` counts its "Exclusive" column (the
    /// lengths of the file's extents, not shared, inline data not counted). `None` where a file system does
    /// not tell; every entry of a volume that tells has it (0 for folders).
    pub exclusive: Option<u64>,
}

/// A named piece of a file's data beside its main data: a stream of its own, with its own runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fork {
    /// What it is read by (`rsrc`).
    pub name: String,
    /// Logical size in bytes.
    pub size: u64,
    /// Bytes of the blocks it holds on the volume (not counted in the entry's own `allocated`).
    pub allocated: u64,
    /// Where its bytes are, in order, as [`Entry::runs`].
    pub runs: Vec<Run>,
    /// Its bytes when the file system keeps them in its own structures (an APFS attribute held in its record),
    /// as [`Entry::inline`].
    pub inline: Option<Vec<u8>>,
}

/// How a file system compressed a stretch of a file's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// A zlib stream (RFC 1950).
    Zlib,
    /// LZO1X as Btrfs frames it: the total length (u32 LE), then each segment's length (u32 LE) and bytes, a
    /// segment's header never crossing a sector (4 KiB) boundary.
    BtrfsLzo,
    /// Zstandard frames.
    Zstd,
    /// macOS's decmpfs zlib (HFS+, APFS): a zlib stream, or, when the first byte's low four bits are all set
    /// (which no zlib header has), the bytes after it stored as they are.
    AppleZlib,
    /// macOS's decmpfs LZVN: an LZVN stream, or, when the first byte is 0x06 (the end-of-stream opcode), the
    /// bytes after it stored as they are.
    Lzvn,
    /// macOS's decmpfs LZFSE: LZFSE frames (`bvx2`, `bvx1`, `bvxn`, `bvx-` blocks to `bvx$`), or, when the
    /// first byte is 0xFF, the bytes after it stored as they are.
    Lzfse,
}

/// A compressed stretch of a file's data: `len` bytes of the file from `file_offset` are the bytes from `skip`
/// of what `disk` (the compressed bytes on the volume) decodes to (`decoded_len` bytes in all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packed {
    pub file_offset: u64,
    pub len: u64,
    pub disk: Run,
    pub codec: Codec,
    pub decoded_len: u64,
    pub skip: u64,
}

/// A volume's space as its own allocation table tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Space {
    pub cluster_size: u64,
    pub clusters_total: u64,
    pub clusters_in_use: u64,
    /// Bytes in use: the clusters in use and the regions outside the cluster heap the file system reserves
    /// (boot sectors, FATs, FAT12/16's root folder), which the metadata entries account for.
    pub bytes_in_use: u64,
    pub bytes_total: u64,
}

/// Every entry of a volume, read from its own tables.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// The root folder's id. Entries whose parent is missing or loops belong under it (the index keeps them
    /// under `$Orphan`).
    pub root: u64,
    pub entries: Vec<Entry>,
    /// What was skipped and why, one line each (a chain that loops, a cluster past the end …).
    pub warnings: Vec<String>,
    pub space: Space,
}

/// Sorts `entries` by id (an id's names, ext's hard links, stay together in their order) in place, moving each
/// entry once: the entries are large, a sort that moves them as it goes cost a tenth of `uffs index` on a
/// 100,000-entry exFAT volume, and one into a second vector held them twice at a build's peak.
pub fn sort_by_id(entries: &mut [Entry]) {
    if entries.is_sorted_by_key(|e| e.id) {
        return;
    }
    let mut keys: Vec<(u64, u32)> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id, i as u32))
        .collect();
    keys.sort_unstable();
    // `from[k]`: where the entry that belongs at `k` is now. Each cycle of that permutation is followed once.
    let mut from: Vec<u32> = keys.into_iter().map(|(_, i)| i).collect();
    for start in 0..from.len() {
        if from[start] as usize == start {
            continue;
        }
        let first = std::mem::take(&mut entries[start]);
        let mut k = start;
        loop {
            let f = from[k] as usize;
            // Placed: marks `k` done.
            from[k] = k as u32;
            if f == start {
                entries[k] = first;
                break;
            }
            entries[k] = std::mem::take(&mut entries[f]);
            k = f;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_sort_by_id_whole() {
        let e = |id: u64, name: &str| Entry {
            id,
            name: name.into(),
            ..Entry::default()
        };
        let mut v = vec![e(7, "g"), e(2, "root"), e(40, "x"), e(7, "h"), e(3, "c")];
        sort_by_id(&mut v);
        let got: Vec<(u64, &str)> = v.iter().map(|e| (e.id, e.name.as_str())).collect();
        assert_eq!(got, [(2, "root"), (3, "c"), (7, "g"), (7, "h"), (40, "x")]);
        // Longer permutations, several cycles, repeated ids: the same as a stable sort.
        let mut seed = 0x9e37_79b9_u64;
        for n in [1usize, 2, 17, 1000] {
            let mut v: Vec<Entry> = (0..n)
                .map(|i| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    e(seed >> 54, &i.to_string())
                })
                .collect();
            let mut want = v.clone();
            want.sort_by_key(|e| e.id);
            sort_by_id(&mut v);
            assert_eq!(v, want, "{n} entries");
        }
    }
}
