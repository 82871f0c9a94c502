//! The index file (provisional format; the daemon work finalises it).
//!
//! Layout, little-endian: a 64-byte header (magic, format version, section count, flags, volume serial, record
//! size, MFT slots, entry count, root id), then a section table (id, offset, length, xxh3 checksum per section),
//! then the sections: the index columns as raw arrays, and the source text. Written to a temporary name, synced,
//! then renamed, so a crash never leaves a half-written file under the real name.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use thiserror::Error;
use xxhash_rust::xxh3::xxh3_64;

use crate::index::{Index, VolumeMeta};

pub const MAGIC: &[u8; 8] = b"UFFSIDX\0";
pub const VERSION: u32 = 1;
const HEADER_LEN: usize = 64;
const SECTION_ENTRY_LEN: usize = 32;

#[derive(Debug, Error)]
pub enum FileError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("not a uffs index file (bad magic)")]
    BadMagic,
    #[error("index format version {found} is not supported (this uffs reads version {VERSION}); rebuild the index")]
    Version { found: u32 },
    #[error("index file is damaged: {0}; rebuild the index")]
    Corrupt(&'static str),
}

/// True when the bytes start with the index file magic.
pub fn is_index_file(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

trait Column: Copy {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! column {
    ($($t:ty),*) => {$(
        impl Column for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
column!(u8, u16, u32, u64);

fn encode<T: Column>(v: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * T::SIZE);
    for &x in v {
        x.put(&mut out);
    }
    out
}

fn decode<T: Column>(b: &[u8]) -> Result<Vec<T>, FileError> {
    if !b.len().is_multiple_of(T::SIZE) {
        return Err(FileError::Corrupt(
            "a column's length is not a whole number of elements",
        ));
    }
    Ok(b.chunks_exact(T::SIZE).map(T::get).collect())
}

/// Writes `idx` to `path` atomically (temporary file, fsync, rename).
pub fn write(idx: &Index, path: &Path) -> Result<(), FileError> {
    let sections: Vec<Vec<u8>> = vec![
        idx.meta.source.as_bytes().to_vec(),
        idx.names.clone(),
        encode(&idx.name_start),
        encode(&idx.parent),
        encode(&idx.record),
        encode(&idx.sequence),
        encode(&idx.flags),
        encode(&idx.size),
        encode(&idx.allocated),
        encode(&idx.created),
        encode(&idx.modified),
        encode(&idx.mft_changed),
        encode(&idx.accessed),
        encode(&idx.reparse_tag),
        encode(&idx.tree_size),
        encode(&idx.descendants),
    ];
    let mut head = Vec::with_capacity(HEADER_LEN + sections.len() * SECTION_ENTRY_LEN);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&VERSION.to_le_bytes());
    head.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    head.extend_from_slice(&u32::from(idx.meta.has_deleted).to_le_bytes());
    head.extend_from_slice(&idx.meta.record_size.to_le_bytes());
    head.extend_from_slice(&idx.meta.serial.to_le_bytes());
    head.extend_from_slice(&idx.meta.records_total.to_le_bytes());
    head.extend_from_slice(&(idx.len() as u64).to_le_bytes());
    head.extend_from_slice(&idx.root.to_le_bytes());
    head.resize(HEADER_LEN, 0);
    let mut offset = (HEADER_LEN + sections.len() * SECTION_ENTRY_LEN) as u64;
    for (i, s) in sections.iter().enumerate() {
        head.extend_from_slice(&(i as u32).to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        head.extend_from_slice(&offset.to_le_bytes());
        head.extend_from_slice(&(s.len() as u64).to_le_bytes());
        head.extend_from_slice(&xxh3_64(s).to_le_bytes());
        offset += s.len() as u64;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let result = (|| {
        let mut f = io::BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        f.write_all(&head)?;
        for s in &sections {
            f.write_all(s)?;
        }
        let f = f.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    Ok(result?)
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}
fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// Reads and verifies an index file. Any damage is an error; nothing is half-loaded.
pub fn read(path: &Path) -> Result<Index, FileError> {
    let file = File::open(path)?;
    // SAFETY: the map is read-only and private to this call; the bytes are checksummed and copied out before
    // returning. A concurrent truncation by another process could fault, which index files written by uffs
    // never see because they are replaced by rename, not rewritten.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    from_bytes(&map)
}

pub fn from_bytes(b: &[u8]) -> Result<Index, FileError> {
    if b.len() < HEADER_LEN || !is_index_file(b) {
        return Err(FileError::BadMagic);
    }
    let version = le_u32(b, 8);
    if version != VERSION {
        return Err(FileError::Version { found: version });
    }
    let count = le_u32(b, 12) as usize;
    if count != 16 {
        return Err(FileError::Corrupt("unexpected section count"));
    }
    let table_end = HEADER_LEN + count * SECTION_ENTRY_LEN;
    if b.len() < table_end {
        return Err(FileError::Corrupt("section table is truncated"));
    }
    let mut sections = Vec::with_capacity(count);
    for i in 0..count {
        let e = HEADER_LEN + i * SECTION_ENTRY_LEN;
        let (off, len, sum) = (le_u64(b, e + 8), le_u64(b, e + 16), le_u64(b, e + 24));
        let s = usize::try_from(off)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(o, l)| b.get(o..o.checked_add(l)?))
            .ok_or(FileError::Corrupt("a section lies outside the file"))?;
        if xxh3_64(s) != sum {
            return Err(FileError::Corrupt("a section's checksum does not match"));
        }
        sections.push(s);
    }
    let meta = VolumeMeta {
        source: String::from_utf8_lossy(sections[0]).into_owned(),
        has_deleted: le_u32(b, 16) != 0,
        record_size: le_u32(b, 20),
        serial: le_u64(b, 24),
        records_total: le_u64(b, 32),
    };
    let entries = le_u64(b, 40) as usize;
    let idx = Index {
        meta,
        names: sections[1].to_vec(),
        name_start: decode(sections[2])?,
        parent: decode(sections[3])?,
        record: decode(sections[4])?,
        sequence: decode(sections[5])?,
        flags: decode(sections[6])?,
        size: decode(sections[7])?,
        allocated: decode(sections[8])?,
        created: decode(sections[9])?,
        modified: decode(sections[10])?,
        mft_changed: decode(sections[11])?,
        accessed: decode(sections[12])?,
        reparse_tag: decode(sections[13])?,
        tree_size: decode(sections[14])?,
        descendants: decode(sections[15])?,
        root: le_u32(b, 48),
    };
    validate(&idx, entries)?;
    Ok(idx)
}

/// Checks the invariants every accessor relies on, so a file that passes never makes the index panic.
fn validate(idx: &Index, entries: usize) -> Result<(), FileError> {
    let n = entries;
    let cols_ok = idx.parent.len() == n
        && idx.record.len() == n
        && idx.sequence.len() == n
        && idx.flags.len() == n
        && idx.size.len() == n
        && idx.allocated.len() == n
        && idx.created.len() == n
        && idx.modified.len() == n
        && idx.mft_changed.len() == n
        && idx.accessed.len() == n
        && idx.reparse_tag.len() == n
        && idx.tree_size.len() == n
        && idx.descendants.len() == n
        && idx.name_start.len() == n + 1;
    if !cols_ok {
        return Err(FileError::Corrupt("column lengths disagree"));
    }
    // The builder always makes a root, so an index has at least one entry.
    if n == 0 || idx.root as usize >= n {
        return Err(FileError::Corrupt("root entry out of range"));
    }
    if idx.name_start.first() != Some(&0)
        || idx.name_start.windows(2).any(|w| w[0] > w[1])
        || idx.name_start.last().map(|&e| e as usize) != Some(idx.names.len())
        || std::str::from_utf8(&idx.names).is_err()
    {
        return Err(FileError::Corrupt("name table is inconsistent"));
    }
    if idx.parent.iter().any(|&p| p as usize >= n) {
        return Err(FileError::Corrupt("a parent id is out of range"));
    }
    // Parent links must reach the root without cycles, and no path may be longer than the builder allows:
    // path building relies on both.
    const UNSEEN: u32 = u32::MAX;
    const WALKING: u32 = u32::MAX - 1;
    let mut path_len = vec![UNSEEN; n];
    path_len[idx.root as usize] = 0;
    let mut stack = Vec::new();
    for start in 0..n {
        let mut cur = start;
        while path_len[cur] == UNSEEN {
            path_len[cur] = WALKING;
            stack.push(cur);
            cur = idx.parent[cur] as usize;
        }
        if path_len[cur] == WALKING {
            return Err(FileError::Corrupt("parent links form a cycle"));
        }
        let mut len = path_len[cur];
        while let Some(e) = stack.pop() {
            len = len.saturating_add(1 + idx.name_start[e + 1] - idx.name_start[e]);
            if len > crate::build::MAX_PATH_BYTES + 64 {
                return Err(FileError::Corrupt("a path is longer than any NTFS path"));
            }
            path_len[e] = len;
        }
    }
    Ok(())
}
