//! The hash algorithms uffs computes ([`Algo`]) and sets of them ([`Algos`]), with the names `--algo` takes.
//!
//! A set iterates in one fixed order, hashdeep's (md5, sha1, sha256), then xxh3: the order of hashdeep's columns,
//! so every output lists a file's digests the same way whatever order they were asked in.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// One hash algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algo {
    Md5,
    Sha1,
    Sha256,
    /// XXH3-64 (seed 0), written as its canonical big-endian bytes like `xxhsum -H3`. Not cryptographic: fast
    /// change detection and de-duplication, never evidence.
    Xxh3,
}

impl Algo {
    /// Every algorithm, in output order.
    pub const ALL: [Algo; 4] = [Algo::Md5, Algo::Sha1, Algo::Sha256, Algo::Xxh3];

    /// The name `--algo` takes and outputs print (hashdeep's column name for the three it knows).
    pub fn name(self) -> &'static str {
        match self {
            Algo::Md5 => "md5",
            Algo::Sha1 => "sha1",
            Algo::Sha256 => "sha256",
            Algo::Xxh3 => "xxh3",
        }
    }

    /// The digest's length in bytes.
    pub fn byte_len(self) -> usize {
        match self {
            Algo::Md5 => 16,
            Algo::Sha1 => 20,
            Algo::Sha256 => 32,
            Algo::Xxh3 => 8,
        }
    }

    /// The digest's length in hex digits.
    pub fn hex_len(self) -> usize {
        self.byte_len() * 2
    }

    /// The algorithm whose hex digest has `n` digits; each of ours has its own length.
    pub fn from_hex_len(n: usize) -> Option<Algo> {
        Algo::ALL.into_iter().find(|a| a.hex_len() == n)
    }

    /// Whether hashdeep has a column for it (hashdeep refuses a file with a column it does not know).
    pub fn in_hashdeep(self) -> bool {
        !matches!(self, Algo::Xxh3)
    }

    /// The coreutils program whose lines [`crate::format::Sum`] writes for it (`xxhsum -H3` for xxh3).
    pub fn sum_program(self) -> &'static str {
        match self {
            Algo::Md5 => "md5sum",
            Algo::Sha1 => "sha1sum",
            Algo::Sha256 => "sha256sum",
            Algo::Xxh3 => "xxhsum -H3",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Algo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The names [`Algo::from_str`] knows, for error messages.
pub const KNOWN_NAMES: &str = "md5, sha1, sha256, xxh3";

impl FromStr for Algo {
    type Err = Error;

    /// A name, case-insensitive; a dash is ignored as hashdeep does (`SHA-256`), and `xxh3-64`/`xxh64`-style
    /// spellings of XXH3 are not guessed at: `xxh3` only.
    fn from_str(s: &str) -> Result<Algo, Error> {
        let name: String = s
            .trim()
            .chars()
            .filter(|&c| c != '-')
            .map(|c| c.to_ascii_lowercase())
            .collect();
        Algo::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| Error::UnknownAlgo {
                name: s.trim().to_string(),
                known: KNOWN_NAMES,
            })
    }
}

/// A set of algorithms; iterates in output order (md5, sha1, sha256, xxh3).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Algos(u8);

impl Algos {
    pub const EMPTY: Algos = Algos(0);

    pub fn all() -> Algos {
        Algos::from_iter(Algo::ALL)
    }

    /// Parses a comma-separated list such as `md5,sha1,sha256,xxh3` (case-insensitive, spaces around names
    /// ignored, repeats allowed). An empty list or an unknown name is an error that lists the known names.
    pub fn parse(list: &str) -> Result<Algos, Error> {
        let mut set = Algos::EMPTY;
        for name in list.split(',') {
            if name.trim().is_empty() {
                return Err(Error::UnknownAlgo {
                    name: list.to_string(),
                    known: KNOWN_NAMES,
                });
            }
            set.insert(name.parse()?);
        }
        Ok(set)
    }

    pub fn insert(&mut self, algo: Algo) {
        self.0 |= algo.bit();
    }

    pub fn contains(self, algo: Algo) -> bool {
        self.0 & algo.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    pub fn union(self, other: Algos) -> Algos {
        Algos(self.0 | other.0)
    }

    pub fn intersection(self, other: Algos) -> Algos {
        Algos(self.0 & other.0)
    }

    pub fn iter(self) -> impl Iterator<Item = Algo> {
        Algo::ALL.into_iter().filter(move |a| self.contains(*a))
    }
}

impl FromIterator<Algo> for Algos {
    fn from_iter<I: IntoIterator<Item = Algo>>(iter: I) -> Algos {
        let mut set = Algos::EMPTY;
        for a in iter {
            set.insert(a);
        }
        set
    }
}

impl From<Algo> for Algos {
    fn from(a: Algo) -> Algos {
        Algos(a.bit())
    }
}

/// `md5,sha256`: the form [`Algos::parse`] reads.
impl fmt::Display for Algos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(a.name())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Algos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Algos({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_lengths() {
        for a in Algo::ALL {
            assert_eq!(a.name().parse::<Algo>().unwrap(), a);
            assert_eq!(Algo::from_hex_len(a.hex_len()), Some(a));
        }
        assert_eq!(Algo::Md5.hex_len(), 32);
        assert_eq!(Algo::Sha1.hex_len(), 40);
        assert_eq!(Algo::Sha256.hex_len(), 64);
        assert_eq!(Algo::Xxh3.hex_len(), 16);
        assert_eq!(Algo::from_hex_len(33), None);
    }

    #[test]
    fn parse_is_case_insensitive_and_ignores_dashes() {
        assert_eq!("SHA-256".parse::<Algo>().unwrap(), Algo::Sha256);
        assert_eq!(" Md5 ".parse::<Algo>().unwrap(), Algo::Md5);
        assert_eq!("XXH3".parse::<Algo>().unwrap(), Algo::Xxh3);
    }

    #[test]
    fn list_parses_in_output_order() {
        let set = Algos::parse("xxh3, SHA256,md5,md5").unwrap();
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Algo::Md5, Algo::Sha256, Algo::Xxh3]
        );
        assert_eq!(set.to_string(), "md5,sha256,xxh3");
        assert_eq!(set.len(), 3);
        assert_eq!(
            Algos::parse(&Algos::all().to_string()).unwrap(),
            Algos::all()
        );
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let err = Algos::parse("md5,crc32").unwrap_err().to_string();
        assert!(
            err.contains("crc32") && err.contains("md5, sha1, sha256, xxh3"),
            "{err}"
        );
        let err = Algos::parse("").unwrap_err().to_string();
        assert!(err.contains("md5, sha1, sha256, xxh3"), "{err}");
        assert!(Algos::parse("md5,,sha1").is_err());
    }

    #[test]
    fn set_operations() {
        let a = Algos::parse("md5,sha1").unwrap();
        let b = Algos::parse("sha1,sha256").unwrap();
        assert_eq!(a.intersection(b), Algos::from(Algo::Sha1));
        assert_eq!(a.union(b), Algos::parse("md5,sha1,sha256").unwrap());
        assert!(Algos::EMPTY.is_empty());
        assert!(!a.contains(Algo::Xxh3));
    }
}
