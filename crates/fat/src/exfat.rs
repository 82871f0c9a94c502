//! exFAT, read from its own tables (Microsoft's exFAT specification): the boot region, the FAT, the allocation
//! bitmap, the up-case table, and the entry sets (file, stream extension, file names) of every folder.
//!
//! Ids are The Sleuth Kit's inode numbers (`tsk/fs/exfatfs*.c`, `tsk_fatfs.h`): a directory entry at byte `off`
//! of the volume is `(off - heap) / 32 + 3` where `heap` is the cluster heap's first byte; the root is 2; the
//! virtual files follow the last inode a sector of the volume (as far as the image holds it) could hold:
//! `$MBR`, `$FAT1`, (`$FAT2`), `$OrphanFiles`.
//!
//! Everything read from the volume is checked before use: lengths are capped by the image's length, chains are
//! followed with a bitmap of the clusters already claimed (a loop, a cross-link or a folder holding an ancestor
//! ends the chain with a warning), so a hostile image costs at most O(image size) in memory and time.

use uffs_fs::{attr, Entry, Kind, ReadAt, Run, Scan, Space, Spool, Times};

use crate::time::{dos_to_filetime, shift};
use crate::{Error, Result, ScanOptions};

const DENTRY: usize = 32;
/// First inode number of a directory entry (TSK's `FATFS_FIRST_NORMINO`).
const FIRST_NORMINO: u64 = 3;
/// The root folder's id (TSK's `FATFS_ROOTINO`).
pub const ROOT_ID: u64 = 2;
/// The largest up-case table read (the uncompressed table is 128 KiB).
const UPCASE_MAX: u64 = 1 << 20;
/// Warnings kept per scan; the rest are counted.
const MAX_WARNINGS: usize = 10_000;

const T_BITMAP: u8 = 0x81;
const T_UPCASE: u8 = 0x82;
const T_LABEL: u8 = 0x83;
const T_FILE: u8 = 0x85;
const T_STREAM: u8 = 0xC0;
const T_NAME: u8 = 0xC1;
const IN_USE: u8 = 0x80;
/// GeneralSecondaryFlags: the data is contiguous and the FAT holds no chain for it.
const NO_FAT_CHAIN: u8 = 0x02;

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// `boot` is an exFAT boot sector ("EXFAT   " at byte 3).
pub fn is_boot_sector(boot: &[u8]) -> bool {
    boot.get(3..11) == Some(b"EXFAT   ")
}

/// The boot region's checksum over its first 11 sectors (`sectors`), skipping VolumeFlags and PercentInUse.
fn boot_checksum(sectors: &[u8]) -> u32 {
    let mut sum = 0u32;
    for (i, &b) in sectors.iter().enumerate() {
        if i == 106 || i == 107 || i == 112 {
            continue;
        }
        sum = sum.rotate_right(1).wrapping_add(u32::from(b));
    }
    sum
}

/// The up-case table's checksum (same rotate-and-add over all its bytes).
fn table_checksum(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(0u32, |s, &b| s.rotate_right(1).wrapping_add(u32::from(b)))
}

/// An entry set's SetChecksum over all its bytes, skipping bytes 2 and 3 (the checksum itself).
fn set_checksum(set: &[u8]) -> u16 {
    let mut sum = 0u16;
    for (i, &b) in set.iter().enumerate() {
        if i == 2 || i == 3 {
            continue;
        }
        sum = sum.rotate_right(1).wrapping_add(u16::from(b));
    }
    sum
}

/// A growable bitmap of clusters, sized by the cluster count (which `open` caps by the image's length).
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: u64) -> Bits {
        Bits(vec![0; usize::try_from(n.div_ceil(64)).unwrap_or(0)])
    }
    /// Sets bit `i`; false when it was set already (or is out of range).
    fn claim(&mut self, i: u64) -> bool {
        let Some(w) = usize::try_from(i / 64).ok().and_then(|w| self.0.get_mut(w)) else {
            return false;
        };
        let m = 1u64 << (i % 64);
        let fresh = *w & m == 0;
        *w |= m;
        fresh
    }
}

/// A folder still to read: its id, runs, and whether it is deleted.
type Pending = (u64, Vec<Run>, bool);

/// A metadata file found in the root (the allocation bitmap or the up-case table).
#[derive(Debug, Clone, Copy)]
struct MetaFile {
    id: u64,
    first_cluster: u32,
    length: u64,
}

/// Warnings of one scan, capped.
#[derive(Default)]
struct Warn {
    lines: Vec<String>,
    dropped: usize,
}

impl Warn {
    fn push(&mut self, s: String) {
        if self.lines.len() < MAX_WARNINGS {
            self.lines.push(s);
        } else {
            self.dropped += 1;
        }
    }
    fn finish(mut self) -> Vec<String> {
        if self.dropped > 0 {
            self.lines
                .push(format!("… and {} more warnings", self.dropped));
        }
        self.lines
    }
}

/// An opened exFAT volume.
pub struct Volume<R: ReadAt> {
    dev: R,
    sector_shift: u32,
    cluster_shift: u32,
    volume_sectors: u64,
    fat_offset: u64,
    fat_length: u64,
    heap_offset: u64,
    cluster_count: u64,
    root_cluster: u32,
    serial: u32,
    revision: u16,
    flags: u16,
    num_fats: u8,
    percent_in_use: u8,
    boot_checksum_ok: Option<bool>,
    /// The tables read at open (boxed: the volume stays small beside FAT's in `crate::Volume`).
    t: Box<Tables>,
    bitmap_file: Option<MetaFile>,
    upcase_file: Option<MetaFile>,
    upcase_checksum_ok: Option<bool>,
}

/// What `open` reads beyond the boot sector.
struct Tables {
    /// The active FAT, one entry per cluster (index = cluster number), as far as the image holds it.
    fat: Vec<u32>,
    bitmap: Vec<u8>,
    /// The up-case table expanded to 65536 entries (identity when the volume's is missing).
    upcase: Vec<u16>,
    label: String,
    /// What `open` found wrong; repeated in every scan's warnings.
    open_warnings: Vec<String>,
}

impl<R: ReadAt> Volume<R> {
    /// Reads the boot sector, the FAT, and from the root the allocation bitmap, the up-case table and the label.
    pub fn open(dev: R) -> Result<Volume<R>> {
        let mut b = [0u8; 512];
        dev.read_exact_at(&mut b, 0)
            .map_err(|e| Error::new(format!("exFAT boot sector: {e}")))?;
        if !is_boot_sector(&b) {
            return Err(Error::new("not an exFAT boot sector"));
        }
        let sector_shift = u32::from(b[108]);
        let cluster_shift = u32::from(b[109]);
        if !(9..=12).contains(&sector_shift) {
            return Err(Error::new(format!(
                "exFAT: BytesPerSectorShift {sector_shift} outside 9..=12"
            )));
        }
        if sector_shift + cluster_shift > 25 {
            return Err(Error::new(format!(
                "exFAT: clusters of 2^{} bytes (more than 32 MiB)",
                sector_shift + cluster_shift
            )));
        }
        let volume_sectors = le64(&b, 72);
        let fat_offset = u64::from(le32(&b, 80));
        let fat_length = u64::from(le32(&b, 84));
        let heap_offset = u64::from(le32(&b, 88));
        let cluster_count = u64::from(le32(&b, 92));
        let root_cluster = le32(&b, 96);
        let num_fats = b[110];
        if num_fats != 1 && num_fats != 2 {
            return Err(Error::new(format!("exFAT: {num_fats} FATs")));
        }
        if fat_offset == 0 || fat_length == 0 {
            return Err(Error::new("exFAT: no FAT"));
        }
        if heap_offset < fat_offset + fat_length * u64::from(num_fats) {
            return Err(Error::new("exFAT: the cluster heap overlaps the FAT"));
        }
        if cluster_count == 0 || heap_offset + (cluster_count << cluster_shift) > volume_sectors {
            return Err(Error::new(format!(
                "exFAT: {cluster_count} clusters from sector {heap_offset} do not fit the volume's {volume_sectors} sectors"
            )));
        }
        if u64::from(root_cluster) < 2 || u64::from(root_cluster) >= cluster_count + 2 {
            return Err(Error::new(format!(
                "exFAT: root folder at cluster {root_cluster}, outside the heap"
            )));
        }
        let mut v = Volume {
            dev,
            sector_shift,
            cluster_shift,
            volume_sectors,
            fat_offset,
            fat_length,
            heap_offset,
            cluster_count,
            root_cluster,
            serial: le32(&b, 100),
            revision: le16(&b, 104),
            flags: le16(&b, 106),
            num_fats,
            percent_in_use: b[112],
            boot_checksum_ok: None,
            t: Box::new(Tables {
                fat: Vec::new(),
                bitmap: Vec::new(),
                upcase: (0..=u16::MAX).collect(),
                label: String::new(),
                open_warnings: Vec::new(),
            }),
            bitmap_file: None,
            upcase_file: None,
            upcase_checksum_ok: None,
        };
        v.check_boot_region();
        v.read_fat();
        v.read_root_metadata();
        Ok(v)
    }

    fn sector_size(&self) -> u64 {
        1 << self.sector_shift
    }
    fn cluster_size(&self) -> u64 {
        1 << (self.sector_shift + self.cluster_shift)
    }
    fn heap_byte(&self) -> u64 {
        self.heap_offset << self.sector_shift
    }
    /// The byte offset of cluster `c` (2 or more).
    fn cluster_byte(&self, c: u64) -> u64 {
        self.heap_byte() + ((c - 2) << (self.sector_shift + self.cluster_shift))
    }
    /// Clusters that start inside the image (all of them unless it is truncated): what the claim bitmaps
    /// cover, so that their size follows the image, not the boot sector's cluster count.
    fn clusters_held(&self) -> u64 {
        let len = self.dev.len();
        let heap = self.heap_byte();
        if len <= heap {
            return 0;
        }
        ((len - heap).div_ceil(self.cluster_size())).min(self.cluster_count)
    }
    fn held_cluster(&self, c: u64) -> bool {
        c >= 2 && c < self.clusters_held() + 2
    }
    fn valid_cluster(&self, c: u64) -> bool {
        c >= 2 && c < self.cluster_count + 2
    }
    /// The id of the directory entry at byte `off` of the volume (TSK's `FATFS_SECT_2_INODE` plus the index).
    fn id_at(&self, off: u64) -> u64 {
        (off - self.heap_byte()) / DENTRY as u64 + FIRST_NORMINO
    }
    /// TSK's `$MBR` id: the first after every directory-entry slot of the sectors the image holds.
    fn mbr_id(&self) -> u64 {
        let held = (self.dev.len() >> self.sector_shift).min(self.volume_sectors);
        let per_sector = self.sector_size() / DENTRY as u64;
        held.saturating_sub(self.heap_offset) * per_sector + FIRST_NORMINO
    }

    /// Reads what the image holds of `[off, off+len)`; short when the image ends first.
    fn read_clipped(&self, off: u64, len: u64) -> Vec<u8> {
        let end = off.saturating_add(len).min(self.dev.len());
        if end <= off {
            return Vec::new();
        }
        let mut buf = vec![0u8; usize::try_from(end - off).unwrap_or(0)];
        if self.dev.read_exact_at(&mut buf, off).is_err() {
            buf.clear();
        }
        buf
    }

    fn check_boot_region(&mut self) {
        let ss = self.sector_size();
        let region = self.read_clipped(0, 12 * ss);
        if region.len() as u64 != 12 * ss {
            self.t
                .open_warnings
                .push("boot region: the image ends before its 12 sectors".into());
            return;
        }
        let ss = ss as usize;
        let sum = boot_checksum(&region[..11 * ss]);
        let ok = region[11 * ss..]
            .chunks_exact(4)
            .all(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) == sum);
        self.boot_checksum_ok = Some(ok);
        if !ok {
            self.t.open_warnings.push(format!(
                "boot region: checksum {sum:08X} does not match sector 11"
            ));
        }
    }

    fn read_fat(&mut self) {
        // The active FAT: VolumeFlags bit 0 picks the second of two.
        let which = if self.num_fats == 2 && self.flags & 1 == 1 {
            1
        } else {
            0
        };
        let start = (self.fat_offset + which * self.fat_length) << self.sector_shift;
        let want = (self.fat_length << self.sector_shift).min((self.cluster_count + 2) * 4);
        let raw = self.read_clipped(start, want);
        if (raw.len() as u64) < want {
            self.t.open_warnings.push(format!(
                "FAT: the image holds {} of its {want} bytes",
                raw.len()
            ));
        }
        self.t.fat = raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
    }

    /// Runs of a chain from `first`: FAT-chained (stopping at the end mark, after `limit` clusters when given,
    /// at a free, bad or out-of-range entry, or at a cluster `claimed` already holds), or contiguous.
    fn runs_of(
        &self,
        first: u32,
        contiguous: bool,
        limit: Option<u64>,
        claimed: &mut Bits,
        what: &dyn Fn() -> String,
        warn: &mut Warn,
    ) -> Vec<Run> {
        let mut runs: Vec<Run> = Vec::new();
        let cs = self.cluster_size();
        let push = |runs: &mut Vec<Run>, c: u64| {
            let off = self.cluster_byte(c);
            match runs.last_mut() {
                Some(r) if r.offset + r.len == off => r.len += cs,
                _ => runs.push(Run {
                    offset: off,
                    len: cs,
                }),
            }
        };
        let mut c = u64::from(first);
        if limit == Some(0) {
            return runs;
        }
        if !self.valid_cluster(c) {
            warn.push(format!("{}: first cluster {c} outside the heap", what()));
            return runs;
        }
        if contiguous {
            let n = limit.unwrap_or(1);
            let last = c + n - 1;
            let n = if last >= self.cluster_count + 2 {
                warn.push(format!(
                    "{}: {n} contiguous clusters from {c} run past the heap's end",
                    what()
                ));
                self.cluster_count + 2 - c
            } else {
                n
            };
            for k in c..c + n {
                if !self.held_cluster(k) {
                    warn.push(format!("{}: cluster {k} lies past the image's end", what()));
                    break;
                }
                if !claimed.claim(k) {
                    warn.push(format!(
                        "{}: cluster {k} already belongs to another file (cross-linked)",
                        what()
                    ));
                    break;
                }
                push(&mut runs, k);
            }
            return runs;
        }
        let mut count = 0u64;
        loop {
            if !self.held_cluster(c) {
                warn.push(format!("{}: cluster {c} lies past the image's end", what()));
                break;
            }
            if !claimed.claim(c) {
                warn.push(format!(
                    "{}: cluster {c} already belongs to this or another chain (a loop or a cross-link)",
                    what()
                ));
                break;
            }
            push(&mut runs, c);
            count += 1;
            if limit.is_some_and(|l| count >= l) {
                break;
            }
            let Some(&next) = usize::try_from(c).ok().and_then(|i| self.t.fat.get(i)) else {
                warn.push(format!(
                    "{}: FAT entry of cluster {c} past the FAT's end",
                    what()
                ));
                break;
            };
            if next >= 0xFFFF_FFF8 {
                if let Some(l) = limit {
                    warn.push(format!(
                        "{}: chain ends after {count} of {l} clusters",
                        what()
                    ));
                }
                break;
            }
            if next == 0xFFFF_FFF7 {
                warn.push(format!("{}: chain reaches a bad cluster after {c}", what()));
                break;
            }
            if !self.valid_cluster(u64::from(next)) {
                warn.push(format!(
                    "{}: chain goes from {c} to {next}, outside the heap",
                    what()
                ));
                break;
            }
            c = u64::from(next);
        }
        runs
    }

    /// Reads runs into one buffer, one read a run, stopping where the image ends.
    fn read_runs(
        &self,
        runs: &[Run],
        cap: u64,
        what: &dyn Fn() -> String,
        warn: &mut Warn,
    ) -> Vec<u8> {
        let total: u64 = runs.iter().map(|r| r.len).sum::<u64>().min(cap);
        let mut buf = Vec::with_capacity(usize::try_from(total.min(self.dev.len())).unwrap_or(0));
        for r in runs {
            let want = r.len.min(cap - buf.len() as u64);
            if want == 0 {
                break;
            }
            let got = self.read_clipped(r.offset, want);
            let short = (got.len() as u64) < want;
            buf.extend_from_slice(&got);
            if short {
                warn.push(format!(
                    "{}: the image ends inside its data (at byte {})",
                    what(),
                    r.offset + got.len() as u64
                ));
                break;
            }
        }
        buf
    }

    /// The root folder's runs (always FAT-chained).
    fn root_runs(&self, claimed: &mut Bits, warn: &mut Warn) -> Vec<Run> {
        self.runs_of(
            self.root_cluster,
            false,
            None,
            claimed,
            &|| "root folder".to_string(),
            warn,
        )
    }

    fn read_root_metadata(&mut self) {
        let mut warn = Warn::default();
        let mut claimed = Bits::new(self.clusters_held() + 2);
        let runs = self.root_runs(&mut claimed, &mut warn);
        let data = self.read_runs(&runs, u64::MAX, &|| "root folder".to_string(), &mut warn);
        let active = u8::from(self.num_fats == 2 && self.flags & 1 == 1);
        let mut pos = 0usize;
        for r in &runs {
            let n = usize::try_from(r.len)
                .unwrap_or(0)
                .min(data.len().saturating_sub(pos));
            for k in (0..n / DENTRY).map(|k| pos + k * DENTRY) {
                let e = &data[k..k + DENTRY];
                let id = self.id_at(r.offset + (k - pos) as u64);
                match e[0] {
                    T_BITMAP if self.bitmap_file.is_none() && e[1] & 1 == active => {
                        self.bitmap_file = Some(MetaFile {
                            id,
                            first_cluster: le32(e, 20),
                            length: le64(e, 24),
                        })
                    }
                    T_UPCASE if self.upcase_file.is_none() => {
                        self.upcase_file = Some(MetaFile {
                            id,
                            first_cluster: le32(e, 20),
                            length: le64(e, 24),
                        });
                        let want = le32(e, 4);
                        self.load_upcase(want, &mut warn);
                    }
                    T_LABEL if self.t.label.is_empty() => {
                        let n = usize::from(e[1]).min(11);
                        let units: Vec<u16> = (0..n).map(|i| le16(e, 2 + 2 * i)).collect();
                        self.t.label = String::from_utf16_lossy(&units);
                    }
                    _ => {}
                }
            }
            pos += n;
        }
        match self.bitmap_file {
            Some(f) => self.load_bitmap(f, &mut warn),
            None => warn.push("no allocation bitmap entry in the root folder".into()),
        }
        if self.upcase_file.is_none() {
            warn.push(
                "no up-case table entry in the root folder: name hashes use ASCII up-casing".into(),
            );
            for c in b'a'..=b'z' {
                self.t.upcase[usize::from(c)] = u16::from(c - 32);
            }
        }
        self.t.open_warnings.extend(warn.finish());
    }

    fn meta_runs(&self, f: MetaFile, what: &str, warn: &mut Warn) -> Vec<Run> {
        let need = f.length.div_ceil(self.cluster_size());
        // The bitmap and up-case table are FAT-chained on every volume mkfs and Windows write; a FAT entry of 0
        // for the first cluster means a writer left the chain out: read them contiguously then.
        let chained = usize::try_from(f.first_cluster)
            .ok()
            .and_then(|i| self.t.fat.get(i))
            .is_some_and(|&n| n != 0);
        let mut claimed = Bits::new(self.clusters_held() + 2);
        self.runs_of(
            f.first_cluster,
            !chained,
            Some(need),
            &mut claimed,
            &|| what.to_string(),
            warn,
        )
    }

    fn load_bitmap(&mut self, f: MetaFile, warn: &mut Warn) {
        let runs = self.meta_runs(f, "allocation bitmap", warn);
        let need = self.cluster_count.div_ceil(8);
        if f.length < need {
            warn.push(format!(
                "allocation bitmap: {} bytes for {} clusters",
                f.length, self.cluster_count
            ));
        }
        self.t.bitmap = self.read_runs(
            &runs,
            need.min(f.length),
            &|| "allocation bitmap".into(),
            warn,
        );
    }

    fn load_upcase(&mut self, want: u32, warn: &mut Warn) {
        let Some(f) = self.upcase_file else { return };
        if f.length > UPCASE_MAX || f.length % 2 == 1 {
            warn.push(format!("up-case table: length {} not plausible", f.length));
            self.upcase_checksum_ok = Some(false);
            return;
        }
        let runs = self.meta_runs(f, "up-case table", warn);
        let raw = self.read_runs(&runs, f.length, &|| "up-case table".into(), warn);
        let ok = raw.len() as u64 == f.length && table_checksum(&raw) == want;
        self.upcase_checksum_ok = Some(ok);
        if !ok {
            warn.push(format!(
                "up-case table: checksum {:08X} does not match {want:08X}",
                table_checksum(&raw)
            ));
        }
        // Compressed form: 0xFFFF followed by a count leaves that many characters as they are.
        let mut at = 0usize;
        let mut it = raw
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]));
        while let Some(u) = it.next() {
            if at > 0xFFFF {
                break;
            }
            if u == 0xFFFF {
                if let Some(n) = it.next() {
                    at += usize::from(n);
                    continue;
                }
            }
            self.t.upcase[at] = u;
            at += 1;
        }
    }

    /// The clusters the allocation bitmap marks in use.
    fn clusters_in_use(&self) -> u64 {
        let n = usize::try_from(self.cluster_count).unwrap_or(usize::MAX);
        let full = n / 8;
        let mut used: u64 = self
            .t
            .bitmap
            .iter()
            .take(full)
            .map(|b| u64::from(b.count_ones()))
            .sum();
        if n % 8 != 0 {
            if let Some(&b) = self.t.bitmap.get(full) {
                used += u64::from((b & ((1u8 << (n % 8)) - 1)).count_ones());
            }
        }
        used
    }

    /// Every entry: the root, the metadata files, and every entry set of every folder reached from the root.
    pub fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        let (spool, warnings) = self.scan_spooled(opts)?;
        Ok(Scan {
            root: ROOT_ID,
            entries: spool.into_entries(),
            warnings,
            space: self.space_now(),
        })
    }

    /// Every entry, packed as the walk makes them (out of id order), and the warnings.
    pub fn scan_spooled(&self, opts: &ScanOptions) -> Result<(Spool, Vec<String>)> {
        let mut warn = Warn::default();
        for w in &self.t.open_warnings {
            warn.push(w.clone());
        }
        let mut claimed = Bits::new(self.clusters_held() + 2);
        let mut entries = Spool::new();

        let root_runs = self.root_runs(&mut claimed, &mut warn);
        let root_len: u64 = root_runs.iter().map(|r| r.len).sum();
        entries.push(Entry {
            id: ROOT_ID,
            parent: ROOT_ID,
            kind: Kind::Folder,
            size: root_len,
            allocated: root_len,
            attributes: attr::DIRECTORY,
            runs: root_runs.clone(),
            ..Entry::default()
        });
        // Held apart: TSK's numbers for the virtual files may move (below).
        let mut metadata = Vec::new();
        self.push_metadata(&mut metadata, &mut claimed, &mut warn);

        // Folders to read: (id, runs, deleted). Deleted folders' clusters are marked in `seen` so that none is
        // read twice (they are not in `claimed`: they are free, and may hold anything since).
        let mut seen = Bits::new(if opts.deleted {
            self.clusters_held() + 2
        } else {
            0
        });
        let mut stack: Vec<Pending> = vec![(ROOT_ID, root_runs, false)];
        while let Some((dir_id, runs, in_deleted)) = stack.pop() {
            let what = || format!("folder {dir_id}");
            let data = self.read_runs(&runs, u64::MAX, &what, &mut warn);
            self.parse_dir(
                dir_id,
                in_deleted,
                &runs,
                &data,
                opts,
                &mut claimed,
                &mut seen,
                &mut entries,
                &mut stack,
                &mut warn,
            );
        }
        // On an image cut short, TSK's numbers for its virtual files may fall among the entries read: then they
        // follow the last.
        let is_virtual =
            |e: &Entry| e.metadata && matches!(e.name.as_str(), "$MBR" | "$FAT1" | "$FAT2");
        let after = metadata
            .iter()
            .filter(|e| !is_virtual(e))
            .map(|e| e.id)
            .chain(entries.max_id())
            .max()
            .map_or(0, |id| id + 1);
        let first_virtual = metadata
            .iter()
            .filter(|e| is_virtual(e))
            .map(|e| e.id)
            .min();
        if let Some(first) = first_virtual.filter(|&f| f < after) {
            for e in metadata.iter_mut().filter(|e| is_virtual(e)) {
                e.id += after - first;
            }
        }
        for e in metadata {
            entries.push(e);
        }
        Ok((entries, warn.finish()))
    }

    fn push_metadata(&self, entries: &mut Vec<Entry>, claimed: &mut Bits, warn: &mut Warn) {
        let cs = self.cluster_size();
        for (f, name) in [
            (self.bitmap_file, "$ALLOC_BITMAP"),
            (self.upcase_file, "$UPCASE_TABLE"),
        ] {
            let Some(f) = f else { continue };
            // Chained or contiguous as at open (its warnings were given then); claimed in the scan's own set.
            let runs = self.meta_runs(f, name, &mut Warn::default());
            for r in &runs {
                let c0 = (r.offset - self.heap_byte()) / cs + 2;
                for c in c0..c0 + r.len / cs {
                    if !claimed.claim(c) {
                        warn.push(format!("{name}: cluster {c} also belongs to another file"));
                    }
                }
            }
            entries.push(Entry {
                id: f.id,
                parent: ROOT_ID,
                name: name.to_string(),
                size: f.length,
                allocated: runs.iter().map(|r| r.len).sum(),
                attributes: attr::SYSTEM | attr::HIDDEN,
                metadata: true,
                from_index_slack: false,
                runs,
                ..Entry::default()
            });
        }
        let ss = self.sector_size();
        let mbr = self.mbr_id();
        let fat_byte = self.fat_offset * ss;
        entries.push(Entry {
            id: mbr,
            parent: ROOT_ID,
            name: "$MBR".into(),
            // TSK's size (one sector); allocated is all before the FAT: both boot regions and the alignment.
            size: 512.min(fat_byte),
            allocated: fat_byte,
            attributes: attr::SYSTEM | attr::HIDDEN,
            metadata: true,
            from_index_slack: false,
            runs: vec![Run {
                offset: 0,
                len: fat_byte,
            }],
            ..Entry::default()
        });
        let fat_bytes = self.fat_length * ss;
        let heap_byte = self.heap_byte();
        for k in 0..u64::from(self.num_fats) {
            let start = fat_byte + k * fat_bytes;
            // The last FAT holds the alignment space up to the heap too, so the regions add up.
            let end = if k + 1 == u64::from(self.num_fats) {
                heap_byte
            } else {
                start + fat_bytes
            };
            entries.push(Entry {
                id: mbr + 1 + k,
                parent: ROOT_ID,
                name: format!("$FAT{}", k + 1),
                size: fat_bytes,
                allocated: end - start,
                attributes: attr::SYSTEM | attr::HIDDEN,
                metadata: true,
                from_index_slack: false,
                runs: vec![Run {
                    offset: start,
                    len: end - start,
                }],
                ..Entry::default()
            });
        }
    }

    /// The entry sets of one folder's bytes. In a deleted folder (read only with `opts.deleted`) only deleted
    /// sets count: the driver deletes a folder's entries before the folder, and an entry in use there means the
    /// cluster was reused since.
    #[allow(clippy::too_many_arguments)]
    fn parse_dir(
        &self,
        dir_id: u64,
        in_deleted: bool,
        runs: &[Run],
        data: &[u8],
        opts: &ScanOptions,
        claimed: &mut Bits,
        seen: &mut Bits,
        entries: &mut Spool,
        stack: &mut Vec<Pending>,
        warn: &mut Warn,
    ) {
        // Volume byte offset of each buffer position: runs are cluster multiples, entries never straddle a
        // cluster, so an entry's offset comes from the run holding its first byte.
        let mut starts: Vec<(usize, u64)> = Vec::with_capacity(runs.len());
        let mut pos = 0usize;
        for r in runs {
            starts.push((pos, r.offset));
            pos = pos.saturating_add(usize::try_from(r.len).unwrap_or(usize::MAX));
        }
        let off_of = |i: usize| -> u64 {
            let k = starts.partition_point(|&(p, _)| p <= i) - 1;
            starts[k].1 + (i - starts[k].0) as u64
        };
        let n = data.len() / DENTRY;
        let ent = |i: usize| &data[i * DENTRY..(i + 1) * DENTRY];
        let mut i = 0usize;
        while i < n {
            let e = ent(i);
            let t = e[0];
            if t == 0 {
                break; // end of directory: every later entry is unused
            }
            let deleted = t & IN_USE == 0;
            if t & 0x7F != T_FILE & 0x7F || (deleted && !opts.deleted) || (in_deleted && !deleted) {
                if (t == T_STREAM || t == T_NAME) && !in_deleted {
                    warn.push(format!(
                        "folder {dir_id}: a {} entry outside an entry set at id {}",
                        if t == T_STREAM {
                            "stream extension"
                        } else {
                            "file name"
                        },
                        self.id_at(off_of(i * DENTRY))
                    ));
                }
                i += 1;
                continue;
            }
            let id = self.id_at(off_of(i * DENTRY));
            let sc = usize::from(e[1]);
            let stream_t = T_STREAM & !if deleted { IN_USE } else { 0 };
            let name_t = T_NAME & !if deleted { IN_USE } else { 0 };
            if sc < 1 || i + sc >= n {
                if !deleted {
                    warn.push(format!(
                        "folder {dir_id}: entry set {id} claims {sc} secondary entries, past the folder's end or none"
                    ));
                }
                if sc < 1 || i + 1 >= n || ent(i + 1)[0] != stream_t {
                    i += 1;
                    continue;
                }
            }
            let s = ent(i + 1);
            if s[0] != stream_t {
                if !deleted {
                    warn.push(format!(
                        "folder {dir_id}: entry set {id} has no stream extension"
                    ));
                }
                i += 1;
                continue;
            }
            // The secondaries actually there (a deleted set may have been partly overwritten).
            let avail = sc.min(n - i - 1);
            // Secondaries of the same state follow (names, then perhaps vendor extensions).
            let mut have = 1;
            while have < avail && ent(i + 1 + have)[0] & 0xC0 == stream_t & 0xC0 {
                have += 1;
            }
            if !deleted {
                if have == sc {
                    let set = &data[i * DENTRY..(i + 1 + sc) * DENTRY];
                    let want = le16(e, 2);
                    let got = set_checksum(set);
                    if got != want {
                        warn.push(format!(
                            "folder {dir_id}: entry set {id}: checksum {got:04X}, recorded {want:04X}"
                        ));
                    }
                } else if sc <= avail {
                    warn.push(format!(
                        "folder {dir_id}: entry set {id}: only {} of {sc} secondary entries follow",
                        have
                    ));
                }
            }
            let name_len = usize::from(s[3]);
            let mut units = [0u16; 255];
            let mut got = 0usize;
            'names: for k in 2..=have {
                let ne = ent(i + k);
                if ne[0] != name_t {
                    continue;
                }
                for c in 0..15 {
                    if got >= name_len {
                        break 'names;
                    }
                    units[got] = le16(ne, 2 + 2 * c);
                    got += 1;
                }
            }
            let units = &units[..got];
            if !deleted {
                if got < name_len {
                    warn.push(format!(
                        "folder {dir_id}: entry set {id}: name has {got} of its {name_len} characters"
                    ));
                }
                let hash = self.name_hash(units);
                if hash != le16(s, 4) {
                    warn.push(format!(
                        "folder {dir_id}: entry set {id}: name hash {hash:04X}, recorded {:04X}",
                        le16(s, 4)
                    ));
                }
            }
            let name = String::from_utf16_lossy(units);
            let attributes = u32::from(le16(e, 4));
            let is_dir = attributes & attr::DIRECTORY != 0;
            let flags = s[1];
            let first = le32(s, 20);
            let size = le64(s, 24);
            let contiguous = flags & NO_FAT_CHAIN != 0;
            let cs = self.cluster_size();
            let what = || format!("{name} ({id})");
            let (runs, allocated) = if deleted {
                // A deleted set's chain is gone from the FAT (freed): like TSK, take the clusters from the first
                // one on, contiguously, as many as the size needs, when they lie inside the heap. (TSK also skips
                // clusters the bitmap marks in use since; we do not.)
                let need = size.div_ceil(cs);
                let c = u64::from(first);
                let runs = if first != 0 && self.valid_cluster(c) && need > 0 {
                    let end = (c + need).min(self.cluster_count + 2);
                    vec![Run {
                        offset: self.cluster_byte(c),
                        len: (end - c) * cs,
                    }]
                } else {
                    Vec::new()
                };
                (runs, 0)
            } else if first == 0 {
                if size != 0 {
                    warn.push(format!("{}: {size} bytes but no first cluster", what()));
                }
                (Vec::new(), 0)
            } else {
                // Folders on a FAT chain run to the chain's end (their DataLength may lag); files take what
                // their size needs.
                let limit = if is_dir && !contiguous {
                    None
                } else {
                    Some(size.div_ceil(cs).max(u64::from(is_dir)))
                };
                let runs = self.runs_of(first, contiguous, limit, claimed, &what, warn);
                let alloc = runs.iter().map(|r| r.len).sum();
                (runs, alloc)
            };
            let ts = |at: usize, ms: Option<usize>, utc: usize| -> (u64, Option<bool>) {
                let stamp = le32(e, at);
                let centis = ms.map_or(0, |m| e[m]);
                let ft = dos_to_filetime((stamp >> 16) as u16, stamp as u16, centis);
                let off = e[utc];
                if off & 0x80 != 0 {
                    // Low 7 bits: signed 15-minute steps east of UTC.
                    let steps = i64::from(((off & 0x7F) << 1) as i8 >> 1);
                    (shift(ft, -steps * 15 * 60), Some(true))
                } else {
                    (ft, if ft == 0 { None } else { Some(false) })
                }
            };
            let (created, c_utc) = ts(8, Some(20), 22);
            let (modified, m_utc) = ts(12, Some(21), 23);
            let (accessed, a_utc) = ts(16, None, 24);
            let local_times = [c_utc, m_utc, a_utc].contains(&Some(false));
            if is_dir && !deleted && !runs.is_empty() {
                stack.push((id, runs.clone(), false));
            } else if is_dir && deleted && !runs.is_empty() {
                // TSK lists a deleted folder's deleted entries under it: read it once, from its guessed run.
                let c0 = (runs[0].offset - self.heap_byte()) / cs + 2;
                let n = runs[0].len / cs;
                if (c0..c0 + n).all(|c| seen.claim(c)) {
                    stack.push((id, runs.clone(), true));
                }
            }
            entries.push(Entry {
                id,
                parent: dir_id,
                name,
                short_name: None,
                kind: if is_dir { Kind::Folder } else { Kind::File },
                size,
                allocated,
                times: Times {
                    created,
                    modified,
                    changed: 0,
                    accessed,
                },
                local_times,
                attributes,
                deleted,
                metadata: false,
                from_index_slack: false,
                runs,
                inline: None,
                posix: None,
                link_target: None,
                packed: Vec::new(),
                forks: Vec::new(),
                exclusive: None,
            });
            i += 1 + have;
        }
    }

    /// NameHash over the up-cased name, two bytes a character.
    fn name_hash(&self, units: &[u16]) -> u16 {
        let mut h = 0u16;
        for &u in units {
            let up = self.t.upcase[usize::from(u)];
            for b in up.to_le_bytes() {
                h = h.rotate_right(1).wrapping_add(u16::from(b));
            }
        }
        h
    }

    fn space_now(&self) -> Space {
        let cs = self.cluster_size();
        let used = self.clusters_in_use();
        Space {
            cluster_size: cs,
            clusters_total: self.cluster_count,
            clusters_in_use: used,
            bytes_in_use: used * cs + self.heap_byte(),
            bytes_total: self.volume_sectors << self.sector_shift,
        }
    }

    /// What `uffs info` shows.
    pub fn facts(&self) -> Vec<(String, String)> {
        let mut f: Vec<(String, String)> = Vec::new();
        let mut add = |k: &str, v: String| f.push((k.to_string(), v));
        let sp = self.space_now();
        add("file system", "exFAT".into());
        add(
            "revision",
            format!("{}.{:02}", self.revision >> 8, self.revision & 0xFF),
        );
        add("bytes per sector", self.sector_size().to_string());
        add("cluster size", sp.cluster_size.to_string());
        add(
            "volume length",
            format!("{} sectors ({} bytes)", self.volume_sectors, sp.bytes_total),
        );
        add(
            "FAT",
            format!(
                "{} × {} sectors at sector {}",
                self.num_fats, self.fat_length, self.fat_offset
            ),
        );
        add(
            "cluster heap offset",
            format!("sector {}", self.heap_offset),
        );
        add("cluster count", self.cluster_count.to_string());
        add("root folder cluster", self.root_cluster.to_string());
        if self.t.bitmap.is_empty() {
            add("allocation bitmap", "missing".into());
        } else {
            let free = self.cluster_count - sp.clusters_in_use.min(self.cluster_count);
            add(
                "clusters used",
                format!(
                    "{} ({} bytes)",
                    sp.clusters_in_use,
                    sp.clusters_in_use * sp.cluster_size
                ),
            );
            add(
                "clusters free",
                format!("{free} ({} bytes)", free * sp.cluster_size),
            );
        }
        if self.percent_in_use != 0xFF {
            add(
                "percent in use (boot sector)",
                format!("{}%", self.percent_in_use),
            );
        }
        add(
            "times",
            "created and modified (to 10 ms), accessed (to 2 s), each in UTC where its entry keeps the offset, \
             else local time; changed unknown: exFAT keeps none"
                .into(),
        );
        add("label", self.t.label.clone());
        add(
            "serial",
            format!("{:04X}-{:04X}", self.serial >> 16, self.serial & 0xFFFF),
        );
        let mut fl = Vec::new();
        if self.num_fats == 2 {
            fl.push(if self.flags & 1 == 1 {
                "second FAT active"
            } else {
                "first FAT active"
            });
        }
        fl.push(if self.flags & 2 != 0 {
            "dirty"
        } else {
            "clean"
        });
        if self.flags & 4 != 0 {
            fl.push("media failure");
        }
        add("volume flags", fl.join(", "));
        add(
            "boot region checksum",
            match self.boot_checksum_ok {
                Some(true) => "OK",
                Some(false) => "mismatch",
                None => "not read",
            }
            .into(),
        );
        add(
            "up-case table checksum",
            match self.upcase_checksum_ok {
                Some(true) => "OK",
                Some(false) => "mismatch",
                None => "no table",
            }
            .into(),
        );
        f
    }

    /// The volume serial number from the boot sector.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// The space the allocation bitmap tells.
    pub fn space(&self) -> Result<Space> {
        if self.t.bitmap.is_empty() {
            return Err(Error::new("exFAT: no allocation bitmap"));
        }
        Ok(self.space_now())
    }
}
