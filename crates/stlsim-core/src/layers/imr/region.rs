//! Tracks an IMR translation layer reserves for itself (backup region,
//! checkpoint location), and the host address space that remains.
//!
//! The reserved region is a run of whole LBA groups (N bottom and N top
//! tracks each). Only its top tracks whose neighbours are both reserved
//! bottom tracks (never written) are used, so neither host writes nor the
//! layer's own bottom-track writes can damage what is stored there. Host LBAs
//! skip the region's home LBAs: host capacity shrinks by the region's size.

use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, Layout};
use crate::medium::prefill::{merge_ranges, HomeMap};
use crate::units::{Lba, Sectors, Track};

/// A reserved region and the host-to-home address map around it.
#[derive(Clone, Debug)]
pub struct Reserved {
    /// First reserved physical track.
    pub first: Track,
    /// One past the last reserved physical track.
    pub end: Track,
    /// Usable top tracks inside the region, ascending.
    pub tops: Vec<Track>,
    /// The host-to-home map around the reserved home-LBA ranges.
    map: HomeMap,
    /// The reserved track runs `[first, end)` (one, or several for a union).
    parts: Vec<(Track, Track)>,
    host_capacity: u64,
}

impl Reserved {
    /// Reserve enough whole groups at `location` (`outer`, `middle` or
    /// `inner`) to hold `tops_needed` usable top tracks.
    pub fn new(geom: &Geometry, location: &str, tops_needed: u64) -> SimResult<Reserved> {
        let (group, groups) = Reserved::groups_on(geom)?;
        let g = tops_needed.saturating_add(1).div_ceil(group).max(1);
        if g >= groups {
            return config_err(format!(
                "the drive has {groups} LBA groups; reserving {g} for the layer's own tracks leaves none for data"
            ));
        }
        let g0 = match location {
            "outer" => 0,
            "inner" => groups - g,
            "middle" => groups / 2 - g / 2,
            l => {
                return config_err(format!(
                    "region location '{l}' is not outer, middle or inner"
                ))
            }
        };
        let r = Reserved::at_groups(geom, g0, g)?;
        if (r.tops.len() as u64) < tops_needed {
            return config_err(format!("could not reserve {tops_needed} usable top tracks"));
        }
        Ok(r)
    }

    /// The drive's LBA group size N (bottom tracks per group) and its number of groups.
    pub fn groups_on(geom: &Geometry) -> SimResult<(u64, u64)> {
        let Layout::Imr { group, .. } = geom.layout() else {
            return config_err("IMR layers need an IMR drive layout");
        };
        Ok((group, geom.tracks() / (2 * group)))
    }

    /// Reserve the `g` whole LBA groups starting at group `g0` (an explicit
    /// position; [`Reserved::new`] picks one from a location name). Its
    /// `tops` are the top tracks fenced by the region's own bottoms.
    pub fn at_groups(geom: &Geometry, g0: u64, g: u64) -> SimResult<Reserved> {
        let (_, groups) = Reserved::groups_on(geom)?;
        if g == 0 || g0 + g > groups {
            return config_err(format!(
                "cannot reserve LBA groups {g0}..{} of a drive with {groups}",
                g0 + g
            ));
        }
        Reserved::from_runs(geom, &[(g0, g)])
    }

    /// The top tracks of the run of groups `(g0, g)` fenced by the run's own
    /// bottoms (both neighbours reserved, or the drive's edge), ascending.
    pub fn run_tops(geom: &Geometry, (g0, g): (u64, u64)) -> Vec<Track> {
        let unit = Reserved::groups_on(geom).map_or(2, |(group, _)| 2 * group);
        let (first, end) = (g0 * unit, (g0 + g) * unit);
        let reserved = |t: u64| t >= first && t < end;
        (first..end)
            .filter(|&t| {
                t % 2 == 1 && reserved(t - 1) && (t + 1 >= geom.tracks() || reserved(t + 1))
            })
            .map(Track)
            .collect()
    }

    /// Disjoint runs of whole LBA groups `(first group, groups)` as one
    /// reserved region and host-to-home address map (host LBAs skip all of
    /// them). `first`/`end` are the hull of the runs, `tops` the union of
    /// each run's own fenced tops; `contains` checks the runs themselves.
    pub fn from_runs(geom: &Geometry, runs: &[(u64, u64)]) -> SimResult<Reserved> {
        let (group, groups) = Reserved::groups_on(geom)?;
        let unit = 2 * group;
        let mut runs = runs.to_vec();
        runs.sort_unstable();
        if runs.is_empty() {
            return config_err("a union of reserved regions needs at least one region");
        }
        if runs.iter().any(|&(g0, g)| g == 0 || g0 + g > groups) {
            return config_err(format!(
                "a reserved region lies outside the drive's {groups} LBA groups"
            ));
        }
        if runs.windows(2).any(|w| w[1].0 < w[0].0 + w[0].1) {
            return config_err("reserved regions overlap");
        }
        let mut ranges: Vec<(u64, u64)> = vec![];
        let mut tops = vec![];
        for &(g0, g) in &runs {
            // A run of whole groups is usually one range of home LBAs:
            // merged run by run, a drive with thousands of runs keeps one
            // entry each rather than one per track.
            let one: Vec<(u64, u64)> = (g0 * unit..(g0 + g) * unit)
                .filter_map(|t| geom.phys_logical_track(Track(t)))
                .map(|lt| {
                    let s = geom.logical_track_start(lt).0;
                    (s, geom.logical_track_start(lt + 1).0 - s)
                })
                .collect();
            ranges.extend(merge_ranges(one));
            tops.extend(Reserved::run_tops(geom, (g0, g)));
        }
        let merged = merge_ranges(ranges);
        let taken: u64 = merged.iter().map(|r| r.1).sum();
        let parts: Vec<(Track, Track)> = runs
            .iter()
            .map(|&(g0, g)| (Track(g0 * unit), Track((g0 + g) * unit)))
            .collect();
        Ok(Reserved {
            first: parts[0].0,
            end: parts[parts.len() - 1].1,
            tops,
            map: home_map(&merged),
            parts,
            host_capacity: geom.capacity().0 - taken,
        })
    }

    /// The runs of groups `(first group, groups)` this region reserves.
    pub fn runs(&self, geom: &Geometry) -> Vec<(u64, u64)> {
        let unit = Reserved::groups_on(geom).map_or(2, |(group, _)| 2 * group);
        self.parts
            .iter()
            .map(|&(a, b)| (a.0 / unit, (b.0 - a.0) / unit))
            .collect()
    }

    /// Several disjoint reserved regions as one (see [`Reserved::from_runs`]).
    pub fn union(geom: &Geometry, parts: &[Reserved]) -> SimResult<Reserved> {
        let runs: Vec<(u64, u64)> = parts.iter().flat_map(|p| p.runs(geom)).collect();
        Reserved::from_runs(geom, &runs)
    }

    /// The region's bottom tracks whose top neighbours all lie inside the
    /// region: writing them damages only reserved tops, so a layer that
    /// never uses those tops may write these bottoms freely (bottom-only
    /// tracks, e.g. a track cache). Ascending.
    pub fn fenced_bottoms(&self, geom: &Geometry) -> Vec<Track> {
        self.parts
            .iter()
            .flat_map(|&(a, b)| (a.0..b.0).map(move |t| (a.0, b.0, t)))
            .filter(|&(a, b, t)| {
                t % 2 == 0 && (t == 0 || t > a) && (t + 1 < b || t + 1 >= geom.tracks())
            })
            .map(|(_, _, t)| Track(t))
            .collect()
    }

    /// The reserved home-LBA ranges (host LBAs skip them), sorted.
    pub fn home_ranges(&self) -> Vec<(Lba, Sectors)> {
        self.map
            .reserved()
            .iter()
            .map(|&(s, l)| (Lba(s), Sectors(l)))
            .collect()
    }

    /// Physical tracks reserved, over all parts.
    pub fn tracks_reserved(&self) -> u64 {
        self.parts.iter().map(|&(a, b)| b.0 - a.0).sum()
    }

    /// Sectors the host may address: the drive's home sectors less those reserved.
    pub fn host_capacity(&self) -> Sectors {
        Sectors(self.host_capacity)
    }

    /// Whether a physical track is reserved.
    #[inline]
    pub fn contains(&self, t: Track) -> bool {
        // Parts are sorted and disjoint: the one that may hold `t` is the
        // last starting at or before it (a search, not a scan: a spread
        // backup region has thousands of parts on a large drive).
        let i = self.parts.partition_point(|&(a, _)| a <= t);
        i > 0 && t < self.parts[i - 1].1
    }

    /// One past the last track of the reserved part holding `t` (`t` itself
    /// when `t` is not reserved): where a scan over host tracks resumes.
    pub fn part_end(&self, t: Track) -> Track {
        let i = self.parts.partition_point(|&(a, _)| a <= t);
        match i {
            0 => t,
            i if t < self.parts[i - 1].1 => self.parts[i - 1].1,
            _ => t,
        }
    }

    /// Runs of `len` groups `(first group, groups)`, one every `every`
    /// groups across the drive (centred in each stretch), skipping stretches
    /// whose run would overlap or touch the runs in `taken`: the spread
    /// backup slots of `backup_location = spread`.
    pub fn spread_runs(
        geom: &Geometry,
        len: u64,
        every: u64,
        taken: &[(u64, u64)],
    ) -> SimResult<Vec<(u64, u64)>> {
        let (_, groups) = Reserved::groups_on(geom)?;
        let every = every.max(len + 2);
        Ok((0..groups / every)
            .map(|k| k * every + (every - len) / 2)
            .filter(|&g0| taken.iter().all(|&(s, l)| g0 + len < s || s + l < g0))
            .map(|g0| (g0, len))
            .collect())
    }

    /// The home LBA of a host LBA.
    pub fn to_home(&self, host: u64) -> u64 {
        self.map.home_of_host(host)
    }

    /// Split host `[lba, lba+n)` into home-contiguous pieces: calls
    /// `f(home_lba, count, offset_in_request)`.
    pub fn for_home_pieces(&self, lba: u64, n: u64, f: impl FnMut(u64, u64, u64)) {
        self.map.for_home_pieces(lba, n, f)
    }

    /// The first home-contiguous piece of host `[lba, lba + n)`: its home
    /// LBA and length.
    #[inline]
    pub fn home_piece(&self, lba: u64, n: u64) -> (u64, u64) {
        self.map.home_piece(lba, n)
    }
}

/// The host-to-home map around merged reserved ranges.
fn home_map(merged: &[(u64, u64)]) -> HomeMap {
    HomeMap::new(
        &merged
            .iter()
            .map(|&(s, l)| (Lba(s), Sectors(l)))
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::DriveConfig;
    use crate::geometry::LayoutConfig;

    fn geom(group: u64) -> Geometry {
        let d = DriveConfig {
            track_bytes: 10 * 4096,
            tracks: Some(40),
            capacity_gib: None,
            layout: LayoutConfig {
                kind: crate::geometry::LayoutKind::Imr,
                group_tracks: group,
                ..Default::default()
            },
            ..Default::default()
        };
        d.geometry().unwrap()
    }

    #[test]
    fn usable_tops_are_fenced_by_reserved_bottoms() {
        let g = geom(2);
        let r = Reserved::new(&g, "outer", 2).unwrap();
        // 2 groups of 4 tracks: 0..8; tops 1, 3, 5 usable, 7 borders host track 8.
        assert_eq!((r.first, r.end), (Track(0), Track(8)));
        assert_eq!(r.tops, vec![Track(1), Track(3), Track(5)]);
        assert_eq!(r.host_capacity(), Sectors(400 - 80));
        assert_eq!(r.to_home(0), 80);
        let inner = Reserved::new(&g, "inner", 2).unwrap();
        // At the inner edge the last top has no bottom beyond it.
        assert_eq!(inner.tops, vec![Track(33), Track(35), Track(37), Track(39)]);
    }

    #[test]
    fn host_ranges_skip_the_region() {
        let g = geom(1);
        let r = Reserved::new(&g, "middle", 2).unwrap();
        assert!(r.contains(r.first));
        let mut pieces = vec![];
        let before = r.to_home(0);
        assert_eq!(before, 0);
        let (start, len) = r.map.reserved()[0];
        r.for_home_pieces(start - 5, 10, |h, n, off| pieces.push((h, n, off)));
        assert_eq!(pieces, vec![(start - 5, 5, 0), (start + len, 5, 5)]);
    }

    #[test]
    fn unions_of_explicit_regions_skip_every_part() {
        let g = geom(2);
        // 10 groups of 4 tracks. Parts at groups 0 and 5..7.
        let a = Reserved::at_groups(&g, 0, 1).unwrap();
        let b = Reserved::at_groups(&g, 5, 2).unwrap();
        let u = Reserved::union(&g, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(u.host_capacity(), Sectors(400 - 40 - 80));
        assert!(u.contains(Track(3)) && u.contains(Track(20)) && u.contains(Track(27)));
        assert!(!u.contains(Track(4)) && !u.contains(Track(19)) && !u.contains(Track(28)));
        assert_eq!((u.first, u.end), (Track(0), Track(28)));
        // Host LBAs skip both parts: host 0 is home 40; host 160 (after 4 groups) is home 280.
        assert_eq!(u.to_home(0), 40);
        assert_eq!(u.to_home(159), 199);
        assert_eq!(u.to_home(160), 280);
        // Bottoms fenced by reserved tops: 0 and 2 in part a (0 is the outer edge),
        // 22, 24, 26 in part b (20's outer neighbour 19 is a host track).
        assert_eq!(
            u.fenced_bottoms(&g),
            vec![Track(0), Track(2), Track(22), Track(24), Track(26)]
        );
        assert_eq!(u.tops, vec![Track(1), Track(21), Track(23), Track(25)]);
        assert!(Reserved::union(&g, &[b.clone(), Reserved::at_groups(&g, 6, 1).unwrap()]).is_err());
        assert!(Reserved::at_groups(&g, 9, 2).is_err());
        // A single explicit region is what `new` builds for the same groups.
        let n = Reserved::new(&g, "outer", 1).unwrap();
        assert_eq!(
            (n.first, n.end, n.tops.clone()),
            (a.first, a.end, a.tops.clone())
        );
    }
}
