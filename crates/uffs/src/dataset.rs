//! How `uffs export SOURCE... --dataset DIR` names and groups the volumes of its sources; the dataset itself
//! (folders, safe names, writing a volume whole) is `uffs_results::dataset`'s.

use anyhow::{bail, Result};
use uffs_results::dataset::{self, safe_name};

use crate::common::Part;

/// The volume name a source or index file gives in a dataset: its file name (`disk.img`, `sdb1`, `C` for
/// `C.uffs` or `\\.\C:`), then the part's own (`disk.img@2`, `C@vss1`).
pub fn volume_name(spec: &str, prefix: &str) -> String {
    let base = spec
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(spec);
    let base = base.strip_suffix(".uffs").unwrap_or(base);
    let base = base.trim_end_matches(':');
    let own = prefix.strip_suffix(':').unwrap_or(prefix);
    if own.starts_with('@') && !base.ends_with(own) {
        format!("{base}{own}")
    } else if own.is_empty() {
        base.to_string()
    } else {
        own.to_string()
    }
}

/// One volume to write: its folder's name and the parts that make it (a shadow copy is the volume's index with
/// the entries its delta replaces hidden, then the delta).
pub struct DatasetVolume<'a> {
    pub name: String,
    pub parts: Vec<&'a Part>,
}

impl DatasetVolume<'_> {
    /// Its parts as the dataset writer takes them.
    pub fn parts(&self) -> Vec<dataset::Part<'_>> {
        self.parts
            .iter()
            .map(|p| dataset::Part {
                index: &p.index,
                prefix: &p.prefix,
                hidden: p.hidden.as_deref(),
            })
            .collect()
    }

    pub fn entries(&self) -> u64 {
        self.parts.iter().map(|p| p.index.len() as u64).sum()
    }
}

/// The parts of one source or index file grouped into volumes (consecutive parts with one prefix are one volume).
pub fn volumes<'a>(spec: &str, parts: &'a [Part]) -> Vec<DatasetVolume<'a>> {
    let mut out: Vec<DatasetVolume<'a>> = Vec::new();
    let mut last_prefix: Option<&str> = None;
    for p in parts {
        match out.last_mut() {
            Some(v) if last_prefix == Some(p.prefix.as_str()) => v.parts.push(p),
            _ => out.push(DatasetVolume {
                name: safe_name(&volume_name(spec, &p.prefix)),
                parts: vec![p],
            }),
        }
        last_prefix = Some(p.prefix.as_str());
    }
    out
}

/// Refuses two volumes of one run with one folder name.
pub fn check_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !seen.insert(n) {
            bail!(
                "two volumes would both be written as volume={n}: export them in two runs to two hosts, or \
                 give their files different names"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_names_come_from_the_file_and_the_part() {
        assert_eq!(volume_name("/images/disk.img", ""), "disk.img");
        assert_eq!(volume_name("/images/disk.img", "@2:"), "disk.img@2");
        assert_eq!(volume_name("/images/disk.img@2", ""), "disk.img@2");
        assert_eq!(volume_name("/dev/sdb1", ""), "sdb1");
        assert_eq!(volume_name(r"\\.\C:", ""), "C");
        assert_eq!(volume_name("idx/C.uffs", ""), "C");
        assert_eq!(volume_name("idx/C.uffs", "@vss1:"), "C@vss1");
        assert_eq!(volume_name("idx/C.uffs", "C:"), "C");
    }
}
