//! A volume's entries from one sweep of the catalog's leaves: a folder or file record is an entry (named by its
//! key, in the folder its key names); thread records are skipped. The sweep goes in (parent, name) order, so
//! the entries are spooled and handed over in id order.
//!
//! A hard link is a file record of Finder type `hlnk` naming an indirect node: the file `iNode<N>` (id N) in the
//! root's private folder `\0\0\0\0HFS+ Private Data`, which holds the data, owner and times. Each link's name is
//! an entry of the indirect node's id, as ext's names of one inode are; the indirect node is listed where it is,
//! as The Sleuth Kit lists it.

use std::collections::HashMap;

use uffs_fs::{attr, Entry, Kind, Posix, Run, Sink, Spool, Times};

use crate::btree::{self, Layout, Node};
use crate::catalog::{self, cnid, finder, Key, Record};
use crate::header::{filetime, ForkData};
use crate::{decmpfs, names, ReadAt, Result, ScanOptions, Volume, DATA_FORK};

/// The id of `$Header`: the blocks of the volume header and its copy at the end, which no file holds (a catalog
/// node id no file has: 9 to 15 are Apple's but unused on disk).
pub const HEADER_ID: u64 = 15;

/// The longest symbolic link target read (macOS's PATH_MAX).
const LINK_MAX: u64 = 1024;

/// What a catalog record makes.
enum Made {
    /// An entry (in the `Entry` given).
    Entry,
    /// A hard link, made an entry once its indirect node is known.
    Link(Link),
    /// Nothing (a thread record).
    Nothing,
}

/// What one thread's share of the catalog's leaves makes.
#[derive(Default)]
struct Part {
    spool: Spool,
    links: Vec<Link>,
    /// Files named as indirect nodes are, with their folder's id.
    nodes: Vec<(u32, Entry)>,
    /// The private folder of indirect nodes, when this share holds its record.
    private: Option<u32>,
    /// With `--deleted`: the ids listed, and the records the leaves' slack holds.
    live: Vec<u32>,
    carved: Vec<Entry>,
    unread: HashMap<String, (u64, String)>,
    warnings: Vec<String>,
    /// The entry filled record after record.
    e: Entry,
}

/// A hard link's name, to be made an entry of the indirect node it names.
struct Link {
    parent: u32,
    name: String,
    /// The link record's own id: the entry's when the indirect node is missing.
    own: u32,
    target: u32,
}

impl<R: ReadAt> Volume<R> {
    /// The entries in id order, to `sink` a batch at a time; the warnings.
    pub fn scan_sorted(&self, opts: &ScanOptions, sink: &mut dyn Sink) -> Result<Vec<String>> {
        let mut warnings: Vec<String> = self.open_warnings.clone();
        let compressed = match &self.attributes {
            Some(tree) => {
                let (map, warning) = decmpfs::headers(&self.dev, tree);
                warnings.extend(warning);
                map
            }
            None => HashMap::new(),
        };
        let mut spool = Spool::new();
        self.own_entries(&mut spool, &mut warnings);
        let leaf =
            |part: &mut Part, n: u32, node: &Node<'_>| self.leaf(part, n, node, opts, &compressed);
        let parts = match self.catalog.nodes_in_use(&self.dev) {
            Some(map) => {
                let threads = rayon::current_num_threads();
                let (parts, w) =
                    self.catalog
                        .par_leaves(&self.dev, &map, threads, Part::default, leaf);
                warnings.extend(w.into_iter().map(|w| format!("the catalog: {w}")));
                parts
            }
            None => {
                // No map to say which nodes are in use: the leaf chain.
                let mut part = Part::default();
                if let Some(w) = self
                    .catalog
                    .sweep_leaves(&self.dev, |n, node| leaf(&mut part, n, node))
                {
                    warnings.push(format!("the catalog: {w} (entries after it are missing)"));
                }
                vec![part]
            }
        };
        let mut links = Vec::new();
        let mut candidates = Vec::new();
        let mut private = None;
        let mut live: Vec<u32> = Vec::new();
        let mut carved: Vec<Entry> = Vec::new();
        let mut unread: HashMap<String, (u64, String)> = HashMap::new();
        for part in parts {
            spool.absorb(part.spool);
            links.extend(part.links);
            candidates.extend(part.nodes);
            private = private.or(part.private);
            live.extend(part.live);
            carved.extend(part.carved);
            warnings.extend(part.warnings);
            for (why, (count, example)) in part.unread {
                unread.entry(why).or_insert((0, example)).0 += count;
            }
        }
        // Indirect nodes (the files hard links name), kept whole to be copied for each link's name.
        let nodes: HashMap<u32, Entry> = candidates
            .into_iter()
            .filter(|(parent, _)| Some(*parent) == private)
            .map(|(_, e)| (e.id as u32, e))
            .collect();
        let mut unread: Vec<_> = unread.into_iter().collect();
        unread.sort();
        for (why, (count, example)) in unread {
            warnings.push(match count {
                1 => format!("{example}: {why}: its data is not read"),
                n => format!("{n} files ({example} …): {why}: their data is not read"),
            });
        }
        for link in links {
            let mut e = match nodes.get(&link.target) {
                Some(node) => node.clone(),
                None => {
                    warnings.push(format!(
                        "hard link {} (id {}) names indirect node {}, which the private folder does not hold",
                        link.name, link.own, link.target
                    ));
                    Entry {
                        id: u64::from(link.own),
                        ..Entry::default()
                    }
                }
            };
            e.parent = u64::from(link.parent);
            e.name = link.name;
            spool.push(e);
        }
        // A removed record whose id is listed is a stale copy (a record moved within its node, or to another).
        live.sort_unstable();
        carved.sort_by_key(|e| e.id);
        carved.dedup_by_key(|e| e.id);
        for e in carved {
            if live.binary_search(&(e.id as u32)).is_err() {
                spool.push(e);
            }
        }
        sink.expect(spool.len());
        spool.drain_sorted(sink);
        Ok(warnings)
    }

    /// One leaf's records into `part`.
    fn leaf(
        &self,
        part: &mut Part,
        n: u32,
        node: &Node<'_>,
        opts: &ScanOptions,
        compressed: &HashMap<u32, decmpfs::Header>,
    ) {
        let mut e = std::mem::take(&mut part.e);
        for i in 0..node.len() {
            let parsed = btree::split_record(node.record(i))
                .and_then(|(key, data)| Some((Key::parse(key)?, Record::parse(data)?)));
            let Some((key, record)) = parsed else {
                part.warnings
                    .push(format!("catalog node {n}: record {i} cannot be read"));
                continue;
            };
            if let Record::Folder { common, .. } = &record {
                if key.parent == cnid::ROOT && names::is(key.name, b"\0\0\0\0HFS+ Private Data") {
                    part.private = Some(common.id);
                }
            }
            match self.make(
                &key,
                record,
                &mut e,
                compressed,
                &mut part.unread,
                &mut part.warnings,
            ) {
                Made::Nothing => {}
                Made::Link(link) => part.links.push(link),
                Made::Entry => {
                    if opts.deleted {
                        part.live.push(e.id as u32);
                    }
                    // An indirect node is `iNode<N>` in the private folder, which may be another part's.
                    if e.kind != Kind::Folder && names::starts_with(key.name, b"iNode") {
                        part.nodes.push((key.parent, e.clone()));
                    }
                    part.spool.push_ref(&e);
                }
            }
        }
        if opts.deleted {
            self.carve(node.slack(), compressed, &mut part.carved);
        }
        part.e = e;
    }

    /// `e` made from a folder or file record (the root as the root, named ""), or the hard link it is.
    fn make(
        &self,
        key: &Key<'_>,
        record: Record,
        e: &mut Entry,
        compressed: &HashMap<u32, decmpfs::Header>,
        unread: &mut HashMap<String, (u64, String)>,
        warnings: &mut Vec<String>,
    ) -> Made {
        let name = || names::decode(key.name);
        match record {
            Record::Thread => Made::Nothing,
            Record::Folder { common, .. } => {
                self.fill(e, &common, Kind::Folder);
                if common.id == cnid::ROOT {
                    e.parent = e.id;
                    e.name.clear();
                } else {
                    e.parent = u64::from(key.parent);
                    e.name = name();
                }
                Made::Entry
            }
            Record::File {
                common,
                file_type,
                creator,
                data,
                resource,
            } => {
                let pair = (file_type, creator);
                if pair == finder::HARD_LINK || pair == finder::FOLDER_LINK {
                    return Made::Link(Link {
                        parent: key.parent,
                        name: name(),
                        own: common.id,
                        target: common.bsd.special,
                    });
                }
                let kind = match u32::from(common.bsd.mode) & 0o170000 {
                    0o120000 => Kind::Symlink,
                    0o100000 | 0 if pair == finder::SYMLINK => Kind::Symlink,
                    0o100000 | 0 => Kind::File,
                    _ => Kind::Special,
                };
                self.fill(e, &common, kind);
                e.parent = u64::from(key.parent);
                e.name = name();
                let packed =
                    common.bsd.owner_flags & catalog::UF_COMPRESSED != 0 && kind == Kind::File;
                self.fill_forks(e, common.id, &data, &resource, !packed, warnings);
                if packed {
                    self.fill_compressed(e, common.id, &resource, compressed, unread);
                }
                if kind == Kind::Symlink {
                    e.link_target = self.link_target(e);
                }
                Made::Entry
            }
        }
    }

    /// The folder and file records a leaf's slack (`free`, after its last record) still holds whole: a record
    /// removed from the end of a node, or the tail a removal in its middle moved down. Each is tried at every
    /// even offset (records start on one), kept when its key and record add up.
    fn carve(&self, free: &[u8], compressed: &HashMap<u32, decmpfs::Header>, out: &mut Vec<Entry>) {
        let mut at = 0;
        let (mut quiet, mut unread) = (Vec::new(), HashMap::new());
        while at + 8 <= free.len() {
            let key_len = usize::from(crate::be16(free, at));
            let fits = (6..=516).contains(&key_len)
                && key_len % 2 == 0
                && usize::from(crate::be16(free, at + 6)) * 2 + 6 == key_len;
            let found = fits
                .then(|| {
                    let key = Key::parse(free.get(at + 2..at + 2 + key_len)?)?;
                    let record = Record::parse(free.get(at + 2 + key_len..)?)?;
                    Some((key, record))
                })
                .flatten()
                .filter(|(key, r)| self.plausible(key, r));
            let Some((key, record)) = found else {
                at += 2;
                continue;
            };
            let len = 2
                + key_len
                + if matches!(record, Record::File { .. }) {
                    catalog::FILE_LEN
                } else {
                    catalog::FOLDER_LEN
                };
            let mut e = Entry::default();
            if let Made::Entry =
                self.make(&key, record, &mut e, compressed, &mut unread, &mut quiet)
            {
                e.deleted = true;
                e.link_target = None;
                out.push(e);
            }
            at += len;
        }
    }

    /// Whether a record found in slack can be one: an id the volume has handed out, a parent that can be a
    /// folder, a name without NULs.
    fn plausible(&self, key: &Key<'_>, r: &Record) -> bool {
        let common = match r {
            Record::Folder { common, .. } | Record::File { common, .. } => common,
            Record::Thread => return false,
        };
        let ids = cnid::FIRST_USER..self.header.next_catalog_id.max(cnid::FIRST_USER);
        ids.contains(&common.id)
            && (key.parent == cnid::ROOT || ids.contains(&key.parent))
            && !key.name.is_empty()
            && key.name.chunks_exact(2).all(|u| u != [0, 0])
    }

    /// `e` as a file or folder record's common fields make it: id, kind, times, owner and flags; no name, size
    /// or data yet.
    fn fill(&self, e: &mut Entry, c: &catalog::Common, kind: Kind) {
        e.id = u64::from(c.id);
        e.kind = kind;
        e.size = 0;
        e.allocated = 0;
        e.runs.clear();
        e.packed.clear();
        e.forks.clear();
        e.inline = None;
        e.link_target = None;
        e.times = Times {
            created: filetime(c.created),
            modified: filetime(c.modified),
            changed: filetime(c.changed),
            accessed: filetime(c.accessed),
        };
        let mut a = match kind {
            Kind::Folder => attr::DIRECTORY,
            Kind::Symlink => attr::REPARSE_POINT,
            _ => 0,
        };
        if c.flags & catalog::flags::LOCKED != 0 || c.bsd.owner_flags & catalog::UF_IMMUTABLE != 0 {
            a |= attr::READ_ONLY;
        }
        if c.finder_flags & finder::INVISIBLE != 0 {
            a |= attr::HIDDEN;
        }
        if c.bsd.owner_flags & catalog::UF_COMPRESSED != 0 {
            a |= attr::COMPRESSED;
        }
        e.attributes = a;
        e.posix = (c.bsd.mode != 0).then_some(Posix {
            mode: u32::from(c.bsd.mode),
            uid: c.bsd.owner,
            gid: c.bsd.group,
        });
    }

    /// A file's size, allocation and data runs, and its resource fork as the fork `rsrc` when `rsrc_apart`
    /// (else, a compressed file's, whose fork holds its data, its blocks count in the file's allocation).
    fn fill_forks(
        &self,
        e: &mut Entry,
        id: u32,
        data: &ForkData,
        resource: &ForkData,
        rsrc_apart: bool,
        warnings: &mut Vec<String>,
    ) {
        let bs = self.block_size();
        e.size = data.logical_size;
        let rsrc_blocks = u64::from(resource.total_blocks) * bs;
        e.allocated = u64::from(data.total_blocks) * bs;
        if !rsrc_apart {
            e.allocated += rsrc_blocks;
        } else if resource.logical_size > 0 || resource.total_blocks > 0 {
            let (layout, warning) = self.layout(id, crate::RESOURCE_FORK, resource);
            warnings.extend(warning);
            e.forks.push(uffs_fs::Fork {
                name: "rsrc".into(),
                size: resource.logical_size,
                allocated: rsrc_blocks,
                runs: layout
                    .runs
                    .iter()
                    .map(|&(offset, len)| Run { offset, len })
                    .collect(),
                inline: None,
            });
        }
        if data.total_blocks == 0 {
            return;
        }
        let (layout, warning) = self.layout(id, DATA_FORK, data);
        if let Some(w) = warning {
            warnings.push(w);
        }
        e.runs
            .extend(layout.runs.iter().map(|&(offset, len)| Run { offset, len }));
        let held: u64 = e.runs.iter().map(|r| r.len).sum();
        if held < e.size {
            warnings.push(format!(
                "file {id} is {} bytes, its extents hold {held}",
                e.size
            ));
        }
    }

    /// A decmpfs-compressed file's length and data, from its `com.apple.decmpfs` header; what cannot be read
    /// is counted in `unread` by why (with a name for the warning) and leaves the file without data.
    fn fill_compressed(
        &self,
        e: &mut Entry,
        id: u32,
        resource: &ForkData,
        compressed: &HashMap<u32, decmpfs::Header>,
        unread: &mut HashMap<String, (u64, String)>,
    ) {
        let got = match compressed.get(&id) {
            None => Err("flagged compressed but without a com.apple.decmpfs attribute".to_string()),
            Some(h) => {
                e.size = h.size;
                let (rsrc, _) = self.layout(id, crate::RESOURCE_FORK, resource);
                decmpfs::data(&self.dev, h, &rsrc)
            }
        };
        match got {
            Ok(d) => {
                e.runs = d.runs;
                e.packed = d.packed;
            }
            Err(why) => {
                e.runs.clear();
                e.packed.clear();
                let slot = unread.entry(why).or_insert((0, e.name.clone()));
                slot.0 += 1;
            }
        }
    }

    /// A symbolic link's target: its data fork's bytes.
    fn link_target(&self, e: &Entry) -> Option<Vec<u8>> {
        let len = e.size.min(LINK_MAX) as usize;
        let layout = Layout {
            runs: e.runs.iter().map(|r| (r.offset, r.len)).collect(),
        };
        let mut b = vec![0u8; len];
        layout.read(&self.dev, &mut b, 0).ok()?;
        Some(b)
    }

    /// The special files (`$ExtentsFile`, `$CatalogFile` … as The Sleuth Kit names them, with their ids) and
    /// `$Header`, under the root, so that `du /` adds up to the blocks in use.
    fn own_entries(&self, spool: &mut Spool, warnings: &mut Vec<String>) {
        let h = &self.header;
        let specials = [
            (cnid::EXTENTS, "$ExtentsFile", &h.extents),
            (cnid::CATALOG, "$CatalogFile", &h.catalog),
            (cnid::BAD_BLOCKS, "$BadBlockFile", &ForkData::default()),
            (cnid::ALLOCATION, "$AllocationFile", &h.allocation),
            (cnid::STARTUP, "$StartupFile", &h.startup),
            (cnid::ATTRIBUTES, "$AttributesFile", &h.attributes_file),
        ];
        let bs = self.block_size();
        let root = u64::from(cnid::ROOT);
        for (id, name, fork) in specials {
            let mut e = Entry {
                id: u64::from(id),
                parent: root,
                name: name.into(),
                metadata: true,
                attributes: attr::HIDDEN | attr::SYSTEM,
                ..Entry::default()
            };
            if id == cnid::BAD_BLOCKS {
                // Its extents are all in the overflow file (the blocks marked bad).
                let blocks: u64 = self
                    .overflow
                    .get(&(id, DATA_FORK))
                    .into_iter()
                    .flatten()
                    .flat_map(|(_, ext)| ext.iter())
                    .map(|x| u64::from(x.count))
                    .sum();
                e.allocated = blocks * bs;
            } else {
                e.size = fork.logical_size;
                e.allocated = u64::from(fork.total_blocks) * bs;
                let (layout, warning) = self.layout(id, DATA_FORK, fork);
                if let Some(w) = warning {
                    warnings.push(format!("{name}: {w}"));
                }
                e.runs = layout
                    .runs
                    .iter()
                    .map(|&(offset, len)| Run { offset, len })
                    .collect();
            }
            if id == cnid::STARTUP && e.allocated == 0 {
                continue;
            }
            spool.push(e);
        }
        // The boot blocks and header (bytes 0 to 1,536), and the copy 1,024 bytes before the end with the 512
        // after it: the blocks holding them are marked in use.
        let total = u64::from(h.total_blocks);
        let first = 1536u64.div_ceil(bs);
        let last_start = h.volume_len().saturating_sub(1024) / bs;
        let mut blocks = first + (total - last_start);
        if last_start < first {
            blocks = total;
        }
        spool.push(Entry {
            id: HEADER_ID,
            parent: root,
            name: "$Header".into(),
            metadata: true,
            attributes: attr::HIDDEN | attr::SYSTEM,
            allocated: blocks * bs,
            size: blocks * bs,
            runs: vec![
                Run {
                    offset: self.base,
                    len: first * bs,
                },
                Run {
                    offset: self.base + last_start * bs,
                    len: (total - last_start) * bs,
                },
            ],
            ..Entry::default()
        });
    }
}
