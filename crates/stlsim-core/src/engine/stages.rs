//! The layer's background work: stages run while the drive is idle or when
//! overdue, writes that must wait for work in progress, write-cache
//! destage batches, and the counts the report gives of them (stages,
//! host waits, the WAF series, the layer's gauges).

use super::BackgroundCounts;
use super::Simulation;
use crate::device::Cause;
use crate::error::{SimError, SimResult};
use crate::front_end::write_cache;
use crate::layers::{self, Background, Needs, QueueView, QueuedRequest, StageOutcome, WriteReq};
use crate::medium::Token;
use crate::metrics::WafSeries;
use crate::units::{Lba, Nanos, Sectors};
use std::collections::VecDeque;

/// The layer's background work: its counts, the spans hosts waited in,
/// and the buffers a stage or destage batch reuses.
pub(super) struct StageState {
    pub(super) bg: BackgroundCounts,
    pub(super) bg_wait: Nanos,
    /// Spans `[start, end)` of recent stages, for host waiting times.
    pub(super) stage_spans: VecDeque<(u64, u64)>,
    /// The layer's series gauges (reused buffer).
    pub(super) gauges: Vec<(&'static str, f64)>,
    pub(super) batch: Vec<write_cache::Extent>,
    /// The writes of a destage batch (reused buffer; empty between batches).
    pub(super) batch_reqs: Vec<WriteReq<'static>>,
    /// The queue entries of a destage batch (reused buffer).
    pub(super) batch_queued: Vec<QueuedRequest>,
    /// The layer's optional calls (asked again when a crash rebuilds it).
    pub(super) needs: Needs,
}

/// The write-amplification series and where its next point falls.
pub(super) struct WafState {
    pub(super) series: WafSeries,
    pub(super) arrived: u64,
    /// Host writes until the next WAF series point.
    pub(super) countdown: u64,
}

impl Simulation {
    /// Record the layer's gauges for the series point just made.
    #[cold]
    pub(super) fn sample_layer(&mut self) {
        self.stage.gauges.clear();
        self.layer.series_gauges(&mut self.stage.gauges);
        if !self.stage.gauges.is_empty() || !self.metrics.series.layer.is_empty() {
            self.metrics.series.push_layer(&self.stage.gauges);
        }
    }

    /// A request issued at `issue` whose device work ended at `done`: add the
    /// stage time that fell in between to the host's waiting time.
    pub(super) fn count_stage_wait(&mut self, issue: Nanos, done: Nanos) {
        while self
            .stage
            .stage_spans
            .front()
            .is_some_and(|s| s.1 <= issue.0)
        {
            self.stage.stage_spans.pop_front();
        }
        let mut wait = 0;
        for &(a, b) in &self.stage.stage_spans {
            if a >= done.0 {
                break;
            }
            wait += b.min(done.0).saturating_sub(a.max(issue.0));
        }
        if wait > 0 {
            self.stage.bg.requests_waited += 1;
            self.stage.bg_wait += Nanos(wait);
        }
    }

    /// Count a host write arriving, and the WAF series point it may complete.
    #[inline]
    pub(super) fn write_arrived(&mut self, lba: Lba, n: Sectors) {
        if self.stage.needs.arrivals {
            self.layer.host_write_arrived(self.dev.geometry(), lba, n);
        }
        self.waf.arrived += 1;
        self.waf.countdown -= 1;
        if self.waf.countdown == 0 {
            self.waf.countdown = self.cfg.replay.waf_every;
            self.push_waf_point();
        }
    }

    pub(super) fn push_waf_point(&mut self) {
        let (_, w) = self.dev.totals();
        self.waf.series.push(
            self.waf.arrived,
            self.host.layer_write_sectors,
            w.sectors,
            self.dev.stage_write_sectors(),
        );
    }

    /// Run one stage of the layer's background work.
    pub(super) fn run_stage(
        &mut self,
        foreground: bool,
        queued: &[QueuedRequest],
    ) -> SimResult<StageOutcome> {
        let start = self.dev.now();
        self.dev.set_in_stage(true);
        let out = self.layer.stage(&mut self.dev, &QueueView::new(queued))?;
        self.dev.set_in_stage(false);
        let end = self.dev.now();
        match out {
            StageOutcome::Ran => {
                self.stage.bg.stages += 1;
                if foreground {
                    self.stage.bg.stages_foreground += 1;
                } else {
                    self.stage.bg.stages_idle += 1;
                }
                if end > start {
                    self.stage.stage_spans.push_back((start.0, end.0));
                }
            }
            StageOutcome::Aborted => {
                self.stage.bg.aborted += 1;
                if end > start {
                    self.stage.stage_spans.push_back((start.0, end.0));
                }
            }
            StageOutcome::Nothing => {}
        }
        Ok(out)
    }

    /// Background work before the request `next`, issued at `until`:
    /// overdue stages first (whatever the time), then — while the device
    /// would otherwise sit idle — destaging, then the layer's idle stages.
    pub(super) fn background(&mut self, next: QueuedRequest, until: Nanos) -> SimResult<()> {
        if !self.stage.needs.background {
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
                    self.stage.bg.postponed += 1;
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
    pub(super) fn host_write_waits_for_layer(
        &mut self,
        lba: Lba,
        n: Sectors,
        data: &[Token],
    ) -> SimResult<()> {
        if !self.stage.needs.background {
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
    pub(super) fn wait_for_layer(
        &mut self,
        ws: &[WriteReq],
        queued: &[QueuedRequest],
    ) -> SimResult<()> {
        if !self.stage.needs.background {
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

    pub(super) fn destage_batch(&mut self) -> SimResult<()> {
        let mut batch = std::mem::take(&mut self.stage.batch);
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
            let mut reqs = layers::recycle_writes(std::mem::take(&mut self.stage.batch_reqs));
            reqs.extend(batch.iter().map(req));
            let mut q = std::mem::take(&mut self.stage.batch_queued);
            q.clear();
            q.extend(reqs.iter().map(|w| QueuedRequest {
                write: true,
                lba: w.lba,
                sectors: w.sectors,
            }));
            let r = self
                .wait_for_layer(&reqs, &q)
                .and_then(|_| self.layer.write_batch(&mut self.dev, &reqs));
            self.stage.batch_reqs = layers::recycle_writes(reqs);
            self.stage.batch_queued = q;
            r
        };
        self.note_durable();
        if let Err(e) = r {
            self.stage.batch = batch;
            return Err(e);
        }
        for e in &batch {
            self.host.layer_write_sectors += e.len;
            if let (Some(v), false) = (&mut self.verifier, self.stage.needs.volatile_writes) {
                debug_assert!(v
                    .oracle_here()
                    .is_none_or(|o| e.data.iter().all(|t| o.expected(t.lba) == t.ver)));
                v.destaged(e.lba, e.len);
            }
        }
        self.stage.batch = batch;
        Ok(())
    }

    /// The layer's optional calls; a layer writing into a volatile memory
    /// buffer acknowledges writes before they are durable.
    pub(super) fn layer_needs(&self) -> Needs {
        let mut n = self.layer.needs();
        n.volatile_writes |= self.dev.volatile_memory();
        n
    }
}
