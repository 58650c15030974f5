//! A run's whole configuration, as the Python front hands it over (JSON).
//! Unknown keys are rejected everywhere; [`RunConfig::validate`] checks
//! the settings' values and combinations before anything is built.

use crate::drive::DriveConfig;
use crate::error::{SimError, SimResult};
use crate::medium::prefill::PrefillSpec;
use crate::trace::TraceSpec;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Which layer to run, with its parameters.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LayerConfig {
    /// Layer name as registered in [`crate::layers::REGISTRY`] (`[layer] name`);
    /// [`crate::layers::find`] looks it up, an unknown name is a configuration error.
    pub name: String,
    /// Parameter values by name (checked against the layer's declarations).
    pub params: BTreeMap<String, Value>,
}

/// How requests are issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Host queue of depth Q; trace inter-arrival times kept until it is full,
    /// then a request is issued when a slot frees (IMR paper section 3).
    Queue,
    /// Queue depth 1, timestamps ignored: each request when the previous completes (Vguard).
    FlatOut,
    /// Open loop: inter-arrival times multiplied by `scale` (He & Du).
    Scaled,
    /// Closed loop, queue depth 1, as DiskSim replays a `validate` trace:
    /// each request is issued its *think time* after the previous one
    /// completes in the simulation. The think time is the trace's gap
    /// between the two requests less the previous request's measured
    /// response time (the whole gap when the trace measured none), so on a
    /// DiskSim `validate` trace it is the record's NEXT_US field.
    Closed,
}

impl Mode {
    /// The mode's name as users write it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Queue => "queue",
            Mode::FlatOut => "flat-out",
            Mode::Scaled => "scaled",
            Mode::Closed => "closed",
        }
    }
}

/// Replay settings (`[replay]`): how the trace's requests are issued, the
/// drive's starting state (prefill, history) and the reporting intervals.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplayConfig {
    /// How requests are issued: `queue` (default), `flat-out`, `scaled` or `closed` (see [`Mode`]).
    pub mode: Mode,
    /// Host queue depth for `queue` mode.
    pub queue_depth: u64,
    /// Inter-arrival multiplier for `scaled` mode.
    pub scale: f64,
    /// Override the drive's write cache: `Some(false)` disables it.
    pub write_cache: Option<bool>,
    /// Fold LBAs beyond the capacity back into it (modulo) instead of failing.
    pub fold: bool,
    /// Requests per time-series point.
    pub series_every: u64,
    /// The drive's starting state; `None`: the drive's own default (`prefill` in its description).
    pub prefill: Option<PrefillSpec>,
    /// Fold trace LBAs into the prefilled range: LBA mod (F x capacity), as He & Du do for usage levels.
    pub fold_to_prefill: bool,
    /// Host writes per point of the WAF series.
    pub waf_every: u64,
    /// Start from a drive with a history: before the trace, seeded uniform
    /// random 4 KiB writes until the layer's persistent buffer is this full
    /// ([`crate::engine::history`]). `None`: the drive as `prefill` leaves it.
    pub history: Option<f64>,
    /// Seed of the history's xorshift64 generator of random LBAs (default 1): the
    /// same seed gives the same history writes. Unused when `history` is `None`.
    pub history_seed: u64,
    /// Parse the trace on a second thread while the engine simulates
    /// ([`crate::trace::parse_thread`]): the same results, faster on a
    /// machine with a core to spare.
    pub parse_thread: bool,
    /// With verification on, let the oracle check on a thread of its own
    /// once the run is long enough ([`crate::engine::verifier`]): the same
    /// results, faster on a machine with a core to spare.
    pub verify_thread: bool,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            mode: Mode::Queue,
            queue_depth: 64,
            scale: 1.0,
            write_cache: None,
            fold: false,
            series_every: 1000,
            prefill: None,
            fold_to_prefill: false,
            waf_every: 10_000,
            history: None,
            history_seed: 1,
            parse_thread: true,
            verify_thread: true,
        }
    }
}

/// Everything a run needs.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// The trace to replay (`[trace]`): its file and format, or a synthetic trace,
    /// and which of its requests to take.
    pub trace: TraceSpec,
    /// The drive (`[drive]`: a preset with the user's overrides, merged by the
    /// Python front); the layer may reshape it ([`crate::layers::LayerEntry::drive_for`]).
    pub drive: DriveConfig,
    /// The translation layer to run and its parameter values (`[layer]`).
    pub layer: LayerConfig,
    /// How the trace is replayed (`[replay]`): issue mode, starting state and
    /// reporting intervals.
    pub replay: ReplayConfig,
    /// Carry data tokens and check every read and, at the end, the whole footprint.
    pub verify: bool,
    /// Inject a power loss after this many completed host requests (each entry one crash).
    pub crash_after: Vec<u64>,
    /// Inject a power loss just before these physical operation serials.
    pub crash_at_ops: Vec<u64>,
}

impl RunConfig {
    /// Check the replay, crash and cache settings, alone and together with
    /// `drive` (the drive the layer runs on, after it shaped it: see
    /// [`crate::layers::LayerEntry::drive_for`]); the first problem is a
    /// one-line [`SimError::Config`]. Returns the starting fill the run
    /// takes (the run's, else the drive's, else empty). What needs the
    /// built geometry or layer (a prefill the layer cannot take, side
    /// devices the drive lacks, crash points past the trace's end) is
    /// checked as the run is set up.
    pub fn validate(&self, drive: &DriveConfig) -> SimResult<PrefillSpec> {
        let r = &self.replay;
        let prefill = r
            .prefill
            .or(drive.prefill)
            .unwrap_or(PrefillSpec::Fraction(0.0));
        prefill.validate().map_err(SimError::Config)?;
        if r.waf_every == 0 {
            return Err(SimError::Config("waf_every must be at least 1".into()));
        }
        if r.series_every == 0 {
            return Err(SimError::Config(
                "series_every must be at least 1 (requests per point of the time series)".into(),
            ));
        }
        if self.crash_after.contains(&0) {
            return Err(SimError::Config(
                "crash_after 0 names no request: a power loss is injected after the N-th completed request, N >= 1".into(),
            ));
        }
        if let Some(d) = first_repeat(&self.crash_after) {
            return Err(SimError::Config(format!(
                "crash_after {d} is given twice (one power loss per request count)"
            )));
        }
        if let Some(d) = first_repeat(&self.crash_at_ops) {
            return Err(SimError::Config(format!(
                "crash_at_ops {d} is given twice (one power loss per physical operation)"
            )));
        }
        if r.fold_to_prefill && !matches!(prefill, PrefillSpec::Fraction(f) if f > 0.0) {
            return Err(SimError::Config(
                "fold_to_prefill folds LBAs into the prefilled range, so it needs a prefill fraction above 0 (e.g. prefill = 0.5)"
                    .into(),
            ));
        }
        if r.mode == Mode::Queue && r.queue_depth == 0 {
            return Err(SimError::Config("queue_depth must be at least 1".into()));
        }
        if r.mode == Mode::Scaled && !(r.scale > 0.0 && r.scale.is_finite()) {
            return Err(SimError::Config(format!(
                "scale {} must be a positive number",
                r.scale
            )));
        }
        if !(drive.interface_mb_s >= 0.0) {
            return Err(SimError::Config(format!(
                "interface_mb_s {} must be positive, or 0 for no link time",
                drive.interface_mb_s
            )));
        }
        if !(drive.write_cache_mib >= 0.0) {
            return Err(SimError::Config(format!(
                "write_cache_mib {} must be >= 0",
                drive.write_cache_mib
            )));
        }
        if r.write_cache == Some(true) && drive.write_cache_mib == 0.0 {
            return Err(SimError::Config(format!(
                "the write cache was asked for, but drive '{}' has write_cache_mib = 0",
                drive.name
            )));
        }
        Ok(prefill)
    }
}

/// The first value `xs` holds a second time, if any.
fn first_repeat(xs: &[u64]) -> Option<u64> {
    let mut seen = std::collections::HashSet::new();
    xs.iter().copied().find(|&k| !seen.insert(k))
}
