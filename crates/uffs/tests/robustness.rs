//! Damaged input: a torn record is counted and skipped while the scan goes on; random byte flips and truncations
//! of real images never make uffs panic or hang, and what is intact is still indexed.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::*;

/// A small deterministic generator (xorshift64*), so failures are reproducible from the seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn export_raw(source: &Path) -> Output {
    let t = Instant::now();
    let out = uffs()
        .args(["export", "--deleted", "--streams", "--format", "csv"])
        .arg(source)
        .output()
        .expect("run uffs");
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "uffs took {:?} on {}",
        t.elapsed(),
        source.display()
    );
    out
}

/// Exit 0 (indexed), 3 (indexed, but some records could not be read: a truncated image) or 2 (a clear error)
/// are fine; anything else is a panic or a crash.
fn assert_no_crash(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked"),
        "{what}: uffs panicked: {stderr}"
    );
    let code = out.status.code();
    assert!(
        matches!(code, Some(0) | Some(2) | Some(3)),
        "{what}: uffs exited with {:?}: {stderr}",
        out.status
    );
    if code == Some(2) {
        assert!(
            stderr.starts_with("uffs: error: "),
            "{what}: error is not one clear line: {stderr}"
        );
    }
}

#[test]
fn torn_record_is_counted_and_the_rest_is_indexed() {
    let dir = scratch("torn");
    let mut mft = std::fs::read(data("windows-xp-mft/MFT")).expect("sample");
    let before = csv_rows(&export_raw(&data("windows-xp-mft/MFT")).stdout);
    // Record 40's second 512-byte stride must end with the update sequence number; change it: a torn write.
    let end = 40 * 1024 + 1022;
    mft[end] ^= 0xFF;
    let torn = dir.join("MFT");
    std::fs::write(&torn, &mft).expect("write");
    let out = export_raw(&torn);
    assert_no_crash(&out, "torn record");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("skipped 1 corrupt"),
        "corrupt record not reported: {stderr}"
    );
    let after = csv_rows(&out.stdout);
    let lost: Vec<_> = before.iter().filter(|r| r["record"] == "40").collect();
    assert!(!lost.is_empty(), "record 40 had no entry to begin with");
    assert_eq!(
        after.len(),
        before.len() - lost.len(),
        "more than record 40's entries were lost"
    );
    assert!(after.iter().all(|r| r["record"] != "40"));
}

fn damaged_copies(sample: &str, seeds: u64, flips: u64, region: std::ops::Range<usize>) {
    let dir = scratch(&format!("damage-{}", sample.replace('/', "-")));
    let orig = std::fs::read(data(sample)).expect("sample");
    for seed in 1..=seeds {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut img = orig.clone();
        let end = region.end.min(img.len());
        for _ in 0..flips {
            let at = region.start + rng.below((end - region.start) as u64) as usize;
            img[at] = rng.next() as u8;
        }
        // Every fourth copy is also truncated somewhere.
        if seed % 4 == 0 {
            img.truncate(rng.below(img.len() as u64) as usize);
        }
        let path = dir.join(format!("seed{seed}"));
        std::fs::write(&path, &img).expect("write");
        let out = export_raw(&path);
        assert_no_crash(&out, &format!("{sample} seed {seed}"));
    }
}

#[test]
fn random_damage_to_a_raw_mft_never_crashes() {
    damaged_copies("windows-xp-mft/MFT", 24, 2000, 0..13_402_112);
}

#[test]
fn random_damage_to_a_volume_never_crashes() {
    // testfs1's $MFT starts at byte 16384 (cluster 32 of 512 bytes); damage the boot sector, the MFT and beyond.
    damaged_copies("linux-made/testfs1", 32, 300, 0..700_000);
}

#[test]
fn a_truncated_volume_keeps_what_it_can_read() {
    let dir = scratch("truncated");
    let img = std::fs::read(data("linux-made/testfs1")).expect("sample");
    // Keep the boot sector and the first 300 MFT records (the MFT starts at byte 16384).
    let cut = dir.join("testfs1");
    std::fs::write(&cut, &img[..16384 + 300 * 1024]).expect("write");
    let out = export_raw(&cut);
    assert_no_crash(&out, "truncated volume");
    // Exit 3: the export is partial (records past the cut could not be read).
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unreadable") && stderr.contains("partial"),
        "unreadable records not reported: {stderr}"
    );
    // testfs1's $MFT has 6 extents and only the first lies inside the cut: what it maps is kept, unchanged.
    let rows = csv_rows(&out.stdout);
    let full = csv_rows(&export_raw(&data("linux-made/testfs1")).stdout);
    assert!(rows.len() >= 200, "only {} entries kept", rows.len());
    for r in &rows {
        if r["path"].starts_with("/$Orphan") {
            continue;
        }
        assert!(full.contains(r), "entry changed by the truncation: {r:?}");
    }
}

/// A damaged index file is never shown: a one-shot query (which opens it in O(1) and checks what it read) is
/// refused with a clear message or answers exactly as the intact file does; a whole read (`export`, as the daemon
/// reads) refuses it. Damage: a flipped byte in each section, two sections' bytes traded, a cut, another version.
#[test]
fn damaged_index_files_are_refused_or_answer_right() {
    let dir = scratch("damaged-index");
    let good = dir.join("good.uffs");
    run_ok(
        uffs()
            .arg("index")
            .arg(data("windows-xp-mft/MFT"))
            .arg("-o")
            .arg(&good),
    );
    let bytes = std::fs::read(&good).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let sections: Vec<(usize, std::ops::Range<usize>)> = (0..u32_at(12))
        .map(|i| {
            let e = 128 + i * 32;
            (u32_at(e), u64_at(e + 8)..u64_at(e + 8) + u64_at(e + 16))
        })
        .collect();
    let queries: &[&[&str]] = &[
        &["system32", "--count"],
        &["kernel32.dll"],
        &["*.exe", "--sort", "size", "--limit", "5", "--format", "csv", "--columns", "path,size,allocated,created,modified,mft_changed,accessed,attributes,record,sequence,parent_record,reparse_tag,ext,tree_size,descendants,fn_created,fn_modified,fn_mft_changed,fn_accessed"],
        &["*.dll", "--sort", "path", "--limit", "30", "--format", "bodyfile"],
        &["", "--sort", "path", "--limit", "20"],
        &["", "--sort", "modified", "--reverse", "--limit", "5"],
        &["size:>100kb", "--sort", "name"],
        &["dm:2001..2009", "--count"],
        &["regex:^[a-z]+\\.ini$", "--sort", "created", "--format", "jsonl"],
    ];
    let run = |file: &Path, q: &[&str]| {
        uffs()
            .args(q)
            .arg("--index")
            .arg(file)
            .args(["--color", "never"])
            .output()
            .unwrap()
    };
    let want: Vec<Output> = queries.iter().map(|q| run(&good, q)).collect();
    let bad = dir.join("bad.uffs");
    let check = |what: &str, damaged: &[u8]| {
        std::fs::write(&bad, damaged).unwrap();
        for (q, w) in queries.iter().zip(&want) {
            let got = run(&bad, q);
            if got.status.code() == Some(2) {
                let err = String::from_utf8_lossy(&got.stderr);
                assert!(
                    got.stdout.is_empty(),
                    "{what}, {q:?}: refused after printing"
                );
                assert!(
                    err.contains("damaged") || err.contains("version") || err.contains("magic"),
                    "{what}, {q:?}: {err}"
                );
            } else {
                assert_eq!(got.stdout, w.stdout, "{what}, {q:?}: a wrong answer");
            }
        }
        let export = uffs().arg("export").arg(&bad).output().unwrap();
        assert_eq!(
            export.status.code(),
            Some(2),
            "{what}: a whole read accepted it"
        );
    };
    for (id, r) in &sections {
        if r.is_empty() {
            continue;
        }
        let mut d = bytes.clone();
        d[r.start + r.len() / 2] ^= 0x04;
        check(&format!("a flip in section {id}"), &d);
    }
    // Two sections of one length trade their bytes (the table still says where each was).
    let (a, b) = sections
        .iter()
        .flat_map(|x| sections.iter().map(move |y| (x, y)))
        .find(|(x, y)| {
            x.0 < y.0 && x.1.len() == y.1.len() && bytes[x.1.clone()] != bytes[y.1.clone()]
        })
        .map(|(x, y)| (x.1.clone(), y.1.clone()))
        .expect("two sections of one length");
    let mut d = bytes.clone();
    d[a.clone()].copy_from_slice(&bytes[b.clone()]);
    d[b].copy_from_slice(&bytes[a]);
    check("two sections traded", &d);
    check("a cut", &bytes[..bytes.len() * 2 / 3]);
    let mut d = bytes.clone();
    d[8] = 2;
    check("version 2", &d);
}
