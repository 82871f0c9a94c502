//! Apple sparse images (`.sparseimage`) through `container::open` and a few reads: the header's band size, disk
//! size and band table (bands stored twice, past the file's end, past the disk's bands). The input is the whole
//! file; its magic is kept so that every input gets past the recognition. The seed (fuzz/seed-corpus.sh) is
//! dfvfs's HFS+ volume laid out as a sparse image.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4096 {
        return;
    }
    let mut b = data.to_vec();
    b[..4].copy_from_slice(b"sprs");
    let dir = std::env::temp_dir().join(format!("uffs-fuzz-sparse-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("image.sparseimage");
    if std::fs::write(&path, &b).is_err() {
        return;
    }
    if let Ok(Some(image)) = uffs_image::container::open(&path) {
        let _ = image.describe();
        let len = image.len();
        let mut buf = vec![0u8; 64 << 10];
        for at in [0, len / 3, len / 2, len.saturating_sub(buf.len() as u64)] {
            let n = (buf.len() as u64).min(len - at.min(len)) as usize;
            let _ = image.read_at(&mut buf[..n], at);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
});
