//! Inputs the fuzz targets (`fuzz/fuzz_targets/fat.rs`, `exfat.rs`) found wrong, kept as they were found.

use std::collections::HashSet;

use uffs_fat::{ScanOptions, Volume};

/// A FAT16 image cut short inside its root folder (21,209 of 2,621,440 bytes): The Sleuth Kit numbers `$MBR`
/// after the directory-entry slots of the sectors the image holds, which put it on the id of the root's first
/// entry. Every id must be one entry's.
#[test]
fn a_truncated_image_gives_each_id_to_one_entry() {
    let img = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/fuzz-truncated-fat16.img"
    ))
    .unwrap();
    let v = Volume::open(img.as_slice()).unwrap();
    for deleted in [false, true] {
        let scan = v
            .scan(&ScanOptions {
                deleted,
                ..Default::default()
            })
            .unwrap();
        let mut ids = HashSet::new();
        for e in &scan.entries {
            assert!(ids.insert(e.id), "id {} twice ({:?})", e.id, e.name);
        }
        assert!(scan.entries.iter().any(|e| e.name == "$MBR"));
        assert!(!scan.warnings.is_empty(), "the cut is said");
    }
}
