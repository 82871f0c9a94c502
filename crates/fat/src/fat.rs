//! Stub: to be written.

use uffs_fs::{ReadAt, Scan, Space};

use crate::{Error, Result, ScanOptions};

pub struct Volume<R: ReadAt> {
    dev: R,
}

impl<R: ReadAt> Volume<R> {
    pub fn open(dev: R) -> Result<Volume<R>> {
        let _ = &dev;
        Err(Error::new("fat: not written yet"))
    }
    pub fn scan(&self, _opts: &ScanOptions) -> Result<Scan> {
        let _ = &self.dev;
        Err(Error::new("fat: not written yet"))
    }
    pub fn facts(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    pub fn serial(&self) -> u32 {
        0
    }
    pub fn space(&self) -> Result<Space> {
        Err(Error::new("fat: not written yet"))
    }
}

impl<R: ReadAt> Volume<R> {
    pub fn flavor(&self) -> crate::Flavor {
        crate::Flavor::Fat32
    }
}

/// FAT12, FAT16 or FAT32, when `boot` is such a boot sector.
pub fn probe(_boot: &[u8]) -> Option<crate::Flavor> {
    None
}
