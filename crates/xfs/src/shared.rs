//! Blocks that reflinked files share, from each group's reference-count B+tree (`cp` makes such copies by
//! default since coreutils 9): a record holds a run of blocks and how many file extents map it. A run mapped
//! more than once is listed once, by the volume (`$SharedExtents`), and counted in no file's allocation, so that
//! `du /` still counts each block in use once; each file's allocation is what it holds alone. Records of the
//! copy-on-write domain (a write to a shared block in progress when the volume was last written) hold blocks
//! no file maps yet: listed by the volume too (`$CopyOnWriteStaging`).

use uffs_fs::Run;

use crate::ag::{self, Tree};
use crate::{be32, ReadAt, Volume};

/// The copy-on-write domain's bit in a record's start block.
const COW_DOMAIN: u32 = 1 << 31;

/// The volume's shared runs and copy-on-write staging runs, each in volume order (bytes).
#[derive(Debug, Clone, Default)]
pub struct Shared {
    pub runs: Vec<Run>,
    pub staging: Vec<Run>,
    /// What could not be read of the trees.
    pub damage: Vec<String>,
}

impl Shared {
    /// Reads every group's reference-count B+tree (none on a volume without reflink).
    pub(crate) fn read<R: ReadAt>(vol: &Volume<R>) -> Shared {
        let (sb, mut s) = (&vol.sb, Shared::default());
        for g in &vol.groups {
            let w = ag::walk(&vol.dev, sb, g, Tree::Refcount);
            if let Some(d) = w.damage {
                s.damage.push(format!("allocation group {}: {d}", g.ag));
            }
            for r in w.records.chunks_exact(12) {
                let (start, count, refs) = (be32(r, 0), be32(r, 4), be32(r, 8));
                let (list, start) = match start & COW_DOMAIN {
                    0 if refs >= 2 => (&mut s.runs, start),
                    0 => continue,
                    _ => (&mut s.staging, start & !COW_DOMAIN),
                };
                if let Some(offset) = sb.agb_offset(g.ag, u64::from(start)) {
                    list.push(Run {
                        offset,
                        len: u64::from(count) * sb.block_size,
                    });
                }
            }
        }
        for list in [&mut s.runs, &mut s.staging] {
            list.sort_by_key(|r| r.offset);
        }
        s
    }

    /// The bytes of the run at `offset` of `len` bytes that shared runs cover.
    pub fn overlap(&self, offset: u64, len: u64) -> u64 {
        let end = offset.saturating_add(len);
        let first = self.runs.partition_point(|r| r.offset + r.len <= offset);
        self.runs[first..]
            .iter()
            .take_while(|r| r.offset < end)
            .map(|r| (r.offset + r.len).min(end) - r.offset.max(offset))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaps_add_up_the_shared_parts_of_a_run() {
        let s = Shared {
            runs: vec![
                Run {
                    offset: 100,
                    len: 50,
                },
                Run {
                    offset: 200,
                    len: 10,
                },
            ],
            ..Shared::default()
        };
        assert_eq!(s.overlap(0, 100), 0);
        assert_eq!(s.overlap(0, 120), 20);
        assert_eq!(s.overlap(140, 100), 20);
        assert_eq!(s.overlap(150, 50), 0);
        assert_eq!(s.overlap(0, 1000), 60);
        assert_eq!(s.overlap(205, 1), 1);
    }
}
