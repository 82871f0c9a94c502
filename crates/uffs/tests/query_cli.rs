//! `uffs QUERY` end to end on a hand-made index whose every name, size, time and attribute is known: one golden
//! result per operator, modifier and function; every output format; escaping; exit codes; error messages.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;
use uffs_index::batch::{NameInfo, RecordBatch, RecordInfo, StdInfo, StreamInfo, StreamSizes};
use uffs_index::time::from_civil_date;
use uffs_index::{BuildOptions, Builder, VolumeMeta};

const DAY: u64 = 86_400 * 10_000_000;

struct Entry {
    record: u64,
    name: &'static str,
    parent: u64,
    dir: bool,
    size: u64,
    /// Days after 2024-01-01 for the modified time; created is a year earlier.
    day: u64,
    attrs: u32,
    deleted: bool,
    streams: &'static [(&'static str, u64)],
}

const fn e(
    record: u64,
    name: &'static str,
    parent: u64,
    dir: bool,
    size: u64,
    day: u64,
    attrs: u32,
) -> Entry {
    Entry {
        record,
        name,
        parent,
        dir,
        size,
        day,
        attrs,
        deleted: false,
        streams: &[],
    }
}

/// The tree:
/// /Docs/{Report 2024.docx, report-draft.txt, notes.TXT, budget.xlsx (hidden, read-only)}
/// /Docs/Old/{report.txt, main.rs (both deleted)}
/// /Photos/{IMG_0001.JPG, IMG_0002.jpg, holiday.png, Sub/IMG_0001.JPG}
/// /src/{main.rs, lib.rs, README.md}
/// /weird/{tab<TAB>name.txt, esc<ESC>[31mred.txt}
/// /big.iso (sparse), /readme.txt with a Zone.Identifier stream
fn entries() -> Vec<Entry> {
    let h = 0x2 | 0x1;
    vec![
        e(5, ".", 5, true, 0, 0, 0x6),
        e(30, "Docs", 5, true, 0, 10, 0),
        e(31, "Report 2024.docx", 30, false, 250_000, 100, 0x20),
        e(32, "report-draft.txt", 30, false, 1_500, 130, 0x20),
        e(33, "notes.TXT", 30, false, 99, 131, 0x20),
        e(34, "budget.xlsx", 30, false, 40_000, 5, h),
        e(35, "Old", 30, true, 0, 1, 0),
        Entry {
            deleted: true,
            ..e(36, "report.txt", 35, false, 700, 2, 0x20)
        },
        Entry {
            deleted: true,
            ..e(37, "main.rs", 35, false, 1_000, 3, 0x20)
        },
        e(40, "Photos", 5, true, 0, 20, 0),
        e(41, "IMG_0001.JPG", 40, false, 3 << 20, 200, 0x20),
        e(42, "IMG_0002.jpg", 40, false, 5 << 20, 201, 0x20),
        e(43, "holiday.png", 40, false, 800_000, 202, 0x20),
        e(44, "Sub", 40, true, 0, 21, 0),
        e(45, "IMG_0001.JPG", 44, false, 1 << 20, 203, 0x20),
        e(50, "src", 5, true, 0, 30, 0),
        e(51, "main.rs", 50, false, 2_000, 300, 0x20),
        e(52, "lib.rs", 50, false, 9_000, 301, 0x20),
        e(53, "README.md", 50, false, 500, 302, 0x20),
        e(60, "weird", 5, true, 0, 40, 0),
        e(61, "tab\tname.txt", 60, false, 1, 40, 0x20),
        e(62, "esc\x1b[31mred.txt", 60, false, 1, 40, 0x20),
        e(70, "big.iso", 5, false, 8 << 30, 50, 0x220),
        Entry {
            streams: &[("Zone.Identifier", 26)],
            ..e(71, "readme.txt", 5, false, 10, 60, 0x20)
        },
    ]
}

/// Writes the hand-made index to a file and returns its path.
fn golden_index() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let mut b = RecordBatch::default();
        let base = from_civil_date(2024, 1, 1);
        for en in entries() {
            let t0 = b.text.len() as u32;
            b.text.extend_from_slice(en.name.as_bytes());
            let n0 = b.names.len() as u32;
            b.names.push(NameInfo {
                parent: en.parent | (1u64 << 48),
                namespace: 1,
                created: 0,
                modified: 0,
                text: t0..b.text.len() as u32,
                ..Default::default()
            });
            let s0 = b.streams.len() as u32;
            for (sn, sz) in en.streams {
                let t = b.text.len() as u32;
                b.text.extend_from_slice(sn.as_bytes());
                b.streams.push(StreamInfo {
                    sizes: StreamSizes {
                        size: *sz,
                        allocated: 0,
                        attr_flags: 0,
                        ..Default::default()
                    },
                    text: t..b.text.len() as u32,
                    tail: false,
                });
            }
            let modified = base + en.day * DAY + 12 * 3600 * 10_000_000;
            b.records.push(RecordInfo {
                number: en.record,
                sequence: 1,
                header_flags: u16::from(!en.deleted) | if en.dir { 2 } else { 0 },
                base: 0,
                std_info: Some(StdInfo {
                    created: modified - 365 * DAY,
                    modified,
                    mft_changed: modified,
                    accessed: modified + DAY,
                    attributes: en.attrs,
                }),
                has_attribute_list: false,
                reparse_tag: 0,
                data: (!en.dir).then_some(StreamSizes {
                    size: en.size,
                    allocated: en.size,
                    attr_flags: 0,
                    ..Default::default()
                }),
                names: n0..b.names.len() as u32,
                streams: s0..b.streams.len() as u32,
                ..Default::default()
            });
        }
        let meta = VolumeMeta {
            source: "golden".into(),
            records_total: 128,
            has_deleted: true,
            ..Default::default()
        };
        let mut builder = Builder::new(
            meta,
            BuildOptions {
                include_deleted: true,
            },
            64,
        );
        builder.add_batch(&b);
        let (idx, _) = builder.finish();
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("golden.uffs");
        uffs_index::file::write(&idx, &path).expect("write golden index");
        path
    })
    .clone()
}

fn q(args: &[&str]) -> Output {
    uffs()
        .arg("--index")
        .arg(golden_index())
        .args(args)
        .output()
        .expect("run uffs")
}

/// The sorted set of paths a query prints.
fn paths(query: &str) -> Vec<String> {
    paths_in(&golden_index(), query)
}

/// The sorted set of paths a query of the index file `index` prints.
fn paths_in(index: &Path, query: &str) -> Vec<String> {
    let out = uffs()
        .arg("--index")
        .arg(index)
        .args(["--color", "never", query])
        .output()
        .expect("run uffs");
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{query}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    v.sort();
    v
}

fn assert_query(query: &str, want: &[&str]) {
    let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(paths(query), want, "query {query:?}");
}

#[test]
fn golden_operators() {
    assert_query(
        "report",
        &["/Docs/Report 2024.docx", "/Docs/report-draft.txt"],
    );
    assert_query("report draft", &["/Docs/report-draft.txt"]);
    assert_query("main | lib", &["/src/lib.rs", "/src/main.rs"]);
    assert_query("src !main", &["/src"]);
    assert_query("<main | lib> !lib", &["/src/main.rs"]);
    assert_query("(main | readme) ext:md", &["/src/README.md"]);
    assert_query("\"report 2024\"", &["/Docs/Report 2024.docx"]);
    assert_query(
        "photos/img",
        &["/Photos/IMG_0001.JPG", "/Photos/IMG_0002.jpg"],
    );
    assert_query("photos\\sub", &["/Photos/Sub", "/Photos/Sub/IMG_0001.JPG"]);
    assert_query(
        "img_000?.jpg",
        &[
            "/Photos/IMG_0001.JPG",
            "/Photos/IMG_0002.jpg",
            "/Photos/Sub/IMG_0001.JPG",
        ],
    );
    assert_query("*.rs", &["/src/lib.rs", "/src/main.rs"]);
    // A leading `?` is one character, not a run.
    assert_query("?ain.rs", &["/src/main.rs"]);
    assert_query("?ib*", &["/src/lib.rs"]);
    assert_query("?b.rs", &[]);
    assert_query(
        "regex:^IMG_\\d+\\.jpg$",
        &[
            "/Photos/IMG_0001.JPG",
            "/Photos/IMG_0002.jpg",
            "/Photos/Sub/IMG_0001.JPG",
        ],
    );
}

#[test]
fn golden_modifiers() {
    // Smart case: an upper-case letter makes the term case-sensitive.
    assert_query("IMG_0002", &["/Photos/IMG_0002.jpg"]);
    assert_query("JPG", &["/Photos/IMG_0001.JPG", "/Photos/Sub/IMG_0001.JPG"]);
    assert_query(
        "nocase:JPG",
        &[
            "/Photos/IMG_0001.JPG",
            "/Photos/IMG_0002.jpg",
            "/Photos/Sub/IMG_0001.JPG",
        ],
    );
    assert_query("case:readme", &["/readme.txt"]);
    assert_query("path:sub", &["/Photos/Sub", "/Photos/Sub/IMG_0001.JPG"]);
    assert_query("file:docs", &[]);
    assert_query("folder:o", &["/Docs", "/Docs/Old", "/Photos"]);
    assert_query(
        "wholeword:report",
        &["/Docs/Report 2024.docx", "/Docs/report-draft.txt"],
    );
    assert_query("wholeword:draf", &[]);
    assert_query("file:case:README", &["/src/README.md"]);
}

#[test]
fn golden_functions() {
    assert_query(
        "ext:txt",
        &[
            "/Docs/notes.TXT",
            "/Docs/report-draft.txt",
            "/readme.txt",
            "/weird/esc\\x1b[31mred.txt",
            "/weird/tab\\x09name.txt",
        ]
        .map(|p| p.replace("\\x1b", "\x1b").replace("\\x09", "\t"))
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
    );
    assert_query(
        "ext:jpg;png",
        &[
            "/Photos/IMG_0001.JPG",
            "/Photos/IMG_0002.jpg",
            "/Photos/Sub/IMG_0001.JPG",
            "/Photos/holiday.png",
        ],
    );
    assert_query("size:>4mb", &["/Photos/IMG_0002.jpg", "/big.iso"]);
    assert_query(
        "size:1mb..3mb",
        &["/Photos/IMG_0001.JPG", "/Photos/Sub/IMG_0001.JPG"],
    );
    assert_query(
        "size:<=10 file:",
        &[
            "/readme.txt",
            "/weird/esc\x1b[31mred.txt",
            "/weird/tab\tname.txt",
        ],
    );
    assert_query("dm:2024-07-19", &["/Photos/IMG_0001.JPG"]);
    // Days 300 and 301 of 2024 (a leap year) are October 27 and 28.
    assert_query("dm:2024-10 ext:rs", &["/src/lib.rs", "/src/main.rs"]);
    assert_query("dm:>2024-10-28", &["/src/README.md"]);
    assert_query("dc:2023-04", &["/Docs/Report 2024.docx"]);
    assert_query("da:2024-01-07", &["/Docs/budget.xlsx"]);
    assert_query("attrib:h", &["/Docs/budget.xlsx"]);
    assert_query("attrib:p", &["/big.iso"]);
    assert_query(
        "parent:/docs",
        &[
            "/Docs/Old",
            "/Docs/Report 2024.docx",
            "/Docs/budget.xlsx",
            "/Docs/notes.TXT",
            "/Docs/report-draft.txt",
        ],
    );
    assert_query("parent:\\Photos\\Sub", &["/Photos/Sub/IMG_0001.JPG"]);
    assert_query("depth:3", &["/Photos/Sub/IMG_0001.JPG"]);
    assert_query(
        "len:>15",
        &["/Docs/Report 2024.docx", "/Docs/report-draft.txt"],
    );
    assert_query(
        "dupe:",
        &["/Photos/IMG_0001.JPG", "/Photos/Sub/IMG_0001.JPG"],
    );
    assert_query("deleted:", &["/Docs/Old/main.rs", "/Docs/Old/report.txt"]);
    // A deleted copy does not make a live file a duplicate.
    assert_query("dupe: ext:rs", &[]);
    assert_query("stream:", &["/readme.txt:Zone.Identifier"]);
}

#[test]
fn fd_style_flags() {
    let lines = |args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = String::from_utf8_lossy(&q(args).stdout)
            .lines()
            .map(String::from)
            .collect();
        v.sort();
        v
    };
    assert_eq!(lines(&["-e", "rs"]), ["/src/lib.rs", "/src/main.rs"]);
    assert_eq!(
        lines(&["-t", "d", "-i", "S"]),
        ["/Docs", "/Photos", "/Photos/Sub", "/src"]
    );
    assert_eq!(lines(&["-s", "img"]), Vec::<String>::new());
    assert_eq!(lines(&["-S", "+4M"]), ["/Photos/IMG_0002.jpg", "/big.iso"]);
    assert_eq!(
        lines(&["-g", "*.JPG"]),
        ["/Photos/IMG_0001.JPG", "/Photos/Sub/IMG_0001.JPG"]
    );
    assert_eq!(
        lines(&["-r", "^(main|lib)\\.rs$"]),
        ["/src/lib.rs", "/src/main.rs"]
    );
    assert_eq!(lines(&["-p", "docs/old"]), ["/Docs/Old"]);
    assert_eq!(
        lines(&["--changed-before", "2024-01-08", "-t", "f"]),
        ["/Docs/budget.xlsx"]
    );
    assert_eq!(
        lines(&["--changed-within", "1000y", "-e", "md"]),
        ["/src/README.md"]
    );
    assert_eq!(
        lines(&["--deleted", "report.txt"]),
        ["/Docs/Old/report.txt"]
    );
}

#[test]
fn sorting_limits_and_count() {
    let out = |args: &[&str]| String::from_utf8_lossy(&q(args).stdout).to_string();
    assert_eq!(
        out(&["ext:jpg", "--sort", "size"]),
        "/Photos/Sub/IMG_0001.JPG\n/Photos/IMG_0001.JPG\n/Photos/IMG_0002.jpg\n"
    );
    assert_eq!(
        out(&["ext:jpg", "--sort", "size", "--reverse", "--limit", "1"]),
        "/Photos/IMG_0002.jpg\n"
    );
    assert_eq!(
        out(&["-e", "rs", "--sort", "name"]),
        "/src/lib.rs\n/src/main.rs\n"
    );
    // Equal times sort by name: `esc…` before `tab…`.
    assert_eq!(
        out(&["file:", "--sort", "modified", "--limit", "2"]),
        "/Docs/budget.xlsx\n/weird/esc\x1b[31mred.txt\n"
    );
    assert_eq!(out(&["ext:jpg", "--count"]), "3\n");
    assert_eq!(out(&["--count"]), "21\n");
}

#[test]
fn output_formats() {
    let out = |args: &[&str]| String::from_utf8_lossy(&q(args).stdout).to_string();
    assert_eq!(
        out(&["-e", "rs", "--sort", "name", "-0"]),
        "/src/lib.rs\0/src/main.rs\0"
    );
    assert_eq!(
        out(&["main.rs", "--format", "csv", "--columns", "path,size,kind"]),
        "path,size,kind\n/src/main.rs,2000,file\n"
    );
    assert_eq!(
        out(&[
            "report 2024",
            "--format",
            "csv",
            "--columns",
            "name,modified"
        ]),
        "name,modified\nReport 2024.docx,2024-04-10T12:00:00.0000000Z\n"
    );
    assert_eq!(
        out(&["tab", "--format", "tsv", "--columns", "name,size"]),
        "name\tsize\ntab\\tname.txt\t1\n"
    );
    let json = out(&[
        "big.iso",
        "--format",
        "jsonl",
        "--columns",
        "path,size,attributes,deleted",
    ]);
    assert_eq!(
        json,
        "{\"path\":\"/big.iso\",\"size\":8589934592,\"attributes\":\"ap\",\"deleted\":false}\n"
    );
    let esc = out(&["esc", "--format", "jsonl", "--columns", "name"]);
    assert_eq!(esc, "{\"name\":\"esc\\u001b[31mred.txt\"}\n");
    let table = out(&["ext:jpg", "--sort", "size", "--format", "table"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["PATH", "KIND", "SIZE", "MODIFIED"]
    );
    assert!(
        lines[1].ends_with("file  1.0 MiB  2024-07-22 12:00"),
        "{table}"
    );
    assert_eq!(lines.len(), 4);
    let dir = scratch("query-output");
    let file = dir.join("out.txt");
    let o = q(&["-e", "md", "-o", file.to_str().unwrap()]);
    assert!(o.status.success() && o.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "/src/README.md\n");
    let bad = q(&["x", "--format", "csv", "--columns", "path,colour"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown column \"colour\""));
}

/// A folder's `size` is its own data (0) and `tree_size` its total below it, in a table as in CSV: the table
/// shows every byte column in KiB, MiB …, CSV the bytes, and the numbers are the same.
#[test]
fn a_folders_sizes_agree_between_table_and_csv() {
    let xp = xp_index(&scratch("query-cli-folder-sizes"));
    let cols = ["size", "allocated", "tree_size", "tree_allocated"];
    let run = |format: &str| {
        let o = run_ok(uffs().arg("--index").arg(&xp).args([
            "folder:system32 | ntoskrnl.exe",
            "--sort",
            "path",
            "--format",
            format,
            "--columns",
            &format!("path,{}", cols.join(",")),
        ]));
        String::from_utf8(o.stdout).unwrap()
    };
    let csv = csv_rows(run("csv").as_bytes());
    let table = run("table");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["PATH", "SIZE", "ALLOCATED", "TREE_SIZE", "TREE_ALLOCATED"]
    );
    assert_eq!(csv.len(), 2, "{table}");
    assert_eq!(lines.len(), 3, "{table}");
    let folder = &csv[0];
    assert_eq!(folder["path"], "/WINDOWS/system32");
    assert_eq!(folder["size"], "0");
    assert!(folder["tree_size"].parse::<u64>().unwrap() > 400 << 20);
    assert_eq!(csv[1]["tree_size"], "", "a file has no tree totals");
    for (row, line) in csv.iter().zip(&lines[1..]) {
        // Cells are two or more spaces apart; "419.5 MiB" has one.
        let cells: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(cells[0], row["path"], "{table}");
        let want: Vec<String> = cols
            .iter()
            .filter(|c| !row[**c].is_empty())
            .map(|c| uffs_results::human(row[*c].parse().unwrap()))
            .collect();
        assert_eq!(cells[1..], want[..], "{table}");
    }
}

#[test]
fn colour_and_escaping() {
    // Forced colour: folders bold blue, streams cyan, deleted red; NO_COLOR wins over auto only.
    let o = q(&["--color", "always", "docs"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "\x1b[1;34m/Docs\x1b[0m\n"
    );
    let o = uffs()
        .env("NO_COLOR", "1")
        .arg("--index")
        .arg(golden_index())
        .args(["docs"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "/Docs\n");
    // On a terminal, control characters in names are shown escaped (run under `script` for a pty).
    let cmd = format!(
        "{} --index {} --color never esc",
        env!("CARGO_BIN_EXE_uffs"),
        golden_index().display()
    );
    let shown = on_a_terminal(&cmd, |_| {});
    assert!(shown.contains("/weird/esc\\x1b[31mred.txt"), "{shown:?}");
    assert!(!shown.contains("esc\x1b[31m"), "{shown:?}");
    // Piped, names are written as they are.
    assert_eq!(
        String::from_utf8_lossy(&q(&["--color", "never", "esc"]).stdout),
        "/weird/esc\x1b[31mred.txt\n"
    );
}

#[test]
fn exit_codes_and_errors() {
    assert_eq!(q(&["main.rs"]).status.code(), Some(0));
    assert_eq!(q(&["no-such-file"]).status.code(), Some(1));
    let cases: &[(&str, &str)] = &[
        ("size:>10xb", "unknown size unit `xb`"),
        ("a | ", "needs a term on each side"),
        ("\"open", "unterminated quote"),
        ("regex:(", "bad regular expression"),
        ("attrib:q", "unknown attribute letter `q`"),
        ("dm:soon", "expected a date"),
        ("depth:deep", "whole number"),
        ("a !|b", "`!` needs a term after it"),
        ("ext:", "`ext:` needs one or more extensions"),
        ("parent:", "`parent:` needs a folder path"),
        ("dupe:x", "`dupe:` takes no value"),
        ("size:2mb..1mb", "is empty: its start is after its end"),
        ("dm:2024..2023", "is empty: its start is after its end"),
        ("size:<0", "`<0` matches nothing"),
        ("size:1.2.3mb", "expected a number"),
        ("size:99999999999tb", "too large"),
        ("regex:", "`regex:` needs a regular expression"),
        ("case:", "needs a term after it"),
        ("attrib:", "needs attribute letters"),
        ("dm:2024-13", "bad month `13`"),
        ("dm:2024-02-30", "is not a date"),
        (&*"!".repeat(300).leak(), "nests deeper than 200 levels"),
        ("(a | b", "this `(` is never closed"),
        ("(", "this `(` is never closed"),
        (")", "this `)` closes no group"),
        ("ext:exe)", "this `)` closes no group"),
        ("utf8content:quartz", "unknown function `utf8content:`"),
        ("!", "`!` needs a term right after it"),
    ];
    for (query, msg) in cases {
        let o = q(&[query]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{query}: {err}");
        assert!(
            err.starts_with("uffs: error: bad query: ") && err.contains(msg),
            "{query}: {err}"
        );
    }
    // The error shows the query and marks the offending term.
    let err = String::from_utf8_lossy(&q(&["docs size:>10xb"]).stderr).to_string();
    assert!(
        err.contains("\n  docs size:>10xb\n       ^^^^^^^^^^"),
        "{err}"
    );
    // A command's name mistyped is searched for, and the hint names the command (and no -o file is left).
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("typo-out.csv");
    let _ = std::fs::remove_file(&out);
    for (typo, meant) in [
        ("deamon", "daemon"),
        ("exprot", "export"),
        ("indx", "index"),
    ] {
        let o = q(&[typo, "x", "-o", out.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{typo}: {err}");
        assert!(
            err.contains(&format!("did you mean `uffs {meant}`?")),
            "{typo}: {err}"
        );
        assert!(!out.exists(), "{typo}: an empty -o file was left");
    }
    assert!(!String::from_utf8_lossy(&q(&["docs"]).stderr).contains("did you mean"));
    // A word two edits from a command is a word: the README searches for `report`, two from `export`.
    assert!(!String::from_utf8_lossy(&q(&["report", "ext:pdf"]).stderr).contains("did you mean"));
    // Without --index or --source the daemon is asked; with none running, the error says how to start one.
    let runtime = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-daemon-runtime");
    let o = uffs()
        .env("UFFS_RUNTIME_DIR", &runtime)
        .arg("docs")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no uffs daemon is running") && err.contains("uffs daemon start"),
        "{err}"
    );
}

#[test]
fn search_a_source_directly() {
    let out = run_ok(
        uffs()
            .arg("--source")
            .arg(data("windows-xp-mft/MFT"))
            .args(["ext:exe", "skype", "--count"]),
    );
    let n: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(n >= 1);
}

/// On a terminal a table fits the window (its width from `COLUMNS`, else the terminal's size): a long path is
/// shortened in its middle and the other columns stay whole. A pipe gets the whole paths.
#[cfg(unix)]
#[test]
fn a_table_on_a_terminal_fits_its_width() {
    let src = data("windows-xp-mft/MFT");
    let query = format!(
        "{} --source {} system32/drivers --format table --color never --sort path --limit 40 2>/dev/null",
        env!("CARGO_BIN_EXE_uffs"),
        src.display()
    );
    let piped = run_ok(uffs().arg("--source").arg(&src).args([
        "system32/drivers",
        "--format",
        "table",
        "--sort",
        "path",
        "--limit",
        "40",
    ]));
    let piped = String::from_utf8(piped.stdout).unwrap();
    assert!(!piped.contains('…'));
    assert!(piped.lines().any(|l| l.chars().count() > 64), "{piped}");
    for (setup, width) in [
        ("COLUMNS=56 ", 56),
        ("unset COLUMNS; stty cols 50 2>/dev/null; ", 50),
    ] {
        let shown = on_a_terminal(&format!("{setup}{query}"), |c| {
            c.env_remove("COLUMNS");
        });
        let lines: Vec<&str> = shown.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), piped.lines().count(), "{shown}");
        for (l, p) in lines.iter().zip(piped.lines()) {
            assert!(l.chars().count() <= width, "{setup}: {l:?}");
            // The columns after the path are whole: the same as piped.
            fn tail(s: &str) -> Vec<&str> {
                s.split_whitespace().rev().take(4).collect()
            }
            assert_eq!(tail(l), tail(p), "{setup}");
        }
        assert!(lines.iter().any(|l| l.contains('…')), "{shown}");
        assert!(lines[1].starts_with("/WINDO"), "{shown}");
    }
}

/// Messages that leave a newcomer stuck name the way out: an image given as an index, an index given to `info`,
/// a negative count, a Windows path for an index's folder, `du --limit 0`, content dupes of a capture.
#[test]
fn messages_point_the_way() {
    let dir = scratch("query-cli-messages");
    let xp = xp_index(&dir);
    let mft = data("windows-xp-mft/MFT");
    let err = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();

    // A capture given as an index: search it as a source, or index it.
    let o = uffs()
        .arg("--index")
        .arg(&mft)
        .arg("skype")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains(
            "not a uffs index but a volume, disk or $MFT capture: search it with `--source"
        ),
        "{}",
        err(&o)
    );

    // `info` on an index says it is one.
    let o = run_ok(uffs().arg("info").arg(&xp));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("a uffs index file, not a volume") && text.contains("entries       11,842"),
        "{text}"
    );
    let o = run_ok(uffs().arg("info").arg(&xp).arg("--json"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["entries"], 11_842);

    // A negative count is said so, with no tip that leads to another error.
    for args in [&["--limit", "-1"][..], &["--offset", "-5"]] {
        let o = uffs()
            .arg("--index")
            .arg(&xp)
            .arg("skype")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(
            err(&o).contains("is below 0: give a count of 0 or more") && !err(&o).contains("-- -"),
            "{}",
            err(&o)
        );
    }

    // A Windows path for a folder of an index: quoted as given, and the path to try.
    let o = uffs()
        .args(["du", "C:\\Users", "--index"])
        .arg(&xp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains(
            "no folder 'C:\\Users' in the volume (its paths start at its root: try '/Users')"
        ),
        "{}",
        err(&o)
    );

    // `du --limit 0` shows every child, as leaving it out does.
    let du = |extra: &[&str]| {
        let o = run_ok(
            uffs()
                .args(["du", "/WINDOWS", "--index"])
                .arg(&xp)
                .args(extra),
        );
        String::from_utf8_lossy(&o.stdout).lines().count()
    };
    assert!(du(&["--limit", "1"]) < du(&["--limit", "0"]));
    assert_eq!(du(&["--limit", "0"]), du(&[]));

    // Dupes by content need the files' data, which a capture does not hold.
    let o = uffs().args(["dupes", "--index"]).arg(&xp).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("compare with --by size or --by name instead"),
        "{}",
        err(&o)
    );
}

/// Everything's later functions through the binary, on walked folders: diacritics ignored unless `diacritics:`,
/// folders by their children, dupes of name parts, literal wildcards; one index searched alone is `fsi:0` (a disk's
/// partitions are numbered in `fat_volumes.rs`).
#[cfg(target_os = "linux")]
#[test]
fn everythings_functions_over_two_folders() {
    let dir = scratch("everythings_functions");
    let (one, two) = (dir.join("one"), dir.join("two"));
    for d in [
        one.join("Ünïcödé/sub"),
        one.join("Café photos"),
        two.join("été"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    for f in [
        one.join("Ünïcödé/a.jpg"),
        one.join("Ünïcödé/b.jpg"),
        one.join("Ünïcödé/sub/x.txt"),
        one.join("Café photos/x.jpg"),
        one.join("a*b.txt"),
        one.join("ab.txt"),
        two.join("été/Σίσυφος.txt"),
    ] {
        std::fs::write(f, b"x").unwrap();
    }
    let (i1, i2) = (dir.join("one.uffs"), dir.join("two.uffs"));
    run_ok(uffs().arg("index").arg(&one).arg("-o").arg(&i1));
    run_ok(uffs().arg("index").arg(&two).arg("-o").arg(&i2));
    let (one, two) = (one.display().to_string(), two.display().to_string());
    let find = |query: &str| -> Vec<String> {
        let mut v = Vec::new();
        for i in [&i1, &i2] {
            v.extend(
                paths_in(i, query)
                    .into_iter()
                    .map(|l| l.replace(&one, "1").replace(&two, "2")),
            );
        }
        v.sort();
        v
    };
    assert_eq!(find("unicode"), ["1/Ünïcödé"]);
    assert_eq!(find("cafe"), ["1/Café photos"]);
    assert_eq!(find("diacritics:cafe"), Vec::<String>::new());
    assert_eq!(find("diacritics:Café"), ["1/Café photos"]);
    assert_eq!(find("ete\\sisyphos"), Vec::<String>::new());
    assert_eq!(find("ete\\σισυφος"), ["2/été/Σίσυφος.txt"]);
    assert_eq!(find("child:*.jpg"), ["1/Café photos", "1/Ünïcödé"]);
    assert_eq!(find("childfolder:sub"), ["1/Ünïcödé"]);
    assert_eq!(find("childfilecount:2"), ["1/Ünïcödé"]);
    assert_eq!(find("childfoldercount:1 depth:1"), ["1/Ünïcödé"]);
    assert_eq!(
        find("namepartdupe:"),
        ["1/Café photos/x.jpg", "1/Ünïcödé/sub/x.txt"]
    );
    assert_eq!(find("nowildcards:a*b.txt"), ["1/a*b.txt"]);
    assert_eq!(find("a*b.txt"), ["1/a*b.txt", "1/ab.txt"]);
    assert_eq!(find("fsi:1"), Vec::<String>::new());
    assert_eq!(find("fsi:0 endwith:.txt").len(), 4);
    assert_eq!(find("root: fsi:0").len(), 5);
    assert_eq!(find("parents:3"), ["1/Ünïcödé/sub/x.txt"]);
    // A name term is what child: takes; anything else is refused with the parser's caret.
    let out = uffs()
        .arg("--index")
        .arg(&i1)
        .arg("child:ext:jpg")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`child:` takes a name"));
}
