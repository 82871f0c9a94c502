//! Expert Witness Format (E01) images, made by `ewfacquire` in sets of several segments, read as the raw image
//! they hold: the content volume compressed fast, best and not at all, a whole GPT disk by partition; the stored
//! MD5 and SHA1 in `uffs info` equal to the raw image's `md5sum` and to `ewfinfo`'s; the paths TSK's `fls -i ewf`
//! lists on the E01 itself; damaged sets (a missing segment, a truncated one, a corrupt chunk, a table pointing
//! past its file) said in one line, never a crash.
//!
//! EWF2 (Ex01) images: Debian's `ewfacquire` (20140813) writes none (asked for `-f encase7-v2` it writes EnCase 6
//! E01), so the Ex01 sets tested are committed in tests/data/containers, made by libewf 20260924's `ewfacquire -f
//! encase7-v2` from tests/data/linux-made/testfs1 (see tests/data/README.md): stored chunks with pattern-filled
//! ones in two segments, and zlib-compressed ones. Each against the raw volume: its export byte for byte, its
//! bytes read at odd places, `info`'s stored MD5 and SHA1 against `md5sum`/`sha1sum`, TSK's paths (`fls` on the
//! raw volume: TSK reads no Ex01), `cat` against `icat`; damaged copies said in one line or read as unreadable
//! records.

#![cfg(unix)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::containers::{acquire, described, stdout};
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

fn md5sum(file: &Path) -> String {
    let out = run_ok(Command::new("md5sum").arg(file));
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// `ewfinfo`'s value of `key` (`MD5`, `SHA1`).
fn ewfinfo(first: &Path, key: &str) -> String {
    let out = run_ok(tool("ewfinfo").arg(first));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix(&format!("{key}:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("ewfinfo says no {key}"))
}

#[test]
fn an_e01_set_reads_as_the_volume_it_holds() {
    let raw = fixture("content.img");
    let dir = scratch("ewf-volume");
    let raw_s = path_str(&raw);
    let want_export = stdout(&["export", raw_s, "--format", "csv", "--deleted", "--streams"]);
    let want_info = described(raw_s);
    let md5 = md5sum(&raw);
    for (name, compression, says) in [
        ("fast", "deflate:fast", "compressed"),
        ("best", "deflate:best", "compressed"),
        ("none", "none", "uncompressed"),
    ] {
        // 1 MiB segments (ewfacquire's least): the 24 MiB volume is in 7 or more files.
        let (first, count) = acquire(&raw, &dir.join(name), name, "1MiB", compression);
        assert!(count >= 5, "{name}: only {count} segments");
        let s = path_str(&first);
        let text = String::from_utf8(stdout(&["info", s])).unwrap();
        let head =
            format!("container     EWF (E01, EnCase 6 format): {count} segments, 32 KiB chunks, ");
        assert!(text.contains(&head), "{text}");
        let line = text.lines().find(|l| l.contains("EWF (E01")).unwrap();
        // Fast and best compression store a chunk uncompressed when compressing does not pay.
        assert!(line.contains(says) || compression != "none", "{line}");
        assert!(
            text.contains(&format!("  files       {count}: {s} to ")),
            "{text}"
        );
        // The stored hashes: the raw image's md5sum, and what ewfinfo reads.
        assert!(text.contains(&format!("  md5         {md5}\n")), "{text}");
        assert_eq!(ewfinfo(&first, "MD5"), md5);
        let sha1 = ewfinfo(&first, "SHA1");
        assert!(text.contains(&format!("  sha1        {sha1}\n")), "{text}");
        for fact in [
            "  case        CASE-42\n",
            "  evidence    EV-7\n",
            "  examiner    Alice Examiner\n",
            "  notes       test notes\n",
            &format!("  segments    {count}\n"),
        ] {
            assert!(text.contains(fact), "{fact:?} not in {text}");
        }
        assert!(text.contains("  acquired    20"), "{text}");
        assert!(text.contains(" UTC\n"), "{text}");
        let info: serde_json::Value =
            serde_json::from_slice(&stdout(&["info", s, "--json"])).unwrap();
        assert_eq!(info["container"]["facts"]["md5"], md5.as_str(), "{info}");
        assert_eq!(
            info["container"]["files"].as_array().unwrap().len(),
            count,
            "{info}"
        );
        reads_as_the_content_volume(s, &want_export, &want_info);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `first`'s image read through `container::open` against `raw`'s bytes: whole, in reads of odd sizes at odd
/// offsets (within a chunk, across chunks and segments, the media's end), from four threads at once.
fn reads_byte_for_byte(first: &Path, raw: &[u8]) {
    let image = uffs_mft::container::open(first)
        .unwrap()
        .expect("an EWF image");
    assert_eq!(image.len(), raw.len() as u64);
    let mut all = vec![0u8; raw.len()];
    image.read_at(&mut all, 0).unwrap();
    assert!(all == raw, "{}: the whole image differs", first.display());
    let len = raw.len();
    std::thread::scope(|s| {
        for t in 0..4usize {
            let image = &image;
            s.spawn(move || {
                let mut at = t * 777;
                let mut n = 1 + t * 5000;
                while at < len {
                    let k = n.min(len - at);
                    let mut buf = vec![0u8; k];
                    image.read_at(&mut buf, at as u64).unwrap();
                    assert!(buf == raw[at..at + k], "{k} bytes at {at}");
                    at += k + 40_961 * (t + 1);
                    n = n * 7 % 100_003 + 1;
                }
            });
        }
    });
    let mut tail = [0u8; 3];
    image.read_at(&mut tail, len as u64 - 3).unwrap();
    assert_eq!(tail, raw[len - 3..]);
    assert!(image.read_at(&mut tail, len as u64 - 2).is_err());
}

#[test]
fn reads_are_the_raw_bytes_whatever_their_place() {
    let raw = std::fs::read(fixture("content.img")).unwrap();
    let dir = scratch("ewf-bytes");
    // A media whose last chunk is short: 1.5 MiB and 3 sectors.
    let short = dir.join("short.raw");
    let n = (3 << 19) + 3 * 512;
    std::fs::write(&short, &raw[..n]).unwrap();
    for (name, compression) in [("fast", "deflate:fast"), ("none", "none")] {
        let (first, count) = acquire(
            &fixture("content.img"),
            &dir.join(name),
            name,
            "1MiB",
            compression,
        );
        assert!(count >= 5);
        reads_byte_for_byte(&first, &raw);
        let (first, _) = acquire(
            &short,
            &dir.join(format!("short-{name}")),
            name,
            "1MiB",
            compression,
        );
        reads_byte_for_byte(&first, &raw[..n]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_partition_of_an_e01_disk_reads_as_the_disks() {
    let raw = fixture("disk-gpt.img");
    let dir = scratch("ewf-disk");
    // Default compression: the disk's empty space compresses to little, so segments of 1 MiB still make several.
    let (first, count) = acquire(&raw, &dir, "disk", "1MiB", "deflate:fast");
    assert!(count >= 2, "only {count} segments");
    let raw_s = path_str(&raw);
    let s = path_str(&first);
    assert_eq!(described(s), described(raw_s));
    let text = String::from_utf8(stdout(&["info", s])).unwrap();
    assert!(
        text.contains(&format!("  md5         {}\n", md5sum(&raw))),
        "{text}"
    );
    for part in ["2", "3"] {
        let want = stdout(&["export", &format!("{raw_s}@{part}"), "--format", "csv"]);
        assert!(want.len() > 1000, "@{part}: a small export");
        assert!(
            stdout(&["export", &format!("{s}@{part}"), "--format", "csv"]) == want,
            "{s}@{part}: its export differs from the raw disk's"
        );
    }
    // TSK on the E01 itself, by partition: the same live paths as uffs.
    let f = facts("disk-gpt.img");
    for (n, start) in [(2, "p2_start"), (3, "p3_start")] {
        let offset = &f[start];
        let tsk = fls_paths(&first, Some(offset));
        let ours = uffs_paths(&format!("{s}@{n}"));
        assert!(tsk.len() > 10, "@{n}: fls lists {}", tsk.len());
        assert_eq!(tsk, ours, "@{n}: fls -i ewf and uffs differ");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tsk_on_the_e01_lists_the_paths_uffs_does() {
    let raw = fixture("content.img");
    let dir = scratch("ewf-tsk");
    let (first, _) = acquire(&raw, &dir, "tsk", "1MiB", "deflate:fast");
    let tsk = fls_paths(&first, None);
    assert!(tsk.len() > 10, "fls lists {}", tsk.len());
    assert_eq!(tsk, uffs_paths(path_str(&first)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The live paths `fls -r -p -i ewf` lists on an E01 (at `offset` sectors for a partition), as uffs writes them:
/// a leading `/`, without TSK's `$OrphanFiles`, a named stream as `file:stream`, an index attribute's name
/// dropped.
fn fls_paths(first: &Path, offset: Option<&str>) -> BTreeSet<String> {
    fls_paths_as(first, offset, "ewf")
}

/// The live paths `fls -r -p -i IMGTYPE` lists (as [`fls_paths`]).
fn fls_paths_as(first: &Path, offset: Option<&str>, imgtype: &str) -> BTreeSet<String> {
    let mut cmd = tool("fls");
    cmd.args(["-r", "-p", "-i", imgtype]);
    if let Some(o) = offset {
        cmd.args(["-o", o]);
    }
    let out = run_ok(cmd.arg(first));
    let mut paths = BTreeSet::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((head, path)) = line.split_once('\t') else {
            continue;
        };
        if head.contains(" * ") || head.contains("(realloc)") || path.starts_with("$OrphanFiles") {
            continue;
        }
        let inode = head.trim_end_matches(':').rsplit(' ').next().unwrap_or("");
        let path = path.replace("/.:", ":");
        let mut path = format!("/{path}");
        if inode.split('-').nth(1).is_some_and(|t| t != "128") {
            if let Some(i) = path
                .rfind(':')
                .filter(|&i| i > path.rfind('/').unwrap_or(0))
            {
                path.truncate(i);
            }
        }
        paths.insert(path);
    }
    paths
}

/// The live paths of `uffs export` on `source`, streams included.
fn uffs_paths(source: &str) -> BTreeSet<String> {
    csv_rows(&stdout(&["export", source, "--streams"]))
        .into_iter()
        .filter(|r| r["path"] != "/" && r["deleted"] != "true")
        .map(|r| r["path"].clone())
        .collect()
}

/// `uffs CMD` on `source`: its exit code and stderr.
fn fails(cmd: &[&str], source: &Path) -> (Option<i32>, String) {
    let out = uffs()
        .args(&cmd[..1])
        .arg(source)
        .args(&cmd[1..])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One line on stderr, exit 2, naming `what`.
fn one_line_error(source: &Path, what: &str) {
    for cmd in [&["info"][..], &["export", "--format", "csv"][..]] {
        let (code, err) = fails(cmd, source);
        assert_eq!(code, Some(2), "{cmd:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{cmd:?}: {err}");
        assert!(err.contains(what), "{cmd:?}: {what:?} not in {err}");
    }
}

#[test]
fn damaged_e01_sets_are_said_in_one_line() {
    let raw = fixture("content.img");
    let dir = scratch("ewf-damaged");
    let (good, count) = acquire(&raw, &dir.join("good"), "img", "1MiB", "deflate:fast");
    assert!(count >= 4);
    let copy = |name: &str| -> PathBuf {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        for e in std::fs::read_dir(good.parent().unwrap()).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
        }
        d.join("img.E01")
    };
    // A segment missing in the middle: named.
    let first = copy("missing");
    let third = first.with_file_name("img.E03");
    std::fs::remove_file(&third).unwrap();
    one_line_error(
        &first,
        &format!("missing its segment 3, {}", third.display()),
    );
    // The last segment truncated: named.
    let first = copy("truncated");
    let last = first.with_file_name(format!("img.E{count:02}"));
    let bytes = std::fs::read(&last).unwrap();
    std::fs::write(&last, &bytes[..bytes.len() / 2]).unwrap();
    one_line_error(&first, &format!("{} is truncated", last.display()));
    // A segment that is another set's, or in the wrong place: its number is checked.
    let first = copy("swapped");
    std::fs::copy(
        first.with_file_name("img.E02"),
        first.with_file_name("img.E03"),
    )
    .unwrap();
    one_line_error(&first, "says it is segment 2");
    // A table entry pointing past its file: the first segment's table, its first entry made 0x7fff0000.
    let first = copy("table");
    let mut bytes = std::fs::read(&first).unwrap();
    let table = section(&bytes, "table");
    let entries = table + 76 + 24;
    bytes[entries..entries + 4].copy_from_slice(&0xffff_0000u32.to_le_bytes());
    // The table's checksums made right again, so that the offset itself is what is wrong (its copy in table2
    // too: either would be read).
    let n = u32::from_le_bytes(bytes[table + 76..table + 80].try_into().unwrap()) as usize;
    let sum = adler32(&bytes[entries..entries + 4 * n]);
    bytes[entries + 4 * n..entries + 4 * n + 4].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(&first, &bytes).unwrap();
    one_line_error(&first, "is not within the file");
    // A section descriptor damaged: its checksum says so.
    let first = copy("descriptor");
    let mut bytes = std::fs::read(&first).unwrap();
    let volume = section(&bytes, "volume");
    bytes[volume + 30] ^= 0xff;
    std::fs::write(&first, &bytes).unwrap();
    one_line_error(&first, "damaged");
    // The second segment named on its own: not the image's start.
    let (code, err) = fails(&["info"], &good.with_file_name("img.E02"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("segment 2 of an EWF image"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupt_chunk_is_unreadable_not_a_crash() {
    let raw = fixture("content.img");
    let dir = scratch("ewf-chunk");
    for (name, compression) in [("z", "deflate:best"), ("plain", "none")] {
        let (first, _) = acquire(&raw, &dir.join(name), name, "1MiB", compression);
        // Bytes flipped inside chunk 1 (the volume's bytes 32 KiB to 64 KiB, MFT records 16 to 47): bad zlib data
        // for a compressed chunk, an Adler-32 that differs for a stored one.
        let mut bytes = std::fs::read(&first).unwrap();
        let table = section(&bytes, "table");
        let base = u64::from_le_bytes(bytes[table + 84..table + 92].try_into().unwrap()) as usize;
        let entry = u32::from_le_bytes(bytes[table + 104..table + 108].try_into().unwrap());
        assert_eq!(
            entry >> 31,
            u32::from(name == "z"),
            "{name}: chunk 1's compressed bit"
        );
        let at = base + (entry & 0x7fff_ffff) as usize;
        for b in &mut bytes[at + 10..at + 50] {
            *b ^= 0x5a;
        }
        std::fs::write(&first, &bytes).unwrap();
        let s = path_str(&first);
        // The volume still opens; the index is built without the chunk's 32 records, counted unreadable, and
        // says it is partial (exit 3), as for a truncated raw image.
        let out = uffs().args(["info", s]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let idx = format!("{s}.uffs");
        let out = uffs().args(["index", s, "-o", &idx]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains("32 unreadable records"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        let out = uffs()
            .args(["export", s, "--format", "csv", "--deleted"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.len() > 1000, "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where the first EWF section of type `kind` starts in a segment's bytes (walking the descriptors).
fn section(bytes: &[u8], kind: &str) -> usize {
    let mut off = 13;
    loop {
        let d = &bytes[off..off + 76];
        let name: Vec<u8> = d[..16].iter().copied().take_while(|&b| b != 0).collect();
        if name == kind.as_bytes() {
            return off;
        }
        let next = u64::from_le_bytes(d[16..24].try_into().unwrap()) as usize;
        assert!(next > off, "no {kind} section");
        off = next;
    }
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

/// The committed Ex01 sets (made from tests/data/linux-made/testfs1 by libewf's `ewfacquire -f encase7-v2`, and
/// the bzip2 one by scripts/make-ex01-bzip2.py, which libewf reads back): name, segments, chunk size, how `info`
/// says they are stored.
const EX01: [(&str, usize, &str, &str); 3] = [
    (
        "testfs1-plain",
        2,
        "64 KiB",
        "uncompressed, 14 of 32 chunks pattern-filled",
    ),
    (
        "testfs1-deflate",
        1,
        "32 KiB",
        "compressed, 33 of 64 chunks pattern-filled",
    ),
    (
        "testfs1-bzip2",
        1,
        "32 KiB",
        "compressed, 33 of 64 chunks pattern-filled",
    ),
];

fn ex01(name: &str) -> PathBuf {
    data(&format!("containers/{name}.Ex01"))
}

fn sha1sum(file: &Path) -> String {
    let out = run_ok(Command::new("sha1sum").arg(file));
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn ex01_sets_read_as_the_volume_they_hold() {
    let raw = data("linux-made/testfs1");
    let raw_s = path_str(&raw);
    let raw_bytes = std::fs::read(&raw).unwrap();
    let want_export = stdout(&["export", raw_s, "--format", "csv", "--deleted", "--streams"]);
    let want_info = described(raw_s);
    let (md5, sha1) = (md5sum(&raw), sha1sum(&raw));
    for (name, count, chunks, how) in EX01 {
        let first = ex01(name);
        let s = path_str(&first);
        let mut head = [0u8; 8];
        std::io::Read::read_exact(&mut std::fs::File::open(&first).unwrap(), &mut head).unwrap();
        assert_eq!(&head, b"EVF2\r\n\x81\x00", "{name}: not an EWF2 segment");
        // The export byte for byte, and `info` but for the container.
        assert!(
            stdout(&["export", s, "--format", "csv", "--deleted", "--streams"]) == want_export,
            "{s}: its export differs from the raw volume's"
        );
        assert_eq!(described(s), want_info, "{s}");
        let text = String::from_utf8(stdout(&["info", s])).unwrap();
        let line = format!(
            "container     EWF (Ex01, EnCase 7 format): {count} segment{}, {chunks} chunks, {how}\n",
            if count == 1 { "" } else { "s" }
        );
        assert!(text.contains(&line), "{line:?} not in {text}");
        if count > 1 {
            assert!(
                text.contains(&format!("  files       {count}: {s} to ")),
                "{text}"
            );
        }
        // The stored hashes are the raw volume's; the case metadata as given to ewfacquire.
        for fact in [
            format!("  md5         {md5}\n"),
            format!("  sha1        {sha1}\n"),
            "  case        CASE-42\n".into(),
            "  evidence    EV-7\n".into(),
            "  examiner    Alice Examiner\n".into(),
            "  description testfs1\n".into(),
            "  notes       test notes\n".into(),
            "  acquired    2026-11-26 ".into(),
            "  software    20260924 on Linux\n".into(),
            format!("  segments    {count}\n"),
        ] {
            assert!(text.contains(&fact), "{fact:?} not in {text}");
        }
        let info: serde_json::Value =
            serde_json::from_slice(&stdout(&["info", s, "--json"])).unwrap();
        assert_eq!(info["container"]["facts"]["md5"], md5.as_str(), "{info}");
        assert_eq!(info["container"]["facts"]["sha1"], sha1.as_str(), "{info}");
        assert_eq!(
            info["container"]["files"].as_array().unwrap().len(),
            count,
            "{info}"
        );
        // Its bytes wherever read: within a chunk, across chunks, pattern-filled ones and the segments.
        reads_byte_for_byte(&first, &raw_bytes);
    }
}

#[test]
fn tsk_on_the_raw_volume_lists_the_paths_uffs_reads_from_the_ex01() {
    let raw = data("linux-made/testfs1");
    let tsk = fls_paths_as(&raw, None, "raw");
    assert!(tsk.len() > 100, "fls lists {}", tsk.len());
    for (name, ..) in EX01 {
        assert_eq!(tsk, uffs_paths(path_str(&ex01(name))), "{name}");
    }
}

#[test]
fn cat_of_an_ex01_file_is_icat_of_the_raw_volumes() {
    let raw = data("linux-made/testfs1");
    // Every regular file's unnamed stream `fls` lists (not the metadata files): TSK's attribute id with it.
    let out = run_ok(tool("fls").args(["-r", "-p"]).arg(&raw));
    let files: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("r/r "))
        .filter_map(|l| {
            let (head, path) = l.split_once('\t')?;
            let addr = head.trim_start_matches("r/r ").trim_end_matches(':');
            (!path.starts_with('$') && !path.contains(':'))
                .then(|| (addr.to_string(), path.to_string()))
        })
        .collect();
    assert!(files.len() >= 4, "{files:?}");
    let mut nonempty = 0;
    for (addr, path) in &files {
        let want = run_ok(tool("icat").arg(&raw).arg(addr)).stdout;
        nonempty += usize::from(!want.is_empty());
        for (name, ..) in EX01 {
            assert!(
                stdout(&["cat", path_str(&ex01(name)), path]) == want,
                "{name}: cat {path} differs from icat {addr}"
            );
        }
    }
    assert!(nonempty >= 2, "{files:?}");
}

/// Copies of the committed Ex01 sets in `dir/NAME/`; returns the first segment of the `name` set.
fn ex01_copy(dir: &Path, case: &str, name: &str) -> PathBuf {
    let d = dir.join(case);
    std::fs::create_dir_all(&d).unwrap();
    for e in std::fs::read_dir(data("containers")).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap().to_str().unwrap().starts_with(name) {
            std::fs::copy(&p, d.join(p.file_name().unwrap())).unwrap();
        }
    }
    d.join(format!("{name}.Ex01"))
}

/// The EWF2 sections of a segment's bytes, back to front from the last: (type, data offset, data size,
/// descriptor offset).
fn ex01_sections(bytes: &[u8]) -> Vec<(u32, usize, usize, usize)> {
    let mut all = Vec::new();
    let mut at = bytes.len() - 64;
    loop {
        let d = &bytes[at..at + 64];
        let kind = u32::from_le_bytes(d[..4].try_into().unwrap());
        let prev = u64::from_le_bytes(d[8..16].try_into().unwrap()) as usize;
        let size = u64::from_le_bytes(d[16..24].try_into().unwrap()) as usize;
        all.push((kind, at - size, size, at));
        if prev == 0 {
            return all;
        }
        at = prev;
    }
}

/// The first sector table's data offset in a segment's bytes.
fn ex01_table(bytes: &[u8]) -> usize {
    ex01_sections(bytes)
        .into_iter()
        .find(|s| s.0 == 4)
        .expect("a sector table")
        .1
}

/// Makes the Adler-32 at `at + n` that of the `n` bytes at `at` again.
fn reseal(bytes: &mut [u8], at: usize, n: usize) {
    let sum = adler32(&bytes[at..at + n]);
    bytes[at + n..at + n + 4].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn damaged_ex01_sets_are_said_in_one_line() {
    let dir = scratch("ex01-damaged");
    let edit = |case: &str, name: &str, file: &str, f: &dyn Fn(&mut Vec<u8>)| -> PathBuf {
        let first = ex01_copy(&dir, case, name);
        let p = first.with_file_name(file);
        let mut bytes = std::fs::read(&p).unwrap();
        f(&mut bytes);
        std::fs::write(&p, bytes).unwrap();
        first
    };
    // The second segment missing: named.
    let first = ex01_copy(&dir, "missing", "testfs1-plain");
    let second = first.with_file_name("testfs1-plain.Ex02");
    std::fs::remove_file(&second).unwrap();
    one_line_error(
        &first,
        &format!("missing its segment 2, {}", second.display()),
    );
    // The last segment truncated (its sections end mid-way): named.
    let first = edit("truncated", "testfs1-plain", "testfs1-plain.Ex02", &|b| {
        b.truncate(b.len() / 2)
    });
    one_line_error(
        &first,
        &format!(
            "{} is truncated",
            first.with_file_name("testfs1-plain.Ex02").display()
        ),
    );
    // The only segment cut just before its `done` section: its last section is no end.
    let first = edit("cut", "testfs1-deflate", "testfs1-deflate.Ex01", &|b| {
        b.truncate(b.len() - 64)
    });
    one_line_error(&first, "not done or next");
    // A second segment that is another set's (its set identifier differs) or in the wrong place (its number).
    let first = edit("other-set", "testfs1-plain", "testfs1-plain.Ex02", &|b| {
        b[20] ^= 0xff
    });
    one_line_error(&first, "belongs to another image");
    let first = ex01_copy(&dir, "swapped", "testfs1-plain");
    std::fs::copy(&first, first.with_file_name("testfs1-plain.Ex02")).unwrap();
    one_line_error(&first, "says it is segment 1");
    // A table entry pointing past its file, its checksum made right again: the offset itself is what is wrong.
    let first = edit("table", "testfs1-plain", "testfs1-plain.Ex01", &|b| {
        let t = ex01_table(b);
        let n = u32::from_le_bytes(b[t + 8..t + 12].try_into().unwrap()) as usize;
        b[t + 32..t + 40].copy_from_slice(&(1u64 << 40).to_le_bytes());
        reseal(b, t + 32, 16 * n);
    });
    one_line_error(&first, "is not within the file");
    // A table whose entries' checksum differs; one that says it holds more entries than its section can.
    let first = edit(
        "table-sum",
        "testfs1-deflate",
        "testfs1-deflate.Ex01",
        &|b| {
            let t = ex01_table(b);
            b[t + 40] ^= 1;
        },
    );
    one_line_error(&first, "its entries' checksum differs");
    let first = edit(
        "table-count",
        "testfs1-deflate",
        "testfs1-deflate.Ex01",
        &|b| {
            let t = ex01_table(b);
            b[t + 8..t + 12].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
            reseal(b, t, 16);
        },
    );
    one_line_error(&first, "says it holds 4294967280 entries");
    // A section descriptor damaged: its checksum says so.
    let first = edit(
        "descriptor",
        "testfs1-deflate",
        "testfs1-deflate.Ex01",
        &|b| {
            let case = ex01_sections(b).into_iter().find(|s| s.0 == 2).unwrap();
            b[case.3 + 20] ^= 0xff;
        },
    );
    one_line_error(&first, "damaged (its checksum differs)");
    // A descriptor pointing back to itself (resealed): the walk back ends.
    let first = edit("loop", "testfs1-deflate", "testfs1-deflate.Ex01", &|b| {
        let case = ex01_sections(b).into_iter().find(|s| s.0 == 2).unwrap();
        b[case.3 + 8..case.3 + 16].copy_from_slice(&(case.3 as u64).to_le_bytes());
        reseal(b, case.3, 60);
    });
    one_line_error(&first, "says the one before it is at");
    // An encrypted section (its flag set, resealed), and a compression method neither zlib nor bzip2: refused by
    // name.
    let first = edit(
        "encrypted",
        "testfs1-deflate",
        "testfs1-deflate.Ex01",
        &|b| {
            let case = ex01_sections(b).into_iter().find(|s| s.0 == 2).unwrap();
            b[case.3 + 4] |= 2;
            reseal(b, case.3, 60);
        },
    );
    one_line_error(&first, "is encrypted");
    let first = edit("method", "testfs1-bzip2", "testfs1-bzip2.Ex01", &|b| {
        b[10] = 3
    });
    one_line_error(
        &first,
        "names compression method 3, which is neither zlib (1) nor bzip2 (2)",
    );
    // Signature alone, nothing after: truncated.
    let ex01 = dir.join("image.Ex01");
    let mut bytes = b"EVF2\r\n\x81\x00\x02\x01\x01\x00\x01\x00\x00\x00".to_vec();
    bytes.resize(4096, 0);
    std::fs::write(&ex01, bytes).unwrap();
    one_line_error(
        &ex01,
        "is truncated or damaged: it does not end with an EWF2 section descriptor",
    );
    // The second segment named on its own: not the image's start.
    let (code, err) = fails(&["info"], &data("containers/testfs1-plain.Ex02"));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is segment 2 of an EWF image, not its first: open the first segment (.Ex01)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupt_ex01_chunk_is_unreadable_not_a_crash() {
    let dir = scratch("ex01-chunk");
    // Chunk 1 of each: MFT records 48 to 111 of the 64 KiB stored chunks (an Adler-32 that differs), 16 to 47 of
    // the 32 KiB compressed ones (bad zlib or bzip2 data).
    for (name, flags, records) in [
        ("testfs1-plain", 2, 64),
        ("testfs1-deflate", 1, 32),
        ("testfs1-bzip2", 1, 32),
    ] {
        let first = ex01_copy(&dir, name, name);
        let mut bytes = std::fs::read(&first).unwrap();
        let t = ex01_table(&bytes);
        let e = t + 32 + 16;
        let at = u64::from_le_bytes(bytes[e..e + 8].try_into().unwrap()) as usize;
        assert_eq!(
            u32::from_le_bytes(bytes[e + 12..e + 16].try_into().unwrap()),
            flags,
            "{name}: chunk 1's flags"
        );
        for b in &mut bytes[at + 10..at + 50] {
            *b ^= 0x5a;
        }
        std::fs::write(&first, &bytes).unwrap();
        let s = path_str(&first);
        let out = uffs().args(["info", s]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let idx = format!("{s}.uffs");
        let out = uffs().args(["index", s, "-o", &idx]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(
            err.contains(&format!("{records} unreadable records")),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        let out = uffs()
            .args(["export", s, "--format", "csv", "--deleted"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.len() > 1000, "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bytes `pattern.Ex01` holds: 32 KiB of `ABCDEFGH` repeated, 32 KiB of bytes 1 to 8 repeated, then 1 KiB
/// counting 0 to 255 (a last chunk of 2 sectors).
fn pattern_raw() -> Vec<u8> {
    let mut raw = b"ABCDEFGH".repeat(4096);
    raw.extend((1u8..=8).collect::<Vec<_>>().repeat(4096));
    raw.extend((0..=255u8).collect::<Vec<_>>().repeat(4));
    raw
}

#[test]
fn pattern_filled_ex01_chunks_repeat_their_8_bytes_in_order() {
    // Not a volume: read through `container::open` (as `uffs info` would describe it).
    let first = data("containers/pattern.Ex01");
    let raw = pattern_raw();
    let image = uffs_mft::container::open(&first).unwrap().unwrap();
    assert_eq!(
        image.describe(),
        "EWF (Ex01, EnCase 7 format): 1 segment, 32 KiB chunks, compressed, 2 of 3 chunks pattern-filled"
    );
    // The stored MD5 is md5sum's of the raw bytes, as ewfacquire read them.
    let dir = scratch("ex01-pattern");
    let raw_file = dir.join("pattern.raw");
    std::fs::write(&raw_file, &raw).unwrap();
    let md5 = md5sum(&raw_file);
    assert!(
        image.facts().contains(&("md5".to_string(), md5.clone())),
        "{md5}: {:?}",
        image.facts()
    );
    reads_byte_for_byte(&first, &raw);
    let _ = std::fs::remove_dir_all(&dir);
}
