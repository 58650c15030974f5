//! DiskSim's spares on CMR drives: the sectors of each zone that hold no
//! LBA, and the home map around them, as DiskSim 4.0's `dm_layout_g1`
//! numbers its LBNs: `diskmodel/layout_g1.c` (read in the public copy of
//! CMU's 4.0 at github.com/benh/disksim) for the placement, and
//! `diskmodel/layout_g1_load.c`, `dm_layout_g1_compute_blksinband`, of
//! Western Digital's release (`STABLE/DiskSim_Linux_Generic_2.01.016`) for
//! each zone's LBN count; the scheme numbers are `disksim_diskmap.h`'s.
//!
//! Every scheme first adds the zone's "Empty space at zone front" to the
//! LBN's offset in its zone (`lbn += b->deadspace`), then places that
//! position `x` (the `g1_ltop_*` functions, without slips and defects):
//! * scheme 1, spare tracks (`g1_ltop_trackspare`): track `x / spt`; the
//!   zone's last `spare_tracks` tracks hold nothing;
//! * scheme 3, spare sectors per track (`g1_ltop_sectpertrackspare`):
//!   `spt - k` LBNs a track, track `x / (spt - k)`, sector `x % (spt - k)`:
//!   the last `k` sectors of every track are spare;
//! * scheme 2, per cylinder (`g1_ltop_sectpercylspare`): `surfaces * spt - k`
//!   LBNs a cylinder, filled track by track: the cylinder's last `k` sectors
//!   in LBN order are spare;
//! * scheme 8, per range (`g1_ltop_sectperrangespare`): the same over ranges
//!   of `Rangesize for sparing` cylinders counted from the zone's first.
//!   Only whole ranges keep spares: the zone's LBN count subtracts
//!   `k * (cylinders / rangesize)`, rounded down, so the cylinders of a last
//!   partial range all hold LBNs (the ltop puts them there too, as long as
//!   they hold fewer sectors than a range's LBNs; past that DiskSim would map
//!   LBNs beyond the zone, and stlsim keeps the partial range whole);
//! * scheme 9, per zone (`g1_ltop_sectperzonespare`): `x` in order from the
//!   zone's first sector; its LBN count subtracts `k`, so the zone's last `k`
//!   sectors are spare.
//!
//! All five are one shape here: a zone's tracks (less scheme 1's spare
//! tracks) fall into whole *periods* of a track, a cylinder, a range or the
//! zone, each ending in `k` spare sectors, and a remainder without spares.
//! A period's LBAs fill its tracks from sector 0 in order, so it holds
//! `ceil((period * spt - k) / spt)` logical tracks, of which only the last
//! may be short; tracks past it are wholly spare. Lookups are arithmetic
//! plus a binary search over the zones, and memory is a few words a zone.
//!
//! Slips (a zone's `slips` list: defects skipped over) follow the same
//! functions:
//! * scheme 1 (`slipped_tracks`): `g1_ltop_trackspare` steps the track
//!   `x / spt` over each slipped track at or before it, so the tracks after
//!   a slip move one on into the spare tracks; the skew stays the physical
//!   track's (`g1_map_pbn_skew` counts slips only under schemes 2 to 6);
//! * schemes 8 and 9 (`slipped_sectors`, positions from the zone's first
//!   sector): the position in the range (zone) moves one on for each of its
//!   slips at or before it. The slipped sector is a hole in its track, so
//!   a logical track keeps its physical track but may hold fewer LBAs,
//!   stepping over its holes ([`Holes`]). Choices where DiskSim has no
//!   consistent map: the LBAs a period's slips move on must stay on the
//!   period's data tracks (the room its last one has spare; past it DiskSim
//!   starts a spare track), slips lie in whole periods, and a zone with an
//!   empty front has none (none of DiskSim's five drives needs more).
//!
//! Gap cylinders (`gap_cylinders`) are the cylinders DiskSim's zone table
//! leaves between a zone's "Last cylinder number" and the next zone's
//! "First cylinder number". DiskSim's zone ends before them: its LBN count
//! (`cylcnt = endcyl - startcyl + 1`) and its ranges leave them out, and no
//! ltop reaches them, while the next zone's cylinders keep their numbers.
//! Here they end the zone's track range after its spare tracks, outside
//! every period, so they hold no LBA and the arm still crosses them.
//!
//! The empty front is mapped when it ends on a logical track's first sector
//! (always for whole tracks without sector spares, DiskSim's drives); a front
//! that ends inside a track is left unmapped and warned about
//! ([`DriveConfig::unmapped_zone_keys`](super::DriveConfig::unmapped_zone_keys)).

use super::ZoneSpec;
use crate::error::{config_err, SimResult};

/// One zone's sparing shape and where it starts in each numbering.
#[derive(Clone, Debug)]
struct Zone {
    /// The zone's first physical track (its `first_track`), where its empty
    /// front, if any, starts.
    phys: u64,
    /// First logical track (of the whole drive).
    lt: u64,
    /// The zone's first LBA, just after its empty front (the LBAs of the zones
    /// before it; set by [`SpareMap::new`]).
    lba: u64,
    /// Sectors per physical track in the zone (its `sectors_per_track`), spares
    /// included.
    spt: u64,
    /// Tracks of a sparing period.
    period: u64,
    /// LBAs of a whole period (its sectors less its spares).
    per_lbas: u64,
    /// Logical tracks of a whole period.
    per_lts: u64,
    /// Whole sparing periods of `period` tracks in the zone's data area; the
    /// tracks left over are `rem`.
    full: u64,
    /// Tracks after the whole periods, all holding LBAs (the spare tracks
    /// and the gap cylinders follow them).
    rem: u64,
    /// Positions of the empty front (DiskSim's deadspace), when mapped.
    dead: u64,
    /// Logical tracks the empty front takes.
    dead_lts: u64,
    /// Slipped tracks (offsets in the zone, ascending): each holds no LBA
    /// and moves the tracks after it one on.
    slips: Vec<u64>,
    /// Slipped sectors (positions from the zone's first sector, ascending,
    /// all in whole periods): each holds no LBA and moves the LBAs after it
    /// in its period one sector on.
    sector_slips: Vec<u64>,
}

/// The slipped sectors of one track: their positions in the zone and the
/// position of the track's sector 0. A track's LBAs fill its sectors in
/// order, stepping over these.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Holes<'a> {
    slips: &'a [u64],
    base: u64,
}

impl Holes<'_> {
    /// The sector holding the track's `idx`-th LBA: one on for each
    /// slipped sector at or before it (`g1_ltop_sectperrangespare` and
    /// `_sectperzonespare` count a slip `<=` the running position).
    #[inline]
    pub(super) fn sector(&self, idx: u64) -> u64 {
        let mut s = idx;
        for &h in self.slips {
            if h - self.base > s {
                break;
            }
            s += 1;
        }
        s
    }

    /// The index of the LBA on sector `s`, unless `s` is slipped.
    #[inline]
    pub(super) fn index(&self, s: u64) -> Option<u64> {
        let mut below = 0;
        for &h in self.slips {
            let h = h - self.base;
            if h == s {
                return None;
            }
            below += u64::from(h < s);
        }
        Some(s - below)
    }

    /// Sectors from `s` to the next slipped one after it, if any: the most
    /// one piece of a transfer can take there.
    #[inline]
    pub(super) fn run_from(&self, s: u64) -> Option<u64> {
        self.slips
            .iter()
            .map(|&h| h - self.base)
            .find(|&h| h > s)
            .map(|h| h - s)
    }
}

impl Zone {
    /// Track offset `o` of the unslipped numbering moved past the slipped
    /// tracks at or before it, as `g1_ltop_trackspare` steps `trackno`
    /// over each slip `<=` it (the slips ascending, the first above it ends
    /// the walk).
    #[inline]
    fn slipped(&self, mut o: u64) -> u64 {
        for &s in &self.slips {
            if s > o {
                break;
            }
            o += 1;
        }
        o
    }

    /// The unslipped offset of track offset `o`, unless `o` is slipped
    /// (`g1_ptol_trackspare`: less one for each slip below it).
    #[inline]
    fn unslipped(&self, o: u64) -> Option<u64> {
        if self.slips.is_empty() {
            return Some(o);
        }
        match self.slips.binary_search(&o) {
            Ok(_) => None,
            Err(below) => Some(o - below as u64),
        }
    }

    /// The slipped sectors of whole period `j` and the position of its
    /// first sector.
    #[inline]
    fn period_slips(&self, j: u64) -> (&[u64], u64) {
        let size = self.period * self.spt;
        let base = j * size;
        let s = &self.sector_slips;
        let a = s.partition_point(|&x| x < base);
        let b = a + s[a..].partition_point(|&x| x < base + size);
        (&s[a..b], base)
    }

    /// Of whole period `j`'s slipped sectors, how many lie before its
    /// track `r`, and those on it.
    #[inline]
    fn track_slips(&self, j: u64, r: u64) -> (u64, Holes<'_>) {
        let (s, base) = self.period_slips(j);
        let lo = base + r * self.spt;
        let a = s.partition_point(|&x| x < lo);
        let b = a + s[a..].partition_point(|&x| x < lo + self.spt);
        (
            a as u64,
            Holes {
                slips: &s[a..b],
                base: lo,
            },
        )
    }

    /// The slipped sectors of the zone's `i`-th logical track.
    #[inline]
    fn holes(&self, i: u64) -> Holes<'_> {
        let whole = self.full * self.per_lts;
        if self.sector_slips.is_empty() || i >= whole {
            return Holes::default();
        }
        self.track_slips(i / self.per_lts, i % self.per_lts).1
    }

    /// The (track offset in the zone, first position, LBAs) of the zone's
    /// `i`-th logical track, counting the front's.
    #[inline]
    fn track(&self, i: u64) -> (u64, u64, u64) {
        let whole = self.full * self.per_lts;
        let (o, pos, n) = if i < whole {
            let (j, r) = (i / self.per_lts, i % self.per_lts);
            // The period's slipped sectors before the track move its first
            // LBA back; those on it take sectors from it.
            let (mut before, mut on) = (0, 0);
            if !self.sector_slips.is_empty() {
                let (b, holes) = self.track_slips(j, r);
                (before, on) = (b, holes.slips.len() as u64);
            }
            let first = r * self.spt - before;
            (
                j * self.period + r,
                j * self.per_lbas + first,
                (self.spt - on).min(self.per_lbas - first),
            )
        } else {
            let q = i - whole;
            (
                self.full * self.period + q,
                self.full * self.per_lbas + q * self.spt,
                self.spt,
            )
        };
        (self.slipped(o), pos, n)
    }

    /// The zone's logical track (counting the front's) holding position `x`.
    #[inline]
    fn index_of(&self, x: u64) -> u64 {
        let whole = self.full * self.per_lbas;
        if x < whole {
            let (j, mut p) = (x / self.per_lbas, x % self.per_lbas);
            if !self.sector_slips.is_empty() {
                // Its sector in the period: the period is one track of
                // holes here, which the position steps over alike.
                let (slips, base) = self.period_slips(j);
                p = Holes { slips, base }.sector(p);
            }
            j * self.per_lts + p / self.spt
        } else {
            self.full * self.per_lts + (x - whole) / self.spt
        }
    }

    /// The zone's logical track (counting the front's) on track offset `o`,
    /// if it holds LBAs.
    #[inline]
    fn index_on(&self, o: u64) -> Option<u64> {
        let o = self.unslipped(o)?;
        let whole = self.full * self.period;
        if o < whole {
            let r = o % self.period;
            (r < self.per_lts).then(|| (o / self.period) * self.per_lts + r)
        } else {
            let q = o - whole;
            (q < self.rem).then(|| self.full * self.per_lts + q)
        }
    }

    /// Positions holding LBAs or the front.
    fn positions(&self) -> u64 {
        self.full * self.per_lbas + self.rem * self.spt
    }

    /// Logical tracks, counting the front's.
    fn tracks(&self) -> u64 {
        self.full * self.per_lts + self.rem
    }
}

/// The sparing scheme a zone sets: (key, spare sectors a period, tracks a
/// period, what a period is). `None`: no sector spares.
type Scheme = Option<(&'static str, u64, u64, String)>;

fn scheme(z: &ZoneSpec, area: u64, surfaces: u64, range_cylinders: u64) -> Scheme {
    if z.spare_sectors_per_track != 0 {
        Some((
            "spare_sectors_per_track",
            z.spare_sectors_per_track as u64,
            1,
            "track".into(),
        ))
    } else if z.spare_sectors_per_cylinder != 0 {
        Some((
            "spare_sectors_per_cylinder",
            z.spare_sectors_per_cylinder,
            surfaces,
            "cylinder".into(),
        ))
    } else if z.spare_sectors_per_range != 0 {
        Some((
            "spare_sectors_per_range",
            z.spare_sectors_per_range,
            range_cylinders * surfaces,
            format!("range of {range_cylinders} cylinders"),
        ))
    } else if z.spare_sectors_per_zone != 0 {
        Some((
            "spare_sectors_per_zone",
            z.spare_sectors_per_zone,
            area,
            "zone".into(),
        ))
    } else {
        None
    }
}

/// The shape of zone `z` of `len` tracks (its numbering left at 0), or a
/// one-line error when its spares or front leave it no data.
fn shape(z: &ZoneSpec, len: u64, surfaces: u64, range_cylinders: u64) -> SimResult<Zone> {
    let t = z.first_track;
    let spt = z.sectors_per_track.max(1) as u64;
    // The gap lies past the zone's last cylinder, so DiskSim's zone (its
    // cylinder count, the sparing periods counted from its first cylinder)
    // ends before it, like the spare tracks' positions do.
    let gap = z.gap_cylinders.saturating_mul(surfaces);
    let area = len
        .checked_sub(gap)
        .and_then(|a| a.checked_sub(z.spare_tracks))
        .filter(|&a| a > 0);
    let Some(area) = area else {
        return config_err(if gap == 0 {
            format!(
                "the zone at track {t} has {len} tracks: its spare_tracks ({}) leave none for data",
                z.spare_tracks
            )
        } else {
            format!(
                "the zone at track {t} has {len} tracks: its gap_cylinders ({}, {gap} tracks) and spare_tracks ({}) leave none for data",
                z.gap_cylinders, z.spare_tracks
            )
        });
    };
    let slips = &z.slipped_tracks;
    if !slips.is_empty() {
        if let Some(w) = slips.windows(2).find(|w| w[0] >= w[1]) {
            return config_err(format!(
                "the zone at track {t}: slipped_tracks must ascend ({} then {})",
                w[0], w[1]
            ));
        }
        let last = slips[slips.len() - 1];
        if last >= len - gap {
            return config_err(format!(
                "the zone at track {t}: slipped track {last} is past its {} tracks",
                len - gap
            ));
        }
        if slips.len() as u64 > z.spare_tracks {
            return config_err(format!(
                "the zone at track {t}: {} slipped_tracks need as many spare_tracks (it has {})",
                slips.len(),
                z.spare_tracks
            ));
        }
    }
    let (period, k) = match scheme(z, area, surfaces, range_cylinders) {
        Some((key, k, period, what)) => {
            if k >= period * spt && area >= period {
                return config_err(format!(
                    "the zone at track {t}: {key} = {k} leaves no data sectors in a {what} of {} sectors",
                    period * spt
                ));
            }
            (period, k)
        }
        None => (1, 0),
    };
    // A period longer than the zone has no spares (no whole period).
    let per_lbas = (period * spt).saturating_sub(k);
    let mut zone = Zone {
        phys: t,
        lt: 0,
        lba: 0,
        spt,
        period,
        per_lbas,
        per_lts: per_lbas.div_ceil(spt),
        full: area / period,
        rem: area % period,
        dead: 0,
        dead_lts: 0,
        slips: z.slipped_tracks.clone(),
        sector_slips: z.slipped_sectors.clone(),
    };
    let ss = &z.slipped_sectors;
    if !ss.is_empty() {
        if z.front_empty_sectors != 0 {
            return config_err(format!(
                "the zone at track {t}: slipped_sectors with front_empty_sectors are not supported (no DiskSim drive here has both)"
            ));
        }
        if z.spare_sectors_per_range == 0 && z.spare_sectors_per_zone == 0 {
            return config_err(format!(
                "the zone at track {t}: slipped_sectors need spare_sectors_per_range or spare_sectors_per_zone (DiskSim's sparing schemes 8 and 9)"
            ));
        }
        if let Some(w) = ss.windows(2).find(|w| w[0] >= w[1]) {
            return config_err(format!(
                "the zone at track {t}: slipped_sectors must ascend ({} then {})",
                w[0], w[1]
            ));
        }
        let size = zone.period * spt;
        let last = ss[ss.len() - 1];
        if last >= zone.full * size {
            return config_err(format!(
                "the zone at track {t}: slipped sector {last} lies outside the zone's whole sparing periods ({} sectors)",
                zone.full * size
            ));
        }
        // The LBAs a period's slips move on must stay on its data tracks
        // (the room its last one has spare): past them DiskSim would start
        // another track, which this map does not hold.
        let room = zone.per_lts * spt - zone.per_lbas;
        for j in 0..zone.full {
            let (p, base) = zone.period_slips(j);
            let m = p.iter().filter(|&&x| x - base < zone.per_lts * spt).count() as u64;
            if m > room {
                return config_err(format!(
                    "the zone at track {t}: {m} slipped_sectors in sparing period {j} move its LBAs past the {room} spare sectors of its last data track"
                ));
            }
        }
    }
    let dead = z.front_empty_sectors;
    if dead >= zone.positions() {
        return config_err(format!(
            "the zone at track {t} has {len} tracks: its front_empty_sectors ({dead}) and spares leave none for data"
        ));
    }
    let i = zone.index_of(dead);
    if zone.track(i).1 == dead {
        zone.dead = dead;
        zone.dead_lts = i;
    }
    Ok(zone)
}

/// Whether the home map leaves zone `z` (of `len` tracks) an empty front
/// that ends on a logical track's first sector, the only fronts it maps.
pub(crate) fn front_mapped(z: &ZoneSpec, len: u64, surfaces: u64, range_cylinders: u64) -> bool {
    shape(z, len, surfaces, range_cylinders).is_ok_and(|s| s.dead == z.front_empty_sectors)
}

/// Whether any zone sets spares, an empty front or gap cylinders.
pub(super) fn any(zones: &[ZoneSpec]) -> bool {
    zones.iter().any(|z| {
        z.front_empty_sectors != 0
            || z.gap_cylinders != 0
            || z.spare_tracks != 0
            || !z.slipped_tracks.is_empty()
            || !z.slipped_sectors.is_empty()
            || z.spare_sectors_per_track != 0
            || z.spare_sectors_per_cylinder != 0
            || z.spare_sectors_per_range != 0
            || z.spare_sectors_per_zone != 0
    })
}

/// The home map of a CMR drive with DiskSim's spares or empty zone fronts:
/// LBAs to logical tracks (the tracks holding LBAs, in LBA order) and those
/// to physical tracks. A logical track's LBAs fill its physical track from
/// sector 0; the track's other sectors are spare.
#[derive(Clone, Debug)]
pub(super) struct SpareMap {
    zones: Vec<Zone>,
    capacity: u64,
    logical_tracks: u64,
    /// Whether any zone has slipped sectors.
    holes: bool,
}

impl SpareMap {
    /// The map of `zones` over `tracks` tracks of `surfaces` surfaces, with
    /// ranges of `range_cylinders` cylinders (`spare_sectors_per_range`).
    /// Errors when a zone's spares or front leave it no data.
    pub(super) fn new(
        zones: &[ZoneSpec],
        tracks: u64,
        surfaces: u64,
        range_cylinders: u64,
    ) -> SimResult<SpareMap> {
        let (mut lt, mut lba, mut out) = (0, 0, Vec::with_capacity(zones.len()));
        for (i, z) in zones.iter().enumerate() {
            let end = zones.get(i + 1).map_or(tracks, |n| n.first_track);
            let mut s = shape(z, end - z.first_track, surfaces, range_cylinders)?;
            (s.lt, s.lba) = (lt, lba);
            lt += s.tracks() - s.dead_lts;
            lba += s.positions() - s.dead;
            out.push(s);
        }
        Ok(SpareMap {
            holes: out.iter().any(|z| !z.sector_slips.is_empty()),
            zones: out,
            capacity: lba,
            logical_tracks: lt,
        })
    }

    /// Host-visible capacity in sectors: the LBAs of every zone, less spares and
    /// unmapped empty fronts.
    pub(super) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Number of logical tracks.
    pub(super) fn logical_tracks(&self) -> u64 {
        self.logical_tracks
    }

    /// Heap bytes held (a few words a zone).
    pub(super) fn heap_bytes(&self) -> u64 {
        (self.zones.capacity() * std::mem::size_of::<Zone>()) as u64
    }

    #[inline]
    fn zone_by(&self, key: impl Fn(&Zone) -> u64, v: u64) -> &Zone {
        let z = &self.zones;
        if z.len() == 1 {
            &z[0]
        } else {
            &z[z.partition_point(|z| key(z) <= v).max(1) - 1]
        }
    }

    /// (first LBA, physical track, LBAs) of logical track `lt` (< the count).
    #[inline]
    pub(super) fn track(&self, lt: u64) -> (u64, u64, u64) {
        let z = self.zone_by(|z| z.lt, lt);
        let (off, pos, n) = z.track(lt - z.lt + z.dead_lts);
        (z.lba + pos - z.dead, z.phys + off, n)
    }

    /// First LBA of logical track `lt` (the capacity for `lt` = the count).
    #[inline]
    pub(super) fn start(&self, lt: u64) -> u64 {
        if lt >= self.logical_tracks {
            return self.capacity;
        }
        self.track(lt).0
    }

    /// (first LBA, physical track, LBAs) of the logical track holding `lba`
    /// (< capacity): [`SpareMap::track`] of [`SpareMap::logical_of`] with
    /// one zone search and the quotients shared (each command's pieces are
    /// found this way, where the two steps' five divisions were a quarter
    /// of the full drive model's time).
    #[inline]
    pub(super) fn extent_of(&self, lba: u64) -> (u64, u64, u64, Holes<'_>) {
        let z = self.zone_by(|z| z.lba, lba);
        let x = lba - z.lba + z.dead;
        if !z.sector_slips.is_empty() {
            // Rare (a few zones of a few drives): the general way.
            let i = z.index_of(x);
            let (off, pos, n) = z.track(i);
            return (z.lba + pos - z.dead, z.phys + off, n, z.holes(i));
        }
        let whole = z.full * z.per_lbas;
        let (off, pos, n) = if x < whole {
            let (j, within) = (x / z.per_lbas, x % z.per_lbas);
            let r = within / z.spt;
            let first = r * z.spt;
            (
                j * z.period + r,
                j * z.per_lbas + first,
                z.spt.min(z.per_lbas - first),
            )
        } else {
            let q = (x - whole) / z.spt;
            (z.full * z.period + q, whole + q * z.spt, z.spt)
        };
        let off = z.slipped(off);
        debug_assert_eq!(
            (z.lba + pos - z.dead, z.phys + off, n),
            self.track(self.logical_of(lba))
        );
        (z.lba + pos - z.dead, z.phys + off, n, Holes::default())
    }

    /// Whether any zone has slipped sectors (otherwise every track's LBAs
    /// fill it from sector 0 without a hole).
    #[inline]
    pub(super) fn has_holes(&self) -> bool {
        self.holes
    }

    /// The slipped sectors of logical track `lt`.
    #[inline]
    pub(super) fn holes(&self, lt: u64) -> Holes<'_> {
        let z = self.zone_by(|z| z.lt, lt);
        z.holes(lt - z.lt + z.dead_lts)
    }

    /// The logical track holding `lba` (< capacity).
    #[inline]
    pub(super) fn logical_of(&self, lba: u64) -> u64 {
        let z = self.zone_by(|z| z.lba, lba);
        z.lt + z.index_of(lba - z.lba + z.dead) - z.dead_lts
    }

    /// The logical track physical track `t` holds, if it holds LBAs.
    #[inline]
    pub(super) fn logical(&self, t: u64) -> Option<u64> {
        let z = self.zone_by(|z| z.phys, t);
        let i = z.index_on(t - z.phys)?;
        (i >= z.dead_lts).then(|| z.lt + i - z.dead_lts)
    }
}
