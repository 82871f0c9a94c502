//! An ext2/3/4 volume image: `uffs_ext::Volume::open`, `scan` with and without deleted names, `facts`, `space`;
//! every run of a scanned entry inside the volume the superblock claims, no panic, no hang, no allocation beyond
//! what the image can justify. The superblock's magic is set so that every input gets past `probe`; the seeds
//! (fuzz/seed-corpus.sh, zero-extended here) are `mkfs.ext2/3/4 -d` images with files in them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2048 {
        return;
    }
    let mut img = data.to_vec();
    img[1080..1082].copy_from_slice(&0xEF53u16.to_le_bytes());
    // Seeds are cut after their last non-zero byte: zero-extended to the size the superblock claims (up to 8 MiB).
    let blocks = u64::from(u32::from_le_bytes(img[1028..1032].try_into().unwrap()));
    let log = u32::from_le_bytes(img[1048..1052].try_into().unwrap());
    if let Some(claimed) = (log <= 6).then(|| blocks.saturating_mul(1024 << log)) {
        if claimed <= 8 << 20 && claimed > img.len() as u64 {
            img.resize(claimed as usize, 0);
        }
    }
    let Ok(vol) = uffs_ext::Volume::open(img.as_slice()) else {
        return;
    };
    let _ = vol.facts();
    let space = vol.space();
    let claimed = vol.superblock().volume_len();
    assert!(space.bytes_in_use <= space.bytes_total);
    for deleted in [false, true] {
        let Ok(scan) = vol.scan(&uffs_ext::ScanOptions { deleted, ..Default::default() }) else {
            continue;
        };
        for e in &scan.entries {
            for r in e.runs.iter().filter(|r| !r.is_hole()) {
                assert!(r.offset.checked_add(r.len).is_some_and(|end| end <= claimed), "{e:?}");
            }
        }
    }
});
