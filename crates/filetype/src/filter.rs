//! The names `type:` takes and what each matches: a type's name or alias, a family (`zip`, `ole`, `pe`), a
//! group (`image`, `archive`, `executable`, `text`, …) or `mismatch`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use file_format::FileFormat as F;

use crate::curated::{self, Family};
use crate::mismatch::mismatch;
use crate::types::{table, Group, Type};

/// The `type:` name of files whose extension disagrees with their signature (see [`mismatch`]).
pub const MISMATCH: &str = "mismatch";

/// Names a person is likely to try first, for help text and for the error on an unknown name.
pub const COMMON: &[&str] = &[
    "pdf", "exe", "dll", "pe", "elf", "zip", "gzip", "xz", "bzip2", "zstd", "7z", "rar", "tar",
    "cab", "iso", "png", "jpeg", "gif", "bmp", "tiff", "webp", "ico", "svg", "mp3", "flac", "wav",
    "ogg", "mp4", "mkv", "avi", "sqlite", "ole", "doc", "xls", "ppt", "msi", "docx", "xlsx",
    "pptx", "odt", "jar", "apk", "epub", "html", "xml", "text", "lnk",
];

/// A parsed `type:` argument: which files it keeps.
#[derive(Clone, Debug)]
pub struct Filter {
    what: What,
}

#[derive(Clone, Debug)]
enum What {
    /// The types it names, by index.
    Types(Vec<bool>),
    Mismatch,
}

/// A `type:` name that is no type, family, group nor `mismatch`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", unknown_message(.name))]
pub struct UnknownType {
    pub name: String,
}

impl Filter {
    /// The filter for `name` (any case): `mismatch`; a group name (`image`, `archive`, `executable`, `text`,
    /// … — `text` is every text type); a family (`zip`: every ZIP-based type, `ole`: every compound file, `pe`:
    /// PE images, EXE and DLL); else every type with that name or alias (`jpg` = `jpeg`).
    pub fn parse(name: &str) -> Result<Filter, UnknownType> {
        let lower = name.to_ascii_lowercase();
        if lower == MISMATCH {
            return Ok(Filter {
                what: What::Mismatch,
            });
        }
        let set = &by_name().get(lower.as_str()).ok_or_else(|| UnknownType {
            name: name.to_owned(),
        })?;
        let mut types = vec![false; Type::all().len()];
        for ty in set.iter() {
            types[ty.index()] = true;
        }
        Ok(Filter {
            what: What::Types(types),
        })
    }

    /// Whether a file matches: `detected` is what [`detect`](crate::detect) found in its head, `extension` its
    /// extension (empty for none) and `size` its length, which `mismatch` needs.
    pub fn matches(&self, detected: Option<Type>, extension: &str, size: u64) -> bool {
        match &self.what {
            What::Types(types) => detected.is_some_and(|ty| types[ty.index()]),
            What::Mismatch => mismatch(extension, detected, size).is_some(),
        }
    }

    /// Whether a file whose first bytes are `head` matches: as [`Filter::matches`] with what
    /// [`detect`](crate::detect) finds, except that a link or device kept as a file's data (Interix's, as
    /// ntfs-3g and Services for Unix write them: `IntxLNK\x01` and a UTF-16 target) is no file of its extension's
    /// type: it never mismatches, whatever it is named.
    pub fn matches_head(&self, head: &[u8], extension: &str, size: u64) -> bool {
        if crate::is_interix_special(head) {
            return false;
        }
        self.matches(crate::detect(head), extension, size)
    }

    /// Whether this filter needs the extension and size (only `mismatch` does).
    pub fn is_mismatch(&self) -> bool {
        matches!(self.what, What::Mismatch)
    }
}

/// Every name `type:` takes, sorted: type names, aliases, families, groups and `mismatch`.
pub fn names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<&'static str> = by_name().keys().copied().collect();
        names.push(MISMATCH);
        names.sort_unstable();
        names
    })
}

/// Each name and the types it selects.
fn by_name() -> &'static BTreeMap<&'static str, Vec<Type>> {
    static BY_NAME: OnceLock<BTreeMap<&'static str, Vec<Type>>> = OnceLock::new();
    BY_NAME.get_or_init(|| {
        let mut map: BTreeMap<&'static str, Vec<Type>> = BTreeMap::new();
        let mut add = |name: &'static str, ty: Type| {
            let types = map.entry(name).or_default();
            if !types.contains(&ty) {
                types.push(ty);
            }
        };
        for ty in Type::all() {
            add(ty.name(), ty);
        }
        for &(alias, f) in curated::ALIASES {
            if let Some(ty) = Type::of(f) {
                add(alias, ty);
            }
        }
        for info in &table().infos {
            let Some(ty) = Type::of(info.format) else {
                continue;
            };
            if let Some(name) = Family::of(info.format).and_then(Family::filter_name) {
                add(name, ty);
            }
            if matches!(info.format, F::PortableExecutable | F::DynamicLinkLibrary) {
                add("pe", ty);
            }
        }
        // Groups replace any type of the same name (none today; `text`, the plain text type, is in its group).
        for group in Group::ALL {
            let members = Type::all().filter(|t| {
                if group == Group::Text {
                    t.is_text()
                } else {
                    t.group() == group
                }
            });
            map.insert(group.name(), members.collect());
        }
        map
    })
}

fn unknown_message(name: &str) -> String {
    let mut message = format!("unknown type {name:?}");
    if let Some(near) = nearest(&name.to_ascii_lowercase()) {
        message.push_str(&format!(" (did you mean {near:?}?)"));
    }
    let groups: Vec<&str> = Group::ALL.iter().map(|g| g.name()).collect();
    message.push_str(&format!(
        "; type: takes {MISMATCH}, a group ({}) or one of {} type names such as {}",
        groups.join(", "),
        names().len() - groups.len() - 1,
        COMMON.join(", ")
    ));
    message
}

/// The known name closest to `name` by edit distance, if it is close (at most a third of its letters off).
fn nearest(name: &str) -> Option<&'static str> {
    let (distance, best) = names().iter().map(|n| (edit_distance(name, n), *n)).min()?;
    (distance > 0 && distance * 3 <= name.len().max(3)).then_some(best)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(f: F) -> Option<Type> {
        Type::of(f)
    }

    #[test]
    fn names_are_sorted_unique_and_cover_the_common_ones() {
        let names = names();
        assert!(names.windows(2).all(|w| w[0] < w[1]));
        for name in COMMON.iter().chain(&[
            MISMATCH,
            "image",
            "archive",
            "executable",
            "text",
            "jpg",
            "pe",
        ]) {
            assert!(names.contains(name), "{name}");
            assert!(Filter::parse(name).is_ok(), "{name}");
        }
        // No type is named like a group, so `type:NAME` means one thing.
        for group in Group::ALL {
            let clash = Type::all()
                .find(|t| t.name() == group.name() && *t != Type::of(F::PlainText).unwrap());
            assert_eq!(clash, None, "{}", group.name());
        }
    }

    #[test]
    fn names_match_their_types() {
        let pdf = Filter::parse("PDF").unwrap();
        assert!(pdf.matches(t(F::PortableDocumentFormat), "pdf", 10));
        assert!(!pdf.matches(t(F::PlainText), "pdf", 10));
        assert!(!pdf.matches(None, "pdf", 10));
        let jpg = Filter::parse("jpg").unwrap();
        assert!(jpg.matches(t(F::JointPhotographicExpertsGroup), "", 10));
        let exe = Filter::parse("exe").unwrap();
        assert!(exe.matches(t(F::PortableExecutable), "", 10));
        assert!(exe.matches(t(F::MsDosExecutable), "", 10));
        assert!(!exe.matches(t(F::DynamicLinkLibrary), "", 10));
        let pe = Filter::parse("pe").unwrap();
        assert!(pe.matches(t(F::DynamicLinkLibrary), "", 10));
        assert!(!pe.matches(t(F::MsDosExecutable), "", 10));
    }

    #[test]
    fn families_and_groups() {
        let zip = Filter::parse("zip").unwrap();
        assert!(zip.matches(t(F::Zip), "", 1));
        assert!(zip.matches(t(F::OfficeOpenXmlDocument), "", 1));
        assert!(zip.matches(t(F::JavaArchive), "", 1));
        assert!(!zip.matches(t(F::Gzip), "", 1));
        let ole = Filter::parse("ole").unwrap();
        assert!(ole.matches(t(F::MicrosoftSoftwareInstaller), "", 1));
        assert!(ole.matches(t(F::CompoundFileBinary), "", 1));
        let image = Filter::parse("image").unwrap();
        assert!(image.matches(t(F::PortableNetworkGraphics), "", 1));
        assert!(image.matches(t(F::ScalableVectorGraphics), "", 1));
        assert!(!image.matches(t(F::PortableDocumentFormat), "", 1));
        let text = Filter::parse("text").unwrap();
        assert!(text.matches(t(F::PlainText), "", 1));
        assert!(text.matches(t(F::ScalableVectorGraphics), "", 1));
        assert!(text.matches(t(F::ShellScript), "", 1));
        assert!(!text.matches(t(F::PortableExecutable), "", 1));
        let executable = Filter::parse("executable").unwrap();
        assert!(executable.matches(t(F::DynamicLinkLibrary), "", 1));
        assert!(executable.matches(t(F::ExecutableAndLinkableFormat), "", 1));
        let compressed = Filter::parse("compressed").unwrap();
        assert!(compressed.matches(t(F::Gzip), "", 1));
    }

    #[test]
    fn an_interix_link_is_no_mismatch() {
        // ntfs-3g's symlink `notes.gz` -> `a`: its data is the link, not a gzip stream.
        let mut head = b"IntxLNK\x01".to_vec();
        head.extend_from_slice(&[b'a', 0]);
        let m = Filter::parse("mismatch").unwrap();
        assert!(!m.matches_head(&head, "gz", head.len() as u64));
        assert!(m.matches_head(b"plain words", "gz", 11));
    }

    #[test]
    fn mismatch_filter_uses_the_rules() {
        let m = Filter::parse("mismatch").unwrap();
        assert!(m.is_mismatch());
        assert!(m.matches(t(F::PortableExecutable), "jpg", 100));
        assert!(!m.matches(t(F::PortableExecutable), "exe", 100));
        assert!(m.matches(None, "exe", 100));
        assert!(!m.matches(None, "exe", 0));
    }

    #[test]
    fn unknown_names_list_the_choices() {
        let err = Filter::parse("pdff").unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with(r#"unknown type "pdff" (did you mean "pdf"?)"#),
            "{message}"
        );
        assert!(
            message.contains("mismatch, a group (archive, audio,"),
            "{message}"
        );
        assert!(message.contains("such as pdf, exe, dll"), "{message}");
        let far = Filter::parse("qqqqqqqq").unwrap_err().to_string();
        assert!(!far.contains("did you mean"), "{far}");
    }
}
