//! `--format parquet` (`uffs export` and queries, with `--index`, `--source` and through a daemon), read back by
//! DuckDB: its counts, sums, earliest and latest times and a join of two volumes equal what
//! `uffs export --format csv` says, and its schema is the one docs/parquet.md documents.
//!
//! DuckDB runs in `$UFFS_PY` (default `/opt/uffs-py/bin/python`, the venv `scripts/setup.sh` makes) with
//! `parquet_check.py` beside this file.

mod common;

#[cfg(unix)]
use common::daemon::World;
use common::{csv_rows, data, fixture, path_str, repo, run_ok, scratch, uffs};
use std::path::{Path, PathBuf};

fn python() -> std::process::Command {
    let mut c = std::process::Command::new(common::python("DuckDB"));
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parquet_check.py"));
    c
}

fn check(args: &[&Path], cmd: &str) -> serde_json::Value {
    let out = run_ok(python().arg(cmd).args(args));
    serde_json::from_slice(&out.stdout).expect("json from parquet_check.py")
}

/// `uffs export SRC --format FMT -o DIR/NAME.FMT` with `extra`.
fn export_to(src: &Path, fmt: &str, dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let f = dir.join(format!("{name}.{fmt}"));
    run_ok(
        uffs()
            .arg("export")
            .arg(src)
            .args(["--format", fmt, "-o"])
            .arg(&f)
            .args(extra),
    );
    f
}

fn samples() -> Vec<(&'static str, PathBuf)> {
    vec![
        ("xp", data("windows-xp-mft/MFT")),
        ("gen2", data("windows-xp-mft/ntfs1-gen2.MFT")),
        ("vss", data("usn/plaso-vsstest.MFT")),
        ("linux", data("linux-made/testfs1")),
        ("basic", fixture("basic.img")),
    ]
}

#[test]
fn duckdb_reads_what_csv_says_on_samples_and_a_fixture() {
    let dir = scratch("parquet-summary");
    let mut no_times = 0;
    for (name, src) in samples() {
        for extra in [&[][..], &["--deleted", "--streams"][..]] {
            let tag = format!("{name}{}", extra.len());
            let csv = export_to(&src, "csv", &dir, &tag, extra);
            let pq = export_to(&src, "parquet", &dir, &tag, extra);
            assert_eq!(&std::fs::read(&pq).unwrap()[..4], b"PAR1");
            let s = check(&[&csv, &pq], "summary");
            assert_eq!(s["csv"], s["parquet"], "{name} {extra:?}");
            assert!(s["csv"]["count"].as_u64().unwrap() > 0);
            for t in ["created", "modified", "mft_changed", "accessed"] {
                // [micros min, micros max, FILETIME min, FILETIME max, nulls]
                if s["csv"][t][4].as_u64() > Some(0) {
                    no_times += 1;
                }
                // An unknown time is no earliest time.
                assert_ne!(s["parquet"][t][2], 0, "{name} {t}");
            }
        }
    }
    // Some samples have times their volume does not keep (FILETIME 0): empty in CSV, null in Parquet (both the
    // timestamp and the `_filetime` column).
    assert!(no_times > 0);
    // Nothing is left under a temporary name.
    for e in std::fs::read_dir(&dir).unwrap() {
        let n = e.unwrap().file_name();
        assert!(!n.to_string_lossy().ends_with(".tmp"), "{n:?}");
    }
}

/// A container's Parquet export holds the raw image's rows: DuckDB's figures of the content volume's export
/// from an E01 set of deflated segments equal those of the raw image's CSV (the `volume` column alone names the
/// container).
#[cfg(unix)]
#[test]
fn a_container_exports_the_rows_of_its_raw_image() {
    let dir = scratch("parquet-container");
    let raw = fixture("content.img");
    let (e01, _) = common::containers::acquire(&raw, &dir.join("ewf"), "c", "1MiB", "deflate:fast");
    let extra = ["--deleted", "--streams"];
    let csv = export_to(&raw, "csv", &dir, "raw", &extra);
    let pq = export_to(&e01, "parquet", &dir, "e01", &extra);
    let s = check(&[&csv, &pq], "summary");
    assert_eq!(s["csv"], s["parquet"]);
    assert!(s["csv"]["count"].as_u64().unwrap() > 100);
    let rows = |f: &Path| -> Vec<(String, u64)> {
        parquet_rows(f)
            .into_iter()
            .map(|(_, p, n)| (p, n))
            .collect()
    };
    let raw_pq = export_to(&raw, "parquet", &dir, "raw", &extra);
    assert_eq!(rows(&pq), rows(&raw_pq));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The schema's rows in docs/parquet.md: `| `name` | TYPE | ...`.
fn documented_schema() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(repo().join("docs/parquet.md")).expect("docs/parquet.md");
    doc.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            if cells.len() < 4 || !cells[1].starts_with('`') {
                return None;
            }
            Some((cells[1].trim_matches('`').to_string(), cells[2].to_string()))
        })
        .collect()
}

#[test]
fn the_schema_is_the_documented_one_for_every_source() {
    let dir = scratch("parquet-schema");
    let doc = documented_schema();
    assert_eq!(doc.len(), 38, "{doc:?}");
    for (name, src) in samples() {
        let pq = export_to(&src, "parquet", &dir, name, &[]);
        let meta = check(&[&pq], "meta");
        assert_eq!(meta["uffs.schema_version"], "3", "{meta}");
        let got: Vec<(String, String)> = check(&[&pq], "describe")
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r[0].as_str().unwrap().to_string(),
                    r[1].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(got, doc, "{name}");
    }
}

#[test]
fn two_volumes_join_and_union() {
    let dir = scratch("parquet-join");
    let (a, b) = (data("windows-xp-mft/MFT"), fixture("basic.img"));
    let files = [
        export_to(&a, "csv", &dir, "a", &[]),
        export_to(&b, "csv", &dir, "b", &[]),
        export_to(&a, "parquet", &dir, "a", &[]),
        export_to(&b, "parquet", &dir, "b", &[]),
    ];
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let j = check(&refs, "join");
    assert_eq!(j["csv_join"], j["parquet_join"]);
    assert!(j["csv_join"].as_u64().unwrap() > 0, "{j}");
    assert_eq!(j["csv_counts"], j["parquet_counts"]);
    // Each file names its volume: source and serial (a raw $MFT capture has none: 0).
    let info = run_ok(uffs().arg("info").arg(&b).arg("--json"));
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let serial = u64::from_str_radix(info["volumes"][0]["serial"].as_str().unwrap(), 16).unwrap();
    let vols = j["volumes"].to_string();
    // Signed, with the serial's bits (an NTFS serial is random and may pass i64::MAX).
    assert!(vols.contains(&format!("\"{}\"", serial as i64)), "{vols}");
    assert!(
        vols.contains(path_str(&a)) && vols.contains(path_str(&b)),
        "{vols}"
    );
}

/// Path and size of each row of a query as CSV.
fn csv_path_size(out: &[u8]) -> Vec<(String, u64)> {
    csv_rows(out)
        .into_iter()
        .map(|r| (r["path"].clone(), r["size"].parse().unwrap()))
        .collect()
}

/// Volume, path and size of each row of a Parquet file.
fn parquet_rows(f: &Path) -> Vec<(String, String, u64)> {
    check(&[f], "rows")
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_str().unwrap().to_string(),
                r[2].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_query_as_parquet_with_index_and_source() {
    let dir = scratch("parquet-query");
    let src = data("windows-xp-mft/MFT");
    let idx = dir.join("xp.uffs");
    run_ok(uffs().arg("index").arg(&src).arg("-o").arg(&idx));
    for how in [["--index", path_str(&idx)], ["--source", path_str(&src)]] {
        let q = ["ext:dll", "--sort", "path"];
        let csv =
            run_ok(
                uffs()
                    .args(how)
                    .args(q)
                    .args(["--format", "csv", "--columns", "path,size"]),
            );
        let f = dir.join("q.parquet");
        run_ok(
            uffs()
                .args(how)
                .args(q)
                .args(["--format", "parquet", "-o"])
                .arg(&f),
        );
        let want = csv_path_size(&csv.stdout);
        let got: Vec<(String, u64)> = parquet_rows(&f)
            .into_iter()
            .map(|(v, p, s)| {
                assert_eq!(v, "");
                (p, s)
            })
            .collect();
        assert!(want.len() > 100, "{}", want.len());
        assert_eq!(got, want, "{how:?}");
        // Piped, Parquet goes to stdout.
        let piped = run_ok(uffs().args(how).args(q).args(["--format", "parquet"]));
        assert_eq!(piped.stdout, std::fs::read(&f).unwrap());
    }
    // Rows that are not entries have no Parquet form; --columns is CSV's.
    for extra in [&["--count"][..], &["--stats"], &["--columns", "path"]] {
        let o = uffs()
            .args(["--index", path_str(&idx), "ext:dll", "--format", "parquet"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("parquet"));
    }
}

#[cfg(unix)]
#[test]
fn parquet_is_refused_on_a_terminal() {
    let src = data("linux-made/testfs1");
    for args in [
        format!("export {} --format parquet", src.display()),
        format!("--source {} --format parquet", src.display()),
    ] {
        let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_uffs"));
        let shown = common::on_a_terminal(&cmd, |_| {});
        assert!(shown.contains("give -o FILE or pipe it"), "{shown:?}");
        assert!(!shown.contains("PAR1"), "{shown:?}");
    }
}

#[cfg(unix)]
#[test]
fn a_query_as_parquet_through_the_daemon() {
    let w = World::new("parquet");
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    let linux = w.copy("linux-made/testfs1", "testfs1");
    w.ok(&["volumes", "add", &xp, "--name", "C"]);
    w.ok(&["volumes", "add", &linux]);
    w.start();
    w.wait_ready(30);
    let q = ["ext:dll | upcase", "--sort", "path"];
    let csv = run_ok(
        w.uffs()
            .args(q)
            .args(["--format", "csv", "--columns", "path,size"]),
    );
    let f = w.dir.join("q.parquet");
    run_ok(w.uffs().args(q).args(["--format", "parquet", "-o"]).arg(&f));
    // Each row names its volume in `volume`, and its path within it in `path` (schema 3): together what the
    // CSV prints.
    let rows = parquet_rows(&f);
    assert!(rows
        .iter()
        .all(|(v, p, _)| p.starts_with('/') && (v == "C" || v == "testfs1")));
    let got: Vec<(String, u64)> = rows
        .iter()
        .map(|(v, p, s)| (format!("{v}:{p}"), *s))
        .collect();
    let want = csv_path_size(&csv.stdout);
    assert!(want.len() > 100);
    assert_eq!(got, want);
    assert!(rows.iter().any(|r| r.0 == "testfs1"));
    // Piped, the same bytes.
    let piped = run_ok(w.uffs().args(q).args(["--format", "parquet"]));
    assert_eq!(piped.stdout, std::fs::read(&f).unwrap());
}

/// Through the daemon, a table fits the client's terminal: the client sends its width with the query.
#[cfg(unix)]
#[test]
fn a_table_through_the_daemon_fits_the_clients_terminal() {
    let w = World::new("table-width");
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &xp, "--name", "C"]);
    w.start();
    w.wait_ready(30);
    let cmd = format!(
        "COLUMNS=50 {} system32/drivers --format table --color never --sort path --limit 20 2>/dev/null",
        env!("CARGO_BIN_EXE_uffs")
    );
    let shown = common::on_a_terminal(&cmd, |c| {
        c.env("UFFS_CACHE_DIR", &w.cache)
            .env("UFFS_RUNTIME_DIR", &w.runtime);
    });
    let lines: Vec<&str> = shown.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 21, "{shown}");
    assert!(lines.iter().all(|l| l.chars().count() <= 50), "{shown}");
    assert!(
        lines[1].starts_with("C:/") && lines[1].contains('…'),
        "{shown}"
    );
    // Piped, whole paths.
    let piped = w.ok(&[
        "system32/drivers",
        "--format",
        "table",
        "--sort",
        "path",
        "--limit",
        "20",
    ]);
    assert!(!piped.contains('…') && piped.lines().any(|l| l.chars().count() > 50));
}
