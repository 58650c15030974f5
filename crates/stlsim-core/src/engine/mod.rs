//! The replay engine: issues trace requests by the chosen replay mode, runs
//! the drive's write cache, schedules the layer's background work in stages,
//! verifies data and injects crashes. Every layer is measured by these same
//! rules.
//!
//! The device serves host requests first-come first-served (no command
//! reordering), one physical operation at a time. Background work — destaging
//! the write cache and the layer's stages (see [`crate::layers::background`])
//! — runs when the device would otherwise be idle; a host request that
//! arrives during a stage waits for that stage only, and is served before the
//! next one. Stages the layer says are overdue run before the next request,
//! and a write the layer says must wait for work in progress waits for it.
//!
//! A run is an owned value ([`Simulation`]) stepped in chunks, so a front end
//! can show progress and many runs can share a process. Memory does not grow
//! with trace length (only with its footprint, when verifying, and with the
//! series, one point per `series_every` requests).

mod arrivals;
mod completions;
pub mod config;
mod crash;
pub mod history;
pub mod oracle;
mod read_path;
pub mod report;
mod setup;
mod stages;
pub mod verifier;

use crate::device::Device;
use crate::error::{SimError, SimResult};
use crate::front_end::write_cache::WriteCache;
use crate::layers::{self, Layer, LayerEntry, Params};
use crate::medium::Token;
use crate::metrics::{HostMetrics, WafSeries};
use crate::trace::{open_trace, TraceReader};
use crate::units::{Lba, Nanos, Sectors};
use arrivals::ArrivalState;
pub use config::{LayerConfig, Mode, ReplayConfig, RunConfig};
use crash::CrashState;
use report::Report;
use stages::{StageState, WafState};
use verifier::Verifier;

/// How a run's background work went (stages of the layer's moves, cleaning, GC).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BackgroundCounts {
    /// Stages that ran (aborted ones not counted): the two counts below add
    /// up to it.
    pub stages: u64,
    /// Of those, run while no host request was waiting.
    pub stages_idle: u64,
    /// Of those, run while a host request waited (overdue work, or work a write had to wait for).
    pub stages_foreground: u64,
    /// Times the layer abandoned its work at a stage boundary.
    pub aborted: u64,
    /// Times the engine stopped running stages because a host request had
    /// arrived while the layer still had work pending.
    pub postponed: u64,
    /// Host requests that waited behind at least one stage.
    pub requests_waited: u64,
    /// Total time host requests waited behind stages, seconds.
    pub host_wait_s: f64,
}

/// One completed request as [`Simulation::keep_latencies`] keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptLatency {
    /// Simulated latency, issue to completion.
    pub latency: Nanos,
    /// The response time the trace measured for it, if any.
    pub measured: Option<Nanos>,
    /// Whether it was a write.
    pub write: bool,
}

/// Counts behind the run's warnings.
#[derive(Clone, Debug, Default)]
pub(crate) struct Irregular {
    /// Records whose timestamp went backwards (clamped to the previous one).
    pub(crate) clamped: u64,
    /// Requests whose LBA was folded back into the capacity (`fold`).
    pub(crate) folded: u64,
    /// Requests folded into the prefilled range (`fold_to_prefill`).
    pub(crate) folded_to_prefill: u64,
    /// Non-empty records the trace holds (when a first pass counted them).
    pub(crate) trace_requests: Option<u64>,
    /// Records the reader skipped for an operation neither read nor write.
    pub(crate) unknown_skipped: u64,
    /// Whether any two records' timestamps differ (a fio version-2 iolog has
    /// none: every request at time 0).
    pub(crate) timed: bool,
}

/// Host-side counts of a run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct HostCounts {
    /// Requests completed (acknowledged).
    pub requests: u64,
    /// Of `requests`, the reads.
    pub reads: u64,
    /// Of `requests`, the writes (acknowledged, whether or not yet on the media).
    pub writes: u64,
    /// Sectors read by the host.
    pub read_sectors: u64,
    /// Sectors written by the host.
    pub write_sectors: u64,
    /// Reads served entirely from the write cache.
    pub cache_read_hits: u64,
    /// Reads served entirely from the on-drive read cache (absent without one).
    #[serde(skip_serializing_if = "is_zero")]
    pub read_cache_hits: u64,
    /// Reads whose first sectors the read cache held (the rest read from the media).
    #[serde(skip_serializing_if = "is_zero")]
    pub read_cache_partial_hits: u64,
    /// Sectors the read cache read ahead of host reads.
    #[serde(skip_serializing_if = "is_zero")]
    pub read_ahead_sectors: u64,
    /// Writes absorbed by the write cache.
    pub cached_writes: u64,
    /// Sectors handed to the layer to store (direct writes plus destages).
    pub layer_write_sectors: u64,
    /// Zero-length trace records skipped.
    pub empty_skipped: u64,
    /// Requests in flight at a crash (never acknowledged).
    pub lost_in_crash: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
/// Memory verification takes (see [`Simulation::verification_memory`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyMemory {
    /// Heap bytes of the oracle and of the medium's tracked contents.
    pub state_bytes: u64,
    /// Distinct host LBAs written.
    pub written_sectors: u64,
}

impl VerifyMemory {
    /// Bytes per written sector (0 before any write).
    pub fn per_written_sector(&self) -> f64 {
        if self.written_sectors == 0 {
            0.0
        } else {
            self.state_bytes as f64 / self.written_sectors as f64
        }
    }
}

/// One run: a layer on a drive replaying a trace, with its write cache,
/// verifier and counters; [`Simulation::report`] gives the results.
pub struct Simulation {
    cfg: RunConfig,
    entry: &'static LayerEntry,
    params: Params,
    dev: Device,
    layer: Box<dyn Layer>,
    reader: Box<dyn TraceReader>,
    cache: WriteCache,
    /// Boxed, so that a run without verification keeps the engine's own
    /// fields together.
    verifier: Option<Box<Verifier>>,
    metrics: HostMetrics,
    host: HostCounts,
    outstanding: completions::Completions,
    arrivals: ArrivalState,
    /// Per-request records, when kept ([`Simulation::keep_latencies`]).
    latency_log: Option<Vec<KeptLatency>>,
    front: crate::front_end::drive_front::DriveFront,
    crash: CrashState,
    in_flight: Vec<Token>,
    scratch: Vec<Token>,
    stage: StageState,
    finished: bool,
    /// Host LBAs below this are prefilled (fold target of `fold_to_prefill`).
    prefill_limit: u64,
    /// The drive's starting state as laid out (for the report).
    prefill_tracks: u64,
    waf: WafState,
    irregular: Irregular,
    /// Sectors the host may address (the layer's host capacity).
    host_cap: u64,
    /// Bytes per sector, which turns the trace's byte offsets and lengths into
    /// LBAs and sector counts.
    sector_bytes: u64,
    /// `log2(sector_bytes)` when it is a power of two (real sectors are 512
    /// or 4096 bytes: shifts rather than two 64-bit divisions per request).
    sector_shift: Option<u32>,
    /// A request whose sectors end below this needs no folding: the host
    /// capacity plus one, or 0 when every request is checked for folding
    /// into the prefill (one comparison per request instead of two tests).
    unfolded_end: u64,
    /// The trace's host address range `[lo, hi)`, for layers sized by it.
    trace_range: Option<(u64, u64)>,
    /// What the history before the trace did, if the run had one.
    history: Option<history::HistorySummary>,
}

/// A host request as issued: where, how much, when.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    lba: Lba,
    n: Sectors,
    write: bool,
    issue: Nanos,
    disparity: Nanos,
    /// The trace's measured response time for it, if it has one.
    measured: Option<Nanos>,
}

impl Simulation {
    /// Validate a configuration and set up the run (opens the trace).
    pub fn new(cfg: RunConfig) -> SimResult<Simulation> {
        let mut reader = open_trace(&cfg.trace)?;
        if cfg.replay.parse_thread {
            reader = Box::new(crate::trace::parse_thread::ParseThread::new(reader)?);
        }
        Simulation::with_reader(cfg, reader)
    }

    /// Set up a run reading requests from `reader` (the trace spec's path is only used in messages).
    pub fn with_reader(cfg: RunConfig, reader: Box<dyn TraceReader>) -> SimResult<Simulation> {
        Simulation::with_layer(cfg.clone(), layers::find(&cfg.layer.name)?, reader)
    }

    /// The device (for tests and diagnostics).
    pub fn device(&self) -> &Device {
        &self.dev
    }
    /// Fraction of the trace consumed.
    pub fn progress(&self) -> f64 {
        if self.finished {
            1.0
        } else {
            self.reader.progress()
        }
    }
    /// What verification holds, when it is on: heap bytes of the oracle's
    /// state and of the medium's contents, and the host LBAs written at least
    /// once (the denominator of the bytes-per-written-sector figure).
    pub fn verification_memory(&mut self) -> Option<VerifyMemory> {
        let v = self.verifier.as_mut()?;
        // A failed check is reported by the run; the figure is wanted anyway.
        let _ = v.sync();
        let o = v.oracle_here()?;
        Some(VerifyMemory {
            state_bytes: o.heap_bytes() + self.dev.medium().heap_bytes(),
            written_sectors: o.written_sectors(),
        })
    }
    /// Requests completed so far.
    pub fn requests_done(&self) -> u64 {
        self.host.requests
    }
    /// Whether the run has ended.
    pub fn finished(&self) -> bool {
        self.finished
    }
    /// Host metrics so far.
    pub fn metrics(&self) -> &HostMetrics {
        &self.metrics
    }
    /// Keep every completed request's simulated latency beside the response
    /// time the trace measured for it (validation against a real drive
    /// compares the two request by request). Off by default: the log grows
    /// with the trace (24 bytes a request).
    pub fn keep_latencies(&mut self) {
        self.latency_log.get_or_insert_with(Vec::new);
    }
    /// The kept requests, in completion order; empty unless
    /// [`keep_latencies`](Self::keep_latencies) was called first.
    pub fn latencies(&self) -> &[KeptLatency] {
        self.latency_log.as_deref().unwrap_or(&[])
    }
    /// The sectors the host may address: the drive's capacity less what
    /// the layer keeps for itself (a live client's export size).
    pub fn host_capacity(&self) -> Sectors {
        Sectors(self.host_cap)
    }
    /// The kept requests since the last call, taken out of the log (a
    /// live server reads each request's latency this way without the log
    /// growing with the run).
    pub fn take_latencies(&mut self) -> Vec<KeptLatency> {
        self.latency_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }
    /// Crashes injected so far.
    pub fn crashes(&self) -> u64 {
        self.crash.crashes
    }
    /// Ask for a power loss before the next request.
    pub fn request_crash(&mut self) {
        self.crash.crash_requested = true;
    }

    /// A power loss now, between requests (a live server restarted after
    /// its process died): the write cache and the layer's volatile state
    /// are lost, the layer rebuilds from the medium and, verifying, every
    /// block is checked, as with [`Simulation::request_crash`].
    pub fn power_loss(&mut self) -> SimResult<()> {
        self.crash()
    }

    /// FLUSH CACHE from a live host (`stlsim serve`), arriving at `issue`
    /// after the requests stepped so far: every write the drive's cache
    /// holds goes to the media, through the layer above a drive-managed
    /// layer (the engine's write cache, a destage batch at a time) and in
    /// the queue's order beneath a host-side one. Returns when it ends (at
    /// `issue` with nothing cached). A trace has no flushes, so a replay
    /// never calls this.
    pub fn flush(&mut self, issue: Nanos) -> SimResult<Nanos> {
        self.dev.advance_to(issue);
        while !self.cache.is_empty() {
            self.destage_batch()?;
        }
        let done = self.dev.flush()?;
        self.note_durable();
        Ok(done.max(issue))
    }

    /// Replay up to `max_requests` more trace records. Returns `true` when
    /// the run has finished (trace exhausted, cache flushed, final scan done).
    pub fn step(&mut self, max_requests: u64) -> SimResult<bool> {
        let r = self.step_requests(max_requests);
        // A block the verification thread found lost is reported before
        // anything the engine ran into after it, as if checked inline.
        if let Some(v) = &mut self.verifier {
            if v.threaded() && (r.is_err() || v.failed()) {
                if let Err(m) = v.sync() {
                    return Err(m.into_error(|op| self.dev.describe_op(op)));
                }
            }
        }
        r
    }

    /// Check on a thread of its own once a verified run has written
    /// `writes` times (tests; the default is [`verifier::THREAD_AFTER`]).
    #[doc(hidden)]
    pub fn set_verify_thread_after(&mut self, writes: u64) {
        if let Some(v) = &mut self.verifier {
            v.set_thread_after(writes);
        }
    }

    /// Whether verification checks on its own thread now (tests).
    #[doc(hidden)]
    pub fn verify_threaded(&self) -> bool {
        self.verifier.as_deref().is_some_and(Verifier::threaded)
    }

    /// Run to the end.
    pub fn run(&mut self) -> SimResult<()> {
        while !self.step(1 << 16)? {}
        Ok(())
    }

    fn finish(&mut self) -> SimResult<()> {
        loop {
            let r = (|| {
                while !self.cache.is_empty() {
                    self.destage_batch()?;
                }
                // The drive's own cache, too: the run ends with the media
                // holding everything (its writes counted).
                self.dev.drain()?;
                Ok(())
            })();
            match r {
                Ok(()) => break,
                Err(SimError::Crash) => self.crash()?,
                Err(e) => return Err(e),
            }
        }
        if self.metrics.flush_bucket() {
            self.sample_layer();
        }
        self.push_waf_point();
        if self.verifier.is_some() {
            self.scan(None)?;
        }
        self.finished = true;
        Ok(())
    }

    /// The report of the run so far (complete once finished).
    pub fn report(&self) -> Report {
        let mut bg = self.stage.bg.clone();
        bg.host_wait_s = self.stage.bg_wait.as_secs();
        let intervals = self
            .layer
            .intervals_completed()
            .map(|n| n + self.crash.past_intervals);
        report::build(report::Inputs {
            cfg: &self.cfg,
            entry: self.entry,
            params: &self.params,
            dev: &self.dev,
            layer: self.layer.as_ref(),
            past_counters: &self.crash.past_counters,
            crashes_during: &self.crash.crashes_during,
            crashes_in_stages: self.crash.crashes_in_stages,
            host: &self.host,
            metrics: &self.metrics,
            verifier: self.verifier.as_deref(),
            crashes: self.crash.crashes,
            cache_sectors: self.cache.capacity(),
            finished: self.finished,
            background: bg,
            waf: &self.waf.series,
            intervals,
            irregular: &self.irregular,
            prefill_tracks: self.prefill_tracks,
            prefill_limit: self.prefill_limit,
            history: self.history.as_ref(),
        })
    }

    /// The WAF series so far (cumulative sector counts every `waf_every` host writes).
    pub fn waf_series(&self) -> &WafSeries {
        &self.waf.series
    }
}

#[cfg(test)]
mod controller_tests;
#[cfg(test)]
mod extremes_tests;
#[cfg(test)]
mod front_end_tests;
#[cfg(test)]
mod prefill_tests;
#[cfg(test)]
mod stage_tests;
#[cfg(test)]
mod tests;
