//! Following a walked folder's changes (Windows): `ReadDirectoryChangesW` on the folder, its whole subtree
//! (names, attributes, sizes and write times), read by a thread of its own that hands each batch of reports to
//! [`Watch::wait`] as the folders they were in. A buffer that overflowed (reports lost) reports the followed folder
//! itself, and [`Watch::overflowed`] says so.

use std::io;
use std::os::windows::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, ReadDirectoryChangesW, FILE_FLAG_BACKUP_SEMANTICS, FILE_LIST_DIRECTORY,
    FILE_NOTIFY_CHANGE_ATTRIBUTES, FILE_NOTIFY_CHANGE_CREATION, FILE_NOTIFY_CHANGE_DIR_NAME,
    FILE_NOTIFY_CHANGE_FILE_NAME, FILE_NOTIFY_CHANGE_LAST_WRITE, FILE_NOTIFY_CHANGE_SIZE,
    FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_EXISTING,
};

/// What a batch of reports says: the folders changes were in, or that reports were lost.
enum Batch {
    Folders(Vec<PathBuf>),
    Overflowed,
}

/// A folder followed; see the module doc.
pub struct Watch {
    root: PathBuf,
    /// Folders whose changes are not reported (the daemon's own files).
    ignored: Vec<PathBuf>,
    reports: Receiver<io::Result<Batch>>,
    /// Tells the reading thread to end after its next report (it waits in the call until then).
    stop: Arc<AtomicBool>,
    overflow: bool,
}

/// The folder's handle, moved to the thread that reads its reports.
struct Handle(HANDLE);
// SAFETY: a file handle may be used from any thread; only the reading thread uses it.
unsafe impl Send for Handle {}

/// Bytes of reports one call may return; more at once is an overflow.
const REPORTS: usize = 64 * 1024;

impl Watch {
    /// Follows folder `root` (absolute), leaving out changes below `ignored`.
    pub fn new(root: &Path, ignored: Vec<PathBuf>) -> io::Result<Watch> {
        let mut p: Vec<u16> = root.as_os_str().encode_wide().collect();
        p.push(0);
        // SAFETY: `p` is NUL-terminated; FILE_FLAG_BACKUP_SEMANTICS opens a folder.
        let h = unsafe {
            CreateFileW(
                p.as_ptr(),
                FILE_LIST_DIRECTORY,
                FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                std::ptr::null(),
                OPEN_EXISTING,
                FILE_FLAG_BACKUP_SEMANTICS,
                std::ptr::null_mut(),
            )
        };
        if h == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let (handle, st, top) = (Handle(h), Arc::clone(&stop), root.to_path_buf());
        std::thread::Builder::new()
            .name("watch".into())
            .spawn(move || read_reports(handle, &top, &tx, &st))?;
        Ok(Watch {
            root: root.to_path_buf(),
            ignored,
            reports: rx,
            stop,
            overflow: false,
        })
    }

    /// Whether reports were lost since this was last asked (only a whole walk finds those changes).
    pub fn overflowed(&mut self) -> bool {
        std::mem::take(&mut self.overflow)
    }

    /// How it follows.
    pub fn how(&self) -> String {
        "ReadDirectoryChangesW (the folder's whole subtree)".into()
    }

    /// Waits up to `timeout` for changes, then `gather` longer for the rest of a burst, and returns the folders
    /// they were in (none: nothing changed).
    pub fn wait(&mut self, timeout: Duration, gather: Duration) -> io::Result<Vec<PathBuf>> {
        let first = match self.reports.recv_timeout(timeout) {
            Ok(b) => b,
            Err(RecvTimeoutError::Timeout) => return Ok(Vec::new()),
            Err(RecvTimeoutError::Disconnected) => {
                return Err(io::Error::other("the folder's reports ended"))
            }
        };
        let mut out = Vec::new();
        let mut take = |b: io::Result<Batch>| -> io::Result<()> {
            match b? {
                Batch::Folders(dirs) => out.extend(
                    dirs.into_iter()
                        .filter(|d| !self.ignored.iter().any(|i| d.starts_with(i))),
                ),
                Batch::Overflowed => {
                    self.overflow = true;
                    out.push(self.root.clone());
                }
            }
            Ok(())
        };
        take(first)?;
        std::thread::sleep(gather);
        while let Ok(b) = self.reports.try_recv() {
            take(b)?;
        }
        Ok(out)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // The reading thread ends at its next report (or with the process).
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The reading thread: each call's reports, as the folders they were in, until told to stop or the receiver
/// is gone.
fn read_reports(h: Handle, root: &Path, tx: &mpsc::Sender<io::Result<Batch>>, stop: &AtomicBool) {
    let mut buf = vec![0u32; REPORTS / 4];
    let filter = FILE_NOTIFY_CHANGE_FILE_NAME
        | FILE_NOTIFY_CHANGE_DIR_NAME
        | FILE_NOTIFY_CHANGE_ATTRIBUTES
        | FILE_NOTIFY_CHANGE_SIZE
        | FILE_NOTIFY_CHANGE_LAST_WRITE
        | FILE_NOTIFY_CHANGE_CREATION;
    while !stop.load(Ordering::SeqCst) {
        let mut got = 0u32;
        // SAFETY: `h` is an open folder, `buf` holds REPORTS bytes (4-aligned), the call is synchronous.
        let ok = unsafe {
            ReadDirectoryChangesW(
                h.0,
                buf.as_mut_ptr().cast(),
                REPORTS as u32,
                1,
                filter,
                &mut got,
                std::ptr::null_mut(),
                None,
            )
        };
        let batch = if ok == 0 {
            Err(io::Error::last_os_error())
        } else if got == 0 {
            Ok(Batch::Overflowed)
        } else {
            // SAFETY: the buffer's u32s seen as its bytes.
            let bytes =
                unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), got as usize) };
            Ok(Batch::Folders(folders_of(bytes, root)))
        };
        let failed = batch.is_err();
        if tx.send(batch).is_err() || failed {
            break;
        }
    }
    // SAFETY: `h` is open, closed once.
    unsafe { CloseHandle(h.0) };
}

/// The folders a buffer of FILE_NOTIFY_INFORMATION records names changes in: each name's folder below `root`.
fn folders_of(b: &[u8], root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let u32_at = |o: usize| {
        b.get(o..o + 4)
            .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
    };
    while let (Some(next), Some(len)) = (u32_at(at), u32_at(at + 8)) {
        let Some(name) = b.get(at + 12..at + 12 + len as usize) else {
            break;
        };
        let name: Vec<u16> = name
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        let rel = PathBuf::from(String::from_utf16_lossy(&name));
        let path = root.join(rel);
        out.push(
            path.parent()
                .map_or_else(|| root.to_path_buf(), Path::to_path_buf),
        );
        if next == 0 {
            break;
        }
        at += next as usize;
    }
    out.sort();
    out.dedup();
    out
}
