//! The MFT of one volume (or of a raw `$MFT` capture): record size, where each part of the `$MFT` stream lives,
//! which records are in use, and the volume's label and NTFS version.
//!
//! The `$MFT` describes itself: record 0's `$DATA` runlist maps it, and when it is fragmented enough that the
//! runlist no longer fits, record 0 has an `$ATTRIBUTE_LIST` that points at extension records holding later
//! extents. Those extension records are themselves in the MFT, always in an extent that is already known.

use uffs_ntfs::attr::{kind, AttributeBody, AttributeList, NonResident, VolumeInformation};
use uffs_ntfs::boot::{BootSector, MAX_CLUSTER_SIZE};
use uffs_ntfs::record::{apply_fixups, Record};
use uffs_ntfs::runlist::Run;
use uffs_ntfs::utf16;

use crate::device::Device;
use crate::{Error, Result};

/// A partition of a whole disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// 1-based: MBR primaries 1–4 by slot, logical partitions from 5; GPT by entry position.
    pub index: u32,
    pub start: u64,
    pub len: u64,
    /// Partition type as the table states it (`0x07`, a GPT type's name such as `efi-system`, or its GUID).
    pub kind: String,
    /// The name a GPT gives it; empty on MBR.
    pub name: String,
    /// It starts at or past the end of the image (one cut short): nothing of it can be read.
    pub cut_off: bool,
    /// Its first sector is an NTFS boot sector.
    pub ntfs: bool,
    /// The file system its first sector starts, when uffs reads it (NTFS, FAT12/16/32, exFAT, ext2/3/4, XFS, Btrfs, HFS+, HFSX, APFS).
    pub filesystem: Option<uffs_index::FileSystem>,
}

impl PartitionInfo {
    /// uffs reads the file system it holds.
    pub fn readable(&self) -> bool {
        self.filesystem.is_some()
    }
}

/// A contiguous piece of the `$MFT` stream: `len` bytes from `mft_offset` in the stream are at `device_offset`
/// on the device (`None` for a sparse hole, which reads as zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MftRun {
    pub mft_offset: u64,
    pub len: u64,
    pub device_offset: Option<u64>,
}

/// The clusters of the volume a boot sector describes (those `$Bitmap` has a bit for).
fn clusters_of(boot: &BootSector) -> u64 {
    boot.total_sectors / (boot.cluster_size / u64::from(boot.bytes_per_sector)).max(1)
}

/// A volume's clusters, from `$Bitmap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    pub cluster_size: u64,
    pub clusters_total: u64,
    pub clusters_in_use: u64,
}

impl Space {
    pub fn bytes_in_use(&self) -> u64 {
        self.clusters_in_use.saturating_mul(self.cluster_size)
    }
    pub fn bytes_total(&self) -> u64 {
        self.clusters_total.saturating_mul(self.cluster_size)
    }
}

/// Hostile images can declare absurd sizes; these caps keep allocations bounded.
const MAX_ATTRIBUTE_LIST: u64 = 16 << 20;
const MAX_EXTENSION_RECORDS: usize = 1 << 16;

#[derive(Debug, Clone)]
pub struct Volume {
    /// How the user named it (`disk.img@2`, `/dev/sdb1`, `C:` …).
    pub name: String,
    pub device: Device,
    /// `None` for a raw `$MFT` capture.
    pub boot: Option<BootSector>,
    pub partition: Option<PartitionInfo>,
    pub record_size: u32,
    /// Bytes per cluster: the boot sector's; for a raw `$MFT` capture, what its first records' data attributes
    /// imply, or 0 when they do not tell.
    pub cluster_size: u64,
    /// Logical size of the `$MFT` stream.
    pub mft_size: u64,
    pub records_total: u64,
    pub runs: Vec<MftRun>,
    /// Record 0 needed an `$ATTRIBUTE_LIST` to describe the `$MFT` (it is heavily fragmented).
    pub mft_attribute_list: bool,
    /// `$MFT:$BITMAP`, one bit per record; `None` for a raw capture.
    pub bitmap: Option<Vec<u8>>,
    pub label: Option<String>,
    pub version: Option<(u8, u8)>,
    /// The first four bytes of record 0 as read: `FILE` proves the MFT was found.
    pub first_record_signature: [u8; 4],
    /// A raw capture whose records had their update-sequence fixups applied already (as `ntfscat` writes a
    /// `$MFT`): each record read gets its protection back (see [`uffs_ntfs::record::protect`]), so that every
    /// reader checks it as it would a record on disk.
    pub fixups_applied: bool,
    /// Another file system than NTFS (FAT, exFAT), read through its own tables; `None` for NTFS and raw `$MFT`
    /// captures, whose MFT fields above are then the ones that mean something.
    pub fs: Option<std::sync::Arc<crate::neutral::Neutral>>,
    /// For the volume as a shadow copy saw it (`SOURCE@vssN`): which store that is, named for good by its ids
    /// and creation time (its position N shifts when Windows deletes older ones).
    pub snapshot: Option<crate::vss::StoreInfo>,
}

impl Volume {
    /// A fingerprint of the volume's state, cheap to take (it reads nothing beyond what opening read): the
    /// serial, the MFT's size and extents, `$MFT:$BITMAP` (which changes when files are created or deleted), and
    /// for an image file its size and modification time. A different stamp means the index is stale. On a block
    /// device, renames and writes that allocate no record leave it unchanged; the change journal covers those.
    pub fn change_stamp(&self) -> u64 {
        use std::hash::Hasher as _;
        if let Some(fs) = &self.fs {
            // No MFT to fingerprint: the entries themselves (a scan, which is cheap on these file systems).
            return fs.stamp(&self.name).unwrap_or(0);
        }
        let mut h = twox_hash::XxHash3_64::new();
        h.write(&self.boot.map_or(0, |b| b.serial).to_le_bytes());
        if let Some(fs) = &self.fs {
            h.write(&fs.serial().to_le_bytes());
        }
        h.write(&self.mft_size.to_le_bytes());
        h.write(&self.records_total.to_le_bytes());
        for r in &self.runs {
            h.write(&r.mft_offset.to_le_bytes());
            h.write(&r.len.to_le_bytes());
            h.write(&r.device_offset.unwrap_or(u64::MAX).to_le_bytes());
        }
        if let Some(b) = &self.bitmap {
            h.write(b);
        }
        if let Some((len, mtime)) = self.device.file_stamp() {
            h.write(&len.to_le_bytes());
            h.write(&mtime.to_le_bytes());
        }
        h.finish()
    }

    /// Opens the NTFS volume on `device` (its boot sector is at offset 0).
    pub fn open_ntfs(
        name: &str,
        device: Device,
        partition: Option<PartitionInfo>,
    ) -> Result<Volume> {
        let mut head = vec![0u8; 512];
        let n = device
            .read_head(&mut head, 0)
            .map_err(|e| Error::io(format!("{name}: boot sector"), e))?;
        let boot = BootSector::parse(&head[..n]).map_err(|e| Error::format(name, e))?;
        let rs = boot.record_size as usize;
        let cs = boot.cluster_size;
        let mut rec0 = vec![0u8; rs];
        device
            .read_exact_at(&mut rec0, boot.mft_offset())
            .map_err(|e| {
                Error::io(
                    format!("{name}: $MFT record 0 at byte {}", boot.mft_offset()),
                    e,
                )
            })?;
        let signature = [rec0[0], rec0[1], rec0[2], rec0[3]];
        apply_fixups(&mut rec0).map_err(|e| Error::format(format!("{name}: $MFT record 0"), e))?;
        let rec =
            Record::parse(&rec0).map_err(|e| Error::format(format!("{name}: $MFT record 0"), e))?;

        let mut data_extents: Vec<Vec<Run>> = Vec::new();
        let mut mft_size = None;
        let mut bitmap_value: Option<Vec<u8>> = None;
        let mut bitmap_runs: Vec<Run> = Vec::new();
        let mut bitmap_size = 0;
        let mut attr_list: Option<Vec<u8>> = None;
        for a in rec.attributes() {
            let a = a.map_err(|e| Error::format(format!("{name}: $MFT record 0"), e))?;
            if !a.is_unnamed() {
                continue;
            }
            let body = a
                .body()
                .map_err(|e| Error::format(format!("{name}: $MFT record 0"), e))?;
            match (a.type_code, body) {
                (kind::DATA, AttributeBody::NonResident(nr)) => {
                    if nr.start_vcn == 0 {
                        mft_size = Some(nr.data_size);
                    }
                    data_extents.push(decode_runs(name, &nr)?);
                }
                (kind::BITMAP, AttributeBody::Resident(v)) => bitmap_value = Some(v.to_vec()),
                (kind::BITMAP, AttributeBody::NonResident(nr)) => {
                    if nr.start_vcn == 0 {
                        bitmap_size = nr.data_size;
                    }
                    bitmap_runs.extend(decode_runs(name, &nr)?);
                }
                (kind::ATTRIBUTE_LIST, AttributeBody::Resident(v)) => attr_list = Some(v.to_vec()),
                (kind::ATTRIBUTE_LIST, AttributeBody::NonResident(nr)) => {
                    let runs = decode_runs(name, &nr)?;
                    if nr.data_size > MAX_ATTRIBUTE_LIST {
                        return Err(Error::Source(format!(
                            "{name}: $MFT attribute list is implausibly large"
                        )));
                    }
                    attr_list = Some(read_clusters(name, &device, cs, &runs, nr.data_size)?);
                }
                _ => {}
            }
        }
        let mft_size = mft_size.ok_or_else(|| {
            Error::Source(format!("{name}: $MFT record 0 has no first $DATA extent"))
        })?;
        if mft_size > boot.volume_size() {
            return Err(Error::Source(format!(
                "{name}: $MFT claims {mft_size} bytes, more than the whole volume ({} bytes)",
                boot.volume_size()
            )));
        }
        let mut runs = to_mft_runs(&data_extents, cs, device.len());

        // Later extents of $DATA (and $BITMAP) live in extension records named by the attribute list.
        let mft_attribute_list = attr_list.is_some();
        if let Some(list) = attr_list {
            let mut wanted: Vec<(u32, u64, u64)> = Vec::new();
            for e in AttributeList::new(&list) {
                let e = e.map_err(|e| Error::format(format!("{name}: $MFT attribute list"), e))?;
                if e.name.is_empty()
                    && (e.type_code == kind::DATA || e.type_code == kind::BITMAP)
                    && e.record.record() != 0
                {
                    wanted.push((e.type_code, e.start_vcn, e.record.record()));
                }
            }
            wanted.sort_by_key(|w| (w.0, w.1));
            wanted.dedup();
            if wanted.len() > MAX_EXTENSION_RECORDS {
                return Err(Error::Source(format!(
                    "{name}: $MFT attribute list names too many extension records"
                )));
            }
            let mut buf = vec![0u8; rs];
            let mut stale = false;
            for (type_code, start_vcn, number) in wanted {
                let what = format!("{name}: $MFT extension record {number}");
                let at = number
                    .checked_mul(rs as u64)
                    .ok_or_else(|| Error::Source(format!("{what}: out of range")))?;
                // The run list is rebuilt only when a record lies past what it maps (the usual case is that every
                // extension record sits in the first extent), so many extents cost linear, not quadratic, time.
                if read_mft_bytes(&device, &runs, at, &mut buf).is_err() && stale {
                    runs = to_mft_runs(&data_extents, cs, device.len());
                    stale = false;
                }
                read_mft_bytes(&device, &runs, at, &mut buf).map_err(|e| Error::io(&what, e))?;
                apply_fixups(&mut buf).map_err(|e| Error::format(&what, e))?;
                let ext = Record::parse(&buf).map_err(|e| Error::format(&what, e))?;
                for a in ext.attributes() {
                    let a = a.map_err(|e| Error::format(&what, e))?;
                    if let (true, Ok(AttributeBody::NonResident(nr))) = (a.is_unnamed(), a.body()) {
                        if a.type_code == type_code && nr.start_vcn == start_vcn {
                            let r = decode_runs(name, &nr)?;
                            if type_code == kind::DATA {
                                data_extents.push(r);
                                stale = true;
                            } else {
                                bitmap_runs.extend(r);
                            }
                        }
                    }
                }
            }
        }
        runs = to_mft_runs(&data_extents, cs, device.len());
        clip_runs(&mut runs, mft_size, device.len());
        let records_total = mft_size / rs as u64;
        let bitmap = match bitmap_value {
            Some(v) => Some(v),
            None if !bitmap_runs.is_empty() => {
                bitmap_runs.sort_by_key(|r| r.vcn);
                let size = bitmap_size.min(records_total.div_ceil(8) + 8);
                Some(read_clusters(name, &device, cs, &bitmap_runs, size)?)
            }
            None => None,
        };
        let mut v = Volume {
            name: name.to_string(),
            device,
            boot: Some(boot),
            cluster_size: cs,
            partition,
            record_size: boot.record_size,
            mft_size,
            records_total,
            runs,
            mft_attribute_list,
            bitmap,
            label: None,
            version: None,
            first_record_signature: signature,
            fixups_applied: false,
            fs: None,
            snapshot: None,
        };
        v.read_volume_record();
        Ok(v)
    }

    /// Opens the volume of another file system than NTFS on `device` (its boot sector at offset 0) with
    /// `driver`, whose probe knew it (see [`crate::neutral`]). The MFT fields are empty: nothing reads them for
    /// such a volume.
    pub fn open_neutral(
        name: &str,
        device: Device,
        partition: Option<PartitionInfo>,
        driver: &'static dyn uffs_fs::Driver,
    ) -> Result<Volume> {
        let fs = crate::neutral::Neutral::open(name, device.clone(), driver)?;
        Ok(Volume::of_neutral(name, device, partition, fs))
    }

    /// Part `id` of this volume read alone (a Btrfs subvolume or snapshot, `@snapN`), named `name`; an error
    /// for a volume that has no such parts.
    pub fn open_state(&self, name: &str, id: u64) -> Result<Volume> {
        let Some(fs) = &self.fs else {
            return Err(Error::Source(format!(
                "{} is not a volume that keeps snapshots (Btrfs): it has no snap{id}",
                self.name
            )));
        };
        let state = fs.state(name, id)?;
        Ok(Volume::of_neutral(
            name,
            self.device.clone(),
            self.partition.clone(),
            state,
        ))
    }

    /// Volume `n` (from 1) of this container of volumes (APFS, `SOURCE@N`) read alone, named `name`; `None`
    /// when this is no container of volumes.
    pub fn open_contained(&self, name: &str, n: u32) -> Option<Result<Volume>> {
        let fs = self.fs.as_ref()?;
        if fs.volumes().is_empty() {
            return None;
        }
        Some(fs.volume(name, n).map(|part| {
            Volume::of_neutral(name, self.device.clone(), self.partition.clone(), part)
        }))
    }

    /// A mounted folder read by walking it (`reader`, a `uffs_walk::Folder`), named `name` (its path and a
    /// `/`): a volume without bytes of its own.
    pub fn open_walked(name: &str, reader: Box<dyn uffs_fs::Reader>) -> Volume {
        let device = Device::nothing();
        let fs = crate::neutral::Neutral::of(reader, device.clone(), None);
        Volume::of_neutral(name, device, None, fs)
    }

    fn of_neutral(
        name: &str,
        device: Device,
        partition: Option<PartitionInfo>,
        fs: crate::neutral::Neutral,
    ) -> Volume {
        let space = fs.space();
        Volume {
            name: name.to_string(),
            device,
            boot: None,
            partition,
            record_size: 0,
            cluster_size: space.map_or(0, |s| s.cluster_size),
            mft_size: 0,
            records_total: 0,
            runs: Vec::new(),
            mft_attribute_list: false,
            bitmap: None,
            label: None,
            version: None,
            first_record_signature: [0; 4],
            fixups_applied: false,
            fs: Some(std::sync::Arc::new(fs)),
            snapshot: None,
        }
    }

    /// `(holds, needs)` when the source holds fewer bytes than the volume has by its boot sector (an image cut
    /// short): what lies past `holds` cannot be read. `None` for a whole volume and a raw `$MFT` capture.
    pub fn truncated(&self) -> Option<(u64, u64)> {
        let needs = match (&self.boot, &self.fs) {
            (Some(b), _) => b.volume_size(),
            (None, Some(fs)) => fs.volume_len()?,
            (None, None) => return None,
        };
        let holds = self.device.len();
        (holds < needs).then_some((holds, needs))
    }

    /// The volume serial number: the NTFS boot sector's, or another file system's (0 for a raw `$MFT`).
    pub fn serial(&self) -> u64 {
        match &self.fs {
            Some(fs) => fs.serial(),
            None => self.boot.map_or(0, |b| b.serial),
        }
    }

    /// The file system's name: `NTFS`, or another's (`FAT32`, `exFAT`).
    pub fn filesystem(&self) -> uffs_index::FileSystem {
        self.fs
            .as_ref()
            .map_or(uffs_index::FileSystem::Ntfs, |f| f.filesystem)
    }

    /// Opens a raw `$MFT` capture: the file is the MFT stream; there is no bitmap, so every record is parsed
    /// and its own in-use flag decides.
    pub fn open_raw_mft(name: &str, device: Device) -> Result<Volume> {
        let mut head = [0u8; 0x20];
        device
            .read_exact_at(&mut head, 0)
            .map_err(|e| Error::io(format!("{name}: record 0"), e))?;
        // The record header's allocated size is the record size.
        let alloc = u32::from_le_bytes([head[0x1C], head[0x1D], head[0x1E], head[0x1F]]);
        let record_size = if alloc.is_power_of_two() && (512..=65536).contains(&alloc) {
            alloc
        } else {
            1024
        };
        let len = device.len();
        let mut v = Volume {
            name: name.to_string(),
            device,
            boot: None,
            partition: None,
            record_size,
            cluster_size: 0,
            mft_size: len,
            records_total: len / u64::from(record_size),
            runs: vec![MftRun {
                mft_offset: 0,
                len,
                device_offset: Some(0),
            }],
            mft_attribute_list: false,
            bitmap: None,
            label: None,
            version: None,
            first_record_signature: [head[0], head[1], head[2], head[3]],
            fixups_applied: false,
            fs: None,
            snapshot: None,
        };
        v.fixups_applied = v.fixups_look_applied();
        v.read_volume_record();
        v.cluster_size = v.implied_cluster_size();
        Ok(v)
    }

    /// Whether the capture's first records (up to 16) had their fixups applied already: some fail the
    /// update-sequence check as read, and pass it once protected again, and none passes it as read (a record
    /// that fails both ways is damage, and says nothing).
    fn fixups_look_applied(&self) -> bool {
        let rs = self.record_size as usize;
        let mut buf = vec![0u8; rs];
        let (mut as_read, mut applied) = (0, 0);
        for r in 0..16.min(self.records_total) {
            if self.read_records(r, &mut buf).is_err() || !buf.starts_with(b"FILE") {
                continue;
            }
            let mut copy = buf.clone();
            if apply_fixups(&mut copy).is_ok() {
                as_read += 1;
                continue;
            }
            uffs_ntfs::record::protect(&mut buf);
            if apply_fixups(&mut buf).is_ok() {
                applied += 1;
            }
        }
        as_read == 0 && applied > 0
    }

    /// The cluster size a capture's system files imply: the first extent of a non-resident unnamed `$DATA`
    /// among records 0 to 15 that maps its whole stream states its allocated size and its clusters (`last_vcn +
    /// 1`); their ratio is the cluster size. 0 when none of them tells.
    fn implied_cluster_size(&self) -> u64 {
        let mut buf = vec![0u8; self.record_size as usize];
        for r in 0..16.min(self.records_total) {
            if self.read_records(r, &mut buf).is_err() || apply_fixups(&mut buf).is_err() {
                continue;
            }
            let Ok(rec) = Record::parse(&buf) else {
                continue;
            };
            for a in rec.attributes().map_while(|a| a.ok()) {
                if a.type_code != kind::DATA || !a.is_unnamed() {
                    continue;
                }
                if let Ok(AttributeBody::NonResident(nr)) = a.body() {
                    let clusters = nr.last_vcn.wrapping_add(1);
                    let cs = nr.allocated_size.checked_div(clusters).unwrap_or(0);
                    let whole = nr.start_vcn == 0 && cs * clusters == nr.allocated_size;
                    if whole && cs.is_power_of_two() && (512..=MAX_CLUSTER_SIZE).contains(&cs) {
                        return cs;
                    }
                }
            }
        }
        0
    }

    /// Label and version from `$Volume` (record 3); missing or damaged, they stay unknown.
    fn read_volume_record(&mut self) {
        let mut buf = vec![0u8; self.record_size as usize];
        if self.read_records(3, &mut buf).is_err() || apply_fixups(&mut buf).is_err() {
            return;
        }
        let Ok(rec) = Record::parse(&buf) else { return };
        for a in rec.attributes().map_while(|a| a.ok()) {
            let Ok(body) = a.body() else { continue };
            match (a.type_code, body) {
                (kind::VOLUME_NAME, AttributeBody::Resident(v)) => {
                    self.label = Some(utf16::decode(v))
                }
                (kind::VOLUME_INFORMATION, AttributeBody::Resident(v)) => {
                    self.version = VolumeInformation::parse(v).ok().map(|i| (i.major, i.minor));
                }
                _ => {}
            }
        }
    }

    /// The ranges of record numbers whose bytes the runs map onto the device, merged and in order.
    pub fn mapped_records(&self) -> Vec<(u64, u64)> {
        let rs = u64::from(self.record_size);
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for r in &self.runs {
            let (s, e) = (r.mft_offset, r.mft_offset + r.len);
            match spans.last_mut() {
                Some(last) if last.1 == s => last.1 = e,
                _ => spans.push((s, e)),
            }
        }
        spans
            .into_iter()
            .map(|(s, e)| (s.div_ceil(rs), (e / rs).min(self.records_total)))
            .filter(|(s, e)| s < e)
            .collect()
    }

    /// Reads whole records starting at record `first` into `buf` (a multiple of the record size).
    pub fn read_records(&self, first: u64, buf: &mut [u8]) -> std::io::Result<()> {
        read_mft_bytes(
            &self.device,
            &self.runs,
            first * u64::from(self.record_size),
            buf,
        )?;
        if self.fixups_applied {
            for rec in buf.chunks_exact_mut(self.record_size as usize) {
                uffs_ntfs::record::protect(rec);
            }
        }
        Ok(())
    }

    /// Reads whole records as [`Volume::read_records`] does, but on a live volume through the file system
    /// (FSCTL_GET_NTFS_FILE_RECORD), which has them as they are now where the raw MFT on disk may lag behind its
    /// cache; a record not in use comes back zeroed. Where the file system does not answer that control (Wine,
    /// or a driver other than Windows' NTFS), raw.
    pub fn read_records_now(&self, first: u64, buf: &mut [u8]) -> std::io::Result<()> {
        #[cfg(windows)]
        if let Some(live) = self.device.live().filter(|l| l.answers_file_records()) {
            let rs = self.record_size as usize;
            for (i, rec) in buf.chunks_exact_mut(rs).enumerate() {
                match live.file_record(first + i as u64, rec) {
                    Ok(_) => {}
                    Err(_) if !live.answers_file_records() => return self.read_records(first, buf),
                    Err(e) => return Err(e),
                }
            }
            return Ok(());
        }
        self.read_records(first, buf)
    }

    /// Whether `$MFT:$BITMAP` marks the record in use (`None` without a bitmap).
    pub fn bitmap_bit(&self, record: u64) -> Option<bool> {
        self.bitmap
            .as_deref()
            .map(|b| crate::plan::in_bitmap(b, record))
    }

    /// Records the bitmap marks in use (within the MFT's size).
    pub fn records_in_use(&self) -> Option<u64> {
        let b = self.bitmap.as_ref()?;
        let full = (self.records_total / 8) as usize;
        let mut n: u64 = b.iter().take(full).map(|x| u64::from(x.count_ones())).sum();
        for r in (full as u64 * 8)..self.records_total {
            n += u64::from(self.bitmap_bit(r) == Some(true));
        }
        Some(n)
    }

    /// The volume's clusters in use and in all, as `$Bitmap` (record 6) marks them: the outside truth that the
    /// allocated sizes of every record in use add up to. `None` for a raw `$MFT` capture (no volume to ask).
    pub fn space(&self) -> Result<Option<Space>> {
        if let Some(fs) = &self.fs {
            return Ok(fs.space().map(|s| Space {
                cluster_size: s.cluster_size,
                clusters_total: s.clusters_total,
                clusters_in_use: s.clusters_in_use,
            }));
        }
        let Some(boot) = self.boot else {
            return Ok(None);
        };
        let what = format!("{}: $Bitmap (record 6)", self.name);
        let mut rec = vec![0u8; self.record_size as usize];
        self.read_records_now(6, &mut rec)
            .map_err(|e| Error::io(&what, e))?;
        apply_fixups(&mut rec).map_err(|e| Error::format(&what, e))?;
        let rec = Record::parse(&rec).map_err(|e| Error::format(&what, e))?;
        let clusters_total = clusters_of(&boot);
        let needed = clusters_total.div_ceil(8);
        let (mut runs, mut size, mut resident) = (Vec::new(), None, None);
        for a in rec.attributes().map_while(|a| a.ok()) {
            if a.type_code != kind::DATA || !a.is_unnamed() {
                continue;
            }
            match a.body().map_err(|e| Error::format(&what, e))? {
                AttributeBody::NonResident(nr) => {
                    if nr.start_vcn == 0 {
                        size = Some(nr.data_size);
                    }
                    runs.extend(decode_runs(&what, &nr)?);
                }
                AttributeBody::Resident(v) => resident = Some(v.to_vec()),
            }
        }
        let bits = match (resident, size) {
            (Some(v), _) if v.len() as u64 >= needed => v,
            (None, Some(size)) if size >= needed => {
                runs.sort_by_key(|r| r.vcn);
                read_clusters(&what, &self.device, boot.cluster_size, &runs, needed)?
            }
            _ => {
                return Err(Error::Source(format!(
                    "{what}: no $DATA of the {needed} bytes its {clusters_total} clusters need"
                )))
            }
        };
        // Bits past the last cluster (the last byte's padding) are not clusters.
        let full = (clusters_total / 8) as usize;
        let mut in_use: u64 = bits[..full].iter().map(|b| u64::from(b.count_ones())).sum();
        for c in (full as u64 * 8)..clusters_total {
            in_use += u64::from(crate::plan::in_bitmap(&bits, c));
        }
        Ok(Some(Space {
            cluster_size: boot.cluster_size,
            clusters_total,
            clusters_in_use: in_use,
        }))
    }

    /// [`Volume::space`] in bytes, in use and in all, as an index keeps them: (0, 0) when unknown or unreadable
    /// (the index is no less an index without them), or when `$Bitmap` is larger than `max_bitmap` bytes.
    pub fn space_bytes(&self, max_bitmap: u64) -> (u64, u64) {
        if let Some(fs) = &self.fs {
            // The regions outside the cluster heap (boot sectors, FATs) count as in use.
            return fs
                .space()
                .map_or((0, 0), |s| (s.bytes_in_use, s.bytes_total));
        }
        if self
            .boot
            .is_some_and(|b| clusters_of(&b).div_ceil(8) > max_bitmap)
        {
            return (0, 0);
        }
        self.space()
            .ok()
            .flatten()
            .map_or((0, 0), |s| (s.bytes_in_use(), s.bytes_total()))
    }

    /// Number of extents (contiguous allocated runs) of the `$MFT` stream.
    pub fn extent_count(&self) -> usize {
        self.runs
            .iter()
            .filter(|r| r.device_offset.is_some())
            .count()
    }
}

pub(crate) fn decode_runs(name: &str, nr: &NonResident<'_>) -> Result<Vec<Run>> {
    nr.runs()
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::format(format!("{name}: $MFT runlist"), e))
}

/// Turns cluster runs into byte runs of the MFT stream, sorted, with overlapping runs dropped. Runs whose
/// arithmetic overflows, sparse runs (the `$MFT` is never sparse: only a damaged runlist has holes) and runs past
/// the end of the device are dropped too, so what is left maps at most the device's bytes; records they would
/// have held are counted as unreadable.
fn to_mft_runs(extents: &[Vec<Run>], cs: u64, device_len: u64) -> Vec<MftRun> {
    let mut runs: Vec<MftRun> = extents
        .iter()
        .flatten()
        .filter_map(|r| {
            let mft_offset = r.vcn.checked_mul(cs)?;
            let len = r.length.checked_mul(cs)?;
            let device_offset = r.lcn?.checked_mul(cs)?;
            mft_offset.checked_add(len)?;
            let end = device_offset.checked_add(len)?.min(device_len);
            // `then`, not `then_some`: the length must not be computed for a run past the device's end.
            (device_offset < end).then(|| MftRun {
                mft_offset,
                len: end - device_offset,
                device_offset: Some(device_offset),
            })
        })
        .collect();
    runs.sort_by_key(|r| r.mft_offset);
    let mut end = 0;
    runs.retain(|r| {
        let keep = r.mft_offset >= end;
        if keep {
            end = r.mft_offset + r.len;
        }
        keep
    });
    runs
}

/// Cuts the runs to the MFT's size, and to the device: on a truncated image the parts past its end are not
/// mapped, so the records there are counted as unreadable instead of read one failed read at a time.
fn clip_runs(runs: &mut Vec<MftRun>, size: u64, device_len: u64) {
    runs.retain(|r| r.mft_offset < size && r.device_offset.is_none_or(|d| d < device_len));
    for r in runs.iter_mut() {
        r.len = r.len.min(size - r.mft_offset);
        if let Some(d) = r.device_offset {
            r.len = r.len.min(device_len - d);
        }
    }
}

/// Reads `buf.len()` bytes of the MFT stream from `offset`, following the runs (sparse parts read as zeros).
pub(crate) fn read_mft_bytes(
    dev: &Device,
    runs: &[MftRun],
    offset: u64,
    buf: &mut [u8],
) -> std::io::Result<()> {
    let mut pos = offset;
    let mut done = 0;
    let mut i = runs.partition_point(|r| r.mft_offset + r.len <= pos);
    while done < buf.len() {
        let Some(run) = runs.get(i).filter(|r| r.mft_offset <= pos) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("MFT byte {pos} is not mapped by the $MFT runlist"),
            ));
        };
        let within = pos - run.mft_offset;
        let n = ((run.len - within) as usize).min(buf.len() - done);
        let dst = &mut buf[done..done + n];
        match run.device_offset {
            Some(d) => dev.read_exact_at(dst, d + within)?,
            None => dst.fill(0),
        }
        done += n;
        pos += n as u64;
        i += 1;
    }
    Ok(())
}

/// Reads the value of a small non-resident attribute (`size` bytes) through its cluster runs.
pub(crate) fn read_clusters(
    name: &str,
    dev: &Device,
    cs: u64,
    runs: &[Run],
    size: u64,
) -> Result<Vec<u8>> {
    if size > dev.len() {
        return Err(Error::Source(format!(
            "{name}: an attribute of $MFT claims more bytes than the volume has"
        )));
    }
    let mruns = to_mft_runs(&[runs.to_vec()], cs, dev.len());
    let mut buf = vec![0u8; size as usize];
    read_mft_bytes(dev, &mruns, 0, &mut buf)
        .map_err(|e| Error::io(format!("{name}: attribute of $MFT"), e))?;
    Ok(buf)
}
