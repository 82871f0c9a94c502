//! Damaged FAT volumes: chains that loop, cross into the root, run past the end; folders that hold an ancestor;
//! images cut short; bytes flipped at random (fixed seed). The scan never panics nor hangs, and says what it met.

mod fat_common;

use std::sync::mpsc;
use std::time::Duration;

use fat_common::*;
use uffs_fat::{fat, ScanOptions};
use uffs_fs::{Entry, Scan};

const TOOLS: &[&str] = &["mkfs.vfat", "mcopy", "mdel", "mdeltree", "mren"];

/// Opens and scans (deleted entries too) on another thread; a panic there fails the test, and so does a scan
/// that takes more than 60 s. `None` when open refuses the image.
fn scan_bytes(bytes: Vec<u8>) -> Option<Scan> {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let r = fat::Volume::open(bytes).ok().map(|v| {
            let _ = v.facts();
            let _ = v
                .scan(&ScanOptions {
                    deleted: false,
                    ..Default::default()
                })
                .unwrap();
            v.scan(&ScanOptions {
                deleted: true,
                ..Default::default()
            })
            .unwrap()
        });
        let _ = tx.send(r);
    });
    let r = rx.recv_timeout(Duration::from_secs(60)).expect("scan hung");
    h.join().expect("scan panicked");
    r
}

struct Layout {
    bits: u32,
    fat_offset: usize,
    fat_bytes: usize,
    fats: usize,
    heap: u64,
    cluster_size: u64,
    root_cluster: u32,
}

fn layout(b: &[u8], bits: u32) -> Layout {
    let u16_at = |o: usize| u64::from(u16::from_le_bytes([b[o], b[o + 1]]));
    let u32_at = |o: usize| u64::from(u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]));
    let bps = u16_at(11);
    let spc = u64::from(b[13]);
    let reserved = u16_at(14);
    let fats = u64::from(b[16]);
    let root_entries = u16_at(17);
    let fat_sectors = if u16_at(22) != 0 {
        u16_at(22)
    } else {
        u32_at(36)
    };
    let heap = (reserved + fats * fat_sectors) * bps + root_entries * 32;
    Layout {
        bits,
        fat_offset: (reserved * bps) as usize,
        fat_bytes: (fat_sectors * bps) as usize,
        fats: fats as usize,
        heap,
        cluster_size: bps * spc,
        root_cluster: if bits == 32 { u32_at(44) as u32 } else { 0 },
    }
}

impl Layout {
    fn cluster_of(&self, offset: u64) -> u32 {
        ((offset - self.heap) / self.cluster_size + 2) as u32
    }
    fn first_cluster(&self, e: &Entry) -> u32 {
        self.cluster_of(e.runs[0].offset)
    }
    fn last_cluster(&self, e: &Entry) -> u32 {
        let r = e.runs.last().unwrap();
        self.cluster_of(r.offset + r.len - 1)
    }
    /// Sets a FAT entry in every copy.
    fn set(&self, b: &mut [u8], cluster: u32, value: u32) {
        for copy in 0..self.fats {
            let base = self.fat_offset + copy * self.fat_bytes;
            let c = cluster as usize;
            match self.bits {
                12 => {
                    let o = base + c + c / 2;
                    let old = u16::from_le_bytes([b[o], b[o + 1]]);
                    let v = (value & 0xFFF) as u16;
                    let new = if c & 1 == 1 {
                        (old & 0x000F) | (v << 4)
                    } else {
                        (old & 0xF000) | v
                    };
                    b[o..o + 2].copy_from_slice(&new.to_le_bytes());
                }
                16 => {
                    b[base + 2 * c..base + 2 * c + 2].copy_from_slice(&(value as u16).to_le_bytes())
                }
                _ => b[base + 4 * c..base + 4 * c + 4].copy_from_slice(&value.to_le_bytes()),
            }
        }
    }
}

fn find<'a>(s: &'a Scan, name: &str) -> &'a Entry {
    s.entries
        .iter()
        .find(|e| e.name == name && !e.deleted)
        .unwrap_or_else(|| panic!("{name}"))
}

fn damage(bits: u32, kib: u64) {
    if !have_tools(TOOLS) {
        return;
    }
    let s = Scratch::new(&format!("corrupt{bits}"));
    let img = build(&s, bits, kib, 60);
    let good = std::fs::read(&img).unwrap();
    let base = scan_bytes(good.clone()).expect("the undamaged image opens");
    let l = layout(&good, bits);
    let file = find(&base, "Deep Inside.bin");
    let many = find(&base, "many");
    let level2 = find(&base, "level2");
    let level1 = find(&base, "level1");
    let warned = |scan: &Scan, what: &str| {
        assert!(
            scan.warnings.iter().any(|w| w.contains(what)),
            "no {what:?} in {:?}",
            scan.warnings
        );
    };

    // A FAT entry pointing at itself.
    let mut b = good.clone();
    l.set(&mut b, l.first_cluster(file), l.first_cluster(file));
    warned(&scan_bytes(b).unwrap(), "loops");

    // A folder's chain running on into the root folder (FAT32) or into another folder's first cluster.
    let mut b = good.clone();
    let target = if bits == 32 {
        l.root_cluster
    } else {
        l.first_cluster(level1)
    };
    l.set(&mut b, l.last_cluster(many), target);
    warned(&scan_bytes(b).unwrap(), "belongs to id");

    // A cluster number past the end.
    let mut b = good.clone();
    let past = match bits {
        12 => 0xFF0,
        16 => 0xFFF0,
        _ => 0x0FFF_FFF0,
    };
    l.set(&mut b, l.first_cluster(file), past);
    warned(&scan_bytes(b).unwrap(), "outside the cluster heap");

    // A free mark mid-chain.
    let mut b = good.clone();
    l.set(&mut b, l.first_cluster(file), 0);
    warned(&scan_bytes(b).unwrap(), "free mark");

    // A folder whose entry points at its grandparent: not entered twice.
    let mut b = good.clone();
    let level3 = find(&base, "level3");
    // level3's short entry is in level2's first cluster; find it by its name bytes.
    let dir = l.first_cluster(level2);
    let start = (l.heap + u64::from(dir - 2) * l.cluster_size) as usize;
    let slot = (start..start + l.cluster_size as usize)
        .step_by(32)
        .find(|&o| &b[o..o + 11] == b"LEVEL3     ")
        .expect("level3's entry");
    let up = l.first_cluster(level1);
    b[slot + 26..slot + 28].copy_from_slice(&(up as u16).to_le_bytes());
    b[slot + 20..slot + 22].copy_from_slice(&((up >> 16) as u16).to_le_bytes());
    let _ = level3;
    let looped = scan_bytes(b).unwrap();
    warned(&looped, "belongs to id");
    assert!(looped.entries.len() < base.entries.len() + 10);

    // A long name whose checksum does not fit its short entry: the 8.3 name, and a warning. (TSK does not check
    // the checksum and would still show the long name; the bytes say the long name belongs to another entry.)
    let mut b = good.clone();
    let level4 = find(&base, "level4");
    let dir = l.first_cluster(level4);
    let start = (l.heap + u64::from(dir - 2) * l.cluster_size) as usize;
    let slot = (start..start + l.cluster_size as usize)
        .step_by(32)
        .find(|&o| b[o..o + 6] == *b"DEEPIN" && b[o + 11] & 0x3F != 0x0F)
        .expect("the short entry of Deep Inside.bin");
    assert_eq!(b[slot - 32 + 11], 0x0F, "a long-name entry before it");
    let mut o = slot - 32;
    while b[o + 11] == 0x0F {
        b[o + 13] ^= 0x55;
        o -= 32;
    }
    let bad_lfn = scan_bytes(b).unwrap();
    warned(&bad_lfn, "does not match");
    let e = bad_lfn.entries.iter().find(|e| e.id == file.id).unwrap();
    assert!(
        e.name.starts_with("DEEPIN~") && e.name.ends_with(".BIN"),
        "{e:?}"
    );
    assert_eq!(e.short_name, None);

    // Cut short at several points: open refuses or the scan warns.
    for cut in [
        0,
        100,
        512,
        l.fat_offset + 7,
        l.fat_offset + l.fat_bytes + 3,
        l.heap as usize + 5000,
        good.len() / 2,
        good.len() - 1,
    ] {
        let b = good[..cut.min(good.len())].to_vec();
        if let Some(scan) = scan_bytes(b) {
            assert!(
                !scan.warnings.is_empty() || cut >= good.len() - 512,
                "cut at {cut}: no warning"
            );
        }
    }

    // Random bytes flipped in the FAT and the folders (xorshift, fixed seed).
    let mut regions: Vec<(usize, usize)> = vec![(l.fat_offset, l.fat_bytes)];
    for e in base
        .entries
        .iter()
        .filter(|e| e.kind == uffs_fs::Kind::Folder)
    {
        for r in &e.runs {
            regions.push((r.offset as usize, r.len as usize));
        }
    }
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(bits);
    let mut rnd = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut warnings = 0;
    for _ in 0..60 {
        let mut b = good.clone();
        for _ in 0..40 {
            let (o, n) = regions[(rnd() % regions.len() as u64) as usize];
            let at = o + (rnd() % n as u64) as usize;
            if at < b.len() {
                b[at] ^= 1 << (rnd() % 8);
            }
        }
        if let Some(scan) = scan_bytes(b) {
            warnings += usize::from(!scan.warnings.is_empty());
            assert!(scan.entries.len() < 4 * good.len() / 32);
        }
    }
    assert!(warnings > 0);
}

#[test]
fn fat12_damage_is_warned_not_fatal() {
    damage(12, 4096);
}

#[test]
fn fat16_damage_is_warned_not_fatal() {
    damage(16, 32 * 1024);
}

#[test]
fn fat32_damage_is_warned_not_fatal() {
    damage(32, 40 * 1024);
}

#[test]
fn garbage_is_refused_or_scanned() {
    let mut state = 42u64;
    for n in [0usize, 1, 511, 512, 4096, 65536] {
        for _ in 0..50 {
            let b: Vec<u8> = (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let _ = uffs_fat::probe(&b);
            let _ = scan_bytes(b);
        }
    }
}
