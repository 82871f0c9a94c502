//! A FAT12/16/32 volume image: `uffs_fat::Volume::open`, `scan` with and without deleted entries, `facts`,
//! `space`; every entry's runs inside the image (or the volume its boot sector claims), ids unique, no panic, no allocation beyond what the image can
//! justify. The boot sector's signature and OEM name are set so that most inputs get past `probe`; the seeds
//! (fuzz/seed-corpus.sh) are mkfs.vfat images with files in them. See fat_shared.rs for the input's form.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "fat_shared.rs"]
mod shared;

fuzz_target!(|data: &[u8]| {
    if data.len() < 512 {
        return;
    }
    let claimed = shared::fat_claimed(data);
    let mut img = shared::image(data, claimed);
    // Past probe's signature checks, to what the BPB says.
    img[510] = 0x55;
    img[511] = 0xAA;
    if &img[3..11] == b"EXFAT   " || &img[3..11] == b"NTFS    " {
        img[3..11].copy_from_slice(b"mkfs.fat");
    }
    shared::check(&img, claimed);
});
