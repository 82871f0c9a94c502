//! A Btrfs device image: `uffs_btrfs::Volume::open`, `scan`, `facts`, `space`, and every compressed piece of a
//! scanned entry decoded; every run and piece inside the device, no panic, no hang. The input is the image folded:
//! image byte X is input byte X mod the input's length (the seeds, fuzz/seed-corpus.sh, are real images folded
//! so), which lets a few hundred KiB stand for trees tens of MB apart; the superblock's magic is set so that every
//! input gets past `probe`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uffs_fs::ReadAt;

/// The image an input stands for: 128 MiB, byte X being input byte X mod its length.
#[derive(Debug)]
struct Folded(Vec<u8>);

const LEN: u64 = 128 << 20;

impl ReadAt for Folded {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        if offset.checked_add(buf.len() as u64).is_none_or(|end| end > LEN) {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let n = self.0.len() as u64;
        for (i, b) in buf.iter_mut().enumerate() {
            *b = self.0[((offset + i as u64) % n) as usize];
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        LEN
    }
}

fuzz_target!(|data: &[u8]| {
    let sb = uffs_btrfs::PROBE_LEN;
    if data.len() < sb + 4096 {
        return;
    }
    let mut img = data.to_vec();
    img[sb - 8..sb].copy_from_slice(b"_BHRfS_M");
    let raw = Folded(img.clone());
    let Ok(vol) = uffs_btrfs::Volume::open(Folded(img)) else {
        return;
    };
    let _ = vol.facts();
    let space = vol.space();
    let end = vol.superblock().dev_total_bytes;
    assert!(space.bytes_total == end);
    let Ok(scan) = vol.scan(&Default::default()) else {
        return;
    };
    for e in &scan.entries {
        for r in e.runs.iter().filter(|r| !r.is_hole()) {
            assert!(r.offset.checked_add(r.len).is_some_and(|e| e <= end), "{e:?}");
        }
        for p in &e.packed {
            assert!(p.disk.offset.checked_add(p.disk.len).is_some_and(|e| e <= end), "{e:?}");
            let mut b = vec![0u8; p.disk.len.min(1 << 20) as usize];
            if raw.read_exact_at(&mut b, p.disk.offset).is_ok() {
                let _ = uffs_fs::packed::decode(p.codec, &b, p.decoded_len.min(1 << 20) as usize);
            }
        }
    }
});
