//! Positional reads from a source: a regular file (image or `$MFT` capture), a block device, or on Windows a
//! raw volume. A [`Device`] may be a window (a partition) onto a larger one; reads past its end are errors.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Device {
    file: Arc<File>,
    base: u64,
    len: u64,
}

impl Device {
    pub fn open(path: &Path) -> io::Result<Device> {
        let file = File::open(path)?;
        let len = byte_len(&file)?;
        Ok(Device {
            file: Arc::new(file),
            base: 0,
            len,
        })
    }

    /// A window of `len` bytes starting at `offset` (clamped to this device).
    pub fn window(&self, offset: u64, len: u64) -> Device {
        let offset = offset.min(self.len);
        Device {
            file: self.file.clone(),
            base: self.base + offset,
            len: len.min(self.len - offset),
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    /// Size and modification time (ns since the Unix epoch) when the source is a regular file, whose
    /// modification time changes with every write; `None` for block devices, where it does not.
    pub fn file_stamp(&self) -> Option<(u64, i128)> {
        let m = self.file.metadata().ok()?;
        if !m.is_file() {
            return None;
        }
        let t = m.modified().ok()?;
        let ns = match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        };
        Some((m.len(), ns))
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fills `buf` from `offset`. Reading past the end of the device is `UnexpectedEof`.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "read of {} bytes at offset {offset} goes past the end ({} bytes)",
                    buf.len(),
                    self.len
                ),
            ));
        }
        read_at(&self.file, buf, self.base + offset)
    }

    /// Reads up to `buf.len()` bytes from `offset`, fewer at the end of the device.
    pub fn read_head(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = (self.len.saturating_sub(offset)).min(buf.len() as u64) as usize;
        self.read_exact_at(&mut buf[..n], offset)?;
        Ok(n)
    }
}

/// Size of a file or block device (block devices report 0 in their metadata; seeking to the end works for both).
fn byte_len(file: &File) -> io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let meta_len = file.metadata()?.len();
    if meta_len > 0 {
        return Ok(meta_len);
    }
    let mut f = file;
    let len = f.seek(SeekFrom::End(0))?;
    f.seek(SeekFrom::Start(0))?;
    Ok(len)
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A cheap fingerprint of a source's writes, taken without reading it: for an image file its size and
/// modification time, for a block device its write counters (`/sys/dev/block/MAJ:MIN/stat`). The same value
/// later means nothing was written in between, so a periodic check can stop there; `None` when there is no such
/// signal (then only reading the source tells). `spec` is a source as given, `@N` partition suffix allowed.
pub fn write_stamp(spec: &str) -> Option<u64> {
    let path = Path::new(spec);
    let path = if path.exists() {
        path.to_path_buf()
    } else {
        let (file, part) = spec.rsplit_once('@')?;
        part.parse::<u32>().ok()?;
        Path::new(file).to_path_buf()
    };
    let m = std::fs::metadata(&path).ok()?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    if m.is_file() {
        h.update(&m.len().to_le_bytes());
        let t = m
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        h.update(&t.as_nanos().to_le_bytes());
        return Some(h.digest());
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        if m.file_type().is_block_device() {
            let rdev = m.rdev();
            let (major, minor) = (libc_major(rdev), libc_minor(rdev));
            let stat =
                std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/stat")).ok()?;
            // Fields 5 to 8 count writes: completed, merged, sectors, milliseconds.
            for f in stat.split_whitespace().skip(4).take(4) {
                h.update(f.as_bytes());
                h.update(b" ");
            }
            return Some(h.digest());
        }
    }
    None
}

#[cfg(target_os = "linux")]
fn libc_major(dev: u64) -> u64 {
    ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)
}

#[cfg(target_os = "linux")]
fn libc_minor(dev: u64) -> u64 {
    ((dev >> 12) & 0xffff_ff00) | (dev & 0xff)
}
