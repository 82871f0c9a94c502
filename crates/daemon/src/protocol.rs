//! The daemon's protocol: one JSON request per connection, on one line; the answer is JSON lines.
//!
//! Requests: `{"op":"query","request":{…},"terminal":false}` (a [`uffs_search::SearchRequest`]),
//! `{"op":"status"}`, `{"op":"reload"}` (re-read the registry, check every source for changes and rebuild
//! what changed), `{"op":"refresh","name":"D"}` (apply changes now), `{"op":"dataset","dir":"/lake","host":"pc1","keep":true}`
//! (write every volume into a Parquet dataset, and again after each update), `{"op":"stop"}`, `{"op":"ping"}`.
//!
//! Answers: a query streams `{"out":"…"}` lines (printed output, in pieces of at most [`CHUNK`] bytes) and ends
//! with `{"done":{"found":N}}`; anything else answers one line. A failure is `{"error":"…"}`, a request the
//! client should correct `{"refused":"…"}`, and no volume to answer from `{"unavailable":"…"}`: always the last
//! line.
//!
//! Binary output (`--format parquet`): a query sent with `"binary":true` streams `{"bytes":"…"}` lines instead
//! of `out` ones, each a piece of at most [`CHUNK`] bytes of the output in standard base64 (with padding); the
//! client decodes them and writes the bytes in order (the Parquet file, to the client's `-o FILE` or pipe).
//! The text protocol is unchanged, and a client that never asks for binary output never sees a `bytes` line.

use std::io::{self, BufRead, Write};

use base64::Engine;
use serde::{Deserialize, Serialize};

/// The longest request accepted, newline included.
pub const MAX_REQUEST: usize = 64 * 1024;
/// Output bytes per `out` line.
pub const CHUNK: usize = 32 * 1024;

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum Request {
    Query {
        /// The search (`docs/protocol.md`).
        request: Box<uffs_search::SearchRequest>,
        #[serde(default)]
        terminal: bool,
        /// The output is binary (Parquet): answer with `bytes` lines rather than `out` ones.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        binary: bool,
        /// A number the client chose, by which a `cancel` on another connection stops this search reading
        /// files' data (its own client went away).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cancel_id: Option<u64>,
    },
    /// Stop reading files' data for the running query sent with this `cancel_id`; `ok` whether or not one runs.
    Cancel {
        id: u64,
    },
    // Braces, not unit variants: serde refuses unknown fields only in struct-like variants.
    Status {},
    Reload {},
    /// Check volumes for changes now and apply them (all volumes, or the one named); answers with one `out`
    /// line per volume saying what was done, then `done` with the number of changed records applied.
    Refresh {
        #[serde(default)]
        name: Option<String>,
    },
    /// Write every loaded volume into a Parquet dataset now (`dir`, absolute; `host`, already safe), answering
    /// one `out` line per volume, then `done` with the number written; `changes` (absolute): also each volume's
    /// change set since the dataset last held it; `keep`: and again after each update of a volume. `forget`: stop
    /// keeping a dataset current (nothing is written).
    Dataset {
        #[serde(default)]
        dir: Option<String>,
        #[serde(default)]
        host: Option<String>,
        #[serde(default)]
        changes: Option<String>,
        #[serde(default)]
        keep: bool,
        #[serde(default)]
        forget: bool,
    },
    Stop {},
    Ping {},
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VolumeStatus {
    pub name: String,
    pub source: String,
    /// `ready`, `stale (rebuilding)`, `building`, `error: …`
    pub state: String,
    pub entries: u64,
    /// Size of the index file (mapped; pages are resident only while used).
    pub index_bytes: u64,
    /// When the index was built or last updated (FILETIME, UTC), 0 when there is none.
    pub built_at: u64,
    /// How changes are followed: `journal <id> at USN <n>, checked every 5 s`, `re-scan every 5 s`, `never`.
    #[serde(default)]
    pub follow: String,
    /// When changes were last applied (FILETIME, UTC), 0 when never since the daemon started.
    #[serde(default)]
    pub updated_at: u64,
    /// Changed records applied by the last update, and by all updates since the daemon started.
    #[serde(default)]
    pub last_changes: u64,
    #[serde(default)]
    pub total_changes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub pid: u32,
    /// Resident memory of the daemon process.
    pub rss_bytes: u64,
    pub uptime_ms: u64,
    pub queries: u64,
    pub volumes: Vec<VolumeStatus>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Response {
    Out(String),
    /// A piece of binary output, in base64 (see the module's documentation).
    Bytes(String),
    Done {
        found: u64,
    },
    /// Something the answer lacks (files whose data could not be read, a volume whose source is not at hand),
    /// sent before `done`: the client says it and the answer is partial (the CLI's exit status 3).
    Warning(String),
    /// A failure: reading an index, an unreadable request line.
    Error(String),
    /// The request is wrong (a bad query, an unknown column, volume or folder): the client can correct it.
    Refused(String),
    /// Nothing to answer from now (no volume ready): asking later may work.
    Unavailable(String),
    Status(Status),
    Ok(bool),
}

/// Reads one request line of at most [`MAX_REQUEST`] bytes. `Ok(None)` when the client closed without one.
pub fn read_request<R: BufRead>(r: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let n = std::io::Read::take(r, MAX_REQUEST as u64).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        let why = if line.len() >= MAX_REQUEST {
            format!("request longer than {MAX_REQUEST} bytes")
        } else {
            "request not terminated by a newline".into()
        };
        return Err(io::Error::new(io::ErrorKind::InvalidData, why));
    }
    line.pop();
    Ok(Some(line))
}

pub fn parse_request(line: &[u8]) -> Result<Request, String> {
    serde_json::from_slice(line).map_err(|e| format!("bad request: {e}"))
}

/// The bytes of a `bytes` line.
pub fn decode_bytes(s: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| format!("bad bytes from the daemon: {e}"))
}

pub fn send(w: &mut impl Write, r: &Response) -> io::Result<()> {
    let mut line = serde_json::to_vec(r).map_err(io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line)
}

/// Turns printed output into `out` lines. Pieces end on a character boundary, so each is valid UTF-8. A write
/// that fails because the client went away is reported as an error (not as a quiet broken pipe), so the query
/// stops.
pub struct OutWriter<W: Write> {
    inner: W,
    buf: Vec<u8>,
    /// Pieces are `bytes` lines in base64 rather than `out` lines of text.
    binary: bool,
}

impl<W: Write> OutWriter<W> {
    pub fn new(inner: W) -> Self {
        OutWriter {
            inner,
            buf: Vec::with_capacity(CHUNK + 8),
            binary: false,
        }
    }

    /// A writer of binary output: `bytes` lines.
    pub fn binary(inner: W) -> Self {
        OutWriter {
            binary: true,
            ..OutWriter::new(inner)
        }
    }

    fn emit(&mut self, all: bool) -> io::Result<()> {
        if self.binary {
            while self.buf.len() >= CHUNK || (all && !self.buf.is_empty()) {
                let take = self.buf.len().min(CHUNK);
                let text = base64::engine::general_purpose::STANDARD.encode(&self.buf[..take]);
                send(&mut self.inner, &Response::Bytes(text)).map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        format!("client went away: {e}"),
                    )
                })?;
                self.buf.drain(..take);
            }
            return Ok(());
        }
        while self.buf.len() >= CHUNK || (all && !self.buf.is_empty()) {
            let take = self.buf.len().min(CHUNK);
            let cut = match std::str::from_utf8(&self.buf[..take]) {
                Ok(_) => take,
                // An incomplete character at the end waits for the next piece.
                Err(e) if e.error_len().is_none() && e.valid_up_to() > 0 => e.valid_up_to(),
                Err(_) => take,
            };
            let text = String::from_utf8_lossy(&self.buf[..cut]).into_owned();
            send(&mut self.inner, &Response::Out(text)).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    format!("client went away: {e}"),
                )
            })?;
            self.buf.drain(..cut);
            if cut < take && !all {
                break;
            }
        }
        Ok(())
    }

    /// Sends what is left and returns the stream.
    pub fn finish(mut self) -> io::Result<W> {
        self.emit(true)?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for OutWriter<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= CHUNK {
            self.emit(false)?;
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_refuse() {
        assert!(matches!(
            parse_request(br#"{"op":"ping"}"#),
            Ok(Request::Ping {})
        ));
        assert!(matches!(
            parse_request(br#"{"op":"cancel","id":7}"#),
            Ok(Request::Cancel { id: 7 })
        ));
        assert!(parse_request(br#"{"op":"cancel"}"#).is_err());
        assert!(parse_request(br#"{"op":"nope"}"#).is_err());
        assert!(parse_request(br#"{"op":"ping","x":1}"#).is_err());
        assert!(parse_request(b"\xff\xfe").is_err());
        let deep = "[".repeat(10_000);
        assert!(parse_request(deep.as_bytes()).is_err());
    }

    #[test]
    fn long_and_unterminated_requests_are_refused() {
        let long = vec![b'a'; MAX_REQUEST + 10];
        assert!(read_request(&mut &long[..]).is_err());
        assert!(read_request(&mut &b"{\"op\":\"ping\"}"[..]).is_err());
        assert_eq!(read_request(&mut &b""[..]).unwrap(), None);
        assert_eq!(read_request(&mut &b"x\n"[..]).unwrap(), Some(b"x".to_vec()));
    }

    #[test]
    fn binary_output_goes_as_base64_pieces() {
        let mut w = OutWriter::binary(Vec::new());
        let data: Vec<u8> = (0..CHUNK * 2 + 5).map(|i| (i * 7) as u8).collect();
        w.write_all(&data).unwrap();
        let out = w.finish().unwrap();
        let mut joined = Vec::new();
        for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match serde_json::from_slice::<Response>(line).unwrap() {
                Response::Bytes(s) => joined.extend(decode_bytes(&s).unwrap()),
                r => panic!("unexpected {r:?}"),
            }
        }
        assert_eq!(joined, data);
    }

    #[test]
    fn output_pieces_keep_characters_whole() {
        let mut w = OutWriter::new(Vec::new());
        let text = "é".repeat(CHUNK); // two bytes each: pieces must not split one
        w.write_all(text.as_bytes()).unwrap();
        let out = w.finish().unwrap();
        let mut joined = String::new();
        for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match serde_json::from_slice::<Response>(line).unwrap() {
                Response::Out(s) => joined.push_str(&s),
                r => panic!("unexpected {r:?}"),
            }
        }
        assert_eq!(joined, text);
    }
}
