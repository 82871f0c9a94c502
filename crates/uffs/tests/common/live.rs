//! Changing NTFS volumes through the real ntfs-3g driver, for the live-index tests: a fresh volume, a mount
//! that ends with the test, and seeded random operations.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{run_ok, tool};

/// A small, seedable generator (xorshift64*): the same seed makes the same operations.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> Option<&'a T> {
        (!v.is_empty()).then(|| &v[self.below(v.len())])
    }
}

/// An NTFS image mounted with ntfs-3g (streams reachable as `file:stream`), unmounted on drop.
pub struct Mounted {
    pub image: PathBuf,
    pub dir: PathBuf,
}

/// The images this test process has mounted: ntfs-3g mounts an image once at a time, so tests that mount the
/// same one take turns.
static MOUNTED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
static UNMOUNTED: std::sync::Condvar = std::sync::Condvar::new();

impl Mounted {
    pub fn new(image: &Path, dir: &Path) -> Mounted {
        {
            let mut held = MOUNTED.lock().unwrap_or_else(|e| e.into_inner());
            while held.iter().any(|p| p == image) {
                held = UNMOUNTED.wait(held).unwrap_or_else(|e| e.into_inner());
            }
            held.push(image.to_path_buf());
        }
        fs::create_dir_all(dir).unwrap();
        // The ntfs-3g of a mount just taken down may not have closed the image yet (it exits after umount
        // returns): "already exclusively opened", exit status 16, for a moment.
        for _ in 0..100 {
            let busy = Command::new("ntfs-3g")
                .arg(image)
                .arg(dir)
                .args(["-o", "streams_interface=windows"])
                .output()
                .unwrap()
                .status
                .code()
                == Some(16);
            if !busy {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let m = Mounted {
            image: image.to_path_buf(),
            dir: dir.to_path_buf(),
        };
        assert!(
            Command::new("mountpoint")
                .arg("-q")
                .arg(dir)
                .status()
                .unwrap()
                .success(),
            "ntfs-3g did not mount {}",
            image.display()
        );
        m
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // umount waits for ntfs-3g to write everything back to the image.
        let _ = Command::new("umount").arg(&self.dir).status();
        let mut held = MOUNTED.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|p| p != &self.image);
        UNMOUNTED.notify_all();
    }
}

/// A fresh NTFS volume image of `mib` MiB, made by mkntfs.
pub fn make_volume(dir: &Path, mib: u64) -> PathBuf {
    let img = dir.join("vol.img");
    let f = fs::File::create(&img).unwrap();
    f.set_len(mib << 20).unwrap();
    drop(f);
    run_ok(
        Command::new("mkntfs")
            .args(["-q", "-F", "-f", "-L", "live"])
            .arg(&img),
    );
    img
}

/// Every file and folder below `root` (relative paths), folders first.
pub fn walk(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut dirs, mut files) = (Vec::new(), Vec::new());
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(rd) = fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            if name.to_string_lossy().starts_with('$') {
                continue;
            }
            let p = rel.join(&name);
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                dirs.push(p.clone());
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    dirs.sort();
    files.sort();
    (dirs, files)
}

/// One random change through the driver. Failures of single operations (a name taken, a folder moved into
/// itself) are ignored: the driver refused them, the volume is still consistent.
pub fn random_op(rng: &mut Rng, root: &Path, counter: &mut u32) {
    let (dirs, files) = walk(root);
    let mut folders = vec![PathBuf::new()];
    folders.extend(dirs.iter().cloned());
    *counter += 1;
    let fresh = format!(
        "n{}_{}",
        *counter,
        ["a.txt", "b.dat", "Report.DOCX", "x"][rng.below(4)]
    );
    let at = |p: &Path| root.join(p);
    match rng.below(14) {
        0..=2 => {
            let d = rng.pick(&folders).unwrap().clone();
            let size = [0usize, 10, 700, 5000, 70_000][rng.below(5)];
            let _ = fs::write(at(&d.join(&fresh)), vec![b'u'; size]);
        }
        3 => {
            let d = rng.pick(&folders).unwrap().clone();
            let _ = fs::create_dir(at(&d.join(format!("dir{}", *counter))));
        }
        4 => {
            if let Some(f) = rng.pick(&files) {
                let _ = fs::remove_file(at(f));
            }
        }
        5 => {
            // Rename in place.
            if let Some(f) = rng.pick(&files) {
                let _ = fs::rename(at(f), at(&f.with_file_name(&fresh)));
            }
        }
        6 => {
            // Move across folders.
            if let (Some(f), Some(d)) = (rng.pick(&files), rng.pick(&folders)) {
                let _ = fs::rename(at(f), at(&d.join(&fresh)));
            }
        }
        7 => {
            // Move a folder with its subtree (into one of its own descendants fails, which is fine).
            if let (Some(src), Some(d)) = (rng.pick(&dirs), rng.pick(&folders)) {
                let _ = fs::rename(at(src), at(&d.join(format!("moved{}", *counter))));
            }
        }
        8 => {
            // A hard link, or removing one name of a file with several.
            if let (Some(f), Some(d)) = (rng.pick(&files), rng.pick(&folders)) {
                let _ = fs::hard_link(at(f), at(&d.join(format!("link{}", *counter))));
            }
        }
        9 => {
            // A named stream added, or removed, on a file or a folder.
            let on_folder = rng.below(3) == 0;
            if let Some(f) = rng.pick(if on_folder { &dirs } else { &files }) {
                let ads = format!("{}:ads{}", at(f).display(), rng.below(2));
                if rng.below(2) == 0 {
                    let _ = fs::write(&ads, vec![b's'; [5, 3000][rng.below(2)]]);
                } else {
                    let _ = fs::remove_file(&ads);
                }
            }
        }
        10 => {
            // Truncate or extend; a sparse write far out.
            if let Some(f) = rng.pick(&files) {
                if let Ok(h) = fs::OpenOptions::new().write(true).open(at(f)) {
                    match rng.below(3) {
                        0 => {
                            let _ = h.set_len(rng.below(3000) as u64);
                        }
                        1 => {
                            let _ = h.set_len(200_000);
                        }
                        _ => {
                            use std::os::unix::fs::FileExt;
                            let _ = h.write_all_at(b"sparse", 3 << 20);
                        }
                    }
                }
            }
        }
        11 => {
            // Attributes (hidden, read-only, system) and times.
            if let Some(f) = rng.pick(&files) {
                let attrs = [0x20u32, 0x22, 0x21, 0x06][rng.below(4)];
                let _ = Command::new("setfattr")
                    .args(["-n", "system.ntfs_attrib_be", "-v"])
                    .arg(format!("0x{attrs:08x}"))
                    .arg(at(f))
                    .status();
                if let Ok(h) = fs::File::options().write(true).open(at(f)) {
                    let t = std::time::UNIX_EPOCH
                        + std::time::Duration::from_secs(1_600_000_000 + rng.below(1 << 26) as u64);
                    let _ = h.set_times(fs::FileTimes::new().set_modified(t).set_accessed(t));
                }
            }
        }
        _ => {
            // Delete many at once: a whole folder.
            if let Some(d) = rng.pick(&dirs) {
                let _ = fs::remove_dir_all(at(d));
            }
        }
    }
}

/// `rg -uu -l --no-mmap --binary ARGS .` in `root` (a mount), as paths from the volume's root: the files a
/// `content:` term must find.
pub fn rg_files(root: &Path, args: &[&str]) -> std::collections::BTreeSet<String> {
    let out = tool("rg")
        .current_dir(root)
        .args(["-uu", "-l", "--no-mmap", "--binary"])
        .args(args)
        .arg(".")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| format!("/{}", l.trim_start_matches("./")))
        .collect()
}
