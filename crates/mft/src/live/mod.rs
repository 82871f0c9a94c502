//! Live volumes: a drive of the running Windows system (`C:`, `C:\`, `\\.\C:`, `\\?\Volume{GUID}\`, a shadow
//! copy's `\\?\GLOBALROOT\Device\HarddiskVolumeShadowCopyN`) read raw
//! through its volume device, with sector-aligned overlapped reads, several in flight, sized to the device.
//!
//! Only the open, the reads and the device and file-system controls differ from an image: past the open, a
//! live volume is read by the same code (boot sector, `$MFT` extents, `$MFT:$BITMAP`, the planned reads). The
//! names are parsed on every platform (so Linux tests check them); opening one is Windows only.

/// A live volume as named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSpec {
    /// The path that opens the raw volume: `\\.\C:`, `\\?\Volume{GUID}` or `\\.\PhysicalDriveN` (without a
    /// trailing backslash, which would open the volume's root folder instead).
    pub device: String,
    /// The drive letter (upper case), when the volume was named by one.
    pub letter: Option<char>,
}

/// Reads `spec` as a live volume name: `C:`, `C:\`, `\\.\C:`, `\\?\C:`, `\\?\Volume{GUID}[\]`,
/// `\\.\PhysicalDriveN` or `\\?\GLOBALROOT\Device\HarddiskVolumeShadowCopyN` (`/` is taken for `\`). `None`
/// for anything else: a path to an image or a device.
pub fn parse_spec(spec: &str) -> Option<LiveSpec> {
    let s = spec.replace('/', "\\");
    let (prefixed, rest) = match s.strip_prefix("\\\\.\\").or(s.strip_prefix("\\\\?\\")) {
        Some(rest) => (true, rest),
        None => (false, s.as_str()),
    };
    let rest = rest.strip_suffix('\\').unwrap_or(rest);
    let b = rest.as_bytes();
    if b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        let letter = char::from(b[0].to_ascii_uppercase());
        return Some(LiveSpec {
            device: format!("\\\\.\\{letter}:"),
            letter: Some(letter),
        });
    }
    if !prefixed {
        return None;
    }
    if let Some(guid) = rest
        .get(..7)
        .filter(|p| p.eq_ignore_ascii_case("Volume{"))
        .map(|_| &rest[7..])
        .and_then(|g| g.strip_suffix('}'))
    {
        let shape = guid.len() == 36
            && guid.bytes().enumerate().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => c == b'-',
                _ => c.is_ascii_hexdigit(),
            });
        return shape.then(|| LiveSpec {
            device: format!("\\\\?\\Volume{{{guid}}}"),
            letter: None,
        });
    }
    // A shadow copy's device as Windows names it (`vssadmin list shadows`, `uffs info C:`).
    const SHADOW: &str = "GLOBALROOT\\Device\\HarddiskVolumeShadowCopy";
    if let Some(n) = rest
        .get(..SHADOW.len())
        .filter(|p| p.eq_ignore_ascii_case(SHADOW))
        .map(|_| &rest[SHADOW.len()..])
    {
        return (!n.is_empty() && n.bytes().all(|c| c.is_ascii_digit())).then(|| LiveSpec {
            device: crate::vss::live::device_path(&format!(
                "\\Device\\HarddiskVolumeShadowCopy{n}"
            )),
            letter: None,
        });
    }
    let n = rest
        .get(..13)
        .filter(|p| p.eq_ignore_ascii_case("PhysicalDrive"))
        .map(|_| &rest[13..])?;
    (!n.is_empty() && n.bytes().all(|c| c.is_ascii_digit())).then(|| LiveSpec {
        device: format!("\\\\.\\PhysicalDrive{n}"),
        letter: None,
    })
}

/// The one line said when a live volume cannot be opened for want of rights.
pub fn privilege_message(name: &str) -> String {
    format!(
        "reading {name} needs an elevated process: run uffs from a terminal opened with \"Run as \
         administrator\" (or register it with `uffs volumes add` from one and start the daemon there; see \
         the README)"
    )
}

/// A drive letter the system has, and what it says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drive {
    pub letter: char,
    pub kind: DriveKind,
    /// The file system's name (`NTFS`, `FAT32`, `ReFS` ...); empty when the drive does not say (no media).
    pub fs: String,
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriveKind {
    Fixed,
    Removable,
    Network,
    CdRom,
    RamDisk,
    Unknown,
}

impl DriveKind {
    /// From `GetDriveTypeW`'s answer.
    pub fn from_drive_type(t: u32) -> DriveKind {
        match t {
            2 => DriveKind::Removable,
            3 => DriveKind::Fixed,
            4 => DriveKind::Network,
            5 => DriveKind::CdRom,
            6 => DriveKind::RamDisk,
            _ => DriveKind::Unknown,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DriveKind::Fixed => "fixed",
            DriveKind::Removable => "removable",
            DriveKind::Network => "network",
            DriveKind::CdRom => "cd-rom",
            DriveKind::RamDisk => "ram disk",
            DriveKind::Unknown => "unknown",
        }
    }
}

impl Drive {
    /// Whether `volumes add --all` takes it: a drive of a file system uffs reads (NTFS, FAT12/16, which Windows
    /// calls FAT, FAT32, exFAT) that is fixed, or removable when asked.
    pub fn wanted(&self, removable: bool) -> bool {
        self.readable()
            && (self.kind == DriveKind::Fixed || (removable && self.kind == DriveKind::Removable))
    }

    /// Whether its file system, as Windows names it, is one uffs reads.
    pub fn readable(&self) -> bool {
        ["NTFS", "FAT", "FAT32", "exFAT"]
            .iter()
            .any(|f| self.fs.eq_ignore_ascii_case(f))
    }
}

#[cfg(windows)]
pub use windows::{drives, LiveDevice, StopSignal};

#[cfg(windows)]
mod windows;

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(spec: &str) -> Option<(String, Option<char>)> {
        parse_spec(spec).map(|s| (s.device, s.letter))
    }

    #[test]
    fn drive_letters_in_every_spelling() {
        for s in [
            "C:",
            "c:",
            "C:\\",
            "C:/",
            "\\\\.\\C:",
            "\\\\?\\c:\\",
            "//./C:",
        ] {
            assert_eq!(dev(s), Some(("\\\\.\\C:".into(), Some('C'))), "{s}");
        }
    }

    #[test]
    fn volume_guids_and_physical_drives() {
        let g = "\\\\?\\Volume{0b1a3e4c-5d6f-11ee-9a2b-806e6f6e6963}\\";
        assert_eq!(
            dev(g),
            Some((g.trim_end_matches('\\').to_string(), None)),
            "the trailing backslash would open the root folder"
        );
        assert_eq!(
            dev("\\\\.\\PhysicalDrive0"),
            Some(("\\\\.\\PhysicalDrive0".into(), None))
        );
        let shadow = "\\\\?\\GLOBALROOT\\Device\\HarddiskVolumeShadowCopy12";
        assert_eq!(dev(shadow), Some((shadow.into(), None)));
        assert_eq!(
            dev("//./globalroot/device/harddiskvolumeshadowcopy3/"),
            Some((
                "\\\\?\\GLOBALROOT\\Device\\HarddiskVolumeShadowCopy3".into(),
                None
            ))
        );
    }

    #[test]
    fn all_takes_fixed_ntfs_fat_and_exfat_drives_and_removable_ones_when_asked() {
        let drive = |kind: u32, fs: &str| Drive {
            letter: 'C',
            kind: DriveKind::from_drive_type(kind),
            fs: fs.into(),
            label: String::new(),
        };
        assert!(drive(3, "NTFS").wanted(false));
        assert!(drive(3, "FAT32").wanted(false));
        assert!(drive(2, "exFAT").wanted(true));
        assert!(!drive(2, "exFAT").wanted(false));
        assert!(!drive(3, "ReFS").wanted(true));
        assert!(!drive(5, "CDFS").wanted(true));
        assert!(!drive(2, "NTFS").wanted(false));
        assert!(drive(2, "NTFS").wanted(true));
        assert!(
            !drive(4, "NTFS").wanted(true),
            "network drives are not read raw"
        );
        assert!(!drive(5, "").wanted(true));
    }

    #[test]
    fn paths_are_not_live_volumes() {
        for s in [
            "disk.img",
            "/dev/sdb1",
            "C:\\images\\disk.img",
            "C:disk.img",
            "CC:",
            "\\\\?\\Volume{not-a-guid}",
            "\\\\.\\PhysicalDrive",
            "\\\\?\\GLOBALROOT\\Device\\HarddiskVolumeShadowCopy",
            "\\\\?\\GLOBALROOT\\Device\\HarddiskVolume3",
            "\\\\server\\share",
            "",
        ] {
            assert_eq!(dev(s), None, "{s}");
        }
    }
}
