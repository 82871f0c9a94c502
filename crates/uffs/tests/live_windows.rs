//! A Windows PC's own drive, read live, under Wine. `scripts/test-windows.sh` maps drive D: of the Wine prefix
//! to a loop device over a copy of a fixture volume (Wine opens `\\.\D:` as the Unix device that
//! `dosdevices/d::` points to, and lists the drive through `dosdevices/d:`), and gives the Linux export of that
//! same device in `UFFS_TEST_LIVE_EXPORT`. Wine answers none of the device and file-system controls (length,
//! storage properties, change journal), so these tests cover the open, the reads and the fallbacks; the
//! controls' buffers are checked in `uffs_mft::ioctl`'s unit tests.

#![cfg(windows)]

mod common;

use common::daemon::World;
use common::*;

/// The mapped NTFS drive (`D:`) and the Linux export of its device.
fn live() -> (String, String) {
    mapped("UFFS_TEST_LIVE_DRIVE", "UFFS_TEST_LIVE_EXPORT")
}

/// The mapped FAT32 drive (`F:`, a USB stick made by mkfs.vfat and mtools) and the Linux export of its device.
fn live_fat() -> (String, String) {
    mapped("UFFS_TEST_LIVE_FAT_DRIVE", "UFFS_TEST_LIVE_FAT_EXPORT")
}

/// The drive the environment variable `drive` names, and the export the file `export` names holds.
fn mapped(drive: &str, export: &str) -> (String, String) {
    let how = "run these through scripts/test-windows.sh, which maps drives of the Wine prefix to loop devices";
    let d = std::env::var(drive).unwrap_or_else(|_| panic!("{drive} is not set: {how}"));
    let e = std::env::var(export).unwrap_or_else(|_| panic!("{export} is not set: {how}"));
    let linux = std::fs::read_to_string(&e).unwrap_or_else(|err| panic!("{e}: {err}"));
    (d, linux)
}

fn stdout(args: &[&str]) -> String {
    String::from_utf8(run_ok(uffs().args(args)).stdout).expect("utf-8")
}

#[test]
fn info_reads_the_drive_live_in_every_spelling() {
    let (d, _) = live();
    let letter = &d[..1];
    for spec in [
        d.clone(),
        format!("{d}\\"),
        format!("\\\\.\\{d}"),
        format!("{}:", letter.to_lowercase()),
    ] {
        let out = stdout(&["info", &spec]);
        assert!(out.contains("(NTFS volume)"), "{spec}: {out}");
        assert!(out.contains("FILE (the MFT was found)"), "{spec}: {out}");
        assert!(out.contains("records     581 total"), "{spec}: {out}");
    }
}

#[test]
fn an_export_of_the_drive_equals_the_linux_export_of_its_device() {
    let (d, linux) = live();
    for spec in [d.clone(), format!("\\\\.\\{d}")] {
        let out = stdout(&["export", &spec, "--format", "csv"]).replace("\r\n", "\n");
        assert!(out.lines().count() > 500, "{out}");
        assert!(
            out == linux,
            "{spec}: the live export differs from the Linux export of the device"
        );
    }
    // The reads in flight and their size change nothing but speed.
    let out = stdout(&[
        "export", &d, "--format",
        "csv", // a second, differently shaped read of the same volume
    ]);
    assert_eq!(out.replace("\r\n", "\n"), linux);
    let bench = stdout(&[
        "bench",
        &d,
        "--read-only",
        "--runs",
        "1",
        "--concurrency",
        "3",
        "--io-size",
        "64K",
    ]);
    assert!(
        bench.contains("read is summed over 3 reads of 64 KiB in flight"),
        "{bench}"
    );
}

/// A USB stick's FAT32 drive letter, read raw as `\\.\F:` with no mount: `info` names the file system, an
/// export equals the Linux export of the same device, and 8.3 aliases, contents and hashes answer.
#[test]
fn a_fat32_drive_reads_live_as_its_device_does() {
    let (f, linux) = live_fat();
    for spec in [f.clone(), format!("\\\\.\\{f}"), f.to_lowercase()] {
        let info = stdout(&["info", &spec]);
        assert!(info.contains("(FAT32 volume)"), "{spec}: {info}");
        assert!(info.contains("USBSTICK"), "{spec}: {info}");
        let out = stdout(&["export", &spec, "--format", "csv"]).replace("\r\n", "\n");
        assert!(out.lines().count() > 8, "{out}");
        assert!(
            out == linux,
            "{spec}: the live export differs from the Linux export of the device:\n{out}\n{linux}"
        );
    }
    let found = stdout(&["--source", &f, "alongf~1.txt"]);
    assert!(found.contains("a long file name.txt"), "{found}");
    let found = stdout(&["--source", &f, "content:\"USB stick\""]);
    assert!(found.contains("a long file name.txt"), "{found}");
}

#[test]
fn info_without_a_source_lists_the_ntfs_drives() {
    let (d, _) = live();
    let out = stdout(&["info"]);
    let line = out
        .lines()
        .find(|l| l.starts_with(&d))
        .unwrap_or_else(|| panic!("{d} is not listed:\n{out}"));
    assert!(line.contains("fixed"), "{line}");
    assert!(line.contains("581 MFT records"), "{line}");
    assert!(line.contains(&format!("(uffs info {d})")), "{line}");
    let (f, _) = live_fat();
    let line = out
        .lines()
        .find(|l| l.starts_with(&f))
        .unwrap_or_else(|| panic!("{f} is not listed:\n{out}"));
    assert!(line.contains("FAT32 \"USBSTICK\""), "{line}");
    assert!(!line.contains("MFT"), "{line}");
}

#[test]
fn a_drive_that_is_not_there_is_one_line_and_exit_2() {
    let o = uffs().args(["info", "Q:"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("uffs: error: cannot open Q: (\\\\.\\Q:)"),
        "{err}"
    );
}

#[test]
fn volumes_add_all_registers_the_drive_under_its_letter_and_answers_print_its_paths() {
    let (d, _) = live();
    let letter = &d[..1];
    let w = World::new("live-all");
    let added = w.run(&["volumes", "add", "--all"]);
    let (out, err) = (
        String::from_utf8_lossy(&added.stdout),
        String::from_utf8_lossy(&added.stderr),
    );
    assert!(added.status.success(), "{out}\n{err}");
    assert!(out.contains(&format!("added {letter}")), "{out}\n{err}");
    let list = w.ok(&["volumes", "list"]);
    assert!(list.starts_with(&format!("{letter}\t{d}\t")), "{list}");
    // Added already: not added again (Wine's other drives, C: and Z:, cannot be read as volumes, so this
    // second run adds nothing, whatever it says of them).
    let _ = w.run(&["volumes", "add", "--all"]);
    assert_eq!(w.ok(&["volumes", "list"]), list);

    w.start();
    w.wait_ready(30);
    // (The script maps another NTFS drive too, which --all adds as well.)
    let answers = w.ok(&["many_subdirs", "--limit", "3"]);
    let first = answers.lines().next().unwrap_or_default();
    assert_eq!(first, format!("{letter}:\\many_subdirs"), "{answers}");
    let found = w.ok(&["file-with-12345"]);
    assert!(
        found
            .lines()
            .any(|l| l == format!("{letter}:\\file-with-12345")),
        "{found}"
    );
    let status = w.ok(&["daemon", "status"]);
    assert!(status.contains(&d), "{status}");
    // The FAT32 drive was added as well, under its letter.
    let (f, _) = live_fat();
    let found = w.ok(&["IMG_0001.JPG"]);
    assert_eq!(
        found.trim_end(),
        format!("{}:\\DCIM\\100CANON\\IMG_0001.JPG", &f[..1]),
        "{found}"
    );
}
