//! Shared by the exFAT tests: temp dirs, tools, volumes built with mkfs.exfat and filled through exfat-fuse.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use uffs_fs::{Entry, Scan};

/// Whether `tools` are all installed; if not, panics under CI=true, else prints "skipped: …" and returns false.
pub fn have(tools: &[&str]) -> bool {
    for t in tools {
        let ok = Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{t} is missing");
            }
            eprintln!("skipped: {t} is not installed");
            return false;
        }
    }
    true
}

/// A temp dir removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "uffs-exfat-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn run(cmd: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(cmd)
        .args(args)
        .env("TZ", "UTC")
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// exfat-fuse mounted over a loop device (as root it insists on a block device); unmounted, and the loop
/// device released, on drop — also when a test fails.
pub struct Mount {
    pub dir: PathBuf,
    loopdev: String,
    mounted: bool,
}

impl Mount {
    pub fn new(img: &Path, dir: &Path) -> Option<Mount> {
        Mount::with_tz(img, dir, "UTC")
    }
    /// Mounted with the driver in time zone `tz` (it records that zone's offset in each entry).
    pub fn with_tz(img: &Path, dir: &Path, tz: &str) -> Option<Mount> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(img)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!("losetup failed: {}", String::from_utf8_lossy(&out.stderr));
            return None;
        }
        let loopdev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mut m = Mount {
            dir: dir.to_path_buf(),
            loopdev,
            mounted: false,
        };
        let ok = Command::new("mount.exfat-fuse")
            .arg(&m.loopdev)
            .arg(dir)
            .env("TZ", tz)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("mount.exfat-fuse failed");
            return None; // drop releases the loop device
        }
        m.mounted = true;
        Some(m)
    }
    pub fn unmount(mut self) {
        self.release();
    }
    fn release(&mut self) {
        if self.mounted {
            let ok = Command::new("umount")
                .arg(&self.dir)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("fusermount").arg("-u").arg(&self.dir).status();
            }
            self.mounted = false;
        }
        if !self.loopdev.is_empty() {
            // Detach (lazily: it clears when the FUSE daemon, which flushes on exit, closes it), then wait for it.
            let _ = Command::new("losetup").args(["-d", &self.loopdev]).status();
            let name = self.loopdev.trim_start_matches("/dev/");
            let backing = format!("/sys/block/{name}/loop/backing_file");
            let t = Instant::now();
            while Path::new(&backing).exists() && t.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(50));
            }
            self.loopdev.clear();
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.release();
    }
}

/// A fresh image of `mb` MiB made by mkfs.exfat with `args`.
pub fn mkfs(img: &Path, mb: u64, args: &[&str]) {
    let f = std::fs::File::create(img).unwrap();
    f.set_len(mb << 20).unwrap();
    drop(f);
    let mut a: Vec<&str> = args.to_vec();
    let p = img.to_str().unwrap();
    a.push(p);
    run("mkfs.exfat", &a);
}

/// Full paths of a scan's entries by id ("a/b/c"), the root's entry left out.
pub fn paths(scan: &Scan) -> HashMap<u64, String> {
    let by_id: HashMap<u64, &Entry> = scan.entries.iter().map(|e| (e.id, e)).collect();
    let mut out = HashMap::new();
    for e in &scan.entries {
        if e.id == scan.root {
            continue;
        }
        let mut parts = vec![e.name.clone()];
        let mut p = e.parent;
        let mut guard = 0;
        while p != scan.root && guard < 1000 {
            let Some(pe) = by_id.get(&p) else { break };
            parts.push(pe.name.clone());
            p = pe.parent;
            guard += 1;
        }
        parts.reverse();
        out.insert(e.id, parts.join("/"));
    }
    out
}

/// `fls -r -p ARGS IMG` as (id, path, deleted), without TSK's own virtual and special lines: `$OrphanFiles` and
/// what is under it, the volume label entry, `$VOLUME_GUID`, `$TEX_FAT`, `$ACT`.
pub fn fls(img: &Path, args: &[&str]) -> Vec<(u64, String, bool)> {
    let mut a = vec!["-r", "-p"];
    a.extend_from_slice(args);
    let p = img.to_str().unwrap();
    a.push(p);
    let out = run("fls", &a);
    let mut v = Vec::new();
    for line in String::from_utf8(out).unwrap().lines() {
        let Some((head, path)) = line.split_once(":\t") else {
            continue;
        };
        let deleted = head.contains(" * ");
        let id: u64 = head.rsplit(' ').next().unwrap().parse().unwrap();
        if path.starts_with("$OrphanFiles")
            || path.ends_with("(Volume Label Entry)")
            || ["$VOLUME_GUID", "$TEX_FAT", "$ACT"].contains(&path)
        {
            continue;
        }
        v.push((id, path.to_string(), deleted));
    }
    v.sort();
    v
}

/// The first `len` bytes of an entry's runs.
pub fn read_entry(img: &[u8], e: &Entry) -> Vec<u8> {
    let mut out = Vec::new();
    for r in &e.runs {
        let s = r.offset as usize;
        out.extend_from_slice(&img[s..(s + r.len as usize).min(img.len())]);
    }
    out.truncate(e.size as usize);
    out
}

/// A small xorshift for fixed-seed "random" data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}
