//! VHD (Virtual PC, Hyper-V's first format) images read as the disk they hold: fixed (the disk's bytes, then a
//! 512-byte footer) and dynamic (a block allocation table; blocks never written read as zeros). Recognised by the
//! footer's `conectix` cookie, never the name. Differencing images (which read through a parent) are refused with
//! a message. Format: Microsoft's "Virtual Hard Disk Image Format Specification"; every number is big-endian.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::bytes::{be32, be64};
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
    Dynamic {
        block: u64,
        data_skip: u64,
        table: Vec<u32>,
    },
}

impl Vhd {
    /// The VHD in `file` (whose length is `file_len`), or `None` when it is not one.
    pub fn open(path: &Path, file: &File, file_len: u64) -> io::Result<Option<Vhd>> {
        if file_len < 512 {
            return Ok(None);
        }
        let mut footer = [0u8; 512];
        crate::device::read_file_at(file, &mut footer, file_len - 512)?;
        if &footer[..8] != COOKIE {
            // A dynamic disk's footer may be 511 bytes (older Virtual PC); its copy at the start is whole.
            crate::device::read_file_at(file, &mut footer, 0)?;
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
            DYNAMIC => {
                let at = be64(&footer, 16);
                let mut header = [0u8; 1024];
                if at.checked_add(1024).is_none_or(|e| e > file_len) {
                    return Err(bad(format!("this VHD's dynamic header at {at} is past its end")));
                }
                crate::device::read_file_at(&file, &mut header, at)?;
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
                crate::device::read_file_at(&file, &mut raw, table_at)?;
                let table = raw.chunks_exact(4).map(|c| be32(c, 0)).collect();
                // One bit per sector of the block, in whole sectors.
                let data_skip = (block / 512).div_ceil(8).div_ceil(512) * 512;
                Ok(Some(Vhd {
                    file,
                    path: path.to_path_buf(),
                    len,
                    layout: Layout::Dynamic {
                        block,
                        data_skip,
                        table,
                    },
                }))
            }
            DIFFERENCING => Err(bad(
                "this is a differencing VHD, which reads through its parent image: uffs cannot read those yet; \
                 merge it first (qemu-img convert -O raw CHILD.vhd disk.img)",
            )),
            k => Err(bad(format!("this VHD's disk type {k} is none of fixed, dynamic, differencing"))),
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
            Layout::Dynamic { block, table, .. } => format!(
                "VHD, dynamic: {} of {} blocks of {} KiB written",
                table.iter().filter(|&&e| e != UNALLOCATED).count(),
                table.len(),
                block / 1024
            ),
        }
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    /// Positional reads only: no lock, reads from several threads at once.
    fn read_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let (block, data_skip, table) = match &self.layout {
            Layout::Fixed => return crate::device::read_file_at(&self.file, buf, offset),
            Layout::Dynamic {
                block,
                data_skip,
                table,
            } => (*block, *data_skip, table),
        };
        while !buf.is_empty() {
            let i = (offset / block) as usize;
            let within = offset % block;
            let n = ((block - within) as usize).min(buf.len());
            let (now, rest) = buf.split_at_mut(n);
            match table.get(i).copied() {
                Some(UNALLOCATED) | None => now.fill(0),
                Some(sector) => crate::device::read_file_at(
                    &self.file,
                    now,
                    u64::from(sector) * 512 + data_skip + within,
                )?,
            }
            buf = rest;
            offset += n as u64;
        }
        Ok(())
    }
}
