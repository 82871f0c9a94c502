//! The daemon process: the socket server, the snapshot of loaded volumes, staleness checks and rebuilds.
//!
//! Every query reads one immutable [`Snapshot`] (an `Arc` taken under a read lock for an instant); a rebuilt
//! volume makes a new snapshot that is swapped in under the write lock, so a query sees the old volumes or the
//! new ones, never a mix, and an old index is unmapped when its last query ends. Indexes are built by a child
//! process (`uffs index`), one per volume and in parallel, so a build's peak memory never stays in the daemon
//! and a crash while writing leaves only a temporary file, removed at the next start.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use uffs_index::layer::{BaseMap, Delta};
use uffs_index::{Index, VolumeMeta};
use uffs_query::Searcher;
use uffs_results::Printer;
use uffs_search::SearchRequest;

use crate::guests;
use crate::ipc::{self, Accepted, Conn};
use crate::os;
use crate::protocol::{self, Request, Response, Status, VolumeStatus};
use crate::refresh;
use crate::registry::{Registry, VolumeEntry};
use crate::{msg, Result};
use uffs_index::reach::Caller;

/// Connections served at once (one worker thread each); more are answered "busy" and closed.
pub const MAX_CONNECTIONS: usize = 64;
/// Time a client has to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Time a client may leave an answer unread before the daemon gives up on it.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Config {
    pub cache: PathBuf,
    pub runtime: PathBuf,
    /// The `uffs` executable, run as `uffs index` to build an index.
    pub exe: PathBuf,
}

/// One volume ready to search: its index, and the delta of the changes applied since it was written.
pub struct Loaded {
    pub entry: VolumeEntry,
    /// What queries search: the index (less the entries the delta replaces), then the delta's entries.
    pub searchers: Vec<Searcher>,
    pub delta: Option<Arc<Delta>>,
    /// Lookups on the index that each update needs, made by the first update and shared by the snapshots
    /// after it (they share the index).
    pub map: Arc<OnceLock<BaseMap>>,
    pub index_bytes: u64,
    /// The index file, mapped while this lives.
    pub path: PathBuf,
    /// The volume as the system daemon's guests see it, one view per recent caller.
    pub(crate) views: guests::Views,
}

impl Loaded {
    /// The volume's index, without the delta.
    pub fn base(&self) -> &Arc<Index> {
        self.searchers[0].index_arc()
    }

    /// The volume as the newest change left it: the delta's description when there is one.
    pub fn meta(&self) -> &VolumeMeta {
        self.delta
            .as_ref()
            .map_or(&self.base().meta, |d| &d.index.meta)
    }

    /// Entries of the volume now (the index's visible ones and the delta's).
    pub fn entries(&self) -> usize {
        self.delta
            .as_ref()
            .map_or(self.base().len(), |d| d.entries(self.base()))
    }

    /// The same volume with `delta` over the same index.
    pub fn with_delta(&self, delta: Arc<Delta>) -> Loaded {
        Loaded {
            entry: self.entry.clone(),
            searchers: Searcher::layered(
                &self.searchers[0],
                delta.hidden.clone(),
                Arc::clone(&delta.index),
            )
            .into(),
            delta: Some(delta),
            map: Arc::clone(&self.map),
            index_bytes: self.index_bytes,
            path: self.path.clone(),
            views: Default::default(),
        }
    }
}

/// The volumes a query sees, in registry order.
#[derive(Default)]
pub struct Snapshot {
    pub volumes: Vec<Arc<Loaded>>,
}

pub(crate) struct Shared {
    cfg: Config,
    snapshot: RwLock<Arc<Snapshot>>,
    /// Held by whoever makes the next snapshot from the current one (reload, a finished rebuild), so two
    /// changes made at once cannot drop each other's volume.
    changing: Mutex<()>,
    /// Volumes that are not simply ready: name → what they are doing.
    states: Mutex<HashMap<String, String>>,
    /// Every index loaded, while any snapshot or query still holds it: its file is mapped and must not be
    /// written over.
    mapped: Mutex<Vec<Weak<Loaded>>>,
    pub(crate) stop: AtomicBool,
    queries: AtomicU64,
    /// The stop flags of running queries that read files' data, by the `cancel_id` their clients gave.
    cancels: Mutex<HashMap<u64, Arc<AtomicBool>>>,
    /// How each volume follows its source (see [`crate::refresh`]).
    pub(crate) follow: Mutex<HashMap<String, refresh::Follow>>,
    /// Held while a volume is checked and updated: one at a time.
    pub(crate) refreshing: Mutex<()>,
    started: Instant,
}

impl Shared {
    /// The directory of the registry, the index files and the log.
    pub(crate) fn cache_dir(&self) -> &std::path::Path {
        &self.cfg.cache
    }
}

pub(crate) fn log(s: &str) {
    let t = uffs_index::time::to_civil(uffs_index::time::now());
    eprintln!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z uffs daemon: {s}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    );
}

/// Runs the daemon in this process until a `stop` request.
pub fn run(cfg: Config) -> Result<()> {
    os::tune_allocator();
    // Held for the whole run: one daemon per user (and runtime directory).
    let lock = std::fs::File::create(cfg.runtime.join("daemon.lock"))?;
    if lock.try_lock().is_err() {
        return Err(msg(format!(
            "a uffs daemon is already running for this user (see {})",
            cfg.runtime.join("daemon.pid").display()
        )));
    }
    let mut listener = ipc::Listener::bind(&cfg.runtime)?;
    std::fs::write(
        cfg.runtime.join("daemon.pid"),
        std::process::id().to_string(),
    )?;
    remove_temporaries(&cfg.cache);

    let shared = new_shared(cfg);
    let stale = reconcile(&shared)?;
    log(&format!(
        "listening on {} with {} volume(s) loaded",
        listener.name(),
        shared.snapshot.read().map(|s| s.volumes.len()).unwrap_or(0)
    ));
    {
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || check_sources(&shared, stale));
    }
    {
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || refresh::run(shared));
    }

    // A rendezvous channel: a send succeeds only when a worker is waiting for a connection.
    let (idle_tx, idle_rx) = crossbeam_channel::bounded::<(Conn, Option<Caller>)>(0);
    let mut workers = 0;
    loop {
        let accepted = listener.accept();
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let stream = match accepted {
            Ok(Accepted::Ours(c)) => (c, None),
            Ok(Accepted::Guest(c, caller)) => (c, Some(caller)),
            Ok(Accepted::Stranger(c, who)) => {
                log(&format!("refused a connection from {who}"));
                refuse(c, "refused: this daemon answers only its own user");
                continue;
            }
            Err(e) => {
                log(&format!("accepting a connection: {e}"));
                // Do not spin if accepting keeps failing (out of handles, say).
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        // Hand the connection to an idle worker; with none idle, start one, up to the limit. Workers stay for
        // the next connections: starting a thread per query would cost more than most queries.
        let stream = match idle_tx.try_send(stream) {
            Ok(()) => continue,
            Err(e) => e.into_inner(),
        };
        if workers >= MAX_CONNECTIONS {
            refuse(stream.0, "busy: too many connections, try again");
            continue;
        }
        let (shared, idle_rx) = (Arc::clone(&shared), idle_rx.clone());
        let spawned = std::thread::Builder::new()
            .name("uffs-conn".into())
            .spawn(move || {
                serve(&shared, stream);
                while let Ok(next) = idle_rx.recv() {
                    serve(&shared, next);
                }
            });
        if spawned.is_ok() {
            workers += 1;
        }
    }
    drop(listener);
    let _ = std::fs::remove_file(shared.cfg.runtime.join("daemon.pid"));
    log("stopped");
    Ok(())
}

fn new_shared(cfg: Config) -> Arc<Shared> {
    Arc::new(Shared {
        cfg,
        snapshot: RwLock::new(Arc::new(Snapshot::default())),
        changing: Mutex::new(()),
        states: Mutex::new(HashMap::new()),
        mapped: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        queries: AtomicU64::new(0),
        cancels: Mutex::new(HashMap::new()),
        follow: Mutex::new(HashMap::new()),
        refreshing: Mutex::new(()),
        started: Instant::now(),
    })
}

/// The daemon's handling of a connection without the socket, the accept loop or the background threads: a
/// client's bytes in, the bytes it would be answered with out. For the protocol's fuzz target
/// (`fuzz/fuzz_targets/daemon_request.rs`); no volumes are loaded, and the cache and runtime directories are
/// the caller's (empty ones: a `reload` reads the registry there, a `stop` only sets the flag).
#[doc(hidden)]
pub struct Offline(Arc<Shared>);

impl Offline {
    pub fn new(cfg: Config) -> Offline {
        Offline(new_shared(cfg))
    }

    /// What a connection that sent `input` gets back.
    pub fn answer(&self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        answer(&self.0, input, &mut out, None, None);
        out
    }
}

fn refuse(stream: Conn, why: &str) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let mut w = &stream;
    let _ = protocol::send(&mut w, &Response::Error(why.into()));
}

/// Answers a connection: of our own user (`None`) or a guest of the system daemon.
fn serve(shared: &Arc<Shared>, (stream, caller): (Conn, Option<Caller>)) {
    let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    answer(
        shared,
        BufReader::new(&stream),
        &stream,
        Some(&stream),
        caller.as_ref(),
    );
}

/// Reads one request from `input` and answers it on `output`. `peer`: the connection both are of, watched for
/// the client's hang-up while a search reads files' data. `guest`: who asks, when it is not our own user.
fn answer(
    shared: &Arc<Shared>,
    mut input: impl BufRead,
    mut output: impl Write,
    peer: Option<&Conn>,
    guest: Option<&Caller>,
) {
    let line = match protocol::read_request(&mut input) {
        Ok(Some(l)) => l,
        Ok(None) => return,
        Err(e) => {
            let _ = protocol::send(&mut output, &Response::Error(format!("bad request: {e}")));
            return;
        }
    };
    let mut w = BufWriter::new(output);
    let request = protocol::parse_request(&line);
    // What a guest may not ask, refused before anything is done for it.
    let refusal = guest.and(request.as_ref().ok()).and_then(guests::refused);
    let answer = match request {
        Err(e) => Response::Error(e),
        Ok(_) if refusal.is_some() => Response::Refused(refusal.unwrap_or_default()),
        Ok(Request::Ping {}) => Response::Ok(true),
        Ok(Request::Status {}) => Response::Status(status(shared)),
        Ok(Request::Reload {}) => match reconcile(shared) {
            Ok(stale) => {
                let shared = Arc::clone(shared);
                std::thread::spawn(move || check_sources(&shared, stale));
                Response::Ok(true)
            }
            Err(e) => Response::Error(e.to_string()),
        },
        Ok(Request::Refresh { name }) => {
            let snap = current(shared);
            let targets: Vec<&Arc<Loaded>> = snap
                .volumes
                .iter()
                .filter(|l| name.as_ref().is_none_or(|n| *n == l.entry.name))
                .collect();
            if targets.is_empty() {
                Response::Error(match name {
                    Some(n) => format!("no loaded volume named {n}"),
                    None => "no volumes are loaded".into(),
                })
            } else {
                let mut total = 0;
                for l in targets {
                    let (line, n) = refresh::check(shared, l, true);
                    total += n;
                    if protocol::send(&mut w, &Response::Out(format!("{line}\n"))).is_err() {
                        return;
                    }
                }
                Response::Done { found: total }
            }
        }
        Ok(Request::Dataset {
            dir,
            host,
            changes,
            keep,
            forget,
        }) => {
            let cache = shared.cache_dir();
            if forget {
                match crate::dataset::keep(cache, None) {
                    Ok(()) => Response::Done { found: 0 },
                    Err(e) => Response::Error(format!("forgetting the dataset: {e}")),
                }
            } else if let (Some(dir), Some(host)) = (dir, host) {
                let t = crate::dataset::Target {
                    dir: dir.into(),
                    host,
                    changes: changes.map(Into::into),
                };
                let snap = current(shared);
                let mut written = 0;
                let mut failed = None;
                for l in &snap.volumes {
                    let line = match crate::dataset::write(l, &t) {
                        Ok(line) => {
                            written += 1;
                            line
                        }
                        Err(why) => {
                            failed = Some(format!("{}: {why}", l.entry.name));
                            format!("{}: {why}", l.entry.name)
                        }
                    };
                    if protocol::send(&mut w, &Response::Out(format!("{line}\n"))).is_err() {
                        return;
                    }
                }
                let kept = if keep {
                    crate::dataset::keep(cache, Some(&t))
                } else {
                    Ok(())
                };
                match (failed, kept) {
                    (Some(f), _) => Response::Error(f),
                    (None, Err(e)) => Response::Error(format!("keeping the dataset: {e}")),
                    (None, Ok(())) => Response::Done { found: written },
                }
            } else {
                Response::Error("a dataset needs a folder and a host".into())
            }
        }
        Ok(Request::Stop {}) => {
            // Answer first: the process ends soon after the accept loop sees the flag.
            let _ = protocol::send(&mut w, &Response::Ok(true));
            let _ = w.flush();
            shared.stop.store(true, Ordering::SeqCst);
            // Wake the accept loop so it sees the flag.
            ipc::wake(&shared.cfg.runtime);
            return;
        }
        Ok(Request::Cancel { id }) => {
            let cancels = shared.cancels.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(stop) = cancels.get(&id) {
                stop.store(true, Ordering::Relaxed);
            }
            Response::Ok(true)
        }
        Ok(Request::Query {
            request,
            terminal,
            binary,
            cancel_id,
        }) => {
            shared.queries.fetch_add(1, Ordering::Relaxed);
            let snap = current(shared);
            let mut out = if binary {
                protocol::OutWriter::binary(&mut w)
            } else {
                protocol::OutWriter::new(&mut w)
            };
            let stop = Arc::new(AtomicBool::new(false));
            let cancels = || shared.cancels.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(id) = cancel_id {
                cancels().insert(id, stop.clone());
            }
            let r = search(&snap, &request, terminal, &mut out, (peer, &stop), guest);
            if let Some(id) = cancel_id {
                cancels().remove(&id);
            }
            if out.finish().is_err() {
                return; // the client went away
            }
            match r {
                Ok((found, warnings)) => {
                    for warning in warnings {
                        if protocol::send(&mut w, &Response::Warning(warning)).is_err() {
                            return;
                        }
                    }
                    Response::Done { found }
                }
                Err(e) => e,
            }
        }
    };
    let _ = protocol::send(&mut w, &answer);
    let _ = w.flush();
    if matches!(answer, Response::Done { .. }) {
        // Once answered, so the client does not wait for it: a query that sorted or printed millions of hits
        // freed large buffers, which the allocator would keep. Four bit sets of every volume may stay.
        let entries: usize = current(shared).volumes.iter().map(|l| l.base().len()).sum();
        os::release_after_query(entries as u64 / 2);
    }
}

/// Runs `work`, setting `stop` if the client at the other end of `peer` hangs up meanwhile (a server whose own
/// client went away closes its connection to the daemon): a search stops reading files' data for no one. On
/// Unix; a Windows pipe takes one operation at a time, so there the search runs to its end.
fn while_connected<T>(peer: Option<&Conn>, stop: &Arc<AtomicBool>, work: impl FnOnce() -> T) -> T {
    #[cfg(unix)]
    if let Some(conn) = peer {
        let done = AtomicBool::new(false);
        return std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    match conn.peer_closed_within(Duration::from_millis(100)) {
                        Some(true) => {
                            stop.store(true, Ordering::Relaxed);
                            return;
                        }
                        Some(false) => {}
                        None => std::thread::sleep(Duration::from_millis(100)),
                    }
                }
            });
            let r = work();
            done.store(true, Ordering::Relaxed);
            // Wakes the watcher now rather than at its next timeout; the answer is still written.
            conn.shut_down_reading();
            r
        });
    }
    let _ = (peer, stop);
    work()
}

/// Runs a search on every volume of the snapshot, printing its answer to `out`: the number of matches, or the
/// answer that says why not (the client's error, no volume, a failure). Files' data is read only until `stop`
/// is set (a `cancel`), and while the client at the other end of `peer` is there.
fn search(
    snap: &Snapshot,
    req: &SearchRequest,
    terminal: bool,
    out: &mut dyn Write,
    (peer, stop): (Option<&Conn>, &Arc<AtomicBool>),
    guest: Option<&Caller>,
) -> std::result::Result<(u64, Vec<String>), Response> {
    let why = |e: uffs_search::Error| match e {
        uffs_search::Error::BadRequest(m) => Response::Refused(m),
        uffs_search::Error::Failed(m) => Response::Error(m),
    };
    if snap.volumes.is_empty() {
        // A bad request is said to be one, volumes or not.
        req.check().map_err(why)?;
        uffs_search::compile(req, uffs_index::time::now()).map_err(why)?;
        return Err(Response::Unavailable(
            "the daemon has no volume ready: add one with `uffs volumes add SOURCE` (see `uffs daemon status`)"
                .into(),
        ));
    }
    // content:, type: and hash: read the files' data: each volume's source is opened for them (the daemon's
    // user must be able to read it, as for indexing). A volume whose source is not at hand (unplugged, a shadow
    // copy deleted since) is left out of them, said in a warning: the answer is partial, as the CLI's is.
    let expr = uffs_search::compile(req, uffs_index::time::now()).map_err(why)?;
    let reads_data = uffs_search::contents::reads_data(req, &expr);
    if reads_data && guest.is_some() {
        return Err(Response::Refused(guests::NO_DATA.into()));
    }
    let prefixes: Vec<String> = snap.volumes.iter().map(|l| l.entry.prefix()).collect();
    // A guest searches each volume as it may see it.
    let seen: Vec<Arc<Vec<Searcher>>> = match guest {
        Some(c) => snap.volumes.iter().map(|l| guests::seen_by(l, c)).collect(),
        None => Vec::new(),
    };
    let searchers = |i: usize| match guest {
        Some(_) => &seen[i][..],
        None => &snap.volumes[i].searchers[..],
    };
    let targets: Vec<(&str, &Searcher)> = (0..snap.volumes.len())
        .flat_map(|i| {
            let p = prefixes[i].as_str();
            searchers(i).iter().map(move |s| (p, s))
        })
        .collect();
    let mut warnings = Vec::new();
    let sources: Vec<Option<uffs_source::Source>> = if reads_data {
        snap.volumes
            .iter()
            .map(|l| {
                let opened = l.entry.open(false).map_err(|e| e.to_string()).and_then(|s| {
                    if s.volumes.is_empty() {
                        Err("it has no volume uffs reads now".into())
                    } else {
                        Ok(s)
                    }
                });
                opened
                    .map_err(|e| {
                        warnings.push(format!(
                            "volume {}: reading the files' data from {}: {e}: its files match no content:, \
                             type: or hash: term",
                            l.entry.name, l.entry.source
                        ))
                    })
                    .ok()
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut volumes = Vec::new();
    for (l, src) in snap.volumes.iter().zip(&sources) {
        let vol = src.as_ref().and_then(|s| s.volumes.first());
        volumes.extend(l.searchers.iter().map(|_| vol));
    }
    let inside = uffs_inside::VolumeContents::partly(volumes).stopped_by(stop.clone());
    let mut printer =
        Printer::to_writer(Box::new(out), &req.output, terminal).map_err(|e| why(e.into()))?;
    let mut run = || {
        uffs_search::run_with(
            &targets,
            req,
            &mut printer,
            reads_data.then_some(&inside as &dyn uffs_search::Contents),
        )
    };
    let found = if reads_data {
        while_connected(peer, stop, run)
    } else {
        run()
    };
    warnings.extend(inside.unreadable_warning());
    let finished = printer.finish();
    let found = found.map_err(why)?;
    finished.map_err(|e| why(uffs_search::Error::failed(e)))?;
    Ok((found as u64, warnings))
}

fn status(shared: &Shared) -> Status {
    let snap = current(shared);
    let follow = refresh::all(shared);
    let states = shared.states.lock().map(|s| s.clone()).unwrap_or_default();
    let registry = Registry::load(&shared.cfg.cache).unwrap_or_default();
    let mut volumes = Vec::new();
    for e in &registry.volumes {
        let loaded = snap.volumes.iter().find(|l| l.entry.name == e.name);
        let state = states.get(&e.name).cloned().unwrap_or_else(|| {
            if loaded.is_some() {
                "ready"
            } else {
                "not loaded (reload to load it)"
            }
            .into()
        });
        volumes.push(VolumeStatus {
            name: e.name.clone(),
            source: e.source.clone(),
            state,
            entries: loaded.map_or(0, |l| l.entries() as u64),
            index_bytes: loaded.map_or(0, |l| l.index_bytes),
            built_at: loaded.map_or(0, |l| l.base().meta.built_at),
            follow: refresh::describe(loaded, e),
            updated_at: follow.get(&e.name).map_or(0, |f| f.updated_at),
            last_changes: follow.get(&e.name).map_or(0, |f| f.last_changes),
            total_changes: follow.get(&e.name).map_or(0, |f| f.total_changes),
        });
    }
    Status {
        pid: std::process::id(),
        rss_bytes: os::rss_bytes(),
        uptime_ms: shared.started.elapsed().as_millis() as u64,
        queries: shared.queries.load(Ordering::Relaxed),
        volumes,
    }
}

/// Makes the snapshot match the registry: keeps loaded volumes that are still registered, loads the others from
/// their index files, drops removed ones, and starts a build for those whose file is missing or refused.
/// Returns the loaded volumes, whose sources are then checked for changes.
fn reconcile(shared: &Arc<Shared>) -> Result<Vec<Arc<Loaded>>> {
    let _changing = shared.changing.lock();
    let registry = Registry::load(&shared.cfg.cache)?;
    let old = current(shared);
    // The volumes not loaded yet are loaded on all cores: each load checks every chunk and invariant of its
    // file, and a daemon with many volumes starts as fast as its cores check them.
    use rayon::prelude::*;
    let loads: Vec<Option<Option<Arc<Loaded>>>> = registry
        .volumes
        .par_iter()
        .map(|e| {
            let new = !old.volumes.iter().any(|l| l.entry == *e) && !building(shared, &e.name);
            new.then(|| load_newest(shared, e))
        })
        .collect();
    let mut volumes = Vec::new();
    let mut to_check = Vec::new();
    for (e, load) in registry.volumes.iter().zip(loads) {
        if let Some(l) = old.volumes.iter().find(|l| l.entry == *e) {
            to_check.push(Arc::clone(l));
            volumes.push(Arc::clone(l));
            continue;
        }
        match load {
            // Being built.
            None => {}
            Some(Some(l)) => {
                to_check.push(Arc::clone(&l));
                volumes.push(l);
            }
            Some(None) => start_rebuild(shared, e.clone(), "building"),
        }
    }
    swap(shared, volumes);
    Ok(to_check)
}

/// Loads the newest index file of `e` that passes every check, logging why any newer one was refused.
fn load_newest(shared: &Shared, e: &VolumeEntry) -> Option<Arc<Loaded>> {
    let files = Registry::index_files(&shared.cfg.cache, &e.name);
    if files.is_empty() {
        log(&format!("{}: no index file; building it", e.name));
    }
    for path in files {
        match load(shared, e, &path) {
            Ok(l) => return Some(l),
            Err(why) => log(&format!("index of {} not used: {why}", e.name)),
        }
    }
    None
}

pub(crate) fn load(
    shared: &Shared,
    e: &VolumeEntry,
    path: &Path,
) -> std::result::Result<Arc<Loaded>, String> {
    let t = Instant::now();
    let idx = uffs_index::file::read(path).map_err(|err| format!("{}: {err}", path.display()))?;
    if e.deleted && !idx.meta.has_deleted {
        return Err("it was built without deleted entries".into());
    }
    let index_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let delta_file = uffs_index::file::delta_path(path);
    let delta = match delta_file.exists() {
        false => None,
        true => match uffs_index::file::read_delta(&delta_file, &idx) {
            Ok(d) => Some(Arc::new(d)),
            Err(err) => {
                // The index alone is an older state of the volume: the next check brings it up to date.
                log(&format!("{}: {err}; not used", delta_file.display()));
                None
            }
        },
    };
    let whole = Loaded {
        entry: e.clone(),
        searchers: vec![Searcher::new(Arc::new(idx))],
        delta: None,
        map: Arc::default(),
        index_bytes,
        path: path.to_path_buf(),
        views: Default::default(),
    };
    let l = Arc::new(match delta {
        Some(d) => whole.with_delta(d),
        None => whole,
    });
    log(&format!(
        "loaded {} ({} entries{}) in {:.1} ms",
        e.name,
        l.entries(),
        l.delta.as_ref().map_or(String::new(), |d| format!(
            ", {} of them from the delta",
            d.index.len()
        )),
        t.elapsed().as_secs_f64() * 1e3
    ));
    if let Ok(mut m) = shared.mapped.lock() {
        m.retain(|w| w.strong_count() > 0);
        m.push(Arc::downgrade(&l));
    }
    Ok(l)
}

fn swap(shared: &Shared, volumes: Vec<Arc<Loaded>>) {
    if let Ok(mut s) = shared.snapshot.write() {
        *s = Arc::new(Snapshot { volumes });
    }
}

pub(crate) fn building(shared: &Shared, name: &str) -> bool {
    shared
        .states
        .lock()
        .map(|s| {
            s.get(name)
                .is_some_and(|st| st == "building" || st.starts_with("stale"))
        })
        .unwrap_or(false)
}

pub(crate) fn set_state(shared: &Shared, name: &str, state: Option<String>) {
    if let Ok(mut s) = shared.states.lock() {
        match state {
            Some(st) => s.insert(name.to_string(), st),
            None => s.remove(name),
        };
    }
}

/// The state of a volume whose source cannot be read (an unplugged disk, a deleted image): it answers from its
/// index, and is checked again on its interval until the source is back.
pub(crate) fn offline_state(why: &str) -> String {
    format!("offline, answering from its index (source unavailable: {why})")
}

/// Whether each volume's source still matches its index: another volume behind the same source makes the index
/// unusable; a changed one is rebuilt while the old index keeps answering.
fn check_sources(shared: &Arc<Shared>, volumes: Vec<Arc<Loaded>>) {
    for l in volumes {
        let e = &l.entry;
        if building(shared, &e.name) {
            continue;
        }
        let meta = l.meta();
        // Only the serial is wanted: a live volume is not readied for a whole read.
        let vol = match e.open(true) {
            Ok(src) if src.volumes.len() == 1 => src.volumes.into_iter().next(),
            Ok(_) => None,
            Err(err) => {
                log(&format!(
                    "{}: source unavailable ({err}); answering from the index",
                    e.name
                ));
                set_state(shared, &e.name, Some(offline_state(&err.to_string())));
                // So that the check that finds it back says so and clears the state.
                refresh::set_follow(shared, &e.name, |f| f.unavailable = true);
                continue;
            }
        };
        let Some(vol) = vol else { continue };
        let serial = vol.serial();
        if serial != meta.serial {
            log(&format!(
                "{}: the index is of another volume (serial {:016x}, the source has {:016x}); rebuilding",
                e.name, meta.serial, serial
            ));
            replace_volume(shared, &e.name, None);
            start_rebuild(shared, e.clone(), "building");
        } else if l
            .base()
            .file_format()
            .is_some_and(|v| v < uffs_index::file::VERSION)
        {
            // Read at a cost (an older format's names are folded at load): built again in the current one, while
            // the old index keeps answering.
            log(&format!(
                "{}: the index is in an older format; rebuilding it",
                e.name
            ));
            start_rebuild(shared, e.clone(), "rebuilding (older index format)");
        } else if vol.change_stamp() != meta.change_stamp {
            // Changed while the daemon was not watching: apply what changed (or rebuild, if it cannot be
            // followed).
            drop(vol);
            refresh::check(shared, &l, true);
        }
    }
}

/// The snapshot queries start from now.
pub(crate) fn current(shared: &Shared) -> Arc<Snapshot> {
    shared
        .snapshot
        .read()
        .map(|s| Arc::clone(&s))
        .unwrap_or_default()
}

/// Swaps in a snapshot where volume `name` is `new` (or absent), in registry order; a volume no longer
/// registered (removed while it was being built) is not added.
pub(crate) fn replace_volume(shared: &Shared, name: &str, new: Option<Arc<Loaded>>) {
    let _changing = shared.changing.lock();
    replace_locked(shared, name, new);
}

/// Replaces volume `name` with `new` as [`replace_volume`] does, if `still` holds for the loaded one (that is,
/// nothing replaced it since the caller read it); returns whether it did.
pub(crate) fn replace_volume_if(
    shared: &Shared,
    name: &str,
    new: Arc<Loaded>,
    still: impl Fn(&Arc<Loaded>) -> bool,
) -> bool {
    let _changing = shared.changing.lock();
    let now = current(shared);
    if !now.volumes.iter().any(|v| v.entry.name == name && still(v)) {
        return false;
    }
    replace_locked(shared, name, Some(new));
    true
}

fn replace_locked(shared: &Shared, name: &str, new: Option<Arc<Loaded>>) {
    let registry = Registry::load(&shared.cfg.cache).unwrap_or_default();
    let old = current(shared);
    let volumes = registry
        .volumes
        .iter()
        .filter_map(|r| {
            if r.name == name {
                new.clone().filter(|l| l.entry == *r)
            } else {
                old.volumes.iter().find(|v| v.entry.name == r.name).cloned()
            }
        })
        .collect();
    swap(shared, volumes);
}

/// Builds the index of `e` in a child process, then loads it and swaps it into the snapshot.
pub(crate) fn start_rebuild(shared: &Arc<Shared>, e: VolumeEntry, state: &str) {
    set_state(shared, &e.name, Some(state.into()));
    let shared = Arc::clone(shared);
    std::thread::spawn(move || {
        let t = Instant::now();
        let built = free_slot(&shared, &e.name)
            .and_then(|path| build_in_child(&shared.cfg.exe, &e, &path).map(|p| (path, p)));
        let loaded = current(&shared)
            .volumes
            .iter()
            .any(|v| v.entry.name == e.name);
        match built {
            // Records the source could not read (read errors) are missing from the new index: the one loaded
            // keeps answering, and the partial file goes (it must not be loaded at the next start either).
            Ok((path, Some(why))) if loaded => {
                let _ = std::fs::remove_file(&path);
                log(&format!(
                    "{}: the rebuild could not read the whole source ({why}); the last index keeps answering",
                    e.name
                ));
                set_state(
                    &shared,
                    &e.name,
                    Some(format!(
                        "error: partial read ({why}); answering from its last index"
                    )),
                );
            }
            Ok((path, _)) => match load(&shared, &e, &path) {
                Ok(l) => {
                    replace_volume(&shared, &e.name, Some(l));
                    set_state(&shared, &e.name, None);
                    log(&format!(
                        "rebuilt {} in {:.1} s",
                        e.name,
                        t.elapsed().as_secs_f64()
                    ));
                    crate::dataset::after_update(&shared, &e.name);
                }
                Err(why) => {
                    log(&format!("{}: the new index did not load: {why}", e.name));
                    set_state(&shared, &e.name, Some(format!("error: {why}")));
                }
            },
            Err(why) => {
                log(&format!("{}: building the index failed: {why}", e.name));
                set_state(&shared, &e.name, Some(format!("error: {why}")));
            }
        }
        os::release_free_memory();
    });
}

/// The index slot of volume `name` to build into: one no loaded index maps, the older one if both are free.
/// When both are mapped (an old snapshot still finishing a query), waits for one to be let go.
pub(crate) fn free_slot(shared: &Shared, name: &str) -> std::result::Result<PathBuf, String> {
    // Missing files first, then the oldest: the newest index is kept as long as possible.
    let newest_first = Registry::index_files(&shared.cfg.cache, name);
    let mut slots = Registry::index_slots(&shared.cfg.cache, name).to_vec();
    slots.sort_by_key(|p| {
        newest_first
            .iter()
            .rev()
            .position(|f| f == p)
            .map_or(0, |i| i + 1)
    });
    let t = Instant::now();
    loop {
        let in_use: Vec<PathBuf> = shared
            .mapped
            .lock()
            .map(|m| {
                m.iter()
                    .filter_map(|w| w.upgrade())
                    .map(|l| l.path.clone())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(p) = slots.iter().find(|p| !in_use.contains(p)) {
            // A delta over what the slot held would not fit what is written there now.
            let _ = std::fs::remove_file(uffs_index::file::delta_path(p));
            return Ok(p.clone());
        }
        if t.elapsed() > Duration::from_secs(60) {
            return Err("both index files stayed in use for a minute".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `uffs index` for `e` into `path`. `Ok(Some(summary))` when it wrote an index but could not read every
/// MFT record (its exit status 3: partial).
fn build_in_child(
    exe: &Path,
    e: &VolumeEntry,
    path: &Path,
) -> std::result::Result<Option<String>, String> {
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("index").arg(&e.source).arg("-o").arg(path);
    if let Some(p) = e.partition {
        cmd.arg("--partition").arg(p.to_string());
    }
    if e.deleted {
        cmd.arg("--deleted");
    }
    if let Some(z) = e.fat_timezone {
        cmd.arg("--fat-timezone")
            .arg(uffs_mft::neutral::format_utc_offset(z));
    }
    if let Some(cp) = e.fat_codepage {
        cmd.arg("--fat-codepage").arg(cp.to_string());
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let out = os::spawn_tied(&mut cmd)
        .and_then(|child| child.wait_with_output())
        .map_err(|err| format!("running {}: {err}", exe.display()))?;
    let text = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => return Ok(None),
        Some(3) => {
            let line = text.lines().rev().find(|l| !l.trim().is_empty());
            return Ok(Some(line.unwrap_or("some records unreadable").to_string()));
        }
        _ => {}
    }
    Err(text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("the index build failed")
        .trim_start_matches("uffs: error: ")
        .to_string())
}

/// Removes temporary index files left by a build that was killed (`.NAME.uffs.tmpPID`).
fn remove_temporaries(cache: &Path) {
    let Ok(dir) = std::fs::read_dir(cache) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.contains(".tmp") {
            log(&format!("removing {name}, left by an interrupted write"));
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_answers_as_a_connection_is_answered() {
        let dir = std::env::temp_dir().join(format!("uffs-offline-test-{}", std::process::id()));
        let (cache, runtime) = (dir.join("cache"), dir.join("run"));
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::create_dir_all(&runtime).unwrap();
        let d = Offline::new(Config {
            cache,
            runtime,
            exe: PathBuf::from("uffs"),
        });
        assert_eq!(d.answer(b""), b"");
        assert_eq!(d.answer(b"{\"op\":\"ping\"}\n"), b"{\"ok\":true}\n");
        assert!(d
            .answer(b"{\"op\":\"ping\"}")
            .starts_with(b"{\"error\":\"bad request: request not terminated"));
        assert!(d
            .answer(b"{\"op\":\"ping\",\"x\":1}\n")
            .starts_with(b"{\"error\":\"bad request"));
        // No volume is loaded: a good search is unavailable, a bad one refused, an unknown field too.
        assert!(d
            .answer(b"{\"op\":\"query\",\"request\":{\"query\":\"ext:exe\",\"sort\":\"size\"}}\n")
            .starts_with(b"{\"unavailable\":\"the daemon has no volume ready"));
        assert!(d
            .answer(b"{\"op\":\"query\",\"request\":{\"query\":\"size:>2xb\"}}\n")
            .starts_with(b"{\"refused\":\"bad query: unknown size unit"));
        assert!(d
            .answer(b"{\"op\":\"query\",\"request\":{\"version\":9}}\n")
            .starts_with(b"{\"refused\":\"this uffs speaks search request version 1"));
        assert!(d
            .answer(b"{\"op\":\"query\",\"request\":{\"sort\":\"Size\"}}\n")
            .starts_with(b"{\"error\":\"bad request: unknown variant"));
        assert!(d
            .answer(b"{\"op\":\"refresh\"}\n")
            .starts_with(b"{\"error\":\"no volumes are loaded"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
