//! Track flipping for IMR (`imr-flip`): paper 000 section 2.2 and Algorithm 1.
//!
//! Every physical track's host writes are counted over an interval of
//! `interval_writes` writes (the paper's "update frequency", 20,000 writes).
//! At the end of an interval the hottest bottom tracks are taken in order,
//! and each is swapped ("flipped") with its colder neighbouring top track
//! when its count exceeds the top track's by more than `flip_threshold`
//! (50); at most `max_flips` (50) flips are decided per interval. Hot data
//! then lives on a top track, where it is rewritten directly; every other
//! bottom-track write goes through read-modify-write (`RmwEngine::write_track`).
//!
//! **The map.** Each bottom track T is in one of the paper's five states:
//! unmoved, its low or high part flipped with T-1, or its high or low part
//! flipped with T+1 (stored as 1..=4 in that order; 0 = unmoved). With a top
//! track of `N_t` sectors next to a bottom track of `N_b` sectors, the
//! `m = min(N_t, N_b)` first ("low") or last ("high") sectors of T are
//! swapped with the first `m` sectors of the top track (the whole top track
//! when `N_t <= N_b`; Figure 3). A host LBA is mapped to its home sector
//! (the layout's static map) and then through the flip map: a flipped
//! bottom's moved part lives on the partner top track and the top track's
//! data on the bottom one. The map is persisted with `MapStore` (checkpoint
//! plus update log, one entry per flipped bottom track, key = the bottom
//! track, value = its state); its in-memory size is the paper's 3 bits per
//! bottom track (`map_bytes`: ~2.5 MB for a 20 TB drive of 1.5 MB tracks),
//! which is also what a checkpoint costs to write.
//!
//! **A flip** is the paper's sequence (read T-1, T, T+1; back up; write T
//! and T+1; restore T-1) as `RmwEngine::relocate` performs it: read the two
//! swapped extents and the other top neighbour's overlapped span, save all
//! three in the backup region (a record naming the map change it belongs
//! to), write the bottom track, restore the other neighbour, write the top
//! track, then append the map change to the log (the commit point). A power
//! loss before the commit rolls the three tracks back from the backup region;
//! after it, the new map holds. Flipping back is the same swap again.
//!
//! **Timing.** The paper's flip costs 3 t_seek + 8 t_rot (whole-track
//! accesses start at once; short seeks between adjacent tracks not counted).
//! The simulator's flip of equal tracks costs those 8 rotations plus one
//! (the partner top track is saved too: the record rolls back, where the
//! paper's record of T-1 and T would roll forward), plus a short fourth
//! backup write (three tracks do not fit three backup tracks with their
//! header sectors) and the commit record in the log (a seek and a
//! rotational latency each), plus the short seeks. `tests.rs` pins this op
//! by op in both rotation models.
//!
//! Choices where the paper is silent (parameters in brackets):
//! * **What a "write" is** (`interval_writes`, `count_at`): one host write
//!   request as it arrives, before the drive's write cache (`count_at =
//!   arrival`, default: Algorithm 1 counts in `ReceiveIO`), or one extent the
//!   write cache destages (`count_at = destage`: coalesced, about half as
//!   many on the bundled trace). It counts once for every *physical* track it
//!   lands on after mapping (so a write to a flipped bottom's hot part heats
//!   the top track it now lives on).
//! * **Hottest tracks**: the bottom tracks written in the interval, by
//!   count, descending (ties: lower track first). Algorithm 1 increments its
//!   `flipCount` for every candidate examined; here `max_flips` bounds the
//!   flips (and flip-backs) decided per interval, as the issue states, and
//!   the search stops at the first candidate whose count cannot exceed the
//!   threshold.
//! * **Neighbour choice**: the colder of T-1 and T+1 among those that may
//!   be flipped (exist, are host tracks, are not flipped with their other
//!   bottom neighbour, and are not already taken by a flip decided in the same
//!   interval); ties go to T-1. No chained flips: a top track flipped with one
//!   bottom cannot be flipped with the other, and a flipped bottom is only
//!   ever flipped back, never with its other side, until it is unmoved.
//! * **Low or high part** (only matters when the top track is smaller): the
//!   layer counts, per bottom track, the writes that touched the part a low
//!   flip leaves behind (`[m, N_b)`) and those that touched the part a high
//!   flip leaves behind (`[0, N_b - m)`), with `m` the smaller of the two
//!   neighbours' swap sizes; it flips the part that leaves the less-written
//!   end behind (ties: low).
//! * **Flip back**: a flipped bottom T is flipped back when the writes that
//!   touched its swapped range (the partner top track's data, now on T)
//!   exceed its partner top track's count (T's hot part, now up there) by
//!   more than `flip_threshold`: the data that went down has become the
//!   hotter one. Flip-backs count towards `max_flips`.
//! * **When flips run**: they are decided at the interval boundary and run
//!   as background work, one flip at a time and one step of it per stage
//!   (`relocation.rs`), in idle time: a host request arriving during a flip
//!   waits for one step, not the whole flip ("track flipping is a background
//!   operation, and can be interrupted at any point in time"). Flips still
//!   pending at the next interval boundary become overdue and run in the
//!   foreground before the next host request (at most `max_flips`, since
//!   that is all one interval can decide), so a never-idle host still gets
//!   them. Host reads of a half-done flip's tracks come from its memory
//!   buffer; writes to them wait for it. After a power loss the counts and
//!   the pending flips are gone (volatile); the map is rebuilt from the
//!   medium.
//! * **Reserved region and backup** (`backup_location`, `backup_tracks`,
//!   default 4, at least 3, `backup_spacing_tracks`): whole LBA groups
//!   holding `backup_tracks` backup tracks plus three map-store tracks (two
//!   checkpoint slots and the log); with `spread` (the default, as
//!   `imr-rmw`) more backup slots across the disk, the nearest one used.
//!   The build checks that the backup region holds the largest flip record
//!   (a bottom part, its partner top track and the other top neighbour's
//!   span: three tracks' worth plus a header sector per backup track) and
//!   refuses a smaller one with a configuration error.
//! * **Skip empty neighbours** (`skip_empty`, default on): as in `imr-rmw`,
//!   a never-written top track is neither saved nor restored, by RMW or by
//!   a flip.

use super::map_store::MapStore;
use super::region::Reserved;
use super::relocation::{relocation_steps, Relocation};
use super::rmw::{backup_from, Move, RmwEngine, BACKUP_PARAMS, SKIP_EMPTY};
use super::{for_home_pieces, HomePiece, COUNT_AT};
use crate::device::{Cause, Device};
use crate::error::{config_err, SimError, SimResult};
use crate::geometry::{Geometry, LayoutKind, TrackKind};
use crate::layers::{
    Background, Layer, LayerEntry, LayerReport, LayoutNeed, Needs, ParamKind, ParamSpec, Params,
    QueueView, StageOutcome, WriteReq,
};
use crate::medium::Token;
use crate::units::{Lba, PhysAddr, Sectors, Track};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// The `imr-flip` layer's entry in `layers::REGISTRY`: name, parameters,
/// constructor.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "imr-flip",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "IMR track flipping: swap hot bottom tracks with cold neighbouring top tracks",
    paper: "000 section 2.2, Algorithm 1",
    layout: LayoutNeed::Kind(LayoutKind::Imr),
    params: &[
        ParamSpec {
            name: "interval_writes",
            kind: ParamKind::Int,
            unit: "writes",
            default: "20000",
            doc: "writes per counting interval; flips are decided at its end (the paper's update frequency)",
        },
        ParamSpec {
            name: "flip_threshold",
            kind: ParamKind::Int,
            unit: "writes",
            default: "50",
            doc: "flip when a bottom track's interval count exceeds its neighbour's by more than this",
        },
        ParamSpec {
            name: "max_flips",
            kind: ParamKind::Int,
            unit: "flips",
            default: "50",
            doc: "most flips (and flip-backs) decided per interval",
        },
        COUNT_AT,
        SKIP_EMPTY,
        BACKUP_PARAMS[0],
        BACKUP_PARAMS[1],
        BACKUP_PARAMS[2],
    ],
    build: |p, g| Ok(Box::new(ImrFlip::new(p, g)?)),
};

/// Which neighbour a bottom track is flipped with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// T-1.
    Prev,
    /// T+1.
    Next,
}

/// Which end of the bottom track is swapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Its first `m` sectors.
    Low,
    /// Its last `m` sectors.
    High,
}

/// The state of a flipped bottom track (the paper's states 2 to 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flipped {
    /// The partner top track.
    pub side: Side,
    /// Which end of the bottom track, its first or its last `m` sectors, is swapped.
    pub part: Part,
}

impl Flipped {
    /// The persisted code, in the paper's order: 1 low/T-1, 2 high/T-1, 3 high/T+1, 4 low/T+1.
    pub fn code(self) -> u64 {
        match (self.side, self.part) {
            (Side::Prev, Part::Low) => 1,
            (Side::Prev, Part::High) => 2,
            (Side::Next, Part::High) => 3,
            (Side::Next, Part::Low) => 4,
        }
    }
    /// The state of a code (`None` for 0 or an invalid code).
    pub fn from_code(c: u64) -> Option<Flipped> {
        let (side, part) = match c {
            1 => (Side::Prev, Part::Low),
            2 => (Side::Prev, Part::High),
            3 => (Side::Next, Part::High),
            4 => (Side::Next, Part::Low),
            _ => return None,
        };
        Some(Flipped { side, part })
    }
}

/// One swap: `m` sectors from `lo` on `bottom` with sectors `[0, m)` of `top`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Swap {
    /// The bottom track whose sectors `[lo, lo + m)` are swapped.
    pub bottom: Track,
    /// First swapped sector of the bottom track.
    pub lo: u32,
    /// The partner top track.
    pub top: Track,
    /// Sectors swapped: the smaller of the two tracks' sector counts.
    pub m: u32,
}

/// The swap a state describes for bottom track `b`.
pub fn swap_of(geom: &Geometry, b: Track, f: Flipped) -> Swap {
    let top = match f.side {
        Side::Prev => Track(b.0 - 1),
        Side::Next => Track(b.0 + 1),
    };
    let nb = geom.sectors_in(b);
    let m = nb.min(geom.sectors_in(top));
    let lo = match f.part {
        Part::Low => 0,
        Part::High => nb - m,
    };
    Swap {
        bottom: b,
        lo,
        top,
        m,
    }
}

/// A flip (or flip-back) decided at an interval boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    /// The bottom track to flip, or to flip back.
    pub bottom: Track,
    /// The state it is flipped into, or (flip-back) out of.
    pub state: Flipped,
    /// Whether this flips the track back to unmoved.
    pub back: bool,
}

/// One track's writes in the current interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    /// Writes that landed on the track.
    pub n: u32,
    /// Of those (bottom tracks), writes touching the part a high flip leaves behind.
    pub head: u32,
    /// Of those (bottom tracks), writes touching the part a low flip leaves behind.
    pub tail: u32,
    /// Of those (flipped bottom tracks), writes touching the swapped range.
    pub swapped: u32,
}

/// Counters of the layer.
#[derive(Clone, Debug, Default)]
pub struct FlipCounters {
    /// Flips performed (unmoved -> flipped).
    pub flips: u64,
    /// Flip-backs performed (flipped -> unmoved).
    pub flip_backs: u64,
    /// Flips and flip-backs done in idle time.
    pub idle: u64,
    /// Flips and flip-backs done in the foreground at an interval boundary.
    pub foreground: u64,
    /// Interval boundaries reached, one every `interval_writes` counted writes
    /// (`flip_intervals`).
    pub intervals: u64,
    /// Flips and flip-backs decided at the boundaries, whether or not they ran
    /// (`flips_planned`).
    pub planned: u64,
    /// Planned flips found no longer valid when their turn came.
    pub stale: u64,
}

/// The `imr-flip` layer.
#[derive(Debug)]
pub struct ImrFlip {
    res: Reserved,
    rmw: RmwEngine,
    store: Option<MapStore>,
    store_tracks: [Track; 3],
    map_bytes: u64,
    interval_writes: u64,
    threshold: u64,
    max_flips: u64,
    /// State code of each flipped bottom track (absent: state 0, not
    /// flipped): flips are few, so the map follows them, not the capacity.
    state: FxHashMap<u64, u8>,
    flipped_now: u64,
    counts: FxHashMap<u64, Count>,
    writes_in_interval: u64,
    pending: VecDeque<Planned>,
    /// The flip in progress (its steps run in `rmw.in_flight`), and whether it runs overdue.
    current: Option<(Planned, bool)>,
    /// Flips (at the front of the queue, the one in progress included) that are overdue.
    overdue: usize,
    count_at_arrival: bool,
    counters: FlipCounters,
    pieces: Vec<(HomePiece, usize)>,
    /// Scratch for mapping arriving writes (and a batch's or read's pieces).
    arrival: Vec<HomePiece>,
    /// Scratch of [`count`](Self::count): the tracks of one request.
    seen: Vec<(u64, Count)>,
}

/// The paper's map size: 3 bits per bottom track.
pub fn map_bytes(geom: &Geometry) -> u64 {
    let bottoms = geom.tracks().div_ceil(2);
    (bottoms * 3).div_ceil(8)
}

/// Split `[s, s+c)` of a track whose `[a, a+m)` lives at `[to_s, ..)` of track `to`.
fn split(p: HomePiece, a: u32, m: u32, to: Track, to_s: u32, out: &mut impl FnMut(HomePiece)) {
    let (s, e) = (p.at.sector, p.at.sector + p.count);
    let piece = |x: u32, y: u32, at: PhysAddr| HomePiece {
        at,
        count: y - x,
        offset: p.offset + (x - s) as u64,
    };
    if s < a.min(e) {
        out(piece(s, a.min(e), p.at));
    }
    let (x, y) = (s.max(a), e.min(a + m));
    if x < y {
        out(piece(
            x,
            y,
            PhysAddr {
                track: to,
                sector: to_s + (x - a),
            },
        ));
    }
    let x = s.max(a + m);
    if x < e {
        out(piece(
            x,
            e,
            PhysAddr {
                track: p.at.track,
                sector: x,
            },
        ));
    }
}

impl ImrFlip {
    /// Build for a geometry.
    pub fn new(p: &Params, g: &Geometry) -> SimResult<ImrFlip> {
        let n = p.u64("backup_tracks");
        if n < 3 {
            return config_err(format!("backup_tracks = {n}: at least 3 are needed"));
        }
        let interval_writes = p.u64("interval_writes");
        if interval_writes == 0 {
            return config_err("interval_writes must be at least 1");
        }
        let (res, backup, store) = backup_from(p, g, 3)?;
        let room = backup.room_in(g);
        let need = Self::largest_flip(g, &res);
        if need > room {
            return config_err(format!(
                "backup_tracks = {n} holds {room} sectors, but the largest flip saves {need} \
                 (a bottom track's part, its partner top track and the other top neighbour): raise backup_tracks"
            ));
        }
        let store_tracks = [store[0], store[1], store[2]];
        Ok(ImrFlip {
            rmw: RmwEngine::new(backup, p.bool("skip_empty"), g.tracks()),
            res,
            store: None,
            store_tracks,
            map_bytes: map_bytes(g),
            interval_writes,
            threshold: p.u64("flip_threshold"),
            max_flips: p.u64("max_flips"),
            state: FxHashMap::default(),
            flipped_now: 0,
            counts: FxHashMap::default(),
            writes_in_interval: 0,
            pending: VecDeque::new(),
            current: None,
            overdue: 0,
            count_at_arrival: p.choice("count_at") == "arrival",
            counters: FlipCounters::default(),
            pieces: vec![],
            arrival: vec![],
            seen: vec![],
        })
    }

    /// Sectors the largest flip record saves: a bottom part, its partner and the other neighbour.
    fn largest_flip(g: &Geometry, res: &Reserved) -> u64 {
        let nt = g.tracks();
        let mut need = 0u64;
        let mut t = 0;
        while t < nt {
            let b = Track(t);
            if !res.contains(b) {
                let nb = g.sectors_in(b) as u64;
                let size = |x: u64| {
                    if x < nt {
                        g.sectors_in(Track(x)) as u64
                    } else {
                        0
                    }
                };
                let prev = if t > 0 { size(t - 1) } else { 0 };
                let next = size(t + 1);
                need = need
                    .max(nb.min(prev) + prev + next)
                    .max(nb.min(next) + next + prev);
            }
            t += 2;
        }
        need
    }

    fn store_for(&mut self, dev: &Device) -> &mut MapStore {
        let (tracks, bytes) = (self.store_tracks, self.map_bytes);
        self.store
            .get_or_insert_with(|| MapStore::new(dev, tracks, bytes))
    }

    /// The state of bottom track `b`.
    pub fn state(&self, b: Track) -> Option<Flipped> {
        Flipped::from_code(self.state.get(&b.0).copied().unwrap_or(0) as u64)
    }

    /// The bottom track a top track is flipped with, and its state.
    fn top_partner(&self, geom: &Geometry, p: Track) -> Option<(Track, Flipped)> {
        if p.0 >= 1 {
            let b = Track(p.0 - 1);
            if let Some(f) = self.state(b).filter(|f| f.side == Side::Next) {
                return Some((b, f));
            }
        }
        if p.0 + 1 < geom.tracks() {
            let b = Track(p.0 + 1);
            if let Some(f) = self.state(b).filter(|f| f.side == Side::Prev) {
                return Some((b, f));
            }
        }
        None
    }

    /// Map a home piece to the physical pieces holding it, in sector order.
    fn map_piece(&self, geom: &Geometry, p: HomePiece, out: &mut impl FnMut(HomePiece)) {
        if self.flipped_now == 0 {
            out(p);
            return;
        }
        match geom.kind(p.at.track) {
            TrackKind::Bottom => match self.state(p.at.track) {
                Some(f) => {
                    let s = swap_of(geom, p.at.track, f);
                    split(p, s.lo, s.m, s.top, 0, out);
                }
                None => out(p),
            },
            _ => match self.top_partner(geom, p.at.track) {
                Some((b, f)) => {
                    let s = swap_of(geom, b, f);
                    split(p, 0, s.m, b, s.lo, out);
                }
                None => out(p),
            },
        }
    }

    /// Host `[lba, lba+n)` as physical pieces.
    fn phys_pieces(&self, geom: &Geometry, lba: u64, n: u64, out: &mut Vec<HomePiece>) {
        self.for_phys_pieces(geom, lba, n, |p| out.push(p));
    }

    /// Call `f` for each physical piece of host `[lba, lba+n)`, in order
    /// ([`phys_pieces`](Self::phys_pieces) without a list).
    fn for_phys_pieces(&self, geom: &Geometry, lba: u64, n: u64, mut f: impl FnMut(HomePiece)) {
        for_home_pieces(geom, &self.res, lba, n, |p| self.map_piece(geom, p, &mut f));
    }

    /// Count one write request that landed on `pieces` (physical).
    fn count(&mut self, geom: &Geometry, pieces: &[HomePiece]) {
        // Per track of the request (a reused buffer: no allocation per write).
        let mut seen = std::mem::take(&mut self.seen);
        seen.clear();
        for p in pieces {
            let t = p.at.track;
            let mut c = Count {
                n: 1,
                ..Default::default()
            };
            if geom.kind(t) == TrackKind::Bottom {
                let nb = geom.sectors_in(t);
                let nbr = |x: u64| {
                    if x < geom.tracks() {
                        geom.sectors_in(Track(x))
                    } else {
                        nb
                    }
                };
                let m = nb
                    .min(if t.0 > 0 { nbr(t.0 - 1) } else { nb })
                    .min(nbr(t.0 + 1));
                let (s, e) = (p.at.sector, p.at.sector + p.count);
                c.head = (s < nb - m) as u32;
                c.tail = (e > m) as u32;
                if let Some(f) = self.state(t) {
                    let sw = swap_of(geom, t, f);
                    c.swapped = (s < sw.lo + sw.m && e > sw.lo) as u32;
                }
            }
            match seen.iter_mut().find(|x| x.0 == t.0) {
                Some(x) => {
                    x.1.head |= c.head;
                    x.1.tail |= c.tail;
                    x.1.swapped |= c.swapped;
                }
                None => seen.push((t.0, c)),
            }
        }
        for &(t, c) in &seen {
            let e = self.counts.entry(t).or_default();
            e.n += c.n;
            e.head += c.head;
            e.tail += c.tail;
            e.swapped += c.swapped;
        }
        self.seen = seen;
    }

    /// Whether top track `p` may take part in a new flip.
    fn flippable_top(&self, geom: &Geometry, p: Track) -> bool {
        p.0 < geom.tracks() && !self.res.contains(p) && self.top_partner(geom, p).is_none()
    }

    /// Algorithm 1's search: the flips and flip-backs to do for this interval's counts.
    pub fn plan(&self, geom: &Geometry, counts: &FxHashMap<u64, Count>) -> Vec<Planned> {
        let th = self.threshold;
        let n_of = |t: Track| counts.get(&t.0).map(|c| c.n as u64).unwrap_or(0);
        let mut hot: Vec<(u64, u64)> = counts
            .iter()
            .filter(|(&t, c)| geom.kind(Track(t)) == TrackKind::Bottom && c.n as u64 > th)
            .map(|(&t, c)| (c.n as u64, t))
            .collect();
        hot.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut plan: Vec<Planned> = vec![];
        let mut taken: Vec<Track> = vec![];
        for (n, t) in hot {
            if plan.len() as u64 >= self.max_flips {
                break;
            }
            let b = Track(t);
            if self.res.contains(b) {
                continue;
            }
            if let Some(f) = self.state(b) {
                // Flip back when the data that went down is now hotter than what went up.
                let s = swap_of(geom, b, f);
                let down = counts[&t].swapped as u64;
                if down.saturating_sub(n_of(s.top)) > th && !taken.contains(&s.top) {
                    plan.push(Planned {
                        bottom: b,
                        state: f,
                        back: true,
                    });
                    taken.push(s.top);
                }
                continue;
            }
            let mut best: Option<(u64, Side, Track)> = None;
            for side in [Side::Prev, Side::Next] {
                let Some(p) = (match side {
                    Side::Prev => t.checked_sub(1),
                    Side::Next => Some(t + 1),
                }) else {
                    continue;
                };
                let p = Track(p);
                if !self.flippable_top(geom, p) || taken.contains(&p) {
                    continue;
                }
                let pc = n_of(p);
                if best.is_none_or(|x| pc < x.0) {
                    best = Some((pc, side, p));
                }
            }
            let Some((pc, side, p)) = best else { continue };
            if n.saturating_sub(pc) > th {
                let c = counts[&t];
                let part = if c.tail > c.head {
                    Part::High
                } else {
                    Part::Low
                };
                plan.push(Planned {
                    bottom: b,
                    state: Flipped { side, part },
                    back: false,
                });
                taken.push(p);
            }
        }
        plan
    }

    /// End of an interval: what the last one decided and is still pending
    /// becomes overdue (it runs in the foreground before the next host
    /// request); decide anew.
    fn boundary(&mut self, geom: &Geometry) {
        self.writes_in_interval = 0;
        self.counters.intervals += 1;
        let mut counts = std::mem::take(&mut self.counts);
        self.overdue = self.pending.len() + self.current.is_some() as usize;
        let plan = self.plan(geom, &counts);
        // The next interval counts in the same map (no regrowing it every
        // interval; `plan` sorts what it takes, so the map's order is moot).
        counts.clear();
        self.counts = counts;
        self.counters.planned += plan.len() as u64;
        self.pending.extend(plan);
    }

    /// Count one write request on arrival or destage (Algorithm 1 lines 2-5).
    fn count_write(&mut self, geom: &Geometry, pieces: &[HomePiece]) {
        self.count(geom, pieces);
        self.writes_in_interval += 1;
        if self.writes_in_interval >= self.interval_writes {
            self.boundary(geom);
        }
    }

    /// The steps of flip `f`, or `None` if it is no longer valid.
    fn compile(&self, dev: &Device, f: Planned) -> Option<Relocation> {
        let geom = dev.geometry();
        let b = f.bottom;
        let top = match f.state.side {
            Side::Prev => b.0.checked_sub(1),
            Side::Next => Some(b.0 + 1),
        };
        let top = Track(top?);
        if b.0 >= geom.tracks() || geom.kind(b) != TrackKind::Bottom || self.res.contains(b) {
            return None;
        }
        let cur = self.state(b);
        let valid = if f.back {
            cur == Some(f.state)
        } else {
            cur.is_none() && self.flippable_top(geom, top)
        };
        if !valid {
            return None;
        }
        let s = swap_of(geom, b, f.state);
        let moves = [
            Move {
                src: PhysAddr {
                    track: s.bottom,
                    sector: s.lo,
                },
                dst: PhysAddr {
                    track: s.top,
                    sector: 0,
                },
                count: s.m,
            },
            Move {
                src: PhysAddr {
                    track: s.top,
                    sector: 0,
                },
                dst: PhysAddr {
                    track: s.bottom,
                    sector: s.lo,
                },
                count: s.m,
            },
        ];
        let update = (f.bottom.0, if f.back { None } else { Some(f.state.code()) });
        let tx = self.store.as_ref().map(|s| s.seq()).unwrap_or(0) + 1;
        let steps = relocation_steps(&self.rmw, dev, &moves, &[update], Cause::Flip, tx);
        Some(Relocation::new(geom, steps))
    }

    /// The flip in progress has committed: apply it to the in-memory map.
    fn complete(&mut self) {
        let Some((f, overdue)) = self.current.take() else {
            return;
        };
        if f.back {
            self.state.remove(&f.bottom.0);
            self.flipped_now -= 1;
            self.counters.flip_backs += 1;
        } else {
            self.state.insert(f.bottom.0, f.state.code() as u8);
            self.flipped_now += 1;
            self.counters.flips += 1;
        }
        if overdue {
            self.counters.foreground += 1;
        } else {
            self.counters.idle += 1;
        }
        self.overdue = self.overdue.saturating_sub(1);
    }

    /// Start the next valid planned flip; returns whether one started.
    fn start_next(&mut self, dev: &Device) -> bool {
        while let Some(f) = self.pending.pop_front() {
            match self.compile(dev, f) {
                Some(r) => {
                    self.rmw.in_flight = Some(r);
                    self.current = Some((f, self.overdue > 0));
                    return true;
                }
                None => {
                    self.counters.stale += 1;
                    self.overdue = self.overdue.saturating_sub(1);
                }
            }
        }
        false
    }

    /// Run one step of the flip in progress (starting the next one if none is).
    fn step(&mut self, dev: &mut Device) -> SimResult<StageOutcome> {
        self.store_for(dev);
        if !self.rmw.busy() && !self.start_next(dev) {
            return Ok(StageOutcome::Nothing);
        }
        if self.rmw.step(dev, self.store.as_mut())? {
            self.complete();
        }
        Ok(StageOutcome::Ran)
    }

    /// Perform one planned flip at once, all its steps (if still valid);
    /// returns whether it was done.
    pub fn execute(&mut self, dev: &mut Device, f: Planned) -> SimResult<bool> {
        self.store_for(dev);
        self.rmw.finish(dev, self.store.as_mut())?;
        self.complete();
        let Some(r) = self.compile(dev, f) else {
            return Ok(false);
        };
        self.rmw.in_flight = Some(r);
        self.current = Some((f, false));
        self.rmw.finish(dev, self.store.as_mut())?;
        self.complete();
        Ok(true)
    }

    /// Flip bottom track `b` with its higher neighbour at once (low LBAs),
    /// every step: the micro-benchmark of section 2.2's timing. Returns
    /// whether it flipped and the backup slot the record went to.
    pub(crate) fn flip_now(&mut self, dev: &mut Device, b: Track) -> SimResult<(bool, Track)> {
        let slot = self.rmw.backup.slot_near(b);
        let done = self.execute(
            dev,
            Planned {
                bottom: b,
                state: Flipped {
                    side: Side::Next,
                    part: Part::Low,
                },
                back: false,
            },
        )?;
        Ok((done, slot))
    }

    /// Whether the layer may use bottom track `b` and both its neighbours
    /// (none is reserved).
    pub(crate) fn host_track(&self, b: Track) -> bool {
        b.0 >= 1 && !(b.0 - 1..=b.0 + 1).any(|t| self.res.contains(Track(t)))
    }

    /// Bottom tracks currently flipped.
    pub fn flipped(&self) -> u64 {
        self.flipped_now
    }
}

impl Layer for ImrFlip {
    fn host_capacity(&self, _geom: &Geometry) -> Sectors {
        self.res.host_capacity()
    }
    fn reserved_home(&self) -> Vec<(Lba, Sectors)> {
        self.res.home_ranges()
    }
    fn needs(&self) -> Needs {
        Needs {
            arrivals: self.count_at_arrival,
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
        let mut pieces = std::mem::take(&mut self.arrival);
        pieces.clear();
        self.phys_pieces(dev.geometry(), lba.0, n.0, &mut pieces);
        let r = pieces
            .iter()
            .try_for_each(|p| self.rmw.read(dev, Cause::Host, p.at, p.count, out));
        self.arrival = pieces;
        r
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        self.write_batch(dev, std::slice::from_ref(w))
    }
    fn write_batch(&mut self, dev: &mut Device, ws: &[WriteReq]) -> SimResult<()> {
        self.store_for(dev);
        let geom = dev.geometry_arc();
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        let mut buf = std::mem::take(&mut self.arrival);
        for (i, w) in ws.iter().enumerate() {
            buf.clear();
            self.phys_pieces(&geom, w.lba.0, w.sectors.0, &mut buf);
            if !self.count_at_arrival {
                self.count_write(&geom, &buf);
            }
            pieces.extend(buf.iter().map(|&p| (p, i)));
        }
        self.arrival = buf;
        let result = self.rmw.write_pieces(dev, &mut pieces, ws);
        self.pieces = pieces;
        result
    }
    fn host_write_arrived(&mut self, geom: &Geometry, lba: Lba, n: Sectors) {
        if self.count_at_arrival {
            let mut buf = std::mem::take(&mut self.arrival);
            buf.clear();
            self.phys_pieces(geom, lba.0, n.0, &mut buf);
            self.count_write(geom, &buf);
            self.arrival = buf;
        }
    }
    fn background(&self) -> Background {
        self.rmw
            .background(!self.pending.is_empty(), self.overdue > 0)
    }
    fn stage(&mut self, dev: &mut Device, _queue: &QueueView) -> SimResult<StageOutcome> {
        self.step(dev)
    }
    fn write_must_wait(&mut self, geom: &Geometry, ws: &[WriteReq]) -> bool {
        if !self.rmw.busy() {
            return false;
        }
        let mut wait = false;
        for w in ws {
            self.for_phys_pieces(geom, w.lba.0, w.sectors.0, |p| {
                wait = wait
                    || self
                        .rmw
                        .must_wait(p.at.track, geom.kind(p.at.track) == TrackKind::Bottom);
            });
        }
        wait
    }
    fn intervals_completed(&self) -> Option<u64> {
        Some(self.counters.intervals)
    }
    fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        self.store_for(dev);
        let store = self
            .store
            .as_mut()
            .ok_or_else(|| SimError::Layer("map store missing".into()))?;
        store.recover(dev)?;
        let committed = store.seq();
        self.rmw.backup.recover(dev, committed)?;
        self.state.clear();
        self.flipped_now = 0;
        let ntracks = dev.geometry().tracks();
        for (&k, &v) in &store.map {
            if k % 2 != 0 || k >= ntracks || Flipped::from_code(v).is_none() {
                return Err(SimError::Medium(format!(
                    "flip map entry {k} -> {v} is not a bottom track's state"
                )));
            }
            self.state.insert(k, v as u8);
            self.flipped_now += 1;
        }
        self.rmw.written.set_all();
        Ok(())
    }
    fn report(&self) -> LayerReport {
        let mut r = LayerReport::new();
        self.rmw.report(&mut r);
        let c = &self.counters;
        r.insert("flips".into(), c.flips as f64);
        r.insert("flip_backs".into(), c.flip_backs as f64);
        r.insert("flips_idle".into(), c.idle as f64);
        r.insert("flips_foreground".into(), c.foreground as f64);
        r.insert("flips_planned".into(), c.planned as f64);
        r.insert("flips_stale".into(), c.stale as f64);
        r.insert("flip_intervals".into(), c.intervals as f64);
        r.insert("flipped_tracks".into(), self.flipped_now as f64);
        MapStore::report(self.store.as_ref(), &mut r);
        r.insert("map_bytes".into(), self.map_bytes as f64);
        r.insert("reserved_tracks".into(), self.res.tracks_reserved() as f64);
        r
    }
}

#[cfg(test)]
mod tests;
