//! Speed against `fls -r -p` on a volume of many entries. Ignored by default (building the volume takes
//! minutes): `UFFS_FAT_PERF_IMG=IMG cargo test -p uffs-fat --release --test fat_perf -- --ignored --nocapture`,
//! or without the variable it copies /usr/share/doc and /usr/share/locale into a new FAT32 volume with mtools.

#![cfg(unix)]

mod fat_common;

use std::os::unix::fs::FileExt;
use std::time::Instant;

use fat_common::*;
use uffs_fat::{fat, ScanOptions};
use uffs_fs::ReadAt;

/// The image file read where asked, as the image layer does.
#[derive(Debug)]
struct File(std::fs::File, u64);

impl ReadAt for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }
    fn len(&self) -> u64 {
        self.1
    }
}

#[test]
#[ignore]
fn scan_is_much_faster_than_fls() {
    if !have_tools(&["mkfs.vfat", "mcopy", "fls"]) {
        return;
    }
    let s = Scratch::new("perf");
    let img = match std::env::var_os("UFFS_FAT_PERF_IMG") {
        Some(p) => std::path::PathBuf::from(p),
        None => {
            let img = s.path("perf.img");
            run(
                "mkfs.vfat",
                &["-F", "32", "-C", img.to_str().unwrap(), "614400"],
            );
            mtools(
                "mcopy",
                &img,
                &["-s", "-Q", "/usr/share/doc", "/usr/share/locale", "::/"],
            );
            img
        }
    };
    let t = Instant::now();
    let f = std::fs::File::open(&img).unwrap();
    let len = f.metadata().unwrap().len();
    let v = fat::Volume::open(File(f, len)).unwrap();
    let read = t.elapsed();
    let scan = v.scan(&ScanOptions::default()).unwrap();
    let ours = t.elapsed();
    let t = Instant::now();
    let tsk = fls(&img, &[]);
    let theirs = t.elapsed();
    println!(
        "{} entries: uffs open+scan {:?} (open {:?}), fls -r -p {:?} ({} lines): {:.1}x",
        scan.entries.len(),
        ours,
        read,
        theirs,
        tsk.len(),
        theirs.as_secs_f64() / ours.as_secs_f64()
    );
    assert!(scan.warnings.is_empty(), "{:?}", scan.warnings);
    let ours_paths: std::collections::BTreeSet<(u64, String)> = paths(&scan).into_iter().collect();
    let tsk_paths: std::collections::BTreeSet<(u64, String)> = tsk
        .into_iter()
        .filter(|(_, p, _)| p != "$OrphanFiles" && !p.ends_with("(Volume Label Entry)"))
        .map(|(id, p, _)| (id, p))
        .collect();
    assert!(ours_paths == tsk_paths, "paths and ids differ from fls");
    assert!(theirs > ours * 10, "uffs {ours:?} vs fls {theirs:?}");
}
