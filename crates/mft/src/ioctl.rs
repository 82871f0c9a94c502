//! The byte layouts of the Windows device and file-system controls uffs issues on a live volume: inputs encoded,
//! outputs decoded. Pure and platform-independent, so the Linux tests check them; the Windows code (elsewhere)
//! only moves these bytes through `DeviceIoControl`.
//!
//! Every layout is read and written little-endian at explicit offsets (no `repr(C)`, no transmutes). The offsets
//! follow the C declarations with the default (natural) alignment; none of these structures sits inside a
//! `#pragma pack` region of the Windows SDK's `winioctl.h`. Outputs are decoded from exactly the bytes the call
//! returned (`lpBytesReturned`): what is missing is an error, never a panic.
//!
//! Sources the layouts and codes were checked against (the `CTL_CODE` arithmetic and every offset):
//! * the Windows SDK 10.0.16299.0 `um/winioctl.h` (as mirrored in `tpn/winsdk-10`): the `CTL_CODE` macro, the
//!   `FILE_DEVICE_*`, `METHOD_*` and `*_ACCESS` values, each control code below, `USN_JOURNAL_DATA_V0/V1/V2`,
//!   `READ_USN_JOURNAL_DATA_V0/V1`, `CREATE_USN_JOURNAL_DATA`, `NTFS_FILE_RECORD_INPUT/OUTPUT_BUFFER`,
//!   `NTFS_VOLUME_DATA_BUFFER`, `STORAGE_PROPERTY_ID`, `STORAGE_QUERY_TYPE`, `STORAGE_PROPERTY_QUERY`,
//!   `STORAGE_BUS_TYPE`, `STORAGE_DEVICE_DESCRIPTOR`, `DEVICE_SEEK_PENALTY_DESCRIPTOR`,
//!   `STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR`, `DISK_GEOMETRY(_EX)` and `GET_LENGTH_INFORMATION`;
//! * mingw-w64 `mingw-w64-headers/include/winioctl.h`, which agrees on every `CTL_CODE` definition used here;
//! * Microsoft's reference pages (`MicrosoftDocs/sdk-api`, `winioctl`): `FSCTL_GET_NTFS_FILE_RECORD` (returns the
//!   nearest lower in-use record; output buffer `sizeof(NTFS_FILE_RECORD_OUTPUT_BUFFER) + record size - 1`),
//!   `FSCTL_READ_USN_JOURNAL` and the `STORAGE_BUS_TYPE` names.
//!
//! Two sizes differ from figures that are sometimes quoted: `READ_USN_JOURNAL_DATA_V0` is 40 bytes (StartUsn 8,
//! ReasonMask 4, ReturnOnlyOnClose 4, Timeout 8, BytesToWaitFor 8, UsnJournalID 8) and `_V1` is 44 bytes of
//! fields padded to 48 (`sizeof`); `USN_JOURNAL_DATA_V1` is 60 bytes of fields padded to 64, and `_V2` is 80 (its
//! `Flags` sits at 60, in what is V1's tail padding, and `RangeTrackChunkSize` is 8-aligned at 64).

use uffs_ntfs::le;
use uffs_ntfs::usn::{UsnRecord, V4_HEADER};

use crate::{Error, Result};

// ---------------------------------------------------------------------------------------------------------------
// Control codes
// ---------------------------------------------------------------------------------------------------------------

/// `CTL_CODE(DeviceType, Function, Method, Access)`.
pub const fn ctl_code(device_type: u32, function: u32, method: u32, access: u32) -> u32 {
    (device_type << 16) | (access << 14) | (function << 2) | method
}

pub const FILE_DEVICE_DISK: u32 = 0x0000_0007;
pub const FILE_DEVICE_FILE_SYSTEM: u32 = 0x0000_0009;
pub const FILE_DEVICE_MASS_STORAGE: u32 = 0x0000_002D;
pub const METHOD_BUFFERED: u32 = 0;
pub const METHOD_NEITHER: u32 = 3;
pub const FILE_ANY_ACCESS: u32 = 0;
pub const FILE_READ_ACCESS: u32 = 1;

/// `FSCTL_GET_NTFS_VOLUME_DATA` = 0x00090064: no input; output [`NtfsVolumeData`].
pub const FSCTL_GET_NTFS_VOLUME_DATA: u32 = ctl_code(
    FILE_DEVICE_FILE_SYSTEM,
    25,
    METHOD_BUFFERED,
    FILE_ANY_ACCESS,
);
/// `FSCTL_GET_NTFS_FILE_RECORD` = 0x00090068: input [`ntfs_file_record_input`], output [`NtfsFileRecord`].
pub const FSCTL_GET_NTFS_FILE_RECORD: u32 = ctl_code(
    FILE_DEVICE_FILE_SYSTEM,
    26,
    METHOD_BUFFERED,
    FILE_ANY_ACCESS,
);
/// `FSCTL_READ_USN_JOURNAL` = 0x000900BB: input [`read_usn_journal_input`], output [`ReadJournalOutput`].
pub const FSCTL_READ_USN_JOURNAL: u32 =
    ctl_code(FILE_DEVICE_FILE_SYSTEM, 46, METHOD_NEITHER, FILE_ANY_ACCESS);
/// `FSCTL_CREATE_USN_JOURNAL` = 0x000900E7: input [`create_usn_journal_input`], no output.
pub const FSCTL_CREATE_USN_JOURNAL: u32 =
    ctl_code(FILE_DEVICE_FILE_SYSTEM, 57, METHOD_NEITHER, FILE_ANY_ACCESS);
/// `FSCTL_QUERY_USN_JOURNAL` = 0x000900F4: no input; output [`UsnJournalData`].
pub const FSCTL_QUERY_USN_JOURNAL: u32 = ctl_code(
    FILE_DEVICE_FILE_SYSTEM,
    61,
    METHOD_BUFFERED,
    FILE_ANY_ACCESS,
);
/// `IOCTL_STORAGE_QUERY_PROPERTY` = 0x002D1400: input [`storage_property_query`], output a descriptor.
pub const IOCTL_STORAGE_QUERY_PROPERTY: u32 = ctl_code(
    FILE_DEVICE_MASS_STORAGE,
    0x0500,
    METHOD_BUFFERED,
    FILE_ANY_ACCESS,
);
/// `IOCTL_DISK_GET_LENGTH_INFO` = 0x0007405C: no input; output [`decode_length_info`].
pub const IOCTL_DISK_GET_LENGTH_INFO: u32 =
    ctl_code(FILE_DEVICE_DISK, 0x0017, METHOD_BUFFERED, FILE_READ_ACCESS);
/// `IOCTL_DISK_GET_DRIVE_GEOMETRY_EX` = 0x000700A0: no input; output [`DiskGeometryEx`].
pub const IOCTL_DISK_GET_DRIVE_GEOMETRY_EX: u32 =
    ctl_code(FILE_DEVICE_DISK, 0x0028, METHOD_BUFFERED, FILE_ANY_ACCESS);

// ---------------------------------------------------------------------------------------------------------------
// Checked little-endian field reads
// ---------------------------------------------------------------------------------------------------------------

/// The returned bytes of one control, read field by field; a field past the end is a `Truncated` error naming
/// the control (`ctl`) and the structure (`what`).
#[derive(Clone, Copy)]
struct Fields<'a> {
    b: &'a [u8],
    ctl: &'static str,
    what: &'static str,
}

impl<'a> Fields<'a> {
    fn new(b: &'a [u8], ctl: &'static str, what: &'static str) -> Fields<'a> {
        Fields { b, ctl, what }
    }

    /// Names the control in an error of `uffs_ntfs::le`, which names the structure.
    fn at<T>(&self, r: uffs_ntfs::Result<T>) -> Result<T> {
        r.map_err(|e| Error::format(self.ctl, e))
    }

    fn bytes(&self, offset: usize, len: usize) -> Result<&'a [u8]> {
        self.at(le::bytes(self.b, offset, len, self.what))
    }
    fn u8(&self, offset: usize) -> Result<u8> {
        self.at(le::u8_at(self.b, offset, self.what))
    }
    fn u16(&self, offset: usize) -> Result<u16> {
        self.at(le::u16_at(self.b, offset, self.what))
    }
    fn u32(&self, offset: usize) -> Result<u32> {
        self.at(le::u32_at(self.b, offset, self.what))
    }
    fn u64(&self, offset: usize) -> Result<u64> {
        self.at(le::u64_at(self.b, offset, self.what))
    }
    fn i64(&self, offset: usize) -> Result<i64> {
        self.u64(offset).map(|v| v as i64)
    }

    /// A `LONGLONG` that must not be negative (a USN, a size, an LCN).
    fn non_negative(&self, offset: usize, why: &'static str) -> Result<u64> {
        let v = self.i64(offset)?;
        u64::try_from(v).map_err(|_| invalid(self.ctl, self.what, why))
    }
}

fn truncated(
    ctl: &'static str,
    what: &'static str,
    offset: usize,
    need: usize,
    have: usize,
) -> Error {
    Error::format(
        ctl,
        uffs_ntfs::Error::Truncated {
            what,
            offset,
            need,
            have,
        },
    )
}

fn invalid(ctl: &'static str, what: &'static str, why: &'static str) -> Error {
    Error::format(ctl, uffs_ntfs::Error::Invalid { what, why })
}

// ---------------------------------------------------------------------------------------------------------------
// FSCTL_QUERY_USN_JOURNAL
// ---------------------------------------------------------------------------------------------------------------

/// `sizeof(USN_JOURNAL_DATA_V0)`: seven 8-byte fields.
pub const USN_JOURNAL_DATA_V0_SIZE: usize = 56;
/// The fields of `USN_JOURNAL_DATA_V1` end here (V0 plus two `WORD`s); `sizeof` is 64 with tail padding.
pub const USN_JOURNAL_DATA_V1_LEN: usize = 60;
/// `sizeof(USN_JOURNAL_DATA_V2)`: V1's fields, `Flags` at 60, `RangeTrackChunkSize` at 64, the threshold at 72.
pub const USN_JOURNAL_DATA_V2_SIZE: usize = 80;

/// `FLAG_USN_TRACK_MODIFIED_RANGES_ENABLE` in [`RangeTracking::flags`].
pub const FLAG_USN_TRACK_MODIFIED_RANGES_ENABLE: u32 = 0x0000_0001;

/// The output of `FSCTL_QUERY_USN_JOURNAL` (`USN_JOURNAL_DATA_V0`, `_V1` or `_V2`, by the returned byte count).
/// USNs are `LONGLONG` in Windows and never negative; they are `u64` here as everywhere in uffs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsnJournalData {
    /// Which structure the bytes held: 0, 1 or 2.
    pub version: u8,
    /// `UsnJournalID`: changes when the journal is deleted and recreated; USNs of different ids are unrelated.
    pub journal_id: u64,
    /// `FirstUsn`: the first record that can be read.
    pub first_usn: u64,
    /// `NextUsn`: where the next record will be written.
    pub next_usn: u64,
    /// `LowestValidUsn`: records below it were trimmed (or belong to an older journal instance).
    pub lowest_valid_usn: u64,
    /// `MaxUsn`: the largest USN the journal can hand out.
    pub max_usn: u64,
    /// `MaximumSize` in bytes.
    pub maximum_size: u64,
    /// `AllocationDelta` in bytes.
    pub allocation_delta: u64,
    /// V1 and V2: `(MinSupportedMajorVersion, MaxSupportedMajorVersion)` of the records.
    pub supported_major: Option<(u16, u16)>,
    /// V2 only: range tracking.
    pub range_tracking: Option<RangeTracking>,
}

/// The V2 part of [`UsnJournalData`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeTracking {
    /// `Flags` ([`FLAG_USN_TRACK_MODIFIED_RANGES_ENABLE`]).
    pub flags: u32,
    /// `RangeTrackChunkSize`.
    pub chunk_size: u64,
    /// `RangeTrackFileSizeThreshold`.
    pub file_size_threshold: i64,
}

impl UsnJournalData {
    /// Decodes the bytes `FSCTL_QUERY_USN_JOURNAL` returned: at least 80 bytes is V2, at least 60 is V1, at least
    /// 56 is V0; fewer is an error. Negative USNs are an error.
    pub fn decode(b: &[u8]) -> Result<UsnJournalData> {
        const CTL: &str = "FSCTL_QUERY_USN_JOURNAL output";
        let f = Fields::new(b, CTL, "USN_JOURNAL_DATA");
        if b.len() < USN_JOURNAL_DATA_V0_SIZE {
            return Err(truncated(
                CTL,
                "USN_JOURNAL_DATA",
                0,
                USN_JOURNAL_DATA_V0_SIZE,
                b.len(),
            ));
        }
        const NEGATIVE: &str = "a USN is negative";
        let version = if b.len() >= USN_JOURNAL_DATA_V2_SIZE {
            2
        } else if b.len() >= USN_JOURNAL_DATA_V1_LEN {
            1
        } else {
            0
        };
        let supported_major = if version >= 1 {
            Some((f.u16(56)?, f.u16(58)?))
        } else {
            None
        };
        let range_tracking = if version == 2 {
            Some(RangeTracking {
                flags: f.u32(60)?,
                chunk_size: f.u64(64)?,
                file_size_threshold: f.i64(72)?,
            })
        } else {
            None
        };
        Ok(UsnJournalData {
            version,
            journal_id: f.u64(0)?,
            first_usn: f.non_negative(8, NEGATIVE)?,
            next_usn: f.non_negative(16, NEGATIVE)?,
            lowest_valid_usn: f.non_negative(24, NEGATIVE)?,
            max_usn: f.non_negative(32, NEGATIVE)?,
            maximum_size: f.u64(40)?,
            allocation_delta: f.u64(48)?,
            supported_major,
            range_tracking,
        })
    }
}

// ---------------------------------------------------------------------------------------------------------------
// FSCTL_READ_USN_JOURNAL / FSCTL_CREATE_USN_JOURNAL inputs
// ---------------------------------------------------------------------------------------------------------------

/// `sizeof(READ_USN_JOURNAL_DATA_V0)`: StartUsn @0, ReasonMask @8, ReturnOnlyOnClose @12, Timeout @16,
/// BytesToWaitFor @24, UsnJournalID @32. Windows before 8 only knows this one (and returns V2 records).
pub const READ_USN_JOURNAL_DATA_V0_SIZE: usize = 40;
/// `sizeof(READ_USN_JOURNAL_DATA_V1)`: V0, MinMajorVersion @40, MaxMajorVersion @42, 4 bytes tail padding.
pub const READ_USN_JOURNAL_DATA_V1_SIZE: usize = 48;

/// The input of `FSCTL_READ_USN_JOURNAL`: a `READ_USN_JOURNAL_DATA_V1` (48 bytes, `sizeof` as a C caller passes
/// it). `reason_mask` selects records by `USN_REASON_*` bits; `timeout` (100 ns units) and `bytes_to_wait_for`
/// only matter when the call is asked to wait (`bytes_to_wait_for` 0 returns at once); `min_major..=max_major`
/// is the record versions wanted (2..=3 for V2 and V3; 4 adds range-tracking records, which the decoder skips).
/// The first 40 bytes are a `READ_USN_JOURNAL_DATA_V0` for systems that do not take V1.
#[allow(clippy::too_many_arguments)]
pub fn read_usn_journal_input(
    start_usn: u64,
    reason_mask: u32,
    return_only_on_close: bool,
    timeout: u64,
    bytes_to_wait_for: u64,
    journal_id: u64,
    min_major: u16,
    max_major: u16,
) -> Vec<u8> {
    let mut b = vec![0u8; READ_USN_JOURNAL_DATA_V1_SIZE];
    b[0..8].copy_from_slice(&start_usn.to_le_bytes());
    b[8..12].copy_from_slice(&reason_mask.to_le_bytes());
    b[12..16].copy_from_slice(&u32::from(return_only_on_close).to_le_bytes());
    b[16..24].copy_from_slice(&timeout.to_le_bytes());
    b[24..32].copy_from_slice(&bytes_to_wait_for.to_le_bytes());
    b[32..40].copy_from_slice(&journal_id.to_le_bytes());
    b[40..42].copy_from_slice(&min_major.to_le_bytes());
    b[42..44].copy_from_slice(&max_major.to_le_bytes());
    b
}

/// `sizeof(CREATE_USN_JOURNAL_DATA)`.
pub const CREATE_USN_JOURNAL_DATA_SIZE: usize = 16;

/// The input of `FSCTL_CREATE_USN_JOURNAL` (`CREATE_USN_JOURNAL_DATA`: MaximumSize @0, AllocationDelta @8). On a
/// volume that has a journal, the call changes its sizes.
pub fn create_usn_journal_input(
    maximum_size: u64,
    allocation_delta: u64,
) -> [u8; CREATE_USN_JOURNAL_DATA_SIZE] {
    let mut b = [0u8; CREATE_USN_JOURNAL_DATA_SIZE];
    b[0..8].copy_from_slice(&maximum_size.to_le_bytes());
    b[8..16].copy_from_slice(&allocation_delta.to_le_bytes());
    b
}

// ---------------------------------------------------------------------------------------------------------------
// FSCTL_READ_USN_JOURNAL output
// ---------------------------------------------------------------------------------------------------------------

/// The output of `FSCTL_READ_USN_JOURNAL`: the USN to ask for next, then whole records packed one after another,
/// each `RecordLength` long (a multiple of 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadJournalOutput<'a> {
    /// The `StartUsn` of the next call. Equal to the one asked when there was nothing new.
    pub next_usn: u64,
    /// The V2 and V3 records, in order.
    pub records: Vec<UsnRecord<'a>>,
    /// V4 (range-tracking) records skipped.
    pub range_tracking_records: u32,
}

impl<'a> ReadJournalOutput<'a> {
    /// Decodes the bytes `FSCTL_READ_USN_JOURNAL` returned. A buffer shorter than the 8-byte USN, a record whose
    /// length is 0, not a multiple of 8, shorter than its version's fixed part or running past the end, and a
    /// major version other than 2, 3 or 4 are errors (so are V2/V3 records whose name does not fit): each record
    /// advances by at least 8 bytes, so decoding always ends.
    pub fn decode(b: &'a [u8]) -> Result<ReadJournalOutput<'a>> {
        const CTL: &str = "FSCTL_READ_USN_JOURNAL output";
        const WHAT: &str = "USN record";
        let next_usn =
            Fields::new(b, CTL, "next USN").non_negative(0, "the next USN is negative")?;
        let mut out = ReadJournalOutput {
            next_usn,
            records: Vec::new(),
            range_tracking_records: 0,
        };
        let mut pos = 8;
        while pos < b.len() {
            let rest = &b[pos..];
            let f = Fields::new(rest, CTL, WHAT);
            // Offsets in errors are positions in the whole buffer.
            let len = f
                .u32(0)
                .map_err(|_| truncated(CTL, WHAT, pos, 8, b.len()))? as usize;
            let major = f
                .u16(4)
                .map_err(|_| truncated(CTL, WHAT, pos, 8, b.len()))?;
            if len == 0 {
                return Err(invalid(CTL, WHAT, "record length is 0"));
            }
            if !len.is_multiple_of(8) {
                return Err(invalid(CTL, WHAT, "record length is not a multiple of 8"));
            }
            if len > rest.len() {
                return Err(truncated(CTL, WHAT, pos, len, b.len()));
            }
            let record = &rest[..len];
            match major {
                2 | 3 => out
                    .records
                    .push(UsnRecord::parse(record).map_err(|e| Error::format(CTL, e))?),
                4 if len >= V4_HEADER => out.range_tracking_records += 1,
                4 => {
                    return Err(invalid(
                        CTL,
                        WHAT,
                        "version 4 record is shorter than its fixed part",
                    ))
                }
                _ => return Err(invalid(CTL, WHAT, "major version is not 2, 3 or 4")),
            }
            pos += len;
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// FSCTL_GET_NTFS_FILE_RECORD
// ---------------------------------------------------------------------------------------------------------------

/// Where the record bytes start in `NTFS_FILE_RECORD_OUTPUT_BUFFER` (FileReferenceNumber @0, FileRecordLength @8).
pub const NTFS_FILE_RECORD_OUTPUT_HEADER: usize = 12;

/// The input of `FSCTL_GET_NTFS_FILE_RECORD` (`NTFS_FILE_RECORD_INPUT_BUFFER`): the file reference number (the
/// record number in the low 48 bits).
pub fn ntfs_file_record_input(frn: u64) -> [u8; 8] {
    frn.to_le_bytes()
}

/// The output buffer size Microsoft prescribes for records of `bytes_per_file_record` bytes (the volume's
/// `BytesPerFileRecordSegment`): `sizeof(NTFS_FILE_RECORD_OUTPUT_BUFFER) + record size - 1`.
pub fn ntfs_file_record_output_len(bytes_per_file_record: u32) -> usize {
    16 + bytes_per_file_record as usize - 1
}

/// The output of `FSCTL_GET_NTFS_FILE_RECORD` (`NTFS_FILE_RECORD_OUTPUT_BUFFER`).
///
/// Windows returns the nearest in-use record at or *below* the one asked for: when the asked record is not in
/// use, this is a different, lower record. Check [`NtfsFileRecord::is_record`] before using it as the asked one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NtfsFileRecord<'a> {
    /// The record number returned (low 48 bits of `FileReferenceNumber`).
    pub record_number: u64,
    /// The record's bytes (`FileRecordLength` of them).
    pub record: &'a [u8],
}

impl<'a> NtfsFileRecord<'a> {
    /// Decodes the bytes `FSCTL_GET_NTFS_FILE_RECORD` returned. A `FileRecordLength` of 0 or one that runs past
    /// the returned bytes is an error.
    pub fn decode(b: &'a [u8]) -> Result<NtfsFileRecord<'a>> {
        const CTL: &str = "FSCTL_GET_NTFS_FILE_RECORD output";
        let f = Fields::new(b, CTL, "NTFS_FILE_RECORD_OUTPUT_BUFFER");
        let frn = f.u64(0)?;
        let len = f.u32(8)? as usize;
        if len == 0 {
            return Err(invalid(
                CTL,
                "NTFS_FILE_RECORD_OUTPUT_BUFFER",
                "FileRecordLength is 0",
            ));
        }
        let record =
            Fields::new(b, CTL, "file record").bytes(NTFS_FILE_RECORD_OUTPUT_HEADER, len)?;
        Ok(NtfsFileRecord {
            record_number: frn & 0xFFFF_FFFF_FFFF,
            record,
        })
    }

    /// Whether this is the record asked for with `asked_frn` (compared by record number, the low 48 bits), and
    /// not the nearest lower in-use record Windows substitutes when the asked one is not in use.
    pub fn is_record(&self, asked_frn: u64) -> bool {
        self.record_number == asked_frn & 0xFFFF_FFFF_FFFF
    }
}

// ---------------------------------------------------------------------------------------------------------------
// FSCTL_GET_NTFS_VOLUME_DATA
// ---------------------------------------------------------------------------------------------------------------

/// `sizeof(NTFS_VOLUME_DATA_BUFFER)`; an `NTFS_EXTENDED_VOLUME_DATA` may follow it.
pub const NTFS_VOLUME_DATA_BUFFER_SIZE: usize = 96;

/// The output of `FSCTL_GET_NTFS_VOLUME_DATA` (`NTFS_VOLUME_DATA_BUFFER`, and the NTFS version from the
/// `NTFS_EXTENDED_VOLUME_DATA` that follows when Windows returned it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NtfsVolumeData {
    pub volume_serial_number: u64,
    pub number_sectors: u64,
    pub total_clusters: u64,
    pub free_clusters: u64,
    pub total_reserved: u64,
    pub bytes_per_sector: u32,
    pub bytes_per_cluster: u32,
    pub bytes_per_file_record_segment: u32,
    pub clusters_per_file_record_segment: u32,
    pub mft_valid_data_length: u64,
    pub mft_start_lcn: u64,
    pub mft2_start_lcn: u64,
    pub mft_zone_start: u64,
    pub mft_zone_end: u64,
    /// `(MajorVersion, MinorVersion)` of NTFS (3.1 on every current Windows).
    pub ntfs_version: Option<(u16, u16)>,
}

impl NtfsVolumeData {
    pub fn decode(b: &[u8]) -> Result<NtfsVolumeData> {
        const CTL: &str = "FSCTL_GET_NTFS_VOLUME_DATA output";
        let f = Fields::new(b, CTL, "NTFS_VOLUME_DATA_BUFFER");
        const NEG: &str = "a count or LCN is negative";
        // NTFS_EXTENDED_VOLUME_DATA: ByteCount @96, MajorVersion @100, MinorVersion @102.
        let ext = Fields::new(b, CTL, "NTFS_EXTENDED_VOLUME_DATA");
        let ntfs_version = match (ext.u32(96), ext.u16(100), ext.u16(102)) {
            (Ok(n), Ok(major), Ok(minor)) if n >= 8 => Some((major, minor)),
            _ => None,
        };
        Ok(NtfsVolumeData {
            volume_serial_number: f.u64(0)?,
            number_sectors: f.non_negative(8, NEG)?,
            total_clusters: f.non_negative(16, NEG)?,
            free_clusters: f.non_negative(24, NEG)?,
            total_reserved: f.non_negative(32, NEG)?,
            bytes_per_sector: f.u32(40)?,
            bytes_per_cluster: f.u32(44)?,
            bytes_per_file_record_segment: f.u32(48)?,
            clusters_per_file_record_segment: f.u32(52)?,
            mft_valid_data_length: f.non_negative(56, NEG)?,
            mft_start_lcn: f.non_negative(64, NEG)?,
            mft2_start_lcn: f.non_negative(72, NEG)?,
            mft_zone_start: f.non_negative(80, NEG)?,
            mft_zone_end: f.non_negative(88, NEG)?,
            ntfs_version,
        })
    }
}

// ---------------------------------------------------------------------------------------------------------------
// IOCTL_STORAGE_QUERY_PROPERTY
// ---------------------------------------------------------------------------------------------------------------
//
// The device-probing decoders return `Option`: a device that does not answer, or answers with too few bytes,
// is simply unknown to the caller (and [`io_profile`] has defaults for that).

/// `STORAGE_PROPERTY_ID` `StorageDeviceProperty`: [`decode_device_descriptor`].
pub const STORAGE_DEVICE_PROPERTY: u32 = 0;
/// `StorageAdapterProperty`.
pub const STORAGE_ADAPTER_PROPERTY: u32 = 1;
/// `StorageAccessAlignmentProperty`: [`decode_access_alignment`].
pub const STORAGE_ACCESS_ALIGNMENT_PROPERTY: u32 = 6;
/// `StorageDeviceSeekPenaltyProperty`: [`decode_seek_penalty`].
pub const STORAGE_DEVICE_SEEK_PENALTY_PROPERTY: u32 = 7;
/// `StorageDeviceTrimProperty`.
pub const STORAGE_DEVICE_TRIM_PROPERTY: u32 = 8;

/// `STORAGE_QUERY_TYPE` `PropertyStandardQuery`: return the descriptor.
pub const PROPERTY_STANDARD_QUERY: u32 = 0;
/// `PropertyExistsQuery`: only whether the property is supported.
pub const PROPERTY_EXISTS_QUERY: u32 = 1;

/// `sizeof(STORAGE_PROPERTY_QUERY)`: PropertyId @0, QueryType @4, `AdditionalParameters[1]` @8, padded to 12.
pub const STORAGE_PROPERTY_QUERY_SIZE: usize = 12;

const STORAGE_CTL: &str = "IOCTL_STORAGE_QUERY_PROPERTY output";

/// The input of `IOCTL_STORAGE_QUERY_PROPERTY` (`STORAGE_PROPERTY_QUERY`, no additional parameters).
pub fn storage_property_query(
    property_id: u32,
    query_type: u32,
) -> [u8; STORAGE_PROPERTY_QUERY_SIZE] {
    let mut b = [0u8; STORAGE_PROPERTY_QUERY_SIZE];
    b[0..4].copy_from_slice(&property_id.to_le_bytes());
    b[4..8].copy_from_slice(&query_type.to_le_bytes());
    b
}

/// `STORAGE_DESCRIPTOR_HEADER` (the first 8 bytes of every descriptor): `(Version, Size)`. `Size` is the whole
/// descriptor; a caller whose buffer was smaller asks again with this many bytes.
pub fn storage_descriptor_header(b: &[u8]) -> Option<(u32, u32)> {
    let f = Fields::new(b, STORAGE_CTL, "STORAGE_DESCRIPTOR_HEADER");
    Some((f.u32(0).ok()?, f.u32(4).ok()?))
}

/// `STORAGE_BUS_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BusType {
    Unknown,
    Scsi,
    Atapi,
    Ata,
    Ieee1394,
    Ssa,
    Fibre,
    Usb,
    Raid,
    IScsi,
    Sas,
    Sata,
    Sd,
    Mmc,
    Virtual,
    FileBackedVirtual,
    /// Storage Spaces.
    Spaces,
    Nvme,
    /// Storage-class memory.
    Scm,
    Ufs,
    /// A value this list does not name.
    Other(u32),
}

/// The named bus types by value, with the Windows name (`BusType` + this).
const BUS_TYPES: [(BusType, &str); 20] = [
    (BusType::Unknown, "Unknown"),
    (BusType::Scsi, "Scsi"),
    (BusType::Atapi, "Atapi"),
    (BusType::Ata, "Ata"),
    (BusType::Ieee1394, "1394"),
    (BusType::Ssa, "Ssa"),
    (BusType::Fibre, "Fibre"),
    (BusType::Usb, "Usb"),
    (BusType::Raid, "RAID"),
    (BusType::IScsi, "iScsi"),
    (BusType::Sas, "Sas"),
    (BusType::Sata, "Sata"),
    (BusType::Sd, "Sd"),
    (BusType::Mmc, "Mmc"),
    (BusType::Virtual, "Virtual"),
    (BusType::FileBackedVirtual, "FileBackedVirtual"),
    (BusType::Spaces, "Spaces"),
    (BusType::Nvme, "Nvme"),
    (BusType::Scm, "SCM"),
    (BusType::Ufs, "Ufs"),
];

impl BusType {
    /// The bus type of a `STORAGE_BUS_TYPE` value (0 = Unknown … 0x13 = Ufs).
    pub fn from_u32(v: u32) -> BusType {
        BUS_TYPES
            .get(v as usize)
            .map_or(BusType::Other(v), |&(t, _)| t)
    }

    pub fn to_u32(self) -> u32 {
        match self {
            BusType::Other(v) => v,
            t => BUS_TYPES.iter().position(|&(x, _)| x == t).unwrap_or(0) as u32,
        }
    }

    /// The Windows name without the `BusType` prefix (`Sata`, `Nvme`, `1394`); `Other` is `Other`.
    pub fn name(self) -> &'static str {
        BUS_TYPES
            .iter()
            .find(|&&(t, _)| t == self)
            .map_or("Other", |&(_, n)| n)
    }
}

/// The fixed part of `STORAGE_DEVICE_DESCRIPTOR` up to `RawDeviceProperties` (`sizeof` is 40).
pub const STORAGE_DEVICE_DESCRIPTOR_FIXED: usize = 36;

/// The output for [`STORAGE_DEVICE_PROPERTY`] (`STORAGE_DEVICE_DESCRIPTOR`): Version @0, Size @4,
/// DeviceType @8, DeviceTypeModifier @9, RemovableMedia @10, CommandQueueing @11, VendorIdOffset @12,
/// ProductIdOffset @16, ProductRevisionOffset @20, SerialNumberOffset @24, BusType @28, RawPropertiesLength @32,
/// RawDeviceProperties @36. The four strings are NUL-terminated ASCII at their offsets (0 when absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageDeviceDescriptor {
    pub version: u32,
    pub size: u32,
    /// The SCSI peripheral device type (0 = direct-access block device).
    pub device_type: u8,
    pub device_type_modifier: u8,
    pub removable_media: bool,
    pub command_queueing: bool,
    pub bus_type: BusType,
    pub raw_properties_length: u32,
    /// The strings, trimmed of the spaces SCSI pads them with; `None` when absent, empty or outside the returned
    /// bytes.
    pub vendor_id: Option<String>,
    pub product_id: Option<String>,
    pub product_revision: Option<String>,
    pub serial_number: Option<String>,
}

/// Decodes the returned `STORAGE_DEVICE_DESCRIPTOR`; `None` when shorter than its 36-byte fixed part. A string
/// whose offset points into the fixed part or past the returned bytes is left out.
pub fn decode_device_descriptor(b: &[u8]) -> Option<StorageDeviceDescriptor> {
    let f = Fields::new(b, STORAGE_CTL, "STORAGE_DEVICE_DESCRIPTOR");
    let d = || -> Result<StorageDeviceDescriptor> {
        f.bytes(0, STORAGE_DEVICE_DESCRIPTOR_FIXED)?;
        let string =
            |at: usize| -> Result<Option<String>> { Ok(descriptor_string(b, f.u32(at)? as usize)) };
        Ok(StorageDeviceDescriptor {
            version: f.u32(0)?,
            size: f.u32(4)?,
            device_type: f.u8(8)?,
            device_type_modifier: f.u8(9)?,
            removable_media: f.u8(10)? != 0,
            command_queueing: f.u8(11)? != 0,
            vendor_id: string(12)?,
            product_id: string(16)?,
            product_revision: string(20)?,
            serial_number: string(24)?,
            bus_type: BusType::from_u32(f.u32(28)?),
            raw_properties_length: f.u32(32)?,
        })
    };
    d().ok()
}

/// The NUL-terminated string at `offset` in a descriptor (to the end of `b` when unterminated), trimmed.
fn descriptor_string(b: &[u8], offset: usize) -> Option<String> {
    if offset < STORAGE_DEVICE_DESCRIPTOR_FIXED {
        return None;
    }
    let s = b.get(offset..)?;
    let s = &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())];
    let s = String::from_utf8_lossy(s);
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// The output for [`STORAGE_DEVICE_SEEK_PENALTY_PROPERTY`] (`DEVICE_SEEK_PENALTY_DESCRIPTOR`: Version @0,
/// Size @4, IncursSeekPenalty @8; `sizeof` 12): whether the device incurs a seek penalty (a rotating disk).
/// `None` when fewer than 9 bytes came back.
pub fn decode_seek_penalty(b: &[u8]) -> Option<bool> {
    let f = Fields::new(b, STORAGE_CTL, "DEVICE_SEEK_PENALTY_DESCRIPTOR");
    f.u8(8).ok().map(|v| v != 0)
}

/// The output for [`STORAGE_ACCESS_ALIGNMENT_PROPERTY`] (`STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR`: seven
/// `DWORD`s, 28 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessAlignment {
    pub version: u32,
    pub size: u32,
    pub bytes_per_cache_line: u32,
    pub bytes_offset_for_cache_alignment: u32,
    pub bytes_per_logical_sector: u32,
    pub bytes_per_physical_sector: u32,
    pub bytes_offset_for_sector_alignment: u32,
}

/// Decodes the returned `STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR`; `None` when shorter than 28 bytes.
pub fn decode_access_alignment(b: &[u8]) -> Option<AccessAlignment> {
    let f = Fields::new(b, STORAGE_CTL, "STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR");
    let u = |at| f.u32(at).ok();
    Some(AccessAlignment {
        version: u(0)?,
        size: u(4)?,
        bytes_per_cache_line: u(8)?,
        bytes_offset_for_cache_alignment: u(12)?,
        bytes_per_logical_sector: u(16)?,
        bytes_per_physical_sector: u(20)?,
        bytes_offset_for_sector_alignment: u(24)?,
    })
}

// ---------------------------------------------------------------------------------------------------------------
// IOCTL_DISK_GET_DRIVE_GEOMETRY_EX / IOCTL_DISK_GET_LENGTH_INFO
// ---------------------------------------------------------------------------------------------------------------

/// The output of `IOCTL_DISK_GET_DRIVE_GEOMETRY_EX` up to `DiskSize` (`DISK_GEOMETRY`: Cylinders @0,
/// MediaType @8, TracksPerCylinder @12, SectorsPerTrack @16, BytesPerSector @20; then DiskSize @24; partition and
/// detection data follow at 32 and are not decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskGeometryEx {
    pub cylinders: u64,
    /// `MEDIA_TYPE`: 12 = `FixedMedia`, 11 = `RemovableMedia`.
    pub media_type: u32,
    pub tracks_per_cylinder: u32,
    pub sectors_per_track: u32,
    /// The logical sector size.
    pub bytes_per_sector: u32,
    pub disk_size: u64,
}

/// Decodes the returned `DISK_GEOMETRY_EX`; `None` when shorter than 32 bytes or a size is negative.
pub fn decode_disk_geometry_ex(b: &[u8]) -> Option<DiskGeometryEx> {
    let f = Fields::new(
        b,
        "IOCTL_DISK_GET_DRIVE_GEOMETRY_EX output",
        "DISK_GEOMETRY_EX",
    );
    const NEG: &str = "a size is negative";
    Some(DiskGeometryEx {
        cylinders: f.non_negative(0, NEG).ok()?,
        media_type: f.u32(8).ok()?,
        tracks_per_cylinder: f.u32(12).ok()?,
        sectors_per_track: f.u32(16).ok()?,
        bytes_per_sector: f.u32(20).ok()?,
        disk_size: f.non_negative(24, NEG).ok()?,
    })
}

/// The output of `IOCTL_DISK_GET_LENGTH_INFO` (`GET_LENGTH_INFORMATION`): the length in bytes of the disk,
/// partition or volume. `None` when fewer than 8 bytes came back or the length is negative.
pub fn decode_length_info(b: &[u8]) -> Option<u64> {
    Fields::new(
        b,
        "IOCTL_DISK_GET_LENGTH_INFO output",
        "GET_LENGTH_INFORMATION",
    )
    .non_negative(0, "the length is negative")
    .ok()
}

// ---------------------------------------------------------------------------------------------------------------
// I/O profile
// ---------------------------------------------------------------------------------------------------------------

/// How to read: this many reads in flight, each this large.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoProfile {
    pub concurrency: usize,
    pub io_size: usize,
    /// Why this profile, for the log and `--verbose`.
    pub why: &'static str,
}

const MIB: usize = 1 << 20;

impl IoProfile {
    /// A live device that answered nothing: `io_profile(None, None)`.
    pub fn unknown() -> IoProfile {
        io_profile(None, None)
    }

    /// A regular file or a block device read through the OS cache: one read of 1 MiB at a time (most often
    /// the bytes are already in the page cache, where more reads in flight do not help).
    pub fn file() -> IoProfile {
        IoProfile {
            concurrency: 1,
            io_size: MIB,
            why: "file or block device: one 1 MiB read at a time",
        }
    }

    /// A container (E01, qcow2, VHD/VHDX, VMDK): two reads of 1 MiB in flight. The reading thread also decodes
    /// (inflates chunks, checks their checksums, looks up block tables), so a second read lets a second core
    /// decode. Measured on the benchmark volume, warm: `uffs index` of a deflate E01 1.91 s with one read, 1.39
    /// with two, 1.43 with four; compressed qcow2 1.43 / 1.13; streamOptimized VMDK 1.59 / 1.24; uncompressed
    /// E01 1.03 / 0.90; the plain containers and the raw image 0.75 either way (cold, the E01 2.02 / 1.54).
    pub fn container() -> IoProfile {
        IoProfile {
            concurrency: 2,
            io_size: MIB,
            why: "container: two 1 MiB reads in flight, each decoded on its own core",
        }
    }
}

/// The read profile for a live device from its bus type and seek penalty (either unknown when the query
/// failed), from the upstream measurements: a rotating disk (seek penalty) 2 reads × 1 MiB; an NVMe (or
/// storage-class memory) device 32 × 4 MiB; any other SSD (SATA, ATA, USB, …) 8 × 2 MiB. When nothing is known,
/// 8 × 1 MiB: the SSD's reads in flight at the size files are read with (measured under Wine, whose devices
/// answer no query, 8 × 1 MiB read the benchmark MFT in 0.41–0.56 s where 8 × 2 MiB took 0.59–0.73 s). A seek
/// penalty wins over the bus: a USB or SATA enclosure may hold either kind of disk.
pub fn io_profile(bus: Option<BusType>, seek_penalty: Option<bool>) -> IoProfile {
    let p = |concurrency, io_size, why| IoProfile {
        concurrency,
        io_size,
        why,
    };
    match (bus, seek_penalty) {
        (_, Some(true)) => p(2, MIB, "seek penalty: rotating disk (HDD)"),
        (Some(BusType::Nvme), _) => p(32, 4 * MIB, "NVMe bus"),
        (Some(BusType::Scm), _) => p(32, 4 * MIB, "storage-class memory bus"),
        (None, None) => p(8, MIB, "unknown device: 8 reads of 1 MiB"),
        (_, Some(false)) => p(8, 2 * MIB, "no seek penalty: SSD (SATA or other bus)"),
        (Some(_), None) => p(8, 2 * MIB, "seek penalty unknown: SSD defaults"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uffs_ntfs::usn::{Item, UsnScanner, V2_HEADER, V3_HEADER};

    #[test]
    fn control_codes_match_documented_values() {
        // The hex values Microsoft documents; the constants are computed with CTL_CODE from the header's operands.
        let table = [
            (FSCTL_QUERY_USN_JOURNAL, 0x0009_00F4),
            (FSCTL_READ_USN_JOURNAL, 0x0009_00BB),
            (FSCTL_GET_NTFS_FILE_RECORD, 0x0009_0068),
            (FSCTL_GET_NTFS_VOLUME_DATA, 0x0009_0064),
            (FSCTL_CREATE_USN_JOURNAL, 0x0009_00E7),
            (IOCTL_STORAGE_QUERY_PROPERTY, 0x002D_1400),
            (IOCTL_DISK_GET_LENGTH_INFO, 0x0007_405C),
            (IOCTL_DISK_GET_DRIVE_GEOMETRY_EX, 0x0007_00A0),
        ];
        for (code, documented) in table {
            assert_eq!(code, documented, "{code:#010X} != {documented:#010X}");
        }
    }

    // Journal data built field by field from the documented layout (winioctl.h USN_JOURNAL_DATA_V0/V1/V2 with
    // natural alignment), not from a Rust struct.
    fn journal_data_v0() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(0x01D2_3456_789A_BCDEu64.to_le_bytes()); // UsnJournalID
        b.extend(0x1000i64.to_le_bytes()); // FirstUsn
        b.extend(0x0123_4568i64.to_le_bytes()); // NextUsn
        b.extend(0x0800i64.to_le_bytes()); // LowestValidUsn
        b.extend(0x7FFF_FFFF_FFFF_0000i64.to_le_bytes()); // MaxUsn
        b.extend((32u64 << 20).to_le_bytes()); // MaximumSize
        b.extend((8u64 << 20).to_le_bytes()); // AllocationDelta
        assert_eq!(b.len(), 56);
        b
    }

    fn journal_data_v1() -> Vec<u8> {
        let mut b = journal_data_v0();
        b.extend(2u16.to_le_bytes()); // MinSupportedMajorVersion
        b.extend(3u16.to_le_bytes()); // MaxSupportedMajorVersion
        b.extend([0u8; 4]); // tail padding: sizeof(USN_JOURNAL_DATA_V1) == 64
        b
    }

    fn journal_data_v2() -> Vec<u8> {
        let mut b = journal_data_v0();
        b.extend(2u16.to_le_bytes()); // MinSupportedMajorVersion @56
        b.extend(4u16.to_le_bytes()); // MaxSupportedMajorVersion @58
        b.extend(FLAG_USN_TRACK_MODIFIED_RANGES_ENABLE.to_le_bytes()); // Flags @60
        b.extend((16u64 << 10).to_le_bytes()); // RangeTrackChunkSize @64
        b.extend((1i64 << 20).to_le_bytes()); // RangeTrackFileSizeThreshold @72
        assert_eq!(b.len(), 80);
        b
    }

    fn check_v0_fields(d: &UsnJournalData) {
        assert_eq!(d.journal_id, 0x01D2_3456_789A_BCDE);
        assert_eq!((d.first_usn, d.next_usn), (0x1000, 0x0123_4568));
        assert_eq!(
            (d.lowest_valid_usn, d.max_usn),
            (0x0800, 0x7FFF_FFFF_FFFF_0000)
        );
        assert_eq!((d.maximum_size, d.allocation_delta), (32 << 20, 8 << 20));
    }

    #[test]
    fn decodes_journal_data_v0() {
        let d = UsnJournalData::decode(&journal_data_v0()).unwrap();
        assert_eq!(d.version, 0);
        check_v0_fields(&d);
        assert_eq!((d.supported_major, d.range_tracking), (None, None));
    }

    #[test]
    fn decodes_journal_data_v1() {
        let b = journal_data_v1();
        for n in [60, 64] {
            let d = UsnJournalData::decode(&b[..n]).unwrap();
            assert_eq!(d.version, 1, "{n} bytes");
            check_v0_fields(&d);
            assert_eq!(d.supported_major, Some((2, 3)));
            assert_eq!(d.range_tracking, None);
        }
    }

    #[test]
    fn decodes_journal_data_v2() {
        let d = UsnJournalData::decode(&journal_data_v2()).unwrap();
        assert_eq!(d.version, 2);
        check_v0_fields(&d);
        assert_eq!(d.supported_major, Some((2, 4)));
        assert_eq!(
            d.range_tracking,
            Some(RangeTracking {
                flags: FLAG_USN_TRACK_MODIFIED_RANGES_ENABLE,
                chunk_size: 16 << 10,
                file_size_threshold: 1 << 20,
            })
        );
        // 64 bytes of a V2 buffer are a padded V1: Flags is not read from what could be padding.
        assert_eq!(
            UsnJournalData::decode(&journal_data_v2()[..64])
                .unwrap()
                .version,
            1
        );
    }

    #[test]
    fn journal_data_short_or_negative_is_an_error() {
        let b = journal_data_v0();
        for n in 0..56 {
            assert!(UsnJournalData::decode(&b[..n]).is_err(), "{n} bytes");
        }
        let mut neg = b.clone();
        neg[16..24].copy_from_slice(&(-1i64).to_le_bytes());
        assert!(UsnJournalData::decode(&neg).is_err());
    }

    #[test]
    fn read_journal_input_layout() {
        let b = read_usn_journal_input(
            0x1122_3344_5566_7788,
            0xFFFF_FFFF,
            true,
            10_000_000,
            1,
            0x01D2_0000_0000_0001,
            2,
            3,
        );
        assert_eq!(b.len(), READ_USN_JOURNAL_DATA_V1_SIZE);
        assert_eq!(b[0..8], 0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(b[8..12], 0xFFFF_FFFFu32.to_le_bytes());
        assert_eq!(b[12..16], 1u32.to_le_bytes());
        assert_eq!(b[16..24], 10_000_000u64.to_le_bytes());
        assert_eq!(b[24..32], 1u64.to_le_bytes());
        assert_eq!(b[32..40], 0x01D2_0000_0000_0001u64.to_le_bytes());
        assert_eq!(b[40..44], [2, 0, 3, 0]);
        assert_eq!(b[44..48], [0; 4]);
        let off = read_usn_journal_input(0, 0, false, 0, 0, 0, 2, 2);
        assert_eq!(off[12..16], [0; 4]);
    }

    #[test]
    fn create_journal_input_layout() {
        let b = create_usn_journal_input(32 << 20, 8 << 20);
        assert_eq!(b[..8], (32u64 << 20).to_le_bytes());
        assert_eq!(b[8..], (8u64 << 20).to_le_bytes());
    }

    // Real journals: `$UsnJrnl:$J` fragments written by Windows (tests/data/README.md). FSCTL_READ_USN_JOURNAL
    // returns the same records packed back to back after the next USN, so the decoder must find what the $J
    // scanner finds.
    const PLASO: &[u8] = include_bytes!("../../../tests/data/usn/plaso-UsnJrnl.raw");
    const GO_NTFS: &[u8] = include_bytes!("../../../tests/data/usn/go-ntfs-usn-sample.bin");
    const GO_NTFS_BASE: u64 = 312_568_880;

    /// The first `n` records the scanner finds in `$J` bytes whose offset 0 is `base`, as (USN, record bytes).
    fn scanned(j: &[u8], base: u64, n: usize) -> Vec<(u64, &[u8])> {
        UsnScanner::new(j, base)
            .filter_map(|i| match i {
                Item::Record(o, r) => {
                    let at = (o - base) as usize;
                    Some((o, &j[at..at + r.len as usize]))
                }
                _ => None,
            })
            .take(n)
            .collect()
    }

    /// An FSCTL_READ_USN_JOURNAL output: `next` then the records.
    fn output(next: u64, recs: &[&[u8]]) -> Vec<u8> {
        let mut b = next.to_le_bytes().to_vec();
        for r in recs {
            b.extend_from_slice(r);
        }
        b
    }

    fn same_as_scanner(j: &[u8], base: u64, n: usize) -> usize {
        let recs = scanned(j, base, n);
        assert!(!recs.is_empty());
        let (last_usn, last) = recs[recs.len() - 1];
        let next = last_usn + last.len() as u64;
        let bytes: Vec<&[u8]> = recs.iter().map(|r| r.1).collect();
        let buf = output(next, &bytes);
        let out = ReadJournalOutput::decode(&buf).unwrap();
        assert_eq!(out.next_usn, next);
        assert_eq!(out.range_tracking_records, 0);
        assert_eq!(out.records.len(), recs.len());
        for (got, (usn, raw)) in out.records.iter().zip(&recs) {
            let want = UsnRecord::parse(raw).unwrap();
            assert_eq!(got.usn, *usn);
            assert_eq!(got.name_string(), want.name_string());
            assert_eq!(got.file_ref, want.file_ref);
            assert_eq!(got.parent_ref, want.parent_ref);
            assert_eq!(got.reason, want.reason);
            assert_eq!(got, &want);
        }
        out.records.len()
    }

    #[test]
    fn read_journal_output_from_real_plaso_records() {
        assert_eq!(same_as_scanner(PLASO, 0, 5), 5);
        let out = {
            let recs = scanned(PLASO, 0, 5);
            let bytes: Vec<&[u8]> = recs.iter().map(|r| r.1).collect();
            let buf = output(0, &bytes);
            ReadJournalOutput::decode(&buf)
                .unwrap()
                .records
                .iter()
                .map(|r| (r.name_string(), r.file_record(), r.parent_record()))
                .collect::<Vec<_>>()
        };
        // What plaso's own tests and uffs-ntfs's scanner test say of this sample.
        assert_eq!(out[0], ("Nieuw - Tekstdocument.txt".to_string(), 30, 5));
        assert_eq!(out[3].0, "first.txt");
        // All 19 records of the sample.
        assert_eq!(same_as_scanner(PLASO, 0, usize::MAX), 19);
    }

    #[test]
    fn read_journal_output_from_real_go_ntfs_pages() {
        // 208 records spread over pages with zero-filled tails; packed, they decode to the same records.
        assert_eq!(same_as_scanner(GO_NTFS, GO_NTFS_BASE, usize::MAX), 208);
    }

    #[test]
    fn read_journal_output_with_nothing_new() {
        let buf = 4096u64.to_le_bytes();
        let out = ReadJournalOutput::decode(&buf).unwrap();
        assert_eq!((out.next_usn, out.records.len()), (4096, 0));
    }

    fn utf16(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect()
    }

    /// A V3 record (USN_RECORD_V3 layout: 128-bit ids at 8 and 24, Usn @40, name length/offset @72/74).
    fn v3(file_id: u128, usn: u64, name: &str) -> Vec<u8> {
        let n = utf16(name);
        let len = (V3_HEADER + n.len()).next_multiple_of(8);
        let mut r = vec![0u8; len];
        r[0..4].copy_from_slice(&(len as u32).to_le_bytes());
        r[4..6].copy_from_slice(&3u16.to_le_bytes());
        r[8..24].copy_from_slice(&file_id.to_le_bytes());
        r[24..40].copy_from_slice(&5u128.to_le_bytes());
        r[40..48].copy_from_slice(&usn.to_le_bytes());
        r[72..74].copy_from_slice(&(n.len() as u16).to_le_bytes());
        r[74..76].copy_from_slice(&76u16.to_le_bytes());
        r[76..76 + n.len()].copy_from_slice(&n);
        r
    }

    /// A V4 range-tracking record with one 16-byte extent.
    fn v4(usn: u64) -> Vec<u8> {
        let len = V4_HEADER + 16;
        let mut r = vec![0u8; len];
        r[0..4].copy_from_slice(&(len as u32).to_le_bytes());
        r[4..6].copy_from_slice(&4u16.to_le_bytes());
        r[40..48].copy_from_slice(&usn.to_le_bytes());
        r[60..62].copy_from_slice(&1u16.to_le_bytes());
        r[62..64].copy_from_slice(&16u16.to_le_bytes());
        r
    }

    #[test]
    fn read_journal_output_reads_v3_and_skips_v4() {
        let first = scanned(PLASO, 0, 1)[0].1;
        let id = (7u128 << 64) | (2 << 48) | 1234;
        let buf = output(
            9000,
            &[first, &v4(8000), &v3(id, 8100, "drie.txt"), &v4(8200)],
        );
        let out = ReadJournalOutput::decode(&buf).unwrap();
        assert_eq!(out.range_tracking_records, 2);
        assert_eq!(out.records.len(), 2);
        assert_eq!(out.records[0].version, 2);
        let r = out.records[1];
        assert_eq!((r.version, r.file_id, r.usn), (3, id, 8100));
        assert_eq!((r.file_record(), r.file_sequence()), (1234, 2));
        assert_eq!(r.name_string(), "drie.txt");
    }

    #[test]
    fn read_journal_output_rejects_bad_lengths() {
        let recs = scanned(PLASO, 0, 3);
        let good = output(4096, &recs.iter().map(|r| r.1).collect::<Vec<_>>());
        assert!(ReadJournalOutput::decode(&good).is_ok());
        let second_at = 8 + recs[0].1.len();

        // Shorter than the next USN.
        for n in 0..8 {
            assert!(ReadJournalOutput::decode(&good[..n]).is_err(), "{n} bytes");
        }
        // Cut anywhere inside a record: truncated.
        for n in 9..good.len() {
            let whole = [8, second_at, second_at + recs[1].1.len()].contains(&n);
            assert_eq!(
                ReadJournalOutput::decode(&good[..n]).is_ok(),
                whole,
                "cut at {n}"
            );
        }
        let with_len = |at: usize, len: u32| {
            let mut b = good.clone();
            b[at..at + 4].copy_from_slice(&len.to_le_bytes());
            b
        };
        // A record length of 0 (would loop forever if believed).
        let e = ReadJournalOutput::decode(&with_len(second_at, 0)).unwrap_err();
        assert!(e.to_string().contains("length is 0"), "{e}");
        // A record running past the end.
        let e = ReadJournalOutput::decode(&with_len(second_at, 0x1_0000)).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        // Not a multiple of 8; shorter than the V2 fixed part; other versions.
        assert!(ReadJournalOutput::decode(&with_len(second_at, 61)).is_err());
        assert!(ReadJournalOutput::decode(&with_len(second_at, 8)).is_err());
        assert!(ReadJournalOutput::decode(&with_len(second_at, (V2_HEADER - 4) as u32)).is_err());
        for major in [0u16, 1, 5, 0xFFFF] {
            let mut b = good.clone();
            b[second_at + 4..second_at + 6].copy_from_slice(&major.to_le_bytes());
            assert!(ReadJournalOutput::decode(&b).is_err(), "major {major}");
        }
        let mut short_v4 = v4(0);
        short_v4[0..4].copy_from_slice(&8u32.to_le_bytes());
        assert!(ReadJournalOutput::decode(&output(0, &[&short_v4[..8]])).is_err());
        // A negative next USN.
        let mut b = good.clone();
        b[..8].copy_from_slice(&(-1i64).to_le_bytes());
        assert!(ReadJournalOutput::decode(&b).is_err());
    }

    #[test]
    fn read_journal_output_never_panics() {
        let mut seed = 0x9E37_79B9u32;
        let recs = scanned(PLASO, 0, 4);
        let good = output(4096, &recs.iter().map(|r| r.1).collect::<Vec<_>>());
        for _ in 0..2000 {
            let mut b = good.clone();
            for _ in 0..3 {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                let at = seed as usize % b.len();
                b[at] = (seed >> 24) as u8;
            }
            let _ = ReadJournalOutput::decode(&b);
        }
    }

    // A real MFT record (record 6645 of a Windows XP $MFT, tests/data/windows-xp-mft) in an
    // NTFS_FILE_RECORD_OUTPUT_BUFFER built field by field.
    const XP_RECORD_6645: &[u8] =
        include_bytes!("../../../tests/data/windows-xp-mft/entry_6645_dos_name_base");

    fn file_record_output(frn: u64, record: &[u8]) -> Vec<u8> {
        let mut b = frn.to_le_bytes().to_vec();
        b.extend((record.len() as u32).to_le_bytes());
        b.extend_from_slice(record);
        b
    }

    #[test]
    fn file_record_output_round_trip() {
        assert_eq!(ntfs_file_record_input(6645), 6645u64.to_le_bytes());
        let buf = file_record_output((3 << 48) | 6645, XP_RECORD_6645);
        assert_eq!(buf.len(), ntfs_file_record_output_len(1024) - 3);
        let r = NtfsFileRecord::decode(&buf).unwrap();
        assert_eq!(r.record_number, 6645);
        assert_eq!(r.record, XP_RECORD_6645);
        assert!(r.is_record(6645));
        assert!(r.is_record((3 << 48) | 6645));
        // The bytes are the record that number names: its own header says so.
        let mut rec = r.record.to_vec();
        uffs_ntfs::record::apply_fixups(&mut rec).unwrap();
        let parsed = uffs_ntfs::record::Record::parse(&rec).unwrap();
        assert_eq!(parsed.header.record_number, Some(6645));
        // Trailing bytes of a larger buffer are not part of the record.
        let mut big = buf.clone();
        big.extend([0xAA; 100]);
        assert_eq!(NtfsFileRecord::decode(&big).unwrap().record, XP_RECORD_6645);
    }

    #[test]
    fn file_record_output_nearest_lower_record_is_flagged() {
        // Asked for 6650, not in use: Windows returns 6645, the nearest lower in-use record.
        let buf = file_record_output(6645, XP_RECORD_6645);
        let r = NtfsFileRecord::decode(&buf).unwrap();
        assert!(!r.is_record(6650));
        assert!(r.is_record(6645));
    }

    #[test]
    fn file_record_output_bad_lengths_are_errors() {
        let buf = file_record_output(6645, XP_RECORD_6645);
        for n in 0..buf.len() {
            assert!(NtfsFileRecord::decode(&buf[..n]).is_err(), "{n} bytes");
        }
        let mut zero = buf.clone();
        zero[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert!(NtfsFileRecord::decode(&zero).is_err());
        let mut long = buf.clone();
        long[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(NtfsFileRecord::decode(&long).is_err());
    }

    #[test]
    fn decodes_ntfs_volume_data() {
        // NTFS_VOLUME_DATA_BUFFER then NTFS_EXTENDED_VOLUME_DATA, field by field.
        let mut b = Vec::new();
        for v in [0x1234_5678_9ABC_DEF0u64, 1_000_000, 125_000, 50_000, 0] {
            b.extend(v.to_le_bytes());
        }
        for v in [512u32, 4096, 1024, 0] {
            b.extend(v.to_le_bytes());
        }
        for v in [0x0400_0000u64, 786_432, 2, 786_432, 800_000] {
            b.extend(v.to_le_bytes());
        }
        assert_eq!(b.len(), NTFS_VOLUME_DATA_BUFFER_SIZE);
        let d = NtfsVolumeData::decode(&b).unwrap();
        assert_eq!(d.volume_serial_number, 0x1234_5678_9ABC_DEF0);
        assert_eq!(
            (d.number_sectors, d.total_clusters, d.free_clusters),
            (1_000_000, 125_000, 50_000)
        );
        assert_eq!((d.bytes_per_sector, d.bytes_per_cluster), (512, 4096));
        assert_eq!(d.bytes_per_file_record_segment, 1024);
        assert_eq!(
            (d.mft_valid_data_length, d.mft_start_lcn, d.mft2_start_lcn),
            (0x0400_0000, 786_432, 2)
        );
        assert_eq!((d.mft_zone_start, d.mft_zone_end), (786_432, 800_000));
        assert_eq!(d.ntfs_version, None);
        b.extend(32u32.to_le_bytes());
        b.extend(3u16.to_le_bytes());
        b.extend(1u16.to_le_bytes());
        assert_eq!(
            NtfsVolumeData::decode(&b).unwrap().ntfs_version,
            Some((3, 1))
        );
        assert!(NtfsVolumeData::decode(&b[..95]).is_err());
    }

    #[test]
    fn storage_property_query_layout() {
        let q = storage_property_query(
            STORAGE_DEVICE_SEEK_PENALTY_PROPERTY,
            PROPERTY_STANDARD_QUERY,
        );
        assert_eq!(q, [7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let q = storage_property_query(STORAGE_DEVICE_PROPERTY, PROPERTY_EXISTS_QUERY);
        assert_eq!(q, [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        let q = storage_property_query(STORAGE_ACCESS_ALIGNMENT_PROPERTY, PROPERTY_STANDARD_QUERY);
        assert_eq!(q[..4], [6, 0, 0, 0]);
    }

    /// A STORAGE_DEVICE_DESCRIPTOR as a SATA SSD returns it, field by field, with its strings after the fixed part.
    fn device_descriptor(bus: u32) -> Vec<u8> {
        let strings: &[u8] =
            b"ATA     \0Samsung SSD 860 EVO 500GB\0RVT04B6Q\0S3Z2NB0K123456A     \0";
        let vendor = 40u32;
        let product = vendor + 9;
        let revision = product + 26;
        let serial = revision + 9;
        let mut b = Vec::new();
        b.extend(40u32.to_le_bytes()); // Version = sizeof
        b.extend((40 + strings.len() as u32).to_le_bytes()); // Size
        b.extend([0, 0, 0, 1]); // DeviceType, DeviceTypeModifier, RemovableMedia, CommandQueueing
        for o in [vendor, product, revision, serial] {
            b.extend(o.to_le_bytes());
        }
        b.extend(bus.to_le_bytes()); // BusType
        b.extend(0u32.to_le_bytes()); // RawPropertiesLength
        b.extend([0u8; 4]); // RawDeviceProperties[1] + padding
        b.extend_from_slice(strings);
        b
    }

    #[test]
    fn decodes_storage_device_descriptor() {
        let b = device_descriptor(11);
        let (version, size) = storage_descriptor_header(&b).unwrap();
        assert_eq!((version, size as usize), (40, b.len()));
        let d = decode_device_descriptor(&b).unwrap();
        assert_eq!(d.bus_type, BusType::Sata);
        assert_eq!(
            (d.device_type, d.removable_media, d.command_queueing),
            (0, false, true)
        );
        assert_eq!(d.vendor_id.as_deref(), Some("ATA"));
        assert_eq!(d.product_id.as_deref(), Some("Samsung SSD 860 EVO 500GB"));
        assert_eq!(d.product_revision.as_deref(), Some("RVT04B6Q"));
        assert_eq!(d.serial_number.as_deref(), Some("S3Z2NB0K123456A"));
        assert_eq!(d.raw_properties_length, 0);
        assert_eq!(
            decode_device_descriptor(&device_descriptor(17))
                .unwrap()
                .bus_type,
            BusType::Nvme
        );
    }

    #[test]
    fn storage_device_descriptor_missing_strings_and_short_buffers() {
        let mut b = device_descriptor(7);
        b[12..16].copy_from_slice(&0u32.to_le_bytes()); // no vendor
        b[20..24].copy_from_slice(&8u32.to_le_bytes()); // into the fixed part
        b[24..28].copy_from_slice(&5000u32.to_le_bytes()); // past the returned bytes
        let d = decode_device_descriptor(&b).unwrap();
        assert_eq!(d.bus_type, BusType::Usb);
        assert_eq!(
            (d.vendor_id, d.product_revision, d.serial_number),
            (None, None, None)
        );
        assert_eq!(d.product_id.as_deref(), Some("Samsung SSD 860 EVO 500GB"));
        // A buffer cut inside the product id: the string ends with the buffer.
        let cut = &device_descriptor(11)[..49 + 7];
        assert_eq!(
            decode_device_descriptor(cut).unwrap().product_id.as_deref(),
            Some("Samsung")
        );
        for n in 0..STORAGE_DEVICE_DESCRIPTOR_FIXED {
            assert!(decode_device_descriptor(&b[..n]).is_none(), "{n} bytes");
        }
        assert!(storage_descriptor_header(&b[..7]).is_none());
    }

    #[test]
    fn bus_type_values_and_names() {
        let table = [
            (0, BusType::Unknown, "Unknown"),
            (1, BusType::Scsi, "Scsi"),
            (2, BusType::Atapi, "Atapi"),
            (3, BusType::Ata, "Ata"),
            (4, BusType::Ieee1394, "1394"),
            (5, BusType::Ssa, "Ssa"),
            (6, BusType::Fibre, "Fibre"),
            (7, BusType::Usb, "Usb"),
            (8, BusType::Raid, "RAID"),
            (9, BusType::IScsi, "iScsi"),
            (10, BusType::Sas, "Sas"),
            (11, BusType::Sata, "Sata"),
            (12, BusType::Sd, "Sd"),
            (13, BusType::Mmc, "Mmc"),
            (14, BusType::Virtual, "Virtual"),
            (15, BusType::FileBackedVirtual, "FileBackedVirtual"),
            (16, BusType::Spaces, "Spaces"),
            (17, BusType::Nvme, "Nvme"),
            (18, BusType::Scm, "SCM"),
            (19, BusType::Ufs, "Ufs"),
            (20, BusType::Other(20), "Other"),
            (0x7F, BusType::Other(0x7F), "Other"),
        ];
        for (v, t, name) in table {
            assert_eq!(BusType::from_u32(v), t, "{v}");
            assert_eq!(t.to_u32(), v);
            assert_eq!(t.name(), name);
        }
    }

    #[test]
    fn decodes_seek_penalty_and_alignment() {
        let mut b = Vec::new();
        b.extend(12u32.to_le_bytes());
        b.extend(12u32.to_le_bytes());
        b.extend([1, 0, 0, 0]);
        assert_eq!(decode_seek_penalty(&b), Some(true));
        b[8] = 0;
        assert_eq!(decode_seek_penalty(&b), Some(false));
        assert_eq!(decode_seek_penalty(&b[..9]), Some(false));
        assert_eq!(decode_seek_penalty(&b[..8]), None);

        let mut a = Vec::new();
        for v in [28u32, 28, 64, 0, 512, 4096, 0] {
            a.extend(v.to_le_bytes());
        }
        let d = decode_access_alignment(&a).unwrap();
        assert_eq!(
            (d.bytes_per_logical_sector, d.bytes_per_physical_sector),
            (512, 4096)
        );
        assert_eq!(
            (d.bytes_per_cache_line, d.bytes_offset_for_sector_alignment),
            (64, 0)
        );
        assert!(decode_access_alignment(&a[..27]).is_none());
    }

    #[test]
    fn decodes_geometry_and_length() {
        // DISK_GEOMETRY_EX of a 500 GB disk, field by field, then partition data that is not decoded.
        let mut b = Vec::new();
        b.extend(60_801i64.to_le_bytes()); // Cylinders
        b.extend(12u32.to_le_bytes()); // MediaType = FixedMedia
        b.extend(255u32.to_le_bytes()); // TracksPerCylinder
        b.extend(63u32.to_le_bytes()); // SectorsPerTrack
        b.extend(512u32.to_le_bytes()); // BytesPerSector
        b.extend(500_107_862_016i64.to_le_bytes()); // DiskSize
        b.extend([0u8; 16]);
        let g = decode_disk_geometry_ex(&b).unwrap();
        assert_eq!(g.bytes_per_sector, 512);
        assert_eq!(g.disk_size, 500_107_862_016);
        assert_eq!(
            (
                g.cylinders,
                g.media_type,
                g.tracks_per_cylinder,
                g.sectors_per_track
            ),
            (60_801, 12, 255, 63)
        );
        assert!(decode_disk_geometry_ex(&b[..31]).is_none());

        assert_eq!(
            decode_length_info(&500_107_862_016i64.to_le_bytes()).unwrap(),
            500_107_862_016
        );
        assert!(decode_length_info(&(-1i64).to_le_bytes()).is_none());
        assert!(decode_length_info(&[0; 7]).is_none());
    }

    #[test]
    fn io_profile_table() {
        let hdd = (2, MIB);
        let ssd = (8, 2 * MIB);
        let nvme = (32, 4 * MIB);
        let table = [
            (Some(BusType::Sata), Some(true), hdd, "HDD"),
            (Some(BusType::Usb), Some(true), hdd, "HDD"),
            (None, Some(true), hdd, "HDD"),
            (Some(BusType::Nvme), Some(true), hdd, "HDD"),
            (Some(BusType::Sata), Some(false), ssd, "SSD"),
            (Some(BusType::Ata), Some(false), ssd, "SSD"),
            (Some(BusType::Usb), Some(false), ssd, "SSD"),
            (None, Some(false), ssd, "SSD"),
            (Some(BusType::Nvme), Some(false), nvme, "NVMe"),
            (Some(BusType::Nvme), None, nvme, "NVMe"),
            (Some(BusType::Scm), None, nvme, "storage-class"),
            (Some(BusType::Sata), None, ssd, "SSD defaults"),
        ];
        for (bus, seek, (concurrency, io_size), why) in table {
            let p = io_profile(bus, seek);
            assert_eq!(
                (p.concurrency, p.io_size),
                (concurrency, io_size),
                "{bus:?} {seek:?}"
            );
            assert!(p.why.contains(why), "{bus:?} {seek:?}: {}", p.why);
        }
        assert_eq!(
            io_profile(None, None),
            IoProfile {
                concurrency: 8,
                io_size: MIB,
                why: "unknown device: 8 reads of 1 MiB"
            }
        );
        assert_eq!(IoProfile::unknown(), io_profile(None, None));
        assert_eq!(
            (IoProfile::file().concurrency, IoProfile::file().io_size),
            (1, MIB)
        );
    }
}
