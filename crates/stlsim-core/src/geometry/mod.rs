//! Drive geometry: how many physical tracks there are, how many sectors each
//! holds (uniform or zoned-bit recording), the recording layout (CMR, SMR
//! bands with guard tracks, IMR bottom/top tracks, host-managed zones) and
//! the layout's *home* map from host LBAs to physical sectors.
//!
//! The home map runs over *logical tracks* (the LBA-ordered sequence of
//! data tracks), so that every layout and LBA order shares one lookup. It is
//! computed, not tabled (module `home`): layouts repeat a unit of tracks and zones
//! of equal tracks, so its memory is proportional to the zone table and the
//! unit, not to the drive's track count (a 200,000 GiB drive costs what a
//! 1 GiB one does). Lookups divide when all logical tracks are equal. A CMR
//! drive with DiskSim's spares or empty zone fronts maps its LBAs around
//! them with the same economy (module `spares`): per-zone arithmetic.

pub mod band_map;
pub mod config;
mod home;
pub mod segment_map;
mod spares;

use crate::error::{config_err, SimResult};
use crate::units::{Lba, PhysAddr, Sectors, Track};
pub use band_map::BandMap;
pub use config::{LayoutConfig, LayoutKind, ZoneSpec, MAX_SECTORS_PER_TRACK, MAX_TRACKS};
pub(crate) use spares::front_mapped;

/// What the geometry takes from a drive description
/// ([`crate::drive::DriveConfig::geometry`] fills it, its ranges checked):
/// sector and track sizes, the zone table, the track count or capacity,
/// the surfaces and sparing range, and the recording layout.
#[derive(Clone, Copy, Debug)]
pub struct GeometrySpec<'a> {
    /// Bytes per sector: 512 or 4096.
    pub sector_bytes: u32,
    /// Uniform track size in bytes, used when `zones` is empty.
    pub track_bytes: u64,
    /// The zoned-bit-recording table (empty: uniform tracks).
    pub zones: &'a [ZoneSpec],
    /// Physical tracks, if given; else derived from `capacity_gib`.
    pub tracks: Option<u64>,
    /// Host-visible capacity in GiB (at least), when `tracks` is absent.
    pub capacity_gib: Option<f64>,
    /// Data surfaces; tracks are numbered cylinder-major.
    pub surfaces: u64,
    /// Cylinders of a sparing range, for `spare_sectors_per_range`.
    pub spare_range_cylinders: u64,
    /// The `[layout]` table: its kind (`cmr`, `smr`, `imr`, `zoned`, `wave`) and
    /// that kind's keys; checked and turned into a [`Layout`] when the geometry is built.
    pub layout: &'a LayoutConfig,
}

/// IMR LBA order within a group of N bottom and N top tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImrOrder {
    /// N bottom tracks ascending, then the N top tracks ascending.
    ZigZag,
    /// N bottom tracks ascending, then the N top tracks descending.
    Serpentine,
    /// Physical order: bottom, top, bottom, top ...
    Ascending,
}

/// A recording layout with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Layout {
    /// Conventional recording: tracks independent.
    Cmr,
    /// Shingled bands of `band` data tracks, write head `width` tracks wide,
    /// `width - 1` guard tracks per band; `up` = overlap towards higher track
    /// numbers. The first `random_access` tracks form a random-access zone
    /// (one usable track, then `width - 1` guards, repeated) outside the host
    /// LBA space.
    Smr {
        /// Data tracks per band.
        band: u64,
        /// Write-head width in tracks.
        width: u64,
        /// Overlap towards higher track numbers.
        up: bool,
        /// Tracks of the random-access zone (a multiple of `width`).
        random_access: u64,
        /// Data tracks of the shingled persistent cache after the zone (0: none).
        cache: u64,
    },
    /// Interlaced: even tracks bottom, odd tracks top.
    Imr {
        /// Top-track capacity as a fraction of the bottom track's.
        top_ratio: f64,
        /// Bottom tracks per LBA group.
        group: u64,
        /// LBA order within a group.
        order: ImrOrder,
    },
    /// Host-managed zones of `zone_tracks` tracks; the first `conventional` are randomly writable.
    Zoned {
        /// Physical tracks per zone (the `zone_tracks` key, at least 1); every zone
        /// has the same number.
        zone_tracks: u64,
        /// Conventional zones at the start of the LBA space.
        conventional: u64,
        /// Most zones open at once (0: no limit).
        max_open: u64,
        /// Reads past a write pointer allowed (ZBC's URSWRZ).
        unrestricted_reads: bool,
    },
    /// Wave-like shingled recording (paper 001, HWSR, Figure 2(c)): regions
    /// of `region` tracks shingled in alternating radial directions. Even
    /// regions overlap towards higher track numbers, odd ones towards lower,
    /// so the two regions of a pair overlap into one shared guard band of
    /// `kappa` tracks between them, and a pair's outer edges need none.
    Wave {
        /// Tracks per region (`S_reg`).
        region: u64,
        /// Tracks a write overlaps (`kappa`), and the shared guard band's width.
        kappa: u64,
    },
}

/// What a physical track is for in its layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackKind {
    /// An ordinary data track (CMR, SMR data track, zoned).
    Data,
    /// IMR bottom track: writing it damages the adjacent top tracks.
    Bottom,
    /// IMR top track: writable without damage.
    Top,
    /// SMR guard track: holds no data.
    Guard,
    /// SMR random-access-zone track: writable without damage, outside the
    /// host LBA space (layer metadata and scratch copies).
    RandomAccess,
    /// SMR persistent-cache track: shingled like a band (a write damages the
    /// next W-1 cache tracks), outside the host LBA space.
    Cache,
}

/// The validated geometry of a drive.
#[derive(Clone, Debug)]
pub struct Geometry {
    sector_bytes: u32,
    layout: Layout,
    tracks: u64,
    home: home::HomeOrder,
    uniform_lt: Option<u64>,
    capacity: u64,
    max_spt: u32,
    max_home_spt: u32,
    /// SMR: the bands' LBA-to-track mapping.
    band_map: Option<BandMap>,
    /// CMR with DiskSim's spares or empty zone fronts: the map from LBAs to
    /// physical tracks around the sectors that hold none. `home` then only
    /// gives the tracks' sizes.
    spares: Option<spares::SpareMap>,
}

fn layout_from(c: &LayoutConfig) -> SimResult<Layout> {
    Ok(match c.kind {
        LayoutKind::Cmr => Layout::Cmr,
        LayoutKind::Smr => {
            if c.band_tracks == 0 || c.head_width_tracks == 0 {
                return config_err("smr layout needs band_tracks >= 1 and head_width_tracks >= 1");
            }
            let up = match c.direction.as_str() {
                "up" => true,
                "down" => false,
                d => return config_err(format!("smr direction '{d}' is not 'up' or 'down'")),
            };
            if !c.random_access_tracks.is_multiple_of(c.head_width_tracks) {
                return config_err(format!(
                    "smr random_access_tracks = {} must be a multiple of head_width_tracks = {} (one usable track, then W-1 guards)",
                    c.random_access_tracks, c.head_width_tracks
                ));
            }
            Layout::Smr {
                band: c.band_tracks,
                width: c.head_width_tracks,
                up,
                random_access: c.random_access_tracks,
                cache: c.cache_tracks,
            }
        }
        LayoutKind::Imr => {
            if !(c.top_ratio > 0.0 && c.top_ratio <= 1.0) {
                return config_err(format!("imr top_ratio {} must be in (0, 1]", c.top_ratio));
            }
            if c.group_tracks == 0 {
                return config_err("imr group_tracks must be >= 1");
            }
            let order = match c.order.as_str() {
                "zigzag" | "zig-zag" => ImrOrder::ZigZag,
                "serpentine" => ImrOrder::Serpentine,
                "ascending" => ImrOrder::Ascending,
                o => {
                    return config_err(format!(
                        "imr order '{o}' is not zigzag, serpentine or ascending"
                    ))
                }
            };
            Layout::Imr {
                top_ratio: c.top_ratio,
                group: c.group_tracks,
                order,
            }
        }
        LayoutKind::Zoned => {
            if c.zone_tracks == 0 {
                return config_err("zoned layout needs zone_tracks >= 1");
            }
            Layout::Zoned {
                zone_tracks: c.zone_tracks,
                conventional: c.conventional_zones,
                max_open: c.max_open_zones,
                unrestricted_reads: c.unrestricted_reads,
            }
        }
        LayoutKind::Wave => {
            if c.region_tracks == 0 || c.kappa_tracks == 0 {
                return config_err("wave layout needs region_tracks >= 1 and kappa_tracks >= 1");
            }
            Layout::Wave {
                region: c.region_tracks,
                kappa: c.kappa_tracks,
            }
        }
    })
}

impl Layout {
    /// Physical tracks in one repeating unit of the layout, and the host-visible
    /// track count it yields (for deriving the track count from a capacity).
    fn unit_tracks(&self) -> u64 {
        match *self {
            Layout::Cmr => 1,
            Layout::Smr { band, width, .. } => band + width - 1,
            Layout::Imr { group, .. } => 2 * group,
            Layout::Zoned { zone_tracks, .. } => zone_tracks,
            Layout::Wave { region, kappa } => 2 * region + kappa,
        }
    }

    /// Physical tracks outside the repeating units (the SMR random-access
    /// zone and persistent cache).
    fn extra_tracks(&self) -> u64 {
        match *self {
            Layout::Smr { .. } => self.bands_start(),
            _ => 0,
        }
    }

    /// SMR: the first track of the first band (after the random-access zone
    /// and the persistent cache with its guards).
    fn bands_start(&self) -> u64 {
        match *self {
            Layout::Smr {
                width,
                random_access,
                cache,
                ..
            } => random_access + if cache > 0 { cache + width - 1 } else { 0 },
            _ => 0,
        }
    }

    /// SMR: the span `[start, start + len)` of the persistent cache unit
    /// (its data tracks and guards), if there is one.
    fn cache_unit(&self) -> Option<(u64, u64)> {
        match *self {
            Layout::Smr {
                width,
                random_access,
                cache,
                ..
            } if cache > 0 => Some((random_access, cache + width - 1)),
            _ => None,
        }
    }
}

/// The fewest tracks (the layout's extra tracks plus whole units) whose
/// home tracks hold at least `want` sectors, or `None` past [`MAX_TRACKS`].
///
/// Past the extra tracks, a zone's track sizes repeat unit by unit (the
/// size rule depends on a track's offset in its unit only), so the walk
/// takes whole units at once inside a zone and goes track by track only
/// before the first unit and across zone boundaries. Track by track, sizing
/// imr-paper (524,288 tracks) was 30 M instructions, and every run and
/// drive check sizes its drive. Nothing allocated.
fn tracks_for_capacity(layout: Layout, zones: &[ZoneSpec], want: u64) -> Option<u64> {
    let (first, unit) = (layout.extra_tracks(), layout.unit_tracks());
    let max_spt = zones
        .iter()
        .map(|z| z.sectors_per_track as u128)
        .max()
        .unwrap_or(0);
    if want as u128 > MAX_TRACKS as u128 * max_spt {
        return None;
    }
    let (mut cap, mut t, mut z) = (0u64, 0u64, 0usize);
    while t < MAX_TRACKS {
        while z + 1 < zones.len() && zones[z + 1].first_track <= t {
            z += 1;
        }
        let base = zones[z].sectors_per_track;
        if t >= first && (t - first) % unit == 0 {
            let zone_end = zones
                .get(z + 1)
                .map_or(MAX_TRACKS, |n| n.first_track)
                .min(MAX_TRACKS);
            let whole = (zone_end - t) / unit;
            let per_unit: u64 = (t..t + unit)
                .map(|u| home::size_rule(layout, base, u) as u64)
                .sum();
            if whole > 0 && per_unit > 0 {
                // Fewer sectors than wanted so far (else the last unit
                // ended the walk); at least one unit more in any case.
                let need = want.saturating_sub(cap).div_ceil(per_unit).max(1);
                if need <= whole {
                    return Some(t + need * unit);
                }
                cap += whole * per_unit;
                t += whole * unit;
                continue;
            }
        }
        if t >= first {
            cap += home::size_rule(layout, base, t) as u64;
            if (t + 1 - first) % unit == 0 && cap >= want {
                return Some(t + 1);
            }
        }
        t += 1;
    }
    None
}

impl Geometry {
    /// Build and validate the geometry a drive description asks for (its
    /// quantities' ranges already checked: see
    /// [`crate::drive::DriveConfig::geometry`]).
    pub fn from_spec(c: &GeometrySpec) -> SimResult<Geometry> {
        if c.sector_bytes != 512 && c.sector_bytes != 4096 {
            return config_err(format!(
                "sector_bytes {} must be 512 or 4096",
                c.sector_bytes
            ));
        }
        let mut layout = layout_from(c.layout)?;
        // The overlap physics of shingled, interlaced and wave layouts counts
        // a track's neighbours as T-1 and T+1 on one surface; with tracks
        // numbered cylinder-major over several surfaces those are other
        // surfaces, so such a drive would be damaged in the wrong places.
        if c.surfaces > 1 && !matches!(layout, Layout::Cmr) {
            return config_err(format!(
                "surfaces = {} needs layout kind 'cmr': the '{}' layout's overlap physics counts neighbouring tracks on one surface",
                c.surfaces, c.layout.kind
            ));
        }
        let mut zones = c.zones.to_vec();
        if zones.is_empty() {
            if c.track_bytes == 0 || !c.track_bytes.is_multiple_of(c.sector_bytes as u64) {
                return config_err(format!(
                    "track_bytes {} must be a positive multiple of sector_bytes {}",
                    c.track_bytes, c.sector_bytes
                ));
            }
            let spt = c.track_bytes / c.sector_bytes as u64;
            if spt > u32::MAX as u64 {
                return config_err("track_bytes is too large");
            }
            zones.push(ZoneSpec {
                first_track: 0,
                sectors_per_track: spt as u32,
                ..Default::default()
            });
        }
        if zones[0].first_track != 0 {
            return config_err("the first zone must start at track 0");
        }
        for w in zones.windows(2) {
            if w[1].first_track <= w[0].first_track {
                return config_err("zones must be listed in ascending first_track order");
            }
        }
        if zones.iter().any(|z| z.sectors_per_track == 0) {
            return config_err("a zone has sectors_per_track = 0");
        }
        // Tracks are numbered cylinder-major, so a zone (a set of cylinders,
        // as in DiskSim's dm_layout_g1_zone) starts on a cylinder boundary.
        if let Some(z) = zones
            .iter()
            .find(|z| z.first_track % c.surfaces.max(1) != 0)
        {
            return config_err(format!(
                "zone first_track {} is not the first track of a cylinder (a multiple of surfaces = {})",
                z.first_track, c.surfaces
            ));
        }
        if let Some(z) = zones
            .iter()
            .find(|z| z.sectors_per_track > MAX_SECTORS_PER_TRACK)
        {
            return config_err(format!(
                "{} sectors per track is more than stlsim simulates ({MAX_SECTORS_PER_TRACK})",
                z.sectors_per_track
            ));
        }
        if let Some(mib) = c.layout.cache_mib {
            let Layout::Smr {
                random_access,
                ref mut cache,
                ..
            } = layout
            else {
                return config_err(format!(
                    "'cache_mib' is an smr layout key; layout '{}' has none",
                    c.layout.kind
                ));
            };
            if c.layout.cache_tracks != 0 {
                return config_err("give either cache_tracks or cache_mib, not both");
            }
            if !(mib > 0.0) {
                return config_err(format!("cache_mib {mib} must be positive"));
            }
            let z = zones
                .iter()
                .rev()
                .find(|z| z.first_track <= random_access)
                .unwrap_or(&zones[0]);
            let per_track = z.sectors_per_track as f64 * c.sector_bytes as f64;
            *cache = (mib * 1024.0 * 1024.0 / per_track).ceil() as u64;
        }
        if matches!(layout, Layout::Smr { cache, .. } if cache > MAX_TRACKS) {
            return config_err(format!(
                "the persistent cache needs more than {MAX_TRACKS} tracks"
            ));
        }
        if c.layout.kind != LayoutKind::Smr && c.layout.cache_tracks != 0 {
            return config_err(format!(
                "'cache_tracks' is an smr layout key; layout '{}' has none",
                c.layout.kind
            ));
        }
        let unit = layout.unit_tracks();
        let extra = layout.extra_tracks();
        let band_map = match layout {
            Layout::Smr { band, .. } => Some(BandMap::parse(&c.layout.mapping, band)?),
            _ if !c.layout.mapping.trim().is_empty() => {
                return config_err(format!(
                    "'mapping' is an smr layout key; layout '{}' has none",
                    c.layout.kind
                ))
            }
            _ => None,
        };
        let tracks = match (c.tracks, c.capacity_gib) {
            (Some(t), _) => t,
            (None, Some(gib)) => {
                if !(gib > 0.0) {
                    return config_err(format!("capacity_gib {gib} must be positive"));
                }
                let want = (gib * 1024.0 * 1024.0 * 1024.0 / c.sector_bytes as f64).ceil() as u64;
                // Checked against the limit before anything is allocated.
                match tracks_for_capacity(layout, &zones, want) {
                    Some(t) => t,
                    None => {
                        return config_err(format!(
                            "capacity_gib {gib} needs more than {MAX_TRACKS} tracks of this size"
                        ))
                    }
                }
            }
            (None, None) => return config_err("give either tracks or capacity_gib"),
        };
        if tracks <= extra || (tracks - extra) % unit != 0 {
            return config_err(if extra > 0 {
                format!(
                    "tracks = {tracks} must be the {extra} random-access and persistent-cache tracks plus a positive multiple of the band unit of {unit} tracks"
                )
            } else {
                format!("tracks = {tracks} must be a positive multiple of the layout's unit of {unit} tracks")
            });
        }
        if tracks > MAX_TRACKS {
            return config_err(format!(
                "{tracks} tracks is more than stlsim simulates ({MAX_TRACKS})"
            ));
        }
        if c.tracks.is_none() {
            // A capacity that ends before the inner zones leaves them unused
            // (the same zone table serves several capacities and layouts).
            zones.retain(|z| z.first_track < tracks);
        } else if let Some(z) = zones.iter().find(|z| z.first_track >= tracks) {
            return config_err(format!(
                "zone starting at track {} lies beyond the last track",
                z.first_track
            ));
        }
        if let Layout::Imr { group, .. } = layout {
            if let Some(z) = zones.iter().find(|z| z.first_track % (2 * group) != 0) {
                return config_err(format!(
                    "imr zone starting at track {} must start on a group boundary (multiple of {})",
                    z.first_track,
                    2 * group
                ));
            }
        }
        if matches!(layout, Layout::Zoned { .. }) && zones.len() > 1 {
            return config_err("the zoned layout needs a uniform track size (no zone table)");
        }
        // DiskSim's drives use one sparing scheme (its layout's "Sparing
        // scheme used"); a mixture has no DiskSim numbering to follow.
        let mut set = vec![];
        for z in &zones {
            for (key, on) in [
                ("spare_tracks", z.spare_tracks != 0),
                ("spare_sectors_per_track", z.spare_sectors_per_track != 0),
                (
                    "spare_sectors_per_cylinder",
                    z.spare_sectors_per_cylinder != 0,
                ),
                ("spare_sectors_per_range", z.spare_sectors_per_range != 0),
                ("spare_sectors_per_zone", z.spare_sectors_per_zone != 0),
            ] {
                if on && !set.contains(&key) {
                    set.push(key);
                }
            }
        }
        if set.len() > 1 {
            return config_err(format!(
                "the zones set {}: a drive uses one sparing scheme (DiskSim's \"Sparing scheme used\")",
                set.join(" and ")
            ));
        }
        // Spares and empty zone fronts are mapped on CMR drives with a given
        // track count (DiskSim's drives); elsewhere the run warns.
        if matches!(layout, Layout::Cmr) && c.tracks.is_some() && spares::any(&zones) {
            let map = spares::SpareMap::new(&zones, tracks, c.surfaces, c.spare_range_cylinders)?;
            let mut g = Geometry::build(c.sector_bytes, layout, &zones, tracks, band_map)?;
            g.capacity = map.capacity();
            g.uniform_lt = None;
            g.spares = Some(map);
            return Ok(g);
        }
        Geometry::build(c.sector_bytes, layout, &zones, tracks, band_map)
    }

    fn build(
        sector_bytes: u32,
        layout: Layout,
        zones: &[ZoneSpec],
        tracks: u64,
        band_map: Option<BandMap>,
    ) -> SimResult<Geometry> {
        let home =
            home::HomeOrder::new(layout, zones, tracks, band_map.as_ref().map(|m| m.groups()));
        let (max_home_spt, max_spt) = home.max_sizes(tracks);
        Ok(Geometry {
            sector_bytes,
            layout,
            tracks,
            uniform_lt: home.uniform,
            capacity: home.capacity(),
            max_spt,
            max_home_spt,
            home,
            band_map,
            spares: None,
        })
    }

    /// Bytes per sector, 512 or 4096 (the drive's `sector_bytes`); every LBA and
    /// sector count is in sectors of this size.
    pub fn sector_bytes(&self) -> u32 {
        self.sector_bytes
    }
    /// The recording layout, checked and resolved from the drive's `[layout]`
    /// table (its kind with that kind's parameters).
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// Number of physical tracks.
    pub fn tracks(&self) -> u64 {
        self.tracks
    }
    /// Host-visible capacity in sectors (every data track's sectors).
    pub fn capacity(&self) -> Sectors {
        Sectors(self.capacity)
    }
    /// Sectors on a physical track (0 for SMR guard tracks).
    #[inline]
    pub fn sectors_in(&self, t: Track) -> u32 {
        debug_assert!(t.0 < self.tracks, "track {} of {}", t.0, self.tracks);
        self.home.size(t.0)
    }
    /// The largest number of sectors on any track.
    pub fn max_sectors_per_track(&self) -> u32 {
        self.max_spt
    }
    /// The largest number of sectors on a track holding host data.
    pub fn max_home_sectors_per_track(&self) -> u32 {
        self.max_home_spt
    }
    /// What a physical track is for.
    pub fn kind(&self, t: Track) -> TrackKind {
        match self.layout {
            Layout::Imr { .. } => {
                if t.0.is_multiple_of(2) {
                    TrackKind::Bottom
                } else {
                    TrackKind::Top
                }
            }
            Layout::Smr { .. } | Layout::Wave { .. } if self.sectors_in(t) == 0 => TrackKind::Guard,
            Layout::Smr { random_access, .. } if t.0 < random_access => TrackKind::RandomAccess,
            Layout::Smr { .. } if t.0 < self.layout.bands_start() => TrackKind::Cache,
            _ => TrackKind::Data,
        }
    }

    /// Number of logical tracks (data tracks in LBA order).
    pub fn logical_tracks(&self) -> u64 {
        match &self.spares {
            None => self.home.logical_tracks(),
            Some(m) => m.logical_tracks(),
        }
    }
    /// The logical track holding `lba`.
    #[inline]
    pub fn logical_track_of(&self, lba: Lba) -> u64 {
        match self.uniform_lt {
            Some(n) => lba.0 / n,
            None => match &self.spares {
                None => self.home.logical_of(lba.0),
                Some(m) => m.logical_of(lba.0),
            },
        }
    }
    /// First LBA of a logical track.
    #[inline]
    pub fn logical_track_start(&self, lt: u64) -> Lba {
        match self.uniform_lt {
            Some(n) => Lba(lt * n),
            None => Lba(match &self.spares {
                None => self.home.start(lt),
                Some(m) => m.start(lt),
            }),
        }
    }
    /// The physical track holding a logical track.
    #[inline]
    pub fn logical_track_phys(&self, lt: u64) -> Track {
        match &self.spares {
            None => Track(self.home.phys(lt)),
            Some(m) => Track(m.track(lt).1),
        }
    }
    /// The logical track a physical track holds, if it holds data.
    #[inline]
    pub fn phys_logical_track(&self, t: Track) -> Option<u64> {
        if t.0 >= self.tracks {
            return None;
        }
        match &self.spares {
            None => self.home.logical(t.0),
            Some(m) => m.logical(t.0),
        }
    }

    /// Home location of an LBA in the layout's static map.
    pub fn home(&self, lba: Lba) -> PhysAddr {
        if let Some(m) = &self.spares {
            let lt = m.logical_of(lba.0);
            let (start, track, _) = m.track(lt);
            let idx = lba.0 - start;
            let sector = if m.has_holes() {
                m.holes(lt).sector(idx)
            } else {
                idx
            };
            return PhysAddr {
                track: Track(track),
                sector: sector as u32,
            };
        }
        let lt = self.logical_track_of(lba);
        PhysAddr {
            track: self.logical_track_phys(lt),
            sector: (lba.0 - self.logical_track_start(lt).0) as u32,
        }
    }

    /// The LBA whose home is a physical sector, if any.
    pub fn home_lba(&self, at: PhysAddr) -> Option<Lba> {
        if let Some(m) = &self.spares {
            // A track's sectors past its LBAs are spares, and so are its
            // slipped sectors.
            let lt = self.phys_logical_track(at.track)?;
            let (start, _, n) = m.track(lt);
            let idx = if m.has_holes() {
                m.holes(lt).index(at.sector as u64)?
            } else {
                at.sector as u64
            };
            return (idx < n).then(|| Lba(start + idx));
        }
        self.phys_logical_track(at.track)
            .map(|lt| Lba(self.logical_track_start(lt).0 + at.sector as u64))
    }

    /// Split `n` sectors from `lba` into per-track home extents
    /// `(start, sectors)`, in LBA order. Calls `f` for each.
    #[inline]
    pub fn for_home_extents(&self, lba: Lba, n: Sectors, mut f: impl FnMut(PhysAddr, u32, Lba)) {
        let mut walk = HomeExtents::new(lba, n);
        while let Some((at, take, l)) = walk.next(self) {
            f(at, take, l);
        }
    }

    /// The home extent holding `cur`, up to `end`: where it starts and how
    /// many sectors of `[cur, end)` it holds.
    #[inline]
    fn home_extent(&self, cur: u64, end: u64) -> (PhysAddr, u32) {
        let (start, track, len) = match &self.spares {
            None => {
                // A logical track's sectors are its physical track's.
                let (start, track, len) = self.home.extent_of(cur);
                (start, Track(track), len as u64)
            }
            Some(m) => {
                let (start, track, len, holes) = m.extent_of(cur);
                if m.has_holes() {
                    // A piece ends before a slipped sector: the next one
                    // starts past it, on the same track.
                    let sector = holes.sector(cur - start);
                    let mut take = end.min(start + len) - cur;
                    if let Some(run) = holes.run_from(sector) {
                        take = take.min(run);
                    }
                    let at = PhysAddr {
                        track: Track(track),
                        sector: sector as u32,
                    };
                    return (at, take as u32);
                }
                (start, Track(track), len)
            }
        };
        let take = (end.min(start + len) - cur) as u32;
        let at = PhysAddr {
            track,
            sector: (cur - start) as u32,
        };
        (at, take)
    }

    /// Physical tracks whose sectors a write to `t` damages, by the layout's
    /// overlap physics: IMR bottom → the adjacent top tracks; SMR → the next
    /// W-1 tracks downstream within the band and its guards.
    pub fn damaged_by_write(&self, t: Track) -> impl Iterator<Item = Track> {
        let n = self.tracks();
        let (lo, hi) = match self.layout {
            Layout::Imr { .. } if t.0.is_multiple_of(2) => {
                let lo = if t.0 == 0 { 0 } else { t.0 - 1 };
                let hi = (t.0 + 1).min(n - 1);
                (lo, hi)
            }
            Layout::Smr {
                band,
                width,
                up,
                random_access,
                ..
            } if width > 1 => {
                let first = self.layout.bands_start();
                let (u, unit_start) = if t.0 < random_access {
                    (width, t.0 - t.0 % width)
                } else if t.0 < first {
                    let (start, len) = self
                        .layout
                        .cache_unit()
                        .expect("tracks between the zone and the bands are the cache");
                    (len, start)
                } else {
                    let u = band + width - 1;
                    (u, t.0 - (t.0 - first) % u)
                };
                if up {
                    (t.0 + 1, (t.0 + width - 1).min(unit_start + u - 1))
                } else {
                    (
                        t.0.saturating_sub(width - 1).max(unit_start),
                        t.0.saturating_sub(1),
                    )
                }
            }
            Layout::Wave { region, kappa } => {
                let off = t.0 % (2 * region + kappa);
                let base = t.0 - off;
                if off < region {
                    (t.0 + 1, t.0 + kappa)
                } else if off >= region + kappa {
                    ((t.0 - kappa).max(base + region), t.0 - 1)
                } else {
                    (1, 0)
                }
            }
            _ => (1, 0),
        };
        (lo..=hi).filter(move |&x| x != t.0).map(Track)
    }

    /// The sectors `[lo, hi)` of track `to` whose angular span meets sectors
    /// `[sector, sector+count)` of track `from` (a whole-track span maps to the whole track).
    pub fn overlap_span(&self, from: Track, sector: u32, count: u32, to: Track) -> (u32, u32) {
        let spt = self.sectors_in(from) as u64;
        let nspt = self.sectors_in(to) as u64;
        if count as u64 >= spt || spt == 0 {
            return (0, nspt as u32);
        }
        let lo = (sector as u64 * nspt) / spt;
        let hi = ((sector as u64 + count as u64) * nspt)
            .div_ceil(spt)
            .min(nspt);
        (lo as u32, hi as u32)
    }

    /// SMR: the bands' LBA-to-track mapping (`None` for other layouts).
    pub fn band_map(&self) -> Option<&BandMap> {
        self.band_map.as_ref()
    }

    /// SMR: number of bands.
    pub fn bands(&self) -> u64 {
        match self.layout {
            Layout::Smr { band, width, .. } => {
                (self.tracks() - self.layout.bands_start()) / (band + width - 1)
            }
            _ => 0,
        }
    }

    /// SMR: data tracks of the persistent cache (0: none).
    pub fn cache_tracks(&self) -> u64 {
        match self.layout {
            Layout::Smr { cache, .. } => cache,
            _ => 0,
        }
    }

    /// SMR: the `i`-th persistent-cache track in shingling order (writing
    /// track `i` damages tracks `i+1 .. i+W-1`; the last ones damage guards).
    pub fn cache_track(&self, i: u64) -> Track {
        let Layout::Smr {
            width, up, cache, ..
        } = self.layout
        else {
            panic!("cache_track on a drive without bands")
        };
        assert!(i < cache, "cache track {i} of {cache}");
        let (start, _) = self.layout.cache_unit().expect("cache > 0");
        Track(if up {
            start + i
        } else {
            start + width - 1 + cache - 1 - i
        })
    }

    /// SMR: the band of a data track and its 1-based position in shingling
    /// order (position p+1 is the track a write to p overlaps first).
    pub fn band_position(&self, t: Track) -> Option<(u64, u32)> {
        let Layout::Smr {
            band, width, up, ..
        } = self.layout
        else {
            return None;
        };
        let first = self.layout.bands_start();
        if t.0 < first || self.sectors_in(t) == 0 {
            return None;
        }
        let u = band + width - 1;
        let (b, off) = ((t.0 - first) / u, (t.0 - first) % u);
        let p = if up {
            off + 1
        } else {
            band - (off - (width - 1))
        };
        Some((b, p as u32))
    }

    /// SMR: the data track at 1-based position `p` of band `b`.
    pub fn band_track(&self, b: u64, p: u32) -> Track {
        let Layout::Smr {
            band, width, up, ..
        } = self.layout
        else {
            panic!("band_track on a drive without bands")
        };
        let base = self.layout.bands_start() + b * (band + width - 1);
        Track(if up {
            base + p as u64 - 1
        } else {
            base + width - 1 + band - p as u64
        })
    }

    /// SMR: the usable tracks of the random-access zone, outermost first.
    pub fn random_access_tracks(&self) -> Vec<Track> {
        match self.layout {
            Layout::Smr { random_access, .. } => (0..random_access)
                .map(Track)
                .filter(|&t| self.sectors_in(t) > 0)
                .collect(),
            _ => vec![],
        }
    }

    /// Areal-density gain of the layout over conventional recording with the
    /// same head: SMR `W*N/(N+W-1)` (paper 002 equation 1), 1 otherwise.
    pub fn space_gain(&self) -> f64 {
        match self.layout {
            Layout::Smr { band, width, .. } => (width * band) as f64 / (band + width - 1) as f64,
            _ => 1.0,
        }
    }

    /// Wave-like layout: the number of regions.
    pub fn wave_regions(&self) -> u64 {
        match self.layout {
            Layout::Wave { region, kappa } => self.tracks() / (2 * region + kappa) * 2,
            _ => 0,
        }
    }

    /// Wave-like layout: physical track `i` (0-based, ascending track
    /// number) of region `r`. Even regions shingle from their first track
    /// upwards, odd regions from their last track downwards.
    pub fn wave_track(&self, r: u64, i: u64) -> Track {
        let Layout::Wave { region, kappa } = self.layout else {
            panic!("wave_track on a drive without wave regions")
        };
        debug_assert!(i < region);
        let base = (r / 2) * (2 * region + kappa);
        Track(if r.is_multiple_of(2) {
            base + i
        } else {
            base + region + kappa + i
        })
    }

    /// Heap bytes of the home map: proportional to the zone table and the
    /// layout's unit, not to the track count.
    pub fn home_heap_bytes(&self) -> u64 {
        self.home.heap_bytes() + self.spares.as_ref().map_or(0, |m| m.heap_bytes())
    }

    /// Host-managed zones: sectors per zone (`None` for other layouts).
    pub fn zone_sectors(&self) -> Option<u64> {
        match self.layout {
            Layout::Zoned { zone_tracks, .. } => self.uniform_lt.map(|n| n * zone_tracks),
            _ => None,
        }
    }
}

#[cfg(test)]
mod spares_tests;

/// The per-track home extents of a range of LBAs, handed out one at a time
/// by [`HomeExtents::next`], which is given the geometry on each call: a
/// caller can then issue device operations between steps without holding
/// a borrow of (or a reference count on) the device's geometry.
#[derive(Clone, Copy, Debug)]
pub struct HomeExtents {
    cur: u64,
    end: u64,
}

impl HomeExtents {
    /// The extents of `n` sectors from `lba`.
    #[inline]
    pub fn new(lba: Lba, n: Sectors) -> Self {
        HomeExtents {
            cur: lba.0,
            end: lba.0 + n.0,
        }
    }

    /// The next extent: where it starts, its sectors and its first LBA.
    #[inline]
    pub fn next(&mut self, geom: &Geometry) -> Option<(PhysAddr, u32, Lba)> {
        if self.cur >= self.end {
            return None;
        }
        let first = self.cur;
        let (at, take) = geom.home_extent(first, self.end);
        self.cur += take as u64;
        Some((at, take, Lba(first)))
    }
}

#[cfg(test)]
mod tests;
