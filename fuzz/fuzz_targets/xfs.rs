//! An XFS volume image: `uffs_xfs::Volume::open`, `scan` with and without deleted names, `facts`, `space`; every run of a scanned entry inside
//! the volume the superblock claims, no panic, no hang, no allocation beyond what the image can justify. The
//! superblock's magic is set so that every input gets past `probe`; the seeds (fuzz/seed-corpus.sh, zero-extended
//! here) are small `mkfs.xfs` images with files in them, their logs zeroed and cut after their last non-zero byte.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 512 {
        return;
    }
    let mut img = data.to_vec();
    img[..4].copy_from_slice(b"XFSB");
    // Zero-extended to the size the superblock claims (up to 24 MiB).
    let blocks = u64::from_be_bytes(img[8..16].try_into().unwrap());
    let block_size = u64::from(u32::from_be_bytes(img[4..8].try_into().unwrap()));
    if let Some(claimed) = blocks.checked_mul(block_size) {
        if claimed <= 24 << 20 && claimed > img.len() as u64 {
            img.resize(claimed as usize, 0);
        }
    }
    let Ok(vol) = uffs_xfs::Volume::open(img.as_slice()) else {
        return;
    };
    let _ = vol.facts();
    let space = vol.space();
    let claimed = vol.superblock().volume_len();
    assert!(space.bytes_in_use <= space.bytes_total);
    for deleted in [false, true] {
        let opts = uffs_xfs::ScanOptions {
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
