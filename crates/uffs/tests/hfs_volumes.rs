//! HFS+ and HFSX volumes read raw, checked against The Sleuth Kit: a volume macOS made (dfvfs's
//! `hfsplus.raw`, tests/data/mac-public) and volumes `scripts/make-hfsplus.py` writes byte by byte from TN1150
//! (no Linux tool writes a populated HFS+ volume), each read by `fls`, `icat` and `blkls` too. Every path with its
//! catalog node id, kind, size, four times, owner and group as `fls -r -p -l` lists them; every file's bytes as
//! `icat` reads them; `du /` as the blocks the allocation file marks (`blkls -a`).

#![cfg(unix)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::fatvol::{icat, sha256_hex};
use common::*;

/// `fls -r -p -l IMG` by path (composed, as uffs prints names: TSK prints them as stored, decomposed).
fn fls(img: &Path) -> BTreeMap<String, FlsRow> {
    fls_long(img, &[])
}

/// Everything uffs says of `img` that TSK says too, compared; the differences, one line each.
fn differences_from_tsk(img: &Path) -> Vec<String> {
    let mut wrong = Vec::new();
    let want = fls(img);
    let rows = export(img, &[]);
    let got: BTreeMap<String, &std::collections::HashMap<String, String>> = rows
        .iter()
        .filter(|r| r["path"] != "/" && r["path"] != "/$Header")
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
        let mine = (
            r["record"].parse::<u64>().unwrap(),
            uffs_kind,
            &uffs_times,
            r["size"].parse::<u64>().unwrap(),
            r["gid"].parse::<u32>().unwrap_or(0),
            r["uid"].parse::<u32>().unwrap_or(0),
        );
        if mine != (*inode, kind.as_str(), times, *size, *gid, *uid) {
            wrong.push(format!(
                "{p}: uffs {mine:?}, fls {:?}",
                (inode, kind, times, size, gid, uid)
            ));
        }
    }
    // Every file's bytes (a symlink's are its target), as icat reads the inode.
    let hashes = run_ok(uffs().args(["hash", "--source"]).arg(img));
    let mut hashed = 0;
    for line in String::from_utf8_lossy(&hashes.stdout).lines() {
        let (hex, p) = line.split_once("  ").unwrap();
        let Some((inode, ..)) = want.get(p) else {
            continue;
        };
        // One process per file: a sample of large folders' files.
        if p.contains("/file-") && !p.ends_with("0.txt") {
            continue;
        }
        let icat = sha256_hex(&icat(img, *inode));
        if hex != icat {
            wrong.push(format!("{p} (inode {inode}): uffs {hex}, icat {icat}"));
        }
        hashed += 1;
    }
    if hashed == 0 {
        wrong.push("no file hashed".into());
    }
    // Resource forks: listed as the stream `FILE:rsrc` of every file whose fork istat gives a size (a sample of
    // large folders' files), with the bytes icat reads from attribute 4353 (TSK's HFS resource fork).
    let streams = resource_forks(img);
    for (p, (inode, kind, ..)) in &want {
        if kind != "r/r" || (p.contains("/file-") && !p.ends_with("0.txt")) || p.contains('$') {
            continue;
        }
        let istat = String::from_utf8_lossy(
            &run_ok(Command::new("istat").arg(img).arg(inode.to_string())).stdout,
        )
        .into_owned();
        // A compressed file's fork holds its data: no fork of its own.
        let fork = istat_fork_size(&istat).filter(|_| !istat.contains("Compressed"));
        if fork.as_ref() != streams.get(p) {
            wrong.push(format!(
                "{p}: resource fork of uffs {:?}, istat {fork:?}",
                streams.get(p)
            ));
            continue;
        }
        if fork.is_some() {
            let mine = run_ok(uffs().arg("cat").arg(img).arg(format!("{p}:rsrc"))).stdout;
            let theirs = run_ok(Command::new("icat").arg(img).arg(format!("{inode}-4353"))).stdout;
            if mine != theirs {
                wrong.push(format!("{p}:rsrc: uffs cat and icat {inode}-4353 differ"));
            }
        }
    }
    // du: the blocks the allocation file marks in use, as TSK lists them.
    let want = tsk_blocks_in_use(img);
    let du = du_root_allocated(img);
    if du != want {
        wrong.push(format!("du: uffs {du}, the allocation file {want}"));
    }
    wrong
}

#[test]
fn a_volume_macos_made_reads_as_tsk_reads_it() {
    let img = data("mac-public/dfvfs-hfsplus.raw");
    let wrong = differences_from_tsk(&img);
    assert!(wrong.is_empty(), "{wrong:#?}");
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
    for fact in [
        "HFS+ (version 4)",
        "hfsplus_test",
        "c7ad25cb22ff8791",
        "journal     no",
    ] {
        assert!(info.contains(fact), "{fact}: {info}");
    }
    let rows = export(&img, &[]);
    let link = rows.iter().find(|r| r["path"] == "/a_link").unwrap();
    assert_eq!(link["link_target"], "a_directory/another_file");
    assert_eq!(link["mode"], "lrwxr-xr-x");
}

/// The tree the writer's volumes hold: nested folders of a few thousand files (a catalog of several leaves under
/// an index node), Unicode names, an empty file, a symlink, a hard-linked pair, a file fragmented past its
/// record's eight extents, files to compress, one to remove from the catalog.
fn write_tree(src: &Path) {
    let d = src.join("many/sub");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(src.join("a.txt"), "hello\n").unwrap();
    std::fs::write(src.join("empty"), "").unwrap();
    std::fs::write(src.join("café.txt"), "café\n").unwrap();
    std::fs::write(src.join("Ünïcødé ñame €.txt"), "ü\n").unwrap();
    std::fs::write(src.join("日本語のファイル名.txt"), "日本\n").unwrap();
    for i in 0..2500 {
        std::fs::write(src.join(format!("many/file-{i:04}.txt")), format!("{i}\n")).unwrap();
    }
    let big: Vec<u8> = (0..600_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(d.join("big.bin"), big).unwrap();
    // Compressed by the writer as macOS does (decmpfs zlib): one in its attribute, one in its resource fork.
    std::fs::create_dir_all(src.join("packed")).unwrap();
    let lines = |n: u32| (1..=n).map(|i| format!("{i}\n")).collect::<String>();
    std::fs::write(src.join("packed/small.txt"), lines(300)).unwrap();
    std::fs::write(src.join("packed/big.txt"), lines(100_000)).unwrap();
    std::fs::write(src.join("gone.txt"), "removed from the catalog\n").unwrap();
    std::os::unix::fs::symlink("a.txt", src.join("link")).unwrap();
    std::fs::hard_link(src.join("a.txt"), d.join("hard")).unwrap();
}

/// `scripts/make-hfsplus.py SRC IMG ARGS`.
fn make_hfsplus(src: &Path, img: &Path, args: &[&str]) {
    run_ok(
        std::process::Command::new("python3")
            .arg(repo().join("scripts/make-hfsplus.py"))
            .arg(src)
            .arg(img)
            .args(args),
    );
}

#[test]
fn volumes_written_from_the_specification_read_as_tsk_reads_them() {
    let dir = scratch("hfs-written");
    let src = dir.join("src");
    write_tree(&src);
    // The Sleuth Kit 4.11 decodes decmpfs zlib and LZVN, not LZFSE: that volume's files are checked against
    // the tree they were written from instead.
    for (name, args, tsk) in [
        ("hfsx.img", &["--hfsx"][..], true),
        ("hfsplus.img", &[][..], true),
        (
            "small-blocks-lzvn.img",
            &[
                "--block-size",
                "512",
                "--node-size",
                "4096",
                "--compress-method",
                "lzvn",
            ][..],
            true,
        ),
        ("lzfse.img", &["--compress-method", "lzfse"][..], false),
    ] {
        let img = dir.join(name);
        let mut a = vec![
            "--size",
            "32M",
            "--fragment",
            "many/sub/big.bin",
            "--compress",
            "packed/small.txt",
            "--compress",
            "packed/big.txt",
            "--deleted",
            "gone.txt",
        ];
        a.extend_from_slice(args);
        make_hfsplus(&src, &img, &a);
        if tsk {
            let wrong = differences_from_tsk(&img);
            assert!(wrong.is_empty(), "{name}: {wrong:#?}");
        }
        let rows = export(&img, &[]);
        let by_path = |p: &str| {
            rows.iter()
                .find(|r| r["path"] == p)
                .unwrap_or_else(|| panic!("{name}: {p}"))
        };
        // A hard link is its indirect node's id, once per name; the fragmented file whole.
        assert_eq!(
            by_path("/a.txt")["record"],
            by_path("/many/sub/hard")["record"],
            "{name}"
        );
        let big = run_ok(uffs().arg("cat").arg(&img).arg("/many/sub/big.bin")).stdout;
        assert_eq!(
            big,
            std::fs::read(src.join("many/sub/big.bin")).unwrap(),
            "{name}"
        );
        // Compressed files: their length and bytes (icat agrees above, but for LZFSE), flagged compressed.
        for f in ["packed/small.txt", "packed/big.txt"] {
            let want = std::fs::read(src.join(f)).unwrap();
            let got = run_ok(uffs().arg("cat").arg(&img).arg(format!("/{f}"))).stdout;
            assert!(got == want, "{name}: {f}");
            let r = by_path(&format!("/{f}"));
            assert_eq!(r["size"], want.len().to_string(), "{name}: {f}");
            assert!(r["attributes"].contains('c'), "{name}: {f}: {r:?}");
        }
        // A record removed from its leaf, found in the node's slack with --deleted (TSK lists none on HFS+).
        assert!(!rows.iter().any(|r| r["path"] == "/gone.txt"), "{name}");
        let deleted = export(&img, &["--deleted"]);
        let gone = deleted
            .iter()
            .find(|r| r["path"] == "/gone.txt")
            .expect("/gone.txt with --deleted");
        assert_eq!(
            (gone["deleted"].as_str(), gone["size"].as_str()),
            ("true", "25"),
            "{name}"
        );
        // Stored decomposed, found and printed composed.
        let found = run_ok(uffs().args(["--source", path_str(&img), "café"])).stdout;
        assert_eq!(
            String::from_utf8_lossy(&found).trim(),
            "/café.txt",
            "{name}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_wrapped_volume_and_damaged_ones() {
    let dir = scratch("hfs-damage");
    let plain = std::fs::read(data("mac-public/dfvfs-hfsplus.raw")).unwrap();
    let want: Vec<String> = export(&data("mac-public/dfvfs-hfsplus.raw"), &[])
        .into_iter()
        .map(|r| r["path"].clone())
        .collect();
    // An HFS wrapper (a master directory block naming an embedded HFS+ volume) 8 KiB before it: read the same.
    let mut wrapped = vec![0u8; 8192];
    wrapped[1024..1026].copy_from_slice(b"BD");
    let blocks = (plain.len() / 4096 + 2) as u16;
    wrapped[1024 + 0x12..1024 + 0x14].copy_from_slice(&blocks.to_be_bytes());
    wrapped[1024 + 0x14..1024 + 0x18].copy_from_slice(&4096u32.to_be_bytes());
    wrapped[1024 + 0x7C..1024 + 0x7E].copy_from_slice(b"H+");
    wrapped[1024 + 0x7E..1024 + 0x80].copy_from_slice(&2u16.to_be_bytes());
    wrapped.extend_from_slice(&plain);
    // The wrapper's last two sectors: its alternate master directory block, and one reserved.
    wrapped.extend_from_slice(&[0u8; 1024]);
    let img = dir.join("wrapped.img");
    std::fs::write(&img, &wrapped).unwrap();
    let got: Vec<String> = export(&img, &[])
        .into_iter()
        .map(|r| r["path"].clone())
        .collect();
    assert_eq!(got, want);
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
    assert!(
        info.contains("inside an HFS volume, from byte 8192"),
        "{info}"
    );
    assert_eq!(
        run_ok(uffs().arg("cat").arg(&img).arg("/passwords.txt")).stdout,
        run_ok(
            uffs()
                .arg("cat")
                .arg(data("mac-public/dfvfs-hfsplus.raw"))
                .arg("/passwords.txt")
        )
        .stdout
    );
    // A header that does not add up: one line, exit 2.
    let mut bad = plain.clone();
    bad[1024 + 40..1024 + 44].copy_from_slice(&1000u32.to_be_bytes());
    let img = dir.join("bad-block-size.img");
    std::fs::write(&img, &bad).unwrap();
    let o = uffs().arg("info").arg(&img).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("allocation block size of 1000 bytes"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // The catalog's only leaf overwritten: a warning naming it, the volume's own files still listed.
    let mut bad = plain;
    let leaf = 0xba * 4096 + 4096;
    bad[leaf..leaf + 4096].fill(0xEE);
    let img = dir.join("bad-leaf.img");
    std::fs::write(&img, &bad).unwrap();
    let o = uffs()
        .args(["--source", path_str(&img), "*"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the catalog: node 1, marked in use, is no B-tree node"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("/$CatalogFile"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What a volume holds as uffs reads it: every path with its record, kind, size, mode and link target, and every
/// file's sha256.
fn contents(source: &Path) -> (Vec<String>, String) {
    let rows = export(source, &[])
        .into_iter()
        .map(|r| {
            format!(
                "{} {} {} {} {} {}",
                r["path"], r["record"], r["kind"], r["size"], r["mode"], r["link_target"]
            )
        })
        .collect();
    let hashes = run_ok(uffs().args(["hash", "--source"]).arg(source)).stdout;
    (rows, String::from_utf8(hashes).unwrap())
}

#[test]
fn dmg_images_macos_made_read_through_every_chunk_method() {
    // keramics' five images of one tree (hdiutil, one per chunk method; their disks' md5s are checked in
    // crates/image/tests/udif.rs): a GPT disk with an HFS+ partition, read the same through each.
    let first = data("mac-public/keramics-hfsplus_zlib.dmg");
    let want = contents(&first);
    assert!(want.0.len() > 20, "{want:?}");
    for method in ["adc", "bzip2", "lzfse", "lzma"] {
        let got = contents(&data(&format!("mac-public/keramics-hfsplus_{method}.dmg")));
        assert_eq!(got, want, "{method}");
    }
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&first)).stdout).unwrap();
    assert!(
        info.contains("UDIF (.dmg)") && info.contains("apple-hfs") && info.contains("HFS+"),
        "{info}"
    );
    // A hard link and the file it shares, as fls would number them (the indirect node's id); a Finder `/`.
    let rows = export(&first, &[]);
    let rec = |p: &str| {
        rows.iter()
            .find(|r| r["path"] == p)
            .unwrap_or_else(|| panic!("{p}"))["record"]
            .clone()
    };
    assert_eq!(rec("/file_hardlink1"), rec("/testdir1/testfile1"));
    assert!(rows.iter().any(|r| r["path"] == "/forward:slash"));
    let body = run_ok(uffs().arg("cat").arg(&first).arg("/testdir1/testfile1")).stdout;
    assert_eq!(
        body,
        run_ok(uffs().arg("cat").arg(&first).arg("/file_hardlink1")).stdout
    );
    assert!(!body.is_empty());
}

#[test]
fn a_disk_with_an_apple_partition_map() {
    // An Apple partition map made by parted (`mklabel mac`), an HFS+ volume written into its partition: the
    // partitions as mmls lists them (start and length in 512-byte sectors, type), the volume read through it as
    // it reads bare.
    let dir = scratch("hfs-apm");
    let src = dir.join("src");
    write_tree(&src);
    let vol = dir.join("vol.img");
    make_hfsplus(&src, &vol, &["--size", "24M"]);
    let disk = dir.join("apm.img");
    std::fs::File::create(&disk)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    run_ok(tool("parted").args(["-s"]).arg(&disk).args([
        "mklabel", "mac", "mkpart", "primary", "hfs+", "1MiB", "25MiB",
    ]));
    let bytes = std::fs::read(&vol).unwrap();
    let mut image = std::fs::read(&disk).unwrap();
    image[1 << 20..(1 << 20) + bytes.len()].copy_from_slice(&bytes);
    std::fs::write(&disk, &image).unwrap();
    let mmls: Vec<(u64, u64, String)> = String::from_utf8(run_ok(tool("mmls").arg(&disk)).stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 6 && f[1].parse::<u32>().is_ok()).then(|| {
                (
                    f[2].parse().unwrap(),
                    f[4].parse().unwrap(),
                    f[5].to_string(),
                )
            })
        })
        .collect();
    let info: serde_json::Value =
        serde_json::from_slice(&run_ok(uffs().arg("info").arg(&disk).arg("--json")).stdout)
            .unwrap();
    let mut got: Vec<(u64, u64, String)> = info["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["start"].as_u64().unwrap() / 512,
                p["size"].as_u64().unwrap() / 512,
                p["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let mut want = mmls;
    want.sort();
    assert_eq!(got, want);
    assert_eq!(info["kind"], "whole disk (APM partition table)", "{info}");
    let through = export(&PathBuf::from(format!("{}@2", disk.display())), &[]);
    let bare = export(&vol, &[]);
    let rows =
        |r: Vec<std::collections::HashMap<String, String>>| -> Vec<(String, String, String)> {
            r.into_iter()
                .map(|r| (r["path"].clone(), r["record"].clone(), r["size"].clone()))
                .collect()
        };
    assert_eq!(rows(through), rows(bare));
    let _ = std::fs::remove_dir_all(&dir);
}
