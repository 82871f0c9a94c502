//! Read planning: which records to read, in as few large reads as the layout allows.
//!
//! With a bitmap, runs of records not in use are skipped, but a gap smaller than `merge_gap` records is read
//! through: one larger read costs less than two reads and a seek. Reads are then cut to at most `chunk_records`
//! records, the unit handed to a parser thread.

/// Whether `$MFT:$BITMAP` (`bits`) marks record `r` in use; records past its end are not.
pub fn in_bitmap(bits: &[u8], r: u64) -> bool {
    usize::try_from(r / 8)
        .ok()
        .and_then(|i| bits.get(i))
        .is_some_and(|b| b & (1 << (r % 8)) != 0)
}

/// A read of `records` consecutive records starting at `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub first: u64,
    pub records: u64,
}

#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    pub chunk_records: u64,
    pub merge_gap: u64,
    /// Read every record, used or not (to find deleted files).
    pub include_unused: bool,
}

/// Plans the reads of the records in `mapped` (ranges of record numbers that can be read). With a bitmap,
/// records it marks unused are left out unless `include_unused`.
pub fn plan(mapped: &[(u64, u64)], bitmap: Option<&[u8]>, opts: &PlanOptions) -> Vec<Chunk> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    match bitmap {
        Some(bits) if !opts.include_unused => {
            for &(lo, hi) in mapped {
                used_ranges(
                    bits,
                    lo,
                    hi.min(bits.len() as u64 * 8),
                    opts.merge_gap,
                    &mut ranges,
                );
            }
        }
        _ => ranges.extend_from_slice(mapped),
    }
    let step = opts.chunk_records.max(1);
    let mut chunks = Vec::new();
    for (mut s, e) in ranges {
        while s < e {
            let n = step.min(e - s);
            chunks.push(Chunk {
                first: s,
                records: n,
            });
            s += n;
        }
    }
    chunks
}

/// Appends the runs of set bits in `lo..hi` to `out`, joining runs separated by at most `gap` clear bits.
fn used_ranges(bits: &[u8], lo: u64, hi: u64, gap: u64, out: &mut Vec<(u64, u64)>) {
    let bit = |r: u64| in_bitmap(bits, r);
    let join_from = out.len();
    let mut r = lo;
    while r < hi {
        // Skip whole zero bytes quickly; most unused space is long runs.
        if r.is_multiple_of(8) && bits.get((r / 8) as usize).is_none_or(|&b| b == 0) {
            r += 8;
            continue;
        }
        if !bit(r) {
            r += 1;
            continue;
        }
        let start = r;
        while r < hi && bit(r) {
            r += 1;
        }
        let joinable = out.len() > join_from;
        match out.last_mut() {
            Some(last) if joinable && start - last.1 <= gap => last.1 = r,
            _ => out.push((start, r)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(gap: u64) -> PlanOptions {
        PlanOptions {
            chunk_records: 4,
            merge_gap: gap,
            include_unused: false,
        }
    }

    #[test]
    fn skips_unused_and_merges_small_gaps() {
        // Records 0-2 used, 3 free, 4-5 used, 6-23 free, 24 used.
        let bits = [0b0011_0111, 0, 0, 0b1];
        let c = plan(&[(0, 32)], Some(&bits), &opts(1));
        assert_eq!(
            c,
            vec![
                Chunk {
                    first: 0,
                    records: 4
                },
                Chunk {
                    first: 4,
                    records: 2
                },
                Chunk {
                    first: 24,
                    records: 1
                }
            ]
        );
        let c = plan(&[(0, 32)], Some(&bits), &opts(0));
        assert_eq!(
            c[0],
            Chunk {
                first: 0,
                records: 3
            }
        );
    }

    #[test]
    fn without_bitmap_reads_everything() {
        let c = plan(&[(0, 10)], None, &opts(0));
        assert_eq!(c.iter().map(|c| c.records).sum::<u64>(), 10);
        let c = plan(
            &[(0, 10)],
            Some(&[0]),
            &PlanOptions {
                include_unused: true,
                ..opts(0)
            },
        );
        assert_eq!(c.len(), 3);
    }
}
