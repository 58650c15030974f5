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
use crate::medium::runs::{Run, RunRow};
use crate::medium::Token;
use crate::units::Lba;
use rustc_hash::FxHashMap as HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

/// LBAs per row of the oracle's maps: small enough that a row of
/// randomly written versions stays a few KiB (a write shifts at most that),
/// large enough that a sequential stretch costs one hash entry per
/// `CHUNK` LBAs.
const CHUNK: u64 = 256;

/// A map from LBA to a token, absent meaning empty: run-length encoded rows
/// of [`CHUNK`] LBAs, so memory follows how many stretches of LBAs were
/// written with one version, not how many LBAs.
#[derive(Debug, Default)]
struct LbaRuns {
    rows: HashMap<u64, RunRow>,
}

impl LbaRuns {
    /// Call `f(lba, n, chunk, offset)` for each piece of `[lba, lba+n)` inside one chunk.
    #[inline]
    fn pieces(lba: u64, n: u64, mut f: impl FnMut(u64, u32, u64, u32)) {
        let mut l = lba;
        let end = lba + n;
        while l < end {
            let (c, off) = (l / CHUNK, (l % CHUNK) as u32);
            let k = (end - l).min(CHUNK - off as u64) as u32;
            f(l, k, c, off);
            l += k as u64;
        }
    }

    /// Append the tokens of `[lba, lba+n)` to `out`.
    fn read(&self, lba: u64, n: u64, out: &mut Vec<Token>) {
        Self::pieces(lba, n, |_, k, c, off| match self.rows.get(&c) {
            Some(r) => r.read(off, k, out),
            None => out.extend(std::iter::repeat_n(Token::EMPTY, k as usize)),
        });
    }

    fn get(&self, lba: u64) -> Token {
        self.rows
            .get(&(lba / CHUNK))
            .map_or(Token::EMPTY, |r| r.get((lba % CHUNK) as u32))
    }

    /// Store `data` for the LBAs from `lba` (one token each).
    fn write(&mut self, lba: u64, data: &[Token], scratch: &mut Vec<Run>) {
        let rows = &mut self.rows;
        Self::pieces(lba, data.len() as u64, |l, k, c, off| {
            let d = &data[(l - lba) as usize..(l - lba) as usize + k as usize];
            if d.iter().all(Token::is_empty) {
                if let Some(r) = rows.get_mut(&c) {
                    r.write(CHUNK as u32, off, d, scratch);
                    if r.is_empty() {
                        rows.remove(&c);
                    }
                }
            } else {
                rows.entry(c)
                    .or_default()
                    .write(CHUNK as u32, off, d, scratch);
            }
        });
    }

    /// The stretches `(first, count)` of LBAs holding a token, in LBA order.
    fn filled(&self, mut f: impl FnMut(u64, u64)) {
        let mut chunks: Vec<u64> = self.rows.keys().copied().collect();
        chunks.sort_unstable();
        for c in chunks {
            self.rows[&c].filled(CHUNK as u32, |s, n| f(c * CHUNK + s as u64, n as u64));
        }
    }

    fn heap_bytes(&self) -> u64 {
        self.rows.values().map(RunRow::heap_bytes).sum::<u64>()
            + (self.rows.capacity() * (std::mem::size_of::<(u64, RunRow)>() + 1)) as u64
    }
}

/// Newest acknowledged version per LBA, and the durable one where they differ.
#[derive(Debug, Default)]
pub struct Oracle {
    /// The drive's starting state (host LBAs holding version 0), with the geometry to read it.
    start: Option<(Arc<Prefill>, Arc<Geometry>)>,
    /// The newest acknowledged version of each LBA written, as `Token::data(lba, ver)`.
    expected: LbaRuns,
    /// LBAs whose newest version is not yet durable → (the durable
    /// version, 0 for none; the newest). At most the write cache's sectors
    /// and one write's, so a plain map that stays in the CPU's caches.
    nondurable: HashMap<u64, (u32, u32)>,
    /// After a crash: LBAs whose content may be any version in `(lo, hi]` or `lo`.
    uncertain: HashMap<u64, (u32, u32)>,
    /// Buffers reused by every call (no allocation per request).
    scratch: Vec<Run>,
    old: Vec<Token>,
    /// Host-read sectors checked.
    pub read_blocks_checked: u64,
    /// Sectors checked by scans (end of run, after crashes).
    pub scan_blocks_checked: u64,
}

/// The version a token of the expected map stands for (empty: 0, never written).
#[inline]
fn version(t: &Token) -> u32 {
    if t.is_empty() {
        0
    } else {
        t.ver
    }
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
            // Only the prefill makes version 0 of an LBA, so finding it
            // proves the LBA was prefilled (no need to look it up).
            if t.lba == l && t.ver == 0 {
                self.start.is_some()
            } else if self.prefilled(l) {
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
        version(&self.expected.get(lba))
    }

    /// Heap bytes of the oracle's state (what verification costs besides the medium's contents).
    pub fn heap_bytes(&self) -> u64 {
        let entry = (std::mem::size_of::<(u64, (u32, u32))>() + 1) as u64;
        self.expected.heap_bytes()
            + (self.nondurable.capacity() + self.uncertain.capacity()) as u64 * entry
            + (self.old.capacity() * std::mem::size_of::<Token>()) as u64
            + (self.scratch.capacity() * std::mem::size_of::<Run>()) as u64
    }

    /// Host LBAs written at least once (each counted once).
    pub fn written_sectors(&self) -> u64 {
        let mut n = 0;
        self.expected.filled(|_, k| n += k);
        n
    }

    /// Tokens for a new host write of `n` sectors from `lba` (next versions; not yet acknowledged).
    pub fn new_write(&mut self, lba: u64, n: u64) -> Vec<Token> {
        self.old.clear();
        self.expected.read(lba, n, &mut self.old);
        self.old
            .iter()
            .zip(lba..)
            .map(|(t, l)| Token::data(Lba(l), version(t).wrapping_add(1)))
            .collect()
    }

    /// A write was acknowledged; `durable` says whether it reached the
    /// medium. `data` is what [`new_write`](Self::new_write) made, so each
    /// token's version is one past the LBA's before it.
    pub fn acknowledge(&mut self, data: &[Token], durable: bool) {
        for t in data {
            if durable {
                if !self.nondurable.is_empty() {
                    self.nondurable.remove(&t.lba);
                }
            } else {
                // The durable version is the one before the first write not yet durable.
                self.nondurable
                    .entry(t.lba)
                    .or_insert((t.ver.wrapping_sub(1), t.ver))
                    .1 = t.ver;
            }
        }
        let mut i = 0;
        while i < data.len() {
            let mut j = i + 1;
            while j < data.len() && data[j].lba == data[j - 1].lba.wrapping_add(1) {
                j += 1;
            }
            self.expected
                .write(data[i].lba, &data[i..j], &mut self.scratch);
            i = j;
        }
    }

    /// Cached data reached the medium: LBAs whose newest version it is are durable.
    pub fn made_durable(&mut self, data: &[Token]) {
        if self.nondurable.is_empty() {
            return;
        }
        for t in data {
            if let Entry::Occupied(e) = self.nondurable.entry(t.lba) {
                if e.get().1 == t.ver {
                    e.remove();
                }
            }
        }
    }

    /// A power loss: every non-durable LBA may now hold its durable version
    /// or any newer one; `in_flight` (an unacknowledged write) likewise.
    pub fn crash(&mut self, in_flight: &[Token]) {
        for (lba, range) in self.nondurable.drain() {
            self.uncertain.insert(lba, range);
        }
        for t in in_flight {
            let old = self.expected(t.lba);
            let e = self.uncertain.entry(t.lba).or_insert((old, old));
            e.1 = e.1.max(t.ver);
        }
    }

    /// Every LBA with a known version or an uncertain one, as sorted,
    /// merged ranges `(first, count)`.
    pub fn footprint(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = vec![];
        self.expected.filled(|l, n| match v.last_mut() {
            Some((s, k)) if *s + *k == l => *k += n,
            _ => v.push((l, n)),
        });
        if !self.uncertain.is_empty() {
            v.extend(self.uncertain.keys().map(|&l| (l, 1)));
            v = crate::medium::prefill::merge_ranges(v);
        }
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
        let mut want = std::mem::take(&mut self.old);
        want.clear();
        self.expected.read(lba, got.len() as u64, &mut want);
        let r = self.check_against(lba, got, &want, during, settle, describe_op);
        self.old = want;
        r
    }

    /// [`check`](Self::check) with the expected tokens of the range decoded.
    fn check_against(
        &mut self,
        lba: u64,
        got: &[Token],
        want: &[Token],
        during: &str,
        settle: bool,
        describe_op: impl Fn(u32) -> String,
    ) -> SimResult<()> {
        let settling = settle && !self.uncertain.is_empty();
        for (i, (t, w)) in got.iter().zip(want).enumerate() {
            // The common case: the newest version, where one was written.
            if t == w && !w.is_empty() && !settling {
                continue;
            }
            let l = lba + i as u64;
            let want = version(w);
            let ok = if settling && self.uncertain.contains_key(&l) {
                let (lo, hi) = self.uncertain[&l];
                let fits = (t.lba == l && t.ver >= lo && t.ver <= hi && t.ver > 0)
                    || (lo == 0 && self.is_version(t, l, 0));
                if fits {
                    self.uncertain.remove(&l);
                    let now = if t.is_empty() || t.ver == 0 {
                        Token::EMPTY
                    } else {
                        Token::data(Lba(l), t.ver)
                    };
                    self.expected.write(l, &[now], &mut self.scratch);
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
