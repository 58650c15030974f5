//! The drive description users write in TOML (shipped presets and their own
//! files). Deserialised with unknown keys rejected, then validated and turned
//! into a [`Geometry`](super::Geometry) and [`MechanicsConfig`](crate::mechanics::MechanicsConfig).

use crate::medium::prefill::PrefillSpec;
use crate::side_device::SideConfig;
use serde::{Deserialize, Serialize};

/// One zone of a zoned-bit-recording drive: tracks from `first_track` on
/// (until the next zone) hold `sectors_per_track` sectors. For IMR this is the
/// bottom-track size; top tracks hold `top_ratio` of it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    /// First physical track of the zone.
    pub first_track: u64,
    /// Sectors on each track of the zone.
    pub sectors_per_track: u32,
}

/// Seek curve.
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
        SeekConfig { model: "sqrt".into(), min_ms: 2.0, max_ms: 20.0, table: vec![] }
    }
}

/// Recording layout and its parameters.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LayoutConfig {
    /// `cmr`, `smr`, `imr`, `zoned` or `wave`.
    pub kind: String,
    /// SMR: data tracks per band.
    pub band_tracks: u64,
    /// SMR: write-head width in tracks (a write to T overlaps T+1 .. T+W-1); W-1 guard tracks follow each band.
    pub head_width_tracks: u64,
    /// SMR: `up` (overlap towards higher track numbers) or `down`.
    pub direction: String,
    /// SMR: the static LBA-to-track mapping of the bands in the notation of
    /// paper 002 (`1234`, `R(4123)`, `124R(3)`, `14R(23)`; see
    /// [`BandMap`](super::band_map::BandMap)). Empty: conventional (`12..N`).
    pub mapping: String,
    /// SMR: physical tracks of the random-access zone before the first band
    /// (a multiple of the head width: one usable track, then W-1 guards).
    /// Outside the host LBA space; layers keep metadata and scratch copies there.
    pub random_access_tracks: u64,
    /// SMR: data tracks of a shingled persistent (media) cache after the
    /// random-access zone, followed by W-1 guards; outside the host LBA space
    /// (drive-managed SMR, paper 003). 0: none.
    pub cache_tracks: u64,
    /// SMR: the persistent cache's size in MiB instead of `cache_tracks`
    /// (rounded up to whole tracks of the size found where the cache starts).
    pub cache_mib: Option<f64>,
    /// IMR: top-track capacity as a fraction of the bottom-track capacity.
    pub top_ratio: f64,
    /// IMR: bottom tracks per LBA group (N bottom tracks, then the N top tracks between them).
    pub group_tracks: u64,
    /// IMR: `zigzag`, `serpentine` or `ascending` LBA order.
    pub order: String,
    /// Zoned: tracks per zone.
    pub zone_tracks: u64,
    /// Zoned: number of conventional (randomly writable) zones at the start of the LBA space.
    pub conventional_zones: u64,
    /// Zoned: most sequential zones open at once (0: no limit), as a ZBC drive reports it.
    pub max_open_zones: u64,
    /// Zoned: whether reads past a write pointer are allowed (ZBC's URSWRZ bit; off: they fail).
    pub unrestricted_reads: bool,
    /// Wave: tracks per region (`S_reg` of paper 001).
    pub region_tracks: u64,
    /// Wave: tracks a shingled write overlaps (`kappa`); each pair of regions shares one guard band this wide.
    pub kappa_tracks: u64,
}

impl Default for LayoutConfig {
    fn default() -> Self {
        LayoutConfig {
            kind: "cmr".into(),
            band_tracks: 4,
            head_width_tracks: 2,
            direction: "up".into(),
            mapping: String::new(),
            random_access_tracks: 0,
            cache_tracks: 0,
            cache_mib: None,
            top_ratio: 1.0,
            group_tracks: 1,
            order: "zigzag".into(),
            zone_tracks: 128,
            conventional_zones: 0,
            max_open_zones: 0,
            unrestricted_reads: false,
            region_tracks: 20,
            kappa_tracks: 8,
        }
    }
}

/// A whole drive: geometry, layout, mechanics and write cache.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DriveConfig {
    /// Preset or user name of the drive.
    pub name: String,
    /// One line describing it.
    pub description: String,
    /// Bytes per sector: 512 or 4096. Host LBAs count in this unit.
    pub sector_bytes: u32,
    /// Spindle speed, revolutions per minute.
    pub rpm: f64,
    /// Uniform track size in bytes (used when `zones` is empty).
    pub track_bytes: u64,
    /// Zoned-bit-recording table (overrides `track_bytes`).
    pub zones: Vec<ZoneSpec>,
    /// Physical tracks; derived from `capacity_gib` when absent.
    pub tracks: Option<u64>,
    /// Host-visible capacity in GiB (at least); used when `tracks` is absent.
    pub capacity_gib: Option<f64>,
    /// DRAM write cache size in MiB (0 disables it).
    pub write_cache_mib: f64,
    /// Host interface rate, MB/s: the time to move a request's data to or from the drive's buffer.
    pub interface_mb_s: f64,
    /// Seek curve.
    pub seek: SeekConfig,
    /// `average` (half a rotation per repositioning access) or `angular` (head angle tracked).
    pub rotation: String,
    /// Recording layout.
    pub layout: LayoutConfig,
    /// How full the drive is when a run starts, unless the run says otherwise
    /// (a fraction of the host capacity, or `footprint`; absent: empty).
    pub prefill: Option<PrefillSpec>,
    /// The memory write buffer of a hybrid system (paper 001), if it has one.
    pub memory: Option<SideConfig>,
    /// The SSD read cache of a hybrid system (paper 001), if it has one.
    pub ssd: Option<SideConfig>,
}

impl Default for DriveConfig {
    fn default() -> Self {
        DriveConfig {
            name: "custom".into(),
            description: String::new(),
            sector_bytes: 4096,
            rpm: 7200.0,
            track_bytes: 2 * 1024 * 1024,
            zones: vec![],
            tracks: None,
            capacity_gib: Some(1024.0),
            write_cache_mib: 0.0,
            interface_mb_s: 600.0,
            seek: SeekConfig::default(),
            rotation: "average".into(),
            layout: LayoutConfig::default(),
            prefill: None,
            memory: None,
            ssd: None,
        }
    }
}
