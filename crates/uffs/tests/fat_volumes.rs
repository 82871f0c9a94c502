//! FAT12, FAT16, FAT32 and exFAT end to end: volumes made by the real tools (mkfs.vfat + mtools, mkfs.exfat +
//! the exfat-fuse driver) read by `uffs` and compared with The Sleuth Kit (`fls`, `icat`, `istat`), `fsck.fat`,
//! the exFAT allocation bitmap, whole MBR and GPT disks, containers, Parquet and the HTTP API.

#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::fatvol::*;
use common::*;

/// The volumes of every kind, each in its own temp dir (exFAT left out when no loop device can be had).
fn volumes(tag: &str) -> Vec<(&'static str, Tmp, std::path::PathBuf)> {
    KINDS
        .iter()
        .filter_map(|k| {
            let t = Tmp::new(&format!("{tag}-{k}"));
            let img = build(&t, k)?;
            Some((*k, t, img))
        })
        .collect()
}

/// `uffs export IMG --format csv EXTRA` rows.
fn rows(img: &Path, extra: &[&str]) -> Vec<std::collections::HashMap<String, String>> {
    export(img, extra)
}

/// `uffs ARGS` (a query: exit 0 found, 1 none): the lines it prints.
fn query(args: &[&str]) -> BTreeSet<String> {
    let o = uffs().args(args).output().unwrap();
    assert!(
        o.status.code().unwrap_or(9) < 2,
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// Live paths of regular files (`r/r`) by fls, with their inodes.
fn fls_files(img: &Path) -> BTreeMap<String, u64> {
    fls(img, &["-u"])
        .into_iter()
        .filter(|e| e.kind == "r/r")
        .map(|e| (e.path, e.inode))
        .collect()
}

#[test]
fn export_paths_and_records_match_fls_live_and_deleted() {
    for (kind, _t, img) in volumes("paths") {
        let all = rows(&img, &["--deleted"]);
        let live: BTreeSet<String> = all
            .iter()
            .filter(|r| r["deleted"] == "false" && r["path"] != "/")
            .map(|r| r["path"].clone())
            .collect();
        let deleted: BTreeSet<String> = all
            .iter()
            .filter(|r| r["deleted"] == "true")
            .map(|r| r["path"].clone())
            .collect();
        let tsk_live = fls(&img, &["-u"]);
        let want_live: BTreeSet<String> = tsk_live.iter().map(|e| e.path.clone()).collect();
        let want_deleted: BTreeSet<String> =
            fls(&img, &["-d"]).into_iter().map(|e| e.path).collect();
        assert_eq!(live, want_live, "{kind}: live paths");
        assert_eq!(deleted, want_deleted, "{kind}: deleted paths");
        // What the volume holds is there: long, Unicode and deep names, the renamed file, the fragmented one.
        for p in [
            "/Ünïcødé ñame €.txt",
            "/日本語のファイル名.txt",
            "/deep/level1/level2/level3/Deep Inside.bin",
            "/New Longer Name After Rename.txt",
            "/frag/Big Fragmented File.bin",
        ] {
            assert!(live.contains(p), "{kind}: {p} missing: {live:?}");
        }
        assert!(!live.contains("/old name.txt") && !live.contains("/doomed.txt"));
        assert!(!deleted.is_empty(), "{kind}: no deleted entries");
        // The record of each live entry is TSK's inode number.
        let by_path: BTreeMap<&str, &str> = all
            .iter()
            .filter(|r| r["deleted"] == "false")
            .map(|r| (r["path"].as_str(), r["record"].as_str()))
            .collect();
        for e in &tsk_live {
            assert_eq!(
                by_path[e.path.as_str()],
                e.inode.to_string(),
                "{kind}: record of {}",
                e.path
            );
        }
        // Without --deleted, no deleted rows.
        assert!(rows(&img, &[]).iter().all(|r| r["deleted"] == "false"));
    }
}

#[test]
fn cat_equals_icat_for_every_file() {
    let mut wrong = Vec::new();
    for (kind, _t, img) in volumes("cat") {
        let files = fls_files(&img);
        assert!(files.len() > 10, "{kind}: {files:?}");
        for (path, inode) in &files {
            // `uffs cat IMG "/Ünïcødé ñame €.txt"` once panicked: the `:$DATA` suffix check sliced inside `€`.
            let o = uffs().arg("cat").arg(&img).arg(path).output().unwrap();
            if !o.status.success() {
                let err = String::from_utf8_lossy(&o.stderr);
                let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                wrong.push(format!("{kind}: uffs cat {path}: {}: {first}", o.status));
            } else if o.stdout != icat(&img, *inode) {
                wrong.push(format!("{kind}: uffs cat {path} differs from icat {inode}"));
            }
        }
        // The fragmented file is whole.
        let big = run_ok(
            uffs()
                .arg("cat")
                .arg(&img)
                .arg("/frag/Big Fragmented File.bin"),
        )
        .stdout;
        assert_eq!(big, pattern(40_000, 99), "{kind}");
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn hash_sha256_equals_sha256_of_icat_for_every_file() {
    for (kind, _t, img) in volumes("hash") {
        // `--metafiles`: exFAT's allocation bitmap and up-case table are files to fls (`r/r`), metadata to uffs.
        let o = run_ok(
            uffs()
                .args(["hash", "--algo", "sha256", "--metafiles", "--source"])
                .arg(&img),
        );
        let plain = run_ok(
            uffs()
                .args(["hash", "--algo", "sha256", "--source"])
                .arg(&img),
        );
        let plain = String::from_utf8(plain.stdout).unwrap();
        assert!(
            !plain.contains("/$FAT1") && !plain.contains("/$MBR"),
            "{kind}: without --metafiles, the tables are left out: {plain}"
        );
        let got: BTreeMap<String, String> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let (h, p) = l.split_once("  ")?;
                Some((p.to_string(), h.to_string()))
            })
            .collect();
        let want: BTreeMap<String, String> = fls_files(&img)
            .into_iter()
            .map(|(p, i)| (p, sha256_hex(&icat(&img, i))))
            .collect();
        // Files whose TSK inode number is below 16 were once taken for NTFS metafiles ($MFT … $Extend) and left
        // out: on FAT they are the root folder's first entries (/empty.dat, /hidden file.txt, the Unicode names).
        for (p, h) in &want {
            assert_eq!(
                got.get(p),
                Some(h),
                "{kind}: sha256 of {p}; uffs hash printed {got:?}"
            );
        }
    }
}

#[test]
fn grep_finds_a_word_in_one_file_as_rg_does_on_the_mount() {
    for (kind, t, img) in volumes("grep") {
        let o = uffs()
            .args(["grep", "-l", "zebrafish", "--source"])
            .arg(&img)
            .output()
            .unwrap();
        let got: BTreeSet<String> = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(
            got,
            BTreeSet::from(["/deep/level1/needle.txt".to_string()]),
            "{kind}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let line = run_ok(uffs().args(["grep", "zebrafish", "--source"]).arg(&img)).stdout;
        assert_eq!(
            String::from_utf8(line).unwrap().trim(),
            "/deep/level1/needle.txt:2:the zebrafish swims here",
            "{kind}"
        );
        // As `uffs hash` did, `uffs grep` once skipped files with a low TSK inode number (taken for NTFS
        // metafiles): the Unicode-named file in the root folder.
        let o = uffs()
            .args(["grep", "-l", "unicode text", "--source"])
            .arg(&img)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            "/Ünïcødé ñame €.txt",
            "{kind}: uffs grep -l 'unicode text'"
        );
        if kind == "exFAT" {
            // rg over the mounted volume agrees on which files hold "zebra" (the deleted one does not count).
            let m = Mount::new(&img, &t.path("rgmnt")).expect("mount");
            let rg = run_ok(tool("rg").args(["-l", "zebra", "."]).current_dir(&m.dir)).stdout;
            let want: BTreeSet<String> = String::from_utf8(rg)
                .unwrap()
                .lines()
                .map(|l| l.trim_start_matches('.').to_string())
                .collect();
            m.unmount();
            let o = uffs()
                .args(["grep", "-l", "zebra", "--source"])
                .arg(&img)
                .output()
                .unwrap();
            let got: BTreeSet<String> = String::from_utf8(o.stdout)
                .unwrap()
                .lines()
                .map(String::from)
                .collect();
            assert_eq!(got, want, "exFAT: uffs grep -l vs rg -l on the mount");
        }
    }
}

#[test]
fn bodyfile_matches_fls_m_inode_size_and_times() {
    for (kind, _t, img) in volumes("body") {
        let ours = body_rows(
            &run_ok(
                uffs()
                    .arg("export")
                    .arg(&img)
                    .args(["--format", "bodyfile", "--deleted"]),
            )
            .stdout,
        );
        let theirs = fls_body(&img, &[]);
        let dirs: BTreeSet<String> = fls(&img, &[])
            .into_iter()
            .filter(|e| e.kind == "d/d")
            .map(|e| e.path)
            .collect();
        let mut compared = 0;
        for (path, (inode, size, times)) in &theirs {
            let Some((i, s, t)) = ours.get(path) else {
                continue;
            };
            compared += 1;
            assert_eq!(i, inode, "{kind}: inode of {path}");
            if kind == "exFAT" {
                // exFAT keeps modification and creation times to 10 ms (a field beside the 2-second DOS time,
                // which the mount's `stat` shows: crates/fat/tests/exfat_tools.rs); fls leaves that field out, so
                // its seconds are up to one behind.
                for (k, (ours, tsk)) in t.iter().zip(times).enumerate() {
                    let (o, s): (u64, u64) = (ours.parse().unwrap(), tsk.parse().unwrap());
                    let slack = if k == 1 || k == 3 { 1 } else { 0 };
                    assert!(
                        o >= s && o - s <= slack,
                        "{kind}: times (a|m|c|cr) of {path}: {t:?} against fls's {times:?}"
                    );
                }
            } else {
                assert_eq!(t, times, "{kind}: times (a|m|c|cr) of {path}");
            }
            if !dirs.contains(path) {
                assert_eq!(s, size, "{kind}: size of {path}");
            }
        }
        // Every path TSK lists (but the label entry and $OrphanFiles) is in ours.
        let missing: Vec<&String> = theirs
            .keys()
            .filter(|p| !tsk_only(p) && !ours.contains_key(*p))
            .collect();
        assert!(
            missing.is_empty(),
            "{kind}: not in uffs's body file: {missing:?}"
        );
        assert!(compared > 15, "{kind}: {compared}");
    }
}

/// (clusters in use, bytes in use) from `uffs info --json`.
fn info_json(img: &Path) -> serde_json::Value {
    serde_json::from_slice(&run_ok(uffs().arg("info").arg(img).arg("--json")).stdout).unwrap()
}

#[test]
fn du_allocated_equals_the_table_and_fsck_or_the_bitmap() {
    for (kind, _t, img) in volumes("du") {
        let du =
            String::from_utf8(run_ok(uffs().arg("du").arg("--source").arg(&img)).stdout).unwrap();
        let note = du.lines().last().unwrap();
        assert!(note.ends_with(": equal"), "{kind}: {du}");
        let info = info_json(&img);
        let v = &info["volumes"][0];
        // The bytes the note says the table marks in use are the volume's bytes in use.
        let marked: u64 = note
            .split_once('(')
            .unwrap()
            .1
            .split(' ')
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap();
        assert_eq!(
            marked,
            v["bytes_in_use"].as_u64().unwrap(),
            "{kind}: {note}"
        );
        let in_use = v["clusters_in_use"].as_u64().unwrap();
        let total = v["clusters_total"].as_u64().unwrap();
        if kind == "exFAT" {
            // The allocation bitmap, read by icat, counted.
            let bitmap_inode = fls(&img, &[])
                .into_iter()
                .find(|e| e.path == "/$ALLOC_BITMAP")
                .unwrap()
                .inode;
            let bits = icat(&img, bitmap_inode);
            let set: u64 = (0..total)
                .filter(|&i| bits[(i / 8) as usize] & (1 << (i % 8)) != 0)
                .count() as u64;
            assert_eq!(in_use, set, "exFAT: clusters in use vs $ALLOC_BITMAP");
            let dump = String::from_utf8(out("dump.exfat", &[path_str(&img)])).unwrap();
            let dump_total: u64 = dump
                .lines()
                .find(|l| l.starts_with("Total Clusters:"))
                .unwrap()
                .split_whitespace()
                .last()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(total, dump_total, "exFAT: total clusters vs dump.exfat");
        } else {
            let o = peer("fsck.fat")
                .args(["-n", "-v"])
                .arg(&img)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&o.stdout);
            let last = text.lines().last().unwrap();
            // "IMG: N files, USED/TOTAL clusters"
            let (used, all) = last
                .rsplit(", ")
                .next()
                .unwrap()
                .trim_end_matches(" clusters")
                .split_once('/')
                .unwrap();
            assert_eq!(in_use.to_string(), used, "{kind}: {last}");
            assert_eq!(total.to_string(), all, "{kind}: {last}");
        }
    }
}

#[test]
fn info_names_the_file_system_and_shows_used_and_free() {
    for (kind, _t, img) in volumes("info") {
        let text = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with("file system") && l.trim_end().ends_with(kind)),
            "{kind}: {text}"
        );
        assert!(
            text.contains("used clusters") || text.contains("used"),
            "{text}"
        );
        assert!(text.contains("free"), "{text}");
        let v = info_json(&img);
        assert_eq!(v["volumes"][0]["filesystem"], kind, "{v}");
        assert!(
            v["volumes"][0]["bytes_free"].as_u64().unwrap() > 1 << 20,
            "{v}"
        );
    }
}

/// Days since 1970-01-01 as `YYYY-MM-DD` (civil calendar).
fn ymd(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[test]
fn queries_match_what_tsk_says() {
    for (kind, _t, img) in volumes("query") {
        let src = path_str(&img);
        let q = |args: &[&str]| {
            let mut a = vec!["--source", src];
            a.extend_from_slice(args);
            query(&a)
        };
        let live = fls(&img, &["-u"]);
        let meta: BTreeSet<String> = live
            .iter()
            .filter(|e| e.kind == "v/v" || e.path.starts_with("/$"))
            .map(|e| e.path.clone())
            .collect();
        // Attributes, from istat's "File Attributes" line.
        let with_attr = |word: &str| -> BTreeSet<String> {
            live.iter()
                .filter(|e| e.kind != "v/v" && !e.path.starts_with("/$"))
                .filter(|e| {
                    String::from_utf8(out("istat", &[src, e.inode.to_string().as_str()]))
                        .unwrap()
                        .lines()
                        .any(|l| l.starts_with("File Attributes") && l.contains(word))
                })
                .map(|e| e.path.clone())
                .collect()
        };
        for (term, word) in [("attrib:h", "Hidden"), ("attrib:r", "Read Only")] {
            let got: BTreeSet<String> = q(&[term]).difference(&meta).cloned().collect();
            assert_eq!(got, with_attr(word), "{kind}: {term}");
        }
        if kind != "exFAT" {
            assert!(q(&["attrib:h"]).contains("/hidden file.txt"));
            assert!(q(&["attrib:r"]).contains("/read only.txt"));
        }
        // ext:txt
        let txt: BTreeSet<String> = live
            .iter()
            .filter(|e| e.kind == "r/r" && e.path.to_lowercase().ends_with(".txt"))
            .map(|e| e.path.clone())
            .collect();
        assert_eq!(q(&["ext:txt"]), txt, "{kind}: ext:txt");
        // size:>3000, sizes from icat.
        let big: BTreeSet<String> = live
            .iter()
            .filter(|e| e.kind == "r/r" || e.kind == "v/v")
            .filter(|e| icat(&img, e.inode).len() > 3000)
            .map(|e| e.path.clone())
            .collect();
        assert_eq!(q(&["size:>3000"]), big, "{kind}: size:>3000");
        // folder:
        let dirs: BTreeSet<String> = live
            .iter()
            .filter(|e| e.kind == "d/d")
            .map(|e| e.path.clone())
            .collect();
        assert_eq!(q(&["folder:"]), dirs, "{kind}: folder:");
        // Unicode substrings.
        for sub in ["ñame", "ファイル"] {
            let want: BTreeSet<String> = live
                .iter()
                .filter(|e| e.path.rsplit('/').next().unwrap().contains(sub))
                .map(|e| e.path.clone())
                .collect();
            assert_eq!(want.len(), 1, "{kind}: {sub}");
            // Marks as written (by default `ñame` finds `name` too, as in Everything).
            assert_eq!(q(&[&format!("diacritics:{sub}")]), want, "{kind}: {sub}");
        }
        // dm: on the day the volume was written (TZ=UTC), from fls -m's mtime.
        let body = fls_body(&img, &[]);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let today = ymd(now / 86_400);
        let want: BTreeSet<String> = live
            .iter()
            .filter(|e| {
                body.get(&e.path)
                    .and_then(|(_, _, t)| t[1].parse::<i64>().ok())
                    .is_some_and(|m| m > 0 && ymd(m / 86_400) == today)
            })
            .map(|e| e.path.clone())
            .collect();
        assert!(want.len() > 10, "{kind}: {want:?}");
        assert_eq!(q(&[&format!("dm:{today}")]), want, "{kind}: dm:{today}");
        assert!(q(&["dm:2001-01-01"]).is_empty(), "{kind}");
    }
}

/// `uffs --source SRC '*'`: every path.
fn all_paths(src: &str) -> BTreeSet<String> {
    query(&["--source", src, "*"])
}

/// Writes the partition table `script` (sfdisk's input) onto `disk`.
fn sfdisk(disk: &Path, script: &str) {
    use std::io::Write;
    let mut sf = peer("sfdisk")
        .arg("--quiet")
        .arg(disk)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    sf.stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(sf.wait().unwrap().success());
}

fn write_at(disk: &Path, img: &Path, sector: u64) {
    run_ok(
        Command::new("dd")
            .arg(format!("if={}", img.display()))
            .arg(format!("of={}", disk.display()))
            .args([
                "bs=512",
                &format!("seek={sector}"),
                "conv=notrunc",
                "status=none",
            ]),
    );
}

#[test]
fn mbr_disk_with_fat32_and_exfat_partitions() {
    let t = Tmp::new("mbr");
    let fat = build_fat(&t, 32);
    let Some(ex) = build_exfat(&t) else { return };
    let fat_sectors = std::fs::metadata(&fat).unwrap().len() / 512;
    let ex_sectors = std::fs::metadata(&ex).unwrap().len() / 512;
    let p2 = (2048 + fat_sectors).div_ceil(2048) * 2048;
    let disk = t.path("disk.img");
    std::fs::File::create(&disk)
        .unwrap()
        .set_len((p2 + ex_sectors + 2048) * 512)
        .unwrap();
    sfdisk(
        &disk,
        &format!(
            "label: dos\nstart=2048, size={fat_sectors}, type=c\nstart={p2}, size={ex_sectors}, type=7\n"
        ),
    );
    write_at(&disk, &fat, 2048);
    write_at(&disk, &ex, p2);

    let d = path_str(&disk);
    let info = String::from_utf8(run_ok(uffs().args(["info", d])).stdout).unwrap();
    assert!(info.contains("FAT32") && info.contains("exFAT"), "{info}");
    let j = info_json(&disk);
    let fs: Vec<&str> = j["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["filesystem"].as_str().unwrap())
        .collect();
    assert_eq!(fs, ["FAT32", "exFAT"], "{j}");

    let mut want: BTreeSet<String> = all_paths(path_str(&fat))
        .into_iter()
        .map(|p| format!("@1:{p}"))
        .collect();
    want.extend(
        all_paths(path_str(&ex))
            .into_iter()
            .map(|p| format!("@2:{p}")),
    );
    assert_eq!(all_paths(d), want);
    // `fsi:` is a volume's place on the disk, from 0 (Everything's file-system index).
    let second: BTreeSet<String> = want
        .iter()
        .filter(|p| p.starts_with("@2:"))
        .cloned()
        .collect();
    assert_eq!(query(&["--source", d, "fsi:1"]), second);
    assert_eq!(query(&["--source", d, "!fsi:0"]), second);
    assert!(query(&["--source", d, "fsi:2"]).is_empty());
    // Parquet's `path` has one form for every partition: the path within the volume, the volume in its own
    // column (schema 3), so `path LIKE '/frag/%'` finds both partitions' (issue 59), as an export and as a
    // query's hits.
    let pq = t.path("disk.parquet");
    let hits = t.path("hits.parquet");
    run_ok(
        uffs()
            .args(["export", d, "--format", "parquet", "-o"])
            .arg(&pq),
    );
    run_ok(
        uffs()
            .args(["--source", d, "*", "--format", "parquet", "-o"])
            .arg(&hits),
    );
    for f in [&pq, &hits] {
        let script = format!(
            "import duckdb\nfor v, p in duckdb.sql(\"select volume, path from read_parquet('{}') where coalesce(record <> parent_record, true)\").fetchall(): print(v + '\\t' + p)",
            f.display()
        );
        let got = client_stdout(Command::new(python("DuckDB")).args(["-c", &script]));
        assert!(
            got.lines()
                .all(|l| l.split('\t').nth(1).is_some_and(|p| p.starts_with('/'))),
            "{got}"
        );
        let got: BTreeSet<String> = got.lines().map(|l| l.replacen('\t', ":", 1)).collect();
        assert_eq!(got, want, "{}", f.display());
        let script = format!(
            "import duckdb;print(duckdb.sql(\"select string_agg(distinct volume, ',' order by volume) from read_parquet('{}') where path like '/frag/%'\").fetchone()[0])",
            f.display()
        );
        let got = client_stdout(Command::new(python("DuckDB")).args(["-c", &script]));
        assert_eq!(got.trim(), "@1,@2", "{}", f.display());
    }

    assert_eq!(
        export_csv(&t.path("disk.img@2"), &["--deleted"]),
        export_csv(&ex, &["--deleted"]),
        "disk.img@2 exports as the bare exFAT volume"
    );
    assert_eq!(
        export_csv(&t.path("disk.img@1"), &["--deleted"]),
        export_csv(&fat, &["--deleted"])
    );
    let cat =
        run_ok(uffs().args(["cat", &format!("{d}@2"), "/frag/Big Fragmented File.bin"])).stdout;
    assert_eq!(cat, pattern(40_000, 99));
    // A command of one volume names the disk's volumes as what they are, not as NTFS ones.
    let out = uffs()
        .args(["cat", d, "/frag/Big Fragmented File.bin"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("holds 2 volumes") && !err.contains("NTFS"),
        "{err}"
    );
}

#[test]
fn gpt_disk_with_a_fat32_efi_system_partition() {
    let t = Tmp::new("gpt");
    let fat = build_fat(&t, 32);
    let sectors = std::fs::metadata(&fat).unwrap().len() / 512;
    let disk = t.path("gpt.img");
    std::fs::File::create(&disk)
        .unwrap()
        .set_len((sectors + 4096) * 512)
        .unwrap();
    out(
        "sgdisk",
        &[
            "-n",
            &format!("1:2048:{}", 2048 + sectors - 1),
            "-t",
            "1:ef00",
            "-c",
            "1:EFI system partition",
            path_str(&disk),
        ],
    );
    write_at(&disk, &fat, 2048);
    let j = info_json(&disk);
    assert_eq!(j["volumes"][0]["filesystem"], "FAT32", "{j}");
    // The type by its name and the partition's own name, as sgdisk wrote them.
    assert_eq!(j["partitions"][0]["type"], "efi-system", "{j}");
    assert_eq!(j["partitions"][0]["name"], "EFI system partition", "{j}");
    let info = String::from_utf8(run_ok(uffs().args(["info", path_str(&disk)])).stdout).unwrap();
    assert!(
        info.contains("type efi-system") && info.contains("name \"EFI system partition\""),
        "{info}"
    );
    assert_eq!(
        export_csv(&t.path("gpt.img@1"), &["--deleted"]),
        export_csv(&fat, &["--deleted"])
    );
    // A disk with one volume searches as that volume: its paths carry no `@1:`.
    let got: BTreeSet<String> = all_paths(path_str(&disk))
        .into_iter()
        .map(|p| p.strip_prefix("@1:").map(String::from).unwrap_or(p))
        .collect();
    assert_eq!(got, all_paths(path_str(&fat)));
}

#[test]
fn fat32_as_qcow2_and_vhd_reads_as_the_raw_image() {
    let t = Tmp::new("containers");
    let fat = build_fat(&t, 32);
    let raw = export_csv(&fat, &["--deleted"]);
    for (fmt, ext) in [("qcow2", "qcow2"), ("vpc", "vhd")] {
        let c = t.path(&format!("fat32.{ext}"));
        common::containers::qemu_convert(fmt, &fat, &c, &[]);
        assert_eq!(export_csv(&c, &["--deleted"]), raw, "{fmt}");
        for p in ["/frag/Big Fragmented File.bin", "/deep/level1/needle.txt"] {
            assert_eq!(
                run_ok(uffs().arg("cat").arg(&c).arg(p)).stdout,
                run_ok(uffs().arg("cat").arg(&fat).arg(p)).stdout,
                "{fmt}: {p}"
            );
        }
    }
}

#[test]
fn parquet_of_a_fat_volume_has_the_csv_rows_and_sizes() {
    for (kind, t, img) in volumes("parquet") {
        let f = t.path("f.parquet");
        run_ok(
            uffs()
                .arg("export")
                .arg(&img)
                .args(["--format", "parquet", "--deleted", "-o"])
                .arg(&f),
        );
        let csv = rows(&img, &["--deleted"]);
        let sum: u64 = csv.iter().map(|r| r["size"].parse::<u64>().unwrap()).sum();
        let script = format!(
            "import duckdb;r=duckdb.sql(\"select count(*), sum(size) from read_parquet('{}')\").fetchone();print(r[0], r[1])",
            f.display()
        );
        let got = client_stdout(Command::new(python("DuckDB")).args(["-c", &script]));
        assert_eq!(got.trim(), format!("{} {sum}", csv.len()), "{kind}");
    }
}

#[test]
fn serve_on_a_fat_source_answers_as_the_cli() {
    let t = Tmp::new("serve");
    let img = build_fat(&t, 32);
    let runtime = t.path("run");
    let mut child = uffs()
        .args(["serve", "--source", path_str(&img), "--bind", "127.0.0.1:0"])
        .env("UFFS_RUNTIME_DIR", &runtime)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    use std::io::{BufRead, BufReader, Read, Write};
    let stdout = child.stdout.take().unwrap();
    let _guard = Kill(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let rest = line
        .trim()
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("no URL: {line:?}"));
    let (port, token) = rest.split_once("/?token=").unwrap();
    let get = |path: &str| -> serde_json::Value {
        let mut s =
            std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).unwrap();
        let body = buf.split_once("\r\n\r\n").unwrap().1;
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {buf}"))
    };
    for q in ["ext:txt", "ñame", "size:>3000", "folder:", "attrib:h"] {
        let v = get(&format!("/api/search?q={}&columns=path&limit=1000", enc(q)));
        let got: BTreeSet<String> = v["rows"]
            .as_array()
            .unwrap_or_else(|| panic!("{q}: {v}"))
            .iter()
            .map(|r| r["path"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, query(&["--source", path_str(&img), q]), "{q}");
    }
}

/// Runs `uffs ARGS` with a deadline: (exit code, stderr); panics when it hangs or panics.
fn bounded(args: &[&str], secs: u64) -> (i32, String) {
    let mut c = uffs()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = c.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(secs) {
            let _ = c.kill();
            let _ = c.wait();
            panic!("uffs {args:?} still runs after {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = reader.join().unwrap();
    assert!(!err.contains("panicked"), "uffs {args:?} panicked: {err}");
    (status.code().unwrap_or(-1), err)
}

#[test]
fn damaged_fat32_truncated_or_looping_never_hangs_or_panics() {
    let t = Tmp::new("damaged");
    let fat = build_fat(&t, 32);
    let bytes = std::fs::read(&fat).unwrap();
    let reserved = u16::from_le_bytes([bytes[14], bytes[15]]) as usize * 512;
    let fat_size = u32::from_le_bytes(bytes[36..40].try_into().unwrap()) as usize * 512;
    // Truncated: inside the first FAT (the root folder is gone), and after the root folder's one cluster (the
    // other folders are gone).
    let cut = t.path("truncated-fat.img");
    std::fs::write(&cut, &bytes[..100_000]).unwrap();
    let cut2 = t.path("truncated-data.img");
    std::fs::write(&cut2, &bytes[..reserved + 2 * fat_size + 512]).unwrap();
    // A looping chain: the root folder's and the next cluster's FAT entries point to themselves, in both FATs.
    let lp = t.path("loop.img");
    let mut b = bytes.clone();
    for copy in 0..2 {
        for cluster in [2u32, 3, 5] {
            let o = reserved + copy * fat_size + cluster as usize * 4;
            b[o..o + 4].copy_from_slice(&cluster.to_le_bytes());
        }
    }
    std::fs::write(&lp, &b).unwrap();
    // The root folder's chain 2 -> 4 -> 2 (fsck.fat: "Circular cluster chain").
    let lp2 = t.path("loop2.img");
    let mut b = bytes.clone();
    for copy in 0..2 {
        for (from, to) in [(2usize, 4u32), (4, 2)] {
            let o = reserved + copy * fat_size + from * 4;
            b[o..o + 4].copy_from_slice(&to.to_le_bytes());
        }
    }
    std::fs::write(&lp2, &b).unwrap();
    let mut silent = Vec::new();
    for img in [&cut, &cut2, &lp, &lp2] {
        let s = path_str(img);
        let (code, err) = bounded(&["--source", s, "*"], 60);
        assert!(code == 0 || code == 3, "{s}: exit {code}: {err}");
        // A FAT32 image cut short (even inside the FAT, the root folder lost) or with a circular cluster chain
        // (fsck.fat: "Circular cluster chain") must say what it skipped.
        if !err.to_lowercase().contains("warning") {
            silent.push(format!("{s}: exit {code} and no warning on stderr: {err}"));
        }
        let (code, err) = bounded(&["export", s, "--deleted"], 60);
        assert!(code == 0 || code == 3, "{s}: export exit {code}: {err}");
        bounded(&["du", "--source", s], 60);
        bounded(&["info", s], 60);
        bounded(&["cat", s, "/frag/Big Fragmented File.bin"], 60);
    }
    assert!(silent.is_empty(), "{silent:#?}");
}

/// mtools' `mdir -/ -a` listing: (folder, 8.3 name, long name) of every entry that has a long name.
fn mdir_aliases(img: &Path) -> Vec<(String, String, String)> {
    let text = String::from_utf8(out("mdir", &["-/", "-a", "-i", path_str(img), "::/"])).unwrap();
    let mut dir = String::new();
    let mut v = Vec::new();
    for line in text.lines() {
        if let Some(d) = line.strip_prefix("Directory for ::") {
            dir = d.trim_end_matches('/').to_string();
            continue;
        }
        // `NAME     EXT  SIZE|<DIR> DATE  TIME  LONG NAME`: 8 + 1 + 3 columns (characters, which an 8.3 name in
        // code page 850 may have beyond ASCII), the long name after two spaces.
        let chars: Vec<char> = line.chars().collect();
        let text = |r: std::ops::Range<usize>| chars.get(r).map(|c| c.iter().collect::<String>());
        let (Some(base), Some(ext), Some(rest)) = (text(0..8), text(9..12), text(12..chars.len()))
        else {
            continue;
        };
        let (base, ext, rest) = (base.as_str(), ext.as_str(), rest.as_str());
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let plausible = fields.len() >= 4
            && (fields[0] == "<DIR>" || fields[0].parse::<u64>().is_ok())
            && !base.starts_with(' ');
        if !plausible {
            continue;
        }
        let Some((_, long)) = rest.split_once(&format!("{}  ", fields[2])) else {
            continue;
        };
        let (base, ext) = (base.trim_end(), ext.trim_end());
        let short = if ext.is_empty() {
            base.to_string()
        } else {
            format!("{base}.{ext}")
        };
        v.push((dir.clone(), short, long.to_string()));
    }
    v
}

#[test]
fn an_8_3_alias_finds_its_long_named_file_as_mdir_pairs_them() {
    let t = Tmp::new("alias");
    let img = build_fat(&t, 32);
    // Names Windows and mtools give an 8.3 alias: spaces, long, lower case, several dots.
    for d in ["Program Files", "Program Files/Common Files"] {
        mtools("mmd", &img, &[&format!("::/{d}")]);
    }
    let f = t.path("x.txt");
    std::fs::write(&f, b"x").unwrap();
    for name in [
        "Program Files/Common Files/a long name.tar.gz",
        "Program Files/readme.txt",
    ] {
        mtools("mcopy", &img, &[path_str(&f), &format!("::/{name}")]);
    }
    let pairs = mdir_aliases(&img);
    assert!(
        pairs
            .iter()
            .any(|(_, s, l)| s == "PROGRA~1" && l == "Program Files"),
        "mdir's listing: {pairs:?}"
    );
    // mdir shows 8.3 names in code page 850 (`ÜNÏCØD~1.TXT` for the Unicode file's).
    let index = t.path("v.uffs");
    run_ok(uffs().args([
        "index",
        path_str(&img),
        "-o",
        path_str(&index),
        "--fat-codepage",
        "850",
    ]));
    for (dir, short, long) in &pairs {
        let want = format!("{dir}/{long}");
        // From the source, from the index file, case ignored; with case: as written on disk.
        for args in [
            vec![
                "--source",
                path_str(&img),
                "--fat-codepage",
                "850",
                short.as_str(),
            ],
            vec!["--index", path_str(&index), &short.to_lowercase()],
            vec!["--index", path_str(&index), &format!("case:{short}")],
        ] {
            let found = query(&args);
            assert!(
                found.contains(&want),
                "{args:?} found {found:?}, not {want}"
            );
        }
    }
    // A name's alias is not an entry of its own: PROGRA~1 gives one path, the folder's.
    let found = query(&["--index", path_str(&index), "regex:^progra~1$"]);
    assert_eq!(found, BTreeSet::from(["/Program Files".to_string()]));
}

/// 8.3 names in code page 850, as mtools writes them (its default) and `mdir` shows them: read so with
/// `--fat-codepage 850` (or UFFS_FAT_CODEPAGE), found by the name `mdir` shows, and exported in the `alias` column
/// (issue 59: `JÓGA(R~1.MP3` was read as `JαGA(R~1.MP3`, code page 437).
#[test]
fn an_8_3_name_in_code_page_850_is_read_as_mdir_shows_it() {
    let t = Tmp::new("cp850");
    let img = t.path("v.img");
    out("mkfs.vfat", &["-C", path_str(&img), "2048"]);
    let f = t.path("x.txt");
    std::fs::write(&f, b"x").unwrap();
    // A long name with an alias, and a name that is only an 8.3 one (no long name kept).
    for name in ["Jóga (Relax) mix.mp3", "ÓRA.TXT"] {
        mtools("mcopy", &img, &[path_str(&f), &format!("::/{name}")]);
    }
    let pairs = mdir_aliases(&img);
    assert!(
        pairs
            .iter()
            .any(|(_, s, l)| s == "JÓGA(R~1.MP3" && l == "Jóga (Relax) mix.mp3"),
        "mdir's listing: {pairs:?}"
    );
    let s = path_str(&img);
    let want = BTreeSet::from(["/Jóga (Relax) mix.mp3".to_string()]);
    assert_eq!(
        query(&["--source", s, "--fat-codepage", "850", "\"JÓGA(R~1.MP3\""]),
        want
    );
    assert_eq!(
        query(&["--source", s, "--fat-codepage", "cp850", "ÓRA.TXT"]),
        BTreeSet::from(["/ÓRA.TXT".to_string()])
    );
    // Code page 437 (the default) reads the same bytes as other letters.
    assert!(query(&["--source", s, "\"JÓGA(R~1.MP3\""]).is_empty());
    assert_eq!(
        query(&["--source", s, "αRA.TXT"]),
        BTreeSet::from(["/αRA.TXT".to_string()])
    );
    // The environment says it too; an index keeps what it was built with.
    let o = uffs()
        .env("UFFS_FAT_CODEPAGE", "850")
        .args(["--source", s, "ÓRA.TXT"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "/ÓRA.TXT");
    let index = t.path("v.uffs");
    run_ok(uffs().args(["index", s, "-o", path_str(&index), "--fat-codepage", "850"]));
    assert_eq!(query(&["--index", path_str(&index), "jóga(r~1.mp3"]), want);
    // The alias column, in every export format.
    let csv = rows(&img, &["--fat-codepage", "850"]);
    let mp3 = csv
        .iter()
        .find(|r| r["name"] == "Jóga (Relax) mix.mp3")
        .expect("the mp3's row");
    assert_eq!(mp3["alias"], "JÓGA(R~1.MP3");
    assert!(csv
        .iter()
        .filter(|r| r["name"] != "Jóga (Relax) mix.mp3")
        .all(|r| r["alias"].is_empty()));
    let printed = run_ok(uffs().args([
        "--source",
        s,
        "--fat-codepage",
        "850",
        "*.mp3",
        "--format",
        "csv",
        "--columns",
        "name,alias",
    ]))
    .stdout;
    assert_eq!(
        String::from_utf8_lossy(&printed).trim(),
        "name,alias\nJóga (Relax) mix.mp3,JÓGA(R~1.MP3"
    );
    let pq = t.path("v.parquet");
    run_ok(
        uffs()
            .args([
                "export",
                s,
                "--fat-codepage",
                "850",
                "--format",
                "parquet",
                "-o",
            ])
            .arg(&pq),
    );
    let script = format!(
        "import duckdb;print(duckdb.sql(\"select alias from read_parquet('{}') where alias <> ''\").fetchall())",
        pq.display()
    );
    let got = client_stdout(Command::new(python("DuckDB")).args(["-c", &script]));
    assert_eq!(got.trim(), "[('JÓGA(R~1.MP3',)]");
    // A code page uffs does not have is refused with those it has.
    let o = uffs()
        .args(["--source", s, "--fat-codepage", "1252", "x"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("437, 850, 852, 866"), "{err}");
}

/// `deleted:` on a source builds its index with the deleted entries (as `--deleted` does), and on an index file
/// built without them says why it finds none.
#[test]
fn a_deleted_term_reads_a_sources_deleted_entries_and_says_when_an_index_has_none() {
    let t = Tmp::new("deleted-term");
    let img = t.path("d.img");
    out("mkfs.vfat", &["-C", path_str(&img), "4096"]);
    for (name, body) in [("keep.txt", "kept"), ("gone.txt", "deleted soon")] {
        std::fs::write(t.path(name), body).unwrap();
        mtools("mcopy", &img, &[path_str(&t.path(name)), "::/"]);
    }
    mtools("mdel", &img, &["::/gone.txt"]);
    let lines = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
    // TSK's name for a deleted 8.3 entry: its first letter is lost.
    let found = run_ok(uffs().args(["--source", path_str(&img), "deleted:"]));
    assert_eq!(lines(&found).trim(), "/_one.txt");

    let idx = t.path("d.uffs");
    run_ok(uffs().args(["index", path_str(&img), "-o", path_str(&idx)]));
    let none = uffs()
        .args(["--index", path_str(&idx), "deleted:"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(1), "{err}");
    assert!(
        err.contains("built without deleted entries") && err.contains("uffs index --deleted"),
        "{err}"
    );
}

/// A disk image cut short inside its first partition: the partitions wholly past its end are named, by `info`
/// and by a search (which exits 3: its answer is partial), not left out without a word.
#[test]
fn a_disk_cut_short_names_every_partition_it_cut_off() {
    let t = Tmp::new("cut-disk");
    let part = t.path("p.img");
    out("mkfs.vfat", &["-C", path_str(&part), "2048"]);
    std::fs::write(t.path("a.txt"), "x").unwrap();
    mtools("mcopy", &part, &[path_str(&t.path("a.txt")), "::/"]);
    let disk = t.path("disk.img");
    std::fs::File::create(&disk)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    sfdisk(
        &disk,
        "label: dos\nstart=2048, size=4096, type=1\nstart=6144, size=4096, type=1\nstart=10240, size=4096, type=1\n",
    );
    for sector in [2048, 6144, 10240] {
        write_at(&disk, &part, sector);
    }
    // Cut inside partition 1.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&disk)
        .unwrap()
        .set_len((2048 * 512) + (1 << 20))
        .unwrap();
    let d = path_str(&disk);
    let info = uffs().args(["info", d]).output().unwrap();
    let text = String::from_utf8_lossy(&info.stdout);
    for n in [2, 3] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("partition     @{n} ")))
            .unwrap_or_else(|| panic!("no partition {n}: {text}"));
        assert!(line.contains("cut off"), "{line}");
    }
    assert_eq!(info.status.code(), Some(3));
    let j = uffs().args(["info", d, "--json"]).output().unwrap().stdout;
    let j: serde_json::Value = serde_json::from_slice(&j).unwrap();
    assert_eq!(j["partitions"][1]["cut_off"], true, "{j}");
    assert_eq!(j["partitions"][0]["cut_off"], false, "{j}");

    let found = uffs().args(["--source", d, "a.txt"]).output().unwrap();
    let err = String::from_utf8_lossy(&found.stderr);
    assert_eq!(found.status.code(), Some(3), "{err}");
    assert_eq!(String::from_utf8_lossy(&found.stdout).trim(), "/a.txt");
    for n in [2, 3] {
        assert!(err.contains(&format!("disk.img@{n} is cut off")), "{err}");
    }
    assert!(err.contains("disk.img@1 is truncated"), "{err}");
}
