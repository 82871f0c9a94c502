//! The checksums of an index file's data, checked a chunk at a time and only once.
//!
//! The data after the header is cut into [`CHUNK`]-byte chunks, each with an xxh3 checksum (seeded with its
//! number, so two chunks trading places do not pass) in a table that the header's own checksum covers. Opening a
//! file checks only the header and the tables; the chunks are checked when they are read:
//! * a daemon checks them all once, at load ([`FileCheck::verify_all`]);
//! * a one-shot query checks the chunks it read before it prints anything ([`FileCheck::verify_touched`]). The
//!   query runs on bytes not yet checked, which is safe because every accessor holds its bounds whatever the
//!   bytes (damage can only make a wrong answer, which is then refused). Which chunks were read is what the
//!   process's page table says: on Linux `/proc/self/pagemap` marks each page of the map that this process has
//!   touched. Elsewhere every chunk is checked.
//!
//! The page table is coarser than what was read: the kernel maps pages around the one touched (64 KiB of
//! fault-around, and on recent kernels with large page-cache folios, such as ext4's since Linux 6.16, the whole
//! folio: up to 2 MiB). So a query that reads a few bytes in many places checks more than it read.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use memmap2::Mmap;
use rayon::prelude::*;

use crate::file::FileError;

/// Bytes per checked chunk: as much as a page fault maps around the faulting page, so a chunk is what one
/// touch brings in.
pub const CHUNK: usize = 64 * 1024;

/// The checksum of chunk `i`: XXH3-64 seeded with `i`. (twox-hash picks AVX2 or SSE2 when the process starts;
/// xxhash-rust's choice is fixed when the program is compiled, which for a portable build means SSE2. The
/// values are the same.)
pub fn chunk_sum(bytes: &[u8], i: usize) -> u64 {
    twox_hash::XxHash3_64::oneshot_with_seed(i as u64, bytes)
}

/// The checksums of one file's chunks, and which have been found good.
#[derive(Debug)]
pub struct FileCheck {
    map: Arc<Mmap>,
    /// The file's bytes (a test's anonymous map may be longer).
    len: usize,
    /// Where chunk 0 starts.
    data_start: usize,
    /// The expected checksums, by chunk.
    sums: Vec<u64>,
    /// A bit per chunk: checked and good.
    good: Vec<AtomicU64>,
    /// Every chunk is checked and good.
    all_good: AtomicBool,
}

impl FileCheck {
    pub(crate) fn new(map: Arc<Mmap>, len: usize, data_start: usize, sums: Vec<u64>) -> FileCheck {
        let good = (0..sums.len().div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        FileCheck {
            map,
            len,
            data_start,
            sums,
            good,
            all_good: AtomicBool::new(false),
        }
    }

    /// The file's map.
    pub fn map(&self) -> &Arc<Mmap> {
        &self.map
    }

    /// The chunks a file of `len` bytes with data from `data_start` has.
    pub fn chunks(data_start: usize, len: usize) -> usize {
        len.saturating_sub(data_start).div_ceil(CHUNK)
    }

    fn chunk_bytes(&self, i: usize) -> &[u8] {
        let start = self.data_start + i * CHUNK;
        &self.map[start..(start + CHUNK).min(self.len)]
    }

    fn is_good(&self, i: usize) -> bool {
        self.good[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
    }

    fn verify(&self, chunks: impl IntoParallelIterator<Item = usize>) -> Result<(), FileError> {
        let bad = chunks
            .into_par_iter()
            .filter(|&i| !self.is_good(i))
            .any(|i| {
                let ok = chunk_sum(self.chunk_bytes(i), i) == self.sums[i];
                if ok {
                    self.good[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
                }
                !ok
            });
        if bad {
            return Err(FileError::Corrupt("a section's checksum does not match"));
        }
        Ok(())
    }

    /// Every chunk has been checked and found good.
    pub fn all_good(&self) -> bool {
        self.all_good.load(Ordering::Relaxed)
    }

    /// Checks every chunk (on all cores).
    pub fn verify_all(&self) -> Result<(), FileError> {
        if !self.all_good.load(Ordering::Relaxed) {
            self.verify(0..self.sums.len())?;
            self.all_good.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Checks the chunks that hold any of the bytes `range` of the file.
    pub fn verify_range(&self, range: Range<usize>) -> Result<(), FileError> {
        let first = range.start.saturating_sub(self.data_start) / CHUNK;
        let end = range
            .end
            .saturating_sub(self.data_start)
            .div_ceil(CHUNK)
            .min(self.sums.len());
        self.verify(first..end.max(first))
    }

    /// Checks the chunks of every page of the file that this process has read (on Linux, from its page
    /// table); elsewhere, every chunk.
    pub fn verify_touched(&self) -> Result<(), FileError> {
        if self.all_good.load(Ordering::Relaxed) {
            return Ok(());
        }
        match self.touched_pages() {
            Some(pages) => {
                let page = page_size();
                let chunks: Vec<usize> = pages
                    .into_iter()
                    .flat_map(|p| {
                        let (s, e) = (p * page, (p + 1) * page);
                        let first = s.saturating_sub(self.data_start) / CHUNK;
                        let end = e.saturating_sub(self.data_start).div_ceil(CHUNK);
                        first..end.min(self.sums.len())
                    })
                    .collect();
                let mut chunks = chunks;
                chunks.dedup();
                self.verify(chunks)
            }
            None => self.verify_all(),
        }
    }

    /// The pages of the map (by number from its start) present in this process's page table.
    #[cfg(target_os = "linux")]
    fn touched_pages(&self) -> Option<Vec<usize>> {
        use std::os::unix::fs::FileExt;
        let page = page_size();
        let base = self.map.as_ptr() as usize;
        if !base.is_multiple_of(page) {
            return None;
        }
        let pages = self.len.div_ceil(page);
        let f = std::fs::File::open("/proc/self/pagemap").ok()?;
        let mut out = Vec::new();
        // A few megabytes of page table entries at a time.
        const BATCH: usize = 64 * 1024;
        let mut buf = vec![0u8; BATCH * 8];
        let mut p = 0;
        while p < pages {
            let n = BATCH.min(pages - p);
            let bytes = &mut buf[..n * 8];
            f.read_exact_at(bytes, ((base / page + p) * 8) as u64)
                .ok()?;
            for (i, e) in bytes.chunks_exact(8).enumerate() {
                // Bit 63: present in RAM and mapped here.
                if e[7] & 0x80 != 0 {
                    out.push(p + i);
                }
            }
            p += n;
        }
        Some(out)
    }

    #[cfg(not(target_os = "linux"))]
    fn touched_pages(&self) -> Option<Vec<usize>> {
        None
    }
}

#[cfg(target_os = "linux")]
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(4096).max(1)
}

#[cfg(not(target_os = "linux"))]
fn page_size() -> usize {
    4096
}

#[cfg(test)]
mod tests {
    /// The AVX2 or SSE2 XXH3 of twox-hash gives the values of xxhash-rust's, which wrote files before it.
    #[test]
    fn chunk_sums_are_xxh3() {
        let bytes: Vec<u8> = (0..200_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for (len, seed) in [
            (0, 0),
            (3, 1),
            (240, 2),
            (241, 3),
            (65_536, 7),
            (200_000, 99),
        ] {
            assert_eq!(
                super::chunk_sum(&bytes[..len], seed),
                xxhash_rust::xxh3::xxh3_64_with_seed(&bytes[..len], seed as u64)
            );
        }
    }
}
