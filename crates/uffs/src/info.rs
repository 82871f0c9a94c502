//! `uffs info`: what a source is and proof that its MFT was found.

use anyhow::Result;
use serde_json::{json, Value};
use uffs_mft::vss::guid_text;
use uffs_mft::Volume;
use uffs_source::storage::{Shadows, Storage};
use uffs_source::Source;

use crate::common::thousands;

/// `uffs info` without a source: the volumes uffs reads that this system shows, one line each (or a JSON
/// array).
pub fn list(as_json: bool) -> Result<()> {
    let (found, unreadable) = crate::drives::volumes();
    let mut rows = Vec::new();
    // Wanting rights is said once, after the list, not on every line.
    let mut denied = None;
    for f in &found {
        let opened = uffs_source::open_for_check(&f.spec, None);
        let (size, records, error) = match &opened {
            Ok(src) => (
                src.volumes.iter().map(volume_bytes).sum::<u64>(),
                src.volumes.iter().map(|v| v.records_total).sum::<u64>(),
                None,
            ),
            Err(uffs_mft::Error::Privilege(why)) => {
                denied.get_or_insert_with(|| why.clone());
                (
                    0,
                    0,
                    Some("cannot be read without rights (below)".to_string()),
                )
            }
            Err(e) => (0, 0, Some(e.to_string())),
        };
        // The drive's own word where it gives one (Windows), else the volume's.
        let label = match (&opened, f.label.is_empty()) {
            (Ok(src), true) => src
                .volumes
                .first()
                .and_then(|v| v.label.clone())
                .unwrap_or_default(),
            _ => f.label.clone(),
        };
        // The file system as the volume says it (FAT16 where Windows says FAT), else as the system does.
        let fs = match &opened {
            Ok(src) => src
                .volumes
                .first()
                .map_or(f.filesystem.clone(), |v| v.filesystem().name().to_string()),
            Err(_) => f.filesystem.clone(),
        };
        let ntfs = fs == "NTFS";
        rows.push(
            json!({"source": f.spec, "kind": f.kind, "filesystem": fs, "label": label,
                         "bytes": size, "mft_records": if ntfs { Some(records) } else { None },
                         "error": error}),
        );
        if !as_json {
            let label = if label.is_empty() {
                String::new()
            } else {
                format!(" \"{label}\"")
            };
            let records = if ntfs {
                format!(", {} MFT records", thousands(records))
            } else {
                String::new()
            };
            match error {
                None => println!(
                    "{:<12} {:<9} {fs}{label}, {:.1} GiB{records}   (uffs info {})",
                    f.spec,
                    f.kind,
                    size as f64 / (1u64 << 30) as f64,
                    f.spec
                ),
                Some(e) => println!("{:<12} {:<9} {fs}{label}: {e}", f.spec, f.kind),
            }
        }
    }
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"volumes": rows, "unreadable": unreadable}))?
        );
        return Ok(());
    }
    if found.is_empty() {
        println!(
            "no volume of a file system uffs reads ({}) found",
            uffs_source::names()
        );
    }
    if let Some(why) = denied {
        println!("({why})");
    }
    if !unreadable.is_empty() {
        // Root may be refused too (a container's devices): say what happened, and the remedy only where it is one.
        #[cfg(unix)]
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        #[cfg(not(unix))]
        let root = false;
        println!(
            "({} device{} could not be read to tell, e.g. {}: permission denied{})",
            unreadable.len(),
            if unreadable.len() == 1 { "" } else { "s" },
            unreadable[0],
            if root {
                ""
            } else {
                "; run as root to see them"
            }
        );
    }
    Ok(())
}

/// The volume's size from its boot sector (0 for a raw `$MFT`).
/// The volume's size: as its NTFS boot sector gives it, else its device's (a FAT or exFAT volume is read from
/// the device the size of the volume, or from a window of a disk that size).
fn volume_bytes(v: &Volume) -> u64 {
    match v.boot {
        Some(b) => b.total_sectors * u64::from(b.bytes_per_sector),
        None if v.fs.is_some() => v.truncated().map_or(v.device.len(), |(_, needs)| needs),
        None => 0,
    }
}

pub fn run(spec: &str, partition: Option<u32>, as_json: bool) -> Result<()> {
    let src = match crate::common::open_source(spec, partition, false) {
        Ok(src) => src,
        // An index file is no source, but says what it holds: that, rather than "not an NTFS volume".
        Err(e) => match uffs_index::file::read_meta(std::path::Path::new(spec)) {
            Ok((meta, entries)) => return index_info(spec, &meta, entries, as_json),
            Err(_) => return Err(e),
        },
    };
    if as_json {
        println!("{}", serde_json::to_string_pretty(&to_json(&src))?);
    } else {
        print!("{}", to_text(&src));
    }
    Ok(())
}

/// What `uffs info` says of an index file: what it was built from, when, and how to search it.
fn index_info(path: &str, m: &uffs_index::VolumeMeta, entries: u64, as_json: bool) -> Result<()> {
    let built = uffs_results::column::iso(m.built_at, false);
    let delta = uffs_index::file::delta_path(std::path::Path::new(path)).exists();
    if as_json {
        let v = json!({
            "index": path, "source": m.source, "entries": entries, "built_at": built,
            "serial": m.serial, "records": m.records_total, "deleted": m.has_deleted,
            "filesystem": m.filesystem.name(),
            "bytes_in_use": m.bytes_in_use, "bytes_total": m.bytes_total, "delta": delta,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let mut s = format!("index         {path} (a uffs index file, not a volume)\n");
    if !m.source.is_empty() {
        s += &format!("built from    {}\n", m.source);
    }
    s += &format!("file system   {}\n", m.filesystem.name());
    s += &format!("built at      {built}\n");
    s += &format!(
        "entries       {}{}\n",
        thousands(entries),
        if m.has_deleted {
            " (deleted ones included)"
        } else {
            ""
        }
    );
    if m.serial != 0 {
        s += &format!("serial        {}\n", serial_text(m.serial));
    }
    if m.bytes_total != 0 {
        s += &format!(
            "space         {} used of {}\n",
            uffs_results::column::human(m.bytes_in_use),
            uffs_results::column::human(m.bytes_total)
        );
    }
    if delta {
        s += "changes       a delta beside it holds the changes since (uffs index SOURCE -o FILE --update)\n";
    }
    s += &format!("search it     uffs --index {path} QUERY   (uffs info SOURCE describes the volume itself)\n");
    print!("{s}");
    Ok(())
}

fn serial_text(serial: u64) -> String {
    // Windows shows the low 32 bits as XXXX-XXXX (`vol`, `dir`); the full 64 bits follow.
    format!(
        "{:04X}-{:04X} (0x{serial:016X})",
        (serial >> 16) & 0xFFFF,
        serial & 0xFFFF
    )
}

fn signature_text(sig: &[u8; 4]) -> String {
    if sig == b"FILE" {
        "FILE (the MFT was found)".into()
    } else {
        format!(
            "{:02X?} (not FILE: the MFT is not where the boot sector says)",
            sig
        )
    }
}

/// The container's lines: its format, its files when it has more than one, the facts it stores.
fn container_text(c: &uffs_source::Container) -> String {
    let mut s = format!("container     {}\n", c.describe);
    if let [first, .., last] = c.files.as_slice() {
        s += &format!(
            "  files       {}: {} to {}\n",
            c.files.len(),
            first.display(),
            last.display()
        );
    }
    for (k, v) in &c.facts {
        s += &format!("  {k:<11} {v}\n");
    }
    s
}

/// The container as JSON: `{"format", "files", "facts"}`.
fn container_json(c: &uffs_source::Container) -> serde_json::Value {
    let facts: serde_json::Map<String, serde_json::Value> =
        c.facts.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    json!({"format": c.describe,
           "files": c.files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
           "facts": facts})
}

fn to_text(src: &Source) -> String {
    let mut s = format!("source        {} ({})\n", src.spec, src.kind.describe());
    if let Some(c) = &src.container {
        s += &container_text(c);
    }
    for p in &src.partitions {
        s += &format!(
            "partition     @{:<3} type {:<12} start {:>15} size {:>15}{}{}\n",
            p.index,
            p.kind,
            p.start,
            p.len,
            p.filesystem
                .map_or(String::new(), |f| format!("  {}", f.name())),
            if p.name.is_empty() {
                String::new()
            } else {
                format!("  name {:?}", p.name)
            }
        );
        if p.cut_off {
            s.pop();
            s += "  cut off: starts past the end of the image\n";
        }
    }
    let siblings = src.ntfs_partitions().unwrap_or_default();
    for v in &src.volumes {
        s += &volume_text(v, &siblings);
    }
    s
}

fn volume_text(v: &Volume, siblings: &[Storage]) -> String {
    let mut s = format!("\nvolume        {}\n", v.name);
    if let Some((holds, needs)) = v.truncated() {
        s += &format!(
            "  TRUNCATED   the image ends at byte {}; the volume needs {} ({} bytes missing): what lies past \
             the end cannot be read\n",
            thousands(holds),
            thousands(needs),
            thousands(needs - holds)
        );
    }
    if let Some(fs) = &v.fs {
        for (k, val) in fs.facts() {
            s += &format!("  {k:<11} {val}\n");
        }
        return s;
    }
    if let Some(b) = v.boot {
        s += &format!("  serial      {}\n", serial_text(b.serial));
        s += &format!(
            "  label       {}\n",
            v.label
                .as_deref()
                .filter(|l| !l.is_empty())
                .unwrap_or("(none)")
        );
        if let Some((maj, min)) = v.version {
            s += &format!("  version     NTFS {maj}.{min}\n");
        }
        s += &format!("  size        {} bytes\n", thousands(b.volume_size()));
        s += &format!("  sector      {} bytes\n", b.bytes_per_sector);
        s += &format!("  cluster     {} bytes\n", b.cluster_size);
        s += "  times       created, modified, changed (the record's), accessed (to 100 ns)\n";
        s += &match v.space() {
            Ok(Some(sp)) => format!(
                "  used        {} bytes ({}) in {} clusters of {}; free {} bytes (per $Bitmap)\n",
                thousands(sp.bytes_in_use()),
                uffs_results::human(sp.bytes_in_use()),
                thousands(sp.clusters_in_use),
                thousands(sp.clusters_total),
                thousands(sp.bytes_total() - sp.bytes_in_use()),
            ),
            Ok(None) => String::new(),
            Err(e) => format!("  used        unknown: {e}\n"),
        };
        s += &format!("  record      {} bytes\n", v.record_size);
        s += &format!(
            "  mft         at byte {} (cluster {})\n",
            b.mft_offset(),
            b.mft_lcn
        );
    } else {
        s += &format!("  record      {} bytes\n", v.record_size);
        if let Some((maj, min)) = v.version {
            s += &format!("  version     NTFS {maj}.{min}\n");
        }
    }
    s += &format!(
        "  mft size    {} bytes in {} extent{}{}\n",
        thousands(v.mft_size),
        v.extent_count(),
        if v.extent_count() == 1 { "" } else { "s" },
        if v.mft_attribute_list {
            " (described through an $ATTRIBUTE_LIST)"
        } else {
            ""
        }
    );
    s += &format!("  records     {} total", thousands(v.records_total));
    match v.records_in_use() {
        Some(n) => s += &format!(", {} in use (per $MFT:$BITMAP)\n", thousands(n)),
        None => s += ", no bitmap (raw capture: every record is parsed)\n",
    }
    s += &format!(
        "  record 0    {}\n",
        signature_text(&v.first_record_signature)
    );
    if v.fixups_applied {
        s += "  fixups      already applied in the capture (as ntfscat writes a $MFT): records read as they are\n";
    }
    match shadow_copies(v, siblings) {
        Ok(shadows) => s += &shadows_text(v, &shadows),
        Err(e) => s += &format!("  shadow copies unreadable: {e}\n"),
    }
    if has_catalog(v) {
        if let Ok(n @ 1..) = uffs_mft::vss::kept_for_others(&v.device) {
            s += &format!(
                "  keeps the stores of {n} shadow cop{} of another volume (give it as --shadow-storage to read \
                 them through that volume)\n",
                if n == 1 { "y" } else { "ies" }
            );
        }
    }
    s
}

/// What `uffs info` says of a volume's shadow copies: each store, where its data is, and the shadow copies the
/// catalog lists whose stores cannot be read.
fn shadows_text(v: &Volume, shadows: &Shadows) -> String {
    let mut s = String::new();
    let stores = &shadows.stores;
    if !stores.is_empty() {
        s += &format!(
            "  shadow copies {} (open one as {}@vssN){}\n",
            stores.len(),
            v.name,
            shadows.storage.as_ref().map_or(
                ", their stores on this volume".to_string(),
                |st| format!(
                    ", their stores on volume {{{}}} ({})",
                    stores[0].storage.as_ref().map_or(String::new(), guid_text),
                    st.name
                )
            )
        );
        let exposed = uffs_mft::vss::live::stores(&v.device).unwrap_or_default();
        for st in stores {
            s += &format!(
                "    vss{:<3} created {}  store {}  set {}  shadow copy {}  volume {} bytes  attributes 0x{:08x}",
                st.index,
                uffs_results::column::iso(st.created, false),
                guid_text(&st.id),
                guid_text(&st.set_id),
                guid_text(&st.shadow_copy_id),
                thousands(st.volume_size),
                st.attributes
            );
            if let Some(d) = store_device(&exposed, st) {
                s += &format!("  device {d}");
            }
            s += "\n";
        }
    }
    if let (Some(text), Some((_, count))) = (shadows.where_missing(), shadows.missing) {
        let when = storeless_times(v).join(", ");
        s += &format!("  shadow copies kept on another volume {count} (created {when}): their stores are on {text}\n");
    } else if shadows.storage.is_none() {
        let when = storeless_times(v);
        if !when.is_empty() {
            s += &format!(
                "  shadow copies without a store {} (created {}): the catalog lists them but holds no store for \
                 them, and its VSS header names no other volume; they cannot be read\n",
                when.len(),
                when.join(", ")
            );
        }
    }
    s
}

/// When the shadow copies the catalog lists without a store on the volume were taken, oldest first.
fn storeless_times(v: &Volume) -> Vec<String> {
    uffs_mft::vss::without_store(&v.device)
        .unwrap_or_default()
        .iter()
        .map(|&t| uffs_results::column::iso(t, false))
        .collect()
}

/// The shadow copies of a volume read as it is now, wherever their stores are kept.
fn shadow_copies(v: &Volume, siblings: &[Storage]) -> uffs_mft::Result<Shadows> {
    if !has_catalog(v) {
        return Ok(Shadows::default());
    }
    uffs_source::storage::find(&v.name, &v.device, siblings)
}

/// Whether `v` may hold a VSS catalog of its own: not a raw `$MFT`, nor a volume read at a shadow copy.
fn has_catalog(v: &Volume) -> bool {
    v.boot.is_some() && uffs_source::split_suffixes(&v.name).2.is_none()
}

/// On a live Windows volume, the device the system exposes for store `st` (`\\?\GLOBALROOT\Device\
/// HarddiskVolumeShadowCopyN`), matched by the shadow copy's identifier.
fn store_device(
    exposed: &[uffs_mft::vss::live::LiveStore],
    st: &uffs_mft::vss::StoreInfo,
) -> Option<String> {
    exposed
        .iter()
        .find(|l| l.shadow_copy_id == st.shadow_copy_id)
        .map(|l| l.path.clone())
}

fn shadow_copies_json(v: &Volume, siblings: &[Storage]) -> Value {
    match shadow_copies(v, siblings) {
        Ok(shadows) => {
            let exposed = uffs_mft::vss::live::stores(&v.device).unwrap_or_default();
            let storage = shadows.storage.as_ref().map(|s| s.name.clone());
            let mut listed: Vec<Value> = shadows
                .stores
                .iter()
                .map(|st| {
                    json!({
                        "index": st.index,
                        "source": format!("{}@vss{}", v.name, st.index),
                        "store_id": guid_text(&st.id),
                        "created": uffs_results::column::iso(st.created, false),
                        "set_id": guid_text(&st.set_id),
                        "shadow_copy_id": guid_text(&st.shadow_copy_id),
                        "volume_size": st.volume_size,
                        "attributes": st.attributes,
                        "device": store_device(&exposed, st),
                        "storage_volume": st.storage.as_ref().map(guid_text),
                        "storage_source": storage,
                    })
                })
                .collect();
            if let Some((g, count)) = shadows.missing {
                listed.push(json!({
                    "error": shadows.not_at_hand(&v.name).map(|e| e.to_string()),
                    "storage_volume": guid_text(&g),
                    "unreadable": count,
                }));
            }
            Value::Array(listed)
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

fn to_json(src: &Source) -> Value {
    let parts: Vec<Value> = src
        .partitions
        .iter()
        .map(|p| json!({"index": p.index, "type": p.kind, "name": p.name, "cut_off": p.cut_off, "start": p.start, "size": p.len, "ntfs": p.ntfs,
                        "filesystem": p.filesystem.map(|f| f.name())}))
        .collect();
    let siblings = src.ntfs_partitions().unwrap_or_default();
    let vols: Vec<Value> = src
        .volumes
        .iter()
        .map(|v| {
            let space = v.space().ok().flatten();
            let truncated = v
                .truncated()
                .map(|(holds, needs)| json!({"image_bytes": holds, "volume_bytes": needs}));
            if let Some(fs) = &v.fs {
                let facts: serde_json::Map<String, Value> =
                    fs.facts().into_iter().map(|(k, v)| (k, json!(v))).collect();
                let (in_use, total) = v.space_bytes(u64::MAX);
                return json!({
                    "name": v.name,
                    "filesystem": fs.filesystem.name(),
                    "serial": format!("{:08X}", fs.serial()),
                    "cluster_size": space.map(|s| s.cluster_size),
                    "clusters_total": space.map(|s| s.clusters_total),
                    "clusters_in_use": space.map(|s| s.clusters_in_use),
                    "bytes_in_use": in_use,
                    "bytes_free": total.saturating_sub(in_use),
                    "facts": facts,
                    "truncated": truncated,
                });
            }
            json!({
                "filesystem": "NTFS",
                "name": v.name,
                "truncated": truncated,
                "serial": v.boot.map(|b| format!("{:016X}", b.serial)),
                "label": v.label,
                "version": v.version.map(|(a, b)| format!("{a}.{b}")),
                "size": v.boot.map(|b| b.volume_size()),
                "sector_size": v.boot.map(|b| b.bytes_per_sector),
                "cluster_size": v.boot.map(|b| b.cluster_size),
                "clusters_total": space.map(|s| s.clusters_total),
                "clusters_in_use": space.map(|s| s.clusters_in_use),
                "bytes_in_use": space.map(|s| s.bytes_in_use()),
                "bytes_free": space.map(|s| s.bytes_total() - s.bytes_in_use()),
                "record_size": v.record_size,
                "mft_offset": v.boot.map(|b| b.mft_offset()),
                "mft_size": v.mft_size,
                "mft_extents": v.extent_count(),
                "mft_attribute_list": v.mft_attribute_list,
                "records_total": v.records_total,
                "records_in_use": v.records_in_use(),
                "first_record_signature": String::from_utf8_lossy(&v.first_record_signature),
                "fixups_applied": v.fixups_applied,
                "shadow_copies": shadow_copies_json(v, &siblings),
            })
        })
        .collect();
    json!({"source": src.spec, "kind": src.kind.describe(), "container": src.container.as_ref().map(container_json),
           "partitions": parts, "volumes": vols})
}
