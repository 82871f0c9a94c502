//! Split raw images: one image cut into numbered pieces, read as one device. FTK Imager writes `disk.001`,
//! `disk.002`, …; `split -d` writes `x00`, `x01`, … (or `disk.00`, `disk.01` with a prefix). A set is found from
//! its first piece: a name ending in a number 0 or 1 of at least two digits, with the next number beside it. A
//! piece named on its own, or a lone `disk.001`, is an ordinary raw image.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::Image;

/// The pieces of the set `first` starts, in order; `None` when `first` starts none.
pub fn pieces(first: &Path) -> Option<Vec<PathBuf>> {
    let name = first.file_name()?.to_str()?;
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits < 2 {
        return None;
    }
    let (stem, number) = name.split_at(name.len() - digits);
    let start: u64 = number.parse().ok()?;
    if start > 1 {
        return None;
    }
    let piece = |n: u64| first.with_file_name(format!("{stem}{n:0digits$}"));
    let mut all = vec![first.to_path_buf()];
    // Numbers past the width (`.999` then `.1000`) are not a format any tool writes.
    while let Some(next) = start
        .checked_add(all.len() as u64)
        .filter(|n| n.to_string().len() <= digits)
        .map(piece)
        .filter(|p| p.is_file())
    {
        all.push(next);
    }
    (all.len() > 1).then_some(all)
}

/// The open pieces of a set, each with where it starts in the whole.
#[derive(Debug)]
pub struct SplitImage {
    pieces: Vec<(File, u64)>,
    len: u64,
    paths: Vec<PathBuf>,
}

impl SplitImage {
    pub fn open(paths: &[PathBuf]) -> io::Result<SplitImage> {
        let mut pieces = Vec::with_capacity(paths.len());
        let mut len = 0u64;
        for (i, p) in paths.iter().enumerate() {
            let f = File::open(p)?;
            let n = f.metadata()?.len();
            if n == 0 && i + 1 < paths.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} is empty, and pieces follow it: the split image is damaged",
                        p.display()
                    ),
                ));
            }
            pieces.push((f, len));
            len += n;
        }
        Ok(SplitImage {
            pieces,
            len,
            paths: paths.to_vec(),
        })
    }

    /// The files of the set, first to last.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

impl Image for SplitImage {
    /// The bytes of all pieces together.
    fn len(&self) -> u64 {
        self.len
    }

    fn describe(&self) -> String {
        format!("split raw image: {} pieces", self.paths.len())
    }

    fn files(&self) -> Vec<PathBuf> {
        self.paths.clone()
    }

    /// Fills `buf` from `offset` of the whole, across pieces where it spans several. Each piece's read is a
    /// positional read: no lock, and reads from several threads go on at once.
    fn read_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        // The last piece starting at or before `offset`.
        let mut i = self
            .pieces
            .partition_point(|p| p.1 <= offset)
            .saturating_sub(1);
        while !buf.is_empty() {
            let (file, start) = self
                .pieces
                .get(i)
                .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
            let end = self.pieces.get(i + 1).map_or(self.len, |p| p.1);
            let n = ((end - offset) as usize).min(buf.len());
            let (now, rest) = buf.split_at_mut(n);
            crate::read::read_file_at(file, now, offset - start)?;
            buf = rest;
            offset += n as u64;
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("uffs-split-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn sets_are_found_from_their_first_piece() {
        let d = dir("names");
        for n in [
            "disk.001", "disk.002", "disk.003", "disk.005", "x00", "x01", "lone.001", "y0", "y1",
        ] {
            std::fs::write(d.join(n), b"x").unwrap();
        }
        let names = |p: &str| {
            pieces(&d.join(p)).map(|v| {
                v.iter()
                    .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
        };
        // Up to the first gap.
        assert_eq!(
            names("disk.001").unwrap(),
            ["disk.001", "disk.002", "disk.003"]
        );
        assert_eq!(names("x00").unwrap(), ["x00", "x01"]);
        // A middle piece, a lone first piece, one digit: not a set.
        assert_eq!(names("disk.002"), None);
        assert_eq!(names("lone.001"), None);
        assert_eq!(names("y0"), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn reads_span_pieces_as_the_whole_would() {
        let d = dir("reads");
        let whole: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + i / 255) as u8).collect();
        let mut paths = Vec::new();
        for (i, chunk) in whole.chunks(3_000).enumerate() {
            let p = d.join(format!("img.{:03}", i + 1));
            std::fs::write(&p, chunk).unwrap();
            paths.push(p);
        }
        assert_eq!(pieces(&paths[0]).unwrap(), paths);
        let s = SplitImage::open(&paths).unwrap();
        assert_eq!(s.len(), 10_000);
        for (off, n) in [
            (0, 10_000),
            (2_999, 2),
            (3_000, 3_000),
            (5_500, 4_500),
            (9_999, 1),
            (100, 0),
        ] {
            let mut buf = vec![0u8; n];
            s.read_at(&mut buf, off as u64).unwrap();
            assert_eq!(buf, whole[off..off + n], "{off}+{n}");
        }
        let mut buf = [0u8; 2];
        assert!(s.read_at(&mut buf, 9_999).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }
}
