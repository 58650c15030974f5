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

use crate::geometry::Geometry;
use crate::medium::Token;
use crate::units::Lba;
use rustc_hash::FxHashMap;
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
    /// First LBA.
    pub lba: u64,
    /// Length in sectors.
    pub len: u64,
    /// When its track became dirty (destage order).
    pub seq: u64,
    /// Tokens when data is carried.
    pub data: Vec<Token>,
}

#[derive(Debug, Default)]
struct TrackEntry {
    seq: u64,
    extents: Vec<Extent>,
}

/// The write cache.
#[derive(Debug)]
pub struct WriteCache {
    capacity: u64,
    used: u64,
    next_seq: u64,
    geom: Arc<Geometry>,
    tracks: FxHashMap<u64, TrackEntry>,
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
        let seq = e.seq;
        list.insert(
            first + 1,
            Extent {
                lba: hi,
                len: end - hi,
                seq,
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

/// Insert an extent into a sorted, disjoint list that has room for it,
/// merging it with neighbours it touches so that sequential writes stay one
/// extent (short lists, and one coalesced write when destaged).
// The extent comes as its fields and is built only where it is stored: built
// first and moved in, its 8-byte fields were read back in 16-byte pieces,
// which missed store forwarding (an eighth of `insert`'s samples).
fn insert_merging(
    list: &mut Vec<Extent>,
    lba: u64,
    mut len: u64,
    seq: u64,
    mut data: Vec<Token>,
    spare: &mut Vec<Vec<Token>>,
) {
    let at = list.partition_point(|x| x.lba < lba);
    if at < list.len() && list[at].lba == lba + len {
        let next = list.remove(at);
        len += next.len;
        data.extend_from_slice(&next.data);
        keep_buffer(spare, next.data);
    }
    if at > 0 && list[at - 1].lba + list[at - 1].len == lba {
        let prev = &mut list[at - 1];
        prev.len += len;
        prev.data.extend_from_slice(&data);
        keep_buffer(spare, data);
        return;
    }
    list.insert(
        at,
        Extent {
            lba,
            len,
            seq,
            data,
        },
    );
}

/// Call `f(logical track, lo, hi)` for each home-track piece of `[lba, lba+len)`.
#[inline]
fn pieces(geom: &Geometry, lba: u64, len: u64, f: impl FnMut(u64, u64, u64)) {
    if len > 0 {
        pieces_from(geom, track_of(geom, lba), lba, len, f)
    }
}

/// The logical track holding `lba`, and the LBA its next one starts at.
#[inline]
fn track_of(geom: &Geometry, lba: u64) -> (u64, u64) {
    let lt = geom.logical_track_of(Lba(lba));
    (lt, geom.logical_track_start(lt + 1).0)
}

/// [`pieces`] with the first LBA's [`track_of`] found already (`len` > 0).
#[inline]
fn pieces_from(
    geom: &Geometry,
    first: (u64, u64),
    lba: u64,
    len: u64,
    mut f: impl FnMut(u64, u64, u64),
) {
    let end = lba + len;
    let (mut lt, mut next) = first;
    let mut cur = lba;
    loop {
        let hi = end.min(next);
        f(lt, cur, hi);
        cur = hi;
        if cur >= end {
            return;
        }
        (lt, next) = track_of(geom, cur);
    }
}

impl WriteCache {
    /// A cache holding up to `capacity` sectors of a drive with geometry `geom`.
    pub fn new(capacity: u64, geom: Arc<Geometry>) -> WriteCache {
        WriteCache {
            capacity,
            used: 0,
            next_seq: 0,
            geom,
            tracks: FxHashMap::default(),
            age: VecDeque::new(),
            spare: Vec::new(),
            spare_data: Vec::new(),
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
    /// Sectors held.
    pub fn used(&self) -> u64 {
        self.used
    }
    /// Nothing cached.
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
        self.age.clear();
        self.used = 0;
    }

    /// Drop cached data that a write bypassing the cache supersedes.
    pub fn invalidate(&mut self, lba: u64, len: u64) {
        if self.used == 0 {
            return;
        }
        let mut removed = 0;
        let (tracks, spare, spare_data) = (&mut self.tracks, &mut self.spare, &mut self.spare_data);
        pieces(&self.geom, lba, len, |lt, lo, hi| {
            if let Some(t) = tracks.get_mut(&lt) {
                removed += punch_list(&mut t.extents, lo, hi, spare_data);
                if t.extents.is_empty() {
                    spare.push(tracks.remove(&lt).expect("present").extents);
                }
            }
        });
        self.used -= removed;
    }

    /// Cache a write (the caller has made room). `data` is empty or one token per sector.
    pub fn insert(&mut self, lba: u64, len: u64, data: Vec<Token>) {
        let carries = !data.is_empty();
        let mut added = 0;
        let mut removed = 0;
        let (tracks, age, next_seq, spare, spare_data) = (
            &mut self.tracks,
            &mut self.age,
            &mut self.next_seq,
            &mut self.spare,
            &mut self.spare_data,
        );
        let mut data = Some(data);
        // Borrowed beside the fields the walk changes (a clone of the
        // handle cost two atomic operations per write).
        let geom = &*self.geom;
        let first = track_of(geom, lba);
        let single = lba + len <= first.1;
        let mut each = |lt: u64, lo: u64, hi: u64| {
            let t = tracks.entry(lt).or_insert_with(|| {
                *next_seq += 1;
                age.push_back((*next_seq, lt));
                TrackEntry {
                    seq: *next_seq,
                    extents: spare
                        .pop()
                        .unwrap_or_else(|| Vec::with_capacity(EXTENTS_AT_FIRST)),
                }
            });
            removed += punch_list(&mut t.extents, lo, hi, spare_data);
            let piece = if !carries {
                vec![]
            } else if single {
                data.take().unwrap_or_default()
            } else {
                let mut p = spare_buffer(spare_data, (hi - lo) as usize);
                if let Some(d) = &data {
                    p.extend_from_slice(&d[(lo - lba) as usize..(hi - lba) as usize]);
                }
                p
            };
            insert_merging(&mut t.extents, lo, hi - lo, t.seq, piece, spare_data);
            added += hi - lo;
        };
        pieces_from(geom, first, lba, len, &mut each);
        if let Some(d) = data {
            // Split over tracks: the pieces were copied out of it.
            keep_buffer(spare_data, d);
        }
        self.used = self.used + added - removed;
    }

    /// Whether `[lba, lba+len)` is entirely cached.
    pub fn covers(&self, lba: u64, len: u64) -> bool {
        let mut all = true;
        pieces(&self.geom, lba, len, |lt, lo, hi| {
            if !all {
                return;
            }
            let Some(t) = self.tracks.get(&lt) else {
                all = false;
                return;
            };
            let mut cur = lo;
            for e in &t.extents {
                if e.lba > cur {
                    break;
                }
                if e.lba + e.len > cur {
                    cur = e.lba + e.len;
                }
                if cur >= hi {
                    break;
                }
            }
            all = cur >= hi;
        });
        all
    }

    /// Whether any sector of `[lba, lba+len)` is cached.
    pub fn overlaps(&self, lba: u64, len: u64) -> bool {
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
            if self.tracks.get(&lt).is_some_and(|t| t.seq == seq) {
                let mut t = self.tracks.remove(&lt).expect("checked above");
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
    use crate::geometry::{DriveConfig, Geometry};

    fn cache(capacity: u64) -> WriteCache {
        // 100-sector tracks.
        let d = DriveConfig {
            track_bytes: 100 * 4096,
            tracks: Some(100),
            capacity_gib: None,
            ..Default::default()
        };
        WriteCache::new(capacity, Arc::new(Geometry::from_config(&d).unwrap()))
    }

    fn toks(lba: u64, n: u64, ver: u32) -> Vec<Token> {
        (0..n).map(|i| Token::data(Lba(lba + i), ver)).collect()
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
