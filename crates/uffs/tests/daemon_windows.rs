//! The daemon end to end on Windows: a real `uffs daemon` process serving its named pipe, driven through `uffs`
//! commands and, for hostile clients, straight through the pipe. `scripts/test.sh` runs these under Wine
//! (`scripts/test-windows.sh`); the Unix side is `daemon.rs`.

#![cfg(windows)]

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::daemon::World;
use common::*;

/// Talking to the daemon straight through its named pipe.
trait Pipe {
    /// The pipe the daemon says it listens on.
    fn pipe(&self) -> String;
    /// Opens the pipe as a plain file (synchronous I/O), as any client could.
    fn open_pipe(&self) -> std::fs::File;
    /// Sends raw bytes on a fresh connection and returns every line of the answer.
    fn raw(&self, request: &[u8]) -> Vec<String>;
}

impl Pipe for World {
    fn pipe(&self) -> String {
        let log = self.log();
        let line = log
            .lines()
            .rev()
            .find(|l| l.contains("listening on "))
            .unwrap_or_else(|| panic!("no listening line in the log:\n{log}"));
        let name = line.split("listening on ").nth(1).unwrap();
        name.split(' ').next().unwrap().to_string()
    }

    fn open_pipe(&self) -> std::fs::File {
        let name = self.pipe();
        let t = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&name)
            {
                Ok(f) => return f,
                // Every instance busy for a moment: try again.
                Err(_) if t.elapsed() < Duration::from_secs(10) => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("opening {name}: {e}"),
            }
        }
    }

    fn raw(&self, request: &[u8]) -> Vec<String> {
        let mut f = self.open_pipe();
        // The daemon may answer and close before an oversized request is all sent.
        let _ = f.write_all(request);
        let mut out = String::new();
        let _ = f.read_to_string(&mut out);
        out.lines().map(String::from).collect()
    }
}

#[test]
fn volumes_are_served_over_the_pipe_and_survive_a_restart() {
    let w = World::new("restart");
    let linux = w.copy("linux-made/testfs1", "testfs1.img");
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &linux, &xp]);
    w.ok(&["volumes", "remove", "xp"]);
    w.ok(&["volumes", "add", &xp, "--name", "C"]);

    let o = w.run(&["kernel32.dll"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("uffs daemon start"));

    w.start();
    assert_eq!(
        w.wait_ready(30)["volumes"].as_array().unwrap().len(),
        2,
        "{}",
        w.log()
    );
    // The pipe is named for this user and this runtime directory.
    assert!(w.pipe().starts_with(r"\\.\pipe\uffs-S-1-"), "{}", w.pipe());
    // A second daemon for the same user is refused while the first runs.
    let second = w.run(&["daemon", "run"]);
    assert_eq!(second.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("already running"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );

    let before = w.restart_answers();
    w.check_volume_paths(&before);

    let stopped = w.ok(&["daemon", "stop"]);
    assert!(stopped.contains("stopped"), "{stopped}");
    assert_eq!(w.run(&["kernel32.dll"]).status.code(), Some(2));
    w.start();
    w.wait_ready(30);
    let after = w.restart_answers();
    assert_eq!(before, after, "answers changed across a restart");
    assert!(!w.log().contains("rebuilding"), "{}", w.log());

    w.ok(&["volumes", "remove", "testfs1"]);
    assert!(!w.ok(&["--limit", "100000"]).contains("testfs1:/"));
}

#[test]
fn hostile_clients_get_an_error_and_change_nothing() {
    let w = World::new("hostile");
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &xp, "--name", "C"]);
    w.start();
    w.wait_ready(30);
    let want = w.ok(&["-e", "dll", "--count"]);

    let cases: [&[u8]; 5] = [
        b"garbage\n",
        b"{\"op\":\"format-disk\"}\n",
        b"{\"op\":\"ping\",\"extra\":1}\n",
        b"{\"op\":\"query\",\"request\":{\"index\":\"C:\\\\x\"}}\n",
        &[b'x'; 200_000],
    ];
    for req in cases {
        let lines = w.raw(req);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("{\"error\""), "{lines:?}");
    }
    // Clients that hang up in the middle of a long answer.
    for _ in 0..5 {
        let mut f = w.open_pipe();
        f.write_all(b"{\"op\":\"query\",\"request\":{\"query\":\"*\",\"limit\":100000}}\n")
            .unwrap();
        let mut some = [0u8; 100];
        let _ = f.read(&mut some);
    }
    // Idle connections take every worker; the next client is told "busy"; once they go, all is well.
    let idle: Vec<std::fs::File> = (0..64).map(|_| w.open_pipe()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let busy = w.raw(b"{\"op\":\"ping\"}\n");
    assert!(busy[0].contains("busy"), "{busy:?}");
    drop(idle);
    let t = Instant::now();
    while !w.raw(b"{\"op\":\"ping\"}\n")[0].contains("\"ok\"") {
        assert!(t.elapsed() < Duration::from_secs(20), "no recovery");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(w.ok(&["-e", "dll", "--count"]), want);
}

#[test]
fn a_killed_daemon_restarts_right_and_concurrent_clients_see_whole_snapshots() {
    let mut w = World::new("kill");
    let src = w.copy("windows-xp-mft/MFT", "vol.mft");
    w.ok(&["volumes", "add", &src, "--name", "v"]);
    let count = |w: &World| w.ok(&["--count"]);
    let xp_count = w.ok(&[
        "--index",
        w.cache.join("v.uffs").to_str().unwrap(),
        "--count",
    ]);

    // Touching the source makes the index stale, so every start begins a rebuild; the daemon is killed at a
    // different moment of it each time.
    for delay_ms in [0u64, 20, 80] {
        let f = std::fs::OpenOptions::new().append(true).open(&src).unwrap();
        f.set_modified(std::time::SystemTime::now()).unwrap();
        w.run_foreground();
        std::thread::sleep(Duration::from_millis(delay_ms));
        w.kill_foreground();
        w.run_foreground();
        w.wait_ready(60);
        assert_eq!(count(&w), xp_count, "{}", w.log());
        w.kill_foreground();
        let left: Vec<_> = std::fs::read_dir(&w.cache)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp"))
            .collect();
        // A kill may leave a temporary file; the next start removes it.
        w.run_foreground();
        w.wait_ready(60);
        assert!(
            left.is_empty() || w.log().contains("left by an interrupted write"),
            "{left:?}"
        );
        w.kill_foreground();
    }

    // Clients query without pause while the source swaps between two states (the whole capture and its first
    // 8,000 records) and rebuilds swap snapshots: every answer is one of the two.
    w.run_foreground();
    w.wait_ready(60);
    let full = std::fs::read(data("windows-xp-mft/MFT")).unwrap();
    let part = full[..8000 * 1024].to_vec();
    let probe = w.dir.join("probe.mft");
    std::fs::write(&probe, &part).unwrap();
    let part_count = w.ok(&["--source", probe.to_str().unwrap(), "--count"]);
    assert_ne!(part_count, xp_count);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let answers = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..6 {
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
        for i in 0..2 {
            let (next, want) = if i % 2 == 0 {
                (&part, &part_count)
            } else {
                (&full, &xp_count)
            };
            let tmp = w.dir.join("vol.mft.new");
            std::fs::write(&tmp, next).unwrap();
            std::fs::rename(&tmp, &src).unwrap();
            let r = w.raw(b"{\"op\":\"reload\"}\n");
            assert!(r[0].contains("\"ok\""), "{r:?}");
            let t = Instant::now();
            while &count(&w) != want {
                assert!(t.elapsed() < Duration::from_secs(60), "{}", w.log());
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let answers = answers.into_inner().unwrap();
    assert!(answers.len() >= 6, "only {} answers", answers.len());
    for (code, out) in &answers {
        assert_eq!(*code, Some(0), "a query failed: {out}");
        assert!(
            out == &xp_count || out == &part_count,
            "an answer from no snapshot: {out:?}"
        );
    }
}
