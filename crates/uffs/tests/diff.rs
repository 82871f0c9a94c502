//! `uffs diff OLD NEW` against real changes: a volume made by mkntfs, indexed, changed through the ntfs-3g
//! driver (files created, deleted, renamed, moved, grown, touched, and one given an old date as timestomping
//! does), then compared. Every change made appears with its kind and paths and nothing else does but the
//! bookkeeping explained in `explained`; the changes equal the difference of the two `uffs export` CSVs
//! computed independently (`common::export_difference`, keyed by record and sequence number); an index file and
//! the source it was built from diff alike; each format reads back (CSV, JSON lines, Parquet through DuckDB); a bad
//! source is exit 2.

#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::live::{make_volume, Mounted};
use common::{csv_rows, export_difference, run_ok, scratch, uffs};

/// Whether this machine can mount an image with ntfs-3g (FUSE, as root).
fn can_mount() -> bool {
    Path::new("/dev/fuse").exists()
        && Command::new("ntfs-3g").arg("--version").output().is_ok()
        && Command::new("mkntfs").arg("--version").output().is_ok()
}

fn diff(args: &[&Path], extra: &[&str]) -> Output {
    uffs()
        .arg("diff")
        .args(args)
        .args(extra)
        .output()
        .expect("uffs diff runs")
}

/// The volume before (as an image copy and an index file) and after the changes.
struct World {
    dir: PathBuf,
    old_img: PathBuf,
    old_idx: PathBuf,
    new_img: PathBuf,
}

fn world(name: &str) -> World {
    let dir = scratch(name);
    let img = make_volume(&dir, 32);
    let mnt = dir.join("mnt");
    {
        let m = Mounted::new(&img, &mnt);
        let d = &m.dir;
        fs::create_dir(d.join("docs")).unwrap();
        fs::create_dir(d.join("other")).unwrap();
        for f in [
            "keep.txt",
            "grow.txt",
            "gone.txt",
            "ren.txt",
            "docs/mv.txt",
            "touch.txt",
            "stomp.txt",
            "docs/both.txt",
        ] {
            fs::write(d.join(f), format!("content of {f}\n")).unwrap();
        }
    }
    let old_img = dir.join("old.img");
    fs::copy(&img, &old_img).unwrap();
    let old_idx = dir.join("old.uffs");
    run_ok(uffs().arg("index").arg(&img).arg("-o").arg(&old_idx));
    // Times are kept in 100 ns: the changes land at other times than the files were made.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    {
        let m = Mounted::new(&img, &mnt);
        let d = &m.dir;
        fs::write(d.join("docs/new.txt"), "made after\n").unwrap();
        fs::remove_file(d.join("gone.txt")).unwrap();
        fs::rename(d.join("ren.txt"), d.join("renamed.txt")).unwrap();
        fs::rename(d.join("docs/mv.txt"), d.join("other/mv.txt")).unwrap();
        fs::rename(d.join("docs/both.txt"), d.join("other/both2.txt")).unwrap();
        fs::write(d.join("grow.txt"), vec![b'x'; 20_000]).unwrap();
        run_ok(Command::new("touch").arg(d.join("touch.txt")));
        run_ok(
            Command::new("touch")
                .args(["-d", "2001-02-03 04:05:06"])
                .arg(d.join("stomp.txt")),
        );
    }
    World {
        old_img,
        old_idx,
        new_img: img,
        dir,
    }
}

/// A row of the diff's CSV: (change, path, old_path).
type Seen = (String, String, String);

/// Rows that are bookkeeping, not the changes made: NTFS's metafiles (`/$MFT` grows, `/$LogFile` is written,
/// `/$Bitmap` and the rest change their times) and the folders whose contents changed (their times and index
/// sizes change: the root, `docs`, `other`).
fn explained(r: &HashMap<String, String>) -> bool {
    let p = &r["path"];
    r["change"] == "changed"
        && (p.starts_with("/$")
            || (r["kind"] == "folder" && ["/", "/docs", "/other"].contains(&p.as_str())))
}

#[test]
fn changes_made_by_ntfs3g_are_found_and_nothing_else() {
    if !can_mount() {
        common::cannot_run("no FUSE or ntfs-3g here");
        return;
    }
    let w = world("diff-changes");
    let out = diff(&[&w.old_idx, &w.new_img], &["--format", "csv"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let rows = csv_rows(&out.stdout);
    let header = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(
        header.starts_with("change,kind,path,old_path,record,sequence,fields,size_old,size_new")
    );
    let got: BTreeSet<Seen> = rows
        .iter()
        .filter(|r| !explained(r))
        .map(|r| {
            (
                r["change"].clone(),
                r["path"].clone(),
                r["old_path"].clone(),
            )
        })
        .collect();
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    let want: BTreeSet<Seen> = [
        s("created", "/docs/new.txt", ""),
        s("deleted", "/gone.txt", ""),
        s("renamed", "/renamed.txt", "/ren.txt"),
        s("moved", "/other/mv.txt", "/docs/mv.txt"),
        s("moved", "/other/both2.txt", "/docs/both.txt"),
        s("changed", "/grow.txt", ""),
        s("changed", "/touch.txt", ""),
        s("changed", "/stomp.txt", ""),
        // A rename changes the file's MFT-changed time (and ntfs-3g sets its $FILE_NAME times).
        s("changed", "/renamed.txt", ""),
        s("changed", "/other/mv.txt", ""),
        s("changed", "/other/both2.txt", ""),
    ]
    .into_iter()
    .collect();
    for r in &rows {
        eprintln!(
            "{} {} {} [{}]",
            r["change"], r["path"], r["old_path"], r["fields"]
        );
    }
    assert_eq!(got, want);
    let by = |change: &str, path: &str| {
        rows.iter()
            .find(|r| r["change"] == change && r["path"] == path)
            .unwrap_or_else(|| panic!("no {change} row for {path}"))
    };
    let grow = by("changed", "/grow.txt");
    assert!(grow["fields"].split(',').any(|f| f == "size"), "{grow:?}");
    assert_eq!(grow["size_new"], "20000");
    assert_eq!(grow["size_old"], "20");
    // Timestomping: the SI modified time went back to 2001; the $FILE_NAME times show no such date.
    let stomp = by("changed", "/stomp.txt");
    assert!(
        stomp["modified_new"].starts_with("2001-02-03T04:05:06"),
        "{stomp:?}"
    );
    assert!(!stomp["fn_modified_new"].starts_with("2001"), "{stomp:?}");
    // Access times are left out by default.
    assert!(rows
        .iter()
        .filter(|r| r["change"] == "changed")
        .all(|r| r["accessed_old"].is_empty() && !r["fields"].split(',').any(|f| f == "accessed")));
    let created = by("created", "/docs/new.txt");
    assert_eq!(created["size_new"], "11");
    assert!(created["size_old"].is_empty());
    let deleted = by("deleted", "/gone.txt");
    assert_eq!(deleted["size_old"], "20");
    // Renamed and moved rows name only where the file is.
    assert_eq!(by("renamed", "/renamed.txt")["fields"], "name");
    assert_eq!(by("moved", "/other/mv.txt")["fields"], "parent");
    assert_eq!(by("moved", "/other/both2.txt")["fields"], "name,parent");

    // An index file and the source it was built from diff alike; a source against itself is no difference.
    let from_img = diff(&[&w.old_img, &w.new_img], &["--format", "csv"]);
    assert_eq!(from_img.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&from_img.stdout),
        String::from_utf8_lossy(&out.stdout)
    );
    for same in [[&w.new_img, &w.new_img], [&w.old_idx, &w.old_img]] {
        let o = diff(
            &[same[0].as_path(), same[1].as_path()],
            &["--format", "csv"],
        );
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).lines().count(),
            1,
            "header only"
        );
    }
    let table = diff(&[&w.new_img, &w.new_img], &[]);
    assert_eq!(table.status.code(), Some(0));
    assert!(table.stdout.is_empty());

    // The outside reference: the difference of the two exports, keyed by record and sequence number.
    let reference = export_difference(&w.old_img, &w.new_img);
    let mine: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r["change"].clone(), r["record"].clone()))
        .collect();
    assert_eq!(mine, reference);

    // --count, --only and a query.
    let count = diff(&[&w.old_idx, &w.new_img], &["--count", "--format", "csv"]);
    assert_eq!(count.status.code(), Some(1));
    let counts: BTreeMap<String, usize> = csv_rows(&count.stdout)
        .iter()
        .map(|r| (r["change"].clone(), r["count"].parse().unwrap()))
        .collect();
    for k in ["created", "deleted", "renamed", "moved", "changed"] {
        let n = rows.iter().filter(|r| r["change"] == k).count();
        assert_eq!(counts[k], n, "{k}");
    }
    let only = diff(
        &[&w.old_idx, &w.new_img],
        &["--only", "created,deleted", "--format", "csv"],
    );
    let only: BTreeSet<Seen> = csv_rows(&only.stdout)
        .iter()
        .map(|r| {
            (
                r["change"].clone(),
                r["path"].clone(),
                r["old_path"].clone(),
            )
        })
        .collect();
    assert_eq!(
        only,
        [
            s("created", "/docs/new.txt", ""),
            s("deleted", "/gone.txt", "")
        ]
        .into_iter()
        .collect()
    );
    // A query matching in OLD or NEW: mv.txt moved out of docs, new.txt made in it.
    let q = diff(
        &[&w.old_idx, &w.new_img],
        &["path:/docs/", "file:", "--format", "csv"],
    );
    assert_eq!(q.status.code(), Some(1), "{q:?}");
    let q: BTreeSet<Seen> = csv_rows(&q.stdout)
        .iter()
        .map(|r| {
            (
                r["change"].clone(),
                r["path"].clone(),
                r["old_path"].clone(),
            )
        })
        .collect();
    assert_eq!(
        q,
        [
            s("created", "/docs/new.txt", ""),
            s("moved", "/other/mv.txt", "/docs/mv.txt"),
            s("moved", "/other/both2.txt", "/docs/both.txt"),
            s("changed", "/other/mv.txt", ""),
            s("changed", "/other/both2.txt", ""),
        ]
        .into_iter()
        .collect()
    );
    let none = diff(&[&w.old_idx, &w.new_img], &["nothing-is-named-this"]);
    assert_eq!(none.status.code(), Some(0));

    // JSON lines: one object per CSV row, numbers bare.
    let jl = diff(&[&w.old_idx, &w.new_img], &["--format", "jsonl"]);
    let objs: Vec<serde_json::Value> = String::from_utf8_lossy(&jl.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(objs.len(), rows.len());
    let g = objs
        .iter()
        .find(|o| o["path"] == "/grow.txt" && o["change"] == "changed")
        .unwrap();
    assert_eq!(g["size_new"], 20000);
    assert!(g["size_old"].is_u64() && g["created_old"].is_null());

    // Parquet, read back by DuckDB.
    let pq = w.dir.join("changes.parquet");
    let o = diff(
        &[&w.old_idx, &w.new_img],
        &["--format", "parquet", "-o", pq.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let py = common::python("DuckDB");
    let script = "import duckdb,sys,json\n\
        c=duckdb.connect()\n\
        r=c.execute(\"select count(*), sum(size_new) filter (where change='changed' and path='/grow.txt'), \
        count(*) filter (where change='moved'), typeof(any_value(modified_new)) from read_parquet(?)\", [sys.argv[1]]).fetchone()\n\
        print(json.dumps([r[0], int(r[1]), r[2], r[3]]))";
    let got = run_ok(Command::new(py).args(["-c", script]).arg(&pq));
    let got: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap();
    let moved = rows.iter().filter(|r| r["change"] == "moved").count();
    assert_eq!(
        got,
        serde_json::json!([rows.len(), 20000, moved, "TIMESTAMP WITH TIME ZONE"])
    );

    // The table: change, path, details.
    let t = diff(&[&w.old_idx, &w.new_img], &["--format", "table"]);
    let t = String::from_utf8_lossy(&t.stdout);
    assert!(t.starts_with("CHANGE"), "{t}");
    assert!(
        t.lines().any(|l| l.starts_with("renamed")
            && l.contains("/renamed.txt")
            && l.contains("from /ren.txt")),
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.contains("/grow.txt") && l.contains("size 20 B -> 19.5 KiB")),
        "{t}"
    );

    let _ = fs::remove_dir_all(&w.dir);
}

#[test]
fn a_bad_source_is_exit_2_with_one_line() {
    let dir = scratch("diff-bad");
    let missing = dir.join("missing.img");
    let junk = dir.join("junk.img");
    fs::write(&junk, vec![7u8; 1 << 16]).unwrap();
    let vol = common::data("linux-made/testfs1");
    for (a, b) in [(&missing, &vol), (&vol, &junk)] {
        let o = diff(&[a.as_path(), b.as_path()], &[]);
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("uffs: error"))
            .collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(o.stdout.is_empty());
    }
    // A damaged index file: its header kept, its data cut off.
    let idx = dir.join("t.uffs");
    run_ok(uffs().arg("index").arg(&vol).arg("-o").arg(&idx));
    let bytes = fs::read(&idx).unwrap();
    let cut = dir.join("cut.uffs");
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = diff(&[&cut, &idx], &[]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).lines().count(),
        1,
        "{o:?}"
    );
    // The index file against its source: the same.
    let o = diff(&[&idx, &vol], &[]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let _ = fs::remove_dir_all(&dir);
}
