//! The drive's DRAM write cache. Writes complete once cached; cached extents
//! are coalesced (a newer write to cached sectors replaces them, so the
//! cache holds only the newest data) and destaged oldest first, through the
//! layer, when the device is idle or when space is needed. A destage batch is
//! the oldest extent together with every other cached extent on the same home
//! track, so a layer can coalesce writes that were queued together.
//!
//! Volatile: a power loss drops the whole cache (no power-loss protection).

use crate::medium::Token;
use std::collections::BTreeMap;

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

/// The write cache.
#[derive(Debug, Default)]
pub struct WriteCache {
    capacity: u64,
    used: u64,
    next_seq: u64,
    by_lba: BTreeMap<u64, Extent>,
    by_age: BTreeMap<u64, u64>,
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
        let r = self.by_lba.values().map(|e| (e.lba, e.len)).collect();
        *self = WriteCache::new(self.capacity);
        r
    }

    fn remove_extent(&mut self, lba: u64) -> Extent {
        let e = self.by_lba.remove(&lba).expect("extent present");
        self.by_age.remove(&e.seq);
        self.used -= e.len;
        e
    }

    fn put_extent(&mut self, e: Extent) {
        self.used += e.len;
        self.by_age.insert(e.seq, e.lba);
        self.by_lba.insert(e.lba, e);
    }

    /// Remove cached data for `[lba, lba+len)`, keeping the parts of
    /// overlapping extents outside it (with their age).
    fn punch(&mut self, lba: u64, len: u64) {
        let end = lba + len;
        let first = self.by_lba.range(..lba).next_back().filter(|(_, e)| e.lba + e.len > lba).map(|(&k, _)| k);
        let mut keys: Vec<u64> = first.into_iter().collect();
        keys.extend(self.by_lba.range(lba..end).map(|(&k, _)| k));
        for k in keys {
            let e = self.remove_extent(k);
            let e_end = e.lba + e.len;
            let carries = !e.data.is_empty();
            if e.lba < lba {
                let n = lba - e.lba;
                let data = if carries { e.data[..n as usize].to_vec() } else { vec![] };
                self.put_extent(Extent { lba: e.lba, len: n, seq: e.seq, data });
            }
            if e_end > end {
                // The tail keeps the extent's age under a fresh key in by_age order.
                let off = (end - e.lba) as usize;
                let data = if carries { e.data[off..].to_vec() } else { vec![] };
                let tail_seq = if e.lba < lba { self.alloc_seq_like(e.seq) } else { e.seq };
                self.put_extent(Extent { lba: end, len: e_end - end, seq: tail_seq, data });
            }
        }
    }

    /// A sequence number that sorts right after `seq` (a split extent's second half).
    fn alloc_seq_like(&mut self, seq: u64) -> u64 {
        // Sequence numbers are spaced by 2^20 so splits can take the gaps.
        let mut s = seq + 1;
        while self.by_age.contains_key(&s) {
            s += 1;
        }
        s
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
        self.next_seq += 1 << 20;
        let seq = self.next_seq;
        self.put_extent(Extent { lba, len, seq, data });
    }

    /// Whether `[lba, lba+len)` is entirely cached.
    pub fn covers(&self, lba: u64, len: u64) -> bool {
        let end = lba + len;
        let mut cur = lba;
        if let Some((_, e)) = self.by_lba.range(..=cur).next_back() {
            if e.lba + e.len > cur {
                cur = e.lba + e.len;
            }
        }
        while cur < end {
            match self.by_lba.get(&cur) {
                Some(e) => cur = e.lba + e.len,
                None => return false,
            }
        }
        true
    }

    /// Whether any sector of `[lba, lba+len)` is cached.
    pub fn overlaps(&self, lba: u64, len: u64) -> bool {
        let end = lba + len;
        if let Some((_, e)) = self.by_lba.range(..lba).next_back() {
            if e.lba + e.len > lba {
                return true;
            }
        }
        self.by_lba.range(lba..end).next().is_some()
    }

    /// Overlay cached tokens onto `out` (tokens of `[lba, lba+len)`).
    pub fn overlay(&self, lba: u64, len: u64, out: &mut [Token]) {
        let end = lba + len;
        let start_key = self.by_lba.range(..lba).next_back().map(|(&k, _)| k).unwrap_or(lba);
        for (_, e) in self.by_lba.range(start_key..end) {
            let lo = e.lba.max(lba);
            let hi = (e.lba + e.len).min(end);
            if lo >= hi || e.data.is_empty() {
                continue;
            }
            out[(lo - lba) as usize..(hi - lba) as usize]
                .copy_from_slice(&e.data[(lo - e.lba) as usize..(hi - e.lba) as usize]);
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
        let Some((_, &oldest)) = self.by_age.iter().next() else { return };
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
