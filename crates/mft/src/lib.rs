//! NTFS's pipeline: the MFT of a volume (or a raw `$MFT` capture) planned, read and parsed on every core into an
//! index, its files' data, its change journal, its shadow copies' deltas and re-scans. It depends on no other
//! file system's crate: volumes of the file-system interface (`uffs_fs::Driver`, registered in `uffs-source`,
//! which also decides what a source is) go through [`neutral`]. The bytes come from the image layer
//! (`uffs-image`: files, containers, partition tables, shadow copy stores), opened here as [`device`]s.
//!
//! * [`content`]: a file's data streams located and read (resident, runs, sparse, compressed), for `uffs cat`;
//!   [`content::many`] reads many files' data in volume order on every core (`uffs hash`, `uffs grep`).
//! * [`fault`]: fault injection for the end-to-end fault tests (`UFFS_FAULT_INJECT`).
//! * [`device`]: positional reads from a file, image or block device, or a live Windows volume, optionally
//!   windowed to a partition (the image layer's [`uffs_image::ReadAt`]).
//! * [`container`]: `uffs_image::container` re-exported: images that hold a disk or volume in another layout.
//! * [`vss`]: a volume's shadow copies: the image layer's catalog and snapshots (`uffs_image::vss`), with the
//!   store's index as a delta over the present's (`delta`) and a live volume's stores (`live`).
//! * [`live`]: live volumes of the running system (Windows): their names, and reading them raw.
//! * [`ioctl`]: the byte layouts of the Windows device and file-system controls a live volume is asked.
//! * [`index_slack`]: names of deleted files that only folders' `$I30` index slack keeps (`--deleted` builds).
//! * [`journal`]: the USN change journal (`$Extend\$UsnJrnl:$J`) of a volume, or a raw `$J` capture.
//! * [`neutral`]: volumes of the other file systems, read by their `uffs_fs::Reader` into neutral entries and from
//!   there into an index; their files' data through the runs those entries keep.
//! * [`volume`]: the MFT of one volume: where its extents are, which records are in use, label and version.
//! * [`plan`]: which MFT byte ranges to read, in how many reads.
//! * [`parse`]: one file record to the index builder's parsed form.
//! * [`scan`]: the pipeline: a reader thread with large reads in flight, parser threads, the index builder.
//! * [`update`]: which records changed since an index was made (a re-scan of record hashes), and the index
//!   with them read again.

pub use uffs_image::container;
pub mod content;
pub mod device;
mod error;
pub mod fault;
pub mod index_file;
pub mod index_slack;
pub mod ioctl;
pub mod journal;
pub mod live;
pub mod neutral;
pub mod parse;
pub mod plan;
pub mod scan;
pub mod update;
pub mod volume;
pub mod vss;

pub use error::{Error, Result};
pub use scan::{build_index, read_only, PhaseTimes, ScanOptions, ScanReport};
pub use volume::{PartitionInfo, Space, Volume};
