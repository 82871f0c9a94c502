//! Mounted folders as sources (issue 56): trees written through the kernel's ext4, XFS, Btrfs and tmpfs and an
//! ntfs-3g FUSE mount, walked by uffs and checked against `find -xdev` over the same mount: every path, inode,
//! kind, size, allocated bytes, modification time, mode, owner, group and symlink target, hard links as one
//! record with a name each. Also: mounts below not crossed unless `--cross-mounts` (and then not into a pruned
//! file system type or a bind mount of one walked already), updatedb's prune rules, pseudo file systems refused,
//! a folder another user may not read (a warning, the rest read, exit 3), a mount's top read raw where root may,
//! ext4 and XFS images the kernel wrote read raw with every row as `find` gives it and every file's bytes,
//! index files and the daemon printing the real paths, and the daemon's index after changes made through the
//! kernel equal to a fresh walk.

#![cfg(target_os = "linux")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A file system mounted for a test, unmounted (and its loop image removed) when dropped.
struct Mounted {
    point: PathBuf,
    image: Option<PathBuf>,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.point)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.point).status();
        }
        if let Some(img) = &self.image {
            let _ = std::fs::remove_file(img);
        }
    }
}

/// A fresh file system of type `kind` (`ext4`, `xfs`, `btrfs`, `tmpfs`) mounted at `point`; `None` (said through
/// [`cannot_run`]) where this machine cannot mount one.
fn mount(kind: &str, point: &Path) -> Option<Mounted> {
    std::fs::create_dir_all(point).unwrap();
    let image = (kind != "tmpfs").then(|| point.with_extension(format!("{kind}.img")));
    if let Some(img) = &image {
        let f = std::fs::File::create(img).unwrap();
        // XFS needs 300 MB at least; sparse, so only what is written takes room.
        f.set_len(320 << 20).unwrap();
        drop(f);
        let force = if kind == "xfs" || kind == "btrfs" {
            "-f"
        } else {
            "-F"
        };
        run_ok(tool(&format!("mkfs.{kind}")).args(["-q", force]).arg(img));
    }
    let mut cmd = Command::new("mount");
    match &image {
        Some(img) => cmd.args(["-o", "loop"]).arg(img),
        None => cmd.args(["-t", "tmpfs", "tmpfs"]),
    };
    if !cmd.arg(point).status().is_ok_and(|s| s.success()) {
        cannot_run(&format!(
            "mounting {kind} (needs root and the kernel's {kind})"
        ));
        return None;
    }
    Some(Mounted {
        point: point.to_path_buf(),
        image,
    })
}

/// A tree with one of each thing a walk keeps, written through the kernel into `top`.
fn populate(top: &Path) {
    let w = |rel: &str, data: &[u8]| {
        let p = top.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    };
    w("a.txt", b"hello\n");
    w("dir/five.txt", &[b'x'; 5000]);
    w("dir/sub/deeper/big.bin", &vec![7u8; 300_000]);
    w("café/naïve résumé.md", b"# accents\n");
    w("with space/and\ttab.txt", b"t");
    w(".hidden/.dotfile", b"d");
    w(".git/objects/pack", b"p");
    std::fs::create_dir_all(top.join("empty")).unwrap();
    std::fs::hard_link(top.join("a.txt"), top.join("dir/hard1.txt")).unwrap();
    std::fs::hard_link(top.join("a.txt"), top.join("dir/sub/hard2.txt")).unwrap();
    std::os::unix::fs::symlink("a.txt", top.join("link")).unwrap();
    std::os::unix::fs::symlink("/nowhere/at/all", top.join("dangling")).unwrap();
    let fifo =
        std::ffi::CString::new(top.join("fifo").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    // A folder of more entries than one 128 KiB listing holds.
    std::fs::create_dir_all(top.join("many")).unwrap();
    for i in 0..5000 {
        std::fs::write(
            top.join(format!(
                "many/a-rather-long-file-name-to-fill-the-listing-{i:05}.txt"
            )),
            b"",
        )
        .unwrap();
    }
    let f = std::fs::File::create(top.join("sparse.bin")).unwrap();
    f.set_len(3 << 20).unwrap();
    let mut deep = top.join("deep");
    for i in 0..40 {
        deep = deep.join(format!("level{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("bottom.txt"), b"b").unwrap();
    let chown = std::ffi::CString::new(
        top.join("dir/five.txt")
            .into_os_string()
            .into_encoded_bytes(),
    )
    .unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::chown(chown.as_ptr(), 1234, 5678) }, 0);
}

/// One entry as compared: kind, size (files and links), allocated bytes, modified (100 ns units since 1970),
/// mode, uid, gid, link target.
type Row = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
);

/// Every entry below `top` (itself left out) as `find -xdev` prints it: path → (inode, row).
fn find_rows(top: &Path, extra: &[&str]) -> BTreeMap<String, (u64, Row)> {
    let out = run_ok(
        Command::new("find")
            .arg(top)
            .arg("-xdev")
            .args(extra)
            .args([
                "-mindepth",
                "1",
                "-printf",
                "%p\\0%i\\0%y\\0%s\\0%b\\0%T@\\0%M\\0%U\\0%G\\0%l\\0",
            ]),
    );
    let fields: Vec<String> = out
        .stdout
        .split(|&b| b == 0)
        .map(|f| String::from_utf8(f.to_vec()).unwrap())
        .collect();
    let mut rows = BTreeMap::new();
    for r in fields.chunks_exact(10) {
        let kind = match r[2].as_str() {
            "d" => "folder",
            "f" => "file",
            "l" => "symlink",
            _ => "special",
        };
        // `%T@` is seconds and a fraction of up to 9 digits: as 100 ns units.
        let (s, frac) = r[5].split_once('.').unwrap_or((&r[5], "0"));
        let frac: String = frac.chars().chain(std::iter::repeat('0')).take(7).collect();
        let ticks = s.parse::<i64>().unwrap() * 10_000_000 + frac.parse::<i64>().unwrap();
        let size = if matches!(kind, "file" | "symlink") {
            r[3].clone()
        } else {
            String::new()
        };
        let allocated = (r[4].parse::<u64>().unwrap() * 512).to_string();
        rows.insert(
            r[0].clone(),
            (
                r[1].parse().unwrap(),
                (
                    kind.to_string(),
                    size,
                    allocated,
                    ticks.to_string(),
                    r[6].clone(),
                    r[7].clone(),
                    r[8].clone(),
                    r[9].clone(),
                ),
            ),
        );
    }
    rows
}

/// Two sets of paths the same, or a panic naming what only one has.
fn same_paths(got: &BTreeSet<String>, want: &BTreeSet<String>, what: &str) {
    let only_got: Vec<_> = got.difference(want).take(20).collect();
    let only_want: Vec<_> = want.difference(got).take(20).collect();
    assert!(
        only_got.is_empty() && only_want.is_empty(),
        "{what}: only uffs lists {only_got:?}; only the reference lists {only_want:?}"
    );
}

/// What `uffs export SOURCE` (with `extra` options) lists below `top`: path → (record, row).
fn uffs_rows(source: &Path, top: &Path, extra: &[&str]) -> BTreeMap<String, (u64, Row)> {
    let rows = csv_rows(
        &run_ok(
            uffs()
                .arg("export")
                .arg(source)
                .args(["--format", "csv"])
                .args(extra),
        )
        .stdout,
    );
    let top = format!("{}/", top.display());
    rows.into_iter()
        .filter(|r| r["path"] != top)
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
            let row = (
                kind,
                size,
                r["allocated"].clone(),
                iso_ticks(&r["modified"]).to_string(),
                r["mode"].clone(),
                r["uid"].clone(),
                r["gid"].clone(),
                r["link_target"].clone(),
            );
            (r["path"].clone(), (r["record"].parse().unwrap(), row))
        })
        .collect()
}

/// The walk of `top` against `find -xdev`: the same paths with the same facts, inode numbers as the records
/// (those the walk numbers itself aside), and the names of each hard-linked file sharing one record.
fn same_as_find(top: &Path, what: &str) {
    let want = find_rows(top, &[]);
    let got = uffs_rows(
        top,
        top,
        &["--walk", "--prune-names", "", "--prune-paths", ""],
    );
    let paths = |m: &BTreeMap<String, (u64, Row)>| m.keys().cloned().collect::<BTreeSet<_>>();
    same_paths(&paths(&got), &paths(&want), what);
    let mut by_inode: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for (path, (ino, row)) in &want {
        let (record, got_row) = &got[path];
        assert_eq!(got_row, row, "{what}: {path}");
        // The walk numbers an entry by its inode unless that does not fit the index's records (or is 2).
        assert!(
            record == ino || *ino == 2 || *ino >= 1 << 31,
            "{what}: {path}: record {record}, inode {ino}"
        );
        by_inode.entry(*ino).or_default().insert(*record);
    }
    for (ino, records) in by_inode {
        assert_eq!(
            records.len(),
            1,
            "{what}: inode {ino}'s names are one record: {records:?}"
        );
    }
    assert!(want.len() > 5050, "{what}: {} entries", want.len());
}

#[test]
fn walks_ext4_xfs_btrfs_and_tmpfs_as_find_sees_them() {
    let dir = scratch("folders-kinds");
    for kind in ["ext4", "xfs", "btrfs", "tmpfs"] {
        let Some(m) = mount(kind, &dir.join(kind)) else {
            return;
        };
        populate(&m.point);
        same_as_find(&m.point, kind);
        // `info` says how: walked, on which file system, and why not raw.
        let info = String::from_utf8(run_ok(uffs().args(["info", "--walk"]).arg(&m.point)).stdout)
            .unwrap();
        assert!(info.contains("mounted folder, walked"), "{info}");
        assert!(info.contains(&format!("File system {kind}")), "{info}");
        assert!(info.contains("not raw: --walk"), "{info}");
    }
}

#[test]
fn walks_a_fuse_mount() {
    let dir = scratch("folders-fuse");
    let img = dir.join("vol.img");
    std::fs::copy(fixture("basic.img"), &img).unwrap();
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    if !Command::new("ntfs-3g")
        .args(["-o", "ro"])
        .arg(&img)
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success())
    {
        cannot_run("an ntfs-3g FUSE mount (needs /dev/fuse)");
        return;
    }
    let _m = Mounted {
        point: mnt.clone(),
        image: None,
    };
    let want: BTreeSet<String> = find_rows(&mnt, &[]).into_keys().collect();
    let got: BTreeSet<String> = uffs_rows(&mnt, &mnt, &["--walk", "--prune-names", ""])
        .into_keys()
        .collect();
    same_paths(&got, &want, "ntfs-3g");
    assert!(want.len() > 3, "{want:?}");
    let info = String::from_utf8(run_ok(uffs().args(["info", "--walk"]).arg(&mnt)).stdout).unwrap();
    // ntfs-3g through libfuse3 mounts as `fuse` (as `fuseblk` on a block device).
    assert!(info.contains("File system fuse"), "{info}");
}

#[test]
fn mounts_below_prune_rules_and_pseudo_file_systems() {
    let dir = scratch("folders-mounts");
    let Some(outer) = mount("ext4", &dir.join("outer")) else {
        return;
    };
    populate(&outer.point);
    let Some(inner) = mount("ext4", &outer.point.join("empty")) else {
        return;
    };
    std::fs::write(inner.point.join("inside.txt"), b"i").unwrap();
    let Some(tmp) = mount("tmpfs", &outer.point.join("dir/sub")) else {
        return;
    };
    std::fs::write(tmp.point.join("in-tmpfs.txt"), b"t").unwrap();
    std::fs::create_dir(outer.point.join("bindpoint")).unwrap();
    let top = &outer.point;
    let list = |extra: &[&str]| -> BTreeSet<String> {
        let out = run_ok(
            uffs()
                .arg("--source")
                .arg(top)
                .arg("--walk")
                .args(extra)
                .arg("*"),
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    let p = |rel: &str| format!("{}/{rel}", top.display());
    // As find -xdev: the mount points listed, what is in them not.
    let plain = list(&["--prune-names", ""]);
    let find: BTreeSet<String> = find_rows(top, &[]).into_keys().collect();
    same_paths(&plain, &find, "outer ext4");
    assert!(plain.contains(&p("empty")) && !plain.contains(&p("empty/inside.txt")));
    // A bind mount of the outer file system inside itself (find -xdev enters it, and finds a loop): listed,
    // never walked, with or without --cross-mounts.
    let bind = outer.point.join("bindpoint");
    run_ok(
        Command::new("mount")
            .arg("--bind")
            .arg(&outer.point)
            .arg(&bind),
    );
    let _bind = Mounted {
        point: bind.clone(),
        image: None,
    };
    same_paths(&list(&["--prune-names", ""]), &plain, "with a bind mount");
    // Crossing: into the other ext4, not into tmpfs (updatedb's PRUNEFS) unless told, never into the bind mount.
    let crossed = list(&["--prune-names", "", "--cross-mounts"]);
    assert!(crossed.contains(&p("empty/inside.txt")));
    assert!(!crossed.contains(&p("dir/sub/in-tmpfs.txt")));
    assert!(
        !crossed.contains(&p("bindpoint/a.txt")),
        "a bind mount is not walked again"
    );
    let all = list(&["--prune-names", "", "--cross-mounts", "--prune-fs", ""]);
    assert!(all.contains(&p("dir/sub/in-tmpfs.txt")));
    // updatedb's PRUNENAMES by default: `.git` listed, what is in it not.
    let pruned = list(&[]);
    assert!(pruned.contains(&p(".git")) && !pruned.contains(&p(".git/objects")));
    assert_eq!(plain.len() - pruned.len(), 2);
    let named = list(&["--prune-names", "many .git"]);
    assert!(named.contains(&p("many")) && !named.iter().any(|l| l.starts_with(&p("many/"))));
    // PRUNEPATHS: an absolute folder.
    let by_path = list(&["--prune-names", "", "--prune-paths", &p("deep")]);
    assert!(by_path.contains(&p("deep")) && !by_path.contains(&p("deep/level0")));
    // A pseudo file system is not a folder of files.
    let out = uffs()
        .args(["index", "/proc", "-o"])
        .arg(dir.join("proc.uffs"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/proc is on a proc file system"), "{err}");
    drop(tmp);
    drop(inner);
}

#[test]
fn a_folder_another_user_may_not_read_is_a_warning_and_exit_3() {
    // Under /tmp: the build's own directory may not let another user through.
    let top = std::env::temp_dir().join(format!("uffs-folders-user-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&top);
    std::fs::create_dir_all(top.join("open/inner")).unwrap();
    std::fs::create_dir_all(top.join("closed/inner")).unwrap();
    std::fs::create_dir_all(top.join("listable")).unwrap();
    std::fs::write(top.join("open/inner/seen.txt"), b"s").unwrap();
    std::fs::write(top.join("closed/inner/secret.txt"), b"s").unwrap();
    std::fs::write(top.join("listable/name-only.txt"), b"n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    let set = |rel: &str, mode: u32| {
        std::fs::set_permissions(top.join(rel), std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set("", 0o755);
    set("closed", 0o700);
    // Readable, not searchable: the names, nothing else.
    set("listable", 0o744);
    let out_dir = top.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    set("out", 0o777);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_uffs"))
        .arg("index")
        .arg(&top)
        .arg("-o")
        .arg(out_dir.join("x.uffs"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "cannot read folder {}/closed: Permission denied",
            top.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "cannot read folder {}/listable: 1 entries listed by name alone",
            top.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("partial: 2 folders could not be read"),
        "{err}"
    );
    let listed = String::from_utf8(
        run_ok(uffs().arg("--index").arg(out_dir.join("x.uffs")).arg("*")).stdout,
    )
    .unwrap();
    let p = |rel: &str| format!("{}/{rel}", top.display());
    assert!(
        listed.lines().any(|l| l == p("open/inner/seen.txt")),
        "{listed}"
    );
    assert!(
        listed.lines().any(|l| l == p("listable/name-only.txt")),
        "{listed}"
    );
    assert!(listed.lines().any(|l| l == p("closed")));
    assert!(!listed.contains("secret"));
    let _ = std::fs::remove_dir_all(&top);
}

#[test]
fn a_mount_top_is_read_raw_where_root_may() {
    let dir = scratch("folders-raw");
    let Some(m) = mount("ext4", &dir.join("mnt")) else {
        return;
    };
    populate(&m.point);
    // Raw reads see what the kernel wrote back.
    run_ok(Command::new("sync").arg("-f").arg(&m.point));
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&m.point)).stdout).unwrap();
    assert!(
        info.contains("mounted folder, its ext4 file system read raw"),
        "{info}"
    );
    // The same paths as find, from the volume's own tables; a subfolder is walked.
    let want: BTreeSet<String> = find_rows(&m.point, &[]).into_keys().collect();
    let raw =
        csv_rows(&run_ok(uffs().arg("export").arg(&m.point).args(["--format", "csv"])).stdout);
    let got: BTreeSet<String> = raw
        .iter()
        .map(|r| r["path"].clone())
        .filter(|p| {
            *p != format!("{}/", m.point.display())
                && !p.contains("/$")
                && !p.contains("lost+found")
        })
        .collect();
    let want: BTreeSet<String> = want
        .into_iter()
        .filter(|p| !p.contains("lost+found"))
        .collect();
    same_paths(&got, &want, "read raw");
    let sub = m.point.join("dir");
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&sub)).stdout).unwrap();
    assert!(
        info.contains("not raw: a folder inside the ext4 file system mounted at"),
        "{info}"
    );
}

/// What only a raw reader meets, beyond [`populate`]'s tree: a file in hundreds of extents (an extent B+tree on
/// XFS, an extent tree of depth 1 on ext4), one preallocated and partly written (unwritten extents read as zeros),
/// and a symlink whose target is too long for the inode.
fn populate_raw_extras(top: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::File::create(top.join("fragmented.bin")).unwrap();
    for i in 0..300u64 {
        // Every other 4 KiB block, each written and synced alone: an extent each, holes between.
        f.seek(SeekFrom::Start(i * 8192)).unwrap();
        f.write_all(&[(i % 251) as u8 + 1; 4096]).unwrap();
        f.sync_data().unwrap();
    }
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
    std::os::unix::fs::symlink("t".repeat(900), top.join("long link")).unwrap();
}

/// The sha256 of every file below `top` (its path as `uffs` prints it with `prefix` for `top`).
fn file_hashes(top: &Path, prefix: &str) -> BTreeMap<String, String> {
    let out =
        run_ok(
            Command::new("find")
                .arg(top)
                .args(["-type", "f", "-exec", "sha256sum", "{}", "+"]),
        );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (hex, path) = l.split_once("  ").unwrap();
            let rel = path.strip_prefix(&top.display().to_string()).unwrap();
            (format!("{prefix}{rel}"), hex.to_string())
        })
        .collect()
}

#[test]
fn volumes_the_kernel_wrote_read_raw_as_find_sees_them() {
    let dir = scratch("folders-raw-image");
    for kind in ["ext4", "xfs"] {
        let Some(m) = mount(kind, &dir.join(kind)) else {
            return;
        };
        populate(&m.point);
        populate_raw_extras(&m.point);
        let img = m.image.clone().unwrap();
        // Read back read-only: the image as the kernel left it, what find sees of it.
        run_ok(Command::new("umount").arg(&m.point));
        run_ok(
            Command::new("mount")
                .args(["-o", "loop,ro"])
                .arg(&img)
                .arg(&m.point),
        );
        let top = m.point.display().to_string();
        let want: BTreeMap<String, (u64, Row)> = find_rows(&m.point, &[])
            .into_iter()
            .map(|(p, r)| (p[top.len()..].to_string(), r))
            .filter(|(p, _)| !p.starts_with("/lost+found"))
            .collect();
        let hashes = file_hashes(&m.point, "");
        let got: BTreeMap<String, (u64, Row)> = uffs_rows(&img, Path::new(""), &[])
            .into_iter()
            .filter(|(p, _)| !p.starts_with("/$") && !p.starts_with("/lost+found"))
            .collect();
        let paths = |m: &BTreeMap<String, (u64, Row)>| m.keys().cloned().collect::<BTreeSet<_>>();
        same_paths(&paths(&got), &paths(&want), kind);
        for (path, (ino, row)) in &want {
            let (record, got_row) = &got[path];
            assert_eq!((record, got_row), (ino, row), "{kind}: {path}");
        }
        // Every file's bytes, from the volume's own runs (symlinks' targets were compared above).
        let out = run_ok(uffs().args(["hash", "--source"]).arg(&img));
        let got: BTreeMap<String, String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once("  "))
            .filter(|(_, p)| want.get(*p).is_none_or(|(_, row)| row.0 == "file"))
            .filter(|(_, p)| !p.starts_with("/$") && !p.starts_with("/lost+found"))
            .map(|(h, p)| (p.to_string(), h.to_string()))
            .collect();
        assert_eq!(got, hashes, "{kind}");
        assert!(hashes.len() > 5000, "{kind}: {} files", hashes.len());
    }
}

#[test]
fn index_files_and_the_daemon_print_real_paths_and_follow_changes() {
    let mut w = common::daemon::World::new("folders");
    let dir = w.dir.join("tree");
    std::fs::create_dir_all(&dir).unwrap();
    populate(&dir);
    let top = std::fs::canonicalize(&dir).unwrap();
    let p = |rel: &str| format!("{}/{rel}", top.display());
    // An index file of a folder prints the folder's paths.
    let file = w.dir.join("tree.uffs");
    run_ok(uffs().arg("index").arg(&dir).arg("-o").arg(&file));
    let out =
        String::from_utf8(run_ok(uffs().arg("--index").arg(&file).arg("five.txt")).stdout).unwrap();
    assert_eq!(out.trim(), p("dir/five.txt"));
    w.env.push(("UFFS_TEST".into(), "1".into()));
    w.ok(&[
        "volumes",
        "add",
        dir.to_str().unwrap(),
        "--name",
        "tree",
        "--refresh",
        "never",
        "--prune-names",
        "",
    ]);
    w.start();
    w.wait_ready(60);
    assert_eq!(w.ok(&["five.txt"]).trim(), p("dir/five.txt"));
    // Changes through the kernel, then a refresh: the daemon's answers equal a fresh walk's.
    std::fs::write(top.join("new file.txt"), b"n").unwrap();
    std::fs::remove_file(top.join("dir/hard1.txt")).unwrap();
    std::fs::rename(top.join("dir/sub"), top.join("moved")).unwrap();
    std::fs::write(top.join("a.txt"), b"longer than before\n").unwrap();
    std::fs::create_dir_all(top.join("fresh/folder")).unwrap();
    for i in 0..300 {
        std::fs::remove_file(top.join(format!(
            "many/a-rather-long-file-name-to-fill-the-listing-{i:05}.txt"
        )))
        .unwrap();
    }
    w.ok(&["volumes", "refresh"]);
    let columns = ["--columns", "path,size,record,mode"];
    let daemon = w.ok(&[&["*", "--format", "csv"][..], &columns].concat());
    let fresh = String::from_utf8(
        run_ok(
            uffs()
                .arg("--source")
                .arg(&dir)
                .args(["--prune-names", "", "*", "--format", "csv"])
                .args(columns),
        )
        .stdout,
    )
    .unwrap();
    let sorted = |s: &str| s.lines().map(str::to_string).collect::<BTreeSet<_>>();
    assert_eq!(sorted(&daemon), sorted(&fresh));
    assert!(daemon.contains(&p("moved/deeper/big.bin")), "{daemon}");
    assert!(!daemon.contains(&p("dir/hard1.txt")));
    w.ok(&["daemon", "stop"]);
    let _ = &mut w;
}

/// Churn through the kernel below `top`: files made, changed and deleted, a folder with files renamed, a new
/// folder with files in it.
fn churn(top: &Path, round: usize) {
    let d = top.join(format!("round{round}"));
    std::fs::create_dir_all(d.join("inner")).unwrap();
    for i in 0..200 {
        std::fs::write(d.join(format!("inner/f{i}.txt")), vec![b'x'; i]).unwrap();
    }
    for i in 0..50 {
        std::fs::remove_file(d.join(format!("inner/f{i}.txt"))).unwrap();
    }
    std::fs::rename(d.join("inner"), d.join("renamed")).unwrap();
    std::fs::write(top.join("dir/five.txt"), format!("round {round}\n")).unwrap();
    // A file with three names (a hard link): only a whole walk sees its other names.
    if round == 2 {
        std::fs::write(top.join("a.txt"), format!("round {round}\n")).unwrap();
    }
}

/// Polls `ask` (a listing through the daemon) until it equals `want` (a fresh walk's), for up to 30 s.
fn converges(ask: impl Fn() -> String, want: &str, what: &str) {
    let sorted = |s: &str| s.lines().map(str::to_string).collect::<BTreeSet<_>>();
    let want = sorted(want);
    let t = std::time::Instant::now();
    loop {
        let got = sorted(&ask());
        if got == want {
            return;
        }
        if t.elapsed() > std::time::Duration::from_secs(30) {
            same_paths(&got, &want, what);
            panic!("{what}: the same paths but not the same rows");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Waits (up to 20 s) until `log` says `what`.
fn logs_soon(log: impl Fn() -> String, what: &str) {
    let t = std::time::Instant::now();
    while !log().contains(what) {
        assert!(t.elapsed().as_secs() < 20, "{}", log());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn the_daemon_follows_a_folder_as_it_changes() {
    // As root: fanotify, one mark on the file system.
    let w = common::daemon::World::new("folders-live");
    let dir = w.dir.join("tree");
    std::fs::create_dir_all(&dir).unwrap();
    populate(&dir);
    w.ok(&[
        "volumes",
        "add",
        dir.to_str().unwrap(),
        "--name",
        "tree",
        "--prune-names",
        "",
    ]);
    w.start();
    w.wait_ready(60);
    logs_soon(|| w.log(), "tree: following");
    assert!(w.log().contains("with fanotify"), "{}", w.log());
    let fresh = || {
        let out = run_ok(uffs().arg("--source").arg(&dir).args([
            "--prune-names",
            "",
            "*",
            "--format",
            "csv",
            "--columns",
            "path,size,record",
        ]));
        String::from_utf8(out.stdout).unwrap()
    };
    for round in 0..4 {
        churn(&dir, round);
        converges(
            || w.ok(&["*", "--format", "csv", "--columns", "path,size,record"]),
            &fresh(),
            "fanotify",
        );
    }
    // The folders reported were read again, not the whole tree, where that is exact. (The log line is written
    // just after the change is visible to a query.)
    logs_soon(|| w.log(), "found by the kernel's reports");
    drop(w);

    // As another user: inotify, a watch a folder, new folders watched as they come.
    let top = std::env::temp_dir().join(format!("uffs-folders-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&top);
    std::fs::create_dir_all(top.join("tree/sub")).unwrap();
    std::fs::create_dir_all(top.join("cache")).unwrap();
    std::fs::create_dir_all(top.join("run")).unwrap();
    run_ok(Command::new("chown").args(["-R", "65534:65534"]).arg(&top));
    let nobody = |args: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_uffs"))
            .args(args)
            .env("UFFS_CACHE_DIR", top.join("cache"))
            .env("UFFS_RUNTIME_DIR", top.join("run"));
        c
    };
    let tree = top.join("tree");
    run_ok(&mut nobody(&[
        "volumes",
        "add",
        tree.to_str().unwrap(),
        "--name",
        "tree",
    ]));
    run_ok(&mut nobody(&["daemon", "start"]));
    let log = || std::fs::read_to_string(top.join("cache/daemon.log")).unwrap_or_default();
    logs_soon(log, "tree: following");
    assert!(log().contains("with inotify"), "{}", log());
    for round in 0..2 {
        // Written as that user, so that its daemon may read them.
        let script = format!(
            "mkdir -p {t}/round{round}/inner && for i in $(seq 0 99); do echo $i > {t}/round{round}/inner/f$i.txt; done && mv {t}/round{round}/inner {t}/round{round}/renamed && rm {t}/round{round}/renamed/f1*.txt",
            t = tree.display()
        );
        run_ok(Command::new("setpriv").args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
            &script,
        ]));
        let fresh = String::from_utf8(
            run_ok(&mut nobody(&[
                "--source",
                tree.to_str().unwrap(),
                "*",
                "--format",
                "csv",
                "--columns",
                "path,size,record",
            ]))
            .stdout,
        )
        .unwrap();
        converges(
            || {
                String::from_utf8(
                    run_ok(&mut nobody(&[
                        "*",
                        "--format",
                        "csv",
                        "--columns",
                        "path,size,record",
                    ]))
                    .stdout,
                )
                .unwrap()
            },
            &fresh,
            "inotify",
        );
    }
    logs_soon(log, "found by the kernel's reports");
    let _ = nobody(&["daemon", "stop"]).output();
    let _ = std::fs::remove_dir_all(&top);
}

/// `volumes add --all` as a user who may read no device: it says no volume was found, and names the devices it
/// could not look at and who may (issue 59: it used to say only that no volume was found).
#[test]
fn volumes_add_all_names_the_devices_a_user_may_not_read() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    // The devices of /proc/partitions that nobody may not read (a machine's disks are root's alone).
    let partitions = std::fs::read_to_string("/proc/partitions").unwrap_or_default();
    let closed: Vec<String> = partitions
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().nth(3))
        .map(|n| format!("/dev/{n}"))
        .filter(|p| {
            std::fs::metadata(p).is_ok_and(|m| {
                m.file_type().is_block_device() && m.permissions().mode() & 0o004 == 0
            })
        })
        .collect();
    let Some(first) = closed.first() else {
        return cannot_run("no block device here is closed to other users");
    };
    let top = std::env::temp_dir().join(format!("uffs-folders-all-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&top);
    std::fs::create_dir_all(&top).unwrap();
    run_ok(Command::new("chown").args(["-R", "65534:65534"]).arg(&top));
    let out = run_ok(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_uffs"))
            .args(["volumes", "add", "--all"])
            .env("UFFS_CACHE_DIR", &top),
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("no volume of a file system uffs reads (NTFS"),
        "{said}"
    );
    assert!(
        said.contains("this user may not read") && said.contains(first.as_str()),
        "{said}"
    );
    std::fs::remove_dir_all(&top).unwrap();
}
