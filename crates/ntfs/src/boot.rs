//! The NTFS boot sector (the first sector of a volume): geometry and where the `$MFT` starts.

use crate::le::{u16_at, u64_at, u8_at};
use crate::{Error, Result};

/// The OEM id that marks an NTFS boot sector, at offset 3.
pub const OEM_ID: &[u8; 8] = b"NTFS    ";

/// Largest cluster size Windows formats (2 MiB); anything larger is treated as corruption.
pub const MAX_CLUSTER_SIZE: u64 = 2 * 1024 * 1024;

/// The fields of the boot sector that locate and size everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootSector {
    pub bytes_per_sector: u32,
    pub cluster_size: u64,
    pub total_sectors: u64,
    /// Logical cluster number of the first cluster of `$MFT`.
    pub mft_lcn: u64,
    pub mft_mirror_lcn: u64,
    /// Size of one MFT file record in bytes (1024 or 4096 in practice).
    pub record_size: u32,
    pub index_record_size: u32,
    pub serial: u64,
}

/// True when `b` starts like an NTFS boot sector (OEM id at offset 3).
pub fn is_ntfs(b: &[u8]) -> bool {
    b.get(3..11) == Some(&OEM_ID[..])
}

impl BootSector {
    /// Parses and validates the first sector of a volume.
    pub fn parse(b: &[u8]) -> Result<BootSector> {
        const WHAT: &str = "boot sector";
        if b.len() < 512 {
            return Err(Error::Truncated {
                what: WHAT,
                offset: 0,
                need: 512,
                have: b.len(),
            });
        }
        if !is_ntfs(b) {
            return Err(Error::BadSignature { what: WHAT });
        }
        let bytes_per_sector = u32::from(u16_at(b, 0x0B, WHAT)?);
        if !bytes_per_sector.is_power_of_two() || !(256..=4096).contains(&bytes_per_sector) {
            return Err(Error::Invalid {
                what: WHAT,
                why: "bytes per sector is not a power of two in 256..=4096",
            });
        }
        // Up to 0x80 the byte is the count itself; above, it is a negative shift (2 MiB clusters are 0xF4 with
        // 512-byte sectors: 2^(256 - 244) = 4096 sectors).
        let spc_raw = u8_at(b, 0x0D, WHAT)?;
        let sectors_per_cluster: u64 = if spc_raw <= 0x80 {
            u64::from(spc_raw)
        } else {
            let shift = 256 - u32::from(spc_raw);
            if shift > 20 {
                return Err(Error::Invalid {
                    what: WHAT,
                    why: "sectors per cluster shift is too large",
                });
            }
            1u64 << shift
        };
        if sectors_per_cluster == 0 || !sectors_per_cluster.is_power_of_two() {
            return Err(Error::Invalid {
                what: WHAT,
                why: "sectors per cluster is not a power of two",
            });
        }
        let cluster_size = sectors_per_cluster * u64::from(bytes_per_sector);
        if cluster_size > MAX_CLUSTER_SIZE {
            return Err(Error::Invalid {
                what: WHAT,
                why: "cluster size is larger than 2 MiB",
            });
        }
        let record_size = size_from_clusters(u8_at(b, 0x40, WHAT)? as i8, cluster_size).ok_or(
            Error::Invalid {
                what: WHAT,
                why: "MFT record size is not a power of two in 512..=65536",
            },
        )?;
        let index_record_size = size_from_clusters(u8_at(b, 0x44, WHAT)? as i8, cluster_size)
            .ok_or(Error::Invalid {
                what: WHAT,
                why: "index record size is not a power of two in 512..=65536",
            })?;
        let total_sectors = u64_at(b, 0x28, WHAT)?;
        let mft_lcn = u64_at(b, 0x30, WHAT)?;
        let mft_mirror_lcn = u64_at(b, 0x38, WHAT)?;
        if mft_lcn.checked_mul(cluster_size).is_none() {
            return Err(Error::Invalid {
                what: WHAT,
                why: "MFT location overflows",
            });
        }
        Ok(BootSector {
            bytes_per_sector,
            cluster_size,
            total_sectors,
            mft_lcn,
            mft_mirror_lcn,
            record_size,
            index_record_size,
            serial: u64_at(b, 0x48, WHAT)?,
        })
    }

    /// Byte offset of `$MFT`'s first cluster from the start of the volume.
    pub fn mft_offset(&self) -> u64 {
        self.mft_lcn * self.cluster_size
    }

    /// Size of the volume in bytes as the boot sector states it.
    pub fn volume_size(&self) -> u64 {
        self.total_sectors
            .saturating_mul(u64::from(self.bytes_per_sector))
    }
}

/// Decodes the "clusters per record" encoding: positive is a cluster count, negative is a power of two in bytes.
fn size_from_clusters(raw: i8, cluster_size: u64) -> Option<u32> {
    let size = if raw > 0 {
        (raw as u64).checked_mul(cluster_size)?
    } else {
        let shift = u32::from(raw.unsigned_abs());
        if shift >= 32 {
            return None;
        }
        1u64 << shift
    };
    (size.is_power_of_two() && (512..=65536).contains(&size)).then_some(size as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(spc: u8, clusters_per_record: u8) -> Vec<u8> {
        let mut b = vec![0u8; 512];
        b[3..11].copy_from_slice(OEM_ID);
        b[0x0B..0x0D].copy_from_slice(&512u16.to_le_bytes());
        b[0x0D] = spc;
        b[0x28..0x30].copy_from_slice(&1000u64.to_le_bytes());
        b[0x30..0x38].copy_from_slice(&4u64.to_le_bytes());
        b[0x40] = clusters_per_record;
        b[0x44] = 0xF4; // index records of 2^12 bytes
        b
    }

    #[test]
    fn negative_encodings() {
        let bs = BootSector::parse(&sample(8, 0xF6)).unwrap();
        assert_eq!(bs.cluster_size, 4096);
        assert_eq!(bs.record_size, 1024);
        assert_eq!(bs.mft_offset(), 16384);
        // 2 MiB clusters: 0xF4 means 2^12 sectors of 512 bytes.
        let bs = BootSector::parse(&sample(0xF4, 0xF6)).unwrap();
        assert_eq!(bs.cluster_size, 2 * 1024 * 1024);
    }

    #[test]
    fn rejects_garbage() {
        assert!(BootSector::parse(&[0u8; 100]).is_err());
        assert!(BootSector::parse(&sample(3, 0xF6)).is_err());
        assert!(BootSector::parse(&sample(8, 0x7F)).is_err());
        assert!(BootSector::parse(&sample(0x80 + 1, 0xF6)).is_err());
    }
}
