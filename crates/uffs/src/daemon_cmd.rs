//! `uffs daemon start|stop|status|run`, `uffs volumes add|list|remove`, and `uffs QUERY` through the daemon.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use uffs_daemon::protocol::{Request, Response, Status};
use uffs_daemon::registry::{check_name, default_name, Registry, VolumeEntry, WalkSettings};
use uffs_daemon::{client, dirs, server};

use crate::common::{progress_bar, thousands};
use crate::query_cmd::now_filetime;
use uffs_results::Printer;
use uffs_search::SearchRequest;

/// With `system`: this command is about the system daemon (root's, `--system`): its directories, for this process
/// and the daemon and builds it starts.
pub fn as_system(system: bool) -> Result<()> {
    if !system {
        return Ok(());
    }
    if !cfg!(unix) {
        bail!("the system daemon runs on Linux and Unix only; on Windows each user runs `uffs daemon start`");
    }
    #[cfg(unix)]
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        bail!(
            "--system is root's: the system daemon keeps the machine's folders for every user (run it with sudo); \
             `uffs daemon start` runs a daemon of your own"
        );
    }
    // Read by `uffs_daemon::dirs` here, and inherited by the daemon and its builds. Set before any thread starts.
    std::env::set_var("UFFS_SYSTEM", "1");
    Ok(())
}

/// A connection to the user's own daemon, else to the system daemon when one runs (it answers this user only
/// what they may see); `None` when neither does.
pub fn connect_any() -> Result<Option<uffs_daemon::ipc::Conn>> {
    if let Some(c) = client::connect(&runtime()?)? {
        return Ok(Some(c));
    }
    Ok(client::connect_system())
}

fn runtime() -> Result<PathBuf> {
    Ok(dirs::runtime_dir()?)
}
fn cache() -> Result<PathBuf> {
    Ok(dirs::cache_dir()?)
}

/// The folders every real local file system of this machine is mounted at, once each (a bind mount or a second
/// mount of the same file system or subvolume is left out): what `volumes add --system --all` registers.
fn local_mounts() -> Vec<String> {
    const LOCAL: &[&str] = &[
        "ext2", "ext3", "ext4", "xfs", "btrfs", "vfat", "exfat", "ntfs", "ntfs3", "fuseblk",
        "f2fs", "zfs", "jfs", "reiserfs", "hfsplus", "bcachefs", "nilfs2",
    ];
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut out = Vec::new();
    for m in uffs_walk::mounts::table() {
        let key = (m.device.clone(), m.root.clone());
        // A folder of a file system bind-mounted elsewhere is seen at its file system's mount; a Btrfs
        // subvolume mounted on its own (`subvol=@home`) holds what no other mount shows.
        let part = m.root != "/" && m.fstype != "btrfs";
        if !LOCAL.contains(&m.fstype.as_str()) || part || seen.contains(&key) {
            continue;
        }
        seen.push(key);
        out.push(m.point.to_string_lossy().into_owned());
    }
    out
}

/// Sends one request to the running daemon; `Ok(None)` when none runs.
fn ask(req: &Request) -> Result<Option<Response>> {
    let Some(stream) = client::connect(&runtime()?)? else {
        return Ok(None);
    };
    Ok(Some(client::request(stream, req, |_| Ok(()))?))
}

const NOT_RUNNING: &str = "no uffs daemon is running (of this user, or the system's): start it with `uffs daemon \
start` (register volumes with `uffs volumes add SOURCE`), or search an index or a source directly with --index FILE \
or --source SOURCE";

/// A search without `--index`/`--source`: asks the daemon, prints what it streams back.
pub fn query(a: &SearchRequest) -> Result<bool> {
    // Parse here too, so a bad query is reported the same way with or without a daemon.
    uffs_search::compile(a, now_filetime())?;
    let Some(stream) = connect_any()? else {
        bail!("{NOT_RUNNING}");
    };
    let parquet = a.output.format == Some(uffs_results::Format::Parquet);
    if parquet && a.output.output.is_none() && std::io::stdout().is_terminal() {
        bail!("{}", uffs_results::printer::PARQUET_TO_TERMINAL);
    }
    // A file goes to a temporary name renamed into place once whole.
    let (out, temp) = uffs_results::output_or_stdout(a.output.output.as_deref())?;
    let terminal = a.output.output.is_none() && std::io::stdout().is_terminal();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    let mut args = a.clone();
    args.output.output = None;
    args.output.color = Printer::resolve_color(a.output.color, terminal);
    // The daemon fits a table to this terminal's width.
    args.output.width = if terminal {
        uffs_results::term::stdout_width()
    } else {
        None
    };
    let req = Request::Query {
        request: Box::new(args),
        terminal,
        binary: parquet,
        cancel_id: None,
    };
    let mut broken = false;
    let last = client::request(stream, &req, |r| {
        let bytes = match r {
            Response::Out(s) => std::borrow::Cow::Borrowed(s.as_bytes()),
            Response::Bytes(s) => std::borrow::Cow::Owned(
                uffs_daemon::protocol::decode_bytes(s).map_err(uffs_daemon::Error::Msg)?,
            ),
            // Sent before the end: what the answer lacks.
            Response::Warning(w) => {
                crate::common::mark_partial();
                eprintln!("uffs: warning: {w}");
                return Ok(());
            }
            _ => return Ok(()),
        };
        if !broken {
            if let Err(e) = out.write_all(&bytes) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(uffs_daemon::Error::Io(e));
                }
                broken = true;
            }
        }
        Ok(())
    })?;
    let flushed = out.flush();
    drop(out);
    match last {
        Response::Done { found } => {
            // A query that found nothing leaves no -o file (a count still writes its 0).
            if let Some(t) = temp.filter(|_| found > 0 || a.count) {
                flushed.context("writing results")?;
                t.commit()?;
            }
            Ok(found > 0)
        }
        Response::Error(e) | Response::Refused(e) | Response::Unavailable(e) => Err(anyhow!("{e}")),
        other => Err(anyhow!("unexpected answer from the daemon: {other:?}")),
    }
}

pub fn run_foreground() -> Result<()> {
    let cfg = server::Config {
        cache: cache()?,
        runtime: runtime()?,
        exe: std::env::current_exe().context("finding the uffs executable")?,
    };
    server::run(cfg)?;
    Ok(())
}

pub fn start() -> Result<()> {
    if let Ok(Some(Response::Ok(_))) = ask(&Request::Ping {}) {
        println!("the uffs daemon is already running");
        return Ok(());
    }
    let cache = cache()?;
    let log_path = cache.join("daemon.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let exe = std::env::current_exe().context("finding the uffs executable")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["daemon", "run"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log);
    let t = Instant::now();
    let mut child = uffs_daemon::os::spawn_detached(&mut cmd).context("starting the daemon")?;
    loop {
        if let Some(Response::Ok(_)) = ask(&Request::Ping {}).ok().flatten() {
            break;
        }
        if let Some(status) = child.try_wait()? {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(3).collect();
            bail!(
                "the daemon exited ({status}) at start: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            );
        }
        if t.elapsed() > Duration::from_secs(30) {
            bail!(
                "the daemon did not answer within 30 s; see {}",
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    println!(
        "uffs daemon started (pid {}) in {:.0} ms; log: {}",
        child.id(),
        t.elapsed().as_secs_f64() * 1e3,
        log_path.display()
    );
    Ok(())
}

pub fn stop() -> Result<()> {
    let rt = runtime()?;
    let pid = std::fs::read_to_string(rt.join("daemon.pid")).ok();
    match ask(&Request::Stop {})? {
        None => {
            println!("the uffs daemon is not running");
            return Ok(());
        }
        Some(Response::Ok(_)) => {}
        Some(other) => bail!("unexpected answer from the daemon: {other:?}"),
    }
    // Wait until it has let go of its socket.
    let t = Instant::now();
    while matches!(client::connect(&rt), Ok(Some(_))) && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "uffs daemon stopped{}",
        pid.map(|p| format!(" (pid {})", p.trim()))
            .unwrap_or_default()
    );
    Ok(())
}

pub fn status(json: bool) -> Result<()> {
    let Some(resp) = ask(&Request::Status {})? else {
        if !dirs::system() && client::connect_system().is_some() {
            bail!(
                "no uffs daemon of yours is running; the system daemon answers your searches (its status is \
                 root's: `sudo uffs daemon status --system`)"
            );
        }
        bail!("the uffs daemon is not running; start it with `uffs daemon start`");
    };
    let Response::Status(s) = resp else {
        bail!("unexpected answer from the daemon: {resp:?}");
    };
    if json {
        let mut v = serde_json::to_value(&s)?;
        crate::backend::times_as_iso(&mut v);
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    print_status(&s);
    Ok(())
}

/// Entries from which the daemon's memory per entry is said: below, the process's own few MiB outweigh the
/// volumes' (47 entries showed 215,868 bytes/entry), and the figure says nothing of them.
const PER_ENTRY_FROM: u64 = 100_000;

fn print_status(s: &Status) {
    let entries: u64 = s.volumes.iter().map(|v| v.entries).sum();
    let per = if entries >= PER_ENTRY_FROM {
        format!(", {:.0} bytes/entry", s.rss_bytes as f64 / entries as f64)
    } else {
        String::new()
    };
    println!(
        "uffs daemon: pid {}, up {}, {} queries, memory {:.1} MiB{per}",
        s.pid,
        age(s.uptime_ms / 1000),
        thousands(s.queries),
        s.rss_bytes as f64 / 1048576.0
    );
    if s.volumes.is_empty() {
        println!("no volumes: add one with `uffs volumes add SOURCE`");
        return;
    }
    let now = now_filetime();
    let rows: Vec<[String; 8]> = s
        .volumes
        .iter()
        .map(|v| {
            [
                v.name.clone(),
                thousands(v.entries),
                format!("{:.1} MiB", v.index_bytes as f64 / 1048576.0),
                if v.built_at == 0 {
                    "-".into()
                } else {
                    age(now.saturating_sub(v.built_at) / 10_000_000)
                },
                v.state.clone(),
                v.follow.clone(),
                if v.updated_at == 0 {
                    "-".into()
                } else {
                    format!(
                        "{} ago, {} changes ({} in all)",
                        age(now.saturating_sub(v.updated_at) / 10_000_000),
                        thousands(v.last_changes),
                        thousands(v.total_changes)
                    )
                },
                v.source.clone(),
            ]
        })
        .collect();
    let head = [
        "VOLUME",
        "ENTRIES",
        "INDEX FILE",
        "AGE",
        "STATE",
        "FOLLOWS CHANGES",
        "LAST UPDATE",
        "SOURCE",
    ];
    let mut w: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in w.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in std::iter::once(head.map(String::from)).chain(rows) {
        let line: Vec<String> = r
            .iter()
            .zip(&w)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 1 || i == 2 {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        println!("{}", line.join("  ").trim_end());
    }
}

fn age(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s if s < 172_800 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

/// Tells a running daemon to re-read the registry; says so when there is none.
fn notify_daemon() -> Result<()> {
    match ask(&Request::Reload {})? {
        None => println!("(the daemon is not running: `uffs daemon start` loads the volumes)"),
        Some(Response::Ok(_)) => println!("the daemon reloaded its volumes"),
        Some(other) => eprintln!("uffs: warning: the daemon did not reload: {other:?}"),
    }
    Ok(())
}

/// `uffs volumes add`: `all` is `Some(removable)` for `--all`, which adds every volume uffs reads that the system shows
/// (the fixed ones, and the removable ones when asked) that is not registered yet.
/// How `uffs volumes add` registers each source.
pub struct AddOptions<'a> {
    pub name: Option<String>,
    pub partition: Option<u32>,
    pub deleted: bool,
    /// The zone of a FAT or exFAT volume's local times (seconds east of UTC).
    pub fat_timezone: Option<i64>,
    pub refresh: Option<&'a str>,
    pub create_journal: bool,
    /// Every shadow copy of the volume too, each a volume of its own (`NAME-vss1`, …).
    pub snapshots: bool,
}

pub fn volumes_add(sources: &[String], all: Option<bool>, add: &AddOptions) -> Result<()> {
    let AddOptions {
        name,
        partition,
        deleted,
        fat_timezone,
        refresh,
        create_journal,
        snapshots,
    } = add;
    let (partition, deleted) = (*partition, *deleted);
    // `--fat-codepage` (a reading option, made the process's default) is kept with the volume for its refreshes.
    let code_page = Some(uffs_mft::neutral::default_fat_code_page()).filter(|&cp| cp != 0);
    let refresh_secs = refresh
        .map(uffs_daemon::registry::parse_interval)
        .transpose()?;
    if name.is_some() && sources.len() > 1 {
        bail!("--name names one volume; add the others separately");
    }
    let cache = cache()?;
    let registry = Registry::load(&cache)?;
    let found: Vec<String>;
    let sources = match all {
        None => sources,
        Some(_) if dirs::system() => {
            let registered: Vec<&str> =
                registry.volumes.iter().map(|v| v.source.as_str()).collect();
            found = local_mounts()
                .into_iter()
                .filter(|p| {
                    !registered.contains(&format!("{p}/").as_str())
                        && !registered.contains(&p.as_str())
                })
                .collect();
            if found.is_empty() {
                println!("no mounted local file system that is not registered already (see `uffs volumes list --system`)");
                return Ok(());
            }
            &found[..]
        }
        Some(removable) => {
            // A drive registered as `c:` or `\\.\C:` is registered all the same.
            let device =
                |s: &str| uffs_mft::live::parse_spec(s).map_or(s.to_string(), |l| l.device);
            let registered: Vec<String> =
                registry.volumes.iter().map(|v| device(&v.source)).collect();
            let (shown, unreadable) = crate::drives::volumes();
            found = shown
                .into_iter()
                .filter(|f| removable || !f.removable)
                .map(|f| f.spec)
                .filter(|s| !registered.contains(&device(s)))
                .collect();
            if found.is_empty() {
                println!(
                    "no volume of a file system uffs reads ({}) to add (see `uffs info` and `uffs volumes list`)",
                    uffs_source::names()
                );
                // Devices this user may not read may hold one: say which, and who may.
                if !unreadable.is_empty() {
                    println!(
                        "this user may not read {}: run as root (or in the `disk` group) to look at them, or add \
                         a mounted folder (`uffs volumes add /home`)",
                        unreadable.join(", ")
                    );
                }
                return Ok(());
            }
            &found[..]
        }
    };
    // The volumes that keep shadow copies' stores (--shadow-storage), as the daemon will open them: by an absolute
    // path where they name a file.
    let shadow_storage: Vec<String> = uffs_source::storage::offered()
        .into_iter()
        .map(|s| {
            let p = std::path::Path::new(uffs_source::split_suffixes(&s).0);
            match std::fs::canonicalize(p) {
                Ok(abs) if p.exists() => {
                    s.replacen(&*p.to_string_lossy(), &abs.to_string_lossy(), 1)
                }
                _ => s,
            }
        })
        .collect();
    let mut plan = Vec::new();
    // Shadow copies, each with the position in `plan` of the volume it is a copy of: kept as deltas over that
    // volume's index, made once it is built.
    let mut store_plan = Vec::new();
    // With --all: drives that could not be opened for want of rights.
    let mut denied = Vec::new();
    for src in sources {
        let name = name.clone().unwrap_or_else(|| default_name(src, partition));
        check_name(&name)?;
        if registry.get(&name).is_some()
            || plan.iter().any(|(e, _): &(VolumeEntry, _)| e.name == name)
        {
            bail!("a volume named {name} is registered already (remove it first, or give --name)");
        }
        if *create_journal {
            match create_journal_on(src) {
                Err(e) if all.is_some() => {
                    eprintln!("uffs: skipping {src} ({e:#})");
                    continue;
                }
                r => r?,
            }
        }
        let opened = match uffs_source::open(src, partition) {
            Ok(o) => o,
            // With --all, a drive that cannot be read is passed over; if none could be read for want of
            // rights, that is the error (below).
            Err(e) if all.is_some() => {
                match e {
                    uffs_mft::Error::Privilege(why) => denied.push((src, why)),
                    e => eprintln!("uffs: skipping {src} ({e})"),
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        crate::common::only_volume(
            &opened,
            src,
            "add them one at a time, e.g. uffs volumes add",
            "",
        )?;
        // A folder is kept by its real path and a `/` (`/home/ana/`), which its entries' paths then start with.
        let (source, walk) = match opened.kind {
            uffs_source::SourceKind::Folder { .. } => (
                opened.volumes[0].name.clone(),
                Some(WalkSettings::of(&uffs_walk::default_options())),
            ),
            _ => (src.clone(), None),
        };
        let entry = VolumeEntry {
            name: name.clone(),
            source,
            partition,
            deleted,
            refresh_secs,
            fat_timezone: *fat_timezone,
            fat_codepage: code_page,
            shadow_storage: Vec::new(),
            walk,
        };
        // A file system's own snapshots (Btrfs): each a volume of its own, `NAME@snapN` reading `SOURCE@snapN`.
        let states = match (&opened.volumes[0].fs, *snapshots) {
            (Some(fs), true) => fs.states().into_iter().filter(|s| s.snapshot).collect(),
            _ => Vec::new(),
        };
        let stores = if *snapshots && states.is_empty() {
            let v = &opened.volumes[0];
            let shadows =
                uffs_source::storage::find(&v.name, &v.device, &opened.ntfs_partitions()?)?;
            if let Some(e) = shadows.not_at_hand(&v.name) {
                return Err(e.into());
            }
            shadows.stores
        } else {
            Vec::new()
        };
        if *snapshots && stores.is_empty() && states.is_empty() {
            eprintln!("uffs: {src} has no shadow copies");
        }
        // Each snapshot made from the volume's tables just read, not opened again.
        let state_plan = states
            .iter()
            .map(|st| {
                let state_name = format!("{name}@snap{}", st.id);
                check_name(&state_name)?;
                if registry.get(&state_name).is_some() {
                    bail!("a volume named {state_name} is registered already (remove it first, or give --name)");
                }
                let spec = format!("{src}@snap{}", st.id);
                let source = opened.state(&spec, st.id)?;
                let entry = VolumeEntry {
                    name: state_name,
                    source: spec,
                    ..entry.clone()
                };
                Ok((entry, source))
            })
            .collect::<Result<Vec<_>>>()?;
        plan.push((entry, opened));
        let present = plan.len() - 1;
        plan.extend(state_plan);
        // Each shadow copy as a volume of its own: its source is `SOURCE@vssN`, its name `NAME@vssN`.
        for st in stores {
            // The source names the store by its shadow copy id, which stays when Windows deletes older stores
            // and the positions shift; the volume keeps the name it has now.
            let spec = format!(
                "{src}@vss{{{}}}",
                uffs_mft::vss::guid_text(&st.shadow_copy_id)
            );
            let store_name = format!("{name}@vss{}", st.index);
            check_name(&store_name)?;
            if registry.get(&store_name).is_some() {
                bail!("a volume named {store_name} is registered already (remove it first, or give --name)");
            }
            let opened = crate::common::open_source(&spec, partition, false)?;
            let entry = VolumeEntry {
                name: store_name,
                source: spec,
                partition,
                deleted,
                refresh_secs,
                fat_timezone: *fat_timezone,
                fat_codepage: code_page,
                shadow_storage: shadow_storage.clone(),
                walk: None,
            };
            store_plan.push((present, entry, opened));
        }
    }
    // Build the indexes in parallel, one thread per volume, each with its own progress bar.
    let bars = indicatif::MultiProgress::new();
    if !std::io::stderr().is_terminal() {
        bars.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    // Rights are wanting for every drive or none (an elevated process or not): said in one line when no drive
    // could be read.
    if plan.is_empty() {
        match denied.first() {
            Some((_, why)) => bail!("{why}"),
            None => bail!("none of the volumes found could be read (see above)"),
        }
    }
    for (src, why) in denied {
        eprintln!("uffs: skipping {src} ({why})");
    }
    let plan_len = plan.len() + store_plan.len();
    let results: Vec<Result<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .iter()
            .map(|(e, src)| {
                let [path, other] = Registry::index_slots(&cache, &e.name);
                // Left by a volume of the same name removed while the daemon still mapped it: it must not pass
                // for this volume's newer index.
                let _ = std::fs::remove_file(&other);
                for slot in [&path, &other] {
                    let _ = std::fs::remove_file(uffs_index::file::delta_path(slot));
                }
                let pb = bars.add(progress_bar(&e.name));
                s.spawn(move || {
                    crate::index_cmd::write_index(
                        &src.volumes[0],
                        &path,
                        e.deleted,
                        &crate::common::ReadArgs {
                            fat_timezone: e.fat_timezone,
                            ..crate::common::ReadArgs::default()
                        },
                        &pb,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("the index build panicked")))
            })
            .collect()
    });
    let mut added = Vec::new();
    let mut built = vec![false; plan.len()];
    for (((e, _), r), ok) in plan.iter().zip(results).zip(&mut built) {
        match r {
            Ok(line) => {
                eprintln!("{line}");
                added.push(e.clone());
                *ok = true;
            }
            Err(err) => eprintln!("uffs: error: {}: {err:#}", e.source),
        }
    }
    // The index of the volume the stores being added are copies of, read once for all of them.
    let mut base: Option<(usize, uffs_index::Index, uffs_index::layer::BaseMap)> = None;
    for (present, e, opened) in store_plan {
        if !built[present] {
            continue;
        }
        let (p, src) = &plan[present];
        if base.as_ref().is_none_or(|b| b.0 != present) {
            let [path, _] = Registry::index_slots(&cache, &p.name);
            match uffs_index::file::read(&path) {
                Ok(idx) => {
                    let map = uffs_index::layer::BaseMap::new(&idx);
                    base = Some((present, idx, map));
                }
                Err(err) => {
                    eprintln!(
                        "uffs: error: {}: reading {}: {err}",
                        e.source,
                        path.display()
                    );
                    continue;
                }
            }
        }
        let Some((_, idx, map)) = &base else { continue };
        match add_store(
            &cache,
            p,
            &src.volumes[0],
            &e,
            &opened.volumes[0],
            (idx, map),
        ) {
            Ok(line) => {
                eprintln!("{line}");
                added.push(e);
            }
            Err(err) => eprintln!("uffs: error: {}: {err:#}", e.source),
        }
    }
    let n = added.len();
    let names: Vec<String> = added.iter().map(|e| e.name.clone()).collect();
    Registry::update(&cache, |r| {
        for e in added {
            if r.get(&e.name).is_none() {
                r.volumes.push(e);
            }
        }
        Ok(())
    })?;
    if n > 0 {
        println!("added {}", names.join(", "));
        notify_daemon()?;
    }
    if n < plan_len {
        bail!(
            "{} of {} sources could not be added",
            plan_len - n,
            plan_len
        );
    }
    Ok(())
}

/// Registers shadow copy `store` (entry `e`) of the volume `now` (entry `present`, whose index `base` is built,
/// `map` made from it): its index file is the present's, linked (no copy), with the store's delta over it beside it
/// (`uffs_mft::vss::delta`), so that a store costs what it changed. Gives the summary line.
fn add_store(
    cache: &std::path::Path,
    present: &VolumeEntry,
    now: &uffs_mft::Volume,
    e: &VolumeEntry,
    store: &uffs_mft::Volume,
    (base, map): (&uffs_index::Index, &uffs_index::layer::BaseMap),
) -> Result<String> {
    let [base_path, _] = Registry::index_slots(cache, &present.name);
    let [path, other] = Registry::index_slots(cache, &e.name);
    for slot in [&path, &other] {
        let _ = std::fs::remove_file(slot);
        let _ = std::fs::remove_file(uffs_index::file::delta_path(slot));
    }
    let (d, line) = crate::common::store_delta(now, store, base, map)?;
    // The present's index file changes by being replaced (its next compaction writes its other slot), never in
    // place: a link keeps this one as the store's base.
    if std::fs::hard_link(&base_path, &path).is_err() {
        std::fs::copy(&base_path, &path)
            .with_context(|| format!("copying {} to {}", base_path.display(), path.display()))?;
    }
    let delta = uffs_index::file::delta_path(&path);
    uffs_index::file::write_delta(&d, base, &delta)
        .with_context(|| format!("writing {}", delta.display()))?;
    Ok(line)
}

/// Makes a change journal on the Windows drive `src` when it has none (`--create-journal`).
fn create_journal_on(src: &str) -> Result<()> {
    let Some(spec) = uffs_mft::live::parse_spec(src) else {
        bail!("--create-journal is for Windows drives (C:); {src} is not one");
    };
    #[cfg(windows)]
    {
        let dev =
            uffs_mft::live::LiveDevice::open_for_writing(&spec.device).map_err(|e| {
                match e.kind() {
                    std::io::ErrorKind::PermissionDenied => {
                        anyhow!(uffs_mft::live::privilege_message(src))
                    }
                    _ => anyhow!("cannot open {src}: {e}"),
                }
            })?;
        if dev
            .query_journal()
            .with_context(|| format!("{src}: asking for its change journal"))?
            .is_none()
        {
            dev.create_journal(32 << 20, 8 << 20)
                .with_context(|| format!("{src}: making a change journal"))?;
            println!("{src}: made a change journal of 32 MiB");
        }
        Ok(())
    }
    #[cfg(not(windows))]
    bail!(
        "--create-journal works on Windows only ({} is a Windows drive)",
        spec.device
    )
}

/// `uffs volumes refresh [NAME]`: the daemon checks now and says what it applied.
pub fn volumes_refresh(name: Option<String>) -> Result<()> {
    let Some(conn) = client::connect(&runtime()?)? else {
        bail!("the uffs daemon is not running; start it with `uffs daemon start`");
    };
    // A refresh that applies a large change (a re-scan, a merge) may take minutes on a big volume.
    let wait = std::time::Duration::from_secs(30 * 60);
    let last = client::request_within(conn, &Request::Refresh { name }, wait, |r| {
        if let Response::Out(s) = r {
            print!("{s}");
        }
        Ok(())
    })?;
    match last {
        Response::Done { .. } => Ok(()),
        Response::Error(e) => bail!("{e}"),
        other => bail!("unexpected answer from the daemon: {other:?}"),
    }
}

/// `uffs volumes export --dataset DIR [--host NAME] [--keep]` and `--forget`: the daemon writes the dataset.
/// What `uffs volumes export` asks of the daemon.
pub struct DatasetRequest<'a> {
    pub dir: Option<&'a std::path::Path>,
    pub host: Option<String>,
    pub changes: Option<&'a std::path::Path>,
    pub keep: bool,
    pub forget: bool,
}

pub fn volumes_export(r: DatasetRequest<'_>) -> Result<()> {
    use uffs_results::dataset::{machine_name, safe_name};
    let DatasetRequest {
        dir,
        host,
        changes,
        keep,
        forget,
    } = r;
    // The daemon's working folder is not this one: it gets the folders' whole paths.
    let absolute = |d: &std::path::Path| -> Result<String> {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        let d = std::fs::canonicalize(d).with_context(|| format!("resolving {}", d.display()))?;
        Ok(d.to_string_lossy().into_owned())
    };
    let changes = changes.map(absolute).transpose()?;
    let Some(conn) = client::connect(&runtime()?)? else {
        bail!("the uffs daemon is not running; start it with `uffs daemon start`");
    };
    let (dir, host) = match dir {
        Some(d) => (
            Some(absolute(d)?),
            Some(safe_name(&host.unwrap_or_else(machine_name))),
        ),
        None => (None, None),
    };
    let req = Request::Dataset {
        dir,
        host,
        changes,
        keep,
        forget,
    };
    let wait = std::time::Duration::from_secs(60 * 60);
    let last = client::request_within(conn, &req, wait, |r| {
        if let Response::Out(s) = r {
            print!("{s}");
        }
        Ok(())
    })?;
    match last {
        Response::Done { .. } => {
            if keep {
                println!("the daemon writes each volume again after every update (until `uffs volumes export --forget`)");
            } else if forget {
                println!("the daemon no longer keeps a dataset current");
            }
            Ok(())
        }
        Response::Error(e) => bail!("{e}"),
        other => bail!("unexpected answer from the daemon: {other:?}"),
    }
}

/// The entries of index file `path` under the delta beside it (a live update's, or a shadow copy's over the
/// index of its volume); `None` without one.
fn entries_with_delta(path: &std::path::Path) -> Option<u64> {
    if !uffs_index::file::delta_path(path).exists() {
        return None;
    }
    let base = uffs_index::file::open(path).ok()?;
    crate::common::read_delta(path, &base).map(|d| d.entries(&base) as u64)
}

pub fn volumes_list(json: bool) -> Result<()> {
    let cache = cache()?;
    let r = Registry::load(&cache)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r.volumes)?);
        return Ok(());
    }
    if r.volumes.is_empty() {
        println!("no volumes: add one with `uffs volumes add SOURCE`");
    }
    for v in &r.volumes {
        let files = Registry::index_files(&cache, &v.name);
        let path = files
            .first()
            .cloned()
            .unwrap_or_else(|| Registry::index_path(&cache, &v.name));
        let mut info = match uffs_index::file::read_meta(&path) {
            Ok((_, n)) => format!(
                "{} entries",
                thousands(entries_with_delta(&path).unwrap_or(n))
            ),
            Err(e) => format!("no usable index ({e})"),
        };
        // An image or device that is gone (a drive letter is not looked at: that takes opening it).
        let (file, _) = v.source.rsplit_once('@').unwrap_or((&v.source, ""));
        if uffs_mft::live::parse_spec(&v.source).is_none()
            && !std::path::Path::new(&v.source).exists()
            && !std::path::Path::new(file).exists()
        {
            info += ", offline (source not found)";
        }
        println!("{}\t{}\t{info}\t{}", v.name, v.source, path.display());
    }
    Ok(())
}

pub fn volumes_remove(names: &[String]) -> Result<()> {
    let cache = cache()?;
    Registry::update(&cache, |r| {
        for n in names {
            if r.get(n).is_none() {
                return Err(uffs_daemon::Error::Msg(format!(
                    "no volume named {n} (see `uffs volumes list`)"
                )));
            }
        }
        r.volumes.retain(|v| !names.contains(&v.name));
        Ok(())
    })?;
    println!("removed {}", names.join(", "));
    // The daemon lets go of the index files first: Windows does not delete a mapped file.
    notify_daemon()?;
    for n in names {
        for path in Registry::index_slots(&cache, n) {
            remove_when_unmapped(&path);
            remove_when_unmapped(&uffs_index::file::delta_path(&path));
        }
    }
    Ok(())
}

/// Removes `path`, retrying for a few seconds while the daemon still maps it (a query finishing on Windows).
fn remove_when_unmapped(path: &std::path::Path) {
    let t = Instant::now();
    loop {
        match std::fs::remove_file(path) {
            Err(e)
                if e.kind() != std::io::ErrorKind::NotFound
                    && t.elapsed() < Duration::from_secs(5) =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                eprintln!("uffs: warning: could not remove {}: {e}", path.display());
                return;
            }
            _ => return,
        }
    }
}
