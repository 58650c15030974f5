//! The layer metadata records of one track, ordered by first sector.
//!
//! A buffer layer keeps a record on every sector it writes (Amphisbaena's
//! and Fluid's slots: 512 records a track on exos-x18z), and every write
//! drops the records it overwrites. A list scanned per write made that a
//! third of such a layer's run; an ordered map, and a list per sector,
//! cost as much in node operations and cache misses, and the second
//! tripled the memory of layers whose tracks hold a few records each.
//!
//! Here the records stay in one vector sorted by first sector. A write
//! finds the records it meets by binary search and marks their places
//! lost; the records written next (the common case: a buffer rewrites the
//! slots it overwrote, sector after sector) take those places, found from
//! where the last one went, so neither shifts the track's records. Lost
//! places are swept out once they are the majority.

use super::MetaRecord;

/// A record, or the place of a lost one (`live` false, no words).
#[derive(Debug)]
struct Place {
    record: MetaRecord,
    live: bool,
}

/// One track's records, sorted by first sector; records starting on one
/// sector keep the order they were written in.
#[derive(Debug, Default)]
pub(super) struct TrackRecords {
    places: Vec<Place>,
    /// Live records.
    live: usize,
    /// Sectors of the longest record held since the track was last empty:
    /// no record meeting a range starts further before it than this.
    longest: u32,
    /// Where the next record is likely to go: the first place the last drop
    /// lost, or the one after the last place reused.
    hint: usize,
}

impl TrackRecords {
    /// Add a record after those already held.
    pub(super) fn push(&mut self, r: MetaRecord) {
        self.longest = self.longest.max(r.count);
        self.live += 1;
        let s = r.sector;
        let new = Place { record: r, live: true };
        // After every record starting on or before its sector: the end, or
        // a lost place with no later-starting place before it and none
        // starting on or before its sector after it.
        if self.places.last().is_none_or(|q| q.record.sector <= s) {
            self.places.push(new);
            return;
        }
        let fits = |places: &[Place], at: usize| {
            !places[at].live
                && (at == 0 || places[at - 1].record.sector <= s)
                && places.get(at + 1).is_none_or(|q| q.record.sector > s)
        };
        let at = if self.hint < self.places.len() && fits(&self.places, self.hint) {
            Some(self.hint)
        } else {
            let p = self.places.partition_point(|q| q.record.sector <= s);
            [p.wrapping_sub(1), p]
                .into_iter()
                .find(|&at| at < self.places.len() && fits(&self.places, at))
        };
        match at {
            Some(at) => {
                self.places[at] = new;
                self.hint = at + 1;
            }
            None => {
                let p = self.places.partition_point(|q| q.record.sector <= s);
                self.places.insert(p, new);
                self.hint = p + 1;
            }
        }
    }

    /// Whether the track holds no record.
    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Remove the records that meet sectors `[lo, hi)`, handing each one's
    /// words to `lost`.
    pub(super) fn drop_range(&mut self, lo: u32, hi: u32, mut lost: impl FnMut(Vec<u64>)) {
        // A record meets the range when it starts before `hi` and ends after
        // `lo`, so it starts at `lo + 1 - count` or later.
        let from = lo.saturating_add(1).saturating_sub(self.longest);
        let start = self.places.partition_point(|q| q.record.sector < from);
        let mut first = None;
        for (i, q) in self.places[start..].iter_mut().enumerate() {
            if q.record.sector >= hi {
                break;
            }
            if q.live && q.record.sector.saturating_add(q.record.count) > lo {
                q.live = false;
                self.live -= 1;
                first.get_or_insert(start + i);
                lost(std::mem::take(&mut q.record.words));
            }
        }
        if let Some(i) = first {
            self.hint = i;
        }
        if self.live == 0 {
            self.places.clear();
            self.longest = 0;
        } else if self.places.len() > 64 && self.live * 2 < self.places.len() {
            self.places.retain(|q| q.live);
        }
    }

    /// The records, in sector order (and order of writing on one sector).
    pub(super) fn records(&self) -> Vec<MetaRecord> {
        self.places
            .iter()
            .filter(|q| q.live)
            .map(|q| q.record.clone())
            .collect()
    }

    /// Every record's words, emptying the track.
    pub(super) fn into_words(self) -> impl Iterator<Item = Vec<u64>> {
        self.places
            .into_iter()
            .filter(|q| q.live)
            .map(|q| q.record.words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The records are those of a plain list in write order, read back
        /// in sector order, through long runs of drops and writes that
        /// reuse lost places, insert between live ones, share sectors (a
        /// record put without a write, as `Device::tag_range` may) and
        /// sweep lost places out (more than 64 of them on a track).
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
                        let r = MetaRecord { sector: s + i, count: n, words: vec![k as u64, i as u64] };
                        track.push(r.clone());
                        plain.push(r);
                    }
                } else {
                    let mut lost = vec![];
                    track.drop_range(s, s + n, |w| lost.push(w));
                    let mut want = vec![];
                    plain.retain(|r| {
                        let meets = r.sector < s + n && r.sector + r.count > s;
                        if meets {
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
            let mut words: Vec<_> = track.into_words().collect();
            let mut all: Vec<_> = plain.into_iter().map(|r| r.words).collect();
            words.sort();
            all.sort();
            proptest::prop_assert_eq!(words, all);
        }
    }
}
