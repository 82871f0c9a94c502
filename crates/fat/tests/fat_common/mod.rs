//! Shared by the FAT tests: real volumes made by dosfstools and mtools, read back by The Sleuth Kit.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use uffs_fat::{fat, ScanOptions};
use uffs_fs::{Entry, Scan};

/// Whether every tool is installed; if not: a panic when CI is "true", else "skipped: why" and false.
pub fn have_tools(tools: &[&str]) -> bool {
    for t in tools {
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(t).is_file()))
            .unwrap_or(false)
            || Path::new("/usr/sbin").join(t).is_file()
            || Path::new("/sbin").join(t).is_file();
        if !found {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{t} is missing (CI=true)");
            }
            println!("skipped: {t} is not installed");
            return false;
        }
    }
    true
}

/// A scratch folder removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "uffs-fat-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tool(name: &str) -> String {
    for d in ["/usr/sbin", "/sbin"] {
        let p = Path::new(d).join(name);
        if p.is_file() {
            return p.to_string_lossy().into_owned();
        }
    }
    name.to_string()
}

/// Runs a command with mtools' and TSK's environment; its stdout, or a panic naming it.
pub fn run(cmd: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(tool(cmd))
        .args(args)
        .env("MTOOLS_SKIP_CHECK", "1")
        .env("LC_ALL", "C.UTF-8")
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

pub fn mtools(cmd: &str, img: &Path, args: &[&str]) {
    let mut a = vec!["-i", img.to_str().unwrap()];
    a.extend_from_slice(args);
    run(cmd, &a);
}

/// A FAT12/16/32 volume of `kib` KiB with long, Unicode, deep, many, fragmented, deleted and renamed names.
pub fn build(s: &Scratch, fat_bits: u32, kib: u64, many: usize) -> PathBuf {
    let img = s.path(&format!("fat{fat_bits}.img"));
    let bits = fat_bits.to_string();
    let k = kib.to_string();
    let mut args = vec!["-F", bits.as_str(), "-n", "TESTVOL", "-i", "1234ABCD"];
    if fat_bits == 32 {
        args.extend_from_slice(&["-s", "1"]);
    }
    args.extend_from_slice(&["-C", img.to_str().unwrap(), k.as_str()]);
    run("mkfs.vfat", &args);

    let src = s.path("src");
    let w = |rel: &str, bytes: &[u8]| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    };
    let pattern = |n: usize, seed: u8| -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    };
    w("A long file name with spaces.txt", b"long\n");
    w("Ünïcødé ñame €.txt", b"unicode\n");
    w("日本語のファイル名.txt", b"cjk\n");
    w("lower.txt", b"lower\n");
    w("MiXeD.TxT", b"mixed\n");
    w("UPPER.TXT", b"upper\n");
    w("README", b"noext\n");
    w("empty.dat", b"");
    w(
        "deep/level1/level2/level3/level4/Deep Inside.bin",
        &pattern(5000, 7),
    );
    w("to delete/inner/gone.txt", b"gone\n");
    w("to delete/other file.txt", &pattern(3000, 1));
    w("old name.txt", b"rename me\n");
    for i in 0..many {
        w(
            &format!("many/entry number {i:04}.txt"),
            format!("{i}\n").as_bytes(),
        );
    }
    for i in 0..8 {
        w(
            &format!("frag/piece{i}.bin"),
            &pattern(2500 + i * 100, i as u8),
        );
    }
    let entries: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    let mut a: Vec<&str> = vec!["-s"];
    a.extend(entries.iter().map(String::as_str));
    a.push("::/");
    mtools("mcopy", &img, &a);
    // Fragmentation: every other piece deleted, then one large file fills the holes.
    for i in (0..8).step_by(2) {
        mtools("mdel", &img, &[&format!("::/frag/piece{i}.bin")]);
    }
    if fat_bits == 32 {
        // mtools allocates from FSInfo's next-free hint; with the hint unknown it searches from cluster 2 and
        // so fills the holes.
        let mut b = std::fs::read(&img).unwrap();
        b[512 + 492..512 + 496].copy_from_slice(&[0xFF; 4]);
        std::fs::write(&img, b).unwrap();
    }
    let big = s.path("big.bin");
    std::fs::write(&big, pattern(40_000, 99)).unwrap();
    mtools(
        "mcopy",
        &img,
        &[big.to_str().unwrap(), "::/frag/Big Fragmented File.bin"],
    );
    mtools("mdeltree", &img, &["::/to delete"]);
    mtools("mdel", &img, &["::/A long file name with spaces.txt"]);
    mtools(
        "mren",
        &img,
        &["::/old name.txt", "::/New Longer Name After Rename.txt"],
    );
    img
}

/// `fls -r -p` with extra flags: (id, path, deleted) for each line, TSK's virtual `$…` files and the volume
/// label entry included (callers filter).
pub fn fls(img: &Path, flags: &[&str]) -> Vec<(u64, String, bool)> {
    let mut a = vec!["-r", "-p"];
    a.extend_from_slice(flags);
    a.push(img.to_str().unwrap());
    let out = String::from_utf8(run("fls", &a)).unwrap();
    out.lines()
        .filter_map(|l| {
            let (head, path) = l.split_once('\t')?;
            let deleted = head.contains(" * ");
            let id = head
                .rsplit(' ')
                .next()?
                .trim_end_matches(':')
                .parse()
                .ok()?;
            Some((id, path.to_string(), deleted))
        })
        .collect()
}

/// Each entry's path from the root, as fls prints it.
pub fn paths(scan: &Scan) -> BTreeMap<u64, String> {
    let by_id: BTreeMap<u64, &Entry> = scan.entries.iter().map(|e| (e.id, e)).collect();
    let mut out = BTreeMap::new();
    for e in &scan.entries {
        if e.id == scan.root {
            continue;
        }
        let mut parts = vec![e.name.clone()];
        let mut p = e.parent;
        let mut guard = 0;
        while p != scan.root && guard < 1000 {
            let pe = by_id[&p];
            parts.push(pe.name.clone());
            p = pe.parent;
            guard += 1;
        }
        parts.reverse();
        out.insert(e.id, parts.join("/"));
    }
    out
}

pub fn open(img: &Path) -> (Vec<u8>, fat::Volume<Vec<u8>>) {
    let bytes = std::fs::read(img).unwrap();
    let v = fat::Volume::open(bytes.clone()).expect("open");
    (bytes, v)
}

pub fn scan(v: &fat::Volume<Vec<u8>>, deleted: bool) -> Scan {
    v.scan(&ScanOptions {
        deleted,
        ..Default::default()
    })
    .expect("scan")
}

/// An entry's bytes: its runs read from the image, cut to its size.
pub fn content(img: &[u8], e: &Entry) -> Vec<u8> {
    let mut out = Vec::new();
    for r in &e.runs {
        let end = (r.offset + r.len).min(img.len() as u64);
        out.extend_from_slice(&img[r.offset as usize..end as usize]);
    }
    out.truncate(e.size as usize);
    out
}

/// FILETIME to Unix seconds.
pub fn unix(ft: u64) -> i64 {
    if ft == 0 {
        0
    } else {
        (ft / 10_000_000) as i64 - 11_644_473_600
    }
}
