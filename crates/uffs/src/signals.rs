//! Ending on SIGINT, SIGTERM or SIGHUP without leaving a partial file. The temporary files being written (every
//! output goes to a temporary name beside it, renamed into place once whole: `uffs_index::temp`) are removed,
//! then the process ends by the same signal, its default action restored: a shell sees 130, 143 or 129, and a
//! script running uffs in a loop stops on Ctrl-C as it should (a plain exit with that status would tell it the
//! signal was handled). A signal that was ignored when uffs started (`nohup`, a background job) stays ignored.
//!
//! The handler only writes the signal's number to a pipe, the one thing it may safely do while the thread it
//! interrupted holds any lock; a thread waiting on the pipe does the rest. Installed for the commands that
//! write files, before they start any other thread.
//!
//! On Windows nothing is installed: Ctrl-C ends the process as before, and a temporary file it leaves
//! (`.NAME.tmpPID`, `.NAME.uffs-PID.tmp`) is removed by the daemon's next start when it is one of its own.

/// Installs the handlers (once; later calls do nothing).
pub fn install() {
    #[cfg(unix)]
    unix::install();
}

#[cfg(unix)]
mod unix {
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::Once;

    /// The pipe's writing end, for the handler.
    static PIPE: AtomicI32 = AtomicI32::new(-1);

    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    extern "C" fn on_signal(sig: libc::c_int) {
        let byte = sig as u8;
        // SAFETY: write(2) is async-signal-safe; it reads one byte of this frame.
        unsafe {
            libc::write(PIPE.load(Ordering::Relaxed), (&raw const byte).cast(), 1);
        }
    }

    pub(super) fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let mut fds = [0 as libc::c_int; 2];
            // SAFETY: pipe(2) fills the two descriptors; FD_CLOEXEC keeps them out of child processes.
            unsafe {
                if libc::pipe(fds.as_mut_ptr()) != 0 {
                    return;
                }
                for fd in fds {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            let [read_end, write_end] = fds;
            PIPE.store(write_end, Ordering::Relaxed);
            let waiter = std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || wait(read_end));
            if waiter.is_err() {
                return;
            }
            for sig in SIGNALS {
                // SAFETY: sigaction with a zeroed struct is a query; the handler set after only writes to a pipe.
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                        || old.sa_sigaction == libc::SIG_IGN
                    {
                        continue;
                    }
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                    sa.sa_flags = libc::SA_RESTART;
                    libc::sigemptyset(&mut sa.sa_mask);
                    libc::sigaction(sig, &sa, std::ptr::null_mut());
                }
            }
        });
    }

    /// Waits for a signal's number on the pipe; then removes the temporary files and ends the process by that
    /// signal.
    fn wait(read_end: libc::c_int) {
        let mut byte = 0u8;
        loop {
            // SAFETY: reads one byte into this frame.
            let n = unsafe { libc::read(read_end, (&raw mut byte).cast(), 1) };
            if n == 1 {
                break;
            }
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        let sig = libc::c_int::from(byte);
        // Keeps the registry locked: no other thread makes or renames a temporary file after this.
        uffs_index::temp::remove_all();
        // SAFETY: restores the default action and raises the signal in this thread, which ends the process; the
        // exit is for a signal that somehow did not.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
            libc::_exit(128 + sig);
        }
    }
}
