//! An index opened in O(1) (`uffs_index::file::open`) is searched before its data is checked, so the engine must
//! hold its bounds on any bytes: damaged copies of a real index file (random flips, garbage runs, parent cycles,
//! offsets out of order, orders that are no permutation) are searched with every kind of term and sort, their
//! hits' paths built and their rows and timelines read, without a panic or an endless loop; and a check of what
//! was read, or of everything, then refuses them.

use std::path::Path;

use uffs_index::paths::FolderPaths;
use uffs_index::{file, EntryId, Index};
use uffs_query::{parse, ParseOptions, SearchOptions, Searcher, SortKey};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn good_file(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/windows-xp-mft/MFT");
    let src = uffs_source::open(path.to_str().expect("utf-8"), None).expect("open sample");
    let (mut idx, _) =
        uffs_mft::build_index(&src.volumes[0], &Default::default(), &|_, _| {}).expect("build");
    idx.add_search_aids();
    let out =
        std::env::temp_dir().join(format!("uffs-unchecked-{name}-{}.uffs", std::process::id()));
    file::write(&idx, &out).expect("write");
    let bytes = std::fs::read(&out).expect("read back");
    let _ = std::fs::remove_file(&out);
    bytes
}

/// Where the data starts (the header's field at byte 96), and the sections as (id, element size, range).
fn layout(b: &[u8]) -> (usize, Vec<(u32, usize, std::ops::Range<usize>)>) {
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let sections = (0..u32_at(12) as usize)
        .map(|i| {
            let e = 128 + i * 32;
            let off = u64_at(e + 8);
            (u32_at(e), u32_at(e + 4) as usize, off..off + u64_at(e + 16))
        })
        .collect();
    (u64_at(96), sections)
}

/// Everything a one-shot query may do with an index: every kind of term, every sort, the hits' paths and rows.
fn exercise(idx: Index) {
    let s = Searcher::new(std::sync::Arc::new(idx));
    let queries = [
        "e",
        "system",
        "windows",
        "kernel32.dll",
        "*.dll",
        "s*m",
        "?a*",
        "regex:^[a-z]+\\.exe$",
        "windows/system32",
        "system32/drivers/etc",
        "wholeword:system",
        "case:System",
        "ext:dll;exe",
        "size:>1kb",
        "size:0",
        "dm:>2001",
        "dc:2000..2010",
        "da:<1990",
        "attrib:h",
        "parent:/WINDOWS",
        "depth:3",
        "len:>12",
        "dupe:",
        "deleted:",
        "stream:",
        "folder:",
        "file: !a",
        "<dll | exe> !system32 size:>1mb",
    ];
    let opts = SearchOptions {
        include_deleted: true,
        include_streams: true,
    };
    let keys = [
        None,
        Some(SortKey::Name),
        Some(SortKey::Path),
        Some(SortKey::Size),
        Some(SortKey::Extension),
        Some(SortKey::Created),
        Some(SortKey::Modified),
        Some(SortKey::Accessed),
    ];
    for (i, q) in queries.iter().enumerate() {
        let Ok(expr) = parse(q, &ParseOptions { now: 0, case: None }) else {
            continue;
        };
        let set = s.search(&expr, &opts);
        // Two of the sorts per query, a different pair each time.
        for (k, key) in keys.iter().enumerate().skip(i % 4 * 2).take(2) {
            let limit = [None, Some(3), Some(200)][(i + k) % 3];
            let hits: Vec<EntryId> = s.sorted(&set, *key, k % 2 == 1, limit);
            let idx = s.index();
            idx.touch_rows(&hits);
            idx.touch_timeline(&hits);
            for &id in hits.iter().take(3) {
                let _ = (idx.path(id), idx.depth(id), idx.kind(id), idx.name(id));
                let _ = idx.timeline(id);
            }
        }
    }
    let idx = s.index();
    let folders = FolderPaths::build(idx);
    let mut line = Vec::new();
    for id in (0..idx.len() as EntryId).step_by(7) {
        line.clear();
        folders.path_into(idx, id, &mut line);
    }
    // An export's pass over every timeline, and from places inside blocks and past the end.
    let n = idx.len() as EntryId;
    assert_eq!(idx.timelines(0..n).count(), n as usize);
    for start in [1, 63, 64, 65, n / 2, n - 1, n, n + 100] {
        let _ = idx.timelines(start..start.saturating_add(70)).count();
        let _ = idx.timeline(start);
    }
}

#[test]
fn searching_damaged_data_holds_its_bounds_and_the_check_refuses_it() {
    let good = good_file("data");
    let (data_start, sections) = layout(&good);
    // The good file passes both ways in.
    exercise(file::open_bytes(&good).expect("open"));
    file::from_bytes(&good).expect("read");
    let mut rng = Rng(0x5EED_1DEA);
    for round in 0..120 {
        let mut bad = good.clone();
        let (_, _, r) = &sections[rng.below(sections.len())];
        match round % 4 {
            // A few flipped bytes anywhere in the data.
            0 => {
                for _ in 0..1 + rng.below(8) {
                    let at = data_start + rng.below(bad.len() - data_start);
                    bad[at] ^= 1 << rng.below(8);
                }
            }
            // A run of garbage inside one section.
            1 if !r.is_empty() => {
                let at = r.start + rng.below(r.len());
                for b in &mut bad[at..(at + 1 + rng.below(4096)).min(r.end)] {
                    *b = rng.next() as u8;
                }
            }
            // One section's bytes all set to a large value or to one entry (parent cycles, ids and offsets
            // out of range, orders that repeat one entry; packed orders of ids past the last entry).
            2 => {
                let v = [0xFF, 0x00, 0x01][rng.below(3)];
                for b in &mut bad[r.clone()] {
                    *b = v;
                }
            }
            // Two sections' bytes trade places (where they are as long).
            _ => {
                let same: Vec<_> = sections
                    .iter()
                    .filter(|s| s.2.len() == r.len() && s.2 != *r)
                    .collect();
                if let Some((_, _, o)) = same.first() {
                    let (a, b) = (bad[r.clone()].to_vec(), bad[o.clone()].to_vec());
                    bad[r.clone()].copy_from_slice(&b);
                    bad[o.clone()].copy_from_slice(&a);
                }
            }
        }
        if bad == good {
            continue;
        }
        // The header and tables are intact, so it opens in O(1), unless the damage is in the source's text,
        // which is checked at open.
        let Ok(idx) = file::open_bytes(&bad) else {
            continue;
        };
        exercise(idx);
        // A check of every chunk refuses it; so does the whole read.
        let idx = file::open_bytes(&bad).expect("open");
        assert!(
            file::verify_all(&idx).is_err(),
            "round {round}: damaged data passed the check"
        );
        assert!(
            file::from_bytes(&bad).is_err(),
            "round {round}: damaged data was read"
        );
    }
}

/// Every section in turn with all its bytes set (ids past the last entry in every packed order and rank, times
/// kept apart that are not, offsets out of order) or cleared: searched without a fault, then refused.
#[test]
fn every_section_set_or_cleared_holds_its_bounds() {
    let good = good_file("sections");
    let (_, sections) = layout(&good);
    for (sid, _, r) in &sections {
        for v in [0xFF, 0x00] {
            let mut bad = good.clone();
            bad[r.clone()].fill(v);
            if bad == good {
                continue;
            }
            let Ok(idx) = file::open_bytes(&bad) else {
                continue;
            };
            exercise(idx);
            let idx = file::open_bytes(&bad).expect("open");
            assert!(
                file::verify_all(&idx).is_err(),
                "section {sid} set to {v:#x} passed the check"
            );
        }
    }
}

/// The trigram filter's rows with only bits past the last block set (clear in a file as written): the candidate
/// blocks must stay inside the index. (Found by the `index_file` fuzz target.)
#[test]
fn trigram_bits_past_the_last_block_are_ignored() {
    let good = good_file("trigrams");
    let (_, sections) = layout(&good);
    let (_, _, r) = sections
        .iter()
        .find(|s| s.0 == 45)
        .expect("trigram section");
    let mut bad = good.clone();
    let entries = u64::from_le_bytes(good[40..48].try_into().unwrap()) as usize;
    let blocks = entries.div_ceil(64);
    assert!(
        !blocks.is_multiple_of(64),
        "the sample's last row word must have bits past the last block"
    );
    let row = blocks.div_ceil(64);
    for k in 0..r.len() / 8 / row {
        for w in 0..row {
            let at = r.start + (k * row + w) * 8;
            let v: u64 = if w + 1 == row { !0 << (blocks % 64) } else { 0 };
            bad[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
    }
    exercise(file::open_bytes(&bad).expect("open"));
}

#[test]
fn damage_to_the_header_or_tables_is_refused_at_open() {
    let good = good_file("header");
    let (data_start, _) = layout(&good);
    for at in (0..data_start).step_by(3) {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        assert!(
            file::open_bytes(&bad).is_err(),
            "a flip at header byte {at} was opened"
        );
    }
    for cut in [
        0,
        7,
        127,
        data_start - 1,
        data_start + 1,
        good.len() / 2,
        good.len() - 1,
    ] {
        assert!(
            file::open_bytes(&good[..cut]).is_err(),
            "a file cut at {cut} was opened"
        );
    }
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 64]);
    assert!(
        file::open_bytes(&longer).is_err(),
        "a file with bytes appended was opened"
    );
}
