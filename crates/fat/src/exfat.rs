//! Stub: to be written.

use uffs_fs::{ReadAt, Scan, Space};

use crate::{Error, Result, ScanOptions};

pub struct Volume<R: ReadAt> {
    dev: R,
}

impl<R: ReadAt> Volume<R> {
    pub fn open(dev: R) -> Result<Volume<R>> {
        let _ = &dev;
        Err(Error::new("exfat: not written yet"))
    }
    pub fn scan(&self, _opts: &ScanOptions) -> Result<Scan> {
        let _ = &self.dev;
        Err(Error::new("exfat: not written yet"))
    }
    pub fn facts(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    pub fn serial(&self) -> u32 {
        0
    }
    pub fn space(&self) -> Result<Space> {
        Err(Error::new("exfat: not written yet"))
    }
}

/// `boot` is an exFAT boot sector ("EXFAT   " at byte 3).
pub fn is_boot_sector(boot: &[u8]) -> bool {
    boot.get(3..11) == Some(b"EXFAT   ")
}
