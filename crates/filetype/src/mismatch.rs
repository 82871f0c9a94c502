//! Whether a file's extension disagrees with its signature: the rules of `type:mismatch`, documented in the
//! crate docs, over tables built once from the types, their families and the curated lists.

use std::collections::HashSet;
use std::sync::OnceLock;

use crate::curated::{self, Family};
use crate::types::{table, Type};

/// How a file's extension disagrees with its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The head has another format's signature: a `.jpg` that is a PE image, a `.txt` that is a ZIP.
    Signature(Type),
    /// The extension promises a signature (`.exe`, `.pdf`, `.png`, `.zip`, …) that a non-empty file lacks.
    NoSignature,
}

struct Rules {
    /// Per type (by index): the extensions it accepts, sorted.
    accepts: Vec<Vec<&'static str>>,
    /// Extensions some type claims: only these can mismatch.
    known: HashSet<&'static str>,
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(build)
}

fn build() -> Rules {
    let infos = &table().infos;
    // Text extensions are claims too: a PE named `.txt` mismatches.
    let mut known: HashSet<&'static str> = curated::TEXT_EXTENSIONS.iter().copied().collect();
    let mut family_extensions = Vec::new();
    for family in Family::ALL {
        let mut exts = family.extensions().to_vec();
        for info in infos
            .iter()
            .filter(|i| Family::of(i.format) == Some(family))
        {
            exts.extend_from_slice(
                Type::of(info.format)
                    .map(Type::extensions)
                    .unwrap_or_default(),
            );
        }
        family_extensions.push((family, exts));
    }
    let mut accepts = Vec::with_capacity(infos.len());
    for ty in Type::all() {
        let mut exts = ty.extensions().to_vec();
        if let Some(family) = Family::of(ty.info().format) {
            if let Some((_, more)) = family_extensions.iter().find(|(f, _)| *f == family) {
                exts.extend_from_slice(more);
            }
        }
        exts.sort_unstable();
        exts.dedup();
        known.extend(exts.iter().copied());
        accepts.push(exts);
    }
    known.extend(curated::PROMISES_SIGNATURE.iter().copied());
    for never in curated::NEVER_MISMATCH {
        known.remove(never);
    }
    Rules { accepts, known }
}

/// Whether `extension` (without the dot, any case; empty for none) disagrees with `detected`, the type
/// [`detect`](crate::detect) found in the head of a file of `size` bytes. The rules, in order:
///
/// 1. No extension, or one no type claims (`.1`, `.part`), or one of many unrelated formats (`.bin`, `.dat`,
///    `.tmp`, `.bak`, `.db`, `.img`, `.iso`, …): never a mismatch. There is no claim to disagree with.
/// 2. An empty file: never (nothing was written yet).
/// 3. A binary signature found: a mismatch when the extension is not one of the type's, nor of its container
///    family (ZIP, OLE, MZ executables, ISO media, Matroska, ASF, Ogg).
/// 4. Text, or no signature at all: a mismatch when the extension promises a signature within the head
///    (`.exe`, `.dll`, `.pdf`, `.png`, `.jpg`, `.zip`, `.docx`, `.msi`, …; see the crate docs for the list).
pub fn mismatch(extension: &str, detected: Option<Type>, size: u64) -> Option<Mismatch> {
    if extension.is_empty() || size == 0 {
        return None;
    }
    let mut lower = [0u8; 16];
    let ext = lowercase(extension, &mut lower)?;
    let rules = rules();
    if !rules.known.contains(ext) {
        return None;
    }
    let promises = || curated::PROMISES_SIGNATURE.contains(&ext);
    match detected {
        // Text carries no signature: it disagrees only with an extension that promises one.
        Some(ty) if ty.is_text() => {
            (promises() && !ty.extensions().contains(&ext)).then_some(Mismatch::Signature(ty))
        }
        Some(ty) => {
            let accepts = &rules.accepts[ty.index()];
            accepts
                .binary_search(&ext)
                .is_err()
                .then_some(Mismatch::Signature(ty))
        }
        None => promises().then_some(Mismatch::NoSignature),
    }
}

/// `extension` in lowercase, in `buf`; `None` when it is longer than any known extension or not ASCII
/// (then no type claims it).
fn lowercase<'a>(extension: &str, buf: &'a mut [u8; 16]) -> Option<&'a str> {
    let bytes = extension.as_bytes();
    let out = buf.get_mut(..bytes.len())?;
    if !extension.is_ascii() {
        return None;
    }
    for (o, b) in out.iter_mut().zip(bytes) {
        *o = b.to_ascii_lowercase();
    }
    std::str::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use file_format::FileFormat as F;

    fn t(f: F) -> Option<Type> {
        Type::of(f)
    }

    #[test]
    fn no_extension_unknown_generic_or_empty_never_mismatch() {
        let pe = t(F::PortableExecutable);
        assert_eq!(mismatch("", pe, 100), None);
        assert_eq!(mismatch("part", pe, 100), None);
        assert_eq!(mismatch("1", pe, 100), None);
        // A text extension is a claim: an executable `.conf` is a mismatch.
        assert!(mismatch("conf", pe, 100).is_some());
        assert_eq!(mismatch("tmp", pe, 100), None);
        assert_eq!(mismatch("bin", t(F::PortableNetworkGraphics), 100), None);
        assert_eq!(mismatch("a-very-long-extension", pe, 100), None);
        assert_eq!(mismatch("exe", None, 0), None);
        assert_eq!(mismatch("jpg", pe, 0), None);
    }

    #[test]
    fn another_signature_is_a_mismatch() {
        let pe = t(F::PortableExecutable);
        assert_eq!(
            mismatch("jpg", pe, 100),
            Some(Mismatch::Signature(pe.unwrap()))
        );
        assert_eq!(
            mismatch("JPG", pe, 100),
            Some(Mismatch::Signature(pe.unwrap()))
        );
        let zip = t(F::Zip);
        assert_eq!(
            mismatch("txt", zip, 100),
            Some(Mismatch::Signature(zip.unwrap()))
        );
        assert!(mismatch("pdf", t(F::PlainText), 100).is_some());
        assert!(mismatch("png", t(F::JointPhotographicExpertsGroup), 100).is_some());
        assert!(mismatch("exe", t(F::Zip), 100).is_some());
        assert!(mismatch("doc", t(F::RichTextFormat), 100).is_some());
    }

    #[test]
    fn own_extensions_match() {
        assert_eq!(
            mismatch("jpg", t(F::JointPhotographicExpertsGroup), 100),
            None
        );
        assert_eq!(
            mismatch("jpeg", t(F::JointPhotographicExpertsGroup), 100),
            None
        );
        assert_eq!(mismatch("pdf", t(F::PortableDocumentFormat), 100), None);
        assert_eq!(mismatch("ai", t(F::PortableDocumentFormat), 100), None);
        // Names that real systems give these formats (found over Debian's /usr, where nothing lies).
        assert_eq!(mismatch("crt", t(F::DerCertificate), 100), None);
        assert_eq!(mismatch("cer", t(F::DerCertificate), 100), None);
        assert_eq!(mismatch("a", t(F::ExecutableAndLinkableFormat), 100), None);
        assert_eq!(
            mismatch("obj", t(F::ExecutableAndLinkableFormat), 100),
            None
        );
        assert_eq!(mismatch("o", t(F::UnixArchiver), 100), None);
        assert!(mismatch("crt", t(F::ExecutableAndLinkableFormat), 100).is_some());
        assert_eq!(mismatch("tgz", t(F::Gzip), 100), None);
        assert_eq!(mismatch("sqlite", t(F::Sqlite3), 100), None);
    }

    #[test]
    fn container_families_do_not_mismatch() {
        let zip = t(F::Zip);
        for ext in [
            "docx", "xlsx", "jar", "apk", "odt", "epub", "nupkg", "zip", "xlsm",
        ] {
            assert_eq!(mismatch(ext, zip, 100), None, "{ext}");
        }
        assert_eq!(mismatch("zip", t(F::OfficeOpenXmlDocument), 100), None);
        assert_eq!(mismatch("apk", t(F::JavaArchive), 100), None);
        let ole = t(F::CompoundFileBinary);
        for ext in ["msi", "doc", "xls", "ppt", "msg", "msp", "vsd"] {
            assert_eq!(mismatch(ext, ole, 100), None, "{ext}");
        }
        assert_eq!(mismatch("doc", t(F::MicrosoftSoftwareInstaller), 100), None);
        // PE images under their many extensions, DLL or not.
        for ext in [
            "exe", "dll", "sys", "ocx", "cpl", "scr", "efi", "mui", "pyd",
        ] {
            assert_eq!(mismatch(ext, t(F::PortableExecutable), 100), None, "{ext}");
            assert_eq!(mismatch(ext, t(F::DynamicLinkLibrary), 100), None, "{ext}");
        }
        assert_eq!(mismatch("m4a", t(F::Mpeg4Part14), 100), None);
        assert_eq!(mismatch("mov", t(F::Mpeg4Part14Video), 100), None);
        assert_eq!(mismatch("mka", t(F::MatroskaVideo), 100), None);
        assert_eq!(mismatch("wma", t(F::AdvancedSystemsFormat), 100), None);
    }

    #[test]
    fn text_mismatches_only_a_promised_signature() {
        let text = t(F::PlainText);
        for ext in [
            "txt", "csv", "json", "xml", "html", "svg", "c", "rs", "py", "ps1", "ini", "reg", "ts",
            "obj",
        ] {
            assert_eq!(mismatch(ext, text, 100), None, "{ext}");
        }
        assert_eq!(mismatch("html", t(F::ExtensibleMarkupLanguage), 100), None);
        assert_eq!(mismatch("svg", t(F::ExtensibleMarkupLanguage), 100), None);
        assert_eq!(mismatch("xml", t(F::ScalableVectorGraphics), 100), None);
        assert_eq!(mismatch("txt", t(F::ShellScript), 100), None);
        // Nor the extensions of obscure binary formats (Impulse Tracker `.it`, a Word template `.dot`).
        assert_eq!(mismatch("it", text, 100), None);
        assert_eq!(mismatch("dot", text, 100), None);
        // Text under an extension that promises a signature is a mismatch.
        assert!(mismatch("exe", text, 100).is_some());
        assert!(mismatch("png", text, 100).is_some());
        assert!(mismatch("pdf", t(F::HypertextMarkupLanguage), 100).is_some());
    }

    #[test]
    fn a_promised_signature_missing_is_a_mismatch() {
        for ext in [
            "exe", "dll", "pdf", "png", "zip", "jpg", "docx", "msi", "7z",
        ] {
            assert_eq!(
                mismatch(ext, None, 100),
                Some(Mismatch::NoSignature),
                "{ext}"
            );
        }
        // Extensions whose signature may be missing or late in the file do not promise one.
        for ext in ["mp3", "iso", "so", "txt", "sys", "vhd"] {
            assert_eq!(mismatch(ext, None, 100), None, "{ext}");
        }
    }

    #[test]
    fn promises_and_never_lists_are_consistent() {
        for ext in curated::PROMISES_SIGNATURE {
            assert!(!curated::NEVER_MISMATCH.contains(ext), "{ext}");
            assert!(rules().known.contains(ext), "{ext}");
            let claimed = Type::all().any(|t| rules().accepts[t.index()].contains(ext));
            assert!(claimed, "no type accepts the promised extension {ext}");
        }
    }
}
