//! FAT12/16/32 and exFAT, read from their own tables with no mount: every entry of a volume in the
//! file-system-neutral form ([`uffs_fs::Scan`]), with the runs that hold each file's data.
//!
//! * [`fat`]: FAT12, FAT16 and FAT32: the BIOS parameter block, the FAT, folders along their cluster chains, long
//!   names checked against their short entry, deleted (`0xE5`) entries.
//! * [`exfat`]: exFAT: the boot region, the FAT and the allocation bitmap, entry sets (file, stream extension,
//!   names) with their checksums, `NoFatChain` files, deleted entry sets.
//! * [`time`]: DOS dates and times (both keep them) to FILETIME.
//!
//! Ids are The Sleuth Kit's inode numbers (from the position of an entry's directory entry), so `icat` and
//! `istat` take what uffs prints; the root folder is 2, as in TSK.

pub mod exfat;
pub mod fat;
pub mod time;

pub use uffs_fs::{Entry, Error, ReadAt, Result, Scan, ScanOptions, Space, Spool, SHORT_IMAGE};

/// Which FAT a boot sector describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Fat12,
    Fat16,
    Fat32,
    ExFat,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Fat12 => "FAT12",
            Flavor::Fat16 => "FAT16",
            Flavor::Fat32 => "FAT32",
            Flavor::ExFat => "exFAT",
        }
    }
}

/// What a volume's first sector is, when it is a FAT or exFAT boot sector; `None` for anything else (NTFS's
/// boot sector included).
pub fn probe(boot: &[u8]) -> Option<Flavor> {
    if exfat::is_boot_sector(boot) {
        return Some(Flavor::ExFat);
    }
    fat::probe(boot)
}

/// The volume's length in bytes as its FAT or exFAT boot sector gives it: for a device that does not tell its
/// own size (a live drive under some drivers).
pub fn volume_len(boot: &[u8]) -> Option<u64> {
    if exfat::is_boot_sector(boot) {
        let sectors = u64::from_le_bytes(boot.get(72..80)?.try_into().ok()?);
        let shift = u32::from(*boot.get(108)?);
        return (9..=12)
            .contains(&shift)
            .then(|| sectors.checked_mul(1 << shift))
            .flatten();
    }
    fat::volume_len(boot)
}

/// An opened FAT or exFAT volume.
pub enum Volume<R: ReadAt> {
    Fat(fat::Volume<R>),
    ExFat(exfat::Volume<R>),
}

impl<R: ReadAt> Volume<R> {
    /// Opens the volume whose boot sector is at offset 0 of `dev`.
    pub fn open(dev: R) -> Result<Volume<R>> {
        let mut head = [0u8; 512];
        dev.read_exact_at(&mut head, 0)
            .map_err(|e| Error::new(format!("boot sector: {e}")))?;
        match probe(&head) {
            Some(Flavor::ExFat) => exfat::Volume::open(dev).map(Volume::ExFat),
            Some(_) => fat::Volume::open(dev).map(Volume::Fat),
            None => Err(Error::new("not a FAT or exFAT boot sector")),
        }
    }

    pub fn flavor(&self) -> Flavor {
        match self {
            Volume::Fat(v) => v.flavor(),
            Volume::ExFat(_) => Flavor::ExFat,
        }
    }

    /// Every entry, read from the volume's own tables.
    pub fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        match self {
            Volume::Fat(v) => v.scan(opts),
            Volume::ExFat(v) => v.scan(opts),
        }
    }

    /// Every entry, packed in the order the walk of the folders makes them, and the warnings: what an index
    /// build takes, in id order, without holding the entries whole.
    pub fn scan_spooled(&self, opts: &ScanOptions) -> Result<(Spool, Vec<String>)> {
        match self {
            Volume::Fat(v) => v.scan_spooled(opts),
            Volume::ExFat(v) => v.scan_spooled(opts),
        }
    }

    /// What `uffs info` shows: geometry, label, serial, used and free space, one (name, value) pair a line.
    pub fn facts(&self) -> Vec<(String, String)> {
        match self {
            Volume::Fat(v) => v.facts(),
            Volume::ExFat(v) => v.facts(),
        }
    }

    /// The volume serial number from the boot sector.
    pub fn serial(&self) -> u32 {
        match self {
            Volume::Fat(v) => v.serial(),
            Volume::ExFat(v) => v.serial(),
        }
    }

    /// The volume's space from its own allocation table (the FAT, or exFAT's bitmap).
    pub fn space(&self) -> Result<Space> {
        match self {
            Volume::Fat(v) => v.space(),
            Volume::ExFat(v) => v.space(),
        }
    }
}

/// FAT12/16/32 and exFAT as a file system of the source layer's list.
pub struct Driver;

impl uffs_fs::Driver for Driver {
    fn names(&self) -> &'static str {
        "FAT12/16/32, exFAT"
    }

    fn probe(&self, head: &[u8]) -> Option<uffs_fs::FileSystem> {
        probe(head).map(Flavor::filesystem)
    }

    fn volume_len(&self, head: &[u8]) -> Option<u64> {
        volume_len(head)
    }

    fn open(&self, device: Box<dyn ReadAt>) -> Result<Box<dyn uffs_fs::Reader>> {
        Ok(Box::new(Volume::open(device)?))
    }
}

impl Flavor {
    /// The index's name for it.
    pub fn filesystem(self) -> uffs_fs::FileSystem {
        match self {
            Flavor::Fat12 => uffs_fs::FileSystem::Fat12,
            Flavor::Fat16 => uffs_fs::FileSystem::Fat16,
            Flavor::Fat32 => uffs_fs::FileSystem::Fat32,
            Flavor::ExFat => uffs_fs::FileSystem::ExFat,
        }
    }
}

impl<R: ReadAt> uffs_fs::Reader for Volume<R> {
    fn filesystem(&self) -> uffs_fs::FileSystem {
        self.flavor().filesystem()
    }

    fn serial(&self) -> u64 {
        u64::from(Volume::serial(self))
    }

    fn root(&self) -> u64 {
        2
    }

    fn facts(&self) -> Vec<(String, String)> {
        Volume::facts(self)
    }

    fn space(&self) -> Option<Space> {
        Volume::space(self).ok()
    }

    fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        Volume::scan(self, opts)
    }

    fn scan_sorted(&self, opts: &ScanOptions, sink: &mut dyn uffs_fs::Sink) -> Result<Vec<String>> {
        let (spool, warnings) = self.scan_spooled(opts)?;
        sink.expect(spool.len());
        spool.drain_sorted(sink);
        Ok(warnings)
    }
}
