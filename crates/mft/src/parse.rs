//! One MFT file record to the index builder's parsed form ([`uffs_index::batch`]).

use uffs_index::batch::{
    IndexRoot, NameInfo, RecordBatch, RecordInfo, StdInfo, StreamInfo, StreamSizes,
};
use uffs_ntfs::attr::{file_attr, kind, AttributeBody, FileName, StandardInformation};
use uffs_ntfs::record::{apply_fixups, flags, has_file_signature, Record};
use uffs_ntfs::utf16;

use crate::plan::in_bitmap;

/// `$I30` in UTF-16LE: the name of a folder's index of file names.
const I30: &[u8] = &[b'$', 0, b'I', 0, b'3', 0, b'0', 0];

/// What to keep from a chunk of records.
#[derive(Debug, Clone, Copy)]
pub struct ParseOptions<'a> {
    pub record_size: usize,
    /// Bytes per cluster, which turns runs into allocated bytes; 0 when unknown (a raw `$MFT` capture whose
    /// record 0 did not tell), and then the attribute headers' figures stand in.
    pub cluster_size: u64,
    /// `$MFT:$BITMAP`; records it marks unused are skipped unless `include_unused`.
    pub bitmap: Option<&'a [u8]>,
    pub include_unused: bool,
}

/// Parses the records in `buf` (record `first` onwards) into `out`. Damaged records are counted, never fatal.
pub fn parse_chunk(buf: &mut [u8], first: u64, opts: &ParseOptions<'_>, out: &mut RecordBatch) {
    for (i, rec) in buf.chunks_exact_mut(opts.record_size).enumerate() {
        let number = first + i as u64;
        if !opts.include_unused {
            let used = opts.bitmap.is_none_or(|b| in_bitmap(b, number));
            // The flags live in the first 512 bytes, before any fixup position: safe to test before fixups.
            if !used
                || rec
                    .get(0x16)
                    .is_some_and(|f| u16::from(*f) & flags::IN_USE == 0)
            {
                continue;
            }
        }
        parse_record(rec, number, opts.cluster_size, out);
    }
}

/// The bytes of clusters a non-resident attribute extent holds: its runs' stored clusters, holes left out. With
/// the cluster size unknown, the first extent's header stands in (its compressed size for a compressed or sparse
/// stream, else its allocated size; `$BadClus:$Bad` then claims the whole volume).
fn stored_bytes(nr: &uffs_ntfs::attr::NonResident<'_>, cluster_size: u64) -> u64 {
    if cluster_size != 0 {
        nr.stored_clusters().saturating_mul(cluster_size)
    } else if nr.start_vcn == 0 {
        nr.compressed_size.unwrap_or(nr.allocated_size)
    } else {
        0
    }
}

/// Parses one record into `out`; returns false if it was empty or unusable (and counted as such). `cluster_size`
/// as in [`ParseOptions`].
pub fn parse_record(rec: &mut [u8], number: u64, cluster_size: u64, out: &mut RecordBatch) -> bool {
    if !has_file_signature(rec) {
        // "BAAD" marks a record that chkdsk found damaged; zeros or garbage mean the slot was never used.
        if rec.starts_with(b"BAAD") {
            out.counts.corrupt += 1;
        } else {
            out.counts.empty += 1;
        }
        return false;
    }
    out.counts.parsed += 1;
    if apply_fixups(rec).is_err() {
        out.counts.corrupt += 1;
        return false;
    }
    let Ok(r) = Record::parse(rec) else {
        out.counts.corrupt += 1;
        return false;
    };
    let h = r.header;
    let mut info = RecordInfo {
        number,
        sequence: h.sequence,
        header_flags: h.flags,
        base: h.base.0,
        names: out.names.len() as u32..out.names.len() as u32,
        streams: out.streams.len() as u32..out.streams.len() as u32,
        ..RecordInfo::default()
    };
    let mut fn_reparse = 0;
    let mut damaged = false;
    for a in r.attributes() {
        let Ok(a) = a else {
            damaged = true;
            break;
        };
        // Decode only the attributes the index uses, and the clusters of any non-resident one; the rest are
        // skipped by their header alone.
        match a.type_code {
            kind::STANDARD_INFORMATION
            | kind::ATTRIBUTE_LIST
            | kind::FILE_NAME
            | kind::DATA
            | kind::INDEX_ROOT
            | kind::REPARSE_POINT => {}
            _ if a.is_resident() => continue,
            _ => {}
        }
        let Ok(body) = a.body() else {
            damaged = true;
            continue;
        };
        match (a.type_code, body) {
            (kind::STANDARD_INFORMATION, AttributeBody::Resident(v)) => {
                if let Ok(si) = StandardInformation::parse(v) {
                    info.std_info = Some(StdInfo {
                        created: si.created,
                        modified: si.modified,
                        mft_changed: si.mft_changed,
                        accessed: si.accessed,
                        attributes: si.file_attributes,
                    });
                }
            }
            (kind::ATTRIBUTE_LIST, body) => {
                info.has_attribute_list = true;
                if let AttributeBody::NonResident(nr) = body {
                    info.other_allocated = info
                        .other_allocated
                        .saturating_add(stored_bytes(&nr, cluster_size));
                }
            }
            (kind::FILE_NAME, AttributeBody::Resident(v)) => match FileName::parse(v) {
                Ok(f) => {
                    let start = out.text.len() as u32;
                    utf16::decode_into(f.name, &mut out.text);
                    if f.flags & file_attr::REPARSE_POINT != 0 {
                        fn_reparse = f.reparse_tag;
                    }
                    out.names.push(NameInfo {
                        parent: f.parent.0,
                        namespace: f.namespace,
                        attr_id: a.id(),
                        created: f.created,
                        modified: f.modified,
                        mft_changed: f.mft_changed,
                        accessed: f.accessed,
                        text: start..out.text.len() as u32,
                    });
                }
                Err(_) => damaged = true,
            },
            (kind::DATA, body) => {
                // Only the first extent of a stream states its sizes; every extent adds the clusters it holds.
                let (sizes, tail) = match body {
                    AttributeBody::Resident(v) => (
                        StreamSizes {
                            size: v.len() as u64,
                            allocated: 0,
                            attr_flags: a.flags(),
                            attr_id: a.id(),
                        },
                        false,
                    ),
                    AttributeBody::NonResident(nr) => (
                        StreamSizes {
                            size: if nr.start_vcn == 0 { nr.data_size } else { 0 },
                            allocated: stored_bytes(&nr, cluster_size),
                            attr_flags: a.flags(),
                            attr_id: a.id(),
                        },
                        nr.start_vcn != 0,
                    ),
                };
                if a.is_unnamed() {
                    if tail {
                        info.other_allocated = info.other_allocated.saturating_add(sizes.allocated);
                    } else {
                        info.data = Some(sizes);
                    }
                } else if let Ok(name) = a.name() {
                    let start = out.text.len() as u32;
                    utf16::decode_into(name, &mut out.text);
                    out.streams.push(StreamInfo {
                        sizes,
                        text: start..out.text.len() as u32,
                        tail,
                    });
                } else {
                    damaged = true;
                }
            }
            // A folder's index of names; other index roots ($O, $Q, $R, $SDH, $SII of metafiles) are no entries.
            (kind::INDEX_ROOT, AttributeBody::Resident(v)) if a.name().is_ok_and(|n| n == I30) => {
                info.index_root = Some(IndexRoot {
                    attr_id: a.id(),
                    size: v.len() as u32,
                });
            }
            (kind::REPARSE_POINT, AttributeBody::Resident(v)) => {
                info.reparse_tag = uffs_ntfs::attr::reparse_tag(v).unwrap_or(0);
            }
            (_, AttributeBody::NonResident(nr)) => {
                info.other_allocated = info
                    .other_allocated
                    .saturating_add(stored_bytes(&nr, cluster_size));
            }
            _ => {}
        }
    }
    if damaged {
        out.counts.damaged += 1;
    }
    if info.reparse_tag == 0 {
        // A non-resident reparse point: `$FILE_NAME` keeps a copy of the tag.
        info.reparse_tag = fn_reparse;
    }
    info.names.end = out.names.len() as u32;
    info.streams.end = out.streams.len() as u32;
    out.records.push(info);
    true
}
