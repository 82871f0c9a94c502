//! `uffs du [PATH]`: a folder's children with their recursive sizes, file and folder counts and share of the
//! folder, like `du` or ncdu but from the index. Through the daemon (every registered volume), or an index file
//! or source. The flags become a search request's `du` (run by `uffs_search`).

use anyhow::Result;
use uffs_results::OutputArgs;
use uffs_search::{DuRequest, DuSort, SearchRequest};

use crate::query_cmd::Place;

#[derive(clap::Args, Debug)]
pub struct DuArgs {
    /// The folder (default: the root of every volume). With several volumes, start it with the volume's name
    /// (`C:\Windows`, `data:/photos`).
    pub path: Option<String>,
    /// Show folders this many levels below PATH.
    #[arg(long, short = 'd', default_value_t = 1, value_name = "N")]
    pub depth: u32,
    /// Order of each folder's children: allocated (most disk space first), size (largest logical size first),
    /// count (most files and folders first), name. SHARE is of the parent's allocated space (of its size with
    /// `--sort size`).
    #[arg(long, value_enum, default_value_t = DuSort::Allocated)]
    pub sort: DuSort,
    /// Show at most N children of each folder (0: all of them).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::common::count)]
    pub limit: Option<usize>,
    /// Use this index file instead of the daemon.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["source", "dataset"])]
    pub index: Option<std::path::PathBuf>,
    /// Use every volume of this Parquet dataset (`uffs export --dataset`) instead of the daemon.
    #[arg(long, value_name = "DIR", conflicts_with = "source")]
    pub dataset: Option<std::path::PathBuf>,
    /// Index this source first instead of asking the daemon.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// With --source a whole disk: only its partition N (as SOURCE@N; `uffs info SOURCE` lists them).
    #[arg(long, value_name = "N", requires = "source")]
    pub partition: Option<u32>,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn run(a: DuArgs) -> Result<bool> {
    let place = Place {
        index: a.index,
        dataset: a.dataset,
        source: a.source,
        partition: a.partition,
        snapshots: false,
    };
    let req = SearchRequest {
        du: Some(DuRequest {
            path: a.path,
            depth: a.depth.max(1),
            sort: a.sort,
            limit: a.limit,
        }),
        output: a.output,
        ..SearchRequest::default()
    };
    crate::query_cmd::run_request(&place, &req)
}
