//! A request's `du`: a folder's children with their recursive sizes, file and folder counts and share of the
//! folder, like `du` or ncdu but from the index (the totals come from `uffs_query::usage`), and at a volume's
//! root how they compare with what `$Bitmap` marks in use. On volumes whose files share data (Btrfs, XFS), an
//! `exclusive` column: what no other file or snapshot also holds, as `btrfs filesystem du` shows it.

use uffs_index::paths::fold;
use uffs_index::{flags, EntryId};
use uffs_query::ast::{KindFilter, Pattern, Term, TermKind, TextMatch};
use uffs_query::{Expr, SearchOptions, Searcher};
use uffs_results::{full_path, human, thousands, Printer};

use crate::request::{DuRequest, DuSort};
use crate::{Error, Targets};

/// One volume: its prefix and its searchers (an index, or an index and the delta over it).
struct Volume<'a> {
    prefix: &'a str,
    parts: Vec<&'a Searcher>,
}

/// A line of the listing: an entry of a volume part, with what it holds.
struct Line {
    part: usize,
    id: EntryId,
    size: u64,
    allocated: u64,
    /// `None` on a volume that does not tell it.
    exclusive: Option<u64>,
    files: u64,
    folders: u64,
    depth: u32,
    share: f64,
}

/// Prints the folder sizes `du` asks for; returns how many folders were found at its path.
pub fn print(targets: &Targets<'_>, du: &DuRequest, out: &mut Printer<'_>) -> Result<usize, Error> {
    let mut volumes: Vec<Volume<'_>> = Vec::new();
    for (prefix, s) in targets {
        match volumes.last_mut() {
            Some(v) if v.prefix == *prefix => v.parts.push(s),
            _ => volumes.push(Volume {
                prefix,
                parts: vec![s],
            }),
        }
    }
    let mut lines: Vec<(usize, Line)> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let (mut found, mut asked) = (0, 0);
    for (v, vol) in volumes.iter().enumerate() {
        let rel = match &du.path {
            None => Some("/".to_string()),
            Some(p) => relative(p, vol.prefix, volumes.len()),
        };
        let Some(rel) = rel else { continue };
        asked += 1;
        for (part, id) in resolve(vol, &rel) {
            found += 1;
            let mut rows = Vec::new();
            let top = line_of(vol, part, id, 0, None, du.sort);
            if rel == "/" {
                notes.push(bitmap_note(vol, &top));
            }
            walk(vol, &top, du, &mut rows);
            rows.push(Line {
                share: 100.0,
                ..top
            });
            lines.extend(rows.into_iter().map(|l| (v, l)));
        }
    }
    if asked == 0 || found == 0 {
        let p = du.path.as_deref().unwrap_or("/");
        let names: Vec<&str> = volumes
            .iter()
            .map(|v| v.prefix.trim_end_matches(':'))
            .collect();
        let within = match names[..] {
            // An index file or a source: its paths start at the volume's root, whatever drive it was.
            [""] => "the volume".to_string(),
            [one] => format!("volume {one}"),
            _ => format!("the volumes {}", names.join(", ")),
        };
        let mut msg = format!("no folder '{p}' in {within}");
        if let (true, Some((drive, rest))) = (names == [""], p.split_once(':')) {
            if drive.len() == 1 {
                msg += &format!(
                    " (its paths start at its root: try '/{}')",
                    rest.replace('\\', "/").trim_start_matches('/')
                );
            }
        }
        return Err(Error::BadRequest(msg));
    }
    for (_, s) in targets {
        if s.index().needs_check() {
            s.index().touch_rows(&[]);
            s.index().verify_touched().map_err(Error::failed)?;
        }
    }
    let table = out.is_tabular();
    // The exclusive column is there when a volume listed tells it (empty on the lines of one that does not).
    let exclusive = lines.iter().any(|(_, l)| l.exclusive.is_some());
    let rows: Vec<(Vec<String>, Vec<String>)> = lines
        .iter()
        .map(|(v, l)| {
            let vol = &volumes[*v];
            let path = full_path(vol.parts[l.part].index(), vol.prefix, l.id);
            // The space used comes first, as `du` shows it; the logical size beside it.
            let mut human_row = vec![human(l.allocated)];
            let mut raw = vec![l.allocated.to_string()];
            if exclusive {
                human_row.push(l.exclusive.map(human).unwrap_or_default());
                raw.push(l.exclusive.map(|x| x.to_string()).unwrap_or_default());
            }
            human_row.extend([
                human(l.size),
                thousands(l.files),
                thousands(l.folders),
                format!("{:.1}%", l.share),
                path.clone(),
            ]);
            raw.extend([
                l.size.to_string(),
                l.files.to_string(),
                l.folders.to_string(),
                format!("{:.2}", l.share),
                l.depth.to_string(),
                path,
            ]);
            (human_row, raw)
        })
        .collect();
    let mut names = vec!["allocated"];
    if exclusive {
        names.push("exclusive");
    }
    names.extend(["size", "files", "folders", "share"]);
    if !table {
        names.push("depth");
    }
    names.push("path");
    let mut numeric = vec![true; names.len()];
    numeric[names.len() - 1] = false;
    out.records(&names, &numeric, &rows)?;
    for n in notes.into_iter().filter(|n| !n.is_empty()) {
        out.note(n);
    }
    Ok(found)
}

/// How a volume's root total compares with what its `$Bitmap` marked in use when the index was last brought up
/// to date: equal on a volume at rest, since the total holds every cluster of every record in use.
fn bitmap_note(vol: &Volume<'_>, root: &Line) -> String {
    let meta = &vol.parts[vol.parts.len() - 1].index().meta;
    if meta.bytes_in_use == 0 {
        return String::new();
    }
    let name = vol.prefix.trim_end_matches(':');
    let volume = if name.is_empty() || name == "/" {
        String::new()
    } else {
        format!("{name}: ")
    };
    // Each file system's own table of what is in use.
    let table = match meta.filesystem {
        uffs_index::FileSystem::Ntfs => "$Bitmap",
        uffs_index::FileSystem::ExFat => "the allocation bitmap",
        fs if fs.is_fat() => "the FAT",
        // ext: the superblock's free block count (what `df` shows), which the block bitmaps add up to.
        _ => "the superblock",
    };
    let compare = match root.allocated.cmp(&meta.bytes_in_use) {
        std::cmp::Ordering::Equal => "equal".to_string(),
        std::cmp::Ordering::Less => format!(
            "{} bytes fewer: clusters marked in use that no record holds",
            thousands(meta.bytes_in_use - root.allocated)
        ),
        std::cmp::Ordering::Greater => format!(
            "{} bytes more: records claim clusters {table} marks free",
            thousands(root.allocated - meta.bytes_in_use)
        ),
    };
    format!(
        "{volume}{table} marks {} in use of {} ({} bytes); the folders hold {} bytes: {compare}",
        human(meta.bytes_in_use),
        human(meta.bytes_total),
        thousands(meta.bytes_in_use),
        thousands(root.allocated),
    )
}

/// `path` as a path inside the volume named `prefix` (`/`-separated, from its root), or `None` when it names
/// another volume. Without a volume name it is in every volume.
fn relative(path: &str, prefix: &str, volumes: usize) -> Option<String> {
    let p = path.replace('\\', "/");
    let named = prefix.len() > 1
        && p.len() >= prefix.len()
        && p.is_char_boundary(prefix.len())
        && p[..prefix.len()].eq_ignore_ascii_case(prefix);
    let rest = if named {
        &p[prefix.len()..]
    } else if volumes > 1 && looks_named(&p) {
        return None;
    } else if looks_named(&p) {
        // One volume, named as uffs printed it elsewhere (`C:\Windows`, `@vss1:/x` from the daemon or a
        // --snapshots search): its path from the root.
        p.split_once(':').map_or(&p[..], |(_, rest)| rest)
    } else {
        &p[..]
    };
    let rest = rest.trim_end_matches('/');
    Some(if rest.starts_with('/') {
        rest.to_string()
    } else {
        format!("/{rest}")
    })
}

/// Whether a path starts with a volume name (`C:`, `data:`).
fn looks_named(p: &str) -> bool {
    p.split_once(':')
        .is_some_and(|(head, _)| !head.is_empty() && !head.contains('/'))
}

/// The folders of a volume at `rel`, as (part, entry): found through the name order (a whole-name match of the
/// last component), then compared by full path.
fn resolve(vol: &Volume<'_>, rel: &str) -> Vec<(usize, EntryId)> {
    let parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
    let Some(last) = parts.last() else {
        // The root: of the delta when there is one (it replaces the base's).
        let p = vol.parts.len() - 1;
        return vec![(p, vol.parts[p].index().root())];
    };
    let want = fold(rel);
    let term = Expr::Term(Term {
        span: 0..0,
        kind: TermKind::Text(TextMatch {
            pattern: Pattern::Wildcard(fold(&last.replace(['*', '?'], "\u{0}"))),
            path: false,
            case_sensitive: false,
            whole_word: false,
            diacritics: true,
        }),
        only: Some(KindFilter::Folder),
    });
    let mut out = Vec::new();
    for (p, s) in vol.parts.iter().enumerate() {
        let hits = s.search(&term, &SearchOptions::default());
        for id in hits.iter() {
            if fold(&s.index().path(id)) == want {
                out.push((p, id));
            }
        }
    }
    out.truncate(1);
    out
}

/// The line of entry `id`; its share is of `parent`'s allocated space (of its size when sorting by size).
fn line_of(
    vol: &Volume<'_>,
    part: usize,
    id: EntryId,
    depth: u32,
    parent: Option<&Line>,
    sort: DuSort,
) -> Line {
    let s = vol.parts[part];
    let idx = s.index();
    let (u, _) = s.usage();
    let (size, allocated, exclusive, files, folders) = match u.of(part, id) {
        Some(t) => (t.size, t.allocated, t.exclusive, t.files, t.folders),
        None => (
            idx.size(id),
            idx.allocated(id),
            idx.exclusive(id).unwrap_or(0),
            1,
            0,
        ),
    };
    Line {
        part,
        id,
        size,
        allocated,
        exclusive: idx.has_exclusive().then_some(exclusive),
        files,
        folders,
        depth,
        share: match (parent, sort) {
            (Some(p), DuSort::Size) if p.size != 0 => 100.0 * size as f64 / p.size as f64,
            (Some(p), _) if p.allocated != 0 => 100.0 * allocated as f64 / p.allocated as f64,
            _ => 0.0,
        },
    }
}

/// Adds the lines of `folder`'s children, and of theirs down to the depth asked, before the folder's own.
fn walk(vol: &Volume<'_>, folder: &Line, du: &DuRequest, rows: &mut Vec<Line>) {
    if folder.depth >= du.depth.max(1) {
        return;
    }
    let s = vol.parts[folder.part];
    let mut kids: Vec<Line> = s
        .children(folder.id)
        .into_iter()
        .map(|(p, c)| line_of(vol, p, c, folder.depth + 1, Some(folder), du.sort))
        .collect();
    // Each child's folded name once, then the key: the sort compares numbers and names, allocating nothing.
    let name = |l: &Line| {
        String::from_utf8_lossy(vol.parts[l.part].index().folded_name(l.id)).into_owned()
    };
    let mut keyed: Vec<(u64, String, Line)> = kids
        .drain(..)
        .map(|l| {
            let k = match du.sort {
                DuSort::Allocated => u64::MAX - l.allocated,
                DuSort::Exclusive => u64::MAX - l.exclusive.unwrap_or(l.allocated),
                DuSort::Size => u64::MAX - l.size,
                DuSort::Count => u64::MAX - (l.files + l.folders),
                DuSort::Name => 0,
            };
            (k, name(&l), l)
        })
        .collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    kids.extend(keyed.into_iter().map(|k| k.2));
    if let Some(l) = du.limit.filter(|&l| l > 0) {
        kids.truncate(l);
    }
    for k in kids {
        let is_dir = vol.parts[k.part].index().flags(k.id) & flags::DIRECTORY != 0;
        if is_dir {
            walk(vol, &k, du, rows);
        }
        rows.push(k);
    }
}
