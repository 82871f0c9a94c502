//! Speed on a volume of ~11k entries (`/usr/share/doc`, `/usr/share/locale` and Python's library copied in
//! through exfat-fuse): `scan()` against `fls -r -p` and against `find` over a fresh mount. Ignored by default
//! (it copies ~400 MB through FUSE): `cargo test -p uffs-fat --test exfat_perf -- --ignored --nocapture`.

#![cfg(unix)]

mod exfat_util;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use exfat_util::*;
use uffs_fat::{exfat, ScanOptions};

fn time_cmd(cmd: &str, args: &[&str]) -> Duration {
    let t = Instant::now();
    let ok = Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "{cmd}");
    t.elapsed()
}

#[test]
#[ignore]
fn exfat_perf_scan_beats_fls_and_find() {
    if !have(&["mkfs.exfat", "fls", "find", "losetup", "tar"]) {
        return;
    }
    let sources: Vec<String> = ["/usr/share/doc", "/usr/share/locale", "/usr/lib/python3.11"]
        .iter()
        .filter(|p| Path::new(p).exists())
        .map(|p| p.to_string())
        .collect();
    let tmp = TempDir::new("perf");
    let img = tmp.path().join("vol.img");
    mkfs(&img, 1024, &[]);
    let mnt = tmp.path().join("mnt");
    {
        let Some(m) = Mount::new(&img, &mnt) else {
            eprintln!("skipped: FUSE mount failed");
            return;
        };
        for s in &sources {
            // exFAT keeps no symlinks: tar copies files and folders and fails on the links (not an error here).
            let _ = Command::new("sh")
                .arg("-c")
                .arg("mkdir -p \"$2\" && tar -C \"$1\" -cf - . 2>/dev/null | tar -C \"$2\" -xf - --no-same-owner --no-same-permissions 2>/dev/null")
                .arg("sh")
                .arg(s)
                .arg(m.dir.join(Path::new(s).file_name().unwrap()))
                .status();
        }
        m.unmount();
    }
    let bytes = std::fs::read(&img).unwrap();
    let mut best = Duration::MAX;
    let mut n = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let v = exfat::Volume::open(bytes.as_slice()).unwrap();
        let s = v.scan(&ScanOptions::default()).unwrap();
        best = best.min(t.elapsed());
        assert!(
            s.warnings.is_empty(),
            "{:?}",
            &s.warnings[..s.warnings.len().min(5)]
        );
        n = s.entries.len();
    }
    // The same from the file, as uffs reads it (the page cache is warm for all three).
    let t = Instant::now();
    let f = std::fs::File::open(&img).unwrap();
    let dev = FileDev(f);
    let v = exfat::Volume::open(&dev).unwrap();
    let s = v.scan(&ScanOptions::default()).unwrap();
    let from_file = t.elapsed();
    assert_eq!(s.entries.len(), n);
    let fls = time_cmd("fls", &["-r", "-p", img.to_str().unwrap()]);
    let find = {
        let m = Mount::new(&img, &mnt).expect("remount");
        let d = time_cmd("find", &[m.dir.to_str().unwrap()]);
        m.unmount();
        d
    };
    eprintln!(
        "{n} entries: scan {:.1} ms (in memory), {:.1} ms (from the image file); fls -r -p {:.1} ms; find over a fresh mount {:.1} ms",
        best.as_secs_f64() * 1e3,
        from_file.as_secs_f64() * 1e3,
        fls.as_secs_f64() * 1e3,
        find.as_secs_f64() * 1e3
    );
    assert!(n > 10_000, "{n} entries");
    assert!(from_file * 10 < fls, "not 10x faster than fls");
    assert!(from_file < find, "not faster than find");
}

/// The image file as a positional-read device.
#[derive(Debug)]
struct FileDev(std::fs::File);

impl uffs_fs::ReadAt for FileDev {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.0, buf, offset)
    }
    fn len(&self) -> u64 {
        self.0.metadata().map(|m| m.len()).unwrap_or(0)
    }
}
