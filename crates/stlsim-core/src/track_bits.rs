//! A set of physical tracks as a bitmap grown lazily: the tracks are cut
//! into leaves of [`LEAF`] tracks, a leaf is stored only once a track in it
//! is set, and a leaf whose tracks are all set is one marker. So a set costs
//! memory where it holds *some* tracks, not for the drive's capacity: a
//! 100-million-track drive costs 2.4 KB of leaf slots a million tracks
//! (16 bytes a leaf), plus 512 bytes for each partly set leaf; a full
//! prefill costs no leaves at all, and a leaf with all but a few tracks set
//! (a full drive with a layer's reserved tracks spread through it) keeps
//! just the list of those few. Used for the prefilled tracks of the
//! medium, the tracks a verified run touched, and the layers' "written"
//! knowledge.

use crate::units::Track;

/// Tracks a leaf covers (the set's last leaf may cover fewer).
pub const LEAF: u64 = 4096;
const WORDS: usize = (LEAF / 64) as usize;
/// At most this many clear tracks are kept as a list in an otherwise full leaf.
const EXCEPT: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Leaf {
    /// No track set; nothing allocated.
    Clear,
    /// Every track (of the set's range) set.
    Full,
    /// Some tracks set: one bit per track of the leaf (512 bytes).
    Bits(Box<[u64; WORDS]>),
    /// Every track set but these few (offsets in the leaf, ascending).
    // A thin box, so that a leaf slot stays 16 bytes (a Vec is 24).
    #[allow(
        clippy::box_collection,
        reason = "a thin pointer keeps a leaf slot at 16 bytes"
    )]
    FullExcept(Box<Vec<u16>>),
}

/// A set of physical tracks. An empty set (`TrackBits::default()`)
/// answers `false` for every track without allocating.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrackBits {
    leaves: Vec<Leaf>,
    /// Tracks covered: `[0, n)`.
    n: u64,
}

impl TrackBits {
    /// All clear, for `n` tracks.
    pub fn new(n: u64) -> TrackBits {
        TrackBits {
            leaves: vec![Leaf::Clear; n.div_ceil(LEAF) as usize],
            n,
        }
    }

    /// Tracks of leaf `i` within the range (the last leaf may be partial).
    fn leaf_len(&self, i: usize) -> u64 {
        (self.n - i as u64 * LEAF).min(LEAF)
    }

    /// Whether track `t` is set (tracks beyond the set are clear).
    #[inline]
    pub fn get(&self, t: Track) -> bool {
        match self.leaves.get((t.0 / LEAF) as usize) {
            None | Some(Leaf::Clear) => false,
            Some(Leaf::Full) => true,
            Some(Leaf::Bits(w)) => {
                let b = t.0 % LEAF;
                w[(b / 64) as usize] >> (b % 64) & 1 == 1
            }
            Some(Leaf::FullExcept(x)) => x.binary_search(&((t.0 % LEAF) as u16)).is_err(),
        }
    }

    /// The clear tracks of a leaf of `len` tracks whose bits are `w`, if few
    /// enough to keep as a list.
    #[allow(clippy::box_collection, reason = "the thin box FullExcept holds")]
    fn exceptions(w: &[u64; WORDS], len: u64) -> Option<Box<Vec<u16>>> {
        let set: u64 = w.iter().map(|x| x.count_ones() as u64).sum();
        if len - set > EXCEPT as u64 {
            return None;
        }
        Some(Box::new(
            (0..len)
                .filter(|&k| w[(k / 64) as usize] >> (k % 64) & 1 == 0)
                .map(|k| k as u16)
                .collect(),
        ))
    }

    /// Set track `t` (which must lie within the set's range).
    #[inline]
    pub fn set(&mut self, t: Track) {
        assert!(
            t.0 < self.n,
            "track {} beyond a set of {} tracks",
            t.0,
            self.n
        );
        let i = (t.0 / LEAF) as usize;
        let b = t.0 % LEAF;
        let full = match &mut self.leaves[i] {
            Leaf::Full => return,
            leaf @ Leaf::FullExcept(_) => {
                let Leaf::FullExcept(x) = leaf else {
                    unreachable!()
                };
                if let Ok(k) = x.binary_search(&(b as u16)) {
                    x.remove(k);
                    if x.is_empty() {
                        *leaf = Leaf::Full;
                    }
                }
                return;
            }
            leaf @ Leaf::Clear => {
                let mut w = Box::new([0u64; WORDS]);
                w[(b / 64) as usize] |= 1 << (b % 64);
                *leaf = Leaf::Bits(w);
                false
            }
            Leaf::Bits(w) => {
                let word = &mut w[(b / 64) as usize];
                *word |= 1 << (b % 64);
                // A word just filled may have filled the leaf.
                *word == u64::MAX
            }
        };
        if full {
            let len = self.leaf_len(i);
            if self.leaf_count(i) == len {
                self.leaves[i] = Leaf::Full;
            } else if let Leaf::Bits(w) = &self.leaves[i] {
                if let Some(x) = TrackBits::exceptions(w, len) {
                    self.leaves[i] = Leaf::FullExcept(x);
                }
            }
        }
    }

    /// Clear track `t` (no effect beyond the set's range).
    pub fn clear(&mut self, t: Track) {
        let i = (t.0 / LEAF) as usize;
        if i >= self.leaves.len() || t.0 >= self.n {
            return;
        }
        let b = t.0 % LEAF;
        match &mut self.leaves[i] {
            leaf @ Leaf::Full => {
                *leaf = Leaf::FullExcept(Box::new(vec![b as u16]));
                return;
            }
            Leaf::FullExcept(x) => {
                let Err(k) = x.binary_search(&(b as u16)) else {
                    return;
                };
                if x.len() < EXCEPT {
                    x.insert(k, b as u16);
                    return;
                }
            }
            _ => {}
        }
        if let Leaf::FullExcept(x) = &self.leaves[i] {
            let mut w = Box::new([0u64; WORDS]);
            for k in 0..self.leaf_len(i) {
                w[(k / 64) as usize] |= 1 << (k % 64);
            }
            for &k in x.iter() {
                w[(k / 64) as usize] &= !(1 << (k % 64));
            }
            self.leaves[i] = Leaf::Bits(w);
        }
        if self.leaves[i] == Leaf::Full {
            let mut w = Box::new([0u64; WORDS]);
            for k in 0..self.leaf_len(i) {
                w[(k / 64) as usize] |= 1 << (k % 64);
            }
            self.leaves[i] = Leaf::Bits(w);
        }
        if let Leaf::Bits(w) = &mut self.leaves[i] {
            w[(b / 64) as usize] &= !(1 << (b % 64));
            if w.iter().all(|&x| x == 0) {
                self.leaves[i] = Leaf::Clear;
            }
        }
    }

    /// Set every track of the range: each leaf becomes a marker, its bits freed.
    pub fn set_all(&mut self) {
        self.leaves.fill(Leaf::Full);
    }

    /// Whether no track is set.
    pub fn is_empty(&self) -> bool {
        self.leaves.iter().all(|l| *l == Leaf::Clear)
    }

    fn leaf_count(&self, i: usize) -> u64 {
        match &self.leaves[i] {
            Leaf::Clear => 0,
            Leaf::Full => self.leaf_len(i),
            Leaf::Bits(w) => w.iter().map(|x| x.count_ones() as u64).sum(),
            Leaf::FullExcept(x) => self.leaf_len(i) - x.len() as u64,
        }
    }

    /// Number of tracks set.
    pub fn count(&self) -> u64 {
        (0..self.leaves.len()).map(|i| self.leaf_count(i)).sum()
    }

    /// The tracks set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = Track> + '_ {
        self.leaves.iter().enumerate().flat_map(move |(i, leaf)| {
            let base = i as u64 * LEAF;
            let (words, full, except): (Option<&[u64; WORDS]>, u64, &[u16]) = match leaf {
                Leaf::Clear => (None, 0, &[]),
                Leaf::Full => (None, self.leaf_len(i), &[]),
                Leaf::Bits(w) => (Some(w), 0, &[]),
                Leaf::FullExcept(x) => (None, self.leaf_len(i), x),
            };
            let full_run = (0..full)
                .filter(move |&k| except.binary_search(&(k as u16)).is_err())
                .map(move |k| Track(base + k));
            let bits = words.into_iter().flat_map(move |w| {
                w.iter().enumerate().flat_map(move |(j, &word)| {
                    let mut word = word;
                    std::iter::from_fn(move || {
                        if word == 0 {
                            return None;
                        }
                        let b = word.trailing_zeros() as u64;
                        word &= word - 1;
                        Some(Track(base + j as u64 * 64 + b))
                    })
                })
            });
            full_run.chain(bits)
        })
    }

    /// Heap bytes of the leaf slots and of the partly set leaves' bits and lists.
    pub fn heap_bytes(&self) -> u64 {
        let bits: usize = self
            .leaves
            .iter()
            .map(|l| match l {
                Leaf::Bits(_) => WORDS * 8,
                Leaf::FullExcept(x) => 24 + x.capacity() * 2,
                _ => 0,
            })
            .sum();
        (self.leaves.capacity() * std::mem::size_of::<Leaf>() + bits) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_clear_iterate() {
        let mut b = TrackBits::new(130);
        for t in [0, 63, 64, 129] {
            b.set(Track(t));
        }
        assert!(b.get(Track(63)) && !b.get(Track(62)) && !b.get(Track(10_000)));
        assert_eq!(
            b.iter().collect::<Vec<_>>(),
            vec![Track(0), Track(63), Track(64), Track(129)]
        );
        assert_eq!(b.count(), 4);
        b.clear(Track(63));
        assert_eq!(b.count(), 3);
        assert!(!TrackBits::default().get(Track(0)));
        assert!(TrackBits::new(10).is_empty());
    }

    /// Against a plain vector of booleans, across leaves, full leaves and a
    /// partial last leaf.
    #[test]
    fn matches_a_plain_bitmap() {
        let n = 3 * LEAF + 100;
        let mut b = TrackBits::new(n);
        let mut v = vec![false; n as usize];
        let mut x: u64 = 12345;
        for step in 0..40_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Fill leaf 1 and the partial last leaf completely, scatter elsewhere.
            let t = match step % 4 {
                0 => LEAF + step / 4 % LEAF,
                1 => 3 * LEAF + step % 100,
                _ => x % n,
            };
            if step % 7 == 0 && step > 20_000 {
                b.clear(Track(t));
                v[t as usize] = false;
            } else {
                b.set(Track(t));
                v[t as usize] = true;
            }
        }
        let want: Vec<Track> = (0..n).filter(|&t| v[t as usize]).map(Track).collect();
        assert_eq!(b.iter().collect::<Vec<_>>(), want);
        assert_eq!(b.count(), want.len() as u64);
        for t in 0..n {
            assert_eq!(b.get(Track(t)), v[t as usize], "{t}");
        }
        // set_all covers exactly the range; clearing a track of a full leaf works.
        b.set_all();
        assert_eq!(b.count(), n);
        assert_eq!(b.iter().count() as u64, n);
        b.clear(Track(n - 1));
        assert!(!b.get(Track(n - 1)) && b.get(Track(n - 2)));
        assert_eq!(b.count(), n - 1);
        // Full leaves losing tracks: a list of a few, then a bitmap past 64,
        // and back as tracks are set again.
        let mut v = vec![true; n as usize];
        v[n as usize - 1] = false;
        for step in 0..3000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let t = if step < 1500 { x % (2 * LEAF) } else { x % n };
            if step % 3 == 2 {
                b.set(Track(t));
                v[t as usize] = true;
            } else {
                b.clear(Track(t));
                v[t as usize] = false;
            }
            if step % 500 == 0 {
                for t in 0..n {
                    assert_eq!(b.get(Track(t)), v[t as usize], "step {step}, track {t}");
                }
            }
        }
        let want: Vec<Track> = (0..n).filter(|&t| v[t as usize]).map(Track).collect();
        assert_eq!(b.iter().collect::<Vec<_>>(), want);
        assert_eq!(b.count(), want.len() as u64);
    }

    /// Memory follows the tracks set: a huge set with a few tracks, or with
    /// all of them, costs kilobytes.
    #[test]
    fn a_huge_set_costs_its_leaf_slots_only() {
        let n = 100_000_000;
        let mut b = TrackBits::new(n);
        for t in [0, 5, 50_000_000, n - 1] {
            b.set(Track(t));
        }
        assert!(b.heap_bytes() < 500_000, "{}", b.heap_bytes());
        let mut full = TrackBits::new(n);
        for t in 0..3 * LEAF {
            full.set(Track(t));
        }
        // Filled leaves collapse to markers.
        assert_eq!(full.heap_bytes(), TrackBits::new(n).heap_bytes());
        full.set_all();
        assert_eq!(full.count(), n);
        // A full set with a few tracks clear in every leaf (a layer's
        // reserved tracks spread over a full drive) keeps lists, not bitmaps.
        let mut holes = TrackBits::new(n);
        let mut set = 0;
        for t in 0..n {
            if t % LEAF >= 16 {
                holes.set(Track(t));
                set += 1;
            }
        }
        let leaves = n.div_ceil(LEAF);
        assert!(holes.heap_bytes() < 96 * leaves, "{}", holes.heap_bytes());
        assert_eq!(holes.count(), set);
        assert!(!holes.get(Track(LEAF + 3)) && holes.get(Track(LEAF + 16)));
        holes.clear(Track(LEAF + 20));
        holes.set(Track(LEAF + 3));
        assert!(!holes.get(Track(LEAF + 20)) && holes.get(Track(LEAF + 3)));
    }
}
