//! XFS volumes `mkfs.xfs` wrote from a prototype file (`-p`: no mount needed, so also v4 volumes, which this
//! kernel no longer mounts), read raw by uffs and checked against `xfs_db`: every path and inode number its
//! `ncheck` lists, the blocks in use its `freesp` leaves, and every file's bytes as the files the prototype copied.
//! Variants: v4 and v5, 1 KiB blocks, 16 KiB folder blocks, 1 KiB inodes; folders in short, block, leaf and node
//! form. And damage: an inode B+tree block overwritten (a warning naming it, the other groups read), a superblock
//! that does not add up (one line, exit 2). Volumes the kernel wrote (hard links, extent B+trees, unwritten
//! extents, long symlinks) are read in `folders.rs` against `find`, and in the conformance suite.

#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use common::fatvol::sha256_hex;
use common::*;

/// The tree the prototype describes, as (path, contents) for files, with its folders and symlinks in `proto`.
struct Tree {
    proto: String,
    files: BTreeMap<String, Vec<u8>>,
    links: BTreeMap<String, String>,
}

/// A prototype file for `mkfs.xfs -p` and what it holds; file contents are written into `dir`.
fn tree(dir: &Path) -> Tree {
    std::fs::create_dir_all(dir).unwrap();
    let mut t = Tree {
        proto: "/dev/null\n0 0\nd--755 0 0\n".into(),
        files: BTreeMap::new(),
        links: BTreeMap::new(),
    };
    let mut n = 0;
    let mut file = |t: &mut Tree, folder: &str, name: &str, data: Vec<u8>| {
        n += 1;
        let src = dir.join(format!("src{n}"));
        std::fs::write(&src, &data).unwrap();
        writeln!(t.proto, "{name} ---644 1000 100 {}", src.display()).unwrap();
        t.files.insert(format!("{folder}/{name}"), data);
    };
    file(&mut t, "", "a.txt", b"hello\n".to_vec());
    file(&mut t, "", "empty", Vec::new());
    let big: Vec<u8> = (0..700_000u32).map(|i| (i * 7 % 251) as u8).collect();
    file(&mut t, "", "big.bin", big);
    writeln!(t.proto, "link l--777 0 0 a.txt").unwrap();
    t.links.insert("/link".into(), "a.txt".into());
    // Folders in each form: 3 entries (short form), 40 (one block), 3,000 (leaf and node forms).
    for (folder, count) in [("few", 3), ("block", 40), ("many", 3000)] {
        writeln!(t.proto, "{folder} d--755 0 0").unwrap();
        for i in 0..count {
            let name = format!("entry-with-a-longer-name-{i:05}.txt");
            file(
                &mut t,
                &format!("/{folder}"),
                &name,
                format!("{folder} {i}\n").into_bytes(),
            );
        }
        t.proto.push_str("$\n");
    }
    writeln!(t.proto, "Ünïcödé d--700 0 0").unwrap();
    file(
        &mut t,
        "/Ünïcödé",
        "日本語.txt",
        "こんにちは\n".as_bytes().to_vec(),
    );
    t.proto.push_str("$\n$\n");
    t
}

/// `mkfs.xfs` with `options` from the prototype into a 300 MB sparse image (mkfs makes nothing smaller).
fn mkfs(t: &Tree, dir: &Path, name: &str, options: &[&str]) -> PathBuf {
    let proto = dir.join("proto.txt");
    std::fs::write(&proto, &t.proto).unwrap();
    let img = dir.join(name);
    std::fs::File::create(&img)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    run_ok(
        tool("mkfs.xfs")
            .args(["-q", "-f"])
            .args(options)
            .arg("-p")
            .arg(&proto)
            .arg(&img),
    );
    img
}

/// Every (path, inode) `xfs_db`'s `ncheck` lists (a folder as `dir/.`), with a leading `/`.
fn ncheck(img: &Path) -> BTreeSet<(String, u64)> {
    let o = run_ok(
        tool("xfs_db")
            .args(["-r", "-c", "blockget -n", "-c", "ncheck"])
            .arg(img),
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (ino, path) = l.trim().split_once(' ')?;
            Some((
                format!("/{}", path.trim().trim_end_matches("/.")),
                ino.parse().ok()?,
            ))
        })
        .collect()
}

#[test]
fn volumes_mkfs_made_read_as_xfs_db_lists_them() {
    let dir = scratch("xfs-proto");
    let t = tree(&dir.join("src"));
    for (name, options, version) in [
        ("v5", &[][..], "XFS v5"),
        ("v4", &["-m", "crc=0"][..], "XFS v4"),
        ("small-blocks", &["-b", "size=1024"][..], "XFS v5"),
        ("big-folder-blocks", &["-n", "size=16384"][..], "XFS v5"),
        ("big-inodes", &["-i", "size=1024"][..], "XFS v5"),
    ] {
        let img = mkfs(&t, &dir, &format!("{name}.img"), options);
        let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
        assert!(info.contains(version), "{name}: {info}");
        // Every path with its inode number, as xfs_db finds them.
        let rows = export(&img, &[]);
        let got: BTreeSet<(String, u64)> = rows
            .iter()
            .filter(|r| r["path"] != "/" && !r["path"].starts_with("/$"))
            .map(|r| (r["path"].clone(), r["record"].parse().unwrap()))
            .collect();
        let want = ncheck(&img);
        let only_uffs: Vec<_> = got.difference(&want).take(10).collect();
        let only_xfs_db: Vec<_> = want.difference(&got).take(10).collect();
        assert!(
            only_uffs.is_empty() && only_xfs_db.is_empty(),
            "{name}: only uffs {only_uffs:?}; only xfs_db {only_xfs_db:?}"
        );
        assert!(got.len() > 3040, "{name}: {}", got.len());
        // Every file's bytes; the symlink's target.
        let hashes = run_ok(uffs().args(["hash", "--source"]).arg(&img));
        let hashes: BTreeMap<String, String> = String::from_utf8(hashes.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once("  "))
            .filter(|(_, p)| !p.starts_with("/$"))
            .map(|(h, p)| (p.to_string(), h.to_string()))
            .collect();
        // A symlink's bytes are its target, as for ext (and icat).
        let want: BTreeMap<String, String> = t
            .files
            .iter()
            .map(|(p, d)| (p.clone(), sha256_hex(d)))
            .chain(
                t.links
                    .iter()
                    .map(|(p, to)| (p.clone(), sha256_hex(to.as_bytes()))),
            )
            .collect();
        let wrong: Vec<_> = want
            .iter()
            .filter(|(p, h)| hashes.get(*p) != Some(*h))
            .map(|(p, h)| (p, h, hashes.get(p)))
            .take(5)
            .collect();
        let extra: Vec<_> = hashes
            .keys()
            .filter(|p| !want.contains_key(*p))
            .take(5)
            .collect();
        assert!(
            wrong.is_empty() && extra.is_empty(),
            "{name}: differ {wrong:?}; extra {extra:?}"
        );
        for (path, target) in &t.links {
            let r = rows.iter().find(|r| &r["path"] == path).unwrap();
            assert_eq!(&r["link_target"], target, "{name}: {path}");
        }
        // du's root total and info's bytes in use: the blocks xfs_db does not count free.
        let du = du_root_allocated(&img);
        assert_eq!(du, xfs_db_in_use(&img), "{name}: du's total");
        std::fs::remove_file(&img).unwrap();
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The block of group `ag`'s inode B+tree root, as `xfs_db` gives it.
fn inobt_root(img: &Path, ag: u32) -> u64 {
    let o = run_ok(
        tool("xfs_db")
            .args(["-r", "-c", &format!("agi {ag}"), "-c", "p root"])
            .arg(img),
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .trim()
        .trim_start_matches("root = ")
        .parse()
        .unwrap()
}

#[test]
fn damage_is_a_warning_or_one_line() {
    let dir = scratch("xfs-damage");
    let t = tree(&dir.join("src"));
    let img = mkfs(&t, &dir, "v5.img", &["-d", "agcount=4"]);
    let before = export(&img, &[]).len();
    // The folders of group 1 and on keep their inodes there: overwrite one group's inode B+tree root.
    let victim = (1..4u32)
        .find(|&ag| {
            let o = run_ok(
                tool("xfs_db")
                    .args(["-r", "-c", &format!("agi {ag}"), "-c", "p count"])
                    .arg(&img),
            );
            !String::from_utf8_lossy(&o.stdout).contains("count = 0")
        })
        .expect("a group besides the first with inodes");
    let o = run_ok(
        tool("xfs_db")
            .args(["-r", "-c", "sb 0", "-c", "p agblocks blocksize"])
            .arg(&img),
    );
    let text = String::from_utf8(o.stdout).unwrap();
    let num = |k: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(k))
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (agblocks, bs) = (num("agblocks"), num("blocksize"));
    let at = (u64::from(victim) * agblocks + inobt_root(&img, victim)) * bs;
    let mut bytes = std::fs::read(&img).unwrap();
    bytes[at as usize..(at + bs) as usize].fill(0x5a);
    std::fs::write(&img, &bytes).unwrap();
    let out = uffs()
        .args(["export", "--format", "csv"])
        .arg(&img)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().unwrap_or(9) <= 3, "{err}");
    assert!(
        err.contains(&format!("allocation group {victim}")) && err.contains("inode B+tree"),
        "{err}"
    );
    let after = csv_rows(&out.stdout).len();
    assert!(after > 10 && after < before, "{after} of {before} entries");
    // A superblock whose groups cannot hold its blocks.
    let mut bad = bytes.clone();
    bad[84..88].copy_from_slice(&8u32.to_be_bytes());
    let bad_img = dir.join("bad.img");
    std::fs::write(&bad_img, &bad).unwrap();
    let out = uffs().arg("info").arg(&bad_img).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("XFS superblock") && err.lines().count() == 1,
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Names the kernel deleted from folders in block and leaf form, read back from the folders' unused space with
/// `--deleted`: exactly the names removed (a short-form folder closes the gap: nothing of it is listed), each with
/// the inode `stat` gave it and its kind, under its folder; a freed inode's entry keeps its owner.
#[test]
fn deleted_names_the_kernel_left_in_folder_blocks() {
    let dir = scratch("xfs-deleted");
    let img = dir.join("d.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(320 << 20)
        .unwrap();
    run_ok(tool("mkfs.xfs").args(["-q", "-f"]).arg(&img));
    let point = dir.join("mnt");
    std::fs::create_dir_all(&point).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-o", "loop"])
        .arg(&img)
        .arg(&point)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        cannot_run("mounting XFS (needs root and the kernel's XFS)");
        return;
    }
    use std::os::unix::fs::{chown, symlink, MetadataExt as _};
    let (big, small) = (point.join("big"), point.join("small"));
    std::fs::create_dir_all(&big).unwrap();
    std::fs::create_dir_all(&small).unwrap();
    for i in 0..300 {
        std::fs::write(
            big.join(format!("entry-number-{i}.txt")),
            format!("file {i}\n"),
        )
        .unwrap();
    }
    std::fs::write(small.join("a"), b"a").unwrap();
    std::fs::write(small.join("b"), b"b").unwrap();
    std::fs::create_dir(big.join("subfolder-gone")).unwrap();
    symlink("target", big.join("link-gone")).unwrap();
    chown(big.join("entry-number-250.txt"), Some(1234), Some(4321)).unwrap();
    run_ok(&mut std::process::Command::new("sync"));
    let mut want = BTreeSet::new();
    let mut gone = |name: &str, kind: &str| {
        let p = big.join(name);
        let ino = std::fs::symlink_metadata(&p).unwrap().ino();
        want.insert((format!("/big/{name}"), ino.to_string(), kind.to_string()));
        if kind == "folder" {
            std::fs::remove_dir(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    };
    for i in (11..20).chain([250]) {
        gone(&format!("entry-number-{i}.txt"), "file");
    }
    gone("link-gone", "symlink");
    gone("subfolder-gone", "folder");
    std::fs::remove_file(small.join("a")).unwrap();
    run_ok(std::process::Command::new("umount").arg(&point));

    let rows = export(&img, &["--deleted"]);
    let got: BTreeSet<(String, String, String)> = rows
        .iter()
        .filter(|r| r["deleted"] == "true")
        .map(|r| (r["path"].clone(), r["record"].clone(), r["kind"].clone()))
        .collect();
    assert_eq!(got, want);
    let owned = rows
        .iter()
        .find(|r| r["path"] == "/big/entry-number-250.txt")
        .unwrap();
    assert_eq!((&owned["uid"][..], &owned["gid"][..]), ("1234", "4321"));
    // Without --deleted, none of them.
    let live = export(&img, &[]);
    assert!(live.iter().all(|r| !want.iter().any(|w| w.0 == r["path"])));
    assert_eq!(live.len() + want.len(), rows.len());
    std::fs::remove_dir_all(&dir).ok();
}

/// Each file's bytes of data extents that FIEMAP does not mark shared (`xfs_io -r -c 'fiemap -v'`, unwritten
/// extents too), by path from the mount's root.
fn fiemap_exclusive(point: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for f in walk_files(point) {
        let o = run_ok(tool("xfs_io").args(["-r", "-c", "fiemap -v"]).arg(&f));
        let mut bytes = 0u64;
        for l in String::from_utf8(o.stdout).unwrap().lines().skip(2) {
            // "N: [from..to]: start..end TOTAL FLAGS", TOTAL in 512-byte units; holes say "hole".
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() < 5 || w[2] == "hole" {
                continue;
            }
            let flags = u32::from_str_radix(w[4].trim_start_matches("0x"), 16).unwrap();
            if flags & 0x2000 == 0 {
                bytes += w[3].parse::<u64>().unwrap() * 512;
            }
        }
        let rel = f.strip_prefix(point).unwrap().to_str().unwrap();
        out.insert(format!("/{rel}"), bytes);
    }
    out
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            v.extend(walk_files(&e.path()));
        } else if t.is_file() {
            v.push(e.path());
        }
    }
    v
}

#[test]
fn reflinked_files_share_their_blocks_once() {
    let dir = scratch("xfs-reflink");
    let img = dir.join("r.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(320 << 20)
        .unwrap();
    run_ok(
        tool("mkfs.xfs")
            .args(["-q", "-f", "-m", "reflink=1"])
            .arg(&img),
    );
    let point = dir.join("mnt");
    std::fs::create_dir_all(&point).unwrap();
    let mount = |opts: &str| {
        std::process::Command::new("mount")
            .args(["-o", opts])
            .arg(&img)
            .arg(&point)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !mount("loop") {
        cannot_run("mounting XFS (needs root and the kernel's XFS)");
        return;
    }
    let p = |rel: &str| point.join(rel);
    let cp = |args: &[&str], from: &str, to: &str| {
        run_ok(
            std::process::Command::new("cp")
                .args(args)
                .arg(p(from))
                .arg(p(to)),
        );
    };
    std::fs::write(p("a.bin"), noise(1, 4 << 20)).unwrap();
    // A whole copy sharing every block, then one block of it written (copied on write).
    cp(&["--reflink=always"], "a.bin", "b.bin");
    run_ok(
        tool("xfs_io")
            .args(["-c", "pwrite -q 40960 4096", "-c", "fsync"])
            .arg(p("b.bin")),
    );
    // A copy of its own, and a file sharing 1 MiB from the middle of another.
    cp(&["--reflink=never"], "a.bin", "c.bin");
    let share = format!("reflink {} 1048576 0 1048576", p("a.bin").display());
    run_ok(
        tool("xfs_io")
            .args(["-f", "-c", &share, "-c", "fsync"])
            .arg(p("d.bin")),
    );
    // Preallocated (unwritten) extents shared; a folder of small files copied whole.
    run_ok(
        tool("xfs_io")
            .args(["-f", "-c", "falloc 0 1048576", "-c", "fsync"])
            .arg(p("pre.bin")),
    );
    cp(&["--reflink=always"], "pre.bin", "pre-copy.bin");
    std::fs::create_dir_all(p("dir")).unwrap();
    for i in 0..20 {
        std::fs::write(
            p(&format!("dir/f{i}")),
            noise(i as u64 + 2, 10_000 + i * 999),
        )
        .unwrap();
    }
    cp(&["-r", "--reflink=always"], "dir", "dir-copy");
    std::fs::write(p("dir-copy/f3"), b"rewritten whole").unwrap();
    run_ok(std::process::Command::new("umount").arg(&point));
    assert!(mount("loop,ro"), "mounting again read-only");
    let want = fiemap_exclusive(&point);
    run_ok(std::process::Command::new("umount").arg(&point));

    // du's root total: each block in use once, as the free-space trees leave them.
    assert_eq!(du_root_allocated(&img), xfs_db_in_use(&img), "du's total");
    let du = run_ok(
        uffs()
            .args(["du", "--depth", "8", "--format", "csv", "--source"])
            .arg(&img),
    );
    let got: BTreeMap<String, u64> = csv_rows(&du.stdout)
        .into_iter()
        .map(|r| (r["path"].clone(), r["exclusive"].parse().unwrap()))
        .collect();
    for (path, bytes) in &want {
        assert_eq!(got.get(path), Some(bytes), "exclusive bytes of {path}");
    }
    assert!(want.len() >= 46, "{} files", want.len());
    // Both kinds are there: files sharing all, some, and none of their blocks.
    assert_eq!(want["/b.bin"], 4096);
    assert_eq!(want["/c.bin"], 4 << 20);
    assert_eq!(want["/pre-copy.bin"], 0);
    std::fs::remove_dir_all(&dir).ok();
}
