//! Several digests of one stream in one pass: [`Hasher`] takes the bytes once and feeds each algorithm, and
//! [`Digests`] holds what came out.
//!
//! The bytes are fed in slices of [`SLICE`]: each algorithm reads a slice while it is still in the core's cache
//! from the one before, so a second algorithm costs its arithmetic only, not a second trip to memory.

use std::hash::Hasher as _;

use md5::Md5;
use sha1::Sha1;
use sha2::{Digest as _, Sha256};
use twox_hash::XxHash3_64;

use crate::algo::{Algo, Algos};
use crate::hex;

/// How many bytes each algorithm takes at a time when several run (fits a core's L1/L2 data cache).
pub const SLICE: usize = 32 * 1024;

/// The longest digest (SHA-256).
const MAX_LEN: usize = 32;

/// Computes the digests of one stream for a set of algorithms at once.
///
/// ```
/// use uffs_hash::{Algo, Algos, Hasher};
///
/// let mut h = Hasher::new(Algos::parse("md5,sha256").unwrap());
/// h.update(b"hello ");
/// h.update(b"world\n");
/// let d = h.finish();
/// assert_eq!(d.hex(Algo::Md5).unwrap(), "6f5902ac237024bdd0c176cb93063dc4");
/// assert_eq!(d.get(Algo::Sha1), None);
/// ```
#[derive(Clone)]
pub struct Hasher {
    md5: Option<Md5>,
    sha1: Option<Sha1>,
    sha256: Option<Sha256>,
    xxh3: Option<XxHash3_64>,
    algos: Algos,
}

impl Hasher {
    pub fn new(algos: impl Into<Algos>) -> Hasher {
        let algos = algos.into();
        Hasher {
            md5: algos.contains(Algo::Md5).then(Md5::new),
            sha1: algos.contains(Algo::Sha1).then(Sha1::new),
            sha256: algos.contains(Algo::Sha256).then(Sha256::new),
            xxh3: algos.contains(Algo::Xxh3).then(XxHash3_64::new),
            algos,
        }
    }

    /// Which algorithms this computes.
    pub fn algos(&self) -> Algos {
        self.algos
    }

    /// Feeds the next bytes of the stream.
    pub fn update(&mut self, data: &[u8]) {
        if self.algos.len() <= 1 {
            self.feed(data);
        } else {
            for slice in data.chunks(SLICE) {
                self.feed(slice);
            }
        }
    }

    fn feed(&mut self, data: &[u8]) {
        if let Some(h) = &mut self.md5 {
            h.update(data);
        }
        if let Some(h) = &mut self.sha1 {
            h.update(data);
        }
        if let Some(h) = &mut self.sha256 {
            h.update(data);
        }
        if let Some(h) = &mut self.xxh3 {
            h.write(data);
        }
    }

    /// The digests of everything fed.
    pub fn finish(self) -> Digests {
        let mut d = Digests::default();
        if let Some(h) = self.md5 {
            d.set(Algo::Md5, &h.finalize());
        }
        if let Some(h) = self.sha1 {
            d.set(Algo::Sha1, &h.finalize());
        }
        if let Some(h) = self.sha256 {
            d.set(Algo::Sha256, &h.finalize());
        }
        if let Some(h) = self.xxh3 {
            // The canonical form xxhsum prints: the 64-bit value, most significant byte first.
            d.set(Algo::Xxh3, &h.finish().to_be_bytes());
        }
        d
    }

    /// Feeds everything `reader` yields; how many bytes that was.
    pub fn update_reader(&mut self, mut reader: impl std::io::Read) -> std::io::Result<u64> {
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return Ok(total),
                Ok(n) => {
                    self.update(&buf[..n]);
                    total += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The digests of `data` alone.
    pub fn digest(algos: impl Into<Algos>, data: &[u8]) -> Digests {
        let mut h = Hasher::new(algos);
        h.update(data);
        h.finish()
    }
}

/// The digests of one stream, for the algorithms that were computed.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Digests {
    bytes: [[u8; MAX_LEN]; Algo::ALL.len()],
    algos: Algos,
}

impl Digests {
    /// Which algorithms these are.
    pub fn algos(&self) -> Algos {
        self.algos
    }

    /// The digest of `algo`, if it was computed.
    pub fn get(&self, algo: Algo) -> Option<&[u8]> {
        self.algos
            .contains(algo)
            .then(|| &self.bytes[algo as usize][..algo.byte_len()])
    }

    /// The lowercase hex digest of `algo`, if it was computed.
    pub fn hex(&self, algo: Algo) -> Option<String> {
        self.get(algo).map(hex::encode)
    }

    /// Each computed digest, in output order.
    pub fn iter(&self) -> impl Iterator<Item = (Algo, &[u8])> {
        self.algos
            .iter()
            .map(|a| (a, &self.bytes[a as usize][..a.byte_len()]))
    }

    /// Sets the digest of `algo` (to build digests read elsewhere, such as a cache). Panics when `bytes` is not
    /// `algo`'s length, a caller's bug.
    pub fn set(&mut self, algo: Algo, bytes: &[u8]) {
        assert_eq!(
            bytes.len(),
            algo.byte_len(),
            "a {algo} digest is {} bytes",
            algo.byte_len()
        );
        self.bytes[algo as usize][..bytes.len()].copy_from_slice(bytes);
        self.algos.insert(algo);
    }

    /// Appends the lowercase hex of `algo`'s digest to `out`; false (nothing appended) when it was not computed.
    pub(crate) fn hex_into(&self, algo: Algo, out: &mut Vec<u8>) -> bool {
        match self.get(algo) {
            Some(b) => {
                hex::encode_into(b, out);
                true
            }
            None => false,
        }
    }
}

impl std::fmt::Debug for Digests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(a, b)| (a.name(), hex::encode(b))))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Published test vectors: RFC 1321 (MD5), FIPS 180 examples (SHA-1, SHA-256), and the XXH3-64 of empty
    // input from xxHash's own sanity test (seed 0).
    const EMPTY: [(Algo, &str); 4] = [
        (Algo::Md5, "d41d8cd98f00b204e9800998ecf8427e"),
        (Algo::Sha1, "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        (
            Algo::Sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
        (Algo::Xxh3, "2d06800538d394c2"),
    ];
    const ABC: [(Algo, &str); 3] = [
        (Algo::Md5, "900150983cd24fb0d6963f7d28e17f72"),
        (Algo::Sha1, "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (
            Algo::Sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
    ];

    #[test]
    fn known_vectors() {
        let d = Hasher::digest(Algos::all(), b"");
        for (a, hex) in EMPTY {
            assert_eq!(d.hex(a).unwrap(), hex, "{a} of nothing");
        }
        let d = Hasher::digest(Algos::all(), b"abc");
        for (a, hex) in ABC {
            assert_eq!(d.hex(a).unwrap(), hex, "{a} of abc");
        }
    }

    #[test]
    fn one_pass_equals_each_alone_whatever_the_pieces() {
        // Long enough to cross several slices, fed in uneven pieces.
        let data: Vec<u8> = (0..300_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut all = Hasher::new(Algos::all());
        for piece in data.chunks(77_777) {
            all.update(piece);
        }
        let all = all.finish();
        assert_eq!(all.algos(), Algos::all());
        for a in Algo::ALL {
            let alone = Hasher::digest(a, &data);
            assert_eq!(alone.algos(), Algos::from(a));
            assert_eq!(all.get(a), alone.get(a), "{a}");
        }
    }

    #[test]
    fn a_reader_is_fed_whole() {
        let data = vec![7u8; 3 << 20 | 5];
        let mut h = Hasher::new(Algos::all());
        assert_eq!(h.update_reader(&data[..]).unwrap(), data.len() as u64);
        assert_eq!(h.finish(), Hasher::digest(Algos::all(), &data));
    }

    #[test]
    fn digests_hold_only_what_was_computed() {
        let d = Hasher::digest(Algos::parse("sha1,xxh3").unwrap(), b"x");
        assert_eq!(d.get(Algo::Md5), None);
        assert_eq!(d.hex(Algo::Sha256), None);
        assert_eq!(
            d.iter().map(|(a, b)| (a, b.len())).collect::<Vec<_>>(),
            [(Algo::Sha1, 20), (Algo::Xxh3, 8)]
        );
        let mut copy = Digests::default();
        for (a, b) in d.iter() {
            copy.set(a, b);
        }
        assert_eq!(copy, d);
        assert!(format!("{d:?}").contains("sha1"));
    }
}
