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

mod completions;
pub mod config;
pub mod history;
pub mod oracle;
pub mod report;
pub mod verifier;
pub mod write_cache;

use crate::controller::{
    AheadCtx, Lookup, Overheads, Prefetch, ReadAheadExtent, ReadCache, Scheduler, TrackSpan,
};
use crate::device::{Cause, Device, ReadPiece};
use crate::error::{SimError, SimResult};
use crate::front_end::FrontEnd;
use crate::layers::{
    self, Background, Layer, LayerEntry, Needs, Params, QueueView, QueuedRequest, RunsIn,
    StageOutcome, WriteReq,
};
use crate::mechanics::HeadState;
use crate::medium::prefill::{HomeMap, Prefill, PrefillSpec};
use crate::medium::Token;
use crate::metrics::{HostMetrics, WafSeries};
use crate::side_device::SideKind;
use crate::trace::{open_trace, Op, TraceReader, TraceRecord};
use crate::track_bits::TrackBits;
use crate::units::{Lba, Nanos, Sectors};
pub use config::{LayerConfig, Mode, ReplayConfig, RunConfig};
use oracle::Oracle;
use report::Report;
use std::collections::VecDeque;
use std::sync::Arc;
use verifier::Verifier;
use write_cache::WriteCache;

/// How a run's background work went (stages of the layer's moves, cleaning, GC).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BackgroundCounts {
    /// Stages run.
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
    /// Reads completed.
    pub reads: u64,
    /// Writes completed.
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

/// One simulation run.
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
    base_trace: Option<u64>,
    prev_trace: u64,
    prev_issue: Nanos,
    /// The measured response time of the previous issued record (`closed` mode's think time).
    prev_measured: Option<Nanos>,
    /// Per-request records, when kept ([`Simulation::keep_latencies`]).
    latency_log: Option<Vec<KeptLatency>>,
    ns_per_sector: f64,
    crash_after: Vec<u64>,
    crashes: u64,
    crash_requested: bool,
    in_flight: Vec<Token>,
    scratch: Vec<Token>,
    /// The layer's series gauges (reused buffer).
    gauges: Vec<(&'static str, f64)>,
    batch: Vec<write_cache::Extent>,
    /// The writes of a destage batch (reused buffer; empty between batches).
    batch_reqs: Vec<WriteReq<'static>>,
    /// The queue entries of a destage batch (reused buffer).
    batch_queued: Vec<QueuedRequest>,
    /// Crashes by the cause of the operation they interrupted.
    crashes_during: std::collections::BTreeMap<&'static str, u64>,
    /// Crashes that fell inside a stage of background work.
    crashes_in_stages: u64,
    /// Layer counters of incarnations before crashes.
    past_counters: layers::LayerReport,
    /// Intervals completed by incarnations before crashes.
    past_intervals: u64,
    finished: bool,
    /// Host LBAs below this are prefilled (fold target of `fold_to_prefill`).
    prefill_limit: u64,
    /// The drive's starting state as laid out (for the report).
    prefill_tracks: u64,
    bg: BackgroundCounts,
    bg_wait: Nanos,
    /// Spans `[start, end)` of recent stages, for host waiting times.
    stage_spans: VecDeque<(u64, u64)>,
    waf: WafSeries,
    host_writes_arrived: u64,
    /// Host writes until the next WAF series point.
    waf_countdown: u64,
    irregular: Irregular,
    /// The layer's optional calls (asked again when a crash rebuilds it).
    needs: Needs,
    /// Sectors the host may address (the layer's host capacity).
    host_cap: u64,
    /// Bytes per sector.
    sector_bytes: u64,
    /// `log2(sector_bytes)` when it is a power of two (real sectors are 512
    /// or 4096 bytes: shifts rather than two 64-bit divisions per request).
    sector_shift: Option<u32>,
    /// A request whose sectors end below this needs no folding: the host
    /// capacity plus one, or 0 when every request is checked for folding
    /// into the prefill (one comparison per request instead of two tests).
    unfolded_end: u64,
    /// The last request length's link transfer time (`(sectors, time)`):
    /// requests mostly repeat a few sizes, and the float product and its
    /// conversion back were a sixtieth of a request's instructions.
    last_xfer: (u64, Nanos),
    /// The trace's host address range `[lo, hi)`, for layers sized by it.
    trace_range: Option<(u64, u64)>,
    /// The controller's command and completion overheads (zero unless the drive has them).
    overheads: Overheads,
    /// The on-drive read cache, if the drive has one.
    read_cache: Option<ReadCache>,
    /// Tokens a read-ahead read (reused buffer).
    ahead: Vec<Token>,
    /// The read-ahead the request being served interrupted, and when it would
    /// go on ([`crate::controller::ReadCacheConfig::hits_continue_read_ahead`]).
    interrupted: Option<(Prefetch, Nanos)>,
    /// When the media write of the last fast write ends, and the LBA after
    /// it ([`crate::controller::ControllerConfig::destage_at_once`]).
    fast_busy_until: Nanos,
    fast_end: u64,
    /// The drive's command scheduler (`fcfs` unless the drive's controller says otherwise).
    scheduler: Scheduler,
    /// Requests the host has issued that the drive has not served yet (a
    /// scheduler other than `fcfs` picks among them).
    pending: Vec<Arrival>,
    /// The record the reader hands over (FCFS), filled in place.
    rec: TraceRecord,
    /// The next trace record, read but not yet issued.
    peeked: Option<TraceRecord>,
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

    /// Set up a run with a layer that is not in the registry (tests of the
    /// verifier use deliberately broken layers). `entry` builds it again after a crash.
    pub fn with_layer(
        cfg: RunConfig,
        entry: &'static LayerEntry,
        reader: Box<dyn TraceReader>,
    ) -> SimResult<Simulation> {
        let params = Params::resolve(entry.name, entry.params, &cfg.layer.params)?;
        let drive = entry.drive_for(&cfg.drive, &params)?;
        let geom = drive.geometry()?;
        let layer = (entry.build)(&params, &geom)?;
        let mech = drive.mechanics(geom.tracks())?;
        let r = &cfg.replay;
        let prefill = cfg.validate(&drive)?;
        let cache_on = r.write_cache.unwrap_or(drive.write_cache_mib > 0.0);
        let cache_sectors = if cache_on {
            (drive.write_cache_mib * 1024.0 * 1024.0 / geom.sector_bytes() as f64) as u64
        } else {
            0
        };
        let ns_per_sector = if drive.interface_mb_s == 0.0 {
            0.0
        } else {
            geom.sector_bytes() as f64 * 1000.0 / drive.interface_mb_s
        };
        let host_cap = layer.host_capacity(&geom).0;
        let sector_bytes = geom.sector_bytes() as u64;
        let fold_to_prefill = r.fold_to_prefill;
        let home_map = HomeMap::new(&layer.reserved_home());
        let prefill_limit = match prefill {
            PrefillSpec::Fraction(f) => ((host_cap as f64 * f).floor() as u64).min(host_cap),
            PrefillSpec::Footprint => u64::MAX,
        };
        let mut dev = Device::new(geom, mech, cfg.verify);
        for (kind, slot_sectors) in layer.side_devices() {
            let c = match kind {
                SideKind::Memory => drive.memory.clone(),
                SideKind::Ssd => drive.ssd.clone(),
            };
            let Some(c) = c else {
                return Err(SimError::Config(format!(
                    "layer '{}' needs a {} beside the disk, but drive '{}' has no [{}] table (preset hwsr-paper has one)",
                    entry.name,
                    kind.name(),
                    drive.name,
                    kind.name()
                )));
            };
            dev.attach_side(kind, c, slot_sectors)?;
        }
        if !layer.supports_prefill() && !prefill.is_empty() {
            return Err(SimError::Config(format!(
                "layer '{}' places host data by its own map, so it starts from an empty drive; run it without a prefill",
                entry.name
            )));
        }
        // A host-side layer's physical operations are commands to a drive
        // with its own cache and queue: the cache goes beneath the layer.
        let cache_sectors = if entry.runs_in == RunsIn::Host {
            if cache_sectors > 0 {
                dev.attach_front_end(FrontEnd::new(
                    cache_sectors,
                    drive.queue.clone().unwrap_or_default(),
                    ns_per_sector,
                ));
            }
            0
        } else {
            cache_sectors
        };
        let cache = WriteCache::new(cache_sectors, dev.geometry_arc());
        let overheads = Overheads::new(cfg.drive.controller.as_ref());
        let read_cache = cfg
            .drive
            .read_cache
            .clone()
            .map(|c| ReadCache::new(c, cfg.verify));
        let mut crash_after = cfg.crash_after.clone();
        crash_after.sort_unstable_by(|a, b| b.cmp(a));
        let mut sim = Simulation {
            metrics: HostMetrics::new(r.series_every),
            verifier: None,
            cfg,
            entry,
            params,
            dev,
            layer,
            reader,
            cache,
            host: HostCounts::default(),
            outstanding: Default::default(),
            base_trace: None,
            prev_trace: 0,
            prev_issue: Nanos::ZERO,
            prev_measured: None,
            latency_log: None,
            ns_per_sector,
            crash_after,
            crashes: 0,
            crash_requested: false,
            in_flight: vec![],
            scratch: vec![],
            gauges: vec![],
            batch: vec![],
            batch_reqs: vec![],
            batch_queued: vec![],
            past_counters: Default::default(),
            past_intervals: 0,
            crashes_during: Default::default(),
            crashes_in_stages: 0,
            finished: false,
            prefill_limit,
            prefill_tracks: 0,
            bg: BackgroundCounts::default(),
            bg_wait: Nanos::ZERO,
            stage_spans: VecDeque::new(),
            waf: WafSeries::default(),
            host_writes_arrived: 0,
            waf_countdown: 0,
            irregular: Irregular::default(),
            needs: Needs::default(),
            host_cap,
            sector_bytes,
            sector_shift: sector_bytes
                .is_power_of_two()
                .then(|| sector_bytes.trailing_zeros()),
            unfolded_end: if fold_to_prefill {
                0
            } else {
                host_cap.saturating_add(1)
            },
            last_xfer: (0, Nanos::ZERO),
            trace_range: None,
            overheads,
            read_cache,
            interrupted: None,
            fast_busy_until: Nanos(0),
            fast_end: u64::MAX,
            ahead: vec![],
            scheduler: Scheduler::Fcfs,
            pending: vec![],
            rec: TraceRecord {
                time: Nanos(0),
                op: Op::Read,
                offset: crate::units::Bytes(0),
                len: crate::units::Bytes(0),
                line: 0,
            },
            peeked: None,
            history: None,
        };
        if let Some(c) = &sim.cfg.drive.controller {
            // Reordering needs a queue: one request at a time leaves no choice.
            if sim.cfg.replay.mode == Mode::Queue && sim.cfg.replay.queue_depth > 1 {
                sim.scheduler = c.scheduler;
            }
        }
        sim.needs = sim.layer_needs();
        sim.waf_countdown = sim.cfg.replay.waf_every;
        // A first pass over the trace when the run needs to know it ahead:
        // the tracks it touches (footprint prefill), its length (crash points).
        let footprint = prefill == PrefillSpec::Footprint;
        let wants_range = sim.layer.wants_trace_range();
        let mut range = (u64::MAX, 0u64);
        let mut touched = TrackBits::default();
        if footprint || wants_range || !sim.cfg.crash_after.is_empty() {
            match sim.reader.reopen() {
                Some(first) => {
                    let mut first = first?;
                    if footprint {
                        touched = TrackBits::new(sim.dev.geometry().tracks());
                    }
                    let mut count = 0u64;
                    let geom = sim.dev.geometry_arc();
                    while let Some(rec) = first.next_record()? {
                        if rec.len.0 == 0 {
                            continue;
                        }
                        count += 1;
                        if wants_range || footprint {
                            let (lba, n, _) = sim.convert(&rec)?;
                            range = (range.0.min(lba.0), range.1.max(lba.0 + n.0));
                            if footprint {
                                home_map.for_home_pieces(lba.0, n.0, |home, k, _| {
                                    geom.for_home_extents(Lba(home), Sectors(k), |at, _, _| touched.set(at.track));
                                });
                            }
                        }
                    }
                    sim.irregular = Irregular { trace_requests: Some(count), ..Irregular::default() };
                }
                None if footprint => {
                    return Err(SimError::Config(
                        "prefill = 'footprint' reads the trace twice, but this trace source cannot be read again".into(),
                    ))
                }
                None if wants_range => {
                    return Err(SimError::Config(format!(
                        "layer '{}' sizes its buffer from the trace's address range, which needs a trace that can be read twice; give the buffer size as a parameter instead",
                        sim.entry.name
                    )))
                }
                None => {}
            }
        }
        if wants_range {
            let (lo, hi) = if range.0 > range.1 { (0, 0) } else { range };
            sim.trace_range = Some((lo, hi));
            sim.layer.set_trace_range(Lba(lo), Lba(hi))?;
        }
        if let (Some(total), Some(&last)) = (
            sim.irregular.trace_requests,
            sim.cfg.crash_after.iter().max(),
        ) {
            if last > total {
                return Err(SimError::Config(format!(
                    "crash_after {last} lies beyond the end of the trace, which holds {total} requests"
                )));
            }
        }
        let start = match prefill {
            PrefillSpec::Footprint => Prefill::tracks(home_map, touched),
            PrefillSpec::Fraction(_) => Prefill::below(sim.dev.geometry(), home_map, prefill_limit),
        };
        sim.prefill_tracks = start.track_count();
        if sim.cfg.verify {
            let start = start
                .any()
                .then(|| (Arc::new(start.clone()), sim.dev.geometry_arc()));
            let mut v = Verifier::new(Oracle::new(start));
            if !sim.cfg.replay.verify_thread {
                v.set_thread_after(u64::MAX);
            }
            sim.verifier = Some(Box::new(v));
        }
        sim.dev.set_prefill(start);
        if let Some(fill) = sim.cfg.replay.history {
            sim.history = Some(sim.run_history(fill, sim.cfg.replay.history_seed)?);
        }
        sim.dev.set_crash_points(sim.cfg.crash_at_ops.clone());
        sim.waf.push(0, 0, 0, 0);
        Ok(sim)
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
    /// Crashes injected so far.
    pub fn crashes(&self) -> u64 {
        self.crashes
    }
    /// Ask for a power loss before the next request.
    pub fn request_crash(&mut self) {
        self.crash_requested = true;
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

    fn step_requests(&mut self, max_requests: u64) -> SimResult<bool> {
        if self.finished {
            return Ok(true);
        }
        for _ in 0..max_requests {
            if self.crash_requested {
                self.crash_requested = false;
                self.crash()?;
            }
            // FCFS serves each record as it is read; another scheduler picks
            // among the requests the host has issued.
            let served = if self.scheduler != Scheduler::Fcfs {
                match self.next_scheduled()? {
                    Some(a) => self.serve(a),
                    None => return self.end_of_trace(),
                }
            } else if self.reader.next_into(&mut self.rec)? {
                let rec = self.rec;
                self.one(&rec)
            } else {
                return self.end_of_trace();
            };
            match served {
                Ok(()) => {}
                Err(SimError::Crash) => {
                    self.host.lost_in_crash += 1;
                    self.crash()?;
                }
                Err(e) => return Err(e),
            }
            if self.crash_after.last() == Some(&self.host.requests) {
                self.crash_after.pop();
                self.crash()?;
            }
        }
        Ok(false)
    }

    /// The trace is done: flush, scan, finish (`step`'s `true`).
    fn end_of_trace(&mut self) -> SimResult<bool> {
        self.irregular.unknown_skipped = self.reader.skipped_unknown();
        self.finish()?;
        Ok(true)
    }

    /// Run to the end.
    pub fn run(&mut self) -> SimResult<()> {
        while !self.step(1 << 16)? {}
        Ok(())
    }

    /// The host range a record addresses, and whether it was folded.
    #[inline(always)]
    fn convert(&self, rec: &TraceRecord) -> SimResult<(Lba, Sectors, bool)> {
        let sb = self.sector_bytes;
        // Readers check this too; a reader of the caller's own may not.
        let Some(end) = rec.offset.0.checked_add(rec.len.0) else {
            return Err(crate::trace::request_end(rec, &self.cfg.trace.path).unwrap_err());
        };
        let (lba, n) = match self.sector_shift {
            Some(shift) => {
                let lba = rec.offset.0 >> shift;
                (lba, (end >> shift) + u64::from(end & (sb - 1) != 0) - lba)
            }
            None => {
                let lba = rec.offset.0 / sb;
                (lba, end.div_ceil(sb) - lba)
            }
        };
        if lba + n < self.unfolded_end {
            return Ok((Lba(lba), Sectors(n), false));
        }
        self.convert_slow(rec, lba, n)
    }

    /// [`convert`](Self::convert) for requests beyond the capacity or folded into the prefill.
    #[cold]
    fn convert_slow(
        &self,
        rec: &TraceRecord,
        mut lba: u64,
        n: u64,
    ) -> SimResult<(Lba, Sectors, bool)> {
        let (sb, cap) = (self.sector_bytes, self.host_cap);
        let at = || crate::error::Location {
            file: self.cfg.trace.path.clone(),
            line: rec.line,
        };
        if n > cap {
            return Err(SimError::TraceFormat {
                at: at(),
                msg: format!(
                    "request of {} bytes is larger than the drive ({} sectors)",
                    rec.len.0, cap
                ),
            });
        }
        if self.cfg.replay.fold_to_prefill {
            let limit = self.prefill_limit;
            if n > limit {
                return Err(SimError::TraceFormat {
                    at: at(),
                    msg: format!(
                        "request of {} bytes is larger than the prefilled range ({limit} sectors) it is folded into",
                        rec.len.0
                    ),
                });
            }
            let folded = lba + n > limit;
            if folded {
                lba %= limit;
                if lba + n > limit {
                    lba = limit - n;
                }
            }
            return Ok((Lba(lba), Sectors(n), folded));
        }
        if !self.cfg.replay.fold {
            return Err(SimError::TraceFormat {
                at: at(),
                msg: format!(
                    "request at byte offset {} lies beyond the drive's capacity of {} bytes; use a larger drive capacity or fold LBAs (--fold)",
                    rec.offset.0,
                    cap * sb
                ),
            });
        }
        lba %= cap;
        if lba + n > cap {
            lba = cap - n;
        }
        Ok((Lba(lba), Sectors(n), true))
    }

    fn issue_time(&mut self, rec: &TraceRecord) -> SimResult<(Nanos, Nanos)> {
        let base = *self.base_trace.get_or_insert(rec.time.0);
        self.irregular.timed |= rec.time.0 != base;
        if rec.time.0 < self.prev_trace.max(base) {
            // Went backwards: replayed as if at the latest time seen.
            self.irregular.clamped += 1;
        }
        let rel = rec.time.0.max(self.prev_trace).saturating_sub(base);
        let gap = rec.time.0.saturating_sub(self.prev_trace.max(base));
        self.prev_trace = self.prev_trace.max(rec.time.0);
        // The run's clock: zero unless a history came first.
        let t0 = self.dev.time_base().0;
        let (issue, trace_t) = match self.cfg.replay.mode {
            Mode::Queue | Mode::FlatOut => {
                let (q, gap) = if self.cfg.replay.mode == Mode::Queue {
                    (self.cfg.replay.queue_depth, gap)
                } else {
                    (1, 0)
                };
                let Some(next) = self.prev_issue.0.checked_add(gap) else {
                    return Err(self.past_time_end(rec, None));
                };
                let cand = self
                    .outstanding
                    .issue_time(next, self.pending.len(), q as usize);
                (Nanos(cand), Nanos(t0.saturating_add(rel)))
            }
            Mode::Scaled => {
                // A float product past 2^64 would saturate silently: every
                // later request would arrive at the same instant.
                let at = t0 as f64 + rel as f64 * self.cfg.replay.scale;
                if at >= u64::MAX as f64 {
                    return Err(self.past_time_end(rec, Some(self.cfg.replay.scale)));
                }
                let t = Nanos(at as u64);
                (t.max(self.prev_issue), t)
            }
            Mode::Closed => {
                // DiskSim (disksim_iodriver.c, iodriver_access_complete, the
                // VALIDATE case) reads the next record when a request
                // completes and gives it the time simtime + NEXT_US
                // (disksim_iotrace.c, iotrace_validate_get_ioreq_event).
                let think = gap.saturating_sub(self.prev_measured.map_or(0, |m| m.0));
                let done = self.outstanding.drain(self.prev_issue.0);
                let Some(at) = done.checked_add(think) else {
                    return Err(self.past_time_end(rec, None));
                };
                (Nanos(at), Nanos(t0.saturating_add(rel)))
            }
        };
        self.prev_issue = issue;
        Ok((issue, issue.saturating_sub(trace_t)))
    }

    /// The error for a request whose simulated arrival would pass 2^64 ns
    /// (584 years), where the clock would wrap or saturate.
    #[cold]
    fn past_time_end(&self, rec: &TraceRecord, scale: Option<f64>) -> SimError {
        let how = match scale {
            Some(s) => format!(
                "scaled by {s}, the trace's times reach past 2^64 ns (584 years of simulated time); use a smaller --scale"
            ),
            None => "its arrival would fall past 2^64 ns (584 years of simulated time): the trace's timestamps span too far".to_string(),
        };
        SimError::TraceFormat {
            at: crate::error::Location {
                file: self.cfg.trace.path.clone(),
                line: rec.line,
            },
            msg: format!("request at time {} ns: {how}", rec.time.0),
        }
    }

    fn one(&mut self, rec: &TraceRecord) -> SimResult<()> {
        match self.arrive(rec)? {
            Some(a) => self.serve(a),
            None => Ok(()),
        }
    }

    /// The host issues a trace record (None: an empty one, skipped).
    #[inline(always)]
    fn arrive(&mut self, rec: &TraceRecord) -> SimResult<Option<Arrival>> {
        if rec.len.0 == 0 {
            self.host.empty_skipped += 1;
            return Ok(None);
        }
        let (lba, n, folded) = self.convert(rec)?;
        if folded {
            if self.cfg.replay.fold_to_prefill {
                self.irregular.folded_to_prefill += 1;
            } else {
                self.irregular.folded += 1;
            }
        }
        let (issue, disparity) = self.issue_time(rec)?;
        // The trace's measured time matters to the closed mode's think time
        // and the latency log only: not asked for (a call per record) otherwise.
        let measured = if self.cfg.replay.mode == Mode::Closed || self.latency_log.is_some() {
            self.reader.measured()
        } else {
            None
        };
        self.prev_measured = measured;
        let write = rec.op == Op::Write;
        Ok(Some(Arrival {
            lba,
            n,
            write,
            issue,
            disparity,
            measured,
        }))
    }

    /// The next request the scheduler picks, once the host has issued what
    /// it can by the time the drive is free; None when the trace is done.
    fn next_scheduled(&mut self) -> SimResult<Option<Arrival>> {
        let q = self.cfg.replay.queue_depth as usize;
        while self.pending.len() < q {
            let rec = match self.peeked.take() {
                Some(r) => r,
                None => match self.reader.next_record()? {
                    Some(r) => r,
                    None => break,
                },
            };
            // Only what the host has issued by the time the drive is free
            // competes; a later request waits (it is issued, not yet seen).
            if !self.pending.is_empty() {
                let base = self.base_trace.unwrap_or(rec.time.0);
                let gap = rec.time.0.saturating_sub(self.prev_trace.max(base));
                if self.prev_issue.0 + gap > self.dev.now().0 {
                    self.peeked = Some(rec);
                    break;
                }
            }
            if let Some(a) = self.arrive(&rec)? {
                self.pending.push(a);
            }
        }
        if self.pending.is_empty() {
            return Ok(None);
        }
        let first = self
            .pending
            .iter()
            .map(|a| a.issue)
            .min()
            .unwrap_or(Nanos::ZERO);
        let t = self.dev.now().max(first);
        let head = self.dev.head();
        let geom = self.dev.geometry();
        let mech = self.dev.mechanics();
        let mut best: Option<(u64, Nanos, usize)> = None;
        for (i, a) in self.pending.iter().enumerate() {
            if a.issue > t {
                continue;
            }
            // Never ahead of an earlier request it overlaps when either
            // writes: the host sees its requests' data in the order it issued them.
            let (lo, hi) = (a.lba.0, a.lba.0 + a.n.0);
            let blocked = self.pending[..i]
                .iter()
                .any(|b| (a.write || b.write) && b.lba.0 < hi && lo < b.lba.0 + b.n.0);
            if blocked {
                continue;
            }
            let cost = match self.scheduler {
                Scheduler::Fcfs => 0,
                Scheduler::Sstf => mech
                    .cylinder(head.track)
                    .abs_diff(mech.cylinder(geom.home(a.lba).track)),
                Scheduler::Sptf => {
                    let at = geom.home(a.lba);
                    let spt = geom.sectors_in(at.track);
                    let p = mech.access(&head, t, at, 1, spt, a.write);
                    (p.seek + p.rotate).0
                }
            };
            if best.is_none_or(|(c, at, _)| (cost, a.issue) < (c, at)) {
                best = Some((cost, a.issue, i));
            }
        }
        let i = best.map_or(0, |b| b.2);
        Ok(Some(self.pending.remove(i)))
    }

    /// Serve an issued request, and count it.
    #[inline(always)]
    fn serve(&mut self, a: Arrival) -> SimResult<()> {
        let Arrival {
            lba,
            n,
            write,
            issue,
            disparity,
            measured,
        } = a;
        if self.read_cache.is_some() {
            self.read_ahead(issue)?;
        }
        // Most requests find nothing to do first: tested here, not in a call.
        if self.needs.background
            || (self.dev.now() < issue && (!self.cache.is_empty() || self.dev.has_cached_writes()))
        {
            self.background(
                QueuedRequest {
                    write,
                    lba,
                    sectors: n,
                },
                issue,
            )?;
        }
        let xfer = if n.0 == self.last_xfer.0 {
            self.last_xfer.1
        } else {
            let t = Nanos((n.0 as f64 * self.ns_per_sector) as u64);
            self.last_xfer = (n.0, t);
            t
        };
        let (complete, device_done) = if write {
            self.serve_write(issue, lba, n, xfer)?
        } else {
            self.serve_read(issue, lba, n, xfer)?
        };
        if let Some(done) = device_done {
            if !self.stage_spans.is_empty() {
                self.count_stage_wait(issue, done);
            }
        }
        if let Some(log) = &mut self.latency_log {
            log.push(KeptLatency {
                latency: complete.saturating_sub(issue),
                measured,
                write,
            });
        }
        if self.metrics.record(write, issue, complete, disparity) {
            self.sample_layer();
        }
        if self.cfg.replay.mode != Mode::Scaled {
            self.outstanding.push(complete.0);
        }
        let h = &mut self.host;
        h.requests += 1;
        if write {
            h.writes += 1;
            h.write_sectors += n.0;
        } else {
            h.reads += 1;
            h.read_sectors += n.0;
        }
        Ok(())
    }

    /// Record the layer's gauges for the series point just made.
    #[cold]
    fn sample_layer(&mut self) {
        self.gauges.clear();
        self.layer.series_gauges(&mut self.gauges);
        if !self.gauges.is_empty() || !self.metrics.series.layer.is_empty() {
            self.metrics.series.push_layer(&self.gauges);
        }
    }

    /// A request issued at `issue` whose device work ended at `done`: add the
    /// stage time that fell in between to the host's waiting time.
    fn count_stage_wait(&mut self, issue: Nanos, done: Nanos) {
        while self.stage_spans.front().is_some_and(|s| s.1 <= issue.0) {
            self.stage_spans.pop_front();
        }
        let mut wait = 0;
        for &(a, b) in &self.stage_spans {
            if a >= done.0 {
                break;
            }
            wait += b.min(done.0).saturating_sub(a.max(issue.0));
        }
        if wait > 0 {
            self.bg.requests_waited += 1;
            self.bg_wait += Nanos(wait);
        }
    }

    /// Count a host write arriving, and the WAF series point it may complete.
    #[inline]
    fn write_arrived(&mut self, lba: Lba, n: Sectors) {
        if self.needs.arrivals {
            self.layer.host_write_arrived(self.dev.geometry(), lba, n);
        }
        self.host_writes_arrived += 1;
        self.waf_countdown -= 1;
        if self.waf_countdown == 0 {
            self.waf_countdown = self.cfg.replay.waf_every;
            self.push_waf_point();
        }
    }

    fn push_waf_point(&mut self) {
        let (_, w) = self.dev.totals();
        self.waf.push(
            self.host_writes_arrived,
            self.host.layer_write_sectors,
            w.sectors,
            self.dev.stage_write_sectors(),
        );
    }

    /// Serve a write; returns its completion time and, when it needed the
    /// device, when the device work it waited for ended.
    fn serve_write(
        &mut self,
        issue: Nanos,
        lba: Lba,
        n: Sectors,
        xfer: Nanos,
    ) -> SimResult<(Nanos, Option<Nanos>)> {
        self.write_arrived(lba, n);
        let data = match &mut self.verifier {
            Some(v) => {
                let mut d = self.cache.data_buffer(n.0 as usize);
                v.new_write_into(lba.0, n.0, &mut d)?;
                d
            }
            None => vec![],
        };
        if let Some(rc) = &mut self.read_cache {
            rc.written(lba.0, n.0, &data);
        }
        let done_oh = self.overheads.completion(true);
        if n.0 <= self.cache.capacity() && self.overheads.destage_at_once {
            self.serve_fast_write(issue, lba, n, xfer, data)
        } else if n.0 <= self.cache.capacity() {
            let mut ready = issue + self.overheads.command(true, true);
            let mut device = None;
            if !self.cache.fits(n.0) {
                self.dev.advance_to(issue);
                while !self.cache.fits(n.0) {
                    self.destage_batch()?;
                }
                ready = ready.max(self.dev.now());
                device = Some(self.dev.now());
            }
            if let Some(v) = &mut self.verifier {
                v.acknowledge(&data, false);
            }
            self.cache.insert(lba.0, n.0, data);
            self.host.cached_writes += 1;
            Ok((ready + xfer + done_oh, device))
        } else {
            // Too large to cache: written through, superseding any cached copy.
            self.cache.invalidate(lba.0, n.0);
            let oh = self.start_media_command(issue, true);
            // The link starts bringing the data once the command is
            // processed; with write_link_per_block the media writes each
            // block only once it is buffered.
            let gate = self.overheads.write_link_per_block.then_some(issue + oh);
            self.write_to_layer(lba, n, data, gate)?;
            let done = self.dev.now();
            Ok((done.max(issue + oh + xfer) + done_oh, Some(done)))
        }
    }

    /// A write the write cache absorbs, as DiskSim's fast writes
    /// ([`crate::controller::ControllerConfig::destage_at_once`]): its data
    /// crosses the link from the end of its command overhead, or, when the
    /// media is still writing an earlier fast write this one does not
    /// append to, from the end of that (`disk_write_arrive` finds the
    /// access not stoppable, `disk_buffer_stopable_access`); it completes
    /// once its data has crossed (`disk_buffer_transfer_size`). Its media
    /// write starts at once, positioning from the end of the command
    /// overhead or of the earlier media write (`disk_check_hda`), each block
    /// written once buffered (`disk_buffer_sector_done`).
    fn serve_fast_write(
        &mut self,
        issue: Nanos,
        lba: Lba,
        n: Sectors,
        xfer: Nanos,
        data: Vec<Token>,
    ) -> SimResult<(Nanos, Option<Nanos>)> {
        let done_oh = self.overheads.completion(true);
        let ready = issue + self.overheads.command(true, true);
        let busy = self.fast_busy_until;
        let link = if busy > issue && lba.0 != self.fast_end {
            ready.max(busy)
        } else {
            ready
        };
        self.cache.invalidate(lba.0, n.0);
        self.dev.advance_to(ready);
        self.write_to_layer(lba, n, data, Some(link))?;
        self.host.cached_writes += 1;
        self.fast_busy_until = self.dev.now();
        self.fast_end = lba.0 + n.0;
        Ok((link + xfer + done_oh, None))
    }

    /// A host write handed to the layer and acknowledged once the layer
    /// returns (written through, or DiskSim's fast write): it waits for the
    /// layer's background work, is in flight while the layer writes (a
    /// power loss then leaves it uncertain), and with `gate` its media
    /// writes take each block only once the link has brought it, the link
    /// starting then.
    fn write_to_layer(
        &mut self,
        lba: Lba,
        n: Sectors,
        data: Vec<Token>,
        gate: Option<Nanos>,
    ) -> SimResult<()> {
        self.host_write_waits_for_layer(lba, n, &data)?;
        self.in_flight = data;
        let w = WriteReq {
            lba,
            sectors: n,
            cause: Cause::Host,
            data: &self.in_flight,
        };
        if let Some(from) = gate {
            self.dev.gate_writes(from, self.ns_per_sector);
        }
        let r = self.layer.write(&mut self.dev, &w);
        if gate.is_some() {
            self.dev.ungate_writes();
        }
        self.note_durable();
        r?;
        self.host.layer_write_sectors += n.0;
        let data = std::mem::take(&mut self.in_flight);
        let durable = !self.needs.volatile_writes;
        if let Some(v) = &mut self.verifier {
            v.acknowledge(&data, durable);
        }
        self.cache.recycle_data(data);
        Ok(())
    }

    /// Let the read-ahead that followed the last media read run until a
    /// request arriving at `issue` stops it: as many of the following
    /// sectors as pass under the head by then, at the media rate of the
    /// track they start on, read through the layer as cause `read_ahead`.
    fn read_ahead(&mut self, issue: Nanos) -> SimResult<()> {
        self.interrupted = None;
        let Some(rc) = &mut self.read_cache else {
            return Ok(());
        };
        let Some(p) = rc.take_prefetch() else {
            return Ok(());
        };
        let keep = rc.hits_continue();
        let start = p.from.max(self.dev.now());
        let next = rc.prefetch_next(&p);
        let room = p.until.min(self.host_cap).saturating_sub(next);
        if room == 0 {
            return Ok(());
        }
        if start >= issue {
            if keep {
                self.interrupted = Some((p, start));
            }
            return Ok(());
        }
        let n = self.ahead_sectors(next, room, start, issue);
        if n == 0 {
            if keep {
                self.interrupted = Some((p, start));
            }
            return Ok(());
        }
        self.dev.advance_to(start);
        self.ahead.clear();
        self.dev.set_reading_ahead(true);
        let r = self
            .layer
            .read(&mut self.dev, Lba(next), Sectors(n), &mut self.ahead);
        self.dev.set_reading_ahead(false);
        r?;
        if !self.ahead.is_empty() {
            self.cache.overlay(next, n, &mut self.ahead);
        }
        if let Some(rc) = &mut self.read_cache {
            rc.prefetched(&p, n, &self.ahead);
            self.host.read_ahead_sectors += n;
        }
        if keep && n < room {
            self.interrupted = Some((p, self.dev.now()));
        }
        Ok(())
    }

    /// How many of the `room` sectors from `next` a read-ahead starting at
    /// `start` has read whole when a request arriving at `issue` stops it:
    /// the device's own timing of each track's piece (seek or head switch,
    /// rotational wait, transfer), so the read-ahead never runs past the
    /// arrival (DiskSim stops it there, `disk_buffer_stopable_access`).
    fn ahead_sectors(&self, next: u64, room: u64, start: Nanos, issue: Nanos) -> u64 {
        let geom = self.dev.geometry();
        let mech = self.dev.mechanics();
        let mut head = self.dev.head();
        let mut clock = start;
        let mut total = 0u64;
        let mut stopped = false;
        geom.for_home_extents(Lba(next), Sectors(room), |at, count, _| {
            if stopped {
                return;
            }
            let spt = geom.sectors_in(at.track);
            let whole = mech.access(&head, clock, at, count, spt, false);
            let end = clock + whole.total();
            if end <= issue {
                total += count as u64;
                clock = end;
                head = HeadState {
                    track: at.track,
                    next_sector: (at.sector + count) % spt.max(1),
                    at: clock,
                };
                return;
            }
            stopped = true;
            // Part of the piece: its positioning is that of any part (a
            // zero-latency whole track aside, which a part is not).
            let t = mech.access(&head, clock, at, 1, spt, false);
            let begin = clock + t.seek + t.rotate;
            if begin >= issue {
                return;
            }
            let avail = issue - begin;
            let mut k = ((avail.0 as u128 * spt as u128) / mech.rotation_time().0.max(1) as u128)
                .min(count as u128) as u32;
            while k > 0 && mech.transfer_time(k, spt) > avail {
                k -= 1;
            }
            total += k as u64;
        });
        total
    }

    /// What the read-ahead after a read of `start..end` is measured from.
    fn ahead_ctx(&self, rc: &ReadCache, start: u64, end: u64) -> AheadCtx {
        let track = (rc.extent() == ReadAheadExtent::Track && end < self.host_cap).then(|| {
            let geom = self.dev.geometry();
            let lt = geom.logical_track_of(Lba(end));
            let t_end = if lt + 1 < geom.logical_tracks() {
                geom.logical_track_start(lt + 1).0
            } else {
                self.host_cap
            };
            TrackSpan {
                start: geom.logical_track_start(lt).0,
                end: t_end,
                sectors_per_track: geom.sectors_in(geom.home(Lba(start)).track) as u64,
            }
        });
        AheadCtx {
            req_start: start,
            track,
            floor: 0,
        }
    }

    /// A request that goes to the media starts once it has arrived and the
    /// device is free, then pays its command overhead (a miss) with the
    /// device idle; returns that overhead.
    #[inline]
    fn start_media_command(&mut self, issue: Nanos, write: bool) -> Nanos {
        let oh = self.overheads.command(write, false);
        if self.overheads.destage_at_once {
            // DiskSim positions once the command overhead is done or the
            // media work in progress ends, whichever is later (disk_check_hda).
            self.dev.advance_to(issue + oh);
        } else {
            self.dev.advance_to(issue);
            self.dev.advance_to(self.dev.now() + oh);
        }
        oh
    }

    /// When the link may start carrying a read wholly in the buffer: after
    /// the hit's command overhead; but a read arriving while the media
    /// writes a fast write waits for it, its command overhead (a miss's, as
    /// DiskSim disconnects: `disk_read_arrive`) running beside the wait.
    fn hit_link_start(&mut self, issue: Nanos) -> Nanos {
        if self.overheads.destage_at_once && issue < self.fast_busy_until {
            (issue + self.overheads.command(false, false)).max(self.fast_busy_until)
        } else {
            issue + self.overheads.command(false, true)
        }
    }

    /// When a read's data has crossed the host link: the link may start once
    /// the buffer holds the high-water fraction of the data (0: at once,
    /// overlapping the media; 1: after the media read), and takes `xfer`.
    #[inline]
    fn read_done(&self, media_done: Nanos, started: Nanos, xfer: Nanos) -> Nanos {
        let h = self.overheads.read_high_water_mark;
        let held = if h > 0.0 {
            media_done + Nanos((h * xfer.0 as f64) as u64)
        } else {
            media_done
        };
        held.max(started + xfer)
    }

    /// When a read's data has crossed the host link block by block
    /// ([`crate::controller::ControllerConfig::read_link_per_block`]): the
    /// link starts at `started` with the `have` blocks already buffered,
    /// then sends each block read from the media (`pieces`, in LBA order)
    /// once it is buffered and the block before it is sent, one block per
    /// link block time. Within a piece the blocks arrive one sector time
    /// apart, so the last block is sent at the latest of: the link sending
    /// the piece straight on, the piece's first block buffered and the whole
    /// piece sent after it, the piece's last block buffered and sent.
    fn read_done_per_block(
        ns_per_sector: f64,
        started: Nanos,
        have: u64,
        pieces: &[ReadPiece],
    ) -> Nanos {
        let link = |k: u64| Nanos((k as f64 * ns_per_sector) as u64);
        let mut sent = started + link(have);
        for p in pieces {
            let c = p.count as u64;
            sent = (sent + link(c))
                .max(p.first_ready + link(c))
                .max(p.end + link(1));
        }
        sent
    }

    fn serve_read(
        &mut self,
        issue: Nanos,
        lba: Lba,
        n: Sectors,
        xfer: Nanos,
    ) -> SimResult<(Nanos, Option<Nanos>)> {
        let carries = self.verifier.is_some();
        self.scratch.clear();
        let done_oh = self.overheads.completion(false);
        let (complete, device) = if !self.cache.is_empty() && self.cache.covers(lba.0, n.0) {
            self.host.cache_read_hits += 1;
            if carries {
                self.scratch.resize(n.0 as usize, Token::EMPTY);
            }
            (
                issue + self.overheads.command(false, true) + xfer + done_oh,
                None,
            )
        } else {
            // What the read cache holds of the read's first sectors.
            let found = match &mut self.read_cache {
                Some(rc) => rc.lookup(lba.0, n.0),
                None => Lookup::Miss,
            };
            let have = match found {
                Lookup::Full => n.0,
                Lookup::Prefix(h) => h,
                Lookup::Miss => 0,
            };
            if let Some(rc) = &self.read_cache {
                rc.copy_out(lba.0, have, &mut self.scratch);
            }
            // A hit on the segment being read ahead lets the read-ahead go on
            // (DiskSim's disk_buffer_attempt_access_swap).
            let go_on = match (self.interrupted.take(), &self.read_cache) {
                (Some((p, t)), Some(rc)) if have > 0 && rc.segment_of(lba.0) == Some(p.seg) => {
                    Some((p, t))
                }
                _ => None,
            };
            if have == n.0 {
                self.host.read_cache_hits += 1;
                let end = lba.0 + n.0;
                if let Some((p, t)) = go_on {
                    if let Some(rc) = &self.read_cache {
                        let ctx = self.ahead_ctx(rc, lba.0, end);
                        let until =
                            rc.read_ahead_until(lba.0, end, rc.segment_start(p.seg), ctx.track);
                        if let Some(rc) = &mut self.read_cache {
                            rc.resume(p, t, until);
                        }
                    }
                } else if let Some(rc) = self.read_cache.as_ref().filter(|rc| rc.on_idle_hit()) {
                    // DiskSim seeks for it once the command overhead is
                    // done, which it times as a miss's (overhead_done).
                    if let Some(i) = rc.segment_of(lba.0) {
                        let track = self.ahead_ctx(rc, lba.0, end).track;
                        let until = rc.hit_bound(i, lba.0, end, track);
                        let from = issue + self.overheads.peek(false, false);
                        if let Some(rc) = &mut self.read_cache {
                            rc.restart(i, from, until);
                        }
                    }
                }
                (self.hit_link_start(issue) + xfer + done_oh, None)
            } else {
                // A prefix hit transfers what is buffered and reads the rest.
                if have > 0 {
                    self.host.read_cache_partial_hits += 1;
                }
                let oh = match go_on {
                    // The read-ahead reads the rest on, from where it was:
                    // no new positioning, the command overhead overlapping.
                    Some(_) => self.overheads.command(false, false),
                    None => self.start_media_command(issue, false),
                };
                // The link may start once the command is processed; a read
                // arriving while a fast write's media write goes on waits
                // for it too.
                let started = if go_on.is_none() && issue < self.fast_busy_until {
                    (issue + oh).max(self.fast_busy_until)
                } else {
                    issue + oh
                };
                let floor = go_on.map_or(0, |(p, _)| p.until);
                let from = self.scratch.len();
                let (at, m) = (Lba(lba.0 + have), Sectors(n.0 - have));
                let per_block = self.overheads.read_link_per_block;
                if per_block {
                    self.dev.note_reads();
                }
                let r = self.layer.read(&mut self.dev, at, m, &mut self.scratch);
                let sent = if per_block {
                    let pieces = self.dev.noted_reads();
                    Some(Self::read_done_per_block(
                        self.ns_per_sector,
                        started,
                        have,
                        pieces,
                    ))
                } else {
                    None
                };
                r?;
                let done = self.dev.now();
                let ctx = match &self.read_cache {
                    Some(rc) => AheadCtx {
                        floor,
                        ..self.ahead_ctx(rc, lba.0, lba.0 + n.0)
                    },
                    None => AheadCtx::default(),
                };
                if let Some(rc) = &mut self.read_cache {
                    // The buffer holds the drive's newest data: what the
                    // write cache holds supersedes what the media had.
                    let from = from.min(self.scratch.len());
                    let tail = &mut self.scratch[from..];
                    if carries {
                        self.cache.overlay(at.0, m.0, tail);
                    }
                    rc.filled(at.0, m.0, tail, done, ctx);
                }
                let sent = match sent {
                    Some(t) => t,
                    None => self.read_done(done, started, xfer),
                };
                (sent + done_oh, Some(done))
            }
        };
        if let Some(v) = &mut self.verifier {
            if self.scratch.len() != n.0 as usize {
                return Err(SimError::Layer(format!(
                    "layer '{}' returned {} sectors for a read of {} at LBA {}",
                    self.entry.name,
                    self.scratch.len(),
                    n.0,
                    lba.0
                )));
            }
            self.cache.overlay(lba.0, n.0, &mut self.scratch);
            v.check(lba.0, &self.scratch, "a host read")
                .map_err(|m| m.into_error(|op| self.dev.describe_op(op)))?;
            v.read_blocks_checked += n.0;
        }
        Ok((complete, device))
    }

    /// Run one stage of the layer's background work.
    fn run_stage(&mut self, foreground: bool, queued: &[QueuedRequest]) -> SimResult<StageOutcome> {
        let start = self.dev.now();
        self.dev.set_in_stage(true);
        let out = self.layer.stage(&mut self.dev, &QueueView::new(queued))?;
        self.dev.set_in_stage(false);
        let end = self.dev.now();
        match out {
            StageOutcome::Ran => {
                self.bg.stages += 1;
                if foreground {
                    self.bg.stages_foreground += 1;
                } else {
                    self.bg.stages_idle += 1;
                }
                if end > start {
                    self.stage_spans.push_back((start.0, end.0));
                }
            }
            StageOutcome::Aborted => {
                self.bg.aborted += 1;
                if end > start {
                    self.stage_spans.push_back((start.0, end.0));
                }
            }
            StageOutcome::Nothing => {}
        }
        Ok(out)
    }

    /// Background work before the request `next`, issued at `until`:
    /// overdue stages first (whatever the time), then — while the device
    /// would otherwise sit idle — destaging, then the layer's idle stages.
    fn background(&mut self, next: QueuedRequest, until: Nanos) -> SimResult<()> {
        if !self.needs.background {
            // Only the write caches work in the background.
            while self.dev.now() < until && !self.cache.is_empty() {
                self.destage_batch()?;
            }
            self.dev.destage_idle(until)?;
            return Ok(());
        }
        let mut ran = false;
        loop {
            let bg = self.layer.background();
            let arrived = self.dev.now() >= until;
            if bg == Background::Overdue {
                let queued = [next];
                // Foreground when a request waits for it; else it just uses idle time first.
                match self.run_stage(arrived, if arrived { &queued } else { &[] })? {
                    StageOutcome::Ran => continue,
                    // The layer gave way to the waiting request: serve it.
                    StageOutcome::Aborted => break,
                    StageOutcome::Nothing => {}
                }
                if self.layer.background() == Background::Overdue {
                    return Err(SimError::Layer(format!(
                        "layer '{}' says its background work is overdue but has no stage to run",
                        self.entry.name
                    )));
                }
                continue;
            }
            if arrived {
                if ran && bg != Background::None {
                    self.bg.postponed += 1;
                }
                break;
            }
            if !self.cache.is_empty() {
                self.destage_batch()?;
                continue;
            }
            // The drive destages its own cache whenever it is idle.
            if self.dev.destage_next()? {
                continue;
            }
            if bg == Background::Idle {
                match self.run_stage(false, &[])? {
                    StageOutcome::Ran => {
                        ran = true;
                        continue;
                    }
                    StageOutcome::Aborted => break,
                    StageOutcome::Nothing => {}
                }
                if self.layer.background() != Background::Idle {
                    continue;
                }
            }
            break;
        }
        Ok(())
    }

    /// A host write going to the layer now waits, where the layer asks for
    /// it, for background work that must finish before it.
    fn host_write_waits_for_layer(
        &mut self,
        lba: Lba,
        n: Sectors,
        data: &[Token],
    ) -> SimResult<()> {
        if !self.needs.background {
            return Ok(());
        }
        let w = [WriteReq {
            lba,
            sectors: n,
            cause: Cause::Host,
            data,
        }];
        let queued = [QueuedRequest {
            write: true,
            lba,
            sectors: n,
        }];
        self.wait_for_layer(&w, &queued)
    }

    /// Before the layer stores `ws`: run stages while it says the writes
    /// must wait for background work in progress.
    fn wait_for_layer(&mut self, ws: &[WriteReq], queued: &[QueuedRequest]) -> SimResult<()> {
        if !self.needs.background {
            return Ok(());
        }
        let mut aborts = 0;
        while self.layer.write_must_wait(self.dev.geometry(), ws) {
            let out = self.run_stage(true, queued)?;
            if out == StageOutcome::Aborted {
                aborts += 1;
            }
            // A layer that keeps abandoning the work a write waits for would never let it in.
            if (out == StageOutcome::Nothing || aborts > 1000)
                && self.layer.write_must_wait(self.dev.geometry(), ws)
            {
                return Err(SimError::Layer(format!(
                    "layer '{}' says a write must wait for background work but does not finish it",
                    self.entry.name
                )));
            }
        }
        Ok(())
    }

    fn destage_batch(&mut self) -> SimResult<()> {
        let mut batch = std::mem::take(&mut self.batch);
        self.cache.take_batch_into(&mut batch);
        fn req(e: &write_cache::Extent) -> WriteReq<'_> {
            WriteReq {
                lba: Lba(e.lba),
                sectors: Sectors(e.len),
                cause: Cause::Destage,
                data: &e.data,
            }
        }
        let r = if batch.len() == 1 {
            let w = [req(&batch[0])];
            let q = [QueuedRequest {
                write: true,
                lba: w[0].lba,
                sectors: w[0].sectors,
            }];
            self.wait_for_layer(&w, &q)
                .and_then(|_| self.layer.write_batch(&mut self.dev, &w))
        } else {
            // The batch's writes and queue entries go in buffers kept
            // between batches (no allocation per destage).
            let mut reqs = layers::recycle_writes(std::mem::take(&mut self.batch_reqs));
            reqs.extend(batch.iter().map(req));
            let mut q = std::mem::take(&mut self.batch_queued);
            q.clear();
            q.extend(reqs.iter().map(|w| QueuedRequest {
                write: true,
                lba: w.lba,
                sectors: w.sectors,
            }));
            let r = self
                .wait_for_layer(&reqs, &q)
                .and_then(|_| self.layer.write_batch(&mut self.dev, &reqs));
            self.batch_reqs = layers::recycle_writes(reqs);
            self.batch_queued = q;
            r
        };
        self.note_durable();
        if let Err(e) = r {
            self.batch = batch;
            return Err(e);
        }
        for e in &batch {
            self.host.layer_write_sectors += e.len;
            if let (Some(v), false) = (&mut self.verifier, self.needs.volatile_writes) {
                debug_assert!(v
                    .oracle_here()
                    .is_none_or(|o| e.data.iter().all(|t| o.expected(t.lba) == t.ver)));
                v.destaged(e.lba, e.len);
            }
        }
        self.batch = batch;
        Ok(())
    }

    /// The layer's optional calls; a layer writing into a volatile memory
    /// buffer acknowledges writes before they are durable.
    fn layer_needs(&self) -> Needs {
        let mut n = self.layer.needs();
        n.volatile_writes |= self.dev.volatile_memory();
        n
    }

    /// Host data a layer with volatile acknowledgements has made durable.
    fn note_durable(&mut self) {
        if self.needs.volatile_writes {
            let d = self.dev.take_made_durable();
            if let Some(v) = &mut self.verifier {
                v.made_durable(&d);
            }
        }
    }

    /// Power loss: drop the write cache and the layer's volatile state,
    /// rebuild the layer from the medium, and (verifying) check every block.
    fn crash(&mut self) -> SimResult<()> {
        self.crashes += 1;
        let during = self
            .dev
            .take_crash_cause()
            .map(|c| c.name())
            .unwrap_or("between-requests");
        *self.crashes_during.entry(during).or_insert(0) += 1;
        if self.dev.take_crash_in_stage() {
            self.crashes_in_stages += 1;
        }
        self.dev.set_in_stage(false);
        self.note_durable();
        self.dev.power_cycle();
        self.dev.set_reading_ahead(false);
        self.cache.clear();
        if let Some(rc) = &mut self.read_cache {
            rc.clear();
        }
        self.outstanding.clear();
        let in_flight = std::mem::take(&mut self.in_flight);
        if let Some(v) = &mut self.verifier {
            // What a power loss leaves uncertain depends on every event so far.
            let o = v
                .oracle()
                .map_err(|m| m.into_error(|op| self.dev.describe_op(op)))?;
            o.crash(&in_flight);
        }
        layers::fold_past(&mut self.past_counters, self.layer.report());
        self.past_intervals += self.layer.intervals_completed().unwrap_or(0);
        let geom = self.dev.geometry_arc();
        loop {
            self.layer = (self.entry.build)(&self.params, &geom)?;
            if let Some((lo, hi)) = self.trace_range {
                self.layer.set_trace_range(Lba(lo), Lba(hi))?;
            }
            self.needs = self.layer_needs();
            // A host-side layer's recovery ends with a flush, as a host's
            // would: what it restored is on the media before new writes.
            match self
                .layer
                .recover(&mut self.dev)
                .and_then(|_| self.dev.flush().map(|_| ()))
            {
                Ok(()) => break,
                Err(SimError::Crash) => {
                    self.crashes += 1;
                    *self.crashes_during.entry("recovery").or_insert(0) += 1;
                    self.dev.take_crash_cause();
                    self.dev.take_crash_in_stage();
                }
                Err(e) => return Err(e),
            }
        }
        if self.verifier.is_some() {
            self.scan(Some(format!("the scan after crash #{}", self.crashes)))?;
        }
        Ok(())
    }

    /// Host ranges a scan must read: every LBA the host wrote, and the
    /// prefilled LBAs of every track the run read, wrote or damaged.
    fn scan_ranges(&self, o: &Oracle) -> Vec<(u64, u64)> {
        let v = o.footprint();
        let med = self.dev.medium();
        let Some(start) = o.start() else {
            return v;
        };
        let geom = self.dev.geometry();
        let mut h = vec![];
        for t in med.touched().iter() {
            start.host_ranges_on(geom, t, |l, n| h.push((l, n)));
        }
        // Tracks in order give their host ranges in order, except where a
        // layout numbers tracks otherwise (interlaced layouts).
        if !h.is_sorted() {
            h.sort_unstable();
        }
        crate::medium::prefill::union_sorted(&v, &h)
    }

    /// Read every block the host ever wrote (and every prefilled block the
    /// run may have disturbed) through the layer and check it: `inline`
    /// (named so in messages: after a crash, after a history), each block
    /// at once, settling each uncertain block at the version found; else
    /// the final scan, at the end of the run.
    fn scan(&mut self, inline: Option<String>) -> SimResult<()> {
        let Some(mut v) = self.verifier.take() else {
            return Ok(());
        };
        let ranges = match v.oracle() {
            Ok(o) => self.scan_ranges(o),
            Err(m) => {
                self.verifier = Some(v);
                return Err(m.into_error(|op| self.dev.describe_op(op)));
            }
        };
        let after_crash = inline.is_some();
        let label = inline.unwrap_or_default();
        // The final scan's checks go to the thread, as the run's did; the
        // scan after a crash settles what the crash left uncertain, so it
        // checks each block at once.
        if !after_crash && v.wants_thread() {
            if let Err(e) = v.start() {
                self.verifier = Some(v);
                return Err(e);
            }
        }
        self.dev.set_accounting(false);
        let geom = self.dev.geometry_arc();
        let mut result = Ok(());
        'ranges: for (start, len) in ranges {
            let end = start + len;
            let mut cur = start;
            while cur < end {
                let lt_end = geom
                    .logical_track_start(geom.logical_track_of(Lba(cur)) + 1)
                    .0;
                let n = end.min(lt_end.max(cur + 1)) - cur;
                self.scratch.clear();
                if let Err(e) =
                    self.layer
                        .read(&mut self.dev, Lba(cur), Sectors(n), &mut self.scratch)
                {
                    result = Err(e);
                    break 'ranges;
                }
                let checked = match v.oracle_here_mut() {
                    Some(o) if after_crash => o.check(cur, &self.scratch, &label, true),
                    _ => v.check(cur, &self.scratch, "the final scan"),
                };
                if let Err(m) = checked {
                    result = Err(m.into_error(|op| self.dev.describe_op(op)));
                    break 'ranges;
                }
                v.scan_blocks_checked += n;
                cur += n;
            }
        }
        self.dev.set_accounting(true);
        // A block the thread found lost was read before anything that
        // stopped the scan here.
        if let Err(m) = v.sync() {
            result = Err(m.into_error(|op| self.dev.describe_op(op)));
        }
        self.verifier = Some(v);
        result
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
        let mut bg = self.bg.clone();
        bg.host_wait_s = self.bg_wait.as_secs();
        let intervals = self
            .layer
            .intervals_completed()
            .map(|n| n + self.past_intervals);
        report::build(report::Inputs {
            cfg: &self.cfg,
            entry: self.entry,
            params: &self.params,
            dev: &self.dev,
            layer: self.layer.as_ref(),
            past_counters: &self.past_counters,
            crashes_during: &self.crashes_during,
            crashes_in_stages: self.crashes_in_stages,
            host: &self.host,
            metrics: &self.metrics,
            verifier: self.verifier.as_deref(),
            crashes: self.crashes,
            cache_sectors: self.cache.capacity(),
            finished: self.finished,
            background: bg,
            waf: &self.waf,
            intervals,
            irregular: &self.irregular,
            prefill_tracks: self.prefill_tracks,
            prefill_limit: self.prefill_limit,
            history: self.history.as_ref(),
        })
    }

    /// The WAF series so far (cumulative sector counts every `waf_every` host writes).
    pub fn waf_series(&self) -> &WafSeries {
        &self.waf
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
