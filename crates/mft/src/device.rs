//! Positional reads from a source: a regular file (image or `$MFT` capture), a block device, or on Windows a
//! live volume ([`crate::live`]). A [`Device`] may be a window (a partition) onto a larger one; reads past its
//! end are errors.

use std::fs::File;
use std::io;
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use uffs_image::read::{byte_len, read_file_at};

use crate::ioctl::IoProfile;

#[derive(Debug, Clone)]
pub struct Device {
    io: Arc<Io>,
    base: u64,
    len: u64,
}

/// What a device reads from.
#[derive(Debug)]
enum Io {
    File(File),
    /// The disk a container holds ([`crate::container`]).
    Image(Box<dyn uffs_image::container::Image>),
    #[cfg(windows)]
    Live(crate::live::LiveDevice),
    /// No bytes: a walked folder's (its files are read as files).
    Nothing,
}

impl Device {
    /// Opens a file or block device; a container (recognised by its content) opens as the disk it holds, and the
    /// first piece of a split raw image as the whole image.
    pub fn open(path: &Path) -> io::Result<Device> {
        if let Some(image) = uffs_image::container::open(path)? {
            let len = image.len();
            return Ok(Device {
                io: Arc::new(Io::Image(image)),
                base: 0,
                len,
            });
        }
        let file = File::open(path)?;
        let len = byte_len(&file)?;
        Ok(Device {
            io: Arc::new(Io::File(file)),
            base: 0,
            len,
        })
    }

    /// A device reading the disk an image holds (a shadow copy of a volume).
    pub fn from_image(image: Box<dyn uffs_image::container::Image>) -> Device {
        let len = image.len();
        Device {
            io: Arc::new(Io::Image(image)),
            base: 0,
            len,
        }
    }

    /// A device of no bytes, for a volume that is not read from one (a walked folder).
    pub fn nothing() -> Device {
        Device {
            io: Arc::new(Io::Nothing),
            base: 0,
            len: 0,
        }
    }

    /// Opens a live volume or disk of the running system (`\\.\C:`); its length is the device's, or else
    /// the NTFS boot sector's, or else what `header_len` reads from the device's first 4 KiB (another file
    /// system's header: the source layer asks its list). `whole`: for a whole read, which first takes the
    /// journal's position and flushes the volume's cache ([`crate::live::LiveDevice::settle`]); a check for
    /// changes needs neither.
    #[cfg(windows)]
    pub fn open_live(
        path: &str,
        whole: bool,
        header_len: &dyn Fn(&[u8]) -> Option<u64>,
    ) -> io::Result<Device> {
        let mut live = crate::live::LiveDevice::open(path)?;
        if whole {
            live.settle();
        }
        let len = live
            .len
            .or_else(|| {
                live.boot
                    .map(|b| (b.total_sectors + 1) * u64::from(b.bytes_per_sector))
            })
            .or_else(|| header_len(&live.head))
            .ok_or_else(|| {
                io::Error::other(
                    "the device does not tell its size and has no header of a file system uffs reads",
                )
            })?;
        Ok(Device {
            io: Arc::new(Io::Live(live)),
            base: 0,
            len,
        })
    }

    /// Whether this is a live volume of the running system (read through the file system's controls where the
    /// raw bytes may lag).
    pub fn is_live(&self) -> bool {
        match &*self.io {
            Io::File(_) | Io::Image(_) | Io::Nothing => false,
            #[cfg(windows)]
            Io::Live(_) => true,
        }
    }

    /// The live device, on Windows.
    #[cfg(windows)]
    pub fn live(&self) -> Option<&crate::live::LiveDevice> {
        match &*self.io {
            Io::Live(l) => Some(l),
            Io::File(_) | Io::Image(_) | Io::Nothing => None,
        }
    }

    /// The container the device's bytes come out of: none for a plain file or device.
    pub fn container(&self) -> Option<&dyn uffs_image::container::Image> {
        match &*self.io {
            Io::Image(i) => Some(i.as_ref()),
            _ => None,
        }
    }

    /// For a device reading a past state of another (a shadow copy): whether its bytes `offset..offset + len`
    /// may differ from that device's now ([`uffs_image::container::Image::differs_from_present`]).
    pub fn differs_from_present(&self, offset: u64, len: u64) -> Option<bool> {
        self.container()?
            .differs_from_present(self.base.checked_add(offset)?, len)
    }

    /// How many reads to keep in flight, and how large: from the device for a live volume; one read of 1 MiB
    /// at a time for a file or block device (most often already in the page cache, where more do not help); two
    /// for a container, whose reads are decoded on the reading threads ([`IoProfile::container`]).
    pub fn io_profile(&self) -> IoProfile {
        match &*self.io {
            Io::File(_) | Io::Nothing => IoProfile::file(),
            Io::Image(_) => IoProfile::container(),
            #[cfg(windows)]
            Io::Live(l) => l.profile.clone(),
        }
    }

    /// A window of `len` bytes starting at `offset` (clamped to this device).
    pub fn window(&self, offset: u64, len: u64) -> Device {
        let offset = offset.min(self.len);
        Device {
            io: self.io.clone(),
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
        let stamp = |m: std::fs::Metadata| {
            let t = m.modified().ok()?;
            let ns = match t.duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => d.as_nanos() as i128,
                Err(e) => -(e.duration().as_nanos() as i128),
            };
            Some((m.len(), ns))
        };
        let file = match &*self.io {
            Io::File(f) => f,
            // The files' sizes added up, and the newest time: a write to any piece or parent changes it.
            Io::Image(i) => {
                let mut all = (0u64, i128::MIN);
                for p in i.files() {
                    let (len, ns) = stamp(std::fs::metadata(p).ok()?)?;
                    all = (all.0 + len, all.1.max(ns));
                }
                return Some(all);
            }
            #[cfg(windows)]
            Io::Live(_) => return None,
            Io::Nothing => return None,
        };
        let m = file.metadata().ok()?;
        if !m.is_file() {
            return None;
        }
        stamp(m)
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
        match &*self.io {
            Io::File(f) => read_file_at(f, buf, self.base + offset),
            Io::Image(i) => i.read_at(buf, self.base + offset),
            #[cfg(windows)]
            Io::Live(l) => l.read_at(buf, self.base + offset),
            Io::Nothing => Ok(()),
        }
    }

    /// Reads up to `buf.len()` bytes from `offset`, fewer at the end of the device.
    pub fn read_head(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = (self.len.saturating_sub(offset)).min(buf.len() as u64) as usize;
        self.read_exact_at(&mut buf[..n], offset)?;
        Ok(n)
    }

    /// The volume's first bytes, to tell its file system by (`buf`, up to `uffs_fs::PROBE_LEN`): the first 4 KiB
    /// must read; what cannot past them (a container's damaged chunk before Btrfs's superblock at 64 KiB) is left
    /// out, so that damage there does not hide a volume every other file system tells by its first sectors.
    pub fn read_probe(&self, buf: &mut [u8]) -> io::Result<usize> {
        let first = buf.len().min(4096);
        let n = self.read_head(&mut buf[..first], 0)?;
        if n < first || buf.len() == first {
            return Ok(n);
        }
        Ok(first + self.read_head(&mut buf[first..], first as u64).unwrap_or(0))
    }
}

/// A zeroed buffer whose address is a multiple of 4096: unbuffered reads of a live volume need sector-aligned
/// buffers, and the kernel copies out of the page cache faster into page-aligned ones.
pub struct IoBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: an IoBuf owns its bytes like a Box<[u8]>.
unsafe impl Send for IoBuf {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for IoBuf {}

impl IoBuf {
    const ALIGN: usize = 4096;

    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len.max(1), Self::ALIGN).expect("buffer size overflows")
    }

    pub fn zeroed(len: usize) -> IoBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        IoBuf { ptr, len }
    }
}

impl Deref for IoBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised (zeroed, then written) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for IoBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for IoBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

impl std::fmt::Debug for IoBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IoBuf({} bytes)", self.len)
    }
}

/// A cheap fingerprint of a source's writes, taken without reading it: for an image file its size and
/// modification time, for a block device its write counters (`/sys/dev/block/MAJ:MIN/stat`). The same value
/// later means nothing was written in between, so a periodic check can stop there; `None` when there is no such
/// signal (then only reading the source tells). `path` is the file or device a source reads (the source layer's
/// `path_of` takes a spec's suffixes off).
pub fn write_stamp(path: &Path) -> Option<u64> {
    let m = std::fs::metadata(path).ok()?;
    use std::hash::Hasher as _;
    let mut h = twox_hash::XxHash3_64::new();
    if let Some(pieces) = uffs_image::container::ewf::segments(path)
        .or_else(|| uffs_image::container::split::pieces(path))
    {
        // Every piece's size and time: a write to any of them changes the stamp.
        for p in pieces {
            let m = std::fs::metadata(p).ok()?;
            let t = m
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            h.write(&m.len().to_le_bytes());
            h.write(&t.as_nanos().to_le_bytes());
        }
        return Some(h.finish());
    }
    if m.is_file() {
        h.write(&m.len().to_le_bytes());
        let t = m
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        h.write(&t.as_nanos().to_le_bytes());
        return Some(h.finish());
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
                h.write(f.as_bytes());
                h.write(b" ");
            }
            return Some(h.finish());
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

impl uffs_image::ReadAt for Device {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        Device::read_exact_at(self, buf, offset)
    }
    fn len(&self) -> u64 {
        self.len
    }
}
