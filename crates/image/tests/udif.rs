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

/// A `.sparseimage` written as keramics' format document lays it out (no public sample reached this machine):
/// `bands` of `band` bytes, stored in the order `order` gives (the disk's band numbers from 0), the rest left out.
fn sparseimage(disk: &[u8], band: usize, order: &[usize]) -> Vec<u8> {
    let mut out = vec![0u8; 4096];
    out[..4].copy_from_slice(b"sprs");
    out[4..8].copy_from_slice(&3u32.to_be_bytes());
    out[8..12].copy_from_slice(&((band / 512) as u32).to_be_bytes());
    out[12..16].copy_from_slice(&1u32.to_be_bytes());
    out[16..20].copy_from_slice(&((disk.len() / 512) as u32).to_be_bytes());
    for (i, &b) in order.iter().enumerate() {
        out[64 + 4 * i..68 + 4 * i].copy_from_slice(&(b as u32 + 1).to_be_bytes());
    }
    for &b in order {
        let piece = &disk[b * band..((b + 1) * band).min(disk.len())];
        out.extend_from_slice(piece);
        out.resize(out.len() + band - piece.len(), 0);
    }
    out
}

#[test]
fn apple_sparse_images_and_bundles_read_as_the_disk_they_hold() {
    let disk = std::fs::read(data("dfvfs-hfsplus.raw")).unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("apple-sparse");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let band = 64 * 1024;
    let bands = disk.len().div_ceil(band);
    // Bands written out of order, those all zeros never written: as macOS leaves them.
    let mut order: Vec<usize> = (0..bands)
        .filter(|&b| {
            disk[b * band..((b + 1) * band).min(disk.len())]
                .iter()
                .any(|&x| x != 0)
        })
        .collect();
    assert!(order.len() < bands, "some band is all zeros");
    order.reverse();
    let p = dir.join("hfsplus.sparseimage");
    std::fs::write(&p, sparseimage(&disk, band, &order)).unwrap();
    let b = dir.join("hfsplus.sparsebundle");
    std::fs::create_dir_all(b.join("bands")).unwrap();
    std::fs::write(
        b.join("Info.plist"),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n\t<key>CFBundleInfoDictionaryVersion</key>\n\t<string>6.0</string>\n\t<key>band-size</key>\n\t<integer>{band}</integer>\n\t<key>bundle-backingstore-version</key>\n\t<integer>1</integer>\n\t<key>diskimage-bundle-type</key>\n\t<string>com.apple.diskimage.sparsebundle</string>\n\t<key>size</key>\n\t<integer>{}</integer>\n</dict>\n</plist>\n",
            disk.len()
        ),
    )
    .unwrap();
    for &i in &order {
        // A band file holds what was written: the last one may be short.
        let piece = &disk[i * band..((i + 1) * band).min(disk.len())];
        std::fs::write(b.join("bands").join(format!("{i:x}")), piece).unwrap();
    }
    for (path, kind) in [(&p, "Apple sparse image"), (&b, "Apple sparse bundle")] {
        let image = uffs_image::container::open(path)
            .unwrap()
            .expect("an image");
        assert!(image.describe().starts_with(kind), "{}", image.describe());
        assert_eq!(image.len(), disk.len() as u64);
        let mut pieces = vec![0u8; disk.len()];
        for (i, piece) in pieces.chunks_mut(77_777).enumerate() {
            image.read_at(piece, i as u64 * 77_777).unwrap();
        }
        assert!(pieces == disk, "{kind}");
    }
    // Damage is named: a band stored past the file's end, a band twice.
    let mut bad = sparseimage(&disk, band, &order);
    bad.truncate(4096 + band);
    std::fs::write(&p, &bad).unwrap();
    let e = uffs_image::container::open(&p).unwrap_err().to_string();
    assert!(e.contains("past its end"), "{e}");
    let mut twice = order.clone();
    twice[1] = twice[0];
    std::fs::write(&p, sparseimage(&disk, band, &twice)).unwrap();
    let e = uffs_image::container::open(&p).unwrap_err().to_string();
    assert!(e.contains("twice"), "{e}");
    // An encrypted image is named as one, in either version's layout.
    let mut enc = b"encrcdsa".to_vec();
    enc.resize(8192, 7);
    std::fs::write(&p, &enc).unwrap();
    let e = uffs_image::container::open(&p).unwrap_err().to_string();
    assert!(e.contains("encrypted Apple disk image"), "{e}");
    let mut enc = vec![7u8; 8192];
    enc.extend_from_slice(b"cdsaencr");
    std::fs::write(&p, &enc).unwrap();
    let e = uffs_image::container::open(&p).unwrap_err().to_string();
    assert!(e.contains("encrypted Apple disk image"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
