//! Is a file's head text, and in which encoding: the rules of file(1)'s `looks_ascii`/`looks_utf8`/
//! `looks_latin1`/`looks_ucs16`, plus UTF-16LE without a byte order mark (Windows writes it; file(1) calls it
//! data).

/// How a text file's bytes encode its characters, as far as its head shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextEncoding {
    /// UTF-8, ASCII included, without a byte order mark.
    Utf8,
    /// UTF-8 after the byte order mark `EF BB BF`.
    Utf8Bom,
    /// UTF-16 little-endian after the byte order mark `FF FE`.
    Utf16LeBom,
    /// UTF-16 big-endian after the byte order mark `FE FF`.
    Utf16BeBom,
    /// UTF-16 little-endian without a byte order mark: mostly `x\0` pairs (see [`text_encoding`]).
    Utf16Le,
    /// An 8-bit encoding that is not UTF-8 (ISO-8859-x, Windows-125x, OEM code pages).
    EightBit,
}

/// Whether `b` may appear in text: file(1)'s `text_chars` table, where control characters other than
/// BEL, BS, TAB, LF, VT, FF, CR and ESC mark a file as binary (bytes 0x80-0xFF are left to the encoding).
const fn is_text_byte(b: u8) -> bool {
    !matches!(b, 0x00..=0x06 | 0x0E..=0x1A | 0x1C..=0x1F | 0x7F)
}

const TEXT_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = is_text_byte(b as u8);
        b += 1;
    }
    table
};

/// The shortest head the UTF-16LE heuristic judges: fewer code units are too few to tell text from a table of
/// small integers.
const UTF16_MIN_UNITS: usize = 4;

/// Whether every byte of `head` may appear in 8-bit text (UTF-8 and the single-byte code pages alike).
pub(crate) fn is_clean_text(head: &[u8]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = head.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        // Eight bytes at a time: any byte below 0x20 (the high bit of `x` excludes 0x80-0xFF), or 0x7F? Only
        // then look at the bytes one by one, as text has a line feed every few dozen bytes.
        let below_space = x.wrapping_sub(0x20 * LOW) & !x & HIGH;
        let del = (x ^ (0x7F * LOW)).wrapping_sub(LOW) & !(x ^ (0x7F * LOW)) & HIGH;
        if (below_space | del) != 0 && !word.iter().all(|&b| TEXT_BYTES[b as usize]) {
            return false;
        }
    }
    words.remainder().iter().all(|&b| TEXT_BYTES[b as usize])
}

/// Whether `head` is text in any encoding [`text_encoding`] knows, without telling which (cheaper: no UTF-8
/// validation).
pub(crate) fn is_text(head: &[u8]) -> bool {
    if head.is_empty() {
        return false;
    }
    if let Some(rest) = head.strip_prefix(b"\xFF\xFE") {
        return utf16_is_text(rest, u16::from_le_bytes);
    }
    if let Some(rest) = head.strip_prefix(b"\xFE\xFF") {
        return utf16_is_text(rest, u16::from_be_bytes);
    }
    // A UTF-8 byte order mark is text bytes itself.
    is_clean_text(head) || looks_utf16le(head)
}

/// The text encoding of a file whose first bytes are `head`, or `None` when they are not text (or `head` is
/// empty).
///
/// - A byte order mark decides: `EF BB BF` UTF-8, `FF FE` UTF-16LE, `FE FF` UTF-16BE (the UTF-16 forms need
///   every code unit below 0x80 to be a text character, as file(1) asks).
/// - Otherwise bytes that are all text characters (no NUL, no control characters but BEL, BS, TAB, LF, VT, FF,
///   CR, ESC) are UTF-8 when they decode as UTF-8 (a sequence cut by the end of the head is fine), else 8-bit.
/// - Otherwise UTF-16LE without a mark when at least four code units are there, every unit below 0x80 is a
///   text character (so no NUL unit), and at least three quarters of the units have a zero high byte: the
///   `x\0` pairs of Latin text. file(1) says `data` for these.
pub fn text_encoding(head: &[u8]) -> Option<TextEncoding> {
    if head.is_empty() {
        return None;
    }
    if let Some(rest) = head.strip_prefix(b"\xEF\xBB\xBF") {
        return is_clean_text(rest).then_some(TextEncoding::Utf8Bom);
    }
    if let Some(rest) = head.strip_prefix(b"\xFF\xFE") {
        return utf16_is_text(rest, u16::from_le_bytes).then_some(TextEncoding::Utf16LeBom);
    }
    if let Some(rest) = head.strip_prefix(b"\xFE\xFF") {
        return utf16_is_text(rest, u16::from_be_bytes).then_some(TextEncoding::Utf16BeBom);
    }
    if is_clean_text(head) {
        return Some(if is_utf8(head) {
            TextEncoding::Utf8
        } else {
            TextEncoding::EightBit
        });
    }
    looks_utf16le(head).then_some(TextEncoding::Utf16Le)
}

/// Valid UTF-8, allowing a sequence cut short by the end of the head.
fn is_utf8(head: &[u8]) -> bool {
    match std::str::from_utf8(head) {
        Ok(_) => true,
        // `error_len() == None`: the input ended inside a sequence, which a head cut at HEAD_BYTES may do.
        Err(e) => e.error_len().is_none(),
    }
}

fn units(bytes: &[u8], decode: fn([u8; 2]) -> u16) -> impl Iterator<Item = u16> + '_ {
    bytes.chunks_exact(2).map(move |p| decode([p[0], p[1]]))
}

fn utf16_is_text(bytes: &[u8], decode: fn([u8; 2]) -> u16) -> bool {
    units(bytes, decode).all(|u| u >= 0x80 || TEXT_BYTES[u as usize])
}

fn looks_utf16le(head: &[u8]) -> bool {
    let n = head.len() / 2;
    if n < UTF16_MIN_UNITS {
        return false;
    }
    let mut low_units = 0usize;
    for u in units(head, u16::from_le_bytes) {
        if u < 0x80 && !TEXT_BYTES[u as usize] {
            return false;
        }
        if u < 0x100 {
            low_units += 1;
        }
    }
    low_units * 4 >= n * 3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16le(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    #[test]
    fn utf8_ascii_and_8bit() {
        assert_eq!(
            text_encoding(b"hello\r\n\tworld\x1b[0m"),
            Some(TextEncoding::Utf8)
        );
        assert_eq!(
            text_encoding("h\u{e9}llo \u{4e16}".as_bytes()),
            Some(TextEncoding::Utf8)
        );
        assert_eq!(
            text_encoding(b"h\xe9llo w\xf6rld"),
            Some(TextEncoding::EightBit)
        );
        // A head cut inside a three-byte sequence is still UTF-8.
        assert_eq!(text_encoding(b"abc\xe4\xb8"), Some(TextEncoding::Utf8));
        assert_eq!(
            text_encoding(b"\xEF\xBB\xBFhi"),
            Some(TextEncoding::Utf8Bom)
        );
    }

    #[test]
    fn word_at_a_time_check_agrees_with_the_table() {
        for b in 0..=255u8 {
            for at in 0..16 {
                let mut head = *b"all text here, sixteen+";
                head[at] = b;
                assert_eq!(is_clean_text(&head), is_text_byte(b), "byte {b:#x} at {at}");
            }
        }
    }

    #[test]
    fn is_text_agrees_with_text_encoding() {
        let samples: [&[u8]; 8] = [
            b"",
            b"hi",
            b"h\xe9",
            b"\xFF\xFEh\0",
            b"\xFE\xFF\0h",
            b"h\0i\0!\0?\0",
            b"a\0b",
            b"\xEF\xBB\xBFx",
        ];
        for s in samples {
            assert_eq!(is_text(s), text_encoding(s).is_some(), "{s:?}");
        }
    }

    #[test]
    fn control_bytes_are_binary() {
        assert_eq!(text_encoding(b""), None);
        assert_eq!(text_encoding(b"abc\0def"), None);
        assert_eq!(text_encoding(b"abc\x01"), None);
        assert_eq!(text_encoding(b"abc\x7f"), None);
        assert_eq!(text_encoding(b"\xEF\xBB\xBFa\0"), None);
    }

    #[test]
    fn utf16_with_and_without_bom() {
        let mut le = vec![0xFF, 0xFE];
        le.extend(utf16le("hello\r\n"));
        assert_eq!(text_encoding(&le), Some(TextEncoding::Utf16LeBom));
        let mut be = vec![0xFE, 0xFF];
        be.extend("hi \u{4e16}".encode_utf16().flat_map(u16::to_be_bytes));
        assert_eq!(text_encoding(&be), Some(TextEncoding::Utf16BeBom));
        assert_eq!(
            text_encoding(&utf16le("hello world")),
            Some(TextEncoding::Utf16Le)
        );
        // A few non-Latin characters among Latin ones are fine; mostly CJK without a mark is not guessed.
        assert_eq!(
            text_encoding(&utf16le("caf\u{e9} \u{4e16}\u{754c} ok")),
            Some(TextEncoding::Utf16Le)
        );
        assert_eq!(
            text_encoding(&utf16le("\u{4e16}\u{754c}\u{4e16}\u{754c}")),
            None
        );
        // Too short, a NUL unit, or a control character: not text.
        assert_eq!(text_encoding(&utf16le("hi")), None);
        assert_eq!(text_encoding(&utf16le("hello\0world")), None);
        assert_eq!(text_encoding(b"\x01\x00\x02\x00\x03\x00\x04\x00"), None);
        // With a mark, a control unit makes it binary.
        let mut bad = vec![0xFF, 0xFE];
        bad.extend(utf16le("a\u{1}"));
        assert_eq!(text_encoding(&bad), None);
    }
}
