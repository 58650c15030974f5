//! An ordered map from `u64` keys to small `Copy` values, kept as sorted
//! runs of at most [`RUN`] entries, for the E-region extent map: it answers
//! the same questions as a `BTreeMap` (point look-ups, the last key at or
//! below one, a walk up from a key), but runs emptied by removals are kept
//! and reused for runs split by insertions, so a map whose size holds steady
//! allocates nothing (a `BTreeMap` allocates and frees nodes as entries come
//! and go).

/// Entries a run holds before it is split in two.
const RUN: usize = 64;

/// The map (see the module comment).
#[derive(Clone, Debug)]
pub struct ChunkMap<V> {
    /// Sorted runs: each non-empty, every key of a run below every key of the next.
    runs: Vec<Vec<(u64, V)>>,
    /// Emptied runs, kept for reuse.
    spare: Vec<Vec<(u64, V)>>,
    len: usize,
}

impl<V> Default for ChunkMap<V> {
    fn default() -> Self {
        ChunkMap {
            runs: vec![],
            spare: vec![],
            len: 0,
        }
    }
}

impl<V: Copy> ChunkMap<V> {
    /// Keys mapped, over all runs (kept as a count, not summed on each call).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Remove every entry (their runs are kept for reuse).
    pub fn clear(&mut self) {
        for mut r in self.runs.drain(..) {
            r.clear();
            self.spare.push(r);
        }
        self.len = 0;
    }

    /// The run that holds `k` if anything does: the last run whose first key
    /// is at most `k` (the first run when none is). The map must not be empty.
    fn run_of(&self, k: u64) -> usize {
        self.runs.partition_point(|r| r[0].0 <= k).saturating_sub(1)
    }

    fn new_run(&mut self) -> Vec<(u64, V)> {
        self.spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(RUN + 1))
    }

    /// The value at `k`.
    pub fn get(&self, k: &u64) -> Option<&V> {
        if self.runs.is_empty() {
            return None;
        }
        let r = &self.runs[self.run_of(*k)];
        r.binary_search_by_key(k, |e| e.0).ok().map(|j| &r[j].1)
    }

    /// Set the value at `k`; returns the value it replaces.
    pub fn insert(&mut self, k: u64, v: V) -> Option<V> {
        if self.runs.is_empty() {
            let mut r = self.new_run();
            r.push((k, v));
            self.runs.push(r);
            self.len = 1;
            return None;
        }
        let i = self.run_of(k);
        let r = &mut self.runs[i];
        match r.binary_search_by_key(&k, |e| e.0) {
            Ok(j) => return Some(std::mem::replace(&mut r[j].1, v)),
            Err(j) => r.insert(j, (k, v)),
        }
        self.len += 1;
        if self.runs[i].len() > RUN {
            let mut upper = self.new_run();
            upper.extend(self.runs[i].drain(RUN / 2..));
            self.runs.insert(i + 1, upper);
        }
        None
    }

    /// Remove the entry at `k`; returns its value.
    pub fn remove(&mut self, k: &u64) -> Option<V> {
        if self.runs.is_empty() {
            return None;
        }
        let i = self.run_of(*k);
        let j = self.runs[i].binary_search_by_key(k, |e| e.0).ok()?;
        let v = self.runs[i].remove(j).1;
        self.len -= 1;
        if self.runs[i].is_empty() {
            let r = self.runs.remove(i);
            self.spare.push(r);
        } else if self.runs[i].len() < RUN / 4
            && i + 1 < self.runs.len()
            && self.runs[i].len() + self.runs[i + 1].len() <= RUN
        {
            // A small run takes in its successor, so runs stay well filled.
            let mut next = self.runs.remove(i + 1);
            self.runs[i].extend_from_slice(&next);
            next.clear();
            self.spare.push(next);
        }
        Some(v)
    }

    /// The entry with the largest key at most `k` (`range(..=k).next_back()`).
    pub fn last_at_or_below(&self, k: u64) -> Option<(u64, &V)> {
        self.last_where(k, |key| key <= k)
    }

    /// The entry with the largest key below `k` (`range(..k).next_back()`).
    pub fn last_below(&self, k: u64) -> Option<(u64, &V)> {
        self.last_where(k, |key| key < k)
    }

    /// The last entry whose key passes `below` (a prefix of the keys), looking in `k`'s run and the one before.
    fn last_where(&self, k: u64, below: impl Fn(u64) -> bool) -> Option<(u64, &V)> {
        if self.runs.is_empty() {
            return None;
        }
        let i = self.run_of(k);
        let r = &self.runs[i];
        let p = r.partition_point(|e| below(e.0));
        let e = if p > 0 {
            &r[p - 1]
        } else if i > 0 {
            self.runs[i - 1].last().expect("runs are not empty")
        } else {
            return None;
        };
        Some((e.0, &e.1))
    }

    /// The entries with keys at least `k`, in key order (`range(k..)`).
    pub fn iter_from(&self, k: u64) -> impl Iterator<Item = (u64, &V)> + '_ {
        let (i, j) = if self.runs.is_empty() {
            (0, 0)
        } else {
            let i = self.run_of(k);
            (i, self.runs[i].partition_point(|e| e.0 < k))
        };
        self.runs
            .get(i..)
            .unwrap_or(&[])
            .iter()
            .enumerate()
            .flat_map(move |(n, r)| if n == 0 { &r[j..] } else { &r[..] })
            .map(|e| (e.0, &e.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Random operations on a small key space (runs split, empty and merge
    /// all the time) answer as a `BTreeMap` does.
    #[test]
    fn answers_as_a_btreemap_does() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for keys in [50u64, 500, 5000] {
            let (mut m, mut b) = (ChunkMap::<u32>::default(), BTreeMap::<u64, u32>::new());
            for step in 0..40_000u32 {
                let k = rnd(keys);
                match rnd(10) {
                    0..=3 => assert_eq!(m.insert(k, step), b.insert(k, step)),
                    4..=6 => assert_eq!(m.remove(&k), b.remove(&k)),
                    7 => assert_eq!(m.get(&k), b.get(&k)),
                    8 => {
                        assert_eq!(
                            m.last_at_or_below(k),
                            b.range(..=k).next_back().map(|(&k, v)| (k, v))
                        );
                        assert_eq!(
                            m.last_below(k),
                            b.range(..k).next_back().map(|(&k, v)| (k, v))
                        );
                    }
                    _ => {
                        let got: Vec<_> = m.iter_from(k).take(70).collect();
                        let want: Vec<_> = b.range(k..).take(70).map(|(&k, v)| (k, v)).collect();
                        assert_eq!(got, want);
                    }
                }
                assert_eq!(m.len(), b.len());
                if step % 9_999 == 0 {
                    assert!(m.iter_from(0).map(|e| e.0).eq(b.keys().copied()));
                }
                if step == 30_000 {
                    m.clear();
                    b.clear();
                }
            }
        }
    }
}
