//! A mounted folder as a source (`/`, `/home/ana`, a mount point, a share; on Windows any folder but a drive's
//! root, `C:\Users\ana`, `\\server\share`): read raw through its device when the
//! folder is the top of a file system uffs reads raw and this user may open the device, otherwise walked
//! (`uffs_walk`). Either way its volume is named by the folder's path and a `/` (`/mnt/data/`), which is what
//! every entry's path then starts with (`uffs_index::folder_root`).

use std::path::Path;

use uffs_mft::Volume;

use crate::{Error, Result, Source, SourceKind};

/// Opens folder `path` (`whole`: for a whole read, as [`crate::open`]) with this process's walk options
/// (`uffs_walk::default_options`).
pub fn open(path: &str, whole: bool) -> Result<Source> {
    open_with(path, whole, uffs_walk::default_options())
}

/// Opens folder `path` as [`open`] does, walked (where it is) with `opts`.
pub fn open_with(path: &str, whole: bool, opts: uffs_walk::Options) -> Result<Source> {
    let mut folder = uffs_walk::Folder::open(Path::new(path), opts.clone())
        .map_err(|e| Error::Source(e.to_string()))?;
    let name = folder.source();
    let why_walked = match raw_volume(&folder, whole) {
        Ok(mut src) => {
            let fs = src.volumes[0].filesystem();
            src.volumes[0].name = name;
            src.spec = path.to_string();
            src.kind = SourceKind::Folder { raw: Some(fs) };
            return Ok(src);
        }
        Err(why) => why,
    };
    folder.why_walked = Some(why_walked);
    Ok(Source {
        spec: path.to_string(),
        kind: SourceKind::Folder { raw: None },
        container: None,
        partitions: Vec::new(),
        volumes: vec![Volume::open_walked(&name, Box::new(folder))],
    })
}

/// The folder's file system read raw from its device, or why it is walked instead.
fn raw_volume(folder: &uffs_walk::Folder, whole: bool) -> std::result::Result<Source, String> {
    if !folder.options.raw {
        return Err("--walk".into());
    }
    let Some(m) = &folder.mount else {
        return Err(if cfg!(windows) {
            "a folder, not a drive (a drive, `C:`, is read raw)".into()
        } else {
            "the mount table does not tell its device".into()
        });
    };
    if m.point != folder.path {
        return Err(format!(
            "a folder inside the {} file system mounted at {}, not its top",
            m.fstype,
            m.point.display()
        ));
    }
    if !Path::new(&m.source).is_absolute() || !Path::new(&m.source).exists() {
        return Err(format!("{} is not a device uffs can open", m.source));
    }
    let src = match crate::source::open_as(&m.source, None, whole) {
        Ok(src) => src,
        Err(Error::Privilege(_)) => {
            return Err(format!(
            "this user may not read {} (root or its group, often `disk`, may: then it is read raw)",
            m.source
        ))
        }
        Err(_) => return Err(format!("uffs does not read {} file systems raw", m.fstype)),
    };
    if src.volumes.len() != 1 || src.container.is_some() {
        return Err(format!("{} is not one volume", m.source));
    }
    if m.root == "/" {
        return Ok(src);
    }
    // A bind mount of a folder, or a Btrfs subvolume mounted: read raw only when the device reads that part alone
    // (the subvolume).
    let id = src.volumes[0]
        .fs
        .as_ref()
        .and_then(|fs| {
            fs.states()
                .into_iter()
                .find(|s| s.name == m.root.trim_start_matches('/'))
        })
        .ok_or_else(|| format!("the {} folder of {}, not its top", m.root, m.source))?
        .id;
    src.state(&format!("{}@snap{id}", m.source), id)
        .map_err(|e| e.to_string())
}
