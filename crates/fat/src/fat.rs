//! FAT12, FAT16 and FAT32 read from their own tables: the BIOS parameter block, the FAT (read whole, once), and
//! every folder along its cluster chain (read whole, contiguous clusters merged into one read).
//!
//! Ids are The Sleuth Kit's inode numbers: the root is 2; an entry is numbered from the position of its short
//! (8.3) directory entry, `(sector - first sector after the FATs) * entries per sector + slot + 3`, so FAT12/16's
//! fixed root region starts at 3; TSK's virtual files `$MBR`, `$FAT1` and `$FAT2` come after the last sector's
//! entries (`$OrphanFiles`, TSK's virtual folder of orphans, is not produced: uffs keeps orphans itself).
//!
//! Damage past [`Volume::open`] is a warning, never an error: every chain is walked with one owner mark per
//! cluster, so a chain that loops, crosses another or runs past the end stops there and is reported, a folder that
//! holds itself or an ancestor is not entered twice, and nothing is allocated beyond what the image holds.

mod names;

use uffs_fs::{attr, Entry, Kind, ReadAt, Run, Scan, Space, Spool, Times};

use crate::time::dos_to_filetime;
use crate::{Error, Flavor, Result, ScanOptions};

const DENTRY: usize = 32;
const ROOT_ID: u64 = 2;
const FIRST_NORMAL_ID: u64 = 3;
/// Reads of the second FAT copy are compared in pieces of this size.
const COMPARE_CHUNK: usize = 1 << 20;
/// A deleted file whose recovery would take more runs than this is given none.
const MAX_RECOVERY_RUNS: usize = 4096;

/// The BIOS parameter block's geometry, checked.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    flavor: Flavor,
    bytes_per_sector: u64,
    sectors_per_cluster: u64,
    cluster_size: u64,
    reserved_sectors: u64,
    fat_count: u64,
    fat_sectors: u64,
    root_entries: u64,
    total_sectors: u64,
    /// First sector after the FATs (FAT12/16's root region; TSK's reference for inode numbers).
    first_data_sector: u64,
    /// First sector of cluster 2.
    first_cluster_sector: u64,
    /// Clusters in the cluster heap (numbered 2 ..= cluster_count + 1).
    cluster_count: u64,
    root_cluster: u32,
    /// Which FAT copy is in use (FAT32 may turn mirroring off and name one).
    active_fat: u64,
    mirroring: bool,
    fsinfo_sector: u64,
}

impl Geometry {
    fn parse(boot: &[u8]) -> Option<Geometry> {
        if boot.len() < 512 || boot[510] != 0x55 || boot[511] != 0xAA {
            return None;
        }
        if &boot[3..11] == b"NTFS    " || &boot[3..11] == b"EXFAT   " {
            return None;
        }
        let u16_at = |o: usize| u64::from(u16::from_le_bytes([boot[o], boot[o + 1]]));
        let u32_at = |o: usize| {
            u64::from(u32::from_le_bytes([
                boot[o],
                boot[o + 1],
                boot[o + 2],
                boot[o + 3],
            ]))
        };
        let bytes_per_sector = u16_at(11);
        if !(512..=4096).contains(&bytes_per_sector) || !bytes_per_sector.is_power_of_two() {
            return None;
        }
        let sectors_per_cluster = u64::from(boot[13]);
        if sectors_per_cluster == 0 || !sectors_per_cluster.is_power_of_two() {
            return None;
        }
        let reserved_sectors = u16_at(14);
        let fat_count = u64::from(boot[16]);
        if reserved_sectors == 0 || fat_count == 0 {
            return None;
        }
        let root_entries = u16_at(17);
        let total_sectors = match u16_at(19) {
            0 => u32_at(32),
            n => n,
        };
        let fat_sectors = match u16_at(22) {
            0 => u32_at(36),
            n => n,
        };
        if total_sectors == 0 || fat_sectors == 0 {
            return None;
        }
        let first_data_sector = reserved_sectors + fat_count * fat_sectors;
        let root_sectors = (root_entries * 32).div_ceil(bytes_per_sector);
        let first_cluster_sector = first_data_sector + root_sectors;
        if first_cluster_sector >= total_sectors {
            return None;
        }
        let cluster_count = (total_sectors - first_cluster_sector) / sectors_per_cluster;
        if cluster_count == 0 {
            return None;
        }
        // fatgen103: the type is the cluster count's and nothing else's.
        let flavor = if cluster_count < 4085 {
            Flavor::Fat12
        } else if cluster_count < 65525 {
            Flavor::Fat16
        } else {
            Flavor::Fat32
        };
        // FAT12/16 keep a root region, FAT32 none (TSK refuses either mismatch too).
        if (flavor == Flavor::Fat32) != (root_entries == 0) {
            return None;
        }
        let (root_cluster, active_fat, mirroring, fsinfo_sector) = if flavor == Flavor::Fat32 {
            let ext_flags = u16_at(40);
            let mirroring = ext_flags & 0x80 == 0;
            let active = if mirroring { 0 } else { ext_flags & 0xF };
            (u32_at(44) as u32, active, mirroring, u16_at(48))
        } else {
            (0, 0, true, 0)
        };
        Some(Geometry {
            flavor,
            bytes_per_sector,
            sectors_per_cluster,
            cluster_size: bytes_per_sector * sectors_per_cluster,
            reserved_sectors,
            fat_count,
            fat_sectors,
            root_entries,
            total_sectors,
            first_data_sector,
            first_cluster_sector,
            cluster_count,
            root_cluster,
            active_fat: if active_fat < fat_count {
                active_fat
            } else {
                0
            },
            mirroring,
            fsinfo_sector,
        })
    }

    fn last_cluster(&self) -> u64 {
        self.cluster_count + 1
    }

    /// Byte offset of a cluster (2 ..= last) on the volume.
    fn cluster_offset(&self, cluster: u64) -> u64 {
        (self.first_cluster_sector + (cluster - 2) * self.sectors_per_cluster)
            * self.bytes_per_sector
    }

    fn entries_per_sector(&self) -> u64 {
        self.bytes_per_sector / DENTRY as u64
    }

    /// TSK's inode number of the directory entry at byte `offset` of the volume.
    fn inode_at(&self, offset: u64) -> u64 {
        let sector = offset / self.bytes_per_sector;
        let slot = (offset % self.bytes_per_sector) / DENTRY as u64;
        sector.saturating_sub(self.first_data_sector) * self.entries_per_sector()
            + slot
            + FIRST_NORMAL_ID
    }

    fn root_region(&self) -> Run {
        Run {
            offset: self.first_data_sector * self.bytes_per_sector,
            len: (self.first_cluster_sector - self.first_data_sector) * self.bytes_per_sector,
        }
    }

    fn eoc(&self) -> u32 {
        match self.flavor {
            Flavor::Fat12 => 0xFF8,
            Flavor::Fat16 => 0xFFF8,
            _ => 0x0FFF_FFF8,
        }
    }

    fn bad(&self) -> u32 {
        self.eoc() - 1
    }
}

/// FAT12, FAT16 or FAT32, when `boot` is such a boot sector.
pub fn probe(boot: &[u8]) -> Option<Flavor> {
    Geometry::parse(boot).map(|g| g.flavor)
}

/// The volume's length in bytes as a FAT12/16/32 boot sector gives it.
pub fn volume_len(boot: &[u8]) -> Option<u64> {
    Geometry::parse(boot).map(|g| g.total_sectors * g.bytes_per_sector)
}

/// An opened FAT12/16/32 volume: its geometry and its FAT, read once.
pub struct Volume<R: ReadAt> {
    dev: R,
    /// Boxed: keeps [`crate::Volume`]'s variants of like size.
    g: Box<Geometry>,
    /// The FAT in use, as far as the image holds it.
    fat: Vec<u8>,
    /// Clusters the FAT read can say something about (the highest cluster number + 1).
    fat_limit: u64,
    oem: String,
    boot_label: Option<String>,
    /// The volume-label entry of the root folder.
    root_label: Option<String>,
    serial: u32,
    /// Whether the other copies of the FAT equal the one in use (`None`: only one, or unreadable).
    copies_equal: Option<bool>,
    fsinfo_free: Option<u32>,
    clusters_in_use: u64,
    open_warnings: Vec<String>,
}

impl<R: ReadAt> Volume<R> {
    pub fn open(dev: R) -> Result<Volume<R>> {
        let mut boot = [0u8; 512];
        dev.read_exact_at(&mut boot, 0)
            .map_err(|e| Error::new(format!("boot sector: {e}")))?;
        let g =
            Geometry::parse(&boot).ok_or_else(|| Error::new("not a FAT12/16/32 boot sector"))?;
        let mut warnings = Vec::new();
        let dev_len = dev.len();
        let claimed = g.total_sectors * g.bytes_per_sector;
        if dev_len < claimed {
            warnings.push(format!(
                "{}{dev_len} of the {claimed} bytes the boot sector gives; data past its end is missing",
                crate::SHORT_IMAGE
            ));
        }

        let fat_bytes = g.fat_sectors * g.bytes_per_sector;
        let fat_offset = (g.reserved_sectors + g.active_fat * g.fat_sectors) * g.bytes_per_sector;
        if fat_offset >= dev_len {
            return Err(Error::new(format!(
                "the FAT (at byte {fat_offset}) is past the end of the image ({dev_len} bytes)"
            )));
        }
        // What the FAT can address: no more than the clusters of the heap.
        let needed = match g.flavor {
            Flavor::Fat12 => (g.last_cluster() + 1) * 3 / 2 + 1,
            Flavor::Fat16 => (g.last_cluster() + 1) * 2,
            _ => (g.last_cluster() + 1) * 4,
        };
        let want = fat_bytes.min(needed);
        let readable = want.min(dev_len - fat_offset);
        if readable < want {
            warnings.push(format!(
                "the image ends inside the FAT: {readable} of its {want} bytes read"
            ));
        }
        let mut fat = vec![0u8; readable as usize];
        dev.read_exact_at(&mut fat, fat_offset)
            .map_err(|e| Error::new(format!("FAT: {e}")))?;
        let capacity = match g.flavor {
            Flavor::Fat12 => (fat.len() as u64 * 2).saturating_sub(1) / 3,
            Flavor::Fat16 => fat.len() as u64 / 2,
            _ => fat.len() as u64 / 4,
        };
        let fat_limit = capacity.min(g.last_cluster() + 1);
        if fat_limit < g.last_cluster() + 1 && readable == want {
            warnings.push(format!(
                "the FAT ({fat_bytes} bytes) is too small for the {} clusters the boot sector gives",
                g.cluster_count
            ));
        }

        // The other copies, compared piece by piece.
        let mut copies_equal = None;
        if g.fat_count > 1 {
            let mut equal = true;
            let mut complete = true;
            let mut chunk = vec![0u8; COMPARE_CHUNK.min(fat.len())];
            'copies: for copy in 0..g.fat_count {
                if copy == g.active_fat {
                    continue;
                }
                let base = (g.reserved_sectors + copy * g.fat_sectors) * g.bytes_per_sector;
                let mut done = 0usize;
                while done < fat.len() {
                    let n = chunk.len().min(fat.len() - done);
                    if dev
                        .read_exact_at(&mut chunk[..n], base + done as u64)
                        .is_err()
                    {
                        complete = false;
                        break 'copies;
                    }
                    if chunk[..n] != fat[done..done + n] {
                        equal = false;
                        break 'copies;
                    }
                    done += n;
                }
            }
            if !equal || complete {
                copies_equal = Some(equal);
            }
        }

        let (serial_at, label_at) = if g.flavor == Flavor::Fat32 {
            (67, 71)
        } else {
            (39, 43)
        };
        let has_ext = boot[serial_at - 1] == 0x29 || boot[serial_at - 1] == 0x28;
        let serial = if has_ext {
            u32::from_le_bytes([
                boot[serial_at],
                boot[serial_at + 1],
                boot[serial_at + 2],
                boot[serial_at + 3],
            ])
        } else {
            0
        };
        let boot_label = if boot[serial_at - 1] == 0x29 {
            let l = names::cp437(&boot[label_at..label_at + 11]);
            let l = l.trim_end().to_string();
            (!l.is_empty() && l != "NO NAME").then_some(l)
        } else {
            None
        };
        let oem = names::cp437(&boot[3..11]).trim_end().to_string();

        let mut fsinfo_free = None;
        if g.flavor == Flavor::Fat32 && g.fsinfo_sector != 0 && g.fsinfo_sector < g.reserved_sectors
        {
            let mut s = [0u8; 512];
            if dev
                .read_exact_at(&mut s, g.fsinfo_sector * g.bytes_per_sector)
                .is_ok()
                && s[0..4] == [0x52, 0x52, 0x61, 0x41]
                && s[484..488] == [0x72, 0x72, 0x41, 0x61]
            {
                let free = u32::from_le_bytes([s[488], s[489], s[490], s[491]]);
                if free != u32::MAX {
                    fsinfo_free = Some(free);
                }
            }
        }

        let mut v = Volume {
            dev,
            g: Box::new(g),
            fat,
            fat_limit,
            oem,
            boot_label,
            root_label: None,
            serial,
            copies_equal,
            fsinfo_free,
            clusters_in_use: 0,
            open_warnings: warnings,
        };
        v.clusters_in_use = (2..v.fat_limit).filter(|&c| v.next(c) != 0).count() as u64;
        v.root_label = v.find_root_label();
        Ok(v)
    }

    pub fn flavor(&self) -> Flavor {
        self.g.flavor
    }

    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// The volume label: the root folder's label entry, else the boot sector's.
    pub fn label(&self) -> Option<&str> {
        self.root_label.as_deref().or(self.boot_label.as_deref())
    }

    pub fn space(&self) -> Result<Space> {
        let g = &self.g;
        let outside = g.first_cluster_sector * g.bytes_per_sector;
        Ok(Space {
            cluster_size: g.cluster_size,
            clusters_total: g.cluster_count,
            clusters_in_use: self.clusters_in_use,
            bytes_in_use: self.clusters_in_use * g.cluster_size + outside,
            bytes_total: g.total_sectors * g.bytes_per_sector,
        })
    }

    pub fn facts(&self) -> Vec<(String, String)> {
        let g = &self.g;
        let mut f: Vec<(String, String)> = Vec::new();
        let mut add = |k: &str, v: String| f.push((k.to_string(), v));
        add("file system", g.flavor.name().to_string());
        add("OEM name", self.oem.clone());
        add("bytes per sector", g.bytes_per_sector.to_string());
        add(
            "cluster size",
            format!(
                "{} bytes ({} sectors)",
                g.cluster_size, g.sectors_per_cluster
            ),
        );
        add("reserved sectors", g.reserved_sectors.to_string());
        let fat_note = match self.copies_equal {
            Some(true) => ", copies equal",
            Some(false) => ", copies DIFFER",
            None => "",
        };
        add(
            "FATs",
            format!(
                "{} of {} sectors ({} bytes) each{}{}",
                g.fat_count,
                g.fat_sectors,
                g.fat_sectors * g.bytes_per_sector,
                fat_note,
                if g.mirroring {
                    String::new()
                } else {
                    format!(", mirroring off, FAT {} in use", g.active_fat + 1)
                }
            ),
        );
        if g.flavor == Flavor::Fat32 {
            add("root cluster", g.root_cluster.to_string());
        } else {
            add("root entries", g.root_entries.to_string());
        }
        add("total sectors", g.total_sectors.to_string());
        add(
            "clusters",
            format!("{} (2 to {})", g.cluster_count, g.last_cluster()),
        );
        let free = g.cluster_count.saturating_sub(self.clusters_in_use);
        add(
            "used clusters",
            format!(
                "{} ({} bytes)",
                self.clusters_in_use,
                self.clusters_in_use * g.cluster_size
            ),
        );
        add(
            "free clusters",
            format!("{} ({} bytes)", free, free * g.cluster_size),
        );
        if let Some(n) = self.fsinfo_free {
            let note = if u64::from(n) == free {
                ""
            } else {
                " (disagrees with the FAT)"
            };
            add("FSInfo free clusters", format!("{n}{note}"));
        }
        add(
            "times",
            "created (to 10 ms), modified (to 2 s), accessed (the day only), local time of no stated zone \
             (read as UTC unless told one); changed unknown: FAT keeps none"
                .into(),
        );
        add("label", self.label().unwrap_or("").to_string());
        if let Some(b) = &self.boot_label {
            if self.root_label.as_deref().is_some_and(|r| r != b) {
                add("boot sector label", b.clone());
            }
        }
        add(
            "serial",
            format!("{:04X}-{:04X}", self.serial >> 16, self.serial & 0xFFFF),
        );
        f
    }

    /// The FAT's entry for `cluster` (the next cluster, 0 free, EOC, bad …); 0 past what the FAT holds.
    fn next(&self, cluster: u64) -> u32 {
        if cluster >= self.fat_limit {
            return 0;
        }
        let c = cluster as usize;
        let fat = &self.fat;
        match self.g.flavor {
            Flavor::Fat12 => {
                let o = c + c / 2;
                match (fat.get(o), fat.get(o + 1)) {
                    (Some(&a), Some(&b)) => {
                        let v = u16::from_le_bytes([a, b]);
                        u32::from(if c & 1 == 1 { v >> 4 } else { v & 0xFFF })
                    }
                    _ => 0,
                }
            }
            Flavor::Fat16 => fat
                .get(2 * c..2 * c + 2)
                .map_or(0, |b| u32::from(u16::from_le_bytes([b[0], b[1]]))),
            _ => fat.get(4 * c..4 * c + 4).map_or(0, |b| {
                u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x0FFF_FFFF
            }),
        }
    }

    fn in_heap(&self, cluster: u64) -> bool {
        (2..=self.g.last_cluster()).contains(&cluster)
    }

    /// Reads `runs` (byte runs) into one buffer, each contiguous run in one read, clipped to the image.
    /// Returns the buffer and, for each piece, (volume offset, length in the buffer).
    fn read_runs(
        &self,
        runs: &[Run],
        warnings: &mut Vec<String>,
        what: &str,
    ) -> (Vec<u8>, Vec<Run>) {
        let dev_len = self.dev.len();
        let total: u64 = runs
            .iter()
            .map(|r| r.len.min(dev_len.saturating_sub(r.offset)))
            .sum();
        let mut buf = vec![0u8; total as usize];
        let mut pieces = Vec::with_capacity(runs.len());
        let mut at = 0usize;
        for r in runs {
            let n = r.len.min(dev_len.saturating_sub(r.offset)) as usize;
            if (n as u64) < r.len {
                warnings.push(format!(
                    "{what}: the image ends before byte {} (read {} of {} bytes there)",
                    r.offset + r.len,
                    n,
                    r.len
                ));
            }
            if n == 0 {
                break;
            }
            if let Err(e) = self.dev.read_exact_at(&mut buf[at..at + n], r.offset) {
                warnings.push(format!("{what}: read of {n} bytes at {}: {e}", r.offset));
                break;
            }
            pieces.push(Run {
                offset: r.offset,
                len: n as u64,
            });
            at += n;
            if (n as u64) < r.len {
                break;
            }
        }
        buf.truncate(at);
        (buf, pieces)
    }

    /// The root folder's volume-label entry, if any.
    fn find_root_label(&self) -> Option<String> {
        let mut sink = Vec::new();
        let runs = if self.g.flavor == Flavor::Fat32 {
            // Only the root's first cluster: labels sit at its start.
            let c = u64::from(self.g.root_cluster);
            if !self.in_heap(c) {
                return None;
            }
            vec![Run {
                offset: self.g.cluster_offset(c),
                len: self.g.cluster_size,
            }]
        } else {
            vec![self.g.root_region()]
        };
        let (buf, _) = self.read_runs(&runs, &mut sink, "root");
        for d in buf.chunks_exact(DENTRY) {
            if d[0] == 0 {
                break;
            }
            if d[0] != 0xE5 && d[11] & 0x3F != 0x0F && d[11] & 0x18 == 0x08 {
                let l = names::cp437(&d[0..11]).trim_end().to_string();
                return (!l.is_empty()).then_some(l);
            }
        }
        None
    }

    pub fn scan(&self, opts: &ScanOptions) -> Result<Scan> {
        let (spool, warnings) = self.scan_spooled(opts)?;
        Ok(Scan {
            root: ROOT_ID,
            entries: spool.into_entries(),
            warnings,
            space: self.space()?,
        })
    }

    /// Every entry, packed as the walk makes them (out of id order), and the warnings.
    pub fn scan_spooled(&self, opts: &ScanOptions) -> Result<(Spool, Vec<String>)> {
        // The space is what `scan` gives too: an unreadable FAT fails both alike.
        self.space()?;
        let mut s = Scanner::new(self, opts);
        s.run();
        Ok((s.spool, s.warnings))
    }
}

/// A folder waiting to be read.
struct Pending {
    id: u64,
    /// Byte runs of its directory entries.
    runs: Vec<Run>,
    deleted: bool,
}

struct Scanner<'a, R: ReadAt> {
    v: &'a Volume<R>,
    opts: &'a ScanOptions,
    spool: Spool,
    warnings: Vec<String>,
    /// For each cluster, 1 + the index of the chain that holds it (0: none yet).
    owner: Vec<u32>,
    /// The id of each chain's entry, by chain index.
    chain_ids: Vec<u64>,
    /// Clusters already read as a deleted folder (so deleted folders never loop).
    deleted_dirs_seen: std::collections::HashSet<u64>,
    /// Free clusters as (first, count), ascending; built when deleted entries are asked for.
    free: Vec<(u64, u64)>,
    stack: Vec<Pending>,
}

impl<'a, R: ReadAt> Scanner<'a, R> {
    fn new(v: &'a Volume<R>, opts: &'a ScanOptions) -> Self {
        let heap = (v.g.last_cluster() + 1).min(v.fat_limit.max(2)) as usize;
        let mut free = Vec::new();
        if opts.deleted {
            let last = v.g.last_cluster();
            // Past what the FAT holds every cluster reads as free (`next` gives 0): one stretch, not a step each (a
            // damaged boot sector can claim hundreds of millions of clusters beside a FAT of a few sectors).
            let known = last.min(v.fat_limit.saturating_sub(1));
            let mut c = 2u64;
            while c <= known {
                if v.next(c) == 0 {
                    let start = c;
                    while c <= known && v.next(c) == 0 {
                        c += 1;
                    }
                    free.push((start, c - start));
                } else {
                    c += 1;
                }
            }
            if c <= last {
                match free.last_mut() {
                    Some((start, len)) if *start + *len == c => *len += last + 1 - c,
                    _ => free.push((c, last + 1 - c)),
                }
            }
        }
        Scanner {
            v,
            opts,
            spool: Spool::new(),
            warnings: v.open_warnings.clone(),
            owner: vec![0; heap],
            chain_ids: Vec::new(),
            deleted_dirs_seen: std::collections::HashSet::new(),
            free,
            stack: Vec::new(),
        }
    }

    fn cluster_run(&self, first: u64, count: u64) -> Run {
        Run {
            offset: self.v.g.cluster_offset(first),
            len: count * self.v.g.cluster_size,
        }
    }

    /// Walks the chain from `start` for the entry `id`, marking each cluster as its own; stops (with a warning)
    /// at a loop, a cluster of another chain, a free or bad mark or a number past the end. Returns byte runs,
    /// contiguous clusters merged, and the number of clusters.
    fn chain(&mut self, start: u64, id: u64, name: &str) -> (Vec<Run>, u64) {
        let mut runs: Vec<Run> = Vec::new();
        let mut count = 0u64;
        if start == 0 {
            return (runs, 0);
        }
        let tag = self.chain_ids.len() as u32 + 1;
        self.chain_ids.push(id);
        let g = *self.v.g;
        let (eoc, bad) = (u64::from(g.eoc()), u64::from(g.bad()));
        let mut c = start;
        loop {
            if !self.v.in_heap(c) || c as usize >= self.owner.len() {
                self.warnings.push(format!(
                    "{name} (id {id}): cluster {c} is outside the cluster heap (2 to {}); chain cut",
                    g.last_cluster()
                ));
                break;
            }
            let o = self.owner[c as usize];
            if o == tag {
                self.warnings.push(format!(
                    "{name} (id {id}): its chain loops back to cluster {c}; cut there"
                ));
                break;
            }
            if o != 0 {
                let other = self.chain_ids[(o - 1) as usize];
                self.warnings.push(format!(
                    "{name} (id {id}): its chain runs into cluster {c}, which belongs to id {other}; cut there"
                ));
                break;
            }
            self.owner[c as usize] = tag;
            count += 1;
            let off = g.cluster_offset(c);
            match runs.last_mut() {
                Some(r) if r.offset + r.len == off => r.len += g.cluster_size,
                _ => runs.push(Run {
                    offset: off,
                    len: g.cluster_size,
                }),
            }
            let n = u64::from(self.v.next(c));
            if n >= eoc {
                break;
            }
            if n == 0 || n == bad || n == 1 {
                let what = if n == bad {
                    "bad-cluster mark"
                } else {
                    "free mark"
                };
                self.warnings.push(format!(
                    "{name} (id {id}): cluster {c} of its chain has a {what} ({n:#x}) in the FAT; chain cut"
                ));
                break;
            }
            c = n;
        }
        (runs, count)
    }

    /// TSK's recovery of a deleted file: from its first cluster on, the free clusters (allocated ones skipped)
    /// until the size is covered; nothing when the first cluster is in use or the free clusters run out.
    fn recover(&self, start: u64, size: u64) -> Vec<Run> {
        let g = &self.v.g;
        if size == 0 || !self.v.in_heap(start) || self.v.next(start) != 0 {
            return Vec::new();
        }
        let mut need = size.div_ceil(g.cluster_size);
        let mut i = self.free.partition_point(|&(f, n)| f + n <= start);
        let mut runs = Vec::new();
        let mut from = start;
        while need > 0 {
            let Some(&(f, n)) = self.free.get(i) else {
                return Vec::new();
            };
            let first = f.max(from);
            let take = (f + n - first).min(need);
            runs.push(self.cluster_run(first, take));
            if runs.len() > MAX_RECOVERY_RUNS {
                return Vec::new();
            }
            need -= take;
            i += 1;
            from = 0;
        }
        runs
    }

    fn run(&mut self) {
        let g = *self.v.g;
        let bps = g.bytes_per_sector;
        // The root.
        let root_runs = if g.flavor == Flavor::Fat32 {
            self.chain(u64::from(g.root_cluster), ROOT_ID, "root folder")
                .0
        } else {
            vec![g.root_region()]
        };
        let root_alloc: u64 = root_runs.iter().map(|r| r.len).sum();
        if root_runs.is_empty() {
            self.warnings
                .push("the root folder has no clusters".to_string());
        }
        self.spool.push(Entry {
            id: ROOT_ID,
            parent: ROOT_ID,
            kind: Kind::Folder,
            size: root_alloc,
            allocated: root_alloc,
            local_times: true,
            attributes: attr::DIRECTORY,
            runs: root_runs.clone(),
            ..Entry::default()
        });

        self.stack.push(Pending {
            id: ROOT_ID,
            runs: root_runs,
            deleted: false,
        });
        while let Some(p) = self.stack.pop() {
            self.folder(p);
        }

        // TSK's virtual files after the last sector's entries.
        let image_sectors = (self.v.dev.len() / bps).min(g.total_sectors);
        let virt = g.fat_count.min(2) + 2;
        let last_inum = image_sectors.saturating_sub(g.first_data_sector) * g.entries_per_sector()
            + FIRST_NORMAL_ID
            - 1
            + virt;
        // On an image cut short, TSK's numbers may fall among the entries read: then they follow the last.
        let after_entries = self.spool.max_id().unwrap_or(0) + 1;
        let mbr = (last_inum - virt + 1).max(after_entries);
        let reserved = g.reserved_sectors * bps;
        let fat_bytes = g.fat_sectors * bps;
        self.spool.push(virtual_entry(
            mbr,
            "$MBR",
            512.min(reserved),
            vec![Run {
                offset: 0,
                len: reserved,
            }],
        ));
        self.spool.push(virtual_entry(
            mbr + 1,
            "$FAT1",
            fat_bytes,
            vec![Run {
                offset: reserved,
                len: fat_bytes,
            }],
        ));
        if g.fat_count > 1 {
            // Copies past the second have no TSK inode; they count with $FAT2.
            self.spool.push(virtual_entry(
                mbr + 2,
                "$FAT2",
                fat_bytes,
                vec![Run {
                    offset: reserved + fat_bytes,
                    len: fat_bytes * (g.fat_count - 1),
                }],
            ));
        }
    }

    /// Reads one folder whole and adds its entries; its subfolders go on the stack.
    fn folder(&mut self, p: Pending) {
        let v = self.v;
        let what = format!("folder id {}", p.id);
        let (buf, pieces) = v.read_runs(&p.runs, &mut self.warnings, &what);
        let mut lfn = names::Lfn::default();
        let mut at = 0usize;
        'pieces: for piece in &pieces {
            let data = &buf[at..at + piece.len as usize];
            at += piece.len as usize;
            for (i, d) in data.chunks_exact(DENTRY).enumerate() {
                let d: &[u8; DENTRY] = d.try_into().expect("chunks_exact(32)");
                let first = d[0];
                if first == 0 {
                    break 'pieces;
                }
                let a = d[11];
                let erased = first == 0xE5;
                if a & 0x3F == 0x0F {
                    if erased && !self.opts.deleted {
                        lfn.clear();
                    } else if let Err(e) = lfn.push(d) {
                        self.warnings.push(format!("{what}: {e}"));
                    }
                    continue;
                }
                let deleted = erased || p.deleted;
                if a & 0x08 != 0 || (deleted && !self.opts.deleted) {
                    // A volume label (TSK lists it as "LABEL (Volume Label Entry)"; uffs does not), or a
                    // deleted entry not asked for.
                    lfn.clear();
                    continue;
                }
                if d[0..11] == *b".          " || d[0..11] == *b"..         " {
                    lfn.clear();
                    continue;
                }
                let offset = piece.offset + (i * DENTRY) as u64;
                let id = v.g.inode_at(offset);
                let short = names::short_name(d, self.opts.code_page);
                let long = match lfn.take(d) {
                    names::Long::None => None,
                    names::Long::Name(n) => Some(n),
                    names::Long::Mismatch => {
                        self.warnings.push(format!(
                            "{what}: the long name before {short:?} (id {id}) does not match it (checksum \
                             or sequence); the 8.3 name is used"
                        ));
                        None
                    }
                };
                self.entry(&p, id, d, short, long, deleted);
            }
        }
    }

    fn entry(
        &mut self,
        p: &Pending,
        id: u64,
        d: &[u8; DENTRY],
        short: String,
        long: Option<String>,
        deleted: bool,
    ) {
        let g = *self.v.g;
        let u16_at = |o: usize| u16::from_le_bytes([d[o], d[o + 1]]);
        let a = d[11];
        let folder = a & 0x10 != 0;
        let mut first = u64::from(u16_at(26));
        if g.flavor == Flavor::Fat32 {
            first |= u64::from(u16_at(20)) << 16;
        }
        let size_field = u64::from(u32::from_le_bytes([d[28], d[29], d[30], d[31]]));
        let (name, short_name) = match long {
            Some(l) if l != short => (l, Some(short)),
            Some(l) => (l, None),
            None => (short, None),
        };
        let times = Times {
            created: dos_to_filetime(u16_at(16), u16_at(14), d[13]),
            modified: dos_to_filetime(u16_at(24), u16_at(22), 0),
            changed: 0,
            accessed: dos_to_filetime(u16_at(18), 0, 0),
        };
        let (runs, size) = if deleted {
            if folder {
                // TSK: a deleted folder is one cluster when its first cluster is free, else empty.
                if self.v.in_heap(first) && self.v.next(first) == 0 {
                    (vec![self.cluster_run(first, 1)], g.cluster_size)
                } else {
                    (Vec::new(), 0)
                }
            } else {
                (self.recover(first, size_field), size_field)
            }
        } else {
            let (runs, count) = self.chain(first, id, &name);
            if folder {
                (runs, count * g.cluster_size)
            } else {
                let have = count * g.cluster_size;
                if have < size_field {
                    self.warnings.push(format!(
                        "{name} (id {id}): {size_field} bytes but {have} bytes of clusters"
                    ));
                }
                (runs, size_field)
            }
        };
        let allocated = runs.iter().map(|r| r.len).sum();
        if folder && !runs.is_empty() {
            let enter = if deleted {
                self.deleted_dirs_seen.insert(first)
            } else {
                true
            };
            if enter {
                self.stack.push(Pending {
                    id,
                    runs: runs.clone(),
                    deleted,
                });
            }
        }
        self.spool.push(Entry {
            id,
            parent: p.id,
            name,
            short_name,
            kind: if folder { Kind::Folder } else { Kind::File },
            size,
            allocated,
            times,
            local_times: true,
            attributes: u32::from(a)
                & (attr::READ_ONLY | attr::HIDDEN | attr::SYSTEM | attr::DIRECTORY | attr::ARCHIVE),
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
    }
}

fn virtual_entry(id: u64, name: &str, size: u64, runs: Vec<Run>) -> Entry {
    let allocated = runs.iter().map(|r| r.len).sum();
    Entry {
        id,
        parent: ROOT_ID,
        name: name.to_string(),
        size,
        allocated,
        metadata: true,
        from_index_slack: false,
        attributes: attr::SYSTEM | attr::HIDDEN,
        runs,
        ..Entry::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_refuses_garbage_and_ntfs() {
        assert_eq!(probe(&[]), None);
        assert_eq!(probe(&[0u8; 512]), None);
        let mut b = [0u8; 512];
        b[510] = 0x55;
        b[511] = 0xAA;
        assert_eq!(probe(&b), None);
        // A sane FAT16 boot sector: 512 B sectors, 4 per cluster, 1 reserved, 2 FATs of 32, 512 root entries,
        // 65536 sectors.
        b[11..13].copy_from_slice(&512u16.to_le_bytes());
        b[13] = 4;
        b[14..16].copy_from_slice(&1u16.to_le_bytes());
        b[16] = 2;
        b[17..19].copy_from_slice(&512u16.to_le_bytes());
        b[32..36].copy_from_slice(&65536u32.to_le_bytes());
        b[22..24].copy_from_slice(&64u16.to_le_bytes());
        assert_eq!(probe(&b), Some(Flavor::Fat16));
        let mut n = b;
        n[3..11].copy_from_slice(b"NTFS    ");
        assert_eq!(probe(&n), None);
        let mut n = b;
        n[13] = 3;
        assert_eq!(probe(&n), None);
        let mut n = b;
        n[11..13].copy_from_slice(&768u16.to_le_bytes());
        assert_eq!(probe(&n), None);
        let mut state = 0x1234_5678_9abc_def0u64;
        for _ in 0..20_000 {
            let mut g = b;
            for _ in 0..8 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                g[(state % 64) as usize] = (state >> 32) as u8;
            }
            let _ = probe(&g);
            let mut img = g.to_vec();
            img.resize(8192, 0xF6);
            if let Ok(v) = Volume::open(img) {
                let _ = v.scan(&ScanOptions {
                    deleted: true,
                    ..Default::default()
                });
                let _ = v.facts();
            }
        }
    }
}
