//! `uffs mcp` and `uffs serve`'s `/mcp` against a real MCP client: the official Python SDK
//! (`tests/clients/mcp_client.py`, from the venv `scripts/setup.sh` makes) starts the server, lists its tools,
//! calls each with good and bad arguments; the answers are checked against `uffs QUERY` on the same index. The
//! data terms (`content:`, `type:`) are checked against `rg -l` over an ntfs-3g mount of the same volume, through
//! an index file and through the daemon.

#![cfg(unix)]

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use serde_json::{json, Value};

/// Runs the client on `calls` against `server` (`--stdio UFFS ARGS…` or `--http URL`): the tools line, then
/// one answer per call.
fn client(dir: &Path, calls: &Value, server: &[&str]) -> (Value, Vec<Value>) {
    client_in(dir, calls, server, &[])
}

/// [`client`] with more environment for the client and the server it starts (a daemon's directories).
fn client_in(
    dir: &Path,
    calls: &Value,
    server: &[&str],
    env: &[(&str, &Path)],
) -> (Value, Vec<Value>) {
    let file = dir.join("calls.json");
    std::fs::write(&file, calls.to_string()).unwrap();
    let stdout = client_stdout(
        Command::new(python("the MCP SDK"))
            .arg(repo().join("tests/clients/mcp_client.py"))
            .arg(&file)
            .args(server)
            .envs(env.iter().copied()),
    );
    let mut lines = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let tools = lines.next().expect("the tools line");
    let answers: Vec<Value> = lines.collect();
    assert_eq!(answers.len(), calls.as_array().unwrap().len(), "{stdout}");
    (tools, answers)
}

fn cli_count(idx: &Path, query: &str) -> u64 {
    let out = uffs()
        .args([query, "--count", "--index"])
        .arg(idx)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn ok<'a>(a: &'a Value, what: &str) -> &'a Value {
    assert_eq!(a["is_error"], false, "{what}: {a}");
    &a["structured"]
}

fn err<'a>(a: &'a Value, what: &str) -> &'a str {
    assert_eq!(a["is_error"], true, "{what} should be a tool error: {a}");
    a["text"].as_str().unwrap()
}

#[test]
fn every_tool_answers_as_the_command_line_does() {
    let dir = scratch("mcp-stdio");
    let idx = xp_index(&dir);
    let calls = json!([
        ["search", {"query": "ext:dll", "sort": "size", "descending": true, "limit": 20, "columns": ["path", "size"]}],
        ["search", {"query": "ext:dll", "sort": "name", "limit": 10, "offset": 5}],
        ["search", {"query": "*", "limit": 5000}],
        ["search", {"query": "*"}],
        ["count", {"query": "ext:dll"}],
        ["facets", {"group": "ext", "top": 5}],
        ["facets", {"group": "totals", "query": "ext:exe"}],
        ["facets", {"group": "year", "query": "ext:dll"}],
        ["volumes", {}],
        ["query_syntax", {}],
        // Bad arguments: tool errors, and the server goes on.
        ["search", {"query": "size:>zz"}],
        ["search", {"query": 5}],
        ["search", {}],
        ["facets", {"group": "colour"}],
        ["search", {"query": "a", "columns": ["nope"]}],
        ["search", {"query": "a", "volumes": ["Z"]}],
        ["delete_everything", {}],
        ["count", {"query": "kernel32.dll"}],
    ]);
    let uffs_bin = env!("CARGO_BIN_EXE_uffs");
    let (tools, a) = client(
        &dir,
        &calls,
        &["--stdio", uffs_bin, "mcp", "--index", path_str(&idx)],
    );

    // The tools, each described with a schema an assistant can act on.
    assert_eq!(tools["server"], "uffs");
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "count",
            "facets",
            "grep",
            "query_syntax",
            "search",
            "volumes"
        ]
    );
    for t in tools["tools"].as_array().unwrap() {
        assert!(t["description"].as_str().unwrap().len() > 40, "{t}");
        assert_eq!(t["input_schema"]["type"], "object", "{t}");
    }
    let search = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search")
        .unwrap();
    assert_eq!(search["input_schema"]["required"], json!(["query"]));

    // search: the same rows as the command line.
    let r = ok(&a[0], "search by size");
    let want = cli_rows(
        &idx,
        &[
            "ext:dll",
            "--sort",
            "size",
            "--reverse",
            "--limit",
            "20",
            "--columns",
            "path,size",
        ],
    );
    assert_eq!(r["rows"], json!(want));
    assert_eq!(r["found"], cli_count(&idx, "ext:dll"));
    assert_eq!(r["returned"], 20);
    assert_eq!(r["truncated"], true);
    let r = ok(&a[1], "search with offset");
    let want = cli_rows(
        &idx,
        &[
            "ext:dll",
            "--sort",
            "name",
            "--limit",
            "10",
            "--offset",
            "5",
            "--columns",
            "path,size,modified,kind",
        ],
    );
    assert_eq!(r["rows"], json!(want));
    assert_eq!(r["offset"], 5);
    // Bounded: more than the maximum is cut, and says so; no limit gives the default.
    let r = ok(&a[2], "search above the maximum");
    assert_eq!(r["returned"], 1000);
    assert_eq!(r["truncated"], true);
    assert!(r["note"].as_str().unwrap().contains("1000"), "{r}");
    let r = ok(&a[3], "search with the default limit");
    assert_eq!(r["returned"], 50);
    assert!(r.get("note").is_none(), "{r}");

    assert_eq!(ok(&a[4], "count")["found"], cli_count(&idx, "ext:dll"));
    let r = ok(&a[5], "facets ext");
    assert_eq!(
        r["rows"],
        json!(cli_rows(&idx, &["*", "--facet", "ext", "--top", "5"]))
    );
    let r = ok(&a[6], "totals");
    assert_eq!(r["rows"], json!(cli_rows(&idx, &["ext:exe", "--stats"])));
    assert_eq!(r["found"], cli_count(&idx, "ext:exe"));
    let r = ok(&a[7], "facets year");
    assert_eq!(
        r["rows"],
        json!(cli_rows(&idx, &["ext:dll", "--facet", "year"]))
    );
    let r = ok(&a[8], "volumes");
    assert_eq!(r["volumes"][0]["name"], "xp");
    assert_eq!(r["volumes"][0]["state"], "ready");
    assert!(
        a[9]["text"].as_str().unwrap().contains("QUERY SYNTAX"),
        "{}",
        a[9]
    );

    // A bad query points at the term.
    let t = err(&a[10], "a bad size");
    assert!(t.contains("size:>zz") && t.contains('^'), "{t}");
    err(&a[11], "a number for the query");
    err(&a[12], "no query");
    err(&a[13], "an unknown group");
    assert!(err(&a[14], "an unknown column").contains("unknown column"));
    assert!(err(&a[15], "an unknown volume").contains("no volume named"));
    // An unknown tool is refused (as a tool error or a protocol error), and the server answers after it.
    assert!(
        a[16]["is_error"] == true || a[16].get("exception").is_some(),
        "{}",
        a[16]
    );
    assert_eq!(ok(&a[17], "count after errors")["found"], 1);
}

#[test]
fn through_the_daemon_with_a_volume_filter() {
    use common::daemon::World;
    let w = World::new("mcp");
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    let t = w.copy("linux-made/testfs1", "testfs1");
    w.ok(&["volumes", "add", &xp, "--name", "C"]);
    w.ok(&["volumes", "add", &t, "--name", "T"]);
    let ask = |calls: &Value| -> Vec<Value> {
        // The client's environment is the world's, so `uffs mcp` finds this test's daemon.
        let file = w.dir.join("calls.json");
        std::fs::write(&file, calls.to_string()).unwrap();
        client_stdout(
            Command::new(python("the MCP SDK"))
                .arg(repo().join("tests/clients/mcp_client.py"))
                .arg(&file)
                .args(["--stdio", env!("CARGO_BIN_EXE_uffs"), "mcp"])
                .env("UFFS_CACHE_DIR", &w.cache)
                .env("UFFS_RUNTIME_DIR", &w.runtime),
        )
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
    };
    // No daemon yet: a tool error that says how to start one (the server itself starts and lists its tools).
    let a = ask(&json!([["count", {"query": "*"}]]));
    assert!(err(&a[0], "no daemon").contains("uffs daemon start"));
    w.start();
    w.wait_ready(60);
    let calls = json!([
        ["count", {"query": "*"}],
        ["count", {"query": "*", "volumes": ["T"]}],
        ["search", {"query": "*", "volumes": ["t"], "sort": "path", "limit": 3, "columns": ["path"]}],
        ["search", {"query": "kernel32.dll", "columns": ["path", "size"]}],
        ["volumes", {}],
    ]);
    let a = ask(&calls);
    let all: u64 = w.ok(&["*", "--count"]).trim().parse().unwrap();
    let only_t: u64 = w
        .ok(&["*", "--count", "--volume", "T"])
        .trim()
        .parse()
        .unwrap();
    assert!(only_t > 0 && only_t < all);
    assert_eq!(ok(&a[0], "count all")["found"], all);
    assert_eq!(ok(&a[1], "count T")["found"], only_t);
    let r = ok(&a[2], "search T");
    for row in r["rows"].as_array().unwrap() {
        assert!(row["path"].as_str().unwrap().starts_with("T:"), "{row}");
    }
    assert_eq!(r["found"], only_t);
    let r = ok(&a[3], "kernel32");
    assert_eq!(r["rows"][0]["path"], "C:/WINDOWS/system32/kernel32.dll");
    let r = ok(&a[4], "volumes");
    let names: Vec<&str> = r["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["C", "T"]);
}

/// `uffs serve` offers the same tools over streamable HTTP at `/mcp`, behind its token.
#[test]
fn over_http_behind_the_token() {
    let dir = scratch("mcp-http");
    let idx = xp_index(&dir);
    let mut child = uffs()
        .args(["serve", "--bind", "127.0.0.1:0", "--index", path_str(&idx)])
        .env("UFFS_RUNTIME_DIR", dir.join("run"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let url = url.trim().to_string();
    let calls = json!([
        ["search", {"query": "kernel32.dll", "columns": ["path", "size"]}],
        ["search", {"query": "size:>zz"}],
    ]);
    let (tools, a) = client(&dir, &calls, &["--http", &url]);
    assert_eq!(tools["tools"].as_array().unwrap().len(), 6);
    let r = ok(&a[0], "search over HTTP");
    assert_eq!(
        r["rows"],
        json!(cli_rows(&idx, &["kernel32.dll", "--columns", "path,size"]))
    );
    assert!(err(&a[1], "a bad query over HTTP").contains('^'));
    // Without the token: refused before the MCP service sees it.
    let port = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.split_once('/'))
        .unwrap()
        .0;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let mut s = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    let _ = child.kill();
    let _ = child.wait();
}

/// The paths of a search's rows (`columns: ["path"]`), checked to be all the matches.
fn row_paths(a: &Value, what: &str) -> BTreeSet<String> {
    let r = ok(a, what);
    assert_eq!(r["truncated"], false, "{what}: {r}");
    assert_eq!(r["found"], r["returned"], "{what}: {r}");
    r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["path"].as_str().unwrap().to_string())
        .collect()
}

/// The paths `uffs QUERY --index FILE` prints.
fn cli_paths(idx: &Path, query: &str) -> BTreeSet<String> {
    cli_rows(idx, &[query, "--columns", "path"])
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect()
}

/// The content fixture copied to `dir` (a mount may write to it) and the files `rg -l` lists in it for each
/// `content:` query of [`CONTENT_QUERIES`].
fn content_volume(dir: &Path) -> (PathBuf, Vec<BTreeSet<String>>) {
    let img = dir.join("content.img");
    run_ok(
        tool("cp")
            .arg("--sparse=always")
            .arg(fixture("content.img"))
            .arg(&img),
    );
    let m = common::live::Mounted::new(&img, &dir.join("mnt"));
    let rg = CONTENT_QUERIES
        .iter()
        .map(|(_, rg)| common::live::rg_files(&m.dir, rg))
        .collect();
    drop(m);
    (img, rg)
}

/// `content:` queries and the `rg` flags that list the same files.
const CONTENT_QUERIES: [(&str, &[&str]); 3] = [
    ("content:resident", &["-i", "-F", "resident"]),
    ("regex:content:res[a-z]+t", &["-i", "res[a-z]+t"]),
    ("case:ww:content:data", &["-w", "-F", "data"]),
];

/// Calls of `search` for each of [`CONTENT_QUERIES`] (all rows, paths only), `type:` queries, a data term
/// beside others with a sort, a count, and bad data terms.
fn data_term_calls() -> Value {
    let mut calls: Vec<Value> = CONTENT_QUERIES
        .iter()
        .map(|(q, _)| json!(["search", {"query": q, "columns": ["path"], "limit": 1000}]))
        .collect();
    calls.extend([
        json!(["search", {"query": "type:text", "columns": ["path"], "limit": 1000}]),
        json!(["search", {"query": "type:mismatch", "columns": ["path"], "limit": 1000}]),
        json!(["search", {"query": "ext:txt content:the", "sort": "size", "descending": true, "columns": ["path", "size"]}]),
        json!(["count", {"query": "content:resident"}]),
        json!(["search", {"query": "regex:content:("}]),
        json!(["search", {"query": "a | content:x"}]),
        json!(["search", {"query": "type:nonsense"}]),
        json!(["count", {"query": "hash:1234"}]),
        json!(["grep", {"pattern": "resident", "query": "ext:txt"}]),
    ]);
    json!(calls)
}

/// Checks the answers to the bad data terms of [`data_term_calls`] (from `first` on): tool errors that point
/// at the term.
fn check_bad_data_terms(a: &[Value], first: usize, via: &str) {
    let t = err(&a[first], &format!("{via}: a bad regex in content:"));
    assert!(
        t.contains("regex:content:(") && t.contains('^'),
        "{via}: {t}"
    );
    let t = err(&a[first + 1], &format!("{via}: content: inside OR"));
    assert!(
        t.contains("beside the rest") && t.contains('^'),
        "{via}: {t}"
    );
    let t = err(&a[first + 2], &format!("{via}: an unknown type"));
    assert!(t.contains("unknown type") && t.contains('^'), "{via}: {t}");
    let t = err(&a[first + 3], &format!("{via}: a short hash"));
    assert!(t.contains("hash:1234") && t.contains('^'), "{via}: {t}");
}

/// `content:` and `type:` through `uffs mcp --index FILE` (the server opens the volume the index was built
/// from) and through the daemon: the files `rg -l` lists over a mount of the volume, and the command line's
/// rows; a bad data term is a tool error pointing at it.
#[test]
fn data_terms_find_what_rg_finds() {
    let dir = scratch("mcp-content");
    let (img, rg) = content_volume(&dir);
    let idx = dir.join("content.uffs");
    run_ok(uffs().arg("index").arg(&img).arg("-o").arg(&idx));
    let calls = data_term_calls();
    let n = CONTENT_QUERIES.len();

    let (_, a) = client(
        &dir,
        &calls,
        &[
            "--stdio",
            env!("CARGO_BIN_EXE_uffs"),
            "mcp",
            "--index",
            path_str(&idx),
        ],
    );
    for (i, (q, _)) in CONTENT_QUERIES.iter().enumerate() {
        let ours = row_paths(&a[i], q);
        assert_eq!(ours, rg[i], "{q}");
        assert!(
            !ours.is_empty(),
            "{q} found nothing: a test that cannot fail"
        );
        assert_eq!(ours, cli_paths(&idx, q), "{q}");
    }
    for (i, q) in [(n, "type:text"), (n + 1, "type:mismatch")] {
        assert_eq!(row_paths(&a[i], q), cli_paths(&idx, q), "{q}");
    }
    assert!(row_paths(&a[n], "type:text").contains("/plain/resident.txt"));
    let r = ok(&a[n + 2], "a data term beside others, sorted");
    let want = cli_rows(
        &idx,
        &[
            "ext:txt content:the",
            "--sort",
            "size",
            "--reverse",
            "--limit",
            "50",
            "--columns",
            "path,size",
        ],
    );
    assert!(!want.is_empty());
    assert_eq!(r["rows"], json!(want));
    assert_eq!(ok(&a[n + 3], "count")["found"], rg[0].len());
    check_bad_data_terms(&a, n + 4, "--index");
    assert_eq!(
        grep_lines(&a[n + 8], "grep"),
        cli_grep(&idx, &["resident", "ext:txt"])
    );

    // The daemon reads the volume from the source it registered: its paths are `D:\...`.
    let w = common::daemon::World::new("mcp-content");
    w.ok(&["volumes", "add", path_str(&img), "--name", "D"]);
    w.start();
    w.wait_ready(60);
    let (_, a) = client_in(
        &w.dir,
        &calls,
        &["--stdio", env!("CARGO_BIN_EXE_uffs"), "mcp"],
        &[
            ("UFFS_CACHE_DIR", &w.cache),
            ("UFFS_RUNTIME_DIR", &w.runtime),
        ],
    );
    let unix = |paths: BTreeSet<String>| -> BTreeSet<String> {
        paths.into_iter().map(|p| p.replacen("D:", "", 1)).collect()
    };
    for (i, (q, _)) in CONTENT_QUERIES.iter().enumerate() {
        assert_eq!(unix(row_paths(&a[i], q)), rg[i], "daemon: {q}");
    }
    for (i, q) in [(n, "type:text"), (n + 1, "type:mismatch")] {
        assert_eq!(unix(row_paths(&a[i], q)), cli_paths(&idx, q), "daemon: {q}");
    }
    let r = ok(&a[n + 2], "daemon: a data term beside others, sorted");
    let daemon_rows: Vec<Value> = String::from_utf8(
        run_ok(w.uffs().args([
            "ext:txt content:the",
            "--sort",
            "size",
            "--reverse",
            "--limit",
            "50",
            "--columns",
            "path,size",
            "--format",
            "jsonl",
        ]))
        .stdout,
    )
    .unwrap()
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    assert_eq!(r["rows"], json!(daemon_rows));
    assert_eq!(r["rows"].as_array().unwrap().len(), want.len());
    assert_eq!(ok(&a[n + 3], "daemon: count")["found"], rg[0].len());
    check_bad_data_terms(&a, n + 4, "daemon");
    // grep through the daemon reads the daemon's volume: what `uffs grep` prints there, paths `D:\...`.
    let mut daemon_grep: Vec<String> =
        String::from_utf8(run_ok(w.uffs().args(["grep", "resident", "ext:txt"])).stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
    daemon_grep.sort();
    let ours = grep_lines(&a[n + 8], "daemon: grep");
    assert_eq!(ours, daemon_grep);
    let as_unix: Vec<String> = ours
        .iter()
        .map(|l| {
            let (path, rest) = l.split_once(':').unwrap().1.split_once(':').unwrap();
            format!("{}:{rest}", path.replace('\\', "/"))
        })
        .collect();
    assert_eq!(as_unix, cli_grep(&idx, &["resident", "ext:txt"]));
    drop(w);
    std::fs::remove_dir_all(&dir).ok();
}

/// What `uffs grep ARGS --index FILE` prints, line by line, sorted (it prints files in the order they finish).
fn cli_grep(idx: &Path, args: &[&str]) -> Vec<String> {
    let out = uffs()
        .arg("grep")
        .args(args)
        .arg("--index")
        .arg(idx)
        .output()
        .unwrap();
    assert!(
        out.status.code() == Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// A `grep` answer's lines as `uffs grep` prints them (`PATH:LINE:TEXT`, and its notes on binary files), sorted;
/// checked to be all of them.
fn grep_lines(a: &Value, what: &str) -> Vec<String> {
    let r = ok(a, what);
    assert_eq!(r["truncated"], false, "{what}: {}", r["note"]);
    assert_eq!(r["returned"], r["lines_matched"], "{what}");
    let mut lines = in_order(r);
    lines.extend(
        r.get("binary")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|n| n.as_str().unwrap().to_string()),
    );
    lines.sort();
    lines
}

/// A `grep` answer's lines as `PATH:LINE:TEXT`, in its order.
fn in_order(r: &Value) -> Vec<String> {
    r["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            format!(
                "{}:{}:{}",
                l["path"].as_str().unwrap(),
                l["line"],
                l["text"].as_str().unwrap()
            )
        })
        .collect()
}

/// The `grep` tool against `uffs grep` on the same index: the same lines for `-i`, `-w -F`, a regex, a query
/// that narrows the files; bounded, the first lines in the query's order with the number of all and a note that
/// says they were cut, and what rg says of a binary file; bad patterns and queries are tool errors.
#[test]
fn grep_answers_as_uffs_grep() {
    let dir = scratch("mcp-grep");
    let idx = index_into(&fixture("content.img"), &dir.join("content.uffs"));
    let text_files = "!text-1MiB !mixed !holes";
    let calls = json!([
        ["grep", {"pattern": "THE", "query": text_files, "ignore_case": true}],
        ["grep", {"pattern": "resident data", "fixed_strings": true, "word": true}],
        ["grep", {"pattern": "^res[a-z]+ d", "query": "plain/"}],
        ["grep", {"pattern": "fox", "query": "ext:txt"}],
        ["grep", {"pattern": "fox", "query": "ext:txt", "max_lines": 5000}],
        ["grep", {"pattern": "THE", "query": "holes.bin", "ignore_case": true, "max_lines": 1000}],
        ["grep", {"pattern": "no such text anywhere"}],
        ["grep", {"pattern": "("}],
        ["grep", {"pattern": "x", "query": "size:>zz"}],
        ["grep", {"query": "ext:txt"}],
    ]);
    let (tools, a) = client(
        &dir,
        &calls,
        &[
            "--stdio",
            env!("CARGO_BIN_EXE_uffs"),
            "mcp",
            "--index",
            path_str(&idx),
        ],
    );
    let grep = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "grep")
        .expect("a grep tool");
    assert_eq!(grep["input_schema"]["required"], json!(["pattern"]));

    let got = grep_lines(&a[0], "-i, narrowed");
    assert!(got.len() > 80, "{got:?}");
    assert_eq!(got, cli_grep(&idx, &["-i", "THE", text_files]));
    assert_eq!(
        grep_lines(&a[1], "-w -F"),
        cli_grep(&idx, &["-w", "-F", "resident data"])
    );
    assert_eq!(
        grep_lines(&a[2], "a regex"),
        cli_grep(&idx, &["^res[a-z]+ d", "plain/"])
    );

    // Bounded: the first 100 lines in the query's order (its files in index order, each file's lines in
    // order), all of them counted, and said to be cut.
    let r = ok(&a[3], "truncated");
    let all = cli_grep(&idx, &["fox", "ext:txt"]);
    let files: Vec<String> = cli_rows(&idx, &["ext:txt", "--columns", "path"])
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();
    let mut first = Vec::new();
    for path in &files {
        first.extend(lines_of(&all, path));
    }
    assert_eq!(r["lines_matched"], first.len());
    assert_eq!(
        r["files_matched"],
        cli_grep(&idx, &["-l", "fox", "ext:txt"]).len()
    );
    assert_eq!(r["returned"], 100);
    assert_eq!(r["truncated"], true);
    let note = r["note"].as_str().unwrap();
    assert!(note.contains(&format!("100 of {}", first.len())), "{note}");
    first.truncate(100);
    assert_eq!(in_order(r), first);
    let r = ok(&a[4], "above the maximum");
    assert_eq!(r["returned"], 1000);
    assert!(
        r["note"].as_str().unwrap().contains("at most 1000"),
        "{}",
        r["note"]
    );

    // A binary file: the lines before its first NUL, and rg's note.
    let r = ok(&a[5], "a binary file");
    let cli = cli_grep(&idx, &["-i", "THE", "holes.bin"]);
    let numbered = lines_of(&cli, "/compressed/holes.bin");
    assert!(numbered.len() > 1000);
    assert_eq!(r["lines_matched"], numbered.len());
    assert_eq!(in_order(r), numbered[..1000]);
    let notes: Vec<&String> = cli.iter().filter(|l| l.contains("binary file")).collect();
    assert_eq!(notes.len(), 1);
    assert_eq!(r["binary"], json!(notes));

    let r = ok(&a[6], "nothing matches");
    assert_eq!(r["lines_matched"], 0);
    assert_eq!(r["returned"], 0);
    assert!(r["files"].as_u64().unwrap() > 10, "{}", r["files"]);
    assert!(err(&a[7], "a bad pattern").contains("bad pattern"));
    let t = err(&a[8], "a bad query");
    assert!(t.contains("size:>zz") && t.contains('^'), "{t}");
    err(&a[9], "no pattern");
    std::fs::remove_dir_all(&dir).ok();
}

/// The numbered lines of `path` in `uffs grep`'s output, in the file's order.
fn lines_of(output: &[String], path: &str) -> Vec<String> {
    let mut of_file: Vec<(u64, &String)> = output
        .iter()
        .filter_map(|l| {
            let (n, _) = l.strip_prefix(&format!("{path}:"))?.split_once(':')?;
            Some((n.parse().ok()?, l))
        })
        .collect();
    of_file.sort();
    of_file.into_iter().map(|(_, l)| l.clone()).collect()
}

/// `uffs mcp --source` takes a container as it takes the raw image it holds: the content volume as an E01 set of
/// small deflated segments answers every call (names, a data term read through the container, a count, grep)
/// exactly as the raw image does.
#[test]
fn a_container_answers_as_its_raw_image() {
    let dir = scratch("mcp-container");
    let raw = fixture("content.img");
    let (e01, _) = common::containers::acquire(&raw, &dir.join("ewf"), "c", "1MiB", "deflate:fast");
    let calls = json!([
        ["search", {"query": "ext:txt", "columns": ["path", "size"], "limit": 1000}],
        ["search", {"query": "content:resident", "columns": ["path"], "limit": 1000}],
        ["count", {"query": "*"}],
        ["grep", {"pattern": "resident", "query": "ext:txt"}],
    ]);
    let answers = |source: &Path| {
        client(
            &dir,
            &calls,
            &[
                "--stdio",
                env!("CARGO_BIN_EXE_uffs"),
                "mcp",
                "--source",
                path_str(source),
            ],
        )
        .1
    };
    let want = answers(&raw);
    assert!(
        !row_paths(&want[1], "content:resident").is_empty(),
        "content:resident found nothing: a test that cannot fail"
    );
    assert_eq!(answers(&e01), want);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `uffs mcp --source` on a FAT32 and an exFAT volume made by the real tools (mkfs.vfat + mtools, mkfs.exfat +
/// exfat-fuse): names, an 8.3 alias, a data term, a count and grep answer as the command line does on an index of
/// the same volume, and grep finds the line that is there.
#[test]
fn fat_and_exfat_sources_answer_as_the_command_line() {
    use common::fatvol::{build, Tmp};
    let t = Tmp::new("mcp");
    for kind in ["FAT32", "exFAT"] {
        let Some(img) = build(&t, kind) else {
            continue;
        };
        let idx = t.path(&format!("{kind}.uffs"));
        run_ok(uffs().args(["index", path_str(&img), "-o", path_str(&idx)]));
        let calls = json!([
            ["search", {"query": "ext:txt", "columns": ["path"], "limit": 1000}],
            ["search", {"query": "content:zebrafish", "columns": ["path"], "limit": 1000}],
            ["count", {"query": "*"}],
            ["search", {"query": "alongf~1.txt", "columns": ["path"], "limit": 1000}],
            ["grep", {"pattern": "zebrafish"}],
        ]);
        let server = [
            "--stdio",
            env!("CARGO_BIN_EXE_uffs"),
            "mcp",
            "--source",
            path_str(&img),
        ];
        let (_, a) = client(&t.0, &calls, &server);
        let txt = row_paths(&a[0], "ext:txt");
        assert!(txt.len() > 5, "{kind}: {txt:?}");
        assert_eq!(txt, cli_paths(&idx, "ext:txt"), "{kind}");
        let needle = BTreeSet::from(["/deep/level1/needle.txt".to_string()]);
        assert_eq!(row_paths(&a[1], "content:zebrafish"), needle, "{kind}");
        assert_eq!(cli_paths(&idx, "content:zebrafish"), needle, "{kind}");
        assert_eq!(
            ok(&a[2], "count")["found"].as_u64(),
            Some(cli_count(&idx, "*")),
            "{kind}: {}",
            a[2]
        );
        // mtools gives the long name an 8.3 alias; exFAT keeps none.
        let alias = row_paths(&a[3], "alias");
        assert_eq!(alias, cli_paths(&idx, "alongf~1.txt"), "{kind}");
        let want: BTreeSet<String> = match kind {
            "FAT32" => BTreeSet::from(["/A long file name with spaces.txt".to_string()]),
            _ => BTreeSet::new(),
        };
        assert_eq!(alias, want, "{kind}");
        let lines = grep_lines(&a[4], "grep");
        assert_eq!(
            lines,
            ["/deep/level1/needle.txt:2:the zebrafish swims here"],
            "{kind}"
        );
    }
}
