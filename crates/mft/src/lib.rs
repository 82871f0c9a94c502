//! Opens NTFS sources and turns their MFT into an index.
//!
//! * [`content`]: a file's data streams located and read (resident, runs, sparse, compressed), for `uffs cat`;
//!   [`content::many`] reads many files' data in volume order on every core (`uffs hash`, `uffs grep`).
//! * [`fault`]: fault injection for the end-to-end fault tests (`UFFS_FAULT_INJECT`).
//! * [`device`]: positional reads from a file, image or block device, optionally windowed to a partition.
//! * [`container`]: images that hold a disk or volume in another layout, read as that disk: split raw, EWF (E01),
//!   VHD, VHDX, VMDK, qcow2, with their parent and backing chains.
//! * [`vss`]: a volume's shadow copies, read from its own bytes: the stores listed, and the volume as each saw it.
//! * [`source`]: what a source is, detected from its content: a volume, a whole disk (MBR/GPT) or a raw `$MFT`.
//! * [`live`]: live volumes of the running system (Windows): their names, and reading them raw.
//! * [`ioctl`]: the byte layouts of the Windows device and file-system controls a live volume is asked.
//! * [`journal`]: the USN change journal (`$Extend\$UsnJrnl:$J`) of a volume, or a raw `$J` capture.
//! * [`neutral`]: volumes of other file systems (FAT12/16/32, exFAT), read into `uffs-fs`'s neutral entries and
//!   from there into an index; their files' data through the runs those entries keep.
//! * [`volume`]: the MFT of one volume: where its extents are, which records are in use, label and version.
//! * [`plan`]: which MFT byte ranges to read, in how many reads.
//! * [`parse`]: one file record to the index builder's parsed form.
//! * [`scan`]: the pipeline: a reader thread with large reads in flight, parser threads, the index builder.
//! * [`update`]: which records changed since an index was made (a re-scan of record hashes), and the index
//!   with them read again.

pub mod container;
pub mod content;
pub mod device;
mod error;
pub mod fault;
pub mod ioctl;
pub mod journal;
pub mod live;
pub mod neutral;
pub mod parse;
pub mod plan;
pub mod scan;
pub mod source;
pub mod update;
pub mod volume;
pub mod vss;

pub use error::{Error, Result};
pub use scan::{build_index, read_only, PhaseTimes, ScanOptions, ScanReport};
pub use source::{
    open, open_for_check, open_with_snapshots, Container, PartitionInfo, Source, SourceKind,
};
pub use volume::{Space, Volume};
