//! Parity with The Sleuth Kit (`fls -l -r -p`, which walks directory indexes) on volumes and disks: the same live
//! paths, the same deleted paths, and the same sizes for files and named data streams.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use common::*;

/// One `fls -l` line reduced to what is compared.
#[derive(Debug)]
struct FlsEntry {
    path: String,
    deleted: bool,
    /// Size of the `$DATA` attribute the line names (`None` for directories and other attribute types).
    data_size: Option<u64>,
}

/// Parses `fls -l -r -p` output into uffs's conventions: a leading `/`; orphans under `/$Orphan`. TSK names a
/// file by one of its attributes: `file:$O` with attribute type 144 is an index (`$Quota`, `$Secure`, …), not a
/// data stream, so the suffix is dropped; type 128 with a name is a named data stream and stays `file:stream`.
/// TSK's virtual `$OrphanFiles` folder and its `OrphanFile-N` placeholders for nameless records have no
/// counterpart: uffs makes entries only of names.
fn parse_fls(out: &str) -> Vec<FlsEntry> {
    let mut v = Vec::new();
    for line in out.lines() {
        let mut cols = line.split('\t');
        let (Some(head), Some(path)) = (cols.next(), cols.next()) else {
            continue;
        };
        let size: Option<u64> = cols.nth(4).and_then(|s| s.parse().ok());
        let deleted = head.contains(" * ");
        if head.contains("(realloc)") {
            continue;
        }
        let inode = head.trim_end_matches(':').rsplit(' ').next().unwrap_or("");
        // Without an attribute type TSK could not load the file's attributes (e.g. a sparse file whose holes are
        // larger than the volume): the path still counts, its size is unknown.
        let attr_type = inode.split('-').nth(1);
        if path == "$OrphanFiles" || path.starts_with("$OrphanFiles/OrphanFile-") {
            continue;
        }
        // TSK lists a folder's named stream a second time, as `folder/.:stream`.
        let path = path.replace("/.:", ":");
        let mut path = match path.strip_prefix("$OrphanFiles/") {
            Some(rest) => format!("/$Orphan/{rest}"),
            None => format!("/{path}"),
        };
        let is_data = attr_type == Some("128");
        if attr_type.is_some() && !is_data {
            if let Some(i) = path
                .rfind(':')
                .filter(|&i| i > path.rfind('/').unwrap_or(0))
            {
                path.truncate(i);
            }
        }
        v.push(FlsEntry {
            path,
            deleted,
            data_size: if is_data { size } else { None },
        });
    }
    v
}

struct Sets {
    live: BTreeSet<String>,
    deleted: BTreeSet<String>,
    sizes: BTreeMap<String, u64>,
}

fn fls_sets(image: &Path, sector_offset: Option<u64>) -> Sets {
    let mut cmd = tool("fls");
    cmd.args(["-l", "-r", "-p"]);
    if let Some(o) = sector_offset {
        cmd.args(["-o", &o.to_string()]);
    }
    let out = run_ok(cmd.arg(image));
    let mut s = Sets {
        live: BTreeSet::new(),
        deleted: BTreeSet::new(),
        sizes: BTreeMap::new(),
    };
    for e in parse_fls(&String::from_utf8_lossy(&out.stdout)) {
        if let Some(sz) = e.data_size {
            s.sizes.insert(e.path.clone(), sz);
        }
        if e.deleted {
            s.deleted.insert(e.path);
        } else {
            s.live.insert(e.path);
        }
    }
    // A path can be both (a live file that reuses a deleted file's name): count it as live only.
    s.deleted = s.deleted.difference(&s.live).cloned().collect();
    s
}

fn uffs_sets(source: &str) -> Sets {
    let rows = csv_rows(&run_ok(uffs().args(["export", source, "--deleted", "--streams"])).stdout);
    let mut s = Sets {
        live: BTreeSet::new(),
        deleted: BTreeSet::new(),
        sizes: BTreeMap::new(),
    };
    for r in rows {
        if r["path"] == "/" {
            continue;
        }
        if r["kind"] != "folder" {
            s.sizes
                .insert(r["path"].clone(), r["size"].parse().expect("size"));
        }
        // fls reads no index slack: the names uffs finds there are checked against a log in index_slack.rs.
        if r["from_index_slack"] == "true" {
            continue;
        }
        if r["deleted"] == "true" {
            s.deleted.insert(r["path"].clone());
        } else {
            s.live.insert(r["path"].clone());
        }
    }
    s.deleted = s.deleted.difference(&s.live).cloned().collect();
    s
}

fn diff(what: &str, a: &BTreeSet<String>, b: &BTreeSet<String>) -> String {
    let only_tsk: Vec<_> = a.difference(b).take(15).collect();
    let only_uffs: Vec<_> = b.difference(a).take(15).collect();
    if only_tsk.is_empty() && only_uffs.is_empty() {
        return String::new();
    }
    format!("{what}: only in fls {only_tsk:?}; only in uffs {only_uffs:?}\n")
}

/// Compares uffs on `source` with fls on `image` (at `sector_offset` for a partition); returns the number of live
/// paths compared.
pub fn assert_parity(image: &Path, sector_offset: Option<u64>, source: &str) -> usize {
    let t = fls_sets(image, sector_offset);
    let u = uffs_sets(source);
    let mut report =
        diff("live paths", &t.live, &u.live) + &diff("deleted paths", &t.deleted, &u.deleted);
    let mut bad_sizes = 0;
    for (path, size) in &t.sizes {
        match u.sizes.get(path) {
            Some(us) if us != size => {
                if bad_sizes < 15 {
                    report += &format!("size of {path}: fls {size}, uffs {us}\n");
                }
                bad_sizes += 1;
            }
            _ => {}
        }
    }
    assert!(report.is_empty(), "{source} disagrees with fls:\n{report}");
    t.live.len()
}

/// The Debian `forensics-samples-ntfs` disk: an MBR with one NTFS partition at sector 2048 whose folders were
/// deleted after they were filled.
#[test]
fn forensics_sample_disk_matches_fls() {
    let xz = Path::new("/usr/share/forensics-samples/fs.ntfs.xz");
    assert!(
        xz.is_file(),
        "{} is missing; run `sudo scripts/setup.sh`",
        xz.display()
    );
    let dir = scratch("forensics-sample");
    let img = dir.join("fs.ntfs");
    let out = Command::new("xz").arg("-dc").arg(xz).output().expect("xz");
    assert!(out.status.success());
    std::fs::write(&img, out.stdout).expect("write image");
    let n = assert_parity(&img, Some(2048), img.to_str().expect("utf-8 path"));
    assert!(n >= 39, "only {n} live paths");
    // The deleted folders and their files come back with their paths.
    let rows = export(&img, &["--deleted"]);
    let deleted: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r["deleted"] == "true")
        .map(|r| r["path"].as_str())
        .collect();
    for p in [
        "/audio2",
        "/audio2/deleted.mp3",
        "/pic2/d-debian.png",
        "/text2/test.sh",
    ] {
        assert!(deleted.contains(p), "{p} not found among deleted entries");
    }
}

#[test]
fn linux_made_volume_matches_fls() {
    let img = data("linux-made/testfs1");
    let n = assert_parity(&img, None, img.to_str().expect("utf-8 path"));
    assert!(n > 500, "only {n} live paths");
}

#[test]
fn basic_volume_matches_fls() {
    let img = fixture("basic.img");
    let n = assert_parity(&img, None, path_str(&img));
    assert!(n > 10_000, "only {n} live paths");
}

#[test]
fn basic_volume_cases() {
    let img = fixture("basic.img");
    let f = facts("basic.img");
    let rows = export(&img, &["--streams", "--deleted"]);
    let of = |key: &str| -> Vec<&std::collections::HashMap<String, String>> {
        rows.iter()
            .filter(|r| r["record"] == f[key] && r["kind"] != "stream")
            .collect()
    };
    // A hard link is an entry per name.
    assert_eq!(of("hardlink3_inode").len(), 3);
    // Names that only exist in extension records ($ATTRIBUTE_LIST, non-resident and resident) all appear.
    assert_eq!(
        of("attrlist_inode").len(),
        31,
        "names of the file with a non-resident attribute list"
    );
    // The original name and five links.
    assert_eq!(
        of("attrlist_small_inode").len(),
        6,
        "names of the file with a resident attribute list"
    );
    let long = of("name255_inode");
    assert_eq!(long[0]["name"].chars().count(), 255);
    // The folder of 10,000 files: recursive count and depth of the deepest path.
    let many = of("many_files_dir_inode")[0];
    let files: Vec<_> = rows
        .iter()
        .filter(|r| r["parent_record"] == many["record"])
        .collect();
    assert_eq!(files.len(), 10_000);
    let deep = of("deep_bottom_inode")[0];
    assert!(deep["path"].matches('/').count() >= 30, "{}", deep["path"]);
    // Sparse and compressed files: logical size, little allocated, attribute letters.
    let sparse = of("sparse_5GiB_inode")[0];
    assert_eq!(sparse["size"], (5u64 << 30).to_string());
    assert!(sparse["attributes"].contains('p'), "{sparse:?}");
    assert!(sparse["allocated"].parse::<u64>().unwrap() < 1 << 20);
    assert!(of("compressed_inode")[0]["attributes"].contains('c'));
    // Reparse points: a junction (IO_REPARSE_TAG_MOUNT_POINT) and symbolic links (IO_REPARSE_TAG_SYMLINK).
    assert_eq!(of("junction_inode")[0]["reparse_tag"], "0xA0000003");
    assert_eq!(
        of("reparse_symlink_file_inode")[0]["reparse_tag"],
        "0xA000000C"
    );
    assert!(of("junction_inode")[0]["attributes"].contains('l'));
    assert!(of("attrs_hidden_inode")[0]["attributes"].contains('h'));
    assert!(of("attrs_readonly_inode")[0]["attributes"].contains('r'));
    // A named stream on a folder, and deleted files and a deleted folder.
    assert!(rows
        .iter()
        .any(|r| r["record"] == f["ads_dir_inode"] && r["kind"] == "stream"));
    for key in [
        "deleted_resident_inode",
        "deleted_nonresident_inode",
        "deleted_folder_inode",
    ] {
        let e = of(key);
        assert!(
            !e.is_empty() && e.iter().all(|r| r["deleted"] == "true"),
            "{key}: {e:?}"
        );
    }
    // DOS 8.3 aliases are not entries: the file with a Win32 + DOS pair has one name.
    assert_eq!(of("attrs_win32dos_inode").len(), 1);
}

#[test]
fn raw_mft_of_a_volume_gives_the_same_entries() {
    let from_volume = export(&fixture("basic.img"), &["--streams", "--deleted"]);
    let from_mft = export(&fixture("raw-mft.bin"), &["--streams", "--deleted"]);
    assert_eq!(from_mft.len(), from_volume.len());
    assert_eq!(from_mft, from_volume);
}

#[test]
fn four_kib_sectors_and_records_match_fls() {
    let img = fixture("sector4k.img");
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
    assert!(
        info.contains("record      4096 bytes") && info.contains("sector      4096 bytes"),
        "{info}"
    );
    assert_parity(&img, None, path_str(&img));
}

#[test]
fn large_clusters_match() {
    let k64 = fixture("bigcluster-64k.img");
    assert_parity(&k64, None, path_str(&k64));
    // TSK cannot read 2 MiB clusters; the same tree on 64 KiB clusters (checked above) is the reference.
    let m2 = fixture("bigcluster.img");
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&m2)).stdout).unwrap();
    assert!(info.contains("cluster     2097152 bytes"), "{info}");
    // The script names two files after their volume (`readme-bigcluster.txt`, `readme-bigcluster64k.txt`);
    // the readme's text says which volume it is on, so its size differs too.
    let user = |rows: Vec<std::collections::HashMap<String, String>>| -> BTreeSet<(String, String, String)> {
        rows.into_iter()
            .filter(|r| !r["path"].starts_with("/$"))
            .map(|r| {
                let path = r["path"].replace("bigcluster64k", "bigcluster");
                let size = if path.contains("readme-") { String::new() } else { r["size"].clone() };
                (path, size, r["deleted"].clone())
            })
            .collect()
    };
    let a = user(export(&m2, &["--streams", "--deleted"]));
    let b = user(export(&k64, &["--streams", "--deleted"]));
    assert!(a.len() > 10);
    assert_eq!(a, b);
}

#[test]
fn fragmented_mft_with_attribute_list_matches_fls() {
    let img = fixture("fragmented.img");
    let f = facts("fragmented.img");
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
    let extents = format!(
        "in {} extents (described through an $ATTRIBUTE_LIST)",
        f["mft_extents"]
    );
    assert!(info.contains(&extents), "{info}");
    let n = assert_parity(&img, None, path_str(&img));
    assert!(n > 4000, "only {n} live paths");
}

#[test]
fn mbr_disk_partitions_match_fls() {
    let img = fixture("disk-mbr.img");
    let f = facts("disk-mbr.img");
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&img)).stdout).unwrap();
    // Two primary NTFS partitions, a FAT one, and a logical NTFS partition inside the extended one.
    for v in ["disk-mbr.img@1", "disk-mbr.img@3", "disk-mbr.img@5"] {
        assert!(
            info.contains(&format!("volume        {}", fixture(v).display())),
            "{v} missing: {info}"
        );
    }
    // The FAT16 partition is a volume too (read from its own tables: crates/uffs/tests/fat_volumes.rs); the
    // Linux one, zeros, is none.
    let fat = format!(
        "volume        {}\n  file system FAT16",
        fixture("disk-mbr.img@2").display()
    );
    if f["p2_content"] == "fat16" {
        assert!(info.contains(&fat), "{info}");
    }
    assert!(!info.contains("img@6\n"));
    for (n, start) in [(1, "p1_start"), (3, "p3_start"), (5, "p5_start")] {
        let offset: u64 = f[start].parse().unwrap();
        let spec = format!("{}@{n}", img.display());
        assert_parity(&img, Some(offset), &spec);
        // --partition N picks the same volume as @N.
        let a = run_ok(uffs().args(["export", &spec])).stdout;
        let b = run_ok(
            uffs()
                .arg("export")
                .arg(&img)
                .args(["--partition", &n.to_string()]),
        )
        .stdout;
        assert_eq!(a, b);
    }
    // Without a partition, every NTFS volume is exported, paths prefixed by their partition.
    let all = export(&img, &[]);
    for n in [1, 3, 5] {
        assert!(
            all.iter()
                .any(|r| r["path"].starts_with(&format!("@{n}:/"))),
            "no entries of @{n}"
        );
    }
    // Partition 6 holds zeros: no file system uffs reads (partition 2, FAT16, is read: fat_volumes.rs).
    let out = uffs()
        .arg("info")
        .arg(format!("{}@6", img.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("partition 6 of"),
        "{:?}",
        out
    );
}

#[test]
fn gpt_disk_partitions_match_fls() {
    let img = fixture("disk-gpt.img");
    let f = facts("disk-gpt.img");
    for (n, start) in [(2, "p2_start"), (3, "p3_start")] {
        let offset: u64 = f[start].parse().unwrap();
        assert_parity(&img, Some(offset), &format!("{}@{n}", img.display()));
    }
}
