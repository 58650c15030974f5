//! The whole drive description users write in TOML (shipped presets and
//! their own files): the geometry's zones and layout, the mechanics' seek
//! curve and rotation, and the settings of the controller, the front end's
//! queue, the side devices and the starting fill. It sits above the parts
//! it configures: each part takes its own settings ([`GeometrySpec`],
//! [`MechanicsSpec`]), and [`DriveConfig::geometry`] /
//! [`DriveConfig::mechanics`] hand them over after checking every
//! quantity's range once.

use crate::error::{config_err, SimResult};
use crate::geometry::config::check_int;
use crate::geometry::{Geometry, GeometrySpec, LayoutConfig, LayoutKind, ZoneSpec};
use crate::mechanics::{Mechanics, MechanicsSpec, Rotation, SeekConfig, SurfaceOrder};
use crate::medium::prefill::PrefillSpec;
use crate::side_device::SideConfig;
use serde::{Deserialize, Serialize};

/// The plausible range of each real-valued drive key: `(key, lowest,
/// highest, unit)`, inclusive. Generous on purpose (a 1990s SCSI disk and
/// a future 30,000 RPM drive both fit); a value outside is a typo or a unit
/// mistake, and would otherwise overflow the nanosecond clock or divide by
/// almost nothing. `docs/drive-model.md` lists the same table.
pub const REAL_RANGES: &[(&str, f64, f64, &str)] = &[
    ("rpm", 1_000.0, 30_000.0, "revolutions per minute"),
    // Up to 10^5 MB/s (100 GB/s, past a PCIe 5 x16 link); 0 is also taken,
    // and means an ideal link that moves data in no time (see `check_ranges`).
    ("interface_mb_s", 1.0, 1e5, "MB/s"),
    ("write_cache_mib", 0.0, 65_536.0, "MiB"),
    ("capacity_gib", 1e-6, 1_048_576.0, "GiB"),
    ("seek.min_ms", 0.0, 100.0, "ms"),
    ("seek.max_ms", 0.0, 1_000.0, "ms"),
    ("seek.table", 0.0, 1_000.0, "ms"),
    ("layout.top_ratio", 0.1, 1.0, "of a bottom track"),
    ("layout.cache_mib", 1e-6, 1_048_576.0, "MiB"),
    ("mib", 1e-6, 1_048_576.0, "MiB"),
    ("read_latency_us", 0.0, 1e6, "us"),
    ("write_latency_us", 0.0, 1e6, "us"),
    ("read_mb_s", 1.0, 1e6, "MB/s"),
    ("write_mb_s", 1.0, 1e6, "MB/s"),
    ("head_switch_ms", 0.0, 100.0, "ms"),
    // Negative values are DiskSim's: its extracted seek curves are measured
    // on reads, and some drives settle for a write faster than the curve
    // says (hp_c2490a: -0.642 ms). See `mechanics.rs`.
    ("write_settle_ms", -100.0, 100.0, "ms"),
];

fn real_range(key: &str) -> (f64, f64, &'static str) {
    let r = REAL_RANGES
        .iter()
        .find(|r| r.0 == key)
        .expect("a listed key");
    (r.1, r.2, r.3)
}

/// `key = v` within its [`REAL_RANGES`] entry, else a one-line error naming it
/// (`shown` is the name the user wrote, e.g. `memory.mib`).
fn check_real(key: &str, shown: &str, v: f64) -> SimResult<()> {
    let (lo, hi, unit) = real_range(key);
    if !(v >= lo && v <= hi) {
        return config_err(format!(
            "{shown} = {v} is outside the plausible range {lo} to {hi} ({unit})"
        ));
    }
    Ok(())
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
    /// The seek curve (`[seek]` of the drive): seek time against cylinder distance,
    /// a square-root curve (default 2 ms single-track, 20 ms full stroke) or a measured table.
    pub seek: SeekConfig,
    /// `average` (half a rotation per repositioning access) or `angular` (head angle tracked).
    pub rotation: Rotation,
    /// Data surfaces (heads). Tracks are numbered cylinder-major: track `t`
    /// is cylinder `t / surfaces`, surface `t % surfaces`; seeks are counted
    /// in cylinders.
    pub surfaces: u64,
    /// The order in which LBAs visit a cylinder's surfaces (DiskSim "LBN-to-PBN
    /// mapping scheme"): `ascending` (0: surface 0 first on every cylinder),
    /// `serpentine-in-zone` (1: odd cylinders of a zone, counted from its
    /// first, run from the last surface down, so that a cylinder switch
    /// needs no head switch) or `serpentine` (2: the same by absolute
    /// cylinder number).
    pub surface_order: SurfaceOrder,
    /// Time to switch to another surface of the same cylinder, ms (DiskSim
    /// "Head switch time"); a seek and a head switch overlap.
    pub head_switch_ms: f64,
    /// Added to a write's repositioning when it moved the head, ms (DiskSim
    /// "Add. write settling delay"; may be negative, never below zero in total).
    pub write_settle_ms: f64,
    /// Whether a whole-track access starts at whatever sector comes first
    /// (zero-latency, read-on-arrival: the IMR paper's assumption, and
    /// DiskSim's "Immediate buffer read/write" = 1) or waits for the track's
    /// first sector like any other access (DiskSim's 0, as four of its five
    /// validated drives).
    pub zero_latency: bool,
    /// Cylinders of a sparing range (DiskSim "Rangesize for sparing"), for
    /// the zones' `spare_sectors_per_range`.
    pub spare_range_cylinders: u64,
    /// Recording layout: its kind and that kind's keys only.
    #[serde(
        deserialize_with = "crate::geometry::config::deserialize_layout",
        serialize_with = "crate::geometry::config::serialize_layout"
    )]
    pub layout: LayoutConfig,
    /// How full the drive is when a run starts, unless the run says otherwise
    /// (a fraction of the host capacity, or `footprint`; absent: empty).
    pub prefill: Option<PrefillSpec>,
    /// The memory write buffer of a hybrid system (paper 001), if it has one.
    pub memory: Option<SideConfig>,
    /// The SSD read cache of a hybrid system (paper 001), if it has one.
    pub ssd: Option<SideConfig>,
    /// Command-processing overheads of the drive's controller (absent: none).
    pub controller: Option<crate::front_end::controller::ControllerConfig>,
    /// The on-drive read cache: buffer segments and read-ahead (absent: none).
    pub read_cache: Option<crate::front_end::controller::ReadCacheConfig>,
    /// The drive's command queue beneath a host-side layer: depth and how it
    /// orders the cached writes it destages (absent: 32 deep, `sptf`).
    pub queue: Option<crate::front_end::queued_cache::QueueConfig>,
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
            rotation: Rotation::Average,
            surfaces: 1,
            surface_order: SurfaceOrder::Ascending,
            head_switch_ms: 0.0,
            write_settle_ms: 0.0,
            zero_latency: true,
            spare_range_cylinders: 1,
            layout: LayoutConfig::default(),
            prefill: None,
            memory: None,
            ssd: None,
            controller: None,
            read_cache: None,
            queue: None,
        }
    }
}

impl DriveConfig {
    /// The geometry this drive describes, every quantity's range checked.
    pub fn geometry(&self) -> SimResult<Geometry> {
        self.check_ranges()?;
        Geometry::from_spec(&GeometrySpec {
            sector_bytes: self.sector_bytes,
            track_bytes: self.track_bytes,
            zones: &self.zones,
            tracks: self.tracks,
            capacity_gib: self.capacity_gib,
            surfaces: self.surfaces,
            spare_range_cylinders: self.spare_range_cylinders,
            layout: &self.layout,
        })
    }

    /// The mechanics of this drive with `tracks` physical tracks (the
    /// geometry's count), every quantity's range checked.
    pub fn mechanics(&self, tracks: u64) -> SimResult<Mechanics> {
        self.check_ranges()?;
        Mechanics::from_spec(
            &MechanicsSpec {
                rpm: self.rpm,
                seek: &self.seek,
                rotation: self.rotation,
                surfaces: self.surfaces,
                surface_order: self.surface_order,
                head_switch_ms: self.head_switch_ms,
                write_settle_ms: self.write_settle_ms,
                zero_latency: self.zero_latency,
                zones: &self.zones,
            },
            tracks,
        )
    }

    /// The zone keys set that the home map does not use: every spare,
    /// empty-front and gap key unless the drive is CMR with a given track count,
    /// and there an empty front that ends inside a track. LBAs fill those
    /// sectors too; the run's report warns about them, so that nothing
    /// changes silently.
    pub fn unmapped_zone_keys(&self) -> Vec<&'static str> {
        let mut keys = vec![];
        let mut note = |set: bool, key| {
            if set && !keys.contains(&key) {
                keys.push(key);
            }
        };
        // DiskSim's spares and fronts are mapped on CMR drives with a given
        // track count (see `Geometry`).
        let mapped = self.layout.kind == LayoutKind::Cmr && self.tracks.is_some();
        let tracks = self.tracks.unwrap_or(0);
        for (i, z) in self.zones.iter().enumerate() {
            let end = self.zones.get(i + 1).map_or(tracks, |n| n.first_track);
            let len = end.saturating_sub(z.first_track);
            let front_mapped = mapped
                && crate::geometry::front_mapped(
                    z,
                    len,
                    self.surfaces.max(1),
                    self.spare_range_cylinders.max(1),
                );
            note(
                z.front_empty_sectors != 0 && !front_mapped,
                "front_empty_sectors",
            );
            note(z.spare_tracks != 0 && !mapped, "spare_tracks");
            note(!z.slipped_tracks.is_empty() && !mapped, "slipped_tracks");
            note(!z.slipped_sectors.is_empty() && !mapped, "slipped_sectors");
            note(
                z.spare_sectors_per_track != 0 && !mapped,
                "spare_sectors_per_track",
            );
            note(
                z.spare_sectors_per_cylinder != 0 && !mapped,
                "spare_sectors_per_cylinder",
            );
            note(
                z.spare_sectors_per_range != 0 && !mapped,
                "spare_sectors_per_range",
            );
            note(
                z.spare_sectors_per_zone != 0 && !mapped,
                "spare_sectors_per_zone",
            );
            note(z.gap_cylinders != 0 && !mapped, "gap_cylinders");
        }
        keys
    }

    /// Check every physical quantity against its plausible range
    /// ([`REAL_RANGES`], [`INT_RANGES`](crate::geometry::config::INT_RANGES));
    /// the first one outside is a one-line error naming its key. Combinations
    /// (a track count that is not a whole number of layout units ...) are
    /// checked when the geometry is built.
    pub fn check_ranges(&self) -> SimResult<()> {
        check_real("rpm", "rpm", self.rpm)?;
        // Exactly 0 switches the link time off (an ideal host interface, for
        // studies of the medium alone and for tests that count exact times).
        if self.interface_mb_s != 0.0 {
            check_real("interface_mb_s", "interface_mb_s", self.interface_mb_s)?;
        }
        check_real("write_cache_mib", "write_cache_mib", self.write_cache_mib)?;
        if let Some(gib) = self.capacity_gib {
            check_real("capacity_gib", "capacity_gib", gib)?;
        }
        let s = &self.seek;
        check_real("seek.min_ms", "seek.min_ms", s.min_ms)?;
        check_real("seek.max_ms", "seek.max_ms", s.max_ms)?;
        for &(_, ms) in &s.table {
            check_real("seek.table", "a seek.table time", ms)?;
        }
        check_real("head_switch_ms", "head_switch_ms", self.head_switch_ms)?;
        check_real("write_settle_ms", "write_settle_ms", self.write_settle_ms)?;
        check_int("surfaces", self.surfaces)?;
        check_int("spare_range_cylinders", self.spare_range_cylinders)?;
        for z in &self.zones {
            for (key, v) in [
                ("zones.track_skew_sectors", z.track_skew_sectors as u64),
                (
                    "zones.cylinder_skew_sectors",
                    z.cylinder_skew_sectors as u64,
                ),
                (
                    "zones.first_block_offset_sectors",
                    z.first_block_offset_sectors as u64,
                ),
                ("zones.front_empty_sectors", z.front_empty_sectors),
                ("zones.spare_tracks", z.spare_tracks),
                (
                    "zones.spare_sectors_per_track",
                    z.spare_sectors_per_track as u64,
                ),
                (
                    "zones.spare_sectors_per_cylinder",
                    z.spare_sectors_per_cylinder,
                ),
                ("zones.spare_sectors_per_range", z.spare_sectors_per_range),
                ("zones.spare_sectors_per_zone", z.spare_sectors_per_zone),
                ("zones.gap_cylinders", z.gap_cylinders),
            ] {
                check_int(key, v)?;
            }
        }
        let l = &self.layout;
        check_real("layout.top_ratio", "layout.top_ratio", l.top_ratio)?;
        if let Some(mib) = l.cache_mib {
            check_real("layout.cache_mib", "layout.cache_mib", mib)?;
        }
        for (key, v) in [
            ("layout.band_tracks", l.band_tracks),
            ("layout.head_width_tracks", l.head_width_tracks),
            ("layout.random_access_tracks", l.random_access_tracks),
            ("layout.cache_tracks", l.cache_tracks),
            ("layout.group_tracks", l.group_tracks),
            ("layout.zone_tracks", l.zone_tracks),
            ("layout.conventional_zones", l.conventional_zones),
            ("layout.region_tracks", l.region_tracks),
            ("layout.kappa_tracks", l.kappa_tracks),
        ] {
            check_int(key, v)?;
        }
        for (what, side) in [("memory", &self.memory), ("ssd", &self.ssd)] {
            let Some(c) = side else { continue };
            for (k, v) in [
                ("mib", c.mib),
                ("read_latency_us", c.read_latency_us),
                ("write_latency_us", c.write_latency_us),
                ("read_mb_s", c.read_mb_s),
                ("write_mb_s", c.write_mb_s),
            ] {
                check_real(k, &format!("{what}.{k}"), v)?;
            }
        }
        if let Some(c) = &self.controller {
            c.check()?;
        }
        if let Some(c) = &self.read_cache {
            c.check()?;
        }
        Ok(())
    }
}
