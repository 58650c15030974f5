//! The replay engine: issues trace requests by the chosen replay mode, runs
//! the drive's write cache, offers idle time to the layer, verifies data and
//! injects crashes. Every layer is measured by these same rules.
//!
//! The device serves host requests first-come first-served (no command
//! reordering), one physical operation at a time; background work (destaging,
//! layer idle work) starts only when the device is idle and is never
//! preempted mid-operation, so a request arriving during it waits for the
//! operation in progress.
//!
//! A run is an owned value ([`Simulation`]) stepped in chunks, so a front end
//! can show progress and many runs can share a process. Memory does not grow
//! with trace length (only with its footprint, when verifying, and with the
//! series, one point per `series_every` requests).

pub mod config;
pub mod oracle;
pub mod write_cache;

use crate::device::{Cause, Device};
use crate::error::{SimError, SimResult};
use crate::geometry::Geometry;
use crate::layers::{self, Layer, LayerEntry, Params, WriteReq};
use crate::mechanics::Mechanics;
use crate::medium::Token;
use crate::metrics::report::{self, Report};
use crate::metrics::HostMetrics;
use crate::trace::{open_trace, Op, TraceReader, TraceRecord};
use crate::units::{Lba, Nanos, Sectors};
pub use config::{LayerConfig, Mode, ReplayConfig, RunConfig};
use oracle::Oracle;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use write_cache::WriteCache;

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
    /// Writes absorbed by the write cache.
    pub cached_writes: u64,
    /// Sectors handed to the layer to store (direct writes plus destages).
    pub layer_write_sectors: u64,
    /// Zero-length trace records skipped.
    pub empty_skipped: u64,
    /// Requests in flight at a crash (never acknowledged).
    pub lost_in_crash: u64,
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
    oracle: Option<Oracle>,
    metrics: HostMetrics,
    host: HostCounts,
    outstanding: BinaryHeap<Reverse<u64>>,
    base_trace: Option<u64>,
    prev_trace: u64,
    prev_issue: Nanos,
    ns_per_sector: f64,
    crash_after: Vec<u64>,
    crashes: u64,
    crash_requested: bool,
    in_flight: Vec<Token>,
    scratch: Vec<Token>,
    batch: Vec<write_cache::Extent>,
    /// Crashes by the cause of the operation they interrupted.
    crashes_during: std::collections::BTreeMap<&'static str, u64>,
    /// Layer counters of incarnations before crashes.
    past_counters: layers::LayerReport,
    finished: bool,
}

impl Simulation {
    /// Validate a configuration and set up the run (opens the trace).
    pub fn new(cfg: RunConfig) -> SimResult<Simulation> {
        let reader = open_trace(&cfg.trace)?;
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
        let drive = entry.drive_for(&cfg.drive)?;
        let geom = Geometry::from_config(&drive)?;
        let layer = (entry.build)(&params, &geom)?;
        let mech = Mechanics::new(&drive.seek, &drive.rotation, drive.rpm, geom.tracks())?;
        let r = &cfg.replay;
        if r.mode == Mode::Queue && r.queue_depth == 0 {
            return Err(SimError::Config("queue_depth must be at least 1".into()));
        }
        if r.mode == Mode::Scaled && !(r.scale > 0.0 && r.scale.is_finite()) {
            return Err(SimError::Config(format!("scale {} must be a positive number", r.scale)));
        }
        if !(drive.interface_mb_s > 0.0) {
            return Err(SimError::Config(format!("interface_mb_s {} must be positive", drive.interface_mb_s)));
        }
        if !(drive.write_cache_mib >= 0.0) {
            return Err(SimError::Config(format!("write_cache_mib {} must be >= 0", drive.write_cache_mib)));
        }
        if r.write_cache == Some(true) && drive.write_cache_mib == 0.0 {
            return Err(SimError::Config(format!(
                "the write cache was asked for, but drive '{}' has write_cache_mib = 0",
                drive.name
            )));
        }
        let cache_on = r.write_cache.unwrap_or(drive.write_cache_mib > 0.0);
        let cache_sectors =
            if cache_on { (drive.write_cache_mib * 1024.0 * 1024.0 / geom.sector_bytes() as f64) as u64 } else { 0 };
        let ns_per_sector = geom.sector_bytes() as f64 * 1000.0 / drive.interface_mb_s;
        let mut dev = Device::new(geom, mech, cfg.verify);
        let cache = WriteCache::new(cache_sectors, dev.geometry_arc());
        dev.set_crash_points(cfg.crash_at_ops.clone());
        let mut crash_after = cfg.crash_after.clone();
        crash_after.sort_unstable_by(|a, b| b.cmp(a));
        Ok(Simulation {
            metrics: HostMetrics::new(r.series_every),
            oracle: cfg.verify.then(Oracle::default),
            cfg,
            entry,
            params,
            dev,
            layer,
            reader,
            cache,
            host: HostCounts::default(),
            outstanding: BinaryHeap::new(),
            base_trace: None,
            prev_trace: 0,
            prev_issue: Nanos::ZERO,
            ns_per_sector,
            crash_after,
            crashes: 0,
            crash_requested: false,
            in_flight: vec![],
            scratch: vec![],
            batch: vec![],
            past_counters: Default::default(),
            crashes_during: Default::default(),
            finished: false,
        })
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
        if self.finished {
            return Ok(true);
        }
        for _ in 0..max_requests {
            if self.crash_requested {
                self.crash_requested = false;
                self.crash()?;
            }
            let Some(rec) = self.reader.next_record()? else {
                self.finish()?;
                return Ok(true);
            };
            match self.one(&rec) {
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

    /// Run to the end.
    pub fn run(&mut self) -> SimResult<()> {
        while !self.step(1 << 16)? {}
        Ok(())
    }

    fn convert(&self, rec: &TraceRecord) -> SimResult<(Lba, Sectors)> {
        let g = self.dev.geometry();
        let sb = g.sector_bytes() as u64;
        let cap = self.layer.host_capacity(g).0;
        let mut lba = rec.offset.0 / sb;
        let n = (rec.offset.0 + rec.len.0).div_ceil(sb) - lba;
        if n > cap {
            return Err(SimError::TraceFormat {
                at: crate::error::Location { file: self.cfg.trace.path.clone(), line: rec.line },
                msg: format!("request of {} bytes is larger than the drive ({} sectors)", rec.len.0, cap),
            });
        }
        if lba + n > cap {
            if !self.cfg.replay.fold {
                return Err(SimError::TraceFormat {
                    at: crate::error::Location { file: self.cfg.trace.path.clone(), line: rec.line },
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
        }
        Ok((Lba(lba), Sectors(n)))
    }

    fn issue_time(&mut self, rec: &TraceRecord) -> (Nanos, Nanos) {
        let base = *self.base_trace.get_or_insert(rec.time.0);
        let rel = rec.time.0.saturating_sub(base);
        let gap = rec.time.0.saturating_sub(self.prev_trace.max(base));
        self.prev_trace = self.prev_trace.max(rec.time.0);
        let (issue, trace_t) = match self.cfg.replay.mode {
            Mode::Queue | Mode::FlatOut => {
                let (q, gap) =
                    if self.cfg.replay.mode == Mode::Queue { (self.cfg.replay.queue_depth, gap) } else { (1, 0) };
                let mut cand = self.prev_issue.0 + gap;
                while let Some(&Reverse(c)) = self.outstanding.peek() {
                    if c > cand && self.outstanding.len() < q as usize {
                        break;
                    }
                    self.outstanding.pop();
                    cand = cand.max(c);
                }
                (Nanos(cand), Nanos(rel))
            }
            Mode::Scaled => {
                let t = Nanos((rel as f64 * self.cfg.replay.scale) as u64);
                (t.max(self.prev_issue), t)
            }
        };
        self.prev_issue = issue;
        (issue, issue.saturating_sub(trace_t))
    }

    fn one(&mut self, rec: &TraceRecord) -> SimResult<()> {
        if rec.len.0 == 0 {
            self.host.empty_skipped += 1;
            return Ok(());
        }
        let (lba, n) = self.convert(rec)?;
        let (issue, disparity) = self.issue_time(rec);
        self.background(issue)?;
        let xfer = Nanos((n.0 as f64 * self.ns_per_sector) as u64);
        let write = rec.op == Op::Write;
        let complete = if write { self.serve_write(issue, lba, n, xfer)? } else { self.serve_read(issue, lba, n, xfer)? };
        self.metrics.record(write, issue, complete, disparity);
        if self.cfg.replay.mode != Mode::Scaled {
            self.outstanding.push(Reverse(complete.0));
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

    fn serve_write(&mut self, issue: Nanos, lba: Lba, n: Sectors, xfer: Nanos) -> SimResult<Nanos> {
        let data = match &self.oracle {
            Some(o) => o.new_write(lba.0, n.0),
            None => vec![],
        };
        if n.0 <= self.cache.capacity() {
            let mut ready = issue;
            if !self.cache.fits(n.0) {
                self.dev.advance_to(issue);
                while !self.cache.fits(n.0) {
                    self.destage_batch()?;
                }
                ready = ready.max(self.dev.now());
            }
            if let Some(o) = &mut self.oracle {
                o.acknowledge(&data, false);
            }
            self.cache.insert(lba.0, n.0, data);
            self.host.cached_writes += 1;
            Ok(ready + xfer)
        } else {
            // Too large to cache: written through, superseding any cached copy.
            self.cache.invalidate(lba.0, n.0);
            self.dev.advance_to(issue);
            self.in_flight = data;
            let w = WriteReq { lba, sectors: n, cause: Cause::Host, data: &self.in_flight };
            self.layer.write(&mut self.dev, &w)?;
            self.host.layer_write_sectors += n.0;
            let data = std::mem::take(&mut self.in_flight);
            if let Some(o) = &mut self.oracle {
                o.acknowledge(&data, true);
            }
            Ok(self.dev.now().max(issue + xfer))
        }
    }

    fn serve_read(&mut self, issue: Nanos, lba: Lba, n: Sectors, xfer: Nanos) -> SimResult<Nanos> {
        let carries = self.oracle.is_some();
        self.scratch.clear();
        let complete = if !self.cache.is_empty() && self.cache.covers(lba.0, n.0) {
            self.host.cache_read_hits += 1;
            if carries {
                self.scratch.resize(n.0 as usize, Token::EMPTY);
            }
            issue + xfer
        } else {
            self.dev.advance_to(issue);
            self.layer.read(&mut self.dev, lba, n, &mut self.scratch)?;
            self.dev.now().max(issue + xfer)
        };
        if let Some(o) = &mut self.oracle {
            if self.scratch.len() != n.0 as usize {
                return Err(SimError::Medium(format!(
                    "layer '{}' returned {} sectors for a read of {} at LBA {}",
                    self.entry.name,
                    self.scratch.len(),
                    n.0,
                    lba.0
                )));
            }
            self.cache.overlay(lba.0, n.0, &mut self.scratch);
            o.check(lba.0, &self.scratch, "a host read", false, |op| self.dev.describe_op(op))?;
            o.read_blocks_checked += n.0;
        }
        Ok(complete)
    }

    /// Background work while the device would otherwise sit idle before `until`.
    fn background(&mut self, until: Nanos) -> SimResult<()> {
        while self.dev.now() < until {
            if !self.cache.is_empty() {
                self.destage_batch()?;
                continue;
            }
            if self.layer.wants_idle() {
                self.layer.idle(&mut self.dev, until)?;
            }
            break;
        }
        Ok(())
    }

    fn destage_batch(&mut self) -> SimResult<()> {
        let mut batch = std::mem::take(&mut self.batch);
        self.cache.take_batch_into(&mut batch);
        fn req(e: &write_cache::Extent) -> WriteReq<'_> {
            WriteReq { lba: Lba(e.lba), sectors: Sectors(e.len), cause: Cause::Destage, data: &e.data }
        }
        let r = if batch.len() == 1 {
            self.layer.write_batch(&mut self.dev, &[req(&batch[0])])
        } else {
            let reqs: Vec<WriteReq> = batch.iter().map(req).collect();
            self.layer.write_batch(&mut self.dev, &reqs)
        };
        if let Err(e) = r {
            self.batch = batch;
            return Err(e);
        }
        for e in &batch {
            self.host.layer_write_sectors += e.len;
            if let Some(o) = &mut self.oracle {
                o.made_durable(&e.data);
            }
        }
        self.batch = batch;
        Ok(())
    }

    /// Power loss: drop the write cache and the layer's volatile state,
    /// rebuild the layer from the medium, and (verifying) check every block.
    fn crash(&mut self) -> SimResult<()> {
        self.crashes += 1;
        let during = self.dev.take_crash_cause().map(|c| c.name()).unwrap_or("between-requests");
        *self.crashes_during.entry(during).or_insert(0) += 1;
        self.cache.clear();
        self.outstanding.clear();
        let in_flight = std::mem::take(&mut self.in_flight);
        if let Some(o) = &mut self.oracle {
            o.crash(&in_flight);
        }
        for (k, v) in self.layer.report() {
            if !layers::is_gauge(&k) {
                *self.past_counters.entry(k).or_insert(0.0) += v;
            }
        }
        let geom = self.dev.geometry_arc();
        loop {
            self.layer = (self.entry.build)(&self.params, &geom)?;
            match self.layer.recover(&mut self.dev) {
                Ok(()) => break,
                Err(SimError::Crash) => {
                    self.crashes += 1;
                    *self.crashes_during.entry("recovery").or_insert(0) += 1;
                    self.dev.take_crash_cause();
                }
                Err(e) => return Err(e),
            }
        }
        if self.oracle.is_some() {
            let during = format!("the scan after crash #{}", self.crashes);
            self.scan(&during, true)?;
        }
        Ok(())
    }

    /// Read every block the host ever wrote through the layer and check it.
    fn scan(&mut self, during: &str, settle: bool) -> SimResult<()> {
        let Some(mut o) = self.oracle.take() else { return Ok(()) };
        self.dev.set_accounting(false);
        let lbas = o.footprint();
        let geom = self.dev.geometry_arc();
        let mut i = 0;
        let mut result = Ok(());
        while i < lbas.len() {
            let start = lbas[i];
            let lt_end = geom.logical_track_start(geom.logical_track_of(Lba(start)) + 1).0;
            let mut j = i + 1;
            while j < lbas.len() && lbas[j] == lbas[j - 1] + 1 && lbas[j] < lt_end {
                j += 1;
            }
            let n = (j - i) as u64;
            self.scratch.clear();
            if let Err(e) = self.layer.read(&mut self.dev, Lba(start), Sectors(n), &mut self.scratch) {
                result = Err(e);
                break;
            }
            if let Err(e) = o.check(start, &self.scratch, during, settle, |op| self.dev.describe_op(op)) {
                result = Err(e);
                break;
            }
            o.scan_blocks_checked += n;
            i = j;
        }
        self.dev.set_accounting(true);
        self.oracle = Some(o);
        result
    }

    fn finish(&mut self) -> SimResult<()> {
        loop {
            let r = (|| {
                while !self.cache.is_empty() {
                    self.destage_batch()?;
                }
                Ok(())
            })();
            match r {
                Ok(()) => break,
                Err(SimError::Crash) => self.crash()?,
                Err(e) => return Err(e),
            }
        }
        self.metrics.flush_bucket();
        if self.oracle.is_some() {
            self.scan("the final scan", false)?;
        }
        self.finished = true;
        Ok(())
    }

    /// The report of the run so far (complete once finished).
    pub fn report(&self) -> Report {
        report::build(report::Inputs {
            cfg: &self.cfg,
            entry: self.entry,
            params: &self.params,
            dev: &self.dev,
            layer: self.layer.as_ref(),
            past_counters: &self.past_counters,
            crashes_during: &self.crashes_during,
            host: &self.host,
            metrics: &self.metrics,
            oracle: self.oracle.as_ref(),
            crashes: self.crashes,
            cache_sectors: self.cache.capacity(),
            finished: self.finished,
        })
    }
}

#[cfg(test)]
mod tests;
