//! Where time comes from: seek, rotational latency and transfer for every
//! physical operation, and the head's state between operations.
//!
//! Seek: the papers' `t = a*sqrt(d) + b` (IMR paper eq. 1), with `a` and `b`
//! fitted so that a one-track seek takes `min_ms` and a full stroke `max_ms`
//! exactly; or a measured table interpolated linearly (extrapolated flat
//! past its last point). A zero-distance move costs nothing.
//!
//! Rotation, two models:
//! * `average`: a repositioning access (any access that does not continue
//!   exactly where the previous one ended, on the same track, without a gap)
//!   waits half a rotation (IMR paper eq. 2), so the papers' analytic figures
//!   can be reproduced.
//! * `angular`: the platter turns continuously from time zero; sector `s` of a
//!   track with `S` sectors starts at angle `s/S` of a turn. An access waits
//!   until its first sector comes under the head. Missed rotations emerge.
//!
//! Whole-track accesses have zero latency in both models: once on track, a
//! full-track read or write starts at whatever sector arrives first and costs
//! exactly one rotation (the IMR paper's assumption for flips and promotions).

use crate::error::{config_err, SimResult};
use crate::geometry::SeekConfig;
use crate::units::{Nanos, PhysAddr, Track};

/// Rotational latency model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// Constant half rotation for every repositioning access.
    Average,
    /// Head angle tracked; latency until the target sector arrives.
    Angular,
}

#[derive(Clone, Debug)]
enum SeekCurve {
    Sqrt { a: f64, b: f64 },
    Table(Vec<(f64, f64)>),
}

/// Seek, rotation and transfer timing of one drive.
#[derive(Clone, Debug)]
pub struct Mechanics {
    curve: SeekCurve,
    rotation: Rotation,
    rot_ns: u64,
    /// Cached seek times for short distances (most seeks in a trace are short).
    short: Vec<u64>,
}

/// Where the head is and when it got there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeadState {
    /// Track under the head.
    pub track: Track,
    /// Sector just past the end of the last access on that track.
    pub next_sector: u32,
    /// Time the last access ended.
    pub at: Nanos,
}

/// The timing of one physical access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessTime {
    /// Head movement.
    pub seek: Nanos,
    /// Waiting for the first sector to arrive.
    pub rotate: Nanos,
    /// Passing the sectors under the head.
    pub transfer: Nanos,
}

impl AccessTime {
    /// Total service time.
    pub fn total(&self) -> Nanos {
        self.seek + self.rotate + self.transfer
    }
}

impl Mechanics {
    /// Build the mechanics of a drive with `tracks` tracks.
    pub fn new(seek: &SeekConfig, rotation: &str, rpm: f64, tracks: u64) -> SimResult<Mechanics> {
        if !(rpm > 0.0 && rpm.is_finite()) {
            return config_err(format!("rpm {rpm} must be positive"));
        }
        let rotation = match rotation {
            "average" => Rotation::Average,
            "angular" => Rotation::Angular,
            r => {
                return config_err(format!(
                    "rotation model '{r}' is not 'average' or 'angular'"
                ))
            }
        };
        let curve = match seek.model.as_str() {
            "sqrt" => {
                if !(seek.min_ms >= 0.0 && seek.max_ms >= seek.min_ms) {
                    return config_err(format!(
                        "seek min_ms {} / max_ms {} must satisfy 0 <= min <= max",
                        seek.min_ms, seek.max_ms
                    ));
                }
                let full = (tracks.max(2) - 1) as f64;
                let a = if full > 1.0 {
                    (seek.max_ms - seek.min_ms) / (full.sqrt() - 1.0)
                } else {
                    0.0
                };
                SeekCurve::Sqrt {
                    a,
                    b: seek.min_ms - a,
                }
            }
            "table" => {
                if seek.table.is_empty() {
                    return config_err(
                        "seek model 'table' needs at least one [distance, ms] point",
                    );
                }
                if seek.table.windows(2).any(|w| w[1].0 <= w[0].0) {
                    return config_err("seek table distances must be strictly ascending");
                }
                if seek.table.iter().any(|p| !(p.1 >= 0.0)) {
                    return config_err("seek table times must be non-negative");
                }
                SeekCurve::Table(seek.table.iter().map(|&(d, ms)| (d as f64, ms)).collect())
            }
            m => return config_err(format!("seek model '{m}' is not 'sqrt' or 'table'")),
        };
        let mut m = Mechanics {
            curve,
            rotation,
            rot_ns: (60e9 / rpm).round() as u64,
            short: vec![],
        };
        m.short = (0..1024u64).map(|d| m.seek_uncached(d).0).collect();
        Ok(m)
    }

    /// One full rotation.
    pub fn rotation_time(&self) -> Nanos {
        Nanos(self.rot_ns)
    }

    /// The rotation model.
    pub fn rotation(&self) -> Rotation {
        self.rotation
    }

    fn seek_uncached(&self, d: u64) -> Nanos {
        if d == 0 {
            return Nanos::ZERO;
        }
        let ms = match &self.curve {
            SeekCurve::Sqrt { a, b } => a * (d as f64).sqrt() + b,
            SeekCurve::Table(pts) => {
                let x = d as f64;
                let i = pts.partition_point(|p| p.0 <= x);
                if i == 0 {
                    // Below the first point: scale linearly from (0, 0).
                    pts[0].1 * x / pts[0].0.max(1.0)
                } else if i == pts.len() {
                    pts[i - 1].1
                } else {
                    let (x0, y0) = pts[i - 1];
                    let (x1, y1) = pts[i];
                    y0 + (y1 - y0) * (x - x0) / (x1 - x0)
                }
            }
        };
        Nanos::from_ms(ms)
    }

    /// Time to move the head `d` tracks.
    pub fn seek_time(&self, d: u64) -> Nanos {
        match self.short.get(d as usize) {
            Some(&ns) => Nanos(ns),
            None => self.seek_uncached(d),
        }
    }

    /// Time for `sectors` of a track with `spt` sectors to pass under the head.
    pub fn transfer_time(&self, sectors: u32, spt: u32) -> Nanos {
        Nanos((self.rot_ns as u128 * sectors as u128 / spt.max(1) as u128) as u64)
    }

    /// Timing of an access to `count` sectors from `at` (on a track of `spt`
    /// sectors) that may start no earlier than `start`, given the head state.
    /// Returns the timing; the new head state ends at `start + total`.
    pub fn access(
        &self,
        head: &HeadState,
        start: Nanos,
        at: PhysAddr,
        count: u32,
        spt: u32,
    ) -> AccessTime {
        let d = head.track.distance(at.track);
        let seek = self.seek_time(d);
        let transfer = self.transfer_time(count, spt);
        let whole_track = count >= spt;
        let continues = d == 0 && head.next_sector == at.sector && head.at == start;
        let rotate = if whole_track || continues {
            Nanos::ZERO
        } else {
            match self.rotation {
                Rotation::Average => Nanos(self.rot_ns / 2),
                Rotation::Angular => {
                    let arrive = (start + seek).0;
                    let pos = arrive % self.rot_ns;
                    let target =
                        (self.rot_ns as u128 * at.sector as u128 / spt.max(1) as u128) as u64;
                    Nanos((target + self.rot_ns - pos) % self.rot_ns)
                }
            }
        };
        AccessTime {
            seek,
            rotate,
            transfer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mech(rot: &str) -> Mechanics {
        Mechanics::new(&SeekConfig::default(), rot, 6000.0, 100_001).unwrap()
    }

    #[test]
    fn seek_curve_hits_min_and_max() {
        let m = mech("average");
        assert_eq!(m.seek_time(1), Nanos::from_ms(2.0));
        assert_eq!(m.seek_time(100_000), Nanos::from_ms(20.0));
        assert_eq!(m.seek_time(0), Nanos::ZERO);
        let mid = m.seek_time(25_000).as_ms();
        assert!(mid > 2.0 && mid < 20.0, "{mid}");
        // sqrt shape: a quarter of the stroke costs about half the range above min.
        assert!(
            (mid - (2.0 + 18.0 * (25_000f64.sqrt() - 1.0) / (100_000f64.sqrt() - 1.0))).abs()
                < 1e-6
        );
    }

    #[test]
    fn seek_table_interpolates() {
        let cfg = SeekConfig {
            model: "table".into(),
            table: vec![(1, 1.0), (101, 11.0)],
            ..Default::default()
        };
        let m = Mechanics::new(&cfg, "average", 7200.0, 1000).unwrap();
        assert_eq!(m.seek_time(1), Nanos::from_ms(1.0));
        assert_eq!(m.seek_time(51), Nanos::from_ms(6.0));
        assert_eq!(m.seek_time(500), Nanos::from_ms(11.0));
        let bad = SeekConfig {
            model: "table".into(),
            table: vec![(5, 1.0), (5, 2.0)],
            ..Default::default()
        };
        assert!(Mechanics::new(&bad, "average", 7200.0, 1000).is_err());
    }

    #[test]
    fn random_sector_average_is_seek_half_rotation_transfer() {
        let m = mech("average");
        let head = HeadState {
            track: Track(10),
            next_sector: 7,
            at: Nanos(0),
        };
        let t = m.access(
            &head,
            Nanos(5_000_000),
            PhysAddr {
                track: Track(1010),
                sector: 300,
            },
            1,
            512,
        );
        let want = m.seek_time(1000) + Nanos::from_ms(5.0) + Nanos(10_000_000 / 512);
        assert_eq!(t.total(), want);
    }

    #[test]
    fn whole_track_costs_one_rotation_once_on_track() {
        for rot in ["average", "angular"] {
            let m = mech(rot);
            let head = HeadState {
                track: Track(0),
                next_sector: 3,
                at: Nanos(1234),
            };
            let t = m.access(
                &head,
                Nanos(777_777),
                PhysAddr {
                    track: Track(4),
                    sector: 0,
                },
                512,
                512,
            );
            assert_eq!(t.rotate, Nanos::ZERO);
            assert_eq!(t.seek + t.transfer, m.seek_time(4) + Nanos::from_ms(10.0));
        }
    }

    #[test]
    fn angular_same_sector_two_tracks_over_costs_about_one_rotation() {
        let m = mech("angular");
        // Read sector 100 of track T-1 = 9 starting exactly when it arrives.
        let spt = 512;
        let rot = m.rotation_time().0;
        let start = Nanos(rot * 100 / spt as u64);
        let head0 = HeadState {
            track: Track(9),
            next_sector: 0,
            at: Nanos(0),
        };
        let a = m.access(
            &head0,
            start,
            PhysAddr {
                track: Track(9),
                sector: 100,
            },
            1,
            spt,
        );
        assert_eq!(a.rotate, Nanos::ZERO);
        let end = start + a.total();
        let head1 = HeadState {
            track: Track(9),
            next_sector: 101,
            at: end,
        };
        let b = m.access(
            &head1,
            end,
            PhysAddr {
                track: Track(11),
                sector: 100,
            },
            1,
            spt,
        );
        let from_first_start = (end + b.seek + b.rotate).0 - start.0;
        // The same angle comes round again exactly one rotation later.
        assert_eq!(from_first_start, rot);
    }

    #[test]
    fn sequential_continuation_has_no_latency() {
        for rot in ["average", "angular"] {
            let m = mech(rot);
            let head = HeadState {
                track: Track(3),
                next_sector: 40,
                at: Nanos(9_000_000),
            };
            let t = m.access(
                &head,
                Nanos(9_000_000),
                PhysAddr {
                    track: Track(3),
                    sector: 40,
                },
                8,
                512,
            );
            assert_eq!(t.seek + t.rotate, Nanos::ZERO, "{rot}");
        }
    }
}
