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
/// xxhash-rust, which uffs used before, fixes its choice when the program is compiled, which for a portable
/// build means SSE2. The values are the same.)
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
    /// The map is of the file (not a copy of its bytes in anonymous memory, as a test's): its pages may be let
    /// go and read back.
    file_backed: bool,
}

impl FileCheck {
    pub(crate) fn new(
        map: Arc<Mmap>,
        len: usize,
        data_start: usize,
        sums: Vec<u64>,
        file_backed: bool,
    ) -> FileCheck {
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
            file_backed,
        }
    }

    /// The map is of a file, whose pages a process may drop and read back (dropped pages of an anonymous map
    /// would read back as zeros).
    pub fn file_backed(&self) -> bool {
        self.file_backed
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

    fn verify(&self, chunks: impl IntoIterator<Item = usize>) -> Result<(), FileError> {
        let check = |i: usize| {
            let ok = chunk_sum(self.chunk_bytes(i), i) == self.sums[i];
            if ok {
                self.good[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
            }
            !ok
        };
        let todo: Vec<usize> = chunks.into_iter().filter(|&i| !self.is_good(i)).collect();
        // A few megabytes are hashed in less time than starting the other threads takes (a one-shot query
        // that read a few dozen chunks would otherwise start them for this alone).
        const ON_THIS_THREAD: usize = 64;
        let bad = if todo.len() <= ON_THIS_THREAD {
            todo.into_iter().any(check)
        } else {
            todo.into_par_iter().any(check)
        };
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
            Some(runs) => {
                let page = page_size();
                let mut chunks: Vec<usize> = runs
                    .into_iter()
                    .flat_map(|r| {
                        let (s, e) = (r.start * page, r.end * page);
                        let first = s.saturating_sub(self.data_start) / CHUNK;
                        let end = e.saturating_sub(self.data_start).div_ceil(CHUNK);
                        first..end.min(self.sums.len())
                    })
                    .collect();
                chunks.dedup();
                self.verify(chunks)
            }
            None => self.verify_all(),
        }
    }

    /// The runs of pages of the map (by number from its start) present in this process's page table.
    #[cfg(target_os = "linux")]
    pub(crate) fn touched_pages(&self) -> Option<Vec<Range<usize>>> {
        let page = page_size();
        let base = self.map.as_ptr() as usize;
        if !base.is_multiple_of(page) {
            return None;
        }
        let pages = self.len.div_ceil(page);
        let f = std::fs::File::open("/proc/self/pagemap").ok()?;
        pagemap_scan(&f, base, pages, page).or_else(|| pagemap_read(&f, base, pages, page))
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn touched_pages(&self) -> Option<Vec<Range<usize>>> {
        None
    }
}

/// The present pages of `pages` pages from address `base`, as runs, from the `PAGEMAP_SCAN` ioctl (Linux 6.7
/// and later), which walks the page table in the kernel and returns only the runs: reading `pagemap` instead
/// returns 8 bytes for every page of the map, touched or not (a quarter of a megabyte for a 116 MB index).
#[cfg(target_os = "linux")]
fn pagemap_scan(
    f: &std::fs::File,
    base: usize,
    pages: usize,
    page: usize,
) -> Option<Vec<Range<usize>>> {
    use std::os::fd::AsRawFd;
    /// `struct pm_scan_arg` of `<linux/fs.h>`.
    #[repr(C)]
    struct ScanArg {
        size: u64,
        flags: u64,
        start: u64,
        end: u64,
        walk_end: u64,
        vec: u64,
        vec_len: u64,
        max_pages: u64,
        category_inverted: u64,
        category_mask: u64,
        category_anyof_mask: u64,
        return_mask: u64,
    }
    /// `struct page_region`.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Region {
        start: u64,
        end: u64,
        categories: u64,
    }
    const PAGE_IS_PRESENT: u64 = 1 << 3;
    // _IOWR('f', 16, struct pm_scan_arg)
    const PAGEMAP_SCAN: u64 =
        3 << 30 | (std::mem::size_of::<ScanArg>() as u64) << 16 | (b'f' as u64) << 8 | 16;
    let end = (base + pages * page) as u64;
    let mut regions = vec![Region::default(); 256];
    let mut out = Vec::new();
    let mut start = base as u64;
    while start < end {
        let mut arg = ScanArg {
            size: std::mem::size_of::<ScanArg>() as u64,
            flags: 0,
            start,
            end,
            walk_end: 0,
            vec: regions.as_mut_ptr() as u64,
            vec_len: regions.len() as u64,
            max_pages: 0,
            category_inverted: 0,
            category_mask: PAGE_IS_PRESENT,
            category_anyof_mask: 0,
            return_mask: PAGE_IS_PRESENT,
        };
        // SAFETY: `arg` is a pm_scan_arg whose `vec` points at `vec_len` writable page_regions, which outlive the
        // call; the kernel writes only those and `walk_end`.
        let n = unsafe { libc::ioctl(f.as_raw_fd(), PAGEMAP_SCAN as _, &mut arg) };
        let n = usize::try_from(n).ok()?;
        for r in &regions[..n.min(regions.len())] {
            let (s, e) = (r.start as usize - base, r.end as usize - base);
            out.push(s / page..e.div_ceil(page));
        }
        if arg.walk_end <= start {
            return None;
        }
        start = arg.walk_end;
    }
    Some(out)
}

/// The present pages, from reading `pagemap` (8 bytes a page, bit 63: present in RAM and mapped here).
#[cfg(target_os = "linux")]
fn pagemap_read(
    f: &std::fs::File,
    base: usize,
    pages: usize,
    page: usize,
) -> Option<Vec<Range<usize>>> {
    use std::os::unix::fs::FileExt;
    let mut out: Vec<Range<usize>> = Vec::new();
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
            if e[7] & 0x80 != 0 {
                match out.last_mut() {
                    Some(r) if r.end == p + i => r.end += 1,
                    _ => out.push(p + i..p + i + 1),
                }
            }
        }
        p += n;
    }
    Some(out)
}

#[cfg(target_os = "linux")]
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(4096).max(1)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn page_size() -> usize {
    4096
}

#[cfg(test)]
mod tests {
    /// The kernel's scan of the page table and the page-by-page read of `pagemap` find the same runs: the
    /// pages touched in a map of a file, and nothing else.
    #[cfg(target_os = "linux")]
    #[test]
    fn pagemap_scan_and_read_agree() {
        use std::io::Write;
        let page = super::page_size();
        let dir = std::env::temp_dir().join(format!("uffs-pagemap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("map");
        let mut f = std::fs::File::create(&path).unwrap();
        for i in 0..64u8 {
            f.write_all(&vec![i; page]).unwrap();
        }
        drop(f);
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: a private file of this test, not changed while mapped.
        let map = unsafe { memmap2::Mmap::map(&f).unwrap() };
        let _ = map.advise(memmap2::Advice::Random);
        let mut sum = 0u64;
        for p in [0, 1, 2, 9, 40, 63] {
            sum += u64::from(map[p * page]);
        }
        assert_eq!(sum, 1 + 2 + 9 + 40 + 63);
        let base = map.as_ptr() as usize;
        let pm = std::fs::File::open("/proc/self/pagemap").unwrap();
        let read = super::pagemap_read(&pm, base, 64, page).unwrap();
        for p in [0, 1, 2, 9, 40, 63] {
            assert!(read.iter().any(|r| r.contains(&p)), "page {p} in {read:?}");
        }
        match super::pagemap_scan(&pm, base, 64, page) {
            Some(scan) => assert_eq!(scan, read),
            None => eprintln!("PAGEMAP_SCAN is not supported by this kernel"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The AVX2 or SSE2 XXH3 of twox-hash gives the values of xxhash-rust's, which wrote files before it (and
    /// which uffs used for every other XXH3 until it was dropped): the expected values were computed with
    /// xxhash-rust 0.8.19's `xxh3_64_with_seed` and `xxh3_64`. One-shot (chunk sums) and streaming over pieces
    /// (the header checksum of `file.rs`, a volume's change stamp) both.
    #[test]
    fn chunk_sums_are_xxh3() {
        use std::hash::Hasher as _;
        let bytes: Vec<u8> = (0..200_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for (len, seed, want) in [
            (0, 0, 0x2d06_8005_38d3_94c2),
            (3, 1, 0x5a28_f7ea_7240_f068),
            (240, 2, 0xa563_708f_e6a2_ebec),
            (241, 3, 0x9c4b_5a55_6122_6ee3),
            (65_536, 7, 0xe5a9_5283_48f1_ca36),
            (200_000, 99, 0x5d6f_206e_efcf_6216),
        ] {
            assert_eq!(
                super::chunk_sum(&bytes[..len], seed),
                want,
                "{len} bytes, seed {seed}"
            );
        }
        for (len, want) in [
            (241, 0xbc42_4a2c_480d_d281_u64),
            (65_536, 0x3215_2aa1_5c5f_f65a),
            (200_000, 0x55d4_4bab_173f_5da1),
        ] {
            for piece in [1, 8, 240, 1_000, 4_096, len] {
                let mut h = twox_hash::XxHash3_64::new();
                for p in bytes[..len].chunks(piece) {
                    h.write(p);
                }
                assert_eq!(h.finish(), want, "{len} bytes in pieces of {piece}");
            }
        }
    }
}
