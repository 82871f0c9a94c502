//! The volumes uffs reads (NTFS, FAT12/16/32, exFAT, ext2/3/4, XFS, Btrfs, HFS+, HFSX, APFS) that this system shows, for `uffs info` without a source
//! and `uffs volumes add --all`: a Windows PC's drive letters (GetLogicalDrives, GetDriveTypeW,
//! GetVolumeInformationW), or on Linux the block devices of /proc/partitions whose first sector is such a boot
//! sector.

/// A volume found, not yet opened.
#[derive(Debug, Clone)]
pub struct Found {
    /// What to pass as a source: `C:` or `/dev/sdb1`.
    pub spec: String,
    /// `fixed`, `removable` ...
    pub kind: &'static str,
    pub label: String,
    pub removable: bool,
    /// The file system, as the system (Windows) or the boot sector (Linux) names it.
    pub filesystem: String,
}

/// Every volume uffs reads that the system shows (removable ones too), in drive-letter order; and the devices
/// that could not be looked at (none on Windows, where the drives say their file system).
#[cfg(windows)]
pub fn volumes() -> (Vec<Found>, Vec<String>) {
    use uffs_mft::live::DriveKind;
    let found = uffs_mft::live::drives()
        .into_iter()
        .filter(|d| d.wanted(true))
        .map(|d| Found {
            spec: format!("{}:", d.letter),
            kind: d.kind.name(),
            removable: d.kind == DriveKind::Removable,
            filesystem: d.fs,
            label: d.label,
        })
        .collect();
    (found, Vec::new())
}

/// Every volume uffs reads that the system shows (removable ones too), in device order; and the devices this
/// user cannot read, so cannot tell.
#[cfg(unix)]
pub fn volumes() -> (Vec<Found>, Vec<String>) {
    use std::io::Read;
    let list = std::fs::read_to_string("/proc/partitions").unwrap_or_default();
    let (mut out, mut unreadable) = (Vec::new(), Vec::new());
    // "major minor #blocks name", after a header line.
    for name in list
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().nth(3))
    {
        let path = format!("/dev/{name}");
        let mut head = vec![0u8; uffs_fs::PROBE_LEN];
        let filesystem = match std::fs::File::open(&path) {
            Ok(f) => {
                let n = f.take(head.len() as u64).read(&mut head).unwrap_or(0);
                uffs_source::probe(&head[..n]).map(|(fs, _)| fs)
            }
            Err(e) => {
                if e.kind() == std::io::ErrorKind::PermissionDenied {
                    unreadable.push(path.clone());
                }
                None
            }
        };
        let Some(filesystem) = filesystem else {
            continue;
        };
        // A partition's `removable` flag is its disk's.
        let sys = std::fs::canonicalize(format!("/sys/class/block/{name}")).ok();
        let removable = sys.iter().any(|p| {
            [p.join("removable"), p.join("../removable")]
                .iter()
                .any(|f| std::fs::read_to_string(f).is_ok_and(|v| v.trim() == "1"))
        });
        out.push(Found {
            spec: path,
            kind: if removable { "removable" } else { "fixed" },
            label: String::new(),
            removable,
            filesystem: filesystem.name().to_string(),
        });
    }
    (out, unreadable)
}
