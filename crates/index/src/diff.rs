//! What changed between two indexes of one volume (`uffs diff OLD NEW`): entries created, deleted, renamed,
//! moved, and changed in their sizes, times, attributes or `$FILE_NAME` times. Pure: two indexes in, a list of
//! [`Change`]s out, in O(n log n) with no allocation per entry (a sort of (record, entry) keys, then one walk).
//!
//! Entries pair up by their file reference, record number and sequence number: the same record with another
//! sequence number is another file (the record was freed and used again), so a delete and a create. Within one
//! record (a file's hard links, its named streams) an entry pairs first with the entry of the same parent and
//! name, then the others in order (a link renamed). Deleted entries (of an index built with them) and the
//! synthetic `$Orphan` folder are never compared; named streams only when asked.
//!
//! A stream entry carries its file's times, so a stream is compared on its size and allocated size only, and
//! its path follows its file's (whose own row says it was renamed or moved).

use std::borrow::Cow;

use crate::{flags, EntryId, Index};

/// The fields of an entry a change names, as bits of a mask.
pub mod field {
    /// The entry's name (in its folder).
    pub const NAME: u32 = 1 << 0;
    /// The folder it is in.
    pub const PARENT: u32 = 1 << 1;
    pub const SIZE: u32 = 1 << 2;
    pub const ALLOCATED: u32 = 1 << 3;
    /// The four `$STANDARD_INFORMATION` times.
    pub const CREATED: u32 = 1 << 4;
    pub const MODIFIED: u32 = 1 << 5;
    pub const MFT_CHANGED: u32 = 1 << 6;
    pub const ACCESSED: u32 = 1 << 7;
    /// The Windows attribute bits.
    pub const ATTRIBUTES: u32 = 1 << 8;
    pub const REPARSE_TAG: u32 = 1 << 9;
    /// The four `$FILE_NAME` times of the entry's name.
    pub const FN_CREATED: u32 = 1 << 10;
    pub const FN_MODIFIED: u32 = 1 << 11;
    pub const FN_MFT_CHANGED: u32 = 1 << 12;
    pub const FN_ACCESSED: u32 = 1 << 13;

    /// Every field with its name (as `--ignore` takes them and a change's field list shows them), in order.
    pub const ALL: [(u32, &str); 14] = [
        (NAME, "name"),
        (PARENT, "parent"),
        (SIZE, "size"),
        (ALLOCATED, "allocated"),
        (CREATED, "created"),
        (MODIFIED, "modified"),
        (MFT_CHANGED, "mft_changed"),
        (ACCESSED, "accessed"),
        (ATTRIBUTES, "attributes"),
        (REPARSE_TAG, "reparse_tag"),
        (FN_CREATED, "fn_created"),
        (FN_MODIFIED, "fn_modified"),
        (FN_MFT_CHANGED, "fn_mft_changed"),
        (FN_ACCESSED, "fn_accessed"),
    ];
    /// The `$STANDARD_INFORMATION` times, in the index's order (created, modified, MFT changed, accessed).
    pub const SI_TIMES: [u32; 4] = [CREATED, MODIFIED, MFT_CHANGED, ACCESSED];
    /// The `$FILE_NAME` times, in the same order.
    pub const FN_TIMES: [u32; 4] = [FN_CREATED, FN_MODIFIED, FN_MFT_CHANGED, FN_ACCESSED];
    /// What a change of content or metadata is about (not where the entry is).
    pub const VALUES: u32 = !(NAME | PARENT) & ((1 << 14) - 1);

    /// `size,modified`: the names of the fields of `mask`, comma-separated, in [`ALL`]'s order.
    pub fn names(mask: u32) -> String {
        let mut s = String::new();
        for (b, n) in ALL {
            if mask & b != 0 {
                if !s.is_empty() {
                    s.push(',');
                }
                s.push_str(n);
            }
        }
        s
    }

    /// The field named `s` (`fn_times` and `times` stand for four each, `si_times` too).
    pub fn parse(s: &str) -> Option<u32> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "times" | "si_times" => Some(CREATED | MODIFIED | MFT_CHANGED | ACCESSED),
            "fn_times" => Some(FN_CREATED | FN_MODIFIED | FN_MFT_CHANGED | FN_ACCESSED),
            _ => ALL.iter().find(|(_, n)| *n == s).map(|(b, _)| *b),
        }
    }
}

/// What kind of difference a [`Change`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeKind {
    /// In the new index only.
    Created,
    /// In the old index only.
    Deleted,
    /// The same file (record and sequence) under another name in the same folder.
    Renamed,
    /// The same file in another folder (perhaps under another name too).
    Moved,
    /// The same file with other sizes, times, attributes or `$FILE_NAME` times.
    Changed,
}

impl ChangeKind {
    pub const ALL: [ChangeKind; 5] = [
        ChangeKind::Created,
        ChangeKind::Deleted,
        ChangeKind::Renamed,
        ChangeKind::Moved,
        ChangeKind::Changed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Renamed => "renamed",
            ChangeKind::Moved => "moved",
            ChangeKind::Changed => "changed",
        }
    }

    pub fn parse(s: &str) -> Option<ChangeKind> {
        let s = s.trim().to_ascii_lowercase();
        ChangeKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One difference of one entry. An entry both moved and changed gives two changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    /// The entry in the old index (`None` for one created).
    pub old: Option<EntryId>,
    /// The entry in the new index (`None` for one deleted).
    pub new: Option<EntryId>,
    /// The fields that differ ([`field`] bits): `NAME` for a rename, `PARENT` (and `NAME` when it has another
    /// name too) for a move, the others for a change; 0 for a create or a delete.
    pub fields: u32,
}

/// What to compare.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Compare named streams (entries `file:stream`) too.
    pub streams: bool,
    /// Fields not compared ([`field`] bits; `ACCESSED` is the usual one: reading a file changes it).
    pub ignore: u32,
}

/// The differences between `old` and `new`, in record order (within a record: deletes, then creates, then the
/// pairs in the old index's entry order).
pub fn diff(old: &Index, new: &Index, opts: &Options) -> Vec<Change> {
    use rayon::prelude::*;
    let (a, b) = rayon::join(|| Side::new(old, opts), || Side::new(new, opts));
    let (ka, kb) = (&a.keys, &b.keys);
    // Runs of whole records, compared on every core and joined in order.
    const RUN: usize = 64 * 1024;
    let mut cuts: Vec<(usize, usize)> = vec![(0, 0)];
    let mut at = RUN;
    while at < ka.len() {
        let r = ka[at] >> 32;
        let i = ka.partition_point(|k| k >> 32 < r);
        let j = kb.partition_point(|k| k >> 32 < r);
        if i > cuts[cuts.len() - 1].0 {
            cuts.push((i, j));
        }
        at += RUN;
    }
    cuts.push((ka.len(), kb.len()));
    let parts: Vec<Vec<Change>> = cuts
        .par_windows(2)
        .map(|w| {
            let mut out = Vec::new();
            walk(
                &a,
                &b,
                &ka[w[0].0..w[1].0],
                &kb[w[0].1..w[1].1],
                opts,
                &mut out,
            );
            out
        })
        .collect();
    parts.concat()
}

/// The changes of the records of `ka` and `kb` (the keys of the same records in the old and the new index).
fn walk(a: &Side, b: &Side, ka: &[u64], kb: &[u64], opts: &Options, out: &mut Vec<Change>) {
    let (mut i, mut j) = (0, 0);
    while i < ka.len() || j < kb.len() {
        let ra = ka.get(i).map_or(u64::MAX, |k| k >> 32);
        let rb = kb.get(j).map_or(u64::MAX, |k| k >> 32);
        let r = ra.min(rb);
        let i0 = i;
        while i < ka.len() && ka[i] >> 32 == r {
            i += 1;
        }
        let j0 = j;
        while j < kb.len() && kb[j] >> 32 == r {
            j += 1;
        }
        // The usual record: one entry on each side.
        if let ([x], [y]) = (&ka[i0..i], &kb[j0..j]) {
            let (o, n) = (*x as EntryId, *y as EntryId);
            if a.idx.sequence(o) == b.idx.sequence(n) && !a.is_stream(o) && !b.is_stream(n) {
                compare(a, b, o, n, opts, out);
                continue;
            }
        }
        let ga: Vec<EntryId> = ka[i0..i].iter().map(|&k| k as EntryId).collect();
        let gb: Vec<EntryId> = kb[j0..j].iter().map(|&k| k as EntryId).collect();
        record(a, b, &ga, &gb, opts, out);
    }
}

/// One index with what the comparison reads of it.
struct Side<'a> {
    idx: &'a Index,
    /// (record << 32 | entry) of every entry compared, sorted.
    keys: Vec<u64>,
    /// Each entry's `$FILE_NAME` times, decoded once in entry order (empty when not compared or not kept).
    fn_times: Vec<Option<[u64; 4]>>,
}

impl<'a> Side<'a> {
    fn new(idx: &'a Index, opts: &Options) -> Side<'a> {
        let skip = flags::DELETED | flags::SYNTHETIC | if opts.streams { 0 } else { flags::STREAM };
        use rayon::prelude::*;
        let mut keys: Vec<u64> = (0..idx.len() as EntryId)
            .into_par_iter()
            .filter(|&id| idx.flags(id) & skip == 0)
            .map(|id| u64::from(idx.record(id)) << 32 | u64::from(id))
            .collect();
        // Entries come mostly in record order already.
        keys.par_sort_unstable();
        let want_fn = field::FN_TIMES.iter().any(|f| opts.ignore & f == 0);
        let fn_times = if want_fn && idx.has_timeline() {
            // Decoded in runs on every core (a run starts at a block offset).
            const RUN: usize = 64 * crate::timeline::BLOCK * 16;
            let starts: Vec<usize> = (0..idx.len()).step_by(RUN).collect();
            let runs: Vec<Vec<Option<[u64; 4]>>> = starts
                .into_par_iter()
                .map(|s| {
                    let end = (s + RUN).min(idx.len());
                    idx.timelines(s as EntryId..end as EntryId)
                        .map(|t| t.map(|t| t.fn_times))
                        .collect()
                })
                .collect();
            runs.concat()
        } else {
            Vec::new()
        };
        Side {
            idx,
            keys,
            fn_times,
        }
    }

    fn is_stream(&self, id: EntryId) -> bool {
        self.idx.flags(id) & flags::STREAM != 0
    }

    /// The folder an entry is in, as a file reference (the synthetic `$Orphan` has none).
    fn parent_ref(&self, id: EntryId) -> (u32, u16) {
        let p = self.idx.parent(id);
        if self.idx.flags(p) & flags::SYNTHETIC != 0 {
            (u32::MAX, 0)
        } else {
            (self.idx.record(p), self.idx.sequence(p))
        }
    }

    /// A stream's own name (after the `:`), which pairs the streams of a record; empty for a name.
    fn stream_name(&self, id: EntryId) -> Cow<'_, [u8]> {
        if !self.is_stream(id) {
            return Cow::Borrowed(&[]);
        }
        let n = self.idx.name_bytes(id);
        match n.iter().rposition(|&c| c == b':') {
            Some(p) => Cow::Owned(n[p + 1..].to_vec()),
            None => n,
        }
    }
}

/// The changes of one record: `ga` its entries in the old index, `gb` in the new.
fn record(
    a: &Side,
    b: &Side,
    ga: &[EntryId],
    gb: &[EntryId],
    opts: &Options,
    out: &mut Vec<Change>,
) {
    let seq = |s: &Side, g: &[EntryId]| g.first().map(|&id| s.idx.sequence(id));
    let (sa, sb) = (seq(a, ga), seq(b, gb));
    if sa != sb {
        // Another file in the record (or none on one side).
        out.extend(ga.iter().map(|&o| gone(o)));
        out.extend(gb.iter().map(|&n| born(n)));
        return;
    }
    // The names, then the streams, each paired on their own.
    for streams in [false, true] {
        let la: Vec<EntryId> = ga
            .iter()
            .copied()
            .filter(|&id| a.is_stream(id) == streams)
            .collect();
        let lb: Vec<EntryId> = gb
            .iter()
            .copied()
            .filter(|&id| b.is_stream(id) == streams)
            .collect();
        pair(a, b, &la, &lb, opts, out);
    }
}

fn gone(o: EntryId) -> Change {
    Change {
        kind: ChangeKind::Deleted,
        old: Some(o),
        new: None,
        fields: 0,
    }
}

fn born(n: EntryId) -> Change {
    Change {
        kind: ChangeKind::Created,
        old: None,
        new: Some(n),
        fields: 0,
    }
}

/// Pairs the entries of one record and kind (names, or streams): the same folder and name first, then in order
/// (streams only with the same stream name); the rest are deleted or created.
fn pair(a: &Side, b: &Side, la: &[EntryId], lb: &[EntryId], opts: &Options, out: &mut Vec<Change>) {
    if let ([o], [n]) = (la, lb) {
        if a.stream_name(*o) == b.stream_name(*n) {
            compare(a, b, *o, *n, opts, out);
            return;
        }
    }
    let mut matched: Vec<Option<EntryId>> = vec![None; la.len()];
    let mut used = vec![false; lb.len()];
    for (k, &o) in la.iter().enumerate() {
        let (po, no) = (a.parent_ref(o), a.idx.name_bytes(o));
        if let Some(m) = (0..lb.len())
            .find(|&m| !used[m] && b.parent_ref(lb[m]) == po && b.idx.name_bytes(lb[m]) == no)
        {
            used[m] = true;
            matched[k] = Some(lb[m]);
        }
    }
    for (k, &o) in la.iter().enumerate() {
        if matched[k].is_some() {
            continue;
        }
        let so = a.stream_name(o);
        if let Some(m) = (0..lb.len()).find(|&m| !used[m] && b.stream_name(lb[m]) == so) {
            used[m] = true;
            matched[k] = Some(lb[m]);
        }
    }
    for (k, &o) in la.iter().enumerate() {
        if matched[k].is_none() {
            out.push(gone(o));
        }
    }
    for (m, &n) in lb.iter().enumerate() {
        if !used[m] {
            out.push(born(n));
        }
    }
    for (k, &o) in la.iter().enumerate() {
        if let Some(n) = matched[k] {
            compare(a, b, o, n, opts, out);
        }
    }
}

/// The differences of one entry present in both: where it is, then what it holds.
fn compare(a: &Side, b: &Side, o: EntryId, n: EntryId, opts: &Options, out: &mut Vec<Change>) {
    let (x, y) = (a.idx, b.idx);
    let stream = a.is_stream(o);
    if !stream {
        let moved = a.parent_ref(o) != b.parent_ref(n);
        let renamed = x.name_bytes(o) != y.name_bytes(n);
        if moved || renamed {
            let (kind, fields) = if moved {
                (
                    ChangeKind::Moved,
                    field::PARENT | if renamed { field::NAME } else { 0 },
                )
            } else {
                (ChangeKind::Renamed, field::NAME)
            };
            out.push(Change {
                kind,
                old: Some(o),
                new: Some(n),
                fields,
            });
        }
    }
    let mut f = 0;
    if x.size(o) != y.size(n) {
        f |= field::SIZE;
    }
    if x.allocated(o) != y.allocated(n) {
        f |= field::ALLOCATED;
    }
    if !stream {
        let (ta, tb) = (
            [x.created(o), x.modified(o), x.mft_changed(o), x.accessed(o)],
            [y.created(n), y.modified(n), y.mft_changed(n), y.accessed(n)],
        );
        for k in 0..4 {
            if ta[k] != tb[k] {
                f |= field::SI_TIMES[k];
            }
        }
        if x.flags(o) & flags::WINDOWS_MASK != y.flags(n) & flags::WINDOWS_MASK {
            f |= field::ATTRIBUTES;
        }
        if x.reparse_tag(o) != y.reparse_tag(n) {
            f |= field::REPARSE_TAG;
        }
        let fa = a.fn_times.get(o as usize).copied().flatten();
        let fb = b.fn_times.get(n as usize).copied().flatten();
        if let (Some(ta), Some(tb)) = (fa, fb) {
            for k in 0..4 {
                if ta[k] != tb[k] {
                    f |= field::FN_TIMES[k];
                }
            }
        }
    }
    f &= !opts.ignore;
    if f != 0 {
        out.push(Change {
            kind: ChangeKind::Changed,
            old: Some(o),
            new: Some(n),
            fields: f,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{EntryTimeline, Timeline, BLOCK};

    /// One entry of a test index: record, sequence, parent entry, name, size, flags, SI times, FN times.
    #[derive(Clone)]
    struct E {
        rec: u32,
        seq: u16,
        parent: EntryId,
        name: &'static str,
        size: u64,
        flags: u32,
        si: [u64; 4],
        fnt: [u64; 4],
    }

    fn e(rec: u32, seq: u16, parent: EntryId, name: &'static str) -> E {
        E {
            rec,
            seq,
            parent,
            name,
            size: 10,
            flags: 0,
            si: [100, 200, 300, 400],
            fnt: [100, 100, 100, 100],
        }
    }

    /// An index of `es`; entry 0 must be the root (its own parent).
    fn index(es: &[E]) -> Index {
        let mut raw = Vec::new();
        let mut starts = vec![0u32];
        for x in es {
            raw.extend_from_slice(x.name.as_bytes());
            starts.push(raw.len() as u32);
        }
        let sizes: Vec<u64> = es.iter().map(|x| x.size).collect();
        let mut data = Vec::new();
        let mut blocks = Vec::new();
        for (i, x) in es.iter().enumerate() {
            if i % BLOCK == 0 {
                blocks.push(data.len() as u64);
            }
            let t = EntryTimeline {
                fn_times: x.fnt,
                fn_id: 1,
                main_id: Some(2),
                index_root_size: None,
            };
            crate::timeline::encode(Some(&t), x.si, &mut data);
        }
        blocks.push(data.len() as u64);
        let time = |k: usize| {
            crate::timecol::Times::from_values(&es.iter().map(|x| x.si[k]).collect::<Vec<_>>())
        };
        Index {
            names: crate::names::Names::from_raw(&raw, &starts),
            name_start: starts.into(),
            parent: es.iter().map(|x| x.parent).collect::<Vec<_>>().into(),
            record: es.iter().map(|x| x.rec).collect::<Vec<_>>().into(),
            sequence: es.iter().map(|x| x.seq).collect::<Vec<_>>().into(),
            flags: es.iter().map(|x| x.flags).collect::<Vec<_>>().into(),
            allocated: crate::sparse::Allocated::from_values(&sizes, &sizes),
            size: crate::sparse::Sizes::from_values(&sizes),
            created: time(0),
            modified: time(1),
            mft_changed: time(2),
            accessed: time(3),
            timeline: Some(Timeline {
                data: data.into(),
                blocks: blocks.into(),
            }),
            ..Default::default()
        }
    }

    /// The changes as (kind, old path, new path, fields) for reading in asserts.
    fn show(
        old: &Index,
        new: &Index,
        opts: &Options,
    ) -> Vec<(&'static str, String, String, String)> {
        diff(old, new, opts)
            .iter()
            .map(|c| {
                (
                    c.kind.as_str(),
                    c.old.map(|o| old.path(o)).unwrap_or_default(),
                    c.new.map(|n| new.path(n)).unwrap_or_default(),
                    field::names(c.fields),
                )
            })
            .collect()
    }

    fn base() -> Vec<E> {
        let mut d = e(5, 5, 0, "");
        d.flags = flags::DIRECTORY;
        let mut docs = e(64, 1, 0, "docs");
        docs.flags = flags::DIRECTORY;
        vec![
            d,
            docs,
            e(65, 1, 1, "a.txt"),
            e(66, 1, 1, "b.txt"),
            e(67, 1, 0, "c.txt"),
            e(68, 2, 0, "d.txt"),
        ]
    }

    #[test]
    fn the_same_index_has_no_changes() {
        let x = index(&base());
        assert!(diff(&x, &x, &Options::default()).is_empty());
    }

    #[test]
    fn each_kind_of_change_is_found_with_its_paths() {
        let old = base();
        let mut new = base();
        new[2].name = "A2.txt"; // renamed
        new[3].parent = 0; // moved
        new[4].size = 99; // grown
        new[4].si[1] = 250;
        new[4].si[3] = 999; // accessed only: ignored below
        new.remove(5); // deleted
        new.push(e(70, 1, 1, "new.txt")); // created
        let mut c = e(67, 1, 0, "c.txt");
        c.rec = 71;
        new.push(c); // a copy in another record: created
        let (x, y) = (index(&old), index(&new));
        let opts = Options {
            streams: false,
            ignore: field::ACCESSED,
        };
        let got = show(&x, &y, &opts);
        let want = vec![
            ("renamed", "/docs/a.txt", "/docs/A2.txt", "name"),
            ("moved", "/docs/b.txt", "/b.txt", "parent"),
            ("changed", "/c.txt", "/c.txt", "size,allocated,modified"),
            ("deleted", "/d.txt", "", ""),
            ("created", "", "/docs/new.txt", ""),
            ("created", "", "/c.txt", ""),
        ];
        let want: Vec<_> = want
            .into_iter()
            .map(|(k, a, b, f)| (k, a.to_string(), b.to_string(), f.to_string()))
            .collect();
        assert_eq!(got, want);
        // Accessed counts when not ignored.
        let all = show(&x, &y, &Options::default());
        assert!(all.contains(&(
            "changed",
            "/c.txt".into(),
            "/c.txt".into(),
            "size,allocated,modified,accessed".into()
        )));
    }

    #[test]
    fn a_record_used_again_is_a_delete_and_a_create() {
        let old = base();
        let mut new = base();
        new[5].seq = 3;
        let got = show(&index(&old), &index(&new), &Options::default());
        assert_eq!(
            got,
            vec![
                ("deleted", "/d.txt".into(), String::new(), String::new()),
                ("created", String::new(), "/d.txt".into(), String::new()),
            ]
        );
    }

    #[test]
    fn timestomping_shows_in_the_file_name_times() {
        let old = base();
        let mut new = base();
        // SI times moved back, the FN times left as they were: the SI change shows, FN do not.
        new[2].si = [1, 2, 3, 4];
        new[3].fnt = [7, 7, 7, 7];
        let got = show(&index(&old), &index(&new), &Options::default());
        assert_eq!(
            got,
            vec![
                (
                    "changed",
                    "/docs/a.txt".into(),
                    "/docs/a.txt".into(),
                    "created,modified,mft_changed,accessed".into()
                ),
                (
                    "changed",
                    "/docs/b.txt".into(),
                    "/docs/b.txt".into(),
                    "fn_created,fn_modified,fn_mft_changed,fn_accessed".into()
                ),
            ]
        );
        let fnt = Options {
            ignore: field::parse("fn_times").unwrap(),
            ..Options::default()
        };
        assert_eq!(show(&index(&old), &index(&new), &fnt).len(), 1);
    }

    #[test]
    fn hard_links_pair_by_folder_and_name_then_in_order() {
        let mut old = base();
        old.push(e(65, 1, 0, "link-a.txt")); // a second link of record 65
        let mut new = old.clone();
        new[6].name = "link-b.txt"; // that link renamed
        new.push(e(65, 1, 0, "link-c.txt")); // a third link
        let got = show(&index(&old), &index(&new), &Options::default());
        assert_eq!(
            got,
            vec![
                (
                    "created",
                    String::new(),
                    "/link-c.txt".into(),
                    String::new()
                ),
                (
                    "renamed",
                    "/link-a.txt".into(),
                    "/link-b.txt".into(),
                    "name".into()
                ),
            ]
        );
    }

    #[test]
    fn streams_are_compared_only_when_asked_and_on_their_sizes() {
        let mut old = base();
        let mut s = e(65, 1, 1, "a.txt:zone");
        s.flags = flags::STREAM;
        old.push(s.clone());
        let mut new = base();
        s.size = 20;
        s.si = [1, 1, 1, 1];
        new.push(s.clone());
        let mut s2 = s.clone();
        s2.name = "a.txt:more";
        new.push(s2);
        assert!(show(&index(&old), &index(&new), &Options::default()).is_empty());
        let opts = Options {
            streams: true,
            ignore: 0,
        };
        let got = show(&index(&old), &index(&new), &opts);
        assert_eq!(
            got,
            vec![
                (
                    "created",
                    String::new(),
                    "/docs/a.txt:more".into(),
                    String::new()
                ),
                (
                    "changed",
                    "/docs/a.txt:zone".into(),
                    "/docs/a.txt:zone".into(),
                    "size,allocated".into()
                ),
            ]
        );
    }

    #[test]
    fn deleted_entries_and_orphan_folder_are_not_compared() {
        let old = base();
        let mut new = base();
        let mut d = e(80, 1, 0, "gone.txt");
        d.flags = flags::DELETED;
        new.push(d);
        let mut o = e(0, 0, 0, "$Orphan");
        o.flags = flags::SYNTHETIC | flags::DIRECTORY;
        new.push(o);
        assert!(diff(&index(&old), &index(&new), &Options::default()).is_empty());
    }

    /// The time of a diff of two indexes of 1.2 M entries (a benchmark volume's size) with 1% of them changed:
    /// `cargo test --release -p uffs-index --lib diff::tests::speed -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn speed_of_a_diff_of_1_2m_entries() {
        const N: u32 = 1_200_000;
        let mut old = vec![base()[0].clone()];
        for i in 1..N {
            let name: &'static str = Box::leak(format!("file{i}.txt").into_boxed_str());
            let mut x = e(i + 16, 1, (i / 100) * 100, name);
            if i % 100 == 0 {
                x.flags = flags::DIRECTORY;
                x.parent = 0;
            }
            x.si = [u64::from(i), 2 * u64::from(i), 3 * u64::from(i), 4];
            x.size = u64::from(i % 5000);
            old.push(x);
        }
        let mut new = old.clone();
        for (i, x) in new.iter_mut().enumerate().skip(1) {
            match i % 400 {
                1 => x.size += 1,
                2 => x.si[1] += 1,
                3 => x.seq += 1,
                4 => x.name = "renamed.txt",
                _ => {}
            }
        }
        let (x, y) = (index(&old), index(&new));
        let t = std::time::Instant::now();
        let changes = diff(&x, &y, &Options::default());
        let took = t.elapsed();
        eprintln!(
            "diff of {} and {} entries: {} changes in {:.3} s",
            x.len(),
            y.len(),
            changes.len(),
            took.as_secs_f64()
        );
        assert_eq!(changes.len(), 5 * N as usize / 400);
    }

    #[test]
    fn field_names_parse_and_print() {
        assert_eq!(field::names(field::SIZE | field::MODIFIED), "size,modified");
        assert_eq!(field::parse(" Accessed "), Some(field::ACCESSED));
        assert_eq!(field::parse("nope"), None);
        assert_eq!(field::VALUES & (field::NAME | field::PARENT), 0);
        assert_eq!(ChangeKind::parse("Moved"), Some(ChangeKind::Moved));
    }
}
