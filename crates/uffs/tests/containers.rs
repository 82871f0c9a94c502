//! Images that arrive in pieces or containers, read as the raw image they hold. Today: split raw images, cut by
//! `split` as `split -d` names them (`x.00`, `x.01`, …) and as FTK Imager does (`x.001`, `x.002`, …), with pieces
//! that end in the middle of a sector. Each must export byte for byte what the raw image exports, describe the
//! same volume, and give the same file contents (`uffs cat` of the raw image is held to TSK's `icat` by
//! `cat.rs`), a partition of a split whole disk included.

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// `image` cut by `split` into pieces of `bytes` named `PREFIX` + a number of `width` digits counted from `from`;
/// returns the first piece.
fn split(image: &Path, dir: &Path, prefix: &str, bytes: u64, width: usize, from: u32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    run_ok(
        Command::new("split")
            .arg(format!("--numeric-suffixes={from}"))
            .args(["-a", &width.to_string(), "-b", &bytes.to_string()])
            .arg(image)
            .arg(dir.join(prefix)),
    );
    let first = dir.join(format!("{prefix}{from:0width$}"));
    assert!(first.is_file(), "split made no {}", first.display());
    first
}

fn stdout(args: &[&str]) -> Vec<u8> {
    run_ok(uffs().args(args)).stdout
}

/// `uffs info --json` without the fields that name the source as given.
fn described(source: &str) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_slice(&stdout(&["info", source, "--json"])).unwrap();
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                o.remove("source");
                o.remove("spec");
                o.remove("path");
                o.remove("name");
                o.remove("pieces");
                o.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

#[test]
fn a_split_volume_reads_as_its_raw_image() {
    let raw = fixture("content.img");
    let f = facts("content.img");
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
        assert_eq!(info["pieces"].as_array().unwrap().len(), count, "{info}");
        let text = String::from_utf8(stdout(&["info", s])).unwrap();
        assert!(
            text.contains(&format!(
                "pieces        {count} of a split raw image: {s} to "
            )),
            "{text}"
        );
        assert!(
            stdout(&["export", s, "--format", "csv", "--deleted", "--streams"]) == want_export,
            "{s}: its export differs from the raw image's"
        );
        assert_eq!(described(s), want_info, "{s}");
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
        // A query straight on the pieces, and an index built from them.
        let idx = first.with_extension("uffs");
        run_ok(uffs().args(["index", s, "-o"]).arg(&idx));
        assert_eq!(
            stdout(&["*", "--index", path_str(&idx), "--count"]),
            stdout(&["*", "--source", raw_s, "--count"])
        );
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
