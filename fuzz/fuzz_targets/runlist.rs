//! Data runlists: every run decoded, LCN and VCN arithmetic checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uffs_ntfs::runlist::Runlist;

fuzz_target!(|data: &[u8]| {
    let (start, bytes) = match data.split_first() {
        Some((s, rest)) => (u64::from(*s) << 32, rest),
        None => (0, data),
    };
    let mut vcn = start;
    for run in Runlist::new(bytes, start) {
        let Ok(run) = run else { break };
        assert_eq!(run.vcn, vcn);
        vcn = run.vcn + run.length;
    }
});
