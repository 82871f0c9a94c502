//! XFS (v4 and v5), read from its own tables with no mount: every entry of a volume in the file-system-neutral
//! form ([`uffs_fs::Scan`]), with the runs that hold each file's data.
//!
//! The fast path is XFS's own MFT: the inode chunks each allocation group's inode B+tree lists, read a chunk
//! (64 inodes) at a time on every core; then the folders' names, from the inode (short form) or their data
//! blocks.
//!
//! * [`sb`]: the superblock, features and address arithmetic;
//! * [`ag`]: allocation group headers and the walk of their B+trees (the inode chunks, the trees' own blocks);
//! * [`inode`]: an inode's mode, owner, size, times, flags and forks;
//! * [`bmap`]: extent lists and extent B+trees, as runs with holes;
//! * [`dir`]: folder entries in every form;
//! * `space`: the volume's own structures as entries, so that `du /` adds up to the blocks in use;
//! * `scan`: the entries in inode order, streamed;
//! * `names`: the folders' names held between the scan's two passes, and deleted names' entries.
//!
//! Ids are inode numbers (the root folder is the superblock's `rootino`, 128 on a volume `mkfs.xfs` made), so
//! `xfs_db`'s `inode` and `ls -i` agree with what uffs prints; a file with several names (hard links) is one id
//! with one entry per name.

pub mod ag;
pub mod bmap;
pub mod dir;
pub mod inode;
mod names;
pub mod sb;
mod scan;
pub mod shared;
mod space;

pub use uffs_fs::{Entry, Error, ReadAt, Result, Scan, ScanOptions, Space};

use sb::Superblock;

pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Whether a volume's first bytes hold an XFS superblock (`XFSB` at byte 0).
pub fn probe(head: &[u8]) -> bool {
    head.len() >= 4 && be32(head, 0) == sb::MAGIC
}

/// The bytes [`probe`] and [`volume_len`] need: the superblock's sector.
pub const PROBE_LEN: usize = 512;

/// The volume's length in bytes as its superblock gives it.
pub fn volume_len(head: &[u8]) -> Option<u64> {
    Superblock::parse(head).ok().map(|s| s.volume_len())
}

/// An opened XFS volume.
pub struct Volume<R: ReadAt> {
    dev: R,
    sb: Superblock,
    groups: Vec<ag::Group>,
    /// The blocks reflinked files share (see [`shared`]).
    shared: shared::Shared,
}

impl<R: ReadAt> Volume<R> {
    /// Opens the volume whose superblock is at byte 0 of `dev`.
    pub fn open(dev: R) -> Result<Volume<R>> {
        let mut b = vec![0u8; 512];
        dev.read_exact_at(&mut b, 0)
            .map_err(|e| Error::new(format!("superblock: {e}")))?;
        let sb = Superblock::parse(&b)?;
        if sb.has_incompat(sb::incompat::NEEDSREPAIR) {
            // Read as it is: the tables may be inconsistent, which the scan's warnings then say.
        }
        let groups = (0..sb.agcount)
            .map(|ag| ag::read(&dev, &sb, ag))
            .collect::<Result<Vec<_>>>()?;
        let mut vol = Volume {
            dev,
            sb,
            groups,
            shared: shared::Shared::default(),
        };
        vol.shared = shared::Shared::read(&vol);
        Ok(vol)
    }

    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    /// A serial number from the UUID (its first 8 bytes, little-endian, as ext's).
    pub fn serial(&self) -> u64 {
        u64::from_le_bytes(self.sb.uuid[..8].try_into().expect("8 bytes"))
    }

    /// Free blocks as the groups' free-space headers count them (their free-space trees and free lists).
    pub fn free_blocks(&self) -> u64 {
        self.groups.iter().map(|g| g.freeblks + g.flcount).sum()
    }

    /// The volume's space from the groups' free-space counts (the superblock's copy lags them while mounted).
    pub fn space(&self) -> Space {
        let bs = self.sb.block_size;
        let total = self.sb.dblocks;
        let used = total.saturating_sub(self.free_blocks());
        Space {
            cluster_size: bs,
            clusters_total: total,
            clusters_in_use: used,
            bytes_in_use: used * bs,
            bytes_total: total * bs,
        }
    }

    /// What `uffs info` shows.
    pub fn facts(&self) -> Vec<(String, String)> {
        let sb = &self.sb;
        let space = self.space();
        let mut f = vec![
            ("file system".to_string(), format!("XFS v{}", sb.version)),
            ("features".into(), sb.feature_names().join(" ")),
            ("block size".into(), format!("{} bytes", sb.block_size)),
            ("inode size".into(), format!("{} bytes", sb.inode_size)),
            (
                "folder block size".into(),
                format!("{} bytes", sb.dir_block_size()),
            ),
            (
                "allocation groups".into(),
                format!("{} of {} blocks", sb.agcount, sb.agblocks),
            ),
            ("inodes".into(), {
                // The superblock's counts are written lazily while the volume is mounted: the groups' are current.
                let groups = self.groups.iter().map(|g| g.inodes).sum::<u64>();
                let mut t = format!("{} allocated ({} free)", sb.icount, sb.ifree);
                if groups != sb.icount {
                    t += &format!(
                        "; the groups' headers count {groups} (the superblock's is written lazily)"
                    );
                }
                t
            }),
            ("label".into(), sb.label.clone()),
            ("uuid".into(), sb.uuid_text()),
            ("used".into(), {
                let free = space.clusters_total - space.clusters_in_use;
                let mut t = format!(
                    "{} bytes in {} blocks of {}; {} bytes free (per the groups' free-space headers)",
                    space.bytes_in_use,
                    space.clusters_in_use,
                    space.clusters_total,
                    free * space.cluster_size,
                );
                if sb.fdblocks != free {
                    t += &format!(
                        "; the superblock says {} blocks free (written lazily)",
                        sb.fdblocks
                    );
                }
                t
            }),
            ("shared".into(), {
                let shared: u64 = self.shared.runs.iter().map(|r| r.len).sum();
                if sb.has_ro_compat(sb::ro_compat::REFLINK) {
                    format!("{shared} bytes in blocks reflinked files share (each once, as $SharedExtents)")
                } else {
                    "none (no reflink)".into()
                }
            }),
            (
                "log".into(),
                if sb.logstart != 0 {
                    format!("internal, {} blocks", sb.logblocks)
                } else {
                    "on a device of its own".into()
                },
            ),
            (
                "times".into(),
                if sb.is_v5() {
                    "created, modified, changed, accessed (to the nanosecond)".into()
                } else {
                    "modified, changed, accessed (to the nanosecond); created unknown: v4 inodes keep none".into()
                },
            ),
        ];
        if sb.rblocks > 0 {
            f.push((
                "real-time device".into(),
                format!(
                    "{} blocks (not read: its files' data is listed without runs)",
                    sb.rblocks
                ),
            ));
        }
        if sb.has_incompat(sb::incompat::NEEDSREPAIR) {
            f.push((
                "needs repair".into(),
                "xfs_repair has not finished on it (read as it is)".into(),
            ));
        }
        f
    }

    /// Every entry: one per name of each inode in use, the root, the volume's own inodes and structures.
    pub fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        let mut entries = Vec::new();
        let warnings = self.scan_sorted(opts, &mut |batch: Vec<Entry>| entries.extend(batch))?;
        Ok(Scan {
            root: self.sb.rootino,
            entries,
            warnings,
            space: self.space(),
        })
    }

    /// About how many entries a scan makes: the inodes in use, a few more for hard links' names.
    pub fn expected_entries(&self) -> u64 {
        let used = self.sb.icount.saturating_sub(self.sb.ifree);
        used + used / 64 + 16
    }
}

/// XFS as a file system of the source layer's list.
pub struct Driver;

impl uffs_fs::Driver for Driver {
    fn names(&self) -> &'static str {
        "XFS"
    }

    fn probe(&self, head: &[u8]) -> Option<uffs_fs::FileSystem> {
        probe(head).then_some(uffs_fs::FileSystem::Xfs)
    }

    fn volume_len(&self, head: &[u8]) -> Option<u64> {
        volume_len(head)
    }

    fn open(&self, device: Box<dyn ReadAt>) -> Result<Box<dyn uffs_fs::Reader>> {
        Ok(Box::new(Volume::open(device)?))
    }
}

impl<R: ReadAt> uffs_fs::Reader for Volume<R> {
    fn filesystem(&self) -> uffs_fs::FileSystem {
        uffs_fs::FileSystem::Xfs
    }

    fn serial(&self) -> u64 {
        Volume::serial(self)
    }

    fn root(&self) -> u64 {
        self.sb.rootino
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
