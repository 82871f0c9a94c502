//! Volume Shadow Copy metadata: the VSS header, catalog blocks, store headers, block lists and bitmaps, and
//! reads through a chain of stores. The input is laid into a 32 MiB volume of zeros: its first 128 bytes become
//! the VSS header at 0x1E00 (where the catalog offset comes from), the rest is placed from 0x4000 on, where the
//! header's offsets can point. Offsets, chains and counts claimed by the bytes must never make it allocate,
//! loop or read beyond what the volume allows.
#![no_main]

use std::io;
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use uffs_image::container::Image;
use uffs_mft::device::Device;

const VOLUME: u64 = 32 << 20;

#[derive(Debug)]
struct Laid {
    header: Vec<u8>,
    rest: Vec<u8>,
}

impl Image for Laid {
    fn len(&self) -> u64 {
        VOLUME
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        buf.fill(0);
        for (at, bytes) in [(0x1E00u64, &self.header), (0x4000, &self.rest)] {
            let (start, end) = (at, at + bytes.len() as u64);
            let (lo, hi) = (offset.max(start), (offset + buf.len() as u64).min(end));
            if lo < hi {
                buf[(lo - offset) as usize..(hi - offset) as usize]
                    .copy_from_slice(&bytes[(lo - start) as usize..(hi - start) as usize]);
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        "fuzz input".into()
    }

    fn files(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}

fuzz_target!(|data: &[u8]| {
    let split = data.len().min(128);
    let volume = Device::from_image(Box::new(Laid {
        header: data[..split].to_vec(),
        rest: data[split..].to_vec(),
    }));
    let Ok(stores) = uffs_image::vss::stores(&volume) else {
        return;
    };
    for s in &stores {
        if let Ok(snap) = uffs_image::vss::Snapshot::open_from(&volume, None, &stores, s.index, Vec::new()) {
            let mut buf = vec![0u8; 3 << 16];
            let n = buf.len() as u64;
            for at in [0u64, 0x1E00, 0x4000, 0x3FF0, VOLUME - n] {
                let _ = snap.read_at(&mut buf, at.min(snap.len().saturating_sub(n)));
            }
        }
    }
});
