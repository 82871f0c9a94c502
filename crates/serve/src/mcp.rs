//! The MCP server: uffs's search as tools an AI assistant can call, over stdio (`uffs mcp`) or streamable
//! HTTP (mounted by `uffs serve` at `/mcp`, see [`http_service`]). Read-only.
//!
//! Tools: `search`, `count`, `facets` (counts and sizes per group, or totals), `volumes`, `query_syntax`, and
//! `grep` (the lines matching a pattern in the files a query selects, as `uffs grep` finds them).
//! Every tool runs through the [`Backend`], as the command line would run the same query: a bad query is a
//! tool error (`isError`) whose text points at the term, never a protocol failure. Search results are bounded
//! ([`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]) and say when they were cut; so are grep's lines. A search or grep
//! call runs at most [`TIMEOUT`], and stops reading files' data once it is cancelled or its client is gone.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, Json, RoleServer, ServerHandler};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uffs_search::{Facet, Format, OutputArgs, SearchRequest, Sort};

use crate::backend::{Backend, Error, GrepAnswer, GrepRequest, Stop, StopOnDrop};

/// Rows a search returns when the call names no limit.
pub const DEFAULT_LIMIT: usize = 50;
/// The most rows one call returns, whatever it asks for: an assistant's context is small.
pub const MAX_LIMIT: usize = 1000;
/// Lines `grep` returns when the call names no `max_lines`.
pub const DEFAULT_GREP_LINES: usize = 100;
/// The longest a search or grep call runs: then it stops reading and answers an error (MCP clients commonly
/// give up after 60 s).
pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(50);
/// Groups `facets` returns when the call names no `top`.
const DEFAULT_TOP: usize = 25;
/// The longest message taken, over stdio (a line) or HTTP (a body); longer ones are dropped unread (stdio) or
/// refused with 413 (HTTP). A call is a few hundred bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

const INSTRUCTIONS: &str = "uffs searches the file names of NTFS, FAT, exFAT and ext volumes from an index (every file and folder, \
in milliseconds). Use `search` to find files (its `query` is Everything's syntax: words are ANDed, `|` is OR, `!` \
is NOT, `ext:pdf`, `size:>10mb`, `dm:today`, wildcards, `regex:`; `content:TEXT`, `type:pdf` and `hash:HEX` \
read the files' data, beside the rest with AND; call `query_syntax` for all of it), `count` to count matches, `facets` to see what takes space (counts and sizes per extension, folder, year, month, \
attribute or size bucket; or totals), `volumes` for the volumes searched and their state, `grep` for the lines \
matching a pattern in the files a query selects (served with --index or --source).";

/// Which entries a tool looks at, beyond its query: the same three fields in every tool.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Scope {
    /// Only these volumes (names as `volumes` lists them, e.g. `C`).
    #[serde(default)]
    pub volumes: Option<Vec<String>>,
    /// Also deleted entries (where the index kept them).
    #[serde(default)]
    pub deleted: bool,
    /// Also named data streams (`file.txt:Zone.Identifier`).
    #[serde(default)]
    pub streams: bool,
}

impl Scope {
    /// A request for `query` over this scope.
    fn request(self, query: String) -> SearchRequest {
        SearchRequest {
            volumes: self.volumes.unwrap_or_default(),
            deleted: self.deleted,
            streams: self.streams,
            ..SearchRequest::new(query)
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchParams {
    /// The query, in Everything's syntax: `report draft` (both words in the name), `jpg | png`, `!tmp`,
    /// `ext:pdf;docx`, `size:>10mb`, `dm:thisweek`, `*.log`, `regex:^IMG_\d+`, `windows/system32` (a term with
    /// a slash matches the full path), `folder:`, `file:`. `*` matches everything. `content:TEXT` (files whose
    /// data holds TEXT; `case:`, `wholeword:`, `regex:` before it), `type:pdf` (by signature; `type:mismatch`:
    /// the extension lies) and `hash:HEX` read the files: put them beside name terms with AND
    /// (`ext:log content:timeout`), never inside `|`.
    pub query: String,
    /// Order of the results (default: the index's order, fastest).
    #[serde(default)]
    pub sort: Option<Sort>,
    /// Reverse the order: largest, newest or Z first.
    #[serde(default)]
    pub descending: bool,
    /// Rows to return (default 50, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Rows to skip first, for paging.
    #[serde(default)]
    pub offset: usize,
    /// Columns of each row (default: path, size, modified, kind). Any of: path name kind size allocated created
    /// modified mft_changed accessed attributes record sequence parent_record deleted reparse_tag ext tree_size
    /// tree_allocated descendants children type (type: by signature, read from each returned file's first bytes).
    #[serde(default)]
    pub columns: Option<Vec<String>>,
    #[serde(flatten)]
    pub scope: Scope,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResult {
    /// How many entries match the query (all of them, not only those returned).
    pub found: u64,
    /// Rows skipped before these.
    pub offset: usize,
    /// Rows returned.
    pub returned: usize,
    /// True when more rows match than were returned: ask again with a larger `offset`, or narrow the query.
    pub truncated: bool,
    /// Said when the limit asked for was above the maximum and was lowered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The rows, one object per entry with the columns asked for.
    pub rows: Vec<Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CountParams {
    /// The query, in the same syntax as `search` (call `query_syntax`).
    pub query: String,
    #[serde(flatten)]
    pub scope: Scope,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CountResult {
    pub found: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FacetParams {
    /// The entries to aggregate, in the same syntax as `search` (default `*`: everything).
    #[serde(default)]
    pub query: Option<String>,
    /// Group by extension, folder (the folder each match is in), year or month modified, attribute letter, size
    /// bucket; or `totals` for one row of totals.
    pub group: Facet,
    /// With ext or folder: the N largest groups by count (default 25, at most 1000).
    #[serde(default)]
    pub top: Option<usize>,
    #[serde(flatten)]
    pub scope: Scope,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FacetResult {
    /// How many entries the query matched.
    pub found: u64,
    /// One object per group (or one of totals): `count`, `size`, `allocated` and the group's key.
    pub rows: Vec<Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepParams {
    /// What a line must hold: a regular expression (Rust's `regex` syntax, as ripgrep's), or literal text with
    /// `fixed_strings`.
    pub pattern: String,
    /// The files to search, in the syntax of `search` (default: every file). Narrow it (`ext:log`,
    /// `windows/logs`, `dm:today`): every file it selects is read from the volume.
    #[serde(default)]
    pub query: Option<String>,
    /// Letters match either case (`rg -i`).
    #[serde(default)]
    pub ignore_case: bool,
    /// Only whole words match (`rg -w`).
    #[serde(default)]
    pub word: bool,
    /// The pattern is literal text, not a regular expression (`rg -F`).
    #[serde(default)]
    pub fixed_strings: bool,
    /// Matching lines to return (default 100, at most 1000): the first in the query's order.
    #[serde(default)]
    pub max_lines: Option<usize>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GrepLineRow {
    pub path: String,
    /// 1 for the file's first line.
    pub line: u64,
    pub text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GrepResult {
    /// Files the query selected and read.
    pub files: u64,
    /// Files with a matching line.
    pub files_matched: u64,
    /// Matching lines in all those files, returned or not.
    pub lines_matched: u64,
    /// Lines returned.
    pub returned: usize,
    /// True when more lines match than were returned: narrow the query or the pattern, or raise `max_lines`.
    pub truncated: bool,
    /// Said when lines were left out (how many), or the `max_lines` asked for was lowered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The matching lines, files in the query's order, each file's lines in order.
    pub lines: Vec<GrepLineRow>,
    /// What ripgrep says of binary files (a NUL byte): their matches are not shown as lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub binary: Vec<String>,
    /// Files that could not be read (encrypted, damaged), with the reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

impl GrepResult {
    fn new(a: GrepAnswer, asked: usize, max: usize) -> GrepResult {
        let returned = a.lines.len();
        let truncated = a.lines_matched > returned as u64;
        let mut notes = Vec::new();
        if truncated {
            notes.push(format!(
                "truncated: {returned} of {} matching lines returned (in {} files); narrow the query or the \
                 pattern, or raise max_lines (at most {MAX_LIMIT})",
                a.lines_matched, a.files_matched
            ));
        }
        if asked > max {
            notes.push(format!(
                "max_lines {asked} is above the maximum; {MAX_LIMIT} lines at most"
            ));
        }
        GrepResult {
            files: a.files,
            files_matched: a.files_matched,
            lines_matched: a.lines_matched,
            returned,
            truncated,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
            lines: a
                .lines
                .into_iter()
                .map(|l| GrepLineRow {
                    path: l.path,
                    line: l.line,
                    text: l.text,
                })
                .collect(),
            binary: a.notes,
            unreadable: a.unreadable,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoParams {}

/// The MCP service over one backend.
#[derive(Clone)]
pub struct UffsMcp {
    backend: Arc<dyn Backend>,
    tool_router: ToolRouter<Self>,
}

/// Runs `f` on a blocking thread for one call, at most [`TIMEOUT`]: its [`Stop`] is set when the call is
/// cancelled, its client goes away or the time is up (then the answer is an error saying so).
async fn within_limits<T: Send + 'static>(
    ctx: &RequestContext<RoleServer>,
    f: impl FnOnce(&Stop) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let (stop, _watch) = stop_when_cancelled(ctx);
    let _stop_when_done = StopOnDrop(stop.clone());
    let work = tokio::task::spawn_blocking(move || f(&stop));
    match tokio::time::timeout(TIMEOUT, work).await {
        Ok(done) => done.map_err(|e| format!("the search stopped: {e}"))?,
        Err(_) => Err(format!(
            "the call took longer than {} s and was stopped; narrow the query",
            TIMEOUT.as_secs()
        )),
    }
}

/// A [`Stop`] set when the call is cancelled (`notifications/cancelled`) or its client goes away (rmcp cancels
/// every request's token when the connection ends; it does not drop the tool's future), and the task watching
/// for that, which ends when the guard is dropped with the call.
fn stop_when_cancelled(ctx: &RequestContext<RoleServer>) -> (Stop, AbortOnDrop) {
    let stop = Stop::new();
    let (cancelled, set) = (ctx.ct.clone().cancelled_owned(), stop.clone());
    let watch = tokio::spawn(async move {
        cancelled.await;
        set.set();
    });
    (stop, AbortOnDrop(watch))
}

/// Ends a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A backend error as a tool's error text.
fn tool_error(e: Error) -> String {
    match e {
        Error::BadRequest(m) => m,
        Error::Unavailable(m) => format!("uffs cannot answer now: {m}"),
        Error::Failed(m) => format!("the search failed: {m}"),
    }
}

impl UffsMcp {
    /// Runs one search on a blocking thread: `(found, output)`.
    async fn run(
        &self,
        req: SearchRequest,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(u64, Vec<u8>), String> {
        let backend = self.backend.clone();
        within_limits(ctx, move |stop| {
            let mut out = Vec::new();
            backend
                .query(&req, &mut out, stop)
                .map(|found| (found, out))
                .map_err(tool_error)
        })
        .await
    }
}

/// JSON lines as values.
fn json_lines(out: &[u8]) -> Result<Vec<Value>, String> {
    out.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).map_err(|e| format!("unreadable row: {e}")))
        .collect()
}

/// Rows as JSON lines with these columns (none: the printer's default).
fn jsonl(columns: Vec<String>) -> OutputArgs {
    OutputArgs {
        format: Some(Format::Jsonl),
        columns,
        ..OutputArgs::default()
    }
}

#[tool_router(router = tool_router)]
impl UffsMcp {
    pub fn new(backend: Arc<dyn Backend>) -> UffsMcp {
        UffsMcp {
            backend,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        name = "search",
        description = "Find files and folders by name, path, extension, size, dates or attributes, on every \
indexed volume; or by what their data holds (`content:TEXT`, `type:pdf`, `hash:HEX`, read from the volume: \
narrow with name terms, `ext:log content:timeout`). Returns up to `limit` rows (default 50, at most 1000) with `found` (all matches) and \
`truncated`. Sort with `sort` and `descending` (e.g. sort=size, descending=true for the largest). \
Call `query_syntax` for the full query language.",
        annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn search(
        &self,
        Parameters(p): Parameters<SearchParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<SearchResult>, String> {
        let asked = p.limit.unwrap_or(DEFAULT_LIMIT);
        let limit = asked.min(MAX_LIMIT);
        let columns = p.columns.clone().unwrap_or_else(|| {
            ["path", "size", "modified", "kind"]
                .map(String::from)
                .to_vec()
        });
        let req = SearchRequest {
            sort: p.sort,
            reverse: p.descending,
            limit: Some(limit),
            offset: p.offset,
            output: jsonl(columns),
            ..p.scope.request(p.query)
        };
        let (found, out) = self.run(req, &ctx).await?;
        let rows = json_lines(&out)?;
        Ok(Json(SearchResult {
            found,
            offset: p.offset,
            returned: rows.len(),
            truncated: (p.offset + rows.len()) < found as usize,
            note: (asked > MAX_LIMIT)
                .then(|| format!("limit {asked} is above the maximum; {MAX_LIMIT} rows at most")),
            rows,
        }))
    }

    #[tool(
        name = "count",
        description = "Count the files and folders matching a query (same syntax as `search`), without listing them.",
        annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn count(
        &self,
        Parameters(p): Parameters<CountParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<CountResult>, String> {
        let req = SearchRequest {
            count: true,
            ..p.scope.request(p.query)
        };
        let (found, _) = self.run(req, &ctx).await?;
        Ok(Json(CountResult { found }))
    }

    #[tool(
        name = "facets",
        description = "What the matches of a query are made of: their number and total size per extension, \
folder, year or month modified, attribute or size bucket (largest groups first), or their totals \
(group=totals: count, files, folders, size, earliest and latest times). Use it to see what takes space.",
        annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn facets(
        &self,
        Parameters(p): Parameters<FacetParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<FacetResult>, String> {
        let query = p.query.unwrap_or_else(|| "*".into());
        let req = SearchRequest {
            facet: Some(p.group),
            top: matches!(p.group, Facet::Ext | Facet::Folder)
                .then(|| p.top.unwrap_or(DEFAULT_TOP).clamp(1, MAX_LIMIT)),
            output: jsonl(Vec::new()),
            ..p.scope.request(query)
        };
        let (found, out) = self.run(req, &ctx).await?;
        Ok(Json(FacetResult {
            found,
            rows: json_lines(&out)?,
        }))
    }

    #[tool(
        name = "volumes",
        description = "The volumes searched: each one's name (its paths start with it, e.g. `C:`), source, \
state (ready, offline, rebuilding …), number of entries and when it was last updated.",
        annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn volumes(&self) -> Result<Json<Value>, String> {
        let backend = self.backend.clone();
        let status = tokio::task::spawn_blocking(move || backend.status())
            .await
            .map_err(|e| format!("stopped: {e}"))?
            .map_err(tool_error)?;
        Ok(Json(status))
    }

    #[tool(
        name = "grep",
        description = "The lines that match a pattern in the files a query selects, read from the volume, as \
ripgrep finds them (`rg -n`; binary files skipped): `pattern` (a regex, or text with fixed_strings), `query` \
(the files, in the syntax of `search`: narrow it, e.g. `ext:log` or `ext:cs windows/src`), `ignore_case`, `word`. \
Returns up to `max_lines` lines (default 100, at most 1000) with the number of files and lines that matched and \
`truncated`. Needs a server started with --index or --source.",
        annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn grep(
        &self,
        Parameters(p): Parameters<GrepParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<GrepResult>, String> {
        let asked = p.max_lines.unwrap_or(DEFAULT_GREP_LINES);
        let max = asked.min(MAX_LIMIT);
        let req = GrepRequest {
            pattern: p.pattern,
            query: p.query.unwrap_or_default(),
            ignore_case: p.ignore_case,
            word: p.word,
            fixed_strings: p.fixed_strings,
            max_lines: max,
        };
        let backend = self.backend.clone();
        let answer = within_limits(&ctx, move |stop| {
            backend.grep(&req, stop).map_err(tool_error)
        })
        .await?;
        Ok(Json(GrepResult::new(answer, asked, max)))
    }

    #[tool(
        name = "query_syntax",
        description = "The query language of `search`, `count` and `facets`, with examples.",
        annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    pub async fn query_syntax(&self) -> String {
        self.backend.syntax_help()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for UffsMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("uffs", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// Serves MCP on this process's stdin and stdout until the client closes them.
pub fn serve_stdio(backend: Arc<dyn Backend>) -> std::io::Result<()> {
    use rmcp::ServiceExt;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let (stdin, stdout) = rmcp::transport::stdio();
        let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(stdin, stdout)
            .with_max_line_length(MAX_MESSAGE_BYTES);
        let service = UffsMcp::new(backend)
            .serve(transport)
            .await
            .map_err(std::io::Error::other)?;
        service.waiting().await.map_err(std::io::Error::other)?;
        Ok(())
    })
}

/// The MCP server as a streamable HTTP service for `uffs serve` to mount at `/mcp`. Stateless (each request is
/// answered on its own, with JSON, no sessions to keep), which fits read-only tools. The mounting server
/// checks Host, Origin and its token before a request gets here (see `crate::http::guard`), so the
/// service's own Host check is off.
pub fn http_service(
    backend: Arc<dyn Backend>,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    UffsMcp,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts()
        .with_max_request_body_bytes(MAX_MESSAGE_BYTES);
    StreamableHttpService::new(
        move || Ok(UffsMcp::new(backend.clone())),
        Default::default(),
        config,
    )
}

/// A middleware in front of [`http_service`]: a POST whose body is not one JSON-RPC message (not UTF-8, not
/// JSON, not a request, notification or answer) gets a JSON-RPC error, 400, as JSON-RPC says (-32700 for what
/// does not parse, -32600 for what is not a message), rather than the service's bare 415. The body was read
/// whole, within its bounds, by the server's guard.
pub(crate) async fn check_http_body(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::{header, HeaderValue, Method, StatusCode};
    use axum::response::IntoResponse;
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let refusal = match serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(&bytes) {
        Ok(_) => None,
        // Larger than taken: the service says so with 413.
        Err(_) if bytes.len() > MAX_MESSAGE_BYTES => None,
        Err(e) if e.is_syntax() || e.is_eof() => Some((-32700, format!("Parse error: {e}"))),
        Err(e) => Some((-32600, format!("Invalid Request: {e}"))),
    };
    if let Some((code, message)) = refusal {
        let body =
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
        let mut r = (StatusCode::BAD_REQUEST, body.to_string()).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return r;
    }
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
    .await
}
