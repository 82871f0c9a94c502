//! An HFS+ volume image: `uffs_hfs::Volume::open`, `scan` with and without deleted names, `facts`, `space`; every run of a scanned entry inside
//! the volume the header claims, no panic, no hang, no allocation beyond what the image can justify. The input is
//! a sparse image, as the Btrfs target's: records of a block number (u32 LE, below 6,144) and that 4 KiB block,
//! zero-extended to the size the header claims (up to 24 MiB); the header's signature is kept `H+` or `HX` so
//! that every input gets past `probe`. The seeds (fuzz/seed-corpus.sh) are the non-zero blocks of the dfvfs image
//! macOS made and of images `scripts/make-hfsplus.py` wrote.
#![no_main]

use libfuzzer_sys::fuzz_target;

const BLOCK: usize = 4096;
const MAX: usize = 24 << 20;

fuzz_target!(|data: &[u8]| {
    let mut img = vec![0u8; 2 * BLOCK];
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
    if &img[1024..1026] != b"HX" {
        img[1024..1026].copy_from_slice(b"H+");
    }
    let block_size = u64::from(u32::from_be_bytes(img[1064..1068].try_into().unwrap()));
    let blocks = u64::from(u32::from_be_bytes(img[1068..1072].try_into().unwrap()));
    if let Some(claimed) = blocks.checked_mul(block_size) {
        if claimed <= MAX as u64 && claimed > img.len() as u64 {
            img.resize(claimed as usize, 0);
        }
    }
    let Ok(vol) = uffs_hfs::Volume::open(img.as_slice()) else {
        return;
    };
    let _ = vol.facts();
    let space = vol.space();
    assert!(space.bytes_in_use <= space.bytes_total);
    let claimed = vol.header().volume_len();
    for deleted in [false, true] {
        let opts = uffs_hfs::ScanOptions {
            deleted,
            ..Default::default()
        };
        let Ok(scan) = vol.scan(&opts) else {
            return;
        };
        for e in &scan.entries {
            for r in e.runs.iter().filter(|r| !r.is_hole()) {
                assert!(r.offset.checked_add(r.len).is_some_and(|end| end <= claimed), "{e:?}");
            }
        }
    }
});
