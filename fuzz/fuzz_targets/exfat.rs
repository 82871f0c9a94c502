//! An exFAT volume image: `uffs_fat::Volume::open`, `scan` with and without deleted entries, `facts`,
//! `space`; every entry's runs inside the image (or the volume its boot sector claims), ids unique, no panic, no allocation beyond what the image can
//! justify. The boot sector's file system name is set to "EXFAT   " so that every input gets past `probe`; the
//! seeds (fuzz/seed-corpus.sh) are mkfs.exfat images with files in them. See fat_shared.rs for the input's form.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "fat_shared.rs"]
mod shared;

fuzz_target!(|data: &[u8]| {
    if data.len() < 512 {
        return;
    }
    let claimed = shared::exfat_claimed(data);
    let mut img = shared::image(data, claimed);
    img[3..11].copy_from_slice(b"EXFAT   ");
    shared::check(&img, claimed);
});
