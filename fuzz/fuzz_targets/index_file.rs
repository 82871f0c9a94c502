//! Any bytes as an index file opened in O(1), as a one-shot query opens it (the header's checksum resealed, so
//! mutations reach the data): every kind of search, sort, path and timeline must hold its bounds and end, and the
//! check of what was read then accepts or refuses without a panic. Seeded with damaged real index files.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use uffs_index::{file, EntryId};
use uffs_query::{parse, ParseOptions, SearchOptions, Searcher, SortKey};

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    file::reseal(&mut bytes);
    let Ok(idx) = file::open_bytes(&bytes) else {
        return;
    };
    let s = Searcher::new(Arc::new(idx));
    let opts = SearchOptions { include_deleted: true, include_streams: true };
    let keys = [SortKey::Name, SortKey::Path, SortKey::Size, SortKey::Extension, SortKey::Modified];
    for (i, q) in ["e", "system32/drivers", "*.dll", "size:>1kb", "dm:>2001", "parent:/WINDOWS", "depth:3", "dupe:"]
        .iter()
        .enumerate()
    {
        let Ok(expr) = parse(q, &ParseOptions { now: 0, case: None }) else { continue };
        let set = s.search(&expr, &opts);
        let hits: Vec<EntryId> = s.sorted(&set, Some(keys[i % keys.len()]), i % 2 == 1, Some(20));
        s.index().touch_rows(&hits);
        s.index().touch_timeline(&hits);
        for &id in hits.iter().take(3) {
            let _ = (s.index().path(id), s.index().timeline(id));
        }
    }
    // An export's pass over every entry's timeline.
    let _ = s.index().timelines(0..s.index().len() as EntryId).count();
    let _ = s.index().verify_touched();
    let _ = file::verify_all(s.index());
});
