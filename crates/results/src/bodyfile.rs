//! The Sleuth Kit's body file, version 3 (`mactime -b`'s input): one line per attribute of a name,
//! `MD5|name|inode|mode_as_string|UID|GID|size|atime|mtime|ctime|crtime`, times as Unix seconds.
//!
//! The rows are those `fls -m / -r` prints, so that timestomping shows: the `$STANDARD_INFORMATION` times on the
//! row of the attribute an entry is about, and its name's own `$FILE_NAME` times on a second row:
//! * a file: `path|R-128-ID|r/rrwxrwxrwx|0|0|size|...` for its unnamed `$DATA` (a file without one and without
//!   named streams: `path|R|...|0`, as fls prints a file without attributes), and
//!   `path ($FILE_NAME)|R-48-ID|...|FN size|...` with the `$FILE_NAME` times;
//! * a folder: the same with `d/d`, its `$I30` `$INDEX_ROOT` (`R-144-ID`, the root's length as size);
//! * a named stream: `path:stream|R-128-ID|...` with the SI times;
//! * a deleted entry: ` (deleted)` at the end of the name;
//! * on other file systems than NTFS (FAT, exFAT) one row an entry, `path|INODE|...`, with the entry's times and
//!   a folder's size the bytes of its clusters, as fls prints them (fls's virtual `$MBR`, `$FAT1`… are `v/v`
//!   there and `r/r` here); on ext the inode's own mode, uid and gid (`l/lrwxrwxrwx|1000|1000`) and a
//!   symlink's target after its name (`link -> target`; fls shows it only for a target short enough to be kept
//!   in the inode).
//!
//! As fls: the mode is the name's kind, `/`, the file's kind and `rwx` three times, less `r` for a read-only file
//! and `w` for a hidden one; a `$FILE_NAME` row's size is the attribute's length (66 bytes and the name's UTF-16);
//! control characters in names print as `^`; MD5 is 0, and UID and GID are 0 but on ext.
//!
//! Where uffs's model differs from fls's (`crates/uffs/tests/bodyfile.rs` checks each difference on real
//! volumes):
//! * each hard link's `$FILE_NAME` row has that name's own attribute (id, length, times); fls prints the last
//!   `$FILE_NAME` of the record under every link;
//! * the root folder has its rows (`/`); fls shows it only as `.` with `-a`;
//! * fls also lists a folder's named stream as `folder/.:stream`, and the named index roots of metafiles
//!   (`$Secure:$SDH`, `$Extend/$Quota:$O`, ...): uffs keeps no entries for either, and the metafiles among them
//!   that have no `$DATA` (`$ObjId`, `$Quota`, `$Reparse`) get the attribute-less row instead;
//! * deleted names are always `r/` or `d/` (fls: `-/` for the names it found through the MFT rather than in a
//!   folder's index), and names fls finds only in index slack, or whose record was reused (`deleted-realloc`),
//!   are not entries of uffs; a name a folder's index still lists but whose record is free is deleted to uffs
//!   (which reads records) and live to fls (which reads the index);
//! * a time before 1970 is 0 and one after 2106 is printed whole (fls wraps both round 2^32), UID is 0 (fls
//!   reads `$STANDARD_INFORMATION`'s owner id, and past a 48-byte one the next attribute's type);
//! * `|` in a name prints as `^` (fls prints it, which splits the row);
//! * DOS 8.3 aliases have no rows on either side (uffs makes no entries of them; TSK skips them in folders and
//!   for `$FILE_NAME` rows), but a file whose only name is a DOS one is an entry of uffs, under that name, which
//!   fls does not list.

use uffs_index::time::UNIX_EPOCH as UNIX_EPOCH_TICKS;
use uffs_index::timeline::EntryTimeline;
use uffs_index::{flags, EntryId, Index};

/// The length of a `$FILE_NAME` value before its name.
const FILE_NAME_HEADER: u64 = 0x42;

/// Appends the rows of entry `id`, whose full path (with any volume prefix) is `path` and whose timeline is `tl`
/// (`None`: unknown, as in an index made before uffs kept it: then only the SI row, without attribute).
pub fn rows(idx: &Index, id: EntryId, path: &[u8], tl: Option<EntryTimeline>, b: &mut Vec<u8>) {
    let f = idx.flags(id);
    // A name from index slack whose record is unknown: 0, which no file has.
    let record = crate::column::known_record(idx, id).map_or(0, u64::from);
    let deleted = f & flags::DELETED != 0;
    let stream = f & flags::STREAM != 0;
    // A stream's kind is its file's (a folder may have streams too).
    let dir = if stream {
        host(idx, id).is_some_and(|h| idx.flags(h) & flags::DIRECTORY != 0)
    } else {
        f & flags::DIRECTORY != 0
    };
    let mode = mode(dir, f);
    let si = [
        idx.accessed(id),
        idx.modified(id),
        idx.mft_changed(id),
        idx.created(id),
    ];
    if idx.meta.filesystem != uffs_index::FileSystem::Ntfs {
        // Other file systems: one row an entry, as fls prints theirs: the inode number alone, a folder's size the
        // bytes of its clusters.
        let inode = record | u64::from(idx.sequence(id)) << 32;
        let size = if dir { idx.allocated(id) } else { idx.size(id) };
        // ext: the mode and owner the inode holds, and a symlink's target after its name.
        let (mode, owner) = match idx.posix(id) {
            Some(p) => (posix_mode(&p), (p.uid, p.gid)),
            None => (mode, (0, 0)),
        };
        let mut named = path.to_vec();
        if let Some(t) = idx.link_target(id) {
            named.extend_from_slice(b" -> ");
            named.extend_from_slice(t);
        }
        row(b, &named, "", deleted, inode, None, &mode, owner, size, si);
        return;
    }
    // The row of the attribute the entry is about, with the SI times.
    let (kind, size) = if stream {
        (128, idx.size(id))
    } else if dir {
        (144, tl.and_then(|t| t.index_root_size).map_or(0, u64::from))
    } else {
        (128, idx.size(id))
    };
    match tl.and_then(|t| t.main_id) {
        Some(aid) => row(
            b,
            path,
            "",
            deleted,
            record,
            Some((kind, aid)),
            &mode,
            (0, 0),
            size,
            si,
        ),
        // A file without unnamed data has its streams' rows instead, as in fls.
        None if !dir && !stream && has_streams(idx, id) => {}
        None => row(b, path, "", deleted, record, None, &mode, (0, 0), 0, si),
    }
    let Some(t) = tl.filter(|_| !stream) else {
        return;
    };
    let [c, m, ch, a] = t.fn_times;
    let fn_size = FILE_NAME_HEADER + 2 * utf16_len(&idx.name(id));
    let fn_id = Some((48, t.fn_id));
    row(
        b,
        path,
        " ($FILE_NAME)",
        deleted,
        record,
        fn_id,
        &mode,
        (0, 0),
        fn_size,
        [a, m, ch, c],
    );
}

#[allow(clippy::too_many_arguments)]
fn row(
    b: &mut Vec<u8>,
    path: &[u8],
    label: &str,
    deleted: bool,
    record: u64,
    attr: Option<(u32, u16)>,
    mode: &[u8; 12],
    (uid, gid): (u32, u32),
    size: u64,
    times: [u64; 4],
) {
    b.extend_from_slice(b"0|");
    // Control characters as fls prints them, and `|`, which would split the row.
    b.extend(
        path.iter()
            .map(|&c| if c < 0x20 || c == b'|' { b'^' } else { c }),
    );
    b.extend_from_slice(label.as_bytes());
    if deleted {
        b.extend_from_slice(b" (deleted)");
    }
    b.push(b'|');
    crate::export::itoa(record, b);
    if let Some((kind, id)) = attr {
        b.push(b'-');
        crate::export::itoa(u64::from(kind), b);
        b.push(b'-');
        crate::export::itoa(u64::from(id), b);
    }
    b.push(b'|');
    b.extend_from_slice(mode);
    b.push(b'|');
    crate::export::itoa(u64::from(uid), b);
    b.push(b'|');
    crate::export::itoa(u64::from(gid), b);
    b.push(b'|');
    crate::export::itoa(size, b);
    for t in times {
        b.push(b'|');
        crate::export::itoa(unix_seconds(t), b);
    }
    b.push(b'\n');
}

/// `r/rrwxrwxrwx`: the name's kind, the file's, and permissions as TSK derives them from the attributes.
fn mode(dir: bool, f: u32) -> [u8; 12] {
    let k = if dir { b'd' } else { b'r' };
    let r = if f & flags::READONLY != 0 { b'-' } else { b'r' };
    let w = if f & flags::HIDDEN != 0 { b'-' } else { b'w' };
    [k, b'/', k, r, w, b'x', r, w, b'x', r, w, b'x']
}

/// `r/rrw-r--r--`: an ext inode's mode as fls writes it, its kind (`r` for a regular file) before `ls -l`'s
/// form.
fn posix_mode(p: &uffs_index::Posix) -> [u8; 12] {
    let mut m = [b'-'; 12];
    let s = p.symbolic();
    m[2..].copy_from_slice(&s.as_bytes()[..10]);
    m[0] = if m[2] == b'-' { b'r' } else { m[2] };
    m[2] = m[0];
    m[1] = b'/';
    m
}

/// FILETIME to Unix seconds; 0 (no time, to mactime) before 1970.
pub fn unix_seconds(ft: u64) -> u64 {
    ft.saturating_sub(UNIX_EPOCH_TICKS) / uffs_index::time::TICKS_PER_SECOND
}

/// UTF-16 units of a name (the names were decoded from UTF-16, so this is their length on disk).
fn utf16_len(s: &str) -> u64 {
    s.chars().map(|c| c.len_utf16() as u64).sum()
}

/// The entries the rows of `ids` read besides their own: the other entries of their records (a record's entries
/// are adjacent), for checking what a query will show from a file not checked yet.
pub fn neighbours(idx: &Index, ids: &[EntryId]) -> Vec<EntryId> {
    let n = idx.len() as EntryId;
    let mut v = Vec::new();
    for &id in ids.iter().filter(|&&id| id < n) {
        let record = idx.record(id);
        let same = |e: &EntryId| idx.record(*e) == record;
        let before = (0..id).rev().take(RECORD_ENTRIES).take_while(same).count() as EntryId;
        let after = (id + 1..n).take(RECORD_ENTRIES).take_while(same).count() as EntryId;
        // With the first entry past the record on each side, read to find its end.
        v.extend(id.saturating_sub(before + 1)..=(id + after + 1).min(n - 1));
    }
    v
}

/// The most entries of one record looked at around an entry: more than its names and streams (a damaged
/// file may have any number of entries of one record number; a scan must stay short).
const RECORD_ENTRIES: usize = 8192;

/// The name entry a stream entry hangs beside: a record's entries are adjacent, its names before its streams.
fn host(idx: &Index, id: EntryId) -> Option<EntryId> {
    let record = idx.record(id);
    (0..id)
        .rev()
        .take(RECORD_ENTRIES)
        .take_while(|&e| idx.record(e) == record)
        .find(|&e| idx.flags(e) & flags::STREAM == 0)
}

/// Whether the file of name entry `id` has named streams (entries after its names).
fn has_streams(idx: &Index, id: EntryId) -> bool {
    let record = idx.record(id);
    (id + 1..idx.len() as EntryId)
        .take(RECORD_ENTRIES)
        .take_while(|&e| idx.record(e) == record)
        .any(|e| idx.flags(e) & flags::STREAM != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_modes_as_tsk_prints_them() {
        assert_eq!(unix_seconds(0), 0);
        assert_eq!(
            unix_seconds(UNIX_EPOCH_TICKS + 10_000_000 * 1_704_164_645 + 9_999_999),
            1_704_164_645
        );
        assert_eq!(&mode(false, 0), b"r/rrwxrwxrwx");
        assert_eq!(&mode(false, flags::READONLY), b"r/r-wx-wx-wx");
        assert_eq!(&mode(true, flags::HIDDEN | flags::SYSTEM), b"d/dr-xr-xr-x");
        assert_eq!(utf16_len("a\u{1F600}é"), 4);
    }
}
