//! HFS+ B-trees (TN1150, "B-Trees"): the catalog, extents overflow and attributes files are each a B-tree of
//! fixed-size nodes stored in the file's fork. Node 0 is the header node; leaves are linked left to right
//! (`fLink`), so a sweep of every record is a walk of that chain, reading the fork in large windows.

use crate::{be16, be32, Error, ReadAt, Result};

/// A node's kind (`kind` of its descriptor).
pub mod kind {
    pub const LEAF: i8 = -1;
    pub const INDEX: i8 = 0;
    pub const HEADER: i8 = 1;
    pub const MAP: i8 = 2;
}

/// What the header node says of its tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub depth: u16,
    pub root: u32,
    pub leaf_records: u32,
    pub first_leaf: u32,
    pub last_leaf: u32,
    pub node_size: u32,
    pub total_nodes: u32,
    pub free_nodes: u32,
    /// The catalog's key order: 0xCF case-folded (HFS+), 0xBC binary (HFSX).
    pub compare: u8,
}

/// Where a fork's bytes are: byte runs on the volume (offset from the volume's start, length), in file order.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    pub runs: Vec<(u64, u64)>,
}

impl Layout {
    /// The volume offset of file byte `at` and how many bytes from there are contiguous, within the runs.
    pub fn locate(&self, at: u64) -> Option<(u64, u64)> {
        let mut start = 0u64;
        for &(offset, len) in &self.runs {
            if at < start + len {
                let into = at - start;
                return Some((offset + into, len - into));
            }
            start += len;
        }
        None
    }

    pub fn len(&self) -> u64 {
        self.runs.iter().map(|r| r.1).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` from file byte `at`, across runs; an error past the last run or where the device fails.
    pub fn read<R: ReadAt + ?Sized>(&self, dev: &R, buf: &mut [u8], mut at: u64) -> Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let (offset, avail) = self
                .locate(at)
                .ok_or_else(|| Error::new(format!("byte {at} is past the file's extents")))?;
            let n = (buf.len() - done).min(usize::try_from(avail).unwrap_or(usize::MAX));
            dev.read_exact_at(&mut buf[done..done + n], offset)
                .map_err(|e| Error::new(format!("reading at byte {offset}: {e}")))?;
            done += n;
            at += n as u64;
        }
        Ok(())
    }
}

/// A B-tree file opened: its layout and header.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub layout: Layout,
    pub header: Header,
}

/// The bytes one read of the leaf chain takes at most: some nodes read ahead in one go.
const WINDOW: u64 = 1 << 20;

impl Tree {
    /// Reads the header node of the B-tree whose fork is `layout`.
    pub fn open<R: ReadAt + ?Sized>(dev: &R, layout: Layout, what: &str) -> Result<Tree> {
        let mut head = [0u8; 14 + 106];
        layout
            .read(dev, &mut head, 0)
            .map_err(|e| Error::new(format!("the {what} file's header node: {e}")))?;
        if head[8] as i8 != kind::HEADER {
            return Err(Error::new(format!(
                "the {what} file's first node is not a B-tree header node"
            )));
        }
        let h = &head[14..];
        let header = Header {
            depth: be16(h, 0),
            root: be32(h, 2),
            leaf_records: be32(h, 6),
            first_leaf: be32(h, 10),
            last_leaf: be32(h, 14),
            node_size: u32::from(be16(h, 18)),
            total_nodes: be32(h, 22),
            free_nodes: be32(h, 26),
            compare: h[37],
        };
        if !(512..=32768).contains(&header.node_size) || !header.node_size.is_power_of_two() {
            return Err(Error::new(format!(
                "the {what} file's nodes are {} bytes (512 to 32,768, a power of two)",
                header.node_size
            )));
        }
        Ok(Tree { layout, header })
    }

    /// Node `n`'s bytes.
    pub fn read_node<R: ReadAt + ?Sized>(&self, dev: &R, n: u32) -> Result<Vec<u8>> {
        let size = u64::from(self.header.node_size);
        let mut b = vec![0u8; size as usize];
        self.layout.read(dev, &mut b, u64::from(n) * size)?;
        Ok(b)
    }

    /// Every leaf in chain order, each handed to `f` with its number; what breaks the chain (a node that is
    /// not a leaf, one read twice, one that cannot be read) ends the sweep with a warning in the result.
    pub fn sweep_leaves<R: ReadAt + ?Sized>(
        &self,
        dev: &R,
        mut f: impl FnMut(u32, &Node<'_>),
    ) -> Option<String> {
        let size = u64::from(self.header.node_size);
        let nodes = self.layout.len() / size;
        let mut seen = vec![0u64; (nodes as usize).div_ceil(64)];
        let mut window = Vec::new();
        let mut window_first = u64::MAX;
        let mut n = u64::from(self.header.first_leaf);
        while n != 0 {
            if n >= nodes {
                return Some(format!("leaf {n} is past the tree's {nodes} nodes"));
            }
            let (word, bit) = ((n / 64) as usize, n % 64);
            if seen[word] & (1 << bit) != 0 {
                return Some(format!("the leaf chain comes back to node {n}"));
            }
            seen[word] |= 1 << bit;
            let in_window =
                n >= window_first && (n - window_first + 1) * size <= window.len() as u64;
            if !in_window {
                // From node n to the end of its run, at most a window's worth of whole nodes.
                let Some((_, contiguous)) = self.layout.locate(n * size) else {
                    return Some(format!("node {n} is past the file's extents"));
                };
                let len = contiguous.min(WINDOW).max(size) / size * size;
                window.resize(len as usize, 0);
                if let Err(e) = self.layout.read(dev, &mut window, n * size) {
                    return Some(format!("leaf {n}: {e}"));
                }
                window_first = n;
            }
            let at = ((n - window_first) * size) as usize;
            let node = match Node::parse(&window[at..at + size as usize]) {
                Ok(node) => node,
                Err(e) => return Some(format!("leaf {n}: {e}")),
            };
            if node.kind != kind::LEAF {
                return Some(format!("node {n} of the leaf chain is not a leaf"));
            }
            let next = node.next;
            f(n as u32, &node);
            n = u64::from(next);
        }
        None
    }
}

impl Tree {
    /// The nodes the tree's map marks in use, a bit each (node 0 the first byte's high bit): the header node's
    /// map record, then the map nodes its forward link chains. `None` when they cannot be read.
    pub fn nodes_in_use<R: ReadAt + ?Sized>(&self, dev: &R) -> Option<Vec<u8>> {
        let want = (self.header.total_nodes as usize).div_ceil(8);
        let head = self.read_node(dev, 0).ok()?;
        let node = Node::parse(&head).ok()?;
        if node.len() < 3 {
            return None;
        }
        let mut map = node.record(2).to_vec();
        let mut next = node.next;
        let mut hops = 0;
        while map.len() < want && next != 0 {
            hops += 1;
            if hops > self.header.total_nodes {
                return None;
            }
            let bytes = self.read_node(dev, next).ok()?;
            let node = Node::parse(&bytes).ok()?;
            if node.kind != kind::MAP || node.is_empty() {
                return None;
            }
            map.extend_from_slice(node.record(0));
            next = node.next;
        }
        (map.len() >= want).then(|| {
            map.truncate(want);
            map
        })
    }

    /// Every leaf the map marks in use, in node order, the nodes split into `parts` ranges each swept (in large
    /// reads) by its own thread with its own state from `init`; the states in range order, and what could not
    /// be read. Faster than the leaf chain ([`Tree::sweep_leaves`]), and a break in the chain loses nothing.
    pub fn par_leaves<R: ReadAt + ?Sized, S: Send>(
        &self,
        dev: &R,
        in_use: &[u8],
        parts: usize,
        init: impl Fn() -> S + Sync,
        f: impl Fn(&mut S, u32, &Node<'_>) + Sync,
    ) -> (Vec<S>, Vec<String>) {
        use rayon::prelude::*;
        let size = u64::from(self.header.node_size);
        let nodes = (self.layout.len() / size).min(in_use.len() as u64 * 8);
        let per = nodes.div_ceil(parts.max(1) as u64).max(1);
        let ranges: Vec<(u64, u64)> = (0..nodes)
            .step_by(per as usize)
            .map(|a| (a, (a + per).min(nodes)))
            .collect();
        let done: Vec<(S, Vec<String>)> = ranges
            .into_par_iter()
            .map(|(first, end)| {
                let mut state = init();
                let mut warnings = Vec::new();
                let mut window = Vec::new();
                let mut n = first;
                while n < end {
                    let Some((_, contiguous)) = self.layout.locate(n * size) else {
                        break;
                    };
                    let count = (contiguous.min(WINDOW).max(size) / size).min(end - n);
                    window.resize((count * size) as usize, 0);
                    if let Err(e) = self.layout.read(dev, &mut window, n * size) {
                        warnings.push(format!("nodes {n} to {}: {e}", n + count - 1));
                        n += count;
                        continue;
                    }
                    for (i, bytes) in window.chunks_exact(size as usize).enumerate() {
                        let at = n + i as u64;
                        if in_use[(at / 8) as usize] & (0x80 >> (at % 8)) == 0 {
                            continue;
                        }
                        match bytes[8] as i8 {
                            kind::LEAF => {}
                            kind::INDEX | kind::HEADER | kind::MAP => continue,
                            k => {
                                warnings.push(format!(
                                    "node {at}, marked in use, is no B-tree node (kind {k})"
                                ));
                                continue;
                            }
                        }
                        match Node::parse(bytes) {
                            Ok(node) => f(&mut state, at as u32, &node),
                            Err(e) => warnings.push(format!("leaf {at}: {e}")),
                        }
                    }
                    n += count;
                }
                (state, warnings)
            })
            .collect();
        let mut warnings = Vec::new();
        let states = done
            .into_iter()
            .map(|(s, w)| {
                warnings.extend(w);
                s
            })
            .collect();
        (states, warnings)
    }
}

/// One node: its descriptor and records.
#[derive(Debug)]
pub struct Node<'a> {
    pub bytes: &'a [u8],
    pub next: u32,
    pub prev: u32,
    pub kind: i8,
    pub height: u8,
    /// Where each record starts, and (last) where free space starts.
    offsets: Vec<u16>,
}

impl<'a> Node<'a> {
    /// A node's bytes, checked: its record offsets within it and increasing.
    pub fn parse(bytes: &'a [u8]) -> Result<Node<'a>> {
        let size = bytes.len();
        let count = usize::from(be16(bytes, 10));
        // The offsets (one per record and one for free space) sit at the node's end, record 0's last.
        if 14 + 2 * (count + 1) > size {
            return Err(Error::new(format!("{count} records do not fit the node")));
        }
        let table_start = size - 2 * (count + 1);
        let mut offsets = Vec::with_capacity(count + 1);
        for i in 0..=count {
            offsets.push(be16(bytes, size - 2 * (i + 1)));
        }
        let mut last = 14;
        for &o in &offsets {
            let o = usize::from(o);
            if o < last || o > table_start {
                return Err(Error::new("its record offsets are out of order"));
            }
            last = o;
        }
        Ok(Node {
            bytes,
            next: be32(bytes, 0),
            prev: be32(bytes, 4),
            kind: bytes[8] as i8,
            height: bytes[9],
            offsets,
        })
    }

    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Record `i`'s bytes (key and data).
    pub fn record(&self, i: usize) -> &'a [u8] {
        &self.bytes[usize::from(self.offsets[i])..usize::from(self.offsets[i + 1])]
    }

    /// The bytes after the last record, before the offset table: where a removed record's bytes may remain.
    pub fn slack(&self) -> &'a [u8] {
        let end = self.bytes.len() - 2 * self.offsets.len();
        &self.bytes[usize::from(self.offsets[self.len()])..end]
    }
}

/// A record's key length (its first two bytes, the trees' big-keys form) and its data, after the key.
pub fn split_record(record: &[u8]) -> Option<(&[u8], &[u8])> {
    if record.len() < 2 {
        return None;
    }
    let key_len = usize::from(be16(record, 0).min(u16::MAX - 2)) + 2;
    // Data starts on an even byte.
    let data_at = key_len + (key_len & 1);
    (record.len() >= data_at).then(|| (&record[2..key_len], &record[data_at..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(records: &[&[u8]], size: usize) -> Vec<u8> {
        let mut b = vec![0u8; size];
        b[8] = kind::LEAF as u8;
        b[10..12].copy_from_slice(&(records.len() as u16).to_be_bytes());
        let mut at = 14usize;
        for (i, r) in records.iter().enumerate() {
            b[size - 2 * (i + 1)..size - 2 * i].copy_from_slice(&(at as u16).to_be_bytes());
            let len = <[u8]>::len(r);
            b[at..at + len].copy_from_slice(r);
            at += len;
        }
        let i = records.len();
        b[size - 2 * (i + 1)..size - 2 * i].copy_from_slice(&(at as u16).to_be_bytes());
        b
    }

    #[test]
    fn records_and_their_bounds() {
        let b = node(&[b"\x00\x02ab-data", b"\x00\x04abcd"], 512);
        let n = Node::parse(&b).unwrap();
        assert_eq!(n.len(), 2);
        assert_eq!(split_record(n.record(0)), Some((&b"ab"[..], &b"-data"[..])));
        assert_eq!(split_record(n.record(1)), Some((&b"abcd"[..], &b""[..])));
        // Offsets out of order, and a count the node cannot hold.
        let mut bad = b.clone();
        bad[510..512].copy_from_slice(&400u16.to_be_bytes());
        assert!(Node::parse(&bad).is_err());
        let mut bad = b;
        bad[10..12].copy_from_slice(&300u16.to_be_bytes());
        assert!(Node::parse(&bad).is_err());
    }

    #[test]
    fn a_layout_reads_across_runs() {
        let dev: Vec<u8> = (0..100u8).collect();
        let l = Layout {
            runs: vec![(10, 5), (50, 5)],
        };
        let mut buf = [0u8; 6];
        l.read(&dev, &mut buf, 2).unwrap();
        assert_eq!(buf, [12, 13, 14, 50, 51, 52]);
        assert!(l.read(&dev, &mut buf, 6).is_err());
    }
}
