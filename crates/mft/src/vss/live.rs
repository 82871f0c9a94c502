//! The shadow copies of a live Windows volume as the system exposes them: devices named
//! `\\?\GLOBALROOT\Device\HarddiskVolumeShadowCopyN`, N a number the system gives in the order the copies were
//! made (since boot), unrelated to the store's place in the volume's catalog. Each is matched to its store by the
//! shadow copy's identifier, which both the catalog (the store header) and the device (its application
//! information) hold.
//!
//! Reading a live store through its device rather than through the volume's bytes gets it as the snapshot
//! driver sees it, with what it holds in memory and has not yet written to the store's file.
//!
//! The answers of the two controls are decoded on every platform, so that Linux tests check the decoding;
//! sending them is Windows only. (Public facts: the controls' codes and the shapes of `VOLSNAP_NAMES` and
//! `VOLSNAP_APPLICATION_INFO`, from the Windows DDK's `ntddsnap.h`.)

use std::io;

/// `IOCTL_VOLSNAP_QUERY_NAMES_OF_SNAPSHOTS`, sent to a volume: the device names of its shadow copies.
pub const QUERY_NAMES_OF_SNAPSHOTS: u32 = 0x0053_0018;
/// `IOCTL_VOLSNAP_QUERY_APPLICATION_INFO`, sent to a shadow copy's device: what VSS recorded of it.
pub const QUERY_APPLICATION_INFO: u32 = 0x0053_019C;
#[cfg(windows)]
/// The largest answer taken (the names of 512 shadow copies, the most Windows keeps, take some 36 KiB).
const MAX_ANSWER: usize = 1 << 20;

/// `\Device\HarddiskVolumeShadowCopyN` → `\\?\GLOBALROOT\Device\HarddiskVolumeShadowCopyN`, the path that
/// opens it from user mode.
pub fn device_path(nt_name: &str) -> String {
    format!("\\\\?\\GLOBALROOT{nt_name}")
}

/// The device names in a `VOLSNAP_NAMES` answer: a 32-bit byte length, then that many bytes of UTF-16 names,
/// each ended by a NUL, the list by one more. `Err` with the size needed (the length field plus 4) when the
/// answer is cut short (`buf` is what the control wrote into a buffer that was too small).
pub fn decode_names(buf: &[u8]) -> Result<Vec<String>, usize> {
    let Some(len) = buf
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    else {
        return Err(4);
    };
    let Some(body) = buf.get(4..4 + len) else {
        return Err(4 + len);
    };
    let units: Vec<u16> = body
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    Ok(units
        .split(|&u| u == 0)
        .take_while(|name| !name.is_empty())
        .map(String::from_utf16_lossy)
        .collect())
}

/// The shadow copy identifier in a `VOLSNAP_APPLICATION_INFO` answer: a 32-bit length, then what VSS set when
/// it made the copy: its kind of information (a GUID), the shadow copy's identifier, the set's identifier, and
/// more. GUIDs as stored in memory, as the store header stores them. `None` when the answer is too short to
/// hold one (an application other than VSS made the copy, or the answer was cut).
pub fn decode_application_info(buf: &[u8]) -> Option<[u8; 16]> {
    let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let info = buf.get(4..4 + len)?;
    info.get(16..32)?.try_into().ok()
}

/// A shadow copy of a live volume as the system exposes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveStore {
    /// `\\?\GLOBALROOT\Device\HarddiskVolumeShadowCopyN`.
    pub path: String,
    pub shadow_copy_id: [u8; 16],
}

/// The shadow copies Windows exposes for the live volume `volume` (none for any other device, and on other
/// systems). A copy whose device does not answer is left out: it may have been deleted since it was listed.
pub fn stores(volume: &crate::device::Device) -> io::Result<Vec<LiveStore>> {
    #[cfg(windows)]
    if let Some(live) = volume.live() {
        let names = match ask(live, QUERY_NAMES_OF_SNAPSHOTS, decode_names)? {
            Some(n) => n,
            None => return Ok(Vec::new()),
        };
        let mut out = Vec::new();
        for name in names {
            let path = device_path(&name);
            let Ok(dev) = crate::live::LiveDevice::open(&path) else {
                continue;
            };
            let id = ask(&dev, QUERY_APPLICATION_INFO, |b| {
                decode_application_info(b).ok_or(b.len() * 2)
            });
            if let Ok(Some(shadow_copy_id)) = id {
                out.push(LiveStore {
                    path,
                    shadow_copy_id,
                });
            }
        }
        return Ok(out);
    }
    let _ = volume;
    Ok(Vec::new())
}

/// Sends control `code` to `dev` with a buffer grown until `decode` has a whole answer (it gives the size it
/// needs when it has not); `None` when the device does not take the control (not a volume the snapshot driver
/// serves).
#[cfg(windows)]
fn ask<T>(
    dev: &crate::live::LiveDevice,
    code: u32,
    decode: impl Fn(&[u8]) -> Result<T, usize>,
) -> io::Result<Option<T>> {
    /// ERROR_MORE_DATA: the answer did not fit, and its head says how much it needs.
    const MORE_DATA: i32 = 234;
    /// ERROR_INVALID_FUNCTION, ERROR_NOT_SUPPORTED: no snapshot driver answers on this device.
    const NOT_TAKEN: [i32; 2] = [1, 50];
    let mut size = 4096;
    loop {
        let mut buf = vec![0u8; size];
        let n = match dev.ioctl(code, &[], &mut buf) {
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(MORE_DATA) => buf.len(),
            Err(e) if e.raw_os_error().is_some_and(|c| NOT_TAKEN.contains(&c)) => return Ok(None),
            Err(e) => return Err(e),
        };
        match decode(&buf[..n]) {
            Ok(v) => return Ok(Some(v)),
            Err(need) if need > size && need <= MAX_ANSWER => size = need,
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the snapshot driver's answer to control {code:#x} does not decode"),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    #[test]
    fn names_decode_from_a_multi_string() {
        let mut body =
            utf16("\\Device\\HarddiskVolumeShadowCopy1\0\\Device\\HarddiskVolumeShadowCopy7\0\0");
        let mut buf = (body.len() as u32).to_le_bytes().to_vec();
        buf.append(&mut body);
        assert_eq!(
            decode_names(&buf),
            Ok(vec![
                "\\Device\\HarddiskVolumeShadowCopy1".to_string(),
                "\\Device\\HarddiskVolumeShadowCopy7".to_string()
            ])
        );
        assert_eq!(
            device_path("\\Device\\HarddiskVolumeShadowCopy7"),
            "\\\\?\\GLOBALROOT\\Device\\HarddiskVolumeShadowCopy7"
        );
        // No shadow copies: an empty list (its closing NUL only).
        assert_eq!(decode_names(&[2, 0, 0, 0, 0, 0]), Ok(Vec::new()));
        // Cut short: the size the whole answer needs.
        assert_eq!(decode_names(&buf[..20]), Err(buf.len()));
        assert_eq!(decode_names(&[1, 0]), Err(4));
    }

    #[test]
    fn the_shadow_copy_id_is_the_second_guid_of_the_application_info() {
        let kind = [0xAA; 16];
        let id: [u8; 16] = std::array::from_fn(|i| i as u8);
        let set = [0xBB; 16];
        let mut info = [kind, id, set].concat();
        info.extend_from_slice(&[0; 24]);
        let mut buf = (info.len() as u32).to_le_bytes().to_vec();
        buf.extend_from_slice(&info);
        assert_eq!(decode_application_info(&buf), Some(id));
        assert_eq!(decode_application_info(&buf[..30]), None, "cut short");
        assert_eq!(
            decode_application_info(&[20, 0, 0, 0]),
            None,
            "too short to hold one"
        );
    }
}
