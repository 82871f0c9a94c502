//! One search, every front end. The same requests asked through the command line (on an index file, and through
//! the daemon), the daemon's protocol straight on its socket, the HTTP API (`uffs serve` answering from the
//! daemon, and from the index file) and MCP (`uffs mcp` on stdio, from both) must give the same rows, counts,
//! groups, totals and folder sizes, and refuse the same bad query. They all build one `uffs_search::SearchRequest`
//! and run it with `uffs_search::run`; this test holds them to it.
//!
//! The daemon names its volume `C`, so its paths are `C:\WINDOWS\…` where an index file's are `/WINDOWS/…`; rows
//! are compared with that prefix taken off.

#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use common::daemon::World;
use common::*;
use serde_json::{json, Value};

/// A path of the daemon's volume `C` as the index file's paths are written.
fn unprefixed(v: &Value) -> Value {
    match v {
        Value::String(s) => match s.strip_prefix("C:") {
            Some(rest) => {
                let p = rest.replace('\\', "/");
                Value::String(if p.is_empty() { "/".into() } else { p })
            }
            None => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(unprefixed).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), unprefixed(v))).collect())
        }
        _ => v.clone(),
    }
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// `uffs ARGS` in `cmd`'s environment: (exit code, stdout, stderr).
fn cli(mut cmd: Command, args: &[&str]) -> (i32, String, String) {
    let out = cmd.args(args).output().expect("run uffs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The daemon's protocol on its socket: one request, the answer's `out` lines joined and its last line.
fn daemon_ask(w: &World, request: &Value) -> (String, Value) {
    let mut s = UnixStream::connect(w.runtime.join("daemon.sock")).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let line = json!({"op": "query", "request": request}).to_string() + "\n";
    s.write_all(line.as_bytes()).unwrap();
    let mut out = String::new();
    for l in BufReader::new(s).lines() {
        let v: Value = serde_json::from_str(&l.unwrap()).unwrap();
        match v.get("out") {
            Some(o) => out += o.as_str().unwrap(),
            None => return (out, v),
        }
    }
    panic!("the daemon ended its answer without a last line");
}

/// A running `uffs serve`, killed when dropped.
struct Http {
    child: Child,
    port: u16,
    token: String,
}

impl Http {
    fn start(mut cmd: Command, args: &[&str]) -> Http {
        let mut child = cmd
            .arg("serve")
            .args(args)
            .args(["--bind", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start uffs serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let rest = line
            .trim()
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("uffs serve printed {line:?}"));
        let (port, token) = rest.split_once("/?token=").unwrap();
        Http {
            child,
            port: port.parse().unwrap(),
            token: token.into(),
        }
    }

    /// GET `path`: (status, body as JSON).
    fn get(&self, path: &str) -> (u16, Value) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            self.port, self.token
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let status = text.split(' ').nth(1).unwrap().parse().unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1;
        (status, serde_json::from_str(body).unwrap())
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `uffs mcp` on stdio, spoken to as JSON-RPC lines (initialized once).
struct Mcp {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    id: u64,
}

impl Mcp {
    fn start(mut cmd: Command, args: &[&str]) -> Mcp {
        let mut child = cmd
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start uffs mcp");
        let mut m = Mcp {
            input: child.stdin.take().unwrap(),
            output: BufReader::new(child.stdout.take().unwrap()),
            child,
            id: 0,
        };
        m.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "front_ends", "version": "1"}}),
        );
        m.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.input, "{v}").unwrap();
        self.input.flush().unwrap();
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "uffs mcp ended"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v["result"].clone();
            }
        }
    }

    /// A tool's structured result, or its error text.
    fn tool(&mut self, name: &str, args: Value) -> Result<Value, String> {
        let r = self.call("tools/call", json!({"name": name, "arguments": args}));
        if r["isError"] == true {
            return Err(r["content"][0]["text"].as_str().unwrap_or("").to_string());
        }
        Ok(r["structuredContent"].clone())
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Everything one test needs: the index file, the daemon with the same volume, and a server and an MCP server
/// answering from each.
struct Fronts {
    w: World,
    idx: std::path::PathBuf,
    http: [Http; 2],
    mcp: [Mcp; 2],
}

impl Fronts {
    fn new() -> Fronts {
        let w = World::new("front-ends");
        let idx = xp_index(&w.dir);
        let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
        w.ok(&["volumes", "add", &xp, "--name", "C"]);
        w.start();
        w.wait_ready(60);
        let i = path_str(&idx).to_string();
        let http = [
            Http::start(w.uffs(), &["--index", &i]),
            Http::start(w.uffs(), &[]),
        ];
        let mcp = [
            Mcp::start(w.uffs(), &["--index", &i]),
            Mcp::start(w.uffs(), &[]),
        ];
        Fronts { w, idx, http, mcp }
    }

    /// `uffs ARGS` on the index file and through the daemon: both outputs (exit 0 or 1).
    fn cli_both(&self, args: &[&str]) -> [String; 2] {
        let mut on_index = args.to_vec();
        let i = path_str(&self.idx);
        on_index.extend(["--index", i]);
        [on_index.as_slice(), args].map(|a| {
            let (code, out, err) = cli(self.w.uffs(), a);
            assert!(code < 2, "uffs {a:?}: {err}");
            out
        })
    }
}

impl Drop for Fronts {
    fn drop(&mut self) {
        let _ = self.w.run(&["daemon", "stop"]);
    }
}

/// Every version of one answer equal to the first; `what` names each.
fn all_equal(case: &str, answers: &[(&str, Value)]) {
    let (first, want) = &answers[0];
    for (name, got) in &answers[1..] {
        assert_eq!(
            unprefixed(got),
            unprefixed(want),
            "{case}: {name} differs from {first}"
        );
    }
}

#[test]
fn every_front_end_gives_the_same_answer_to_the_same_request() {
    let mut f = Fronts::new();

    // Rows: query, sort, order, paging and columns, as each front end names them.
    struct Rows {
        query: &'static str,
        sort: Option<&'static str>,
        reverse: bool,
        offset: usize,
        limit: usize,
    }
    let rows = [
        Rows {
            query: "ext:dll",
            sort: Some("size"),
            reverse: true,
            offset: 5,
            limit: 20,
        },
        Rows {
            query: "system32/drivers",
            sort: Some("path"),
            reverse: false,
            offset: 0,
            limit: 7,
        },
        Rows {
            query: "kernel32",
            sort: None,
            reverse: false,
            offset: 0,
            limit: 100,
        },
        Rows {
            query: "*.txt size:>1kb",
            sort: Some("modified"),
            reverse: true,
            offset: 3,
            limit: 30,
        },
        Rows {
            query: "folder: windows",
            sort: Some("treesize"),
            reverse: true,
            offset: 0,
            limit: 10,
        },
    ];
    let columns = "path,name,size,modified,kind,tree_size";
    for r in &rows {
        let case = format!("{} sort {:?}", r.query, r.sort);
        let (limit, offset) = (r.limit.to_string(), r.offset.to_string());
        let mut args = vec![
            r.query,
            "--format",
            "jsonl",
            "--columns",
            columns,
            "--limit",
            &limit,
            "--offset",
            &offset,
        ];
        if let Some(s) = r.sort {
            args.extend(["--sort", s]);
        }
        if r.reverse {
            args.push("--reverse");
        }
        let [on_index, via_daemon] = f.cli_both(&args);
        let mut request = json!({"query": r.query, "limit": r.limit, "offset": r.offset, "reverse": r.reverse,
            "output": {"format": "jsonl", "columns": columns.split(',').collect::<Vec<_>>()}});
        if let Some(s) = r.sort {
            request["sort"] = json!(s);
        }
        let (socket, done) = daemon_ask(&f.w, &request);
        let mut http_path = format!(
            "/api/search?q={}&columns={columns}&limit={}&offset={}&reverse={}",
            enc(r.query),
            r.limit,
            r.offset,
            r.reverse
        );
        if let Some(s) = r.sort {
            http_path += &format!("&sort={s}");
        }
        let mut mcp_args = json!({"query": r.query, "limit": r.limit, "offset": r.offset,
            "descending": r.reverse, "columns": columns.split(',').collect::<Vec<_>>()});
        if let Some(s) = r.sort {
            mcp_args["sort"] = json!(s);
        }
        let mut answers = vec![
            ("cli --index", json!(json_lines(&on_index))),
            ("cli via the daemon", json!(json_lines(&via_daemon))),
            ("daemon socket", json!(json_lines(&socket))),
        ];
        let mut found = vec![("daemon socket", done["done"]["found"].clone())];
        for (h, name) in f.http.iter().zip(["http --index", "http via the daemon"]) {
            let (status, v) = h.get(&http_path);
            assert_eq!(status, 200, "{case}: {name}: {v}");
            answers.push((name, v["rows"].clone()));
            found.push((name, v["found"].clone()));
        }
        for (m, name) in f.mcp.iter_mut().zip(["mcp --index", "mcp via the daemon"]) {
            let v = m.tool("search", mcp_args.clone()).unwrap();
            answers.push((name, v["rows"].clone()));
            found.push((name, v["found"].clone()));
        }
        assert!(
            !answers[0].1.as_array().unwrap().is_empty(),
            "{case}: no rows"
        );
        all_equal(&case, &answers);
        all_equal(&case, &found);
    }

    // Counts.
    for q in ["ext:exe size:>1mb", "kernel32", "nothing-is-called-this"] {
        let [on_index, via_daemon] = f.cli_both(&[q, "--count"]);
        let (_, done) = daemon_ask(&f.w, &json!({"query": q, "count": true}));
        let mut answers = vec![
            (
                "cli --index",
                json!(on_index.trim().parse::<u64>().unwrap()),
            ),
            (
                "cli via the daemon",
                json!(via_daemon.trim().parse::<u64>().unwrap()),
            ),
            ("daemon socket", done["done"]["found"].clone()),
        ];
        for (h, name) in f.http.iter().zip(["http --index", "http via the daemon"]) {
            answers.push((
                name,
                h.get(&format!("/api/count?q={}", enc(q))).1["count"].clone(),
            ));
        }
        for (m, name) in f.mcp.iter_mut().zip(["mcp --index", "mcp via the daemon"]) {
            answers.push((
                name,
                m.tool("count", json!({"query": q})).unwrap()["found"].clone(),
            ));
        }
        all_equal(&format!("count {q}"), &answers);
    }

    // Groups and totals (the HTTP API has none).
    for (group, cli_args) in [
        ("ext", &["--facet", "ext", "--top", "5"][..]),
        ("year", &["--facet", "year"][..]),
        ("size_bucket", &["--facet", "size-bucket"][..]),
        ("totals", &["--stats"][..]),
    ] {
        let q = "ext:dll | ext:exe";
        let mut args = vec![q, "--format", "jsonl"];
        args.extend(cli_args);
        let [on_index, via_daemon] = f.cli_both(&args);
        let mut request = json!({"query": q, "facet": group, "output": {"format": "jsonl"}});
        let mut mcp_args = json!({"query": q, "group": group});
        if group == "ext" {
            request["top"] = json!(5);
            mcp_args["top"] = json!(5);
        }
        let (socket, _) = daemon_ask(&f.w, &request);
        let mut answers = vec![
            ("cli --index", json!(json_lines(&on_index))),
            ("cli via the daemon", json!(json_lines(&via_daemon))),
            ("daemon socket", json!(json_lines(&socket))),
        ];
        for (m, name) in f.mcp.iter_mut().zip(["mcp --index", "mcp via the daemon"]) {
            answers.push((
                name,
                m.tool("facets", mcp_args.clone()).unwrap()["rows"].clone(),
            ));
        }
        assert!(!json_lines(&on_index).is_empty(), "facet {group}: no rows");
        all_equal(&format!("facet {group}"), &answers);
    }

    // Folder sizes (MCP has none).
    for (path, sort) in [
        ("/", "allocated"),
        ("/WINDOWS", "count"),
        ("/Program Files", "name"),
    ] {
        let mut args = vec!["du"];
        args.extend([path, "--sort", sort, "--limit", "8", "--format", "jsonl"]);
        let [on_index, via_daemon] = f.cli_both(&args);
        let (socket, _) = daemon_ask(
            &f.w,
            &json!({"du": {"path": path, "depth": 1, "sort": sort, "limit": 8}, "output": {"format": "jsonl"}}),
        );
        let mut answers = vec![
            ("cli --index", json!(json_lines(&on_index))),
            ("cli via the daemon", json!(json_lines(&via_daemon))),
            ("daemon socket", json!(json_lines(&socket))),
        ];
        for (h, name) in f.http.iter().zip(["http --index", "http via the daemon"]) {
            let (status, v) = h.get(&format!("/api/du?path={}&sort={sort}&limit=8", enc(path)));
            assert_eq!(status, 200, "du {path}: {name}: {v}");
            answers.push((name, v["rows"].clone()));
        }
        all_equal(&format!("du {path}"), &answers);
    }

    // A bad query: refused by each, with the same caret message.
    let bad = "size:>2xb";
    let mut messages = Vec::new();
    let i = path_str(&f.idx).to_string();
    for (name, args) in [
        ("cli --index", vec![bad, "--index", &i]),
        ("cli via the daemon", vec![bad]),
    ] {
        let (code, _, err) = cli(f.w.uffs(), &args);
        assert_eq!(code, 2, "{name}: {err}");
        messages.push((
            name,
            err.trim().trim_start_matches("uffs: error: ").to_string(),
        ));
    }
    let (_, last) = daemon_ask(&f.w, &json!({"query": bad}));
    messages.push((
        "daemon socket",
        last["refused"].as_str().unwrap().to_string(),
    ));
    for (h, name) in f.http.iter().zip(["http --index", "http via the daemon"]) {
        let (status, v) = h.get(&format!("/api/search?q={}", enc(bad)));
        assert_eq!(status, 400, "{name}: {v}");
        messages.push((name, v["error"].as_str().unwrap().to_string()));
    }
    for (m, name) in f.mcp.iter_mut().zip(["mcp --index", "mcp via the daemon"]) {
        messages.push((name, m.tool("search", json!({"query": bad})).unwrap_err()));
    }
    assert!(
        messages[0].1.starts_with("bad query: unknown size unit"),
        "{}",
        messages[0].1
    );
    for (name, m) in &messages {
        assert_eq!(
            m, &messages[0].1,
            "{name}'s message differs from {}'s",
            messages[0].0
        );
    }
}

/// The request's JSON as the protocol document describes it: what `docs/protocol.md` shows is accepted as it is,
/// names in another case and unknown fields are refused.
#[test]
fn the_documented_request_is_the_one_the_daemon_takes() {
    let w = World::new("front-ends-doc");
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &xp, "--name", "C"]);
    w.start();
    w.wait_ready(60);
    let doc = std::fs::read_to_string(repo().join("docs/protocol.md")).unwrap();
    // The example request, on one line as it travels.
    let start = doc
        .find("{\"op\":\"query\",\"request\":{\"version\":1")
        .expect("the example in docs/protocol.md");
    let end = start + doc[start..].find("\n```").unwrap();
    let example: Value = serde_json::from_str(&doc[start..end].replace('\n', "")).unwrap();
    let (out, last) = daemon_ask(&w, &example["request"]);
    assert_eq!(last["done"]["found"], 8, "{last}");
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(
        out.starts_with("C:/Program Files/Skype/Phone/Skype.exe"),
        "{out}"
    );
    for (bad, why) in [
        (
            json!({"query": "x", "sort": "Size"}),
            "unknown variant `Size`",
        ),
        (json!({"qeury": "x"}), "unknown field `qeury`"),
        (
            json!({"output": {"format": "Jsonl"}}),
            "unknown variant `Jsonl`",
        ),
        (
            json!({"output": {"output": "/tmp/x"}}),
            "unknown field `output`",
        ),
    ] {
        let (_, last) = daemon_ask(&w, &bad);
        let e = last["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{bad}: {last}"));
        assert!(
            e.starts_with("bad request:") && e.contains(why),
            "{bad}: {e}"
        );
    }
    let (_, last) = daemon_ask(&w, &json!({"version": 2}));
    assert!(
        last["refused"].as_str().unwrap().contains("version 1"),
        "{last}"
    );
    let (_, last) = daemon_ask(&w, &json!({"count": true, "facet": "ext"}));
    assert!(
        last["refused"]
            .as_str()
            .unwrap()
            .contains("exclude each other"),
        "{last}"
    );
    let _ = w.run(&["daemon", "stop"]);
}
