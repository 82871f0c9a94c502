//! `content:TEXT` finds TEXT written as UTF-16LE without a byte-order mark too (Windows' own text: `.reg` exports,
//! PowerShell's redirected output, many logs), as Everything's `utf16content:` does: after the UTF-8 search (which
//! reads a file with a BOM by it) finds nothing, the raw bytes are searched for the text's UTF-16LE code units.
//! Letters match either case unless the term is case-sensitive; `wholeword:` is checked at each hit's ends.

use std::io::Read;

use regex::bytes::{Regex, RegexBuilder};

/// The UTF-16LE form of one literal text, to find in raw bytes.
pub struct Utf16Probe {
    re: Regex,
    whole_word: bool,
    /// Bytes of the pattern at most: what a block keeps of the one before, so that no hit is cut.
    len: usize,
}

impl Utf16Probe {
    /// The probe for `text`; `None` for an empty text.
    pub fn new(text: &str, case_sensitive: bool, whole_word: bool) -> Option<Utf16Probe> {
        if text.is_empty() {
            return None;
        }
        let mut pattern = String::new();
        for c in text.chars() {
            let forms: Vec<char> = if case_sensitive {
                vec![c]
            } else {
                // The other case when it is one character (`ß` has no one-letter upper case).
                let mut f = vec![c];
                for other in [
                    c.to_lowercase().collect::<Vec<_>>(),
                    c.to_uppercase().collect(),
                ] {
                    if let [one] = other[..] {
                        f.push(one);
                    }
                }
                f.sort_unstable();
                f.dedup();
                f
            };
            let alternatives: Vec<String> = forms.iter().map(|&f| units(f)).collect();
            pattern += &format!("(?:{})", alternatives.join("|"));
        }
        let re = RegexBuilder::new(&pattern)
            .unicode(false)
            .size_limit(1 << 20)
            .build()
            .ok()?;
        Some(Utf16Probe {
            re,
            whole_word,
            len: text.chars().map(|c| 2 * c.len_utf16()).sum(),
        })
    }

    /// Whether `bytes` hold the text.
    pub fn is_match(&self, bytes: &[u8]) -> bool {
        self.re.find_iter(bytes).any(|m| {
            !self.whole_word
                || (!word_before(&bytes[..m.start()]) && !word_after(&bytes[m.end()..]))
        })
    }

    /// Whether what `r` reads holds the text, read in blocks that overlap by the pattern's length.
    pub fn is_match_reader(&self, mut r: impl Read) -> std::io::Result<bool> {
        const BLOCK: usize = 1 << 20;
        let keep = self.len + 2;
        let mut buf = vec![0u8; BLOCK + keep];
        let mut carried = 0;
        loop {
            let n = r.read(&mut buf[carried..])?;
            if n == 0 {
                return Ok(false);
            }
            let end = carried + n;
            if self.is_match(&buf[..end]) {
                return Ok(true);
            }
            let from = end.saturating_sub(keep);
            buf.copy_within(from..end, 0);
            carried = end - from;
        }
    }
}

/// `\xLO\xHI` for each UTF-16 code unit of `c`.
fn units(c: char) -> String {
    let mut u = [0u16; 2];
    c.encode_utf16(&mut u)
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .map(|b| format!("\\x{b:02X}"))
        .collect()
}

/// Whether the UTF-16LE code unit just before the end of `before` is a letter, digit or `_`.
fn word_before(before: &[u8]) -> bool {
    before.len() >= 2
        && is_word(u16::from_le_bytes([
            before[before.len() - 2],
            before[before.len() - 1],
        ]))
}

/// Whether the UTF-16LE code unit at the start of `after` is a letter, digit or `_`.
fn word_after(after: &[u8]) -> bool {
    after.len() >= 2 && is_word(u16::from_le_bytes([after[0], after[1]]))
}

fn is_word(unit: u16) -> bool {
    char::from_u32(u32::from(unit)).is_some_and(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect()
    }

    #[test]
    fn finds_the_text_in_utf16le_bytes() {
        let p = Utf16Probe::new("quartz", false, false).unwrap();
        assert!(p.is_match(&le("the Quartz clock")));
        assert!(!p.is_match(b"quartz in UTF-8 is the other search's"));
        let p = Utf16Probe::new("Quartz", true, false).unwrap();
        assert!(!p.is_match(&le("the quartz clock")));
        let p = Utf16Probe::new("zürich", false, false).unwrap();
        assert!(p.is_match(&le("ZÜRICH")));
        let p = Utf16Probe::new("art", false, true).unwrap();
        assert!(!p.is_match(&le("quartz")));
        assert!(p.is_match(&le("an art.")));
    }

    #[test]
    fn a_hit_across_blocks_is_found() {
        let p = Utf16Probe::new("needle", false, false).unwrap();
        let mut bytes = vec![b'x'; (1 << 20) - 3];
        bytes.extend(le("needle"));
        assert!(p.is_match_reader(&bytes[..]).unwrap());
        assert!(!p.is_match_reader(&bytes[..bytes.len() - 2]).unwrap());
    }
}
