//! VMware VMDK images read as the disk they hold. Recognised by content, never the name: a hosted sparse extent
//! by its `KDMV` magic, a descriptor file by its text (`# Disk DescriptorFile`, or a `createType=` line in a
//! small file). Read:
//! - sparse extents (`monolithicSparse`, `twoGbMaxExtentSparse`): a grain directory of grain tables of grains;
//!   grains never written read as zeros, or through the parent;
//! - compressed sparse extents (`streamOptimized`): each grain a 12-byte marker (its sector, its size) then zlib
//!   data; a header whose grain directory is `GD_AT_END` is followed to the footer, a copy of the header 1024
//!   bytes before the file's end;
//! - flat extents (`monolithicFlat`, `twoGbMaxExtentFlat`, `vmfs`): the disk's bytes at an offset of a file;
//! - zero extents;
//! - descriptors listing several extents (names relative to the descriptor's folder), each covering its count
//!   of sectors in order;
//! - differencing disks (a `parentCID` and a `parentFileNameHint`): grains not written read through the parent,
//!   which must still have the content it had (its `CID` is the child's `parentCID`).
//!
//! ESX's COWD (`vmfsSparse`) and seSparse extents are refused with a message. The redundant grain directory is
//! not read. Formats: VMware's "Virtual Disk Format 5.0"; libyal's libvmdk notes. Every number is little-endian.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::bytes::{le16, le32, le64};
use super::{bad, within, Image};

const MAGIC: &[u8; 4] = b"KDMV";
/// ESX's older sparse extents (`vmfsSparse`), which uffs does not read.
const COWD_MAGIC: &[u8; 4] = b"COWD";
const SECTOR: u64 = 512;
/// A stream-optimized header's grain directory offset when the directory is found through the footer.
const GD_AT_END: u64 = u64::MAX;
/// Header flags: the line-end bytes are valid; grains are compressed; grains and tables have markers.
const FLAG_NEWLINE_TEST: u32 = 1;
const FLAG_COMPRESSED: u32 = 1 << 16;
const FLAG_MARKERS: u32 = 1 << 17;
const DEFLATE: u16 = 1;
/// Marker type of the footer (the header's copy at the end of a stream-optimized extent).
const MARKER_FOOTER: u32 = 3;
/// The largest descriptor file read (real ones are a few hundred bytes to a few KiB).
const MAX_DESCRIPTOR: u64 = 64 << 10;
/// The largest grain accepted: 64 MiB (VMware writes 64 KiB; qemu accepts up to this).
const MAX_GRAIN_SECTORS: u64 = 1 << 17;
/// The most entries a grain table may have (VMware writes 512).
const MAX_GTES: u32 = 1 << 16;
/// A `parentCID` saying there is no parent.
const NO_PARENT: u32 = u32::MAX;
/// Grain table entries (and directory entries) with a meaning: never written; written as zeros.
const GTE_UNALLOCATED: u32 = 0;
const GTE_ZEROED: u32 = 1;
/// In the grain directory as held here: a table never written, a table of zeroed grains.
const GD_NONE: u32 = u32::MAX;
const GD_ZEROED: u32 = u32::MAX - 1;

/// An open VMDK: its extents in order, each covering its part of the disk, and the parent it reads through.
#[derive(Debug)]
pub struct Vmdk {
    /// The file named: a descriptor, or a sparse extent with its descriptor inside.
    path: PathBuf,
    create_type: String,
    len: u64,
    extents: Vec<Extent>,
    parent: Option<Box<dyn Image>>,
}

#[derive(Debug)]
struct Extent {
    /// Where it starts on the disk, and its bytes.
    start: u64,
    len: u64,
    /// Its file (none for a zero extent).
    path: Option<PathBuf>,
    data: Data,
}

#[derive(Debug)]
enum Data {
    /// The extent's bytes from `offset` of `file`.
    Flat {
        file: File,
        offset: u64,
    },
    /// Zeros.
    Zero,
    Sparse(Sparse),
}

/// A hosted sparse extent: grains of `grain` bytes found through a directory of tables.
#[derive(Debug)]
struct Sparse {
    file: File,
    path: PathBuf,
    file_len: u64,
    /// The extent's bytes (the header's capacity).
    capacity: u64,
    grain: u64,
    /// Entries per grain table.
    gtes: u64,
    /// Per grain table: its index in `tables`, or [`GD_NONE`], [`GD_ZEROED`].
    directory: Vec<u32>,
    /// The grain tables written, one after the other: per grain its sector, or [`GTE_UNALLOCATED`],
    /// [`GTE_ZEROED`].
    tables: Vec<u32>,
    compressed: bool,
    markers: bool,
    /// The last grain decompressed, for reads of small pieces of one grain in a row. The lock is held only to
    /// look or to store, never while reading or decompressing.
    last: Mutex<Option<(u64, Arc<Vec<u8>>)>>,
}

/// Where a grain is.
enum Grain {
    /// Never written: the parent's, or zeros.
    Unallocated,
    Zeroed,
    At(u64),
}

/// What a descriptor says.
#[derive(Debug, Default)]
struct Descriptor {
    create_type: String,
    cid: Option<u32>,
    parent_cid: Option<u32>,
    parent_hint: Option<String>,
    extents: Vec<ExtentLine>,
}

/// One extent line: `RW 4192256 SPARSE "disk-s001.vmdk"`, `RW 49152 FLAT "disk-flat.vmdk" 0`, `RW 100 ZERO`.
#[derive(Debug)]
struct ExtentLine {
    sectors: u64,
    kind: String,
    file: Option<String>,
    offset: u64,
}

impl Vmdk {
    /// The VMDK `path` (open as `file`, `file_len` bytes) is, or `None` when it is not one. `chain` holds the
    /// images that read through this one (for its parent).
    pub fn open(
        path: &Path,
        file: &File,
        file_len: u64,
        chain: &[PathBuf],
    ) -> io::Result<Option<Vmdk>> {
        let mut magic = [0u8; 4];
        if file_len < 4 {
            return Ok(None);
        }
        crate::read::read_file_at(file, &mut magic, 0)?;
        let (descriptor, extents) = if &magic == MAGIC {
            let sparse = Sparse::open(path, file.try_clone()?, file_len)?;
            let descriptor = match sparse.embedded_descriptor()? {
                Some(text) => parse_descriptor(&text)?,
                None => Descriptor::default(),
            };
            let extent = Extent {
                start: 0,
                len: sparse.capacity,
                path: Some(path.to_path_buf()),
                data: Data::Sparse(sparse),
            };
            (descriptor, vec![extent])
        } else if &magic == COWD_MAGIC {
            return Err(bad(
                "this is an ESX COWD sparse extent (vmfsSparse): uffs does not read those; convert it first \
                 (qemu-img convert -O raw DISK.vmdk disk.img)",
            ));
        } else {
            let Some(text) = descriptor_text(file, file_len)? else {
                return Ok(None);
            };
            let descriptor = parse_descriptor(&text)?;
            let extents = open_extents(path, &descriptor)?;
            (descriptor, extents)
        };
        let len = extents.last().map_or(0, |e| e.start + e.len);
        let parent = match (descriptor.parent_cid, &descriptor.parent_hint) {
            (None | Some(NO_PARENT), _) => None,
            (Some(_), None) => return Err(bad(
                "this differencing VMDK names no parent (its descriptor has a parentCID but no \
                     parentFileNameHint)",
            )),
            (Some(want), Some(hint)) => {
                let parent_path = beside(path, hint);
                let parent = super::open_parent(path, &parent_path, chain)?;
                if let Some(cid) = cid_of(&parent_path) {
                    if cid != want {
                        return Err(bad(format!(
                            "{}'s parent {} has changed since the differencing disk was made (its CID is \
                             {cid:08x}, the child expects {want:08x}): the child cannot be read through it",
                            path.display(),
                            parent_path.display()
                        )));
                    }
                }
                Some(parent)
            }
        };
        Ok(Some(Vmdk {
            path: path.to_path_buf(),
            create_type: if descriptor.create_type.is_empty() {
                "sparse extent".into()
            } else {
                descriptor.create_type
            },
            len,
            extents,
            parent,
        }))
    }

    /// Fills `buf` from `offset` of the parent (zeros past its end, or without one).
    fn read_parent(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let Some(parent) = &self.parent else {
            buf.fill(0);
            return Ok(());
        };
        let n = parent.len().saturating_sub(offset).min(buf.len() as u64) as usize;
        let (there, past) = buf.split_at_mut(n);
        if n > 0 {
            parent.read_at(there, offset)?;
        }
        past.fill(0);
        Ok(())
    }
}

/// The descriptor `file` holds, when it is a descriptor file: small, text, and saying so.
fn descriptor_text(file: &File, file_len: u64) -> io::Result<Option<String>> {
    if file_len > MAX_DESCRIPTOR {
        return Ok(None);
    }
    let mut raw = vec![0u8; file_len as usize];
    crate::read::read_file_at(file, &mut raw, 0)?;
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    let Ok(text) = std::str::from_utf8(&raw[..end]) else {
        return Ok(None);
    };
    let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    let is = start.starts_with("# Disk DescriptorFile")
        || text
            .lines()
            .any(|l| l.trim_start().starts_with("createType"));
    Ok(is.then(|| text.to_string()))
}

/// Reads a descriptor's header values and extent lines; the disk database is skipped.
fn parse_descriptor(text: &str) -> io::Result<Descriptor> {
    let mut d = Descriptor::default();
    let hex = |key: &str, v: &str| {
        u32::from_str_radix(v, 16).map_err(|_| {
            bad(format!(
                "this VMDK descriptor's {key} {v:?} is not a hexadecimal number"
            ))
        })
    };
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let first = line.split_whitespace().next().unwrap_or("");
        if matches!(first, "RW" | "RDONLY" | "NOACCESS") {
            d.extents.push(parse_extent(line)?);
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"');
        match key.trim() {
            "createType" => d.create_type = value.to_string(),
            // Only compared with a child's parentCID: one that is not a number is none.
            "CID" => d.cid = u32::from_str_radix(value, 16).ok(),
            "parentCID" => d.parent_cid = Some(hex("parentCID", value)?),
            "parentFileNameHint" => d.parent_hint = Some(value.to_string()),
            _ => {}
        }
    }
    Ok(d)
}

fn parse_extent(line: &str) -> io::Result<ExtentLine> {
    let damaged = || {
        bad(format!(
            "this VMDK descriptor's extent line {line:?} is not one it can have"
        ))
    };
    // The first word of `s` and what follows it.
    let word = |s: &str| -> (String, String) {
        let s = s.trim_start();
        let (w, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
        (w.to_string(), rest.trim_start().to_string())
    };
    let (_access, rest) = word(line);
    let (sectors, rest) = word(&rest);
    let sectors: u64 = sectors.parse().map_err(|_| damaged())?;
    let (kind, rest) = word(&rest);
    if kind.is_empty() {
        return Err(damaged());
    }
    let (file, rest) = match rest.strip_prefix('"') {
        Some(quoted) => {
            let (name, after) = quoted.split_once('"').ok_or_else(damaged)?;
            (Some(name.to_string()), after.to_string())
        }
        None if rest.is_empty() => (None, String::new()),
        None => {
            let (name, after) = word(&rest);
            (Some(name), after)
        }
    };
    let offset = match rest.split_whitespace().next() {
        Some(o) => o.parse().map_err(|_| damaged())?,
        None => 0,
    };
    Ok(ExtentLine {
        sectors,
        kind,
        file,
        offset,
    })
}

/// `name` (from a descriptor) as a path: relative names are relative to the descriptor's folder.
fn beside(descriptor: &Path, name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    descriptor
        .parent()
        .map_or_else(|| p.to_path_buf(), |d| d.join(p))
}

/// The extents a descriptor file lists, opened and placed one after the other.
fn open_extents(path: &Path, d: &Descriptor) -> io::Result<Vec<Extent>> {
    if d.extents.is_empty() {
        return Err(bad("this VMDK descriptor lists no extents"));
    }
    let mut extents = Vec::with_capacity(d.extents.len());
    let mut start = 0u64;
    for line in &d.extents {
        let len = line
            .sectors
            .checked_mul(SECTOR)
            .filter(|l| start.checked_add(*l).is_some())
            .ok_or_else(|| {
                bad(format!(
                    "this VMDK's extents add up past 2^64 bytes ({line:?})"
                ))
            })?;
        if len == 0 {
            continue;
        }
        let open = |name: &Option<String>| -> io::Result<(PathBuf, File, u64)> {
            let name = name.as_deref().ok_or_else(|| {
                bad(format!(
                    "this VMDK descriptor's {} extent names no file",
                    line.kind
                ))
            })?;
            let p = beside(path, name);
            let file = File::open(&p).map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("its extent file {} is missing", p.display()),
                ),
                _ => io::Error::new(e.kind(), format!("its extent file {}: {e}", p.display())),
            })?;
            let file_len = crate::read::byte_len(&file)?;
            Ok((p, file, file_len))
        };
        let (p, data) = match line.kind.as_str() {
            "ZERO" => (None, Data::Zero),
            "FLAT" | "VMFS" => {
                let (p, file, file_len) = open(&line.file)?;
                let offset = line.offset.saturating_mul(SECTOR);
                if !within(offset, len, file_len) {
                    return Err(bad(format!(
                        "its flat extent {} holds {file_len} bytes, fewer than the {len} from byte {offset} \
                         the descriptor gives it (truncated?)",
                        p.display()
                    )));
                }
                (Some(p), Data::Flat { file, offset })
            }
            "SPARSE" => {
                let (p, file, file_len) = open(&line.file)?;
                let mut magic = [0u8; 4];
                if file_len >= 4 {
                    crate::read::read_file_at(&file, &mut magic, 0)?;
                }
                if &magic != MAGIC {
                    return Err(bad(format!(
                        "its sparse extent {} is not a VMDK sparse extent (no KDMV magic)",
                        p.display()
                    )));
                }
                let sparse = Sparse::open(&p, file, file_len)?;
                if sparse.capacity < len {
                    return Err(bad(format!(
                        "its sparse extent {} holds {} sectors, fewer than the {} the descriptor gives it",
                        p.display(),
                        sparse.capacity / SECTOR,
                        line.sectors
                    )));
                }
                (Some(p), Data::Sparse(sparse))
            }
            other => {
                return Err(bad(format!(
                    "this VMDK has a {other} extent: uffs reads FLAT, SPARSE and ZERO extents only; convert it \
                     first (qemu-img convert -O raw DISK.vmdk disk.img)"
                )))
            }
        };
        extents.push(Extent {
            start,
            len,
            path: p,
            data,
        });
        start += len;
    }
    Ok(extents)
}

/// The CID of the VMDK at `path` (a descriptor file or a sparse extent with one inside); `None` when it is not a
/// VMDK or says none.
fn cid_of(path: &Path) -> Option<u32> {
    let file = File::open(path).ok()?;
    let len = crate::read::byte_len(&file).ok()?;
    let mut magic = [0u8; 4];
    crate::read::read_file_at(&file, &mut magic, 0).ok()?;
    let text = if &magic == MAGIC {
        Sparse::open(path, file, len)
            .ok()?
            .embedded_descriptor()
            .ok()??
    } else {
        descriptor_text(&file, len).ok()??
    };
    parse_descriptor(&text).ok()?.cid
}

impl Sparse {
    /// The sparse extent `path` (its magic checked): its header (or footer), grain directory and tables.
    fn open(path: &Path, file: File, file_len: u64) -> io::Result<Sparse> {
        let name = path.display();
        if file_len < SECTOR {
            return Err(bad(format!(
                "the sparse extent {name} is shorter than its header"
            )));
        }
        let mut header = [0u8; 512];
        crate::read::read_file_at(&file, &mut header, 0)?;
        if le64(&header, 56) == GD_AT_END {
            // A stream-optimized extent written in one pass: the footer marker, the footer (the header with the
            // grain directory's place), the end-of-stream marker.
            let at = file_len
                .checked_sub(1024)
                .filter(|&a| a >= SECTOR)
                .ok_or_else(|| {
                    bad(format!(
                        "the stream-optimized extent {name} ends before its footer"
                    ))
                })?;
            let mut marker = [0u8; 512];
            crate::read::read_file_at(&file, &mut marker, at - SECTOR)?;
            crate::read::read_file_at(&file, &mut header, at)?;
            if le32(&marker, 8) != 0 || le32(&marker, 12) != MARKER_FOOTER || &header[..4] != MAGIC
            {
                return Err(bad(format!(
                    "the stream-optimized extent {name} has its grain directory at its end, but no footer \
                     there (truncated?)"
                )));
            }
            if le64(&header, 56) == GD_AT_END {
                return Err(bad(format!(
                    "the stream-optimized extent {name}'s footer does not say where its grain directory is"
                )));
            }
        }
        let version = le32(&header, 4);
        let flags = le32(&header, 8);
        let capacity_sectors = le64(&header, 12);
        let grain_sectors = le64(&header, 20);
        let gtes = le32(&header, 44);
        let gd_sector = le64(&header, 56);
        let compression = le16(&header, 77);
        if !(1..=3).contains(&version) {
            return Err(bad(format!(
                "the sparse extent {name} is of version {version}; uffs reads versions 1 to 3"
            )));
        }
        if flags & FLAG_NEWLINE_TEST != 0 && header[73..77] != *b"\n \r\n" {
            return Err(bad(format!(
                "the sparse extent {name}'s line-end test bytes are changed: it was copied as text, which \
                 damages it"
            )));
        }
        if !grain_sectors.is_power_of_two()
            || grain_sectors > MAX_GRAIN_SECTORS
            || gtes == 0
            || gtes > MAX_GTES
        {
            return Err(bad(format!(
                "the sparse extent {name}'s grains ({grain_sectors} sectors, {gtes} per table) are not a \
                 layout it can have"
            )));
        }
        let compressed = flags & FLAG_COMPRESSED != 0;
        if compressed && compression != DEFLATE {
            return Err(bad(format!(
                "the sparse extent {name}'s grains are compressed with method {compression}, not deflate"
            )));
        }
        let grain = grain_sectors * SECTOR;
        let capacity = capacity_sectors.checked_mul(SECTOR).ok_or_else(|| {
            bad(format!(
                "the sparse extent {name}'s capacity is past 2^64 bytes"
            ))
        })?;
        let gtes = u64::from(gtes);
        let grains = capacity.div_ceil(grain);
        let gd_entries = grains.div_ceil(gtes);
        let gd_at = gd_sector.saturating_mul(SECTOR);
        let gd_bytes = gd_entries * 4;
        if gd_sector == 0 || !within(gd_at, gd_bytes, file_len) {
            return Err(bad(format!(
                "the sparse extent {name}'s grain directory ({gd_entries} entries at sector {gd_sector}) is \
                 past its end ({file_len} bytes): truncated or damaged"
            )));
        }
        let mut raw = vec![0u8; gd_bytes as usize];
        crate::read::read_file_at(&file, &mut raw, gd_at)?;
        let gt_bytes = gtes * 4;
        let mut written = 0u64;
        for (i, c) in raw.chunks_exact(4).enumerate() {
            let sector = le32(c, 0);
            if sector == GTE_UNALLOCATED || sector == GTE_ZEROED {
                continue;
            }
            if !within(u64::from(sector) * SECTOR, gt_bytes, file_len) {
                return Err(bad(format!(
                    "the sparse extent {name}'s grain table {i} at sector {sector} is past its end \
                     ({file_len} bytes): truncated or damaged"
                )));
            }
            written += 1;
        }
        // Tables of a sound file do not overlap, so all of them fit in it: nothing larger is allocated.
        if written * gt_bytes > file_len {
            return Err(bad(format!(
                "the sparse extent {name}'s {written} grain tables would be larger than the file: its grain \
                 directory is damaged"
            )));
        }
        let mut directory = Vec::with_capacity(gd_entries as usize);
        let mut tables = Vec::with_capacity((written * gtes) as usize);
        let mut table = vec![0u8; gt_bytes as usize];
        for c in raw.chunks_exact(4) {
            match le32(c, 0) {
                GTE_UNALLOCATED => directory.push(GD_NONE),
                GTE_ZEROED => directory.push(GD_ZEROED),
                sector => {
                    crate::read::read_file_at(&file, &mut table, u64::from(sector) * SECTOR)?;
                    directory.push((tables.len() as u64 / gtes) as u32);
                    tables.extend(table.chunks_exact(4).map(|c| le32(c, 0)));
                }
            }
        }
        let sparse = Sparse {
            file,
            path: path.to_path_buf(),
            file_len,
            capacity,
            grain,
            gtes,
            directory,
            tables,
            compressed,
            markers: flags & FLAG_MARKERS != 0,
            last: Mutex::new(None),
        };
        // Every grain written must start inside the file (and an uncompressed one end there).
        for (g, at) in sparse.written_grains() {
            let need = if compressed {
                1
            } else {
                grain.min(capacity - g * grain)
            };
            if !within(at, need, file_len) {
                return Err(sparse.past_end(g, at));
            }
        }
        Ok(sparse)
    }

    fn past_end(&self, g: u64, at: u64) -> io::Error {
        bad(format!(
            "the sparse extent {}'s grain {g} is at byte {at}, past its end ({} bytes): truncated or damaged",
            self.path.display(),
            self.file_len
        ))
    }

    /// The descriptor inside the extent, when it has one (bounded by [`MAX_DESCRIPTOR`] and the file).
    fn embedded_descriptor(&self) -> io::Result<Option<String>> {
        let mut header = [0u8; 512];
        crate::read::read_file_at(&self.file, &mut header, 0)?;
        let (at, sectors) = (le64(&header, 28), le64(&header, 36));
        if at == 0 || sectors == 0 {
            return Ok(None);
        }
        let bytes = sectors.saturating_mul(SECTOR).min(MAX_DESCRIPTOR);
        let at = at.saturating_mul(SECTOR);
        if !within(at, bytes, self.file_len) {
            return Err(bad(format!(
                "the sparse extent {}'s descriptor (sector {}) is past its end",
                self.path.display(),
                at / SECTOR
            )));
        }
        let mut raw = vec![0u8; bytes as usize];
        crate::read::read_file_at(&self.file, &mut raw, at)?;
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        Ok(Some(String::from_utf8_lossy(&raw[..end]).into_owned()))
    }

    /// Where grain `g` is.
    fn grain_at(&self, g: u64) -> Grain {
        let table = match self.directory.get((g / self.gtes) as usize) {
            None | Some(&GD_NONE) => return Grain::Unallocated,
            Some(&GD_ZEROED) => return Grain::Zeroed,
            Some(&t) => u64::from(t),
        };
        match self.tables[(table * self.gtes + g % self.gtes) as usize] {
            GTE_UNALLOCATED => Grain::Unallocated,
            GTE_ZEROED => Grain::Zeroed,
            sector => Grain::At(u64::from(sector) * SECTOR),
        }
    }

    /// The grains written, each with the byte its data (or marker) is at: walks the tables written only.
    fn written_grains(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let grains = self.capacity.div_ceil(self.grain);
        self.directory
            .iter()
            .enumerate()
            .filter(|&(_, &t)| t != GD_NONE && t != GD_ZEROED)
            .flat_map(move |(i, &t)| {
                let first = i as u64 * self.gtes;
                let table =
                    &self.tables[(u64::from(t) * self.gtes) as usize..][..self.gtes as usize];
                table
                    .iter()
                    .enumerate()
                    .map(move |(j, &e)| (first + j as u64, e))
                    .filter(move |&(g, e)| g < grains && e != GTE_UNALLOCATED && e != GTE_ZEROED)
                    .map(|(g, e)| (g, u64::from(e) * SECTOR))
            })
    }

    /// Grains written and grains in all.
    fn written(&self) -> (u64, u64) {
        (
            self.written_grains().count() as u64,
            self.capacity.div_ceil(self.grain),
        )
    }

    /// Fills `buf` from `offset` of the extent; grains never written are filled by `unallocated` (with the
    /// extent's offset).
    fn read(
        &self,
        mut buf: &mut [u8],
        mut offset: u64,
        unallocated: &dyn Fn(&mut [u8], u64) -> io::Result<()>,
    ) -> io::Result<()> {
        while !buf.is_empty() {
            let g = offset / self.grain;
            let within_grain = offset % self.grain;
            let mut n = ((self.grain - within_grain) as usize).min(buf.len());
            let place = self.grain_at(g);
            if let (Grain::At(at), false) = (&place, self.compressed) {
                // The grains stored right after it in the file: one read for them all.
                let mut next = g + 1;
                while n < buf.len() {
                    match self.grain_at(next) {
                        Grain::At(a) if a == at + (next - g) * self.grain => {
                            n = (n + self.grain as usize).min(buf.len());
                            next += 1;
                        }
                        _ => break,
                    }
                }
            }
            let (now, rest) = buf.split_at_mut(n);
            match place {
                Grain::Unallocated => unallocated(now, offset)?,
                Grain::Zeroed => now.fill(0),
                Grain::At(at) if self.compressed => {
                    let data = self.decompressed(g, at)?;
                    let from = within_grain as usize;
                    let have = data.len().saturating_sub(from).min(n);
                    now[..have].copy_from_slice(&data[from..from + have]);
                    now[have..].fill(0);
                }
                Grain::At(at) => {
                    let at = at + within_grain;
                    if !within(at, n as u64, self.file_len) {
                        return Err(self.past_end(g, at));
                    }
                    crate::read::read_file_at(&self.file, now, at)?;
                }
            }
            buf = rest;
            offset += n as u64;
        }
        Ok(())
    }

    /// Compressed grain `g`, whose marker is at byte `at`, decompressed (once: the last one is kept).
    fn decompressed(&self, g: u64, at: u64) -> io::Result<Arc<Vec<u8>>> {
        if let Some((last, data)) = &*self.last.lock().unwrap_or_else(|e| e.into_inner()) {
            if *last == g {
                return Ok(data.clone());
            }
        }
        let name = self.path.display();
        let damaged = |what: String| {
            bad(format!(
                "the sparse extent {name}'s compressed grain {g} {what}"
            ))
        };
        // The compressed data: after a marker {sector, size}, or (without markers) up to a bound.
        let most = 2 * self.grain + 4096;
        let (data_at, size) = if self.markers {
            let mut marker = [0u8; 12];
            if !within(at, 12, self.file_len) {
                return Err(self.past_end(g, at));
            }
            crate::read::read_file_at(&self.file, &mut marker, at)?;
            let (lba, size) = (le64(&marker, 0), u64::from(le32(&marker, 8)));
            let want = g * (self.grain / SECTOR);
            if lba != want {
                return Err(damaged(format!(
                    "(at byte {at}) says it is of sector {lba}, not {want}: the extent is damaged"
                )));
            }
            if size == 0 || size > most || !within(at + 12, size, self.file_len) {
                return Err(damaged(format!(
                    "(at byte {at}) has {size} bytes of data, past the file's end or more than a grain can \
                     need: the extent is truncated or damaged"
                )));
            }
            (at + 12, size)
        } else {
            (at, most.min(self.file_len - at))
        };
        let mut input = vec![0u8; size as usize];
        crate::read::read_file_at(&self.file, &mut input, data_at)?;
        let mut out = vec![0u8; self.grain as usize];
        let mut z = flate2::Decompress::new(true);
        z.decompress(&input, &mut out, flate2::FlushDecompress::Finish)
            .map_err(|e| damaged(format!("(at byte {at}) does not decompress: {e}")))?;
        let need = self.grain.min(self.capacity - g * self.grain);
        if z.total_out() < need {
            return Err(damaged(format!(
                "(at byte {at}) decompresses to {} bytes, short of {need}: the extent is damaged",
                z.total_out()
            )));
        }
        let out = Arc::new(out);
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((g, out.clone()));
        Ok(out)
    }
}

impl Image for Vmdk {
    fn len(&self) -> u64 {
        self.len
    }

    fn describe(&self) -> String {
        let mut s = format!("VMDK {}: ", self.create_type);
        let sparse: Vec<&Sparse> = self
            .extents
            .iter()
            .filter_map(|e| match &e.data {
                Data::Sparse(s) => Some(s),
                _ => None,
            })
            .collect();
        if let Some(first) = sparse.first() {
            let (written, all) = sparse.iter().fold((0, 0), |(w, a), s| {
                let (sw, sa) = s.written();
                (w + sw, a + sa)
            });
            s += &format!(
                "{} KiB {}grains ({written} of {all} written), ",
                first.grain / 1024,
                if first.compressed { "compressed " } else { "" }
            );
        }
        let n = self.extents.len();
        s += &format!("{n} extent{}", if n == 1 { "" } else { "s" });
        if let Some(p) = &self.parent {
            if let Some(f) = p.files().first() {
                s += &format!("; differencing, reads through {}", f.display());
            }
        }
        s
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.path.clone()];
        for e in &self.extents {
            if let Some(p) = &e.path {
                if !files.contains(p) {
                    files.push(p.clone());
                }
            }
        }
        if let Some(parent) = &self.parent {
            files.extend(parent.files());
        }
        files
    }

    /// Positional reads only, and no lock held while reading or decompressing: reads from several threads at
    /// once.
    fn read_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let mut i = self
            .extents
            .partition_point(|e| e.start <= offset)
            .saturating_sub(1);
        while !buf.is_empty() {
            let e = self
                .extents
                .get(i)
                .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
            let within_extent = offset - e.start;
            let n = ((e.len - within_extent) as usize).min(buf.len());
            let (now, rest) = buf.split_at_mut(n);
            match &e.data {
                Data::Flat { file, offset: at } => {
                    crate::read::read_file_at(file, now, at + within_extent)?
                }
                Data::Zero => now.fill(0),
                Data::Sparse(s) => {
                    s.read(now, within_extent, &|b, o| self.read_parent(b, e.start + o))?
                }
            }
            buf = rest;
            offset += n as u64;
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_read() {
        let d = parse_descriptor(
            "# Disk DescriptorFile\r\nversion=1\r\nCID=94b7f38d\r\nparentCID=0a0B0c0d\r\n\
             createType=\"twoGbMaxExtentSparse\"\r\nparentFileNameHint=\"../base disk.vmdk\"\r\n\r\n\
             # Extent description\r\nRW  4192256\tSPARSE \"disk s001.vmdk\"\r\nRDONLY 100 FLAT \"f.vmdk\" 2048\r\n\
             NOACCESS 7 ZERO\r\n\r\n#DDB\r\nddb.adapterType = \"ide\"\r\n",
        )
        .unwrap();
        assert_eq!(d.create_type, "twoGbMaxExtentSparse");
        assert_eq!(d.cid, Some(0x94b7_f38d));
        assert_eq!(d.parent_cid, Some(0x0a0b_0c0d));
        assert_eq!(d.parent_hint.as_deref(), Some("../base disk.vmdk"));
        let e: Vec<_> = d
            .extents
            .iter()
            .map(|e| (e.sectors, e.kind.as_str(), e.file.as_deref(), e.offset))
            .collect();
        assert_eq!(
            e,
            [
                (4_192_256, "SPARSE", Some("disk s001.vmdk"), 0),
                (100, "FLAT", Some("f.vmdk"), 2048),
                (7, "ZERO", None, 0)
            ]
        );
        for bad_line in [
            "RW x SPARSE \"a\"",
            "RW 10",
            "RW 10 FLAT \"a",
            "RW 10 FLAT \"a\" z",
        ] {
            assert!(parse_descriptor(bad_line).is_err(), "{bad_line}");
        }
        assert!(parse_descriptor("parentCID=xyz").is_err());
        assert_eq!(parse_descriptor("CID=xyz").unwrap().cid, None);
    }

    /// A sparse extent of five 4 KiB grains, four to a table: 0 and 1 written (one after the other in the file),
    /// 2 written as zeros, 3 never written, 4 written. Compressed: each grain a marker and zlib data.
    fn extent(compressed: bool) -> (Vec<u8>, Vec<u8>) {
        let grain = 4096usize;
        let disk: Vec<u8> = (0..5 * grain)
            .map(|i| match i / grain {
                2 | 3 => 0,
                g => (i * 7 + g * 31 + i / 251) as u8,
            })
            .collect();
        let mut f = vec![0u8; 4 * 512];
        f[..4].copy_from_slice(MAGIC);
        f[4..8].copy_from_slice(&1u32.to_le_bytes());
        let flags = if compressed {
            FLAG_COMPRESSED | FLAG_MARKERS
        } else {
            0
        };
        f[8..12].copy_from_slice(&(flags | FLAG_NEWLINE_TEST).to_le_bytes());
        f[12..20].copy_from_slice(&40u64.to_le_bytes());
        f[20..28].copy_from_slice(&8u64.to_le_bytes());
        f[44..48].copy_from_slice(&4u32.to_le_bytes());
        f[56..64].copy_from_slice(&1u64.to_le_bytes());
        f[73..77].copy_from_slice(b"\n \r\n");
        f[77..79].copy_from_slice(&DEFLATE.to_le_bytes());
        // The directory at sector 1: tables at sectors 2 and 3.
        f[512..516].copy_from_slice(&2u32.to_le_bytes());
        f[516..520].copy_from_slice(&3u32.to_le_bytes());
        let gte = |g: usize, sector: u32, f: &mut Vec<u8>| {
            let at = if g < 4 {
                1024 + g * 4
            } else {
                1536 + (g - 4) * 4
            };
            f[at..at + 4].copy_from_slice(&sector.to_le_bytes());
        };
        gte(2, GTE_ZEROED, &mut f);
        for g in [0, 1, 4] {
            let sector = (f.len() / 512) as u32;
            gte(g, sector, &mut f);
            let data = &disk[g * grain..][..grain];
            if compressed {
                let mut z = flate2::Compress::new(flate2::Compression::default(), true);
                let mut out = Vec::with_capacity(2 * grain);
                z.compress_vec(data, &mut out, flate2::FlushCompress::Finish)
                    .unwrap();
                f.extend_from_slice(&((g * 8) as u64).to_le_bytes());
                f.extend_from_slice(&(out.len() as u32).to_le_bytes());
                f.extend_from_slice(&out);
                f.resize(f.len().div_ceil(512) * 512, 0);
            } else {
                f.extend_from_slice(data);
            }
        }
        (f, disk)
    }

    fn open_bytes(name: &str, bytes: &[u8]) -> io::Result<Option<Vmdk>> {
        let p = std::env::temp_dir().join(format!("uffs-vmdk-{name}-{}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        let f = File::open(&p).unwrap();
        let v = Vmdk::open(&p, &f, bytes.len() as u64, &[]);
        let _ = std::fs::remove_file(&p);
        v
    }

    #[test]
    fn sparse_extents_read_as_their_disk() {
        for compressed in [false, true] {
            let (file, disk) = extent(compressed);
            let v = open_bytes("sparse", &file).unwrap().unwrap();
            assert_eq!(v.len(), disk.len() as u64);
            assert!(
                v.describe().contains("(3 of 5 written), 1 extent"),
                "{}",
                v.describe()
            );
            for (at, n) in [
                (0, disk.len()),
                (4000, 200),
                (4096, 8192),
                (8191, 4098),
                (20479, 1),
            ] {
                let mut buf = vec![0xeeu8; n];
                v.read_at(&mut buf, at as u64).unwrap();
                assert!(buf == disk[at..at + n], "{compressed} {at}+{n}");
            }
            assert!(v.read_at(&mut [0u8; 2], disk.len() as u64 - 1).is_err());
        }
    }

    #[test]
    fn damaged_sparse_extents_are_errors() {
        let (good, _) = extent(false);
        let (stream, _) = extent(true);
        let damaged = |bytes: &[u8], at: usize, value: &[u8]| {
            let mut b = bytes.to_vec();
            b[at..at + value.len()].copy_from_slice(value);
            b
        };
        for (bytes, says) in [
            (good[..good.len() - 100].to_vec(), "past its end"),
            (
                damaged(&good, 56, &(1u64 << 50).to_le_bytes()),
                "grain directory",
            ),
            (
                damaged(&good, 512, &u32::MAX.to_le_bytes()),
                "grain table 0",
            ),
            (damaged(&good, 20, &3u64.to_le_bytes()), "layout"),
            (damaged(&good, 73, b"\r\n"), "copied as text"),
            (damaged(&good, 4, &4u32.to_le_bytes()), "version 4"),
            (damaged(&stream, 77, &2u16.to_le_bytes()), "not deflate"),
            (damaged(&good, 56, &GD_AT_END.to_le_bytes()), "no footer"),
        ] {
            let e = open_bytes("damaged", &bytes).unwrap_err();
            assert!(e.to_string().contains(says), "{says}: {e}");
        }
        // Grain 0's data made an invalid deflate block; its marker's sector changed.
        let v = open_bytes("inflate", &damaged(&stream, 4 * 512 + 14, &[0xff; 8]))
            .unwrap()
            .unwrap();
        let e = v.read_at(&mut [0u8; 512], 0).unwrap_err();
        assert!(e.to_string().contains("does not decompress"), "{e}");
        let v = open_bytes("lba", &damaged(&stream, 4 * 512, &[9]))
            .unwrap()
            .unwrap();
        let e = v.read_at(&mut [0u8; 512], 0).unwrap_err();
        assert!(e.to_string().contains("says it is of sector 9"), "{e}");
    }

    #[test]
    fn descriptor_files_are_told_from_other_files() {
        let dir = std::env::temp_dir().join(format!("uffs-vmdk-desc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f");
        for (content, is) in [
            (&b"# Disk DescriptorFile\nversion=1\n"[..], true),
            (b"\n  createType=\"monolithicFlat\"\n", true),
            (b"FILE0\x00\x03\x00 createType=", false),
            (b"plain text", false),
        ] {
            std::fs::write(&p, content).unwrap();
            let f = File::open(&p).unwrap();
            assert_eq!(
                descriptor_text(&f, content.len() as u64).unwrap().is_some(),
                is,
                "{content:?}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
