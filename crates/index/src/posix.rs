//! Each entry's owner and permissions, on file systems that keep them (ext's `st_mode`, uid and gid).
//!
//! A volume has few distinct (mode, uid, gid) triples (a few hundred on a system disk of 160,000 files), so the
//! column is a table of them and each entry's number in it, in as few bits as the table's size needs (see
//! [`crate::packed`]): one or two bytes an entry, not twelve. NTFS, FAT and exFAT keep none: the column is empty
//! and costs nothing.

use std::collections::HashMap;

use crate::column::Col;
use crate::index::{EntryId, EntryKind};
use crate::packed::{bits, Packed};

/// A file's owner and permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Posix {
    /// `st_mode`: the file type in its top four bits (see [`Posix::kind`]), then set-user-id, set-group-id,
    /// sticky and the nine permission bits.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

/// `st_mode`'s file types.
const S_IFMT: u32 = 0o170_000;
const S_IFSOCK: u32 = 0o140_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFBLK: u32 = 0o060_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFCHR: u32 = 0o020_000;
const S_IFIFO: u32 = 0o010_000;
const S_IFREG: u32 = 0o100_000;

impl Posix {
    /// The kind the mode's file type gives a file that is not a folder (a regular file, or a file type
    /// uffs does not know, is a file).
    pub fn kind(&self) -> EntryKind {
        match self.mode & S_IFMT {
            S_IFLNK => EntryKind::Symlink,
            S_IFSOCK => EntryKind::Socket,
            S_IFBLK => EntryKind::BlockDevice,
            S_IFCHR => EntryKind::CharDevice,
            S_IFIFO => EntryKind::Fifo,
            _ => EntryKind::File,
        }
    }

    /// The permission bits with set-user-id, set-group-id and sticky (`chmod`'s octal number).
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }

    /// The mode as `ls -l` and `find -printf %M` write it: `-rwxr-xr-x`, `drwxrwxrwt`, `lrwxrwxrwx`.
    pub fn symbolic(&self) -> String {
        let kind = match self.mode & S_IFMT {
            S_IFDIR => 'd',
            S_IFLNK => 'l',
            S_IFSOCK => 's',
            S_IFBLK => 'b',
            S_IFCHR => 'c',
            S_IFIFO => 'p',
            _ => '-',
        };
        let m = self.mode;
        let bit = |b: u32, c: char| if m & b != 0 { c } else { '-' };
        // The execute place shows a special bit: lower case with execute, upper case without.
        let exec = |x: u32, special: u32, with: char, without: char| match (
            m & x != 0,
            m & special != 0,
        ) {
            (true, true) => with,
            (false, true) => without,
            (true, false) => 'x',
            (false, false) => '-',
        };
        [
            kind,
            bit(0o400, 'r'),
            bit(0o200, 'w'),
            exec(0o100, 0o4000, 's', 'S'),
            bit(0o040, 'r'),
            bit(0o020, 'w'),
            exec(0o010, 0o2000, 's', 'S'),
            bit(0o004, 'r'),
            bit(0o002, 'w'),
            exec(0o001, 0o1000, 't', 'T'),
        ]
        .iter()
        .collect()
    }

    /// The mode [`Posix::symbolic`] wrote as `s` (`-rwsr-xr-x`), with a plain `-` read as a regular file;
    /// `None` for anything else.
    pub fn mode_from_symbolic(s: &str) -> Option<u32> {
        let b = s.as_bytes();
        if b.len() != 10 {
            return None;
        }
        let mut mode = match b[0] {
            b'd' => S_IFDIR,
            b'l' => S_IFLNK,
            b's' => S_IFSOCK,
            b'b' => S_IFBLK,
            b'c' => S_IFCHR,
            b'p' => S_IFIFO,
            b'-' => S_IFREG,
            _ => return None,
        };
        // Each place: the letter it shows when set, and for the execute places the special bit behind an
        // `s`/`t` (with execute) or `S`/`T` (without).
        for (i, &c) in b[1..].iter().enumerate() {
            let bit = 0o400 >> i;
            let special = match i {
                2 => 0o4000,
                5 => 0o2000,
                8 => 0o1000,
                _ => 0,
            };
            let letter = [b'r', b'w', b'x'][i % 3];
            let (sx, sn) = if i == 8 { (b't', b'T') } else { (b's', b'S') };
            mode |= match c {
                b'-' => 0,
                c if c == letter => bit,
                c if special != 0 && c == sx => bit | special,
                c if special != 0 && c == sn => special,
                _ => return None,
            };
        }
        Some(mode)
    }
}

/// The owners and permissions of a volume's entries.
#[derive(Debug, Clone, Default)]
pub struct PosixColumn {
    /// The number of entries the codes cover, then each distinct triple's mode, uid and gid; empty when no entry
    /// has one.
    pub(crate) table: Col<u32>,
    /// Each entry's triple: 0 for none, `k` for the `k`th of the table.
    pub(crate) codes: Packed,
}

impl PosixColumn {
    /// The column of `values` (one per entry).
    pub fn from_values(values: &[Option<Posix>]) -> PosixColumn {
        if values.iter().all(Option::is_none) {
            return PosixColumn::default();
        }
        let mut table = vec![values.len() as u32];
        let mut seen: HashMap<Posix, u32> = HashMap::new();
        let codes: Vec<u32> = values
            .iter()
            .map(|v| match v {
                None => 0,
                Some(p) => *seen.entry(*p).or_insert_with(|| {
                    table.extend([p.mode, p.uid, p.gid]);
                    ((table.len() - 1) / 3) as u32
                }),
            })
            .collect();
        let width = bits(u64::from(codes.iter().copied().max().unwrap_or(0)));
        PosixColumn {
            table: table.into(),
            codes: Packed::with_width(codes.iter().map(|&c| u64::from(c)), codes.len(), width),
        }
    }

    /// The column whose table and codes a file holds (`codes` as its bytes).
    pub(crate) fn from_parts(table: Col<u32>, codes: Col<u8>) -> Option<PosixColumn> {
        if table.is_empty() {
            return Some(PosixColumn::default());
        }
        let len = table[0] as usize;
        Some(PosixColumn {
            codes: Packed::from_bytes(codes, len)?,
            table,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Entry `id`'s owner and permissions, if it has them. (Codes past the table, in a file not checked yet, give
    /// none, never a fault.)
    pub fn get(&self, id: EntryId) -> Option<Posix> {
        if self.table.is_empty() {
            return None;
        }
        let code = self.codes.get(id as usize)? as usize;
        let t = self
            .table
            .get(1 + 3 * (code.checked_sub(1)?)..1 + 3 * code)?;
        Some(Posix {
            mode: t[0],
            uid: t[1],
            gid: t[2],
        })
    }

    /// The O(1) checks of a column opened from a file: whole triples, codes for at most `n` entries.
    pub(crate) fn check_shape(&self, n: usize) -> Result<(), &'static str> {
        let ok = self.table.is_empty()
            || (self.table.len() % 3 == 1 && self.table[0] as usize <= n && self.codes.len() <= n);
        if ok {
            Ok(())
        } else {
            Err("the owners and permissions column is damaged")
        }
    }

    /// Checks that every code names a triple of the table.
    pub(crate) fn validate(&self) -> Result<(), &'static str> {
        let triples = (self.table.len() / 3) as u32;
        if self.codes.iter().all(|c| c <= triples) {
            Ok(())
        } else {
            Err("an entry's owner and permissions are out of the table")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_as_ls_writes_them() {
        let p = |mode| Posix {
            mode,
            ..Posix::default()
        };
        assert_eq!(p(0o100_644).symbolic(), "-rw-r--r--");
        assert_eq!(p(0o040_755).symbolic(), "drwxr-xr-x");
        assert_eq!(p(0o041_777).symbolic(), "drwxrwxrwt");
        assert_eq!(p(0o104_755).symbolic(), "-rwsr-xr-x");
        assert_eq!(p(0o102_644).symbolic(), "-rw-r-Sr--");
        assert_eq!(p(0o120_777).symbolic(), "lrwxrwxrwx");
        assert_eq!(p(0o020_620).symbolic(), "crw--w----");
        for m in [
            0o100_644, 0o040_755, 0o041_777, 0o104_755, 0o102_644, 0o120_777, 0o020_620, 0o147_000,
            0o010_000,
        ] {
            assert_eq!(
                Posix::mode_from_symbolic(&p(m).symbolic()),
                Some(m),
                "{m:o}"
            );
        }
        assert_eq!(Posix::mode_from_symbolic("-rwxr-xr-"), None);
        assert_eq!(Posix::mode_from_symbolic("-rwsr-xr-q"), None);
        assert_eq!(Posix::mode_from_symbolic("-rSxr-xr-x"), None);
        assert_eq!(p(0o120_777).kind(), EntryKind::Symlink);
        assert_eq!(p(0o010_644).kind(), EntryKind::Fifo);
        assert_eq!(p(0o104_755).permissions(), 0o4755);
    }

    #[test]
    fn a_column_keeps_each_entrys_triple_and_none() {
        let a = Posix {
            mode: 0o100_644,
            uid: 1000,
            gid: 1000,
        };
        let b = Posix {
            mode: 0o040_755,
            uid: 0,
            gid: 0,
        };
        let values = [Some(a), None, Some(b), Some(a), Some(b)];
        let c = PosixColumn::from_values(&values);
        for (i, v) in values.iter().enumerate() {
            assert_eq!(c.get(i as EntryId), *v);
        }
        assert_eq!(c.get(5), None, "past the entries it covers");
        assert!(c.check_shape(5).is_ok() && c.validate().is_ok());
        assert!(c.check_shape(4).is_err());
        let c2 = PosixColumn::from_parts(c.table.clone(), c.codes.bytes().clone()).unwrap();
        assert_eq!(c2.get(3), Some(a));
        assert!(PosixColumn::from_values(&[None, None]).is_empty());
    }
}
