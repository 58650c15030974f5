//! A drive with a history: the start state a drive reaches after a long
//! past, which a run from an empty drive never shows. Paper 003's baseline
//! enters cleaning "for all of the longer write-intensive traces" because
//! its persistent cache and map fill up; a short trace, or a trace replayed
//! over and over (it rewrites the same blocks, which a media cache trims),
//! never fills them from empty.
//!
//! Before the trace, the engine writes 4 KiB blocks at uniformly random
//! 4 KiB-aligned host LBAs through the normal request path (write cache,
//! layer, background work, verification), one after another with no idle
//! time between them, until the layer's [`Layer::fill`] reaches the
//! fraction asked for. Then it drains the write caches, checks every block
//! the history wrote (when verifying), and starts the measurements: the
//! device's counters, operation numbers and clock
//! ([`Device::start_measuring`]), the layer's counters
//! ([`Layer::restart_counts`]), and the host's counts, latencies and
//! series all begin with the trace's first request. The history takes
//! simulated time, but the run's clock starts at its end: crash points
//! (`crash_after`, `crash_at_ops`) count from there too, so the history
//! itself is never interrupted.
//!
//! Choices (the papers describe no history):
//! * **Uniform random 4 KiB writes** over the whole host space: no
//!   locality, so the buffer fills with blocks the trace does not touch
//!   (the trace cannot trim them), and a media cache's map takes one entry
//!   per write, the way a long history of small random writes leaves it.
//! * **No idle time**: a layer that cleans when idle would otherwise empty
//!   what the history fills; the state is that of a drive written without
//!   pause up to the trace's first request.
//! * **Seeded** (`history_seed`, xorshift64): the same seed gives the same
//!   history, so two layers compared from a history saw the same host
//!   writes, each up to its own fill.
//! * **Unreachable fills are an error**: if the fill has not risen for a
//!   stretch of writes (the layer cleans below the fraction asked for),
//!   the run stops and names the fill reached.
//!
//! [`Layer::fill`]: crate::layers::Layer::fill
//! [`Layer::restart_counts`]: crate::layers::Layer::restart_counts
//! [`Device::start_measuring`]: crate::device::Device::start_measuring

use super::{Arrival, BackgroundCounts, HostCounts, Simulation};
use crate::error::{SimError, SimResult};
use crate::metrics::HostMetrics;
use crate::units::{Lba, Nanos, Sectors};
use serde::Serialize;

/// Bytes of one history write.
pub const WRITE_BYTES: u64 = 4096;

/// Writes without a rise in the layer's fill after which the history stops
/// with an error (more when the drive's write cache holds more writes).
const STALL_WRITES: u64 = 100_000;

/// What the history did (the report's `history`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistorySummary {
    /// The fill asked for.
    pub fill: f64,
    /// The layer's fill when the trace started.
    pub fill_reached: f64,
    /// Host writes the history issued.
    pub writes: u64,
    /// Sectors those writes covered (each write 4 KiB, rounded up to whole sectors).
    pub write_sectors: u64,
    /// The `history_seed` its random LBAs came from: the same seed, the same writes.
    pub seed: u64,
    /// Simulated seconds it took (before the run's clock started).
    pub simulated_s: f64,
}

impl Simulation {
    /// Bring the drive to its start state by a history filling the layer's
    /// persistent buffer to `fill`, then start the run's measurements.
    pub(super) fn run_history(&mut self, fill: f64, seed: u64) -> SimResult<HistorySummary> {
        let name = self.entry.name;
        if !(fill > 0.0 && fill < 1.0) {
            return Err(SimError::Config(format!(
                "history {fill} must be a fraction above 0 and below 1 (how full layer '{name}''s persistent buffer is when the trace starts)"
            )));
        }
        let Some(mut now) = self.layer.fill() else {
            return Err(SimError::Config(format!(
                "layer '{name}' keeps no persistent cache or log for a history to fill; history applies to layers that do (smr-eregion, smr-vguard)"
            )));
        };
        let block = WRITE_BYTES.div_ceil(self.sector_bytes).max(1);
        let blocks = self.host_cap / block;
        if blocks == 0 {
            return Err(SimError::Config(format!(
                "the drive's host capacity ({} sectors) holds no {WRITE_BYTES}-byte history write",
                self.host_cap
            )));
        }
        let stall = STALL_WRITES.max(2 * self.cache.capacity() / block);
        let mut rng = crate::xorshift::Rng::seeded(seed);
        let (mut writes, mut best, mut since) = (0u64, now, 0u64);
        while now < fill {
            let lba = rng.below(blocks) * block;
            let issue = self.dev.now().max(self.arrivals.prev_issue);
            self.arrivals.prev_issue = issue;
            self.serve(Arrival {
                lba: Lba(lba),
                n: Sectors(block),
                write: true,
                issue,
                disparity: Nanos::ZERO,
                measured: None,
            })?;
            writes += 1;
            now = self.layer.fill().unwrap_or(1.0);
            if now > best {
                (best, since) = (now, 0);
            } else {
                since += 1;
                if since >= stall {
                    return Err(SimError::Config(format!(
                        "history {fill}: layer '{name}' stayed at most {best:.4} full over {since} writes (it cleans below {fill}); ask for a lower fill"
                    )));
                }
            }
        }
        // Everything the history wrote is on the media before the trace.
        while !self.cache.is_empty() {
            self.destage_batch()?;
        }
        self.dev.drain()?;
        self.note_durable();
        if self.verifier.is_some() {
            self.scan(Some("the scan after the history".into()))?;
        }
        let took = self.dev.now();
        self.start_measuring();
        Ok(HistorySummary {
            fill,
            fill_reached: self.layer.fill().unwrap_or(now),
            writes,
            write_sectors: writes * block,
            seed,
            simulated_s: took.as_secs(),
        })
    }

    /// Start the run's measurements here: every count, series and clock of
    /// the run begins with the trace's first request.
    fn start_measuring(&mut self) {
        self.dev.start_measuring();
        let t0 = self.dev.time_base();
        self.layer.restart_counts(t0);
        self.metrics = HostMetrics::starting_at(self.cfg.replay.series_every, t0);
        self.host = HostCounts::default();
        self.stage.bg = BackgroundCounts::default();
        self.stage.bg_wait = Nanos::ZERO;
        self.stage.stage_spans.clear();
        self.outstanding.clear();
        self.arrivals.prev_issue = t0;
        self.waf.arrived = 0;
        self.waf.countdown = self.cfg.replay.waf_every;
    }
}
