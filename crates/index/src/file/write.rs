//! Writing index files: the sections of an index in file order, laid out on their boundaries, the chunk
//! checksums, the header and tables; written under a temporary name, synced and renamed (see [`super`] for the
//! layout). A build writes the columns while it builds the search aids ([`write_with_aids`]).

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use rayon::prelude::*;

use super::{header_checksum, id, FileError, ALIGN, HEADER_LEN, MAGIC, SECTION_ENTRY_LEN, VERSION};
use crate::aids::{ExtIds, SearchAids};
use crate::check::{chunk_sum, FileCheck, CHUNK};
use crate::column::{Col, Plain};
use crate::index::Index;
use crate::packed::Packed;

/// A section to write: its id, element size and bytes.
type Out<'a> = (u32, usize, Cow<'a, [u8]>);

/// Extra sections to write besides an index's own.
type Extra<'a> = Vec<Out<'a>>;

/// The sections of `idx` in file order, with their ids and element sizes: its columns, then its search aids.
fn sections(idx: &Index) -> Vec<Out<'_>> {
    let mut v = column_sections(idx);
    if let Some(a) = &idx.aids {
        v.extend(aid_sections(a));
    }
    v
}

fn section<T: Plain>(id: u32, col: &Col<T>) -> Out<'_> {
    (id, std::mem::size_of::<T>(), col.le_bytes())
}

/// The sections of everything but the search aids: what a build makes, known before the aids are built.
fn column_sections(idx: &Index) -> Vec<Out<'_>> {
    let frames: Vec<u64> = idx.times().iter().flat_map(|t| t.frame()).collect();
    let mut v = vec![
        (id::SOURCE, 1, Cow::Borrowed(idx.meta.source.as_bytes())),
        (
            id::TIME_FRAMES,
            8,
            Col::from(frames).le_bytes().into_owned().into(),
        ),
        section(id::NAMES, &idx.names.folded),
        section(id::NAME_STARTS, &idx.name_start),
        section(4, &idx.parent),
        section(5, &idx.record),
        section(6, &idx.sequence),
        section(7, &idx.flags),
        section(id::SIZE_LOW, &idx.size.low),
        section(id::SIZE_BIG, &idx.size.big),
        section(id::SIZE_HIGH_IDS, &idx.size.high.ids),
        section(id::SIZE_HIGH_VALUES, &idx.size.high.values),
    ];
    for (t, [codes, ids, values]) in idx.times().into_iter().zip(id::TIMES) {
        v.extend([
            section(codes, t.codes.bytes()),
            section(ids, &t.apart.ids),
            section(values, &t.apart.values),
        ]);
    }
    v.extend([
        section(id::NAME_UPPER, &idx.names.upper),
        section(id::NAMES_APART_IDS, &idx.names.apart_ids),
        section(id::NAMES_APART_STARTS, &idx.names.apart_starts),
        section(id::NAMES_APART_TEXT, &idx.names.apart_text),
        section(id::ALLOC_CODES, &idx.allocated.codes),
        section(id::ALLOC_UNIT, &idx.allocated.unit),
        section(id::ALLOC_APART_IDS, &idx.allocated.apart.ids),
        section(id::ALLOC_APART_VALUES, &idx.allocated.apart.values),
        section(id::REPARSE_IDS, &idx.reparse_tag.ids),
        section(id::REPARSE_TAGS, &idx.reparse_tag.values),
    ]);
    if !idx.record_hashes.is_empty() {
        v.push(section(id::RECORD_HASHES, &idx.record_hashes));
    }
    if !idx.aliases.is_empty() {
        v.extend([
            section(id::ALIAS_IDS, &idx.aliases.ids),
            section(id::ALIAS_STARTS, &idx.aliases.starts),
            section(id::ALIAS_TEXT, &idx.aliases.text),
        ]);
    }
    if !idx.link_targets.is_empty() {
        v.extend([
            section(id::LINK_IDS, &idx.link_targets.ids),
            section(id::LINK_STARTS, &idx.link_targets.starts),
            section(id::LINK_TEXT, &idx.link_targets.text),
        ]);
    }
    if let Some(x) = &idx.exclusive {
        v.extend([
            section(id::EXCLUSIVE_IDS, &x.ids),
            section(id::EXCLUSIVE_VALUES, &x.values),
        ]);
    }
    if !idx.posix.is_empty() {
        v.extend([
            section(id::POSIX_TABLE, &idx.posix.table),
            section(id::POSIX_CODES, idx.posix.codes.bytes()),
        ]);
    }
    if let Some(t) = &idx.timeline {
        v.extend([
            section(id::TIMELINE, &t.data),
            section(id::TIMELINE_BLOCKS, &t.blocks),
        ]);
    }
    v
}

/// The sections of search aids (as many as [`AID_SECTIONS`]).
fn aid_sections(a: &SearchAids) -> Vec<Out<'_>> {
    vec![
        section(id::AIDS, a.name_order.bytes()),
        section(35, a.name_rank.bytes()),
        section(36, a.path_order.bytes()),
        section(37, a.path_rank.bytes()),
        section(38, a.size_order.bytes()),
        section(39, a.created_order.bytes()),
        section(40, a.modified_order.bytes()),
        section(41, a.accessed_order.bytes()),
        match &a.ext_id {
            ExtIds::Narrow(ids) => section(42, ids),
            ExtIds::Wide(ids) => section(42, ids),
        },
        section(43, &a.ext_text),
        section(44, &a.ext_starts),
        section(45, &a.trigrams),
        section(50, a.ext_order.bytes()),
        section(51, &a.name_fences),
        section(52, &a.name_fence_starts),
    ]
}

/// How many sections [`aid_sections`] makes.
const AID_SECTIONS: usize = 15;

/// At most how many bytes of a file the search aids of `idx` take, padding included, before they are built:
/// ten columns of an entry id each (nine orders and ranks, the extension ids), the extensions' and the name
/// fence posts' text (parts of the names), their offsets, and the trigram filter.
fn aids_len_bound(idx: &Index) -> usize {
    let n = idx.len();
    let pad = |len: usize| len.next_multiple_of(ALIGN);
    let id_column = pad(crate::packed::byte_len(n, 32));
    10 * id_column
        + 2 * pad(idx.names.folded().len())
        + pad(4 * (n + 2))
        + pad(4 * (n.div_ceil(crate::aids::NAME_FENCE) + 2))
        + pad(crate::aids::TRIGRAM_KEYS * crate::aids::trigram_row_words(n) * 8)
}

/// Writes `idx` to `path` atomically (temporary file, fsync, rename, fsync of the directory).
pub fn write(idx: &Index, path: &Path) -> Result<(), FileError> {
    write_with(idx, Vec::new(), path).map(|_| ())
}

/// Writes `idx` as [`write`](fn@write) does; returns the time spent waiting for the disk (the syncs of the file and of its
/// directory), for `uffs bench`.
pub fn write_timed(idx: &Index, path: &Path) -> Result<std::time::Duration, FileError> {
    write_with(idx, Vec::new(), path)
}

/// Writes `idx` as format 4 wrote it (the names as written, the folded names among the search aids, the times,
/// orders and ranks as plain columns): for
/// tests of reading older files.
#[doc(hidden)]
pub fn write_format_4(idx: &Index, path: &Path) -> Result<(), FileError> {
    let mut raw = Vec::with_capacity(idx.names.len());
    for id in 0..idx.len() as u32 {
        idx.push_name(id, &mut raw);
    }
    let n = idx.len() as u32;
    let allocated: Vec<u64> = (0..n).map(|i| idx.allocated(i)).collect();
    let tags: Vec<u32> = (0..n).map(|i| idx.reparse_tag(i)).collect();
    let sizes: Vec<u64> = (0..n).map(|i| idx.size(i)).collect();
    let new = [
        id::SIZE_LOW,
        id::SIZE_BIG,
        id::SIZE_HIGH_IDS,
        id::SIZE_HIGH_VALUES,
    ];
    let mut sections: Vec<_> = sections(idx)
        .into_iter()
        .filter(|(sid, ..)| {
            !(id::NAME_UPPER..=id::REPARSE_TAGS).contains(sid)
                && !new.contains(sid)
                && !(70..=81).contains(sid)
        })
        .map(|s| match s.0 {
            id::NAMES => (id::NAMES, 1, Cow::Owned(raw.clone())),
            // Times, orders and ranks as plain columns.
            10..=13 => {
                let t = idx.times()[s.0 as usize - 10];
                let plain: Vec<u64> = (0..idx.len() as u32).map(|i| t.at(i)).collect();
                (s.0, 8, Col::from(plain).le_bytes().into_owned().into())
            }
            34..=41 | 50 => {
                let p = Packed::from_bytes(Col::from(s.2.into_owned()), idx.len())
                    .expect("our own section");
                (s.0, 4, Col::from(p.to_vec()).le_bytes().into_owned().into())
            }
            _ => s,
        })
        .collect();
    sections.push((
        id::SIZE_V4,
        8,
        Col::from(sizes).le_bytes().into_owned().into(),
    ));
    sections.push((
        id::ALLOCATED_V4,
        8,
        Col::from(allocated).le_bytes().into_owned().into(),
    ));
    sections.push((
        id::REPARSE_TAG_V4,
        4,
        Col::from(tags).le_bytes().into_owned().into(),
    ));
    if idx.aids.is_some() {
        sections.push((32, 1, Cow::Borrowed(idx.names.folded())));
    }
    write_sections(idx, sections, 4, path).map(|_| ())
}

pub(super) fn write_with(
    idx: &Index,
    extra: Extra<'_>,
    path: &Path,
) -> Result<std::time::Duration, FileError> {
    let mut sections = sections(idx);
    sections.extend(extra);
    write_sections(idx, sections, VERSION, path)
}

/// Writes the header, tables and `sections` of `idx` in format `version`, in one go.
fn write_sections(
    idx: &Index,
    sections: Vec<Out<'_>>,
    version: u32,
    path: &Path,
) -> Result<std::time::Duration, FileError> {
    let data_len: usize = sections
        .iter()
        .map(|(_, _, b)| b.len().next_multiple_of(ALIGN))
        .sum();
    let data_start = data_start_for(sections.len(), data_len);
    let (offsets, file_len) = lay_out(&sections, data_start);
    let sums = chunk_sums(
        &pieces(&sections, &offsets),
        data_start,
        file_len,
        0..FileCheck::chunks(data_start, file_len),
    );
    let head = header(
        idx, version, &sections, &offsets, data_start, file_len, &sums,
    );
    let temp = Temp::create(path)?;
    let result = (|| {
        let mut f = ChunkWriter::new(&temp.file);
        f.write(&head)?;
        f.write_sections(&sections, &offsets)?;
        Ok(())
    })();
    result.map_err(FileError::Io)?;
    Ok(temp.commit()?)
}

/// How long a build's last steps took: the search aids, and the wait for the disk at the end.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteTimes {
    pub aids: std::time::Duration,
    pub sync: std::time::Duration,
}

/// Builds the search aids of `idx` (when it has none) and writes it to `path` as [`write`](fn@write) does, the columns
/// first: they go to the file, and the kernel starts writing them to the disk, while the aids are built; the
/// aids, the tables and the header follow. The sync at the end then waits only for what came last.
pub fn write_with_aids(idx: &mut Index, path: &Path) -> Result<WriteTimes, FileError> {
    if idx.aids.is_some() {
        let sync = write_timed(idx, path)?;
        return Ok(WriteTimes {
            aids: std::time::Duration::ZERO,
            sync,
        });
    }
    let (aids, times) = write_building_aids(idx, path)?;
    idx.aids = Some(aids);
    Ok(times)
}

fn write_building_aids(idx: &Index, path: &Path) -> Result<(SearchAids, WriteTimes), FileError> {
    let columns = column_sections(idx);
    // The chunk table's room is reserved for the most data the aids can add; what they leave unused is zeros.
    let data_len_bound = columns
        .iter()
        .map(|(_, _, b)| b.len().next_multiple_of(ALIGN))
        .sum::<usize>()
        + aids_len_bound(idx);
    let data_start = data_start_for(columns.len() + AID_SECTIONS, data_len_bound);
    let (mut offsets, columns_end) = lay_out(&columns, data_start);
    // The chunks wholly within the columns: summed beside the aids' build.
    let column_chunks = (columns_end - data_start) / CHUNK;
    let temp = Temp::create(path)?;
    let mut f = ChunkWriter::new(&temp.file);
    let (aids, aids_time, early) = std::thread::scope(|s| {
        let early = s.spawn(|| -> io::Result<Vec<u64>> {
            f.seek_to(data_start)?;
            f.write_sections(&columns, &offsets)?;
            start_writeback(&temp.file);
            Ok(chunk_sums(
                &pieces(&columns, &offsets),
                data_start,
                columns_end,
                0..column_chunks,
            ))
        });
        let t = std::time::Instant::now();
        let aids = SearchAids::build(idx);
        let aids_time = t.elapsed();
        let early = early
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (aids, aids_time, early)
    });
    let mut sums = early?;
    let aid_secs = aid_sections(&aids);
    let (aid_offsets, file_len) = lay_out(&aid_secs, columns_end);
    let chunks = FileCheck::chunks(data_start, file_len);
    let mut sections = columns;
    sections.extend(aid_secs);
    if HEADER_LEN + sections.len() * SECTION_ENTRY_LEN + chunks * 8 > data_start {
        // More than the bound foresaw (it holds for every index uffs makes): written again, in one go.
        drop(temp);
        let sync = write_sections(idx, sections, VERSION, path)?;
        return Ok((
            aids,
            WriteTimes {
                aids: aids_time,
                sync,
            },
        ));
    }
    let column_count = offsets.len();
    offsets.extend(aid_offsets);
    sums.extend(chunk_sums(
        &pieces(&sections, &offsets),
        data_start,
        file_len,
        column_chunks..chunks,
    ));
    let head = header(
        idx, VERSION, &sections, &offsets, data_start, file_len, &sums,
    );
    let result = (|| {
        f.write_sections(&sections[column_count..], &offsets[column_count..])?;
        f.seek_to(0)?;
        f.write(&head)
    })();
    result.map_err(FileError::Io)?;
    let sync = temp.commit()?;
    Ok((
        aids,
        WriteTimes {
            aids: aids_time,
            sync,
        },
    ))
}

/// Where the data starts in a file of `sections` sections and at most `data_len` bytes of data: after the
/// header, the section table and a checksum per chunk, on a chunk boundary, so that each chunk is one of the
/// page cache's blocks (see [`ChunkWriter`]).
fn data_start_for(sections: usize, data_len: usize) -> usize {
    let table_end = HEADER_LEN + sections * SECTION_ENTRY_LEN;
    (table_end + data_len.div_ceil(CHUNK) * 8).next_multiple_of(CHUNK)
}

/// Where `sections` go when laid out from `from`, each on an [`ALIGN`] boundary; and where the last one ends.
fn lay_out(sections: &[Out<'_>], from: usize) -> (Vec<usize>, usize) {
    let mut end = from;
    let offsets = sections
        .iter()
        .map(|(_, _, b)| {
            let at = end.next_multiple_of(ALIGN);
            end = at + b.len();
            at
        })
        .collect();
    (offsets, end)
}

/// The sections' bytes with their offsets in the file.
fn pieces<'a>(sections: &'a [Out<'_>], offsets: &[usize]) -> Vec<(usize, &'a [u8])> {
    offsets
        .iter()
        .zip(sections)
        .map(|(&o, (_, _, b))| (o, &b[..]))
        .collect()
}

/// The checksums of chunks `chunks` of the data laid out as `pieces`, on all cores, from the sections in place
/// (a chunk may span several, and the zero padding between them).
fn chunk_sums(
    pieces: &[(usize, &[u8])],
    data_start: usize,
    file_len: usize,
    chunks: std::ops::Range<usize>,
) -> Vec<u64> {
    chunks
        .into_par_iter()
        .map(|c| {
            let (start, end) = (
                data_start + c * CHUNK,
                (data_start + (c + 1) * CHUNK).min(file_len),
            );
            chunk_sum(&chunk_bytes(pieces, start, end), c)
        })
        .collect()
}

/// The header, the section table and the chunk table of a file of `sections` at `offsets`, padded to
/// `data_start`, with the header's checksum.
fn header(
    idx: &Index,
    version: u32,
    sections: &[Out<'_>],
    offsets: &[usize],
    data_start: usize,
    file_len: usize,
    sums: &[u64],
) -> Vec<u8> {
    let mut head = vec![0u8; HEADER_LEN];
    let put32 = |h: &mut [u8], at: usize, v: u32| h[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |h: &mut [u8], at: usize, v: u64| h[at..at + 8].copy_from_slice(&v.to_le_bytes());
    head[..8].copy_from_slice(MAGIC);
    put32(&mut head, 8, version);
    put32(&mut head, 12, sections.len() as u32);
    put32(&mut head, 16, u32::from(idx.meta.has_deleted));
    put32(&mut head, 20, idx.meta.record_size);
    put64(&mut head, 24, idx.meta.serial);
    put64(&mut head, 32, idx.meta.records_total);
    put64(&mut head, 40, idx.len() as u64);
    put32(&mut head, 48, idx.root);
    put32(&mut head, 52, idx.meta.filesystem.code());
    put64(&mut head, 56, idx.meta.journal_usn);
    put64(&mut head, 64, idx.meta.change_stamp);
    put64(&mut head, 72, idx.meta.built_at);
    put64(&mut head, 80, idx.meta.journal_id);
    put64(&mut head, 88, file_len as u64);
    put64(&mut head, 96, data_start as u64);
    put64(&mut head, 104, idx.meta.bytes_in_use);
    put64(&mut head, 112, idx.meta.bytes_total);
    for ((id, size, bytes), &offset) in sections.iter().zip(offsets) {
        head.extend_from_slice(&id.to_le_bytes());
        head.extend_from_slice(&(*size as u32).to_le_bytes());
        head.extend_from_slice(&(offset as u64).to_le_bytes());
        head.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        head.extend_from_slice(&0u64.to_le_bytes());
    }
    for sum in sums {
        head.extend_from_slice(&sum.to_le_bytes());
    }
    head.resize(data_start, 0);
    let head_sum = header_checksum(&head);
    head[HEADER_LEN - 8..HEADER_LEN].copy_from_slice(&head_sum.to_le_bytes());
    head
}

/// A file being written under a temporary name beside the one it becomes (registered in [`crate::temp`], so a
/// process ended by a signal removes it): removed if dropped, renamed by [`Temp::commit`].
struct Temp {
    file: File,
    tmp: std::path::PathBuf,
    path: std::path::PathBuf,
    committed: bool,
}

impl Temp {
    fn create(path: &Path) -> io::Result<Temp> {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir_of(path).join(format!(".{file_name}.tmp{}", std::process::id()));
        Ok(Temp {
            file: crate::temp::create(&tmp)?,
            tmp,
            path: path.to_path_buf(),
            committed: false,
        })
    }

    /// Syncs the file, renames it to its real name and syncs the directory; returns the time spent waiting for
    /// the disk.
    fn commit(mut self) -> io::Result<std::time::Duration> {
        let t = std::time::Instant::now();
        self.file.sync_all()?;
        crate::temp::persist(&self.tmp, &self.path)?;
        self.committed = true;
        // The rename is durable only once the directory is. (Windows has no directory sync: NTFS journals the
        // rename itself.)
        #[cfg(unix)]
        File::open(dir_of(&self.path))?.sync_all()?;
        Ok(t.elapsed())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.committed {
            crate::temp::discard(&self.tmp);
        }
    }
}

fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Asks the kernel to start writing `file`'s dirty pages to the disk now, without waiting for it. (Elsewhere the
/// sync at the end does it all.)
fn start_writeback(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain system call on an open descriptor; it reads no memory of ours.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Writes a file in pieces that never cross a [`CHUNK`] boundary. The kernel caches a file in blocks ("folios")
/// no larger than the writes that made them, and maps a whole block into a process that reads any byte of it: a
/// file written in large writes is cached in blocks of up to 2 MiB, so a one-shot query that reads a few bytes
/// in a hundred places maps, and must then check, a hundred times 2 MiB, and a daemon's memory holds whole blocks
/// of which it read a line. Written a chunk at a time, one read maps one chunk.
struct ChunkWriter<'f> {
    file: &'f File,
    at: usize,
}

impl<'f> ChunkWriter<'f> {
    fn new(file: &'f File) -> ChunkWriter<'f> {
        ChunkWriter { file, at: 0 }
    }

    fn seek_to(&mut self, at: usize) -> io::Result<()> {
        io::Seek::seek(&mut self.file, io::SeekFrom::Start(at as u64))?;
        self.at = at;
        Ok(())
    }

    fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let room = CHUNK - self.at % CHUNK;
            let (piece, rest) = bytes.split_at(room.min(bytes.len()));
            self.file.write_all(piece)?;
            self.at += piece.len();
            bytes = rest;
        }
        Ok(())
    }

    /// Writes `sections` at `offsets` (from where the writer is), zeros between them.
    fn write_sections(&mut self, sections: &[Out<'_>], offsets: &[usize]) -> io::Result<()> {
        for ((_, _, bytes), &start) in sections.iter().zip(offsets) {
            self.write(&[0u8; ALIGN][..start - self.at])?;
            self.write(bytes)?;
        }
        Ok(())
    }
}

/// The file bytes `start..end` of the data laid out as `pieces` (file offset, bytes; zeros between them): a
/// slice of one piece when the range lies inside it, else gathered.
fn chunk_bytes<'a>(pieces: &[(usize, &'a [u8])], start: usize, end: usize) -> Cow<'a, [u8]> {
    let first = pieces.partition_point(|(o, b)| o + b.len() <= start);
    if let Some(&(o, b)) = pieces.get(first) {
        if o <= start && end <= o + b.len() {
            return Cow::Borrowed(&b[start - o..end - o]);
        }
    }
    let mut buf = vec![0u8; end - start];
    for &(o, b) in pieces[first..].iter().take_while(|(o, _)| *o < end) {
        let (s, e) = (o.max(start), (o + b.len()).min(end));
        if s < e {
            buf[s - start..e - start].copy_from_slice(&b[s - o..e - o]);
        }
    }
    Cow::Owned(buf)
}
