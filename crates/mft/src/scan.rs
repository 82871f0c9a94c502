//! The read–parse–build pipeline.
//!
//! Reader threads issue large positional reads (planned by [`crate::plan`]) into a small pool of buffers, one
//! read in flight each, as many and as large as the device wants ([`crate::device::Device::io_profile`]), while
//! parser threads turn finished chunks into record batches; the calling thread feeds batches to the index
//! builder in record order. Memory stays bounded by the buffer pool and the index itself: the MFT is never held
//! whole.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Sender};
use uffs_index::batch::RecordBatch;
use uffs_index::build::Prepared;
use uffs_index::{BuildOptions, BuildStats, Builder, Index, VolumeMeta};

use crate::device::IoBuf;
use crate::parse::{parse_chunk, ParseOptions};
use crate::plan::{plan, Chunk, PlanOptions};
use crate::volume::Volume;
use crate::{Error, Result};

/// The most memory the read buffers of a build take (NVMe's 32 reads of 4 MiB in flight and the parsers' need
/// about 150 MiB).
const POOL_BYTES: usize = 256 << 20;

#[derive(Debug, Clone, Copy)]
pub struct ScanOptions {
    /// Read every record, not only those in use, and index deleted files whose records still parse.
    pub include_deleted: bool,
    /// Parser threads (0: one per core).
    pub threads: usize,
    /// Reads kept in flight (0: as many as the device wants).
    pub concurrency: usize,
    /// Size of one read in bytes (0: as large as the device wants).
    pub chunk_bytes: usize,
    /// Unused records read through rather than skipped, when fewer than this many bytes.
    pub merge_gap_bytes: usize,
    /// The zone, in seconds east of UTC, of the local times FAT and exFAT keep without one (`--fat-timezone`);
    /// `None` reads them as UTC, as The Sleuth Kit does. The default is the process's
    /// ([`crate::neutral::set_default_local_time_offset`]).
    pub local_time_offset: Option<i64>,
    /// The DOS code page FAT's 8.3 names are read in (`--fat-codepage`; 0 is 437). The default is the process's
    /// ([`crate::neutral::set_default_fat_code_page`]).
    pub fat_code_page: u16,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            include_deleted: false,
            threads: 0,
            concurrency: 0,
            chunk_bytes: 0,
            merge_gap_bytes: 256 << 10,
            local_time_offset: crate::neutral::default_local_time_offset(),
            fat_code_page: crate::neutral::default_fat_code_page(),
        }
    }
}

/// Where the time went. `read`, `parse` and `build` overlap in the pipeline: each is the time that stage was
/// busy (summed over threads for `parse`); `total` is wall-clock time.
#[derive(Debug, Clone, Copy, Default)]
pub struct PhaseTimes {
    pub plan: Duration,
    pub read: Duration,
    pub parse: Duration,
    pub build: Duration,
    pub merge: Duration,
    pub totals: Duration,
    pub total: Duration,
}

#[derive(Debug, Clone, Default)]
pub struct ScanReport {
    pub times: PhaseTimes,
    pub reads: u64,
    pub bytes_read: u64,
    pub records_read: u64,
    /// Records that could not be read from the device (past the end of a truncated image, I/O errors) or that
    /// the `$MFT` runlist does not map.
    pub records_unreadable: u64,
    pub build: BuildStats,
    pub threads: usize,
    /// Reads kept in flight, and the size of each.
    pub concurrency: usize,
    pub io_size: usize,
    /// What was skipped and why (other file systems' scans: a FAT chain that loops …), one line each.
    pub warnings: Vec<String>,
    /// What reading folders' index slack found (NTFS builds with deleted entries).
    pub index_slack: Option<IndexSlackReport>,
}

/// What a `--deleted` build found in folders' index slack ([`crate::index_slack`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexSlackReport {
    /// Folders whose index was read, and its bytes.
    pub folders: u64,
    pub bytes: u64,
    /// Names found in slack, and those made entries (the rest are files the MFT lists).
    pub keys: u64,
    pub names: u64,
    pub time: Duration,
}

impl ScanOptions {
    /// Bytes of the largest read of `chunks`: the size of each read buffer.
    pub(crate) fn buffer_bytes(vol: &Volume, chunks: &[Chunk]) -> usize {
        let rs = vol.record_size as usize;
        chunks
            .iter()
            .map(|c| c.records as usize * rs)
            .max()
            .unwrap_or(rs)
    }

    /// Reads in flight and the size of each: as given, else as the device wants.
    pub fn io(&self, vol: &Volume) -> (usize, usize) {
        let p = vol.device.io_profile();
        let pick = |given: usize, dev: usize| if given > 0 { given } else { dev.max(1) };
        (
            pick(self.concurrency, p.concurrency),
            pick(self.chunk_bytes, p.io_size),
        )
    }

    pub(crate) fn plan(&self, vol: &Volume) -> Vec<Chunk> {
        let rs = vol.record_size as usize;
        plan(
            &vol.mapped_records(),
            vol.bitmap.as_deref(),
            &PlanOptions {
                chunk_records: (self.io(vol).1 / rs).max(1) as u64,
                merge_gap: (self.merge_gap_bytes / rs) as u64,
                include_unused: self.include_deleted,
            },
        )
    }

    pub(crate) fn threads(&self) -> usize {
        if self.threads > 0 {
            self.threads
        } else {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        }
    }
}

/// Records of the MFT that no run maps onto the device (and that the bitmap, if any, says are in use).
fn unmapped(vol: &Volume) -> u64 {
    let mut missing = Vec::new();
    let mut at = 0;
    for (s, e) in vol.mapped_records() {
        missing.push((at, s));
        at = e;
    }
    missing.push((at, vol.records_total));
    missing
        .into_iter()
        .map(|(s, e)| match &vol.bitmap {
            None => e.saturating_sub(s),
            // Bits past the end of the bitmap are not in use; stop there.
            Some(b) => (s..e.min(b.len() as u64 * 8))
                .filter(|&r| vol.bitmap_bit(r) == Some(true))
                .count() as u64,
        })
        .sum()
}

/// Reads one chunk. When the whole read fails (a truncated image, a bad sector), falls back to record-sized
/// reads so only the unreadable records are lost; those are zero-filled and counted.
pub(crate) fn read_chunk(vol: &Volume, c: Chunk, buf: &mut [u8]) -> u64 {
    if vol.read_records(c.first, buf).is_ok() {
        return 0;
    }
    let rs = vol.record_size as usize;
    let mut lost = 0;
    for (i, rec) in buf.chunks_exact_mut(rs).enumerate() {
        if vol.read_records(c.first + i as u64, rec).is_err() {
            rec.fill(0);
            lost += 1;
        }
    }
    lost
}

/// What a worker thread hands the builder: a parsed chunk (its sequence number, the batch, the records' hashes,
/// the buffer to give back, the time it took), or the news that a worker panicked. (Moved once per chunk, not
/// per record: the size of the rare `Panicked` does not matter.)
#[allow(clippy::large_enum_variant)]
enum Done {
    Batch(usize, Prepared, Vec<u32>, IoBuf, Duration),
    Panicked(String),
}

/// Runs a worker thread's `body`; if it panics, says so to the builder (which then abandons the build) and
/// tells the other workers to stop. Without this the builder would wait forever for the chunk the thread held.
fn guarded(role: &str, stop: &AtomicBool, done_tx: &Sender<Done>, body: impl FnOnce()) {
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        stop.store(true, Ordering::Relaxed);
        let _ = done_tx.send(Done::Panicked(format!(
            "a {role} thread panicked: {}",
            crate::fault::panic_message(&*p)
        )));
    }
}

/// What an index of `vol` says of it, as it is now; `space`: bytes in use and in all (0: unknown).
pub(crate) fn volume_meta(vol: &Volume, include_deleted: bool, space: (u64, u64)) -> VolumeMeta {
    VolumeMeta {
        source: vol.name.clone(),
        serial: vol.boot.map_or(0, |b| b.serial),
        record_size: vol.record_size,
        records_total: vol.records_total,
        has_deleted: include_deleted,
        change_stamp: vol.change_stamp(),
        built_at: uffs_index::time::now(),
        journal_usn: 0,
        journal_id: 0,
        bytes_in_use: space.0,
        bytes_total: space.1,
        filesystem: uffs_index::FileSystem::Ntfs,
    }
}

/// Builds the index of `vol`. `progress(records_done, records_planned)` is called as batches complete. A
/// thread of the build that panics (a bug) ends it with [`Error::Internal`], never a hang.
pub fn build_index(
    vol: &Volume,
    opts: &ScanOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<(Index, ScanReport)> {
    if let Some(fs) = &vol.fs {
        return crate::neutral::build_index(vol, fs, opts, progress);
    }
    let t0 = Instant::now();
    // A live volume changes while it is read: its journal position is taken before, so that what changes during
    // the read is applied again by the first update.
    let journal_before = crate::update::live_journal_position(vol);
    // A build reads the whole MFT: `$Bitmap` (a bit per cluster) is small beside it, whatever the volume's size.
    let (bytes_in_use, bytes_total) = vol.space_bytes(u64::MAX);
    let chunks = opts.plan(vol);
    let planned: u64 = chunks.iter().map(|c| c.records).sum();
    let (concurrency, io_size) = opts.io(vol);
    let mut report = ScanReport {
        threads: opts.threads(),
        concurrency,
        io_size,
        ..ScanReport::default()
    };
    report.times.plan = t0.elapsed();
    let meta = volume_meta(vol, opts.include_deleted, (bytes_in_use, bytes_total));
    // Sizes the index up front; never more than the records really read (a hostile bitmap may claim more).
    let expected = vol.records_in_use().unwrap_or(planned).min(planned);
    let build_opts = BuildOptions {
        include_deleted: opts.include_deleted,
    };
    let mut builder = Builder::new(meta, build_opts, expected as usize);

    let rs = vol.record_size as usize;
    let chunk_cap = ScanOptions::buffer_bytes(vol, &chunks);
    let workers = report.threads;
    // Enough buffers that every read in flight has one, and every parser one in hand and one waiting while the
    // builder catches up; all within POOL_BYTES (fewer reads in flight if need be).
    let fit = (POOL_BYTES / chunk_cap.max(1)).max(workers + 2);
    let readers = concurrency.min(chunks.len()).min(fit - workers - 1).max(1);
    let pool = (2 * workers + 1 + readers).min(fit.max(readers + workers + 1));
    let (free_tx, free_rx) = bounded::<IoBuf>(pool);
    for _ in 0..pool {
        free_tx
            .send(IoBuf::zeroed(chunk_cap))
            .map_err(|_| Error::Source("internal: buffer pool closed".into()))?;
    }
    let (work_tx, work_rx) = bounded::<(usize, Chunk, IoBuf)>(pool);
    let (done_tx, done_rx) = unbounded::<Done>();
    // A hash of every record read, kept with the index so that a re-scan finds what changed (crate::update).
    let mut hashes = vec![0u32; usize::try_from(vol.records_total).unwrap_or(0)];
    let parse_opts = ParseOptions {
        record_size: rs,
        cluster_size: vol.cluster_size,
        bitmap: vol.bitmap.as_deref(),
        include_unused: opts.include_deleted,
    };

    let faults = crate::fault::Faults::from_env();
    let next_chunk = AtomicUsize::new(0);
    let (read_ns, unreadable) = (AtomicU64::new(0), AtomicU64::new(0));
    // Set when a thread panicked: the others stop taking work.
    let stop = AtomicBool::new(false);
    let failed: Option<String> = std::thread::scope(|s| {
        // The builder alone holds these: dropping them (below) ends the readers waiting for a buffer and the
        // parsers handing over a batch, so that every thread ends once the build is abandoned.
        let (free_tx, done_rx) = (free_tx, done_rx);
        // Each reader takes a free buffer, then the next chunk: every chunk taken has a buffer, so the builder,
        // waiting for chunks in order, always gets the one it waits for.
        for _ in 0..readers {
            let (free_rx, work_tx, done_tx) = (free_rx.clone(), work_tx.clone(), done_tx.clone());
            let (next_chunk, read_ns, unreadable, chunks, stop) =
                (&next_chunk, &read_ns, &unreadable, &chunks, &stop);
            s.spawn(move || {
                guarded("reader", stop, &done_tx, || {
                    while let Ok(mut buf) = free_rx.recv() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let seq = next_chunk.fetch_add(1, Ordering::Relaxed);
                        let Some(&c) = chunks.get(seq) else { break };
                        faults.before_read(c);
                        let t = Instant::now();
                        let len = c.records as usize * rs;
                        unreadable
                            .fetch_add(read_chunk(vol, c, &mut buf[..len]), Ordering::Relaxed);
                        read_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
                        if work_tx.send((seq, c, buf)).is_err() {
                            break;
                        }
                    }
                })
            });
        }
        drop(work_tx);
        for _ in 0..workers {
            let (work_rx, done_tx) = (work_rx.clone(), done_tx.clone());
            let (stop, parse_opts) = (&stop, &parse_opts);
            s.spawn(move || {
                guarded("parser", stop, &done_tx, || {
                    for (seq, c, mut buf) in work_rx {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        faults.before_parse(c);
                        let t = Instant::now();
                        let mut batch = RecordBatch::with_capacity(c.records as usize);
                        let len = c.records as usize * rs;
                        let sums: Vec<u32> = buf[..len]
                            .chunks_exact(rs)
                            .enumerate()
                            .map(|(i, raw)| {
                                let r = c.first + i as u64;
                                if crate::update::hashed(vol, build_opts.include_deleted, r) {
                                    crate::update::record_hash(raw)
                                } else {
                                    0
                                }
                            })
                            .collect();
                        parse_chunk(&mut buf[..len], c.first, parse_opts, &mut batch);
                        let prepared = Prepared::new(&batch, build_opts);
                        // The buffer goes back to the pool only once the batch is appended (below), so the reader
                        // is never more than the pool's size ahead of the builder: memory stays bounded.
                        if done_tx
                            .send(Done::Batch(seq, prepared, sums, buf, t.elapsed()))
                            .is_err()
                        {
                            break;
                        }
                    }
                })
            });
        }
        drop(done_tx);
        // Feed batches to the builder in record order as they complete, until a thread says it panicked.
        let mut failed = None;
        let fed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut pending: BTreeMap<usize, (Prepared, IoBuf)> = BTreeMap::new();
            let mut next = 0;
            let mut done_records = 0;
            for done in done_rx.iter() {
                let (seq, batch, sums, buf, parse_time) = match done {
                    Done::Batch(seq, batch, sums, buf, parse_time) => {
                        (seq, batch, sums, buf, parse_time)
                    }
                    Done::Panicked(why) => {
                        failed = Some(why);
                        return;
                    }
                };
                report.times.parse += parse_time;
                let first = chunks[seq].first as usize;
                if let Some(slots) = hashes.get_mut(first..first + sums.len()) {
                    slots.copy_from_slice(&sums);
                }
                pending.insert(seq, (batch, buf));
                while let Some((batch, buf)) = pending.remove(&next) {
                    let t = Instant::now();
                    builder.append(batch);
                    let _ = free_tx.send(buf);
                    report.times.build += t.elapsed();
                    done_records += chunks[next].records;
                    next += 1;
                    progress(done_records, planned);
                }
            }
        }));
        if let Err(p) = fed {
            failed = Some(format!(
                "the index builder panicked: {}",
                crate::fault::panic_message(&*p)
            ));
        }
        if failed.is_some() {
            stop.store(true, Ordering::Relaxed);
        }
        drop((free_tx, done_rx));
        failed
    });
    if let Some(why) = failed {
        return Err(Error::Internal(why));
    }
    report.times.read = Duration::from_nanos(read_ns.into_inner());
    report.records_unreadable = unreadable.into_inner() + unmapped(vol);
    report.reads = chunks.len() as u64;
    report.records_read = planned;
    report.bytes_read = planned * rs as u64;
    if opts.include_deleted && vol.boot.is_some() {
        let t = Instant::now();
        let found = crate::index_slack::find(vol, &builder, uffs_index::time::now(), &|_, _| {});
        builder.add_from_index_slack(&found.batch);
        report.warnings.extend(found.warnings);
        report.index_slack = Some(IndexSlackReport {
            folders: found.folders,
            bytes: found.bytes,
            keys: found.keys,
            names: found.batch.records.len() as u64,
            time: t.elapsed(),
        });
    }
    let (mut index, stats) = builder.finish();
    match journal_before {
        Some(at) => (index.meta.journal_id, index.meta.journal_usn) = at,
        None => crate::update::set_journal_position(vol, &mut index),
    }
    index.set_record_hashes(hashes);
    report.times.merge = stats.merge;
    report.times.totals = stats.totals;
    report.build = stats;
    report.times.total = t0.elapsed();
    Ok((index, report))
}

/// Reads every byte the index build would read, with the same plan, read size and reads in flight, and nothing
/// else: the floor that `uffs bench --read-only` compares the build against.
pub fn read_only(
    vol: &Volume,
    opts: &ScanOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<ScanReport> {
    let t0 = Instant::now();
    let chunks = opts.plan(vol);
    let planned: u64 = chunks.iter().map(|c| c.records).sum();
    let rs = vol.record_size as usize;
    let cap = ScanOptions::buffer_bytes(vol, &chunks);
    let (concurrency, io_size) = opts.io(vol);
    let readers = concurrency.min(chunks.len()).max(1);
    let mut report = ScanReport {
        threads: 0,
        concurrency,
        io_size,
        ..ScanReport::default()
    };
    report.times.plan = t0.elapsed();
    let (next, done, lost) = (AtomicUsize::new(0), AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        for _ in 0..readers {
            s.spawn(|| {
                let mut buf = IoBuf::zeroed(cap);
                while let Some(&c) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let n = read_chunk(vol, c, &mut buf[..c.records as usize * rs]);
                    lost.fetch_add(n, Ordering::Relaxed);
                    progress(
                        done.fetch_add(c.records, Ordering::Relaxed) + c.records,
                        planned,
                    );
                }
            });
        }
    });
    report.records_unreadable = lost.into_inner();
    report.reads = chunks.len() as u64;
    report.records_read = planned;
    report.bytes_read = planned * rs as u64;
    report.times.total = t0.elapsed();
    report.times.read = report.times.total - report.times.plan;
    Ok(report)
}
