//! The sections of an EWF2 segment file (`.Ex01`, EnCase 7 and later; `ewfacquire -f encase7-v2`), read into
//! what [`super::ewf`] keeps of an EWF image: the rest (finding the other segments, decoding chunks, `uffs info`'s
//! facts) is shared with EWF1 there.
//!
//! A segment is a 32-byte file header (signature, version 2.1, the compression method, the segment's number, the
//! set's identifier) and sections, each its data followed by a 64-byte descriptor (type, flags, the previous
//! descriptor's offset, the data's size with its padding, an Adler-32 of the descriptor), read back to front from
//! the last, which is `done` (the set's last segment) or `next`. What is read of them: the device information
//! (zlib-compressed UTF-16 text: sectors, bytes per sector), the case data (the same: sectors per chunk, chunks,
//! and the case's number, evidence number, examiner, notes, description, acquisition time and software), the
//! sector tables (a header with the first chunk's number, then 16-byte entries: the chunk's offset in its file,
//! its size, its flags: zlib- or bzip2-compressed, stored with an Adler-32, or pattern-filled, the offset then
//! being 8 bytes to repeat), the MD5 and SHA1 sections and the error table's count. Sector data is read only
//! where a table points; restart data, analytical data and the rest are passed over. Encrypted sections are
//! refused. Compressed chunks are zlib or bzip2 as the file header says (method 1 or 2), decoded in
//! [`super::ewf`] under the same rules (decoded once per read, bounded by the chunk size, corrupt = unreadable).
//!
//! Every descriptor's checksum is checked, each must lie before the one after it (so the walk back ends), a
//! section's size must fit before its descriptor, and a table's entries must fit in its section and point within
//! its file before anything is allocated from them; damaged structure is an error naming the file and offset.
//!
//! Format: libyal's "Expert Witness Compression Format 2 (EWF2)" document, and the bytes libewf's `ewfacquire`
//! (20260924) writes. Every number is little-endian.

use std::io;
use std::path::Path;

use super::bad;
use super::bytes::{le16, le32, le64};
use super::ewf::{
    adler32, header_values, inflate_text, Chunk, Found, Seg, COMPRESSED, MAX_TEXT, PATTERN,
};
use super::within;

/// The file header's size.
const HEADER: u64 = 32;
/// A section descriptor's size.
const DESCRIPTOR: u64 = 64;

// Section types.
const DEVICE_INFORMATION: u32 = 0x1;
const CASE_DATA: u32 = 0x2;
const SECTOR_TABLE: u32 = 0x4;
const ERROR_TABLE: u32 = 0x5;
const MD5_HASH: u32 = 0x8;
const SHA1_HASH: u32 = 0x9;
const NEXT: u32 = 0xd;
const DONE: u32 = 0xf;

/// A section descriptor's data flag: the data is encrypted.
const ENCRYPTED: u32 = 0x2;

/// Whether the file header `head` says the chunks are bzip2-compressed (else zlib, or none); another method is an
/// error.
pub(super) fn compression(head: &[u8], path: &Path) -> io::Result<bool> {
    match le16(head, 10) {
        0 | 1 => Ok(false),
        2 => Ok(true),
        m => Err(bad(format!(
            "{}: the EWF2 file header names compression method {m}, which is neither zlib (1) nor bzip2 (2)",
            path.display()
        ))),
    }
}

/// One section: its type, where its data starts, its size, where its descriptor is.
struct Section {
    kind: u32,
    data: u64,
    size: u64,
    at: u64,
}

/// Reads the sections of EWF2 segment `seg` into `found`; whether it is the set's last (ends with `done`).
pub(super) fn read_segment(seg: &Seg, found: &mut Found) -> io::Result<bool> {
    let truncated = |why: String| {
        bad(format!(
            "{} is truncated or damaged: {why}",
            seg.path.display()
        ))
    };
    if seg.len < HEADER + DESCRIPTOR {
        return Err(truncated(format!(
            "{} bytes, too few for an EWF2 segment",
            seg.len
        )));
    }
    // Back to front from the last descriptor. Each is before the data of the one after it, so the walk ends
    // within len / 64 steps.
    let mut sections: Vec<Section> = Vec::new();
    let mut at = seg.len - DESCRIPTOR;
    loop {
        let d = seg.read(at, DESCRIPTOR, "section descriptor")?;
        if adler32(&d[..60]) != le32(&d, 60) {
            return Err(if sections.is_empty() {
                truncated("it does not end with an EWF2 section descriptor (done or next)".into())
            } else {
                seg.damaged(format!(
                    "the EWF2 section descriptor at {at} is damaged (its checksum differs)"
                ))
            });
        }
        let kind = le32(&d, 0);
        let flags = le32(&d, 4);
        let prev = le64(&d, 8);
        let size = le64(&d, 16);
        if sections.is_empty() && kind != NEXT && kind != DONE {
            return Err(truncated(format!(
                "its last section (at {at}) is of type {kind:#x}, not done or next"
            )));
        }
        if flags & ENCRYPTED != 0 {
            return Err(seg.damaged(format!(
                "the EWF2 section at {at} is encrypted, which uffs does not read: decrypt the image first \
                 (EnCase)"
            )));
        }
        if size > at - HEADER {
            return Err(seg.damaged(format!(
                "the EWF2 section at {at} says it holds {size} bytes, more than lie before it"
            )));
        }
        let data = at - size;
        sections.push(Section {
            kind,
            data,
            size,
            at,
        });
        if prev == 0 {
            break;
        }
        if prev < HEADER || prev + DESCRIPTOR > data {
            return Err(seg.damaged(format!(
                "the EWF2 section descriptor at {at} says the one before it is at {prev}, not before its data \
                 (at {data})"
            )));
        }
        at = prev;
    }
    let last = sections[0].kind == DONE;
    for s in sections.iter().rev() {
        match s.kind {
            DEVICE_INFORMATION if seg.index == 0 && found.sectors.is_none() => {
                let values = text(seg, s, "device information")?;
                let get = |k: &str| number(&values, k);
                found.sectors = get("ts");
                found.bytes_per_sector = get("bp");
            }
            CASE_DATA if seg.index == 0 && found.header2.is_none() => {
                let values = text(seg, s, "case data")?;
                found.sectors_per_chunk = number(&values, "sb");
                found.chunk_count = number(&values, "tb");
                // Under EWF1's header2 identifiers, for the facts `uffs info` shows.
                let renamed = values
                    .into_iter()
                    .filter_map(|(k, v)| {
                        let k = match k.as_str() {
                            "nm" => "a",
                            "cn" => "c",
                            "en" => "n",
                            "ex" => "e",
                            "nt" => "t",
                            "av" => "av",
                            "os" => "ov",
                            "tt" => "m",
                            _ => return None,
                        };
                        Some((k.to_string(), v))
                    })
                    .collect();
                found.header2 = Some(renamed);
            }
            SECTOR_TABLE => read_table(seg, s, found)?,
            ERROR_TABLE if s.size >= 20 => {
                let h = seg.read(s.data, 20, "error table")?;
                if adler32(&h[..16]) == le32(&h, 16) {
                    found.read_errors = Some(u64::from(le32(&h, 0)));
                }
            }
            // The hash, then its Adler-32; one whose checksum differs is left out (it only feeds `uffs info`).
            MD5_HASH if s.size >= 20 => {
                let h = seg.read(s.data, 20, "MD5 hash section")?;
                if adler32(&h[..16]) == le32(&h, 16) {
                    found.md5 = h[..16].try_into().ok();
                }
            }
            SHA1_HASH if s.size >= 24 => {
                let h = seg.read(s.data, 24, "SHA1 hash section")?;
                if adler32(&h[..20]) == le32(&h, 20) {
                    found.sha1 = h[..20].try_into().ok();
                }
            }
            _ => {}
        }
    }
    Ok(last)
}

/// The `main` values of a device information or case data section (UTF-16 text, zlib- or bzip2-compressed).
fn text(seg: &Seg, s: &Section, what: &str) -> io::Result<Vec<(String, String)>> {
    let raw = seg.read(s.data, s.size.min(MAX_TEXT), what)?;
    let text = inflate_text(&raw).ok_or_else(|| {
        seg.damaged(format!(
            "the EWF2 {what} section at {} does not inflate",
            s.at
        ))
    })?;
    Ok(header_values(&text).0)
}

/// The number `key` holds among `values`, if it holds one.
fn number(values: &[(String, String)], key: &str) -> Option<u64> {
    values
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// The chunks sector table `s` lists, added to `found`'s: they must be the next ones of the image, within the
/// file.
fn read_table(seg: &Seg, s: &Section, found: &mut Found) -> io::Result<()> {
    let at = |what: String| seg.damaged(format!("the EWF2 sector table at {}: {what}", s.at));
    // A 20-byte header padded to 32, the entries, an Adler-32 of them.
    if s.size < 36 {
        return Err(at(format!("{} bytes, too few for its header", s.size)));
    }
    let h = seg.read(s.data, 20, "sector table header")?;
    if adler32(&h[..16]) != le32(&h, 16) {
        return Err(at("its header's checksum differs".into()));
    }
    let first = le64(&h, 0);
    let n = u64::from(le32(&h, 8));
    // Checked against the section's size before anything is allocated from it.
    if 32 + n * 16 + 4 > s.size {
        return Err(at(format!(
            "it says it holds {n} entries, but has room for {}",
            (s.size - 36) / 16
        )));
    }
    let next = found.chunks.len() as u64;
    if first != next {
        return Err(at(format!(
            "its first chunk is {first}, where chunk {next} comes next"
        )));
    }
    let raw = seg.read(s.data + 32, n * 16, "sector table")?;
    let sum = seg.read(s.data + 32 + n * 16, 4, "sector table")?;
    if n > 0 && adler32(&raw) != le32(&sum, 0) {
        return Err(at("its entries' checksum differs".into()));
    }
    found.chunks.reserve(n as usize);
    for (j, e) in raw.chunks_exact(16).enumerate() {
        let offset = le64(e, 0);
        let size = le32(e, 8);
        let mut flags = (le32(e, 12) & 0x7) as u16;
        if flags & COMPRESSED == 0 {
            // The pattern-fill flag means nothing without the compressed one.
            flags &= !PATTERN;
        }
        if flags & PATTERN == 0 && (offset < HEADER || !within(offset, u64::from(size), seg.len)) {
            return Err(at(format!(
                "chunk {} at {offset} ({size} bytes) is not within the file ({} bytes)",
                next + j as u64,
                seg.len
            )));
        }
        found.chunks.push(Chunk {
            offset,
            size,
            seg: seg.index,
            flags,
        });
    }
    Ok(())
}
