//! What uffs adds to the `file-format` crate's table: shorter names where its extension is not the name people
//! type, file(1)'s MIME type where the two differ on a common format, the other extensions a format is
//! stored under, which formats are text, and the container families the mismatch rules treat as one.

use file_format::FileFormat as F;

/// The name `type:` and the `type` column use when the crate's extension is not it (`jpeg`, not `jpg`).
pub(crate) fn name(f: F) -> Option<&'static str> {
    Some(match f {
        F::JointPhotographicExpertsGroup => "jpeg",
        F::Gzip => "gzip",
        F::Bzip2 => "bzip2",
        F::Bzip => "bzip",
        F::Zstandard => "zstd",
        F::PlainText => "text",
        F::CompoundFileBinary => "ole",
        F::Sqlite3 => "sqlite",
        F::UnixCompress => "compress",
        F::Appimage => "appimage",
        // Binary Android XML is not XML text.
        F::AndroidBinaryXml => "axml",
        F::PemCertificate
        | F::PemCertificateSigningRequest
        | F::PemPrivateKey
        | F::PemPublicKey => "pem",
        F::PgpMessage
        | F::PgpPrivateKeyBlock
        | F::PgpPublicKeyBlock
        | F::PgpSignature
        | F::PgpSignedMessage => "pgp",
        _ => return None,
    })
}

/// More names for the same types: the crate's own extension where [`name`] replaced it, and spellings people
/// use. A family name (`zip`, `ole`, `pe`) is listed in [`Family::filter_name`] instead.
pub(crate) const ALIASES: &[(&str, F)] = &[
    ("jpg", F::JointPhotographicExpertsGroup),
    ("gz", F::Gzip),
    ("bz2", F::Bzip2),
    ("zst", F::Zstandard),
    ("txt", F::PlainText),
    ("cfb", F::CompoundFileBinary),
    ("tif", F::TagImageFileFormat),
    ("htm", F::HypertextMarkupLanguage),
    ("sqlite3", F::Sqlite3),
    ("z", F::UnixCompress),
];

/// file(1)'s MIME type where the crate's differs, for formats common on the volumes uffs reads.
pub(crate) fn mime(f: F) -> Option<&'static str> {
    Some(match f {
        F::CompoundFileBinary => "application/x-ole-storage",
        F::WaveformAudio => "audio/x-wav",
        F::PythonScript => "text/x-script.python",
        F::MatroskaVideo | F::Matroska3dVideo => "video/x-matroska",
        F::MatroskaAudio => "audio/x-matroska",
        F::FreeLosslessAudioCodec => "audio/flac",
        _ => return None,
    })
}

/// Executables and libraries with an MS-DOS header: what Windows names PE images, plus the older NE/LE forms.
const MZ_EXTENSIONS: &[&str] = &[
    "exe", "dll", "sys", "drv", "ocx", "cpl", "scr", "efi", "mui", "mun", "ax", "acm", "tsp",
    "pyd", "node", "winmd", "com", "pif", "bpl", "dpl", "xll", "wll", "ime", "rll", "ppi",
    "msstyles", "8bf", "api", "asi", "flt", "fon", "vxd", "386", "ovl",
];

/// Extensions of text files: markup, data, source, scripts and configuration. They matter where the crate
/// gives a binary format the same extension (`.ts` MPEG transport stream, `.obj` COFF, `.pot` PowerPoint
/// template), and they make a text signature on any of them fine.
#[rustfmt::skip]
pub(crate) const TEXT_EXTENSIONS: &[&str] = &[
    "txt", "text", "log", "md", "markdown", "rst", "adoc", "org", "csv", "tsv", "json", "jsonl",
    "ndjson", "geojson", "xml", "xsd", "xsl", "xslt", "dtd", "html", "htm", "xhtml", "shtml",
    "hta", "svg", "css", "scss", "less", "js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx",
    "vue", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "inl", "ipp", "cs", "fs", "vb",
    "java", "kt", "kts", "scala", "groovy", "gradle", "go", "rs", "py", "pyw", "pyi", "rb", "pl",
    "pm", "php", "sh", "bash", "zsh", "ksh", "fish", "bat", "cmd", "ps1", "psm1", "psd1", "vbs",
    "vba", "wsf", "ini", "inf", "cfg", "conf", "config", "properties", "toml", "yaml", "yml",
    "reg", "sql", "lua", "tcl", "r", "m", "mm", "swift", "clj", "el", "lisp", "hs", "erl", "ex",
    "exs", "dart", "asm", "s", "f", "f90", "pas", "d", "nim", "zig", "v", "sv", "vhdl", "tex",
    "bib", "sty", "cls", "srt", "vtt", "sub", "ass", "ssa", "lrc", "m3u", "m3u8", "pls", "cue",
    "nfo", "diz", "me", "readme", "license", "manifest", "gitignore", "gitattributes",
    "editorconfig", "dockerfile", "makefile", "mk", "cmake", "sln", "csproj", "vcxproj", "vbproj",
    "fsproj", "props", "targets", "resx", "xaml", "plist", "eml", "mbox", "ics", "vcf", "url",
    "desktop", "service", "pem", "crt", "cer", "key", "csr", "pub", "asc", "sig", "patch", "diff",
    "po", "pot", "obj", "mtl", "stl", "ply", "dxf", "gcode", "svgz", "rtf", "ps", "eps", "tmx",
    "tsx", "kml", "gpx", "rss", "atom", "opml", "wsdl", "xlf", "xliff", "resw", "map", "lst",
    "def", "idl", "rc", "am", "ac", "m4", "spec", "pc", "lock", "env",
];

/// Formats that are text themselves though the crate's MIME type does not say `text/` or XML/JSON.
pub(crate) fn is_text(f: F) -> bool {
    matches!(
        f,
        F::Postscript
            | F::EncapsulatedPostscript
            | F::RichTextFormat
            | F::PemCertificate
            | F::PemCertificateSigningRequest
            | F::PemPrivateKey
            | F::PemPublicKey
            | F::PgpMessage
            | F::PgpPrivateKeyBlock
            | F::PgpPublicKeyBlock
            | F::PgpSignature
            | F::PgpSignedMessage
            | F::SubripText
            | F::Mp3Url
            | F::MicrosoftVisualStudioSolution
    )
}

/// Binary formats whose head may still be clean text, so a text head does not overrule their signature: PDF
/// (the header and first objects are often ASCII), the ASCII Netpbm images, ASCII cpio, `ar` archives of text
/// members, FITS (2880 bytes of ASCII header).
pub(crate) fn may_look_like_text(f: F) -> bool {
    matches!(
        f,
        F::PortableDocumentFormat
            | F::AdobeIllustratorArtwork
            | F::PortableBitmap
            | F::PortableGraymap
            | F::PortablePixmap
            | F::Cpio
            | F::UnixArchiver
            | F::FlexibleImageTransportSystem
    )
}

/// Other extensions a format's files carry (the crate lists one per format).
pub(crate) fn extensions(f: F) -> &'static [&'static str] {
    match f {
        F::PortableExecutable
        | F::DynamicLinkLibrary
        | F::MsDosExecutable
        | F::NewExecutable
        | F::LinearExecutable => MZ_EXTENSIONS,
        F::JointPhotographicExpertsGroup => &["jpeg", "jpe", "jfif", "jfi", "jif"],
        F::TagImageFileFormat => &[
            "tif", "dng", "nef", "nrw", "arw", "pef", "srw", "erf", "3fr", "kdc",
        ],
        F::WindowsBitmap => &["dib"],
        F::WindowsIcon => &["cur"],
        F::PortableDocumentFormat => &["ai"],
        F::PlainText => TEXT_EXTENSIONS,
        F::HypertextMarkupLanguage => &["htm", "xhtml", "shtml", "hta"],
        F::ExtensibleMarkupLanguage => &[
            "xsd", "xsl", "xslt", "config", "manifest", "resx", "xaml", "plist",
        ],
        F::Gzip => &["gzip", "tgz", "svgz", "emz", "wmz"],
        F::Bzip2 => &["tbz", "tbz2"],
        F::Xz => &["txz"],
        F::Zstandard => &["zstd", "tzst"],
        F::UnixCompress => &["z", "taz"],
        F::Appimage => &["appimage"],
        F::Sqlite3 => &["sqlite3", "db3", "s3db", "sl3"],
        F::Mpeg12AudioLayer3 => &["mpga"],
        F::Zip => &["zipx"],
        F::CompoundFileBinary => &["cfb", "ole"],
        F::WindowsShortcut => &["lnk"],
        F::ShellScript => &["bash", "zsh", "ksh"],
        // Object code goes by the toolchain's names: linkers take an ELF object as `.obj` or `.a` (glibc ships
        // `libmcheck.a` as one), and Go's object files are `ar` archives named `.o`.
        F::ExecutableAndLinkableFormat => &["so", "o", "ko", "elf", "axf", "prx", "obj", "a"],
        F::MachO => &["dylib", "bundle", "o", "so"],
        F::CommonObjectFileFormat => &["obj", "o"],
        F::UnixArchiver => &["lib", "o"],
        // X.509 certificates in DER are as often `.crt` and `.cer` as `.der` (PEM ones are text under the same names).
        F::DerCertificate => &["crt", "cer", "cert"],
        F::LlvmBitcode => &["o"],
        _ => &[],
    }
}

/// Formats that share a container: the mismatch rules accept any extension of the family for any member, since
/// a head cannot always tell the members apart (a `.docx` whose `word/` entry lies past the head is `zip`), and
/// a member renamed to another member's extension is not hiding what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// ZIP and every format stored in one (Office Open XML, OpenDocument, JAR, APK, EPUB, APPX, …).
    Zip,
    /// OLE compound files (legacy Office, MSI, Outlook messages, `Thumbs.db`, …).
    Ole,
    /// MS-DOS headers: PE images (EXE and DLL), NE, LE and DOS programs.
    Mz,
    /// ISO base media files (`ftyp`): MP4, QuickTime, 3GP, HEIF, AVIF.
    IsoMedia,
    /// Matroska and WebM.
    Matroska,
    /// Advanced Systems Format: WMV, WMA.
    Asf,
    /// Ogg streams.
    Ogg,
}

impl Family {
    pub(crate) const ALL: [Family; 7] = [
        Family::Zip,
        Family::Ole,
        Family::Mz,
        Family::IsoMedia,
        Family::Matroska,
        Family::Asf,
        Family::Ogg,
    ];

    pub(crate) fn of(f: F) -> Option<Family> {
        Family::ALL.into_iter().find(|family| family.has(f))
    }

    fn has(self, f: F) -> bool {
        match self {
            Family::Zip => matches!(
                f,
                F::Zip
                    | F::ThreeDimensionalManufacturingFormat
                    | F::AdobeIntegratedRuntime
                    | F::AndroidAppBundle
                    | F::AndroidPackage
                    | F::Autodesk123d
                    | F::CircuitDiagramDocument
                    | F::DesignWebFormatXps
                    | F::ElectronicPublication
                    | F::EnterpriseApplicationArchive
                    | F::FictionbookZip
                    | F::FigmaDesign
                    | F::FlashCs5Project
                    | F::Fusion360
                    | F::IndesignMarkupLanguage
                    | F::JavaArchive
                    | F::KeyholeMarkupLanguageZip
                    | F::MicrosoftVisualStudioExtension
                    | F::MusicxmlZip
                    | F::OfficeOpenXmlDocument
                    | F::OfficeOpenXmlDrawing
                    | F::OfficeOpenXmlPresentation
                    | F::OfficeOpenXmlSpreadsheet
                    | F::OpendocumentDatabase
                    | F::OpendocumentFormula
                    | F::OpendocumentFormulaTemplate
                    | F::OpendocumentGraphics
                    | F::OpendocumentGraphicsTemplate
                    | F::OpendocumentPresentation
                    | F::OpendocumentPresentationTemplate
                    | F::OpendocumentSpreadsheet
                    | F::OpendocumentSpreadsheetTemplate
                    | F::OpendocumentText
                    | F::OpendocumentTextMaster
                    | F::OpendocumentTextMasterTemplate
                    | F::OpendocumentTextTemplate
                    | F::Openraster
                    | F::Openxps
                    | F::Sketch43
                    | F::SpaceclaimDocument
                    | F::SunXmlCalc
                    | F::SunXmlCalcTemplate
                    | F::SunXmlDraw
                    | F::SunXmlDrawTemplate
                    | F::SunXmlImpress
                    | F::SunXmlImpressTemplate
                    | F::SunXmlMath
                    | F::SunXmlWriter
                    | F::SunXmlWriterGlobal
                    | F::SunXmlWriterTemplate
                    | F::UniversalSceneDescriptionZip
                    | F::WebApplicationArchive
                    | F::WindowsAppBundle
                    | F::WindowsAppPackage
                    | F::Xap
                    | F::Xpinstall
                    | F::IosAppStorePackage
            ),
            Family::Ole => matches!(
                f,
                F::CompoundFileBinary
                    | F::ThreeDimensionalStudioMax
                    | F::AutodeskInventorAssembly
                    | F::AutodeskInventorDrawing
                    | F::AutodeskInventorPart
                    | F::AutodeskInventorPresentation
                    | F::CorelPresentations7
                    | F::FlashProject
                    | F::MicrosoftExcelSpreadsheet
                    | F::MicrosoftPowerpointPresentation
                    | F::MicrosoftProjectPlan
                    | F::MicrosoftPublisherDocument
                    | F::MicrosoftSoftwareInstaller
                    | F::MicrosoftVisioDrawing
                    | F::MicrosoftWordDocument
                    | F::MicrosoftWorks6Spreadsheet
                    | F::MicrosoftWorksDatabase
                    | F::MicrosoftWorksWordProcessor
                    | F::SolidworksAssembly
                    | F::SolidworksDrawing
                    | F::SolidworksPart
                    | F::Starcalc
                    | F::Starchart
                    | F::Stardraw
                    | F::Starimpress
                    | F::Starmath
                    | F::Starwriter
                    | F::WordperfectDocument
                    | F::WordperfectGraphics
            ),
            Family::Mz => matches!(
                f,
                F::MsDosExecutable
                    | F::PortableExecutable
                    | F::DynamicLinkLibrary
                    | F::NewExecutable
                    | F::LinearExecutable
            ),
            Family::IsoMedia => matches!(
                f,
                F::Mpeg4Part14
                    | F::Mpeg4Part14Audio
                    | F::Mpeg4Part14Video
                    | F::Mpeg4Part14Subtitles
                    | F::AppleItunesAudio
                    | F::AppleItunesAudiobook
                    | F::AppleItunesProtectedAudio
                    | F::AppleItunesVideo
                    | F::AppleQuicktime
                    | F::SonyMovie
                    | F::FlashMp4Video
                    | F::FlashMp4ProtectedVideo
                    | F::ThirdGenerationPartnershipProject
                    | F::ThirdGenerationPartnershipProject2
                    | F::HighEfficiencyImageCoding
                    | F::HighEfficiencyImageCodingSequence
                    | F::HighEfficiencyImageFileFormat
                    | F::HighEfficiencyImageFileFormatSequence
                    | F::Av1ImageFileFormat
                    | F::Av1ImageFileFormatSequence
                    | F::CanonRaw3
            ),
            Family::Matroska => matches!(
                f,
                F::ExtensibleBinaryMetaLanguage
                    | F::MatroskaVideo
                    | F::MatroskaAudio
                    | F::MatroskaSubtitles
                    | F::Matroska3dVideo
                    | F::Webm
            ),
            Family::Asf => matches!(
                f,
                F::AdvancedSystemsFormat
                    | F::WindowsMediaVideo
                    | F::WindowsMediaAudio
                    | F::MicrosoftDigitalVideoRecording
            ),
            Family::Ogg => matches!(
                f,
                F::OggMultiplexedMedia
                    | F::OggFlac
                    | F::OggOpus
                    | F::OggSpeex
                    | F::OggVorbis
                    | F::OggMedia
                    | F::OggTheora
            ),
        }
    }

    /// Extensions of the family beyond its members' own.
    pub(crate) fn extensions(self) -> &'static [&'static str] {
        match self {
            Family::Zip => &[
                "zip",
                "zipx",
                "docm",
                "dotx",
                "dotm",
                "xlsm",
                "xltx",
                "xltm",
                "xlsb",
                "xlam",
                "pptm",
                "potx",
                "potm",
                "ppsx",
                "ppsm",
                "ppam",
                "sldx",
                "thmx",
                "vsdm",
                "vstx",
                "vssx",
                "vsix",
                "nupkg",
                "snupkg",
                "whl",
                "egg",
                "aar",
                "cbz",
                "msix",
                "msixbundle",
                "appx",
                "appxbundle",
                "xps",
                "oxps",
                "pbix",
                "twbx",
                "crx",
                "ggb",
            ],
            Family::Ole => &[
                "doc", "dot", "xls", "xlt", "xla", "ppt", "pot", "pps", "ppa", "msi", "msp", "mst",
                "msm", "msg", "oft", "db", "suo", "vsd", "vss", "vst", "pub", "mpp", "wps", "wdb",
                "xlr", "hwp", "ole", "cfb",
            ],
            Family::Mz => MZ_EXTENSIONS,
            Family::IsoMedia => &[
                "mp4", "m4a", "m4v", "m4b", "m4p", "mov", "qt", "3gp", "3g2", "f4v", "f4a", "f4p",
                "heic", "heif", "avif", "cr3", "mj2",
            ],
            Family::Matroska => &["mkv", "mka", "mks", "mk3d", "webm"],
            Family::Asf => &["asf", "wmv", "wma", "dvr-ms"],
            Family::Ogg => &["ogg", "oga", "ogv", "ogx", "opus", "spx", "ogm"],
        }
    }

    /// The name `type:` takes for the whole family, where one is useful.
    pub(crate) fn filter_name(self) -> Option<&'static str> {
        match self {
            Family::Zip => Some("zip"),
            Family::Ole => Some("ole"),
            _ => None,
        }
    }
}

/// Extensions whose files always begin with their format's signature within the head: such a file with no
/// signature (and not empty) is a mismatch. Formats whose signature may be missing or late are left out:
/// MP3 (junk before the first frame), ISO 9660 (offset 32769), VHD (footer), `.so` (linker scripts are text).
pub(crate) const PROMISES_SIGNATURE: &[&str] = &[
    "exe", "dll", "ocx", "cpl", "scr", "efi", "msi", "pdf", "png", "jpg", "jpeg", "gif", "bmp",
    "tif", "tiff", "webp", "ico", "psd", "zip", "gz", "tgz", "7z", "rar", "xz", "bz2", "zst",
    "cab", "docx", "xlsx", "pptx", "odt", "ods", "odp", "epub", "jar", "apk", "doc", "xls", "ppt",
    "sqlite", "sqlite3", "mp4", "m4a", "mov", "mkv", "webm", "flac", "wav", "avi", "ogg", "class",
    "lnk", "chm", "woff", "woff2", "deb", "rpm",
];

/// Extensions that many unrelated formats use, or that name a state rather than a format: they never
/// mismatch. `.iso` is here because its signature lies past the head.
pub(crate) const NEVER_MISMATCH: &[&str] = &[
    "bin", "dat", "data", "tmp", "temp", "bak", "old", "orig", "raw", "img", "db", "cache", "pak",
    "iso", "dmp", "out",
];
