//! Shared by the `fat` and `exfat` targets: the input as a volume image, and the invariants every scan of any
//! image must keep.
//!
//! The input is the image's first bytes. An input of even length is zero-extended to the length its boot sector
//! claims (at most 64 MiB), as an image made by mkfs is mostly zeros after its last folder, so the seeds can be
//! cut after their last non-zero byte and mutations stay cheap; an odd length is the image exactly as given
//! (a truncated image: the boot sector claims more than it holds).

use std::collections::HashSet;

use uffs_fat::{ScanOptions, Volume};
use uffs_fs::Scan;

const CAP: u64 = 64 << 20;

/// The image to open: `data`, zero-extended to `claimed` bytes (capped) when its length is even.
pub fn image(data: &[u8], claimed: u64) -> Vec<u8> {
    let mut img = data.to_vec();
    if data.len() % 2 == 0 {
        let want = claimed.min(CAP) as usize;
        if want > img.len() {
            img.resize(want, 0);
        }
    }
    img
}

/// What a FAT12/16/32 boot sector claims: total sectors × bytes per sector.
pub fn fat_claimed(d: &[u8]) -> u64 {
    if d.len() < 40 {
        return 0;
    }
    let bps = u64::from(u16::from_le_bytes([d[11], d[12]]));
    let total = match u16::from_le_bytes([d[19], d[20]]) {
        0 => u64::from(u32::from_le_bytes([d[32], d[33], d[34], d[35]])),
        n => u64::from(n),
    };
    bps.saturating_mul(total)
}

/// What an exFAT boot sector claims: VolumeLength sectors of 2^BytesPerSectorShift bytes.
pub fn exfat_claimed(d: &[u8]) -> u64 {
    if d.len() < 109 {
        return 0;
    }
    let sectors = u64::from_le_bytes(d[72..80].try_into().unwrap());
    let shift = u32::from(d[108]).min(12);
    sectors.saturating_mul(1 << shift)
}

/// Opens, scans with and without deleted entries, asks for the facts and the space, and checks what must hold
/// on any input. `claimed`: the volume's length as its boot sector gives it.
///
/// Runs end within the image, or within the volume the boot sector claims when the image is cut short: an entry's
/// runs are where the file system says its data is, which on a truncated image may be past the image's end (the
/// crate reads only what is there and warns that the rest is missing).
pub fn check(img: &[u8], claimed: u64) {
    let len = (img.len() as u64).max(claimed);
    let Ok(v) = Volume::open(img) else { return };
    let _ = v.flavor().name();
    let _ = v.serial();
    for (k, val) in v.facts() {
        assert!(!k.is_empty(), "a fact without a name ({val:?})");
    }
    if let Ok(s) = v.space() {
        check_space(&s);
    }
    let live = v.scan(&ScanOptions { deleted: false, ..Default::default() });
    let all = v.scan(&ScanOptions { deleted: true, ..Default::default() });
    if let Ok(live) = &live {
        check_scan(live, len, false);
    }
    if let Ok(all) = &all {
        check_scan(all, len, true);
    }
    if let (Ok(live), Ok(all)) = (&live, &all) {
        // Asking for deleted entries too adds entries; it takes none of the allocated ones away.
        let ids: HashSet<u64> = all.entries.iter().map(|e| e.id).collect();
        for e in &live.entries {
            assert!(
                ids.contains(&e.id),
                "entry {} ({:?}) is missing from the scan with deleted",
                e.id,
                e.name
            );
        }
        assert_eq!(live.root, all.root);
    }
}

fn check_space(s: &uffs_fs::Space) {
    assert!(s.clusters_in_use <= s.clusters_total, "space: {s:?}");
}

fn check_scan(scan: &Scan, len: u64, deleted: bool) {
    check_space(&scan.space);
    let mut ids = HashSet::new();
    for e in &scan.entries {
        assert!(ids.insert(e.id), "id {} twice ({:?})", e.id, e.name);
        assert!(e.id < 1 << 48, "id {} over 48 bits", e.id);
        assert!(
            deleted || !e.deleted,
            "a deleted entry in a scan without deleted: {e:?}"
        );
        for r in &e.runs {
            let end = r.offset.checked_add(r.len);
            assert!(
                end.is_some_and(|end| end <= len),
                "entry {} {:?}: run {r:?} past the image and the volume ({len} bytes)",
                e.id,
                e.name
            );
        }
    }
}
