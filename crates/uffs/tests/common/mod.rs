//! Helpers shared by the integration tests: paths, running `uffs` and peer tools, reading CSV.

#![allow(dead_code)]

pub mod containers;
pub mod daemon;
#[cfg(unix)]
pub mod fatvol;
#[cfg(unix)]
pub mod live;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

pub fn data(rel: &str) -> PathBuf {
    repo().join("tests/data").join(rel)
}

/// A scratch directory under the build's target directory, unique per test.
pub fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

pub fn uffs() -> Command {
    Command::new(env!("CARGO_BIN_EXE_uffs"))
}

/// Runs a command and returns its output; panics with its stderr when it fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    run_checked(cmd, false)
}

/// Runs a test client (a Python script that prints what it checked) and returns its stdout; when it fails,
/// panics with its stdout and stderr both.
pub fn client_stdout(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run_checked(cmd, true).stdout).into_owned()
}

fn run_checked(cmd: &mut Command, show_stdout: bool) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = if show_stdout {
        format!("\n{}\n", String::from_utf8_lossy(&out.stdout))
    } else {
        " ".into()
    };
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What `sh -c SHELL` shows on a terminal: run under `script` for a pseudo-terminal, with `setup` adding to its
/// environment; its stdout, the terminal's `\r\n` made `\n`.
pub fn on_a_terminal(shell: &str, setup: impl FnOnce(&mut Command)) -> String {
    let mut cmd = Command::new("script");
    cmd.args(["-qec", shell, "/dev/null"]);
    setup(&mut cmd);
    let o = cmd.output().expect("script");
    String::from_utf8_lossy(&o.stdout).replace('\r', "")
}

/// A test that cannot run here says why and passes, except under `CI=true`, where it fails: CI never passes by
/// skipping a check.
pub fn cannot_run(why: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true and this test cannot run: {why}"
    );
    eprintln!("skipped: {why}");
}

/// Mounts the ext4 image `img` at `mnt` through a loop device, makes `change` through the kernel's driver and
/// unmounts it (failing the test if `change` did). False, with nothing made, where this machine cannot mount it
/// (that needs root and the ext4 driver), said through [`cannot_run`].
pub fn changed_by_the_kernel(
    img: &Path,
    mnt: &Path,
    change: impl FnOnce(&Path) -> std::io::Result<()>,
) -> bool {
    std::fs::create_dir_all(mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-o", "loop"])
        .arg(img)
        .arg(mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        cannot_run("mounting an ext4 image through a loop device (needs root and the ext4 driver)");
        return false;
    }
    let changed = change(mnt);
    run_ok(Command::new("umount").arg(mnt));
    changed.unwrap();
    true
}

/// A peer tool the tests compare against. Missing tools fail the test: `scripts/setup.sh` installs them.
pub fn tool(name: &str) -> Command {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false);
    let cargo_bin = dirs_home().join(".cargo/bin").join(name);
    if !found && cargo_bin.is_file() {
        return Command::new(cargo_bin);
    }
    assert!(found, "`{name}` is not installed; run `sudo scripts/setup.sh` (it installs every tool the tests use)");
    Command::new(name)
}

fn dirs_home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

/// The Python of the venv `scripts/setup.sh` makes, with the MCP SDK, selenium and DuckDB: `$UFFS_PY`, by
/// default `/opt/uffs-py/bin/python`. Missing, it fails the test, naming `needed` (what the caller runs in it).
pub fn python(needed: &str) -> PathBuf {
    let py = PathBuf::from(
        std::env::var_os("UFFS_PY").unwrap_or_else(|| "/opt/uffs-py/bin/python".into()),
    );
    assert!(
        py.exists(),
        "{} is missing; run `sudo scripts/setup.sh` (it makes the venv with {needed})",
        py.display()
    );
    py
}

/// CSV rows as maps from column name to value.
pub fn csv_rows(bytes: &[u8]) -> Vec<HashMap<String, String>> {
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let headers = r.headers().expect("csv header").clone();
    r.records()
        .map(|rec| {
            let rec = rec.expect("csv row");
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// `uffs export SOURCE --format csv` with extra arguments, parsed.
pub fn export(source: &Path, extra: &[&str]) -> Vec<HashMap<String, String>> {
    csv_rows(&export_csv(source, extra))
}

/// The resource forks (HFS+, APFS) `uffs export SOURCE --streams` lists, by their file's path: their sizes.
#[allow(dead_code)]
pub fn resource_forks(source: &Path) -> std::collections::BTreeMap<String, String> {
    export(source, &["--streams"])
        .into_iter()
        .filter_map(|r| {
            Some((
                r["path"].strip_suffix(":rsrc")?.to_string(),
                r["size"].clone(),
            ))
        })
        .collect()
}

/// The size The Sleuth Kit's `istat` output gives a file's resource fork (`Type: RSRC … size: N`).
#[allow(dead_code)]
pub fn istat_fork_size(istat: &str) -> Option<String> {
    istat
        .lines()
        .find(|l| l.starts_with("Type: RSRC"))
        .and_then(|l| {
            l.split("size: ")
                .nth(1)?
                .split_whitespace()
                .next()
                .map(str::to_string)
        })
}

/// `uffs export SOURCE --format csv` with extra arguments: what it prints.
pub fn export_csv(source: &Path, extra: &[&str]) -> Vec<u8> {
    let out = run_ok(
        uffs()
            .arg("export")
            .arg(source)
            .args(["--format", "csv"])
            .args(extra),
    );
    out.stdout
}

/// (kind, record) of every difference between the exports of `old` and `new`, worked out from the CSV alone:
/// rows keyed by record and sequence number; a key only in `new` is created, only in `old` deleted; a key in both
/// whose parent record differs is moved, else whose name differs renamed; and changed when a compared column
/// differs (access times are not compared, as the diff's default).
pub fn export_difference(old: &Path, new: &Path) -> std::collections::BTreeSet<(String, String)> {
    let rows = |p: &Path| -> HashMap<(String, String), HashMap<String, String>> {
        export(p, &[])
            .into_iter()
            .map(|r| ((r["record"].clone(), r["sequence"].clone()), r))
            .collect()
    };
    let (a, b) = (rows(old), rows(new));
    let mut out = std::collections::BTreeSet::new();
    for (k, r) in &a {
        let Some(n) = b.get(k) else {
            out.insert(("deleted".to_string(), k.0.clone()));
            continue;
        };
        if r["parent_record"] != n["parent_record"] {
            out.insert(("moved".into(), k.0.clone()));
        } else if r["name"] != n["name"] {
            out.insert(("renamed".into(), k.0.clone()));
        }
        let compared = [
            "size",
            "allocated",
            "created",
            "modified",
            "mft_changed",
            "attributes",
            "reparse_tag",
            "fn_created",
            "fn_modified",
            "fn_mft_changed",
            "fn_accessed",
        ];
        if compared.iter().any(|c| r[*c] != n[*c]) {
            out.insert(("changed".into(), k.0.clone()));
        }
    }
    for k in b.keys() {
        if !a.contains_key(k) {
            out.insert(("created".into(), k.0.clone()));
        }
    }
    out
}

/// The fixture volumes of `scripts/make-fixtures.sh`, built once (the script skips images that are up to date).
pub fn fixtures() -> &'static Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
        run_ok(Command::new(repo().join("scripts/make-fixtures.sh")).arg(&dir));
        dir
    })
}

pub fn fixture(name: &str) -> std::path::PathBuf {
    fixtures().join(name)
}

/// `key=value` facts the fixture script measured on an image.
pub fn facts(name: &str) -> std::collections::HashMap<String, String> {
    std::fs::read_to_string(fixture(&format!("{name}.facts")))
        .expect("facts file")
        .lines()
        .filter_map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// `s` as a URL's query value: everything but letters, digits, `-`, `_` and `.` percent-encoded.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The Windows XP `$MFT` sample indexed into `dir/xp.uffs`.
pub fn xp_index(dir: &Path) -> PathBuf {
    index_into(&data("windows-xp-mft/MFT"), &dir.join("xp.uffs"))
}

/// `uffs index SOURCE -o FILE`; the file.
pub fn index_into(source: &Path, file: &Path) -> PathBuf {
    run_ok(uffs().arg("index").arg(source).arg("-o").arg(file));
    file.to_path_buf()
}

/// `uffs ARGS --index FILE --format jsonl`, as JSON values (exit 0 or 1: found or not).
pub fn cli_rows(idx: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let out = uffs()
        .args(args)
        .arg("--index")
        .arg(idx)
        .args(["--format", "jsonl"])
        .output()
        .unwrap();
    assert!(
        out.status.code().unwrap() < 2,
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Sets `flag` in the header of the first `$DATA` attribute of `record` (one in the MFT's first extent).
pub fn set_data_flag(image: &Path, record: u64, flag: u16) {
    use std::io::{Seek, SeekFrom, Write};
    let mut bytes = std::fs::read(image).unwrap();
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as usize;
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let cs = u16_at(&bytes, 0x0B) * bytes[0x0D] as usize;
    let mft = u64::from_le_bytes(bytes[0x30..0x38].try_into().unwrap()) as usize * cs;
    let rec = mft + record as usize * 1024;
    assert_eq!(&bytes[rec..rec + 4], b"FILE");
    let mut o = rec + u16_at(&bytes, rec + 0x14);
    while u32_at(&bytes, o) != 0x80 {
        assert_ne!(u32_at(&bytes, o), 0xFFFF_FFFF, "no $DATA");
        o += u32_at(&bytes, o + 4) as usize;
    }
    // Not a fixup position: those hold the update sequence number, not the record's bytes.
    assert!((o + 0x0C - rec) % 512 < 510);
    let flags = u16_at(&bytes, o + 0x0C) as u16 | flag;
    bytes[o + 0x0C..o + 0x0E].copy_from_slice(&flags.to_le_bytes());
    let mut f = std::fs::OpenOptions::new().write(true).open(image).unwrap();
    f.seek(SeekFrom::Start((o + 0x0C) as u64)).unwrap();
    f.write_all(&bytes[o + 0x0C..o + 0x0E]).unwrap();
}

/// The bytes an NTFS volume's `$Bitmap` marks in use (the volume at `sector` of `image`), read by TSK: `icat`
/// of record 6, its bits below `fsstat`'s cluster count, times the cluster size.
pub fn tsk_bitmap_bytes_in_use(image: &Path, sector: u64) -> u64 {
    let off = sector.to_string();
    let stat = run_ok(tool("fsstat").args(["-o", &off]).arg(image));
    let text = String::from_utf8_lossy(&stat.stdout);
    let field = |key: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("fsstat of {} has no {key}", image.display()));
        line.rsplit(' ').next().unwrap().trim().parse().expect(key)
    };
    let cluster = field("Cluster Size:");
    let clusters = field("Total Cluster Range:") + 1;
    let bits = run_ok(tool("icat").args(["-o", &off]).arg(image).arg("6")).stdout;
    bytes_of(&bits, clusters, cluster)
}

fn bytes_of(bitmap: &[u8], clusters: u64, cluster: u64) -> u64 {
    let used = (0..clusters)
        .filter(|&c| bitmap[(c / 8) as usize] >> (c % 8) & 1 == 1)
        .count() as u64;
    used * cluster
}

/// The bytes of the blocks TSK lists as allocated (`blkls -a -l`: HFS+'s allocation file), times the block
/// size `fsstat` gives.
pub fn tsk_blocks_in_use(img: &Path) -> u64 {
    let text = |tool: &str, args: &[&str]| {
        String::from_utf8(run_ok(Command::new(tool).args(args).arg(img)).stdout).unwrap()
    };
    let blocks = text("blkls", &["-a", "-l"])
        .lines()
        .filter(|l| l.ends_with("|a"))
        .count() as u64;
    let bs: u64 = text("fsstat", &[])
        .lines()
        .find_map(|l| l.strip_prefix("Allocation Block Size: "))
        .expect("fsstat's block size")
        .parse()
        .unwrap();
    blocks * bs
}

/// `uffs du --source SOURCE`'s root total: the bytes allocated to everything on the volume.
pub fn du_root_allocated(source: &Path) -> u64 {
    let du = run_ok(
        uffs()
            .arg("du")
            .arg("--source")
            .arg(source)
            .args(["--format", "csv"]),
    );
    csv_rows(&du.stdout)
        .iter()
        .find(|r| r["depth"] == "0")
        .expect("du's root line")["allocated"]
        .parse()
        .unwrap()
}

/// XFS: the bytes of the data device's blocks less the free ones `xfs_db`'s `freesp` counts in the free-space
/// trees.
pub fn xfs_db_in_use(img: &Path) -> u64 {
    let o = run_ok(
        tool("xfs_db")
            .args([
                "-r",
                "-c",
                "sb 0",
                "-c",
                "p dblocks blocksize",
                "-c",
                "freesp -s",
            ])
            .arg(img),
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let after = |key: &str| -> u64 {
        let line = text
            .lines()
            .find_map(|l| l.split_once(key).map(|x| x.1))
            .unwrap_or_else(|| panic!("no {key:?} in:\n{text}"));
        line.split_whitespace().next().unwrap().parse().unwrap()
    };
    (after("dblocks =") - after("total free blocks")) * after("blocksize =")
}

/// Days from 1970-01-01 to the civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-12-02T15:22:00.6385598Z` as 100 ns units since 1970; no time as 0.
pub fn iso_ticks(iso: &str) -> i64 {
    // A volume's own metadata (the `$` entries of ext, XFS and Btrfs) has no time.
    if iso.is_empty() {
        return 0;
    }
    let n = |a: usize, b: usize| iso[a..b].parse::<i64>().unwrap();
    let days = days_from_civil(n(0, 4), n(5, 7), n(8, 10));
    let secs = days * 86_400 + n(11, 13) * 3600 + n(14, 16) * 60 + n(17, 19);
    let frac: String = iso[19..]
        .trim_start_matches('.')
        .trim_end_matches('Z')
        .chars()
        .chain(std::iter::repeat('0'))
        .take(7)
        .collect();
    secs * 10_000_000 + frac.parse::<i64>().unwrap()
}

/// The blocks of an APFS container's volume superblocks, as `pstat` lists its volumes, in order: what The Sleuth
/// Kit's pool options take (`fls -P apfs -B BLOCK`).
pub fn apfs_apsb_blocks(img: &Path) -> Vec<u64> {
    String::from_utf8(run_ok(tool("pstat").arg(img)).stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            l.trim_start_matches(['|', ' '])
                .strip_prefix("APSB Block Number: ")
        })
        .map(|n| n.trim().parse().unwrap())
        .collect()
}

/// What `fls -r -p -l` says of one name: inode, type (`r/r`, `d/d`, `l/l`), modified, accessed, changed,
/// created (as it prints them), size, gid, uid.
pub type FlsRow = (u64, String, [String; 4], u64, u32, u32);

/// `fls ARGS -r -p -l IMG` (ARGS: a pool's options, a snapshot) by path, names composed as uffs prints them (TSK
/// prints a Mac volume's as stored, often decomposed).
pub fn fls_long(img: &Path, args: &[&str]) -> std::collections::BTreeMap<String, FlsRow> {
    use unicode_normalization::UnicodeNormalization;
    let mut cmd = tool("fls");
    cmd.args(args).args(["-r", "-p", "-l"]).arg(img);
    String::from_utf8(run_ok(&mut cmd).stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let (kind, inode) = f[0].split_once(' ')?;
            let inode = inode.trim_end_matches(':').parse().ok()?;
            let time = |i: usize| f[i].trim_end_matches(" (UTC)").to_string();
            Some((
                format!("/{}", f[1].nfc().collect::<String>()),
                (
                    inode,
                    kind.to_string(),
                    [time(2), time(3), time(4), time(5)],
                    f[6].parse().ok()?,
                    f[7].parse().ok()?,
                    f[8].parse().ok()?,
                ),
            ))
        })
        .collect()
}

/// An export time (`2022-01-14T07:19:42.0000000Z`) as fls prints it (`2022-01-14 07:19:42`); none is zeros.
pub fn fls_time(t: &str) -> String {
    if t.is_empty() {
        "0000-00-00 00:00:00".into()
    } else {
        t[..19].replace('T', " ")
    }
}

/// `n` bytes that compress to nothing (xorshift from `seed`, not 0): data that takes its blocks.
pub fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
