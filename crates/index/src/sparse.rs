//! Columns whose values are mostly implied, stored as what is not: the allocated size of an entry (nearly always
//! none, or its size rounded up to the allocation unit), its reparse tag (nearly always none) and the high half
//! of its size (nearly always zero).
//!
//! An 8-byte allocated size, a 4-byte reparse tag and the 4-byte high half of the size per entry were 16 of an
//! entry's bytes on the benchmark volume; these take under half a byte.

use crate::column::{Col, Plain};
use crate::index::EntryId;

/// Values of a few entries, the rest having none: the entries ascending, and their values.
#[derive(Debug, Clone, Default)]
pub struct Sparse<T: Plain> {
    pub(crate) ids: Col<u32>,
    pub(crate) values: Col<T>,
}

impl<T: Plain + PartialEq> Sparse<T> {
    /// The entries of `values` that are not `none`.
    pub fn from_values(values: impl Iterator<Item = T>, none: T) -> Sparse<T> {
        let (ids, values): (Vec<u32>, Vec<T>) = values
            .enumerate()
            .filter(|(_, v)| *v != none)
            .map(|(i, v)| (i as u32, v))
            .unzip();
        Sparse {
            ids: ids.into(),
            values: values.into(),
        }
    }

    /// The value of entry `id`, if it has one. (In a file not checked yet, ids out of order give a wrong answer,
    /// never a fault.)
    pub fn get(&self, id: EntryId) -> Option<T> {
        if self.ids.is_empty() {
            return None;
        }
        let k = self.ids.binary_search(&id).ok()?;
        self.values.get(k).copied()
    }

    /// Adds the value of entry `id`, after every entry so far.
    pub(crate) fn push(&mut self, id: EntryId, v: T) {
        self.ids.make_owned().push(id);
        self.values.make_owned().push(v);
    }

    pub(crate) fn check_shape(&self) -> Result<(), &'static str> {
        if self.ids.len() != self.values.len() {
            return Err("a sparse column's parts disagree");
        }
        Ok(())
    }

    /// The entries are ascending and of an index of `n` entries.
    pub(crate) fn validate(&self, n: usize) -> Result<(), &'static str> {
        let ok = self.ids.windows(2).all(|w| w[0] < w[1])
            && self.ids.last().is_none_or(|&id| (id as usize) < n);
        if !ok {
            return Err("a sparse column's entries are out of order");
        }
        Ok(())
    }
}

/// How an entry's allocated size follows from its size: 2 bits an entry.
mod code {
    pub const NONE: u64 = 0;
    /// The size rounded up to the allocation unit.
    pub const ROUNDED: u64 = 1;
    pub const SIZE: u64 = 2;
    /// Kept apart.
    pub const APART: u64 = 3;
}
const PER_WORD: usize = 32;

/// The allocated size of every entry, as a 2-bit code that says how it follows from the size, with the
/// allocation unit and the sizes that follow from nothing.
#[derive(Debug, Clone, Default)]
pub struct Allocated {
    pub(crate) codes: Col<u64>,
    /// One value: the allocation unit the codes round to (a power of two).
    pub(crate) unit: Col<u64>,
    pub(crate) apart: Sparse<u64>,
}

/// Allocation units tried: 512 bytes to 2 MiB.
const UNITS: std::ops::RangeInclusive<u32> = 9..=21;

impl Allocated {
    /// The allocated sizes `alloc` of entries whose sizes are `size`.
    pub fn from_values(alloc: &[u64], size: &[u64]) -> Allocated {
        // The unit that explains the most allocations among the first ones (a volume has one cluster size),
        // gathered once. (Smallest first among equals: `max_by_key` keeps the last.)
        let sample: Vec<(u64, u64)> = alloc
            .iter()
            .zip(size)
            .filter(|(&a, _)| a != 0)
            .take(1 << 16)
            .map(|(&a, &s)| (a, s))
            .collect();
        let unit = UNITS
            .rev()
            .map(|b| 1u64 << b)
            .max_by_key(|&u| {
                sample
                    .iter()
                    .filter(|&&(a, s)| Some(a) == s.checked_next_multiple_of(u))
                    .count()
            })
            .unwrap_or(4096);
        let mut a = Allocated {
            unit: vec![unit].into(),
            ..Allocated::default()
        };
        let mut codes = vec![0u64; alloc.len().div_ceil(PER_WORD)];
        let mut apart = Sparse::default();
        for (i, (&al, &s)) in alloc.iter().zip(size).enumerate() {
            let c = a.code_of(al, s);
            codes[i / PER_WORD] |= c << (2 * (i % PER_WORD));
            if c == code::APART {
                apart.push(i as u32, al);
            }
        }
        a.codes = codes.into();
        a.apart = apart;
        a
    }

    fn unit(&self) -> u64 {
        self.unit
            .first()
            .copied()
            .filter(|u| u.is_power_of_two())
            .unwrap_or(4096)
    }

    fn code_of(&self, alloc: u64, size: u64) -> u64 {
        if alloc == 0 {
            code::NONE
        } else if Some(alloc) == size.checked_next_multiple_of(self.unit()) {
            code::ROUNDED
        } else if alloc == size {
            code::SIZE
        } else {
            code::APART
        }
    }

    /// The allocated size of entry `id`, whose size is `size`.
    pub fn get(&self, id: EntryId, size: u64) -> u64 {
        let i = id as usize;
        let word = self.codes.get(i / PER_WORD).copied().unwrap_or(0);
        match (word >> (2 * (i % PER_WORD))) & 3 {
            code::NONE => 0,
            code::ROUNDED => size.checked_next_multiple_of(self.unit()).unwrap_or(size),
            code::SIZE => size,
            _ => self.apart.get(id).unwrap_or(0),
        }
    }

    /// Adds entry `id` (after every entry so far) with allocated size `alloc` and size `size`.
    pub(crate) fn push(&mut self, id: EntryId, alloc: u64, size: u64) {
        if self.unit.is_empty() {
            self.unit = vec![4096].into();
        }
        let i = id as usize;
        let c = self.code_of(alloc, size);
        let codes = self.codes.make_owned();
        codes.resize((i + 1).div_ceil(PER_WORD), 0);
        codes[i / PER_WORD] |= c << (2 * (i % PER_WORD));
        if c == code::APART {
            self.apart.push(id, alloc);
        }
    }

    /// The O(1) checks of a file's allocated sizes for an index of `n` entries.
    pub(crate) fn check_shape(&self, n: usize) -> Result<(), &'static str> {
        if self.codes.len() != n.div_ceil(PER_WORD) || self.unit.len() != 1 {
            return Err("the allocated sizes have the wrong size");
        }
        self.apart.check_shape()
    }

    pub(crate) fn validate(&self, n: usize) -> Result<(), &'static str> {
        if !self.unit[0].is_power_of_two() {
            return Err("the allocation unit is not a power of two");
        }
        self.apart.validate(n)
    }
}

/// File sizes: the low 32 bits of each, a bit per entry for those of 4 GiB or more, and their high halves.
#[derive(Debug, Clone, Default)]
pub struct Sizes {
    pub(crate) low: Col<u32>,
    pub(crate) big: Col<u64>,
    pub(crate) high: Sparse<u32>,
}

impl Sizes {
    pub fn from_values(sizes: &[u64]) -> Sizes {
        let mut big = vec![0u64; sizes.len().div_ceil(64)];
        for (i, _) in sizes.iter().enumerate().filter(|(_, &s)| s >> 32 != 0) {
            big[i / 64] |= 1 << (i % 64);
        }
        Sizes {
            low: sizes.iter().map(|&s| s as u32).collect::<Vec<_>>().into(),
            big: big.into(),
            high: Sparse::from_values(sizes.iter().map(|&s| (s >> 32) as u32), 0),
        }
    }

    /// The size of entry `id` (`None` past the end).
    pub fn get(&self, id: EntryId) -> Option<u64> {
        let i = id as usize;
        let low = u64::from(*self.low.get(i)?);
        let big = self.big.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0);
        Some(match big {
            true => low | u64::from(self.high.get(id).unwrap_or(0)) << 32,
            false => low,
        })
    }

    pub fn len(&self) -> usize {
        self.low.len()
    }
    pub fn is_empty(&self) -> bool {
        self.low.is_empty()
    }

    /// Adds the size of entry `id`, after every entry so far.
    pub(crate) fn push(&mut self, id: EntryId, size: u64) {
        let i = id as usize;
        self.low.make_owned().push(size as u32);
        let big = self.big.make_owned();
        big.resize((i + 1).div_ceil(64), 0);
        if size >> 32 != 0 {
            big[i / 64] |= 1 << (i % 64);
            self.high.push(id, (size >> 32) as u32);
        }
    }

    pub(crate) fn check_shape(&self, n: usize) -> Result<(), &'static str> {
        if self.low.len() != n || self.big.len() != n.div_ceil(64) {
            return Err("the sizes have the wrong size");
        }
        self.high.check_shape()
    }

    pub(crate) fn validate(&self, n: usize) -> Result<(), &'static str> {
        self.high.validate(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allocated_size_comes_back() {
        let size = [0, 1, 4096, 4097, 10, 5000, 1 << 40, u64::MAX, 300, 8192];
        let alloc = [0, 4096, 4096, 8192, 10, 65536, 1 << 40, u64::MAX, 0, 4096];
        let a = Allocated::from_values(&alloc, &size);
        assert_eq!(a.unit[0], 4096);
        for i in 0..size.len() {
            assert_eq!(a.get(i as u32, size[i]), alloc[i], "entry {i}");
        }
        // Only 5000 -> 65536 and 8192 -> 4096 (a sparse file) follow from nothing.
        assert_eq!(&a.apart.ids[..], &[5, 9]);
        let mut pushed = Allocated::from_values(&alloc[..3], &size[..3]);
        for i in 3..size.len() {
            pushed.push(i as u32, alloc[i], size[i]);
        }
        for i in 0..size.len() {
            assert_eq!(pushed.get(i as u32, size[i]), alloc[i], "pushed entry {i}");
        }
    }

    #[test]
    fn every_size_comes_back() {
        let v = [0, 1, u32::MAX as u64, 1 << 32, u64::MAX, 5 << 40 | 7, 12];
        let s = Sizes::from_values(&v);
        let mut pushed = Sizes::from_values(&v[..2]);
        for (i, &x) in v.iter().enumerate().skip(2) {
            pushed.push(i as u32, x);
        }
        for (i, &x) in v.iter().enumerate() {
            assert_eq!(s.get(i as u32), Some(x));
            assert_eq!(pushed.get(i as u32), Some(x));
        }
        assert_eq!(s.get(v.len() as u32), None);
        assert_eq!(&s.high.ids[..], &[3, 4, 5]);
    }

    #[test]
    fn sparse_values_come_back() {
        let tags = [0u32, 0, 0xA000_000C, 0, 0xA000_0003, 0];
        let s = Sparse::from_values(tags.iter().copied(), 0);
        assert_eq!(&s.ids[..], &[2, 4]);
        for (i, &t) in tags.iter().enumerate() {
            assert_eq!(s.get(i as u32).unwrap_or(0), t);
        }
    }
}
