//! Names: 8.3 short names (an OEM code page, 437 unless told, and the NT lower-case flags) and VFAT long names
//! (UTF-16 pieces checked for sequence and against the short entry's checksum).

/// Each code page's upper half (0x80..=0xFF), generated from Python's codecs (`bytes(range(0x80, 0x100))
/// .decode('cp850')`).
const CP437_HIGH: [char; 128] = [
    'Ç', 'ü', 'é', 'â', 'ä', 'à', 'å', 'ç', 'ê', 'ë', 'è', 'ï', 'î', 'ì', 'Ä', 'Å', //
    'É', 'æ', 'Æ', 'ô', 'ö', 'ò', 'û', 'ù', 'ÿ', 'Ö', 'Ü', '¢', '£', '¥', '₧', 'ƒ', //
    'á', 'í', 'ó', 'ú', 'ñ', 'Ñ', 'ª', 'º', '¿', '⌐', '¬', '½', '¼', '¡', '«', '»', //
    '░', '▒', '▓', '│', '┤', '╡', '╢', '╖', '╕', '╣', '║', '╗', '╝', '╜', '╛', '┐', //
    '└', '┴', '┬', '├', '─', '┼', '╞', '╟', '╚', '╔', '╩', '╦', '╠', '═', '╬', '╧', //
    '╨', '╤', '╥', '╙', '╘', '╒', '╓', '╫', '╪', '┘', '┌', '█', '▄', '▌', '▐', '▀', //
    'α', 'ß', 'Γ', 'π', 'Σ', 'σ', 'µ', 'τ', 'Φ', 'Θ', 'Ω', 'δ', '∞', 'φ', 'ε', '∩', //
    '≡', '±', '≥', '≤', '⌠', '⌡', '÷', '≈', '°', '∙', '·', '√', 'ⁿ', '²', '■', '\u{a0}',
];
const CP850_HIGH: [char; 128] = [
    'Ç', 'ü', 'é', 'â', 'ä', 'à', 'å', 'ç', 'ê', 'ë', 'è', 'ï', 'î', 'ì', 'Ä', 'Å', //
    'É', 'æ', 'Æ', 'ô', 'ö', 'ò', 'û', 'ù', 'ÿ', 'Ö', 'Ü', 'ø', '£', 'Ø', '×', 'ƒ', //
    'á', 'í', 'ó', 'ú', 'ñ', 'Ñ', 'ª', 'º', '¿', '®', '¬', '½', '¼', '¡', '«', '»', //
    '░', '▒', '▓', '│', '┤', 'Á', 'Â', 'À', '©', '╣', '║', '╗', '╝', '¢', '¥', '┐', //
    '└', '┴', '┬', '├', '─', '┼', 'ã', 'Ã', '╚', '╔', '╩', '╦', '╠', '═', '╬', '¤', //
    'ð', 'Ð', 'Ê', 'Ë', 'È', 'ı', 'Í', 'Î', 'Ï', '┘', '┌', '█', '▄', '¦', 'Ì', '▀', //
    'Ó', 'ß', 'Ô', 'Ò', 'õ', 'Õ', 'µ', 'þ', 'Þ', 'Ú', 'Û', 'Ù', 'ý', 'Ý', '¯', '´', //
    '\u{ad}', '±', '‗', '¾', '¶', '§', '÷', '¸', '°', '¨', '·', '¹', '³', '²', '■', '\u{a0}',
];
const CP852_HIGH: [char; 128] = [
    'Ç', 'ü', 'é', 'â', 'ä', 'ů', 'ć', 'ç', 'ł', 'ë', 'Ő', 'ő', 'î', 'Ź', 'Ä', 'Ć', //
    'É', 'Ĺ', 'ĺ', 'ô', 'ö', 'Ľ', 'ľ', 'Ś', 'ś', 'Ö', 'Ü', 'Ť', 'ť', 'Ł', '×', 'č', //
    'á', 'í', 'ó', 'ú', 'Ą', 'ą', 'Ž', 'ž', 'Ę', 'ę', '¬', 'ź', 'Č', 'ş', '«', '»', //
    '░', '▒', '▓', '│', '┤', 'Á', 'Â', 'Ě', 'Ş', '╣', '║', '╗', '╝', 'Ż', 'ż', '┐', //
    '└', '┴', '┬', '├', '─', '┼', 'Ă', 'ă', '╚', '╔', '╩', '╦', '╠', '═', '╬', '¤', //
    'đ', 'Đ', 'Ď', 'Ë', 'ď', 'Ň', 'Í', 'Î', 'ě', '┘', '┌', '█', '▄', 'Ţ', 'Ů', '▀', //
    'Ó', 'ß', 'Ô', 'Ń', 'ń', 'ň', 'Š', 'š', 'Ŕ', 'Ú', 'ŕ', 'Ű', 'ý', 'Ý', 'ţ', '´', //
    '\u{ad}', '˝', '˛', 'ˇ', '˘', '§', '÷', '¸', '°', '¨', '˙', 'ű', 'Ř', 'ř', '■', '\u{a0}',
];
const CP866_HIGH: [char; 128] = [
    'А', 'Б', 'В', 'Г', 'Д', 'Е', 'Ж', 'З', 'И', 'Й', 'К', 'Л', 'М', 'Н', 'О', 'П', //
    'Р', 'С', 'Т', 'У', 'Ф', 'Х', 'Ц', 'Ч', 'Ш', 'Щ', 'Ъ', 'Ы', 'Ь', 'Э', 'Ю', 'Я', //
    'а', 'б', 'в', 'г', 'д', 'е', 'ж', 'з', 'и', 'й', 'к', 'л', 'м', 'н', 'о', 'п', //
    '░', '▒', '▓', '│', '┤', '╡', '╢', '╖', '╕', '╣', '║', '╗', '╝', '╜', '╛', '┐', //
    '└', '┴', '┬', '├', '─', '┼', '╞', '╟', '╚', '╔', '╩', '╦', '╠', '═', '╬', '╧', //
    '╨', '╤', '╥', '╙', '╘', '╒', '╓', '╫', '╪', '┘', '┌', '█', '▄', '▌', '▐', '▀', //
    'р', 'с', 'т', 'у', 'ф', 'х', 'ц', 'ч', 'ш', 'щ', 'ъ', 'ы', 'ь', 'э', 'ю', 'я', //
    'Ё', 'ё', 'Є', 'є', 'Ї', 'ї', 'Ў', 'ў', '°', '∙', '·', '√', '№', '¤', '■', '\u{a0}',
];

/// Byte `b` of code page `cp` (one of [`uffs_fs::CODE_PAGES`]; any other reads as 437).
pub fn oem_char(cp: u16, b: u8) -> char {
    if b < 0x80 {
        return char::from(b);
    }
    let high = match cp {
        850 => &CP850_HIGH,
        852 => &CP852_HIGH,
        866 => &CP866_HIGH,
        _ => &CP437_HIGH,
    };
    high[usize::from(b - 0x80)]
}

/// Bytes of code page 437 as text (a boot sector's OEM name).
pub(super) fn cp437(bytes: &[u8]) -> String {
    oem(437, bytes)
}

/// Bytes of code page `cp` as text.
pub(super) fn oem(cp: u16, bytes: &[u8]) -> String {
    bytes.iter().map(|&b| oem_char(cp, b)).collect()
}

/// The 8.3 name of a short entry: base, then "." and the extension when there is one, trailing spaces cut,
/// the NT lower-case flags (byte 12: 0x08 base, 0x10 extension) applied to A-Z as Windows does. A first byte of
/// 0x05 stands for 0xE5; a deleted entry's lost first character (0xE5) shows as `_`, as TSK shows it.
pub(super) fn short_name(d: &[u8; 32], cp: u16) -> String {
    let mut s = String::with_capacity(12);
    let flags = d[12];
    let part = |s: &mut String, bytes: &[u8], lower: bool, first_special: bool| {
        let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |p| p + 1);
        for (i, &b) in bytes[..end].iter().enumerate() {
            let c = match b {
                0xE5 if i == 0 && first_special => '_',
                0x05 if i == 0 && first_special => oem_char(cp, 0xE5),
                b'A'..=b'Z' if lower => char::from(b + 32),
                _ => oem_char(cp, b),
            };
            s.push(c);
        }
    };
    part(&mut s, &d[0..8], flags & 0x08 != 0, true);
    if d[8..11].iter().any(|&b| b != b' ') {
        s.push('.');
        part(&mut s, &d[8..11], flags & 0x10 != 0, false);
    }
    s
}

/// The checksum a long name's entries keep of their short entry's 11 name bytes.
pub(super) fn checksum(name: &[u8]) -> u8 {
    name.iter().fold(0u8, |sum, &b| {
        ((sum & 1) << 7).wrapping_add(sum >> 1).wrapping_add(b)
    })
}

/// Characters of one long-name entry.
type Piece = [u16; 13];

/// The long-name entries met since the last short entry.
#[derive(Default)]
pub(super) struct Lfn {
    /// In the order met on disk (the name's last piece first).
    pieces: Vec<Piece>,
    checksum: u8,
    /// Pieces of a deleted long name (their sequence numbers are lost to the 0xE5 mark).
    deleted: bool,
    /// The sequence number the next piece must have.
    next_seq: u8,
    /// The piece numbered 1 has been met.
    complete: bool,
}

/// What the long-name entries before a short entry give it.
pub(super) enum Long {
    None,
    Name(String),
    /// Long-name entries whose checksum or sequence does not fit the short entry.
    Mismatch,
}

impl Lfn {
    pub(super) fn clear(&mut self) {
        self.pieces.clear();
        self.complete = false;
        self.deleted = false;
    }

    fn piece(d: &[u8; 32]) -> Piece {
        let mut p = [0u16; 13];
        let offsets = [1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30];
        for (slot, o) in p.iter_mut().zip(offsets) {
            *slot = u16::from_le_bytes([d[o], d[o + 1]]);
        }
        p
    }

    /// Takes one long-name entry; an error names what was wrong with the sequence (the pieces so far dropped).
    pub(super) fn push(&mut self, d: &[u8; 32]) -> Result<(), String> {
        let seq = d[0];
        let sum = d[13];
        if seq == 0xE5 {
            if !(self.deleted && !self.pieces.is_empty() && sum == self.checksum) {
                self.clear();
                self.deleted = true;
                self.checksum = sum;
            }
            if self.pieces.len() >= 20 {
                self.clear();
                return Ok(());
            }
            self.pieces.push(Self::piece(d));
            return Ok(());
        }
        if seq & 0x40 != 0 {
            let orphan = !self.pieces.is_empty() && !self.deleted;
            self.clear();
            let n = seq & 0x1F;
            if n == 0 || n > 20 || seq & 0xA0 != 0 {
                return Err(format!("a long-name entry with sequence number {seq:#04x}"));
            }
            self.checksum = sum;
            self.next_seq = n - 1;
            self.complete = n == 1;
            self.pieces.push(Self::piece(d));
            if orphan {
                return Err("long-name entries with no short entry after them".to_string());
            }
            return Ok(());
        }
        if !self.pieces.is_empty()
            && !self.deleted
            && !self.complete
            && seq == self.next_seq
            && sum == self.checksum
        {
            self.pieces.push(Self::piece(d));
            self.next_seq -= 1;
            self.complete = seq == 1;
            return Ok(());
        }
        self.clear();
        Err(format!(
            "a long-name entry out of sequence (number {seq:#04x})"
        ))
    }

    /// The long name for the short entry `d` (the pieces are used up).
    pub(super) fn take(&mut self, d: &[u8; 32]) -> Long {
        if self.pieces.is_empty() {
            return Long::None;
        }
        let fits = if d[0] == 0xE5 {
            // The short name's first byte is lost: any byte that makes the checksum fit will do.
            let mut name = [0u8; 11];
            name.copy_from_slice(&d[0..11]);
            (0..=255u8).any(|b| {
                name[0] = b;
                checksum(&name) == self.checksum
            })
        } else {
            (self.deleted || self.complete) && checksum(&d[0..11]) == self.checksum
        };
        let out = if fits {
            let units = self
                .pieces
                .iter()
                .rev()
                .flat_map(|p| p.iter().copied())
                .take_while(|&u| u != 0);
            let name: String = char::decode_utf16(units)
                .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect();
            if name.is_empty() {
                Long::None
            } else {
                Long::Name(name)
            }
        } else if self.deleted || d[0] == 0xE5 {
            // Leftovers of some older name: no warning.
            Long::None
        } else {
            Long::Mismatch
        };
        self.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        let mut d = [0u8; 32];
        d[0..11].copy_from_slice(b"README  TXT");
        assert_eq!(short_name(&d, 437), "README.TXT");
        d[12] = 0x08;
        assert_eq!(short_name(&d, 437), "readme.TXT");
        d[12] = 0x18;
        assert_eq!(short_name(&d, 437), "readme.txt");
        d[0..11].copy_from_slice(b"\x05BC        ");
        assert_eq!(short_name(&d, 437), "σbc");
        d[0] = 0xE5;
        assert_eq!(short_name(&d, 437), "_bc");
        d[0..11].copy_from_slice(b"\x80\x9a      \xe1  ");
        d[12] = 0;
        assert_eq!(short_name(&d, 437), "ÇÜ.ß");
        // mtools (code page 850) writes `Jóga (Relax) mix.mp3`'s alias as JÓGA(R~1.MP3: Ó is 0xE0, α in 437.
        d[0..11].copy_from_slice(b"J\xe0GA(R~1MP3");
        assert_eq!(short_name(&d, 850), "JÓGA(R~1.MP3");
        assert_eq!(short_name(&d, 437), "JαGA(R~1.MP3");
    }

    #[test]
    fn code_pages_are_one_to_one_and_agree_below_0x80() {
        for cp in uffs_fs::CODE_PAGES {
            let high: std::collections::BTreeSet<char> =
                (0x80..=0xFFu8).map(|b| oem_char(cp, b)).collect();
            assert_eq!(high.len(), 128, "{cp}");
            assert!(high.iter().all(|c| !c.is_ascii()), "{cp}");
            assert_eq!(oem(cp, b"A~1.TXT"), "A~1.TXT");
        }
        // A letter of each, as Python's codecs and the code pages' charts give them.
        assert_eq!(oem_char(850, 0x9B), 'ø');
        assert_eq!(oem_char(852, 0x85), 'ů');
        assert_eq!(oem_char(866, 0x80), 'А');
        assert_eq!(oem_char(437, 0xE1), 'ß');
    }

    #[test]
    fn checksum_known() {
        // "FOO     BAR" by the fatgen103 algorithm, computed by hand once and pinned.
        let s = checksum(b"FOO     BAR");
        let mut sum = 0u8;
        for &b in b"FOO     BAR" {
            sum = (if sum & 1 == 1 { 0x80u8 } else { 0 })
                .wrapping_add(sum >> 1)
                .wrapping_add(b);
        }
        assert_eq!(s, sum);
    }
}
