//! Texts that few entries have, kept apart from the entries as (entry, text) pairs in entry order:
//!
//! * DOS 8.3 aliases: the short name a file keeps beside its long one (`PROGRA~1` for `Program Files`), on FAT
//!   volumes and NTFS alike. An alias is not an entry (one entry per name a user sees); it is a second name of
//!   its entry that name terms also match, so `PROGRA~1` finds `Program Files` (a name search scans the aliases'
//!   text after the names).
//! * Symbolic links' targets (ext), shown in the `link_target` column.

use crate::column::{grow_gently, Col};
use crate::index::EntryId;

#[derive(Debug, Clone, Default)]
pub struct Apart {
    /// The entries that have a text, ascending.
    pub(crate) ids: Col<u32>,
    /// Where each text starts in `text`, and where the last one ends (one more than `ids`; empty with it).
    pub(crate) starts: Col<u32>,
    /// The texts as written, UTF-8, end to end.
    pub(crate) text: Col<u8>,
}

impl Apart {
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The text of entry `id`, when it has one.
    pub fn of(&self, id: EntryId) -> Option<&[u8]> {
        if self.ids.is_empty() {
            return None;
        }
        let k = self.ids.binary_search(&id).ok()?;
        self.at(k).map(|(_, a)| a)
    }

    /// Every (entry, text), in entry order.
    pub fn iter(&self) -> impl Iterator<Item = (EntryId, &[u8])> + '_ {
        (0..self.ids.len()).filter_map(|k| self.at(k))
    }

    /// The `k`th text. (Offsets out of range, in a file not checked yet, give none, never a fault.)
    fn at(&self, k: usize) -> Option<(EntryId, &[u8])> {
        let (a, b) = (self.starts.get(k)?, self.starts.get(k + 1)?);
        Some((self.ids[k], self.text.get(*a as usize..*b as usize)?))
    }

    /// Adds `text` for entry `id`, which comes after every entry that has one so far.
    pub(crate) fn push(&mut self, id: EntryId, text: &[u8]) {
        if self.starts.is_empty() {
            self.starts.make_owned().push(0);
        }
        self.ids.make_owned().push(id);
        self.text.make_owned().extend_from_slice(text);
        let end = self.text.len() as u32;
        self.starts.make_owned().push(end);
    }

    /// Appends `other`'s texts, its entry ids shifted by `base` (the entries of `other` were appended after
    /// this one's, the first of them at `base`).
    pub(crate) fn append(&mut self, other: &Apart, base: u32) {
        if other.is_empty() {
            return;
        }
        grow_gently(self.ids.make_owned(), other.ids.len());
        grow_gently(self.starts.make_owned(), other.ids.len() + 1);
        grow_gently(self.text.make_owned(), other.text.len());
        for (id, a) in other.iter() {
            self.push(id + base, a);
        }
    }

    /// The O(1) checks of texts opened from a file: the parts have the sizes each other's lengths give.
    pub(crate) fn check_shape(&self) -> Result<(), &'static str> {
        if self.starts.len() == self.ids.len() + 1
            || (self.ids.is_empty() && self.starts.is_empty())
        {
            Ok(())
        } else {
            Err("the parts of the 8.3 aliases or link targets disagree")
        }
    }

    /// Checks what texts read from a file rely on: entries (of `n`) ascending, offsets ordered, UTF-8 text.
    pub(crate) fn validate(&self, n: usize) -> Result<(), &'static str> {
        let at = &self.starts;
        let ok = self.ids.windows(2).all(|w| w[0] < w[1])
            && self.ids.last().is_none_or(|&id| (id as usize) < n)
            && at.windows(2).all(|w| w[0] <= w[1])
            && at.first().is_none_or(|&s| s == 0)
            && at.last().map_or(0, |&e| e as usize) == self.text.len()
            && at
                .windows(2)
                .all(|w| std::str::from_utf8(&self.text[w[0] as usize..w[1] as usize]).is_ok());
        if ok {
            Ok(())
        } else {
            Err("the 8.3 aliases or link targets are inconsistent")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_found_by_entry_and_appended_with_their_ids_shifted() {
        let mut a = Apart::default();
        assert_eq!(a.of(3), None);
        a.push(3, b"PROGRA~1");
        a.push(9, b"DOCUME~1");
        let mut b = Apart::default();
        b.push(0, b"LONGFI~1.TXT");
        a.append(&b, 20);
        assert_eq!(a.of(3), Some(&b"PROGRA~1"[..]));
        assert_eq!(a.of(20), Some(&b"LONGFI~1.TXT"[..]));
        assert_eq!(a.of(4), None);
        assert_eq!(a.iter().map(|(id, _)| id).collect::<Vec<_>>(), [3, 9, 20]);
        assert!(a.check_shape().is_ok() && a.validate(21).is_ok());
        assert!(a.validate(20).is_err(), "entry 20 is out of 20 entries");
    }
}
