//! Hash lists in text: md5sum/sha1sum/sha256sum lines (and their BSD `--tag` form), bare hex digests one a line,
//! and hashdeep files. Read line by line into a [`MemorySet`]; a line that is not a hash is counted and skipped.
//!
//! A hash list's algorithm is read from each digest's length (32 md5, 40 sha1, 64 sha256), or from a tag line's
//! tag (`MD5`, `SHA1`, `SHA256`, `XXH3`), so one file may mix them. XXH3 digests come only tagged, as
//! `xxhsum -H3` writes them: sixteen bare digits could as well be XXH64 (`xxh64sum`), which uffs does not compute. Blank lines and lines starting with `#` are skipped; a carriage return before the newline is
//! ignored. hashdeep files name their columns in their second line (`%%%% size,md5,sha256,filename`); their
//! comment lines start with `#` as hashdeep's reader has it, and a second header further down (files joined with
//! `cat`) starts new columns. Columns hashdeep has and uffs does not (tiger, whirlpool) are checked for hex and
//! left out.

use std::io::{self, BufRead};

use super::memory::MemorySet;
use super::{BadLine, LoadReport};
use crate::algo::Algo;
use crate::format::HASHDEEP_MAGIC;
use crate::hex;

/// The longest line read whole; a longer one is a bad line (and is never held in memory).
pub(crate) const MAX_LINE: usize = 64 * 1024;

/// How many bad lines a report describes; the rest are only counted.
const BAD_LINES_KEPT: usize = 10;

/// Reads the next line into `buf` (without its line ending). `Ok(None)` at the end; `Ok(Some(false))` for a line
/// longer than [`MAX_LINE`], whose bytes are skipped.
pub(crate) fn next_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
    buf.clear();
    let mut any = false;
    let mut too_long = false;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !too_long {
            if buf.len() + part.len() > MAX_LINE {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Some(!too_long))
}

/// Collects bad lines for a report.
pub(crate) struct Tally<'r> {
    pub(crate) report: &'r mut LoadReport,
}

impl Tally<'_> {
    pub(crate) fn bad(&mut self, line: u64, reason: impl Into<String>) {
        self.report.bad_lines += 1;
        if self.report.first_bad.len() < BAD_LINES_KEPT {
            self.report.first_bad.push(BadLine {
                line,
                reason: reason.into(),
            });
        }
    }
}

/// What one line of a hash list holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ListLine<'a> {
    /// Blank or a comment.
    Skip,
    /// A digest's hex digits, its algorithm told by their number.
    Hash(Algo, &'a [u8]),
    Bad(String),
}

/// Parses one line of an md5sum/sha1sum/sha256sum file (`HEX  NAME`, `HEX *NAME`, `\HEX  ESCAPED`), a BSD tag
/// line (`SHA256 (NAME) = HEX`), or a bare digest.
pub(crate) fn parse_list_line(line: &[u8]) -> ListLine<'_> {
    let t = line.trim_ascii();
    if t.is_empty() || t[0] == b'#' {
        return ListLine::Skip;
    }
    // coreutils starts a line with a backslash when it escaped the name; the digest follows either way.
    let body = t.strip_prefix(b"\\").unwrap_or(t);
    if let Some((tag, digits)) = bsd_tag(body) {
        return tagged_digest(tag, digits);
    }
    let end = body
        .iter()
        .position(|&c| c == b' ' || c == b'\t')
        .unwrap_or(body.len());
    untagged_digest(&body[..end])
}

/// A BSD tag line, `ALGO (NAME) = HEX`: the algorithm word and the digest.
fn bsd_tag(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let word = body.iter().position(|&c| c == b' ')?;
    let tag = &body[..word];
    if tag.is_empty()
        || !tag
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
    {
        return None;
    }
    if body.get(word + 1) != Some(&b'(') {
        return None;
    }
    let eq = body.windows(4).rposition(|w| w == b") = ")?;
    Some((tag, &body[eq + 4..]))
}

/// A tag line's digest: the tag names the algorithm (`MD5`, `SHA1`, `SHA256`, `XXH3`), the length must fit it.
fn tagged_digest<'a>(tag: &[u8], digits: &'a [u8]) -> ListLine<'a> {
    let tag = String::from_utf8_lossy(tag);
    let Ok(algo) = tag.parse::<Algo>() else {
        return ListLine::Bad(format!("{tag} is not an algorithm uffs computes"));
    };
    if digits.len() != algo.hex_len() || !digits.iter().all(u8::is_ascii_hexdigit) {
        return ListLine::Bad(format!("not a {algo} digest"));
    }
    ListLine::Hash(algo, digits)
}

/// A digest without a tag: its length says the algorithm. Sixteen digits are refused: xxh64sum writes them too,
/// and `xxhsum -H3` tags its XXH3 lines (`XXH3 (NAME) = HEX`) for that reason.
fn untagged_digest(hex_digits: &[u8]) -> ListLine<'_> {
    if !hex_digits.iter().all(u8::is_ascii_hexdigit) {
        return ListLine::Bad("not a digest: expected hex digits, then the name".to_string());
    }
    match Algo::from_hex_len(hex_digits.len()) {
        Some(Algo::Xxh3) => ListLine::Bad(
            "16 hex digits without a tag: XXH64 or XXH3? (XXH3 lines read `XXH3 (NAME) = HEX`, as xxhsum -H3 writes)"
                .to_string(),
        ),
        Some(a) => ListLine::Hash(a, hex_digits),
        None => ListLine::Bad(format!("{} hex digits is no digest's length", hex_digits.len())),
    }
}

/// The common line, `HEX  NAME` (or `\\HEX  NAME`, or bare `HEX`), decoded in one pass into `out`: its
/// algorithm, or `None` for any other line, which [`parse_list_line`] then reads (and explains if bad).
fn fast_digest(line: &[u8], out: &mut [u8; 32]) -> Option<Algo> {
    let body = line.strip_prefix(b"\\").unwrap_or(line);
    let n = hex::decode_prefix(body, out);
    match (body.get(n), Algo::from_hex_len(n)) {
        (_, Some(Algo::Xxh3)) => None,
        (None | Some(b' ' | b'\t'), algo) => algo,
        _ => None,
    }
}

/// Reads a hash list into `set`.
pub(crate) fn load_list(
    r: &mut impl BufRead,
    set: &mut MemorySet,
    report: &mut LoadReport,
) -> io::Result<()> {
    let mut buf = Vec::new();
    let mut bytes = [0u8; 32];
    let mut tally = Tally { report };
    let mut n = 0u64;
    while let Some(whole) = next_line(r, &mut buf)? {
        n += 1;
        let line = if n == 1 { strip_bom(&buf) } else { &buf[..] };
        if !whole {
            tally.bad(n, format!("longer than {MAX_LINE} bytes"));
            continue;
        }
        if let Some(a) = fast_digest(line, &mut bytes) {
            set.push(a, &bytes[..a.byte_len()]);
            tally.report.hashes += 1;
            continue;
        }
        match parse_list_line(line) {
            ListLine::Skip => {}
            ListLine::Bad(why) => tally.bad(n, why),
            ListLine::Hash(a, digits) => {
                let out = &mut bytes[..a.byte_len()];
                hex::decode_into(digits, out).expect("checked hex digits");
                set.push(a, out);
                tally.report.hashes += 1;
            }
        }
    }
    tally.report.lines = n;
    Ok(())
}

pub(crate) fn strip_bom(line: &[u8]) -> &[u8] {
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// Whether a first line is hashdeep's.
pub(crate) fn is_hashdeep_magic(first_line: &[u8]) -> bool {
    strip_bom(first_line).trim_ascii_end() == HASHDEEP_MAGIC.as_bytes()
}

/// A hashdeep column after the size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Column {
    Hash(Algo),
    /// A digest uffs does not compute (tiger, whirlpool): checked to be hex, not kept.
    Other,
    FileName,
}

/// Parses hashdeep's column line, `%%%% size,md5,sha256,filename` (hashdeep lower-cases the names and drops
/// dashes). `Err` names a column hashdeep itself would not know.
fn parse_columns(line: &[u8]) -> Result<Vec<Column>, String> {
    const PREFIX: &[u8] = b"%%%% size,";
    if line.len() < PREFIX.len() || !line[..PREFIX.len()].eq_ignore_ascii_case(PREFIX) {
        return Err("the second line is not hashdeep's column list (%%%% size,...)".to_string());
    }
    let mut cols = Vec::new();
    for name in line[PREFIX.len()..].split(|&c| c == b',') {
        let name: String = String::from_utf8_lossy(name)
            .chars()
            .filter(|&c| c != '-')
            .map(|c| c.to_ascii_lowercase())
            .collect();
        cols.push(match name.as_str() {
            "filename" => Column::FileName,
            "tiger" | "whirlpool" => Column::Other,
            other => match other.parse::<Algo>() {
                Ok(a) if a.in_hashdeep() => Column::Hash(a),
                _ => return Err(format!("hashdeep has no column {other:?}")),
            },
        });
    }
    Ok(cols)
}

/// Reads a hashdeep file (its first line already checked by [`is_hashdeep_magic`]) into `set`.
/// `Err(reason)` when its column line is not hashdeep's: the file is not one hashdeep would read either.
pub(crate) fn load_hashdeep(
    r: &mut impl BufRead,
    set: &mut MemorySet,
    report: &mut LoadReport,
) -> io::Result<Result<(), String>> {
    let mut buf = Vec::new();
    let mut bytes = [0u8; 32];
    let mut tally = Tally { report };
    let mut cols: Option<Vec<Column>> = None;
    let mut n = 0u64;
    let mut after_magic = false;
    while let Some(whole) = next_line(r, &mut buf)? {
        n += 1;
        if !whole {
            tally.bad(n, format!("longer than {MAX_LINE} bytes"));
            continue;
        }
        if n == 1 || is_hashdeep_magic(&buf) {
            after_magic = true;
            continue;
        }
        if after_magic {
            after_magic = false;
            match parse_columns(&buf) {
                Ok(c) => cols = Some(c),
                Err(why) if n == 2 => return Ok(Err(why)),
                Err(why) => {
                    // A bad header further down makes the lines under it unreadable: say so once each.
                    tally.bad(n, why);
                    cols = None;
                }
            }
            continue;
        }
        if buf.is_empty() || buf[0] == b'#' {
            continue;
        }
        let Some(cols) = &cols else {
            tally.bad(n, "under a column line that could not be read");
            continue;
        };
        match parse_hashdeep_line(&buf, cols) {
            Err(why) => tally.bad(n, why),
            Ok(hashes) => {
                for (a, digits) in hashes.into_iter().flatten() {
                    let out = &mut bytes[..a.byte_len()];
                    hex::decode_into(digits, out).expect("checked hex digits");
                    set.push(a, out);
                    tally.report.hashes += 1;
                }
            }
        }
    }
    tally.report.lines = n;
    if n < 2 {
        return Ok(Err(
            "the file ends before hashdeep's column line".to_string()
        ));
    }
    Ok(Ok(()))
}

/// The digests of one hashdeep line (at most one per algorithm; `None` for columns not kept), or why the line
/// is bad. Like hashdeep, everything from the file name column on is the name, commas included.
type LineDigests<'a> = [Option<(Algo, &'a [u8])>; 4];

fn parse_hashdeep_line<'a>(line: &'a [u8], cols: &[Column]) -> Result<LineDigests<'a>, String> {
    let mut fields = line.split(|&c| c == b',');
    let size = fields.next().unwrap_or_default();
    if size.is_empty() || !size.iter().all(u8::is_ascii_digit) {
        return Err("the first column is not a size".to_string());
    }
    let mut out: LineDigests<'a> = [None; 4];
    for col in cols {
        if *col == Column::FileName {
            break;
        }
        let Some(field) = fields.next() else {
            return Err(format!(
                "{} columns, the header names {}",
                line.split(|&c| c == b',').count(),
                cols.len() + 1
            ));
        };
        match col {
            Column::Hash(a) => {
                if field.len() != a.hex_len() || !field.iter().all(u8::is_ascii_hexdigit) {
                    return Err(format!("invalid {a} hash"));
                }
                out[*a as usize] = Some((*a, field));
            }
            Column::Other => {
                if !field.iter().all(u8::is_ascii_hexdigit) {
                    return Err("invalid hash".to_string());
                }
            }
            Column::FileName => unreachable!("left the loop above"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD5: &str = "d41d8cd98f00b204e9800998ecf8427e";
    const SHA1: &str = "da39a3ee5e6b4b0d3255bfef95601890afd80709";
    const SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn hash(line: &str) -> Option<(Algo, String)> {
        match parse_list_line(line.as_bytes()) {
            ListLine::Hash(a, d) => Some((a, String::from_utf8(d.to_vec()).unwrap())),
            _ => None,
        }
    }

    #[test]
    fn sum_lines_of_every_form() {
        assert_eq!(
            hash(&format!("{MD5}  a file.txt")),
            Some((Algo::Md5, MD5.into()))
        );
        assert_eq!(
            hash(&format!("{SHA1} *binary.exe")),
            Some((Algo::Sha1, SHA1.into()))
        );
        assert_eq!(
            hash(&format!("\\{SHA256}  back\\\\slash")),
            Some((Algo::Sha256, SHA256.into()))
        );
        assert_eq!(
            hash(&SHA256.to_uppercase()),
            Some((Algo::Sha256, SHA256.to_uppercase()))
        );
        assert_eq!(hash(&format!("  {MD5}\t")), Some((Algo::Md5, MD5.into())));
        assert_eq!(
            hash("XXH3 (x) = 2d06800538d394c2"),
            Some((Algo::Xxh3, "2d06800538d394c2".into()))
        );
        assert_eq!(hash("2d06800538d394c2  x"), None, "XXH64 or XXH3?");
        assert_eq!(hash("XXH64 (x) = 2d06800538d394c2"), None);
        assert_eq!(
            hash(&format!("SHA1 (x) = {SHA256}")),
            None,
            "the tag and the length disagree"
        );
        assert_eq!(
            hash(&format!("SHA256 (a (b) = c) = {SHA256}")),
            Some((Algo::Sha256, SHA256.into()))
        );
        assert_eq!(
            hash(&format!("\\MD5 (a\\\\b) = {MD5}")),
            Some((Algo::Md5, MD5.into()))
        );
    }

    #[test]
    fn the_fast_path_agrees_with_the_full_parser() {
        let lines = [
            format!("{MD5}  a"),
            format!("\\{SHA256}  a\\\\b"),
            format!("{SHA1}\tx"),
            SHA256.to_uppercase(),
            "2d06800538d394c2".to_string(),
            "XXH3 (x) = 2d06800538d394c2".to_string(),
            format!("{SHA256}0  too long"),
            format!("{}  odd", &MD5[..31]),
            format!("{MD5}*nospace"),
            format!("SHA256 (x) = {SHA256}"),
            "   ".to_string(),
            String::new(),
        ];
        for line in &lines {
            let mut out = [0u8; 32];
            let fast = fast_digest(line.as_bytes(), &mut out);
            match parse_list_line(line.as_bytes()) {
                ListLine::Hash(a, digits) => {
                    if let Some(f) = fast {
                        assert_eq!(f, a, "{line:?}");
                        assert_eq!(
                            hex::encode(&out[..a.byte_len()]),
                            String::from_utf8_lossy(digits).to_lowercase()
                        );
                    }
                }
                _ => assert_eq!(fast, None, "{line:?}"),
            }
        }
        let mut out = [0u8; 32];
        assert_eq!(
            fast_digest(format!("{MD5}  a").as_bytes(), &mut out),
            Some(Algo::Md5)
        );
    }

    #[test]
    fn comments_blanks_and_bad_lines() {
        assert_eq!(parse_list_line(b"# made by hand"), ListLine::Skip);
        assert_eq!(parse_list_line(b"   "), ListLine::Skip);
        assert!(
            matches!(parse_list_line(b"d41d8cd98f00b204e9800998ecf8427  short"), ListLine::Bad(w) if w.contains("31 hex"))
        );
        assert!(matches!(parse_list_line(b"hello world"), ListLine::Bad(_)));
        assert!(matches!(
            parse_list_line(b"%%%% size,md5,filename"),
            ListLine::Bad(_)
        ));
    }

    #[test]
    fn long_lines_are_skipped_not_held() {
        let mut data = vec![b'a'; MAX_LINE + 10];
        data.extend_from_slice(format!("\n{MD5}\r\n").as_bytes());
        let mut r = io::BufReader::with_capacity(1024, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(next_line(&mut r, &mut buf).unwrap(), Some(false));
        assert!(buf.is_empty());
        assert_eq!(next_line(&mut r, &mut buf).unwrap(), Some(true));
        assert_eq!(buf, MD5.as_bytes());
        assert_eq!(next_line(&mut r, &mut buf).unwrap(), None);
    }

    #[test]
    fn hashdeep_columns() {
        assert_eq!(
            parse_columns(b"%%%% size,md5,SHA-256,tiger,filename").unwrap(),
            [
                Column::Hash(Algo::Md5),
                Column::Hash(Algo::Sha256),
                Column::Other,
                Column::FileName
            ]
        );
        assert!(
            parse_columns(b"%%%% size,md5,xxh3,filename").is_err(),
            "hashdeep has no xxh3 column"
        );
        assert!(parse_columns(b"%%%% size,crc,filename").is_err());
        assert!(parse_columns(b"## Invoked from: /").is_err());
    }

    #[test]
    fn hashdeep_lines_take_the_rest_as_the_name() {
        let cols = [
            Column::Hash(Algo::Md5),
            Column::Hash(Algo::Sha256),
            Column::FileName,
        ];
        let line = format!("0,{MD5},{SHA256},/a,b,{MD5}");
        let d = parse_hashdeep_line(line.as_bytes(), &cols).unwrap();
        assert_eq!(d[Algo::Md5 as usize].unwrap().1, MD5.as_bytes());
        assert_eq!(d[Algo::Sha256 as usize].unwrap().1, SHA256.as_bytes());
        assert!(d[Algo::Sha1 as usize].is_none());
        assert!(parse_hashdeep_line(format!("x,{MD5},{SHA256},n").as_bytes(), &cols).is_err());
        assert!(parse_hashdeep_line(format!("0,{SHA256},{MD5},n").as_bytes(), &cols).is_err());
        assert!(parse_hashdeep_line(b"0", &cols).is_err());
    }
}
