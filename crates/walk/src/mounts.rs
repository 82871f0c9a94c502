//! The system's mount table, from `/proc/self/mountinfo`: which file system (its type and device) a folder is on,
//! by the mount id `statx` gives each entry.

use std::path::{Path, PathBuf};

/// One mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The kernel's id for it (`statx`'s `stx_mnt_id`).
    pub id: u64,
    /// Its file system's device number, `major:minor`.
    pub device: String,
    /// Where it is mounted.
    pub point: PathBuf,
    /// Its file system's type as the kernel names it: `ext4`, `btrfs`, `tmpfs`, `fuse.sshfs`, `nfs4`.
    pub fstype: String,
    /// What is mounted: a device (`/dev/sda2`), a share (`server:/export`) or a name (`tmpfs`).
    pub source: String,
    /// The folder of its file system mounted there (`/` unless a bind mount or a Btrfs subvolume).
    pub root: String,
}

impl Mount {
    /// The mount `path` (absolute, symlinks resolved) is on.
    pub fn of(path: &Path) -> Option<Mount> {
        let table = table();
        #[cfg(target_os = "linux")]
        if let Some(id) = crate::sys::mount_id(path) {
            if let Some(m) = table.iter().find(|m| m.id == id) {
                return Some(m.clone());
            }
        }
        // Without mount ids: the last mount whose point is the longest prefix (a later mount hides an earlier).
        table
            .into_iter()
            .rev()
            .filter(|m| path.starts_with(&m.point))
            .max_by_key(|m| m.point.as_os_str().len())
    }
}

/// Every mount of this process's view, in the table's order; empty where there is no such table.
pub fn table() -> Vec<Mount> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|t| parse(&t))
        .unwrap_or_default()
}

/// The lines of a `mountinfo` file: `ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER`.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split(' ').collect();
            let mut r = right.split(' ');
            Some(Mount {
                id: l.first()?.parse().ok()?,
                device: l.get(2)?.to_string(),
                root: unescape(l.get(3)?),
                point: PathBuf::from(unescape(l.get(4)?)),
                fstype: r.next()?.to_string(),
                source: unescape(r.next().unwrap_or("")),
            })
        })
        .collect()
}

/// A field with its spaces, tabs, newlines and backslashes as the kernel writes them (`\040`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], oct) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') << 6 | (d[1] - b'0') << 3 | (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines() {
        let t = "22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n\
                 29 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw\n\
                 61 29 0:40 /home /home rw shared:30 master:2 - btrfs /dev/sdb1 rw,subvol=/home\n\
                 70 29 0:50 / /mnt/my\\040disk rw - fuse.sshfs ana@host:/srv rw\n\
                 garbage\n";
        let m = parse(t);
        assert_eq!(m.len(), 4);
        assert_eq!(m[1].point, PathBuf::from("/"));
        assert_eq!(
            (m[1].fstype.as_str(), m[1].source.as_str()),
            ("ext4", "/dev/sda2")
        );
        assert_eq!((m[2].id, m[2].root.as_str()), (61, "/home"));
        assert_eq!(m[2].device, "0:40");
        assert_eq!(m[3].point, PathBuf::from("/mnt/my disk"));
        assert_eq!(unescape(r"/a\\b"), r"/a\\b");
        assert_eq!(m[3].fstype, "fuse.sshfs");
    }
}
