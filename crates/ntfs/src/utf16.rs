//! UTF-16LE names as NTFS stores them. Names are not guaranteed to be valid UTF-16 (unpaired surrogates occur),
//! so decoding is lossy: such code units become U+FFFD, as the Windows API's UTF-8 conversion does.

/// Appends the UTF-16LE bytes `raw` (an odd trailing byte is ignored) to `out` as UTF-8.
pub fn decode_into(raw: &[u8], out: &mut Vec<u8>) {
    // Fast path: most names are ASCII, a copy of every other byte. Test and narrow four units at a time; fall
    // back to full decoding at the first unit that is not ASCII.
    const NOT_ASCII: u64 = 0xFF80_FF80_FF80_FF80;
    let start = out.len();
    out.reserve(raw.len() / 2);
    let mut quads = raw.chunks_exact(8);
    let mut ascii = true;
    for q in quads.by_ref() {
        let w = u64::from_le_bytes([q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]]);
        if w & NOT_ASCII != 0 {
            ascii = false;
            break;
        }
        out.extend_from_slice(&[w as u8, (w >> 16) as u8, (w >> 32) as u8, (w >> 48) as u8]);
    }
    if ascii {
        for c in quads.remainder().chunks_exact(2) {
            if c[1] != 0 || c[0] >= 0x80 {
                ascii = false;
                break;
            }
            out.push(c[0]);
        }
    }
    if ascii {
        return;
    }
    out.truncate(start);
    let units = raw
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]));
    let mut buf = [0u8; 4];
    for ch in char::decode_utf16(units) {
        let ch = ch.unwrap_or(char::REPLACEMENT_CHARACTER);
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
    }
}

/// Decodes UTF-16LE bytes to a `String` (lossy, see the module docs).
pub fn decode(raw: &[u8]) -> String {
    let mut v = Vec::with_capacity(raw.len() / 2);
    decode_into(raw, &mut v);
    // decode_into only ever appends whole UTF-8 sequences.
    String::from_utf8(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect()
    }

    #[test]
    fn ascii_and_unicode_round_trip() {
        for s in ["$MFT", "これはストレステストと同じです.txt", "áé 😀 עברית"]
        {
            assert_eq!(decode(&enc(s)), s);
        }
    }

    #[test]
    fn unpaired_surrogate_becomes_replacement() {
        let raw = [0x41, 0x00, 0x00, 0xD8, 0x42, 0x00];
        assert_eq!(decode(&raw), "A\u{FFFD}B");
    }
}
