//! Expert Witness Format (EWF) images read as the disk they hold: EWF1, the `.E01` EnCase 1–6, FTK Imager and
//! `ewfacquire` write (and SMART's `.s01`), and EWF2, the `.Ex01` of EnCase 7 and later (its sections are read by
//! `ewf2.rs`; the rest is shared). Recognised by the first segment's signature, never the name; the other
//! segment files are found by the name sequence the format uses (`.E01` … `.E99`, `.EAA` … `.EZZ`, `.FAA` …;
//! `.Ex01` … `.Ex99`, `.ExAA` …; or the same in lower case), each checked for its signature and number (and, in
//! EWF2, for the set identifier the first segment has).
//!
//! The disk is stored in chunks (64 sectors by default), each zlib-compressed (EWF2: or bzip2) or stored with an
//! Adler-32 checksum after it (EWF2 also has pattern-filled chunks: 8 bytes repeated, nothing stored); tables (in EWF1 32-bit
//! offsets from a base, the high bit saying compressed, a copy in `table2`; in EWF2 64-bit offsets, sizes and
//! flags) say where each chunk is. Every table is read at open, checked against its file's size; a chunk is
//! decoded when read, once per read that needs it, straight into the caller's buffer when the read covers it
//! whole. A chunk that does not inflate or whose checksum differs is an `InvalidData` error naming the chunk and
//! segment (the scanner counts its records unreadable and goes on); damaged structure (a missing or truncated
//! segment, a section descriptor whose checksum differs, a table pointing past its file) is an error at open,
//! naming the file.
//!
//! Format: libyal's "Expert Witness Compression Format (EWF)" document, and the bytes `ewfacquire` writes. Every
//! number is little-endian.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::{Decompress, FlushDecompress, Status};

use super::bytes::{le16, le32, le64};
use super::{bad, within, Image};

/// EWF1's segment signature (E01, s01).
const EWF1: &[u8; 8] = b"EVF\x09\x0d\x0a\xff\x00";
/// EWF2's segment signature (Ex01).
pub(super) const EWF2: &[u8; 8] = b"EVF2\x0d\x0a\x81\x00";
/// EWF1's section descriptor.
const DESCRIPTOR: u64 = 76;
/// The largest chunk read: 32768 sectors of 4096 bytes.
const MAX_CHUNK: u64 = 128 << 20;
/// The most header text decompressed (EnCase limits its values to a few thousand characters).
pub(super) const MAX_TEXT: u64 = 4 << 20;
/// The most segment files followed (the name sequence ends well before).
const MAX_SEGMENTS: u32 = 65_535;

/// A chunk's flags (EWF2's values): zlib-compressed; stored, an Adler-32 after it; pattern-filled (with
/// `COMPRESSED`: its `offset` holds the 8 bytes repeated).
pub(super) const COMPRESSED: u16 = 1;
pub(super) const CHECKSUMED: u16 = 2;
pub(super) const PATTERN: u16 = 4;

/// Whether `head` (a file's first bytes) starts an EWF segment.
pub fn is_ewf(head: &[u8]) -> bool {
    head.starts_with(EWF1) || head.starts_with(EWF2)
}

/// Where one chunk is: in segment `seg` at `offset`, `size` bytes stored, compressed or not (`flags`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Chunk {
    pub(super) offset: u64,
    pub(super) size: u32,
    pub(super) seg: u16,
    pub(super) flags: u16,
}

/// An open EWF image: its segments and where each chunk is.
#[derive(Debug)]
pub struct Ewf {
    /// Told apart in the per-thread cache of the last chunk decoded.
    id: u64,
    segments: Vec<(File, PathBuf)>,
    chunks: Vec<Chunk>,
    chunk_size: u64,
    len: u64,
    /// Which writer's layout, for `describe`: "EnCase 6", "SMART", "EnCase 7" (EWF2) …
    flavour: &'static str,
    facts: Vec<(String, String)>,
    /// EWF2 only: compressed chunks are bzip2, not zlib (the file header's compression method).
    bzip2: bool,
}

/// What the sections of the segments said, gathered as they are read.
#[derive(Default)]
pub(super) struct Found {
    /// Sectors per chunk, bytes per sector, sectors, chunks (from the volume section).
    pub(super) sectors_per_chunk: Option<u64>,
    pub(super) bytes_per_sector: Option<u64>,
    pub(super) sectors: Option<u64>,
    pub(super) chunk_count: Option<u64>,
    /// The volume section's size (94 bytes for SMART, 1052 for EnCase).
    pub(super) volume_len: u64,
    /// header2's values (EnCase 4+), header's (all).
    pub(super) header2: Option<Vec<(String, String)>>,
    pub(super) header2_categories: u32,
    pub(super) header: Option<Vec<(String, String)>>,
    pub(super) md5: Option<[u8; 16]>,
    pub(super) sha1: Option<[u8; 20]>,
    pub(super) read_errors: Option<u64>,
    pub(super) chunks: Vec<Chunk>,
    /// EWF2: its case data's values are header2's under EWF1's identifiers; its chunks may be bzip2-compressed.
    pub(super) ewf2: bool,
    pub(super) bzip2: bool,
}

/// A segment being read: its number (from 0), file, name, length.
pub(super) struct Seg<'a> {
    pub(super) index: u16,
    pub(super) file: &'a File,
    pub(super) path: &'a Path,
    pub(super) len: u64,
}

impl Seg<'_> {
    pub(super) fn read(&self, at: u64, n: u64, what: &str) -> io::Result<Vec<u8>> {
        if !within(at, n, self.len) {
            return Err(bad(format!(
                "{} is truncated: its {what} at {at} ({n} bytes) runs past its end ({} bytes)",
                self.path.display(),
                self.len
            )));
        }
        let mut b = vec![0u8; n as usize];
        crate::read::read_file_at(self.file, &mut b, at)?;
        Ok(b)
    }

    pub(super) fn damaged(&self, what: impl std::fmt::Display) -> io::Error {
        bad(format!("{}: {what}", self.path.display()))
    }
}

impl Ewf {
    /// The EWF image (EWF1 or EWF2) whose first segment is `path` (open as `file`, `file_len` bytes), or `None`
    /// when it is not one.
    pub fn open(path: &Path, file: &File, file_len: u64) -> io::Result<Option<Ewf>> {
        let mut head = [0u8; 32];
        if file_len < 13 {
            return Ok(None);
        }
        let n = file_len.min(32) as usize;
        crate::read::read_file_at(file, &mut head[..n], 0)?;
        let v2 = head.starts_with(EWF2);
        if !v2 && !head.starts_with(EWF1) {
            return Ok(None);
        }
        if v2 && file_len < 32 {
            return Err(bad(format!(
                "{} is truncated: {file_len} bytes, too few for an EWF2 file header",
                path.display()
            )));
        }
        // EWF1: a 16-bit number at 9; EWF2: a 32-bit one at 12, then the set's identifier.
        let number_of = |h: &[u8]| {
            if v2 {
                le32(h, 12)
            } else {
                u32::from(le16(h, 9))
            }
        };
        let number = number_of(&head);
        if number != 1 {
            return Err(bad(format!(
                "{} is segment {number} of an EWF image, not its first: open the first segment ({})",
                path.display(),
                if v2 { ".Ex01" } else { ".E01" }
            )));
        }
        let set_id: [u8; 16] = head[16..32].try_into().unwrap_or_default();
        let mut found = Found {
            ewf2: v2,
            ..Found::default()
        };
        if v2 {
            found.bzip2 = super::ewf2::compression(&head, path)?;
        }
        let mut segments: Vec<(File, PathBuf)> = vec![(file.try_clone()?, path.to_path_buf())];
        let mut len = file_len;
        loop {
            let index = segments.len() - 1;
            let (f, p) = &segments[index];
            let seg = Seg {
                index: index as u16,
                file: f,
                path: p,
                len,
            };
            let last = if v2 {
                super::ewf2::read_segment(&seg, &mut found)?
            } else {
                read_segment(&seg, &mut found)?
            };
            if last {
                break;
            }
            let number = segments.len() as u32 + 1;
            let next = (number <= MAX_SEGMENTS)
                .then(|| segment_path(path, number))
                .flatten()
                .ok_or_else(|| {
                    bad(format!(
                        "{} ends with a `next` section, but the EWF name sequence ({}) has no segment {number} \
                         to follow it",
                        p.display(),
                        path.display()
                    ))
                })?;
            let f = File::open(&next).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "the EWF image {} is missing its segment {number}, {} ({e})",
                        path.display(),
                        next.display()
                    ),
                )
            })?;
            len = crate::read::byte_len(&f)?;
            let mut h = [0u8; 32];
            let n = len.min(32) as usize;
            crate::read::read_file_at(&f, &mut h[..n], 0)?;
            let got = number_of(&h);
            let (sig, least) = if v2 { (EWF2, 32) } else { (EWF1, 13) };
            if len < least || !h.starts_with(sig) {
                return Err(bad(format!(
                    "{}, segment {number} of the EWF image {}, has no EWF signature",
                    next.display(),
                    path.display(),
                )));
            }
            if got != number {
                return Err(bad(format!(
                    "{} says it is segment {got} of its EWF image, where segment {number} of {} belongs",
                    next.display(),
                    path.display()
                )));
            }
            if v2 && h[16..32] != set_id {
                return Err(bad(format!(
                    "{}, segment {number} of the EWF image {}, belongs to another image (its set identifier \
                     differs)",
                    next.display(),
                    path.display()
                )));
            }
            segments.push((f, next));
        }
        Ewf::finish(path, segments, found).map(Some)
    }

    /// Checks what the segments said adds up to a disk, and keeps it.
    fn finish(path: &Path, segments: Vec<(File, PathBuf)>, mut found: Found) -> io::Result<Ewf> {
        let name = path.display();
        let (Some(spc), Some(bps), Some(sectors)) = (
            found.sectors_per_chunk,
            found.bytes_per_sector,
            found.sectors,
        ) else {
            return Err(bad(format!(
                "{name}: the EWF image says nothing of its media's size (no volume section)"
            )));
        };
        let chunk_size = spc.saturating_mul(bps);
        if bps == 0 || spc == 0 || chunk_size > MAX_CHUNK {
            return Err(bad(format!(
                "{name}: the EWF image's chunks of {spc} sectors of {bps} bytes are not a layout it can have"
            )));
        }
        let len = sectors.checked_mul(bps).ok_or_else(|| {
            bad(format!(
                "{name}: the EWF image's {sectors} sectors of {bps} bytes are more than a disk can hold"
            ))
        })?;
        let needed = len.div_ceil(chunk_size);
        let listed = found.chunks.len() as u64;
        if listed < needed {
            return Err(bad(format!(
                "{name}: the EWF image's tables list {listed} chunks, but its {len}-byte media needs {needed} of \
                 {} KiB",
                chunk_size / 1024
            )));
        }
        if let Some(c) = found.chunk_count.filter(|&c| c < needed) {
            return Err(bad(format!(
                "{name}: the EWF image says it holds {c} chunks, but its {len}-byte media needs {needed}"
            )));
        }
        found.chunks.truncate(needed as usize);
        let flavour = match &found.header2 {
            _ if found.ewf2 => "EnCase 7",
            Some(h) if h.iter().any(|(k, _)| k == "md") => "EnCase 6",
            Some(_) if found.header2_categories >= 3 => "EnCase 5",
            Some(_) => "EnCase 4",
            None if found.volume_len > 0 && found.volume_len < 1052 => "SMART",
            None => "EnCase 1-3",
        };
        let mut facts = Vec::new();
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        if let Some(m) = found.md5.filter(|m| m.iter().any(|&b| b != 0)) {
            facts.push(("md5".into(), hex(&m)));
        }
        if let Some(s) = found.sha1.filter(|s| s.iter().any(|&b| b != 0)) {
            facts.push(("sha1".into(), hex(&s)));
        }
        let values = found
            .header2
            .as_ref()
            .or(found.header.as_ref())
            .cloned()
            .unwrap_or_default();
        let get = |k: &str| {
            values
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        for (key, id) in [
            ("case", "c"),
            ("evidence", "n"),
            ("examiner", "e"),
            ("description", "a"),
            ("notes", "t"),
        ] {
            if let Some(v) = get(id) {
                facts.push((key.into(), v));
            }
        }
        if let Some(m) = get("m") {
            facts.push(("acquired".into(), acquired(&m)));
        }
        match (get("av"), get("ov")) {
            (Some(a), Some(o)) => facts.push(("software".into(), format!("{a} on {o}"))),
            (Some(a), None) => facts.push(("software".into(), a)),
            (None, Some(o)) => facts.push(("software".into(), format!("on {o}"))),
            (None, None) => {}
        }
        facts.push(("segments".into(), segments.len().to_string()));
        if let Some(e) = found.read_errors.filter(|&e| e > 0) {
            facts.push((
                "read errors".into(),
                format!("{e} ranges of sectors unread at acquisition (zeros)"),
            ));
        }
        Ok(Ewf {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            segments,
            chunks: found.chunks,
            chunk_size,
            len,
            flavour,
            facts,
            bzip2: found.bzip2,
        })
    }

    /// Decodes chunk `i` into `out` (the chunk's length: `chunk_size`, the media's last chunk less).
    fn decode(&self, i: usize, out: &mut [u8]) -> io::Result<()> {
        let c = self.chunks[i];
        let path = &self.segments[usize::from(c.seg)].1;
        let file = &self.segments[usize::from(c.seg)].0;
        let corrupt = |why: String| {
            bad(format!(
                "chunk {i} of the EWF image (in {} at {}) is corrupt: {why}",
                path.display(),
                c.offset
            ))
        };
        let size = u64::from(c.size);
        if c.flags & (COMPRESSED | PATTERN) == COMPRESSED | PATTERN {
            // EWF2's pattern fill: the 8 bytes where the offset would be, repeated.
            let p = c.offset.to_le_bytes();
            for (i, b) in out.iter_mut().enumerate() {
                *b = p[i % 8];
            }
            return Ok(());
        }
        if c.flags & COMPRESSED != 0 {
            if size > 2 * self.chunk_size + 4096 {
                return Err(corrupt(format!(
                    "{size} bytes stored for a {}-byte chunk",
                    out.len()
                )));
            }
            return INPUT.with(|input| {
                let mut input = input.borrow_mut();
                input.resize(size as usize, 0);
                crate::read::read_file_at(file, &mut input, c.offset)?;
                if self.bzip2 {
                    return unbzip2(&input, out).map_err(corrupt);
                }
                let mut z = Decompress::new(true);
                match z.decompress(&input, out, FlushDecompress::Finish) {
                    Ok(Status::StreamEnd) if z.total_out() == out.len() as u64 => Ok(()),
                    Ok(Status::StreamEnd) => Err(corrupt(format!(
                        "it inflates to {} bytes, not {}",
                        z.total_out(),
                        out.len()
                    ))),
                    Ok(_) => Err(corrupt(format!(
                        "its zlib data ends early or inflates to more than {} bytes",
                        out.len()
                    ))),
                    Err(e) => Err(corrupt(format!("bad zlib data ({e})"))),
                }
            });
        }
        // Stored: the data, then its Adler-32 (always in EWF1; in EWF2 when its flags say so).
        let summed = c.flags & CHECKSUMED != 0;
        let need = out.len() as u64 + if summed { 4 } else { 0 };
        if size < need {
            return Err(corrupt(format!(
                "{size} bytes stored where {need} are needed"
            )));
        }
        crate::read::read_file_at(file, out, c.offset)?;
        if !summed {
            return Ok(());
        }
        let mut sum = [0u8; 4];
        crate::read::read_file_at(file, &mut sum, c.offset + out.len() as u64)?;
        let (want, got) = (u32::from_le_bytes(sum), adler32(out));
        if want != got {
            return Err(corrupt(format!(
                "its Adler-32 is {got:08x}, where {want:08x} is stored"
            )));
        }
        Ok(())
    }
}

/// Decompresses a bzip2 chunk `input` into `out`, which it must fill exactly: bzip2 writes no more than `out`
/// holds, so a chunk claiming more is corrupt, not an allocation. The error says why, for `corrupt`.
fn unbzip2(input: &[u8], out: &mut [u8]) -> Result<(), String> {
    let mut z = bzip2::Decompress::new(false);
    match z.decompress(input, out) {
        Ok(bzip2::Status::StreamEnd) if z.total_out() == out.len() as u64 => Ok(()),
        Ok(bzip2::Status::StreamEnd) => Err(format!(
            "its bzip2 data decompresses to {} bytes, not {}",
            z.total_out(),
            out.len()
        )),
        Ok(_) => Err(format!(
            "its bzip2 data ends early or decompresses to more than {} bytes",
            out.len()
        )),
        Err(e) => Err(format!("bad bzip2 data ({e})")),
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// A compressed chunk as stored, read before it is inflated (or bzip2-decompressed).
    static INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The last chunk this thread decoded for a read that wanted part of it: (image id, chunk, bytes).
    static LAST: RefCell<(u64, usize, Vec<u8>)> = const { RefCell::new((u64::MAX, 0, Vec::new())) };
}

impl Image for Ewf {
    fn len(&self) -> u64 {
        self.len
    }

    fn describe(&self) -> String {
        let compressed = self
            .chunks
            .iter()
            .filter(|c| c.flags & (COMPRESSED | PATTERN) == COMPRESSED)
            .count();
        let filled = self
            .chunks
            .iter()
            .filter(|c| c.flags & (COMPRESSED | PATTERN) == COMPRESSED | PATTERN)
            .count();
        // Pattern-filled chunks (EWF2) are neither: told apart after.
        let stored = self.chunks.len() - filled;
        let mut how = if compressed == stored && stored > 0 {
            "compressed".to_string()
        } else if compressed == 0 {
            "uncompressed".to_string()
        } else {
            format!("compressed ({compressed} of {stored} chunks)")
        };
        if filled > 0 {
            how += &format!(", {filled} of {} chunks pattern-filled", self.chunks.len());
        }
        let size = if self.chunk_size.is_multiple_of(1024) {
            format!("{} KiB", self.chunk_size / 1024)
        } else {
            format!("{} bytes", self.chunk_size)
        };
        let n = self.segments.len();
        format!(
            "EWF ({}, {} format): {n} segment{}, {size} chunks, {how}",
            match self.flavour {
                "SMART" => "s01",
                "EnCase 7" => "Ex01",
                _ => "E01",
            },
            self.flavour,
            if n == 1 { "" } else { "s" },
        )
    }

    fn files(&self) -> Vec<PathBuf> {
        self.segments.iter().map(|(_, p)| p.clone()).collect()
    }

    fn facts(&self) -> Vec<(String, String)> {
        self.facts.clone()
    }

    /// Chunk by chunk: one read whole into `buf`, in part through a buffer of this thread's. No lock.
    fn read_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        while !buf.is_empty() {
            let i = (offset / self.chunk_size) as usize;
            let start = i as u64 * self.chunk_size;
            let chunk_len = self.chunk_size.min(self.len - start) as usize;
            let within = (offset - start) as usize;
            let n = (chunk_len - within).min(buf.len());
            let (now, rest) = buf.split_at_mut(n);
            if n == chunk_len {
                self.decode(i, now)?;
            } else {
                LAST.with(|last| -> io::Result<()> {
                    let mut last = last.borrow_mut();
                    if last.0 != self.id || last.1 != i {
                        last.0 = u64::MAX;
                        last.2.resize(chunk_len, 0);
                        self.decode(i, &mut last.2)?;
                        last.0 = self.id;
                        last.1 = i;
                    }
                    now.copy_from_slice(&last.2[within..within + n]);
                    Ok(())
                })?;
            }
            buf = rest;
            offset += n as u64;
        }
        Ok(())
    }
}

/// Reads the sections of EWF1 segment `seg` into `found`; whether it is the last (ends with `done`).
fn read_segment(seg: &Seg, found: &mut Found) -> io::Result<bool> {
    let mut off = 13u64;
    // Every section's start so far: a table's last chunk ends at the next one.
    let mut starts: Vec<u64> = Vec::new();
    // A table whose checksums failed, waiting for its copy (table2) that follows.
    let mut failed: Option<io::Error> = None;
    loop {
        let d = seg.read(off, DESCRIPTOR, "section descriptor")?;
        if adler32(&d[..72]) != le32(&d, 72) {
            return Err(seg.damaged(format!(
                "the EWF section descriptor at {off} is damaged (its checksum differs)"
            )));
        }
        let kind: String = d[..16]
            .iter()
            .take_while(|&&b| b != 0)
            .map(|&b| b as char)
            .collect();
        let next = le64(&d, 16);
        starts.push(off);
        if kind == "next" || kind == "done" {
            if let Some(e) = failed {
                return Err(e);
            }
            return Ok(kind == "done");
        }
        if next > seg.len {
            return Err(bad(format!(
                "{} is truncated: its {kind} section at {off} runs to {next}, past its end ({} bytes)",
                seg.path.display(),
                seg.len
            )));
        }
        if next < off + DESCRIPTOR {
            return Err(seg.damaged(format!(
                "the EWF {kind} section at {off} says the next one is at {next}, not after it"
            )));
        }
        let data = off + DESCRIPTOR;
        let size = next - data;
        match kind.as_str() {
            "header2" | "header" if seg.index == 0 => {
                let is2 = kind == "header2";
                if (is2 && found.header2.is_none()) || (!is2 && found.header.is_none()) {
                    let raw = seg.read(data, size.min(MAX_TEXT), "header section")?;
                    // Header text that does not inflate is left out: it only feeds `uffs info`.
                    if let Some(text) = inflate_text(&raw) {
                        let (values, categories) = header_values(&text);
                        if is2 {
                            found.header2 = Some(values);
                            found.header2_categories = categories;
                        } else {
                            found.header = Some(values);
                        }
                    }
                }
            }
            "volume" | "disk" if found.sectors.is_none() => {
                if size < 24 {
                    return Err(seg.damaged(format!(
                        "the EWF volume section at {off} holds {size} bytes, too few for a volume section"
                    )));
                }
                let v = seg.read(data, size.min(1052), "volume section")?;
                found.volume_len = size;
                found.chunk_count = Some(u64::from(le32(&v, 4)));
                found.sectors_per_chunk = Some(u64::from(le32(&v, 8)));
                found.bytes_per_sector = Some(u64::from(le32(&v, 12)));
                // SMART's volume section (94 bytes) holds a 32-bit count of sectors.
                found.sectors = Some(if size >= 1052 {
                    le64(&v, 16)
                } else {
                    u64::from(le32(&v, 16))
                });
            }
            "table" | "table2" => {
                if kind == "table2" && failed.is_none() {
                    // A copy of the table just read.
                } else {
                    // A table whose checksums differ is read from its copy in table2; one that is whole and
                    // wrong is an error.
                    match read_table_v1(seg, off, data, size, (&starts, next), found.chunks.len())?
                    {
                        Ok(chunks) => {
                            found.chunks.extend(chunks);
                            failed = None;
                        }
                        Err(e) if kind == "table" => failed = Some(e),
                        Err(e) => return Err(e),
                    }
                }
            }
            "hash" if size >= 16 => {
                let h = seg.read(data, 16, "hash section")?;
                found.md5 = h.try_into().ok();
            }
            "digest" if size >= 36 => {
                let h = seg.read(data, 36, "digest section")?;
                found.md5 = h[..16].try_into().ok();
                found.sha1 = h[16..36].try_into().ok();
            }
            "error2" if size >= 4 => {
                let h = seg.read(data, 4, "error2 section")?;
                found.read_errors = Some(u64::from(le32(&h, 0)));
            }
            _ => {}
        }
        if kind != "table" {
            if let Some(e) = failed.take() {
                return Err(e);
            }
        }
        off = next;
    }
}

/// The chunks EWF1 table section `off` lists (its data `size` bytes at `data`); `points` holds the starts of the
/// segment's sections so far, in order, and the end of this one: a table's last chunk ends at the first after it;
/// `first` is the number of its first chunk in the image. The inner error: its checksums differ (its copy may be whole).
fn read_table_v1(
    seg: &Seg,
    off: u64,
    data: u64,
    size: u64,
    points: (&[u64], u64),
    first: usize,
) -> io::Result<io::Result<Vec<Chunk>>> {
    let at = |what: String| seg.damaged(format!("the EWF table section at {off}: {what}"));
    if size < 24 {
        return Err(at(format!("{size} bytes, too few for its header")));
    }
    let h = seg.read(data, 24, "table header")?;
    let n = u64::from(le32(&h, 0));
    let base = le64(&h, 8);
    if adler32(&h[..20]) != le32(&h, 20) {
        return Ok(Err(at("its header's checksum differs".into())));
    }
    // Checked against the section's size before anything is allocated from it.
    if 24 + n * 4 > size {
        return Err(at(format!(
            "it says it holds {n} entries, but has room for {}",
            (size - 24) / 4
        )));
    }
    let raw = seg.read(data + 24, n * 4, "table")?;
    // EnCase 3+ follow the entries with their checksum.
    if 24 + n * 4 + 4 <= size {
        let s = seg.read(data + 24 + n * 4, 4, "table")?;
        if adler32(&raw) != le32(&s, 0) && n > 0 {
            return Ok(Err(at("its entries' checksum differs".into())));
        }
    }
    let starts: Vec<(u64, bool)> = raw
        .chunks_exact(4)
        .map(|e| {
            let v = le32(e, 0);
            (base + u64::from(v & 0x7fff_ffff), v & 0x8000_0000 != 0)
        })
        .collect();
    let mut chunks = Vec::with_capacity(starts.len());
    for (j, &(start, compressed)) in starts.iter().enumerate() {
        let end = match starts.get(j + 1) {
            Some(&(e, _)) => e,
            // The last chunk runs to the next section.
            None => {
                // The sections' starts increase (each section's next is after it).
                let (starts, end) = points;
                let i = starts.partition_point(|&p| p <= start);
                starts.get(i).copied().unwrap_or(end.max(start))
            }
        };
        if start < 13 || end < start || end > seg.len || end - start > u64::from(u32::MAX) {
            return Err(at(format!(
                "chunk {} at {start} (to {end}) is not within the file ({} bytes)",
                first + j,
                seg.len
            )));
        }
        chunks.push(Chunk {
            offset: start,
            size: (end - start) as u32,
            seg: seg.index,
            flags: if compressed { COMPRESSED } else { CHECKSUMED },
        });
    }
    Ok(Ok(chunks))
}

/// The path of segment `number` (from 1) of the set whose first segment is `first`: `.E01` … `.E99`, `.EAA` …
/// `.EZZ`, `.FAA` … `.ZZZ` (the same in lower case, and from `.s01` or `.L01`); `.Ex01` … `.Ex99`, `.ExAA` …
/// `.ExZZ`, `.EyAA` … `.EzZZ`. `None` past the end of the sequence or when `first`'s name ends in none of them.
pub fn segment_path(first: &Path, number: u32) -> Option<PathBuf> {
    let name = first.file_name()?.to_str()?;
    let (stem, ext) = name.rsplit_once('.')?;
    let e: Vec<char> = ext.chars().collect();
    let upper = e.first()?.is_ascii_uppercase();
    let letter = |i: u32| {
        let c = char::from(b'A' + (i % 26) as u8);
        if upper {
            c
        } else {
            c.to_ascii_lowercase()
        }
    };
    let ext = match e.as_slice() {
        [l, '0', '1'] if l.is_ascii_alphabetic() => {
            if number <= 99 {
                format!("{l}{number:02}")
            } else {
                let i = number - 100;
                let lead = u32::from(*l) + i / 676;
                let limit = if upper { 'Z' } else { 'z' };
                let lead = char::from_u32(lead).filter(|&c| c <= limit)?;
                format!("{lead}{}{}", letter(i / 26), letter(i))
            }
        }
        [l, x, '0', '1'] if l.is_ascii_alphabetic() && x.is_ascii_alphabetic() => {
            if number <= 99 {
                format!("{l}{x}{number:02}")
            } else {
                let i = number - 100;
                let limit = if x.is_ascii_uppercase() { 'Z' } else { 'z' };
                let x = char::from_u32(u32::from(*x) + i / 676).filter(|&c| c <= limit)?;
                format!("{l}{x}{}{}", letter(i / 26), letter(i))
            }
        }
        _ => return None,
    };
    (number >= 1).then(|| first.with_file_name(format!("{stem}.{ext}")))
}

/// The segment files of the EWF image `first` starts, by name and signature (without reading their tables): for a
/// source's stamp. `None` when `first` is no EWF image's first segment.
pub fn segments(first: &Path) -> Option<Vec<PathBuf>> {
    let mut head = [0u8; 13];
    let f = File::open(first).ok()?;
    crate::read::read_file_at(&f, &mut head, 0).ok()?;
    if !is_ewf(&head) {
        return None;
    }
    let mut all = vec![first.to_path_buf()];
    while let Some(p) = segment_path(first, all.len() as u32 + 1).filter(|p| p.is_file()) {
        all.push(p);
    }
    Some(all)
}

/// The text a header section's zlib data holds: UTF-16 (header2, after its byte order mark) or one byte a
/// character (header). `None` when it does not inflate. EWF2's device information and case data are compressed
/// with the file header's method, as libewf reads them: bzip2 data (its `BZh` signature) is decompressed as such.
pub(super) fn inflate_text(raw: &[u8]) -> Option<String> {
    let out = if raw.starts_with(b"BZh") {
        unbzip2_text(raw)?
    } else {
        inflate_bytes(raw)?
    };
    text_of(&out)
}

/// `raw`'s bzip2 data decompressed, at most `MAX_TEXT` bytes of it; `None` when it is not bzip2.
fn unbzip2_text(raw: &[u8]) -> Option<Vec<u8>> {
    let mut z = bzip2::Decompress::new(false);
    decompress_text(raw, |input, out| {
        let (i, o) = (z.total_in(), z.total_out());
        let end = z.decompress(input, out).ok()? == bzip2::Status::StreamEnd;
        Some((
            end,
            (z.total_in() - i) as usize,
            (z.total_out() - o) as usize,
        ))
    })
}

/// `raw`'s zlib data inflated, at most `MAX_TEXT` bytes of it; `None` when it does not inflate.
fn inflate_bytes(raw: &[u8]) -> Option<Vec<u8>> {
    let mut z = Decompress::new(true);
    decompress_text(raw, |input, out| {
        let (i, o) = (z.total_in(), z.total_out());
        let end = z.decompress(input, out, FlushDecompress::Finish).ok()? == Status::StreamEnd;
        Some((
            end,
            (z.total_in() - i) as usize,
            (z.total_out() - o) as usize,
        ))
    })
}

/// Runs a decompressor over `raw` into a buffer that grows (from eight times `raw`) up to `MAX_TEXT` bytes:
/// `step(input, out)` decompresses what it can and says whether the stream ended and how many bytes it took
/// and gave. Stops at the stream's end, at `MAX_TEXT`, or when a step makes no progress; `None` on bad data.
fn decompress_text(
    raw: &[u8],
    mut step: impl FnMut(&[u8], &mut [u8]) -> Option<(bool, usize, usize)>,
) -> Option<Vec<u8>> {
    let max = MAX_TEXT as usize;
    let mut out = vec![0u8; (raw.len() * 8).clamp(4096, max)];
    let (mut taken, mut given) = (0, 0);
    loop {
        let (end, took, gave) = step(&raw[taken..], &mut out[given..])?;
        (taken, given) = (taken + took, given + gave);
        if end {
            break;
        }
        if given == out.len() && out.len() < max {
            out.resize((out.len() * 2).min(max), 0);
        } else if gave == 0 {
            break;
        }
    }
    out.truncate(given);
    Some(out)
}

/// Decompressed header text: UTF-16 after a byte order mark, else one byte a character.
fn text_of(out: &[u8]) -> Option<String> {
    let utf16 = |b: &[u8], be: bool| {
        let units: Vec<u16> = b
            .chunks_exact(2)
            .map(|c| {
                if be {
                    u16::from_be_bytes([c[0], c[1]])
                } else {
                    u16::from_le_bytes([c[0], c[1]])
                }
            })
            .collect();
        String::from_utf16_lossy(&units)
    };
    Some(match out {
        [0xff, 0xfe, rest @ ..] => utf16(rest, false),
        [0xfe, 0xff, rest @ ..] => utf16(rest, true),
        // UTF-16 little-endian without a mark.
        [_, 0, ..] => utf16(out, false),
        b => b.iter().map(|&c| c as char).collect(),
    })
}

/// The `main` category's values of header text: (identifier, value) pairs, and the number of categories it says
/// it has (its first line).
pub(super) fn header_values(text: &str) -> (Vec<(String, String)>, u32) {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let categories = lines
        .first()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    let values = lines
        .iter()
        .position(|l| l.trim() == "main")
        .and_then(|i| Some((lines.get(i + 1)?, lines.get(i + 2)?)))
        .map(|(keys, values)| {
            keys.split('\t')
                .zip(values.split('\t'))
                .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default();
    (values, categories)
}

/// The acquisition date as stored, made readable: header2's is seconds since 1970 (UTC); header's
/// is `YYYY M D h m s` in the acquiring machine's time zone.
fn acquired(v: &str) -> String {
    if let Ok(secs) = v.parse::<u64>() {
        let (year, month, day) = civil_from_days((secs / 86_400) as i64);
        let sod = secs % 86_400;
        return format!(
            "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
            sod / 3600,
            sod / 60 % 60,
            sod % 60
        );
    }
    let n: Vec<u32> = v
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    match n.as_slice() {
        [y, mo, d, h, mi, s] => format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} (local time)"),
        _ => v.to_string(),
    }
}

/// The date (year, month, day) `days` days after 1970-01-01 in the proleptic Gregorian calendar (Howard
/// Hinnant's algorithm, as `uffs_index::time` has it; this crate stands below the index).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Adler-32 (RFC 1950) of `data`.
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 bytes is the most summed before `b` could overflow.
    for block in data.chunks(5552) {
        for &x in block {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `data` bzip2-compressed (level 9).
    fn bz(data: &[u8]) -> Vec<u8> {
        let mut z = bzip2::Compress::new(bzip2::Compression::best(), 0);
        let mut out = vec![0u8; data.len() + 1024];
        let status = z.compress(data, &mut out, bzip2::Action::Finish).unwrap();
        assert_eq!(status, bzip2::Status::StreamEnd);
        out.truncate(z.total_out() as usize);
        out
    }

    #[test]
    fn a_bzip2_chunk_must_fill_its_chunk_exactly() {
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let z = bz(&data);
        let mut out = vec![0u8; 4096];
        unbzip2(&z, &mut out).unwrap();
        assert_eq!(out, data);
        // More than the chunk holds: not written past it, corrupt.
        let mut small = vec![0u8; 4000];
        let e = unbzip2(&z, &mut small).unwrap_err();
        assert!(e.contains("more than 4000 bytes"), "{e}");
        // Less: corrupt.
        let mut big = vec![0u8; 8192];
        let e = unbzip2(&z, &mut big).unwrap_err();
        assert!(e.contains("decompresses to 4096 bytes, not 8192"), "{e}");
        // Damaged, cut short, or not bzip2 at all.
        let mut bad = z.clone();
        for b in &mut bad[10..30] {
            *b ^= 0x5a;
        }
        assert!(unbzip2(&bad, &mut out).is_err());
        assert!(unbzip2(&z[..z.len() / 2], &mut out).is_err());
        assert!(unbzip2(b"not bzip2 data", &mut out).is_err());
    }

    #[test]
    fn ewf2_text_may_be_bzip2() {
        let text = "\u{feff}1\nmain\nts\tbp\n128\t512\n\n";
        let utf16: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let got = inflate_text(&bz(&utf16)).unwrap();
        assert_eq!(
            header_values(&got).0[0],
            ("ts".to_string(), "128".to_string())
        );
        assert!(inflate_text(b"BZh9 then nothing").is_none());
    }

    #[test]
    fn segment_names_follow_the_sequence() {
        let name = |first: &str, n: u32| {
            segment_path(Path::new(first), n)
                .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        };
        assert_eq!(name("disk.E01", 1).unwrap(), "disk.E01");
        assert_eq!(name("disk.E01", 2).unwrap(), "disk.E02");
        assert_eq!(name("disk.E01", 99).unwrap(), "disk.E99");
        assert_eq!(name("disk.E01", 100).unwrap(), "disk.EAA");
        assert_eq!(name("disk.E01", 101).unwrap(), "disk.EAB");
        assert_eq!(name("disk.E01", 126).unwrap(), "disk.EBA");
        assert_eq!(name("disk.E01", 775).unwrap(), "disk.EZZ");
        assert_eq!(name("disk.E01", 776).unwrap(), "disk.FAA");
        assert_eq!(name("disk.E01", 100 + 676 * 22 - 1).unwrap(), "disk.ZZZ");
        assert_eq!(name("disk.E01", 100 + 676 * 22), None);
        assert_eq!(name("a.b.e01", 100).unwrap(), "a.b.eaa");
        assert_eq!(name("x.s01", 3).unwrap(), "x.s03");
        assert_eq!(name("x.Ex01", 12).unwrap(), "x.Ex12");
        assert_eq!(name("x.Ex01", 100).unwrap(), "x.ExAA");
        assert_eq!(name("x.Ex01", 776).unwrap(), "x.EyAA");
        assert_eq!(name("x.Ex01", 100 + 676 * 3), None);
        assert_eq!(name("x.img", 2), None);
        assert_eq!(name("x", 2), None);
    }

    #[test]
    fn adler32_is_rfc1950s() {
        assert_eq!(adler32(b""), 1);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        let big = vec![0xffu8; 100_000];
        // Against the straightforward definition.
        let (mut a, mut b) = (1u64, 0u64);
        for &x in &big {
            a = (a + u64::from(x)) % 65_521;
            b = (b + a) % 65_521;
        }
        assert_eq!(adler32(&big), ((b << 16) | a) as u32);
    }

    #[test]
    fn header_text_is_read() {
        let (v, n) = header_values(
            "1\r\nmain\r\nc\tn\ta\te\tt\tav\tov\tm\tu\tp\r\nCASE\tEV\tdesc\tAl\tnotes\t2014\tLinux\t2026 11 26 3 2 0\t\t0\r\n\r\n",
        );
        assert_eq!(n, 1);
        assert_eq!(v[0], ("c".into(), "CASE".into()));
        assert_eq!(v[7], ("m".into(), "2026 11 26 3 2 0".into()));
        assert_eq!(
            acquired("2026 11 26 3 2 0"),
            "2026-11-26 03:02:00 (local time)"
        );
        assert_eq!(acquired("1795662120"), "2026-11-26 03:02:00 UTC");
    }
}
