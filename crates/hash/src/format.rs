//! The lines hashdeep and coreutils write, byte for byte, so that their own readers check what uffs wrote:
//! `hashdeep -k FILE -a` audits against [`Hashdeep`]'s output, `sha256sum -c` checks [`Sum`]'s.
//!
//! hashdeep (4.4, `main.cpp` `make_banner` and `display.cpp` `display_hash_simple`) writes
//!
//! ```text
//! %%%% HASHDEEP-1.0
//! %%%% size,md5,sha256,filename
//! ## Invoked from: /home/me
//! ## $ hashdeep -r d
//! ##
//! 6,b1946ac92492d2347c6235b4d2611184,5891b5…be03,/home/me/d/a.txt
//! ```
//!
//! with its columns always in its own order (md5, sha1, sha256) whatever order `-c` named them in, and the name
//! written raw: a comma needs no quoting because hashdeep's reader takes everything after the last hash column as
//! the name. A name holding a newline or carriage return is written raw too, as hashdeep does, and no hashdeep
//! file can carry it: hashdeep's own audit of such a file reports the file moved and the known one not found.
//! The prompt in the command line is `#` for root and `$` for anyone else (`C:\dir>` on Windows), and a command
//! line longer than hashdeep's 2048-byte line buffer wraps onto further `## ` lines where hashdeep wraps it.
//! hashdeep reads lines through that same buffer, so it cannot read back a line longer than 2047 bytes (a
//! path of some 1,900 bytes); it writes them all the same, and so does [`Hashdeep`].
//!
//! coreutils (`md5sum`, `sha1sum`, `sha256sum`, 9.1) write `HEX  NAME`. A name holding a backslash, a newline or
//! a carriage return is escaped (`\\`, `\n`, `\r`) and the line then starts with a backslash, which tells
//! `-c` to unescape it. `xxhsum -H3` (0.8.1) writes its XXH3 lines tagged, `XXH3 (NAME) = HEX`, since sixteen
//! digits alone would read as XXH64, and writes the name unescaped.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::algo::{Algo, Algos};
use crate::hasher::Digests;
use crate::Error;

/// hashdeep's first line.
pub const HASHDEEP_MAGIC: &str = "%%%% HASHDEEP-1.0";

/// hashdeep's line buffer (`MAX_STRING_LENGTH`): its reader reads no longer line whole, and its banner wraps the
/// command line to stay under it.
const HASHDEEP_MAX_LINE: usize = 2048;

/// hashdeep's file format for a set of algorithms.
#[derive(Clone, Copy, Debug)]
pub struct Hashdeep {
    algos: Algos,
}

impl Hashdeep {
    /// The format for `algos`: an error if the set is empty or holds an algorithm hashdeep has no column for
    /// (xxh3), since hashdeep refuses the whole file then.
    pub fn new(algos: Algos) -> Result<Hashdeep, Error> {
        if let Some(a) = algos.iter().find(|a| !a.in_hashdeep()) {
            return Err(Error::NotInHashdeep(a));
        }
        if algos.is_empty() {
            return Err(Error::NoAlgo);
        }
        Ok(Hashdeep { algos })
    }

    pub fn algos(&self) -> Algos {
        self.algos
    }

    /// The five header lines. `invoked_from` is the working directory, `prompt` what [`shell_prompt`] gives, and
    /// `command` the command line, program name first (hashdeep writes its own `argv`).
    pub fn write_header<S: AsRef<[u8]>>(
        &self,
        w: &mut impl Write,
        invoked_from: &[u8],
        prompt: &str,
        command: &[S],
    ) -> io::Result<()> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(HASHDEEP_MAGIC.as_bytes());
        out.extend_from_slice(b"\n%%%% size,");
        for a in self.algos.iter() {
            out.extend_from_slice(a.name().as_bytes());
            out.push(b',');
        }
        out.extend_from_slice(b"filename\n## Invoked from: ");
        out.extend_from_slice(invoked_from);
        out.extend_from_slice(b"\n## ");
        out.extend_from_slice(prompt.as_bytes());
        // hashdeep counts 8 bytes for "## ", the prompt and the first space, whatever the prompt's length, and
        // starts a new "## " line before an argument that would take the line within 32 bytes of its buffer.
        let mut line_len = 8;
        for arg in command {
            let arg = arg.as_ref();
            out.push(b' ');
            line_len += 1;
            if arg.len() + line_len + 32 > HASHDEEP_MAX_LINE {
                out.extend_from_slice(b"\n## ");
                line_len = 3;
            }
            out.extend_from_slice(arg);
            line_len += arg.len();
        }
        out.extend_from_slice(b"\n## \n");
        w.write_all(&out)
    }

    /// The header as hashdeep run by this process would write it: the working directory, this user's prompt
    /// and `command` (the command line, program name first).
    pub fn write_header_here<S: AsRef<[u8]>>(
        &self,
        w: &mut impl Write,
        command: &[S],
    ) -> io::Result<()> {
        let cwd = std::env::current_dir()?;
        // hashdeep writes a Unix directory's bytes as they are, and a Windows one in UTF-8.
        #[cfg(unix)]
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(cwd.as_os_str()).to_vec();
        #[cfg(not(unix))]
        let bytes = cwd.to_string_lossy().into_owned().into_bytes();
        self.write_header(w, &bytes, &shell_prompt(&cwd.to_string_lossy()), command)
    }

    /// One file's line: `size,hash,…,name`.
    pub fn write_file(
        &self,
        w: &mut impl Write,
        size: u64,
        digests: &Digests,
        name: &[u8],
    ) -> io::Result<()> {
        let mut out = Vec::with_capacity(24 + 140 + name.len());
        out.extend_from_slice(size.to_string().as_bytes());
        out.push(b',');
        for a in self.algos.iter() {
            if !digests.hex_into(a, &mut out) {
                return Err(missing(a));
            }
            out.push(b',');
        }
        out.extend_from_slice(name);
        out.push(b'\n');
        w.write_all(&out)
    }
}

/// The prompt hashdeep writes before its command line: `#` when running as root and `$` otherwise on Unix,
/// the working directory and `>` on Windows.
pub fn shell_prompt(invoked_from: &str) -> String {
    #[cfg(windows)]
    {
        format!("{invoked_from}>")
    }
    #[cfg(unix)]
    {
        let _ = invoked_from;
        // SAFETY: geteuid takes no arguments, touches no memory and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        if root { "#" } else { "$" }.to_string()
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = invoked_from;
        "$".to_string()
    }
}

/// The lines of `md5sum`, `sha1sum`, `sha256sum` and `xxhsum -H3` for one algorithm.
#[derive(Clone, Copy, Debug)]
pub struct Sum {
    algo: Algo,
}

impl Sum {
    pub fn new(algo: Algo) -> Sum {
        Sum { algo }
    }

    pub fn algo(&self) -> Algo {
        self.algo
    }

    /// One file's line: `HEX  NAME`, or `\HEX  ESCAPED` for a name coreutils escapes; for xxh3,
    /// `XXH3 (NAME) = HEX` with the name as it is.
    pub fn write_file(&self, w: &mut impl Write, digests: &Digests, name: &[u8]) -> io::Result<()> {
        if self.algo == Algo::Xxh3 {
            let mut out = Vec::with_capacity(6 + name.len() + 4 + 16 + 1);
            out.extend_from_slice(b"XXH3 (");
            out.extend_from_slice(name);
            out.extend_from_slice(b") = ");
            if !digests.hex_into(self.algo, &mut out) {
                return Err(missing(self.algo));
            }
            out.push(b'\n');
            return w.write_all(&out);
        }
        let (escaped, name) = sum_escape(name);
        let mut out = Vec::with_capacity(1 + 64 + 2 + name.len() + 1);
        if escaped {
            out.push(b'\\');
        }
        if !digests.hex_into(self.algo, &mut out) {
            return Err(missing(self.algo));
        }
        out.extend_from_slice(b"  ");
        out.extend_from_slice(&name);
        out.push(b'\n');
        w.write_all(&out)
    }
}

/// A name as coreutils writes it in a sum line: `\` → `\\`, newline → `\n`, carriage return → `\r`; true when
/// anything was escaped (the line then starts with a backslash).
pub fn sum_escape(name: &[u8]) -> (bool, Cow<'_, [u8]>) {
    if !name.iter().any(|&b| matches!(b, b'\\' | b'\n' | b'\r')) {
        return (false, Cow::Borrowed(name));
    }
    let mut out = Vec::with_capacity(name.len() + 8);
    for &b in name {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
    (true, Cow::Owned(out))
}

/// The reverse of [`sum_escape`], as `sha256sum -c` reads a line that starts with a backslash; `None` for a
/// backslash followed by anything else, which coreutils rejects as an improperly formatted line.
pub fn sum_unescape(name: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(name.len());
    let mut it = name.iter();
    while let Some(&b) = it.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        out.push(match it.next()? {
            b'\\' => b'\\',
            b'n' => b'\n',
            b'r' => b'\r',
            _ => return None,
        });
    }
    Some(out)
}

fn missing(a: Algo) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("the {a} digest was not computed"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Hasher;

    fn hashdeep(algos: &str) -> Hashdeep {
        Hashdeep::new(Algos::parse(algos).unwrap()).unwrap()
    }

    #[test]
    fn hashdeep_header_names_columns_in_hashdeeps_order() {
        let mut out = Vec::new();
        hashdeep("sha256,md5")
            .write_header(&mut out, b"/tmp/hd", "$", &["hashdeep", "-r", "d"])
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "%%%% HASHDEEP-1.0\n%%%% size,md5,sha256,filename\n## Invoked from: /tmp/hd\n## $ hashdeep -r d\n## \n"
        );
    }

    #[test]
    fn hashdeep_header_wraps_long_command_lines_as_hashdeep_does() {
        let long = "x".repeat(2000);
        let mut out = Vec::new();
        hashdeep("md5")
            .write_header(&mut out, b"/", "#", &["hashdeep", "-r", &long, "y"])
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        // hashdeep's count reaches 21 before the long argument: 21 + 2000 + 32 > 2048, so it goes on a new line,
        // after which "y" fits (3 + 2000 + 1 + 1 + 32 <= 2048).
        assert!(
            text.contains(&format!("## # hashdeep -r \n## {long} y\n## \n")),
            "{text}"
        );
    }

    #[test]
    fn the_prompt_is_hashdeeps() {
        #[cfg(windows)]
        assert_eq!(shell_prompt("C:\\cases"), "C:\\cases>");
        #[cfg(unix)]
        {
            // SAFETY: geteuid takes no arguments and cannot fail.
            let root = unsafe { libc::geteuid() } == 0;
            assert_eq!(shell_prompt("/x"), if root { "#" } else { "$" });
        }
    }

    #[test]
    fn hashdeep_lines_write_names_raw() {
        let d = Hasher::digest(Algos::all(), b"x");
        let mut out = Vec::new();
        hashdeep("md5,sha1")
            .write_file(&mut out, 1, &d, b"/d/with,comma \"q\"")
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "1,9dd4e461268c8034f5c8564e155c67a6,11f6ad8ec52a2984abaafd7c3b516503785c2072,/d/with,comma \"q\"\n"
        );
    }

    #[test]
    fn hashdeep_refuses_what_it_cannot_write() {
        assert!(matches!(
            Hashdeep::new(Algos::parse("md5,xxh3").unwrap()),
            Err(Error::NotInHashdeep(Algo::Xxh3))
        ));
        assert!(matches!(Hashdeep::new(Algos::EMPTY), Err(Error::NoAlgo)));
        let d = Hasher::digest(Algo::Md5, b"");
        let err = hashdeep("md5,sha256")
            .write_file(&mut Vec::new(), 0, &d, b"n")
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn sum_lines_escape_as_coreutils_does() {
        let d = Hasher::digest(Algo::Sha256, b"");
        let e3 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let line = |name: &[u8]| {
            let mut out = Vec::new();
            Sum::new(Algo::Sha256)
                .write_file(&mut out, &d, name)
                .unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(line(b"d/a b.txt"), format!("{e3}  d/a b.txt\n"));
        assert_eq!(line(b"d/back\\slash"), format!("\\{e3}  d/back\\\\slash\n"));
        assert_eq!(line(b"d/new\nline\r"), format!("\\{e3}  d/new\\nline\\r\n"));
        assert!(Sum::new(Algo::Md5)
            .write_file(&mut Vec::new(), &d, b"x")
            .is_err());
        let mut out = Vec::new();
        let x = Hasher::digest(Algo::Xxh3, b"");
        Sum::new(Algo::Xxh3)
            .write_file(&mut out, &x, b"a\\b\nc")
            .unwrap();
        assert_eq!(out, b"XXH3 (a\\b\nc) = 2d06800538d394c2\n");
    }

    #[test]
    fn unescape_reverses_escape() {
        for name in [&b"plain"[..], b"a\\b", b"\n\r\\", b"x\\\\n"] {
            let (_, esc) = sum_escape(name);
            assert_eq!(sum_unescape(&esc).unwrap(), name);
        }
        assert_eq!(sum_unescape(b"bad\\t"), None);
        assert_eq!(sum_unescape(b"trailing\\"), None);
    }
}
