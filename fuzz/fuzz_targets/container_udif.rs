//! UDIF (`.dmg`) images through `container::open` and a few reads: the koly trailer, the property list's blkx
//! entries (base64 mish blocks), the chunk tables, and chunks of every method (zeros, stored, zlib, bzip2, ADC,
//! LZFSE, LZMA). The input is the whole file; the trailer's magic is kept so that every input gets past the
//! recognition. The seeds (fuzz/seed-corpus.sh) are keramics' five images macOS made, one per chunk method.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "container_shared.rs"]
mod container_shared;

fuzz_target!(|data: &[u8]| {
    if data.len() < 512 {
        return;
    }
    let mut b = data.to_vec();
    let k = b.len() - 512;
    b[k..k + 4].copy_from_slice(b"koly");
    container_shared::open_and_read("dmg", &b);
});
