//! The value of the query term `hash:HEX`: which algorithm a hex digest is by its length, and its bytes.

use crate::algo::{Algo, Algos};
use crate::hasher::Digests;
use crate::{hex, Error};

/// A digest to look for: its bytes, and the algorithms whose digests have its length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashTerm {
    algos: Algos,
    bytes: Vec<u8>,
}

impl HashTerm {
    /// Parses hex digits of either case (surrounding spaces ignored); the length says the algorithm
    /// (32 md5, 40 sha1, 64 sha256, 16 xxh3).
    ///
    /// ```
    /// use uffs_hash::{Algo, HashTerm};
    ///
    /// let t = HashTerm::parse("D41D8CD98F00B204E9800998ECF8427E").unwrap();
    /// assert!(t.algos().contains(Algo::Md5));
    /// assert!(HashTerm::parse("d41d8").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<HashTerm, Error> {
        let t = text.trim();
        let bad = |reason: String| Error::BadHash {
            text: text.to_string(),
            reason,
        };
        if let Some(c) = t.chars().find(|c| !c.is_ascii_hexdigit()) {
            return Err(bad(format!("{c:?} is not a hex digit")));
        }
        let algos: Algos = Algo::ALL
            .into_iter()
            .filter(|a| a.hex_len() == t.len())
            .collect();
        if algos.is_empty() {
            let lengths: Vec<String> = Algo::ALL
                .iter()
                .map(|a| format!("{} for {a}", a.hex_len()))
                .collect();
            return Err(bad(format!(
                "{} hex digits; a digest has {}",
                t.len(),
                lengths.join(", ")
            )));
        }
        let bytes = hex::decode(t).ok_or_else(|| bad("not hex".to_string()))?;
        Ok(HashTerm { algos, bytes })
    }

    /// The algorithms a digest of this length can be (one today; a list so that a later algorithm of the same
    /// length, such as XXH64 beside XXH3, fits).
    pub fn algos(&self) -> Algos {
        self.algos
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether any of `digests` is this one.
    pub fn matches(&self, digests: &Digests) -> bool {
        self.algos
            .iter()
            .any(|a| digests.get(a) == Some(&self.bytes[..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Hasher;

    #[test]
    fn length_names_the_algorithm() {
        for a in Algo::ALL {
            let d = Hasher::digest(a, b"abc");
            let t = HashTerm::parse(&d.hex(a).unwrap().to_uppercase()).unwrap();
            assert_eq!(t.algos(), Algos::from(a));
            assert_eq!(t.bytes(), d.get(a).unwrap());
            assert!(t.matches(&Hasher::digest(Algos::all(), b"abc")));
            assert!(!t.matches(&Hasher::digest(Algos::all(), b"abd")));
            assert!(
                !t.matches(&Hasher::digest(Algos::EMPTY, b"abc")),
                "an uncomputed digest never matches"
            );
        }
    }

    #[test]
    fn bad_terms_say_why() {
        let err = HashTerm::parse("abcg").unwrap_err().to_string();
        assert!(err.contains("'g'"), "{err}");
        let err = HashTerm::parse("abc").unwrap_err().to_string();
        assert!(
            err.contains("3 hex digits") && err.contains("32 for md5"),
            "{err}"
        );
        assert!(HashTerm::parse("").is_err());
        assert!(HashTerm::parse(" 900150983cd24fb0d6963f7d28e17f72 ").is_ok());
    }
}
