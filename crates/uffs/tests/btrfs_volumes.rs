//! Btrfs volumes read raw by uffs and checked against the kernel: a volume changed through a real mount
//! (hard links, symlinks, a FIFO, sparse, fragmented and preallocated files, zlib, LZO and zstd compressed files,
//! reflinked copies, subvolumes, a nested subvolume, snapshots writable and read-only, then changes after the
//! snapshots) compared path by path with `find` over a read-only mount (inode, kind, size, modified time,
//! mode, owner, link target), every file's md5 with `md5sum`'s, and `du`'s total with what `btrfs filesystem
//! usage` says is used; a volume `mkfs.btrfs --rootdir` made; devices uffs cannot read alone refused by name;
//! damage as a warning or one line.

#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A loop-mounted Btrfs image, unmounted when dropped.
struct Mounted {
    point: PathBuf,
    image: PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.point).status();
    }
}

/// A new Btrfs image of `mb` MB (sparse) at `image`, made with `mkfs_args`.
fn make(image: &Path, mb: u64, mkfs_args: &[&str]) {
    let f = std::fs::File::create(image).unwrap();
    f.set_len(mb << 20).unwrap();
    drop(f);
    run_ok(
        tool("mkfs.btrfs")
            .args(["-q", "-f"])
            .args(mkfs_args)
            .arg(image),
    );
}

fn mount(image: &Path, point: &Path, opts: &str) -> Option<Mounted> {
    std::fs::create_dir_all(point).unwrap();
    let ok = Command::new("mount")
        .args(["-o", &format!("loop,{opts}")])
        .arg(image)
        .arg(point)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        cannot_run("mounting Btrfs (needs root and the kernel's btrfs)");
        return None;
    }
    Some(Mounted {
        point: point.to_path_buf(),
        image: image.to_path_buf(),
    })
}

fn btrfs(args: &[&str], at: &Path) {
    run_ok(tool("btrfs").args(args).arg(at));
}

fn write(top: &Path, rel: &str, data: &[u8]) {
    let p = top.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

/// Text that compresses well, different for each `seed`.
fn text(seed: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut n = seed;
    while out.len() < len {
        n = n
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.extend_from_slice(
            format!("line {} of file {seed}: {}\n", out.len(), n >> 40).as_bytes(),
        );
    }
    out.truncate(len);
    out
}

/// Everything the test volume holds, written through the kernel.
fn populate(top: &Path) {
    write(top, "a.txt", b"hello\n");
    write(top, "dir/five.txt", &[b'x'; 5000]);
    write(top, "dir/sub/deeper/big.bin", &vec![7u8; 300_000]);
    write(top, "café/naïve résumé.md", b"# accents\n");
    write(top, "with space/and\ttab.txt", b"t");
    std::fs::create_dir_all(top.join("empty")).unwrap();
    std::fs::hard_link(top.join("a.txt"), top.join("dir/hard1.txt")).unwrap();
    std::fs::hard_link(top.join("a.txt"), top.join("dir/sub/hard2.txt")).unwrap();
    std::os::unix::fs::symlink("a.txt", top.join("link")).unwrap();
    std::os::unix::fs::symlink("t".repeat(900), top.join("long link")).unwrap();
    let fifo =
        std::ffi::CString::new(top.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let owned =
        std::ffi::CString::new(top.join("a.txt").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::chown(owned.as_ptr(), 1234, 5678) }, 0);
    // A folder of more entries than a leaf holds.
    for i in 0..2000 {
        write(
            top,
            &format!("many/a-rather-long-file-name-to-fill-the-listing-{i:05}.txt"),
            format!("{i}\n").as_bytes(),
        );
    }
    // Every other 4 KiB block, each written and synced alone: an extent each, holes between.
    let mut f = std::fs::File::create(top.join("fragmented.bin")).unwrap();
    for i in 0..300u64 {
        f.seek(SeekFrom::Start(i * 8192)).unwrap();
        f.write_all(&[(i % 251) as u8 + 1; 4096]).unwrap();
        f.sync_data().unwrap();
    }
    // A hole at the end (truncate), and one in the middle.
    let mut f = std::fs::File::create(top.join("sparse.bin")).unwrap();
    f.write_all(&[1u8; 10_000]).unwrap();
    f.seek(SeekFrom::Start(5 << 20)).unwrap();
    f.write_all(&[2u8; 10_000]).unwrap();
    f.set_len(9 << 20).unwrap();
    let f = std::fs::File::create(top.join("preallocated.bin")).unwrap();
    // SAFETY: a valid descriptor.
    assert_eq!(
        unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 0, 1 << 20) },
        0
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(top.join("preallocated.bin"))
        .unwrap()
        .write_all(b"written at the start")
        .unwrap();
    // Compressed: each codec's folder compresses what is written into it, large and small (inline) files.
    for (k, codec) in ["zlib", "lzo", "zstd"].iter().enumerate() {
        let d = top.join(codec);
        std::fs::create_dir_all(&d).unwrap();
        run_ok(
            tool("btrfs")
                .args(["property", "set"])
                .arg(&d)
                .args(["compression", codec]),
        );
        write(top, &format!("{codec}/big.txt"), &text(k as u64, 1_500_000));
        write(
            top,
            &format!("{codec}/small.txt"),
            &text(10 + k as u64, 3000),
        );
        // Written, then partly overwritten: an extent referenced in part (bookends).
        let p = d.join("rewritten.txt");
        std::fs::write(&p, text(20 + k as u64, 600_000)).unwrap();
        let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.sync_all().unwrap();
        f.seek(SeekFrom::Start(200_000)).unwrap();
        f.write_all(&text(30 + k as u64, 100_000)).unwrap();
    }
    // A reflinked copy: the same extents, counted once.
    write(top, "original.bin", &text(40, 2_000_000));
    run_ok(
        Command::new("cp")
            .arg("--reflink=always")
            .arg(top.join("original.bin"))
            .arg(top.join("reflinked.bin")),
    );
    // Subvolumes: one with a nested one, snapshots of it and of the top level, then changes after them.
    btrfs(&["subvolume", "create"], &top.join("sub1"));
    write(top, "sub1/in-sub.txt", b"in a subvolume\n");
    write(top, "sub1/folder/deep.txt", &text(50, 20_000));
    btrfs(&["subvolume", "create"], &top.join("sub1/nested"));
    write(top, "sub1/nested/inner.txt", b"nested\n");
    std::fs::create_dir_all(top.join("snaps")).unwrap();
    run_ok(
        tool("btrfs")
            .args(["subvolume", "snapshot"])
            .arg(top.join("sub1"))
            .arg(top.join("snaps/sub1-writable")),
    );
    run_ok(
        tool("btrfs")
            .args(["subvolume", "snapshot", "-r"])
            .arg(top)
            .arg(top.join("snaps/top-read-only")),
    );
    std::fs::remove_file(top.join("sub1/in-sub.txt")).unwrap();
    std::fs::rename(top.join("sub1/folder"), top.join("sub1/renamed")).unwrap();
    write(
        top,
        "sub1/renamed/deep.txt",
        b"changed after the snapshots\n",
    );
    write(top, "snaps/sub1-writable/new-in-snapshot.txt", b"n");
    std::fs::remove_file(top.join("dir/five.txt")).unwrap();
    std::fs::rename(top.join("dir/sub"), top.join("moved")).unwrap();
    // A file whose second MiB is a clone of its first: one extent it references at two places, which the kernel
    // counts as shared (unlike the pieces of a partial overwrite, all at one place).
    write(top, "self-clone.bin", &text(60, 2 << 20));
    run_ok(
        tool("xfs_io")
            .args([
                "-c",
                &format!(
                    "reflink {} 0 1048576 1048576",
                    top.join("self-clone.bin").display()
                ),
            ])
            .args(["-c", "fsync"])
            .arg(top.join("self-clone.bin")),
    );
}

/// One entry as compared: kind, size (files and links), modified (100 ns units since 1970), mode, uid, gid,
/// link target.
type Row = (String, String, String, String, String, String, String);

/// Every entry below `top` as `find` prints it (into subvolumes, which are other devices to it): path →
/// (inode, row).
fn find_rows(top: &Path) -> BTreeMap<String, (u64, Row)> {
    let out = run_ok(Command::new("find").arg(top).args([
        "-mindepth",
        "1",
        "-printf",
        "%p\\0%i\\0%y\\0%s\\0%T@\\0%M\\0%U\\0%G\\0%l\\0",
    ]));
    let fields: Vec<String> = out
        .stdout
        .split(|&b| b == 0)
        .map(|f| String::from_utf8(f.to_vec()).unwrap())
        .collect();
    let t = top.display().to_string();
    fields
        .chunks_exact(9)
        .map(|r| {
            let kind = match r[2].as_str() {
                "d" => "folder",
                "f" => "file",
                "l" => "symlink",
                _ => "special",
            };
            let (s, frac) = r[4].split_once('.').unwrap_or((&r[4], "0"));
            let frac: String = frac.chars().chain(std::iter::repeat('0')).take(7).collect();
            let ticks = s.parse::<i64>().unwrap() * 10_000_000 + frac.parse::<i64>().unwrap();
            let size = if matches!(kind, "file" | "symlink") {
                r[3].clone()
            } else {
                String::new()
            };
            let row = (
                kind.to_string(),
                size,
                ticks.to_string(),
                r[5].clone(),
                r[6].clone(),
                r[7].clone(),
                r[8].clone(),
            );
            (r[0][t.len()..].to_string(), (r[1].parse().unwrap(), row))
        })
        .collect()
}

/// What `uffs export` lists of `image`: path → (record, row), its own `$` entries left out.
fn uffs_rows(image: &Path) -> BTreeMap<String, (u64, Row)> {
    export(image, &[])
        .into_iter()
        .filter(|r| r["path"] != "/" && !r["path"].starts_with("/$"))
        .map(|r| {
            let kind = match r["kind"].as_str() {
                "folder" | "file" | "symlink" => r["kind"].clone(),
                _ => "special".into(),
            };
            let size = if matches!(kind.as_str(), "file" | "symlink") {
                r["size"].clone()
            } else {
                String::new()
            };
            let modified = iso_ticks(&r["modified"]);
            let row = (
                kind,
                size,
                modified.to_string(),
                r["mode"].clone(),
                r["uid"].clone(),
                r["gid"].clone(),
                r["link_target"].clone(),
            );
            (r["path"].clone(), (r["record"].parse().unwrap(), row))
        })
        .collect()
}

/// `md5sum` of every file below `top`, by path from it.
fn md5sums(top: &Path) -> BTreeMap<String, String> {
    let out = run_ok(
        Command::new("find")
            .arg(top)
            .args(["-type", "f", "-exec", "md5sum", "{}", "+"]),
    );
    let t = top.display().to_string();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (hex, path) = l.split_once("  ").unwrap();
            (path[t.len()..].to_string(), hex.to_string())
        })
        .collect()
}

/// `btrfs filesystem usage -b`'s "Used:" (every copy counted) and `btrfs filesystem df -b`'s data used.
fn kernel_usage(point: &Path) -> (u64, u64) {
    let usage = String::from_utf8(
        run_ok(tool("btrfs").args(["filesystem", "usage", "-b"]).arg(point)).stdout,
    )
    .unwrap();
    let used = usage
        .lines()
        .find_map(|l| l.trim().strip_prefix("Used:"))
        .expect("a Used: line")
        .trim()
        .parse()
        .unwrap();
    let df =
        String::from_utf8(run_ok(tool("btrfs").args(["filesystem", "df", "-b"]).arg(point)).stdout)
            .unwrap();
    let data = df
        .lines()
        .find(|l| l.starts_with("Data"))
        .and_then(|l| l.split("used=").nth(1))
        .expect("a Data line")
        .trim()
        .parse()
        .unwrap();
    (used, data)
}

/// `btrfs filesystem du --raw` over the mount: every file and folder it reaches (into subvolumes and
/// snapshots; an inode once) → its "Exclusive" bytes, by path from the mount's root.
fn kernel_exclusive(point: &Path) -> BTreeMap<String, u64> {
    let out = run_ok(tool("btrfs").args(["filesystem", "du", "--raw"]).arg(point));
    let text = String::from_utf8(out.stdout).unwrap();
    let top = point.to_str().unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            // Three right-aligned numbers ("-" for an unknown set shared), two spaces, the path as it is.
            let mut rest = l.trim_start();
            let mut fields = Vec::new();
            for _ in 0..3 {
                let (f, r) = rest.split_once(' ').expect("a du line");
                fields.push(f);
                rest = r.trim_start_matches(' ');
            }
            let path = l[l.len() - rest.len()..].strip_prefix(top).unwrap();
            let path = if path.is_empty() { "/" } else { path };
            (path.to_string(), fields[1].parse().unwrap())
        })
        .collect()
}

/// `uffs du` of every entry, any depth: path → (exclusive, allocated).
fn uffs_exclusive(source: &Path) -> BTreeMap<String, (u64, u64)> {
    let out = run_ok(
        uffs()
            .arg("du")
            .arg("--source")
            .arg(source)
            .args(["--depth", "64", "--format", "csv"]),
    );
    csv_rows(&out.stdout)
        .into_iter()
        .map(|r| {
            let n = |c: &str| r[c].parse::<u64>().unwrap();
            (r["path"].clone(), (n("exclusive"), n("allocated")))
        })
        .collect()
}

#[test]
fn a_volume_the_kernel_changed_reads_as_find_md5sum_and_btrfs_see_it() {
    let dir = scratch("btrfs-kernel");
    let img = dir.join("vol.img");
    make(&img, 512, &[]);
    let point = dir.join("mnt");
    {
        let Some(m) = mount(&img, &point, "rw") else {
            return;
        };
        populate(&m.point);
    }
    let Some(m) = mount(&img, &point, "ro") else {
        return;
    };
    let want = find_rows(&m.point);
    let got = uffs_rows(&m.image);
    let paths = |m: &BTreeMap<String, (u64, Row)>| m.keys().cloned().collect::<BTreeSet<_>>();
    let only_got: Vec<_> = paths(&got)
        .difference(&paths(&want))
        .take(20)
        .cloned()
        .collect();
    let only_want: Vec<_> = paths(&want)
        .difference(&paths(&got))
        .take(20)
        .cloned()
        .collect();
    assert!(
        only_got.is_empty() && only_want.is_empty(),
        "only uffs lists {only_got:?}; only find lists {only_want:?}"
    );
    let mut placeholders = 0;
    for (path, (ino, row)) in &want {
        let (record, got_row) = &got[path];
        if *ino == 2 {
            // The empty folder a snapshot shows for a subvolume nested in the snapshotted one: the kernel makes
            // it up at each lookup, its times the time of the lookup.
            placeholders += 1;
            assert_eq!(
                (record & 0xF_FFFF, got_row.0.as_str()),
                (*ino, "folder"),
                "{path}"
            );
            continue;
        }
        // Records: the top level's are its inode numbers, each other subvolume's from a multiple of 2^20 on.
        assert!(*ino < 1 << 20);
        assert_eq!((record & 0xF_FFFF, got_row), (*ino, row), "{path}");
    }
    assert!(placeholders >= 2, "{placeholders} placeholder folders");
    // The snapshots kept what was changed after them.
    for p in [
        "/snaps/sub1-writable/in-sub.txt",
        "/snaps/sub1-writable/folder/deep.txt",
        "/snaps/top-read-only/dir/five.txt",
        "/snaps/top-read-only/dir/sub/hard2.txt",
    ] {
        assert!(got.contains_key(p), "{p}");
    }
    // Every file's bytes: plain, sparse, preallocated, inline, compressed with each codec, reflinked.
    let sums = md5sums(&m.point);
    let out = run_ok(
        uffs()
            .args(["hash", "--algo", "md5", "--source"])
            .arg(&m.image),
    );
    let hashed: BTreeMap<String, String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once("  "))
        .filter(|(_, p)| !p.starts_with("/$") && want.get(*p).is_some_and(|(_, r)| r.0 == "file"))
        .map(|(h, p)| (p.to_string(), h.to_string()))
        .collect();
    assert_eq!(hashed.len(), sums.len());
    for (p, h) in &sums {
        assert_eq!(hashed.get(p), Some(h), "{p}");
    }
    // du: each byte in use once (shared extents once, metadata's two copies both), as the kernel counts.
    let (used, data) = kernel_usage(&m.point);
    assert_eq!(du_root_allocated(&m.image), used);
    let files: u64 = export(&m.image, &[])
        .iter()
        .filter(|r| !r["path"].starts_with("/$"))
        .map(|r| r["allocated"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        files, data,
        "the files' allocation against the data block groups' use"
    );
    // What no other file or snapshot shares: each file and folder as `btrfs filesystem du` counts it (reflinked
    // copies, files of snapshots before and after changes, bookends, compressed, preallocated, inline).
    let kernel = kernel_exclusive(&m.point);
    let ours = uffs_exclusive(&m.image);
    let mut compared = 0;
    for (path, want) in &kernel {
        let Some((got, _)) = ours.get(path) else {
            panic!("uffs du lists no {path}");
        };
        assert_eq!(got, want, "exclusive bytes of {path}");
        compared += 1;
    }
    assert!(compared > 2000, "{compared} paths compared");
    // A snapshot read alone (a state) still knows what the others share with it.
    let id = subvolume_ids(&m.point)["snaps/sub1-writable"];
    let mut spec = m.image.clone().into_os_string();
    spec.push(format!("@snap{id}"));
    let alone = uffs_exclusive(Path::new(&spec));
    let mut in_state = 0;
    for (path, want) in &kernel {
        if let Some(rest) = path.strip_prefix("/snaps/sub1-writable") {
            let rest = if rest.is_empty() { "/" } else { rest };
            assert_eq!(
                alone.get(rest).map(|x| x.0),
                Some(*want),
                "{path} read alone"
            );
            in_state += 1;
        }
    }
    assert!(in_state >= 4, "{in_state} paths of the snapshot");
    // Both sides of sharing are there: shared files, and files whose data is all their own.
    for (path, shared) in [
        ("/original.bin", true),
        ("/reflinked.bin", true),
        ("/snaps/top-read-only/original.bin", true),
        ("/fragmented.bin", true),
        ("/self-clone.bin", true),
        // Its file in sub1 was written anew after the snapshot.
        ("/snaps/sub1-writable/folder/deep.txt", false),
    ] {
        let (x, allocated) = ours[path];
        assert_eq!(
            x == 0,
            shared,
            "{path}: exclusive {x}, allocated {allocated}"
        );
    }
    // info names the subvolumes and snapshots.
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&m.image)).stdout).unwrap();
    for s in [
        "256 sub1;",
        "sub1/nested",
        "snaps/sub1-writable (snapshot of sub1)",
        "snaps/top-read-only (snapshot of the top level, read-only)",
    ] {
        assert!(info.contains(s), "{s} in:\n{info}");
    }
    drop(m);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_volume_mkfs_made_from_a_folder() {
    let dir = scratch("btrfs-rootdir");
    let src = dir.join("src");
    let mut files = BTreeMap::new();
    for i in 0..3000 {
        let rel = format!("d{}/e{}/file-{i:05}.txt", i % 7, i % 13);
        let data = text(i, (i as usize * 37) % 9000);
        write(&src, &rel, &data);
        files.insert(format!("/{rel}"), data);
    }
    std::os::unix::fs::symlink("d1", src.join("to-d1")).unwrap();
    let img = dir.join("root.img");
    // Metadata kept once, 4 KiB nodes: other geometry than the kernel test's.
    make(
        &img,
        300,
        &[
            "--rootdir",
            src.to_str().unwrap(),
            "-m",
            "single",
            "-n",
            "4096",
        ],
    );
    let rows = export(&img, &[]);
    let got: BTreeMap<String, u64> = rows
        .iter()
        .filter(|r| r["kind"] == "file" && !r["path"].starts_with("/$"))
        .map(|r| (r["path"].clone(), r["size"].parse().unwrap()))
        .collect();
    let want: BTreeMap<String, u64> = files
        .iter()
        .map(|(p, d)| (p.clone(), d.len() as u64))
        .collect();
    assert_eq!(got, want);
    assert!(rows
        .iter()
        .any(|r| r["path"] == "/to-d1" && r["link_target"] == "d1"));
    let sums = md5sums(&src);
    let out = run_ok(
        uffs()
            .args(["hash", "--algo", "md5", "--source"])
            .arg(&img)
            .arg("*.txt"),
    );
    let hashed: BTreeMap<String, String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(h, p)| (p.to_string(), h.to_string()))
        .collect();
    assert_eq!(hashed, sums);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn devices_uffs_cannot_read_alone_are_refused_by_name_and_damage_is_a_warning_or_one_line() {
    let dir = scratch("btrfs-devices");
    let (a, b) = (dir.join("a.img"), dir.join("b.img"));
    for p in [&a, &b] {
        let f = std::fs::File::create(p).unwrap();
        f.set_len(300 << 20).unwrap();
    }
    run_ok(
        tool("mkfs.btrfs")
            .args(["-q", "-f", "-d", "raid0", "-m", "raid1"])
            .arg(&a)
            .arg(&b),
    );
    let out = uffs().arg("info").arg(&a).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("2 devices") && err.contains("RAID0") && err.contains("needs devices 2"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A superblock that does not add up: one line, exit 2.
    let bad = dir.join("bad.img");
    make(&bad, 200, &[]);
    let mut f = std::fs::OpenOptions::new().write(true).open(&bad).unwrap();
    f.seek(SeekFrom::Start(0x10000 + 0x94)).unwrap();
    f.write_all(&12345u32.to_le_bytes()).unwrap();
    drop(f);
    let out = uffs()
        .arg("index")
        .arg(&bad)
        .arg("-o")
        .arg(dir.join("bad.uffs"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("node size 12345"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Subvolume ids by path, as `btrfs subvolume list` gives them.
fn subvolume_ids(point: &Path) -> BTreeMap<String, u64> {
    let out =
        String::from_utf8(run_ok(tool("btrfs").args(["subvolume", "list"]).arg(point)).stdout)
            .unwrap();
    out.lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[w.len() - 1].to_string(), w[1].parse().unwrap())
        })
        .collect()
}

#[test]
fn snapshots_are_states_searched_read_and_diffed() {
    let dir = scratch("btrfs-states");
    let img = dir.join("vol.img");
    make(&img, 300, &[]);
    let point = dir.join("mnt");
    let ids = {
        let Some(m) = mount(&img, &point, "rw") else {
            return;
        };
        let top = &m.point;
        btrfs(&["subvolume", "create"], &top.join("data"));
        write(top, "data/a.txt", b"one\n");
        write(top, "data/b.txt", b"kept by the first snapshot\n");
        write(top, "data/folder/c.txt", &text(1, 300_000));
        std::fs::create_dir_all(top.join("snaps")).unwrap();
        let snap = |name: &str| {
            run_ok(
                tool("btrfs")
                    .args(["subvolume", "snapshot", "-r"])
                    .arg(top.join("data"))
                    .arg(top.join("snaps").join(name)),
            );
        };
        snap("day1");
        std::fs::write(top.join("data/a.txt"), b"one\ntwo\n").unwrap();
        std::fs::remove_file(top.join("data/b.txt")).unwrap();
        std::fs::rename(top.join("data/folder"), top.join("data/moved")).unwrap();
        write(top, "data/d.txt", b"new\n");
        snap("day2");
        subvolume_ids(top)
    };
    let (day1, day2) = (ids["snaps/day1"], ids["snaps/day2"]);
    let state = |id: u64| format!("{}@snap{id}", img.display());
    // info lists them; a state read alone says so.
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
    assert!(
        info.contains(&format!("{day1} snaps/day1 (snapshot of data, read-only)")),
        "{info}"
    );
    assert_eq!(
        info.lines()
            .filter(|l| l.trim_start().starts_with("label"))
            .count(),
        1,
        "{info}"
    );
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(state(day2))).stdout).unwrap();
    assert!(
        info.contains(&format!("subvolume {day2} (snaps/day2), read-only")),
        "{info}"
    );
    // diff between the two states: what changed between the snapshots, by inode.
    let out = uffs()
        .arg("diff")
        .arg(state(day1))
        .arg(state(day2))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let diff = String::from_utf8(out.stdout).unwrap();
    let lines: BTreeSet<String> = diff
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    for want in [
        "renamed /moved",
        "deleted /b.txt",
        "created /d.txt",
        "changed /a.txt",
    ] {
        assert!(lines.contains(want), "{want} in:\n{diff}");
    }
    // Searched as states beside the volume, their paths prefixed.
    let out = run_ok(
        uffs()
            .arg("--source")
            .arg(&img)
            .args(["--snapshots", "b.txt"]),
    );
    let found: BTreeSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let want: BTreeSet<String> = [
        "/snaps/day1/b.txt".to_string(),
        format!("@snap{day1}:/b.txt"),
    ]
    .into();
    assert_eq!(found, want);
    // The daemon: each snapshot registered as a volume of its own.
    let w = common::daemon::World::new("btrfs-states");
    let added = w.ok(&[
        "volumes",
        "add",
        path_str(&img),
        "--name",
        "vol",
        "--snapshots",
        "--refresh",
        "never",
    ]);
    assert!(
        added.contains(&format!("vol@snap{day2}"))
            || w.ok(&["volumes", "list"])
                .contains(&format!("vol@snap{day2}")),
        "{added}"
    );
    w.start();
    w.wait_ready(60);
    let answers = w.ok(&["b.txt"]);
    assert!(
        answers.contains(&format!("vol@snap{day1}:/b.txt"))
            && answers.contains("vol:/snaps/day1/b.txt"),
        "{answers}"
    );
    assert!(!answers.contains(&format!("vol@snap{day2}:")), "{answers}");
    w.ok(&["daemon", "stop"]);
    // A state's files read as the snapshot's, against md5sum over the mounted snapshot.
    let Some(m) = mount(&img, &point, "ro") else {
        return;
    };
    let sums = md5sums(&m.point.join("snaps/day1"));
    let out = run_ok(
        uffs()
            .args(["hash", "--algo", "md5", "--source"])
            .arg(state(day1)),
    );
    let got: BTreeMap<String, String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once("  "))
        .map(|(h, p)| (p.to_string(), h.to_string()))
        .collect();
    assert_eq!(got, sums);
    let old = run_ok(uffs().arg("cat").arg(state(day1)).arg("/b.txt"));
    assert_eq!(old.stdout, b"kept by the first snapshot\n");
    // A snapshot that is not there: its id named with the ones that are.
    let out = uffs().arg("info").arg(state(999)).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no subvolume 999") && err.contains(&format!("snap{day1} (snaps/day1)")),
        "{err}"
    );
    drop(m);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_mounted_subvolume_is_read_raw_as_itself_and_a_bind_mount_is_walked() {
    let dir = scratch("btrfs-mounted");
    let img = dir.join("vol.img");
    make(&img, 300, &[]);
    let Some(top) = mount(&img, &dir.join("top"), "rw") else {
        return;
    };
    btrfs(&["subvolume", "create"], &top.point.join("home"));
    write(&top.point, "home/ana/notes.txt", b"n\n");
    write(&top.point, "home/ana/deep/er.txt", b"e\n");
    write(&top.point, "outside.txt", b"o\n");
    std::fs::create_dir_all(top.point.join("plain/inner")).unwrap();
    write(&top.point, "plain/inner/x.txt", b"x\n");
    // Raw reads see what the kernel committed.
    run_ok(Command::new("sync").arg("-f").arg(&top.point));
    let point = dir.join("home");
    std::fs::create_dir_all(&point).unwrap();
    run_ok(
        Command::new("mount")
            .args(["-o", "subvol=home"])
            .arg(loop_device_of(&top.point))
            .arg(&point),
    );
    let home = Mounted {
        point: point.clone(),
        image: img.clone(),
    };
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&home.point)).stdout).unwrap();
    assert!(
        info.contains("mounted folder, its Btrfs file system read raw"),
        "{info}"
    );
    let listed = |folder: &Path| -> BTreeSet<String> {
        csv_rows(&run_ok(uffs().arg("export").arg(folder).args(["--format", "csv"])).stdout)
            .into_iter()
            .map(|r| r["path"].clone())
            .filter(|p| *p != format!("{}/", folder.display()))
            .collect()
    };
    let want: BTreeSet<String> = find_rows(&home.point)
        .into_keys()
        .map(|p| format!("{}{p}", home.point.display()))
        .collect();
    assert_eq!(listed(&home.point), want);
    // A bind mount of a plain folder is walked, and says why.
    let bind = dir.join("bind");
    std::fs::create_dir_all(&bind).unwrap();
    run_ok(
        Command::new("mount")
            .arg("--bind")
            .arg(top.point.join("plain"))
            .arg(&bind),
    );
    let bound = Mounted {
        point: bind.clone(),
        image: img.clone(),
    };
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&bound.point)).stdout).unwrap();
    assert!(
        info.contains("walked") && info.contains("the /plain folder of"),
        "{info}"
    );
    assert_eq!(
        listed(&bound.point),
        [
            format!("{}/inner", bind.display()),
            format!("{}/inner/x.txt", bind.display())
        ]
        .into()
    );
    drop(bound);
    drop(home);
    drop(top);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The loop device the file system mounted at `point` is on.
fn loop_device_of(point: &Path) -> String {
    let out = run_ok(
        Command::new("findmnt")
            .args(["-n", "-o", "SOURCE"])
            .arg(point),
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
