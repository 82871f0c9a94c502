//! A volume's entries, made in inode order and streamed: one per name of each inode in use, the root, the
//! volume's own inodes (real-time bitmap and summary, quotas) and structures, and the inodes in use no folder
//! names. Two passes over the inode chunks the inode B+trees list (XFS's MFT, read a chunk at a time on every
//! core):
//! 1. each folder's names (short form from the inode, the others from their data blocks), kept as (inode,
//!    parent, bytes in one arena) and sorted by inode;
//! 2. the chunks again (in the page cache from the first pass): every inode in use made an entry per name,
//!    handed to the sink a batch at a time.
//!
//! With `deleted`, the names of deleted entries folders' unused space holds (see [`crate::dir`]): one whose inode
//! is free is that inode's deleted entry (XFS clears a freed inode's mode, size and extents: its times and the
//! name's file type are what is left); one whose inode is in use again, or unknown, is listed by its name and kind
//! alone (`Entry::from_index_slack`), as ext's are.

use rayon::prelude::*;

use uffs_fs::{attr, Entry, Kind, Posix, Run};

use crate::ag::{self, Chunk, Tree};
use crate::inode::{flags, format, Inode};
use crate::names::{gone_entry, Gone, Names, SortedNames};
use crate::{bmap, dir, ReadAt, Result, ScanOptions, Volume};

/// Inode chunks mapped at once in the second pass: 16,384 inodes.
const CHUNK_BATCH: usize = 256;

/// The bytes of a file's data extents (unwritten ones too), and of those the bytes other files' extents also map.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    extents: u64,
    shared: u64,
}

/// A chunk of group `ag`.
#[derive(Clone, Copy)]
struct AgChunk {
    ag: u64,
    chunk: Chunk,
}

impl<R: ReadAt> Volume<R> {
    /// The entries of [`Volume::scan`], in id order, handed to `sink` [`uffs_fs::BATCH_ENTRIES`] at a time;
    /// returns the warnings.
    pub fn scan_sorted(
        &self,
        opts: &ScanOptions,
        sink: &mut dyn uffs_fs::Sink,
    ) -> Result<Vec<String>> {
        let mut warnings: Vec<String> = self
            .shared
            .damage
            .iter()
            .map(|d| format!("{d}; files' shared blocks may count in each of them"))
            .collect();
        let mut chunks = Vec::new();
        for g in &self.groups {
            let w = ag::walk(&self.dev, &self.sb, g, Tree::Ino);
            if let Some(d) = w.damage {
                warnings.push(format!(
                    "allocation group {}: {d}; the inodes it lists are not read",
                    g.ag
                ));
            }
            chunks.extend(
                ag::chunks(&self.sb, &w.records)
                    .into_iter()
                    .map(|chunk| AgChunk { ag: g.ag, chunk }),
            );
        }
        chunks.sort_by_key(|c| (c.ag, c.chunk.start));
        chunks.dedup_by_key(|c| (c.ag, c.chunk.start));

        // Pass 1: the folders' names.
        let mut names = chunks
            .par_iter()
            .with_min_len(16)
            .fold(Names::default, |mut acc, c| {
                self.chunk_names(c, opts.deleted, &mut acc);
                acc
            })
            .reduce(Names::default, |mut a, b| {
                a.append(b);
                a
            });
        warnings.append(&mut names.warnings);
        let (mut names, gone) = SortedNames::new(names);
        sink.expect(self.expected_entries());

        // Pass 2: every inode in use, an entry per name; the deleted names of inodes in no chunk between.
        let mut batch = Vec::with_capacity(uffs_fs::BATCH_ENTRIES);
        let mut gone_next = 0;
        for group in chunks.chunks(CHUNK_BATCH) {
            names.release_before(self.sb.ino(group[0].ag, group[0].chunk.start));
            let made: Vec<(Vec<Entry>, Vec<String>)> = group
                .par_iter()
                .map(|c| self.chunk_entries(c, names.of(self.sb.ino(c.ag, c.chunk.start)), &gone))
                .collect();
            for (c, (entries, mut w)) in group.iter().zip(made) {
                warnings.append(&mut w);
                let first = self.sb.ino(c.ag, c.chunk.start);
                let outside = gone.gone[gone_next..].partition_point(|n| n.ino < first);
                let past = gone.gone[gone_next..].partition_point(|n| n.ino < first + 64);
                let before = gone.gone[gone_next..gone_next + outside]
                    .iter()
                    .map(|n| gone_entry(&gone, n, None));
                gone_next += past;
                for e in before.chain(entries) {
                    batch.push(e);
                    if batch.len() == uffs_fs::BATCH_ENTRIES {
                        sink.take(std::mem::replace(
                            &mut batch,
                            Vec::with_capacity(uffs_fs::BATCH_ENTRIES),
                        ));
                    }
                }
            }
        }
        drop(names);
        batch.extend(
            gone.gone[gone_next..]
                .iter()
                .map(|n| gone_entry(&gone, n, None)),
        );
        batch.extend(crate::space::entries(
            self,
            &chunks.iter().map(|c| (c.ag, c.chunk)).collect::<Vec<_>>(),
        ));
        if !batch.is_empty() {
            sink.take(batch);
        }
        Ok(warnings)
    }

    /// The bytes of the inodes of chunk `c` (the part inside the volume), and the first inode's number.
    fn read_chunk(&self, c: &AgChunk) -> std::io::Result<(Vec<u8>, u64)> {
        let sb = &self.sb;
        let first = sb.ino(c.ag, c.chunk.start);
        let at = sb
            .inode_offset(first)
            .ok_or_else(|| std::io::Error::other("outside the volume"))?;
        let len = (64 * sb.inode_size).min(sb.volume_len() - at);
        let mut b = vec![0u8; len as usize];
        self.dev.read_exact_at(&mut b, at)?;
        Ok((b, first))
    }

    /// Each inode in use of chunk `c`, with its bytes.
    fn inodes_of<'a>(
        &self,
        c: &AgChunk,
        raw: &'a [u8],
        first: u64,
    ) -> impl Iterator<Item = (u64, Inode, &'a [u8])> + 'a {
        let isize = self.sb.inode_size as usize;
        let chunk = c.chunk;
        raw.chunks_exact(isize)
            .enumerate()
            .filter_map(move |(k, b)| {
                if !chunk.in_use(k as u32) {
                    return None;
                }
                let i = Inode::parse(b)?;
                (i.mode != 0).then_some((first + k as u64, i, b))
            })
    }

    /// The names of the folders of chunk `c` into `out`; with `deleted`, those of deleted entries too.
    fn chunk_names(&self, c: &AgChunk, deleted: bool, out: &mut Names) {
        let Ok((raw, first)) = self.read_chunk(c) else {
            out.warnings.push(format!(
                "inodes {} to {}: cannot be read",
                self.sb.ino(c.ag, c.chunk.start),
                self.sb.ino(c.ag, c.chunk.start) + 63
            ));
            return;
        };
        let ftype = self.sb.has_ftype();
        for (ino, i, b) in self.inodes_of(c, &raw, first) {
            if i.kind() != Kind::Folder {
                continue;
            }
            let fork = i.data_fork(b);
            if i.format == format::LOCAL {
                let len = (i.size as usize).min(fork.len());
                if dir::short_form(&fork[..len], ftype, |n| out.push(n.ino, ino, n.name)).is_none()
                {
                    out.warnings.push(format!(
                        "folder {ino}: a short-form header that does not fit"
                    ));
                }
                continue;
            }
            let (runs, damage, _) = self.data_runs(&i, fork);
            if let Some(d) = damage {
                out.warnings.push(format!("folder {ino}: {d}"));
            }
            let mut gone = Names::default();
            let mut keep_gone = |d: dir::Deleted<'_>| {
                gone.push_gone(self.deleted_ino(d), ino, d.name, d.file_type);
            };
            if let Err(e) = self.folder_blocks(&runs, i.size.min(dir::LEAF_OFFSET), |blk| {
                let keep: Option<&mut dyn FnMut(dir::Deleted<'_>)> =
                    deleted.then_some(&mut keep_gone);
                dir::data_block(blk, ftype, |n| out.push(n.ino, ino, n.name), keep);
            }) {
                out.warnings
                    .push(format!("{}{ino}: {e}", uffs_fs::UNREADABLE));
            }
            out.append(gone);
        }
    }

    /// The inode a deleted name named, 0 when unknown: its low half alone is the whole number when the volume's
    /// numbers fit in 32 bits; a number no group holds is no inode.
    fn deleted_ino(&self, d: dir::Deleted<'_>) -> u64 {
        let bits = self.sb.agino_bits() + u64::BITS - (self.sb.agcount.max(1) - 1).leading_zeros();
        let ino = if d.whole || bits <= 32 { d.ino } else { 0 };
        if self.sb.inode_offset(ino).is_some() {
            ino
        } else {
            0
        }
    }

    /// Each folder block of a folder's data: the runs' bytes below `limit`, segment by segment (holes between).
    fn folder_blocks(
        &self,
        runs: &[Run],
        limit: u64,
        mut each: impl FnMut(&[u8]),
    ) -> std::io::Result<()> {
        let dbs = self.sb.dir_block_size() as usize;
        let mut pos = 0u64;
        let mut seg: Vec<u8> = Vec::new();
        let mut flush = |seg: &mut Vec<u8>| {
            for blk in seg.chunks_exact(dbs) {
                each(blk);
            }
            seg.clear();
        };
        for r in runs {
            if pos >= limit {
                break;
            }
            let want = r.len.min(limit - pos);
            pos += r.len;
            if r.is_hole() {
                flush(&mut seg);
                continue;
            }
            let start = seg.len();
            seg.resize(start + want as usize, 0);
            self.dev.read_exact_at(&mut seg[start..], r.offset)?;
        }
        flush(&mut seg);
        Ok(())
    }

    /// The runs of an inode's data fork, why the map stops short, and what of its extents other files share.
    fn data_runs(&self, i: &Inode, fork: &[u8]) -> (Vec<Run>, Option<String>, Held) {
        let m = match i.format {
            format::EXTENTS => bmap::extent_list(fork, i.nextents),
            format::BTREE => bmap::extent_tree(&self.dev, &self.sb, fork),
            _ => return (Vec::new(), None, Held::default()),
        };
        let mut held = Held::default();
        let bs = self.sb.block_size;
        for e in &m.extents {
            let len = e.count.saturating_mul(bs);
            held.extents = held.extents.saturating_add(len);
            if let Some(at) = self.sb.fsb_offset(e.start) {
                held.shared = held.shared.saturating_add(self.shared.overlap(at, len));
            }
        }
        let (runs, damage) = bmap::runs(&self.sb, m.extents, i.size);
        (runs, m.damage.or(damage), held)
    }

    /// The entries of chunk `c`'s inodes in use, named by `names` (the [`SortedNames`] chunk that holds their
    /// names), with the deleted names `gone` holds of them.
    fn chunk_entries(&self, c: &AgChunk, names: &Names, gone: &Names) -> (Vec<Entry>, Vec<String>) {
        let (mut out, mut warnings) = (Vec::new(), Vec::new());
        let Ok((raw, first)) = self.read_chunk(c) else {
            return (out, warnings);
        };
        let mut k = names.names.partition_point(|n| n.ino < first);
        for (ino, i, b) in self.inodes_of(c, &raw, first) {
            let fork = i.data_fork(b);
            let (mut runs, mut inline, mut held) = (Vec::new(), None, Held::default());
            if i.has(flags::REALTIME) && i.kind() == Kind::File {
                warnings.push(format!(
                    "inode {ino}: its data is on the real-time device, which uffs does not read"
                ));
            } else if i.format == format::LOCAL {
                inline = Some(fork[..(i.size as usize).min(fork.len())].to_vec());
            } else {
                let (r, damage, h) = self.data_runs(&i, fork);
                if let Some(d) = damage {
                    warnings.push(format!("inode {ino}: {d}"));
                }
                (runs, held) = (r, h);
            }
            let link_target = match i.kind() {
                Kind::Symlink => {
                    let t = inline
                        .clone()
                        .unwrap_or_else(|| self.remote_link(&i, &runs));
                    inline = Some(t.clone());
                    runs.clear();
                    Some(t)
                }
                _ => None,
            };
            while names.names.get(k).is_some_and(|n| n.ino < ino) {
                k += 1;
            }
            let start = k;
            while names.names.get(k).is_some_and(|n| n.ino == ino) {
                k += 1;
            }
            let base = self.entry(ino, &i, runs, inline, link_target, held);
            let own = if ino == self.sb.rootino {
                &[][..]
            } else {
                &names.names[start..k]
            };
            // Each name but the last takes a copy; the last the entry itself.
            if let Some((last, others)) = own.split_last() {
                for n in others {
                    out.push(Entry {
                        parent: n.parent,
                        name: names.text(n.at, n.len),
                        ..base.clone()
                    });
                }
                out.push(Entry {
                    parent: last.parent,
                    name: names.text(last.at, last.len),
                    ..base
                });
            } else {
                let (parent, name, metadata) = match self.own_inode_name(ino) {
                    _ if ino == self.sb.rootino => (ino, String::new(), false),
                    Some(name) => (self.sb.rootino, name.to_string(), true),
                    None => (0, format!("OrphanFile-{ino}"), false),
                };
                let mut e = Entry {
                    parent,
                    name,
                    metadata,
                    ..base
                };
                if metadata {
                    e.attributes |= attr::SYSTEM | attr::HIDDEN;
                }
                out.push(e);
            }
        }
        let these = &gone.gone[gone.gone.partition_point(|n| n.ino < first)..];
        let these = &these[..these.partition_point(|n| n.ino < first + 64)];
        if !these.is_empty() {
            out = self.with_gone(c, &raw, first, out, these, gone);
        }
        (out, warnings)
    }

    /// The entries of chunk `c` (`live`, in inode order) with the deleted names of its inodes merged in: a free
    /// inode's as its deleted entry, an inode in use's by name and kind alone.
    fn with_gone(
        &self,
        c: &AgChunk,
        raw: &[u8],
        first: u64,
        live: Vec<Entry>,
        gone: &[Gone],
        names: &Names,
    ) -> Vec<Entry> {
        let isize = self.sb.inode_size as usize;
        let mut out = Vec::with_capacity(live.len() + gone.len());
        let mut live = live.into_iter().peekable();
        for n in gone {
            while let Some(e) = live.next_if(|e| e.id <= n.ino) {
                out.push(e);
            }
            let k = (n.ino - first) as usize;
            let facts = raw
                .get(k * isize..(k + 1) * isize)
                .and_then(Inode::parse)
                .filter(|i| !c.chunk.in_use(k as u32) || i.mode == 0)
                .map(|i| self.entry(n.ino, &i, Vec::new(), None, None, Held::default()));
            out.push(gone_entry(names, n, facts));
        }
        out.extend(live);
        out
    }

    /// The name of one of the volume's own inodes, which no folder names.
    fn own_inode_name(&self, ino: u64) -> Option<&'static str> {
        let sb = &self.sb;
        [
            (sb.rbmino, "$RealtimeBitmap"),
            (sb.rsumino, "$RealtimeSummary"),
            (sb.uquotino, "$UserQuota"),
            (sb.gquotino, "$GroupQuota"),
            (sb.pquotino, "$ProjectQuota"),
        ]
        .into_iter()
        .find(|&(i, _)| i == ino && i != 0 && i != u64::MAX)
        .map(|(_, name)| name)
    }

    /// A symlink's target held in blocks: v5 blocks start with a header (`XSLM`: magic, offset, bytes …).
    fn remote_link(&self, i: &Inode, runs: &[Run]) -> Vec<u8> {
        let want = i.size.min(1024) as usize;
        let mut out = Vec::with_capacity(want);
        let bs = self.sb.block_size as usize;
        for r in runs.iter().filter(|r| !r.is_hole()) {
            let mut b = vec![0u8; r.len.min(4 * bs as u64) as usize];
            if self.dev.read_exact_at(&mut b, r.offset).is_err() {
                break;
            }
            for blk in b.chunks(bs) {
                let data =
                    if self.sb.is_v5() && blk.len() >= 56 && crate::be32(blk, 0) == 0x5853_4c4d {
                        let n = (crate::be32(blk, 8) as usize).min(blk.len() - 56);
                        &blk[56..56 + n]
                    } else {
                        blk
                    };
                out.extend_from_slice(&data[..data.len().min(want - out.len())]);
                if out.len() == want {
                    return out;
                }
            }
        }
        out
    }

    /// Inode `ino`'s entry without its name and parent.
    fn entry(
        &self,
        ino: u64,
        i: &Inode,
        runs: Vec<Run>,
        inline: Option<Vec<u8>>,
        link_target: Option<Vec<u8>>,
        held: Held,
    ) -> Entry {
        let kind = i.kind();
        let mut attributes = match kind {
            Kind::Folder => attr::DIRECTORY,
            Kind::Symlink => attr::REPARSE_POINT,
            _ => 0,
        };
        if i.has(flags::IMMUTABLE) {
            attributes |= attr::READ_ONLY;
        }
        if kind == Kind::File && runs.iter().any(Run::is_hole) {
            attributes |= attr::SPARSE;
        }
        Entry {
            id: ino,
            parent: 0,
            name: String::new(),
            short_name: None,
            kind,
            size: if kind == Kind::Special { 0 } else { i.size },
            // Shared blocks are the volume's (`$SharedExtents`), counted once there.
            allocated: i
                .nblocks
                .saturating_mul(self.sb.block_size)
                .saturating_sub(held.shared),
            times: i.times,
            local_times: false,
            attributes,
            deleted: false,
            metadata: false,
            from_index_slack: false,
            runs,
            inline,
            posix: Some(Posix {
                mode: u32::from(i.mode),
                uid: i.uid,
                gid: i.gid,
            }),
            link_target,
            packed: Vec::new(),
            forks: Vec::new(),
            // Told where files can share blocks: a file's extents' bytes no other file maps, as FIEMAP marks them
            // (folders and links: none, as `btrfs filesystem du` counts files only). A real-time file's extents
            // are not read (nor shared): as its allocation.
            exclusive: match kind {
                _ if !self.sb.has_ro_compat(crate::sb::ro_compat::REFLINK) => None,
                Kind::File if i.has(flags::REALTIME) => None,
                Kind::File => Some(held.extents.saturating_sub(held.shared)),
                _ => Some(0),
            },
        }
    }
}
