//! File contents: LZNT1 decompression of any bytes, and a stream read through hostile runlists (pieces out of
//! order, overlapping, past the volume, huge holes) with any sizes and compression unit over a little volume in
//! memory. Nothing panics, reads stay within the volume and what is read is bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uffs_mft::content::StreamReader;
use uffs_ntfs::lznt1;

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    // Whole input as LZNT1 data into a unit of 1 to 16 chunks.
    let mut unit = vec![0u8; 4096 * (1 + usize::from(head & 15))];
    if let Ok(n) = lznt1::decompress(rest, &mut unit) {
        assert!(n <= unit.len());
    }
    // Then as a stream: a header of sizes, two runlist pieces, and the volume.
    if rest.len() < 24 {
        return;
    }
    let (hdr, rest) = rest.split_at(24);
    let u64_at = |i: usize| u64::from_le_bytes(hdr[i..i + 8].try_into().unwrap());
    let cs = 512u64 << (hdr[0] % 4);
    let cu = if hdr[1] % 3 == 0 { 0 } else { hdr[1] % 8 };
    let size = u64_at(8) >> (hdr[2] % 64);
    let init = u64_at(16) >> (hdr[3] % 64);
    let split = usize::from(hdr[4]).min(rest.len());
    let (runs, volume) = rest.split_at(split);
    let cut = usize::from(hdr[5]).min(runs.len());
    let second_start = u64::from(hdr[6]);
    let pieces = [(0u64, &runs[..cut]), (second_start, &runs[cut..])];
    let Ok(mut r) = StreamReader::from_runlists(volume.to_vec(), cs, &pieces, size, init, cu) else {
        return;
    };
    let mut buf = vec![0u8; 64 << 10];
    for k in 0..4u64 {
        let off = size / 4 * k + u64::from(hdr[7 + k as usize]);
        if let Ok(n) = r.read_at(off, &mut buf) {
            assert!(n as u64 <= size.saturating_sub(off));
        }
    }
});
