//! `-z`: a compressed file searched as what it decompresses to, chosen by its name's ending as `rg -z` chooses
//! (rg 13 runs `gzip -d -c` and the like; the decoders here are in-process, in Rust but for zstd's C library).
//! Memory stays bounded: each decoder streams, and a dictionary larger than [`DICTIONARY_MAX`] is an error rather
//! than an allocation sized from a header.

use std::io::{self, BufReader, Read};

/// The largest xz or lzma dictionary a file may ask for (xz's own presets go up to 64 MiB).
pub const DICTIONARY_MAX: u32 = 1 << 30;

/// A compressed format `-z` decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// `.gz`, `.tgz`: one or more gzip members, as `gzip -d` reads them.
    Gzip,
    /// `.bz2`, `.tbz2`: one or more bzip2 streams.
    Bzip2,
    /// `.xz`, `.txz`: one or more xz streams.
    Xz,
    /// `.lzma`: the legacy LZMA-alone format (`xz --format=lzma`).
    Lzma,
    /// `.zst`, `.zstd`: zstd frames.
    Zstd,
}

impl Compression {
    /// The format a file's name says it holds, by the endings `rg -z` knows (case counts, as in rg's globs).
    pub fn of(path: &str) -> Option<Compression> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        Some(match ext {
            "gz" | "tgz" => Compression::Gzip,
            "bz2" | "tbz2" => Compression::Bzip2,
            "xz" | "txz" => Compression::Xz,
            "lzma" => Compression::Lzma,
            "zst" | "zstd" => Compression::Zstd,
            _ => return None,
        })
    }

    /// A reader of the decompressed bytes of `compressed`. A malformed stream is an error of a later read (or of
    /// this call, for a header that cannot be read).
    pub fn decoder<'a>(self, compressed: impl Read + 'a) -> io::Result<Box<dyn Read + 'a>> {
        Ok(match self {
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(
                compressed,
            ))),
            Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(compressed)),
            Compression::Xz => Box::new(lzma_rust2::XzReader::new_mem_limit(
                BufReader::new(compressed),
                true,
                DICTIONARY_MAX / 1024,
            )),
            Compression::Lzma => Box::new(lzma_rust2::LzmaReader::new_mem_limit(
                BufReader::new(compressed),
                DICTIONARY_MAX / 1024,
                None,
            )?),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(compressed)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_choose_the_format_as_rg_does() {
        assert_eq!(Compression::of("/a/b.txt.gz"), Some(Compression::Gzip));
        assert_eq!(Compression::of("C:\\x\\y.tgz"), Some(Compression::Gzip));
        assert_eq!(Compression::of("y.tbz2"), Some(Compression::Bzip2));
        assert_eq!(Compression::of("y.txz"), Some(Compression::Xz));
        assert_eq!(Compression::of("y.zstd"), Some(Compression::Zstd));
        assert_eq!(Compression::of("y.GZ"), None);
        assert_eq!(Compression::of("/dir.gz/y"), None);
        assert_eq!(Compression::of("gz"), None);
    }

    #[test]
    fn gzip_members_are_read_one_after_another() {
        let mut two = Vec::new();
        for part in [&b"one\n"[..], b"two\n"] {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            io::Write::write_all(&mut e, part).unwrap();
            two.extend(e.finish().unwrap());
        }
        let mut out = String::new();
        Compression::Gzip
            .decoder(&two[..])
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "one\ntwo\n");
    }

    #[test]
    fn a_stream_that_is_not_the_format_is_an_error() {
        for c in [
            Compression::Gzip,
            Compression::Bzip2,
            Compression::Xz,
            Compression::Lzma,
            Compression::Zstd,
        ] {
            let bytes = b"not compressed at all\n".repeat(10);
            let result = c
                .decoder(&bytes[..])
                .and_then(|mut r| r.read_to_end(&mut Vec::new()));
            assert!(result.is_err(), "{c:?}");
        }
    }
}
