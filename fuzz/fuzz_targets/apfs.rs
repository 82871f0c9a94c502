//! An APFS container image: `uffs_apfs::Reader::open`, its facts and space, a scan of the container whole, of
//! each volume alone and of each snapshot; every run of a scanned entry inside the image, no panic, no hang, no
//! allocation beyond what the image can justify. The input is a sparse image, as the HFS+ target's: records of a
//! block number (u32 LE, below 6,144) and that 4 KiB block. Block 0 keeps its `NXSB` magic, and every non-zero
//! block gets its Fletcher-64 checksum put right, so that mutations reach the parsers rather than stopping at a
//! checksum. The seeds (fuzz/seed-corpus.sh) are the non-zero blocks of the dfvfs container macOS made and of
//! containers `scripts/make-apfs.py` wrote.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uffs_fs::Reader as _;

const BLOCK: usize = 4096;
const MAX: usize = 24 << 20;

fuzz_target!(|data: &[u8]| {
    let mut img = vec![0u8; BLOCK];
    for rec in data.chunks_exact(4 + BLOCK) {
        let n = u32::from_le_bytes(rec[..4].try_into().unwrap()) as usize;
        if (n + 1) * BLOCK > MAX {
            continue;
        }
        if img.len() < (n + 1) * BLOCK {
            img.resize((n + 1) * BLOCK, 0);
        }
        img[n * BLOCK..(n + 1) * BLOCK].copy_from_slice(&rec[4..]);
    }
    img[32..36].copy_from_slice(b"NXSB");
    for b in img.chunks_mut(BLOCK) {
        if b.iter().any(|&x| x != 0) {
            let sum = uffs_apfs::object::fletcher64(b);
            b[..8].copy_from_slice(&sum.to_le_bytes());
        }
    }
    let len = img.len() as u64;
    let Ok(reader) = uffs_apfs::Reader::open(Box::new(img)) else {
        return;
    };
    let check = |r: &dyn uffs_fs::Reader| {
        let _ = r.facts();
        if let Some(space) = r.space() {
            assert!(space.bytes_in_use <= space.bytes_total);
        }
        let Ok(scan) = r.scan(&uffs_fs::ScanOptions::default()) else {
            return;
        };
        for e in &scan.entries {
            for run in e.runs.iter().filter(|r| !r.is_hole()) {
                // Runs may point past a cut image (the reads then fail), never overflow.
                assert!(run.offset.checked_add(run.len).is_some(), "{e:?}");
            }
        }
        let _ = len;
    };
    check(&reader);
    for n in 1..=reader.volumes().len().min(4) as u32 {
        if let Ok(v) = reader.volume(n) {
            check(&*v);
        }
    }
    for s in reader.states().iter().take(4) {
        if let Ok(v) = reader.state(s.id) {
            check(&*v);
        }
    }
});
