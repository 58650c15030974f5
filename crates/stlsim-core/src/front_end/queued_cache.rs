//! The drive's own front end beneath a layer that runs in the host (issue
//! 30, item 3): a volatile write cache that acknowledges a write once its
//! data are across the link, and a command queue from which the drive
//! destages cached writes in an order of its choosing (native command
//! queueing), with FLUSH CACHE and FORCE UNIT ACCESS for what the host
//! needs durable. A power loss drops whatever is cached.
//!
//! A layer that runs in the drive (IMR, SWD, Virtual Guard, the E-region
//! baseline) sits behind the engine's write cache instead
//! ([`super::write_cache`]); a host-side layer's physical
//! operations are commands to this front end.
//!
//! Choices where no paper speaks (a drive engineer's, documented in
//! docs/drive-model.md):
//! * **Acceptance.** A write is cached when it fits in the free room (the
//!   preset's `write_cache_mib`); otherwise the drive destages until it
//!   fits, and a write larger than the whole cache goes to the media as an
//!   uncached write. Accepting costs the link time of its data; the drive's
//!   command overheads are not charged to a host-side layer's physical
//!   operations (as with the cache off), so the cache is not penalised
//!   against writing through.
//! * **Order.** The drive destages the oldest `depth` cached writes in the
//!   order its policy picks: `fifo` (arrival), `c-look` (ascending track
//!   from the head, wrapping) or `sptf` (shortest positioning time: seek
//!   plus rotational wait on the angular model). It never reorders two
//!   writes that interact: the same sectors, tracks where one write damages
//!   the other (shingled and interlaced overlap), or the same sequential
//!   zone of a host-managed drive (whose write pointer orders them); the
//!   older goes first. So reordering changes when data reach the media,
//!   never what a read returns.
//! * **Reads** are served from the cache where it holds the newest data of
//!   every sector asked (no media time), else from the media with the
//!   cached sectors laid over.
//! * **Power loss** drops every cached write; on a zoned drive the write
//!   pointer of a zone goes back to the first sector whose write was lost
//!   (sequential zones destage in order, so what is lost is the zone's tail).

use super::link::Link;
use crate::cause::Cause;
use crate::geometry::Geometry;
use crate::mechanics::{HeadState, Mechanics};
use crate::medium::Token;
use crate::units::{Nanos, PhysAddr, Track};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// How the drive orders the cached writes it destages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reorder {
    /// Arrival order: the oldest cached write first.
    Fifo,
    /// Ascending track from the head's, wrapping to the lowest.
    CLook,
    /// Shortest positioning time (seek and rotational wait) first.
    #[default]
    Sptf,
}

/// The drive's command queue beneath a host-side layer (`[queue]` of a drive).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// Cached writes the drive chooses among (SATA native command queueing: 32).
    pub depth: u32,
    /// How it picks among them: `fifo`, `c-look` or `sptf` (the default).
    pub reorder: Reorder,
}

impl Default for QueueConfig {
    fn default() -> QueueConfig {
        QueueConfig {
            depth: 32,
            reorder: Reorder::Sptf,
        }
    }
}

/// A metadata record a cached write carries to the media.
#[derive(Clone, Debug, PartialEq)]
pub enum CachedMeta {
    /// No record: the write carries data only.
    None,
    /// One record on the first `n` sectors.
    Head(u32, Vec<u64>),
    /// One record per sector.
    PerSector(Vec<Vec<u64>>),
}

/// One cached write: `count` sectors of one track from `at`.
#[derive(Clone, Debug)]
pub struct Pending {
    /// The cause the layer gave it.
    pub cause: Cause,
    /// Its first sector on the disk.
    pub at: PhysAddr,
    /// Sectors it writes, all on the track of `at`.
    pub count: u32,
    /// Tokens (when data is carried).
    pub data: Vec<Token>,
    /// Its metadata record(s).
    pub meta: CachedMeta,
    /// The sequential zone it writes in, if any.
    pub zone: Option<u64>,
    /// Its first home LBA, if it has one.
    pub lba: Option<u64>,
}

/// What the front end did in a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueuedCacheCounts {
    /// Writes acknowledged from the cache.
    pub absorbed_ops: u64,
    /// Sectors of those writes.
    pub absorbed_sectors: u64,
    /// Writes that went to the media uncached (FUA, or larger than the cache).
    pub write_through_ops: u64,
    /// Sectors read that the cache held (no media time for them when a read was all cached).
    pub read_hit_sectors: u64,
    /// Reads served wholly from the cache.
    pub read_hits: u64,
    /// FLUSH CACHE commands the layer issued (ignored, and not counted, when the
    /// drive's `flush_commands` is off).
    pub flushes: u64,
    /// Cached writes destaged to the media.
    pub destaged_ops: u64,
    /// Sectors of those destages.
    pub destaged_sectors: u64,
    /// Destages forced by a write that did not fit.
    pub destaged_for_room: u64,
    /// Destages picked out of arrival order.
    pub reordered: u64,
    /// Cached writes a power loss dropped.
    pub lost_ops: u64,
}

/// The front end's state.
#[derive(Clone, Debug)]
pub struct QueuedCache {
    cap: u64,
    used: u64,
    cfg: QueueConfig,
    link: Link,
    pending: VecDeque<Pending>,
    /// Cached writes per track (to skip reads that meet none).
    on_track: FxHashMap<u64, u32>,
    /// Data buffers of destaged writes, reused (no allocation per write).
    spare_data: Vec<Vec<Token>>,

    /// What it has done so far; the report's `drive_cache`.
    pub counts: QueuedCacheCounts,
}

impl QueuedCache {
    /// A cache of `cap` sectors with queue `cfg`, fed over a link moving a
    /// sector in `link`.
    pub fn new(cap: u64, cfg: QueueConfig, link: Link) -> QueuedCache {
        QueuedCache {
            cap,
            used: 0,
            cfg,
            link,
            pending: VecDeque::new(),
            on_track: FxHashMap::default(),
            spare_data: vec![],
            counts: QueuedCacheCounts::default(),
        }
    }

    /// Sectors of the cached writes, counted per write: two cached writes of the
    /// same sector count twice.
    pub fn dirty_sectors(&self) -> u64 {
        self.used
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The queue's settings: how many cached writes it picks among, and how.
    pub fn queue(&self) -> &QueueConfig {
        &self.cfg
    }

    /// Whether a write of `count` sectors can ever be cached.
    pub fn cacheable(&self, count: u32) -> bool {
        count as u64 <= self.cap
    }

    /// Whether `count` more sectors fit now.
    pub fn fits(&self, count: u32) -> bool {
        self.used + count as u64 <= self.cap
    }

    /// Link time of `count` sectors (the same link as above a
    /// drive-managed layer: truncated to the nanosecond).
    pub fn link_time(&self, count: u32) -> Nanos {
        self.link.time_of(count as u64)
    }

    /// An empty data buffer (one a destaged write left, when there is one).
    pub fn data_buf(&mut self) -> Vec<Token> {
        self.spare_data.pop().unwrap_or_default()
    }

    /// Keep a destaged write's buffers for later writes.
    pub fn recycle(&mut self, mut data: Vec<Token>) {
        data.clear();
        self.spare_data.push(data);
    }

    /// Cache a write (room checked by the caller).
    pub fn absorb(&mut self, p: Pending) {
        self.used += p.count as u64;
        *self.on_track.entry(p.at.track.0).or_insert(0) += 1;
        self.counts.absorbed_ops += 1;
        self.counts.absorbed_sectors += p.count as u64;
        self.pending.push_back(p);
    }

    /// Whether a cached write meets track `t`.
    #[inline]
    pub fn touches(&self, t: Track) -> bool {
        !self.on_track.is_empty() && self.on_track.contains_key(&t.0)
    }

    /// Lay the newest cached data of sectors `[at, at + count)` over `out`
    /// (one slot per sector, or empty when data is not carried); returns how
    /// many sectors the cache holds.
    pub fn overlay(&self, at: PhysAddr, count: u32, out: &mut [Token]) -> u32 {
        if !self.touches(at.track) {
            return 0;
        }
        let (lo, hi) = (at.sector, at.sector + count);
        // Oldest first, so the newest write of each sector is laid last.
        for p in self.pending.iter().filter(|p| p.at.track == at.track) {
            let (a, b) = (p.at.sector.max(lo), (p.at.sector + p.count).min(hi));
            if a < b && !out.is_empty() && !p.data.is_empty() {
                out[(a - lo) as usize..(b - lo) as usize].copy_from_slice(
                    &p.data[(a - p.at.sector) as usize..(b - p.at.sector) as usize],
                );
            }
        }
        // Sectors held: the union of the cached extents within the range,
        // walked span by span (no list of them built).
        let on = || self.pending.iter().filter(|p| p.at.track == at.track);
        let (mut s, mut held) = (lo, 0);
        while s < hi {
            let covered_to = on()
                .filter(|p| p.at.sector <= s && s < p.at.sector + p.count)
                .map(|p| (p.at.sector + p.count).min(hi))
                .max();
            match covered_to {
                Some(e) => {
                    held += e - s;
                    s = e;
                }
                None => {
                    s = on()
                        .map(|p| p.at.sector)
                        .filter(|&a| a > s)
                        .min()
                        .unwrap_or(hi)
                        .min(hi);
                }
            }
        }
        held
    }

    /// Whether writes `a` and `b` must reach the media in the order they came.
    fn interact(geom: &Geometry, a: &Pending, b: &Pending) -> bool {
        if a.at.track == b.at.track {
            return true;
        }
        if a.zone.is_some() && a.zone == b.zone {
            return true;
        }
        geom.damaged_by_write(a.at.track).any(|t| t == b.at.track)
            || geom.damaged_by_write(b.at.track).any(|t| t == a.at.track)
    }

    /// The cached write to destage next, by the queue's policy among the
    /// oldest `depth` that no older cached write must precede.
    pub fn pick(
        &self,
        geom: &Geometry,
        mech: &Mechanics,
        head: &HeadState,
        now: Nanos,
    ) -> Option<usize> {
        if self.pending.is_empty() {
            return None;
        }
        if self.cfg.reorder == Reorder::Fifo {
            return Some(0);
        }
        let window = (self.cfg.depth.max(1) as usize).min(self.pending.len());
        let mut best: Option<(u64, usize)> = None;
        for i in 0..window {
            let p = &self.pending[i];
            if (0..i).any(|j| QueuedCache::interact(geom, &self.pending[j], p)) {
                continue;
            }
            let key = match self.cfg.reorder {
                Reorder::CLook => {
                    // Tracks at or past the head first, ascending; then from the lowest.
                    let t = p.at.track.0;
                    let wrap = u64::from(t < head.track.0);
                    (wrap << 63) | (t << 20) | u64::from(p.at.sector).min((1 << 20) - 1)
                }
                _ => {
                    let spt = geom.sectors_in(p.at.track);
                    let a = mech.access(head, now, p.at, p.count, spt, true);
                    (a.seek + a.rotate).0
                }
            };
            if best.is_none_or(|b| key < b.0) {
                best = Some((key, i));
            }
        }
        best.map(|b| b.1)
    }

    /// Take cached write `i` off the queue (to destage it).
    pub fn take(&mut self, i: usize) -> Pending {
        let p = self.pending.remove(i).expect("a pending write");
        self.forget(&p);
        self.counts.destaged_ops += 1;
        self.counts.destaged_sectors += p.count as u64;
        if i > 0 {
            self.counts.reordered += 1;
        }
        p
    }

    /// The index of the newest cached write that must reach the media before
    /// a write of `count` sectors at `at` (in zone `zone`) goes through
    /// uncached, if any.
    pub fn last_conflict(
        &self,
        geom: &Geometry,
        at: PhysAddr,
        count: u32,
        zone: Option<u64>,
    ) -> Option<usize> {
        let probe = Pending {
            cause: Cause::Host,
            at,
            count,
            data: vec![],
            meta: CachedMeta::None,
            zone,
            lba: None,
        };
        (0..self.pending.len())
            .rev()
            .find(|&i| QueuedCache::interact(geom, &self.pending[i], &probe))
    }

    /// Cached write `i` (0: the oldest).
    pub fn pending_at(&self, i: usize) -> &Pending {
        &self.pending[i]
    }

    /// Give the newest cached write at exactly `at` of `n` sectors the
    /// record `words` (a record written right after its data); false when
    /// no such write is cached.
    pub fn attach_meta(&mut self, at: PhysAddr, n: u32, words: &[u64]) -> bool {
        match self
            .pending
            .iter_mut()
            .rev()
            .find(|p| p.at == at && p.count >= n)
        {
            Some(p) => {
                p.meta = CachedMeta::Head(n, words.to_vec());
                true
            }
            None => false,
        }
    }

    /// Drop the cached writes into zone `z` (RESET WRITE POINTER discards them).
    pub fn drop_zone(&mut self, z: u64) {
        let mut kept = VecDeque::with_capacity(self.pending.len());
        for p in std::mem::take(&mut self.pending) {
            if p.zone == Some(z) {
                self.forget(&p);
            } else {
                kept.push_back(p);
            }
        }
        self.pending = kept;
    }

    /// Take a write that left the queue out of the room and track counts.
    fn forget(&mut self, p: &Pending) {
        self.used -= p.count as u64;
        if let Some(n) = self.on_track.get_mut(&p.at.track.0) {
            *n -= 1;
            if *n == 0 {
                self.on_track.remove(&p.at.track.0);
            }
        }
    }

    /// A power loss: every cached write is lost. Returns, per sequential
    /// zone that lost writes, the first LBA lost.
    pub fn power_loss(&mut self) -> Vec<(u64, u64)> {
        let mut first: FxHashMap<u64, u64> = FxHashMap::default();
        self.counts.lost_ops += self.pending.len() as u64;
        for p in self.pending.drain(..) {
            if let (Some(z), Some(l)) = (p.zone, p.lba) {
                let e = first.entry(z).or_insert(l);
                *e = (*e).min(l);
            }
        }
        self.used = 0;
        self.on_track.clear();
        let mut v: Vec<(u64, u64)> = first.into_iter().collect();
        v.sort_unstable();
        v
    }
}
