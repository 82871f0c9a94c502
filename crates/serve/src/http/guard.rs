//! What every request must pass before it is answered: an address that decodes to UTF-8 text, a known Host
//! (against DNS rebinding), an Origin that is the server's own if there is one (against cross-site requests),
//! and the token; then, for the MCP server, its body, read whole within a time and a size. Also the headers
//! every response carries (no caching, no referrer, no framing).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::api::Reject;
use super::Error;

/// A request's URI (path and query) may be at most this long.
const MAX_URI_BYTES: usize = 8 * 1024;
/// A request's body may be at most this long.
const MAX_BODY_BYTES: u64 = 4 << 20;
/// A request's body must arrive within this (from the end of its head): a client that declares a body and
/// sends it slowly or never holds a connection this long at most.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// 32 random bytes as 64 hex digits.
pub fn new_token() -> Result<String, Error> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| Error::Random(e.to_string()))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

#[derive(Clone)]
pub struct Guard(Arc<Inner>);

struct Inner {
    token: String,
    /// Host header values admitted (lower case, with the port).
    hosts: Vec<String>,
    /// Bound to every address with --allow-remote: any Host with our port (the token still decides).
    any_host: bool,
    port: u16,
}

impl Guard {
    pub fn new(token: &str, addr: SocketAddr, allow_remote: bool) -> Guard {
        let port = addr.port();
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .map(|h| format!("{h}:{port}"))
            .collect();
        if !addr.ip().is_unspecified() {
            hosts.push(addr.to_string().to_ascii_lowercase());
        }
        Guard(Arc::new(Inner {
            token: token.to_string(),
            hosts,
            any_host: allow_remote && addr.ip().is_unspecified(),
            port,
        }))
    }

    fn host_ok(&self, host: &str) -> bool {
        let h = host.to_ascii_lowercase();
        self.0.hosts.contains(&h)
            || (self.0.any_host
                && h.rsplit_once(':').map(|(_, p)| p) == Some(&self.0.port.to_string()))
    }

    fn token_ok(&self, given: &str) -> bool {
        token_eq(given.as_bytes(), self.0.token.as_bytes())
    }
}

/// Whether `given` is `token`, in time that depends on `token`'s length only: every byte of the token is
/// compared (against a zero where `given` is shorter) and the differences are OR-ed together, with no early
/// exit on the first difference or on a difference in length.
fn token_eq(given: &[u8], token: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != token.len());
    for (i, t) in token.iter().enumerate() {
        diff |= t ^ given.get(i).copied().unwrap_or(0);
    }
    // Kept opaque to the optimizer, which could otherwise turn the loop into one that stops early.
    std::hint::black_box(diff) == 0
}

/// The middleware: refuses what fails a check (400 for an address or header that is not text, 414 for an
/// oversized address, 403 for a stranger, 413 or 408 for a body too large or too slow), else passes the
/// request on (with its body read, where one is taken) and adds the security headers to the answer.
pub async fn check(State(g): State<Guard>, req: Request, next: Next) -> Response {
    if let Err(r) = admit(&g, &req) {
        return with_headers(r.into_response());
    }
    // Only the MCP server takes a body. Elsewhere it is never read: the answer does not wait for it, and
    // hyper closes a connection whose request body was left unread once it has answered.
    let path = req.uri().path();
    let req = if path == "/mcp" || path.starts_with("/mcp/") {
        match read_body(req).await {
            Ok(r) => r,
            Err(r) => return with_headers(r.into_response()),
        }
    } else {
        req
    };
    with_headers(next.run(req).await)
}

/// Reads the request's body whole, at most [`MAX_BODY_BYTES`] within [`BODY_TIMEOUT`], so that no handler
/// waits on a client that sends it slowly or never.
async fn read_body(req: Request) -> Result<Request, Reject> {
    let (parts, mut body) = req.into_parts();
    if body.is_end_stream() {
        return Ok(Request::from_parts(parts, body));
    }
    let read = async {
        let mut bytes = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            let frame = frame
                .map_err(|e| bad_request(&format!("the request's body could not be read: {e}")))?;
            if let Ok(data) = frame.into_data() {
                if (bytes.len() + data.len()) as u64 > MAX_BODY_BYTES {
                    return Err(refuse(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &format!("the request's body is larger than {MAX_BODY_BYTES} bytes"),
                    ));
                }
                bytes.extend_from_slice(&data);
            }
        }
        Ok(bytes)
    };
    match tokio::time::timeout(BODY_TIMEOUT, read).await {
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, Body::from(bytes))),
        Ok(Err(r)) => Err(r),
        Err(_) => Err(refuse(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the request's body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// Whether `s` percent-decodes (as a path, or as a form-encoded query) to UTF-8.
fn decodes_to_utf8(s: &str) -> bool {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    std::str::from_utf8(&out).is_ok()
}

fn bad_request(msg: &str) -> Reject {
    refuse(StatusCode::BAD_REQUEST, msg)
}

fn admit(g: &Guard, req: &Request) -> Result<(), Reject> {
    let uri_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if uri_len > MAX_URI_BYTES {
        return Err(refuse(
            StatusCode::URI_TOO_LONG,
            &format!("the request's address is longer than {MAX_URI_BYTES} bytes"),
        ));
    }
    // Bytes that are not text are refused here, once, rather than searched for as U+FFFD or matched against
    // nothing by each handler.
    if !decodes_to_utf8(req.uri().path()) || !req.uri().query().is_none_or(decodes_to_utf8) {
        return Err(bad_request(
            "the request's address does not decode to UTF-8 text",
        ));
    }
    for name in [header::HOST, header::ORIGIN, header::AUTHORIZATION] {
        if req
            .headers()
            .get_all(&name)
            .iter()
            .any(|v| v.to_str().is_err())
        {
            return Err(bad_request(&format!("the {name} header is not text")));
        }
    }
    // Bodies (only the MCP server takes any) are bounded by what they declare; chunked ones by the service.
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request's body is larger than {MAX_BODY_BYTES} bytes"),
        ));
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !g.host_ok(host) {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            &format!("forbidden: Host {host:?} is not this server; open the address `uffs serve` printed"),
        ));
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let own = format!("http://{host}");
        let ok = origin.to_str().is_ok_and(|o| o.eq_ignore_ascii_case(&own));
        if !ok {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "forbidden: the request comes from another web site (Origin)",
            ));
        }
    }
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim);
    // The page itself may carry the token in its address (the URL printed at start); its script then sends
    // the header. Nothing else takes the token from the address, where it would end in logs and histories.
    let in_query = || {
        (req.method() == Method::GET || req.method() == Method::HEAD)
            && req.uri().path() == "/"
            && req
                .uri()
                .query()
                .unwrap_or("")
                .split('&')
                .filter_map(|kv| kv.strip_prefix("token="))
                .any(|t| g.token_ok(t))
    };
    if bearer.is_some_and(|t| g.token_ok(t)) || in_query() {
        return Ok(());
    }
    Err(refuse(
        StatusCode::FORBIDDEN,
        "forbidden: a missing or wrong token; open the address `uffs serve` printed (with ?token=), or send `Authorization: Bearer TOKEN` (the token is in the runtime directory's serve-PORT.token)",
    ))
}

fn refuse(status: StatusCode, msg: &str) -> Reject {
    Reject(status, msg.to_string())
}

fn with_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The page's address holds the token: it must never travel as a Referer.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    r.into_response()
}
