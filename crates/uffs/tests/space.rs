//! Sizes that add up to the disk: `uffs du`'s total for a volume's root is exactly the clusters its `$Bitmap`
//! marks in use, as The Sleuth Kit reads that bitmap (ntfs-3g's `ntfsinfo` where TSK cannot open the volume),
//! never uffs itself. On every fixture volume (hard links, streams, sparse, compressed, fragmented `$MFT`, files
//! and folders deleted, 512 B to 2 MiB clusters, partitioned disks), on the real Windows volumes and Linux-made
//! samples, with and without deleted entries, for a raw `$MFT` capture, and for an index brought up to date after
//! changes through the driver. `uffs info` reports the same figure.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A volume to check: the source uffs reads, and where TSK finds the same volume (image, sector offset).
struct Case {
    source: String,
    image: PathBuf,
    sector: u64,
}

/// The same from ntfs-3g's `ntfsinfo` (for volumes whose clusters TSK cannot read): clusters less free ones.
fn ntfsinfo_bytes_in_use(image: &Path) -> u64 {
    let out = run_ok(tool("ntfsinfo").arg("-m").arg(image));
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |key: &str| -> u64 {
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("ntfsinfo of {} has no {key}", image.display()));
        line[key.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .expect(key)
    };
    (field("Volume Size in Clusters:") - field("Free Clusters:")) * field("Cluster Size:")
}

/// The root's allocated total in `uffs du ARGS --format csv`.
fn du_root(args: &[&str]) -> u64 {
    let out = run_ok(uffs().arg("du").args(args).args(["--format", "csv"]));
    let rows = csv_rows(&out.stdout);
    let root = rows
        .iter()
        .find(|r| r["depth"] == "0")
        .unwrap_or_else(|| panic!("no root line in du {args:?}"));
    root["allocated"].parse().expect("allocated")
}

/// `uffs info --json`'s bytes in use of the (one) volume of `source`.
fn info_bytes_in_use(source: &str) -> u64 {
    let out = run_ok(uffs().args(["info", "--json", source]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    v["volumes"][0]["bytes_in_use"]
        .as_u64()
        .unwrap_or_else(|| panic!("{source}: no bytes_in_use in {v}"))
}

/// The NTFS partitions of a disk image as cases (`disk.img@N`, at the partition's first sector).
fn partitions(disk: &Path) -> Vec<Case> {
    let out = run_ok(uffs().args(["info", "--json"]).arg(disk));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let parts: Vec<Case> = v["partitions"]
        .as_array()
        .expect("partitions")
        .iter()
        .filter(|p| p["ntfs"] == true)
        .map(|p| Case {
            source: format!("{}@{}", path_str(disk), p["index"]),
            image: disk.to_path_buf(),
            sector: p["start"].as_u64().unwrap() / 512,
        })
        .collect();
    assert!(!parts.is_empty(), "{}: no NTFS partition", disk.display());
    parts
}

fn volume(image: PathBuf) -> Case {
    Case {
        source: path_str(&image).to_string(),
        image,
        sector: 0,
    }
}

/// A qcow2 Windows volume from tests/data, as a raw image in `dir` (qemu-img; uffs does not read qcow2 yet).
fn windows_volume(dir: &Path, name: &str) -> PathBuf {
    let raw = dir.join(format!("{name}.raw"));
    run_ok(
        tool("qemu-img")
            .args(["convert", "-O", "raw"])
            .arg(data(&format!("windows-volumes/{name}.qcow2")))
            .arg(&raw),
    );
    raw
}

/// du's root total (from the source, and from an index with deleted entries) and info's figure, each equal to
/// what TSK reads in `$Bitmap`.
fn assert_adds_up(case: &Case, dir: &Path) -> u64 {
    let want = tsk_bitmap_bytes_in_use(&case.image, case.sector);
    assert!(want > 0, "{}: nothing in use?", case.source);
    assert_eq!(
        du_root(&["--source", &case.source]),
        want,
        "{}: du's total against $Bitmap",
        case.source
    );
    let idx = dir.join("deleted.uffs");
    run_ok(
        uffs()
            .args(["index", "--deleted", "-o"])
            .arg(&idx)
            .arg(&case.source),
    );
    assert_eq!(
        du_root(&["--index", path_str(&idx)]),
        want,
        "{}: du's total with deleted entries indexed (they count nowhere)",
        case.source
    );
    assert_eq!(
        info_bytes_in_use(&case.source),
        want,
        "{}: uffs info",
        case.source
    );
    want
}

#[test]
fn du_totals_equal_the_bitmap_on_every_fixture() {
    let dir = scratch("space-fixtures");
    let mut cases: Vec<Case> = [
        "basic.img",
        "sector4k.img",
        "bigcluster-64k.img",
        "fragmented.img",
        "content.img",
    ]
    .iter()
    .map(|n| volume(fixture(n)))
    .collect();
    cases.extend(partitions(&fixture("disk-mbr.img")));
    cases.extend(partitions(&fixture("disk-gpt.img")));
    for c in &cases {
        assert_adds_up(c, &dir);
    }
    // 2 MiB clusters: TSK cannot open the volume; ntfs-3g's own reading of its bitmap is the truth.
    let big = fixture("bigcluster.img");
    let want = ntfsinfo_bytes_in_use(&big);
    assert_eq!(
        du_root(&["--source", path_str(&big)]),
        want,
        "bigcluster.img"
    );
    assert_eq!(
        info_bytes_in_use(path_str(&big)),
        want,
        "bigcluster.img: info"
    );
    // A raw `$MFT` capture of basic.img: no bitmap to read, yet its records hold the same clusters (the cluster
    // size comes from the capture's own system files).
    assert_eq!(
        du_root(&["--source", path_str(&fixture("raw-mft.bin"))]),
        tsk_bitmap_bytes_in_use(&fixture("basic.img"), 0),
        "raw-mft.bin"
    );
}

#[test]
fn du_totals_equal_the_bitmap_on_real_volumes() {
    let dir = scratch("space-real");
    // Written by Windows: a 1 GiB volume with shadow copies (whose `$BadClus:$Bad` claims the whole volume),
    // and a small one.
    for name in ["plaso-vsstest", "dfvfs-windows_volume"] {
        let raw = windows_volume(&dir, name);
        let used = assert_adds_up(&volume(raw.clone()), &dir);
        let size = std::fs::metadata(&raw).unwrap().len();
        assert!(used < size / 2, "{name}: {used} of {size} bytes in use");
        let _ = std::fs::remove_file(&raw);
    }
    assert_adds_up(&volume(data("linux-made/testfs1")), &dir);
    // The Debian forensic disk: a partition whose folders were deleted after they were filled.
    let xz = Path::new("/usr/share/forensics-samples/fs.ntfs.xz");
    assert!(
        xz.is_file(),
        "{} is missing; run `sudo scripts/setup.sh`",
        xz.display()
    );
    let img = dir.join("fs.ntfs");
    let out = Command::new("xz").arg("-dc").arg(xz).output().expect("xz");
    assert!(out.status.success());
    std::fs::write(&img, out.stdout).expect("write image");
    for c in partitions(&img) {
        assert_adds_up(&c, &dir);
    }
}

/// The `$Bad` stream of `$BadClus` states the volume's size and holds no cluster: its entry shows it so.
#[test]
fn bad_cluster_stream_holds_nothing() {
    let rows = export(&fixture("basic.img"), &["--streams"]);
    let bad = rows
        .iter()
        .find(|r| r["path"] == "/$BadClus:$Bad")
        .expect("$BadClus:$Bad");
    assert_eq!(bad["allocated"], "0");
    assert!(bad["size"].parse::<u64>().unwrap() > 500 << 20, "{bad:?}");
}

/// After creating, linking, deleting and moving files through the driver, the index brought up to date (a delta
/// over the first) still adds up to the bitmap, and so does the root of a fresh build.
#[cfg(unix)]
#[test]
fn an_updated_index_still_adds_up() {
    use common::live::{make_volume, Mounted};
    let dir = scratch("space-live");
    let img = make_volume(&dir, 64);
    let idx = dir.join("vol.uffs");
    run_ok(uffs().arg("index").arg(&img).arg("-o").arg(&idx));
    {
        let m = Mounted::new(&img, &dir.join("mnt"));
        let root = &m.dir;
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        for i in 0..400 {
            std::fs::write(root.join(format!("a/f{i}.bin")), vec![7u8; 1000 + 37 * i]).unwrap();
        }
        std::fs::write(root.join("a/b/big.bin"), vec![1u8; 3 << 20]).unwrap();
        std::fs::hard_link(root.join("a/b/big.bin"), root.join("big-link.bin")).unwrap();
        for i in (0..400).step_by(3) {
            std::fs::remove_file(root.join(format!("a/f{i}.bin"))).unwrap();
        }
        std::fs::rename(root.join("a/b"), root.join("moved")).unwrap();
        std::fs::write(root.join("moved/big.bin:ads"), vec![2u8; 200_000]).unwrap();
    }
    let want = tsk_bitmap_bytes_in_use(&img, 0);
    run_ok(
        uffs()
            .arg("index")
            .arg(&img)
            .arg("-o")
            .arg(&idx)
            .arg("--update"),
    );
    assert_eq!(du_root(&["--index", path_str(&idx)]), want, "updated index");
    assert_eq!(du_root(&["--source", path_str(&img)]), want, "fresh build");
}
