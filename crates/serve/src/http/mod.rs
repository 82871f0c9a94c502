//! `uffs serve`: the HTTP API (JSON) and the web page built into the binary, answering from a [`Backend`].
//!
//! The server binds loopback unless told otherwise, and every request must carry the token made at start
//! (see `guard`): the Host and Origin headers are checked too, so that another web site open in the user's
//! browser can neither read the API (DNS rebinding) nor act through it (CSRF). The accept loop is ours, not
//! `axum::serve`, to bound what a client can hold: connections, time to send headers, header sizes. When
//! every connection is taken, the oldest one that is not in a request (idle, still sending its head, or not
//! reading its answer) is closed for the newcomer, so clients that hold connections open cannot keep others
//! out; the guard bounds the time and size of bodies.

mod api;
mod guard;
mod page;

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;

use crate::Backend;

/// At most this many connections at once: past it, the oldest connection not in a request is closed for a new
/// one, and when all are in requests, new ones wait in the kernel's backlog.
const MAX_CONNECTIONS: usize = 256;
/// A client must send a request's headers within this.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection's read buffer, and so the largest request head (request line and headers) it takes.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{addr} is not a loopback address: anyone who can reach it could try tokens; pass --allow-remote to bind it anyway")]
    NotLoopback { addr: SocketAddr },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot make a token: {0}")]
    Random(String),
    #[error("cannot write the token file {}: {source}", path.display())]
    TokenFile {
        path: PathBuf,
        source: std::io::Error,
    },
    // The io error follows as the source: "server: <what failed>", said once.
    #[error("server")]
    Io(#[from] std::io::Error),
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on; port 0 picks a free one.
    pub bind: SocketAddr,
    /// Allow an address other than loopback.
    pub allow_remote: bool,
    /// The user's private runtime directory, where the token is written (`serve-PORT.token`).
    pub runtime_dir: PathBuf,
}

/// A bound server, not yet serving: its address, token and URL are known, so the caller can print them first.
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    token: String,
    token_file: PathBuf,
    allow_remote: bool,
}

impl Server {
    /// Binds the address and makes the token (stored in the runtime directory, readable by the user only).
    pub fn bind(opts: &Options) -> Result<Server, Error> {
        if !opts.bind.ip().is_loopback() && !opts.allow_remote {
            return Err(Error::NotLoopback { addr: opts.bind });
        }
        let listener = TcpListener::bind(opts.bind).map_err(|source| Error::Bind {
            addr: opts.bind,
            source,
        })?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let token = guard::new_token()?;
        let token_file = opts
            .runtime_dir
            .join(format!("serve-{}.token", addr.port()));
        write_private(&token_file, token.as_bytes()).map_err(|source| Error::TokenFile {
            path: token_file.clone(),
            source,
        })?;
        Ok(Server {
            listener,
            addr,
            token,
            token_file,
            allow_remote: opts.allow_remote,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page's address with the token: what the user opens.
    pub fn url(&self) -> String {
        let host = if self.addr.ip().is_unspecified() {
            // Bound everywhere: loopback is one of the addresses, and the one the Host check always admits.
            SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), self.addr.port())
        } else {
            self.addr
        };
        format!("http://{host}/?token={}", self.token)
    }

    pub fn token_file(&self) -> &Path {
        &self.token_file
    }

    /// Serves until interrupted (Ctrl-C, or SIGTERM on Unix), then removes the token file.
    pub fn run(self, backend: Arc<dyn Backend>) -> Result<(), Error> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(64)
            .enable_all()
            .thread_name("uffs-serve")
            .build()?;
        let token_file = self.token_file.clone();
        let result = rt.block_on(async move {
            tokio::select! {
                r = self.accept_loop(backend) => r,
                _ = stopped() => Ok(()),
            }
        });
        let _ = std::fs::remove_file(&token_file);
        // Backend calls still running on blocking threads are not waited for.
        rt.shutdown_timeout(Duration::from_millis(100));
        result
    }

    async fn accept_loop(self, backend: Arc<dyn Backend>) -> Result<(), Error> {
        let listener = tokio::net::TcpListener::from_std(self.listener)?;
        let state = api::App::new(
            backend,
            guard::Guard::new(&self.token, self.addr, self.allow_remote),
        );
        let app = router(state);
        let open = Arc::new(Mutex::new(Open::default()));
        loop {
            let stream = match listener.accept().await {
                Ok((s, _)) => s,
                // Out of descriptors, a connection reset before it was taken: wait a little and go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            };
            // A place for it: free, or made by closing the oldest connection not in a request; with every
            // connection in a request (each bounded in time), wait for one to end.
            while !lock(&open).make_room() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let _ = stream.set_nodelay(true);
            let conn = Arc::new(Conn::default());
            let id = lock(&open).add(conn.clone());
            let inner = TowerToHyperService::new(app.clone());
            let busy = conn.clone();
            // A request is in progress from its head to its answer's head: its body is read (by the guard) and
            // its answer made in that time. Writing the answer to a client that does not read it is not.
            let service = hyper::service::service_fn(move |req| {
                let in_request = InRequest::new(&busy);
                let answer = hyper::service::Service::call(&inner, req);
                async move {
                    let r = answer.await;
                    drop(in_request);
                    r
                }
            });
            let open = open.clone();
            tokio::spawn(async move {
                if let Some(why) = bad_target(&stream).await {
                    answer_bad_target(stream, &why).await;
                    lock(&open).remove(id);
                    return;
                }
                let serving = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .max_buf_size(MAX_HEAD_BYTES)
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades();
                tokio::select! {
                    _ = serving => {}
                    _ = conn.shed.notified() => {}
                }
                lock(&open).remove(id);
            });
        }
    }
}

/// Why the first request on `stream` has an address hyper refuses with an empty answer (a character an address
/// may not hold, as an un-encoded `>` typed in a query: `/api/search?q=size:>1mb`), when it has one. Looks at
/// the request line without taking it; a line not complete in the first bytes is left to hyper.
async fn bad_target(stream: &tokio::net::TcpStream) -> Option<String> {
    let mut head = [0u8; 4096];
    let n = tokio::time::timeout(HEADER_TIMEOUT, stream.peek(&mut head))
        .await
        .ok()?
        .ok()?;
    let line = head[..n].split(|&b| b == b'\n').next()?;
    if line.len() == n {
        return None;
    }
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut words = line.split(' ');
    let (_method, target, version) = (words.next()?, words.next()?, words.next()?);
    if !version.starts_with("HTTP/") || target.parse::<axum::http::Uri>().is_ok() {
        return None;
    }
    let bad = target
        .chars()
        .find(|c| format!("/{c}").parse::<axum::http::Uri>().is_err())?;
    Some(format!(
        "the address holds `{bad}`, which must be percent-encoded ({}): encode the query's value, as \
         `curl --get --data-urlencode 'q=...'` or JavaScript's encodeURIComponent do",
        bad.to_string()
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect::<String>()
    ))
}

/// Answers 400 with `why` as the API's errors are (`{"error": ...}`), and closes the connection.
async fn answer_bad_target(mut stream: tokio::net::TcpStream, why: &str) {
    use tokio::io::AsyncWriteExt;
    let body = serde_json::json!({ "error": why }).to_string();
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nx-content-type-options: nosniff\r\nreferrer-policy: no-referrer\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(HEADER_TIMEOUT, stream.write_all(answer.as_bytes())).await;
    let _ = stream.shutdown().await;
}

/// A connection being served.
#[derive(Default)]
struct Conn {
    /// Requests in progress on it (0 or 1: HTTP/1 answers one at a time).
    requests: AtomicUsize,
    /// Told to close it for a newer connection.
    shed: tokio::sync::Notify,
}

/// Marks a connection's request as in progress while it lives.
struct InRequest(Arc<Conn>);

impl InRequest {
    fn new(c: &Arc<Conn>) -> InRequest {
        c.requests.fetch_add(1, Ordering::SeqCst);
        InRequest(c.clone())
    }
}

impl Drop for InRequest {
    fn drop(&mut self) {
        self.0.requests.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The open connections, oldest first.
#[derive(Default)]
struct Open {
    next: u64,
    conns: BTreeMap<u64, Arc<Conn>>,
}

impl Open {
    /// Whether there is room for one more connection, after closing the oldest one not in a request if need be.
    fn make_room(&mut self) -> bool {
        if self.conns.len() < MAX_CONNECTIONS {
            return true;
        }
        let idle = self
            .conns
            .iter()
            .find(|(_, c)| c.requests.load(Ordering::SeqCst) == 0)
            .map(|(&id, _)| id);
        match idle.and_then(|id| self.conns.remove(&id)) {
            Some(c) => {
                // Stored if the task is not waiting yet: it closes as soon as it looks.
                c.shed.notify_one();
                true
            }
            None => false,
        }
    }

    fn add(&mut self, c: Arc<Conn>) -> u64 {
        self.next += 1;
        self.conns.insert(self.next, c);
        self.next
    }

    fn remove(&mut self, id: u64) {
        self.conns.remove(&id);
    }
}

fn lock(open: &Mutex<Open>) -> std::sync::MutexGuard<'_, Open> {
    open.lock().unwrap_or_else(|e| e.into_inner())
}

/// Resolves when the process is asked to stop.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Every route, behind the guard (Host, Origin, token) and with the security headers.
fn router(state: api::App) -> Router {
    let guard = state.guard.clone();
    Router::new()
        .route("/", axum::routing::get(page::index))
        .merge(api::routes())
        // The MCP server (streamable HTTP), behind the same guard and token; a body that is not a JSON-RPC
        // message is answered with a JSON-RPC error before it reaches it.
        .nest_service(
            "/mcp",
            Router::new()
                .fallback_service(crate::mcp::http_service(state.backend.clone()))
                .layer(axum::middleware::from_fn(crate::mcp::check_http_body)),
        )
        .fallback(api::not_found)
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
}

/// Writes `bytes` to `path`, readable and writable by the user only (on Windows, the runtime directory in the
/// user's profile is closed to others already).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let _ = std::fs::remove_file(path);
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path)?;
    f.write_all(bytes)?;
    f.write_all(b"\n")?;
    f.sync_all()
}
