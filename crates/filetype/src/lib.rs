//! File types by signature: what a file is, decided from its first [`HEAD_BYTES`] bytes, for the `type` column
//! and the `type:` query term. A pure library: the content reader hands it each file's head.
//!
//! # Signatures
//! The signatures are the [`file_format`] crate's (448 formats, no dependencies, no `unsafe`, maintained), with
//! its reader features off: those readers seek through the whole file (a ZIP's central directory is at its
//! end) and answer "binary data" when it is not there. What a head shows beyond the signatures, uffs reads
//! itself (module `refine`): EXE or DLL from the PE header (`MZ`, `PE\0\0` at `e_lfanew`, the DLL flag
//! of the characteristics), NE/LE programs, the format inside a ZIP (Office Open XML, OpenDocument, EPUB, JAR,
//! APK, APPX) or an OLE compound file (Word, Excel, PowerPoint, MSI, Visio, by root CLSID or stream name), MP3
//! or FLAC behind an ID3 tag, Matroska or WebM, SVG behind an XML declaration. And text
//! ([`text_encoding`]): UTF-8 or 8-bit text without control characters, UTF-8/UTF-16 with a byte order mark,
//! and UTF-16LE without one when the head is mostly `x\0` pairs.
//!
//! `infer`, the obvious candidate, knows about 100 formats to this crate's 448, has no text detection but
//! HTML/XML/`#!`, calls every `MZ` file an EXE, and reads OLE files with the `cfb` crate, which parses the
//! whole compound file. Both crates share weak short signatures (`MZ`, `BZh`, `true`, TS's `G` at 0 and 188):
//! [`detect`] lets a clean-text head overrule those.
//!
//! # Order of decision
//! 1. An empty head: `None`.
//! 2. The crate's signature, refined from the head as above.
//! 3. When the head is text in any encoding, a signature survives only if its type may look like text (text
//!    formats, PDF, ASCII Netpbm, cpio, `ar`, FITS): a `.txt` starting `MZ` or `BZh` is text.
//! 4. No signature: text, or `None`.
//!
//! # `HEAD_BYTES` = 4096
//! The crate's signatures reach 1084 bytes (a MOD's `M.K.`, tar's `ustar` at 257) except ISO 9660 (`CD001` at
//! 32769, 34817, 36865) and Sega ROMs (32752); the PE header sits at `e_lfanew`, under 512 in practice; the
//! entries that tell ZIP formats apart come first. 4096 is one NTFS cluster and the page size: one read per
//! file, and over this machine's `/usr` (136,000 files, 7.1 GB) the heads of 4 KiB add to 0.31 GB where
//! heads of 36 KiB, enough for ISO 9660, add to 0.97 GB. So an ISO image is not recognised (its head is
//! usually zeros: no type, and `.iso` never mismatches), nor a compound file's exact kind when its directory
//! sector lies past the head (it is then `ole`, which `type:ole` finds).
//!
//! # Checked and measured
//! `tests/against_file.rs` writes real formats with the tools scripts/setup.sh installs (gzip, xz, tar, Python's
//! zipfile/sqlite3/wave/bz2, MinGW-w64) and a few by hand, and holds [`Type::mime`] to `file --mime-type` on
//! each. Where they legitimately differ it lists why: file(1) splits ELF by `e_type` (uffs has one `elf`),
//! calls UTF-16LE without a mark data, tells JSON and C from other text by content, and names an MSI from its
//! SummaryInformation stream rather than its CLSID. `examples/cost.rs` prints the cost: 1.2 to 2.9 µs per file
//! on one core of this shared machine, of which about 0.4 µs is the 36 KiB zeroed buffer the crate allocates
//! per call; opening and reading a 4 KiB head from the page cache costs 8 to 36 µs.
//!
//! # Names `type:` takes ([`names`], [`Filter`])
//! - A type's name: the crate's extension, lowercase (`pdf`, `png`, `elf`, `mp3`, `7z`, `docx`, `msi`), or
//!   uffs's where that reads better (`jpeg`, `gzip`, `bzip2`, `zstd`, `sqlite`, `text`, `ole`, `pem`, `pgp`), and
//!   aliases (`jpg`, `gz`, `txt`, `tif`, `htm`). DOS, NE, LE and PE programs are all `exe`; DLLs are `dll`.
//! - A family: `pe` (EXE and DLL images), `zip` (every ZIP-based type: docx, jar, apk, epub, …), `ole` (every
//!   compound file: doc, xls, ppt, msi, …).
//! - A group, the crate's kinds: `archive`, `audio`, `compressed` (one stream: gzip, xz), `database`, `disk`,
//!   `document`, `ebook`, `executable`, `font`, `image`, `package`, `presentation`, `spreadsheet`, `video`, …;
//!   and `text`, every text type (plain text in any encoding, XML, HTML, SVG, scripts, PEM, RTF).
//! - [`MISMATCH`]: files whose extension disagrees with their signature.
//!
//! # `type:mismatch`
//! The name reads as what it finds, "type mismatch", and sits with the other `type:` values, so the help lists
//! it with them. The rules ([`mismatch()`]) aim at files that lie, not at every file the crate cannot name:
//! 1. No extension, an extension no type claims (`.1`, `.part`), or a catch-all one (`.bin`, `.dat`, `.tmp`,
//!    `.bak`, `.old`, `.db`, `.img`, `.raw`, `.iso`, …): never. There is no claim to disagree with, and an
//!    extensionless executable is normal on Unix volumes.
//! 2. An empty file: never.
//! 3. A binary signature found: a mismatch when the extension is not the type's own, nor its container family's
//!    (ZIP: `.docx` `.jar` `.apk` `.nupkg` …; OLE: `.doc` `.msi` `.msg` …; MZ: `.exe` `.dll` `.sys` `.ocx`
//!    `.cpl` `.scr` `.efi` `.mui` …; ISO media: `.mp4` `.m4a` `.mov` …; Matroska, ASF, Ogg). Text extensions
//!    (`.txt`, `.csv`, `.json`, `.xml`, `.html`, sources, scripts) are claims too. A `.jpg` that is a PE image,
//!    a `.txt` that is a ZIP, a `.ico` that is a PNG all mismatch.
//! 4. Text (plain, or a text format: XML, HTML, SVG, scripts, RTF, …), no signature at all: a mismatch only
//!    when the extension promises a signature in the head. Text has no signature, so it cannot contradict
//!    `.svg`, `.xml`, `.json`, `.csv`, sources, nor the many short extensions that obscure binary formats also
//!    use (`.it`, `.dot`, `.api`); a `.pdf` that is HTML, a `.doc` that is RTF, a `.exe` of zeros mismatch.
//!    The extensions that promise a signature: `.exe`
//!    `.dll` `.ocx` `.cpl` `.scr` `.efi` `.msi` `.pdf` `.png` `.jpg` `.jpeg` `.gif` `.bmp` `.tif` `.tiff` `.webp`
//!    `.ico` `.psd` `.zip` `.gz` `.tgz` `.7z` `.rar` `.xz` `.bz2` `.zst` `.cab` `.docx` `.xlsx` `.pptx` `.odt`
//!    `.ods` `.odp` `.epub` `.jar` `.apk` `.doc` `.xls` `.ppt` `.sqlite` `.sqlite3` `.mp4` `.m4a` `.mov` `.mkv`
//!    `.webm` `.flac` `.wav` `.avi` `.ogg` `.class` `.lnk` `.chm` `.woff` `.woff2` `.deb` `.rpm`. Not `.mp3`
//!    (junk may precede the first frame), `.so` (linker scripts are text), `.sys` (`pagefile.sys`), `.iso`.
//!
//! Over the first 50,000 files of this machine's `/usr/bin`, `/usr/lib`, `/usr/local`, `/usr/include` these
//! rules flag three: two `favicon.ico` that are PNG images and glibc's `libmcheck.a`, an ELF object rather
//! than an `ar` archive (`cargo run --release -p uffs-filetype --example cost -- /usr/lib`).

mod curated;
mod filter;
mod mismatch;
mod refine;
mod text;
mod types;

use file_format::FileFormat;

pub use filter::{names, Filter, UnknownType, COMMON, MISMATCH};
pub use mismatch::{mismatch, Mismatch};
pub use text::{text_encoding, TextEncoding};
pub use types::{Group, Type};

/// How many leading bytes of a file [`detect`] needs; the reader hands over at most this many, fewer for a
/// shorter file. See the crate docs for why 4096.
pub const HEAD_BYTES: usize = 4096;

/// The type of a file whose first bytes are `head` (at most [`HEAD_BYTES`] are looked at; the whole file if it
/// is shorter), or `None` for an empty head or bytes no signature matches and that are not text.
pub fn detect(head: &[u8]) -> Option<Type> {
    let head = &head[..head.len().min(HEAD_BYTES)];
    if head.is_empty() {
        return None;
    }
    let plain_text = || {
        text::is_text(head)
            .then(|| Type::of(FileFormat::PlainText))
            .flatten()
    };
    match FileFormat::from_bytes(head) {
        FileFormat::ArbitraryBinaryData | FileFormat::Empty => plain_text(),
        found => match Type::of(refine::refine(found, head)) {
            Some(ty) if ty.info().may_look_like_text => Some(ty),
            // A signature that text cannot have, on a text head, is a coincidence.
            Some(ty) => plain_text().or(Some(ty)),
            None => plain_text(),
        },
    }
}

/// Whether `head` is a symbolic link, character or block device kept as a regular file's data by Interix
/// (Services for Unix, and ntfs-3g's default for symlinks it makes without reparse points): `IntxLNK\x01`,
/// `IntxCHR\0`, `IntxBLK\0`.
pub fn is_interix_special(head: &[u8]) -> bool {
    [&b"IntxLNK\x01"[..], b"IntxCHR\0", b"IntxBLK\0"]
        .iter()
        .any(|m| head.starts_with(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(head: &[u8]) -> Option<&'static str> {
        detect(head).map(Type::name)
    }

    #[test]
    fn signatures() {
        assert_eq!(name(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj"), Some("pdf"));
        assert_eq!(name(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Some("png"));
        assert_eq!(name(b"\xFF\xD8\xFF\xE0\0\x10JFIF\0"), Some("jpeg"));
        assert_eq!(name(b"\x1F\x8B\x08\0\0\0\0\0\0\x03"), Some("gzip"));
        assert_eq!(name(b"\xFD7zXZ\0\0\x04"), Some("xz"));
        assert_eq!(name(b"SQLite format 3\0\x10\0"), Some("sqlite"));
        let mut elf = b"\x7FELF\x02\x01\x01\0".to_vec();
        elf.resize(64, 0);
        assert_eq!(name(&elf), Some("elf"));
        let mut tar = vec![0u8; 512];
        tar[..5].copy_from_slice(b"a.txt");
        tar[257..265].copy_from_slice(b"ustar\x0000");
        assert_eq!(name(&tar), Some("tar"));
        assert_eq!(
            detect(b"PK\x03\x04").map(|t| t.mime()),
            Some("application/zip")
        );
    }

    #[test]
    fn empty_binary_and_text() {
        assert_eq!(detect(b""), None);
        assert_eq!(detect(&[0u8; 100]), None);
        assert_eq!(detect(b"\x01\x02\x03\x04garbage\0"), None);
        assert_eq!(name(b"hello\n"), Some("text"));
        assert_eq!(name(b"h\xe9llo\n"), Some("text"));
        assert_eq!(name(b"\xFF\xFEh\0i\0"), Some("text"));
        assert_eq!(name(b"h\0e\0l\0l\0o\0"), Some("text"));
        assert_eq!(detect(b"hello").map(|t| t.mime()), Some("text/plain"));
    }

    #[test]
    fn text_overrules_weak_signatures() {
        assert_eq!(name(b"MZ is a two-letter code\n"), Some("text"));
        assert_eq!(name(b"BZh is how bzip2 starts\n"), Some("text"));
        assert_eq!(name(b"true\n"), Some("text"));
        let mut ts = vec![b' '; 400];
        ts[0] = b'G';
        ts[188] = b'G';
        assert_eq!(name(&ts), Some("text"));
        // The real thing, with binary after the magic, keeps its signature.
        assert_eq!(name(b"BZh91AY&SY\x01\x02\0"), Some("bzip2"));
        assert_eq!(name(b"MZ\x90\0\x03\0\0\0\x04\0"), Some("exe"));
    }

    #[test]
    fn text_formats_and_textlike_binaries_keep_their_signature() {
        assert_eq!(
            name(b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\n"),
            Some("pdf")
        );
        assert_eq!(name(b"#!/bin/sh\necho hi\n"), Some("sh"));
        assert_eq!(name(b"<?xml version=\"1.0\"?>\n<root/>\n"), Some("xml"));
        assert_eq!(
            name(b"<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>"),
            Some("svg")
        );
        assert_eq!(name(b"<!DOCTYPE html>\n<html></html>"), Some("html"));
        assert_eq!(name(b"{\\rtf1\\ansi hello}"), Some("rtf"));
        assert_eq!(name(b"P1\n2 2\n0 1\n1 0\n"), Some("pbm"));
    }

    #[test]
    fn any_bytes_and_every_prefix_are_safe() {
        // Heads that send the refinements into their parsers, cut at every length, then noise.
        let mut pe = vec![0u8; 0x100];
        pe[..2].copy_from_slice(b"MZ");
        pe[0x3C..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        pe[0x80..0x84].copy_from_slice(b"PE\0\0");
        let mut ole = vec![0u8; 1200];
        ole[..8].copy_from_slice(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]);
        ole[0x1E] = 9;
        let zip = b"PK\x03\x04\x14\0\x08\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x08\0\0\0mimetypeapplication/epub+zip".to_vec();
        let id3 = b"ID3\x04\0\x10\x7f\x7f\x7f\x7f".to_vec();
        let ebml = b"\x1A\x45\xDF\xA3\x9F\x42\x82\x88matroska".to_vec();
        for sample in [pe, ole, zip, id3, ebml] {
            for len in 0..=sample.len() {
                let _ = detect(&sample[..len]);
            }
        }
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..2000 {
            let len = round % 700;
            let head: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect();
            let _ = detect(&head);
            // The same noise behind each refined signature.
            for magic in [
                &b"MZ"[..],
                b"PK\x03\x04",
                b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1",
                b"ID3\x03",
                b"\x1A\x45\xDF\xA3",
            ] {
                let _ = detect(&[magic, &head].concat());
            }
        }
    }

    #[test]
    fn only_the_head_is_read() {
        let mut long = b"hello ".repeat(1000);
        long.extend_from_slice(&[0u8; 100]);
        assert!(long.len() > HEAD_BYTES);
        assert_eq!(name(&long), Some("text"));
    }
}
