//! The front end's state above a drive-managed layer, owned by the engine:
//! the controller's overheads, the read cache and the read-ahead it
//! interrupted, the fast-write pipeline (DiskSim's immediate report with
//! at-once destage) and the link. The engine's read path
//! (`engine/read_path.rs`) couples it with the write cache, the layer and
//! the device; what needs none of those is here.

use super::controller::{Overheads, Prefetch, ReadCache};
use super::link::Link;
use crate::medium::Token;
use crate::units::Nanos;

/// The drive-managed front end's state (the write cache is the engine's
/// [`super::write_cache::WriteCache`], beside it).
pub struct DriveFront {
    /// The controller's command and completion overheads (zero unless the drive has them).
    pub overheads: Overheads,
    /// The on-drive read cache, if the drive has one.
    pub read_cache: Option<ReadCache>,
    /// Tokens a read-ahead read (reused buffer).
    pub ahead: Vec<Token>,
    /// The read-ahead the request being served interrupted, and when it would
    /// go on ([`super::controller::ReadCacheConfig::hits_continue_read_ahead`]).
    pub interrupted: Option<(Prefetch, Nanos)>,
    /// When the media write of the last fast write ends
    /// ([`super::controller::ControllerConfig::destage_at_once`]).
    pub fast_busy_until: Nanos,
    /// The LBA after the last fast write: a write starting there streams on
    /// behind it.
    pub fast_end: u64,
    /// The host link.
    pub link: Link,
}

impl DriveFront {
    /// A front end with these overheads and read cache, fed over `link`.
    pub fn new(overheads: Overheads, read_cache: Option<ReadCache>, link: Link) -> DriveFront {
        DriveFront {
            overheads,
            read_cache,
            ahead: Vec::new(),
            interrupted: None,
            fast_busy_until: Nanos::ZERO,
            fast_end: u64::MAX,
            link,
        }
    }

    /// When the link may start carrying a read wholly in the buffer: after
    /// the hit's command overhead; but a read arriving while the media
    /// writes a fast write waits for it, its command overhead (a miss's, as
    /// DiskSim disconnects: `disk_read_arrive`) running beside the wait.
    pub fn hit_link_start(&mut self, issue: Nanos) -> Nanos {
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
    pub fn read_done(&self, media_done: Nanos, started: Nanos, xfer: Nanos) -> Nanos {
        let h = self.overheads.read_high_water_mark;
        let held = if h > 0.0 {
            media_done + Nanos((h * xfer.0 as f64) as u64)
        } else {
            media_done
        };
        held.max(started + xfer)
    }
}
