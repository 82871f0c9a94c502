//! APFS containers read raw, checked against The Sleuth Kit (`pstat` for the volumes, `fls -P apfs -B APSB`,
//! `icat`): a container macOS made (dfvfs's `apfs.raw`, tests/data/mac-public) and containers
//! `scripts/make-apfs.py` writes byte by byte from Apple's reference (nothing on Linux writes a populated APFS
//! container). Every path with its inode number, kind, size, four times, owner and group as `fls -r -p -l` lists
//! them; every file's bytes as `icat` reads them; symlink targets as `fls -m` prints them.

#![cfg(unix)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::fatvol::{out, sha256_hex};
use common::*;
use unicode_normalization::UnicodeNormalization;

fn tsk_args<'a>(apsb: &'a str, img: &'a Path, more: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["-P", "apfs", "-B", apsb];
    a.extend_from_slice(more);
    a.push(path_str(img));
    a
}

/// `fls -r -p -l` of the volume at `apsb` by path (composed, as uffs prints names); `more`: `-S XID` for a
/// snapshot.
fn fls(img: &Path, apsb: u64, more: &[&str]) -> BTreeMap<String, FlsRow> {
    let b = apsb.to_string();
    let mut args = vec!["-P", "apfs", "-B", b.as_str()];
    args.extend_from_slice(more);
    fls_long(img, &args)
}

/// Symlink targets as `fls -m` prints them (`/a_link -> target`).
fn fls_links(img: &Path, apsb: u64) -> BTreeMap<String, String> {
    let b = apsb.to_string();
    String::from_utf8(out("fls", &tsk_args(&b, img, &["-r", "-m", "/"])))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let name = l.split('|').nth(1)?;
            let (p, t) = name.split_once(" -> ")?;
            Some((p.nfc().collect(), t.to_string()))
        })
        .collect()
}

/// `SOURCE@N`.
fn at(img: &Path, n: usize) -> PathBuf {
    PathBuf::from(format!("{}@{n}", img.display()))
}

/// Everything uffs says of volume `n` (from 1) of `img` that TSK says too, compared; the differences.
/// `packed`: the paths of compressed files, which TSK 4.11 does not decode on APFS (it lists them empty), and
/// the bytes written to each: their sizes and contents are compared with those.
fn differences_from_tsk(img: &Path, n: usize, packed: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut wrong = Vec::new();
    let apsb = apfs_apsb_blocks(img)[n - 1];
    let want = fls(img, apsb, &[]);
    let source = at(img, n);
    let rows = export(&source, &[]);
    let got: BTreeMap<String, &std::collections::HashMap<String, String>> = rows
        .iter()
        .filter(|r| r["path"] != "/")
        .map(|r| (r["path"].clone(), r))
        .collect();
    for p in want.keys().filter(|p| !got.contains_key(*p)) {
        wrong.push(format!("only fls lists {p}"));
    }
    for (p, r) in &got {
        let Some((inode, kind, times, size, gid, uid)) = want.get(p) else {
            wrong.push(format!("only uffs lists {p}"));
            continue;
        };
        let uffs_kind = match r["kind"].as_str() {
            "folder" => "d/d",
            "symlink" => "l/l",
            _ => "r/r",
        };
        let uffs_times =
            ["modified", "accessed", "mft_changed", "created"].map(|c| fls_time(&r[c]));
        // TSK gives a symlink no size (its target is in an attribute); uffs the target's length.
        let size = match packed.get(p) {
            Some(bytes) => bytes.len() as u64,
            None if kind == "l/l" => r["size"].parse().unwrap(),
            None => *size,
        };
        let mine = (
            r["record"].parse::<u64>().unwrap(),
            uffs_kind,
            &uffs_times,
            r["size"].parse::<u64>().unwrap(),
            r["gid"].parse::<u32>().unwrap_or(0),
            r["uid"].parse::<u32>().unwrap_or(0),
        );
        if mine != (*inode, kind.as_str(), times, size, *gid, *uid) {
            wrong.push(format!(
                "{p}: uffs {mine:?}, fls {:?}",
                (inode, kind, times, size, gid, uid)
            ));
        }
    }
    for (p, target) in fls_links(img, apsb) {
        match got.get(&p) {
            Some(r) if r["link_target"] == target => {}
            Some(r) => wrong.push(format!(
                "{p}: uffs links to {}, fls to {target}",
                r["link_target"]
            )),
            None => {}
        }
    }
    // Every file's bytes, as icat reads the inode (a sample of large folders' files).
    let hashes = run_ok(uffs().args(["hash", "--source"]).arg(&source));
    let b = apsb.to_string();
    let mut hashed = 0;
    for line in String::from_utf8_lossy(&hashes.stdout).lines() {
        let (hex, p) = line.split_once("  ").unwrap();
        let Some((inode, kind, _, size, ..)) = want.get(p) else {
            continue;
        };
        if kind == "l/l" || (p.contains("/file-") && !p.ends_with("0.txt")) {
            continue;
        }
        // icat finds no data stream in an empty file: nothing to read.
        let icat = if let Some(bytes) = packed.get(p) {
            sha256_hex(bytes)
        } else if *size == 0 {
            sha256_hex(b"")
        } else {
            let mut args = tsk_args(&b, img, &[]);
            let inode = inode.to_string();
            args.push(&inode);
            sha256_hex(&out("icat", &args))
        };
        if hex != icat {
            wrong.push(format!("{p} (inode {inode}): uffs {hex}, icat {icat}"));
        }
        hashed += 1;
    }
    if hashed == 0 {
        wrong.push("no file hashed".into());
    }
    // Resource forks: the stream `FILE:rsrc` of every file whose `com.apple.ResourceFork` attribute istat lists
    // (a sample of large folders' files; a compressed file's holds its data), with the bytes icat reads from it.
    let streams = resource_forks(&source);
    for (p, (inode, kind, ..)) in &want {
        if kind != "r/r" || (p.contains("/file-") && !p.ends_with("0.txt")) {
            continue;
        }
        let id = inode.to_string();
        let mut args = tsk_args(&b, img, &[]);
        args.push(&id);
        let istat = String::from_utf8_lossy(&out("istat", &args)).into_owned();
        let fork = istat_fork_size(&istat)
            .filter(|_| !packed.contains_key(p) && !istat.contains("DECMPFS"));
        if fork.as_ref() != streams.get(p) {
            wrong.push(format!(
                "{p}: resource fork of uffs {:?}, istat {fork:?}",
                streams.get(p)
            ));
            continue;
        }
        if fork.is_some() {
            let mine = run_ok(uffs().arg("cat").arg(&source).arg(format!("{p}:rsrc"))).stdout;
            let attr = format!("{inode}-4353-1");
            let mut args = tsk_args(&b, img, &[]);
            args.push(&attr);
            if mine != out("icat", &args) {
                wrong.push(format!("{p}:rsrc: uffs cat and icat {attr} differ"));
            }
        }
    }
    wrong
}

/// The paths of `source`, sorted.
fn paths(source: &Path) -> Vec<String> {
    let mut p: Vec<String> = export(source, &[])
        .into_iter()
        .map(|r| r["path"].clone())
        .collect();
    p.sort();
    p
}

#[test]
fn a_container_macos_made_reads_as_tsk_reads_it() {
    let img = data("mac-public/dfvfs-apfs.raw");
    let wrong = differences_from_tsk(&img, 1, &BTreeMap::new());
    assert!(wrong.is_empty(), "{wrong:#?}");
    // The container read whole: its one volume a folder named as the volume is, the same entries below it.
    let alone = paths(&at(&img, 1));
    let whole = paths(&img);
    let want: Vec<String> = alone
        .iter()
        .map(|p| {
            if p == "/" {
                "/apfs_test".to_string()
            } else {
                format!("/apfs_test{p}")
            }
        })
        .chain(["/".to_string()])
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(whole, want);
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
    for fact in [
        "APFS container, 1 volumes",
        "d08a9fa0-d5a5-458b-813e-ebf9bf5d5338",
        "apfs_test (no role), names case-insensitive",
        "904 free",
        "checkpoint  transaction 4",
    ] {
        assert!(info.contains(fact), "{fact}: {info}");
    }
    let rows = export(&at(&img, 1), &[]);
    let link = rows.iter().find(|r| r["path"] == "/a_link").unwrap();
    assert_eq!(link["link_target"], "a_directory/another_file");
    assert_eq!(link["mode"], "lrwxr-xr-x");
    // A volume the container does not hold: one line naming those it does.
    let o = uffs()
        .arg("--source")
        .arg(at(&img, 2))
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("has no volume 2 (volumes: @1 apfs_test)"),
        "{err}"
    );
}

/// A container in partition 2 of a GPT disk, typed Apple APFS as a Mac's is: `DISK@2` reads the container,
/// `DISK@2@1` its volume 1, the same entries as the container's file gives.
#[test]
fn a_container_in_a_partition_of_a_gpt_disk() {
    let dir = scratch("apfs-gpt");
    let container = std::fs::read(data("mac-public/dfvfs-apfs.raw")).unwrap();
    let disk = dir.join("mac.img");
    std::fs::write(&disk, vec![0u8; 8 << 20]).unwrap();
    let start = 4096u64;
    let end = start + container.len() as u64 / 512 - 1;
    run_ok(std::process::Command::new("sgdisk").args([
        "-n",
        "1:2048:4095",
        "-t",
        "1:EF00",
        "-n",
        &format!("2:{start}:{end}"),
        "-t",
        "2:7C3457EF-0000-11AA-AA11-00306543ECAC",
        path_str(&disk),
    ]));
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&disk).unwrap();
        f.seek(SeekFrom::Start(start * 512)).unwrap();
        f.write_all(&container).unwrap();
    }
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&disk)).stdout).unwrap();
    assert!(info.contains("apple-apfs"), "{info}");
    let alone = paths(&at(&data("mac-public/dfvfs-apfs.raw"), 1));
    assert!(alone.len() > 10);
    assert_eq!(
        paths(&PathBuf::from(format!("{}@2@1", disk.display()))),
        alone
    );
    assert_eq!(
        paths(&at(&disk, 2)),
        paths(&data("mac-public/dfvfs-apfs.raw"))
    );
    // A partition that is no container of volumes has none to pick.
    let o = uffs()
        .arg("--source")
        .arg(format!("{}@1@1", disk.display()))
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let o = uffs()
        .arg("--source")
        .arg(format!("{}@2@3", disk.display()))
        .arg("x")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("has no volume 3"),
        "{o:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The blocks of B-tree roots of object subtype `subtype` (0xE a file-system tree, 0xB an object map's tree),
/// every version the image holds, in an image of 4 KiB blocks.
fn tree_roots(img: &[u8], subtype: u32) -> Vec<usize> {
    img.chunks(4096)
        .enumerate()
        .filter(|(_, b)| {
            let t = u32::from_le_bytes(b[24..28].try_into().unwrap());
            let s = u32::from_le_bytes(b[28..32].try_into().unwrap());
            t & 0xFFFF == 2 && s == subtype
        })
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn damaged_containers_say_what_is_wrong() {
    let dir = scratch("apfs-damage");
    let good = std::fs::read(data("mac-public/dfvfs-apfs.raw")).unwrap();
    let run = |img: &Path, source: &Path| {
        let o = uffs()
            .arg("--source")
            .arg(source)
            .arg("*")
            .output()
            .unwrap();
        let _ = img;
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // The file-system tree's root overwritten: the volume read alone is refused in one line; the container read
    // whole lists the volume's folder, says why it is empty and is partial (exit 3).
    let mut bad = good.clone();
    for root in tree_roots(&good, 0xE) {
        bad[root * 4096 + 100..root * 4096 + 200].fill(0xA5);
    }
    let img = dir.join("fstree.raw");
    std::fs::write(&img, &bad).unwrap();
    let (code, _, err) = run(&img, &at(&img, 1));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("checksum is wrong"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, listed, err) = run(&img, &img);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(listed.trim(), "/apfs_test", "{err}");
    assert!(err.contains("cannot read folder /apfs_test"), "{err}");
    // The container's superblock in block 0 damaged: the checkpoint's copy is read, the same entries.
    let mut bad = good.clone();
    bad[200..300].fill(0);
    let img = dir.join("nxsb.raw");
    std::fs::write(&img, &bad).unwrap();
    let (code, listed, err) = run(&img, &img);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(listed, run(&img, &data("mac-public/dfvfs-apfs.raw")).1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The trees the writer's containers hold: nested folders, a folder of 3,000 files (a file-system tree of
/// several levels), NFC and NFD names, an empty file, a symlink, a hard-linked pair, an extended attribute, a
/// resource fork, files to compress, a sparse file, a file to clone.
fn write_tree(src: &Path) {
    let d = src.join("many/sub");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(src.join("a.txt"), "hello\n").unwrap();
    std::fs::write(src.join("empty"), "").unwrap();
    std::fs::write(src.join("café.txt"), "composed\n").unwrap();
    std::fs::write(src.join("nai\u{0308}ve.txt"), "decomposed\n").unwrap();
    std::fs::write(src.join("日本語のファイル名.txt"), "日本\n").unwrap();
    for i in 0..3000 {
        std::fs::write(src.join(format!("many/file-{i:04}.txt")), format!("{i}\n")).unwrap();
    }
    let big: Vec<u8> = (0..600_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(d.join("big.bin"), &big).unwrap();
    std::fs::write(d.join("clone.bin"), &big).unwrap();
    let mut sparse = vec![b'a'; 5000];
    sparse.extend(std::iter::repeat_n(0u8, 40_000));
    sparse.extend(std::iter::repeat_n(b'b', 3000));
    std::fs::write(d.join("sparse.bin"), sparse).unwrap();
    std::fs::create_dir_all(src.join("packed")).unwrap();
    let lines = |n: u32| (1..=n).map(|i| format!("{i}\n")).collect::<String>();
    std::fs::write(src.join("packed/small.txt"), lines(300)).unwrap();
    std::fs::write(src.join("packed/big.txt"), lines(100_000)).unwrap();
    std::fs::write(src.join("forked"), "data fork\n").unwrap();
    std::fs::write(src.join("forked.rsrc"), "resource fork\n").unwrap();
    std::os::unix::fs::symlink("a.txt", src.join("link")).unwrap();
    std::fs::hard_link(src.join("a.txt"), d.join("hard")).unwrap();
}

/// `scripts/make-apfs.py IMG ARGS`.
fn make_apfs(img: &Path, args: &[&str]) {
    run_ok(
        tool("python3")
            .arg(repo().join("scripts/make-apfs.py"))
            .arg(img)
            .args(args),
    );
}

#[test]
fn containers_written_from_the_reference_read_as_tsk_reads_them() {
    let dir = scratch("apfs-written");
    let (now, before) = (dir.join("now"), dir.join("before"));
    write_tree(&now);
    std::fs::create_dir_all(before.join("old")).unwrap();
    std::fs::write(before.join("a.txt"), "an earlier a.txt\n").unwrap();
    std::fs::write(before.join("old/gone.txt"), "removed since\n").unwrap();
    let img = dir.join("mac.img");
    let vol = |name: &str, d: &Path| format!("{name}={}", d.display());
    for method in ["zlib", "lzvn"] {
        make_apfs(
            &img,
            &[
                "--volume",
                &vol("Macintosh HD", &now),
                "--volume",
                &vol("Data", &now),
                "--case-sensitive",
                "Data",
                "--role",
                "Data=data",
                "--snapshot",
                &vol("Macintosh HD=before", &before),
                "--compress",
                "packed/*",
                "--compress-method",
                method,
                "--sparse",
                "many/sub/sparse.bin",
                "--clone",
                "many/sub/clone.bin=many/sub/big.bin",
            ],
        );
        let packed: BTreeMap<String, Vec<u8>> = ["/packed/small.txt", "/packed/big.txt"]
            .into_iter()
            .map(|p| (p.to_string(), std::fs::read(now.join(&p[1..])).unwrap()))
            .collect();
        for n in [1, 2] {
            let wrong = differences_from_tsk(&img, n, &packed);
            assert!(wrong.is_empty(), "{method}, volume {n}: {wrong:#?}");
        }
    }
    // The container read whole: both volumes, each a folder.
    let whole = paths(&img);
    for p in [
        "/Macintosh HD/café.txt",
        "/Data/naïve.txt",
        "/Data/many/sub/hard",
    ] {
        assert!(whole.contains(&p.to_string()), "{p}");
    }
    let found = run_ok(uffs().arg("--source").arg(&img).arg("naïve"));
    assert_eq!(
        String::from_utf8_lossy(&found.stdout)
            .lines()
            .collect::<Vec<_>>(),
        ["/Macintosh HD/naïve.txt", "/Data/naïve.txt"]
    );
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
    for fact in [
        "APFS container, 2 volumes",
        "@1          Macintosh HD (no role), names case-insensitive",
        "@2          Data (Data), names case-sensitive",
        "@1 snapshots snap2 before",
    ] {
        assert!(info.contains(fact), "{fact}: {info}");
    }
    // The snapshot: as fls -S reads it, found by --snapshots and read alone.
    let apsb = apfs_apsb_blocks(&img)[0];
    let want: Vec<(String, u64)> = fls(&img, apsb, &["-S", "2"])
        .into_iter()
        .map(|(p, row)| (p, row.0))
        .collect();
    let snap = PathBuf::from(format!("{}@1@snap2", img.display()));
    let mut got: Vec<(String, u64)> = export(&snap, &[])
        .into_iter()
        .filter(|r| r["path"] != "/")
        .map(|r| (r["path"].clone(), r["record"].parse().unwrap()))
        .collect();
    got.sort();
    assert_eq!(got, want);
    let o = run_ok(
        uffs()
            .arg("--source")
            .arg(&img)
            .arg("--snapshots")
            .arg("a.txt"),
    );
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(listed.contains("@snap2:/a.txt"), "{listed}");
    let cat = run_ok(uffs().arg("cat").arg(&snap).arg("/a.txt"));
    assert_eq!(cat.stdout, b"an earlier a.txt\n");
    // An encrypted volume: named so, refused alone, left out (partial) beside the others.
    make_apfs(
        &img,
        &[
            "--volume",
            &vol("Open", &before),
            "--volume",
            &vol("Locked", &before),
            "--encrypted",
            "Locked",
        ],
    );
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
    assert!(
        info.contains("Locked (no role)") && info.contains("ENCRYPTED (not read)"),
        "{info}"
    );
    let o = uffs()
        .arg("--source")
        .arg(at(&img, 2))
        .arg("*")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("volume Locked is encrypted"));
    let o = uffs().arg("--source").arg(&img).arg("*").output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        listed.contains("/Open/old/gone.txt") && listed.contains("/Locked\n"),
        "{listed}"
    );
    assert!(!listed.contains("/Locked/"), "{listed}");
    let _ = std::fs::remove_dir_all(&dir);
}
