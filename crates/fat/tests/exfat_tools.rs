//! exFAT volumes built by mkfs.exfat and filled through exfat-fuse, read by uffs and compared with The Sleuth
//! Kit (`fls`, `icat`), with `stat` and `sha256sum` over the mount, and with `dump.exfat`.

mod exfat_util;

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use exfat_util::*;
use uffs_fat::{exfat, ScanOptions};
use uffs_fs::Kind;

const FT_UNIX: u64 = 116_444_736_000_000_000;

/// Fills a mounted volume with what the tests look for; returns nothing, the mount is the truth.
fn populate(m: &Path) {
    let w = |p: &str, data: &[u8]| fs::write(m.join(p), data).unwrap();
    let mut rng = Rng(0x5eed);
    // Long and Unicode names.
    w(&"L".repeat(200), b"long name");
    w("Ünïcødé ファイル 📁.txt", "unicode".as_bytes());
    w("MiXeD CaSe.TxT", b"mixed");
    // Deep folders.
    let mut deep = String::from("deep");
    for k in 0..25 {
        deep.push_str(&format!("/level{k}"));
    }
    fs::create_dir_all(m.join(&deep)).unwrap();
    w(&format!("{deep}/bottom.bin"), &rng.bytes(10_000));
    // A folder with hundreds of entries (several clusters of directory).
    fs::create_dir(m.join("many")).unwrap();
    for k in 0..400 {
        w(
            &format!("many/entry number {k:04} with a longish name.dat"),
            format!("{k}").as_bytes(),
        );
    }
    // Fragmented files: several, delete every other, then a large one fills the holes.
    fs::create_dir(m.join("frag")).unwrap();
    for k in 0..16 {
        w(&format!("frag/piece{k:02}"), &rng.bytes(3 * 4096 + 100));
    }
    for k in (0..16).step_by(2) {
        fs::remove_file(m.join(format!("frag/piece{k:02}"))).unwrap();
    }
    w("frag/large.bin", &rng.bytes(60 * 4096 + 7));
    // Contiguous (NoFatChain) files, written at once.
    w("contig.bin", &rng.bytes(200_000));
    // A file that grows by appends (may end up chained).
    {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(m.join("grown.log"))
            .unwrap();
        for _ in 0..20 {
            f.write_all(&rng.bytes(5000)).unwrap();
        }
    }
    // Empty file and empty folder.
    w("empty", b"");
    fs::create_dir(m.join("empty dir")).unwrap();
    // Renames and deletions through the driver.
    w("old name.txt", b"renamed");
    fs::rename(m.join("old name.txt"), m.join("new name.txt")).unwrap();
    fs::create_dir_all(m.join("moved/inner")).unwrap();
    w("moved/inner/f", b"in a moved folder");
    fs::rename(m.join("moved"), m.join("deep/moved here")).unwrap();
    w("deleted one.txt", &rng.bytes(9000));
    fs::remove_file(m.join("deleted one.txt")).unwrap();
    fs::create_dir_all(m.join("gone dir/sub")).unwrap();
    w("gone dir/sub/x", b"x");
    fs::remove_dir_all(m.join("gone dir")).unwrap();
}

/// (path → (size, mtime, sha256)) of every file through the mount; folders with their mtime only.
fn mount_facts(m: &Path) -> HashMap<String, (u64, i64, Option<String>)> {
    let out = Command::new("sh")
        .arg("-c")
        .arg("cd \"$1\" && find . -mindepth 1 -print0 | xargs -0 stat -c '%s %Y %F|%n'")
        .arg("sh")
        .arg(m)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let mut facts = HashMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let (head, name) = line.split_once('|').unwrap();
        let mut it = head.splitn(3, ' ');
        let size: u64 = it.next().unwrap().parse().unwrap();
        let mtime: i64 = it.next().unwrap().parse().unwrap();
        let is_file = it.next().unwrap().starts_with("regular");
        let path = name.trim_start_matches("./").to_string();
        let sha = is_file.then(|| {
            let o = run("sha256sum", &[m.join(&path).to_str().unwrap()]);
            String::from_utf8(o).unwrap()[..64].to_string()
        });
        facts.insert(path, (size, mtime, sha));
    }
    facts
}

fn sha256(data: &[u8]) -> String {
    let mut c = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(data).unwrap();
    let o = c.wait_with_output().unwrap();
    String::from_utf8(o.stdout).unwrap()[..64].to_string()
}

#[test]
fn exfat_matches_fls_icat_stat_and_dump() {
    if !have(&[
        "mkfs.exfat",
        "fls",
        "icat",
        "dump.exfat",
        "sha256sum",
        "losetup",
    ]) {
        return;
    }
    let tmp = TempDir::new("tools");
    let img = tmp.path().join("vol.img");
    mkfs(&img, 64, &["-L", "UFFS TEST"]);
    let mnt = tmp.path().join("mnt");
    let facts = match Mount::new(&img, &mnt) {
        Some(m) => {
            populate(&m.dir);
            let f = mount_facts(&m.dir);
            m.unmount();
            Some(f)
        }
        None => {
            eprintln!("FUSE mount failed: comparing with TSK on an empty volume only");
            None
        }
    };
    let bytes = fs::read(&img).unwrap();
    let vol = exfat::Volume::open(bytes.as_slice()).unwrap();
    let scan = vol.scan(&ScanOptions::default()).unwrap();
    assert!(scan.warnings.is_empty(), "{:#?}", scan.warnings);
    assert_eq!(scan.root, 2);
    let paths = paths(&scan);

    // Every live path and id is TSK's.
    let mut ours: Vec<(u64, String, bool)> = paths
        .iter()
        .map(|(&id, p)| (id, p.clone(), false))
        .collect();
    ours.sort();
    let theirs = fls(&img, &["-u"]);
    assert_eq!(ours, theirs);

    // Space: the allocated bytes add up to what the bitmap and the reserved regions say.
    let space = vol.space().unwrap();
    let allocated: u64 = scan.entries.iter().map(|e| e.allocated).sum();
    assert_eq!(allocated, space.bytes_in_use);
    let dump = String::from_utf8(run("dump.exfat", &[img.to_str().unwrap()])).unwrap();
    let free: u64 = dump
        .lines()
        .find_map(|l| l.strip_prefix("Free Clusters:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(space.clusters_total - space.clusters_in_use, free);
    let facts_lines = vol.facts();
    assert!(facts_lines
        .iter()
        .any(|(k, v)| k == "label" && v == "UFFS TEST"));
    assert!(facts_lines
        .iter()
        .any(|(k, v)| k == "up-case table checksum" && v == "OK"));
    assert!(facts_lines
        .iter()
        .any(|(k, v)| k == "boot region checksum" && v == "OK"));

    // Contents: our runs == icat == the mount's sha256; sizes and mtimes == stat over the mount.
    let Some(facts) = facts else { return };
    let mut files = 0;
    let mut chained = 0;
    for e in &scan.entries {
        if e.id == scan.root {
            continue;
        }
        let p = &paths[&e.id];
        if e.kind == Kind::File {
            let data = read_entry(&bytes, e);
            let icat = run("icat", &[img.to_str().unwrap(), &e.id.to_string()]);
            assert_eq!(data.len(), icat.len(), "{p}");
            assert!(data == icat, "{p}: our bytes differ from icat's");
            if e.runs.len() > 1 {
                chained += 1;
            }
        }
        if e.metadata {
            continue;
        }
        let (size, mtime, sha) = facts
            .get(p)
            .unwrap_or_else(|| panic!("{p} not in the mount"));
        assert_eq!(e.size, *size, "{p}");
        assert!(!e.local_times, "{p}: exfat-fuse records the UTC offset");
        let ours = ((e.times.modified - FT_UNIX) / 10_000_000) as i64;
        assert_eq!(ours, *mtime, "{p}: modified");
        if let Some(sha) = sha {
            assert_eq!(&sha256(&read_entry(&bytes, e)), sha, "{p}");
            files += 1;
        }
    }
    assert_eq!(files, facts.values().filter(|f| f.2.is_some()).count());
    assert!(chained >= 1, "the fragmented file has more than one run");
    // contig.bin was written at once: NoFatChain (its first cluster's FAT entry is free), one run; the
    // fragmented large.bin follows its FAT chain through the holes.
    let fat = u32::from_le_bytes(bytes[80..84].try_into().unwrap()) as usize * 512;
    let heap = u32::from_le_bytes(bytes[88..92].try_into().unwrap()) as u64 * 512;
    let by_path: HashMap<&str, &uffs_fs::Entry> = scan
        .entries
        .iter()
        .filter(|e| e.id != scan.root)
        .map(|e| (paths[&e.id].as_str(), e))
        .collect();
    let contig = by_path["contig.bin"];
    assert_eq!(contig.runs.len(), 1);
    let c = ((contig.runs[0].offset - heap) / 4096 + 2) as usize;
    assert_eq!(
        &bytes[fat + 4 * c..fat + 4 * c + 4],
        &[0, 0, 0, 0],
        "contig.bin is not NoFatChain"
    );
    assert!(by_path["frag/large.bin"].runs.len() > 1);

    // Deleted entry sets, as exFAT keeps them, against `fls -d` (without what TSK finds only by carving the
    // unallocated clusters into $OrphanFiles).
    let all = vol
        .scan(&ScanOptions {
            deleted: true,
            ..Default::default()
        })
        .unwrap();
    let all_paths = exfat_util::paths(&all);
    let mut deleted: Vec<(u64, String, bool)> = all
        .entries
        .iter()
        .filter(|e| e.deleted)
        .map(|e| (e.id, all_paths[&e.id].clone(), true))
        .collect();
    deleted.sort();
    let tsk_deleted = fls(&img, &["-d"]);
    assert_eq!(deleted, tsk_deleted);
    assert!(!deleted.is_empty());
    for e in all.entries.iter().filter(|e| e.deleted) {
        assert_eq!(e.allocated, 0);
        if e.size > 0 && !e.runs.is_empty() {
            // TSK recovers deleted data contiguously from the first cluster too (skipping clusters in use since,
            // which ours keep): equal when nothing reused them.
            let icat = Command::new("icat")
                .args([img.to_str().unwrap(), &e.id.to_string()])
                .output()
                .unwrap()
                .stdout;
            let ours = read_entry(&bytes, e);
            if icat.len() == ours.len() && icat != ours {
                eprintln!(
                    "deleted {}: differs from icat (clusters reused)",
                    all_paths[&e.id]
                );
            }
        }
    }
}

/// Written by a driver at +05:30 (exfat-fuse records the zone's offset: 0x80 | 22 quarter hours), read as UTC:
/// the modified time equals `stat`'s epoch seconds, and the entry's NoFatChain data is one run.
#[test]
fn exfat_utc_offsets_become_utc() {
    if !have(&["mkfs.exfat", "losetup", "stat"]) {
        return;
    }
    let tmp = TempDir::new("tz");
    let img = tmp.path().join("vol.img");
    mkfs(&img, 8, &[]);
    let Some(m) = Mount::with_tz(&img, &tmp.path().join("mnt"), "Asia/Kolkata") else {
        eprintln!("skipped: FUSE mount failed");
        return;
    };
    fs::write(m.dir.join("f"), vec![3u8; 50_000]).unwrap();
    let out = run("stat", &["-c", "%Y", m.dir.join("f").to_str().unwrap()]);
    let mtime: u64 = String::from_utf8(out).unwrap().trim().parse().unwrap();
    m.unmount();
    let bytes = fs::read(&img).unwrap();
    let scan = exfat::Volume::open(bytes.as_slice())
        .unwrap()
        .scan(&ScanOptions::default())
        .unwrap();
    let e = scan.entries.iter().find(|e| e.name == "f").unwrap();
    // The raw offset byte is +05:30.
    let heap = u32::from_le_bytes(bytes[88..92].try_into().unwrap()) as usize * 512;
    assert_eq!(bytes[heap + (e.id as usize - 3) * 32 + 23], 0x80 | 22);
    assert!(!e.local_times);
    assert_eq!((e.times.modified - FT_UNIX) / 10_000_000, mtime);
    assert_eq!(e.runs.len(), 1);
    assert_eq!(read_entry(&bytes, e), vec![3u8; 50_000]);
}
