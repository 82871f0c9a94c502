//! Volume Shadow Copies against libvshadow and The Sleuth Kit, on a volume Windows wrote with two shadow copies
//! (plaso's `vsstest`, `tests/data/windows-volumes/`):
//! - `uffs info` lists the stores `vshadowinfo` lists, with the same identifiers, times and sizes;
//! - each store read as `SOURCE@vssN` is byte for byte the store `vshadowmount` exposes; its paths are those
//!   `fls -r -p` lists on that store, and `uffs cat` of every file is `icat` on it;
//! - `--snapshots` searches the present and every store, and `volumes add --snapshots` registers them;
//! - `uffs index --snapshots` keeps each store as a delta over the present's index that exports as the store's
//!   whole build does;
//! - a catalog or block list pointing outside the volume, or looping, is one line and exit 2; a shadow copy
//!   without a store is said to be unreadable;
//! - stores kept on another volume read as the states they hold, given that volume or finding it on the disk.
#![cfg(unix)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::daemon::World;
use common::*;

/// The volume with shadow copies, as a raw image in `dir`.
fn vsstest(dir: &Path) -> PathBuf {
    let raw = dir.join("vsstest.raw");
    run_ok(
        tool("qemu-img")
            .args(["convert", "-O", "raw"])
            .arg(data("windows-volumes/plaso-vsstest.qcow2"))
            .arg(&raw),
    );
    raw
}

/// `vshadowinfo`'s stores: number → (identifier, set id, shadow copy id, creation time as uffs writes it, size).
fn vshadowinfo(raw: &Path) -> BTreeMap<u32, [String; 5]> {
    let out = String::from_utf8(run_ok(tool("vshadowinfo").arg(raw)).stdout).unwrap();
    let mut stores = BTreeMap::new();
    let mut cur: Option<(u32, [String; 5])> = None;
    for line in out.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix("Store: ") {
            stores.extend(cur.take());
            cur = Some((n.parse().unwrap(), Default::default()));
            continue;
        }
        let (Some((_, s)), Some((k, v))) = (cur.as_mut(), line.split_once(':')) else {
            continue;
        };
        let v = v.trim().to_string();
        match k.trim() {
            "Identifier" => s[0] = v,
            "Shadow copy set ID" => s[1] = v,
            "Shadow copy ID" => s[2] = v,
            // `Dec 03, 2013 06:35:09.736378700 UTC` → `2013-12-03T06:35:09.7363787Z`.
            "Creation time" => {
                let f: Vec<&str> = v.split([' ', ',']).filter(|f| !f.is_empty()).collect();
                let month = [
                    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                    "Dec",
                ]
                .iter()
                .position(|m| *m == f[0])
                .unwrap()
                    + 1;
                let time = f[3].trim_end_matches('0');
                s[3] = format!("{}-{month:02}-{}T{time}Z", f[2], f[1]);
            }
            "Volume size" => {
                s[4] = v
                    .split('(')
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap()
                    .into()
            }
            _ => {}
        }
    }
    stores.extend(cur);
    stores
}

#[test]
fn info_lists_the_stores_vshadowinfo_lists() {
    let dir = scratch("vss-info");
    let raw = vsstest(&dir);
    let want = vshadowinfo(&raw);
    assert_eq!(want.len(), 2, "{want:?}");
    let info: serde_json::Value =
        serde_json::from_slice(&run_ok(uffs().args(["info", path_str(&raw), "--json"])).stdout)
            .unwrap();
    let got: BTreeMap<u32, [String; 5]> = info["volumes"][0]["shadow_copies"]
        .as_array()
        .expect("shadow_copies")
        .iter()
        .map(|s| {
            let t = |k: &str| s[k].as_str().unwrap().to_string();
            (
                s["index"].as_u64().unwrap() as u32,
                [
                    t("store_id"),
                    t("set_id"),
                    t("shadow_copy_id"),
                    t("created"),
                    s["volume_size"].to_string(),
                ],
            )
        })
        .collect();
    assert_eq!(got, want);
    let text = String::from_utf8(run_ok(uffs().args(["info", path_str(&raw)])).stdout).unwrap();
    assert!(text.contains("  shadow copies 2 (open one as "), "{text}");
    assert!(
        text.contains("    vss1   created 2013-12-03T06:35:09.7363787Z  store 600f0b69-"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `vshadowmount` on `raw` at `mnt`, unmounted when dropped.
struct Mounted(PathBuf);

impl Mounted {
    fn new(raw: &Path, mnt: &Path) -> Mounted {
        std::fs::create_dir_all(mnt).unwrap();
        run_ok(tool("vshadowmount").arg(raw).arg(mnt));
        Mounted(mnt.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("fusermount").arg("-u").arg(&self.0).status();
    }
}

/// The live paths `fls -r -p` lists on `image`, as uffs writes them (`/a/b`, named streams `file:name`).
fn fls_paths(image: &Path) -> BTreeSet<String> {
    let out = run_ok(tool("fls").args(["-r", "-p", "-u"]).arg(image));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (head, path) = l.split_once('\t')?;
            if path.starts_with("$OrphanFiles") {
                return None;
            }
            let mut path = format!("/{path}");
            // `$Secure:$SDS` names an attribute that is no data stream (type other than 128).
            let ty = head
                .trim_end_matches(':')
                .rsplit(' ')
                .next()?
                .split('-')
                .nth(1);
            if ty.is_some_and(|t| t != "128") {
                if let Some(i) = path
                    .rfind(':')
                    .filter(|&i| i > path.rfind('/').unwrap_or(0))
                {
                    path.truncate(i);
                }
            }
            Some(path)
        })
        .collect()
}

#[test]
fn each_store_reads_as_vshadowmount_exposes_it() {
    let dir = scratch("vss-stores");
    let raw = vsstest(&dir);
    let mnt = Mounted::new(&raw, &dir.join("mnt"));
    let device = uffs_mft::device::Device::open(&raw).unwrap();
    let mut seen = Vec::new();
    for n in [1u32, 2] {
        let store = mnt.0.join(format!("vss{n}"));
        // Byte for byte, in reads that cross blocks at odd places.
        let snap = uffs_mft::vss::Snapshot::open(&device, n, vec![raw.clone()]).unwrap();
        use uffs_mft::container::Image as _;
        let want_len = std::fs::metadata(&store).unwrap().len();
        assert_eq!(snap.len(), want_len);
        let file = std::fs::File::open(&store).unwrap();
        let (mut a, mut b) = (vec![0u8; 3 << 20], vec![0u8; 3 << 20]);
        let mut off = 0u64;
        while off < want_len {
            let k = (want_len - off).min(a.len() as u64 - 1536) as usize;
            snap.read_at(&mut a[..k], off).unwrap();
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut b[..k], off).unwrap();
            assert!(a[..k] == b[..k], "vss{n}: bytes differ in {off}+{k}");
            off += k as u64;
        }
        // Paths as fls lists them on the store.
        let source = format!("{}@vss{n}", raw.display());
        let rows = csv_rows(&run_ok(uffs().args(["export", &source, "--streams"])).stdout);
        let paths: BTreeSet<String> = rows
            .iter()
            .map(|r| r["path"].clone())
            .filter(|p| p != "/")
            .collect();
        assert_eq!(paths, fls_paths(&store), "vss{n}: paths");
        // Every file's content as icat reads it from the store.
        let mut files = 0;
        for r in rows
            .iter()
            .filter(|r| r["kind"] == "file" && !r["path"].contains(':'))
        {
            let out = uffs().args(["cat", &source, &r["path"]]).output().unwrap();
            // `$Secure` and the like hold named streams only.
            if String::from_utf8_lossy(&out.stderr).contains("has no unnamed data stream") {
                continue;
            }
            assert!(out.status.success(), "vss{n}: cat {}", r["path"]);
            files += 1;
            let got = out.stdout;
            let want = run_ok(tool("icat").arg(&store).arg(&r["record"])).stdout;
            assert!(got == want, "vss{n}: {} differs from icat", r["path"]);
        }
        assert!(files >= 10, "vss{n}: only {files} files read");
        seen.push(paths);
    }
    // The stores are states the present no longer has.
    assert!(seen[0].contains("/syslog") && !seen[1].contains("/syslog"));
    assert!(seen[1].contains("/syslog.gz"));
    drop(mnt);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn snapshots_are_searched_and_registered_as_volumes_of_their_own() {
    let dir = scratch("vss-search");
    let raw = vsstest(&dir);
    let s = path_str(&raw);
    let out = run_ok(uffs().args(["--source", s, "--snapshots", "!$*", "!path:System*"]));
    let lines: BTreeSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    for p in [
        "/password.txt",
        "@vss1:/syslog",
        "@vss2:/syslog.gz",
        "@vss2:/another_file",
    ] {
        assert!(lines.contains(p), "{p} missing from {lines:?}");
    }
    // `export --snapshots` gives the same entries as the search (and each volume's root, which a search leaves
    // out), with the same names.
    let all = run_ok(uffs().args(["--source", s, "--snapshots", "*"]));
    let mut searched: BTreeSet<String> = String::from_utf8(all.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    searched.extend(["/", "@vss1:/", "@vss2:/"].map(String::from));
    let exported: BTreeSet<String> = common::export(&raw, &["--snapshots"])
        .into_iter()
        .map(|r| r["path"].clone())
        .collect();
    assert_eq!(exported, searched);
    let one = run_ok(uffs().args(["--source", s, "--snapshots", "--volume", "@vss1", "syslog"]));
    assert_eq!(String::from_utf8(one.stdout).unwrap(), "@vss1:/syslog\n");
    // One store alone, and one that is not there.
    let alone = run_ok(uffs().args(["--source", &format!("{s}@vss2"), "ext:gz"]));
    assert_eq!(String::from_utf8(alone.stdout).unwrap(), "/syslog.gz\n");
    let none = uffs()
        .args(["info", &format!("{s}@vss3")])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    let err = String::from_utf8(none.stderr).unwrap();
    assert!(err.contains("no shadow copy 3: it has 2"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // Registered with the daemon: the volume and each store, answering one query together.
    let w = World::new("vss");
    w.start();
    w.ok(&["volumes", "add", s, "--name", "vt", "--snapshots"]);
    let listed = w.ok(&["volumes", "list"]);
    for name in ["vt", "vt@vss1", "vt@vss2"] {
        assert!(listed.contains(name), "{listed}");
    }
    // Each store is the volume's index (the same file, linked) with the store's delta over it, and counts the
    // entries a whole build of the store has.
    let entries = |spec: &str| {
        let out = run_ok(
            uffs()
                .args(["index", spec, "-o"])
                .arg(dir.join("whole.uffs")),
        );
        let err = String::from_utf8(out.stderr).unwrap();
        let (_, after) = err.split_once(": ").unwrap();
        after.split(' ').next().unwrap().to_string()
    };
    for n in 1..=2 {
        let line = listed
            .lines()
            .find(|l| l.starts_with(&format!("vt@vss{n}\t")))
            .unwrap();
        let want = format!("\t{} entries\t", entries(&format!("{s}@vss{n}")));
        assert!(line.contains(&want), "{line} lacks {want}");
        let file = w.newest_index(&format!("vt@vss{n}"));
        assert!(
            PathBuf::from(format!("{}.delta", file.display())).exists(),
            "{file:?}"
        );
    }
    // A store does not change: checking it for changes finds none.
    let refreshed = w.ok(&["volumes", "refresh"]);
    for name in ["vt@vss1", "vt@vss2"] {
        assert!(
            refreshed.contains(&format!("{name}: unchanged")),
            "{refreshed}"
        );
    }
    let found = w.ok(&["syslog*"]);
    let found: BTreeSet<&str> = found.lines().collect();
    assert_eq!(
        found,
        BTreeSet::from(["vt:/syslog.gz", "vt@vss1:/syslog", "vt@vss2:/syslog.gz"]),
        "{found:?}"
    );
    w.ok(&["daemon", "stop"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The export of `source` as CSV lines without the header, each prefixed `prefix`, sorted.
fn export_lines(source: &Path, prefix: &str, extra: &[&str]) -> Vec<String> {
    // Names from index slack (`from_index_slack` `true`) are read by whole builds of the present only: a store is
    // a delta of MFT records (see docs/commands.md), so they are left out of the comparison.
    let mut v: Vec<String> = String::from_utf8(export_csv(source, extra))
        .unwrap()
        .lines()
        .skip(1)
        // `from_index_slack`, before the last column (`alias`, an 8.3 name, which has no comma).
        .filter(|l| {
            !l.rsplit_once(',')
                .is_some_and(|(head, _)| head.ends_with(",true"))
        })
        .map(|l| format!("{prefix}{l}"))
        .collect();
    v.sort();
    v
}

/// What an index file of `present` with its stores exports: the present's rows, then each state's as `@vssN:`
/// (state N is store N), sorted.
fn present_and_states(present: &Path, states: &[PathBuf], extra: &[&str]) -> Vec<String> {
    let mut want = export_lines(present, "", extra);
    for (n, state) in states.iter().enumerate() {
        want.extend(export_lines(state, &format!("@vss{}:", n + 1), extra));
    }
    want.sort();
    want
}

/// `uffs index --snapshots` writes each store as a delta over the present's index (FILE.vssN), reading only the
/// MFT records in blocks the store changed: what the index file exports for each store is what a whole build
/// of that store (`IMG@vssN`) exports, row for row and column for column, deleted entries included; queries,
/// `content:` and `grep` answer across the present and the stores; an index written again without
/// `--snapshots` drops the store files, and a store file left over from before is ignored with a warning.
#[test]
fn index_with_snapshots_keeps_each_store_as_a_delta_equal_to_its_whole_build() {
    let dir = scratch("vss-index");
    let raw = vsstest(&dir);
    let file = dir.join("vt.uffs");
    let store = |n: u32| PathBuf::from(format!("{}.vss{n}", file.display()));
    for extra in [&[][..], &["--deleted"][..]] {
        let out = run_ok(
            uffs()
                .arg("index")
                .arg(&raw)
                .args(["--snapshots", "-o"])
                .arg(&file)
                .args(extra),
        );
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("MFT records differ from the present"), "{err}");
        assert!(store(1).exists() && store(2).exists() && !store(3).exists());
        let all = export_lines(&file, "", extra);
        let mut want = export_lines(&raw, "", extra);
        for n in 1..=2 {
            let at = PathBuf::from(format!("{}@vss{n}", raw.display()));
            want.extend(export_lines(&at, &format!("@vss{n}:"), extra));
        }
        want.sort();
        assert_eq!(all, want);
        // The same from the source with --snapshots, which makes the same deltas in memory.
        let out = run_ok(uffs().args(["--source", path_str(&raw), "--snapshots", "syslog*"]));
        let lines = String::from_utf8(out.stdout).unwrap();
        assert_eq!(lines, "/syslog.gz\n@vss1:/syslog\n@vss2:/syslog.gz\n");
    }
    let found = run_ok(uffs().args(["--index", path_str(&file), "syslog*"]));
    assert_eq!(
        String::from_utf8(found.stdout).unwrap(),
        "/syslog.gz\n@vss1:/syslog\n@vss2:/syslog.gz\n"
    );
    // The stores' data is read through them: only the first store still has the plain-text syslog.
    let content = run_ok(uffs().args(["--index", path_str(&file), "content:CRON"]));
    assert_eq!(
        String::from_utf8(content.stdout).unwrap(),
        "@vss1:/syslog\n"
    );
    let cat = run_ok(
        uffs()
            .arg("cat")
            .arg(format!("{}@vss1", raw.display()))
            .arg("/syslog"),
    );
    let cron = String::from_utf8_lossy(&cat.stdout).matches("CRON").count();
    let grep = run_ok(uffs().args(["grep", "--index", path_str(&file), "-c", "CRON"]));
    assert_eq!(
        String::from_utf8(grep.stdout).unwrap(),
        format!("@vss1:/syslog:{cron}\n")
    );

    // --update keeps the stores: untouched while FILE stands, made again when it is written again (here it is
    // built again, as it was made with the deleted entries, now not asked for).
    for extra in [&["--deleted"][..], &[][..]] {
        let out = run_ok(
            uffs()
                .arg("index")
                .arg(&raw)
                .args(["--update", "-o"])
                .arg(&file)
                .args(extra),
        );
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            err.contains("MFT records differ from the present"),
            extra.is_empty(),
            "{err}"
        );
        let out = run_ok(uffs().args(["--index", path_str(&file), "syslog*"]));
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "/syslog.gz\n@vss1:/syslog\n@vss2:/syslog.gz\n"
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // Left over from an earlier index of the volume: ignored, with a warning, and nothing of the stores shown.
    let kept = dir.join("vss1.kept");
    std::fs::copy(store(1), &kept).unwrap();
    run_ok(uffs().arg("index").arg(&raw).arg("-o").arg(&file));
    assert!(!store(1).exists() && !store(2).exists());
    std::fs::copy(&kept, store(1)).unwrap();
    let out = run_ok(uffs().args(["--index", path_str(&file), "syslog*"]));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "/syslog.gz\n");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("ignoring the shadow copies")
            && err.contains("run `uffs index --snapshots` again"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `uffs diff IMG@vss1 IMG`: what changed since the first shadow copy is the difference of the two exports (diff.rs
/// checks the same on changes made through ntfs-3g), and exit 1 as they differ.
#[test]
fn a_diff_against_a_shadow_copy_is_the_difference_of_the_exports() {
    let dir = scratch("vss-diff");
    let raw = vsstest(&dir);
    let store = PathBuf::from(format!("{}@vss1", raw.display()));
    let out = uffs()
        .arg("diff")
        .arg(&store)
        .arg(&raw)
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = csv_rows(&out.stdout);
    let mine: BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r["change"].clone(), r["record"].clone()))
        .collect();
    let reference = export_difference(&store, &raw);
    // The changes Windows made between the shadow copy and the present are all there.
    for (change, path) in [
        ("deleted", "/syslog"),
        ("created", "/syslog.gz"),
        ("created", "/password.txt"),
        ("created", "/another_file"),
    ] {
        assert!(
            rows.iter()
                .any(|r| r["change"] == change && r["path"] == path),
            "no {change} {path} in {rows:?}"
        );
    }
    assert_eq!(mine, reference);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_shadow_copy_metadata_is_one_line_and_exit_2() {
    let dir = scratch("vss-damaged");
    let raw = vsstest(&dir);
    let bytes = std::fs::read(&raw).unwrap();
    let le64 = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let catalog = le64(&bytes, 0x1E00 + 48) as usize;
    // The first type-3 catalog entry: where its store's block list is.
    let entry = (0..127)
        .map(|i| catalog + 128 + i * 128)
        .find(|&e| le64(&bytes, e) == 3)
        .unwrap();
    let cases: [(&str, usize, u64, &str); 3] = [
        ("catalog", 0x1E00 + 48, 1 << 40, "outside the volume"),
        ("block-list", entry + 8, 1 << 40, "outside the volume"),
        ("loop", catalog + 40, catalog as u64, "loop"),
    ];
    for (name, at, value, says) in cases {
        let mut b = bytes.clone();
        b[at..at + 8].copy_from_slice(&value.to_le_bytes());
        let img = dir.join(format!("{name}.raw"));
        std::fs::write(&img, &b).unwrap();
        let out = uffs()
            .args(["export", &format!("{}@vss1", img.display())])
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        // The volume itself still reads; info says the shadow copies are unreadable.
        let info = run_ok(uffs().args(["info", path_str(&img)]));
        let text = String::from_utf8(info.stdout).unwrap();
        if name != "block-list" {
            assert!(
                text.contains("shadow copies unreadable: "),
                "{name}: {text}"
            );
        }
        let _ = std::fs::remove_file(&img);
    }
    // A shadow copy the catalog lists without a store (as Windows Server 2003 wrote them): the other still
    // reads, and info says this one cannot be.
    let mut b = bytes.clone();
    b[entry..entry + 8].copy_from_slice(&1u64.to_le_bytes());
    let img = dir.join("storeless.raw");
    std::fs::write(&img, &b).unwrap();
    let info = run_ok(uffs().args(["info", path_str(&img)]));
    let text = String::from_utf8(info.stdout).unwrap();
    assert!(text.contains("shadow copies 1 "), "{text}");
    assert!(
        text.contains("shadow copies without a store 1 (created 20"),
        "{text}"
    );
    run_ok(uffs().args(["export", &format!("{}@vss1", img.display())]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Shadow copies whose stores Windows keeps on another volume (`vssadmin add shadowstorage /for=D: /on=E:`):
/// states made through ntfs-3g (a file of 1s, then 2s, now 3s, among random changes), and
/// `scripts/make-vss-volume.py --storage` writing the catalog's type-2 entries into the volume and the type-3
/// entries, store headers, block lists and copied blocks into another NTFS volume. libvshadow lists the stores
/// as "Data stored outside volume" (it cannot read them); uffs, given the storage volume, reads each store as
/// its state: the file reads 1s, 2s and 3s, and each store exports row for row as a fresh build of its state
/// image, as a source and through `index --snapshots`. Without the storage volume, `info` and every read say
/// which volume to give; on one disk the storage partition is found without being named; the daemon keeps it
/// with the stores it registers.
#[test]
fn stores_on_another_volume_read_as_the_states_they_hold() {
    use common::live::make_volume;
    let dir = scratch("vss-elsewhere");
    let volume = make_volume(&dir, 48);
    let storage = dir.join("stor.img");
    std::fs::copy(&volume, &storage).unwrap();
    run_ok(
        Command::new("mkntfs")
            .args(["-q", "-F", "-f"])
            .arg(&storage),
    );
    let (states, present) = churned_states(&dir, &volume, 0xe15e, 30, |k, mounted| {
        // Rewritten in place: the same clusters hold 1s, then 2s, then 3s.
        let digits = vec![b'1' + k as u8; 100_000];
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(mounted.join("digits.txt"))
            .unwrap();
        std::io::Write::write_all(&mut f, &digits).unwrap();
    });
    run_ok(
        Command::new("python3")
            .arg(repo().join("scripts/make-vss-volume.py"))
            .arg("--states")
            .args(&states)
            .arg("--present")
            .arg(&present)
            .arg("--storage")
            .arg(&storage)
            .arg("--quiet"),
    );
    let theirs = String::from_utf8(run_ok(tool("vshadowinfo").arg(&present)).stdout).unwrap();
    assert_eq!(
        theirs.matches("Data stored outside volume.").count(),
        2,
        "{theirs}"
    );
    let (p, stor) = (path_str(&present), path_str(&storage));

    // Without the storage volume: where the stores are and how to give it, never "Server 2003".
    let text = String::from_utf8(run_ok(uffs().args(["info", p])).stdout).unwrap();
    assert!(
        text.contains("shadow copies kept on another volume 2 (created ")
            && text.contains("which is not at hand: give it with --shadow-storage SOURCE"),
        "{text}"
    );
    assert!(!text.contains("Server 2003"), "{text}");
    let refused = uffs()
        .args(["cat", &format!("{p}@vss1"), "/digits.txt"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8(refused.stderr).unwrap();
    assert!(
        err.contains("not at hand: give it with --shadow-storage"),
        "{err}"
    );
    // A source that keeps no stores is refused by name.
    let wrong = uffs()
        .args(["info", p, "--shadow-storage", path_str(&states[0])])
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("keeps no shadow copy stores"),
        "{wrong:?}"
    );

    // The storage volume says whose it keeps.
    let text = String::from_utf8(run_ok(uffs().args(["info", stor])).stdout).unwrap();
    assert!(
        text.contains("keeps the stores of 2 shadow copies of another volume"),
        "{text}"
    );
    // With it: the stores libvshadow lists, each read as its state.
    let with = ["--shadow-storage", stor];
    let text = String::from_utf8(run_ok(uffs().args(["info", p]).args(with)).stdout).unwrap();
    assert!(text.contains("shadow copies 2 (open one as "), "{text}");
    assert!(
        text.contains("their stores on volume {") && text.contains(&format!("({stor})")),
        "{text}"
    );
    for (n, st) in vshadowinfo(&present) {
        // Whole seconds here: vshadowinfo's `…:00.000000000` comes back from the helper as `…:00.Z`.
        let when = st[3].trim_end_matches(".Z");
        let line = text
            .lines()
            .find(|l| l.contains(&format!("vss{n:<3} created {when}")));
        assert!(
            line.is_some_and(|l| l.contains(&format!("store {}", st[0]))),
            "{n}: {st:?} in {text}"
        );
    }
    for (k, source) in [format!("{p}@vss1"), format!("{p}@vss2"), p.to_string()]
        .iter()
        .enumerate()
    {
        let out = run_ok(uffs().args(["cat", source, "/digits.txt"]).args(with));
        assert!(out.stdout == vec![b'1' + k as u8; 100_000], "{source}");
    }
    for (n, state) in states.iter().enumerate() {
        let store = PathBuf::from(format!("{p}@vss{}", n + 1));
        assert_eq!(
            export_lines(&store, "", &with),
            export_lines(state, "", &[]),
            "vss{}",
            n + 1
        );
    }
    // Indexed with the storage volume given by a relative path: the file's stores remember it (made absolute),
    // so their data reads, and the index updates, from anywhere without it.
    let file = dir.join("c.uffs");
    run_ok(
        uffs()
            .current_dir(&dir)
            .arg("index")
            .arg(&present)
            .args(["--snapshots", "-o"])
            .arg(&file)
            .args(["--shadow-storage", "stor.img"]),
    );
    assert_eq!(
        export_lines(&file, "", &[]),
        present_and_states(&present, &states, &[])
    );
    let found = run_ok(
        uffs()
            .arg("--index")
            .arg(&file)
            .args(["content:1111111111"]),
    );
    assert_eq!(
        String::from_utf8(found.stdout).unwrap(),
        "@vss1:/digits.txt\n"
    );
    let updated = run_ok(
        uffs()
            .arg("index")
            .arg(&present)
            .args(["--snapshots", "--update", "-o"])
            .arg(&file),
    );
    assert!(
        String::from_utf8_lossy(&updated.stderr).contains("unchanged"),
        "{}",
        String::from_utf8_lossy(&updated.stderr)
    );

    // One disk: the storage volume is partition 1, the volume partition 2; found without being named.
    let disk = dir.join("disk.img");
    let len = std::fs::metadata(&present).unwrap().len();
    std::fs::File::create(&disk)
        .unwrap()
        .set_len(2 * len + (2 << 20))
        .unwrap();
    let table = format!(
        "label: dos\nstart=2048, size={0}, type=7\nstart={1}, size={0}, type=7\n",
        len / 512,
        2048 + len / 512
    );
    let mut sfdisk = Command::new("sfdisk")
        .args(["-q"])
        .arg(&disk)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(sfdisk.stdin.as_mut().unwrap(), table.as_bytes()).unwrap();
    assert!(sfdisk.wait().unwrap().success());
    for (k, part) in [&storage, &present].iter().enumerate() {
        let bytes = std::fs::read(part).unwrap();
        let f = std::fs::OpenOptions::new().write(true).open(&disk).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &bytes, (2048 * 512) + k as u64 * len)
            .unwrap();
    }
    let d = path_str(&disk);
    let text = String::from_utf8(run_ok(uffs().args(["info", d])).stdout).unwrap();
    assert!(text.contains(&format!("({d}@1)")), "{text}");
    let out = run_ok(uffs().args(["cat", &format!("{d}@2@vss2"), "/digits.txt"]));
    assert!(out.stdout == vec![b'2'; 100_000]);

    // The daemon: the stores registered with the storage volume they need, and read through it later.
    let w = World::new("vss-elsewhere");
    w.start();
    w.ok(&[
        "volumes",
        "add",
        p,
        "--name",
        "el",
        "--snapshots",
        "--shadow-storage",
        stor,
    ]);
    let listed = w.ok(&["volumes", "list"]);
    assert!(listed.contains("el@vss2"), "{listed}");
    assert_eq!(w.ok(&["content:2222222222"]), "el@vss2:/digits.txt\n");
    w.ok(&["daemon", "stop"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two earlier states of `volume` and the present, in `dir` as `([a.img, b.img], c.img)`: each a copy of the one
/// before, changed through an ntfs-3g mount by `ops` random operations (seeded `seed + k`, `k` 0 to 2), then by
/// `more(k, mount point)`.
fn churned_states(
    dir: &Path,
    volume: &Path,
    seed: u64,
    ops: usize,
    mut more: impl FnMut(usize, &Path),
) -> ([PathBuf; 2], PathBuf) {
    use common::live::{random_op, Rng};
    let states = [dir.join("a.img"), dir.join("b.img")];
    let present = dir.join("c.img");
    let mut counter = 0;
    for (k, image) in states.iter().chain([&present]).enumerate() {
        std::fs::copy(if k == 0 { volume } else { &states[k - 1] }, image).unwrap();
        let m = common::live::Mounted::new(image, &dir.join("mnt"));
        let mut rng = Rng(seed + k as u64);
        for _ in 0..ops {
            random_op(&mut rng, &m.dir, &mut counter);
        }
        more(k, &m.dir);
    }
    (states, present)
}

/// Marks every catalog entry of the store with id `store` (text) unused, as Windows does when it deletes a
/// shadow copy: the stores after it move down a position.
fn delete_store(volume: &Path, store: &str) {
    use std::os::unix::fs::FileExt;
    let id = uffs_mft::vss::parse_guid(store).unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(volume)
        .unwrap();
    let mut word = [0u8; 8];
    f.read_exact_at(&mut word, 0x1E00 + 48).unwrap();
    let mut at = u64::from_le_bytes(word);
    let mut dropped = 0;
    while at != 0 {
        let mut block = vec![0u8; 0x4000];
        f.read_exact_at(&mut block, at).unwrap();
        for e in (128..0x4000).step_by(128) {
            if block[e + 16..e + 32] == id {
                block[e..e + 8].copy_from_slice(&1u64.to_le_bytes());
                dropped += 1;
            }
        }
        f.write_all_at(&block, at).unwrap();
        at = u64::from_le_bytes(block[40..48].try_into().unwrap());
    }
    assert_eq!(dropped, 2, "the store's type-2 and type-3 entries");
}

/// Windows deletes the oldest shadow copies when their storage runs short, and the others move down a position.
/// An index file and the daemon name each store by its shadow copy id: after store 1 of the Windows-made volume
/// is deleted, what was indexed as `@vss2` reads its data from that store, now the volume's `@vss1`, and what was
/// `@vss1` is said to be gone rather than read from another store.
#[test]
fn stores_keep_their_names_when_older_ones_are_deleted() {
    let dir = scratch("vss-ids");
    let raw = vsstest(&dir);
    let s = path_str(&raw);
    let file = dir.join("vt.uffs");
    run_ok(uffs().args(["index", s, "--snapshots", "-o"]).arg(&file));
    let f = path_str(&file);
    let w = World::new("vss-ids");
    w.start();
    w.ok(&["volumes", "add", s, "--name", "vt", "--snapshots"]);
    let gz = run_ok(uffs().args(["cat", &format!("{s}@vss2"), "/syslog.gz"])).stdout;
    let info: serde_json::Value =
        serde_json::from_slice(&run_ok(uffs().args(["info", s, "--json"])).stdout).unwrap();
    let oldest = info["volumes"][0]["shadow_copies"][0]["store_id"]
        .as_str()
        .unwrap()
        .to_string();

    delete_store(&raw, &oldest);
    let now = String::from_utf8(run_ok(uffs().args(["info", s])).stdout).unwrap();
    assert!(now.contains("shadow copies 1 "), "{now}");

    // The index file: its @vss2 is the volume's vss1 now.
    let term = "content:\"This is another file\"";
    let found = run_ok(uffs().args(["--index", &format!("{f}@vss2"), term]));
    assert_eq!(String::from_utf8(found.stdout).unwrap(), "/another_file\n");
    let gone = |args: &[&str]| {
        let out = uffs().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("is gone"), "{args:?}: {err}");
    };
    gone(&["--index", &format!("{f}@vss1"), term]);
    // Searching every store reads none from another store's data: the gone one is said.
    gone(&["--index", f, term]);
    // Without data, the index still answers for the store it kept.
    let kept = run_ok(uffs().args(["--index", &format!("{f}@vss1"), "syslog"]));
    assert_eq!(String::from_utf8(kept.stdout).unwrap(), "/syslog\n");

    // The daemon's stores, by their ids too.
    let read = w.run(&["cat", "vt@vss2:/syslog.gz"]);
    assert!(
        read.status.success() && read.stdout == gz,
        "vt@vss2:/syslog.gz: {read:?}"
    );
    let out = w.run(&["cat", "vt@vss1:/syslog"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is gone"),
        "{out:?}"
    );
    w.ok(&["daemon", "stop"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Stores over states made through ntfs-3g, the differential check of the deltas: a volume changed at random
/// (files and folders created, deleted, renamed, moved, streams, a few hundred new records that grow the MFT) is
/// copied at each state, and `scripts/make-vss-volume.py` writes into the last one a store per earlier state
/// holding the blocks that changed since, as Windows' copy-on-write keeps them. libvshadow reads each store as
/// its state byte for byte (so the stores are right); then what `uffs index --snapshots` keeps for each store,
/// a delta over the present's index from the records in the changed blocks, exports row for row as a fresh
/// build of the state image, deleted entries included.
#[test]
fn store_deltas_export_as_fresh_builds_of_the_states_they_hold() {
    use common::live::make_volume;
    let dir = scratch("vss-states");
    let volume = make_volume(&dir, 48);
    let (states, present) = churned_states(&dir, &volume, 0x5eed, 60, |k, mounted| {
        // New records past the MFT's end: the present's MFT is longer than the stores'.
        let new = mounted.join(format!("batch-{k}"));
        std::fs::create_dir(&new).unwrap();
        for i in 0..150 {
            std::fs::write(new.join(format!("f{i}.txt")), format!("{k} {i}\n")).unwrap();
        }
    });
    let script = repo().join("scripts/make-vss-volume.py");
    run_ok(
        Command::new("python3")
            .arg(&script)
            .arg("--states")
            .args(&states)
            .arg("--present")
            .arg(&present)
            .arg("--quiet"),
    );
    {
        let mnt = Mounted::new(&present, &dir.join("vss"));
        for (n, state) in states.iter().enumerate() {
            let store = std::fs::read(mnt.0.join(format!("vss{}", n + 1))).unwrap();
            assert!(
                store == std::fs::read(state).unwrap(),
                "libvshadow: vss{} is not {state:?}",
                n + 1
            );
        }
    }
    let file = dir.join("c.uffs");
    for extra in [&[][..], &["--deleted"][..]] {
        run_ok(
            uffs()
                .arg("index")
                .arg(&present)
                .args(["--snapshots", "-o"])
                .arg(&file)
                .args(extra),
        );
        let want = present_and_states(&present, &states, extra);
        let got = export_lines(&file, "", extra);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g, w);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every path a `--snapshots` search, a query through an index file with its stores, `content:` and the daemon
/// print (`/x`, `@vss1:/x`, `C:\x`, `NAME@vss2:/x`) is a path `uffs cat` takes: it reads the same bytes as the
/// store named as a source (`SOURCE@vssN /x`), which `each_store_reads_as_vshadowmount_exposes_it` checks
/// against libvshadow, or as the present, which `cat.rs` checks against icat.
#[test]
fn every_printed_path_pastes_back_into_cat() {
    let dir = scratch("vss-paste");
    let raw = vsstest(&dir);
    let s = path_str(&raw);
    let cat = |source: &str, path: &str| {
        let o = uffs().args(["cat", source, path]).output().unwrap();
        assert!(
            o.status.success(),
            "cat {source} {path}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    let printed = |args: &[&str]| -> Vec<String> {
        let out = run_ok(uffs().args(args));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    };
    let mut checked = 0;
    for p in printed(&[
        "--source",
        s,
        "--snapshots",
        "file:",
        "!$*",
        "!path:System*",
    ]) {
        // Where it lives, said as a source and a path.
        let (source, path) = match p.split_once(":/") {
            Some((store, rest)) => (format!("{s}{store}"), format!("/{rest}")),
            None => (s.to_string(), p.clone()),
        };
        let want = cat(&source, &path);
        assert_eq!(cat(s, &p), want, "{p}");
        // As the daemon prints it (a volume name before the store), and as Windows writes it.
        let named = match p.strip_prefix('@') {
            Some(rest) => format!("vt@{rest}"),
            None => format!("vt:{p}"),
        };
        assert_eq!(cat(s, &named), want, "{named}");
        if !p.starts_with('@') {
            assert_eq!(
                cat(s, &format!("C:{}", p.replace('/', "\\"))),
                want,
                "C:{p}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} paths");
    // A query and du take them too.
    let q = printed(&["--source", s, "--snapshots", "C:\\password.txt"]);
    assert_eq!(q, ["/password.txt"]);
    let q = printed(&["--source", s, "--snapshots", "@vss1:/syslog"]);
    assert_eq!(q, ["@vss1:/syslog"]);
    let du = printed(&["du", "--source", s, "C:\\", "--format", "csv"]);
    assert!(du.len() > 3, "{du:?}");

    // An index file with its stores: FILE@vssN is the store, FILE.vssN alone is refused with what to type.
    let idx = dir.join("v.uffs");
    let i = path_str(&idx);
    run_ok(uffs().args(["index", s, "--snapshots", "-o", i]));
    let count = |args: &[&str]| printed(args).concat();
    assert_eq!(
        count(&["--index", &format!("{i}@vss1"), "--count"]),
        count(&["--index", i, "--volume", "@vss1", "--count"])
    );
    assert_eq!(
        count(&["--index", &format!("{i}@vss2"), "--count"]),
        count(&["--source", &format!("{s}@vss2"), "--count"])
    );
    let alone = uffs()
        .args(["--index", &format!("{i}.vss1"), "--count"])
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(2));
    let err = String::from_utf8_lossy(&alone.stderr);
    assert!(err.contains(&format!("open it as `{i}@vss1`")), "{err}");
    let gone = uffs()
        .args(["--index", &format!("{i}@vss3"), "--count"])
        .output()
        .unwrap();
    assert_eq!(gone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&gone.stderr).contains("has no shadow copy 3: it has 2"));
    // A store's files are read from that store: the same hashes, and content:, as the store named as a source.
    let hashes = |args: &[&str]| printed(&[&["hash"], args].concat()).join("\n");
    assert_eq!(
        hashes(&["--index", &format!("{i}@vss1"), "syslog"]),
        hashes(&["--source", &format!("{s}@vss1"), "syslog"])
    );
    assert_ne!(
        hashes(&["--index", &format!("{i}@vss1"), "syslog"]),
        hashes(&["--index", i, "syslog"]),
        "the store's /syslog is another file than the present's"
    );
    assert_eq!(
        printed(&["--index", &format!("{i}@vss1"), "content:e"]),
        printed(&["--source", &format!("{s}@vss1"), "content:e"])
    );
    // diff takes the store kept in the index file, and finds what the stores as sources differ by.
    let diff = |old: &str, new: &str| {
        let o = uffs()
            .args(["diff", old, new, "--format", "csv"])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    assert_eq!(diff(&format!("{i}@vss1"), i), diff(&format!("{s}@vss1"), s));
    let _ = std::fs::remove_dir_all(&dir);
}
