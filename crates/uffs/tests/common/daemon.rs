//! A daemon's private world for the end-to-end daemon tests (`daemon.rs` on Unix, `daemon_windows.rs` on
//! Windows): its own cache and runtime directories, `uffs` commands run in it, a daemon started in the
//! background or as a child of the test, and waiting for its volumes to be ready. Talking to the daemon's socket
//! or pipe directly is each platform's own.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{data, run_ok, scratch, uffs};

pub struct World {
    /// Registry, index files, log.
    pub cache: PathBuf,
    /// Socket (Unix), lock and pid file.
    pub runtime: PathBuf,
    /// Where the test keeps its copies of sources.
    pub dir: PathBuf,
    /// A daemon run as a child of the test (`run_foreground`), so that it can be killed.
    foreground: Option<Child>,
    /// More environment for every command (and so for the daemon).
    pub env: Vec<(String, String)>,
}

impl World {
    pub fn new(name: &str) -> World {
        let dir = scratch(&format!("daemon-{name}"));
        World {
            cache: dir.join("cache"),
            runtime: dir.join("run"),
            dir,
            foreground: None,
            env: Vec::new(),
        }
    }

    pub fn uffs(&self) -> Command {
        let mut c = uffs();
        c.env("UFFS_CACHE_DIR", &self.cache)
            .env("UFFS_RUNTIME_DIR", &self.runtime)
            .env_remove("NO_COLOR")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    pub fn ok(&self, args: &[&str]) -> String {
        String::from_utf8(run_ok(self.uffs().args(args)).stdout).expect("utf-8")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.uffs().args(args).output().expect("run uffs")
    }

    /// A copy of a sample in this world, so the test may change it.
    pub fn copy(&self, rel: &str, as_name: &str) -> String {
        let to = self.dir.join(as_name);
        std::fs::copy(data(rel), &to).expect("copy sample");
        to.to_string_lossy().into_owned()
    }

    /// `uffs daemon start`: the daemon in the background, as a user starts it.
    pub fn start(&self) {
        let out = self.ok(&["daemon", "start"]);
        assert!(out.contains("uffs daemon started"), "{out}");
    }

    /// `uffs daemon run` as a child of the test, logging to the usual log; returns once it answers.
    pub fn run_foreground(&mut self) {
        std::fs::create_dir_all(&self.cache).unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.cache.join("daemon.log"))
            .unwrap();
        let child = self
            .uffs()
            .args(["daemon", "run"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start the daemon");
        self.foreground = Some(child);
        let t = Instant::now();
        while !self.run(&["daemon", "status"]).status.success() {
            assert!(t.elapsed() < Duration::from_secs(30), "{}", self.log());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the daemon started by `run_foreground` (SIGKILL, TerminateProcess) and waits for it to end.
    pub fn kill_foreground(&mut self) {
        let mut child = self.foreground.take().expect("a foreground daemon");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    pub fn pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.runtime.join("daemon.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Waits until every volume is ready (no build running), or panics after `secs`.
    pub fn wait_ready(&self, secs: u64) -> serde_json::Value {
        let t = Instant::now();
        loop {
            let out = self.run(&["daemon", "status", "--json"]);
            if out.status.success() {
                let v: serde_json::Value =
                    serde_json::from_slice(&out.stdout).expect("status json");
                let vols = v["volumes"].as_array().cloned().unwrap_or_default();
                if !vols.is_empty() && vols.iter().all(|x| x["state"] == "ready") {
                    return v;
                }
            }
            assert!(
                t.elapsed() < Duration::from_secs(secs),
                "volumes not ready: {}\nlog:\n{}",
                String::from_utf8_lossy(&out.stdout),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.cache.join("daemon.log")).unwrap_or_default()
    }

    /// The index file of volume `name` built last (a volume's index alternates between two files).
    pub fn newest_index(&self, name: &str) -> PathBuf {
        let slots = [
            self.cache.join(format!("{name}.uffs")),
            self.cache.join(format!("{name}.2.uffs")),
        ];
        slots
            .into_iter()
            .filter(|p| p.exists())
            .max_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap())
            .expect("an index file")
    }
}

/// The queries whose answers must survive a daemon restart, on volumes `testfs1` and `C` (the Windows XP
/// capture): sorted, counted, by path, as CSV.
pub const RESTART_QUERIES: [&[&str]; 6] = [
    &["kernel32.dll"],
    &["-e", "txt", "--sort", "size", "--reverse", "--limit", "7"],
    &["--count"],
    &["system32/drivers", "--limit", "5", "--sort", "path"],
    &[
        "ext:dll",
        "--format",
        "csv",
        "--columns",
        "path,size",
        "--limit",
        "3",
        "--sort",
        "name",
    ],
    &["--sort", "name", "--limit", "4"],
];

impl World {
    /// The answers to [`RESTART_QUERIES`].
    pub fn restart_answers(&self) -> Vec<String> {
        RESTART_QUERIES.iter().map(|q| self.ok(q)).collect()
    }

    /// Checks the daemon's paths against the volumes: a drive-letter volume prints `C:/...` here and `C:\...` on
    /// Windows (the same entries as searching its index file directly), another `NAME:/...`; nothing found exits 1.
    pub fn check_volume_paths(&self, answers: &[String]) {
        // The platform's separator after a drive letter (issue 59).
        let drive = |p: &str| {
            if cfg!(windows) {
                p.replace('/', "\\")
            } else {
                p.to_string()
            }
        };
        assert!(
            answers[0].contains(&drive("C:/WINDOWS/system32/kernel32.dll")),
            "{}",
            answers[0]
        );
        assert!(self.ok(&["--limit", "3"]).starts_with("testfs1:/"));
        let direct = self.ok(&[
            "--index",
            self.cache.join("C.uffs").to_str().unwrap(),
            "kernel32.dll",
        ]);
        let direct: String = direct
            .lines()
            .map(|l| format!("{}\n", drive(&format!("C:{l}"))))
            .collect();
        assert_eq!(answers[0], direct);
        assert_eq!(self.run(&["no-such-name-anywhere"]).status.code(), Some(1));
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.uffs().args(["daemon", "stop"]).output();
        if let Some(mut c) = self.foreground.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        #[cfg(unix)]
        if let Some(pid) = self.pid() {
            // SAFETY: signalling a process id this test started (a daemon that did not stop).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        // A runtime directory a test put outside its scratch directory goes with the daemon.
        if !self.runtime.starts_with(&self.dir) {
            let _ = std::fs::remove_dir_all(&self.runtime);
        }
    }
}
