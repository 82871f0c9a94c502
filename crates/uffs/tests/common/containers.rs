//! Containers made from a raw image by the tools that make them in the wild (`split` pieces, `ewfacquire`'s E01
//! segments, `qemu-img`'s VHD, VHDX, VMDK and qcow2), and what the container tests compare of them.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{path_str, run_ok, tool, uffs};

/// `image` cut by `split` into pieces of `bytes` named `PREFIX` + a number of `width` digits counted from `from`;
/// returns the first piece.
pub fn split(
    image: &Path,
    dir: &Path,
    prefix: &str,
    bytes: u64,
    width: usize,
    from: u32,
) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    run_ok(
        Command::new("split")
            .arg(format!("--numeric-suffixes={from}"))
            .args(["-a", &width.to_string(), "-b", &bytes.to_string()])
            .arg(image)
            .arg(dir.join(prefix)),
    );
    let first = dir.join(format!("{prefix}{from:0width$}"));
    assert!(first.is_file(), "split made no {}", first.display());
    first
}

/// `ewfacquire` of `image` into `dir/name.E01…` in segments of `segment` bytes with `-c compression` and
/// case metadata; returns the first segment and the number of segment files.
pub fn acquire(
    image: &Path,
    dir: &Path,
    name: &str,
    segment: &str,
    compression: &str,
) -> (PathBuf, usize) {
    std::fs::create_dir_all(dir).unwrap();
    let target = dir.join(name);
    run_ok(
        tool("ewfacquire")
            .args(["-u", "-q", "-d", "sha1", "-S", segment, "-c", compression])
            .args([
                "-C",
                "CASE-42",
                "-E",
                "EV-7",
                "-e",
                "Alice Examiner",
                "-N",
                "test notes",
            ])
            .arg("-t")
            .arg(&target)
            .arg(image),
    );
    let first = dir.join(format!("{name}.E01"));
    assert!(first.is_file(), "ewfacquire made no {}", first.display());
    let count = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_str()
                .unwrap()
                .starts_with(&format!("{name}.E"))
        })
        .count();
    (first, count)
}

/// `qemu-img convert -O FORMAT` of `image` into `to`, with `extra` arguments (`-c`, `-o subformat=…`).
pub fn qemu_convert(format: &str, image: &Path, to: &Path, extra: &[&str]) -> String {
    run_ok(
        tool("qemu-img")
            .args(["convert", "-O", format])
            .args(extra)
            .arg(image)
            .arg(to),
    );
    path_str(to).to_string()
}

/// The stdout of `uffs ARGS`, which must succeed.
pub fn stdout(args: &[&str]) -> Vec<u8> {
    run_ok(uffs().args(args)).stdout
}

/// `uffs info --json` without the fields that name the source as given.
pub fn described(source: &str) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_slice(&stdout(&["info", source, "--json"])).unwrap();
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                o.remove("source");
                o.remove("spec");
                o.remove("path");
                o.remove("name");
                o.remove("container");
                o.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}
