//! Hostile and heavy input at every door of `uffs serve` (the JSON API, the page, MCP over HTTP) and of
//! `uffs mcp` (MCP over stdio): idle and slow connections, huge heads, bytes that are not UTF-8, paths that climb
//! out of the page's assets, wrong tokens by the thousand, oversized and invalid JSON-RPC. Each is refused or
//! bounded, and a normal query from another connection is answered while the attack goes on and after it.
//! Every request goes to 127.0.0.1; every loop is bounded in count and time; time is never asserted (a read
//! timeout only detects a hang).

#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// How long a read may wait before the test calls it a hang.
const HANG: Duration = Duration::from_secs(60);

/// A running `uffs serve --index` on the Windows XP sample, killed when dropped.
struct Server {
    child: Child,
    client: Client,
}

/// What a client knows of a server: its port and token.
#[derive(Clone)]
struct Client {
    port: u16,
    token: String,
}

impl std::ops::Deref for Server {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Server {
    fn start(name: &str) -> Server {
        let dir = scratch(&format!("serve-hostile-{name}"));
        let idx = xp_index(&dir);
        let mut child = uffs()
            .args(["serve", "--bind", "127.0.0.1:0", "--index", path_str(&idx)])
            .env("UFFS_RUNTIME_DIR", dir.join("run"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start uffs serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut s = Server {
            child,
            client: Client {
                port: 0,
                token: String::new(),
            },
        };
        let line = rx.recv_timeout(HANG).unwrap_or_default();
        let (port, token) = line
            .trim()
            .strip_prefix("http://127.0.0.1:")
            .and_then(|r| r.split_once("/?token="))
            .unwrap_or_else(|| panic!("uffs serve printed no URL: {line:?}"));
        s.client.port = port.parse().unwrap();
        s.client.token = token.to_string();
        s
    }

    fn rss_kib(&self) -> u64 {
        rss_kib(self.child.id())
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Client {
    fn connect(&self) -> TcpStream {
        let c = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        c.set_nodelay(true).unwrap();
        c.set_read_timeout(Some(HANG)).unwrap();
        c.set_write_timeout(Some(HANG)).unwrap();
        c
    }

    fn head(&self) -> String {
        format!(
            "Host: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n",
            self.port, self.token
        )
    }

    /// Sends `request` (from another thread, so a server that answers early is read) and reads to the end.
    fn exchange(&self, request: Vec<u8>) -> Answer {
        let mut c = self.connect();
        let mut w = c.try_clone().unwrap();
        let writer = std::thread::spawn(move || {
            let _ = w.write_all(&request);
        });
        let mut buf = Vec::new();
        let r = c.read_to_end(&mut buf);
        if let Err(e) = &r {
            assert!(
                e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::TimedOut,
                "the server neither answered nor closed: a hang"
            );
        }
        let _ = c.shutdown(Shutdown::Both);
        writer.join().unwrap();
        Answer::parse(&buf)
    }

    fn get(&self, target: &str, extra: &str) -> Answer {
        self.exchange(
            format!(
                "GET {target} HTTP/1.1\r\n{}{extra}Connection: close\r\n\r\n",
                self.head()
            )
            .into_bytes(),
        )
    }

    /// A normal query on a new connection: it must be answered, right.
    fn probe(&self) {
        let a = self.get("/api/count?q=ext:dll", "");
        assert_eq!(a.status, 200, "the probe: {}", a.text());
        assert_eq!(a.json()["count"], 1653);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// An HTTP answer: status (0 when the server closed without one), head and body.
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn parse(buf: &[u8]) -> Answer {
        let split = buf
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or(buf.len());
        let head = String::from_utf8_lossy(&buf[..split]).into_owned();
        let status = head
            .strip_prefix("HTTP/1.1 ")
            .and_then(|r| r.get(..3))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = buf.get(split + 4..).unwrap_or_default().to_vec();
        Answer { status, head, body }
    }

    fn text(&self) -> String {
        format!("{}\n\n{}", self.head, String::from_utf8_lossy(&self.body))
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }
}

/// Reads one answer from a kept-alive connection (the server's answers carry Content-Length).
fn read_one(r: &mut BufReader<TcpStream>) -> Answer {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).expect("read an answer (a hang?)");
        assert!(n > 0, "the server closed the connection: {head}");
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or_else(|| panic!("no Content-Length: {head}"));
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    let mut a = Answer::parse(head.as_bytes());
    a.head = head;
    a.body = body;
    a
}

/// Runs `attack` on another thread while the main thread probes the server (at least once, at most 200
/// times), then returns what the attack returned.
fn during<T: Send + 'static>(s: &Client, attack: impl FnOnce() -> T + Send + 'static) -> T {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let t = std::thread::spawn(move || {
        let r = attack();
        d.store(true, Ordering::SeqCst);
        r
    });
    for _ in 0..200 {
        s.probe();
        if done.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    t.join().expect("the attack thread panicked")
}

/// Whether the server closed `c` (end of file or reset), waiting at most [`HANG`].
fn closed_by_server(c: &mut TcpStream) -> bool {
    c.set_read_timeout(Some(HANG)).unwrap();
    let mut sink = Vec::new();
    match c.read_to_end(&mut sink) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn idle_and_slow_connections_are_cut_off_and_others_are_served() {
    let mut s = Server::start("slowloris");
    let host = s.head();
    // More attackers than the server takes connections at once (256): each kind alone could fill it.
    // Silent: connect, send nothing.
    let mut silent: Vec<TcpStream> = (0..100).map(|_| s.connect()).collect();
    // Trickling: a request line and headers, a byte at a time, never finished.
    let mut trickle: Vec<TcpStream> = (0..100).map(|_| s.connect()).collect();
    // Slow body: a whole head with the token, declaring a body that never comes (to /mcp, which reads bodies).
    let mut slow_body: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut c = s.connect();
            write!(
                c,
                "POST /mcp HTTP/1.1\r\n{host}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 60000\r\n\r\n{{\"jsonrpc\""
            )
            .unwrap();
            c
        })
        .collect();
    // The trickle goes on (a byte per socket every 100 ms, for at most 40 s) until the server cuts them off.
    let clones: Vec<TcpStream> = trickle.iter().map(|c| c.try_clone().unwrap()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let trickler = std::thread::spawn(move || {
        let text = b"GET /api/search?q=ext:dll HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
        let t = Instant::now();
        let mut live = vec![true; clones.len()];
        let mut i = 0;
        while live.iter().any(|&l| l)
            && t.elapsed() < Duration::from_secs(40)
            && !stop2.load(Ordering::SeqCst)
        {
            for (c, l) in clones.iter().zip(live.iter_mut()).filter(|(_, l)| **l) {
                let mut c = c;
                *l = c.write_all(&[text[i % text.len()]]).is_ok();
            }
            i += 1;
            std::thread::sleep(Duration::from_millis(100));
        }
    });

    // Other clients are answered while all of these are held open.
    for _ in 0..5 {
        s.probe();
    }
    // A kept-alive client too: several requests on one connection.
    let mut keep = BufReader::new(s.connect());
    for _ in 0..3 {
        write!(
            keep.get_mut(),
            "GET /api/count?q=kernel32.dll HTTP/1.1\r\n{host}\r\n"
        )
        .unwrap();
        let a = read_one(&mut keep);
        assert_eq!(a.status, 200, "{}", a.text());
        assert_eq!(a.json()["count"], 1);
    }

    // Every attacker is cut off in the end (timed out, or shed for newer clients), none left hanging.
    for (kind, conns) in [
        ("silent", &mut silent),
        ("trickling", &mut trickle),
        ("slow body", &mut slow_body),
    ] {
        for (i, c) in conns.iter_mut().enumerate() {
            assert!(
                closed_by_server(c),
                "{kind} connection {i} was never cut off"
            );
        }
    }
    stop.store(true, Ordering::SeqCst);
    trickler.join().unwrap();
    s.probe();
    assert!(s.alive());
}

#[test]
fn huge_heads_and_addresses_are_refused_in_bounded_memory() {
    let mut s = Server::start("huge");
    let before = s.rss_kib();
    let c = s.client.clone();
    let statuses = during(&s, move || {
        let s = c;
        let host = s.head();
        let mut out = Vec::new();
        // An address over the API's limit (8 KiB) but inside the head's buffer; one past the buffer (64 KiB).
        out.push((
            "9 KiB address",
            s.get(&format!("/api/search?q={}", "a".repeat(9 << 10)), "")
                .status,
        ));
        out.push((
            "100 KiB address",
            s.get(&format!("/api/search?q={}", "a".repeat(100 << 10)), "")
                .status,
        ));
        out.push((
            "200 KiB path",
            s.get(&format!("/{}", "p".repeat(200 << 10)), "").status,
        ));
        // One header of 1 MiB, many small headers, a head that never ends (4 MiB of headers), a few rounds.
        for _ in 0..8 {
            out.push((
                "1 MiB header",
                s.get(
                    "/api/status",
                    &format!("X-Big: {}\r\n", "b".repeat(1 << 20)),
                )
                .status,
            ));
            let many: String = (0..5000).map(|i| format!("X-H{i}: v\r\n")).collect();
            out.push(("5000 headers", s.get("/api/status", &many).status));
            let mut endless = format!("GET /api/status HTTP/1.1\r\n{host}").into_bytes();
            for i in 0..(4 << 20) / 64 {
                endless.extend_from_slice(format!("X-{i:08}: {}\r\n", "e".repeat(48)).as_bytes());
            }
            out.push(("4 MiB head", s.exchange(endless).status));
        }
        out
    });
    for (what, st) in statuses {
        assert!(
            [400, 414, 431].contains(&st),
            "{what}: {st}, not a refusal (400, 414 or 431)"
        );
    }
    let after = s.rss_kib();
    eprintln!("serve RSS before the huge heads: {before} KiB; after: {after} KiB");
    assert!(
        after <= before + 16 * 1024,
        "memory grew from {before} KiB to {after} KiB"
    );
    // A head just inside the limits is still answered.
    let a = s.get("/api/status", &format!("X-Ok: {}\r\n", "o".repeat(4000)));
    assert_eq!(a.status, 200, "{}", a.text());
    s.probe();
    assert!(s.alive());
}

#[test]
fn bytes_that_are_not_utf8_are_a_bad_request() {
    let mut s = Server::start("utf8");
    let p = s.port;
    let t = s.token.clone();
    let raw = |bytes: Vec<u8>| s.exchange(bytes);
    let req = |line: &[u8], headers: &[u8]| {
        let mut r = Vec::new();
        r.extend_from_slice(line);
        r.extend_from_slice(headers);
        r.extend_from_slice(b"Connection: close\r\n\r\n");
        r
    };
    let host = format!("Host: 127.0.0.1:{p}\r\n").into_bytes();
    let auth = format!("Authorization: Bearer {t}\r\n").into_bytes();
    let both = [host.clone(), auth.clone()].concat();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "raw bytes in the path",
            req(b"GET /api/\xff\xfe HTTP/1.1\r\n", &both),
        ),
        (
            "raw bytes in the query",
            req(b"GET /api/search?q=\xff HTTP/1.1\r\n", &both),
        ),
        (
            "encoded bytes in the query",
            req(b"GET /api/search?q=%FF%FE HTTP/1.1\r\n", &both),
        ),
        (
            "an encoded lone surrogate",
            req(b"GET /api/count?q=%ED%A0%80 HTTP/1.1\r\n", &both),
        ),
        (
            "an encoded cut character",
            req(b"GET /api/count?q=caf%C3 HTTP/1.1\r\n", &both),
        ),
        (
            "encoded bytes in a parameter's name",
            req(b"GET /api/count?%FF=1 HTTP/1.1\r\n", &both),
        ),
        (
            "encoded bytes in the path",
            req(b"GET /api/%FF%FE HTTP/1.1\r\n", &both),
        ),
        (
            "encoded bytes in the page's token",
            req(b"GET /?token=%FF HTTP/1.1\r\n", &host),
        ),
        (
            "bytes in the token",
            req(
                b"GET /api/status HTTP/1.1\r\n",
                &[host.clone(), b"Authorization: Bearer \xff\xfe\r\n".to_vec()].concat(),
            ),
        ),
        (
            "bytes in the Host",
            req(
                b"GET /api/status HTTP/1.1\r\n",
                &[b"Host: \xff\xfe\r\n".to_vec(), auth.clone()].concat(),
            ),
        ),
        (
            "bytes in the Origin",
            req(
                b"GET /api/status HTTP/1.1\r\n",
                &[both.clone(), b"Origin: http://\xff\r\n".to_vec()].concat(),
            ),
        ),
        (
            "bytes in a header's name",
            req(
                b"GET /api/status HTTP/1.1\r\n",
                &[both.clone(), b"X-\xff: 1\r\n".to_vec()].concat(),
            ),
        ),
    ];
    for (what, bytes) in cases {
        let a = raw(bytes);
        assert_eq!(a.status, 400, "{what}: {}", a.text());
    }
    // A character an address may not hold, typed un-encoded in a query: a 400 whose error says which, as the
    // API's errors do (hyper alone answers it with an empty body).
    for (target, bad) in [
        (
            "/api/count?q=size:>1mb",
            "`>`, which must be percent-encoded (%3E)",
        ),
        (
            "/api/search?q=a<b",
            "`<`, which must be percent-encoded (%3C)",
        ),
    ] {
        let a = s.get(target, "");
        assert_eq!(a.status, 400, "{target}: {}", a.text());
        let e = a.json()["error"].as_str().unwrap_or_default().to_string();
        assert!(e.contains(bad), "{target}: {e}");
    }
    // A header the server does not read may hold any bytes (HTTP lets it): ignored.
    let a = raw(req(
        b"GET /api/status HTTP/1.1\r\n",
        &[both.clone(), b"X-Junk: \xff\xfe\r\n".to_vec()].concat(),
    ));
    assert_eq!(a.status, 200, "{}", a.text());
    // JSON bodies that are not UTF-8: a JSON-RPC parse error, 400.
    for body in [
        &b"\xff\xfe"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\xff\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"count\",\"arguments\":{\"query\":\"\xc3\"}}}",
    ] {
        let a = mcp_post(&s, body);
        assert_eq!(a.status, 400, "{body:?}: {}", a.text());
        assert_eq!(a.json()["error"]["code"], -32700, "{}", a.text());
    }
    s.probe();
    assert!(s.alive());
}

#[test]
fn paths_never_climb_out_of_the_built_in_page() {
    let mut s = Server::start("traversal");
    let t = s.token.clone();
    let targets = [
        "/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        "/..%2f..%2f..%2fetc%2fpasswd",
        "/.%2e/.%2e/Cargo.toml",
        "/%252e%252e/%252e%252e/etc/passwd",
        "/..%5c..%5c..%5cCargo.toml",
        "/..%c0%af..%c0%afetc/passwd",
        "//etc/passwd",
        "/./././Cargo.toml",
        "/app.js",
        "/app.css",
        "/index.html",
        "/web/app.js",
        "/crates/serve/web/index.html",
        "/Cargo.toml",
        "/README.md",
        "/..",
        "/.",
        "/%2e",
        "/api/../../Cargo.toml",
        "/api/%2e%2e/%2e%2e/Cargo.toml",
        "/mcp/../../Cargo.toml",
    ];
    let secrets = [
        "root:x:0:0",
        "[workspace]",
        "uffs-serve",
        "include_str",
        "QUERY SYNTAX",
    ];
    let check = |what: &str, a: &Answer| {
        // (405: a GET to /mcp, which only takes POST.)
        assert!(
            [400, 404, 405].contains(&a.status),
            "{what}: {}, not 400, 404 or 405: {}",
            a.status,
            a.text()
        );
        let body = String::from_utf8_lossy(&a.body);
        for secret in secrets {
            assert!(
                !body.contains(secret),
                "{what}: the answer holds {secret:?}: {body}"
            );
        }
        assert!(
            !body.contains("<html") && !body.contains("function"),
            "{what}: {body}"
        );
    };
    for target in targets {
        check(target, &s.get(target, ""));
        // The page's way of carrying the token: in the address.
        let a = s.exchange(
            format!(
                "GET {target}?token={t} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
                s.port
            )
            .into_bytes(),
        );
        assert!(
            [400, 403, 404].contains(&a.status),
            "{target}?token: {}",
            a.text()
        );
    }
    // Raw backslashes and dot segments in the request line, the absolute form, and no leading slash.
    for line in [
        "GET /..\\..\\..\\Windows\\win.ini HTTP/1.1",
        "GET \\..\\Cargo.toml HTTP/1.1",
        "GET ../../etc/passwd HTTP/1.1",
        "GET Cargo.toml HTTP/1.1",
    ] {
        let a = s.exchange(format!("{line}\r\n{}Connection: close\r\n\r\n", s.head()).into_bytes());
        check(line, &a);
    }
    let a = s.exchange(
        format!(
            "GET http://127.0.0.1:{}/../../etc/passwd HTTP/1.1\r\n{}Connection: close\r\n\r\n",
            s.port,
            s.head()
        )
        .into_bytes(),
    );
    check("absolute form", &a);
    // The page itself is still there.
    let a = s.get("/", "");
    assert_eq!(a.status, 200);
    assert!(String::from_utf8_lossy(&a.body).contains("<title>uffs</title>"));
    s.probe();
    assert!(s.alive());
}

#[test]
fn wrong_tokens_by_the_thousand_are_all_refused_and_the_right_one_works() {
    let mut s = Server::start("tokens");
    let t = s.token.clone();
    let p = s.port;
    let flip = |i: usize| {
        let mut b = t.clone().into_bytes();
        b[i] = if b[i] == b'0' { b'1' } else { b'0' };
        String::from_utf8(b).unwrap()
    };
    let mut wrong: Vec<String> = vec![
        String::new(),
        " ".into(),
        t[..63].to_string(),
        t[..1].to_string(),
        format!("{t}0"),
        format!("{t}{t}"),
        t.to_ascii_uppercase(),
        format!("0{}", &t[1..]),
        "0".repeat(64),
        "g".repeat(64),
        format!("{t}\t"),
    ];
    wrong.extend((0..64).map(flip));
    // Tokens drawn from a generator (xorshift): hex of every length up to 80.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while wrong.len() < 2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 81) as usize;
        wrong.push(
            (0..len)
                .map(|i| b"0123456789abcdef"[((x >> (i % 60)) & 15) as usize] as char)
                .collect(),
        );
    }
    wrong.retain(|w| w.trim() != t);
    // All on kept-alive connections, in the header and (for the page) in the address; a probe now and then.
    let mut c = BufReader::new(s.connect());
    for (i, w) in wrong.iter().enumerate() {
        write!(
            c.get_mut(),
            "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\nAuthorization: Bearer {w}\r\n\r\n"
        )
        .unwrap();
        let a = read_one(&mut c);
        assert_eq!(
            a.status,
            403,
            "wrong token {w:?} was not refused: {}",
            a.text()
        );
        if i % 2 == 0 {
            let enc: String = w.bytes().map(|b| format!("%{b:02X}")).collect();
            write!(
                c.get_mut(),
                "GET /?token={enc} HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\n\r\n"
            )
            .unwrap();
            let a = read_one(&mut c);
            assert_eq!(a.status, 403, "wrong page token {w:?} was not refused");
        }
        if i % 500 == 0 {
            s.probe();
        }
    }
    // MCP over HTTP with a wrong token.
    let a = s.exchange(
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}",
            flip(10)
        )
        .into_bytes(),
    );
    assert_eq!(a.status, 403);
    // The right token, on the same connection and on a new one.
    write!(
        c.get_mut(),
        "GET /api/count?q=kernel32.dll HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\nAuthorization: Bearer {t}\r\n\r\n"
    )
    .unwrap();
    let a = read_one(&mut c);
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(a.json()["count"], 1);
    write!(
        c.get_mut(),
        "GET /?token={t} HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\n\r\n"
    )
    .unwrap();
    assert_eq!(read_one(&mut c).status, 200);
    s.probe();
    assert!(s.alive());
}

/// POST `body` to /mcp with the token and the headers MCP wants.
fn mcp_post(s: &Client, body: &[u8]) -> Answer {
    let mut r = format!(
        "POST /mcp HTTP/1.1\r\n{}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        s.head(),
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    s.exchange(r)
}

const COUNT_CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","arguments":{"query":"ext:dll"}}}"#;

#[test]
fn mcp_over_http_refuses_oversized_and_invalid_json_rpc() {
    let mut s = Server::start("mcp-http");
    let before = s.rss_kib();
    let c = s.client.clone();
    let answers = during(&s, move || {
        let s = c;
        let mut out: Vec<(String, Answer)> = Vec::new();
        // Declared larger than any body taken: refused before a byte of it is read.
        out.push(("50 MB declared".into(), s.exchange(format!(
            "POST /mcp HTTP/1.1\r\n{}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 50000000\r\nConnection: close\r\n\r\n",
            s.head()).into_bytes())));
        // Sent: past the MCP limit (64 KiB) with a length, and chunked (a valid JSON-RPC call padded with spaces).
        let padded = format!("{}{}", " ".repeat(100 << 10), COUNT_CALL);
        out.push(("100 KiB body".into(), mcp_post(&s, padded.as_bytes())));
        for size in [100usize << 10, 3 << 20, 8 << 20] {
            let mut r = format!(
                "POST /mcp HTTP/1.1\r\n{}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                s.head()
            )
            .into_bytes();
            let chunk = " ".repeat(32 << 10);
            for _ in 0..size / chunk.len() {
                r.extend_from_slice(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes());
            }
            r.extend_from_slice(
                format!("{:x}\r\n{COUNT_CALL}\r\n0\r\n\r\n", COUNT_CALL.len()).as_bytes(),
            );
            out.push((format!("{size} bytes chunked"), s.exchange(r)));
        }
        // Invalid: not JSON, JSON but not JSON-RPC, too deep, a batch, wrong types, an unknown method.
        // (Inside the size limit: 60,000 bytes.)
        let deep = format!("{}{}", "[".repeat(30_000), "]".repeat(30_000));
        let bodies: Vec<(&str, String)> = vec![
            ("not JSON", "this is not json".into()),
            ("cut JSON", COUNT_CALL[..40].into()),
            ("empty", String::new()),
            ("JSON, not JSON-RPC", r#"{"hello":"world"}"#.into()),
            ("a number", "42".into()),
            ("too deep", deep),
            ("a batch", format!("[{COUNT_CALL},{COUNT_CALL}]")),
            ("wrong version", r#"{"jsonrpc":"1.0","id":1,"method":"tools/list"}"#.into()),
            ("id an object", r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#.into()),
            ("params a string", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#.into()),
            ("arguments wrong", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count","arguments":{"query":5}}}"#.into()),
            ("unknown method", r#"{"jsonrpc":"2.0","id":1,"method":"no/such/method"}"#.into()),
            ("unknown tool", r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm","arguments":{}}}"#.into()),
        ];
        for (what, b) in bodies {
            out.push((what.into(), mcp_post(&s, b.as_bytes())));
        }
        out
    });
    for (what, a) in &answers {
        let ok = match a.status {
            413 => what.contains("declared") || what.contains("KiB") || what.contains("chunked"),
            400 => {
                serde_json::from_slice::<Value>(&a.body).is_ok_and(|v| v["error"]["code"].is_i64())
            }
            // A JSON-RPC error answer, or a tool error (isError) for what reaches a tool.
            200 => serde_json::from_slice::<Value>(&a.body)
                .is_ok_and(|v| v["error"]["code"].is_i64() || v["result"]["isError"] == true),
            _ => false,
        };
        assert!(ok, "{what}: {}", a.text());
    }
    let after = s.rss_kib();
    eprintln!("serve RSS before the MCP bodies: {before} KiB; after: {after} KiB");
    assert!(
        after <= before + 16 * 1024,
        "memory grew from {before} KiB to {after} KiB"
    );
    // A good call is answered after all that.
    let a = mcp_post(&s, COUNT_CALL.as_bytes());
    assert_eq!(a.status, 200, "{}", a.text());
    assert_eq!(
        a.json()["result"]["structuredContent"]["found"],
        1653,
        "{}",
        a.text()
    );
    s.probe();
    assert!(s.alive());
}

/// `uffs mcp` on the XP sample's index, killed when dropped; its output lines arrive on a channel.
struct McpStdio {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// The ids of every message read so far.
    seen: Vec<Value>,
}

impl McpStdio {
    fn start(dir: &Path, idx: &Path) -> McpStdio {
        let mut child = uffs()
            .args(["mcp", "--index", path_str(idx)])
            .env("UFFS_RUNTIME_DIR", dir.join("run"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start uffs mcp");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        McpStdio {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(bytes).unwrap();
        w.write_all(b"\n").unwrap();
        w.flush().unwrap();
    }

    /// The next message with `id`, skipping others (each must be JSON-RPC).
    fn answer(&mut self, id: &Value) -> Value {
        self.next(|v| v["id"] == *id, id)
    }

    /// The JSON-RPC error that refuses the request with `id`: with that id, or with a null one when the server
    /// could not take the message far enough to read its id.
    fn refusal(&mut self, id: &Value) -> Value {
        let v = self.next(
            |v| v["id"] == *id || (v["id"].is_null() && v.get("error").is_some()),
            id,
        );
        assert!(v["error"]["code"].is_i64(), "{v}");
        v
    }

    fn next(&mut self, want: impl Fn(&Value) -> bool, id: &Value) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(HANG)
                .unwrap_or_else(|_| panic!("no answer to id {id}: a hang or an end"));
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{v}");
            self.seen.push(v["id"].clone());
            if want(&v) {
                return v;
            }
        }
    }
}

impl Drop for McpStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mcp_over_stdio_refuses_oversized_and_invalid_messages() {
    let dir = scratch("mcp-stdio-hostile");
    let idx = xp_index(&dir);
    let mut m = McpStdio::start(&dir, &idx);
    m.send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}"#);
    assert_eq!(m.answer(&json!(1))["result"]["serverInfo"]["name"], "uffs");
    m.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let count = |m: &mut McpStdio, id: u64| {
        m.send(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"count","arguments":{{"query":"ext:dll"}}}}}}"#)
                .as_bytes(),
        );
        let v = m.answer(&json!(id));
        assert_eq!(v["result"]["structuredContent"]["found"], 1653, "{v}");
    };
    count(&mut m, 2);
    let before = rss_kib(m.child.id());

    // Lines that are not JSON-RPC at all: dropped (no id to answer), and the server goes on.
    for junk in [
        &b"this is not json"[..],
        b"\xff\xfe\xfd",
        b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\xff\"}",
        b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        b"{\"hello\":\"world\"}",
        b"42",
        b"",
    ] {
        m.send(junk);
    }
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    m.send(deep.as_bytes());
    count(&mut m, 4);
    // Requests with an id that the server cannot do: a JSON-RPC error (with that id where it could read it).
    m.send(br#"{"jsonrpc":"2.0","id":5,"method":"no/such/method"}"#);
    assert!(m.answer(&json!(5))["error"]["code"].is_i64());
    m.send(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":"x"}"#);
    m.refusal(&json!(6));
    m.send(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","arguments":{"query":5}}}"#);
    let v = m.answer(&json!(7));
    assert!(
        v["error"]["code"].is_i64() || v["result"]["isError"] == true,
        "{v}"
    );

    // Oversized lines (a valid call padded with spaces, 2 MiB and 24 MiB): dropped unread past the limit.
    for size in [2usize << 20, 24 << 20] {
        let padded = format!(
            "{}{}",
            " ".repeat(size),
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"count","arguments":{"query":"*"}}}"#
        );
        m.send(padded.as_bytes());
    }
    count(&mut m, 9);
    let after = rss_kib(m.child.id());
    eprintln!("uffs mcp RSS before the junk: {before} KiB; after: {after} KiB");
    assert!(
        after <= before + 8 * 1024,
        "memory grew from {before} KiB to {after} KiB"
    );
    count(&mut m, 10);
    // No answer came for the oversized calls (id 8): they were dropped, not read.
    assert!(
        !m.seen.contains(&json!(8)),
        "an oversized line was answered: {:?}",
        m.seen
    );
    // Its input closed, it ends, cleanly.
    drop(m.stdin.take());
    let t = Instant::now();
    loop {
        if let Some(st) = m.child.try_wait().unwrap() {
            assert!(st.success(), "{st}");
            break;
        }
        assert!(
            t.elapsed() < HANG,
            "uffs mcp did not end when its input closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
