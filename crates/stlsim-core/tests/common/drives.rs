//! The drives the engine benchmarks, the steady-state allocation test and
//! the callgrind example run, built in code (the core reads no TOML): one
//! definition each, so that the test measures the drives the benchmarks time.
//! Included by path (`#[path = ...] mod drives;`); not every includer uses
//! every drive.
#![allow(dead_code)]

use stlsim_core::drive::DriveConfig;
use stlsim_core::geometry::ZoneSpec;
use stlsim_core::side_device::SideConfig;

/// The IMR paper's drive (`imr-paper`): 1 TiB of 2 MiB tracks, 100 MiB write cache.
pub fn imr_paper() -> DriveConfig {
    let mut d = DriveConfig {
        name: "imr-paper".into(),
        sector_bytes: 4096,
        rpm: 6000.0,
        track_bytes: 2 << 20,
        capacity_gib: Some(1024.0),
        write_cache_mib: 100.0,
        ..Default::default()
    };
    d.layout.kind = stlsim_core::geometry::LayoutKind::Imr;
    d.layout.group_tracks = 8;
    d
}

/// Paper 002's drive (`swd-paper`): 3,010 tracks of 1,000 blocks, bands of 4.
pub fn swd_paper() -> DriveConfig {
    let mut d = DriveConfig {
        name: "swd-paper".into(),
        sector_bytes: 512,
        rpm: 5400.0,
        track_bytes: 512_000,
        tracks: Some(3010),
        capacity_gib: None,
        interface_mb_s: 3.5189,
        rotation: stlsim_core::mechanics::Rotation::Angular,
        ..Default::default()
    };
    d.seek.min_ms = 1.18;
    d.seek.max_ms = 18.1;
    d.layout.kind = stlsim_core::geometry::LayoutKind::Smr;
    d.layout.band_tracks = 4;
    d.layout.head_width_tracks = 2;
    d.layout.random_access_tracks = 10;
    d
}

/// A drive like `dmsmr-5tb` (paper 003): 24 GB shingled persistent cache, 20-track bands.
pub fn dmsmr() -> DriveConfig {
    let zone = |first_track, sectors_per_track| ZoneSpec {
        first_track,
        sectors_per_track,
        ..Default::default()
    };
    let mut d = DriveConfig {
        name: "dmsmr-like".into(),
        sector_bytes: 4096,
        rpm: 5900.0,
        zones: vec![
            zone(0, 460),
            zone(12_739, 444),
            zone(1_500_000, 332),
            zone(3_000_000, 220),
        ],
        capacity_gib: Some(4656.613),
        write_cache_mib: 0.0,
        ..Default::default()
    };
    d.seek.min_ms = 1.0;
    d.seek.max_ms = 25.0;
    d.layout.kind = stlsim_core::geometry::LayoutKind::Smr;
    d.layout.band_tracks = 20;
    d.layout.head_width_tracks = 2;
    d.layout.cache_mib = Some(22_888.0);
    d
}

/// An Exos X18z-like host-managed zoned drive (paper 004).
pub fn exos_x18z() -> DriveConfig {
    let mut d = DriveConfig {
        name: "exos-x18z".into(),
        sector_bytes: 4096,
        rpm: 7200.0,
        track_bytes: 2 << 20,
        capacity_gib: Some(16764.0),
        write_cache_mib: 0.0,
        ..Default::default()
    };
    d.seek.min_ms = 1.0;
    d.seek.max_ms = 18.0;
    d.layout.kind = stlsim_core::geometry::LayoutKind::Zoned;
    d.layout.zone_tracks = 128;
    d.layout.conventional_zones = 720;
    d
}

/// Paper 001's drive (`hwsr-paper`): wave layout, battery-backed memory buffer, SSD.
pub fn hwsr_paper() -> DriveConfig {
    let mut d = DriveConfig {
        name: "hwsr-paper".into(),
        sector_bytes: 512,
        rpm: 7200.0,
        track_bytes: 4 << 20,
        capacity_gib: Some(764.6),
        write_cache_mib: 0.0,
        interface_mb_s: 300.0,
        memory: Some(SideConfig {
            battery_backed: true,
            ..SideConfig::ddr3_1333(95.367)
        }),
        ssd: Some(SideConfig::intel_x25m(190.735)),
        ..Default::default()
    };
    d.seek.min_ms = 0.6;
    d.seek.max_ms = 14.0;
    d.layout.kind = stlsim_core::geometry::LayoutKind::Wave;
    d
}

/// The drive a registered layer runs on in its paper (the drive-side
/// baseline cmr on the IMR paper's): the per-layer tests' choice, as
/// `benches/layer_costs.py` makes it.
pub fn for_layer(layer: &str) -> DriveConfig {
    if layer == "cmr" || layer.starts_with("imr-") {
        imr_paper()
    } else if layer == "swd" || layer.starts_with("swd-") {
        swd_paper()
    } else if layer.starts_with("smr-") {
        dmsmr()
    } else if layer.starts_with("hm-") || layer == "amphisbaena" {
        exos_x18z()
    } else {
        // buffered-cmr, sblock, hwsr.
        hwsr_paper()
    }
}
