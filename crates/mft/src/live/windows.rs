//! The Windows side of [`crate::live`]: a volume device opened for overlapped, unbuffered reads; the device and
//! file-system controls it is asked (their bytes are [`crate::ioctl`]'s); the drive letters in use.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::sync::atomic::{AtomicBool, Ordering};

use windows_sys::Win32::Foundation::{
    CloseHandle, GetLastError, ERROR_IO_PENDING, GENERIC_READ, HANDLE, INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, ReadFile, FILE_FLAG_NO_BUFFERING, FILE_FLAG_OVERLAPPED, FILE_SHARE_READ,
    FILE_SHARE_WRITE, OPEN_EXISTING,
};
use windows_sys::Win32::System::Threading::CreateEventW;
use windows_sys::Win32::System::IO::{DeviceIoControl, GetOverlappedResult, OVERLAPPED};

use crate::device::IoBuf;
use crate::ioctl::{self, IoProfile};

/// An open volume (or disk) device: every read is overlapped and unbuffered, so its offset and length are
/// multiples of [`LiveDevice::align`] and its buffer starts on a page; [`LiveDevice::read_at`] takes care of
/// reads that are not so.
#[derive(Debug)]
pub struct LiveDevice {
    handle: OwnedHandle,
    pub path: String,
    /// The device's logical sector size: unbuffered reads start, end and land at multiples of it.
    pub align: usize,
    /// Bytes, from IOCTL_DISK_GET_LENGTH_INFO; `None` when the device does not say.
    pub len: Option<u64>,
    /// Reads in flight and their size, from the device's bus type and seek penalty.
    pub profile: IoProfile,
    /// Cleared once the file system refuses FSCTL_GET_NTFS_FILE_RECORD as not supported.
    file_records: AtomicBool,
    /// The NTFS boot sector at the device's start, read once at open (`None` for a disk or another file system).
    pub boot: Option<uffs_ntfs::boot::BootSector>,
    /// The device's first 4 KiB as read at open (empty when they could not be read): another file system's
    /// header gives the length (a USB stick `E:`) when the device does not say its own.
    pub head: Vec<u8>,
    /// The journal's id and next USN taken by [`LiveDevice::settle`], before the volume's cache was
    /// flushed ((0, 0): no journal).
    pub journal_at_open: Option<(u64, u64)>,
}

/// An event for one overlapped call, closed when dropped.
struct Event(HANDLE);

// SAFETY: an event handle may be used and closed from any thread.
unsafe impl Send for Event {}
// SAFETY: SetEvent and waits on one event from several threads are what events are for.
unsafe impl Sync for Event {}

/// Set once to end a [`LiveDevice::wait_journal`] from another thread.
pub struct StopSignal(Event);

impl StopSignal {
    pub fn new() -> io::Result<StopSignal> {
        Event::new().map(StopSignal)
    }

    pub fn stop(&self) {
        // SAFETY: a valid event handle owned by self.
        unsafe { windows_sys::Win32::System::Threading::SetEvent(self.0 .0) };
    }

    /// Whether [`StopSignal::stop`] was called.
    pub fn stopped(&self) -> bool {
        use windows_sys::Win32::Foundation::WAIT_OBJECT_0;
        // SAFETY: a valid event handle owned by self; a zero timeout only looks.
        unsafe {
            windows_sys::Win32::System::Threading::WaitForSingleObject(self.0 .0, 0)
                == WAIT_OBJECT_0
        }
    }
}

impl Event {
    fn new() -> io::Result<Event> {
        // SAFETY: an unnamed manual-reset event with default security; the handle is owned by `Event`.
        let h = unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) };
        if h.is_null() {
            return Err(io::Error::last_os_error());
        }
        Ok(Event(h))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the handle was made by CreateEventW and is closed once.
        unsafe { CloseHandle(self.0) };
    }
}

/// This thread's event for its overlapped calls, made once (a call on one thread is awaited before the next
/// starts, and ReadFile and DeviceIoControl reset the event as they begin): making one per call costs two
/// round trips to the kernel, or under Wine to its server, per read.
fn thread_event() -> io::Result<HANDLE> {
    thread_local! {
        static EVENT: std::cell::OnceCell<Event> = const { std::cell::OnceCell::new() };
    }
    EVENT.with(|e| {
        if let Some(ev) = e.get() {
            return Ok(ev.0);
        }
        let ev = Event::new()?;
        let h = ev.0;
        let _ = e.set(ev);
        Ok(h)
    })
}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain([0]).collect()
}

/// Every drive letter in use, with its kind, file system and label (GetLogicalDrives, GetDriveTypeW,
/// GetVolumeInformationW).
pub fn drives() -> Vec<super::Drive> {
    use windows_sys::Win32::Storage::FileSystem::{
        GetDriveTypeW, GetLogicalDrives, GetVolumeInformationW,
    };
    use windows_sys::Win32::System::Diagnostics::Debug::{
        SetThreadErrorMode, SEM_FAILCRITICALERRORS,
    };
    // A removable drive without its medium would otherwise put up a "no disk" dialog.
    let mut before = 0;
    // SAFETY: changes this thread's error mode only; restored below.
    unsafe { SetThreadErrorMode(SEM_FAILCRITICALERRORS, &mut before) };
    // SAFETY: no arguments; returns a bit mask.
    let mask = unsafe { GetLogicalDrives() };
    let mut out = Vec::new();
    for i in 0..26u8 {
        if mask & (1 << i) == 0 {
            continue;
        }
        let letter = char::from(b'A' + i);
        let root = wide(&format!("{letter}:\\"));
        // SAFETY: `root` is NUL-terminated.
        let kind = super::DriveKind::from_drive_type(unsafe { GetDriveTypeW(root.as_ptr()) });
        // Only local disks are asked for their file system: a network drive may hang for long, a CD drive
        // without a disc is of no use.
        if !matches!(kind, super::DriveKind::Fixed | super::DriveKind::Removable) {
            out.push(super::Drive {
                letter,
                kind,
                fs: String::new(),
                label: String::new(),
            });
            continue;
        }
        let (mut label, mut fs) = ([0u16; 261], [0u16; 261]);
        let (mut serial, mut max_len, mut flags) = (0u32, 0u32, 0u32);
        // SAFETY: the buffers' lengths are passed with them; the out-parameters are valid.
        let ok = unsafe {
            GetVolumeInformationW(
                root.as_ptr(),
                label.as_mut_ptr(),
                label.len() as u32,
                &mut serial,
                &mut max_len,
                &mut flags,
                fs.as_mut_ptr(),
                fs.len() as u32,
            )
        } != 0;
        let text = |b: &[u16]| {
            let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf16_lossy(&b[..n])
        };
        out.push(super::Drive {
            letter,
            kind,
            fs: if ok { text(&fs) } else { String::new() },
            label: if ok { text(&label) } else { String::new() },
        });
    }
    // SAFETY: as above.
    unsafe { SetThreadErrorMode(before, std::ptr::null_mut()) };
    out
}

impl LiveDevice {
    /// Opens `path` (`\\.\C:`, `\\?\Volume{GUID}`) for reading, sharing read and write with the running
    /// system, and asks the device how to read it.
    pub fn open(path: &str) -> io::Result<LiveDevice> {
        Self::open_with(path, GENERIC_READ)
    }

    /// Opens `path` as [`LiveDevice::open`] does, with a handle that may also write: for the controls
    /// that change the volume (FSCTL_CREATE_USN_JOURNAL, which fsutil sends on such a handle). Nothing in
    /// uffs writes through it.
    pub fn open_for_writing(path: &str) -> io::Result<LiveDevice> {
        Self::open_with(
            path,
            GENERIC_READ | windows_sys::Win32::Foundation::GENERIC_WRITE,
        )
    }

    fn open_with(path: &str, access: u32) -> io::Result<LiveDevice> {
        let name = wide(path);
        // SAFETY: `name` is NUL-terminated and outlives the call; no security attributes or template.
        let h = unsafe {
            CreateFileW(
                name.as_ptr(),
                access,
                FILE_SHARE_READ | FILE_SHARE_WRITE,
                std::ptr::null(),
                OPEN_EXISTING,
                FILE_FLAG_OVERLAPPED | FILE_FLAG_NO_BUFFERING,
                std::ptr::null_mut(),
            )
        };
        if h == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a valid handle just opened, owned from here on.
        let handle = unsafe { OwnedHandle::from_raw_handle(h as _) };
        let mut dev = LiveDevice {
            handle,
            path: path.to_string(),
            align: 4096,
            len: None,
            profile: IoProfile::unknown(),
            file_records: AtomicBool::new(true),
            journal_at_open: None,
            boot: None,
            head: Vec::new(),
        };
        // 4096-byte aligned, which suits any sector size up to that.
        let mut head = IoBuf::zeroed(4096);
        if dev.read_aligned(&mut head, 0).is_ok() {
            dev.boot = uffs_ntfs::boot::BootSector::parse(&head).ok();
            dev.head = head.to_vec();
        }
        let mut out = [0u8; 8];
        if dev
            .ioctl(ioctl::IOCTL_DISK_GET_LENGTH_INFO, &[], &mut out)
            .ok()
            == Some(8)
        {
            dev.len = ioctl::decode_length_info(&out).filter(|&n| n > 0);
        }
        dev.align = dev.logical_sector();
        dev.profile = dev.probe_profile();
        Ok(dev)
    }

    /// The logical sector size: as the device says (its access alignment, else its geometry), else as the
    /// NTFS boot sector says, else 4096.
    fn logical_sector(&self) -> usize {
        let plausible =
            |n: u32| (n.is_power_of_two() && (512..=4096).contains(&n)).then_some(n as usize);
        let mut out = [0u8; 256];
        let query = ioctl::storage_property_query(ioctl::STORAGE_ACCESS_ALIGNMENT_PROPERTY, 0);
        let said = self
            .ioctl(ioctl::IOCTL_STORAGE_QUERY_PROPERTY, &query, &mut out)
            .ok()
            .and_then(|n| ioctl::decode_access_alignment(&out[..n]))
            .and_then(|a| plausible(a.bytes_per_logical_sector))
            .or_else(|| {
                self.ioctl(ioctl::IOCTL_DISK_GET_DRIVE_GEOMETRY_EX, &[], &mut out)
                    .ok()
                    .and_then(|n| ioctl::decode_disk_geometry_ex(&out[..n]))
                    .and_then(|g| plausible(g.bytes_per_sector))
            });
        if let Some(n) = said {
            return n;
        }
        self.boot
            .and_then(|b| plausible(b.bytes_per_sector))
            .unwrap_or(4096)
    }

    /// Readies the volume for a whole read: takes the journal's position, then flushes the volume's cache
    /// (FlushFileBuffers on a handle opened for writing, as an administrator may), so that what changed
    /// before that position is on disk for the raw read and what changes after is in the journal, read
    /// by the first update. Without the flush (refused), the raw MFT may lag the cache by a few seconds.
    pub fn settle(&mut self) {
        self.journal_at_open = Some(match self.query_journal() {
            Ok(Some(j)) => (j.journal_id, j.next_usn),
            _ => (0, 0),
        });
        use windows_sys::Win32::Foundation::GENERIC_WRITE;
        use windows_sys::Win32::Storage::FileSystem::FlushFileBuffers;
        let name = wide(&self.path);
        // SAFETY: `name` is NUL-terminated; the handle is owned (and closed) below.
        let h = unsafe {
            CreateFileW(
                name.as_ptr(),
                GENERIC_READ | GENERIC_WRITE,
                FILE_SHARE_READ | FILE_SHARE_WRITE,
                std::ptr::null(),
                OPEN_EXISTING,
                0,
                std::ptr::null_mut(),
            )
        };
        if h != INVALID_HANDLE_VALUE {
            // SAFETY: a valid handle just opened, owned from here on (closed when dropped).
            let w = unsafe { OwnedHandle::from_raw_handle(h as _) };
            // SAFETY: flushes the volume behind a valid handle; nothing is written but the cache.
            unsafe { FlushFileBuffers(w.as_raw_handle() as HANDLE) };
        }
    }

    /// Reads in flight and their size from the device's bus type and seek penalty (each `None` where the
    /// device does not answer).
    fn probe_profile(&self) -> IoProfile {
        let mut out = vec![0u8; 1024];
        let query = ioctl::storage_property_query(ioctl::STORAGE_DEVICE_PROPERTY, 0);
        let bus = self
            .ioctl(ioctl::IOCTL_STORAGE_QUERY_PROPERTY, &query, &mut out)
            .ok()
            .and_then(|n| ioctl::decode_device_descriptor(&out[..n]))
            .map(|d| d.bus_type);
        let query = ioctl::storage_property_query(ioctl::STORAGE_DEVICE_SEEK_PENALTY_PROPERTY, 0);
        let seek = self
            .ioctl(ioctl::IOCTL_STORAGE_QUERY_PROPERTY, &query, &mut out)
            .ok()
            .and_then(|n| ioctl::decode_seek_penalty(&out[..n]));
        ioctl::io_profile(bus, seek)
    }

    fn raw(&self) -> HANDLE {
        self.handle.as_raw_handle() as HANDLE
    }

    /// Sends control `code` with `input`; returns the bytes written to `output`.
    pub fn ioctl(&self, code: u32, input: &[u8], output: &mut [u8]) -> io::Result<usize> {
        // SAFETY: OVERLAPPED is plain data; zeroed is its documented initial state.
        let mut ov: OVERLAPPED = unsafe { std::mem::zeroed() };
        ov.hEvent = thread_event()?;
        // SAFETY: the buffers and `ov` outlive the call and its completion, which is awaited below
        // before they are dropped.
        let ok = unsafe {
            DeviceIoControl(
                self.raw(),
                code,
                if input.is_empty() {
                    std::ptr::null()
                } else {
                    input.as_ptr().cast()
                },
                input.len() as u32,
                output.as_mut_ptr().cast(),
                output.len() as u32,
                std::ptr::null_mut(),
                &mut ov,
            )
        };
        self.finish(ok, &mut ov)
    }

    /// Completes an overlapped call: waits for it when it is pending.
    /// The byte count comes from GetOverlappedResult in both cases: the call's own count is not to be
    /// relied on for an overlapped call (it returns at once for one already complete).
    fn finish(&self, ok: i32, ov: &mut OVERLAPPED) -> io::Result<usize> {
        // SAFETY: reads this thread's last error, set by the call just made.
        if ok == 0 && unsafe { GetLastError() } != ERROR_IO_PENDING {
            return Err(io::Error::last_os_error());
        }
        let mut n = 0u32;
        // SAFETY: `ov` is the structure of the pending call; waiting (bWait = TRUE) until it completes.
        if unsafe { GetOverlappedResult(self.raw(), ov, &mut n, 1) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// The volume's change journal (FSCTL_QUERY_USN_JOURNAL); `None` when it has none (or one being
    /// deleted).
    pub fn query_journal(&self) -> io::Result<Option<ioctl::UsnJournalData>> {
        const ERROR_JOURNAL_DELETE_IN_PROGRESS: i32 = 1178;
        const ERROR_JOURNAL_NOT_ACTIVE: i32 = 1179;
        let mut out = [0u8; ioctl::USN_JOURNAL_DATA_V2_SIZE];
        match self.ioctl(ioctl::FSCTL_QUERY_USN_JOURNAL, &[], &mut out) {
            Ok(n) => ioctl::UsnJournalData::decode(&out[..n])
                .map(Some)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(ERROR_JOURNAL_NOT_ACTIVE | ERROR_JOURNAL_DELETE_IN_PROGRESS)
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The volume's serial number as Windows reports it (the low 32 bits of the NTFS serial), from the
    /// boot sector.
    pub fn volume_serial(&self) -> Option<u64> {
        self.boot.map(|b| b.serial & 0xFFFF_FFFF)
    }

    /// Makes a change journal (FSCTL_CREATE_USN_JOURNAL), or changes the size of the one there: only when
    /// the user asks.
    pub fn create_journal(&self, maximum_size: u64, allocation_delta: u64) -> io::Result<()> {
        let input = ioctl::create_usn_journal_input(maximum_size, allocation_delta);
        self.ioctl(ioctl::FSCTL_CREATE_USN_JOURNAL, &input, &mut [])
            .map(|_| ())
    }

    /// Every journal record from `start` up to `end` (FSCTL_READ_USN_JOURNAL, not waiting), each given to
    /// `f`; returns the USN to read from next time.
    pub fn read_journal(
        &self,
        journal_id: u64,
        start: u64,
        end: u64,
        mut f: impl FnMut(&uffs_ntfs::usn::UsnRecord<'_>),
    ) -> io::Result<u64> {
        let mut out = IoBuf::zeroed(64 << 10);
        let mut at = start;
        while at < end {
            let input = ioctl::read_usn_journal_input(at, u32::MAX, false, 0, 0, journal_id, 2, 3);
            let n = self.ioctl(ioctl::FSCTL_READ_USN_JOURNAL, &input, &mut out)?;
            let got = ioctl::ReadJournalOutput::decode(&out[..n])
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            got.records.iter().for_each(&mut f);
            if got.next_usn <= at {
                break;
            }
            at = got.next_usn;
        }
        Ok(at)
    }

    /// Waits until the journal holds records past `start` (FSCTL_READ_USN_JOURNAL with BytesToWaitFor: the
    /// thread sleeps in the kernel, no polling while the drive is idle) or `stop` is signalled. True when
    /// there are records; false when stopped.
    pub fn wait_journal(&self, journal_id: u64, start: u64, stop: &StopSignal) -> io::Result<bool> {
        use windows_sys::Win32::Foundation::{WAIT_OBJECT_0, WAIT_TIMEOUT};
        use windows_sys::Win32::System::Threading::{
            WaitForMultipleObjects, WaitForSingleObject, INFINITE,
        };
        use windows_sys::Win32::System::IO::CancelIoEx;
        // Stopped already: a call that completes at once (records are there) would never look.
        // SAFETY: a valid event handle.
        if unsafe { WaitForSingleObject(stop.0 .0, 0) } != WAIT_TIMEOUT {
            return Ok(false);
        }
        let input = ioctl::read_usn_journal_input(start, u32::MAX, false, 0, 1, journal_id, 2, 3);
        let mut out = vec![0u8; 4096];
        let event = Event::new()?;
        // SAFETY: OVERLAPPED is plain data; zeroed is its documented initial state.
        let mut ov: OVERLAPPED = unsafe { std::mem::zeroed() };
        ov.hEvent = event.0;
        // SAFETY: `input`, `out` and `ov` live until the call has completed or been cancelled and waited
        // for, below.
        let ok = unsafe {
            DeviceIoControl(
                self.raw(),
                ioctl::FSCTL_READ_USN_JOURNAL,
                input.as_ptr().cast(),
                input.len() as u32,
                out.as_mut_ptr().cast(),
                out.len() as u32,
                std::ptr::null_mut(),
                &mut ov,
            )
        };
        // SAFETY: reads this thread's last error, set by the call just made.
        let pending = ok == 0 && unsafe { GetLastError() } == ERROR_IO_PENDING;
        if ok == 0 && !pending {
            return Err(io::Error::last_os_error());
        }
        if pending {
            let handles = [event.0, stop.0 .0];
            // SAFETY: both handles are valid events.
            let woke = unsafe { WaitForMultipleObjects(2, handles.as_ptr(), 0, INFINITE) };
            if woke != WAIT_OBJECT_0 {
                let failed = (woke != WAIT_OBJECT_0 + 1).then(io::Error::last_os_error);
                // SAFETY: cancels this handle's pending call made with `ov`, then waits for it to end so
                // that its buffers may be freed.
                unsafe {
                    CancelIoEx(self.raw(), &ov);
                    GetOverlappedResult(self.raw(), &ov, &mut 0, 1);
                }
                return failed.map_or(Ok(false), Err);
            }
        }
        let mut n = 0u32;
        // SAFETY: the call has completed (synchronously, or its event is set); this only reads its result.
        if unsafe { GetOverlappedResult(self.raw(), &ov, &mut n, 1) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(true)
    }

    /// Reads record `number` through the file system (FSCTL_GET_NTFS_FILE_RECORD), which has it as it is
    /// now even where the raw MFT on disk lags; `buf` gets it with its update sequence in place, as read
    /// raw. False (and `buf` zeroed) when the record is not in use.
    pub fn file_record(&self, number: u64, buf: &mut [u8]) -> io::Result<bool> {
        const ERROR_INVALID_FUNCTION: i32 = 1;
        const ERROR_NOT_SUPPORTED: i32 = 50;
        let mut out = vec![0u8; ioctl::ntfs_file_record_output_len(buf.len() as u32)];
        let n = self
            .ioctl(
                ioctl::FSCTL_GET_NTFS_FILE_RECORD,
                &ioctl::ntfs_file_record_input(number),
                &mut out,
            )
            .inspect_err(|e| {
                if matches!(
                    e.raw_os_error(),
                    Some(ERROR_INVALID_FUNCTION | ERROR_NOT_SUPPORTED)
                ) {
                    self.file_records.store(false, Ordering::Relaxed);
                }
            })?;
        let got = ioctl::NtfsFileRecord::decode(&out[..n])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        // The control returns the nearest record in use at or below the one asked for.
        if !got.is_record(number) || got.record.len() != buf.len() {
            buf.fill(0);
            return Ok(false);
        }
        buf.copy_from_slice(got.record);
        uffs_ntfs::record::protect(buf);
        Ok(true)
    }

    /// Whether the file system answers FSCTL_GET_NTFS_FILE_RECORD (as far as known: true until refused).
    pub fn answers_file_records(&self) -> bool {
        self.file_records.load(Ordering::Relaxed)
    }

    /// Fills `buf` from byte `offset`: directly when all three are aligned, else through an aligned
    /// buffer covering the sectors around the range.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let a = self.align;
        // Addresses want the physical sector's alignment (a 512-byte-sector view of a 4K disk too): the
        // page's, which IoBuf gives, covers every sector size uffs reads.
        if (buf.as_ptr() as usize).is_multiple_of(4096)
            && buf.len().is_multiple_of(a)
            && offset.is_multiple_of(a as u64)
        {
            return self.read_aligned(buf, offset);
        }
        let start = offset - offset % a as u64;
        let end = (offset + buf.len() as u64).div_ceil(a as u64) * a as u64;
        let mut bounce = IoBuf::zeroed((end - start) as usize);
        self.read_aligned(&mut bounce, start)?;
        let skip = (offset - start) as usize;
        buf.copy_from_slice(&bounce[skip..skip + buf.len()]);
        Ok(())
    }

    /// One or more overlapped reads (at most 64 MiB each) of aligned ranges.
    fn read_aligned(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            let len = buf.len().min(64 << 20);
            // SAFETY: OVERLAPPED is plain data; zeroed is its documented initial state.
            let mut ov: OVERLAPPED = unsafe { std::mem::zeroed() };
            ov.Anonymous.Anonymous.Offset = offset as u32;
            ov.Anonymous.Anonymous.OffsetHigh = (offset >> 32) as u32;
            ov.hEvent = thread_event()?;
            // SAFETY: `buf` and `ov` outlive the read, which `finish` awaits before returning.
            let ok = unsafe {
                ReadFile(
                    self.raw(),
                    buf.as_mut_ptr(),
                    len as u32,
                    std::ptr::null_mut(),
                    &mut ov,
                )
            };
            let got = self.finish(ok, &mut ov)?;
            if got == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            buf = &mut buf[got..];
            offset += got as u64;
        }
        Ok(())
    }
}
