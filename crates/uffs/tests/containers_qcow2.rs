//! qcow2 images read as the disk they hold, made by `qemu-img`: version 3 (the default), version 2
//! (`compat=0.10`), compressed (`-c`), small clusters (many L2 tables), a whole disk by partition, backing chains
//! (qcow2 on qcow2, qcow2 on raw, a backing file shorter than the image), and the real Windows volumes in
//! `tests/data/windows-volumes`, against `qemu-img convert -O raw` of each (and TSK's `fls` on that raw image:
//! TSK does not read qcow2). Damaged and refused images are one line, exit 2.

#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::containers::{described, qemu_convert, stdout};
use common::*;

fn export(source: &str) -> Vec<u8> {
    stdout(&[
        "export",
        source,
        "--format",
        "csv",
        "--deleted",
        "--streams",
    ])
}

/// `source` (a container of `content.img`) against the raw image: its export byte for byte, `info`, the contents
/// of compressed, sparse, fragmented, stream and deleted files, and an index built from it.
fn reads_as_the_content_volume(source: &str, want_export: &[u8], want_info: &serde_json::Value) {
    let raw = fixture("content.img");
    let raw_s = path_str(&raw);
    let f = facts("content.img");
    let s = source;
    assert!(
        export(s) == want_export,
        "{s}: its export differs from the raw image's"
    );
    assert_eq!(&described(s), want_info, "{s}");
    for (key, stream) in [
        ("compressed_text_inode", ""),
        ("compressed_holes_inode", ""),
        ("sparse_holes_inode", ""),
        ("uninitialized_tail_inode", ""),
        ("fragmented_inode", ""),
        ("fragmented_stream_inode", ":frag"),
        ("deleted_fragmented_inode", ""),
    ] {
        let target = format!("{}{stream}", f[key]);
        let want = stdout(&["cat", raw_s, &target]);
        assert!(!want.is_empty(), "{key}: empty");
        assert!(
            stdout(&["cat", s, &target]) == want,
            "{s}: cat {target} ({key}) differs from the raw image's"
        );
    }
    let idx = PathBuf::from(format!("{s}.uffs"));
    run_ok(uffs().args(["index", s, "-o"]).arg(&idx));
    assert_eq!(
        stdout(&["*", "--index", path_str(&idx), "--count"]),
        stdout(&["*", "--source", raw_s, "--count"])
    );
    let _ = std::fs::remove_file(&idx);
}

/// `qemu-img ARGS`, which must succeed.
fn qemu_img(args: &[&str]) {
    run_ok(tool("qemu-img").args(args));
}

/// `qemu-img convert -O raw` of `image` into `to`.
fn raw_of(image: &Path, to: &Path) -> String {
    run_ok(
        tool("qemu-img")
            .args(["convert", "-O", "raw"])
            .arg(image)
            .arg(to),
    );
    path_str(to).to_string()
}

/// `uffs ARGS` fails with exit 2 and one line on stderr, which it returns.
fn refused(args: &[&str]) -> String {
    let out = uffs().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    err
}

/// The text of `uffs info SOURCE`.
fn info_text(source: &str) -> String {
    String::from_utf8(stdout(&["info", source])).unwrap()
}

#[test]
fn a_qcow2_reads_as_the_image_it_holds() {
    let raw = fixture("content.img");
    let dir = scratch("qcow2");
    let raw_s = path_str(&raw);
    let want_export = export(raw_s);
    let want_info = described(raw_s);
    for (name, extra, says) in [
        ("v3.qcow2", &[][..], "qcow2 v3: 64 KiB clusters, "),
        (
            "v2.qcow2",
            &["-o", "compat=0.10"][..],
            "qcow2 v2: 64 KiB clusters, ",
        ),
        (
            "compressed.qcow2",
            &["-c"][..],
            "qcow2 v3: 64 KiB clusters, ",
        ),
        // 512-byte clusters: an L2 table covers 32 KiB, so reads cross many tables.
        (
            "small.qcow2",
            &["-o", "cluster_size=512"][..],
            "qcow2 v3: 512-byte clusters, ",
        ),
    ] {
        let q = qemu_convert("qcow2", &raw, &dir.join(name), extra);
        let text = info_text(&q);
        assert!(text.contains(&format!("container     {says}")), "{text}");
        if name == "compressed.qcow2" {
            assert!(text.contains(" compressed)"), "{text}");
        }
        reads_as_the_content_volume(&q, &want_export, &want_info);
    }
    // Flags QEMU sets: dirty (refcounts not repaired; reading does not use them) and corrupt (read, and said).
    let good = std::fs::read(dir.join("v3.qcow2")).unwrap();
    for (bit, says) in [(1u64, "dirty"), (2, "marked corrupt by QEMU")] {
        let mut bytes = good.clone();
        bytes[72..80].copy_from_slice(&bit.to_be_bytes());
        let p = dir.join("flagged.qcow2");
        std::fs::write(&p, bytes).unwrap();
        let s = path_str(&p);
        assert!(info_text(s).contains(says), "{}", info_text(s));
        assert!(export(s) == want_export, "{s} with bit {bit}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_partition_of_a_qcow2_disk_reads_as_the_disks() {
    let disk = fixture("disk-gpt.img");
    let dir = scratch("qcow2-disk");
    let q = qemu_convert("qcow2", &disk, &dir.join("disk.qcow2"), &[]);
    assert_eq!(described(&q), described(path_str(&disk)));
    for part in ["2", "3"] {
        let want = stdout(&[
            "export",
            &format!("{}@{part}", path_str(&disk)),
            "--format",
            "csv",
        ]);
        assert!(want.len() > 1000, "@{part}: a small export");
        assert!(
            stdout(&["export", &format!("{q}@{part}"), "--format", "csv"]) == want,
            "{q}@{part}: its export differs from the raw disk's"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn backing_chains_read_through() {
    let raw = fixture("content.img");
    let dir = scratch("qcow2-chain");
    let base = qemu_convert("qcow2", &raw, &dir.join("base.qcow2"), &[]);
    // A changed volume: a new file copied in by ntfscp. The child holds only the clusters that differ.
    let changed = dir.join("changed.img");
    std::fs::copy(&raw, &changed).unwrap();
    let new_file = dir.join("new.txt");
    std::fs::write(&new_file, "written into the child only\n".repeat(150)).unwrap();
    run_ok(
        tool("ntfscp")
            .arg("-f")
            .arg(&changed)
            .arg(&new_file)
            .arg("/qcow2-child-only.txt"),
    );
    let changed_s = path_str(&changed);
    let want = export(changed_s);
    assert!(
        String::from_utf8_lossy(&want).contains("/qcow2-child-only.txt"),
        "ntfscp wrote no file"
    );
    assert!(want != export(path_str(&raw)));
    let want_cat = stdout(&["cat", changed_s, "/qcow2-child-only.txt"]);
    // The child: first an empty image over the changed raw image, then rebased (safe mode) onto base.qcow2,
    // which copies in just the clusters where the two differ. It names base.qcow2 relatively, from another folder
    // than the one uffs runs in.
    let rebased = |name: &str, onto: &str, format: &str| -> PathBuf {
        let p = dir.join(name);
        qemu_img(&[
            "create",
            "-f",
            "qcow2",
            "-b",
            changed_s,
            "-F",
            "raw",
            path_str(&p),
        ]);
        run_ok(
            tool("qemu-img")
                .current_dir(&dir)
                .args(["rebase", "-b", onto, "-F", format, name]),
        );
        p
    };
    let child = rebased("child.qcow2", "base.qcow2", "qcow2");
    let child_s = path_str(&child);
    let child_len = std::fs::metadata(&child).unwrap().len();
    assert!(
        child_len < std::fs::metadata(&base).unwrap().len(),
        "the child ({child_len} bytes) should hold only the changes"
    );
    assert!(
        export(child_s) == want,
        "{child_s}: differs from the changed raw image"
    );
    assert_eq!(stdout(&["cat", child_s, "/qcow2-child-only.txt"]), want_cat);
    let text = info_text(child_s);
    assert!(text.contains(", backing file base.qcow2"), "{text}");
    assert!(
        text.contains(&format!("  files       2: {child_s} to {base}\n")),
        "{text}"
    );
    // A raw backing file, and a child larger than its backing file (it reads zeros past the backing's end).
    let raw_child = rebased("raw-child.qcow2", path_str(&raw), "raw");
    let text = info_text(path_str(&raw_child));
    assert!(
        text.contains(&format!(", backing file {}", path_str(&raw))),
        "{text}"
    );
    assert!(export(path_str(&raw_child)) == want, "qcow2 on raw");
    let bigger = dir.join("bigger.qcow2");
    let size = std::fs::metadata(&raw).unwrap().len() + (3 << 20) + 512;
    qemu_img(&[
        "create",
        "-f",
        "qcow2",
        "-b",
        &base,
        "-F",
        "qcow2",
        path_str(&bigger),
        &size.to_string(),
    ]);
    let bigger_raw = raw_of(&bigger, &dir.join("bigger.img"));
    assert!(
        export(path_str(&bigger)) == export(&bigger_raw),
        "bigger child"
    );
    // A chain of three: a grandchild with nothing of its own reads as the child.
    let grand = dir.join("grand.qcow2");
    qemu_img(&[
        "create",
        "-f",
        "qcow2",
        "-b",
        child_s,
        "-F",
        "qcow2",
        path_str(&grand),
    ]);
    assert!(export(path_str(&grand)) == want, "grandchild");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_and_refused_qcow2_images_are_one_line() {
    let raw = fixture("content.img");
    let dir = scratch("qcow2-bad");
    let good_s = qemu_convert("qcow2", &raw, &dir.join("good.qcow2"), &[]);
    let good = std::fs::read(&good_s).unwrap();
    let write = |name: &str, bytes: &[u8]| -> String {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        path_str(&p).to_string()
    };
    let both = |s: &str| -> String {
        refused(&["export", s, "--format", "csv"]);
        refused(&["info", s])
    };
    // Truncated: in the header, in the tables (refused), and in the data, where the clusters past the cut are
    // counted unreadable as a truncated raw image's are (exit 3, partial).
    for keep in [100, 70_000] {
        both(&write("truncated.qcow2", &good[..keep]));
    }
    let s = write("truncated.qcow2", &good[..good.len() / 2]);
    let out = uffs()
        .args(["export", &s, "--format", "csv"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("unreadable records"), "{err}");
    // The L1 table past the end, and an L1 entry that points past it.
    let l1_at = u64::from_be_bytes(good[40..48].try_into().unwrap()) as usize;
    let mut bytes = good.clone();
    bytes[40..48].copy_from_slice(&(1u64 << 40).to_be_bytes());
    let err = both(&write("l1.qcow2", &bytes));
    assert!(err.contains("L1 table"), "{err}");
    let mut bytes = good.clone();
    bytes[l1_at..l1_at + 8].copy_from_slice(&(1u64 << 45).to_be_bytes());
    let err = both(&write("l1-entry.qcow2", &bytes));
    assert!(err.contains("L1 entry 0"), "{err}");
    // A compressed cluster that is not deflate: the first cluster's, which holds the boot sector.
    let comp_s = qemu_convert("qcow2", &raw, &dir.join("compressed.qcow2"), &["-c"]);
    let mut bytes = std::fs::read(&comp_s).unwrap();
    let l1_at = u64::from_be_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let l2_at = (u64::from_be_bytes(bytes[l1_at..l1_at + 8].try_into().unwrap())
        & 0x00ff_ffff_ffff_fe00) as usize;
    let entry = u64::from_be_bytes(bytes[l2_at..l2_at + 8].try_into().unwrap());
    assert!(
        entry & 1 << 62 != 0,
        "cluster 0 is not compressed: {entry:#x}"
    );
    let at = (entry & ((1u64 << 54) - 1)) as usize;
    bytes[at..at + 64].fill(0xff);
    let err = both(&write("bad-deflate.qcow2", &bytes));
    assert!(err.contains("compressed cluster"), "{err}");
    // Refused: encryption, extended L2 entries, zstd, an unknown incompatible feature, version 1.
    // (qemu-img makes AES ones without measuring the machine, as LUKS's key derivation does; a LUKS header is
    // patched in.)
    let enc = dir.join("enc.qcow2");
    qemu_img(&[
        "create",
        "-f",
        "qcow2",
        "--object",
        "secret,id=s0,data=password",
        "-o",
        "encrypt.format=aes,encrypt.key-secret=s0",
        path_str(&enc),
        "16M",
    ]);
    let err = both(path_str(&enc));
    assert!(err.contains("encrypted (AES)"), "{err}");
    let mut bytes = good.clone();
    bytes[32..36].copy_from_slice(&2u32.to_be_bytes());
    let err = both(&write("luks.qcow2", &bytes));
    assert!(err.contains("encrypted (LUKS)"), "{err}");
    let ext = qemu_convert(
        "qcow2",
        &raw,
        &dir.join("ext.qcow2"),
        &["-o", "extended_l2=on"],
    );
    assert!(both(&ext).contains("extended L2"));
    let zstd = qemu_convert(
        "qcow2",
        &raw,
        &dir.join("zstd.qcow2"),
        &["-c", "-o", "compression_type=zstd"],
    );
    assert!(both(&zstd).contains("zstd"));
    let mut bytes = good.clone();
    bytes[72..80].copy_from_slice(&(1u64 << 20).to_be_bytes());
    assert!(both(&write("feature.qcow2", &bytes)).contains("incompatible features"));
    let mut bytes = good.clone();
    bytes[4..8].copy_from_slice(&1u32.to_be_bytes());
    assert!(both(&write("v1.qcow2", &bytes)).contains("version 1"));
    // A missing backing file, named; a chain that loops (a -> b -> a), named.
    let base = qemu_convert("qcow2", &raw, &dir.join("base.qcow2"), &[]);
    for name in ["a.qcow2", "b.qcow2"] {
        qemu_img(&[
            "create",
            "-f",
            "qcow2",
            "-b",
            "base.qcow2",
            "-F",
            "qcow2",
            path_str(&dir.join(name)),
        ]);
    }
    std::fs::rename(&base, dir.join("gone.qcow2")).unwrap();
    let err = both(path_str(&dir.join("a.qcow2")));
    assert!(
        err.contains("base.qcow2") && err.contains("missing"),
        "{err}"
    );
    for (from, to) in [("a.qcow2", "b.qcow2"), ("b.qcow2", "a.qcow2")] {
        let p = dir.join(from);
        let mut bytes = std::fs::read(&p).unwrap();
        let at = u64::from_be_bytes(bytes[8..16].try_into().unwrap()) as usize;
        let n = u32::from_be_bytes(bytes[16..20].try_into().unwrap()) as usize;
        assert_eq!(&bytes[at..at + n], b"base.qcow2");
        bytes[at..at + n].copy_from_slice(format!("{to:\0<10}").as_bytes());
        bytes[16..20].copy_from_slice(&(to.len() as u32).to_be_bytes());
        std::fs::write(&p, bytes).unwrap();
    }
    let err = both(path_str(&dir.join("a.qcow2")));
    assert!(err.contains("loops"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The real Windows volumes in tests/data: the qcow2 exports what its raw image does, and the paths match what
/// TSK's `fls -r -p` lists on the raw image.
#[test]
fn real_qcow2_volumes_read_as_their_raw_images() {
    let dir = scratch("qcow2-real");
    for (name, says) in [
        ("dfvfs-windows_volume", "qcow2 v3: 64 KiB clusters, "),
        ("plaso-vsstest", "qcow2 v2: 64 KiB clusters, "),
    ] {
        let q = data(&format!("windows-volumes/{name}.qcow2"));
        let q_s = path_str(&q);
        let raw = raw_of(&q, &dir.join(format!("{name}.raw")));
        assert!(info_text(q_s).contains(&format!("container     {says}")));
        let want = export(&raw);
        assert!(want.len() > 1000, "{name}: a small export");
        assert!(
            export(q_s) == want,
            "{name}: its export differs from the raw image's"
        );
        assert_eq!(described(q_s), described(&raw), "{name}");
        let n = assert_parity(Path::new(&raw), None, q_s);
        assert!(n > 20, "{name}: only {n} paths");
        let _ = std::fs::remove_file(&raw);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- TSK parity, as tsk_parity.rs compares paths (copied: test files cannot share it) ----

#[derive(Debug)]
struct FlsEntry {
    path: String,
    deleted: bool,
    data_size: Option<u64>,
}

/// `fls -l -r -p` output in uffs's conventions (see tsk_parity.rs).
fn parse_fls(out: &str) -> Vec<FlsEntry> {
    let mut v = Vec::new();
    for line in out.lines() {
        let mut cols = line.split('\t');
        let (Some(head), Some(path)) = (cols.next(), cols.next()) else {
            continue;
        };
        let size: Option<u64> = cols.nth(4).and_then(|s| s.parse().ok());
        let deleted = head.contains(" * ");
        if head.contains("(realloc)") {
            continue;
        }
        let inode = head.trim_end_matches(':').rsplit(' ').next().unwrap_or("");
        let attr_type = inode.split('-').nth(1);
        if path == "$OrphanFiles" || path.starts_with("$OrphanFiles/OrphanFile-") {
            continue;
        }
        let path = path.replace("/.:", ":");
        let mut path = match path.strip_prefix("$OrphanFiles/") {
            Some(rest) => format!("/$Orphan/{rest}"),
            None => format!("/{path}"),
        };
        let is_data = attr_type == Some("128");
        if attr_type.is_some() && !is_data {
            if let Some(i) = path
                .rfind(':')
                .filter(|&i| i > path.rfind('/').unwrap_or(0))
            {
                path.truncate(i);
            }
        }
        v.push(FlsEntry {
            path,
            deleted,
            data_size: if is_data { size } else { None },
        });
    }
    v
}

struct Sets {
    live: BTreeSet<String>,
    deleted: BTreeSet<String>,
    sizes: BTreeMap<String, u64>,
}

fn fls_sets(image: &Path, sector_offset: Option<u64>) -> Sets {
    let mut cmd: Command = tool("fls");
    cmd.args(["-l", "-r", "-p"]);
    if let Some(o) = sector_offset {
        cmd.args(["-o", &o.to_string()]);
    }
    let out = run_ok(cmd.arg(image));
    let mut s = Sets {
        live: BTreeSet::new(),
        deleted: BTreeSet::new(),
        sizes: BTreeMap::new(),
    };
    for e in parse_fls(&String::from_utf8_lossy(&out.stdout)) {
        if let Some(sz) = e.data_size {
            s.sizes.insert(e.path.clone(), sz);
        }
        if e.deleted {
            s.deleted.insert(e.path);
        } else {
            s.live.insert(e.path);
        }
    }
    s.deleted = s.deleted.difference(&s.live).cloned().collect();
    s
}

fn uffs_sets(source: &str) -> Sets {
    let rows = csv_rows(&run_ok(uffs().args(["export", source, "--deleted", "--streams"])).stdout);
    let mut s = Sets {
        live: BTreeSet::new(),
        deleted: BTreeSet::new(),
        sizes: BTreeMap::new(),
    };
    for r in rows {
        if r["path"] == "/" {
            continue;
        }
        if r["kind"] != "folder" {
            s.sizes
                .insert(r["path"].clone(), r["size"].parse().expect("size"));
        }
        if r["deleted"] == "true" {
            s.deleted.insert(r["path"].clone());
        } else {
            s.live.insert(r["path"].clone());
        }
    }
    s.deleted = s.deleted.difference(&s.live).cloned().collect();
    s
}

fn diff(what: &str, a: &BTreeSet<String>, b: &BTreeSet<String>) -> String {
    let only_tsk: Vec<_> = a.difference(b).take(15).collect();
    let only_uffs: Vec<_> = b.difference(a).take(15).collect();
    if only_tsk.is_empty() && only_uffs.is_empty() {
        return String::new();
    }
    format!("{what}: only in fls {only_tsk:?}; only in uffs {only_uffs:?}\n")
}

/// uffs on `source` against fls on `image`: live and deleted paths and sizes; returns the live paths compared.
fn assert_parity(image: &Path, sector_offset: Option<u64>, source: &str) -> usize {
    let t = fls_sets(image, sector_offset);
    let u = uffs_sets(source);
    let mut report =
        diff("live paths", &t.live, &u.live) + &diff("deleted paths", &t.deleted, &u.deleted);
    for (path, size) in &t.sizes {
        if let Some(us) = u.sizes.get(path).filter(|us| *us != size) {
            report += &format!("size of {path}: fls {size}, uffs {us}\n");
        }
    }
    assert!(report.is_empty(), "{source} disagrees with fls:\n{report}");
    t.live.len()
}
