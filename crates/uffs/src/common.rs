//! Pieces shared by the subcommands: progress bars, loading a source or an index file, the summary line.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use uffs_index::family;
pub use uffs_index::family::{names_store, store_path, store_spec, Part};
use uffs_index::layer::{BaseMap, Delta};
use uffs_index::Index;
use uffs_mft::{ScanOptions, ScanReport, Volume};
use uffs_source::indexes::StoreDelta;

/// How a source is read: parser threads, and the reads kept in flight and their size (by default as the device
/// wants: see `uffs_mft::device::Device::io_profile`).
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct ReadArgs {
    /// Parser threads (default: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Reads kept in flight (default: from the device: 2 on a hard disk, 8 on a SATA SSD, 32 on NVMe; 1 for an
    /// image file or a Linux device; 2 for a container: E01, qcow2, VHD/VHDX, VMDK).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = parse_concurrency)]
    pub concurrency: usize,
    /// Size of each read: 512K, 1M, 4M ... (default: from the device: 1M on a hard disk, 2M on a SATA SSD, 4M on
    /// NVMe; 1M for an image file or a Linux device).
    #[arg(long, value_name = "SIZE", value_parser = parse_io_size)]
    pub io_size: Option<usize>,
    /// Read the local times FAT and exFAT keep without a zone as this zone: UTC (the default, as The Sleuth Kit
    /// does) or an offset such as +02:00 (also UFFS_FAT_TIMEZONE).
    #[arg(long, value_name = "ZONE", value_parser = uffs_mft::neutral::parse_utc_offset, allow_hyphen_values = true)]
    pub fat_timezone: Option<i64>,
}

impl ReadArgs {
    pub fn scan_options(&self, include_deleted: bool) -> ScanOptions {
        ScanOptions {
            include_deleted,
            threads: self.threads,
            concurrency: self.concurrency,
            chunk_bytes: self.io_size.unwrap_or(0),
            local_time_offset: self
                .fat_timezone
                .or_else(uffs_mft::neutral::default_local_time_offset),
            ..ScanOptions::default()
        }
    }
}

/// Reads in flight: 1 to 256 (0, the default, is the device's choice).
fn parse_concurrency(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n <= 256 => Ok(n),
        _ => Err(format!("{s}: from 1 to 256 reads in flight")),
    }
}

/// `4M` → 4194304: a size with an optional K, M or G (powers of 1024), from 4 KiB to 1 GiB.
fn parse_io_size(s: &str) -> std::result::Result<usize, String> {
    let t = s
        .trim()
        .trim_end_matches(['b', 'B'])
        .trim_end_matches(['i', 'I']);
    let (num, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        _ => return Err(format!("{s}: a size is a number with K, M or G, e.g. 2M")),
    };
    let n: usize = num
        .parse()
        .map_err(|_| format!("{s}: a size is a number with K, M or G, e.g. 2M"))?;
    let bytes = n
        .checked_shl(shift)
        .filter(|b| b >> shift == n)
        .unwrap_or(usize::MAX);
    if !(4096..=1 << 30).contains(&bytes) {
        return Err(format!("{s}: reads are from 4K to 1G"));
    }
    Ok(bytes)
}

/// Prints an error as one line (with its causes) to stderr.
pub fn report_error(e: &anyhow::Error) {
    eprintln!("uffs: error: {e:#}");
}

/// A progress bar over records on stderr, shown only when stderr is a terminal.
pub fn progress_bar(label: &str) -> ProgressBar {
    styled_bar(
        label,
        "{prefix} [{bar:30}] {human_pos}/{human_len} records ({percent}%), eta {eta} {msg}",
    )
}

/// A progress bar on stderr drawn with indicatif's `template`, `label` as its prefix, shown only when stderr is a
/// terminal: every long command's bar (records, entries, bytes) is made here.
pub fn styled_bar(label: &str, template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(0);
    pb.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_prefix(label.to_string());
    pb
}

/// Builds the index of one volume, showing its progress on `pb` (which it leaves in place).
pub use uffs_daemon::os::return_large_blocks;

pub fn build(vol: &Volume, opts: &ScanOptions, pb: &ProgressBar) -> Result<(Index, ScanReport)> {
    return_large_blocks();
    let built = uffs_mft::build_index(vol, opts, &|done, total| {
        pb.set_length(total);
        pb.set_position(done);
    })
    .with_context(|| format!("indexing {}", vol.name))?;
    warn_skipped(&vol.name, &built.1.warnings, pb);
    Ok(built)
}

/// Warnings shown of one build at most: the rest are counted.
const MAX_WARNINGS: usize = 20;

/// What a build skipped (another file system's damage: a chain that loops, a cluster past the end …), one line
/// each on stderr, the first [`MAX_WARNINGS`].
fn warn_skipped(name: &str, warnings: &[String], pb: &ProgressBar) {
    if warnings.is_empty() {
        return;
    }
    pb.suspend(|| {
        for w in warnings.iter().take(MAX_WARNINGS) {
            eprintln!("uffs: warning: {}: {w}", head(name));
        }
        if warnings.len() > MAX_WARNINGS {
            eprintln!(
                "uffs: warning: {}: {} more like these",
                head(name),
                warnings.len() - MAX_WARNINGS
            );
        }
    });
}

/// A volume's name as the head of a line (`NAME: ...`): a drive's `D:` without its colon, so the line reads
/// `D: 535 entries`, not `D:: 535 entries`.
pub fn head(name: &str) -> &str {
    name.strip_suffix(':').unwrap_or(name)
}

/// `1234567` → `1,234,567`.
/// A count given on the command line (`--limit`, `--offset`): a whole number of 0 or more. A negative one is
/// read as a number (not as an option) so that it gets this message rather than clap's tip to write `-- -1`,
/// which leads to another error.
pub fn count(s: &str) -> std::result::Result<usize, String> {
    s.parse::<usize>().map_err(|_| match s.parse::<i64>() {
        Ok(_) => {
            format!("{s} is below 0: give a count of 0 or more, or leave the option out for all")
        }
        Err(_) => format!("{s} is not a count: give a whole number of 0 or more"),
    })
}

pub use uffs_results::thousands;

pub fn per_second(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

/// Set once a build of this process could not read some MFT records: the command then exits with status 3
/// (partial) instead of 0.
static READ_PARTLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a build of this process could not read some MFT records (see [`summary`]).
pub fn read_partly() -> bool {
    READ_PARTLY.load(std::sync::atomic::Ordering::Relaxed)
}

/// Marks this process's exit status as partial (3): the command did its work, but part of its source could not
/// be read (the caller has said what, on stderr).
pub fn mark_partial() {
    READ_PARTLY.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Opens a source as every command does (`snapshots`: with each volume's shadow copies after it), and says of each
/// volume whose image is cut short that it is, once per volume in a process: what lies past the end cannot be
/// read, so the command's answer is partial (exit 3).
pub fn open_source(
    spec: &str,
    partition: Option<u32>,
    snapshots: bool,
) -> Result<uffs_source::Source> {
    let src = if snapshots {
        uffs_source::open_with_snapshots(spec, partition)?
    } else {
        uffs_source::open(spec, partition)?
    };
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    if let Some((point, fstype)) = crate::mounted::mount_of(spec) {
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        let key = format!("mounted {spec}");
        if !said.contains(&key) {
            said.push(key);
            eprintln!(
                "uffs: note: {}",
                crate::mounted::note(spec, &point, &fstype)
            );
        }
    }
    for p in src.partitions.iter().filter(|p| p.cut_off) {
        mark_partial();
        let name = format!("{}@{}", uffs_source::path_of(spec), p.index);
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        if !said.contains(&name) {
            eprintln!(
                "uffs: warning: {name} is cut off: it starts at byte {}, past the end of the image, so \
                 nothing of it can be read",
                thousands(p.start)
            );
            said.push(name);
        }
    }
    for v in &src.volumes {
        let Some((holds, needs)) = v.truncated() else {
            continue;
        };
        mark_partial();
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        if !said.contains(&v.name) {
            said.push(v.name.clone());
            eprintln!("uffs: warning: {}", truncation(&v.name, holds, needs));
        }
    }
    Ok(src)
}

/// `NAME is truncated: the image ends at byte N; the volume needs M (K% missing) …`.
fn truncation(name: &str, holds: u64, needs: u64) -> String {
    format!(
        "{name} is truncated: the image ends at byte {}; the volume needs {} ({:.1}% missing): what lies past the \
         end cannot be read, so answers from it are partial",
        thousands(holds),
        thousands(needs),
        (needs - holds) as f64 * 100.0 / needs as f64
    )
}

/// `N entries (the root, M files and folders, S streams, D deleted)`: M is what a query for everything counts
/// (`uffs --count`), the streams and deleted entries it counts only when asked for them.
fn entries_phrase(idx: &Index) -> String {
    use uffs_index::flags::{DELETED, FROM_INDEX_SLACK, STREAM};
    let (mut streams, mut deleted, mut slack) = (0u64, 0u64, 0u64);
    for &f in idx.flags_column().iter() {
        if f & STREAM != 0 {
            streams += 1;
        } else if f & DELETED != 0 {
            deleted += 1;
            slack += u64::from(f & FROM_INDEX_SLACK != 0);
        }
    }
    let all = idx.len() as u64;
    let below = all.saturating_sub(streams + deleted + 1);
    let mut s = format!(
        "{} entries (the root, {} files and folders",
        thousands(all),
        thousands(below)
    );
    if streams > 0 {
        s += &format!(", {} streams", thousands(streams));
    }
    if deleted > 0 {
        s += &format!(", {} deleted", thousands(deleted));
    }
    if slack > 0 {
        s += &format!(", {} of them from index slack", thousands(slack));
    }
    s + ")"
}

/// The one-line summary of an index build. A build that could not read some records marks the process's exit
/// status as partial ([`read_partly`]).
pub fn summary(vol: &Volume, idx: &Index, r: &ScanReport) -> String {
    let t = r.times.total;
    let c = &r.build.counts;
    let mut s = match &vol.fs {
        // Another file system: entries read from its folders, not MFT records.
        Some(fs) => format!(
            "{}: {} {} in {:.3} s ({:.2} M entries/s)",
            head(&vol.name),
            entries_phrase(idx),
            match fs.filesystem {
                uffs_index::FileSystem::Folder => "walked".to_string(),
                other => format!("on {}", other.name()),
            },
            t.as_secs_f64(),
            per_second(idx.len() as u64, t) / 1e6,
        ),
        None => format!(
            "{}: {} from {} records in {:.3} s ({:.2} M records/s, {:.0} MB/s)",
            head(&vol.name),
            entries_phrase(idx),
            thousands(r.records_read),
            t.as_secs_f64(),
            per_second(r.records_read, t) / 1e6,
            per_second(r.bytes_read, t) / 1e6,
        ),
    };
    if !r.warnings.is_empty() {
        s += &format!("; {} warnings", thousands(r.warnings.len() as u64));
    }
    let bad = c.corrupt + c.damaged + r.records_unreadable;
    if bad > 0 {
        s += &format!(
            "; skipped {} corrupt, {} damaged, {} unreadable records",
            c.corrupt, c.damaged, r.records_unreadable
        );
    }
    let unreadable = r
        .warnings
        .iter()
        .filter(|w| w.starts_with(uffs_fs::UNREADABLE))
        .count();
    if unreadable > 0 {
        mark_partial();
        s += &format!(
            "; partial: {} folders could not be read (or only their names)",
            thousands(unreadable as u64)
        );
    }
    if r.records_unreadable > 0 {
        mark_partial();
        s += " (partial: what those records held is missing)";
    }
    if r.build.orphans > 0 {
        s += &format!("; {} orphans under /$Orphan", thousands(r.build.orphans));
    }
    if vol.fixups_applied {
        s += "; its records had their fixups applied already (as ntfscat writes a $MFT): read as they are";
    }
    s
}

/// The delta over index file `path`, if it has one that fits `base` (see [`family::delta_beside`]).
pub fn read_delta(path: &Path, base: &Index) -> Option<Delta> {
    let (d, warnings) = family::delta_beside(path, base);
    warn(warnings);
    d
}

/// Says each warning of reading an index file on stderr.
pub fn warn(warnings: Vec<String>) {
    for w in warnings {
        eprintln!("uffs: {w}");
    }
}

/// What reading an index file gives, its warnings said: the error of one that cannot be read, with what to do.
fn said<T>(r: std::result::Result<family::WithWarnings<T>, family::Error>) -> Result<T> {
    match r {
        Ok((t, warnings)) => {
            warn(warnings);
            Ok(t)
        }
        Err(family::Error::File { path, source }) => Err(index_error(&path, source)),
        Err(e) => Err(anyhow::Error::new(e)),
    }
}

/// A searcher over each part, with its prefix; an index and the delta after it (the part with hidden entries,
/// then the next) are searched as one volume.
pub fn searchers(parts: Vec<Part>) -> Vec<(String, uffs_query::Searcher)> {
    use uffs_query::Searcher;
    let mut out = Vec::with_capacity(parts.len());
    let mut parts = parts.into_iter();
    while let Some(p) = parts.next() {
        let s = match p.hidden {
            Some(h) => match parts.next() {
                Some(delta) => {
                    let [b, d] = Searcher::layered(&Searcher::new(p.index), h, delta.index);
                    out.extend([(p.prefix, b), (delta.prefix, d)]);
                    continue;
                }
                None => Searcher::new(p.index).hiding(h),
            },
            None => Searcher::new(p.index),
        };
        out.push((p.prefix, s));
    }
    out
}

/// The parts of index file `path`, checked wholly (see [`family::read`]).
pub fn read_index_file(path: &Path) -> Result<Vec<Part>> {
    said(family::read(path))
}

/// The source of shadow copy `n` kept beside index file `file`, whose present was read from `source`: the store
/// its file names by shadow copy id (`SOURCE@vss{GUID}`), so that its data is read from that store wherever it
/// stands among the volume's stores now, or is said to be gone; by position for a file written before uffs
/// recorded the id.
pub fn store_source(file: &Path, n: u32, source: &str) -> Result<String> {
    let path = store_path(file, n);
    let store = uffs_index::file::read_delta_store(&path)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    offer_remembered_storage(store.as_ref());
    Ok(match store {
        Some(st) => format!(
            "{source}@vss{{{}}}",
            uffs_mft::vss::guid_text(&st.shadow_copy_id)
        ),
        None => format!("{source}@vss{n}"),
    })
}

/// Offers the volume that keeps a store, as the store's delta file remembers it (given with `--shadow-storage`
/// when the index was written), so that it need not be given again. One that cannot be opened now is said by
/// the open that needs it.
pub fn offer_remembered_storage(store: Option<&uffs_index::layer::StoreIdentity>) {
    if let Some(storage) = store.and_then(|s| s.storage.clone()) {
        let _ = uffs_source::storage::offer(&[storage]);
    }
}

/// Index file `path` (or `FILE@vssN`) as one index, checked wholly, with its delta merged in.
pub fn read_index_merged(path: &Path) -> Result<Index> {
    said(family::read_merged(path))
}

/// Why index file `path` could not be read; for a file that is no index but a source (a volume image, a disk,
/// a `$MFT` capture), what to do with it instead.
pub(crate) fn index_error(path: &Path, e: uffs_index::file::FileError) -> anyhow::Error {
    let shown = path.display();
    if matches!(e, uffs_index::file::FileError::IsDelta) {
        let s = shown.to_string();
        // `FILE.vssN`, written by `uffs index --snapshots`; `FILE.delta`, by `uffs index --update`.
        let store = s
            .rsplit_once(".vss")
            .and_then(|(f, n)| Some((f, n.parse::<u32>().ok()?)));
        return match (store, s.strip_suffix(".delta")) {
            (Some((file, n)), _) => anyhow!(
                "{s} is shadow copy {n} of {file}, kept as what changed over it: open it as `{file}@vss{n}` (or \
                 `--index {file} --volume @vss{n}`)"
            ),
            (None, Some(file)) => anyhow!(
                "{s} is the update of {file}, kept as what changed over it: open {file}, which reads it"
            ),
            (None, None) => anyhow!("{s} is {e}: open the index it was written beside"),
        };
    }
    if matches!(e, uffs_index::file::FileError::BadMagic)
        && path
            .to_str()
            .is_some_and(|p| uffs_source::open(p, None).is_ok())
    {
        return anyhow!(
            "{shown} is not a uffs index but a volume, disk or $MFT capture: search it with `--source {shown}`, \
             or index it first with `uffs index {shown} -o FILE.uffs`"
        );
    }
    anyhow::Error::new(e).context(format!("reading index {shown}"))
}

/// The parts of index file `path` opened in O(1) (see [`family::open`]): what is read from it must be checked
/// with [`Index::verify_touched`] before it is shown.
pub fn open_index_file(path: &Path) -> Result<Vec<Part>> {
    said(family::open(path))
}

/// The one volume of a source, or an error that names each (`disk.img@1`, `disk.img@3`) and shows the
/// command (`before` SPEC `after`) for the first.
pub fn only_volume<'a>(
    src: &'a uffs_source::Source,
    spec: &str,
    before: &str,
    after: &str,
) -> Result<&'a Volume> {
    match &src.volumes[..] {
        [one] => Ok(one),
        many => {
            let names: Vec<&str> = many.iter().map(|v| v.name.as_str()).collect();
            bail!(
                "{spec} holds {} volumes ({}); {before} {} {after}",
                names.len(),
                names.join(", "),
                names.first().copied().unwrap_or_default()
            )
        }
    }
}

/// The indexes of a source (every selected volume), or of an index file (with its delta). Each comes with the
/// prefix its paths get: empty for a single volume, `@N:` for partition N of a disk with several.
pub fn load_indexes(spec: &str, partition: Option<u32>, deleted: bool) -> Result<Vec<Part>> {
    load_indexes_with(spec, partition, deleted, false)
}

/// As [`load_indexes`]; `snapshots`: every shadow copy of each volume too, its paths prefixed `@vssN:`.
pub fn load_indexes_with(
    spec: &str,
    partition: Option<u32>,
    deleted: bool,
    snapshots: bool,
) -> Result<Vec<Part>> {
    if is_index_file(spec) {
        let parts = read_index_file(Path::new(spec))?;
        if deleted && !parts[0].index.meta.has_deleted {
            bail!(
                "{spec} was built without deleted entries; rebuild it with `uffs index --deleted`"
            );
        }
        return Ok(parts);
    }
    let src = open_source(spec, partition, snapshots)?;
    let opts = ScanOptions {
        include_deleted: deleted,
        ..ScanOptions::default()
    };
    Ok(uffs_source::indexes::indexes_of(
        &src,
        &opts,
        &OnTerminal::default(),
    )?)
}

/// A source's builds shown as the commands that search a source show them: a progress bar each, what a build
/// skipped, and its summary line, on stderr.
#[derive(Default)]
struct OnTerminal {
    bar: std::sync::Mutex<Option<ProgressBar>>,
}

impl uffs_source::indexes::Report for OnTerminal {
    fn building(&self, vol: &Volume) -> Box<dyn Fn(u64, u64) + Sync + '_> {
        return_large_blocks();
        let pb = progress_bar(&vol.name);
        *self.bar.lock().unwrap_or_else(|e| e.into_inner()) = Some(pb.clone());
        Box::new(move |done, total| {
            pb.set_length(total);
            pb.set_position(done);
        })
    }

    fn built(&self, vol: &Volume, idx: &Index, report: &ScanReport) {
        let pb = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take();
        let pb = pb.unwrap_or_else(ProgressBar::hidden);
        warn_skipped(&vol.name, &report.warnings, &pb);
        pb.finish_and_clear();
        eprintln!("{}", summary(vol, idx, report));
    }

    fn delta_read(&self, then: &Volume, facts: &StoreDelta) {
        eprintln!("{}", delta_line(then, facts));
    }
}

/// Shadow copy `then` of volume `now` as a delta over `now`'s index `base` (see
/// [`uffs_source::indexes::store_delta`]), with the line that says how it was read.
pub fn store_delta(
    now: &Volume,
    then: &Volume,
    base: &Index,
    map: &BaseMap,
) -> Result<(Delta, String)> {
    let (d, facts) = uffs_source::indexes::store_delta(now, then, base, map)?;
    Ok((d, delta_line(then, &facts)))
}

/// `NAME: N of M MFT records differ from the present; ...`.
fn delta_line(then: &Volume, f: &StoreDelta) -> String {
    format!(
        "{}: {} of {} MFT records differ from the present; {} entries in all, as a delta of {} over the \
         present's index, in {:.3} s",
        head(&then.name),
        thousands(f.records_changed),
        thousands(then.records_total),
        thousands(f.entries),
        thousands(f.delta_entries),
        f.seconds
    )
}

/// Whether `spec` names an index file, or a shadow copy kept beside one (`FILE@vssN`).
pub fn is_index_file(spec: &str) -> bool {
    family::is_index_file(Path::new(spec))
}
