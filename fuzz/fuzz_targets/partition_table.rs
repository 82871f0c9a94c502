//! MBR, EBR and GPT parsing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uffs_ntfs::partition::{parse_ebr, parse_gpt_entry, parse_gpt_header, parse_mbr};

fuzz_target!(|data: &[u8]| {
    let _ = parse_mbr(data);
    let _ = parse_ebr(data);
    if let Ok(h) = parse_gpt_header(data) {
        assert!(h.entry_size >= 128);
    }
    for e in data.chunks(128) {
        let _ = parse_gpt_entry(e);
    }
});
