//! Power loss and what survives it: crashes injected after a request or
//! before a physical operation, the layer rebuilt from what it made
//! durable, and the scans that check every block the host wrote.

use super::oracle::Oracle;
use super::Simulation;
use crate::error::{SimError, SimResult};
use crate::layers;
use crate::units::{Lba, Sectors};

/// Power losses: those still to inject and what the ones injected left.
pub(super) struct CrashState {
    pub(super) crash_after: Vec<u64>,
    pub(super) crashes: u64,
    pub(super) crash_requested: bool,
    /// Crashes by the cause of the operation they interrupted.
    pub(super) crashes_during: std::collections::BTreeMap<&'static str, u64>,
    /// Crashes that fell inside a stage of background work.
    pub(super) crashes_in_stages: u64,
    /// Layer counters of incarnations before crashes.
    pub(super) past_counters: layers::LayerReport,
    /// Intervals completed by incarnations before crashes.
    pub(super) past_intervals: u64,
}

impl Simulation {
    /// Host data a layer with volatile acknowledgements has made durable.
    pub(super) fn note_durable(&mut self) {
        if self.stage.needs.volatile_writes {
            let d = self.dev.take_made_durable();
            if let Some(v) = &mut self.verifier {
                v.made_durable(&d);
            }
        }
    }

    /// Power loss: drop the write cache and the layer's volatile state,
    /// rebuild the layer from the medium, and (verifying) check every block.
    pub(super) fn crash(&mut self) -> SimResult<()> {
        self.crash.crashes += 1;
        let during = self
            .dev
            .take_crash_cause()
            .map(|c| c.name())
            .unwrap_or("between-requests");
        *self.crash.crashes_during.entry(during).or_insert(0) += 1;
        if self.dev.take_crash_in_stage() {
            self.crash.crashes_in_stages += 1;
        }
        self.dev.set_in_stage(false);
        self.note_durable();
        self.dev.power_cycle();
        self.dev.set_reading_ahead(false);
        self.cache.clear();
        if let Some(rc) = &mut self.front.read_cache {
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
        layers::fold_past(&mut self.crash.past_counters, self.layer.report());
        self.crash.past_intervals += self.layer.intervals_completed().unwrap_or(0);
        let geom = self.dev.geometry_arc();
        loop {
            self.layer = (self.entry.build)(&self.params, &geom)?;
            if let Some((lo, hi)) = self.trace_range {
                self.layer.set_trace_range(Lba(lo), Lba(hi))?;
            }
            self.stage.needs = self.layer_needs();
            // A host-side layer's recovery ends with a flush, as a host's
            // would: what it restored is on the media before new writes.
            match self
                .layer
                .recover(&mut self.dev)
                .and_then(|_| self.dev.flush().map(|_| ()))
            {
                Ok(()) => break,
                Err(SimError::Crash) => {
                    self.crash.crashes += 1;
                    *self.crash.crashes_during.entry("recovery").or_insert(0) += 1;
                    self.dev.take_crash_cause();
                    self.dev.take_crash_in_stage();
                }
                Err(e) => return Err(e),
            }
        }
        if self.verifier.is_some() {
            self.scan(Some(format!(
                "the scan after crash #{}",
                self.crash.crashes
            )))?;
        }
        Ok(())
    }

    /// Host ranges a scan must read: every LBA the host wrote, and the
    /// prefilled LBAs of every track the run read, wrote or damaged.
    pub(super) fn scan_ranges(&self, o: &Oracle) -> Vec<(u64, u64)> {
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
    pub(super) fn scan(&mut self, inline: Option<String>) -> SimResult<()> {
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
}
