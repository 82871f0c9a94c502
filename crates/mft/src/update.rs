//! Following a volume's changes: which records changed since an index was built, and those records read again
//! into a delta over it.
//!
//! Two ways to find the changed records end in the same step ([`refresh`]: the records read again, made into a
//! delta over the index by `uffs_index::layer`):
//! * a re-scan ([`rescan`]) reads the MFT as a build does but parses nothing: it hashes each record's bytes and
//!   compares them with the hashes the index keeps. Volumes written by ntfs-3g or Linux's ntfs3 keep no change
//!   journal, and their drivers do not maintain `$LogFile` sequence numbers in file records, so the bytes are
//!   the only signal that every driver maintains;
//! * the change journal (`crate::journal`) names the changed file records directly.
//!
//! A changed extension record stands for its base record: the base record is read again with all of its
//! extension records (found through its `$ATTRIBUTE_LIST`), and its entries are replaced as a whole.

use std::time::{Duration, Instant};

use uffs_index::batch::RecordBatch;
use uffs_index::layer::{self, BaseMap, Delta};
use uffs_index::update::UpdateStats;
use uffs_index::{BuildOptions, Index, VolumeMeta};
use uffs_ntfs::attr::{kind, AttributeBody, AttributeList};
use uffs_ntfs::le;
use uffs_ntfs::record::{has_file_signature, Record};

use crate::parse::parse_record;
use crate::plan::in_bitmap;
use crate::scan::ScanOptions;
use crate::volume::{decode_runs, read_clusters, Volume};
use crate::{Error, Result};

/// The largest `$Bitmap` an update reads again to keep the index's figure of the space in use.
const REFRESH_BITMAP_MAX: u64 = 8 << 20;
/// Attribute lists larger than this come from damaged records.
const MAX_ATTRIBUTE_LIST: u64 = 16 << 20;
/// Extension records followed for one base record, at most.
const MAX_EXTENSIONS: usize = 4096;

/// The hash of one record's bytes as read (before fixups), up to its used size; never 0, which means "not
/// read". (XXH3-64 by twox-hash, which uses AVX2 where the processor has it: a build hashes every record.)
///
/// The bytes past the used size are left over from the record's earlier contents: no parse reads them (a record
/// is cut at its used size), and any change to the record changes its used bytes, if only its update sequence
/// number. Hashing them cost half the hash. A record without a valid used size is hashed whole.
pub fn record_hash(raw: &[u8]) -> u32 {
    let used = le::u32_at(raw, 0x18, "used size")
        .ok()
        .filter(|_| has_file_signature(raw))
        .map(|u| u as usize)
        .filter(|&u| (0x1C..=raw.len()).contains(&u))
        .unwrap_or(raw.len());
    (twox_hash::XxHash3_64::oneshot(&raw[..used]) as u32).max(1)
}

/// Whether a build or re-scan with these options reads record `r` (and keeps its hash).
pub fn hashed(vol: &Volume, include_deleted: bool, r: u64) -> bool {
    include_deleted || vol.bitmap.as_deref().is_none_or(|b| in_bitmap(b, r))
}

/// The base record an extension record belongs to, from its raw header (0 for a base record or no record).
pub(crate) fn base_of(raw: &[u8]) -> u64 {
    if !has_file_signature(raw) || raw.len() < 0x28 {
        return 0;
    }
    u64::from_le_bytes(raw[0x20..0x28].try_into().unwrap_or([0; 8])) & 0xFFFF_FFFF_FFFF
}

/// What a re-scan found.
#[derive(Debug, Clone, Default)]
pub struct Rescan {
    /// Records whose bytes differ from when the index was made (base records of changed extension records
    /// included), sorted.
    pub changed: Vec<u64>,
    /// The new hash of every record, by record number.
    pub hashes: Vec<u32>,
    pub bytes_read: u64,
    pub time: Duration,
}

/// Reads the MFT as a build would (the same plan and read size) and compares each record's hash with `before`
/// (the hashes an index keeps, by record). `None` when there are none (an index from an older uffs): rebuild
/// it instead.
pub fn rescan(vol: &Volume, before: &[u32], opts: &ScanOptions) -> Result<Option<Rescan>> {
    let t = Instant::now();
    if before.is_empty() {
        return Ok(None);
    }
    let chunks = opts.plan(vol);
    let rs = vol.record_size as usize;
    let cap = ScanOptions::buffer_bytes(vol, &chunks);
    let total = vol.records_total as usize;
    // Reading (a copy out of the page cache, for an image) costs about what hashing does: every core takes the
    // next chunk, reads it and hashes it; the hashes of each chunk are put in place after.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = opts.threads().min(chunks.len()).max(1);
    #[allow(clippy::type_complexity)]
    let found: Vec<(Vec<(u64, Vec<u32>)>, Vec<u64>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    // Page-aligned: the kernel's copy out of the page cache runs about 2.5 times slower into a
                    // buffer 16 bytes past a page boundary (where the allocator puts a block it maps for itself,
                    // as it does in the daemon) than into an aligned one.
                    let mut buf = crate::device::IoBuf::zeroed(cap);
                    let (mut seen, mut changed, mut bytes) = (Vec::new(), Vec::new(), 0u64);
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&c) = chunks.get(i) else { break };
                        let len = c.records as usize * rs;
                        crate::scan::read_chunk(vol, c, &mut buf[..len]);
                        bytes += len as u64;
                        let mut got = vec![0u32; c.records as usize];
                        for (k, raw) in buf[..len].chunks_exact(rs).enumerate() {
                            let r = c.first + k as u64;
                            if !hashed(vol, opts.include_deleted, r) {
                                continue;
                            }
                            let h = record_hash(raw);
                            got[k] = h;
                            if before.get(r as usize) != Some(&h) {
                                changed.push(r);
                                let base = base_of(raw);
                                if base != 0 {
                                    changed.push(base);
                                }
                            }
                        }
                        seen.push((c.first, got));
                    }
                    (seen, changed, bytes)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().map_err(|p| {
                    Error::Internal(format!(
                        "a re-scan thread panicked: {}",
                        crate::fault::panic_message(&*p)
                    ))
                })
            })
            .collect::<Result<_>>()
    })?;
    let mut hashes = vec![0u32; total];
    let mut changed = Vec::new();
    let mut bytes_read = 0;
    for (seen, ch, bytes) in found {
        for (first, got) in seen {
            let first = first as usize;
            if let Some(dst) = hashes.get_mut(first..(first + got.len()).min(total)) {
                let n = dst.len();
                dst.copy_from_slice(&got[..n]);
            }
        }
        changed.extend(ch);
        bytes_read += bytes;
    }
    // Records read before but not now (freed, or past a shrunk MFT) changed too.
    for (r, &h) in before.iter().enumerate() {
        if h != 0 && hashes.get(r).is_none_or(|&now| now == 0) {
            changed.push(r as u64);
        }
    }
    changed.sort_unstable();
    changed.dedup();
    Ok(Some(Rescan {
        changed,
        hashes,
        bytes_read,
        time: t.elapsed(),
    }))
}

/// Reads records `records` again (sorted), with the extension records of those that have an
/// `$ATTRIBUTE_LIST`, and parses them into one batch. Records no longer in use are left out unless
/// `include_deleted`. Returns the batch and the record numbers read, for their hashes.
pub fn read_records(
    vol: &Volume,
    records: &[u64],
    include_deleted: bool,
) -> Result<(RecordBatch, Vec<(u64, u32)>)> {
    let rs = vol.record_size as usize;
    let mut batch = RecordBatch::with_capacity(records.len());
    let mut read: Vec<(u64, u32)> = Vec::with_capacity(records.len());
    let mut extensions: Vec<u64> = Vec::new();
    // Hashes, then parses one record read into `buf`; false when it is not in use (and deleted entries are not
    // wanted) or does not parse.
    let mut take = |r: u64, buf: &mut [u8], batch: &mut RecordBatch| -> bool {
        read.push((r, record_hash(buf)));
        // A live volume's records come from the file system, which answers for records in use only; its
        // bitmap, read raw when the volume was opened, may not have the newest yet.
        let in_use = buf.get(0x16).is_some_and(|f| f & 1 != 0)
            && (vol.device.is_live() || vol.bitmap_bit(r).unwrap_or(true));
        (include_deleted || in_use) && parse_record(buf, r, vol.cluster_size, batch)
    };
    let read_err = |r: u64, e| Error::io(format!("{}: MFT record {r}", vol.name), e);
    // Records close together (changes cluster: a folder's files were often made together) are read with one
    // call: a call costs more than copying a few records nobody asked for.
    const RUN: usize = 64;
    const GAP: u64 = 8;
    let mut buf = vec![0u8; rs * RUN];
    let wanted: Vec<u64> = records
        .iter()
        .copied()
        .filter(|&r| r < vol.records_total)
        .collect();
    let mut i = 0;
    while i < wanted.len() {
        let first = wanted[i];
        // `taken` wanted records lie in the `span` records from `first`.
        let (mut taken, mut span) = (1, 1u64);
        while let Some(&r) = wanted.get(i + taken) {
            if r - first >= RUN as u64 || r - (first + span - 1) > GAP {
                break;
            }
            span = r - first + 1;
            taken += 1;
        }
        let n = span as usize;
        let run = &mut buf[..n * rs];
        if vol.read_records_now(first, run).is_err() {
            // Read one by one, so the error names the record.
            for (k, rec) in run.chunks_exact_mut(rs).enumerate() {
                vol.read_records_now(first + k as u64, rec)
                    .map_err(|e| read_err(first + k as u64, e))?;
            }
        }
        for &r in &wanted[i..i + taken] {
            let rec = &mut run[(r - first) as usize * rs..][..rs];
            if !take(r, rec, &mut batch) {
                continue;
            }
            let has_list = batch
                .records
                .last()
                .is_some_and(|x| x.number == r && x.has_attribute_list);
            if has_list {
                // `parse_record` applied the fixups in place: `rec` is the record as parsed.
                extensions.extend(extension_records(vol, r, rec));
            }
        }
        i += taken;
    }
    extensions.sort_unstable();
    extensions.dedup();
    extensions.retain(|e| records.binary_search(e).is_err());
    let rec = &mut buf[..rs];
    for e in extensions.into_iter().filter(|&e| e < vol.records_total) {
        vol.read_records_now(e, rec)
            .map_err(|err| read_err(e, err))?;
        take(e, rec, &mut batch);
    }
    Ok((batch, read))
}

/// The extension records that base record `number`'s `$ATTRIBUTE_LIST` names (bytes with fixups applied).
fn extension_records(vol: &Volume, number: u64, rec: &[u8]) -> Vec<u64> {
    let Ok(r) = Record::parse(rec) else {
        return Vec::new();
    };
    let mut list = None;
    for a in r.attributes() {
        let Ok(a) = a else { break };
        if a.type_code != kind::ATTRIBUTE_LIST {
            continue;
        }
        list = match a.body() {
            Ok(AttributeBody::Resident(v)) => Some(v.to_vec()),
            Ok(AttributeBody::NonResident(nr)) if nr.data_size <= MAX_ATTRIBUTE_LIST => {
                let cs = vol.cluster_size;
                decode_runs(&vol.name, &nr)
                    .and_then(|runs| read_clusters(&vol.name, &vol.device, cs, &runs, nr.data_size))
                    .ok()
            }
            _ => None,
        };
        break;
    }
    let Some(list) = list else {
        return Vec::new();
    };
    let mut out: Vec<u64> = AttributeList::new(&list)
        .map_while(|e| e.ok())
        .map(|e| e.record.record())
        .filter(|&e| e != number)
        .take(MAX_EXTENSIONS)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// What reading the changed records and making the delta did.
#[derive(Debug, Clone, Default)]
pub struct UpdateReport {
    /// Records read again (changed ones, orphans, extension records).
    pub records_read: u64,
    pub read_time: Duration,
    pub stats: UpdateStats,
}

/// What changed on a volume since an index's state.
enum Found {
    Unchanged(String),
    Rebuild(String),
    Changed(Changes),
}

/// The records that changed, and how they were found.
struct Changes {
    records: Vec<u64>,
    /// Every record's hash, when a re-scan found the changes.
    hashes: Option<Vec<u32>>,
    /// The journal's id and next USN, when the journal named them. After a re-scan, a journal made since (on
    /// Windows, or by `fsutil usn createjournal`) is looked for in the updated index and followed from then on.
    journal: Option<(u64, u64)>,
    how: &'static str,
    find_time: Duration,
}

/// Finds what changed on `vol` since the state `meta` describes (an index of it whose `$UsnJrnl` record
/// `base` gives, whose record hashes `hashes` gives): through the journal when the index follows one, else by
/// a re-scan.
fn find_changes(
    vol: &Volume,
    base: &Index,
    meta: &VolumeMeta,
    hashes: impl FnOnce() -> Vec<u32>,
    opts: &ScanOptions,
) -> Result<Found> {
    let serial = vol.serial();
    if serial != meta.serial || vol.record_size != meta.record_size {
        return Ok(Found::Rebuild(format!(
            "the index is of another volume (serial {:016x}, the source has {serial:016x})",
            meta.serial
        )));
    }
    if meta.journal_id != 0 {
        return from_journal(vol, base, meta);
    }
    let opts = ScanOptions {
        include_deleted: meta.has_deleted,
        ..*opts
    };
    let t = Instant::now();
    let Some(scan) = rescan(vol, &hashes(), &opts)? else {
        return Ok(Found::Rebuild(
            "the index keeps no record hashes to compare (it was made by an older uffs)".into(),
        ));
    };
    let find_time = t.elapsed();
    if scan.changed.is_empty() {
        return Ok(Found::Unchanged(format!(
            "re-scan of {} MB in {:.1} ms",
            scan.bytes_read >> 20,
            find_time.as_secs_f64() * 1e3
        )));
    }
    Ok(Found::Changed(Changes {
        records: scan.changed,
        hashes: Some(scan.hashes),
        journal: None,
        how: "re-scan",
        find_time,
    }))
}

/// What [`refresh`] decided.
pub enum Refresh {
    /// Nothing the index holds has changed.
    Unchanged { checked: String },
    /// The changes, as a new delta over the same index.
    Updated(Box<Applied>),
    /// The index cannot follow this source: build it again (the reason, for the log).
    Rebuild(String),
}

/// Changes applied: the new delta, and how they were found.
pub struct Applied {
    pub delta: Delta,
    pub report: UpdateReport,
    /// How the changes were found, for logs: `journal` or `re-scan`.
    pub how: &'static str,
    /// Time spent finding them (reading the journal, or the re-scan).
    pub find_time: Duration,
}

/// Brings `base` + `delta` (none: the index alone) up to date with `vol`: the changed records are found (from the
/// journal, or a re-scan of record hashes), read again and made into a new delta over the same index, in time
/// proportional to the change and the delta, not to the volume (see `uffs_index::layer`); or the reason the
/// index must be built again is given.
pub fn refresh(
    vol: &Volume,
    base: &Index,
    map: &BaseMap,
    delta: Option<&Delta>,
    opts: &ScanOptions,
) -> Result<Refresh> {
    if let Some(fs) = &vol.fs {
        return neutral_refresh(vol, fs, base, map, delta, opts);
    }
    let meta = delta.map_or(&base.meta, |d| &d.index.meta);
    let hashes = || delta.map_or_else(|| base.record_hashes().to_vec(), |d| d.record_hashes(base));
    let c = match find_changes(vol, base, meta, hashes, opts)? {
        Found::Unchanged(checked) => return Ok(Refresh::Unchanged { checked }),
        Found::Rebuild(why) => return Ok(Refresh::Rebuild(why)),
        Found::Changed(c) => c,
    };
    let t0 = Instant::now();
    let mut records = c.records.clone();
    records.extend(layer::records_to_recheck(base, map, delta, &c.records));
    records.sort_unstable();
    records.dedup();
    let include_deleted = meta.has_deleted;
    let (batch, read) = read_records(vol, &records, include_deleted)?;
    let read_time = t0.elapsed();
    records.extend(read.iter().map(|&(r, _)| r));
    records.sort_unstable();
    records.dedup();
    let mut meta = meta.clone();
    meta.records_total = vol.records_total;
    meta.change_stamp = vol.change_stamp();
    meta.built_at = uffs_index::time::now();
    // An update costs what the change touches: `$Bitmap` is read again only while it is small (volumes up to
    // 256 GiB of 4 KiB clusters); a larger volume's (64 MiB for 2 TiB) waits for its next build, and until then
    // the index says nothing of the space (0: unknown) rather than something stale.
    (meta.bytes_in_use, meta.bytes_total) = vol.space_bytes(REFRESH_BITMAP_MAX);
    let opts = BuildOptions { include_deleted };
    let (mut new, stats) = layer::apply(base, map, delta, &records, &batch, meta, opts);
    let journal = c
        .journal
        .unwrap_or_else(|| match journal_position(vol, &new.index) {
            (0, _) => journal_position(vol, base),
            found => found,
        });
    if let Some(idx) = std::sync::Arc::get_mut(&mut new.index) {
        (idx.meta.journal_id, idx.meta.journal_usn) = journal;
    }
    // The hashes that differ from the base's now: from the re-scan, or the previous ones patched with the
    // records just read.
    let before = base.record_hashes();
    new.hashes = match c.hashes {
        // Over the longer of the two: records past a shrunk MFT are no longer read (hash 0).
        Some(now) => (0..now.len().max(before.len()))
            .map(|r| (r, now.get(r).copied().unwrap_or(0)))
            .filter(|&(r, h)| before.get(r).copied().unwrap_or(0) != h)
            .map(|(r, h)| (r as u32, h))
            .collect(),
        None => {
            let mut m: std::collections::BTreeMap<u32, u32> = new.hashes.iter().copied().collect();
            for &(r, hash) in &read {
                let h = if hashed(vol, include_deleted, r) {
                    hash
                } else {
                    0
                };
                m.insert(r as u32, h);
            }
            m.into_iter().collect()
        }
    };
    let report = UpdateReport {
        records_read: read.len() as u64,
        read_time,
        stats,
    };
    Ok(Refresh::Updated(Box::new(Applied {
        delta: new,
        report,
        how: c.how,
        find_time: c.find_time,
    })))
}

/// [`refresh`] of a volume of another file system (see [`crate::neutral`]), which keeps no journal and no
/// record log sequence numbers: a scan of its folders (what finding a change costs there), compared entry by
/// entry with the index's current state; the entries that differ become the new delta, as a re-scan's changed
/// records do on NTFS.
fn neutral_refresh(
    vol: &Volume,
    fs: &crate::neutral::Neutral,
    base: &Index,
    map: &BaseMap,
    delta: Option<&Delta>,
    opts: &ScanOptions,
) -> Result<Refresh> {
    let meta = delta.map_or(&base.meta, |d| &d.index.meta);
    if vol.serial() != meta.serial || vol.filesystem() != meta.filesystem {
        return Ok(Refresh::Rebuild(format!(
            "the index is of another volume (serial {:08x}, the source has {:08x})",
            meta.serial,
            vol.serial()
        )));
    }
    let t = Instant::now();
    let scan = fs.scan(&vol.name)?;
    let stamp = fs.stamp(&vol.name)?;
    let find_time = t.elapsed();
    if stamp == meta.change_stamp {
        return Ok(Refresh::Unchanged {
            checked: format!(
                "scan of {} entries in {:.1} ms",
                scan.entries.len(),
                find_time.as_secs_f64() * 1e3
            ),
        });
    }
    let t0 = Instant::now();
    let opts = ScanOptions {
        include_deleted: meta.has_deleted,
        ..*opts
    };
    let ((fresh, _), _) = crate::neutral::fresh_index(vol, fs, &scan, &opts)?;
    // Each record's entry as the index holds it now (the base's visible entries, then the delta's) and as the
    // volume holds it, compared through a digest of what the entry shows.
    let mut now: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for e in 0..base.len() as u32 {
        if delta.is_some_and(|d| d.is_hidden(e)) || !compared(base.flags(e)) {
            continue;
        }
        now.insert(base.record(e), entry_digest(base, e));
    }
    if let Some(d) = delta {
        for e in 0..d.index.len() as u32 {
            if compared(d.index.flags(e)) {
                now.insert(d.index.record(e), entry_digest(&d.index, e));
            }
        }
    }
    let mut changed: Vec<u64> = Vec::new();
    for e in 0..fresh.len() as u32 {
        if !compared(fresh.flags(e)) {
            continue;
        }
        let r = fresh.record(e);
        if now.remove(&r) != Some(entry_digest(&fresh, e)) {
            changed.push(u64::from(r));
        }
    }
    // What the index holds and the volume no longer does.
    changed.extend(now.into_keys().map(u64::from));
    changed.sort_unstable();
    changed.dedup();
    let mut records = changed.clone();
    records.extend(layer::records_to_recheck(base, map, delta, &changed));
    records.sort_unstable();
    records.dedup();
    let wanted: Vec<u64> = records.clone();
    let part = crate::neutral::batch_of(
        scan.entries.iter().filter(|e| {
            let record = crate::neutral::record_of(e.id).0;
            (opts.include_deleted || !e.deleted) && wanted.binary_search(&record).is_ok()
        }),
        scan.root,
        &opts,
    );
    let mut meta = meta.clone();
    meta.records_total = scan.entries.last().map_or(0, |e| e.id + 1);
    meta.change_stamp = stamp;
    meta.built_at = uffs_index::time::now();
    (meta.bytes_in_use, meta.bytes_total) = (scan.space.bytes_in_use, scan.space.bytes_total);
    let read_time = t0.elapsed();
    let build = BuildOptions {
        include_deleted: meta.has_deleted,
    };
    let (new, stats) = layer::apply(base, map, delta, &records, &part, meta, build);
    let report = UpdateReport {
        records_read: part.records.len() as u64,
        read_time,
        stats,
    };
    Ok(Refresh::Updated(Box::new(Applied {
        delta: new,
        report,
        how: "re-scan",
        find_time,
    })))
}

/// The delta over `base` + `delta` after the kernel reported changes in some folders of a walked folder, which
/// were read again (`uffs_walk::reread`): `listed`, the ids of the folders listed; `entries`, each one's own entry,
/// what is in it now and what is below its new subfolders. The records replaced are the folders', those of every
/// entry the index has in them, and those found: in time proportional to the folders listed and the index's
/// length (one pass over its parents), never a walk of the whole folder. `None` when that is not exact: a folder
/// that was in one of them is no longer (what was below it would have to go too), or an update would have to
/// read other records again; then [`refresh`] walks it whole.
pub fn folder_delta(
    base: &Index,
    map: &BaseMap,
    delta: Option<&Delta>,
    listed: &[u64],
    entries: &[uffs_fs::Entry],
    root: u64,
) -> Option<Applied> {
    let t = Instant::now();
    let record = |id: u64| crate::neutral::record_of(id).0;
    let mut folders: Vec<u32> = listed.iter().map(|&id| record(id) as u32).collect();
    folders.sort_unstable();
    let listed_folder = |r: u32| folders.binary_search(&r).is_ok();
    // What the index has in the folders listed (and the folders themselves), base then delta.
    let mut before: Vec<(u64, bool)> = Vec::new();
    for e in 0..base.len() as u32 {
        if delta.is_some_and(|d| d.is_hidden(e)) || !compared(base.flags(e)) {
            continue;
        }
        if listed_folder(base.record(base.parent(e))) || listed_folder(base.record(e)) {
            before.push((
                u64::from(base.record(e)),
                base.flags(e) & uffs_index::flags::DIRECTORY != 0,
            ));
        }
    }
    if let Some(d) = delta {
        let idx = &d.index;
        for e in 0..idx.len() as u32 {
            if compared(idx.flags(e))
                && (listed_folder(idx.record(idx.parent(e))) || listed_folder(idx.record(e)))
            {
                before.push((
                    u64::from(idx.record(e)),
                    idx.flags(e) & uffs_index::flags::DIRECTORY != 0,
                ));
            }
        }
    }
    let mut found: Vec<u64> = entries.iter().map(|e| record(e.id)).collect();
    found.sort_unstable();
    found.dedup();
    // A folder gone from where it was and found nowhere: its entries below would have to go too.
    if before
        .iter()
        .any(|&(r, dir)| dir && found.binary_search(&r).is_err())
    {
        return None;
    }
    // A file with other names outside these folders (hard links): those names are the index's, unchanged (their
    // folders were not reported), with what the file is now. One named only there now is the index's alone.
    let mut extra: Vec<uffs_fs::Entry> = Vec::new();
    let mut outside = |idx: &Index, e: u32| {
        let p = idx.parent(e);
        if listed_folder(idx.record(p)) || !compared(idx.flags(e)) {
            return true;
        }
        let r = u64::from(idx.record(e));
        let Ok(at) = entries.binary_search_by_key(&r, |x| record(x.id)) else {
            return false;
        };
        let mut name = entries[at].clone();
        name.parent = crate::neutral::id_of(u64::from(idx.record(p)), idx.sequence(p));
        name.name = idx.name(e).into_owned();
        extra.push(name);
        true
    };
    let mut delta_entries: std::collections::HashMap<u32, Vec<u32>> =
        std::collections::HashMap::new();
    if let Some(d) = delta {
        for i in 0..d.index.len() as u32 {
            delta_entries.entry(d.index.record(i)).or_default().push(i);
        }
    }
    let mut names_kept = true;
    for &(r, dir) in &before {
        if dir {
            continue;
        }
        if let Some(first) = map.first(r) {
            for i in first as usize..base.len() {
                let i = i as u32;
                if u64::from(base.record(i)) != r {
                    break;
                }
                if !delta.is_some_and(|d| d.is_hidden(i)) {
                    names_kept &= outside(base, i);
                }
            }
        }
        if let (Some(d), Some(es)) = (delta, delta_entries.get(&(r as u32))) {
            for &i in es {
                names_kept &= outside(&d.index, i);
            }
        }
    }
    if !names_kept {
        return None;
    }
    let mut entries: Vec<uffs_fs::Entry> = entries.to_vec();
    entries.extend(extra);
    uffs_fs::sort_by_id(&mut entries);
    entries.dedup();
    let mut changed: Vec<u64> = before
        .iter()
        .map(|&(r, _)| r)
        .chain(found.iter().copied())
        .collect();
    changed.sort_unstable();
    changed.dedup();
    if layer::records_to_recheck(base, map, delta, &changed)
        .iter()
        .any(|r| changed.binary_search(r).is_err())
    {
        return None;
    }
    let read_time = t.elapsed();
    let opts = ScanOptions::default();
    let part = crate::neutral::batch_of(entries.iter(), root, &opts);
    let mut meta = delta.map_or(&base.meta, |d| &d.index.meta).clone();
    meta.records_total = meta
        .records_total
        .max(entries.iter().map(|e| record(e.id) + 1).max().unwrap_or(0));
    // Not the stamp of a whole walk: the next whole check compares every entry.
    meta.change_stamp = 0;
    meta.built_at = uffs_index::time::now();
    let build = BuildOptions {
        include_deleted: meta.has_deleted,
    };
    let (new, stats) = layer::apply(base, map, delta, &changed, &part, meta, build);
    Some(Applied {
        delta: new,
        report: UpdateReport {
            records_read: part.records.len() as u64,
            read_time,
            stats,
        },
        how: "the kernel's reports",
        // The caller's: the folders read again.
        find_time: Duration::ZERO,
    })
}

/// Whether a re-scan compares an entry of these flags: not the synthetic folders, nor names from slack, which
/// are no entry of their record and which an update keeps as the build found them (`uffs_index::layer`).
fn compared(flags: u32) -> bool {
    flags & (uffs_index::flags::SYNTHETIC | uffs_index::flags::FROM_INDEX_SLACK) == 0
}

/// What an entry shows, as one number: its record, name, parent's record, sizes, times and flags.
fn entry_digest(idx: &Index, e: uffs_index::EntryId) -> u64 {
    use std::hash::Hasher as _;
    let mut h = twox_hash::XxHash3_64::new();
    let p = idx.parent(e);
    for v in [
        u64::from(idx.record(e)),
        u64::from(idx.sequence(e)),
        u64::from(idx.record(p)),
        idx.size(e),
        idx.allocated(e),
        idx.created(e),
        idx.modified(e),
        idx.mft_changed(e),
        idx.accessed(e),
        u64::from(idx.flags(e) & !uffs_index::flags::ORPHAN),
    ] {
        h.write_u64(v);
    }
    h.write(idx.name(e).as_bytes());
    if let Some(p) = idx.posix(e) {
        for v in [p.mode, p.uid, p.gid] {
            h.write_u32(v);
        }
    }
    h.write(idx.link_target(e).unwrap_or_default());
    if let Some(x) = idx.exclusive(e) {
        h.write_u64(x);
    }
    h.finish()
}

/// Records whose changes no journal reports but whose entries an update keeps exact: the metafiles (`$MFT`
/// grows, `$Bitmap`, `$LogFile`, `$Secure` …, records 0 to 15) and the root folder.
const METAFILES: std::ops::Range<u64> = 0..16;

/// Sets the index's journal id and position from the volume's journal as it is now (none: both 0).
pub fn set_journal_position(vol: &Volume, index: &mut Index) {
    (index.meta.journal_id, index.meta.journal_usn) = journal_position(vol, index);
}

/// A live volume's journal id and next USN, asked of the file system (`Some((0, 0))`: it has none): as taken
/// when it was opened for a whole read, else now; `None` for any other source.
pub(crate) fn live_journal_position(vol: &Volume) -> Option<(u64, u64)> {
    #[cfg(windows)]
    if let Some(live) = vol.device.live() {
        if let Some(at) = live.journal_at_open {
            return Some(at);
        }
        return Some(match live.query_journal() {
            Ok(Some(j)) => (j.journal_id, j.next_usn),
            _ => (0, 0),
        });
    }
    let _ = vol;
    None
}

/// The volume's journal id and next USN now, found through `index`'s `$UsnJrnl` record, or on a live volume
/// asked of the file system ((0, 0): none).
fn journal_position(vol: &Volume, index: &Index) -> (u64, u64) {
    if let Some(at) = live_journal_position(vol) {
        return at;
    }
    crate::journal::find_usnjrnl_record(index)
        .and_then(|r| crate::journal::Journal::open(vol, r).ok())
        .map_or((0, 0), |j| (j.id, j.size))
}

/// The journal path of [`refresh`]: the records the journal names since the index's position (each record's
/// file and its parent folder, whose times change with its children), the metafiles and `$UsnJrnl` itself
/// are read again. A journal with another id, one trimmed past the index's position, or one that is gone or
/// unreadable cannot be followed: rebuild.
fn from_journal(vol: &Volume, base: &Index, m: &VolumeMeta) -> Result<Found> {
    #[cfg(windows)]
    if let Some(live) = vol.device.live() {
        return from_live_journal(vol, live, m);
    }
    let t = Instant::now();
    let journal = crate::journal::find_usnjrnl_record(base)
        .ok_or_else(|| "the index has no $UsnJrnl".to_string())
        .and_then(|r| crate::journal::Journal::open(vol, r).map_err(|e| e.to_string()));
    let j = match journal {
        Ok(j) => j,
        Err(why) => {
            return Ok(Found::Rebuild(format!(
                "the change journal is gone or unreadable ({why})"
            )))
        }
    };
    if let Some(found) = journal_verdict(m, j.id, j.lowest_valid_usn, j.size) {
        return Ok(found);
    }
    let mut changed: Vec<u64> = METAFILES.chain([j.record]).collect();
    j.for_each_record(vol, m.journal_usn, |_, r| {
        changed.push(r.file_record());
        changed.push(r.parent_record());
    })?;
    Ok(journal_changes(changed, (j.id, j.size), t))
}

/// What both journal paths decide before reading records, from the journal's id and the USNs it holds
/// (`from..next`): a new journal or one that no longer holds the index's position means a rebuild, one at the
/// index's position means no change; `None`: read the records from there.
fn journal_verdict(m: &VolumeMeta, id: u64, from: u64, next: u64) -> Option<Found> {
    if id != m.journal_id {
        return Some(Found::Rebuild(format!(
            "the change journal is a new one (id {id:016x}, the index followed {:016x})",
            m.journal_id
        )));
    }
    if m.journal_usn < from || m.journal_usn > next {
        return Some(no_longer_holds(m, from, next));
    }
    (next == m.journal_usn).then(|| Found::Unchanged(format!("journal at USN {next}")))
}

fn no_longer_holds(m: &VolumeMeta, from: u64, next: u64) -> Found {
    Found::Rebuild(format!(
        "the change journal no longer holds USN {} (it holds {from}..{next})",
        m.journal_usn
    ))
}

/// The records a journal named (files and their folders, with the metafiles), as changes found by it.
fn journal_changes(mut changed: Vec<u64>, journal: (u64, u64), t: Instant) -> Found {
    changed.sort_unstable();
    changed.dedup();
    Found::Changed(Changes {
        records: changed,
        hashes: None,
        journal: Some(journal),
        how: "journal",
        find_time: t.elapsed(),
    })
}

/// [`from_journal`] on a live volume: the file system is asked for the journal (FSCTL_QUERY_USN_JOURNAL) and its
/// records (FSCTL_READ_USN_JOURNAL), which are current where the raw `$J` on disk may lag. Records below FirstUsn
/// are gone (LowestValidUsn only says where this journal instance began).
#[cfg(windows)]
fn from_live_journal(
    vol: &Volume,
    live: &crate::live::LiveDevice,
    m: &VolumeMeta,
) -> Result<Found> {
    let t = Instant::now();
    let err = |e| Error::io(format!("{}: reading the change journal", vol.name), e);
    let Some(j) = live.query_journal().map_err(err)? else {
        return Ok(Found::Rebuild(
            "the volume no longer has a change journal (`fsutil usn createjournal` makes one)"
                .into(),
        ));
    };
    if let Some(found) = journal_verdict(m, j.journal_id, j.first_usn, j.next_usn) {
        return Ok(found);
    }
    let mut changed: Vec<u64> = METAFILES.collect();
    const ERROR_JOURNAL_ENTRY_DELETED: i32 = 1181;
    let next = match live.read_journal(j.journal_id, m.journal_usn, j.next_usn, |r| {
        changed.push(r.file_record());
        changed.push(r.parent_record());
    }) {
        Ok(next) => next,
        // Trimmed between the query and the read.
        Err(e) if e.raw_os_error() == Some(ERROR_JOURNAL_ENTRY_DELETED) => {
            return Ok(no_longer_holds(m, j.first_usn, j.next_usn))
        }
        Err(e) => return Err(err(e)),
    };
    Ok(journal_changes(changed, (j.journal_id, next), t))
}

#[cfg(test)]
mod tests {
    use super::record_hash;

    /// A 1 KiB record that says it uses `used` bytes.
    fn record(used: u32) -> Vec<u8> {
        let mut r: Vec<u8> = (0..1024u32).map(|i| (i * 7 + 3) as u8).collect();
        r[..4].copy_from_slice(b"FILE");
        r[0x18..0x1C].copy_from_slice(&used.to_le_bytes());
        r
    }

    #[test]
    fn a_record_hash_covers_its_used_bytes_only() {
        let r = record(0x1A0);
        // Past the used size: the same hash.
        let mut slack = r.clone();
        slack[0x1A0] ^= 1;
        slack[1023] ^= 1;
        assert_eq!(record_hash(&slack), record_hash(&r));
        // Within it, and the used size itself: another.
        let mut inside = r.clone();
        inside[0x19F] ^= 1;
        assert_ne!(record_hash(&inside), record_hash(&r));
        assert_ne!(record_hash(&record(0x1A8)), record_hash(&r));
        // A used size past the record, too small, or no record at all: every byte counts.
        for mut whole in [record(1025), record(4), {
            let mut z = record(0x1A0);
            z[..4].copy_from_slice(b"BAAD");
            z
        }] {
            let h = record_hash(&whole);
            whole[1023] ^= 1;
            assert_ne!(record_hash(&whole), h);
        }
        assert_ne!(record_hash(&[]), 0);
    }
}
