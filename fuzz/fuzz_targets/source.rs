//! A whole source through `open` and the index build: boot sector, MFT runlists and attribute list, bitmap,
//! read planning, parsing, merging. Sizes claimed by the bytes must never make it allocate or loop beyond what
//! the input can justify.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("uffs-fuzz-source-{}", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(src) = uffs_source::open(path.to_str().unwrap_or(""), None) {
        for vol in &src.volumes {
            let _ = vol.records_in_use();
            let opts = uffs_mft::ScanOptions { include_deleted: true, threads: 1, ..Default::default() };
            if let Ok((idx, _)) = uffs_mft::build_index(vol, &opts, &|_, _| {}) {
                for id in 0..idx.len().min(10_000) as u32 {
                    let _ = idx.path(id);
                }
            }
        }
    }
    let _ = std::fs::remove_file(&path);
});
