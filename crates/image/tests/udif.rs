//! UDIF (`.dmg`) images macOS made (keramics' test data, tests/data/mac-public): the disk each holds, decoded
//! through every chunk method (zlib, bzip2, ADC, LZFSE, LZMA), hashes as keramics' own tests say it does
//! (`keramics-formats/tests/udif.rs`: the md5 of the whole media), by `md5sum`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/mac-public")
        .join(name)
}

fn md5(bytes: &[u8]) -> String {
    let mut child = Command::new("md5sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("md5sum");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..32].to_string()
}

#[test]
fn each_chunk_method_decodes_the_disk_keramics_hashed() {
    for (method, want) in [
        ("adc", Some("08c32fd5d0fc1c2274d1c2d34185312a")),
        ("bzip2", Some("7ec785450bbc17de417be373fd5d2159")),
        ("lzfse", Some("c2c160c788676641725fd1a4b8da733b")),
        ("zlib", Some("399bfcc39637bde7e43eb86fcc8565ae")),
        // keramics states no hash for it: its HFS+ volume is checked against the others' in hfs_volumes.rs.
        ("lzma", None),
    ] {
        let path = data(&format!("keramics-hfsplus_{method}.dmg"));
        let image = uffs_image::container::open(&path)
            .unwrap()
            .expect("a UDIF image");
        assert!(
            image.describe().starts_with("UDIF (.dmg)"),
            "{}",
            image.describe()
        );
        let mut disk = vec![0u8; image.len() as usize];
        // Reads of odd sizes across chunk boundaries give what one whole read gives.
        image.read_at(&mut disk, 0).unwrap();
        let mut pieces = vec![0u8; disk.len()];
        for (i, piece) in pieces.chunks_mut(77_777).enumerate() {
            image.read_at(piece, i as u64 * 77_777).unwrap();
        }
        assert!(pieces == disk, "{method}");
        if let Some(want) = want {
            assert_eq!(md5(&disk), want, "{method}");
        }
    }
}

#[test]
fn a_damaged_trailer_or_chunk_is_an_error_naming_it() {
    let bytes = std::fs::read(data("keramics-hfsplus_zlib.dmg")).unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("udif-damage");
    std::fs::create_dir_all(&dir).unwrap();
    // The property list's offset past the end.
    let mut bad = bytes.clone();
    let k = bad.len() - 512;
    bad[k + 216..k + 224].copy_from_slice(&u64::MAX.to_be_bytes());
    let p = dir.join("bad-xml.dmg");
    std::fs::write(&p, &bad).unwrap();
    let e = uffs_image::container::open(&p).unwrap_err().to_string();
    assert!(e.contains("property list"), "{e}");
    // A compressed chunk's bytes overwritten: reading it is an error naming the chunk, the rest reads.
    let image = uffs_image::container::open(&data("keramics-hfsplus_zlib.dmg"))
        .unwrap()
        .unwrap();
    let mut whole = vec![0u8; image.len() as usize];
    image.read_at(&mut whole, 0).unwrap();
    let mut bad = bytes;
    bad[0..64].fill(0xAB);
    let p = dir.join("bad-chunk.dmg");
    std::fs::write(&p, &bad).unwrap();
    let image = uffs_image::container::open(&p).unwrap().unwrap();
    let mut disk = vec![0u8; image.len() as usize];
    let e = image.read_at(&mut disk, 0).unwrap_err().to_string();
    assert!(e.contains("zlib chunk of sectors"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
