//! `uffs QUERY`: the command line's search flags, mapped into a [`SearchRequest`] and run on an index file, a
//! source, or through the daemon. (The request, and the executor every front end shares, are `uffs_search`'s.)

use std::path::PathBuf;

use anyhow::{bail, Result};
use uffs_query::Searcher;
use uffs_results::{self as output, OutputArgs};
use uffs_search::{Case, Facet, Kind, SearchRequest, Sort};

#[derive(clap::Args, Debug, Default, Clone)]
pub struct SearchArgs {
    /// The query, in Everything's syntax (several words are joined with spaces).
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,
    /// Search this index file (written by `uffs index`).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["source", "dataset"])]
    pub index: Option<PathBuf>,
    /// Search every volume of this Parquet dataset (written by `uffs export --dataset` or the daemon), each as
    /// `HOST/VOLUME:`; each file is read into an index once and kept in the cache.
    #[arg(long, value_name = "DIR", conflicts_with = "source")]
    pub dataset: Option<PathBuf>,
    /// Search this source (volume, disk image or $MFT capture), indexing it first.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// With --source a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
    #[arg(long, value_name = "N", requires = "source")]
    pub partition: Option<u32>,
    /// With --source: every shadow copy of the volume too (`uffs info SOURCE` lists them), each searched as a
    /// volume of its own whose paths start `@vssN:` (also `--volume @vss1`); one shadow copy alone is
    /// `--source SOURCE@vssN`. On Btrfs: every snapshot, paths `@snapN:`; one alone is `SOURCE@snapN`.
    #[arg(long, requires = "source")]
    pub snapshots: bool,
    /// Search only this volume (repeatable): a name `uffs volumes list` shows, or a partition of a disk
    /// (`@2`).
    #[arg(long = "volume", value_name = "NAME")]
    pub volumes: Vec<String>,
    /// Ignore case everywhere (instead of smart case).
    #[arg(short = 'i', long = "ignore-case", conflicts_with = "case_sensitive")]
    pub ignore_case: bool,
    /// Match case everywhere (instead of smart case).
    #[arg(short = 's', long)]
    pub case_sensitive: bool,
    /// Only files with this extension (repeatable).
    #[arg(short = 'e', long = "extension", value_name = "EXT")]
    pub extension: Vec<String>,
    /// Only regular files (f, file), folders (d, folder), or, on ext, symlinks (l, symlink), sockets (s, socket),
    /// FIFOs (p, fifo), block (b) or character (c) devices.
    #[arg(short = 't', long = "type", value_name = "TYPE", value_parser = ["f", "file", "d", "folder", "dir", "directory", "l", "symlink", "s", "socket", "p", "fifo", "pipe", "b", "block-device", "c", "char-device"])]
    pub kind: Option<String>,
    /// Size: +10M (at least), -1k (at most) or 4096 (exactly); units b k m g t (powers of 1024). Repeatable.
    #[arg(short = 'S', long, value_name = "SIZE", allow_hyphen_values = true)]
    pub size: Vec<String>,
    /// Modified within a duration (10min, 2h, 3d, 2weeks, 1y) or since a date (2024-05-01).
    #[arg(long, value_name = "WHEN")]
    pub changed_within: Option<String>,
    /// Modified before a duration ago or a date.
    #[arg(long, value_name = "WHEN")]
    pub changed_before: Option<String>,
    /// The query is one glob pattern over the whole name (or path with -p).
    #[arg(short = 'g', long, conflicts_with = "regex")]
    pub glob: bool,
    /// The query is one regular expression over the name (or path with -p).
    #[arg(short = 'r', long)]
    pub regex: bool,
    /// Match text terms against the full path instead of the name.
    #[arg(short = 'p', long)]
    pub full_path: bool,
    /// Show at most N results (leave it out for all).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::common::count)]
    pub limit: Option<usize>,
    /// Skip the first N results (for paging with --limit).
    #[arg(long, value_name = "N", default_value_t = 0, conflicts_with = "count",
          allow_negative_numbers = true, value_parser = crate::common::count)]
    pub offset: usize,
    /// Print only the number of matches.
    #[arg(long)]
    pub count: bool,
    /// Sort the results (default: index order, which is fastest).
    #[arg(long, value_enum)]
    pub sort: Option<Sort>,
    /// Reverse the order.
    #[arg(long)]
    pub reverse: bool,
    /// Include deleted entries (from an index built with --deleted).
    #[arg(long)]
    pub deleted: bool,
    /// Include named data streams.
    #[arg(long)]
    pub streams: bool,
    /// Count the matches per group instead of listing them: their number and total size per extension,
    /// folder, year or month modified, attribute letter, or size bucket.
    #[arg(long, value_enum, value_name = "GROUP", conflicts_with_all = ["count", "stats"])]
    pub facet: Option<Facet>,
    /// With --facet ext or folder: show the N largest groups (by count; default 25; 0 for all).
    #[arg(long, value_name = "N", requires = "facet")]
    pub top: Option<usize>,
    /// Print totals of the matches instead of listing them: how many, files and folders, total and allocated
    /// size, and the earliest and latest of each time.
    #[arg(long, conflicts_with = "count")]
    pub stats: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Where a command's search runs: an index file, a source indexed first, or (neither) the daemon.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Place {
    pub index: Option<PathBuf>,
    /// A Parquet dataset's folder.
    pub dataset: Option<PathBuf>,
    pub source: Option<String>,
    pub partition: Option<u32>,
    /// With `source`: its shadow copies too.
    pub snapshots: bool,
}

impl SearchArgs {
    /// Where the flags say to search.
    pub fn place(&self) -> Place {
        Place {
            index: self.index.clone(),
            dataset: self.dataset.clone(),
            source: self.source.clone(),
            partition: self.partition,
            snapshots: self.snapshots,
        }
    }

    /// The flags as the request every front end sends (clap has already refused the combinations that exclude
    /// each other).
    pub fn request(&self) -> SearchRequest {
        SearchRequest {
            query: self.query.join(" "),
            case: if self.case_sensitive {
                Case::Sensitive
            } else if self.ignore_case {
                Case::Ignore
            } else {
                Case::Smart
            },
            glob: self.glob,
            regex: self.regex,
            full_path: self.full_path,
            extensions: self.extension.clone(),
            kind: self.kind.as_deref().map(|k| match k {
                "f" | "file" => Kind::File,
                "l" | "symlink" => Kind::Symlink,
                "s" | "socket" => Kind::Socket,
                "p" | "fifo" | "pipe" => Kind::Fifo,
                "b" | "block-device" => Kind::BlockDevice,
                "c" | "char-device" => Kind::CharDevice,
                _ => Kind::Folder,
            }),
            size: self.size.clone(),
            changed_within: self.changed_within.clone(),
            changed_before: self.changed_before.clone(),
            volumes: self.volumes.clone(),
            deleted: self.deleted,
            streams: self.streams,
            sort: self.sort,
            reverse: self.reverse,
            offset: self.offset,
            limit: self.limit,
            count: self.count,
            facet: if self.stats {
                Some(Facet::Totals)
            } else {
                self.facet
            },
            top: self.top,
            du: None,
            output: self.output.clone(),
            ..SearchRequest::default()
        }
    }
}

pub fn now_filetime() -> u64 {
    uffs_index::time::now()
}

pub fn run(a: &SearchArgs) -> Result<bool> {
    run_request(&a.place(), &a.request())
}

/// Runs `req` where `place` says, printing to stdout or `req.output.output`: whether anything matched.
pub fn run_request(place: &Place, req: &SearchRequest) -> Result<bool> {
    if place.index.is_none() && place.source.is_none() && place.dataset.is_none() {
        return crate::daemon_cmd::query(req);
    }
    // A bad query is reported before anything is opened or indexed.
    let expr = uffs_search::compile(req, now_filetime())?;
    let names_deleted = expr.has_term(&|k| matches!(k, uffs_query::ast::TermKind::Deleted));
    let parts = match (&place.index, &place.source) {
        _ if place.dataset.is_some() => {
            let dir = place
                .dataset
                .as_deref()
                .unwrap_or(std::path::Path::new("."));
            if uffs_search::contents::reads_data(req, &expr) {
                bail!(
                    "a dataset holds the entries, not the files' data that content:, type: and hash: read: \
                     query the volume or its index file"
                );
            }
            crate::dataset::open(dir)?
        }
        (Some(f), _) => {
            // Opened in O(1): what the query reads is checked before anything is printed.
            let parts = crate::common::open_index_file(f)?;
            if req.deleted && !parts[0].index.meta.has_deleted {
                bail!(
                    "{} was built without deleted entries; rebuild it with `uffs index --deleted`",
                    f.display()
                );
            }
            if names_deleted && !parts[0].index.meta.has_deleted {
                eprintln!(
                    "uffs: note: {} was built without deleted entries, so `deleted:` finds none; rebuild it with \
                     `uffs index --deleted`",
                    f.display()
                );
            }
            parts
        }
        // A `deleted:` term builds the source's index with its deleted entries, as --deleted does.
        (None, Some(s)) => crate::common::load_indexes_with(
            s,
            place.partition,
            req.deleted || names_deleted,
            place.snapshots,
        )?,
        (None, None) => unreachable!("handled above"),
    };
    let targets: Vec<(String, Searcher)> = crate::common::searchers(parts);
    let refs: Vec<(&str, &Searcher)> = targets.iter().map(|(p, s)| (p.as_str(), s)).collect();
    // content:, type: and hash: read the files' data: the source is opened only for them.
    let source = if uffs_search::contents::reads_data(req, &expr) {
        Some(crate::contents::open_data_source(place, &refs, "content:")?.0)
    } else {
        None
    };
    let inside = source
        .as_ref()
        .map(|s| crate::contents::volume_contents(&refs, s))
        .transpose()?;
    let mut out = output::Printer::new(&req.output)?;
    let found = uffs_search::run_with(
        &refs,
        req,
        &mut out,
        inside.as_ref().map(|i| i as &dyn uffs_search::Contents),
    )?;
    if let Some(i) = &inside {
        crate::contents::report_unreadable(i);
    }
    // A query that found nothing leaves no -o file (its temporary one goes with the printer; a count still
    // writes its 0).
    if found > 0 || req.count || req.output.output.is_none() {
        out.finish()?;
    }
    Ok(found > 0)
}

#[cfg(test)]
mod tests {
    use uffs_search::{Case, Facet, Kind, SearchRequest, Sort};

    fn request(args: &[&str]) -> SearchRequest {
        let mut argv = vec!["uffs"];
        argv.extend(args);
        crate::parse_from(argv)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .search
            .request()
    }

    /// The mapping from flags to the request is written by hand: each flag must land in its field, and a request
    /// with none is the default one.
    #[test]
    fn every_search_flag_reaches_the_request() {
        assert_eq!(request(&["x"]), SearchRequest::new("x"));
        let r = request(&[
            "report",
            "draft",
            "-i",
            "-e",
            "pdf",
            "-e",
            "docx",
            "-t",
            "f",
            "-S",
            "+1k",
            "-S",
            "-1m",
            "--changed-within",
            "2weeks",
            "--changed-before",
            "2024-05-01",
            "-p",
            "--limit",
            "5",
            "--offset",
            "2",
            "--sort",
            "ext",
            "--reverse",
            "--deleted",
            "--streams",
            "--volume",
            "C",
            "--format",
            "csv",
            "--columns",
            "path,size",
        ]);
        let want = SearchRequest {
            query: "report draft".into(),
            case: Case::Ignore,
            full_path: true,
            extensions: vec!["pdf".into(), "docx".into()],
            kind: Some(Kind::File),
            size: vec!["+1k".into(), "-1m".into()],
            changed_within: Some("2weeks".into()),
            changed_before: Some("2024-05-01".into()),
            volumes: vec!["C".into()],
            deleted: true,
            streams: true,
            sort: Some(Sort::Extension),
            reverse: true,
            offset: 2,
            limit: Some(5),
            output: r.output.clone(),
            ..SearchRequest::default()
        };
        assert_eq!(r, want);
        assert_eq!(r.output.format, Some(uffs_search::Format::Csv));
        assert_eq!(r.output.columns, ["path", "size"]);

        let r = request(&["x", "-s", "-g", "-t", "d", "--count"]);
        assert_eq!(
            (r.case, r.glob, r.kind, r.count),
            (Case::Sensitive, true, Some(Kind::Folder), true)
        );
        assert!(request(&["x", "-r"]).regex);
        let r = request(&["--facet", "size-bucket", "--top", "3"]);
        assert_eq!((r.facet, r.top), (Some(Facet::SizeBucket), Some(3)));
        assert_eq!(request(&["x", "--stats"]).facet, Some(Facet::Totals));
        assert_eq!(
            request(&["x", "--sort", "treesize"]).sort,
            Some(Sort::Treesize)
        );
    }
}
