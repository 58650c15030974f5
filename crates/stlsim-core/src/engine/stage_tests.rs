//! Background work in stages: host requests cut in between a layer's
//! stages, a layer abandons its work when a queued write touches it, writes
//! wait for work in progress, and layers count writes where the papers do.

use super::tests::{cfg, imr_drive, rec, run, small_drive};
use super::*;
use crate::device::Cause;
use crate::device::OpKind;
use crate::geometry::Geometry;
use crate::layers::WriteReq;
use crate::layers::{cmr, LayoutNeed};
use crate::layers::{Background, QueueView, StageOutcome};
use crate::medium::prefill::PrefillSpec;
use crate::trace::{Op, VecTrace};
use std::collections::HashMap;

// ---- a garbage-collecting test layer that can abort ----

const LOG_TRACKS: u64 = 10;
const CHUNK: usize = 8;

/// Test only: host writes are appended to a log on the drive's last
/// `LOG_TRACKS` tracks (a volatile map says where each LBA's newest copy
/// is). Garbage collection copies the live log blocks home, `CHUNK` blocks a
/// stage, and rewinds the log once none is left. It is overdue from half
/// full; a write that does not fit waits. At a stage boundary a pass that
/// is not forced (no waiting write needs the room) is abandoned when a
/// queued write touches the home range it is cleaning.
static LOG_GC: LayerEntry = LayerEntry {
    name: "log-gc",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "test only: a log with staged, abortable garbage collection",
    paper: "-",
    layout: LayoutNeed::AsConventional,
    params: &[],
    build: |_, g| Ok(Box::new(LogGc::new(g))),
};

struct Pass {
    victims: Vec<(u64, u64)>,
    next: usize,
    lo: u64,
    hi: u64,
}

struct LogGc {
    log_start: u64,
    log_len: u64,
    wp: u64,
    map: HashMap<u64, u64>,
    pass: Option<Pass>,
}

impl LogGc {
    fn new(g: &Geometry) -> LogGc {
        let log_len = LOG_TRACKS * g.sectors_in(crate::units::Track(0)) as u64;
        LogGc {
            log_start: g.capacity().0 - log_len,
            log_len,
            wp: 0,
            map: HashMap::new(),
            pass: None,
        }
    }
    fn forced(&self, queue: &QueueView) -> bool {
        queue
            .requests()
            .iter()
            .any(|r| r.write && r.sectors.0 > self.log_len - self.wp)
    }
}

impl Layer for LogGc {
    fn host_capacity(&self, _g: &Geometry) -> Sectors {
        Sectors(self.log_start)
    }
    fn needs(&self) -> crate::layers::Needs {
        crate::layers::Needs {
            arrivals: false,
            background: true,
            ..Default::default()
        }
    }
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        for l in lba.0..lba.0 + n.0 {
            let at = self.map.get(&l).map(|p| self.log_start + p).unwrap_or(l);
            cmr::read_home(dev, Cause::Host, Lba(at), Sectors(1), out)?;
        }
        Ok(())
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        assert!(
            self.wp + w.sectors.0 <= self.log_len,
            "the engine let a write in that does not fit"
        );
        let at = WriteReq {
            lba: Lba(self.log_start + self.wp),
            ..*w
        };
        cmr::write_home(dev, &at)?;
        for i in 0..w.sectors.0 {
            self.map.insert(w.lba.0 + i, self.wp + i);
        }
        self.wp += w.sectors.0;
        Ok(())
    }
    fn background(&self) -> Background {
        if self.wp == 0 {
            Background::None
        } else if 2 * self.wp >= self.log_len {
            Background::Overdue
        } else {
            Background::Idle
        }
    }
    fn write_must_wait(&mut self, _g: &Geometry, ws: &[WriteReq]) -> bool {
        ws.iter().map(|w| w.sectors.0).sum::<u64>() > self.log_len - self.wp
    }
    fn stage(&mut self, dev: &mut Device, queue: &QueueView) -> SimResult<StageOutcome> {
        if self.pass.is_none() {
            let mut victims: Vec<(u64, u64)> = self.map.iter().map(|(&l, &p)| (p, l)).collect();
            victims.sort_unstable();
            let lo = victims.iter().map(|v| v.1).min().unwrap_or(0);
            let hi = victims.iter().map(|v| v.1).max().unwrap_or(0);
            self.pass = Some(Pass {
                victims,
                next: 0,
                lo,
                hi,
            });
        }
        let (lo, hi) = self.pass.as_ref().map(|p| (p.lo, p.hi)).unwrap_or((0, 0));
        if !self.forced(queue) && queue.write_touches(Lba(lo), Sectors(hi - lo + 1)) {
            self.pass = None;
            return Ok(StageOutcome::Aborted);
        }
        let mut pass = self.pass.take().expect("made above");
        let end = (pass.next + CHUNK).min(pass.victims.len());
        for &(pos, l) in &pass.victims[pass.next..end] {
            if self.map.get(&l) != Some(&pos) {
                continue; // rewritten since: the newer copy is further on in the log
            }
            let mut buf = vec![];
            cmr::read_home(
                dev,
                Cause::Gc,
                Lba(self.log_start + pos),
                Sectors(1),
                &mut buf,
            )?;
            let w = WriteReq {
                lba: Lba(l),
                sectors: Sectors(1),
                cause: Cause::Gc,
                data: &buf,
            };
            cmr::write_home(dev, &w)?;
            self.map.remove(&l);
        }
        pass.next = end;
        if pass.next < pass.victims.len() {
            self.pass = Some(pass);
        } else if self.map.is_empty() {
            self.wp = 0;
        }
        Ok(StageOutcome::Ran)
    }
}

#[test]
fn a_gc_aborts_when_a_queued_write_touches_its_range_and_loses_nothing() {
    let mut c = cfg(small_drive("cmr"), "log-gc");
    c.verify = true;
    // Back-to-back writes over a small hot range (the device is never
    // idle: GC runs overdue, with writes queued), reads mixed in.
    let recs: Vec<_> = (0..3000u64)
        .map(|i| {
            let op = if i % 7 == 3 { Op::Read } else { Op::Write };
            rec(i * 300, op, (i * 7919) % 1500, 1 + i % 8)
        })
        .collect();
    let mut s = Simulation::with_layer(c, &LOG_GC, Box::new(VecTrace::new(recs))).unwrap();
    s.run().unwrap();
    let r = s.report();
    println!("{:?}", r.background);
    assert!(r.background.aborted > 10, "{:?}", r.background);
    assert!(r.background.stages > 100, "{:?}", r.background);
    assert!(r.background.stages_foreground > 0, "{:?}", r.background);
    assert!(
        r.background.requests_waited > 0 && r.background.host_wait_s > 0.0,
        "{:?}",
        r.background
    );
    assert!(r.verification.scan_blocks_checked > 1000);
    assert!(
        r.waf_excluding_moves < r.waf && r.waf_by_group["moves"] > 0.0,
        "{} {:?}",
        r.waf,
        r.waf_by_group
    );
    // With idle time enough for each pass, GC never runs with a write queued and never aborts.
    let mut c = cfg(small_drive("cmr"), "log-gc");
    c.verify = true;
    let recs: Vec<_> = (0..400u64)
        .map(|i| rec(i * 5_000_000, Op::Write, (i * 7919) % 1500, 4))
        .collect();
    let mut s = Simulation::with_layer(c, &LOG_GC, Box::new(VecTrace::new(recs))).unwrap();
    s.run().unwrap();
    let r = s.report();
    assert_eq!(r.background.aborted, 0, "{:?}", r.background);
    assert_eq!(r.background.stages_foreground, 0, "{:?}", r.background);
    assert!(r.background.stages_idle > 0, "{:?}", r.background);
}

#[test]
fn crashes_inside_gc_stages_are_counted() {
    let mut inside = 0;
    for point in (40..400).step_by(9) {
        let mut c = cfg(small_drive("cmr"), "log-gc");
        c.crash_at_ops = vec![point];
        let recs: Vec<_> = (0..300u64)
            .map(|i| rec(i * 300, Op::Write, (i * 7919) % 1500, 1 + i % 8))
            .collect();
        let mut s = Simulation::with_layer(c, &LOG_GC, Box::new(VecTrace::new(recs))).unwrap();
        s.run().unwrap();
        inside += s.report().crashes_in_stages;
    }
    assert!(inside > 10, "{inside}");
}

// ---- IMR moves cut by host requests ----

#[test]
fn a_host_read_arriving_in_the_middle_of_a_flip_completes_before_the_flips_later_stages() {
    // Ten writes, 50 ms apart, to bottom track 10 (host LBAs 1000..1100 on
    // a group-of-1 drive) make it the interval's hottest: a flip is decided
    // and starts in the idle time after the tenth. A read elsewhere arrives
    // 40 ms after the tenth write, in the middle of the flip.
    let mut recs: Vec<_> = (0..10u64)
        .map(|i| rec(i * 50_000, Op::Write, 1000 + i * 4, 4))
        .collect();
    recs.push(rec(9 * 50_000 + 40_000, Op::Read, 500, 4));
    recs.push(rec(9 * 50_000 + 2_000_000, Op::Read, 1000, 40));
    let mut c = cfg(imr_drive(), "imr-flip");
    c.verify = true;
    for (k, v) in [("interval_writes", "10"), ("flip_threshold", "2")] {
        c.layer.params.insert(k.into(), serde_json::Value::from(v));
    }
    let s = run(c, recs).unwrap();
    let r = s.report();
    assert_eq!(r.layer_counters["flips"], 1.0, "{:?}", r.layer_counters);
    assert!(r.background.postponed >= 1, "{:?}", r.background);
    let ops: Vec<_> = s.device().recent_ops().copied().collect();
    let flip: Vec<_> = ops.iter().filter(|o| o.cause == Cause::Flip).collect();
    let read = ops
        .iter()
        .find(|o| o.cause == Cause::Host && o.kind == OpKind::Read && o.at.track.0 == 5)
        .expect("the read of LBA 500 (track 5)");
    let commit = ops
        .iter()
        .rev()
        .find(|o| o.cause == Cause::Metadata)
        .expect("the flip's commit record");
    assert!(
        flip.first().unwrap().start < read.start,
        "the flip started before the read"
    );
    assert!(
        read.start < flip.last().unwrap().start,
        "the flip's last stages ran after the read"
    );
    assert!(read.start < commit.start);
    // The read waited for one stage at most, not the whole flip.
    let flip_time = commit.start.0 - flip[0].start.0;
    let arrival = Nanos((9 * 50_000 + 40_000) * 1000);
    assert!(
        read.start.0 - arrival.0 < flip_time / 3,
        "waited {} of a {flip_time} ns flip",
        read.start.0 - arrival.0
    );
    assert!(
        r.background.requests_waited >= 1 && r.background.host_wait_s > 0.0,
        "{:?}",
        r.background
    );
}

#[test]
fn reads_of_a_move_in_progress_come_from_its_buffer_and_writes_wait_for_it() {
    // As above, on a full drive, with requests that cut into the flip
    // touching its tracks: reads of the flipped bottom (10) and its partner
    // (9) every 40 ms, or one write to them.
    let t0 = 9 * 200_000;
    let go = |write: bool| {
        let mut recs: Vec<_> = (0..10u64)
            .map(|i| rec(i * 200_000, Op::Write, 1000 + i * 4, 4))
            .collect();
        if write {
            recs.push(rec(t0 + 100_000, Op::Write, 1002, 50));
        } else {
            for k in 0..30u64 {
                recs.push(rec(
                    t0 + 100_000 + k * 40_000,
                    Op::Read,
                    if k % 2 == 0 { 1000 } else { 900 },
                    50,
                ));
            }
        }
        recs.push(rec(t0 + 5_000_000, Op::Read, 900, 200));
        let mut c = cfg(imr_drive(), "imr-flip");
        c.verify = true;
        c.replay.prefill = Some(PrefillSpec::Fraction(1.0));
        for (k, v) in [("interval_writes", "10"), ("flip_threshold", "2")] {
            c.layer.params.insert(k.into(), serde_json::Value::from(v));
        }
        run(c, recs).unwrap().report()
    };
    let r = go(false);
    assert_eq!(r.layer_counters["flips"], 1.0, "{:?}", r.layer_counters);
    assert!(
        r.layer_counters["reads_from_move_buffer"] > 0.0,
        "{:?}",
        r.layer_counters
    );
    assert_eq!(r.background.stages_foreground, 0, "{:?}", r.background);
    // The write to the flip's tracks waits for the flip to finish: its last stages run in the foreground.
    let r = go(true);
    assert_eq!(r.layer_counters["flips"], 1.0, "{:?}", r.layer_counters);
    assert!(
        r.background.stages_idle > 0 && r.background.stages_foreground > 0,
        "{:?}",
        r.background
    );
    assert!(r.background.requests_waited >= 1, "{:?}", r.background);
}

#[test]
fn layers_count_host_writes_on_arrival_or_destaged_extents() {
    // 200 writes a millisecond apart to a few sectors of one track: the
    // write cache coalesces them into far fewer destaged extents.
    let recs: Vec<_> = (0..200u64)
        .map(|i| rec(i * 1000, Op::Write, 1000 + (i % 3) * 8, 8))
        .collect();
    for layer in ["imr-flip", "imr-cache", "imr-dtm"] {
        let go = |count_at: &str| {
            let mut d = imr_drive();
            d.write_cache_mib = 1.0;
            let mut c = cfg(d, layer);
            c.layer
                .params
                .insert("interval_writes".into(), serde_json::Value::from(20));
            c.layer
                .params
                .insert("count_at".into(), serde_json::Value::from(count_at));
            if layer == "imr-cache" {
                c.layer
                    .params
                    .insert("cache_tracks".into(), serde_json::Value::from(4));
            }
            run(c, recs.clone()).unwrap().report()
        };
        let (arrival, destage) = (go("arrival"), go("destage"));
        assert_eq!(arrival.intervals_completed, Some(10), "{layer}");
        let d = destage.intervals_completed.unwrap();
        assert!(d < 5, "{layer}: {d} intervals counting destaged extents");
        assert!(
            destage.host.cached_writes == 200 && destage.device.write_ops < 200,
            "{layer}"
        );
    }
}

#[test]
fn overdue_moves_run_before_the_next_request_even_with_requests_queued() {
    // All requests at time 0 (the queue is always full): imr-cache's plan
    // becomes overdue after foreground_after_writes and runs one move per write.
    let recs: Vec<_> = (0..300u64)
        .map(|i| rec(0, Op::Write, (i % 4) * 200 + (i % 50), 4))
        .collect();
    let mut c = cfg(imr_drive(), "imr-cache");
    for (k, v) in [
        ("interval_writes", "40"),
        ("cache_tracks", "8"),
        ("foreground_after_writes", "5"),
    ] {
        c.layer.params.insert(k.into(), serde_json::Value::from(v));
    }
    c.verify = true;
    let r = run(c, recs).unwrap().report();
    assert!(
        r.layer_counters["promotions"] >= 1.0,
        "{:?}",
        r.layer_counters
    );
    assert!(
        r.layer_counters["foreground_moves"] >= 1.0,
        "{:?}",
        r.layer_counters
    );
    assert!(
        r.background.stages_foreground > 0 && r.background.stages_idle == 0,
        "{:?}",
        r.background
    );
}

// ---- a layer that breaks its contract ----

/// Test only: cmr's home writes and reads, but its reads return one sector
/// short, and it says background work is overdue with no stage to run.
struct Broken {
    short_reads: bool,
}

impl Layer for Broken {
    fn host_capacity(&self, g: &Geometry) -> Sectors {
        g.capacity()
    }
    fn needs(&self) -> crate::layers::Needs {
        crate::layers::Needs {
            background: !self.short_reads,
            ..Default::default()
        }
    }
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let n = if self.short_reads {
            Sectors(n.0 - 1)
        } else {
            n
        };
        cmr::read_home(dev, Cause::Host, lba, n, out)
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        cmr::write_home(dev, w)
    }
    fn background(&self) -> Background {
        if self.short_reads {
            Background::None
        } else {
            Background::Overdue
        }
    }
    fn stage(&mut self, _dev: &mut Device, _queue: &QueueView) -> SimResult<StageOutcome> {
        Ok(StageOutcome::Nothing)
    }
}

static SHORT_READS: LayerEntry = LayerEntry {
    name: "short-reads",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "test only: reads return one sector short",
    paper: "-",
    layout: LayoutNeed::AsConventional,
    params: &[],
    build: |_, _| Ok(Box::new(Broken { short_reads: true })),
};

static STAGELESS: LayerEntry = LayerEntry {
    name: "stageless",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "test only: overdue background work with no stage",
    paper: "-",
    layout: LayoutNeed::AsConventional,
    params: &[],
    build: |_, _| Ok(Box::new(Broken { short_reads: false })),
};

#[test]
fn a_layer_that_breaks_its_contract_is_a_layer_error_naming_it() {
    let recs = || vec![rec(0, Op::Write, 100, 4), rec(1_000_000, Op::Read, 100, 4)];
    let mut c = cfg(small_drive("cmr"), "short-reads");
    c.verify = true;
    let mut s = Simulation::with_layer(c, &SHORT_READS, Box::new(VecTrace::new(recs()))).unwrap();
    match s.run() {
        Err(SimError::Layer(m)) => assert!(
            m.contains("layer 'short-reads' returned 3 sectors for a read of 4"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
    let c = cfg(small_drive("cmr"), "stageless");
    let mut s = Simulation::with_layer(c, &STAGELESS, Box::new(VecTrace::new(recs()))).unwrap();
    match s.run() {
        Err(e @ SimError::Layer(_)) => {
            let m = e.to_string();
            assert!(m.starts_with("layer error (a bug in the layer): layer 'stageless' says its background work is overdue"), "{m}")
        }
        other => panic!("{other:?}"),
    }
}

// ---- a layer that takes a write in parts (issue 36) ----

/// Test only: writes in place, but takes at most `room` sectors of a write
/// per call; each stage of its background work adds 3 sectors of room and
/// counts itself. With `stuck`, stages find nothing to do.
struct Parts {
    room: u64,
    stages: u64,
    stuck: bool,
}

static PARTS: LayerEntry = LayerEntry {
    name: "parts",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "test only: takes writes in parts, a stage between them",
    paper: "-",
    layout: LayoutNeed::AsConventional,
    params: &[],
    build: |_, _| {
        Ok(Box::new(Parts {
            room: 0,
            stages: 0,
            stuck: false,
        }))
    },
};

static STUCK: LayerEntry = LayerEntry {
    name: "stuck",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "test only: takes no part of a write and has no work to make room",
    paper: "-",
    layout: LayoutNeed::AsConventional,
    params: &[],
    build: |_, _| {
        Ok(Box::new(Parts {
            room: 0,
            stages: 0,
            stuck: true,
        }))
    },
};

impl Layer for Parts {
    fn needs(&self) -> crate::layers::Needs {
        crate::layers::Needs {
            background: true,
            ..Default::default()
        }
    }
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        cmr::read_home(dev, Cause::Host, lba, n, out)
    }
    fn write(&mut self, _dev: &mut Device, _w: &WriteReq) -> SimResult<()> {
        panic!("the engine writes through write_part")
    }
    fn write_part(&mut self, dev: &mut Device, w: &WriteReq, _first: bool) -> SimResult<Sectors> {
        let k = w.sectors.0.min(self.room);
        if k > 0 {
            let part = WriteReq {
                sectors: Sectors(k),
                data: if w.data.is_empty() {
                    &[]
                } else {
                    &w.data[..k as usize]
                },
                ..*w
            };
            cmr::write_home(dev, &part)?;
        }
        self.room -= k;
        Ok(Sectors(k))
    }
    fn stage(&mut self, _dev: &mut Device, _queue: &QueueView) -> SimResult<StageOutcome> {
        if self.stuck {
            return Ok(StageOutcome::Nothing);
        }
        self.stages += 1;
        self.room += 3;
        Ok(StageOutcome::Ran)
    }
    fn report(&self) -> crate::layers::LayerReport {
        [("stages_run".to_string(), self.stages as f64)].into()
    }
}

#[test]
fn a_write_taken_in_parts_gets_the_engines_counted_stages_between_them() {
    // Writes of 10 sectors: 4 stages each (3 + 3 + 3 + 1 left over for the next).
    let recs: Vec<_> = (0..20)
        .map(|i| rec(i * 1_000_000, Op::Write, 100 + 20 * i, 10))
        .collect();
    let mut c = cfg(small_drive("cmr"), "parts");
    c.verify = true;
    let mut s = Simulation::with_layer(c, &PARTS, Box::new(VecTrace::new(recs))).unwrap();
    s.run().unwrap();
    let r = s.report();
    assert_eq!(r.verification.mismatches, 0);
    let ran = r.layer_counters["stages_run"] as u64;
    assert_eq!(ran, 67, "200 sectors at 3 a stage");
    assert_eq!(r.background.stages, ran);
    assert_eq!(r.background.stages_foreground, ran);
    assert_eq!(r.host.writes, 20);

    let c = cfg(small_drive("cmr"), "stuck");
    let recs = vec![rec(0, Op::Write, 100, 4)];
    let mut s = Simulation::with_layer(c, &STUCK, Box::new(VecTrace::new(recs))).unwrap();
    match s.run() {
        Err(SimError::Layer(m)) => assert!(
            m.contains("layer 'stuck' stored 0 of a write's 4 sectors at LBA 100"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
}
