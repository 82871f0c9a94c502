//! `uffs serve` end to end: the JSON API against the command line's answers for the same index, the guard
//! (token, Host, Origin), hostile clients (oversized and malformed requests, a slow client, 100 at once, memory
//! after), the server through the daemon, and the web page in headless Chromium (`tests/clients/web_page.py`,
//! screenshots under `target/test-artifacts/`), also for a `content:` query that reads the files. Every request
//! goes to 127.0.0.1.

#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// A running `uffs serve`, killed when dropped.
struct Server {
    child: Child,
    url: String,
    port: u16,
    token: String,
    runtime: PathBuf,
}

impl Server {
    /// Starts `uffs serve ARGS --bind 127.0.0.1:0` in `cmd`'s environment and reads the URL it prints first.
    fn start(mut cmd: Command, runtime: &Path, args: &[&str]) -> Server {
        let mut child = cmd
            .arg("serve")
            .args(args)
            .args(["--bind", "127.0.0.1:0"])
            .env("UFFS_RUNTIME_DIR", runtime)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start uffs serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) if !l.is_empty() => l,
            _ => {
                let _ = child.kill();
                let mut err = String::new();
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                panic!("uffs serve printed no URL: {err}");
            }
        };
        let url = line.trim().to_string();
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .expect("a loopback URL");
        let (port, token) = rest.split_once("/?token=").expect("URL with a token");
        Server {
            port: port.parse().unwrap(),
            token: token.to_string(),
            url,
            child,
            runtime: runtime.to_path_buf(),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `request` as is and returns the status and body (empty status 0 if the server closed).
    fn raw(&self, request: &[u8]) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let _ = s.write_all(request);
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    }

    /// GET `path` with the token and the right Host, plus `headers`.
    fn get_with(&self, path: &str, headers: &str) -> (u16, String) {
        self.raw(
            format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n{headers}Connection: close\r\n\r\n",
                self.port, self.token
            )
            .as_bytes(),
        )
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.get_with(path, "");
        let v = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body:?}"));
        (status, v)
    }

    fn ok(&self, path: &str) -> Value {
        let (status, v) = self.get(path);
        assert_eq!(status, 200, "{path}: {v}");
        v
    }

    fn rss_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_index(name: &str) -> (Server, PathBuf) {
    let dir = scratch(&format!("serve-{name}"));
    let idx = xp_index(&dir);
    let s = Server::start(uffs(), &dir.join("run"), &["--index", path_str(&idx)]);
    (s, idx)
}

#[test]
fn the_api_answers_as_the_command_line_does() {
    let (s, idx) = serve_index("api");
    // The token: printed in the URL, kept in the runtime directory for the user only.
    let file = s.runtime.join(format!("serve-{}.token", s.port));
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), s.token);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(s.token.len(), 64);
    assert!(s.url.starts_with("http://127.0.0.1:"));

    let cases: [(&str, &[&str]); 5] = [
        ("ext:dll", &["--limit", "50"]),
        (
            "ext:dll",
            &[
                "--sort",
                "size",
                "--reverse",
                "--limit",
                "20",
                "--offset",
                "40",
            ],
        ),
        ("system32/drivers", &["--sort", "path", "--limit", "7"]),
        ("kernel32", &["--limit", "100"]),
        ("*.txt size:>1kb", &["--sort", "modified", "--limit", "30"]),
    ];
    for (q, args) in cases {
        let arg = |k: &str| {
            args.iter()
                .position(|a| *a == k)
                .map(|i| args.get(i + 1).copied().unwrap_or("true"))
        };
        let mut path = format!(
            "/api/search?q={}&columns=path,name,size,modified,kind",
            enc(q)
        );
        for (k, p) in [
            ("--limit", "limit"),
            ("--offset", "offset"),
            ("--sort", "sort"),
        ] {
            if let Some(v) = arg(k) {
                path += &format!("&{p}={v}");
            }
        }
        if args.contains(&"--reverse") {
            path += "&reverse=true";
        }
        let v = s.ok(&path);
        let mut cli_args = vec![q, "--columns", "path,name,size,modified,kind"];
        cli_args.extend_from_slice(args);
        let want = cli_rows(&idx, &cli_args);
        assert_eq!(v["rows"].as_array().unwrap(), &want, "{path}");
        let found: u64 =
            String::from_utf8(run_ok(uffs().args([q, "--count", "--index"]).arg(&idx)).stdout)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
        assert_eq!(v["found"], found, "{path}");
        let offset = arg("--offset").map_or(0, |o| o.parse().unwrap());
        assert_eq!(v["offset"], offset);
        assert_eq!(
            v["truncated"],
            (offset + want.len()) < found as usize,
            "{path}"
        );
        assert_eq!(s.ok(&format!("/api/count?q={}", enc(q)))["count"], found);
    }

    // Default columns, and the hard maximum of rows.
    let v = s.ok("/api/search?q=&limit=5000");
    assert_eq!(v["limit"], 1000);
    assert_eq!(v["rows"].as_array().unwrap().len(), 1000);
    assert_eq!(v["found"], s.ok("/api/count?q=")["count"]);
    let keys: Vec<&str> = v["rows"][0]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(keys, ["name", "path", "size", "modified", "kind"]); // the columns in their order

    // Volumes and status.
    let vols = s.ok("/api/volumes");
    assert_eq!(vols["volumes"][0]["entries"], 11842);
    let status = s.ok("/api/status");
    assert_eq!(status["volumes"][0]["state"], "ready");
    // When it was built, as a time a reader can read (ISO 8601, UTC), not a FILETIME.
    let built = status["volumes"][0]["built_at"]
        .as_str()
        .unwrap_or_default();
    assert!(
        built.len() >= 20 && built.contains('T') && built.ends_with('Z'),
        "{status}"
    );
    assert!(s.ok("/api/syntax")["help"]
        .as_str()
        .unwrap()
        .contains("QUERY SYNTAX"));

    // Disk usage, as `uffs du`.
    let du = s.ok("/api/du?path=/WINDOWS&depth=2&limit=5&sort=count");
    let want = cli_rows(
        &idx,
        &[
            "du", "/WINDOWS", "--depth", "2", "--limit", "5", "--sort", "count",
        ],
    );
    assert_eq!(du["rows"].as_array().unwrap(), &want);
    assert_eq!(want.last().unwrap()["path"], "/WINDOWS");

    // The client's mistakes: 400 with a message that says what is wrong.
    let (st, v) = s.get(&format!("/api/search?q={}", enc("ext:dll size:>zz")));
    assert_eq!(st, 400);
    let msg = v["error"].as_str().unwrap();
    assert!(msg.contains("size:>zz") && msg.contains('^'), "{msg}");
    for (path, says) in [
        ("/api/search?q=a&sort=bogus", "unknown sort"),
        ("/api/search?q=a&columns=nope", "unknown column"),
        ("/api/search?q=a&limit=ten", "whole number"),
        ("/api/search?q=a&reverse=maybe", "true or false"),
        ("/api/search?q=a&q=b", "twice"),
        ("/api/search?q=a&frobnicate=1", "unknown parameter"),
        ("/api/du?path=/no/such/folder", "no folder"),
        ("/api/du?depth=9", "depth"),
    ] {
        let (st, v) = s.get(path);
        assert_eq!(st, 400, "{path}: {v}");
        assert!(v["error"].as_str().unwrap().contains(says), "{path}: {v}");
    }
    let (st, _) = s.get("/api/nothing");
    assert_eq!(st, 404);

    // Asked to stop, it removes its token.
    let mut s = s;
    run_ok(Command::new("kill").args(["-TERM", &s.pid().to_string()]));
    let status = s.child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!file.exists());
}

#[test]
fn strangers_are_refused() {
    let (s, _) = serve_index("guard");
    let p = s.port;
    let get = |headers: &str| {
        s.raw(format!("GET /api/status HTTP/1.1\r\n{headers}Connection: close\r\n\r\n").as_bytes())
            .0
    };
    let host = format!("Host: 127.0.0.1:{p}\r\n");
    let auth = format!("Authorization: Bearer {}\r\n", s.token);
    assert_eq!(get(&format!("{host}{auth}")), 200);
    // No token, a wrong one, the token in the address of an API call.
    assert_eq!(get(&host), 403);
    assert_eq!(
        get(&format!(
            "{host}Authorization: Bearer {}\r\n",
            "0".repeat(64)
        )),
        403
    );
    assert_eq!(
        s.raw(
            format!(
                "GET /api/status?token={} HTTP/1.1\r\n{host}Connection: close\r\n\r\n",
                s.token
            )
            .as_bytes()
        )
        .0,
        403
    );
    // Another web site in the user's browser: a foreign Origin, or a foreign Host (DNS rebinding).
    assert_eq!(
        get(&format!("{host}{auth}Origin: http://evil.example\r\n")),
        403
    );
    assert_eq!(get(&format!("{host}{auth}Origin: null\r\n")), 403);
    assert_eq!(
        get(&format!(
            "{host}{auth}Origin: http://127.0.0.1:{}\r\n",
            p + 1
        )),
        403
    );
    assert_eq!(
        get(&format!("{host}{auth}Origin: http://127.0.0.1:{p}\r\n")),
        200
    );
    assert_eq!(get(&format!("Host: evil.example:{p}\r\n{auth}")), 403);
    assert_eq!(get(&format!("Host: 127.0.0.1\r\n{auth}")), 403);
    assert_eq!(get(&auth), 403);
    for h in ["localhost", "LOCALHOST", "[::1]"] {
        assert_eq!(get(&format!("Host: {h}:{p}\r\n{auth}")), 200, "{h}");
    }
    // The page: with the token in its address, not without.
    let (st, body) = s.raw(
        format!(
            "GET /?token={} HTTP/1.1\r\n{host}Connection: close\r\n\r\n",
            s.token
        )
        .as_bytes(),
    );
    assert_eq!(st, 200);
    assert!(body.contains("<title>uffs</title>") && body.contains("uffsTimings"));
    assert_eq!(
        s.raw(format!("GET / HTTP/1.1\r\n{host}Connection: close\r\n\r\n").as_bytes())
            .0,
        403
    );
    assert_eq!(
        s.raw(format!("GET /?token=x HTTP/1.1\r\n{host}Connection: close\r\n\r\n").as_bytes())
            .0,
        403
    );

    // Another address than loopback needs --allow-remote.
    let out = uffs()
        .args(["serve", "--index", "x", "--bind", "0.0.0.0:0"])
        .output()
        .unwrap();
    // (--index x does not exist: the address is refused before or the file after; both exit 2.)
    assert_eq!(out.status.code(), Some(2));
    let dir = scratch("serve-remote");
    let idx = xp_index(&dir);
    let out = uffs()
        .args(["serve", "--index", path_str(&idx), "--bind", "0.0.0.0:0"])
        .env("UFFS_RUNTIME_DIR", dir.join("run"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn hostile_clients_get_an_answer_and_the_server_stays_up() {
    let (s, _) = serve_index("hostile");
    let host = format!("Host: 127.0.0.1:{}\r\n", s.port);
    let auth = format!("Authorization: Bearer {}\r\n", s.token);

    // A slow client: half a request line, then nothing. It holds one connection, not the server.
    let mut slow = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    slow.write_all(b"GET /api/status HTTP/1.1\r\nHo").unwrap();

    // An idle client: one request kept alive, then nothing.
    let mut idle = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    write!(idle, "GET /api/status HTTP/1.1\r\n{host}{auth}\r\n").unwrap();

    // Oversized: the address, a header, the whole head; a body where none is taken.
    let long = "a".repeat(20_000);
    let (st, _) = s.get_with(&format!("/api/search?q={long}"), "");
    assert_eq!(st, 414);
    let (st, _) = s.raw(
        format!(
            "GET /api/status HTTP/1.1\r\n{host}{auth}X-Big: {}\r\n\r\n",
            "b".repeat(200_000)
        )
        .as_bytes(),
    );
    assert!(st == 431 || st == 400 || st == 0, "a 200 KB header: {st}");
    let (st, _) = s.raw(
        format!("POST /api/search HTTP/1.1\r\n{host}{auth}Content-Length: 100000\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(st, 405);
    let (st, _) = s.raw(
        format!("POST /mcp HTTP/1.1\r\n{host}{auth}Content-Length: 50000000\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(st, 413);
    // Malformed.
    for bad in [
        &b"GARBAGE\r\n\r\n"[..],
        b"GET\r\n\r\n",
        b"GET /api/status HTTP/9.9\r\n\r\n",
        b"\x00\x01\x02\x03\xff\xfe\r\n\r\n",
        b"GET /api/status HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
    ] {
        let (st, _) = s.raw(bad);
        assert!(
            st == 400 || st == 403 || st == 0 || st == 505,
            "{bad:?}: {st}"
        );
    }
    let (st, v) = s.get(&format!("/api/search?q={}&limit=1", enc("%ZZ%")));
    assert!(st == 200 || st == 400, "{st} {v}");
    let (st, _) = s.get("/api/search?q=a&offset=99999999999999999999999");
    assert_eq!(st, 400);

    // 100 clients at once, a few rounds: each gets its rows or a clear error; memory comes back.
    let storm = || {
        let threads: Vec<_> = (0..100)
            .map(|i| {
                let (port, token) = (s.port, s.token.clone());
                std::thread::spawn(move || {
                    let q = match i % 4 {
                        0 => "ext:dll",
                        1 => "*",
                        2 => "size:>zz",
                        _ => "system32",
                    };
                    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                    write!(
                        c,
                        "GET /api/search?q={}&sort=size&limit=1000 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
                        enc(q)
                    )
                    .unwrap();
                    let mut b = Vec::new();
                    c.read_to_end(&mut b).unwrap();
                    let t = String::from_utf8_lossy(&b).into_owned();
                    let st: u16 = t.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
                    let body: Value = serde_json::from_str(t.split_once("\r\n\r\n").unwrap().1).unwrap();
                    (i, st, body)
                })
            })
            .collect();
        for t in threads {
            let (i, st, body) = t.join().unwrap();
            if i % 4 == 2 {
                assert_eq!(st, 400, "{body}");
                assert!(body["error"].as_str().unwrap().contains("size:>zz"));
            } else {
                assert_eq!(st, 200, "{body}");
                assert!(!body["rows"].as_array().unwrap().is_empty());
            }
        }
    };
    storm();
    let before = s.rss_kib();
    for _ in 0..3 {
        storm();
    }
    let after = s.rss_kib();
    eprintln!(
        "serve RSS after one round of 100 clients: {before} KiB; after three more: {after} KiB"
    );
    assert!(
        after <= before + 16 * 1024,
        "memory grew from {before} KiB to {after} KiB over three rounds of 100 clients"
    );

    // The slow client was cut off (header timeout), and the server still answers.
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut rest = Vec::new();
    let r = slow.read_to_end(&mut rest);
    assert!(r.is_ok(), "the slow client was not cut off: {r:?}");
    let text = String::from_utf8_lossy(&rest);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
    // The idle one got its answer, then was closed.
    idle.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut rest = Vec::new();
    let r = idle.read_to_end(&mut rest);
    assert!(r.is_ok(), "the idle client was not closed: {r:?}");
    assert!(String::from_utf8_lossy(&rest).starts_with("HTTP/1.1 200"));
    assert_eq!(s.ok("/api/count?q=ext:dll")["count"], 1653);
    assert!(s.child.id() > 0);
}

#[test]
fn through_the_daemon() {
    use common::daemon::World;
    let w = World::new("serve");
    let xp = w.copy("windows-xp-mft/MFT", "xp.mft");
    w.ok(&["volumes", "add", &xp, "--name", "C"]);
    // No daemon yet: 503, and the page says so.
    let s = Server::start(w.uffs(), &w.runtime, &[]);
    let (st, v) = s.get("/api/search?q=kernel32");
    assert_eq!(st, 503, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("uffs daemon start"),
        "{v}"
    );
    w.start();
    w.wait_ready(60);
    let v = s.ok("/api/search?q=kernel32.dll&columns=path,size");
    assert_eq!(v["rows"][0]["path"], "C:/WINDOWS/system32/kernel32.dll");
    assert_eq!(v["found"], 1);
    assert_eq!(s.ok("/api/count?q=ext:dll")["count"], 1653);
    assert_eq!(s.ok("/api/volumes")["volumes"][0]["name"], "C");
    let du = s.ok(&format!("/api/du?path={}&limit=3", enc("C:\\WINDOWS")));
    assert_eq!(
        du["rows"].as_array().unwrap().last().unwrap()["path"],
        "C:/WINDOWS"
    );
    let (st, v) = s.get(&format!("/api/search?q={}", enc("size:>zz")));
    assert_eq!(st, 400, "{v}");
    let (st, v) = s.get("/api/search?q=a&columns=nope");
    assert_eq!(st, 400, "{v}");
}

/// The web page in headless Chromium, driven by selenium from `$UFFS_PY` (see `scripts/setup.sh`).
/// `tests/clients/web_page.py` in headless Chromium against the server `s` of index `idx`, with `args`: its last
/// line of output (JSON), and the folder of its screenshots.
fn web_page(s: &Server, idx: &Path, args: &[&str]) -> (Value, PathBuf) {
    let artifacts = repo().join("target/test-artifacts");
    let stdout = client_stdout(
        Command::new(python("selenium"))
            .arg(repo().join("tests/clients/web_page.py"))
            .args([
                "--url",
                &s.url,
                "--uffs",
                env!("CARGO_BIN_EXE_uffs"),
                "--index",
            ])
            .arg(idx)
            .args(args)
            .arg("--artifacts")
            .arg(&artifacts),
    );
    let v = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    (v, artifacts)
}

#[test]
fn the_web_page_in_a_real_browser() {
    let (s, idx) = serve_index("browser");
    let (v, artifacts) = web_page(&s, &idx, &["--query", "ext:dll"]);
    assert_eq!(v["ok"], true);
    assert!(v["timings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["kind"] == "type"));
    for f in ["serve-search.png", "serve-du.png", "serve-error.png"] {
        assert!(artifacts.join(f).metadata().unwrap().len() > 1000, "{f}");
    }
}

/// The page's rows for a query with a data term (`content:`): the server reads the files from the volume the
/// index was built from, and the page shows what `uffs QUERY --index FILE` prints, as typed and sorted by size; a
/// data term inside OR shows its refusal, the caret under the term.
#[test]
fn the_web_page_shows_a_content_query() {
    let dir = scratch("serve-content");
    let idx = index_into(&fixture("content.img"), &dir.join("content.uffs"));
    let s = Server::start(uffs(), &dir.join("run"), &["--index", path_str(&idx)]);
    let query = "content:the";
    let (v, artifacts) = web_page(&s, &idx, &["--query", query, "--rows-only"]);
    assert_eq!(v["ok"], true);
    // The page checked its rows against the command line's; they are the files holding the text.
    let rows: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(rows.contains(&"/compressed/small.txt"), "{rows:?}");
    assert!(!rows.contains(&"/plain/resident.txt"), "{rows:?}");
    assert!(artifacts.join("serve-rows.png").metadata().unwrap().len() > 1000);
}

/// `uffs serve --source` takes a container as it takes the raw image it holds: the content volume as an E01 set
/// answers a name query and a data term read through the container as the raw image does.
#[test]
fn a_container_answers_as_its_raw_image() {
    let dir = scratch("serve-container");
    let raw = fixture("content.img");
    let (e01, _) = common::containers::acquire(&raw, &dir.join("ewf"), "c", "1MiB", "deflate:fast");
    let answers = |source: &Path, run: &str| {
        let s = Server::start(uffs(), &dir.join(run), &["--source", path_str(source)]);
        ["ext:txt", "content:resident", "size:>1mb"]
            .iter()
            .map(|q| {
                s.ok(&format!(
                    "/api/search?q={}&columns=path,size&limit=5000",
                    enc(q)
                ))
            })
            .collect::<Vec<Value>>()
    };
    let want = answers(&raw, "run-raw");
    assert!(
        want[1]["rows"].as_array().is_some_and(|r| !r.is_empty()),
        "content:resident found nothing: {}",
        want[1]
    );
    assert_eq!(answers(&e01, "run-e01"), want);
    let _ = std::fs::remove_dir_all(&dir);
}
