//! Images that arrive in pieces or containers, read as the raw image they hold:
//! - split raw images, cut by `split` as `split -d` names them (`x.00`, `x.01`, …) and as FTK Imager does
//!   (`x.001`, `x.002`, …), with pieces that end in the middle of a sector;
//! - VHD, fixed and dynamic, made by `qemu-img convert -O vpc`, and a differencing one patched from it.
//!
//! Each must export byte for byte what the raw image exports, describe the same volume, and give the same file
//! contents (`uffs cat` of the raw image is held to TSK's `icat` by `cat.rs`), a partition of a whole disk
//! included.

#![cfg(unix)]

mod common;

use std::path::Path;

use common::containers::{described, split, stdout};
use common::*;

#[test]
fn a_split_volume_reads_as_its_raw_image() {
    let raw = fixture("content.img");
    let dir = scratch("split-volume");
    // Pieces of an odd size: reads cross their ends in the middle of sectors and records.
    let pieces = [
        split(&raw, &dir.join("dash-d"), "content.", 7_000_001, 2, 0),
        split(&raw, &dir.join("ftk"), "content.", 3_333_333, 3, 1),
    ];
    let raw_s = path_str(&raw);
    let want_export = stdout(&["export", raw_s, "--format", "csv", "--deleted", "--streams"]);
    let want_info = described(raw_s);
    for first in &pieces {
        let s = path_str(first);
        let count = std::fs::read_dir(first.parent().unwrap()).unwrap().count();
        assert!(count >= 4, "{s}: only {count} pieces");
        let info: serde_json::Value =
            serde_json::from_slice(&stdout(&["info", s, "--json"])).unwrap();
        assert_eq!(
            info["container"]["files"].as_array().unwrap().len(),
            count,
            "{info}"
        );
        let text = String::from_utf8(stdout(&["info", s])).unwrap();
        assert!(
            text.contains(&format!(
                "container     split raw image: {count} pieces\n  files       {count}: {s} to "
            )),
            "{text}"
        );
        reads_as_the_content_volume(s, &want_export, &want_info);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `source` (a container of `content.img`) against the raw image: its export byte for byte, `info`, the contents
/// of compressed, sparse, fragmented, stream and deleted files, and an index built from it.
fn reads_as_the_content_volume(source: &str, want_export: &[u8], want_info: &serde_json::Value) {
    let raw = fixture("content.img");
    let raw_s = path_str(&raw);
    let f = facts("content.img");
    let s = source;
    assert!(
        stdout(&["export", s, "--format", "csv", "--deleted", "--streams"]) == want_export,
        "{s}: its export differs from the raw image's"
    );
    assert_eq!(&described(s), want_info, "{s}");
    // Contents: compressed, sparse, fragmented, a named stream, a deleted file (its warning on stderr).
    for (key, stream) in [
        ("compressed_text_inode", ""),
        ("compressed_holes_inode", ""),
        ("sparse_holes_inode", ""),
        ("uninitialized_tail_inode", ""),
        ("fragmented_inode", ""),
        ("fragmented_stream_inode", ":frag"),
        ("deleted_fragmented_inode", ""),
    ] {
        let target = format!("{}{stream}", f[key]);
        let want = stdout(&["cat", raw_s, &target]);
        assert!(!want.is_empty(), "{key}: empty");
        assert!(
            stdout(&["cat", s, &target]) == want,
            "{s}: cat {target} ({key}) differs from the raw image's"
        );
    }
    // A query straight on the container, and an index built from it.
    let idx = std::path::PathBuf::from(format!("{s}.uffs"));
    run_ok(uffs().args(["index", s, "-o"]).arg(&idx));
    assert_eq!(
        stdout(&["*", "--index", path_str(&idx), "--count"]),
        stdout(&["*", "--source", raw_s, "--count"])
    );
    let _ = std::fs::remove_file(&idx);
}

/// `qemu-img convert -O vpc` of `image` into `to`, with `-o OPTIONS` when given.
fn vhd(image: &Path, to: &Path, options: Option<&str>) -> String {
    let mut c = tool("qemu-img");
    c.args(["convert", "-O", "vpc"]);
    if let Some(o) = options {
        c.args(["-o", o]);
    }
    run_ok(c.arg(image).arg(to));
    path_str(to).to_string()
}

#[test]
fn a_vhd_reads_as_the_image_it_holds() {
    let raw = fixture("content.img");
    let dir = scratch("vhd");
    let raw_s = path_str(&raw);
    let want_export = stdout(&["export", raw_s, "--format", "csv", "--deleted", "--streams"]);
    let want_info = described(raw_s);
    for (name, options, says) in [
        ("dynamic.vhd", None, "VHD, dynamic: "),
        ("fixed.vhd", Some("subformat=fixed"), "VHD, fixed"),
    ] {
        let v = vhd(&raw, &dir.join(name), options);
        let text = String::from_utf8(stdout(&["info", &v])).unwrap();
        assert!(text.contains(&format!("container     {says}")), "{text}");
        reads_as_the_content_volume(&v, &want_export, &want_info);
    }
    // A whole disk in a dynamic VHD (its empty blocks never written), by partition.
    let disk = fixture("disk-gpt.img");
    let v = vhd(&disk, &dir.join("disk.vhd"), None);
    assert_eq!(described(&v), described(path_str(&disk)));
    for part in ["2", "3"] {
        let want = stdout(&[
            "export",
            &format!("{}@{part}", path_str(&disk)),
            "--format",
            "csv",
        ]);
        assert!(
            stdout(&["export", &format!("{v}@{part}"), "--format", "csv"]) == want,
            "{v}@{part}: its export differs from the raw disk's"
        );
    }
    // A differencing VHD reads through its parent, found by the name its header gives (qemu-img makes none: a
    // dynamic one's footer and its copy at the start say "differencing", type 4, instead, and its header names
    // `fixed.vhd` as its parent; every block is in the child, so it reads as its own content). Without its parent
    // it is refused in one line, exit 2, naming the parent's path. (containers_vhdx.rs reads real read-through.)
    let child = dir.join("child.vhd");
    let mut bytes = std::fs::read(dir.join("dynamic.vhd")).unwrap();
    let end = bytes.len() - 512;
    for footer in [0, end] {
        assert_eq!(&bytes[footer..footer + 8], b"conectix");
        bytes[footer + 60..footer + 64].copy_from_slice(&4u32.to_be_bytes());
    }
    let header = u64::from_be_bytes(bytes[end + 16..end + 24].try_into().unwrap()) as usize;
    let name: Vec<u8> = "fixed.vhd"
        .encode_utf16()
        .flat_map(u16::to_be_bytes)
        .collect();
    bytes[header + 64..header + 64 + name.len()].copy_from_slice(&name);
    std::fs::write(&child, bytes).unwrap();
    let c = path_str(&child);
    let text = String::from_utf8(stdout(&["info", c])).unwrap();
    assert!(text.contains("container     VHD, differencing: "), "{text}");
    reads_as_the_content_volume(c, &want_export, &want_info);
    std::fs::rename(dir.join("fixed.vhd"), dir.join("moved.vhd")).unwrap();
    let out = uffs().args(["info", c]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(path_str(&dir.join("fixed.vhd"))), "{err}");
    // Damaged headers and tables are errors in one line (exit 2), never a crash: the dynamic header's table
    // offset, its number of entries and block size, and a table entry pointing past the file's end.
    let good = std::fs::read(dir.join("dynamic.vhd")).unwrap();
    let header =
        u64::from_be_bytes(good[good.len() - 512 + 16..][..8].try_into().unwrap()) as usize;
    let table = u64::from_be_bytes(good[header + 16..][..8].try_into().unwrap()) as usize;
    for (at, value) in [
        (header + 16, u64::MAX.to_be_bytes().to_vec()),
        (header + 28, u32::MAX.to_be_bytes().to_vec()),
        (header + 32, 0u32.to_be_bytes().to_vec()),
        (header + 32, 1000u32.to_be_bytes().to_vec()),
        (table, 0x7fff_fff0u32.to_be_bytes().to_vec()),
        (header, b"garbage!".to_vec()),
    ] {
        let mut bytes = good.clone();
        bytes[at..at + value.len()].copy_from_slice(&value);
        let bad = dir.join("damaged.vhd");
        std::fs::write(&bad, bytes).unwrap();
        for cmd in [&["info"][..], &["export", "--format", "csv"][..]] {
            let out = uffs()
                .args(&cmd[..1])
                .arg(&bad)
                .args(&cmd[1..])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{cmd:?} with {value:?} at {at}: {err}"
            );
            assert_eq!(err.trim().lines().count(), 1, "{err}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_partition_of_a_split_disk_reads_as_the_disks() {
    let raw = fixture("disk-gpt.img");
    let dir = scratch("split-disk");
    let first = split(&raw, &dir, "disk.", 50_000_017, 3, 1);
    let raw_s = path_str(&raw);
    let s = path_str(&first);
    assert_eq!(described(s), described(raw_s));
    for part in ["2", "3"] {
        let want = stdout(&["export", &format!("{raw_s}@{part}"), "--format", "csv"]);
        assert!(want.len() > 1000, "@{part}: a small export");
        assert!(
            stdout(&["export", &format!("{s}@{part}"), "--format", "csv"]) == want,
            "{s}@{part}: its export differs from the raw disk's"
        );
    }
    // A piece on its own is not the set: the second piece is no disk.
    let second = dir.join("disk.002");
    let out = uffs().args(["info", path_str(&second)]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
