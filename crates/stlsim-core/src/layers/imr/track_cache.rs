//! Selective track caching for IMR (`imr-cache`): paper 000 (Hajkazemi et
//! al.) section 2.3 and Algorithm 2.
//!
//! A few whole LBA groups are reserved, and `cache_tracks` (k, default 100,
//! Table 2) of their bottom tracks form a persistent cache: *bottom-only*
//! tracks whose top neighbours are reserved and never used, so the cache is
//! written like a conventional disk (no read-modify-write). The cache holds
//! "logical tracks": a slot is a run of cache sectors long enough for a full
//! home track plus a one-sector metadata header naming the home track. An
//! in-memory look-aside exception map (home track -> slot) redirects host I/O:
//! while a home track is cached, reads and writes of its LBAs go to the cache
//! copy, writes in place. Every `interval_writes` writes (default 20,000,
//! Table 2) the written tracks are counted (Algorithm 2) and the hottest
//! bottom tracks not yet cached are promoted; when the cache is full the
//! coldest cached tracks are evicted to make room. Bottom-track writes to
//! uncached tracks are served by read-modify-write ([`RmwEngine`]), top-track
//! writes directly.
//!
//! Operations (every step a real physical operation):
//! * **Promotion** of home track T into slot s: read T (cause `promote`),
//!   write its sectors into the slot, then write the slot header (a metadata
//!   record: magic, T, sequence number), then commit the map change. The
//!   paper's cost is 2 t_seek + 2 t_rot; the simulator adds the header (the
//!   slot's last sector lies on the next cache track: a track switch, which
//!   the paper leaves out, half a rotation and a sector) and the commit.
//! * **Eviction** of T from slot s: read the slot, write it home by a
//!   full-track read-modify-write (read T-1 and T+1, save them in the backup
//!   region, write T, rewrite T-1 and T+1: [`RmwEngine::write_track`] with
//!   one whole-track piece, the data write tagged `evict`), then commit. The
//!   paper's cost is 4 t_seek + 8 t_rot; the simulator adds track switches
//!   between neighbours and backup tracks, the backup record's per-track
//!   headers (its last sectors spill onto a third backup track) and the
//!   commit. The tests in `track_cache/tests.rs` pin both exactly.
//!
//! Choices where the paper is silent (parameters in brackets):
//! * **Where the cache lies** `cache_location`: `outer` (default, Table 2
//!   "OD": one run of groups at the outer edge) or `spread` over
//!   `cache_groups` runs placed evenly across the disk (a promotion uses a
//!   free slot in the run nearest the home track). Each run's outermost bottom
//!   is not used (its outer top neighbour is a host track), so a run of g
//!   groups yields gN - 1 cache tracks (gN at track 0).
//! * **Slots**: a slot is max-bottom-track + 1 sectors: data first, header
//!   last (so a scan finds a header only after the data is complete, and slot
//!   0 starts its data on a track boundary). Slots never straddle two runs;
//!   with the paper's equal 2 MB tracks, k cache tracks hold k - 1 slots per
//!   run (100 tracks: 99 home tracks). `cache_capacity_tracks` reports it.
//! * **Map persistence** `map_persistence`: `log` (default): the paper's
//!   log + checkpoint ([`MapStore`], one log record per promotion or
//!   eviction; the record is the commit point; headers are still written but
//!   not consulted). `scan`: no map on disk; recovery reads every cache track
//!   (t_rot each, the paper's cost) and rebuilds the map from the headers. A
//!   promotion commits when its header is written; an eviction commits by
//!   overwriting the header (one sector, cause `evict`), so a stale header
//!   can never bring an evicted track back. Duplicate headers for one home
//!   track cannot arise (an eviction commits before the track can be promoted
//!   again); recovery would keep the newest and clear the others.
//! * **Hot-track monitoring** (`count_at`): every host write request as it
//!   arrives (default, Algorithm 2's `ReceiveIO`), or every extent the write
//!   cache destages (`count_at = destage`), counts once and appends the
//!   bottom home tracks it touches to the interval's track log (the paper's
//!   `trackIdLog`); at the end of the interval the log is sorted and counted,
//!   then reset (time-limited counts). Top tracks are never cached: writing
//!   them costs no read-modify-write.
//! * **Selection**: `Hottest` = the (capacity) hottest bottom tracks of the
//!   interval, hottest first (ties: lower track). Each one not cached takes a
//!   free slot, else the coldest cached track (fewest writes this interval;
//!   ties: promoted earliest) is evicted for it, but only if the candidate
//!   was written more than `evict_threshold` (default 50, Table 2's
//!   hot/cold threshold) times more: Algorithm 2 as written (`0`) swaps
//!   tracks whose counts differ by noise, each eviction a full-track
//!   read-modify-write.
//! * **Background work**: the selection is a plan of moves (evict, promote)
//!   run as background work, one move at a time and one step per stage
//!   (`relocation.rs`), in idle time. A new interval replaces an unfinished
//!   plan (a move in progress finishes). **Foreground step**: if moves are
//!   still pending `foreground_after_writes` writes (default 1,000) after the
//!   plan was made (the host is never idle; a plan that replaces an
//!   unfinished one counts from the older), every later write owes one move,
//!   run in the foreground before the next host request: at most one
//!   eviction (~4 t_seek + 8 t_rot) or promotion per write. `0` runs the plan
//!   in the foreground at once, one move per write.
//! * **Crash consistency**: a promotion's data and header are written before
//!   its commit, so a crash leaves the track at home (the slot is free). An
//!   eviction's home write is a read-modify-write whose backup record is
//!   restored unconditionally after a crash and lazily cleared
//!   ([`RmwEngine::write_track`]); the slot is intact until the commit, so a
//!   crash before it leaves the track cached with its data, after it at home.
//!   Eviction does not use [`RmwEngine::relocate`]: that saves the source (the
//!   cache copy, which the eviction never endangers) in the backup region too
//!   — one more track write than the paper's analysis — and commits only
//!   through a [`MapStore`], which `scan` persistence does not have. The
//!   interval's counts and the plan are volatile and start afresh after a crash.
//! * **Memory** (`map_bytes`): reported for a firmware layout of the
//!   exception map — a slot table (u32 home track per slot) plus a sorted
//!   look-aside index of (u32 home track, u32 slot) pairs searched on every
//!   host I/O: `MAP_ENTRY_BYTES` = 12 bytes per slot, proportional to the
//!   cache, not the drive (the simulator itself uses a hash map). The track
//!   log is reported as `monitor_bytes` = 4 bytes (a u32 track number) per
//!   write of the interval: 80 KB for 20,000, the paper's "less than 0.25 MB".
//! * Backup region and map store: top tracks of their own reserved groups at
//!   `backup_location` (moved next to the cache if the cache is there; with
//!   `spread`, the default, in the middle, and more backup slots one every
//!   `backup_spacing_tracks` between the cache runs, the nearest one used),
//!   `backup_tracks` for records (they must hold two full top tracks) and 3
//!   for the map store in `log` mode. `skip_empty` as in `imr-rmw`.

use super::backup::BackupRegion;
use super::map_store::MapStore;
use super::region::Reserved;
use super::relocation::{track_rmw_steps, Relocation, Step};
use super::rmw::{
    for_track_groups, piece_data, sort_by_location, RmwEngine, BACKUP_PARAMS, SKIP_EMPTY,
};
use super::{for_home_pieces, home_pieces, HomePiece, COUNT_AT};
use crate::device::{Cause, Device};
use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, LayoutKind, TrackKind};
use crate::layers::{
    Background, Layer, LayerEntry, LayerReport, LayoutNeed, Needs, ParamKind, ParamSpec, Params,
    QueueView, StageOutcome, WriteReq,
};
use crate::medium::Token;
use crate::units::{Lba, PhysAddr, Sectors, Track};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Bytes of the in-memory exception map per cache slot (see the module comment).
pub const MAP_ENTRY_BYTES: u64 = 12;
/// Bytes per logged track number of the hot-track monitor.
pub const MONITOR_ENTRY_BYTES: u64 = 4;
const HEADER: u64 = 0x494d_5243_4143_4831; // "IMRCACH1"

/// The `imr-cache` layer's entry in `layers::REGISTRY`: name, parameters,
/// constructor.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "imr-cache",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "IMR selective track caching: hot bottom tracks cached in reserved bottom-only tracks",
    paper: "000 section 2.3, Algorithm 2",
    layout: LayoutNeed::Kind(LayoutKind::Imr),
    params: &[
        ParamSpec {
            name: "cache_tracks",
            kind: ParamKind::Int,
            unit: "tracks",
            default: "100",
            doc: "reserved bottom-only cache tracks (Table 2: 100)",
        },
        ParamSpec {
            name: "cache_location",
            kind: ParamKind::Choice(&["outer", "spread"]),
            unit: "-",
            default: "outer",
            doc: "cache at the outer diameter (Table 2: OD) or spread in groups across the disk",
        },
        ParamSpec {
            name: "cache_groups",
            kind: ParamKind::Int,
            unit: "groups",
            default: "4",
            doc: "with cache_location = spread: runs of cache tracks placed evenly across the disk",
        },
        ParamSpec {
            name: "interval_writes",
            kind: ParamKind::Int,
            unit: "writes",
            default: "20000",
            doc: "writes between selections of hot tracks (Table 2 update frequency: 20K)",
        },
        ParamSpec {
            name: "map_persistence",
            kind: ParamKind::Choice(&["log", "scan"]),
            unit: "-",
            default: "log",
            doc: "cache map persisted by log + checkpoint, or rebuilt by scanning the cache headers",
        },
        ParamSpec {
            name: "foreground_after_writes",
            kind: ParamKind::Int,
            unit: "writes",
            default: "1000",
            doc: "writes after which an unfinished plan runs one move per write in the foreground",
        },
        ParamSpec {
            name: "evict_threshold",
            kind: ParamKind::Int,
            unit: "writes",
            default: "50",
            doc: "evict a cached track only for one written more than this many times more in the interval",
        },
        COUNT_AT,
        SKIP_EMPTY,
        BACKUP_PARAMS[0],
        BACKUP_PARAMS[1],
        BACKUP_PARAMS[2],
    ],
    build: |p, g| Ok(Box::new(TrackCache::new(p, g)?)),
};

/// A run of cache tracks (one reserved region's bottom-only tracks).
#[derive(Debug)]
struct Run {
    tracks: Vec<Track>,
    /// Prefix sums of the tracks' sectors (len = tracks + 1).
    start: Vec<u64>,
    /// Middle physical track (for the nearest-run choice).
    mid: u64,
}

/// A slot: `len` sectors from offset `base` of run `run`.
#[derive(Clone, Copy, Debug)]
struct Slot {
    run: usize,
    base: u64,
}

/// A move of one home track (its number inside): into a cache slot, or from
/// its slot back home.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Move {
    Promote(u64),
    Evict(u64),
}

/// Counters reported under their own names (`promotions`, `evictions`, ...).
#[derive(Clone, Debug, Default)]
struct Counters {
    promotions: u64,
    evictions: u64,
    cache_write_pieces: u64,
    cache_read_pieces: u64,
    intervals: u64,
    planned_moves: u64,
    background_moves: u64,
    foreground_moves: u64,
    scan_recoveries: u64,
    stale_headers_cleared: u64,
    stale_moves: u64,
}

/// The `imr-cache` layer.
#[derive(Debug)]
pub struct TrackCache {
    res: Reserved,
    reserved_tracks: u64,
    rmw: RmwEngine,
    runs: Vec<Run>,
    slots: Vec<Slot>,
    /// Sectors per slot (a full bottom track + the header).
    slot_len: u64,
    scan: bool,
    store_tracks: Option<[Track; 3]>,
    store: Option<MapStore>,
    /// The look-aside exception map: home track -> slot.
    cached: FxHashMap<u64, u32>,
    /// Slot -> (home track, promotion sequence number).
    slot_home: Vec<Option<(u64, u64)>>,
    next_seq: u64,
    interval: u64,
    fg_after: u64,
    writes_in_interval: u64,
    writes_since_plan: u64,
    track_log: Vec<u32>,
    plan: VecDeque<Move>,
    /// The move in progress (its steps run in `rmw.in_flight`): the move,
    /// its slot, its header sequence number.
    current: Option<(Move, u32, u64)>,
    /// One move is owed in the foreground (the plan is overdue).
    fg_credit: bool,
    evict_threshold: u64,
    count_at_arrival: bool,
    counters: Counters,
    pieces: Vec<(HomePiece, usize)>,
    /// Scratch for mapping arriving writes.
    arrival: Vec<HomePiece>,
    /// Scratch for a read's or a write's home pieces.
    read_pieces: Vec<HomePiece>,
    /// Scratch for a slot's extents.
    ext: Vec<(PhysAddr, u32)>,
    /// Scratch of the interval's plan: track counts, the hottest, the victims.
    plan_scratch: PlanScratch,
}

/// Lists [`TrackCache`]'s plan reuses: track counts, the hottest tracks,
/// the eviction victims.
type PlanScratch = (Vec<(u64, u64)>, Vec<(u64, u64)>, Vec<(u64, u64, u64)>);

/// Place runs of `len` groups wanted at `want` groups without overlap on a
/// drive of `groups` groups: sweep up from the wanted starts, then down from
/// the end. Returns the starts, in the input order.
fn place(groups: u64, runs: &[(u64, u64)]) -> SimResult<Vec<u64>> {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| (runs[i].0, i));
    let mut start: Vec<u64> = runs.iter().map(|r| r.0).collect();
    let mut end = 0;
    for &i in &order {
        start[i] = start[i].max(end);
        end = start[i] + runs[i].1;
    }
    let mut limit = groups;
    for &i in order.iter().rev() {
        if start[i] + runs[i].1 > limit {
            if limit < runs[i].1 {
                return config_err("the track cache and the backup region do not fit on the drive");
            }
            start[i] = limit - runs[i].1;
        }
        limit = start[i];
    }
    let total: u64 = runs.iter().map(|r| r.1).sum();
    if total >= groups {
        return config_err(format!(
            "the drive has {groups} LBA groups; the track cache and backup region need {total}, leaving none for data"
        ));
    }
    Ok(start)
}

impl TrackCache {
    /// Build for a geometry.
    pub fn new(p: &Params, g: &Geometry) -> SimResult<TrackCache> {
        let k = p.u64("cache_tracks");
        let interval = p.u64("interval_writes");
        let scan = p.choice("map_persistence") == "scan";
        let spread = p.choice("cache_location") == "spread";
        let nruns = if spread { p.u64("cache_groups") } else { 1 };
        let backup_tracks = p.u64("backup_tracks");
        if interval == 0 {
            return config_err("interval_writes must be at least 1");
        }
        if k > g.tracks() || backup_tracks > g.tracks() {
            return config_err(format!(
                "cache_tracks = {k} and backup_tracks = {backup_tracks} cannot exceed the drive's {} tracks",
                g.tracks()
            ));
        }
        if nruns == 0 {
            return config_err("cache_groups must be at least 1");
        }
        if k < nruns.saturating_mul(2) {
            return config_err(format!(
                "cache_tracks = {k} over {nruns} group(s): each group needs at least 2 tracks \
                 (a cached track plus its header does not fit in one track)"
            ));
        }
        let (group, groups) = Reserved::groups_on(g)?;
        // Cache runs: tracks per run, groups per run (one bottom lost at the outer end), wanted place.
        let mut want: Vec<(u64, u64)> = vec![];
        let mut per_run = vec![];
        for i in 0..nruns {
            let n = k / nruns + u64::from(i < k % nruns);
            let len = (n + 1).div_ceil(group);
            let at = if spread {
                ((2 * i + 1) * groups / (2 * nruns)).saturating_sub(len / 2)
            } else {
                0
            };
            want.push((at, len));
            per_run.push(n);
        }
        let meta_tops = backup_tracks + if scan { 0 } else { 3 };
        let meta_len = (meta_tops + 1).div_ceil(group).max(1);
        let meta_at = match p.choice("backup_location") {
            "outer" => 0,
            "inner" => groups.saturating_sub(meta_len),
            _ => (groups / 2).saturating_sub(meta_len / 2),
        };
        want.push((meta_at, meta_len));
        let starts = place(groups, &want)?;
        let mut parts = vec![];
        let mut runs = vec![];
        for i in 0..nruns as usize {
            let r = Reserved::at_groups(g, starts[i], want[i].1)?;
            let tracks: Vec<Track> = r
                .fenced_bottoms(g)
                .into_iter()
                .take(per_run[i] as usize)
                .collect();
            if (tracks.len() as u64) < per_run[i] {
                return config_err(format!("could not reserve {} cache tracks", per_run[i]));
            }
            let mut start = vec![0u64];
            for t in &tracks {
                start.push(start[start.len() - 1] + g.sectors_in(*t) as u64);
            }
            let mid = (tracks[0].0 + tracks[tracks.len() - 1].0) / 2;
            runs.push(Run { tracks, start, mid });
            parts.push(r);
        }
        let meta = Reserved::at_groups(g, starts[nruns as usize], meta_len)?;
        if (meta.tops.len() as u64) < meta_tops {
            return config_err(format!(
                "could not reserve {meta_tops} top tracks for the backup region and map"
            ));
        }
        // The largest record: both whole top neighbours of a full-track eviction.
        let room: u64 = meta.tops[..backup_tracks as usize]
            .iter()
            .map(|&t| g.sectors_in(t) as u64 - 1)
            .sum();
        let need = 2
            * (1..g.tracks())
                .step_by(2)
                .map(|t| g.sectors_in(Track(t)) as u64)
                .max()
                .unwrap_or(0);
        if room < need {
            return config_err(format!(
                "backup_tracks = {backup_tracks} hold {room} sectors; an eviction saves up to {need} (two full top tracks)"
            ));
        }
        let bt = backup_tracks as usize;
        let mut slots = vec![meta.tops[..bt].to_vec()];
        let store_tracks = if scan {
            None
        } else {
            Some([meta.tops[bt], meta.tops[bt + 1], meta.tops[bt + 2]])
        };
        parts.push(meta);
        let mut runs_extra = vec![];
        if p.choice("backup_location") == "spread" {
            // Backup slots between the cache runs and the main region, so an
            // eviction's trip to its record stays short (see rmw::backup_from).
            let taken: Vec<(u64, u64)> = starts.iter().zip(&want).map(|(&s, w)| (s, w.1)).collect();
            for (r, tops) in super::rmw::spread_slots(p, g, backup_tracks, &taken)? {
                slots.push(tops);
                runs_extra.push(r);
            }
        }
        let backup = BackupRegion::spread(slots);
        let mut all: Vec<(u64, u64)> = parts.iter().flat_map(|p| p.runs(g)).collect();
        all.extend(runs_extra);
        let res = Reserved::from_runs(g, &all)?;
        let slot_len = g.max_sectors_per_track() as u64 + 1;
        let mut slots = vec![];
        for (i, run) in runs.iter().enumerate() {
            let n = run.start[run.start.len() - 1] / slot_len;
            slots.extend((0..n).map(|j| Slot {
                run: i,
                base: j * slot_len,
            }));
        }
        if slots.is_empty() {
            return config_err("the track cache holds no track: give it more cache_tracks");
        }
        let nslots = slots.len();
        let reserved_tracks = res.tracks_reserved();
        Ok(TrackCache {
            res,
            reserved_tracks,
            rmw: RmwEngine::new(backup, p.bool("skip_empty"), g.tracks()),
            runs,
            slots,
            slot_len,
            scan,
            store_tracks,
            store: None,
            cached: FxHashMap::default(),
            slot_home: vec![None; nslots],
            next_seq: 1,
            interval,
            fg_after: p.u64("foreground_after_writes"),
            writes_in_interval: 0,
            writes_since_plan: 0,
            track_log: vec![],
            plan: VecDeque::new(),
            current: None,
            fg_credit: false,
            evict_threshold: p.u64("evict_threshold"),
            count_at_arrival: p.choice("count_at") == "arrival",
            counters: Counters::default(),
            pieces: vec![],
            arrival: vec![],
            read_pieces: vec![],
            ext: vec![],
            plan_scratch: Default::default(),
        })
    }

    /// Home tracks the cache can hold.
    pub fn capacity_tracks(&self) -> u64 {
        self.slots.len() as u64
    }

    /// The in-memory map's size by the stated formula.
    pub fn map_bytes(&self) -> u64 {
        MAP_ENTRY_BYTES * self.capacity_tracks()
    }

    /// The hot-track monitor's size for a full interval.
    pub fn monitor_bytes(&self) -> u64 {
        MONITOR_ENTRY_BYTES.saturating_mul(self.interval)
    }

    /// The physical cache tracks, in slot order.
    pub fn cache_tracks(&self) -> impl Iterator<Item = Track> + '_ {
        self.runs.iter().flat_map(|r| r.tracks.iter().copied())
    }

    /// The physical extents of sectors `[off, off+n)` of slot `s`.
    fn extents(&self, s: u32, off: u64, n: u64, out: &mut Vec<(PhysAddr, u32)>) {
        out.clear();
        self.for_extents(s, off, n, |at, c| out.push((at, c)));
    }

    /// Call `f` with each physical extent of sectors `[off, off+n)` of slot
    /// `s`, in order ([`extents`](Self::extents) without a list).
    fn for_extents(&self, s: u32, off: u64, n: u64, mut f: impl FnMut(PhysAddr, u32)) {
        let slot = self.slots[s as usize];
        let run = &self.runs[slot.run];
        let mut cur = slot.base + off;
        let end = cur + n;
        while cur < end {
            let i = run.start.partition_point(|&x| x <= cur) - 1;
            let take = end.min(run.start[i + 1]) - cur;
            f(
                PhysAddr {
                    track: run.tracks[i],
                    sector: (cur - run.start[i]) as u32,
                },
                take as u32,
            );
            cur += take;
        }
    }

    /// The first cache track holding home track `t`, if it is cached.
    pub(crate) fn cache_track_of(&self, t: u64) -> Option<Track> {
        let &s = self.cached.get(&t)?;
        let mut at = None;
        self.for_extents(s, 0, 1, |a, _| at = at.or(Some(a.track)));
        at
    }

    /// The first track of the backup slot a record saving track `t` goes to.
    pub(crate) fn backup_near(&self, t: Track) -> Track {
        self.rmw.backup.slot_near(t)
    }

    /// Whether bottom track `t` and both its neighbours are host tracks.
    pub(crate) fn host_track(&self, t: Track) -> bool {
        t.0 >= 1 && !(t.0 - 1..=t.0 + 1).any(|x| self.res.contains(Track(x)))
    }

    /// Where slot `s`'s header lies.
    fn header_at(&self, s: u32) -> PhysAddr {
        let mut at = None;
        self.for_extents(s, self.slot_len - 1, 1, |a, _| at = at.or(Some(a)));
        at.expect("a slot's last sector lies on a cache track")
    }

    fn store(&mut self, dev: &Device) -> Option<&mut MapStore> {
        let tracks = self.store_tracks?;
        let bytes = self.map_bytes();
        Some(
            self.store
                .get_or_insert_with(|| MapStore::new(dev, tracks, bytes)),
        )
    }

    /// Read sectors of slot `s` for the host (appending tokens to `out`).
    fn read_slot(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        s: u32,
        off: u64,
        n: u64,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        // The extents go in a buffer kept between calls (no allocation per read).
        let mut ext = std::mem::take(&mut self.ext);
        self.extents(s, off, n, &mut ext);
        let r = ext
            .iter()
            .try_for_each(|&(at, c)| self.rmw.read(dev, cause, at, c, out).map(|_| ()));
        self.ext = ext;
        r
    }

    /// Write sectors of slot `s` in place (no read-modify-write: cache tracks have no live neighbours).
    fn write_slot(
        &self,
        dev: &mut Device,
        cause: Cause,
        s: u32,
        off: u64,
        n: u64,
        data: &[Token],
    ) -> SimResult<()> {
        // Each extent is written as it is found (no list per write).
        let mut done = 0usize;
        let mut r = Ok(());
        self.for_extents(s, off, n, |at, c| {
            if r.is_err() {
                return;
            }
            let chunk = if data.is_empty() {
                &[][..]
            } else {
                &data[done..done + c as usize]
            };
            r = dev.write(cause, at, c, chunk).map(|_| ());
            done += c as usize;
        });
        r
    }

    /// A free slot, in the run nearest home track `t`.
    fn free_slot(&self, t: u64) -> Option<u32> {
        let mut best: Option<(u64, u32)> = None;
        for (i, s) in self.slots.iter().enumerate() {
            if self.slot_home[i].is_none() {
                let d = self.runs[s.run].mid.abs_diff(t);
                if best.is_none_or(|b| d < b.0) {
                    best = Some((d, i as u32));
                }
            }
        }
        best.map(|b| b.1)
    }

    /// The steps of promoting home bottom track `t` into a free slot:
    /// read the track, write it into the slot, write the slot header, commit.
    /// `None` if it is cached already or no slot is free.
    fn compile_promote(&self, dev: &Device, t: u64) -> Option<(Relocation, u32)> {
        if self.cached.contains_key(&t) {
            return None;
        }
        let s = self.free_slot(t)?;
        let spt = dev.geometry().sectors_in(Track(t));
        let mut steps = vec![Step::Read {
            cause: Cause::Promote,
            at: PhysAddr {
                track: Track(t),
                sector: 0,
            },
            count: spt,
            off: 0,
        }];
        let mut ext = vec![];
        self.extents(s, 0, spt as u64, &mut ext);
        let mut off = 0usize;
        for (at, c) in ext {
            steps.push(Step::Write {
                cause: Cause::Promote,
                at,
                count: c,
                off,
                mark: false,
            });
            off += c as usize;
        }
        steps.push(Step::Header {
            cause: Cause::Promote,
            at: self.header_at(s),
            words: vec![HEADER, t, self.next_seq],
        });
        if self.store_tracks.is_some() {
            steps.push(Step::Commit {
                updates: vec![(t, Some(s as u64))],
                forget: false,
            });
        }
        Some((Relocation::new(dev.geometry(), steps), s))
    }

    /// The steps of evicting home track `t`: read the slot, write it home by
    /// a full-track read-modify-write, commit (log persistence) or retire
    /// the header (scan persistence). `None` if `t` is not cached.
    fn compile_evict(&mut self, dev: &Device, t: u64) -> Option<(Relocation, u32)> {
        let &s = self.cached.get(&t)?;
        let spt = dev.geometry().sectors_in(Track(t));
        let mut steps = vec![];
        let mut ext = vec![];
        self.extents(s, 0, spt as u64, &mut ext);
        let mut off = 0usize;
        for (at, c) in ext {
            steps.push(Step::Read {
                cause: Cause::Evict,
                at,
                count: c,
                off,
            });
            off += c as usize;
        }
        let saved = (track_rmw_steps(&self.rmw, dev, Track(t), Cause::Evict, 0, off, &mut steps)
            - off) as u64;
        if saved > 0 {
            self.rmw.counters.rmws += 1;
            self.rmw.counters.saved_sectors += saved;
        } else {
            self.rmw.counters.rmw_skipped_empty += 1;
        }
        if self.store_tracks.is_some() {
            steps.push(Step::Commit {
                updates: vec![(t, None)],
                forget: false,
            });
        } else {
            // Scan persistence: overwriting the header is the commit.
            steps.push(Step::Blank {
                cause: Cause::Evict,
                at: self.header_at(s),
            });
        }
        Some((Relocation::new(dev.geometry(), steps), s))
    }

    /// Start move `m`; returns whether it started (it may have gone stale).
    fn start(&mut self, dev: &Device, m: Move) -> bool {
        let r = match m {
            Move::Promote(t) => self.compile_promote(dev, t),
            Move::Evict(t) => self.compile_evict(dev, t),
        };
        match r {
            Some((r, s)) => {
                self.rmw.in_flight = Some(r);
                self.current = Some((m, s, self.next_seq));
                true
            }
            None => false,
        }
    }

    /// The move in progress has finished: apply it to the look-aside map.
    fn complete(&mut self) {
        let Some((m, s, seq)) = self.current.take() else {
            return;
        };
        match m {
            Move::Promote(t) => {
                self.next_seq = self.next_seq.max(seq + 1);
                self.cached.insert(t, s);
                self.slot_home[s as usize] = Some((t, seq));
                self.counters.promotions += 1;
            }
            Move::Evict(t) => {
                self.cached.remove(&t);
                self.slot_home[s as usize] = None;
                self.counters.evictions += 1;
            }
        }
        if self.fg_credit {
            self.fg_credit = false;
            self.counters.foreground_moves += 1;
        } else {
            self.counters.background_moves += 1;
        }
    }

    /// Run move `m` at once, every step; returns whether it was done.
    fn run_now(&mut self, dev: &mut Device, m: Move) -> SimResult<bool> {
        self.finish_current(dev)?;
        if !self.start(dev, m) {
            return Ok(false);
        }
        self.finish_current(dev)?;
        Ok(true)
    }

    fn finish_current(&mut self, dev: &mut Device) -> SimResult<()> {
        if self.rmw.busy() {
            self.store(dev);
            self.rmw.finish(dev, self.store.as_mut())?;
            self.complete();
        }
        Ok(())
    }

    /// Promote home bottom track `t` into a free slot, at once.
    pub(crate) fn promote(&mut self, dev: &mut Device, t: u64) -> SimResult<bool> {
        self.run_now(dev, Move::Promote(t))
    }

    /// Evict home track `t` from the cache, at once: a full-track read-modify-write home.
    pub(crate) fn evict(&mut self, dev: &mut Device, t: u64) -> SimResult<bool> {
        self.run_now(dev, Move::Evict(t))
    }

    /// Algorithm 2's selection at the end of an interval: count the track
    /// log, plan promotions of the hottest uncached tracks and evictions of
    /// colder cached ones.
    fn make_plan(&mut self) {
        let mut log = std::mem::take(&mut self.track_log);
        log.sort_unstable();
        // Lists kept from one interval to the next (no regrowing them every interval).
        let (mut counts, mut hottest, mut victims) = std::mem::take(&mut self.plan_scratch);
        counts.clear();
        for &t in &log {
            match counts.last_mut() {
                Some((lt, c)) if *lt == t as u64 => *c += 1,
                _ => counts.push((t as u64, 1)),
            }
        }
        log.clear();
        self.track_log = log;
        let count_of = |t: u64| {
            counts
                .binary_search_by_key(&t, |c| c.0)
                .map(|i| counts[i].1)
                .unwrap_or(0)
        };
        hottest.clear();
        hottest.extend_from_slice(&counts);
        hottest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        hottest.truncate(self.slots.len());
        // Cached tracks, coldest first (ties: promoted earliest).
        victims.clear();
        victims.extend(
            self.slot_home
                .iter()
                .flatten()
                .map(|&(t, seq)| (count_of(t), seq, t)),
        );
        victims.sort_unstable();
        let mut free = self.slot_home.iter().filter(|s| s.is_none()).count();
        let mut vi = 0;
        let overdue_plan = !self.plan.is_empty();
        self.plan.clear();
        for &(t, c) in &hottest {
            if self.cached.contains_key(&t) {
                continue;
            }
            if free > 0 {
                free -= 1;
            } else if vi < victims.len() && victims[vi].0 + self.evict_threshold < c {
                self.plan.push_back(Move::Evict(victims[vi].2));
                vi += 1;
            } else {
                break;
            }
            self.plan.push_back(Move::Promote(t));
        }
        self.plan_scratch = (counts, hottest, victims);
        self.counters.intervals += 1;
        self.counters.planned_moves += self.plan.len() as u64;
        self.writes_in_interval = 0;
        // A plan replacing an unfinished one is as overdue as the one it replaces.
        if !overdue_plan {
            self.writes_since_plan = 0;
        }
    }

    /// Run one step of the move in progress, starting the next planned one if none is.
    fn step(&mut self, dev: &mut Device) -> SimResult<StageOutcome> {
        if !self.rmw.busy() {
            loop {
                let Some(m) = self.plan.pop_front() else {
                    self.fg_credit = false;
                    return Ok(StageOutcome::Nothing);
                };
                if self.start(dev, m) {
                    break;
                }
                self.counters.stale_moves += 1;
            }
        }
        self.store(dev);
        if self.rmw.step(dev, self.store.as_mut())? {
            self.complete();
        }
        Ok(StageOutcome::Ran)
    }

    /// Count one write request (Algorithm 2 lines 3-4) on arrival or destage:
    /// log its bottom home tracks; at the end of an interval, plan.
    fn count_write(&mut self, pieces: &[HomePiece], geom: &Geometry) {
        self.writes_in_interval += 1;
        self.writes_since_plan += 1;
        for p in pieces {
            if geom.kind(p.at.track) == TrackKind::Bottom {
                self.track_log.push(p.at.track.0 as u32);
            }
        }
        if self.writes_in_interval >= self.interval {
            self.make_plan();
        }
        // The bounded foreground step: one move per write once the plan is overdue.
        if !self.plan.is_empty() && self.writes_since_plan >= self.fg_after {
            self.fg_credit = true;
        }
    }

    /// Rebuild the map from the slot headers (scan persistence): one whole-track read per cache track.
    fn scan_cache(&mut self, dev: &mut Device) -> SimResult<()> {
        let mut at_header: FxHashMap<(u64, u32), u32> = FxHashMap::default();
        for s in 0..self.slots.len() as u32 {
            let h = self.header_at(s);
            at_header.insert((h.track.0, h.sector), s);
        }
        let tracks: Vec<Track> = self.cache_tracks().collect();
        let mut found: Vec<(u64, u64, u32)> = vec![]; // (home, seq, slot)
        let mut sink = vec![];
        for t in tracks {
            sink.clear();
            dev.read(
                Cause::Recovery,
                PhysAddr {
                    track: t,
                    sector: 0,
                },
                dev.geometry().sectors_in(t),
                &mut sink,
            )?;
            for r in dev.meta_records(t) {
                if r.words.len() < 3 || r.words[0] != HEADER {
                    continue;
                }
                let home = r.words[1];
                let valid = home < dev.geometry().tracks()
                    && dev.geometry().kind(Track(home)) == TrackKind::Bottom
                    && !self.res.contains(Track(home));
                if let (true, Some(&s)) = (valid, at_header.get(&(t.0, r.sector))) {
                    found.push((home, r.words[2], s));
                }
            }
        }
        // Newest header per home track wins; older duplicates are cleared.
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut stale = vec![];
        for (i, &(home, seq, s)) in found.iter().enumerate() {
            if i > 0 && found[i - 1].0 == home {
                stale.push(s);
                continue;
            }
            self.cached.insert(home, s);
            self.slot_home[s as usize] = Some((home, seq));
            self.next_seq = self.next_seq.max(seq + 1);
        }
        for s in stale {
            let blank = if dev.carries_data() {
                vec![Token::EMPTY]
            } else {
                vec![]
            };
            dev.write(Cause::Recovery, self.header_at(s), 1, &blank)?;
            self.counters.stale_headers_cleared += 1;
        }
        self.counters.scan_recoveries += 1;
        Ok(())
    }
}

impl Layer for TrackCache {
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
        let geom = dev.geometry_arc();
        let mut pieces = std::mem::take(&mut self.read_pieces);
        pieces.clear();
        home_pieces(&geom, &self.res, lba.0, n.0, &mut pieces);
        let r = pieces.iter().try_for_each(|p| {
            match self.cached.get(&p.at.track.0).copied() {
                Some(s) => {
                    self.read_slot(dev, Cause::Host, s, p.at.sector as u64, p.count as u64, out)?;
                    self.counters.cache_read_pieces += 1;
                }
                None => {
                    self.rmw.read(dev, Cause::Host, p.at, p.count, out)?;
                }
            }
            Ok(())
        });
        self.read_pieces = pieces;
        r
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        self.write_batch(dev, std::slice::from_ref(w))
    }
    fn write_batch(&mut self, dev: &mut Device, ws: &[WriteReq]) -> SimResult<()> {
        let geom = dev.geometry_arc();
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        let mut buf = std::mem::take(&mut self.read_pieces);
        for (i, w) in ws.iter().enumerate() {
            buf.clear();
            home_pieces(&geom, &self.res, w.lba.0, w.sectors.0, &mut buf);
            pieces.extend(buf.iter().map(|&p| (p, i)));
            if !self.count_at_arrival {
                self.count_write(&buf, &geom);
            }
        }
        self.read_pieces = buf;
        sort_by_location(&mut pieces);
        let result = for_track_groups(&pieces, |t, group| match self.cached.get(&t.0).copied() {
            Some(s) => {
                for &(p, o) in group {
                    self.write_slot(
                        dev,
                        ws[o].cause,
                        s,
                        p.at.sector as u64,
                        p.count as u64,
                        piece_data(&ws[o], &p),
                    )?;
                    self.counters.cache_write_pieces += 1;
                }
                Ok(())
            }
            None => self.rmw.write_group(dev, t, group, ws),
        });
        self.pieces = pieces;
        result
    }
    fn host_write_arrived(&mut self, geom: &Geometry, lba: Lba, n: Sectors) {
        if self.count_at_arrival {
            let mut buf = std::mem::take(&mut self.arrival);
            buf.clear();
            home_pieces(geom, &self.res, lba.0, n.0, &mut buf);
            self.count_write(&buf, geom);
            self.arrival = buf;
        }
    }
    fn background(&self) -> Background {
        self.rmw.background(!self.plan.is_empty(), self.fg_credit)
    }
    fn stage(&mut self, dev: &mut Device, _queue: &QueueView) -> SimResult<StageOutcome> {
        self.step(dev)
    }
    fn write_must_wait(&mut self, geom: &Geometry, ws: &[WriteReq]) -> bool {
        if !self.rmw.busy() {
            return false;
        }
        // Without lists of pieces or extents (no allocation per write).
        let mut wait = false;
        for w in ws {
            for_home_pieces(geom, &self.res, w.lba.0, w.sectors.0, |p| {
                wait = wait
                    || match self.cached.get(&p.at.track.0) {
                        Some(&s) => {
                            let mut any = false;
                            self.for_extents(s, p.at.sector as u64, p.count as u64, |at, _| {
                                any = any || self.rmw.must_wait(at.track, false);
                            });
                            any
                        }
                        None => self
                            .rmw
                            .must_wait(p.at.track, geom.kind(p.at.track) == TrackKind::Bottom),
                    };
            });
            if wait {
                return true;
            }
        }
        false
    }
    fn intervals_completed(&self) -> Option<u64> {
        Some(self.counters.intervals)
    }
    fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        self.rmw.written.set_all();
        let committed = if self.scan {
            self.scan_cache(dev)?;
            0
        } else {
            let nslots = self.slots.len() as u64;
            let tracks = dev.geometry().tracks();
            let Some(store) = self.store(dev) else {
                return Ok(());
            };
            store.recover(dev)?;
            let entries: Vec<(u64, u64)> = store.map.iter().map(|(&k, &v)| (k, v)).collect();
            let seq = store.seq();
            for (home, s) in entries {
                if s < nslots && home < tracks {
                    self.cached.insert(home, s as u32);
                    self.slot_home[s as usize] = Some((home, 0));
                }
            }
            seq
        };
        self.rmw.backup.recover(dev, committed)
    }
    fn report(&self) -> LayerReport {
        let mut r = LayerReport::new();
        self.rmw.report(&mut r);
        let c = &self.counters;
        for (k, v) in [
            ("promotions", c.promotions),
            ("evictions", c.evictions),
            ("cache_write_pieces", c.cache_write_pieces),
            ("cache_read_pieces", c.cache_read_pieces),
            ("intervals", c.intervals),
            ("planned_moves", c.planned_moves),
            ("background_moves", c.background_moves),
            ("foreground_moves", c.foreground_moves),
            ("scan_recoveries", c.scan_recoveries),
            ("stale_headers_cleared", c.stale_headers_cleared),
            ("stale_moves", c.stale_moves),
        ] {
            r.insert(k.into(), v as f64);
        }
        MapStore::report(self.store.as_ref(), &mut r);
        r.insert("map_bytes".into(), self.map_bytes() as f64);
        r.insert("monitor_bytes".into(), self.monitor_bytes() as f64);
        r.insert(
            "cache_capacity_tracks".into(),
            self.capacity_tracks() as f64,
        );
        r.insert("cached_tracks".into(), self.cached.len() as f64);
        r.insert("reserved_tracks".into(), self.reserved_tracks as f64);
        r
    }
}

#[cfg(test)]
mod tests;
