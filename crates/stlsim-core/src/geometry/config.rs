//! The geometry's own description: the zone table and the recording
//! layout, as the drive TOML writes them (deserialised with unknown keys
//! rejected). The whole drive description, which holds these beside the
//! other parts' settings, is [`crate::drive::DriveConfig`].

use crate::choice::{serde_by_name, Choice};
use crate::error::{config_err, SimResult};
use serde::{Deserialize, Serialize};

/// The most physical tracks a drive may have. The home map is computed
/// from the zone table and the layout (its memory does not grow with the
/// track count); the bound keeps track numbers within `u32` arrays of the
/// layers and derivations from a capacity within about a second.
pub const MAX_TRACKS: u64 = 200_000_000;

/// The most sectors on one track (a 4 GiB track of 4 KiB sectors).
pub const MAX_SECTORS_PER_TRACK: u32 = 1 << 20;

/// The plausible range of each integer layout key: `(key, lowest, highest)`,
/// inclusive (the track count and track sizes have their own limits,
/// [`MAX_TRACKS`] and [`MAX_SECTORS_PER_TRACK`]). Layout units are repeated patterns of a few to a few thousand
/// tracks on real drives; the bounds keep every product and sum of them far
/// from overflow.
pub const INT_RANGES: &[(&str, u64, u64)] = &[
    ("layout.band_tracks", 1, 100_000),
    ("layout.head_width_tracks", 1, 1_000),
    ("layout.random_access_tracks", 0, MAX_TRACKS),
    ("layout.cache_tracks", 0, MAX_TRACKS),
    ("layout.group_tracks", 1, 100_000),
    ("layout.zone_tracks", 1, 1_000_000),
    ("layout.conventional_zones", 0, MAX_TRACKS),
    ("layout.region_tracks", 1, 100_000),
    ("layout.kappa_tracks", 1, 1_000),
    // DiskSim's drives have 1 to 18 data surfaces; a cylinder of 4,096
    // tracks is far past any real drive.
    ("surfaces", 1, 4_096),
    // Skews, offsets and spares are counted in sectors of a track of at
    // most MAX_SECTORS_PER_TRACK sectors (or tracks of a zone).
    ("zones.track_skew_sectors", 0, MAX_SECTORS_PER_TRACK as u64),
    (
        "zones.cylinder_skew_sectors",
        0,
        MAX_SECTORS_PER_TRACK as u64,
    ),
    (
        "zones.first_block_offset_sectors",
        0,
        MAX_SECTORS_PER_TRACK as u64,
    ),
    ("zones.front_empty_sectors", 0, 1 << 40),
    ("zones.spare_tracks", 0, MAX_TRACKS),
    (
        "zones.spare_sectors_per_track",
        0,
        MAX_SECTORS_PER_TRACK as u64,
    ),
    ("zones.spare_sectors_per_cylinder", 0, 1 << 40),
    ("zones.spare_sectors_per_range", 0, 1 << 40),
    ("zones.spare_sectors_per_zone", 0, 1 << 40),
    ("zones.gap_cylinders", 0, MAX_TRACKS),
    ("spare_range_cylinders", 1, 1_000_000),
];

/// The `(lowest, highest)` of an [`INT_RANGES`] key (`layout.region_tracks` ...),
/// for layer parameters that set that key.
pub fn int_range(key: &str) -> (u64, u64) {
    let r = INT_RANGES
        .iter()
        .find(|r| r.0 == key)
        .expect("a listed key");
    (r.1, r.2)
}

/// `key = v` within its [`INT_RANGES`] entry, else a one-line error naming it.
pub(crate) fn check_int(key: &str, v: u64) -> SimResult<()> {
    let (lo, hi) = int_range(key);
    if !(lo..=hi).contains(&v) {
        return config_err(format!("{key} = {v} is outside the range {lo} to {hi}"));
    }
    Ok(())
}

/// One zone of a zoned-bit-recording drive: tracks from `first_track` on
/// (until the next zone) hold `sectors_per_track` sectors. For IMR this is the
/// bottom-track size; top tracks hold `top_ratio` of it.
///
/// The other fields carry DiskSim's `dm_layout_g1_zone` (all 0 by default,
/// which is the drive model before they existed): the skews shape the
/// `angular` rotation model, the spares and the empty front where LBAs go.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    /// First physical track of the zone (its first cylinder x `surfaces`).
    pub first_track: u64,
    /// Sectors on each track of the zone.
    pub sectors_per_track: u32,
    /// Sectors the start of each track is rotated past the start of the
    /// previous track of the same cylinder (DiskSim "Skew for track switch").
    #[serde(default)]
    pub track_skew_sectors: u32,
    /// Sectors the start of a cylinder's first track is rotated past the
    /// start of the previous cylinder's last track (DiskSim "Skew for
    /// cylinder switch").
    #[serde(default)]
    pub cylinder_skew_sectors: u32,
    /// Angle, in sectors, of the zone's first track's sector 0 (DiskSim
    /// "Offset of first block").
    #[serde(default)]
    pub first_block_offset_sectors: u32,
    /// Sectors at the front of the zone that hold no LBA (DiskSim "Empty
    /// space at zone front", its management area).
    #[serde(default)]
    pub front_empty_sectors: u64,
    /// Whole spare tracks at the end of the zone, holding no LBA (DiskSim
    /// sparing scheme 1, "Number of spares").
    #[serde(default)]
    pub spare_tracks: u64,
    /// Tracks of the zone skipped for a defect (DiskSim's `slips` under
    /// sparing scheme 1): offsets from the zone's first track, ascending,
    /// counting the empty front's tracks. Each holds no LBA; the tracks
    /// after it move one track on, into the spare tracks, so there are at
    /// most `spare_tracks` of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slipped_tracks: Vec<u64>,
    /// Sectors of the zone skipped for a defect (DiskSim's `slips` under
    /// sparing schemes 8 and 9): positions counted from the zone's first
    /// sector, cylinder by cylinder, ascending. Each holds no LBA; the LBAs
    /// after it in its range (scheme 8) or zone (9) move one sector on,
    /// into the spare sectors at its end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slipped_sectors: Vec<u64>,
    /// Spare sectors at the end of each track (DiskSim sparing scheme 3).
    #[serde(default)]
    pub spare_sectors_per_track: u32,
    /// Spare sectors at the end of each cylinder (DiskSim sparing scheme 2).
    #[serde(default)]
    pub spare_sectors_per_cylinder: u64,
    /// Spare sectors at the end of each range of `spare_range_cylinders`
    /// cylinders (DiskSim sparing scheme 8).
    #[serde(default)]
    pub spare_sectors_per_range: u64,
    /// Spare sectors at the end of the zone (DiskSim sparing scheme 9).
    #[serde(default)]
    pub spare_sectors_per_zone: u64,
    /// Cylinders after the zone's last that belong to no zone: they hold
    /// no LBA and are no part of the zone's sparing (DiskSim's zone table
    /// may skip a cylinder between zones). They end the zone's track range,
    /// so the next zone's `first_track` stays at DiskSim's cylinder and the
    /// arm crosses them; they take the zone's format, which only the
    /// mechanics see.
    #[serde(default)]
    pub gap_cylinders: u64,
}

/// A recording layout's kind: the `kind` key of a drive's `[layout]` table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LayoutKind {
    /// Conventional recording: no track damages another.
    #[default]
    Cmr,
    /// Shingled bands with guard tracks (papers 002 and 003).
    Smr,
    /// Interlaced bottom and top tracks (paper 000).
    Imr,
    /// Host-managed zones, conventional then sequential (paper 004).
    Zoned,
    /// The wave-like shingled regions of paper 001.
    Wave,
}

impl Choice for LayoutKind {
    const KEY: &'static str = "layout.kind";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("cmr", LayoutKind::Cmr),
        ("smr", LayoutKind::Smr),
        ("imr", LayoutKind::Imr),
        ("zoned", LayoutKind::Zoned),
        ("wave", LayoutKind::Wave),
    ];
}
serde_by_name!(LayoutKind);

impl std::fmt::Display for LayoutKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl LayoutKind {
    /// The `[layout]` keys this kind takes beside `kind`: a key of another
    /// kind in a drive's table is an error, not silently unused.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            LayoutKind::Cmr => &[],
            LayoutKind::Smr => &[
                "band_tracks",
                "head_width_tracks",
                "direction",
                "mapping",
                "random_access_tracks",
                "cache_tracks",
                "cache_mib",
            ],
            LayoutKind::Imr => &["top_ratio", "group_tracks", "order"],
            LayoutKind::Zoned => &[
                "zone_tracks",
                "conventional_zones",
                "max_open_zones",
                "unrestricted_reads",
            ],
            LayoutKind::Wave => &["region_tracks", "kappa_tracks"],
        }
    }
}

/// Read a drive's `[layout]` table: its `kind` (absent: `cmr`), then only
/// that kind's keys (see [`LayoutKind::keys`]); a key of another kind, or of
/// none, is a one-line error naming it.
pub(crate) fn deserialize_layout<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<LayoutConfig, D::Error> {
    use serde::de::Error;
    let table = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
    let kind = match table.get("kind") {
        None => LayoutKind::Cmr,
        Some(serde_json::Value::String(k)) => LayoutKind::parse(k).map_err(D::Error::custom)?,
        Some(v) => {
            return Err(D::Error::custom(format!(
                "layout.kind must be a name, not {v}"
            )))
        }
    };
    for key in table.keys().filter(|k| *k != "kind") {
        if kind.keys().contains(&key.as_str()) {
            continue;
        }
        let takes = match kind.keys() {
            [] => "no other key".to_string(),
            keys => keys.join(", "),
        };
        let owner = LayoutKind::NAMES
            .iter()
            .find(|(_, k)| k.keys().contains(&key.as_str()));
        return Err(D::Error::custom(match owner {
            Some((name, _)) => format!(
                "layout key '{key}' belongs to '{name}' layouts; kind '{kind}' takes {takes}"
            ),
            None => {
                let all = LayoutKind::NAMES
                    .iter()
                    .flat_map(|(_, k)| k.keys().iter().copied());
                format!(
                    "unknown layout key '{key}' (kind '{kind}' takes {takes}){}",
                    crate::spelling::did_you_mean(key, all)
                )
            }
        }));
    }
    LayoutConfig::deserialize(serde_json::Value::Object(table.clone())).map_err(|e| {
        // Name the key whose value was refused: the one that fails alone.
        let bad = table.iter().find(|(k, v)| {
            let one = serde_json::Map::from_iter([((*k).clone(), (*v).clone())]);
            LayoutConfig::deserialize(serde_json::Value::Object(one)).is_err()
        });
        match bad {
            Some((k, _)) => D::Error::custom(format!("layout.{k}: {e}")),
            None => D::Error::custom(e),
        }
    })
}

/// Write a `[layout]` table with its kind's keys only (and no empty ones),
/// so that it reads back.
pub(crate) fn serialize_layout<S: serde::Serializer>(
    l: &LayoutConfig,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::Error;
    let mut v = serde_json::to_value(l).map_err(S::Error::custom)?;
    if let serde_json::Value::Object(m) = &mut v {
        m.retain(|k, v| k == "kind" || (l.kind.keys().contains(&k.as_str()) && !v.is_null()));
    }
    v.serialize(s)
}

/// Recording layout and its parameters.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LayoutConfig {
    /// The kind of layout; the keys below each belong to one kind.
    pub kind: LayoutKind,
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
            kind: LayoutKind::Cmr,
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
