//! A volume's entries from one sweep of its file-system tree's leaves, on every core: inodes, directory records,
//! file extents and the extended attributes that matter (symlink targets, decmpfs headers, resource forks) are
//! gathered per share of leaves, then joined: one entry per directory record (so a file with several names,
//! hard links, has an entry for each), with its inode's times, owner, size and data.

use rayon::prelude::*;
use uffs_fs::{attr, Entry, Kind, Posix, Run};
use uffs_hfs::btree::Layout;
use uffs_hfs::decmpfs;

use crate::btree::{self, Node};
use crate::records::{self, kind, DirRec, Extent, Inode, Xattr};

/// The most blocks one read of consecutive leaves takes.
const READ_BLOCKS: usize = 256;
use crate::{Error, ReadAt, Result};

/// What a scan of one volume needs: where its tree is and how to find its nodes.
pub struct Tree<'a> {
    pub dev: &'a dyn ReadAt,
    pub block_size: u64,
    /// The tree's root node's block.
    pub root: u64,
    /// A child's block from its object id.
    pub resolve: &'a (dyn Fn(u64) -> Option<u64> + Sync),
    pub hashed: bool,
}

/// A data stream attribute of a file: where its bytes are.
#[derive(Debug, Clone, Copy)]
enum Held {
    /// In the record, at this byte of the volume, this long.
    Inline(Run),
    /// In data stream `id`, this long.
    Stream(u64, u64),
}

/// A directory record kept compact: its name's bytes in a share's `text`.
#[derive(Debug, Clone, Copy)]
struct Name {
    parent: u64,
    file_id: u64,
    /// Where its bytes are in `text`, and how many.
    at: u32,
    len: u16,
    dtype: u8,
}

/// One share of the leaves' records.
#[derive(Default)]
struct Part {
    inodes: Vec<Inode>,
    names: Vec<Name>,
    text: Vec<u8>,
    extents: Vec<Extent>,
    links: Vec<(u64, Vec<u8>)>,
    decmpfs: Vec<(u64, Held)>,
    forks: Vec<(u64, Held)>,
    warnings: Vec<String>,
}

/// Where a volume's entries go, and what they are numbered as.
pub struct Out<'a> {
    /// Ids are inode numbers plus `base`; inode numbers of `span` and more are left out (they would be
    /// another volume's ids).
    pub base: u64,
    pub span: u64,
    /// The root (inode 2) is named this, in folder `root_parent` (itself when `None`).
    pub root_name: &'a str,
    pub root_parent: Option<u64>,
    /// Takes each entry, in id order.
    pub emit: &'a mut dyn FnMut(Entry),
}

/// The entries of the volume `t` holds, to `out` in id order (none when it is an error: everything is read
/// before the first is made).
pub fn scan(t: &Tree<'_>, out: Out<'_>, warnings: &mut Vec<String>) -> Result<()> {
    let Out {
        base,
        span,
        root_name,
        root_parent,
        emit,
    } = out;
    let leaves = btree::leaves(t.dev, t.block_size, t.root, t.resolve, warnings)?;
    let share = (leaves.len() / (rayon::current_num_threads() * 8)).max(16);
    let parts: Vec<Part> = leaves
        .par_chunks(share)
        .map(|chunk| {
            let mut part = Part::default();
            let mut buf = Vec::new();
            let mut i = 0;
            while i < chunk.len() {
                // Leaves at consecutive blocks, read at once.
                let mut n = 1;
                while i + n < chunk.len() && n < READ_BLOCKS && chunk[i + n] == chunk[i] + n as u64
                {
                    n += 1;
                }
                let bs = t.block_size as usize;
                buf.resize(n * bs, 0);
                match t.dev.read_exact_at(&mut buf, chunk[i] * t.block_size) {
                    Ok(()) => {
                        for (j, bytes) in buf.chunks_exact(bs).enumerate() {
                            leaf(t, chunk[i] + j as u64, bytes, &mut part);
                        }
                    }
                    Err(e) => part.warnings.push(format!(
                        "file-system tree leaves {} to {}: {e}",
                        chunk[i],
                        chunk[i] + n as u64 - 1
                    )),
                }
                i += n;
            }
            part
        })
        .collect();
    let mut p = Part::default();
    for part in parts {
        p.inodes.extend(part.inodes);
        let shift = p.text.len() as u32;
        p.names.extend(part.names.into_iter().map(|mut n| {
            n.at += shift;
            n
        }));
        p.text.extend(part.text);
        p.extents.extend(part.extents);
        p.links.extend(part.links);
        p.decmpfs.extend(part.decmpfs);
        p.forks.extend(part.forks);
        warnings.extend(part.warnings);
    }
    // Leaves come in key order, so these are sorted already unless the tree is damaged.
    if !p.inodes.is_sorted_by_key(|i| i.id) {
        p.inodes.sort_by_key(|i| i.id);
    }
    if !p.extents.is_sorted() {
        p.extents.sort_unstable();
    }
    // By inode, a file's names in the order the tree holds them (their bytes' place in `text`).
    p.names.par_sort_unstable_by_key(|d| (d.file_id, d.at));
    let inode = |id: u64| {
        p.inodes
            .binary_search_by_key(&id, |i| i.id)
            .ok()
            .map(|at| &p.inodes[at])
    };
    let by_id =
        |v: &[(u64, Held)], id: u64| v.binary_search_by_key(&id, |x| x.0).ok().map(|at| v[at].1);
    let mut unread: std::collections::BTreeMap<String, (u64, String)> = Default::default();
    let mut unread_forks = unread.clone();
    let Some(root) = inode(records::ROOT) else {
        return Err(Error::new(
            "the file-system tree holds no root folder (inode 2)",
        ));
    };
    let mut e = Entry::default();
    fill(&mut e, root, base);
    e.parent = root_parent.unwrap_or(e.id);
    e.name = root_name.to_string();
    emit(e);
    let mut missing = 0u64;
    let mut past = 0u64;
    for d in &p.names {
        if d.file_id >= span || d.parent >= span {
            past += 1;
            continue;
        }
        let mut e = Entry::default();
        match inode(d.file_id) {
            Some(i) => fill(&mut e, i, base),
            None => {
                missing += 1;
                e.id = base + d.file_id;
                e.kind = match d.dtype {
                    4 => Kind::Folder,
                    10 => Kind::Symlink,
                    8 | 0 => Kind::File,
                    _ => Kind::Special,
                };
            }
        }
        e.parent = base + d.parent;
        e.name = records::name(&p.text[d.at as usize..d.at as usize + usize::from(d.len)]);
        if let Some(i) = inode(d.file_id) {
            if e.kind == Kind::File {
                e.runs = runs(&p.extents, i.private_id, i.size, t.block_size);
                let fork = by_id(&p.forks, i.id);
                if i.bsd_flags & records::UF_COMPRESSED == 0 {
                    // A compressed file's resource fork holds its data; any other's is a fork of its own.
                    if let Some(f) = fork {
                        let (f, why) = resource_fork(t, &p.extents, f);
                        if let Some(why) = why {
                            unread_forks.entry(why).or_insert((0, e.name.clone())).0 += 1;
                        }
                        e.forks.push(f);
                    }
                } else {
                    compressed(t, &mut e, &p, by_id(&p.decmpfs, i.id), fork, &mut unread);
                }
            }
            if e.kind == Kind::Symlink {
                e.link_target = p
                    .links
                    .binary_search_by_key(&i.id, |l| l.0)
                    .ok()
                    .map(|at| p.links[at].1.clone());
                // A link's bytes are its target, kept in the attribute.
                e.inline = e.link_target.clone();
                e.size = e.link_target.as_ref().map_or(0, |l| l.len() as u64);
            }
        }
        emit(e);
    }
    if past > 0 {
        warnings.push(format!(
            "{past} names of inodes numbered past the volume's next inode number are left out"
        ));
    }
    if missing > 0 {
        warnings.push(format!(
            "{missing} names are of inodes the file-system tree does not hold: listed without size, times or data"
        ));
    }
    for (why, (count, example)) in unread {
        warnings.push(match count {
            1 => format!("{example}: {why}: its data is not read"),
            n => format!("{n} files ({example} …): {why}: their data is not read"),
        });
    }
    for (why, (count, example)) in unread_forks {
        warnings.push(match count {
            1 => format!("{example}: its resource fork {why}: listed empty"),
            n => format!("{n} files ({example} …): their resource forks {why}: listed empty"),
        });
    }
    Ok(())
}

/// One leaf's records (the node at block `paddr`, `bytes`) into `part`.
fn leaf(t: &Tree<'_>, paddr: u64, bytes: &[u8], part: &mut Part) {
    let node = match Node::parse(bytes, None) {
        Ok(n) if n.is_leaf() => n,
        Ok(_) => {
            part.warnings.push(format!(
                "file-system tree leaf {paddr}: an index node where a leaf was expected"
            ));
            return;
        }
        Err(e) => {
            part.warnings
                .push(format!("file-system tree leaf {paddr}: {e}"));
            return;
        }
    };
    let at_volume = |v: &[u8]| paddr * t.block_size + node.value_offset(v) as u64;
    for i in 0..node.count {
        let Some((k, v)) = node.entry(i) else {
            continue;
        };
        let Some((oid, ty)) = records::split_key(k) else {
            continue;
        };
        match ty {
            kind::INODE => match Inode::parse(oid, v) {
                Some(inode) => part.inodes.push(inode),
                None => part
                    .warnings
                    .push(format!("inode {oid}: its record is too short")),
            },
            // The root's parent holds the names of the root and of the private folder (`root`,
            // `private-dir`), which are no names a user sees.
            kind::DIR_REC if oid != records::ROOT_PARENT => {
                if let Some(d) = DirRec::parse(oid, k, v, t.hashed) {
                    let len = d.name.len().min(usize::from(u16::MAX));
                    part.names.push(Name {
                        parent: d.parent,
                        file_id: d.file_id,
                        at: part.text.len() as u32,
                        len: len as u16,
                        dtype: d.dtype,
                    });
                    part.text.extend_from_slice(&d.name[..len]);
                }
            }
            kind::FILE_EXTENT => {
                if let Some(x) = Extent::parse(oid, k, v) {
                    part.extents.push(x);
                }
            }
            kind::XATTR => {
                let Some(x) = Xattr::parse(k, v) else {
                    continue;
                };
                let held = match x.stream {
                    Some((id, len)) => Held::Stream(id, len),
                    None => Held::Inline(Run {
                        offset: at_volume(x.data),
                        len: x.data.len() as u64,
                    }),
                };
                match x.name {
                    b"com.apple.fs.symlink" => {
                        let target = x.data.strip_suffix(&[0]).unwrap_or(x.data);
                        part.links.push((oid, target.to_vec()));
                    }
                    b"com.apple.decmpfs" => part.decmpfs.push((oid, held)),
                    b"com.apple.ResourceFork" => part.forks.push((oid, held)),
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// `e` as inode `i` makes it: id, kind, times, owner, flags, size; no name or data yet.
fn fill(e: &mut Entry, i: &Inode, base: u64) {
    e.id = base + i.id;
    e.kind = match u32::from(i.mode) & 0o170000 {
        0o040000 => Kind::Folder,
        0o120000 => Kind::Symlink,
        0o100000 | 0 => Kind::File,
        _ => Kind::Special,
    };
    e.times = i.times;
    if e.kind == Kind::File {
        e.size = i.size;
        e.allocated = i.allocated;
    }
    let mut a = match e.kind {
        Kind::Folder => attr::DIRECTORY,
        Kind::Symlink => attr::REPARSE_POINT,
        _ => 0,
    };
    if i.bsd_flags & records::UF_HIDDEN != 0 {
        a |= attr::HIDDEN;
    }
    if i.bsd_flags & records::UF_IMMUTABLE != 0 {
        a |= attr::READ_ONLY;
    }
    if i.bsd_flags & records::UF_COMPRESSED != 0 {
        a |= attr::COMPRESSED;
    }
    if i.sparse {
        a |= attr::SPARSE;
    }
    e.attributes = a;
    e.posix = Some(Posix {
        mode: u32::from(i.mode),
        uid: i.uid,
        gid: i.gid,
    });
}

/// The runs of data stream `stream` (`size` bytes), holes where it has no extent or an extent has no block.
fn runs(extents: &[Extent], stream: u64, size: u64, block_size: u64) -> Vec<Run> {
    let from = extents.partition_point(|x| x.stream < stream);
    let mut out: Vec<Run> = Vec::new();
    let mut at = 0u64;
    let push = |r: Run, out: &mut Vec<Run>| match out.last_mut() {
        Some(last) if last.is_hole() && r.is_hole() => last.len += r.len,
        Some(last) if !last.is_hole() && !r.is_hole() && last.offset + last.len == r.offset => {
            last.len += r.len
        }
        _ => out.push(r),
    };
    for x in extents[from..].iter().take_while(|x| x.stream == stream) {
        if x.logical > at {
            push(Run::hole(x.logical - at), &mut out);
        } else if x.logical < at {
            continue;
        }
        let r = if x.block == 0 {
            Run::hole(x.len)
        } else {
            Run {
                offset: x.block * block_size,
                len: x.len,
            }
        };
        push(r, &mut out);
        at = x.logical + x.len;
    }
    if at < size {
        push(Run::hole(size - at), &mut out);
    }
    out
}

/// A resource fork held in attribute `held`, as the fork `rsrc`: read from its data stream's extents, or, held
/// in the attribute's record, its bytes (read now: a record's place is no unit a file's data is read in); with
/// why those bytes could not be read, when they could not (the fork is then empty).
fn resource_fork(t: &Tree<'_>, extents: &[Extent], held: Held) -> (uffs_fs::Fork, Option<String>) {
    let mut f = uffs_fs::Fork {
        name: "rsrc".into(),
        ..Default::default()
    };
    match held {
        Held::Inline(r) => {
            let mut b = vec![0u8; r.len as usize];
            if let Err(e) = t.dev.read_exact_at(&mut b, r.offset) {
                return (f, Some(format!("(held in its record) cannot be read: {e}")));
            }
            f.size = r.len;
            f.inline = Some(b);
        }
        Held::Stream(id, len) => {
            f.size = len;
            f.runs = runs(extents, id, len, t.block_size);
            f.allocated = f.runs.iter().filter(|r| !r.is_hole()).map(|r| r.len).sum();
        }
    }
    (f, None)
}

/// Where an attribute's bytes are, as runs.
fn held_runs(held: Held, extents: &[Extent], block_size: u64) -> Vec<Run> {
    match held {
        Held::Inline(r) => vec![r],
        Held::Stream(id, len) => runs(extents, id, len, block_size),
    }
}

/// A decmpfs-compressed file's length and data, from its `com.apple.decmpfs` attribute and resource fork.
fn compressed(
    t: &Tree<'_>,
    e: &mut Entry,
    p: &Part,
    header: Option<Held>,
    fork: Option<Held>,
    unread: &mut std::collections::BTreeMap<String, (u64, String)>,
) {
    let got = (|| {
        let held = header.ok_or("flagged compressed but without a com.apple.decmpfs attribute")?;
        let runs = held_runs(held, &p.extents, t.block_size);
        let first = match runs.as_slice() {
            [r] if !r.is_hole() && r.len >= 16 => *r,
            _ => return Err("its com.apple.decmpfs attribute is not in one piece".to_string()),
        };
        let mut head = [0u8; 16];
        t.dev
            .read_exact_at(&mut head, first.offset)
            .map_err(|e| format!("its com.apple.decmpfs attribute cannot be read: {e}"))?;
        if &head[..4] != b"fpmc" {
            return Err("its com.apple.decmpfs attribute has no fpmc header".into());
        }
        let h = decmpfs::Header {
            method: crate::le32(&head, 4),
            size: crate::le64(&head, 8),
            data: Run {
                offset: first.offset + 16,
                len: first.len - 16,
            },
        };
        e.size = h.size;
        let rsrc = Layout {
            runs: fork
                .map(|f| held_runs(f, &p.extents, t.block_size))
                .unwrap_or_default()
                .iter()
                .map(|r| (r.offset, r.len))
                .collect(),
        };
        decmpfs::data(t.dev, &h, &rsrc)
    })();
    match got {
        Ok(d) => {
            e.runs = d.runs;
            e.packed = d.packed;
        }
        Err(why) => {
            e.runs.clear();
            e.packed.clear();
            unread.entry(why).or_insert((0, e.name.clone())).0 += 1;
        }
    }
}
