//! `grep` for the servers (the MCP tool, answered by [`LocalBackend`](crate::backend::LocalBackend)): the lines
//! of the files a query selects that match a pattern, found as `uffs grep` finds them (the same selection,
//! reading and searcher, [`crate::grep_cmd::search_file`]) but given as data. The lines kept are the first
//! `max_lines` in the query's order, whatever order the files finish in; the others are only counted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use uffs_grep::{Grep, Options};
use uffs_query::Searcher;
use uffs_results::full_path;
use uffs_search::SearchRequest;
use uffs_serve::{Error, GrepAnswer, GrepLine, GrepRequest, Stop};

use crate::contents;
use crate::query_cmd::{now_filetime, Place};

/// Unreadable files named in an answer; the others are counted on stderr.
const UNREADABLE_NAMED: usize = 50;

/// Runs `req` over `targets` (loaded from `place`, whose source the files are read from); once `stop` is set
/// (the client went away), no further file is read.
pub fn grep(
    targets: Arc<Vec<(String, Searcher)>>,
    place: &Place,
    req: &GrepRequest,
    stop: &Stop,
) -> Result<GrepAnswer, Error> {
    let options = Options {
        fixed_strings: req.fixed_strings,
        ignore_case: req.ignore_case,
        word: req.word,
        ..Options::new(req.pattern.clone())
    };
    let grep = Grep::new(&options).map_err(|e| Error::BadRequest(e.to_string()))?;
    let search = SearchRequest::new(req.query.clone());
    uffs_search::compile(&search, now_filetime())?;
    let sel = contents::select_from(targets, place, &search, false, "grep")
        .map_err(|e| Error::Failed(format!("{e:#}")))?;
    let refs: Vec<(&str, &Searcher)> = sel.targets.iter().map(|(p, s)| (p.as_str(), s)).collect();
    let kept = Mutex::new(Kept::new(req.max_lines));
    let pool = Mutex::new(Vec::new());
    let path_of = |hit: usize| {
        let (t, id) = sel.hits[hit];
        full_path(refs[t].1.index(), refs[t].0, id)
    };
    let (answers, _) = contents::read_each(&sel, u64::MAX, "grep", stop.flag(), |hits, f| {
        crate::grep_cmd::search_every_path(&grep, &pool, hits, &path_of, f, |hit, found, out| {
            let mut k = kept.lock().expect("kept");
            k.lines_matched += found.lines;
            if found.matched {
                k.files_matched += 1;
            }
            if !out.is_empty() {
                k.add(hit, file_lines(&path_of(hit), out));
            }
            Ok(())
        })?;
        Ok(())
    })
    .map_err(|e| Error::Failed(format!("{e:#}")))?;
    let unreadable = answers
        .iter()
        .zip(&sel.hits)
        .filter_map(|(a, &(t, id))| match a {
            Err(why) if !why.is_empty() => Some(format!(
                "{}: {why}",
                full_path(refs[t].1.index(), refs[t].0, id)
            )),
            _ => None,
        })
        .take(UNREADABLE_NAMED)
        .collect();
    let k = kept.into_inner().expect("kept");
    let mut answer = GrepAnswer {
        files: sel.hits.len() as u64,
        files_matched: k.files_matched,
        lines_matched: k.lines_matched,
        unreadable,
        ..GrepAnswer::default()
    };
    for f in k.files.into_values() {
        let room = req.max_lines - answer.lines.len();
        answer.lines.extend(f.lines.into_iter().take(room));
        answer.notes.extend(f.notes);
    }
    Ok(answer)
}

/// One file's matching lines, and what `rg` says of it besides (a binary file's note).
struct FileLines {
    lines: Vec<GrepLine>,
    notes: Vec<String>,
}

/// The files whose lines may be among the first `max`: those earliest in the query's order.
struct Kept {
    max: usize,
    /// By the file's place in the query's order.
    files: BTreeMap<usize, FileLines>,
    lines: usize,
    files_matched: u64,
    lines_matched: u64,
}

impl Kept {
    fn new(max: usize) -> Kept {
        Kept {
            max,
            files: BTreeMap::new(),
            lines: 0,
            files_matched: 0,
            lines_matched: 0,
        }
    }

    /// Keeps file `hit`'s lines, then lets go of the files after those that hold the first `max` lines.
    fn add(&mut self, hit: usize, mut f: FileLines) {
        f.lines.truncate(self.max);
        self.lines += f.lines.len();
        self.files.insert(hit, f);
        while let Some(last) = self.files.last_entry() {
            let n = last.get().lines.len();
            if self.lines - n < self.max {
                break;
            }
            self.lines -= n;
            last.remove();
        }
    }
}

/// A file's output as `uffs grep` prints it (`PATH:LINE:TEXT`, and `PATH: …` notes) read back into lines.
fn file_lines(path: &str, out: &[u8]) -> FileLines {
    let mut f = FileLines {
        lines: Vec::new(),
        notes: Vec::new(),
    };
    for l in out
        .strip_suffix(b"\n")
        .unwrap_or(out)
        .split(|&b| b == b'\n')
    {
        let numbered = l
            .strip_prefix(path.as_bytes())
            .and_then(|rest| rest.strip_prefix(b":"))
            .and_then(|rest| {
                let colon = rest.iter().position(|&b| b == b':')?;
                let n = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
                Some((n, &rest[colon + 1..]))
            });
        match numbered {
            Some((line, text)) => f.lines.push(GrepLine {
                path: path.to_string(),
                line,
                text: String::from_utf8_lossy(text).into_owned(),
            }),
            None => f.notes.push(String::from_utf8_lossy(l).into_owned()),
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> FileLines {
        FileLines {
            lines: (0..n)
                .map(|i| GrepLine {
                    path: "p".into(),
                    line: i as u64 + 1,
                    text: String::new(),
                })
                .collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_first_files_in_the_query_order_are_kept() {
        let mut k = Kept::new(5);
        k.add(7, lines(3));
        k.add(2, lines(1));
        k.add(9, lines(4));
        assert_eq!(k.files.keys().copied().collect::<Vec<_>>(), [2, 7, 9]);
        k.add(1, lines(4));
        // 1 and 2 hold five lines: 7 and 9 are let go.
        assert_eq!(k.files.keys().copied().collect::<Vec<_>>(), [1, 2]);
        k.add(0, lines(9));
        assert_eq!(k.files.keys().copied().collect::<Vec<_>>(), [0]);
        assert_eq!(k.lines, 5);
    }

    #[test]
    fn output_is_read_back_into_lines_and_notes() {
        let path = "D:\\a:b.txt";
        let out = b"D:\\a:b.txt:3:x:y\nD:\\a:b.txt:10:\nD:\\a:b.txt: binary file matches (found \"\\0\" byte around offset 7)\n";
        let f = file_lines(path, out);
        assert_eq!(
            f.lines
                .iter()
                .map(|l| (l.line, l.text.as_str()))
                .collect::<Vec<_>>(),
            [(3, "x:y"), (10, "")]
        );
        assert_eq!(f.notes.len(), 1);
        assert!(f.notes[0].contains("binary file matches"));
    }
}
