//! A Btrfs device image: `uffs_btrfs::Volume::open`, `scan`, `facts`, `space`, and every compressed piece of a
//! scanned entry decoded; every run and piece inside the device, no panic, no hang. The input is a sparse image:
//! records of a block number (u32, little-endian, in 4 KiB blocks) and the block's 4,096 bytes, every other block
//! zeros, so that a few hundred KiB stand for trees tens of MB apart (the seeds, fuzz/seed-corpus.sh, are real
//! images' non-zero blocks); the superblock's magic is set so that every input with a block at 64 KiB gets past
//! `probe`.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use uffs_fs::ReadAt;

const BLOCK: usize = 4096;
/// The image an input stands for: 128 MiB.
const LEN: u64 = 128 << 20;

#[derive(Debug)]
struct Sparse(BTreeMap<u64, Vec<u8>>);

impl ReadAt for Sparse {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        if offset.checked_add(buf.len() as u64).is_none_or(|end| end > LEN) {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            let (block, within) = (at / BLOCK as u64, (at % BLOCK as u64) as usize);
            let take = (BLOCK - within).min(buf.len() - done);
            let dst = &mut buf[done..done + take];
            match self.0.get(&block) {
                Some(b) => dst.copy_from_slice(&b[within..within + take]),
                None => dst.fill(0),
            }
            done += take;
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        LEN
    }
}

fuzz_target!(|data: &[u8]| {
    let mut blocks = BTreeMap::new();
    for rec in data.chunks_exact(4 + BLOCK) {
        let n = u64::from(u32::from_le_bytes(rec[..4].try_into().unwrap()));
        if n < LEN / BLOCK as u64 {
            blocks.insert(n, rec[4..].to_vec());
        }
    }
    let sb = (uffs_btrfs::PROBE_LEN - 8) as u64;
    if let Some(b) = blocks.get_mut(&(sb / BLOCK as u64)) {
        let at = (sb % BLOCK as u64) as usize;
        b[at..at + 8].copy_from_slice(b"_BHRfS_M");
    }
    let raw = Sparse(blocks.clone());
    let Ok(vol) = uffs_btrfs::Volume::open(Sparse(blocks)) else {
        return;
    };
    let _ = vol.facts();
    let space = vol.space();
    let end = vol.superblock().dev_total_bytes;
    assert!(space.bytes_total == end);
    let Ok(scan) = vol.scan(&Default::default()) else {
        return;
    };
    for e in &scan.entries {
        for r in e.runs.iter().filter(|r| !r.is_hole()) {
            assert!(r.offset.checked_add(r.len).is_some_and(|e| e <= end), "{e:?}");
        }
        for p in &e.packed {
            assert!(p.disk.offset.checked_add(p.disk.len).is_some_and(|e| e <= end), "{e:?}");
            let mut b = vec![0u8; p.disk.len.min(1 << 20) as usize];
            if raw.read_exact_at(&mut b, p.disk.offset).is_ok() {
                let _ = uffs_fs::packed::decode(p.codec, &b, p.decoded_len.min(1 << 20) as usize);
            }
        }
    }
});
