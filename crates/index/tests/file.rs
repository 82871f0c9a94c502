//! The index file: what is written loads back mapped and equal; any damage is refused whole, never half-loaded
//! and never a panic.

use std::path::{Path, PathBuf};

use uffs_index::file::{self, FileError};
use uffs_index::Index;

fn sample() -> Index {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/windows-xp-mft/MFT");
    let src = uffs_source::open(p.to_str().unwrap(), None).expect("open sample");
    let mut idx = uffs_mft::build_index(&src.volumes[0], &Default::default(), &|_, _| {})
        .expect("build")
        .0;
    idx.add_search_aids();
    idx
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("index-file");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn written_index_loads_back_equal_and_mapped() {
    let idx = sample();
    let path = tmp("roundtrip.uffs");
    file::write(&idx, &path).unwrap();
    let back = file::read(&path).unwrap();
    assert_eq!(back.len(), idx.len());
    assert_eq!(back.meta, idx.meta);
    assert!(back.meta.change_stamp != 0 && back.meta.built_at != 0);
    for id in (0..idx.len() as u32).step_by(7) {
        assert_eq!(back.path(id), idx.path(id));
        assert_eq!(back.size(id), idx.size(id));
        assert_eq!(back.modified(id), idx.modified(id));
    }
    // The timeline of every entry, and its bytes served from the map.
    assert!(back.has_timeline());
    let all: Vec<_> = back.timelines(0..back.len() as u32).collect();
    assert_eq!(all.len(), idx.len());
    for (id, t) in all.iter().enumerate() {
        assert_eq!(*t, idx.timeline(id as u32), "entry {id}");
    }
    assert!(all.iter().filter(|t| t.is_some()).count() > idx.len() - 4);
    let (a, b) = (idx.search_aids().unwrap(), back.search_aids().unwrap());
    assert_eq!(a.name_order.to_vec(), b.name_order.to_vec());
    assert_eq!(a.size_order.to_vec(), b.size_order.to_vec());
    assert!(
        b.name_order.is_mapped(),
        "columns must be served from the map, not copied"
    );
    // The header alone tells what the file holds.
    let (meta, entries) = file::read_meta(&path).unwrap();
    assert_eq!((meta.serial, entries), (idx.meta.serial, idx.len() as u64));
    // No temporary file of this write is left beside it (other tests write in the same directory at once).
    let stray = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .contains("roundtrip.uffs.tmp")
        })
        .count();
    assert_eq!(stray, 0);
}

#[test]
fn damage_anywhere_is_refused() {
    let idx = sample();
    let path = tmp("damage.uffs");
    file::write(&idx, &path).unwrap();
    let good = std::fs::read(&path).unwrap();
    // A flipped byte every few kilobytes, one file at a time: header, section table, every section.
    let mut refused = 0;
    for at in (0..good.len())
        .step_by(good.len() / 97 + 1)
        .chain([8, 12, 40, 130, 200])
    {
        let mut bad = good.clone();
        bad[at] ^= 0x20;
        if bad == good {
            continue;
        }
        match file::from_bytes(&bad) {
            Err(_) => refused += 1,
            // Padding between sections is covered by no checksum and read by nothing.
            Ok(_) => assert!(at >= 128, "a damaged header byte at {at} was accepted"),
        }
    }
    assert!(refused > 90, "only {refused} damaged copies refused");
    for cut in [0, 7, 64, 128, 500, good.len() / 2, good.len() - 1] {
        assert!(
            file::from_bytes(&good[..cut]).is_err(),
            "cut at {cut} accepted"
        );
    }
    let mut other = good.clone();
    other[8] = 1; // version 1
    assert!(matches!(
        file::from_bytes(&other),
        Err(FileError::Version { found: 1 })
    ));
    let msg = file::from_bytes(&other).unwrap_err().to_string();
    assert!(msg.contains("rebuild"), "{msg}");
    assert!(matches!(
        file::from_bytes(b"not an index"),
        Err(FileError::BadMagic)
    ));
}

/// The section table of an index file: (id, its entry's position in the table).
fn section_ids(b: &[u8]) -> Vec<(u32, usize)> {
    let count = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    (0..count)
        .map(|i| {
            let at = 128 + i * 32;
            (u32::from_le_bytes(b[at..at + 4].try_into().unwrap()), at)
        })
        .collect()
}

/// The timeline is optional: a file whose sections have ids this reader does not know (as the timeline's are to
/// a reader from before it) loads without them, as one without a timeline; one of its two sections without the
/// other is damage.
#[test]
fn the_timeline_is_an_optional_section() {
    let idx = sample();
    let path = tmp("optional.uffs");
    file::write(&idx, &path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let renamed = |from: &[u32], to: u32| {
        let mut b = good.clone();
        for (id, at) in section_ids(&good) {
            if from.contains(&id) {
                b[at..at + 4].copy_from_slice(&(to + id).to_le_bytes());
            }
        }
        file::reseal(&mut b);
        b
    };
    let without =
        file::from_bytes(&renamed(&[66, 67], 1000)).expect("unknown sections are ignored");
    assert!(!without.has_timeline());
    assert_eq!(without.timeline(0), None);
    assert_eq!(without.len(), idx.len());
    assert!(matches!(
        file::from_bytes(&renamed(&[67], 1000)),
        Err(FileError::Corrupt(_))
    ));
    // Garbage records that keep their length are refused by the whole check, their checksums made good.
    let (_, at) = section_ids(&good).into_iter().find(|s| s.0 == 66).unwrap();
    let off = u64::from_le_bytes(good[at + 8..at + 16].try_into().unwrap()) as usize;
    let len = u64::from_le_bytes(good[at + 16..at + 24].try_into().unwrap()) as usize;
    let mut bad = good.clone();
    bad[off..off + len].fill(0xFF);
    let opened = file::open_bytes(&bad).unwrap();
    for id in 0..opened.len() as u32 {
        assert_eq!(opened.timeline(id), None);
    }
    assert!(opened
        .timelines(0..opened.len() as u32)
        .all(|t| t.is_none()));
    assert!(file::verify_all(&opened).is_err());
    // With the chunks' checksums made to match, the check of the records themselves refuses it.
    let data_start = u64::from_le_bytes(bad[96..104].try_into().unwrap()) as usize;
    let table = 128 + section_ids(&bad).len() * 32;
    let chunk = uffs_index::check::CHUNK;
    for (i, start) in (data_start..bad.len()).step_by(chunk).enumerate() {
        let sum = uffs_index::check::chunk_sum(&bad[start..(start + chunk).min(bad.len())], i);
        bad[table + i * 8..table + i * 8 + 8].copy_from_slice(&sum.to_le_bytes());
    }
    file::reseal(&mut bad);
    match file::from_bytes(&bad) {
        Err(FileError::Corrupt(why)) => assert!(why.contains("timeline"), "{why}"),
        other => panic!(
            "garbage timeline records accepted: {:?}",
            other.map(|i| i.len())
        ),
    }
}

/// A format 4 file (the names as written, their folded copy among the aids) reads back with every name, folded
/// name and path of the index it was written from, whether read wholly or opened in O(1); and says its format.
#[test]
fn format_4_files_are_read_with_their_names() {
    for rel in [
        "windows-xp-mft/MFT",
        "windows10-scenarios/stress_filename.bin",
    ] {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data")
            .join(rel);
        let src = uffs_source::open(p.to_str().unwrap(), None).expect("open sample");
        let opts = uffs_mft::ScanOptions {
            include_deleted: true,
            ..Default::default()
        };
        let mut idx = uffs_mft::build_index(&src.volumes[0], &opts, &|_, _| {})
            .expect("build")
            .0;
        idx.add_search_aids();
        let path = tmp(&format!("format4-{}.uffs", rel.replace('/', "-")));
        file::write_format_4(&idx, &path).unwrap();
        let read = file::read(&path).unwrap();
        let opened = file::open(&path).unwrap();
        assert_eq!(idx.file_format(), None);
        for back in [&read, &opened] {
            assert_eq!(back.file_format(), Some(4));
            assert_eq!(back.len(), idx.len());
            for id in 0..idx.len() as u32 {
                assert_eq!(back.name(id), idx.name(id), "{rel} entry {id}");
                assert_eq!(back.folded_name(id), idx.folded_name(id));
                assert_eq!(back.path(id), idx.path(id));
            }
            let (a, b) = (idx.search_aids().unwrap(), back.search_aids().unwrap());
            assert_eq!(a.name_order.to_vec(), b.name_order.to_vec());
        }
        file::write(&idx, &path).unwrap();
        assert_eq!(
            file::read(&path).unwrap().file_format(),
            Some(file::VERSION)
        );
    }
}
