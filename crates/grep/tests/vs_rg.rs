//! uffs-grep against the real `rg` (installed by scripts/setup.sh): generated files of every kind (text, UTF-16
//! with and without a BOM, UTF-8 BOM, CRLF, NUL before and after matches, a long line, invalid UTF-8, empty, no
//! final newline, lines across the searcher's 64 KiB blocks) are searched by `rg` with each set of flags, and the
//! bytes this crate prints for the file must be the same, from a slice and from a reader.
//!
//! Each file sits alone in its own folder and `rg` is given the folder, so it finds the file by walking, as `uffs
//! grep` finds files by query (`rg` searches files named on its command line as if `--binary` were given).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use uffs_grep::{Binary, FileSeparator, Found, Grep, Options, Output};

/// The flags every comparison runs `rg` with.
const RG: [&str; 7] = [
    "--no-config",
    "--no-heading",
    "--with-filename",
    "--line-number",
    "--color",
    "never",
    "-uu",
];

/// The flag sets, each ending with its positional pattern if it has no `-e`.
const FLAG_SETS: &[&[&str]] = &[
    &["foo"],
    &["fo+\\w*"],
    &["-i", "foo"],
    &["-w", "foo"],
    &["-w", "-i", "foo"],
    &["-F", "a.b(c"],
    &["-F", "-i", "CAFÉ"],
    &["a.b"],
    &["-e", "foo", "-e", "bar"],
    &["-F", "-e", "foo", "-e", "x+y"],
    &["-c", "foo"],
    &["-c", "-i", "bar"],
    &["-l", "foo"],
    &["-l", "-c", "foo"],
    &["-C", "2", "foo"],
    &["-A", "1", "bar"],
    &["-B", "3", "-w", "foo"],
    &["-C", "1", "-i", "-e", "foo", "-e", "needle"],
    &["-E", "utf-16le", "foo"],
    &["-E", "utf-16le", "-C", "1", "-i", "foo"],
    &["--binary", "foo"],
    &["--binary", "-c", "foo"],
    &["--binary", "-l", "foo"],
    &["--binary", "-C", "1", "foo"],
    &["--binary", "-F", "-i", "foo"],
    &["--binary", "-F", "-w", "-e", "foo", "-e", "bar"],
    // Anchors that match only once a NUL became a line end: the whole-file prefilter must not drop these files.
    &["--binary", "^foo"],
    &["--binary", "-c", "bar$"],
    &["--binary", "-w", "-e", "x", "-e", "^y"],
    &["-a", "foo"],
    &["-a", "-c", "foo"],
    &["needle"],
    &["-C", "3", "needle"],
    &["^$"],
    &["\\w+é"],
    &["(?i)ÉTÉ"],
    &["-n", "zzz"],
    &["-w", "#"],
    &["-w", "-e", "-2"],
    &["-w", "o*"],
    &["-w", "\\w+-\\w+"],
    &["-w", "-e", "foo", "-e", "foo-bar"],
    &["-v", "foo"],
    &["-v", "-c", "foo"],
    &["-v", "-l", "foo"],
    &["-v", "-C", "1", "-i", "foo"],
    &["-v", "--binary", "foo"],
    &["-o", "foo"],
    &["-o", "-i", "-e", "foo", "-e", "ba."],
    &["-o", "-c", "foo"],
    &["-o", "-w", "foo"],
    &["-m", "1", "foo"],
    &["-m", "2", "-C", "1", "foo"],
    &["-m", "1", "-c", "bar"],
    &["-m", "2", "-v", "foo"],
    &["-m", "1", "-o", "foo"],
];

/// The options that an `rg` command line asks for.
fn options(flags: &[&str]) -> Options {
    let mut o = Options::default();
    let (mut count, mut files) = (false, false);
    let mut it = flags.iter();
    while let Some(&f) = it.next() {
        let mut number = || it.next().unwrap().parse::<usize>().unwrap();
        match f {
            "-e" => o.patterns.push(it.next().unwrap().to_string()),
            "-F" => o.fixed_strings = true,
            "-i" => o.ignore_case = true,
            "-w" => o.word = true,
            "-c" => count = true,
            "-l" => files = true,
            "-n" => o.line_number = true,
            "-A" => o.after_context = number(),
            "-B" => o.before_context = number(),
            "-C" => o = o.context(number()),
            "-E" => o.encoding = Some(it.next().unwrap().to_string()),
            "--binary" => o.binary = Binary::Search,
            "-a" => o.binary = Binary::Text,
            "-v" => o.invert_match = true,
            "-o" => o.only_matching = true,
            "-m" => o.max_count = Some(number() as u64),
            pattern => o.patterns.push(pattern.to_string()),
        }
    }
    o.output = Output::from_flags(count, files);
    o
}

fn rg(cwd: &Path, flags: &[&str], paths: &[&str]) -> Vec<u8> {
    let out = Command::new("rg")
        .args(RG)
        .args(flags)
        .args(paths)
        .current_dir(cwd)
        .env_remove("RIPGREP_CONFIG_PATH")
        .output()
        .expect("rg is not installed: run scripts/setup.sh");
    assert!(
        out.status.code() != Some(2),
        "rg {flags:?} {paths:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Some text with the words the flag sets look for, in many shapes.
fn text() -> String {
    let mut s = String::new();
    for (i, line) in [
        "foo",
        "Foo at the start of a line",
        "a line with FOO in capitals",
        "foobar is not the word foo? it is, here",
        "foo_bar and bar",
        "x-foo-y",
        "nothing here",
        "café été ÉTÉ",
        "",
        "CAFÉ in capitals",
        "a.b(c and axb",
        "x+y literal",
        "seven",
        "eight",
        "nine",
        "ten bar",
        "eleven",
        "twelve",
        "thirteen foo",
        "## and #",
        "-2 and x-2",
        "a foo-bar b",
        "oo",
    ]
    .iter()
    .enumerate()
    {
        s += line;
        if i % 5 == 4 {
            s += " needle";
        }
        s += "\n";
    }
    s
}

fn utf16le(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

fn utf16be(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// `n` filler lines of 80 bytes, with `needle` on every 300th.
fn filler(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        let line = if i % 300 == 150 {
            format!("{i:06} needle")
        } else {
            format!("{i:06} filler")
        };
        v.extend(format!("{line:-<79}\n").bytes());
    }
    v
}

/// Bytes like machine code, with no ASCII letters: high bytes, NULs (one in eight) and newlines (one in 256).
fn noise(n: usize) -> Vec<u8> {
    let mut x: u32 = 2_463_534_242;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            match x % 256 {
                0..=31 => 0,
                32 => b'\n',
                r => 0x80 | r as u8,
            }
        })
        .collect()
}

/// The generated files: a name (its folder) and its bytes.
fn files() -> Vec<(&'static str, Vec<u8>)> {
    let t = text();
    let cat = |parts: &[&[u8]]| parts.concat();
    let long_line = cat(&[
        b"before foo\n",
        "x".repeat(300_000).as_bytes(),
        b" foo ",
        &[b'y'; 100_000],
        b"\nafter\n",
    ]);
    vec![
        ("text", t.clone().into_bytes()),
        ("utf16le-bom", cat(&[&[0xFF, 0xFE], &utf16le(&t)])),
        ("utf16le-nobom", utf16le(&t)),
        ("utf16be-bom", cat(&[&[0xFE, 0xFF], &utf16be(&t)])),
        ("utf8-bom", cat(&[&[0xEF, 0xBB, 0xBF], t.as_bytes()])),
        ("crlf", t.replace('\n', "\r\n").into_bytes()),
        ("nul-before", cat(&[b"head\n\0bin\n", t.as_bytes()])),
        (
            "nul-after-same-block",
            cat(&[t.as_bytes(), b"tail \0 foo\nmore foo\n"]),
        ),
        (
            "nul-after-next-block",
            cat(&[
                t.as_bytes(),
                &filler(1000),
                b"foo\0here\n",
                &filler(20),
                t.as_bytes(),
            ]),
        ),
        (
            "nul-far",
            cat(&[
                t.as_bytes(),
                &filler(3000),
                t.as_bytes(),
                &filler(3000),
                b"\0",
                t.as_bytes(),
            ]),
        ),
        (
            "nul-in-match-line",
            cat(&[&filler(900), b"foo \0 bar\n", t.as_bytes()]),
        ),
        (
            "nul-around-words",
            b"x\0foo\0y\nabc\0foobar\0\0bar\nFOO\0\n".to_vec(),
        ),
        (
            "nul-around-words-late",
            cat(&[&filler(1000), b"x\0foo\0y\nabc\0foobar\0\0bar\nFOO\0\n"]),
        ),
        (
            "binary-big",
            cat(&[&noise(1_500_000), b"x\0foo\0bar\n", &noise(1000)]),
        ),
        (
            "binary-split-word",
            cat(&[&noise(2000), b"fo\0o f\no\nba\0r\n"]),
        ),
        ("long-line", long_line),
        // After the long line, with the same worker (see `Worker::refresh`).
        (
            "nul-far-after-long-line",
            cat(&[
                t.as_bytes(),
                &filler(3000),
                t.as_bytes(),
                &filler(3000),
                b"\0",
                t.as_bytes(),
            ]),
        ),
        (
            "invalid-utf8",
            cat(&[
                b"caf\xe9 foo\n\xff\xfe foo bar\nok\nfoo \xc3\x28 x\nnope\n",
                t.as_bytes(),
            ]),
        ),
        ("empty", Vec::new()),
        ("no-final-newline", b"first\nsecond foo\nlast foo".to_vec()),
        ("only-newlines", b"\n\n\n".to_vec()),
        ("blocks", cat(&[&filler(5000), t.as_bytes(), &filler(2000)])),
        // Over 1 MiB: a slice goes through the reader.
        (
            "big-text",
            cat(&[&filler(14_000), t.as_bytes(), &filler(100)]),
        ),
        ("utf16le-odd-length", cat(&[&utf16le(&t), b"x"])),
        (
            "utf16le-bom-big",
            cat(&[
                &[0xFF, 0xFE],
                &utf16le(&String::from_utf8(filler(2000)).unwrap()),
                &utf16le(&t),
            ]),
        ),
    ]
}

/// Writes each file alone in its own folder under a fresh folder, and returns that.
fn write_files(name: &str, files: &[(&str, Vec<u8>)]) -> PathBuf {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&base);
    for (dir, bytes) in files {
        fs::create_dir_all(base.join(dir)).unwrap();
        fs::write(base.join(dir).join("f"), bytes).unwrap();
    }
    base
}

/// A reader that returns at most 4099 bytes a call, as a caller's reader may.
struct Chunks<'a>(&'a [u8]);

impl Read for Chunks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(4099).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn every_file_with_every_flag_set_prints_what_rg_prints() {
    let files = files();
    let base = write_files("grep-vs-rg", &files);
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut all_expected = Vec::new();
    for flags in FLAG_SETS {
        let grep = Grep::new(&options(flags)).unwrap();
        let mut worker = grep.worker();
        for (dir, bytes) in &files {
            let path = format!("{dir}/f");
            let expected = rg(&base, flags, &[dir]);
            let mut from_slice = Vec::new();
            let found = worker.search_slice(&path, bytes, &mut from_slice).unwrap();
            let mut from_file = Vec::new();
            let found_file = worker.search_reader(
                &path,
                fs::File::open(base.join(&path)).unwrap(),
                &mut from_file,
            );
            let mut from_chunks = Vec::new();
            let found_chunks = worker
                .search_reader(&path, Chunks(bytes), &mut from_chunks)
                .unwrap();
            let mut from_seekable = Vec::new();
            let found_seekable = worker
                .search_seekable(&path, std::io::Cursor::new(bytes), &mut from_seekable)
                .unwrap();
            let is_match_seekable = worker
                .is_match_seekable(std::io::Cursor::new(bytes))
                .unwrap();
            let list_flags: Vec<&str> = ["-l"]
                .into_iter()
                .chain(flags.iter().copied().filter(|f| *f != "-c"))
                .collect();
            let listed = !rg(&base, &list_flags, &[dir]).is_empty();
            let is_match = worker.is_match_slice(bytes).unwrap();
            let is_match_reader = worker.is_match_reader(Chunks(bytes)).unwrap();
            compared += 1;
            all_expected.extend_from_slice(&expected);
            if from_slice != expected {
                failures.push(format!(
                    "rg {flags:?} on {dir}:\n--- rg\n{}--- uffs-grep\n{}",
                    String::from_utf8_lossy(&expected),
                    String::from_utf8_lossy(&from_slice)
                ));
            }
            if from_file != from_slice || from_chunks != from_slice || from_seekable != from_slice {
                failures.push(format!(
                    "{flags:?} on {dir}: the readers print otherwise than the slice"
                ));
            }
            // A slice with no match anywhere is not searched line by line, so no NUL is reported for it.
            let seen = |mut f: Found| {
                if !f.matched {
                    f.binary_offset = None;
                }
                f
            };
            if seen(found_file.unwrap()) != seen(found)
                || seen(found_chunks) != seen(found)
                || seen(found_seekable) != seen(found)
            {
                failures.push(format!(
                    "{flags:?} on {dir}: the readers find otherwise than the slice"
                ));
            }
            if is_match != listed || is_match_reader != listed || is_match_seekable != listed {
                failures.push(format!(
                    "{flags:?} on {dir}: is_match {is_match}/{is_match_reader}, rg -l {listed}"
                ));
            }
            if found.matched == expected.is_empty() {
                failures.push(format!(
                    "{flags:?} on {dir}: matched {} for output {expected:?}",
                    found.matched
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The files and flags reach the cases that matter.
    for seen in [
        &b"nul-far/f: WARNING: stopped searching binary file after match"[..],
        b"nul-after-next-block/f: binary file matches",
        b"\n--\n",
        b"utf16le-nobom/f:1:foo\n",
        b"utf16le-bom/f:8:caf\xc3\xa9",
        b"invalid-utf8/f:1:caf\xe9 foo\n",
        b"crlf/f:1:foo\r\n",
        b"long-line/f:2:xxx",
        b"binary-big/f: binary file matches",
        b"big-text/f:14001:foo\n",
    ] {
        let found = all_expected.windows(seen.len()).any(|w| w == seen);
        assert!(
            found,
            "no rg output has {:?}",
            String::from_utf8_lossy(seen)
        );
    }
    fs::remove_dir_all(base).unwrap();
}

/// Fails with the first line where `ours` differs from `rg`'s output, cut short.
fn assert_same(rg: &[u8], ours: &[u8], what: &str) {
    if rg == ours {
        return;
    }
    let short =
        |l: Option<&[u8]>| l.map(|l| String::from_utf8_lossy(&l[..l.len().min(120)]).into_owned());
    let (a, b): (Vec<&[u8]>, Vec<&[u8]>) = (
        rg.split(|&c| c == b'\n').collect(),
        ours.split(|&c| c == b'\n').collect(),
    );
    let i = (0..a.len().max(b.len()))
        .find(|&i| a.get(i) != b.get(i))
        .unwrap();
    panic!(
        "{what}: line {i} differs:\n  before: {:?}\n  rg:     {:?}\n  ours:   {:?}",
        short(i.checked_sub(1).and_then(|j| a.get(j).copied())),
        short(a.get(i).copied()),
        short(b.get(i).copied())
    );
}

/// The files' names in the order `rg` printed them (each file's output is in one piece): `m/f07:...`.
fn order_printed(output: &[u8]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for line in output
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"m/"))
    {
        let name = String::from_utf8_lossy(&line[2..5]).into_owned();
        if order.last() != Some(&name) {
            assert!(!order.contains(&name), "{name} printed in two pieces");
            order.push(name);
        }
    }
    order
}

/// Many files in one folder, searched by `rg` in parallel (files in the order they finish) and with `-j1` (sorted):
/// the outputs of the files joined by a `FileSeparator` are the same bytes, `--` lines and all.
#[test]
fn files_joined_with_the_separator_print_what_rg_prints() {
    // Not the long line: the rg thread that searched it keeps its grown buffer, and prints otherwise for a later
    // file with a NUL past its first 64 KiB than for that file alone, which is what uffs-grep prints.
    let all: Vec<_> = files()
        .into_iter()
        .filter(|(name, _)| *name != "long-line")
        .collect();
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("grep-vs-rg-join");
    let _ = fs::remove_dir_all(&base);
    fs::create_dir_all(base.join("m")).unwrap();
    let named: Vec<(String, &Vec<u8>)> = all
        .iter()
        .enumerate()
        .map(|(i, (_, b))| (format!("f{i:02}"), b))
        .collect();
    for (name, bytes) in &named {
        fs::write(base.join("m").join(name), bytes).unwrap();
    }
    let flag_sets: &[&[&str]] = &[
        &["-C", "1", "foo"],
        &["-A", "2", "needle"],
        &["--binary", "-C", "1", "foo"],
        &["--binary", "-F", "-i", "foo"],
        &["--binary", "-F", "-w", "-e", "foo", "-e", "bar"],
        // Anchors that match only once a NUL became a line end: the whole-file prefilter must not drop these files.
        &["--binary", "^foo"],
        &["--binary", "-c", "bar$"],
        &["--binary", "-w", "-e", "x", "-e", "^y"],
        &["--binary", "-B", "1", "bar"],
        &["-c", "foo"],
        &["-l", "-C", "2", "foo"],
        &["foo"],
    ];
    for flags in flag_sets {
        let grep = Grep::new(&options(flags)).unwrap();
        let mut worker = grep.worker();
        let mut outputs = std::collections::HashMap::new();
        for (name, bytes) in &named {
            let mut out = Vec::new();
            let found = worker
                .search_slice(&format!("m/{name}"), bytes, &mut out)
                .unwrap();
            outputs.insert(name.clone(), (found, out));
        }
        let join = |mut separator: FileSeparator, order: &[String]| {
            let mut joined = Vec::new();
            for name in order {
                let (found, out): &(Found, Vec<u8>) = &outputs[name];
                separator.print(&mut joined, found, out).unwrap();
            }
            joined
        };

        let parallel = rg(&base, flags, &["m"]);
        let order = order_printed(&parallel);
        assert!(order.len() > 3, "{flags:?}: {order:?}");
        let ours = join(FileSeparator::parallel(&grep), &order);
        assert_same(
            &parallel,
            &ours,
            &format!("{flags:?} in the order {order:?}"),
        );

        let sorted = rg(
            &base,
            &[&["-j1", "--sort", "path"], *flags].concat(),
            &["m"],
        );
        let names: Vec<String> = named.iter().map(|(n, _)| n.clone()).collect();
        let ours = join(FileSeparator::single_threaded(&grep), &names);
        assert_same(&sorted, &ours, &format!("{flags:?} -j1"));
    }
    fs::remove_dir_all(base).unwrap();
}
