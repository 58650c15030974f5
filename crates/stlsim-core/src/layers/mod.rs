//! Translation layers: the trait every layer implements, typed parameters,
//! and the one registry of layers by name.
//!
//! To add a layer: write its module (opening with a doc comment naming the
//! paper section and the choices made where the paper is silent), give it a
//! `pub static ENTRY: LayerEntry`, and add that entry to [`REGISTRY`]. The
//! registry test runs every entry on a real trace with verification on.

pub mod background;
pub mod cmr;
pub mod dmsmr;
pub mod hybrid;
pub mod imr;
pub mod params;
pub mod swd;
pub mod zoned;

use crate::device::{Cause, Device};
use crate::drive::DriveConfig;
use crate::error::{SimError, SimResult};
use crate::geometry::{Geometry, LayoutKind};
use crate::medium::Token;
use crate::side_device::SideKind;
use crate::units::{Lba, Sectors};
pub use background::{Background, QueueView, QueuedRequest, StageOutcome};
pub use params::{ParamKind, ParamSpec, Params};
use std::collections::BTreeMap;

/// A write handed to a layer: host data, either straight from the host
/// (write cache off or bypassed) or destaged from the drive's write cache.
#[derive(Clone, Copy, Debug)]
pub struct WriteReq<'a> {
    /// First LBA written (in sectors of the drive's `sector_bytes`).
    pub lba: Lba,
    /// Sectors written from `lba` on; `data`, when carried, has one token per sector.
    pub sectors: Sectors,
    /// [`Cause::Host`] or [`Cause::Destage`]: the cause the layer tags its primary data writes with.
    pub cause: Cause,
    /// One token per sector when data is carried (verification on), else empty.
    pub data: &'a [Token],
}

/// An empty vector of writes of any lifetime, in `v`'s allocation: a buffer
/// of [`WriteReq`]s kept between calls (the borrow of one call's data must
/// not outlive it) is cleared and handed to the next call this way, without
/// allocating (collecting in place reuses the buffer: the element types
/// differ only in lifetime).
pub(crate) fn recycle_writes<'b>(mut v: Vec<WriteReq<'_>>) -> Vec<WriteReq<'b>> {
    v.clear();
    v.into_iter().map(|_| unreachable!("cleared")).collect()
}

/// Layer-specific figures for the report: counters (flips, RMWs ...),
/// gauges (map bytes ...) and peaks, by name; [`combine`] says which, from
/// the name, and so how the figures of the layer's incarnations combine
/// when crashes rebuild it.
pub type LayerReport = BTreeMap<String, f64>;

/// How a report figure of several incarnations of a layer (one per crash)
/// combines into the run's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// A counter: summed.
    Sum,
    /// A gauge or a setting: the latest incarnation's.
    Latest,
    /// A peak or a maximum: the largest.
    Max,
}

/// How figure `name` combines across crashes: names holding `peak` or
/// ending in `_max_s` are peaks; names ending in `_bytes`, `_tracks` or
/// `_limit`, and a few settings the layers report, are gauges; every other
/// figure is a counter.
pub fn combine(name: &str) -> Combine {
    const SETTINGS: &[&str] = &[
        "alpha_entries",
        "backup_slots",
        "block_sectors",
        "buffer_mib",
        "buffer_parts",
        "clean_buffer_mib",
        "map_entry_bits",
    ];
    if name.contains("peak") || name.ends_with("_max_s") {
        Combine::Max
    } else if name.ends_with("_bytes")
        || name.ends_with("_tracks")
        || name.ends_with("_limit")
        || SETTINGS.contains(&name)
    {
        Combine::Latest
    } else {
        Combine::Sum
    }
}

/// Fold the figures `r` of an incarnation a crash ended into `past` (the
/// earlier incarnations'), as [`combine`] says.
pub fn fold_past(past: &mut LayerReport, r: LayerReport) {
    for (k, v) in r {
        match combine(&k) {
            Combine::Sum => *past.entry(k).or_insert(0.0) += v,
            Combine::Max => {
                let e = past.entry(k).or_insert(v);
                *e = e.max(v);
            }
            Combine::Latest => {}
        }
    }
}

/// The run's figures: the current incarnation's `r` with the earlier ones' `past`.
pub fn with_past(mut r: LayerReport, past: &LayerReport) -> LayerReport {
    for (k, &v) in past {
        let e = r.entry(k.clone()).or_insert(0.0);
        match combine(k) {
            Combine::Sum => *e += v,
            Combine::Max => *e = e.max(v),
            Combine::Latest => {}
        }
    }
    r
}

/// Which of the engine's optional calls a layer uses, so the engine can
/// skip the others on its hot path (asked once per layer object).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// [`Layer::host_write_arrived`] is called for every host write.
    pub arrivals: bool,
    /// [`Layer::background`], [`Layer::stage`] and [`Layer::write_must_wait`] are used.
    pub background: bool,
    /// The layer acknowledges writes before they are durable (a volatile
    /// memory buffer): the verifier treats them as the drive's write cache's
    /// and learns from [`Device::note_durable`] when they reach persistent storage.
    pub volatile_writes: bool,
}

/// A translation layer: turns host requests into physical operations.
pub trait Layer: Send {
    /// Read `sectors` from `lba`, appending one token per sector to `out` when data is carried.
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        sectors: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()>;
    /// Store one write, whole.
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()>;
    /// Store the front of one write, as much as fits now, and return how
    /// many sectors that was. A layer whose buffer can run out of room in
    /// the middle of a write (the host-side buffers of paper 004) returns
    /// short; the engine then runs a stage of the layer's background work,
    /// counted as every stage is (stage counts, host waits, the writes
    /// `waf_excluding_moves` leaves out), and calls again with the rest.
    /// `first`: this is the write's first part. The write is acknowledged
    /// once every part is stored. Default: the whole write ([`Layer::write`]).
    fn write_part(&mut self, dev: &mut Device, w: &WriteReq, first: bool) -> SimResult<Sectors> {
        let _ = first;
        self.write(dev, w)?;
        Ok(w.sectors)
    }
    /// Store several writes that were queued together (a write-cache destage
    /// batch, all within one home track). Layers that can coalesce override this.
    fn write_batch(&mut self, dev: &mut Device, ws: &[WriteReq]) -> SimResult<()> {
        ws.iter().try_for_each(|w| self.write(dev, w))
    }
    /// Sectors the host may address (the drive's capacity less any tracks
    /// the layer reserves for itself).
    fn host_capacity(&self, geom: &Geometry) -> Sectors {
        geom.capacity()
    }
    /// Which optional calls the layer uses (default: none; a layer that has
    /// background work or counts arrivals must say so).
    fn needs(&self) -> Needs {
        Needs::default()
    }
    /// The home-LBA ranges the layer keeps for itself (they hold no host
    /// data; host LBAs skip them in order). A prefilled drive lays host data
    /// out around them. Default: none.
    fn reserved_home(&self) -> Vec<(Lba, Sectors)> {
        vec![]
    }
    /// A host write arrived (before the drive's write cache sees it): where
    /// the papers count writes (`ReceiveIO`). Default: nothing.
    fn host_write_arrived(&mut self, _geom: &Geometry, _lba: Lba, _sectors: Sectors) {}
    /// What the layer's pending background work asks of the engine
    /// (see [`background`]). Default: nothing pending.
    fn background(&self) -> Background {
        Background::None
    }
    /// Run one stage of background work: one or a few physical operations,
    /// with every acknowledged write safe when it returns. `queue` holds the
    /// host requests waiting meanwhile (empty in idle time).
    fn stage(&mut self, _dev: &mut Device, _queue: &QueueView) -> SimResult<StageOutcome> {
        Ok(StageOutcome::Nothing)
    }
    /// Whether these writes must wait until background work in progress
    /// has finished (or been abandoned); the engine then runs stages first.
    fn write_must_wait(&mut self, _geom: &Geometry, _ws: &[WriteReq]) -> bool {
        false
    }
    /// Intervals completed by an interval-driven layer (`None`: the layer
    /// does not work in intervals). Summed over crashes like a counter.
    fn intervals_completed(&self) -> Option<u64> {
        None
    }
    /// Rebuild volatile state from the medium after a power loss. Called on a
    /// freshly built layer, so nothing volatile survives.
    fn recover(&mut self, _dev: &mut Device) -> SimResult<()> {
        Ok(())
    }
    /// Whether the layer sizes itself from the trace's address range (the
    /// engine then reads the trace once ahead and calls
    /// [`set_trace_range`](Self::set_trace_range)). Default: no.
    fn wants_trace_range(&self) -> bool {
        false
    }
    /// The trace's host address range `[lo, hi)`: given before the first
    /// request and again after every rebuild (crash), before `recover`.
    fn set_trace_range(&mut self, _lo: Lba, _hi: Lba) -> SimResult<()> {
        Ok(())
    }
    /// Gauges sampled at every point of the run's series (every
    /// `series_every` requests), e.g. persistent-cache utilisation over
    /// time. Default: none.
    fn series_gauges(&self, _out: &mut Vec<(&'static str, f64)>) {}
    /// Devices beside the disk the layer uses (memory buffer, SSD), each
    /// with the slot size it cuts them into; the engine attaches them from
    /// the drive's `[memory]` and `[ssd]` tables. Default: none.
    fn side_devices(&self) -> Vec<(SideKind, u32)> {
        vec![]
    }
    /// Whether the layer can start from a prefilled drive (its host data
    /// starts at the home the geometry and [`reserved_home`](Self::reserved_home) give). Default: yes.
    fn supports_prefill(&self) -> bool {
        true
    }
    /// How full the layer's persistent buffer is, in `[0, 1]`: the fuller
    /// of its space and its map, as the layer's cleaning policy sees them.
    /// A layer that has one can start from a drive with a history
    /// ([`crate::engine::history`]), which writes until this reaches the
    /// fraction asked for. Default: `None` (no such buffer). A layer that
    /// returns `Some` must implement [`restart_counts`](Self::restart_counts).
    fn fill(&self) -> Option<f64> {
        None
    }
    /// Forget the counts of work done so far: the run starts here (after a
    /// history, at device time `now`). Counters go to zero; peaks restart
    /// from the current level; work in progress counts from `now`.
    fn restart_counts(&mut self, _now: crate::units::Nanos) {}
    /// Layer-specific counters and gauges.
    fn report(&self) -> LayerReport {
        LayerReport::new()
    }
}

/// Which recording layouts a layer runs on.
#[derive(Clone, Copy, Debug)]
pub enum LayoutNeed {
    /// Runs the drive as conventional: the drive's tracks with the CMR layout
    /// (the baseline each paper compares against).
    AsConventional,
    /// Runs the drive as conventional, with drive keys (its memory buffer)
    /// set from its parameters.
    AsConventionalShaped(fn(&Params, &mut DriveConfig) -> SimResult<()>),
    /// Needs this layout kind (`smr`, `imr`, `zoned`).
    Kind(LayoutKind),
    /// Needs this layout kind, and sets layout keys of the drive from its
    /// parameters (a static mapping that *is* the drive's home map, such as
    /// the shingled band mappings of paper 002).
    Shaped(LayoutKind, fn(&Params, &mut DriveConfig) -> SimResult<()>),
}

impl LayoutNeed {
    /// The layout kind needed, if any.
    pub fn kind(&self) -> Option<LayoutKind> {
        match *self {
            LayoutNeed::AsConventional | LayoutNeed::AsConventionalShaped(_) => None,
            LayoutNeed::Kind(k) | LayoutNeed::Shaped(k, _) => Some(k),
        }
    }
}

/// A registered layer: its name, documentation, parameters and constructor.
pub struct LayerEntry {
    /// Name used on the command line and in configs.
    pub name: &'static str,
    /// Whether it runs in the drive or in the host.
    pub runs_in: RunsIn,
    /// One-line description, shown in the layer listing (`stlsim layers`).
    pub summary: &'static str,
    /// The paper section it implements.
    pub paper: &'static str,
    /// The recording layouts it runs on; [`LayerEntry::drive_for`] checks the
    /// user's drive against it and reshapes the drive the layer gets.
    pub layout: LayoutNeed,
    /// The parameters it declares (`[layer.params]`): names, kinds, defaults and
    /// ranges; the values given are checked against them (`Params::resolve`).
    pub params: &'static [ParamSpec],
    /// Build it for a geometry.
    pub build: fn(&Params, &Geometry) -> SimResult<Box<dyn Layer>>,
}

/// Where a translation layer runs. A drive-side layer is the drive's own
/// firmware: the engine's write cache sits above it, and its physical
/// operations are the drive's. A host-side layer's physical operations are
/// commands to a drive that has its own volatile write cache and command
/// queue ([`crate::front_end`]): it must flush, or write with FORCE UNIT
/// ACCESS, whatever it needs durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunsIn {
    /// Firmware in the drive.
    Drive,
    /// Software in the host.
    Host,
}

/// Every layer stlsim knows, in listing order. The only place layers are registered.
pub static REGISTRY: &[&LayerEntry] = &[
    &cmr::ENTRY,
    &imr::rmw::ENTRY,
    &imr::flip::ENTRY,
    &imr::track_cache::ENTRY,
    &imr::dynamic_map::ENTRY,
    &swd::ENTRY_1234,
    &swd::ENTRY_R4123,
    &swd::ENTRY_124R3,
    &swd::ENTRY_14R23,
    &swd::ENTRY,
    &dmsmr::eregion::ENTRY,
    &dmsmr::vguard::ENTRY,
    &zoned::fluid::ENTRY,
    &zoned::fluid::ENTRY_LOOP,
    &zoned::skylight::ENTRY,
    &zoned::amphisbaena::ENTRY,
    &hybrid::hwsr::ENTRY,
    &hybrid::sblock::ENTRY,
    &hybrid::buffered_cmr::ENTRY,
];

/// Look a layer up by name.
pub fn find(name: &str) -> SimResult<&'static LayerEntry> {
    REGISTRY
        .iter()
        .copied()
        .find(|e| e.name == name)
        .ok_or_else(|| {
            let known = REGISTRY.iter().map(|e| e.name);
            // One suggestion for a slip; the whole list only when nothing is close.
            match crate::spelling::closest(name, known.clone()) {
                Some(near) => SimError::Config(format!(
                    "unknown layer '{name}'; did you mean '{near}'? (`stlsim layers` lists all {})",
                    REGISTRY.len()
                )),
                None => SimError::Config(format!(
                    "unknown layer '{name}' (known: {})",
                    known.collect::<Vec<_>>().join(", ")
                )),
            }
        })
}

/// Whether a `zoned` drive has any sequential-write-required zone: one
/// whose zones are all conventional accepts in-place writes anywhere. Zones
/// are counted as the medium's zone table counts them (host capacity over
/// zone size, a partial last zone included).
fn has_sequential_zones(drive: &DriveConfig) -> SimResult<bool> {
    let geom = drive.geometry()?;
    let zones = geom
        .zone_sectors()
        .map_or(0, |zs| geom.capacity().0.div_ceil(zs.max(1)));
    Ok(drive.layout.conventional_zones < zones)
}

impl LayerEntry {
    /// The refusal of a layer that writes in place on a host-managed drive:
    /// a real ZBC/ZAC drive fails such writes (UNALIGNED WRITE COMMAND), so
    /// the run is refused at configuration time, naming the layers that can
    /// run there (every layer of the `zoned` kind, from the registry).
    fn not_zone_aware(&self, drive: &DriveConfig) -> SimError {
        let aware: Vec<&str> = REGISTRY
            .iter()
            .filter(|e| e.layout.kind() == Some(LayoutKind::Zoned))
            .map(|e| e.name)
            .collect();
        SimError::Config(format!(
            "layer '{}' is not zone-aware: drive '{}' is host-managed (zoned layout), whose \
             sequential zones refuse in-place writes (UNALIGNED WRITE COMMAND); run a zoned layer \
             ({}) or a drive-managed or conventional drive",
            self.name,
            drive.name,
            aware.join(", ")
        ))
    }

    /// The drive description this layer runs on, given the user's drive and
    /// the layer's resolved parameters.
    pub fn drive_for(&self, drive: &DriveConfig, params: &Params) -> SimResult<DriveConfig> {
        match self.layout {
            LayoutNeed::AsConventional | LayoutNeed::AsConventionalShaped(_) => {
                if drive.layout.kind == LayoutKind::Zoned && has_sequential_zones(drive)? {
                    return Err(self.not_zone_aware(drive));
                }
                // Same tracks, mechanics and cache; no overlap, guards, zones,
                // band mapping or persistent cache (their keys are dropped).
                // A wave drive keeps its physical tracks (its guard bands become data tracks).
                let mut d = drive.clone();
                if drive.layout.kind == LayoutKind::Wave && d.tracks.is_none() {
                    d.tracks = Some(drive.geometry()?.tracks());
                    d.capacity_gib = None;
                }
                d.layout = crate::geometry::LayoutConfig {
                    kind: LayoutKind::Cmr,
                    ..Default::default()
                };
                if let LayoutNeed::AsConventionalShaped(shape) = self.layout {
                    shape(params, &mut d)?;
                }
                Ok(d)
            }
            LayoutNeed::Kind(k) | LayoutNeed::Shaped(k, _) => {
                if drive.layout.kind != k {
                    return Err(SimError::Config(format!(
                        "layer '{}' needs a drive with the '{k}' layout, but drive '{}' is '{}'",
                        self.name, drive.name, drive.layout.kind
                    )));
                }
                let mut d = drive.clone();
                if let LayoutNeed::Shaped(_, shape) = self.layout {
                    shape(params, &mut d)?;
                }
                Ok(d)
            }
        }
    }
}
