//! Attributes of a file record and the values uffs reads from them: `$STANDARD_INFORMATION`, `$FILE_NAME`,
//! `$ATTRIBUTE_LIST` entries, `$REPARSE_POINT` tags, `$VOLUME_NAME` and `$VOLUME_INFORMATION`.

use crate::le::{bytes, u16_at, u32_at, u64_at, u8_at};
use crate::record::FileRef;
use crate::runlist::Runlist;
use crate::{Error, Result};

/// Attribute type codes.
pub mod kind {
    pub const STANDARD_INFORMATION: u32 = 0x10;
    pub const ATTRIBUTE_LIST: u32 = 0x20;
    pub const FILE_NAME: u32 = 0x30;
    pub const OBJECT_ID: u32 = 0x40;
    pub const SECURITY_DESCRIPTOR: u32 = 0x50;
    pub const VOLUME_NAME: u32 = 0x60;
    pub const VOLUME_INFORMATION: u32 = 0x70;
    pub const DATA: u32 = 0x80;
    pub const INDEX_ROOT: u32 = 0x90;
    pub const INDEX_ALLOCATION: u32 = 0xA0;
    pub const BITMAP: u32 = 0xB0;
    pub const REPARSE_POINT: u32 = 0xC0;

    /// The type's name, for messages (`$DATA`); `attribute` for a type not listed here.
    pub fn name(code: u32) -> &'static str {
        match code {
            STANDARD_INFORMATION => "$STANDARD_INFORMATION",
            ATTRIBUTE_LIST => "$ATTRIBUTE_LIST",
            FILE_NAME => "$FILE_NAME",
            OBJECT_ID => "$OBJECT_ID",
            SECURITY_DESCRIPTOR => "$SECURITY_DESCRIPTOR",
            VOLUME_NAME => "$VOLUME_NAME",
            VOLUME_INFORMATION => "$VOLUME_INFORMATION",
            DATA => "$DATA",
            INDEX_ROOT => "$INDEX_ROOT",
            INDEX_ALLOCATION => "$INDEX_ALLOCATION",
            BITMAP => "$BITMAP",
            REPARSE_POINT => "$REPARSE_POINT",
            _ => "attribute",
        }
    }
}

/// Attribute header flags.
pub mod flags {
    pub const COMPRESSED: u16 = 0x0001;
    pub const ENCRYPTED: u16 = 0x4000;
    pub const SPARSE: u16 = 0x8000;
}

/// Windows file attribute bits as stored in `$STANDARD_INFORMATION` and `$FILE_NAME`.
pub mod file_attr {
    pub const READONLY: u32 = 0x0001;
    pub const HIDDEN: u32 = 0x0002;
    pub const SYSTEM: u32 = 0x0004;
    pub const DIRECTORY: u32 = 0x0010;
    pub const ARCHIVE: u32 = 0x0020;
    pub const DEVICE: u32 = 0x0040;
    pub const NORMAL: u32 = 0x0080;
    pub const TEMPORARY: u32 = 0x0100;
    pub const SPARSE: u32 = 0x0200;
    pub const REPARSE_POINT: u32 = 0x0400;
    pub const COMPRESSED: u32 = 0x0800;
    pub const OFFLINE: u32 = 0x1000;
    pub const NOT_CONTENT_INDEXED: u32 = 0x2000;
    pub const ENCRYPTED: u32 = 0x4000;
    /// In `$FILE_NAME` flags: the file is a directory (has an `$I30` index).
    pub const FN_DIRECTORY: u32 = 0x1000_0000;
}

/// One attribute of a record. The header fields are decoded; the name and body are decoded on request.
#[derive(Debug, Clone, Copy)]
pub struct Attribute<'a> {
    pub type_code: u32,
    /// The whole attribute, header included.
    bytes: &'a [u8],
}

/// Where an attribute's value lives.
#[derive(Debug, Clone, Copy)]
pub enum AttributeBody<'a> {
    Resident(&'a [u8]),
    NonResident(NonResident<'a>),
}

/// The header of a non-resident attribute (one extent of it: large attributes span several records, each
/// extent covering VCNs `start_vcn..=last_vcn`; only the first extent's sizes are meaningful).
#[derive(Debug, Clone, Copy)]
pub struct NonResident<'a> {
    pub start_vcn: u64,
    pub last_vcn: u64,
    pub runlist: &'a [u8],
    pub compression_unit: u8,
    pub allocated_size: u64,
    pub data_size: u64,
    pub initialized_size: u64,
    pub compressed_size: Option<u64>,
}

impl<'a> NonResident<'a> {
    pub fn runs(&self) -> Runlist<'a> {
        Runlist::new(self.runlist, self.start_vcn)
    }

    /// The clusters this extent's runs hold on the volume (holes left out): see
    /// [`crate::runlist::stored_clusters`].
    pub fn stored_clusters(&self) -> u64 {
        crate::runlist::stored_clusters(self.runlist)
    }
}

impl<'a> Attribute<'a> {
    /// `bytes` is the whole attribute, at least 24 bytes (the record walk guarantees it).
    pub(crate) fn from_bytes(type_code: u32, bytes: &'a [u8]) -> Attribute<'a> {
        Attribute { type_code, bytes }
    }

    pub fn is_resident(&self) -> bool {
        self.bytes[8] == 0
    }

    /// Attribute header flags (compressed, encrypted, sparse).
    pub fn flags(&self) -> u16 {
        u16::from_le_bytes([self.bytes[0x0C], self.bytes[0x0D]])
    }

    pub fn id(&self) -> u16 {
        u16::from_le_bytes([self.bytes[0x0E], self.bytes[0x0F]])
    }

    /// True for an unnamed attribute (the default `$DATA` stream, `$I30`-less attributes …), without decoding.
    pub fn is_unnamed(&self) -> bool {
        self.bytes[9] == 0
    }

    /// The attribute's name in raw UTF-16LE (empty for the unnamed `$DATA` stream).
    pub fn name(&self) -> Result<&'a [u8]> {
        let name_len = usize::from(self.bytes[9]) * 2;
        let name_off = usize::from(u16::from_le_bytes([self.bytes[0x0A], self.bytes[0x0B]]));
        bytes(self.bytes, name_off, name_len, "attribute name")
    }

    pub fn body(&self) -> Result<AttributeBody<'a>> {
        if self.is_resident() {
            crate::record::parse_resident(self.bytes).map(AttributeBody::Resident)
        } else {
            crate::record::parse_non_resident(self.bytes, self.flags())
                .map(AttributeBody::NonResident)
        }
    }
}

/// The parts of `$STANDARD_INFORMATION` uffs keeps. Times are FILETIME (100 ns ticks since 1601-01-01 UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StandardInformation {
    pub created: u64,
    pub modified: u64,
    pub mft_changed: u64,
    pub accessed: u64,
    pub file_attributes: u32,
}

impl StandardInformation {
    pub fn parse(v: &[u8]) -> Result<StandardInformation> {
        const WHAT: &str = "$STANDARD_INFORMATION";
        Ok(StandardInformation {
            created: u64_at(v, 0x00, WHAT)?,
            modified: u64_at(v, 0x08, WHAT)?,
            mft_changed: u64_at(v, 0x10, WHAT)?,
            accessed: u64_at(v, 0x18, WHAT)?,
            file_attributes: u32_at(v, 0x20, WHAT)?,
        })
    }
}

/// `$FILE_NAME` namespaces.
pub mod namespace {
    pub const POSIX: u8 = 0;
    pub const WIN32: u8 = 1;
    pub const DOS: u8 = 2;
    pub const WIN32_AND_DOS: u8 = 3;
}

/// A `$FILE_NAME` value: one name of the file in one directory.
#[derive(Debug, Clone, Copy)]
pub struct FileName<'a> {
    pub parent: FileRef,
    pub created: u64,
    pub modified: u64,
    pub mft_changed: u64,
    pub accessed: u64,
    pub allocated_size: u64,
    pub data_size: u64,
    pub flags: u32,
    pub reparse_tag: u32,
    pub namespace: u8,
    /// The name in raw UTF-16LE.
    pub name: &'a [u8],
}

impl<'a> FileName<'a> {
    pub fn parse(v: &'a [u8]) -> Result<FileName<'a>> {
        const WHAT: &str = "$FILE_NAME";
        let name_len = usize::from(u8_at(v, 0x40, WHAT)?) * 2;
        Ok(FileName {
            parent: FileRef(u64_at(v, 0x00, WHAT)?),
            created: u64_at(v, 0x08, WHAT)?,
            modified: u64_at(v, 0x10, WHAT)?,
            mft_changed: u64_at(v, 0x18, WHAT)?,
            accessed: u64_at(v, 0x20, WHAT)?,
            allocated_size: u64_at(v, 0x28, WHAT)?,
            data_size: u64_at(v, 0x30, WHAT)?,
            flags: u32_at(v, 0x38, WHAT)?,
            reparse_tag: u32_at(v, 0x3C, WHAT)?,
            namespace: u8_at(v, 0x41, WHAT)?,
            name: bytes(v, 0x42, name_len, WHAT)?,
        })
    }

    /// DOS 8.3 names are aliases of a long name and never entries of their own.
    pub fn is_dos_only(&self) -> bool {
        self.namespace == namespace::DOS
    }
}

/// One entry of an `$ATTRIBUTE_LIST`: where (which record) an attribute or attribute extent lives.
#[derive(Debug, Clone, Copy)]
pub struct AttributeListEntry<'a> {
    pub type_code: u32,
    pub start_vcn: u64,
    pub record: FileRef,
    pub id: u16,
    pub name: &'a [u8],
}

/// Iterator over the entries of an `$ATTRIBUTE_LIST` value. Ends after yielding one error.
#[derive(Debug, Clone)]
pub struct AttributeList<'a> {
    v: &'a [u8],
    pos: usize,
}

impl<'a> AttributeList<'a> {
    pub fn new(v: &'a [u8]) -> AttributeList<'a> {
        AttributeList { v, pos: 0 }
    }
}

impl<'a> Iterator for AttributeList<'a> {
    type Item = Result<AttributeListEntry<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        const WHAT: &str = "$ATTRIBUTE_LIST entry";
        // Fewer bytes than a minimal entry left: padding at the end of the value.
        if self.v.len().saturating_sub(self.pos) < 0x1A {
            return None;
        }
        let r = (|| {
            let e = &self.v[self.pos..];
            let len = usize::from(u16_at(e, 4, WHAT)?);
            if len < 0x1A {
                return Err(Error::Invalid {
                    what: WHAT,
                    why: "entry length is below the minimum of 26",
                });
            }
            let e = bytes(e, 0, len, WHAT)?;
            let name_len = usize::from(u8_at(e, 6, WHAT)?) * 2;
            let name_off = usize::from(u8_at(e, 7, WHAT)?);
            let entry = AttributeListEntry {
                type_code: u32_at(e, 0, WHAT)?,
                start_vcn: u64_at(e, 8, WHAT)?,
                record: FileRef(u64_at(e, 0x10, WHAT)?),
                id: u16_at(e, 0x18, WHAT)?,
                name: bytes(e, name_off, name_len, WHAT)?,
            };
            Ok((entry, len))
        })();
        match r {
            Ok((entry, len)) => {
                self.pos += len;
                Some(Ok(entry))
            }
            Err(e) => {
                self.pos = self.v.len();
                Some(Err(e))
            }
        }
    }
}

/// The reparse tag at the start of a `$REPARSE_POINT` value.
pub fn reparse_tag(v: &[u8]) -> Result<u32> {
    u32_at(v, 0, "$REPARSE_POINT")
}

/// `$VOLUME_INFORMATION`: the NTFS version and volume flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolumeInformation {
    pub major: u8,
    pub minor: u8,
    pub flags: u16,
}

impl VolumeInformation {
    pub fn parse(v: &[u8]) -> Result<VolumeInformation> {
        const WHAT: &str = "$VOLUME_INFORMATION";
        Ok(VolumeInformation {
            major: u8_at(v, 0x08, WHAT)?,
            minor: u8_at(v, 0x09, WHAT)?,
            flags: u16_at(v, 0x0A, WHAT)?,
        })
    }
}
