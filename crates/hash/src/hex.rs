//! Hex digits both ways: lowercase out (what hashdeep and coreutils print), either case in.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends the lowercase hex of `bytes` to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[(b >> 4) as usize]);
        out.push(DIGITS[(b & 15) as usize]);
    }
}

/// The lowercase hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    encode_into(bytes, &mut out);
    // Only ASCII digits were pushed.
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// Each byte's value as a hex digit (either case), or 0xFF: one load per digit where hash lists of tens of
/// millions of lines are read.
pub(crate) const VALUE: [u8; 256] = {
    let mut t = [0xFF; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Decodes hex digits from the start of `text` into `out` until `out` is full or a pair is not two digits;
/// how many digits were decoded (always even).
pub(crate) fn decode_prefix(text: &[u8], out: &mut [u8]) -> usize {
    let mut n = 0;
    for (pair, o) in text.chunks_exact(2).zip(out.iter_mut()) {
        let (hi, lo) = (VALUE[pair[0] as usize], VALUE[pair[1] as usize]);
        if (hi | lo) > 15 {
            break;
        }
        *o = (hi << 4) | lo;
        n += 2;
    }
    n
}

/// Decodes hex digits (either case) into `out`, which must be exactly half as long; `None` on any other byte.
pub(crate) fn decode_into(hex: &[u8], out: &mut [u8]) -> Option<()> {
    (hex.len() == out.len() * 2 && decode_prefix(hex, out) == hex.len()).then_some(())
}

/// Decodes a whole string of hex digits (either case); `None` when it has an odd length or another character.
pub fn decode(hex: &str) -> Option<Vec<u8>> {
    let hex = hex.as_bytes();
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let mut out = vec![0; hex.len() / 2];
    decode_into(hex, &mut out)?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let bytes: Vec<u8> = (0..=255).collect();
        let hex = encode(&bytes);
        assert_eq!(&hex[..8], "00010203");
        assert_eq!(&hex[hex.len() - 4..], "feff");
        assert_eq!(decode(&hex).unwrap(), bytes);
        assert_eq!(decode(&hex.to_uppercase()).unwrap(), bytes);
    }

    #[test]
    fn rejects_odd_lengths_and_other_characters() {
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("zz"), None);
        assert_eq!(decode(" a"), None);
        assert_eq!(decode("").unwrap(), Vec::<u8>::new());
    }
}
