//! One MFT record through fixups, the header, the attribute walk and every attribute value parser.
#![no_main]

use libfuzzer_sys::fuzz_target;
use uffs_ntfs::attr::{kind, AttributeBody, AttributeList, FileName, StandardInformation, VolumeInformation};
use uffs_ntfs::record::{apply_fixups, Record};

fuzz_target!(|data: &[u8]| {
    let mut rec = data.to_vec();
    let _ = apply_fixups(&mut rec);
    let Ok(r) = Record::parse(&rec) else { return };
    for a in r.attributes() {
        let Ok(a) = a else { break };
        let _ = a.name();
        let Ok(body) = a.body() else { continue };
        match body {
            AttributeBody::Resident(v) => match a.type_code {
                kind::STANDARD_INFORMATION => drop(StandardInformation::parse(v)),
                kind::FILE_NAME => {
                    if let Ok(f) = FileName::parse(v) {
                        let _ = uffs_ntfs::utf16::decode(f.name);
                    }
                }
                kind::ATTRIBUTE_LIST => AttributeList::new(v).take(10_000).for_each(drop),
                kind::VOLUME_INFORMATION => drop(VolumeInformation::parse(v)),
                kind::REPARSE_POINT => drop(uffs_ntfs::attr::reparse_tag(v)),
                _ => {}
            },
            AttributeBody::NonResident(nr) => nr.runs().for_each(drop),
        }
    }
});
