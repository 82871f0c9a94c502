//! The Linux system calls a walk makes, each wrapped once: opening a folder, `getdents64` into a buffer,
//! `statx` relative to the folder, `readlinkat`, `statfs`.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `path` as the C string system calls take (a path holds no NUL byte; one that does is cut there).
pub fn cstring(path: &OsStr) -> CString {
    let b = path.as_bytes();
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    CString::new(&b[..end]).expect("cut at the first NUL")
}

/// Opens folder `path` (NUL-terminated bytes) for listing.
pub fn open_dir(path: &CStr) -> io::Result<OwnedFd> {
    let flags =
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NOFOLLOW;
    // SAFETY: `path` is a valid C string; the descriptor returned is owned here.
    let fd = unsafe { libc::open(path.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Fills `buf` with the folder's next entries (`linux_dirent64` records); 0 at its end.
pub fn getdents(dir: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    let n = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            dir.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// One `linux_dirent64` record.
pub struct Dirent<'a> {
    pub ino: u64,
    pub kind: u8,
    /// As the record holds it, NUL-terminated: what `statx` takes.
    pub name: &'a CStr,
}

/// The records of a `getdents64` answer, `.` and `..` left out.
pub fn dirents(buf: &[u8]) -> impl Iterator<Item = Dirent<'_>> {
    let mut at = 0usize;
    std::iter::from_fn(move || loop {
        // d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name (NUL-terminated).
        let rec = buf.get(at..at + 19)?;
        let len = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
        let whole = buf.get(at..at + len.max(19))?;
        at += len.max(19);
        // A record always ends its name with a NUL; one that does not is not a record.
        let name = CStr::from_bytes_until_nul(&whole[19..]).ok()?;
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        return Some(Dirent {
            ino: u64::from_ne_bytes(rec[..8].try_into().expect("8 bytes")),
            kind: rec[18],
            name,
        });
    })
}

/// What a walk asks `statx` for: the basic fields, the birth time and the mount id.
const MASK: u32 = libc::STATX_BASIC_STATS | libc::STATX_BTIME | libc::STATX_MNT_ID;

/// `statx` of `name` in folder `dir`, without following a symlink, triggering an automount or asking a network
/// file system to flush.
pub fn stat_at(dir: &OwnedFd, name: &CStr) -> io::Result<libc::statx> {
    let flags = libc::AT_SYMLINK_NOFOLLOW | libc::AT_STATX_DONT_SYNC | libc::AT_NO_AUTOMOUNT;
    stat(dir.as_raw_fd(), name, flags)
}

/// `statx` of `path` itself.
pub fn stat_path(path: &CStr) -> io::Result<libc::statx> {
    stat(libc::AT_FDCWD, path, libc::AT_STATX_DONT_SYNC)
}

fn stat(dir: i32, name: &CStr, flags: i32) -> io::Result<libc::statx> {
    // SAFETY: statx fills the zeroed struct it is given; all-zero is a valid `statx`.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is a valid C string and `st` a valid place to write.
    let r = unsafe { libc::statx(dir, name.as_ptr(), flags, MASK, &mut st) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// The mount id of `path` (kernel 5.8 and later).
pub fn mount_id(path: &Path) -> Option<u64> {
    let st = stat_path(&cstring(path.as_os_str())).ok()?;
    (st.stx_mask & libc::STATX_MNT_ID != 0).then_some(st.stx_mnt_id)
}

/// The target of symlink `name` in folder `dir`, into `out` (cleared first).
pub fn read_link_at(dir: &OwnedFd, name: &CStr, out: &mut Vec<u8>) -> io::Result<()> {
    out.clear();
    out.resize(4096, 0);
    // SAFETY: readlinkat writes at most `out.len()` bytes into `out`.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            out.as_mut_ptr().cast(),
            out.len(),
        )
    };
    if n < 0 {
        out.clear();
        return Err(io::Error::last_os_error());
    }
    out.truncate(n as usize);
    Ok(())
}

/// The file system's id (`f_fsid`, when it gives one) and its space, by `statfs` of `path`.
pub fn fs_space(path: &CStr) -> (Option<u64>, Option<uffs_fs::Space>) {
    // SAFETY: statfs fills the zeroed struct it is given.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a valid C string and `s` a valid place to write.
    if unsafe { libc::statfs(path.as_ptr(), &mut s) } != 0 {
        return (None, None);
    }
    // SAFETY: `fsid_t` is two 32-bit integers, whatever the library names its fields.
    let raw: [u32; 2] = unsafe { std::mem::transmute(s.f_fsid) };
    let fsid = u64::from(raw[0]) | u64::from(raw[1]) << 32;
    let unit = s.f_frsize as u64;
    let total = s.f_blocks as u64;
    let free = s.f_bfree as u64;
    let space = (unit > 0 && total > 0).then(|| uffs_fs::Space {
        cluster_size: unit,
        clusters_total: total,
        clusters_in_use: total.saturating_sub(free),
        bytes_in_use: total.saturating_sub(free) * unit,
        bytes_total: total * unit,
    });
    ((fsid != 0).then_some(fsid), space)
}
