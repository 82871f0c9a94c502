//! Volumes of the file systems read through the file-system interface (`uffs_fs::Driver`; today FAT12/16/32,
//! exFAT and ext2/3/4, registered in `uffs-source`): opened by their driver, scanned into the
//! file-system-neutral entries of `uffs-fs`, and from there into an index; their files' data read through the
//! runs those entries keep. Nothing here names a file system.
//!
//! NTFS has its own pipeline (plan, read, parse, build); these file systems hand over whole [`uffs_fs::Scan`]s,
//! which this module turns into the index builder's record batches: an entry's id is its record number (FAT's
//! and exFAT's are The Sleuth Kit's inode numbers, so `icat` takes what uffs prints), its parent's id its parent
//! reference, its times the `$STANDARD_INFORMATION` ones.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use uffs_fs::{Entry, Kind, Run};
use uffs_index::batch::{NameInfo, RecordBatch, RecordInfo, StdInfo, StreamInfo, StreamSizes};
use uffs_index::{BuildOptions, Builder, FileSystem, Index, VolumeMeta};

use crate::device::Device;
use crate::scan::{ScanOptions, ScanReport};
use crate::volume::Volume;
use crate::{Error, Result};

/// The zone FAT times are read in when a build is not told one (`ScanOptions::local_time_offset`): seconds east
/// of UTC, or `i64::MIN` for none (UTC). Set once by a program from its user's setting
/// ([`set_default_local_time_offset`]).
static DEFAULT_OFFSET: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(i64::MIN);

/// Makes `offset` (seconds east of UTC; `None`: UTC) the zone in which FAT's local times are read by every build
/// of this process that is not told another ([`ScanOptions::default`] takes it).
pub fn set_default_local_time_offset(offset: Option<i64>) {
    DEFAULT_OFFSET.store(
        offset.unwrap_or(i64::MIN),
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// The zone set by [`set_default_local_time_offset`].
pub fn default_local_time_offset() -> Option<i64> {
    match DEFAULT_OFFSET.load(std::sync::atomic::Ordering::Relaxed) {
        i64::MIN => None,
        s => Some(s),
    }
}

/// The DOS code page FAT's 8.3 names are read in when a build is not told one (`ScanOptions::fat_code_page`);
/// 0 is 437. Set once by a program from its user's setting ([`set_default_fat_code_page`]).
static DEFAULT_CODE_PAGE: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);

/// Makes `cp` (one of [`uffs_fs::CODE_PAGES`]) the code page of 8.3 names for every read of this process that is
/// not told another ([`ScanOptions::default`] takes it, and the scans `cat` and `hash` read names from).
pub fn set_default_fat_code_page(cp: u16) {
    DEFAULT_CODE_PAGE.store(cp, std::sync::atomic::Ordering::Relaxed);
}

/// The code page set by [`set_default_fat_code_page`] (0: 437).
pub fn default_fat_code_page() -> u16 {
    DEFAULT_CODE_PAGE.load(std::sync::atomic::Ordering::Relaxed)
}

/// `437`, `850`, `852`, `866` or `cp850`: a DOS code page FAT's 8.3 names may be written in.
pub fn parse_code_page(s: &str) -> std::result::Result<u16, String> {
    let t = s.trim();
    let t = t
        .strip_prefix("cp")
        .or_else(|| t.strip_prefix("CP"))
        .unwrap_or(t);
    match t.parse::<u16>() {
        Ok(cp) if uffs_fs::CODE_PAGES.contains(&cp) => Ok(cp),
        _ => Err(format!(
            "{s}: a DOS code page 8.3 names are read in: one of {}",
            uffs_fs::CODE_PAGES.map(|c| c.to_string()).join(", ")
        )),
    }
}

/// `UTC`, `Z`, `+02:00`, `-05:30`, `+0530` or `+2` as seconds east of UTC (at most 14 hours either way).
pub fn parse_utc_offset(s: &str) -> std::result::Result<i64, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("utc") || t.eq_ignore_ascii_case("z") || t == "0" {
        return Ok(0);
    }
    let t = t
        .strip_prefix("UTC")
        .or_else(|| t.strip_prefix("utc"))
        .unwrap_or(t);
    let bad = || {
        format!("{s}: a zone is UTC or an offset from it such as +02:00, -05:30 or +2 (fixed: no daylight saving)")
    };
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'+') => (1, &t[1..]),
        Some(b'-') => (-1, &t[1..]),
        _ => return Err(bad()),
    };
    let (h, m) = match rest.split_once(':') {
        Some((h, m)) => (h, m),
        None if rest.len() == 4 => rest.split_at(2),
        None => (rest, "0"),
    };
    let (Ok(h), Ok(m)) = (h.parse::<i64>(), m.parse::<i64>()) else {
        return Err(bad());
    };
    if h > 14 || m > 59 || h * 60 + m > 14 * 60 {
        return Err(bad());
    }
    Ok(sign * (h * 3600 + m * 60))
}

/// An offset in seconds as [`parse_utc_offset`] takes it back: `+02:00`.
pub fn format_utc_offset(secs: i64) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.unsigned_abs();
    format!("{sign}{:02}:{:02}", a / 3600, a % 3600 / 60)
}

/// The `$FILE_NAME` namespaces of a long name (Win32) and of its 8.3 alias (DOS).
const WIN32: u8 = 1;
const DOS: u8 = 2;

/// A file system read into neutral entries.
pub struct Neutral {
    pub filesystem: FileSystem,
    /// The driver that opened it, which also reads its header's length ([`Neutral::volume_len`]); `None` for a
    /// folder read by walking it, which has no bytes of its own.
    driver: Option<&'static dyn uffs_fs::Driver>,
    device: Device,
    fs: Box<dyn uffs_fs::Reader>,
    /// Every entry, deleted ones included, sorted by id: one scan, made on first use and kept (a volume is opened
    /// afresh for each build or check, so this is the volume as that one saw it).
    scanned: OnceLock<std::result::Result<Arc<uffs_fs::Scan>, String>>,
    /// Where each entry's data is, by id, from that scan.
    data: OnceLock<std::result::Result<Arc<DataMap>, String>>,
    /// [`Neutral::stamp`] of that scan.
    stamp: OnceLock<u64>,
}

impl fmt::Debug for Neutral {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Neutral")
            .field("filesystem", &self.filesystem)
            .finish_non_exhaustive()
    }
}

/// Every entry's data, by id.
#[derive(Debug, Default)]
pub struct DataMap {
    files: HashMap<u64, FileData>,
}

/// Where one entry's data is.
#[derive(Debug, Clone)]
pub struct FileData {
    pub size: u64,
    pub allocated: u64,
    pub runs: Vec<Run>,
    /// The whole of its data when the file system keeps it in its own structures (ext's inline data).
    pub inline: Option<Vec<u8>>,
    /// The stretches of its data kept compressed (Btrfs), each a hole of `runs` ([`Entry::packed`]).
    pub packed: Vec<uffs_fs::Packed>,
    /// Its named data beside (HFS+'s resource fork), read as named streams.
    pub forks: Vec<uffs_fs::Fork>,
    pub deleted: bool,
    pub directory: bool,
}

impl DataMap {
    pub fn get(&self, id: u64) -> Option<&FileData> {
        self.files.get(&id)
    }

    /// Entries with data (or none) known.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

impl Neutral {
    /// Opens the file system on `device` (named `name` in messages) with `driver`, whose probe knew it.
    pub fn open(
        name: &str,
        device: Device,
        driver: &'static dyn uffs_fs::Driver,
    ) -> Result<Neutral> {
        let fs = driver
            .open(Box::new(device.clone()))
            .map_err(|e| Error::Source(format!("{name}: {e}")))?;
        Ok(Neutral::of(fs, device, Some(driver)))
    }

    /// Part `id` of [`Neutral::states`] read alone, from this one's tables (named `name` in errors).
    pub fn state(&self, name: &str, id: u64) -> Result<Neutral> {
        let fs = self
            .fs
            .state(id)
            .map_err(|e| Error::Source(format!("{name}: {e}")))?;
        Ok(Neutral::of(fs, self.device.clone(), self.driver))
    }

    /// Volume `n` (from 1) of a container of volumes (APFS) read alone, from this one's tables.
    pub fn volume(&self, name: &str, n: u32) -> Result<Neutral> {
        let fs = self
            .fs
            .volume(n)
            .map_err(|e| Error::Source(format!("{name}: {e}")))?;
        Ok(Neutral::of(fs, self.device.clone(), self.driver))
    }

    /// The volumes a container of volumes (APFS) holds, by name; empty for a volume.
    pub fn volumes(&self) -> Vec<String> {
        self.fs.volumes()
    }

    /// The parts of the volume it can read alone (Btrfs's subvolumes and snapshots).
    pub fn states(&self) -> Vec<uffs_fs::State> {
        self.fs.states()
    }

    /// A file system whose reader is at hand already (a walked folder's: `device` holds nothing).
    pub fn of(
        fs: Box<dyn uffs_fs::Reader>,
        device: Device,
        driver: Option<&'static dyn uffs_fs::Driver>,
    ) -> Neutral {
        Neutral {
            filesystem: fs.filesystem(),
            driver,
            device,
            fs,
            scanned: OnceLock::new(),
            data: OnceLock::new(),
            stamp: OnceLock::new(),
        }
    }

    /// The volume's length as its header gives it (see [`uffs_fs::Driver::volume_len`]).
    pub fn volume_len(&self) -> Option<u64> {
        let mut head = vec![0u8; uffs_fs::PROBE_LEN];
        let n = self.device.read_probe(&mut head).ok()?;
        self.driver?.volume_len(&head[..n])
    }

    /// What `uffs info` shows of the file system: its geometry, label, serial and space.
    pub fn facts(&self) -> Vec<(String, String)> {
        self.fs.facts()
    }

    pub fn serial(&self) -> u64 {
        self.fs.serial()
    }

    /// The volume's space from its own allocation table.
    pub fn space(&self) -> Option<uffs_fs::Space> {
        self.fs.space()
    }

    /// Every entry, deleted ones included, sorted by id (read once, then kept).
    pub fn scan(&self, name: &str) -> Result<Arc<uffs_fs::Scan>> {
        self.scanned
            .get_or_init(|| {
                let mut scan = self
                    .fs
                    .scan(&uffs_fs::ScanOptions {
                        deleted: true,
                        code_page: default_fat_code_page(),
                    })
                    .map_err(|e| format!("{name}: {e}"))?;
                uffs_fs::sort_by_id(&mut scan.entries);
                Ok(Arc::new(scan))
            })
            .clone()
            .map_err(Error::Source)
    }

    /// A fingerprint of every entry as the volume holds it now (names, places, sizes, times, data): a different
    /// value later means the volume changed. It costs a scan, which is what noticing a change on a file system
    /// without a journal takes.
    pub fn stamp(&self, name: &str) -> Result<u64> {
        if let Some(&s) = self.stamp.get() {
            return Ok(s);
        }
        let scan = self.scan(name)?;
        let mut stamper = Stamper::new(self.serial());
        for e in &scan.entries {
            stamper.add(e);
        }
        Ok(*self.stamp.get_or_init(|| stamper.finish()))
    }

    /// The scan made so far, if one was ([`Neutral::scan`]).
    fn scanned(&self) -> Option<Arc<uffs_fs::Scan>> {
        self.scanned.get().and_then(|s| s.as_ref().ok().cloned())
    }

    /// Where each entry's data is (from [`Neutral::scan`]).
    pub fn data(&self, name: &str) -> Result<Arc<DataMap>> {
        self.data
            .get_or_init(|| {
                let scan = self.scan(name).map_err(|e| e.to_string())?;
                let files = scan
                    .entries
                    .iter()
                    // A name from slack has no data of its own (its id may be another file's).
                    .filter(|e| !e.from_index_slack)
                    .map(|e| {
                        let d = FileData {
                            size: e.size,
                            allocated: e.allocated,
                            runs: e.runs.clone(),
                            inline: e.inline.clone(),
                            packed: e.packed.clone(),
                            forks: e.forks.clone(),
                            deleted: e.deleted,
                            directory: e.kind == Kind::Folder,
                        };
                        (e.id, d)
                    })
                    .collect();
                Ok(Arc::new(DataMap { files }))
            })
            .clone()
            .map_err(Error::Source)
    }
}

/// An entry's record number and sequence number in the index: the id's low 32 bits and the next 16 (ids are at
/// most 48 bits), so that `record | sequence << 32` gives the id back.
pub fn record_of(id: u64) -> (u64, u16) {
    (id & 0xFFFF_FFFF, (id >> 32) as u16)
}

/// The id of the entry the index keeps as `record` and `sequence`.
pub fn id_of(record: u64, sequence: u16) -> u64 {
    (record & 0xFFFF_FFFF) | u64::from(sequence) << 32
}

/// Builds the index of `vol`, a volume of another file system than NTFS.
pub(crate) fn build_index(
    vol: &Volume,
    fs: &Neutral,
    opts: &ScanOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<(Index, ScanReport)> {
    let t0 = Instant::now();
    let (read, parse, (index, stats), n, warnings) = match fs.scanned() {
        // A first scan: streamed into the builder, never all held at once beside it.
        None => {
            let (index, n, warnings) = streamed_index(vol, fs, opts, progress)?;
            (t0.elapsed(), Default::default(), index, n, warnings)
        }
        Some(scan) => {
            let read = t0.elapsed();
            let t1 = Instant::now();
            let (index, n) = fresh_index(vol, fs, &scan, opts)?;
            progress(n, n);
            (read, t1.elapsed(), index, n, scan.warnings.clone())
        }
    };
    let mut report = ScanReport {
        reads: 0,
        records_read: n,
        threads: 1,
        // A short image is said where the volume is opened (`Volume::truncated`), for every file system.
        warnings: warnings
            .into_iter()
            .filter(|w| !w.starts_with(uffs_fs::SHORT_IMAGE))
            .collect(),
        ..ScanReport::default()
    };
    report.times.read = read;
    report.times.parse = parse;
    report.times.merge = stats.merge;
    report.times.totals = stats.totals;
    report.build = stats;
    report.times.total = t0.elapsed();
    Ok((index, report))
}

/// The index of `fs` made as its reader streams its entries in id order
/// ([`uffs_fs::Reader::scan_sorted`]): a thread takes each batch, hashes it into the stamp, and appends it to the
/// builder while the reader makes the next, so that the entries are never all in memory beside the index. The
/// builder is made at the first batch, sized by the count the reader gave by then (or its
/// [`uffs_fs::Reader::expected_entries`]). Returns the index, the entries it was made of and the scan's warnings.
fn streamed_index(
    vol: &Volume,
    fs: &Neutral,
    opts: &ScanOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<((Index, uffs_index::BuildStats), u64, Vec<String>)> {
    let all = uffs_fs::ScanOptions {
        deleted: true,
        code_page: opts.fat_code_page,
    };
    let source_error = |e: uffs_fs::Error| Error::Source(format!("{}: {e}", vol.name));
    let guess = fs.fs.expected_entries();
    let space = fs.space().unwrap_or_default();
    let meta = VolumeMeta {
        source: vol.name.clone(),
        serial: fs.serial(),
        record_size: 0,
        // A guess for sizing; the last id read sets it below.
        records_total: guess.unwrap_or(0),
        has_deleted: opts.include_deleted,
        journal_usn: 0,
        journal_id: 0,
        change_stamp: 0,
        built_at: uffs_index::time::now(),
        bytes_in_use: space.bytes_in_use,
        bytes_total: space.bytes_total,
        filesystem: fs.filesystem,
    };
    let build_opts = BuildOptions {
        include_deleted: opts.include_deleted,
    };
    let root = fs.fs.root();
    let (tx, rx) = crossbeam_channel::bounded::<Handed>(4);
    let (scanned, built) = std::thread::scope(|s| {
        let builder = s.spawn(move || {
            let mut expected = guess;
            let mut building: Option<(Builder, _)> = None;
            let mut stamper = Stamper::new(fs.serial());
            let (mut kept, mut last) = (0u64, None);
            // Names from slack, added after every other entry (few: a folder's leftovers).
            let mut slack: Vec<Entry> = Vec::new();
            for handed in rx {
                let batch = match handed {
                    Handed::Expect(n) => {
                        expected = Some(n);
                        continue;
                    }
                    Handed::Batch(b) => b,
                };
                let (builder, preparer) = building.get_or_insert_with(|| {
                    let b = Builder::new(meta.clone(), build_opts, expected.unwrap_or(0) as usize)
                        .with_root_record(record_of(root).0);
                    let p = b.preparer();
                    (b, p)
                });
                for e in &batch {
                    stamper.add(e);
                }
                last = batch.last().map(|e| e.id).or(last);
                let live = || batch.iter().filter(|e| opts.include_deleted || !e.deleted);
                kept += live().count() as u64;
                let records = batch_of(live(), root, opts);
                builder.append(preparer.prepare(&records));
                slack.extend(live().filter(|e| e.from_index_slack).cloned());
                progress(kept, expected.unwrap_or(0).max(kept));
            }
            let mut builder = match building {
                Some((builder, _)) => builder,
                None => Builder::new(meta, build_opts, 0).with_root_record(record_of(root).0),
            };
            builder.add_from_index_slack(&slack_batch_of(slack.iter(), root, opts));
            (builder.finish(), stamper.finish(), kept, last)
        });
        let scanned = fs.fs.scan_sorted(&all, &mut ToBuilder(&tx));
        drop(tx);
        (scanned, builder.join())
    });
    let warnings = scanned.map_err(source_error)?;
    let Ok(((mut index, stats), stamp, kept, last)) = built else {
        return Err(Error::Source(format!(
            "{}: the index builder failed (a bug: please report it)",
            vol.name
        )));
    };
    index.meta.records_total = last.map_or(0, |id| id + 1);
    index.meta.change_stamp = stamp;
    let _ = fs.stamp.set(stamp);
    Ok(((index, stats), kept, warnings))
}

/// What a scan hands the index build's thread.
enum Handed {
    /// How many entries are coming.
    Expect(u64),
    Batch(Vec<Entry>),
}

/// A scan's sink that passes what it is handed to the build's thread.
struct ToBuilder<'a>(&'a crossbeam_channel::Sender<Handed>);

// The build's thread ends only by panicking, which its join reports: a send that fails is that.
impl uffs_fs::Sink for ToBuilder<'_> {
    fn expect(&mut self, entries: u64) {
        let _ = self.0.send(Handed::Expect(entries));
    }

    fn take(&mut self, batch: Vec<Entry>) {
        let _ = self.0.send(Handed::Batch(batch));
    }
}

/// Bytes of entry fields [`Neutral::stamp`] hashes at a time.
const STAMP_BUFFER: usize = 64 << 10;

/// [`Neutral::stamp`]'s hash, fed the entries in id order (deleted ones included) one at a time: by the scan
/// kept, or by a build as the batches stream past.
struct Stamper {
    hasher: twox_hash::XxHash3_64,
    /// The entries' fields go through a buffer, hashed 64 KiB at a time: a hasher call per field cost a tenth of
    /// `uffs index`.
    buf: Vec<u8>,
}

impl Stamper {
    fn new(serial: u64) -> Stamper {
        use std::hash::Hasher as _;
        let mut hasher = twox_hash::XxHash3_64::new();
        hasher.write(&serial.to_le_bytes());
        Stamper {
            hasher,
            buf: Vec::with_capacity(STAMP_BUFFER + 4096),
        }
    }

    fn add(&mut self, e: &Entry) {
        use std::hash::Hasher as _;
        let buf = &mut self.buf;
        for v in [
            e.id,
            e.parent,
            e.size,
            e.allocated,
            e.times.created,
            e.times.modified,
            e.times.changed,
            e.times.accessed,
            u64::from(e.attributes),
            u64::from(e.deleted) | u64::from(e.from_index_slack) << 1,
            e.kind as u64,
        ] {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        buf.extend_from_slice(e.name.as_bytes());
        buf.push(0);
        if let Some(p) = e.posix {
            for v in [p.mode, p.uid, p.gid] {
                buf.extend_from_slice(&v.to_le_bytes());
            }
        }
        buf.extend_from_slice(e.link_target.as_deref().unwrap_or_default());
        buf.push(0);
        // What is shared changes without the file (a snapshot taken, a reflinked copy removed).
        if let Some(x) = e.exclusive {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        for r in &e.runs {
            buf.extend_from_slice(&r.offset.to_le_bytes());
            buf.extend_from_slice(&r.len.to_le_bytes());
        }
        // A compressed piece's runs are holes, which do not change when the piece does.
        for p in &e.packed {
            for v in [
                p.file_offset,
                p.len,
                p.disk.offset,
                p.disk.len,
                p.decoded_len,
                p.skip,
            ] {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            buf.push(p.codec as u8);
        }
        // A resource fork rewritten changes the volume as the file's data does.
        for f in &e.forks {
            buf.extend_from_slice(f.name.as_bytes());
            buf.push(0);
            for v in [f.size, f.allocated] {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            for r in &f.runs {
                buf.extend_from_slice(&r.offset.to_le_bytes());
                buf.extend_from_slice(&r.len.to_le_bytes());
            }
            buf.extend_from_slice(f.inline.as_deref().unwrap_or_default());
        }
        if buf.len() >= STAMP_BUFFER {
            self.hasher.write(buf);
            buf.clear();
        }
    }

    fn finish(mut self) -> u64 {
        use std::hash::Hasher as _;
        self.hasher.write(&self.buf);
        self.hasher.finish()
    }
}

/// The index of `scan` (deleted entries only with `opts.include_deleted`), and the number of entries it was made
/// of (metadata and the root included).
pub(crate) fn fresh_index(
    vol: &Volume,
    fs: &Neutral,
    scan: &uffs_fs::Scan,
    opts: &ScanOptions,
) -> Result<((Index, uffs_index::BuildStats), u64)> {
    let kept: Vec<&Entry> = scan
        .entries
        .iter()
        .filter(|e| opts.include_deleted || !e.deleted)
        .collect();
    let meta = VolumeMeta {
        source: vol.name.clone(),
        serial: fs.serial(),
        record_size: 0,
        records_total: scan.entries.last().map_or(0, |e| e.id + 1),
        has_deleted: opts.include_deleted,
        journal_usn: 0,
        journal_id: 0,
        // Set below: the stamp is hashed while the index is built.
        change_stamp: 0,
        built_at: uffs_index::time::now(),
        bytes_in_use: scan.space.bytes_in_use,
        bytes_total: scan.space.bytes_total,
        filesystem: fs.filesystem,
    };
    let build_opts = BuildOptions {
        include_deleted: opts.include_deleted,
    };
    // The stamp on one core while the batches are made on every core and appended in order (a few at a time, so
    // that the prepared entries never all wait at once).
    let (stamp, (mut index, stats)) = rayon::join(
        || fs.stamp(&vol.name),
        || {
            use rayon::prelude::*;
            let mut builder =
                Builder::new(meta, build_opts, kept.len()).with_root_record(record_of(scan.root).0);
            let preparer = builder.preparer();
            for wave in kept.chunks(uffs_fs::BATCH_ENTRIES * 8) {
                let made: Vec<_> = wave
                    .par_chunks(uffs_fs::BATCH_ENTRIES)
                    .map(|chunk| {
                        preparer.prepare(&batch_of(chunk.iter().copied(), scan.root, opts))
                    })
                    .collect();
                for p in made {
                    builder.append(p);
                }
            }
            builder.add_from_index_slack(&slack_batch_of(kept.iter().copied(), scan.root, opts));
            builder.finish()
        },
    );
    index.meta.change_stamp = stamp?;
    Ok(((index, stats), kept.len() as u64))
}

/// The record batch of `entries` (sorted by id), their local times read in the zone `opts` gives; names from
/// slack ([`Entry::from_index_slack`]) are left out: they go to the builder apart ([`slack_batch_of`]).
pub(crate) fn batch_of<'a>(
    entries: impl Iterator<Item = &'a Entry>,
    root: u64,
    opts: &ScanOptions,
) -> RecordBatch {
    to_batch(
        entries.filter(|e| !e.from_index_slack),
        root,
        opts.local_time_offset.map_or(0, |secs| -secs),
        false,
    )
}

/// The record batch of names from slack ([`Entry::from_index_slack`]), one record each, for
/// [`Builder::add_from_index_slack`]: numbered as the inode their entry named, or [`uffs_index::NO_RECORD`].
pub(crate) fn slack_batch_of<'a>(
    entries: impl Iterator<Item = &'a Entry>,
    root: u64,
    opts: &ScanOptions,
) -> RecordBatch {
    to_batch(
        entries.filter(|e| e.from_index_slack),
        root,
        opts.local_time_offset.map_or(0, |secs| -secs),
        true,
    )
}

/// The entries (sorted by id) as one record batch: a record per id, each entry's name a Win32 name (and its 8.3
/// alias a DOS name), so that entries of one id (ext's hard links) are one record with a name each, as NTFS keeps
/// them; its times the standard ones shifted by `shift` seconds when they are local times. `apart`: every
/// entry a record of its own (names from slack, which are no record's names), id 0 numbered `NO_RECORD`.
fn to_batch<'a>(
    entries: impl Iterator<Item = &'a Entry>,
    root: u64,
    shift: i64,
    apart: bool,
) -> RecordBatch {
    let mut b = RecordBatch::default();
    let mut last_id = None;
    for e in entries {
        if !apart && last_id == Some(e.id) && e.id != root {
            // Another name of the record just made.
            let start = b.text.len() as u32;
            b.text.extend_from_slice(e.name.as_bytes());
            b.names.push(NameInfo {
                parent: e.parent & 0xFFFF_FFFF_FFFF,
                namespace: WIN32,
                text: start..b.text.len() as u32,
                ..NameInfo::default()
            });
            let end = b.names.len() as u32;
            if let Some(r) = b.records.last_mut() {
                r.names.end = end;
            }
            continue;
        }
        last_id = Some(e.id);
        // A name from slack may name the root's inode (in use again): it is not the root.
        let is_root = e.id == root && !apart;
        let (mut number, sequence) = record_of(e.id);
        if apart && e.id == 0 {
            number = u64::from(uffs_index::NO_RECORD);
        }
        let dir = e.kind == Kind::Folder;
        let at = |t: u64| {
            if e.local_times {
                uffs_fs::time::shift(t, shift)
            } else {
                t
            }
        };
        let mut flags = 0u16;
        if !e.deleted {
            flags |= 1;
        }
        if dir {
            flags |= 2;
        }
        let start = b.text.len() as u32;
        if is_root {
            b.text.push(b'.');
        } else {
            b.text.extend_from_slice(e.name.as_bytes());
        }
        let name = NameInfo {
            parent: if is_root {
                root
            } else {
                e.parent & 0xFFFF_FFFF_FFFF
            },
            namespace: WIN32,
            attr_id: 0,
            text: start..b.text.len() as u32,
            ..NameInfo::default()
        };
        let names = b.names.len() as u32;
        let parent = name.parent;
        b.names.push(name);
        // An 8.3 name beside the long one: a DOS name, which the builder keeps as the entry's alias.
        if let Some(short) = e.short_name.as_deref().filter(|_| !is_root) {
            let start = b.text.len() as u32;
            b.text.extend_from_slice(short.as_bytes());
            b.names.push(NameInfo {
                parent,
                namespace: DOS,
                text: start..b.text.len() as u32,
                ..NameInfo::default()
            });
        }
        let link_target = e.link_target.as_deref().map(|t| {
            let start = b.text.len() as u32;
            b.text
                .extend_from_slice(String::from_utf8_lossy(t).as_bytes());
            start..b.text.len() as u32
        });
        let sizes = StreamSizes {
            size: e.size,
            allocated: e.allocated,
            attr_flags: 0,
            attr_id: 0,
        };
        // Forks are the entry's named streams, as NTFS's alternate data streams are.
        let streams = b.streams.len() as u32;
        for f in &e.forks {
            let start = b.text.len() as u32;
            b.text.extend_from_slice(f.name.as_bytes());
            b.streams.push(StreamInfo {
                sizes: StreamSizes {
                    size: f.size,
                    allocated: f.allocated,
                    attr_flags: 0,
                    attr_id: 0,
                },
                text: start..b.text.len() as u32,
                tail: false,
            });
        }
        b.records.push(RecordInfo {
            number,
            sequence,
            header_flags: flags,
            base: 0,
            std_info: Some(StdInfo {
                created: at(e.times.created),
                modified: at(e.times.modified),
                mft_changed: at(e.times.changed),
                accessed: at(e.times.accessed),
                attributes: e.attributes,
            }),
            has_attribute_list: false,
            reparse_tag: 0,
            data: (!dir).then_some(sizes),
            other_allocated: if dir { e.allocated } else { 0 },
            index_root: None,
            names: names..b.names.len() as u32,
            streams: streams..b.streams.len() as u32,
            posix: e.posix.map(|p| uffs_index::Posix {
                mode: p.mode,
                uid: p.uid,
                gid: p.gid,
            }),
            link_target,
            exclusive: e.exclusive,
        });
        b.counts.parsed += 1;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_offsets_parse_and_print_back() {
        assert_eq!(parse_utc_offset("UTC"), Ok(0));
        assert_eq!(parse_utc_offset("+02:00"), Ok(7200));
        assert_eq!(parse_utc_offset("-05:30"), Ok(-19800));
        assert_eq!(parse_utc_offset("+0530"), Ok(19800));
        assert_eq!(parse_utc_offset("+2"), Ok(7200));
        assert_eq!(parse_utc_offset("UTC+1"), Ok(3600));
        assert!(parse_utc_offset("Europe/Berlin").is_err());
        assert!(parse_utc_offset("+15:00").is_err());
        assert_eq!(format_utc_offset(-19800), "-05:30");
        assert_eq!(parse_utc_offset(&format_utc_offset(7200)), Ok(7200));
    }

    #[test]
    fn ids_round_trip_through_record_and_sequence() {
        for id in [2u64, 3, 0xFFFF_FFFF, 0x1_0000_0000, 0xFFFF_FFFF_FFFF] {
            let (r, s) = record_of(id);
            assert_eq!(id_of(r, s), id);
        }
    }
}
