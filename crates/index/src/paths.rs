//! Full paths without building one per entry: every folder's path is built once, in one arena, and an entry's
//! path is its folder's path, `/`, its name. Also the case folding names and paths are compared with.

use crate::index::{flags, EntryId, Index};

/// Appends UTF-8 `s` lower-cased to `out` (ASCII byte by byte, the rest by `str::to_lowercase`).
pub fn fold_into(s: &[u8], out: &mut Vec<u8>) {
    if s.is_ascii() {
        out.extend(s.iter().map(u8::to_ascii_lowercase));
    } else {
        out.extend_from_slice(String::from_utf8_lossy(s).to_lowercase().as_bytes());
    }
}

/// The full path of every folder (`/`-separated from the root; the root's own path is empty), as given or
/// case-folded.
#[derive(Debug, Clone)]
pub struct FolderPaths {
    text: Vec<u8>,
    span: Vec<(u32, u32)>,
    folders: Vec<EntryId>,
}

const UNSET: (u32, u32) = (u32::MAX, 0);

impl FolderPaths {
    pub fn build(idx: &Index, folded: bool) -> FolderPaths {
        let mut p = FolderPaths {
            text: Vec::new(),
            span: vec![UNSET; idx.len()],
            folders: Vec::new(),
        };
        if idx.is_empty() {
            return p;
        }
        p.span[idx.root() as usize] = (0, 0);
        p.folders.push(idx.root());
        let mut chain = Vec::new();
        for id in 0..idx.len() as EntryId {
            if idx.flags(id) & flags::DIRECTORY == 0 || p.span[id as usize] != UNSET {
                continue;
            }
            // Parent links are acyclic and end at the root (the build guarantees it), so this walk ends.
            let mut cur = id;
            while p.span[cur as usize] == UNSET {
                chain.push(cur);
                cur = idx.parent(cur);
            }
            while let Some(d) = chain.pop() {
                let (s, e) = p.span[idx.parent(d) as usize];
                let start = p.text.len();
                p.text.extend_from_within(s as usize..e as usize);
                p.text.push(b'/');
                if folded {
                    fold_into(idx.name_bytes(d), &mut p.text);
                } else {
                    p.text.extend_from_slice(idx.name_bytes(d));
                }
                p.span[d as usize] = (start as u32, p.text.len() as u32);
                p.folders.push(d);
            }
        }
        p
    }

    /// The path of folder `dir` (empty for the root; also empty for an entry that is not a folder).
    pub fn folder(&self, dir: EntryId) -> &[u8] {
        match self.span[dir as usize] {
            UNSET => b"",
            (s, e) => &self.text[s as usize..e as usize],
        }
    }

    /// Every folder, the root first.
    pub fn folders(&self) -> &[EntryId] {
        &self.folders
    }

    /// Appends the full path of any entry (its folder's path, `/`, its name; the root is `/`). For folded
    /// paths, `name` is the entry's folded name.
    pub fn path_into(&self, idx: &Index, id: EntryId, name: &[u8], out: &mut Vec<u8>) {
        if id == idx.root() {
            out.push(b'/');
            return;
        }
        out.extend_from_slice(self.folder(idx.parent(id)));
        out.push(b'/');
        out.extend_from_slice(name);
    }
}
