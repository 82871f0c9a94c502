//! An EWF (E01) image through `container::open` and reads of a few ranges: section descriptors, the volume
//! section, tables and chunks. Sizes and offsets claimed by the bytes must never make it allocate or loop beyond
//! what the input can justify, nor panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("uffs-fuzz-ewf-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    // The input as a first segment; when it says a second follows, a copy of the input is it (so that the
    // segment checks are reached too).
    let first = dir.join("image.E01");
    if std::fs::write(&first, data).is_err() || std::fs::write(dir.join("image.E02"), data).is_err() {
        return;
    }
    if let Ok(Some(image)) = uffs_image::container::open(&first) {
        let len = image.len();
        let _ = (image.describe(), image.facts(), image.files());
        let mut buf = vec![0u8; 70_000];
        for at in [0, len / 3, len.saturating_sub(70_000), len.saturating_sub(100)] {
            let n = (len - at.min(len)).min(buf.len() as u64) as usize;
            let _ = image.read_at(&mut buf[..n], at);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
});
