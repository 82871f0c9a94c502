//! UDIF (`.dmg`) images through `container::open` and a few reads: the koly trailer, the property list's blkx
//! entries (base64 mish blocks), the chunk tables, and chunks of every method (zeros, stored, zlib, bzip2, ADC,
//! LZFSE, LZMA). The input is the whole file; the trailer's magic is kept so that every input gets past the
//! recognition. The seeds (fuzz/seed-corpus.sh) are keramics' five images macOS made, one per chunk method.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 512 {
        return;
    }
    let mut b = data.to_vec();
    let k = b.len() - 512;
    b[k..k + 4].copy_from_slice(b"koly");
    let dir = std::env::temp_dir().join(format!("uffs-fuzz-udif-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("image.dmg");
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
