//! `uffs sql QUERY`: the query as a SQL boolean expression over a Parquet dataset's columns, for DuckDB, Spark
//! or Trino (`uffs_query::sql`), so the same Everything query runs where the fleet's data lives.

use anyhow::{anyhow, Result};
use uffs_query::sql::{to_sql, Dialect, SqlOptions};
use uffs_query::{parse, ParseOptions};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialectArg {
    Duckdb,
    Spark,
    Trino,
}

#[derive(clap::Args, Debug)]
pub struct SqlArgs {
    /// The query, in uffs's query language (QUERY SYNTAX in `uffs --help`; docs/query-language.md); several words
    /// are one query.
    #[arg(value_name = "QUERY", required = true)]
    pub query: Vec<String>,
    /// The engine whose SQL to write.
    #[arg(long, value_enum, default_value_t = DialectArg::Duckdb)]
    pub dialect: DialectArg,
    /// Ignore case everywhere (instead of smart case).
    #[arg(short = 'i', long = "ignore-case", conflicts_with = "case_sensitive")]
    pub ignore_case: bool,
    /// Match case everywhere (instead of smart case).
    #[arg(short = 's', long)]
    pub case_sensitive: bool,
    /// Select deleted entries too (as a search's --deleted), where the dataset has them.
    #[arg(long)]
    pub deleted: bool,
    /// Select named streams too (as a search's --streams), where the dataset has them.
    #[arg(long)]
    pub streams: bool,
}

pub fn run(a: &SqlArgs) -> Result<()> {
    let text = a.query.join(" ");
    let case = if a.case_sensitive {
        Some(true)
    } else if a.ignore_case {
        Some(false)
    } else {
        None
    };
    let opts = ParseOptions {
        now: crate::query_cmd::now_filetime(),
        case,
    };
    let bad = |e: uffs_query::QueryError| anyhow!("bad query: {}", e.render(&text));
    let expr = parse(&text, &opts).map_err(bad)?;
    let dialect = match a.dialect {
        DialectArg::Duckdb => Dialect::DuckDb,
        DialectArg::Spark => Dialect::Spark,
        DialectArg::Trino => Dialect::Trino,
    };
    let sql = to_sql(
        &expr,
        dialect,
        SqlOptions {
            include_deleted: a.deleted,
            include_streams: a.streams,
        },
    )
    .map_err(bad)?;
    // A reader that stops early (`| head -c 80`) is no error.
    crate::print(format!("{sql}\n").as_bytes())
}
