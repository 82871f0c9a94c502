//! ext2, ext3 and ext4 volumes written by e2fsprogs' own `mkfs.ext* -d` and changed through the kernel's ext4
//! driver (a loop mount), read raw by uffs and checked against The Sleuth Kit: every path, inode number and
//! deleted flag `fls -r -p` lists, and every file's bytes as `icat` reads them (a fast symlink's target as
//! `debugfs stat` gives it: TSK's `icat` reads its `i_block` as block numbers and prints zeros). Covered: hard
//! links, symlinks short and long, a sparse file, a folder big enough to be an htree (written by the kernel),
//! inline data (in `i_block` and in the `system.data` attribute), 64bit and not, deletions (a name left in slack)
//! and a rename; and
//! damage: an extent tree that loops, a superblock that does not add up, an image cut short.

#![cfg(unix)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A tree with one of each thing ext keeps.
fn tree(dir: &Path) -> PathBuf {
    let t = dir.join("tree");
    std::fs::create_dir_all(t.join("dir/sub")).unwrap();
    std::fs::create_dir_all(t.join("many")).unwrap();
    std::fs::write(t.join("a.txt"), "hello\n").unwrap();
    std::fs::write(t.join("dir/five.txt"), "x".repeat(5000)).unwrap();
    std::fs::write(t.join("dir/f120.txt"), "y".repeat(120)).unwrap();
    std::fs::hard_link(t.join("a.txt"), t.join("dir/hardlink.txt")).unwrap();
    std::os::unix::fs::symlink("a.txt", t.join("link")).unwrap();
    std::os::unix::fs::symlink("l".repeat(80), t.join("longlink")).unwrap();
    for i in 0..120 {
        std::fs::write(t.join(format!("many/f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(t.join("dir/sub/big.bin"), big).unwrap();
    let f = std::fs::File::create(t.join("sparse.bin")).unwrap();
    f.set_len(3 << 20).unwrap();
    drop(f);
    std::fs::OpenOptions::new()
        .append(true)
        .open(t.join("sparse.bin"))
        .map(|mut f| std::io::Write::write_all(&mut f, b"end\n"))
        .unwrap()
        .unwrap();
    t
}

fn mkfs(kind: &str, options: &[&str], tree: &Path, img: &Path) {
    run_ok(
        tool(&format!("mkfs.{kind}"))
            .args(["-q", "-F"])
            .args(options)
            .arg("-d")
            .arg(tree)
            .arg(img)
            .arg("16M"),
    );
}

/// (path, inode, deleted) of every name `fls -r -p` lists (its `$OrphanFiles` left out).
fn fls(img: &Path) -> BTreeSet<(String, String, bool)> {
    let out = run_ok(tool("fls").args(["-r", "-p"]).arg(img));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (meta, name) = l.split_once('\t')?;
            if name.starts_with("$OrphanFiles") {
                return None;
            }
            let ino = meta.rsplit(' ').next()?.trim_end_matches(':');
            let ino = ino.split('(').next()?.to_string();
            Some((format!("/{name}"), ino, meta.contains('*')))
        })
        .collect()
}

/// The same from `uffs export --deleted`.
fn uffs_names(img: &Path) -> BTreeSet<(String, String, bool)> {
    export(img, &["--deleted"])
        .into_iter()
        .filter(|r| {
            // The root, the volume's own entries (`$Journal`, `$InodeTables` …) and `$Orphan` are no names fls
            // lists.
            r["path"] != "/" && !r["path"].starts_with("/$")
        })
        .map(|r| {
            (
                r["path"].clone(),
                r["record"].clone(),
                r["deleted"] == "true",
            )
        })
        .collect()
}

/// The names equal, or a failure that shows only what differs.
fn same_names(
    ours: &BTreeSet<(String, String, bool)>,
    theirs: &BTreeSet<(String, String, bool)>,
    what: &str,
) {
    let only_ours: Vec<_> = ours.difference(theirs).collect();
    let only_fls: Vec<_> = theirs.difference(ours).collect();
    assert!(
        only_ours.is_empty() && only_fls.is_empty(),
        "{what}: only uffs: {only_ours:?}; only fls: {only_fls:?}"
    );
}

fn sha256(bytes: &[u8]) -> String {
    let mut c = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(c.stdin.as_mut().unwrap(), bytes).unwrap();
    let out = c.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)[..64].to_string()
}

/// Every file `uffs hash` reads has the bytes `icat` reads for its inode (a fast symlink: its target, as
/// `debugfs stat` gives it); returns how many were compared.
fn same_bytes_as_icat(img: &Path) -> usize {
    let inode: std::collections::HashMap<String, String> = export(img, &[])
        .into_iter()
        .map(|r| (r["path"].clone(), r["record"].clone()))
        .collect();
    let out = run_ok(uffs().args(["hash", "--source"]).arg(img));
    let mut n = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (hex, path) = line.split_once("  ").unwrap();
        let ino = &inode[path];
        let stat = run_ok(
            tool("debugfs")
                .args(["-R", &format!("stat <{ino}>")])
                .arg(img),
        );
        let stat = String::from_utf8_lossy(&stat.stdout).into_owned();
        let want = match stat
            .lines()
            .find_map(|l| l.strip_prefix("Fast link dest: "))
        {
            Some(target) => target.trim_matches('"').as_bytes().to_vec(),
            None => run_ok(tool("icat").arg(img).arg(ino)).stdout,
        };
        assert_eq!(hex, sha256(&want), "{} {path} (inode {ino})", img.display());
        n += 1;
    }
    n
}

/// Each flavour as e2fsprogs writes it: the names fls lists, the bytes icat reads, the features `info` names.
#[test]
fn ext2_ext3_and_ext4_as_tsk_reads_them() {
    let dir = scratch("ext-flavours");
    let t = tree(&dir);
    for (kind, options, features) in [
        ("ext2", &[][..], "ext2"),
        ("ext3", &[], "has_journal"),
        ("ext4", &[], "extents"),
        ("ext4", &["-O", "^64bit,^metadata_csum"], "flex_bg"),
        ("ext4", &["-O", "inline_data", "-I", "512"], "inline_data"),
        ("ext4", &["-b", "4096"], "64bit"),
    ] {
        let img = dir.join(format!("{kind}.img"));
        mkfs(kind, options, &t, &img);
        let ours = uffs_names(&img);
        same_names(&ours, &fls(&img), &format!("{kind} {options:?}"));
        assert!(ours.contains(&(
            "/dir/hardlink.txt".into(),
            ours_inode(&ours, "/a.txt"),
            false
        )));
        assert!(same_bytes_as_icat(&img) >= 125, "{kind} {options:?}");
        let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
        assert!(info.contains(&format!("({kind} volume)")), "{info}");
        assert!(info.contains(features), "{kind} {options:?}: {info}");
        // `du /` adds up to the blocks in use, as dumpe2fs counts them (block count less free blocks).
        let du = run_ok(uffs().args(["du", "--source"]).arg(&img));
        let note = String::from_utf8_lossy(&du.stdout).into_owned();
        assert!(note.contains(": equal"), "{kind} {options:?}: {note}");
        let dump = run_ok(tool("dumpe2fs").arg("-h").arg(&img));
        let field = |name: &str| -> u64 {
            String::from_utf8_lossy(&dump.stdout)
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let used = (field("Block count:") - field("Free blocks:")) * field("Block size:");
        assert!(
            note.contains(&format!("({} bytes)", thousands(used))),
            "{kind} {options:?}: {used} bytes in use by dumpe2fs: {note}"
        );
        std::fs::remove_file(&img).unwrap();
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `1,234,567`.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ours_inode(names: &BTreeSet<(String, String, bool)>, path: &str) -> String {
    names.iter().find(|n| n.0 == path).unwrap().1.clone()
}

/// Changed through the kernel's driver: a folder of 400 names (an htree), files deleted (their names then in
/// directory slack, listed with --deleted as fls lists them) and a rename.
#[test]
fn changes_made_by_the_kernel_as_tsk_reads_them() {
    let dir = scratch("ext-kernel");
    let t = tree(&dir);
    let img = dir.join("ext4.img");
    mkfs("ext4", &[], &t, &img);
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-o", "loop"])
        .arg(&img)
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        cannot_run("mounting an ext4 image through a loop device (needs root and the ext4 driver)");
        return;
    }
    let changed = (|| -> std::io::Result<()> {
        std::fs::create_dir(mnt.join("htree"))?;
        for i in 0..400 {
            std::fs::write(
                mnt.join(format!("htree/a-rather-long-name-for-entry-{i}.txt")),
                format!("{i}\n"),
            )?;
        }
        for i in (0..120).step_by(3) {
            std::fs::remove_file(mnt.join(format!("many/f{i}.txt")))?;
        }
        std::fs::rename(mnt.join("a.txt"), mnt.join("dir/moved.txt"))
    })();
    run_ok(Command::new("umount").arg(&mnt));
    changed.unwrap();
    let htree = run_ok(tool("debugfs").args(["-R", "htree /htree"]).arg(&img));
    assert!(
        String::from_utf8_lossy(&htree.stdout).contains("Root node dump"),
        "/htree is no htree"
    );
    // The kernel wipes a deleted entry's name (since Linux 5.x); e2fsprogs' unlink leaves it in the slack of the
    // entry before, as older kernels did.
    run_ok(
        tool("debugfs")
            .args(["-w", "-R", "rm /many/f4.txt"])
            .arg(&img),
    );
    let ours = uffs_names(&img);
    same_names(&ours, &fls(&img), "kernel-changed ext4");
    assert!(
        ours.iter().any(|n| n.0 == "/many/f4.txt" && n.2),
        "the deleted name in slack"
    );
    assert!(same_bytes_as_icat(&img) > 400);
    std::fs::remove_dir_all(&dir).ok();
}

/// Damage: an extent tree that loops is a warning naming the inode (the others are read), a superblock that
/// does not add up is one line and exit 2, an image cut short is said to be and answers exit 3.
#[test]
fn damage_is_a_warning_or_one_line() {
    let dir = scratch("ext-damage");
    let t = tree(&dir);
    let img = dir.join("ext4.img");
    mkfs("ext4", &["-O", "^metadata_csum"], &t, &img);
    // Where /dir/five.txt's inode is: `debugfs imap` says its block and offset.
    let imap = run_ok(tool("debugfs").args(["-R", "imap /dir/five.txt"]).arg(&img));
    let imap = String::from_utf8_lossy(&imap.stdout).into_owned();
    let words: Vec<&str> = imap.split_whitespace().collect();
    let block: u64 = words[words.iter().position(|w| *w == "located").unwrap() + 3]
        .trim_end_matches(',')
        .parse()
        .unwrap();
    let offset = u64::from_str_radix(
        words[words.iter().position(|w| *w == "offset").unwrap() + 1].trim_start_matches("0x"),
        16,
    )
    .unwrap();
    let bs = 1024u64;
    let inode_at = block * bs + offset;
    // A free block near the end becomes an index node pointing at itself; the inode's root says depth 2.
    let spare = (16 << 20) / bs - 10;
    let mut bytes = std::fs::read(&img).unwrap();
    let node = |depth: u16, child: u64| {
        let mut n = vec![0u8; 24];
        n[0..2].copy_from_slice(&0xF30Au16.to_le_bytes());
        n[2..4].copy_from_slice(&1u16.to_le_bytes());
        n[4..6].copy_from_slice(&1u16.to_le_bytes());
        n[6..8].copy_from_slice(&depth.to_le_bytes());
        n[16..20].copy_from_slice(&(child as u32).to_le_bytes());
        n
    };
    let root = node(2, spare);
    bytes[(inode_at + 0x28) as usize..(inode_at + 0x28) as usize + 24].copy_from_slice(&root);
    let loop_node = node(1, spare);
    bytes[(spare * bs) as usize..(spare * bs) as usize + 24].copy_from_slice(&loop_node);
    std::fs::write(&img, &bytes).unwrap();
    let out = uffs()
        .args(["hash", "--source"])
        .arg(&img)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "the file is unreadable: the answer is partial"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let ino = ours_inode(&uffs_names(&img), "/dir/five.txt");
    assert!(
        err.contains(&format!("inode {ino}")) && err.contains("loops"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("/a.txt"));

    // A superblock with no inodes per group.
    let mut bad = bytes.clone();
    bad[1024 + 0x28..1024 + 0x2C].copy_from_slice(&0u32.to_le_bytes());
    let bad_img = dir.join("bad.img");
    std::fs::write(&bad_img, &bad).unwrap();
    let out = uffs().arg("info").arg(&bad_img).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("superblock") && err.lines().count() == 1,
        "{err}"
    );

    // Cut short: named as truncated, and a search through it is partial (exit 3).
    let short = dir.join("short.img");
    std::fs::write(&short, &bytes[..4 << 20]).unwrap();
    let out = uffs()
        .args(["--source"])
        .arg(&short)
        .arg("*")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is truncated"), "{err}");
    assert_eq!(out.status.code(), Some(3), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
