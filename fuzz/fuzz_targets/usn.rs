//! USN change journal records: the scanner never panics, yields records that lie inside the input, in order,
//! and accounts for every byte it does not yield as a record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uffs_ntfs::usn::{reason_names, starts_with_record, Item, UsnJournalMax, UsnRecord, UsnScanner};

fuzz_target!(|data: &[u8]| {
    let _ = starts_with_record(data);
    let _ = UsnJournalMax::parse(data);
    if let Ok(r) = UsnRecord::parse(data) {
        assert!(r.len as usize <= data.len());
        let _ = r.name_string();
        let _ = reason_names(r.reason);
    }
    let base = 4096;
    let mut s = UsnScanner::new(data, base);
    let (mut last, mut yielded) = (base, 0u64);
    for item in s.by_ref() {
        let (at, len) = match item {
            Item::Record(at, r) => (at, u64::from(r.len)),
            Item::RangeTracking(at, len) => (at, u64::from(len)),
            Item::Damaged(at, len) => (at, len),
        };
        assert!(at >= last && at + len <= base + data.len() as u64);
        last = at + len;
        yielded += len;
    }
    let c = s.counts();
    assert_eq!(yielded + c.zero_bytes, data.len() as u64);
    // In pieces, as a journal is read: the cut ends the first piece at an incomplete record, if any.
    let cut = (data.len() / 2) & !7;
    let mut p = UsnScanner::new(&data[..cut], base).stop_at_incomplete();
    for _ in p.by_ref() {}
    assert!(p.position() <= cut);
    for _ in UsnScanner::new(&data[p.position()..], base + p.position() as u64) {}
});
