//! A VMDK through `container::open` and reads of a few ranges: a sparse extent (its header, footer, grain
//! directory and tables, compressed grains) when the input starts with `KDMV`, else a descriptor file whose
//! extents are files beside it. Sizes claimed by the bytes must never make it allocate or loop beyond what the
//! input can justify, and damaged input is an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("uffs-fuzz-vmdk-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let path = dir.join("disk.vmdk");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    // Extent files a descriptor may name: one sparse-looking, one flat.
    let _ = std::fs::write(dir.join("disk-s001.vmdk"), data);
    let _ = std::fs::write(dir.join("disk-flat.vmdk"), [0x5au8; 4096]);
    if let Ok(Some(image)) = uffs_image::container::open(&path) {
        let _ = image.describe();
        let _ = image.files();
        let len = image.len();
        let mut buf = vec![0u8; 70_000];
        for at in [0, len / 3, len.saturating_sub(70_000), len.saturating_sub(1)] {
            let n = (len - at.min(len)).min(buf.len() as u64) as usize;
            let _ = image.read_at(&mut buf[..n], at);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
});
