//! The Windows side of [`crate::ipc`]: a named pipe that only this user can open.
//!
//! * The pipe's security descriptor is `O:<SID>D:P(A;;GA;;;<SID>)S:(ML;;NW;;;ME)`: owned by the user, with a
//!   protected DACL (nothing inherited) whose one ACE grants the user. Everyone else, administrators and SYSTEM
//!   included, is refused by the kernel when opening the pipe. Its integrity label is medium, so that the
//!   user's ordinary (not elevated) processes may open the pipe of a daemon run elevated to read live volumes:
//!   an elevated process's objects are otherwise labelled high, and closed to them.
//! * The first instance is created with `FILE_FLAG_FIRST_PIPE_INSTANCE`: if any other process already holds
//!   the name (a squatter), the daemon refuses to start instead of sharing it. Remote clients are refused
//!   (`PIPE_REJECT_REMOTE_CLIENTS`).
//! * The daemon checks that each client process runs as the user; the client checks the same of the server
//!   before sending anything, and opens the pipe at identification level so a server cannot act as it.
//! * I/O is overlapped so that reads and writes have time limits, like the Unix socket's.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::windows::ffi::OsStrExt;
use std::path::Path;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use windows_sys::Win32::Foundation::{
    CloseHandle, GetLastError, LocalFree, ERROR_ACCESS_DENIED, ERROR_BROKEN_PIPE,
    ERROR_FILE_NOT_FOUND, ERROR_IO_PENDING, ERROR_NO_DATA, ERROR_PIPE_BUSY, ERROR_PIPE_CONNECTED,
    GENERIC_READ, GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE, WAIT_TIMEOUT,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
};
use windows_sys::Win32::Security::{
    GetLengthSid, GetTokenInformation, TokenUser, PSECURITY_DESCRIPTOR, SECURITY_ATTRIBUTES,
    TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, ReadFile, WriteFile, FILE_FLAG_FIRST_PIPE_INSTANCE, FILE_FLAG_OVERLAPPED,
    OPEN_EXISTING, PIPE_ACCESS_DUPLEX, SECURITY_IDENTIFICATION, SECURITY_SQOS_PRESENT,
};
use windows_sys::Win32::System::Pipes::{
    ConnectNamedPipe, CreateNamedPipeW, GetNamedPipeClientProcessId, GetNamedPipeServerProcessId,
    WaitNamedPipeW, PIPE_READMODE_BYTE, PIPE_REJECT_REMOTE_CLIENTS, PIPE_TYPE_BYTE,
    PIPE_UNLIMITED_INSTANCES, PIPE_WAIT,
};
use windows_sys::Win32::System::Threading::{
    CreateEventW, GetCurrentProcess, OpenProcess, OpenProcessToken,
    PROCESS_QUERY_LIMITED_INFORMATION,
};
use windows_sys::Win32::System::IO::{
    CancelIoEx, GetOverlappedResult, GetOverlappedResultEx, OVERLAPPED,
};

use super::Accepted;
use crate::{msg, Result};

/// Bytes the pipe buffers each way: one answer piece (32 KiB) and its JSON framing fit.
const BUFFER: u32 = 64 * 1024;

/// An owned kernel handle, closed on drop.
struct Handle(HANDLE);

// SAFETY: a kernel handle may be used from any thread; each `Conn` does one operation at a time.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: we own the handle and close it once.
        unsafe { CloseHandle(self.0) };
    }
}

fn wide(s: impl AsRef<OsStr>) -> Vec<u16> {
    s.as_ref().encode_wide().chain(Some(0)).collect()
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// The SID of the user this process runs as, as bytes (compared byte for byte: SIDs have one encoding).
fn own_sid() -> io::Result<&'static [u8]> {
    static SID: OnceLock<Vec<u8>> = OnceLock::new();
    if let Some(s) = SID.get() {
        return Ok(s);
    }
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing.
    let sid = token_user_sid(unsafe { GetCurrentProcess() })?;
    Ok(SID.get_or_init(|| sid))
}

/// The user SID of the process `pid`.
fn process_sid(pid: u32) -> io::Result<Vec<u8>> {
    // SAFETY: OpenProcess returns a handle we own or null.
    let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if h.is_null() {
        return Err(last_error());
    }
    let process = Handle(h);
    token_user_sid(process.0)
}

fn token_user_sid(process: HANDLE) -> io::Result<Vec<u8>> {
    let mut token = null_mut();
    // SAFETY: OpenProcessToken writes a handle we then own.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
        return Err(last_error());
    }
    let token = Handle(token);
    // TOKEN_USER holds a pointer into the same buffer; 256 bytes hold any SID (at most 68 bytes) and it.
    let mut buf = vec![0u64; 32];
    let mut len = 0;
    // SAFETY: the buffer is 256 bytes, aligned for TOKEN_USER, and its size is passed.
    let ok = unsafe {
        GetTokenInformation(
            token.0,
            TokenUser,
            buf.as_mut_ptr().cast(),
            (buf.len() * 8) as u32,
            &mut len,
        )
    };
    if ok == 0 {
        return Err(last_error());
    }
    // SAFETY: GetTokenInformation filled a TOKEN_USER whose SID points into `buf`, which is alive.
    unsafe {
        let user = &*(buf.as_ptr() as *const TOKEN_USER);
        let sid = user.User.Sid;
        let n = GetLengthSid(sid) as usize;
        Ok(std::slice::from_raw_parts(sid as *const u8, n).to_vec())
    }
}

/// The owner SID of the pipe that `h` is an end of.
fn pipe_owner(h: &Handle) -> io::Result<Vec<u8>> {
    use windows_sys::Win32::Security::Authorization::{GetSecurityInfo, SE_KERNEL_OBJECT};
    use windows_sys::Win32::Security::OWNER_SECURITY_INFORMATION;
    let (mut owner, mut sd) = (null_mut(), null_mut());
    // SAFETY: asks for the owner only; the descriptor it allocates is freed below and `owner` points into it.
    let err = unsafe {
        GetSecurityInfo(
            h.0,
            SE_KERNEL_OBJECT,
            OWNER_SECURITY_INFORMATION,
            &mut owner,
            null_mut(),
            null_mut(),
            null_mut(),
            &mut sd,
        )
    };
    if err != 0 {
        return Err(io::Error::from_raw_os_error(err as i32));
    }
    // SAFETY: `owner` points to a valid SID inside `sd`, copied out before `sd` is freed.
    let sid = unsafe {
        let n = GetLengthSid(owner) as usize;
        std::slice::from_raw_parts(owner as *const u8, n).to_vec()
    };
    // SAFETY: allocated by GetSecurityInfo.
    unsafe { LocalFree(sd) };
    Ok(sid)
}

/// `S-1-5-21-…` for a SID given as bytes.
fn sid_string(sid: &[u8]) -> io::Result<String> {
    let mut p = null_mut();
    // SAFETY: `sid` is a valid SID; the string is allocated by the system and freed with LocalFree.
    unsafe {
        if ConvertSidToStringSidW(sid.as_ptr() as *mut _, &mut p) == 0 {
            return Err(last_error());
        }
        let len = (0..).take_while(|&i| *p.add(i) != 0).count();
        let s = String::from_utf16_lossy(std::slice::from_raw_parts(p, len));
        LocalFree(p.cast());
        Ok(s)
    }
}

/// The pipe of this user's daemon for the runtime directory `runtime` (so that daemons started with different
/// `UFFS_RUNTIME_DIR`s, as tests do, have different pipes).
pub fn pipe_name(runtime: &Path) -> io::Result<String> {
    let dir = runtime.to_string_lossy().to_lowercase();
    let hash = twox_hash::XxHash3_64::oneshot(dir.as_bytes());
    Ok(format!(
        r"\\.\pipe\uffs-{}-{hash:016x}",
        sid_string(own_sid()?)?
    ))
}

/// A security descriptor (self-relative, allocated by the system) that grants only `sid`.
struct OwnerOnly(PSECURITY_DESCRIPTOR);

// SAFETY: the descriptor is immutable once made and only read by CreateNamedPipeW.
unsafe impl Send for OwnerOnly {}

impl OwnerOnly {
    fn new() -> io::Result<OwnerOnly> {
        let sid = sid_string(own_sid()?)?;
        let sddl = wide(Self::sddl(&sid));
        let mut sd = null_mut();
        // SAFETY: the string is NUL-terminated; the descriptor is freed in Drop.
        if unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &mut sd,
                null_mut(),
            )
        } == 0
        {
            return Err(last_error());
        }
        Ok(OwnerOnly(sd))
    }

    /// Owner: the user; DACL protected from inheritance, one ACE: generic all for the user; label: medium
    /// integrity, no write up.
    fn sddl(sid: &str) -> String {
        format!("O:{sid}D:P(A;;GA;;;{sid})S:(ML;;NW;;;ME)")
    }
}

impl Drop for OwnerOnly {
    fn drop(&mut self) {
        // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW.
        unsafe { LocalFree(self.0) };
    }
}

pub struct Listener {
    name: Vec<u16>,
    display: String,
    sd: OwnerOnly,
    /// The instance waiting for the next client.
    next: Handle,
    /// Signals the wait for a client.
    event: Handle,
}

impl Listener {
    pub fn bind(runtime: &Path) -> Result<Listener> {
        let display = pipe_name(runtime)?;
        let name = wide(&display);
        let sd = OwnerOnly::new()
            .map_err(|e| msg(format!("making the pipe's security descriptor: {e}")))?;
        // The caller holds the daemon lock, so no daemon of ours serves this name: whoever does is a squatter.
        // FILE_FLAG_FIRST_PIPE_INSTANCE refuses a name held by anyone; the probe before it says so in words,
        // and also where that flag is not enforced (Wine).
        let taken = || {
            msg(format!(
                "the pipe {display} exists already, held by another process (not this user's daemon, whose \
                 lock is free); refusing to share it"
            ))
        };
        if pipe_exists(&name) {
            return Err(taken());
        }
        let next = create_instance(&name, &sd, true).map_err(|e| {
            if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) {
                taken()
            } else {
                msg(format!("creating the pipe {display}: {e}"))
            }
        })?;
        Ok(Listener {
            name,
            display,
            sd,
            next,
            event: new_event()?,
        })
    }

    pub fn name(&self) -> String {
        self.display.clone()
    }

    pub fn accept(&mut self) -> io::Result<Accepted> {
        // SAFETY: the instance handle is ours; `overlapped` waits until the connect is over.
        match overlapped(&self.next, &self.event, None, |ov| unsafe {
            ConnectNamedPipe(self.next.0, ov)
        }) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(ERROR_PIPE_CONNECTED as i32) => {}
            // The client came and went already: its connection reads as closed.
            Err(e) if e.raw_os_error() == Some(ERROR_NO_DATA as i32) => {}
            Err(e) => return Err(e),
        }
        // Only now the next instance: one made earlier could take a client that nobody waits for. Meanwhile
        // the connected instance keeps the name alive, so clients see "busy" and wait, not "no daemon".
        let fresh = create_instance(&self.name, &self.sd, false)?;
        let conn = Conn::new(std::mem::replace(&mut self.next, fresh))?;
        let mut pid = 0;
        // SAFETY: a connected server end of a pipe.
        let peer = if unsafe { GetNamedPipeClientProcessId(conn.handle.0, &mut pid) } == 0 {
            Err(last_error())
        } else {
            process_sid(pid)
        };
        Ok(match (peer, own_sid()) {
            (Ok(theirs), Ok(ours)) if theirs == ours => Accepted::Ours(conn),
            (Ok(theirs), _) => {
                let who = sid_string(&theirs).unwrap_or_else(|_| "another user".into());
                Accepted::Stranger(conn, format!("process {pid} of {who}"))
            }
            (Err(e), _) => Accepted::Stranger(conn, format!("process {pid} ({e})")),
        })
    }
}

fn new_event() -> io::Result<Handle> {
    // SAFETY: a manual-reset, unnamed event, owned by the returned Handle.
    let ev = unsafe { CreateEventW(null(), 1, 0, null()) };
    if ev.is_null() {
        return Err(last_error());
    }
    Ok(Handle(ev))
}

/// Starts an overlapped operation on `h` and waits for it at most `ms` milliseconds (None: without limit); an
/// operation still pending then is cancelled and reported as timed out.
fn overlapped(
    h: &Handle,
    event: &Handle,
    ms: Option<u32>,
    start: impl FnOnce(*mut OVERLAPPED) -> i32,
) -> io::Result<u32> {
    // SAFETY: OVERLAPPED is plain data; all zero but the event is its documented initial state.
    let mut ov: OVERLAPPED = unsafe { std::mem::zeroed() };
    ov.hEvent = event.0;
    let mut n = 0;
    if start(&mut ov) != 0 {
        // Completed at once; its count is in `ov`.
        // SAFETY: `ov` belongs to a finished operation on `h`.
        if unsafe { GetOverlappedResult(h.0, &ov, &mut n, 0) } == 0 {
            return Err(last_error());
        }
        return Ok(n);
    }
    // SAFETY: GetLastError has no preconditions.
    let err = unsafe { GetLastError() };
    if err != ERROR_IO_PENDING {
        return Err(io::Error::from_raw_os_error(err as i32));
    }
    // SAFETY: `ov` stays alive and in place until the operation has completed or been cancelled.
    if unsafe { GetOverlappedResultEx(h.0, &ov, &mut n, ms.unwrap_or(u32::MAX), 0) } != 0 {
        return Ok(n);
    }
    let err = unsafe { GetLastError() };
    if err != WAIT_TIMEOUT {
        return Err(io::Error::from_raw_os_error(err as i32));
    }
    // SAFETY: cancel, then wait for the cancellation, so the kernel is done with `ov` and the buffer.
    unsafe {
        CancelIoEx(h.0, &ov);
        if GetOverlappedResult(h.0, &ov, &mut n, 1) != 0 {
            return Ok(n); // it completed just before the cancel
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "the other end of the pipe did not answer in time",
    ))
}

/// Whether some process serves a pipe of this name (sending nothing to it).
fn pipe_exists(name: &[u16]) -> bool {
    // SAFETY: the name is NUL-terminated; a handle we get is closed at once.
    let h = unsafe {
        CreateFileW(
            name.as_ptr(),
            GENERIC_READ,
            0,
            null(),
            OPEN_EXISTING,
            SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
            null_mut(),
        )
    };
    if h != INVALID_HANDLE_VALUE {
        drop(Handle(h));
        return true;
    }
    // Busy or closed to us still means it exists.
    // SAFETY: GetLastError has no preconditions.
    unsafe { GetLastError() != ERROR_FILE_NOT_FOUND }
}

fn create_instance(name: &[u16], sd: &OwnerOnly, first: bool) -> io::Result<Handle> {
    let sa = SECURITY_ATTRIBUTES {
        nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: sd.0,
        bInheritHandle: 0,
    };
    let open = PIPE_ACCESS_DUPLEX
        | FILE_FLAG_OVERLAPPED
        | if first {
            FILE_FLAG_FIRST_PIPE_INSTANCE
        } else {
            0
        };
    // SAFETY: the name is NUL-terminated and `sa` outlives the call.
    let h = unsafe {
        CreateNamedPipeW(
            name.as_ptr(),
            open,
            PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS,
            PIPE_UNLIMITED_INSTANCES,
            BUFFER,
            BUFFER,
            0,
            &sa,
        )
    };
    if h == INVALID_HANDLE_VALUE {
        return Err(last_error());
    }
    Ok(Handle(h))
}

/// One end of a connected pipe. One operation at a time (reads and writes take turns, as the protocol does).
pub struct Conn {
    handle: Handle,
    event: Handle,
    /// Milliseconds, 0 for none.
    read_ms: AtomicU32,
    write_ms: AtomicU32,
}

impl Conn {
    fn new(handle: Handle) -> io::Result<Conn> {
        Ok(Conn {
            handle,
            event: new_event()?,
            read_ms: AtomicU32::new(0),
            write_ms: AtomicU32::new(0),
        })
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.read_ms.store(millis(t), Ordering::Relaxed);
        Ok(())
    }

    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.write_ms.store(millis(t), Ordering::Relaxed);
        Ok(())
    }

    fn io(&self, ms: &AtomicU32, start: impl FnOnce(*mut OVERLAPPED) -> i32) -> io::Result<u32> {
        let limit = Some(ms.load(Ordering::Relaxed)).filter(|&m| m != 0);
        overlapped(&self.handle, &self.event, limit, start)
    }
}

fn millis(t: Option<Duration>) -> u32 {
    t.map_or(0, |d| d.as_millis().clamp(1, u32::MAX as u128 - 1) as u32)
}

impl Read for &Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let len = buf.len().min(u32::MAX as usize) as u32;
        let ptr = buf.as_mut_ptr();
        // SAFETY: the buffer outlives the operation (`io` waits for completion or cancellation).
        match self.io(&self.read_ms, |ov| unsafe {
            ReadFile(self.handle.0, ptr, len, null_mut(), ov)
        }) {
            Ok(n) => Ok(n as usize),
            // The other end closed: end of stream.
            Err(e) if e.raw_os_error() == Some(ERROR_BROKEN_PIPE as i32) => Ok(0),
            Err(e) => Err(e),
        }
    }
}

impl Write for &Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let len = buf.len().min(u32::MAX as usize) as u32;
        // SAFETY: the buffer outlives the operation (`io` waits for completion or cancellation).
        let n = self.io(&self.write_ms, |ov| unsafe {
            WriteFile(self.handle.0, buf.as_ptr(), len, null_mut(), ov)
        })?;
        Ok(n as usize)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Opens the pipe; `Ok(None)` when no daemon serves it. Waits a little while every instance is busy.
fn open(runtime: &Path) -> io::Result<Option<Conn>> {
    let name = wide(pipe_name(runtime)?);
    for _ in 0..50 {
        // SAFETY: the name is NUL-terminated; the handle is owned by the Conn. Identification level: the server
        // may learn who we are but not act as us.
        let h = unsafe {
            CreateFileW(
                name.as_ptr(),
                GENERIC_READ | GENERIC_WRITE,
                0,
                null(),
                OPEN_EXISTING,
                FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
                null_mut(),
            )
        };
        if h != INVALID_HANDLE_VALUE {
            return Conn::new(Handle(h)).map(Some);
        }
        // SAFETY: GetLastError has no preconditions.
        match unsafe { GetLastError() } {
            ERROR_FILE_NOT_FOUND => return Ok(None),
            ERROR_PIPE_BUSY => {
                // SAFETY: as above.
                unsafe { WaitNamedPipeW(name.as_ptr(), 200) };
            }
            e => return Err(io::Error::from_raw_os_error(e as i32)),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "every instance of the daemon's pipe stayed busy",
    ))
}

/// Connects to the daemon of this user; `Ok(None)` when none is listening. A pipe served by a process of
/// another user (a squatter) is refused before anything is sent.
pub fn connect(runtime: &Path) -> Result<Option<Conn>> {
    let Some(conn) = open(runtime)? else {
        return Ok(None);
    };
    let mut pid = 0;
    // SAFETY: a connected client end of a pipe.
    if unsafe { GetNamedPipeServerProcessId(conn.handle.0, &mut pid) } == 0 {
        return Err(msg(format!(
            "asking who serves the daemon's pipe: {}",
            last_error()
        )));
    }
    // An ordinary process may not read the token of an elevated daemon's process; then the pipe's owner
    // tells: only the user (or an administrator, who may do anything anyway) can make a pipe owned by them.
    let theirs = match process_sid(pid) {
        Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) => pipe_owner(&conn.handle),
        found => found,
    }
    .map_err(|e| msg(format!("checking the daemon process {pid}: {e}")))?;
    if theirs != own_sid()? {
        return Err(msg(format!(
            "the daemon's pipe is served by process {pid} of another user ({}); refusing to talk to it",
            sid_string(&theirs).unwrap_or_default()
        )));
    }
    Ok(Some(conn))
}

/// Wakes a listener blocked in `accept` (after a stop request).
pub fn wake(runtime: &Path) {
    let _ = open(runtime);
}

#[cfg(test)]
mod tests {
    use super::*;
    use windows_sys::Win32::Security::Authorization::{
        ConvertSecurityDescriptorToStringSecurityDescriptorW, GetSecurityInfo, SE_KERNEL_OBJECT,
    };
    use windows_sys::Win32::Security::{DACL_SECURITY_INFORMATION, OWNER_SECURITY_INFORMATION};

    /// The security descriptor the kernel reports for a handle, as SDDL (owner and DACL).
    fn sddl_of(h: HANDLE) -> String {
        let mut sd = null_mut();
        let info = OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
        // SAFETY: the descriptor and the string are allocated by the system and freed with LocalFree.
        unsafe {
            let r = GetSecurityInfo(
                h,
                SE_KERNEL_OBJECT,
                info,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut(),
                &mut sd,
            );
            assert_eq!(r, 0, "GetSecurityInfo failed: {r}");
            let mut s = null_mut();
            assert_ne!(
                ConvertSecurityDescriptorToStringSecurityDescriptorW(
                    sd,
                    SDDL_REVISION_1,
                    info,
                    &mut s,
                    null_mut()
                ),
                0
            );
            let len = (0..).take_while(|&i| *s.add(i) != 0).count();
            let out = String::from_utf16_lossy(std::slice::from_raw_parts(s, len));
            LocalFree(s.cast());
            LocalFree(sd);
            out
        }
    }

    fn runtime(tag: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("uffs-ipc-test-{tag}-{}", std::process::id()))
    }

    #[test]
    fn the_pipe_grants_only_its_owner() {
        let rt = runtime("sd");
        let listener = Listener::bind(&rt).unwrap();
        let sid = sid_string(own_sid().unwrap()).unwrap();
        let sddl = sddl_of(listener.next.0);
        // Owner: us. DACL: protected, exactly one ACE, allowing us (GA or its file-specific form FA).
        assert!(sddl.starts_with(&format!("O:{sid}D:P")), "{sddl}");
        let dacl = &sddl[sddl.find("D:").unwrap()..];
        assert_eq!(dacl.matches('(').count(), 1, "{sddl}");
        assert!(dacl.starts_with("D:P(A;;"), "{sddl}");
        assert!(dacl.ends_with(&format!(";;;{sid})")), "{sddl}");
        assert!(
            dacl.contains(";;GA;;;") || dacl.contains(";;FA;;;"),
            "{sddl}"
        );
        assert!(
            listener.name().starts_with(r"\\.\pipe\uffs-S-1-"),
            "{}",
            listener.name()
        );
    }

    #[test]
    fn a_taken_pipe_name_is_refused() {
        let rt = runtime("squat");
        // A "squatter" creates the name first; the daemon must not share it.
        let squatter = create_instance(
            &wide(pipe_name(&rt).unwrap()),
            &OwnerOnly::new().unwrap(),
            true,
        )
        .unwrap();
        let err = Listener::bind(&rt)
            .err()
            .expect("bind must fail")
            .to_string();
        assert!(err.contains("exists already"), "{err}");
        drop(squatter);
        assert!(Listener::bind(&rt).is_ok());
    }

    #[test]
    fn requests_and_answers_cross_with_time_limits() {
        let rt = runtime("io");
        assert!(connect(&rt).unwrap().is_none(), "nothing listens yet");
        let mut listener = Listener::bind(&rt).unwrap();
        let server = std::thread::spawn(move || {
            let mut served = Vec::new();
            for _ in 0..2 {
                let Accepted::Ours(conn) = listener.accept().unwrap() else {
                    panic!("our own process was taken for a stranger");
                };
                conn.set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                let mut buf = [0u8; 16];
                match (&conn).read(&mut buf) {
                    Ok(n) => {
                        // A reply larger than the pipe buffer, so writes must wait for the reader.
                        let reply = vec![buf[0]; 3 * BUFFER as usize];
                        (&conn).write_all(&reply).unwrap();
                        served.push(format!("read {n}"));
                    }
                    Err(e) => served.push(format!("{:?}", e.kind())),
                }
            }
            served
        });
        // A client that sends and reads everything back.
        let c = connect(&rt).unwrap().expect("the listener is there");
        (&c).write_all(b"x").unwrap();
        let mut got = Vec::new();
        (&c).read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), 3 * BUFFER as usize);
        assert!(got.iter().all(|&b| b == b'x'));
        // A client that connects and says nothing: the server's read times out.
        let idle = connect(&rt).unwrap().unwrap();
        let served = server.join().unwrap();
        drop(idle);
        assert_eq!(served, vec!["read 1".to_string(), "TimedOut".to_string()]);
    }
}
