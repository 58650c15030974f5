//! `hm-fluid` and `hm-fluid-loop`: the circular-log persistent buffer of
//! FluidSMR (Wu et al., paper 004's reference \[16\]), as paper 004 section
//! 6.1 describes its two baselines "Fluid" and "Fluid_loop".
//!
//! * **Layout**: the buffer is one circular log of 4 KiB slots. A block not
//!   yet buffered is appended at the head; a block already buffered is
//!   updated in place (a write hit).
//! * **Cleaning** (when a write finds too little room between head and
//!   tail): FIFO from the tail. The tail block's native zone is the victim:
//!   every buffered block of that zone, wherever it lies in the log, is
//!   written back in one zone write-back (shared: [`super::WriteBack`]);
//!   the tail then skips the freed slots. Holes freed in the middle of the
//!   log are reused only when the tail reaches them (a log, not a heap).
//! * **Fluid_loop**: a tail block whose zone is *hot* is re-queued at the
//!   head instead of being written back. Choice where paper 004 does not
//!   give FluidSMR's criterion: a zone is hot when one of its buffered
//!   blocks was updated in place during the current or the previous pass
//!   of the tail around the log (`hot_passes`, default 1 previous pass): a
//!   zone that stops being updated cools after one more pass and is then
//!   written back. When the log is full, the head is at the tail, so
//!   re-queuing the tail block costs no I/O (it is already where the head
//!   would write it); otherwise it is one read and one append. At most one
//!   log's worth of blocks is re-queued before a write-back is forced.
//! * **Crash**: the head and tail are rebuilt as the ends of the largest
//!   run of free slots; the hot-zone history is volatile and starts afresh.

use super::{Buffer, Placement, Work, ZoneMap, COMMON_PARAMS};
use crate::error::SimResult;
use crate::geometry::{Geometry, LayoutKind};
use crate::layers::{Layer, LayerEntry, LayerReport, LayoutNeed, ParamKind, ParamSpec, Params};
use rustc_hash::FxHashMap;

const LOOP_PARAMS: [ParamSpec; 5] = [
    COMMON_PARAMS[0],
    COMMON_PARAMS[1],
    COMMON_PARAMS[2],
    COMMON_PARAMS[3],
    ParamSpec {
        name: "hot_passes",
        kind: ParamKind::Int,
        unit: "passes",
        default: "1",
        doc: "a zone stays hot for this many passes of the log tail after an in-place update of one of its blocks",
    },
];

/// Registry entry of `hm-fluid`.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "hm-fluid",
    runs_in: crate::layers::RunsIn::Host,
    summary:
        "host-managed SMR: circular-log buffer in CMR zones, in-place updates, FIFO zone write-back",
    paper: "004 section 6.1 (Fluid, after FluidSMR)",
    layout: LayoutNeed::Kind(LayoutKind::Zoned),
    params: &COMMON_PARAMS,
    build: |p: &Params, g: &Geometry| -> SimResult<Box<dyn Layer>> {
        Ok(Box::new(super::BufferLayer::build(
            "hm-fluid",
            p,
            g,
            |_p, _z, slots| Ok(Box::new(Fluid::new(slots, None))),
        )?))
    },
};

/// Registry entry of `hm-fluid-loop`.
pub static ENTRY_LOOP: LayerEntry = LayerEntry {
    name: "hm-fluid-loop",
    runs_in: crate::layers::RunsIn::Host,
    summary: "host-managed SMR: Fluid, with blocks of hot zones re-queued at the log head instead of written back",
    paper: "004 section 6.1 (Fluid_loop, after FluidSMR's loop-back logging)",
    layout: LayoutNeed::Kind(LayoutKind::Zoned),
    params: &LOOP_PARAMS,
    build: |p: &Params, g: &Geometry| -> SimResult<Box<dyn Layer>> {
        Ok(Box::new(super::BufferLayer::build("hm-fluid-loop", p, g, make_loop)?))
    },
};

fn make_loop(p: &Params, _z: &ZoneMap, slots: u64) -> SimResult<Box<dyn Placement>> {
    Ok(Box::new(Fluid::new(slots, Some(p.u64("hot_passes")))))
}

/// The circular log's pointers and the loop policy's hot-zone history.
#[derive(Debug)]
pub struct Fluid {
    slots: u64,
    head: u64,
    tail: u64,
    /// Slots from tail to head (live blocks and holes).
    span: u64,
    /// `Some(passes)` for Fluid_loop.
    hot_passes: Option<u64>,
    pass: u64,
    last_hit_pass: FxHashMap<u64, u64>,
    loops_since_writeback: u64,
    looped: u64,
    looped_free: u64,
    /// A finished write-back's victim list, filled again for the next.
    spare: Vec<(u32, u32)>,
}

impl Fluid {
    /// A log of `slots` slots; `hot_passes` makes it Fluid_loop.
    pub fn new(slots: u64, hot_passes: Option<u64>) -> Fluid {
        Fluid {
            slots,
            head: 0,
            tail: 0,
            span: 0,
            hot_passes,
            pass: 0,
            last_hit_pass: FxHashMap::default(),
            loops_since_writeback: 0,
            looped: 0,
            looped_free: 0,
            spare: vec![],
        }
    }

    fn advance_tail(&mut self, buf: &Buffer) {
        while self.span > 0 && buf.owner(self.tail as u32).is_none() {
            self.step_tail();
            self.span -= 1;
        }
    }

    fn step_tail(&mut self) {
        self.tail += 1;
        if self.tail == self.slots {
            self.tail = 0;
            self.pass += 1;
        }
    }

    fn hot(&self, nz: u64) -> bool {
        match self.hot_passes {
            Some(k) => self
                .last_hit_pass
                .get(&nz)
                .is_some_and(|&p| p + k >= self.pass),
            None => false,
        }
    }
}

fn new_blocks(buf: &Buffer, ws: &[(u64, u64)]) -> u64 {
    ws.iter()
        .map(|&(l, n)| (l..l + n).filter(|&h| buf.slot_of(h).is_none()).count() as u64)
        .sum()
}

impl Placement for Fluid {
    fn fits(&self, buf: &Buffer, ws: &[(u64, u64)]) -> bool {
        new_blocks(buf, ws) <= self.slots - self.span
    }
    fn place(
        &mut self,
        buf: &mut Buffer,
        lba: u64,
        n: u64,
        _first: bool,
        out: &mut Vec<(u32, u64)>,
    ) -> SimResult<u64> {
        for h in lba..lba + n {
            match buf.slot_of(h) {
                Some(s) => {
                    buf.counts.write_hits += 1;
                    if self.hot_passes.is_some() {
                        self.last_hit_pass.insert(buf.zones.split(h).0, self.pass);
                    }
                    out.push((s, h));
                }
                None if self.span == self.slots => return Ok(h - lba),
                None => {
                    out.push((self.head as u32, h));
                    self.head = (self.head + 1) % self.slots;
                    self.span += 1;
                }
            }
        }
        Ok(n)
    }
    fn next_work(
        &mut self,
        buf: &Buffer,
        _dev: &crate::device::Device,
        _waiting: &[(u64, u64)],
    ) -> Work {
        self.advance_tail(buf);
        if self.span == 0 {
            return Work::None;
        }
        let h = buf.owner(self.tail as u32).expect("tail holds a block");
        let nz = buf.zones.split(h).0;
        if self.hot(nz) && self.loops_since_writeback < self.slots {
            let (from, to) = (self.tail as u32, self.head as u32);
            self.loops_since_writeback += 1;
            self.looped += 1;
            self.looped_free += (from == to) as u64;
            self.step_tail();
            self.head = (self.head + 1) % self.slots;
            return Work::Move { from, to };
        }
        let mut victims = std::mem::take(&mut self.spare);
        buf.zone_victims_into(nz, &mut victims);
        Work::WriteBack(nz, victims)
    }
    fn recycle(&mut self, victims: Vec<(u32, u32)>) {
        self.spare = victims;
    }
    fn work_done(&mut self, buf: &Buffer, work: &Work) {
        if let Work::WriteBack(nz, _) = work {
            self.loops_since_writeback = 0;
            self.last_hit_pass.remove(nz);
            self.advance_tail(buf);
        }
    }
    fn rebuild(&mut self, buf: &Buffer) {
        let n = self.slots;
        let used = |s: u64| buf.owner(s as u32).is_some();
        if (0..n).all(|s| !used(s)) {
            (self.head, self.tail, self.span) = (0, 0, 0);
            return;
        }
        // The largest circular run of free slots: the head is its start, the tail its end.
        let (mut best, mut best_start, mut run, mut run_start) = (0, 0, 0, 0);
        for i in 0..2 * n {
            let s = i % n;
            if used(s) {
                run = 0;
            } else {
                if run == 0 {
                    run_start = s;
                }
                run += 1;
                if run > best && run <= n {
                    (best, best_start) = (run, run_start);
                }
            }
        }
        self.head = best_start;
        self.tail = (best_start + best) % n;
        self.span = n - best;
    }
    fn report(&self, r: &mut LayerReport) {
        r.insert("log_span_blocks".into(), self.span as f64);
        if self.hot_passes.is_some() {
            r.insert("looped_blocks".into(), self.looped as f64);
            r.insert("looped_blocks_in_place".into(), self.looped_free as f64);
        }
    }
}
