//! The contents of many files, read at disk speed: what `uffs hash`, `uffs grep`, `content:` and file types read
//! with.
//!
//! Reading files one at a time, each with its own small reads, costs a seek and a system call per file and
//! leaves the other cores idle. [`plan`] opens every wanted stream (its record and runlist, as
//! [`open_stream`] does) and orders them by where their data starts on the volume; files
//! whose data lies close together (holes of at most [`Options::gap`]) are grouped into one read of at most
//! [`Options::window`] bytes. [`Plan::read`] then runs workers on every core: each takes the next group in
//! volume order, reads it with one large read (several groups are in flight, one per worker) and hands each
//! file of the group, in turn, to the visitor as a [`File`]: an `io::Read` from the file's first byte, served
//! from the group's bytes (a large or scattered file is read through the volume with large reads as it goes).
//!
//! ```no_run
//! use std::io::Read;
//! use uffs_mft::content::many::{self, Options, Progress, Wanted};
//! // `uffs_source::open("disk.img", None)?.volumes` for any source; an NTFS volume image directly:
//! let device = uffs_mft::device::Device::open(std::path::Path::new("disk.img"))?;
//! let vol = &uffs_mft::Volume::open_ntfs("disk.img", device, None)?;
//! let wanted = vec![Wanted::new(120, ""), Wanted::new(121, "")];
//! let plan = many::plan(vol, wanted, &Options::default());
//! println!("{} files, {} bytes", plan.files(), plan.bytes());
//! plan.read(&Progress::default(), |item, file| match file {
//!     Ok(f) => {
//!         let mut data = Vec::new();
//!         f.read_to_end(&mut data).ok();
//!         println!("item {item}: {} bytes", data.len());
//!     }
//!     Err(e) => eprintln!("item {item}: {e}"),
//! });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Memory is bounded by the plan (a few hundred bytes per file: its runlist) and one window per worker, however
//! large the files. Every kind of data reads as [`StreamReader`] reads it: resident, fragmented, sparse,
//! compressed, named streams, deleted files. A file that cannot be opened (no such stream, encrypted, a damaged
//! runlist) reaches the visitor as its error, and the others go on; so does a failed group read, whose files are
//! then read one by one.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{open_stream, ContentError, ReadAt, StreamInfo, StreamReader};
use crate::device::Device;
use crate::volume::Volume;

/// A stream to read: a file record and a stream name (empty: the unnamed stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub record: u64,
    pub stream: String,
}

impl Wanted {
    pub fn new(record: u64, stream: &str) -> Wanted {
        Wanted {
            record,
            stream: stream.to_string(),
        }
    }
}

/// How to read.
#[derive(Debug, Clone)]
pub struct Options {
    /// Workers: groups read at once and threads the visitor runs on. 0: one per core, at least 2.
    pub threads: usize,
    /// Read only each file's first `limit` bytes (file types need a head); `u64::MAX`: all of it.
    pub limit: u64,
    /// The largest read of a group of files, in bytes.
    pub window: usize,
    /// The largest hole between two files' data that is read through rather than skipped.
    pub gap: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            threads: 0,
            limit: u64::MAX,
            window: 4 << 20,
            gap: 64 << 10,
        }
    }
}

/// What has been read so far, for a progress bar: updated by the workers as they go; and the means to end the
/// reading early.
#[derive(Debug, Default)]
pub struct Progress {
    /// Files handed to the visitor (those that failed to open included).
    pub files: AtomicU64,
    /// Bytes of file data read.
    pub bytes: AtomicU64,
    /// Set (by anyone holding it) when nobody wants the rest, a reader that went away: the workers hand over no
    /// further file, and a file being read fails its next read ([`STOPPED`]).
    pub stop: Arc<AtomicBool>,
}

impl Progress {
    /// A progress whose reading ends when `stop` is set.
    pub fn stopped_by(stop: &Arc<AtomicBool>) -> Progress {
        Progress {
            stop: Arc::clone(stop),
            ..Progress::default()
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// The message of the error a file's read fails with once [`Progress::stop`] is set.
pub const STOPPED: &str = "reading stopped: nobody wants the rest";

/// The streams to read, opened and ordered by where their data is: [`Plan::read`] reads them.
#[derive(Debug)]
pub struct Plan {
    device: Device,
    groups: Vec<Group>,
    limit: u64,
    threads: usize,
    files: usize,
    bytes: u64,
}

/// Files read together: one read of `window` (volume offset, bytes) serves them all; none for files whose
/// data is resident, absent or too spread out (read through the volume as they go).
#[derive(Debug)]
struct Group {
    window: Option<(u64, usize)>,
    files: Vec<Opened>,
}

#[derive(Debug)]
struct Opened {
    item: usize,
    stream: Result<StreamReader, ContentError>,
}

/// Opens every stream of `wanted` (their records read on `opts.threads` threads) and groups them by where their
/// data lies. Item numbers given to the visitor are indexes into `wanted`.
pub fn plan(vol: &Volume, wanted: Vec<Wanted>, opts: &Options) -> Plan {
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
        n => n,
    };
    // In record order, so that the records are read in MFT order.
    let mut order: Vec<(usize, Wanted)> = wanted.into_iter().enumerate().collect();
    order.sort_by_key(|(_, w)| w.record);
    let chunk = order.len().div_ceil(threads).max(1);
    let mut opened: Vec<Opened> = std::thread::scope(|s| {
        let handles: Vec<_> = order
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(item, w)| Opened {
                            item: *item,
                            stream: open_stream(vol, w.record, &w.stream),
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a planning thread panicked"))
            .collect()
    });
    let span = |o: &Opened| -> Option<(u64, u64)> {
        let ext = o.stream.as_ref().ok()?.volume_extents(opts.limit);
        let lo = ext.iter().map(|e| e.0).min()?;
        let hi = ext.iter().map(|e| e.0 + e.1).max()?;
        Some((lo, hi))
    };
    // Files with nothing to read on the volume first (in record order), then by where their data starts.
    opened.sort_by_cached_key(|o| span(o).map(|s| s.0));
    let limit = opts.limit;
    let files = opened.len();
    let bytes = opened
        .iter()
        .filter_map(|o| o.stream.as_ref().ok())
        .map(|s| s.len().min(limit))
        .sum();
    let groups = group(opened, span, opts.window, opts.gap);
    Plan {
        device: vol.device.clone(),
        groups,
        limit,
        threads,
        files,
        bytes,
    }
}

/// Cuts the ordered files into groups: runs of files whose data fits one window with small holes between.
fn group(
    opened: Vec<Opened>,
    span: impl Fn(&Opened) -> Option<(u64, u64)>,
    window: usize,
    gap: u64,
) -> Vec<Group> {
    /// Files without a read of their own are handed out this many at a time.
    const LOOSE: usize = 256;
    let window = window as u64;
    let mut groups: Vec<Group> = Vec::new();
    // The window of the group being filled: start and end on the volume.
    let mut open: Option<(u64, u64)> = None;
    for o in opened {
        let fits = |s: (u64, u64)| s.1 - s.0 <= window;
        match span(&o) {
            Some(s) if fits(s) => {
                let joins = open.is_some_and(|(lo, hi)| {
                    s.0 >= lo && s.0 <= hi.saturating_add(gap) && s.1.max(hi) - lo <= window
                });
                if joins {
                    let (lo, hi) = open.expect("checked");
                    open = Some((lo, hi.max(s.1)));
                } else {
                    close(&mut groups, open);
                    open = Some(s);
                    groups.push(Group {
                        window: None,
                        files: Vec::new(),
                    });
                }
                groups.last_mut().expect("pushed").files.push(o);
            }
            other => {
                close(&mut groups, open.take());
                let alone = other.is_some();
                let room = groups
                    .last()
                    .is_some_and(|g| g.window.is_none() && !alone && g.files.len() < LOOSE);
                if !room || alone {
                    groups.push(Group {
                        window: None,
                        files: Vec::new(),
                    });
                }
                groups.last_mut().expect("pushed").files.push(o);
                if alone {
                    // A large or scattered file: nothing joins it.
                    groups.push(Group {
                        window: None,
                        files: Vec::new(),
                    });
                }
            }
        }
    }
    close(&mut groups, open);
    groups.retain(|g| !g.files.is_empty());
    groups
}

/// Gives the last group the window it grew to.
fn close(groups: &mut [Group], open: Option<(u64, u64)>) {
    if let (Some((lo, hi)), Some(g)) = (open, groups.last_mut()) {
        g.window = Some((lo, (hi - lo) as usize));
    }
}

impl Plan {
    /// Files to read (those that failed to open included).
    pub fn files(&self) -> usize {
        self.files
    }

    /// Bytes of data the files hold (up to the limit each): what [`Progress::bytes`] counts up to.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reads every file and hands it to `visit(item, file)` on the workers, each file once; returns when all
    /// are done. Files of one group are handed over in volume order by one worker; groups run side by side.
    pub fn read<F>(self, progress: &Progress, visit: F)
    where
        F: Fn(usize, Result<&mut File<'_>, ContentError>) + Sync,
    {
        let Plan {
            device,
            groups,
            limit,
            threads,
            ..
        } = self;
        let queue: Vec<Mutex<Option<Group>>> =
            groups.into_iter().map(|g| Mutex::new(Some(g))).collect();
        let next = AtomicU64::new(0);
        let threads = threads.min(queue.len()).max(1);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    let mut buf: Vec<u8> = Vec::new();
                    while !progress.stopped() {
                        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                        let Some(slot) = queue.get(i) else { break };
                        let group = slot.lock().expect("one worker per group").take();
                        let Some(group) = group else { continue };
                        let window = match group.window {
                            Some((at, len)) => {
                                buf.resize(len, 0);
                                // A failed read leaves every file of the group to read its own bytes: the
                                // error then belongs to the files whose data it is.
                                match device.read_exact_at(&mut buf[..len], at) {
                                    Ok(()) => Window {
                                        device: &device,
                                        start: at,
                                        bytes: &buf[..len],
                                    },
                                    Err(_) => Window::none(&device),
                                }
                            }
                            None => Window::none(&device),
                        };
                        for o in group.files {
                            if progress.stopped() {
                                break;
                            }
                            match o.stream {
                                Ok(stream) => {
                                    let mut f =
                                        File::new(stream.reading_from(window), limit, progress);
                                    visit(o.item, Ok(&mut f));
                                }
                                Err(e) => visit(o.item, Err(e)),
                            }
                            progress.files.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
    }
}

/// The volume as a stream of one group sees it: the group's bytes, read already, and the device for the rest.
#[derive(Debug, Clone, Copy)]
pub struct Window<'w> {
    device: &'w Device,
    start: u64,
    bytes: &'w [u8],
}

impl<'w> Window<'w> {
    fn none(device: &'w Device) -> Window<'w> {
        Window {
            device,
            start: 0,
            bytes: &[],
        }
    }

    /// `len` bytes at volume offset `at`, if the window holds them.
    fn get(&self, at: u64, len: usize) -> Option<&'w [u8]> {
        let from = usize::try_from(at.checked_sub(self.start)?).ok()?;
        self.bytes.get(from..from.checked_add(len)?)
    }
}

impl ReadAt for Window<'_> {
    fn size(&self) -> u64 {
        self.device.len()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self.get(offset, buf.len()) {
            Some(b) => {
                buf.copy_from_slice(b);
                Ok(())
            }
            None => self.device.read_exact_at(buf, offset),
        }
    }
}

/// One file as the visitor gets it: its stream's facts, and its bytes from the first, through `io::Read` (or
/// all at once with [`File::as_slice`] when they are in memory already).
pub struct File<'w> {
    stream: StreamReader<Window<'w>>,
    /// Bytes this file reads as: its size, or the plan's limit.
    len: u64,
    pos: u64,
    progress: &'w Progress,
}

impl<'w> File<'w> {
    fn new(stream: StreamReader<Window<'w>>, limit: u64, progress: &'w Progress) -> File<'w> {
        let len = stream.len().min(limit);
        File {
            stream,
            len,
            pos: 0,
            progress,
        }
    }

    pub fn info(&self) -> &StreamInfo {
        self.stream.info()
    }

    /// Bytes the file reads as (its size, or the first bytes the plan asked for).
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// All of the file's bytes without a copy, when they are in memory already: resident data, or data in one
    /// run that the group's read holds (and that is all initialized). Counts them as read.
    pub fn as_slice(&mut self) -> Option<&[u8]> {
        let len = usize::try_from(self.len).ok()?;
        let info = self.stream.info();
        if info.compressed || info.initialized_size < self.len {
            return None;
        }
        let whole = match (
            self.stream.resident(),
            &self.stream.volume_extents(self.len)[..],
        ) {
            (Some(r), _) => r.get(..len)?,
            (None, [(at, n)]) if *n >= self.len => self.stream.volume().get(*at, len)?,
            (None, []) if len == 0 => &[],
            _ => return None,
        };
        self.progress
            .bytes
            .fetch_add(self.len - self.pos, Ordering::Relaxed);
        self.pos = self.len;
        Some(whole)
    }
}

/// A file may be read again from an earlier place (a quick search, then the full one on a match). The bytes
/// read again are not counted twice in the progress.
impl io::Seek for File<'_> {
    fn seek(&mut self, to: io::SeekFrom) -> io::Result<u64> {
        let pos = match to {
            io::SeekFrom::Start(p) => Some(p),
            io::SeekFrom::End(d) => self.len.checked_add_signed(d),
            io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        let pos = pos.min(self.len);
        if pos < self.pos {
            self.progress
                .bytes
                .fetch_sub(self.pos - pos, Ordering::Relaxed);
        }
        self.pos = pos;
        Ok(pos)
    }
}

impl io::Read for File<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len - self.pos;
        let n = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
        if n == 0 {
            return Ok(0);
        }
        if self.progress.stopped() {
            return Err(io::Error::other(STOPPED));
        }
        let got = self.stream.read_at(self.pos, &mut buf[..n])?;
        self.pos += got as u64;
        self.progress.bytes.fetch_add(got as u64, Ordering::Relaxed);
        Ok(got)
    }
}
