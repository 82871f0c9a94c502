//! Random queries from the grammar against real indexes (Windows `$MFT` captures, a Linux-made volume, a volume
//! from the benchmark generator at small size): the
//! engine's result set must equal the reference matcher's for every query. Queries are built from name
//! fragments of the index itself, so most terms hit something.

use std::path::Path;
use std::sync::Arc;

use uffs_index::{EntryId, Index};
use uffs_query::{parse, reference, ParseOptions, SearchOptions, Searcher, SortKey};

fn index(rel: &str, deleted: bool) -> Index {
    index_of(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data")
            .join(rel),
        deleted,
    )
}

fn index_of(path: &Path, deleted: bool) -> Index {
    let src = uffs_source::open(path.to_str().expect("utf-8"), None).expect("open sample");
    let opts = uffs_mft::ScanOptions {
        include_deleted: deleted,
        ..Default::default()
    };
    uffs_mft::build_index(&src.volumes[0], &opts, &|_, _| {})
        .expect("build")
        .0
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len())]
    }
}

/// A random term: text (substring, wildcard, path, regex, with modifiers) or a function.
fn term(r: &mut Rng, idx: &Index) -> String {
    let id = r.below(idx.len()) as EntryId;
    let name: Vec<char> = idx
        .name(id)
        .chars()
        .filter(|c| {
            !matches!(
                c,
                '"' | '|' | '!' | '<' | '>' | '(' | ')' | ' ' | ':' | '*' | '?' | '\\' | '/'
            )
        })
        .collect();
    let frag = |r: &mut Rng| -> String {
        if name.is_empty() {
            return "a".into();
        }
        let s = r.below(name.len());
        // Mostly short fragments; some of 4-8 characters, which take the trigram-filtered path.
        let max = if r.below(3) == 0 { 8 } else { 4 };
        let l = 1 + r.below(max.min(name.len() - s));
        name[s..s + l].iter().collect()
    };
    match r.below(25) {
        0..=3 => frag(r),
        // Without its diacritics, as a user types it: it must find the name with them.
        4 => uffs_index::diacritics::strip(&frag(r)),
        5 => frag(r).to_uppercase(),
        6 => format!("*{}", frag(r)),
        7 => format!("{}*", frag(r)),
        8 => format!("*{}?*", frag(r)),
        9 => {
            let p = idx.path(idx.parent(id));
            let parts: Vec<&str> = p
                .split('/')
                .filter(|s| !s.is_empty() && !s.contains([' ', '"', '|', '(', ')', '<', '>', ':']))
                .collect();
            match parts.last() {
                Some(last) => format!("{}/{}", last.to_lowercase(), frag(r)),
                None => format!("path:{}", frag(r)),
            }
        }
        10 => format!("regex:{}", regex::escape(&frag(r))),
        11 => format!("regex:^{}", regex::escape(&frag(r))),
        12 => format!(
            "{}:{}",
            r.pick(&[
                "case",
                "nocase",
                "wholeword",
                "file",
                "folder",
                "path",
                "diacritics",
                "nodiacritics"
            ]),
            frag(r)
        ),
        13 => format!(
            "ext:{}",
            r.pick(&["txt", "dll;exe", "jpg;png;gif", "log", "htm", "xml", "ini"])
        ),
        14 => format!(
            "size:{}",
            r.pick(&[">1kb", "<100", "0", ">=1mb", "1kb..64kb", "<=4096"])
        ),
        15 => format!(
            "{}:{}",
            r.pick(&["dm", "dc", "da"]),
            r.pick(&[
                "2007",
                "2008",
                ">2007-07-01",
                "<2006",
                "2007-06..2007-08",
                "2023",
                "unknown",
                "<=1601"
            ])
        ),
        16 => format!("attrib:{}", r.pick(&["h", "s", "a", "r", "hs", "c", "i"])),
        17 => format!("depth:{}", r.pick(&["1", "2", ">3", "<=2", "2..4"])),
        18 => format!("len:{}", r.pick(&[">20", "<5", "8..12"])),
        19 => r
            .pick(&["dupe:", "deleted:", "stream:", "file:", "folder:"])
            .to_string(),
        20 => {
            let p = idx.path(idx.parent(id));
            if p.contains([' ', '"', '|']) {
                frag(r)
            } else {
                format!("parent:{p}")
            }
        }
        21 => r
            .pick(&[
                "treesize:>10kb",
                "treesize:<1kb",
                "descendants:>3",
                "descendants:0..2",
                "childcount:>2",
                "childcount:1",
                "empty:",
                "sizedupe:",
                "pic:",
                "doc:",
                "exe:",
            ])
            .to_string(),
        22 => r
            .pick(&[
                "namepartdupe:",
                "dmdupe:",
                "dcdupe:",
                "dadupe:",
                "attribdupe:",
                "root:",
                "parents:2",
                "childfilecount:>1",
                "childfoldercount:0",
                "childfilecount:2..5",
                "size:unknown",
                "fsi:0",
                "fsi:1",
                "dm:pastyear",
                "dc:prev3years",
                "da:last2weeks",
                "frn:5",
                "frn:0x1000000000005",
                "nowildcards:*",
            ])
            .to_string(),
        23 => {
            let f = frag(r);
            let f = if r.below(3) == 0 { format!("{f}*") } else { f };
            format!("{}:{f}", r.pick(&["child", "childfile", "childfolder"]))
        }
        _ => format!("\"{}\"", frag(r)),
    }
}

/// A random expression: AND of 1–3 parts, each possibly negated, an OR, or a group.
fn query(r: &mut Rng, idx: &Index, depth: usize) -> String {
    let parts = 1 + r.below(3);
    let mut out = Vec::new();
    for _ in 0..parts {
        let mut p = match r.below(if depth > 1 { 6 } else { 8 }) {
            0..=4 => term(r, idx),
            5 => format!("{} | {}", term(r, idx), term(r, idx)),
            _ => format!("<{}>", query(r, idx, depth + 1)),
        };
        if r.below(5) == 0 {
            p = format!("!{p}");
        }
        out.push(p);
    }
    out.join(" ")
}

fn check(rel: &str, deleted: bool, seed: u64, count: usize) {
    check_index(rel, &index(rel, deleted), seed, count);
}

/// The index written with its search aids, then mapped from the file: checked wholly as the daemon reads it,
/// or opened in O(1) as a one-shot query does (`one_shot`).
fn through_file(idx: &Index, name: &str, one_shot: bool) -> Index {
    let mut with_aids = idx.clone();
    with_aids.add_search_aids();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("property-files");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let path = dir.join(format!("{}.uffs", name.replace('/', "_")));
    uffs_index::file::write(&with_aids, &path).expect("write index");
    if one_shot {
        uffs_index::file::open(&path).expect("open index")
    } else {
        uffs_index::file::read(&path).expect("read index")
    }
}

fn check_index(rel: &str, idx: &Index, seed: u64, count: usize) {
    // By seed: the built index (aids made in memory), the index mapped from its file as the daemon reads it, or
    // as a one-shot query opens it.
    let s = match seed % 3 {
        0 => Searcher::new(Arc::new(idx.clone())),
        1 => Searcher::new(Arc::new(through_file(idx, rel, false))),
        _ => Searcher::new(Arc::new(through_file(idx, rel, true))),
    };
    let mut r = Rng(seed);
    let now = uffs_index::time::from_civil_date(2024, 5, 15);
    let mut checked = 0;
    let mut nonempty = 0;
    for _ in 0..count {
        let q = query(&mut r, idx, 0);
        let opts = ParseOptions { now, case: None };
        let Ok(expr) = parse(&q, &opts) else { continue };
        let so = SearchOptions {
            include_deleted: r.below(4) == 0,
            include_streams: r.below(4) == 0,
        };
        let got: Vec<EntryId> = s.search(&expr, &so).iter().collect();
        let want = reference::matches(idx, &expr, &so);
        assert_eq!(
            got, want,
            "{rel}: query {q:?} ({so:?}) differs from the reference"
        );
        checked += 1;
        nonempty += usize::from(!want.is_empty());
    }
    assert!(
        checked > count * 9 / 10,
        "{rel}: only {checked} of {count} queries parsed"
    );
    assert!(
        nonempty > checked / 4,
        "{rel}: only {nonempty} of {checked} queries matched anything"
    );
}

#[test]
fn engine_equals_reference_on_windows_xp_mft() {
    check("windows-xp-mft/MFT", true, 0x5EED_0001, 300);
}

#[test]
fn engine_equals_reference_on_linux_made_volume() {
    check("linux-made/testfs1", false, 0x5EED_0002, 300);
}

#[test]
fn engine_equals_reference_on_unicode_names() {
    check(
        "windows10-scenarios/stress_filename.bin",
        true,
        0x5EED_0003,
        200,
    );
}

/// Path substrings cut from real paths (a component's end, whole components, the next one's start; as typed or
/// lower case), on the index opened from its file as a one-shot query and as the daemon does: the engine's
/// answer equals the reference's, whichever way it takes (from the few names starting with the last part, or
/// the walk down every folder).
#[test]
fn path_substrings_equal_reference() {
    for (rel, deleted) in [("windows-xp-mft/MFT", true), ("linux-made/testfs1", false)] {
        let built = index(rel, deleted);
        let mut r = Rng(0x5EED_0008);
        for one_shot in [true, false] {
            let idx = through_file(&built, &format!("paths-{rel}-{one_shot}"), one_shot);
            let s = Searcher::new(Arc::new(idx.clone()));
            let (mut checked, mut nonempty) = (0, 0);
            while checked < 250 {
                let path = idx.path(r.below(idx.len()) as EntryId);
                let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
                if parts.len() < 2 {
                    continue;
                }
                let i = r.below(parts.len() - 1);
                let j = i + 1 + r.below((parts.len() - i - 1).min(3));
                let (head, tail) = (parts[i], parts[j]);
                let head: String = head
                    .chars()
                    .skip(r.below(head.chars().count() + 1))
                    .collect();
                let tail: String = tail.chars().take(1 + r.below(8)).collect();
                let mut needle = head;
                for p in &parts[i + 1..j] {
                    needle = format!("{needle}/{p}");
                }
                needle = format!("{needle}/{tail}");
                if r.below(2) == 0 {
                    needle = needle.to_lowercase();
                }
                if needle.contains([
                    ' ', '"', '|', '!', '<', '>', '(', ')', ':', '*', '?', '\\', ';',
                ]) {
                    continue;
                }
                let opts = ParseOptions { now: 0, case: None };
                let Ok(expr) = parse(&needle, &opts) else {
                    continue;
                };
                let so = SearchOptions {
                    include_deleted: r.below(4) == 0,
                    include_streams: r.below(4) == 0,
                };
                let got: Vec<EntryId> = s.search(&expr, &so).iter().collect();
                let want = reference::matches(&idx, &expr, &so);
                assert_eq!(
                    got, want,
                    "{rel}: path {needle:?} ({so:?}) differs from the reference"
                );
                checked += 1;
                nonempty += usize::from(!want.is_empty());
            }
            assert!(
                nonempty > checked / 2,
                "{rel}: only {nonempty} of {checked} paths matched"
            );
        }
    }
}

/// Files written before the trigram filter had 2,048 keys hold one of 1,024, whose key `k` is the union of keys
/// `k` and `k + 1024`, and no name fence posts: such a file, opened in O(1) as a one-shot query does, still
/// answers as the reference.
#[test]
fn engine_equals_reference_with_a_trigram_filter_of_1024_keys() {
    use uffs_index::aids::trigram_row_words;
    let rel = "windows-xp-mft/MFT";
    let mut idx = index(rel, true);
    idx.add_search_aids();
    let n = idx.len();
    let mut aids = idx.search_aids().expect("aids").clone();
    let (row, half) = (trigram_row_words(n), 1024 * trigram_row_words(n));
    assert_eq!(
        aids.trigrams.len(),
        2 * half,
        "filters are written with 2,048 keys"
    );
    let folded: Vec<u64> = (0..half)
        .map(|i| aids.trigrams[i] | aids.trigrams[i + half])
        .collect();
    aids.trigrams = folded.into();
    assert!(aids.name_fence_count() > 0, "name fence posts are written");
    aids.name_fences = Default::default();
    aids.name_fence_starts = Default::default();
    idx.set_search_aids(aids).expect("aids fit the index");
    let opened = through_file(&idx, "filter-of-1024-keys", true);
    assert_eq!(
        opened.search_aids().and_then(|a| a.trigram_keys(n)),
        Some(1024),
        "the file holds the 1,024-key filter (rows of {row} words)"
    );
    assert_eq!(opened.search_aids().map(|a| a.name_fence_count()), Some(0));
    // Seed ≡ 2 (mod 3): `check_index` searches the file opened in O(1).
    check_index(rel, &idx, 0x5EED_0007, 300);
}

/// The benchmark volume's generator at small size (20,000 entries, built with mkntfs and ntfs-3g by
/// `scripts/make-bench-volume.py`, which skips the build when its stamp is up to date).
#[test]
fn engine_equals_reference_on_generated_bench_volume() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let img = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-small/small.img");
    let out = std::process::Command::new("python3")
        .arg(repo.join("scripts/make-bench-volume.py"))
        .args([
            "--entries",
            "20000",
            "--jobs",
            "1",
            "--big",
            "4",
            "--quiet",
            "--out",
        ])
        .arg(&img)
        .output()
        .expect("run scripts/make-bench-volume.py");
    assert!(
        out.status.success(),
        "bench volume: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let idx = index_of(&img, true);
    assert!(idx.len() > 20_000, "only {} entries", idx.len());
    check_index("generated bench volume", &idx, 0x5EED_0004, 300);
}

#[test]
fn sorted_top_n_equals_full_sort() {
    let idx = through_file(&index("windows-xp-mft/MFT", false), "sorted-xp", false);
    let s = Searcher::new(Arc::new(idx.clone()));
    let all = s.search(&uffs_query::Expr::All, &SearchOptions::default());
    // Dense and sparse subsets take the other selection paths (order walk, sampled threshold, heap).
    let opts = ParseOptions { now: 0, case: None };
    for q in ["e", "dll", "ext:htm", "size:>100kb"] {
        let set = s.search(&parse(q, &opts).unwrap(), &SearchOptions::default());
        for key in [
            SortKey::Name,
            SortKey::Path,
            SortKey::Size,
            SortKey::Extension,
            SortKey::Modified,
        ] {
            for desc in [false, true] {
                let full = s.sorted(&set, Some(key), desc, None);
                for l in [1, 10, 100] {
                    let top = s.sorted(&set, Some(key), desc, Some(l));
                    assert_eq!(
                        top,
                        full[..l.min(full.len())],
                        "{q:?} {key:?} desc={desc} limit={l}"
                    );
                }
            }
        }
    }
    for key in [
        SortKey::Name,
        SortKey::Path,
        SortKey::Size,
        SortKey::Extension,
        SortKey::Created,
        SortKey::Modified,
        SortKey::Accessed,
    ] {
        for desc in [false, true] {
            let full = s.sorted(&all, Some(key), desc, None);
            let top = s.sorted(&all, Some(key), desc, Some(100));
            assert_eq!(top, full[..100], "{key:?} desc={desc}");
            // A sort of everything walks the stored order: it is the sort by (key, name rank) of the set, times
            // the volume does not keep last.
            let a = s.aids();
            let rank = |id: EntryId| a.name_rank.at(id as usize);
            let mut want: Vec<EntryId> = all.iter().collect();
            want.sort_by_key(|&id| {
                let primary = match key {
                    SortKey::Name => 0,
                    SortKey::Path => u64::from(a.path_rank.at(id as usize)),
                    SortKey::Size => idx.size(id),
                    SortKey::Extension => u64::from(a.ext_id.get(id)),
                    SortKey::Created => idx.created(id),
                    SortKey::Modified => idx.modified(id),
                    _ => idx.accessed(id),
                };
                (primary, rank(id))
            });
            if desc {
                want.reverse();
            }
            want.sort_by_key(|&id| key.unknown(&idx, id));
            assert_eq!(full, want, "{key:?} desc={desc}: everything sorted");
            // The order really is sorted by the key's value.
            for w in full.windows(2) {
                let (a, b) = (w[0], w[1]);
                let ok = match key {
                    SortKey::Size => {
                        (idx.size(a) <= idx.size(b)) != desc || idx.size(a) == idx.size(b)
                    }
                    SortKey::Modified => match (idx.modified(a), idx.modified(b)) {
                        (_, 0) => true,
                        (0, _) => false,
                        (x, y) => (x <= y) != desc || x == y,
                    },
                    SortKey::Name => {
                        let (x, y) = (idx.name(a).to_lowercase(), idx.name(b).to_lowercase());
                        (x <= y) != desc || x == y
                    }
                    // Paths compare component by component (a folder's contents right after it).
                    SortKey::Path => {
                        let (x, y) = (idx.path(a).to_lowercase(), idx.path(b).to_lowercase());
                        let (x, y): (Vec<&str>, Vec<&str>) =
                            (x.split('/').collect(), y.split('/').collect());
                        (x <= y) != desc || x == y
                    }
                    _ => true,
                };
                assert!(
                    ok,
                    "{key:?} desc={desc}: {} before {}",
                    idx.path(a),
                    idx.path(b)
                );
            }
            // A sort of everything lets go of the order's pages; the next one reads them back.
            assert_eq!(s.sorted(&all, Some(key), desc, None), full, "{key:?} again");
        }
    }
    // The same file's bytes held in anonymous memory (as tests and fuzzing hold them): there the order's
    // pages are kept, for dropped ones would read back as zeros.
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("property-files/sorted-xp.uffs");
    let held =
        uffs_index::file::from_bytes(&std::fs::read(path).expect("read file")).expect("load");
    let h = Searcher::new(Arc::new(held));
    for key in [SortKey::Name, SortKey::Size] {
        let first = h.sorted(&all, Some(key), false, None);
        assert_eq!(first, s.sorted(&all, Some(key), false, None), "{key:?}");
        assert_eq!(
            h.sorted(&all, Some(key), false, None),
            first,
            "{key:?} again, held in memory"
        );
    }
}
