//! Every kind of source, detected from content: a real block device (a loop device over an image), a volume
//! image, a raw `$MFT` capture, and clear errors for what is none of these.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A read-only loop device over an image, detached when dropped.
struct Loop(PathBuf);

impl Loop {
    fn attach(image: &Path) -> Loop {
        let out = run_ok(
            Command::new("losetup")
                .args(["--find", "--show", "--read-only"])
                .arg(image),
        );
        Loop(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

#[test]
fn a_loop_device_reads_like_its_image() {
    let img = data("linux-made/testfs1");
    let dev = Loop::attach(&img);
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&dev.0)).stdout).expect("utf-8");
    assert!(info.contains("(NTFS volume)"), "{info}");
    assert!(info.contains("FILE (the MFT was found)"), "{info}");
    assert!(info.contains("mylabel"), "{info}");
    let from_dev = export(&dev.0, &["--streams"]);
    let from_img = export(&img, &["--streams"]);
    assert!(from_img.len() > 500);
    assert_eq!(
        from_dev, from_img,
        "the block device and the image disagree"
    );
}

/// A device the user may not read is one line that says what is wanting, and exit 2 (the test runs as root and
/// asks `nobody` to read a root-only loop device).
#[test]
fn a_device_without_rights_to_read_it_is_one_line_and_exit_2() {
    let img = data("linux-made/testfs1");
    let dev = Loop::attach(&img);
    let o = run_as_nobody(&["info", dev.0.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "uffs: error: reading {} needs root",
            dev.0.display()
        )),
        "{err}"
    );
}

/// The line `uffs info` without a source prints for the loop device `dev`.
fn listed(dev: &Loop) -> String {
    let out = String::from_utf8(run_ok(uffs().arg("info")).stdout).expect("utf-8");
    let name = dev.0.to_str().unwrap();
    out.lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} is not listed:\n{out}"))
        .to_string()
}

/// `uffs info` without a source lists the NTFS, FAT and exFAT block devices it can read, loop devices among them.
#[test]
fn info_without_a_source_lists_the_ntfs_and_exfat_devices() {
    let img = data("linux-made/testfs1");
    let dev = Loop::attach(&img);
    let line = listed(&dev);
    assert!(
        line.contains("NTFS \"mylabel\"") || line.contains("NTFS,"),
        "{line}"
    );
    assert!(line.contains("581 MFT records"), "{line}");
    // An exFAT volume (a public image, as a loop device) is listed too, by its file system.
    let ex = Loop::attach(&data("fat-public/obhq-exfat.img"));
    let line = listed(&ex);
    assert!(
        line.contains(" exFAT, 0.0 GiB ") && !line.contains("MFT"),
        "{line}"
    );
    drop(ex);
    // As a user who may read no device, it says why nothing is listed.
    let o = run_as_nobody(&["info"]);
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{said}");
    assert!(said.contains("could not be read to tell"), "{said}");
}

fn run_as_nobody(args: &[&str]) -> std::process::Output {
    Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(env!("CARGO_BIN_EXE_uffs"))
        .args(args)
        .output()
        .expect("runuser")
}

#[test]
fn raw_mft_capture_is_detected() {
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(data("windows-xp-mft/MFT"))).stdout)
        .unwrap();
    assert!(info.contains("raw $MFT capture"), "{info}");
    assert!(info.contains("13,088 total"), "{info}");
}

/// A `$MFT` capture whose records had their fixups applied already, as `ntfscat` writes one (`icat` does not):
/// recognised, said so in one line, and read like the capture with them.
#[test]
fn a_capture_with_fixups_applied_reads_like_one_without() {
    let dir = scratch("fixups-applied");
    let export_of = |src: &Path, extra: &[&str]| -> (Vec<u8>, String) {
        let out = run_ok(
            uffs()
                .arg("export")
                .arg(src)
                .args(["--format", "csv"])
                .args(extra),
        );
        (
            out.stdout,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    const SAID: &str = "fixups applied already";
    // ntfs-3g's ntfscat of basic.img's $MFT against TSK's icat of the same (raw-mft.bin).
    let cat = dir.join("ntfscat.mft");
    let out = run_ok(tool("ntfscat").arg(fixture("basic.img")).arg("$MFT"));
    std::fs::write(&cat, &out.stdout).unwrap();
    let (want, plain) = export_of(&fixture("raw-mft.bin"), &[]);
    let (got, said) = export_of(&cat, &[]);
    assert!(!plain.contains(SAID), "{plain}");
    assert!(said.contains(SAID) && said.lines().count() == 1, "{said}");
    assert!(csv_rows(&got).len() > 10_000);
    assert!(
        got == want,
        "ntfscat's capture reads differently from icat's"
    );
    let info = String::from_utf8(run_ok(uffs().arg("info").arg(&cat)).stdout).unwrap();
    assert!(info.contains("already applied"), "{info}");
    // Windows XP's $MFT with every record's fixups applied here, deleted entries included.
    let xp = std::fs::read(data("windows-xp-mft/MFT")).unwrap();
    let mut applied = xp.clone();
    for rec in applied.chunks_exact_mut(1024) {
        let _ = uffs_ntfs::record::apply_fixups(rec);
    }
    assert_ne!(applied, xp);
    let xp_applied = dir.join("xp-applied.mft");
    std::fs::write(&xp_applied, &applied).unwrap();
    let (want, _) = export_of(&data("windows-xp-mft/MFT"), &["--deleted"]);
    let (got, said) = export_of(&xp_applied, &["--deleted"]);
    assert!(said.contains(SAID), "{said}");
    assert!(
        got == want,
        "the XP capture with fixups applied reads differently"
    );
}

#[test]
fn not_ntfs_is_a_clear_error() {
    let dir = scratch("not-ntfs");
    let f = dir.join("zeros.img");
    std::fs::write(&f, vec![0u8; 1 << 16]).unwrap();
    let out = uffs().arg("info").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not a volume uffs reads (NTFS, FAT12/16/32, exFAT, ext2/3/4, XFS, Btrfs, HFS+, HFSX, APFS), a partitioned disk or a raw $MFT capture"),
        "{err}"
    );
    let out = uffs()
        .arg("info")
        .arg(dir.join("missing.img"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));
}

#[test]
fn a_partition_suffix_on_a_volume_is_refused() {
    let img = data("linux-made/testfs1");
    let out = uffs()
        .arg("info")
        .arg(format!("{}@2", img.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a partitioned disk"));
}

#[test]
fn index_file_round_trips() {
    let dir = scratch("index-file");
    let idx = dir.join("testfs1.uffs");
    let img = data("linux-made/testfs1");
    let out = run_ok(uffs().arg("index").arg(&img).arg("-o").arg(&idx));
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains(" entries (the root, ") && summary.contains("records/s"),
        "{summary}"
    );
    // The files and folders it names are what a query for everything counts.
    let named: u64 = summary
        .split_once("the root, ")
        .and_then(|(_, r)| r.split_once(" files and folders"))
        .map(|(n, _)| n.replace(',', "").parse().unwrap())
        .unwrap();
    let count = run_ok(uffs().arg("--index").arg(&idx).arg("--count")).stdout;
    assert_eq!(
        String::from_utf8_lossy(&count).trim(),
        named.to_string(),
        "{summary}"
    );
    assert_eq!(export(&idx, &["--streams"]), export(&img, &["--streams"]));
    // Deleted entries are only in an index built with them.
    let out = uffs()
        .arg("export")
        .arg(&idx)
        .arg("--deleted")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rebuild it with `uffs index --deleted`"));
    // A damaged index file is refused, never half-loaded.
    let mut bytes = std::fs::read(&idx).unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 0x55;
    std::fs::write(&idx, &bytes).unwrap();
    let out = uffs().arg("export").arg(&idx).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("checksum"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
