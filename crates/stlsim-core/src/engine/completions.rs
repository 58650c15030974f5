//! When the requests the host has outstanding complete: what queue mode
//! needs to issue the next one (a slot frees when the earliest completes).
//!
//! A binary heap of every completion time was a tenth of a run's time: its
//! push and pop each climb its levels (28 entries on average on the 10
//! M-request benchmark), a chain of dependent loads. Two things make most
//! of that unnecessary:
//!
//! * Most requests (writes the cache absorbs, above all) are over before
//!   the next one arrives (43 % on the benchmark). So the newest
//!   completion waits beside the rest, and such a one is dropped at the
//!   next issue without being stored.
//! * The device serves requests in order, so completions mostly come later
//!   than every one stored before them. Those go to the back of a queue
//!   kept in ascending order; only the others (a request that finished
//!   before an earlier one) go to a heap. The earliest is at the queue's
//!   front or the heap's top.
//!
//! * Completions are removed only when the requests stored, completed or
//!   not, would fill the queue. The loop that removed every completion
//!   already over at each issue took a data-dependent number of turns, and
//!   its branches were a third of a run's mispredicted ones (callgrind's
//!   branch simulation).
//!
//! The times issued are exactly a plain heap's: every completion at or
//! before the candidate issue time leaves without moving it, whatever the
//! order, now or at a later issue (candidates never go back), and the
//! earliest is the earliest however it is found.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Completion times (nanoseconds) of the outstanding requests.
#[derive(Debug, Default)]
pub struct Completions {
    /// Completions later than every one queued before them, ascending.
    ascending: VecDeque<u64>,
    /// Completions earlier than one queued before them (a request that finished
    /// before an earlier one), earliest on top.
    heap: BinaryHeap<Reverse<u64>>,
    /// The newest completion, not in the heap yet.
    newest: Option<u64>,
}

impl Completions {
    /// A request was issued and will complete at `t`.
    #[inline]
    pub fn push(&mut self, t: u64) {
        if let Some(p) = self.newest.replace(t) {
            self.store(p);
        }
    }

    #[inline]
    fn store(&mut self, t: u64) {
        match self.ascending.back() {
            Some(&b) if b > t => self.heap.push(Reverse(t)),
            _ => self.ascending.push_back(t),
        }
    }

    /// The earliest stored completion, and whether it is the queue's.
    #[inline]
    fn earliest(&self) -> Option<(u64, bool)> {
        match (self.ascending.front(), self.heap.peek()) {
            (Some(&a), Some(&Reverse(h))) => Some(if a <= h { (a, true) } else { (h, false) }),
            (Some(&a), None) => Some((a, true)),
            (None, Some(&Reverse(h))) => Some((h, false)),
            (None, None) => None,
        }
    }

    /// The earliest a request can issue, not before `cand`, with `waiting`
    /// requests issued but not yet served and room for `depth` in all:
    /// every request complete by then leaves the queue, and while the queue
    /// is full the earliest outstanding one completes first.
    #[inline]
    pub fn issue_time(&mut self, mut cand: u64, waiting: usize, depth: usize) -> u64 {
        if let Some(t) = self.newest.take() {
            if t > cand {
                self.store(t);
            }
        }
        if self.ascending.len() + self.heap.len() + waiting < depth {
            // Room even if nothing stored has completed: `cand` stands.
            // Those complete by now stay stored until the count next
            // reaches the depth; they are then at or before that issue's
            // candidate (candidates never go back), so they leave without
            // moving it, as they would have now.
            return cand;
        }
        while let Some((c, queued)) = self.earliest() {
            if c > cand && self.ascending.len() + self.heap.len() + waiting < depth {
                break;
            }
            if queued {
                self.ascending.pop_front();
            } else {
                self.heap.pop();
            }
            cand = cand.max(c);
        }
        cand
    }

    /// Every outstanding request completes: when the last does (`since` if
    /// none is later).
    pub fn drain(&mut self, since: u64) -> u64 {
        let mut done = since;
        if let Some(t) = self.newest.take() {
            done = done.max(t);
        }
        if let Some(&t) = self.ascending.back() {
            done = done.max(t);
        }
        while let Some(Reverse(c)) = self.heap.pop() {
            done = done.max(c);
        }
        self.ascending.clear();
        done
    }

    /// Forget every outstanding request (a power loss).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.ascending.clear();
        self.newest = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Issue times are those of a plain heap holding every completion.
        #[test]
        fn issues_as_a_plain_heap_does(
            steps in proptest::collection::vec((0u64..1_000, 0u64..3_000, 0usize..3), 1..300),
            depth in 1usize..8,
        ) {
            let mut c = Completions::default();
            let mut plain: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
            let mut prev = 0u64;
            for (gap, service, waiting) in steps {
                let cand = prev + gap;
                let got = c.issue_time(cand, waiting, depth);
                let mut want = cand;
                while let Some(&Reverse(t)) = plain.peek() {
                    if t > want && plain.len() + waiting < depth {
                        break;
                    }
                    plain.pop();
                    want = want.max(t);
                }
                prop_assert_eq!(got, want);
                prev = got;
                c.push(got + service);
                plain.push(Reverse(got + service));
            }
            let last = plain.iter().map(|r| r.0).max().unwrap_or(prev).max(prev);
            prop_assert_eq!(c.drain(prev), last);
        }
    }
}
