//! The image layer, the bottom of uffs: byte sources serving positional reads from many threads, the partition
//! tables that cut a disk into volumes, and the shadow copies that overlay a volume's past on its bytes. It knows
//! no file system: the crates above it (`uffs-mft` for NTFS, `uffs-fat` through `uffs-mft`'s `neutral`) look at
//! what the bytes hold.
//!
//! * [`read`]: the [`ReadAt`] trait (positional reads and a length, what partition tables and shadow copies are
//!   read through), and the positional reads of a plain file or block device.
//! * [`container`]: images that hold a disk or volume in another layout, read as that disk: split raw, EWF (E01,
//!   Ex01), VHD, VHDX, VMDK, qcow2, with their parent and backing chains, behind the [`container::Image`] trait.
//! * [`partition`]: MBR (with its EBR chain) and GPT partition tables: parsed from byte slices, and read from a
//!   disk into its partitions ([`partition::read_table`]).
//! * [`vss`]: Volume Shadow Copies read from a volume's own bytes: the catalog, each store's block map, and the
//!   volume as a store saw it ([`vss::Snapshot`], an [`container::Image`]).
//!
//! The device a source is opened as (a file, a block device, a container, a live Windows volume, windowed to a
//! partition) is still `uffs_mft::device::Device`: its live Windows variant carries NTFS state.

pub mod container;
pub mod partition;
pub mod read;
pub mod vss;

pub use read::ReadAt;
