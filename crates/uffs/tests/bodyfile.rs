//! Timelines: `uffs export --format bodyfile` against The Sleuth Kit's `fls -m / -r` (the rows mactime reads: the
//! `$STANDARD_INFORMATION` times of each attribute and the `$FILE_NAME` times of each name) on the fixture
//! volumes, the Debian forensic sample disk and the real Windows `$MFT` captures of `tests/data`. fls cannot open a
//! bare `$MFT` ("Cannot determine file system type"), so each capture is wrapped into a sparse volume image: a
//! boot sector, and the capture at the clusters its own record 0 says the MFT holds (the cluster size is the
//! one at which `$BadClus:$Bad` spans the volume); the rest reads as zeros, so fls finds most names through the
//! MFT rather than through folder indexes. Then mactime reads both body files. And an entry whose SI times were
//! set back (timestomped) shows them apart from its `$FILE_NAME` times.
//!
//! fls's rows are normalised first (each rule is counted, and the counts are printed):
//! * UID 48 or 32 becomes 0: TSK reads the owner id at offset 0x30 of `$STANDARD_INFORMATION`, and past the end
//!   of a 48-byte one (NTFS 1.2's, which mkntfs writes for metafiles and ntfs-3g for files) that is the next
//!   attribute's type code, `$FILE_NAME` (0x30) or `$ATTRIBUTE_LIST` (0x20). uffs always prints 0;
//! * a time of 3373865674 becomes 0: TSK's Unix time of FILETIME 0 (the subtraction of 1601..1970 wraps round
//!   2^64 and is cut to 32 bits); uffs prints 0 for no time;
//! * `-/` (a name TSK found through the MFT rather than in a folder's index) becomes the file's kind, `r/` or
//!   `d/`, which uffs always prints;
//! * `$OrphanFiles/NAME` becomes `$Orphan/NAME`, uffs's folder for entries whose parent is gone;
//! * dropped: TSK's `$OrphanFiles` folder and its `OrphanFile-N` placeholders for nameless records; names in
//!   index slack whose record was reused (`deleted-realloc`: uffs's entries come from records); a folder's named
//!   stream listed again as `folder/.:stream`; and the named index roots of metafiles (`$Secure:$SDH`,
//!   `$Extend/$Quota:$O`, ...), which are no entries of uffs.
//!
//! Then both sides must hold the same rows, except rows that differ for a reason the test checks record by record:
//! * the root folder's two rows (record 5) are uffs's only: fls shows the root only as `.` with `-a`;
//! * a metafile with named index roots and no `$DATA` (`$ObjId`, `$Quota`, `$Reparse`) gets uffs's row without
//!   attribute (as fls gives a file with no `$DATA`), where fls printed the index rows dropped above;
//! * hard links: fls prints one `$FILE_NAME` (the last it read, with its id, length and times) under every name
//!   of a file, or none at all when the names are in extension records; uffs prints each name's own. So every
//!   `$FILE_NAME` row fls has for such a file must be one of uffs's for that file, names aside;
//! * a `$FILE_NAME` in an extension record (a file with an `$ATTRIBUTE_LIST`, as `istat` shows): fls prints no
//!   row for it (it looks for the id the extension record gives the attribute among the ids it renumbered), and
//!   it lists the extension record itself as a file under that name, without permissions or times (`istat`
//!   shows no `$STANDARD_INFORMATION` in it); uffs prints the name's row with the file;
//! * attributes in extension records (a file with an `$ATTRIBUTE_LIST`): TSK renumbers them past the list's
//!   largest id, uffs prints the id the extension record gives them. Such rows differ in that id alone, and
//!   `istat` shows the record's `$ATTRIBUTE_LIST`;
//! * a file whose attributes TSK cannot load (a sparse file longer than the volume; in a wrapped capture, a file
//!   whose `$ATTRIBUTE_LIST` is non-resident, so outside the capture): fls prints its row without attribute and
//!   with size 0, and `istat` shows no `$DATA` for it.
//!
//! Everything else is equal, row for row. mactime then reads both files: it accepts them, and every line by
//! which its two timelines differ comes from one of the rows counted above.

#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// TSK's Unix time for FILETIME 0.
const TSK_ZERO: &str = "3373865674";

fn fields(row: &str) -> Vec<&str> {
    row.split('|').collect()
}

/// The record number of a row (the inode field before its `-TYPE-ID`).
fn record_of(row: &str) -> &str {
    fields(row)[2].split('-').next().unwrap_or("")
}

fn is_fn_row(row: &str) -> bool {
    fields(row)[1].contains(" ($FILE_NAME)")
}

/// A row without its name.
fn without_name(row: &str) -> String {
    fields(row)[2..].join("|")
}

/// A row with the attribute id of its inode field taken out.
fn without_attr_id(row: &str) -> String {
    let f = fields(row);
    let inode: Vec<&str> = f[2].split('-').collect();
    let kept = inode[..inode.len().min(2)].join("-");
    [&f[..2], &[kept.as_str()], &f[3..]].concat().join("|")
}

fn lines(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

fn fls_body(image: &Path, offset: Option<u64>, deleted: bool) -> Vec<String> {
    let mut cmd = tool("fls");
    cmd.args(["-m", "/", "-r"]);
    if !deleted {
        cmd.arg("-u");
    }
    if let Some(o) = offset {
        cmd.args(["-o", &o.to_string()]);
    }
    lines(&run_ok(cmd.arg(image)).stdout)
}

fn uffs_body(source: &str, deleted: bool, streams: bool) -> Vec<String> {
    let mut cmd = uffs();
    cmd.args(["export", source, "--format", "bodyfile"]);
    if deleted {
        cmd.arg("--deleted");
    }
    if streams {
        cmd.arg("--streams");
    }
    let rows = lines(&run_ok(&mut cmd).stdout);
    for r in &rows {
        assert_eq!(fields(r).len(), 11, "uffs row without 11 fields: {r}");
    }
    rows
}

/// The deleted names uffs lists from index slack on `source`, as (path, record; 0 when unknown): fls reads no
/// slack, so their rows are uffs's own (the names themselves are checked against a log in `index_slack.rs`).
fn index_slack_names(source: &str) -> BTreeSet<(String, String)> {
    let out = run_ok(uffs().args(["export", source, "--deleted", "--format", "csv"])).stdout;
    csv_rows(&out)
        .into_iter()
        .filter(|r| r["from_index_slack"] == "true")
        .map(|r| {
            let record = if r["record"].is_empty() {
                "0"
            } else {
                &r["record"]
            };
            (r["path"].clone(), record.to_string())
        })
        .collect()
}

/// What the normalisation and the record checks did, by rule.
#[derive(Default, Debug)]
struct Counts(BTreeMap<&'static str, usize>);

impl Counts {
    fn add(&mut self, rule: &'static str) {
        *self.0.entry(rule).or_default() += 1;
    }
    fn get(&self, rule: &str) -> usize {
        self.0.get(rule).copied().unwrap_or(0)
    }
}

/// One fls row as uffs would print it (see the module's list), or `None` for a row dropped; the records whose
/// named index roots were dropped are collected.
fn normalise_fls(row: &str, c: &mut Counts, named_index: &mut BTreeSet<String>) -> Option<String> {
    let mut f: Vec<String> = row.split('|').map(String::from).collect();
    assert_eq!(f.len(), 11, "fls row without 11 fields: {row}");
    let name = f[1].clone();
    if name.contains("(deleted-realloc)") {
        c.add("dropped: name in index slack of a reused record");
        return None;
    }
    if name == "/$OrphanFiles" || name.starts_with("/$OrphanFiles/OrphanFile-") {
        c.add("dropped: $OrphanFiles and its placeholders");
        return None;
    }
    if name.contains("/.:") {
        c.add("dropped: a folder's stream again as folder/.:stream");
        return None;
    }
    let last = name.rsplit('/').next().unwrap_or("");
    if f[2].split('-').nth(1) == Some("144") && last.contains(":$") {
        c.add("dropped: named index root of a metafile");
        named_index.insert(record_of(row).to_string());
        return None;
    }
    if let Some(rest) = name.strip_prefix("/$OrphanFiles/") {
        f[1] = format!("/$Orphan/{rest}");
        c.add("renamed: $OrphanFiles/ to $Orphan/");
    }
    if f[4] == "48" || f[4] == "32" {
        f[4] = "0".into();
        c.add("UID read past a 48-byte $STANDARD_INFORMATION");
    }
    for t in &mut f[7..11] {
        if t == TSK_ZERO {
            *t = "0".into();
            c.add("time: TSK's wrap of FILETIME 0");
        }
    }
    if f[3].starts_with('-') && f[3].len() > 2 {
        f[3] = format!("{}{}", &f[3][2..3], &f[3][1..]);
        c.add("name type -/ (found through the MFT)");
    }
    Some(f.join("|"))
}

/// Multiset difference: the rows of `a` not matched by a row of `b`.
fn minus(a: &[String], b: &[String]) -> Vec<String> {
    let mut left: HashMap<&str, usize> = HashMap::new();
    for r in b {
        *left.entry(r).or_default() += 1;
    }
    a.iter()
        .filter(|r| match left.get_mut(r.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect()
}

/// `istat` of one record, stdout and stderr together.
fn istat(image: &Path, offset: Option<u64>, record: &str) -> String {
    let mut cmd = tool("istat");
    if let Some(o) = offset {
        cmd.args(["-o", &o.to_string()]);
    }
    let out = cmd.arg(image).arg(record).output().expect("istat");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `mactime -b` of `rows` (ISO dates, UTC, comma-separated), which must accept them: its lines without the header.
fn mactime(rows: &[String], scratch_dir: &Path, name: &str) -> Vec<String> {
    let body = scratch_dir.join(name);
    std::fs::write(&body, rows.join("\n") + "\n").unwrap();
    let out = tool("mactime")
        .arg("-b")
        .arg(&body)
        .args(["-d", "-y", "-z", "UTC"])
        .output()
        .expect("mactime");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "mactime refused {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v = lines(&out.stdout);
    assert_eq!(
        v.first().map(String::as_str),
        Some("Date,Size,Type,Mode,UID,GID,Meta,File Name")
    );
    v.remove(0);
    v
}

/// The inode and name of a mactime line: `DATE,SIZE,TYPE,MODE,UID,GID,META,"NAME"`.
fn mactime_key(line: &str) -> String {
    let mut it = line.splitn(8, ',');
    let meta = it.nth(6).unwrap_or("");
    let name = it.next().unwrap_or("").trim_matches('"');
    format!("{meta}|{name}")
}

/// Compares uffs's body file of `source` with fls's of `image` (at sector `offset`), deleted entries and
/// streams included or not; panics with the rows no rule explains. Returns the rows equal on both sides and what
/// each rule did.
fn assert_timeline(
    image: &Path,
    offset: Option<u64>,
    source: &str,
    deleted: bool,
) -> (usize, Counts) {
    let mut c = Counts::default();
    let mut named_index = BTreeSet::new();
    let fls: Vec<String> = fls_body(image, offset, deleted)
        .iter()
        .filter_map(|r| normalise_fls(r, &mut c, &mut named_index))
        .collect();
    let ours = uffs_body(source, deleted, true);
    let only_fls = minus(&fls, &ours);
    let only_ours = minus(&ours, &fls);
    let same = ours.len() - only_ours.len();
    // Files with several names: uffs has one `$FILE_NAME` row per name.
    let mut fn_rows: HashMap<&str, Vec<&String>> = HashMap::new();
    for r in ours.iter().filter(|r| is_fn_row(r)) {
        fn_rows.entry(record_of(r)).or_default().push(r);
    }
    let linked = |r: &str| fn_rows.get(record_of(r)).is_some_and(|v| v.len() > 1);
    let mut explained_fls = vec![false; only_fls.len()];
    let mut explained_ours = vec![false; only_ours.len()];
    let mut istat_cache: HashMap<String, String> = HashMap::new();
    let mut istat_of = |record: &str| {
        istat_cache
            .entry(record.to_string())
            .or_insert_with(|| istat(image, offset, record))
            .clone()
    };
    for (i, r) in only_fls.iter().enumerate() {
        if is_fn_row(r) && linked(r) {
            let rest = without_name(r);
            let theirs = fn_rows[record_of(r)]
                .iter()
                .any(|u| without_name(u) == rest);
            assert!(
                theirs,
                "{source}: fls's $FILE_NAME row is none of the file's names' own: {r}"
            );
            explained_fls[i] = true;
            c.add("hard links: fls's one $FILE_NAME row under a name");
            continue;
        }
        // An extension record listed as a file: it has no `$STANDARD_INFORMATION`, so no permissions, no times.
        if fields(r)[3].ends_with("---------") {
            let stat = istat_of(record_of(r));
            assert!(
                !stat.contains("$STANDARD_INFORMATION"),
                "{source}: fls's row without permissions is of a base record: {r}"
            );
            explained_fls[i] = true;
            c.add("an extension record fls lists as a file");
            continue;
        }
        // The same name's row in uffs, differing in its attribute.
        let name = fields(r)[1];
        let Some(j) = only_ours
            .iter()
            .enumerate()
            .position(|(j, u)| !explained_ours[j] && fields(u)[1] == name)
        else {
            continue;
        };
        let u = &only_ours[j];
        let stat = istat_of(record_of(r));
        if without_attr_id(r) == without_attr_id(u) && fields(r)[2].contains('-') {
            assert!(
                stat.contains("$ATTRIBUTE_LIST"),
                "{source}: rows differ in their attribute id, but the record has no attribute list:\n  fls  {r}\n  uffs {u}"
            );
            c.add("attribute id: TSK's renumbering of an extension record's attribute");
        } else if !fields(r)[2].contains('-') && fields(r)[6] == "0" {
            assert!(
                !stat.contains("(128-"),
                "{source}: fls printed no attribute, but istat shows $DATA:\n  fls  {r}\n  uffs {u}\n{stat}"
            );
            c.add("attributes TSK cannot load");
        } else {
            continue;
        }
        explained_fls[i] = true;
        explained_ours[j] = true;
    }
    let slack = if deleted {
        index_slack_names(source)
    } else {
        BTreeSet::new()
    };
    for (j, u) in only_ours.iter().enumerate() {
        if explained_ours[j] {
            continue;
        }
        let f = fields(u);
        let bare = f[1]
            .trim_end_matches(" (deleted)")
            .trim_end_matches(" ($FILE_NAME)");
        if slack.contains(&(bare.to_string(), record_of(u).to_string())) {
            c.add("a name only index slack keeps, which fls does not read");
        } else if is_fn_row(u) && linked(u) {
            c.add("hard links: a name's own $FILE_NAME row");
        } else if is_fn_row(u) && istat_of(record_of(u)).contains("$ATTRIBUTE_LIST") {
            c.add("a $FILE_NAME in an extension record, which fls does not print");
        } else if record_of(u) == "5" && (f[1] == "/" || f[1] == "/ ($FILE_NAME)") {
            c.add("the root folder's rows");
        } else if !f[2].contains('-') && named_index.contains(record_of(u)) {
            c.add("metafile without $DATA: uffs's row without attribute");
        } else {
            continue;
        }
        explained_ours[j] = true;
    }
    let unexplained = |rows: &[String], done: &[bool]| -> Vec<String> {
        rows.iter()
            .zip(done)
            .filter(|(_, d)| !**d)
            .map(|(r, _)| r.clone())
            .take(20)
            .collect()
    };
    let (a, b) = (
        unexplained(&only_fls, &explained_fls),
        unexplained(&only_ours, &explained_ours),
    );
    assert!(
        a.is_empty() && b.is_empty(),
        "{source} (deleted: {deleted}) disagrees with fls -m:\nonly in fls:\n  {}\nonly in uffs:\n  {}",
        a.join("\n  "),
        b.join("\n  ")
    );
    // mactime reads both; the lines by which its timelines differ come from the rows above.
    let dir = scratch(&format!(
        "bodyfile-mactime-{}-{deleted}",
        source.replace(['/', '@'], "_")
    ));
    let (tf, tu) = (
        mactime(&fls, &dir, "fls.body"),
        mactime(&ours, &dir, "uffs.body"),
    );
    let keys = |rows: &[String]| -> BTreeSet<String> {
        rows.iter()
            .map(|r| {
                let f = fields(r);
                format!("{}|{}", f[2], f[1])
            })
            .collect()
    };
    let (kf, ku) = (keys(&only_fls), keys(&only_ours));
    for l in minus(&tf, &tu) {
        assert!(
            kf.contains(&mactime_key(&l)),
            "{source}: mactime line only from fls's rows, of no differing row: {l}"
        );
    }
    for l in minus(&tu, &tf) {
        assert!(
            ku.contains(&mactime_key(&l)),
            "{source}: mactime line only from uffs's rows, of no differing row: {l}"
        );
    }
    assert!(!tu.is_empty(), "{source}: mactime made no timeline");
    eprintln!(
        "{source} (deleted: {deleted}): {same} rows equal, {} fls rows, {} uffs rows; {:?}",
        fls.len(),
        ours.len(),
        c.0
    );
    (same, c)
}

#[test]
fn basic_volume_matches_fls() {
    let img = fixture("basic.img");
    let (same, c) = assert_timeline(&img, None, path_str(&img), true);
    assert!(same > 20_000, "only {same} rows");
    // The cases the volume was made for were met (and checked) above.
    assert_eq!(c.get("attributes TSK cannot load"), 2, "{c:?}");
    assert!(
        c.get("hard links: a name's own $FILE_NAME row") >= 30,
        "{c:?}"
    );
    assert!(c.get("attribute id: TSK's renumbering of an extension record's attribute") >= 2);
    assert_eq!(c.get("the root folder's rows"), 2);
    // Without deleted entries: fls -u.
    let (live, _) = assert_timeline(&img, None, path_str(&img), false);
    assert!(live > 20_000 && live < same, "{live} live rows of {same}");
}

#[test]
fn other_fixture_volumes_match_fls() {
    for name in ["sector4k.img", "fragmented.img", "bigcluster-64k.img"] {
        let img = fixture(name);
        assert_timeline(&img, None, path_str(&img), true);
    }
    for (disk, parts) in [
        (
            "disk-mbr.img",
            &[(1, "p1_start"), (3, "p3_start"), (5, "p5_start")][..],
        ),
        ("disk-gpt.img", &[(2, "p2_start"), (3, "p3_start")][..]),
    ] {
        let img = fixture(disk);
        let f = facts(disk);
        for (n, start) in parts {
            let offset: u64 = f[*start].parse().unwrap();
            assert_timeline(&img, Some(offset), &format!("{}@{n}", img.display()), true);
        }
    }
}

#[test]
fn linux_made_sample_matches_fls() {
    let img = data("linux-made/testfs1");
    let (same, _) = assert_timeline(&img, None, path_str(&img), true);
    assert!(same > 1000, "only {same} rows");
}

/// The Debian `forensics-samples-ntfs` disk, whose folders were deleted after they were filled.
#[test]
fn forensic_sample_disk_matches_fls() {
    let xz = Path::new("/usr/share/forensics-samples/fs.ntfs.xz");
    assert!(
        xz.is_file(),
        "{} is missing; run `sudo scripts/setup.sh`",
        xz.display()
    );
    let dir = scratch("bodyfile-forensics-sample");
    let img = dir.join("fs.ntfs");
    let out = Command::new("xz").arg("-dc").arg(xz).output().expect("xz");
    assert!(out.status.success());
    std::fs::write(&img, out.stdout).unwrap();
    for deleted in [true, false] {
        assert_timeline(&img, Some(2048), path_str(&img), deleted);
    }
    let rows = uffs_body(path_str(&img), true, true);
    assert!(
        rows.iter()
            .any(|r| r.starts_with("0|/audio2/deleted.mp3 (deleted)|")),
        "the deleted file's row"
    );
}

/// A volume image around a raw `$MFT` capture, which fls can open (see the module's notes).
fn wrap_mft(capture: &Path, out: &Path) {
    use uffs_ntfs::attr::{kind, AttributeBody};
    use uffs_ntfs::record::{apply_fixups, Record};
    let bytes = std::fs::read(capture).unwrap();
    let rs = u32::from_le_bytes(bytes[0x1C..0x20].try_into().unwrap()) as usize;
    // The runs and data size of a record's non-resident `$DATA` (the unnamed one, or the first named one).
    let data = |n: usize, named: bool| -> (Vec<uffs_ntfs::runlist::Run>, u64) {
        let mut rec = bytes[n * rs..(n + 1) * rs].to_vec();
        apply_fixups(&mut rec).unwrap();
        let r = Record::parse(&rec).unwrap();
        for a in r.attributes().flatten() {
            if a.type_code != kind::DATA || a.is_unnamed() == named {
                continue;
            }
            if let Ok(AttributeBody::NonResident(nr)) = a.body() {
                return (nr.runs().flatten().collect(), nr.data_size);
            }
        }
        panic!("record {n} of {} has no such $DATA", capture.display())
    };
    let (mft, _) = data(0, false);
    let (mirror, _) = data(1, false);
    let (bad, bad_size) = data(8, true);
    let clusters: u64 = bad.iter().map(|r| r.length).sum();
    let cs = bad_size / clusters;
    assert!(
        cs.is_power_of_two() && (512..=65536).contains(&cs),
        "cluster size {cs}"
    );
    // One cluster more than `$Bad` covers: TSK does not count the backup boot sector in the volume.
    let len = (clusters + 1) * cs;
    let mut boot = [0u8; 512];
    boot[..11].copy_from_slice(b"\xEB\x52\x90NTFS    ");
    boot[11..13].copy_from_slice(&512u16.to_le_bytes());
    boot[13] = (cs / 512) as u8;
    boot[21] = 0xF8;
    boot[0x28..0x30].copy_from_slice(&(len / 512 - 1).to_le_bytes());
    boot[0x30..0x38].copy_from_slice(&mft[0].lcn.unwrap().to_le_bytes());
    boot[0x38..0x40].copy_from_slice(&mirror[0].lcn.unwrap().to_le_bytes());
    // A size smaller than a cluster is stored as minus its power of two.
    let size_field = |bytes: u64| -> u8 {
        if bytes >= cs {
            (bytes / cs) as u8
        } else {
            (256 - bytes.trailing_zeros()) as u8
        }
    };
    boot[0x40] = size_field(rs as u64);
    boot[0x44] = size_field(4096);
    boot[510..].copy_from_slice(&[0x55, 0xAA]);
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::create(out).unwrap();
    f.set_len(len).unwrap();
    f.write_all_at(&boot, 0).unwrap();
    f.write_all_at(&boot, len - 512).unwrap();
    let mut at = 0usize;
    for run in &mft {
        let n = (run.length * cs) as usize;
        if let Some(lcn) = run.lcn {
            let end = (at + n).min(bytes.len());
            if at < end {
                f.write_all_at(&bytes[at..end], lcn * cs).unwrap();
            }
        }
        at += n;
    }
    f.write_all_at(&bytes[..4 * rs], mirror[0].lcn.unwrap() * cs)
        .unwrap();
}

#[test]
fn windows_mft_captures_match_fls() {
    let dir = scratch("bodyfile-windows");
    let mut captures: Vec<PathBuf> = vec![
        data("windows-xp-mft/MFT"),
        data("windows-xp-mft/ntfs1-gen2.MFT"),
        data("usn/plaso-vsstest.MFT"),
    ];
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(data("windows10-scenarios"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    scenarios.sort();
    assert_eq!(scenarios.len(), 13);
    captures.extend(scenarios);
    let mut total = 0;
    for capture in &captures {
        let img = dir.join(format!(
            "{}.img",
            capture.file_name().unwrap().to_string_lossy()
        ));
        wrap_mft(capture, &img);
        let (same, c) = assert_timeline(&img, None, path_str(capture), true);
        // The wrapped image is read by fls as a volume: everything but the system rows it cannot see came out.
        assert!(same > 40, "{}: only {same} rows", capture.display());
        assert_eq!(c.get("dropped: $OrphanFiles and its placeholders"), 1);
        total += same;
    }
    assert!(total > 26_000, "{total} rows in all");
}

/// `--streams` adds exactly the streams' rows; without `--deleted` the deleted entries' rows go.
#[test]
fn streams_and_deleted_entries_are_rows_as_asked() {
    let img = fixture("basic.img");
    let all = uffs_body(path_str(&img), true, true);
    let stream_paths: BTreeSet<String> = export(&img, &["--streams", "--deleted"])
        .into_iter()
        .filter(|r| r["kind"] == "stream")
        .map(|r| r["path"].clone())
        .collect();
    assert!(stream_paths.len() > 5);
    let name = |r: &String| fields(r)[1].trim_end_matches(" (deleted)").to_string();
    let no_streams: Vec<String> = all
        .iter()
        .filter(|r| !stream_paths.contains(&name(r)))
        .cloned()
        .collect();
    assert!(no_streams.len() < all.len());
    assert_eq!(uffs_body(path_str(&img), true, false), no_streams);
    let live: Vec<String> = no_streams
        .iter()
        .filter(|r| !fields(r)[1].ends_with(" (deleted)"))
        .cloned()
        .collect();
    assert!(live.len() < no_streams.len());
    assert_eq!(uffs_body(path_str(&img), false, false), live);
}

/// Times set back through ntfs-3g (which writes only `$STANDARD_INFORMATION`, as timestomping tools do) show in
/// the SI row and not in the `$FILE_NAME` row, in the body file, in mactime and in the export's `fn_*` columns.
#[test]
fn timestomped_times_show_apart_from_file_name_times() {
    let dir = scratch("bodyfile-timestomp");
    let img = common::live::make_volume(&dir, 16);
    {
        let m = common::live::Mounted::new(&img, &dir.join("mnt"));
        std::fs::write(m.dir.join("stomped.txt"), b"evidence").unwrap();
        std::fs::write(m.dir.join("honest.txt"), b"plain").unwrap();
    }
    {
        let m = common::live::Mounted::new(&img, &dir.join("mnt"));
        run_ok(
            Command::new("touch")
                .args(["-d", "2001-02-03 04:05:06 UTC"])
                .arg(m.dir.join("stomped.txt")),
        );
    }
    let stomped_at = 981_173_106u64;
    let rows = uffs_body(path_str(&img), false, false);
    let row = |name: &str| -> Vec<u64> {
        let r = rows
            .iter()
            .find(|r| fields(r)[1] == name)
            .unwrap_or_else(|| panic!("no row {name}"));
        fields(r)[7..].iter().map(|t| t.parse().unwrap()).collect()
    };
    // atime|mtime|ctime|crtime
    let (si, fname) = (row("/stomped.txt"), row("/stomped.txt ($FILE_NAME)"));
    assert_eq!(
        &si[..2],
        &[stomped_at, stomped_at],
        "SI accessed and modified set back"
    );
    assert!(
        fname.iter().all(|&t| t > stomped_at + 10 * 365 * 86_400),
        "{fname:?}"
    );
    assert_eq!(si[3], fname[3], "the creation time was not touched");
    let (hsi, hfn) = (row("/honest.txt"), row("/honest.txt ($FILE_NAME)"));
    assert!(hsi[1] >= hfn[1] && hsi[1] < hfn[1] + 60, "{hsi:?} {hfn:?}");
    // fls sees the same.
    let fls = fls_body(&img, None, false);
    assert!(fls.iter().any(|r| {
        let f = fields(r);
        f[1] == "/stomped.txt" && f[7] == stomped_at.to_string() && f[8] == stomped_at.to_string()
    }));
    // mactime puts the SI row in 2001 and the $FILE_NAME row years later.
    let timeline = mactime(&rows, &dir, "body");
    let year_of = |what: &str| -> Vec<String> {
        timeline
            .iter()
            .filter(|l| l.ends_with(&format!("\"{what}\"")))
            .map(|l| l[..4].to_string())
            .collect()
    };
    assert!(year_of("/stomped.txt").contains(&"2001".to_string()));
    assert!(!year_of("/stomped.txt ($FILE_NAME)").contains(&"2001".to_string()));
    // A query prints the same rows for its hits.
    let index = dir.join("vol.uffs");
    run_ok(uffs().arg("index").arg(&img).arg("-o").arg(&index));
    let hits = lines(
        &run_ok(
            uffs()
                .args(["stomped", "--format", "bodyfile", "--index"])
                .arg(&index),
        )
        .stdout,
    );
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(hits.iter().all(|h| rows.contains(h)), "{hits:?}");
    // The export's columns: SI modified in 2001, fn_modified not.
    let csv = export(&img, &[]);
    let e = csv.iter().find(|r| r["path"] == "/stomped.txt").unwrap();
    assert!(e["modified"].starts_with("2001-02-03T04:05:06"), "{e:?}");
    assert!(!e["fn_modified"].starts_with("2001"), "{e:?}");
    assert_eq!(e["fn_created"], e["created"]);
}

/// An index built without the timeline (as older uffs wrote them) is refused for a body file with a clear
/// message; its other exports leave the `fn_*` columns empty.
#[test]
fn an_index_without_file_name_times_is_said_so() {
    let dir = scratch("bodyfile-old-index");
    let idx = dir.join("old.uffs");
    run_ok(
        uffs()
            .arg("index")
            .arg(data("windows10-scenarios/MFT_simplefs.bin"))
            .arg("-o")
            .arg(&idx),
    );
    let old = dir.join("older.uffs");
    std::fs::write(&old, strip_timeline(&std::fs::read(&idx).unwrap())).unwrap();
    let out = uffs()
        .arg("export")
        .arg(&old)
        .args(["--format", "bodyfile"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rebuild the index"), "{err}");
    let rows = export(&old, &[]);
    assert!(!rows.is_empty());
    assert!(
        rows.iter().all(|r| r["fn_created"].is_empty()),
        "{:?}",
        rows[0]
    );
    let fresh = export(&idx, &[]);
    assert!(fresh.iter().all(|r| !r["fn_created"].is_empty()));
}

/// The index file `bytes` as uffs wrote it before it kept timelines: the same file without the two timeline
/// sections (their table entries dropped; the header's checksum made again).
fn strip_timeline(bytes: &[u8]) -> Vec<u8> {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let count = u32_at(12) as usize;
    let mut out = bytes.to_vec();
    let kept: Vec<[u8; 32]> = (0..count)
        .map(|i| bytes[128 + i * 32..160 + i * 32].try_into().unwrap())
        .filter(|e: &[u8; 32]| !matches!(u32::from_le_bytes(e[..4].try_into().unwrap()), 66 | 67))
        .collect();
    assert_eq!(
        kept.len(),
        count - 2,
        "the file has the two timeline sections"
    );
    out[12..16].copy_from_slice(&(kept.len() as u32).to_le_bytes());
    // The table shrinks by two entries; the chunk table moves up, and the rest stays where it was.
    let chunks_at = 128 + count * 32;
    let data_start = u64::from_le_bytes(bytes[96..104].try_into().unwrap()) as usize;
    let mut head = Vec::new();
    for e in &kept {
        head.extend_from_slice(e);
    }
    head.extend_from_slice(&bytes[chunks_at..data_start]);
    head.resize(data_start - 128, 0);
    out[128..data_start].copy_from_slice(&head);
    uffs_index::file::reseal(&mut out);
    out
}
