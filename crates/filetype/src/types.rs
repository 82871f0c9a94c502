//! The types [`detect`](crate::detect) names: one per format of the `file-format` crate, with uffs's name,
//! MIME type, extensions and group for each, built once into a table that [`Type`] indexes.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use file_format::{FileFormat, Kind};

use crate::curated;

/// A broad kind of file, for `type:image`, `type:archive`, `type:executable` and so on: the crate's kinds,
/// plus [`Group::Text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    Archive,
    Audio,
    /// One compressed stream (gzip, xz, bzip2, zstd), as opposed to an [`Archive`](Group::Archive) of files.
    Compressed,
    Database,
    Diagram,
    /// Disk and disc images, virtual machine disks.
    Disk,
    Document,
    Ebook,
    /// Machine code and byte code: PE, ELF, Mach-O, Java classes, WebAssembly.
    Executable,
    Font,
    Formula,
    Geospatial,
    Image,
    Metadata,
    Model,
    Other,
    Package,
    Playlist,
    Presentation,
    Rom,
    Spreadsheet,
    Subtitle,
    /// Text in any encoding, and the formats that are text (XML, HTML, scripts, PEM, RTF, …). `type:text`
    /// matches every type whose [`Type::is_text`] holds, whatever its group.
    Text,
    Video,
}

impl Group {
    pub const ALL: [Group; 24] = [
        Group::Archive,
        Group::Audio,
        Group::Compressed,
        Group::Database,
        Group::Diagram,
        Group::Disk,
        Group::Document,
        Group::Ebook,
        Group::Executable,
        Group::Font,
        Group::Formula,
        Group::Geospatial,
        Group::Image,
        Group::Metadata,
        Group::Model,
        Group::Other,
        Group::Package,
        Group::Playlist,
        Group::Presentation,
        Group::Rom,
        Group::Spreadsheet,
        Group::Subtitle,
        Group::Text,
        Group::Video,
    ];

    /// The lowercase name `type:` takes.
    pub fn name(self) -> &'static str {
        match self {
            Group::Archive => "archive",
            Group::Audio => "audio",
            Group::Compressed => "compressed",
            Group::Database => "database",
            Group::Diagram => "diagram",
            Group::Disk => "disk",
            Group::Document => "document",
            Group::Ebook => "ebook",
            Group::Executable => "executable",
            Group::Font => "font",
            Group::Formula => "formula",
            Group::Geospatial => "geospatial",
            Group::Image => "image",
            Group::Metadata => "metadata",
            Group::Model => "model",
            Group::Other => "other",
            Group::Package => "package",
            Group::Playlist => "playlist",
            Group::Presentation => "presentation",
            Group::Rom => "rom",
            Group::Spreadsheet => "spreadsheet",
            Group::Subtitle => "subtitle",
            Group::Text => "text",
            Group::Video => "video",
        }
    }

    fn of_kind(kind: Kind) -> Group {
        match kind {
            Kind::Archive => Group::Archive,
            Kind::Audio => Group::Audio,
            Kind::Compressed => Group::Compressed,
            Kind::Database => Group::Database,
            Kind::Diagram => Group::Diagram,
            Kind::Disk => Group::Disk,
            Kind::Document => Group::Document,
            Kind::Ebook => Group::Ebook,
            Kind::Executable => Group::Executable,
            Kind::Font => Group::Font,
            Kind::Formula => Group::Formula,
            Kind::Geospatial => Group::Geospatial,
            Kind::Image => Group::Image,
            Kind::Metadata => Group::Metadata,
            Kind::Model => Group::Model,
            Kind::Package => Group::Package,
            Kind::Playlist => Group::Playlist,
            Kind::Presentation => Group::Presentation,
            Kind::Rom => Group::Rom,
            Kind::Spreadsheet => Group::Spreadsheet,
            Kind::Subtitle => Group::Subtitle,
            Kind::Video => Group::Video,
            _ => Group::Other,
        }
    }
}

/// The crate's kinds, to list every format it knows (it offers no list of all formats, only one per kind).
/// A kind added by a later version of the crate and missing here leaves its formats out of the table: the test
/// `every_kind_is_listed` counts them.
pub(crate) const KINDS: [Kind; 23] = [
    Kind::Archive,
    Kind::Audio,
    Kind::Compressed,
    Kind::Database,
    Kind::Diagram,
    Kind::Disk,
    Kind::Document,
    Kind::Ebook,
    Kind::Executable,
    Kind::Font,
    Kind::Formula,
    Kind::Geospatial,
    Kind::Image,
    Kind::Metadata,
    Kind::Model,
    Kind::Other,
    Kind::Package,
    Kind::Playlist,
    Kind::Presentation,
    Kind::Rom,
    Kind::Spreadsheet,
    Kind::Subtitle,
    Kind::Video,
];

/// A file type decided from a file's first bytes: a format of the `file-format` crate, named as uffs names it.
/// Cheap to copy and compare; its properties come from a table built on first use.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Type(u16);

pub(crate) struct Info {
    pub(crate) format: FileFormat,
    pub(crate) name: &'static str,
    mime: &'static str,
    description: &'static str,
    extensions: Vec<&'static str>,
    group: Group,
    text: bool,
    /// A clean-text head does not overrule this type's signature (see `detect`).
    pub(crate) may_look_like_text: bool,
}

pub(crate) struct Table {
    pub(crate) infos: Vec<Info>,
    index: HashMap<FileFormat, Type>,
}

pub(crate) fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(build)
}

fn build() -> Table {
    let mut infos = Vec::new();
    let mut index = HashMap::new();
    for kind in KINDS {
        for format in FileFormat::from_kind(kind) {
            // What no signature matched is not a type: `detect` answers `None` for it.
            if matches!(format, FileFormat::ArbitraryBinaryData | FileFormat::Empty) {
                continue;
            }
            // `format` is a `&'static FileFormat`, so the strings it hands out are `'static` too.
            let own = format.extension();
            let mut extensions = Vec::new();
            if own
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            {
                extensions.push(own);
            }
            for &ext in curated::extensions(*format) {
                if !extensions.contains(&ext) {
                    extensions.push(ext);
                }
            }
            let mime = curated::mime(*format).unwrap_or(format.media_type());
            // Some ZIP-based formats have an XML MIME type (VSDX, 3MF): their bytes are not text.
            let zipped = curated::Family::of(*format) == Some(curated::Family::Zip);
            let text = *format == FileFormat::PlainText
                || curated::is_text(*format)
                || (is_text_mime(mime) && !zipped);
            let group = match Group::of_kind(kind) {
                Group::Other if text => Group::Text,
                group => group,
            };
            let ty = Type(u16::try_from(infos.len()).expect("fewer than 65536 formats"));
            index.insert(*format, ty);
            infos.push(Info {
                format: *format,
                name: curated::name(*format).unwrap_or(own),
                mime,
                description: format.name(),
                extensions,
                group,
                text,
                may_look_like_text: text || curated::may_look_like_text(*format),
            });
        }
    }
    Table { infos, index }
}

/// MIME types of text: `text/…`, XML and JSON documents.
fn is_text_mime(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.ends_with("+xml")
        || mime.ends_with("/xml")
        || mime.ends_with("json")
}

impl Type {
    pub(crate) fn of(format: FileFormat) -> Option<Type> {
        table().index.get(&format).copied()
    }

    pub(crate) fn info(self) -> &'static Info {
        &table().infos[usize::from(self.0)]
    }

    pub(crate) fn index(self) -> usize {
        usize::from(self.0)
    }

    /// Every type, in the crate's order of kinds.
    pub fn all() -> impl ExactSizeIterator<Item = Type> {
        (0..table().infos.len()).map(|i| Type(i as u16))
    }

    /// The short lowercase name `type:` takes and the `type` column shows: `pdf`, `exe`, `dll`, `elf`, `zip`,
    /// `gzip`, `png`, `jpeg`, `mp3`, `sqlite`, `text`, … Several types may share a name (the MP4 variants are
    /// all `mp4`; DOS, NE, LE and PE programs are all `exe`).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The MIME type: file(1)'s where it and the crate differ on a common format, else the crate's.
    pub fn mime(self) -> &'static str {
        self.info().mime
    }

    /// The format's full name, from the crate: `Portable Document Format`.
    pub fn description(self) -> &'static str {
        self.info().description
    }

    /// The extensions (lowercase, without the dot) that legitimately carry this type, the usual one first.
    /// The mismatch rules also accept the extensions of the type's container family (see the crate docs).
    pub fn extensions(self) -> &'static [&'static str] {
        &self.info().extensions
    }

    /// The broad kind of file; text formats without a kind of their own are [`Group::Text`].
    pub fn group(self) -> Group {
        self.info().group
    }

    /// Whether files of this type are text (plain text, XML, HTML, SVG, scripts, PEM, RTF, …): what
    /// `type:text` matches.
    pub fn is_text(self) -> bool {
        self.info().text
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Type({} {}, {})",
            self.name(),
            self.mime(),
            self.description()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed() {
        // The crate has 448 formats in 0.29, two of them (binary data, empty) not types.
        let n = Type::all().len();
        assert!(
            n >= 446,
            "{n} types: a kind of the crate is missing from KINDS"
        );
    }

    #[test]
    fn names_and_extensions_are_lowercase() {
        let ok = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        };
        for ty in Type::all() {
            assert!(ok(ty.name()), "{ty:?}");
            assert!(!ty.extensions().is_empty(), "{ty:?} has no extension");
            for ext in ty.extensions() {
                assert!(ok(ext), "{ty:?}: {ext}");
            }
            assert!(ty.mime().contains('/'), "{ty:?}");
        }
    }

    #[test]
    fn curated_properties() {
        let t = |f| Type::of(f).unwrap();
        assert_eq!(t(FileFormat::JointPhotographicExpertsGroup).name(), "jpeg");
        assert_eq!(
            t(FileFormat::JointPhotographicExpertsGroup).extensions()[0],
            "jpg"
        );
        assert_eq!(t(FileFormat::PortableExecutable).name(), "exe");
        assert_eq!(t(FileFormat::DynamicLinkLibrary).name(), "dll");
        assert_eq!(t(FileFormat::PortableExecutable).group(), Group::Executable);
        assert_eq!(t(FileFormat::PlainText).name(), "text");
        assert_eq!(t(FileFormat::PlainText).group(), Group::Text);
        assert!(t(FileFormat::ScalableVectorGraphics).is_text());
        assert_eq!(t(FileFormat::ScalableVectorGraphics).group(), Group::Image);
        assert!(t(FileFormat::ShellScript).is_text());
        assert!(!t(FileFormat::PortableDocumentFormat).is_text());
        assert!(!t(FileFormat::AndroidBinaryXml).is_text());
        assert_eq!(
            t(FileFormat::CompoundFileBinary).mime(),
            "application/x-ole-storage"
        );
        assert_eq!(t(FileFormat::Gzip).group(), Group::Compressed);
        assert_eq!(Type::of(FileFormat::ArbitraryBinaryData), None);
    }
}
