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
        let attr_type = inode.split('-').nth(1);
        if path == "$OrphanFiles"
            || path.starts_with("$OrphanFiles/OrphanFile-")
            || attr_type.is_none()
        {
            continue;
        }
        let mut path = match path.strip_prefix("$OrphanFiles/") {
            Some(rest) => format!("/$Orphan/{rest}"),
            None => format!("/{path}"),
        };
        let is_data = attr_type == Some("128");
        if !is_data {
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
        if r["kind"] != "dir" {
            s.sizes
                .insert(r["path"].clone(), r["size"].parse().expect("size"));
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
