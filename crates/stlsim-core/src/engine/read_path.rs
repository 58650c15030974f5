//! The drive's front end above a drive-managed layer: the controller's
//! command overheads, the write cache (absorb, fast writes, destage), the
//! on-drive read cache with read-ahead, and the read path that DiskSim's
//! validated drives are measured against (hits, partial hits, media reads
//! per block). The front end's state and what needs neither the layer nor
//! the device are in [`crate::front_end`] ([`crate::front_end::drive_front`]);
//! this file is the engine's coupling of it with the write cache, the layer
//! and the device. A host-side layer runs beneath the front end's other
//! placement ([`crate::front_end::queued_cache`]), attached to the device.

use super::config::Mode;
use super::{Arrival, KeptLatency, Simulation};
use crate::device::{Cause, ReadPiece};
use crate::error::{SimError, SimResult};
use crate::front_end::controller::{AheadCtx, Lookup, ReadAheadExtent, ReadCache, TrackSpan};
use crate::front_end::link::Link;
use crate::layers::{QueuedRequest, StageOutcome, WriteReq};
use crate::mechanics::HeadState;
use crate::medium::Token;
use crate::units::{Lba, Nanos, Sectors};

impl Simulation {
    /// Serve an issued request, and count it.
    #[inline(always)]
    pub(super) fn serve(&mut self, a: Arrival) -> SimResult<()> {
        let Arrival {
            lba,
            n,
            write,
            issue,
            disparity,
            measured,
        } = a;
        if self.front.read_cache.is_some() {
            self.read_ahead(issue)?;
        }
        // Most requests find nothing to do first: tested here, not in a call.
        if self.stage.needs.background
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
        let xfer = self.front.link.time(n.0);
        let (complete, device_done) = if write {
            self.serve_write(issue, lba, n, xfer)?
        } else {
            self.serve_read(issue, lba, n, xfer)?
        };
        if let Some(done) = device_done {
            if !self.stage.stage_spans.is_empty() {
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

    /// Serve a write; returns its completion time and, when it needed the
    /// device, when the device work it waited for ended.
    pub(super) fn serve_write(
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
        if let Some(rc) = &mut self.front.read_cache {
            rc.written(lba.0, n.0, &data);
        }
        let done_oh = self.front.overheads.completion(true);
        if n.0 <= self.cache.capacity() && self.front.overheads.destage_at_once {
            self.serve_fast_write(issue, lba, n, xfer, data)
        } else if n.0 <= self.cache.capacity() {
            let mut ready = issue + self.front.overheads.command(true, true);
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
            let gate = self
                .front
                .overheads
                .write_link_per_block
                .then_some(issue + oh);
            self.write_to_layer(lba, n, data, gate)?;
            let done = self.dev.now();
            Ok((done.max(issue + oh + xfer) + done_oh, Some(done)))
        }
    }

    /// A write the write cache absorbs, as DiskSim's fast writes
    /// ([`crate::front_end::controller::ControllerConfig::destage_at_once`]): its data
    /// crosses the link from the end of its command overhead, or, when the
    /// media is still writing an earlier fast write this one does not
    /// append to, from the end of that (`disk_write_arrive` finds the
    /// access not stoppable, `disk_buffer_stopable_access`); it completes
    /// once its data has crossed (`disk_buffer_transfer_size`). Its media
    /// write starts at once, positioning from the end of the command
    /// overhead or of the earlier media write (`disk_check_hda`), each block
    /// written once buffered (`disk_buffer_sector_done`).
    pub(super) fn serve_fast_write(
        &mut self,
        issue: Nanos,
        lba: Lba,
        n: Sectors,
        xfer: Nanos,
        data: Vec<Token>,
    ) -> SimResult<(Nanos, Option<Nanos>)> {
        let done_oh = self.front.overheads.completion(true);
        let ready = issue + self.front.overheads.command(true, true);
        let busy = self.front.fast_busy_until;
        let link = if busy > issue && lba.0 != self.front.fast_end {
            ready.max(busy)
        } else {
            ready
        };
        self.cache.invalidate(lba.0, n.0);
        self.dev.advance_to(ready);
        self.write_to_layer(lba, n, data, Some(link))?;
        self.host.cached_writes += 1;
        self.front.fast_busy_until = self.dev.now();
        self.front.fast_end = lba.0 + n.0;
        Ok((link + xfer + done_oh, None))
    }

    /// A host write handed to the layer and acknowledged once the layer
    /// returns (written through, or DiskSim's fast write): it waits for the
    /// layer's background work, is in flight while the layer writes (a
    /// power loss then leaves it uncertain), and with `gate` its media
    /// writes take each block only once the link has brought it, the link
    /// starting then.
    /// Hand the write held in `in_flight` to the layer part by part
    /// ([`crate::layers::Layer::write_part`]): when the layer takes only the
    /// front (its buffer is full), a stage of its background work runs,
    /// counted as a foreground stage like any other, before the rest. The
    /// link's gate on the write's blocks is set aside during the stage.
    fn write_in_parts(&mut self, lba: Lba, n: Sectors) -> SimResult<()> {
        let mut done = 0u64;
        let mut stuck = 0;
        loop {
            let w = WriteReq {
                lba: Lba(lba.0 + done),
                sectors: Sectors(n.0 - done),
                cause: Cause::Host,
                data: if self.in_flight.is_empty() {
                    &[]
                } else {
                    &self.in_flight[done as usize..]
                },
            };
            let placed = self.layer.write_part(&mut self.dev, &w, done == 0)?.0;
            if placed > n.0 - done {
                return Err(SimError::Layer(format!(
                    "layer '{}' says it stored {placed} sectors of a write of {} at LBA {}",
                    self.entry.name,
                    n.0 - done,
                    lba.0 + done
                )));
            }
            done += placed;
            if done == n.0 {
                return Ok(());
            }
            let gate = self.dev.suspend_write_gate();
            let out = self.run_stage(true, &[]);
            self.dev.resume_write_gate(gate);
            stuck = if placed == 0 && out? == StageOutcome::Nothing {
                stuck + 1
            } else {
                0
            };
            if stuck > 1 {
                return Err(SimError::Layer(format!(
                    "layer '{}' stored {done} of a write's {} sectors at LBA {} and has no background work that would make room for the rest",
                    self.entry.name, n.0, lba.0
                )));
            }
        }
    }

    pub(super) fn write_to_layer(
        &mut self,
        lba: Lba,
        n: Sectors,
        data: Vec<Token>,
        gate: Option<Nanos>,
    ) -> SimResult<()> {
        self.host_write_waits_for_layer(lba, n, &data)?;
        self.in_flight = data;
        if let Some(from) = gate {
            self.dev.gate_writes(from, self.front.link.ns_per_sector());
        }
        let r = self.write_in_parts(lba, n);
        if gate.is_some() {
            self.dev.ungate_writes();
        }
        self.note_durable();
        r?;
        self.host.layer_write_sectors += n.0;
        let data = std::mem::take(&mut self.in_flight);
        let durable = !self.stage.needs.volatile_writes;
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
    pub(super) fn read_ahead(&mut self, issue: Nanos) -> SimResult<()> {
        self.front.interrupted = None;
        let Some(rc) = &mut self.front.read_cache else {
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
                self.front.interrupted = Some((p, start));
            }
            return Ok(());
        }
        let n = self.ahead_sectors(next, room, start, issue);
        if n == 0 {
            if keep {
                self.front.interrupted = Some((p, start));
            }
            return Ok(());
        }
        self.dev.advance_to(start);
        self.front.ahead.clear();
        self.dev.set_reading_ahead(true);
        let r = self
            .layer
            .read(&mut self.dev, Lba(next), Sectors(n), &mut self.front.ahead);
        self.dev.set_reading_ahead(false);
        r?;
        if !self.front.ahead.is_empty() {
            self.cache.overlay(next, n, &mut self.front.ahead);
        }
        if let Some(rc) = &mut self.front.read_cache {
            rc.prefetched(&p, n, &self.front.ahead);
            self.host.read_ahead_sectors += n;
        }
        if keep && n < room {
            self.front.interrupted = Some((p, self.dev.now()));
        }
        Ok(())
    }

    /// How many of the `room` sectors from `next` a read-ahead starting at
    /// `start` has read whole when a request arriving at `issue` stops it:
    /// the device's own timing of each track's piece (seek or head switch,
    /// rotational wait, transfer), so the read-ahead never runs past the
    /// arrival (DiskSim stops it there, `disk_buffer_stopable_access`).
    pub(super) fn ahead_sectors(&self, next: u64, room: u64, start: Nanos, issue: Nanos) -> u64 {
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
    pub(super) fn ahead_ctx(&self, rc: &ReadCache, start: u64, end: u64) -> AheadCtx {
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
    pub(super) fn start_media_command(&mut self, issue: Nanos, write: bool) -> Nanos {
        let oh = self.front.overheads.command(write, false);
        if self.front.overheads.destage_at_once {
            // DiskSim positions once the command overhead is done or the
            // media work in progress ends, whichever is later (disk_check_hda).
            self.dev.advance_to(issue + oh);
        } else {
            self.dev.advance_to(issue);
            self.dev.advance_to(self.dev.now() + oh);
        }
        oh
    }

    /// When a read's data has crossed the host link block by block
    /// ([`crate::front_end::controller::ControllerConfig::read_link_per_block`]): the
    /// link starts at `started` with the `have` blocks already buffered,
    /// then sends each block read from the media (`pieces`, in LBA order)
    /// once it is buffered and the block before it is sent, one block per
    /// link block time. Within a piece the blocks arrive one sector time
    /// apart, so the last block is sent at the latest of: the link sending
    /// the piece straight on, the piece's first block buffered and the whole
    /// piece sent after it, the piece's last block buffered and sent.
    pub(super) fn read_done_per_block(
        link: &Link,
        started: Nanos,
        have: u64,
        pieces: &[ReadPiece],
    ) -> Nanos {
        let link = |k: u64| link.time_of(k);
        let mut sent = started + link(have);
        for p in pieces {
            let c = p.count as u64;
            sent = (sent + link(c))
                .max(p.first_ready + link(c))
                .max(p.end + link(1));
        }
        sent
    }

    pub(super) fn serve_read(
        &mut self,
        issue: Nanos,
        lba: Lba,
        n: Sectors,
        xfer: Nanos,
    ) -> SimResult<(Nanos, Option<Nanos>)> {
        let carries = self.verifier.is_some();
        self.scratch.clear();
        let done_oh = self.front.overheads.completion(false);
        let (complete, device) = if !self.cache.is_empty() && self.cache.covers(lba.0, n.0) {
            self.host.cache_read_hits += 1;
            if carries {
                self.scratch.resize(n.0 as usize, Token::EMPTY);
            }
            (
                issue + self.front.overheads.command(false, true) + xfer + done_oh,
                None,
            )
        } else {
            // What the read cache holds of the read's first sectors.
            let found = match &mut self.front.read_cache {
                Some(rc) => rc.lookup(lba.0, n.0),
                None => Lookup::Miss,
            };
            let have = match found {
                Lookup::Full => n.0,
                Lookup::Prefix(h) => h,
                Lookup::Miss => 0,
            };
            if let Some(rc) = &self.front.read_cache {
                rc.copy_out(lba.0, have, &mut self.scratch);
            }
            // A hit on the segment being read ahead lets the read-ahead go on
            // (DiskSim's disk_buffer_attempt_access_swap).
            let go_on = match (self.front.interrupted.take(), &self.front.read_cache) {
                (Some((p, t)), Some(rc)) if have > 0 && rc.segment_of(lba.0) == Some(p.seg) => {
                    Some((p, t))
                }
                _ => None,
            };
            if have == n.0 {
                self.host.read_cache_hits += 1;
                let end = lba.0 + n.0;
                if let Some((p, t)) = go_on {
                    if let Some(rc) = &self.front.read_cache {
                        let ctx = self.ahead_ctx(rc, lba.0, end);
                        let until =
                            rc.read_ahead_until(lba.0, end, rc.segment_start(p.seg), ctx.track);
                        if let Some(rc) = &mut self.front.read_cache {
                            rc.resume(p, t, until);
                        }
                    }
                } else if let Some(rc) =
                    self.front.read_cache.as_ref().filter(|rc| rc.on_idle_hit())
                {
                    // DiskSim seeks for it once the command overhead is
                    // done, which it times as a miss's (overhead_done).
                    if let Some(i) = rc.segment_of(lba.0) {
                        let track = self.ahead_ctx(rc, lba.0, end).track;
                        let until = rc.hit_bound(i, lba.0, end, track);
                        let from = issue + self.front.overheads.peek(false, false);
                        if let Some(rc) = &mut self.front.read_cache {
                            rc.restart(i, from, until);
                        }
                    }
                }
                (self.front.hit_link_start(issue) + xfer + done_oh, None)
            } else {
                // A prefix hit transfers what is buffered and reads the rest.
                if have > 0 {
                    self.host.read_cache_partial_hits += 1;
                }
                let oh = match go_on {
                    // The read-ahead reads the rest on, from where it was:
                    // no new positioning, the command overhead overlapping.
                    Some(_) => self.front.overheads.command(false, false),
                    None => self.start_media_command(issue, false),
                };
                // The link may start once the command is processed; a read
                // arriving while a fast write's media write goes on waits
                // for it too.
                let started = if go_on.is_none() && issue < self.front.fast_busy_until {
                    (issue + oh).max(self.front.fast_busy_until)
                } else {
                    issue + oh
                };
                let floor = go_on.map_or(0, |(p, _)| p.until);
                let from = self.scratch.len();
                let (at, m) = (Lba(lba.0 + have), Sectors(n.0 - have));
                let per_block = self.front.overheads.read_link_per_block;
                if per_block {
                    self.dev.note_reads();
                }
                let r = self.layer.read(&mut self.dev, at, m, &mut self.scratch);
                let sent = if per_block {
                    let pieces = self.dev.noted_reads();
                    Some(Self::read_done_per_block(
                        &self.front.link,
                        started,
                        have,
                        pieces,
                    ))
                } else {
                    None
                };
                r?;
                let done = self.dev.now();
                let ctx = match &self.front.read_cache {
                    Some(rc) => AheadCtx {
                        floor,
                        ..self.ahead_ctx(rc, lba.0, lba.0 + n.0)
                    },
                    None => AheadCtx::default(),
                };
                if let Some(rc) = &mut self.front.read_cache {
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
                    None => self.front.read_done(done, started, xfer),
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
}
