//! Data runlists: the compressed mapping of a non-resident attribute's virtual clusters (VCNs) to logical
//! clusters (LCNs) on the volume.

use crate::{Error, Result};

/// One run: `length` clusters starting at `vcn`, stored from `lcn` (`None` for a sparse hole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub vcn: u64,
    pub lcn: Option<u64>,
    pub length: u64,
}

/// Iterator over the runs of a runlist. Each header byte gives the sizes of a length field (low nibble) and of a
/// signed LCN delta (high nibble; zero means sparse). Ends at a zero header byte, at the end of the bytes, or after
/// yielding one error.
#[derive(Debug, Clone)]
pub struct Runlist<'a> {
    bytes: &'a [u8],
    pos: usize,
    vcn: u64,
    lcn: i64,
    done: bool,
}

impl<'a> Runlist<'a> {
    pub fn new(bytes: &'a [u8], start_vcn: u64) -> Runlist<'a> {
        Runlist {
            bytes,
            pos: 0,
            vcn: start_vcn,
            lcn: 0,
            done: false,
        }
    }

    fn step(&mut self) -> Result<Option<Run>> {
        const WHAT: &str = "runlist";
        let Some(&header) = self.bytes.get(self.pos) else {
            return Ok(None);
        };
        if header == 0 {
            return Ok(None);
        }
        let len_size = usize::from(header & 0x0F);
        let off_size = usize::from(header >> 4);
        if len_size == 0 || len_size > 8 || off_size > 8 {
            return Err(Error::Invalid {
                what: WHAT,
                why: "run header has a field size outside 1..=8",
            });
        }
        let start = self.pos + 1;
        let end = start + len_size + off_size;
        let field = self.bytes.get(start..end).ok_or(Error::Truncated {
            what: WHAT,
            offset: start,
            need: len_size + off_size,
            have: self.bytes.len(),
        })?;
        let length = le_unsigned(&field[..len_size]);
        if length == 0 || length > i64::MAX as u64 {
            return Err(Error::Invalid {
                what: WHAT,
                why: "run length is zero or too large",
            });
        }
        let lcn = if off_size == 0 {
            None
        } else {
            let delta = le_signed(&field[len_size..]);
            self.lcn = self
                .lcn
                .checked_add(delta)
                .filter(|l| *l >= 0)
                .ok_or(Error::Invalid {
                    what: WHAT,
                    why: "run LCN is negative or overflows",
                })?;
            Some(self.lcn as u64)
        };
        let run = Run {
            vcn: self.vcn,
            lcn,
            length,
        };
        self.vcn = self.vcn.checked_add(length).ok_or(Error::Invalid {
            what: WHAT,
            why: "run VCN overflows",
        })?;
        self.pos = end;
        Ok(Some(run))
    }
}

impl Iterator for Runlist<'_> {
    type Item = Result<Run>;

    fn next(&mut self) -> Option<Result<Run>> {
        if self.done {
            return None;
        }
        let step = self.step();
        crate::end_after_error(&mut self.done, step)
    }
}

/// The clusters a runlist really holds on the volume: the lengths of its runs that have an LCN, holes left out.
/// This, not an attribute header's allocated size, is the space the attribute takes (`$BadClus:$Bad` states the
/// volume's size and is all holes). Reads only the length fields; stops at the end marker or at the first
/// malformed run header, counting what came before it.
pub fn stored_clusters(bytes: &[u8]) -> u64 {
    let mut pos = 0;
    let mut total = 0u64;
    while let Some(&header) = bytes.get(pos) {
        let (len_size, off_size) = (usize::from(header & 0x0F), usize::from(header >> 4));
        if header == 0 || len_size == 0 || len_size > 8 || off_size > 8 {
            break;
        }
        let Some(run) = bytes.get(pos + 1..pos + 1 + len_size + off_size) else {
            break;
        };
        if off_size != 0 {
            total = total.saturating_add(le_unsigned(&run[..len_size]));
        }
        pos += 1 + len_size + off_size;
    }
    total
}

fn le_unsigned(b: &[u8]) -> u64 {
    b.iter()
        .rev()
        .fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

fn le_signed(b: &[u8]) -> i64 {
    let v = le_unsigned(b);
    let bits = b.len() * 8;
    if bits < 64 && v & (1 << (bits - 1)) != 0 {
        (v | (!0u64 << bits)) as i64
    } else {
        v as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_clusters_leave_holes_out() {
        // 0x18 stored, 0x10 sparse, 1 stored.
        let rl = [0x21, 0x18, 0x34, 0x56, 0x01, 0x10, 0x11, 0x01, 0xCC, 0x00];
        assert_eq!(stored_clusters(&rl), 0x19);
        // `$BadClus:$Bad` of a 16 GiB volume of 4 KiB clusters: one hole of 0x400000 clusters.
        assert_eq!(stored_clusters(&[0x03, 0x00, 0x00, 0x40, 0x00]), 0);
        // A malformed header ends the count; what came before it stays.
        assert_eq!(stored_clusters(&[0x11, 0x05, 0x10, 0x09, 0x01]), 5);
        assert_eq!(stored_clusters(&[0x11, 0x05]), 0);
        assert_eq!(stored_clusters(&[]), 0);
    }

    #[test]
    fn decodes_runs_with_negative_delta_and_sparse() {
        // 0x18 clusters at LCN 0x5634; then 0x10 sparse; then 1 cluster at LCN 0x5634 - 0x34 = 0x5600.
        let rl = [0x21, 0x18, 0x34, 0x56, 0x01, 0x10, 0x11, 0x01, 0xCC, 0x00];
        let runs: Vec<Run> = Runlist::new(&rl, 0).map(|r| r.unwrap()).collect();
        assert_eq!(
            runs,
            vec![
                Run {
                    vcn: 0,
                    lcn: Some(0x5634),
                    length: 0x18
                },
                Run {
                    vcn: 0x18,
                    lcn: None,
                    length: 0x10
                },
                Run {
                    vcn: 0x28,
                    lcn: Some(0x5600),
                    length: 1
                },
            ]
        );
    }

    #[test]
    fn rejects_negative_lcn_and_truncation() {
        assert!(Runlist::new(&[0x11, 0x01, 0xFF], 0)
            .next()
            .unwrap()
            .is_err());
        assert!(Runlist::new(&[0x31, 0x01, 0x02], 0)
            .next()
            .unwrap()
            .is_err());
        assert!(Runlist::new(&[0x09], 0).next().unwrap().is_err());
    }
}
