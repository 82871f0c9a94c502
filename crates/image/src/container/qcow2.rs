//! qcow2 images (QEMU's copy-on-write format, versions 2 and 3) read as the disk they hold. Recognised by the
//! `QFI\xfb` magic, never the name. A two-level table maps the disk's clusters: the L1 table (read at open) points
//! at L2 tables, whose entries say where each cluster's bytes are: a cluster of the file, a deflate-compressed run
//! of bytes, "reads as zeros" (version 3), or nothing, which reads through the backing file when there is one and
//! as zeros when there is none. A backing file (named in the header, relative to the image's folder) is opened
//! through [`super::open_parent`] and may be raw, qcow2 or any other container.
//!
//! L2 entries are read per read, only those the read needs (one positional read per L2 table it crosses), so
//! nothing is locked or cached; a compressed cluster is inflated once per read that needs it. Refused with a
//! message: encryption, an external data file, extended L2 entries, zstd compression, unknown incompatible
//! features. Refcounts and snapshots do not matter for reading the current state: a "dirty" image (refcounts not
//! yet repaired) reads as it is, and one QEMU marked corrupt reads too, saying so. Format: QEMU's
//! `docs/interop/qcow2.txt`; every number is big-endian.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::bytes::{be32, be64};
use super::{bad, within, Image};

pub const MAGIC: &[u8; 4] = b"QFI\xfb";
/// Bits 9–55 of an L1 or standard L2 entry: a host offset, cluster-aligned.
const OFFSET_MASK: u64 = 0x00ff_ffff_ffff_fe00;
/// L2 entry bit 62: the cluster is compressed.
const COMPRESSED: u64 = 1 << 62;
/// Standard L2 entry bit 0 (version 3): the cluster reads as zeros.
const ZERO: u64 = 1;
/// Incompatible feature bits.
const DIRTY: u64 = 1 << 0;
const CORRUPT: u64 = 1 << 1;
const EXTERNAL_DATA: u64 = 1 << 2;
const COMPRESSION_TYPE: u64 = 1 << 3;
const EXTENDED_L2: u64 = 1 << 4;
const KNOWN_INCOMPATIBLE: u64 = DIRTY | CORRUPT | EXTERNAL_DATA | COMPRESSION_TYPE | EXTENDED_L2;
/// QEMU's limits: clusters of 512 bytes to 2 MiB, an L1 table of at most 32 MiB, a backing name under 1 KiB.
const MIN_CLUSTER_BITS: u32 = 9;
const MAX_CLUSTER_BITS: u32 = 21;
const MAX_L1_BYTES: u64 = 32 << 20;
const MAX_BACKING_NAME: u32 = 1023;

/// An open qcow2 image.
#[derive(Debug)]
pub struct Qcow2 {
    file: File,
    path: PathBuf,
    file_len: u64,
    version: u32,
    cluster_bits: u32,
    /// The disk's size.
    len: u64,
    /// L2 tables' offsets in the file, one per L1 entry; 0 where none is allocated.
    l1: Vec<u64>,
    /// The image unallocated clusters read through, and its name as the header gives it.
    backing: Option<(Box<dyn Image>, String)>,
    incompatible: u64,
    snapshots: u32,
}

/// Where a cluster's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cluster {
    /// Never written: the backing file, or zeros.
    Unallocated,
    /// Reads as zeros (version 3's zero flag).
    Zero,
    /// At this offset of the file.
    Data(u64),
    /// Deflate data at this offset of the file, at most this many bytes of it.
    Compressed(u64, u64),
}

impl Qcow2 {
    /// The qcow2 image in `file` (whose length is `file_len`), or `None` when it is not one. `chain` holds the
    /// images that read through this one, for [`super::open_parent`].
    pub fn open(
        path: &Path,
        file: &File,
        file_len: u64,
        chain: &[PathBuf],
    ) -> io::Result<Option<Qcow2>> {
        let mut header = [0u8; 112];
        if file_len < 72 {
            return Ok(None);
        }
        let n = header.len().min(file_len as usize);
        crate::read::read_file_at(file, &mut header[..n], 0)?;
        if &header[..4] != MAGIC {
            return Ok(None);
        }
        let version = be32(&header, 4);
        match version {
            2 | 3 => {}
            1 => {
                return Err(bad(
                    "this is a qcow image of version 1 (QEMU's first format), which uffs does not read; \
                     convert it first (qemu-img convert -O qcow2 OLD.qcow NEW.qcow2)",
                ))
            }
            v => return Err(bad(format!("this qcow2 image has version {v}; uffs reads versions 2 and 3"))),
        }
        let backing_at = be64(&header, 8);
        let backing_size = be32(&header, 16);
        let cluster_bits = be32(&header, 20);
        let len = be64(&header, 24);
        let crypt = be32(&header, 32);
        let l1_size = be32(&header, 36);
        let l1_at = be64(&header, 40);
        let snapshots = be32(&header, 60);
        if !(MIN_CLUSTER_BITS..=MAX_CLUSTER_BITS).contains(&cluster_bits) {
            return Err(bad(format!(
                "this qcow2 image's clusters of 2^{cluster_bits} bytes are not a size it can have (2^9 to 2^21)"
            )));
        }
        if crypt != 0 {
            let how = match crypt {
                1 => "AES",
                2 => "LUKS",
                _ => "an unknown method",
            };
            return Err(bad(format!(
                "this qcow2 image is encrypted ({how}), which uffs does not read; decrypt it first \
                 (qemu-img convert --object secret,id=s,data=PASSWORD --image-opts \
                 driver=qcow2,file.filename=IMAGE,encrypt.key-secret=s -O raw disk.img)"
            )));
        }
        let incompatible = if version >= 3 {
            let header_len = be32(&header, 100);
            if header_len < 104 || file_len < u64::from(header_len) {
                return Err(bad(format!(
                    "this qcow2 v3 image's header length {header_len} is not one it can have"
                )));
            }
            let features = be64(&header, 72);
            // The compression type byte is there only when the header is long enough to hold it.
            let compression = if header_len > 104 { header[104] } else { 0 };
            if features & !KNOWN_INCOMPATIBLE != 0 {
                return Err(bad(format!(
                    "this qcow2 image uses incompatible features uffs does not know (bits {:#x})",
                    features & !KNOWN_INCOMPATIBLE
                )));
            }
            if features & EXTERNAL_DATA != 0 {
                return Err(bad(
                    "this qcow2 image keeps its data in an external data file, which uffs does not read; \
                     convert it first (qemu-img convert -O raw IMAGE disk.img)",
                ));
            }
            if features & EXTENDED_L2 != 0 {
                return Err(bad(
                    "this qcow2 image has extended L2 entries (subclusters), which uffs does not read; \
                     convert it first (qemu-img convert -O qcow2 IMAGE plain.qcow2)",
                ));
            }
            if features & COMPRESSION_TYPE != 0 && compression != 0 {
                let name = if compression == 1 {
                    "zstd"
                } else {
                    "an unknown type"
                };
                return Err(bad(format!(
                    "this qcow2 image's compressed clusters use {name} ({compression}), which uffs does not \
                     read (it reads zlib); convert it first (qemu-img convert -O qcow2 IMAGE plain.qcow2)"
                )));
            }
            features
        } else {
            0
        };
        // The L1 table: one entry per L2 table, each covering cluster_size / 8 clusters.
        let l2_span = 1u64 << (2 * cluster_bits - 3);
        let needed = len.div_ceil(l2_span);
        if u64::from(l1_size) < needed {
            return Err(bad(format!(
                "this qcow2 image's L1 table has {l1_size} entries, too few for its {len}-byte disk ({needed})"
            )));
        }
        let l1_bytes = u64::from(l1_size) * 8;
        if l1_bytes > MAX_L1_BYTES {
            return Err(bad(format!(
                "this qcow2 image's L1 table of {l1_bytes} bytes is larger than QEMU makes (32 MiB)"
            )));
        }
        if !within(l1_at, l1_bytes, file_len) {
            return Err(bad(format!(
                "this qcow2 image's L1 table ({l1_size} entries at {l1_at}) is past the file's end ({file_len} bytes)"
            )));
        }
        // Entries past the disk's end map nothing: only those it needs are kept.
        let mut raw = vec![0u8; needed as usize * 8];
        crate::read::read_file_at(file, &mut raw, l1_at)?;
        let cluster = 1u64 << cluster_bits;
        let mut l1 = Vec::with_capacity(needed as usize);
        for (i, e) in raw.chunks_exact(8).map(|c| be64(c, 0)).enumerate() {
            let at = e & OFFSET_MASK;
            if at != 0 && (!at.is_multiple_of(cluster) || !within(at, cluster, file_len)) {
                return Err(bad(format!(
                    "this qcow2 image's L1 entry {i} points at an L2 table at {at}, which is {}",
                    if !at.is_multiple_of(cluster) {
                        "not on a cluster boundary"
                    } else {
                        "past the file's end"
                    }
                )));
            }
            l1.push(at);
        }
        let file = file.try_clone()?;
        let mut image = Qcow2 {
            file,
            path: path.to_path_buf(),
            file_len,
            version,
            cluster_bits,
            len,
            l1,
            backing: None,
            incompatible,
            snapshots,
        };
        if backing_at != 0 && backing_size != 0 {
            if backing_size > MAX_BACKING_NAME
                || !within(backing_at, u64::from(backing_size), file_len)
            {
                return Err(bad(format!(
                    "this qcow2 image's backing file name ({backing_size} bytes at {backing_at}) is not one it can have"
                )));
            }
            let mut name = vec![0u8; backing_size as usize];
            crate::read::read_file_at(&image.file, &mut name, backing_at)?;
            let parent = backing_path(path, &name);
            // A damaged backing file's errors say which file they are about.
            let opened = super::open_parent(path, &parent, chain).map_err(|e| {
                let shown = parent.display().to_string();
                if e.to_string().contains(&shown) {
                    e
                } else {
                    io::Error::new(e.kind(), format!("backing file {shown}: {e}"))
                }
            })?;
            image.backing = Some((opened, String::from_utf8_lossy(&name).into_owned()));
        }
        Ok(Some(image))
    }

    /// The image's file name, for errors met while reading (they may come from a backing file).
    fn name(&self) -> String {
        let name = self.path.file_name().unwrap_or(self.path.as_os_str());
        format!("qcow2 image {}", name.to_string_lossy())
    }

    fn cluster_size(&self) -> u64 {
        1 << self.cluster_bits
    }

    /// What an L2 entry says of its cluster; `InvalidData` when it points outside the file.
    fn classify(&self, entry: u64) -> io::Result<Cluster> {
        if entry & COMPRESSED != 0 {
            let x = 62 - (self.cluster_bits - 8);
            let at = entry & ((1u64 << x) - 1);
            let sectors = ((entry & ((1u64 << 62) - 1)) >> x) + 1;
            let size = sectors * 512 - (at & 511);
            if at >= self.file_len {
                return Err(bad(format!(
                    "{}'s compressed cluster at {at} is past the file's end ({} bytes)",
                    self.name(),
                    self.file_len
                )));
            }
            // The last compressed cluster's final sector may stop short of the file's end.
            return Ok(Cluster::Compressed(at, size.min(self.file_len - at)));
        }
        let at = entry & OFFSET_MASK;
        if self.version >= 3 && entry & ZERO != 0 {
            return Ok(Cluster::Zero);
        }
        if at == 0 {
            return Ok(Cluster::Unallocated);
        }
        if !at.is_multiple_of(self.cluster_size())
            || !within(at, self.cluster_size(), self.file_len)
        {
            return Err(bad(format!(
                "{} maps a cluster to {at}, which is {}",
                self.name(),
                if !at.is_multiple_of(self.cluster_size()) {
                    "not on a cluster boundary"
                } else {
                    "past the file's end"
                }
            )));
        }
        Ok(Cluster::Data(at))
    }

    /// The L2 entries `first..first + count` of L2 table `table` (all unallocated where it has none).
    fn l2_entries(&self, table: usize, first: u64, count: usize) -> io::Result<Vec<u64>> {
        let at = self.l1.get(table).copied().unwrap_or(0);
        if at == 0 {
            return Ok(vec![0; count]);
        }
        let mut raw = vec![0u8; count * 8];
        crate::read::read_file_at(&self.file, &mut raw, at + first * 8)?;
        Ok(raw.chunks_exact(8).map(|c| be64(c, 0)).collect())
    }

    /// Inflates the compressed cluster at `at` (at most `size` bytes of deflate data) into `out`.
    fn inflate(&self, at: u64, size: u64, out: &mut [u8]) -> io::Result<()> {
        let mut input = vec![0u8; size as usize];
        crate::read::read_file_at(&self.file, &mut input, at)?;
        let mut z = flate2::Decompress::new(false);
        let damaged = || {
            bad(format!(
                "{}'s compressed cluster at {at} is damaged",
                self.name()
            ))
        };
        // The data's size is known only to the sector: it may stop before the input's end, and must fill `out`.
        match z.decompress(&input, out, flate2::FlushDecompress::Finish) {
            Ok(_) if z.total_out() == out.len() as u64 => Ok(()),
            _ => Err(damaged()),
        }
    }

    /// Reads `buf` from the backing file at `offset`, zeros past its end (or all zeros without one).
    fn read_backing(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let Some((parent, _)) = &self.backing else {
            buf.fill(0);
            return Ok(());
        };
        let have = parent.len().saturating_sub(offset).min(buf.len() as u64) as usize;
        let (from, past) = buf.split_at_mut(have);
        if !from.is_empty() {
            parent.read_at(from, offset)?;
        }
        past.fill(0);
        Ok(())
    }

    /// Clusters written (data or compressed), of how many, and how many of those are compressed; `None` when an
    /// L2 table cannot be read.
    fn allocated(&self) -> Option<(u64, u64, u64)> {
        let per_table = self.cluster_size() / 8;
        let total = self.len.div_ceil(self.cluster_size());
        let (mut written, mut compressed) = (0, 0);
        for (t, &at) in self.l1.iter().enumerate() {
            if at == 0 {
                continue;
            }
            let count = per_table.min(total - t as u64 * per_table);
            for e in self.l2_entries(t, 0, count as usize).ok()? {
                match self.classify(e) {
                    Ok(Cluster::Data(_)) => written += 1,
                    Ok(Cluster::Compressed(..)) => {
                        written += 1;
                        compressed += 1
                    }
                    _ => {}
                }
            }
        }
        Some((written, total, compressed))
    }
}

/// The backing file `name` of the image at `image`: relative names are relative to the image's folder.
fn backing_path(image: &Path, name: &[u8]) -> PathBuf {
    #[cfg(unix)]
    let p = {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(name))
    };
    #[cfg(not(unix))]
    let p = PathBuf::from(String::from_utf8_lossy(name).into_owned());
    if p.is_absolute() {
        p
    } else {
        image.parent().unwrap_or(Path::new("")).join(p)
    }
}

impl Image for Qcow2 {
    fn len(&self) -> u64 {
        self.len
    }

    fn describe(&self) -> String {
        let cs = self.cluster_size();
        let mut s = format!(
            "qcow2 v{}: {} clusters",
            self.version,
            if cs >= 1024 {
                format!("{} KiB", cs / 1024)
            } else {
                format!("{cs}-byte")
            }
        );
        match self.allocated() {
            Some((w, t, 0)) => s += &format!(", {w} of {t} allocated"),
            Some((w, t, c)) => s += &format!(", {w} of {t} allocated ({c} compressed)"),
            None => {}
        }
        if let Some((_, name)) = &self.backing {
            s += &format!(", backing file {name}");
        }
        if self.incompatible & CORRUPT != 0 {
            s += ", marked corrupt by QEMU";
        }
        s
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut v = vec![self.path.clone()];
        if let Some((parent, _)) = &self.backing {
            v.extend(parent.files());
        }
        v
    }

    fn facts(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if self.incompatible & CORRUPT != 0 {
            v.push((
                "corrupt".into(),
                "QEMU marked this image corrupt (its metadata may be inconsistent); read anyway"
                    .into(),
            ));
        }
        if self.incompatible & DIRTY != 0 {
            v.push((
                "dirty".into(),
                "refcounts not repaired since QEMU last wrote it (reading does not use them)"
                    .into(),
            ));
        }
        if self.snapshots > 0 {
            v.push((
                "snapshots".into(),
                format!("{} internal (the current state is read)", self.snapshots),
            ));
        }
        if let Some((parent, name)) = &self.backing {
            v.push(("backing".into(), format!("{name}: {}", parent.describe())));
        }
        v
    }

    /// Positional reads only, no lock: reads from several threads at once. Runs of clusters that lie one after
    /// the other in the file are read in one call.
    fn read_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let cs = self.cluster_size();
        let per_table = cs / 8;
        let mut inflated: Vec<u8> = Vec::new();
        while !buf.is_empty() {
            let cluster = offset >> self.cluster_bits;
            let table = (cluster / per_table) as usize;
            let first = cluster % per_table;
            let last = (offset + buf.len() as u64 - 1) >> self.cluster_bits;
            let count = (last - cluster + 1).min(per_table - first) as usize;
            let entries = self.l2_entries(table, first, count)?;
            let mut i = 0;
            while i < count && !buf.is_empty() {
                let kind = self.classify(entries[i])?;
                let within = offset & (cs - 1);
                // The run of clusters read the same way: contiguous in the file, or all zeros, or all backing.
                let mut n = (cs - within).min(buf.len() as u64);
                i += 1;
                if !matches!(kind, Cluster::Compressed(..)) {
                    while i < count && (n as usize) < buf.len() {
                        let next = self.classify(entries[i])?;
                        let joins = match (kind, next) {
                            (Cluster::Data(a), Cluster::Data(b)) => b == a + within + n,
                            (a, b) => a == b,
                        };
                        if !joins {
                            break;
                        }
                        n += cs.min(buf.len() as u64 - n);
                        i += 1;
                    }
                }
                let (now, rest) = std::mem::take(&mut buf).split_at_mut(n as usize);
                match kind {
                    Cluster::Unallocated => self.read_backing(now, offset)?,
                    Cluster::Zero => now.fill(0),
                    Cluster::Data(at) => crate::read::read_file_at(&self.file, now, at + within)?,
                    Cluster::Compressed(at, size) => {
                        inflated.resize(cs as usize, 0);
                        self.inflate(at, size, &mut inflated)?;
                        now.copy_from_slice(&inflated[within as usize..][..n as usize]);
                    }
                }
                buf = rest;
                offset += n;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A qcow2 v3 image with 512-byte clusters in a temporary file: header, L1 at cluster 1, one L2 table at
    /// cluster 2, then the given clusters; `entries` are the L2 entries.
    fn image(
        name: &str,
        len: u64,
        entries: &[u64],
        tail: &[u8],
        patch: impl Fn(&mut Vec<u8>),
    ) -> PathBuf {
        let mut b = vec![0u8; 512 * 3];
        b[..4].copy_from_slice(MAGIC);
        b[4..8].copy_from_slice(&3u32.to_be_bytes());
        b[20..24].copy_from_slice(&9u32.to_be_bytes());
        b[24..32].copy_from_slice(&len.to_be_bytes());
        let l1_size = len.div_ceil(512 * 64).max(1) as u32;
        b[36..40].copy_from_slice(&l1_size.to_be_bytes());
        b[40..48].copy_from_slice(&512u64.to_be_bytes());
        b[100..104].copy_from_slice(&112u32.to_be_bytes());
        b[512..520].copy_from_slice(&(1024u64 | 1 << 63).to_be_bytes());
        for (i, e) in entries.iter().enumerate() {
            b[1024 + i * 8..][..8].copy_from_slice(&e.to_be_bytes());
        }
        b.extend_from_slice(tail);
        patch(&mut b);
        let p = std::env::temp_dir().join(format!("uffs-qcow2-{}-{name}", std::process::id()));
        std::fs::File::create(&p).unwrap().write_all(&b).unwrap();
        p
    }

    fn open(p: &Path) -> io::Result<Qcow2> {
        let f = File::open(p)?;
        let n = f.metadata()?.len();
        Qcow2::open(p, &f, n, &[]).map(|o| o.expect("a qcow2 image"))
    }

    #[test]
    fn clusters_read_as_their_entries_say() {
        // Cluster 0 at 1536 (0xAA), 1 unallocated, 2 zero-flagged (its offset ignored), 3 at 2048 (0xBB),
        // 4 compressed (0xCC), 5 at 1536 again.
        let mut tail = vec![0xAA; 512];
        tail.extend(vec![0xBB; 512]);
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&[0xCC; 512]).unwrap();
        let deflated = z.finish().unwrap();
        let comp_at = 2560u64;
        tail.extend(&deflated);
        let x = 62 - (9 - 8);
        let sectors = (comp_at % 512 + deflated.len() as u64).div_ceil(512) - 1;
        let comp = COMPRESSED | comp_at | sectors << x;
        let p = image(
            "clusters",
            6 * 512,
            &[1536 | 1 << 63, 0, 1536 | ZERO, 2048, comp, 1536],
            &tail,
            |_| {},
        );
        let q = open(&p).unwrap();
        assert_eq!(q.len(), 3072);
        let mut buf = vec![1u8; 3072];
        q.read_at(&mut buf, 0).unwrap();
        let want: Vec<u8> = [0xAA, 0, 0, 0xBB, 0xCC, 0xAA]
            .iter()
            .flat_map(|&v| vec![v; 512])
            .collect();
        assert_eq!(buf, want);
        // Reads that start and end inside clusters.
        for (at, n) in [(100, 1000), (511, 2), (1500, 1572), (2047, 1025)] {
            let mut b = vec![7u8; n];
            q.read_at(&mut b, at as u64).unwrap();
            assert_eq!(b, want[at..at + n], "{at}+{n}");
        }
        assert!(
            q.describe()
                .starts_with("qcow2 v3: 512-byte clusters, 4 of 6 allocated (1 compressed)"),
            "{}",
            q.describe()
        );
        let mut past = [0u8; 2];
        assert!(q.read_at(&mut past, 3071).is_err());
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn damaged_images_are_errors() {
        type Patch = Box<dyn Fn(&mut Vec<u8>)>;
        let cases: [(&str, Patch, &str); 7] = [
            (
                "bits",
                Box::new(|b| b[20..24].copy_from_slice(&30u32.to_be_bytes())),
                "clusters of 2^30",
            ),
            (
                "l1",
                Box::new(|b| b[40..48].copy_from_slice(&(1u64 << 40).to_be_bytes())),
                "past the file's end",
            ),
            (
                "l1size",
                Box::new(|b| b[36..40].copy_from_slice(&0u32.to_be_bytes())),
                "too few",
            ),
            (
                "l2",
                Box::new(|b| b[512..520].copy_from_slice(&(1u64 << 40).to_be_bytes())),
                "L1 entry 0",
            ),
            (
                "crypt",
                Box::new(|b| b[32..36].copy_from_slice(&2u32.to_be_bytes())),
                "encrypted (LUKS)",
            ),
            (
                "feature",
                Box::new(|b| b[72..80].copy_from_slice(&(1u64 << 9).to_be_bytes())),
                "bits 0x200",
            ),
            (
                "zstd",
                Box::new(|b| {
                    b[72..80].copy_from_slice(&8u64.to_be_bytes());
                    b[104] = 1
                }),
                "zstd",
            ),
        ];
        for (name, patch, says) in cases {
            let p = image(name, 4096, &[], &[], patch);
            let e = open(&p).unwrap_err().to_string();
            assert!(e.contains(says), "{name}: {e}");
            assert!(!e.contains('\n'), "{e}");
            let _ = std::fs::remove_file(&p);
        }
        // A cluster past the end, and a compressed cluster that is not deflate: errors when read.
        let p = image(
            "data",
            1024,
            &[1 << 30, COMPRESSED | 1024],
            &[0xFF; 512],
            |_| {},
        );
        let q = open(&p).unwrap();
        let mut b = [0u8; 512];
        assert!(q
            .read_at(&mut b, 0)
            .unwrap_err()
            .to_string()
            .contains("past the file's end"));
        assert!(q
            .read_at(&mut b, 512)
            .unwrap_err()
            .to_string()
            .contains("damaged"));
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn unallocated_clusters_read_the_backing_file_then_zeros() {
        // A raw backing file of 700 bytes under a 2048-byte disk whose cluster 1 is its own.
        let base = std::env::temp_dir().join(format!("uffs-qcow2-{}-base.raw", std::process::id()));
        let base_bytes: Vec<u8> = (0..700u32).map(|i| (i % 251) as u8 + 1).collect();
        std::fs::write(&base, &base_bytes).unwrap();
        let name = base.file_name().unwrap().to_str().unwrap().to_string();
        let p = image("child", 2048, &[0, 1536], &[0xEE; 512], |b| {
            b[8..16].copy_from_slice(&200u64.to_be_bytes());
            b[16..20].copy_from_slice(&(name.len() as u32).to_be_bytes());
            b[200..200 + name.len()].copy_from_slice(name.as_bytes());
        });
        let q = open(&p).unwrap();
        let mut want = vec![0u8; 2048];
        want[..700].copy_from_slice(&base_bytes);
        want[512..1024].fill(0xEE);
        let mut buf = vec![9u8; 2048];
        q.read_at(&mut buf, 0).unwrap();
        assert_eq!(buf, want);
        let mut b = vec![9u8; 300];
        q.read_at(&mut b, 1100).unwrap();
        assert_eq!(b, want[1100..1400]);
        assert_eq!(q.files(), vec![p.clone(), base.clone()]);
        assert!(
            q.describe().ends_with(&format!(", backing file {name}")),
            "{}",
            q.describe()
        );
        // Gone, it is named.
        std::fs::remove_file(&base).unwrap();
        let e = open(&p).unwrap_err().to_string();
        assert!(e.contains(&name) && e.contains("missing"), "{e}");
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn not_qcow2_is_none() {
        let p = std::env::temp_dir().join(format!("uffs-qcow2-{}-none", std::process::id()));
        std::fs::write(&p, vec![0u8; 4096]).unwrap();
        let f = File::open(&p).unwrap();
        assert!(Qcow2::open(&p, &f, 4096, &[]).unwrap().is_none());
        let _ = std::fs::remove_file(&p);
    }
}
