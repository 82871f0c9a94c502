//! A column of FILETIMEs stored as offsets from the column's earliest usual time, in the coarsest unit its times
//! share, in as few bits as the span of its usual times needs (frame of reference, as columnar stores do).
//!
//! Most of a volume's times lie within a few decades of each other: 52 or so bits of 100 ns, not 64. Times
//! copied from FAT volumes or archives are whole seconds (or 2 s), and a volume whose times are nearly all
//! whole seconds stores them in seconds: 28 bits for 8 years. The few times outside the span (0 for unknown, a
//! year 1601 or 2100 written by a broken tool) and the few that are not a whole number of the unit are kept
//! apart, their code being the all-ones value.
//!
//! Reading a time is a packed read, a compare, a multiply and an add (a binary search among the times kept
//! apart, for them).

use crate::index::EntryId;
use crate::packed::{bits, canonical, Packed, MAX_WIDTH};
use crate::sparse::Sparse;

/// Units tried, coarsest first: a second, a millisecond, a microsecond, FILETIME's 100 ns.
const UNITS: [u64; 4] = [10_000_000, 10_000, 10, 1];
/// A unit is used when this share of the times (per mille) are whole numbers of it.
const UNIT_SHARE: usize = 990;
/// The span covers the times between two quantiles of a sample, `cut` per mille from either end, one of these
/// (the rest are kept apart).
const SPAN_CUTS: [usize; 5] = [0, 1, 5, 10, 20];
/// Times sampled to choose the unit and span.
const SAMPLE: usize = 1 << 16;

#[derive(Debug, Clone)]
pub struct Times {
    /// The time of code 0, and the unit of a code.
    base: u64,
    unit: u64,
    pub(crate) codes: Packed,
    /// The times that have the all-ones code.
    pub(crate) apart: Sparse<u64>,
}

impl Default for Times {
    fn default() -> Self {
        Times::from_values(&[])
    }
}

impl Times {
    pub fn from_values(times: &[u64]) -> Times {
        let step = (times.len() / SAMPLE).max(1);
        let sample: Vec<u64> = times.iter().step_by(step).copied().collect();
        let whole = |u: u64| sample.iter().filter(|&&t| t % u == 0).count();
        let unit = UNITS
            .into_iter()
            .find(|&u| whole(u) * 1000 >= sample.len() * UNIT_SHARE)
            .unwrap_or(1);
        let mut codes: Vec<u64> = sample
            .iter()
            .filter(|&&t| t % unit == 0)
            .map(|&t| t / unit)
            .collect();
        codes.sort_unstable();
        // The span between two quantiles that costs least: each code's bits, and 12 bytes for each time kept
        // apart (all ones is "kept apart", so the width holds one more than the span).
        let span = |cut: usize| -> (u64, u32) {
            let n = codes.len();
            let (lo, hi) = (codes[n * cut / 1000], codes[n - 1 - n * cut / 1000]);
            (lo, bits((hi - lo).saturating_add(1)).min(MAX_WIDTH))
        };
        let cost = |cut: usize| span(cut).1 as usize * 1000 + 96 * 2 * cut;
        let (lo, width) = match codes.len() {
            0 => (0, 1),
            _ => span(SPAN_CUTS.into_iter().min_by_key(|&c| cost(c)).unwrap_or(0)),
        };
        let base = lo.saturating_mul(unit);
        // (The width a short column is stored with may be larger: "kept apart" is all ones of that one.)
        let width = canonical(times.len(), width);
        let apart_code = (1u64 << width) - 1;
        // (No division where the unit is FILETIME's own, as on most volumes: a division by a unit not known when
        // compiling takes some forty cycles, per time.)
        let code = |t: u64| -> Option<u64> {
            let c = t.checked_sub(base)?;
            let (q, r) = if unit == 1 {
                (c, 0)
            } else {
                (c / unit, c % unit)
            };
            (r == 0 && q < apart_code).then_some(q)
        };
        // One pass: the times without a code are kept apart as they are met.
        let mut apart = Sparse::default();
        let packed = Packed::with_width(
            times.iter().enumerate().map(|(i, &t)| {
                code(t).unwrap_or_else(|| {
                    apart.push(i as EntryId, t);
                    apart_code
                })
            }),
            times.len(),
            width,
        );
        Times {
            base,
            unit,
            codes: packed,
            apart,
        }
    }

    /// The column read from a file: its frame (`[base, unit]`), codes and the times kept apart.
    pub(crate) fn from_parts([base, unit]: [u64; 2], codes: Packed, apart: Sparse<u64>) -> Times {
        Times {
            base,
            unit,
            codes,
            apart,
        }
    }

    /// The time of code 0, and the unit of a code.
    pub(crate) fn frame(&self) -> [u64; 2] {
        [self.base, self.unit]
    }

    /// The time of entry `id` (`None` past the end).
    #[inline]
    pub fn get(&self, id: EntryId) -> Option<u64> {
        let c = self.codes.get64(id as usize)?;
        if c == (1u64 << self.codes.width()) - 1 {
            return Some(self.apart.get(id).unwrap_or(0));
        }
        // (Wrapping: a file not checked yet may hold any frame; it gives a wrong time, never a fault.)
        Some(self.base.wrapping_add(c.wrapping_mul(self.unit)))
    }

    /// The time of entry `id`, which must be in range.
    #[inline]
    pub fn at(&self, id: EntryId) -> u64 {
        self.get(id).expect("entry id in range")
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// Adds the time of the next entry.
    pub(crate) fn push(&mut self, t: u64) {
        let id = self.codes.len() as EntryId;
        if self.len() < 8 {
            // A short column's codes may widen as it grows (see `crate::packed`): coded again.
            let mut all: Vec<u64> = (0..id).map(|i| self.at(i)).collect();
            all.push(t);
            *self = Times::from_values(&all);
            return;
        }
        let apart_code = (1u64 << self.codes.width()) - 1;
        let code = t
            .checked_sub(self.base)
            .filter(|c| self.unit != 0 && c % self.unit == 0 && c / self.unit < apart_code)
            .map(|c| c / self.unit);
        self.codes.push(code.unwrap_or(apart_code));
        if code.is_none() {
            self.apart.push(id, t);
        }
    }

    pub(crate) fn check_shape(&self, n: usize) -> Result<(), &'static str> {
        if self.codes.len() != n {
            return Err("a time column has the wrong size");
        }
        self.apart.check_shape()
    }

    pub(crate) fn validate(&self, n: usize) -> Result<(), &'static str> {
        self.apart.validate(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(times: &[u64]) -> Times {
        let t = Times::from_values(times);
        let mut pushed = Times::from_values(&times[..times.len() / 2]);
        for &x in &times[times.len() / 2..] {
            pushed.push(x);
        }
        for (i, &x) in times.iter().enumerate() {
            assert_eq!(t.get(i as u32), Some(x), "entry {i}");
            assert_eq!(pushed.get(i as u32), Some(x), "pushed entry {i}");
        }
        assert_eq!(t.get(times.len() as u32), None);
        t
    }

    #[test]
    fn every_time_comes_back() {
        // Whole seconds over 8 years, with an unknown time, 1601, far future and a few odd 100 ns times.
        let mut x = 0x1234_5678_9ABC_DEF1_u64;
        let times: Vec<u64> = (0..20_000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match i % 997 {
                    0 => 0,
                    1 => 1,
                    2 => u64::MAX,
                    3 => 0x01D0_0000_0000_0001 + x % 1000,
                    _ => {
                        0x01D0_0000_0000_0000 / 10_000_000 * 10_000_000
                            + x % 250_000_000 * 10_000_000
                    }
                }
            })
            .collect();
        let t = round_trip(&times);
        assert_eq!(t.unit, 10_000_000);
        assert!(t.codes.width() <= 28, "{}", t.codes.width());
        assert!(t.apart.ids.len() < 200, "{}", t.apart.ids.len());
        // 100 ns times over decades.
        let times: Vec<u64> = (0..5000u64)
            .map(|i| 0x01C0_0000_0000_0000 + i.wrapping_mul(0x9E37_79B9_7F4A) % (1 << 52))
            .collect();
        let t = round_trip(&times);
        assert!(
            t.unit == 1 && t.codes.width() <= 52,
            "{} {}",
            t.unit,
            t.codes.width()
        );
        // 100 ns times with a few kept apart.
        let mut odd = times.clone();
        odd[7] = 0;
        odd[4000] = u64::MAX;
        let t = round_trip(&odd);
        assert!(t.unit == 1 && t.apart.ids.len() >= 2, "{}", t.unit);
        round_trip(&[]);
        round_trip(&[0, 0, 0]);
        round_trip(&[u64::MAX; 3]);
    }
}
