//! FAT12/16/32 and exFAT volumes made by the real tools (dosfstools and mtools; mkfs.exfat and the exfat-fuse
//! driver over a loop device) in a temp dir removed on drop, and The Sleuth Kit's view of them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{cannot_run, path_str, run_ok, tool};

/// A temp dir removed on drop.
pub struct Tmp(pub PathBuf);

impl Tmp {
    pub fn new(tag: &str) -> Tmp {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "uffs-fatvol-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A peer tool (also from /usr/sbin) with mtools' and TSK's environment.
pub fn peer(name: &str) -> Command {
    let mut c = ["/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .map(Command::new)
        .unwrap_or_else(|| tool(name));
    c.env("MTOOLS_SKIP_CHECK", "1")
        .env("LC_ALL", "C.UTF-8")
        .env("TZ", "UTC");
    c
}

/// `peer(name) args`: its stdout; panics with its stderr when it fails.
pub fn out(name: &str, args: &[&str]) -> Vec<u8> {
    run_ok(peer(name).args(args)).stdout
}

pub fn mtools(cmd: &str, img: &Path, args: &[&str]) {
    let mut a = vec!["-i", path_str(img)];
    a.extend_from_slice(args);
    out(cmd, &a);
}

/// Bytes of a fixed pattern.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// The FAT kinds this module builds, as `uffs info` names them.
pub const KINDS: [&str; 4] = ["FAT12", "FAT16", "FAT32", "exFAT"];

/// The tree every volume gets (relative path, content); folders implied.
pub fn tree() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = vec![
        (
            "A long file name with spaces.txt".into(),
            b"long\n".to_vec(),
        ),
        ("Ünïcødé ñame €.txt".into(), b"unicode text\n".to_vec()),
        ("日本語のファイル名.txt".into(), b"cjk\n".to_vec()),
        ("README".into(), b"no extension\n".to_vec()),
        ("empty.dat".into(), Vec::new()),
        ("hidden file.txt".into(), b"hidden\n".to_vec()),
        ("read only.txt".into(), b"read only\n".to_vec()),
        (
            "deep/level1/level2/level3/Deep Inside.bin".into(),
            pattern(5000, 7),
        ),
        (
            "deep/level1/needle.txt".into(),
            b"hay\nthe zebrafish swims here\nhay\n".to_vec(),
        ),
        ("to delete/gone.txt".into(), b"gone zebra\n".to_vec()),
        ("doomed.txt".into(), pattern(3000, 1)),
        ("old name.txt".into(), b"rename me\n".to_vec()),
    ];
    for i in 0..8 {
        v.push((
            format!("frag/piece{i}.bin"),
            pattern(2500 + i * 100, i as u8),
        ));
    }
    v
}

fn write_tree(src: &Path) {
    for (rel, bytes) in tree() {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// A FAT12/16/32 volume made by mkfs.vfat and filled by mtools: long, Unicode and deep names, a fragmented
/// file, deleted files and folders, a renamed file, hidden and read-only attributes.
pub fn build_fat(t: &Tmp, bits: u32) -> PathBuf {
    let img = t.path(&format!("fat{bits}.img"));
    let kib = match bits {
        12 => "4000",
        16 => "16000",
        _ => "40000",
    };
    let b = bits.to_string();
    let mut args = vec!["-F", b.as_str(), "-n", "TESTVOL", "-i", "1234ABCD"];
    if bits == 32 {
        args.extend_from_slice(&["-s", "1"]);
    } else {
        args.extend_from_slice(&["-s", "2"]);
    }
    args.extend_from_slice(&["-C", path_str(&img), kib]);
    out("mkfs.vfat", &args);
    let src = t.path(&format!("src{bits}"));
    write_tree(&src);
    let entries: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    let mut a: Vec<&str> = vec!["-s"];
    a.extend(entries.iter().map(String::as_str));
    a.push("::/");
    mtools("mcopy", &img, &a);
    for i in (0..8).step_by(2) {
        mtools("mdel", &img, &[&format!("::/frag/piece{i}.bin")]);
    }
    if bits == 32 {
        // mtools allocates from FSInfo's next-free hint; unknown, it searches from cluster 2 and fills the holes.
        let mut b = std::fs::read(&img).unwrap();
        b[512 + 492..512 + 496].copy_from_slice(&[0xFF; 4]);
        std::fs::write(&img, b).unwrap();
    }
    let big = t.path("big.bin");
    std::fs::write(&big, pattern(40_000, 99)).unwrap();
    mtools(
        "mcopy",
        &img,
        &[path_str(&big), "::/frag/Big Fragmented File.bin"],
    );
    mtools("mdeltree", &img, &["::/to delete"]);
    mtools("mdel", &img, &["::/doomed.txt"]);
    mtools(
        "mren",
        &img,
        &["::/old name.txt", "::/New Longer Name After Rename.txt"],
    );
    mtools("mattrib", &img, &["+h", "::/hidden file.txt"]);
    mtools("mattrib", &img, &["+r", "::/read only.txt"]);
    img
}

/// exfat-fuse mounted over a loop device (as root it wants a block device); unmounted and the loop device
/// released on drop, also when a test fails.
pub struct Mount {
    pub dir: PathBuf,
    loopdev: String,
    mounted: bool,
}

impl Mount {
    pub fn new(img: &Path, dir: &Path) -> Option<Mount> {
        std::fs::create_dir_all(dir).unwrap();
        let o = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(img)
            .output()
            .ok()?;
        if !o.status.success() {
            eprintln!("losetup: {}", String::from_utf8_lossy(&o.stderr));
            return None;
        }
        let mut m = Mount {
            dir: dir.to_path_buf(),
            loopdev: String::from_utf8_lossy(&o.stdout).trim().to_string(),
            mounted: false,
        };
        let ok = peer("mount.exfat-fuse")
            .arg(&m.loopdev)
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
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
            let _ = Command::new("losetup").args(["-d", &self.loopdev]).status();
            let name = self.loopdev.trim_start_matches("/dev/").to_string();
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

/// An exFAT volume of 32 MiB made by mkfs.exfat and filled through exfat-fuse with the same tree as the FAT
/// volumes (deleted, renamed, fragmented too); `None` (after `cannot_run`) when no loop device can be had.
pub fn build_exfat(t: &Tmp) -> Option<PathBuf> {
    let img = t.path("exfat.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    out("mkfs.exfat", &["-L", "EXVOL", "-c", "4096", path_str(&img)]);
    let Some(m) = Mount::new(&img, &t.path("mnt")) else {
        cannot_run("no loop device or exfat-fuse mount");
        return None;
    };
    fill(&m.dir);
    m.unmount();
    Some(img)
}

/// Writes [`tree`] into `root` (a mounted volume) and changes it as [`build_fat`] does with mtools: every other
/// piece of `frag/` deleted and a file written over their holes, a folder and a file deleted, a file renamed.
pub fn fill(root: &Path) {
    write_tree(root);
    for i in (0..8).step_by(2) {
        std::fs::remove_file(root.join(format!("frag/piece{i}.bin"))).unwrap();
    }
    std::fs::write(
        root.join("frag/Big Fragmented File.bin"),
        pattern(40_000, 99),
    )
    .unwrap();
    std::fs::remove_dir_all(root.join("to delete")).unwrap();
    std::fs::remove_file(root.join("doomed.txt")).unwrap();
    std::fs::rename(
        root.join("old name.txt"),
        root.join("New Longer Name After Rename.txt"),
    )
    .unwrap();
}

/// The volume of `kind` (one of [`KINDS`]) in `t`.
pub fn build(t: &Tmp, kind: &str) -> Option<PathBuf> {
    match kind {
        "FAT12" => Some(build_fat(t, 12)),
        "FAT16" => Some(build_fat(t, 16)),
        "FAT32" => Some(build_fat(t, 32)),
        _ => build_exfat(t),
    }
}

/// One `fls -r -p` line: inode, path (with a leading `/`), type letters (`r/r`, `d/d`, `v/v`), deleted.
#[derive(Debug, Clone)]
pub struct Fls {
    pub inode: u64,
    pub path: String,
    pub kind: String,
    pub deleted: bool,
}

/// Lines TSK lists that uffs has no entry for: the volume label entry and `$OrphanFiles`.
pub fn tsk_only(path: &str) -> bool {
    path.ends_with("(Volume Label Entry)") || path.starts_with("/$OrphanFiles")
}

/// `fls -r -p FLAGS IMG`, TSK-only lines left out.
pub fn fls(img: &Path, flags: &[&str]) -> Vec<Fls> {
    let mut a = vec!["-r", "-p"];
    a.extend_from_slice(flags);
    a.push(path_str(img));
    String::from_utf8(out("fls", &a))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (head, path) = l.split_once('\t')?;
            let path = format!("/{path}");
            if tsk_only(&path) {
                return None;
            }
            let inode = head
                .rsplit(' ')
                .next()?
                .trim_end_matches(':')
                .parse()
                .ok()?;
            Some(Fls {
                inode,
                path,
                kind: head.split(' ').next().unwrap_or("").to_string(),
                deleted: head.contains(" * "),
            })
        })
        .collect()
}

/// `icat IMG INODE`.
pub fn icat(img: &Path, inode: u64) -> Vec<u8> {
    out("icat", &[path_str(img), &inode.to_string()])
}

/// sha256 of `data` as `sha256sum` prints it.
pub fn sha256_hex(data: &[u8]) -> String {
    use std::io::Write;
    use std::process::Stdio;
    let mut c = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    let mut stdin = c.stdin.take().unwrap();
    let data = data.to_vec();
    let w = std::thread::spawn(move || stdin.write_all(&data));
    let o = c.wait_with_output().unwrap();
    w.join().unwrap().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// `fls -r -m / IMG` rows by path (without ` (deleted)`): (inode, size, atime, mtime, ctime, crtime).
pub fn fls_body(img: &Path, extra: &[&str]) -> BTreeMap<String, (String, String, [String; 4])> {
    let mut a = vec!["-r", "-m", "/"];
    a.extend_from_slice(extra);
    a.push(path_str(img));
    body_rows(&out("fls", &a))
}

/// Body file rows by path: (inode, size, [atime, mtime, ctime, crtime]).
pub fn body_rows(text: &[u8]) -> BTreeMap<String, (String, String, [String; 4])> {
    String::from_utf8_lossy(text)
        .lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split('|').collect();
            if c.len() != 11 {
                return None;
            }
            let path = c[1].trim_end_matches(" (deleted)").to_string();
            Some((
                path,
                (
                    c[2].to_string(),
                    c[6].to_string(),
                    [c[7].into(), c[8].into(), c[9].into(), c[10].into()],
                ),
            ))
        })
        .collect()
}

/// A small xorshift for seeded random changes.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
