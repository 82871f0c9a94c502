//! What every container target does with its input once made recognisable: written to a file of its own (a
//! container is opened by path), opened through `container::open`, described, and read at a few places.

/// Opens `bytes` as the container file `name` (its extension) and reads it at the start, a third and a half in,
/// and the end.
pub fn open_and_read(name: &str, bytes: &[u8]) {
    let dir = std::env::temp_dir().join(format!("uffs-fuzz-{name}-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("image.{name}"));
    if std::fs::write(&path, bytes).is_ok() {
        if let Ok(Some(image)) = uffs_image::container::open(&path) {
            let _ = image.describe();
            let len = image.len();
            let mut buf = vec![0u8; 64 << 10];
            for at in [0, len / 3, len / 2, len.saturating_sub(buf.len() as u64)] {
                let n = (buf.len() as u64).min(len - at.min(len)) as usize;
                let _ = image.read_at(&mut buf[..n], at);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
