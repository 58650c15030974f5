//! The drive's DRAM write cache. Writes complete once cached; cached extents
//! are coalesced (a newer write to cached sectors replaces them, so the
//! cache holds only the newest data) and destaged oldest first, through the
//! layer, when the device is idle or when space is needed. A destage batch is
//! the oldest extent together with every other cached extent on the same home
//! track, so a layer can coalesce writes that were queued together.
//!
//! Volatile: a power loss drops the whole cache (no power-loss protection).

use crate::medium::Token;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// One cached extent.
#[derive(Clone, Debug, PartialEq)]
pub struct Extent {
    /// First LBA.
    pub lba: u64,
    /// Length in sectors.
    pub len: u64,
    /// Insertion order (for oldest-first destaging).
    pub seq: u64,
    /// Tokens when data is carried.
    pub data: Vec<Token>,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    len: u64,
    seq: u64,
}

/// The write cache.
///
/// Extents live in an interval map keyed by first LBA (small values keep the
/// B-tree fast); payload tokens, when carried, in a side table. Age order is
/// a queue of `(seq, lba)` with lazy deletion: an entry is live while the
/// extent at `lba` still has that `seq`. The tail of an extent split by a
/// newer write keeps its age and is tracked in a small ordered side set.
#[derive(Debug, Default)]
pub struct WriteCache {
    capacity: u64,
    used: u64,
    next_seq: u64,
    by_lba: BTreeMap<u64, Slot>,
    data: HashMap<u64, Vec<Token>>,
    age: VecDeque<(u64, u64)>,
    late: BTreeSet<(u64, u64)>,
}

impl WriteCache {
    /// A cache holding up to `capacity` sectors.
    pub fn new(capacity: u64) -> WriteCache {
        WriteCache { capacity, ..Default::default() }
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
        self.by_lba.is_empty()
    }
    /// Whether `n` more sectors fit without destaging.
    pub fn fits(&self, n: u64) -> bool {
        self.used + n <= self.capacity
    }

    /// Drop every cached extent (power loss), returning their LBA ranges.
    pub fn clear(&mut self) -> Vec<(u64, u64)> {
        let r = self.by_lba.iter().map(|(&l, s)| (l, s.len)).collect();
        *self = WriteCache::new(self.capacity);
        r
    }

    fn live(&self, (seq, lba): (u64, u64)) -> bool {
        self.by_lba.get(&lba).is_some_and(|s| s.seq == seq)
    }

    fn remove_extent(&mut self, lba: u64) -> Extent {
        let s = self.by_lba.remove(&lba).expect("extent present");
        self.used -= s.len;
        let data = self.data.remove(&lba).unwrap_or_default();
        Extent { lba, len: s.len, seq: s.seq, data }
    }

    fn put_extent(&mut self, e: Extent, in_order: bool) {
        self.used += e.len;
        if in_order {
            self.age.push_back((e.seq, e.lba));
        } else {
            self.late.insert((e.seq, e.lba));
        }
        self.by_lba.insert(e.lba, Slot { len: e.len, seq: e.seq });
        if !e.data.is_empty() {
            self.data.insert(e.lba, e.data);
        }
    }

    /// Remove cached data for `[lba, lba+len)`, keeping the parts of
    /// overlapping extents outside it (with their age).
    fn punch(&mut self, lba: u64, len: u64) {
        let end = lba + len;
        let first = self.by_lba.range(..lba).next_back().filter(|(&k, s)| k + s.len > lba).map(|(&k, _)| k);
        let mut keys: Vec<u64> = first.into_iter().collect();
        keys.extend(self.by_lba.range(lba..end).map(|(&k, _)| k));
        for k in keys {
            let e = self.remove_extent(k);
            let e_end = e.lba + e.len;
            let carries = !e.data.is_empty();
            if e.lba < lba {
                let n = lba - e.lba;
                let data = if carries { e.data[..n as usize].to_vec() } else { vec![] };
                // Same (seq, lba): its queue entry stays valid.
                self.used += n;
                self.by_lba.insert(e.lba, Slot { len: n, seq: e.seq });
                if carries {
                    self.data.insert(e.lba, data);
                }
            }
            if e_end > end {
                let off = (end - e.lba) as usize;
                let data = if carries { e.data[off..].to_vec() } else { vec![] };
                self.put_extent(Extent { lba: end, len: e_end - end, seq: e.seq, data }, false);
            }
        }
    }

    /// The oldest live extent's first LBA, dropping dead queue entries.
    fn oldest(&mut self) -> Option<u64> {
        while let Some(&front) = self.age.front() {
            if self.live(front) {
                break;
            }
            self.age.pop_front();
        }
        while let Some(&first) = self.late.first() {
            if self.live(first) {
                break;
            }
            self.late.pop_first();
        }
        match (self.age.front(), self.late.first()) {
            (Some(&a), Some(&l)) => Some(if l < a { l.1 } else { a.1 }),
            (Some(&a), None) => Some(a.1),
            (None, Some(&l)) => Some(l.1),
            (None, None) => None,
        }
    }

    /// Drop cached data that a write bypassing the cache supersedes.
    pub fn invalidate(&mut self, lba: u64, len: u64) {
        if self.overlaps(lba, len) {
            self.punch(lba, len);
        }
    }

    /// Cache a write (the caller has made room).
    pub fn insert(&mut self, lba: u64, len: u64, data: Vec<Token>) {
        if self.overlaps(lba, len) {
            self.punch(lba, len);
        }
        self.next_seq += 1;
        let seq = self.next_seq;
        self.put_extent(Extent { lba, len, seq, data }, true);
    }

    /// Whether `[lba, lba+len)` is entirely cached.
    pub fn covers(&self, lba: u64, len: u64) -> bool {
        let end = lba + len;
        let mut cur = lba;
        if let Some((&k, s)) = self.by_lba.range(..=cur).next_back() {
            if k + s.len > cur {
                cur = k + s.len;
            }
        }
        while cur < end {
            match self.by_lba.get(&cur) {
                Some(s) => cur += s.len,
                None => return false,
            }
        }
        true
    }

    /// Whether any sector of `[lba, lba+len)` is cached.
    pub fn overlaps(&self, lba: u64, len: u64) -> bool {
        let end = lba + len;
        if let Some((&k, s)) = self.by_lba.range(..lba).next_back() {
            if k + s.len > lba {
                return true;
            }
        }
        self.by_lba.range(lba..end).next().is_some()
    }

    /// Overlay cached tokens onto `out` (tokens of `[lba, lba+len)`).
    pub fn overlay(&self, lba: u64, len: u64, out: &mut [Token]) {
        let end = lba + len;
        let start_key = self.by_lba.range(..lba).next_back().map(|(&k, _)| k).unwrap_or(lba);
        for (&k, s) in self.by_lba.range(start_key..end) {
            let lo = k.max(lba);
            let hi = (k + s.len).min(end);
            let Some(data) = self.data.get(&k) else { continue };
            if lo >= hi {
                continue;
            }
            out[(lo - lba) as usize..(hi - lba) as usize]
                .copy_from_slice(&data[(lo - k) as usize..(hi - k) as usize]);
        }
    }

    /// Take the next destage batch: the oldest extent and every cached extent
    /// within `[lo, hi)`, the home-track bounds the caller computes from the
    /// oldest extent's first LBA. Returned in LBA order.
    pub fn take_batch(&mut self, bounds: impl FnOnce(u64) -> (u64, u64)) -> Vec<Extent> {
        let mut out = vec![];
        self.take_batch_into(bounds, &mut out);
        out
    }

    /// [`take_batch`](Self::take_batch) into a reused buffer (cleared first).
    pub fn take_batch_into(&mut self, bounds: impl FnOnce(u64) -> (u64, u64), out: &mut Vec<Extent>) {
        out.clear();
        let Some(oldest) = self.oldest() else { return };
        let (lo, hi) = bounds(oldest);
        let range = if lo <= oldest && oldest < hi { lo..hi } else { oldest..oldest + 1 };
        let mut key = self.by_lba.range(range.clone()).next().map(|(&k, _)| k);
        while let Some(k) = key {
            key = self.by_lba.range(k + 1..range.end).next().map(|(&k, _)| k);
            out.push(self.remove_extent(k));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Lba;

    fn toks(lba: u64, n: u64, ver: u32) -> Vec<Token> {
        (0..n).map(|i| Token::data(Lba(lba + i), ver)).collect()
    }

    #[test]
    fn newer_writes_replace_cached_sectors() {
        let mut c = WriteCache::new(1000);
        c.insert(10, 10, toks(10, 10, 1));
        c.insert(14, 2, toks(14, 2, 2));
        assert_eq!(c.used(), 10);
        assert!(c.covers(10, 10));
        assert!(!c.covers(9, 2));
        let mut out = vec![Token::EMPTY; 10];
        c.overlay(10, 10, &mut out);
        assert_eq!(out[3], Token::data(Lba(13), 1));
        assert_eq!(out[4], Token::data(Lba(14), 2));
        assert_eq!(out[6], Token::data(Lba(16), 1));
    }

    #[test]
    fn batches_come_oldest_first_with_their_track_mates() {
        let mut c = WriteCache::new(1000);
        c.insert(500, 4, vec![]);
        c.insert(100, 4, vec![]);
        c.insert(120, 4, vec![]);
        c.insert(900, 4, vec![]);
        let b = c.take_batch(|l| (l / 100 * 100, l / 100 * 100 + 100));
        assert_eq!(b.iter().map(|e| e.lba).collect::<Vec<_>>(), vec![500]);
        let b = c.take_batch(|l| (l / 100 * 100, l / 100 * 100 + 100));
        assert_eq!(b.iter().map(|e| e.lba).collect::<Vec<_>>(), vec![100, 120]);
        assert_eq!(c.used(), 4);
    }

    #[test]
    fn split_keeps_both_halves() {
        let mut c = WriteCache::new(1000);
        c.insert(0, 100, vec![]);
        c.insert(40, 10, vec![]);
        assert_eq!(c.used(), 100);
        assert!(c.covers(0, 100));
        let b = c.take_batch(|_| (0, 0));
        assert_eq!((b[0].lba, b[0].len), (0, 40));
        let b = c.take_batch(|_| (0, 0));
        assert_eq!((b[0].lba, b[0].len), (50, 50));
    }
}
