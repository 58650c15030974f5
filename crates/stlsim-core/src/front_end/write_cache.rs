//! The drive's DRAM write cache. Writes complete once cached; cached data is
//! coalesced (a newer write to cached sectors replaces them, so the cache
//! holds only the newest data) and destaged through the layer, when the
//! device is idle or when space is needed, one home track at a time: the
//! track that became dirty first goes first, with every cached extent on it,
//! so a layer can coalesce writes that were queued together.
//!
//! Volatile: a power loss drops the whole cache (no power-loss protection).
//!
//! Organised by home logical track (a hash map of small sorted extent lists)
//! so that each host request costs a few hash look-ups, not tree searches.
//! A track's extents never touch (a write merges with what it overlaps or
//! touches), so a cached range is always inside one extent. A filter of
//! LBA regions (`Regions`) answers most look-ups that would find nothing.

use crate::geometry::Geometry;
use crate::medium::Token;
use crate::units::Lba;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::collections::VecDeque;
use std::sync::Arc;

/// Room for extents a new track list starts with. The lists are reused
/// (see `WriteCache::spare`), so each grows a few times at most; starting
/// at 8 rather than Vec's 4 keeps random small writes (a few extents a
/// track) from growing every list of a large cache once more, which a run
/// would do for a long time after its warm-up.
const EXTENTS_AT_FIRST: usize = 8;

/// One cached extent (within one home track).
#[derive(Clone, Debug, PartialEq)]
pub struct Extent {
    /// First host LBA of the extent.
    pub lba: u64,
    /// Sectors in the extent (it never crosses its home track's end).
    pub len: u64,
    /// Tokens when data is carried.
    pub data: Vec<Token>,
}

#[derive(Debug, Default)]
struct TrackEntry {
    seq: u64,
    /// The first LBA past the track (where the next one starts).
    end: u64,
    extents: Vec<Extent>,
}

/// Slots of the [`Regions`] filter (a power of two): 16 KiB of counts.
const REGION_SLOTS: usize = 4096;

/// Which stretches of LBAs may hold cached data: the LBAs cut into regions
/// of a power of two at least a track long, hashed onto a small table
/// counting the dirty tracks that meet each. A read finding its regions'
/// counts zero skips the track search and the hash look-up: in a CMR run
/// nine reads in ten look for cached data where there is none, and the
/// track search alone (the home map's walk) cost more than the look-up.
/// Never wrong the other way: a region another one's tracks share a slot
/// with only costs the full look-up.
#[derive(Debug)]
struct Regions {
    shift: u32,
    counts: Box<[u32]>,
}

impl Regions {
    /// Regions at least `track` LBAs long.
    fn new(track: u64) -> Regions {
        Regions {
            shift: track.max(1).next_power_of_two().trailing_zeros(),
            counts: vec![0; REGION_SLOTS].into_boxed_slice(),
        }
    }

    /// The slots of the two regions that hold every LBA of the track
    /// ending at `end` (it is at most a region long).
    #[inline]
    fn of_track(&self, end: u64) -> [usize; 2] {
        let last = (end - 1) >> self.shift;
        [last.saturating_sub(1), last].map(|r| r as usize & (REGION_SLOTS - 1))
    }

    /// A track ending at `end` became dirty.
    #[inline]
    fn add(&mut self, end: u64) {
        for i in self.of_track(end) {
            self.counts[i] += 1;
        }
    }

    /// A track ending at `end` is clean again.
    #[inline]
    fn remove(&mut self, end: u64) {
        for i in self.of_track(end) {
            self.counts[i] -= 1;
        }
    }

    /// Whether a dirty track may hold any of `[lba, lba+len)`.
    #[inline]
    fn may_hold(&self, lba: u64, len: u64) -> bool {
        let (first, last) = (lba >> self.shift, (lba + len.max(1) - 1) >> self.shift);
        if last - first >= REGION_SLOTS as u64 {
            return true;
        }
        (first..=last).any(|r| self.counts[r as usize & (REGION_SLOTS - 1)] != 0)
    }

    fn clear(&mut self) {
        self.counts.fill(0);
    }
}

/// The drive's volatile DRAM write cache: coalesced host writes by home
/// track, destaged oldest-dirtied track first.
#[derive(Debug)]
pub struct WriteCache {
    capacity: u64,
    used: u64,
    next_seq: u64,
    geom: Arc<Geometry>,
    tracks: FxHashMap<u64, TrackEntry>,
    regions: Regions,
    /// `(seq, logical track)` in dirtying order; an entry is stale once its track was destaged.
    age: VecDeque<(u64, u64)>,
    /// Empty extent lists of destaged tracks, reused for tracks that become
    /// dirty (no allocation per destage in steady state). Lists only move
    /// between here, the tracks and the caller's batch, so there are never
    /// more than the most tracks ever dirty at once, plus one.
    spare: Vec<Vec<Extent>>,
    /// Token buffers of destaged extents, handed out again for new writes
    /// (verification carries a token per sector; no allocation per write).
    spare_data: Vec<Vec<Token>>,
}

/// Remove `[lo, hi)` from a sorted extent list; returns the sectors removed.
/// Edits the list in place (no new list per punch: this runs on every cached
/// write that overlaps cached data).
fn punch_list(list: &mut Vec<Extent>, lo: u64, hi: u64, spare: &mut Vec<Vec<Token>>) -> u64 {
    // Extents are sorted and disjoint, so their ends are sorted too.
    let first = list.partition_point(|e| e.lba + e.len <= lo);
    if first == list.len() || list[first].lba >= hi {
        return 0;
    }
    // Extents `[first, last)` meet `[lo, hi)`.
    let last = first + list[first..].partition_point(|e| e.lba < hi);
    let removed = list[first..last]
        .iter()
        .map(|e| (e.lba + e.len).min(hi) - e.lba.max(lo))
        .sum();
    let (head, tail) = (list[first].lba < lo, {
        let e = &list[last - 1];
        e.lba + e.len > hi
    });
    if head && tail && last == first + 1 {
        // One extent loses its middle: it keeps its head, its tail follows it.
        let e = &mut list[first];
        let end = e.lba + e.len;
        let data = if e.data.is_empty() {
            vec![]
        } else {
            let mut t = spare_buffer(spare, e.data.len() - (hi - e.lba) as usize);
            t.extend_from_slice(&e.data[(hi - e.lba) as usize..]);
            e.data.truncate((lo - e.lba) as usize);
            t
        };
        e.len = lo - e.lba;
        list.insert(
            first + 1,
            Extent {
                lba: hi,
                len: end - hi,
                data,
            },
        );
        return removed;
    }
    let (mut a, mut b) = (first, last);
    if head {
        let e = &mut list[first];
        e.len = lo - e.lba;
        e.data.truncate(e.len as usize);
        a += 1;
    }
    if tail {
        let e = &mut list[last - 1];
        let off = (hi - e.lba) as usize;
        if !e.data.is_empty() {
            e.data.drain(..off);
        }
        e.len = e.lba + e.len - hi;
        e.lba = hi;
        b -= 1;
    }
    for e in list.drain(a..b) {
        keep_buffer(spare, e.data);
    }
    removed
}

/// Spare token buffers kept at most (enough for a full batch of a full
/// cache); beyond that they are dropped.
const KEEP_BUFFERS: usize = 4096;

/// A spare token buffer, empty, for `n` tokens. Verified runs carry every
/// cached sector's token, and buffers dropped where extents merged or were
/// overwritten and allocated afresh for the next write were 2 % of such a
/// run's instructions (malloc, free and realloc).
fn spare_buffer(spare: &mut Vec<Vec<Token>>, n: usize) -> Vec<Token> {
    match spare.pop() {
        Some(d) if d.capacity() >= n => d,
        Some(mut d) => {
            d.reserve(n);
            d
        }
        None => Vec::with_capacity(n),
    }
}

/// Keep `d` as a spare token buffer (emptied), if it holds any room.
fn keep_buffer(spare: &mut Vec<Vec<Token>>, mut d: Vec<Token>) {
    if d.capacity() > 0 && spare.len() < KEEP_BUFFERS {
        d.clear();
        spare.push(d);
    }
}

/// Write `[lo, hi)` (tokens `data`, or none) into a sorted list of
/// disjoint extents that never touch: the extents it overlaps or touches
/// become one with it, so sequential writes stay one extent (short lists,
/// and one coalesced write when destaged). Returns the sectors it replaced.
///
/// One search and at most one move of the list's tail: a rewrite of cached
/// sectors was a punch (a search, an edit) and then an insertion (another
/// search, a merge with each neighbour, each a move of the tail).
fn write_list(
    list: &mut Vec<Extent>,
    lo: u64,
    hi: u64,
    mut data: Vec<Token>,
    spare: &mut Vec<Vec<Token>>,
) -> u64 {
    // The first extent ending at or after `lo`; ends are sorted as starts are.
    let first = list.partition_point(|e| e.lba + e.len < lo);
    if first == list.len() {
        list.push(Extent {
            lba: lo,
            len: hi - lo,
            data,
        });
        return 0;
    }
    // Extents `[first, last)` overlap or touch `[lo, hi)`.
    let last = first + list[first..].partition_point(|e| e.lba <= hi);
    if last == first {
        list.insert(
            first,
            Extent {
                lba: lo,
                len: hi - lo,
                data,
            },
        );
        return 0;
    }
    let removed = list[first..last]
        .iter()
        .map(|e| (e.lba + e.len).min(hi).saturating_sub(e.lba.max(lo)))
        .sum();
    let tail = &list[last - 1];
    let end = (tail.lba + tail.len).max(hi);
    if !data.is_empty() && tail.lba + tail.len > hi {
        data.extend_from_slice(&tail.data[(hi - tail.lba) as usize..]);
    }
    let e = &mut list[first];
    if e.lba < lo {
        e.data.truncate((lo - e.lba) as usize);
        e.data.extend_from_slice(&data);
        keep_buffer(spare, data);
    } else {
        e.lba = lo;
        keep_buffer(spare, std::mem::replace(&mut e.data, data));
    }
    e.len = end - e.lba;
    if last > first + 1 {
        for e in list.drain(first + 1..last) {
            keep_buffer(spare, e.data);
        }
    }
    removed
}

/// Call `f(logical track, lo, hi)` for each home-track piece of `[lba, lba+len)`.
#[inline]
fn pieces(geom: &Geometry, lba: u64, len: u64, mut f: impl FnMut(u64, u64, u64)) {
    let end = lba + len;
    let mut cur = lba;
    while cur < end {
        let (lt, next) = track_of(geom, cur);
        let hi = end.min(next);
        f(lt, cur, hi);
        cur = hi;
    }
}

/// The logical track holding `lba`, and the LBA its next one starts at.
#[inline]
fn track_of(geom: &Geometry, lba: u64) -> (u64, u64) {
    let lt = geom.logical_track_of(Lba(lba));
    (lt, geom.logical_track_start(lt + 1).0)
}

impl WriteCache {
    /// A cache holding up to `capacity` sectors of a drive with geometry `geom`.
    pub fn new(capacity: u64, geom: Arc<Geometry>) -> WriteCache {
        WriteCache {
            capacity,
            used: 0,
            next_seq: 0,
            tracks: FxHashMap::default(),
            regions: Regions::new(u64::from(geom.max_home_sectors_per_track())),
            age: VecDeque::new(),
            spare: Vec::new(),
            spare_data: Vec::new(),
            geom,
        }
    }

    /// An empty token buffer with room for `n` tokens (a destaged
    /// extent's, when the last one kept is big enough: growing a small one
    /// would cost a copy as well as the allocation).
    pub fn data_buffer(&mut self, n: usize) -> Vec<Token> {
        spare_buffer(&mut self.spare_data, n)
    }

    /// Keep a token buffer for [`data_buffer`](Self::data_buffer).
    pub fn recycle_data(&mut self, d: Vec<Token>) {
        keep_buffer(&mut self.spare_data, d);
    }
    /// Capacity in sectors (0: no cache).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// Sectors cached, each counted once however often it was rewritten.
    pub fn used(&self) -> u64 {
        self.used
    }
    /// Whether no sector is cached (nothing left to destage).
    pub fn is_empty(&self) -> bool {
        self.tracks.is_empty()
    }
    /// Whether `n` more sectors fit without destaging.
    pub fn fits(&self, n: u64) -> bool {
        self.used + n <= self.capacity
    }

    /// Drop every cached extent (power loss).
    pub fn clear(&mut self) {
        self.tracks.clear();
        self.regions.clear();
        self.age.clear();
        self.used = 0;
    }

    /// Drop cached data that a write bypassing the cache supersedes.
    pub fn invalidate(&mut self, lba: u64, len: u64) {
        if self.used == 0 || !self.regions.may_hold(lba, len) {
            return;
        }
        let mut removed = 0;
        let (tracks, regions, spare, spare_data) = (
            &mut self.tracks,
            &mut self.regions,
            &mut self.spare,
            &mut self.spare_data,
        );
        pieces(&self.geom, lba, len, |lt, lo, hi| {
            if let Some(t) = tracks.get_mut(&lt) {
                removed += punch_list(&mut t.extents, lo, hi, spare_data);
                if t.extents.is_empty() {
                    let t = tracks.remove(&lt).expect("present");
                    regions.remove(t.end);
                    spare.push(t.extents);
                }
            }
        });
        self.used -= removed;
    }

    /// Cache a write of `len` > 0 sectors (the caller has made room).
    /// `data` is empty or one token per sector.
    pub fn insert(&mut self, lba: u64, len: u64, data: Vec<Token>) {
        debug_assert!(len > 0 && (data.is_empty() || data.len() as u64 == len));
        let end = lba + len;
        let (mut lt, mut next) = track_of(&self.geom, lba);
        if end <= next {
            // Most writes stay on one track: no pieces to copy out.
            let removed = self.write_track(lt, next, lba, end, data);
            self.used = self.used + len - removed;
            return;
        }
        let mut cur = lba;
        loop {
            let hi = end.min(next);
            let mut piece = vec![];
            if !data.is_empty() {
                piece = spare_buffer(&mut self.spare_data, (hi - cur) as usize);
                piece.extend_from_slice(&data[(cur - lba) as usize..(hi - lba) as usize]);
            }
            let removed = self.write_track(lt, next, cur, hi, piece);
            self.used = self.used + (hi - cur) - removed;
            if hi >= end {
                break;
            }
            cur = hi;
            (lt, next) = track_of(&self.geom, cur);
        }
        // Split over tracks: the pieces were copied out of it.
        keep_buffer(&mut self.spare_data, data);
    }

    /// Write `[lo, hi)`, all on logical track `lt` (which ends at `end`),
    /// into that track's extents (the track becoming dirty now if it was
    /// clean); returns the sectors it replaced.
    #[inline]
    fn write_track(&mut self, lt: u64, end: u64, lo: u64, hi: u64, data: Vec<Token>) -> u64 {
        debug_assert!(
            end - self.geom.logical_track_start(lt).0 <= 1 << self.regions.shift,
            "logical track {lt} is longer than a region ({} sectors)",
            1u64 << self.regions.shift
        );
        let (age, next_seq, spare, regions) = (
            &mut self.age,
            &mut self.next_seq,
            &mut self.spare,
            &mut self.regions,
        );
        let t = self.tracks.entry(lt).or_insert_with(|| {
            *next_seq += 1;
            age.push_back((*next_seq, lt));
            regions.add(end);
            TrackEntry {
                seq: *next_seq,
                end,
                extents: spare
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(EXTENTS_AT_FIRST)),
            }
        });
        write_list(&mut t.extents, lo, hi, data, &mut self.spare_data)
    }

    /// Whether `[lba, lba+len)` is entirely cached.
    pub fn covers(&self, lba: u64, len: u64) -> bool {
        if !self.regions.may_hold(lba, len) {
            return len == 0;
        }
        let mut all = true;
        pieces(&self.geom, lba, len, |lt, lo, hi| {
            // A track's extents never touch, so one extent holds the piece or none does.
            all = all
                && self.tracks.get(&lt).is_some_and(|t| {
                    let i = t.extents.partition_point(|e| e.lba + e.len <= lo);
                    t.extents
                        .get(i)
                        .is_some_and(|e| e.lba <= lo && e.lba + e.len >= hi)
                });
        });
        all
    }

    /// Whether any sector of `[lba, lba+len)` is cached.
    pub fn overlaps(&self, lba: u64, len: u64) -> bool {
        if !self.regions.may_hold(lba, len) {
            return false;
        }
        let mut any = false;
        pieces(&self.geom, lba, len, |lt, lo, hi| {
            if let Some(t) = self.tracks.get(&lt) {
                any |= t.extents.iter().any(|e| e.lba < hi && e.lba + e.len > lo);
            }
        });
        any
    }

    /// Overlay cached tokens onto `out` (tokens of `[lba, lba+len)`).
    pub fn overlay(&self, lba: u64, len: u64, out: &mut [Token]) {
        if !self.regions.may_hold(lba, len) {
            return;
        }
        pieces(&self.geom, lba, len, |lt, lo, hi| {
            let Some(t) = self.tracks.get(&lt) else {
                return;
            };
            for e in &t.extents {
                let a = e.lba.max(lo);
                let b = (e.lba + e.len).min(hi);
                if a >= b || e.data.is_empty() {
                    continue;
                }
                out[(a - lba) as usize..(b - lba) as usize]
                    .copy_from_slice(&e.data[(a - e.lba) as usize..(b - e.lba) as usize]);
            }
        });
    }

    /// Take the next destage batch into `out` (cleared first): every cached
    /// extent of the track that became dirty first, in LBA order.
    pub fn take_batch_into(&mut self, out: &mut Vec<Extent>) {
        for e in out.drain(..) {
            self.recycle_data(e.data);
        }
        while let Some((seq, lt)) = self.age.pop_front() {
            // A track cleaned by an invalidation, or dirty again since, left this entry stale.
            if let Entry::Occupied(o) = self.tracks.entry(lt) {
                if o.get().seq != seq {
                    continue;
                }
                let mut t = o.remove();
                self.regions.remove(t.end);
                self.used -= t.extents.iter().map(|e| e.len).sum::<u64>();
                // The batch takes the track's list; the caller's old (cleared)
                // list is kept for the next track that becomes dirty.
                std::mem::swap(out, &mut t.extents);
                self.spare.push(t.extents);
                return;
            }
        }
    }

    /// [`take_batch_into`](Self::take_batch_into) returning a new vector.
    pub fn take_batch(&mut self) -> Vec<Extent> {
        let mut v = vec![];
        self.take_batch_into(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::drive::DriveConfig;

    fn cache(capacity: u64) -> WriteCache {
        // 100-sector tracks.
        let d = DriveConfig {
            track_bytes: 100 * 4096,
            tracks: Some(100),
            capacity_gib: None,
            ..Default::default()
        };
        WriteCache::new(capacity, Arc::new(d.geometry().unwrap()))
    }

    fn toks(lba: u64, n: u64, ver: u32) -> Vec<Token> {
        (0..n).map(|i| Token::data(Lba(lba + i), ver)).collect()
    }

    /// What the cache must hold, sector by sector: each cached sector's
    /// token, and for each track holding any, when it became dirty.
    #[derive(Default)]
    struct Model {
        sectors: std::collections::BTreeMap<u64, Token>,
        dirty_since: std::collections::BTreeMap<u64, u64>,
        next: u64,
    }

    /// 100-sector tracks, as `cache` builds them.
    const TRACK: u64 = 100;

    impl Model {
        fn write(&mut self, lba: u64, toks: &[Token]) {
            for (i, t) in toks.iter().enumerate() {
                let s = lba + i as u64;
                if !self.dirty_since.contains_key(&(s / TRACK)) {
                    self.next += 1;
                    self.dirty_since.insert(s / TRACK, self.next);
                }
                self.sectors.insert(s, *t);
            }
        }
        fn drop_range(&mut self, lba: u64, len: u64) {
            for s in lba..lba + len {
                self.sectors.remove(&s);
            }
            let live: std::collections::BTreeSet<u64> =
                self.sectors.keys().map(|s| s / TRACK).collect();
            self.dirty_since.retain(|t, _| live.contains(t));
        }
        /// The oldest dirty track's sectors as maximal runs.
        fn batch(&mut self) -> Vec<(u64, u64, Vec<Token>)> {
            let Some((&lt, _)) = self.dirty_since.iter().min_by_key(|(_, &seq)| seq) else {
                return vec![];
            };
            let mut runs: Vec<(u64, u64, Vec<Token>)> = vec![];
            for (&s, &t) in self.sectors.range(lt * TRACK..(lt + 1) * TRACK) {
                match runs.last_mut() {
                    Some(r) if r.0 + r.1 == s => {
                        r.1 += 1;
                        r.2.push(t);
                    }
                    _ => runs.push((s, 1, vec![t])),
                }
            }
            self.drop_range(lt * TRACK, TRACK);
            runs
        }
    }

    proptest::proptest! {
        /// The cache against a plain map of sectors: what it holds, covers,
        /// overlaps and overlays, and each destage batch (the oldest dirty
        /// track, its sectors as maximal runs, with their tokens when they
        /// are carried), after any mix of writes, invalidations and batches.
        #[test]
        fn cache_matches_a_map_of_sectors(
            carry in proptest::bool::ANY,
            ops in proptest::collection::vec((0u8..8, 0u64..740, 1u64..260), 1..120),
        ) {
            let mut c = cache(100_000);
            let mut m = Model::default();
            let mut ver = 0;
            for (op, lba, len) in ops {
                match op {
                    0..=3 => {
                        ver += 1;
                        let t = toks(lba, len, ver);
                        m.write(lba, &t);
                        c.insert(lba, len, if carry { t } else { vec![] });
                    }
                    4 => {
                        m.drop_range(lba, len);
                        c.invalidate(lba, len);
                    }
                    5 => {
                        let want = m.batch();
                        let got: Vec<_> = c
                            .take_batch()
                            .into_iter()
                            .map(|e| (e.lba, e.len, e.data))
                            .collect();
                        let want: Vec<_> = want
                            .into_iter()
                            .map(|(a, n, d)| (a, n, if carry { d } else { vec![] }))
                            .collect();
                        proptest::prop_assert_eq!(got, want);
                    }
                    _ => {
                        let n = len.max(1);
                        let held = (lba..lba + n).filter(|s| m.sectors.contains_key(s)).count() as u64;
                        proptest::prop_assert_eq!(c.covers(lba, n), held == n);
                        proptest::prop_assert_eq!(c.overlaps(lba, n), held > 0);
                        if carry {
                            let mut out = vec![Token::EMPTY; n as usize];
                            c.overlay(lba, n, &mut out);
                            for (i, t) in out.iter().enumerate() {
                                let want = m.sectors.get(&(lba + i as u64)).copied().unwrap_or(Token::EMPTY);
                                proptest::prop_assert_eq!(*t, want);
                            }
                        }
                    }
                }
                proptest::prop_assert_eq!(c.used(), m.sectors.len() as u64);
                proptest::prop_assert_eq!(c.is_empty(), m.sectors.is_empty());
            }
            while !m.sectors.is_empty() {
                let want = m.batch().into_iter().map(|(a, n, _)| (a, n)).collect::<Vec<_>>();
                let got = c.take_batch().into_iter().map(|e| (e.lba, e.len)).collect::<Vec<_>>();
                proptest::prop_assert_eq!(got, want);
            }
            proptest::prop_assert!(c.is_empty());
        }
    }

    #[test]
    fn newer_writes_replace_cached_sectors() {
        let mut c = cache(1000);
        c.insert(10, 10, toks(10, 10, 1));
        c.insert(14, 2, toks(14, 2, 2));
        assert_eq!(c.used(), 10);
        assert!(c.covers(10, 10));
        assert!(!c.covers(9, 2));
        assert!(c.overlaps(5, 6));
        assert!(!c.overlaps(20, 5));
        let mut out = vec![Token::EMPTY; 10];
        c.overlay(10, 10, &mut out);
        assert_eq!(out[3], Token::data(Lba(13), 1));
        assert_eq!(out[4], Token::data(Lba(14), 2));
        assert_eq!(out[6], Token::data(Lba(16), 1));
    }

    #[test]
    fn batches_come_a_track_at_a_time_oldest_first() {
        let mut c = cache(1000);
        c.insert(500, 4, vec![]);
        c.insert(100, 4, vec![]);
        c.insert(120, 4, vec![]);
        c.insert(900, 4, vec![]);
        c.insert(510, 2, vec![]);
        let lbas = |b: Vec<Extent>| b.iter().map(|e| e.lba).collect::<Vec<_>>();
        assert_eq!(lbas(c.take_batch()), vec![500, 510]);
        assert_eq!(lbas(c.take_batch()), vec![100, 120]);
        assert_eq!(c.used(), 4);
        assert_eq!(lbas(c.take_batch()), vec![900]);
        assert!(c.is_empty());
        assert!(c.take_batch().is_empty());
    }

    #[test]
    fn sequential_writes_merge_into_one_extent() {
        let mut c = cache(1000);
        for i in 0..10 {
            c.insert(210 + 3 * i, 3, vec![]);
        }
        c.insert(205, 5, vec![]);
        let b = c.take_batch();
        assert_eq!(
            b.iter().map(|e| (e.lba, e.len)).collect::<Vec<_>>(),
            vec![(205, 35)]
        );
        assert_eq!(c.used(), 0);
    }

    #[test]
    fn writes_spanning_tracks_are_split_and_punches_keep_both_halves() {
        let mut c = cache(1000);
        c.insert(50, 100, toks(50, 100, 1));
        assert_eq!(c.used(), 100);
        assert!(c.covers(50, 100));
        c.insert(60, 10, toks(60, 10, 2));
        assert_eq!(c.used(), 100);
        let b = c.take_batch();
        // The overwrite touches both remaining pieces, so the three merge back into one extent.
        assert_eq!(
            b.iter().map(|e| (e.lba, e.len)).collect::<Vec<_>>(),
            vec![(50, 50)]
        );
        assert_eq!(b[0].data[9], Token::data(Lba(59), 1));
        assert_eq!(b[0].data[10], Token::data(Lba(60), 2));
        assert_eq!(b[0].data[20], Token::data(Lba(70), 1));
        c.invalidate(100, 50);
        assert!(c.is_empty());
        assert_eq!(c.used(), 0);
    }
}
