//! The daemon's protocol: any bytes as what a client sends on a connection, read and answered as the daemon
//! answers them (its request reading, parsing and handling, without the socket): never a panic, and the answer
//! is JSON lines, each a response, the last one the answer's end (`done`, `error`, `refused`, `unavailable`,
//! `status` or `ok`), or nothing when no request came. A query's request is checked and compiled as every search
//! request is (`uffs_search`); the daemon has no volumes loaded, so a good one is answered `unavailable`.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use uffs_daemon::protocol::{Response, MAX_REQUEST};
use uffs_daemon::server::{Config, Offline};

fn daemon() -> &'static Offline {
    static DAEMON: OnceLock<Offline> = OnceLock::new();
    DAEMON.get_or_init(|| {
        // One place for every run (and every job of a run): the directories stay empty, only read.
        let dir = std::env::temp_dir().join("uffs-fuzz-daemon");
        let (cache, runtime) = (dir.join("cache"), dir.join("run"));
        for d in [&cache, &runtime] {
            std::fs::create_dir_all(d).expect("a scratch directory");
        }
        Offline::new(Config { cache, runtime, exe: PathBuf::from("/nonexistent/uffs") })
    })
}

fuzz_target!(|data: &[u8]| {
    let out = daemon().answer(data);
    let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
    // Every line ends with a newline: the last piece is empty.
    assert_eq!(lines.last(), Some(&&b""[..]), "an unterminated answer line");
    let lines = &lines[..lines.len() - 1];
    if lines.is_empty() {
        // Nothing is answered only when nothing was asked.
        assert!(data.is_empty(), "no answer to {} bytes", data.len());
        return;
    }
    for (i, l) in lines.iter().enumerate() {
        let r: Response = serde_json::from_slice(l).unwrap_or_else(|e| panic!("answer line {i} is not a response: {e}"));
        let last = i + 1 == lines.len();
        let ends = matches!(
            r,
            Response::Done { .. }
                | Response::Error(_)
                | Response::Refused(_)
                | Response::Unavailable(_)
                | Response::Status(_)
                | Response::Ok(_)
        );
        assert_eq!(ends, last, "line {i} of {}: {r:?}", lines.len());
        if let Response::Out(s) = &r {
            assert!(s.len() <= uffs_daemon::protocol::CHUNK);
        }
    }
    // What is not one line of at most MAX_REQUEST bytes is refused.
    let first = data.iter().position(|&b| b == b'\n');
    if first.is_none_or(|n| n >= MAX_REQUEST) {
        assert!(out.starts_with(b"{\"error\":\"bad request"), "{}", String::from_utf8_lossy(&out));
    }
});
