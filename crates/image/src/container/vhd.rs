//! VHD (Virtual PC, Hyper-V's first format) images read as the disk they hold: fixed (the disk's bytes, then a
//! 512-byte footer) and dynamic (a block allocation table; blocks never written read as zeros). Recognised by the
//! footer's `conectix` cookie, never the name. A differencing image reads through its parent (found by the
//! dynamic header's parent locators, as Windows finds it): a sector whose bit is set in its block's bitmap is in
//! the child, every other sector (and every block never written) is the parent's. Format: Microsoft's "Virtual
//! Hard Disk Image Format Specification"; every number is big-endian.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::bytes::{be16, be32, be64};
use super::{bad, Image};

const COOKIE: &[u8; 8] = b"conectix";
const SPARSE_COOKIE: &[u8; 8] = b"cxsparse";
const FIXED: u32 = 2;
const DYNAMIC: u32 = 3;
const DIFFERENCING: u32 = 4;
/// A block allocation table entry of a block never written.
const UNALLOCATED: u32 = u32::MAX;
/// The largest table read: 2^22 entries of 2 MiB blocks is an 8 TiB disk.
const MAX_ENTRIES: u32 = 1 << 22;

/// An open VHD: where the disk's bytes are in the file.
#[derive(Debug)]
pub struct Vhd {
    file: File,
    path: PathBuf,
    /// The disk's size.
    len: u64,
    layout: Layout,
}

#[derive(Debug)]
enum Layout {
    /// The disk's bytes from the file's start.
    Fixed,
    /// Blocks of `block` bytes; `table[i]` is the sector of block `i`'s bitmap, its data `data_skip` bytes on.
    /// With a parent (a differencing disk), the bitmap says which sectors are in this file.
    Dynamic {
        block: u64,
        data_skip: u64,
        table: Vec<u32>,
        parent: Option<Box<dyn Image>>,
    },
}

/// Parent locator platform codes: a relative and an absolute Windows path in UTF-16LE.
const W2RU: u32 = u32::from_be_bytes(*b"W2ru");
const W2KU: u32 = u32::from_be_bytes(*b"W2ku");

impl Vhd {
    /// The VHD in `file` (whose length is `file_len`), or `None` when it is not one.
    /// `chain`: the images that read through it, for its parent's checks.
    pub fn open(
        path: &Path,
        file: &File,
        file_len: u64,
        chain: &[PathBuf],
    ) -> io::Result<Option<Vhd>> {
        if file_len < 512 {
            return Ok(None);
        }
        let mut footer = [0u8; 512];
        crate::read::read_file_at(file, &mut footer, file_len - 512)?;
        if &footer[..8] != COOKIE {
            // A dynamic disk's footer may be 511 bytes (older Virtual PC); its copy at the start is whole.
            crate::read::read_file_at(file, &mut footer, 0)?;
            if &footer[..8] != COOKIE || be32(&footer, 60) == FIXED {
                return Ok(None);
            }
        }
        let len = be64(&footer, 48);
        let kind = be32(&footer, 60);
        let file = file.try_clone()?;
        match kind {
            FIXED => {
                if len > file_len - 512 {
                    return Err(bad(format!(
                        "this fixed VHD says its disk holds {len} bytes, but the file has only {}",
                        file_len - 512
                    )));
                }
                Ok(Some(Vhd {
                    file,
                    path: path.to_path_buf(),
                    len,
                    layout: Layout::Fixed,
                }))
            }
            DYNAMIC | DIFFERENCING => {
                let at = be64(&footer, 16);
                let mut header = [0u8; 1024];
                if at.checked_add(1024).is_none_or(|e| e > file_len) {
                    return Err(bad(format!(
                        "this VHD's dynamic header at {at} is past its end"
                    )));
                }
                crate::read::read_file_at(&file, &mut header, at)?;
                if &header[..8] != SPARSE_COOKIE {
                    return Err(bad("this dynamic VHD's header has no cxsparse cookie"));
                }
                let table_at = be64(&header, 16);
                let entries = be32(&header, 28);
                let block = u64::from(be32(&header, 32));
                if block < 512 || !block.is_power_of_two() || entries > MAX_ENTRIES {
                    return Err(bad(format!(
                        "this dynamic VHD's blocks ({block} bytes, {entries} of them) are not a layout it can have"
                    )));
                }
                if entries as u64 * block < len {
                    return Err(bad(format!(
                        "this dynamic VHD's {entries} blocks of {block} bytes do not cover its {len}-byte disk"
                    )));
                }
                let mut raw = vec![0u8; entries as usize * 4];
                if table_at
                    .checked_add(raw.len() as u64)
                    .is_none_or(|e| e > file_len)
                {
                    return Err(bad("this VHD's block table is past its end"));
                }
                crate::read::read_file_at(&file, &mut raw, table_at)?;
                let table = raw.chunks_exact(4).map(|c| be32(c, 0)).collect();
                // One bit per sector of the block, in whole sectors.
                let data_skip = (block / 512).div_ceil(8).div_ceil(512) * 512;
                let table: Vec<u32> = table;
                if let Some((i, _)) = table.iter().enumerate().find(|&(i, &e)| {
                    let size = block.min(len.saturating_sub(i as u64 * block));
                    e != UNALLOCATED
                        && !super::within(u64::from(e) * 512, data_skip + size, file_len)
                }) {
                    return Err(bad(format!(
                        "this VHD's block table places block {i} past the file's end ({file_len} bytes)"
                    )));
                }
                let parent = if kind == DIFFERENCING {
                    let candidates = parent_paths(path, &file, file_len, &header)?;
                    Some(super::find_parent(path, &candidates, chain)?)
                } else {
                    None
                };
                Ok(Some(Vhd {
                    file,
                    path: path.to_path_buf(),
                    len,
                    layout: Layout::Dynamic {
                        block,
                        data_skip,
                        table,
                        parent,
                    },
                }))
            }
            k => Err(bad(format!(
                "this VHD's disk type {k} is none of fixed, dynamic, differencing"
            ))),
        }
    }
}

impl Image for Vhd {
    fn len(&self) -> u64 {
        self.len
    }

    fn describe(&self) -> String {
        match &self.layout {
            Layout::Fixed => "VHD, fixed".into(),
            Layout::Dynamic {
                block,
                table,
                parent,
                ..
            } => format!(
                "VHD, {}: {} of {} blocks of {} KiB written{}",
                if parent.is_some() {
                    "differencing"
                } else {
                    "dynamic"
                },
                table.iter().filter(|&&e| e != UNALLOCATED).count(),
                table.len(),
                block / 1024,
                match self.files().get(1) {
                    Some(p) => format!(", parent {}", p.display()),
                    None => String::new(),
                }
            ),
        }
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut v = vec![self.path.clone()];
        if let Layout::Dynamic {
            parent: Some(p), ..
        } = &self.layout
        {
            v.extend(p.files());
        }
        v
    }

    /// Positional reads only: no lock, reads from several threads at once.
    fn read_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let (block, data_skip, table, parent) = match &self.layout {
            Layout::Fixed => return crate::read::read_file_at(&self.file, buf, offset),
            Layout::Dynamic {
                block,
                data_skip,
                table,
                parent,
            } => (*block, *data_skip, table, parent.as_deref()),
        };
        while !buf.is_empty() {
            let i = (offset / block) as usize;
            let within = offset % block;
            let n = ((block - within) as usize).min(buf.len());
            let (now, rest) = buf.split_at_mut(n);
            match (table.get(i).copied(), parent) {
                (Some(UNALLOCATED) | None, None) => now.fill(0),
                (Some(UNALLOCATED) | None, Some(p)) => super::read_parent(p, now, offset)?,
                (Some(sector), None) => crate::read::read_file_at(
                    &self.file,
                    now,
                    u64::from(sector) * 512 + data_skip + within,
                )?,
                (Some(sector), Some(p)) => {
                    // Sector by sector as the block's bitmap says (bit 7 of byte 0 is the block's first sector).
                    let at = u64::from(sector) * 512;
                    let (first, last) = (within / 512, (within + n as u64).div_ceil(512));
                    let mut bits = vec![0u8; (last.div_ceil(8) - first / 8) as usize];
                    crate::read::read_file_at(&self.file, &mut bits, at + first / 8)?;
                    let bit = |k: u64| {
                        let j = k - first / 8 * 8;
                        bits[(j / 8) as usize] & (0x80 >> (j % 8)) != 0
                    };
                    let mut k = first;
                    while k < last {
                        let here = bit(k);
                        let mut end = k + 1;
                        while end < last && bit(end) == here {
                            end += 1;
                        }
                        let from = (k * 512).max(within);
                        let to = (end * 512).min(within + n as u64);
                        let dst = &mut now[(from - within) as usize..(to - within) as usize];
                        if here {
                            crate::read::read_file_at(&self.file, dst, at + data_skip + from)?;
                        } else {
                            super::read_parent(p, dst, offset - within + from)?;
                        }
                        k = end;
                    }
                }
            }
            buf = rest;
            offset += n as u64;
        }
        Ok(())
    }
}

/// The paths a differencing VHD's dynamic `header` gives for its parent, in the order Windows tries them: the
/// relative locator (`W2ru`), the absolute one (`W2ku`), then the parent's name (from the header) beside the child.
fn parent_paths(
    path: &Path,
    file: &File,
    file_len: u64,
    header: &[u8],
) -> io::Result<Vec<PathBuf>> {
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut found: Vec<(u32, PathBuf)> = Vec::new();
    for i in 0..8 {
        let e = &header[576 + i * 24..576 + (i + 1) * 24];
        let code = be32(e, 0);
        let (n, at) = (u64::from(be32(e, 8)), be64(e, 16));
        if code != W2RU && code != W2KU {
            continue;
        }
        if n == 0 || n > 64 * 1024 || !super::within(at, n, file_len) {
            return Err(bad(format!(
                "this differencing VHD's parent locator {i} ({n} bytes at {at}) is outside its file"
            )));
        }
        let mut raw = vec![0u8; n as usize];
        crate::read::read_file_at(file, &mut raw, at)?;
        let units: Vec<u16> = raw
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        let text = String::from_utf16_lossy(&units);
        if let Some(p) = super::windows_path(dir, &text, code == W2RU) {
            found.push((code, p));
        }
    }
    found.sort_by_key(|(code, _)| *code != W2RU);
    let mut paths: Vec<PathBuf> = found.into_iter().map(|(_, p)| p).collect();
    // The parent's name, UTF-16 (big-endian) at 64, 512 bytes.
    let units: Vec<u16> = (0..256)
        .map(|k| be16(header, 64 + 2 * k))
        .take_while(|&u| u != 0)
        .collect();
    let name = String::from_utf16_lossy(&units);
    if let Some(base) = name.rsplit(['\\', '/']).next().filter(|b| !b.is_empty()) {
        paths.push(dir.join(base));
    }
    Ok(paths)
}
