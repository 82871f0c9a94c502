//! Apple's sparse disk images: `.sparseimage` (one file: a 4 KiB header whose table says which band of the disk
//! each stored band is, bands in the order they were first written) and `.sparsebundle` (a folder: `Info.plist`
//! giving the band size and the disk's size, and `bands/` holding band N as the file named N in hexadecimal). A
//! band never written reads as zeros; a band file shorter than a band reads as zeros past its end. Layouts as
//! libyal's author documents them (keramics, `docs/formats/src/sparseimage.md` and `sparsebundle.md`).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::{bad, Image};

/// The header's size: the file header (64 bytes), then the band table, padded.
const HEADER: u64 = 4096;
/// Most bands one header's table holds.
const MAX_BANDS: u64 = (HEADER - 64) / 4;

/// A `.sparseimage` file.
#[derive(Debug)]
pub struct SparseImage {
    path: PathBuf,
    file: File,
    file_len: u64,
    len: u64,
    band: u64,
    /// Per band of the disk: where the file holds it (`None`: never written).
    at: Vec<Option<u64>>,
}

impl SparseImage {
    /// The sparse image in `file` (`file_len` bytes), or `None` when it is not one.
    pub fn open(path: &Path, file: &File, file_len: u64) -> io::Result<Option<SparseImage>> {
        if file_len < HEADER {
            return Ok(None);
        }
        let mut h = vec![0u8; HEADER as usize];
        crate::read::read_file_at(file, &mut h, 0)?;
        if &h[..4] != b"sprs" {
            return Ok(None);
        }
        let be = |at: usize| {
            u64::from(u32::from_be_bytes(
                h[at..at + 4].try_into().expect("4 bytes"),
            ))
        };
        let sectors_per_band = be(8);
        let len = be(16) * 512;
        if sectors_per_band == 0 {
            return Err(bad("this sparse image's bands are 0 sectors long"));
        }
        let band = sectors_per_band * 512;
        let bands = len.div_ceil(band);
        if bands > MAX_BANDS {
            return Err(bad(format!(
                "this sparse image has {bands} bands, more than one header's table holds ({MAX_BANDS}): uffs does \
                 not read such images yet (convert it with `hdiutil convert -format UDRW`)"
            )));
        }
        let mut at = vec![None; bands as usize];
        for i in 0..bands {
            let n = be(64 + 4 * i as usize);
            if n == 0 {
                continue;
            }
            let stored = HEADER + i * band;
            match at.get_mut((n - 1) as usize) {
                Some(slot) if slot.is_none() && stored < file_len => *slot = Some(stored),
                Some(_) if stored >= file_len => {
                    return Err(bad(format!(
                        "this sparse image's band {n} is stored at byte {stored}, past its end ({file_len} bytes)"
                    )))
                }
                Some(_) => return Err(bad(format!("this sparse image stores band {n} twice"))),
                None => {
                    return Err(bad(format!(
                        "this sparse image stores band {n}, past the disk's {bands} bands"
                    )))
                }
            }
        }
        Ok(Some(SparseImage {
            path: path.to_path_buf(),
            file: file.try_clone()?,
            file_len,
            len,
            band,
            at,
        }))
    }
}

impl Image for SparseImage {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        by_band(buf, offset, self.band, |dst, band, within| {
            match self.at.get(band as usize).copied().flatten() {
                Some(at) => read_or_zeros(&self.file, self.file_len, dst, at + within),
                None => {
                    dst.fill(0);
                    Ok(())
                }
            }
        })
    }

    fn describe(&self) -> String {
        let written = self.at.iter().filter(|a| a.is_some()).count();
        format!(
            "Apple sparse image: {written} of {} bands of {} KiB written",
            self.at.len(),
            self.band / 1024
        )
    }

    fn files(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
}

/// A `.sparsebundle` folder.
#[derive(Debug)]
pub struct SparseBundle {
    path: PathBuf,
    len: u64,
    band: u64,
    /// Per band of the disk: its file and the file's length, when written.
    bands: Vec<Option<(File, u64)>>,
}

/// Whether folder `path` is a sparse bundle (its `Info.plist` says so).
pub fn is_bundle(path: &Path) -> bool {
    bundle_plist(path).is_some()
}

/// The `Info.plist` of sparse bundle `path`; `None` when it is no sparse bundle.
fn bundle_plist(path: &Path) -> Option<String> {
    std::fs::read_to_string(path.join("Info.plist"))
        .ok()
        .filter(|p| p.contains("com.apple.diskimage.sparsebundle"))
}

impl SparseBundle {
    /// The sparse bundle in folder `path`, or `None` when it is not one.
    pub fn open(path: &Path) -> io::Result<Option<SparseBundle>> {
        let Some(plist) = bundle_plist(path) else {
            return Ok(None);
        };
        let integer = |key: &str| -> io::Result<u64> {
            let after = plist
                .split(&format!("<key>{key}</key>"))
                .nth(1)
                .ok_or_else(|| bad(format!("this sparse bundle's Info.plist has no {key}")))?;
            after
                .trim_start()
                .strip_prefix("<integer>")
                .and_then(|v| v.split('<').next())
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| {
                    bad(format!(
                        "this sparse bundle's Info.plist gives no number for {key}"
                    ))
                })
        };
        let (band, len) = (integer("band-size")?, integer("size")?);
        if band == 0 || band % 512 != 0 {
            return Err(bad(format!(
                "this sparse bundle's bands are {band} bytes, not a multiple of 512"
            )));
        }
        let count = len.div_ceil(band);
        // A band's file exists once the band was written; the disk's size bounds how many are looked for.
        let mut bands = Vec::new();
        let dir = path.join("bands");
        let names: std::collections::HashSet<String> = std::fs::read_dir(&dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        for i in 0..count {
            let name = format!("{i:x}");
            bands.push(if names.contains(&name) {
                let f = File::open(dir.join(&name))?;
                let n = crate::read::byte_len(&f)?;
                Some((f, n))
            } else {
                None
            });
        }
        Ok(Some(SparseBundle {
            path: path.to_path_buf(),
            len,
            band,
            bands,
        }))
    }
}

impl Image for SparseBundle {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        by_band(buf, offset, self.band, |dst, band, within| {
            match self.bands.get(band as usize).and_then(Option::as_ref) {
                Some((f, len)) => read_or_zeros(f, *len, dst, within),
                None => {
                    dst.fill(0);
                    Ok(())
                }
            }
        })
    }

    fn describe(&self) -> String {
        let written = self.bands.iter().filter(|b| b.is_some()).count();
        format!(
            "Apple sparse bundle: {written} of {} bands of {} KiB written",
            self.bands.len(),
            self.band / 1024
        )
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut out = vec![self.path.join("Info.plist")];
        for (i, b) in self.bands.iter().enumerate() {
            if b.is_some() {
                out.push(self.path.join("bands").join(format!("{i:x}")));
            }
        }
        out
    }
}

/// Splits a read at `offset` into pieces within one band each: `read(dst, band, offset within the band)`.
fn by_band(
    buf: &mut [u8],
    offset: u64,
    band: u64,
    mut read: impl FnMut(&mut [u8], u64, u64) -> io::Result<()>,
) -> io::Result<()> {
    let mut done = 0usize;
    while done < buf.len() {
        let at = offset + done as u64;
        let within = at % band;
        let n = ((band - within) as usize).min(buf.len() - done);
        read(&mut buf[done..done + n], at / band, within)?;
        done += n;
    }
    Ok(())
}

/// Fills `dst` from byte `at` of `file` (`len` bytes), zeros past its end (a band's file, or the last band, cut
/// short).
fn read_or_zeros(file: &File, len: u64, dst: &mut [u8], at: u64) -> io::Result<()> {
    let have = len.saturating_sub(at).min(dst.len() as u64) as usize;
    let (head, tail) = dst.split_at_mut(have);
    if have > 0 {
        crate::read::read_file_at(file, head, at)?;
    }
    tail.fill(0);
    Ok(())
}
