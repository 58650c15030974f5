//! The drive's starting state: which host data the medium holds before the
//! first request of a run.
//!
//! Real drives are mostly full, and the papers analyse full drives (IMR
//! neighbours hold data; He & Du fold traces into a usage level). A
//! *prefilled* sector holds version 0 of the host LBA whose initial home it
//! is. Nothing is stored per sector: the medium keeps one bit per physical
//! track (is it prefilled?) plus the host-to-home address map of the layer's
//! reserved ranges, and works out a prefilled sector's contents when asked.
//! A 20 TB drive of 13 million tracks prefilled to 100 % costs 1.6 MB.
//!
//! Two ways to prefill ([`PrefillSpec`]):
//! * a fraction F of the host capacity: host LBAs `0 .. F * capacity`;
//! * `footprint`: every home track the trace will touch, whole.
//!
//! Prefilling costs no simulated time.

use crate::geometry::Geometry;
use crate::medium::Token;
use crate::track_bits::TrackBits;
use crate::units::{Lba, PhysAddr, Sectors, Track};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How much of the drive holds data when a run starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PrefillSpec {
    /// Host LBAs `0 .. F * capacity` hold data (0.0: an empty drive; 1.0: a full one).
    Fraction(f64),
    /// Every home track the trace will touch holds data (needs a first pass over the trace).
    Footprint,
}

impl PrefillSpec {
    /// Check the value (a fraction must lie in [0, 1]).
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            PrefillSpec::Fraction(f) if !(0.0..=1.0).contains(&f) => Err(format!(
                "prefill {f} must be a fraction between 0 and 1, or 'footprint'"
            )),
            _ => Ok(()),
        }
    }
    /// Whether the drive starts with no data.
    pub fn is_empty(&self) -> bool {
        matches!(*self, PrefillSpec::Fraction(f) if f == 0.0)
    }
}

impl Serialize for PrefillSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            PrefillSpec::Fraction(f) => s.serialize_f64(f),
            PrefillSpec::Footprint => s.serialize_str("footprint"),
        }
    }
}

impl<'de> Deserialize<'de> for PrefillSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(f) => Ok(PrefillSpec::Fraction(f)),
            Raw::Text(t) if t == "footprint" => Ok(PrefillSpec::Footprint),
            Raw::Text(t) => match t.parse::<f64>() {
                Ok(f) => Ok(PrefillSpec::Fraction(f)),
                Err(_) => Err(serde::de::Error::custom(format!(
                    "prefill '{t}' is not a fraction between 0 and 1 or 'footprint'"
                ))),
            },
        }
    }
}

/// The host-to-home address map around the ranges a layer reserves for
/// itself (home LBAs that hold no host data), as the layer set it up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HomeMap {
    /// Reserved home ranges `(start, len)`, sorted and disjoint.
    reserved: Vec<(u64, u64)>,
    /// Reserved sectors before each range.
    before: Vec<u64>,
    /// The host LBA each range comes before (`start - before`): a host
    /// LBA at or past it lies past the range. Non-decreasing, so a host LBA's
    /// ranges are found by a binary search (layers reserve thousands).
    host_start: Vec<u64>,
}

/// Sort `(start, len)` ranges and merge those that overlap or touch.
pub fn merge_ranges(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    union_sorted(&ranges, &[])
}

/// The merged union of two lists of `(start, len)` ranges, each sorted by
/// start (empty ranges dropped, overlapping or touching ones merged), in
/// one linear pass: [`merge_ranges`] of both without a sort (the final scan
/// joins a large footprint's ranges and the host ranges on the tracks it
/// touched).
pub fn union_sorted(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    debug_assert!(a.is_sorted() && b.is_sorted());
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    loop {
        let (s, l) = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x <= y => {
                i += 1;
                x
            }
            (_, Some(&y)) => {
                j += 1;
                y
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (None, None) => break,
        };
        if l == 0 {
            continue;
        }
        match merged.last_mut() {
            Some((ms, ml)) if *ms + *ml >= s => *ml = (*ml).max(s + l - *ms),
            _ => merged.push((s, l)),
        }
    }
    merged
}

impl HomeMap {
    /// The map around these reserved home ranges (any order; touching ranges are merged).
    pub fn new(reserved: &[(Lba, Sectors)]) -> HomeMap {
        let merged = merge_ranges(reserved.iter().map(|x| (x.0 .0, x.1 .0)).collect());
        let mut before = vec![];
        let mut acc = 0;
        for &(_, l) in &merged {
            before.push(acc);
            acc += l;
        }
        let host_start = merged.iter().zip(&before).map(|(r, b)| r.0 - b).collect();
        HomeMap {
            reserved: merged,
            before,
            host_start,
        }
    }

    /// The home LBA of a host LBA.
    #[inline]
    pub fn home_of_host(&self, host: u64) -> u64 {
        self.locate(host).0
    }

    /// The home LBA of a host LBA, and how many reserved ranges lie before
    /// it (so `reserved[k]`, if any, is the next one after it).
    #[inline]
    fn locate(&self, host: u64) -> (u64, usize) {
        // Ranges [0, k) lie before it: it moves past each.
        let k = self.host_start.partition_point(|&s| s <= host);
        match k {
            0 => (host, 0),
            _ => (host + self.before[k - 1] + self.reserved[k - 1].1, k),
        }
    }

    /// Split host `[host, host + n)` into home-contiguous pieces: calls
    /// `f(home, count, offset_in_request)`.
    pub fn for_home_pieces(&self, host: u64, n: u64, mut f: impl FnMut(u64, u64, u64)) {
        let mut off = 0;
        while off < n {
            let (home, take) = self.home_piece(host + off, n - off);
            f(home, take, off);
            off += take;
        }
    }

    /// The first home-contiguous piece of host `[host, host + n)`: its home
    /// LBA and length (up to where the next reserved range starts).
    #[inline]
    pub fn home_piece(&self, host: u64, n: u64) -> (u64, u64) {
        // A host LBA never lies in a reserved range, so the next range
        // after its home is the first of those not before it (one search).
        let (home, k) = self.locate(host);
        let next = self.reserved.get(k).map_or(u64::MAX, |r| r.0);
        (home, n.min(next - home))
    }

    /// The reserved home ranges `(start, len)`, sorted.
    pub fn reserved(&self) -> &[(u64, u64)] {
        &self.reserved
    }

    /// The host LBA stored at home LBA `home` (or `None` inside a reserved
    /// range), and how many home LBAs from it on continue the same way
    /// (consecutive host LBAs, or reserved ones), up to the next boundary.
    pub fn host_run(&self, home: u64) -> (Option<u64>, u64) {
        let i = self.reserved.partition_point(|r| r.0 <= home);
        let next = self.reserved.get(i).map_or(u64::MAX, |r| r.0);
        if i == 0 {
            return (Some(home), next - home);
        }
        let (s, l) = self.reserved[i - 1];
        if home < s + l {
            (None, s + l - home)
        } else {
            (Some(home - self.before[i - 1] - l), next - home)
        }
    }

    /// The host LBA stored at a home LBA, or `None` inside a reserved range.
    pub fn host_of_home(&self, home: u64) -> Option<u64> {
        let i = self.reserved.partition_point(|r| r.0 <= home);
        if i == 0 {
            return Some(home);
        }
        let (s, l) = self.reserved[i - 1];
        if home < s + l {
            None
        } else {
            Some(home - self.before[i - 1] - l)
        }
    }

    /// Host ranges `(start, len)` stored at home LBAs `[lo, hi)`, in order.
    pub fn host_ranges(&self, lo: u64, hi: u64, mut f: impl FnMut(u64, u64)) {
        let mut cur = lo;
        while cur < hi {
            let i = self.reserved.partition_point(|r| r.0 <= cur);
            if i > 0 {
                let (s, l) = self.reserved[i - 1];
                if cur < s + l {
                    cur = s + l;
                    continue;
                }
            }
            let next = self
                .reserved
                .get(i)
                .map(|r| r.0)
                .unwrap_or(u64::MAX)
                .min(hi);
            if let Some(h) = self.host_of_home(cur) {
                f(h, next - cur);
            }
            cur = next;
        }
    }
}

/// What the medium held before the first request: prefilled physical
/// tracks and, for each, the host data they hold.
#[derive(Clone, Debug, Default)]
pub struct Prefill {
    /// Host LBAs below this hold data on prefilled tracks.
    limit: u64,
    map: HomeMap,
    tracks: TrackBits,
    footprint: bool,
}

impl Prefill {
    /// No prefill: every sector starts empty.
    pub fn none() -> Prefill {
        Prefill::default()
    }

    /// Host LBAs `[0, limit)` hold data, at their homes by `map`.
    pub fn below(geom: &Geometry, map: HomeMap, limit: u64) -> Prefill {
        let mut tracks = TrackBits::new(if limit > 0 { geom.tracks() } else { 0 });
        if limit > 0 {
            for lt in 0..geom.logical_tracks() {
                let (s, e) = (
                    geom.logical_track_start(lt).0,
                    geom.logical_track_start(lt + 1).0,
                );
                let mut first = None;
                map.host_ranges(s, e, |h, _| {
                    first.get_or_insert(h);
                });
                if first.is_some_and(|h| h < limit) {
                    tracks.set(geom.logical_track_phys(lt));
                }
            }
        }
        Prefill {
            limit,
            map,
            tracks,
            footprint: false,
        }
    }

    /// These physical (home) tracks hold their host data, whole.
    pub fn tracks(map: HomeMap, tracks: TrackBits) -> Prefill {
        Prefill {
            limit: u64::MAX,
            map,
            tracks,
            footprint: true,
        }
    }

    /// Whether any track is prefilled.
    pub fn any(&self) -> bool {
        self.limit > 0 && !self.tracks.is_empty()
    }

    /// Host LBAs below this may be prefilled (`u64::MAX` for a footprint prefill).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether this is a footprint prefill (whole touched tracks).
    pub fn is_footprint(&self) -> bool {
        self.footprint
    }

    /// The layer's host-to-home map the prefill was laid out with.
    pub fn map(&self) -> &HomeMap {
        &self.map
    }

    /// Whether physical track `t` holds prefilled data.
    #[inline]
    pub fn track(&self, t: Track) -> bool {
        self.tracks.get(t)
    }

    /// Forget the prefilled data of track `t` (a zone reset emptied it).
    pub fn clear_track(&mut self, t: Track) {
        self.tracks.clear(t);
    }

    /// Mark track `t` prefilled (zones are prefilled from their start).
    pub fn set_track(&mut self, t: Track) {
        if self.tracks.heap_bytes() == 0 {
            return;
        }
        self.tracks.set(t);
    }

    /// Number of prefilled tracks.
    pub fn track_count(&self) -> u64 {
        self.tracks.count()
    }

    /// The prefilled tracks, ascending.
    pub fn iter_tracks(&self) -> impl Iterator<Item = Track> + '_ {
        self.tracks.iter()
    }

    /// What prefilled sector `at` holds (an empty token if it holds nothing).
    pub fn token(&self, geom: &Geometry, at: PhysAddr) -> Token {
        if !self.tracks.get(at.track) {
            return Token::EMPTY;
        }
        match geom.home_lba(at).and_then(|h| self.map.host_of_home(h.0)) {
            Some(host) if host < self.limit => Token::data(Lba(host), 0),
            _ => Token::EMPTY,
        }
    }

    /// Append the prefilled contents of `count` sectors from `at` to `out`.
    /// A track's sectors hold consecutive home LBAs, and the host map is
    /// monotone between reserved ranges, so this goes a stretch at a time.
    pub fn tokens(&self, geom: &Geometry, at: PhysAddr, count: u32, out: &mut Vec<Token>) {
        let home = match geom.home_lba(at) {
            Some(h) if self.tracks.get(at.track) => h.0,
            _ => {
                out.extend(std::iter::repeat_n(Token::EMPTY, count as usize));
                return;
            }
        };
        let (mut h, end) = (home, home + count as u64);
        while h < end {
            let (host, run) = self.map.host_run(h);
            let k = run.min(end - h);
            match host {
                Some(first) => {
                    // Host LBAs at or past the limit started empty.
                    let data = self.limit.saturating_sub(first).min(k);
                    out.extend((first..first + data).map(|l| Token::data(Lba(l), 0)));
                    out.extend(std::iter::repeat_n(Token::EMPTY, (k - data) as usize));
                }
                None => out.extend(std::iter::repeat_n(Token::EMPTY, k as usize)),
            }
            h += k;
        }
    }

    /// Whether host LBA `host` started with data (version 0).
    pub fn holds_host(&self, geom: &Geometry, host: u64) -> bool {
        if host >= self.limit || !self.any() {
            return false;
        }
        let home = self.map.home_of_host(host);
        home < geom.capacity().0 && self.tracks.get(geom.home(Lba(home)).track)
    }

    /// The host ranges `(start, len)` prefilled on physical track `t`.
    pub fn host_ranges_on(&self, geom: &Geometry, t: Track, mut f: impl FnMut(u64, u64)) {
        if !self.tracks.get(t) {
            return;
        }
        let Some(lt) = geom.phys_logical_track(t) else {
            return;
        };
        let (s, e) = (
            geom.logical_track_start(lt).0,
            geom.logical_track_start(lt + 1).0,
        );
        let limit = self.limit;
        self.map.host_ranges(s, e, |h, n| {
            let n = n.min(limit.saturating_sub(h));
            if n > 0 {
                f(h, n);
            }
        });
    }

    /// Heap bytes the prefill costs.
    pub fn heap_bytes(&self) -> u64 {
        self.tracks.heap_bytes()
            + (self.map.reserved.capacity() * 16
                + (self.map.before.capacity() + self.map.host_start.capacity()) * 8)
                as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_map_skips_reserved_ranges_both_ways() {
        let m = HomeMap::new(&[(Lba(100), Sectors(50)), (Lba(300), Sectors(10))]);
        assert_eq!(m.home_of_host(99), 99);
        assert_eq!(m.home_of_host(100), 150);
        assert_eq!(m.home_of_host(249), 299);
        assert_eq!(m.home_of_host(250), 310);
        for host in [0, 99, 100, 249, 250, 1000] {
            assert_eq!(m.host_of_home(m.home_of_host(host)), Some(host));
        }
        assert_eq!(m.host_of_home(120), None);
        assert_eq!(m.host_of_home(305), None);
        let mut v = vec![];
        m.host_ranges(90, 320, |h, n| v.push((h, n)));
        assert_eq!(v, vec![(90, 10), (100, 150), (250, 10)]);
    }

    proptest::proptest! {
        /// The linear union of two sorted lists covers exactly the LBAs
        /// either covers, in sorted ranges that neither overlap nor touch,
        /// and is what sorting both together and merging gives.
        #[test]
        fn union_of_sorted_lists_is_the_merge_of_both(
            mut a in proptest::collection::vec((0u64..300, 0u64..30), 0..20),
            mut b in proptest::collection::vec((0u64..300, 0u64..30), 0..20),
        ) {
            a.sort_unstable();
            b.sort_unstable();
            let u = union_sorted(&a, &b);
            let covered: std::collections::BTreeSet<u64> =
                a.iter().chain(&b).flat_map(|&(s, n)| s..s + n).collect();
            let got: Vec<u64> = u.iter().flat_map(|&(s, n)| s..s + n).collect();
            proptest::prop_assert_eq!(got, covered.into_iter().collect::<Vec<_>>());
            for w in u.windows(2) {
                proptest::prop_assert!(w[0].0 + w[0].1 < w[1].0, "{:?}", u);
            }
            proptest::prop_assert!(u.iter().all(|r| r.1 > 0));
            let both: Vec<_> = a.iter().chain(&b).copied().collect();
            proptest::prop_assert_eq!(merge_ranges(both), u);
        }

        /// The binary searches give what walking the ranges in order gives.
        #[test]
        fn home_map_searches_agree_with_a_walk(
            ranges in proptest::collection::vec((0u64..400, 1u64..20), 0..12),
            hosts in proptest::collection::vec((0u64..500, 1u64..40), 1..20),
        ) {
            let m = HomeMap::new(&ranges.iter().map(|&(s, l)| (Lba(s), Sectors(l))).collect::<Vec<_>>());
            let walk = |host: u64| {
                let mut h = host;
                for &(s, l) in &m.reserved {
                    if h >= s {
                        h += l;
                    } else {
                        break;
                    }
                }
                h
            };
            for (host, n) in hosts {
                proptest::prop_assert_eq!(m.home_of_host(host), walk(host));
                let mut pieces = vec![];
                m.for_home_pieces(host, n, |home, k, off| pieces.push((home, k, off)));
                let mut want: Vec<(u64, u64, u64)> = vec![];
                for off in 0..n {
                    let home = walk(host + off);
                    match want.last_mut() {
                        Some(p) if p.0 + p.1 == home => p.1 += 1,
                        _ => want.push((home, 1, off)),
                    }
                }
                proptest::prop_assert_eq!(pieces, want);
            }
        }
    }

    #[test]
    fn specs_parse_from_numbers_and_words() {
        let f: PrefillSpec = serde_json::from_str("0.5").unwrap();
        assert_eq!(f, PrefillSpec::Fraction(0.5));
        let f: PrefillSpec = serde_json::from_str("\"footprint\"").unwrap();
        assert_eq!(f, PrefillSpec::Footprint);
        let f: PrefillSpec = serde_json::from_str("\"0.25\"").unwrap();
        assert_eq!(f, PrefillSpec::Fraction(0.25));
        assert!(serde_json::from_str::<PrefillSpec>("\"most\"").is_err());
        assert!(PrefillSpec::Fraction(1.5).validate().is_err());
        assert!(PrefillSpec::Fraction(1.0).validate().is_ok());
    }
}
