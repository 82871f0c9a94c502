//! Disk usage, facets and statistics against references computed here from `uffs export` and from the query's
//! own rows: `uffs du` totals (hard links once, streams counted) on fixture volumes with hard links, streams,
//! sparse and compressed files and on the Windows samples; `--facet` and `--stats` for a set of queries.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use common::*;

/// Every folder's totals by path, as `uffs du / --depth 999 --format csv` prints them.
fn du_folders(src: &Path) -> BTreeMap<String, [u64; 4]> {
    let out = run_ok(
        uffs()
            .args(["du", "/", "--depth", "999", "--format", "csv", "--source"])
            .arg(src),
    );
    let kinds: HashMap<String, String> = export(src, &[])
        .into_iter()
        .map(|r| (r["path"].clone(), r["kind"].clone()))
        .collect();
    csv_rows(&out.stdout)
        .into_iter()
        .filter(|r| r["path"] == "/" || kinds.get(&r["path"]).is_some_and(|k| k == "folder"))
        .map(|r| {
            let n = |k: &str| r[k].parse::<u64>().expect("number");
            (
                r["path"].clone(),
                [n("size"), n("allocated"), n("files"), n("folders")],
            )
        })
        .collect()
}

/// The same totals the obvious way, from `uffs export --streams`: every live entry added to each folder above
/// it, a file by its record (a file of several links once), a stream by its record and name; a folder's own
/// allocated clusters (its index) to it and every folder above it.
fn reference(src: &Path) -> BTreeMap<String, [u64; 4]> {
    let rows = export(src, &["--streams"]);
    let mut folders: BTreeMap<String, [u64; 4]> = BTreeMap::new();
    for r in &rows {
        if r["kind"] == "folder" {
            folders.insert(r["path"].clone(), [0; 4]);
        }
    }
    folders.insert("/".into(), [0; 4]);
    let mut counted: HashSet<(String, String, String)> = HashSet::new();
    for r in &rows {
        if r["deleted"] == "true" {
            continue;
        }
        if r["kind"] == "folder" {
            let t = folders.get_mut(&r["path"]).expect("folder");
            t[1] += r["allocated"].parse::<u64>().expect("allocated");
        }
        if r["path"] == "/" {
            continue;
        }
        let (path, kind) = (&r["path"], r["kind"].as_str());
        // A stream `dir/file:s` counts where its file does.
        let (owner, stream) = match kind {
            "stream" => {
                let (f, s) = path.rsplit_once(':').expect("stream path");
                (f.to_string(), s.to_string())
            }
            _ => (path.clone(), String::new()),
        };
        let mut above = owner.clone();
        while let Some((up, _)) = above.rsplit_once('/') {
            above = if up.is_empty() { "/".into() } else { up.into() };
            let t = folders.get_mut(&above).expect("folder of an entry");
            match kind {
                "folder" => {
                    t[3] += 1;
                    t[1] += r["allocated"].parse::<u64>().expect("allocated");
                }
                _ => {
                    if counted.insert((above.clone(), r["record"].clone(), stream.clone())) {
                        // `$BadClus:$Bad`'s size is the volume's, a placeholder: no folder adds it.
                        if path != "/$BadClus:$Bad" {
                            t[0] += r["size"].parse::<u64>().expect("size");
                        }
                        t[1] += r["allocated"].parse::<u64>().expect("allocated");
                        if kind == "file" {
                            t[2] += 1;
                        }
                    }
                }
            }
            if above == "/" {
                break;
            }
        }
    }
    folders
}

fn assert_du(src: &Path) -> usize {
    let got = du_folders(src);
    let want = reference(src);
    assert_eq!(got.len(), want.len(), "{}: folders listed", src.display());
    for (path, w) in &want {
        assert_eq!(
            got.get(path),
            Some(w),
            "{}: totals of {path}",
            src.display()
        );
    }
    want.len()
}

#[test]
fn du_totals_equal_a_sum_over_the_exported_entries() {
    // basic.img: hard links in two folders (hardlinks/, hardlinks/more/, linked/), streams, sparse and compressed.
    let n = assert_du(&fixture("basic.img"));
    assert!(n > 20, "{n} folders");
    assert_du(&data("linux-made/testfs1"));
    assert_du(&data("windows-xp-mft/MFT"));
}

/// `$BadClus:$Bad` is as long as the volume (the image less its last cluster, where the backup boot sector is) and
/// holds only the bad clusters: its size stays a column, and no folder adds it, so the root's size is not the
/// volume's plus the files'. `du` shows the space used first.
#[test]
fn the_bad_cluster_placeholder_adds_nothing_to_folder_sizes() {
    let img = fixture("basic.img");
    let rows = export(&img, &["--streams"]);
    let bad = rows
        .iter()
        .find(|r| r["path"] == "/$BadClus:$Bad")
        .expect("$BadClus:$Bad");
    let image_len = std::fs::metadata(&img).unwrap().len();
    assert_eq!(bad["size"].parse::<u64>().unwrap(), image_len - 4096);
    assert_eq!(bad["allocated"], "0");
    let sizes: u64 = rows
        .iter()
        .filter(|r| {
            r["deleted"] != "true" && r["kind"] != "folder" && r["path"] != "/$BadClus:$Bad"
        })
        .map(|r| r["size"].parse::<u64>().unwrap())
        .sum();
    let root = du_folders(&img)["/"];
    assert!(root[0] <= sizes, "root size {} > {sizes}", root[0]);
    let out = String::from_utf8(run_ok(uffs().arg("du").arg("--source").arg(&img)).stdout).unwrap();
    assert!(
        out.starts_with("ALLOCATED") || out.trim_start().starts_with("ALLOCATED"),
        "{out}"
    );
}

#[test]
fn a_file_of_several_links_counts_once_above_them() {
    let img = fixture("basic.img");
    let du = du_folders(&img);
    let rows = export(&img, &[]);
    // many-links.dat has 31 names in hardlinks/ and hardlinks/more/: hardlinks/ holds its size once.
    let size: u64 = rows
        .iter()
        .find(|r| r["path"] == "/hardlinks/many-links.dat")
        .expect("many-links.dat")["size"]
        .parse()
        .expect("size");
    let files_named: usize = rows
        .iter()
        .filter(|r| r["path"].starts_with("/hardlinks/") && r["kind"] == "file")
        .count();
    let records: HashSet<&str> = rows
        .iter()
        .filter(|r| r["path"].starts_with("/hardlinks/") && r["kind"] == "file")
        .map(|r| r["record"].as_str())
        .collect();
    assert!(
        files_named > records.len() + 25,
        "{files_named} names of {} files",
        records.len()
    );
    assert_eq!(
        du["/hardlinks"][2],
        records.len() as u64,
        "files under hardlinks/ once each"
    );
    assert!(du["/hardlinks"][0] >= size && du["/hardlinks"][0] < size * 2);
}

#[test]
fn du_orders_limits_and_goes_deeper() {
    let img = fixture("basic.img");
    let rows = |extra: &[&str]| -> Vec<HashMap<String, String>> {
        let out = run_ok(
            uffs()
                .args(["du", "--format", "csv", "--source"])
                .arg(&img)
                .args(extra),
        );
        csv_rows(&out.stdout)
    };
    // By allocated space (the default), then by logical size: largest first, each with its share of the folder.
    for (args, key) in [(&[][..], "allocated"), (&["--sort", "size"][..], "size")] {
        let listed = rows(args);
        let (kids, top) = listed.split_at(listed.len() - 1);
        let sizes: Vec<u64> = kids.iter().map(|r| r[key].parse().unwrap()).collect();
        assert!(
            sizes.windows(2).all(|w| w[0] >= w[1]),
            "largest {key} first: {sizes:?}"
        );
        let whole: f64 = top[0][key].parse().unwrap();
        for (r, s) in kids.iter().zip(&sizes) {
            let share: f64 = r["share"].parse().unwrap();
            assert!(
                (share - 100.0 * *s as f64 / whole).abs() < 0.01,
                "{key} share of {r:?}"
            );
        }
    }
    let by_size = rows(&[]);
    assert_eq!(
        by_size.last().unwrap()["path"],
        "/",
        "the folder's own total last"
    );
    let by_name = rows(&["--sort", "name", "--limit", "3"]);
    assert_eq!(by_name.len(), 4);
    let names: Vec<String> = by_name[..3]
        .iter()
        .map(|r| r["path"].to_lowercase())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let deep = rows(&["--depth", "2"]);
    assert!(deep.iter().any(|r| r["depth"] == "2") && deep.iter().all(|r| r["depth"] != "3"));
    // A folder by path, any case; a path that is no folder is an error.
    let streams = run_ok(
        uffs()
            .args(["du", "/STREAMS", "--format", "csv", "--source"])
            .arg(&img),
    );
    assert_eq!(
        csv_rows(&streams.stdout).last().unwrap()["path"],
        "/streams"
    );
    let missing = uffs()
        .args(["du", "/no/such", "--source"])
        .arg(&img)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no folder"));
}

/// A query's output; it may match nothing (exit 1), never fail.
fn answer(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().expect("run uffs");
    assert!(out.status.code().is_some_and(|c| c < 2), "{cmd:?}: {out:?}");
    out
}

/// `--facet` and `--stats` of a query equal what its own rows add up to.
#[test]
fn facets_and_stats_equal_the_rows_of_the_query() {
    let img = fixture("basic.img");
    // Fixed queries, then random ones: a fragment of a name on the volume, with or without a function.
    let names: Vec<String> = export(&img, &[])
        .into_iter()
        .map(|r| {
            r["name"]
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
        })
        .filter(|n| n.len() > 2)
        .collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let mut queries: Vec<String> = [
        "*",
        "file:",
        "folder:",
        "e",
        "ext:txt;dat",
        "size:>1kb",
        "!a",
        "hardlinks/",
    ]
    .iter()
    .map(|q| q.to_string())
    .collect();
    let functions = [
        "",
        "size:>100",
        "file:",
        "folder:",
        "attrib:h",
        "dm:2024",
        "!ext:txt",
        "depth:2..4",
    ];
    for _ in 0..16 {
        let n = &names[next(names.len())];
        let at = next(n.len() - 2);
        let len = 1 + next(3).min(n.len() - at - 1);
        queries.push(
            format!("{} {}", &n[at..at + len], functions[next(functions.len())])
                .trim()
                .to_string(),
        );
    }
    for q in queries.iter().map(String::as_str) {
        let out = answer(uffs().arg("--source").arg(&img).arg(q).args([
            "--format",
            "csv",
            "--columns",
            "path,kind,size,allocated,modified,attributes",
        ]));
        let rows = csv_rows(&out.stdout);
        let facet = |what: &str| -> BTreeMap<String, (u64, u64)> {
            let out = answer(
                uffs()
                    .arg("--source")
                    .arg(&img)
                    .arg(q)
                    .args(["--facet", what, "--top", "0", "--format", "csv"]),
            );
            csv_rows(&out.stdout)
                .into_iter()
                .map(|r| {
                    (
                        r[what.replace('-', "_").as_str()].clone(),
                        (r["count"].parse().unwrap(), r["size"].parse().unwrap()),
                    )
                })
                .collect()
        };
        let mut want_ext: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut want_year: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut want_folder: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut want_attrib: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let (mut size, mut allocated) = (0u64, 0u64);
        for r in &rows {
            let s: u64 = r["size"].parse().unwrap();
            size += s;
            allocated += r["allocated"].parse::<u64>().unwrap();
            let name = r["path"].rsplit('/').next().unwrap();
            if r["kind"] == "file" {
                let ext = name
                    .rsplit_once('.')
                    .map(|(_, e)| e.to_lowercase())
                    .unwrap_or_default();
                let e = want_ext.entry(ext).or_default();
                e.0 += 1;
                e.1 += s;
            }
            // A modified time the volume does not keep (empty) is the year `unknown`.
            let year = r["modified"].get(..4).unwrap_or("unknown");
            let y = want_year.entry(year.to_string()).or_default();
            y.0 += 1;
            y.1 += s;
            let parent = match r["path"].rsplit_once('/') {
                Some(("", _)) => "/".to_string(),
                Some((p, _)) => p.to_string(),
                None => unreachable!(),
            };
            let f = want_folder.entry(parent).or_default();
            f.0 += 1;
            f.1 += s;
            for c in r["attributes"].chars() {
                let a = want_attrib.entry(c.to_string()).or_default();
                a.0 += 1;
                a.1 += s;
            }
        }
        assert_eq!(facet("ext"), want_ext, "--facet ext of {q:?}");
        assert_eq!(facet("year"), want_year, "--facet year of {q:?}");
        assert_eq!(facet("folder"), want_folder, "--facet folder of {q:?}");
        assert_eq!(facet("attrib"), want_attrib, "--facet attrib of {q:?}");
        let stats = answer(
            uffs()
                .arg("--source")
                .arg(&img)
                .arg(q)
                .args(["--stats", "--format", "csv"]),
        );
        let st = &csv_rows(&stats.stdout)[0];
        assert_eq!(
            st["count"],
            rows.len().to_string(),
            "--stats count of {q:?}"
        );
        assert_eq!(st["size"], size.to_string(), "--stats size of {q:?}");
        assert_eq!(
            st["allocated"],
            allocated.to_string(),
            "--stats allocated of {q:?}"
        );
        // A time the volume does not keep (empty) is left out of the range.
        let modified: Vec<&str> = rows
            .iter()
            .map(|r| r["modified"].as_str())
            .filter(|m| !m.is_empty())
            .collect();
        if let (Some(lo), Some(hi)) = (modified.iter().min(), modified.iter().max()) {
            assert_eq!(&st["modified_min"], lo, "{q:?}");
            assert_eq!(&st["modified_max"], hi, "{q:?}");
        }
    }
}
