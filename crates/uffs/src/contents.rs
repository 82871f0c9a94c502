//! The files a content command reads (`uffs hash`, `uffs grep`, `uffs dupes --by content`): the entries a
//! search selects from an index file or a source, each mapped to its volume and data stream, and read with
//! [`uffs_mft::content::many`] (in volume order, on every core, a progress bar on a terminal).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use uffs_index::{EntryId, EntryKind};
use uffs_mft::content::many::{self, File, Options, Progress, Wanted};
use uffs_mft::content::ContentError;
use uffs_query::Searcher;
use uffs_search::SearchRequest;

use crate::query_cmd::{now_filetime, Place};

/// Where the files a content command reads are, and which: the flags `uffs hash` and `uffs grep` share.
#[derive(clap::Args, Debug)]
pub struct FilesArgs {
    /// Search this index file; the data is read from the source it was built from (it must be at hand).
    #[arg(long, value_name = "FILE", conflicts_with = "source")]
    pub index: Option<std::path::PathBuf>,
    /// Index this source first.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// With --source a whole disk: only its partition N (as SOURCE@N).
    #[arg(long, value_name = "N", requires = "source")]
    pub partition: Option<u32>,
    /// Include deleted files (their clusters may belong to other files since).
    #[arg(long)]
    pub deleted: bool,
    /// Include named data streams (`file:stream`).
    #[arg(long)]
    pub streams: bool,
    /// Include NTFS's own files ($MFT, $LogFile, $Extend/$UsnJrnl, ...), which a mount does not show.
    #[arg(long)]
    pub metafiles: bool,
}

impl FilesArgs {
    /// Runs `req` (with these flags' --deleted and --streams) and opens the source: see [`select`].
    pub fn select(&self, mut req: SearchRequest, what: &str) -> Result<Selection> {
        let place = Place {
            index: self.index.clone(),
            dataset: None,
            source: self.source.clone(),
            partition: self.partition,
            snapshots: false,
        };
        req.deleted = self.deleted;
        req.streams = self.streams;
        select(&place, &req, self.metafiles, what)
    }
}

/// The entries a search selected, and the source their contents are read from.
pub struct Selection {
    /// Shared: a server selects from the indexes it holds for every request.
    pub targets: Arc<Vec<(String, Searcher)>>,
    /// The volumes of the source, in the order the targets' volumes are.
    pub source: uffs_source::Source,
    /// What the source was opened as (for messages).
    pub source_spec: String,
    /// The files and streams selected, in the request's order: (target, entry). Folders are left out.
    pub hits: Vec<(usize, EntryId)>,
}

/// Runs `req` where `place` says and opens the source to read the hits' contents from: an index file's source
/// (it must be at hand) or the source itself. NTFS's own files (`$MFT`, `$LogFile`, `$Extend/$UsnJrnl`, …) are
/// left out unless `metafiles`: they are the file system, not files on it (a mount shows none of them).
/// `what` names the command in messages.
pub fn select(
    place: &Place,
    req: &SearchRequest,
    metafiles: bool,
    what: &str,
) -> Result<Selection> {
    // A bad query is said before an index is loaded.
    uffs_search::compile(req, now_filetime())?;
    let parts = match (&place.index, &place.source) {
        (Some(f), _) => crate::common::open_index_file(f)?,
        (None, Some(s)) => {
            crate::common::load_indexes_with(s, place.partition, req.deleted, place.snapshots)?
        }
        // Neither: the daemon's volumes.
        (None, None) => crate::registered::parts(what)?,
    };
    if req.deleted && parts.iter().any(|p| !p.index.meta.has_deleted) {
        bail!(
            "the index was built without deleted entries; rebuild it with `uffs index --deleted`"
        );
    }
    select_from(
        Arc::new(crate::common::searchers(parts)),
        place,
        req,
        metafiles,
        what,
    )
}

/// [`select`] over indexes already open (`targets`, loaded from `place`): a server's, for each request.
pub fn select_from(
    targets: Arc<Vec<(String, Searcher)>>,
    place: &Place,
    req: &SearchRequest,
    metafiles: bool,
    what: &str,
) -> Result<Selection> {
    let expr = uffs_search::compile(req, now_filetime())?;
    let refs: Vec<(&str, &Searcher)> = targets.iter().map(|(p, s)| (p.as_str(), s)).collect();
    let (source, spec) = open_data_source(place, &refs, what)?;
    let inside = volume_contents(&refs, &source)?;
    let key = req.sort.map(uffs_query::SortKey::from);
    let (_, mut hits) = uffs_search::execute::hits(&refs, req, &expr, key, Some(&inside))?;
    hits.retain(|&(t, id)| {
        let idx = refs[t].1.index();
        idx.kind(id) != EntryKind::Directory && (metafiles || !uffs_inside::is_metafile(idx, id))
    });
    for (_, s) in &refs {
        if s.index().needs_check() {
            let ids: Vec<EntryId> = hits.iter().map(|h| h.1).collect();
            s.index().touch_rows(&ids);
            s.index().verify_touched()?;
        }
    }
    report_unreadable(&inside);
    drop(inside);
    Ok(Selection {
        targets,
        source,
        source_spec: spec,
        hits,
    })
}

/// Opens the source whose data a search reads: an index file's source (it must be at hand) or `--source`
/// itself, with its shadow copies when the targets include them; a raw `$MFT` capture is refused (it holds no
/// file's data). Gives the spec opened too.
pub fn open_data_source(
    place: &Place,
    targets: &[(&str, &Searcher)],
    what: &str,
) -> Result<(uffs_source::Source, String)> {
    let first = targets[0].1.index();
    if place.index.is_none() && place.source.is_none() {
        return crate::registered::source(targets, what);
    }
    let at_hand = |spec: &str| {
        format!("reading the files' data from {spec} (the volume the index was built from must be at hand)")
    };
    let (spec, partition) = match (&place.index, &place.source) {
        (None, Some(s)) => (s.clone(), place.partition),
        // A shadow copy kept in an index file (`FILE@vssN`): its data is that store's.
        (Some(f), _) => match crate::common::store_spec(f) {
            Some((file, n)) => (
                crate::common::store_source(&file, n, &first.meta.source)?,
                None,
            ),
            None => (first.meta.source.clone(), None),
        },
        _ => (first.meta.source.clone(), None),
    };
    // An index file written with --snapshots holds the stores too: their data is read from each store by the id
    // its file recorded.
    let stores = targets.iter().any(|(p, _)| crate::common::names_store(p));
    if let (Some(file), true) = (&place.index, stores) {
        let source = index_file_stores(file, targets, &spec).with_context(|| at_hand(&spec))?;
        return Ok((source, spec));
    }
    let source = crate::common::open_source(&spec, partition, place.snapshots || stores)
        .with_context(|| at_hand(&spec))?;
    // A capture holds only the data resident in its records: most files' contents are not in it.
    if source.kind == uffs_source::SourceKind::RawMft {
        bail!("{spec} is a raw $MFT capture: it holds the records but not the files' data, which {what} reads");
    }
    Ok((source, spec))
}

/// The volumes of index file `file` (present read from `spec`) and of the shadow copies kept beside it that
/// `targets` search, in the targets' order ([`volume_of`]): each store opened by the shadow copy id its file
/// recorded ([`crate::common::store_source`]).
fn index_file_stores(
    file: &std::path::Path,
    targets: &[(&str, &Searcher)],
    spec: &str,
) -> Result<uffs_source::Source> {
    let mut combined: Option<uffs_source::Source> = None;
    let mut last = None;
    for (prefix, _) in targets {
        if last == Some(*prefix) {
            continue; // an index and its delta: one volume
        }
        last = Some(*prefix);
        let (one, what) = match prefix.trim_end_matches(':').rsplit_once("@vss") {
            Some((_, n)) => {
                let n = n
                    .parse::<u32>()
                    .map_err(|_| anyhow!("{prefix} names no shadow copy of {}", file.display()))?;
                let store = crate::common::store_source(file, n, spec)?;
                (store, format!("shadow copy {n} of {}", file.display()))
            }
            None => (spec.to_string(), spec.to_string()),
        };
        let mut src =
            crate::common::open_source(&one, None, false).with_context(|| what.clone())?;
        let volume = std::mem::take(&mut src.volumes)
            .into_iter()
            .next()
            .ok_or_else(|| anyhow!("{what}: no volume uffs reads"))?;
        combined.get_or_insert(src).volumes.push(volume);
    }
    combined.ok_or_else(|| anyhow!("{} has no volume to read", file.display()))
}

/// The data terms' reader over `source`, each target reading its volume.
pub fn volume_contents<'a>(
    targets: &[(&str, &Searcher)],
    source: &'a uffs_source::Source,
) -> Result<uffs_inside::VolumeContents<'a>> {
    let volumes = (0..targets.len())
        .map(|t| {
            source
                .volumes
                .get(volume_of(targets, t))
                .ok_or_else(|| anyhow!("the source has fewer volumes than its index"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(uffs_inside::VolumeContents::new(volumes))
}

/// Says on stderr how many files the data terms could not read (they matched none): the answer is partial.
pub fn report_unreadable(inside: &uffs_inside::VolumeContents<'_>) {
    if let Some(warning) = inside.unreadable_warning() {
        crate::common::mark_partial();
        eprintln!("uffs: warning: {warning}");
    }
    if inside.from_index_slack() > 0 {
        eprintln!(
            "uffs: note: {} deleted name(s) found only in index slack match no content:, type: or hash: term: \
             their records may hold other files now, so nothing is read through them",
            inside.from_index_slack()
        );
    }
}

/// The volume (its position in the source) of target `t`: a volume's parts (an index and its delta) are
/// consecutive targets with one prefix, and volumes are in the source's order.
pub fn volume_of(targets: &[(&str, &Searcher)], t: usize) -> usize {
    (1..=t)
        .filter(|&i| targets[i].0 != targets[i - 1].0)
        .count()
}

/// How reading went: how many files were read, failed, and were deleted (read all the same).
#[derive(Debug, Default)]
pub struct Outcome {
    pub read: usize,
    /// Files without an unnamed data stream (metafiles): nothing to read, passed over.
    pub no_data: usize,
    pub failed: usize,
    pub encrypted: usize,
    pub deleted: usize,
    /// Files left unread because the reading was stopped.
    pub unread: usize,
    /// Deleted names from index slack, passed over: their records may hold other files now.
    pub from_index_slack: usize,
}

/// The slot of a hit whose name comes from index slack (no volume has it).
const FROM_INDEX_SLACK: (usize, usize) = (usize::MAX, 0);

/// Why a name from index slack is not read (`uffs cat`).
pub const NOT_READ_FROM_SLACK: &str =
    "its name was found only in its folder's index slack: its record may hold \
    another file now, so its data is not read";

/// Reads every hit's data (the first `limit` bytes of each) and gives each `visit(hits, file)`'s answer in the
/// order of the hits: `Err` with the reason for one that could not be read (also printed on stderr, once per
/// file), or an empty `Err` for one without data (a metafile with named streams only). A file is read once for
/// all the hits that name it (its hard links): `hits` holds them (indexes into `sel.hits`, in their order), and
/// each gets the answer. Shows a progress bar labelled `label` on a terminal. Setting `stop` (from `visit` when
/// its reader went away, or from elsewhere) ends the reading at once: the files not read yet get an empty `Err`
/// and are counted as [`Outcome::unread`], without a word.
pub fn read_each<T, V>(
    sel: &Selection,
    limit: u64,
    label: &str,
    stop: &Arc<AtomicBool>,
    visit: V,
) -> Result<(Vec<Result<T, String>>, Outcome)>
where
    T: Clone + Send,
    V: Fn(&[usize], &mut File<'_>) -> Result<T, String> + Sync,
{
    let refs: Vec<(&str, &Searcher)> = sel.targets.iter().map(|(p, s)| (p.as_str(), s)).collect();
    // Each volume's distinct streams, and which of them each hit is.
    let mut per_volume: Vec<Vec<Wanted>> = vec![Vec::new(); sel.source.volumes.len()];
    // The first hit of each volume's streams, and all the hits of a stream that has more than one (hard links):
    // no allocation for the many files named once.
    let mut first_hit: Vec<Vec<usize>> = vec![Vec::new(); sel.source.volumes.len()];
    let mut links: std::collections::HashMap<(usize, usize), Vec<usize>> = Default::default();
    let mut slot_of: Vec<(usize, usize)> = Vec::with_capacity(sel.hits.len());
    let mut seen: std::collections::HashMap<(usize, u64, String), usize> = Default::default();
    for (k, &(t, id)) in sel.hits.iter().enumerate() {
        // A name from index slack stands for no file uffs can read: its record may hold another file now.
        if refs[t].1.index().is_from_index_slack(id) {
            slot_of.push(FROM_INDEX_SLACK);
            continue;
        }
        let v = volume_of(&refs, t);
        if v >= per_volume.len() {
            return Err(anyhow!(
                "{} has fewer volumes than its index",
                sel.source_spec
            ));
        }
        let record = u64::from(refs[t].1.index().record(id));
        let stream = uffs_inside::stream_name(refs[t].1.index(), id);
        let next = per_volume[v].len();
        let i = *seen.entry((v, record, stream.clone())).or_insert_with(|| {
            per_volume[v].push(Wanted { record, stream });
            first_hit[v].push(k);
            next
        });
        if first_hit[v][i] != k {
            links
                .entry((v, i))
                .or_insert_with(|| vec![first_hit[v][i]])
                .push(k);
        }
        slot_of.push((v, i));
    }
    let mut answers: Vec<Vec<Option<Result<T, String>>>> = Vec::new();
    let mut outcome = Outcome::default();
    let pb = crate::common::styled_bar(
        label,
        "{prefix} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}), {msg}, eta {eta}",
    );
    // Every volume's distinct files, and those read before this volume: the bar's file count.
    let files: usize = per_volume.iter().map(Vec::len).sum();
    let mut done_before = 0usize;
    for (v, wanted) in per_volume.into_iter().enumerate() {
        let n = wanted.len();
        let vol = &sel.source.volumes[v];
        let plan = many::plan(
            vol,
            wanted,
            &Options {
                limit,
                ..Options::default()
            },
        );
        pb.set_length(pb.length().unwrap_or(0) + plan.bytes());
        let files_done = done_before;
        done_before += plan.files();
        let progress = Progress::stopped_by(stop);
        let done = std::sync::Mutex::new((0..n).map(|_| None).collect::<Vec<_>>());
        let counts = std::sync::Mutex::new(Outcome::default());
        let base = pb.position();
        let ticking = std::sync::atomic::AtomicBool::new(true);
        std::thread::scope(|s| {
            if !pb.is_hidden() {
                s.spawn(|| {
                    while ticking.load(Ordering::Relaxed) {
                        pb.set_position(base + progress.bytes.load(Ordering::Relaxed));
                        pb.set_message(format!(
                            "{} of {files} files",
                            files_done + progress.files.load(Ordering::Relaxed) as usize
                        ));
                        std::thread::sleep(Duration::from_millis(100));
                    }
                });
            }
            plan.read(&progress, |item, file| {
                let answer = match file {
                    Ok(f) => {
                        if !f.info().in_use {
                            counts.lock().expect("counts").deleted += 1;
                        }
                        let hits = links
                            .get(&(v, item))
                            .map_or(std::slice::from_ref(&first_hit[v][item]), Vec::as_slice);
                        visit(hits, f)
                    }
                    // A file without data to read (a metafile such as $Secure, whose data is in named streams
                    // only) is passed over in silence: it has no content, which is not an error.
                    Err(ContentError::NoStream { .. }) => Err(String::new()),
                    Err(e) => {
                        if matches!(e, ContentError::Encrypted { .. }) {
                            counts.lock().expect("counts").encrypted += 1;
                        }
                        Err(e.to_string())
                    }
                };
                done.lock().expect("answers")[item] = Some(answer);
            });
            ticking.store(false, Ordering::Relaxed);
        });
        pb.set_position(base + progress.bytes.load(Ordering::Relaxed));
        let c = counts.into_inner().expect("counts");
        outcome.deleted += c.deleted;
        outcome.encrypted += c.encrypted;
        answers.push(done.into_inner().expect("answers"));
    }
    pb.finish_and_clear();
    let mut out = Vec::with_capacity(sel.hits.len());
    let stopped = stop.load(Ordering::Relaxed);
    for (k, &(v, i)) in slot_of.iter().enumerate() {
        // Stopped: a file never handed over, or whose read was cut, is unread; else one not handed over failed.
        // A name from index slack: no data, passed over in silence and counted (one note below).
        let Some(answers) = answers.get(v) else {
            outcome.from_index_slack += 1;
            out.push(Err(String::new()));
            continue;
        };
        let a = match answers[i].clone() {
            Some(Err(e)) if stopped && e.contains(many::STOPPED) => None,
            None if !stopped => Some(Err("not read".to_string())),
            a => a,
        };
        let Some(a) = a else {
            outcome.unread += 1;
            out.push(Err(String::new()));
            continue;
        };
        match &a {
            Ok(_) => outcome.read += 1,
            Err(e) if e.is_empty() => outcome.no_data += 1,
            Err(e) => {
                outcome.failed += 1;
                let (t, id) = sel.hits[k];
                let path = uffs_results::full_path(refs[t].1.index(), refs[t].0, id);
                eprintln!("uffs: {path}: {e}");
            }
        }
        out.push(a);
    }
    if outcome.deleted > 0 {
        eprintln!(
            "uffs: warning: {} deleted file(s) read: their clusters are free and may belong to other files since",
            outcome.deleted
        );
    }
    if outcome.from_index_slack > 0 {
        eprintln!(
            "uffs: note: {} deleted name(s) found only in index slack not read: their records may hold other files \
             now",
            outcome.from_index_slack
        );
    }
    Ok((out, outcome))
}
