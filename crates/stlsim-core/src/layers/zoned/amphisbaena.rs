//! `amphisbaena`: paper 004 section 5 (Zhang et al., "Amphisbaena: A Novel
//! Persistent Buffer Management Strategy to Improve SMR Disk Performance").
//!
//! * **Two-phase classification** ([`classifier`]): phase 1 labels a write
//!   request hot when its size is at most the mean of the last 1,024
//!   writes; phase 2 keeps LIRS-like filter and resident lists with LUP,
//!   SUP, ghost and shadow roles over the high-frequency buffer (HFB).
//! * **Buffer layout** (section 5.2.1): the buffer is cut into chunks of
//!   `chunk_kib` (64 KiB). HFB chunks are a pool of 4 KiB block slots (fully
//!   associative, a hash map from LBA to slot: the shared buffer index);
//!   LFB chunks are set-associative: a chunk maps one aligned run of
//!   `chunk` blocks of one native zone (chunk number by equation 2), found
//!   through the chunk location tree (a balanced tree keyed by zone and
//!   chunk number) and described by a chunk mapping table entry (zone,
//!   chunk number, min and max block offset, a validity bitmap).
//! * **Placement** (section 5.2.2): a block resident in the HFB is updated
//!   in place whatever its label; blocks the classifier admits go to a free
//!   HFB slot (an older LFB copy becomes invalid); the rest go to their LFB
//!   chunk, updated in place if already there.
//! * **HFB cleanup** (section 5.3): when the HFB has no free slot, evict from
//!   the filter list's LRU end into the LFB: one block if its chunk already
//!   exists, else every filter-list block of that chunk, in bulk, into a new
//!   chunk. Evicted blocks become ghosts (when still in the resident list).
//! * **LFB cleanup**: when no LFB chunk is free, write back the native zone
//!   of greatest weight = chunk count x fragmentation level (equations 3
//!   and 4), collecting one chunk per stage; when a queued write targets the
//!   victim zone, collection stops at the next chunk boundary and what was
//!   collected is written back at once (the shared [`super::WriteBack`]).
//!   When it starts: as soon as a write has taken the last free chunk (or
//!   HFB slot), cleaning is overdue work run before the next request, and
//!   that request, once it has arrived, is the queued write the collector
//!   looks at. A write that needs more room than is free waits for cleaning;
//!   the collector is then serving that write and does not stop for it
//!   (paper 004 Figure 6). The engine shows a stage the next request only,
//!   not the whole host queue: with queue depths above one, later queued
//!   writes to the victim do not stop collection (a limit of the engine).
//! * **Reallocation** (section 5.2.3): every `sampling_writes` (10,000) write
//!   requests, if the period's ghost hits exceed a chunk's blocks, round(hits
//!   / chunk blocks) chunks move from the LFB to the HFB (taken as LFB chunks
//!   become free, when none is free now). "If any block in a reallocated
//!   chunk obtained from the LFB is not updated again within a sample
//!   period, the reallocated chunk is returned to the LFB": at each period's
//!   end a reallocated chunk goes back if a block it held at the period's
//!   start was not updated in place during it, or it held none (its blocks
//!   are moved to free HFB slots first; a chunk added during a period is
//!   judged after the next one). The HFB stays within 25-75 % of the chunks.
//!
//! Choices where the paper is silent or ambiguous (parameters in brackets):
//! * chunk size [`chunk_kib` = 64]: section 5.2.1's example uses 1 MB
//!   chunks, section 6.2 evaluates 64 KB (and section 6.3 64-1,024 KB); the
//!   default is the evaluated 64 KB.
//! * "rounded to 4" for 60 / 16: rounded to the nearest whole chunk.
//! * Fragmentation level (equation 3, whose extraction is garbled): with
//!   every victim at or past the write pointer, victims / (last victim + 1 -
//!   wp): the density of the appended run (1 = no padding); otherwise
//!   (valid native blocks + victims) / max(wp, last victim + 1), capped at 1,
//!   where valid native blocks are the write pointer less the padding this
//!   run wrote below it (the padding count is volatile).
//! * A write whose blocks the classifier would admit to the HFB but that are
//!   more than half the HFB goes to the LFB whole (a guard, so no write can
//!   wait for an HFB it cannot fit).
//! * The LFB is cleaned only on demand (the paper notes idle intervals are too short).
//! * Crash: data is safe through the shared buffer records (each slot's
//!   record says whether it was written to the HFB or the LFB); chunk
//!   ownership, the chunk tables and the HFB's free slots are rebuilt from
//!   them; the classification history and the reallocation state are
//!   volatile (the paper keeps metadata crash consistency out of scope), so
//!   resident HFB blocks restart as SUP (then LUP) and the HFB is topped up
//!   to its initial 25 %.

pub mod classifier;

use super::{Buffer, Placement, Work, ZoneMap, COMMON_PARAMS};
use crate::device::Device;
use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, LayoutKind};
use crate::layers::{Layer, LayerEntry, LayerReport, LayoutNeed, ParamKind, ParamSpec, Params};
use classifier::{Admit, Roles, Window};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};

const TAG_HFB: u8 = 1;
const TAG_LFB: u8 = 2;

const PARAMS: [ParamSpec; 11] = [
    COMMON_PARAMS[0],
    COMMON_PARAMS[1],
    COMMON_PARAMS[2],
    COMMON_PARAMS[3],
    ParamSpec { name: "chunk_kib", kind: ParamKind::Int, unit: "KiB", default: "64", doc: "LFB allocation unit and reallocation unit (paper 004 section 6.2: 64 KB)" },
    ParamSpec { name: "lambda", kind: ParamKind::Float, unit: "fraction", default: "0.1", doc: "filter list's share of the HFB (paper 004: 0.1)" },
    ParamSpec { name: "sampling_writes", kind: ParamKind::Int, unit: "writes", default: "10000", doc: "write requests per reallocation period (paper 004: 10,000)" },
    ParamSpec { name: "hfb_initial", kind: ParamKind::Float, unit: "fraction", default: "0.25", doc: "HFB share of the chunks at start (paper 004: 25 %)" },
    ParamSpec { name: "hfb_min", kind: ParamKind::Float, unit: "fraction", default: "0.25", doc: "smallest HFB share (paper 004: 25 %)" },
    ParamSpec { name: "hfb_max", kind: ParamKind::Float, unit: "fraction", default: "0.75", doc: "largest HFB share (paper 004: 75 %)" },
    ParamSpec { name: "gc_abort", kind: ParamKind::Bool, unit: "", default: "true", doc: "stop collecting at the next chunk when the next request writes the victim zone (paper 004 section 5.3)" },
];

/// The `amphisbaena` layer's entry in `layers::REGISTRY`: paper 004 section 5
/// (host-managed SMR persistent buffer on a zoned drive).
pub static ENTRY: LayerEntry = LayerEntry {
    name: "amphisbaena",
    runs_in: crate::layers::RunsIn::Host,
    summary: "host-managed SMR: two-phase hot/cold classification, block-granular HFB + chunk-granular LFB, latency-sensitive GC",
    paper: "004 section 5 (Amphisbaena)",
    layout: LayoutNeed::Kind(LayoutKind::Zoned),
    params: &PARAMS,
    build: |p: &Params, g: &Geometry| -> SimResult<Box<dyn Layer>> {
        let sb = g.sector_bytes() as u64;
        let c = p.u64("chunk_kib") * 1024 / sb;
        if c == 0 || !(p.u64("chunk_kib") * 1024).is_multiple_of(sb) {
            return config_err(format!("chunk_kib = {} is not a whole number of {sb}-byte blocks", p.u64("chunk_kib")));
        }
        let lambda = p.f64("lambda");
        if !(lambda > 0.0 && lambda < 1.0) {
            return config_err(format!("lambda {lambda} must be in (0, 1)"));
        }
        let (lo, init, hi) = (p.f64("hfb_min"), p.f64("hfb_initial"), p.f64("hfb_max"));
        if !(0.0 < lo && lo <= init && init <= hi && hi < 1.0) {
            return config_err(format!("need 0 < hfb_min <= hfb_initial <= hfb_max < 1 (got {lo}, {init}, {hi})"));
        }
        if p.u64("sampling_writes") == 0 {
            return config_err("sampling_writes must be at least 1");
        }
        Ok(Box::new(super::BufferLayer::build("amphisbaena", p, g, make)?))
    },
};

fn make(p: &Params, z: &ZoneMap, slots: u64) -> SimResult<Box<dyn Placement>> {
    Ok(Box::new(Amphisbaena::new(p, z, slots)?))
}

/// Equation 2: the chunk number of `block` within its zone `zone_num`.
pub fn chunk_num(block: u64, zone_num: u64, zone_blocks: u64, chunk_blocks: u64) -> u64 {
    (block - zone_num * zone_blocks) / chunk_blocks
}

/// Section 5.2.3: chunks moved to the HFB for a period's ghost hits
/// (none unless the hits exceed one chunk's blocks; rounded to the nearest).
pub fn chunks_for_ghost_hits(hits: u64, chunk_blocks: u64) -> u64 {
    if hits > chunk_blocks {
        (hits as f64 / chunk_blocks as f64).round() as u64
    } else {
        0
    }
}

/// What a chunk is used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// In the high-frequency buffer: its blocks are slots of the HFB's fully
    /// associative pool (paper 004 section 5.2.1).
    Hfb,
    /// HFB chunk being returned to the LFB (its blocks are moving out).
    Returning,
    /// LFB, unmapped.
    Free,
    /// LFB, mapped (see its chunk mapping table entry).
    Lfb,
}

/// A chunk mapping table entry (paper 004 Figure 10b).
#[derive(Clone, Debug)]
struct Cmt {
    zone: u64,
    chunk_num: u64,
    min_off: u32,
    max_off: u32,
    valid: Vec<u64>,
    count: u32,
}

/// Counters of the policy.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    hfb_hits: u64,
    lfb_hits: u64,
    chunks_to_hfb: u64,
    chunks_to_lfb: u64,
    hfb_evicted_blocks: u64,
    bulk_evictions: u64,
    gc_writebacks: u64,
    oversize_to_lfb: u64,
    reallocation_periods: u64,
}

/// Amphisbaena's placement policy over the shared buffer (paper 004 sections
/// 5.2-5.3): hot blocks to the block-granular HFB, cold ones to LFB chunks, chunks reallocated.
pub struct Amphisbaena {
    c: u64,
    nchunks: u64,
    kind: Vec<Kind>,
    cmt: Vec<Option<Cmt>>,
    /// The chunk location tree: (zone, chunk number) -> chunk (a hash map:
    /// only looked up, never walked in order).
    clt: FxHashMap<(u64, u64), u32>,
    /// The mapped chunks of each native zone, in order (a sorted list: a
    /// zone has few, and unlike a `BTreeSet` it allocates nothing as chunks
    /// come and go once emptied lists are reused).
    zone_chunks: FxHashMap<u64, Vec<u32>>,
    /// Emptied lists of `zone_chunks`, and valid-block maps of unmapped
    /// chunks, kept for reuse.
    spare_chunk_lists: Vec<Vec<u32>>,
    spare_valid: Vec<Vec<u64>>,
    /// A finished write-back's victim list, and the blocks of one bulk
    /// eviction (lists reused).
    spare_victims: Vec<(u32, u32)>,
    same: Vec<u64>,
    /// Scratch of `evict`: (filter-list stamp, block) of a chunk's blocks.
    mates: Vec<(i64, u64)>,
    /// Scratch of `needs`: the chunks a write would map.
    new_chunks: std::cell::RefCell<Vec<(u64, u64)>>,
    /// Scratch of `reallocate`: unused reallocated chunks, a chunk's used slots.
    period_scratch: (Vec<u32>, Vec<u32>),
    hfb_free: Vec<u32>,
    hfb_chunks: u64,
    lfb_free: Vec<u32>,
    /// Chunks moved to the HFB by reallocation, with the blocks each held
    /// at the current period's start (`None`: added during it, judged
    /// after the next).
    reallocated: BTreeMap<u32, Option<Vec<u64>>>,
    /// Blocks of reallocated chunks updated in place during this period.
    updated: rustc_hash::FxHashSet<u64>,
    /// A sampling period ended with the last write placed: reallocate
    /// before the next placement or work (once that write is stored).
    realloc_due: bool,
    owed: u64,
    min_chunks: u64,
    max_chunks: u64,
    initial_chunks: u64,
    lambda: f64,
    period: u64,
    writes_in_period: u64,
    roles: Roles,
    window: Window,
    moves: VecDeque<(u32, u32)>,
    /// The current write's (hot, forced to the LFB) labels, kept across its placement rounds.
    label: (bool, bool),
    gc_abort: bool,
    /// The part of the current write still to place, if it is placed in rounds.
    rest: Option<(u64, u64)>,
    counts: Counts,
}

impl Amphisbaena {
    /// The policy for a buffer of `slots` blocks.
    pub fn new(p: &Params, z: &ZoneMap, slots: u64) -> SimResult<Amphisbaena> {
        let c = p.u64("chunk_kib") * 1024 / z.sector_bytes;
        if c == 0 || !z.zone_sectors.is_multiple_of(c) {
            return config_err(format!(
                "chunk_kib = {} does not divide the drive's zones into whole chunks",
                p.u64("chunk_kib")
            ));
        }
        let nchunks = slots / c;
        if nchunks < 4 {
            return config_err(format!(
                "amphisbaena needs at least 4 chunks of {c} blocks, but the buffer holds {slots} blocks: give a larger buffer or smaller chunk_kib"
            ));
        }
        let frac = |f: f64| ((nchunks as f64 * f).round() as u64).clamp(1, nchunks - 1);
        let initial = frac(p.f64("hfb_initial"));
        let mut a = Amphisbaena {
            c,
            nchunks,
            kind: vec![Kind::Free; nchunks as usize],
            cmt: vec![None; nchunks as usize],
            clt: FxHashMap::default(),
            zone_chunks: FxHashMap::default(),
            spare_chunk_lists: vec![],
            spare_valid: vec![],
            spare_victims: vec![],
            same: vec![],
            mates: vec![],
            new_chunks: Default::default(),
            period_scratch: Default::default(),
            hfb_free: vec![],
            hfb_chunks: 0,
            lfb_free: vec![],
            reallocated: BTreeMap::new(),
            updated: Default::default(),
            realloc_due: false,
            owed: 0,
            min_chunks: frac(p.f64("hfb_min")),
            max_chunks: frac(p.f64("hfb_max")),
            initial_chunks: initial,
            lambda: p.f64("lambda"),
            period: p.u64("sampling_writes"),
            writes_in_period: 0,
            roles: Roles::new(p.f64("lambda"), initial * c),
            window: Window::default(),
            moves: VecDeque::new(),
            label: (false, false),
            gc_abort: p.bool("gc_abort"),
            rest: None,
            counts: Counts::default(),
        };
        for k in (0..nchunks as u32).rev() {
            if (k as u64) < initial {
                a.make_hfb(k);
            } else {
                a.lfb_free.push(k);
            }
        }
        Ok(a)
    }

    fn chunk_of(&self, slot: u32) -> u32 {
        (slot as u64 / self.c) as u32
    }

    fn is_hfb_slot(&self, slot: u32) -> bool {
        let k = self.chunk_of(slot) as u64;
        k < self.nchunks && matches!(self.kind[k as usize], Kind::Hfb | Kind::Returning)
    }

    fn make_hfb(&mut self, k: u32) {
        self.kind[k as usize] = Kind::Hfb;
        self.hfb_chunks += 1;
        let base = k as u64 * self.c;
        self.hfb_free
            .extend((base..base + self.c).rev().map(|s| s as u32));
        self.roles.set_capacity(self.hfb_chunks * self.c);
    }

    /// (zone, chunk number, offset in chunk) of host block `h` (equation 2).
    fn locate(&self, buf: &Buffer, h: u64) -> (u64, u64, u64) {
        let (z, off) = buf.zones.split(h);
        let cn = chunk_num(h, z, buf.zones.zone_sectors, self.c);
        (z, cn, off % self.c)
    }

    /// A free LFB chunk, mapped to (zone, chunk number).
    fn map_chunk(&mut self, z: u64, cn: u64) -> Option<u32> {
        let k = self.lfb_free.pop()?;
        self.kind[k as usize] = Kind::Lfb;
        let mut valid = self.spare_valid.pop().unwrap_or_default();
        valid.clear();
        valid.resize(self.c.div_ceil(64) as usize, 0);
        self.cmt[k as usize] = Some(Cmt {
            zone: z,
            chunk_num: cn,
            min_off: u32::MAX,
            max_off: 0,
            valid,
            count: 0,
        });
        self.clt.insert((z, cn), k);
        let spare = &mut self.spare_chunk_lists;
        let list = self.zone_chunks.entry(z).or_insert_with(|| {
            let mut v = spare.pop().unwrap_or_default();
            v.clear();
            v
        });
        if let Err(i) = list.binary_search(&k) {
            list.insert(i, k);
        }
        Some(k)
    }

    fn lfb_set(&mut self, slot: u32, zone_off: u64) {
        let k = self.chunk_of(slot) as usize;
        let i = (slot as u64 % self.c) as usize;
        let e = self.cmt[k].as_mut().expect("mapped chunk");
        if e.valid[i / 64] >> (i % 64) & 1 == 0 {
            e.valid[i / 64] |= 1 << (i % 64);
            e.count += 1;
        }
        e.min_off = e.min_off.min(zone_off as u32);
        e.max_off = e.max_off.max(zone_off as u32);
    }

    /// Invalidate an LFB slot; a chunk left empty is unmapped.
    fn lfb_clear(&mut self, slot: u32) {
        let k = self.chunk_of(slot);
        let i = (slot as u64 % self.c) as usize;
        let Some(e) = self.cmt[k as usize].as_mut() else {
            return;
        };
        if e.valid[i / 64] >> (i % 64) & 1 == 1 {
            e.valid[i / 64] &= !(1 << (i % 64));
            e.count -= 1;
        }
        if e.count == 0 {
            let (z, cn) = (e.zone, e.chunk_num);
            if let Some(e) = self.cmt[k as usize].take() {
                self.spare_valid.push(e.valid);
            }
            self.clt.remove(&(z, cn));
            if let Some(set) = self.zone_chunks.get_mut(&z) {
                if let Ok(i) = set.binary_search(&k) {
                    set.remove(i);
                }
                if set.is_empty() {
                    let set = self.zone_chunks.remove(&z).expect("present");
                    self.spare_chunk_lists.push(set);
                }
            }
            self.kind[k as usize] = Kind::Free;
            self.chunk_freed(k);
        }
    }

    /// Whether the LFB has room for a write that maps `chunks` new chunks.
    /// A write that needs more than the LFB has (a small buffer whose HFB
    /// has grown) can never fit whole: it may start once the LFB is all
    /// free, and is placed in rounds, the collector making room between them.
    fn lfb_room(&self, chunks: u64) -> bool {
        let (free, lfb) = (self.lfb_free.len() as u64, self.nchunks - self.hfb_chunks);
        chunks <= free || (chunks > lfb && free == lfb)
    }

    /// A chunk became free: owed to the HFB, or back to the LFB's free list.
    fn chunk_freed(&mut self, k: u32) {
        if self.owed > 0 && self.hfb_chunks < self.max_chunks {
            self.owed -= 1;
            self.make_hfb(k);
            self.reallocated.insert(k, None);
            self.counts.chunks_to_hfb += 1;
        } else {
            self.kind[k as usize] = Kind::Free;
            self.lfb_free.push(k);
        }
    }

    /// The write's demand: (hot label, force to LFB, new HFB slots); the
    /// LFB chunks it would map are appended to `chunks` (repeats included).
    fn demand(
        &self,
        buf: &Buffer,
        lba: u64,
        n: u64,
        chunks: &mut Vec<(u64, u64)>,
    ) -> (bool, bool, u64) {
        // The rest of a write placed in rounds keeps the labels of its first round.
        let (hot, force) = if self.rest == Some((lba, n)) {
            self.label
        } else {
            let hot = self.window.is_hot(n);
            let new_h = (lba..lba + n)
                .filter(|&h| self.roles.admits(h, hot) == Admit::HfbNew)
                .count() as u64;
            (hot, new_h > self.hfb_chunks * self.c / 2)
        };
        let mut need_h = 0;
        for h in lba..lba + n {
            match self.roles.admits(h, hot) {
                Admit::HfbResident => {}
                Admit::HfbNew if !force => need_h += 1,
                _ => {
                    let (z, cn, _) = self.locate(buf, h);
                    if !self.clt.contains_key(&(z, cn)) {
                        chunks.push((z, cn));
                    }
                }
            }
        }
        (hot, force, need_h)
    }

    /// New HFB slots and distinct new LFB chunks the writes `ws` need.
    fn needs(&self, buf: &Buffer, ws: &[(u64, u64)]) -> (u64, u64) {
        // The chunks in a list reused between calls (no set per write).
        let mut chunks = self.new_chunks.borrow_mut();
        chunks.clear();
        let mut h = 0;
        for &(l, n) in ws {
            let (_, _, nh) = self.demand(buf, l, n, &mut chunks);
            h += nh;
        }
        chunks.sort_unstable();
        chunks.dedup();
        (h, chunks.len() as u64)
    }

    /// Equations 3 and 4: the weight of native zone `z`'s LFB blocks as a victim.
    fn weight(&self, buf: &Buffer, dev: &Device, z: u64, chunks: &[u32]) -> f64 {
        let wp = buf.zones.wp_off(dev, z);
        let (mut n, mut first, mut last) = (0u64, u64::MAX, 0u64);
        for &k in chunks {
            let e = self.cmt[k as usize].as_ref().expect("mapped");
            n += e.count as u64;
            first = first.min(e.chunk_num * self.c + e.min_off as u64 % self.c);
            last = last.max(e.chunk_num * self.c + e.max_off as u64 % self.c);
        }
        let fl = if first >= wp {
            n as f64 / (last + 1 - wp) as f64
        } else {
            let native = wp.saturating_sub(buf.zone_padding(z));
            ((native + n) as f64 / wp.max(last + 1) as f64).min(1.0)
        };
        chunks.len() as f64 * fl
    }

    /// LFB cleanup: the native zone of greatest weight, all its LFB blocks.
    fn gc(&mut self, buf: &Buffer, dev: &Device) -> Work {
        let best = self
            .zone_chunks
            .iter()
            .map(|(&z, ks)| (self.weight(buf, dev, z, ks), z))
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        let Some((_, z)) = best else {
            return Work::None;
        };
        let mut victims = std::mem::take(&mut self.spare_victims);
        victims.clear();
        for &k in &self.zone_chunks[&z] {
            let e = self.cmt[k as usize].as_ref().expect("mapped");
            for i in 0..self.c as usize {
                if e.valid[i / 64] >> (i % 64) & 1 == 1 {
                    victims.push((
                        (e.chunk_num * self.c + i as u64) as u32,
                        (k as u64 * self.c + i as u64) as u32,
                    ));
                }
            }
        }
        victims.sort_unstable();
        self.counts.gc_writebacks += 1;
        Work::WriteBack(z, victims)
    }

    /// HFB cleanup: plan moves of the filter list's LRU block (or its chunk's blocks, in bulk) into the LFB.
    fn evict(&mut self, buf: &Buffer, dev: &Device) -> Work {
        let Some(v) = self.roles.victim() else {
            return Work::None;
        };
        let (z, cn, _) = self.locate(buf, v);
        let chunk = match self.clt.get(&(z, cn)) {
            Some(&k) => {
                self.plan_eviction(buf, v, k);
                return self
                    .moves
                    .pop_front()
                    .map(|(from, to)| Work::Move { from, to })
                    .unwrap_or(Work::None);
            }
            None => match self.map_chunk(z, cn) {
                Some(k) => k,
                None => return self.gc(buf, dev),
            },
        };
        // The chunk's blocks in the filter list, in its order (LRU first):
        // a look-up per block of the chunk, not a walk of the whole list
        // (that walk was most of a long run's time).
        let mut same = std::mem::take(&mut self.same);
        same.clear();
        let mut mates = std::mem::take(&mut self.mates);
        mates.clear();
        let base = z * buf.zones.zone_sectors + cn * self.c;
        mates.extend((base..base + self.c).filter_map(|b| {
            let (bz, bcn, _) = self.locate(buf, b);
            ((bz, bcn) == (z, cn))
                .then(|| self.roles.filter_stamp(b).map(|st| (st, b)))
                .flatten()
        }));
        mates.sort_unstable();
        same.extend(mates.iter().map(|&(_, b)| b));
        self.mates = mates;
        if same.len() > 1 {
            self.counts.bulk_evictions += 1;
        }
        for &b in &same {
            self.plan_eviction(buf, b, chunk);
        }
        self.same = same;
        self.moves
            .pop_front()
            .map(|(from, to)| Work::Move { from, to })
            .unwrap_or(Work::None)
    }

    fn plan_eviction(&mut self, buf: &Buffer, b: u64, chunk: u32) {
        let (_, _, i) = self.locate(buf, b);
        let from = buf.slot_of(b).expect("resident block is buffered");
        let to = (chunk as u64 * self.c + i) as u32;
        self.lfb_set(to, buf.zones.split(b).1);
        self.roles.evicted(b);
        self.counts.hfb_evicted_blocks += 1;
        self.moves.push_back((from, to));
    }

    /// The reallocation of a period that has ended, once the write that
    /// ended it is stored and no move is under way (their targets are not
    /// yet held, and a chunk must not be judged without them).
    fn reallocate_if_due(&mut self, buf: &Buffer) {
        if self.realloc_due && self.moves.is_empty() {
            self.realloc_due = false;
            self.reallocate(buf);
        }
    }

    /// End of a sampling period: grow the HFB by the period's ghost hits, return unused reallocated chunks.
    fn reallocate(&mut self, buf: &Buffer) {
        self.counts.reallocation_periods += 1;
        // A reallocated chunk goes back to the LFB if any block it held at
        // the period's start was not updated during it, or it held none.
        // Lists reused from one period to the next.
        let (mut unused, mut used) = std::mem::take(&mut self.period_scratch);
        unused.clear();
        let updated = &self.updated;
        unused.extend(
            self.reallocated
                .iter()
                .filter(|(_, held)| {
                    held.as_ref()
                        .is_some_and(|v| v.is_empty() || v.iter().any(|b| !updated.contains(b)))
                })
                .map(|(&k, _)| k),
        );
        // Which chunks go: each only if the blocks of every chunk going fit
        // the free slots outside them all (a move must never land in a
        // chunk that is itself going back: the block would end up in the LFB).
        let c = self.c;
        let mut going: Vec<u32> = vec![];
        if !unused.is_empty() {
            // Free slots per chunk, counted once.
            let mut free_in: rustc_hash::FxHashMap<u32, usize> = Default::default();
            for &s in &self.hfb_free {
                *free_in.entry((s as u64 / c) as u32).or_default() += 1;
            }
            let (mut need, mut free_outside) = (0usize, self.hfb_free.len());
            for &k in &unused {
                if self.hfb_chunks - going.len() as u64 <= self.min_chunks {
                    break;
                }
                let base = k as u64 * c;
                let held = (base..base + c)
                    .filter(|&s| buf.owner(s as u32).is_some())
                    .count();
                let mine = free_in.get(&k).copied().unwrap_or(0);
                if free_outside - mine < need + held {
                    continue;
                }
                going.push(k);
                need += held;
                free_outside -= mine;
            }
            if !going.is_empty() {
                self.hfb_free
                    .retain(|&s| !going.contains(&((s as u64 / c) as u32)));
            }
        }
        for &k in &going {
            self.reallocated.remove(&k);
            self.hfb_chunks -= 1;
            self.counts.chunks_to_lfb += 1;
            let base = k as u64 * c;
            used.clear();
            used.extend(
                (base..base + c)
                    .map(|s| s as u32)
                    .filter(|&s| buf.owner(s).is_some()),
            );
            if used.is_empty() {
                self.kind[k as usize] = Kind::Free;
                self.lfb_free.push(k);
            } else {
                self.kind[k as usize] = Kind::Returning;
                for &s in &used {
                    let to = self.hfb_free.pop().expect("counted");
                    self.moves.push_back((s, to));
                }
            }
        }
        self.roles.set_capacity(self.hfb_chunks * c);
        self.period_scratch = (unused, used);
        // The blocks each chunk holds now are judged at the next period's end.
        for (&k, held) in self.reallocated.iter_mut() {
            let base = k as u64 * c;
            let v = held.get_or_insert_with(Vec::new);
            v.clear();
            v.extend((base..base + c).filter_map(|s| buf.owner(s as u32)));
        }
        self.updated.clear();
        // Ghost hits: the HFB is short of room for long-period hot blocks.
        let g = std::mem::take(&mut self.roles.period_ghost_hits);
        let k = chunks_for_ghost_hits(g, self.c);
        if k > 0 {
            let room = self.max_chunks.saturating_sub(self.hfb_chunks + self.owed);
            self.owed += k.min(room);
            while self.owed > 0 && self.hfb_chunks < self.max_chunks {
                let Some(c) = self.lfb_free.pop() else { break };
                self.chunk_freed(c);
            }
        }
    }
}

impl Placement for Amphisbaena {
    fn fits(&self, buf: &Buffer, ws: &[(u64, u64)]) -> bool {
        if !self.moves.is_empty() {
            return false;
        }
        let (h, chunks) = self.needs(buf, ws);
        h <= self.hfb_free.len() as u64 && self.lfb_room(chunks)
    }

    fn place(
        &mut self,
        buf: &mut Buffer,
        lba: u64,
        n: u64,
        first: bool,
        out: &mut Vec<(u32, u64)>,
    ) -> SimResult<u64> {
        if first {
            self.reallocate_if_due(buf);
        }
        if first {
            let mut chunks = std::mem::take(&mut *self.new_chunks.borrow_mut());
            chunks.clear();
            let (hot, force, _) = self.demand(buf, lba, n, &mut chunks);
            *self.new_chunks.borrow_mut() = chunks;
            self.label = (hot, force);
            self.window.push(n);
            if force {
                self.counts.oversize_to_lfb += 1;
            }
            self.writes_in_period += 1;
        }
        let (hot, force) = self.label;
        for h in lba..lba + n {
            // Room first (the classifier's answer for this block, given the
            // transitions of the blocks before it): stop where there is none.
            let mut admit = self.roles.admits(h, hot);
            if force && admit == Admit::HfbNew {
                admit = Admit::Lfb;
            }
            let (z, cn, i) = self.locate(buf, h);
            let room = match admit {
                Admit::HfbResident => true,
                Admit::HfbNew => !self.hfb_free.is_empty(),
                Admit::Lfb => self.clt.contains_key(&(z, cn)) || !self.lfb_free.is_empty(),
            };
            if !room {
                self.rest = Some((h, lba + n - h));
                return Ok(h - lba);
            }
            let prev = buf.slot_of(h);
            if let Some(p) = prev {
                buf.counts.write_hits += 1;
                if self.is_hfb_slot(p) {
                    self.counts.hfb_hits += 1;
                } else {
                    self.counts.lfb_hits += 1;
                }
            }
            if admit != Admit::Lfb || !force {
                let got = self.roles.on_write(h, hot);
                debug_assert!(force || got == admit, "{got:?} {admit:?}");
            }
            let slot = match admit {
                Admit::HfbResident => {
                    let s = prev.expect("resident block is buffered");
                    if self.reallocated.contains_key(&self.chunk_of(s)) {
                        self.updated.insert(h);
                    }
                    s
                }
                Admit::HfbNew => {
                    if let Some(p) = prev {
                        self.lfb_clear(p);
                    }
                    self.hfb_free.pop().expect("room checked")
                }
                Admit::Lfb => {
                    let k = match self.clt.get(&(z, cn)) {
                        Some(&k) => k,
                        None => self.map_chunk(z, cn).expect("room checked"),
                    };
                    let s = (k as u64 * self.c + i) as u32;
                    self.lfb_set(s, buf.zones.split(h).1);
                    s
                }
            };
            out.push((slot, h));
        }
        self.rest = None;
        if self.writes_in_period >= self.period {
            // Reallocated when the buffer holds this write: its blocks are
            // not stored until `place` returns, and a chunk judged empty
            // now could go back to the LFB with them in it.
            self.writes_in_period = 0;
            self.realloc_due = true;
        }
        Ok(n)
    }

    fn next_work(&mut self, buf: &Buffer, dev: &Device, waiting: &[(u64, u64)]) -> Work {
        self.reallocate_if_due(buf);
        if let Some((from, to)) = self.moves.pop_front() {
            return Work::Move { from, to };
        }
        // Room for the waiting writes, or (no write waiting) for the next
        // one: a buffer with no free chunk or slot left is cleaned now.
        let (need_h, need_c) = self.needs(buf, waiting);
        if !self.lfb_room(need_c) || self.lfb_free.is_empty() {
            return self.gc(buf, dev);
        }
        if need_h > self.hfb_free.len() as u64 || self.hfb_free.is_empty() {
            return self.evict(buf, dev);
        }
        Work::None
    }

    fn recycle(&mut self, victims: Vec<(u32, u32)>) {
        self.spare_victims = victims;
    }
    fn work_done(&mut self, buf: &Buffer, work: &Work) {
        match *work {
            Work::Move { from, .. } => {
                let k = self.chunk_of(from);
                match self.kind[k as usize] {
                    Kind::Hfb => self.hfb_free.push(from),
                    Kind::Returning => {
                        let base = k as u64 * self.c;
                        if (base..base + self.c).all(|s| buf.owner(s as u32).is_none()) {
                            self.kind[k as usize] = Kind::Free;
                            self.lfb_free.push(k);
                        }
                    }
                    _ => {}
                }
            }
            Work::WriteBack(_, ref victims) => {
                for &(_, s) in victims {
                    self.lfb_clear(s);
                }
            }
            Work::None => {}
        }
    }

    fn rebuild(&mut self, buf: &Buffer) {
        let c = self.c;
        self.kind = vec![Kind::Free; self.nchunks as usize];
        self.cmt = vec![None; self.nchunks as usize];
        self.clt.clear();
        self.zone_chunks.clear();
        self.hfb_free.clear();
        self.lfb_free.clear();
        self.hfb_chunks = 0;
        self.reallocated.clear();
        self.updated.clear();
        self.realloc_due = false;
        self.owed = 0;
        self.moves.clear();
        self.rest = None;
        self.window = Window::default();
        self.writes_in_period = 0;
        self.roles = Roles::new(self.lambda, 0);
        let mut hfb_blocks = vec![];
        for k in 0..self.nchunks as u32 {
            let base = k as u64 * c;
            let valid: Vec<(u32, u64)> = (base..base + c)
                .filter_map(|s| buf.owner(s as u32).map(|h| (s as u32, h)))
                .collect();
            if valid.iter().any(|&(s, _)| buf.tag(s) == TAG_HFB) {
                self.make_hfb(k);
                self.hfb_free
                    .retain(|&s| buf.owner(s).is_none() || s as u64 / c != k as u64);
                hfb_blocks.extend(valid.iter().map(|&(_, h)| h));
            } else if let Some(&(_, h0)) = valid.first() {
                let (z, cn, _) = self.locate(buf, h0);
                self.lfb_free.push(k);
                self.map_chunk(z, cn);
                for &(s, h) in &valid {
                    self.lfb_set(s, buf.zones.split(h).1);
                }
            } else {
                self.lfb_free.push(k);
            }
        }
        while self.hfb_chunks < self.initial_chunks {
            let Some(k) = self.lfb_free.pop() else { break };
            self.make_hfb(k);
        }
        for h in hfb_blocks {
            self.roles.restore(h);
        }
    }

    fn pending(&self) -> bool {
        !self.moves.is_empty()
    }
    fn wants_work(&self) -> bool {
        self.lfb_free.is_empty() || self.hfb_free.is_empty()
    }
    fn abortable(&self) -> bool {
        self.gc_abort
    }
    fn cuts(&self, victims: &[(u32, u32)], v: &mut Vec<usize>) {
        v.extend(
            (1..victims.len())
                .filter(|&i| victims[i].0 as u64 / self.c != victims[i - 1].0 as u64 / self.c),
        );
        v.push(victims.len());
    }
    fn write_tag(&self, slot: u32) -> u8 {
        if self.is_hfb_slot(slot) {
            TAG_HFB
        } else {
            TAG_LFB
        }
    }
    fn move_tag(&self, to: u32) -> u8 {
        self.write_tag(to)
    }
    fn report(&self, r: &mut LayerReport) {
        let c = &self.counts;
        r.insert("hfb_hits".into(), c.hfb_hits as f64);
        r.insert("lfb_hits".into(), c.lfb_hits as f64);
        r.insert("chunks_to_hfb".into(), c.chunks_to_hfb as f64);
        r.insert("chunks_to_lfb".into(), c.chunks_to_lfb as f64);
        r.insert("hfb_evicted_blocks".into(), c.hfb_evicted_blocks as f64);
        r.insert("bulk_evictions".into(), c.bulk_evictions as f64);
        r.insert("lfb_gc_writebacks".into(), c.gc_writebacks as f64);
        r.insert("oversize_writes_to_lfb".into(), c.oversize_to_lfb as f64);
        r.insert("reallocation_periods".into(), c.reallocation_periods as f64);
        r.insert("hfb_chunks_tracks".into(), self.hfb_chunks as f64);
        r.insert("chunk_blocks_tracks".into(), self.c as f64);
        let rc = &self.roles.counts;
        r.insert("ghost_hits".into(), rc.ghost_hits as f64);
        r.insert("shadow_hits".into(), rc.shadow_hits as f64);
        r.insert("lup_to_sup".into(), rc.lup_to_sup as f64);
        r.insert("sup_hits".into(), rc.sup_hits as f64);
        r.insert("sup_demotions".into(), rc.demotions as f64);
        r.insert("pruned_entries".into(), rc.pruned as f64);
    }
}

#[cfg(test)]
mod tests;
