//! Whether a source is a file system the kernel has mounted (Linux): a block device, or an image file behind a
//! loop device. uffs reads its tables raw, as the kernel last wrote them back to the disk, so a command says so:
//! changes made since through the mount may not show yet.
//!
//! The mount is found in the mount table (`uffs_walk::mounts`), by the device's number (`major:minor`) or, for a
//! FUSE mount (ntfs-3g, exfat-fuse), by its source (what is mounted); an image file by the loop devices whose
//! `backing_file` it is.

#[cfg(target_os = "linux")]
use std::path::{Path, PathBuf};

/// The mount point and file system type of `spec` (a path) when the kernel has it mounted.
#[cfg(target_os = "linux")]
pub fn mount_of(spec: &str) -> Option<(String, String)> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let path = std::fs::canonicalize(spec).ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    // The devices the source is: itself, or the loop devices an image file backs.
    let devices: Vec<(String, PathBuf)> = if meta.file_type().is_block_device() {
        let rdev = meta.rdev();
        vec![(
            format!("{}:{}", libc::major(rdev), libc::minor(rdev)),
            path.clone(),
        )]
    } else if meta.is_file() {
        // A loop device's backing file, or a FUSE mount's source (ntfs-3g and exfat-fuse open the file itself).
        let mut v = loop_devices_of(&path);
        v.push((String::new(), path.clone()));
        v
    } else {
        return None;
    };
    uffs_walk::mounts::table().into_iter().find_map(|m| {
        let same = devices
            .iter()
            .any(|(n, dev)| *n == m.device || Path::new(&m.source) == dev.as_path());
        same.then(|| (m.point.to_string_lossy().into_owned(), m.fstype))
    })
}

#[cfg(not(target_os = "linux"))]
pub fn mount_of(_spec: &str) -> Option<(String, String)> {
    None
}

/// The loop devices (`major:minor`, `/dev/loopN`) whose backing file is `file`.
#[cfg(target_os = "linux")]
fn loop_devices_of(file: &Path) -> Vec<(String, PathBuf)> {
    let Ok(dir) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("loop") {
                return None;
            }
            let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            if Path::new(backing.trim_end()) != file {
                return None;
            }
            let number = std::fs::read_to_string(e.path().join("dev")).ok()?;
            Some((number.trim().to_string(), PathBuf::from("/dev").join(name)))
        })
        .collect()
}

/// What a command says of a mounted source.
pub fn note(spec: &str, point: &str, fstype: &str) -> String {
    format!(
        "{spec} is mounted at {point} ({fstype}): uffs reads its tables as the kernel last wrote them back to the \
         disk, so changes made since may not show yet (run `sync` first for an answer as of now)"
    )
}
