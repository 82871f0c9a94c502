//! Damaged exFAT volumes: a FAT loop, a folder holding its ancestor, bad checksums, secondary counts past the
//! end, clusters past the heap, truncated images, random byte flips and garbage: never a panic or a hang, and
//! warnings where something was skipped.

mod exfat_util;

use std::fs;
use std::sync::mpsc;
use std::time::Duration;

use exfat_util::*;
use uffs_fat::{exfat, ScanOptions};
use uffs_fs::{Kind, Scan};

/// A small populated volume (through exfat-fuse when it mounts; else as mkfs leaves it).
fn volume() -> Option<Vec<u8>> {
    if !have(&["mkfs.exfat", "losetup"]) {
        return None;
    }
    let tmp = TempDir::new("corrupt");
    let img = tmp.path().join("vol.img");
    mkfs(&img, 8, &["-c", "4096"]);
    match Mount::new(&img, &tmp.path().join("mnt")) {
        Some(m) => {
            let d = &m.dir;
            fs::create_dir_all(d.join("a/b/c")).unwrap();
            fs::create_dir(d.join("many")).unwrap();
            for k in 0..300 {
                fs::write(
                    d.join(format!("many/file {k:03} named at some length")),
                    [k as u8; 10],
                )
                .unwrap();
            }
            fs::write(d.join("a/b/c/deep.txt"), b"deep").unwrap();
            fs::write(d.join("big"), vec![7u8; 100_000]).unwrap();
            fs::write(d.join("gone"), vec![1u8; 9000]).unwrap();
            fs::remove_file(d.join("gone")).unwrap();
            m.unmount();
        }
        None => eprintln!("FUSE mount failed: corrupting an empty volume only"),
    }
    Some(fs::read(&img).unwrap())
}

/// Opens and scans (with and without deleted entries) on another thread; fails when it takes over 30 s.
fn scan_bounded(img: Vec<u8>) -> Option<Scan> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = exfat::Volume::open(img.as_slice()).ok().map(|v| {
            let _ = v.facts();
            let _ = v.space();
            let _ = v
                .scan(&ScanOptions {
                    deleted: true,
                    ..Default::default()
                })
                .unwrap();
            v.scan(&ScanOptions::default()).unwrap()
        });
        let _ = tx.send(r);
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("scan hung or panicked")
}

#[derive(Clone, Copy)]
struct Geo {
    heap: usize,
    cluster: usize,
    fat: usize,
}

fn geo(img: &[u8]) -> Geo {
    let ss = 1usize << img[108];
    let le32 = |at: usize| u32::from_le_bytes(img[at..at + 4].try_into().unwrap()) as usize;
    Geo {
        heap: le32(88) * ss,
        cluster: ss << img[109],
        fat: le32(80) * ss,
    }
}

fn entry_off(g: &Geo, id: u64) -> usize {
    g.heap + (id as usize - 3) * 32
}

fn cluster_of(g: &Geo, off: u64) -> usize {
    (off as usize - g.heap) / g.cluster + 2
}

fn find<'a>(scan: &'a Scan, name: &str) -> &'a uffs_fs::Entry {
    scan.entries
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("{name}"))
}

#[test]
fn exfat_corrupt_named_damage_gives_warnings() {
    let Some(img) = volume() else { return };
    let clean = scan_bounded(img.clone()).unwrap();
    assert!(clean.warnings.is_empty(), "{:?}", clean.warnings);
    let Some(many) = clean.entries.iter().find(|e| e.name == "many") else {
        return; // no mount: nothing to corrupt
    };
    let g = geo(&img);
    let many_clusters: Vec<usize> = many
        .runs
        .iter()
        .flat_map(|r| (0..r.len as usize / g.cluster).map(move |k| cluster_of(&g, r.offset) + k))
        .collect();

    // A FAT loop: the folder's last cluster points back at its first.
    {
        let mut bad = img.clone();
        let last = *many_clusters.last().unwrap();
        if many_clusters.len() > 1 {
            bad[g.fat + last * 4..g.fat + last * 4 + 4]
                .copy_from_slice(&(many_clusters[0] as u32).to_le_bytes());
            let s = scan_bounded(bad).unwrap();
            assert!(
                s.warnings.iter().any(|w| w.contains("loop")),
                "{:?}",
                s.warnings
            );
        }
    }
    // A folder whose first cluster is the root's: it holds its ancestor.
    {
        let mut bad = img.clone();
        let a = find(&clean, "a");
        let root_cluster = u32::from_le_bytes(img[96..100].try_into().unwrap());
        let s_off = entry_off(&g, a.id) + 32;
        bad[s_off + 20..s_off + 24].copy_from_slice(&root_cluster.to_le_bytes());
        let s = scan_bounded(bad).unwrap();
        assert!(
            s.warnings.iter().any(|w| w.contains("already belongs")),
            "{:?}",
            s.warnings
        );
    }
    // A bad set checksum (a name character changed): kept, with warnings.
    {
        let mut bad = img.clone();
        let e = find(&clean, "big");
        bad[entry_off(&g, e.id) + 64 + 2] = b'p';
        let s = scan_bounded(bad).unwrap();
        assert!(s.entries.iter().any(|x| x.name == "pig"));
        assert!(
            s.warnings.iter().any(|w| w.contains("checksum")),
            "{:?}",
            s.warnings
        );
        assert!(
            s.warnings.iter().any(|w| w.contains("name hash")),
            "{:?}",
            s.warnings
        );
    }
    // A secondary count of 255 in the folder's last set.
    {
        let mut bad = img.clone();
        let last = clean
            .entries
            .iter()
            .filter(|e| e.parent == many.id)
            .map(|e| e.id)
            .max()
            .unwrap();
        bad[entry_off(&g, last) + 1] = 255;
        let s = scan_bounded(bad).unwrap();
        assert!(
            s.warnings.iter().any(|w| w.contains("secondary")),
            "{:?}",
            s.warnings
        );
    }
    // First cluster past the heap's end, and a chain that leaves the heap.
    {
        let mut bad = img.clone();
        let e = find(&clean, "big");
        let s_off = entry_off(&g, e.id) + 32;
        bad[s_off + 20..s_off + 24].copy_from_slice(&0xFFFF_FF00u32.to_le_bytes());
        let c = cluster_of(&g, many.runs[0].offset);
        bad[g.fat + c * 4..g.fat + c * 4 + 4].copy_from_slice(&0x00FF_FFFFu32.to_le_bytes());
        let s = scan_bounded(bad).unwrap();
        assert!(
            s.warnings.iter().any(|w| w.contains("outside the heap")),
            "{:?}",
            s.warnings
        );
        let big = find(&s, "big");
        assert!(big.runs.is_empty());
    }
    // No stream extension after a file entry.
    {
        let mut bad = img.clone();
        let e = find(&clean, "big");
        bad[entry_off(&g, e.id) + 32] = 0xC1;
        let s = scan_bounded(bad).unwrap();
        assert!(
            s.warnings.iter().any(|w| w.contains("no stream extension")),
            "{:?}",
            s.warnings
        );
    }
    // Truncated: the image ends inside the heap.
    {
        let cut = many.runs[0].offset as usize + 100;
        let s = scan_bounded(img[..cut].to_vec()).unwrap();
        assert!(
            s.warnings.iter().any(|w| w.contains("image ends")),
            "{:?}",
            s.warnings
        );
        assert!(s
            .entries
            .iter()
            .any(|e| e.kind == Kind::Folder && e.name == "many"));
    }
}

#[test]
fn exfat_corrupt_truncations_flips_and_garbage_never_panic() {
    let Some(img) = volume() else { return };
    let g = geo(&img);
    // Truncations everywhere that matters.
    for cut in [
        0,
        11,
        100,
        511,
        512,
        4096,
        6 * 512,
        g.fat,
        g.fat + 3,
        g.heap,
        g.heap + 1,
        img.len() / 2,
        img.len() - 1,
    ] {
        let _ = scan_bounded(img[..cut.min(img.len())].to_vec());
    }
    // Random flips in the FAT and in the first clusters of the heap (the root, the metadata, the folders).
    let mut rng = Rng(0xC0FFEE);
    let heap_span = 64 * g.cluster;
    for round in 0..150 {
        let mut bad = img.clone();
        for _ in 0..(1 + round % 40) {
            let (base, span) = if rng.next().is_multiple_of(2) {
                (g.fat, 4096)
            } else {
                (g.heap, heap_span)
            };
            let at = base + (rng.next() as usize % span);
            if at < bad.len() {
                bad[at] = rng.next() as u8;
            }
        }
        let _ = scan_bounded(bad);
    }
    // Garbage with the signature, and boot fields that claim far more than the image holds.
    for round in 0..200 {
        let len = [512usize, 4096, 65536, 1 << 20][round % 4];
        let mut bad = rng.bytes(len);
        bad[3..11].copy_from_slice(b"EXFAT   ");
        if round % 2 == 0 {
            bad[108] = 9;
            bad[109] = (rng.next() % 8) as u8;
            bad[110] = 1;
        }
        let _ = scan_bounded(bad);
    }
    // The real boot sector with the rest random: every cluster count and offset it claims are checked.
    for _ in 0..50 {
        let mut bad = img[..512].to_vec();
        bad.extend(rng.bytes(1 << 20));
        let _ = scan_bounded(bad);
    }
}
