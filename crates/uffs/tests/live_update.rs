//! Live indexes, the differential test: a volume made with mkntfs and changed through the real ntfs-3g driver by
//! a seeded random sequence of operations; after each batch, the index brought up to date (`uffs index
//! --update`: a re-scan finds the changed records, only those are read again, and a delta over the index holds
//! their entries; or `--update --compact`, merged into a whole index) must equal a fresh build of the
//! same volume: the same rows (paths, sizes, times, `$FILE_NAME` times, flags, streams, deleted entries), the same
//! body file (attribute ids), the same folder totals, the same answers to a fixed set of queries. A failure names
//! its seed and batch.

#![cfg(unix)]

mod common;

use std::path::Path;

use common::live::{make_volume, random_op, Mounted, Rng};
use common::{csv_rows, run_ok, scratch, uffs};

/// What must be equal between an updated index and a fresh one: every row with streams and deleted entries
/// (sorted: entry ids may differ), as CSV (with the `$FILE_NAME` times) and as a body file (with the attribute
/// ids), folder totals, and the answers to fixed queries.
pub fn observe(index: &Path, deleted: bool) -> Vec<String> {
    let mut seen = Vec::new();
    // Names from index slack are read by whole builds; an update keeps those its index was built with (see
    // docs/commands.md): they are left out of the comparison, their paths taken from the CSV export.
    let mut slack: Vec<(String, String)> = Vec::new();
    for format in ["csv", "bodyfile"] {
        let mut export = uffs();
        export
            .arg("export")
            .arg(index)
            .args(["--format", format, "--streams"]);
        if deleted {
            export.arg("--deleted");
        }
        let out = run_ok(&mut export);
        if format == "csv" {
            slack = csv_rows(&out.stdout)
                .into_iter()
                .filter(|r| r["from_index_slack"] == "true")
                .map(|r| {
                    (
                        r["path"].clone(),
                        format!("{}-", r["record"].parse::<u64>().unwrap_or(0)),
                    )
                })
                .collect();
        }
        // A bodyfile row is the slack name's when its name is the path and its inode the record (0: unknown).
        let from_slack = |line: &str| match format {
            // `from_index_slack` is the next to last column, before `alias` (an 8.3 name, which has no comma).
            "csv" => line
                .rsplit_once(',')
                .is_some_and(|(head, _alias)| head.ends_with(",true")),
            _ => {
                let mut f = line.split('|').skip(1);
                let (name, inode) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
                slack.iter().any(|(p, r)| {
                    inode.starts_with(r.as_str())
                        && name
                            .strip_prefix(p.as_str())
                            .is_some_and(|r| r.starts_with(" ("))
                })
            }
        };
        let mut rows: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| !from_slack(l))
            .map(String::from)
            .collect();
        rows.sort();
        seen.push(format!("== export {format}"));
        seen.extend(rows);
    }
    let queries: &[&[&str]] = &[
        &[
            "folder:",
            "--columns",
            "path,tree_size,tree_allocated,descendants,children",
            "--format",
            "csv",
        ],
        &["txt"],
        &["ext:dat;docx", "--sort", "size"],
        &["moved/", "--sort", "path"],
        &["size:>1kb", "--sort", "modified", "--limit", "20"],
        &["attrib:h"],
        &["regex:^n\\d+_a", "--sort", "name"],
        &["dupe:", "--sort", "path"],
        &["stream:", "--sort", "path"],
        &[
            "size:>0",
            "--sort",
            "path",
            "--format",
            "csv",
            "--columns",
            "path,fn_created,fn_modified,fn_mft_changed,fn_accessed",
        ],
        &["*", "--count"],
        &["sizedupe:", "--sort", "path"],
        &["empty:"],
        &["treesize:>10kb", "--sort", "treesize", "--limit", "30"],
        // Paths below folders renamed or moved resolve through their new paths: path terms, folder terms, depth,
        // and the path order (whole, from the end, and its first few).
        &["path:/dir", "--sort", "path", "--limit", "40"],
        &["path:ed1/n", "--sort", "path"],
        &["path:med/sub0"],
        &["path:Renamed/sub07/De"],
        &["path:er/Ren"],
        &["path:a/Renamed/s"],
        &["path:ub03/dee"],
        &["path:/oth"],
        &["path:moved*/*", "--glob"],
        &["path:*/n*a.txt", "--glob"],
        &["parent:/", "--sort", "path", "--reverse"],
        &["depth:3"],
        &["folder:", "--sort", "path", "--reverse", "--limit", "30"],
        &["file:", "--sort", "path", "--limit", "60"],
    ];
    // Disk usage of the index and its delta as one volume.
    let du = run_ok(
        uffs()
            .args(["du", "/", "--depth", "4", "--format", "csv", "--index"])
            .arg(index),
    );
    seen.push("== du".into());
    seen.extend(
        String::from_utf8_lossy(&du.stdout)
            .lines()
            .map(String::from),
    );
    for q in queries {
        let out = uffs()
            .arg("--index")
            .arg(index)
            .args(*q)
            .args(["--sort", "path"].iter().filter(|_| !q.contains(&"--sort")))
            .output()
            .unwrap();
        assert!(
            out.status.code().unwrap_or(2) < 2,
            "query {q:?} failed: {out:?}"
        );
        seen.push(format!("== {q:?}"));
        seen.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(String::from),
        );
    }
    seen
}

/// Runs `batches` batches of `ops` random operations on a fresh volume, checking the updated index against a
/// fresh build after each.
fn differential(seed: u64, batches: usize, ops: usize, deleted: bool) {
    let dir = scratch(&format!("live-{seed}-{deleted}"));
    let img = make_volume(&dir, 48);
    let (updated, fresh) = (dir.join("updated.uffs"), dir.join("fresh.uffs"));
    let index = |out: &Path, update: bool, compact: bool| {
        let mut c = uffs();
        c.arg("index").arg(&img).arg("-o").arg(out);
        if update {
            c.arg("--update");
        }
        if compact {
            c.arg("--compact");
        }
        if deleted {
            c.arg("--deleted");
        }
        let o = run_ok(&mut c);
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    index(&updated, false, false);
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut counter = 0;
    for batch in 0..batches {
        {
            let m = Mounted::new(&img, &dir.join("mnt"));
            for _ in 0..ops {
                random_op(&mut rng, &m.dir, &mut counter);
            }
        }
        // Most updates go to the delta beside the index, over several batches; every third is merged into
        // a whole index, so both the layered index and the merged one are compared with fresh builds.
        let compact = (seed as usize + batch) % 3 == 2;
        let how = index(&updated, true, compact);
        assert_eq!(
            dir.join("updated.uffs.delta").exists(),
            !compact && !how.contains("unchanged"),
            "seed {seed} batch {batch}: {how}"
        );
        assert!(
            how.contains("re-scan") || how.contains("unchanged"),
            "seed {seed} batch {batch}: the index was not updated in place: {how}"
        );
        index(&fresh, false, false);
        let (a, b) = (observe(&updated, deleted), observe(&fresh, deleted));
        assert!(
            a == b,
            "seed {seed} batch {batch} (deleted={deleted}): the updated index differs from a fresh build\n{}",
            first_difference(&a, &b)
        );
    }
    // Building the file again leaves no delta that would apply to what it held before.
    index(&updated, false, false);
    assert!(!dir.join("updated.uffs.delta").exists());
}

#[test]
fn updated_indexes_equal_fresh_builds() {
    // Seeds from the environment reproduce a failure: UFFS_LIVE_SEEDS=17,18.
    let seeds: Vec<u64> = std::env::var("UFFS_LIVE_SEEDS")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| (1..=6).collect());
    for seed in seeds {
        differential(seed, 5, 40, false);
    }
}

#[test]
fn updated_indexes_with_deleted_entries_equal_fresh_builds() {
    // UFFS_LIVE_DELETED_SEEDS=103,104 tries others.
    let seeds: Vec<u64> = std::env::var("UFFS_LIVE_DELETED_SEEDS")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![101, 102]);
    for seed in seeds {
        differential(seed, 4, 40, true);
    }
}

/// `dupe:` on an index with a delta sees the names of both as one volume: a file made after the index under a
/// name the index has makes both duplicates, and a duplicate whose twin was deleted since is no longer one.
#[test]
fn duplicates_span_the_index_and_its_delta() {
    let dir = scratch("live-dupes");
    let img = make_volume(&dir, 32);
    let mnt = dir.join("mnt");
    {
        let m = Mounted::new(&img, &mnt);
        for d in ["a", "b"] {
            std::fs::create_dir(m.dir.join(d)).unwrap();
        }
        for f in ["a/twin.txt", "a/gone.txt", "b/gone.txt"] {
            std::fs::write(m.dir.join(f), b"1").unwrap();
        }
    }
    let index = dir.join("i.uffs");
    run_ok(uffs().arg("index").arg(&img).arg("-o").arg(&index));
    {
        let m = Mounted::new(&img, &mnt);
        std::fs::write(m.dir.join("b/twin.txt"), b"2").unwrap();
        std::fs::remove_file(m.dir.join("b/gone.txt")).unwrap();
    }
    run_ok(
        uffs()
            .arg("index")
            .arg(&img)
            .arg("-o")
            .arg(&index)
            .arg("--update"),
    );
    assert!(dir.join("i.uffs.delta").exists());
    let dupes = |name: &str| {
        let o = uffs()
            .arg("--index")
            .arg(&index)
            .args(["dupe:", name, "--sort", "path"])
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(dupes("twin"), "/a/twin.txt\n/b/twin.txt\n");
    assert_eq!(dupes("gone"), "");
}

/// A folder with a named stream joins a delta as an ancestor (a file below it changed): its stream must join with
/// it, or an index merged from that delta holds the folder's entries apart, and the folder's next change leaves
/// its old entry visible beside the new one.
#[test]
fn a_folder_with_a_stream_stays_whole_through_a_merge() {
    let dir = scratch("live-folder-stream");
    let img = make_volume(&dir, 32);
    let mnt = dir.join("mnt");
    let (index, fresh) = (dir.join("i.uffs"), dir.join("f.uffs"));
    let build = |out: &Path, args: &[&str]| {
        run_ok(uffs().arg("index").arg(&img).arg("-o").arg(out).args(args));
    };
    {
        let m = Mounted::new(&img, &mnt);
        std::fs::create_dir_all(m.dir.join("d/sub")).unwrap();
        std::fs::write(m.dir.join("d/sub/f"), b"a").unwrap();
        std::fs::write(format!("{}:ads", m.dir.join("d").display()), b"s").unwrap();
    }
    build(&index, &[]);
    let change = |what: &dyn Fn(&Path)| {
        let m = Mounted::new(&img, &mnt);
        what(&m.dir);
    };
    let grow = |root: &Path| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(root.join("d/sub/f"))
            .unwrap();
        f.write_all(b"more").unwrap();
    };
    change(&grow);
    build(&index, &["--update"]);
    build(&index, &["--update", "--compact"]);
    change(&|root: &Path| {
        std::fs::remove_file(format!("{}:ads", root.join("d").display())).unwrap();
        grow(root);
    });
    build(&index, &["--update"]);
    build(&fresh, &[]);
    assert_eq!(observe(&index, false), observe(&fresh, false));
}

/// Renaming or moving a folder changes one record: the delta holds that folder and its ancestors, never its
/// subtree, whose paths resolve through the folder's new path. Nested renames, a move into a new folder and back
/// out, and a rename under a renamed folder all answer as a fresh build does.
#[test]
fn renaming_a_large_folder_costs_one_record() {
    let dir = scratch("live-rename");
    let img = make_volume(&dir, 48);
    let mnt = dir.join("mnt");
    let (index, fresh) = (dir.join("i.uffs"), dir.join("f.uffs"));
    {
        let m = Mounted::new(&img, &mnt);
        for i in 0..20 {
            let sub = m.dir.join(format!("big/sub{i:02}/deeper"));
            std::fs::create_dir_all(&sub).unwrap();
            for j in 0..50 {
                std::fs::write(sub.join(format!("f{j}.txt")), b"x").unwrap();
                std::fs::write(sub.parent().unwrap().join(format!("g{j}.dat")), b"yy").unwrap();
            }
        }
        std::fs::create_dir_all(m.dir.join("other/nest")).unwrap();
        std::fs::write(m.dir.join("other/nest/keep.txt"), b"k").unwrap();
        std::fs::create_dir_all(m.dir.join("zeta")).unwrap();
    }
    run_ok(uffs().arg("index").arg(&img).arg("-o").arg(&index));
    // Each step's changed records are few; the subtrees moved hold about 2,000 entries each time.
    let steps: [&dyn Fn(&Path); 4] = [
        &|r| std::fs::rename(r.join("big"), r.join("other/Renamed")).unwrap(),
        &|r| {
            std::fs::rename(r.join("other/Renamed/sub03"), r.join("zeta/a-sub03")).unwrap();
            std::fs::rename(r.join("other/nest"), r.join("zeta/nest-out")).unwrap();
            std::fs::rename(
                r.join("other/Renamed/sub07/deeper"),
                r.join("other/Renamed/sub07/Deep2"),
            )
            .unwrap();
        },
        &|r| {
            std::fs::rename(r.join("other"), r.join("aaa")).unwrap();
            std::fs::write(r.join("aaa/Renamed/sub01/new.txt"), b"n").unwrap();
        },
        &|r| {
            std::fs::create_dir(r.join("fresh")).unwrap();
            std::fs::rename(r.join("aaa/Renamed"), r.join("fresh/big")).unwrap();
            std::fs::rename(r.join("zeta/a-sub03"), r.join("fresh/big/sub03")).unwrap();
        },
    ];
    for (k, step) in steps.iter().enumerate() {
        {
            let m = Mounted::new(&img, &mnt);
            step(&m.dir);
        }
        let out = run_ok(
            uffs()
                .arg("index")
                .arg(&img)
                .arg("-o")
                .arg(&index)
                .arg("--update"),
        );
        let how = String::from_utf8_lossy(&out.stderr).into_owned();
        let delta: usize = how
            .split("delta of ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .map(|n| n.replace(',', "").parse().unwrap())
            .unwrap_or_else(|| panic!("step {k}: no delta: {how}"));
        assert!(
            delta < 40,
            "step {k}: the delta holds {delta} entries: {how}"
        );
        run_ok(uffs().arg("index").arg(&img).arg("-o").arg(&fresh));
        let (a, b) = (observe(&index, false), observe(&fresh, false));
        assert!(
            a == b,
            "step {k}: differs from a fresh build:\n{}",
            first_difference(&a, &b)
        );
    }
}

/// The first lines that differ between two observations, for a failure message.
fn first_difference(a: &[String], b: &[String]) -> String {
    a.iter()
        .filter(|l| !b.contains(l))
        .map(|l| format!("- updated only: {l}"))
        .chain(
            b.iter()
                .filter(|l| !a.contains(l))
                .map(|l| format!("+ fresh only: {l}")),
        )
        .take(40)
        .collect::<Vec<_>>()
        .join("\n")
}
