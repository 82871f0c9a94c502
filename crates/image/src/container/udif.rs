//! UDIF (`.dmg`, Apple's Universal Disk Image Format) read as the disk it holds. Recognised by the 512-byte
//! `koly` trailer at the file's end, never the name. The trailer points at an XML property list whose `blkx`
//! entries (one per partition range, base64 `mish` blocks) list the disk's sectors as chunks: zeros, stored,
//! or compressed with zlib, bzip2, ADC, LZFSE or LZMA (xz). Every number is big-endian. Format facts: libyal's libmodi documentation ("Mac OS disk image types"), checked against
//! `dmg2img` and images macOS made (dfvfs, keramics).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::bytes::{be32, be64};
use super::{bad, within, Image};

const TRAILER: u64 = 512;
/// The largest property list read.
const MAX_XML: u64 = 64 << 20;
/// The most bytes one chunk may decode to (macOS writes at most 1 MiB chunks).
const MAX_CHUNK: u64 = 64 << 20;

/// Chunk types.
const ZEROS: u32 = 0;
const STORED: u32 = 1;
const IGNORED: u32 = 2;
const ADC: u32 = 0x8000_0004;
const ZLIB: u32 = 0x8000_0005;
const BZIP2: u32 = 0x8000_0006;
const LZFSE: u32 = 0x8000_0007;
const LZMA: u32 = 0x8000_0008;
const COMMENT: u32 = 0x7FFF_FFFE;
const END: u32 = 0xFFFF_FFFF;

/// One run of the disk's sectors and where its bytes are in the file.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    kind: u32,
    /// The disk's sector it starts at, and how many it holds.
    sector: u64,
    sectors: u64,
    /// Its bytes in the file.
    at: u64,
    len: u64,
}

/// An open UDIF image.
#[derive(Debug)]
pub struct Udif {
    file: File,
    path: PathBuf,
    len: u64,
    /// Sorted by sector, apart.
    chunks: Vec<Chunk>,
    /// The last chunk decoded (its index and bytes): reads go through a chunk in order.
    last: Mutex<Option<(usize, Arc<Vec<u8>>)>>,
    methods: Vec<&'static str>,
}

impl Udif {
    /// The UDIF image in `file` (`file_len` bytes), or `None` when it is not one.
    pub fn open(path: &Path, file: &File, file_len: u64) -> io::Result<Option<Udif>> {
        if file_len < TRAILER {
            return Ok(None);
        }
        let mut k = [0u8; TRAILER as usize];
        crate::read::read_file_at(file, &mut k, file_len - TRAILER)?;
        if &k[..4] != b"koly" {
            return Ok(None);
        }
        let data_fork = be64(&k, 24);
        let (xml_at, xml_len) = (be64(&k, 216), be64(&k, 224));
        let sectors = be64(&k, 492);
        if xml_len == 0 {
            return Err(bad(
                "this UDIF image keeps its chunk tables in a resource fork, not a property list: uffs reads only the latter (convert it with `hdiutil convert -format UDZO`)",
            ));
        }
        if xml_len > MAX_XML || !within(xml_at, xml_len, file_len) {
            return Err(bad(format!(
                "this UDIF image's property list ({xml_len} bytes at {xml_at}) is past its end"
            )));
        }
        let mut xml = vec![0u8; xml_len as usize];
        crate::read::read_file_at(file, &mut xml, xml_at)?;
        let xml = String::from_utf8_lossy(&xml);
        let mut chunks = Vec::new();
        for mish in blkx_blocks(&xml)? {
            read_mish(&mish, data_fork, file_len, &mut chunks)?;
        }
        chunks.sort_by_key(|c| c.sector);
        for w in chunks.windows(2) {
            if w[0].sector + w[0].sectors > w[1].sector {
                return Err(bad(format!(
                    "this UDIF image's chunks overlap at sector {}",
                    w[1].sector
                )));
            }
        }
        let len = sectors
            .checked_mul(512)
            .ok_or_else(|| bad("this UDIF image's sector count overflows"))?;
        if chunks
            .last()
            .is_some_and(|c| c.sector + c.sectors > sectors)
        {
            return Err(bad("this UDIF image's chunks run past its sector count"));
        }
        let mut methods: Vec<&'static str> = chunks.iter().filter_map(|c| method(c.kind)).collect();
        methods.sort_unstable();
        methods.dedup();
        Ok(Some(Udif {
            file: file.try_clone()?,
            path: path.to_path_buf(),
            len,
            chunks,
            last: Mutex::new(None),
            methods,
        }))
    }

    /// Chunk `i`'s decoded bytes.
    fn decoded(&self, i: usize) -> io::Result<Arc<Vec<u8>>> {
        if let Some((j, bytes)) = self.last.lock().expect("not poisoned").as_ref() {
            if *j == i {
                return Ok(bytes.clone());
            }
        }
        let c = self.chunks[i];
        let want = (c.sectors * 512) as usize;
        let mut packed = vec![0u8; c.len as usize];
        crate::read::read_file_at(&self.file, &mut packed, c.at)?;
        let what = |e: String| {
            bad(format!(
                "{}: the {} chunk of sectors {}..{} cannot be decoded: {e}",
                self.path.display(),
                method(c.kind).unwrap_or("?"),
                c.sector,
                c.sector + c.sectors
            ))
        };
        let out = match c.kind {
            ZLIB => exact(flate2::read::ZlibDecoder::new(&packed[..]), want).map_err(what)?,
            BZIP2 => exact(bzip2::read::BzDecoder::new(&packed[..]), want).map_err(what)?,
            ADC => adc(&packed, want).map_err(what)?,
            // An xz stream; its dictionary at most the chunk's size (and 64 MiB).
            LZMA => exact(
                lzma_rust2::XzReader::new_mem_limit(
                    &packed[..],
                    true,
                    (MAX_CHUNK / 1024) as u32 * 2,
                ),
                want,
            )
            .map_err(what)?,
            LZFSE => {
                let mut decoder = lzfse_rust::LzfseRingDecoder::default();
                exact(decoder.reader_bytes(&packed), want).map_err(what)?
            }
            k => return Err(what(format!("chunks of type 0x{k:08x} are not read"))),
        };
        let out = Arc::new(out);
        *self.last.lock().expect("not poisoned") = Some((i, out.clone()));
        Ok(out)
    }
}

/// A compressed chunk type's name.
fn method(kind: u32) -> Option<&'static str> {
    Some(match kind {
        ADC => "ADC",
        ZLIB => "zlib",
        BZIP2 => "bzip2",
        LZFSE => "LZFSE",
        LZMA => "LZMA",
        _ => return None,
    })
}

/// Exactly `want` bytes from `r`: fewer is an error, and no more are read.
fn exact(r: impl Read, want: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(want);
    r.take(want as u64)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if out.len() < want {
        return Err(format!("it gives {} of its {want} bytes", out.len()));
    }
    Ok(out)
}

/// Apple Data Compression: a byte with the top bit set starts `(b & 0x7F) + 1` literal bytes; else `b & 0x40`
/// a three-byte copy (length `(b & 0x3F) + 4`, distance the next two bytes + 1), else a two-byte copy (length
/// `((b >> 2) & 0xF) + 3`, distance `((b & 3) << 8 | next) + 1`).
fn adc(input: &[u8], want: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(want);
    let mut i = 0;
    while i < input.len() && out.len() < want {
        let b = input[i];
        let (len, dist, used) = if b & 0x80 != 0 {
            let n = usize::from(b & 0x7F) + 1;
            let lit = input
                .get(i + 1..i + 1 + n)
                .ok_or("a literal run past its end")?;
            out.extend_from_slice(lit);
            i += 1 + n;
            continue;
        } else if b & 0x40 != 0 {
            let d = input.get(i + 1..i + 3).ok_or("a copy past its end")?;
            (
                usize::from(b & 0x3F) + 4,
                usize::from(u16::from_be_bytes([d[0], d[1]])) + 1,
                3,
            )
        } else {
            let d = *input.get(i + 1).ok_or("a copy past its end")?;
            (
                usize::from((b >> 2) & 0xF) + 3,
                (usize::from(b & 3) << 8 | usize::from(d)) + 1,
                2,
            )
        };
        if dist > out.len() {
            return Err(format!(
                "a copy from {dist} bytes back, {} decoded",
                out.len()
            ));
        }
        for _ in 0..len {
            out.push(out[out.len() - dist]);
        }
        i += used;
    }
    out.truncate(want);
    if out.len() < want {
        return Err(format!("it gives {} of its {want} bytes", out.len()));
    }
    Ok(out)
}

/// The `Data` of every `blkx` entry of the property list, base64-decoded.
fn blkx_blocks(xml: &str) -> io::Result<Vec<Vec<u8>>> {
    let start = xml
        .find("<key>blkx</key>")
        .ok_or_else(|| bad("this UDIF image's property list has no blkx entries"))?;
    let rest = &xml[start..];
    let end = rest.find("</array>").unwrap_or(rest.len());
    let mut blocks = Vec::new();
    let mut s = &rest[..end];
    while let Some(k) = s.find("<key>Data</key>") {
        s = &s[k..];
        let (Some(a), Some(b)) = (s.find("<data>"), s.find("</data>")) else {
            break;
        };
        if b < a {
            break;
        }
        blocks.push(base64(&s[a + 6..b]).ok_or_else(|| bad("a blkx entry's data is not base64"))?);
        s = &s[b..];
    }
    Ok(blocks)
}

/// Standard base64, whitespace ignored.
fn base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            c if c.is_ascii_whitespace() => continue,
            _ => return None,
        };
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// A `mish` block's chunks, placed on the disk (its first sector added) and in the file (the data fork's and the
/// block's offsets added).
fn read_mish(m: &[u8], data_fork: u64, file_len: u64, out: &mut Vec<Chunk>) -> io::Result<()> {
    if m.len() < 204 || &m[..4] != b"mish" {
        return Err(bad("a blkx entry is not a mish block"));
    }
    let first = be64(m, 8);
    let base = data_fork.saturating_add(be64(m, 24));
    let count = be32(m, 200) as usize;
    if m.len() < 204 + 40 * count {
        return Err(bad("a mish block lists more chunks than it holds"));
    }
    for i in 0..count {
        let c = &m[204 + 40 * i..244 + 40 * i];
        let kind = be32(c, 0);
        if matches!(kind, COMMENT | END) {
            continue;
        }
        let sectors = be64(c, 16);
        let chunk = Chunk {
            kind,
            sector: first.saturating_add(be64(c, 8)),
            sectors,
            at: base.saturating_add(be64(c, 24)),
            len: be64(c, 32),
        };
        if sectors == 0 {
            continue;
        }
        let compressed = method(kind).is_some();
        if !matches!(kind, ZEROS | STORED | IGNORED) && !compressed {
            return Err(bad(format!(
                "this UDIF image has chunks of unknown type 0x{kind:08x}"
            )));
        }
        if sectors.saturating_mul(512) > MAX_CHUNK && kind != ZEROS && kind != IGNORED {
            return Err(bad(format!(
                "a UDIF chunk of {sectors} sectors is more than uffs decodes"
            )));
        }
        if kind != ZEROS && kind != IGNORED && !within(chunk.at, chunk.len, file_len) {
            return Err(bad(format!(
                "a UDIF chunk's bytes ({} at {}) are past the file's end",
                chunk.len, chunk.at
            )));
        }
        if kind == STORED && chunk.len < sectors * 512 {
            return Err(bad("a stored UDIF chunk is shorter than its sectors"));
        }
        out.push(chunk);
    }
    Ok(())
}

impl Image for Udif {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let sector = at / 512;
            let i = self
                .chunks
                .partition_point(|c| c.sector + c.sectors <= sector);
            let dst = &mut buf[done..];
            let (n, chunk) = match self.chunks.get(i) {
                Some(c) if c.sector <= sector => {
                    let end = (c.sector + c.sectors) * 512;
                    (((end - at) as usize).min(dst.len()), Some((i, *c)))
                }
                // No chunk: zeros up to the next one.
                Some(c) => (((c.sector * 512 - at) as usize).min(dst.len()), None),
                None => (dst.len(), None),
            };
            let dst = &mut dst[..n];
            match chunk {
                None => dst.fill(0),
                Some((_, c)) if matches!(c.kind, ZEROS | IGNORED) => dst.fill(0),
                Some((_, c)) if c.kind == STORED => {
                    crate::read::read_file_at(&self.file, dst, c.at + (at - c.sector * 512))?
                }
                Some((i, c)) => {
                    let bytes = self.decoded(i)?;
                    let from = (at - c.sector * 512) as usize;
                    dst.copy_from_slice(&bytes[from..from + n]);
                }
            }
            done += n;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let methods = if self.methods.is_empty() {
            "stored".to_string()
        } else {
            self.methods.join(", ")
        };
        format!(
            "UDIF (.dmg): {} sectors in {} chunks ({methods})",
            self.len / 512,
            self.chunks.len()
        )
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adc_literals_and_copies() {
        // "abc", then a two-byte copy of 3 from 3 back, then a three-byte copy of 4 from 6 back.
        let input = [0x82, b'a', b'b', b'c', 0x00, 0x02, 0x40, 0x00, 0x05];
        assert_eq!(adc(&input, 10).unwrap(), b"abcabcabca");
        assert!(adc(&[0x00, 0x05], 3).is_err());
    }

    #[test]
    fn base64_as_plists_write_it() {
        assert_eq!(base64("bWlz\n\taA==").unwrap(), b"mish");
        assert!(base64("bW*z").is_none());
    }
}
