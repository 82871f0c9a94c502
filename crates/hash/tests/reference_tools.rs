//! uffs-hash's outputs against the tools they imitate, run on files this test writes: hashdeep's own output must
//! equal ours byte for byte, and hashdeep must audit (`-a`) and match (`-m`) against a file we wrote;
//! md5sum/sha1sum/sha256sum must print what we print, and `sha256sum -c` must accept our lines. The tools'
//! outputs in turn must load as known-file sets that know every file. Likewise `xxhsum -H3` for XXH3.
//! (hashdeep, coreutils and xxhsum come from scripts/setup.sh.)

#![cfg(unix)]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use uffs_hash::format::{shell_prompt, Hashdeep, Sum};
use uffs_hash::known::Kind;
use uffs_hash::{Algo, Algos, Digests, Hasher, KnownSet, KnownSets};

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("uffs-hash")
        .join(name);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Bytes that look random (xorshift), so that no two files share a digest.
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

/// Names hashdeep carries through its own files: commas, quotes, backslashes, spaces at the ends, `%`, `#`,
/// tabs, a carriage return inside the name, non-ASCII; and files that are empty or span many hash slices.
fn write_tree(dir: &Path) -> Vec<PathBuf> {
    let files: Vec<(&[u8], Vec<u8>)> = vec![
        (b"plain.txt", b"hello\n".to_vec()),
        (b"with,comma.txt", b"x".to_vec()),
        (b"quote\"q\".txt", b"q".to_vec()),
        (b"back\\slash.txt", b"b".to_vec()),
        (b" lead and trail space ", b"s".to_vec()),
        (b"percent %%%% and # hash", b"p".to_vec()),
        (b"tab\there", b"t".to_vec()),
        (b"cr\rinside", b"c".to_vec()),
        ("ünï cödé.txt".as_bytes(), b"u".to_vec()),
        (b"empty", Vec::new()),
        (b"sub/dir/big.bin", noise(1_500_000, 7)),
        (b"sub/one.bin", noise(65_537, 8)),
    ];
    let mut paths = Vec::new();
    for (name, data) in files {
        let p = dir.join(OsStr::from_bytes(name));
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, data).unwrap();
        paths.push(p);
    }
    paths
}

/// Names that only the sum formats carry (escaped); hashdeep writes them but cannot read them back.
fn write_odd_names(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for (i, name) in [&b"new\nline"[..], b"ends in cr\r", b"both\\and\nmore\\"]
        .into_iter()
        .enumerate()
    {
        let p = dir.join(OsStr::from_bytes(name));
        fs::write(&p, format!("odd {i}")).unwrap();
        paths.push(p);
    }
    paths
}

fn digests(path: &Path, algos: Algos) -> Digests {
    let mut h = Hasher::new(algos);
    // Fed in pieces, as the content reader hands them over.
    for piece in fs::read(path).unwrap().chunks(100_000) {
        h.update(piece);
    }
    h.finish()
}

/// Our hashdeep file for `files`, as `hashdeep -c ALGOS -r DIR` run from `cwd` would write it.
fn our_hashdeep(algos: Algos, cwd: &Path, dir: &Path, files: &[PathBuf]) -> Vec<u8> {
    let hd = Hashdeep::new(algos).unwrap();
    let mut out = Vec::new();
    let cwd_s = cwd.to_str().unwrap();
    let command = [
        "hashdeep",
        "-c",
        &algos.to_string(),
        "-r",
        dir.to_str().unwrap(),
    ];
    hd.write_header(
        &mut out,
        cwd.as_os_str().as_bytes(),
        &shell_prompt(cwd_s),
        &command,
    )
    .unwrap();
    for f in files {
        let size = fs::metadata(f).unwrap().len();
        hd.write_file(&mut out, size, &digests(f, algos), f.as_os_str().as_bytes())
            .unwrap();
    }
    out
}

fn hashdeep(cwd: &Path, args: &[&OsStr]) -> Output {
    let mut cmd = Command::new("hashdeep");
    cmd.current_dir(cwd).args(args);
    cmd.output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"))
}

/// hashdeep's output with its file lines sorted (it hashes on several threads, so their order varies).
fn header_and_sorted_lines(out: &[u8]) -> (Vec<&[u8]>, Vec<&[u8]>) {
    let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
    let (header, body) = lines.split_at(5);
    let mut body = body.to_vec();
    body.sort();
    (header.to_vec(), body)
}

#[test]
fn hashdeep_prints_what_we_print() {
    let root = scratch("hashdeep-bytes");
    let dir = root.join("d");
    let mut files = write_tree(&dir);
    files.extend(write_odd_names(&dir));
    for algos in ["md5,sha256", "md5", "sha1", "md5,sha1,sha256"] {
        let algos = Algos::parse(algos).unwrap();
        let theirs = hashdeep(
            &root,
            &[
                OsStr::new("-c"),
                OsStr::new(&algos.to_string()),
                OsStr::new("-r"),
                dir.as_os_str(),
            ],
        );
        assert!(
            theirs.status.success(),
            "{}",
            String::from_utf8_lossy(&theirs.stderr)
        );
        let ours = our_hashdeep(algos, &root, &dir, &files);
        assert_eq!(
            header_and_sorted_lines(&ours),
            header_and_sorted_lines(&theirs.stdout),
            "--- ours:\n{}\n--- hashdeep's:\n{}",
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs.stdout)
        );
    }
}

#[test]
fn the_header_of_this_process_is_hashdeeps() {
    let root = scratch("hashdeep-here");
    let file = root.join("f");
    fs::write(&file, b"f").unwrap();
    // Run from this process's own working directory, as `write_header_here` assumes.
    let theirs = run(Command::new("hashdeep").args(["-c", "md5"]).arg(&file));
    let mut ours = Vec::new();
    let hd = Hashdeep::new(Algo::Md5.into()).unwrap();
    hd.write_header_here(
        &mut ours,
        &[
            "hashdeep".as_bytes(),
            b"-c",
            b"md5",
            file.as_os_str().as_bytes(),
        ],
    )
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs.stdout[..ours.len()])
    );
}

#[test]
fn hashdeep_audits_and_matches_against_our_file() {
    let root = scratch("hashdeep-audit");
    let dir = root.join("d");
    let files = write_tree(&dir);
    for algos in ["md5,sha256", "sha1", "md5,sha1,sha256"] {
        let algos = Algos::parse(algos).unwrap();
        let known = root.join(format!("known-{algos}.hashdeep"));
        fs::write(&known, our_hashdeep(algos, &root, &dir, &files)).unwrap();

        let audit = hashdeep(
            &root,
            &[
                OsStr::new("-k"),
                known.as_os_str(),
                OsStr::new("-a"),
                OsStr::new("-r"),
                dir.as_os_str(),
            ],
        );
        assert!(
            audit.status.success(),
            "audit with {algos}: {}{}",
            String::from_utf8_lossy(&audit.stdout),
            String::from_utf8_lossy(&audit.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&audit.stdout),
            "hashdeep: Audit passed\n"
        );

        let matched = run(Command::new("hashdeep")
            .current_dir(&root)
            .arg("-k")
            .arg(&known)
            .arg("-m")
            .arg("-r")
            .arg(&dir));
        let mut listed: Vec<&[u8]> = matched
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        listed.sort();
        let mut expected: Vec<&[u8]> = files.iter().map(|f| f.as_os_str().as_bytes()).collect();
        expected.sort();
        assert_eq!(
            listed, expected,
            "hashdeep -m with {algos} lists every file"
        );

        // And our own reader takes the file hashdeep just accepted.
        let set = KnownSet::open(&known).unwrap();
        assert_eq!(set.kind(), Kind::Hashdeep);
        assert_eq!(set.algos(), algos);
        assert_eq!(set.report().bad_lines, 0);
        for f in &files {
            assert!(set.is_known(&digests(f, algos)).unwrap(), "{f:?}");
        }
    }

    // The audit means something: a changed file fails it.
    let known = root.join("known-md5,sha256.hashdeep");
    fs::write(dir.join("plain.txt"), b"changed\n").unwrap();
    let audit = hashdeep(
        &root,
        &[
            OsStr::new("-k"),
            known.as_os_str(),
            OsStr::new("-a"),
            OsStr::new("-r"),
            dir.as_os_str(),
        ],
    );
    assert!(!audit.status.success());
    assert_eq!(
        String::from_utf8_lossy(&audit.stdout),
        "hashdeep: Audit failed\n"
    );
}

#[test]
fn coreutils_print_what_we_print_and_check_it() {
    let root = scratch("sums");
    let mut files = write_tree(&root.join("d"));
    files.extend(write_odd_names(&root.join("d")));
    // Relative names, as given on the command line.
    let names: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap().to_path_buf())
        .collect();
    for algo in [Algo::Md5, Algo::Sha1, Algo::Sha256] {
        let tool = algo.sum_program();
        let theirs = run(Command::new(tool).current_dir(&root).args(&names));
        let mut ours = Vec::new();
        for (f, name) in files.iter().zip(&names) {
            Sum::new(algo)
                .write_file(
                    &mut ours,
                    &digests(f, algo.into()),
                    name.as_os_str().as_bytes(),
                )
                .unwrap();
        }
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs.stdout),
            "{tool}"
        );
        assert_eq!(ours, theirs.stdout, "{tool}");

        let list = root.join(format!("ours.{}", algo.name()));
        fs::write(&list, &ours).unwrap();
        let check = run(Command::new(tool)
            .current_dir(&root)
            .arg("--strict")
            .arg("-c")
            .arg(&list));
        let oks = check
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| l.ends_with(b": OK"))
            .count();
        assert_eq!(
            oks,
            files.len(),
            "{tool} -c: {}",
            String::from_utf8_lossy(&check.stdout)
        );

        // The tool's own output, plain and --tag, loads as a known-file set that knows every file.
        let tagged = run(Command::new(tool)
            .current_dir(&root)
            .arg("--tag")
            .args(&names));
        let tag_list = root.join(format!("tag.{}", algo.name()));
        fs::write(&tag_list, &tagged.stdout).unwrap();
        for path in [&list, &tag_list] {
            let set = KnownSet::open(path).unwrap();
            assert_eq!(set.kind(), Kind::HashList);
            assert_eq!(set.algos(), Algos::from(algo));
            assert_eq!(
                (set.report().hashes, set.report().bad_lines),
                (files.len() as u64, 0),
                "{path:?}"
            );
            for f in &files {
                assert!(
                    set.is_known(&digests(f, Algos::all())).unwrap(),
                    "{f:?} in {path:?}"
                );
            }
            assert!(!set
                .is_known(&Hasher::digest(Algos::all(), b"not one of them"))
                .unwrap());
        }
    }
}

#[test]
fn xxhsum_prints_what_we_print_and_checks_it() {
    let root = scratch("xxhsum");
    let files = write_tree(&root.join("d"));
    let names: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap().to_path_buf())
        .collect();
    let theirs = run(Command::new("xxhsum")
        .arg("-H3")
        .current_dir(&root)
        .args(&names));
    let mut ours = Vec::new();
    for (f, name) in files.iter().zip(&names) {
        Sum::new(Algo::Xxh3)
            .write_file(
                &mut ours,
                &digests(f, Algo::Xxh3.into()),
                name.as_os_str().as_bytes(),
            )
            .unwrap();
    }
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs.stdout)
    );
    assert_eq!(ours, theirs.stdout);

    let list = root.join("ours.xxh3");
    fs::write(&list, &ours).unwrap();
    let check = run(Command::new("xxhsum")
        .current_dir(&root)
        .arg("--strict")
        .arg("-c")
        .arg(&list));
    let oks = check
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| l.ends_with(b": OK"))
        .count();
    assert_eq!(
        oks,
        files.len(),
        "xxhsum -c: {}",
        String::from_utf8_lossy(&check.stdout)
    );

    let set = KnownSet::open(&list).unwrap();
    assert_eq!(set.algos(), Algos::from(Algo::Xxh3));
    assert_eq!(set.report().bad_lines, 0);
    for f in &files {
        assert!(set.is_known(&digests(f, Algos::all())).unwrap(), "{f:?}");
    }

    // xxh64sum's lines are sixteen digits too, but not XXH3: refused, not misread.
    let xxh64 = run(Command::new("xxhsum")
        .arg("-H1")
        .current_dir(&root)
        .args(&names));
    fs::write(root.join("theirs.xxh64"), &xxh64.stdout).unwrap();
    let err = KnownSet::open(root.join("theirs.xxh64"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("XXH64 or XXH3"), "{err}");
}

#[test]
fn known_sets_from_several_tools_mark_known_and_unknown() {
    let root = scratch("known");
    let dir = root.join("d");
    let files = write_tree(&dir);
    // Known: the first half by sha256sum, the second by hashdeep (md5 only); one file left out of both.
    let (first, rest) = files.split_at(files.len() / 2);
    let (second, unknown) = rest.split_at(rest.len() - 1);
    let sums = run(Command::new("sha256sum").args(first));
    fs::write(root.join("first.sha256"), &sums.stdout).unwrap();
    let mut args = vec![OsStr::new("-c"), OsStr::new("md5")];
    args.extend(second.iter().map(|p| p.as_os_str()));
    let hd = hashdeep(&root, &args);
    assert!(hd.status.success());
    fs::write(root.join("second.hashdeep"), &hd.stdout).unwrap();

    let sets = KnownSets::open([root.join("first.sha256"), root.join("second.hashdeep")]).unwrap();
    assert_eq!(sets.algos(), Algos::parse("md5,sha256").unwrap());
    assert_eq!(
        sets.sets().iter().map(|s| s.kind()).collect::<Vec<_>>(),
        [Kind::HashList, Kind::Hashdeep]
    );
    // A caller computing sha1 alone could use neither set; it must add one of each.
    let sha1 = Algos::from(Algo::Sha1);
    assert_eq!(sets.unusable(sha1).count(), 2);
    let computed = sets.algos_to_compute(sha1);
    assert_eq!(computed, Algos::parse("md5,sha1,sha256").unwrap());
    for f in first.iter().chain(second) {
        assert!(sets.is_known(&digests(f, computed)).unwrap(), "{f:?}");
    }
    for f in unknown {
        assert!(!sets.is_known(&digests(f, computed)).unwrap(), "{f:?}");
    }
}

#[test]
fn a_text_set_on_disk_reports_its_bad_lines() {
    let root = scratch("bad-lines");
    let a = Hasher::digest(Algos::all(), b"a");
    let text = format!(
        "{}  a\n# comment\ngarbage\n\nXXH3 (a) = {}\nd41d8cd98f00b204e9800998ecf8427  short\n",
        a.hex(Algo::Sha1).unwrap(),
        a.hex(Algo::Xxh3).unwrap()
    );
    let path = root.join("list.txt");
    fs::write(&path, text).unwrap();
    let set = KnownSet::open(&path).unwrap();
    assert_eq!(set.algos(), Algos::parse("sha1,xxh3").unwrap());
    let r = set.report();
    assert_eq!((r.lines, r.hashes, r.bad_lines), (6, 2, 2));
    assert_eq!(
        r.first_bad.iter().map(|b| b.line).collect::<Vec<_>>(),
        [3, 6]
    );
    assert!(set.is_known(&a).unwrap());

    fs::write(&path, "garbage\nmore garbage\n").unwrap();
    let err = KnownSet::open(&path).unwrap_err().to_string();
    assert!(
        err.contains("no digest") && err.contains("2 bad lines") && err.contains("line 1"),
        "{err}"
    );
    assert!(KnownSet::open(root.join("missing")).is_err());
}
