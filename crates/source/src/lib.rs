//! The source layer: what a `SOURCE` argument is, decided from its content (never its name), and the volumes
//! it holds, each opened by the file system its first bytes name. This is the one place that lists the file
//! systems uffs reads ([`FILE_SYSTEMS`]); everything else asks it.
//!
//! * [`source`]: a volume, a whole disk (its partitions read by `uffs_image::partition`, each one's file system
//!   told by its first bytes), a raw `$MFT` capture, a shadow copy (`@vssN`, `@vss{GUID}`) or a live drive.
//! * [`folder`]: a mounted folder, read raw through its device where uffs may, else walked (`uffs-walk`).
//! * [`storage`]: finding the volume that keeps a volume's shadow-copy stores when it is another one.
//! * [`indexes`]: a source's volumes as indexes (shadow copies as deltas over their volume's), each with the
//!   prefix its paths get; the front ends bring the progress bars and lines ([`indexes::Report`]).
//!
//! NTFS is read by `uffs-mft`'s own pipeline (plan, read, parse, build); the others through the file-system
//! interface (`uffs_fs::Driver`), registered in [`FILE_SYSTEMS`].

pub mod folder;
pub mod indexes;
pub mod source;
pub mod storage;

pub use source::{
    open, open_for_check, open_with_snapshots, path_of, split_state, split_store_id,
    split_suffixes, Container, Source, SourceKind,
};
pub use uffs_mft::{Error, PartitionInfo, Result};

use uffs_fs::{Driver, FileSystem};

/// Every file system read through the file-system interface, in the order a volume's first bytes are shown to
/// them (after NTFS's boot sector, which `uffs-mft` reads). Adding a file system is a line here; see
/// docs/architecture.md, "Adding a file system".
pub static FILE_SYSTEMS: &[&dyn Driver] = &[
    &uffs_fat::Driver,
    &uffs_ext::Driver,
    &uffs_xfs::Driver,
    &uffs_btrfs::Driver,
    &uffs_hfs::Driver,
    &uffs_apfs::Driver,
];

/// The file system a volume's first bytes (`head`, up to [`uffs_fs::PROBE_LEN`]) start, and the driver that
/// reads it (`None` for NTFS, which `uffs-mft` reads); `None` when uffs reads no such volume.
pub fn probe(head: &[u8]) -> Option<(FileSystem, Option<&'static dyn Driver>)> {
    if uffs_ntfs::boot::is_ntfs(head) {
        return Some((FileSystem::Ntfs, None));
    }
    FILE_SYSTEMS
        .iter()
        .find_map(|d| d.probe(head).map(|fs| (fs, Some(*d))))
}

/// The volume's length as the header at its start gives it, for a device that does not tell its own; asked of
/// every registered file system (NTFS's boot sector is read by the device itself).
pub fn header_len(head: &[u8]) -> Option<u64> {
    FILE_SYSTEMS.iter().find_map(|d| {
        d.probe(head)?;
        d.volume_len(head)
    })
}

/// The file systems uffs reads, for messages: `NTFS, FAT12/16/32, exFAT, ext2/3/4`.
pub fn names() -> String {
    std::iter::once("NTFS")
        .chain(FILE_SYSTEMS.iter().map(|d| d.names()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A cheap fingerprint of a source's writes (see `uffs_mft::device::write_stamp`); `spec` is a source as
/// given, `@N`, `@vssN` and `@vss{GUID}` suffixes allowed.
pub fn write_stamp(spec: &str) -> Option<u64> {
    uffs_mft::device::write_stamp(std::path::Path::new(path_of(spec)))
}
