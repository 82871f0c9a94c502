//! The walk (Windows): each folder listed in large batches (`GetFileInformationByHandleEx` with
//! `FileIdBothDirectoryInfo`: the file-system call beneath `FindFirstFileExW`'s large fetches, which also gives
//! each entry's file id and allocated size), several folders at once, each one's entries packed into its thread's
//! [`Spool`]. No file is opened: names, attributes, sizes, allocated sizes and the four times come with the
//! listing.
//!
//! Ids are the file ids (NTFS's record numbers; the inode under Wine), so a file's hard links are one entry with a
//! name each, as a raw read has them, and a walk again gives each file the same id: a refresh's delta is what
//! changed. Reparse points (symbolic links, junctions, other volumes mounted in a folder) are listed as links and
//! not entered.

use std::os::windows::ffi::OsStrExt;
use std::sync::{Condvar, Mutex};

use uffs_fs::{attr, Entry, Kind, Spool, Times, UNREADABLE};
use windows_sys::Win32::Foundation::{
    CloseHandle, GetLastError, ERROR_NO_MORE_FILES, INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, FileIdBothDirectoryInfo, GetFileInformationByHandle, GetFileInformationByHandleEx,
    BY_HANDLE_FILE_INFORMATION, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT,
    FILE_FLAG_BACKUP_SEMANTICS, FILE_LIST_DIRECTORY, FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE,
    FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_EXISTING,
};

use crate::{Error, Folder, ROOT_ID};

/// A folder to list: its id and its path (UTF-16, no separator at the end, no NUL).
struct Job {
    id: u64,
    path: Vec<u16>,
}

struct Shared<'a> {
    folder: &'a Folder,
    /// Folders to list, and the threads listing one (that may yet add folders).
    queue: Mutex<(Vec<Job>, usize)>,
    ready: Condvar,
    ids: Ids,
}

/// Walks `folder`: every entry below it (its own included, as the root), and the warnings of what could not be
/// read.
pub fn walk(folder: &Folder) -> Result<(Spool, Vec<String>), Error> {
    let mut path: Vec<u16> = folder.path.as_os_str().encode_wide().collect();
    while path
        .last()
        .is_some_and(|&c| c == u16::from(b'\\') || c == u16::from(b'/'))
    {
        path.pop();
    }
    let (root_id, root) =
        root_entry(&path).map_err(|e| Error::new(format!("{}: {e}", folder.path.display())))?;
    let mut spool = Spool::new();
    spool.push_ref(&root);
    let shared = Shared {
        folder,
        queue: Mutex::new((vec![Job { id: ROOT_ID, path }], 0)),
        ready: Condvar::new(),
        ids: Ids {
            root: root_id,
            far: Mutex::new((std::collections::HashMap::new(), 0xFFFF_FF00)),
        },
    };
    let threads = folder.options.threads();
    let done: Vec<(Spool, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(|| work(&shared))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a walking thread panicked"))
            .collect()
    });
    let mut warnings = Vec::new();
    for (sp, w) in done {
        spool.absorb(sp);
        warnings.extend(w);
    }
    warnings.sort();
    Ok((spool, warnings))
}

/// The walked folder's own entry (the root) and its file id.
fn root_entry(path: &[u16]) -> std::io::Result<(u64, Entry)> {
    let mut p = path.to_vec();
    // A drive's root needs its separator: `C:` alone is the current folder there.
    if p.len() == 2 && p[1] == u16::from(b':') {
        p.push(u16::from(b'\\'));
    }
    p.push(0);
    // SAFETY: `p` is NUL-terminated; FILE_FLAG_BACKUP_SEMANTICS opens a folder.
    let h = unsafe {
        CreateFileW(
            p.as_ptr(),
            FILE_READ_ATTRIBUTES,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            std::ptr::null(),
            OPEN_EXISTING,
            FILE_FLAG_BACKUP_SEMANTICS,
            std::ptr::null_mut(),
        )
    };
    if h == INVALID_HANDLE_VALUE {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: all-zero is a valid BY_HANDLE_FILE_INFORMATION, filled by the call on the open handle.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    let ok = unsafe { GetFileInformationByHandle(h, &mut info) };
    let err = std::io::Error::last_os_error();
    // SAFETY: `h` is open, closed once.
    unsafe { CloseHandle(h) };
    if ok == 0 {
        return Err(err);
    }
    let ft = |t: &windows_sys::Win32::Foundation::FILETIME| {
        u64::from(t.dwHighDateTime) << 32 | u64::from(t.dwLowDateTime)
    };
    let e = Entry {
        id: ROOT_ID,
        parent: ROOT_ID,
        kind: Kind::Folder,
        attributes: (info.dwFileAttributes | attr::DIRECTORY) & !attr::REPARSE_POINT,
        times: Times {
            created: ft(&info.ftCreationTime),
            modified: ft(&info.ftLastWriteTime),
            changed: 0,
            accessed: ft(&info.ftLastAccessTime),
        },
        ..Entry::default()
    };
    Ok((
        u64::from(info.nFileIndexHigh) << 32 | u64::from(info.nFileIndexLow),
        e,
    ))
}

/// One walking thread: lists folders until none is left and no thread may add one.
fn work(shared: &Shared) -> (Spool, Vec<String>) {
    let mut spool = Spool::new();
    let mut warnings = Vec::new();
    let mut slots: Vec<Entry> = Vec::new();
    let mut found = Vec::new();
    loop {
        let job = {
            let mut q = shared.queue.lock().expect("not poisoned");
            loop {
                if let Some(j) = q.0.pop() {
                    q.1 += 1;
                    break Some(j);
                }
                if q.1 == 0 {
                    break None;
                }
                q = shared.ready.wait(q).expect("not poisoned");
            }
        };
        let Some(job) = job else {
            return (spool, warnings);
        };
        let n = list(shared, &job, &mut slots, &mut found, &mut warnings);
        for e in &slots[..n] {
            spool.push_ref(e);
        }
        let mut q = shared.queue.lock().expect("not poisoned");
        q.0.append(&mut found);
        q.1 -= 1;
        if !q.0.is_empty() || q.1 == 0 {
            shared.ready.notify_all();
        }
    }
}

/// Bytes one `GetFileInformationByHandleEx` call may fill: a few hundred entries a call.
const LISTING: usize = 64 * 1024;

/// Lists folder `job` into `slots` (the first n, returned, in id order), its subfolders to walk into `found`.
fn list(
    shared: &Shared,
    job: &Job,
    slots: &mut Vec<Entry>,
    found: &mut Vec<Job>,
    warnings: &mut Vec<String>,
) -> usize {
    let shown = || String::from_utf16_lossy(&job.path);
    let mut path = job.path.clone();
    path.push(0);
    // SAFETY: `path` is NUL-terminated; FILE_FLAG_BACKUP_SEMANTICS opens a folder, for listing only.
    let h = unsafe {
        CreateFileW(
            path.as_ptr(),
            FILE_LIST_DIRECTORY,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            std::ptr::null(),
            OPEN_EXISTING,
            FILE_FLAG_BACKUP_SEMANTICS,
            std::ptr::null_mut(),
        )
    };
    if h == INVALID_HANDLE_VALUE {
        let e = std::io::Error::last_os_error();
        warnings.push(format!("{UNREADABLE}{}: {e}", shown()));
        return 0;
    }
    // u64s: the records are 8-byte aligned in the buffer.
    let mut buf = vec![0u64; LISTING / 8];
    let mut n = 0;
    loop {
        // SAFETY: `h` is an open folder and `buf` holds LISTING bytes.
        let ok = unsafe {
            GetFileInformationByHandleEx(
                h,
                FileIdBothDirectoryInfo,
                buf.as_mut_ptr().cast(),
                LISTING as u32,
            )
        };
        if ok == 0 {
            // SAFETY: no preconditions.
            let err = unsafe { GetLastError() };
            if err != ERROR_NO_MORE_FILES {
                let e = std::io::Error::from_raw_os_error(err as i32);
                warnings.push(format!("{UNREADABLE}{}: {e}", shown()));
            }
            break;
        }
        let bytes: &[u8] =
            // SAFETY: the buffer's u64s seen as its LISTING bytes.
            unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), LISTING) };
        let mut at = 0usize;
        while let Some(r) = Record::at(bytes, at) {
            let dots = r.name == [u16::from(b'.')] || r.name == [u16::from(b'.'), u16::from(b'.')];
            if !dots {
                if n == slots.len() {
                    slots.push(Entry::default());
                }
                let id = shared.ids.of(r.file_id);
                fill(&mut slots[n], id, job.id, &r);
                n += 1;
            }
            if r.next == 0 {
                break;
            }
            at += r.next as usize;
        }
    }
    // SAFETY: `h` is open, closed once.
    unsafe { CloseHandle(h) };
    slots[..n].sort_unstable_by_key(|e| e.id);
    let prune = &shared.folder.options.prune;
    for e in &slots[..n] {
        if e.kind != Kind::Folder {
            continue;
        }
        let mut path = job.path.clone();
        path.push(u16::from(b'\\'));
        path.extend(e.name.encode_utf16());
        if prune.folder(
            String::from_utf16_lossy(&path).as_bytes(),
            e.name.as_bytes(),
        ) {
            continue;
        }
        found.push(Job { id: e.id, path });
    }
    n
}

/// One FILE_ID_BOTH_DIR_INFO record of a listing, read from its bytes.
struct Record {
    next: u32,
    created: u64,
    accessed: u64,
    modified: u64,
    changed: u64,
    size: u64,
    allocated: u64,
    attributes: u32,
    file_id: u64,
    name: Vec<u16>,
}

impl Record {
    /// The record at byte `at` of a listing, if it lies whole within it.
    fn at(b: &[u8], at: usize) -> Option<Record> {
        let u32_at = |o: usize| {
            Some(u32::from_le_bytes(
                b.get(at + o..at + o + 4)?.try_into().ok()?,
            ))
        };
        let u64_at = |o: usize| {
            Some(u64::from_le_bytes(
                b.get(at + o..at + o + 8)?.try_into().ok()?,
            ))
        };
        let name_len = u32_at(60)? as usize;
        let name_bytes = b.get(at + 104..at + 104 + name_len)?;
        Some(Record {
            next: u32_at(0)?,
            created: u64_at(8)?,
            accessed: u64_at(16)?,
            modified: u64_at(24)?,
            changed: u64_at(32)?,
            size: u64_at(40)?,
            allocated: u64_at(48)?,
            attributes: u32_at(56)?,
            file_id: u64_at(96)?,
            name: name_bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect(),
        })
    }
}

/// Entry `e`, refilled (its buffers kept) as the listing tells it: id `id`, in folder `parent`.
fn fill(e: &mut Entry, id: u64, parent: u64, r: &Record) {
    e.name.clear();
    e.name.push_str(&String::from_utf16_lossy(&r.name));
    e.id = id;
    e.parent = parent;
    let a = r.attributes;
    e.kind = if a & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        Kind::Symlink
    } else if a & FILE_ATTRIBUTE_DIRECTORY != 0 {
        Kind::Folder
    } else {
        Kind::File
    };
    e.size = if e.kind == Kind::Folder { 0 } else { r.size };
    e.allocated = r.allocated;
    e.times = Times {
        created: r.created,
        modified: r.modified,
        changed: r.changed,
        accessed: r.accessed,
    };
    e.attributes = a;
    e.short_name = None;
    e.local_times = false;
    e.deleted = false;
    e.metadata = false;
    e.from_index_slack = false;
    e.runs.clear();
    e.inline = None;
    e.packed.clear();
    e.posix = None;
    e.link_target = None;
}

/// Ids from the file ids a listing gives: the file id itself (NTFS's record number, the inode under Wine) where it
/// is below 2^31 and neither 0 nor the root's; else one handed out from the top down, the same for each name of a
/// file (the index keeps an id's low 32 bits as its record number, one file's alone).
struct Ids {
    root: u64,
    far: Mutex<(std::collections::HashMap<u64, u64>, u64)>,
}

impl Ids {
    fn of(&self, file_id: u64) -> u64 {
        // NTFS's file reference: the record number in the low 48 bits, a sequence number above.
        let record = file_id & 0xFFFF_FFFF_FFFF;
        if file_id == self.root {
            return ROOT_ID;
        }
        if record != 0 && record != ROOT_ID && record < 1 << 31 {
            return record;
        }
        let mut far = self.far.lock().expect("not poisoned");
        let next = far.1;
        let id = *far.0.entry(file_id).or_insert(next);
        if id == next {
            far.1 = (next - 1).max(1 << 31);
        }
        id
    }
}
