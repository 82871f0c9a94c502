//! `uffs hash` against `sha256sum` and `hashdeep` run over an ntfs-3g mount of the same volume: every file and
//! named stream of the content fixture (compressed, sparse, fragmented over extension records, resident), the
//! hashdeep format audited by hashdeep itself, known-file sets, the columns formats, and an encrypted file
//! reported and skipped while the others are hashed.

#![cfg(unix)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::live::Mounted;
use common::*;

/// The files (and `file:stream` streams) below `root` and their sha256, as `sha256sum` reads them through the
/// mount, by path from the volume's root.
fn sha256_over_mount(root: &Path, streams: &[String]) -> BTreeMap<String, String> {
    let (_, files) = common::live::walk(root);
    let mut paths: Vec<String> = files
        .iter()
        .map(|p| format!("/{}", p.to_str().unwrap()))
        .collect();
    paths.extend(streams.iter().cloned());
    let mut out = BTreeMap::new();
    for chunk in paths.chunks(200) {
        let mut cmd = tool("sha256sum");
        cmd.arg("--");
        for p in chunk {
            cmd.arg(root.join(&p[1..]));
        }
        let o = run_ok(&mut cmd);
        for (line, p) in String::from_utf8_lossy(&o.stdout).lines().zip(chunk) {
            let (hex, _) = line.trim_start_matches('\\').split_once("  ").unwrap();
            out.insert(p.clone(), hex.to_string());
        }
    }
    out
}

/// `uffs hash`'s sum lines as a map from path to hash.
fn sum_lines(stdout: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            let (hex, path) = l.split_once("  ").expect("HEX  PATH");
            (path.to_string(), hex.to_string())
        })
        .collect()
}

#[test]
fn every_file_and_stream_equals_sha256sum_over_the_mount() {
    let img = fixture("content.img");
    let dir = scratch("hash-mount");
    let out = run_ok(uffs().args(["hash", "--streams", "--source"]).arg(&img));
    let ours = sum_lines(&out.stdout);
    // The streams uffs lists are looked up through the mount by the same `file:stream` path.
    let streams: Vec<String> = ours.keys().filter(|p| p.contains(':')).cloned().collect();
    assert!(streams.len() >= 2, "no named streams hashed: {ours:?}");
    let m = Mounted::new(&img, &dir.join("mnt"));
    let theirs = sha256_over_mount(&m.dir, &streams);
    drop(m);
    // The volume's own files ($MFT and friends) are not in the mount; everything the mount has is in uffs's.
    let ours_user: BTreeMap<_, _> = ours
        .iter()
        .filter(|(p, _)| !p.starts_with("/$") && !p.contains("/$"))
        .map(|(p, h)| (p.clone(), h.clone()))
        .collect();
    assert_eq!(ours_user.len(), theirs.len(), "different sets of files");
    for (p, h) in &theirs {
        assert_eq!(ours_user.get(p), Some(h), "{p}");
    }
    // The hard cases are among them: compressed, fragmented over extension records, sparse, resident.
    for p in [
        "/compressed/text-1MiB.txt",
        "/compressed/holes.bin",
        "/fragmented/big.bin",
        "/sparse/holes.bin",
        "/sparse/uninitialized-tail.bin",
        "/plain/resident.txt",
    ] {
        assert!(theirs.contains_key(p), "{p} is not in the fixture");
    }
    // The columns formats carry the same hash.
    let jsonl = run_ok(
        uffs()
            .args(["hash", "--format", "jsonl", "big.bin", "--source"])
            .arg(&img),
    );
    let line = String::from_utf8_lossy(&jsonl.stdout);
    let row: serde_json::Value = serde_json::from_str(line.lines().next().expect("a row")).unwrap();
    assert_eq!(row["path"], "/fragmented/big.bin");
    assert_eq!(
        row["sha256"].as_str(),
        Some(theirs["/fragmented/big.bin"].as_str())
    );
}

#[test]
fn hashdeep_audits_what_uffs_hash_wrote() {
    let img = fixture("content.img");
    let dir = scratch("hash-hashdeep");
    let out = run_ok(
        uffs()
            .args(["hash", "--hashdeep", "--algo", "md5,sha256", "--source"])
            .arg(&img),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("%%%% HASHDEEP-1.0\n%%%% size,md5,sha256,filename\n"),
        "{text}"
    );
    let m = Mounted::new(&img, &dir.join("mnt"));
    // hashdeep knows the files by their paths in the mount; the volume's own files are not there.
    let mnt = m.dir.to_str().unwrap().to_string();
    let known: String = text
        .lines()
        .filter(|l| !l.contains(",/$"))
        .map(|l| {
            if l.starts_with('%') || l.starts_with('#') {
                format!("{l}\n")
            } else {
                let (head, path) = l.split_at(l.find(",/").unwrap() + 1);
                format!("{head}{mnt}{path}\n")
            }
        })
        .collect();
    let known_file = dir.join("known.hashdeep");
    std::fs::write(&known_file, known).unwrap();
    let mut audit = tool("hashdeep");
    audit
        .args(["-c", "md5,sha256", "-a", "-vv", "-k"])
        .arg(&known_file)
        .arg("-r")
        .arg(&m.dir);
    let a = audit.output().unwrap();
    let said = String::from_utf8_lossy(&a.stdout);
    drop(m);
    assert!(
        said.contains("Audit passed"),
        "{said}\n{}",
        String::from_utf8_lossy(&a.stderr)
    );
}

#[test]
fn known_sets_mark_and_drop_files() {
    let img = fixture("content.img");
    let dir = scratch("hash-known");
    let all = sum_lines(&run_ok(uffs().args(["hash", "--source"]).arg(&img)).stdout);
    assert!(all.len() > 10);
    // A sha256sum list of every other file, as sha256sum writes it.
    let mut list = String::new();
    let mut known = Vec::new();
    for (i, (p, h)) in all.iter().enumerate() {
        if i % 2 == 0 {
            list += &format!("{h}  {p}\n");
            known.push(p.clone());
        }
    }
    let set = dir.join("half.sha256");
    std::fs::write(&set, list).unwrap();
    let unknown = sum_lines(
        &run_ok(
            uffs()
                .args(["hash", "--unknown", "--known"])
                .arg(&set)
                .arg("--source")
                .arg(&img),
        )
        .stdout,
    );
    // A file with the same content as a known one is known too.
    let known_hashes: std::collections::HashSet<&String> = known.iter().map(|p| &all[p]).collect();
    let expect: BTreeMap<String, String> = all
        .iter()
        .filter(|(_, h)| !known_hashes.contains(h))
        .map(|(p, h)| (p.clone(), h.clone()))
        .collect();
    assert_eq!(unknown, expect);
    // The columns say which is which; md5 is computed too when the set carries only sha256 and md5 is asked.
    let rows = csv_rows(
        &run_ok(
            uffs()
                .args(["hash", "--algo", "md5", "--format", "csv", "--known"])
                .arg(&set)
                .arg("--source")
                .arg(&img),
        )
        .stdout,
    );
    assert_eq!(rows.len(), all.len());
    let set_name = set.file_name().unwrap().to_string_lossy().to_string();
    for r in &rows {
        let expect_known = known_hashes.contains(&all[&r["path"]]);
        assert_eq!(r["known"], expect_known.to_string(), "{r:?}");
        assert_eq!(r["md5"].len(), 32);
        // Which set knew it, and by which digest: the set carries sha256.
        let by = if expect_known {
            format!("{set_name} (sha256)")
        } else {
            String::new()
        };
        assert_eq!(r["known_by"], by, "{r:?}");
    }
    // Without --format, --known prints those columns too (a table on a terminal, else tab-separated or as the
    // results layer writes them): the digest the set was searched by, beside the one asked for.
    let out = String::from_utf8(
        run_ok(
            uffs()
                .args(["hash", "--algo", "md5", "--known"])
                .arg(&set)
                .arg("--source")
                .arg(&img),
        )
        .stdout,
    )
    .unwrap();
    assert!(out.to_lowercase().contains("known_by"), "{out}");
    assert!(out.contains(&format!("{set_name} (sha256)")), "{out}");
}

#[test]
fn an_encrypted_file_is_reported_and_the_others_hashed() {
    let img = fixture("content.img");
    let dir = scratch("hash-encrypted");
    let copy = dir.join("content.img");
    run_ok(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(&img)
            .arg(&copy),
    );
    let record = 76; // plain/resident.txt
    set_data_flag(&copy, record, 0x4000);
    let out = uffs()
        .args(["hash", "--source"])
        .arg(&copy)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/plain/resident.txt") && err.contains("encrypted"),
        "{err}"
    );
    assert!(err.contains("1 encrypted"), "{err}");
    let ours = sum_lines(&out.stdout);
    assert!(!ours.contains_key("/plain/resident.txt"));
    assert!(ours.len() > 10, "the other files were not hashed");
    std::fs::remove_dir_all(&dir).ok();
}

/// Points the first run of `record`'s non-resident `$DATA` far past the end of the volume.
fn break_runlist(image: &Path, record: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let bytes = std::fs::read(image).unwrap();
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap()) as usize;
    let cs = u16_at(0x0B) * bytes[0x0D] as usize;
    let mft = u64::from_le_bytes(bytes[0x30..0x38].try_into().unwrap()) as usize * cs;
    let rec = mft + record as usize * 1024;
    assert_eq!(&bytes[rec..rec + 4], b"FILE");
    let mut o = rec + u16_at(rec + 0x14);
    while u32_at(o) != 0x80 {
        assert_ne!(u32_at(o), 0xFFFF_FFFF, "no $DATA");
        o += u32_at(o + 4);
    }
    assert_eq!(bytes[o + 8], 1, "the $DATA of record {record} is resident");
    let runs = o + u16_at(o + 0x20);
    // One cluster at LCN 0x7FFFFFFF: a run no volume of this size has. (Not over a fixup position.)
    let bad = [0x41u8, 0x01, 0xFF, 0xFF, 0xFF, 0x7F, 0x00];
    assert!(runs + bad.len() <= o + u32_at(o + 4));
    assert!((runs - rec) % 512 + bad.len() < 510);
    let mut f = std::fs::OpenOptions::new().write(true).open(image).unwrap();
    f.seek(SeekFrom::Start(runs as u64)).unwrap();
    f.write_all(&bad).unwrap();
}

#[test]
fn a_damaged_runlist_is_reported_and_the_others_hashed() {
    let img = fixture("content.img");
    let dir = scratch("hash-runlist");
    let copy = dir.join("content.img");
    run_ok(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(&img)
            .arg(&copy),
    );
    let rows = csv_rows(
        &run_ok(uffs().args(["--source"]).arg(&copy).args([
            "one-cluster.bin",
            "--format",
            "csv",
            "--columns",
            "path,record",
        ]))
        .stdout,
    );
    let record: u64 = rows[0]["record"].parse().unwrap();
    let before = sum_lines(&run_ok(uffs().args(["hash", "--source"]).arg(&copy)).stdout);
    break_runlist(&copy, record);
    let out = uffs()
        .args(["hash", "--source"])
        .arg(&copy)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/plain/one-cluster.bin"), "{err}");
    assert!(err.contains("1 of"), "{err}");
    let after = sum_lines(&out.stdout);
    let mut expect = before.clone();
    expect.remove("/plain/one-cluster.bin");
    assert_eq!(after, expect, "the other files' hashes changed");
    std::fs::remove_dir_all(&dir).ok();
}
