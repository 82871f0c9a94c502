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

fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes hex digits (either case) into `out`, which must be exactly half as long; `None` on any other byte.
pub(crate) fn decode_into(hex: &[u8], out: &mut [u8]) -> Option<()> {
    if hex.len() != out.len() * 2 {
        return None;
    }
    for (pair, o) in hex.chunks_exact(2).zip(out.iter_mut()) {
        *o = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(())
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
