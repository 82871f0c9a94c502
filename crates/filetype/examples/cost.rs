//! What detection costs per file, next to reading the file's head. Prints figures; asserts nothing.
//!
//! ```text
//! cargo run --release -p uffs-filetype --example cost            # a mixed sample made in memory
//! cargo run --release -p uffs-filetype --example cost -- /usr    # the heads of real files (up to 50,000)
//! ```
//!
//! For real files it reads each head twice through the OS (open, read HEAD_BYTES, close) and reports the
//! second, page-cache-warm pass: a floor for what reading costs, which the content reader will not beat by
//! much per file. Then it times `detect` over the heads already in memory, the crate's signatures alone, and
//! the text check alone, several rounds each, on one core.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use uffs_filetype::{detect, mismatch, text_encoding, HEAD_BYTES};

const MAX_FILES: usize = 50_000;
const ROUNDS: usize = 5;

fn main() {
    let roots: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let (heads, names, read_ns) = if roots.is_empty() {
        let heads = synthetic();
        let names = vec![String::new(); heads.len()];
        (heads, names, None)
    } else {
        let mut paths = Vec::new();
        for root in &roots {
            walk(root, &mut paths);
        }
        paths.truncate(MAX_FILES);
        read_heads(&paths);
        let start = Instant::now();
        let heads = read_heads(&paths);
        let read_ns = start.elapsed().as_nanos() as f64 / paths.len().max(1) as f64;
        let names = paths
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        (heads, names, Some(read_ns))
    };
    let n = heads.len();
    let bytes: usize = heads.iter().map(Vec::len).sum();
    println!(
        "{n} files, {:.1} MiB of heads (at most {HEAD_BYTES} bytes each)",
        bytes as f64 / 1048576.0
    );

    let per_file = |f: &dyn Fn(&[u8]) -> usize| {
        let mut best = f64::MAX;
        let mut sink = 0;
        for _ in 0..ROUNDS {
            let start = Instant::now();
            for h in &heads {
                sink += f(h);
            }
            best = best.min(start.elapsed().as_nanos() as f64 / n as f64);
        }
        std::hint::black_box(sink);
        best
    };
    let detect_ns = per_file(&|h| detect(h).map_or(0, |t| t.name().len()));
    let crate_ns = per_file(&|h| file_format::FileFormat::from_bytes(h) as usize);
    let text_ns = per_file(&|h| text_encoding(h).is_some() as usize);
    println!("detect:                 {detect_ns:8.0} ns/file (best of {ROUNDS} rounds, one core)");
    println!("  crate signatures:     {crate_ns:8.0} ns/file");
    println!("  text check alone:     {text_ns:8.0} ns/file");
    if let Some(read_ns) = read_ns {
        println!("reading the head (warm): {read_ns:7.0} ns/file (open, read, close)");
        println!("detect / read:          {:8.3}", detect_ns / read_ns);
    }

    let mut by_type: BTreeMap<&str, usize> = BTreeMap::new();
    let mut mismatches = Vec::new();
    for (h, name) in heads.iter().zip(&names) {
        let ty = detect(h);
        *by_type
            .entry(ty.map_or("(none)", |t| t.name()))
            .or_default() += 1;
        let file = Path::new(name)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ext = file.rsplit_once('.').map_or("", |(_, e)| e);
        if !name.is_empty() && mismatch(ext, ty, h.len() as u64).is_some() {
            mismatches.push(format!(
                "{name} ({})",
                ty.map_or("no signature", |t| t.name())
            ));
        }
    }
    let mut counts: Vec<(usize, &str)> = by_type.into_iter().map(|(k, v)| (v, k)).collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: Vec<String> = counts
        .iter()
        .take(15)
        .map(|(c, t)| format!("{t} {c}"))
        .collect();
    println!("types: {}", top.join(", "));
    if !names[0].is_empty() {
        println!("mismatches: {}", mismatches.len());
        for m in mismatches.iter().take(20) {
            println!("  {m}");
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if out.len() >= MAX_FILES {
            return;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

fn read_heads(paths: &[PathBuf]) -> Vec<Vec<u8>> {
    paths
        .iter()
        .map(|p| {
            let mut buf = Vec::with_capacity(HEAD_BYTES);
            if let Ok(f) = fs::File::open(p) {
                let _ = f.take(HEAD_BYTES as u64).read_to_end(&mut buf);
            }
            buf
        })
        .collect()
}

/// 10,000 heads: text (UTF-8, 8-bit, UTF-16LE), PE, ELF, ZIP/Office, PNG, JPEG, gzip, PDF, zeros and noise.
fn synthetic() -> Vec<Vec<u8>> {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut noise = |len: usize| {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect::<Vec<u8>>()
    };
    let text = "fn main() { println!(\"hello, world\"); }\n"
        .repeat(100)
        .into_bytes();
    let utf16: Vec<u8> = "Windows writes UTF-16LE\r\n"
        .repeat(80)
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let mut pe = vec![0u8; 4096];
    pe[..2].copy_from_slice(b"MZ");
    pe[0x3C..0x40].copy_from_slice(&0x80u32.to_le_bytes());
    pe[0x80..0x84].copy_from_slice(b"PE\0\0");
    pe[0x96..0x98].copy_from_slice(&0x2022u16.to_le_bytes());
    let mut elf = b"\x7FELF\x02\x01\x01\0".to_vec();
    elf.resize(4096, 0);
    let mut docx = b"PK\x03\x04\x14\0\0\0\x08\0\0\0\0\0\0\0\0\0\x10\0\0\0\0\0\0\0\x13\0\0\0[Content_Types].xml".to_vec();
    docx.extend(noise(16));
    docx.extend_from_slice(
        b"PK\x03\x04\x14\0\0\0\x08\0\0\0\0\0\0\0\0\0\x04\0\0\0\0\0\0\0\x11\0\0\0word/document.xml",
    );
    docx.extend(noise(4000));
    let with = |magic: &[u8], rest: Vec<u8>| [magic, &rest].concat();
    let kinds: Vec<Vec<u8>> = vec![
        text.clone(),
        text[..300].to_vec(),
        b"caf\xe9 cr\xe8me br\xfbl\xe9e\n".repeat(50),
        utf16,
        pe,
        elf,
        docx,
        with(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", noise(4000)),
        with(b"\xFF\xD8\xFF\xE0\0\x10JFIF\0", noise(4000)),
        with(b"\x1F\x8B\x08\0", noise(4000)),
        with(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", noise(4000)),
        vec![0u8; 4096],
        noise(4096),
    ];
    (0..10_000)
        .map(|i| kinds[i % kinds.len()].clone())
        .collect()
}
