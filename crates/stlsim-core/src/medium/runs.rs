//! Run-length encoded rows of tokens: what a track's sectors hold (the
//! medium) or which version of each LBA of a range the host last wrote (the
//! verification oracle), stored as runs rather than one token per slot.
//!
//! Writes are mostly sequential, so a row written in order is one run
//! whatever its length: a run says "from this slot on, slot `start + i`
//! holds LBA `lba + i` at version `ver`" (or, for a marker — an empty or a
//! destroyed sector — the same token in every slot), up to where the next
//! run starts. Runs cover the whole row, gaps included (an empty run), so a
//! run needs no length and takes 16 bytes; a row never written at all has
//! no runs.
//!
//! Rows keep the same contents as a plain array of tokens would (the
//! property test at the end checks every operation against one); the
//! engine and the layers still see dense `&[Token]` slices.

use super::Token;

/// Tokens from slot `start` up to the next run's start: data tokens with
/// consecutive LBAs and one version, or one marker repeated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// The LBA of the token at `start`, or a marker's value.
    lba: u64,
    /// The version (for a destroyed sector, the destroying operation).
    ver: u32,
    /// The slot the run starts at; it lasts until the next run's start (a run
    /// stores no length).
    start: u32,
}

impl Run {
    fn of(start: u32, t: Token) -> Run {
        Run {
            lba: t.lba,
            ver: t.ver,
            start,
        }
    }

    /// Markers repeat; data LBAs count up.
    fn is_marker(&self) -> bool {
        self.lba >= Token::DESTROYED_LBA
    }

    /// The token in slot `slot` (at or after `start`).
    #[inline]
    fn token_at(&self, slot: u32) -> Token {
        let lba = if self.is_marker() {
            self.lba
        } else {
            self.lba + (slot - self.start) as u64
        };
        Token { lba, ver: self.ver }
    }

    /// Whether `next` (starting where this run would go on) continues it.
    fn continued_by(&self, next: &Run) -> bool {
        self.ver == next.ver && self.token_at(next.start).lba == next.lba
    }
}

/// A row of `len` slots (the length is the owner's: a track's sectors, an
/// oracle chunk's LBAs), run-length encoded. Every slot is empty until written.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunRow {
    runs: Vec<Run>,
    /// The last run's start (0 with no runs), kept beside the vector: the
    /// search for a slot's run scales its guess by it, and reading it from
    /// the far end of the runs was a cache miss of its own on every search
    /// of a row not touched lately (a sixth of a verified run's search time).
    last: u32,
}

impl RunRow {
    /// Whether every slot is empty.
    pub fn is_empty(&self) -> bool {
        match self.runs.as_slice() {
            [] => true,
            [r] => r.lba == Token::EMPTY_LBA,
            _ => false,
        }
    }

    /// Runs the row holds (0: never written).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Heap bytes of the run list, counted by its capacity (for the memory report).
    pub fn heap_bytes(&self) -> u64 {
        (self.runs.capacity() * std::mem::size_of::<Run>()) as u64
    }

    /// Index of the run holding `slot` (the row has runs).
    #[inline]
    fn index_of(&self, slot: u32) -> usize {
        self.first_starting_after(slot) - 1
    }

    /// The number of runs starting at or before `slot`: where a binary
    /// search would put it, found from a guess instead. Runs are spread
    /// over a row's slots, so run `slot * runs / slots` is near the one
    /// wanted (exactly there in a row written a sector at a time, the
    /// common worst case, whose thousand runs a binary search crossed in ten
    /// cache misses); the search gallops out from the guess and bisects
    /// the last step.
    #[inline]
    fn first_starting_after(&self, slot: u32) -> usize {
        let n = self.runs.len();
        debug_assert_eq!(self.last, self.runs.last().map_or(0, |r| r.start));
        if n == 0 {
            return 0;
        }
        if self.last <= slot {
            return n;
        }
        // last > slot >= 0, so the guess is below n - 1.
        let guess = (u64::from(slot) * (n as u64 - 1) / u64::from(self.last)) as usize;
        self.gallop(guess, |r| r.start <= slot)
    }

    /// The first index at which `below` turns false (it holds for a prefix
    /// of the runs, as for `partition_point`), searched from `from` outward
    /// in doubling steps.
    #[inline]
    fn gallop(&self, from: usize, below: impl Fn(&Run) -> bool) -> usize {
        let runs = &self.runs;
        let n = runs.len();
        let (mut lo, mut hi);
        if from < n && below(&runs[from]) {
            // The answer is after `from`.
            lo = from + 1;
            let mut step = 1;
            loop {
                hi = from + step;
                if hi >= n {
                    hi = n;
                    break;
                }
                if !below(&runs[hi]) {
                    break;
                }
                lo = hi + 1;
                step *= 2;
            }
        } else {
            // At or before `from`.
            hi = from.min(n);
            let mut step = 1;
            loop {
                if step > hi {
                    lo = 0;
                    break;
                }
                let at = hi - step;
                if below(&runs[at]) {
                    lo = at + 1;
                    break;
                }
                hi = at;
                step *= 2;
            }
        }
        lo + runs[lo..hi].partition_point(below)
    }

    /// The token in `slot`.
    pub fn get(&self, slot: u32) -> Token {
        if self.runs.is_empty() {
            return Token::EMPTY;
        }
        self.runs[self.index_of(slot)].token_at(slot)
    }

    /// Call `f(first slot, count, token in the first slot)` for each run's
    /// part of slots `[at, at + n)`, in order (the slots after the first
    /// hold the following LBAs, or the same marker).
    #[inline]
    pub fn pieces(&self, at: u32, n: u32, mut f: impl FnMut(u32, u32, Token)) {
        if self.runs.is_empty() {
            f(at, n, Token::EMPTY);
            return;
        }
        let end = at + n;
        let mut i = self.index_of(at);
        let mut s = at;
        while s < end {
            let r = self.runs[i];
            let stop = self.runs.get(i + 1).map_or(end, |x| x.start.min(end));
            f(s, stop - s, r.token_at(s));
            s = stop;
            i += 1;
        }
    }

    /// Append the tokens of slots `[at, at + n)` to `out`.
    pub fn read(&self, at: u32, n: u32, out: &mut Vec<Token>) {
        // Room for all of it at once: rows of random writes hand out a
        // run per sector, each an `extend` that checked capacity itself.
        out.reserve(n as usize);
        self.pieces(at, n, |_, k, t| {
            if k == 1 {
                out.push(t);
            } else if t.lba >= Token::DESTROYED_LBA {
                out.extend(std::iter::repeat_n(t, k as usize));
            } else {
                out.extend((t.lba..t.lba + k as u64).map(|lba| Token { lba, ver: t.ver }));
            }
        });
    }

    /// Call `f(first, count)` for each stretch of non-empty slots, in order.
    pub fn filled(&self, len: u32, mut f: impl FnMut(u32, u32)) {
        for (i, r) in self.runs.iter().enumerate() {
            if r.lba != Token::EMPTY_LBA {
                let end = self.runs.get(i + 1).map_or(len, |x| x.start);
                f(r.start, end - r.start);
            }
        }
    }

    /// Store `data` in slots from `at`, in a row of `len` slots; `scratch`
    /// is a buffer the caller keeps (no allocation per write).
    pub fn write(&mut self, len: u32, at: u32, data: &[Token], scratch: &mut Vec<Run>) {
        scratch.clear();
        let mut k = 0;
        while k < data.len() {
            // The longest stretch from `k` one run holds: the same marker,
            // or consecutive LBAs at one version.
            let t = data[k];
            let first = k;
            k += 1;
            if t.lba >= Token::DESTROYED_LBA {
                while k < data.len() && data[k] == t {
                    k += 1;
                }
            } else {
                let mut next = t.lba + 1;
                while k < data.len() && data[k].lba == next && data[k].ver == t.ver {
                    next += 1;
                    k += 1;
                }
            }
            scratch.push(Run::of(at + first as u32, t));
        }
        self.replace(len, at, at + data.len() as u32, scratch);
    }

    /// Store `t` (a marker) in slots `[at, at + n)`.
    pub fn fill(&mut self, len: u32, at: u32, n: u32, t: Token) {
        self.replace(len, at, at + n, &[Run::of(at, t)]);
    }

    /// Mark the non-empty slots of `[lo, hi)` destroyed by `t` (a
    /// destroyed marker); empty slots stay empty (nothing there to damage).
    pub fn damage(&mut self, len: u32, lo: u32, hi: u32, t: Token, scratch: &mut Vec<Run>) {
        if self.runs.is_empty() {
            return;
        }
        self.remap(
            len,
            lo,
            hi,
            scratch,
            |_, old| if old.is_empty() { old } else { t },
        );
    }

    /// Replace each run's part of `[lo, hi)` by a run starting with
    /// `f(first slot, its old token)` (data runs keep counting up from it).
    fn remap(
        &mut self,
        len: u32,
        lo: u32,
        hi: u32,
        scratch: &mut Vec<Run>,
        f: impl Fn(u32, Token) -> Token,
    ) {
        if lo >= hi {
            return;
        }
        scratch.clear();
        self.pieces(lo, hi - lo, |s, _, old| {
            let piece = Run::of(s, f(s, old));
            match scratch.last() {
                Some(last) if last.continued_by(&piece) => {}
                _ => scratch.push(piece),
            }
        });
        self.replace(len, lo, hi, scratch);
    }

    /// Make slots `[at, end)` hold `new` (runs starting at `at`, in order,
    /// each lasting to the next or to `end`), merging with the neighbours.
    fn replace(&mut self, len: u32, at: u32, end: u32, new: &[Run]) {
        debug_assert!(end <= len && new.first().is_some_and(|r| r.start == at));
        if at >= end {
            return;
        }
        let count0 = self.runs.len();
        if self.runs.is_empty() {
            self.runs.push(Run::of(0, Token::EMPTY));
        }
        // The runs starting in [at, end): most writes replace a run or
        // two, so the end is galloped to from the start.
        let a = match at {
            0 => 0,
            _ => self.first_starting_after(at - 1),
        };
        let b = self.gallop(a, |r| r.start < end);
        // What follows the new runs: the old contents from `end` on, from
        // the run holding `end` (the last starting before it: the first run
        // starts at 0, so there is one) unless a run starts right there.
        let tail = if end < len && self.runs.get(b).is_none_or(|r| r.start != end) {
            Some(Run::of(end, self.runs[b - 1].token_at(end)))
        } else {
            None
        };
        let added = new.len() + tail.is_some() as usize;
        // Overwrite the removed runs in place and shift the rest once
        // (a splice would go through a drain and a temporary).
        let removed = b - a;
        let fresh = new.iter().copied().chain(tail);
        if added <= removed {
            for (slot, r) in self.runs[a..a + added].iter_mut().zip(fresh) {
                *slot = r;
            }
            self.runs.drain(a + added..b);
        } else {
            let more = added - removed;
            let len0 = self.runs.len();
            self.runs.resize(len0 + more, Run::of(0, Token::EMPTY));
            self.runs.copy_within(b..len0, b + more);
            for (slot, r) in self.runs[a..a + added].iter_mut().zip(fresh) {
                *slot = r;
            }
        }
        // Merge across the seams: before the first new run, between the
        // new runs and the tail, and after the tail.
        let lo = a.saturating_sub(1);
        let hi = (a + added + 1).min(self.runs.len());
        let mut w = lo;
        for i in lo + 1..hi {
            if self.runs[w].continued_by(&self.runs[i]) {
                continue;
            }
            w += 1;
            self.runs[w] = self.runs[i];
        }
        self.runs.drain(w + 1..hi);
        if self.is_empty() {
            self.runs.clear();
        }
        // The last run is another only if the runs moved or were replaced
        // or merged up to the end (else it stays unread, and uncached).
        if self.runs.len() != count0 || hi >= self.runs.len() {
            self.last = self.runs.last().map_or(0, |r| r.start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Lba;
    use proptest::prelude::*;

    fn dense(row: &RunRow, len: u32) -> Vec<Token> {
        let mut v = vec![];
        row.read(0, len, &mut v);
        v
    }

    #[test]
    fn sequential_writes_make_one_run() {
        let mut row = RunRow::default();
        let mut scratch = vec![];
        for k in 0..10u64 {
            let data: Vec<Token> = (0..8)
                .map(|i| Token::data(Lba(100 + k * 8 + i), 1))
                .collect();
            row.write(256, k as u32 * 8, &data, &mut scratch);
        }
        // Data in 0..80, empty after it.
        assert_eq!(row.runs(), 2);
        assert_eq!(row.get(79), Token::data(Lba(179), 1));
        assert_eq!(row.get(80), Token::EMPTY);
        let data: Vec<Token> = (0..176).map(|i| Token::data(Lba(180 + i), 1)).collect();
        row.write(256, 80, &data, &mut scratch);
        assert_eq!(row.runs(), 1);
    }

    #[test]
    fn damage_spares_empty_slots_and_overwrite_clears() {
        let mut row = RunRow::default();
        let mut scratch = vec![];
        let data: Vec<Token> = (0..4).map(|i| Token::data(Lba(i), 2)).collect();
        row.write(16, 4, &data, &mut scratch);
        row.damage(16, 2, 6, Token::destroyed(9), &mut scratch);
        let d = dense(&row, 16);
        assert_eq!(d[3], Token::EMPTY);
        assert_eq!(d[4], Token::destroyed(9));
        assert_eq!(d[5], Token::destroyed(9));
        assert_eq!(d[6], Token::data(Lba(2), 2));
        row.write(16, 0, &[Token::EMPTY; 16], &mut scratch);
        assert!(row.is_empty());
        assert_eq!(row.runs(), 0);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Write(u32, Vec<(u8, u8)>),
        Fill(u32, u32),
        Damage(u32, u32, u8),
    }

    fn op(len: u32) -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..len, proptest::collection::vec((0u8..4, 0u8..3), 1..20)).prop_map(
                move |(at, v)| {
                    let n = v.len().min((len - at) as usize);
                    Op::Write(at, v[..n].to_vec())
                }
            ),
            (0..len, 1..len).prop_map(move |(at, n)| Op::Fill(at, n.min(len - at))),
            (0..len, 0..len, 0u8..3).prop_map(|(a, b, o)| Op::Damage(a.min(b), a.max(b), o)),
        ]
    }

    proptest! {
        /// Every operation leaves the row holding what a plain array would.
        #[test]
        fn row_matches_a_plain_array(ops in proptest::collection::vec(op(40), 1..40)) {
            let len = 40u32;
            let mut row = RunRow::default();
            let mut model = vec![Token::EMPTY; len as usize];
            let mut scratch = vec![];
            for o in ops {
                match o {
                    Op::Write(at, v) => {
                        // Kinds: consecutive LBAs (to merge), a repeated LBA, empty, destroyed.
                        let data: Vec<Token> = v.iter().enumerate().map(|(k, &(kind, ver))| match kind {
                            0 => Token::data(Lba(at as u64 + k as u64), ver as u32),
                            1 => Token::data(Lba(7), ver as u32),
                            2 => Token::EMPTY,
                            _ => Token::destroyed(ver as u64),
                        }).collect();
                        row.write(len, at, &data, &mut scratch);
                        model[at as usize..at as usize + data.len()].copy_from_slice(&data);
                    }
                    Op::Fill(at, n) => {
                        row.fill(len, at, n, Token::destroyed(5));
                        model[at as usize..(at + n) as usize].fill(Token::destroyed(5));
                    }
                    Op::Damage(lo, hi, o) => {
                        row.damage(len, lo, hi, Token::destroyed(o as u64), &mut scratch);
                        for c in &mut model[lo as usize..hi as usize] {
                            if !c.is_empty() {
                                *c = Token::destroyed(o as u64);
                            }
                        }
                    }
                }
                prop_assert_eq!(dense(&row, len), model.clone());
                for s in 0..len {
                    prop_assert_eq!(row.get(s), model[s as usize]);
                }
                // Partial reads decode the same slots.
                let mut part = vec![];
                row.read(13, 17, &mut part);
                prop_assert_eq!(&part[..], &model[13..30]);
                // The last run's start kept beside them is the last run's.
                prop_assert_eq!(row.last, row.runs.last().map_or(0, |r| r.start));
                // Runs are maximal: no run continues the one before it.
                for w in row.runs.windows(2) {
                    prop_assert!(!w[0].continued_by(&w[1]) && w[0].start < w[1].start);
                }
                prop_assert_eq!(row.is_empty(), model.iter().all(|t| t.is_empty()));
                let mut filled = vec![];
                row.filled(len, |s, n| filled.push((s, n)));
                let want: Vec<u32> = (0..len).filter(|&s| !model[s as usize].is_empty()).collect();
                let got: Vec<u32> = filled.iter().flat_map(|&(s, n)| s..s + n).collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}
