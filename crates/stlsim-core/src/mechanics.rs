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
//! exactly one rotation (the IMR paper's assumption for flips and promotions),
//! unless the drive says `zero_latency = false` (DiskSim's "Immediate buffer
//! read/write" = 0): then a whole track waits for its first sector too.
//!
//! Surfaces, head switch, write settle and skew follow DiskSim 4.0's
//! `dm_mech_g1` (`diskmodel/mech_g1.c`) and `dm_layout_g1`
//! (`diskmodel/layout_g1.c`), the models its validated drives use
//! (`Access time type = trackSwitchPlusRotation`). All are off by default:
//! * tracks are numbered cylinder-major (track `t` is cylinder
//!   `t / surfaces`, surface `t % surfaces`) and the seek curve is read in
//!   cylinders; which surface holds each track of a cylinder follows
//!   DiskSim's LBN-to-PBN mapping scheme (`g1_surfno_on_cyl`: ascending, or
//!   serpentine so that a cylinder switch keeps the head);
//! * repositioning costs `max(seek(cylinders), head switch)`, the head
//!   switch applying whenever the surface changes (`dm_seek_time_g1`: the
//!   arm moves while the other head is selected, so the two overlap);
//! * a write whose repositioning is not zero adds `write_settle_ms`
//!   (`seekwritedelta`, "the seek times ... are for read access"); DiskSim
//!   takes a negative value as is (hp_c2490a: -0.642 ms, writes settle
//!   faster than the read curve says); stlsim adds it too but never lets the
//!   repositioning fall below zero (DiskSim's signed time would; no imported
//!   drive gets there, their shortest move exceeds the settle);
//! * `angular` only: sector 0 of a track is rotated by the zone's first
//!   block offset plus one track skew per head switch and one cylinder skew
//!   per cylinder switch since the zone's first track (`g1_map_pbn_skew`:
//!   `trackswitches = head + (surfaces-1) * cyl`, then `+ cyl * cylskew`),
//!   all in sectors of the zone's track, so a transfer that crosses onto the
//!   next track waits the skew less the switch, not a rotation.

use crate::choice::{serde_by_name, Choice};
use crate::error::{config_err, SimResult};
use crate::geometry::ZoneSpec;
use crate::units::{Nanos, PhysAddr, Track};
use serde::{Deserialize, Serialize};

/// Seek time against distance in cylinders (`[seek]` of a drive): a square-root
/// curve through two points or a measured table.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SeekConfig {
    /// `sqrt` (a*sqrt(d)+b through min and max) or `table` (measured points, interpolated).
    pub model: String,
    /// Single-track seek time, ms (`sqrt` model).
    pub min_ms: f64,
    /// Full-stroke seek time, ms (`sqrt` model).
    pub max_ms: f64,
    /// Measured `[distance_tracks, ms]` points, ascending distance (`table` model).
    pub table: Vec<(u64, f64)>,
}

impl Default for SeekConfig {
    fn default() -> Self {
        SeekConfig {
            model: "sqrt".into(),
            min_ms: 2.0,
            max_ms: 20.0,
            table: vec![],
        }
    }
}

/// What the mechanics take from a drive description
/// ([`crate::drive::DriveConfig::mechanics`] fills it, its ranges checked).
#[derive(Clone, Copy, Debug)]
pub struct MechanicsSpec<'a> {
    /// Spindle speed, revolutions per minute.
    pub rpm: f64,
    /// The seek curve: seek time against cylinder distance.
    pub seek: &'a SeekConfig,
    /// How rotational latency is charged (see the module comment).
    pub rotation: Rotation,
    /// Data surfaces (tracks per cylinder).
    pub surfaces: u64,
    /// Which surface holds each track of a cylinder in LBA order.
    pub surface_order: SurfaceOrder,
    /// Head switch time, ms.
    pub head_switch_ms: f64,
    /// Added to a write that moved the head, ms (may be negative).
    pub write_settle_ms: f64,
    /// Whether whole-track accesses start at the first sector under the head.
    pub zero_latency: bool,
    /// The zone table, for skews and per-zone surface order.
    pub zones: &'a [ZoneSpec],
}

/// How rotational latency is charged (the drive's `rotation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rotation {
    #[default]
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

/// The skew of one zone (DiskSim `dm_layout_g1_zone`), in sectors of its track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ZoneSkew {
    first_cylinder: u64,
    sectors: u64,
    track_skew: u64,
    cylinder_skew: u64,
    first_block_offset: u64,
}

/// Which physical surface holds the `i`-th track of a cylinder in LBA order
/// (DiskSim `g1_surfno_on_cyl`, "LBN-to-PBN mapping scheme").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SurfaceOrder {
    #[default]
    /// Scheme 0: surface `i` on every cylinder.
    Ascending,
    /// Scheme 1: reversed on the odd cylinders of a zone (from its first).
    SerpentineInZone,
    /// Scheme 2: reversed on odd cylinders.
    Serpentine,
}

impl Choice for Rotation {
    const KEY: &'static str = "rotation";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("average", Rotation::Average),
        ("angular", Rotation::Angular),
    ];
}
serde_by_name!(Rotation);

impl Choice for SurfaceOrder {
    const KEY: &'static str = "surface_order";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("ascending", SurfaceOrder::Ascending),
        ("serpentine-in-zone", SurfaceOrder::SerpentineInZone),
        ("serpentine", SurfaceOrder::Serpentine),
    ];
}
serde_by_name!(SurfaceOrder);

/// Seek, rotation and transfer timing of one drive.
#[derive(Clone, Debug)]
pub struct Mechanics {
    curve: SeekCurve,
    rotation: Rotation,
    rot_ns: u64,
    /// Cached seek times for short distances (most seeks in a trace are short).
    short: Vec<u64>,
    /// Data surfaces: tracks per cylinder (1: one track per cylinder).
    surfaces: u64,
    /// Which surface holds each track of a cylinder.
    surface_order: SurfaceOrder,
    /// Whole-track accesses start at any sector (no rotational latency).
    zero_latency: bool,
    /// Head switch time, from `head_switch_ms`: overlapped with the seek when a
    /// move changes surface, not added to it.
    head_switch: Nanos,
    /// Added to a write's non-zero repositioning; signed, as DiskSim's
    /// `seekwritedelta` (nanoseconds; private to this module).
    write_settle_ns: i64,
    /// Per-zone skews, ascending `first_cylinder`; empty when no zone has any
    /// (the angle of sector `s` is then `s/S`, as before skew existed).
    skews: Vec<ZoneSkew>,
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
    /// The whole repositioning: seek, head switch (overlapped) and write settle.
    pub seek: Nanos,
    /// Waiting for the first sector to arrive.
    pub rotate: Nanos,
    /// Passing the sectors under the head.
    pub transfer: Nanos,
}

impl AccessTime {
    /// Service time of the access: repositioning, rotational wait and transfer.
    pub fn total(&self) -> Nanos {
        self.seek + self.rotate + self.transfer
    }
}

/// `k` sectors' share of a turn of `turn` ns on a track of `spt` sectors
/// (`spt` at least one), floor(turn * k / spt): in 64 bits where the product fits
/// (every real drive), else in 128, the same exact value.
#[inline]
pub(crate) fn turn_share_ns(turn: u64, k: u64, spt: u64) -> u64 {
    match turn.checked_mul(k) {
        Some(x) => x / spt,
        None => (turn as u128 * k as u128 / spt as u128) as u64,
    }
}

/// `x % turn`, by a subtraction when `x` is below two turns (an angle past
/// a position, both below one turn: every access's wait for its sector;
/// the sector after an access, which ends on its track), not a 64-bit
/// division.
#[inline]
pub(crate) fn below_turn(x: u64, turn: u64) -> u64 {
    if x < turn {
        x
    } else if x - turn < turn {
        x - turn
    } else {
        x % turn
    }
}

/// When sector `s` of a track of `spt` sectors passes under the head, in
/// nanoseconds past angle 0 of a rotation of `rot` ns, its track's sector 0
/// skewed by `off` of `zspt` sectors: off/zspt + s/spt of a turn, as one
/// fraction so that no rounding of the skew accumulates. In 64 bits where
/// the products fit (they do on every real drive; a 128-bit division was a
/// tenth of a full-model run), else in 128, with the same exact result.
#[inline]
fn skewed_angle_ns(rot: u64, off: u64, zspt: u64, s: u32, spt: u32) -> u64 {
    let spt = u64::from(spt.max(1));
    if off == 0 {
        return turn_share_ns(rot, u64::from(s), spt);
    }
    if zspt == spt && off < spt && u64::from(s) < spt {
        // The usual case, the track in its zone's format: (off + s) / spt
        // of a turn, below two turns, the same floor as the general form
        // (whose numerator and denominator are both spt times these).
        if let Some(x) = rot.checked_mul(off + u64::from(s)) {
            let a = x / spt;
            return if a >= rot { a - rot } else { a };
        }
    }
    let narrow = || {
        let num = off
            .checked_mul(spt)?
            .checked_add(u64::from(s).checked_mul(zspt)?)?;
        Some(rot.checked_mul(num)? / zspt.checked_mul(spt)? % rot)
    };
    narrow().unwrap_or_else(|| {
        let (spt, rot, zspt) = (spt as u128, rot as u128, zspt as u128);
        ((rot * (off as u128 * spt + s as u128 * zspt) / (zspt * spt)) % rot) as u64
    })
}

impl Mechanics {
    /// Build the mechanics of a drive with `tracks` tracks.
    pub fn new(
        seek: &SeekConfig,
        rotation: Rotation,
        rpm: f64,
        tracks: u64,
    ) -> SimResult<Mechanics> {
        if !(rpm > 0.0 && rpm.is_finite()) {
            return config_err(format!("rpm {rpm} must be positive"));
        }
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
            surfaces: 1,
            surface_order: SurfaceOrder::Ascending,
            zero_latency: true,
            head_switch: Nanos::ZERO,
            write_settle_ns: 0,
            skews: vec![],
        };
        m.short = (0..1024u64).map(|d| m.seek_uncached(d).0).collect();
        Ok(m)
    }

    /// The mechanics of a whole drive description with `tracks` physical
    /// tracks: seek curve, rotation, and the surfaces, head switch, write
    /// settle and zone skews (see the module comment). With the defaults
    /// (one surface, no switch, settle or skew) this is [`Mechanics::new`].
    pub fn from_spec(d: &MechanicsSpec, tracks: u64) -> SimResult<Mechanics> {
        let surfaces = d.surfaces.max(1);
        // The seek curve spans cylinders: the `sqrt` fit's full stroke is
        // the last cylinder (with one surface, the last track as before).
        let cylinders = tracks.div_ceil(surfaces);
        let mut m = Mechanics::new(d.seek, d.rotation, d.rpm, cylinders)?;
        m.surfaces = surfaces;
        m.surface_order = d.surface_order;
        m.head_switch = Nanos::from_ms(d.head_switch_ms);
        m.zero_latency = d.zero_latency;
        m.write_settle_ns = (d.write_settle_ms * 1e6).round() as i64;
        // The zone table is kept when skew or a per-zone surface order needs it.
        let any = m.surface_order == SurfaceOrder::SerpentineInZone
            || d.zones.iter().any(|z| {
                z.track_skew_sectors != 0
                    || z.cylinder_skew_sectors != 0
                    || z.first_block_offset_sectors != 0
            });
        if any {
            m.skews = d
                .zones
                .iter()
                .map(|z| ZoneSkew {
                    first_cylinder: z.first_track / surfaces,
                    sectors: z.sectors_per_track.max(1) as u64,
                    track_skew: z.track_skew_sectors as u64,
                    cylinder_skew: z.cylinder_skew_sectors as u64,
                    first_block_offset: z.first_block_offset_sectors as u64,
                })
                .collect();
        }
        Ok(m)
    }

    /// Data surfaces (tracks per cylinder).
    pub fn surfaces(&self) -> u64 {
        self.surfaces
    }

    /// The cylinder of a physical track (tracks are numbered cylinder-major).
    pub fn cylinder(&self, t: Track) -> u64 {
        t.0 / self.surfaces
    }

    /// Time to move from track `from` to track `to`: the seek over their
    /// cylinder distance and the head switch, overlapped (DiskSim
    /// `dm_seek_time_g1`), plus the write settle for a write that moved.
    #[inline]
    pub fn reposition_time(&self, from: Track, to: Track, write: bool) -> Nanos {
        if self.surfaces == 1 && self.write_settle_ns == 0 {
            // The drive model before surfaces existed, bit for bit.
            return self.seek_time(from.distance(to));
        }
        let seek = self.seek_time(self.cylinder(from).abs_diff(self.cylinder(to)));
        let switch = if self.surface(from) != self.surface(to) {
            self.head_switch
        } else {
            Nanos::ZERO
        };
        let t = seek.0.max(switch.0);
        if t == 0 || !write {
            return Nanos(t);
        }
        // A negative settle shortens the move but never below nothing.
        Nanos((t as i64).saturating_add(self.write_settle_ns).max(0) as u64)
    }

    /// The zone skew entry of cylinder `cyl` (the table is not empty).
    fn zone_skew(&self, cyl: u64) -> &ZoneSkew {
        let i = self.skews.partition_point(|z| z.first_cylinder <= cyl);
        &self.skews[i.saturating_sub(1)]
    }

    /// The physical surface (head) under which track `t` lies: its index in
    /// its cylinder in LBA order, reversed on the cylinders a serpentine
    /// order runs backwards (DiskSim `g1_surfno_on_cyl`).
    pub fn surface(&self, t: Track) -> u64 {
        let (cyl, i) = (t.0 / self.surfaces, t.0 % self.surfaces);
        let reversed = match self.surface_order {
            SurfaceOrder::Ascending => false,
            SurfaceOrder::Serpentine => cyl % 2 == 1,
            SurfaceOrder::SerpentineInZone => {
                !self.skews.is_empty()
                    && cyl.saturating_sub(self.zone_skew(cyl).first_cylinder) % 2 == 1
            }
        };
        if reversed {
            self.surfaces - 1 - i
        } else {
            i
        }
    }

    /// Where sector 0 of track `t` starts, in nanoseconds of rotation past
    /// angle 0 (0 without skew), and the zone's sectors per track its skew
    /// is counted in.
    fn skew_sectors(&self, t: Track) -> (u64, u64) {
        if self.skews.is_empty() {
            return (0, 1);
        }
        let cyl = self.cylinder(t);
        let z = self.zone_skew(cyl);
        let cyl_in_zone = cyl.saturating_sub(z.first_cylinder);
        // The track's index in its cylinder in LBA order (DiskSim's
        // g1_surfno_on_cyl, whatever surface holds it).
        let head = t.0 % self.surfaces;
        // One track skew per track switch, one cylinder skew per cylinder
        // switch since the zone's first track (DiskSim g1_map_pbn_skew).
        let wide = || {
            let switches = head as u128 + (self.surfaces as u128 - 1) * cyl_in_zone as u128;
            ((z.first_block_offset as u128
                + switches * z.track_skew as u128
                + cyl_in_zone as u128 * z.cylinder_skew as u128)
                % z.sectors as u128) as u64
        };
        let off = (|| {
            let switches = (self.surfaces - 1)
                .checked_mul(cyl_in_zone)?
                .checked_add(head)?;
            switches
                .checked_mul(z.track_skew)?
                .checked_add(cyl_in_zone.checked_mul(z.cylinder_skew)?)?
                .checked_add(z.first_block_offset)
        })()
        .map_or_else(wide, |x| x % z.sectors);
        (off, z.sectors)
    }

    /// When (nanoseconds past angle 0, below one rotation) sector `s` of
    /// track `t`, which has `spt` sectors, passes under the head.
    pub fn sector_angle_ns(&self, t: Track, s: u32, spt: u32) -> u64 {
        let (off, zspt) = self.skew_sectors(t);
        skewed_angle_ns(self.rot_ns, off, zspt, s, spt)
    }

    /// Whether a whole-track access starts wherever the head lands
    /// (zero-latency: its sectors are not read in order).
    pub fn zero_latency(&self) -> bool {
        self.zero_latency
    }

    /// Time of one full rotation, from the spindle's rpm.
    pub fn rotation_time(&self) -> Nanos {
        Nanos(self.rot_ns)
    }

    /// The rotational latency model, `average` or `angular`.
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
        Nanos(turn_share_ns(
            self.rot_ns,
            u64::from(sectors),
            u64::from(spt.max(1)),
        ))
    }

    /// Timing of an access (a write if `write`) to `count` sectors from `at`
    /// (on a track of `spt` sectors) that may start no earlier than `start`,
    /// given the head state. Returns the timing; the new head state ends at
    /// `start + total`. `seek` holds the whole repositioning: seek, head
    /// switch and write settle.
    pub fn access(
        &self,
        head: &HeadState,
        start: Nanos,
        at: PhysAddr,
        count: u32,
        spt: u32,
        write: bool,
    ) -> AccessTime {
        let d = head.track.distance(at.track);
        let seek = self.reposition_time(head.track, at.track, write);
        let transfer = self.transfer_time(count, spt);
        // Zero-latency: a whole track starts wherever the head lands.
        let whole_track = count >= spt && self.zero_latency;
        let continues = d == 0 && head.next_sector == at.sector && head.at == start;
        let rotate = if whole_track || continues {
            Nanos::ZERO
        } else {
            match self.rotation {
                Rotation::Average => Nanos(self.rot_ns / 2),
                Rotation::Angular => {
                    let arrive = (start + seek).0;
                    let pos = arrive % self.rot_ns;
                    let target = self.sector_angle_ns(at.track, at.sector, spt);
                    Nanos(below_turn(target + self.rot_ns - pos, self.rot_ns))
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
    use crate::drive::DriveConfig;

    proptest::proptest! {
        /// The 64-bit path gives the 128-bit formula's value exactly, on
        /// real drives' magnitudes and on extremes that overflow 64 bits.
        #[test]
        fn skewed_angle_is_the_exact_fraction(
            rot in proptest::prop_oneof![1u64..20_000_000, 1u64..=u64::MAX],
            zspt in 1u64..5_000,
            off_frac in 0u64..5_000,
            s in 0u32..5_000,
            spt in 1u32..5_000,
            same in proptest::bool::ANY,
        ) {
            // Half the cases a track in its zone's format (the shortcut).
            let zspt = if same { u64::from(spt) } else { zspt };
            let s = if same { s % spt } else { s };
            let off = off_frac % zspt;
            let want = if off == 0 {
                (rot as u128 * s as u128 / spt as u128) as u64
            } else {
                let (spt, rot, zspt) = (spt as u128, rot as u128, zspt as u128);
                ((rot * (off as u128 * spt + s as u128 * zspt) / (zspt * spt)) % rot) as u64
            };
            proptest::prop_assert_eq!(skewed_angle_ns(rot, off, zspt, s, spt), want);
        }
    }

    proptest::proptest! {
        /// The remainder by subtraction is the remainder.
        #[test]
        fn below_turn_is_the_remainder(
            turn in proptest::prop_oneof![1u64..20_000_000, 1u64..=u64::MAX],
            x in proptest::prop_oneof![0u64..40_000_000, 0u64..=u64::MAX],
        ) {
            proptest::prop_assert_eq!(below_turn(x, turn), x % turn);
        }
    }

    fn mech(rot: &str) -> Mechanics {
        Mechanics::new(&SeekConfig::default(), rot.into(), 6000.0, 100_001).unwrap()
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
        let m = Mechanics::new(&cfg, Rotation::Average, 7200.0, 1000).unwrap();
        assert_eq!(m.seek_time(1), Nanos::from_ms(1.0));
        assert_eq!(m.seek_time(51), Nanos::from_ms(6.0));
        assert_eq!(m.seek_time(500), Nanos::from_ms(11.0));
        let bad = SeekConfig {
            model: "table".into(),
            table: vec![(5, 1.0), (5, 2.0)],
            ..Default::default()
        };
        assert!(Mechanics::new(&bad, Rotation::Average, 7200.0, 1000).is_err());
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
            false,
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
                false,
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
            false,
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
            false,
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
                false,
            );
            assert_eq!(t.seek + t.rotate, Nanos::ZERO, "{rot}");
        }
    }

    /// A two-surface drive at 6,000 RPM (one rotation 10 ms), one zone of
    /// 100 sectors a track (one sector 100,000 ns), a one-cylinder seek of
    /// 1.5 ms, a 0.5 ms head switch, and the given skews and settle.
    fn dm(track_skew: u32, cyl_skew: u32, settle_ms: f64) -> Mechanics {
        let d = DriveConfig {
            rpm: 6000.0,
            rotation: crate::mechanics::Rotation::Angular,
            surfaces: 2,
            head_switch_ms: 0.5,
            write_settle_ms: settle_ms,
            seek: SeekConfig {
                model: "table".into(),
                table: vec![(1, 1.5), (100, 11.4)],
                ..Default::default()
            },
            zones: vec![crate::geometry::ZoneSpec {
                first_track: 0,
                sectors_per_track: 100,
                track_skew_sectors: track_skew,
                cylinder_skew_sectors: cyl_skew,
                ..Default::default()
            }],
            ..Default::default()
        };
        d.mechanics(200).unwrap()
    }

    fn at(t: u64, s: u32) -> PhysAddr {
        PhysAddr {
            track: Track(t),
            sector: s,
        }
    }

    #[test]
    fn skew_same_sector_next_track_costs_the_skew_not_a_rotation() {
        for (skew, want) in [(10, 1_000_000u64), (0, 10_000_000)] {
            let m = dm(skew, 20, 0.0);
            // Sector 40 of track 0 (cylinder 0, surface 0; no skew on the
            // zone's first track) arrives at 40 x 100,000 = 4,000,000 ns.
            let start = Nanos(4_000_000);
            let h0 = HeadState {
                track: Track(0),
                next_sector: 0,
                at: Nanos(0),
            };
            let a = m.access(&h0, start, at(0, 40), 1, 100, false);
            assert_eq!(a.rotate, Nanos::ZERO);
            // It ends at 4,100,000. Track 1 is surface 1 of cylinder 0: a
            // head switch, 500,000 ns, arriving at 4,600,000. With a 10-sector
            // track skew its sector 40 is at angle (10 + 40)/100: 5,000,000,
            // so the wait is 400,000 and sector 40 starts exactly the skew,
            // 1,000,000 ns, after it started on track 0. Without skew it is
            // at 4,000,000 again: the head waits for it a whole rotation
            // (9,400,000 ns), 10,000,000 after it started on track 0.
            let end = start + a.total();
            let h1 = HeadState {
                track: Track(0),
                next_sector: 41,
                at: end,
            };
            let b = m.access(&h1, end, at(1, 40), 1, 100, false);
            assert_eq!(b.seek, Nanos(500_000));
            assert_eq!((end + b.seek + b.rotate).0 - start.0, want, "skew {skew}");
        }
    }

    #[test]
    fn transfer_onto_the_next_cylinder_lands_per_the_cylinder_skew() {
        let m = dm(10, 20, 0.0);
        // Track 1 (cylinder 0, surface 1) is skewed by one track skew: its
        // sector 90 is at angle (10 + 90) mod 100 = 0. Reading sectors
        // 90..100 from t = 0, the head already on track 1, costs no wait and
        // 10 x 100,000 = 1,000,000 ns.
        let h = HeadState {
            track: Track(1),
            next_sector: 0,
            at: Nanos(0),
        };
        let a = m.access(&h, Nanos(0), at(1, 90), 10, 100, false);
        assert_eq!(a.total(), Nanos(1_000_000));
        // Track 2 is cylinder 1, surface 0: one track switch since the zone
        // start (head 0 + (2-1) x 1 cylinder) and one cylinder switch, so its
        // sector 0 is at (10 + 20)/100 of a turn: 3,000,000 ns. Moving there
        // is max(one-cylinder seek 1,500,000, head switch 500,000) =
        // 1,500,000, arriving at 2,500,000: a 500,000 ns wait, not the
        // 8,500,000 an unskewed track would cost.
        let h = HeadState {
            track: Track(1),
            next_sector: 0,
            at: Nanos(1_000_000),
        };
        let b = m.access(&h, Nanos(1_000_000), at(2, 0), 10, 100, false);
        assert_eq!(b.seek, Nanos(1_500_000));
        assert_eq!(b.rotate, Nanos(500_000));
        assert_eq!(b.transfer, Nanos(1_000_000));
        // Track 3 (cylinder 1, surface 1): 2 track switches and 1 cylinder
        // switch, (2 x 10 + 20) = 40 sectors.
        assert_eq!(m.sector_angle_ns(Track(3), 0, 100), 4_000_000);
        // Sector 70 of it wraps: (40 + 70) mod 100 = 10 sectors.
        assert_eq!(m.sector_angle_ns(Track(3), 70, 100), 1_000_000);
    }

    #[test]
    fn head_switch_and_one_cylinder_seek_overlap() {
        let m = dm(0, 0, 0.0);
        let r = |a: u64, b: u64| m.reposition_time(Track(a), Track(b), false).0;
        assert_eq!(r(0, 0), 0);
        // Same cylinder, other surface: the head switch alone.
        assert_eq!(r(0, 1), 500_000);
        assert_eq!(r(1, 0), 500_000);
        // One cylinder, same surface: the one-cylinder seek.
        assert_eq!(r(0, 2), 1_500_000);
        // One cylinder and another surface: DiskSim's max(seek, switch).
        assert_eq!(r(1, 2), 1_500_000);
        // Seeks count cylinders: tracks 0 and 200 - 2 = 198 are 99 cylinders
        // apart: 1.5 + (11.4 - 1.5) x 98/99 = 11.3 ms.
        assert_eq!(r(0, 198), 11_300_000);
        // A head switch longer than the seek wins.
        let mut slow = dm(0, 0, 0.0);
        slow.head_switch = Nanos(2_000_000);
        assert_eq!(slow.reposition_time(Track(0), Track(3), false).0, 2_000_000);
        assert_eq!(slow.reposition_time(Track(0), Track(2), false).0, 1_500_000);
    }

    #[test]
    fn write_settle_is_added_after_a_move_and_may_be_negative() {
        let w = |m: &Mechanics, a: u64, b: u64| m.reposition_time(Track(a), Track(b), true).0;
        let m = dm(0, 0, 0.07);
        // hp_c3323a's 0.07 ms: a write after a one-cylinder seek, 1,570,000;
        // after a head switch 570,000; the read costs no settle.
        assert_eq!(w(&m, 0, 2), 1_570_000);
        assert_eq!(w(&m, 0, 1), 570_000);
        assert_eq!(m.reposition_time(Track(0), Track(2), false).0, 1_500_000);
        // No move, no settle (DiskSim adds it only to a non-zero seek).
        assert_eq!(w(&m, 4, 4), 0);
        // hp_c2490a's -0.642 ms shortens a write's move: 1,500,000 - 642,000.
        let m = dm(0, 0, -0.642);
        assert_eq!(w(&m, 0, 2), 858_000);
        // ... but never below zero: 500,000 - 642,000 is taken as 0.
        assert_eq!(w(&m, 0, 1), 0);
        // And it is in the access's seek.
        let h = HeadState::default();
        assert_eq!(
            m.access(&h, Nanos(0), at(2, 0), 1, 100, true).seek,
            Nanos(858_000)
        );
        // One surface: the settle applies to track-to-track moves.
        let mut one = mech("average");
        one.write_settle_ns = 70_000;
        assert_eq!(
            one.reposition_time(Track(5), Track(6), true),
            one.seek_time(1) + Nanos(70_000)
        );
        assert_eq!(one.reposition_time(Track(5), Track(5), true), Nanos::ZERO);
    }

    #[test]
    fn defaults_time_exactly_as_before() {
        // A drive description without the new keys gives the mechanics
        // `Mechanics::new` built before they existed, access for access.
        for rot in ["average", "angular"] {
            let d = DriveConfig {
                rpm: 6000.0,
                rotation: rot.into(),
                ..Default::default()
            };
            let old = Mechanics::new(&d.seek, rot.into(), 6000.0, 100_001).unwrap();
            let new = d.mechanics(100_001).unwrap();
            let mut rng = crate::xorshift::Rng(7);
            let mut head = HeadState::default();
            let mut now = Nanos(0);
            for _ in 0..2000 {
                let t = Track(rng.below(100_001));
                let s = rng.below(512) as u32;
                let n = 1 + rng.below(512 - s as u64) as u32;
                let w = rng.below(2) == 0;
                let a = old.access(
                    &head,
                    now,
                    PhysAddr {
                        track: t,
                        sector: s,
                    },
                    n,
                    512,
                    w,
                );
                let b = new.access(
                    &head,
                    now,
                    PhysAddr {
                        track: t,
                        sector: s,
                    },
                    n,
                    512,
                    w,
                );
                assert_eq!(a, b);
                now += a.total();
                head = HeadState {
                    track: t,
                    next_sector: (s + n) % 512,
                    at: now,
                };
                // Sometimes an idle gap, sometimes a continuation.
                now += Nanos(rng.below(3) * 1_000_000);
            }
        }
    }

    #[test]
    fn serpentine_surface_orders_save_the_head_switch_at_a_cylinder_switch() {
        // Two surfaces, zones starting at cylinders 0 and 3 (tracks 0 and
        // 6); a 2 ms head switch, longer than the 1.5 ms one-cylinder seek.
        let m = |order: &str| {
            let d = DriveConfig {
                rpm: 6000.0,
                surfaces: 2,
                surface_order: order.into(),
                head_switch_ms: 2.0,
                seek: SeekConfig {
                    model: "table".into(),
                    table: vec![(1, 1.5), (100, 11.4)],
                    ..Default::default()
                },
                zones: vec![
                    crate::geometry::ZoneSpec {
                        first_track: 0,
                        sectors_per_track: 100,
                        ..Default::default()
                    },
                    crate::geometry::ZoneSpec {
                        first_track: 6,
                        sectors_per_track: 90,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            };
            d.mechanics(200).unwrap()
        };
        let r = |m: &Mechanics, a: u64, b: u64| m.reposition_time(Track(a), Track(b), false).0;
        // Scheme 0: track 1 (cylinder 0, surface 1) to track 2 (cylinder 1,
        // surface 0) seeks and switches: max(1.5, 2.0) ms.
        let asc = m("ascending");
        assert_eq!(r(&asc, 1, 2), 2_000_000);
        assert_eq!(asc.surface(Track(2)), 0);
        // Scheme 1: cylinder 1 runs backwards, so track 2 is on surface 1,
        // under the same head: the seek alone. Within the cylinder the next
        // track (3, surface 0) is a head switch. Cylinder 3 is the new
        // zone's first (even) cylinder: track 6 is on surface 0 again, so
        // coming from track 5 (cylinder 2, even: surface 1) switches.
        let s1 = m("serpentine-in-zone");
        assert_eq!(s1.surface(Track(2)), 1);
        assert_eq!(r(&s1, 1, 2), 1_500_000);
        assert_eq!(r(&s1, 2, 3), 2_000_000);
        assert_eq!(s1.surface(Track(6)), 0);
        assert_eq!(r(&s1, 5, 6), 2_000_000);
        // Scheme 2 counts absolute cylinders: cylinder 3 is odd, track 6 on
        // surface 1, and 5 -> 6 is a seek alone.
        let s2 = m("serpentine");
        assert_eq!(s2.surface(Track(6)), 1);
        assert_eq!(r(&s2, 5, 6), 1_500_000);
        let e = serde_json::from_str::<DriveConfig>(r#"{"surface_order": "zigzag"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "surface_order 'zigzag' is not 'ascending', 'serpentine-in-zone' or 'serpentine'"
            ),
            "{e}"
        );
    }
}
