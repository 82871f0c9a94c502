//! The searches behind `uffs mcp` and `uffs serve` ([`uffs_serve::Backend`]): the user's daemon, or indexes
//! this process opened itself (`--index FILE`, `--source SOURCE`). Both run a [`SearchRequest`] with
//! `uffs_search::run`, as `uffs QUERY` does.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use uffs_daemon::protocol::{Request, Response};
use uffs_daemon::{client, dirs};
use uffs_query::Searcher;
use uffs_serve::{Backend, Error, GrepAnswer, GrepRequest, Stop};

use uffs_results::Printer;
use uffs_search::SearchRequest;

/// Where a server answers from: the daemon unless an index file or a source is named.
#[derive(clap::Args, Debug, Clone)]
pub struct BackendArgs {
    /// Answer from this index file (written by `uffs index`) instead of the daemon.
    #[arg(long, value_name = "FILE", conflicts_with = "source")]
    pub index: Option<PathBuf>,
    /// Answer from this source (a volume, disk image or $MFT capture), indexed first, instead of the daemon.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// With --source a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
    #[arg(long, value_name = "N", requires = "source")]
    pub partition: Option<u32>,
}

impl BackendArgs {
    pub fn open(&self) -> anyhow::Result<Arc<dyn Backend>> {
        Ok(match (&self.index, &self.source) {
            (Some(f), _) => {
                // Checked wholly once: a server answers many queries from it.
                let parts = crate::common::read_index_file(f)?;
                Arc::new(LocalBackend::new(
                    f.display().to_string(),
                    None,
                    crate::common::searchers(parts),
                ))
            }
            (None, Some(s)) => {
                let parts = crate::common::load_indexes(s, self.partition, false)?;
                Arc::new(LocalBackend::new(
                    s.clone(),
                    self.partition,
                    crate::common::searchers(parts),
                ))
            }
            (None, None) => Arc::new(DaemonBackend::new()?),
        })
    }

    /// What answers, for a log line.
    pub fn describe(&self) -> String {
        match (&self.index, &self.source) {
            (Some(f), _) => f.display().to_string(),
            (None, Some(s)) => s.clone(),
            (None, None) => "the daemon".into(),
        }
    }
}

/// Answers from the user's daemon: one connection per request.
pub struct DaemonBackend {
    runtime: PathBuf,
}

impl DaemonBackend {
    pub fn new() -> anyhow::Result<DaemonBackend> {
        Ok(DaemonBackend {
            runtime: dirs::runtime_dir()?,
        })
    }

    /// Sends `req`, handing each line of output to `each`. `cancel`: the stop of the request's own client and
    /// the `cancel_id` `req` carries; once the stop is set, a `cancel` on a second connection tells the daemon to
    /// stop reading files' data for it.
    fn ask(
        &self,
        req: &Request,
        mut each: impl FnMut(&str) -> std::io::Result<()>,
        cancel: Option<(&Stop, u64)>,
    ) -> Result<Response, Error> {
        let own = client::connect(&self.runtime).map_err(|e| Error::Failed(e.to_string()))?;
        let conn = own.or_else(client::connect_system).ok_or_else(|| {
            Error::Unavailable(
                "no uffs daemon is running: start it with `uffs daemon start`".into(),
            )
        })?;
        // Dropped when the answer is in: wakes the watcher at once.
        let (done, finished) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|scope| {
            if let Some((stop, id)) = cancel {
                let (stop, runtime) = (stop.flag().clone(), &self.runtime);
                scope.spawn(move || {
                    use std::sync::mpsc::RecvTimeoutError::Timeout;
                    let tick = std::time::Duration::from_millis(20);
                    while let Err(Timeout) = finished.recv_timeout(tick) {
                        if stop.load(std::sync::atomic::Ordering::Relaxed) {
                            if let Ok(Some(conn)) = client::connect(runtime) {
                                let _ = client::request(conn, &Request::Cancel { id }, |_| Ok(()));
                            }
                            return;
                        }
                    }
                });
            }
            let answer = client::request(conn, req, |r| {
                if let Response::Out(s) = r {
                    each(s).map_err(uffs_daemon::Error::Io)?;
                }
                Ok(())
            });
            drop(done);
            answer.map_err(|e| Error::Failed(e.to_string()))
        })
    }
}

/// A number no other running query of this user's is likely to carry, for a `cancel`.
fn cancel_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    (u64::from(std::process::id()) << 40) ^ t ^ n.rotate_left(20)
}

impl Backend for DaemonBackend {
    /// The daemon reads the files' data itself: a `stop` set here sends it a `cancel` for this search.
    fn query(&self, req: &SearchRequest, out: &mut dyn Write, stop: &Stop) -> Result<u64, Error> {
        let id = cancel_id();
        let ask = Request::Query {
            request: Box::new(req.clone()),
            terminal: false,
            binary: false,
            cancel_id: Some(id),
        };
        match self.ask(&ask, |s| out.write_all(s.as_bytes()), Some((stop, id)))? {
            Response::Done { found } => Ok(found),
            Response::Refused(e) => Err(Error::BadRequest(e)),
            Response::Unavailable(e) => Err(Error::Unavailable(e)),
            Response::Error(e) => Err(Error::Failed(e)),
            other => Err(Error::Failed(format!(
                "unexpected answer from the daemon: {other:?}"
            ))),
        }
    }

    fn status(&self) -> Result<serde_json::Value, Error> {
        match self.ask(&Request::Status {}, |_| Ok(()), None)? {
            Response::Status(s) => {
                let mut v = serde_json::to_value(s).map_err(|e| Error::Failed(e.to_string()))?;
                times_as_iso(&mut v);
                Ok(v)
            }
            other => Err(Error::Failed(format!(
                "unexpected answer from the daemon: {other:?}"
            ))),
        }
    }

    fn syntax_help(&self) -> String {
        crate::after_help()
    }

    /// The daemon's volumes read by this process (`crate::registered`): their index files as the daemon last
    /// wrote them, their data from their sources, as `uffs grep` without --index reads them.
    fn grep(&self, req: &GrepRequest, stop: &Stop) -> Result<GrepAnswer, Error> {
        let parts =
            crate::registered::parts("grep").map_err(|e| Error::Failed(format!("{e:#}")))?;
        let targets = std::sync::Arc::new(crate::common::searchers(parts));
        crate::grep_lines::grep(targets, &crate::query_cmd::Place::default(), req, stop)
    }
}

/// Answers from indexes held by this process.
pub struct LocalBackend {
    /// What was opened (an index file's path or a source), for `status`; the files' data is read from it.
    source: String,
    /// With a whole disk as `source`: the partition searched.
    partition: Option<u32>,
    targets: Arc<Vec<(String, Searcher)>>,
    started: Instant,
}

impl LocalBackend {
    pub fn new(
        source: String,
        partition: Option<u32>,
        targets: Vec<(String, Searcher)>,
    ) -> LocalBackend {
        LocalBackend {
            source,
            partition,
            targets: Arc::new(targets),
            started: Instant::now(),
        }
    }

    /// Where the files' data is: the source an index file was built from, or the source itself.
    fn place(&self) -> crate::query_cmd::Place {
        if crate::common::is_index_file(&self.source) {
            crate::query_cmd::Place {
                index: Some(self.source.clone().into()),
                ..Default::default()
            }
        } else {
            crate::query_cmd::Place {
                source: Some(self.source.clone()),
                partition: self.partition,
                ..Default::default()
            }
        }
    }
}

impl Backend for LocalBackend {
    fn query(&self, req: &SearchRequest, out: &mut dyn Write, stop: &Stop) -> Result<u64, Error> {
        let targets: Vec<(&str, &Searcher)> =
            self.targets.iter().map(|(p, s)| (p.as_str(), s)).collect();
        // content:, type: and hash: read the files' data: the source is opened for them, per request.
        let expr = uffs_search::compile(req, uffs_index::time::now())?;
        let source = match uffs_search::contents::reads_data(req, &expr) {
            true => {
                let (src, _) =
                    crate::contents::open_data_source(&self.place(), &targets, "content:")
                        .map_err(|e| uffs_search::Error::Failed(format!("{e:#}")))?;
                Some(src)
            }
            false => None,
        };
        let inside = source
            .as_ref()
            .map(|s| {
                crate::contents::volume_contents(&targets, s)
                    .map(|c| c.stopped_by(stop.flag().clone()))
            })
            .transpose()
            .map_err(|e| uffs_search::Error::Failed(format!("{e:#}")))?;
        let mut printer = Printer::to_writer(Box::new(out), &req.output, false)
            .map_err(uffs_search::Error::from)?;
        let found = uffs_search::run_with(
            &targets,
            req,
            &mut printer,
            inside.as_ref().map(|i| i as &dyn uffs_search::Contents),
        )?;
        printer.finish().map_err(uffs_search::Error::failed)?;
        Ok(found as u64)
    }

    fn status(&self) -> Result<serde_json::Value, Error> {
        let volumes: Vec<serde_json::Value> = self
            .targets
            .iter()
            .map(|(prefix, s)| {
                // A lone volume has no prefix: it is named after its file.
                let name = match prefix.trim_end_matches(':') {
                    "" => std::path::Path::new(&self.source)
                        .file_stem()
                        .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
                    p => p.to_string(),
                };
                serde_json::json!({
                    "name": name,
                    "source": self.source,
                    "state": "ready",
                    "entries": s.index().len(),
                    "built_at": iso_or_null(s.index().meta.built_at),
                })
            })
            .collect();
        Ok(serde_json::json!({
            "pid": std::process::id(),
            "uptime_ms": self.started.elapsed().as_millis() as u64,
            "volumes": volumes,
        }))
    }

    fn syntax_help(&self) -> String {
        crate::after_help()
    }

    fn grep(&self, req: &GrepRequest, stop: &Stop) -> Result<GrepAnswer, Error> {
        crate::grep_lines::grep(self.targets.clone(), &self.place(), req, stop)
    }
}

/// A status's volumes' times (`built_at`, `updated_at`) as ISO 8601 (UTC), or null when there is none: the
/// protocol's FILETIMEs mean nothing to a reader of `daemon status --json`, `/api/status` or MCP's `volumes`.
pub fn times_as_iso(status: &mut serde_json::Value) {
    for vol in status["volumes"].as_array_mut().into_iter().flatten() {
        for key in ["built_at", "updated_at"] {
            if let Some(ft) = vol.get(key).and_then(serde_json::Value::as_u64) {
                vol[key] = iso_or_null(ft);
            }
        }
    }
}

fn iso_or_null(filetime: u64) -> serde_json::Value {
    uffs_index::time::known(filetime).map_or(serde_json::Value::Null, |ft| {
        uffs_results::column::iso(ft, false).into()
    })
}
