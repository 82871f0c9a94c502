//! Inputs the fuzz target (`fuzz/fuzz_targets/ext.rs`) found wrong, kept as they were found and read as it reads
//! them: the superblock's magic set, zero-extended to the size the superblock claims.

use uffs_ext::{ScanOptions, Volume};

/// The image as the fuzz target makes it from `name` in tests/data.
fn image(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut img = std::fs::read(path).unwrap();
    img[1080..1082].copy_from_slice(&0xEF53u16.to_le_bytes());
    let blocks = u64::from(u32::from_le_bytes(img[1028..1032].try_into().unwrap()));
    let log = u32::from_le_bytes(img[1048..1052].try_into().unwrap());
    if let Some(claimed) = (log <= 6).then(|| blocks.saturating_mul(1024 << log)) {
        if claimed <= 8 << 20 && claimed > img.len() as u64 {
            img.resize(claimed as usize, 0);
        }
    }
    img
}

/// A group descriptor that places its block bitmap, inode bitmap or inode table past the volume's end: the
/// `$Bitmaps` and `$InodeTables` entries kept runs there (at 181 GB of a volume of a few KiB). Every run of every
/// entry must lie inside the volume.
#[test]
fn a_descriptor_past_the_end_gives_no_run_outside_the_volume() {
    let img = image("fuzz-descriptor-past-end.bin");
    let vol = Volume::open(img.as_slice()).unwrap();
    let claimed = vol.superblock().volume_len();
    for deleted in [false, true] {
        let scan = vol
            .scan(&ScanOptions {
                deleted,
                ..Default::default()
            })
            .unwrap();
        assert!(scan.entries.iter().any(|e| e.name == "$Bitmaps"));
        for e in &scan.entries {
            for r in e.runs.iter().filter(|r| !r.is_hole()) {
                assert!(
                    r.offset
                        .checked_add(r.len)
                        .is_some_and(|end| end <= claimed),
                    "{e:?}"
                );
            }
        }
    }
}
