//! Talking to the daemon: connect, send one request, read the answer's lines.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::path::Path;
use std::time::Duration;

use crate::ipc::{self, Conn};
use crate::protocol::{Request, Response};
use crate::{msg, Result};

/// Connects to the daemon of this user; `Ok(None)` when none is running.
pub fn connect(runtime: &Path) -> Result<Option<Conn>> {
    ipc::connect(runtime)
}

/// Connects to the system daemon (root's, `uffs daemon start --system`), when one runs: its runtime directory must
/// be root's and closed to others' writes, so that what listens there is root's.
pub fn connect_system() -> Option<Conn> {
    let dir = crate::dirs::system_runtime_dir();
    #[cfg(unix)]
    if crate::dirs::owned_and_closed(&dir, 0).is_ok() {
        return ipc::connect(&dir).ok().flatten();
    }
    let _ = dir;
    None
}

/// How long a client waits for each line of an answer: a daemon that stops answering (killed mid-query, stuck)
/// must not hang it for ever.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// Sends `req` and calls `each` for every answer line until the last one, which is returned.
pub fn request(
    conn: Conn,
    req: &Request,
    each: impl FnMut(&Response) -> Result<()>,
) -> Result<Response> {
    request_within(conn, req, ANSWER_TIMEOUT, each)
}

/// [`request`], waiting up to `wait` for each line (a refresh that applies a large change takes longer than a
/// query).
pub fn request_within(
    conn: Conn,
    req: &Request,
    wait: Duration,
    mut each: impl FnMut(&Response) -> Result<()>,
) -> Result<Response> {
    let mut line = serde_json::to_vec(req).map_err(|e| msg(e.to_string()))?;
    line.push(b'\n');
    conn.set_read_timeout(Some(wait))?;
    (&conn).write_all(&line)?;
    let mut r = BufReader::with_capacity(1 << 16, &conn);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // A timed-out read is EAGAIN on Unix ("Resource temporarily unavailable"): say what happened.
        let n = r.read_until(b'\n', &mut buf).map_err(|e| match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => msg(format!(
                "the daemon did not answer within {} s (busy or stuck; `uffs daemon status` shows its volumes)",
                wait.as_secs()
            )),
            _ => e.into(),
        })?;
        if n == 0 {
            return Err(msg("the daemon closed the connection before answering"));
        }
        let resp: Response = serde_json::from_slice(&buf)
            .map_err(|e| msg(format!("unreadable answer from the daemon: {e}")))?;
        match resp {
            Response::Out(_) | Response::Bytes(_) | Response::Warning(_) => each(&resp)?,
            last => return Ok(last),
        }
    }
}
