//! Talking to the daemon: connect, send one request, read the answer's lines.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use crate::ipc::{self, Conn};
use crate::protocol::{Request, Response};
use crate::{msg, Result};

/// Connects to the daemon of this user; `Ok(None)` when none is running.
pub fn connect(runtime: &Path) -> Result<Option<Conn>> {
    ipc::connect(runtime)
}

/// Sends `req` and calls `each` for every answer line until the last one, which is returned.
pub fn request(
    conn: Conn,
    req: &Request,
    mut each: impl FnMut(&Response) -> Result<()>,
) -> Result<Response> {
    let mut line = serde_json::to_vec(req).map_err(|e| msg(e.to_string()))?;
    line.push(b'\n');
    // A daemon that stops answering (killed mid-query, stuck) must not hang the client for ever.
    conn.set_read_timeout(Some(std::time::Duration::from_secs(60)))?;
    (&conn).write_all(&line)?;
    let mut r = BufReader::with_capacity(1 << 16, &conn);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf)? == 0 {
            return Err(msg("the daemon closed the connection before answering"));
        }
        let resp: Response = serde_json::from_slice(&buf)
            .map_err(|e| msg(format!("unreadable answer from the daemon: {e}")))?;
        match resp {
            Response::Out(_) | Response::Bytes(_) => each(&resp)?,
            last => return Ok(last),
        }
    }
}
