//! Entry names, stored once: folded to lower case (what every case-insensitive search reads), with a bit per byte
//! marking where the name as written is upper case, and the few names that folding and those bits cannot give back
//! kept whole, apart.
//!
//! Storing the names as written beside their folded copy cost 21 bytes an entry on the benchmark volume; the bits
//! cost 2.6 and the names apart next to nothing (a name is apart only when a character's upper case is not the one
//! it was written with: `ǅ`, or a character that folding leaves alone but that is upper case in another way).
//!
//! The folded arena has the offsets of the names ([`crate::paths::fold_into`] keeps lengths), so the index's
//! `name_start` serves both.

use std::borrow::Cow;

use crate::column::Col;
use crate::index::EntryId;
use crate::paths::fold_into;

#[derive(Debug, Clone, Default)]
pub struct Names {
    /// Every name folded, end to end, at the names' offsets.
    pub(crate) folded: Col<u8>,
    /// Bit `i` (of word `i / 64`): the character that starts at byte `i` of `folded` is upper case in the name.
    pub(crate) upper: Col<u64>,
    /// The entries whose names are kept whole (ascending), where each is in `apart_text`, and the text.
    pub(crate) apart_ids: Col<u32>,
    pub(crate) apart_starts: Col<u32>,
    pub(crate) apart_text: Col<u8>,
}

impl Names {
    /// The names of `raw` (UTF-8 names end to end; name `i` is `raw[starts[i]..starts[i + 1]]`). One pass over
    /// the names on all cores: this runs once per build, over every name.
    pub fn from_raw(raw: &[u8], starts: &[u32]) -> Names {
        use rayon::prelude::*;
        let n = starts.len().saturating_sub(1);
        let ordered = starts.first() == Some(&0)
            && starts.windows(2).all(|w| w[0] <= w[1])
            && starts.last().map(|&e| e as usize) == Some(raw.len());
        if !ordered {
            // Offsets out of order (an older file's names not checked yet, which its check will refuse): any
            // folding of the same length keeps the bounds.
            return Names {
                upper: vec![0; raw.len().div_ceil(64)].into(),
                folded: raw.to_ascii_lowercase().into(),
                ..Names::default()
            };
        }
        // Runs of entries, each folding its names into its own stretch of the arena.
        const RUN: usize = 16 * 1024;
        let runs: Vec<std::ops::Range<usize>> =
            (0..n).step_by(RUN).map(|a| a..(a + RUN).min(n)).collect();
        let mut folded = vec![0u8; raw.len()];
        let mut stretches = Vec::with_capacity(runs.len());
        let mut rest = &mut folded[..];
        for r in &runs {
            let len = (starts[r.end] - starts[r.start]) as usize;
            let (head, tail) = rest.split_at_mut(len);
            stretches.push(head);
            rest = tail;
        }
        let done: Vec<RunOut> = runs
            .par_iter()
            .zip(stretches)
            .map(|(r, out)| fold_run(raw, starts, r.clone(), out))
            .collect();
        // Each run's bits start at its first byte: shifted into place.
        let mut upper = vec![0u64; raw.len().div_ceil(64)];
        let mut apart = Vec::new();
        for (r, d) in runs.iter().zip(done) {
            or_bits_at(&mut upper, starts[r.start] as usize, &d.bits);
            apart.extend(d.apart);
        }
        let (mut at, mut text) = (vec![0u32], Vec::new());
        for &id in &apart {
            text.extend_from_slice(
                &raw[starts[id as usize] as usize..starts[id as usize + 1] as usize],
            );
            at.push(text.len() as u32);
        }
        Names {
            folded: folded.into(),
            upper: upper.into(),
            apart_ids: apart.into(),
            apart_starts: at.into(),
            apart_text: text.into(),
        }
    }

    /// Appends name `raw` (of entry `id`, after every entry so far) to owned names.
    pub(crate) fn push(&mut self, id: EntryId, raw: &[u8]) {
        let one = Names::from_raw(raw, &[0, raw.len() as u32]);
        let base = self.folded.len();
        let folded = self.folded.make_owned();
        folded.extend_from_slice(&one.folded);
        let upper = self.upper.make_owned();
        upper.resize(folded.len().div_ceil(64), 0);
        or_bits_at(upper, base, &one.upper);
        if !one.apart_ids.is_empty() {
            if self.apart_starts.is_empty() {
                self.apart_starts.make_owned().push(0);
            }
            self.apart_ids.make_owned().push(id);
            let text = self.apart_text.make_owned();
            text.extend_from_slice(raw);
            let end = text.len() as u32;
            self.apart_starts.make_owned().push(end);
        }
    }

    /// The O(1) checks of names opened from a file: the parts have the sizes that each other's lengths give.
    pub(crate) fn check_shape(&self) -> Result<(), &'static str> {
        let apart_ok = self.apart_starts.len() == self.apart_ids.len() + 1
            || (self.apart_ids.is_empty() && self.apart_starts.is_empty());
        if self.upper.len() != self.folded.len().div_ceil(64) || !apart_ok {
            return Err("the name table's parts disagree");
        }
        Ok(())
    }

    /// Checks what names read from a file rely on, beyond their bounds: the names kept apart are of entries
    /// (of `n`), ascending, at ordered offsets, and UTF-8. (The folded text is checked with the offsets.)
    pub(crate) fn validate(&self, n: usize) -> Result<(), &'static str> {
        let at = &self.apart_starts;
        let ok = self.apart_ids.windows(2).all(|w| w[0] < w[1])
            && self.apart_ids.last().is_none_or(|&id| (id as usize) < n)
            && at.windows(2).all(|w| w[0] <= w[1])
            && at.first().is_none_or(|&s| s == 0)
            && at.last().map_or(0, |&e| e as usize) == self.apart_text.len()
            && std::str::from_utf8(&self.apart_text).is_ok()
            && at.windows(2).all(|w| {
                std::str::from_utf8(&self.apart_text[w[0] as usize..w[1] as usize]).is_ok()
            });
        if !ok {
            return Err("the names kept apart are inconsistent");
        }
        Ok(())
    }

    /// Bytes of folded text.
    pub fn len(&self) -> usize {
        self.folded.len()
    }
    pub fn is_empty(&self) -> bool {
        self.folded.is_empty()
    }

    /// The folded names, end to end.
    pub fn folded(&self) -> &[u8] {
        &self.folded
    }

    /// The name of entry `id` at folded bytes `s..e`, as written: borrowed from the folded text when it has no
    /// upper case. (Bytes out of range, in a file not checked yet, give an empty or shorter name, never a fault.)
    pub fn name(&self, id: EntryId, s: usize, e: usize) -> Cow<'_, [u8]> {
        if let Some(whole) = self.apart(id) {
            return Cow::Borrowed(whole);
        }
        let text = self.folded.get(s..e).unwrap_or_default();
        if !self.any_upper(s, s + text.len()) {
            return Cow::Borrowed(text);
        }
        let mut out = Vec::with_capacity(text.len());
        self.unfold_into(s, e, &mut out);
        Cow::Owned(out)
    }

    /// Appends the name of entry `id` at folded bytes `s..e`, as written, to `out`.
    pub fn name_into(&self, id: EntryId, s: usize, e: usize, out: &mut Vec<u8>) {
        match self.apart(id) {
            Some(whole) => out.extend_from_slice(whole),
            None => self.unfold_into(s, e, out),
        }
    }

    /// The name of `id` when it is kept whole.
    fn apart(&self, id: EntryId) -> Option<&[u8]> {
        if self.apart_ids.is_empty() {
            return None;
        }
        let k = self.apart_ids.binary_search(&id).ok()?;
        let (a, b) = (self.apart_starts.get(k)?, self.apart_starts.get(k + 1)?);
        self.apart_text.get(*a as usize..*b as usize)
    }

    /// Whether any character in folded bytes `s..e` is upper case in its name.
    fn any_upper(&self, s: usize, e: usize) -> bool {
        self.upper_words(s, e).any(|(_, bits)| bits != 0)
    }

    /// The words of `upper` over bytes `s..e`, masked to them: (bit 0's byte, bits).
    fn upper_words(&self, s: usize, e: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        (s / 64..e.div_ceil(64)).map(move |w| {
            let lo = w * 64;
            let mut bits = self.upper.get(w).copied().unwrap_or(0);
            if lo < s {
                bits &= !0 << (s - lo);
            }
            if e < lo + 64 {
                bits &= (1 << (e - lo)) - 1;
            }
            (lo, bits)
        })
    }

    /// Appends folded bytes `s..e` to `out` with the characters marked upper case made upper case.
    fn unfold_into(&self, s: usize, e: usize, out: &mut Vec<u8>) {
        let text = self.folded.get(s..e).unwrap_or_default();
        let base = out.len();
        out.extend_from_slice(text);
        let e = s + text.len();
        for (lo, mut bits) in self.upper_words(s, e) {
            while bits != 0 {
                let p = base + (lo + bits.trailing_zeros() as usize - s);
                bits &= bits - 1;
                upper_at(&mut out[base..], p - base);
            }
        }
    }
}

/// ORs `bits` (bit 0 for byte `at`) into `dst` (bit 0 for byte 0), dropping what falls past its end.
fn or_bits_at(dst: &mut [u64], at: usize, bits: &[u64]) {
    let (w, shift) = (at / 64, at % 64);
    for (k, &v) in bits.iter().enumerate().filter(|(_, v)| **v != 0) {
        if let Some(d) = dst.get_mut(w + k) {
            *d |= v << shift;
        }
        if shift > 0 {
            if let Some(d) = dst.get_mut(w + k + 1) {
                *d |= v >> (64 - shift);
            }
        }
    }
}

/// What folding one run of names gives besides the folded bytes.
struct RunOut {
    /// The upper-case bits, bit 0 at the run's first byte.
    bits: Vec<u64>,
    /// The entries whose names cannot come back from their folded form and bits.
    apart: Vec<u32>,
}

/// Folds the names of entries `ids` (ordered offsets) into `out`, the run's stretch of the folded arena.
fn fold_run(raw: &[u8], starts: &[u32], ids: std::ops::Range<usize>, out: &mut [u8]) -> RunOut {
    let base = starts[ids.start] as usize;
    let mut bits = vec![0u64; out.len().div_ceil(64)];
    let mut apart = Vec::new();
    let mut folded = Vec::new();
    let mut set = |p: usize| bits[(p - base) / 64] |= 1 << ((p - base) % 64);
    for id in ids {
        let (s, e) = (starts[id] as usize, starts[id + 1] as usize);
        let name = &raw[s..e];
        let dst = &mut out[s - base..e - base];
        if name.is_ascii() {
            for (i, (&c, d)) in name.iter().zip(dst.iter_mut()).enumerate() {
                *d = c.to_ascii_lowercase();
                if c.is_ascii_uppercase() {
                    set(s + i);
                }
            }
            continue;
        }
        // Folded whole (folding keeps each character's length), then character by character: marked where it
        // changed, and the name kept apart where the upper case of the folded character is not the one written.
        folded.clear();
        fold_into(name, &mut folded);
        if folded.len() != name.len() {
            // Not UTF-8 (an older file not checked yet, which its check will refuse): kept as it is.
            dst.copy_from_slice(name);
            apart.push(id as u32);
            continue;
        }
        dst.copy_from_slice(&folded);
        let mut whole = true;
        let mut at = 0;
        while at < name.len() {
            let len = char_len(name[at]).min(name.len() - at);
            if dst[at..at + len] != name[at..at + len] {
                set(s + at);
                let mut back = [0u8; 4];
                back[..len].copy_from_slice(&dst[at..at + len]);
                upper_at(&mut back[..len], 0);
                whole &= back[..len] == name[at..at + len];
            }
            at += len;
        }
        if !whole {
            apart.push(id as u32);
        }
    }
    RunOut { bits, apart }
}

/// The length of the UTF-8 character that starts with byte `b` (1 for a byte that starts none).
fn char_len(b: u8) -> usize {
    match b {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// Makes the character at byte `p` of `text` upper case, when its upper case is one character of the same length.
fn upper_at(text: &mut [u8], p: usize) {
    let b = text[p];
    if b.is_ascii() {
        text[p] = b.to_ascii_uppercase();
        return;
    }
    let len = char_len(b);
    let Some(c) = text
        .get(p..p + len)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.chars().next())
    else {
        return;
    };
    let mut up = c.to_uppercase();
    if let (Some(u), None) = (up.next(), up.next()) {
        if u.len_utf8() == len {
            u.encode_utf8(&mut text[p..p + len]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_of(list: &[&str]) -> (Vec<u8>, Vec<u32>) {
        let mut raw = Vec::new();
        let mut starts = vec![0];
        for n in list {
            raw.extend_from_slice(n.as_bytes());
            starts.push(raw.len() as u32);
        }
        (raw, starts)
    }

    #[test]
    fn every_name_comes_back_as_written() {
        let list = [
            "",
            "kernel32.dll",
            "Kernel32.DLL",
            "ÉCOLE été Ünïcödé",
            "ǅungla",        // title case: its upper case is Ǆ
            "\u{212A}elvin", // the Kelvin sign folds to nothing of its length: kept
            "İstanbul",
            "ΣΊΣΥΦΟΣ ς",
            "日本語のファイル.TXT",
            "a_long_name_that_crosses_a_word_of_the_bits_ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789",
            "ß ẞ ﬁ Ａ",
        ];
        let (raw, starts) = names_of(&list);
        let names = Names::from_raw(&raw, &starts);
        assert_eq!(names.len(), raw.len());
        for (i, n) in list.iter().enumerate() {
            let (s, e) = (starts[i] as usize, starts[i + 1] as usize);
            assert_eq!(&*names.name(i as u32, s, e), n.as_bytes(), "{n}");
            let mut out = b"x".to_vec();
            names.name_into(i as u32, s, e, &mut out);
            assert_eq!(&out[1..], n.as_bytes());
            let mut f = Vec::new();
            fold_into(n.as_bytes(), &mut f);
            assert_eq!(&names.folded()[s..e], &f[..]);
        }
        assert!(matches!(
            names.name(1, starts[1] as usize, starts[2] as usize),
            Cow::Borrowed(_)
        ));
        // Only names that the bits cannot give back are kept whole: `ǅ` (whose upper case is `Ǆ`).
        assert_eq!(&names.apart_ids[..], &[4]);
    }

    /// An index of these names, written and read back (checked wholly) and opened in O(1), gives them back.
    #[test]
    fn names_come_back_from_an_index_file() {
        let list = ["", "Kernel32.DLL", "ǅungla", "ÉCOLE", "日本語.TXT", "plain"];
        let (raw, starts) = names_of(&list);
        let n = list.len();
        let idx = crate::index::test_index(&raw, &starts, &vec![0; n], vec![0; n]);
        let path = std::env::temp_dir().join(format!("uffs-names-{}.uffs", std::process::id()));
        crate::file::write(&idx, &path).unwrap();
        let read = crate::file::read(&path).unwrap();
        let opened = crate::file::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        for back in [&idx, &read, &opened] {
            for (i, name) in list.iter().enumerate() {
                assert_eq!(back.name(i as u32), *name);
                assert_eq!(
                    back.folded_name(i as u32),
                    crate::paths::fold(name).as_bytes()
                );
            }
            assert_eq!(back.path(1), "/Kernel32.DLL");
        }
    }

    #[test]
    fn pushed_names_equal_built_ones() {
        let list = ["", "$Orphan", "ǅ", "abc", "ÀÉ"];
        let (raw, starts) = names_of(&list);
        let built = Names::from_raw(&raw, &starts);
        let mut pushed = Names::default();
        for (i, n) in list.iter().enumerate() {
            pushed.push(i as u32, n.as_bytes());
        }
        assert_eq!(&pushed.folded[..], &built.folded[..]);
        assert_eq!(&pushed.upper[..], &built.upper[..]);
        assert_eq!(&pushed.apart_ids[..], &built.apart_ids[..]);
        assert_eq!(&pushed.apart_text[..], &built.apart_text[..]);
    }

    #[test]
    fn damaged_bits_never_fault() {
        let (raw, starts) = names_of(&["Ünï", "ab"]);
        let mut names = Names::from_raw(&raw, &starts);
        names.upper = vec![!0u64; 1].into();
        for (s, e) in [(0, 5), (1, 3), (0, 100), (90, 100), (3, 1)] {
            let _ = names.name(0, s, e);
        }
        names.apart_ids = vec![0, 1].into();
        names.apart_starts = vec![5].into();
        let _ = names.name(1, 0, 2);
    }
}
