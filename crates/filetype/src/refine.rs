//! What a head shows that the crate's signatures do not: PE images (EXE or DLL) behind an MS-DOS header, the
//! format inside a ZIP or an OLE compound file, the audio behind an ID3 tag, the Matroska flavour, SVG after an
//! XML declaration. The crate has readers for these, but they seek through the whole file (a ZIP's central
//! directory is at its end) and fall back to "binary data" when it is not there, so uffs keeps them off and
//! reads the head alone here. Every read is bounds-checked: a short or damaged head refines to nothing.

use file_format::FileFormat as F;
use memchr::memmem;

/// The format `found` by the crate's signatures, made more precise from `head` where it can be.
pub(crate) fn refine(found: F, head: &[u8]) -> F {
    match found {
        F::MsDosExecutable => mz(head),
        F::Zip => zip(head),
        F::CompoundFileBinary => ole(head),
        F::Id3v2 => id3(head),
        F::ExtensibleBinaryMetaLanguage => ebml(head),
        F::ExtensibleMarkupLanguage if memmem::find(head, b"<svg").is_some() => {
            F::ScalableVectorGraphics
        }
        other => other,
    }
}

fn u16_at(head: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        head.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(head: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        head.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// `IMAGE_FILE_DLL` in the COFF header's characteristics.
const IMAGE_FILE_DLL: u16 = 0x2000;

/// An MS-DOS header: `e_lfanew` at 0x3C points at the new header, `PE\0\0` (then the COFF header, whose
/// characteristics at +22 say DLL or not), `NE` or `LE`/`LX`. Without one (or past the head) it is a DOS
/// program.
fn mz(head: &[u8]) -> F {
    let Some(at) = u32_at(head, 0x3C).and_then(|v| usize::try_from(v).ok()) else {
        return F::MsDosExecutable;
    };
    match head.get(at..at.saturating_add(4)) {
        Some(b"PE\0\0") => match u16_at(head, at + 22) {
            Some(c) if c & IMAGE_FILE_DLL != 0 => F::DynamicLinkLibrary,
            Some(_) => F::PortableExecutable,
            None => F::MsDosExecutable,
        },
        Some([b'N', b'E', ..]) => F::NewExecutable,
        Some([b'L', b'E' | b'X', ..]) => F::LinearExecutable,
        _ => F::MsDosExecutable,
    }
}

const LOCAL_HEADER: &[u8; 4] = b"PK\x03\x04";
/// Local file headers looked at: the entries that tell a format apart come first.
const ZIP_ENTRIES: usize = 32;

/// A ZIP's local file headers in the head, walked in order: the first entry `mimetype` (stored) names
/// OpenDocument and EPUB files; `word/`, `xl/`, `ppt/`, `visio/` name Office Open XML; `AndroidManifest.xml`
/// an APK; `AppxManifest.xml` an APPX; `META-INF/MANIFEST.MF` (or a first entry with the `0xCAFE` extra
/// field the `jar` tool writes) a JAR. Anything else is a plain ZIP.
fn zip(head: &[u8]) -> F {
    let mut pos = 0usize;
    let mut jar = false;
    let mut war = false;
    for entry in 0..ZIP_ENTRIES {
        if head.get(pos..pos.saturating_add(4)) != Some(LOCAL_HEADER.as_slice()) {
            break;
        }
        let (Some(flags), Some(size), Some(name_len), Some(extra_len)) = (
            u16_at(head, pos + 6),
            u32_at(head, pos + 18),
            u16_at(head, pos + 26),
            u16_at(head, pos + 28),
        ) else {
            break;
        };
        let name_at = pos + 30;
        let Some(name) = head.get(name_at..name_at + usize::from(name_len)) else {
            break;
        };
        let extra_at = name_at + usize::from(name_len);
        let data_at = extra_at + usize::from(extra_len);
        if entry == 0 && name == b"mimetype" {
            let media_type = head
                .get(data_at..data_at.saturating_add(size as usize))
                .and_then(|m| std::str::from_utf8(m).ok());
            return media_type
                .and_then(zip_member_by_media_type)
                .unwrap_or(F::Zip);
        }
        if entry == 0 && head.get(extra_at..extra_at + 2) == Some(b"\xFE\xCA".as_slice()) {
            jar = true;
        }
        if let Some(f) = zip_member_by_entry(name) {
            return f;
        }
        jar |= name == b"META-INF/MANIFEST.MF";
        war |= name.starts_with(b"WEB-INF/");
        // Bit 3: sizes follow the data, so the next header is found by searching for its signature.
        pos = if flags & 0x0008 != 0 || size == u32::MAX {
            match memmem::find(head.get(data_at..).unwrap_or_default(), LOCAL_HEADER) {
                Some(i) => data_at + i,
                None => break,
            }
        } else {
            data_at.saturating_add(size as usize)
        };
    }
    match (war, jar) {
        (true, _) => F::WebApplicationArchive,
        (false, true) => F::JavaArchive,
        _ => F::Zip,
    }
}

fn zip_member_by_entry(name: &[u8]) -> Option<F> {
    Some(if name.starts_with(b"word/") {
        F::OfficeOpenXmlDocument
    } else if name.starts_with(b"xl/") {
        F::OfficeOpenXmlSpreadsheet
    } else if name.starts_with(b"ppt/") {
        F::OfficeOpenXmlPresentation
    } else if name.starts_with(b"visio/") {
        F::OfficeOpenXmlDrawing
    } else if name == b"AndroidManifest.xml" {
        F::AndroidPackage
    } else if name == b"AppxManifest.xml" {
        F::WindowsAppPackage
    } else if name == b"AppxMetadata/AppxBundleManifest.xml" {
        F::WindowsAppBundle
    } else if name == b"extension.vsixmanifest" {
        F::MicrosoftVisualStudioExtension
    } else {
        return None;
    })
}

/// The ZIP-based format whose MIME type a `mimetype` entry holds (OpenDocument, EPUB, OpenRaster, …).
fn zip_member_by_media_type(media_type: &str) -> Option<F> {
    F::from_media_type(media_type.trim())
        .iter()
        .copied()
        .find(|&f| crate::curated::Family::of(f) == Some(crate::curated::Family::Zip))
}

/// A CLSID as the bytes a compound file stores (the first three fields little-endian).
const fn clsid(d1: u32, d2: u16, d3: u16, d4: [u8; 8]) -> [u8; 16] {
    let a = d1.to_le_bytes();
    let b = d2.to_le_bytes();
    let c = d3.to_le_bytes();
    [
        a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d4[0], d4[1], d4[2], d4[3], d4[4], d4[5],
        d4[6], d4[7],
    ]
}

const OLE_TAIL: [u8; 8] = [0xC0, 0, 0, 0, 0, 0, 0, 0x46];

/// Root storage CLSIDs of the compound files that matter on Windows volumes.
const ROOT_CLSIDS: &[([u8; 16], F)] = &[
    (clsid(0x0002_0906, 0, 0, OLE_TAIL), F::MicrosoftWordDocument),
    (clsid(0x0002_0900, 0, 0, OLE_TAIL), F::MicrosoftWordDocument),
    (
        clsid(0x0002_0820, 0, 0, OLE_TAIL),
        F::MicrosoftExcelSpreadsheet,
    ),
    (
        clsid(0x0002_0810, 0, 0, OLE_TAIL),
        F::MicrosoftExcelSpreadsheet,
    ),
    (
        clsid(
            0x6481_8D10,
            0x4F9B,
            0x11CF,
            [0x86, 0xEA, 0x00, 0xAA, 0x00, 0xB9, 0x29, 0xE8],
        ),
        F::MicrosoftPowerpointPresentation,
    ),
    (
        clsid(
            0xEA7B_AE70,
            0xFB3B,
            0x11CD,
            [0xA9, 0x03, 0x00, 0xAA, 0x00, 0x51, 0x0E, 0xA3],
        ),
        F::MicrosoftPowerpointPresentation,
    ),
    (
        clsid(0x000C_1084, 0, 0, OLE_TAIL),
        F::MicrosoftSoftwareInstaller,
    ),
    (clsid(0x0002_1A14, 0, 0, OLE_TAIL), F::MicrosoftVisioDrawing),
    (clsid(0x0002_1A13, 0, 0, OLE_TAIL), F::MicrosoftVisioDrawing),
    (
        clsid(0x0002_1201, 0, 0, OLE_TAIL),
        F::MicrosoftPublisherDocument,
    ),
    (
        clsid(
            0x74B7_8F3A,
            0xC8C8,
            0x11D1,
            [0xBE, 0x11, 0x00, 0xC0, 0x4F, 0xB6, 0xFA, 0xF1],
        ),
        F::MicrosoftProjectPlan,
    ),
];

/// Stream names that give an Office file away when its root CLSID is not set.
const STREAM_NAMES: &[(&str, F)] = &[
    ("WordDocument", F::MicrosoftWordDocument),
    ("Workbook", F::MicrosoftExcelSpreadsheet),
    ("Book", F::MicrosoftExcelSpreadsheet),
    ("PowerPoint Document", F::MicrosoftPowerpointPresentation),
];

const DIRECTORY_ENTRY: usize = 128;

/// An OLE compound file: the header gives the sector size (offset 0x1E) and the first directory sector
/// (0x30); when that sector lies in the head, the root entry's CLSID (entry offset 0x50) or a stream name
/// names the format. Otherwise, or for other CLSIDs, it stays a compound file.
fn ole(head: &[u8]) -> F {
    let (Some(shift), Some(first)) = (u16_at(head, 0x1E), u32_at(head, 0x30)) else {
        return F::CompoundFileBinary;
    };
    if shift != 9 && shift != 12 {
        return F::CompoundFileBinary;
    }
    let sector = 1usize << shift;
    // The header takes sector "-1": sector n starts at (n + 1) * size.
    let Some(start) = (first as usize)
        .checked_add(1)
        .and_then(|n| n.checked_mul(sector))
    else {
        return F::CompoundFileBinary;
    };
    let Some(directory) = head.get(start..) else {
        return F::CompoundFileBinary;
    };
    let directory = &directory[..directory.len().min(sector)];
    if let Some(root_clsid) = directory.get(0x50..0x60) {
        if let Some(&(_, f)) = ROOT_CLSIDS.iter().find(|(c, _)| c.as_slice() == root_clsid) {
            return f;
        }
    }
    for entry in directory.chunks_exact(DIRECTORY_ENTRY) {
        let len = usize::from(u16_at(entry, 0x40).unwrap_or(0)).min(64);
        let name = &entry[..len];
        for &(stream, f) in STREAM_NAMES {
            // The name is UTF-16LE with a terminating NUL, counted in `len`.
            if len == (stream.len() + 1) * 2
                && stream
                    .bytes()
                    .zip(name.chunks_exact(2))
                    .all(|(c, u)| u == [c, 0])
            {
                return f;
            }
        }
    }
    F::CompoundFileBinary
}

/// An ID3v2 tag (10-byte header, 28-bit "syncsafe" size at 6, footer flag 0x10) before the audio: FLAC when
/// `fLaC` follows it, else MP3, which ID3v2 was made for and which file(1) also calls `audio/mpeg`.
fn id3(head: &[u8]) -> F {
    let tag_end = head.get(6..10).map(|s| {
        let size = s
            .iter()
            .fold(0usize, |acc, &b| (acc << 7) | usize::from(b & 0x7F));
        let footer = if head[5] & 0x10 != 0 { 10 } else { 0 };
        10 + size + footer
    });
    match tag_end.and_then(|at| head.get(at..at + 4)) {
        Some(b"fLaC") => F::FreeLosslessAudioCodec,
        _ => F::Mpeg12AudioLayer3,
    }
}

/// An EBML header names its document type (element 0x4282) in its first bytes: `webm` or `matroska`.
fn ebml(head: &[u8]) -> F {
    let header = &head[..head.len().min(64)];
    let Some(at) = memmem::find(header, b"\x42\x82") else {
        return F::ExtensibleBinaryMetaLanguage;
    };
    let doc_type = &header[at + 2..];
    if memmem::find(doc_type, b"webm").is_some() {
        F::Webm
    } else if memmem::find(doc_type, b"matroska").is_some() {
        F::MatroskaVideo
    } else {
        F::ExtensibleBinaryMetaLanguage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MS-DOS header whose `e_lfanew` points at `new_header` placed at 0x80.
    fn mz_image(new_header: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; 0x80];
        h[..2].copy_from_slice(b"MZ");
        h[0x3C..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        h.extend_from_slice(new_header);
        h
    }

    fn pe(characteristics: u16) -> Vec<u8> {
        let mut coff = b"PE\0\0".to_vec();
        coff.extend_from_slice(&[0x64, 0x86]); // machine: x86-64
        coff.extend_from_slice(&[0; 16]);
        coff.extend_from_slice(&characteristics.to_le_bytes());
        mz_image(&coff)
    }

    #[test]
    fn pe_exe_or_dll_from_characteristics() {
        assert_eq!(mz(&pe(0x0022)), F::PortableExecutable);
        assert_eq!(mz(&pe(0x2022)), F::DynamicLinkLibrary);
        assert_eq!(mz(&mz_image(b"NE\x05\x0a")), F::NewExecutable);
        assert_eq!(mz(&mz_image(b"LX\0\0")), F::LinearExecutable);
        assert_eq!(mz(&mz_image(b"junk")), F::MsDosExecutable);
        // e_lfanew past the head, or cut before the characteristics: a DOS program as far as the head shows.
        let mut far = pe(0x2022);
        far[0x3C..0x40].copy_from_slice(&0x10_0000u32.to_le_bytes());
        assert_eq!(mz(&far), F::MsDosExecutable);
        assert_eq!(mz(&pe(0x2022)[..0x90]), F::MsDosExecutable);
        assert_eq!(mz(b"MZ"), F::MsDosExecutable);
    }

    /// A ZIP of stored entries, as zip tools write them.
    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut z = Vec::new();
        for (name, data) in entries {
            z.extend_from_slice(LOCAL_HEADER);
            z.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            z.extend_from_slice(&(data.len() as u32).to_le_bytes());
            z.extend_from_slice(&(data.len() as u32).to_le_bytes());
            z.extend_from_slice(&(name.len() as u16).to_le_bytes());
            z.extend_from_slice(&0u16.to_le_bytes());
            z.extend_from_slice(name.as_bytes());
            z.extend_from_slice(data);
        }
        z
    }

    #[test]
    fn zip_members() {
        let ooxml = |dir: &str| {
            zip_of(&[
                ("[Content_Types].xml", b"<Types/>"),
                ("_rels/.rels", b"<Relationships/>"),
                (&format!("{dir}/x.xml"), b"<x/>"),
            ])
        };
        assert_eq!(zip(&ooxml("word")), F::OfficeOpenXmlDocument);
        assert_eq!(zip(&ooxml("xl")), F::OfficeOpenXmlSpreadsheet);
        assert_eq!(zip(&ooxml("ppt")), F::OfficeOpenXmlPresentation);
        assert_eq!(zip(&ooxml("docProps")), F::Zip);
        let odt = zip_of(&[
            ("mimetype", b"application/vnd.oasis.opendocument.text"),
            ("content.xml", b""),
        ]);
        assert_eq!(zip(&odt), F::OpendocumentText);
        let ods = zip_of(&[(
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        )]);
        assert_eq!(zip(&ods), F::OpendocumentSpreadsheet);
        assert_eq!(
            zip(&zip_of(&[("mimetype", b"application/epub+zip")])),
            F::ElectronicPublication
        );
        assert_eq!(zip(&zip_of(&[("mimetype", b"text/plain")])), F::Zip);
        let jar = zip_of(&[
            ("META-INF/", b""),
            ("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\n"),
        ]);
        assert_eq!(zip(&jar), F::JavaArchive);
        let apk = zip_of(&[
            ("META-INF/MANIFEST.MF", b""),
            ("AndroidManifest.xml", b"\x03\0"),
        ]);
        assert_eq!(zip(&apk), F::AndroidPackage);
        assert_eq!(
            zip(&zip_of(&[("AppxManifest.xml", b"<Package/>")])),
            F::WindowsAppPackage
        );
        assert_eq!(
            zip(&zip_of(&[("WEB-INF/web.xml", b"")])),
            F::WebApplicationArchive
        );
        assert_eq!(zip(&zip_of(&[("hello.txt", b"hi")])), F::Zip);
        // A header cut by the end of the head, or a size pointing past it: what was seen decides.
        assert_eq!(zip(&ooxml("word")[..40]), F::Zip);
        assert_eq!(zip(b"PK\x03\x04"), F::Zip);
    }

    #[test]
    fn zip_with_data_descriptors_is_searched() {
        // Bit 3 set and sizes zero (streamed zips, Java's jar tool): the next header is found by its signature.
        let mut z = zip_of(&[("a.txt", b"hello"), ("word/document.xml", b"<w/>")]);
        z[6] = 0x08;
        z[18..26].fill(0);
        assert_eq!(zip(&z), F::OfficeOpenXmlDocument);
    }

    /// A version 3 compound file whose directory is sector `dir_sector`, holding a root entry with `root`'s
    /// CLSID and one stream named `stream`.
    fn ole_file(dir_sector: u32, root: [u8; 16], stream: &str) -> Vec<u8> {
        let mut f = vec![0u8; 512 * (dir_sector as usize + 2)];
        f[..8].copy_from_slice(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]);
        f[0x1E..0x20].copy_from_slice(&9u16.to_le_bytes());
        f[0x30..0x34].copy_from_slice(&dir_sector.to_le_bytes());
        let dir = 512 * (dir_sector as usize + 1);
        let mut name = |at: usize, s: &str| {
            for (i, u) in s.encode_utf16().enumerate() {
                f[at + 2 * i..at + 2 * i + 2].copy_from_slice(&u.to_le_bytes());
            }
            f[at + 0x40..at + 0x42].copy_from_slice(&(((s.len() + 1) * 2) as u16).to_le_bytes());
        };
        name(dir, "Root Entry");
        name(dir + DIRECTORY_ENTRY, stream);
        f[dir + 0x50..dir + 0x60].copy_from_slice(&root);
        f
    }

    #[test]
    fn ole_by_clsid_or_stream_name() {
        let word = clsid(0x0002_0906, 0, 0, OLE_TAIL);
        let msi = clsid(0x000C_1084, 0, 0, OLE_TAIL);
        assert_eq!(ole(&ole_file(1, word, "x")), F::MicrosoftWordDocument);
        assert_eq!(ole(&ole_file(1, msi, "x")), F::MicrosoftSoftwareInstaller);
        assert_eq!(
            ole(&ole_file(3, [0; 16], "Workbook")),
            F::MicrosoftExcelSpreadsheet
        );
        assert_eq!(
            ole(&ole_file(1, [0; 16], "PowerPoint Document")),
            F::MicrosoftPowerpointPresentation
        );
        assert_eq!(ole(&ole_file(1, [0; 16], "Other")), F::CompoundFileBinary);
        // The directory past the head: only "a compound file" is known.
        assert_eq!(ole(&ole_file(9, word, "x")[..4096]), F::CompoundFileBinary);
        let mut far = ole_file(1, word, "x");
        far[0x30..0x34].copy_from_slice(&(u32::MAX - 1).to_le_bytes());
        assert_eq!(ole(&far), F::CompoundFileBinary);
    }

    #[test]
    fn id3_then_audio() {
        let mut tag = b"ID3\x04\0\0\0\0\0\x0A".to_vec();
        tag.extend_from_slice(&[0; 10]);
        let mut flac = tag.clone();
        flac.extend_from_slice(b"fLaC\0\0\0\x22");
        assert_eq!(id3(&flac), F::FreeLosslessAudioCodec);
        tag.extend_from_slice(&[0xFF, 0xFB, 0x90, 0x64]);
        assert_eq!(id3(&tag), F::Mpeg12AudioLayer3);
        assert_eq!(id3(b"ID3\x03"), F::Mpeg12AudioLayer3);
    }

    #[test]
    fn ebml_doc_type() {
        let header = |doc: &[u8]| {
            let mut h = vec![
                0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01, 0x42, 0x82,
            ];
            h.push(0x80 | doc.len() as u8);
            h.extend_from_slice(doc);
            h
        };
        assert_eq!(ebml(&header(b"webm")), F::Webm);
        assert_eq!(ebml(&header(b"matroska")), F::MatroskaVideo);
        assert_eq!(ebml(&header(b"other")), F::ExtensibleBinaryMetaLanguage);
    }
}
