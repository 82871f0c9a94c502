//! What every request must pass before it is answered: a known Host (against DNS rebinding), an Origin that
//! is the server's own if there is one (against cross-site requests), and the token. Also the headers every
//! response carries (no caching, no referrer, no framing).

use std::net::SocketAddr;
use std::sync::Arc;

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
        // Compared in time independent of where they differ.
        let (a, b) = (given.as_bytes(), self.0.token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// The middleware: refuses what fails a check with 403 (414 for an oversized URI), else passes the request on
/// and adds the security headers to the answer.
pub async fn check(State(g): State<Guard>, req: Request, next: Next) -> Response {
    if let Err(r) = admit(&g, &req) {
        return with_headers(r.into_response());
    }
    with_headers(next.run(req).await)
}

fn admit(g: &Guard, req: &Request) -> Result<(), Reject> {
    let uri_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if uri_len > MAX_URI_BYTES {
        return Err(refuse(
            StatusCode::URI_TOO_LONG,
            &format!("the request's address is longer than {MAX_URI_BYTES} bytes"),
        ));
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
