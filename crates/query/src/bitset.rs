//! A fixed-size set of entry ids, one bit each, with whole-word boolean operations.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bitset {
    words: Vec<u64>,
    len: usize,
}

impl Bitset {
    pub fn empty(len: usize) -> Bitset {
        Bitset {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    pub fn full(len: usize) -> Bitset {
        let mut b = Bitset {
            words: vec![!0; len.div_ceil(64)],
            len,
        };
        b.trim();
        b
    }

    /// Clears the bits past `len` in the last word.
    fn trim(&mut self) {
        if let Some(last) = self.words.last_mut() {
            let used = self.len % 64;
            if used != 0 {
                *last &= (1u64 << used) - 1;
            }
        }
    }

    /// A set of `len` entries from its words (bit `i % 64` of word `i / 64`); missing words are empty.
    pub fn from_words(mut words: Vec<u64>, len: usize) -> Bitset {
        words.resize(len.div_ceil(64), 0);
        let mut b = Bitset { words, len };
        b.trim();
        b
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn words(&self) -> &[u64] {
        &self.words
    }

    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// Adds `i` (an id past the end, from a file not checked yet, is ignored).
    pub fn set(&mut self, i: usize) {
        if i < self.len {
            self.words[i / 64] |= 1 << (i % 64);
        }
    }

    /// Removes `i` (an id past the end is ignored).
    pub fn unset(&mut self, i: usize) {
        if i < self.len {
            self.words[i / 64] &= !(1 << (i % 64));
        }
    }

    /// Whether `i` is in the set (an id past the end is not).
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] & (1 << (i % 64)) != 0
    }

    pub fn count(&self) -> usize {
        count_fast(&self.words)
    }

    /// Whether fewer than `k` are in the set: counts only until it reaches `k` (a quarter of a full set's words,
    /// for the usual "is it a small part of the index" test).
    pub fn fewer_than(&self, k: usize) -> bool {
        const RUN: usize = 256;
        if k == 0 {
            return false;
        }
        let mut seen = 0;
        for run in self.words.chunks(RUN) {
            seen += count_fast(run);
            if seen >= k {
                return false;
            }
        }
        true
    }

    /// Keeps what is also in `o`. Runs of words already empty here are skipped without reading `o`: a
    /// targeted query's few hits are anded with the visible entries, nearly all of which are set.
    pub fn and(&mut self, o: &Bitset) {
        const RUN: usize = 8;
        for (a, b) in self.words.chunks_mut(RUN).zip(o.words.chunks(RUN)) {
            if a.iter().fold(0, |acc, w| acc | w) != 0 {
                a.iter_mut().zip(b).for_each(|(a, b)| *a &= b);
            }
        }
    }

    pub fn or(&mut self, o: &Bitset) {
        self.words
            .iter_mut()
            .zip(&o.words)
            .for_each(|(a, b)| *a |= b);
    }

    pub fn not(&mut self) {
        self.words.iter_mut().for_each(|w| *w = !*w);
        self.trim();
    }

    /// The set bits in ascending order.
    /// Clears the members for which `keep` is false, looking only at members (cheap for a sparse set).
    pub fn retain(&mut self, keep: impl Fn(u32) -> bool) {
        for (wi, w) in self.words.iter_mut().enumerate() {
            let mut b = *w;
            while b != 0 {
                let bit = b.trailing_zeros();
                b &= b - 1;
                if !keep((wi * 64) as u32 + bit) {
                    *w &= !(1u64 << bit);
                }
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some((wi * 64) as u32 + b)
            })
        })
    }
}

fn count_words(words: &[u64]) -> usize {
    words.iter().map(|w| w.count_ones() as usize).sum()
}

/// The bits set in `words`, with the popcnt instruction where the CPU has it.
fn count_fast(words: &[u64]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has the popcnt instruction (checked just above).
        return unsafe { count_with_popcnt(words) };
    }
    count_words(words)
}

/// The same count compiled with the popcnt instruction, which the baseline x86-64 target may not assume; without
/// it a count is emulated in a dozen instructions per word (a query counts its sets several times).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_with_popcnt(words: &[u64]) -> usize {
    count_words(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(n: usize, ids: impl IntoIterator<Item = usize>) -> Bitset {
        let mut b = Bitset::empty(n);
        ids.into_iter().for_each(|i| b.set(i));
        b
    }

    #[test]
    fn and_keeps_the_common_members_with_empty_runs_skipped() {
        let n = 5_000;
        let mut few = of(n, [3, 700, 701, 4_999]);
        let most = of(n, (0..n).filter(|i| i % 7 != 0 && *i != 4_999));
        few.and(&most);
        assert_eq!(few.iter().collect::<Vec<_>>(), [3, 701]);
        let mut all = Bitset::full(n);
        all.and(&most);
        assert_eq!(all.count(), most.count());
    }

    #[test]
    fn fewer_than_agrees_with_the_count() {
        for n in [0, 1, 63, 64, 65, 20_000, 70_001] {
            for b in [Bitset::empty(n), Bitset::full(n), of(n, (0..n).step_by(3))] {
                let c = b.count();
                for k in [0, 1, c.saturating_sub(1), c, c + 1, n.div_ceil(4)] {
                    assert_eq!(b.fewer_than(k), c < k, "n {n}, count {c}, k {k}");
                }
            }
        }
    }
}
