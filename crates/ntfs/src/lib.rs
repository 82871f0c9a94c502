//! Pure parsing of NTFS on-disk structures: boot sector, MFT file records with their update-sequence fixups,
//! attributes and their values, data runlists, `$I30` index blocks (and the names their slack keeps), and LZNT1
//! (compressed streams). Partition tables are the image layer's (`uffs_image::partition`).
//!
//! Everything here works on byte slices handed in by the caller and performs no I/O. Every offset and length read
//! from disk is checked before use; malformed input yields a typed [`Error`], never a panic, so the crate is safe
//! to feed with corrupt or hostile images (the fuzz targets in `fuzz/` hold it to that).

pub mod attr;
pub mod boot;
mod error;
pub mod indx;
pub mod le;
pub mod lznt1;
pub mod record;
pub mod runlist;
pub mod usn;
pub mod utf16;

pub use error::{Error, Result};

/// An iterator's next item from one parsing step (`Ok(None)` at the end): after the end or an error, `done` is
/// set, so the iterator yields nothing more.
pub(crate) fn end_after_error<T>(done: &mut bool, step: Result<Option<T>>) -> Option<Result<T>> {
    let item = step.transpose();
    *done = !matches!(item, Some(Ok(_)));
    item
}
pub use record::FileRef;
