//! Volume Shadow Copies read from the volume's own bytes: the past states of an NTFS volume that Windows keeps
//! in `System Volume Information`. [`stores`] lists them from the catalog; [`Snapshot`] is the volume as it was
//! when one of them was taken, read by position like any other disk ([`crate::container::Image`]).
//!
//! The layout (public documentation: libyal's "Volume Shadow Snapshot (VSS) format"; every number
//! little-endian, every block 16 KiB):
//! - a header at 0x1E00 of the volume (inside `$Boot`): the VSS identifier, a version, the catalog's offset;
//! - the catalog: a chain of blocks of 128-byte entries; for each store a type-2 entry (volume size, store id,
//!   creation time) and a type-3 entry (where the store's header, block list and bitmaps are);
//! - each store: a header with the shadow copy's ids and attributes, and a block list saying, for each 16 KiB
//!   block of the volume that changed after the store was taken, where its old content was copied to
//!   (`store.rs`).
//!
//! A store holds only what changed between it and the next newer one, so an older store reads through the
//! newer ones, and finally through the current volume.
//!
//! Windows may keep a volume's stores on another volume (`vssadmin add shadowstorage /for=D: /on=E:`). The
//! volume's catalog then holds only the type-2 entries, and its VSS header names the storage volume by its GUID;
//! that volume's own catalog holds the type-3 entries, and the stores' headers, lists and copied blocks are its
//! bytes ([`stores_on`], [`Snapshot::open_from`]; docs/research/vss-store-on-another-volume.md).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use crate::container::bytes::{le32, le64};
use crate::container::{bad, within, Image};
use crate::ReadAt;

mod store;

pub use store::StoreMap;

/// Every VSS structure lives in blocks of this size.
pub const BLOCK: u64 = 0x4000;
/// Where the VSS volume header is, from the volume's start.
const HEADER_AT: u64 = 0x1E00;
/// `3808876b-c176-4e48-b7ae-04046e6cc752`, as stored.
const VSS_ID: [u8; 16] = [
    0x6b, 0x87, 0x08, 0x38, 0x76, 0xc1, 0x48, 0x4e, 0xb7, 0xae, 0x04, 0x04, 0x6e, 0x6c, 0xc7, 0x52,
];
/// The most catalog blocks followed: 127 entries each; Windows keeps at most 512 stores.
const MAX_CATALOG_BLOCKS: usize = 64;

/// One store (one shadow copy) as the catalog and its header describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// 1 for the oldest store, counting up to the newest (the numbering of `vshadowinfo` and of `@vssN`).
    pub index: u32,
    /// The store's identifier (its file's name in `System Volume Information`).
    pub id: [u8; 16],
    /// The shadow copy's identifier (what `vssadmin list shadows` shows).
    pub shadow_copy_id: [u8; 16],
    /// The shadow copy set's identifier.
    pub set_id: [u8; 16],
    /// When it was taken (FILETIME, UTC).
    pub created: u64,
    /// The volume's size when it was taken.
    pub volume_size: u64,
    /// `_VSS_VOLUME_SNAPSHOT_ATTRIBUTES`.
    pub attributes: u32,
    /// The GUID of the volume that keeps the store, when it is not this volume.
    pub storage: Option<[u8; 16]>,
    pub(crate) block_list: u64,
    pub(crate) bitmap: u64,
    pub(crate) previous_bitmap: u64,
}

/// A GUID as text, lower-case as `vshadowinfo` and `vssadmin` print it.
pub fn guid_text(g: &[u8; 16]) -> String {
    crate::partition::guid_to_string(g).to_ascii_lowercase()
}

/// A GUID written as [`guid_text`] writes it (braces allowed, any case), as stored; `None` when it is not one.
pub fn parse_guid(text: &str) -> Option<[u8; 16]> {
    let t = text.trim_start_matches('{').trim_end_matches('}');
    let parts: Vec<&str> = t.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if parts.len() != 5 || parts.iter().zip(lens).any(|(p, l)| p.len() != l) {
        return None;
    }
    let hex: String = parts.concat();
    let mut b = [0u8; 16];
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    // Data1, Data2 and Data3 are stored little-endian.
    b[..4].reverse();
    b[4..6].reverse();
    b[6..8].reverse();
    Some(b)
}

/// The stores on `volume`, oldest first; none when the volume has no VSS header or no catalog. An error when
/// the header or catalog is there but damaged (a block pointing outside the volume, a chain that loops). Stores
/// kept on another volume are not listed: [`stores_on`] reads them.
pub fn stores(volume: &dyn ReadAt) -> io::Result<Vec<StoreInfo>> {
    let (described, located) = catalog(volume)?;
    join(&described, &located, volume, None)
}

/// The stores of `volume` that Windows keeps on `storage`, oldest first: the type-2 entries of `volume`'s
/// catalog joined with the type-3 entries of `storage`'s. An error when `storage` is not the volume that
/// `volume`'s VSS header names as its storage (by GUID), or when either catalog is damaged.
pub fn stores_on(volume: &dyn ReadAt, storage: &dyn ReadAt) -> io::Result<Vec<StoreInfo>> {
    let Some(wanted) = storage_volume(volume)? else {
        return Err(bad("the volume keeps its shadow copies' stores on itself"));
    };
    let found = volume_id(storage)?;
    if found != Some(wanted) {
        return Err(bad(format!(
            "it is not the volume that keeps these shadow copies' stores: they are on volume {{{}}}, and its VSS \
             header {}",
            guid_text(&wanted),
            found.map_or("is missing".to_string(), |g| format!("names volume {{{}}}", guid_text(&g)))
        )));
    }
    let (described, _) = catalog(volume)?;
    let (_, located) = catalog(storage)?;
    join(&described, &located, storage, Some(wanted))
}

/// The stores the type-2 entries `described` list and the type-3 entries `located` place on `storage` (whose
/// GUID is `elsewhere` when it is not the volume itself), with their headers read, oldest first.
fn join(
    described: &[Described],
    located: &[Located],
    storage: &dyn ReadAt,
    elsewhere: Option<[u8; 16]>,
) -> io::Result<Vec<StoreInfo>> {
    let mut block = vec![0u8; BLOCK as usize];
    let mut stores = Vec::new();
    for &(id, volume_size, created) in described {
        // A type-2 entry without its type-3 entry is a shadow copy whose store is not here (see `storage_volume`).
        let Some((_, [block_list, header_at, _, bitmap, previous_bitmap])) =
            located.iter().find(|l| l.0 == id).copied()
        else {
            continue;
        };
        read_block(storage, &mut block, header_at, "store header")?;
        check_block(&block, header_at, 4, "store header")?;
        let info = &block[128..];
        stores.push(StoreInfo {
            index: 0,
            id,
            shadow_copy_id: info[16..32].try_into().unwrap_or_default(),
            set_id: info[32..48].try_into().unwrap_or_default(),
            created,
            volume_size,
            attributes: le32(info, 56),
            storage: elsewhere,
            block_list,
            bitmap,
            previous_bitmap,
        });
    }
    stores.sort_by_key(|s| s.created);
    for (i, s) in stores.iter_mut().enumerate() {
        s.index = i as u32 + 1;
    }
    Ok(stores)
}

/// The shadow copies the catalog lists without a store on the volume, by creation time (FILETIME), oldest
/// first. Errors as [`stores`]. Where their stores are, [`storage_volume`] says.
pub fn without_store(volume: &dyn ReadAt) -> io::Result<Vec<u64>> {
    let (described, located) = catalog(volume)?;
    let mut times: Vec<u64> = described
        .iter()
        .filter(|d| !located.iter().any(|l| l.0 == d.0))
        .map(|d| d.2)
        .collect();
    times.sort_unstable();
    Ok(times)
}

/// How many stores `volume` keeps for other volumes' shadow copies: type-3 entries of its catalog without a
/// type-2 entry (the shadow copies they are of are listed on the volumes they copy).
pub fn kept_for_others(volume: &dyn ReadAt) -> io::Result<usize> {
    let (described, located) = catalog(volume)?;
    Ok(located
        .iter()
        .filter(|l| !described.iter().any(|d| d.0 == l.0))
        .count())
}

/// The volume that holds this volume's shadow-copy stores, when it is another one: its GUID as stored (text by
/// [`guid_text`]). Windows keeps a volume's shadow copies on another volume when told to (`vssadmin add
/// shadowstorage /for=D: /on=E:`): the VSS header then names this volume at 0x40 and the storage volume at
/// 0x50 (equal when the stores are here), and this volume's catalog holds only the type-2 entries; the type-3
/// entries and the stores are on the storage volume (docs/research/vss-store-on-another-volume.md; libvshadow
/// says "Data stored outside volume"). `None` without a VSS header, or when the stores are on this volume.
pub fn storage_volume(volume: &dyn ReadAt) -> io::Result<Option<[u8; 16]>> {
    let Some(header) = volume_header(volume)? else {
        return Ok(None);
    };
    let (this, storage) = (&header[64..80], &header[80..96]);
    Ok((this != storage && storage.iter().any(|&b| b != 0))
        .then(|| storage.try_into().unwrap_or_default()))
}

/// The volume's own GUID as its VSS header names it (at 0x40): how a volume that keeps another's stores is
/// recognised. `None` without a VSS header.
pub fn volume_id(volume: &dyn ReadAt) -> io::Result<Option<[u8; 16]>> {
    Ok(volume_header(volume)?.map(|h| h[64..80].try_into().unwrap_or_default()))
}

/// A type-2 catalog entry: store id, volume size, creation time.
type Described = ([u8; 16], u64, u64);
/// A type-3 catalog entry: store id, and where the store's block list, header, block range list, bitmap and
/// previous bitmap are.
type Located = ([u8; 16], [u64; 5]);

/// A catalog's entries, in its order: (store id, volume size, creation time) from the type-2 entries, and
/// (store id, [block list, store header, block range list, bitmap, previous bitmap]) from the type-3 ones;
/// none when the volume has no VSS header or no catalog.
fn catalog(volume: &dyn ReadAt) -> io::Result<(Vec<Described>, Vec<Located>)> {
    let (mut described, mut located) = (Vec::new(), Vec::new());
    let Some(header) = volume_header(volume)? else {
        return Ok((described, located));
    };
    let catalog = le64(&header, 48);
    if catalog == 0 {
        return Ok((described, located));
    }
    let mut block = vec![0u8; BLOCK as usize];
    let mut at = catalog;
    let mut seen = Vec::new();
    while at != 0 {
        if seen.contains(&at) || seen.len() >= MAX_CATALOG_BLOCKS {
            return Err(bad(format!(
                "the VSS catalog's blocks loop or run past {MAX_CATALOG_BLOCKS} (at offset {at})"
            )));
        }
        seen.push(at);
        read_block(volume, &mut block, at, "catalog block")?;
        check_block(&block, at, 2, "catalog block")?;
        for e in block[128..].chunks_exact(128) {
            let id: [u8; 16] = e[16..32].try_into().unwrap_or_default();
            match le64(e, 0) {
                2 => described.push((id, le64(e, 8), le64(e, 48))),
                3 => located.push((
                    id,
                    [
                        le64(e, 8),  // block list
                        le64(e, 32), // store header
                        le64(e, 40), // block range list
                        le64(e, 48), // current bitmap
                        le64(e, 72), // previous bitmap
                    ],
                )),
                _ => {}
            }
        }
        at = le64(&block, 40);
    }
    Ok((described, located))
}

/// The volume's VSS header (128 bytes at 0x1E00), when it has one: the VSS identifier and record type 1.
fn volume_header(volume: &dyn ReadAt) -> io::Result<Option<[u8; 128]>> {
    let mut header = [0u8; 128];
    if volume.len() < HEADER_AT + 128 {
        return Ok(None);
    }
    volume.read_exact_at(&mut header, HEADER_AT)?;
    Ok((header[..16] == VSS_ID && le32(&header, 20) == 1).then_some(header))
}

/// Reads the 16 KiB block at `at`, which must lie inside the volume.
fn read_block(volume: &dyn ReadAt, buf: &mut [u8], at: u64, what: &str) -> io::Result<()> {
    if !within(at, buf.len() as u64, volume.len()) {
        return Err(bad(format!(
            "a VSS {what} at offset {at} lies outside the volume ({} bytes)",
            volume.len()
        )));
    }
    volume.read_exact_at(buf, at)
}

/// Checks a VSS block's header: the identifier, and the record type `kind` (2 catalog, 3 block list, 4 store
/// header, 6 bitmap).
fn check_block(block: &[u8], at: u64, kind: u32, what: &str) -> io::Result<()> {
    if block[..16] != VSS_ID || le32(block, 20) != kind {
        return Err(bad(format!(
            "the VSS {what} at offset {at} is damaged (no VSS identifier or record type {kind})"
        )));
    }
    Ok(())
}

/// The volume as it was when store `index` (1-based, oldest first) was taken.
#[derive(Debug)]
pub struct Snapshot {
    volume: Arc<dyn ReadAt>,
    /// Where the stores are: `volume` itself, or the volume that keeps them.
    storage: Arc<dyn ReadAt>,
    /// Every store's block map, oldest first: reading store `i` goes on through `i + 1` … and the volume.
    maps: Arc<Vec<StoreMap>>,
    /// Position of the store read in `maps`.
    active: usize,
    info: StoreInfo,
    count: usize,
    files: Vec<PathBuf>,
}

impl Snapshot {
    /// Store `index` of `volume`. `files`: the files the volume is read from, for the source's stamp.
    pub fn open<V: ReadAt + Clone + 'static>(
        volume: &V,
        index: u32,
        files: Vec<PathBuf>,
    ) -> io::Result<Snapshot> {
        let all = stores(volume)?;
        Self::open_from(volume, None, &all, index, files)
    }

    /// As [`Snapshot::open`], from stores already listed (by [`stores`], or by [`stores_on`] with their
    /// `storage`); their block maps are read once and shared by snapshots made with [`Snapshot::sibling`].
    /// `files` include the storage volume's.
    pub fn open_from<V: ReadAt + Clone + 'static>(
        volume: &V,
        storage: Option<&V>,
        all: &[StoreInfo],
        index: u32,
        files: Vec<PathBuf>,
    ) -> io::Result<Snapshot> {
        if all.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "this volume has no shadow copies (no VSS catalog)",
            ));
        }
        let Some(pos) = all.iter().position(|s| s.index == index) else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "this volume has no shadow copy {index}: it has {} (vss1 to vss{})",
                    all.len(),
                    all.len()
                ),
            ));
        };
        let storage: Arc<dyn ReadAt> = Arc::new(storage.unwrap_or(volume).clone());
        let maps = all
            .iter()
            .map(|s| StoreMap::read(storage.as_ref(), volume.len(), s))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Snapshot {
            volume: Arc::new(volume.clone()),
            storage,
            maps: Arc::new(maps),
            active: pos,
            info: all[pos].clone(),
            count: all.len(),
            files,
        })
    }

    /// The same volume at another of its stores, sharing the block maps already read.
    pub fn sibling(&self, all: &[StoreInfo], index: u32) -> Option<Snapshot> {
        let pos = all.iter().position(|s| s.index == index)?;
        Some(Snapshot {
            volume: self.volume.clone(),
            storage: self.storage.clone(),
            maps: self.maps.clone(),
            active: pos,
            info: all[pos].clone(),
            count: self.count,
            files: self.files.clone(),
        })
    }

    pub fn info(&self) -> &StoreInfo {
        &self.info
    }
}

impl Image for Snapshot {
    fn len(&self) -> u64 {
        // The volume's size when the store was taken (a volume may grow or shrink later).
        self.info.volume_size.min(self.volume.len())
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let volumes = store::Volumes {
            present: self.volume.as_ref(),
            storage: self.storage.as_ref(),
        };
        store::read(volumes, &self.maps, self.active, buf, offset)
    }

    fn describe(&self) -> String {
        let kept = self.info.storage.map_or(String::new(), |g| {
            format!(", its store on volume {{{}}}", guid_text(&g))
        });
        format!(
            "volume shadow copy {} of {} ({}{kept})",
            self.info.index,
            self.count,
            guid_text(&self.info.shadow_copy_id)
        )
    }

    fn files(&self) -> Vec<PathBuf> {
        self.files.clone()
    }

    fn differs_from_present(&self, offset: u64, len: u64) -> Option<bool> {
        let end = offset.saturating_add(len);
        let mut block = offset - offset % BLOCK;
        while block < end {
            if store::moved(&self.maps, self.active, block) {
                return Some(true);
            }
            block += BLOCK;
        }
        Some(false)
    }
}
