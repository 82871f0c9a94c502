//! `uffs export SOURCE... --dataset DIR --host NAME`: a hive-style Parquet dataset that Spark 4 (a real
//! multi-process local cluster on Java 17, default settings), Trino (a server started for the test, the Hive
//! connector over the local folder) and DuckDB read as one table, with the row count, size
//! sum, newest time (to the microsecond and to the FILETIME tick) and paths of each volume that uffs's own CSV of
//! that volume gives; a volume exported again after changes made through ntfs-3g replaces its rows (none stale,
//! none twice), and a reader while it is written sees the old file or the new one, never a mix.
//!
//! The engines run in `$UFFS_PY` (default `/opt/uffs-py/bin/python`, the venv `scripts/setup.sh` makes) with
//! `dataset_check.py` beside this file.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{csv_rows, data, fixture, run_ok, scratch, uffs};

/// Rows, size sum, newest modified FILETIME, the same in microseconds since 1970, distinct paths.
type Figures = [i64; 5];

/// The engine's view of dataset `dir`: its columns, its volumes' figures by `HOST/VOLUME`, and for Spark the
/// executor processes.
fn engine_view(engine: &str, dir: &Path) -> serde_json::Value {
    let out = run_ok(
        Command::new(common::python("DuckDB and pyspark"))
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dataset_check.py"))
            .arg(engine)
            .arg(dir),
    );
    serde_json::from_slice(&out.stdout).expect("json from dataset_check.py")
}

fn volumes_of(view: &serde_json::Value) -> BTreeMap<String, Figures> {
    serde_json::from_value(view["volumes"].clone()).expect("volumes")
}

/// `2024-05-01T12:34:56.1234567Z` as a FILETIME (100 ns ticks since 1601).
fn filetime(iso: &str) -> i64 {
    let n = |s: &str| s.parse::<i64>().unwrap();
    let (date, clock) = iso.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<&str> = date.rsplitn(3, '-').collect();
    let (y, m, day) = (n(d[2]), n(d[1]), n(d[0]));
    let (hms, frac) = clock.split_once('.').unwrap();
    let t: Vec<i64> = hms.split(':').map(n).collect();
    // Days from 1601-01-01 by the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days_since_1970 = era * 146_097 + doe - 719_468;
    let days = days_since_1970 + 134_774;
    (days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2]) * 10_000_000 + n(frac)
}

/// What uffs's CSV of `src` says of it.
fn csv_figures(src: &Path) -> Figures {
    csv_figures_with(src, &[])
}

/// What uffs's CSV of `src` with `extra` flags says of it.
fn csv_figures_with(src: &Path, extra: &[&str]) -> Figures {
    let out = run_ok(
        uffs()
            .arg("export")
            .arg(src)
            .args(["--format", "csv"])
            .args(extra),
    );
    let rows = csv_rows(&out.stdout);
    let newest = rows
        .iter()
        .filter(|r| !r["modified"].is_empty())
        .map(|r| filetime(&r["modified"]))
        .max()
        .unwrap();
    let paths: std::collections::HashSet<&str> = rows.iter().map(|r| r["path"].as_str()).collect();
    [
        rows.len() as i64,
        rows.iter().map(|r| r["size"].parse::<i64>().unwrap()).sum(),
        newest,
        (newest - 116_444_736_000_000_000).div_euclid(10),
        paths.len() as i64,
    ]
}

fn export_dataset(sources: &[&Path], dir: &Path, host: &str) -> String {
    let o = run_ok(
        uffs()
            .arg("export")
            .args(sources)
            .arg("--dataset")
            .arg(dir)
            .args(["--host", host]),
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn spark_trino_and_duckdb_read_a_dataset_of_two_hosts_as_csv_says() {
    let dir = scratch("dataset-engines");
    let lake = dir.join("lake");
    // An index file named `2`: a partition value an engine would read as a number, so it is `v2`.
    let xp_idx = dir.join("2.uffs");
    run_ok(
        uffs()
            .arg("index")
            .arg(data("windows-xp-mft/MFT"))
            .arg("-o")
            .arg(&xp_idx),
    );
    let pc1 = [
        xp_idx.clone(),
        data("windows-xp-mft/ntfs1-gen2.MFT"),
        data("linux-made/testfs1"),
    ];
    let lab = [fixture("basic.img"), data("usn/plaso-vsstest.MFT")];
    let said = export_dataset(
        &pc1.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        &lake,
        "pc1",
    );
    assert!(
        said.contains("host=pc1/volume=v2/uffs.parquet: 11833 rows"),
        "{said}"
    );
    export_dataset(
        &lab.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        &lake,
        "lab 7",
    );

    let mut want = BTreeMap::new();
    for (host, srcs) in [("pc1", &pc1[..]), ("lab_7", &lab[..])] {
        for (src, volume) in srcs.iter().zip(match host {
            "pc1" => ["v2", "ntfs1-gen2.MFT", "testfs1"].as_slice(),
            _ => ["basic.img", "plaso-vsstest.MFT"].as_slice(),
        }) {
            want.insert(format!("{host}/{volume}"), csv_figures(src));
        }
    }
    // The files leave `volume` out: the folders give `host` and `volume`, once each.
    let mut columns: Vec<String> = uffs_results_columns();
    columns.retain(|c| c != "volume");
    for engine in ["duckdb", "spark", "trino"] {
        let view = engine_view(engine, &lake);
        assert_eq!(volumes_of(&view), want, "{engine}");
        let mut got: Vec<String> = serde_json::from_value(view["columns"].clone()).unwrap();
        for part in ["host", "volume"] {
            assert_eq!(
                got.iter().filter(|c| *c == part).count(),
                1,
                "{engine} {got:?}"
            );
        }
        got.retain(|c| c != "host" && c != "volume");
        assert_eq!(got, columns, "{engine}");
        if engine == "spark" {
            assert_eq!(view["executors"], 2, "a driver and two executor processes");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The documented schema's column names, in order (docs/parquet.md).
fn uffs_results_columns() -> Vec<String> {
    let doc = std::fs::read_to_string(common::repo().join("docs/parquet.md")).unwrap();
    doc.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() >= 4 && cells[1].starts_with('`'))
                .then(|| cells[1].trim_matches('`').to_string())
        })
        .collect()
}

#[cfg(unix)]
#[test]
fn a_volume_exported_again_replaces_its_rows_and_a_reader_never_sees_a_mix() {
    use common::live::{make_volume, Mounted};
    let dir = scratch("dataset-reexport");
    let (a_dir, b_dir) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir_all(&a_dir).unwrap();
    std::fs::create_dir_all(&b_dir).unwrap();
    let lake = dir.join("lake");
    // State a: 60 files; state b: 20 of them deleted, 10 renamed, 30 new, one grown. Both images are
    // vol.img, so both are volume `vol.img` of host h.
    let a = make_volume(&a_dir, 16);
    {
        let m = Mounted::new(&a, &dir.join("mnt"));
        for i in 0..60 {
            std::fs::write(m.dir.join(format!("f{i}.txt")), vec![b'a'; i * 100]).unwrap();
        }
    }
    let b = b_dir.join("vol.img");
    std::fs::copy(&a, &b).unwrap();
    {
        let m = Mounted::new(&b, &dir.join("mnt"));
        for i in 0..20 {
            std::fs::remove_file(m.dir.join(format!("f{i}.txt"))).unwrap();
        }
        for i in 20..30 {
            std::fs::rename(
                m.dir.join(format!("f{i}.txt")),
                m.dir.join(format!("r{i}.txt")),
            )
            .unwrap();
        }
        for i in 0..30 {
            std::fs::write(m.dir.join(format!("new{i}.bin")), [b'b'; 7]).unwrap();
        }
        std::fs::write(m.dir.join("f59.txt"), vec![b'c'; 100_000]).unwrap();
    }
    let file = lake.join("host=h/volume=vol.img/uffs.parquet");
    let mut bytes = Vec::new();
    for img in [&a, &b] {
        export_dataset(&[img], &lake, "h");
        let view = engine_view("duckdb", &lake);
        let want = BTreeMap::from([("h/vol.img".to_string(), csv_figures(img))]);
        assert_eq!(volumes_of(&view), want, "{}", img.display());
        // One file in the folder: nothing left under a temporary name, nothing kept from before.
        let names: Vec<String> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["uffs.parquet"]);
        bytes.push(std::fs::read(&file).unwrap());
    }
    assert_ne!(bytes[0], bytes[1]);

    // Exported again and again, alternately a and b, each held a moment before its rename: every read of the
    // volume's file gives all of a or all of b.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let reads = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let got = std::fs::read(&file).expect("the volume's file is always there");
                assert!(
                    got == bytes[0] || got == bytes[1],
                    "a read of {} bytes that is neither",
                    got.len()
                );
                n += 1;
            }
            n
        });
        for img in [&a, &b, &a, &b] {
            run_ok(
                uffs()
                    .env("UFFS_TEST_HOLD_BEFORE_RENAME_MS", "100")
                    .arg("export")
                    .arg(img)
                    .arg("--dataset")
                    .arg(&lake)
                    .args(["--host", "h"]),
            );
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        reader.join().unwrap()
    });
    assert!(reads > 10, "{reads}");
    assert_eq!(std::fs::read(&file).unwrap(), bytes[1]);
    change_sets_hold_what_uffs_diff_says(&dir, &a, &b);
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
/// `--changes`: exporting image `b` over a dataset that holds image `a` writes one change file whose rows are
/// the ones `uffs diff a b` writes; exporting `b` again writes none.
fn change_sets_hold_what_uffs_diff_says(dir: &Path, a: &Path, b: &Path) {
    let (lake, changes) = (dir.join("lake2"), dir.join("changes"));
    let export = |img: &Path| {
        let o = run_ok(
            uffs()
                .arg("export")
                .arg(img)
                .arg("--dataset")
                .arg(&lake)
                .args(["--host", "h", "--changes"])
                .arg(&changes),
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    export(a);
    assert!(!changes.exists(), "a first export has nothing to compare");
    export(b);
    let folder = changes.join("host=h/volume=vol.img");
    let files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("changes-2") && name.ends_with("Z.parquet"),
        "{name}"
    );
    let columns = "change,kind,path,old_path,record,sequence,fields";
    let script = format!(
        "import duckdb, json, sys\n\
         rows = duckdb.connect().execute(\"select {columns}, since < until from read_parquet(\
         '{}', hive_partitioning=false) \").fetchall()\n\
         print(json.dumps([[str(v) if v is not None else '' for v in r] for r in rows]))",
        files[0].display()
    );
    let o = run_ok(
        Command::new(common::python("DuckDB"))
            .arg("-c")
            .arg(&script),
    );
    let mut got: Vec<Vec<String>> = serde_json::from_slice(&o.stdout).unwrap();
    got.sort();
    let o = uffs()
        .arg("diff")
        .arg(a)
        .arg(b)
        .args(["--format", "csv", "--columns", columns])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut want: Vec<Vec<String>> = csv_rows(&o.stdout)
        .into_iter()
        .map(|r| {
            let mut row: Vec<String> = columns.split(',').map(|c| r[c].clone()).collect();
            row.push("True".into());
            row
        })
        .collect();
    want.sort();
    // 20 deleted, 10 renamed, 30 created, one changed (and the folder that holds them).
    assert!(want.len() >= 61, "{want:?}");
    assert_eq!(got, want);
    let said = export(b);
    assert!(said.contains("h/vol.img: no changes since"), "{said}");
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1);
}

#[test]
fn a_dataset_is_refused_what_it_cannot_hold() {
    let dir = scratch("dataset-refused");
    let lake = dir.join("lake");
    let xp = data("windows-xp-mft/MFT");
    let cases: [(&[&str], &str); 3] = [
        (&["--format", "csv"], "--dataset writes Parquet, not csv"),
        (&["-o", "x.parquet"], "cannot be used with"),
        (&[], "both be written as volume=MFT"),
    ];
    for (extra, said) in cases {
        let mut c = uffs();
        c.arg("export")
            .arg(&xp)
            .arg("--dataset")
            .arg(&lake)
            .args(extra);
        if extra.is_empty() {
            c.arg(&xp);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(said), "{extra:?}: {err}");
    }
    // Nothing was written.
    assert!(!lake.exists());
    // Several sources without --dataset.
    let o = uffs().arg("export").arg(&xp).arg(&xp).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `uffs volumes export --dataset DIR --keep`: the daemon writes every registered volume from what it answers
/// (its index and the changes applied since), then each volume again after every update; `--forget` stops that.
#[cfg(unix)]
#[test]
fn the_daemon_writes_its_volumes_and_keeps_them_current() {
    use common::daemon::World;
    use common::live::{make_volume, Mounted};
    let w = World::new("dataset");
    std::fs::create_dir_all(&w.dir).unwrap();
    let img = make_volume(&w.dir, 16);
    let change = |from: usize, to: usize| {
        let m = Mounted::new(&img, &w.dir.join("mnt"));
        for i in from..to {
            std::fs::write(m.dir.join(format!("f{i}.txt")), vec![b'a'; i * 10]).unwrap();
        }
        for i in from.saturating_sub(10)..from {
            let _ = std::fs::remove_file(m.dir.join(format!("f{i}.txt")));
        }
    };
    change(0, 40);
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    let img_s = img.to_string_lossy().into_owned();
    w.ok(&[
        "volumes",
        "add",
        &img_s,
        "--name",
        "live",
        "--refresh",
        "never",
    ]);
    w.ok(&["volumes", "add", &xp, "--name", "C"]);
    w.start();
    w.wait_ready(60);
    let lake = w.dir.join("lake");
    let lake_s = lake.to_string_lossy().into_owned();
    let changes = w.dir.join("changes");
    let changes_s = changes.to_string_lossy().into_owned();
    let said = w.ok(&[
        "volumes",
        "export",
        "--dataset",
        &lake_s,
        "--host",
        "pc 1",
        "--keep",
        "--changes",
        &changes_s,
    ]);
    assert!(
        said.contains("live: ") && said.contains("C: ") && said.contains("--forget"),
        "{said}"
    );
    let figures = |live: &Path| {
        BTreeMap::from([
            (
                "pc_1/C".to_string(),
                csv_figures_with(Path::new(&xp), &["--streams"]),
            ),
            (
                "pc_1/live".to_string(),
                csv_figures_with(live, &["--streams"]),
            ),
        ])
    };
    assert_eq!(volumes_of(&engine_view("duckdb", &lake)), figures(&img));

    // Changed through ntfs-3g, then refreshed: the daemon writes the volume again.
    change(40, 70);
    w.ok(&["volumes", "refresh", "live"]);
    assert_eq!(volumes_of(&engine_view("duckdb", &lake)), figures(&img));
    assert!(w.log().contains("dataset: live: "), "{}", w.log());
    // ... and its change set: the 30 files made and the 10 deleted.
    let folder = changes.join("host=pc_1/volume=live");
    let files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let script = format!(
        "import duckdb\n\
         for r in duckdb.connect().execute(\"select change, path from read_parquet('{}', \
         hive_partitioning=false) where path like '%.txt'\").fetchall(): print(r[0], r[1])",
        files[0].display()
    );
    let o = run_ok(
        Command::new(common::python("DuckDB"))
            .arg("-c")
            .arg(&script),
    );
    let mut got: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    got.sort();
    let mut want: Vec<String> = (30..40)
        .map(|i| format!("deleted live:/f{i}.txt"))
        .chain((40..70).map(|i| format!("created live:/f{i}.txt")))
        .collect();
    want.sort();
    assert_eq!(got, want);
    assert!(w.log().contains(" changes to "), "{}", w.log());

    // Forgotten: a change is applied, the dataset stays as it was.
    let file = lake.join("host=pc_1/volume=live/uffs.parquet");
    let before = std::fs::read(&file).unwrap();
    w.ok(&["volumes", "export", "--forget"]);
    change(70, 80);
    w.ok(&["volumes", "refresh", "live"]);
    assert_eq!(std::fs::read(&file).unwrap(), before);
}
