//! Positional reads: the [`ReadAt`] trait every byte source of the layer above serves (a device, a window of
//! one, an image), and the reads of a plain file (`read_file_at`, `byte_len`) the containers and devices make.

use std::fmt::Debug;
use std::fs::File;
use std::io;

/// Positional reads of a byte source (a file, a block device, a disk a container holds, a window of one onto a
/// partition): what partition tables and shadow copies are read through. Reads come from many threads at once.
pub trait ReadAt: Send + Sync + Debug {
    /// Fills `buf` from `offset`; an error if the source ends before it is full.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The source's length in bytes.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
        {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "read of {} bytes at {offset} past the end ({})",
                    buf.len(),
                    self.len()
                ),
            )),
        }
    }
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
}

impl ReadAt for Vec<u8> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
}

impl<T: ReadAt + ?Sized> ReadAt for Box<T> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
    fn len(&self) -> u64 {
        (**self).len()
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
    fn len(&self) -> u64 {
        (**self).len()
    }
}

/// Size of a file or block device (block devices report 0 in their metadata; seeking to the end works for both).
pub fn byte_len(file: &File) -> io::Result<u64> {
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

/// Fills `buf` from `offset` of `file` (a positional read: no shared file position, no lock).
#[cfg(unix)]
pub fn read_file_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(windows)]
pub fn read_file_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
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
