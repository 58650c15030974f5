//! The drive's own cache and queue beneath host-side layers (issue 30, item
//! 3): a write it absorbs is acknowledged before it reaches the medium and
//! is lost at a power loss unless flushed; the verifier catches a layer
//! that forgets; reordering changes the order of service, never the data.

use super::tests::{cfg, rec, small_drive};
use super::*;
use crate::device::Cause;
use crate::error::SimError;
use crate::front_end::queued_cache::QueuedCache;
use crate::front_end::queued_cache::{QueueConfig, Reorder};
use crate::layers::WriteReq;
use crate::layers::{cmr, LayoutNeed, RunsIn};
use crate::trace::Op;
use crate::trace::VecTrace;
use crate::units::PhysAddr;

/// Test only: a host-side layer writing in place and never flushing the
/// drive's cache (wrong: its acknowledged writes are not durable).
static FORGETS: LayerEntry = LayerEntry {
    name: "host-forgets-flush",
    runs_in: RunsIn::Host,
    summary: "test only: host-side, in place, never flushes",
    paper: "-",
    layout: LayoutNeed::AsConventional,
    params: &[],
    build: |_, _| Ok(Box::new(InPlace { flush: false })),
};

/// Test only: the same layer, flushing before it acknowledges a write.
static FLUSHES: LayerEntry = LayerEntry {
    name: "host-flushes",
    runs_in: RunsIn::Host,
    summary: "test only: host-side, in place, flushes every write",
    paper: "-",
    layout: LayoutNeed::AsConventional,
    params: &[],
    build: |_, _| Ok(Box::new(InPlace { flush: true })),
};

struct InPlace {
    flush: bool,
}
impl Layer for InPlace {
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        cmr::read_home(dev, Cause::Host, lba, n, out)
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        cmr::write_home(dev, w)?;
        if self.flush {
            dev.flush()?;
        }
        Ok(())
    }
}

fn cached_drive() -> crate::drive::DriveConfig {
    let mut d = small_drive("cmr");
    d.rotation = crate::mechanics::Rotation::Angular;
    d.write_cache_mib = 4.0;
    d
}

#[test]
fn an_absorbed_write_is_acknowledged_before_the_medium_and_lost_unless_flushed() {
    let d = cached_drive();
    let g = d.geometry().unwrap();
    let m = d.mechanics(g.tracks()).unwrap();
    let mut dev = Device::new(g, m, true);
    dev.attach_front_end(QueuedCache::new(
        1024,
        QueueConfig::default(),
        crate::front_end::link::Link::new(1000.0),
    ));
    let at = PhysAddr {
        track: crate::units::Track(700),
        sector: 10,
    };
    let data: Vec<Token> = (0..4).map(|i| Token::data(Lba(70_010 + i), 1)).collect();
    let t = dev.write(Cause::Host, at, 4, &data).unwrap();
    // Acknowledged after the link time of four sectors, with the head still
    // where it was: nothing reached the medium.
    assert_eq!(t, Nanos(4000));
    assert_eq!(dev.totals().1.ops, 0);
    assert!(dev.peek(at).is_empty());
    let mut got = vec![];
    dev.read(Cause::Host, at, 4, &mut got).unwrap();
    assert_eq!(got, data, "a read finds the cached data");
    assert_eq!(dev.front_end().unwrap().counts.read_hits, 1);
    // Power loss: the cache is gone, and the data with it.
    dev.power_cycle();
    let mut got = vec![];
    dev.read(Cause::Host, at, 4, &mut got).unwrap();
    assert!(got.iter().all(|t| t.is_empty()), "{got:?}");
    // Written again and flushed, it survives.
    dev.write(Cause::Host, at, 4, &data).unwrap();
    dev.flush().unwrap();
    assert_eq!(dev.totals().1.ops, 1);
    dev.power_cycle();
    let mut got = vec![];
    dev.read(Cause::Host, at, 4, &mut got).unwrap();
    assert_eq!(got, data);
    let c = &dev.front_end().unwrap().counts;
    assert_eq!((c.absorbed_ops, c.flushes, c.lost_ops), (2, 1, 1));
    // FORCE UNIT ACCESS goes straight to the medium.
    dev.set_fua(true);
    let at2 = PhysAddr {
        track: crate::units::Track(900),
        sector: 0,
    };
    dev.write(Cause::Host, at2, 1, &data[..1]).unwrap();
    dev.set_fua(false);
    assert_eq!(dev.peek(at2), data[0]);
}

#[test]
fn the_verifier_catches_a_host_side_layer_that_does_not_flush() {
    let recs: Vec<_> = (0..20)
        .map(|i| rec(i * 100, Op::Write, i * 37, 2))
        .collect();
    // A power loss after the tenth request: writes acknowledged from the
    // drive's cache are gone.
    let mut c = cfg(cached_drive(), "host-forgets-flush");
    c.verify = true;
    c.replay.write_cache = Some(true);
    c.crash_after = vec![10];
    let mut s = Simulation::with_layer(c, &FORGETS, Box::new(VecTrace::new(recs.clone()))).unwrap();
    let e = s.run().unwrap_err();
    assert!(
        matches!(e, SimError::DataLoss(_)),
        "expected data loss, got {e}"
    );
    // The same layer flushing before it acknowledges loses nothing.
    let mut c = cfg(cached_drive(), "host-flushes");
    c.verify = true;
    c.replay.write_cache = Some(true);
    c.crash_after = vec![10];
    let mut s = Simulation::with_layer(c, &FLUSHES, Box::new(VecTrace::new(recs))).unwrap();
    s.run().unwrap();
    let r = s.report();
    assert_eq!(r.crashes, 1);
    let dc = r.device.drive_cache.unwrap();
    assert!(dc.flushes >= 20 && dc.absorbed_ops == 20, "{dc:?}");
}

#[test]
fn reordering_changes_the_order_of_service_and_never_the_data() {
    // Writes scattered over the disk, some rewriting others, and reads of
    // them, replayed flat out: the drive cache holds many at once, and each
    // policy destages them in its own order. Verification checks every read.
    let mut recs = vec![];
    let mut x: u64 = 99;
    for i in 0..400u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let lba = x % 150_000;
        let op = if i % 5 == 4 { Op::Read } else { Op::Write };
        recs.push(rec(i, op, lba, 1 + x % 8));
    }
    let mut busy = vec![];
    for reorder in [Reorder::Fifo, Reorder::CLook, Reorder::Sptf] {
        let mut d = cached_drive();
        d.queue = Some(QueueConfig { depth: 32, reorder });
        let mut c = cfg(d, "host-forgets-flush");
        c.verify = true;
        c.replay.write_cache = Some(true);
        c.replay.mode = Mode::FlatOut;
        let mut s =
            Simulation::with_layer(c, &FORGETS, Box::new(VecTrace::new(recs.clone()))).unwrap();
        s.run().unwrap();
        let r = s.report();
        let dc = r.device.drive_cache.clone().unwrap();
        assert_eq!(dc.destaged_ops, dc.absorbed_ops, "{reorder:?}: {dc:?}");
        if reorder == Reorder::Fifo {
            assert_eq!(dc.reordered, 0);
        } else {
            assert!(dc.reordered > 50, "{reorder:?}: {dc:?}");
        }
        busy.push(r.device.busy_s);
    }
    // The policies serve the same writes in different orders, so the disk
    // is busy for different times; the positioning-aware ones for less.
    assert!(busy[1] < busy[0] && busy[2] < busy[0], "{busy:?}");
}
