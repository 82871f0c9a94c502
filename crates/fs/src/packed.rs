//! Decoding the stretches of file data a file system keeps compressed ([`Packed`](crate::Packed)): Btrfs's
//! zlib, LZO and zstd extents, macOS's decmpfs zlib blocks, for whatever reads a file's bytes. Every input is treated as hostile: a damaged
//! or cut-off stream is an [`Error`], never a panic, and memory is bounded by the output asked for, never by
//! what a stream's headers claim.
//!
//! A stream that ends properly before giving all the bytes asked for reads as zeros for the rest, as Linux
//! reads it: Btrfs compresses the last piece of a file only up to the file's end, but records its length
//! rounded up to a sector.

use crate::{Codec, Error};

/// The most bytes one piece may decode to (Btrfs's are at most 128 KiB).
pub const MAX_DECODED: usize = 8 << 20;

/// The bytes `input` (compressed with `codec`) decodes to: exactly `decoded_len` of them, leaving out what it
/// holds beyond and zeros for what it lacks after its proper end. A stream that is cut short or damaged, or a
/// `decoded_len` over [`MAX_DECODED`], is an error.
pub fn decode(codec: Codec, input: &[u8], decoded_len: usize) -> Result<Vec<u8>, Error> {
    if decoded_len > MAX_DECODED {
        return Err(Error::new(format!(
            "a compressed piece of {decoded_len} bytes, more than the {MAX_DECODED} uffs decodes"
        )));
    }
    match codec {
        Codec::Zlib => zlib(input, decoded_len),
        Codec::Zstd => zstd(input, decoded_len),
        Codec::BtrfsLzo => btrfs_lzo(input, decoded_len),
        Codec::AppleZlib => match input.first() {
            Some(b) if b & 0x0F == 0x0F => Ok(stored(&input[1..], decoded_len)),
            _ => zlib(input, decoded_len),
        },
        Codec::Lzvn => match input.first() {
            Some(0x06) => Ok(stored(&input[1..], decoded_len)),
            _ => lzvn(input, decoded_len),
        },
        Codec::Lzfse => match input.first() {
            Some(0xFF) => Ok(stored(&input[1..], decoded_len)),
            _ => lzfse(input, decoded_len),
        },
    }
}

/// LZFSE frames, through `lzfse_rust`'s decoder, read no further than `decoded_len` bytes (so a frame's claimed
/// length never sizes an allocation).
fn lzfse(input: &[u8], decoded_len: usize) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let mut decoder = lzfse_rust::LzfseRingDecoder::default();
    let mut out = Vec::with_capacity(decoded_len);
    decoder
        .reader_bytes(input)
        .take(decoded_len as u64)
        .read_to_end(&mut out)
        .map_err(|e| Error::new(format!("LZFSE: {e}")))?;
    if out.len() < decoded_len {
        return Err(cut_short("LZFSE", out.len(), decoded_len));
    }
    Ok(out)
}

/// A bare LZVN stream, decoded as the one-block LZFSE frame Apple's encoder would wrap it in (`bvxn`, the
/// decoded and encoded lengths, the stream, `bvx$`): `decoded_len` must be the stream's whole length, as a
/// decmpfs block's is.
fn lzvn(input: &[u8], decoded_len: usize) -> Result<Vec<u8>, Error> {
    let (Ok(raw), Ok(payload)) = (u32::try_from(decoded_len), u32::try_from(input.len())) else {
        return Err(Error::new("LZVN: a stream too long"));
    };
    let mut frame = Vec::with_capacity(input.len() + 16);
    frame.extend_from_slice(b"bvxn");
    frame.extend_from_slice(&raw.to_le_bytes());
    frame.extend_from_slice(&payload.to_le_bytes());
    frame.extend_from_slice(input);
    frame.extend_from_slice(b"bvx$");
    lzfse(&frame, decoded_len).map_err(|e| Error::new(e.message.replace("LZFSE", "LZVN")))
}

/// Bytes kept as they are: `decoded_len` of them, zeros for what they lack.
fn stored(input: &[u8], decoded_len: usize) -> Vec<u8> {
    let mut out = vec![0u8; decoded_len];
    let n = input.len().min(decoded_len);
    out[..n].copy_from_slice(&input[..n]);
    out
}

fn zlib(input: &[u8], decoded_len: usize) -> Result<Vec<u8>, Error> {
    use flate2::{Decompress, FlushDecompress, Status};
    let mut out = vec![0u8; decoded_len];
    let mut z = Decompress::new(true);
    let (mut read, mut written) = (0usize, 0usize);
    while written < decoded_len {
        let status = z
            .decompress(&input[read..], &mut out[written..], FlushDecompress::None)
            .map_err(|e| Error::new(format!("zlib: {e}")))?;
        let (r, w) = (z.total_in() as usize, z.total_out() as usize);
        if status == Status::StreamEnd {
            // The decoder may have used the room after what it wrote.
            out[w..].fill(0);
            return Ok(out);
        }
        if (r, w) == (read, written) {
            return Err(cut_short("zlib", written, decoded_len));
        }
        (read, written) = (r, w);
    }
    Ok(out)
}

/// Btrfs's zstd window is at most 2^17 bytes: a frame asking for more than that (or than the output, when
/// larger) is refused before the decoder allocates its window.
const ZSTD_WINDOW_LOG: u32 = 17;

fn zstd(input: &[u8], decoded_len: usize) -> Result<Vec<u8>, Error> {
    use zstd::stream::raw::{DParameter, Decoder, InBuffer, Operation, OutBuffer};
    let fail = |e: std::io::Error| Error::new(format!("zstd: {e}"));
    let mut out = vec![0u8; decoded_len];
    if decoded_len == 0 {
        return Ok(out);
    }
    let window_log = (usize::BITS - (decoded_len - 1).leading_zeros()).max(ZSTD_WINDOW_LOG);
    let mut z = Decoder::new().map_err(fail)?;
    z.set_parameter(DParameter::WindowLogMax(window_log))
        .map_err(fail)?;
    let mut src = InBuffer::around(input);
    let mut dst = OutBuffer::around(&mut out[..]);
    // A frame decoded to its end: what follows is another frame, or the padding to the sector.
    let mut frame_ended = false;
    while dst.pos() < decoded_len {
        if frame_ended && !starts_zstd_frame(&input[src.pos()..]) {
            break;
        }
        let before = (src.pos(), dst.pos());
        frame_ended = z.run(&mut src, &mut dst).map_err(fail)? == 0;
        if (src.pos(), dst.pos()) == before {
            break;
        }
    }
    let written = dst.pos();
    if written < decoded_len && !frame_ended {
        return Err(cut_short("zstd", written, decoded_len));
    }
    out[written..].fill(0);
    Ok(out)
}

/// Whether `b` starts with a zstd frame's magic number, or a skippable frame's.
fn starts_zstd_frame(b: &[u8]) -> bool {
    match b.first_chunk::<4>().map(|m| u32::from_le_bytes(*m)) {
        Some(m) => m == 0xFD2F_B528 || m & 0xFFFF_FFF0 == 0x184D_2A50,
        None => false,
    }
}

fn cut_short(what: &str, got: usize, wanted: usize) -> Error {
    Error::new(format!(
        "{what}: the stream ends after {got} of its {wanted} bytes"
    ))
}

/// Btrfs's LZO sector: a segment decodes to at most one, and no segment header crosses one's end.
const LZO_SECTOR: usize = 4096;
/// The most a segment of one sector may decode to, as Linux allows it (`lzo1x_worst_compress`).
const LZO_SEGMENT_MAX: usize = LZO_SECTOR + LZO_SECTOR / 16 + 64 + 3;

/// Btrfs's LZO framing (Linux, fs/btrfs/lzo.c): the total length (u32 LE, these 4 bytes included), then
/// segments, each its length (u32 LE) and that many bytes of LZO1X; fewer than 4 bytes left before a sector's
/// end are padding.
fn btrfs_lzo(input: &[u8], decoded_len: usize) -> Result<Vec<u8>, Error> {
    let fail = |why: String| Error::new(format!("LZO: {why}"));
    let u32_at = |at: usize| {
        input
            .get(at..at.checked_add(4)?)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let total = u32_at(0).ok_or_else(|| fail("no total length".into()))?;
    if total < 4 || total > input.len() {
        return Err(fail(format!(
            "a total length of {total} bytes, in {} bytes",
            input.len()
        )));
    }
    let mut out = Vec::with_capacity(decoded_len);
    let mut segment = vec![0u8; LZO_SEGMENT_MAX];
    let mut at = 4usize;
    while out.len() < decoded_len {
        let room = LZO_SECTOR - at % LZO_SECTOR;
        if room < 4 {
            at += room;
        }
        if at >= total {
            break;
        }
        let len = u32_at(at)
            .filter(|_| at + 4 <= total)
            .ok_or_else(|| fail(format!("a segment header at byte {at} past the end")))?;
        at += 4;
        let data = at
            .checked_add(len)
            .filter(|&end| end <= total)
            .map(|end| &input[at..end])
            .ok_or_else(|| {
                fail(format!(
                    "a segment of {len} bytes at byte {at} past the end"
                ))
            })?;
        at += len;
        let n = lzo1x(data, &mut segment)
            .map_err(|why| fail(format!("the segment at byte {}: {why}", at - len)))?;
        let take = n.min(decoded_len - out.len());
        out.extend_from_slice(&segment[..take]);
    }
    out.resize(decoded_len, 0);
    Ok(out)
}

/// Decodes one LZO1X stream (`lzo1x_decompress_safe`: literal runs, then matches M1 to M4, each leaving 0 to 3
/// literals to copy after it in its low bits; the end is an M4 of distance 0x4000) into `out`, returning the
/// bytes written. Every read and write is checked; the stream must end exactly at its end marker.
fn lzo1x(input: &[u8], out: &mut [u8]) -> Result<usize, &'static str> {
    const OVERRUN: &str = "the stream ends early";
    let mut ip = 0usize;
    let mut op = 0usize;
    let byte = |ip: &mut usize| -> Result<usize, &'static str> {
        let b = *input.get(*ip).ok_or(OVERRUN)?;
        *ip += 1;
        Ok(usize::from(b))
    };
    let le16 = |ip: &mut usize| -> Result<usize, &'static str> {
        let b = input.get(*ip..*ip + 2).ok_or(OVERRUN)?;
        *ip += 2;
        Ok(usize::from(u16::from_le_bytes([b[0], b[1]])))
    };
    // A length too long for its opcode's bits: `base` plus 255 for each zero byte, plus the next byte.
    let long = |ip: &mut usize, base: usize| -> Result<usize, &'static str> {
        let zeros = input
            .get(*ip..)
            .unwrap_or_default()
            .iter()
            .take_while(|&&b| b == 0)
            .count();
        *ip += zeros;
        let n = zeros.checked_mul(255).ok_or("a length too long")?;
        Ok(n.saturating_add(base + byte(ip)?))
    };
    let literals = |ip: &mut usize, op: &mut usize, out: &mut [u8], n: usize| {
        let src = input.get(*ip..ip.saturating_add(n)).ok_or(OVERRUN)?;
        let dst = out
            .get_mut(*op..op.saturating_add(n))
            .ok_or("the output is too long")?;
        dst.copy_from_slice(src);
        *ip += n;
        *op += n;
        Ok::<(), &'static str>(())
    };
    if input.len() < 3 {
        return Err(OVERRUN);
    }
    // 0 to 3 literals that follow the last match, or 4 after a literal run: how a short opcode reads.
    let mut state;
    if input[0] > 17 {
        let t = usize::from(input[0]) - 17;
        ip = 1;
        literals(&mut ip, &mut op, out, t)?;
        state = if t < 4 { t } else { 4 };
    } else {
        state = 0;
    }
    loop {
        let t = byte(&mut ip)?;
        let (distance, len, next);
        if t < 16 {
            if state == 0 {
                let n = if t == 0 { long(&mut ip, 15)? } else { t };
                literals(&mut ip, &mut op, out, n.saturating_add(3))?;
                state = 4;
                continue;
            }
            // M1: a short match, 2 bytes after a match's literals, 3 right after a literal run.
            next = t & 3;
            let near = 1 + (t >> 2) + (byte(&mut ip)? << 2);
            (distance, len) = if state == 4 {
                (near + 0x800, 3)
            } else {
                (near, 2)
            };
        } else if t >= 64 {
            // M2.
            next = t & 3;
            distance = 1 + ((t >> 2) & 7) + (byte(&mut ip)? << 3);
            len = (t >> 5) + 1;
        } else if t >= 32 {
            // M3.
            let n = match t & 31 {
                0 => long(&mut ip, 31)?,
                n => n,
            };
            len = n.saturating_add(2);
            let d = le16(&mut ip)?;
            distance = 1 + (d >> 2);
            next = d & 3;
        } else {
            // M4, or the end marker.
            let n = match t & 7 {
                0 => long(&mut ip, 7)?,
                n => n,
            };
            len = n.saturating_add(2);
            let d = le16(&mut ip)?;
            let far = ((t & 8) << 11) + (d >> 2);
            if far == 0 {
                return match (len, ip == input.len()) {
                    (3, true) => Ok(op),
                    (3, false) => Err("bytes after the end marker"),
                    _ => Err("a damaged end marker"),
                };
            }
            distance = far + 0x4000;
            next = d & 3;
        }
        let from = op
            .checked_sub(distance)
            .ok_or("a match before the start of the output")?;
        if out.len() - op < len {
            return Err("the output is too long");
        }
        if distance >= len {
            out.copy_within(from..from + len, op);
        } else {
            // Overlapping: each byte copied may be one just written.
            for k in 0..len {
                out[op + k] = out[from + k];
            }
        }
        op += len;
        literals(&mut ip, &mut op, out, next)?;
        state = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Text-like bytes that compress: words from a small set, chosen by a little generator.
    fn text(n: usize) -> Vec<u8> {
        let words = [
            "btrfs ",
            "extent ",
            "the ",
            "compressed ",
            "of ",
            "data ",
            "sector ",
            "zlib ",
        ];
        let mut seed = 0x2545_f491_u64;
        let mut v = Vec::new();
        while v.len() < n {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            v.extend_from_slice(words[(seed >> 61) as usize].as_bytes());
        }
        v.truncate(n);
        v
    }

    fn zlib_of(data: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn zlib_and_zstd_round_trip() {
        let data = text(100_000);
        for (codec, packed) in [
            (Codec::Zlib, zlib_of(&data)),
            (Codec::Zstd, zstd::bulk::compress(&data, 3).unwrap()),
        ] {
            assert_eq!(decode(codec, &packed, data.len()).unwrap(), data);
            // Fewer bytes than the stream holds: the first ones.
            assert_eq!(decode(codec, &packed, 1000).unwrap(), &data[..1000]);
            assert_eq!(decode(codec, &packed, 0).unwrap(), b"");
            // Padded to a sector on the volume, and asked for the whole sector: zeros past the stream's end.
            let mut padded = packed.clone();
            padded.resize(packed.len().next_multiple_of(4096), 0);
            let got = decode(codec, &padded, 102_400).unwrap();
            assert_eq!(&got[..data.len()], &data[..], "{codec:?}");
            assert!(got[data.len()..].iter().all(|&b| b == 0), "{codec:?}");
            // Cut short (asked for more than it holds, so that its end is read), or damaged: an error.
            for cut in [0, 1, 2, packed.len() / 2, packed.len() - 1] {
                assert!(
                    decode(codec, &packed[..cut], data.len() + 1).is_err(),
                    "{codec:?} cut at {cut}"
                );
            }
            let mut bad = packed.clone();
            bad[0] ^= 0x55;
            assert!(decode(codec, &bad, data.len()).is_err(), "{codec:?}");
            if codec == Codec::Zlib {
                // Its checksum finds damage inside.
                let mut bad = packed.clone();
                bad[packed.len() / 3] ^= 0x10;
                assert!(decode(codec, &bad, data.len() + 1).is_err());
            }
        }
    }

    #[test]
    fn zstd_frames_one_after_another() {
        let (a, b) = (text(5000), vec![7u8; 3000]);
        let mut packed = zstd::bulk::compress(&a, 1).unwrap();
        packed.extend(zstd::bulk::compress(&b, 19).unwrap());
        let got = decode(Codec::Zstd, &packed, 8000).unwrap();
        assert_eq!(&got[..5000], &a[..]);
        assert_eq!(&got[5000..], &b[..]);
    }

    #[test]
    fn a_frame_that_wants_a_huge_window_is_refused() {
        // A frame header asking for a window of 2^30 bytes (no content size): refused, not allocated.
        let frame = [
            0x28,
            0xB5,
            0x2F,
            0xFD,
            0x00,
            (30 - 10) << 3,
            0x01,
            0x00,
            0x00,
        ];
        assert!(decode(Codec::Zstd, &frame, 4096).is_err());
        assert!(decode(Codec::Zlib, &[], MAX_DECODED + 1).is_err());
    }

    /// Apple's reference encoder's LZVN streams and LZFSE frames (tests/data/apple, make-apple.py) decode to
    /// their plain bytes; the stored forms, damage and a short stream are errors or zeros as documented.
    #[test]
    fn lzvn_and_lzfse_as_apple_writes_them() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/apple/");
        let read = |f: &str| std::fs::read(format!("{dir}{f}")).unwrap();
        for (name, codec, ext) in [
            ("lzvn-text", Codec::Lzvn, "lzvn"),
            ("lzvn-letters", Codec::Lzvn, "lzvn"),
            ("lzvn-runs", Codec::Lzvn, "lzvn"),
            ("lzfse-text", Codec::Lzfse, "lzfse"),
            ("lzfse-mixed", Codec::Lzfse, "lzfse"),
        ] {
            let plain = read(&format!("{name}.raw"));
            let packed = read(&format!("{name}.{ext}"));
            assert_eq!(
                decode(codec, &packed, plain.len()).unwrap(),
                plain,
                "{name}"
            );
            // LZFSE asked for less: the first bytes (an LZVN stream's length is its block's, exact); cut short:
            // an error, never a panic.
            if codec == Codec::Lzfse {
                assert_eq!(decode(codec, &packed, 100).unwrap(), plain[..100], "{name}");
            }
            assert!(
                decode(codec, &packed[..packed.len() / 2], plain.len()).is_err(),
                "{name}"
            );
        }
        assert_eq!(decode(Codec::Lzvn, b"\x06abc", 3).unwrap(), b"abc");
        assert_eq!(decode(Codec::Lzfse, b"\xFFabc", 3).unwrap(), b"abc");
        assert_eq!(decode(Codec::AppleZlib, b"\xFFabc", 4).unwrap(), b"abc\0");
        assert!(decode(Codec::Lzfse, b"bvx2garbage", 10).is_err());
    }

    /// A vector of tests/data/lzo, made by make-lzo.py with liblzo2.
    fn vector(name: &str, ext: &str) -> Vec<u8> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/lzo/");
        std::fs::read(format!("{dir}{name}.{ext}")).unwrap()
    }

    /// The plain LZO1X vectors: (name, plain, compressed).
    fn vectors() -> Vec<(&'static str, Vec<u8>, Vec<u8>)> {
        let names = [
            "empty",
            "short",
            "text-1",
            "text-999",
            "mixed-999",
            "zeros",
            "random",
            "sector",
            "far",
            "farther",
        ];
        names
            .into_iter()
            .map(|name| {
                let plain = match name {
                    // A ramp, 16 or 32 KiB of zeros, the ramp again: a match that far back (M4).
                    "far" | "farther" => {
                        let ramp: Vec<u8> = (0..=255).collect();
                        let zeros = if name == "far" { 16384 } else { 32768 };
                        [&ramp[..], &vec![0; zeros], &ramp].concat()
                    }
                    _ => vector(name, "raw"),
                };
                (name, plain, vector(name, "lzo"))
            })
            .collect()
    }

    #[test]
    fn lzo1x_streams_of_liblzo() {
        for (name, plain, packed) in vectors() {
            let mut out = vec![0u8; plain.len()];
            assert_eq!(lzo1x(&packed, &mut out), Ok(plain.len()), "{name}");
            assert_eq!(out, plain, "{name}");
            // Cut anywhere, or into too small an output: an error.
            for cut in (0..packed.len()).step_by(packed.len() / 50 + 1) {
                assert!(
                    lzo1x(&packed[..cut], &mut out).is_err(),
                    "{name} cut at {cut}"
                );
            }
            if !plain.is_empty() {
                assert!(
                    lzo1x(&packed, &mut out[..plain.len() - 1]).is_err(),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn btrfs_lzo_frames() {
        // The first segment leaves 2 bytes (padding) or 4 (the next header) before the sector's end.
        for (name, room) in [("framed-pad", 2), ("framed-fit", 4)] {
            let (plain, packed) = (vector(name, "raw"), vector(name, "lzo"));
            let first = u32::from_le_bytes(packed[4..8].try_into().unwrap()) as usize;
            assert_eq!(4096 - (8 + first), room, "{name}");
            assert_eq!(
                decode(Codec::BtrfsLzo, &packed, plain.len()).unwrap(),
                plain
            );
            // Fewer bytes asked for; more: zeros after the stream.
            assert_eq!(
                decode(Codec::BtrfsLzo, &packed, 5000).unwrap(),
                &plain[..5000]
            );
            let got = decode(Codec::BtrfsLzo, &packed, 3 * 4096).unwrap();
            assert_eq!(&got[..plain.len()], &plain[..], "{name}");
            assert!(got[plain.len()..].iter().all(|&b| b == 0));
            // Cut short: the total length says more than there is.
            for cut in [0, 3, 4, 100, 4096, packed.len() - 1] {
                assert!(decode(Codec::BtrfsLzo, &packed[..cut], plain.len()).is_err());
            }
        }
    }

    #[test]
    fn garbage_is_an_error_never_a_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let seen: Vec<Vec<u8>> = vectors().into_iter().map(|v| v.2).collect();
        for case in 0..20_000 {
            // Random bytes, or a real stream with a few bytes changed.
            let mut b: Vec<u8> = if case % 2 == 0 {
                (0..next() % 64).map(|_| next() as u8).collect()
            } else {
                seen[case / 2 % seen.len()].clone()
            };
            for _ in 0..1 + next() % 4 {
                if !b.is_empty() {
                    let at = next() as usize % b.len();
                    b[at] = next() as u8;
                }
            }
            let mut out = [0u8; 20_000];
            let _ = lzo1x(&b, &mut out);
            let mut framed = ((b.len() + 8) as u32).to_le_bytes().to_vec();
            framed.extend(((b.len()) as u32).to_le_bytes());
            framed.extend(&b);
            let _ = decode(Codec::BtrfsLzo, &framed, 8192);
            let _ = decode(Codec::Zlib, &b, 8192);
            let _ = decode(Codec::Zstd, &b, 8192);
        }
    }
}
