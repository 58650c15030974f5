//! The layer metadata records of one track.
//!
//! A buffer layer keeps a record on every sector it writes (Amphisbaena's
//! and Fluid's slots: 512 records a track on exos-x18z), in whatever order
//! its free slots come, and every write drops the records it overwrites.
//! A list scanned per write made that a third of such a layer's run; an
//! ordered map, a list per sector, and a list sorted by sector (searched
//! by bisection, a cache miss a step) each cost a fifth or more.
//!
//! So a track keeps its first few records in a list, and once it has more
//! (and at least one for every [`SECTORS_PER_RECORD`] sectors), an index
//! from each sector to the records starting there (4 bytes a sector,
//! chained in order of writing): a record written or dropped then costs
//! the sectors it spans, not the track's records. Records of up to
//! [`INLINE`] words keep them in place, not in a buffer of their own: the
//! typical record (a slot's four words) then costs no allocation and one
//! cache line.

use super::MetaRecord;

/// Records a track keeps in its list before it may get an index.
const SHORT: usize = 16;
/// Sectors a record at most may cost in the index: a track whose records
/// are sparser keeps them in its list (S-block's log puts some 60 records
/// on tracks of 12,000 sectors, where an index cost 100 MB on a long run).
const SECTORS_PER_RECORD: usize = 8;
/// Words a record keeps in place.
const INLINE: usize = 4;
/// No place: the end of a chain, an empty free list, or (in the index) a
/// sector no record starts on.
const NONE: u32 = u32::MAX;
/// The sector of a lost place (on the free chain, in an indexed track).
const LOST: u32 = u32::MAX;

/// A record's words: in place, or (longer) in a buffer of their own.
#[derive(Debug)]
enum Words {
    Inline(u8, [u64; INLINE]),
    Heap(Vec<u64>),
}

impl Words {
    /// Words from a record's buffer, which goes back to `spare` when its
    /// words fit in place.
    fn from_vec(w: Vec<u64>, spare: &mut impl FnMut(Vec<u64>)) -> Words {
        if w.len() <= INLINE {
            let mut a = [0; INLINE];
            a[..w.len()].copy_from_slice(&w);
            let n = w.len() as u8;
            spare(w);
            Words::Inline(n, a)
        } else {
            Words::Heap(w)
        }
    }

    fn as_slice(&self) -> &[u64] {
        match self {
            Words::Inline(n, a) => &a[..*n as usize],
            Words::Heap(v) => v,
        }
    }
}

/// A record in a track's store.
#[derive(Debug)]
struct Place {
    sector: u32,
    count: u32,
    /// The next record starting on the same sector (or the next free place).
    next: u32,
    words: Words,
}

impl Place {
    fn record(&self) -> MetaRecord {
        MetaRecord {
            sector: self.sector,
            count: self.count,
            words: self.words.as_slice().to_vec(),
        }
    }
}

/// One track's records. Records starting on one sector keep the order they
/// were written in.
#[derive(Debug)]
pub(super) struct TrackRecords {
    /// Every record's place; lost ones are chained from `free`.
    places: Vec<Place>,
    free: u32,
    live: usize,
    /// Empty while the track keeps its records in a list (its places in
    /// order of writing, none lost); then, by sector, the first record
    /// starting there.
    first: Vec<u32>,
    /// Sectors of the longest record held since the track was last empty:
    /// no record meeting a range starts further before it than this.
    longest: u32,
    /// One past the last sector a record held since then starts on.
    end: u32,
}

impl Default for TrackRecords {
    fn default() -> Self {
        TrackRecords {
            places: vec![],
            free: NONE,
            live: 0,
            first: vec![],
            longest: 0,
            end: 0,
        }
    }
}

impl TrackRecords {
    /// Add a record after those already held; a buffer its words leave
    /// goes to `spare`.
    pub(super) fn push(&mut self, r: MetaRecord, mut spare: impl FnMut(Vec<u64>)) {
        self.longest = self.longest.max(r.count);
        self.end = self.end.max(r.sector + 1);
        self.live += 1;
        let place = Place {
            sector: r.sector,
            count: r.count,
            next: NONE,
            words: Words::from_vec(r.words, &mut spare),
        };
        if self.first.is_empty() {
            if self.places.len() < SHORT
                || self.end as usize > SECTORS_PER_RECORD * self.places.len()
            {
                self.places.push(place);
                return;
            }
            self.index();
        }
        let at = if self.free != NONE {
            let at = self.free;
            self.free = self.places[at as usize].next;
            self.places[at as usize] = place;
            at
        } else {
            self.places.push(place);
            (self.places.len() - 1) as u32
        };
        self.link(at);
    }

    /// Put place `at` at the end of its sector's chain in the index.
    fn link(&mut self, at: u32) {
        let s = self.places[at as usize].sector as usize;
        if self.first.len() <= s {
            self.first.resize(s + 1, NONE);
        }
        // Chains are usually empty: one record a sector.
        if self.first[s] == NONE {
            self.first[s] = at;
        } else {
            let mut last = self.first[s];
            while self.places[last as usize].next != NONE {
                last = self.places[last as usize].next;
            }
            self.places[last as usize].next = at;
        }
    }

    /// Index the list's records by sector (in their order of writing).
    fn index(&mut self) {
        self.first.clear();
        self.first.resize(self.end as usize, NONE);
        for at in 0..self.places.len() as u32 {
            self.link(at);
        }
    }

    /// Whether the track holds no record.
    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Remove the records that meet sectors `[lo, hi)`, handing each one's
    /// word buffer (if it had one) to `lost`.
    pub(super) fn drop_range(&mut self, lo: u32, hi: u32, mut lost: impl FnMut(Vec<u64>)) {
        let meets = |p: &Place| p.sector < hi && p.sector.saturating_add(p.count) > lo;
        let mut take = |w: &mut Words| {
            if let Words::Heap(v) = std::mem::replace(w, Words::Inline(0, [0; INLINE])) {
                lost(v);
            }
        };
        if self.first.is_empty() {
            let before = self.places.len();
            self.places.retain_mut(|p| {
                let m = meets(p);
                if m {
                    take(&mut p.words);
                }
                !m
            });
            self.live -= before - self.places.len();
        } else {
            // A record meets the range when it starts before `hi` and ends
            // after `lo`, so it starts at `lo + 1 - count` or later.
            let from = lo.saturating_add(1).saturating_sub(self.longest) as usize;
            let to = (hi as usize).min(self.first.len());
            for s in from..to {
                let mut link = self.first[s];
                let mut prev = NONE;
                while link != NONE {
                    let p = &mut self.places[link as usize];
                    let next = p.next;
                    if meets(p) {
                        take(&mut p.words);
                        p.sector = LOST;
                        p.next = self.free;
                        self.free = link;
                        self.live -= 1;
                        if prev == NONE {
                            self.first[s] = next;
                        } else {
                            self.places[prev as usize].next = next;
                        }
                    } else {
                        prev = link;
                    }
                    link = next;
                }
            }
        }
        if self.live == 0 {
            self.clear(|_| ());
        } else if !self.first.is_empty() && self.places.len() > 2 * self.live + SHORT {
            self.compact();
        }
    }

    /// Keep only the live places (in sector order, each sector's in order
    /// of writing) and index them anew, in place (no allocation): a track's
    /// places otherwise stay at the most records it ever held (an E-region
    /// log track once full of one-sector extents), which on a long run was
    /// most of the memory.
    fn compact(&mut self) {
        // Each live place's rank in its sector's chain, in `next`.
        for s in 0..self.first.len() {
            let (mut link, mut rank) = (self.first[s], 0);
            while link != NONE {
                let p = &mut self.places[link as usize];
                link = p.next;
                p.next = rank;
                rank += 1;
            }
        }
        self.places.retain(|p| p.sector != LOST);
        self.places.sort_unstable_by_key(|p| (p.sector, p.next));
        for p in &mut self.places {
            p.next = NONE;
        }
        self.free = NONE;
        self.index();
    }

    /// Empty the track, keeping its room, handing each record's word
    /// buffer (if it had one) to `lost`.
    pub(super) fn clear(&mut self, mut lost: impl FnMut(Vec<u64>)) {
        for p in self.places.drain(..) {
            if let Words::Heap(v) = p.words {
                lost(v);
            }
        }
        self.first.clear();
        self.free = NONE;
        self.live = 0;
        self.longest = 0;
        self.end = 0;
    }

    /// The records, in sector order (and order of writing on one sector).
    pub(super) fn records(&self) -> Vec<MetaRecord> {
        if self.first.is_empty() {
            let mut v: Vec<MetaRecord> = self.places.iter().map(Place::record).collect();
            v.sort_by_key(|r| r.sector); // stable: order of writing kept
            return v;
        }
        let mut v = Vec::with_capacity(self.live);
        for &head in &self.first {
            let mut link = head;
            while link != NONE {
                let p = &self.places[link as usize];
                v.push(p.record());
                link = p.next;
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sector: u32, tag: u64) -> MetaRecord {
        MetaRecord {
            sector,
            count: 1,
            words: vec![tag; 1 + (tag % 6) as usize],
        }
    }

    /// Once most of an indexed track's records are lost, its places are
    /// swept to the live ones, which keep their order (two on a sector in
    /// order of writing) and their words, and the track goes on working.
    #[test]
    fn sweeping_lost_places_keeps_every_live_record_in_order() {
        let mut track = TrackRecords::default();
        let mut plain = vec![];
        for s in 0..200 {
            for tag in [u64::from(s) * 2, u64::from(s) * 2 + 1] {
                track.push(rec(s, tag), |_| ());
                plain.push(rec(s, tag));
            }
        }
        assert!(!track.first.is_empty(), "indexed");
        // Keep sectors 0, 7, 150 and 199.
        for (lo, hi) in [(1, 7), (8, 150), (151, 199)] {
            track.drop_range(lo, hi, |_| ());
        }
        plain.retain(|r| [0, 7, 150, 199].contains(&r.sector));
        assert_eq!(track.records(), plain);
        assert!(
            track.places.len() <= 2 * track.live + SHORT,
            "{} places",
            track.places.len()
        );
        for s in [3, 0, 150] {
            track.push(rec(s, 1000 + u64::from(s)), |_| ());
            plain.push(rec(s, 1000 + u64::from(s)));
        }
        plain.sort_by_key(|r| r.sector);
        assert_eq!(track.records(), plain);
    }

    proptest::proptest! {
        /// The records are those of a plain list in write order, read back
        /// in sector order, through long runs of drops and writes that
        /// reuse lost places, share sectors (a record put without a write,
        /// as `Device::tag_range` may), pass from the list to the
        /// index, and have words in place and in buffers of their own
        /// (which are handed back when lost).
        #[test]
        fn records_match_a_plain_list(
            ops in proptest::collection::vec(
                (0u8..5, 0u32..160, 1u32..4, 0u32..6),
                1..1500,
            )
        ) {
            let mut track = TrackRecords::default();
            let mut plain: Vec<MetaRecord> = vec![];
            for (k, &(op, s, n, run)) in ops.iter().enumerate() {
                if op < 3 {
                    // A buffer's write: the sectors' old records dropped
                    // (but for a tag alone), one put per sector.
                    if op > 0 {
                        track.drop_range(s, s + run + 1, |_| ());
                        plain.retain(|r| !(r.sector < s + run + 1 && r.sector + r.count > s));
                    }
                    for i in 0..=run {
                        let mut words = vec![k as u64, i as u64];
                        words.resize(2 + (k + i as usize) % 5, 0);
                        let r = MetaRecord { sector: s + i, count: n, words };
                        track.push(r.clone(), |_| ());
                        plain.push(r);
                    }
                } else {
                    let mut lost = vec![];
                    track.drop_range(s, s + n, |w| lost.push(w));
                    let mut want = vec![];
                    plain.retain(|r| {
                        let meets = r.sector < s + n && r.sector + r.count > s;
                        if meets && r.words.len() > INLINE {
                            want.push(r.words.clone());
                        }
                        !meets
                    });
                    lost.sort();
                    want.sort();
                    proptest::prop_assert_eq!(lost, want);
                }
                proptest::prop_assert_eq!(track.is_empty(), plain.is_empty());
            }
            let mut want = plain.clone();
            want.sort_by_key(|r| r.sector);
            proptest::prop_assert_eq!(track.records(), want);
            let mut words = vec![];
            track.clear(|w| words.push(w));
            proptest::prop_assert!(track.is_empty() && track.records().is_empty());
            let mut all: Vec<_> = plain.into_iter().map(|r| r.words).filter(|w| w.len() > INLINE).collect();
            words.sort();
            all.sort();
            proptest::prop_assert_eq!(words, all);
        }
    }
}
