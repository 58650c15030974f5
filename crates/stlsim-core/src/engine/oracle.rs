//! The verification oracle: which version of each LBA the host last wrote and
//! had acknowledged, which of those are durable (on the medium rather than in
//! the volatile write cache), and the checks of reads against them.
//!
//! A version is the serial number of the host write that made it (the
//! [`Verifier`](super::verifier::Verifier) hands them out counting up, a
//! sequential stream of writes sharing one), so a write's tokens all carry
//! one version and an LBA's versions only grow. Version 0 means "never
//! written by the host": an empty sector, or on a prefilled drive, for an
//! LBA the drive started with, the prefilled data (`Token::data(lba, 0)`).

use crate::error::{DataLoss, SimError};
use crate::geometry::Geometry;
use crate::medium::prefill::Prefill;
use crate::medium::runs::{Run, RunRow};
use crate::medium::Token;
use crate::units::Lba;
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// LBAs per row of the oracle's version map: a write shifts at most a
/// row's runs (16 KiB however fragmented), and a stretch written with one
/// version costs one hash entry per `CHUNK` LBAs. On the 10 M-request
/// benchmark (benches/verify_cost.py) 64 was 15 % slower than 256 and 1,024
/// no slower, with a little less memory.
const CHUNK: u64 = 1024;

/// Runs in a row past which it is kept as a plain array of versions
/// instead: the array's `CHUNK` * 4 bytes are then no more than the runs'
/// 16 bytes each, so memory never grows, and a row that random writes have
/// cut into hundreds of runs is read and written by index, without the
/// search over runs that was, with its cache misses, a tenth of a verified
/// run's time.
const DENSE_AT: usize = CHUNK as usize * 4 / std::mem::size_of::<Run>();

/// One [`CHUNK`] of the expected map.
#[derive(Debug)]
enum Row {
    /// Few stretches written: run-length encoded tokens.
    Runs(RunRow),
    /// Fragmented: each LBA's version (0: never written).
    Dense(Box<[u32]>),
}

impl Default for Row {
    fn default() -> Row {
        Row::Runs(RunRow::default())
    }
}

impl Row {
    /// The token the expected map holds for version `v` of `lba`.
    #[inline]
    fn token(lba: u64, v: u32) -> Token {
        if v == 0 {
            Token::EMPTY
        } else {
            Token::data(Lba(lba), v)
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Row::Runs(r) => r.is_empty(),
            Row::Dense(d) => d.iter().all(|&v| v == 0),
        }
    }

    fn heap_bytes(&self) -> u64 {
        match self {
            Row::Runs(r) => r.heap_bytes(),
            Row::Dense(d) => (d.len() * 4) as u64,
        }
    }
}

/// A map from LBA to a token, absent meaning empty: rows of [`CHUNK`]
/// LBAs, run-length encoded, so memory follows how many stretches of LBAs
/// were written with one version, not how many LBAs, until a row is
/// fragmented enough that an array of versions is as small ([`DENSE_AT`]).
#[derive(Debug)]
struct LbaRuns {
    rows: HashMap<u64, Row>,
    /// Runs past which a row turns dense ([`DENSE_AT`]; tests lower it).
    dense_at: usize,
}

impl Default for LbaRuns {
    fn default() -> LbaRuns {
        LbaRuns {
            rows: HashMap::default(),
            dense_at: DENSE_AT,
        }
    }
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
        Self::pieces(lba, n, |l, k, c, off| match self.rows.get(&c) {
            Some(Row::Runs(r)) => r.read(off, k, out),
            Some(Row::Dense(d)) => {
                let vs = &d[off as usize..(off + k) as usize];
                out.extend(vs.iter().zip(l..).map(|(&v, l)| Row::token(l, v)));
            }
            None => out.extend(std::iter::repeat_n(Token::EMPTY, k as usize)),
        });
    }

    /// How many of `got` (the tokens read from `lba` on) are, from the
    /// first, plainly right: the newest version written, or for an LBA never
    /// written, what the drive started with (`prefilled`: version 0 of it,
    /// which only the prefill makes; else an empty sector). Compared a run
    /// at a time, without decoding the expected tokens.
    fn plainly_right(&self, lba: u64, got: &[Token], prefilled: bool) -> usize {
        let mut ok = 0usize;
        let mut done = false;
        Self::pieces(lba, got.len() as u64, |l, k, c, off| {
            if done {
                return;
            }
            let mut check = |first_slot: u32, n: u32, t: Token| {
                if done {
                    return;
                }
                let base = (l - lba) as usize + (first_slot - off) as usize;
                let g = &got[base..base + n as usize];
                let first_lba = if t.is_empty() {
                    l + (first_slot - off) as u64
                } else {
                    t.lba
                };
                let good = if !t.is_empty() {
                    g.iter()
                        .zip(first_lba..)
                        .position(|(x, l)| x.lba != l || x.ver != t.ver)
                } else if prefilled {
                    g.iter()
                        .zip(first_lba..)
                        .position(|(x, l)| x.lba != l || x.ver != 0)
                } else {
                    g.iter().position(|x| !x.is_empty())
                };
                match good {
                    None => ok += n as usize,
                    Some(p) => {
                        ok += p;
                        done = true;
                    }
                }
            };
            match self.rows.get(&c) {
                Some(Row::Runs(r)) => r.pieces(off, k, &mut check),
                Some(Row::Dense(d)) => {
                    let vs = &d[off as usize..(off + k) as usize];
                    let g = &got[(l - lba) as usize..(l - lba) as usize + k as usize];
                    // Version 0 is the prefilled block (found as version 0
                    // of its LBA) or, on an empty drive, an empty sector.
                    let good = g.iter().zip(vs).zip(l..).position(|((x, &v), l)| {
                        if v != 0 || prefilled {
                            x.lba != l || x.ver != v
                        } else {
                            !x.is_empty()
                        }
                    });
                    match good {
                        None => ok += k as usize,
                        Some(p) => {
                            ok += p;
                            done = true;
                        }
                    }
                }
                None => check(off, k, Token::EMPTY),
            }
        });
        ok
    }

    fn get(&self, lba: u64) -> Token {
        let off = (lba % CHUNK) as u32;
        match self.rows.get(&(lba / CHUNK)) {
            Some(Row::Runs(r)) => r.get(off),
            Some(Row::Dense(d)) => Row::token(lba, d[off as usize]),
            None => Token::EMPTY,
        }
    }

    /// Store `data` for the LBAs from `lba` (one token each: that LBA's
    /// version, or empty).
    fn write(&mut self, lba: u64, data: &[Token], scratch: &mut Vec<Run>) {
        let (rows, dense_at) = (&mut self.rows, self.dense_at);
        Self::pieces(lba, data.len() as u64, |l, k, c, off| {
            let d = &data[(l - lba) as usize..(l - lba) as usize + k as usize];
            debug_assert!(d.iter().zip(l..).all(|(t, l)| t.is_empty() || t.lba == l));
            let empties = d.iter().all(Token::is_empty);
            let row = if empties {
                match rows.get_mut(&c) {
                    Some(r) => r,
                    None => return, // empty already
                }
            } else {
                rows.entry(c).or_default()
            };
            match row {
                Row::Runs(r) => {
                    r.write(CHUNK as u32, off, d, scratch);
                    if r.runs() > dense_at {
                        let mut vs = vec![0u32; CHUNK as usize].into_boxed_slice();
                        r.pieces(0, CHUNK as u32, |s, n, t| {
                            if !t.is_empty() {
                                vs[s as usize..(s + n) as usize].fill(t.ver);
                            }
                        });
                        *row = Row::Dense(vs);
                    }
                }
                Row::Dense(vs) => {
                    let vs = &mut vs[off as usize..(off + k) as usize];
                    for (v, t) in vs.iter_mut().zip(d) {
                        *v = version(t);
                    }
                }
            }
            if empties && row.is_empty() {
                rows.remove(&c);
            }
        });
    }

    /// The stretches `(first, count)` of LBAs holding a token, in LBA order.
    fn filled(&self, mut f: impl FnMut(u64, u64)) {
        let mut chunks: Vec<u64> = self.rows.keys().copied().collect();
        chunks.sort_unstable();
        for c in chunks {
            match &self.rows[&c] {
                Row::Runs(r) => r.filled(CHUNK as u32, |s, n| f(c * CHUNK + s as u64, n as u64)),
                Row::Dense(d) => {
                    let mut s = 0;
                    while s < d.len() {
                        let n = d[s..].iter().take_while(|&&v| v != 0).count();
                        if n > 0 {
                            f(c * CHUNK + s as u64, n as u64);
                        }
                        s += n.max(1);
                    }
                }
            }
        }
    }

    fn heap_bytes(&self) -> u64 {
        self.rows.values().map(Row::heap_bytes).sum::<u64>()
            + (self.rows.capacity() * (std::mem::size_of::<(u64, Row)>() + 1)) as u64
    }
}

/// LBAs per entry of [`NonDurable`].
const ND_CHUNK: u64 = 16;

/// The non-durable LBAs of one [`ND_CHUNK`]-aligned stretch: which, and
/// for each its (durable, newest) versions.
#[derive(Clone, Copy, Debug, Default)]
struct NdChunk {
    mask: u16,
    versions: [(u32, u32); ND_CHUNK as usize],
}

/// LBAs whose newest version is not yet durable → (the durable version, 0
/// for none; the newest). At most the write cache's sectors and one
/// write's, so it stays small and in the CPU's caches; kept a stretch of
/// LBAs per entry, so a write costs a lookup or two rather than one per sector.
#[derive(Debug, Default)]
struct NonDurable {
    chunks: HashMap<u64, NdChunk>,
}

impl NonDurable {
    fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Apply `f(chunk, slot, token)` to each token's slot, chunk by chunk
    /// (made on first use when `make`), dropping chunks left empty.
    #[inline]
    fn each(&mut self, data: &[Token], make: bool, mut f: impl FnMut(&mut NdChunk, usize, &Token)) {
        let mut i = 0;
        while i < data.len() {
            let key = data[i].lba / ND_CHUNK;
            let mut j = i + 1;
            while j < data.len() && data[j].lba / ND_CHUNK == key {
                j += 1;
            }
            let chunk = if make {
                Some(self.chunks.entry(key).or_default())
            } else {
                self.chunks.get_mut(&key)
            };
            if let Some(c) = chunk {
                for t in &data[i..j] {
                    f(c, (t.lba % ND_CHUNK) as usize, t);
                }
                if c.mask == 0 {
                    self.chunks.remove(&key);
                }
            }
            i = j;
        }
    }

    /// Acknowledged without reaching the medium: the durable version stays
    /// the one before the first such write (`old`: each LBA's expected
    /// token before this write).
    fn cached(&mut self, data: &[Token], old: &[Token]) {
        let first = data[0].lba;
        self.each(data, true, |c, k, t| {
            let bit = 1u16 << k;
            if c.mask & bit == 0 {
                c.mask |= bit;
                c.versions[k] = (version(&old[(t.lba - first) as usize]), t.ver);
            } else {
                c.versions[k].1 = t.ver;
            }
        });
    }

    /// Durable now: every version written, or (`newest_only`) where `data`
    /// holds the newest acknowledged version.
    fn durable(&mut self, data: &[Token], newest_only: bool) {
        self.each(data, false, |c, k, t| {
            if !newest_only || c.versions[k].1 == t.ver {
                c.mask &= !(1u16 << k);
            }
        });
    }

    /// Durable now: every LBA of `[lba, lba + n)`, cleared a chunk's mask
    /// at a time.
    fn durable_range(&mut self, lba: u64, n: u64) {
        let end = lba + n;
        let mut l = lba;
        while l < end {
            let key = l / ND_CHUNK;
            let lo = l % ND_CHUNK;
            let hi = (end - key * ND_CHUNK).min(ND_CHUNK);
            if let Some(c) = self.chunks.get_mut(&key) {
                // Bits lo..hi (hi <= 16, so the shift stays in a u32).
                let bits = ((1u32 << hi) - (1u32 << lo)) as u16;
                c.mask &= !bits;
                if c.mask == 0 {
                    self.chunks.remove(&key);
                }
            }
            l = (key + 1) * ND_CHUNK;
        }
    }

    /// Empty the map, handing out `(lba, (durable, newest))`.
    fn drain(&mut self) -> impl Iterator<Item = (u64, (u32, u32))> + '_ {
        self.chunks.drain().flat_map(|(key, c)| {
            (0..ND_CHUNK as usize)
                .filter(move |k| c.mask & (1 << k) != 0)
                .map(move |k| (key * ND_CHUNK + k as u64, c.versions[k]))
        })
    }

    fn heap_bytes(&self) -> u64 {
        (self.chunks.capacity() * (std::mem::size_of::<(u64, NdChunk)>() + 1)) as u64
    }
}

/// Newest acknowledged version per LBA, and the durable one where they differ.
#[derive(Debug, Default)]
pub struct Oracle {
    /// The drive's starting state (host LBAs holding version 0), with the geometry to read it.
    start: Option<(Arc<Prefill>, Arc<Geometry>)>,
    /// The newest acknowledged version of each LBA written, as `Token::data(lba, ver)`.
    expected: LbaRuns,
    /// LBAs whose newest version is not yet durable.
    nondurable: NonDurable,
    /// After a crash: LBAs whose content may be any version in `(lo, hi]` or `lo`.
    uncertain: HashMap<u64, (u32, u32)>,
    /// Buffers reused by every call (no allocation per request).
    scratch: Vec<Run>,
    old: Vec<Token>,
}

/// A block read back wrong: the loss, and the physical operation that
/// destroyed it when the medium knows one (named by the device, which the
/// oracle does not see: [`Mismatch::into_error`]).
#[derive(Clone, Debug)]
pub struct Mismatch {
    loss: DataLoss,
    op: Option<u32>,
}

impl Mismatch {
    /// The error to stop the run with, the destroying operation described by `describe_op`.
    pub fn into_error(self, describe_op: impl Fn(u32) -> String) -> SimError {
        let mut loss = self.loss;
        loss.destroyed_by = self.op.map(describe_op);
        SimError::DataLoss(Box::new(loss))
    }
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
            + self.nondurable.heap_bytes()
            + self.uncertain.capacity() as u64 * entry
            + (self.old.capacity() * std::mem::size_of::<Token>()) as u64
            + (self.scratch.capacity() * std::mem::size_of::<Run>()) as u64
    }

    /// Host LBAs written at least once (each counted once).
    pub fn written_sectors(&self) -> u64 {
        let mut n = 0;
        self.expected.filled(|_, k| n += k);
        n
    }

    /// A write was acknowledged; `durable` says whether it reached the
    /// medium. `data` holds its tokens, each a version newer than any the
    /// LBA had.
    pub fn acknowledge(&mut self, data: &[Token], durable: bool) {
        let Some(first) = data.first() else {
            return;
        };
        if durable {
            if !self.nondurable.is_empty() {
                self.nondurable.durable(data, false);
            }
        } else {
            // The durable version of an LBA first cached is the one it had.
            let mut old = std::mem::take(&mut self.old);
            old.clear();
            self.expected.read(first.lba, data.len() as u64, &mut old);
            self.nondurable.cached(data, &old);
            self.old = old;
        }
        self.expected.write(first.lba, data, &mut self.scratch);
    }

    /// Cached data reached the medium: LBAs whose newest version it is are durable.
    pub fn made_durable(&mut self, data: &[Token]) {
        if !self.nondurable.is_empty() {
            self.nondurable.durable(data, true);
        }
    }

    /// The write cache destaged `[lba, lba + n)`: what it held there, the
    /// newest version of each LBA (nothing is acknowledged between taking a
    /// batch and writing it), is durable. [`made_durable`](Self::made_durable)
    /// without a look at each token.
    pub fn destaged(&mut self, lba: u64, n: u64) {
        if !self.nondurable.is_empty() {
            self.nondurable.durable_range(lba, n);
        }
    }

    /// A power loss: every non-durable LBA may now hold its durable version
    /// or any newer one; `in_flight` (an unacknowledged write) likewise.
    pub fn crash(&mut self, in_flight: &[Token]) {
        let nondurable: Vec<_> = self.nondurable.drain().collect();
        self.uncertain.extend(nondurable);
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
    ) -> Result<(), Mismatch> {
        // Most reads are right: confirm that a run at a time, and look
        // closely (decoding the expected versions) only from the first
        // sector that is not plainly right, or at LBAs a crash left uncertain.
        let settling = settle && !self.uncertain.is_empty();
        let skip = if settling {
            0
        } else {
            self.expected.plainly_right(lba, got, self.start.is_some())
        };
        if skip == got.len() {
            return Ok(());
        }
        let rest = &got[skip..];
        let at = lba + skip as u64;
        let mut want = std::mem::take(&mut self.old);
        want.clear();
        self.expected.read(at, rest.len() as u64, &mut want);
        let r = self.check_against(at, rest, &want, during, settle);
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
    ) -> Result<(), Mismatch> {
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
                    let now = Row::token(l, version(t));
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
                return Err(Mismatch {
                    loss: DataLoss {
                        lba: l,
                        expected: expected_desc.1,
                        found,
                        during: during.to_string(),
                        destroyed_by: None,
                    },
                    op: t.destroyed_by(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap as Map;

    /// The oracle as it was before its maps were run-length encoded: one
    /// entry per LBA. The property test holds the new one to it.
    #[derive(Default)]
    struct Plain {
        expected: Map<u64, u32>,
        nondurable: Map<u64, u32>,
    }

    impl Plain {
        fn expected(&self, l: u64) -> u32 {
            self.expected.get(&l).copied().unwrap_or(0)
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Write(u64, u64, bool),
        Destage(u64, u64),
        DestageRange(u64, u64),
        Read(u64, u64, Option<(usize, u8)>),
        Crash,
    }

    fn op() -> impl Strategy<Value = Op> {
        // LBAs around chunk boundaries (CHUNK = 1024, ND_CHUNK = 16).
        let lba = prop_oneof![0u64..40, 240u64..280, 1000u64..1050];
        prop_oneof![
            4 => (lba.clone(), 1u64..40, any::<bool>()).prop_map(|(l, n, d)| Op::Write(l, n, d)),
            2 => (lba.clone(), 1u64..40).prop_map(|(l, n)| Op::Destage(l, n)),
            2 => (lba.clone(), 1u64..40).prop_map(|(l, n)| Op::DestageRange(l, n)),
            3 => (lba, 1u64..40, proptest::option::of((0usize..40, 0u8..3)))
                .prop_map(|(l, n, c)| Op::Read(l, n, c)),
            1 => Just(Op::Crash),
        ]
    }

    fn token(l: u64, v: u32) -> Token {
        if v == 0 {
            Token::EMPTY
        } else {
            Token::data(Lba(l), v)
        }
    }

    proptest! {
        /// Versions, durability, checks and crashes agree with the plain
        /// per-LBA oracle, and the footprint is the LBAs it knows.
        #[test]
        fn agrees_with_a_per_lba_oracle(
            ops in proptest::collection::vec(op(), 1..60),
            dense_at in prop_oneof![Just(0usize), 1usize..8, Just(DENSE_AT)],
        ) {
            let mut o = Oracle::new(None);
            // Rows turn dense after a few runs (0: at once), or as in a run.
            o.expected.dense_at = dense_at;
            let mut p = Plain::default();
            // Each write's serial number is its tokens' version.
            let mut serial = 0u32;
            for op in ops {
                match op {
                    Op::Write(lba, n, durable) => {
                        serial += 1;
                        let data: Vec<Token> = (lba..lba + n).map(|l| Token::data(Lba(l), serial)).collect();
                        o.acknowledge(&data, durable);
                        for t in &data {
                            let old = p.expected.insert(t.lba, t.ver).unwrap_or(0);
                            if durable {
                                p.nondurable.remove(&t.lba);
                            } else {
                                p.nondurable.entry(t.lba).or_insert(old);
                            }
                        }
                    }
                    Op::Destage(lba, n) => {
                        // The newest versions reach the medium.
                        let data: Vec<Token> = (lba..lba + n)
                            .filter(|&l| p.expected(l) > 0)
                            .map(|l| Token::data(Lba(l), p.expected(l)))
                            .collect();
                        o.made_durable(&data);
                        for t in &data {
                            p.nondurable.remove(&t.lba);
                        }
                    }
                    Op::DestageRange(lba, n) => {
                        // The write cache's destage: the newest versions of
                        // the whole range reach the medium.
                        o.destaged(lba, n);
                        for l in lba..lba + n {
                            p.nondurable.remove(&l);
                        }
                    }
                    Op::Read(lba, n, corrupt) => {
                        let mut got: Vec<Token> = (lba..lba + n).map(|l| token(l, p.expected(l))).collect();
                        let mut bad = false;
                        if let Some((i, kind)) = corrupt {
                            let i = i % got.len();
                            let l = lba + i as u64;
                            let v = p.expected(l);
                            got[i] = match kind {
                                0 => token(l, v + 1),
                                1 => Token::destroyed(3),
                                _ if v > 0 => token(l, v - 1),
                                _ => Token::data(Lba(l + 1), 1),
                            };
                            bad = true;
                        }
                        let r = o.check(lba, &got, "a test", false);
                        prop_assert_eq!(r.is_err(), bad);
                    }
                    Op::Crash => {
                        o.crash(&[]);
                        // Every LBA reads back at its durable version, and settles there.
                        let lbas: Vec<u64> = p.expected.keys().copied().collect();
                        for l in lbas {
                            let durable = p.nondurable.get(&l).copied().unwrap_or(p.expected(l));
                            // An LBA durable at its newest version may not
                            // come back older (the crash must not have
                            // widened what it accepts).
                            if !p.nondurable.contains_key(&l) && durable > 0 {
                                let r = o.check(l, &[token(l, durable - 1)], "a scan", true);
                                prop_assert!(r.is_err(), "LBA {} durable at version {} read back older", l, durable);
                            }
                            let r = o.check(l, &[token(l, durable)], "a scan", true);
                            prop_assert!(r.is_ok(), "LBA {} at durable version {}: {:?}", l, durable, r);
                            if durable == 0 {
                                p.expected.remove(&l);
                            } else {
                                p.expected.insert(l, durable);
                            }
                        }
                        p.nondurable.clear();
                    }
                }
                let mut lbas: Vec<u64> = p.expected.keys().copied().collect();
                lbas.sort_unstable();
                let fp: Vec<u64> = o.footprint().iter().flat_map(|&(s, n)| s..s + n).collect();
                prop_assert_eq!(&fp, &lbas);
                prop_assert_eq!(o.written_sectors(), lbas.len() as u64);
            }
        }
    }
}
