//! The home map without a table per track: every layout repeats a *unit*
//! of tracks (an IMR group of 2N, an SMR band and its guards, a wave pair
//! of regions, one track for CMR and zoned drives), after the SMR
//! random-access zone and persistent cache. Within a unit, the data tracks
//! fall into *groups* laid unit by unit in LBA order (one group for every
//! layout but an SMR band mapping with round-robin positions, paper 002).
//! Track sizes come from the zone table: units wholly inside one zone are
//! alike, so the units form *runs* (at most two per zone: the units inside
//! it and one straddling its end). Every lookup is arithmetic plus a binary
//! search over groups and runs, and memory is proportional to the zone
//! table and the unit, never to the track count.
//!
//! The map is exactly the one the earlier per-track tables held: the test
//! `home_order_matches_the_per_track_tables` compares every lookup with them.

use super::{ImrOrder, Layout, ZoneSpec};

/// Sectors on physical track `t` of a layout whose zone there holds `base`
/// sectors a track (0 for guards).
#[inline]
pub(super) fn size_rule(layout: Layout, base: u32, t: u64) -> u32 {
    match layout {
        Layout::Imr { top_ratio, .. } if t % 2 == 1 => {
            ((base as f64 * top_ratio).round() as u32).max(1)
        }
        Layout::Smr {
            width,
            up,
            random_access,
            ..
        } if t < random_access => {
            // One usable track per head width; its overlap falls on the guards after it.
            let off = t % width;
            if (up && off == 0) || (!up && off == width - 1) {
                base
            } else {
                0
            }
        }
        Layout::Smr {
            width, up, cache, ..
        } if t < layout.bands_start() => {
            // The persistent cache: one shingled run of `cache` tracks and its guards.
            let off = t - layout.cache_unit().map(|c| c.0).unwrap_or(t);
            let guard = if up { off >= cache } else { off < width - 1 };
            if guard {
                0
            } else {
                base
            }
        }
        Layout::Smr {
            band, width, up, ..
        } => {
            let off = (t - layout.bands_start()) % (band + width - 1);
            let guard = if up { off >= band } else { off < width - 1 };
            if guard {
                0
            } else {
                base
            }
        }
        Layout::Wave { region, kappa } => {
            let off = t % (2 * region + kappa);
            if off >= region && off < region + kappa {
                0
            } else {
                base
            }
        }
        _ => base,
    }
}

/// Which offsets of a unit hold data, in LBA order, by group.
#[derive(Clone, Debug)]
enum Pattern {
    /// One data track a unit (CMR, zoned).
    Single,
    /// IMR: N bottom tracks (even offsets) and N top tracks (odd offsets).
    Imr { n: u64, order: ImrOrder },
    /// Wave: the `r` tracks of the first region, a guard band of `kappa`, the `r` of the second.
    Wave { r: u64, kappa: u64 },
    /// SMR: groups of offsets from the band mapping, and each offset's (group, index).
    Groups {
        groups: Vec<Vec<u32>>,
        at: Vec<Option<(u32, u32)>>,
    },
}

impl Pattern {
    fn groups(&self) -> usize {
        match self {
            Pattern::Groups { groups, .. } => groups.len(),
            _ => 1,
        }
    }

    fn len(&self, g: usize) -> u64 {
        match self {
            Pattern::Single => 1,
            Pattern::Imr { n, .. } => 2 * n,
            Pattern::Wave { r, .. } => 2 * r,
            Pattern::Groups { groups, .. } => groups[g].len() as u64,
        }
    }

    /// The unit offset of position `i` of group `g`.
    #[inline]
    fn offset(&self, g: usize, i: u64) -> u64 {
        match *self {
            Pattern::Single => 0,
            Pattern::Imr { n, order } => match order {
                ImrOrder::Ascending => i,
                _ if i < n => 2 * i,
                ImrOrder::ZigZag => 2 * (i - n) + 1,
                ImrOrder::Serpentine => 2 * (2 * n - 1 - i) + 1,
            },
            Pattern::Wave { r, kappa } => {
                if i < r {
                    i
                } else {
                    i + kappa
                }
            }
            Pattern::Groups { ref groups, .. } => groups[g][i as usize] as u64,
        }
    }

    /// The (group, position) of unit offset `o`, if it holds data.
    #[inline]
    fn locate(&self, o: u64) -> Option<(usize, u64)> {
        match *self {
            Pattern::Single => Some((0, 0)),
            Pattern::Imr { n, order } => Some((
                0,
                match order {
                    ImrOrder::Ascending => o,
                    _ if o.is_multiple_of(2) => o / 2,
                    ImrOrder::ZigZag => n + (o - 1) / 2,
                    ImrOrder::Serpentine => 2 * n - 1 - (o - 1) / 2,
                },
            )),
            Pattern::Wave { r, kappa } => {
                if o < r {
                    Some((0, o))
                } else if o < r + kappa {
                    None
                } else {
                    Some((0, o - kappa))
                }
            }
            Pattern::Groups { ref at, .. } => at[o as usize].map(|(g, i)| (g as usize, i as u64)),
        }
    }

    /// Top tracks (IMR odd offsets) among the first `i` positions of the
    /// (only) group: every other one in ascending order, else those past the N bottoms.
    #[inline]
    fn tops_before(&self, i: u64) -> u64 {
        match *self {
            Pattern::Imr {
                order: ImrOrder::Ascending,
                ..
            } => i / 2,
            Pattern::Imr { n, .. } => i.saturating_sub(n),
            _ => 0,
        }
    }
}

/// Consecutive units alike in their track sizes.
#[derive(Clone, Debug)]
struct Run {
    first_unit: u64,
    units: u64,
    /// Units wholly inside one zone: (a full track's sectors, an IMR top
    /// track's). `None`: a unit straddling zones (one unit; sizes per track).
    sizes: Option<(u32, u32)>,
}

/// Where the home order puts an LBA ([`HomeOrder::place`]).
struct Place {
    g: usize,
    r: usize,
    b: u64,
    i: u64,
}

/// The LBA-ordered sequence of data tracks (logical tracks) of a drive.
#[derive(Clone, Debug)]
pub(super) struct HomeOrder {
    layout: Layout,
    zones: Vec<ZoneSpec>,
    /// IMR: each zone's top-track size (the rule rounds a float; sizes are asked on every operation).
    tops: Vec<u32>,
    /// First physical track of unit 0 (after the SMR zone and cache).
    first: u64,
    /// Physical tracks in one repeating unit of the layout: 1 (CMR, zoned), 2 x
    /// `group` (IMR), `band + width - 1` (SMR), 2 x `region` + `kappa` (wave).
    unit: u64,
    /// Whole units that fit in the tracks after `first`; tracks past the last
    /// whole unit hold no LBAs.
    units: u64,
    pattern: Pattern,
    /// First logical track of each group (one more entry: the total).
    group_lt: Vec<u64>,
    /// First LBA of each group (one more entry: the capacity).
    group_lba: Vec<u64>,
    runs: Vec<Run>,
    /// `[g * runs + r]`: first LBA of run `r` within group `g`.
    run_lba: Vec<u64>,
    /// `[g * runs + r]`: sectors of group `g` in one unit of run `r`.
    run_cap: Vec<u64>,
    /// Sectors of every logical track, when they are all equal.
    pub(super) uniform: Option<u64>,
}

impl HomeOrder {
    /// The home order of `tracks` tracks of `layout` over `zones`
    /// (`positions`: an SMR band's positions by group, in shingling order).
    pub(super) fn new(
        layout: Layout,
        zones: &[ZoneSpec],
        tracks: u64,
        positions: Option<&[Vec<u32>]>,
    ) -> HomeOrder {
        let (first, unit, pattern) = match layout {
            Layout::Cmr | Layout::Zoned { .. } => (0, 1, Pattern::Single),
            Layout::Imr { group, order, .. } => (0, 2 * group, Pattern::Imr { n: group, order }),
            Layout::Wave { region, kappa } => {
                (0, 2 * region + kappa, Pattern::Wave { r: region, kappa })
            }
            Layout::Smr {
                band, width, up, ..
            } => {
                let u = band + width - 1;
                // Position p (1-based, in shingling order) of a band is this unit offset.
                let off = |p: u32| {
                    if up {
                        p as u64 - 1
                    } else {
                        width - 1 + band - p as u64
                    }
                };
                let seq: Vec<Vec<u32>> = vec![(1..=band as u32).collect()];
                let groups: Vec<Vec<u32>> = positions
                    .unwrap_or(&seq)
                    .iter()
                    .map(|g| g.iter().map(|&p| off(p) as u32).collect())
                    .collect();
                let mut at = vec![None; u as usize];
                for (gi, g) in groups.iter().enumerate() {
                    for (i, &o) in g.iter().enumerate() {
                        at[o as usize] = Some((gi as u32, i as u32));
                    }
                }
                (layout.bands_start(), u, Pattern::Groups { groups, at })
            }
        };
        let units = tracks.saturating_sub(first) / unit;
        let mut h = HomeOrder {
            layout,
            zones: zones.to_vec(),
            tops: zones
                .iter()
                .map(|z| size_rule(layout, z.sectors_per_track, 1))
                .collect(),
            first,
            unit,
            units,
            pattern,
            group_lt: vec![],
            group_lba: vec![],
            runs: vec![],
            run_lba: vec![],
            run_cap: vec![],
            uniform: None,
        };
        h.runs = h.make_runs();
        let (ng, nr) = (h.pattern.groups(), h.runs.len());
        let (mut lt, mut lba) = (0u64, 0u64);
        h.run_lba = vec![0; ng * nr];
        h.run_cap = vec![0; ng * nr];
        for g in 0..ng {
            h.group_lt.push(lt);
            h.group_lba.push(lba);
            lt += h.pattern.len(g) * units;
            for r in 0..nr {
                let cap = h.prefix(r, g, h.runs[r].first_unit, h.pattern.len(g));
                h.run_lba[g * nr + r] = lba;
                h.run_cap[g * nr + r] = cap;
                lba += cap * h.runs[r].units;
            }
        }
        h.group_lt.push(lt);
        h.group_lba.push(lba);
        h.uniform = h.uniform_size();
        h
    }

    /// The zone of track `t`.
    #[inline]
    fn zone(&self, t: u64) -> usize {
        let z = &self.zones;
        if z.len() == 1 {
            0
        } else {
            z.partition_point(|z| z.first_track <= t).max(1) - 1
        }
    }

    /// Sectors on physical track `t` (0 for guards): [`size_rule`], with the
    /// common layouts' answers taken without it.
    #[inline]
    pub(super) fn size(&self, t: u64) -> u32 {
        let zi = self.zone(t);
        let base = self.zones[zi].sectors_per_track;
        match self.layout {
            Layout::Cmr | Layout::Zoned { .. } => base,
            Layout::Imr { .. } if t % 2 == 1 => self.tops[zi],
            Layout::Imr { .. } => base,
            _ => size_rule(self.layout, base, t),
        }
    }

    fn make_runs(&self) -> Vec<Run> {
        let mut runs = vec![];
        let mut b = 0;
        while b < self.units {
            let t0 = self.first + b * self.unit;
            let zi = self.zones.partition_point(|z| z.first_track <= t0).max(1) - 1;
            let zone_end = self.zones.get(zi + 1).map_or(u64::MAX, |z| z.first_track);
            let base = self.zones[zi].sectors_per_track;
            let inside = zone_end.saturating_sub(t0) / self.unit;
            if inside >= 1 {
                let n = inside.min(self.units - b);
                // An IMR top track's size (track 1 is a top); other layouts' data tracks are full.
                let top = if matches!(self.layout, Layout::Imr { .. }) {
                    size_rule(self.layout, base, 1)
                } else {
                    base
                };
                runs.push(Run {
                    first_unit: b,
                    units: n,
                    sizes: Some((base, top)),
                });
                b += n;
            } else {
                runs.push(Run {
                    first_unit: b,
                    units: 1,
                    sizes: None,
                });
                b += 1;
            }
        }
        runs
    }

    /// Sectors of the first `i` positions of group `g` in unit `b` (of run `r`).
    #[inline]
    fn prefix(&self, r: usize, g: usize, b: u64, i: u64) -> u64 {
        match self.runs[r].sizes {
            Some((full, top)) => {
                let tops = self.pattern.tops_before(i);
                (i - tops) * full as u64 + tops * top as u64
            }
            None => {
                let base = self.first + b * self.unit;
                (0..i)
                    .map(|j| self.size(base + self.pattern.offset(g, j)) as u64)
                    .sum()
            }
        }
    }

    /// The position within group `g` of unit `b` (of run `r`) holding
    /// sector `rem` of the group's part of the unit.
    #[inline]
    fn position(&self, r: usize, g: usize, b: u64, rem: u64) -> u64 {
        match (self.runs[r].sizes, &self.pattern) {
            (Some((full, _)), Pattern::Single | Pattern::Wave { .. } | Pattern::Groups { .. }) => {
                rem / full as u64
            }
            (Some((full, top)), &Pattern::Imr { n, order }) => {
                let (full, top) = (full as u64, top as u64);
                match order {
                    ImrOrder::Ascending => {
                        let pair = rem / (full + top);
                        2 * pair + u64::from(rem % (full + top) >= full)
                    }
                    _ if rem < n * full => rem / full,
                    _ => n + (rem - n * full) / top,
                }
            }
            (None, _) => {
                let base = self.first + b * self.unit;
                let mut acc = 0;
                for j in 0..self.pattern.len(g) {
                    acc += self.size(base + self.pattern.offset(g, j)) as u64;
                    if rem < acc {
                        return j;
                    }
                }
                self.pattern.len(g) - 1
            }
        }
    }

    fn uniform_size(&self) -> Option<u64> {
        let mut size = None;
        let mut same = |s: u64| match size {
            None => {
                size = Some(s);
                true
            }
            Some(x) => x == s,
        };
        for run in &self.runs {
            match run.sizes {
                Some((full, top)) => {
                    if !same(full as u64)
                        || (matches!(self.pattern, Pattern::Imr { .. }) && !same(top as u64))
                    {
                        return None;
                    }
                }
                None => {
                    for g in 0..self.pattern.groups() {
                        for i in 0..self.pattern.len(g) {
                            let t =
                                self.first + run.first_unit * self.unit + self.pattern.offset(g, i);
                            if !same(self.size(t) as u64) {
                                return None;
                            }
                        }
                    }
                }
            }
        }
        size
    }

    /// Heap bytes held (the zone table, the unit's pattern, the runs).
    pub(super) fn heap_bytes(&self) -> u64 {
        let pattern = match &self.pattern {
            Pattern::Groups { groups, at } => {
                groups.iter().map(|g| g.capacity() * 4).sum::<usize>() + at.capacity() * 12
            }
            _ => 0,
        };
        (self.zones.capacity() * std::mem::size_of::<ZoneSpec>()
            + pattern
            + (self.group_lt.capacity()
                + self.group_lba.capacity()
                + self.run_lba.capacity()
                + self.run_cap.capacity())
                * 8
            + self.runs.capacity() * std::mem::size_of::<Run>()) as u64
    }

    /// Host-visible capacity in sectors: the last entry of `group_lba` (0 when
    /// the drive holds no whole unit).
    pub(super) fn capacity(&self) -> u64 {
        *self.group_lba.last().unwrap_or(&0)
    }

    /// Number of logical tracks.
    pub(super) fn logical_tracks(&self) -> u64 {
        *self.group_lt.last().unwrap_or(&0)
    }

    /// (group, unit, position) of logical track `lt`.
    #[inline]
    fn split(&self, lt: u64) -> (usize, u64, u64) {
        let g = if self.group_lt.len() == 2 {
            0
        } else {
            self.group_lt.partition_point(|&s| s <= lt) - 1
        };
        let rem = lt - self.group_lt[g];
        let len = self.pattern.len(g);
        (g, rem / len, rem % len)
    }

    #[inline]
    fn run_of(&self, b: u64) -> usize {
        if self.runs.len() == 1 {
            0
        } else {
            self.runs.partition_point(|r| r.first_unit <= b) - 1
        }
    }

    /// The physical track at position `i` of group `g` in unit `b`.
    #[inline]
    fn track_at(&self, g: usize, b: u64, i: u64) -> u64 {
        self.first + b * self.unit + self.pattern.offset(g, i)
    }

    /// The logical track at position `i` of group `g` in unit `b`.
    #[inline]
    fn lt_at(&self, g: usize, b: u64, i: u64) -> u64 {
        self.group_lt[g] + b * self.pattern.len(g) + i
    }

    /// The first LBA of the logical track at position `i` of group `g` in
    /// unit `b`, which run `r` holds.
    #[inline]
    fn lba_at(&self, r: usize, g: usize, b: u64, i: u64) -> u64 {
        let k = g * self.runs.len() + r;
        self.run_lba[k] + (b - self.runs[r].first_unit) * self.run_cap[k] + self.prefix(r, g, b, i)
    }

    /// The physical track of logical track `lt`.
    #[inline]
    pub(super) fn phys(&self, lt: u64) -> u64 {
        let (g, b, i) = self.split(lt);
        self.track_at(g, b, i)
    }

    /// The logical track physical track `t` holds, if it holds host data.
    #[inline]
    pub(super) fn logical(&self, t: u64) -> Option<u64> {
        if t < self.first {
            return None;
        }
        let (b, o) = ((t - self.first) / self.unit, (t - self.first) % self.unit);
        if b >= self.units {
            return None;
        }
        let (g, i) = self.pattern.locate(o)?;
        Some(self.lt_at(g, b, i))
    }

    /// First LBA of logical track `lt` (the capacity for `lt` = the count).
    #[inline]
    pub(super) fn start(&self, lt: u64) -> u64 {
        if let Some(n) = self.uniform {
            return lt * n;
        }
        if lt >= self.logical_tracks() {
            return self.capacity();
        }
        let (g, b, i) = self.split(lt);
        self.lba_at(self.run_of(b), g, b, i)
    }

    /// Where a map whose tracks differ in size puts `lba` (< capacity):
    /// group `g`, run `r`, unit `b` and position `i` in it.
    #[inline]
    fn place(&self, lba: u64) -> Place {
        let g = if self.group_lba.len() == 2 {
            0
        } else {
            self.group_lba.partition_point(|&s| s <= lba) - 1
        };
        let nr = self.runs.len();
        let lbas = &self.run_lba[g * nr..(g + 1) * nr];
        let r = if nr == 1 {
            0
        } else {
            lbas.partition_point(|&s| s <= lba) - 1
        };
        let k = g * nr + r;
        let off = lba - self.run_lba[k];
        let b = self.runs[r].first_unit + off / self.run_cap[k];
        let i = self.position(r, g, b, off % self.run_cap[k]);
        Place { g, r, b, i }
    }

    /// The logical track holding `lba` (< capacity).
    #[inline]
    pub(super) fn logical_of(&self, lba: u64) -> u64 {
        if let Some(n) = self.uniform {
            return lba / n;
        }
        let p = self.place(lba);
        self.lt_at(p.g, p.b, p.i)
    }

    /// The logical track holding `lba` (< capacity) as `(its first LBA, its
    /// physical track, its sectors)`: [`logical_of`](Self::logical_of),
    /// [`start`](Self::start), [`phys`](Self::phys) and [`size`](Self::size)
    /// in one walk. Every host read and write of a layer placing data at
    /// home asks this; the four calls repeated the group search three times
    /// and the unit division twice, and were a fourteenth of a CMR run's
    /// instructions.
    #[inline]
    pub(super) fn extent_of(&self, lba: u64) -> (u64, u64, u32) {
        if let Some(n) = self.uniform {
            let lt = lba / n;
            let track = self.phys(lt);
            return (lt * n, track, self.size(track));
        }
        let Place { g, r, b, i } = self.place(lba);
        let start = self.lba_at(r, g, b, i);
        let track = self.track_at(g, b, i);
        // A run's units lie inside one zone, whose sizes the run holds.
        let size = match (self.runs[r].sizes, self.layout) {
            (Some((full, _)), Layout::Cmr | Layout::Zoned { .. }) => full,
            (Some((full, top)), Layout::Imr { .. }) => {
                if track % 2 == 1 {
                    top
                } else {
                    full
                }
            }
            _ => self.size(track),
        };
        (start, track, size)
    }

    /// The largest home track, and the largest track of any kind given the
    /// drive's `tracks` (guards hold none).
    pub(super) fn max_sizes(&self, tracks: u64) -> (u32, u32) {
        let mut home = 0;
        for run in &self.runs {
            match run.sizes {
                Some((full, top)) => home = home.max(full).max(top),
                None => {
                    for g in 0..self.pattern.groups() {
                        for i in 0..self.pattern.len(g) {
                            home = home.max(self.size(
                                self.first + run.first_unit * self.unit + self.pattern.offset(g, i),
                            ));
                        }
                    }
                }
            }
        }
        // Within any `span` tracks of one zone there is a track of the zone's
        // full size (guard runs are shorter; an IMR zone starts with a bottom).
        let span = match self.layout {
            Layout::Smr { width, .. } => width + 1,
            Layout::Wave { kappa, .. } => kappa + 1,
            _ => 2,
        };
        let mut any = home;
        for (zi, z) in self.zones.iter().enumerate() {
            let end = self
                .zones
                .get(zi + 1)
                .map_or(tracks, |n| n.first_track)
                .min(tracks);
            for t in z.first_track..end.min(z.first_track + span) {
                any = any.max(self.size(t));
            }
        }
        (home, any)
    }
}
