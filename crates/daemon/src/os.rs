//! What the daemon asks of the operating system besides files and its IPC channel: allocator settings, its own
//! resident memory, starting it detached, and build processes that end when the daemon does.

use std::process::{Child, Command};

/// A query allocates a few bit sets of n/8 bytes and scratch columns, and frees them when it answers. glibc's
/// mmap threshold rises as such blocks are freed, after which they stay in its heaps and the daemon's memory
/// creeps up to the largest query's. A fixed threshold of 512 KiB keeps bit sets of volumes up to 4 million
/// entries on the heap (mapping and unmapping each would cost page faults and TLB shootdowns on every query)
/// and returns anything larger to the system at once; two arenas stop every connection thread from growing a
/// heap of its own. Free heap is given back after queries by [`release_after_query`], not as each block is freed.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tunables; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 512 * 1024);
        libc::mallopt(libc::M_ARENA_MAX, 2);
        // Freed bit sets at the top of a heap stay for the next query instead of being unmapped and faulted in
        // again; `release_after_query` bounds what is kept.
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Gives freed heap back to the system after a rebuild swapped an old snapshot out.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// After a query has answered: gives freed heap back to the system when the process's anonymous memory (its
/// heap; mapped index pages are file-backed) has grown by more than `slack` bytes since the last trim, as after
/// a query that sorted or printed millions of hits. Not after every query: `malloc_trim` discards every free
/// page of every arena, and the next query would fault its bit sets back in (at 26 million entries, 22 volumes'
/// bit sets are thousands of pages), so a targeted query would pay for the trim of the one before.
pub fn release_after_query(slack: u64) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::sync::atomic::{AtomicU64, Ordering};
        /// Anonymous bytes after the last trim.
        static TRIMMED_AT: AtomicU64 = AtomicU64::new(0);
        let Some(anon) = anon_bytes() else { return };
        if anon <= TRIMMED_AT.load(Ordering::Relaxed) + slack {
            return;
        }
        release_free_memory();
        TRIMMED_AT.store(anon_bytes().unwrap_or(anon), Ordering::Relaxed);
    }
    // (Other allocators give large blocks back as they are freed.)
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = slack;
}

/// Resident anonymous bytes (resident less file-backed and shared).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn anon_bytes() -> Option<u64> {
    let (resident, shared) = statm_bytes()?;
    Some(resident.saturating_sub(shared))
}

/// This process's resident and shared (file-backed) bytes, from `/proc/self/statm`.
#[cfg(unix)]
fn statm_bytes() -> Option<(u64, u64)> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut f = statm.split_whitespace().skip(1);
    let (resident, shared): (u64, u64) = (f.next()?.parse().ok()?, f.next()?.parse().ok()?);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
    Some((resident * page, shared * page))
}

/// Makes the allocator give every block of a megabyte or more back to the kernel as soon as it is freed. An index
/// build makes and drops many large temporary arrays one after another; glibc otherwise raises its threshold
/// for doing so after the first one is freed and keeps the rest in its heap, where they add up (26 MB on the
/// benchmark volume's peak). For a process that builds indexes, not for the daemon's queries, whose bitsets
/// are best reused.
pub fn return_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's policy for later allocations.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Resident memory of this process: RSS from /proc on Linux, the working set on Windows, else 0.
pub fn rss_bytes() -> u64 {
    #[cfg(windows)]
    {
        use windows_sys::Win32::System::ProcessStatus::{
            K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS,
        };
        use windows_sys::Win32::System::Threading::GetCurrentProcess;
        // SAFETY: the counters are plain data, filled up to the size passed.
        unsafe {
            let mut c: PROCESS_MEMORY_COUNTERS = std::mem::zeroed();
            c.cb = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
            if K32GetProcessMemoryInfo(GetCurrentProcess(), &mut c, c.cb) == 0 {
                return 0;
            }
            c.WorkingSetSize as u64
        }
    }
    #[cfg(unix)]
    {
        statm_bytes().map_or(0, |(resident, _)| resident)
    }
}

/// Starts the daemon `cmd` detached from the caller: its own session on Unix (no terminal); on Windows no
/// console, its own process group, and none of the caller's standard handles. Windows children inherit every
/// inheritable handle, so without that the daemon would hold the caller's output pipe open and a caller
/// waiting for it to close (a script running `uffs daemon start | …`) would wait for ever.
pub fn spawn_detached(cmd: &mut Command) -> std::io::Result<Child> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsRawHandle;
        use std::os::windows::process::CommandExt;
        use windows_sys::Win32::Foundation::{SetHandleInformation, HANDLE_FLAG_INHERIT};
        use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS};
        cmd.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
        for h in [
            std::io::stdin().as_raw_handle(),
            std::io::stdout().as_raw_handle(),
            std::io::stderr().as_raw_handle(),
        ] {
            // SAFETY: only clears the inherit flag of this process's own standard handles (an invalid or null
            // one makes the call fail, which is harmless).
            unsafe { SetHandleInformation(h as _, HANDLE_FLAG_INHERIT, 0) };
        }
    }
    cmd.spawn()
}

/// Starts `cmd` so that it ends if the daemon dies, leaving no orphan build behind (its temporary file is
/// removed at the next start): `PR_SET_PDEATHSIG` on Linux, a kill-on-close job object on Windows.
pub fn spawn_tied(cmd: &mut Command) -> std::io::Result<Child> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    let child = cmd.spawn()?;
    #[cfg(windows)]
    {
        use std::os::windows::io::AsRawHandle;
        use windows_sys::Win32::System::JobObjects::AssignProcessToJobObject;
        if let Some(job) = kill_on_close_job() {
            // SAFETY: both handles are valid; a failure leaves the child untied, which is only less tidy.
            unsafe { AssignProcessToJobObject(job as _, child.as_raw_handle() as _) };
        }
    }
    Ok(child)
}

/// The daemon's job object: its handle closes when the daemon exits, however it exits, and the kernel then
/// ends every process in it.
#[cfg(windows)]
fn kill_on_close_job() -> Option<usize> {
    use std::sync::OnceLock;
    use windows_sys::Win32::System::JobObjects::{
        CreateJobObjectW, JobObjectExtendedLimitInformation, SetInformationJobObject,
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };
    static JOB: OnceLock<Option<usize>> = OnceLock::new();
    *JOB.get_or_init(|| {
        // SAFETY: an unnamed job whose handle is kept for the life of the process; the limits are plain data.
        unsafe {
            let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
            if job.is_null() {
                return None;
            }
            let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
            limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            let ok = SetInformationJobObject(
                job,
                JobObjectExtendedLimitInformation,
                (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            );
            (ok != 0).then_some(job as usize)
        }
    })
}
