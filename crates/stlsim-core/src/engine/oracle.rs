//! The verification oracle: which version of each LBA the host last wrote and
//! had acknowledged, which of those are durable (on the medium rather than in
//! the volatile write cache), and the checks of reads against them.
//!
//! Version 0 means "never written by the host": an empty sector, or on a
//! prefilled drive, for an LBA the drive started with, the prefilled data
//! (`Token::data(lba, 0)`).

use crate::error::{DataLoss, SimError, SimResult};
use crate::geometry::Geometry;
use crate::medium::prefill::Prefill;
use crate::medium::Token;
use crate::units::Lba;
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// Newest acknowledged version per LBA, and the durable one where they differ.
#[derive(Debug, Default)]
pub struct Oracle {
    /// The drive's starting state (host LBAs holding version 0), with the geometry to read it.
    start: Option<(Arc<Prefill>, Arc<Geometry>)>,
    expected: HashMap<u64, u32>,
    /// LBAs whose newest version is not yet durable → the durable version (0: none).
    nondurable: HashMap<u64, u32>,
    /// After a crash: LBAs whose content may be any version in `(lo, hi]` or `lo`.
    uncertain: HashMap<u64, (u32, u32)>,
    /// Host-read sectors checked.
    pub read_blocks_checked: u64,
    /// Sectors checked by scans (end of run, after crashes).
    pub scan_blocks_checked: u64,
}

impl Oracle {
    /// An oracle for a drive that starts from `prefill`.
    pub fn new(prefill: Option<(Arc<Prefill>, Arc<Geometry>)>) -> Oracle {
        Oracle {
            start: prefill.filter(|p| p.0.any()),
            ..Default::default()
        }
    }

    /// The drive's starting state, if it held data.
    pub fn start(&self) -> Option<&Prefill> {
        self.start.as_ref().map(|s| s.0.as_ref())
    }

    /// Whether host LBA `lba` started with data (version 0 of it is a real block).
    pub fn prefilled(&self, lba: u64) -> bool {
        self.start
            .as_ref()
            .is_some_and(|(p, g)| p.holds_host(g, lba))
    }

    /// Whether token `t` is version `v` of LBA `l`.
    fn is_version(&self, t: &Token, l: u64, v: u32) -> bool {
        if v == 0 {
            if self.prefilled(l) {
                t.lba == l && t.ver == 0
            } else {
                t.is_empty()
            }
        } else {
            t.lba == l && t.ver == v
        }
    }

    /// The version the host last wrote to `lba` (0: never).
    pub fn expected(&self, lba: u64) -> u32 {
        self.expected.get(&lba).copied().unwrap_or(0)
    }

    /// Tokens for a new host write of `n` sectors from `lba` (next versions; not yet acknowledged).
    pub fn new_write(&self, lba: u64, n: u64) -> Vec<Token> {
        (lba..lba + n)
            .map(|l| Token::data(Lba(l), self.expected(l).wrapping_add(1)))
            .collect()
    }

    /// A write was acknowledged; `durable` says whether it reached the medium.
    pub fn acknowledge(&mut self, data: &[Token], durable: bool) {
        for t in data {
            let old = self.expected.insert(t.lba, t.ver).unwrap_or(0);
            if durable {
                self.nondurable.remove(&t.lba);
            } else {
                self.nondurable.entry(t.lba).or_insert(old);
            }
        }
    }

    /// Cached data reached the medium.
    pub fn made_durable(&mut self, data: &[Token]) {
        for t in data {
            if self.expected(t.lba) == t.ver {
                self.nondurable.remove(&t.lba);
            }
        }
    }

    /// A power loss: every non-durable LBA may now hold its durable version
    /// or any newer one; `in_flight` (an unacknowledged write) likewise.
    pub fn crash(&mut self, in_flight: &[Token]) {
        for (lba, durable) in self.nondurable.drain() {
            let newest = self.expected.get(&lba).copied().unwrap_or(0);
            self.uncertain.insert(lba, (durable, newest));
        }
        for t in in_flight {
            let old = self.expected(t.lba);
            let e = self.uncertain.entry(t.lba).or_insert((old, old));
            e.1 = e.1.max(t.ver);
        }
    }

    /// Every LBA with a known version or an uncertain one, sorted.
    pub fn footprint(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .expected
            .keys()
            .chain(self.uncertain.keys())
            .copied()
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Check tokens read for `[lba, lba+n)`. With `settle`, uncertain LBAs
    /// accept any version in their range and take the one found as expected.
    pub fn check(
        &mut self,
        lba: u64,
        got: &[Token],
        during: &str,
        settle: bool,
        describe_op: impl Fn(u32) -> String,
    ) -> SimResult<()> {
        for (i, t) in got.iter().enumerate() {
            let l = lba + i as u64;
            let want = self.expected(l);
            let ok = if settle && self.uncertain.contains_key(&l) {
                let (lo, hi) = self.uncertain[&l];
                let fits = (t.lba == l && t.ver >= lo && t.ver <= hi && t.ver > 0)
                    || (lo == 0 && self.is_version(t, l, 0));
                if fits {
                    self.uncertain.remove(&l);
                    if t.is_empty() || t.ver == 0 {
                        self.expected.remove(&l);
                    } else {
                        self.expected.insert(l, t.ver);
                    }
                }
                fits
            } else {
                self.is_version(t, l, want)
            };
            if !ok {
                let expected_desc = if let Some(&(lo, hi)) = self.uncertain.get(&l) {
                    (lo, hi)
                } else {
                    (want, want)
                };
                let found = if t.is_empty() || t.destroyed_by().is_some() || t.lba != l {
                    t.describe()
                } else {
                    format!("version {}", t.ver)
                };
                return Err(SimError::DataLoss(Box::new(DataLoss {
                    lba: l,
                    expected: expected_desc.1,
                    found,
                    during: during.to_string(),
                    destroyed_by: t.destroyed_by().map(&describe_op),
                })));
            }
        }
        Ok(())
    }
}
