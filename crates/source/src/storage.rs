//! Finding a volume's shadow copies wherever Windows keeps their stores: on the volume itself, or on the volume
//! its VSS header names (`vssadmin add shadowstorage /for=D: /on=E:`). That storage volume is looked for, by the
//! GUID in its own VSS header, among the other partitions of the same disk, then among the sources the user
//! offered (`--shadow-storage SOURCE`; the daemon offers what each registered volume was added with). Matching
//! by GUID means an offered source that is not the right volume is never used: it is only passed over.

use std::path::PathBuf;
use std::sync::Mutex;

use uffs_mft::device::Device;
use uffs_mft::vss::{storage_volume, stores, stores_on, volume_id, without_store, StoreInfo};

use crate::{Error, Result};

/// A volume that keeps another volume's stores, or may.
#[derive(Debug, Clone)]
pub struct Storage {
    /// How it is named (`stor.img`, `disk.img@1`).
    pub name: String,
    pub device: Device,
    /// The files it is read from (for an index's stamp); none for a partition of the volume's own disk.
    pub files: Vec<PathBuf>,
}

/// A volume offered as a possible storage volume, with its GUID.
type Candidate = ([u8; 16], Storage);

/// An offered source, and what opening it gave: its volumes with a VSS header, or why it could not be opened.
type Offered = (String, std::result::Result<Vec<Candidate>, String>);

/// Sources offered so far (each opened once per process).
static OFFERED: Mutex<Vec<Offered>> = Mutex::new(Vec::new());

/// Offers `specs` (any source: an image, a partition `disk.img@N`, a container, a device) as volumes that may
/// keep other volumes' shadow-copy stores, opening each now. An error names the first that cannot be opened or
/// has no volume with a VSS header (it can keep no stores); the others are offered all the same.
pub fn offer(specs: &[String]) -> Result<()> {
    let mut first_error = None;
    for s in specs {
        let known = |o: &[(String, _)]| o.iter().any(|(o, _)| o == s);
        if known(&OFFERED.lock().unwrap_or_else(|e| e.into_inner())) {
            continue;
        }
        let opened = open_candidates(s);
        let error = match &opened {
            Err(e) => Some(format!("--shadow-storage {s}: {e}")),
            Ok(found) if found.is_empty() => Some(format!(
                "--shadow-storage {s}: no NTFS volume of it has a VSS header, so it keeps no shadow copy stores"
            )),
            Ok(_) => None,
        };
        first_error = first_error.or(error);
        let mut offered = OFFERED.lock().unwrap_or_else(|e| e.into_inner());
        if !known(&offered) {
            offered.push((s.clone(), opened));
        }
    }
    first_error.map_or(Ok(()), |e| Err(Error::Source(e)))
}

/// The offered source holding storage volume `guid`, its path made absolute, so that it can be offered again
/// from anywhere later (an index file's stores remember it); `None` when no offered source holds it.
pub fn offered_source_of(guid: &[u8; 16]) -> Option<String> {
    let offered = OFFERED.lock().unwrap_or_else(|e| e.into_inner());
    let (spec, _) = offered
        .iter()
        .find(|(_, found)| matches!(found, Ok(c) if c.iter().any(|(g, _)| g == guid)))?;
    let path = crate::source::path_of(spec);
    // A device (`\\.\E:`) is named as it is; a file's relative path is made absolute.
    let absolute = (!path.starts_with(r"\\"))
        .then(|| std::path::absolute(path).ok())
        .flatten();
    Some(match (absolute, spec.strip_prefix(path)) {
        (Some(abs), Some(rest)) => format!("{}{rest}", abs.display()),
        _ => spec.clone(),
    })
}

/// The sources offered so far, in the order given.
pub fn offered() -> Vec<String> {
    let offered = OFFERED.lock().unwrap_or_else(|e| e.into_inner());
    offered.iter().map(|(s, _)| s.clone()).collect()
}

/// The NTFS volumes of source `spec` with a VSS header, by their GUID.
fn open_candidates(spec: &str) -> std::result::Result<Vec<Candidate>, String> {
    let src = crate::source::open(spec, None).map_err(|e| e.to_string())?;
    let files = src.container.as_ref().map_or_else(
        || vec![PathBuf::from(crate::source::path_of(spec))],
        |c| c.files.clone(),
    );
    let mut found = Vec::new();
    for v in src.volumes.iter().filter(|v| v.boot.is_some()) {
        if let Ok(Some(g)) = volume_id(&v.device) {
            let storage = Storage {
                name: v.name.clone(),
                device: v.device.clone(),
                files: files.clone(),
            };
            found.push((g, storage));
        }
    }
    Ok(found)
}

/// A volume's shadow copies and where their stores are read from.
#[derive(Debug, Default)]
pub struct Shadows {
    /// Every store that can be read, oldest first (`@vss1` …).
    pub stores: Vec<StoreInfo>,
    /// The volume that keeps them, when it is another one.
    pub storage: Option<Storage>,
    /// When the stores are on another volume that was not found: its GUID, and how many shadow copies the
    /// volume's catalog lists there.
    pub missing: Option<([u8; 16], usize)>,
}

impl Shadows {
    /// The error for asking for a shadow copy of volume `name` when its stores are on a volume not at hand.
    pub fn not_at_hand(&self, name: &str) -> Option<Error> {
        let (_, count) = self.missing?;
        Some(Error::Source(format!(
            "{name}: its {count} shadow cop{} keep their stores on another volume, {}",
            if count == 1 { "y" } else { "ies" },
            self.where_missing()?
        )))
    }

    /// Where the stores are when that volume is not at hand, and how to give it.
    pub fn where_missing(&self) -> Option<String> {
        let (g, _) = self.missing?;
        Some(format!(
            "{{{}}}, which is not at hand: give it with --shadow-storage SOURCE (an image, a partition as \
             disk.img@N, a container or a device; a partition of the same disk is found without it){}",
            uffs_mft::vss::guid_text(&g),
            offered_note()
        ))
    }
}

/// What the offered sources were, for an error saying none of them is the volume looked for.
fn offered_note() -> String {
    let offered = OFFERED.lock().unwrap_or_else(|e| e.into_inner());
    let said: Vec<String> = offered
        .iter()
        .map(|(spec, r)| match r {
            Ok(c) if c.is_empty() => format!("{spec} has no VSS header"),
            Ok(c) => format!(
                "{spec} is volume {}",
                c.iter()
                    .map(|(g, _)| format!("{{{}}}", uffs_mft::vss::guid_text(g)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(e) => format!("{spec} cannot be opened ({e})"),
        })
        .collect();
    if said.is_empty() {
        String::new()
    } else {
        format!("; {}", said.join("; "))
    }
}

/// The shadow copies of `device` (volume `name`, for errors), with their stores found on the volume itself, on
/// one of `siblings` (the NTFS partitions of the same disk, [`crate::Source::ntfs_partitions`]) or on an offered
/// source. Stores kept on a volume not found are not an error here (see `Shadows::missing`); a damaged
/// catalog, or a storage volume found but unreadable, is.
pub fn find(name: &str, device: &Device, siblings: &[Storage]) -> Result<Shadows> {
    let io = |e| Error::io(format!("{name}: shadow copies"), e);
    let mut shadows = Shadows {
        stores: stores(device).map_err(io)?,
        ..Shadows::default()
    };
    let Some(wanted) = storage_volume(device).map_err(io)? else {
        return Ok(shadows);
    };
    let listed_elsewhere = without_store(device).map_err(io)?.len();
    if listed_elsewhere == 0 {
        return Ok(shadows);
    }
    let sibling = siblings
        .iter()
        .find(|s| volume_id(&s.device).ok().flatten() == Some(wanted))
        .cloned();
    let storage = sibling.or_else(|| {
        let offered = OFFERED.lock().unwrap_or_else(|e| e.into_inner());
        offered.iter().find_map(|(_, r)| {
            r.as_ref()
                .ok()?
                .iter()
                .find(|c| c.0 == wanted)
                .map(|c| c.1.clone())
        })
    });
    let Some(storage) = storage else {
        shadows.missing = Some((wanted, listed_elsewhere));
        return Ok(shadows);
    };
    // The header names one volume for every store: type-3 entries on the volume itself would be stale.
    shadows.stores = stores_on(device, &storage.device).map_err(|e| {
        Error::io(
            format!(
                "{name}: the shadow copies' stores on volume {{{}}}",
                uffs_mft::vss::guid_text(&wanted)
            ),
            e,
        )
    })?;
    shadows.storage = Some(storage);
    Ok(shadows)
}
