//! The USN change journal of a volume: the file `$Extend\$UsnJrnl` (its record number is not fixed), whose
//! stream `$J` holds the records and whose small resident stream `$Max` holds the journal's id and limits.
//!
//! `$J` is sparse: Windows deallocates its start as the journal is trimmed, so only the last `max_size` bytes or so
//! are allocated while its logical size, the next USN, keeps growing. Reading it follows the allocated runs only and
//! never touches the holes. Records are 8-byte aligned and never cross a 4096-byte page, but chunks are cut
//! wherever the runs and the read size fall, so a record cut by a chunk end is carried into the next chunk. A raw
//! `$J` capture (`icat VOLUME <record>-128-<id>`, or a fragment) is read the same way from a plain file.

use uffs_index::{flags, EntryId, Index};
use uffs_ntfs::attr::{kind, AttributeBody, AttributeList, NonResident};
use uffs_ntfs::record::{apply_fixups, Record};
use uffs_ntfs::usn::{Item, ScanCounts, UsnJournalMax, UsnRecord, UsnScanner, PAGE_SIZE};

use crate::device::Device;
use crate::volume::Volume;
use crate::{Error, Result};

/// Bytes read at a time.
const CHUNK: usize = 4 << 20;
/// Caps on what the journal's records may declare.
const MAX_ATTRIBUTE_LIST: u64 = 1 << 20;
const MAX_EXTENSION_RECORDS: usize = 4096;
const MAX_EXTENTS: usize = 1 << 20;

/// A piece of the `$J` stream: `len` bytes from `offset` in the stream are at `device_offset` on the volume
/// (`None`: a sparse hole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalRun {
    pub offset: u64,
    pub len: u64,
    pub device_offset: Option<u64>,
}

/// The change journal of a volume, as `$UsnJrnl`'s record describes it.
#[derive(Debug, Clone)]
pub struct Journal {
    /// `$UsnJrnl`'s record number.
    pub record: u64,
    /// The journal id (from `$Max`): USNs of journals with different ids are unrelated.
    pub id: u64,
    /// `$Max`; all zero when the record has none.
    pub max: UsnJournalMax,
    /// Logical size of `$J`: the USN the next record will get.
    pub size: u64,
    /// Records below this USN were trimmed away (from `$Max`).
    pub lowest_valid_usn: u64,
    /// How far `$J` holds written data; past it, up to `size`, reads as zeros.
    pub initialized_size: u64,
    /// Allocated and sparse pieces of `$J`, in stream order.
    pub runs: Vec<JournalRun>,
    /// `$J` stored resident in the record (a tiny or new journal).
    resident: Option<Vec<u8>>,
}

/// UTF-16LE attribute names.
const J: &[u8] = b"$\0J\0";
const MAX: &[u8] = b"$\0M\0a\0x\0";

impl Journal {
    /// Reads record `usnjrnl_record` of `volume` (and the extension records its `$ATTRIBUTE_LIST` names) and
    /// collects `$J`'s runs and `$Max`.
    pub fn open(volume: &Volume, usnjrnl_record: u64) -> Result<Journal> {
        let name = &volume.name;
        let what = format!("{name}: $UsnJrnl (record {usnjrnl_record})");
        let boot = volume.boot.ok_or_else(|| {
            Error::Source(format!(
                "{name} is a raw $MFT capture: the journal's clusters are not in it"
            ))
        })?;
        let cs = boot.cluster_size;
        if usnjrnl_record >= volume.records_total {
            return Err(Error::Source(format!("{what}: beyond the end of the MFT")));
        }
        let mut rec = vec![0u8; volume.record_size as usize];
        volume
            .read_records(usnjrnl_record, &mut rec)
            .map_err(|e| Error::io(&what, e))?;
        apply_fixups(&mut rec).map_err(|e| Error::format(&what, e))?;
        let base = Record::parse(&rec).map_err(|e| Error::format(&what, e))?;
        if !base.header.in_use() || !base.header.is_base() {
            return Err(Error::Source(format!(
                "{what}: the record is not an in-use base record"
            )));
        }
        let mut found = Found::default();
        let mut list: Option<Vec<u8>> = None;
        for a in base.attributes() {
            let a = a.map_err(|e| Error::format(&what, e))?;
            if a.type_code == kind::ATTRIBUTE_LIST {
                list = Some(match a.body().map_err(|e| Error::format(&what, e))? {
                    AttributeBody::Resident(v) => v.to_vec(),
                    AttributeBody::NonResident(nr) => {
                        read_small(volume, cs, &nr, MAX_ATTRIBUTE_LIST, &what)?
                    }
                });
            } else {
                found.take(volume, cs, &a, &what)?;
            }
        }
        if let Some(list) = list {
            let mut ext: Vec<u64> = Vec::new();
            for e in AttributeList::new(&list) {
                let e = e.map_err(|e| Error::format(format!("{what}: attribute list"), e))?;
                if e.type_code == kind::DATA
                    && (e.name == J || e.name == MAX)
                    && e.record.record() != usnjrnl_record
                {
                    ext.push(e.record.record());
                }
            }
            ext.sort_unstable();
            ext.dedup();
            if ext.len() > MAX_EXTENSION_RECORDS {
                return Err(Error::Source(format!(
                    "{what}: the attribute list names too many extension records"
                )));
            }
            for number in ext {
                let what = format!("{what}: extension record {number}");
                if number >= volume.records_total {
                    return Err(Error::Source(format!("{what}: beyond the end of the MFT")));
                }
                volume
                    .read_records(number, &mut rec)
                    .map_err(|e| Error::io(&what, e))?;
                apply_fixups(&mut rec).map_err(|e| Error::format(&what, e))?;
                let r = Record::parse(&rec).map_err(|e| Error::format(&what, e))?;
                // A record reused since the list was written belongs to another file now.
                if !r.header.in_use() || r.header.base.record() != usnjrnl_record {
                    return Err(Error::Source(format!(
                        "{what}: not an extension record of $UsnJrnl"
                    )));
                }
                for a in r.attributes() {
                    let a = a.map_err(|e| Error::format(&what, e))?;
                    found.take(volume, cs, &a, &what)?;
                }
            }
        }
        found.finish(usnjrnl_record, cs, volume.device.len(), &what)
    }

    /// Calls `f` with the stream offset and the record for every V2/V3 record from `from_usn` on (records whose
    /// USN is below it are left out), in stream order. Only allocated runs are read, in chunks of a few MiB.
    /// Returns what was read and skipped.
    pub fn for_each_record(
        &self,
        volume: &Volume,
        from_usn: u64,
        f: impl FnMut(u64, &UsnRecord<'_>),
    ) -> Result<ScanCounts> {
        let mut feed = Feeder::new(from_usn, f);
        if let Some(v) = &self.resident {
            feed.segment(0, v);
            return Ok(feed.finish());
        }
        let start = from_usn - from_usn % PAGE_SIZE as u64;
        let end = self.size.min(self.initialized_size);
        let mut buf = vec![0u8; CHUNK];
        for r in &self.runs {
            let Some(dev) = r.device_offset else { continue };
            let (lo, hi) = (r.offset.max(start), (r.offset + r.len).min(end));
            let mut pos = lo;
            while pos < hi {
                let n = ((hi - pos) as usize).min(CHUNK);
                let at = dev + (pos - r.offset);
                volume
                    .device
                    .read_exact_at(&mut buf[..n], at)
                    .map_err(|e| {
                        Error::io(
                            format!(
                                "{}: $UsnJrnl:$J bytes {pos}..{}",
                                volume.name,
                                pos + n as u64
                            ),
                            e,
                        )
                    })?;
                feed.segment(pos, &buf[..n]);
                pos += n as u64;
            }
        }
        Ok(feed.finish())
    }

    /// Bytes of `$J` that are allocated on the volume (what reading the whole journal reads).
    pub fn allocated_bytes(&self) -> u64 {
        if let Some(v) = &self.resident {
            return v.len() as u64;
        }
        self.runs
            .iter()
            .filter(|r| r.device_offset.is_some())
            .map(|r| r.len)
            .sum()
    }
}

/// What the records of `$UsnJrnl` held.
#[derive(Default)]
struct Found {
    /// (start VCN, runs) of each `$J` extent.
    extents: Vec<(u64, Vec<uffs_ntfs::runlist::Run>)>,
    size: Option<(u64, u64)>,
    resident: Option<Vec<u8>>,
    max: Option<UsnJournalMax>,
}

impl Found {
    fn take(
        &mut self,
        volume: &Volume,
        cs: u64,
        a: &uffs_ntfs::attr::Attribute<'_>,
        what: &str,
    ) -> Result<()> {
        if a.type_code != kind::DATA || a.is_unnamed() {
            return Ok(());
        }
        let name = a.name().map_err(|e| Error::format(what, e))?;
        if name != J && name != MAX {
            return Ok(());
        }
        let body = a.body().map_err(|e| Error::format(what, e))?;
        match (name == J, body) {
            (true, AttributeBody::NonResident(nr)) => {
                if nr.start_vcn == 0 {
                    self.size = Some((nr.data_size, nr.initialized_size));
                }
                let runs = nr
                    .runs()
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(|e| Error::format(format!("{what}: $J runlist"), e))?;
                if self.extents.iter().map(|e| e.1.len()).sum::<usize>() + runs.len() > MAX_EXTENTS
                {
                    return Err(Error::Source(format!("{what}: $J has too many runs")));
                }
                self.extents.push((nr.start_vcn, runs));
            }
            (true, AttributeBody::Resident(v)) => self.resident = Some(v.to_vec()),
            (false, AttributeBody::Resident(v)) => {
                self.max = Some(
                    UsnJournalMax::parse(v)
                        .map_err(|e| Error::format(format!("{what}: $Max"), e))?,
                );
            }
            (false, AttributeBody::NonResident(nr)) => {
                let v = read_small(volume, cs, &nr, 4096, what)?;
                self.max = Some(
                    UsnJournalMax::parse(&v)
                        .map_err(|e| Error::format(format!("{what}: $Max"), e))?,
                );
            }
        }
        Ok(())
    }

    fn finish(mut self, record: u64, cs: u64, device_len: u64, what: &str) -> Result<Journal> {
        let max = self.max.unwrap_or_default();
        if let Some(v) = self.resident {
            return Ok(Journal {
                record,
                id: max.journal_id,
                max,
                size: v.len() as u64,
                lowest_valid_usn: max.lowest_valid_usn,
                initialized_size: v.len() as u64,
                runs: Vec::new(),
                resident: Some(v),
            });
        }
        let (size, initialized) = self.size.ok_or_else(|| {
            Error::Source(format!("{what}: no $J stream (or no first extent of it)"))
        })?;
        self.extents.sort_by_key(|e| e.0);
        let mut runs: Vec<JournalRun> = Vec::new();
        for r in self.extents.iter().flat_map(|e| &e.1) {
            let bad = || Error::Source(format!("{what}: a $J run lies beyond any volume"));
            let offset = r.vcn.checked_mul(cs).ok_or_else(bad)?;
            let len = r.length.checked_mul(cs).ok_or_else(bad)?;
            offset.checked_add(len).ok_or_else(bad)?;
            // Overlapping extents (a damaged list): the first one wins.
            if runs.last().is_some_and(|l| l.offset + l.len > offset) {
                continue;
            }
            let device_offset = match r.lcn {
                None => None,
                Some(lcn) => {
                    let d = lcn.checked_mul(cs).ok_or_else(bad)?;
                    if d.checked_add(len).is_none_or(|e| e > device_len) {
                        return Err(Error::Source(format!(
                            "{what}: a $J run (bytes {d}..{}) lies past the end of the volume ({device_len} bytes)",
                            d.saturating_add(len)
                        )));
                    }
                    Some(d)
                }
            };
            runs.push(JournalRun {
                offset,
                len,
                device_offset,
            });
        }
        Ok(Journal {
            record,
            id: max.journal_id,
            max,
            size,
            lowest_valid_usn: max.lowest_valid_usn,
            initialized_size: initialized.min(size),
            runs,
            resident: None,
        })
    }
}

/// Reads the value of a small non-resident attribute (at most `cap` bytes).
fn read_small(
    volume: &Volume,
    cs: u64,
    nr: &NonResident<'_>,
    cap: u64,
    what: &str,
) -> Result<Vec<u8>> {
    if nr.data_size > cap {
        return Err(Error::Source(format!(
            "{what}: an attribute claims {} bytes, more than the {cap} it may have",
            nr.data_size
        )));
    }
    let mut out = vec![0u8; nr.data_size as usize];
    for r in nr.runs() {
        let r = r.map_err(|e| Error::format(format!("{what}: runlist"), e))?;
        let (Some(off), Some(lcn)) = (r.vcn.checked_mul(cs), r.lcn) else {
            continue;
        };
        let Ok(off) = usize::try_from(off) else {
            continue;
        };
        if off >= out.len() {
            continue;
        }
        let n = (out.len() - off).min(r.length.saturating_mul(cs).min(cap) as usize);
        let at = lcn
            .checked_mul(cs)
            .ok_or_else(|| Error::Source(format!("{what}: run beyond any volume")))?;
        volume
            .device
            .read_exact_at(&mut out[off..off + n], at)
            .map_err(|e| Error::io(what, e))?;
    }
    Ok(out)
}

/// Feeds stream pieces to the scanner, carrying a record cut by a piece's end into the next piece when that
/// continues the stream.
struct Feeder<F> {
    from: u64,
    f: F,
    carry: Vec<u8>,
    carry_at: u64,
    counts: ScanCounts,
}

impl<F: FnMut(u64, &UsnRecord<'_>)> Feeder<F> {
    fn new(from: u64, f: F) -> Feeder<F> {
        Feeder {
            from,
            f,
            carry: Vec::new(),
            carry_at: 0,
            counts: ScanCounts::default(),
        }
    }

    /// `data` are the stream's bytes from offset `at`.
    fn segment(&mut self, at: u64, data: &[u8]) {
        if !self.carry.is_empty() && self.carry_at + self.carry.len() as u64 != at {
            self.flush();
        }
        let mut rest = 0;
        if !self.carry.is_empty() {
            // The carried bytes are less than one record: join them with the start of this piece (enough for
            // any record), scan that, and go on in the piece itself from wherever the scan ended.
            let old = self.carry.len();
            let take = data.len().min(uffs_ntfs::usn::MAX_RECORD);
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(&data[..take]);
            let used = self.scan(self.carry_at, &joined, true);
            if used < old {
                // Stopped inside the carried bytes (only when the piece is shorter than a record).
                let mut all = joined.split_off(used);
                all.extend_from_slice(&data[take..]);
                let all_at = self.carry_at + used as u64;
                let u = self.scan(all_at, &all, true);
                all.drain(..u);
                self.carry = all;
                self.carry_at = all_at + u as u64;
                return;
            }
            rest = used - old;
        }
        let used = self.scan(at + rest as u64, &data[rest..], true);
        self.carry = data[rest + used..].to_vec();
        self.carry_at = at + (rest + used) as u64;
    }

    /// Scans `b` (from stream offset `at`); returns how many bytes it consumed.
    fn scan(&mut self, at: u64, b: &[u8], partial: bool) -> usize {
        let mut s = UsnScanner::new(b, at);
        if partial {
            s = s.stop_at_incomplete();
        }
        let mut yielded = 0;
        for item in s.by_ref() {
            if let Item::Record(offset, r) = item {
                if r.usn >= self.from {
                    (self.f)(offset, &r);
                    yielded += 1;
                }
            }
        }
        let mut c = s.counts();
        // Records below `from` were read but not wanted.
        c.records = yielded;
        self.counts.add(&c);
        s.position()
    }

    fn flush(&mut self) {
        let carry = std::mem::take(&mut self.carry);
        if !carry.is_empty() {
            self.scan(self.carry_at, &carry, false);
        }
    }

    fn finish(mut self) -> ScanCounts {
        self.flush();
        self.counts
    }
}

/// True when `head`, the first bytes of a file, looks like raw `$J` bytes: the first non-zero 8-byte word
/// begins a whole, plausible V2 or V3 USN record. Leading zeros (the sparse start of a captured `$J`) are allowed.
pub fn is_raw_journal(head: &[u8]) -> bool {
    uffs_ntfs::usn::starts_with_record(head)
}

/// Offset of the first non-zero 8-byte word of `device` at or after `from` (aligned down to 8), or `None` when
/// the rest is all zeros: where a raw capture's records start after its sparse part.
pub fn first_nonzero(device: &Device, from: u64) -> Result<Option<u64>> {
    let mut found = None;
    read_chunks(device, from & !7, |pos, bytes| {
        found = bytes
            .iter()
            .position(|&b| b != 0)
            .map(|i| pos + (i as u64 & !7));
        found.is_none()
    })?;
    Ok(found)
}

/// Reads `device` from `from` to its end in chunks of [`CHUNK`] bytes, calling `f(offset, bytes)` for each
/// until it returns false.
fn read_chunks(device: &Device, from: u64, mut f: impl FnMut(u64, &[u8]) -> bool) -> Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut pos = from;
    while pos < device.len() {
        let n = device
            .read_head(&mut buf, pos)
            .map_err(|e| Error::io(format!("reading byte {pos}"), e))?;
        if n == 0 || !f(pos, &buf[..n]) {
            break;
        }
        pos += n as u64;
    }
    Ok(())
}

/// Reads a raw `$J` capture (the file's bytes are the stream, its offsets the records' positions in it) and calls
/// `f` for every V2/V3 record whose USN is at least `from_usn`.
pub fn scan_raw(
    device: &Device,
    from_usn: u64,
    f: impl FnMut(u64, &UsnRecord<'_>),
) -> Result<ScanCounts> {
    let mut feed = Feeder::new(from_usn, f);
    read_chunks(device, 0, |pos, bytes| {
        feed.segment(pos, bytes);
        true
    })?;
    Ok(feed.finish())
}

/// The record number of `/$Extend/$UsnJrnl` in a volume's index (the entry itself or one of its streams), or
/// `None` when the volume has no journal.
pub fn find_usnjrnl_record(index: &Index) -> Option<u64> {
    let root = index.root();
    // With search aids, the few entries named `$UsnJrnl…` are a binary search of the name order away; an
    // update looks for it every time, so it must not cost a pass over every name.
    const FOLDED: &[u8] = b"$usnjrnl";
    let named: Box<dyn Iterator<Item = EntryId>> = match index.search_aids() {
        Some(a) => {
            let order = &a.name_order;
            let lo = order.partition_point(0..order.len(), |id| index.folded_name(id) < FOLDED);
            Box::new(
                order
                    .range(lo..order.len())
                    .take_while(|&id| index.folded_name(id).starts_with(FOLDED)),
            )
        }
        // (Folded names compared first: the names as written are rebuilt from their case bits, and a build,
        // which has no aids yet, looks at every entry.)
        None => Box::new(
            (0..index.len() as EntryId).filter(|&id| index.folded_name(id).starts_with(FOLDED)),
        ),
    };
    let mut named = named;
    named
        .find(|&id| {
            let n = index.name_bytes(id);
            (*n == *b"$UsnJrnl" || n.starts_with(b"$UsnJrnl:"))
                && index.flags(id) & flags::DELETED == 0
                && {
                    let p = index.parent(id);
                    p != id && *index.name_bytes(p) == *b"$Extend" && index.parent(p) == root
                }
        })
        .map(|id| u64::from(index.record(id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use uffs_ntfs::usn::V2_HEADER;

    fn v2(usn: u64, name: &str) -> Vec<u8> {
        let n: Vec<u8> = name.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        let len = (V2_HEADER + n.len()).next_multiple_of(8);
        let mut r = vec![0u8; len];
        r[0..4].copy_from_slice(&(len as u32).to_le_bytes());
        r[4..6].copy_from_slice(&2u16.to_le_bytes());
        r[8..16].copy_from_slice(&((1u64 << 48) | 40).to_le_bytes());
        r[24..32].copy_from_slice(&usn.to_le_bytes());
        r[56..58].copy_from_slice(&(n.len() as u16).to_le_bytes());
        r[58..60].copy_from_slice(&60u16.to_le_bytes());
        r[60..60 + n.len()].copy_from_slice(&n);
        r
    }

    /// A journal of `pages` pages, each filled with records and a zero tail.
    fn journal(pages: usize) -> (Vec<u8>, Vec<u64>) {
        let mut b = Vec::new();
        let mut usns = Vec::new();
        for p in 0..pages {
            let page_end = (p + 1) * PAGE_SIZE;
            loop {
                let r = v2(b.len() as u64, &format!("file-{}.txt", usns.len()));
                if b.len() + r.len() > page_end {
                    break;
                }
                usns.push(b.len() as u64);
                b.extend(r);
            }
            b.resize(page_end, 0);
        }
        (b, usns)
    }

    fn feed_in_pieces(b: &[u8], cuts: &[usize], from: u64) -> (Vec<u64>, ScanCounts) {
        let mut got = Vec::new();
        let mut feed = Feeder::new(from, |o: u64, r: &UsnRecord<'_>| {
            assert_eq!(o, r.usn);
            got.push(o)
        });
        let mut pos = 0;
        for &c in cuts.iter().chain(std::iter::once(&b.len())) {
            feed.segment(pos as u64, &b[pos..c]);
            pos = c;
        }
        let c = feed.finish();
        (got, c)
    }

    #[test]
    fn records_cut_by_piece_ends_are_carried() {
        let (b, usns) = journal(6);
        for cuts in [
            vec![],
            vec![100, 4096, 4100, 9000],
            (8..b.len()).step_by(8).collect::<Vec<_>>(),
            (1..b.len()).step_by(37).collect::<Vec<_>>(),
        ] {
            let (got, c) = feed_in_pieces(&b, &cuts, 0);
            assert_eq!(got, usns, "cuts {:?}", &cuts[..cuts.len().min(5)]);
            assert_eq!((c.damaged_regions, c.skipped_bytes), (0, 0));
        }
        let (got, _) = feed_in_pieces(&b, &[5000], usns[40]);
        assert_eq!(got, usns[40..]);
    }

    #[test]
    fn a_gap_between_pieces_ends_a_cut_record_as_damage() {
        let (b, usns) = journal(2);
        let mut got = 0;
        let mut feed = Feeder::new(0, |_: u64, _: &UsnRecord<'_>| got += 1);
        feed.segment(0, &b[..100]);
        // Not contiguous with the first piece: the carried partial record is damage.
        feed.segment(4096, &b[4096..]);
        let c = feed.finish();
        assert_eq!(c.damaged_regions, 1);
        assert!(got > 0 && got < usns.len());
    }
}
