//! Containers: image formats that hold a disk or a volume in another layout (split raw, VHD, qcow2, UDIF `.dmg`,
//! and the rest of issue 28's list). Each format is one file here implementing [`Image`]: a length and positional reads of the
//! disk it holds. [`open`] recognises a container by its content (a split raw set by its numbered names, the one
//! thing it has); [`open_parent`] opens the image a differencing or backing-file image reads through, refusing
//! missing files and chains that loop.
//!
//! Rules every format keeps: no lock is held across a read or a decompression (the scanner reads from several
//! threads); a chunk is decoded once per read that needs it; nothing is allocated from a size a header claims
//! before it is checked against the file; damaged input is an `InvalidData` error that says what is wrong.

use std::fmt::Debug;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

pub mod ewf;
mod ewf2;
pub mod qcow2;
pub mod sparse;
pub mod split;
pub mod udif;
pub mod vhd;
pub mod vhdx;
pub mod vmdk;

/// A disk (or volume) held in a container, read by position.
pub trait Image: Send + Sync + Debug {
    /// The disk's size in bytes.
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` from `offset` of the disk; `offset + buf.len()` is at most [`Image::len`]. Areas the container
    /// never stored read as zeros, as the format says they do.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// What the container is, one line for `uffs info` (`VHD, dynamic: 12 of 64 blocks of 2048 KiB written`).
    fn describe(&self) -> String;

    /// Every file the image reads, the one named first, then its other pieces and its parents: for the
    /// source's stamp (a write to any of them changes the disk) and for `uffs info`.
    fn files(&self) -> Vec<PathBuf>;

    /// Facts the container stores about its disk, for `uffs info`: stored hashes, acquisition metadata.
    fn facts(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// For an image of a past state of another disk (a shadow copy of a volume): whether bytes
    /// `offset..offset + len` may read otherwise than that disk's do now. `None` for any other image.
    fn differs_from_present(&self, _offset: u64, _len: u64) -> Option<bool> {
        None
    }
}

/// The longest chain of parents followed (a differencing disk of a differencing disk …).
pub const MAX_CHAIN: usize = 32;

/// The container `path` is, or `None` when it is a plain file (a raw image, a `$MFT` capture, a device).
pub fn open(path: &Path) -> io::Result<Option<Box<dyn Image>>> {
    open_in_chain(path, &[])
}

/// Opens `path` as a container, knowing the images that read through it (`chain`, children first).
fn open_in_chain(path: &Path, chain: &[PathBuf]) -> io::Result<Option<Box<dyn Image>>> {
    if path.is_dir() {
        return Ok(sparse::SparseBundle::open(path)?.map(|b| Box::new(b) as Box<dyn Image>));
    }
    let file = File::open(path)?;
    let len = crate::read::byte_len(&file)?;
    // Before split sets: an EWF image's segments are numbered too (`.E01`, `.E02` …).
    if let Some(ewf) = ewf::Ewf::open(path, &file, len)? {
        return Ok(Some(Box::new(ewf)));
    }
    if let Some(pieces) = split::pieces(path) {
        return Ok(Some(Box::new(split::SplitImage::open(&pieces)?)));
    }
    if let Some(qcow2) = qcow2::Qcow2::open(path, &file, len, chain)? {
        return Ok(Some(Box::new(qcow2)));
    }
    if let Some(vhd) = vhd::Vhd::open(path, &file, len, chain)? {
        return Ok(Some(Box::new(vhd)));
    }
    if let Some(vhdx) = vhdx::Vhdx::open(path, &file, len, chain)? {
        return Ok(Some(Box::new(vhdx)));
    }
    if let Some(vmdk) = vmdk::Vmdk::open(path, &file, len, chain)? {
        return Ok(Some(Box::new(vmdk)));
    }
    encrypted_apple_image(&file, len)?;
    if let Some(udif) = udif::Udif::open(path, &file, len)? {
        return Ok(Some(Box::new(udif)));
    }
    if let Some(image) = sparse::SparseImage::open(path, &file, len)? {
        return Ok(Some(Box::new(image)));
    }
    Ok(None)
}

/// An encrypted Apple disk image (`hdiutil create -encryption`: `encrcdsa` at its start, or `cdsaencr` at its end
/// in the first version) is refused by name: read raw, its bytes are ciphertext that no file system parses.
fn encrypted_apple_image(file: &File, len: u64) -> io::Result<()> {
    if len < 8 {
        return Ok(());
    }
    let (mut head, mut tail) = ([0u8; 8], [0u8; 8]);
    crate::read::read_file_at(file, &mut head, 0)?;
    crate::read::read_file_at(file, &mut tail, len - 8)?;
    if &head == b"encrcdsa" || &tail == b"cdsaencr" {
        return Err(bad(
            "an encrypted Apple disk image (AES, hdiutil's -encryption): uffs does not decrypt it; attach it on a Mac \
             with its password (`hdiutil attach`) and read the disk it shows, or convert it to an unencrypted image \
             (`hdiutil convert -format UDZO`)",
        ));
    }
    Ok(())
}

/// Opens the image `parent` that `child` reads through (a differencing disk's parent, a backing file), which may
/// itself be a container or a raw image. `chain` holds the images already open below it, `child` last. A parent
/// that is missing, that is one of the images below it, or that is more than [`MAX_CHAIN`] deep is an error
/// naming the file.
pub fn open_parent(child: &Path, parent: &Path, chain: &[PathBuf]) -> io::Result<Box<dyn Image>> {
    if !parent.exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{}'s parent image {} is missing",
                child.display(),
                parent.display()
            ),
        ));
    }
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if same(child, parent) || chain.iter().any(|c| same(c, parent)) {
        return Err(bad(format!(
            "{}'s parent chain loops: it comes back to {}",
            child.display(),
            parent.display()
        )));
    }
    if chain.len() + 1 >= MAX_CHAIN {
        return Err(bad(format!(
            "{}'s parent chain is more than {MAX_CHAIN} images deep",
            child.display()
        )));
    }
    let mut below = chain.to_vec();
    below.push(child.to_path_buf());
    match open_in_chain(parent, &below)? {
        Some(image) => Ok(image),
        None => Ok(Box::new(RawFile::open(parent)?)),
    }
}

/// The parent a differencing image names, found the way Windows finds it: each of `candidates` in order (a
/// relative path first, then an absolute one), then the bare file name beside the child; the first that exists
/// is opened with [`open_parent`]. None existing is an error naming every path tried.
pub fn find_parent(
    child: &Path,
    candidates: &[PathBuf],
    chain: &[PathBuf],
) -> io::Result<Box<dyn Image>> {
    let mut tried: Vec<PathBuf> = Vec::new();
    let dir = child.parent().unwrap_or(Path::new(""));
    let mut all = candidates.to_vec();
    if let Some(name) = candidates.iter().find_map(|c| c.file_name()) {
        all.push(dir.join(name));
    }
    for c in all {
        if tried.contains(&c) {
            continue;
        }
        if c.is_file() {
            return open_parent(child, &c, chain);
        }
        tried.push(c);
    }
    if tried.is_empty() {
        return Err(bad(format!(
            "{} is a differencing image that names no parent it can be found by",
            child.display()
        )));
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "{}'s parent image is missing: tried {}",
            child.display(),
            tried
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// A Windows path a differencing image stores for its parent, as a path here: `\` made `/`; a relative one
/// (`.\base.vhdx`) taken from the child's folder `dir`; an absolute one's drive letter dropped off Windows.
pub fn windows_path(dir: &Path, stored: &str, relative: bool) -> Option<PathBuf> {
    let s = stored.trim_end_matches('\0').trim();
    if s.is_empty() {
        return None;
    }
    if cfg!(windows) {
        return Some(if relative {
            dir.join(s)
        } else {
            PathBuf::from(s)
        });
    }
    let unix = s.replace('\\', "/");
    if relative {
        let rel = unix.trim_start_matches("./");
        return Some(dir.join(rel));
    }
    let b = unix.as_bytes();
    let rest = if b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic() {
        &unix[2..]
    } else {
        &unix[..]
    };
    Some(PathBuf::from(rest))
}

/// Fills `buf` from `offset` of a parent image; what lies past the parent's end reads as zeros (a parent may be
/// smaller than its child).
pub fn read_parent(parent: &dyn Image, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let len = parent.len();
    let have = len.saturating_sub(offset).min(buf.len() as u64) as usize;
    let (now, past) = buf.split_at_mut(have);
    if !now.is_empty() {
        parent.read_at(now, offset)?;
    }
    past.fill(0);
    Ok(())
}

/// CRC-32C (Castagnoli, reflected, as iSCSI and VHDX use it).
pub fn crc32c(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x82F6_3B78
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    !data.iter().fold(!0u32, |c, &b| {
        TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

/// A plain file read as a disk: the parent of a differencing image may be a raw image.
#[derive(Debug)]
pub struct RawFile {
    file: File,
    len: u64,
    path: PathBuf,
}

impl RawFile {
    pub fn open(path: &Path) -> io::Result<RawFile> {
        let file = File::open(path)?;
        let len = crate::read::byte_len(&file)?;
        Ok(RawFile {
            file,
            len,
            path: path.to_path_buf(),
        })
    }
}

impl Image for RawFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        crate::read::read_file_at(&self.file, buf, offset)
    }

    fn describe(&self) -> String {
        "raw image".into()
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}

/// An `InvalidData` error: the container's bytes are damaged or say something it cannot be.
pub fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Whether `offset + len` stays within `limit` (a file's or disk's size), without overflow.
pub fn within(offset: u64, len: u64, limit: u64) -> bool {
    offset.checked_add(len).is_some_and(|e| e <= limit)
}

/// Numbers read out of headers; short input reads as zero (callers check lengths first).
pub mod bytes {
    pub fn be16(b: &[u8], at: usize) -> u16 {
        u16::from_be_bytes(
            b.get(at..at + 2)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 2]),
        )
    }
    pub fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(
            b.get(at..at + 4)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 4]),
        )
    }
    pub fn be64(b: &[u8], at: usize) -> u64 {
        u64::from_be_bytes(
            b.get(at..at + 8)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 8]),
        )
    }
    pub fn le16(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes(
            b.get(at..at + 2)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 2]),
        )
    }
    pub fn le32(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(
            b.get(at..at + 4)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 4]),
        )
    }
    pub fn le64(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(
            b.get(at..at + 8)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 8]),
        )
    }
}
