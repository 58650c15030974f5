//! Background work in stages: the interface between a layer's long-running
//! work (IMR flips, promotions, evictions and swaps; band cleaning; garbage
//! collection) and the engine that schedules it around host requests.
//!
//! A layer exposes pending work through [`Layer::background`](super::Layer::background)
//! and runs it one *stage* at a time in [`Layer::stage`](super::Layer::stage):
//! a stage is one or a few physical operations the layer chooses, and every
//! acknowledged write must be safe at every stage boundary (a power loss can
//! fall between any two physical operations inside a stage, too). The engine
//!
//! * runs stages when the device would otherwise be idle, serving any host
//!   request that has arrived first ("postponing" the work);
//! * runs them in the foreground, before the next host request, while the
//!   layer says its work is [`Background::Overdue`];
//! * runs them before a write the layer says must wait
//!   ([`Layer::write_must_wait`](super::Layer::write_must_wait)), for
//!   example a write into a range a move has half rewritten;
//! * counts stages run, aborted and postponed, and the time host requests
//!   waited behind a stage.
//!
//! At a boundary a layer may look at the queued host requests
//! ([`QueueView`]) and abandon its work ([`StageOutcome::Aborted`]).

use crate::units::{Lba, Sectors};

/// What a layer's pending background work asks of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Background {
    /// No work pending: the engine runs no stage for the layer and lets the
    /// device idle.
    None,
    /// Run stages when the device would otherwise be idle.
    Idle,
    /// Overdue: run stages now, before the next host request, even with requests queued.
    Overdue,
}

/// What one call of [`Layer::stage`](super::Layer::stage) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageOutcome {
    /// A stage ran (one or a few physical operations).
    Ran,
    /// The layer abandoned its work at this boundary (e.g. a queued write
    /// touches the range it was cleaning); nothing acknowledged was lost.
    Aborted,
    /// There was nothing to do after all (e.g. a planned move went stale).
    Nothing,
}

/// A host request waiting for the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuedRequest {
    /// A write (else a read).
    pub write: bool,
    /// First host LBA.
    pub lba: Lba,
    /// Sectors it covers from `lba`.
    pub sectors: Sectors,
}

impl QueuedRequest {
    /// Whether the request meets host LBAs `[lba, lba + n)`.
    pub fn touches(&self, lba: Lba, n: Sectors) -> bool {
        self.lba.0 < lba.0 + n.0 && lba.0 < self.lba.0 + self.sectors.0
    }
}

/// The host requests waiting while a stage boundary is reached.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueueView<'a> {
    reqs: &'a [QueuedRequest],
}

impl<'a> QueueView<'a> {
    /// A view of these waiting requests (oldest first).
    pub fn new(reqs: &'a [QueuedRequest]) -> QueueView<'a> {
        QueueView { reqs }
    }
    /// No request is waiting.
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }
    /// The waiting requests, oldest first.
    pub fn requests(&self) -> &'a [QueuedRequest] {
        self.reqs
    }
    /// Whether a waiting write meets host LBAs `[lba, lba + n)`.
    pub fn write_touches(&self, lba: Lba, n: Sectors) -> bool {
        self.reqs.iter().any(|r| r.write && r.touches(lba, n))
    }
    /// Whether any waiting request (read or write) meets host LBAs `[lba, lba + n)`.
    pub fn touches(&self, lba: Lba, n: Sectors) -> bool {
        self.reqs.iter().any(|r| r.touches(lba, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_view_answers_range_questions() {
        let reqs = [
            QueuedRequest {
                write: false,
                lba: Lba(100),
                sectors: Sectors(8),
            },
            QueuedRequest {
                write: true,
                lba: Lba(200),
                sectors: Sectors(8),
            },
        ];
        let q = QueueView::new(&reqs);
        assert!(q.touches(Lba(104), Sectors(1)));
        assert!(!q.write_touches(Lba(104), Sectors(1)));
        assert!(q.write_touches(Lba(190), Sectors(11)));
        assert!(!q.write_touches(Lba(190), Sectors(10)));
        assert!(QueueView::default().is_empty());
    }
}

/// The engine's scheduling of background work, for tests that drive a
/// layer directly (without a trace and a [`Simulation`](crate::Simulation)).
#[cfg(test)]
pub(crate) mod direct {
    use super::*;
    use crate::device::Device;
    use crate::error::SimResult;
    use crate::layers::{Layer, WriteReq};
    use crate::units::Nanos;

    /// Run stages while the layer's work is overdue.
    pub fn overdue(l: &mut dyn Layer, dev: &mut Device) -> SimResult<()> {
        while l.background() == Background::Overdue {
            if l.stage(dev, &QueueView::default())? == StageOutcome::Nothing
                && l.background() == Background::Overdue
            {
                panic!("overdue work with no stage to run");
            }
        }
        Ok(())
    }

    /// Overdue work, then idle stages until `until` (a stage started before
    /// `until` runs to its end).
    pub fn idle(l: &mut dyn Layer, dev: &mut Device, until: Nanos) -> SimResult<()> {
        overdue(l, dev)?;
        while dev.now() < until && l.background() != Background::None {
            if l.stage(dev, &QueueView::default())? == StageOutcome::Nothing
                && l.background() != Background::None
            {
                break;
            }
        }
        Ok(())
    }

    /// A write as the engine makes it: wait for work in progress the layer
    /// says it must wait for, write, then run work that became overdue.
    pub fn write(l: &mut dyn Layer, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        l.host_write_arrived(&dev.geometry_arc(), w.lba, w.sectors);
        while l.write_must_wait(&dev.geometry_arc(), std::slice::from_ref(w)) {
            l.stage(dev, &QueueView::default())?;
        }
        l.write(dev, w)?;
        overdue(l, dev)
    }
}
