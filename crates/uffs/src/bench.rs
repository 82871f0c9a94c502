//! `uffs bench`: per-phase timings of an index build (or of the raw MFT read alone), records/s, MB/s and peak
//! memory, as text or JSON. Timings on shared machines are noisy: compare ratios measured in one run.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use uffs_mft::ScanReport;

use crate::common::{per_second, progress_bar, thousands, ReadArgs};

pub fn run(
    spec: &str,
    partition: Option<u32>,
    runs: usize,
    as_json: bool,
    read_only: bool,
    deleted: bool,
    read: &ReadArgs,
) -> Result<()> {
    let opts = read.scan_options(deleted);
    let rss_before = peak_rss_bytes();
    // The process-wide peak after the first build: later runs reuse memory the allocator kept from earlier ones,
    // so only the first is a clean measurement of one build.
    let mut first_peak = None;
    let mut results = Vec::new();
    for run in 0..runs.max(1) {
        let t = Instant::now();
        let src = uffs_source::open(spec, partition)?;
        let open = t.elapsed();
        for vol in &src.volumes {
            let pb = progress_bar(&format!("run {}", run + 1));
            let progress = |done, total| {
                pb.set_length(total);
                pb.set_position(done);
            };
            let (report, entries, finish) = if read_only {
                (uffs_mft::read_only(vol, &opts, &progress)?, 0, None)
            } else {
                crate::common::return_large_blocks();
                let (mut idx, report) = uffs_mft::build_index(vol, &opts, &progress)?;
                (report, idx.len() as u64, Some(aids_and_write(&mut idx)?))
            };
            pb.finish_and_clear();
            first_peak.get_or_insert_with(peak_rss_bytes);
            results.push(Run {
                volume: vol.name.clone(),
                open,
                report,
                entries,
                finish,
            });
        }
    }
    let peak = first_peak.unwrap_or_else(peak_rss_bytes);
    if as_json {
        let runs: Vec<_> = results.iter().map(Run::to_json).collect();
        let out = json!({"source": spec, "read_only": read_only, "peak_rss_bytes": peak,
            "peak_rss_before_bytes": rss_before, "runs": runs, "median": median(&results).map(Run::to_json)});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for (i, r) in results.iter().enumerate() {
        println!("run {}: {}", i + 1, r.text(read_only));
    }
    if let Some(m) = median(&results) {
        println!("median: {}", m.text(read_only));
        println!(
            "phases (median run; read, parse and build overlap; read is summed over {} reads of {} in flight, \
             parse over {} threads):",
            m.report.concurrency,
            size(m.report.io_size as u64),
            m.report.threads
        );
        let t = &m.report.times;
        for (name, d) in [
            ("open", m.open),
            ("plan", t.plan),
            ("read", t.read),
            ("parse", t.parse),
            ("build", t.build),
            ("merge", t.merge),
            ("totals", t.totals),
            ("total", t.total),
        ] {
            println!("  {name:<8} {:>10.3} ms", d.as_secs_f64() * 1e3);
        }
        if let Some(f) = &m.finish {
            println!("then, as `uffs index` does:");
            println!("  {:<8} {:>10.3} ms", "aids", f.aids.as_secs_f64() * 1e3);
            println!(
                "  {:<8} {:>10.3} ms (of which sync {:.3} ms)",
                "write",
                f.write.as_secs_f64() * 1e3,
                f.sync.as_secs_f64() * 1e3
            );
            let whole = m.total() + f.aids + f.write;
            println!(
                "  {:<8} {:>10.3} ms: {:.2} M entries/s, file written and synced",
                "index",
                whole.as_secs_f64() * 1e3,
                per_second(m.entries, whole) / 1e6
            );
        }
        if !read_only && m.entries > 0 {
            println!(
                "peak RSS of the first run {:.1} MiB ({:.0} bytes/entry over {} entries)",
                peak as f64 / 1048576.0,
                peak as f64 / m.entries as f64,
                thousands(m.entries)
            );
        } else {
            println!(
                "peak RSS of the first run {:.1} MiB",
                peak as f64 / 1048576.0
            );
        }
    }
    Ok(())
}

/// `1048576` → `1 MiB`.
fn size(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

struct Run {
    volume: String,
    open: Duration,
    report: ScanReport,
    entries: u64,
    /// What `uffs index` does after the build.
    finish: Option<Finish>,
}

/// The search aids' build and the index file's write (to the temporary directory, synced, then removed).
struct Finish {
    aids: Duration,
    write: Duration,
    sync: Duration,
}

/// (The columns are written while the aids are built, as `uffs index` does: the write is the time after them.)
fn aids_and_write(idx: &mut uffs_index::Index) -> Result<Finish> {
    let path = std::env::temp_dir().join(format!("uffs-bench-{}.uffs", std::process::id()));
    let t = Instant::now();
    let written = uffs_index::file::write_with_aids(idx, &path);
    let total = t.elapsed();
    let _ = std::fs::remove_file(&path);
    let times = written.with_context(|| format!("writing {}", path.display()))?;
    Ok(Finish {
        aids: times.aids,
        write: total.saturating_sub(times.aids),
        sync: times.sync,
    })
}

impl Run {
    fn total(&self) -> Duration {
        self.open + self.report.times.total
    }

    fn text(&self, read_only: bool) -> String {
        let t = self.total();
        let r = &self.report;
        if read_only {
            return format!(
                "{}: read {} bytes in {} reads, {:.3} s, {:.0} MB/s",
                crate::common::head(&self.volume),
                thousands(r.bytes_read),
                r.reads,
                t.as_secs_f64(),
                per_second(r.bytes_read, t) / 1e6
            );
        }
        format!(
            "{}: {} entries from {} records in {:.3} s: {:.2} M entries/s, {:.2} M records/s, {:.0} MB/s",
            crate::common::head(&self.volume),
            thousands(self.entries),
            thousands(r.records_read),
            t.as_secs_f64(),
            per_second(self.entries, t) / 1e6,
            per_second(r.records_read, t) / 1e6,
            per_second(r.bytes_read, t) / 1e6
        )
    }

    fn to_json(&self) -> serde_json::Value {
        let t = &self.report.times;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let total = self.total();
        json!({
            "volume": self.volume, "entries": self.entries, "records_read": self.report.records_read,
            "bytes_read": self.report.bytes_read, "reads": self.report.reads, "threads": self.report.threads,
            "concurrency": self.report.concurrency, "io_size": self.report.io_size,
            "ms": {"open": ms(self.open), "plan": ms(t.plan), "read": ms(t.read), "parse": ms(t.parse),
                   "build": ms(t.build), "merge": ms(t.merge), "totals": ms(t.totals), "total": ms(total),
                   "aids": self.finish.as_ref().map(|f| ms(f.aids)),
                   "write": self.finish.as_ref().map(|f| ms(f.write)),
                   "sync": self.finish.as_ref().map(|f| ms(f.sync)),
                   "index": self.finish.as_ref().map(|f| ms(total + f.aids + f.write))},
            "entries_per_s": per_second(self.entries, total),
            "records_per_s": per_second(self.report.records_read, total),
            "mb_per_s": per_second(self.report.bytes_read, total) / 1e6,
        })
    }
}

fn median(runs: &[Run]) -> Option<&Run> {
    let mut v: Vec<&Run> = runs.iter().collect();
    v.sort_by_key(|r| r.total());
    v.get(v.len() / 2).copied()
}

/// Peak resident set size of this process so far.
fn peak_rss_bytes() -> u64 {
    #[cfg(unix)]
    {
        // SAFETY: getrusage only writes into the struct we pass, which is zero-initialised plain data.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0 {
            return ru.ru_maxrss as u64 * 1024;
        }
    }
    0
}

/// One line of the query mix.
struct MixQuery {
    class: String,
    text: String,
    sort: Option<uffs_query::SortKey>,
    desc: bool,
    limit: Option<usize>,
    count: bool,
    glob: bool,
}

fn read_mix(path: &std::path::Path) -> Result<Vec<MixQuery>> {
    use anyhow::Context;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut cols = line.split('\t');
        let class = cols.next().unwrap_or("").to_string();
        let text = cols.next().unwrap_or("").to_string();
        let mut q = MixQuery {
            class,
            text,
            sort: None,
            desc: false,
            limit: None,
            count: false,
            glob: false,
        };
        for opt in cols.next().unwrap_or("").split_whitespace() {
            match opt.split_once('=') {
                Some(("sort", k)) => {
                    let key = <uffs_search::Sort as clap::ValueEnum>::from_str(k, true)
                        .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), n + 1))?;
                    q.sort = Some(key.into());
                }
                Some(("limit", v)) => q.limit = Some(v.parse()?),
                None if opt == "desc" => q.desc = true,
                None if opt == "count" => q.count = true,
                None if opt == "glob" => q.glob = true,
                _ => anyhow::bail!("{}:{}: unknown option {opt:?}", path.display(), n + 1),
            }
        }
        out.push(q);
    }
    Ok(out)
}

/// Median engine-side time per class that the search issue sets, in milliseconds.
fn class_target(class: &str) -> Option<f64> {
    match class {
        "targeted" => Some(1.0),
        "path" | "boolean" => Some(10.0),
        "regex" => Some(30.0),
        "sorted" => Some(2.0),
        "count" => Some(5.0),
        _ => None,
    }
}

/// `uffs bench SOURCE|INDEX --queries FILE`: engine-side time of each query of the mix (parse, search, sort or
/// count; not printing), median over `runs` after one warm-up run that also builds the searcher's helper
/// structures (reported as `prepare`).
pub fn run_queries(
    spec: &str,
    partition: Option<u32>,
    file: &std::path::Path,
    runs: usize,
    as_json: bool,
) -> Result<()> {
    use uffs_query::Searcher;
    let mix = read_mix(file)?;
    let t = Instant::now();
    let parts = crate::common::load_indexes(spec, partition, false)?;
    let load = t.elapsed();
    // An index under a delta is searched as the user's query searches it: both parts, the answers merged.
    let searchers: Vec<(String, Searcher)> = crate::common::searchers(parts);
    let targets: Vec<(&str, &Searcher)> = searchers.iter().map(|(p, s)| (p.as_str(), s)).collect();
    let entries: usize = searchers.iter().map(|(_, s)| s.index().len()).sum();
    let now = crate::query_cmd::now_filetime();
    let run_one = |q: &MixQuery| -> Result<usize> {
        let req = uffs_search::SearchRequest {
            glob: q.glob,
            count: q.count,
            reverse: q.desc,
            limit: q.limit,
            ..uffs_search::SearchRequest::new(q.text.clone())
        };
        let expr = uffs_search::compile(&req, now)?;
        let (found, hits) = uffs_search::execute::hits(&targets, &req, &expr, q.sort, None)?;
        std::hint::black_box(hits);
        Ok(found)
    };
    let t = Instant::now();
    for q in &mix {
        run_one(q)?;
    }
    let prepare = t.elapsed();
    let mut rows = Vec::new();
    for q in &mix {
        let mut times = Vec::with_capacity(runs);
        let mut hits = 0;
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            hits = run_one(q)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(|a, b| a.total_cmp(b));
        rows.push((q, hits, times[times.len() / 2], times[0]));
    }
    let label = |q: &MixQuery| {
        let mut s = if q.text.is_empty() {
            "(everything)".to_string()
        } else {
            q.text.clone()
        };
        if let Some(k) = q.sort {
            s += &format!(" --sort {k:?}{}", if q.desc { " --reverse" } else { "" }).to_lowercase();
        }
        if let Some(l) = q.limit {
            s += &format!(" --limit {l}");
        }
        if q.count {
            s += " --count";
        }
        if q.glob {
            s += " --glob";
        }
        s
    };
    if as_json {
        let qs: Vec<_> = rows
            .iter()
            .map(|(q, hits, med, min)| json!({"class": q.class, "query": label(q), "hits": hits, "median_ms": med, "min_ms": min}))
            .collect();
        let out = json!({"source": spec, "entries": entries, "runs": runs, "load_ms": load.as_secs_f64() * 1e3,
            "prepare_ms": prepare.as_secs_f64() * 1e3, "queries": qs});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "{} entries; load {:.0} ms; first run of the mix (builds helper structures) {:.0} ms; median of {runs} runs:",
        thousands(entries as u64),
        load.as_secs_f64() * 1e3,
        prepare.as_secs_f64() * 1e3
    );
    let w = rows
        .iter()
        .map(|(q, ..)| label(q).chars().count())
        .max()
        .unwrap_or(10)
        .min(60);
    for (q, hits, med, min) in &rows {
        println!(
            "  {:<10} {:<w$}  {:>9} hits  {:>8.3} ms  (min {:.3})",
            q.class,
            label(q),
            thousands(*hits as u64),
            med,
            min
        );
    }
    println!("per class (slowest median against the target):");
    let mut classes: Vec<&str> = rows.iter().map(|(q, ..)| q.class.as_str()).collect();
    classes.dedup();
    for c in classes {
        let worst = rows
            .iter()
            .filter(|(q, ..)| q.class == c)
            .map(|r| r.2)
            .fold(0.0, f64::max);
        match class_target(c) {
            Some(t) => println!(
                "  {c:<10} {worst:>8.3} ms  target <= {t} ms  {}",
                if worst <= t { "ok" } else { "MISSED" }
            ),
            None => println!("  {c:<10} {worst:>8.3} ms  (no target)"),
        }
    }
    Ok(())
}
