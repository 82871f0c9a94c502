//! Known-file sets: lists of digests a file is checked against (`--known FILE`, repeatable), so a run can keep
//! the files nobody has seen before, or flag the ones known to be bad.
//!
//! [`KnownSet::open`] tells a set's kind from its content, never its name:
//! - an SQLite database is a NIST NSRL RDS (RDSv3), searched in place (below);
//! - a text file whose first line is `%%%% HASHDEEP-1.0` is a hashdeep file, its columns named by its header;
//! - any other text file is a hash list: md5sum/sha1sum/sha256sum lines, their BSD `--tag` form, `xxhsum -H3`
//!   lines, or bare hex digests one a line, each digest's algorithm told by its length or its tag.
//!
//! An RDS is read through its `FILE` table (or view), whose `sha256`, `sha1` and `md5` columns hold upper-case
//! hex, as NIST's published schema has it. Only columns SQLite can search by an index are offered
//! ([`KnownSet::algos`]; the rest are [`KnownSet::unindexed`]): in NIST's current "minimal" sets the primary key
//! starts with `sha256`, so that is the one. A database where no hash column has an index is refused, with the
//! index to create, rather than read whole for every file.
//!
//! Text is read as bytes, UTF-8 or any ASCII-compatible encoding; a UTF-16 list (as PowerShell's `Out-File`
//! writes by default) is refused as not text. Text sets are read into memory as sorted arrays of fixed-size
//! digests. A line that is not a hash is counted,
//! and the first few are described with their line numbers in the set's [`LoadReport`]; a set with no valid
//! digest at all is an error.
//!
//! [`KnownSets`] combines sets: a file is known when any set holds any of its digests. Each set says which
//! algorithms it can be searched by ([`KnownSet::algos`]) so the caller computes at least one of them; a set
//! that shares none with what the caller computes is the caller's error to report ([`KnownSets::unusable`]).

mod memory;
mod rds;
mod text;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::algo::{Algo, Algos};
use crate::hasher::Digests;
use crate::Error;
use memory::MemorySet;
use rds::Rds;

/// What kind of set a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// md5sum/sha1sum/sha256sum lines, BSD tag lines or bare digests.
    HashList,
    /// A file hashdeep wrote (`%%%% HASHDEEP-1.0`).
    Hashdeep,
    /// A NIST NSRL RDS SQLite database, searched in place.
    Rds,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::HashList => "hash list",
            Kind::Hashdeep => "hashdeep file",
            Kind::Rds => "NSRL RDS",
        }
    }
}

/// A line that was not a hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLine {
    /// Counted from 1.
    pub line: u64,
    pub reason: String,
}

/// What loading a text set found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Lines read.
    pub lines: u64,
    /// Digests read (repeats included; [`KnownSet::len`] counts distinct ones).
    pub hashes: u64,
    /// Lines that were neither a hash, a comment nor blank: skipped.
    pub bad_lines: u64,
    /// The first few of those (at most 10), in file order.
    pub first_bad: Vec<BadLine>,
}

enum Store {
    Memory(MemorySet),
    Rds(Rds),
}

/// One known-file set.
pub struct KnownSet {
    path: PathBuf,
    kind: Kind,
    store: Store,
    report: LoadReport,
}

impl KnownSet {
    /// Opens a set, its kind told by its content.
    pub fn open(path: impl AsRef<Path>) -> Result<KnownSet, Error> {
        let path = path.as_ref();
        let io_err = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(io_err)?;
        let mut magic = [0u8; 16];
        let n = read_up_to(&mut file, &mut magic).map_err(io_err)?;
        if n == magic.len() && &magic == rds::SQLITE_MAGIC {
            drop(file);
            let rds = Rds::open(path)?;
            return Ok(KnownSet {
                path: path.to_path_buf(),
                kind: Kind::Rds,
                store: Store::Rds(rds),
                report: LoadReport::default(),
            });
        }
        let file = File::open(path).map_err(io_err)?;
        KnownSet::from_reader(path, BufReader::with_capacity(1 << 20, file))
    }

    /// Reads a text set (hash list or hashdeep file) from `reader`; `path` names it in errors and reports.
    pub fn from_reader(
        path: impl AsRef<Path>,
        mut reader: impl BufRead,
    ) -> Result<KnownSet, Error> {
        let path = path.as_ref().to_path_buf();
        let io_err = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let head = reader.fill_buf().map_err(io_err)?;
        if head.starts_with(rds::SQLITE_MAGIC) {
            return Err(Error::UnknownFormat {
                path,
                reason: "an SQLite database must be opened by its path".into(),
            });
        }
        if let Some(zero) = memchr::memchr(0, &head[..head.len().min(8192)]) {
            let reason = format!(
                "byte {zero} is NUL: not a text hash list, hashdeep file or SQLite database"
            );
            return Err(Error::UnknownFormat { path, reason });
        }
        let first_line = &head[..memchr::memchr(b'\n', head).unwrap_or(head.len())];
        let hashdeep = text::is_hashdeep_magic(first_line);

        let mut set = MemorySet::default();
        let mut report = LoadReport::default();
        let kind = if hashdeep {
            text::load_hashdeep(&mut reader, &mut set, &mut report)
                .map_err(io_err)?
                .map_err(|reason| Error::UnknownFormat {
                    path: path.clone(),
                    reason,
                })?;
            Kind::Hashdeep
        } else {
            text::load_list(&mut reader, &mut set, &mut report).map_err(io_err)?;
            Kind::HashList
        };
        if report.hashes == 0 {
            return Err(Error::NoHashes {
                path,
                kind: kind.name(),
                bad_lines: report.bad_lines,
                first_bad: report.first_bad.into_iter().next(),
            });
        }
        set.seal();
        Ok(KnownSet {
            path,
            kind,
            store: Store::Memory(set),
            report,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// What loading found (lines, digests, bad lines); empty for an RDS, which is not read ahead.
    pub fn report(&self) -> &LoadReport {
        &self.report
    }

    /// The algorithms it can be searched by: those its digests are of (for an RDS, those of its hash columns
    /// SQLite can search by index).
    pub fn algos(&self) -> Algos {
        match &self.store {
            Store::Memory(m) => m.algos(),
            Store::Rds(r) => r.algos(),
        }
    }

    /// Hash columns an RDS has but could only search by reading all of it, and so are not offered.
    pub fn unindexed(&self) -> Algos {
        match &self.store {
            Store::Memory(_) => Algos::EMPTY,
            Store::Rds(r) => r.unindexed(),
        }
    }

    /// The algorithm to compute for this set when the caller computes none of [`KnownSet::algos`]: an RDS's
    /// searchable column (sha256 on a current RDS), else the one it holds most digests of.
    pub fn preferred_algo(&self) -> Algo {
        match &self.store {
            Store::Memory(m) => {
                let most = m.algos().iter().max_by_key(|&a| (m.len(a), a as u8));
                most.expect("a loaded set holds a digest")
            }
            Store::Rds(r) => r
                .algos()
                .iter()
                .max_by_key(|&a| a.byte_len())
                .expect("an opened RDS has a column"),
        }
    }

    /// How many distinct digests of `algo` it holds; `None` for an RDS (counting would read all of it).
    pub fn len(&self, algo: Algo) -> Option<u64> {
        match &self.store {
            Store::Memory(m) => Some(m.len(algo) as u64),
            Store::Rds(_) => None,
        }
    }

    /// Whether it holds `bytes` as a digest of `algo`.
    pub fn contains(&self, algo: Algo, bytes: &[u8]) -> Result<bool, Error> {
        match &self.store {
            Store::Memory(m) => Ok(m.contains(algo, bytes)),
            Store::Rds(r) => r.contains(algo, bytes).map_err(|source| Error::Sqlite {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// Whether it holds any of `digests` (strongest algorithm asked first).
    pub fn is_known(&self, digests: &Digests) -> Result<bool, Error> {
        Ok(self.known_by(digests)?.is_some())
    }

    /// The algorithm by which it holds one of `digests` (strongest first), if it does.
    pub fn known_by(&self, digests: &Digests) -> Result<Option<Algo>, Error> {
        let common = self.algos().intersection(digests.algos());
        for algo in [Algo::Sha256, Algo::Sha1, Algo::Md5, Algo::Xxh3] {
            if common.contains(algo)
                && self.contains(algo, digests.get(algo).expect("in common"))?
            {
                return Ok(Some(algo));
            }
        }
        Ok(None)
    }
}

impl std::fmt::Debug for KnownSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnownSet")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("algos", &self.algos())
            .finish()
    }
}

/// Several known-file sets: a file is known when any of them holds any of its digests.
#[derive(Debug, Default)]
pub struct KnownSets {
    sets: Vec<KnownSet>,
}

impl KnownSets {
    pub fn new() -> KnownSets {
        KnownSets::default()
    }

    /// Opens each path with [`KnownSet::open`]; the first that fails is the error.
    pub fn open<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<KnownSets, Error> {
        let sets = paths
            .into_iter()
            .map(KnownSet::open)
            .collect::<Result<_, _>>()?;
        Ok(KnownSets { sets })
    }

    pub fn push(&mut self, set: KnownSet) {
        self.sets.push(set);
    }

    pub fn sets(&self) -> &[KnownSet] {
        &self.sets
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Every algorithm some set can be searched by.
    pub fn algos(&self) -> Algos {
        self.sets
            .iter()
            .fold(Algos::EMPTY, |acc, s| acc.union(s.algos()))
    }

    /// The sets that share no algorithm with `computed`: they could never match, which the caller reports.
    pub fn unusable(&self, computed: Algos) -> impl Iterator<Item = &KnownSet> {
        self.sets
            .iter()
            .filter(move |s| s.algos().intersection(computed).is_empty())
    }

    /// `requested` plus, for each set that shares none of it, that set's [`KnownSet::preferred_algo`]: the
    /// algorithms to compute so every set can be used.
    pub fn algos_to_compute(&self, requested: Algos) -> Algos {
        let mut algos = requested;
        for s in &self.sets {
            if s.algos().intersection(algos).is_empty() {
                algos.insert(s.preferred_algo());
            }
        }
        algos
    }

    /// Whether any set holds any of `digests`.
    pub fn is_known(&self, digests: &Digests) -> Result<bool, Error> {
        Ok(self.known_by(digests)?.is_some())
    }

    /// The first set that holds one of `digests`, and by which algorithm.
    pub fn known_by(&self, digests: &Digests) -> Result<Option<(&KnownSet, Algo)>, Error> {
        for s in &self.sets {
            if let Some(algo) = s.known_by(digests)? {
                return Ok(Some((s, algo)));
            }
        }
        Ok(None)
    }
}

/// Reads until `buf` is full or the input ends; how many bytes were read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Hasher;

    fn set(text: &str) -> Result<KnownSet, Error> {
        KnownSet::from_reader("test.txt", text.as_bytes())
    }

    #[test]
    fn a_sum_file_with_bad_lines() {
        let a = Hasher::digest(Algos::all(), b"a");
        let b = Hasher::digest(Algos::all(), b"b");
        let text = format!(
            "# comment\n\n{}  a\nnot a hash\r\n{} *b\n{}\n",
            a.hex(Algo::Sha256).unwrap(),
            b.hex(Algo::Md5).unwrap(),
            "0123"
        );
        let s = set(&text).unwrap();
        assert_eq!(s.kind(), Kind::HashList);
        assert_eq!(s.algos(), Algos::parse("md5,sha256").unwrap());
        let r = s.report();
        assert_eq!((r.lines, r.hashes, r.bad_lines), (6, 2, 2));
        assert_eq!(r.first_bad[0].line, 4);
        assert_eq!(r.first_bad[1].line, 6);
        assert!(s.is_known(&a).unwrap());
        assert!(s.is_known(&b).unwrap());
        assert!(!s.is_known(&Hasher::digest(Algos::all(), b"c")).unwrap());
        assert!(
            !s.is_known(&Hasher::digest(Algo::Sha1, b"a")).unwrap(),
            "no algorithm in common"
        );
        assert_eq!(s.len(Algo::Sha256), Some(1));
    }

    #[test]
    fn nothing_valid_is_an_error_naming_the_first_bad_line() {
        let err = set("hello\nworld\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("no digest") && msg.contains("line 1"), "{msg}");
        assert!(set("").is_err());
        assert!(set("# only a comment\n").is_err());
        let err = KnownSet::from_reader("bin", &b"\x7fELF\0\0\0"[..]).unwrap_err();
        assert!(matches!(err, Error::UnknownFormat { .. }), "{err}");
    }

    #[test]
    fn a_hashdeep_file() {
        let d = Hasher::digest(Algos::all(), b"x");
        let text = format!(
            "%%%% HASHDEEP-1.0\n%%%% size,md5,sha256,filename\n## Invoked from: /\n## $ hashdeep x\n## \n1,{},{},/x,y\nbad\n",
            d.hex(Algo::Md5).unwrap(),
            d.hex(Algo::Sha256).unwrap()
        );
        let s = set(&text).unwrap();
        assert_eq!(s.kind(), Kind::Hashdeep);
        assert_eq!(s.algos(), Algos::parse("md5,sha256").unwrap());
        assert_eq!((s.report().hashes, s.report().bad_lines), (2, 1));
        assert_eq!(s.report().first_bad[0].line, 7);
        assert!(s.is_known(&Hasher::digest(Algo::Md5, b"x")).unwrap());
        assert!(s.is_known(&Hasher::digest(Algo::Sha256, b"x")).unwrap());
        assert_eq!(s.preferred_algo(), Algo::Sha256);

        let err = set("%%%% HASHDEEP-1.0\n%%%% size,md5,crc32,filename\n").unwrap_err();
        assert!(err.to_string().contains("crc32"), "{err}");
        assert!(set("%%%% HASHDEEP-1.0\n").is_err());
    }

    #[test]
    fn sets_combine() {
        let x = Hasher::digest(Algos::all(), b"x");
        let y = Hasher::digest(Algos::all(), b"y");
        let mut sets = KnownSets::new();
        sets.push(set(&format!("{}\n", x.hex(Algo::Md5).unwrap())).unwrap());
        sets.push(set(&format!("{}\n", y.hex(Algo::Sha1).unwrap())).unwrap());
        assert_eq!(sets.algos(), Algos::parse("md5,sha1").unwrap());
        assert!(sets.is_known(&x).unwrap());
        assert!(sets.is_known(&y).unwrap());
        assert!(!sets.is_known(&Hasher::digest(Algos::all(), b"z")).unwrap());

        let sha256 = Algos::from(Algo::Sha256);
        assert_eq!(sets.unusable(sha256).count(), 2);
        assert_eq!(
            sets.unusable(Algos::from(Algo::Md5))
                .map(|s| s.algos())
                .collect::<Vec<_>>(),
            [Algos::from(Algo::Sha1)]
        );
        assert_eq!(
            sets.algos_to_compute(sha256),
            Algos::parse("md5,sha1,sha256").unwrap()
        );
        assert_eq!(
            sets.algos_to_compute(Algos::from(Algo::Md5)),
            Algos::parse("md5,sha1").unwrap()
        );
    }
}
