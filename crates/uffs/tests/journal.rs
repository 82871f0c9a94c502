//! `uffs journal`: golden checks on real `$J` fragments written by Windows, and parity with The Sleuth Kit's
//! `usnjls` on an NTFS volume whose `$Extend/$UsnJrnl:$J` holds them.
//!
//! The volume is made with mkntfs and ntfscp (no FUSE mount): ntfscp creates `$Extend/$UsnJrnl` and writes the
//! `$J` and `$Max` streams; the test then removes the file's empty unnamed `$DATA`, which Windows' `$UsnJrnl`
//! does not have and which `usnjls` would read instead of `$J`.

// Peers (usnjls, ntfscp) and the ntfs-3g mount are Linux tools.
#![cfg(unix)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use common::{csv_rows, data, run_ok, scratch, tool, uffs};
use uffs_ntfs::record::apply_fixups;

const PLASO: &str = "usn/plaso-UsnJrnl.raw";
const GO_NTFS: &str = "usn/go-ntfs-usn-sample.bin";
const PARSER: &str = "usn/usn-journal-parser-usnjrnl.bin";

fn journal_rows(source: &Path, extra: &[&str]) -> Vec<HashMap<String, String>> {
    let out = run_ok(uffs().arg("journal").arg(source).args(extra));
    csv_rows(&out.stdout)
}

#[test]
fn raw_captures_golden() {
    let rows = journal_rows(&data(PLASO), &[]);
    assert_eq!(rows.len(), 19);
    let r0 = &rows[0];
    assert_eq!(r0["usn"], "0");
    assert_eq!(r0["timestamp"], "2015-11-30T21:15:27.2031250Z");
    assert_eq!(r0["reasons"], "FILE_CREATE");
    assert_eq!(r0["name"], "Nieuw - Tekstdocument.txt");
    assert_eq!(
        (r0["file_record"].as_str(), r0["file_sequence"].as_str()),
        ("30", "1")
    );
    assert_eq!(
        (r0["parent_record"].as_str(), r0["parent_sequence"].as_str()),
        ("5", "5")
    );
    assert_eq!(
        (r0["attributes"].as_str(), r0["security_id"].as_str()),
        ("a", "260")
    );
    assert_eq!((r0["path"].as_str(), r0["version"].as_str()), ("", "2"));
    let names: BTreeSet<&str> = rows.iter().map(|r| r["name"].as_str()).collect();
    for n in ["first.txt", "second.txt", "Kopie van first.txt"] {
        assert!(names.contains(n), "{n} missing from {names:?}");
    }
    assert_eq!(rows[18]["reasons"], "OBJECT_ID_CHANGE|CLOSE");

    let rows = journal_rows(&data(GO_NTFS), &[]);
    assert_eq!(rows.len(), 208);
    assert_eq!(rows[0]["usn"], "312568880");
    assert_eq!(rows[0]["name"], "GenericProvider.dll");
    assert_eq!(rows[200]["name"], "SVCHOST.EXE-B1C43117.pf");
    assert_eq!(rows[207]["name"], "DeviceHealth.json");
    let rows = journal_rows(&data(GO_NTFS), &["--since", "312579608"]);
    assert_eq!(rows[0]["usn"], "312579608");
    assert_eq!(
        rows[0]["name"],
        "COMPONENTS{ad0bfc4b-1201-11eb-99b8-000c29757139}.TM.blf"
    );

    let rows = journal_rows(&data(PARSER), &[]);
    assert_eq!(rows.len(), 6);
    assert_eq!(
        rows[0]["reasons"],
        "RENAME_NEW_NAME|TRANSACTED_CHANGE|CLOSE"
    );

    // JSON lines and the table carry the same records.
    let out = run_ok(
        uffs()
            .arg("journal")
            .arg(data(PLASO))
            .args(["--format", "jsonl"]),
    );
    let lines: Vec<serde_json::Value> = out
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 19);
    assert_eq!(lines[3]["name"], "first.txt");
    assert_eq!(lines[3]["usn"], 336);
    let out = run_ok(
        uffs()
            .arg("journal")
            .arg(data(PLASO))
            .args(["--format", "table"]),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 20);
}

#[test]
fn a_volume_without_a_journal_is_an_error() {
    let out = uffs()
        .arg("journal")
        .arg(data("linux-made/testfs1"))
        .output()
        .expect("run uffs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has no USN change journal ($Extend/$UsnJrnl)") && err.lines().count() == 1,
        "{err}"
    );
}

/// `-o FILE` writes through a temporary file renamed into place: the file holds what stdout would, and a run
/// that fails leaves an earlier FILE as it was and no temporary beside it.
#[test]
fn journal_output_files_are_whole_or_untouched() {
    let dir = scratch("journal-output");
    let out = dir.join("j.csv");
    run_ok(uffs().arg("journal").arg(data(PLASO)).arg("-o").arg(&out));
    let stdout = run_ok(uffs().arg("journal").arg(data(PLASO))).stdout;
    assert_eq!(std::fs::read(&out).unwrap(), stdout);
    let failed = uffs()
        .arg("journal")
        .arg(data("linux-made/testfs1"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(2));
    assert_eq!(std::fs::read(&out).unwrap(), stdout);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["j.csv"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// The three samples in one `$J`, each starting on a page and the go-ntfs one at its own offset in its page (its
/// first USN is 3120 bytes into a page), so every record sits in the page Windows wrote it in.
fn combined_j() -> Vec<u8> {
    let read = |p: &str| std::fs::read(data(p)).expect("sample");
    let mut j = read(PLASO);
    j.resize(4096, 0);
    j.extend(read(PARSER));
    j.resize(8192 + 312_568_880 % 4096, 0);
    j.extend(read(GO_NTFS));
    j
}

/// An NTFS volume whose `$Extend/$UsnJrnl` has `$J` = `j` and a `$Max`; returns its path.
fn volume_with_journal(dir: &Path, j: &[u8]) -> PathBuf {
    let img = dir.join("journal.img");
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(16 << 20))
        .expect("image");
    run_ok(
        tool("mkntfs")
            .args(["-q", "-F", "-f", "-L", "journal"])
            .arg(&img),
    );
    let (empty, jf, maxf) = (dir.join("empty"), dir.join("J"), dir.join("Max"));
    std::fs::write(&empty, b"").unwrap();
    std::fs::write(&jf, j).unwrap();
    let mut max = Vec::new();
    for v in [32u64 << 20, 8 << 20, 0x01D1_2BB4_0000_0001, 0] {
        max.extend(v.to_le_bytes());
    }
    std::fs::write(&maxf, &max).unwrap();
    let target = "/$Extend/$UsnJrnl";
    run_ok(tool("ntfscp").arg("-f").arg(&img).arg(&empty).arg(target));
    for (name, file) in [("$J", &jf), ("$Max", &maxf)] {
        run_ok(
            tool("ntfscp")
                .args(["-f", "-a", "0x80", "-N", name])
                .arg(&img)
                .arg(file)
                .arg(target),
        );
    }
    remove_unnamed_data(&img);
    img
}

/// Removes the unnamed `$DATA` attribute of `$UsnJrnl`'s record in place.
fn remove_unnamed_data(img: &Path) {
    let src = uffs_source::open(img.to_str().unwrap(), None).expect("open volume");
    let vol = &src.volumes[0];
    let (idx, _) =
        uffs_mft::build_index(vol, &uffs_mft::ScanOptions::default(), &|_, _| {}).expect("index");
    let number = uffs_mft::journal::find_usnjrnl_record(&idx).expect("$UsnJrnl in the index");
    let rs = vol.record_size as usize;
    let at = number * rs as u64;
    let run = vol
        .runs
        .iter()
        .find(|r| r.mft_offset <= at && at < r.mft_offset + r.len)
        .expect("record mapped");
    let dev_at = run.device_offset.unwrap() + (at - run.mft_offset);
    let mut bytes = std::fs::read(img).unwrap();
    let rec = &mut bytes[dev_at as usize..dev_at as usize + rs];
    let usa_off = u16::from_le_bytes([rec[4], rec[5]]) as usize;
    let usa_n = u16::from_le_bytes([rec[6], rec[7]]) as usize;
    let usn = [rec[usa_off], rec[usa_off + 1]];
    apply_fixups(rec).expect("fixups");
    let mut pos = u16::from_le_bytes([rec[0x14], rec[0x15]]) as usize;
    let mut used = u32::from_le_bytes(rec[0x18..0x1C].try_into().unwrap()) as usize;
    loop {
        let t = u32::from_le_bytes(rec[pos..pos + 4].try_into().unwrap());
        let len = u32::from_le_bytes(rec[pos + 4..pos + 8].try_into().unwrap()) as usize;
        assert!(t != 0xFFFF_FFFF, "no unnamed $DATA in $UsnJrnl");
        if t == 0x80 && rec[pos + 9] == 0 {
            rec.copy_within(pos + len..used, pos);
            used -= len;
            rec[used..used + len].fill(0);
            rec[0x18..0x1C].copy_from_slice(&(used as u32).to_le_bytes());
            break;
        }
        pos += len;
    }
    for i in 1..usa_n {
        let end = i * 512;
        let (a, b) = (rec[end - 2], rec[end - 1]);
        rec[usa_off + 2 * i] = a;
        rec[usa_off + 2 * i + 1] = b;
        rec[end - 2..end].copy_from_slice(&usn);
    }
    std::fs::write(img, bytes).unwrap();
}

/// One record as `usnjls -l` prints it, reduced to what both tools show.
#[derive(Debug, PartialEq, Eq)]
struct Rec {
    usn: String,
    file: String,
    parent: String,
    time: String,
    reasons: BTreeSet<String>,
    name: String,
}

fn usnjls(img: &Path) -> Vec<Rec> {
    let out = run_ok(tool("usnjls").args(["-l", "-f", "ntfs"]).arg(img));
    let text = String::from_utf8(out.stdout).expect("usnjls output is UTF-8");
    let mut recs = Vec::new();
    for block in text.split("\n\n").filter(|b| b.contains("Version:")) {
        let field = |k: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .unwrap_or_else(|| panic!("{k} missing in {block}"))
                .trim()
                .to_string()
        };
        recs.push(Rec {
            usn: field("Update Sequence Number:"),
            file: field("Reference Number:"),
            parent: field("Parent Reference Number:"),
            time: field("Time:").trim_end_matches(" (UTC)").to_string(),
            reasons: field("Reason:")
                .split_whitespace()
                .map(String::from)
                .collect(),
            name: field("Name:"),
        });
    }
    recs
}

/// uffs's rows in `usnjls -l`'s terms: `record-sequence` references, nanosecond times with a space, and the reason
/// names TSK knows (it prints the others as one UNKNOWN).
fn as_tsk(rows: &[HashMap<String, String>]) -> Vec<Rec> {
    const TSK_UNKNOWN: [&str; 3] = [
        "TRANSACTED_CHANGE",
        "INTEGRITY_CHANGE",
        "DESIRED_STORAGE_CLASS_CHANGE",
    ];
    rows.iter()
        .map(|r| {
            let mut reasons = BTreeSet::new();
            for n in r["reasons"].split('|') {
                if TSK_UNKNOWN.contains(&n) || n.starts_with("0x") {
                    reasons.insert("UNKNOWN".to_string());
                } else {
                    reasons.insert(n.to_string());
                }
            }
            Rec {
                usn: r["usn"].clone(),
                file: format!("{}-{}", r["file_record"], r["file_sequence"]),
                parent: format!("{}-{}", r["parent_record"], r["parent_sequence"]),
                time: format!(
                    "{}00",
                    r["timestamp"].replace('T', " ").trim_end_matches('Z')
                ),
                reasons,
                name: r["name"].clone(),
            }
        })
        .collect()
}

#[test]
fn usnjls_parity_on_a_volume() {
    let dir = scratch("journal-usnjls");
    let img = volume_with_journal(&dir, &combined_j());
    let tsk = usnjls(&img);
    assert_eq!(tsk.len(), 19 + 6 + 208, "usnjls read the journal");
    let rows = journal_rows(&img, &[]);
    assert_eq!(as_tsk(&rows), tsk);

    // The same records as from the raw captures, now with paths where the volume has the parent folder: only
    // the root (record 5, sequence 5) is on this volume, so plaso's files resolve and the others do not.
    let mut raw = Vec::new();
    for s in [PLASO, PARSER, GO_NTFS] {
        raw.extend(journal_rows(&data(s), &[]));
    }
    assert_eq!(rows.len(), raw.len());
    for (v, r) in rows.iter().zip(&raw) {
        for k in [
            "usn",
            "timestamp",
            "reasons",
            "file_record",
            "name",
            "attributes",
        ] {
            assert_eq!(v[k], r[k], "{k}");
        }
        let want = match (v["parent_record"].as_str(), v["parent_sequence"].as_str()) {
            ("5", "5") if v["file_record"] == "5" => "/".to_string(),
            ("5", "5") => format!("/{}", v["name"]),
            _ => String::new(),
        };
        assert_eq!(v["path"], want);
    }
    assert!(rows.iter().any(|r| r["path"] == "/Kopie van first.txt"));

    // --since on a volume (a USN is the record's offset in $J: here that holds for plaso's records only), and
    // the volume as partition 1 of an MBR disk.
    let since = journal_rows(&img, &["--since", "1400"]);
    assert_eq!(since[0]["usn"], "1400");
    assert_eq!(since.len(), 4 + 6 + 208);
    assert_eq!(
        since.len(),
        rows.iter()
            .filter(|r| r["usn"].parse::<u64>().unwrap() >= 1400)
            .count()
    );
    let disk = dir.join("disk.img");
    let mut d = vec![0u8; 1 << 20];
    d[0x1BE + 4] = 0x07;
    d[0x1BE + 8..0x1BE + 12].copy_from_slice(&2048u32.to_le_bytes());
    d[0x1BE + 12..0x1BE + 16].copy_from_slice(&((16u32 << 20) / 512).to_le_bytes());
    d[510..512].copy_from_slice(&[0x55, 0xAA]);
    d.extend(std::fs::read(&img).unwrap());
    std::fs::write(&disk, d).unwrap();
    assert_eq!(journal_rows(&disk, &["--partition", "1"]), rows);
    let at = PathBuf::from(format!("{}@1", disk.display()));
    assert_eq!(journal_rows(&at, &[]), rows);
}

/// A USN_RECORD_V2 for record `file` (parent `parent`) at stream offset `usn`.
fn usn_record_v2(usn: u64, file: u64, parent: u64, name: &str, reason: u32) -> Vec<u8> {
    let name: Vec<u8> = name.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    let len = (60 + name.len()).next_multiple_of(8);
    let mut r = vec![0u8; len];
    r[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    r[4..6].copy_from_slice(&2u16.to_le_bytes());
    r[8..16].copy_from_slice(&file.to_le_bytes());
    r[16..24].copy_from_slice(&parent.to_le_bytes());
    r[24..32].copy_from_slice(&usn.to_le_bytes());
    r[32..40].copy_from_slice(&0x01DB_0000_0000_0000u64.to_le_bytes());
    r[40..44].copy_from_slice(&reason.to_le_bytes());
    r[56..58].copy_from_slice(&(name.len() as u16).to_le_bytes());
    r[58..60].copy_from_slice(&60u16.to_le_bytes());
    r[60..60 + name.len()].copy_from_slice(&name);
    r
}

/// Replaces a named stream of `$Extend/$UsnJrnl` with `bytes`.
fn write_stream(img: &Path, dir: &Path, stream: &str, bytes: &[u8]) {
    let f = dir.join(stream.trim_start_matches('$'));
    std::fs::write(&f, bytes).unwrap();
    run_ok(
        tool("ntfscp")
            .args(["-f", "-a", "0x80", "-N", stream])
            .arg(img)
            .arg(&f)
            .arg("/$Extend/$UsnJrnl"),
    );
}

fn index(img: &Path, out: &Path, update: bool) -> String {
    let mut c = uffs();
    c.arg("index").arg(img).arg("-o").arg(out);
    if update {
        c.arg("--update");
    }
    String::from_utf8_lossy(&run_ok(&mut c).stderr).into_owned()
}

fn sorted_export(index: &Path) -> Vec<String> {
    let out = run_ok(uffs().arg("export").arg(index).arg("--streams"));
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    v.sort();
    v
}

/// The journal path of a live index: files changed through ntfs-3g, their changes written as real
/// USN_RECORD_V2 records into `$UsnJrnl:$J`; `uffs index --update` follows the journal and equals a fresh build.
/// A journal with a new id, and one trimmed past the index's position, make it rebuild.
#[test]
fn an_index_follows_the_change_journal() {
    let dir = scratch("journal-follow");
    let mut j = std::fs::read(data(PLASO)).unwrap();
    j.resize(j.len().next_multiple_of(8), 0);
    let img = volume_with_journal(&dir, &j);
    let (upd, fresh) = (dir.join("upd.uffs"), dir.join("fresh.uffs"));
    index(&img, &upd, false);
    let unchanged = index(&img, &upd, true);
    assert!(
        unchanged.contains("unchanged (journal at USN"),
        "{unchanged}"
    );

    // Changes through the driver, then the journal records that name them.
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    run_ok(tool("ntfs-3g").arg(&img).arg(&mnt));
    std::fs::create_dir(mnt.join("kiwi")).unwrap();
    std::fs::write(mnt.join("kiwi/fruit.txt"), b"green").unwrap();
    std::fs::write(mnt.join("apple.txt"), vec![b'a'; 9000]).unwrap();
    let ino = |p: &str| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(mnt.join(p)).unwrap().ino()
    };
    let (kiwi, fruit, apple) = (ino("kiwi"), ino("kiwi/fruit.txt"), ino("apple.txt"));
    run_ok(std::process::Command::new("umount").arg(&mnt));
    for (file, parent, name) in [
        (kiwi, 5, "kiwi"),
        (fruit, kiwi, "fruit.txt"),
        (apple, 5, "apple.txt"),
    ] {
        let usn = j.len() as u64;
        j.extend(usn_record_v2(usn, file, parent, name, 0x100 | 0x8000_0000));
    }
    write_stream(&img, &dir, "$J", &j);
    let said = index(&img, &upd, true);
    assert!(said.contains("found by journal"), "{said}");
    index(&img, &fresh, false);
    assert_eq!(sorted_export(&upd), sorted_export(&fresh));
    let found = run_ok(uffs().arg("--index").arg(&upd).arg("fruit"));
    assert_eq!(
        String::from_utf8_lossy(&found.stdout).trim(),
        "/kiwi/fruit.txt"
    );

    // A new journal id: the index cannot follow it.
    let max = |id: u64, lowest: u64| {
        [32u64 << 20, 8 << 20, id, lowest]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>()
    };
    write_stream(&img, &dir, "$Max", &max(0x0202, 0));
    let said = index(&img, &upd, true);
    assert!(
        said.contains("new one") && said.contains("building it again"),
        "{said}"
    );
    // A journal trimmed past the index's position.
    write_stream(&img, &dir, "$Max", &max(0x0202, 1 << 30));
    let said = index(&img, &upd, true);
    assert!(said.contains("no longer holds USN"), "{said}");
}
