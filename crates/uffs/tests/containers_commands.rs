//! Every command reads a container as the raw image it holds, and `uffs volumes add` registers one as it does
//! the raw image: `uffs du`, `uffs dupes`, `uffs journal`, `uffs export --format bodyfile`, a query with the
//! `type` column (read from the files' data), `uffs cat`, `uffs hash` and `uffs grep` on the content volume in
//! an E01 set of small segments, split raw pieces, a dynamic VHD and VHDX, VMDKs (streamOptimized,
//! monolithicSparse) and a compressed qcow2 print byte for byte what
//! they print for the raw image. The raw image's output is held to outside tools elsewhere (`du`/`dupes` tests,
//! usnjls in `journal.rs`, fls and mactime in `bodyfile.rs`), so equality with it is the check here.
//!
//! The content volume gets what the fixture lacks, written by ntfscp (no mount): a `$UsnJrnl:$J` (plaso's sample)
//! and a pair of files with the same content. Its ~2,000 one-cluster fill files share a size, so `dupes` hashes
//! them all through the container too.

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

use common::containers::{acquire, qemu_convert, split, stdout};
use common::*;

/// A copy of `content.img` in `dir` with a change journal and two files of the same content.
fn content_with_journal_and_duplicates(dir: &Path) -> PathBuf {
    let img = dir.join("content.img");
    std::fs::copy(fixture("content.img"), &img).unwrap();
    let ntfscp = |args: &[&str], file: &Path, target: &str| {
        run_ok(
            tool("ntfscp")
                .arg("-f")
                .args(args)
                .arg(&img)
                .arg(file)
                .arg(target),
        );
    };
    // One cluster each: the fixture's free space is single-cluster holes, and ntfscp fails on longer files.
    let same = dir.join("same.bin");
    std::fs::write(
        &same,
        (0..3000u32)
            .map(|i| (i * 7 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    ntfscp(&[], &same, "/dup-a.bin");
    ntfscp(&[], &same, "/dup-b.bin");
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").unwrap();
    ntfscp(&[], &empty, "/$Extend/$UsnJrnl");
    ntfscp(
        &["-a", "0x80", "-N", "$J"],
        &data("usn/plaso-UsnJrnl.raw"),
        "/$Extend/$UsnJrnl",
    );
    img
}

/// The containers of `image`, each named by what it is.
fn containers(image: &Path, dir: &Path) -> Vec<(&'static str, String)> {
    let (e01, segments) = acquire(image, &dir.join("ewf"), "c", "1MiB", "deflate:fast");
    assert!(segments >= 5, "only {segments} E01 segments");
    let first = split(image, &dir.join("split"), "c.", 3_333_333, 3, 1);
    let q = |format: &str, name: &str, extra: &[&str]| {
        qemu_convert(format, image, &dir.join(name), extra)
    };
    vec![
        ("E01, 1 MiB segments", path_str(&e01).to_string()),
        ("split raw", path_str(&first).to_string()),
        ("VHD dynamic", q("vpc", "c.vhd", &[])),
        (
            "VHDX dynamic",
            q("vhdx", "c.vhdx", &["-o", "subformat=dynamic,block_size=1M"]),
        ),
        (
            "VMDK streamOptimized",
            q("vmdk", "so.vmdk", &["-o", "subformat=streamOptimized"]),
        ),
        (
            "VMDK monolithicSparse",
            q("vmdk", "ms.vmdk", &["-o", "subformat=monolithicSparse"]),
        ),
        ("qcow2 compressed", q("qcow2", "c.qcow2", &["-c"])),
    ]
}

/// Each command's arguments, `{}` standing for the source, and a line its output on the raw image must hold.
const COMMANDS: &[(&[&str], &str)] = &[
    (
        &[
            "du", "--source", "{}", "--format", "csv", "--depth", "3", "--limit", "0",
        ],
        "/fragmented/big.bin",
    ),
    (
        &["dupes", "--source", "{}", "--format", "csv"],
        "/dup-b.bin",
    ),
    (
        &["journal", "{}", "--format", "csv"],
        "/Nieuw - Tekstdocument.txt",
    ),
    (
        &[
            "export",
            "{}",
            "--format",
            "bodyfile",
            "--deleted",
            "--streams",
        ],
        "/compressed/text-1MiB.txt:ads",
    ),
    (
        &[
            "--source",
            "{}",
            "*",
            "--columns",
            "path,size,allocated,modified,type",
        ],
        "/plain/resident.txt",
    ),
    (&["cat", "{}", "/compressed/text-1MiB.txt"], "lazy dog"),
    (
        &["hash", "--source", "{}", "--algo", "sha256", "--streams"],
        "/dup-b.bin",
    ),
    (&["grep", "--source", "{}", "-c", "quick"], "/compressed/"),
];

/// The stdout of a command of `COMMANDS` on `source`.
fn output(args: &[&str], source: &str) -> Vec<u8> {
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "{}" { source } else { a })
        .collect();
    stdout(&args)
}

/// The first line where `got` and `want` differ, both shown.
fn first_difference(got: &[u8], want: &[u8]) -> String {
    let (got, want) = (String::from_utf8_lossy(got), String::from_utf8_lossy(want));
    let (mut g, mut w) = (got.lines(), want.lines());
    for n in 1.. {
        match (g.next(), w.next()) {
            (None, None) => break,
            (a, b) if a != b => return format!("line {n}: {a:?}, the raw image's {b:?}"),
            _ => {}
        }
    }
    "the same lines, other line ends".into()
}

#[test]
fn every_command_reads_containers_as_the_raw_image() {
    let dir = scratch("containers-commands");
    let raw = content_with_journal_and_duplicates(&dir);
    let raw_s = path_str(&raw);
    let want: Vec<Vec<u8>> = COMMANDS
        .iter()
        .map(|(args, holds)| {
            let out = output(args, raw_s);
            let text = String::from_utf8_lossy(&out);
            assert!(
                !out.is_empty() && text.contains(holds),
                "{args:?} on the raw image: no {holds}:\n{text}"
            );
            out
        })
        .collect();
    for (what, source) in containers(&raw, &dir) {
        for ((args, _), want) in COMMANDS.iter().zip(&want) {
            let got = output(args, &source);
            assert!(
                &got == want,
                "{what} ({source}): {args:?} differs from the raw image's: {}",
                first_difference(&got, want)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `uffs volumes add` registers a container with the daemon as it registers the raw image: a query and a data
/// term read through the container answer the same paths for both.
#[test]
fn volumes_add_registers_a_container_as_its_raw_image() {
    let dir = scratch("containers-daemon");
    let raw = fixture("content.img");
    let (e01, _) = acquire(&raw, &dir.join("ewf"), "c", "1MiB", "deflate:fast");
    let w = common::daemon::World::new("containers");
    w.start();
    w.ok(&["volumes", "add", path_str(&raw), "--name", "raw"]);
    w.ok(&["volumes", "add", path_str(&e01), "--name", "e01"]);
    for query in ["*", "content:quick"] {
        let out = w.ok(&[query]);
        let mut by_volume = [Vec::new(), Vec::new()];
        for line in out.lines() {
            match line.split_once(':') {
                Some(("raw", p)) => by_volume[0].push(p.to_string()),
                Some(("e01", p)) => by_volume[1].push(p.to_string()),
                _ => panic!("{query}: {line}"),
            }
        }
        by_volume.iter_mut().for_each(|v| v.sort());
        assert!(by_volume[0].len() > 2, "{query}: {out}");
        assert_eq!(by_volume[0], by_volume[1], "{query}");
    }
    w.ok(&["daemon", "stop"]);
    let _ = std::fs::remove_dir_all(&dir);
}
