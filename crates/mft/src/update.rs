//! Following a volume's changes: which records changed since an index was built, and the index with those
//! records read again.
//!
//! Two ways to find the changed records end in the same step ([`update_index`]):
//! * a re-scan ([`rescan`]) reads the MFT as a build does but parses nothing: it hashes each record's bytes and
//!   compares them with the hashes the index keeps. Volumes written by ntfs-3g or Linux's ntfs3 keep no change
//!   journal, and their drivers do not maintain `$LogFile` sequence numbers in file records, so the bytes are
//!   the only signal that every driver maintains;
//! * the change journal (`crate::journal`) names the changed file records directly.
//!
//! A changed extension record stands for its base record: the base record is read again with all of its
//! extension records (found through its `$ATTRIBUTE_LIST`), and its entries are replaced as a whole.

use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use uffs_index::batch::RecordBatch;
use uffs_index::update::{self, UpdateStats};
use uffs_index::{BuildOptions, Index};
use uffs_ntfs::attr::{kind, AttributeBody, AttributeList};
use uffs_ntfs::record::{has_file_signature, Record};

use crate::parse::parse_record;
use crate::plan::in_bitmap;
use crate::scan::ScanOptions;
use crate::volume::{decode_runs, read_clusters, Volume};
use crate::{Error, Result};

/// Attribute lists larger than this come from damaged records.
const MAX_ATTRIBUTE_LIST: u64 = 16 << 20;
/// Extension records followed for one base record, at most.
const MAX_EXTENSIONS: usize = 4096;

/// The hash of one record's bytes as read (before fixups); never 0, which means "not read".
pub fn record_hash(raw: &[u8]) -> u32 {
    (xxhash_rust::xxh3::xxh3_64(raw) as u32).max(1)
}

/// Whether a build or re-scan with these options reads record `r` (and keeps its hash).
pub fn hashed(vol: &Volume, include_deleted: bool, r: u64) -> bool {
    include_deleted || vol.bitmap.as_deref().is_none_or(|b| in_bitmap(b, r))
}

/// The base record an extension record belongs to, from its raw header (0 for a base record or no record).
fn base_of(raw: &[u8]) -> u64 {
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

/// Reads the MFT as a build would (the same plan and read size) and compares each record's hash with the one
/// `old` keeps. `None` when `old` keeps no hashes (an index from an older uffs): rebuild it instead.
pub fn rescan(vol: &Volume, old: &Index, opts: &ScanOptions) -> Result<Option<Rescan>> {
    let t = Instant::now();
    let before = old.record_hashes();
    if before.is_empty() {
        return Ok(None);
    }
    let chunks = opts.plan(vol);
    let rs = vol.record_size as usize;
    let cap = ScanOptions::buffer_bytes(vol, &chunks);
    let total = vol.records_total as usize;
    let mut hashes = vec![0u32; total];
    let mut changed = Vec::new();
    let mut bytes_read = 0;
    // One thread reads while this one hashes: the hashing hides behind the reads.
    let (free_tx, free_rx) = bounded::<Vec<u8>>(3);
    let (full_tx, full_rx) = bounded::<(u64, usize, Vec<u8>)>(3);
    for _ in 0..3 {
        let _ = free_tx.send(vec![0u8; cap]);
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            for c in &chunks {
                let Ok(mut buf) = free_rx.recv() else { break };
                let len = c.records as usize * rs;
                crate::scan::read_chunk(vol, *c, &mut buf[..len]);
                if full_tx.send((c.first, len, buf)).is_err() {
                    break;
                }
            }
            drop(full_tx);
        });
        for (first, len, buf) in full_rx.iter() {
            bytes_read += len as u64;
            for (i, raw) in buf[..len].chunks_exact(rs).enumerate() {
                let r = first + i as u64;
                if !hashed(vol, opts.include_deleted, r) {
                    continue;
                }
                let h = record_hash(raw);
                hashes[r as usize] = h;
                if before.get(r as usize) != Some(&h) {
                    changed.push(r);
                    let base = base_of(raw);
                    if base != 0 {
                        changed.push(base);
                    }
                }
            }
            let _ = free_tx.send(buf);
        }
    });
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
    let mut buf = vec![0u8; rs];
    let mut read: Vec<(u64, u32)> = Vec::with_capacity(records.len());
    let mut extensions: Vec<u64> = Vec::new();
    let mut read_one = |r: u64, batch: &mut RecordBatch, buf: &mut [u8]| -> Result<bool> {
        if r >= vol.records_total {
            return Ok(false);
        }
        vol.read_records(r, buf)
            .map_err(|e| Error::io(format!("{}: MFT record {r}", vol.name), e))?;
        read.push((r, record_hash(buf)));
        let in_use = buf.get(0x16).is_some_and(|f| f & 1 != 0) && vol.bitmap_bit(r).unwrap_or(true);
        if !include_deleted && !in_use {
            return Ok(false);
        }
        Ok(parse_record(buf, r, batch))
    };
    for &r in records {
        if !read_one(r, &mut batch, &mut buf)? {
            continue;
        }
        let has_list = batch
            .records
            .last()
            .is_some_and(|i| i.number == r && i.has_attribute_list);
        if has_list {
            // `parse_record` applied the fixups in place: `buf` is the record as parsed.
            extensions.extend(extension_records(vol, r, &buf));
        }
    }
    extensions.sort_unstable();
    extensions.dedup();
    extensions.retain(|e| records.binary_search(e).is_err());
    for e in extensions {
        read_one(e, &mut batch, &mut buf)?;
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
                let cs = vol.boot.map_or(0, |b| b.cluster_size);
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

/// What [`update_index`] did.
#[derive(Debug, Clone, Default)]
pub struct UpdateReport {
    /// Records read again (changed ones, orphans, extension records).
    pub records_read: u64,
    pub read_time: Duration,
    pub stats: UpdateStats,
    pub total: Duration,
}

/// The index `old` with records `changed` read again from `vol` and their entries replaced, with the records
/// [`Index::records_to_recheck`] names. The result keeps `old`'s journal position; the caller sets it.
pub fn update_index(
    vol: &Volume,
    old: &Index,
    changed: &[u64],
    hashes: Option<Vec<u32>>,
) -> Result<(Index, UpdateReport)> {
    let t0 = Instant::now();
    let mut records: Vec<u64> = changed.to_vec();
    records.sort_unstable();
    records.dedup();
    records.extend(old.records_to_recheck(&records));
    records.sort_unstable();
    records.dedup();
    let include_deleted = old.meta.has_deleted;
    let (batch, read) = read_records(vol, &records, include_deleted)?;
    let read_time = t0.elapsed();
    // Every record whose entries may change: asked for, and extension records read on the way (their base
    // records are among those asked for).
    let mut replaced: Vec<u64> = records.clone();
    replaced.extend(read.iter().map(|&(r, _)| r));
    replaced.sort_unstable();
    replaced.dedup();
    let mut meta = old.meta.clone();
    meta.records_total = vol.records_total;
    meta.change_stamp = vol.change_stamp();
    meta.built_at = uffs_index::time::now();
    let opts = BuildOptions { include_deleted };
    let (mut idx, stats) = update::apply(old, &replaced, &batch, meta, opts);
    let hashes = hashes.unwrap_or_else(|| {
        let mut h = old.record_hashes().to_vec();
        h.resize(vol.records_total as usize, 0);
        for &(r, hash) in &read {
            if let Some(slot) = h.get_mut(r as usize) {
                *slot = if hashed(vol, include_deleted, r) {
                    hash
                } else {
                    0
                };
            }
        }
        h
    });
    idx.set_record_hashes(hashes);
    let report = UpdateReport {
        records_read: read.len() as u64,
        read_time,
        stats,
        total: t0.elapsed(),
    };
    Ok((idx, report))
}

/// What [`refresh`] decided.
pub enum Refresh {
    /// Nothing the index holds has changed.
    Unchanged { checked: String },
    /// The changes are applied.
    Updated(Box<Applied>),
    /// The index cannot follow this source: build it again (the reason, for the log).
    Rebuild(String),
}

/// An index with changes applied.
pub struct Applied {
    /// The new index, with its search aids; not yet written.
    pub index: Index,
    pub report: UpdateReport,
    /// How the changes were found, for logs: `journal` or `re-scan`.
    pub how: &'static str,
    /// Time spent finding them (reading the journal, or the re-scan).
    pub find_time: Duration,
}

/// Brings `old` up to date with `vol`: the changed records are found (from a re-scan of record hashes) and
/// applied, or the reason the index must be built again is given.
pub fn refresh(vol: &Volume, old: &Index, opts: &ScanOptions) -> Result<Refresh> {
    let serial = vol.boot.map_or(0, |b| b.serial);
    if serial != old.meta.serial || vol.record_size != old.meta.record_size {
        return Ok(Refresh::Rebuild(format!(
            "the index is of another volume (serial {:016x}, the source has {serial:016x})",
            old.meta.serial
        )));
    }
    let opts = ScanOptions {
        include_deleted: old.meta.has_deleted,
        ..*opts
    };
    if old.meta.journal_id != 0 {
        return from_journal(vol, old);
    }
    let t = Instant::now();
    let Some(scan) = rescan(vol, old, &opts)? else {
        return Ok(Refresh::Rebuild(
            "the index keeps no record hashes to compare (it was made by an older uffs)".into(),
        ));
    };
    let find_time = t.elapsed();
    if scan.changed.is_empty() {
        return Ok(Refresh::Unchanged {
            checked: format!(
                "re-scan of {} MB in {:.1} ms",
                scan.bytes_read >> 20,
                find_time.as_secs_f64() * 1e3
            ),
        });
    }
    let (mut index, report) = update_index(vol, old, &scan.changed, Some(scan.hashes))?;
    // A journal made since (on Windows, or by `fsutil usn createjournal`) is followed from now on.
    set_journal_position(vol, &mut index);
    Ok(Refresh::Updated(Box::new(Applied {
        index,
        report,
        how: "re-scan",
        find_time,
    })))
}

/// Records whose changes no journal reports but whose entries an update keeps exact: the metafiles (`$MFT`
/// grows, `$Bitmap`, `$LogFile`, `$Secure` …, records 0 to 15) and the root folder.
const METAFILES: std::ops::Range<u64> = 0..16;

/// Sets the index's journal id and position from the volume's journal as it is now (none: both 0).
pub fn set_journal_position(vol: &Volume, index: &mut Index) {
    let journal = crate::journal::find_usnjrnl_record(index)
        .and_then(|r| crate::journal::Journal::open(vol, r).ok());
    (index.meta.journal_id, index.meta.journal_usn) = journal.map_or((0, 0), |j| (j.id, j.size));
}

/// The journal path of [`refresh`]: the records the journal names since the index's position (each record's
/// file and its parent folder, whose times change with its children), the metafiles and `$UsnJrnl` itself
/// are read again. A journal with another id, one trimmed past the index's position, or one that is gone or
/// unreadable cannot be followed: rebuild.
fn from_journal(vol: &Volume, old: &Index) -> Result<Refresh> {
    let t = Instant::now();
    let m = &old.meta;
    let journal = crate::journal::find_usnjrnl_record(old)
        .ok_or_else(|| "the index has no $UsnJrnl".to_string())
        .and_then(|r| crate::journal::Journal::open(vol, r).map_err(|e| e.to_string()));
    let j = match journal {
        Ok(j) => j,
        Err(why) => {
            return Ok(Refresh::Rebuild(format!(
                "the change journal is gone or unreadable ({why})"
            )))
        }
    };
    if j.id != m.journal_id {
        return Ok(Refresh::Rebuild(format!(
            "the change journal is a new one (id {:016x}, the index followed {:016x})",
            j.id, m.journal_id
        )));
    }
    if m.journal_usn < j.lowest_valid_usn || m.journal_usn > j.size {
        return Ok(Refresh::Rebuild(format!(
            "the change journal no longer holds USN {} (it holds {}..{})",
            m.journal_usn, j.lowest_valid_usn, j.size
        )));
    }
    if j.size == m.journal_usn {
        return Ok(Refresh::Unchanged {
            checked: format!("journal at USN {}", j.size),
        });
    }
    let mut changed: Vec<u64> = METAFILES.chain([j.record]).collect();
    j.for_each_record(vol, m.journal_usn, |_, r| {
        changed.push(r.file_record());
        changed.push(r.parent_record());
    })?;
    changed.sort_unstable();
    changed.dedup();
    let find_time = t.elapsed();
    let (mut index, report) = update_index(vol, old, &changed, None)?;
    index.meta.journal_id = j.id;
    index.meta.journal_usn = j.size;
    Ok(Refresh::Updated(Box::new(Applied {
        index,
        report,
        how: "journal",
        find_time,
    })))
}
