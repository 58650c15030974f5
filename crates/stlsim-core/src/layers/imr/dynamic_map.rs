//! Dynamic track mapping for IMR (`imr-dtm`): paper 000 section 2.4 and
//! Algorithm 3.
//!
//! All host bottom-track LBAs are concatenated (bottom tracks in physical
//! order, skipping the reserved region) and cut into equal *pseudo-tracks* of
//! P sectors; all top-track LBAs likewise, with the same P. The last
//! pseudo-track of each space may be shorter and never moves. Pseudo-tracks
//! are grouped into *zones*; within a zone a map sends every logical
//! pseudo-track to a physical one (a permutation; initially the identity).
//! Host I/O maps each sector home -> (space, offset) -> logical pseudo-track
//! -> physical pseudo-track -> (track, sector), split at pseudo-track and
//! physical-track boundaries. Writes that land on a bottom track go through
//! [`RmwEngine::write_track`] (read-modify-write through the backup region),
//! top-track writes go straight to the medium. Every `interval_writes`
//! writes the layer looks at the interval's write counts and, per zone,
//! pairs the hottest bottom pseudo-tracks with the coldest top ones (Algorithm
//! 3, `RemapTracks`); a pair whose write-count gap exceeds `swap_threshold` is
//! swapped: the bottom pseudo-track's data goes to the top location and vice
//! versa, as one crash-safe [`RmwEngine::relocate`] (every source and every
//! endangered top-track span is saved in the backup region first) whose map
//! change is committed to the [`MapStore`] log (checkpointed when the log
//! track is full).
//!
//! Choices where the paper is silent (parameters in brackets):
//! * **Pseudo-track size** [`pseudo_track_sectors`, 0 = the mean host
//!   bottom-track size, i.e. exactly one bottom track on a uniform drive]:
//!   bottom pseudo-tracks are then track-aligned on uniform drives and top
//!   pseudo-tracks straddle two top tracks whenever tops are smaller
//!   (`top_ratio` < 1).
//! * **Zones** [`zone_pseudo_tracks`, default 256 as the paper]: with Z
//!   zones, zone z holds bottom pseudo-tracks `[z*Nb/Z, (z+1)*Nb/Z)` and top
//!   pseudo-tracks `[z*Nt/Z, (z+1)*Nt/Z)` (integer division), Z being the
//!   smallest count for which no zone exceeds `zone_pseudo_tracks` entries.
//!   The proportional split keeps a zone's bottoms and tops at the same radius
//!   even when tops hold fewer sectors, so a swap never seeks far. A zone map
//!   entry needs ceil(log2(zone_pseudo_tracks)) bits (8 for 256); `map_bytes`
//!   is that times the number of pseudo-tracks (the paper: ~13 M tracks of a
//!   20 TB drive at 8 bits, ~12.5 MB). Persistently only the entries that
//!   differ from the identity are logged, keyed by the global pseudo-track
//!   number (bottoms `0..Nb`, tops `Nb..Nb+Nt`). The interval's write counts
//!   (at most `interval_writes` entries, the paper's < 0.25 MB trackIdLog)
//!   are not part of `map_bytes`.
//! * **Temperature** (`count_at`): a write request (a host write as it
//!   arrives, before the write cache — default, Algorithm 3's `ReceiveIO` —
//!   or, with `count_at = destage`, one extent the write cache destages)
//!   adds one to the count of every logical pseudo-track it touches (the
//!   paper's trackIdLog, kept as counts). Counts follow the data (logical
//!   pseudo-tracks), not the location, and are reset after every interval.
//! * **Pairing**: per zone, bottom-resident pseudo-tracks with a count above
//!   `swap_threshold` in decreasing count order, each paired with the
//!   remaining top-resident pseudo-track of the zone with the lowest count.
//!   Section 2.4 says only "we periodically check for hot bottom pseudotracks
//!   and swap the hottest bottom with the coldest top tracks"; among equally
//!   cold tops (most are: zero writes in the interval) \[`cold_tie`\]
//!   chooses: `nearest` (default: the physically nearest, the shortest
//!   seek; often the adjacent top, so DTM then makes flipping's moves) or
//!   `first` (the zone's first, outermost, top); then by number;
//!   pairing stops in the zone at the first gap <= `swap_threshold`.
//! * **Bound** [`max_swaps`, default 50]: Algorithm 3 has no bound; Table 2
//!   lists "max flips 50" for the "dynamic track mapping and flipping
//!   configuration", which we apply as the most swaps planned per interval
//!   over all zones, largest gaps first. Whether the paper bounded per zone or
//!   per interval is not said.
//! * **When**: swaps are background work, one swap at a time and one step of
//!   it per stage (`relocation.rs`), run in idle time: a host request that
//!   arrives during a swap waits for one step. A new plan replaces the swaps
//!   still pending from the previous one (their counts are stale); a swap in
//!   progress finishes. If the host leaves no idle time, one pending swap is
//!   owed in the foreground (run before the next host request) once
//!   `foreground_every_writes` writes (default 400 = 20,000 / 50, so a full
//!   plan still completes within one interval) have passed without swap
//!   progress (0: never).
//! * **Swap mechanics**: the two pseudo-tracks are moved as one relocation,
//!   cut into per-track pieces where either side crosses a physical track
//!   boundary. The endangered top-track spans (the angular overlap of every
//!   bottom destination on its written top neighbours, merged per track,
//!   less the relocation's own top destinations) are passed to `relocate` as
//!   moves onto themselves, so they are read, saved, and rewritten after the
//!   bottom writes like `relocate`'s own collateral (which is then empty),
//!   but in the paper's order: T' (the cold top), T-1, T+1 and T (the hot bottom)
//!   are read and saved, then T, T-1, T+1 and T' written, then the log record.
//!   A swap's moves are tagged `swap`; its
//!   backup record is tagged `backup` and its log record `metadata`.
//! * **Cost** (tests pin it): an aligned swap is 12 whole-track accesses, two
//!   partial ones (backup tail, log record) = 13 t_rot in the average model,
//!   as the paper's 5 t_seek + 13 t_rot, with 6 long seeks (the sixth is to
//!   the log); a pseudo-track straddling two top tracks costs ~16.5 t_rot.
//! * **Backup region** [`backup_location`, `backup_tracks` default 8,
//!   `backup_spacing_tracks`]: one swap saves 2P sectors plus up to (k+1)
//!   top tracks (k = bottom tracks a pseudo-track can touch); the build
//!   fails with a configuration error if a slot cannot hold that. Three more
//!   reserved top tracks hold the map store (two checkpoint slots and the
//!   log). With `spread` (the default, as `imr-rmw`) the slots lie across
//!   the disk and a swap's record goes to the one nearest its bottom track.
//! * `skip_empty` (default on) as in `imr-rmw`.
//! * Recovery: the map store first, then the backup region (a swap whose log
//!   record was not written is rolled back), then every track counts as
//!   written. Interval counts and pending swaps are volatile and lost.

use super::map_store::MapStore;
use super::region::Reserved;
use super::relocation::{relocation_steps, Relocation};
use super::rmw::{backup_from, Move, RmwEngine, BACKUP_PARAMS, SKIP_EMPTY};
use super::{for_home_pieces, top_neighbours, HomePiece, COUNT_AT};
use crate::device::{Cause, Device};
use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, LayoutKind, TrackKind};
use crate::layers::{
    Background, Layer, LayerEntry, LayerReport, LayoutNeed, Needs, ParamKind, ParamSpec, Params,
    QueueView, StageOutcome, WriteReq,
};
use crate::medium::Token;
use crate::units::{Lba, PhysAddr, Sectors, Track};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The `imr-dtm` layer's entry in `layers::REGISTRY`: name, parameters,
/// constructor.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "imr-dtm",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "IMR dynamic track mapping: swap hot bottom pseudo-tracks with cold top ones within zones",
    paper: "000 section 2.4",
    layout: LayoutNeed::Kind(LayoutKind::Imr),
    params: &[
        ParamSpec {
            name: "pseudo_track_sectors",
            kind: ParamKind::Int,
            unit: "sectors",
            default: "0",
            doc: "pseudo-track size (0: the mean host bottom-track size)",
        },
        ParamSpec {
            name: "zone_pseudo_tracks",
            kind: ParamKind::Int,
            unit: "pseudo-tracks",
            default: "256",
            doc: "most pseudo-tracks (bottom and top) per zone; map entries take ceil(log2) bits",
        },
        ParamSpec {
            name: "interval_writes",
            kind: ParamKind::Int,
            unit: "writes",
            default: "20000",
            doc: "writes between remapping decisions (the paper's updateFrequency)",
        },
        ParamSpec {
            name: "swap_threshold",
            kind: ParamKind::Int,
            unit: "writes",
            default: "50",
            doc: "swap when the hot bottom's interval write count exceeds the cold top's by more than this",
        },
        ParamSpec {
            name: "cold_tie",
            kind: ParamKind::Choice(&["nearest", "first"]),
            unit: "-",
            default: "nearest",
            doc: "among equally cold top pseudo-tracks, swap with the physically nearest (shortest seek) or the zone's first",
        },
        ParamSpec {
            name: "max_swaps",
            kind: ParamKind::Int,
            unit: "swaps",
            default: "50",
            doc: "most swaps planned per interval over all zones (Table 2's max flips)",
        },
        ParamSpec {
            name: "foreground_every_writes",
            kind: ParamKind::Int,
            unit: "writes",
            default: "400",
            doc: "with swaps pending and no idle progress for this many writes, do one in the foreground (0: never)",
        },
        COUNT_AT,
        SKIP_EMPTY,
        BACKUP_PARAMS[0],
        ParamSpec {
            name: "backup_tracks",
            kind: ParamKind::Int,
            unit: "tracks",
            default: "8",
            doc: "top tracks of the backup region (of each slot when spread) holding records (must hold one swap)",
        },
        BACKUP_PARAMS[2],
    ],
    build: |p, g| Ok(Box::new(ImrDtm::new(p, g)?)),
};

const BOTTOM: usize = 0;
const TOP: usize = 1;

/// A run of same-size tracks of one space (every other physical track).
#[derive(Clone, Copy, Debug)]
struct Run {
    first: u64,
    n: u64,
    spt: u32,
    start: u64,
}

/// The concatenated LBAs of all host bottom (or top) tracks, as runs.
#[derive(Clone, Debug, Default)]
struct Space {
    runs: Vec<Run>,
    total: u64,
    tracks: u64,
}

impl Space {
    fn build(geom: &Geometry, res: &Reserved, parity: u64) -> Space {
        let mut s = Space::default();
        let mut t = parity;
        while t < geom.tracks() {
            if res.contains(Track(t)) {
                let end = res.part_end(Track(t)).0;
                t = end + (parity + end) % 2;
                continue;
            }
            let spt = geom.sectors_in(Track(t));
            match s.runs.last_mut() {
                Some(r) if r.first + 2 * r.n == t && r.spt == spt => r.n += 1,
                _ => s.runs.push(Run {
                    first: t,
                    n: 1,
                    spt,
                    start: s.total,
                }),
            }
            s.total += spt as u64;
            s.tracks += 1;
            t += 2;
        }
        s
    }

    /// Offset in the space of sector `sector` of track `t` (a track of the space).
    fn offset(&self, t: Track, sector: u32) -> u64 {
        let i = self
            .runs
            .partition_point(|r| r.first <= t.0)
            .saturating_sub(1);
        let r = &self.runs[i];
        r.start + (t.0.saturating_sub(r.first) / 2) * r.spt as u64 + sector as u64
    }

    /// Where offset `off` lies, and how many sectors of its track follow it.
    fn locate(&self, off: u64) -> (PhysAddr, u32) {
        let i = self
            .runs
            .partition_point(|r| r.start <= off)
            .saturating_sub(1);
        let r = &self.runs[i];
        let k = (off - r.start) / r.spt as u64;
        let sector = ((off - r.start) % r.spt as u64) as u32;
        (
            PhysAddr {
                track: Track(r.first + 2 * k),
                sector,
            },
            r.spt - sector,
        )
    }

    fn min_spt(&self) -> u32 {
        self.runs.iter().map(|r| r.spt).min().unwrap_or(0)
    }

    fn max_spt(&self) -> u32 {
        self.runs.iter().map(|r| r.spt).max().unwrap_or(0)
    }
}

/// Swap counters, reported as `swaps`, `swap_plans`, `swaps_stale` and so on.
#[derive(Clone, Debug, Default)]
struct Counters {
    swaps: u64,
    foreground_swaps: u64,
    plans: u64,
    planned: u64,
    stale: u64,
    dropped: u64,
    swap_sectors: u64,
    /// Writes to bottom-home data that a swap had moved to a top.
    spared: u64,
}

/// The `imr-dtm` layer.
#[derive(Debug)]
pub struct ImrDtm {
    res: Reserved,
    rmw: RmwEngine,
    store_tracks: [Track; 3],
    store: Option<MapStore>,
    map_bytes: u64,
    spaces: [Space; 2],
    /// Pseudo-track size in sectors.
    p: u64,
    /// Pseudo-tracks per space (the last may be short).
    n: [u64; 2],
    /// Full-size pseudo-tracks per space (the ones that may move).
    full: [u64; 2],
    zones: u64,
    zone_size: u64,
    /// Physical pseudo-track -> logical, where not the identity.
    inverse: HashMap<u64, u64>,
    /// Writes per logical pseudo-track in the current interval.
    counts: HashMap<u64, u32>,
    writes: u64,
    interval: u64,
    threshold: u64,
    max_swaps: u64,
    /// Among equally cold tops, the nearest (else the zone's first).
    tie_nearest: bool,
    fg_every: u64,
    /// Planned swaps: (hot logical, cold logical).
    pending: VecDeque<(u64, u64)>,
    since_progress: u64,
    /// The swap in progress (its steps run in `rmw.in_flight`): hot and cold
    /// logical pseudo-tracks, their physical places `t` (top) and `b` (bottom).
    current: Option<(u64, u64, u64, u64)>,
    /// Scratch for mapping arriving writes: pieces and touched pseudo-tracks.
    arrival: (Vec<HomePiece>, Vec<u64>),
    /// One swap is owed in the foreground.
    fg_credit: bool,
    count_at_arrival: bool,
    c: Counters,
    /// Scratch for a read's or a write's pieces and touched pseudo-tracks.
    buf: (Vec<HomePiece>, Vec<u64>),
    /// Scratch for a batch's pieces.
    pieces: Vec<(HomePiece, usize)>,
    sector_bytes: u64,
}

impl ImrDtm {
    /// Build for a geometry.
    pub fn new(p: &Params, g: &Geometry) -> SimResult<ImrDtm> {
        let bt = p.u64("backup_tracks");
        if bt < 3 {
            return config_err(format!("backup_tracks = {bt}: at least 3 are needed"));
        }
        let zp = p.u64("zone_pseudo_tracks");
        if zp < 2 {
            return config_err(format!(
                "zone_pseudo_tracks = {zp}: a zone needs at least 2 pseudo-tracks"
            ));
        }
        let interval = p.u64("interval_writes");
        if interval == 0 {
            return config_err("interval_writes must be at least 1");
        }
        let (res, backup, store) = backup_from(p, g, 3)?;
        let store_tracks = [store[0], store[1], store[2]];
        let spaces = [Space::build(g, &res, 0), Space::build(g, &res, 1)];
        if spaces[BOTTOM].total == 0 || spaces[TOP].total == 0 {
            return config_err(
                "imr-dtm needs host bottom and top tracks outside the reserved region",
            );
        }
        let mut ps = p.u64("pseudo_track_sectors");
        if ps == 0 {
            ps = (spaces[BOTTOM].total as f64 / spaces[BOTTOM].tracks as f64)
                .round()
                .max(1.0) as u64;
        }
        let n = [
            spaces[BOTTOM].total.div_ceil(ps),
            spaces[TOP].total.div_ceil(ps),
        ];
        let full = [spaces[BOTTOM].total / ps, spaces[TOP].total / ps];
        let mut zones = (n[0] + n[1]).div_ceil(zp).max(1);
        while n[0].div_ceil(zones) + n[1].div_ceil(zones) > zp {
            zones += 1;
        }
        let bits = 64 - (zp - 1).leading_zeros() as u64;
        let map_bytes = ((n[0] + n[1]) * bits).div_ceil(8);
        // One swap saves 2P sectors and the written spans of the top
        // neighbours of the bottom tracks the bottom pseudo-track touches.
        let touched = ps.div_ceil(spaces[BOTTOM].min_spt().max(1) as u64) + 1;
        let need = 2 * ps + (touched + 1) * spaces[TOP].max_spt() as u64;
        let room = backup.room_in(g);
        if room < need {
            return config_err(format!(
                "backup_tracks = {bt} holds {room} sectors; a swap of {ps}-sector pseudo-tracks may save {need}: \
                 raise backup_tracks"
            ));
        }
        Ok(ImrDtm {
            rmw: RmwEngine::new(backup, p.bool("skip_empty"), g.tracks()),
            res,
            store_tracks,
            store: None,
            map_bytes,
            spaces,
            p: ps,
            n,
            full,
            zones,
            zone_size: zp,
            inverse: HashMap::new(),
            counts: HashMap::new(),
            writes: 0,
            interval,
            threshold: p.u64("swap_threshold"),
            max_swaps: p.u64("max_swaps"),
            tie_nearest: p.choice("cold_tie") == "nearest",
            fg_every: p.u64("foreground_every_writes"),
            pending: VecDeque::new(),
            since_progress: 0,
            current: None,
            arrival: (vec![], vec![]),
            fg_credit: false,
            count_at_arrival: p.choice("count_at") == "arrival",
            c: Counters::default(),
            buf: (vec![], vec![]),
            pieces: vec![],
            sector_bytes: g.sector_bytes() as u64,
        })
    }

    /// Memory of the zone maps by the paper's formula, in bytes.
    pub fn map_bytes(&self) -> u64 {
        self.map_bytes
    }

    fn store(&mut self, dev: &Device) -> &mut MapStore {
        let (tracks, bytes) = (self.store_tracks, self.map_bytes);
        self.store
            .get_or_insert_with(|| MapStore::new(dev, tracks, bytes))
    }

    /// Global pseudo-track number of pseudo-track `q` of `space`.
    fn id(&self, space: usize, q: u64) -> u64 {
        if space == BOTTOM {
            q
        } else {
            self.n[BOTTOM] + q
        }
    }

    /// Space and index of a global pseudo-track number.
    fn split_id(&self, id: u64) -> (usize, u64) {
        if id < self.n[BOTTOM] {
            (BOTTOM, id)
        } else {
            (TOP, id - self.n[BOTTOM])
        }
    }

    /// Where logical pseudo-track `l` is stored.
    fn phys_of(&self, l: u64) -> u64 {
        self.store
            .as_ref()
            .and_then(|s| s.map.get(&l).copied())
            .unwrap_or(l)
    }

    /// Which logical pseudo-track physical pseudo-track `s` holds.
    fn log_of(&self, s: u64) -> u64 {
        self.inverse.get(&s).copied().unwrap_or(s)
    }

    /// The zone of pseudo-track `q` of `space`.
    fn zone_of(&self, space: usize, q: u64) -> u64 {
        (((q as u128 + 1) * self.zones as u128 - 1) / self.n[space] as u128) as u64
    }

    /// The pseudo-tracks of `space` in zone `z`.
    fn zone_range(&self, space: usize, z: u64) -> std::ops::Range<u64> {
        let at = |z: u64| ((z as u128 * self.n[space] as u128) / self.zones as u128) as u64;
        at(z)..at(z + 1)
    }

    /// Map host `[lba, lba+n)` to physical pieces (appended to `out`, with
    /// their offsets in the request); the logical pseudo-tracks touched are
    /// appended to `touched`.
    fn map_range(
        &self,
        geom: &Geometry,
        lba: u64,
        n: u64,
        out: &mut Vec<HomePiece>,
        touched: &mut Vec<u64>,
    ) {
        self.for_mapped(
            geom,
            lba,
            n,
            |l| {
                if touched.last() != Some(&l) {
                    touched.push(l);
                }
            },
            |p| out.push(p),
        );
    }

    /// [`map_range`](Self::map_range) without lists: `touched(l)` for the
    /// logical pseudo-track of each part, `out(p)` for each physical piece, in order.
    fn for_mapped(
        &self,
        geom: &Geometry,
        lba: u64,
        n: u64,
        mut touched: impl FnMut(u64),
        mut out: impl FnMut(HomePiece),
    ) {
        for_home_pieces(geom, &self.res, lba, n, |hp| {
            let space = if geom.kind(hp.at.track) == TrackKind::Bottom {
                BOTTOM
            } else {
                TOP
            };
            let off = self.spaces[space].offset(hp.at.track, hp.at.sector);
            let mut done = 0u64;
            while done < hp.count as u64 {
                let o = off + done;
                let (q, within) = (o / self.p, o % self.p);
                let take = (hp.count as u64 - done).min(self.p - within);
                let l = self.id(space, q);
                touched(l);
                let (ss, sq) = self.split_id(self.phys_of(l));
                let po = sq * self.p + within;
                let mut k = 0u64;
                while k < take {
                    let (at, left) = self.spaces[ss].locate(po + k);
                    let c = (take - k).min(left as u64);
                    out(HomePiece {
                        at,
                        count: c as u32,
                        offset: hp.offset + done + k,
                    });
                    k += c;
                }
                done += take;
            }
        });
    }

    /// Algorithm 3's RemapTracks over every zone: plan the interval's swaps.
    fn plan(&mut self) {
        self.c.plans += 1;
        let mut hot: BTreeMap<u64, Vec<(u32, u64, u64)>> = BTreeMap::new();
        for (&l, &cnt) in &self.counts {
            if cnt as u64 <= self.threshold {
                continue;
            }
            let (space, q) = self.split_id(self.phys_of(l));
            if space == BOTTOM && q < self.full[BOTTOM] {
                hot.entry(self.zone_of(BOTTOM, q))
                    .or_default()
                    .push((cnt, l, q));
            }
        }
        let mut cands: Vec<(u64, u64, u64)> = vec![];
        for (z, mut hots) in hot {
            hots.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut tops: Vec<(u32, u64, u64, bool)> = self
                .zone_range(TOP, z)
                .filter(|&t| t < self.full[TOP])
                .map(|t| {
                    let l = self.log_of(self.id(TOP, t));
                    let track = self.spaces[TOP].locate(t * self.p).0.track.0;
                    (self.counts.get(&l).copied().unwrap_or(0), l, track, false)
                })
                .collect();
            for (hc, hl, hq) in hots {
                let ht = self.spaces[BOTTOM].locate(hq * self.p).0.track.0;
                let best = tops
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| !t.3)
                    .min_by_key(|(_, t)| {
                        let place = if self.tie_nearest {
                            t.2.abs_diff(ht)
                        } else {
                            t.2
                        };
                        (t.0, place, t.1)
                    })
                    .map(|(i, _)| i);
                let Some(i) = best else { break };
                let gap = hc as i64 - tops[i].0 as i64;
                if gap <= self.threshold as i64 {
                    break;
                }
                tops[i].3 = true;
                cands.push((gap as u64, hl, tops[i].1));
            }
        }
        cands.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        cands.truncate(self.max_swaps as usize);
        self.c.dropped += self.pending.len() as u64;
        self.c.planned += cands.len() as u64;
        self.pending = cands.into_iter().map(|(_, h, c)| (h, c)).collect();
        self.counts.clear();
    }

    /// Per-track moves carrying physical pseudo-track `src` to `dst`.
    fn moves_between(&self, src: u64, dst: u64, out: &mut Vec<Move>) {
        let (ss, sq) = self.split_id(src);
        let (ds, dq) = self.split_id(dst);
        let (so, dof) = (sq * self.p, dq * self.p);
        let mut k = 0u64;
        while k < self.p {
            let (sa, sl) = self.spaces[ss].locate(so + k);
            let (da, dl) = self.spaces[ds].locate(dof + k);
            let c = (self.p - k).min(sl as u64).min(dl as u64);
            out.push(Move {
                src: sa,
                dst: da,
                count: c as u32,
            });
            k += c;
        }
    }

    /// The steps of swapping the data of logical pseudo-tracks `hot` (on a
    /// bottom) and `cold` (on a top), with their physical places `(t, b)`;
    /// `None` if they are no longer there.
    fn compile_swap(&self, dev: &Device, hot: u64, cold: u64) -> Option<(Relocation, u64, u64)> {
        let (b, t) = (self.phys_of(hot), self.phys_of(cold));
        let (bs, bq) = self.split_id(b);
        let (ts, tq) = self.split_id(t);
        if bs != BOTTOM || ts != TOP || bq >= self.full[BOTTOM] || tq >= self.full[TOP] {
            return None;
        }
        // Order: the cold data to the bottom, the endangered spans (appended
        // below), the hot data to the top. Relocate reads sources in this
        // order and writes bottom destinations first, then top destinations
        // in this order: T', T-1, T+1, T are read and T, T-1, T+1, T'
        // written, as in the paper's step list.
        let mut moves = vec![];
        self.moves_between(t, b, &mut moves);
        let mut hot_moves = vec![];
        self.moves_between(b, t, &mut hot_moves);
        let geom = dev.geometry_arc();
        // The endangered top spans, merged per track, less the top destinations.
        let mut spans: BTreeMap<Track, Vec<(u32, u32)>> = BTreeMap::new();
        for m in moves
            .iter()
            .chain(&hot_moves)
            .filter(|m| geom.kind(m.dst.track) == TrackKind::Bottom)
        {
            for nb in top_neighbours(&geom, m.dst.track) {
                if self.rmw.skip_empty && !self.rmw.holds_data(dev, nb) {
                    continue;
                }
                spans.entry(nb).or_default().push(geom.overlap_span(
                    m.dst.track,
                    m.dst.sector,
                    m.count,
                    nb,
                ));
            }
        }
        let mut own = vec![];
        for (nb, mut s) in spans {
            s.sort_unstable();
            let mut merged: Vec<(u32, u32)> = vec![];
            for (lo, hi) in s {
                match merged.last_mut() {
                    Some(last) if last.1 >= lo => last.1 = last.1.max(hi),
                    _ => merged.push((lo, hi)),
                }
            }
            for d in moves.iter().chain(&hot_moves).filter(|d| d.dst.track == nb) {
                let (a, z) = (d.dst.sector, d.dst.sector + d.count);
                merged = merged
                    .into_iter()
                    .flat_map(|(x, y)| [(x, y.min(a)), (x.max(z), y)])
                    .filter(|(x, y)| x < y)
                    .collect();
            }
            for (x, y) in merged {
                let at = PhysAddr {
                    track: nb,
                    sector: x,
                };
                own.push(Move {
                    src: at,
                    dst: at,
                    count: y - x,
                });
            }
        }
        moves.extend(own);
        moves.extend(hot_moves);
        let upd = |l: u64, s: u64| (l, if l == s { None } else { Some(s) });
        let updates = [upd(hot, t), upd(cold, b)];
        let tx = self.store.as_ref().map(|s| s.seq()).unwrap_or(0) + 1;
        let steps = relocation_steps(&self.rmw, dev, &moves, &updates, Cause::Swap, tx);
        Some((Relocation::new(&geom, steps), t, b))
    }

    /// The swap in progress has committed: update the inverse map and counters.
    fn complete(&mut self) {
        let Some((hot, cold, t, b)) = self.current.take() else {
            return;
        };
        for (s, l) in [(t, hot), (b, cold)] {
            if s == l {
                self.inverse.remove(&s);
            } else {
                self.inverse.insert(s, l);
            }
        }
        self.c.swaps += 1;
        self.c.swap_sectors += 2 * self.p;
        if std::mem::take(&mut self.fg_credit) {
            self.c.foreground_swaps += 1;
        }
    }

    /// Start swapping `hot` and `cold`; returns whether it started (it may have gone stale).
    fn start(&mut self, dev: &Device, hot: u64, cold: u64) -> bool {
        self.since_progress = 0;
        match self.compile_swap(dev, hot, cold) {
            Some((r, t, b)) => {
                self.rmw.in_flight = Some(r);
                self.current = Some((hot, cold, t, b));
                true
            }
            None => {
                self.c.stale += 1;
                false
            }
        }
    }

    /// Whether host bottom track `t` starts a bottom pseudo-track and
    /// neither it nor a neighbour is reserved.
    pub(crate) fn host_track(&self, t: Track) -> bool {
        t.0 >= 1
            && !(t.0 - 1..=t.0 + 1).any(|x| self.res.contains(Track(x)))
            && self.spaces[BOTTOM].offset(t, 0).is_multiple_of(self.p)
    }

    /// Swap the bottom pseudo-track starting on host bottom track `t` with
    /// the top pseudo-track in the middle of its zone, at once: the
    /// micro-benchmark of section 2.4's timing. Returns the top
    /// pseudo-track's first track and the backup slot the record went to,
    /// or None when `t` starts no pseudo-track or the swap did not run.
    pub(crate) fn swap_at(
        &mut self,
        dev: &mut Device,
        t: Track,
    ) -> SimResult<Option<(Track, Track)>> {
        if self.res.contains(t) {
            return Ok(None);
        }
        let off = self.spaces[BOTTOM].offset(t, 0);
        if !off.is_multiple_of(self.p) {
            return Ok(None);
        }
        let hot = off / self.p;
        let tops = self.zone_range(TOP, self.zone_of(BOTTOM, hot));
        if tops.is_empty() {
            return Ok(None);
        }
        let q = (tops.start + tops.end) / 2;
        let (at, _) = self.spaces[TOP].locate(q * self.p);
        let slot = self.rmw.backup.slot_near(t);
        let cold = self.id(TOP, q);
        Ok(self.swap(dev, hot, cold)?.then_some((at.track, slot)))
    }

    /// Swap `hot` and `cold` at once, every step, if they are still where
    /// the plan saw them. Returns whether it swapped.
    fn swap(&mut self, dev: &mut Device, hot: u64, cold: u64) -> SimResult<bool> {
        self.store(dev);
        self.rmw.finish(dev, self.store.as_mut())?;
        self.complete();
        if !self.start(dev, hot, cold) {
            return Ok(false);
        }
        self.rmw.finish(dev, self.store.as_mut())?;
        self.complete();
        Ok(true)
    }

    /// Run one step of the swap in progress, starting the next pending one if none is.
    fn step(&mut self, dev: &mut Device) -> SimResult<StageOutcome> {
        self.store(dev);
        if !self.rmw.busy() {
            loop {
                let Some((h, c)) = self.pending.pop_front() else {
                    self.fg_credit = false;
                    return Ok(StageOutcome::Nothing);
                };
                if self.start(dev, h, c) {
                    break;
                }
            }
        }
        if self.rmw.step(dev, self.store.as_mut())? {
            self.complete();
        }
        Ok(StageOutcome::Ran)
    }

    /// Count one write request (on arrival or destage) that touched these
    /// logical pseudo-tracks; plan at the end of an interval; owe a
    /// foreground swap when the host leaves no idle time.
    fn count_write(&mut self, touched: &mut Vec<u64>) {
        touched.sort_unstable();
        touched.dedup();
        for &l in touched.iter() {
            *self.counts.entry(l).or_insert(0) += 1;
            if self.split_id(l).0 == BOTTOM && self.split_id(self.phys_of(l)).0 == TOP {
                self.c.spared += 1;
            }
        }
        self.writes += 1;
        if self.writes.is_multiple_of(self.interval) {
            self.plan();
        }
        self.since_progress += 1;
        if self.fg_every > 0 && !self.pending.is_empty() && self.since_progress >= self.fg_every {
            self.fg_credit = true;
        }
    }
}

impl Layer for ImrDtm {
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
        let (mut pieces, mut touched) = std::mem::take(&mut self.buf);
        pieces.clear();
        touched.clear();
        self.map_range(&geom, lba.0, n.0, &mut pieces, &mut touched);
        let r = pieces
            .iter()
            .try_for_each(|p| self.rmw.read(dev, Cause::Host, p.at, p.count, out));
        self.buf = (pieces, touched);
        r
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        self.write_batch(dev, std::slice::from_ref(w))
    }
    fn write_batch(&mut self, dev: &mut Device, ws: &[WriteReq]) -> SimResult<()> {
        let geom = dev.geometry_arc();
        // Buffers kept between calls (no allocation per write).
        let mut pieces = std::mem::take(&mut self.pieces);
        let (mut buf, mut touched) = std::mem::take(&mut self.buf);
        pieces.clear();
        for (i, w) in ws.iter().enumerate() {
            buf.clear();
            touched.clear();
            self.map_range(&geom, w.lba.0, w.sectors.0, &mut buf, &mut touched);
            pieces.extend(buf.iter().map(|&p| (p, i)));
            if !self.count_at_arrival {
                self.count_write(&mut touched);
            }
        }
        self.buf = (buf, touched);
        let r = self.rmw.write_pieces(dev, &mut pieces, ws);
        self.pieces = pieces;
        r
    }
    fn host_write_arrived(&mut self, geom: &Geometry, lba: Lba, n: Sectors) {
        if self.count_at_arrival {
            let (mut buf, mut touched) = std::mem::take(&mut self.arrival);
            buf.clear();
            touched.clear();
            self.map_range(geom, lba.0, n.0, &mut buf, &mut touched);
            self.count_write(&mut touched);
            self.arrival = (buf, touched);
        }
    }
    fn background(&self) -> Background {
        self.rmw
            .background(!self.pending.is_empty(), self.fg_credit)
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
            self.for_mapped(
                geom,
                w.lba.0,
                w.sectors.0,
                |_| {},
                |p| {
                    wait = wait
                        || self
                            .rmw
                            .must_wait(p.at.track, geom.kind(p.at.track) == TrackKind::Bottom);
                },
            );
        }
        wait
    }
    fn intervals_completed(&self) -> Option<u64> {
        Some(self.c.plans)
    }
    fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        self.store(dev).recover(dev)?;
        let seq = self.store.as_ref().map(|s| s.seq()).unwrap_or(0);
        self.inverse = self
            .store
            .as_ref()
            .map(|s| s.map.iter().map(|(&l, &p)| (p, l)).collect())
            .unwrap_or_default();
        self.rmw.written.set_all();
        self.rmw.backup.recover(dev, seq)
    }
    fn report(&self) -> LayerReport {
        let mut r = LayerReport::new();
        self.rmw.report(&mut r);
        let c = &self.c;
        r.insert("swaps".into(), c.swaps as f64);
        r.insert("foreground_swaps".into(), c.foreground_swaps as f64);
        r.insert("swap_plans".into(), c.plans as f64);
        r.insert("swaps_planned".into(), c.planned as f64);
        r.insert("swaps_stale".into(), c.stale as f64);
        r.insert("swaps_dropped".into(), c.dropped as f64);
        r.insert("swap_sectors".into(), c.swap_sectors as f64);
        r.insert("writes_to_swapped_up".into(), c.spared as f64);
        MapStore::report(self.store.as_ref(), &mut r);
        let moved = self.store.as_ref().map(|s| s.map.len()).unwrap_or(0);
        r.insert("remapped_pseudo_tracks".into(), moved as f64);
        r.insert("pseudo_tracks".into(), (self.n[0] + self.n[1]) as f64);
        r.insert("zone_pseudo_tracks".into(), self.zone_size as f64);
        r.insert(
            "pseudo_track_bytes".into(),
            (self.p * self.sector_bytes) as f64,
        );
        r.insert("map_bytes".into(), self.map_bytes as f64);
        r.insert("reserved_tracks".into(), self.res.tracks_reserved() as f64);
        r
    }
}

#[cfg(test)]
mod tests;
