//! VHDX images (fixed, dynamic, differencing) and differencing VHDs, read as the raw image they hold:
//! - `qemu-img convert -O vhdx` of the content volume (dynamic in 8 MiB and 1 MiB blocks, and fixed) and of a whole
//!   disk, by partition; TSK's `fls -r -p -i vhd` (libvhdi) on the containers gives the same paths as uffs;
//! - differencing VHDX and VHD children (qemu-img makes neither: `Backing file not supported for file format`),
//!   built here from a qemu-img image of a changed volume: blocks the change left alone are taken out of the
//!   child (its copy overwritten with garbage), changed blocks keep only the changed sectors (a sector bitmap),
//!   so every read that is right came from the right file;
//! - a VHDX whose log must be replayed (a BAT sector written only to the log), read through the replayed log;
//! - damaged headers, region tables, BATs, logs, and missing or looping parents: one line, exit 2.

#![cfg(unix)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::containers::{described, stdout};
use common::*;

/// `source` (a container of `content.img`) against the raw image: its export byte for byte, `info`, the contents
/// of compressed, sparse, fragmented, stream and deleted files, and an index built from it.
fn reads_as_the_content_volume(source: &str, want_export: &[u8], want_info: &serde_json::Value) {
    let raw = fixture("content.img");
    let raw_s = path_str(&raw);
    let f = facts("content.img");
    let s = source;
    assert!(
        stdout(&["export", s, "--format", "csv", "--deleted", "--streams"]) == want_export,
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

/// `qemu-img convert -O FORMAT` of `image` into `to`, with `-o OPTIONS` when given.
fn convert(format: &str, image: &Path, to: &Path, options: Option<&str>) -> String {
    let mut c = tool("qemu-img");
    c.args(["convert", "-O", format]);
    if let Some(o) = options {
        c.args(["-o", o]);
    }
    run_ok(c.arg(image).arg(to));
    path_str(to).to_string()
}

/// `uffs ARGS`, which must fail in one line with exit 2; its message.
fn refused(args: &[&str]) -> String {
    let out = uffs().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    err
}

/// The paths (live and deleted, with streams) `fls -r -p -i vhd` lists in a container, or in partition of it at
/// `sector_offset`, in uffs's form (see tsk_parity.rs): a leading `/`, orphans under `/$Orphan`, index
/// attributes' suffixes dropped, TSK's placeholders for nameless records left out.
fn fls_paths(image: &str, sector_offset: Option<u64>) -> BTreeSet<String> {
    let mut cmd = tool("fls");
    cmd.args(["-r", "-p", "-i", "vhd"]);
    if let Some(o) = sector_offset {
        cmd.args(["-o", &o.to_string()]);
    }
    let out = run_ok(cmd.arg(image));
    let mut set = BTreeSet::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((head, path)) = line.split_once('\t') else {
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
        set.insert(path);
    }
    set
}

/// The paths uffs exports from `source` (live and deleted, with streams).
fn uffs_paths(source: &str) -> BTreeSet<String> {
    csv_rows(&stdout(&["export", source, "--deleted", "--streams"]))
        .into_iter()
        .map(|r| r["path"].clone())
        .filter(|p| p != "/")
        .collect()
}

fn assert_fls_parity(image: &str, sector_offset: Option<u64>, source: &str) {
    let t = fls_paths(image, sector_offset);
    let u = uffs_paths(source);
    let only_tsk: Vec<_> = t.difference(&u).take(15).collect();
    let only_uffs: Vec<_> = u.difference(&t).take(15).collect();
    assert!(
        only_tsk.is_empty() && only_uffs.is_empty(),
        "{source}: only in fls {only_tsk:?}; only in uffs {only_uffs:?}"
    );
    assert!(
        t.len() > 4000 || sector_offset.is_some(),
        "{image}: {} paths",
        t.len()
    );
}

#[test]
fn a_vhdx_reads_as_the_image_it_holds() {
    let raw = fixture("content.img");
    let dir = scratch("vhdx");
    let raw_s = path_str(&raw);
    let want_export = stdout(&["export", raw_s, "--format", "csv", "--deleted", "--streams"]);
    let want_info = described(raw_s);
    for (name, options, says) in [
        (
            "dynamic.vhdx",
            None,
            "VHDX, dynamic: 8 MiB blocks, 3 of 3 present",
        ),
        (
            "small.vhdx",
            Some("block_size=1M"),
            "VHDX, dynamic: 1 MiB blocks, ",
        ),
        ("fixed.vhdx", Some("subformat=fixed"), "VHDX, fixed: "),
    ] {
        let v = convert("vhdx", &raw, &dir.join(name), options);
        let text = String::from_utf8(stdout(&["info", &v])).unwrap();
        assert!(text.contains(&format!("container     {says}")), "{text}");
        reads_as_the_content_volume(&v, &want_export, &want_info);
        assert_fls_parity(&v, None, &v);
    }
    // A whole disk in a dynamic VHDX (its empty blocks never written), by partition; fls reads it too.
    let disk = fixture("disk-gpt.img");
    let f = facts("disk-gpt.img");
    let v = convert("vhdx", &disk, &dir.join("disk.vhdx"), Some("block_size=1M"));
    assert_eq!(described(&v), described(path_str(&disk)));
    for (part, start) in [("2", "p2_start"), ("3", "p3_start")] {
        let want = stdout(&[
            "export",
            &format!("{}@{part}", path_str(&disk)),
            "--format",
            "csv",
        ]);
        let spec = format!("{v}@{part}");
        assert!(
            stdout(&["export", &spec, "--format", "csv"]) == want,
            "{spec}: its export differs from the raw disk's"
        );
        assert_fls_parity(&v, Some(f[start].parse().unwrap()), &spec);
    }
    // And fls on qemu-img's VHDs (fixed and dynamic) gives uffs's paths.
    for options in [None, Some("subformat=fixed")] {
        let v = convert("vpc", &raw, &dir.join("content.vhd"), options);
        assert_fls_parity(&v, None, &v);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- Building differencing children and damaged images by hand ----

fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

/// Sets the CRC-32C at `at + 4` of the `len`-byte structure at `at` (VHDX headers, region tables, log entries).
fn reseal(b: &mut [u8], at: usize, len: usize) {
    put(b, at + 4, &[0; 4]);
    let c = crc32c(&b[at..at + len]);
    put(b, at + 4, &c.to_le_bytes());
}

fn utf16le(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// A GUID's binary form from its text form.
fn guid(s: &str) -> [u8; 16] {
    let h: String = s.chars().filter(|c| *c != '-').collect();
    let mut r = [0u8; 16];
    for (i, b) in r.iter_mut().enumerate() {
        *b = u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap();
    }
    r[..4].reverse();
    r[4..6].reverse();
    r[6..8].reverse();
    r
}

const MIB: usize = 1 << 20;

/// A VHDX's regions: (BAT offset, BAT length, metadata offset, metadata length).
fn regions(b: &[u8]) -> (usize, usize, usize, usize) {
    let t = 192 * 1024;
    let (mut bat, mut meta) = ((0, 0), (0, 0));
    for i in 0..le32(b, t + 8) as usize {
        let e = t + 16 + 32 * i;
        let r = (le64(b, e + 16) as usize, le32(b, e + 24) as usize);
        if b[e..e + 16] == guid("2DC27766-F623-4200-9D64-115E9BFD4A08") {
            bat = r;
        } else {
            meta = r;
        }
    }
    (bat.0, bat.1, meta.0, meta.1)
}

/// `content.img` with changes in a few places: bytes of two files' data (found by their contents in the image)
/// and of the MFT, in the middle of sectors and across a sector's end. Returns the changed image's path.
fn changed_image(dir: &Path) -> PathBuf {
    let raw = fixture("content.img");
    let f = facts("content.img");
    let mut img = std::fs::read(&raw).unwrap();
    for key in ["fragmented_inode", "sparse_holes_inode"] {
        let data = stdout(&["cat", path_str(&raw), &f[key]]);
        // The file's first cluster that is not all zeros, found in the image.
        let c = data
            .chunks(4096)
            .find(|c| c.len() == 4096 && c.iter().any(|&b| b != 0))
            .unwrap_or_else(|| panic!("{key}: no data cluster"));
        let at = (0..img.len() - 4096)
            .step_by(4096)
            .find(|&o| img[o..o + 4096] == *c)
            .unwrap_or_else(|| panic!("{key}: its data is not in the image"));
        for b in &mut img[at + 500..at + 530] {
            *b ^= 0x5a;
        }
        for b in &mut img[at + 3000..at + 3010] {
            *b ^= 0xa5;
        }
    }
    let changed = dir.join("changed.img");
    std::fs::write(&changed, img).unwrap();
    changed
}

/// How many `block`-byte blocks of `a` and `b` differ.
fn blocks_changed(a: &Path, b: &Path, block: usize) -> usize {
    let (a, b) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    a.chunks(block)
        .zip(b.chunks(block))
        .filter(|(x, y)| x != y)
        .count()
}

/// Makes a differencing VHDX child of `parent` (named `relative`, `absolute` in its locator) that reads as
/// `changed`, from a `qemu-img` image of `changed` in 1 MiB blocks. Blocks equal to `base`'s are taken out of the
/// child (their bytes overwritten); the first changed block stays fully present; the others are partially
/// present, only their changed sectors marked in the sector bitmap (the others overwritten).
fn differencing_vhdx(changed: &Path, base: &Path, child: &Path, relative: &str, absolute: &str) {
    convert("vhdx", changed, child, Some("block_size=1M"));
    let mut b = std::fs::read(child).unwrap();
    let want = std::fs::read(changed).unwrap();
    let old = std::fs::read(base).unwrap();
    let (bat, _, meta, meta_len) = regions(&b);
    let block = MIB;
    let chunk_ratio = (1 << 23) * 512 / block;
    let blocks = want.len().div_ceil(block);
    assert!(blocks <= chunk_ratio);
    // The sector bitmap block, a new MiB at the end.
    let bitmap = b.len().div_ceil(MIB) * MIB;
    b.resize(bitmap + MIB, 0);
    put(
        &mut b,
        bat + 8 * chunk_ratio,
        &(((bitmap / MIB) as u64) << 20 | 6).to_le_bytes(),
    );
    let mut full = false;
    let mut kinds = [0; 3];
    for n in 0..blocks {
        let e = le64(&b, bat + 8 * n);
        let at = (e >> 20) as usize * MIB;
        let range = n * block..((n + 1) * block).min(want.len());
        if e & 7 != 6 {
            assert!(
                want[range.clone()].iter().all(|&x| x == 0) && old[range].iter().all(|&x| x == 0)
            );
            continue;
        }
        if want[range.clone()] == old[range.clone()] {
            put(&mut b, bat + 8 * n, &0u64.to_le_bytes());
            b[at..at + range.len()].fill(0xee);
            kinds[0] += 1;
        } else if !full {
            full = true;
            kinds[1] += 1;
        } else {
            put(&mut b, bat + 8 * n, &(e & !7 | 7).to_le_bytes());
            for s in 0..range.len() / 512 {
                let d = range.start + s * 512;
                if want[d..d + 512] != old[d..d + 512] {
                    let bit = n * block / 512 + s;
                    b[bitmap + bit / 8] |= 1 << (bit % 8);
                } else {
                    b[at + s * 512..at + s * 512 + 512].fill(0xee);
                }
            }
            kinds[2] += 1;
        }
    }
    assert!(
        kinds.iter().all(|&k| k > 0),
        "absent, full, partial blocks: {kinds:?}"
    );
    // The metadata: "has parent" in the file parameters, and a parent locator item.
    let count = u16::from_le_bytes([b[meta + 10], b[meta + 11]]) as usize;
    let mut free = 64 * 1024;
    for i in 0..count {
        let e = meta + 32 + 32 * i;
        free = free.max(le32(&b, e + 16) as usize + le32(&b, e + 20) as usize);
        if b[e..e + 16] == guid("CAA16737-FA36-4D43-B3B6-33F0AA44E76B") {
            let p = meta + le32(&b, e + 16) as usize + 4;
            let flags = le32(&b, p) | 2;
            put(&mut b, p, &flags.to_le_bytes());
        }
    }
    let pairs = [
        ("parent_linkage", "{83ab2b2a-d5a9-4fb7-9c4b-1b1bc2d2c3e1}"),
        ("relative_path", relative),
        ("absolute_win32_path", absolute),
    ];
    let mut item = guid("B04AEFB7-D19E-4A81-B789-25B8E9445913").to_vec();
    item.extend([0, 0]);
    item.extend((pairs.len() as u16).to_le_bytes());
    let mut strings: Vec<u8> = Vec::new();
    let base_off = 20 + 12 * pairs.len();
    for (k, v) in pairs {
        let (k, v) = (utf16le(k), utf16le(v));
        let ko = base_off + strings.len();
        strings.extend(&k);
        let vo = base_off + strings.len();
        strings.extend(&v);
        item.extend((ko as u32).to_le_bytes());
        item.extend((vo as u32).to_le_bytes());
        item.extend((k.len() as u16).to_le_bytes());
        item.extend((v.len() as u16).to_le_bytes());
    }
    item.extend(strings);
    assert!(free + item.len() <= meta_len);
    put(&mut b, meta + free, &item);
    let e = meta + 32 + 32 * count;
    put(&mut b, e, &guid("A8D35F2D-B30B-454D-ABF7-D3D84834AB0C"));
    put(&mut b, e + 16, &(free as u32).to_le_bytes());
    put(&mut b, e + 20, &(item.len() as u32).to_le_bytes());
    put(&mut b, e + 24, &4u32.to_le_bytes());
    put(&mut b, meta + 10, &((count + 1) as u16).to_le_bytes());
    std::fs::write(child, b).unwrap();
}

/// What a read-through child must show: `changed`'s export, info and the changed files' contents (which differ
/// from the base's).
fn reads_as_changed(child: &str, changed: &Path) {
    let ch = path_str(changed);
    let base = fixture("content.img");
    assert!(
        stdout(&["export", child, "--format", "csv", "--deleted", "--streams"])
            == stdout(&["export", ch, "--format", "csv", "--deleted", "--streams"]),
        "{child}: its export differs from the changed image's"
    );
    assert_eq!(described(child), described(ch));
    let f = facts("content.img");
    for key in [
        "fragmented_inode",
        "sparse_holes_inode",
        "compressed_text_inode",
    ] {
        let want = stdout(&["cat", ch, &f[key]]);
        let got = stdout(&["cat", child, &f[key]]);
        assert!(
            got == want,
            "{child}: cat {key} differs from the changed image's"
        );
        if key != "compressed_text_inode" {
            assert!(
                want != stdout(&["cat", path_str(&base), &f[key]]),
                "{key}: the change changed nothing"
            );
        }
    }
}

#[test]
fn a_differencing_vhdx_reads_through_its_parent() {
    let dir = scratch("vhdx-diff");
    let raw = fixture("content.img");
    let changed = changed_image(&dir);
    std::fs::create_dir_all(dir.join("parents")).unwrap();
    let base = dir.join("parents/base.vhdx");
    convert("vhdx", &raw, &base, Some("block_size=1M"));
    // Found by its relative path (Windows's `.\parents\base.vhdx`), the absolute one pointing nowhere.
    let child = dir.join("child.vhdx");
    differencing_vhdx(
        &changed,
        &raw,
        &child,
        ".\\parents\\base.vhdx",
        "Z:\\nowhere\\base.vhdx",
    );
    let c = path_str(&child);
    let text = String::from_utf8(stdout(&["info", c])).unwrap();
    assert!(
        text.contains(&format!(
            "container     VHDX, differencing: 1 MiB blocks, {} of 24 present, parent {}\n",
            blocks_changed(&raw, &changed, 1 << 20),
            dir.join("parents/base.vhdx").display()
        )),
        "{text}"
    );
    reads_as_changed(c, &changed);
    // The parent may be a raw image.
    let over_raw = dir.join("over-raw.vhdx");
    std::fs::copy(&raw, dir.join("content.img")).unwrap();
    differencing_vhdx(&changed, &raw, &over_raw, "content.img", "C:\\content.img");
    reads_as_changed(path_str(&over_raw), &changed);
    // The relative path wrong: the bare name beside the child is tried last.
    let beside = dir.join("beside.vhdx");
    std::fs::copy(&base, dir.join("base.vhdx")).unwrap();
    differencing_vhdx(
        &changed,
        &raw,
        &beside,
        "..\\elsewhere\\base.vhdx",
        "Q:\\x\\base.vhdx",
    );
    reads_as_changed(path_str(&beside), &changed);
    // Missing: every path tried is named.
    std::fs::remove_file(dir.join("base.vhdx")).unwrap();
    let err = refused(&["info", path_str(&beside)]);
    let beside_base = dir.join("base.vhdx");
    for tried in [
        "elsewhere/base.vhdx",
        "/x/base.vhdx",
        path_str(&beside_base),
    ] {
        assert!(err.contains(tried), "{tried}: {err}");
    }
    assert!(err.contains("parent image is missing"), "{err}");
    // A loop: a child whose parent is itself, and two children each other's parent.
    let selfish = dir.join("self.vhdx");
    differencing_vhdx(&changed, &raw, &selfish, "self.vhdx", "C:\\self.vhdx");
    assert!(refused(&["info", path_str(&selfish)]).contains("loops"));
    let (a, b) = (dir.join("a.vhdx"), dir.join("b.vhdx"));
    differencing_vhdx(&changed, &raw, &a, "b.vhdx", "C:\\b.vhdx");
    differencing_vhdx(&changed, &raw, &b, "a.vhdx", "C:\\a.vhdx");
    assert!(refused(&["export", path_str(&a), "--format", "csv"]).contains("loops"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_vhdx_log_is_replayed_in_memory() {
    let dir = scratch("vhdx-log");
    let raw = fixture("content.img");
    let raw_s = path_str(&raw);
    let good = dir.join("good.vhdx");
    convert("vhdx", &raw, &good, Some("block_size=1M"));
    let mut b = std::fs::read(&good).unwrap();
    let (bat, _, _, _) = regions(&b);
    let heads = [64 * 1024, 128 * 1024];
    let current = *heads.iter().max_by_key(|&&h| le64(&b, h + 8)).unwrap();
    let (log_len, log_at) = (
        le32(&b, current + 68) as usize,
        le64(&b, current + 72) as usize,
    );
    assert!(log_len >= MIB && log_at >= MIB);
    // The BAT's first sector lives only in the log: on disk it says no block is present.
    let sector = b[bat..bat + 4096].to_vec();
    b[bat..bat + 4096].fill(0);
    let log_guid = guid("5C1B3E7A-0D3B-4C6E-9F11-2A7B8C9D0E1F");
    let seq: u64 = 0x1_0000_0007;
    let mut entry = vec![0u8; 8192];
    put(&mut entry, 0, b"loge");
    put(&mut entry, 8, &8192u32.to_le_bytes());
    put(&mut entry, 12, &0u32.to_le_bytes());
    put(&mut entry, 16, &seq.to_le_bytes());
    put(&mut entry, 24, &1u32.to_le_bytes());
    put(&mut entry, 32, &log_guid);
    put(&mut entry, 48, &(b.len() as u64).to_le_bytes());
    put(&mut entry, 56, &(b.len() as u64).to_le_bytes());
    put(&mut entry, 64, b"desc");
    put(&mut entry, 68, &sector[4092..]);
    put(&mut entry, 72, &sector[..8]);
    put(&mut entry, 80, &(bat as u64).to_le_bytes());
    put(&mut entry, 88, &seq.to_le_bytes());
    put(&mut entry, 4096, b"data");
    put(&mut entry, 4100, &((seq >> 32) as u32).to_le_bytes());
    put(&mut entry, 4104, &sector[8..4092]);
    put(&mut entry, 8188, &(seq as u32).to_le_bytes());
    reseal(&mut entry, 0, 8192);
    // An old, stale entry after it (another log GUID) is not part of the sequence.
    let mut stale = entry.clone();
    put(
        &mut stale,
        32,
        &guid("00000000-0000-0000-0000-0000000000AA"),
    );
    reseal(&mut stale, 0, 8192);
    put(&mut b, log_at, &entry);
    put(&mut b, log_at + 8192, &stale);
    for h in heads {
        put(&mut b, h + 48, &log_guid);
        reseal(&mut b, h, 4096);
    }
    let v = dir.join("log.vhdx");
    std::fs::write(&v, &b).unwrap();
    let s = path_str(&v);
    let text = String::from_utf8(stdout(&["info", s])).unwrap();
    assert!(
        text.contains("(its log of 1 entries replayed in memory)"),
        "{text}"
    );
    let want_export = stdout(&["export", raw_s, "--format", "csv", "--deleted", "--streams"]);
    reads_as_the_content_volume(s, &want_export, &described(raw_s));
    // Never written: the file is as it was.
    assert!(std::fs::read(&v).unwrap() == b, "uffs wrote to the image");
    // A log whose entry is damaged has no valid sequence: refused, saying what to do.
    let mut bad = b.clone();
    bad[log_at + 5000] ^= 1;
    std::fs::write(&v, &bad).unwrap();
    let err = refused(&["info", s]);
    assert!(err.contains("uffs never writes to an image; open it once in Windows or run qemu-img check -r all on a copy"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_vhdx_files_are_refused_in_one_line() {
    let dir = scratch("vhdx-bad");
    let raw = fixture("content.img");
    let good_path = dir.join("good.vhdx");
    convert("vhdx", &raw, &good_path, Some("block_size=1M"));
    let good = std::fs::read(&good_path).unwrap();
    let (bat, _, meta, _) = regions(&good);
    let damaged = dir.join("damaged.vhdx");
    let check = |bytes: &[u8], what: &str, says: &str| {
        std::fs::write(&damaged, bytes).unwrap();
        for cmd in [&["info"][..], &["export", "--format", "csv"][..]] {
            let mut args = vec![cmd[0], path_str(&damaged)];
            args.extend(&cmd[1..]);
            let err = refused(&args);
            assert!(err.contains(says), "{what}: {err}");
        }
    };
    // Both headers' checksums wrong.
    let mut b = good.clone();
    b[64 * 1024 + 100] ^= 1;
    b[128 * 1024 + 100] ^= 1;
    check(&b, "both headers", "neither of this VHDX's headers");
    // One header's checksum wrong is fine: the other is read.
    let mut b = good.clone();
    b[64 * 1024 + 4] ^= 1;
    std::fs::write(&damaged, &b).unwrap();
    run_ok(uffs().arg("info").arg(&damaged));
    // Both region tables' checksums wrong.
    let mut b = good.clone();
    b[192 * 1024 + 20] ^= 1;
    b[256 * 1024 + 20] ^= 1;
    check(&b, "both region tables", "region table");
    // The region table (resealed) pointing past the end.
    let mut b = good.clone();
    for t in [192 * 1024, 256 * 1024] {
        put(&mut b, t + 16 + 16, &(1u64 << 40).to_le_bytes());
        reseal(&mut b, t, 64 * 1024);
    }
    check(&b, "region past the end", "outside its");
    // A BAT entry past the end.
    let mut b = good.clone();
    put(&mut b, bat, &((1u64 << 30) << 20 | 6).to_le_bytes());
    check(&b, "BAT entry", "places a block at");
    // An unknown required metadata item.
    let mut b = good.clone();
    put(
        &mut b,
        meta + 32,
        &guid("11111111-2222-3333-4444-555555555555"),
    );
    put(&mut b, meta + 32 + 24, &4u32.to_le_bytes());
    check(&b, "unknown required item", "required metadata item");
    // Cut short.
    check(&good[..300 * 1024], "cut short", "too short");
    check(&good[..good.len() / 2], "cut in half", "past");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- Differencing VHD ----

/// The one's complement checksum VHD footers and dynamic headers carry at `sum` of the `len` bytes at `at`.
fn vhd_reseal(b: &mut [u8], at: usize, len: usize, sum: usize) {
    put(b, at + sum, &[0; 4]);
    let s: u32 = b[at..at + len].iter().map(|&x| u32::from(x)).sum();
    put(b, at + sum, &(!s).to_be_bytes());
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// Makes a differencing VHD child (parent locators `W2ru` = `relative`, `W2ku` = `absolute`, parent name
/// `name`) that reads as `changed` over `base`: like [`differencing_vhdx`], blocks equal to the base's are
/// unallocated (their bytes overwritten) and changed blocks keep only their changed sectors' bits.
fn differencing_vhd(
    changed: &Path,
    base: &Path,
    child: &Path,
    relative: &str,
    absolute: &str,
    name: &str,
) {
    convert("vpc", changed, child, None);
    let mut b = std::fs::read(child).unwrap();
    let want = std::fs::read(changed).unwrap();
    let old = std::fs::read(base).unwrap();
    let footer = b.len() - 512;
    let header = u64::from_be_bytes(b[footer + 16..footer + 24].try_into().unwrap()) as usize;
    let table = u64::from_be_bytes(b[header + 16..header + 24].try_into().unwrap()) as usize;
    let entries = be32(&b, header + 28) as usize;
    let block = be32(&b, header + 32) as usize;
    let skip = (block / 512).div_ceil(8).div_ceil(512) * 512;
    let mut kinds = [0; 2];
    for n in 0..entries {
        let e = be32(&b, table + 4 * n);
        if e == u32::MAX {
            continue;
        }
        let at = e as usize * 512;
        let range = n * block..((n + 1) * block).min(want.len());
        if want[range.clone()] == old[range.clone()] {
            put(&mut b, table + 4 * n, &u32::MAX.to_be_bytes());
            b[at + skip..at + skip + range.len()].fill(0xee);
            kinds[0] += 1;
        } else {
            b[at..at + skip].fill(0);
            for s in 0..range.len() / 512 {
                let d = range.start + s * 512;
                if want[d..d + 512] != old[d..d + 512] {
                    b[at + s / 8] |= 0x80 >> (s % 8);
                } else {
                    b[at + skip + s * 512..at + skip + s * 512 + 512].fill(0xee);
                }
            }
            kinds[1] += 1;
        }
    }
    assert!(kinds.iter().all(|&k| k > 0), "{kinds:?}");
    // The locators' data, in whole sectors before the footer.
    let mut foot = b.split_off(footer);
    let mut locators = Vec::new();
    for (code, path) in [(b"W2ru", relative), (b"W2ku", absolute)] {
        let data = utf16le(path);
        let at = b.len();
        b.extend(&data);
        b.resize(b.len().div_ceil(512) * 512, 0);
        locators.push((code, data.len(), at));
    }
    // The absolute one first: the relative one is still tried first.
    locators.reverse();
    for (i, (code, len, at)) in locators.into_iter().enumerate() {
        let e = header + 576 + 24 * i;
        put(&mut b, e, code);
        put(&mut b, e + 4, &512u32.to_be_bytes());
        put(&mut b, e + 8, &(len as u32).to_be_bytes());
        put(&mut b, e + 16, &(at as u64).to_be_bytes());
    }
    let name: Vec<u8> = name.encode_utf16().flat_map(u16::to_be_bytes).collect();
    put(&mut b, header + 64, &name);
    vhd_reseal(&mut b, header, 1024, 36);
    put(&mut foot, 60, &4u32.to_be_bytes());
    vhd_reseal(&mut foot, 0, 512, 64);
    put(&mut b, 0, &foot);
    b.extend(foot);
    std::fs::write(child, b).unwrap();
}

#[test]
fn a_differencing_vhd_reads_through_its_parent() {
    let dir = scratch("vhd-diff");
    let raw = fixture("content.img");
    let changed = changed_image(&dir);
    std::fs::create_dir_all(dir.join("parents")).unwrap();
    let base = dir.join("parents/base.vhd");
    convert("vpc", &raw, &base, None);
    let child = dir.join("child.vhd");
    differencing_vhd(
        &changed,
        &raw,
        &child,
        ".\\parents\\base.vhd",
        "Z:\\nowhere\\base.vhd",
        "Z:\\nowhere\\base.vhd",
    );
    let c = path_str(&child);
    let text = String::from_utf8(stdout(&["info", c])).unwrap();
    assert!(
        text.contains(&format!(
            "container     VHD, differencing: {} of 13 blocks of 2048 KiB written, parent {}\n",
            blocks_changed(&raw, &changed, 2 << 20),
            base.display()
        )),
        "{text}"
    );
    reads_as_changed(c, &changed);
    // Over a fixed VHD, found by its name beside the child (both locators wrong).
    let fixed = dir.join("fixed.vhd");
    convert("vpc", &raw, &fixed, Some("subformat=fixed"));
    let by_name = dir.join("by-name.vhd");
    differencing_vhd(
        &changed,
        &raw,
        &by_name,
        "..\\x\\y.vhd",
        "Q:\\y.vhd",
        "D:\\vms\\fixed.vhd",
    );
    reads_as_changed(path_str(&by_name), &changed);
    // A missing parent is named (each path tried), a loop refused.
    let gone = dir.join("gone.vhd");
    differencing_vhd(
        &changed,
        &raw,
        &gone,
        ".\\gone-parent.vhd",
        "Q:\\gone-parent.vhd",
        "gone-parent.vhd",
    );
    let err = refused(&["info", path_str(&gone)]);
    assert!(
        err.contains(path_str(&dir.join("gone-parent.vhd"))) && err.contains("/gone-parent.vhd"),
        "{err}"
    );
    let selfish = dir.join("self.vhd");
    differencing_vhd(
        &changed,
        &raw,
        &selfish,
        ".\\self.vhd",
        "Q:\\self.vhd",
        "self.vhd",
    );
    assert!(refused(&["info", path_str(&selfish)]).contains("loops"));
    // A block table entry past the end.
    let mut b = std::fs::read(&child).unwrap();
    let footer = b.len() - 512;
    let header = u64::from_be_bytes(b[footer + 16..footer + 24].try_into().unwrap()) as usize;
    let table = u64::from_be_bytes(b[header + 16..header + 24].try_into().unwrap()) as usize;
    put(&mut b, table, &0x7fff_fff0u32.to_be_bytes());
    std::fs::write(&child, &b).unwrap();
    assert!(refused(&["info", c]).contains("past the file's end"));
    let _ = std::fs::remove_dir_all(&dir);
}
