//! LZNT1, the compression of NTFS compressed streams.
//!
//! A compressed stream is cut into compression units of 2^n clusters (n = 4 in practice: 64 KiB with 4 KiB
//! clusters). A unit stored in fewer clusters than it spans holds LZNT1 data: a sequence of chunks, each a 2-byte
//! header and up to 4,096 bytes of data that decode to (at most) 4,096 bytes of output. The header's low 12 bits
//! are the data length minus one and bit 15 says whether the chunk is compressed; a zero header ends the unit.
//! A compressed chunk is groups of a flag byte and eight tokens: a clear flag bit is a literal byte, a set one a
//! 16-bit back-reference whose split between offset and length bits depends on how far into the chunk's output
//! it stands.
//!
//! [`decompress`] works on byte slices only, never reads or writes outside them and gives a typed error for any
//! malformed input.

use crate::{Error, Result};

/// Bytes of output one chunk stands for.
pub const CHUNK_SIZE: usize = 4096;

const WHAT: &str = "LZNT1 data";

fn invalid(why: &'static str) -> Error {
    Error::Invalid { what: WHAT, why }
}

/// Decompresses the LZNT1 chunks in `src` into `dst`, which should be the compression unit's size. Every byte of
/// `dst` is written: a chunk that decodes to fewer than 4,096 bytes is padded with zeros to its 4,096 (as the
/// Windows and Linux drivers read it), and everything after the last chunk is zeros. Decoding ends at a zero
/// header, at the end of `src` or once `dst` is full. Returns the end of the last chunk's output in `dst`
/// (padding included).
///
/// Errors: a chunk longer than what is left of `src`, a back-reference to before the start of its chunk, or
/// output past the end of its chunk or of `dst`.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<usize> {
    let mut out = 0;
    let r = decode_chunks(src, dst, &mut out);
    // Whatever was not written (after the last chunk, or after an error) reads as zeros, never as stale bytes.
    let end = out.min(dst.len());
    dst[end..].fill(0);
    r.map(|()| out)
}

/// The chunk loop of [`decompress`]; `out` is where the next chunk's output starts.
fn decode_chunks(src: &[u8], dst: &mut [u8], out: &mut usize) -> Result<()> {
    let mut inp = 0;
    // A full unit ends the data, whatever follows (the slack of its last cluster).
    while *out < dst.len() {
        let Some(h) = src.get(inp..inp + 2) else {
            break;
        };
        let header = u16::from_le_bytes([h[0], h[1]]);
        if header == 0 {
            break;
        }
        let len = usize::from(header & 0x0FFF) + 1;
        let data = src.get(inp + 2..inp + 2 + len).ok_or(Error::Truncated {
            what: WHAT,
            offset: inp + 2,
            need: len,
            have: src.len(),
        })?;
        inp += 2 + len;
        // A chunk's output is its own window of at most 4,096 bytes: back-references never reach before it.
        let end = (*out + CHUNK_SIZE).min(dst.len());
        let window = &mut dst[*out..end];
        let n = if header & 0x8000 == 0 {
            let w = window
                .get_mut(..data.len())
                .ok_or(invalid("stored chunk is longer than its output"))?;
            w.copy_from_slice(data);
            data.len()
        } else {
            decompress_chunk(data, window)?
        };
        window[n..].fill(0);
        *out = end;
    }
    Ok(())
}

/// Decodes one compressed chunk into `w` (its output window); returns the bytes written.
fn decompress_chunk(data: &[u8], w: &mut [u8]) -> Result<usize> {
    let mut i = 0;
    let mut p = 0;
    while i < data.len() {
        let flags = data[i];
        i += 1;
        for bit in 0..8 {
            if i >= data.len() {
                break;
            }
            if flags & (1 << bit) == 0 {
                *w.get_mut(p)
                    .ok_or(invalid("literal past the end of its chunk"))? = data[i];
                p += 1;
                i += 1;
                continue;
            }
            let t = data
                .get(i..i + 2)
                .ok_or(invalid("back-reference is cut off"))?;
            let token = usize::from(u16::from_le_bytes([t[0], t[1]]));
            i += 2;
            if p == 0 {
                return Err(invalid("back-reference at the start of a chunk"));
            }
            // The further into the chunk, the more bits the offset takes: 4 up to position 16, then one more for
            // each doubling.
            let mut length_bits = 12;
            let mut q = p - 1;
            while q >= 0x10 {
                q >>= 1;
                length_bits -= 1;
            }
            let offset = (token >> length_bits) + 1;
            let length = (token & ((1 << length_bits) - 1)) + 3;
            if offset > p {
                return Err(invalid("back-reference before the start of its chunk"));
            }
            if p + length > w.len() {
                return Err(invalid("back-reference past the end of its chunk"));
            }
            let from = p - offset;
            if offset >= length {
                w.copy_within(from..from + length, p);
            } else {
                // Overlapping: each byte may be one this copy just wrote (a run of a repeated pattern).
                for k in 0..length {
                    w[p + k] = w[from + k];
                }
            }
            p += length;
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simple greedy LZNT1 compressor, to make test data: each chunk compressed (or stored when that is not
    /// smaller), ending with a zero header when `end_marker`.
    pub(crate) fn compress(input: &[u8], end_marker: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for chunk in input.chunks(CHUNK_SIZE) {
            let body = compress_chunk(chunk);
            if body.len() < chunk.len() {
                let h = 0xB000 | (body.len() as u16 - 1);
                out.extend_from_slice(&h.to_le_bytes());
                out.extend_from_slice(&body);
            } else {
                let h = 0x3000 | (chunk.len() as u16 - 1);
                out.extend_from_slice(&h.to_le_bytes());
                out.extend_from_slice(chunk);
            }
        }
        if end_marker {
            out.extend_from_slice(&[0, 0]);
        }
        out
    }

    fn compress_chunk(c: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut p = 0;
        while p < c.len() {
            let flag_at = out.len();
            out.push(0u8);
            for bit in 0..8 {
                if p >= c.len() {
                    break;
                }
                let mut length_bits = 12;
                let mut q = p.saturating_sub(1);
                while q >= 0x10 {
                    q >>= 1;
                    length_bits -= 1;
                }
                let max_off = (1usize << (16 - length_bits)).min(p);
                let max_len = ((1usize << length_bits) - 1 + 3).min(c.len() - p);
                let (mut best_len, mut best_off) = (0, 0);
                for off in 1..=max_off {
                    let mut l = 0;
                    while l < max_len && c[p - off + l] == c[p + l] {
                        l += 1;
                    }
                    if l > best_len {
                        (best_len, best_off) = (l, off);
                    }
                }
                if best_len >= 3 {
                    let token = ((best_off - 1) << length_bits) | (best_len - 3);
                    out.extend_from_slice(&(token as u16).to_le_bytes());
                    out[flag_at] |= 1 << bit;
                    p += best_len;
                } else {
                    out.push(c[p]);
                    p += 1;
                }
            }
        }
        out
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
    }

    #[test]
    fn hand_made_chunk() {
        // "abc", then 6 bytes from 3 back: at position 3 the token has 4 offset bits: (3-1) << 12 | (6-3).
        let src = [0x05, 0xB0, 0x08, b'a', b'b', b'c', 0x03, 0x20, 0, 0];
        let mut dst = [0xEEu8; 16];
        assert_eq!(decompress(&src, &mut dst), Ok(16)); // the whole (short) unit
        assert_eq!(&dst[..9], b"abcabcabc");
        assert!(dst[9..].iter().all(|&b| b == 0));
    }

    #[test]
    fn stored_chunk_and_padding() {
        let data: Vec<u8> = (0..CHUNK_SIZE).map(|i| (i * 7) as u8).collect();
        let mut src = vec![0xFF, 0x3F];
        src.extend_from_slice(&data);
        let mut dst = vec![1u8; 3 * CHUNK_SIZE];
        assert_eq!(decompress(&src, &mut dst), Ok(CHUNK_SIZE));
        assert_eq!(&dst[..CHUNK_SIZE], &data[..]);
        assert!(dst[CHUNK_SIZE..].iter().all(|&b| b == 0));
    }

    #[test]
    fn round_trips_through_a_reference_compressor() {
        let mut rng = Rng(0x1234_5678);
        for case in 0..40 {
            let len = (rng.next() % (4 * CHUNK_SIZE as u64 + 1)) as usize;
            // Text-like data with repeats, or noise, or runs of one byte.
            let input: Vec<u8> = match case % 3 {
                0 => (0..len).map(|i| b"the quick brown fox "[i % 20]).collect(),
                1 => (0..len).map(|_| rng.next() as u8).collect(),
                _ => (0..len)
                    .map(|i| if (i / 300) % 2 == 0 { 0 } else { b'x' })
                    .collect(),
            };
            let src = compress(&input, case % 2 == 0);
            let mut dst = vec![0xAAu8; 4 * CHUNK_SIZE];
            decompress(&src, &mut dst).unwrap();
            assert_eq!(&dst[..len], &input[..], "case {case}, {len} bytes");
            assert!(dst[len..].iter().all(|&b| b == 0), "case {case}: padding");
        }
    }

    #[test]
    fn a_short_chunk_is_padded_to_its_4096_bytes() {
        // Two chunks: the first decodes to 5 bytes, the second to 3: the second starts at 4096.
        let mut src = compress(b"hello", false);
        src.extend(compress(b"abc", true));
        let mut dst = vec![0xAAu8; 2 * CHUNK_SIZE];
        decompress(&src, &mut dst).unwrap();
        assert_eq!(&dst[..5], b"hello");
        assert!(dst[5..CHUNK_SIZE].iter().all(|&b| b == 0));
        assert_eq!(&dst[CHUNK_SIZE..CHUNK_SIZE + 3], b"abc");
    }

    #[test]
    fn hostile_input_is_an_error_never_a_fault() {
        let mut dst = [0u8; 64];
        // Back-reference at the start of a chunk.
        assert!(decompress(&[0x02, 0xB0, 0x01, 0x00, 0x00], &mut dst).is_err());
        // Back-reference further back than the output so far.
        assert!(decompress(&[0x03, 0xB0, 0x02, b'a', 0x00, 0x50], &mut dst).is_err());
        // Chunk longer than the input.
        assert!(decompress(&[0xFF, 0xBF, 0x00], &mut dst).is_err());
        // Output larger than the unit: a stored chunk of 100 bytes into 64.
        let mut big = vec![0x63, 0x30];
        big.extend([7u8; 100]);
        assert!(decompress(&big, &mut dst).is_err());
        // More chunks than the unit holds: decoding ends where the unit is full.
        let two = compress(&[1u8; 2 * CHUNK_SIZE], false);
        let mut one = vec![0u8; CHUNK_SIZE];
        assert_eq!(decompress(&two, &mut one), Ok(CHUNK_SIZE));
        assert!(one.iter().all(|&b| b == 1));
        // A failed unit leaves no stale bytes behind.
        let mut d = [0xEEu8; 64];
        let _ = decompress(&[0x03, 0xB0, 0x02, b'a', 0x00, 0x50], &mut d);
        assert!(d[1..].iter().all(|&b| b == 0));
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut dst = vec![0u8; 4 * CHUNK_SIZE];
        for _ in 0..3000 {
            let len = (rng.next() % 600) as usize;
            let mut src: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            // Often a plausible header, so the chunk decoder itself is reached.
            if len >= 2 && rng.next().is_multiple_of(2) {
                let h = 0xB000 | ((len - 3) as u16 & 0x0FFF);
                src[..2].copy_from_slice(&h.to_le_bytes());
            }
            let dlen = (rng.next() % dst.len() as u64) as usize;
            if let Ok(n) = decompress(&src, &mut dst[..dlen]) {
                assert!(n <= dlen);
            }
        }
    }
}
