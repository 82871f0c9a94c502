//! VHDX (Hyper-V's second format) images read as the disk they hold: fixed, dynamic and differencing. Recognised
//! by the file type identifier `vhdxfile` at the start, never the name. Format: Microsoft's "[MS-VHDX]: Virtual
//! Hard Disk v2 (VHDX) File Format"; every number is little-endian, GUIDs in their Windows binary form.
//!
//! The file: two headers (64 KiB and 128 KiB; the valid one with the higher sequence number counts), two copies
//! of the region table (192 KiB and 256 KiB) locating the block allocation table (BAT) and the metadata region,
//! and a log of metadata writes not yet applied. A log that is not empty is replayed in memory (uffs never writes
//! an image): its writes lie over the file's bytes for every read after.
//!
//! The BAT interleaves an entry per payload block with an entry per sector bitmap block every chunk ratio
//! entries. A differencing disk reads what its file does not hold from its parent, per block, and per sector
//! where the block is partially present (a bit set in the sector bitmap: the sector is in this file).

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::bytes::{le16, le32, le64};
use super::{bad, crc32c, within, Image};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
const SIGNATURE: &[u8; 8] = b"vhdxfile";

/// GUIDs in their binary (mixed-endian) form, from their text form.
const fn guid(s: &str) -> [u8; 16] {
    let b = s.as_bytes();
    let mut hex = [0u8; 32];
    let (mut i, mut n) = (0, 0);
    while i < b.len() {
        let c = b[i];
        if c != b'-' {
            hex[n] = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                _ => c - b'A' + 10,
            };
            n += 1;
        }
        i += 1;
    }
    let mut raw = [0u8; 16];
    let mut k = 0;
    while k < 16 {
        raw[k] = hex[2 * k] << 4 | hex[2 * k + 1];
        k += 1;
    }
    // The first three fields are stored little-endian.
    [
        raw[3], raw[2], raw[1], raw[0], raw[5], raw[4], raw[7], raw[6], raw[8], raw[9], raw[10],
        raw[11], raw[12], raw[13], raw[14], raw[15],
    ]
}

const REGION_BAT: [u8; 16] = guid("2DC27766-F623-4200-9D64-115E9BFD4A08");
const REGION_METADATA: [u8; 16] = guid("8B7CA206-4790-4B9A-B8FE-575F050F886E");
const META_FILE_PARAMETERS: [u8; 16] = guid("CAA16737-FA36-4D43-B3B6-33F0AA44E76B");
const META_DISK_SIZE: [u8; 16] = guid("2FA54224-CD1B-4876-B211-5DBED83BF4B8");
const META_DISK_ID: [u8; 16] = guid("BECA12AB-B2E6-4523-93EF-C309E000C746");
const META_LOGICAL_SECTOR: [u8; 16] = guid("8141BF1D-A96F-4709-BA47-F233A8FAAB5F");
const META_PHYSICAL_SECTOR: [u8; 16] = guid("CDA348C7-445D-4471-9CC9-E9885251C556");
const META_PARENT_LOCATOR: [u8; 16] = guid("A8D35F2D-B30B-454D-ABF7-D3D84834AB0C");
const LOCATOR_VHDX: [u8; 16] = guid("B04AEFB7-D19E-4A81-B789-25B8E9445913");

/// Payload block states.
const NOT_PRESENT: u64 = 0;
const UNDEFINED: u64 = 1;
const ZERO: u64 = 2;
const UNMAPPED: u64 = 3;
const FULLY_PRESENT: u64 = 6;
const PARTIALLY_PRESENT: u64 = 7;
/// A sector bitmap block's state when it is in the file.
const SB_PRESENT: u64 = 6;

/// The longest log replayed (Windows writes 1 MiB ones).
const MAX_LOG: u64 = 256 * MIB;
/// The most 4 KiB sectors a replayed log may write (zero descriptors included).
const MAX_LOG_SECTORS: u64 = 1 << 16;

/// The file's bytes with a replayed log's writes laid over them.
#[derive(Debug)]
struct FileView {
    file: File,
    /// The file's real length.
    len: u64,
    /// Its length once the log is replayed (a replay may extend it; the part past `len` reads as zeros).
    virt_len: u64,
    /// 4 KiB sectors the log writes, by file offset; `None`: zeros.
    overlay: BTreeMap<u64, Option<Box<[u8]>>>,
}

impl FileView {
    fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if !within(offset, buf.len() as u64, self.virt_len) {
            return Err(bad(format!(
                "a read of {} bytes at {offset} is past this VHDX file's end ({} bytes)",
                buf.len(),
                self.virt_len
            )));
        }
        let real = self.len.saturating_sub(offset).min(buf.len() as u64) as usize;
        let (now, past) = buf.split_at_mut(real);
        if !now.is_empty() {
            crate::read::read_file_at(&self.file, now, offset)?;
        }
        past.fill(0);
        if self.overlay.is_empty() {
            return Ok(());
        }
        let end = offset + buf.len() as u64;
        let first = offset - offset % (4 * KIB);
        for (&at, data) in self.overlay.range(first..end) {
            let from = at.max(offset);
            let to = (at + 4 * KIB).min(end);
            let dst = &mut buf[(from - offset) as usize..(to - offset) as usize];
            match data {
                Some(d) => dst.copy_from_slice(&d[(from - at) as usize..(to - at) as usize]),
                None => dst.fill(0),
            }
        }
        Ok(())
    }
}

/// What kind of VHDX it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fixed,
    Dynamic,
    Differencing,
}

/// An open VHDX.
#[derive(Debug)]
pub struct Vhdx {
    view: FileView,
    path: PathBuf,
    /// The disk's size.
    len: u64,
    block: u64,
    sector: u64,
    chunk_ratio: u64,
    /// Payload and sector bitmap entries, interleaved.
    bat: Vec<u64>,
    kind: Kind,
    parent: Option<Box<dyn Image>>,
    /// How many log entries were replayed in memory.
    replayed: usize,
}

/// Where a piece of a block is read from.
enum From {
    Zeros,
    Parent,
    File(u64),
    /// The block at this file offset, sector by sector as the chunk's sector bitmap (at this offset) says.
    Partial {
        data: u64,
        bitmap: u64,
    },
}

impl Vhdx {
    /// The VHDX in `file` (whose length is `file_len`), or `None` when it is not one. `chain`: the images that
    /// read through it, for its parent's checks.
    pub fn open(
        path: &Path,
        file: &File,
        file_len: u64,
        chain: &[PathBuf],
    ) -> io::Result<Option<Vhdx>> {
        if file_len < 8 {
            return Ok(None);
        }
        let mut sig = [0u8; 8];
        crate::read::read_file_at(file, &mut sig, 0)?;
        if &sig != SIGNATURE {
            return Ok(None);
        }
        if file_len < 320 * KIB {
            return Err(bad(format!(
                "this VHDX is {file_len} bytes, too short for its headers and region tables"
            )));
        }
        let mut view = FileView {
            file: file.try_clone()?,
            len: file_len,
            virt_len: file_len,
            overlay: BTreeMap::new(),
        };
        // The headers: the valid one with the higher sequence number.
        let mut best: Option<(u64, Vec<u8>)> = None;
        for at in [64 * KIB, 128 * KIB] {
            let mut h = vec![0u8; 4 * KIB as usize];
            view.read(&mut h, at)?;
            if &h[..4] != b"head" || !checksum_ok(&mut h, 4) {
                continue;
            }
            let seq = le64(&h, 8);
            if best.as_ref().is_none_or(|(s, _)| seq > *s) {
                best = Some((seq, h));
            }
        }
        let Some((_, header)) = best else {
            return Err(bad(
                "neither of this VHDX's headers (at 64 KiB and 128 KiB) is valid: a signature or a CRC-32C \
                 checksum is wrong",
            ));
        };
        let version = le16(&header, 66);
        if version != 1 {
            return Err(bad(format!(
                "this VHDX's header says version {version}; uffs reads version 1"
            )));
        }
        let log_guid: [u8; 16] = header[48..64].try_into().unwrap_or_default();
        let mut replayed = 0;
        if log_guid != [0; 16] {
            replayed = replay_log(&mut view, &header, log_guid)?;
        }

        // The region table: the first valid copy.
        let mut table = None;
        for at in [192 * KIB, 256 * KIB] {
            let mut t = vec![0u8; 64 * KIB as usize];
            view.read(&mut t, at)?;
            if &t[..4] == b"regi" && checksum_ok(&mut t, 4) && le32(&t, 8) <= 2047 {
                table = Some(t);
                break;
            }
        }
        let Some(table) = table else {
            return Err(bad(
                "neither copy of this VHDX's region table (at 192 KiB and 256 KiB) is valid: a signature, a \
                 count or a CRC-32C checksum is wrong",
            ));
        };
        let (mut bat_region, mut meta_region) = (None, None);
        for i in 0..le32(&table, 8) as usize {
            let e = &table[16 + i * 32..16 + (i + 1) * 32];
            let (off, len) = (le64(e, 16), u64::from(le32(e, 24)));
            let region = Some((off, len));
            match e[..16].try_into().unwrap_or([0u8; 16]) {
                REGION_BAT => bat_region = region,
                REGION_METADATA => meta_region = region,
                g if le32(e, 28) & 1 != 0 => {
                    return Err(bad(format!(
                        "this VHDX has a required region uffs does not know ({})",
                        guid_text(&g)
                    )))
                }
                _ => continue,
            }
            if off < MIB || !within(off, len, view.virt_len) {
                return Err(bad(format!(
                    "this VHDX's region table puts a region of {len} bytes at {off}, outside its {}-byte file",
                    view.virt_len
                )));
            }
        }
        let (Some((bat_at, bat_len)), Some((meta_at, meta_len))) = (bat_region, meta_region) else {
            return Err(bad(
                "this VHDX's region table has no BAT or no metadata region",
            ));
        };

        // The metadata.
        let meta = Metadata::read(&view, meta_at, meta_len)?;
        let (block, sector, len) = (meta.block, meta.sector, meta.disk_size);
        let kind = if meta.has_parent {
            Kind::Differencing
        } else if meta.leave_allocated {
            Kind::Fixed
        } else {
            Kind::Dynamic
        };
        let chunk_ratio = (1u64 << 23) * sector / block;
        let blocks = len.div_ceil(block);
        let entries = if kind == Kind::Differencing {
            blocks.div_ceil(chunk_ratio) * (chunk_ratio + 1)
        } else {
            blocks + blocks.saturating_sub(1) / chunk_ratio
        };
        if entries.checked_mul(8).is_none_or(|b| b > bat_len) {
            return Err(bad(format!(
                "this VHDX's BAT region ({bat_len} bytes) is too small for the {entries} entries of a \
                 {len}-byte disk in {block}-byte blocks"
            )));
        }
        let mut raw = vec![0u8; entries as usize * 8];
        view.read(&mut raw, bat_at)?;
        let bat: Vec<u64> = raw.chunks_exact(8).map(|c| le64(c, 0)).collect();
        // Every block and bitmap the BAT places in the file lies within it.
        for (i, &e) in bat.iter().enumerate() {
            let i = i as u64;
            let is_bitmap = i % (chunk_ratio + 1) == chunk_ratio;
            let state = e & 7;
            let at = (e >> 20) * MIB;
            let size = if is_bitmap {
                if state != SB_PRESENT {
                    continue;
                }
                MIB
            } else {
                if state != FULLY_PRESENT && state != PARTIALLY_PRESENT {
                    if ![NOT_PRESENT, UNDEFINED, ZERO, UNMAPPED].contains(&state) {
                        return Err(bad(format!(
                            "this VHDX's BAT entry {i} has state {state}, which no payload block has"
                        )));
                    }
                    continue;
                }
                if state == PARTIALLY_PRESENT && kind != Kind::Differencing {
                    return Err(bad(format!(
                        "this VHDX's BAT entry {i} says its block is partially present, which only a \
                         differencing disk's can be"
                    )));
                }
                let n = i - i / (chunk_ratio + 1);
                if n >= blocks {
                    continue;
                }
                block.min(len - n * block)
            };
            if at < MIB || !within(at, size, view.virt_len) {
                return Err(bad(format!(
                    "this VHDX's BAT entry {i} places a block at {at}, past its {}-byte file",
                    view.virt_len
                )));
            }
            if state == PARTIALLY_PRESENT {
                let sb = (i / (chunk_ratio + 1)) * (chunk_ratio + 1) + chunk_ratio;
                if bat.get(sb as usize).is_none_or(|&s| s & 7 != SB_PRESENT) {
                    return Err(bad(format!(
                        "this VHDX's BAT entry {i} says its block is partially present, but its chunk has \
                         no sector bitmap"
                    )));
                }
            }
        }
        let parent = if kind == Kind::Differencing {
            let dir = path.parent().unwrap_or(Path::new(""));
            let mut candidates = Vec::new();
            for (key, relative) in [("relative_path", true), ("absolute_win32_path", false)] {
                if let Some(v) = meta.locator.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
                    candidates.extend(super::windows_path(dir, v, relative));
                }
            }
            Some(super::find_parent(path, &candidates, chain)?)
        } else {
            None
        };
        Ok(Some(Vhdx {
            view,
            path: path.to_path_buf(),
            len,
            block,
            sector,
            chunk_ratio,
            bat,
            kind,
            parent,
            replayed,
        }))
    }

    /// Where payload block `n` is read from.
    fn source(&self, n: u64) -> From {
        let cr = self.chunk_ratio;
        let e = self.bat.get((n + n / cr) as usize).copied().unwrap_or(0);
        let at = (e >> 20) * MIB;
        let inherit = if self.parent.is_some() {
            From::Parent
        } else {
            From::Zeros
        };
        match e & 7 {
            FULLY_PRESENT => From::File(at),
            PARTIALLY_PRESENT => {
                let sb = (n / cr) * (cr + 1) + cr;
                let b = self.bat.get(sb as usize).copied().unwrap_or(0);
                From::Partial {
                    data: at,
                    bitmap: (b >> 20) * MIB,
                }
            }
            ZERO => From::Zeros,
            _ => inherit,
        }
    }

    fn read_parent(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match &self.parent {
            Some(p) => super::read_parent(p.as_ref(), buf, offset),
            None => {
                buf.fill(0);
                Ok(())
            }
        }
    }

    /// Block `n`'s bytes from `within` into `buf`, sector by sector as its chunk's bitmap says.
    fn read_partial(
        &self,
        buf: &mut [u8],
        n: u64,
        within: u64,
        data: u64,
        bitmap: u64,
    ) -> io::Result<()> {
        let s = self.sector;
        let first = within / s;
        let last = (within + buf.len() as u64).div_ceil(s);
        // The block's first sector within its chunk's bitmap.
        let base = (n % self.chunk_ratio) * (self.block / s);
        let (b0, b1) = ((base + first) / 8, (base + last).div_ceil(8));
        let mut bits = vec![0u8; (b1 - b0) as usize];
        self.view.read(&mut bits, bitmap + b0)?;
        let bit = |k: u64| {
            let i = base + k - b0 * 8;
            bits[(i / 8) as usize] >> (i % 8) & 1 != 0
        };
        let disk = n * self.block;
        let mut k = first;
        while k < last {
            let here = bit(k);
            let mut end = k + 1;
            while end < last && bit(end) == here {
                end += 1;
            }
            let from = (k * s).max(within);
            let to = (end * s).min(within + buf.len() as u64);
            let dst = &mut buf[(from - within) as usize..(to - within) as usize];
            if here {
                self.view.read(dst, data + from)?;
            } else {
                self.read_parent(dst, disk + from)?;
            }
            k = end;
        }
        Ok(())
    }
}

/// Checks a structure's CRC-32C, stored at `at` and taken with that field zero.
fn checksum_ok(b: &mut [u8], at: usize) -> bool {
    let stored = le32(b, at);
    b[at..at + 4].fill(0);
    let ok = crc32c(b) == stored;
    b[at..at + 4].copy_from_slice(&stored.to_le_bytes());
    ok
}

fn guid_text(g: &[u8; 16]) -> String {
    format!(
        "{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{}",
        le32(g, 0),
        le16(g, 4),
        le16(g, 6),
        g[8],
        g[9],
        g[10..]
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<String>()
    )
}

/// The metadata items uffs reads.
struct Metadata {
    block: u64,
    leave_allocated: bool,
    has_parent: bool,
    disk_size: u64,
    sector: u64,
    /// The parent locator's keys and values.
    locator: Vec<(String, String)>,
}

impl Metadata {
    fn read(view: &FileView, at: u64, len: u64) -> io::Result<Metadata> {
        let mut table = vec![0u8; 64 * KIB as usize];
        if len < 64 * KIB {
            return Err(bad("this VHDX's metadata region is smaller than its table"));
        }
        view.read(&mut table, at)?;
        if &table[..8] != b"metadata" || le16(&table, 10) > 2047 {
            return Err(bad(
                "this VHDX's metadata table has no signature or too many entries",
            ));
        }
        let mut m = Metadata {
            block: 0,
            leave_allocated: false,
            has_parent: false,
            disk_size: 0,
            sector: 0,
            locator: Vec::new(),
        };
        let mut seen = 0u8;
        for i in 0..le16(&table, 10) as usize {
            let e = &table[32 + i * 32..32 + (i + 1) * 32];
            let id: [u8; 16] = e[..16].try_into().unwrap_or([0; 16]);
            let (off, n, flags) = (u64::from(le32(e, 16)), u64::from(le32(e, 20)), le32(e, 24));
            let is_user = flags & 1 != 0;
            let required = flags & 4 != 0;
            if n > MIB || (n > 0 && (off < 64 * KIB || !within(off, n, len))) {
                return Err(bad(format!(
                    "this VHDX's metadata item {} ({n} bytes at {off}) is outside its {len}-byte region",
                    guid_text(&id)
                )));
            }
            let mut item = vec![0u8; n as usize];
            view.read(&mut item, at + off)?;
            let need = |min: usize| {
                if item.len() < min {
                    Err(bad(format!(
                        "this VHDX's metadata item {} is {} bytes, too short",
                        guid_text(&id),
                        item.len()
                    )))
                } else {
                    Ok(())
                }
            };
            match id {
                _ if is_user => {}
                META_FILE_PARAMETERS => {
                    need(8)?;
                    m.block = u64::from(le32(&item, 0));
                    let f = le32(&item, 4);
                    m.leave_allocated = f & 1 != 0;
                    m.has_parent = f & 2 != 0;
                    seen |= 1;
                }
                META_DISK_SIZE => {
                    need(8)?;
                    m.disk_size = le64(&item, 0);
                    seen |= 2;
                }
                META_LOGICAL_SECTOR => {
                    need(4)?;
                    m.sector = u64::from(le32(&item, 0));
                    seen |= 4;
                }
                META_PARENT_LOCATOR => {
                    m.locator = parent_locator(&item)?;
                    seen |= 8;
                }
                META_DISK_ID | META_PHYSICAL_SECTOR => {}
                _ if required => {
                    return Err(bad(format!(
                        "this VHDX has a required metadata item uffs does not know ({})",
                        guid_text(&id)
                    )))
                }
                _ => {}
            }
        }
        if seen & 7 != 7 {
            return Err(bad(
                "this VHDX's metadata lacks its file parameters, its disk size or its logical sector size",
            ));
        }
        if !(MIB..=256 * MIB).contains(&m.block) || !m.block.is_power_of_two() {
            return Err(bad(format!(
                "this VHDX's block size {} is not a power of two from 1 MiB to 256 MiB",
                m.block
            )));
        }
        if m.sector != 512 && m.sector != 4096 {
            return Err(bad(format!(
                "this VHDX's logical sector size {} is neither 512 nor 4096",
                m.sector
            )));
        }
        if m.disk_size == 0
            || m.disk_size > 64 * 1024 * 1024 * MIB
            || !m.disk_size.is_multiple_of(m.sector)
        {
            return Err(bad(format!(
                "this VHDX's disk size {} is not a whole number of sectors up to 64 TiB",
                m.disk_size
            )));
        }
        if m.has_parent && seen & 8 == 0 {
            return Err(bad(
                "this VHDX is a differencing disk without a parent locator",
            ));
        }
        Ok(m)
    }
}

/// The parent locator's key-value pairs (UTF-16LE strings).
fn parent_locator(item: &[u8]) -> io::Result<Vec<(String, String)>> {
    if item.len() < 20 {
        return Err(bad("this VHDX's parent locator is too short"));
    }
    let kind: [u8; 16] = item[..16].try_into().unwrap_or([0; 16]);
    if kind != LOCATOR_VHDX {
        return Err(bad(format!(
            "this VHDX's parent locator is of a type uffs does not know ({})",
            guid_text(&kind)
        )));
    }
    let count = le16(item, 18) as usize;
    let text = |off: u32, n: u16| -> io::Result<String> {
        let (off, n) = (off as usize, n as usize);
        let b = item
            .get(off..off + n)
            .ok_or_else(|| bad("this VHDX's parent locator has a key or value past its end"))?;
        let units: Vec<u16> = b.chunks_exact(2).map(|c| le16(c, 0)).collect();
        Ok(String::from_utf16_lossy(&units))
    };
    let mut pairs = Vec::new();
    for i in 0..count {
        let e = 20 + i * 12;
        if e + 12 > item.len() {
            return Err(bad(
                "this VHDX's parent locator has more entries than it holds",
            ));
        }
        let key = text(le32(item, e), le16(item, e + 8))?;
        let value = text(le32(item, e + 4), le16(item, e + 10))?;
        pairs.push((key, value));
    }
    Ok(pairs)
}

/// A replayed write: its file offset, its data (`None`: zeros) and its length.
type Write = (u64, Option<Box<[u8]>>, u64);

/// One valid log entry.
struct Entry {
    seq: u64,
    len: u64,
    tail: u64,
    flushed: u64,
    last: u64,
    /// (file offset, data or zeros, length) in order.
    writes: Vec<Write>,
}

/// Reads the log entry at `at` of `log`, or `None` when none valid starts there.
fn log_entry(log: &[u8], at: u64, guid: [u8; 16]) -> Option<Entry> {
    let size = log.len() as u64;
    let byte = |k: u64| log[((at + k) % size) as usize];
    let mut head = [0u8; 64];
    for (k, b) in head.iter_mut().enumerate() {
        *b = byte(k as u64);
    }
    let len = u64::from(le32(&head, 8));
    if &head[..4] != b"loge" || len < 4 * KIB || !len.is_multiple_of(4 * KIB) || len > size {
        return None;
    }
    let mut e: Vec<u8> = (0..len).map(byte).collect();
    if !checksum_ok(&mut e, 4) || e[32..48] != guid {
        return None;
    }
    let tail = u64::from(le32(&e, 12));
    let seq = le64(&e, 16);
    let count = u64::from(le32(&e, 24));
    if seq == 0 || !tail.is_multiple_of(4 * KIB) || tail >= size {
        return None;
    }
    let desc_sectors = (64 + 32 * count).div_ceil(4 * KIB);
    let mut data_sector = desc_sectors;
    let mut writes = Vec::new();
    for d in 0..count {
        let p = (64 + 32 * d) as usize;
        let p = e.get(p..p + 32)?;
        let offset = le64(p, 16);
        if le64(p, 24) != seq || !offset.is_multiple_of(4 * KIB) {
            return None;
        }
        match &p[..4] {
            b"zero" => {
                let n = le64(p, 8);
                if !n.is_multiple_of(4 * KIB) {
                    return None;
                }
                writes.push((offset, None, n));
            }
            b"desc" => {
                let s = (data_sector * 4 * KIB) as usize;
                let ds = e.get(s..s + 4 * KIB as usize)?;
                if &ds[..4] != b"data"
                    || u64::from(le32(ds, 4)) != seq >> 32
                    || u64::from(le32(ds, 4092)) != seq & 0xffff_ffff
                {
                    return None;
                }
                let mut sector = ds.to_vec().into_boxed_slice();
                sector[..8].copy_from_slice(&p[8..16]);
                sector[4092..].copy_from_slice(&p[4..8]);
                writes.push((offset, Some(sector), 4 * KIB));
                data_sector += 1;
            }
            _ => return None,
        }
    }
    if data_sector * 4 * KIB > len {
        return None;
    }
    Some(Entry {
        seq,
        len,
        tail,
        flushed: le64(&e, 48),
        last: le64(&e, 56),
        writes,
    })
}

/// Replays the log the header points to into `view`'s overlay (in memory; the file is never written); returns
/// the number of entries replayed.
fn replay_log(view: &mut FileView, header: &[u8], guid: [u8; 16]) -> io::Result<usize> {
    let (log_len, log_at) = (u64::from(le32(header, 68)), le64(header, 72));
    if log_len == 0
        || !log_len.is_multiple_of(MIB)
        || log_len > MAX_LOG
        || log_at < MIB
        || !within(log_at, log_len, view.len)
    {
        return Err(bad(format!(
            "this VHDX has a log to replay, but its log ({log_len} bytes at {log_at}) is not a log it can have"
        )));
    }
    let mut log = vec![0u8; log_len as usize];
    view.read(&mut log, log_at)?;
    // The active sequence: the valid, complete sequence with the highest head sequence number ([MS-VHDX] 2.3.3).
    let mut best: Option<Vec<(u64, Entry)>> = None;
    let mut tail = 0u64;
    let mut steps = 0u64;
    loop {
        steps += 1;
        let mut seq: Vec<(u64, Entry)> = Vec::new();
        let mut head = tail;
        let mut used = 0u64;
        while let Some(e) = log_entry(&log, head, guid) {
            if seq.last().is_some_and(|(_, p)| e.seq != p.seq + 1) || used + e.len > log_len {
                break;
            }
            used += e.len;
            let next = (head + e.len) % log_len;
            seq.push((head, e));
            head = next;
        }
        let valid = seq
            .last()
            .is_some_and(|(_, h)| seq.iter().any(|(at, _)| *at == h.tail));
        if valid {
            let h = seq.last().map_or(0, |(_, h)| h.seq);
            if best
                .as_ref()
                .is_none_or(|b| b.last().is_some_and(|(_, bh)| h > bh.seq))
            {
                let from = seq
                    .iter()
                    .position(|(at, _)| *at == seq.last().map_or(0, |(_, h)| h.tail));
                best = Some(seq.split_off(from.unwrap_or(0)));
            }
        }
        let old = tail;
        tail = if valid {
            head
        } else {
            (tail + 4 * KIB) % log_len
        };
        if tail <= old || steps > log_len / (4 * KIB) + 1 {
            break;
        }
    }
    let Some(active) = best else {
        return Err(bad(
            "this VHDX has a log to replay but no valid log sequence in it, so it cannot be made consistent \
             here (uffs never writes to an image; open it once in Windows or run qemu-img check -r all on a copy)",
        ));
    };
    let head = &active[active.len() - 1].1;
    if view.len < head.flushed {
        return Err(bad(format!(
            "this VHDX is truncated: its log says the file was at least {} bytes, it is {}",
            head.flushed, view.len
        )));
    }
    let mut end = view.len.max(head.last);
    let mut sectors = 0u64;
    for (_, e) in &active {
        for (offset, data, n) in &e.writes {
            sectors += n / (4 * KIB);
            if sectors > MAX_LOG_SECTORS || offset.checked_add(*n).is_none() {
                return Err(bad("this VHDX's log writes more than uffs replays"));
            }
            end = end.max(offset + n);
            match data {
                Some(d) => {
                    view.overlay.insert(*offset, Some(d.clone()));
                }
                None => {
                    for k in 0..n / (4 * KIB) {
                        view.overlay.insert(offset + k * 4 * KIB, None);
                    }
                }
            }
        }
    }
    view.virt_len = end;
    Ok(active.len())
}

impl Image for Vhdx {
    fn len(&self) -> u64 {
        self.len
    }

    fn describe(&self) -> String {
        let blocks = self.len.div_ceil(self.block);
        let present = (0..blocks)
            .filter(|&n| {
                let e = self
                    .bat
                    .get((n + n / self.chunk_ratio) as usize)
                    .copied()
                    .unwrap_or(0);
                matches!(e & 7, FULLY_PRESENT | PARTIALLY_PRESENT)
            })
            .count();
        let size = if self.block >= MIB {
            format!("{} MiB", self.block / MIB)
        } else {
            format!("{} KiB", self.block / KIB)
        };
        let mut s = match self.kind {
            Kind::Fixed => format!("VHDX, fixed: {size} blocks"),
            Kind::Dynamic => format!("VHDX, dynamic: {size} blocks, {present} of {blocks} present"),
            Kind::Differencing => format!(
                "VHDX, differencing: {size} blocks, {present} of {blocks} present, parent {}",
                self.files()
                    .get(1)
                    .map_or(String::new(), |p| p.display().to_string())
            ),
        };
        if self.sector != 512 {
            s += &format!(", {}-byte sectors", self.sector);
        }
        if self.replayed > 0 {
            s += &format!(" (its log of {} entries replayed in memory)", self.replayed);
        }
        s
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut v = vec![self.path.clone()];
        if let Some(p) = &self.parent {
            v.extend(p.files());
        }
        v
    }

    /// Positional reads only: no lock, reads from several threads at once.
    fn read_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        if !within(offset, buf.len() as u64, self.len) {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        while !buf.is_empty() {
            let n = offset / self.block;
            let within = offset % self.block;
            let k = ((self.block - within) as usize).min(buf.len());
            let (now, rest) = buf.split_at_mut(k);
            match self.source(n) {
                From::Zeros => now.fill(0),
                From::Parent => self.read_parent(now, offset)?,
                From::File(at) => self.view.read(now, at + within)?,
                From::Partial { data, bitmap } => {
                    self.read_partial(now, n, within, data, bitmap)?
                }
            }
            buf = rest;
            offset += k as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_are_in_their_binary_form() {
        assert_eq!(
            REGION_BAT,
            [
                0x66, 0x77, 0xC2, 0x2D, 0x23, 0xF6, 0x00, 0x42, 0x9D, 0x64, 0x11, 0x5E, 0x9B, 0xFD,
                0x4A, 0x08
            ]
        );
        assert_eq!(
            guid_text(&REGION_METADATA),
            "8B7CA206-4790-4B9A-B8FE-575F050F886E"
        );
    }

    #[test]
    fn crc32c_of_the_check_string() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn a_parent_locator_reads_its_keys() {
        let mut item = LOCATOR_VHDX.to_vec();
        item.extend([0, 0, 1, 0]);
        let key: Vec<u8> = "relative_path"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let value: Vec<u8> = ".\\base.vhdx"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let (ko, vo) = (32u32, 32 + key.len() as u32);
        item.extend(ko.to_le_bytes());
        item.extend(vo.to_le_bytes());
        item.extend((key.len() as u16).to_le_bytes());
        item.extend((value.len() as u16).to_le_bytes());
        item.extend(&key);
        item.extend(&value);
        assert_eq!(
            parent_locator(&item).unwrap(),
            vec![("relative_path".to_string(), ".\\base.vhdx".to_string())]
        );
        // A value past the item's end is an error, not a panic.
        let n = item.len();
        item.truncate(n - 2);
        assert!(parent_locator(&item).is_err());
    }
}
