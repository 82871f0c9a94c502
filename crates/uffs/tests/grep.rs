//! `uffs grep` against `rg` run over an ntfs-3g mount of the same volume: the same lines of the same files for
//! literals, regexes, `-i`, `-w`, `-F`, `-e`, `-c`, `-l`, `-C`, UTF-16LE (by BOM and with `--utf16`), binary
//! files skipped, on the content fixture (compressed, sparse, fragmented over extension records, resident) and
//! on a volume of text encodings written here through ntfs-3g; the query narrows the files read.

#![cfg(unix)]

mod common;

use std::path::Path;

use common::live::{make_volume, Mounted};
use common::*;

/// Output lines sorted: files finish in any order on several threads (rg's as well as uffs's); `--` separators
/// left out (they stand between files, wherever those came).
fn lines(out: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(out)
        .lines()
        .filter(|l| *l != "--")
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// `rg ARGS` in `root`, its paths made absolute from the volume's root as uffs prints them.
fn rg(root: &Path, args: &[&str]) -> Vec<String> {
    let out = tool("rg")
        .current_dir(root)
        .args([
            "-uu",
            "--no-heading",
            "--with-filename",
            "--line-number",
            "--color",
            "never",
            "--no-mmap",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.code().unwrap_or(2) < 2,
        "rg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // rg names files below `.` as `./x` when given `.`; without a path it names them `x`.
    lines(&out.stdout)
        .into_iter()
        .map(|l| format!("/{}", l.trim_start_matches("./")))
        .collect()
}

fn uffs_grep(img: &Path, args: &[&str]) -> (Vec<String>, Option<i32>) {
    let out = uffs()
        .arg("grep")
        .args(args)
        .arg("--source")
        .arg(img)
        .output()
        .unwrap();
    (lines(&out.stdout), out.status.code())
}

/// Each case's lines from uffs and from rg over the mount, and uffs's exit status as rg's.
fn compare(img: &Path, mnt: &Path, cases: &[&[&str]]) {
    for args in cases {
        let theirs = rg(mnt, args);
        let (ours, code) = uffs_grep(img, args);
        assert_eq!(ours, theirs, "uffs grep {args:?}");
        assert_eq!(
            code,
            Some(if theirs.is_empty() { 1 } else { 0 }),
            "{args:?}"
        );
    }
}

#[test]
fn same_lines_as_rg_on_compressed_sparse_and_fragmented_files() {
    let img = fixture("content.img");
    let dir = scratch("grep-content");
    let m = Mounted::new(&img, &dir.join("mnt"));
    compare(
        &img,
        &m.dir,
        &[
            &["resident"],
            &["-i", "THE"],
            &["-w", "data"],
            &["-c", "-i", "the"],
            &["-l", "e"],
            &["-F", "a.b"],
            &["[a-z]+ing\\b"],
            &["-e", "stream", "-e", "main"],
            &["-C", "2", "-i", "compress"],
            &["no such text anywhere"],
            &["-v", "-c", "e"],
            &["-v", "-l", "e"],
            &["-o", "-i", "compress[a-z]*"],
            &["-m", "1", "-i", "the"],
            &["-m", "2", "-o", "-c", "e"],
        ],
    );
    drop(m);
    // The query narrows the files: only those it selects are searched.
    let (ours, _) = uffs_grep(&img, &["-l", "-i", "the", "ext:txt"]);
    assert!(
        !ours.is_empty() && ours.iter().all(|p| p.ends_with(".txt")),
        "{ours:?}"
    );
    // Named streams are searched with --streams (ntfs-3g's walk does not list them for rg).
    let (ours, _) = uffs_grep(&img, &["-l", "--streams", "resident named"]);
    assert_eq!(ours, ["/plain/streams.txt:resident"]);
}

#[test]
fn utf16_and_binary_files_as_rg_reads_them() {
    let dir = scratch("grep-encodings");
    let img = make_volume(&dir, 16);
    {
        let m = Mounted::new(&img, &dir.join("mnt"));
        let utf16 = |s: &str, bom: bool| -> Vec<u8> {
            let mut v = if bom { vec![0xFF, 0xFE] } else { Vec::new() };
            v.extend(s.encode_utf16().flat_map(u16::to_le_bytes));
            v
        };
        let w = |p: &str, b: &[u8]| std::fs::write(m.dir.join(p), b).unwrap();
        w(
            "bom16.txt",
            &utf16("line one\r\nInstall needle here\r\nlast\r\n", true),
        );
        w(
            "nobom16.txt",
            &utf16("Install needle without a mark\r\n", false),
        );
        w("utf8bom.txt", b"\xEF\xBB\xBFneedle after a BOM\n");
        w(
            "binary-after.bin",
            b"a needle first\nthen\0binary\nneedle again\n",
        );
        w("binary-before.bin", b"\0\0\0 binary first\nneedle\n");
        w("crlf.txt", b"needle\r\nno\r\nneedle twice needle\r\n");
        w("tiny.txt", b"needle");
        let big: Vec<u8> = (0..20_000)
            .flat_map(|i| {
                format!("row {i} {}\n", if i % 997 == 0 { "needle" } else { "hay" }).into_bytes()
            })
            .collect();
        w("big.txt", &big);
    }
    let m = Mounted::new(&img, &dir.join("mnt"));
    compare(
        &img,
        &m.dir,
        &[
            &["needle"],
            &["-c", "needle"],
            &["-i", "install"],
            &["-E", "utf-16le", "needle"],
            &["--binary", "needle"],
            &["-a", "needle"],
            &["-C", "1", "needle"],
        ],
    );
    // --utf16 is -E utf-16le.
    let theirs = rg(&m.dir, &["-E", "utf-16le", "-l", "without"]);
    drop(m);
    let (ours, _) = uffs_grep(&img, &["--utf16", "-l", "without"]);
    assert_eq!(ours, theirs);
    assert_eq!(ours, ["/nobom16.txt"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// A file with hard links is found under every path, as `rg` walking the mount finds and prints it under each:
/// `-l`, lines, counts and context, for a small file, one of 3 MB (read as a stream and searched again for each
/// name) and a linked file that does not match.
#[test]
fn every_path_of_a_hard_linked_file_as_rg_lists_them() {
    let dir = scratch("grep-links");
    let img = make_volume(&dir, 32);
    {
        let m = Mounted::new(&img, &dir.join("mnt"));
        let d = &m.dir;
        for sub in ["a", "b", "c/deep"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::write(d.join("a/one.txt"), b"first\na needle here\nlast\n").unwrap();
        std::fs::hard_link(d.join("a/one.txt"), d.join("b/two.txt")).unwrap();
        std::fs::hard_link(d.join("a/one.txt"), d.join("c/deep/three.txt")).unwrap();
        let big: Vec<u8> = (0..150_000)
            .flat_map(|i| {
                format!("row {i} {}\n", if i == 149_000 { "needle" } else { "hay" }).into_bytes()
            })
            .collect();
        assert!(big.len() > 2 << 20);
        std::fs::write(d.join("a/big.log"), &big).unwrap();
        std::fs::hard_link(d.join("a/big.log"), d.join("b/big-link.log")).unwrap();
        std::fs::write(d.join("a/plain.txt"), b"nothing to see\n").unwrap();
        std::fs::hard_link(d.join("a/plain.txt"), d.join("b/plain-link.txt")).unwrap();
        std::fs::write(d.join("alone.txt"), b"one needle\n").unwrap();
    }
    let m = Mounted::new(&img, &dir.join("mnt"));
    compare(
        &img,
        &m.dir,
        &[
            &["-l", "needle"],
            &["needle"],
            &["-c", "needle"],
            &["-C", "1", "needle"],
            &["-l", "see"],
            &["-v", "-l", "needle"],
        ],
    );
    drop(m);
    let (ours, _) = uffs_grep(&img, &["-l", "needle"]);
    assert_eq!(
        ours,
        [
            "/a/big.log",
            "/a/one.txt",
            "/alone.txt",
            "/b/big-link.log",
            "/b/two.txt",
            "/c/deep/three.txt"
        ]
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `-z` decompresses gzip, bzip2, xz, lzma and zstd files (written here by their own tools) as rg -z does with
/// those tools; a file that is not what its name says is an error (exit 2) while the others still print; and
/// `--json` gives rg's messages, field for field but the times (and the bytes printed, by the `/` before each
/// path uffs prints).
#[test]
fn compressed_files_with_z_and_json_lines_as_rg() {
    let dir = scratch("grep-zip");
    let img = make_volume(&dir, 16);
    {
        let m = Mounted::new(&img, &dir.join("mnt"));
        let text: String = (0..3000)
            .map(|i| format!("line {i} {}\n", if i % 400 == 7 { "needle" } else { "hay" }))
            .collect();
        std::fs::write(m.dir.join("log.txt"), &text).unwrap();
        let sh = |script: &str| {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(&m.dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{script}: {out:?}");
        };
        sh("gzip -c log.txt > log.txt.gz && cp log.txt.gz old.tgz \
            && (gzip -c log.txt; echo 'a second needle member' | gzip -c) > two.gz \
            && bzip2 -c log.txt > log.txt.bz2 && xz -c log.txt > log.txt.xz \
            && xz --format=lzma -c log.txt > log.lzma && zstd -q -c log.txt > log.txt.zst \
            && mkdir t && echo needle > t/in-tar.txt && tar czf t.tar.gz t && gzip -c log.txt > LOUD.GZ");
    }
    let m = Mounted::new(&img, &dir.join("mnt"));
    compare(
        &img,
        &m.dir,
        &[
            &["-z", "needle"],
            &["-z", "-c", "needle"],
            &["-z", "-l", "-v", "hay"],
            &["-z", "-C", "1", "-m", "2", "needle"],
            &["needle"],
        ],
    );
    // rg's JSON lines, grouped by file (files finish in any order).
    let json = |out: &[u8], prefix: &str| -> (Vec<Vec<serde_json::Value>>, serde_json::Value) {
        let mut groups: Vec<Vec<serde_json::Value>> = Vec::new();
        let mut summary = serde_json::Value::Null;
        for line in String::from_utf8_lossy(out).lines() {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            let data = &mut v["data"];
            if let Some(p) = data["path"]["text"].as_str() {
                data["path"]["text"] = format!("{prefix}{}", p.trim_start_matches("./")).into();
            }
            for stats in [&mut data["stats"]] {
                if let Some(o) = stats.as_object_mut() {
                    o.remove("elapsed");
                }
            }
            data.as_object_mut().unwrap().remove("elapsed_total");
            match v["type"].as_str().unwrap() {
                "summary" => summary = v,
                "begin" => groups.push(vec![v]),
                _ => groups.last_mut().unwrap().push(v),
            }
        }
        groups.sort_by_key(|g| g[0]["data"]["path"]["text"].to_string());
        (groups, summary)
    };
    for args in [
        &["--json", "-z", "needle"][..],
        &["--json", "-C", "1", "needle"],
    ] {
        let theirs = tool("rg")
            .current_dir(&m.dir)
            .args(["-uu", "--no-mmap"])
            .args(args)
            .output()
            .unwrap();
        let ours = uffs()
            .arg("grep")
            .args(args)
            .arg("--source")
            .arg(&img)
            .output()
            .unwrap();
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        let (mut ours, mut our_summary) = json(&ours.stdout, "");
        let (mut theirs, mut their_summary) = json(&theirs.stdout, "/");
        assert!(!theirs.is_empty());
        // Each message before a file's `end` names its path with one more byte.
        let mut extra = 0;
        for (o, t) in ours.iter_mut().zip(&mut theirs) {
            let before_end = o.len() as u64 - 1;
            let end = &mut o.last_mut().unwrap()["data"]["stats"]["bytes_printed"];
            *end = (end.as_u64().unwrap() - before_end).into();
            extra += before_end;
            let _ = t;
        }
        let printed = &mut our_summary["data"]["stats"]["bytes_printed"];
        *printed = (printed.as_u64().unwrap() - extra).into();
        assert_eq!(ours, theirs, "{args:?}");
        their_summary["data"]["stats"]
            .as_object_mut()
            .unwrap()
            .remove("elapsed");
        assert_eq!(our_summary, their_summary, "{args:?}");
    }
    // A file that is not what its name says: one error for it, the others still searched, exit 2 (as rg).
    std::fs::write(m.dir.join("fake.gz"), b"needle, not gzip\n").unwrap();
    drop(m);
    let out = uffs()
        .args(["grep", "-z", "-l", "needle", "--source"])
        .arg(&img)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/fake.gz"), "{err}");
    assert!(lines(&out.stdout).contains(&"/log.txt.xz".to_string()));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_pattern_is_one_line_and_exit_2() {
    let img = fixture("content.img");
    let out = uffs()
        .args(["grep", "a(b", "--source"])
        .arg(&img)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("uffs: error:"), "{err}");
    // No source, and no volume registered (a cache of its own: the user's may have some).
    let empty = scratch("grep-no-registry");
    let out = uffs()
        .args(["grep", "x"])
        .env("UFFS_CACHE_DIR", &empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--index FILE"));
}
