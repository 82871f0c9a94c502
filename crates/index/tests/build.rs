//! The builder on hand-made records: one entry per hard link, DOS aliases dropped, streams beside their file,
//! extension records merged whatever their order, orphans and parent cycles under `$Orphan`, deleted folders
//! resolved one sequence number back, and recursive directory totals.

use uffs_index::batch::{NameInfo, RecordBatch, RecordInfo, StdInfo, StreamInfo, StreamSizes};
use uffs_index::{flags, BuildOptions, Builder, EntryId, Index, VolumeMeta};

const DOS: u8 = 2;
const WIN32: u8 = 1;

fn fref(record: u64, seq: u16) -> u64 {
    record | (u64::from(seq) << 48)
}

/// Builds batches of records by hand.
#[derive(Default)]
struct Recs(RecordBatch);

impl Recs {
    fn text(&mut self, s: &str) -> std::ops::Range<u32> {
        let start = self.0.text.len() as u32;
        self.0.text.extend_from_slice(s.as_bytes());
        start..self.0.text.len() as u32
    }

    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        number: u64,
        seq: u16,
        dir: bool,
        in_use: bool,
        base: u64,
        names: &[(&str, u64, u8)],
        size: Option<u64>,
        streams: &[(&str, u64)],
    ) -> &mut Self {
        let n0 = self.0.names.len() as u32;
        for (name, parent, ns) in names {
            let text = self.text(name);
            self.0.names.push(NameInfo {
                parent: *parent,
                namespace: *ns,
                created: 0,
                modified: 0,
                text,
                ..Default::default()
            });
        }
        let s0 = self.0.streams.len() as u32;
        for (name, sz) in streams {
            let text = self.text(name);
            self.0.streams.push(StreamInfo {
                sizes: StreamSizes {
                    size: *sz,
                    allocated: 0,
                    attr_flags: 0,
                    ..Default::default()
                },
                text,
                tail: false,
            });
        }
        self.0.records.push(RecordInfo {
            number,
            sequence: seq,
            header_flags: u16::from(in_use) | if dir { 2 } else { 0 },
            base,
            std_info: (base == 0).then_some(StdInfo {
                created: 1,
                modified: 2,
                mft_changed: 3,
                accessed: 4,
                attributes: 0x20,
            }),
            has_attribute_list: false,
            reparse_tag: 0,
            data: size.map(|s| StreamSizes {
                size: s,
                allocated: s,
                attr_flags: 0,
                ..Default::default()
            }),
            names: n0..self.0.names.len() as u32,
            streams: s0..self.0.streams.len() as u32,
            ..Default::default()
        });
        self
    }

    fn attr_list(&mut self) -> &mut Self {
        self.0.records.last_mut().unwrap().has_attribute_list = true;
        self
    }

    fn build(&self, deleted: bool) -> Index {
        let meta = VolumeMeta {
            records_total: 64,
            has_deleted: deleted,
            ..VolumeMeta::default()
        };
        let mut b = Builder::new(
            meta,
            BuildOptions {
                include_deleted: deleted,
            },
            16,
        );
        b.add_batch(&self.0);
        b.finish().0
    }
}

fn root(r: &mut Recs) -> &mut Recs {
    r.add(5, 5, true, true, 0, &[(".", fref(5, 5), 3)], None, &[])
}

fn paths(idx: &Index) -> Vec<String> {
    let mut v: Vec<String> = (0..idx.len() as EntryId).map(|i| idx.path(i)).collect();
    v.sort();
    v
}

fn find(idx: &Index, path: &str) -> EntryId {
    (0..idx.len() as EntryId)
        .find(|&i| idx.path(i) == path)
        .unwrap_or_else(|| panic!("{path} not in {:?}", paths(idx)))
}

#[test]
fn hard_links_streams_and_dos_names() {
    let mut r = Recs::default();
    root(&mut r)
        .add(
            30,
            1,
            true,
            true,
            0,
            &[("docs", fref(5, 5), WIN32), ("DOCS~1", fref(5, 5), DOS)],
            None,
            &[],
        )
        .add(
            40,
            2,
            false,
            true,
            0,
            &[
                ("report.txt", fref(30, 1), WIN32),
                ("REPORT~1.TXT", fref(30, 1), DOS),
                ("link.txt", fref(5, 5), 0),
            ],
            Some(100),
            &[("Zone.Identifier", 26)],
        );
    let idx = r.build(false);
    // The stream is reachable through both links, so it is an entry beside each.
    assert_eq!(
        paths(&idx),
        [
            "/",
            "/docs",
            "/docs/report.txt",
            "/docs/report.txt:Zone.Identifier",
            "/link.txt",
            "/link.txt:Zone.Identifier"
        ]
    );
    let s = find(&idx, "/docs/report.txt:Zone.Identifier");
    assert_eq!(idx.size(s), 26);
    assert!(idx.flags(s) & flags::STREAM != 0);
    assert_eq!(idx.record(find(&idx, "/link.txt")), 40);
}

#[test]
fn extension_records_merge_in_any_order() {
    for ext_first in [true, false] {
        let mut r = Recs::default();
        root(&mut r);
        let ext = |r: &mut Recs| {
            r.add(
                20,
                1,
                false,
                true,
                fref(50, 3),
                &[("second-name.txt", fref(5, 5), WIN32)],
                Some(7000),
                &[],
            );
        };
        if ext_first {
            ext(&mut r);
        }
        r.add(
            50,
            3,
            false,
            true,
            0,
            &[("first-name.txt", fref(5, 5), WIN32)],
            None,
            &[],
        )
        .attr_list();
        if !ext_first {
            ext(&mut r);
        }
        // An extension record whose base reference has another sequence number is stale: not merged.
        r.add(
            21,
            1,
            false,
            true,
            fref(50, 2),
            &[("stale.txt", fref(5, 5), WIN32)],
            None,
            &[],
        );
        // A freed extension record that still names the live base is left over from an earlier file.
        r.add(
            22,
            1,
            false,
            false,
            fref(50, 3),
            &[("freed.txt", fref(5, 5), WIN32)],
            None,
            &[],
        );
        for deleted in [false, true] {
            let idx = r.build(deleted);
            assert_eq!(
                paths(&idx),
                ["/", "/first-name.txt", "/second-name.txt"],
                "ext_first={ext_first} deleted={deleted}"
            );
        }
        let idx = r.build(false);
        for p in ["/first-name.txt", "/second-name.txt"] {
            let e = find(&idx, p);
            assert_eq!((idx.record(e), idx.size(e), idx.modified(e)), (50, 7000, 2));
        }
    }
}

#[test]
fn orphans_and_cycles_go_under_orphan_folder() {
    let mut r = Recs::default();
    root(&mut r)
        // Parent record 60 does not exist.
        .add(
            31,
            1,
            false,
            true,
            0,
            &[("lost.txt", fref(60, 1), WIN32)],
            Some(1),
            &[],
        )
        // Parent 32 exists but its sequence number moved on: the folder was deleted and the record reused.
        .add(
            32,
            9,
            true,
            true,
            0,
            &[("new-folder", fref(5, 5), WIN32)],
            None,
            &[],
        )
        .add(
            33,
            1,
            false,
            true,
            0,
            &[("stale-child.txt", fref(32, 4), WIN32)],
            Some(2),
            &[],
        )
        // Two folders that are each other's parent.
        .add(
            34,
            1,
            true,
            true,
            0,
            &[("a", fref(35, 1), WIN32)],
            None,
            &[],
        )
        .add(
            35,
            1,
            true,
            true,
            0,
            &[("b", fref(34, 1), WIN32)],
            None,
            &[],
        )
        .add(
            36,
            1,
            false,
            true,
            0,
            &[("in-cycle.txt", fref(35, 1), WIN32)],
            Some(3),
            &[],
        );
    let idx = r.build(false);
    let p = paths(&idx);
    assert!(p.contains(&"/$Orphan/lost.txt".to_string()), "{p:?}");
    assert!(p.contains(&"/$Orphan/stale-child.txt".to_string()), "{p:?}");
    // The cycle is cut at one folder; everything below it still resolves.
    let cyc = p
        .iter()
        .find(|x| x.ends_with("/in-cycle.txt"))
        .expect("in-cycle.txt");
    assert!(cyc.starts_with("/$Orphan/"), "{cyc}");
    for id in 0..idx.len() as EntryId {
        assert!(idx.depth(id) < 10);
    }
    let orphan = find(&idx, "/$Orphan");
    assert!(idx.flags(orphan) & flags::SYNTHETIC != 0);
}

#[test]
fn deleted_folder_keeps_its_deleted_files() {
    let mut r = Recs::default();
    root(&mut r)
        // NTFS bumps the sequence number when it frees a record: the folder is at 4, its children point at 3.
        .add(
            40,
            4,
            true,
            false,
            0,
            &[("gone", fref(5, 5), WIN32)],
            None,
            &[],
        )
        .add(
            41,
            2,
            false,
            false,
            0,
            &[("old.txt", fref(40, 3), WIN32)],
            Some(10),
            &[],
        )
        .add(
            42,
            1,
            false,
            true,
            0,
            &[("live.txt", fref(5, 5), WIN32)],
            Some(5),
            &[],
        );
    let idx = r.build(true);
    assert_eq!(paths(&idx), ["/", "/gone", "/gone/old.txt", "/live.txt"]);
    assert!(idx.is_deleted(find(&idx, "/gone/old.txt")));
    // Without deleted entries, nothing of them is kept.
    assert_eq!(paths(&r.build(false)), ["/", "/live.txt"]);
}

#[test]
fn paths_longer_than_windows_allows_are_cut_under_orphan() {
    // 500 nested folders with 255-character names: about 128 KB of path, past Windows' 32,767 UTF-16 units.
    let mut r = Recs::default();
    root(&mut r);
    let names: Vec<String> = (0..500)
        .map(|i| format!("{i:03}{}", "x".repeat(252)))
        .collect();
    let names: Vec<&'static str> = names
        .into_iter()
        .map(|s| &*Box::leak(s.into_boxed_str()))
        .collect();
    for (i, name) in names.iter().enumerate() {
        let parent = if i == 0 {
            fref(5, 5)
        } else {
            fref(100 + i as u64 - 1, 1)
        };
        r.add(
            100 + i as u64,
            1,
            true,
            true,
            0,
            &[(name, parent, WIN32)],
            None,
            &[],
        );
    }
    let meta = VolumeMeta {
        records_total: 1024,
        ..VolumeMeta::default()
    };
    let mut b = Builder::new(meta, BuildOptions::default(), 16);
    b.add_batch(&r.0);
    let (idx, stats) = b.finish();
    assert!(stats.paths_cut >= 1, "{stats:?}");
    for id in 0..idx.len() as EntryId {
        assert!(
            idx.path(id).len() <= uffs_index::build::MAX_PATH_BYTES as usize + 8,
            "path too long"
        );
    }
    // Nothing is lost: every folder is still an entry. Folder i has a path of 256 * (i + 1) bytes, so the
    // first past 98,301 is folder 383, which hangs under /$Orphan.
    assert_eq!(idx.len(), 1 + 500 + 1);
    assert!((0..idx.len() as EntryId).any(|id| idx.path(id).starts_with("/$Orphan/383")));
}

/// Each name keeps its own `$FILE_NAME` times and attribute id, a stream those of the name it hangs beside with
/// its own `$DATA` id, a folder its `$I30` index root; entries copied into a new build (as an update copies
/// them) keep all of it; entries made by uffs have none.
#[test]
fn timelines_keep_each_names_file_name_times_and_attribute_ids() {
    use uffs_index::batch::IndexRoot;
    use uffs_index::timeline::EntryTimeline;
    let mut r = Recs::default();
    root(&mut r)
        .add(
            30,
            1,
            true,
            true,
            0,
            &[("dir", fref(5, 5), WIN32)],
            None,
            &[],
        )
        .add(
            40,
            1,
            false,
            true,
            0,
            &[
                ("a.txt", fref(5, 5), WIN32),
                ("b.txt", fref(30, 1), WIN32),
                ("A~1.TXT", fref(5, 5), DOS),
            ],
            Some(10),
            &[("ads", 3)],
        )
        .add(
            50,
            1,
            false,
            true,
            0,
            &[("lost.txt", fref(77, 1), WIN32)],
            Some(1),
            &[],
        );
    // Times near and far from the SI ones (1, 2, 3, 4), some equal to them, and attribute ids past a nibble.
    for (i, n) in r.0.names.iter_mut().enumerate() {
        let i = i as u64;
        n.created = 1_000_000 + i;
        n.modified = if i.is_multiple_of(2) {
            n.created
        } else {
            u64::MAX - i
        };
        n.mft_changed = 3;
        n.accessed = 4 + i;
        n.attr_id = 2 + 7 * i as u16;
    }
    r.0.records[1].index_root = Some(IndexRoot {
        attr_id: 3,
        size: 152,
    });
    r.0.records[2].data.as_mut().unwrap().attr_id = 7;
    r.0.streams[0].sizes.attr_id = 900;
    let names: Vec<NameInfo> = r.0.names.clone();
    let fn_of = |k: usize, main_id: Option<u16>, index_root_size: Option<u32>| EntryTimeline {
        fn_times: [
            names[k].created,
            names[k].modified,
            names[k].mft_changed,
            names[k].accessed,
        ],
        fn_id: names[k].attr_id,
        main_id,
        index_root_size,
    };
    let idx = r.build(false);
    let tl = |path: &str| idx.timeline(find(&idx, path));
    assert_eq!(tl("/dir"), Some(fn_of(1, Some(3), Some(152))));
    assert_eq!(tl("/a.txt"), Some(fn_of(2, Some(7), None)));
    assert_eq!(tl("/dir/b.txt"), Some(fn_of(3, Some(7), None)));
    assert_eq!(tl("/a.txt:ads"), Some(fn_of(2, Some(900), None)));
    assert_eq!(tl("/dir/b.txt:ads"), Some(fn_of(3, Some(900), None)));
    assert_eq!(tl("/$Orphan/lost.txt"), Some(fn_of(5, Some(0), None)));
    assert_eq!(tl("/$Orphan"), None, "made by uffs");
    // The one-pass reader agrees with the lookups.
    let all: Vec<_> = idx.timelines(0..idx.len() as EntryId).collect();
    for (id, t) in all.iter().enumerate() {
        assert_eq!(*t, idx.timeline(id as EntryId));
    }
    // Copied into a new build, as an update does.
    let mut b = Builder::new(idx.meta.clone(), BuildOptions::default(), 16);
    b.seed_as_is(&idx, 0..idx.len() as EntryId);
    let copy = b.finish().0;
    for id in 0..copy.len() as EntryId {
        let path = copy.path(id);
        assert_eq!(copy.timeline(id), idx.timeline(find(&idx, &path)), "{path}");
    }
}
