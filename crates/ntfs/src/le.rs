//! Bounds-checked little-endian field readers. Each returns [`Error::Truncated`] naming the structure being read.
//! Public for the other byte-level decoders of the workspace (`uffs_mft::ioctl`).

use crate::{Error, Result};

#[inline]
pub fn bytes<'a>(b: &'a [u8], offset: usize, len: usize, what: &'static str) -> Result<&'a [u8]> {
    offset
        .checked_add(len)
        .and_then(|end| b.get(offset..end))
        .ok_or(Error::Truncated {
            what,
            offset,
            need: len,
            have: b.len(),
        })
}

#[inline]
pub fn u8_at(b: &[u8], offset: usize, what: &'static str) -> Result<u8> {
    b.get(offset).copied().ok_or(Error::Truncated {
        what,
        offset,
        need: 1,
        have: b.len(),
    })
}

#[inline]
pub fn u16_at(b: &[u8], offset: usize, what: &'static str) -> Result<u16> {
    let s = bytes(b, offset, 2, what)?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

#[inline]
pub fn u32_at(b: &[u8], offset: usize, what: &'static str) -> Result<u32> {
    let s = bytes(b, offset, 4, what)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

#[inline]
pub fn u64_at(b: &[u8], offset: usize, what: &'static str) -> Result<u64> {
    let s = bytes(b, offset, 8, what)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Ok(u64::from_le_bytes(a))
}
