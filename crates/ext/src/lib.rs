//! ext2, ext3 and ext4, read from their own tables with no mount: every entry of a volume in the
//! file-system-neutral form ([`uffs_fs::Scan`]), with the runs that hold each file's data.
//!
//! The fast path is ext's own MFT: the inode tables, read in group order with large reads, skipping what the group
//! descriptors say was never used (`INODE_UNINIT`, `itable_unused`); then the folders' blocks for the names.
//!
//! * [`superblock`]: geometry, counts and features;
//! * [`group`]: the block group descriptors;
//! * [`inode`]: an inode's mode, owner, size, times and flags;
//! * [`map`]: extent trees and block maps, as runs with holes;
//! * [`dir`]: directory blocks, live names and deleted ones in slack;
//! * [`metadata`]: the volume's own structures as entries, so that `du /` adds up to the blocks in use;
//! * `scan`: the entries in inode order, streamed, from three passes (inode tables, folders, inode tables again);
//! * [`xattr`]: in-inode extended attributes, for inline data.
//!
//! Ids are inode numbers (the root folder is 2), so `icat` and `debugfs` take what uffs prints; a file with
//! several names (hard links) is one id with one entry per name.

pub mod dir;
pub mod group;
pub mod inode;
pub mod map;
pub mod metadata;
mod scan;
pub mod superblock;
pub mod xattr;

use uffs_fs::{attr, Kind, Run};
pub use uffs_fs::{Entry, Error, ReadAt, Result, Scan, ScanOptions, Space};

use group::Group;
use inode::{flags, Inode};
use superblock::{incompat, ro_compat, Superblock};

/// Whether a volume's first 2 KiB hold an ext2/3/4 superblock (its magic at byte 1,080).
pub fn probe(head: &[u8]) -> bool {
    head.len() >= superblock::MAGIC_AT + 2 && le16(head, superblock::MAGIC_AT) == 0xEF53
}

/// The bytes [`probe`] needs.
pub const PROBE_LEN: usize = 2048;

/// The volume's length in bytes as its superblock gives it (for a device that does not tell its own).
pub fn volume_len(head: &[u8]) -> Option<u64> {
    let sb = head.get(superblock::OFFSET as usize..superblock::OFFSET as usize + 1024)?;
    Superblock::parse(sb, u64::MAX).ok().map(|s| s.volume_len())
}

pub(crate) fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(crate) fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The root folder's inode.
pub const ROOT: u32 = 2;

/// Threads reading folders' blocks: more than cores, so that a cold disk serves several reads at once.
const READ_THREADS: usize = 8;

/// The inode tables are read this many bytes at a time.
const TABLE_READ: u64 = 4 << 20;

/// An opened ext2/3/4 volume.
pub struct Volume<R: ReadAt> {
    dev: R,
    sb: Superblock,
    groups: Vec<Group>,
}

use scan::Held;

/// Which times inodes of `inode_size` bytes keep, for `uffs info`: a 128-byte inode (ext2, ext3 of old) has no
/// creation time and keeps seconds; a larger one keeps nanoseconds and the creation time, unless its extra
/// fields stop short of it.
fn times_kept(inode_size: u16) -> &'static str {
    if inode_size > 128 {
        "created, modified, changed, accessed (to the nanosecond; created unknown where an inode's extra fields \
         stop short of it)"
    } else {
        "modified, changed, accessed (to the second); created unknown: 128-byte inodes keep none"
    }
}

impl<R: ReadAt> Volume<R> {
    /// Opens the volume whose superblock is at byte 1,024 of `dev`.
    pub fn open(dev: R) -> Result<Volume<R>> {
        let mut b = vec![0u8; 1024];
        dev.read_exact_at(&mut b, superblock::OFFSET)
            .map_err(|e| Error::new(format!("superblock: {e}")))?;
        let sb = Superblock::parse(&b, dev.len())?;
        let groups = group::read_all(&dev, &sb)?;
        Ok(Volume { dev, sb, groups })
    }

    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    /// `ext2`, `ext3` or `ext4`.
    pub fn flavor(&self) -> &'static str {
        self.sb.flavor()
    }

    /// A serial number from the UUID (its first 8 bytes, little-endian).
    pub fn serial(&self) -> u64 {
        u64::from_le_bytes(self.sb.uuid[..8].try_into().expect("8 bytes"))
    }

    /// The volume's space from the superblock's counts.
    pub fn space(&self) -> Space {
        let bs = self.sb.block_size;
        let used = self.sb.blocks_count.saturating_sub(self.sb.free_blocks);
        Space {
            cluster_size: bs,
            clusters_total: self.sb.blocks_count,
            clusters_in_use: used,
            bytes_in_use: used * bs,
            bytes_total: self.sb.blocks_count * bs,
        }
    }

    /// What `uffs info` shows: the flavour and features, block and inode sizes, counts, label, UUID, space.
    pub fn facts(&self) -> Vec<(String, String)> {
        let sb = &self.sb;
        let space = self.space();
        let mut f = vec![
            ("file system".to_string(), sb.flavor().to_string()),
            ("features".into(), sb.feature_names().join(" ")),
            ("block size".into(), format!("{} bytes", sb.block_size)),
            ("inode size".into(), format!("{} bytes", sb.inode_size)),
            (
                "groups".into(),
                format!(
                    "{} of {} blocks and {} inodes",
                    self.groups.len(),
                    sb.blocks_per_group,
                    sb.inodes_per_group
                ),
            ),
            (
                "inodes".into(),
                format!("{} ({} free)", sb.inodes_count, sb.free_inodes),
            ),
            ("label".into(), sb.label.clone()),
            ("uuid".into(), sb.uuid_text()),
            (
                "used".into(),
                format!(
                    "{} bytes in {} blocks of {}; free {} bytes (per the superblock)",
                    space.bytes_in_use,
                    space.clusters_in_use,
                    space.clusters_total,
                    space.bytes_total - space.bytes_in_use
                ),
            ),
            (
                "block bitmaps".into(),
                self.bitmap_note(space.clusters_in_use),
            ),
        ];
        f.push(("times".into(), times_kept(sb.inode_size).into()));
        if !sb.last_mounted.is_empty() {
            f.push(("last mounted on".into(), sb.last_mounted.clone()));
        }
        if sb.has_incompat(incompat::RECOVER) {
            f.push((
                "journal".into(),
                "needs recovery: changes in the journal are not yet in the tables (read as they are)".into(),
            ));
        }
        f
    }

    /// The blocks the groups' block bitmaps mark in use, with any before the first group (a group whose bitmap was never written, `BLOCK_UNINIT`,
    /// counts as its descriptor says), and the groups whose bitmap could not be read.
    pub fn bitmap_blocks_in_use(&self) -> (u64, Vec<u64>) {
        let sb = &self.sb;
        let per_group = u64::from(sb.blocks_per_group);
        let mut buf = vec![0u8; sb.block_size as usize];
        // Blocks before the first group (block 0 of a volume of 1 KiB blocks, the boot block) are in use.
        let (mut used, mut unread) = (u64::from(sb.first_data_block), Vec::new());
        for (g, d) in self.groups.iter().enumerate() {
            let first = group::first_block(sb, g as u64);
            let blocks = sb.blocks_count.saturating_sub(first).min(per_group);
            if d.flags & group::BLOCK_UNINIT != 0 {
                used += blocks.saturating_sub(u64::from(d.free_blocks));
                continue;
            }
            let at = d.block_bitmap.saturating_mul(sb.block_size);
            if d.block_bitmap >= sb.blocks_count || self.dev.read_exact_at(&mut buf, at).is_err() {
                unread.push(g as u64);
                continue;
            }
            let whole = (blocks / 8) as usize;
            used += buf[..whole]
                .iter()
                .map(|b| u64::from(b.count_ones()))
                .sum::<u64>();
            if blocks % 8 != 0 {
                used += u64::from((buf[whole] & ((1u8 << (blocks % 8)) - 1)).count_ones());
            }
        }
        (used, unread)
    }

    /// `uffs info`'s line on what the block bitmaps mark in use, beside the superblock's `superblock_used`.
    fn bitmap_note(&self, superblock_used: u64) -> String {
        let (used, unread) = self.bitmap_blocks_in_use();
        let bs = self.sb.block_size;
        let mut s = format!("{} bytes in {used} blocks in use", used * bs);
        if used == superblock_used {
            s.push_str(", as the superblock says");
        } else {
            s.push_str(&format!(
                "; the superblock says {superblock_used} (its counts lag the bitmaps on a volume mounted \
                 or not cleanly unmounted)"
            ));
        }
        if !unread.is_empty() {
            s.push_str(&format!(
                "; the bitmaps of {} groups could not be read (first: group {})",
                unread.len(),
                unread[0]
            ));
        }
        s
    }

    /// Every entry: one per name of each file and folder in use (and, with `opts.deleted`, the deleted names
    /// left in directory slack), the root folder, and the inodes in use that no folder names.
    pub fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        let mut entries = Vec::new();
        let warnings = self.scan_sorted(opts, &mut |batch: Vec<Entry>| entries.extend(batch))?;
        Ok(Scan {
            root: u64::from(ROOT),
            entries,
            warnings,
            space: self.space(),
        })
    }

    /// About how many entries a scan makes: the inodes in use (a few more for hard links' extra names).
    pub fn expected_entries(&self) -> u64 {
        let used = u64::from(self.sb.inodes_count.saturating_sub(self.sb.free_inodes));
        used + used / 64 + 64
    }

    /// Whether an inode's `i_block` maps data (not a device's numbers or a fast symlink's target).
    fn has_data(&self, i: &Inode) -> bool {
        matches!(i.kind(), Kind::File | Kind::Folder | Kind::Symlink)
    }

    fn entry(
        &self,
        ino: u32,
        parent: u32,
        name: String,
        h: &Held,
        runs: Option<Vec<Run>>,
        deleted: bool,
    ) -> Entry {
        let i = &h.inode;
        let kind = i.kind();
        let inline = match (&h.inline, i.is_fast_symlink()) {
            (Some(d), _) => Some(d[..d.len().min(i.size as usize)].to_vec()),
            (None, true) => Some(i.block[..i.size as usize].to_vec()),
            _ => None,
        };
        let runs = runs.unwrap_or_default();
        let link_target = match kind {
            Kind::Symlink => inline.clone().or_else(|| self.slow_link_target(i, &runs)),
            _ => None,
        };
        Entry {
            id: u64::from(ino),
            parent: u64::from(parent),
            name,
            short_name: None,
            kind,
            size: if kind == Kind::Special { 0 } else { i.size },
            allocated: i.allocated(self.sb.block_size),
            times: i.times,
            local_times: false,
            attributes: attributes(i, &runs),
            deleted,
            metadata: false,
            from_index_slack: false,
            runs,
            inline,
            posix: Some(uffs_fs::Posix {
                mode: u32::from(i.mode),
                uid: i.uid,
                gid: i.gid,
            }),
            link_target,
            packed: Vec::new(),
            forks: Vec::new(),
            exclusive: None,
        }
    }

    /// The target of a symlink too long for `i_block`: the start of its one block.
    fn slow_link_target(&self, i: &Inode, runs: &[Run]) -> Option<Vec<u8>> {
        let first = runs.first().filter(|r| !r.is_hole())?;
        // A target is at most a path's length (4,096 bytes), in the link's first block.
        let len = i.size.min(first.len).min(4096) as usize;
        let mut b = vec![0u8; len];
        self.dev.read_exact_at(&mut b, first.offset).ok()?;
        Some(b)
    }

    /// One inode, read alone (a deleted name's).
    fn read_inode(&self, ino: u32) -> Option<Inode> {
        let sb = &self.sb;
        let idx = u64::from(ino.checked_sub(1)?);
        let grp = self
            .groups
            .get((idx / u64::from(sb.inodes_per_group)) as usize)?;
        let size = u64::from(sb.inode_size);
        let at = grp.inode_table * sb.block_size + (idx % u64::from(sb.inodes_per_group)) * size;
        let mut raw = vec![0u8; size as usize];
        self.dev.read_exact_at(&mut raw, at).ok()?;
        Some(Inode::parse(&raw, sb.has_ro_compat(ro_compat::HUGE_FILE)))
    }

    /// A folder's blocks: the bytes of `runs` within its first `size` bytes, holes left out (a hole holds no
    /// entries). What is allocated is what the runs hold, which lie inside the volume: never more than its size,
    /// whatever `size` a damaged inode gives.
    fn read_folder(&self, runs: &[Run], size: u64) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut pos = 0u64;
        for r in runs {
            let want = size.saturating_sub(pos).min(r.len) as usize;
            if want == 0 {
                break;
            }
            pos += r.len;
            if r.is_hole() {
                continue;
            }
            let start = out.len();
            out.resize(start + want, 0);
            self.dev.read_exact_at(&mut out[start..], r.offset)?;
        }
        Ok(out)
    }
}

/// An inline folder's bytes as one block of entries: its first 4 bytes are the parent's inode (`..`), the rest
/// entries (in `i_block`, then in the `system.data` attribute; each part's entries end at its own end).
fn inline_dir(data: &[u8]) -> Vec<u8> {
    data.get(4..).unwrap_or_default().to_vec()
}

/// The Windows attribute bits an inode maps onto: a folder, a symlink (a link, as NTFS's reparse point), an
/// immutable file (read-only), ext's compression and encryption flags, and holes (sparse).
fn attributes(i: &Inode, runs: &[Run]) -> u32 {
    let mut a = match i.kind() {
        Kind::Folder => attr::DIRECTORY,
        Kind::Symlink => attr::REPARSE_POINT,
        _ => 0,
    };
    for (flag, bit) in [
        (flags::IMMUTABLE, attr::READ_ONLY),
        (flags::COMPR, attr::COMPRESSED),
        (flags::ENCRYPT, attr::ENCRYPTED),
    ] {
        if i.has(flag) {
            a |= bit;
        }
    }
    if i.kind() != Kind::Folder && runs.iter().any(Run::is_hole) {
        a |= attr::SPARSE;
    }
    a
}

/// ext2, ext3 and ext4 as a file system of the source layer's list.
pub struct Driver;

impl uffs_fs::Driver for Driver {
    fn names(&self) -> &'static str {
        "ext2/3/4"
    }

    /// By the magic alone: a superblock that does not add up is then said to be one when it is opened.
    fn probe(&self, head: &[u8]) -> Option<uffs_fs::FileSystem> {
        probe(head).then(|| {
            head.get(superblock::OFFSET as usize..superblock::OFFSET as usize + 1024)
                .and_then(|b| Superblock::parse(b, u64::MAX).ok())
                .map_or(uffs_fs::FileSystem::Ext4, |sb| filesystem_of(sb.flavor()))
        })
    }

    fn volume_len(&self, head: &[u8]) -> Option<u64> {
        volume_len(head)
    }

    fn open(&self, device: Box<dyn ReadAt>) -> Result<Box<dyn uffs_fs::Reader>> {
        Ok(Box::new(Volume::open(device)?))
    }
}

/// The index's name for a flavour.
fn filesystem_of(flavor: &str) -> uffs_fs::FileSystem {
    match flavor {
        "ext2" => uffs_fs::FileSystem::Ext2,
        "ext3" => uffs_fs::FileSystem::Ext3,
        _ => uffs_fs::FileSystem::Ext4,
    }
}

impl<R: ReadAt> uffs_fs::Reader for Volume<R> {
    fn filesystem(&self) -> uffs_fs::FileSystem {
        filesystem_of(self.flavor())
    }

    fn serial(&self) -> u64 {
        Volume::serial(self)
    }

    fn root(&self) -> u64 {
        u64::from(ROOT)
    }

    fn facts(&self) -> Vec<(String, String)> {
        Volume::facts(self)
    }

    fn space(&self) -> Option<Space> {
        Some(Volume::space(self))
    }

    fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        Volume::scan(self, opts)
    }

    fn scan_sorted(&self, opts: &ScanOptions, sink: &mut dyn uffs_fs::Sink) -> Result<Vec<String>> {
        Volume::scan_sorted(self, opts, sink)
    }

    fn expected_entries(&self) -> Option<u64> {
        Some(Volume::expected_entries(self))
    }
}
