//! MBR, EBR and GPT parsing, and a disk's table read through them (the input is the disk).
#![no_main]

use std::io;

use libfuzzer_sys::fuzz_target;
use uffs_image::partition::{parse_ebr, parse_gpt_entry, parse_gpt_header, parse_mbr, read_table};
use uffs_image::ReadAt;

#[derive(Debug)]
struct Disk<'a>(&'a [u8]);

impl ReadAt for Disk<'_> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.0.get(start..end))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = parse_mbr(data);
    let _ = parse_ebr(data);
    if let Ok(h) = parse_gpt_header(data) {
        assert!(h.entry_size >= 128);
    }
    for e in data.chunks(128) {
        let _ = parse_gpt_entry(e);
    }
    if let Ok(Some(t)) = read_table(&Disk(data), &data[..data.len().min(512)]) {
        assert!(!t.partitions.is_empty());
    }
});
