//! Hashes held in memory: one sorted array of fixed-size digests per algorithm, searched by bisection.
//!
//! A sorted array is the smallest form a set of digests can take (16 bytes an MD5, 32 a SHA-256, nothing
//! besides): 50 million SHA-256 digests are 1.6 GB, where a hash table of strings would take several times that.
//! A lookup is some 26 comparisons, far below the cost of hashing the file it is for.

use rayon::slice::ParallelSliceMut;

use crate::algo::{Algo, Algos};

/// The digests of one algorithm, sorted and without repeats once [`Table::seal`] has run.
#[derive(Default)]
struct Table<const N: usize>(Vec<[u8; N]>);

impl<const N: usize> Table<N> {
    fn push(&mut self, bytes: &[u8]) {
        // The caller decoded exactly N bytes for this algorithm.
        self.0
            .push(bytes.try_into().expect("digest length matches its table"));
    }

    fn seal(&mut self) {
        self.0.par_sort_unstable();
        self.0.dedup();
        self.0.shrink_to_fit();
    }

    fn contains(&self, bytes: &[u8]) -> bool {
        <[u8; N]>::try_from(bytes).is_ok_and(|key| self.0.binary_search(&key).is_ok())
    }
}

/// Every algorithm's table.
#[derive(Default)]
pub(crate) struct MemorySet {
    md5: Table<16>,
    sha1: Table<20>,
    sha256: Table<32>,
    xxh3: Table<8>,
}

impl MemorySet {
    /// Adds a digest; `bytes` must be `algo`'s length.
    pub(crate) fn push(&mut self, algo: Algo, bytes: &[u8]) {
        match algo {
            Algo::Md5 => self.md5.push(bytes),
            Algo::Sha1 => self.sha1.push(bytes),
            Algo::Sha256 => self.sha256.push(bytes),
            Algo::Xxh3 => self.xxh3.push(bytes),
        }
    }

    /// Sorts the tables and drops repeats; lookups need it done.
    pub(crate) fn seal(&mut self) {
        self.md5.seal();
        self.sha1.seal();
        self.sha256.seal();
        self.xxh3.seal();
    }

    pub(crate) fn contains(&self, algo: Algo, bytes: &[u8]) -> bool {
        match algo {
            Algo::Md5 => self.md5.contains(bytes),
            Algo::Sha1 => self.sha1.contains(bytes),
            Algo::Sha256 => self.sha256.contains(bytes),
            Algo::Xxh3 => self.xxh3.contains(bytes),
        }
    }

    /// How many distinct digests of `algo` it holds (after [`MemorySet::seal`]).
    pub(crate) fn len(&self, algo: Algo) -> usize {
        match algo {
            Algo::Md5 => self.md5.0.len(),
            Algo::Sha1 => self.sha1.0.len(),
            Algo::Sha256 => self.sha256.0.len(),
            Algo::Xxh3 => self.xxh3.0.len(),
        }
    }

    /// The algorithms it holds any digest of.
    pub(crate) fn algos(&self) -> Algos {
        Algo::ALL.into_iter().filter(|&a| self.len(a) > 0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_tables_find_what_was_pushed() {
        let mut set = MemorySet::default();
        for i in (0..1000u32).rev() {
            let mut d = [0u8; 32];
            d[..4].copy_from_slice(&(i * 7).to_be_bytes());
            set.push(Algo::Sha256, &d);
            set.push(Algo::Sha256, &d);
        }
        set.push(Algo::Md5, &[9; 16]);
        set.seal();
        assert_eq!(set.len(Algo::Sha256), 1000);
        assert_eq!(set.algos(), Algos::parse("md5,sha256").unwrap());
        let mut d = [0u8; 32];
        d[..4].copy_from_slice(&(7 * 500u32).to_be_bytes());
        assert!(set.contains(Algo::Sha256, &d));
        d[..4].copy_from_slice(&(7 * 500u32 + 1).to_be_bytes());
        assert!(!set.contains(Algo::Sha256, &d));
        assert!(set.contains(Algo::Md5, &[9; 16]));
        assert!(
            !set.contains(Algo::Md5, &[9; 15]),
            "a wrong length is never found"
        );
        assert!(!set.contains(Algo::Sha1, &[0; 20]));
    }
}
