//! Public FAT and exFAT images made by other projects (tests/data/fat-public, see its README): uffs's paths and ids
//! against `fls -r -p`, allocated and deleted, and every file's bytes against `icat`. The qcow2 ones are made raw
//! with `qemu-img convert` first.

mod fat_common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use fat_common::*;
use uffs_fat::{ScanOptions, Volume};
use uffs_fs::Kind;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fat-public")
        .join(name)
}

/// TSK's lines uffs has no entry for: the volume label entry (a file to TSK) and the virtual $OrphanFiles.
fn tsk_only(p: &str) -> bool {
    p.ends_with("(Volume Label Entry)") || p == "$OrphanFiles" || p.starts_with("$OrphanFiles/")
}

fn check(name: &str, flavor: &str, at_least: usize) {
    if !have_tools(&["fls", "icat", "qemu-img"]) {
        return;
    }
    let s = Scratch::new("public");
    let src = data(name);
    let img = if name.ends_with(".qcow2") {
        let raw = s.path("raw.img");
        run(
            "qemu-img",
            &[
                "convert",
                "-f",
                "qcow2",
                "-O",
                "raw",
                src.to_str().unwrap(),
                raw.to_str().unwrap(),
            ],
        );
        raw
    } else {
        src
    };
    let bytes = std::fs::read(&img).unwrap();
    let v = Volume::open(&bytes[..]).expect("open");
    assert_eq!(v.flavor().name(), flavor);
    let _ = v.space().expect("space");
    let _ = v.facts();

    for deleted in [false, true] {
        let scan = v
            .scan(&ScanOptions {
                deleted,
                ..Default::default()
            })
            .expect("scan");
        let all_paths = paths(&scan);
        let ours: BTreeSet<(u64, String, bool)> = scan
            .entries
            .iter()
            .filter(|e| e.id != scan.root)
            .map(|e| (e.id, all_paths[&e.id].clone(), e.deleted))
            .filter(|(_, p, _)| !tsk_only(p))
            .collect();
        let tsk: BTreeSet<(u64, String, bool)> = fls(&img, if deleted { &[] } else { &["-u"] })
            .into_iter()
            .filter(|(_, p, _)| !tsk_only(p))
            .collect();
        assert_eq!(
            ours.difference(&tsk).collect::<Vec<_>>(),
            tsk.difference(&ours).collect::<Vec<_>>(),
            "{name}: uffs vs fls -r -p{} (left: only uffs, right: only TSK)",
            if deleted { "" } else { " -u" }
        );
        assert!(ours.len() >= at_least, "{name}: {} entries", ours.len());

        if deleted {
            continue;
        }
        let mut files = 0;
        for e in scan
            .entries
            .iter()
            .filter(|e| e.kind == Kind::File && !e.deleted)
        {
            let icat = run("icat", &[img.to_str().unwrap(), &e.id.to_string()]);
            assert!(
                content(&bytes, e) == icat,
                "{name}: {} ({}): bytes differ from icat's",
                all_paths[&e.id],
                e.id
            );
            files += 1;
        }
        println!(
            "{name}: {} entries, {files} files' bytes equal icat's",
            ours.len()
        );
    }
}

#[test]
fn keramics_fat16() {
    check("keramics-fat16.qcow2", "FAT16", 5);
}

#[test]
fn keramics_fat32() {
    check("keramics-fat32.qcow2", "FAT32", 5);
}

#[test]
fn obhq_exfat() {
    check("obhq-exfat.img", "exFAT", 3);
}
