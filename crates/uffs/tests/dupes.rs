//! `uffs dupes` finds exactly the duplicate sets planted on a volume written by ntfs-3g: the same content under
//! other names (large and small files), not files of the same size with other content, not the hard links of one
//! file, not empty files.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::*;

fn groups(img: &std::path::Path, by: &str) -> BTreeSet<BTreeSet<String>> {
    let out = run_ok(
        uffs()
            .args(["dupes", "--format", "csv", "--by", by, "--source"])
            .arg(img),
    );
    let mut g: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for r in csv_rows(&out.stdout) {
        g.entry(r["group"].clone())
            .or_default()
            .insert(r["path"].clone());
    }
    g.into_values().collect()
}

#[test]
fn dupes_finds_the_planted_sets() {
    let dir = scratch("dupes");
    let img = dir.join("v.img");
    let mnt = dir.join("m");
    std::fs::create_dir_all(&mnt).unwrap();
    run_ok(Command::new("truncate").args(["-s", "64M"]).arg(&img));
    run_ok(Command::new("mkntfs").args(["-F", "-q", "-f"]).arg(&img));
    run_ok(Command::new("ntfs-3g").arg(&img).arg(&mnt));
    let write = |name: &str, data: &[u8]| std::fs::write(mnt.join(name), data).unwrap();
    // Large (whole-content hash after the ends), small (the ends are all of it), same size other content.
    write("a.bin", &noise(1, 300_000));
    write("a-copy.bin", &noise(1, 300_000));
    write("b-same-size.bin", &noise(2, 300_000));
    // Same ends, other middle: only the whole hash tells them apart.
    let mut c = noise(3, 400_000);
    write("c.bin", &c);
    c[200_000] ^= 1;
    write("c-changed-middle.bin", &c);
    write("small", &noise(4, 5_000));
    write("small2", &noise(4, 5_000));
    std::fs::hard_link(mnt.join("b-same-size.bin"), mnt.join("b-link.bin")).unwrap();
    write("empty1", b"");
    write("empty2", b"");
    run_ok(Command::new("umount").arg(&mnt));
    let set = |v: &[&str]| {
        v.iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<String>>()
    };
    assert_eq!(
        groups(&img, "content"),
        [set(&["/a-copy.bin", "/a.bin"]), set(&["/small", "/small2"])]
            .into_iter()
            .collect()
    );
    // --limit lists the largest groups; the summary still counts every group and what they all waste
    // (300,000 + 5,000 bytes).
    let o = run_ok(
        uffs()
            .args(["dupes", "--by", "content", "--limit", "1", "--source"])
            .arg(&img),
    );
    let summary = String::from_utf8_lossy(&o.stderr);
    assert!(
        summary.contains("2 groups of duplicates (1 shown), 297.9 KiB wasted"),
        "{summary}"
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
    // By size: the same-size files join, a hard link never (one link stands for its file), empty files never.
    let by_size = groups(&img, "size");
    assert!(
        by_size.contains(&set(&["/a-copy.bin", "/a.bin", "/b-link.bin"]))
            || by_size.contains(&set(&["/a-copy.bin", "/a.bin", "/b-same-size.bin"]))
    );
    assert!(by_size.contains(&set(&["/c-changed-middle.bin", "/c.bin"])));
    assert!(by_size
        .iter()
        .all(|g| !g.iter().any(|p| p.starts_with("/empty"))));
}
