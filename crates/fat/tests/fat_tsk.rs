//! FAT12, FAT16 and FAT32 volumes made by dosfstools and mtools, read by uffs and by The Sleuth Kit: the same
//! paths and inode numbers, the same bytes, sizes and times, and space that adds up.

mod fat_common;

use std::collections::{BTreeMap, BTreeSet};

use fat_common::*;
use uffs_fs::Kind;

const TOOLS: &[&str] = &[
    "mkfs.vfat",
    "mcopy",
    "mdel",
    "mdeltree",
    "mren",
    "fls",
    "icat",
    "fsck.fat",
];

fn check(fat_bits: u32, kib: u64, many: usize) {
    if !have_tools(TOOLS) {
        return;
    }
    let s = Scratch::new(&format!("tsk{fat_bits}"));
    let img = build(&s, fat_bits, kib, many);
    let (bytes, v) = open(&img);
    assert_eq!(v.flavor().name(), format!("FAT{fat_bits}"));
    assert_eq!(v.serial(), 0x1234_ABCD);
    let facts = v.facts();
    let fact = |k: &str| {
        facts
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, x)| x.clone())
            .unwrap()
    };
    assert_eq!(fact("label"), "TESTVOL");
    assert_eq!(fact("serial"), "1234-ABCD");
    assert_eq!(fact("file system"), format!("FAT{fat_bits}"));
    println!("{facts:#?}");
    // The crate's front door picks the FAT reader.
    let front = uffs_fat::Volume::open(&bytes[..]).expect("open through the crate's Volume");
    assert_eq!(front.flavor(), v.flavor());
    assert_eq!(uffs_fat::probe(&bytes[..512]), Some(v.flavor()));

    // Allocated names: paths and ids as `fls -r -p -u`.
    let live = scan(&v, false);
    assert!(live.warnings.is_empty(), "{:?}", live.warnings);
    let ours: BTreeSet<(u64, String)> = paths(&live).into_iter().collect();
    let tsk: BTreeSet<(u64, String)> = fls(&img, &["-u"])
        .into_iter()
        // TSK lists the volume label entry as a file ("TESTVOL (Volume Label Entry)"); uffs does not. TSK's
        // $OrphanFiles folder is virtual and empty here; uffs keeps orphans itself.
        .filter(|(_, p, _)| !p.ends_with("(Volume Label Entry)") && p != "$OrphanFiles")
        .map(|(id, p, _)| (id, p))
        .collect();
    assert_eq!(
        ours.difference(&tsk).collect::<Vec<_>>(),
        tsk.difference(&ours).collect::<Vec<_>>(),
        "uffs vs fls -u (left: only uffs, right: only TSK)"
    );
    assert!(ours.len() > many, "{} entries", ours.len());

    // Deleted names: as `fls -r -p -d`.
    let all = scan(&v, true);
    let all_paths = paths(&all);
    let ours_del: BTreeSet<(u64, String)> = all
        .entries
        .iter()
        .filter(|e| e.deleted)
        .map(|e| (e.id, all_paths[&e.id].clone()))
        .collect();
    let tsk_del: BTreeSet<(u64, String)> = fls(&img, &["-d"])
        .into_iter()
        .map(|(id, p, _)| (id, p))
        .collect();
    assert_eq!(
        ours_del.difference(&tsk_del).collect::<Vec<_>>(),
        tsk_del.difference(&ours_del).collect::<Vec<_>>(),
        "uffs vs fls -d (left: only uffs, right: only TSK)"
    );
    // mren's new entries took the slots of the deleted "A long file name with spaces.txt"; the old name's
    // entries and the deleted tree stay, long names recovered, a lost first letter shown as TSK shows it.
    for p in [
        "old name.txt",
        "to delete",
        "to delete/other file.txt",
        "to delete/_nner/_one.txt",
    ] {
        assert!(
            ours_del.iter().any(|(_, q)| q == p),
            "{p} not in {ours_del:?}"
        );
    }

    // Deleted files uffs can recover: the bytes icat recovers (TSK's way: free clusters from the first one on).
    // Where the first cluster is in use again uffs gives no runs; TSK gives that cluster's bytes, which are
    // another file's.
    let mut recovered = 0;
    for e in all
        .entries
        .iter()
        .filter(|e| e.deleted && e.kind == Kind::File && !e.runs.is_empty())
    {
        let icat = run("icat", &[img.to_str().unwrap(), &e.id.to_string()]);
        assert_eq!(
            content(&bytes, e),
            icat,
            "recovered bytes of {} ({})",
            e.name,
            e.id
        );
        recovered += 1;
    }
    assert!(recovered > 0, "no deleted file recovered");

    // Contents, sizes and times against icat and the bodyfile (TSK reads FAT times as local time: TZ=UTC).
    let body = String::from_utf8(run("fls", &["-r", "-m", "/", img.to_str().unwrap()])).unwrap();
    let mut tsk_meta: BTreeMap<u64, (u64, i64, i64, i64)> = BTreeMap::new();
    for l in body.lines() {
        let f: Vec<&str> = l.split('|').collect();
        if f.len() == 11 && !f[1].contains("(deleted") {
            tsk_meta.insert(
                f[2].parse().unwrap(),
                (
                    f[6].parse().unwrap(),
                    f[7].parse().unwrap(),
                    f[8].parse().unwrap(),
                    f[10].parse().unwrap(),
                ),
            );
        }
    }
    let mut fragmented = 0;
    for e in live
        .entries
        .iter()
        .filter(|e| e.id != live.root && !e.metadata)
    {
        let (size, atime, mtime, crtime) = tsk_meta[&e.id];
        assert_eq!(e.size, size, "size of {}", e.name);
        assert_eq!(unix(e.times.modified), mtime, "mtime of {}", e.name);
        assert_eq!(unix(e.times.accessed), atime, "atime of {}", e.name);
        assert_eq!(unix(e.times.created), crtime, "crtime of {}", e.name);
        assert!(e.local_times);
        if e.kind == Kind::File {
            let icat = run("icat", &[img.to_str().unwrap(), &e.id.to_string()]);
            assert_eq!(content(&bytes, e), icat, "bytes of {} ({})", e.name, e.id);
            fragmented += usize::from(e.runs.len() > 1);
        } else {
            assert_eq!(
                e.attributes & uffs_fs::attr::DIRECTORY,
                uffs_fs::attr::DIRECTORY
            );
        }
    }
    assert!(fragmented > 0, "no fragmented file");
    let big = live
        .entries
        .iter()
        .find(|e| e.name == "Big Fragmented File.bin")
        .unwrap();
    assert!(big.runs.len() > 1, "{:?}", big.runs);
    // Virtual files: the regions icat gives for them.
    for e in live.entries.iter().filter(|e| e.metadata) {
        let icat = run("icat", &[img.to_str().unwrap(), &e.id.to_string()]);
        assert_eq!(content(&bytes, e), icat, "bytes of {}", e.name);
    }
    let short = live
        .entries
        .iter()
        .find(|e| e.name == "New Longer Name After Rename.txt")
        .unwrap();
    assert!(
        short.short_name.as_deref().is_some_and(|s| s.contains('~')),
        "{short:?}"
    );
    assert!(live
        .entries
        .iter()
        .any(|e| e.name == "lower.txt" && e.short_name.is_none()));

    // Space: every byte in use is some entry's.
    let space = v.space().unwrap();
    let sum: u64 = live.entries.iter().map(|e| e.allocated).sum();
    assert_eq!(sum, space.bytes_in_use, "sum of allocated vs bytes in use");
    assert_eq!(live.space, space);
    let fsck = String::from_utf8(
        std::process::Command::new("/usr/sbin/fsck.fat")
            .args(["-n", img.to_str().unwrap()])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let counts = fsck
        .lines()
        .last()
        .unwrap()
        .rsplit(", ")
        .next()
        .unwrap()
        .trim_end_matches(" clusters")
        .to_string();
    let (used, total) = counts.split_once('/').unwrap();
    assert_eq!(
        space.clusters_in_use,
        used.parse::<u64>().unwrap(),
        "{fsck}"
    );
    assert_eq!(
        space.clusters_total,
        total.parse::<u64>().unwrap(),
        "{fsck}"
    );
}

#[test]
fn fat12_matches_tsk() {
    check(12, 4096, 150);
}

#[test]
fn fat16_matches_tsk() {
    check(16, 32 * 1024, 400);
}

#[test]
fn fat32_matches_tsk() {
    check(32, 40 * 1024, 300);
}
