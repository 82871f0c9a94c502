//! Faults, end to end (DESIGN.md, Reliability): each test makes a real fault happen under a real command and
//! checks what the command does and leaves: a clear error (exit 2, one line), never a hang, never a partial or
//! temporary file, and a previous index intact and loadable.
//! They assert behaviour, never time: a time limit only turns a hang into a failure.
//!
//! * A worker thread of the build panics (`UFFS_FAULT_INJECT=parse-panic@R` or `read-panic@R`, see
//!   `uffs_mft::fault`): `uffs index` and `uffs export` exit 2 with "internal error: a parser thread panicked".
//!
//! Linux.

#![cfg(target_os = "linux")]

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use common::{data, run_ok, scratch, uffs};

/// A command still running after this long hangs (every command here takes a second or two).
const HANG: Duration = Duration::from_secs(120);

/// Waits for `child` to end; one still running after [`HANG`] is killed and fails the test.
fn wait_bounded(child: &mut Child, what: &str) -> ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        if t.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} hangs: still running after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `cmd` to its end, output captured, failing the test if it hangs.
fn run_bounded(cmd: &mut Command) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = pipe(Box::new(child.stdout.take().unwrap()));
    let err = pipe(Box::new(child.stderr.take().unwrap()));
    let status = wait_bounded(&mut child, &what);
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// Temporary files in `dir`: uffs names them `.NAME.tmpPID` or `.NAME.uffs-PID.tmp`.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.') && n.contains("tmp"))
                .collect()
        })
        .unwrap_or_default()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

// --- A panicking worker thread -------------------------------------------------------------------------------

#[test]
fn a_panicking_worker_thread_fails_index_and_export_and_never_hangs() {
    let dir = scratch("faults-panic");
    let src = data("windows-xp-mft/MFT");
    let (idx, csv) = (dir.join("xp.uffs"), dir.join("xp.csv"));
    let cases: [(&[&str], &Path); 3] = [
        (&["index", s(&src), "-o", s(&idx)], &idx),
        (&["index", s(&src), "-o", s(&idx), "--threads", "1"], &idx),
        (&["export", s(&src), "--format", "csv", "-o", s(&csv)], &csv),
    ];
    // Record 0 is in the first chunk read, 9000 in a later one (the capture has 13,088 records).
    for (fault, thread) in [
        ("parse-panic@0", "parser"),
        ("parse-panic@9000", "parser"),
        ("read-panic@0", "reader"),
        ("read-panic@9000", "reader"),
    ] {
        for (args, target) in &cases {
            let what = format!("UFFS_FAULT_INJECT={fault} uffs {}", args.join(" "));
            let out = run_bounded(
                uffs()
                    .args(*args)
                    .env("UFFS_FAULT_INJECT", fault)
                    .env("RUST_BACKTRACE", "0"),
            );
            assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
            // The panic's own report comes first (where and what); the command's error is the last line.
            let err = stderr(&out);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            let want = format!(
                "internal error: a {thread} thread panicked: injected fault (UFFS_FAULT_INJECT={fault})"
            );
            assert!(
                last.starts_with("uffs: error: ") && last.ends_with(&want),
                "{what}: {err}"
            );
            assert!(!target.exists(), "{what} left {}", target.display());
            assert_eq!(temporaries(&dir), Vec::<String>::new(), "{what}");
            assert!(out.stdout.is_empty(), "{what} printed rows");
        }
    }
    // Unset, the same commands work.
    for (args, target) in &cases {
        run_ok(uffs().args(*args));
        assert!(target.exists());
    }
}
