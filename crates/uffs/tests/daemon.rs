//! The daemon end to end: a real `uffs daemon` process per test, with its own cache and runtime directories,
//! driven through `uffs` commands and, for hostile clients, straight through its socket.

#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::daemon::World;
use common::*;

/// Talking to the daemon straight through its socket, and reading its memory.
trait Socket {
    fn socket(&self) -> PathBuf;
    fn rss_kib(&self) -> u64;
    /// Sends raw bytes on a fresh connection and returns every line of the answer.
    fn raw(&self, request: &[u8]) -> Vec<String>;
}

impl Socket for World {
    fn socket(&self) -> PathBuf {
        self.runtime.join("daemon.sock")
    }

    fn rss_kib(&self) -> u64 {
        let pid = self.pid().expect("daemon pid");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS")
    }

    fn raw(&self, request: &[u8]) -> Vec<String> {
        let mut s = UnixStream::connect(self.socket()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        // The daemon may answer and close before an oversized request is all sent.
        let _ = s.write_all(request);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.lines().map(String::from).collect()
    }
}

fn kill9(pid: i32, socket: &Path) {
    // SAFETY: signalling a process id this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    // Gone when its socket refuses connections (its threads may outlive the main one by a moment).
    let t = Instant::now();
    while UnixStream::connect(socket).is_ok() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the killed daemon still listens"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn volumes_are_served_and_survive_a_restart() {
    let w = World::new("restart");
    let linux = w.copy("linux-made/testfs1", "testfs1.img");
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    // Two volumes built in parallel; one is named as a drive letter.
    w.ok(&["volumes", "add", &linux]);
    w.ok(&["volumes", "add", &xp, "--name", "C"]);
    let list = w.ok(&["volumes", "list"]);
    assert!(list.contains("testfs1\t") && list.contains("C\t"), "{list}");

    // Without a daemon, the query says how to start one.
    let o = w.run(&["kernel32.dll"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("uffs daemon start"));

    w.start();
    let status = w.wait_ready(30);
    assert_eq!(status["volumes"].as_array().unwrap().len(), 2);
    let before = w.restart_answers();
    w.check_volume_paths(&before);
    // A bad query: exit status 2 and the pointed message.
    let bad = w.run(&["size:>1xb"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown size unit"));

    w.ok(&["daemon", "stop"]);
    assert!(w.run(&["kernel32.dll"]).status.code() == Some(2));
    w.start();
    w.wait_ready(30);
    let after = w.restart_answers();
    assert_eq!(before, after, "answers changed across a restart");
    assert!(
        !w.log().contains("rebuilding"),
        "an unchanged source was rebuilt:\n{}",
        w.log()
    );

    // Another volume behind a registered source: the index is refused and rebuilt from what is there now.
    std::fs::copy(data("linux-made/testfs1"), &xp).unwrap();
    let r = w.raw(b"{\"op\":\"reload\"}\n");
    assert!(r[0].contains("\"ok\""), "{r:?}");
    let t = Instant::now();
    while !w.log().contains("the index is of another volume")
        || w.wait_ready(60)["volumes"][1]["entries"] == 11842
    {
        assert!(t.elapsed() < Duration::from_secs(60), "{}", w.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(w.ok(&["--limit", "100000"]).contains("C:/many_subdirs"));

    // Removing a volume takes it out of the running daemon's answers.
    w.ok(&["volumes", "remove", "testfs1"]);
    assert!(!w.ok(&["--limit", "100000"]).contains("testfs1:/"));
    assert!(!w.cache.join("testfs1.uffs").exists());
    assert!(!w.cache.join("testfs1.2.uffs").exists());
}

/// An index in an older format keeps answering, and the daemon builds it again in the current one.
#[test]
fn an_older_index_format_answers_and_is_rebuilt() {
    let w = World::new("format");
    let src = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &src, "--name", "xp"]);
    let file = w.cache.join("xp.uffs");
    let want = w.ok(&["--index", file.to_str().unwrap(), "-e", "dll", "--count"]);
    let idx = uffs_index::file::read(&file).unwrap();
    uffs_index::file::write_format_4(&idx, &file).unwrap();
    drop(idx);
    // Read by a one-shot query as it is, and by the daemon until the rebuild replaces it.
    assert_eq!(
        w.ok(&["--index", file.to_str().unwrap(), "-e", "dll", "--count"]),
        want
    );
    w.start();
    w.wait_ready(60);
    assert_eq!(w.ok(&["-e", "dll", "--count"]), want);
    let rows = w.ok(&["-e", "dll", "--sort", "path"]);
    let t = Instant::now();
    while !w.log().contains("rebuilt xp") {
        assert!(t.elapsed() < Duration::from_secs(60), "{}", w.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(w.log().contains("older format"), "{}", w.log());
    let newest = uffs_index::file::read(&w.newest_index("xp")).unwrap();
    assert_eq!(newest.file_format(), Some(uffs_index::file::VERSION));
    assert_eq!(w.ok(&["-e", "dll", "--sort", "path"]), rows);
    w.ok(&["daemon", "stop"]);
}

#[test]
fn a_killed_build_leaves_a_loadable_index_or_a_rebuild() {
    let w = World::new("kill");
    let src = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &src, "--name", "xp"]);
    let want = w.ok(&[
        "--index",
        w.cache.join("xp.uffs").to_str().unwrap(),
        "-e",
        "dll",
        "--count",
    ]);
    // Touching the source makes the index stale: each start begins a rebuild, and the daemon is killed at a
    // different moment of it each time, the index write included.
    for delay_ms in [0u64, 5, 15, 30, 60, 120] {
        let f = std::fs::OpenOptions::new().append(true).open(&src).unwrap();
        f.set_modified(std::time::SystemTime::now()).unwrap();
        w.start();
        std::thread::sleep(Duration::from_millis(delay_ms));
        kill9(w.pid().expect("pid"), &w.socket());
        let _ = std::fs::remove_file(w.runtime.join("daemon.pid"));
        w.start();
        w.wait_ready(60);
        assert_eq!(
            w.ok(&["-e", "dll", "--count"]),
            want,
            "after a kill at {delay_ms} ms"
        );
        let stray: Vec<_> = std::fs::read_dir(&w.cache)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
            .collect();
        assert!(stray.is_empty(), "temporary files left: {stray:?}");
        w.ok(&["daemon", "stop"]);
    }
    // A damaged index file (as a crash of a writer that did not rename would leave) is refused; the previous
    // one or a rebuild answers.
    let idx = w.newest_index("xp");
    let mut bytes = std::fs::read(&idx).unwrap();
    let len = bytes.len();
    bytes[len / 2] ^= 0x55;
    std::fs::write(&idx, &bytes).unwrap();
    w.start();
    w.wait_ready(60);
    assert_eq!(w.ok(&["-e", "dll", "--count"]), want);
    assert!(w.log().contains("checksum does not match"), "{}", w.log());
    w.ok(&["daemon", "stop"]);
    let idx = w.newest_index("xp");
    let bytes = std::fs::read(&idx).unwrap();
    std::fs::write(&idx, &bytes[..bytes.len() / 3]).unwrap();
    w.start();
    w.wait_ready(60);
    assert_eq!(w.ok(&["-e", "dll", "--count"]), want);
}

#[test]
fn concurrent_clients_see_whole_snapshots_while_rebuilds_swap_them() {
    let w = World::new("concurrent");
    // Two states of one raw $MFT source: the whole capture, and its first 8,000 records.
    let full = std::fs::read(data("windows-xp-mft/MFT")).unwrap();
    let part = full[..8000 * 1024].to_vec();
    let src = w.dir.join("vol.mft");
    std::fs::write(&src, &full).unwrap();
    let count = |bytes: &[u8]| {
        let p = w.dir.join("probe.mft");
        std::fs::write(&p, bytes).unwrap();
        w.ok(&["--source", p.to_str().unwrap(), "--count"])
    };
    let (count_full, count_part) = (count(&full), count(&part));
    assert_ne!(count_full, count_part);
    w.ok(&["volumes", "add", src.to_str().unwrap(), "--name", "vol"]);
    w.start();
    w.wait_ready(30);
    for _ in 0..3 {
        w.ok(&["--count"]);
    }
    let rss_before = w.rss_kib();

    let stop = std::sync::atomic::AtomicBool::new(false);
    let answers = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..12 {
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let o = w.run(&["--count"]);
                    answers.lock().unwrap().push((
                        o.status.code(),
                        String::from_utf8_lossy(&o.stdout).into_owned(),
                    ));
                }
            });
        }
        // The clients stop when this scope ends, also by a failed assertion (else the scope would wait for
        // them forever).
        struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let _stop = StopOnDrop(&stop);
        // Swap the source between its two states and ask for a refresh, four times.
        for i in 0..4 {
            let next = if i % 2 == 0 { &part } else { &full };
            let tmp = w.dir.join("vol.mft.new");
            std::fs::write(&tmp, next).unwrap();
            std::fs::rename(&tmp, &src).unwrap();
            let r = w.raw(b"{\"op\":\"reload\"}\n");
            assert!(r[0].contains("\"ok\""), "{r:?}");
            let want = if i % 2 == 0 { &count_part } else { &count_full };
            let t = Instant::now();
            while &w.ok(&["--count"]) != want {
                assert!(
                    t.elapsed() < Duration::from_secs(60),
                    "the rebuild never swapped in:\n{}",
                    w.log()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    });
    let answers = answers.into_inner().unwrap();
    assert!(answers.len() > 50, "only {} answers", answers.len());
    for (code, out) in &answers {
        assert_eq!(*code, Some(0), "a query failed: {out}");
        assert!(
            out == &count_full || out == &count_part,
            "an answer from no snapshot: {out:?}"
        );
    }
    // Old snapshots are gone once their queries end: memory is back near where it was.
    w.ok(&["--count"]);
    let rss_after = w.rss_kib();
    assert!(
        rss_after < rss_before + 16 * 1024,
        "RSS grew from {rss_before} KiB to {rss_after} KiB"
    );
}

#[test]
fn hostile_requests_get_an_error_and_change_nothing() {
    let w = World::new("hostile");
    let src = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &src, "--name", "xp"]);
    w.start();
    w.wait_ready(30);
    let want = w.ok(&["-e", "dll", "--sort", "name", "--limit", "20"]);

    let error = |lines: &[String], what: &str| {
        assert_eq!(lines.len(), 1, "{what}: {lines:?}");
        assert!(lines[0].starts_with("{\"error\":"), "{what}: {lines:?}");
    };
    // A request that is well formed but asks what cannot be answered (a bad query) is the client's to correct.
    let refused = |lines: &[String], what: &str| {
        assert_eq!(lines.len(), 1, "{what}: {lines:?}");
        assert!(lines[0].starts_with("{\"refused\":"), "{what}: {lines:?}");
    };
    error(&w.raw(b"garbage\n"), "not JSON");
    error(&w.raw(b"{\"op\":\"format-disk\"}\n"), "unknown op");
    error(&w.raw(b"{\"op\":\"ping\",\"extra\":1}\n"), "unknown field");
    error(
        &w.raw(b"{\"op\":\"query\",\"request\":{\"query\":42}}\n"),
        "wrong type",
    );
    error(
        &w.raw(b"{\"op\":\"query\",\"request\":{\"query\":\"x\",\"index\":\"/etc/passwd\"}}\n"),
        "client-only option",
    );
    error(
        &w.raw(format!("{}\n", "[".repeat(100_000)).as_bytes()),
        "deep nesting",
    );
    error(&w.raw(&vec![b'x'; 200 * 1024]), "oversized");
    error(&w.raw(b"{\"op\":\"ping\"}"), "truncated (no newline)");
    assert!(w.raw(b"").is_empty(), "an empty connection gets no answer");
    let deep_query = format!(
        "{{\"op\":\"query\",\"request\":{{\"query\":\"{}x{}\"}}}}\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    refused(&w.raw(deep_query.as_bytes()), "deeply nested query");

    // A client that vanishes mid-stream: ask for everything, read one line, hang up.
    for _ in 0..5 {
        let mut s = UnixStream::connect(w.socket()).unwrap();
        s.write_all(b"{\"op\":\"query\",\"request\":{}}\n").unwrap();
        let mut line = String::new();
        BufReader::new(&s).read_line(&mut line).unwrap();
        assert!(line.starts_with("{\"out\":"), "{line}");
        drop(s);
    }
    // Clients that connect and say nothing hold a slot each until they time out; past the limit, "busy".
    let idle: Vec<UnixStream> = (0..64)
        .map(|_| UnixStream::connect(w.socket()).unwrap())
        .collect();
    // (Accepting 64 connections takes a moment on a loaded machine: ask until the daemon says busy.)
    let t = Instant::now();
    loop {
        let answer = w.raw(b"{\"op\":\"ping\"}\n");
        if answer[0].contains("busy") {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(4),
            "never busy: {answer:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(idle);
    let t = Instant::now();
    while !w.raw(b"{\"op\":\"ping\"}\n")[0].contains("\"ok\"") {
        assert!(t.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    // Through all of it the daemon kept its answers.
    assert_eq!(
        w.ok(&["-e", "dll", "--sort", "name", "--limit", "20"]),
        want
    );
}

#[test]
fn another_user_is_refused() {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        common::cannot_run("switching to another uid needs root");
        return;
    }
    let mut w = World::new("uid");
    // The runtime directory where every directory above it lets others through (the build's own may not), so
    // that the second wall below is always tried.
    let open = std::env::temp_dir().join(format!("uffs-uid-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&open);
    w.runtime = open;
    let src = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &src, "--name", "xp"]);
    w.start();
    w.wait_ready(30);
    // The runtime directory is the owner's alone.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&w.runtime).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let as_nobody = |script: &str| {
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/usr/bin/python3",
                "-c",
                script,
            ])
            .output()
            .expect("setpriv")
    };
    let connect = format!(
        "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({:?})\ntry:\n    s.sendall(b'{{\"op\":\"ping\"}}\\n')\nexcept OSError:\n    pass\nprint(s.recv(4096).decode())",
        w.socket().to_str().unwrap()
    );
    // First wall: the directory. Another user cannot even reach the socket.
    let o = as_nobody(&connect);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Permission"),
        "{o:?}"
    );
    // Second wall: the peer's uid. Open the directory and the socket for a moment: the daemon still refuses.
    // (Only where every directory above the socket lets others through.)
    let reachable = w
        .runtime
        .ancestors()
        .skip(1)
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0));
    if !reachable {
        common::cannot_run(&format!(
            "second check: a directory above {} is closed to others",
            w.runtime.display()
        ));
        return;
    }
    std::fs::set_permissions(&w.runtime, std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(w.socket(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = as_nobody(&connect);
    std::fs::set_permissions(&w.runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(w.socket(), std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("refused"), "{o:?}");
    assert!(
        w.log().contains("refused a connection from uid 65534"),
        "{}",
        w.log()
    );
    // And the owner is still answered.
    assert!(
        w.ok(&["-e", "dll", "--count"])
            .trim()
            .parse::<u64>()
            .unwrap()
            > 0
    );
}

/// `du`, `--facet` and `--stats` through the daemon span its volumes, and say the same as one-shot runs on each.
#[test]
fn disk_usage_facets_and_stats_span_the_daemons_volumes() {
    let w = World::new("usage");
    let linux = w.copy("linux-made/testfs1", "testfs1.img");
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &linux]);
    w.ok(&["volumes", "add", &xp, "--name", "C"]);
    w.start();
    w.wait_ready(30);
    // Every volume's root total, each equal to the one-shot total of its source.
    let du = common::csv_rows(w.ok(&["du", "--format", "csv"]).as_bytes());
    for (path, src) in [("C:/", &xp), ("testfs1:/", &linux)] {
        let daemon = du
            .iter()
            .find(|r| r["path"] == path)
            .unwrap_or_else(|| panic!("{path} in {du:?}"));
        let one = w.ok(&["du", "--format", "csv", "--source", src]);
        let one = common::csv_rows(one.as_bytes());
        let one = one.last().unwrap();
        assert_eq!(
            (&daemon["size"], &daemon["files"]),
            (&one["size"], &one["files"]),
            "{path}"
        );
    }
    // A folder of one volume, named with its drive.
    let win = common::csv_rows(
        w.ok(&[
            "du",
            "C:\\WINDOWS\\system32",
            "--format",
            "csv",
            "--limit",
            "5",
        ])
        .as_bytes(),
    );
    assert_eq!(win.len(), 6, "{win:?}");
    assert_eq!(win[5]["path"], "C:/WINDOWS/system32");
    // Facets and statistics add up over both volumes.
    let count: u64 = w.ok(&["*", "--count"]).trim().parse().unwrap();
    let stats = common::csv_rows(w.ok(&["--stats", "--format", "csv"]).as_bytes());
    assert_eq!(stats[0]["count"], count.to_string());
    let years = common::csv_rows(
        w.ok(&["*", "--facet", "year", "--format", "csv"])
            .as_bytes(),
    );
    let sum: u64 = years
        .iter()
        .map(|r| r["count"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, count);
}

/// A time the volume does not keep (ext2 keeps no creation time) answers through the daemon as a one-shot query
/// of the source answers: empty in CSV and null in JSON lines, matched by `dc:unknown` alone, and sorted after an
/// NTFS volume's known times in both directions.
#[test]
fn unknown_times_answer_through_the_daemon_as_in_one_shot_queries() {
    let w = World::new("unknown-times");
    let ext2 = w.copy("ext-public/dfvfs-ext2.qcow2", "ext2.qcow2");
    let ntfs = w.copy("linux-made/testfs1", "testfs1.img");
    let count = |args: &[&str]| -> u64 {
        let o = w.run(&[args, &["--count"]].concat());
        assert!(matches!(o.status.code(), Some(0 | 1)), "{args:?}");
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    // One-shot: every ext2 entry's creation time is unknown; on NTFS, only `$MFT`'s (mkntfs leaves its times 0).
    let ext2_all = count(&["*", "--source", &ext2]);
    assert!(ext2_all > 5);
    assert_eq!(count(&["dc:unknown", "--source", &ext2]), ext2_all);
    assert_eq!(count(&["dc:<2100", "--source", &ext2]), 0);
    let ntfs_unknown = count(&["dc:unknown", "--source", &ntfs]);
    let ntfs_before_2100 = count(&["dc:<2100", "--source", &ntfs]);
    assert!(ntfs_before_2100 > 5);
    assert_eq!(
        ntfs_unknown + ntfs_before_2100,
        count(&["*", "--source", &ntfs])
    );
    let one_shot = common::csv_rows(
        w.ok(&[
            "*",
            "--source",
            &ext2,
            "--format",
            "csv",
            "--columns",
            "path,created",
        ])
        .as_bytes(),
    );
    assert!(one_shot.iter().all(|r| r["created"].is_empty()));

    w.ok(&["volumes", "add", &ext2, "--name", "ext2"]);
    w.ok(&["volumes", "add", &ntfs, "--name", "ntfs"]);
    w.start();
    w.wait_ready(30);
    assert_eq!(count(&["dc:unknown"]), ext2_all + ntfs_unknown);
    assert_eq!(count(&["dc:<2100"]), ntfs_before_2100);
    let rows = |args: &[&str]| {
        common::csv_rows(
            w.ok(&[
                &["*", "--format", "csv", "--columns", "path,created"][..],
                args,
            ]
            .concat())
                .as_bytes(),
        )
    };
    // The daemon's rows of the ext2 volume are the one-shot rows, under the volume's name.
    let mut daemon_ext2: Vec<(String, String)> = rows(&["--volume", "ext2"])
        .into_iter()
        .map(|r| (r["path"].clone(), r["created"].clone()))
        .collect();
    daemon_ext2.sort();
    let mut want: Vec<(String, String)> = one_shot
        .iter()
        .map(|r| (format!("ext2:{}", r["path"]), r["created"].clone()))
        .collect();
    want.sort();
    assert_eq!(daemon_ext2, want);
    for reverse in [&[][..], &["--reverse"][..]] {
        let sorted = rows(&[&["--sort", "created"][..], reverse].concat());
        let first_unknown = sorted.iter().position(|r| r["created"].is_empty()).unwrap();
        assert_eq!(first_unknown as u64, ntfs_before_2100, "{reverse:?}");
        assert!(
            sorted[first_unknown..]
                .iter()
                .all(|r| r["created"].is_empty()),
            "{reverse:?}: a known time after an unknown one"
        );
    }
    let json = w.ok(&[
        "*",
        "--volume",
        "ext2",
        "--format",
        "jsonl",
        "--columns",
        "path,created",
    ]);
    for line in json.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["created"].is_null(), "{line}");
    }
}

/// `grep`, `hash` and `cat` without a source read the daemon's volumes: each answer is the one-shot answer of
/// that volume's source with the volume's name before each path, and a path they print is one `cat` takes alone.
#[test]
fn grep_hash_and_cat_read_the_daemons_volumes() {
    let w = World::new("contents");
    let img = w.dir.join("content.img");
    std::fs::copy(fixture("content.img"), &img).unwrap();
    let img = img.to_string_lossy().into_owned();
    let second = w.dir.join("second.img");
    std::fs::copy(fixture("content.img"), &second).unwrap();
    let second = second.to_string_lossy().into_owned();
    // Before any volume is registered, the error says what to give.
    let out = w.run(&["grep", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--source SOURCE") && err.contains("uffs volumes add"),
        "{err}"
    );
    w.ok(&["volumes", "add", &img, "--name", "C"]);
    w.ok(&["volumes", "add", &second]);
    w.start();
    w.wait_ready(30);
    let sorted = |s: String| {
        let mut v: Vec<String> = s.lines().map(str::to_string).collect();
        v.sort();
        v
    };
    for (args, strip) in [
        (&["grep", "-l", "-i", "the"][..], 0),
        (&["grep", "-c", "-w", "data"], 0),
        (&["hash", "ext:txt"], 66),
    ] {
        let daemon = sorted(w.ok(args));
        let mut expected = Vec::new();
        for (src, name) in [(&img, "C:"), (&second, "second:")] {
            let mut one = args.to_vec();
            one.extend(["--source", src.as_str()]);
            for line in w.ok(&one).lines() {
                // `HEX  /path` (hash) or `/path...` (grep): the path gains its volume's name.
                let (head, path) = line.split_at(strip);
                expected.push(format!("{head}{name}{path}"));
            }
        }
        expected.sort();
        assert!(!expected.is_empty(), "{args:?}");
        assert_eq!(daemon, expected, "{args:?}");
    }
    // Every path printed through the daemon pastes back into `cat`, alone, and gives the file's bytes.
    let hashes = sorted(w.ok(&["hash", "ext:txt"]));
    for line in &hashes {
        let (hex, path) = line.split_once("  ").unwrap();
        let (hex, path) = match hex.strip_prefix('\\') {
            Some(hex) => (hex, path.replace("\\\\", "\\")),
            None => (hex, path.to_string()),
        };
        let out = run_ok(w.uffs().args(["cat", &path]));
        let mut h = Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        h.stdin.take().unwrap().write_all(&out.stdout).unwrap();
        let sum = String::from_utf8(h.wait_with_output().unwrap().stdout).unwrap();
        assert_eq!(sum.split(' ').next(), Some(hex), "{path}");
    }
    // A path that names no registered volume says which are.
    let out = w.run(&["cat", "Z:\\x.txt"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("C, second"), "{err}");
    // A volume whose source is gone is left out with a warning: the answer is partial (exit 3).
    std::fs::remove_file(&second).unwrap();
    let out = w.run(&["hash", "ext:txt"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("volume second") && err.contains("not at hand"),
        "{err}"
    );
    let hashed = String::from_utf8_lossy(&out.stdout);
    assert!(
        hashed.contains("C:") && !hashed.contains("second:"),
        "{hashed}"
    );
    w.ok(&["daemon", "stop"]);
}

/// A search through the daemon keeps the exit-status contract of one without it: a file whose data a `content:`
/// term cannot read (its stream marked encrypted) and a volume whose source went away are each said in a warning,
/// the answer holds what could be read, and the status is 3 (partial).
#[test]
fn a_daemon_search_that_cannot_read_some_data_is_partial() {
    let w = World::new("partial");
    let [a, b] = ["a.img", "b.img"].map(|n| {
        let p = w.dir.join(n);
        std::fs::copy(fixture("content.img"), &p).unwrap();
        p
    });
    set_data_flag(&a, 76, 0x4000); // plain/resident.txt
    for p in [&a, &b] {
        w.ok(&["volumes", "add", path_str(p)]);
    }
    w.start();
    w.wait_ready(30);
    let query = ["content:\"resident data\"", "--columns", "path"];
    let alone = w
        .uffs()
        .args(query)
        .arg("--source")
        .arg(&a)
        .output()
        .unwrap();
    let out = w.run(&query);
    let (said, printed) = (
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout),
    );
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert_eq!(alone.status.code(), Some(3));
    assert!(
        said.contains("1 file(s) could not be read")
            && String::from_utf8_lossy(&alone.stderr).contains("1 file(s) could not be read"),
        "{said}"
    );
    assert_eq!(printed.trim(), "b:/plain/resident.txt");
    // The second volume's image gone: its files match no data term, the first's are still read.
    std::fs::remove_file(&b).unwrap();
    let out = w.run(&["content:main", "--columns", "path"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("volume b: reading the files' data from"),
        "{said}"
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("a:/") && !printed.contains("b:/"),
        "{printed}"
    );
    w.ok(&["daemon", "stop"]);
}
