//! `uffs hash [QUERY]`: the hashes of the files a query selects, read from the volume in disk order on every
//! core ([`crate::contents`]), printed as `sha256sum` lines, as hashdeep's format, or as the results layer's
//! formats with the entry's columns; `--known` marks each file against hash sets (hash lists, hashdeep files,
//! NSRL RDS), `--unknown` keeps the files no set knows.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use uffs_hash::{Algo, Algos, Digests, Hasher, KnownSets};
use uffs_query::Searcher;
use uffs_results::{full_path, ColumnType, OutputArgs, Printer, Value};
use uffs_search::{SearchRequest, Sort};

use crate::contents::{self, Selection};

#[derive(clap::Args, Debug)]
pub struct HashArgs {
    /// Only files matching this query (default: every file).
    #[arg(value_name = "QUERY")]
    pub query: Vec<String>,
    /// The algorithms, comma-separated: md5, sha1, sha256, xxh3.
    #[arg(long, value_name = "LIST", default_value = "sha256")]
    pub algo: String,
    /// Print hashdeep's format (`%%%% HASHDEEP-1.0`), which `hashdeep -k FILE -a` audits against.
    #[arg(long, conflicts_with = "format")]
    pub hashdeep: bool,
    /// Mark each file known or unknown by this hash set (repeatable): md5sum/sha1sum/sha256sum lines, a hashdeep
    /// file, or an NSRL RDS (SQLite).
    #[arg(long = "known", value_name = "FILE")]
    pub known: Vec<PathBuf>,
    /// With --known: print only the files no set knows.
    #[arg(long, requires = "known")]
    pub unknown: bool,
    #[command(flatten)]
    pub files: contents::FilesArgs,
    /// Sort the files (default: index order).
    #[arg(long, value_enum)]
    pub sort: Option<Sort>,
    /// Hash at most N files.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::common::count)]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A file hashed: its hit, size, digests and the set that knows it (`NAME (md5)`), if one does.
type Row = (usize, u64, Digests, Option<String>);

/// How the lines are written.
enum Style {
    /// `HEX  PATH`, as `sha256sum` writes (one algorithm).
    Sum(Algo),
    Hashdeep(uffs_hash::format::Hashdeep),
    /// The results layer: path, size, one column per algorithm, and `known` with --known.
    Columns,
}

/// Hashes the files; true when any was printed.
pub fn run(a: HashArgs) -> Result<bool> {
    let wanted = Algos::parse(&a.algo)?;
    let known = KnownSets::open(&a.known).context("reading the --known sets")?;
    for set in known.sets() {
        let r = set.report();
        if r.bad_lines > 0 {
            eprintln!(
                "uffs hash: {}: {} line(s) without a hash passed over",
                set.path().display(),
                r.bad_lines
            );
        }
    }
    // What is computed: what is printed, and an algorithm of each set that shares none of those.
    let algos = known.algos_to_compute(wanted);
    let style = if a.hashdeep {
        Style::Hashdeep(uffs_hash::format::Hashdeep::new(wanted)?)
    } else if a.output.format.is_some() || a.output.output.is_some() {
        Style::Columns
    } else if !a.known.is_empty() && !a.unknown {
        // Which set knew each file, by which digest (an MD5 list's, computed beside the sha256 asked): columns.
        Style::Columns
    } else if wanted.len() == 1 {
        Style::Sum(wanted.iter().next().expect("one"))
    } else {
        bail!("several algorithms do not fit sum lines: add --hashdeep, or --format csv (jsonl, parquet, table)")
    };
    let mut req = SearchRequest::new(a.query.join(" "));
    req.sort = a.sort;
    req.limit = a.limit;
    let sel = a.files.select(req, "uffs hash")?;
    let (answers, outcome) =
        contents::read_each(&sel, u64::MAX, "hashing", &Default::default(), |_, f| {
            let mut h = Hasher::new(algos);
            let size = f.len();
            match f.as_slice() {
                Some(bytes) => h.update(bytes),
                None => {
                    let mut buf = vec![0u8; (1 << 20).min(size as usize).max(1)];
                    loop {
                        match f.read(&mut buf) {
                            Ok(0) => break,
                            Ok(n) => h.update(&buf[..n]),
                            Err(e) => return Err(e.to_string()),
                        }
                    }
                }
            }
            Ok((size, h.finish()))
        })?;
    let rows: Vec<Row> = answers
        .into_iter()
        .enumerate()
        .filter_map(|(k, r)| r.ok().map(|(size, d)| (k, size, d)))
        .map(|(k, size, d)| {
            let by = known.known_by(&d)?.map(|(set, algo)| {
                let name = set.path().file_name().unwrap_or(set.path().as_os_str());
                format!("{} ({})", name.to_string_lossy(), algo.name())
            });
            Ok((k, size, d, by))
        })
        .filter(|r| !matches!(r, Ok(r) if a.unknown && r.3.is_some()))
        .collect::<Result<_, uffs_hash::Error>>()?;
    // The columns: the algorithms asked, and with --known those the sets were searched by.
    let shown = if a.known.is_empty() { wanted } else { algos };
    print(&sel, &style, shown, !a.known.is_empty(), &rows, &a.output)?;
    if outcome.failed > 0 {
        crate::common::mark_partial();
        eprintln!(
            "uffs hash: {} of {} files could not be read{}",
            outcome.failed,
            outcome.failed + outcome.read,
            match outcome.encrypted {
                0 => String::new(),
                n => format!(" ({n} encrypted)"),
            }
        );
    }
    Ok(!rows.is_empty())
}

fn print(
    sel: &Selection,
    style: &Style,
    algos: Algos,
    marked: bool,
    rows: &[Row],
    output: &OutputArgs,
) -> Result<()> {
    let refs: Vec<(&str, &Searcher)> = sel.targets.iter().map(|(p, s)| (p.as_str(), s)).collect();
    let path = |k: usize| {
        let (t, id) = sel.hits[k];
        full_path(refs[t].1.index(), refs[t].0, id)
    };
    match style {
        Style::Columns => {
            let mut names: Vec<&'static str> = vec!["path", "size"];
            let mut types = vec![ColumnType::Text, ColumnType::Integer];
            for a in algos.iter() {
                names.push(a.name());
                types.push(ColumnType::Text);
            }
            if marked {
                names.extend(["known", "known_by"]);
                types.extend([ColumnType::Bool, ColumnType::Text]);
            }
            let table: Vec<Vec<Value>> = rows
                .iter()
                .map(|(k, size, d, known)| {
                    let mut r = vec![Value::Text(path(*k)), Value::Int(Some(*size))];
                    r.extend(
                        algos
                            .iter()
                            .map(|a| Value::Text(d.hex(a).unwrap_or_default())),
                    );
                    if marked {
                        r.push(Value::Bool(known.is_some()));
                        r.push(Value::Text(known.clone().unwrap_or_default()));
                    }
                    r
                })
                .collect();
            let mut out = Printer::new(output)?;
            out.values(&names, &types, &table)?;
            out.finish()?;
        }
        Style::Sum(algo) => {
            let sum = uffs_hash::format::Sum::new(*algo);
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            for (k, _, d, _) in rows {
                sum.write_file(&mut w, d, path(*k).as_bytes())?;
            }
            w.flush()?;
        }
        Style::Hashdeep(hd) => {
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            let argv: Vec<String> = std::env::args().collect();
            hd.write_header_here(&mut w, &argv)?;
            for (k, size, d, _) in rows {
                hd.write_file(&mut w, *size, d, path(*k).as_bytes())?;
            }
            w.flush()?;
        }
    }
    Ok(())
}
