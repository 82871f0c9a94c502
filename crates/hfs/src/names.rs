//! Catalog names as a user types and pastes them.
//!
//! HFS+ keeps names as UTF-16 in its own decomposed form (TN1150, "Unicode Subtleties": canonical
//! decomposition, except in U+2000–U+2FFF, U+F900–U+FAFF and U+2F800–U+2FAFF), while a user types `café`
//! composed; so names are composed (NFC) here, around the characters of the ranges left alone (which NFC could
//! change: `Ω` U+2126 would become U+03A9). The catalog keeps the Finder's form of a name, where `:` of the shell's is `/`: swapped back.
//! Control characters (the private folders' NULs and carriage return) print as `^`, as The Sleuth Kit shows them.

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

/// A catalog name's UTF-16BE bytes as a path component.
pub fn decode(utf16be: &[u8]) -> String {
    if utf16be
        .chunks_exact(2)
        .all(|u| u[0] == 0 && u[1] >= 0x20 && u[1] < 0x7F)
    {
        return utf16be
            .chunks_exact(2)
            .map(|u| if u[1] == b'/' { ':' } else { char::from(u[1]) })
            .collect();
    }
    let units = utf16be
        .chunks_exact(2)
        .map(|u| u16::from_be_bytes([u[0], u[1]]));
    let s: String = char::decode_utf16(units)
        .map(|c| match c {
            Ok('/') => ':',
            Ok(c) if c.is_control() => '^',
            Ok(c) => c,
            Err(_) => char::REPLACEMENT_CHARACTER,
        })
        .collect();
    // Most names are composed as they are (ASCII and letters without marks): checked, not rebuilt.
    if is_nfc_quick(s.chars()) == IsNormalized::Yes {
        return s;
    }
    if !s.chars().any(left_decomposed) {
        return s.nfc().collect();
    }
    // Composed around the characters left alone, which pass as they are.
    let mut out = String::with_capacity(s.len());
    let mut run = String::new();
    for c in s.chars() {
        if left_decomposed(c) {
            out.extend(run.nfc());
            run.clear();
            out.push(c);
        } else {
            run.push(c);
        }
    }
    out.extend(run.nfc());
    out
}

/// The characters HFS+ does not decompose: composing a name that holds one could change it.
fn left_decomposed(c: char) -> bool {
    matches!(u32::from(c), 0x2000..=0x2FFF | 0xF900..=0xFAFF | 0x2F800..=0x2FAFF)
}

/// Whether a catalog name's UTF-16BE bytes are `name` (ASCII).
pub fn is(utf16be: &[u8], name: &[u8]) -> bool {
    utf16be.len() == 2 * name.len()
        && utf16be
            .chunks_exact(2)
            .zip(name)
            .all(|(u, &c)| u[0] == 0 && u[1] == c)
}

/// Whether a catalog name's UTF-16BE bytes start with `prefix` (ASCII).
pub fn starts_with(utf16be: &[u8], prefix: &[u8]) -> bool {
    utf16be.len() >= 2 * prefix.len() && is(&utf16be[..2 * prefix.len()], prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn be(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(|u| u.to_be_bytes()).collect()
    }

    #[test]
    fn names_are_composed_as_typed() {
        assert_eq!(decode(&be("cafe\u{301}.txt")), "café.txt");
        assert_eq!(decode(&be("U\u{308}ni")), "Üni");
        assert_eq!(decode(&be("plain.txt")), "plain.txt");
        // A Finder `/` is the shell's `:`.
        assert_eq!(decode(&be("a/b")), "a:b");
        assert_eq!(
            decode(&be("\0\0\0\0HFS+ Private Data")),
            "^^^^HFS+ Private Data"
        );
        assert_eq!(
            decode(&be(".HFS+ Private Directory Data\r")),
            ".HFS+ Private Directory Data^"
        );
        // A CJK compatibility ideograph, which NFC would replace: the name stays as stored.
        assert_eq!(decode(&be("\u{F900}e\u{301}")), "\u{F900}é");
        assert_eq!(decode(&be("\u{2126}A\u{30A} \u{20AC}")), "\u{2126}Å €");
        assert!(is(&be("iNode1"), b"iNode1"));
        assert!(!is(&be("iNode1"), b"iNode"));
    }
}
