//! A set of physical tracks as a bitmap: one bit a track, so a 20 TB drive
//! of 13 million tracks costs 1.6 MB. Used for the prefilled tracks of the
//! medium, the tracks a verified run touched, and the layers' "written"
//! knowledge.

use crate::units::Track;

/// A bitmap of physical tracks. An empty bitmap (`TrackBits::default()`)
/// answers `false` for every track without allocating.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrackBits(Vec<u64>);

impl TrackBits {
    /// All clear, for `n` tracks.
    pub fn new(n: u64) -> TrackBits {
        TrackBits(vec![0; n.div_ceil(64) as usize])
    }
    /// Whether track `t` is set (tracks beyond the bitmap are clear).
    #[inline]
    pub fn get(&self, t: Track) -> bool {
        self.0.get((t.0 / 64) as usize).is_some_and(|w| w >> (t.0 % 64) & 1 == 1)
    }
    /// Set track `t` (which must lie within the bitmap).
    #[inline]
    pub fn set(&mut self, t: Track) {
        self.0[(t.0 / 64) as usize] |= 1 << (t.0 % 64);
    }
    /// Clear track `t` (no effect beyond the bitmap).
    pub fn clear(&mut self, t: Track) {
        if let Some(w) = self.0.get_mut((t.0 / 64) as usize) {
            *w &= !(1 << (t.0 % 64));
        }
    }
    /// Set every track.
    pub fn set_all(&mut self) {
        self.0.fill(u64::MAX);
    }
    /// Whether no track is set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    /// Number of tracks set.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|w| w.count_ones() as u64).sum()
    }
    /// The tracks set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = Track> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as u64;
                w &= w - 1;
                Some(Track(i as u64 * 64 + b))
            })
        })
    }
    /// Heap bytes used.
    pub fn heap_bytes(&self) -> u64 {
        (self.0.capacity() * 8) as u64
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
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![Track(0), Track(63), Track(64), Track(129)]);
        assert_eq!(b.count(), 4);
        b.clear(Track(63));
        assert_eq!(b.count(), 3);
        assert!(!TrackBits::default().get(Track(0)));
        assert!(TrackBits::new(10).is_empty());
    }
}
