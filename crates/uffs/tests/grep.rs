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
    let out = uffs().args(["grep", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--index FILE"));
}
