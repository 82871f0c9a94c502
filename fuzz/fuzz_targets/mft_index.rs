//! A whole run of MFT records through the parser and the index builder: extension-record merging, parent
//! resolution, cycle breaking and directory totals must hold for any bytes, and every path must resolve.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uffs_index::batch::RecordBatch;
use uffs_index::{BuildOptions, Builder, VolumeMeta};
use uffs_mft::parse::{parse_chunk, ParseOptions};

fuzz_target!(|data: &[u8]| {
    let rs = 1024;
    let mut buf = data.to_vec();
    buf.truncate(buf.len() / rs * rs);
    let records = (buf.len() / rs) as u64;
    let mut batch = RecordBatch::default();
    // Both ways of sizing allocations: from the runs' clusters (odd inputs), or from the headers (cluster size
    // unknown, as for a raw $MFT capture).
    let cluster_size = if data.len() % 2 == 1 { 4096 } else { 0 };
    let opts = ParseOptions { record_size: rs, cluster_size, bitmap: None, include_unused: true };
    parse_chunk(&mut buf, 0, &opts, &mut batch);
    let meta = VolumeMeta { records_total: records, has_deleted: true, ..VolumeMeta::default() };
    let mut b = Builder::new(meta, BuildOptions { include_deleted: true }, records as usize);
    b.add_batch(&batch);
    let (idx, _) = b.finish();
    for id in 0..idx.len() as u32 {
        let _ = idx.path(id);
        assert!(idx.depth(id) <= idx.len());
    }
});
