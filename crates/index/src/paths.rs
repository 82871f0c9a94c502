//! The case folding names and paths are compared with, and folder paths built once so that writing every
//! entry's path (its folder's path, `/`, its name) builds no path twice.

use crate::build::MAX_PATH_BYTES;
use crate::index::{flags, EntryId, Index};

/// Appends UTF-8 `s` lower-cased to `out`, character by character (`char::to_lowercase`, which unlike
/// `str::to_lowercase` ignores context: a final Σ folds like any other, so a name and its parts fold alike).
/// A character whose lower case is longer or shorter in UTF-8 (the Kelvin sign, `İ`, a few dozen more) is kept
/// as it is: folding never changes a name's length in bytes, so folded names share the names' offsets.
pub fn fold_into(s: &[u8], out: &mut Vec<u8>) {
    if s.is_ascii() {
        out.extend(s.iter().map(u8::to_ascii_lowercase));
        return;
    }
    let mut buf = [0u8; 4];
    for c in String::from_utf8_lossy(s).chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase() as u8);
            continue;
        }
        let mut lower = c.to_lowercase();
        let l = match (lower.next(), lower.next()) {
            (Some(l), None) if l.len_utf8() == c.len_utf8() => l,
            _ => c,
        };
        out.extend_from_slice(l.encode_utf8(&mut buf).as_bytes());
    }
}

/// `s` folded as [`fold_into`] does.
pub fn fold(s: &str) -> String {
    let mut v = Vec::with_capacity(s.len());
    fold_into(s.as_bytes(), &mut v);
    String::from_utf8(v).unwrap_or_default()
}

/// The full path of every folder (`/`-separated from the root; the root's own path is empty), for writing every
/// entry's path (`uffs export`). Searches never keep these: they walk the folder tree instead.
#[derive(Debug, Clone)]
pub struct FolderPaths {
    text: Vec<u8>,
    /// Byte range of each folder's path (word-sized: hostile nesting can pass 4 GiB of text in total).
    span: Vec<(usize, usize)>,
}

const UNSET: (usize, usize) = (usize::MAX, 0);
/// On the chain being walked up (met again: a cycle).
const WALKING: (usize, usize) = (usize::MAX, 1);

impl FolderPaths {
    pub fn build(idx: &Index) -> FolderPaths {
        let mut p = FolderPaths {
            text: Vec::new(),
            span: vec![UNSET; idx.len()],
        };
        if idx.is_empty() {
            return p;
        }
        p.span[idx.root() as usize] = (0, 0);
        // A view's grafted folders have their paths now; the folders below them build on those.
        for (g, names) in idx.grafts().into_iter().flat_map(|g| g.iter()) {
            let start = p.text.len();
            for name in names {
                p.text.push(b'/');
                p.text.extend_from_slice(name);
            }
            p.span[g as usize] = (start, p.text.len());
        }
        let mut chain = Vec::new();
        for id in 0..idx.len() as EntryId {
            if idx.flags(id) & flags::DIRECTORY == 0 || p.span[id as usize] != UNSET {
                continue;
            }
            // Parent links are acyclic and end at the root (the build guarantees it), so this walk ends. (A file
            // not checked yet may hold a cycle: the walk stops where it meets its own chain.)
            let mut cur = id;
            while p.span[cur as usize] == UNSET {
                p.span[cur as usize] = WALKING;
                chain.push(cur);
                cur = idx.parent(cur);
            }
            while let Some(d) = chain.pop() {
                let (mut s, mut e) = p.span[idx.parent(d) as usize];
                // Only a file not checked yet gets here: a cycle, or a path past what NTFS allows.
                if (s, e) == WALKING || e - s + 1 + idx.name_len(d) > MAX_PATH_BYTES as usize {
                    (s, e) = (0, 0);
                }
                let start = p.text.len();
                p.text.extend_from_within(s..e);
                p.text.push(b'/');
                idx.push_name(d, &mut p.text);
                p.span[d as usize] = (start, p.text.len());
            }
        }
        p
    }

    /// The path of folder `dir` (empty for the root; also empty for an entry that is not a folder).
    pub fn folder(&self, dir: EntryId) -> &[u8] {
        match self.span[dir as usize] {
            UNSET | WALKING => b"",
            (s, e) => &self.text[s..e],
        }
    }

    /// Appends the full path of any entry (its folder's path, `/`, its name; the root is `/`).
    pub fn path_into(&self, idx: &Index, id: EntryId, out: &mut Vec<u8>) {
        if id == idx.root() {
            out.push(b'/');
            return;
        }
        out.extend_from_slice(self.folder(idx.parent(id)));
        out.push(b'/');
        idx.push_name(id, out);
    }
}

#[cfg(test)]
mod tests {
    use super::fold;

    #[test]
    fn folding_ignores_context() {
        // `str::to_lowercase` would make the final sigma ς, so "οδοσ" would not be found in "ΟΔΟΣ".
        assert_eq!(fold("ΟΔΟΣ 1.txt"), "οδοσ 1.txt");
        assert_eq!(fold("ReadMe.TXT"), "readme.txt");
    }
}

#[cfg(test)]
mod fold_tests {
    use super::fold;

    #[test]
    fn folding_keeps_byte_lengths() {
        for s in [
            "ABC.TXT",
            "Дмитрий",
            "ΣΊΣΥΦΟΣ",
            "\u{212A}elvin",
            "İstanbul",
            "STRAẞE",
            "Å\u{212B}",
            "日本",
        ] {
            assert_eq!(fold(s).len(), s.len(), "{s}");
        }
        assert_eq!(fold("Дмитрий.TXT"), "дмитрий.txt");
        // The Kelvin sign's lower case is one byte, not three: it stays as it is.
        assert_eq!(fold("\u{212A}"), "\u{212A}");
    }
}
