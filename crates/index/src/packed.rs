//! A column of unsigned numbers stored in as many bits each as its largest value needs: a permutation of 1.2M
//! entry ids takes 21 bits an entry instead of 32.
//!
//! Layout (also in the file, as one section of bytes): the values packed least significant bit first, then 8
//! zero bytes so that any value is read with one unaligned 8-byte load. A value is found by arithmetic, so
//! reading one costs a load, a shift and a mask, and a column read from a file is served from its mapped pages
//! like any other. The width (1 to 57 bits) follows from the length and the number of values: of the widths
//! that give a length, the writer uses the largest, which the reader takes (so opening a file reads none of
//! the column's bytes).

use std::ops::Range;

use crate::column::Col;

/// Bytes after the values, so the last value is read with one 8-byte load.
const TAIL: usize = 8;
/// The widest value: its bits and the up to 7 bits before it in its first byte fit one 8-byte load.
pub const MAX_WIDTH: u32 = 57;

#[derive(Debug, Clone, Default)]
pub struct Packed {
    bytes: Col<u8>,
    width: u32,
    len: usize,
}

/// The bits `v` needs (at least 1).
pub fn bits(v: u64) -> u32 {
    (64 - v.leading_zeros()).max(1)
}

/// The bytes a column of `len` values of `width` bits takes, tail included.
pub(crate) fn byte_len(len: usize, width: u32) -> usize {
    (len * width as usize).div_ceil(8) + TAIL
}

/// The largest width that makes as many bytes of `len` values as `width` does: what a reader finds.
pub(crate) fn canonical(len: usize, width: u32) -> u32 {
    (width..=MAX_WIDTH)
        .take_while(|&w| byte_len(len, w) == byte_len(len, width))
        .last()
        .unwrap_or(width)
}

impl Packed {
    /// `values` in the fewest bits that hold the largest of them.
    pub fn from_values(values: &[u32]) -> Packed {
        let width = bits(u64::from(values.iter().copied().max().unwrap_or(0)));
        Packed::with_width(values.iter().map(|&v| u64::from(v)), values.len(), width)
    }

    /// The `len` values of `values`, each of which fits `width` bits (at most [`MAX_WIDTH`]).
    pub fn with_width(values: impl Iterator<Item = u64>, len: usize, width: u32) -> Packed {
        assert!((1..=MAX_WIDTH).contains(&width), "width {width}");
        let width = canonical(len, width);
        let mut bytes = vec![0u8; byte_len(len, width)];
        // The values go into a 64-bit accumulator, stored as each fills: one store per 64 bits, where a
        // read-modify-write per value took 9 ns.
        let (mut acc, mut filled, mut at, mut count) = (0u64, 0u32, 0usize, 0usize);
        for v in values.take(len) {
            debug_assert!(v >> width == 0, "{v} does not fit {width} bits");
            acc |= v << filled;
            filled += width;
            if filled >= 64 {
                bytes[at..at + 8].copy_from_slice(&acc.to_le_bytes());
                at += 8;
                filled -= 64;
                // The bits of `v` that did not fit (none when it ended the word; `filled < width` here, so the
                // shift is under 64).
                acc = if filled == 0 {
                    0
                } else {
                    v >> (width - filled)
                };
            }
            count += 1;
        }
        let tail = (filled as usize).div_ceil(8);
        bytes[at..at + tail].copy_from_slice(&acc.to_le_bytes()[..tail]);
        assert_eq!(count, len, "fewer values than said");
        Packed {
            bytes: bytes.into(),
            width,
            len,
        }
    }

    /// Adds a value, which must fit the width. (The width only grows for a column of under 8 values, where
    /// another length can make a larger width canonical.)
    pub(crate) fn push(&mut self, v: u64) {
        assert!(v >> self.width == 0, "{v} does not fit {} bits", self.width);
        let i = self.len;
        let bytes = self.bytes.make_owned();
        bytes.resize(byte_len(i + 1, self.width), 0);
        let bit = i * self.width as usize;
        let at = bit / 8;
        let word = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        bytes[at..at + 8].copy_from_slice(&(word | v << (bit % 8)).to_le_bytes());
        self.len += 1;
        if canonical(self.len, self.width) != self.width {
            let values: Vec<u64> = (0..self.len).map(|i| self.at64(i)).collect();
            *self = Packed::with_width(values.into_iter(), self.len, self.width);
        }
    }

    /// A column of `len` values over `bytes` (read from a file), when they have its layout's length.
    pub(crate) fn from_bytes(bytes: Col<u8>, len: usize) -> Option<Packed> {
        let width = (1..=MAX_WIDTH)
            .rev()
            .find(|&w| byte_len(len, w) == bytes.len())?;
        Some(Packed { bytes, width, len })
    }

    /// The section's bytes, for writing.
    pub(crate) fn bytes(&self) -> &Col<u8> {
        &self.bytes
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Served from a mapped file, not copied.
    pub fn is_mapped(&self) -> bool {
        self.bytes.is_mapped()
    }
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Drops the column's pages from the process when it is mapped (they stay in the page cache; the next read
    /// maps them back): for a column just read whole once, such as an order a sort of everything walked. Only
    /// for a column mapped from a file (see [`crate::file::release_order_pages`]).
    pub(crate) fn release_pages(&self) {
        self.bytes.release_pages();
    }

    /// The `i`th value, of a column of 32-bit values (entry ids, ranks). Panics past the end, as a slice does.
    #[inline]
    pub fn at(&self, i: usize) -> u32 {
        self.at64(i) as u32
    }

    /// The `i`th value. Panics past the end, as a slice does.
    #[inline]
    pub fn at64(&self, i: usize) -> u64 {
        assert!(
            i < self.len,
            "index {i} out of range for a packed column of {}",
            self.len
        );
        read(&self.bytes, self.width, i)
    }

    /// The `i`th value, `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u32> {
        (i < self.len).then(|| self.at(i))
    }

    /// The `i`th value, `None` past the end.
    #[inline]
    pub fn get64(&self, i: usize) -> Option<u64> {
        (i < self.len).then(|| self.at64(i))
    }

    /// The values in order.
    pub fn iter(&self) -> Iter<'_> {
        self.range(0..self.len)
    }

    /// The values at positions `r` (clamped to the column).
    pub fn range(&self, r: Range<usize>) -> Iter<'_> {
        let end = r.end.min(self.len);
        Iter {
            bytes: &self.bytes,
            width: self.width,
            front: r.start.min(end),
            back: end,
        }
    }

    /// The first position in `r` where `pred` is false, for a column where it is true and then false along `r`
    /// (as [`slice::partition_point`]).
    pub fn partition_point(&self, r: Range<usize>, mut pred: impl FnMut(u32) -> bool) -> usize {
        let (mut lo, mut hi) = (r.start.min(self.len), r.end.min(self.len));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.at(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

impl From<Vec<u32>> for Packed {
    fn from(v: Vec<u32>) -> Packed {
        Packed::from_values(&v)
    }
}

/// Value `i` of `bytes` packed `width` bits a value. In bounds for every value of a column: its bytes end 8
/// bytes after the byte where its last value starts.
#[inline]
fn read(bytes: &[u8], width: u32, i: usize) -> u64 {
    let bit = i * width as usize;
    let at = bit / 8;
    let word = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    (word >> (bit % 8)) & ((1u64 << width) - 1)
}

/// The values of a stretch of a [`Packed`] column, from either end (as 32-bit values: ids and ranks).
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    bytes: &'a [u8],
    width: u32,
    front: usize,
    back: usize,
}

impl Iterator for Iter<'_> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        (self.front < self.back).then(|| {
            self.front += 1;
            read(self.bytes, self.width, self.front - 1) as u32
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<u32> {
        (self.front < self.back).then(|| {
            self.back -= 1;
            read(self.bytes, self.width, self.back) as u32
        })
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_at_every_width() {
        for width in [1u32, 2, 7, 8, 9, 21, 31, 32] {
            // (Widths past 32 are tested through `with_width` below.)
            let max = if width == 32 {
                u32::MAX
            } else {
                (1 << width) - 1
            };
            let mut x = 0x2545_F491_u32;
            let values: Vec<u32> = (0..1000)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    if i == 500 {
                        max
                    } else {
                        x & max
                    }
                })
                .collect();
            let p = Packed::from_values(&values);
            assert!(p.width() >= width);
            assert_eq!(p.to_vec(), values);
            assert_eq!(p.range(10..20).rev().collect::<Vec<_>>(), {
                let mut v = values[10..20].to_vec();
                v.reverse();
                v
            });
            assert_eq!(p.get(1000), None);
            let back = Packed::from_bytes(p.bytes().clone(), values.len()).expect("its own bytes");
            assert_eq!(back.to_vec(), values);
            assert!(Packed::from_bytes(p.bytes().clone(), values.len() + 1).is_none());
        }
    }

    #[test]
    fn wide_values_come_back() {
        for width in [33u32, 52, 57] {
            let values: Vec<u64> = (0..777u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - width))
                .collect();
            let p = Packed::with_width(values.iter().copied(), values.len(), width);
            assert_eq!(
                (0..values.len()).map(|i| p.at64(i)).collect::<Vec<_>>(),
                values
            );
        }
    }

    #[test]
    fn an_empty_column_and_a_sorted_search() {
        let p = Packed::from_values(&[]);
        assert!(p.is_empty() && p.iter().next().is_none());
        let sorted: Vec<u32> = (0..300).map(|i| i * 3).collect();
        let p = Packed::from_values(&sorted);
        assert_eq!(p.partition_point(0..300, |v| v < 100), 34);
        assert_eq!(p.partition_point(50..60, |v| v < 100), 50);
    }
}
