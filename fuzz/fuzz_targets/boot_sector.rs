//! The NTFS boot sector: every accepted geometry is self-consistent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uffs_ntfs::boot::BootSector;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = BootSector::parse(data) {
        assert!(b.cluster_size.is_power_of_two() && b.cluster_size <= 2 * 1024 * 1024);
        assert!(b.record_size.is_power_of_two() && b.record_size >= 512);
        let _ = b.mft_offset();
        let _ = b.volume_size();
    }
});
