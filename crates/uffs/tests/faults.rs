//! Faults, end to end (DESIGN.md, Reliability): each test makes a real fault happen under a real command and
//! checks what the command does and leaves: a clear error (exit 2, one line) or a counted, reported partial
//! result (exit 3), never a hang, never a partial or temporary file, and a previous index intact and loadable.
//! They assert behaviour, never time: a time limit only turns a hang into a failure.
//!
//! * A worker thread of the build panics (`UFFS_FAULT_INJECT=parse-panic@R` or `read-panic@R`, see
//!   `uffs_mft::fault`): `uffs index` and `uffs export` exit 2 with "internal error: a parser thread panicked".
//! * SIGINT or SIGTERM while `uffs index -o`, `uffs export -o` or `uffs volumes add` writes its file: the
//!   process ends by that signal and leaves neither the file nor a temporary one.
//! * A full disk (a small tmpfs) under an index, a delta (`--update`), a merge (`--update --compact`), an export,
//!   Parquet and `uffs cat -o`: exit 2, one line naming the file and "No space left on device"; the previous
//!   index and outputs stay as they were.
//! * Read errors: `eio_fs.py`, a FUSE file system over an image, fails chosen byte ranges of the `$MFT` with EIO.
//!   `uffs index` counts those records unreadable, indexes the rest and exits 3; a daemon whose refresh hits
//!   them keeps answering from its index.
//!
//! Linux, as root (tmpfs and FUSE mounts), with python3-fusepy (`scripts/setup.sh`).

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use common::daemon::World;
use common::live::{make_volume, Mounted};
use common::{cannot_run, csv_rows, data, run_ok, scratch, uffs};

/// A command still running after this long hangs (every command here takes a second or two).
const HANG: Duration = Duration::from_secs(120);

fn is_root() -> bool {
    // SAFETY: a plain system call without arguments.
    unsafe { libc::geteuid() == 0 }
}

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

/// The one line of an error (exit 2): every line of stderr but that one is a failure.
fn one_error_line(out: &Output, what: &str) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{what}: {}\n{err}", out.status);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{what}: not one line:\n{err}");
    assert!(lines[0].starts_with("uffs: error: "), "{what}: {err}");
    lines[0].to_string()
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

// --- Signals mid-write ---------------------------------------------------------------------------------------

/// A raw `$MFT` capture big enough that writing its index or export takes a while (about 150,000 entries): the
/// Windows XP capture `copies` times over, each copy's record numbers set to their new places.
fn big_mft(dir: &Path, copies: usize) -> PathBuf {
    let one = std::fs::read(data("windows-xp-mft/MFT")).expect("sample");
    let rs = 1024;
    let n = one.len() / rs;
    let mut out = Vec::with_capacity(one.len() * copies);
    for k in 0..copies {
        let at = out.len();
        out.extend_from_slice(&one);
        for i in 0..n {
            let rec = &mut out[at + i * rs..][..rs];
            if k > 0 && rec.starts_with(b"FILE") {
                rec[0x2c..0x30].copy_from_slice(&((k * n + i) as u32).to_le_bytes());
            }
        }
    }
    let p = dir.join("big.mft");
    std::fs::write(&p, out).expect("write big.mft");
    p
}

/// Starts `cmd`, and as soon as a temporary file shows in `watch` (the command is writing its file), sends it
/// `sig`. Returns how it ended, or `None` when it ended before any temporary file was seen.
fn signal_mid_write(cmd: &mut Command, watch: &Path, sig: libc::c_int) -> Option<ExitStatus> {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start uffs");
    let t = Instant::now();
    loop {
        if !temporaries(watch).is_empty() {
            // SAFETY: signalling the child this test started and has not waited for yet.
            unsafe { libc::kill(child.id() as libc::pid_t, sig) };
            return Some(wait_bounded(&mut child, &what));
        }
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "{what}: {status}");
            return None;
        }
        assert!(t.elapsed() < HANG, "{what} hangs");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Runs of each command [`a_signal_mid_write_leaves_no_file`] tries before it gives up. Each holds its complete
/// temporary file [`HOLD_MS`] before renaming it (uffs's fault-injection hook): without it a poll on a loaded
/// machine missed the few milliseconds a 140,000-entry index takes to write in 60 runs out of 60.
const ATTEMPTS: usize = 10;
const HOLD_MS: &str = "400";

#[test]
fn a_signal_mid_write_leaves_no_file() {
    let dir = scratch("faults-signal");
    let src = big_mft(&dir, 12);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let reference = dir.join("reference.uffs");
    run_ok(uffs().args(["index", s(&src), "-o", s(&reference)]));
    let full_csv = run_ok(uffs().args(["export", s(&reference), "--format", "csv"])).stdout;
    let mut interrupted = 0;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // uffs index -o, uffs export -o, uffs volumes add: each until a signal came while it wrote.
        let idx = out.join("big.uffs");
        let csv = out.join("big.csv");
        let world = World::new(&format!("faults-signal-{sig}"));
        let cases: Vec<(Command, PathBuf, PathBuf)> = vec![
            (
                {
                    let mut c = uffs();
                    c.args(["index", s(&src), "-o", s(&idx)]);
                    c
                },
                out.clone(),
                idx.clone(),
            ),
            (
                {
                    let mut c = uffs();
                    c.args(["export", s(&reference), "--format", "csv", "-o", s(&csv)]);
                    c
                },
                out.clone(),
                csv.clone(),
            ),
            (
                {
                    let mut c = world.uffs();
                    c.args(["volumes", "add", s(&src), "--name", "big"]);
                    c
                },
                world.cache.clone(),
                world.cache.join("big.uffs"),
            ),
        ];
        std::fs::create_dir_all(&world.cache).unwrap();
        for (mut cmd, watch, target) in cases {
            cmd.env("UFFS_TEST_HOLD_BEFORE_RENAME_MS", HOLD_MS);
            // uffs keeps a signal ignored when it starts so (`nohup`, a background job): the child gets the default
            // actions whatever this test inherited (a suite started as a background job has SIGINT ignored).
            // SAFETY: signal(2) is async-signal-safe, as code between fork and exec must be.
            unsafe {
                cmd.pre_exec(|| {
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    libc::signal(libc::SIGTERM, libc::SIG_DFL);
                    Ok(())
                });
            }
            let what = format!("{cmd:?} and signal {sig}");
            let mut caught = false;
            // Tries, each until the signal lands while the file is written: on a loaded machine the process can
            // finish between the temporary file being seen and the signal.
            for _attempt in 0..ATTEMPTS {
                let _ = std::fs::remove_file(&target);
                let Some(status) = signal_mid_write(&mut cmd, &watch, sig) else {
                    continue;
                };
                // The process finished between the temporary file being seen and the signal (a loaded machine):
                // its file is in place and whole, which the next lines check; then try again.
                if status.success() {
                    assert!(target.exists(), "{what}: exit 0 and no file");
                    if target.extension().is_some_and(|e| e == "csv") {
                        assert_eq!(std::fs::read(&target).unwrap(), full_csv, "{what}");
                    }
                    continue;
                }
                // It ends by the signal (a shell shows 128 + its number) and leaves no temporary file.
                assert_eq!(status.signal(), Some(sig), "{what}: {status}");
                assert_eq!(temporaries(&watch), Vec::<String>::new(), "{what}");
                if !target.exists() {
                    caught = true;
                    break;
                }
                // The signal came after the file was renamed into place: then it is whole.
                if target.extension().is_some_and(|e| e == "csv") {
                    assert_eq!(std::fs::read(&target).unwrap(), full_csv, "{what}");
                } else {
                    run_ok(uffs().args(["export", s(&target), "--format", "csv"]));
                }
            }
            assert!(
                caught,
                "{what}: never interrupted while writing in {ATTEMPTS} runs"
            );
            interrupted += 1;
            if watch == world.cache {
                // Nothing registered either.
                let list = world.ok(&["volumes", "list"]);
                assert!(!list.contains("big"), "{what}: {list}");
            }
        }
    }
    assert_eq!(interrupted, 6);
}

// --- A full disk ---------------------------------------------------------------------------------------------

/// A size-limited tmpfs mounted on a directory, unmounted when dropped.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn new(dir: &Path, bytes: u64) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        run_ok(Command::new("mount").args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={bytes}"),
            "tmpfs",
            s(dir),
        ]));
        Tmpfs {
            dir: dir.to_path_buf(),
        }
    }

    fn free(&self) -> u64 {
        let c = std::ffi::CString::new(s(&self.dir)).unwrap();
        // SAFETY: statvfs fills the struct it is given from a NUL-terminated path.
        unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            assert_eq!(libc::statvfs(c.as_ptr(), &mut st), 0);
            st.f_bavail * st.f_frsize
        }
    }

    /// Fills the file system with a file of zeros until fewer than 8 KiB are left.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.dir.join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.flush();
        assert!(self.free() < 8192, "{} bytes still free", self.free());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if Command::new("umount")
            .arg(&self.dir)
            .status()
            .map_or(true, |s| !s.success())
        {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

/// Writes files through an ntfs-3g mount of `img`: `n` small ones named `prefix{i}.txt` and, when `big`,
/// `big.bin` of 300 KiB.
fn write_files(img: &Path, mnt: &Path, prefix: &str, n: usize, big: bool) {
    let m = Mounted::new(img, mnt);
    let d = m.dir.join(format!("{prefix}dir"));
    std::fs::create_dir_all(&d).unwrap();
    for i in 0..n {
        std::fs::write(d.join(format!("{prefix}{i}.txt")), format!("file {i}\n")).unwrap();
    }
    if big {
        let bytes: Vec<u8> = (0..300 << 10).map(|i: u32| (i % 251) as u8).collect();
        std::fs::write(m.dir.join("big.bin"), bytes).unwrap();
    }
    drop(m);
}

#[test]
fn a_full_disk_fails_each_write_cleanly() {
    if !is_root() {
        return cannot_run("mounting a tmpfs needs root");
    }
    let dir = scratch("faults-full");
    let img = make_volume(&dir, 32);
    write_files(&img, &dir.join("mnt"), "a", 200, true);
    let disk = Tmpfs::new(&dir.join("disk"), 16 << 20);
    let t = |name: &str| disk.dir.join(name);
    // What was there before: an index of the volume, and earlier outputs.
    run_ok(uffs().args(["index", s(&img), "-o", s(&t("vol.uffs"))]));
    let count = |idx: &Path| run_ok(uffs().args(["--index", s(idx), "--count"])).stdout;
    let before = count(&t("vol.uffs"));
    let index_bytes = std::fs::read(t("vol.uffs")).unwrap();
    for name in ["out.csv", "out.parquet", "big.bin"] {
        std::fs::write(t(name), "earlier output\n").unwrap();
    }
    // The volume changes, so that an update has a delta to write.
    write_files(&img, &dir.join("mnt"), "b", 50, false);
    disk.fill();
    let (vol, csv, parquet, big) = (t("vol.uffs"), t("out.csv"), t("out.parquet"), t("big.bin"));
    let cases: [(&[&str], PathBuf); 6] = [
        (&["index", s(&img), "-o", s(&vol)], vol.clone()),
        (
            &["index", s(&img), "-o", s(&vol), "--update"],
            PathBuf::from(format!("{}.delta", s(&vol))),
        ),
        (
            &["index", s(&img), "-o", s(&vol), "--update", "--compact"],
            vol.clone(),
        ),
        (
            &["export", s(&vol), "--format", "csv", "-o", s(&csv)],
            csv.clone(),
        ),
        (
            &["export", s(&vol), "--format", "parquet", "-o", s(&parquet)],
            parquet.clone(),
        ),
        (&["cat", s(&img), "/big.bin", "-o", s(&big)], big.clone()),
    ];
    for (args, file) in &cases {
        let what = format!("uffs {}", args.join(" "));
        let line = one_error_line(&run_bounded(uffs().args(*args)), &what);
        assert!(
            line.contains(s(file)) && line.contains("No space left on device"),
            "{what}: {line}"
        );
        assert_eq!(temporaries(&disk.dir), Vec::<String>::new(), "{what}");
        // The previous index is as it was, and loads (every chunk checked); no delta was left.
        assert_eq!(std::fs::read(&vol).unwrap(), index_bytes, "{what}");
        assert_eq!(count(&vol), before, "{what}");
        run_ok(uffs().args(["export", s(&vol), "--format", "csv"]));
        assert!(!Path::new(&format!("{}.delta", s(&vol))).exists(), "{what}");
        for name in ["out.csv", "out.parquet", "big.bin"] {
            assert_eq!(
                std::fs::read_to_string(t(name)).unwrap(),
                "earlier output\n",
                "{what}"
            );
        }
    }
}

// --- Read errors ---------------------------------------------------------------------------------------------

/// `eio_fs.py` serving an image as `DIR/image`, failing the byte ranges last given to [`EioMount::fail`] with
/// EIO; unmounted when dropped.
struct EioMount {
    dir: PathBuf,
    ranges: PathBuf,
    child: Child,
}

impl EioMount {
    /// `None` (the test then cannot run) without python3's fusepy.
    fn new(image: &Path, dir: &Path) -> Option<EioMount> {
        EioMount::slowed(image, dir, 0)
    }

    /// As [`EioMount::new`], each read of the image waiting `delay_ms` first (a slow disk).
    fn slowed(image: &Path, dir: &Path, delay_ms: u64) -> Option<EioMount> {
        // Debian's python3-fusepy names the module `fusepy`, PyPI's fusepy `fuse` (as eio_fs.py tries).
        let probe = Command::new("/usr/bin/python3")
            .args([
                "-c",
                "try:\n from fuse import FUSE\nexcept ImportError:\n from fusepy import FUSE",
            ])
            .output()
            .ok()?;
        if !probe.status.success() {
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let ranges = dir.with_extension("ranges");
        let _ = std::fs::remove_file(&ranges);
        let child = Command::new("/usr/bin/python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eio_fs.py"))
            .args([image, dir, &ranges])
            .env("EIO_FS_READ_DELAY_MS", delay_ms.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start eio_fs.py");
        let mut m = EioMount {
            dir: dir.to_path_buf(),
            ranges,
            child,
        };
        let t = Instant::now();
        while !m.image().exists() {
            if let Some(status) = m.child.try_wait().unwrap() {
                panic!("eio_fs.py ended: {status}");
            }
            assert!(t.elapsed() < HANG, "eio_fs.py did not mount");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(m)
    }

    fn image(&self) -> PathBuf {
        self.dir.join("image")
    }

    /// Bytes of the image read through the mount so far.
    fn served(&self) -> u64 {
        let text = std::fs::read_to_string(self.dir.join("served")).unwrap();
        text.trim().parse().unwrap()
    }

    /// From now on, reads that overlap one of `ranges` (byte ranges of the image) fail with EIO.
    fn fail(&self, ranges: &[std::ops::Range<u64>]) {
        let text: String = ranges
            .iter()
            .map(|r| format!("{} {}\n", r.start, r.end))
            .collect();
        let tmp = self.ranges.with_extension("new");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &self.ranges).unwrap();
    }
}

impl Drop for EioMount {
    fn drop(&mut self) {
        if Command::new("umount")
            .arg(&self.dir)
            .status()
            .map_or(true, |s| !s.success())
        {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A volume of 300 files in one folder; the byte range of MFT records `records` in it (its `$MFT` is one
/// extent).
fn eio_volume(dir: &Path, records: std::ops::Range<u64>) -> (PathBuf, std::ops::Range<u64>) {
    let img = make_volume(dir, 16);
    write_files(&img, &dir.join("mnt"), "f", 300, false);
    let info: serde_json::Value =
        serde_json::from_slice(&run_ok(uffs().args(["info", s(&img), "--json"])).stdout).unwrap();
    let v = &info["volumes"][0];
    assert_eq!(v["mft_extents"], 1, "{info}");
    let (at, rs) = (
        v["mft_offset"].as_u64().unwrap(),
        v["record_size"].as_u64().unwrap(),
    );
    (img, at + records.start * rs..at + records.end * rs)
}

/// The (record, name) of every entry of an export.
fn entries(rows: &[std::collections::HashMap<String, String>]) -> BTreeSet<(u64, String)> {
    rows.iter()
        .map(|r| (r["record"].parse().unwrap(), r["name"].clone()))
        .collect()
}

#[test]
fn read_errors_are_counted_and_the_rest_indexed() {
    if !is_root() {
        return cannot_run("a FUSE mount needs root");
    }
    let dir = scratch("faults-eio");
    // Eight records of files (the folder's 300 files take records from 64 on).
    let bad = 150..158;
    let (img, bytes) = eio_volume(&dir, bad.clone());
    let Some(m) = EioMount::new(&img, &dir.join("eio")) else {
        return cannot_run("python3-fusepy is not installed (scripts/setup.sh installs it)");
    };
    let whole = entries(&csv_rows(
        &run_ok(uffs().args(["export", s(&img), "--format", "csv"])).stdout,
    ));
    assert!(whole.iter().filter(|(r, _)| bad.contains(r)).count() == 8);
    m.fail(std::slice::from_ref(&bytes));
    let idx = dir.join("eio.uffs");
    let out = run_bounded(uffs().args(["index", s(&m.image()), "-o", s(&idx)]));
    let err = stderr(&out);
    // Partial: exit 3, the summary counts the records it could not read.
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(", 8 unreadable records") && err.contains("partial"),
        "{err}"
    );
    let got = entries(&csv_rows(
        &run_ok(uffs().args(["export", s(&idx), "--format", "csv"])).stdout,
    ));
    let want: BTreeSet<_> = whole
        .iter()
        .filter(|(r, _)| !bad.contains(r))
        .cloned()
        .collect();
    assert_eq!(got, want);
    // `uffs export` straight from the source says the same.
    let out = run_bounded(uffs().args(["export", s(&m.image()), "--format", "csv"]));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(entries(&csv_rows(&out.stdout)), want);
}

/// A 64 MB volume of 200 files of 5,000 lines with `needle` in each (36 MB in all), made through ntfs-3g.
fn needle_volume(dir: &Path) -> PathBuf {
    let img = make_volume(dir, 64);
    let m = Mounted::new(&img, &dir.join("mnt"));
    let line = "a needle in every line of this file\n".repeat(5000);
    for i in 0..200 {
        std::fs::write(m.dir.join(format!("f{i}.txt")), &line).unwrap();
    }
    drop(m);
    img
}

/// `uffs grep … | head -1`: when its reader goes away, uffs stops reading the volume at once and ends quietly
/// (exit 0, as rg), instead of reading every file and saying "Broken pipe" for each. The volume is read through
/// a FUSE mount that counts the bytes it serves: 40 MB of matching lines, of which uffs reads a small part.
#[test]
fn a_grep_whose_reader_goes_away_stops_reading() {
    if !is_root() {
        return cannot_run("a FUSE mount needs root");
    }
    let dir = scratch("faults-closed-pipe");
    let img = needle_volume(&dir);
    let total = 200 * 5000 * 36u64;
    let Some(m) = EioMount::new(&img, &dir.join("counted")) else {
        return cannot_run("python3-fusepy is not installed (scripts/setup.sh installs it)");
    };
    // The whole search reads every file through the mount.
    let before = m.served();
    let out = run_bounded(uffs().args(["grep", "-c", "needle", "--source", s(&m.image())]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 200);
    let whole = m.served() - before;
    assert!(
        whole >= total,
        "{whole} bytes served for {total} bytes of files"
    );
    // Its reader reads one line and goes away.
    let before = m.served();
    let mut child = uffs()
        .args(["grep", "needle", "--source", s(&m.image())])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.contains(":1:a needle"), "{first}");
    let status = wait_bounded(&mut child, "uffs grep with its reader gone");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    // Nothing but the index's summary line: no error for each file left unread.
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.lines().count() <= 1 && !err.contains("uffs:"), "{err}");
    let read = m.served() - before;
    assert!(
        read < whole / 4,
        "{read} of {whole} bytes read after the reader went away"
    );
}

/// A `content:` search through `uffs serve` whose HTTP client hangs up mid-way: the server stops reading the
/// volume (the request's future is dropped, which sets its stop flag) instead of reading every file for no one.
/// The volume is read through a FUSE mount that counts the bytes it serves and waits 20 ms a read (a slow disk).
#[test]
fn a_content_search_whose_http_client_hangs_up_stops_reading() {
    if !is_root() {
        return cannot_run("a FUSE mount needs root");
    }
    let dir = scratch("faults-http-hang-up");
    let img = needle_volume(&dir);
    let Some(m) = EioMount::slowed(&img, &dir.join("counted"), 20) else {
        return cannot_run("python3-fusepy is not installed (scripts/setup.sh installs it)");
    };
    let server = uffs()
        .args(["serve", "--source", s(&m.image()), "--bind", "127.0.0.1:0"])
        .env("UFFS_RUNTIME_DIR", dir.join("run"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    hang_up_stops_reading(server, &m);
}

/// The same through a `uffs serve` that answers from the daemon, which reads the files' data itself: the server
/// closes its connection to the daemon, and the daemon, watching it, stops reading.
#[test]
fn a_daemon_search_whose_http_client_hangs_up_stops_reading() {
    if !is_root() {
        return cannot_run("a FUSE mount needs root");
    }
    let dir = scratch("faults-daemon-hang-up");
    let img = needle_volume(&dir);
    let Some(m) = EioMount::slowed(&img, &dir.join("counted"), 20) else {
        return cannot_run("python3-fusepy is not installed (scripts/setup.sh installs it)");
    };
    let w = World::new("faults-daemon-hang-up");
    w.start();
    w.ok(&[
        "volumes",
        "add",
        s(&m.image()),
        "--name",
        "needles",
        "--refresh",
        "never",
    ]);
    let server = w
        .uffs()
        .args(["serve", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    hang_up_stops_reading(server, &m);
    w.ok(&["daemon", "stop"]);
}

/// Asks `server` (a `uffs serve` whose first line out is its address) to count `content:needle` over the
/// counted mount `m`, hangs up after 1.5 s, and checks that within a second of it the reading has stopped:
/// nothing more is read in the next two.
fn hang_up_stops_reading(mut server: std::process::Child, m: &EioMount) {
    let mut url = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().unwrap()),
        &mut url,
    )
    .unwrap();
    let rest = url.trim().strip_prefix("http://127.0.0.1:").expect(&url);
    let (port, token) = rest.split_once("/?token=").unwrap();
    // 36 MB of files at 20 ms a read: seconds of reading.
    let asked = m.served();
    let mut client = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    std::io::Write::write_all(
        &mut client,
        format!(
            "GET /api/count?q=content:needle HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer \
             {token}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let before = m.served() - asked;
    drop(client);
    std::thread::sleep(Duration::from_secs(1));
    let at_stop = m.served();
    std::thread::sleep(Duration::from_secs(2));
    let after = m.served() - at_stop;
    let _ = server.kill();
    let _ = server.wait();
    let whole = 200 * 5000 * 36u64;
    eprintln!("read {before} bytes before the hang-up, {after} in the 2 s from 1 s after it");
    let read = at_stop - asked;
    assert!(before > 0 && read < whole, "{read} of {whole} bytes read");
    assert_eq!(
        after, 0,
        "the server went on reading after its client hung up"
    );
}

/// The same through `uffs mcp`: a `count` of `content:` whose call the client cancels
/// (`notifications/cancelled`, what a client sends when it gives up waiting) stops reading the volume, and the
/// server ends when its client goes away.
#[test]
fn a_content_search_whose_mcp_call_is_cancelled_stops_reading() {
    if !is_root() {
        return cannot_run("a FUSE mount needs root");
    }
    let dir = scratch("faults-mcp-cancel");
    let img = needle_volume(&dir);
    let Some(m) = EioMount::slowed(&img, &dir.join("counted"), 20) else {
        return cannot_run("python3-fusepy is not installed (scripts/setup.sh installs it)");
    };
    let mut server = uffs()
        .args(["mcp", "--source", s(&m.image())])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = server.stdin.take().unwrap();
    let mut output = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut send = |line: &str| {
        std::io::Write::write_all(&mut input, format!("{line}\n").as_bytes()).unwrap();
    };
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"faults","version":"1"}}}"#,
    );
    let mut answer = String::new();
    std::io::BufRead::read_line(&mut output, &mut answer).unwrap();
    assert!(answer.contains("\"id\":1"), "{answer}");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let asked = m.served();
    send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{"query":"content:needle"}}}"#,
    );
    std::thread::sleep(Duration::from_millis(1500));
    send(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the client gave up"}}"#,
    );
    std::thread::sleep(Duration::from_secs(1));
    let at_stop = m.served();
    std::thread::sleep(Duration::from_secs(2));
    let after = m.served() - at_stop;
    let whole = 200 * 5000 * 36u64;
    let read = at_stop - asked;
    eprintln!("read {read} bytes until 1 s after the cancel, {after} in the next 2 s");
    assert!(read < whole, "{read} of {whole} bytes read");
    assert_eq!(after, 0, "the server went on reading a cancelled call");
    drop(input);
    let status = wait_bounded(&mut server, "uffs mcp with its client gone");
    assert!(status.success(), "{status}");
}

#[test]
fn a_daemon_whose_refresh_hits_read_errors_keeps_answering() {
    if !is_root() {
        return cannot_run("a FUSE mount needs root");
    }
    let mut w = World::new("faults-eio");
    let bad = 150..158;
    let (img, bytes) = eio_volume(&w.dir, bad);
    let Some(m) = EioMount::new(&img, &w.dir.join("eio")) else {
        return cannot_run("python3-fusepy is not installed (scripts/setup.sh installs it)");
    };
    w.ok(&[
        "volumes",
        "add",
        s(&m.image()),
        "--name",
        "eio",
        "--refresh",
        "never",
    ]);
    w.run_foreground();
    w.wait_ready(60);
    let answers = || {
        (
            w.ok(&["--count"]),
            w.ok(&["f100.txt", "--limit", "1"]),
            w.ok(&["f200.txt"]),
        )
    };
    let before = answers();
    assert!(before.1.contains("f100.txt"), "{before:?}");
    // The volume changes, and its $MFT cannot be read where the changed records are.
    write_files(&img, &w.dir.join("mnt"), "g", 20, false);
    m.fail(&[bytes]);
    let refresh = w.ok(&["volumes", "refresh", "eio"]);
    assert!(refresh.contains("check failed"), "{refresh}\n{}", w.log());
    assert!(
        w.log().contains("the last index keeps answering"),
        "{}",
        w.log()
    );
    assert_eq!(answers(), before);
    let status = w.wait_ready(60);
    assert_eq!(status["volumes"][0]["state"], "ready", "{status}");
    // Once the source reads again, the next check applies the change.
    m.fail(&[]);
    let refresh = w.ok(&["volumes", "refresh", "eio"]);
    assert!(refresh.contains("applied"), "{refresh}\n{}", w.log());
    assert!(w.ok(&["g5.txt"]).contains("g5.txt"));
    drop(m);
}
