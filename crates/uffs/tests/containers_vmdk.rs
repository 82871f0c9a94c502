//! VMware VMDK images read as the disk they hold, each made by `qemu-img convert -O vmdk` (or `qemu-img create`,
//! `qemu-io`) or rewritten from one:
//! - every subformat qemu writes: monolithicSparse, streamOptimized (and the same with its grain directory
//!   found through the footer, as VMware writes it), twoGbMaxExtentSparse, twoGbMaxExtentFlat, monolithicFlat;
//! - descriptors of several extents, FLAT, SPARSE and ZERO, and a disk whose partition crosses from one 2 GB
//!   extent into the next;
//! - a differencing disk reading through its parent;
//! - damaged and missing pieces, each refused in one line (exit 2).
//!
//! Each must export byte for byte what the raw image exports, describe the same volume and give the same file
//! contents, and list the same paths as TSK's `fls -i vmdk` on the container itself.

#![cfg(unix)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::containers::{described, stdout};
use common::*;

/// `uffs info SOURCE --json`'s container: its one line and its files.
fn container(source: &str) -> (String, Vec<String>) {
    let v: serde_json::Value =
        serde_json::from_slice(&stdout(&["info", source, "--json"])).unwrap();
    let c = &v["container"];
    (
        c["format"].as_str().unwrap_or_default().to_string(),
        c["files"]
            .as_array()
            .map(|a| a.iter().map(|f| f.as_str().unwrap().to_string()).collect())
            .unwrap_or_default(),
    )
}

/// The raw image's export and description, taken once.
struct Want {
    export: Vec<u8>,
    info: serde_json::Value,
}

fn want() -> Want {
    let raw = path_str(&fixture("content.img")).to_string();
    Want {
        export: stdout(&["export", &raw, "--format", "csv", "--deleted", "--streams"]),
        info: described(&raw),
    }
}

/// `source` (a container of `content.img`) against the raw image: its export byte for byte, `info`, the contents
/// of compressed, sparse, fragmented, stream and deleted files, and an index built from it.
fn reads_as_the_content_volume(source: &str, want: &Want) {
    let raw = fixture("content.img");
    let raw_s = path_str(&raw);
    let f = facts("content.img");
    let s = source;
    assert!(
        stdout(&["export", s, "--format", "csv", "--deleted", "--streams"]) == want.export,
        "{s}: its export differs from the raw image's"
    );
    assert_eq!(&described(s), &want.info, "{s}");
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

/// `qemu-img convert -O vmdk` of `image` into `to`, of `subformat` when given.
fn vmdk(image: &Path, to: &Path, subformat: Option<&str>) -> String {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let mut c = tool("qemu-img");
    c.args(["convert", "-O", "vmdk"]);
    if let Some(s) = subformat {
        c.args(["-o", &format!("subformat={s}")]);
    }
    run_ok(c.arg(image).arg(to));
    path_str(to).to_string()
}

/// The paths `fls -r -p` lists, live and deleted, in uffs's spelling (see `tsk_parity.rs`, which compares
/// sizes too): a leading `/`, orphans under `/$Orphan`, index attributes without their `:$I30`-style suffix.
fn fls_paths(args: &[&str], image: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let out = run_ok(tool("fls").args(["-l", "-r", "-p"]).args(args).arg(image));
    let (mut live, mut deleted) = (BTreeSet::new(), BTreeSet::new());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut cols = line.split('\t');
        let (Some(head), Some(path)) = (cols.next(), cols.next()) else {
            continue;
        };
        if head.contains("(realloc)")
            || path == "$OrphanFiles"
            || path.starts_with("$OrphanFiles/OrphanFile-")
        {
            continue;
        }
        let inode = head.trim_end_matches(':').rsplit(' ').next().unwrap_or("");
        let attr_type = inode.split('-').nth(1);
        let path = path.replace("/.:", ":");
        let mut path = match path.strip_prefix("$OrphanFiles/") {
            Some(rest) => format!("/$Orphan/{rest}"),
            None => format!("/{path}"),
        };
        if attr_type.is_some() && attr_type != Some("128") {
            if let Some(i) = path
                .rfind(':')
                .filter(|&i| i > path.rfind('/').unwrap_or(0))
            {
                path.truncate(i);
            }
        }
        if head.contains(" * ") {
            deleted.insert(path);
        } else {
            live.insert(path);
        }
    }
    let deleted = deleted.difference(&live).cloned().collect();
    (live, deleted)
}

/// The paths uffs exports from `source`, live and deleted.
fn uffs_paths(source: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let rows = csv_rows(&stdout(&["export", source, "--deleted", "--streams"]));
    let (mut live, mut deleted) = (BTreeSet::new(), BTreeSet::new());
    for r in rows {
        if r["path"] == "/" {
            continue;
        }
        if r["deleted"] == "true" {
            deleted.insert(r["path"].clone());
        } else {
            live.insert(r["path"].clone());
        }
    }
    let deleted = deleted.difference(&live).cloned().collect();
    (live, deleted)
}

/// `fls -i vmdk` on the container `image` (at `sector_offset` for a partition) lists the paths uffs exports from
/// `source`.
fn same_paths_as_fls(image: &Path, sector_offset: Option<u64>, source: &str) {
    let offset = sector_offset.map(|o| o.to_string());
    let mut args = vec!["-i", "vmdk"];
    if let Some(o) = &offset {
        args.extend(["-o", o]);
    }
    same_paths_as(&args, image, source);
}

/// `fls ARGS image` lists the paths uffs exports from `source`.
fn same_paths_as(args: &[&str], image: &Path, source: &str) {
    let (t_live, t_deleted) = fls_paths(args, image);
    let (u_live, u_deleted) = uffs_paths(source);
    assert!(
        t_live.len() > 20,
        "{}: fls lists {t_live:?}",
        image.display()
    );
    let only = |a: &BTreeSet<String>, b: &BTreeSet<String>| -> Vec<String> {
        a.difference(b).take(15).cloned().collect()
    };
    assert!(
        t_live == u_live && t_deleted == u_deleted,
        "{source} disagrees with fls {args:?}: live only in fls {:?}, only in uffs {:?}; deleted only in fls \
         {:?}, only in uffs {:?}",
        only(&t_live, &u_live),
        only(&u_live, &t_live),
        only(&t_deleted, &u_deleted),
        only(&u_deleted, &t_deleted)
    );
}

/// A streamOptimized extent as VMware writes it in one pass: the header's grain directory offset `GD_AT_END`,
/// the real header in the footer (a footer marker, the header, the end-of-stream marker) at the file's end.
fn with_footer(stream: &Path, to: &Path) {
    let mut bytes = std::fs::read(stream).unwrap();
    assert_eq!(&bytes[..4], b"KDMV");
    // qemu ends the stream with an end-of-stream marker: a zero sector.
    let eos = bytes.split_off(bytes.len() - 512);
    assert!(eos.iter().all(|&b| b == 0), "no end-of-stream marker");
    let header = bytes[..512].to_vec();
    let mut footer_marker = vec![0u8; 512];
    footer_marker[..8].copy_from_slice(&1u64.to_le_bytes());
    footer_marker[12..16].copy_from_slice(&3u32.to_le_bytes());
    bytes.extend_from_slice(&footer_marker);
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(&eos);
    bytes[56..64].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(to, bytes).unwrap();
}

#[test]
fn every_subformat_reads_as_the_image_it_holds() {
    let raw = fixture("content.img");
    let dir = scratch("vmdk-subformats");
    let want = want();
    // (subformat, what info says, its files besides the one named)
    for (sub, says, pieces) in [
        (None, "VMDK monolithicSparse: 64 KiB grains (", 0),
        (
            Some("streamOptimized"),
            "VMDK streamOptimized: 64 KiB compressed grains (",
            0,
        ),
        (
            Some("twoGbMaxExtentSparse"),
            "VMDK twoGbMaxExtentSparse: 64 KiB grains (",
            1,
        ),
        (
            Some("twoGbMaxExtentFlat"),
            "VMDK twoGbMaxExtentFlat: 1 extent",
            1,
        ),
        (Some("monolithicFlat"), "VMDK monolithicFlat: 1 extent", 1),
    ] {
        let name = sub.unwrap_or("default");
        let v = vmdk(&raw, &dir.join(name).join("content.vmdk"), sub);
        let (format, files) = container(&v);
        assert!(format.starts_with(says), "{name}: {format}");
        assert!(format.ends_with("1 extent"), "{name}: {format}");
        assert_eq!(files.len(), 1 + pieces, "{name}: {files:?}");
        assert_eq!(files[0], v);
        let text = String::from_utf8(stdout(&["info", &v])).unwrap();
        assert!(text.contains(&format!("container     {says}")), "{text}");
        reads_as_the_content_volume(&v, &want);
        same_paths_as_fls(Path::new(&v), None, &v);
    }
    // A streamOptimized extent whose header sends the reader to its footer.
    // (Its name as its descriptor gives it: TSK opens the extent by that name, uffs the file named.)
    let footer = dir.join("footer/content.vmdk");
    std::fs::create_dir_all(footer.parent().unwrap()).unwrap();
    with_footer(&dir.join("streamOptimized/content.vmdk"), &footer);
    let f = path_str(&footer);
    assert!(container(f).0.starts_with("VMDK streamOptimized: "));
    reads_as_the_content_volume(f, &want);
    same_paths_as_fls(&footer, None, f);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `image`'s bytes from `from` (in sectors) for `sectors` into `to`.
fn cut(image: &[u8], from: usize, sectors: usize, to: &Path) {
    std::fs::write(to, &image[from * 512..(from + sectors) * 512]).unwrap();
}

#[test]
fn descriptors_of_several_extents_read_as_one_disk() {
    let raw = fixture("content.img");
    let dir = scratch("vmdk-extents");
    let want = want();
    let bytes = std::fs::read(&raw).unwrap();
    let sectors = bytes.len() / 512;
    // Three pieces of odd sizes: a flat file, a sparse extent, and a flat extent at an offset in a larger file.
    let (a, b) = (7_777, 20_001);
    let c = sectors - a - b;
    cut(&bytes, 0, a, &dir.join("a-f001.vmdk"));
    cut(&bytes, a, b, &dir.join("b.raw"));
    vmdk(&dir.join("b.raw"), &dir.join("b-s002.vmdk"), None);
    std::fs::remove_file(dir.join("b.raw")).unwrap();
    let mut padded = vec![0xa5u8; 3 * 512];
    padded.extend_from_slice(&bytes[(a + b) * 512..]);
    padded.extend_from_slice(&[0x5a; 1024]);
    std::fs::write(dir.join("c with space.bin"), padded).unwrap();
    let extents = format!(
        "RW {a} FLAT \"a-f001.vmdk\" 0\nRW {b} SPARSE \"b-s002.vmdk\"\nRDONLY {c} FLAT \"c with space.bin\" 3\n"
    );
    let descriptor = |extents: &str| {
        format!(
            "# Disk DescriptorFile\nversion=1\nCID=12345678\nparentCID=ffffffff\ncreateType=\"custom\"\n\n\
             # Extent description\n{extents}\n# The Disk Data Base\n#DDB\n\nddb.adapterType = \"ide\"\n"
        )
    };
    let d = dir.join("disk.vmdk");
    std::fs::write(&d, descriptor(&extents)).unwrap();
    let s = path_str(&d);
    let (format, files) = container(s);
    assert!(
        format.starts_with("VMDK custom: 64 KiB grains ("),
        "{format}"
    );
    assert!(format.ends_with(", 3 extents"), "{format}");
    let names: Vec<&str> = files
        .iter()
        .map(|f| f.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "disk.vmdk",
            "a-f001.vmdk",
            "b-s002.vmdk",
            "c with space.bin"
        ]
    );
    reads_as_the_content_volume(s, &want);
    // A zero extent after them: the disk reads as the raw image with zeros after it (CRLF line ends too).
    let zeros = dir.join("zeros.vmdk");
    std::fs::write(
        &zeros,
        descriptor(&format!("{extents}RW 2048 ZERO\n")).replace('\n', "\r\n"),
    )
    .unwrap();
    let padded_raw = dir.join("padded.img");
    let mut with_zeros = bytes.clone();
    with_zeros.resize(bytes.len() + 2048 * 512, 0);
    std::fs::write(&padded_raw, with_zeros).unwrap();
    let z = path_str(&zeros);
    assert!(container(z).0.ends_with(", 4 extents"));
    assert_eq!(described(z), described(path_str(&padded_raw)));
    assert!(
        stdout(&["export", z, "--format", "csv", "--deleted"])
            == stdout(&[
                "export",
                path_str(&padded_raw),
                "--format",
                "csv",
                "--deleted"
            ])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn whole_disks_read_by_partition() {
    // The GPT fixture in a monolithicSparse VMDK, by partition.
    let disk = fixture("disk-gpt.img");
    let f = facts("disk-gpt.img");
    let dir = scratch("vmdk-disks");
    let v = vmdk(&disk, &dir.join("disk.vmdk"), None);
    assert_eq!(described(&v), described(path_str(&disk)));
    for (part, start) in [("2", "p2_start"), ("3", "p3_start")] {
        let want = stdout(&[
            "export",
            &format!("{}@{part}", path_str(&disk)),
            "--format",
            "csv",
        ]);
        assert!(
            stdout(&["export", &format!("{v}@{part}"), "--format", "csv"]) == want,
            "{v}@{part}: its export differs from the raw disk's"
        );
        same_paths_as_fls(
            Path::new(&v),
            Some(f[start].parse().unwrap()),
            &format!("{v}@{part}"),
        );
    }
    // A disk of 2.1 GB, its one partition (the content volume) crossing from the first 2 GB extent into the
    // second: twoGbMaxExtentSparse and twoGbMaxExtentFlat make two extents.
    let content = std::fs::read(fixture("content.img")).unwrap();
    let raw = dir.join("big.img");
    let start: u64 = 4_192_256 - 8192;
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::File::create(&raw).unwrap();
        file.set_len(4_300_000 * 512).unwrap();
        file.seek(SeekFrom::Start(start * 512)).unwrap();
        file.write_all(&content).unwrap();
    }
    let mut sfdisk = Command::new("sfdisk");
    sfdisk
        .args(["-q", "--no-reread", "--no-tell-kernel"])
        .arg(&raw)
        .stdin(std::process::Stdio::piped());
    let mut child = sfdisk.spawn().expect("sfdisk");
    use std::io::Write;
    write!(
        child.stdin.take().unwrap(),
        "label: dos\nstart={start}, size={}, type=7\n",
        content.len() / 512
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
    let raw_s = path_str(&raw);
    let want = stdout(&[
        "export",
        &format!("{raw_s}@1"),
        "--format",
        "csv",
        "--deleted",
    ]);
    assert!(want.len() > 1000);
    for sub in ["twoGbMaxExtentSparse", "twoGbMaxExtentFlat"] {
        let v = vmdk(&raw, &dir.join(sub).join("big.vmdk"), Some(sub));
        let (format, files) = container(&v);
        assert!(format.ends_with("2 extents"), "{format}");
        assert_eq!(files.len(), 3, "{files:?}");
        assert_eq!(described(&v), described(raw_s));
        assert!(
            stdout(&["export", &format!("{v}@1"), "--format", "csv", "--deleted"]) == want,
            "{v}@1: its export differs from the raw disk's"
        );
        same_paths_as_fls(Path::new(&v), Some(start), &format!("{v}@1"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs uffs `info` and `export` on `source`: both fail in one line (exit 2), which contains `says`.
fn refused(source: &Path, says: &str) {
    for cmd in [&["info"][..], &["export", "--format", "csv"][..]] {
        let out = uffs()
            .args(&cmd[..1])
            .arg(source)
            .args(&cmd[1..])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{cmd:?} {}: {err}",
            source.display()
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{cmd:?} {}: {err}", source.display());
    }
}

#[test]
fn a_differencing_disk_reads_through_its_parent() {
    let dir = scratch("vmdk-differencing");
    let raw = fixture("content.img");
    // The content volume with one file more (ntfscp writes it without mounting).
    let changed = dir.join("changed.img");
    std::fs::copy(&raw, &changed).unwrap();
    std::fs::write(dir.join("new.txt"), "written in the child\n").unwrap();
    run_ok(
        tool("ntfscp")
            .arg("-f")
            .arg(&changed)
            .arg(dir.join("new.txt"))
            .arg("/new-in-child.txt"),
    );
    let base = vmdk(&raw, &dir.join("base.vmdk"), None);
    // The child: empty over its parent, then the 64 KiB pieces that differ written into it with qemu-io (qemu
    // cannot rebase a VMDK, and `convert -B` writes every piece).
    run_ok(tool("qemu-img").current_dir(&dir).args([
        "create",
        "-q",
        "-f",
        "vmdk",
        "-b",
        "base.vmdk",
        "-F",
        "vmdk",
        "child.vmdk",
    ]));
    let (old, new) = (
        std::fs::read(&raw).unwrap(),
        std::fs::read(&changed).unwrap(),
    );
    let mut written = 0;
    for (i, (a, b)) in old.chunks(65536).zip(new.chunks(65536)).enumerate() {
        if a != b {
            let piece = dir.join("piece");
            std::fs::write(&piece, b).unwrap();
            run_ok(tool("qemu-io").current_dir(&dir).args([
                "-f",
                "vmdk",
                "-c",
                &format!("write -q -s piece {} {}", i * 65536, b.len()),
                "child.vmdk",
            ]));
            written += 1;
        }
    }
    assert!((1..20).contains(&written), "{written} pieces differ");
    let child = dir.join("child.vmdk");
    let c = path_str(&child);
    let (format, files) = container(c);
    assert!(
        format.contains("; differencing, reads through ") && format.ends_with("base.vmdk"),
        "{format}"
    );
    assert_eq!(files, [c.to_string(), base.clone()]);
    let ch = path_str(&changed);
    assert!(
        stdout(&["export", c, "--format", "csv", "--deleted", "--streams"])
            == stdout(&["export", ch, "--format", "csv", "--deleted", "--streams"])
    );
    assert_eq!(described(c), described(ch));
    let rows = csv_rows(&stdout(&["export", c, "--format", "csv"]));
    let new_file = rows
        .iter()
        .find(|r| r["path"] == "/new-in-child.txt")
        .expect("the child's file");
    assert_eq!(
        stdout(&["cat", c, &new_file["record"]]),
        b"written in the child\n"
    );
    // Its parent, as the source, lacks it.
    assert!(
        !String::from_utf8(stdout(&["export", &base, "--format", "csv"]))
            .unwrap()
            .contains("new-in-child")
    );
    // TSK's VMDK reader does not open parents: fls of the raw image the child holds.
    same_paths_as(&[], &changed, c);

    // A parent that changed since (its CID differs from the child's parentCID), one that is missing, and a
    // child that is its own parent: refused in one line.
    let mut bytes = std::fs::read(&base).unwrap();
    let at = bytes.windows(4).position(|w| w == b"CID=").unwrap() + 4;
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    let changed_base = dir.join("base.vmdk");
    std::fs::write(&changed_base, &bytes).unwrap();
    refused(&child, "has changed since");
    std::fs::remove_file(&changed_base).unwrap();
    refused(&child, "base.vmdk is missing");
    let mut bytes = std::fs::read(&child).unwrap();
    let at = bytes.windows(9).position(|w| w == b"base.vmdk").unwrap();
    bytes[at..at + 9].copy_from_slice(b"loop.vmdk");
    std::fs::write(dir.join("loop.vmdk"), bytes).unwrap();
    refused(&dir.join("loop.vmdk"), "loops");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_and_missing_pieces_are_refused_in_one_line() {
    let raw = fixture("content.img");
    let dir = scratch("vmdk-damaged");
    let sparse = PathBuf::from(vmdk(&raw, &dir.join("sparse.vmdk"), None));
    let stream = PathBuf::from(vmdk(
        &raw,
        &dir.join("s/stream.vmdk"),
        Some("streamOptimized"),
    ));
    let good = std::fs::read(&sparse).unwrap();
    let le32 = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let le64 = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let bad = dir.join("bad.vmdk");
    // Truncated: its grains past the new end.
    std::fs::write(&bad, &good[..good.len() / 2]).unwrap();
    refused(&bad, "truncated");
    // The grain directory past the end; its first table past the end.
    let gd = le64(&good, 56) as usize * 512;
    for (at, value) in [
        (56, (1u64 << 40).to_le_bytes().to_vec()),
        (gd, 0x7fff_fff0u32.to_le_bytes().to_vec()),
        (20, 3u64.to_le_bytes().to_vec()),
    ] {
        let mut bytes = good.clone();
        bytes[at..at + value.len()].copy_from_slice(&value);
        std::fs::write(&bad, bytes).unwrap();
        refused(&bad, "sparse extent");
    }
    // A compressed grain that does not inflate: the first grain (the boot sector's), its deflate data after the
    // marker (12 bytes) and the zlib header (2) made an invalid block.
    let mut bytes = std::fs::read(&stream).unwrap();
    let gd = le64(&bytes, 56) as usize * 512;
    let gt = le32(&bytes, gd) as usize * 512;
    let grain = le32(&bytes, gt) as usize * 512;
    assert_eq!(le64(&bytes, grain), 0, "grain 0's marker");
    bytes[grain + 14..grain + 64].fill(0xff);
    std::fs::write(&bad, bytes).unwrap();
    refused(&bad, "does not decompress");
    // A split disk without one of its extent files: the message names it.
    let split = vmdk(
        &raw,
        &dir.join("split/disk.vmdk"),
        Some("twoGbMaxExtentSparse"),
    );
    std::fs::remove_file(dir.join("split/disk-s001.vmdk")).unwrap();
    refused(Path::new(&split), "disk-s001.vmdk is missing");
    let flat = vmdk(&raw, &dir.join("flat/disk.vmdk"), Some("monolithicFlat"));
    let f = dir.join("flat/disk-flat.vmdk");
    let n = std::fs::metadata(&f).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(n - 512)
        .unwrap();
    refused(Path::new(&flat), "disk-flat.vmdk holds");
    std::fs::remove_file(&f).unwrap();
    refused(Path::new(&flat), "disk-flat.vmdk is missing");
    let _ = std::fs::remove_dir_all(&dir);
}
