//! The exit-status contract, as docs/commands.md states it: its table (between `<!-- exit-status-table -->`
//! markers) is parsed here, and every cell is run on a FAT32 image made by mtools, on a missing source and on
//! the image cut short. A truncated NTFS image is named as such by `info`, `cat` and a search.
#![cfg(unix)]

mod common;

use std::path::Path;

use common::fatvol::{mtools, peer, Tmp};
use common::*;

/// The columns of the table, in order.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Case {
    Match,
    NoMatch,
    Missing,
    BadQuery,
    Truncated,
}

const CASES: [Case; 5] = [
    Case::Match,
    Case::NoMatch,
    Case::Missing,
    Case::BadQuery,
    Case::Truncated,
];

/// The rows: a command template (`SRC`, `X`, `OUT` stand for what the test gives) and the status each column
/// wants (`None`: the case does not apply).
fn table() -> Vec<(String, Vec<Option<i32>>)> {
    let doc = std::fs::read_to_string(repo().join("docs/commands.md")).unwrap();
    let start = doc
        .find("<!-- exit-status-table -->")
        .expect("the table's start marker");
    let end = doc
        .find("<!-- /exit-status-table -->")
        .expect("the table's end marker");
    let mut rows = Vec::new();
    for line in doc[start..end].lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 1 + CASES.len(), "{line}");
        let command = cells[0].trim_matches('`').to_string();
        let want = cells[1..]
            .iter()
            .map(|c| (!c.is_empty()).then(|| c.parse().expect("a status")))
            .collect();
        rows.push((command, want));
    }
    assert!(rows.len() >= 10, "the table has {} rows", rows.len());
    rows
}

/// What `X` is for `command` in `case`: something there, something not, a bad query.
fn x_for(command: &str, case: Case, src: &Path) -> String {
    let sub = command.split_whitespace().nth(1).unwrap_or("");
    let grep = sub == "grep";
    match (sub, case) {
        ("cat", Case::NoMatch) => "/nosuch.txt".into(),
        ("cat", _) => "/a.txt".into(),
        ("du", Case::NoMatch) => "/nosuch".into(),
        ("du", _) => "/".into(),
        // The same volume, or another (one file more).
        ("diff", Case::NoMatch) => path_str(&src.with_file_name("other.img")).into(),
        ("diff", _) => path_str(&src.with_file_name("fat.img")).into(),
        ("dupes", Case::BadQuery) => "size:>10xb".into(),
        ("dupes", Case::NoMatch) => "c.txt".into(),
        ("dupes", _) => "*.txt".into(),
        (_, Case::NoMatch) => "zzznothing".into(),
        (_, Case::BadQuery) if grep => "(".into(),
        (_, Case::BadQuery) => "size:>10xb".into(),
        _ if grep => "needle".into(),
        _ => "a.txt".into(),
    }
}

#[test]
fn every_command_keeps_the_documented_contract() {
    let tmp = Tmp::new("exit-status");
    let img = tmp.path("fat.img");
    // Two files alike (a group of duplicates), one other, then one large enough to be cut off below.
    std::fs::write(tmp.path("a.txt"), "a needle in a file\n").unwrap();
    std::fs::write(tmp.path("b.txt"), "a needle in a file\n").unwrap();
    std::fs::write(tmp.path("c.txt"), "something else\n").unwrap();
    std::fs::write(tmp.path("big.bin"), vec![b'z'; 1 << 20]).unwrap();
    run_ok(peer("mkfs.vfat").args(["-C", "-F", "32", "-n", "EXIT", path_str(&img), "65536"]));
    let files: Vec<String> = ["a.txt", "b.txt", "c.txt", "big.bin"]
        .iter()
        .map(|f| path_str(&tmp.path(f)).to_string())
        .collect();
    let mut args: Vec<&str> = files.iter().map(String::as_str).collect();
    args.push("::/");
    mtools("mcopy", &img, &args);
    // Another volume: the same and one file more.
    let other = tmp.path("other.img");
    std::fs::copy(&img, &other).unwrap();
    mtools("mcopy", &other, &[path_str(&tmp.path("c.txt")), "::/d.txt"]);
    // Cut short 256 KiB into the data area: the small files (copied first) are whole, big.bin is not.
    let bytes = std::fs::read(&img).unwrap();
    let le16 = |o: usize| u64::from(u16::from_le_bytes([bytes[o], bytes[o + 1]]));
    let fat_size = u64::from(u32::from_le_bytes(bytes[36..40].try_into().unwrap()));
    let data_start = (le16(14) + u64::from(bytes[16]) * fat_size) * le16(11);
    let trunc = tmp.path("trunc.img");
    std::fs::write(&trunc, &bytes[..(data_start + (256 << 10)) as usize]).unwrap();

    let mut wrong = Vec::new();
    for (command, want) in table() {
        for (case, want) in CASES.iter().zip(want) {
            let Some(want) = want else { continue };
            let src = match case {
                Case::Missing => tmp.path("nosuch.img"),
                Case::Truncated => trunc.clone(),
                _ => img.clone(),
            };
            let x = x_for(&command, *case, &img);
            let out = tmp.path("out.uffs");
            let argv: Vec<String> = command
                .split_whitespace()
                .skip(1)
                .map(|w| match w {
                    "SRC" => path_str(&src).to_string(),
                    "X" => x.clone(),
                    "OUT" => path_str(&out).to_string(),
                    w => w.to_string(),
                })
                .collect();
            let o = uffs().args(&argv).output().unwrap();
            let got = o.status.code();
            let stderr = String::from_utf8_lossy(&o.stderr);
            if got != Some(want) {
                wrong.push(format!(
                    "{command} [{case:?}] `uffs {}`: exit {got:?}, the docs say {want}\n  stderr: {}",
                    argv.join(" "),
                    stderr.trim()
                ));
            }
            // An error is one line that says so; a partial answer says why.
            if want == 2 && !stderr.contains("error") && !stderr.contains("uffs: /") {
                wrong.push(format!(
                    "{command} [{case:?}]: exit 2 without an error said: {stderr}"
                ));
            }
            if *case == Case::Truncated && !stderr.contains("is truncated: the image ends at byte")
            {
                wrong.push(format!(
                    "{command} [{case:?}]: no word of the truncation: {stderr}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_truncated_ntfs_image_is_named_truncated() {
    let tmp = Tmp::new("exit-trunc-ntfs");
    let whole = std::fs::read(data("linux-made/testfs1")).unwrap();
    let trunc = tmp.path("trunc.ntfs");
    std::fs::write(&trunc, &whole[..1_000_000]).unwrap();
    let t = path_str(&trunc);

    let o = uffs().args(["info", t]).output().unwrap();
    assert_eq!(o.status.code(), Some(3));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("TRUNCATED   the image ends at byte 1,000,000; the volume needs 2,096,640"),
        "{text}"
    );
    let o = uffs().args(["info", t, "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["volumes"][0]["truncated"]["image_bytes"], 1_000_000);

    // A file past the end: the reason, not "past the end of the volume" of a smaller volume than it has.
    let o = uffs()
        .args(["cat", t, "/1000-bytes-file"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("its data lies past the end of the image, which is truncated"),
        "{err}"
    );
    // A file before it is read, and the answer is still called partial.
    let o = uffs()
        .args(["cat", t, "/file-with-12345"])
        .output()
        .unwrap();
    assert_eq!((o.status.code(), &o.stdout[..]), (Some(3), &b"12345"[..]));
    // A search: the records past the end are counted unreadable.
    let o = uffs().args(["--source", t, "file-with"]).output().unwrap();
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unreadable records (partial"), "{err}");
}
