//! The conformance suite: what every file system uffs reads raw must pass, each check run on every subject of one
//! list ([`SUBJECTS`]). A subject is a file system as its real driver or tool writes it (NTFS through ntfs-3g,
//! FAT32 with mtools, exFAT through exfat-fuse, ext4, XFS and Btrfs through the kernel's drivers on loop mounts;
//! HFS+ and APFS, which nothing here writes, byte by byte from their specifications by `scripts/make-hfsplus.py` and
//! `scripts/make-apfs.py`), holding the same
//! tree (long, Unicode and deep names, a fragmented file, files and a folder deleted, a file renamed), and the
//! checks compare uffs with readers that are not uffs:
//!
//! * paths: every live name `fls -r -p` lists, with its inode number, and every deleted one it finds (where The
//!   Sleuth Kit does not read the file system, XFS, every name the kernel's driver lists over a read-only mount);
//! * data: every file's bytes as `icat` reads them (or the kernel's driver);
//! * space: `uffs du`'s total for the root and `uffs info`'s bytes in use, as the volume's allocation table
//!   says through another tool (TSK's `$Bitmap`, `fsck.fat`, exFAT's allocation bitmap, `dumpe2fs`,
//!   `xfs_db`'s free-space count);
//! * re-scan: the daemon follows random changes made through the real driver as deltas, and answers as a fresh
//!   index of the changed volume does;
//! * registration: every file system `uffs-source` registers is a subject here, with a fuzz target.
//!
//! A new file system adds a [`Subject`] (docs/architecture.md, "Adding a file system"); the checks stay as they
//! are. Each file system's own tests (`fat_volumes.rs`, `ext_volumes.rs`, `live_update.rs` …) go further into
//! what only it has.

#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::daemon::World;
use common::fatvol::{self, mtools, out, pattern, peer, Tmp};
use common::live::{make_volume, Mounted, Rng};
use common::*;
use unicode_normalization::UnicodeNormalization;

/// Mounts volume image `.0` at folder `.1` with the file system's driver, runs `.2` on the mounted root, and
/// unmounts (the image then holds every change).
type MountFn = fn(&Path, &Path, &mut dyn FnMut(&Path));

/// A file system under the suite.
struct Subject {
    /// What `uffs info` names volumes of it.
    fs: &'static str,
    /// The driver family it stands for: its `uffs_fs::Driver::names()`, or `NTFS` for the MFT pipeline.
    family: &'static str,
    /// Its fuzz target: `fuzz/fuzz_targets/NAME.rs`.
    fuzz: &'static str,
    /// A volume holding the shared tree, written by the real driver or tool; `None` after [`cannot_run`].
    make: fn(&Tmp) -> Option<PathBuf>,
    /// Runs the function on the volume mounted by its real driver (for the changes of the re-scan check);
    /// `None`: changed with mtools (this kernel has no FAT driver).
    mount: Option<MountFn>,
    /// The bytes the volume's allocation table marks in use, read by a tool other than uffs.
    in_use: fn(&Path) -> u64,
    /// The Sleuth Kit reads it (`fls`, `icat`); otherwise the reference is the kernel's driver over a read-only
    /// mount, which lists no deleted names.
    tsk: bool,
    /// A container of volumes (APFS): uffs reads its one volume alone (`IMG@1`, paths from its root), The
    /// Sleuth Kit through its pool options (`-P apfs -B APSB`).
    pool: bool,
}

const SUBJECTS: &[Subject] = &[
    Subject {
        fs: "NTFS",
        family: "NTFS",
        fuzz: "record",
        make: make_ntfs,
        mount: Some(mount_ntfs),
        in_use: bitmap_in_use,
        tsk: true,
        pool: false,
    },
    Subject {
        fs: "FAT32",
        family: "FAT12/16/32, exFAT",
        fuzz: "fat",
        make: make_fat32,
        mount: None,
        in_use: fsck_fat_in_use,
        tsk: true,
        pool: false,
    },
    Subject {
        fs: "exFAT",
        family: "FAT12/16/32, exFAT",
        fuzz: "exfat",
        make: fatvol::build_exfat,
        mount: Some(mount_exfat),
        in_use: exfat_bitmap_in_use,
        tsk: true,
        pool: false,
    },
    Subject {
        fs: "ext4",
        family: "ext2/3/4",
        fuzz: "ext",
        make: make_ext4,
        mount: Some(mount_loop),
        in_use: dumpe2fs_in_use,
        tsk: true,
        pool: false,
    },
    Subject {
        fs: "XFS",
        family: "XFS",
        fuzz: "xfs",
        make: make_xfs,
        mount: Some(mount_loop),
        in_use: xfs_db_in_use,
        tsk: false,
        pool: false,
    },
    Subject {
        fs: "Btrfs",
        family: "Btrfs",
        fuzz: "btrfs",
        make: make_btrfs,
        mount: Some(mount_loop),
        in_use: btrfs_usage_in_use,
        tsk: false,
        pool: false,
    },
    Subject {
        fs: "HFS+",
        family: "HFS+, HFSX",
        fuzz: "hfs",
        make: make_hfsplus,
        mount: Some(rewrite_hfsplus),
        in_use: tsk_blocks_in_use,
        tsk: true,
        pool: false,
    },
    Subject {
        fs: "APFS",
        family: "APFS",
        fuzz: "apfs",
        make: make_apfs,
        mount: Some(rewrite_apfs),
        in_use: tsk_blocks_in_use,
        tsk: true,
        pool: true,
    },
];

/// What uffs reads of subject `s`'s image `img`: the image, or a container's one volume.
fn source(s: &Subject, img: &Path) -> PathBuf {
    if s.pool {
        PathBuf::from(format!("{}@1", img.display()))
    } else {
        img.to_path_buf()
    }
}

/// The options The Sleuth Kit needs to read subject `s`'s image `img`: a container's volume (`-P apfs -B APSB`).
fn tsk_flags(s: &Subject, img: &Path) -> Vec<String> {
    if s.pool {
        let apsb = apfs_apsb_blocks(img)[0];
        vec!["-P".into(), "apfs".into(), "-B".into(), apsb.to_string()]
    } else {
        Vec::new()
    }
}

/// APFS: no tool here writes it (no kernel driver), so the container is written byte by byte from Apple's
/// reference by `scripts/make-apfs.py` from a folder that holds the tree ([`rewrite_apfs`]).
fn make_apfs(t: &Tmp) -> Option<PathBuf> {
    let img = t.path("apfs.img");
    let src = img.with_extension("src");
    std::fs::create_dir_all(&src).unwrap();
    fatvol::fill(&src);
    write_apfs(&img);
    Some(img)
}

/// "Mounts" an APFS container for changes as [`rewrite_hfsplus`] does: changes made in the folder it was written
/// from, the container written again, every unchanged path keeping its inode number (`--ids`).
fn rewrite_apfs(img: &Path, _dir: &Path, f: &mut dyn FnMut(&Path)) {
    f(&img.with_extension("src"));
    write_apfs(img);
}

fn write_apfs(img: &Path) {
    let src = img.with_extension("src");
    run_ok(
        std::process::Command::new("python3")
            .arg(repo().join("scripts/make-apfs.py"))
            .arg(img)
            .arg("--volume")
            .arg(format!("apfs={}", src.display()))
            .arg("--ids")
            .arg(img.with_extension("ids.json")),
    );
}

fn make_ntfs(t: &Tmp) -> Option<PathBuf> {
    let dir = t.path("ntfs");
    std::fs::create_dir_all(&dir).unwrap();
    let img = make_volume(&dir, 32);
    mount_ntfs(&img, &t.path("ntfs-mnt"), &mut |root| fatvol::fill(root));
    Some(img)
}

fn mount_ntfs(img: &Path, dir: &Path, f: &mut dyn FnMut(&Path)) {
    let m = Mounted::new(img, dir);
    f(&m.dir);
}

fn make_fat32(t: &Tmp) -> Option<PathBuf> {
    Some(fatvol::build_fat(t, 32))
}

fn mount_exfat(img: &Path, dir: &Path, f: &mut dyn FnMut(&Path)) {
    let m = fatvol::Mount::new(img, dir).expect("mount the exFAT volume");
    f(&m.dir);
    m.unmount();
}

fn make_ext4(t: &Tmp) -> Option<PathBuf> {
    let img = t.path("ext4.img");
    run_ok(
        tool("mkfs.ext4")
            .args(["-q", "-F", "-L", "extvol"])
            .arg(&img)
            .arg("32M"),
    );
    if !loop_mountable(&img, &t.path("ext-probe")) {
        cannot_run("mounting an ext4 image through a loop device (needs root and the ext4 driver)");
        return None;
    }
    mount_loop(&img, &t.path("ext-mnt"), &mut |root| fatvol::fill(root));
    Some(img)
}

fn make_xfs(t: &Tmp) -> Option<PathBuf> {
    let img = t.path("xfs.img");
    // mkfs.xfs makes nothing under 300 MB; sparse, so only what is written takes room.
    std::fs::File::create(&img)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    run_ok(
        tool("mkfs.xfs")
            .args(["-q", "-f", "-L", "xfsvol"])
            .arg(&img),
    );
    if !loop_mountable(&img, &t.path("xfs-probe")) {
        cannot_run("mounting an XFS image through a loop device (needs root and the kernel's XFS)");
        return None;
    }
    mount_loop(&img, &t.path("xfs-mnt"), &mut |root| fatvol::fill(root));
    Some(img)
}

fn make_btrfs(t: &Tmp) -> Option<PathBuf> {
    let img = t.path("btrfs.img");
    // Sparse: only what is written takes room.
    std::fs::File::create(&img)
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    run_ok(
        tool("mkfs.btrfs")
            .args(["-q", "-f", "-L", "btrfsvol"])
            .arg(&img),
    );
    if !loop_mountable(&img, &t.path("btrfs-probe")) {
        cannot_run(
            "mounting a Btrfs image through a loop device (needs root and the kernel's Btrfs)",
        );
        return None;
    }
    mount_loop(&img, &t.path("btrfs-mnt"), &mut |root| fatvol::fill(root));
    Some(img)
}

/// HFS+: no tool here writes it (no mkfs.hfsplus, no kernel driver), so the volume is written byte by byte from
/// TN1150 by `scripts/make-hfsplus.py` from a folder that holds the tree ([`rewrite_hfsplus`]).
fn make_hfsplus(t: &Tmp) -> Option<PathBuf> {
    let img = t.path("hfsplus.img");
    let src = img.with_extension("src");
    std::fs::create_dir_all(&src).unwrap();
    fatvol::fill(&src);
    write_hfsplus(&img);
    Some(img)
}

/// "Mounts" an HFS+ volume for changes: makes them in the folder it was written from, then writes it again,
/// every unchanged path keeping its catalog node id (`--ids`), as a driver would keep it.
fn rewrite_hfsplus(img: &Path, _dir: &Path, f: &mut dyn FnMut(&Path)) {
    f(&img.with_extension("src"));
    write_hfsplus(img);
}

fn write_hfsplus(img: &Path) {
    let src = img.with_extension("src");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(repo().join("scripts/make-hfsplus.py"))
        .arg(&src)
        .arg(img)
        .args(["--size", "32M", "--ids"])
        .arg(img.with_extension("ids.json"));
    let frag = "frag/Big Fragmented File.bin";
    if src.join(frag).is_file() {
        cmd.args(["--fragment", frag]);
    }
    run_ok(&mut cmd);
}

/// Btrfs: what `btrfs filesystem usage` says is used (every copy counted), over a read-only mount.
fn btrfs_usage_in_use(img: &Path) -> u64 {
    let dir = img.with_extension("usage-mnt");
    std::fs::create_dir_all(&dir).unwrap();
    run_ok(
        std::process::Command::new("mount")
            .args(["-o", "loop,ro"])
            .arg(img)
            .arg(&dir),
    );
    let out = tool("btrfs")
        .args(["filesystem", "usage", "-b"])
        .arg(&dir)
        .output()
        .unwrap();
    run_ok(std::process::Command::new("umount").arg(&dir));
    number_after(&String::from_utf8_lossy(&out.stdout), "    Used:")
}

/// Every name the kernel's driver lists on `img` mounted read-only at `dir` (below the root, none deleted), and
/// the sha256 of every file's bytes: the reference for a file system The Sleuth Kit does not read.
fn mounted_names(img: &Path, dir: &Path) -> (BTreeSet<Name>, BTreeMap<String, String>) {
    use std::os::unix::fs::MetadataExt;
    std::fs::create_dir_all(dir).unwrap();
    run_ok(
        std::process::Command::new("mount")
            .args(["-o", "loop,ro"])
            .arg(img)
            .arg(dir),
    );
    let (mut names, mut hashes) = (BTreeSet::new(), BTreeMap::new());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = format!("/{}", p.strip_prefix(dir).unwrap().display());
            if m.is_dir() {
                stack.push(p.clone());
            } else if m.is_file() {
                hashes.insert(rel.clone(), fatvol::sha256_hex(&std::fs::read(&p).unwrap()));
            }
            names.insert((rel, m.ino(), false));
        }
    }
    run_ok(std::process::Command::new("umount").arg(dir));
    (names, hashes)
}

fn loop_mountable(img: &Path, dir: &Path) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-o", "loop,ro"])
        .arg(img)
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        run_ok(std::process::Command::new("umount").arg(dir));
    }
    ok
}

/// Mounts a volume image through a loop device with the kernel's driver (ext4, XFS, Btrfs).
fn mount_loop(img: &Path, dir: &Path, f: &mut dyn FnMut(&Path)) {
    std::fs::create_dir_all(dir).unwrap();
    run_ok(
        std::process::Command::new("mount")
            .args(["-o", "loop"])
            .arg(img)
            .arg(dir),
    );
    f(dir);
    run_ok(std::process::Command::new("umount").arg(dir));
}

/// NTFS: the clusters `$Bitmap` (record 6, read by `icat`) marks, below `fsstat`'s cluster count.
fn bitmap_in_use(img: &Path) -> u64 {
    tsk_bitmap_bytes_in_use(img, 0)
}

/// The number after `key` on the first line of `text` that holds it.
fn number_after(text: &str, key: &str) -> u64 {
    let line = text
        .lines()
        .find_map(|l| l.split_once(key).map(|x| x.1))
        .unwrap_or_else(|| panic!("no {key:?} in:\n{text}"));
    line.split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches([',', '.'])
        .parse()
        .unwrap_or_else(|_| panic!("{key:?} {line:?}"))
}

/// FAT32: what `fsck.fat -n -v` counts: the bytes before its data area (boot sectors, FATs) and the clusters in
/// use.
fn fsck_fat_in_use(img: &Path) -> u64 {
    let o = peer("fsck.fat")
        .args(["-n", "-v"])
        .arg(img)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let front = number_after(&text, "Data area starts at byte");
    // `       512 bytes per cluster`
    let cluster: u64 = text
        .lines()
        .find_map(|l| l.trim().strip_suffix(" bytes per cluster"))
        .expect("fsck.fat's cluster size")
        .parse()
        .unwrap();
    let last = text.lines().last().unwrap();
    let used: u64 = last
        .rsplit(", ")
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    front + used * cluster
}

/// exFAT: the clusters its allocation bitmap (read by `icat`) marks, and the bytes before the cluster heap, as
/// `dump.exfat` gives the geometry.
fn exfat_bitmap_in_use(img: &Path) -> u64 {
    let dump = String::from_utf8(out("dump.exfat", &[path_str(img)])).unwrap();
    let total = number_after(&dump, "Total Clusters:");
    let sector = 1 << number_after(&dump, "Sector Size Bits:");
    let cluster = number_after(&dump, "Cluster size:");
    let heap = number_after(&dump, "Cluster Heap Offset (sector offset):");
    let bitmap = fatvol::fls(img, &[])
        .into_iter()
        .find(|e| e.path == "/$ALLOC_BITMAP")
        .expect("fls lists $ALLOC_BITMAP")
        .inode;
    let bits = fatvol::icat(img, bitmap);
    let set = (0..total)
        .filter(|&i| bits[(i / 8) as usize] & (1 << (i % 8)) != 0)
        .count() as u64;
    heap * sector + set * cluster
}

/// ext: block count less free blocks, times the block size, as `dumpe2fs -h` gives them.
fn dumpe2fs_in_use(img: &Path) -> u64 {
    let o = run_ok(tool("dumpe2fs").arg("-h").arg(img));
    let text = String::from_utf8_lossy(&o.stdout);
    (number_after(&text, "Block count:") - number_after(&text, "Free blocks:"))
        * number_after(&text, "Block size:")
}

/// Each subject's volume, made in `t`; those this machine cannot make are left out (after [`cannot_run`]).
fn volumes(t: &Tmp) -> Vec<(&'static Subject, PathBuf)> {
    SUBJECTS
        .iter()
        .filter_map(|s| (s.make)(t).map(|img| (s, img)))
        .collect()
}

/// One name `fls -r -p` lists: path (with a leading `/`), inode number, deleted.
type Name = (String, u64, bool);

/// `fls -r -p FLAGS IMG`, without the file systems' own entries (`$MFT`, `$FAT1`, `$OrphanFiles` …, which each
/// file system's own tests compare) and NTFS's named streams (`file:stream`).
fn fls_names(s: &Subject, img: &Path, flags: &[&str]) -> BTreeSet<Name> {
    let pool = tsk_flags(s, img);
    let mut args: Vec<&str> = pool.iter().map(String::as_str).collect();
    args.extend(["-r", "-p"]);
    args.extend_from_slice(flags);
    args.push(path_str(img));
    String::from_utf8(out("fls", &args))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (head, path) = l.split_once('\t')?;
            if path.starts_with('$') || path.ends_with("(Volume Label Entry)") {
                return None;
            }
            let name = path.rsplit('/').next().unwrap_or(path);
            if name.contains(':') {
                return None;
            }
            // `r/r 64-128-2:` (NTFS: record, attribute type and id), `r/r * 14(realloc):`.
            let inode = head.rsplit(' ').next()?.trim_end_matches(':');
            let inode = inode.split(['-', '(']).next()?.parse().ok()?;
            // HFS+ keeps names decomposed and fls prints them so; uffs prints them composed, as typed.
            let path: String = path.nfc().collect();
            Some((format!("/{path}"), inode, head.contains(" * ")))
        })
        .collect()
}

/// The same names from `uffs export` (with `--deleted`: deleted ones too), the file system's own entries left out
/// as above.
fn uffs_names(img: &Path, deleted: bool) -> BTreeSet<Name> {
    let extra: &[&str] = if deleted { &["--deleted"] } else { &[] };
    export(img, extra)
        .into_iter()
        .filter(|r| r["path"] != "/" && !r["path"].starts_with("/$"))
        .map(|r| {
            (
                r["path"].clone(),
                // A name from slack whose inode is unknown has no record; fls gives it as 0.
                r["record"].parse().unwrap_or(0),
                r["deleted"] == "true",
            )
        })
        .collect()
}

/// What differs, for a failure message: the names only `a` has and those only `b` has.
fn differences(a: &BTreeSet<Name>, b: &BTreeSet<Name>) -> (Vec<Name>, Vec<Name>) {
    (
        a.difference(b).cloned().collect(),
        b.difference(a).cloned().collect(),
    )
}

#[test]
fn every_registered_file_system_is_a_subject_with_a_fuzz_target() {
    let families: BTreeSet<&str> = SUBJECTS.iter().map(|s| s.family).collect();
    let fuzz = repo().join("fuzz");
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).unwrap();
    for driver in uffs_source::FILE_SYSTEMS {
        assert!(
            families.contains(driver.names()),
            "{} is registered in uffs-source but is no subject of the conformance suite",
            driver.names()
        );
    }
    for s in SUBJECTS {
        assert!(families.contains(s.family), "{}: family {}", s.fs, s.family);
        let target = fuzz.join(format!("fuzz_targets/{}.rs", s.fuzz));
        assert!(
            target.is_file() && manifest.contains(&format!("name = \"{}\"", s.fuzz)),
            "{}: no fuzz target {} in fuzz/",
            s.fs,
            s.fuzz
        );
    }
}

#[test]
fn live_and_deleted_names_as_fls_lists_them() {
    let t = Tmp::new("conform-names");
    let mut wrong = Vec::new();
    for (s, img) in volumes(&t) {
        assert_eq!(info_fs(&source(s, &img)), s.fs);
        // Every live name with its inode number, none more.
        let live = uffs_names(&source(s, &img), false);
        let reference = if s.tsk {
            fls_names(s, &img, &["-u"])
        } else {
            mounted_names(&img, &t.path("names-mnt")).0
        };
        let (only_uffs, only_fls) = differences(&live, &reference);
        if !only_uffs.is_empty() || !only_fls.is_empty() {
            wrong.push(format!(
                "{}: live names: only uffs: {only_uffs:?}; only fls: {only_fls:?}",
                s.fs
            ));
        }
        for p in [
            "/Ünïcødé ñame €.txt",
            "/日本語のファイル名.txt",
            "/deep/level1/level2/level3/Deep Inside.bin",
            "/New Longer Name After Rename.txt",
            "/frag/Big Fragmented File.bin",
        ] {
            if !live.iter().any(|n| n.0 == p) {
                wrong.push(format!("{}: {p} is not listed", s.fs));
            }
        }
        if live.iter().any(|n| n.2) {
            wrong.push(format!("{}: deleted names without --deleted", s.fs));
        }
        if !s.tsk {
            continue;
        }
        // Every deleted name fls finds, uffs finds, flagged deleted (uffs may find more: NTFS's index slack).
        let all = uffs_names(&source(s, &img), true);
        let tsk_deleted = fls_names(s, &img, &["-d"]);
        let missed: Vec<_> = tsk_deleted.difference(&all).collect();
        if !missed.is_empty() {
            wrong.push(format!(
                "{}: deleted names fls finds and uffs does not: {missed:?}",
                s.fs
            ));
        }
        // NTFS keeps the deleted file's record, FAT its directory entry (first letter lost); exFAT and ext may
        // reuse or clear the entry.
        if ["NTFS", "FAT32"].contains(&s.fs)
            && !all.iter().any(|n| n.0.ends_with("oomed.txt") && n.2)
        {
            wrong.push(format!(
                "{}: the deleted doomed.txt is not listed: {all:?}",
                s.fs
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The file system `uffs info` names.
fn info_fs(img: &Path) -> String {
    let v: serde_json::Value =
        serde_json::from_slice(&run_ok(uffs().arg("info").arg(img).arg("--json")).stdout).unwrap();
    v["volumes"][0]["filesystem"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn every_file_reads_as_icat_reads_it() {
    let t = Tmp::new("conform-data");
    let mut wrong = Vec::new();
    for (s, img) in volumes(&t) {
        let record: BTreeMap<String, u64> = uffs_names(&source(s, &img), false)
            .into_iter()
            .map(|(p, r, _)| (p, r))
            .collect();
        let hashes = run_ok(uffs().args(["hash", "--source"]).arg(source(s, &img)));
        let mounted = (!s.tsk).then(|| mounted_names(&img, &t.path("data-mnt")).1);
        let mut n = 0;
        for line in String::from_utf8_lossy(&hashes.stdout).lines() {
            let (hex, path) = line.split_once("  ").unwrap();
            let Some(&inode) = record.get(path) else {
                continue;
            };
            let want = match &mounted {
                Some(m) => m.get(path).cloned().unwrap_or_default(),
                None => {
                    let pool = tsk_flags(s, &img);
                    let mut args: Vec<&str> = pool.iter().map(String::as_str).collect();
                    let inode = inode.to_string();
                    args.extend([path_str(&img), inode.as_str()]);
                    let o = peer("icat").args(&args).output().unwrap();
                    // An empty file has no data stream on APFS, which icat says it cannot find.
                    let empty = s.pool
                        && String::from_utf8_lossy(&o.stderr).contains("Attribute not found");
                    assert!(o.status.success() || empty, "icat {args:?}: {o:?}");
                    fatvol::sha256_hex(&o.stdout)
                }
            };
            if hex != want {
                wrong.push(format!(
                    "{}: {path} (inode {inode}): uffs {hex}, icat {want}",
                    s.fs
                ));
            }
            n += 1;
        }
        if n < 15 {
            wrong.push(format!("{}: only {n} files hashed", s.fs));
        }
        let big = run_ok(
            uffs()
                .arg("cat")
                .arg(source(s, &img))
                .arg("/frag/Big Fragmented File.bin"),
        )
        .stdout;
        if big != pattern(40_000, 99) {
            wrong.push(format!("{}: the fragmented file reads wrong", s.fs));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn du_adds_up_to_the_allocation_table() {
    let t = Tmp::new("conform-du");
    let mut wrong = Vec::new();
    for (s, img) in volumes(&t) {
        if s.pool {
            // Not yet: the container's own metadata (checkpoints, object maps, trees) is no entry, so `du /`
            // adds up to the files' blocks alone (docs/commands.md, APFS).
            continue;
        }
        let want = (s.in_use)(&img);
        let du = du_root_allocated(&img);
        let v: serde_json::Value =
            serde_json::from_slice(&run_ok(uffs().arg("info").arg(&img).arg("--json")).stdout)
                .unwrap();
        let info = v["volumes"][0]["bytes_in_use"].as_u64().unwrap_or(0);
        if du != want || info != want {
            wrong.push(format!(
                "{}: du's root total {du}, info's bytes in use {info}; the allocation table {want}",
                s.fs
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

// The re-scan check: random changes through each subject's real driver, followed by the daemon.

/// What the volume holds, as the test changed it.
struct Model {
    files: Vec<String>,
    dirs: Vec<String>,
    n: usize,
}

impl Model {
    fn new() -> Model {
        Model {
            files: fatvol::tree()
                .into_iter()
                .map(|(p, _)| p)
                .filter(|p| {
                    !p.starts_with("to delete")
                        && p != "doomed.txt"
                        && p != "old name.txt"
                        && !["0", "2", "4", "6"]
                            .iter()
                            .any(|i| p == &format!("frag/piece{i}.bin"))
                })
                .chain([
                    "frag/Big Fragmented File.bin".to_string(),
                    "New Longer Name After Rename.txt".to_string(),
                ])
                .collect(),
            dirs: vec![
                "deep".into(),
                "deep/level1".into(),
                "deep/level1/level2".into(),
                "deep/level1/level2/level3".into(),
                "frag".into(),
            ],
            n: 0,
        }
    }

    /// A parent folder ("" the root).
    fn dir(&self, rng: &mut Rng) -> String {
        let i = rng.below(self.dirs.len() + 1);
        self.dirs.get(i).cloned().unwrap_or_default()
    }

    fn fresh_name(&mut self, rng: &mut Rng) -> String {
        self.n += 1;
        let names = ["new file", "Ünï", "日本", "x"];
        format!("{} {}", names[rng.below(names.len())], self.n)
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// One change, made by [`apply_mtools`] or [`apply_mounted`].
#[derive(Debug)]
enum Op {
    Create(String, Vec<u8>),
    Delete(String),
    Rename(String, String),
    MoveFile(String, String),
    Mkdir(String),
    RmTree(String),
    Append(String, Vec<u8>),
}

fn random_op(m: &mut Model, rng: &mut Rng) -> Op {
    loop {
        match rng.below(7) {
            0 => {
                let d = m.dir(rng);
                let p = join(&d, &format!("{}.txt", m.fresh_name(rng)));
                m.files.push(p.clone());
                let len = rng.below(9000);
                return Op::Create(p, pattern(len, rng.next() as u8));
            }
            1 if !m.files.is_empty() => {
                let p = m.files.remove(rng.below(m.files.len()));
                return Op::Delete(p);
            }
            2 if !m.files.is_empty() => {
                let i = rng.below(m.files.len());
                let old = m.files[i].clone();
                let dir = old.rsplit_once('/').map(|x| x.0).unwrap_or("");
                let new = join(dir, &format!("{} renamed.txt", m.fresh_name(rng)));
                m.files[i] = new.clone();
                return Op::Rename(old, new);
            }
            3 if !m.files.is_empty() => {
                let i = rng.below(m.files.len());
                let old = m.files[i].clone();
                let name = old.rsplit('/').next().unwrap().to_string();
                let d = m.dir(rng);
                let new = join(&d, &name);
                if new == old || m.files.contains(&new) {
                    continue;
                }
                m.files[i] = new.clone();
                return Op::MoveFile(old, new);
            }
            4 => {
                let d = m.dir(rng);
                let p = join(&d, &format!("{} dir", m.fresh_name(rng)));
                m.dirs.push(p.clone());
                return Op::Mkdir(p);
            }
            5 if m.dirs.len() > 4 => {
                let p = m.dirs[rng.below(m.dirs.len())].clone();
                let pre = format!("{p}/");
                m.dirs.retain(|d| d != &p && !d.starts_with(&pre));
                m.files.retain(|f| !f.starts_with(&pre));
                return Op::RmTree(p);
            }
            6 if !m.files.is_empty() => {
                let p = m.files[rng.below(m.files.len())].clone();
                let len = 1 + rng.below(6000);
                return Op::Append(p, pattern(len, 3));
            }
            _ => {}
        }
    }
}

/// The change made with mtools on a FAT image.
fn apply_mtools(img: &Path, t: &Tmp, op: &Op) {
    let at = |p: &str| format!("::/{p}");
    let local = t.path("piece");
    match op {
        Op::Create(p, b) => {
            std::fs::write(&local, b).unwrap();
            mtools("mcopy", img, &[path_str(&local), &at(p)]);
        }
        Op::Delete(p) => mtools("mdel", img, &[&at(p)]),
        Op::Rename(a, b) => {
            let name = b.rsplit('/').next().unwrap();
            mtools("mren", img, &[&at(a), name]);
        }
        Op::MoveFile(a, b) => mtools("mmove", img, &[&at(a), &at(b)]),
        Op::Mkdir(p) => mtools("mmd", img, &[&at(p)]),
        Op::RmTree(p) => mtools("mdeltree", img, &[&at(p)]),
        Op::Append(p, more) => {
            // mtools cannot append: the file is read back, grown and written over itself.
            let mut b = out("mtype", &["-i", path_str(img), &at(p)]);
            b.extend_from_slice(more);
            std::fs::write(&local, b).unwrap();
            mtools("mcopy", img, &["-o", path_str(&local), &at(p)]);
        }
    }
}

/// The change made through the volume mounted at `root`.
fn apply_mounted(root: &Path, op: &Op) {
    use std::io::Write;
    match op {
        Op::Create(p, b) => std::fs::write(root.join(p), b).unwrap(),
        Op::Delete(p) => std::fs::remove_file(root.join(p)).unwrap(),
        Op::Rename(a, b) | Op::MoveFile(a, b) => {
            std::fs::rename(root.join(a), root.join(b)).unwrap()
        }
        Op::Mkdir(p) => std::fs::create_dir(root.join(p)).unwrap(),
        Op::RmTree(p) => std::fs::remove_dir_all(root.join(p)).unwrap(),
        Op::Append(p, more) => std::fs::OpenOptions::new()
            .append(true)
            .open(root.join(p))
            .unwrap()
            .write_all(more)
            .unwrap(),
    }
}

const COLUMNS: &str =
    "path,kind,size,modified,attributes,mode,uid,gid,link_target,from_index_slack";

/// The answer, as a set of CSV lines with `NAME:` left off the paths, names from index slack left out: whole
/// builds read them, a delta keeps those its index was built with (docs/commands.md).
fn answer(o: &std::process::Output, prefix: &str) -> BTreeSet<String> {
    assert!(
        o.status.code().unwrap_or(9) < 2,
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .skip(1)
        .filter(|l| !l.ends_with(",true"))
        .map(|l| l.replacen(prefix, "", 1))
        .collect()
}

/// The daemon's answers about volume `name` equal a fresh index's of `img`: every entry, every entry with the
/// deleted ones, and the entries `~` finds (on FAT those whose 8.3 alias, `NEWFIL~1`, has it).
fn check(w: &World, name: &str, img: &Path, round: usize) {
    for (query, deleted) in [("*", false), ("*", true), ("~", false)] {
        let mut args = vec![
            query,
            "--volume",
            name,
            "--format",
            "csv",
            "--columns",
            COLUMNS,
        ];
        if deleted {
            args.push("--deleted");
        }
        let got = answer(&w.run(&args), &format!("{name}:"));
        let mut fresh = uffs();
        fresh
            .args([query, "--source", path_str(img), "--format", "csv"])
            .args(["--columns", COLUMNS]);
        if deleted {
            fresh.arg("--deleted");
        }
        let want = answer(&fresh.output().unwrap(), "");
        assert!(
            query != "*" || want.len() > 3,
            "{name}, round {round}, {query}: {want:?}"
        );
        let only_daemon: Vec<_> = got.difference(&want).collect();
        let only_fresh: Vec<_> = want.difference(&got).collect();
        assert!(
            only_daemon.is_empty() && only_fresh.is_empty(),
            "{name}, round {round}, {query} deleted {deleted}: only the daemon: {only_daemon:#?}\nonly a fresh index: {only_fresh:#?}\nlog:\n{}",
            w.log()
        );
    }
    // Every folder's and file's usage (allocated, exclusive where the volume tells it, sizes, counts), as `du`
    // lists it: from the index and its delta as from a fresh index.
    let du = |args: &mut Command| answer(&args.output().unwrap(), "");
    let got = du(w.uffs().args([
        "du",
        &format!("{name}:/"),
        "--depth",
        "64",
        "--format",
        "csv",
    ]));
    let got: BTreeSet<String> = got
        .into_iter()
        .map(|l| l.replacen(&format!("{name}:"), "", 1))
        .collect();
    // The daemon's index has the deleted entries (their `$Orphan` folder is one): a fresh one made so too.
    let fresh = img.with_extension(format!("fresh-{round}.uffs"));
    run_ok(uffs().args(["index", path_str(img), "--deleted", "-o", path_str(&fresh)]));
    let want = du(uffs()
        .args(["du", "--index", path_str(&fresh), "--depth", "64"])
        .args(["--format", "csv"]));
    let _ = std::fs::remove_file(&fresh);
    let only_daemon: Vec<_> = got.difference(&want).collect();
    let only_fresh: Vec<_> = want.difference(&got).collect();
    assert!(
        only_daemon.is_empty() && only_fresh.is_empty(),
        "{name}, round {round}, du: only the daemon: {only_daemon:#?}\nonly a fresh index: {only_fresh:#?}"
    );
}

#[test]
fn the_daemon_follows_changes_made_by_the_real_driver_as_a_fresh_index() {
    let t = Tmp::new("conform-daemon");
    let vols = volumes(&t);
    let w = World::new("conformance");
    let name = |s: &Subject| s.fs.to_lowercase().replace('+', "plus");
    for (s, img) in &vols {
        w.ok(&[
            "volumes",
            "add",
            path_str(&source(s, img)),
            "--name",
            &name(s),
            "--deleted",
            "--refresh",
            "never",
        ]);
    }
    w.start();
    w.wait_ready(60);
    for (s, img) in &vols {
        check(&w, &name(s), &source(s, img), 0);
    }
    let mut rng = Rng(0x5eed_fa7d_2026);
    // The subjects after the first six draw from generators of their own, so that those six keep the changes
    // they were checked with (mtools 4.0 aborts on some renames: an assertion in its folder cache).
    let mut own: Vec<Rng> = (0..vols.len())
        .map(|i| Rng(0x5eed_0000 + i as u64))
        .collect();
    let mut models: Vec<Model> = vols.iter().map(|_| Model::new()).collect();
    for round in 1..=5 {
        for (k, ((s, img), m)) in vols.iter().zip(&mut models).enumerate() {
            let rng = if k < 6 { &mut rng } else { &mut own[k] };
            let ops: Vec<Op> = (0..8).map(|_| random_op(m, rng)).collect();
            match s.mount {
                None => ops.iter().for_each(|op| apply_mtools(img, &t, op)),
                Some(mount) => mount(img, &t.path(&format!("{}-mnt", name(s))), &mut |root| {
                    ops.iter().for_each(|op| apply_mounted(root, op));
                    if ["ext4", "XFS", "Btrfs", "HFS+", "APFS"].contains(&s.fs) {
                        // What only POSIX file systems keep: a file's permissions and owner changed, a symlink.
                        posix_changes(root, m, rng, round);
                    }
                }),
            }
            let r = w.ok(&["volumes", "refresh", &name(s)]);
            assert!(
                r.contains("applied") && r.contains("delta") && !r.contains("rebuil"),
                "{}, round {round}: not a delta: {r}",
                s.fs
            );
            check(&w, &name(s), &source(s, img), round);
        }
    }
}

fn posix_changes(root: &Path, m: &Model, rng: &mut Rng, round: usize) {
    use std::os::unix::fs::PermissionsExt;
    if !m.files.is_empty() {
        let f = root.join(&m.files[rng.below(m.files.len())]);
        let mode = 0o600 | (rng.below(0o100) as u32);
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        std::os::unix::fs::chown(&f, Some(1000 + round as u32), Some(round as u32)).unwrap();
    }
    std::os::unix::fs::symlink(
        format!("target {round}"),
        root.join(format!("link {round}")),
    )
    .unwrap();
}
