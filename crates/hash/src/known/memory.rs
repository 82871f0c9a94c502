//! Hashes held in memory: one sorted array of fixed-size digests per algorithm, searched by bisection.
//!
//! A sorted array is the smallest form a set of digests can take (16 bytes an MD5, 32 a SHA-256, plus at most
//! 4 bytes a digest of directory): 50 million SHA-256 digests are 1.7 GB, where a hash table of strings would
//! take several times that. A directory of leading bits narrows a lookup to a few digests.

use rayon::slice::ParallelSliceMut;

use crate::algo::{Algo, Algos};

/// The digests of one algorithm, sorted and without repeats once [`Table::seal`] has run, with a directory of
/// where each value of their leading bits starts. Digests are uniformly spread, so the directory (about one
/// slot per digest, 4 bytes each) leaves a handful of digests to bisect: a lookup touches two or three cache
/// lines instead of one per bisection step (26 for 50 million).
#[derive(Default)]
struct Table<const N: usize> {
    digests: Vec<[u8; N]>,
    /// `starts[b]..starts[b + 1]` holds the digests whose leading `bits` bits are `b`.
    starts: Vec<u32>,
    bits: u32,
}

/// The most leading bits the directory uses (a 64 MiB directory).
const MAX_BITS: u32 = 24;

impl<const N: usize> Table<N> {
    fn push(&mut self, bytes: &[u8]) {
        // The caller decoded exactly N bytes for this algorithm.
        self.digests
            .push(bytes.try_into().expect("digest length matches its table"));
    }

    fn bucket(&self, digest: &[u8; N]) -> usize {
        let lead = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
        lead.checked_shr(32 - self.bits).unwrap_or(0) as usize
    }

    fn seal(&mut self) {
        self.digests.par_sort_unstable();
        self.digests.dedup();
        self.digests.shrink_to_fit();
        let len = self.digests.len();
        if u32::try_from(len).is_err() {
            // Beyond what u32 positions can say: no directory, plain bisection.
            self.starts.clear();
            return;
        }
        // About one directory slot per digest (one slot for a table too small to need more).
        self.bits = if len < 2 {
            0
        } else {
            len.ilog2().min(MAX_BITS)
        };
        let mut starts = vec![0u32; (1 << self.bits) + 1];
        for d in &self.digests {
            starts[self.bucket(d) + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        self.starts = starts;
    }

    fn contains(&self, bytes: &[u8]) -> bool {
        let Ok(key) = <[u8; N]>::try_from(bytes) else {
            return false;
        };
        if self.starts.is_empty() {
            return self.digests.binary_search(&key).is_ok();
        }
        let b = self.bucket(&key);
        let (lo, hi) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        self.digests[lo..hi].binary_search(&key).is_ok()
    }

    fn len(&self) -> usize {
        self.digests.len()
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
            Algo::Md5 => self.md5.len(),
            Algo::Sha1 => self.sha1.len(),
            Algo::Sha256 => self.sha256.len(),
            Algo::Xxh3 => self.xxh3.len(),
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

    #[test]
    fn the_directory_finds_every_digest_and_nothing_else() {
        for n in [0usize, 1, 2, 3, 17, 1000, 70_000] {
            let mut t = Table::<8>::default();
            // Spread like digests, plus clumps at both ends of the key space.
            let key = |i: usize| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            for i in 0..n {
                t.push(&key(i).to_be_bytes());
            }
            if n > 10 {
                t.push(&[0; 8]);
                t.push(&[0xFF; 8]);
            }
            t.seal();
            assert_eq!(t.starts.last().copied().unwrap_or(0) as usize, t.len());
            for i in 0..n {
                assert!(t.contains(&key(i).to_be_bytes()), "n {n} i {i}");
                assert!(
                    !t.contains(&key(i).wrapping_add(1).to_be_bytes()),
                    "n {n} i {i}+1"
                );
            }
            assert_eq!(t.contains(&[0xFF; 8]), n > 10);
            assert_eq!(t.contains(&[0; 8]), n > 0, "key(0) is 0");
        }
    }
}
