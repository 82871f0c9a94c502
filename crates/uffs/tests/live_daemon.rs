//! Live indexes through the daemon: a volume changed by ntfs-3g is brought up to date by the daemon (`uffs
//! volumes refresh`, and by itself on its interval), and its answers equal those of a fresh build, whether the
//! update was kept as a delta or merged into a whole index; a daemon killed with SIGKILL at several moments of
//! an update restarts to an index that, once refreshed, equals a fresh build; a source that vanishes leaves the
//! last index answering.

#![cfg(unix)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::daemon::World;
use common::live::{make_volume, random_op, Mounted, Rng};
use common::{run_ok, uffs};

/// Every entry with the columns that an update must keep exact (folder totals and `$FILE_NAME` times included),
/// sorted by path, with the volume prefix the daemon adds taken off.
const COLUMNS: &str =
    "path,kind,size,allocated,created,modified,accessed,attributes,record,tree_size,descendants,\
     fn_created,fn_modified,fn_mft_changed,fn_accessed";

/// The query both sides answer: every entry, sorted by path, with [`COLUMNS`].
const ALL_ROWS: [&str; 7] = [
    "*",
    "--sort",
    "path",
    "--format",
    "csv",
    "--columns",
    COLUMNS,
];

fn daemon_rows(w: &World) -> Vec<String> {
    let out = w.run(&ALL_ROWS);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.replacen("lv:/", "/", 1).replacen("\"lv:/", "\"/", 1))
        .collect()
}

fn fresh_rows(img: &Path, dir: &Path) -> Vec<String> {
    let fresh = dir.join("fresh.uffs");
    run_ok(uffs().arg("index").arg(img).arg("-o").arg(&fresh));
    let out = run_ok(uffs().arg("--index").arg(&fresh).args(ALL_ROWS));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

fn change(img: &Path, dir: &Path, rng: &mut Rng, counter: &mut u32, ops: usize) {
    let m = Mounted::new(img, &dir.join("mnt"));
    for _ in 0..ops {
        random_op(rng, &m.dir, counter);
    }
}

fn assert_same(what: &str, a: &[String], b: &[String]) {
    if a != b {
        let only_a: Vec<&String> = a.iter().filter(|l| !b.contains(l)).take(10).collect();
        let only_b: Vec<&String> = b.iter().filter(|l| !a.contains(l)).take(10).collect();
        panic!("{what}: the daemon's answers differ from a fresh build\ndaemon only: {only_a:#?}\nfresh only: {only_b:#?}");
    }
}

#[test]
fn the_daemon_follows_changes_and_survives_kills_during_updates() {
    let mut w = World::new("live");
    // Deltas past 40 entries are merged into a whole index: both ways of keeping an update are exercised.
    w.env.push(("UFFS_COMPACT_AT".into(), "40".into()));
    std::fs::create_dir_all(&w.dir).unwrap();
    let img = make_volume(&w.dir, 32);
    let img_s = img.to_string_lossy().into_owned();
    w.ok(&[
        "volumes",
        "add",
        &img_s,
        "--name",
        "lv",
        "--refresh",
        "never",
    ]);
    w.run_foreground();
    w.wait_ready(60);
    let mut rng = Rng(0x5EED);
    let mut counter = 0;

    // Batches applied with `uffs volumes refresh`.
    for batch in 0..4 {
        change(&img, &w.dir, &mut rng, &mut counter, 30);
        let said = w.ok(&["volumes", "refresh", "lv"]);
        assert!(
            said.contains("applied") || said.contains("unchanged"),
            "{said}"
        );
        assert_same(
            &format!("batch {batch}"),
            &daemon_rows(&w),
            &fresh_rows(&img, &w.dir),
        );
    }
    let status = w.ok(&["daemon", "status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    let v = &status["volumes"][0];
    assert!(v["follow"].as_str().unwrap().starts_with("never"), "{v}");
    assert!(v["total_changes"].as_u64().unwrap() > 0, "{v}");
    // Times are ISO 8601, UTC.
    let updated = v["updated_at"].as_str().unwrap();
    assert!(updated.starts_with("20") && updated.ends_with('Z'), "{v}");
    assert!(v["built_at"].as_str().unwrap().contains('T'), "{v}");

    // SIGKILL while an update is under way, at several moments: the restarted daemon loads an index from
    // before or after the update, and a refresh then makes it equal to a fresh build.
    for delay_ms in [0u64, 2, 5, 10, 20, 40] {
        change(&img, &w.dir, &mut rng, &mut counter, 25);
        let refresh = w
            .uffs()
            .args(["volumes", "refresh", "lv"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        w.kill_foreground();
        let _ = refresh.wait_with_output();
        w.run_foreground();
        w.wait_ready(60);
        w.ok(&["volumes", "refresh", "lv"]);
        assert_same(
            &format!("after a kill at {delay_ms} ms"),
            &daemon_rows(&w),
            &fresh_rows(&img, &w.dir),
        );
    }

    // A source that vanishes: the check fails, the last index keeps answering; when it is back, changes made
    // meanwhile are applied.
    let before = daemon_rows(&w);
    let away = w.dir.join("away.img");
    std::fs::rename(&img, &away).unwrap();
    let said = w.ok(&["volumes", "refresh", "lv"]);
    assert!(said.contains("unavailable"), "{said}");
    assert_eq!(daemon_rows(&w), before);
    assert!(w.log().contains("source unavailable"), "{}", w.log());
    // Offline: said by `daemon status` and `volumes list`, and still searchable after a restart.
    let status = w.ok(&["daemon", "status"]);
    assert!(status.contains("offline"), "{status}");
    // A few dozen entries: the process's own memory would make a figure per entry meaningless.
    assert!(!status.contains("bytes/entry"), "{status}");
    w.kill_foreground();
    w.run_foreground();
    let t = Instant::now();
    let status = loop {
        let status = w.ok(&["daemon", "status"]);
        if status.contains("offline, answering from its index") {
            break status;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "not offline: {status}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        daemon_rows(&w),
        before,
        "an offline volume answers from its index after a restart: {status}"
    );
    let list = w.ok(&["volumes", "list"]);
    assert!(list.contains("offline (source not found)"), "{list}");
    std::fs::rename(&away, &img).unwrap();
    assert!(!w.ok(&["volumes", "list"]).contains("offline"));
    change(&img, &w.dir, &mut rng, &mut counter, 10);
    w.ok(&["volumes", "refresh", "lv"]);
    assert_same(
        "after the source came back",
        &daemon_rows(&w),
        &fresh_rows(&img, &w.dir),
    );
    assert!(!w.ok(&["daemon", "status"]).contains("offline"));
    w.kill_foreground();
}

#[test]
fn a_created_file_is_found_once_the_interval_passes() {
    let mut w = World::new("live-interval");
    std::fs::create_dir_all(&w.dir).unwrap();
    let img = make_volume(&w.dir, 32);
    let img_s = img.to_string_lossy().into_owned();
    w.ok(&["volumes", "add", &img_s, "--name", "lv", "--refresh", "1s"]);
    w.run_foreground();
    w.wait_ready(60);
    assert_eq!(w.run(&["quokka"]).status.code(), Some(1));
    {
        let m = Mounted::new(&img, &w.dir.join("mnt"));
        std::fs::write(m.dir.join("quokka.txt"), b"hello").unwrap();
    }
    let t = Instant::now();
    loop {
        let out = w.run(&["quokka"]);
        if out.status.success() {
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                "lv:/quokka.txt"
            );
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "never found; log: {}",
            w.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = w.ok(&["daemon", "status"]);
    assert!(status.contains("re-scan every 1 s"), "{status}");
    w.kill_foreground();
}
