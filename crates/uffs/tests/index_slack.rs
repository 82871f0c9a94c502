//! The names a folder's `$I30` index slack keeps (`uffs_ntfs::indx::slack_names`), on a folder churned through
//! ntfs-3g with a log of every name made and deleted: 300 files made, every third deleted, 100 more made (they
//! take the freed MFT records, so the deleted names are gone from the MFT). The folder's index blocks are read
//! with The Sleuth Kit's `icat` (attribute 160, `$INDEX_ALLOCATION`), so the bytes come from a reader other than
//! uffs. Every name found must once have been made in that folder (none invented), and the deleted names found
//! with the deleted entries uffs lists from the MFT must include every one `fls -r -p -d` lists there, and the
//! slack alone must hold more of them than fls lists.

#![cfg(unix)]

mod common;

use std::collections::BTreeSet;

use common::live::{make_volume, Mounted};
use common::{csv_rows, run_ok, scratch, tool, uffs};
use uffs_ntfs::indx::{slack_names, Node};
use uffs_ntfs::record::{apply_fixups, FileRef};

#[test]
fn slack_names_of_a_churned_folder_are_real_and_more_than_fls_finds() {
    let dir = scratch("index-slack");
    let img = make_volume(&dir, 64);
    let mut made = BTreeSet::new();
    let mut deleted = BTreeSet::new();
    {
        let m = Mounted::new(&img, &dir.join("mnt"));
        let churn = m.dir.join("churn");
        std::fs::create_dir(&churn).unwrap();
        for i in 0..300 {
            let name = format!("made file {i:03}.txt");
            std::fs::write(churn.join(&name), format!("file {i}\n")).unwrap();
            made.insert(name);
        }
        for i in (0..300).step_by(3) {
            let name = format!("made file {i:03}.txt");
            std::fs::remove_file(churn.join(&name)).unwrap();
            deleted.insert(name);
        }
        for i in 0..100 {
            let name = format!("new {i:03}.dat");
            std::fs::write(churn.join(&name), b"new\n").unwrap();
            made.insert(name);
        }
    }
    let ifind = run_ok(tool("ifind").args(["-n", "/churn"]).arg(&img));
    let record: u64 = String::from_utf8_lossy(&ifind.stdout)
        .trim()
        .parse()
        .unwrap();
    let istat =
        String::from_utf8_lossy(&run_ok(tool("istat").arg(&img).arg(record.to_string())).stdout)
            .into_owned();
    let sequence: u16 = istat
        .lines()
        .find_map(|l| l.split("Sequence: ").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    // `Type: $INDEX_ALLOCATION (160-ID)`: the attribute's id for icat.
    let id = istat
        .lines()
        .find_map(|l| l.split("$INDEX_ALLOCATION (160-").nth(1))
        .and_then(|s| s.split(')').next())
        .unwrap()
        .to_string();
    let blocks = run_ok(tool("icat").arg(&img).arg(format!("{record}-160-{id}"))).stdout;
    assert!(
        blocks.len() >= 4096 * 4,
        "{} bytes of index blocks",
        blocks.len()
    );

    let folder = FileRef::new(record, sequence);
    let latest = 134_500_000_000_000_000; // 2027: after every time this test writes
    let mut found = BTreeSet::new();
    for chunk in blocks.chunks_exact(4096) {
        let mut block = chunk.to_vec();
        if apply_fixups(&mut block).is_err() {
            continue;
        }
        let Ok(node) = Node::block(&block) else {
            continue;
        };
        for s in slack_names(&node, folder, latest) {
            found.insert(uffs_ntfs::utf16::decode(s.key.name));
        }
    }
    let invented: Vec<_> = found.difference(&made).collect();
    assert!(invented.is_empty(), "names never made: {invented:?}");
    let found_deleted: BTreeSet<_> = found.intersection(&deleted).cloned().collect();

    let fls = run_ok(tool("fls").args(["-r", "-p", "-d"]).arg(&img)).stdout;
    let fls_deleted: BTreeSet<String> = String::from_utf8_lossy(&fls)
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(_, p)| p))
        .filter_map(|p| p.strip_prefix("churn/"))
        .map(str::to_string)
        .collect();
    // What the slack lacks of fls's list are files whose MFT records were not used again (the last names,
    // whose slack copies the new entries overwrote): uffs lists those from the MFT already, so the two together
    // hold every deleted name fls lists.
    let export = run_ok(
        uffs()
            .args(["export", "--deleted", "--format", "csv"])
            .arg(&img),
    )
    .stdout;
    let from_mft: BTreeSet<String> = csv_rows(&export)
        .into_iter()
        .filter(|r| r["deleted"] == "true")
        .filter_map(|r| r["path"].strip_prefix("/churn/").map(str::to_string))
        .collect();
    let missed: Vec<_> = fls_deleted
        .difference(&found_deleted)
        .filter(|n| !from_mft.contains(*n))
        .collect();
    eprintln!(
        "index slack: {} names, {} of the {} deleted ones; fls -d lists {} deleted names there, the MFT {}",
        found.len(),
        found_deleted.len(),
        deleted.len(),
        fls_deleted.len(),
        from_mft.len()
    );
    assert!(fls_deleted.is_subset(&deleted), "{fls_deleted:?}");
    assert!(
        missed.is_empty(),
        "fls lists deleted names neither the slack nor the MFT holds: {missed:?}"
    );
    assert!(
        found_deleted.len() > fls_deleted.len(),
        "{} deleted names in the slack, fls lists {}",
        found_deleted.len(),
        fls_deleted.len()
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// What `uffs index --deleted` lists from index slack, against a log of every name made and deleted through
/// ntfs-3g in two folders (one churned once, one in several rounds with a subfolder): each name it lists from
/// slack was made in that folder and deleted since, with the size written to it (its `$FILE_NAME` copy's); no
/// deleted name is listed twice; every deleted name `fls -r -p -d` lists is among uffs's deleted entries, which
/// hold more; nothing is read through a name from slack.
#[test]
fn deleted_builds_list_the_names_only_index_slack_keeps() {
    let dir = scratch("index-slack-build");
    let img = make_volume(&dir, 64);
    // (folder, name) -> the size written; and the names deleted since, and those live at the end.
    let mut made: std::collections::BTreeMap<(String, String), u64> = Default::default();
    let mut deleted = BTreeSet::new();
    {
        let m = Mounted::new(&img, &dir.join("mnt"));
        let mut write = |folder: &str, name: String, size: usize| {
            std::fs::write(m.dir.join(folder).join(&name), vec![b'x'; size]).unwrap();
            made.insert((folder.to_string(), name), size as u64);
        };
        for f in ["once", "rounds", "rounds/sub"] {
            std::fs::create_dir(m.dir.join(f)).unwrap();
        }
        for i in 0..240 {
            write("once", format!("report {i:03}.txt"), 10 + i);
        }
        for i in 0..4 {
            write("rounds/sub", format!("kept {i}.bin"), 4096 * (i + 1));
        }
        let mut gone = Vec::new();
        for i in (0..240).step_by(3) {
            gone.push(("once".to_string(), format!("report {i:03}.txt")));
        }
        for round in 0..3 {
            for i in 0..120 {
                write(
                    "rounds",
                    format!("r{round} item {i:03}.dat"),
                    100 * round + i,
                );
            }
            for i in (0..120).filter(|i| i % 4 != round) {
                gone.push(("rounds".to_string(), format!("r{round} item {i:03}.dat")));
            }
            for (f, n) in gone.drain(..) {
                std::fs::remove_file(m.dir.join(&f).join(&n)).unwrap();
                deleted.insert((f, n));
            }
        }
        for i in 0..80 {
            write("once", format!("late {i:02}.log"), 7);
        }
    }
    let index = dir.join("v.uffs");
    let built = run_ok(
        uffs()
            .args(["index", "--deleted"])
            .arg(&img)
            .arg("-o")
            .arg(&index),
    );
    let summary = String::from_utf8_lossy(&built.stderr).into_owned()
        + &String::from_utf8_lossy(&built.stdout);
    assert!(summary.contains("from index slack"), "{summary}");
    let rows = csv_rows(
        &run_ok(
            uffs()
                .args(["--index"])
                .arg(&index)
                .args(["--deleted", "deleted:", "--format", "csv", "--columns"])
                .arg("path,size,record,sequence,from_index_slack"),
        )
        .stdout,
    );
    let split = |p: &str| {
        let (f, n) = p.trim_start_matches('/').rsplit_once('/').unwrap();
        (f.to_string(), n.to_string())
    };
    let mut listed = BTreeSet::new();
    let mut slack = 0;
    for r in &rows {
        let at = split(&r["path"]);
        assert!(listed.insert(at.clone()), "{at:?} listed twice");
        if r["from_index_slack"] == "true" {
            slack += 1;
            let size = made
                .get(&at)
                .unwrap_or_else(|| panic!("{at:?} never made there"));
            assert!(
                deleted.contains(&at),
                "{at:?} listed from slack but never deleted"
            );
            assert_eq!(r["size"], size.to_string(), "{at:?}");
        }
    }
    let fls = run_ok(tool("fls").args(["-r", "-p", "-d"]).arg(&img)).stdout;
    let fls_deleted: BTreeSet<(String, String)> = String::from_utf8_lossy(&fls)
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(_, p)| split(p)))
        .filter(|(f, _)| f == "once" || f.starts_with("rounds"))
        .collect();
    let missed: Vec<_> = fls_deleted.difference(&listed).collect();
    eprintln!(
        "{} deleted names; uffs lists {} ({slack} from index slack), fls -d {}",
        deleted.len(),
        listed.len(),
        fls_deleted.len()
    );
    assert!(
        missed.is_empty(),
        "fls lists deleted names uffs does not: {missed:?}"
    );
    assert!(
        slack > 0 && listed.len() > fls_deleted.len(),
        "uffs lists {} deleted names ({slack} from slack), fls {}",
        listed.len(),
        fls_deleted.len()
    );
    // Nothing is read through a name from slack.
    let one = rows
        .iter()
        .find(|r| r["from_index_slack"] == "true")
        .unwrap();
    let cat = uffs()
        .args(["cat", "--deleted"])
        .arg(&img)
        .arg(&one["path"])
        .output()
        .unwrap();
    assert!(!cat.status.success());
    assert!(
        String::from_utf8_lossy(&cat.stderr).contains("found only in its folder's index slack"),
        "{}",
        String::from_utf8_lossy(&cat.stderr)
    );
    // A search of contents passes them over with one note, and lists only files it read.
    let grep = uffs()
        .args(["grep", "-l", "--deleted", "x", "--index"])
        .arg(&index)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&grep.stderr);
    assert_eq!(grep.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "note: {slack} deleted name(s) found only in index slack not read"
        )),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&grep.stdout).contains(&one["path"]));
    std::fs::remove_dir_all(&dir).ok();
}
