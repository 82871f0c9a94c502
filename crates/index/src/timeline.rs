//! What a forensic timeline shows of each entry besides the index's columns: the `$FILE_NAME` times of its name
//! (each hard link has its own `$FILE_NAME`, with its own times) and the ids of the attributes its rows name
//! (The Sleuth Kit's `record-type-id`). A cold, optional part of the index: built with it, carried through
//! updates, stored as two sections that older readers ignore, read only by what asks for it (the `fn_*` columns,
//! the body file), never by queries.
//!
//! Every entry has one record in one byte array, and every [`BLOCK`] entries have the offset where the first of
//! them starts, so an entry is found by skipping at most `BLOCK - 1` records. Most `$FILE_NAME` times repeat a
//! `$STANDARD_INFORMATION` time of the same entry or the name's time before them, so a record says which in two
//! bits per time and stores only the others:
//!
//! * byte 0, two bits per time, created (bits 0-1), modified, MFT changed, accessed (bits 6-7). Created: 0 the SI
//!   created time, 1 stored, 2 nothing is known of this entry (the record is this byte alone), 3 the SI
//!   MFT-changed time. The others: 0 the SI time of the same kind, 1 stored, 2 the `$FILE_NAME` time before it,
//!   3 the SI created time;
//! * byte 1: bits 0-3 the `$FILE_NAME` attribute's id (15: a varint follows); bits 4-6 the main attribute's id
//!   plus one (0: none, 7: a varint follows); bit 7: a folder's `$INDEX_ROOT` length follows;
//! * the stored times, each a zigzag LEB128 varint of its difference to the stored time before it (the first: to
//!   the SI MFT-changed time, which a name's times are usually near), then the varints byte 1 announced.
//!
//! A record depends only on its own entry, so updates copy the records of the entries they keep as bytes.
//! Every read holds its bounds on any bytes (a file opened without checking its data): damage gives `None`.

use std::ops::Range;

use crate::column::Col;

/// Entries per block offset.
pub const BLOCK: usize = 64;

/// The record of an entry nothing is known of (made by uffs, or kept from an index without this section).
pub(crate) const NO_DATA: u8 = 0b10;

/// One entry's part of a timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryTimeline {
    /// The `$FILE_NAME` times of the entry's name (a stream's: of the name it hangs beside), FILETIME: created,
    /// modified, MFT changed, accessed.
    pub fn_times: [u64; 4],
    /// The id of that `$FILE_NAME` attribute in its record.
    pub fn_id: u16,
    /// The id of the attribute the entry's own row is about: a file's unnamed `$DATA`, a folder's `$I30`
    /// `$INDEX_ROOT`, a stream's `$DATA`. `None` when the record has none.
    pub main_id: Option<u16>,
    /// A folder's `$INDEX_ROOT` value length in bytes.
    pub index_root_size: Option<u32>,
}

/// The records of an index's entries, owned or mapped from its file.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub(crate) data: Col<u8>,
    /// Where the record of entry `b * BLOCK` starts, for each block `b`, and then the data's length.
    pub(crate) blocks: Col<u64>,
}

/// Appends the record of an entry with timeline `e` (`None`: nothing known) and SI times `si` (created,
/// modified, MFT changed, accessed).
pub(crate) fn encode(e: Option<&EntryTimeline>, si: [u64; 4], out: &mut Vec<u8>) {
    let Some(e) = e else {
        out.push(NO_DATA);
        return;
    };
    let mut codes = 0u8;
    let mut stored = [0u64; 4];
    let mut n = 0;
    for (k, &v) in e.fn_times.iter().enumerate() {
        let code = if v == si[k] {
            0
        } else if k == 0 && v == si[2] {
            3
        } else if k > 0 && v == e.fn_times[k - 1] {
            2
        } else if k > 0 && v == si[0] {
            3
        } else {
            stored[n] = v;
            n += 1;
            1
        };
        codes |= code << (2 * k);
    }
    let fn_small = if e.fn_id < 15 { e.fn_id as u8 } else { 15 };
    let main_small = match e.main_id {
        None => 0,
        Some(id) if id < 6 => id as u8 + 1,
        Some(_) => 7,
    };
    let root = u8::from(e.index_root_size.is_some());
    out.extend_from_slice(&[codes, fn_small | main_small << 4 | root << 7]);
    let mut reference = si[2];
    for &v in &stored[..n] {
        let d = v.wrapping_sub(reference) as i64;
        put_varint(((d << 1) ^ (d >> 63)) as u64, out);
        reference = v;
    }
    if fn_small == 15 {
        put_varint(u64::from(e.fn_id), out);
    }
    if let (7, Some(id)) = (main_small, e.main_id) {
        put_varint(u64::from(id), out);
    }
    if let Some(s) = e.index_root_size {
        put_varint(u64::from(s), out);
    }
}

fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint at `data[*at..]`, advancing `at`; `None` past the end or longer than a `u64` takes.
fn get_varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7F) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Decodes the record at `data[at..]` of an entry with SI times `si`: the entry's timeline (`None`: nothing
/// known) and where the next record starts. `None` when the bytes are no record.
fn decode(data: &[u8], at: usize, si: [u64; 4]) -> Option<(Option<EntryTimeline>, usize)> {
    let codes = *data.get(at)?;
    if codes & 0b11 == 2 {
        return Some((None, at + 1));
    }
    let shape = *data.get(at + 1)?;
    let mut at = at + 2;
    let mut e = EntryTimeline::default();
    let mut reference = si[2];
    for k in 0..4 {
        e.fn_times[k] = match (codes >> (2 * k)) & 0b11 {
            0 => si[k],
            1 => {
                let z = get_varint(data, &mut at)?;
                let d = (z >> 1) as i64 ^ -((z & 1) as i64);
                reference = reference.wrapping_add(d as u64);
                reference
            }
            // Code 2 of the created time is the record without data, handled above.
            2 => e.fn_times[k.saturating_sub(1)],
            _ if k == 0 => si[2],
            _ => si[0],
        };
    }
    let small = |v: u64| u16::try_from(v).ok();
    e.fn_id = match shape & 0x0F {
        15 => small(get_varint(data, &mut at)?)?,
        id => u16::from(id),
    };
    e.main_id = match (shape >> 4) & 0x07 {
        0 => None,
        7 => Some(small(get_varint(data, &mut at)?)?),
        id => Some(u16::from(id) - 1),
    };
    if shape & 0x80 != 0 {
        e.index_root_size = Some(u32::try_from(get_varint(data, &mut at)?).ok()?);
    }
    Some((Some(e), at))
}

/// Where the record after the one at `data[at..]` starts.
fn skip(data: &[u8], at: usize) -> Option<usize> {
    decode(data, at, [0; 4]).map(|(_, next)| next)
}

impl Timeline {
    /// The timeline of `entries` entries whose records are `data`, in entry order.
    pub(crate) fn from_records(data: Vec<u8>, entries: usize) -> Timeline {
        let mut blocks = Vec::with_capacity(entries.div_ceil(BLOCK) + 1);
        let mut at = 0;
        for i in 0..entries {
            if i % BLOCK == 0 {
                blocks.push(at as u64);
            }
            // The builder wrote every record: each decodes. (Were one not to, the rest would read as damaged.)
            at = skip(&data, at).unwrap_or(data.len());
        }
        blocks.push(data.len() as u64);
        Timeline {
            data: data.into(),
            blocks: blocks.into(),
        }
    }

    /// Bytes the records and the block offsets take.
    pub fn bytes(&self) -> usize {
        self.data.len() + self.blocks.len() * 8
    }

    /// Where entry `id`'s record starts (`None` on damaged bytes).
    fn start(&self, id: usize) -> Option<usize> {
        let mut at = usize::try_from(*self.blocks.get(id / BLOCK)?).ok()?;
        for _ in 0..id % BLOCK {
            at = skip(&self.data, at)?;
        }
        Some(at)
    }

    /// The timeline of entry `id`, whose SI times are `si`.
    pub(crate) fn get(&self, id: usize, si: [u64; 4]) -> Option<EntryTimeline> {
        decode(&self.data, self.start(id)?, si)?.0
    }

    /// The bytes of the records of entries `ids` (each record checked to decode).
    pub(crate) fn records(&self, ids: Range<usize>) -> Option<&[u8]> {
        let start = self.start(ids.start)?;
        let mut end = start;
        for _ in ids {
            end = skip(&self.data, end)?;
        }
        self.data.get(start..end)
    }

    /// The O(1) check of a mapped file: a block offset for every [`BLOCK`] entries, and one for the end.
    pub(crate) fn check_shape(&self, entries: usize) -> Result<(), &'static str> {
        if self.blocks.len() != entries.div_ceil(BLOCK) + 1 {
            return Err("the timeline's block table does not fit the entries");
        }
        Ok(())
    }

    /// Checks that every block's records decode, one per entry, and end where the next block starts.
    pub(crate) fn validate(&self, entries: usize) -> Result<(), &'static str> {
        const BAD: &str = "the timeline's records are inconsistent";
        self.check_shape(entries)?;
        if self.blocks.first() != Some(&0) || self.blocks.last() != Some(&(self.data.len() as u64))
        {
            return Err(BAD);
        }
        for (b, w) in self.blocks.windows(2).enumerate() {
            let mut at = usize::try_from(w[0]).map_err(|_| BAD)?;
            for _ in 0..BLOCK.min(entries - b * BLOCK) {
                at = skip(&self.data, at).ok_or(BAD)?;
            }
            if at as u64 != w[1] {
                return Err(BAD);
            }
        }
        Ok(())
    }
}

/// The timelines of a run of entries, decoded one record after the other (for exports).
pub struct Timelines<'a> {
    idx: &'a crate::Index,
    next: Range<usize>,
    /// Where the next record starts; `None` once the bytes stopped decoding.
    at: Option<usize>,
}

impl<'a> Timelines<'a> {
    pub(crate) fn new(idx: &'a crate::Index, ids: Range<usize>) -> Timelines<'a> {
        let at = idx
            .timeline
            .as_ref()
            .and_then(|t| t.start(ids.start.min(idx.len())));
        Timelines { idx, next: ids, at }
    }
}

impl Iterator for Timelines<'_> {
    type Item = Option<EntryTimeline>;

    fn next(&mut self) -> Option<Option<EntryTimeline>> {
        let id = self.next.next()?;
        let (Some(t), Some(at)) = (self.idx.timeline.as_ref(), self.at) else {
            return Some(None);
        };
        if id >= self.idx.len() {
            return Some(None);
        }
        match decode(&t.data, at, self.idx.si_times(id)) {
            Some((e, next)) => {
                self.at = Some(next);
                Some(e)
            }
            None => {
                self.at = None;
                Some(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(e: Option<EntryTimeline>, si: [u64; 4]) -> usize {
        let mut v = vec![0xAA];
        encode(e.as_ref(), si, &mut v);
        let (back, end) = decode(&v, 1, si).expect("decodes");
        assert_eq!(back, e);
        assert_eq!(end, v.len());
        v.len() - 1
    }

    #[test]
    fn records_round_trip_and_repeats_cost_nothing() {
        let si = [100, 200, 300, 400];
        let e = |fn_times, fn_id, main_id, index_root_size| {
            Some(EntryTimeline {
                fn_times,
                fn_id,
                main_id,
                index_root_size,
            })
        };
        // Times equal to the SI ones, the time before, the SI created time: two bytes with small ids.
        assert_eq!(round_trip(e(si, 3, Some(2), None), si), 2);
        assert_eq!(round_trip(e([100, 100, 100, 100], 2, Some(1), None), si), 2);
        assert_eq!(round_trip(e([300, 100, 300, 100], 2, None, None), si), 2);
        // Stored times, near and far, before and after the SI MFT-changed time; large ids; a folder.
        round_trip(e([299, 5, u64::MAX, 0], 15, Some(6), Some(48)), si);
        round_trip(
            e([1 << 63, 0, 7, 7], u16::MAX, Some(u16::MAX), Some(u32::MAX)),
            si,
        );
        round_trip(e([0, 0, 0, 0], 0, Some(0), None), [u64::MAX; 4]);
        round_trip(None, si);
        assert_eq!(round_trip(e([299, 200, 300, 400], 1, Some(0), None), si), 3);
    }

    #[test]
    fn any_bytes_decode_or_fail_without_a_fault() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let bytes = x.to_le_bytes();
            let len = (x >> 60) as usize % 9;
            if let Some((_, end)) = decode(&bytes[..len], 0, [1, 2, 3, 4]) {
                assert!(end <= len);
            }
        }
        let t = Timeline {
            data: vec![0xFF; 100].into(),
            blocks: vec![0, 7, u64::MAX].into(),
        };
        for id in 0..200 {
            let _ = t.get(id, [0; 4]);
        }
        assert!(t.validate(100).is_err());
    }
}
