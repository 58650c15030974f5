//! Why a physical operation was issued ([`Cause`]) and what a set of them
//! cost ([`OpCounts`]): a leaf, named by the device that counts operations,
//! by the devices beside the disk that time their own, and by the report.

use crate::units::Nanos;
use serde::Serialize;

/// Why a physical operation was issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Serving a host request directly (write cache off, or a read).
    Host,
    /// Writing data destaged from the drive's write cache.
    Destage,
    /// Read-modify-write of data endangered by a write.
    Rmw,
    /// Saving data to a backup region before endangering it.
    Backup,
    /// Track flipping (IMR).
    Flip,
    /// Pseudo-track swapping (IMR dynamic track mapping).
    Swap,
    /// Promotion into a cache region.
    Promote,
    /// Eviction from a cache region.
    Evict,
    /// Band or zone cleaning.
    Clean,
    /// Translation-layer metadata (maps, logs, checkpoints).
    Metadata,
    /// Padding writes (host-managed zones).
    Padding,
    /// Garbage collection: copying live blocks out of a log or zone before it is
    /// reset or reused (host-managed zones, hybrid S-block logs).
    Gc,
    /// Work done by crash recovery.
    Recovery,
    /// The on-drive read cache reading ahead of a host read (reads only).
    ReadAhead,
}

impl Cause {
    /// All causes, in report order.
    pub const ALL: [Cause; 14] = [
        Cause::Host,
        Cause::Destage,
        Cause::Rmw,
        Cause::Backup,
        Cause::Flip,
        Cause::Swap,
        Cause::Promote,
        Cause::Evict,
        Cause::Clean,
        Cause::Metadata,
        Cause::Padding,
        Cause::Gc,
        Cause::Recovery,
        Cause::ReadAhead,
    ];
    /// The cause group WAF is broken down by: `host` (host data: host,
    /// destage), `rmw`, `backup` (backup, and recovery's restores of backups),
    /// `moves` (flip, swap, promote, evict, clean, gc, padding: data moved or
    /// filled by background work) and `metadata`.
    pub fn group(self) -> &'static str {
        match self {
            Cause::Host | Cause::Destage | Cause::ReadAhead => "host",
            Cause::Rmw => "rmw",
            Cause::Backup | Cause::Recovery => "backup",
            Cause::Flip
            | Cause::Swap
            | Cause::Promote
            | Cause::Evict
            | Cause::Clean
            | Cause::Gc
            | Cause::Padding => "moves",
            Cause::Metadata => "metadata",
        }
    }

    /// The cause groups, in report order.
    pub const GROUPS: [&'static str; 5] = ["host", "rmw", "backup", "moves", "metadata"];

    /// The cause's name as reported.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Host => "host",
            Cause::Destage => "destage",
            Cause::Rmw => "rmw",
            Cause::Backup => "backup",
            Cause::Flip => "flip",
            Cause::Swap => "swap",
            Cause::Promote => "promote",
            Cause::Evict => "evict",
            Cause::Clean => "clean",
            Cause::Metadata => "metadata",
            Cause::Padding => "padding",
            Cause::Gc => "gc",
            Cause::Recovery => "recovery",
            Cause::ReadAhead => "read_ahead",
        }
    }
}

/// Operation counts of one kind (read or write) for one cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCounts {
    /// Operations issued: one per read or write call, each on a single track
    /// (or one side-device access).
    pub ops: u64,
    /// Sectors those operations read or wrote.
    pub sectors: u64,
    /// Time the device spent on them.
    pub busy: Nanos,
    /// How many of them moved the head to another track.
    pub seeks: u64,
}

impl OpCounts {
    pub(crate) fn add(&mut self, o: &OpCounts) {
        self.ops += o.ops;
        self.sectors += o.sectors;
        self.busy += o.busy;
        self.seeks += o.seeks;
    }
}
