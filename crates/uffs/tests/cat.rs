//! `uffs cat` against The Sleuth Kit's `icat`, byte for byte, on every data stream `fls` lists (every file, every
//! named stream, deleted files, system files) of the fixture volumes TSK reads and of the real images in
//! `tests/data`; against `mft_dump`'s resident data on the Windows `$MFT` captures; and its errors (encrypted,
//! folder, not found), paths and `-o`.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use common::*;

fn fact(f: &HashMap<String, String>, key: &str) -> u64 {
    f[key].parse().expect("a number")
}

/// One data stream as `fls` lists it.
#[derive(Debug, Clone)]
struct Item {
    record: u64,
    /// TSK's attribute id (`icat IMAGE RECORD-128-ID`).
    id: u32,
    stream: String,
    path: String,
    deleted: bool,
}

/// Every `$DATA` stream `fls -r -p` lists, once per (record, attribute). Lines without an attribute (TSK could
/// not load the file's attributes) are returned apart, by record.
fn fls_items(image: &Path, sector_offset: Option<u64>) -> (Vec<Item>, Vec<(u64, String)>) {
    let mut cmd = tool("fls");
    cmd.args(["-r", "-p"]);
    if let Some(o) = sector_offset {
        cmd.args(["-o", &o.to_string()]);
    }
    let out = run_ok(cmd.arg(image));
    let mut seen = BTreeSet::new();
    let (mut items, mut unloaded) = (Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((head, path)) = line.split_once('\t') else {
            continue;
        };
        // A reallocated name's record holds another file now (listed under its own name). `$OrphanFiles` entries
        // stay: a deleted file whose name was in a freed extension record is listed there.
        if head.contains("(realloc)") {
            continue;
        }
        let inode = head.trim_end_matches(':').rsplit(' ').next().unwrap_or("");
        let mut f = inode.split('-');
        let record: u64 = f.next().unwrap_or("").parse().expect("record number");
        match (f.next(), f.next()) {
            (Some("128"), Some(id)) => {
                let id: u32 = id.parse().expect("attribute id");
                if !seen.insert((record, id)) {
                    continue;
                }
                let last = path.rsplit('/').next().unwrap_or(path);
                let stream = last.split_once(':').map_or("", |s| s.1).to_string();
                items.push(Item {
                    record,
                    id,
                    stream,
                    path: path.to_string(),
                    deleted: head.contains(" * "),
                });
            }
            (None, _) if head.starts_with("r/r") => unloaded.push((record, path.to_string())),
            _ => {}
        }
    }
    (items, unloaded)
}

/// Two outputs compared as they stream (never held whole: some streams are the size of the volume).
#[derive(Debug, Default)]
struct Compared {
    /// The common length is byte-identical.
    prefix_equal: bool,
    first_diff: Option<u64>,
    peer_len: u64,
    uffs_len: u64,
    /// What uffs wrote past the peer's end is all zeros.
    extra_zero: bool,
    peer_ok: bool,
    uffs_ok: bool,
    peer_err: String,
    uffs_err: String,
}

impl Compared {
    fn identical(&self) -> bool {
        self.peer_ok && self.uffs_ok && self.prefix_equal && self.peer_len == self.uffs_len
    }
}

/// Reads up to `buf.len()` bytes (fewer only at the end).
fn fill(r: &mut impl Read, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("reading a child's output: {e}"),
        }
    }
    n
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn finish(mut c: Child) -> (bool, String) {
    let mut err = String::new();
    if let Some(mut e) = c.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (c.wait().expect("wait").success(), err)
}

fn compare(peer: &mut Command, uffs_cmd: &mut Command) -> Compared {
    let (mut p, mut u) = (spawn(peer), spawn(uffs_cmd));
    let (mut po, mut uo) = (p.stdout.take().unwrap(), u.stdout.take().unwrap());
    let mut c = Compared {
        prefix_equal: true,
        extra_zero: true,
        ..Compared::default()
    };
    let (mut a, mut b) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let (mut p_done, mut u_done) = (false, false);
    while !(p_done && u_done) {
        let na = if p_done { 0 } else { fill(&mut po, &mut a) };
        let nb = if u_done { 0 } else { fill(&mut uo, &mut b) };
        let common = na.min(nb);
        if c.prefix_equal && a[..common] != b[..common] {
            c.prefix_equal = false;
            let i = a[..common]
                .iter()
                .zip(&b[..common])
                .position(|(x, y)| x != y);
            c.first_diff = i.map(|i| c.peer_len + i as u64);
        }
        if nb > na && b[na..nb].iter().any(|&x| x != 0) {
            c.extra_zero = false;
        }
        c.peer_len += na as u64;
        c.uffs_len += nb as u64;
        // Both read whole buffers until one ends, so they stay aligned; then only the other is read on.
        p_done |= na < a.len();
        u_done |= nb < b.len();
    }
    drop((po, uo));
    (c.peer_ok, c.peer_err) = finish(p);
    (c.uffs_ok, c.uffs_err) = finish(u);
    c
}

/// How the uffs output of each stream related to icat's.
#[derive(Default)]
struct Tally {
    identical: AtomicUsize,
    /// TSK gives `$BadClus:$Bad` (a sparse stream the size of the volume) no runs, so icat writes nothing.
    badclus: AtomicUsize,
    /// Deleted files whose runlist lost its later pieces: icat stops where the runs end, uffs writes zeros to
    /// the data size (and says so).
    unmapped_tail: AtomicUsize,
    failures: Mutex<Vec<String>>,
}

/// Compares `uffs cat SOURCE RECORD[:STREAM]` with `icat [-o OFF] IMAGE RECORD-128-ID` on every stream; returns
/// the tally. Runs a few comparisons at once.
fn cat_parity(image: &Path, sector_offset: Option<u64>, source: &str) -> (Vec<Item>, Tally) {
    let (items, _) = fls_items(image, sector_offset);
    let tally = Tally::default();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(it) = items.get(i) else { break };
                let mut icat = tool("icat");
                // Naming the file system and image types spares icat probing for them: a third of its time.
                icat.args(["-f", "ntfs", "-i", "raw"]);
                if let Some(o) = sector_offset {
                    icat.args(["-o", &o.to_string()]);
                }
                icat.arg(image).arg(format!("{}-128-{}", it.record, it.id));
                let target = if it.stream.is_empty() {
                    it.record.to_string()
                } else {
                    format!("{}:{}", it.record, it.stream)
                };
                let mut u = uffs();
                u.args(["cat", source, &target]);
                let c = compare(&mut icat, &mut u);
                let fail = |why: &str| {
                    tally.failures.lock().unwrap().push(format!(
                        "{source} {target} ({}): {why}: icat {} bytes (ok {}, {:?}), uffs {} bytes (ok {}, {:?}), \
                         first difference at {:?}",
                        it.path,
                        c.peer_len,
                        c.peer_ok,
                        c.peer_err.trim(),
                        c.uffs_len,
                        c.uffs_ok,
                        c.uffs_err.trim(),
                        c.first_diff
                    ))
                };
                if it.deleted && c.uffs_ok && !c.uffs_err.contains("is deleted") {
                    fail("no warning for a deleted file");
                }
                let zero_tail = c.peer_ok
                    && c.uffs_ok
                    && c.prefix_equal
                    && c.extra_zero
                    && c.peer_len < c.uffs_len;
                if c.identical() {
                    tally.identical.fetch_add(1, Ordering::Relaxed);
                } else if zero_tail && it.record == 8 && it.stream == "$Bad" && c.peer_len == 0 {
                    tally.badclus.fetch_add(1, Ordering::Relaxed);
                } else if zero_tail && it.deleted && c.uffs_err.contains("maps only the first") {
                    tally.unmapped_tail.fetch_add(1, Ordering::Relaxed);
                } else {
                    fail("outputs differ");
                }
            });
        }
    });
    let failures = tally.failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} streams differ:\n{}",
        failures.len(),
        items.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    drop(failures);
    eprintln!(
        "{source}: {} streams compared with icat: {} identical, {} $BadClus:$Bad (icat writes nothing), {} deleted \
         with an unmapped tail (zeros)",
        items.len(),
        tally.identical.load(Ordering::Relaxed),
        tally.badclus.load(Ordering::Relaxed),
        tally.unmapped_tail.load(Ordering::Relaxed)
    );
    (items, tally)
}

fn has(items: &[Item], record: u64, stream: &str) -> bool {
    items
        .iter()
        .any(|i| i.record == record && i.stream == stream)
}

#[test]
fn content_volume_matches_icat() {
    let img = fixture("content.img");
    let f = facts("content.img");
    let (items, t) = cat_parity(&img, None, img.to_str().unwrap());
    assert!(items.len() > 4000, "only {} streams", items.len());
    // The cases the volume was made for were among them.
    for key in [
        "compressed_text_inode",
        "compressed_mixed_inode",
        "compressed_holes_inode",
        "compressed_deleted_inode",
        "sparse_holes_inode",
        "uninitialized_tail_inode",
        "fragmented_inode",
        "deleted_fragmented_inode",
    ] {
        assert!(has(&items, fact(&f, key), ""), "{key} was not compared");
    }
    assert!(has(&items, fact(&f, "fragmented_stream_inode"), "frag"));
    assert!(has(&items, fact(&f, "compressed_text_inode"), "ads"));
    assert!(items.iter().filter(|i| i.deleted).count() > 1000);
    assert!(
        t.unmapped_tail.load(Ordering::Relaxed) >= 1,
        "the deleted file whose extension records were freed was not met"
    );
}

#[test]
fn basic_volume_matches_icat() {
    let img = fixture("basic.img");
    let f = facts("basic.img");
    let (items, _) = cat_parity(&img, None, img.to_str().unwrap());
    assert!(items.len() > 10_000, "only {} streams", items.len());
    for key in [
        "compressed_inode",
        "sparse_100MiB_inode",
        "attrlist_inode",
        "deleted_nonresident_inode",
        "deleted_resident_inode",
    ] {
        assert!(has(&items, fact(&f, key), ""), "{key} was not compared");
    }
    assert!(has(&items, fact(&f, "ads_multi_inode"), "big"));
    assert!(has(&items, fact(&f, "ads_dir_inode"), "dirstream"));
}

#[test]
fn small_volumes_match_icat() {
    for name in ["sector4k.img", "bigcluster-64k.img", "fragmented.img"] {
        let img = fixture(name);
        let (items, _) = cat_parity(&img, None, img.to_str().unwrap());
        assert!(items.len() >= 18, "{name}: only {} streams", items.len());
        // $MFT itself: on fragmented.img its runlist is spread over record 0 and an extension record.
        assert!(has(&items, 0, ""), "{name}: $MFT not compared");
    }
    let f = facts("fragmented.img");
    assert!(f["mft_data_records"].contains(','));
}

#[test]
fn partitions_match_icat() {
    for (disk, facts_name, parts) in [
        ("disk-mbr.img", "disk-mbr.img", &[1u32, 3, 5][..]),
        ("disk-gpt.img", "disk-gpt.img", &[2, 3][..]),
    ] {
        let img = fixture(disk);
        let f = facts(facts_name);
        for p in parts {
            let start = f
                .get(&format!("p{p}_start"))
                .expect("partition start")
                .parse::<u64>()
                .unwrap();
            let (items, _) = cat_parity(&img, Some(start), &format!("{}@{p}", img.display()));
            assert!(
                items.len() >= 20,
                "{disk}@{p}: only {} streams",
                items.len()
            );
        }
    }
}

#[test]
fn real_images_match_icat() {
    let img = data("linux-made/testfs1");
    let (items, _) = cat_parity(&img, None, img.to_str().unwrap());
    assert!(items.len() >= 15, "testfs1: only {} streams", items.len());
    // The Debian forensic sample: an MBR disk whose NTFS partition starts at sector 2048, with deleted folders.
    let xz = Path::new("/usr/share/forensics-samples/fs.ntfs.xz");
    assert!(
        xz.is_file(),
        "{} is missing; run `sudo scripts/setup.sh`",
        xz.display()
    );
    let dir = scratch("cat-forensics-sample");
    let disk = dir.join("fs.ntfs");
    let out = Command::new("xz").arg("-dc").arg(xz).output().expect("xz");
    assert!(out.status.success());
    std::fs::write(&disk, out.stdout).expect("write image");
    let (items, _) = cat_parity(&disk, Some(2048), &format!("{}@1", disk.display()));
    assert!(items.len() >= 30, "fs.ntfs: only {} streams", items.len());
    assert!(items.iter().any(|i| i.deleted), "no deleted file compared");
}

/// The 2 MiB-cluster volume TSK cannot open, against ntfs-3g's `ntfscat` (live files and their named streams).
#[test]
fn big_clusters_match_ntfscat() {
    let img = fixture("bigcluster.img");
    let s = img.to_str().unwrap();
    let rows = export(&img, &["--streams"]);
    let mut seen = BTreeSet::new();
    let mut compared = 0;
    for r in &rows {
        if r["kind"] == "folder" {
            continue;
        }
        let record: u64 = r["record"].parse().unwrap();
        // ntfscat gives `$MFT` and `$MFTMirr` with their records' fixups undone (icat, and uffs, as stored; those
        // are compared with icat on every other volume).
        if record <= 1 {
            continue;
        }
        let stream = match r["kind"].as_str() {
            "stream" => r["name"].rsplit_once(':').unwrap().1.to_string(),
            _ => String::new(),
        };
        if !seen.insert((record, stream.clone())) {
            continue;
        }
        let mut peer = tool("ntfscat");
        if !stream.is_empty() {
            peer.args(["-a", "0x80", "-n", &stream]);
        }
        peer.args(["-i", &record.to_string(), s]);
        let target = if stream.is_empty() {
            record.to_string()
        } else {
            format!("{record}:{stream}")
        };
        let c = compare(&mut peer, uffs().args(["cat", s, &target]));
        // System files with only named streams (`$Secure`, `$Extend/$Quota` ...): ntfscat picks one of those.
        if record < 64 && c.uffs_err.contains("has no unnamed data stream") {
            continue;
        }
        assert!(
            c.identical(),
            "{target} ({}): ntfscat {} bytes ({}), uffs {} bytes ({}), first difference at {:?}",
            r["path"],
            c.peer_len,
            c.peer_err.trim(),
            c.uffs_len,
            c.uffs_err.trim(),
            c.first_diff
        );
        compared += 1;
    }
    assert!(compared >= 14, "only {compared} streams");
    // A hard-linked file's named stream, and $BadClus:$Bad (a hole the size of the volume, which ntfscat writes).
    assert!(seen.contains(&(67, "extra".to_string())) && seen.contains(&(8, "$Bad".to_string())));
    eprintln!("{s}: {compared} streams compared with ntfscat");
}

/// Sparse files larger than the volume, which TSK cannot read: the holes are zeros and the data where it was
/// written (16 KiB of `HEAD` at 0, 16 bytes of `TAIL` at 3 GiB).
#[test]
fn sparse_larger_than_the_volume() {
    let img = fixture("basic.img");
    let (_, unloaded) = fls_items(&img, None);
    let paths: BTreeSet<&str> = unloaded.iter().map(|u| u.1.as_str()).collect();
    assert!(paths.contains("sparse/head-and-tail-3GiB.bin"), "{paths:?}");
    let mut child = spawn(uffs().args([
        "cat",
        img.to_str().unwrap(),
        "/sparse/head-and-tail-3GiB.bin",
    ]));
    let mut out = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 4 << 20];
    let (mut at, mut nonzero) = (0u64, Vec::new());
    loop {
        let n = fill(&mut out, &mut buf);
        if n == 0 {
            break;
        }
        if buf[..n].iter().any(|&b| b != 0) {
            for (i, chunk) in buf[..n].chunks(16).enumerate() {
                if chunk.iter().any(|&b| b != 0) {
                    nonzero.push((at + 16 * i as u64, chunk.to_vec()));
                }
            }
        }
        at += n as u64;
    }
    drop(out);
    let (ok, err) = finish(child);
    assert!(ok, "{err}");
    assert_eq!(at, (3 << 30) + 16);
    // 4 KiB of HEAD, 16 bytes of TAIL.
    assert_eq!(nonzero.len(), 256 + 1);
    assert!(nonzero[..256]
        .iter()
        .enumerate()
        .all(|(i, (o, c))| *o == 16 * i as u64 && c == &b"HEADHEADHEADHEAD"[..]));
    assert_eq!(nonzero[256], (3 << 30, b"TAILTAILTAILTAIL".to_vec()));
}

/// The resident data of every base record of the Windows `$MFT` captures, against `mft_dump`'s JSON (which
/// gives each resident attribute's value in hex); non-resident data is not in a capture, which uffs says.
#[test]
fn windows_mft_captures_match_mft_dump() {
    let mut captures: Vec<PathBuf> = vec![
        data("windows-xp-mft/MFT"),
        data("windows-xp-mft/ntfs1-gen2.MFT"),
        data("usn/plaso-vsstest.MFT"),
    ];
    let mut scen: Vec<PathBuf> = std::fs::read_dir(data("windows10-scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    scen.sort();
    captures.extend(scen);
    let mut total = 0;
    let mut non_resident_checked = false;
    for cap in &captures {
        let out = run_ok(tool("mft_dump").args(["-o", "jsonl"]).arg(cap));
        // (record, stream name, value)
        let mut want: Vec<(u64, String, Vec<u8>)> = Vec::new();
        let mut non_resident: Option<(u64, String)> = None;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(e) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let h = &e["header"];
            if h["base_reference"]["entry"].as_u64() != Some(0) {
                continue;
            }
            let Some(record) = h["record_number"].as_u64() else {
                continue;
            };
            let mut names = BTreeSet::new();
            for a in e["attributes"].as_array().into_iter().flatten() {
                let ah = &a["header"];
                if ah["type_code"] != "DATA" {
                    continue;
                }
                let name = ah["name"].as_str().unwrap_or("").to_string();
                if !names.insert(name.clone()) {
                    continue;
                }
                if ah["form_code"] == 0 {
                    let hex = a["data"].as_str().expect("resident data as hex");
                    let bytes = (0..hex.len() / 2)
                        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                        .collect();
                    want.push((record, name, bytes));
                } else if non_resident.is_none()
                    && ah["residential_header"]["file_size"].as_u64() > Some(0)
                {
                    non_resident = Some((record, name));
                }
            }
        }
        assert!(!want.is_empty(), "{}: no resident data", cap.display());
        let failures = Mutex::new(Vec::new());
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((record, name, bytes)) = want.get(i) else {
                        break;
                    };
                    let target = if name.is_empty() {
                        record.to_string()
                    } else {
                        format!("{record}:{name}")
                    };
                    let out = uffs()
                        .args(["cat", cap.to_str().unwrap(), &target])
                        .output()
                        .unwrap();
                    if !out.status.success() || &out.stdout != bytes {
                        failures.lock().unwrap().push(format!(
                            "{} {target}: uffs {} bytes ({}), mft_dump {} bytes",
                            cap.display(),
                            out.stdout.len(),
                            String::from_utf8_lossy(&out.stderr).trim(),
                            bytes.len()
                        ));
                    }
                });
            }
        });
        let failures = failures.into_inner().unwrap();
        assert!(
            failures.is_empty(),
            "{} of {} differ:\n{}",
            failures.len(),
            want.len(),
            failures[..failures.len().min(20)].join("\n")
        );
        total += want.len();
        if let Some((record, name)) = non_resident {
            let target = if name.is_empty() {
                record.to_string()
            } else {
                format!("{record}:{name}")
            };
            let out = uffs()
                .args(["cat", cap.to_str().unwrap(), &target])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("raw $MFT capture"), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            non_resident_checked = true;
        }
    }
    assert!(non_resident_checked);
    assert!(total > 2000, "only {total} resident streams compared");
    eprintln!(
        "{total} resident streams of {} $MFT captures compared with mft_dump",
        captures.len()
    );
}

fn icat_bytes(image: &Path, spec: &str) -> Vec<u8> {
    run_ok(tool("icat").arg(image).arg(spec)).stdout
}

fn cat(args: &[&str]) -> std::process::Output {
    uffs().arg("cat").args(args).output().expect("run uffs")
}

/// One line on stderr and exit status 2, the line containing `what`.
fn assert_error(out: &std::process::Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert!(err.contains(what), "{err:?} does not say {what:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn paths_streams_and_output_file() {
    let img = fixture("content.img");
    let s = img.to_str().unwrap();
    let f = facts("content.img");
    let text = fact(&f, "compressed_text_inode");
    let want = icat_bytes(&img, &text.to_string());
    for path in [
        "/compressed/text-1MiB.txt",
        "compressed/text-1MiB.txt",
        "\\compressed\\text-1MiB.txt",
        "/COMPRESSED/Text-1MiB.TXT",
        "/compressed/text-1MiB.txt::$DATA",
    ] {
        let out = cat(&[s, path]);
        assert!(out.status.success(), "{path}");
        assert!(out.stdout == want, "{path}");
    }
    // A named stream by path and by record; the stream name ignores case.
    let ads = icat_bytes(&img, &format!("{text}-128-4"));
    assert_eq!(cat(&[s, "/compressed/text-1MiB.txt:ads"]).stdout, ads);
    assert_eq!(cat(&[s, &format!("{text}:ADS")]).stdout, ads);
    // -o FILE: the same bytes, nothing else left in the folder.
    let dir = scratch("cat-output");
    let to = dir.join("out.txt");
    let out = cat(&[s, "/compressed/text-1MiB.txt", "-o", to.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert!(std::fs::read(&to).unwrap() == want);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    // A failed cat leaves no file behind.
    let bad = dir.join("bad.txt");
    assert_error(
        &cat(&[s, "/no/such/file", "-o", bad.to_str().unwrap()]),
        "no such file",
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);

    // Deleted files: found by path only with --deleted, and written with a warning.
    let del = fact(&f, "compressed_deleted_inode");
    assert_error(&cat(&[s, "/compressed/deleted.txt"]), "--deleted");
    let out = cat(&[s, "/compressed/deleted.txt", "--deleted"]);
    assert!(out.status.success());
    assert!(out.stdout == icat_bytes(&img, &del.to_string()));
    assert!(String::from_utf8_lossy(&out.stderr).contains("may have been reused"));

    // Names that differ only in case are told apart when given exactly.
    let basic = fixture("basic.img");
    let b = basic.to_str().unwrap();
    assert_eq!(cat(&[b, "/case/Readme.txt"]).stdout, b"mixed case\n");
    assert_eq!(cat(&[b, "/case/README.TXT"]).stdout, b"upper case\n");
    assert_eq!(cat(&[b, "/case/readme.txt"]).stdout, b"lower case\n");
    assert_error(&cat(&[b, "/CASE/ReadMe.txt"]), "names 3 files");
    // Unicode, a hard link's other names, a folder's named stream.
    assert_eq!(
        cat(&[b, "/unicode/目录 папка 📁/😀 inside.txt"]).stdout,
        b"nested unicode\n"
    );
    let budget = icat_bytes(&basic, "102");
    assert!(cat(&[b, "/Users/bob/Desktop/budget (link).xlsx"]).stdout == budget);
    assert_eq!(
        cat(&[b, "/streams/folder-with-stream:dirstream"]).stdout,
        b"stream on a directory\n"
    );
    assert_eq!(
        cat(&[b, "/streams/multi.txt:ストリーム"]).stdout,
        b"unicode stream name\n"
    );
}

#[test]
fn errors_are_one_line_and_exit_2() {
    let img = fixture("content.img");
    let s = img.to_str().unwrap();
    assert_error(&cat(&[s, "/plain"]), "is a folder");
    assert_error(&cat(&[s, "/"]), "is a folder");
    assert_error(&cat(&[s, "/plain/nope.txt"]), "no such file");
    assert_error(&cat(&[s, "/plain/streams.txt:nope"]), "no stream 'nope'");
    assert_error(&cat(&[s, "99999999"]), "does not exist");
    let disk = fixture("disk-mbr.img");
    assert_error(&cat(&[disk.to_str().unwrap(), "/x"]), "@1");

    // An encrypted stream (EFS): the $DATA attribute's flag 0x4000 set on a copy of the volume.
    let dir = scratch("cat-encrypted");
    let copy = dir.join("content.img");
    run_ok(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(&img)
            .arg(&copy),
    );
    let record = 76; // plain/resident.txt
    let out = cat(&[copy.to_str().unwrap(), "/plain/resident.txt"]);
    assert_eq!(out.stdout, b"resident data\n", "record {record} moved");
    set_data_flag(&copy, record, 0x4000);
    assert_error(
        &cat(&[copy.to_str().unwrap(), "/plain/resident.txt"]),
        "encrypted",
    );
    assert_error(&cat(&[copy.to_str().unwrap(), "76"]), "encrypted");
}

/// A damaged attribute list (pieces named in a record that holds others, in the base record itself, in another
/// file's record, many times over): one line and exit 2, at once, never a hang or a fault.
#[test]
fn hostile_attribute_lists() {
    let img = fixture("content.img");
    let f = facts("content.img");
    let record = fact(&f, "fragmented_inode");
    let (at, size) = attribute_list_at(&img, record);
    let original = {
        let all = std::fs::read(&img).unwrap();
        all[at as usize..at as usize + size].to_vec()
    };
    // (type, offset of the file reference) of each entry
    let entries: Vec<(u32, usize)> = {
        let mut v = Vec::new();
        let mut p = 0;
        while p + 0x20 <= size {
            let t = u32::from_le_bytes(original[p..p + 4].try_into().unwrap());
            let len = u16::from_le_bytes([original[p + 4], original[p + 5]]) as usize;
            v.push((t, p + 0x10));
            p += len.max(0x20);
        }
        v
    };
    let data_refs: Vec<usize> = entries
        .iter()
        .filter(|e| e.0 == 0x80)
        .map(|e| e.1)
        .collect();
    assert!(data_refs.len() >= 3, "{entries:?}");
    let get = |o: usize| u64::from_le_bytes(original[o..o + 8].try_into().unwrap());
    let first_extension = data_refs
        .iter()
        .map(|&o| get(o))
        .find(|r| r & 0xFFFF_FFFF_FFFF != record)
        .unwrap();
    let dir = scratch("cat-hostile-list");
    let copy = dir.join("content.img");
    type Patch<'a> = Box<dyn Fn(&mut Vec<u8>) + 'a>;
    let cases: [(&str, Patch, &str); 3] = [
        (
            "every piece named in one extension record",
            Box::new(|l: &mut Vec<u8>| {
                for &o in &data_refs {
                    l[o..o + 8].copy_from_slice(&first_extension.to_le_bytes());
                }
            }),
            "maps",
        ),
        (
            "every piece named in the base record itself",
            Box::new(|l: &mut Vec<u8>| {
                for &o in &data_refs {
                    l[o..o + 8].copy_from_slice(&record.to_le_bytes());
                }
            }),
            "maps",
        ),
        (
            "a piece named in another file's record",
            Box::new(|l: &mut Vec<u8>| {
                let o = *data_refs.last().unwrap();
                l[o..o + 8].copy_from_slice(&(76u64 | 1 << 48).to_le_bytes());
            }),
            "another file",
        ),
    ];
    for (what, patch, says) in cases {
        run_ok(
            Command::new("cp")
                .arg("--sparse=always")
                .arg(&img)
                .arg(&copy),
        );
        let mut list = original.clone();
        patch(&mut list);
        use std::io::{Seek, SeekFrom, Write};
        let mut w = std::fs::OpenOptions::new().write(true).open(&copy).unwrap();
        w.seek(SeekFrom::Start(at)).unwrap();
        w.write_all(&list).unwrap();
        drop(w);
        let t = std::time::Instant::now();
        let out = cat(&[copy.to_str().unwrap(), &record.to_string()]);
        assert!(t.elapsed() < std::time::Duration::from_secs(10), "{what}");
        assert_error(&out, says);
    }
    // A deleted file's list overwritten since (its clusters reused): what the base record maps is still written,
    // the rest as zeros, with the warnings.
    let deleted = fact(&f, "deleted_fragmented_inode");
    let want = run_ok(
        uffs()
            .args(["cat", img.to_str().unwrap()])
            .arg(deleted.to_string()),
    )
    .stdout;
    let (at, size) = attribute_list_at(&img, deleted);
    run_ok(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(&img)
            .arg(&copy),
    );
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut w = std::fs::OpenOptions::new().write(true).open(&copy).unwrap();
        w.seek(SeekFrom::Start(at)).unwrap();
        w.write_all(&vec![0xA5; size]).unwrap();
    }
    let out = cat(&[copy.to_str().unwrap(), &deleted.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout == want);
    assert!(String::from_utf8_lossy(&out.stderr).contains("maps only the first"));
}

/// Where the non-resident `$ATTRIBUTE_LIST` of `record` lies on the volume (byte offset, size), from istat.
fn attribute_list_at(img: &Path, record: u64) -> (u64, usize) {
    let istat =
        String::from_utf8(run_ok(tool("istat").arg(img).arg(record.to_string())).stdout).unwrap();
    let mut lines = istat.lines();
    let head = lines
        .by_ref()
        .find(|l| l.starts_with("Type: $ATTRIBUTE_LIST ("))
        .expect("an attribute list");
    assert!(head.contains("Non-Resident"), "{head}");
    let cluster: u64 = lines
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let size: usize = head
        .rsplit("init_size: ")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (cluster * 4096, size)
}

/// A folder has no data to give: `cat` says it is a folder and how to list it, in one line, exit 2.
#[test]
fn cat_of_a_folder_says_how_to_list_it() {
    let img = fixture("basic.img");
    for target in ["/hardlinks", "5"] {
        let o = uffs().arg("cat").arg(&img).arg(target).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{target}: {err}");
        assert_eq!(err.lines().count(), 1, "{target}: {err}");
        assert!(
            err.contains("is a folder: it has no data of its own to read")
                && err.contains("`uffs du FOLDER`"),
            "{target}: {err}"
        );
    }
}
