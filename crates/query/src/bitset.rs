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

    /// Whether `i` is in the set (an id past the end is not).
    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.words[i / 64] & (1 << (i % 64)) != 0
    }

    pub fn count(&self) -> usize {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has the popcnt instruction (checked just above).
            return unsafe { count_with_popcnt(&self.words) };
        }
        count_words(&self.words)
    }

    pub fn and(&mut self, o: &Bitset) {
        self.words
            .iter_mut()
            .zip(&o.words)
            .for_each(|(a, b)| *a &= b);
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

/// The same count compiled with the popcnt instruction, which the baseline x86-64 target may not assume; without
/// it a count is emulated in a dozen instructions per word (a query counts its sets several times).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_with_popcnt(words: &[u64]) -> usize {
    count_words(words)
}
