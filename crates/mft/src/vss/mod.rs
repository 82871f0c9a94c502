//! Volume Shadow Copies. The catalog, the stores' block maps and the volume as a store saw it are the image
//! layer's (`uffs_image::vss`, re-exported here); what needs NTFS or a live Windows volume is here:
//!
//! * [`delta`]: a store's index as a delta over the present's, from the MFT records in blocks the store changed.
//! * [`live`]: a live Windows volume's stores through the devices the system exposes for them.

pub use uffs_image::vss::*;

pub mod delta;
pub mod live;
