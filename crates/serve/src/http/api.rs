//! The JSON API: search, count, volumes, status, disk usage and the query syntax, each a call of the
//! [`Backend`] run on a blocking thread, bounded in number and time.
//!
//! `GET /api/search?q=&sort=&reverse=&offset=&limit=&columns=` → `{found, offset, limit, truncated, rows}`
//! `GET /api/count?q=` → `{count}`;  `GET /api/volumes` → `{volumes}`;  `GET /api/status` → the status
//! `GET /api/du?path=&depth=&limit=&sort=` → `{rows}` (each `{size, allocated, files, folders, share, depth,
//! path}`, the folder's own total last);  `GET /api/syntax` → `{help}`.
//! Errors are `{error}` with 400 (a bad request: the message points at the term), 503 (no daemon, no volume),
//! 504 (too slow) or 500.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use uffs_search::{DuRequest, DuSort, Format, OutputArgs, SearchRequest};

use super::guard::Guard;
use crate::{Backend, Error, Stop, StopOnDrop};

/// The most rows one search answers.
pub const MAX_LIMIT: usize = 1000;
/// Rows when the request does not say.
const DEFAULT_LIMIT: usize = 100;
/// Backend calls running at once; more wait for a turn (within the timeout).
const MAX_RUNNING: usize = 8;
/// The longest a request may take, waiting for its turn included.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Columns when the request does not say: what the page shows.
const DEFAULT_COLUMNS: &str = "name,path,size,modified,kind";

#[derive(Clone)]
pub struct App {
    pub backend: Arc<dyn Backend>,
    pub guard: Guard,
    turns: Arc<tokio::sync::Semaphore>,
}

impl App {
    pub fn new(backend: Arc<dyn Backend>, guard: Guard) -> App {
        App {
            backend,
            guard,
            turns: Arc::new(tokio::sync::Semaphore::new(MAX_RUNNING)),
        }
    }

    /// Runs `f` with the backend on a blocking thread, when a turn is free, within the timeout. When this future
    /// ends (answered, timed out) or is dropped (hyper drops a request's future when its client hangs up), the
    /// [`Stop`] given to `f` is set: a search still reading files' data stops reading.
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Backend, &Stop) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Reject> {
        let backend = self.backend.clone();
        let turns = self.turns.clone();
        let stop = Stop::new();
        let _stop_when_gone = StopOnDrop(stop.clone());
        let work = async move {
            let turn = turns.acquire_owned().await.map_err(|_| {
                Reject(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server is stopping".into(),
                )
            })?;
            tokio::task::spawn_blocking(move || {
                let r = f(backend.as_ref(), &stop);
                drop(turn);
                r
            })
            .await
            .map_err(|_| {
                Reject(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the search failed".into(),
                )
            })?
            .map_err(backend_error)
        };
        match tokio::time::timeout(TIMEOUT, work).await {
            Ok(r) => r,
            Err(_) => Err(Reject(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "the request took longer than {} s; try a narrower query",
                    TIMEOUT.as_secs()
                ),
            )),
        }
    }
}

pub fn routes() -> Router<App> {
    Router::new()
        .route("/api/search", get(search))
        .route("/api/count", get(count))
        .route("/api/volumes", get(volumes))
        .route("/api/status", get(status))
        .route("/api/du", get(du))
        .route("/api/syntax", get(syntax))
}

pub async fn not_found() -> Response {
    error_response(StatusCode::NOT_FOUND, "no such page")
}

/// A JSON error answer.
pub fn error_response(status: StatusCode, msg: &str) -> Response {
    json_response(status, json!({ "error": msg }).to_string())
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A refused request: its status and the message the client gets as `{error}`.
#[derive(Debug)]
pub struct Reject(pub StatusCode, pub String);

impl IntoResponse for Reject {
    fn into_response(self) -> Response {
        error_response(self.0, &self.1)
    }
}

fn backend_error(e: Error) -> Reject {
    let status = match e {
        Error::BadRequest(_) => StatusCode::BAD_REQUEST,
        Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        Error::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    Reject(status, e.to_string())
}

fn bad(msg: impl Into<String>) -> Reject {
    Reject(StatusCode::BAD_REQUEST, msg.into())
}

/// The query string's parameters, each at most once.
struct Params(Vec<(String, String)>);

impl Params {
    fn from(
        q: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
    ) -> Result<Params, Reject> {
        let Query(v) = q.map_err(|e| bad(format!("bad parameters: {e}")))?;
        for (i, (k, _)) in v.iter().enumerate() {
            if v[..i].iter().any(|(x, _)| x == k) {
                return Err(bad(format!("parameter {k:?} is given twice")));
            }
        }
        Ok(Params(v))
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(x, _)| x == k).map(|(_, v)| v.as_str())
    }

    fn number(&self, k: &str) -> Result<Option<usize>, Reject> {
        match self.get(k).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| bad(format!("{k} must be a whole number, not {v:?}"))),
        }
    }

    fn flag(&self, k: &str) -> Result<bool, Reject> {
        match self.get(k) {
            None | Some("" | "0" | "false") => Ok(false),
            Some("1" | "true") => Ok(true),
            Some(v) => Err(bad(format!("{k} must be true or false, not {v:?}"))),
        }
    }

    /// Only the parameters named.
    fn only(&self, known: &[&str]) -> Result<(), Reject> {
        match self.0.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            Some((k, _)) => Err(bad(format!(
                "unknown parameter {k:?}; this endpoint takes {}",
                known.join(", ")
            ))),
            None => Ok(()),
        }
    }
}

type RawQuery = Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>;

/// A value of one of the request's enums, named as its JSON names it (`size`, `ext`).
fn named<T: serde::de::DeserializeOwned>(s: &str) -> Option<T> {
    serde_json::from_value(Value::from(s.to_ascii_lowercase())).ok()
}

/// Rows as JSON lines with these columns (none: the printer's default).
fn jsonl(columns: Vec<String>) -> OutputArgs {
    OutputArgs {
        format: Some(Format::Jsonl),
        columns,
        ..OutputArgs::default()
    }
}

fn columns(p: &Params) -> Result<Vec<String>, Reject> {
    let cols: Vec<String> = p
        .get("columns")
        .filter(|c| !c.is_empty())
        .unwrap_or(DEFAULT_COLUMNS)
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    if cols.len() > 32
        || cols
            .iter()
            .any(|c| c.is_empty() || !c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
    {
        return Err(bad(
            "columns must be a comma-separated list of column names",
        ));
    }
    Ok(cols)
}

fn query(p: &Params) -> SearchRequest {
    SearchRequest::new(p.get("q").unwrap_or(""))
}

async fn search(State(app): State<App>, q: RawQuery) -> Response {
    search_inner(app, q)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn search_inner(app: App, q: RawQuery) -> Result<Response, Reject> {
    let p = Params::from(q)?;
    p.only(&["q", "sort", "reverse", "offset", "limit", "columns"])?;
    let offset = p.number("offset")?.unwrap_or(0);
    let limit = p.number("limit")?.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT);
    let mut req = SearchRequest {
        reverse: p.flag("reverse")?,
        offset,
        limit: Some(limit),
        output: jsonl(columns(&p)?),
        ..query(&p)
    };
    if let Some(s) = p.get("sort").filter(|s| !s.is_empty()) {
        req.sort = Some(named(s).ok_or_else(|| {
            bad(format!(
                "unknown sort {s:?}; sort by name, path, size, extension, created, modified, accessed or treesize"
            ))
        })?);
    }
    let (found, out) = app
        .call(move |b, stop| {
            let mut out = Vec::with_capacity(64 * 1024);
            let found = b.query(&req, &mut out, stop)?;
            Ok((found, out))
        })
        .await?;
    // The rows are the printer's JSON lines, joined into an array as they are.
    let lines: Vec<&[u8]> = out
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let shown = lines.len() as u64;
    let mut body = Vec::with_capacity(out.len() + 128);
    body.extend_from_slice(
        format!(
            "{{\"found\":{found},\"offset\":{offset},\"limit\":{limit},\"truncated\":{},\"rows\":[",
            (offset as u64).saturating_add(shown) < found
        )
        .as_bytes(),
    );
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(l);
    }
    body.extend_from_slice(b"]}");
    Ok(json_response(
        StatusCode::OK,
        String::from_utf8(body).map_err(|_| {
            Reject(
                StatusCode::INTERNAL_SERVER_ERROR,
                "rows were not UTF-8".into(),
            )
        })?,
    ))
}

async fn count(State(app): State<App>, q: RawQuery) -> Response {
    let run = async {
        let p = Params::from(q)?;
        p.only(&["q"])?;
        let req = SearchRequest {
            count: true,
            ..query(&p)
        };
        let n = app
            .call(move |b, stop| b.query(&req, &mut std::io::sink(), stop))
            .await?;
        Ok::<_, Reject>(json_response(
            StatusCode::OK,
            json!({ "count": n }).to_string(),
        ))
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

async fn status(State(app): State<App>) -> Response {
    match app.call(|b, _| b.status()).await {
        Ok(v) => json_response(StatusCode::OK, v.to_string()),
        Err(r) => r.into_response(),
    }
}

async fn volumes(State(app): State<App>) -> Response {
    match app.call(|b, _| b.status()).await {
        Ok(v) => json_response(
            StatusCode::OK,
            json!({"volumes": v.get("volumes").cloned().unwrap_or_else(|| json!([]))}).to_string(),
        ),
        Err(r) => r.into_response(),
    }
}

async fn syntax(State(app): State<App>) -> Response {
    match app.call(|b, _| Ok(b.syntax_help())).await {
        Ok(h) => json_response(StatusCode::OK, json!({ "help": h }).to_string()),
        Err(r) => r.into_response(),
    }
}

async fn du(State(app): State<App>, q: RawQuery) -> Response {
    let run = async {
        let p = Params::from(q)?;
        p.only(&["path", "depth", "limit", "sort"])?;
        let depth = p.number("depth")?.unwrap_or(1);
        if !(1..=4).contains(&depth) {
            return Err(bad("depth must be 1 to 4"));
        }
        let limit = p.number("limit")?.unwrap_or(100).clamp(1, MAX_LIMIT);
        let sort = match p.get("sort").filter(|s| !s.is_empty()) {
            None => DuSort::Allocated,
            Some(s) => named(s).ok_or_else(|| {
                bad(format!(
                    "unknown sort {s:?}; sort by allocated, size, count, name or exclusive"
                ))
            })?,
        };
        let req = SearchRequest {
            du: Some(DuRequest {
                path: p.get("path").filter(|s| !s.is_empty()).map(String::from),
                depth: depth as u32,
                sort,
                limit: Some(limit),
            }),
            output: jsonl(Vec::new()),
            ..SearchRequest::default()
        };
        let out = app
            .call(move |b, stop| {
                let mut out = Vec::with_capacity(16 * 1024);
                b.query(&req, &mut out, stop)?;
                Ok(out)
            })
            .await?;
        let rows: Vec<Value> = out
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect();
        Ok(json_response(
            StatusCode::OK,
            json!({ "rows": rows }).to_string(),
        ))
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}
