//! The query terms answered from files' data, against the tools that read the same volume through an ntfs-3g
//! mount: `content:` lists the files `rg -l --binary` lists, `type:` agrees with `file --mime-type`, `hash:`
//! with `sha256sum`; through `--source`, an index file and the daemon; a data term inside OR is refused.

#![cfg(unix)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::daemon::World;
use common::live::{make_volume, rg_files, walk, Mounted};
use common::*;

fn paths(out: &[u8]) -> BTreeSet<String> {
    String::from_utf8_lossy(out)
        .lines()
        .map(str::to_string)
        .collect()
}

fn query(img: &Path, q: &str) -> BTreeSet<String> {
    let out = uffs().args(["--source"]).arg(img).arg(q).output().unwrap();
    assert!(
        out.status.code().unwrap_or(2) < 2,
        "{q}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    paths(&out.stdout)
}

/// A volume of files of known types, written through ntfs-3g: formats made here, one renamed to lie.
fn typed_volume(dir: &Path) -> std::path::PathBuf {
    let img = make_volume(dir, 32);
    let m = Mounted::new(&img, &dir.join("mnt"));
    let w = |p: &str, b: &[u8]| std::fs::write(m.dir.join(p), b).unwrap();
    let gz = run_ok(tool("gzip").arg("-c").arg(std::env::current_exe().unwrap())).stdout;
    w("payload.gz", &gz);
    w("lying.txt", &gz);
    w("notes.txt", b"plain text notes\n");
    w(
        "minimal.pdf",
        b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n",
    );
    // A PNG signature and IHDR chunk: what file(1) and the signature need.
    let mut png =
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0\x90wS\xde".to_vec();
    png.extend_from_slice(b"\0\0\0\0IEND\xaeB`\x82");
    w("pixel.png", &png);
    w(
        "program",
        &std::fs::read(std::env::current_exe().unwrap()).unwrap()[..1 << 20],
    );
    drop(m);
    img
}

#[test]
fn content_lists_the_files_rg_lists() {
    let img = fixture("content.img");
    let dir = scratch("terms-content");
    let m = Mounted::new(&img, &dir.join("mnt"));
    for (q, rg) in [
        ("content:resident", vec!["-i", "-F", "resident"]),
        ("content:THE", vec!["-i", "-F", "THE"]),
        ("case:content:The", vec!["-F", "The"]),
        ("ww:content:data", vec!["-i", "-w", "-F", "data"]),
        ("regex:content:res[a-z]+t", vec!["-i", "res[a-z]+t"]),
    ] {
        let theirs = rg_files(&m.dir, &rg);
        let ours = query(&img, q);
        assert_eq!(ours, theirs, "{q}");
        assert!(
            !ours.is_empty(),
            "{q} found nothing: a test that cannot fail"
        );
    }
    // The rest of the query narrows the files read; a negated term keeps the others.
    let txt = query(&img, "ext:txt content:the");
    assert!(
        !txt.is_empty() && txt.iter().all(|p| p.ends_with(".txt")),
        "{txt:?}"
    );
    let all_txt = query(&img, "ext:txt");
    let not = query(&img, "ext:txt !content:the");
    assert_eq!(&txt | &not, all_txt);
    assert!(txt.is_disjoint(&not));
    // A flag's terms (`-e txt`) stand beside the query's, so its data term is still beside the rest.
    let by_flag = paths(
        &run_ok(
            uffs()
                .arg("--source")
                .arg(&img)
                .args(["-e", "txt", "t content:the"]),
        )
        .stdout,
    );
    assert!(!by_flag.is_empty());
    assert_eq!(by_flag, query(&img, "ext:txt t content:the"));
    drop(m);
}

/// Everything's `utf16content:` finds UTF-16LE text with or without a byte-order mark, as `rg -E utf-16le` does;
/// `content:` finds UTF-8, and UTF-16 with a mark, as plain `rg` does.
#[test]
fn utf16content_finds_utf16le_text_without_a_mark_as_rg_e_utf16le() {
    let dir = scratch("terms-utf16");
    let img = make_volume(&dir, 32);
    let m = Mounted::new(&img, &dir.join("mnt"));
    let wide = |s: &str| {
        s.encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect::<Vec<u8>>()
    };
    let w = |p: &str, b: &[u8]| std::fs::write(m.dir.join(p), b).unwrap();
    w("wide-nobom.txt", &wide("a Quartz crystal\r\n"));
    w(
        "wide-bom.txt",
        &[&[0xFF, 0xFE][..], &wide("quartz clock\n")].concat(),
    );
    w("plain.txt", b"quartz in UTF-8\n");
    w("other.txt", &wide("no such mineral\n"));
    drop(m);
    let m = Mounted::new(&img, &dir.join("mnt"));
    // content: is rg's search and rg -E utf-16le's together: UTF-16LE without a mark is found too.
    for (q, rgs, want) in [
        (
            "utf16content:quartz",
            vec![vec!["-i", "-F", "-E", "utf-16le", "quartz"]],
            vec!["/wide-bom.txt", "/wide-nobom.txt"],
        ),
        (
            "content:quartz",
            vec![
                vec!["-i", "-F", "quartz"],
                vec!["-i", "-F", "-E", "utf-16le", "quartz"],
            ],
            vec!["/plain.txt", "/wide-bom.txt", "/wide-nobom.txt"],
        ),
        (
            "case:utf16content:Quartz",
            vec![vec!["-F", "-E", "utf-16le", "Quartz"]],
            vec!["/wide-nobom.txt"],
        ),
        (
            "case:content:Quartz",
            vec![vec!["-F", "Quartz"], vec!["-F", "-E", "utf-16le", "Quartz"]],
            vec!["/wide-nobom.txt"],
        ),
    ] {
        let want: BTreeSet<String> = want.into_iter().map(String::from).collect();
        let found: BTreeSet<String> = rgs.iter().flat_map(|rg| rg_files(&m.dir, rg)).collect();
        assert_eq!(found, want, "rg {rgs:?}");
        assert_eq!(query(&img, q), want, "{q}");
    }
    drop(m);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn types_agree_with_file_and_mismatch_finds_the_liar() {
    let dir = scratch("terms-types");
    let img = typed_volume(&dir);
    let m = Mounted::new(&img, &dir.join("mnt"));
    let (_, files) = walk(&m.dir);
    let mime = |p: &Path| {
        String::from_utf8(
            run_ok(tool("file").args(["--mime-type", "-b"]).arg(m.dir.join(p))).stdout,
        )
        .unwrap()
        .trim()
        .to_string()
    };
    let by_file = |want: &[&str]| -> BTreeSet<String> {
        files
            .iter()
            .filter(|p| want.contains(&mime(p).as_str()))
            .map(|p| format!("/{}", p.display()))
            .collect()
    };
    let gzip = by_file(&["application/gzip", "application/x-gzip"]);
    let pdf = by_file(&["application/pdf"]);
    let png = by_file(&["image/png"]);
    let elf = by_file(&[
        "application/x-pie-executable",
        "application/x-executable",
        "application/x-sharedlib",
    ]);
    drop(m);
    assert_eq!(gzip.len(), 2);
    assert_eq!(query(&img, "type:gzip"), gzip);
    assert_eq!(query(&img, "type:pdf"), pdf);
    assert_eq!(query(&img, "type:png"), png);
    assert_eq!(query(&img, "type:elf"), elf);
    assert_eq!(
        query(&img, "type:mismatch"),
        BTreeSet::from(["/lying.txt".to_string()])
    );
    assert!(query(&img, "type:text").contains("/notes.txt"));
    // The `type` column says the same of every file, and nothing of a folder.
    let out = run_ok(uffs().args(["--source"]).arg(&img).args([
        "",
        "--format",
        "tsv",
        "--columns",
        "path,kind,type",
    ]));
    let mut column = std::collections::BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f[1] == "folder" {
            assert_eq!(f[2], "", "{line}");
        }
        column.insert(f[0].to_string(), f[2].to_string());
    }
    for (name, set) in [("gzip", &gzip), ("pdf", &pdf), ("png", &png), ("elf", &elf)] {
        for p in set {
            assert_eq!(column[p], name, "{p}");
        }
    }
    assert_eq!(column["/notes.txt"], "text");
    let out = uffs()
        .args(["--source"])
        .arg(&img)
        .arg("type:nonsense")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown type"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn hash_finds_the_files_with_that_content() {
    let img = fixture("content.img");
    let dir = scratch("terms-hash");
    let m = Mounted::new(&img, &dir.join("mnt"));
    let one = |p: &str| {
        String::from_utf8(run_ok(tool("sha256sum").arg(m.dir.join(p))).stdout).unwrap()[..64]
            .to_string()
    };
    let sha = one("plain/one-cluster.bin");
    let resident = one("plain/resident.txt");
    drop(m);
    assert_eq!(
        query(&img, &format!("hash:{sha}")),
        BTreeSet::from(["/plain/one-cluster.bin".to_string()])
    );
    assert_eq!(
        query(&img, &format!("hash:{}", resident.to_uppercase())),
        BTreeSet::from(["/plain/resident.txt".to_string()])
    );
    let out = uffs()
        .args(["--source"])
        .arg(&img)
        .arg("hash:1234")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn through_an_index_file_and_the_daemon_as_through_the_source() {
    let img = fixture("content.img");
    let dir = scratch("terms-daemon");
    let idx = dir.join("c.uffs");
    run_ok(uffs().arg("index").arg(&img).arg("-o").arg(&idx));
    let direct = query(&img, "content:resident");
    let via_index = paths(&run_ok(uffs().arg("--index").arg(&idx).arg("content:resident")).stdout);
    assert_eq!(via_index, direct);
    let w = World::new("terms-daemon");
    w.start();
    run_ok(
        w.uffs()
            .args(["volumes", "add"])
            .arg(&img)
            .args(["--name", "D"]),
    );
    w.wait_ready(60);
    let via_daemon: BTreeSet<String> = paths(&run_ok(w.uffs().arg("content:resident")).stdout)
        .into_iter()
        .map(|p| p.replacen("D:", "", 1))
        .collect();
    assert_eq!(via_daemon, direct);
    // The `type` column, read by the daemon from the volume: as the command line reads it.
    let typed = |c: &mut std::process::Command| {
        let out = run_ok(c.args([
            "ext:txt | ext:gz",
            "--format",
            "csv",
            "--columns",
            "path,type",
            "--sort",
            "path",
        ]));
        String::from_utf8(out.stdout).unwrap().replace("D:/", "/")
    };
    let direct_types = typed(uffs().arg("--source").arg(&img));
    assert!(direct_types.contains(",text\n"), "{direct_types}");
    assert_eq!(typed(&mut w.uffs()), direct_types);
    // Inside OR: refused, with the way to write it, before anything is read.
    let out = w.uffs().arg("a | content:x").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("beside the rest"));
    drop(w);
    std::fs::remove_dir_all(&dir).ok();
}
