//! The compact searchable index of one volume (NTFS, FAT, exFAT, ext: the file system is in its header).
//!
//! * [`batch`]: the parsed-record batches the MFT reader produces, in record order.
//! * [`build`]: turns batches into an [`Index`]: one entry per name (hard links are separate entries), named
//!   streams and deleted files as flagged entries, extension records merged into their base record, parents
//!   resolved (orphans under a synthetic `$Orphan` folder, cycles broken), recursive directory sizes.
//! * [`Index`]: the entries as columns (struct of arrays), names in one arena, 32-bit entry ids.
//! * [`family`]: an index file with the delta and shadow copies kept beside it, read as the parts a search goes
//!   through.
//! * [`file`](mod@file): the on-disk format, loaded by memory-mapping ([`column`](mod@column): a column owned or mapped; [`check`]:
//!   the data's checksums, checked a chunk at a time as it is read).
//! * [`aids`]: search aids (sorted orders, extension ids, trigram filter), stored in the file ([`packed`]: the
//!   orders in as few bits as their values need).
//! * [`paths`]: folder paths built once, and the case folding used to compare names.
//! * [`time`]: FILETIME conversions ([`timecol`]: a column of them, stored as offsets in as few bits as they
//!   need).
//! * [`posix`]: owners and permissions (ext); [`apart`]: texts few entries have (8.3 aliases, link targets).
//! * [`reach`]: which entries a user may know of, by the permissions of the folders above them.
//! * [`timeline`]: the `$FILE_NAME` times and attribute ids of each entry, for timelines: a cold, compact part
//!   of the index that queries never read.
//! * [`diff`]: what changed between two indexes of one volume (`uffs diff`): entries paired by record and
//!   sequence number, created, deleted, renamed, moved or changed.
//! * [`temp`]: the temporary files being written, removed by a process ended by a signal.
//! * [`graft`]: the folders a delta renamed or moved, which the base's paths resolve through.
//! * [`layer`]: the live-index path: the entries of changed records as a small delta over an unchanged index,
//!   in time proportional to the change ([`update`]: which records to read again, what an update did).

pub mod aids;
pub mod apart;
pub mod batch;
pub mod build;
pub mod check;
pub mod column;
pub mod diacritics;
pub mod diff;
pub mod family;
pub mod file;
pub mod graft;
mod index;
pub mod layer;
pub mod names;
pub mod packed;
pub mod paths;
pub mod posix;
pub mod reach;
pub mod sparse;
pub mod temp;
pub mod time;
pub mod timecol;
pub mod timeline;
pub mod update;

pub use build::{BuildOptions, BuildStats, Builder};
pub use index::{
    flags, folder_root, EntryId, EntryKind, FileSystem, Index, VolumeMeta, MAX_DEPTH, NO_RECORD,
};
pub use posix::Posix;
