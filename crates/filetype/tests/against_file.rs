//! uffs-filetype against file(1): real formats written by the tools a clean machine has after
//! scripts/setup.sh (gzip, xz, tar, Python's zipfile/sqlite3/zlib/wave/bz2, the MinGW-w64 compiler, this test's
//! own ELF binary), plus a few formats no installed tool writes, built here byte by byte (GIF, BMP, JPEG, OLE
//! compound files, a minimal PDF, text in several encodings). For each, the MIME type of [`detect`] must be
//! `file --mime-type -b`'s, except where the two legitimately differ: those are listed in `EXCEPTIONS`, with
//! file(1)'s answer checked too, so the list stays true.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use uffs_filetype::{detect, mismatch, HEAD_BYTES};

/// Where file(1) and uffs-filetype differ, and why: (sample, uffs's MIME type, file(1)'s).
const EXCEPTIONS: &[(&str, &str, &str)] = &[
    // file(1) refines ELF by e_type and the dynamic section (PIE, shared library, core); uffs has one `elf`.
    (
        "elf",
        "application/x-executable",
        "application/x-pie-executable",
    ),
    // file(1) calls UTF-16 text without a byte order mark data; Windows writes it, so uffs reads it as text.
    ("utf16le.txt", "text/plain", "application/octet-stream"),
    // file(1) classifies text by content (JSON, C); uffs reports text without a signature as text/plain.
    ("a.json", "text/plain", "application/json"),
    ("a.c", "text/plain", "text/x-c"),
    // file(1) names an MSI from its SummaryInformation stream, which this hand-made one lacks; uffs goes by the
    // root storage's CLSID.
    ("a.msi", "application/x-msi", "application/x-ole-storage"),
];

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("uffs-filetype-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn run(dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e} (scripts/setup.sh installs it)"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Formats Python's standard library writes: ZIP and the formats stored in one, SQLite, PNG (zlib), WAV, bzip2.
const PYTHON: &str = r#"
import bz2, sqlite3, struct, wave, zipfile, zlib

with zipfile.ZipFile('plain.zip', 'w') as z:
    z.writestr('hello.txt', 'hello')

def ooxml(path, part):
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('[Content_Types].xml', '<?xml version="1.0"?><Types/>')
        z.writestr('_rels/.rels', '<?xml version="1.0"?><Relationships/>')
        z.writestr(part, '<?xml version="1.0"?><x/>')
ooxml('a.docx', 'word/document.xml')
ooxml('a.xlsx', 'xl/workbook.xml')
ooxml('a.pptx', 'ppt/presentation.xml')

# As the jar tool writes it: a first entry META-INF/ with the 0xCAFE extra field.
with zipfile.ZipFile('a.jar', 'w') as z:
    first = zipfile.ZipInfo('META-INF/')
    first.extra = b'\xfe\xca\x00\x00'
    z.writestr(first, '')
    z.writestr('META-INF/MANIFEST.MF', 'Manifest-Version: 1.0\r\n')
with zipfile.ZipFile('a.apk', 'w') as z:
    z.writestr('AndroidManifest.xml', b'\x03\x00\x08\x00')
    z.writestr('classes.dex', b'dex\n035\x00')

def stored_mimetype_first(path, mimetype, other):
    with zipfile.ZipFile(path, 'w') as z:
        z.writestr(zipfile.ZipInfo('mimetype'), mimetype)
        z.writestr(other, '<?xml version="1.0"?><x/>')
stored_mimetype_first('a.odt', 'application/vnd.oasis.opendocument.text', 'content.xml')
stored_mimetype_first('a.ods', 'application/vnd.oasis.opendocument.spreadsheet', 'content.xml')
stored_mimetype_first('a.epub', 'application/epub+zip', 'META-INF/container.xml')

db = sqlite3.connect('a.sqlite')
db.execute('create table t(x)')
db.commit()
db.close()

def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
rows = b''.join(b'\x00' + b'\xff\x00\x00' * 4 for _ in range(4))
with open('a.png', 'wb') as f:
    f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 4, 4, 8, 2, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))

w = wave.open('a.wav', 'wb')
w.setnchannels(1)
w.setsampwidth(2)
w.setframerate(8000)
w.writeframes(b'\x00\x01' * 800)
w.close()

with open('a.bz2', 'wb') as f:
    f.write(bz2.compress(b'hello world\n' * 50))
"#;

/// A version 3 OLE compound file: header, one FAT sector, one directory sector with the root entry (`clsid`)
/// and, if given, one empty stream.
fn compound_file(clsid: [u8; 16], stream: Option<&str>) -> Vec<u8> {
    let mut f = vec![0u8; 512 * 3];
    f[..8].copy_from_slice(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]);
    let le16 = |f: &mut Vec<u8>, at: usize, v: u16| f[at..at + 2].copy_from_slice(&v.to_le_bytes());
    let le32 = |f: &mut Vec<u8>, at: usize, v: u32| f[at..at + 4].copy_from_slice(&v.to_le_bytes());
    le16(&mut f, 0x18, 0x3E); // minor version
    le16(&mut f, 0x1A, 3); // major version
    le16(&mut f, 0x1C, 0xFFFE); // byte order
    le16(&mut f, 0x1E, 9); // 512-byte sectors
    le16(&mut f, 0x20, 6); // 64-byte mini sectors
    le32(&mut f, 0x2C, 1); // one FAT sector
    le32(&mut f, 0x30, 1); // directory at sector 1
    le32(&mut f, 0x38, 0x1000); // mini stream cutoff
    le32(&mut f, 0x3C, 0xFFFF_FFFE); // no mini FAT
    le32(&mut f, 0x44, 0xFFFF_FFFE); // no DIFAT sectors
    le32(&mut f, 0x4C, 0); // the FAT is sector 0
    for i in 1..109 {
        le32(&mut f, 0x4C + 4 * i, 0xFFFF_FFFF);
    }
    // FAT: sector 0 is the FAT, sector 1 the directory's only sector, the rest free.
    le32(&mut f, 512, 0xFFFF_FFFD);
    le32(&mut f, 516, 0xFFFF_FFFE);
    for i in 2..128 {
        le32(&mut f, 512 + 4 * i, 0xFFFF_FFFF);
    }
    let entry = |f: &mut Vec<u8>, at: usize, name: &str, kind: u8, child: u32| {
        for (i, u) in name.encode_utf16().enumerate() {
            f[at + 2 * i..at + 2 * i + 2].copy_from_slice(&u.to_le_bytes());
        }
        f[at + 0x40..at + 0x42].copy_from_slice(&(((name.len() + 1) * 2) as u16).to_le_bytes());
        f[at + 0x42] = kind;
        f[at + 0x43] = 1; // black
        for link in [0x44, 0x48] {
            f[at + link..at + link + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        }
        f[at + 0x4C..at + 0x50].copy_from_slice(&child.to_le_bytes());
        f[at + 0x74..at + 0x78].copy_from_slice(&0xFFFF_FFFEu32.to_le_bytes());
    };
    entry(
        &mut f,
        1024,
        "Root Entry",
        5,
        if stream.is_some() { 1 } else { u32::MAX },
    );
    f[1024 + 0x50..1024 + 0x60].copy_from_slice(&clsid);
    if let Some(name) = stream {
        entry(&mut f, 1024 + 128, name, 2, u32::MAX);
    }
    for unused in 1 + usize::from(stream.is_some())..4 {
        let at = 1024 + 128 * unused;
        for link in [0x44, 0x48, 0x4C] {
            f[at + link..at + link + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        }
    }
    f
}

/// A CLSID as a compound file stores it.
fn clsid(d1: u32, d2: u16, d3: u16, d4: [u8; 8]) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..4].copy_from_slice(&d1.to_le_bytes());
    c[4..6].copy_from_slice(&d2.to_le_bytes());
    c[6..8].copy_from_slice(&d3.to_le_bytes());
    c[8..].copy_from_slice(&d4);
    c
}

fn utf16(s: &str, bom: bool, big_endian: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for u in (bom.then_some(0xFEFF)).into_iter().chain(s.encode_utf16()) {
        out.extend_from_slice(&if big_endian {
            u.to_be_bytes()
        } else {
            u.to_le_bytes()
        });
    }
    out
}

/// Writes every sample into `dir`; returns their names.
fn write_samples(dir: &Path) -> Vec<String> {
    let text = "hello world\nThe quick brown fox jumps over the lazy dog.\n".repeat(20);
    let office_tail = [0xC0, 0, 0, 0, 0, 0, 0, 0x46];
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("a.txt", text.clone().into_bytes()),
        ("utf8.txt", "na\u{ef}ve caf\u{e9} \u{4e16}\u{754c}\n".repeat(10).into_bytes()),
        ("latin1.txt", b"na\xefve caf\xe9 r\xe9sum\xe9\n".repeat(10)),
        ("utf8bom.txt", [b"\xEF\xBB\xBF".as_slice(), text.as_bytes()].concat()),
        ("utf16le-bom.txt", utf16(&text, true, false)),
        ("utf16be-bom.txt", utf16(&text, true, true)),
        ("utf16le.txt", utf16(&text, false, false)),
        ("a.json", br#"{"name": "uffs", "list": [1, 2, 3], "nested": {"ok": true}}"#.to_vec()),
        ("a.c", b"#include <stdio.h>\nint main(void)\n{\n    printf(\"hi\\n\");\n    return 0;\n}\n".to_vec()),
        ("a.sh", b"#!/bin/sh\necho hello\n".to_vec()),
        ("a.html", b"<!DOCTYPE html>\n<html><head><title>t</title></head><body>hi</body></html>\n".to_vec()),
        ("a.xml", b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<root><a>1</a></root>\n".to_vec()),
        (
            "a.svg",
            b"<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1\" height=\"1\"/>\n".to_vec(),
        ),
        (
            "a.pdf",
            b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n\
              trailer<</Root 1 0 R>>\n%%EOF\n"
                .to_vec(),
        ),
        (
            "a.gif",
            b"GIF89a\x01\0\x01\0\x80\0\0\0\0\0\xff\xff\xff!\xf9\x04\x01\0\0\0\0,\0\0\0\0\x01\0\x01\0\0\x02\x02D\x01\0;"
                .to_vec(),
        ),
        ("a.bmp", bmp()),
        ("a.jpg", jpeg()),
        ("a.doc", compound_file(clsid(0x0002_0906, 0, 0, office_tail), Some("WordDocument"))),
        ("a.msi", compound_file(clsid(0x000C_1084, 0, 0, office_tail), None)),
        ("a.ole", compound_file([0; 16], None)),
        ("m.c", b"int main(void) { return 0; }\n".to_vec()),
        ("d.c", b"__declspec(dllexport) int f(void) { return 1; }\n".to_vec()),
    ];
    for (name, bytes) in &files {
        fs::write(dir.join(name), bytes).unwrap();
    }
    fs::write(dir.join("samples.py"), PYTHON).unwrap();
    run(dir, "python3", &["samples.py"]);
    run(dir, "gzip", &["-k", "-n", "a.txt"]);
    run(dir, "xz", &["-k", "a.txt"]);
    run(dir, "tar", &["cf", "a.tar", "a.txt", "a.html"]);
    run(
        dir,
        "x86_64-w64-mingw32-gcc",
        &["-O1", "-o", "a.exe", "m.c"],
    );
    run(
        dir,
        "x86_64-w64-mingw32-gcc",
        &["-shared", "-o", "a.dll", "d.c"],
    );
    let mut names: Vec<String> = files
        .iter()
        .map(|(n, _)| n.to_string())
        .filter(|n| !n.ends_with(".c") || n == "a.c")
        .collect();
    names.extend(
        [
            "plain.zip",
            "a.docx",
            "a.xlsx",
            "a.pptx",
            "a.jar",
            "a.apk",
            "a.odt",
            "a.ods",
            "a.epub",
            "a.sqlite",
            "a.png",
            "a.wav",
            "a.bz2",
            "a.txt.gz",
            "a.txt.xz",
            "a.tar",
            "a.exe",
            "a.dll",
        ]
        .map(String::from),
    );
    names
}

/// A 2x2 24-bit BMP.
fn bmp() -> Vec<u8> {
    let pixels = 2 * 8; // two rows of 6 bytes padded to 8
    let mut b = b"BM".to_vec();
    b.extend_from_slice(&(54u32 + pixels).to_le_bytes());
    b.extend_from_slice(&[0, 0, 0, 0]);
    b.extend_from_slice(&54u32.to_le_bytes());
    b.extend_from_slice(&40u32.to_le_bytes()); // BITMAPINFOHEADER
    b.extend_from_slice(&2i32.to_le_bytes());
    b.extend_from_slice(&2i32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&24u16.to_le_bytes());
    b.extend_from_slice(&[0; 4]); // BI_RGB
    b.extend_from_slice(&pixels.to_le_bytes());
    b.extend_from_slice(&[0x13, 0x0B, 0, 0, 0x13, 0x0B, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(&[0xFF; 16]);
    b
}

/// The start of a baseline JFIF file (SOI, APP0), which is what signatures look at.
fn jpeg() -> Vec<u8> {
    let mut j = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
    j.extend_from_slice(b"JFIF\0\x01\x01\x00\x00\x01\x00\x01\x00\x00");
    j.extend_from_slice(&[0xFF, 0xD9]);
    j
}

fn head(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(HEAD_BYTES);
    fs::File::open(path)
        .unwrap()
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut buf)
        .unwrap();
    buf
}

#[test]
fn mime_types_agree_with_file() {
    let tmp = TempDir::new("mime");
    let dir = &tmp.0;
    let mut samples: Vec<(String, PathBuf)> = write_samples(dir)
        .into_iter()
        .map(|n| (n.clone(), dir.join(n)))
        .collect();
    // ELF: this test's own binary.
    samples.push(("elf".into(), std::env::current_exe().unwrap()));

    let paths: Vec<&Path> = samples.iter().map(|(_, p)| p.as_path()).collect();
    let out = Command::new("file")
        .args(["--mime-type", "-b"])
        .args(&paths)
        .output()
        .expect("file(1) (scripts/setup.sh installs it)");
    assert!(out.status.success());
    let theirs: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(theirs.len(), samples.len());

    let mut failures = Vec::new();
    let mut agreed = 0;
    for ((name, path), file_mime) in samples.iter().zip(&theirs) {
        let ours = detect(&head(path)).map_or("application/octet-stream", |t| t.mime());
        let ok = match EXCEPTIONS.iter().find(|(n, ..)| n == name) {
            Some(&(_, want_ours, want_theirs)) => ours == want_ours && file_mime == want_theirs,
            None => {
                agreed += 1;
                ours == file_mime
            }
        };
        println!("{name:16} uffs {ours:72} file {file_mime}");
        if !ok {
            failures.push(format!("{name}: uffs {ours}, file(1) {file_mime}"));
        }
    }
    println!(
        "{agreed} samples agree with file(1), {} documented exceptions",
        EXCEPTIONS.len()
    );
    assert!(
        failures.is_empty(),
        "disagreements:\n{}",
        failures.join("\n")
    );
    assert!(agreed >= 30, "only {agreed} samples compared");
}

#[test]
fn samples_carry_no_mismatch_and_renamed_ones_do() {
    let tmp = TempDir::new("mismatch");
    let dir = &tmp.0;
    for name in write_samples(dir) {
        let path = dir.join(&name);
        let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
        let size = fs::metadata(&path).unwrap().len();
        let ty = detect(&head(&path));
        assert_eq!(mismatch(ext, ty, size), None, "{name} ({ty:?})");
    }
    // The same bytes under a lying name.
    let exe = detect(&head(&dir.join("a.exe")));
    assert!(mismatch("jpg", exe, 1000).is_some());
    let docx = detect(&head(&dir.join("a.docx")));
    assert!(mismatch("txt", docx, 1000).is_some());
    assert_eq!(mismatch("zip", docx, 1000), None);
}
