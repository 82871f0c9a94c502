//! What a source is, decided from its content (never its name): a volume (an NTFS boot sector, or the header of
//! a file system of [`crate::FILE_SYSTEMS`]), a whole disk with an MBR, GPT or Apple partition map
//! (each partition holding a file system uffs reads a volume), or a raw `$MFT` capture (starts with a `FILE`
//! record).

use std::path::Path;

use uffs_image::partition::{self, TableError};
use uffs_ntfs::boot;

use uffs_mft::device::Device;
use uffs_mft::vss::StoreInfo;
use uffs_mft::{PartitionInfo, Volume};

use crate::storage::Storage;
use crate::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Volume,
    /// A volume of another file system than NTFS.
    Other(uffs_index::FileSystem),
    Disk {
        table: &'static str,
    },
    RawMft,
    /// A mounted folder: read raw through its device (the file system it holds), or walked (`None`).
    Folder {
        raw: Option<uffs_index::FileSystem>,
    },
}

impl SourceKind {
    pub fn describe(&self) -> String {
        match self {
            SourceKind::Volume => "NTFS volume".into(),
            SourceKind::Other(uffs_index::FileSystem::Apfs) => "APFS container".into(),
            SourceKind::Other(fs) => format!("{} volume", fs.name()),
            SourceKind::Disk { table } => format!("whole disk ({table} partition table)"),
            SourceKind::RawMft => "raw $MFT capture".into(),
            SourceKind::Folder { raw: Some(fs) } => {
                format!("mounted folder, its {} file system read raw", fs.name())
            }
            SourceKind::Folder { raw: None } => "mounted folder, walked".into(),
        }
    }
}

/// An opened source and the volumes selected from it.
#[derive(Debug)]
pub struct Source {
    pub spec: String,
    pub kind: SourceKind,
    /// The container its bytes come out of (a split raw image, a VHD …), when they do.
    pub container: Option<Container>,
    /// Partitions found (whole disks only).
    pub partitions: Vec<PartitionInfo>,
    pub volumes: Vec<Volume>,
}

/// What `uffs info` says of a source's container.
#[derive(Debug, Clone)]
pub struct Container {
    /// One line: the format and its layout.
    pub describe: String,
    /// Every file it reads, the one named first.
    pub files: Vec<std::path::PathBuf>,
    /// Stored hashes and acquisition metadata.
    pub facts: Vec<(String, String)>,
}

/// Opens `spec`: a path, optionally suffixed `@N` to pick partition N of a whole disk (`partition` does the same).
pub fn open(spec: &str, partition: Option<u32>) -> Result<Source> {
    open_as(spec, partition, true)
}

/// Opens `spec` as [`open`] does, to check it for changes: a live volume is not readied for a whole read (its
/// cache flushed), which a check does not need and would cost the system on every change.
pub fn open_for_check(spec: &str, partition: Option<u32>) -> Result<Source> {
    open_as(spec, partition, false)
}

/// Opens `spec` as [`open`] does, with every shadow copy of each volume as a volume of its own after it
/// (`img@vss1`, `img@vss2`, …, oldest first). Stores kept on another volume are read from it when it is a
/// partition of the same disk or an offered source ([`crate::storage`]); an error when it is neither.
pub fn open_with_snapshots(spec: &str, partition: Option<u32>) -> Result<Source> {
    let mut src = open_as(spec, partition, true)?;
    let siblings = src.ntfs_partitions()?;
    let mut all = Vec::new();
    for v in src.volumes.drain(..) {
        if let Some(fs) = v.fs.clone() {
            // A file system's own snapshots (Btrfs): each read alone, as a volume of its own.
            let states: Vec<Volume> = fs
                .states()
                .into_iter()
                .filter(|s| s.snapshot)
                .map(|s| v.open_state(&format!("{}@snap{}", v.name, s.id), s.id))
                .collect::<Result<_>>()?;
            all.push(v);
            all.extend(states);
            continue;
        }
        let shadows = if v.boot.is_some() {
            crate::storage::find(&v.name, &v.device, &siblings)?
        } else {
            crate::storage::Shadows::default()
        };
        if let Some(e) = shadows.not_at_hand(&v.name) {
            return Err(e);
        }
        let stores = &shadows.stores;
        let (name, device, partition) = (v.name.clone(), v.device.clone(), v.partition.clone());
        all.push(v);
        let Some(oldest) = stores.first() else {
            continue;
        };
        // The block maps are read once, for the first; the others share them.
        let first = open_snapshot(&device, &shadows, oldest.index, &src.container, spec)
            .map_err(|e| Error::io(format!("{name}: shadow copies"), e))?;
        for s in stores {
            let device = match live_store(&device, stores, s.index)? {
                Some(dev) => dev,
                None => match first.sibling(stores, s.index) {
                    Some(snap) => Device::from_image(Box::new(snap)),
                    None => continue,
                },
            };
            let snap_name = format!("{name}@vss{}", s.index);
            let mut snap = Volume::open_ntfs(&snap_name, device, partition.clone())?;
            snap.snapshot = Some(s.clone());
            all.push(snap);
        }
    }
    src.volumes = all;
    Ok(src)
}

/// Store `index` of `device` as [`crate::storage::find`] found its stores; the stamp's files are the
/// source's and the storage volume's.
fn open_snapshot(
    device: &Device,
    shadows: &crate::storage::Shadows,
    index: u32,
    container: &Option<Container>,
    spec: &str,
) -> std::io::Result<uffs_mft::vss::Snapshot> {
    let mut files = src_files(container, spec);
    let storage = shadows.storage.as_ref().map(|st| {
        let more: Vec<_> = st
            .files
            .iter()
            .filter(|f| !files.contains(f))
            .cloned()
            .collect();
        files.extend(more);
        &st.device
    });
    uffs_mft::vss::Snapshot::open_from(device, storage, &shadows.stores, index, files)
}

impl Source {
    /// Part `id` of this source's one volume read alone (a Btrfs subvolume or snapshot), as the source `spec`
    /// (`vol.img@snap258`).
    pub fn state(&self, spec: &str, id: u64) -> Result<Source> {
        let v = match &self.volumes[..] {
            [v] => v.open_state(spec, id)?,
            _ => {
                return Err(Error::Source(format!(
                    "{} holds several volumes: name its partition (@N) to pick a snapshot",
                    self.spec
                )))
            }
        };
        Ok(Source {
            spec: spec.to_string(),
            kind: self.kind,
            container: self.container.clone(),
            partitions: self.partitions.clone(),
            volumes: vec![v],
        })
    }

    /// Every NTFS partition of a whole disk (chosen or not), as places where a volume's shadow-copy stores may
    /// be kept; none for a source that is not a disk.
    pub fn ntfs_partitions(&self) -> Result<Vec<Storage>> {
        if !self.partitions.iter().any(|p| p.ntfs) {
            return Ok(Vec::new());
        }
        let path = split_suffixes(&self.spec).0;
        let disk = open_device(path, false)?;
        Ok(partition_storages(path, &disk, &self.partitions))
    }
}

/// The NTFS partitions of the disk `disk` (named `path`).
fn partition_storages(path: &str, disk: &Device, partitions: &[PartitionInfo]) -> Vec<Storage> {
    partitions
        .iter()
        .filter(|p| p.ntfs)
        .map(|p| Storage {
            name: format!("{path}@{}", p.index),
            device: disk.window(p.start, p.len),
            files: Vec::new(),
        })
        .collect()
}

/// The files a source is read from: its container's, or the file it names.
fn src_files(container: &Option<Container>, path: &str) -> Vec<std::path::PathBuf> {
    container
        .as_ref()
        .map_or_else(|| vec![Path::new(path).to_path_buf()], |c| c.files.clone())
}

/// The volume `device` (named `name`) as shadow copy `store` saw it, when one is asked for. `siblings`: the
/// disk's other NTFS partitions, where its stores may be kept.
fn at_snapshot(
    path: &str,
    container: &Option<Container>,
    name: String,
    device: Device,
    store: Option<u32>,
    siblings: &[Storage],
) -> Result<(String, Device, Option<StoreInfo>)> {
    let Some(n) = store else {
        return Ok((name, device, None));
    };
    let name = if name.ends_with(&format!("@vss{n}")) {
        name
    } else {
        format!("{name}@vss{n}")
    };
    let shadows = crate::storage::find(&name, &device, siblings)?;
    let info = shadows.stores.iter().find(|s| s.index == n).cloned();
    if let Some(dev) = live_store(&device, &shadows.stores, n)? {
        return Ok((name, dev, info));
    }
    if let Some(e) = shadows.not_at_hand(&name) {
        return Err(e);
    }
    let snap = open_snapshot(&device, &shadows, n, container, path)
        .map_err(|e| Error::io(name.clone(), e))?;
    Ok((name, Device::from_image(Box::new(snap)), info))
}

/// Store `n` of the live volume `device` through the device Windows exposes for it
/// (`\\?\GLOBALROOT\Device\HarddiskVolumeShadowCopyN`, see [`uffs_mft::vss::live`]); `None` for an image, or
/// when the system exposes no device for that store (it is then read from the volume's bytes).
fn live_store(
    device: &Device,
    stores: &[uffs_mft::vss::StoreInfo],
    n: u32,
) -> Result<Option<Device>> {
    if !device.is_live() {
        return Ok(None);
    }
    let Some(st) = stores.iter().find(|s| s.index == n) else {
        return Ok(None);
    };
    let exposed = uffs_mft::vss::live::stores(device)
        .map_err(|e| Error::io("listing the system's shadow copy devices".to_string(), e))?;
    let Some(found) = exposed
        .iter()
        .find(|l| l.shadow_copy_id == st.shadow_copy_id)
    else {
        return Ok(None);
    };
    #[cfg(windows)]
    return Device::open_live(&found.path, false, &crate::header_len)
        .map(Some)
        .map_err(|e| Error::io(format!("cannot open {}", found.path), e));
    #[cfg(not(windows))]
    {
        let _ = found;
        Ok(None)
    }
}

pub(crate) fn open_as(spec: &str, partition: Option<u32>, whole: bool) -> Result<Source> {
    // A folder (Linux; on Windows a folder other than a drive, `C:` or `\\.\C:`, which is read live below).
    let walked =
        cfg!(target_os = "linux") || (cfg!(windows) && uffs_mft::live::parse_spec(spec).is_none());
    // A sparse bundle is a folder holding a disk image's bands: read as the disk it holds.
    if walked
        && Path::new(spec).is_dir()
        && !uffs_image::container::sparse::is_bundle(Path::new(spec))
    {
        if let Some(p) = partition {
            return Err(Error::Source(format!(
                "{spec} is a folder, not a partitioned disk: it has no partition {p}"
            )));
        }
        return crate::folder::open(spec, whole);
    }
    if let Some((volume, id)) = split_store_id(spec) {
        let n = store_position(volume, partition, &id)?;
        return open_as(&format!("{volume}@vss{n}"), partition, whole);
    }
    if let Some((volume, id)) = split_state(spec) {
        let src = open_as(volume, partition, whole)?;
        return src.state(spec, id);
    }
    // A container of volumes in a partition (an APFS container on a Mac's GPT disk): `DISK@P@V`.
    if let Some((outer, n)) = split_inner(spec) {
        let mut src = open_as(outer, partition, whole)?;
        let name = src
            .volumes
            .first()
            .map(|v| v.name.clone())
            .unwrap_or_default();
        let inner = match &src.volumes[..] {
            [v] => v.open_contained(&format!("{name}@{n}"), n),
            _ => None,
        };
        let Some(one) = inner else {
            return Err(Error::Source(format!(
                "{outer} is no container of volumes (APFS): it has no volume {n}"
            )));
        };
        src.volumes = vec![one?];
        src.spec = spec.into();
        return Ok(src);
    }
    let (path, at, store) = split_suffixes(spec);
    let partition = partition.or(at);
    let device = open_device(path, whole)?;
    let container = device.container().map(|c| Container {
        describe: c.describe(),
        files: c.files(),
        facts: c.facts(),
    });
    let mut head = vec![0u8; uffs_fs::PROBE_LEN];
    let n = device
        .read_probe(&mut head)
        .map_err(|e| Error::io(format!("cannot read {path}"), e))?;
    let head = &head[..n];
    let no_partitions = |kind: &str| {
        partition.map_or(Ok(()), |p| {
            Err(Error::Source(format!(
                "{path} is {kind}, not a partitioned disk: it has no partition {p}"
            )))
        })
    };
    if head.starts_with(b"FILE") {
        no_partitions("a raw $MFT capture")?;
        if let Some(n) = store {
            return Err(Error::Source(format!(
                "{path} is a raw $MFT capture: it has no shadow copies (vss{n})"
            )));
        }
        let v = Volume::open_raw_mft(spec, device)?;
        return Ok(Source {
            spec: spec.into(),
            container: container.clone(),
            kind: SourceKind::RawMft,
            partitions: vec![],
            volumes: vec![v],
        });
    }
    if boot::is_ntfs(head) {
        no_partitions("an NTFS volume")?;
        let (name, device, snapshot) =
            at_snapshot(path, &container, spec.into(), device, store, &[])?;
        let mut v = Volume::open_ntfs(&name, device, None)?;
        v.snapshot = snapshot;
        return Ok(Source {
            spec: spec.into(),
            container: container.clone(),
            kind: SourceKind::Volume,
            partitions: vec![],
            volumes: vec![v],
        });
    }
    // Before the partition table: a FAT boot sector ends in the same 0x55AA as an MBR.
    if let Some((fs, Some(driver))) = crate::probe(head) {
        if let Some(n) = store {
            return Err(Error::Source(format!(
                "{path} is a {} volume: shadow copies are NTFS's (vss{n})",
                fs.name()
            )));
        }
        let mut v = Volume::open_neutral(spec, device, None, driver)?;
        if let Some(n) = partition {
            // A container of volumes (APFS): `@N` picks one, as a disk's partitions are picked.
            match v.open_contained(&format!("{path}@{n}"), n) {
                Some(one) => v = one?,
                None => no_partitions(&format!("a {} volume", fs.name()))?,
            }
        }
        return Ok(Source {
            spec: spec.into(),
            container: container.clone(),
            kind: SourceKind::Other(fs),
            partitions: vec![],
            volumes: vec![v],
        });
    }
    let (table, partitions) = read_partition_table(path, &device, head)?.ok_or_else(|| {
        Error::Source(format!(
            "{path} is not a volume uffs reads ({}), a partitioned disk or a raw $MFT capture (no such boot \
             sector, partition table or FILE record at its start)",
            crate::names()
        ))
    })?;
    let list = || {
        partitions
            .iter()
            .map(|p| {
                format!(
                    "@{} {}{}",
                    p.index,
                    p.kind,
                    p.filesystem
                        .map_or(String::new(), |f| format!(" {}", f.name()))
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let chosen: Vec<&PartitionInfo> = match partition {
        Some(n) => {
            let p = partitions.iter().find(|p| p.index == n).ok_or_else(|| {
                Error::Source(format!(
                    "{path} has no partition {n} (partitions: {})",
                    list()
                ))
            })?;
            if !p.readable() {
                return Err(Error::Source(format!(
                    "partition {n} of {path} holds no file system uffs reads ({}) (partitions: {})",
                    crate::names(),
                    list()
                )));
            }
            vec![p]
        }
        None => partitions.iter().filter(|p| p.readable()).collect(),
    };
    if chosen.is_empty() {
        return Err(Error::Source(format!(
            "{path} has no partition uffs reads ({}) (partitions: {})",
            crate::names(),
            list()
        )));
    }
    let mut volumes = Vec::new();
    let siblings = if store.is_some() {
        partition_storages(path, &device, &partitions)
    } else {
        Vec::new()
    };
    for p in chosen {
        let (name, window, snapshot) = at_snapshot(
            path,
            &container,
            format!("{path}@{}", p.index),
            device.window(p.start, p.len),
            store,
            &siblings,
        )?;
        if !p.ntfs {
            if store.is_some() {
                return Err(Error::Source(format!(
                    "{name}: shadow copies are NTFS's, and this partition is not NTFS"
                )));
            }
            volumes.push(open_other(&name, window, p.clone())?);
            continue;
        }
        let mut v = Volume::open_ntfs(&name, window, Some(p.clone()))?;
        v.snapshot = snapshot;
        volumes.push(v);
    }
    Ok(Source {
        spec: spec.into(),
        container,
        kind: SourceKind::Disk { table },
        partitions,
        volumes,
    })
}

/// Opens the device `path` names (`whole`: see [`open_for_check`]): on Windows a live volume (`C:`, `\\.\C:`, `\\?\Volume{GUID}`) when it is one of
/// those, else a file or block device. Wanting rights to open it is said in one line of its own.
fn open_device(path: &str, whole: bool) -> Result<Device> {
    let _ = whole;
    #[cfg(windows)]
    if let Some(live) = uffs_mft::live::parse_spec(path) {
        return Device::open_live(&live.device, whole, &crate::header_len).map_err(|e| {
            match e.kind() {
                std::io::ErrorKind::PermissionDenied => {
                    Error::Privilege(uffs_mft::live::privilege_message(path))
                }
                _ => Error::io(format!("cannot open {path} ({})", live.device), e),
            }
        });
    }
    Device::open(Path::new(path)).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied if cfg!(unix) && !Path::new(path).is_file() => {
            Error::Privilege(format!(
                "reading {path} needs root or membership of its group (often `disk`): run uffs with sudo"
            ))
        }
        _ => Error::io(format!("cannot open {path}"), e),
    })
}

/// The file or device a spec reads: `disk.img` of `disk.img@2@vss1`, `disk.img@2@vss{GUID}` or `disk.img@snap258`.
pub fn path_of(spec: &str) -> &str {
    let spec = split_state(spec).map_or(spec, |(volume, _)| volume);
    split_suffixes(split_store_id(spec).map_or(spec, |(volume, _)| volume)).0
}

/// `vol.img@snap258` → (`vol.img`, 258): an earlier state the volume keeps (a Btrfs snapshot, by subvolume id).
/// Unless a file with the whole name exists.
pub fn split_state(spec: &str) -> Option<(&str, u64)> {
    let (volume, id) = spec.rsplit_once("@snap")?;
    let id = id.parse().ok()?;
    (!Path::new(spec).exists()).then_some((volume, id))
}

/// `vol.img@vss{GUID}` → (`vol.img`, the GUID as stored): a shadow copy named by its shadow copy id, which stays
/// when older ones are deleted and the positions (`@vssN`) shift. Unless a file with the whole name exists.
pub fn split_store_id(spec: &str) -> Option<(&str, [u8; 16])> {
    let (volume, id) = spec.rsplit_once("@vss")?;
    let id = uffs_mft::vss::parse_guid(id.strip_prefix('{')?.strip_suffix('}')?)?;
    (!Path::new(spec).exists()).then_some((volume, id))
}

/// Where the shadow copy with shadow copy id `id` stands now among the stores of `volume` (one NTFS volume).
fn store_position(volume: &str, partition: Option<u32>, id: &[u8; 16]) -> Result<u32> {
    let src = open_as(volume, partition, false)?;
    let v = match &src.volumes[..] {
        [v] if v.boot.is_some() => v,
        _ => {
            return Err(Error::Source(format!(
            "{volume} is not one NTFS volume: name its partition (@N) to pick a shadow copy by id"
        )))
        }
    };
    let shadows = crate::storage::find(&v.name, &v.device, &src.ntfs_partitions()?)?;
    if let Some(s) = shadows.stores.iter().find(|s| &s.shadow_copy_id == id) {
        return Ok(s.index);
    }
    if let Some(e) = shadows.not_at_hand(&v.name) {
        return Err(e);
    }
    let now: Vec<String> = shadows
        .stores
        .iter()
        .map(|s| {
            format!(
                "vss{} {{{}}}",
                s.index,
                uffs_mft::vss::guid_text(&s.shadow_copy_id)
            )
        })
        .collect();
    Err(Error::Source(format!(
        "{}: shadow copy {{{}}} is gone (Windows deletes the oldest when their storage runs short, or when told \
         to); its shadow copies now: {}",
        v.name,
        uffs_mft::vss::guid_text(id),
        if now.is_empty() { "none".to_string() } else { now.join(", ") }
    )))
}

/// `disk.img@2@vss1` → (`disk.img`, partition Some(2), shadow copy Some(1)); either suffix may be left out.
/// Unless a file with the whole name exists.
/// `DISK@P@V` as (`DISK@P`, V): volume V of the container in partition P, where DISK is a file or device.
fn split_inner(spec: &str) -> Option<(&str, u32)> {
    if Path::new(spec).exists() {
        return None;
    }
    let (outer, n) = spec.rsplit_once('@')?;
    let n = n.parse::<u32>().ok()?;
    match split_suffixes(outer) {
        (_, Some(_), None) => Some((outer, n)),
        _ => None,
    }
}

pub fn split_suffixes(spec: &str) -> (&str, Option<u32>, Option<u32>) {
    if Path::new(spec).exists() {
        return (spec, None, None);
    }
    let mut path = spec;
    let mut store = None;
    if let Some((p, n)) = path.rsplit_once("@vss") {
        if let Ok(n) = n.parse::<u32>() {
            path = p;
            store = Some(n);
        }
    }
    if let Some((p, n)) = path.rsplit_once('@') {
        if let Ok(n) = n.parse::<u32>() {
            if !Path::new(path).exists() && Path::new(p).exists() {
                return (p, Some(n), store);
            }
        }
    }
    (path, None, store)
}

/// The partition table of the disk `dev` (named `path`), whose first bytes are `head`, with each partition's
/// file system told by its first sector.
fn read_partition_table(
    path: &str,
    dev: &Device,
    head: &[u8],
) -> Result<Option<(&'static str, Vec<PartitionInfo>)>> {
    let table = partition::read_table(dev, head).map_err(|e| match e {
        TableError::NoGptHeader => Error::Source(format!(
            "{path} has a protective MBR but no readable GPT header"
        )),
        TableError::GptEntries(e) => Error::io(format!("{path}: GPT partition entries"), e),
        TableError::GptEntry { index, cause } => {
            Error::Source(format!("{path}: GPT entry {index}: {cause}"))
        }
    })?;
    Ok(table.map(|t| {
        let parts = t
            .partitions
            .into_iter()
            .map(|p| partition_info(dev, p))
            .collect();
        (t.name, parts)
    }))
}

/// Opens partition `p` (`device`, named `name`) with the registered file system its first bytes name.
fn open_other(name: &str, device: Device, p: PartitionInfo) -> Result<Volume> {
    let mut head = vec![0u8; uffs_fs::PROBE_LEN];
    let n = device
        .read_probe(&mut head)
        .map_err(|e| Error::io(format!("{name}: first sectors"), e))?;
    match crate::probe(&head[..n]) {
        Some((_, Some(driver))) => Volume::open_neutral(name, device, Some(p), driver),
        _ => Err(Error::Source(format!(
            "{name} holds no file system uffs reads ({})",
            crate::names()
        ))),
    }
}

fn partition_info(dev: &Device, p: uffs_image::partition::Partition) -> PartitionInfo {
    let mut b = vec![0u8; uffs_fs::PROBE_LEN];
    let filesystem = match dev.window(p.start, p.len).read_probe(&mut b) {
        Ok(n) => crate::probe(&b[..n]).map(|(fs, _)| fs),
        Err(_) => None,
    };
    let ntfs = filesystem == Some(uffs_index::FileSystem::Ntfs);
    PartitionInfo {
        index: p.index,
        start: p.start,
        len: p.len,
        kind: p.kind,
        name: p.name,
        cut_off: p.start >= dev.len(),
        ntfs,
        filesystem,
    }
}

#[cfg(test)]
mod tests {
    use super::{path_of, split_store_id, split_suffixes};

    #[test]
    fn partition_and_shadow_copy_suffixes_come_off_an_existing_file() {
        let dir = std::env::temp_dir().join(format!("uffs-suffixes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let img = dir.join("disk.img");
        std::fs::write(&img, b"x").unwrap();
        let odd = dir.join("odd@vss1");
        std::fs::write(&odd, b"x").unwrap();
        let i = img.to_str().unwrap();
        assert_eq!(split_suffixes(i), (i, None, None));
        assert_eq!(split_suffixes(&format!("{i}@2")), (i, Some(2), None));
        assert_eq!(split_suffixes(&format!("{i}@vss3")), (i, None, Some(3)));
        assert_eq!(
            split_suffixes(&format!("{i}@2@vss1")),
            (i, Some(2), Some(1))
        );
        // A file whose name ends like a suffix is that file.
        let o = odd.to_str().unwrap();
        assert_eq!(split_suffixes(o), (o, None, None));
        // `@vss` with no number is part of the name.
        let bare = format!("{i}@vss");
        assert_eq!(split_suffixes(&bare), (bare.as_str(), None, None));
        // A store by its shadow copy id: the GUID as stored, whatever case and braces.
        let g = "{3808876B-c176-4e48-b7ae-04046e6cc752}";
        let spec = format!("{i}@2@vss{g}");
        let (volume, id) = split_store_id(&spec).unwrap();
        assert_eq!(volume, format!("{i}@2"));
        assert_eq!(
            uffs_mft::vss::guid_text(&id),
            "3808876b-c176-4e48-b7ae-04046e6cc752"
        );
        assert_eq!(path_of(&format!("{i}@2@vss{g}")), i);
        assert_eq!(path_of(&format!("{i}@2@vss3")), i);
        assert!(split_store_id(&format!("{i}@vss{{3808876b}}")).is_none());
        assert!(split_store_id(&format!("{i}@vss1")).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
