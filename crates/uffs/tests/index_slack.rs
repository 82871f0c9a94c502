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
