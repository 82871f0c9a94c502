//! VHDX images through `container::open` and a few reads: headers, region tables, metadata (parent locators
//! included), the BAT, the log's replay. The input is the file's start, padded with zeros to 4 MiB; the target
//! reseals the CRC-32C of the headers, region tables and log entries it finds, so mutations get past the
//! checksums into what they guard. Run with `-max_len=1100000` to reach the metadata and the log.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "container_shared.rs"]
mod container_shared;
use uffs_image::container::crc32c;

fn reseal(b: &mut [u8], at: usize, len: usize, sig: &[u8]) {
    if b.len() >= at + len && &b[at..at + sig.len()] == sig {
        b[at + 4..at + 8].fill(0);
        let c = crc32c(&b[at..at + len]);
        b[at + 4..at + 8].copy_from_slice(&c.to_le_bytes());
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = data.to_vec();
    if b.len() < 4 << 20 {
        b.resize(4 << 20, 0);
    }
    b[..8].copy_from_slice(b"vhdxfile");
    reseal(&mut b, 64 << 10, 4096, b"head");
    reseal(&mut b, 128 << 10, 4096, b"head");
    reseal(&mut b, 192 << 10, 64 << 10, b"regi");
    reseal(&mut b, 256 << 10, 64 << 10, b"regi");
    // A log entry at 1 MiB (where Windows and qemu put the log), its length as it says.
    if b.len() > (1 << 20) + 12 {
        let len = u32::from_le_bytes(b[(1 << 20) + 8..(1 << 20) + 12].try_into().unwrap()) as usize;
        reseal(&mut b, 1 << 20, len.min(1 << 20), b"loge");
    }
    container_shared::open_and_read("vhdx", &b);
});
