//! Files macOS keeps compressed (decmpfs, "AppleFSCompression"): the flag `UF_COMPRESSED` in the catalog record,
//! an empty data fork, and an extended attribute `com.apple.decmpfs` in the attributes B-tree: a 16-byte header
//! (`fpmc`, the method, the file's length; little-endian) and, for the methods that keep it there, the data;
//! the others keep it in the resource fork, in 64 KiB blocks listed by a table (libfshfs's "Hierarchical File
//! System" document, "Compressed data extended attribute"; the resource fork layouts as The Sleuth Kit reads
//! them). The data is not decoded here: each compressed stretch becomes a [`Packed`] piece where its bytes lie
//! on the volume, decoded when a file is read (zlib, LZVN, LZFSE: `uffs_fs::packed`).

use std::collections::HashMap;

use uffs_fs::{Codec, Packed, Run};

use crate::btree::{self, Layout, Tree};
use crate::{be16, be32, ReadAt};

/// The header's magic, `fpmc` as stored.
const MAGIC: &[u8; 4] = b"fpmc";

/// What a decompressed block holds at most.
const BLOCK: u64 = 1 << 16;

/// A file's `com.apple.decmpfs` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub method: u32,
    pub size: u64,
    /// Where the bytes after the header lie on the volume (inline methods' data).
    pub data: Run,
}

/// Every `com.apple.decmpfs` attribute of the attributes file, by file id; and what stopped the sweep early.
pub fn headers<R: ReadAt + ?Sized>(dev: &R, tree: &Tree) -> (HashMap<u32, Header>, Option<String>) {
    let mut map = HashMap::new();
    let size = u64::from(tree.header.node_size);
    let warning = tree.sweep_leaves(dev, |n, node| {
        // The node's place on the volume: records are located only in a node that is contiguous there.
        let Some((at, contiguous)) = tree.layout.locate(u64::from(n) * size) else {
            return;
        };
        if contiguous < size {
            return;
        }
        for i in 0..node.len() {
            let record = node.record(i);
            let Some((key, data)) = btree::split_record(record) else {
                continue;
            };
            // Key: pad, file id, start block, name length, name (UTF-16BE).
            if key.len() < 12 || !is_decmpfs(&key[12..], usize::from(be16(key, 10))) {
                continue;
            }
            // An inline data record: type 0x10, 8 reserved bytes, the length, the bytes.
            if data.len() < 16 + 16 || be32(data, 0) != 0x10 {
                continue;
            }
            let len = (be32(data, 12) as usize).min(data.len() - 16);
            let value = &data[16..16 + len];
            if len < 16 || &value[..4] != MAGIC {
                continue;
            }
            let start = value.as_ptr() as usize - node.bytes.as_ptr() as usize;
            map.insert(
                be32(key, 2),
                Header {
                    method: u32::from_le_bytes(value[4..8].try_into().expect("4 bytes")),
                    size: u64::from_le_bytes(value[8..16].try_into().expect("8 bytes")),
                    data: Run {
                        offset: at + start as u64 + 16,
                        len: len as u64 - 16,
                    },
                },
            );
        }
    });
    (map, warning.map(|w| format!("the attributes file: {w}")))
}

fn is_decmpfs(name: &[u8], units: usize) -> bool {
    units == 17 && crate::names::is(name.get(..34).unwrap_or(&[]), b"com.apple.decmpfs")
}

/// How a compressed file's data reads: its runs (holes where pieces are) and pieces; or why it cannot.
pub struct Data {
    pub runs: Vec<Run>,
    pub packed: Vec<Packed>,
}

/// The methods: 1 and 9 uncompressed in the attribute, 3 zlib in the attribute, 4 zlib in the resource fork,
/// 5 all zeros, 7 and 8 LZVN, 10 uncompressed in the resource fork, 11 and 12 LZFSE, 13 and 14 LZBITMAP.
pub fn method_name(method: u32) -> &'static str {
    match method {
        1 | 9 => "uncompressed in the attribute",
        3 => "zlib in the attribute",
        4 => "zlib in the resource fork",
        5 => "zeros",
        7 => "LZVN in the attribute",
        8 => "LZVN in the resource fork",
        10 => "uncompressed in the resource fork",
        11 => "LZFSE in the attribute",
        12 => "LZFSE in the resource fork",
        13 => "LZBITMAP in the attribute",
        14 => "LZBITMAP in the resource fork",
        _ => "an unknown method",
    }
}

/// The data of a file compressed as `h` says, its resource fork at `rsrc`: `Err` names what uffs cannot read.
pub fn data<R: ReadAt + ?Sized>(dev: &R, h: &Header, rsrc: &Layout) -> Result<Data, String> {
    let whole = |codec| Data {
        runs: vec![Run::hole(h.size)],
        packed: vec![Packed {
            file_offset: 0,
            len: h.size,
            disk: h.data,
            codec,
            decoded_len: h.size,
            skip: 0,
        }],
    };
    match h.method {
        1 if h.data.len >= h.size => Ok(Data {
            runs: vec![Run {
                offset: h.data.offset,
                len: h.size,
            }],
            packed: Vec::new(),
        }),
        3 if h.size <= uffs_fs::packed::MAX_DECODED as u64 => Ok(whole(Codec::AppleZlib)),
        5 => Ok(Data {
            runs: vec![Run::hole(h.size)],
            packed: Vec::new(),
        }),
        7 if h.size <= uffs_fs::packed::MAX_DECODED as u64 => Ok(whole(Codec::Lzvn)),
        11 if h.size <= uffs_fs::packed::MAX_DECODED as u64 => Ok(whole(Codec::Lzfse)),
        4 => zlib_blocks(dev, h, rsrc),
        8 => offset_blocks(dev, h, rsrc, Codec::Lzvn),
        12 => offset_blocks(dev, h, rsrc, Codec::Lzfse),
        m => Err(format!(
            "compressed with method {m} ({}), which uffs does not decode yet",
            method_name(m)
        )),
    }
}

/// Methods 8 and 12: the resource fork starts with the blocks' offsets (u32, little-endian, from the fork's
/// start), one more than there are blocks, the last where the last block ends.
fn offset_blocks<R: ReadAt + ?Sized>(
    dev: &R,
    h: &Header,
    rsrc: &Layout,
    codec: Codec,
) -> Result<Data, String> {
    let blocks = h.size.div_ceil(BLOCK);
    let mut table = vec![0u8; (blocks as usize + 1) * 4];
    rsrc.read(dev, &mut table, 0)
        .map_err(|e| format!("its resource fork: {e}"))?;
    let offsets: Vec<u64> = table
        .chunks_exact(4)
        .map(|b| u64::from(u32::from_le_bytes(b.try_into().expect("4 bytes"))))
        .collect();
    if offsets[0] != table.len() as u64 {
        return Err(format!(
            "its resource fork's block table starts with {}, not {} for {blocks} blocks",
            offsets[0],
            table.len()
        ));
    }
    let mut data = Data {
        runs: vec![Run::hole(h.size)],
        packed: Vec::with_capacity(blocks as usize),
    };
    for (i, w) in offsets.windows(2).enumerate() {
        let (start, end) = (w[0], w[1]);
        let file_offset = i as u64 * BLOCK;
        let decoded = (h.size - file_offset).min(BLOCK);
        let (at, contiguous) = rsrc
            .locate(start)
            .ok_or_else(|| format!("block {i} lies past its resource fork"))?;
        let len = end
            .checked_sub(start)
            .filter(|&l| l > 0 && l <= contiguous)
            .ok_or_else(|| {
                format!(
                    "block {i} of its resource fork ({start} to {end}) is not within one extent"
                )
            })?;
        data.packed.push(Packed {
            file_offset,
            len: decoded,
            disk: Run { offset: at, len },
            codec,
            decoded_len: decoded,
            skip: 0,
        });
    }
    Ok(data)
}

/// Method 4: the resource fork's header (big-endian: where its data starts), then at the data: its length
/// (big-endian), the number of blocks and each block's offset (from the block count) and length, little-endian.
fn zlib_blocks<R: ReadAt + ?Sized>(dev: &R, h: &Header, rsrc: &Layout) -> Result<Data, String> {
    let read = |buf: &mut [u8], at: u64| {
        rsrc.read(dev, buf, at)
            .map_err(|e| format!("its resource fork: {e}"))
    };
    let mut head = [0u8; 16];
    read(&mut head, 0)?;
    let table = u64::from(be32(&head, 0)) + 4;
    let mut count = [0u8; 4];
    read(&mut count, table)?;
    let blocks = u64::from(u32::from_le_bytes(count));
    if blocks != h.size.div_ceil(BLOCK) {
        return Err(format!(
            "its resource fork lists {blocks} blocks for {} bytes",
            h.size
        ));
    }
    let mut entries = vec![0u8; blocks as usize * 8];
    read(&mut entries, table + 4)?;
    let mut data = Data {
        runs: vec![Run::hole(h.size)],
        packed: Vec::with_capacity(blocks as usize),
    };
    for (i, e) in entries.chunks_exact(8).enumerate() {
        let offset = u64::from(u32::from_le_bytes(e[..4].try_into().expect("4 bytes")));
        let len = u64::from(u32::from_le_bytes(e[4..].try_into().expect("4 bytes")));
        let file_offset = i as u64 * BLOCK;
        let decoded = (h.size - file_offset).min(BLOCK);
        let (at, contiguous) = rsrc
            .locate(table + offset)
            .ok_or_else(|| format!("block {i} lies past its resource fork"))?;
        if contiguous < len || len == 0 {
            return Err(format!(
                "block {i} of its resource fork spans two extents (uffs reads a block from one)"
            ));
        }
        data.packed.push(Packed {
            file_offset,
            len: decoded,
            disk: Run { offset: at, len },
            codec: Codec::AppleZlib,
            decoded_len: decoded,
            skip: 0,
        });
    }
    Ok(data)
}
