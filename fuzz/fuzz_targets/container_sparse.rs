//! Apple sparse images (`.sparseimage`) through `container::open` and a few reads: the header's band size, disk
//! size and band table (bands stored twice, past the file's end, past the disk's bands). The input is the whole
//! file; its magic is kept so that every input gets past the recognition. The seed (fuzz/seed-corpus.sh) is
//! dfvfs's HFS+ volume laid out as a sparse image.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "container_shared.rs"]
mod container_shared;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4096 {
        return;
    }
    let mut b = data.to_vec();
    b[..4].copy_from_slice(b"sprs");
    container_shared::open_and_read("sparseimage", &b);
});
