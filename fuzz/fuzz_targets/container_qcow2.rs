//! A qcow2 image through `container::open` and reads of a few ranges: header, L1 and L2 tables, compressed
//! clusters, backing file names. Sizes claimed by the bytes must never make it allocate, panic or loop beyond what
//! the input can justify; damage is an error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("uffs-fuzz-qcow2-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("image.qcow2");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(Some(image)) = uffs_image::container::open(&path) {
        let _ = image.describe();
        let _ = image.files();
        let _ = image.facts();
        let len = image.len();
        let mut buf = vec![0u8; 200_000];
        for at in [0, 511, 65_535, len / 2, len.saturating_sub(1000)] {
            let n = (buf.len() as u64).min(len.saturating_sub(at)) as usize;
            let _ = image.read_at(&mut buf[..n], at);
        }
    }
    let _ = std::fs::remove_file(&path);
});
