//! When requests arrive: trace records converted to sectors (scaled,
//! folded), issue times by the replay mode (as recorded, scaled, flat-out,
//! a queue of a given depth, closed loop), and the pending requests a
//! reordering scheduler chooses among.

use super::config::Mode;
use super::{Arrival, Simulation};
use crate::error::{SimError, SimResult};
use crate::front_end::controller::Scheduler;
use crate::trace::{Op, TraceRecord};
use crate::units::{Lba, Nanos, Sectors};

/// Where the trace's issue clock stands and the requests not yet served.
pub(super) struct ArrivalState {
    pub(super) base_trace: Option<u64>,
    pub(super) prev_trace: u64,
    pub(super) prev_issue: Nanos,
    /// The measured response time of the previous issued record (`closed` mode's think time).
    pub(super) prev_measured: Option<Nanos>,
    /// Requests the host has issued that the drive has not served yet (a
    /// scheduler other than `fcfs` picks among them).
    pub(super) pending: Vec<Arrival>,
    /// The record the reader hands over (FCFS), filled in place.
    pub(super) rec: TraceRecord,
    /// The next trace record, read but not yet issued.
    pub(super) peeked: Option<TraceRecord>,
    /// The drive's command scheduler (`fcfs` unless the drive's controller says otherwise).
    pub(super) scheduler: Scheduler,
}

impl Simulation {
    pub(super) fn step_requests(&mut self, max_requests: u64) -> SimResult<bool> {
        if self.finished {
            return Ok(true);
        }
        for _ in 0..max_requests {
            if self.crash.crash_requested {
                self.crash.crash_requested = false;
                self.crash()?;
            }
            // FCFS serves each record as it is read; another scheduler picks
            // among the requests the host has issued.
            let served = if self.arrivals.scheduler != Scheduler::Fcfs {
                match self.next_scheduled()? {
                    Some(a) => self.serve(a),
                    None => return self.end_of_trace(),
                }
            } else if self.reader.next_into(&mut self.arrivals.rec)? {
                let rec = self.arrivals.rec;
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
            if self.crash.crash_after.last() == Some(&self.host.requests) {
                self.crash.crash_after.pop();
                self.crash()?;
            }
        }
        Ok(false)
    }

    /// The trace is done: flush, scan, finish (`step`'s `true`).
    pub(super) fn end_of_trace(&mut self) -> SimResult<bool> {
        self.irregular.unknown_skipped = self.reader.skipped_unknown();
        self.finish()?;
        Ok(true)
    }

    /// The host range a record addresses, and whether it was folded.
    #[inline(always)]
    pub(super) fn convert(&self, rec: &TraceRecord) -> SimResult<(Lba, Sectors, bool)> {
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
    pub(super) fn convert_slow(
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

    pub(super) fn issue_time(&mut self, rec: &TraceRecord) -> SimResult<(Nanos, Nanos)> {
        let base = *self.arrivals.base_trace.get_or_insert(rec.time.0);
        self.irregular.timed |= rec.time.0 != base;
        if rec.time.0 < self.arrivals.prev_trace.max(base) {
            // Went backwards: replayed as if at the latest time seen.
            self.irregular.clamped += 1;
        }
        let rel = rec
            .time
            .0
            .max(self.arrivals.prev_trace)
            .saturating_sub(base);
        let gap = rec
            .time
            .0
            .saturating_sub(self.arrivals.prev_trace.max(base));
        self.arrivals.prev_trace = self.arrivals.prev_trace.max(rec.time.0);
        // The run's clock: zero unless a history came first.
        let t0 = self.dev.time_base().0;
        let (issue, trace_t) = match self.cfg.replay.mode {
            Mode::Queue | Mode::FlatOut => {
                let (q, gap) = if self.cfg.replay.mode == Mode::Queue {
                    (self.cfg.replay.queue_depth, gap)
                } else {
                    (1, 0)
                };
                let Some(next) = self.arrivals.prev_issue.0.checked_add(gap) else {
                    return Err(self.past_time_end(rec, None));
                };
                let cand =
                    self.outstanding
                        .issue_time(next, self.arrivals.pending.len(), q as usize);
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
                (t.max(self.arrivals.prev_issue), t)
            }
            Mode::Closed => {
                // DiskSim (disksim_iodriver.c, iodriver_access_complete, the
                // VALIDATE case) reads the next record when a request
                // completes and gives it the time simtime + NEXT_US
                // (disksim_iotrace.c, iotrace_validate_get_ioreq_event).
                let think = gap.saturating_sub(self.arrivals.prev_measured.map_or(0, |m| m.0));
                let done = self.outstanding.drain(self.arrivals.prev_issue.0);
                let Some(at) = done.checked_add(think) else {
                    return Err(self.past_time_end(rec, None));
                };
                (Nanos(at), Nanos(t0.saturating_add(rel)))
            }
        };
        self.arrivals.prev_issue = issue;
        Ok((issue, issue.saturating_sub(trace_t)))
    }

    /// The error for a request whose simulated arrival would pass 2^64 ns
    /// (584 years), where the clock would wrap or saturate.
    #[cold]
    pub(super) fn past_time_end(&self, rec: &TraceRecord, scale: Option<f64>) -> SimError {
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

    pub(super) fn one(&mut self, rec: &TraceRecord) -> SimResult<()> {
        match self.arrive(rec)? {
            Some(a) => self.serve(a),
            None => Ok(()),
        }
    }

    /// The host issues a trace record (None: an empty one, skipped).
    #[inline(always)]
    pub(super) fn arrive(&mut self, rec: &TraceRecord) -> SimResult<Option<Arrival>> {
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
        self.arrivals.prev_measured = measured;
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
    pub(super) fn next_scheduled(&mut self) -> SimResult<Option<Arrival>> {
        let q = self.cfg.replay.queue_depth as usize;
        while self.arrivals.pending.len() < q {
            let rec = match self.arrivals.peeked.take() {
                Some(r) => r,
                None => match self.reader.next_record()? {
                    Some(r) => r,
                    None => break,
                },
            };
            // Only what the host has issued by the time the drive is free
            // competes; a later request waits (it is issued, not yet seen).
            if !self.arrivals.pending.is_empty() {
                let base = self.arrivals.base_trace.unwrap_or(rec.time.0);
                let gap = rec
                    .time
                    .0
                    .saturating_sub(self.arrivals.prev_trace.max(base));
                if self.arrivals.prev_issue.0 + gap > self.dev.now().0 {
                    self.arrivals.peeked = Some(rec);
                    break;
                }
            }
            if let Some(a) = self.arrive(&rec)? {
                self.arrivals.pending.push(a);
            }
        }
        if self.arrivals.pending.is_empty() {
            return Ok(None);
        }
        let first = self
            .arrivals
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
        for (i, a) in self.arrivals.pending.iter().enumerate() {
            if a.issue > t {
                continue;
            }
            // Never ahead of an earlier request it overlaps when either
            // writes: the host sees its requests' data in the order it issued them.
            let (lo, hi) = (a.lba.0, a.lba.0 + a.n.0);
            let blocked = self.arrivals.pending[..i]
                .iter()
                .any(|b| (a.write || b.write) && b.lba.0 < hi && lo < b.lba.0 + b.n.0);
            if blocked {
                continue;
            }
            let cost = match self.arrivals.scheduler {
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
        Ok(Some(self.arrivals.pending.remove(i)))
    }
}
