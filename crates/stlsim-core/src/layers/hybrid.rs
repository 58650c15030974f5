//! The hybrid systems of paper 001 (Wan et al., "High Performance and High
//! Capacity Hybrid Shingled-Recording Disk System", sections II.A, II.C and
//! II.D): a memory write buffer and an SSD read cache in front of a disk.
//! This module is the part the three systems share; the disk side is a
//! [`Backend`]: [`hwsr`] (segments on a wave-like shingled disk),
//! [`sblock`] (Cassuto's circular logs on a conventional shingled disk) and
//! [`buffered_cmr`] (home locations on a conventional disk, no SSD).
//!
//! What the paper says, and what this does:
//! * The buffer and the cache are cut into blocks of `S_blk` sectors, the
//!   disk's blocks. One **segment hash table** maps a segment to a node
//!   holding `MBmap` (the buffer slot of each of its blocks) and `SBmap` (the
//!   SSD slot of each); a block is found through its segment's node.
//! * **Writes** go to the buffer; the SSD copy of a written block is
//!   invalidated (`SBmap` entry cleared). **Reads** look in the buffer, then
//!   the SSD, then the disk; a disk read is prefetched into the SSD (a clean
//!   copy, never written back, replaced in LRU order).
//! * **Eviction** when the buffer is full (`policy`):
//!   - `lwa`, the least-write-amplification LRU of Figure 6: take the tail
//!     block of the LRU list, and evict with it every block of the same
//!     segment found within `window_blocks` of the tail; one segment is
//!     written (for HWSR: read-merge-rewrite from the lowest evicted block);
//!   - `block`: the tail block alone (the paper's "LRU block queue");
//!   - `segment`: every buffered block of the least recently used segment
//!     (the paper's "LRU segment queue").
//!
//! Choices where the paper is silent:
//! * **Partial blocks**: a write of part of a block buffers just those
//!   sectors (a per-sector valid map); a read takes valid sectors from the
//!   buffer and the rest from the SSD or disk; the eviction merges the
//!   missing sectors from the disk copy (HWSR and S-block read it anyway to
//!   rewrite it; the conventional disk writes only the valid runs).
//! * **Window**: `window_blocks` defaults to 128 blocks (4 MiB, 4 % of the
//!   paper's 100 MB buffer at 64-sector blocks); the paper gives none.
//! * Blocks of the flushed segment that stay buffered (outside the window)
//!   are written with their newest data in the same rewrite and become
//!   clean: a clean block is later dropped without any disk write.
//! * Disk reads of consecutive missing blocks are issued as one request to
//!   the backend (one operation where its layout keeps them together); with
//!   an SSD the whole blocks are read so that they can be prefetched.
//! * **Power loss**: a battery-backed buffer keeps its blocks (each slot
//!   carries a record: block, sequence number, valid sectors) and is
//!   rebuilt in LRU order from the sequence numbers. A volatile buffer loses
//!   them: a write is then *acknowledged* when it is in the buffer but
//!   *durable* only when its block has been written to the disk, and the
//!   verifier holds the layer to exactly that (an acknowledged write may be
//!   lost by a crash only until its eviction completes). The SSD map is
//!   volatile metadata: after a crash the SSD starts empty (it held only
//!   clean copies, so nothing is lost).
//! * The memory, SSD and disk serve one operation at a time, on one clock.
//! * **The drive's own cache beneath** (host software): an eviction's disk
//!   writes are flushed before its buffered copies are dropped (and, in the
//!   backends, before a rewrite endangers what its saved image protects, and
//!   before S-block's head overwrites a slot whose migrated copy may still
//!   be cached); `drive_flush = never` models a prototype that trusts the
//!   drive's acknowledgement instead (faster; loses data at power loss).

pub mod buffered_cmr;
pub mod hwsr;
pub mod sblock;
#[cfg(test)]
mod tests;

use super::{Layer, LayerReport, ParamKind, ParamSpec, Params, WriteReq};
use crate::device::{Cause, Device};
use crate::drive::DriveConfig;
use crate::error::{SimError, SimResult};
use crate::geometry::Geometry;
use crate::medium::Token;
use crate::side_device::SideKind;
use crate::units::{Lba, Sectors};
use rustc_hash::FxHashMap;

const NIL: u32 = u32::MAX;
/// Record tag of a buffered block in the memory device.
const MEM_TAG: u64 = 0x4857_5352_4d45_4d31; // "HWSRMEM1"

/// The most sectors a block may hold (the valid map's size).
pub const MAX_BLOCK_SECTORS: u64 = 256;

/// Which sectors of a block are valid in the buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SectorSet([u64; 4]);

impl SectorSet {
    /// Sectors `[lo, lo + n)`.
    pub fn range(lo: u32, n: u32) -> SectorSet {
        let mut s = SectorSet::default();
        for i in lo..lo + n {
            s.0[(i / 64) as usize] |= 1 << (i % 64);
        }
        s
    }
    /// Whether sector `i` is in the set.
    pub fn has(&self, i: u32) -> bool {
        self.0[(i / 64) as usize] >> (i % 64) & 1 == 1
    }
    /// The sectors in either set.
    pub fn union(self, o: SectorSet) -> SectorSet {
        SectorSet([
            self.0[0] | o.0[0],
            self.0[1] | o.0[1],
            self.0[2] | o.0[2],
            self.0[3] | o.0[3],
        ])
    }
    /// Whether every sector of `[lo, lo + n)` is in the set.
    pub fn covers(&self, lo: u32, n: u32) -> bool {
        (lo..lo + n).all(|i| self.has(i))
    }
    /// Whether any sector of `[lo, lo + n)` is in the set.
    pub fn meets(&self, lo: u32, n: u32) -> bool {
        (lo..lo + n).any(|i| self.has(i))
    }
    /// Maximal runs `(start, len)` of the set within `[0, n)`.
    pub fn runs(&self, n: u32) -> Vec<(u32, u32)> {
        let mut v = vec![];
        self.for_runs(n, |s, len| v.push((s, len)));
        v
    }
    /// Call `f(start, len)` for each maximal run of the set within `[0,
    /// n)`, in order ([`runs`](Self::runs) without a list).
    pub fn for_runs(&self, n: u32, mut f: impl FnMut(u32, u32)) {
        let mut i = 0;
        while i < n {
            if self.has(i) {
                let s = i;
                while i < n && self.has(i) {
                    i += 1;
                }
                f(s, i - s);
            } else {
                i += 1;
            }
        }
    }
    /// The four words of a record.
    pub fn words(&self) -> [u64; 4] {
        self.0
    }
    /// From a record's words.
    pub fn from_words(w: &[u64]) -> SectorSet {
        SectorSet([w[0], w[1], w[2], w[3]])
    }
}

/// An intrusive doubly linked LRU list over small ids (head: most recent).
#[derive(Clone, Debug)]
struct Lru {
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
}

impl Lru {
    fn new(n: usize) -> Lru {
        Lru {
            prev: vec![NIL; n],
            next: vec![NIL; n],
            head: NIL,
            tail: NIL,
        }
    }
    fn grow(&mut self, n: usize) {
        if n > self.prev.len() {
            self.prev.resize(n, NIL);
            self.next.resize(n, NIL);
        }
    }
    fn push_front(&mut self, i: u32) {
        self.prev[i as usize] = NIL;
        self.next[i as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = i;
        } else {
            self.tail = i;
        }
        self.head = i;
    }
    fn remove(&mut self, i: u32) {
        let (p, n) = (self.prev[i as usize], self.next[i as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
        self.prev[i as usize] = NIL;
        self.next[i as usize] = NIL;
    }
    fn touch(&mut self, i: u32) {
        if self.head != i {
            self.remove(i);
            self.push_front(i);
        }
    }
}

/// Eviction policy of the memory buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Least-write-amplification LRU (paper 001 Figure 6).
    Lwa,
    /// The LRU block alone (`block`: the paper's "LRU block queue").
    Block,
    /// Every buffered block of the least recently used segment (`segment`: the
    /// paper's "LRU segment queue").
    Segment,
}

/// One block's data handed to a backend for a segment flush.
#[derive(Clone, Debug)]
pub struct BlockImage {
    /// Block index within its segment.
    pub idx: u32,
    /// Sectors the buffer holds (the rest come from the disk).
    pub valid: SectorSet,
    /// Whether the buffer's sectors are newer than the disk's.
    pub dirty: bool,
    /// One token per sector of the block when data is carried (buffer
    /// sectors filled in; the backend fills the others from the disk).
    pub data: Vec<Token>,
}

/// The disk side of a hybrid system.
pub trait Backend: Send {
    /// Blocks per segment (the unit a flush writes).
    fn blocks_per_segment(&self) -> u32;
    /// The blocks of a segment a flush must write when its lowest dirty
    /// evicted block is `lo` (`None`: only the evicted blocks).
    fn span(&self, lo: u32) -> Option<std::ops::Range<u32>>;
    /// Read host sectors `[lba, lba + n)` from the disk.
    fn read(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()>;
    /// Write the images of one segment (sorted by index), reading from the
    /// disk what the buffer does not hold and keeping every block safe
    /// against power loss while it is rewritten.
    fn flush(&mut self, dev: &mut Device, seg: u64, images: &mut [BlockImage]) -> SimResult<()>;
    /// Memory slots the backend keeps for itself (staging a rewrite in NVRAM).
    fn staging_slots(&self) -> u64 {
        0
    }
    /// Tell the backend where its staging slots start.
    fn set_staging(&mut self, _first: u64) {}
    /// After a power loss: finish or undo whatever a flush left half done,
    /// rebuild volatile maps. Returns the largest sequence number seen.
    fn recover(&mut self, dev: &mut Device) -> SimResult<u64>;
    /// Give the backend the next sequence number to stamp.
    fn set_seq(&mut self, _seq: u64) {}
    /// Sectors the host may address.
    fn host_capacity(&self, geom: &Geometry) -> Sectors;
    /// Home ranges kept out of the host LBA space.
    fn reserved_home(&self) -> Vec<(Lba, Sectors)> {
        vec![]
    }
    /// Whether host data starts at the geometry's home (so prefill works).
    fn supports_prefill(&self) -> bool;
    /// Add the backend's own counters (rewrites, merges, ...) to the layer's report.
    fn report(&self, r: &mut LayerReport);
    /// Cumulative counters sampled into the run's series (per-interval
    /// figures such as paper 001 Figure 9(b) are their differences).
    fn series_gauges(&self, _out: &mut Vec<(&'static str, f64)>) {}
}

/// Whether a hybrid layer sends the drive FLUSH CACHE before it lets go
/// of a buffered copy (shared parameter).
pub const DRIVE_FLUSH: ParamSpec = ParamSpec {
    name: "drive_flush",
    kind: ParamKind::Choice(&["safe", "never"]),
    unit: "-",
    default: "safe",
    doc:
        "with the drive's write cache on: flush it before dropping a buffered copy (safe) or never \
          (a prototype that trusts the drive's acknowledgement: faster, loses data at power loss)",
};

/// The parameters every hybrid layer has.
pub const BUFFER_PARAMS: [ParamSpec; 6] = [
    ParamSpec {
        name: "block_sectors",
        kind: ParamKind::Int,
        unit: "sectors",
        default: "64",
        doc: "block size S_blk of the disk layout, the memory buffer and the SSD cache (the paper sweeps 16-64)",
    },
    ParamSpec {
        name: "policy",
        kind: ParamKind::Choice(&["lwa", "block", "segment"]),
        unit: "-",
        default: "lwa",
        doc: "memory buffer eviction: least-write-amplification LRU (Figure 6), block LRU or segment LRU",
    },
    ParamSpec {
        name: "window_blocks",
        kind: ParamKind::Int,
        unit: "blocks",
        default: "128",
        doc: "lwa: blocks from the LRU tail searched for blocks of the tail block's segment (the paper gives no value)",
    },
    ParamSpec {
        name: "mem_mib",
        kind: ParamKind::Float,
        unit: "MiB",
        default: "0",
        doc: "memory buffer size (0: the size in the drive's memory table)",
    },
    ParamSpec {
        name: "memory",
        kind: ParamKind::Choice(&["drive", "battery-backed", "volatile"]),
        unit: "-",
        default: "drive",
        doc: "whether the buffer survives power loss (drive: battery_backed of the drive's memory table)",
    },
    ParamSpec {
        name: "ssd_mib",
        kind: ParamKind::Float,
        unit: "MiB",
        default: "0",
        doc: "SSD read cache size (0: the size in the drive's ssd table)",
    },
];

/// Apply the buffer parameters to the drive's `[memory]` and `[ssd]` tables.
pub fn shape_devices(p: &Params, d: &mut DriveConfig, ssd: bool) -> SimResult<()> {
    let Some(m) = d.memory.as_mut() else {
        return Err(SimError::Config(format!(
            "drive '{}' has no [memory] table: a hybrid layer needs its memory buffer (preset hwsr-paper has one)",
            d.name
        )));
    };
    if p.f64("mem_mib") > 0.0 {
        m.mib = p.f64("mem_mib");
    }
    match p.choice("memory") {
        "battery-backed" => m.battery_backed = true,
        "volatile" => m.battery_backed = false,
        _ => {}
    }
    if ssd {
        let Some(s) = d.ssd.as_mut() else {
            return Err(SimError::Config(format!(
                "drive '{}' has no [ssd] table: layers hwsr and sblock need an SSD read cache (preset hwsr-paper has one)",
                d.name
            )));
        };
        if p.f64("ssd_mib") > 0.0 {
            s.mib = p.f64("ssd_mib");
        }
    } else {
        d.ssd = None;
    }
    Ok(())
}

fn check_block(p: &Params, geom: &Geometry) -> SimResult<u32> {
    let b = p.u64("block_sectors");
    if b == 0 || b > MAX_BLOCK_SECTORS {
        return Err(SimError::Config(format!(
            "block_sectors {b} must be between 1 and {MAX_BLOCK_SECTORS}"
        )));
    }
    let spt = geom.max_sectors_per_track() as u64;
    if !spt.is_multiple_of(b) {
        return Err(SimError::Config(format!(
            "block_sectors {b} must divide the track of {spt} sectors"
        )));
    }
    if p.choice("policy") == "lwa" && p.u64("window_blocks") == 0 {
        return Err(SimError::Config("window_blocks must be at least 1".into()));
    }
    Ok(b as u32)
}

#[derive(Clone, Copy, Debug)]
struct MemSlot {
    block: u64,
    valid: SectorSet,
    dirty: bool,
}

#[derive(Clone, Debug)]
struct SegNode {
    seg: u64,
    /// `MBmap`: buffer slot of each block (NIL: not buffered).
    mb: Vec<u32>,
    /// `SBmap`: SSD slot of each block (NIL: not cached).
    sb: Vec<u32>,
    in_mem: u32,
    in_ssd: u32,
}

/// Counters of the buffer and cache.
#[derive(Clone, Debug, Default)]
struct Counts {
    evictions: u64,
    clean_drops: u64,
    blocks_evicted: u64,
    mem_read_hits: u64,
    ssd_read_hits: u64,
    disk_reads: u64,
    prefetched_blocks: u64,
    ssd_invalidations: u64,
}

/// The buffer, the cache and the segment hash table (built on first use,
/// when the device's memory and SSD are known).
struct Hybrid {
    b: u32,
    spb: u32,
    /// Buffer slots (the memory device's slots less the backend's staging).
    slots: u64,
    mem: Vec<Option<MemSlot>>,
    mem_free: Vec<u32>,
    mem_lru: Lru,
    /// Segment LRU over segment-node ids (policy `segment`).
    seg_lru: Lru,
    ssd: Vec<u64>,
    ssd_free: Vec<u32>,
    ssd_lru: Lru,
    sht: FxHashMap<u64, u32>,
    nodes: Vec<SegNode>,
    node_free: Vec<u32>,
    seq: u64,
    persistent: bool,
}

impl Hybrid {
    fn node(&mut self, seg: u64) -> u32 {
        if let Some(&n) = self.sht.get(&seg) {
            return n;
        }
        let spb = self.spb as usize;
        let id = match self.node_free.pop() {
            Some(id) => {
                // A freed node's maps are reused (no allocation per node).
                let n = &mut self.nodes[id as usize];
                n.seg = seg;
                n.mb.clear();
                n.mb.resize(spb, NIL);
                n.sb.clear();
                n.sb.resize(spb, NIL);
                n.in_mem = 0;
                n.in_ssd = 0;
                id
            }
            None => {
                self.nodes.push(SegNode {
                    seg,
                    mb: vec![NIL; spb],
                    sb: vec![NIL; spb],
                    in_mem: 0,
                    in_ssd: 0,
                });
                self.nodes.len() as u32 - 1
            }
        };
        self.seg_lru.grow(self.nodes.len());
        self.sht.insert(seg, id);
        id
    }
    fn release_if_empty(&mut self, id: u32) {
        let n = &self.nodes[id as usize];
        if n.in_mem == 0 && n.in_ssd == 0 {
            self.sht.remove(&n.seg);
            self.node_free.push(id);
        }
    }
}

/// A hybrid layer: buffer, cache and a disk backend.
pub struct HybridLayer {
    name: &'static str,
    policy: Policy,
    /// Whether it flushes the drive's cache before dropping a buffered copy.
    flush_drive: bool,
    window: u64,
    block_sectors: u32,
    wants_ssd: bool,
    backend: Box<dyn Backend>,
    state: Option<Hybrid>,
    counts: Counts,
    sector_bytes: f64,
    scratch: EvictScratch,
}

/// The lists of an eviction, kept from one to the next (no allocation per eviction).
#[derive(Debug, Default)]
struct EvictScratch {
    /// The victims' buffer slots.
    victims: Vec<u32>,
    /// The dirty victims' block indices.
    dirty: Vec<u32>,
    /// The segment's buffer map.
    mb: Vec<u32>,
    /// The block indices written.
    idxs: Vec<u32>,
    /// The images of those blocks handed to the backend, in `idxs` order.
    images: Vec<BlockImage>,
}

impl HybridLayer {
    /// A layer over `backend`.
    pub fn new(
        name: &'static str,
        p: &Params,
        geom: &Geometry,
        wants_ssd: bool,
        backend: Box<dyn Backend>,
    ) -> SimResult<HybridLayer> {
        let block_sectors = check_block(p, geom)?;
        let policy = match p.choice("policy") {
            "block" => Policy::Block,
            "segment" => Policy::Segment,
            _ => Policy::Lwa,
        };
        Ok(HybridLayer {
            name,
            policy,
            flush_drive: p.choice("drive_flush") != "never",
            window: p.u64("window_blocks"),
            block_sectors,
            wants_ssd,
            backend,
            state: None,
            counts: Counts::default(),
            sector_bytes: geom.sector_bytes() as f64,
            scratch: EvictScratch::default(),
        })
    }

    /// The buffer, built from the device on first use.
    fn init(&mut self, dev: &Device) -> SimResult<()> {
        if self.state.is_some() {
            return Ok(());
        }
        let m = dev
            .side(SideKind::Memory)
            .ok_or_else(|| SimError::Config("the hybrid layer has no memory device".into()))?;
        let staging = self.backend.staging_slots();
        if m.slots() <= staging + 1 {
            return Err(SimError::Config(format!(
                "the memory buffer holds {} blocks; layer '{}' needs more than {}",
                m.slots(),
                self.name,
                staging + 1
            )));
        }
        let slots = m.slots() - staging;
        self.backend.set_staging(slots);
        let ssd_slots = if self.wants_ssd {
            dev.side(SideKind::Ssd).map(|s| s.slots()).unwrap_or(0)
        } else {
            0
        };
        self.state = Some(Hybrid {
            b: self.block_sectors,
            spb: self.backend.blocks_per_segment(),
            slots,
            mem: vec![None; slots as usize],
            mem_free: (0..slots as u32).rev().collect(),
            mem_lru: Lru::new(slots as usize),
            seg_lru: Lru::new(0),
            ssd: vec![u64::MAX; ssd_slots as usize],
            ssd_free: (0..ssd_slots as u32).rev().collect(),
            ssd_lru: Lru::new(ssd_slots as usize),
            sht: FxHashMap::default(),
            nodes: vec![],
            node_free: vec![],
            seq: 1,
            persistent: m.persistent(),
        });
        Ok(())
    }

    fn locate(&self, block: u64) -> (u64, u32) {
        let spb = self.backend.blocks_per_segment() as u64;
        (block / spb, (block % spb) as u32)
    }

    fn mem_words(block: u64, seq: u64, valid: SectorSet) -> [u64; 7] {
        let v = valid.words();
        [MEM_TAG, block, seq, v[0], v[1], v[2], v[3]]
    }

    /// The buffer slot holding `block`, if any.
    fn mem_slot(&self, block: u64) -> Option<u32> {
        let st = self.state.as_ref()?;
        let (seg, idx) = self.locate(block);
        let &n = st.sht.get(&seg)?;
        let s = st.nodes[n as usize].mb[idx as usize];
        (s != NIL).then_some(s)
    }

    fn ssd_slot(&self, block: u64) -> Option<u32> {
        let st = self.state.as_ref()?;
        let (seg, idx) = self.locate(block);
        let &n = st.sht.get(&seg)?;
        let s = st.nodes[n as usize].sb[idx as usize];
        (s != NIL).then_some(s)
    }

    fn touch(&mut self, slot: u32, seg: u64) {
        let st = self.state.as_mut().expect("initialised");
        st.mem_lru.touch(slot);
        if let Some(&n) = st.sht.get(&seg) {
            st.seg_lru.touch(n);
        }
    }

    /// Drop the SSD copy of a block (its data changed).
    fn invalidate_ssd(&mut self, dev: &mut Device, block: u64) {
        let (seg, idx) = self.locate(block);
        let st = self.state.as_mut().expect("initialised");
        let Some(&n) = st.sht.get(&seg) else { return };
        let s = st.nodes[n as usize].sb[idx as usize];
        if s == NIL {
            return;
        }
        st.nodes[n as usize].sb[idx as usize] = NIL;
        st.nodes[n as usize].in_ssd -= 1;
        st.ssd_lru.remove(s);
        st.ssd[s as usize] = u64::MAX;
        st.ssd_free.push(s);
        st.release_if_empty(n);
        dev.side_discard(SideKind::Ssd, s as u64);
        self.counts.ssd_invalidations += 1;
    }

    /// Remove a buffered block from the maps and free its slot.
    fn drop_mem(&mut self, dev: &mut Device, slot: u32) {
        let st = self.state.as_mut().expect("initialised");
        let Some(m) = st.mem[slot as usize].take() else {
            return;
        };
        let spb = st.spb as u64;
        let (seg, idx) = (m.block / spb, (m.block % spb) as usize);
        let n = st.sht[&seg];
        st.nodes[n as usize].mb[idx] = NIL;
        st.nodes[n as usize].in_mem -= 1;
        if st.nodes[n as usize].in_mem == 0 {
            st.seg_lru.remove(n);
        }
        st.mem_lru.remove(slot);
        st.mem_free.push(slot);
        st.release_if_empty(n);
        dev.side_discard(SideKind::Memory, slot as u64);
    }

    /// Choose the victims of one eviction: slots, all of one segment (into `v`).
    fn victims(&self, v: &mut Vec<u32>) -> u64 {
        let st = self.state.as_ref().expect("initialised");
        let spb = st.spb as u64;
        v.clear();
        match self.policy {
            Policy::Segment => {
                let n = &st.nodes[st.seg_lru.tail as usize];
                v.extend(n.mb.iter().copied().filter(|&s| s != NIL));
                n.seg
            }
            Policy::Block | Policy::Lwa => {
                let t = st.mem_lru.tail;
                let seg = st.mem[t as usize].expect("tail is buffered").block / spb;
                v.push(t);
                if self.policy == Policy::Lwa {
                    let mut i = st.mem_lru.prev[t as usize];
                    let mut seen = 1;
                    while i != NIL && seen < self.window {
                        if st.mem[i as usize].expect("listed slots are buffered").block / spb == seg
                        {
                            v.push(i);
                        }
                        i = st.mem_lru.prev[i as usize];
                        seen += 1;
                    }
                }
                seg
            }
        }
    }

    /// Evict one group of blocks (one segment at most is written). Its
    /// lists live in [`EvictScratch`], reused from one eviction to the next.
    fn evict(&mut self, dev: &mut Device) -> SimResult<()> {
        // `drive_flush = never`: the layer sends no FLUSH CACHE at all.
        dev.set_flush_commands(self.flush_drive);
        let mut sc = std::mem::take(&mut self.scratch);
        let r = self.evict_with(dev, &mut sc);
        self.scratch = sc;
        r
    }

    fn evict_with(&mut self, dev: &mut Device, sc: &mut EvictScratch) -> SimResult<()> {
        let seg = self.victims(&mut sc.victims);
        let victims = &sc.victims;
        self.counts.evictions += 1;
        self.counts.blocks_evicted += victims.len() as u64;
        let st = self.state.as_ref().expect("initialised");
        let (b, spb) = (st.b, st.spb);
        // The dirty victims' block indices, ascending and distinct.
        let dirty = &mut sc.dirty;
        dirty.clear();
        dirty.extend(
            victims
                .iter()
                .map(|&s| st.mem[s as usize].expect("victims are buffered"))
                .filter(|m| m.dirty)
                .map(|m| (m.block % spb as u64) as u32),
        );
        dirty.sort_unstable();
        dirty.dedup();
        if let Some(&lo) = dirty.first() {
            // The blocks written: the backend's span, or the dirty victims alone.
            let mb = &mut sc.mb;
            mb.clear();
            mb.extend_from_slice(&st.nodes[st.sht[&seg] as usize].mb);
            let idxs = &mut sc.idxs;
            idxs.clear();
            match self.backend.span(lo) {
                Some(r) => idxs.extend(r),
                None => idxs.extend_from_slice(dirty),
            }
            let carry = dev.carries_data();
            let images = &mut sc.images;
            images.clear();
            for &idx in idxs.iter() {
                let s = mb[idx as usize];
                let (valid, dirty) = if s != NIL {
                    let m = self.state.as_ref().expect("initialised").mem[s as usize]
                        .expect("mapped slots are buffered");
                    (m.valid, m.dirty)
                } else {
                    (SectorSet::default(), false)
                };
                let mut data = vec![];
                if s != NIL {
                    dev.side_read(SideKind::Memory, Cause::Destage, s as u64, 0, b, &mut data)?;
                } else if carry {
                    data = vec![Token::EMPTY; b as usize];
                }
                images.push(BlockImage {
                    idx,
                    valid,
                    dirty,
                    data,
                });
            }
            self.backend.flush(dev, seg, images)?;
            // Under a drive's volatile cache the blocks are on the media
            // only after a flush: before then the buffer must keep them.
            dev.flush()?;
            // Written: durable, and no longer what the SSD holds.
            for im in images.iter() {
                if !im.dirty {
                    continue;
                }
                let block = seg * spb as u64 + im.idx as u64;
                if carry {
                    let d: Vec<Token> = (0..b)
                        .filter(|&i| im.valid.has(i))
                        .map(|i| im.data[i as usize])
                        .collect();
                    dev.note_durable(&d);
                }
                self.invalidate_ssd(dev, block);
                let s = mb[im.idx as usize];
                if let Some(m) = self.state.as_mut().unwrap().mem[s as usize].as_mut() {
                    m.dirty = false;
                }
            }
        } else {
            self.counts.clean_drops += 1;
        }
        for &s in victims {
            self.drop_mem(dev, s);
        }
        Ok(())
    }

    /// A free buffer slot, evicting as needed.
    fn alloc_mem(&mut self, dev: &mut Device) -> SimResult<u32> {
        loop {
            if let Some(s) = self.state.as_mut().unwrap().mem_free.pop() {
                return Ok(s);
            }
            self.evict(dev)?;
        }
    }

    fn write_block(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        block: u64,
        off: u32,
        n: u32,
        data: &[Token],
    ) -> SimResult<()> {
        let (seg, idx) = self.locate(block);
        let slot = match self.mem_slot(block) {
            Some(s) => s,
            None => {
                let s = self.alloc_mem(dev)?;
                let st = self.state.as_mut().unwrap();
                let node = st.node(seg);
                st.nodes[node as usize].mb[idx as usize] = s;
                st.nodes[node as usize].in_mem += 1;
                if st.nodes[node as usize].in_mem == 1 {
                    st.seg_lru.push_front(node);
                }
                st.mem[s as usize] = Some(MemSlot {
                    block,
                    valid: SectorSet::default(),
                    dirty: true,
                });
                st.mem_lru.push_front(s);
                s
            }
        };
        let st = self.state.as_mut().unwrap();
        let m = st.mem[slot as usize].as_mut().unwrap();
        m.valid = m.valid.union(SectorSet::range(off, n));
        m.dirty = true;
        let valid = m.valid;
        st.seq += 1;
        let words = Self::mem_words(block, st.seq, valid);
        self.touch(slot, seg);
        self.invalidate_ssd(dev, block);
        dev.side_write(SideKind::Memory, cause, slot as u64, off, n, data, &words)?;
        Ok(())
    }

    /// Put a block read from the disk into the SSD cache.
    fn prefetch(&mut self, dev: &mut Device, block: u64, data: &[Token]) -> SimResult<()> {
        let st = self.state.as_mut().unwrap();
        if st.ssd.is_empty() {
            return Ok(());
        }
        let slot = match st.ssd_free.pop() {
            Some(s) => s,
            None => {
                let t = st.ssd_lru.tail;
                let old = st.ssd[t as usize];
                let spb = st.spb as u64;
                let n = st.sht[&(old / spb)];
                st.nodes[n as usize].sb[(old % spb) as usize] = NIL;
                st.nodes[n as usize].in_ssd -= 1;
                st.ssd_lru.remove(t);
                st.release_if_empty(n);
                t
            }
        };
        let (seg, idx) = self.locate(block);
        let st = self.state.as_mut().unwrap();
        let node = st.node(seg);
        st.nodes[node as usize].sb[idx as usize] = slot;
        st.nodes[node as usize].in_ssd += 1;
        st.ssd[slot as usize] = block;
        st.ssd_lru.push_front(slot);
        self.counts.prefetched_blocks += 1;
        let b = self.block_sectors;
        dev.side_write(
            SideKind::Ssd,
            Cause::Promote,
            slot as u64,
            0,
            b,
            data,
            &[block],
        )?;
        Ok(())
    }

    /// Overlay the buffer's valid sectors of a block on `out[..]` (the piece `[off, off+n)`).
    fn overlay(
        &mut self,
        dev: &mut Device,
        block: u64,
        off: u32,
        n: u32,
        out: &mut [Token],
    ) -> SimResult<()> {
        let Some(s) = self.mem_slot(block) else {
            return Ok(());
        };
        let m = self.state.as_ref().unwrap().mem[s as usize].unwrap();
        if !m.valid.meets(off, n) {
            return Ok(());
        }
        let mut tmp = vec![];
        dev.side_read(SideKind::Memory, Cause::Host, s as u64, off, n, &mut tmp)?;
        if !tmp.is_empty() {
            for i in 0..n {
                if m.valid.has(off + i) {
                    out[i as usize] = tmp[i as usize];
                }
            }
        }
        Ok(())
    }

    /// Serve blocks `[b0, b0 + k)` (the host range `[lba, lba + n)` within them) from the disk.
    fn read_disk(
        &mut self,
        dev: &mut Device,
        b0: u64,
        k: u64,
        lba: u64,
        n: u64,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let b = self.block_sectors as u64;
        let carry = dev.carries_data();
        // A verification scan (accounting off) must leave the cache as it was.
        let live = dev.accounting();
        if live {
            self.counts.disk_reads += 1;
        }
        let prefetch = live && !self.state.as_ref().unwrap().ssd.is_empty();
        let (from, len) = if prefetch { (b0 * b, k * b) } else { (lba, n) };
        let mut buf = vec![];
        self.backend
            .read(dev, Cause::Host, Lba(from), Sectors(len), &mut buf)?;
        if prefetch {
            for i in 0..k {
                let d = if carry {
                    &buf[(i * b) as usize..((i + 1) * b) as usize]
                } else {
                    &[][..]
                };
                self.prefetch(dev, b0 + i, d)?;
            }
        }
        let skip = (lba - from) as usize;
        let mut piece: Vec<Token> = if carry {
            buf[skip..skip + n as usize].to_vec()
        } else {
            vec![]
        };
        let mut at = lba;
        while at < lba + n {
            let block = at / b;
            let off = (at % b) as u32;
            let m = ((b - off as u64).min(lba + n - at)) as u32;
            if carry {
                let o = (at - lba) as usize;
                self.overlay(dev, block, off, m, &mut piece[o..o + m as usize])?;
            } else {
                self.overlay(dev, block, off, m, &mut [])?;
            }
            at += m as u64;
        }
        out.extend_from_slice(&piece);
        Ok(())
    }
}

impl Layer for HybridLayer {
    fn side_devices(&self) -> Vec<(SideKind, u32)> {
        let mut v = vec![(SideKind::Memory, self.block_sectors)];
        if self.wants_ssd {
            v.push((SideKind::Ssd, self.block_sectors));
        }
        v
    }

    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        sectors: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        self.init(dev)?;
        let b = self.block_sectors as u64;
        let carry = dev.carries_data();
        let end = lba.0 + sectors.0;
        // A run of consecutive blocks to read from the disk: (first block, blocks, first lba).
        let mut run: Option<(u64, u64, u64)> = None;
        let mut at = lba.0;
        while at < end {
            let block = at / b;
            let off = (at % b) as u32;
            let m = ((b - off as u64).min(end - at)) as u32;
            let in_mem = self.mem_slot(block).map(|s| {
                self.state.as_ref().unwrap().mem[s as usize]
                    .unwrap()
                    .valid
                    .covers(off, m)
            });
            let ssd = self.ssd_slot(block);
            if in_mem == Some(true) || ssd.is_some() {
                if let Some((b0, k, from)) = run.take() {
                    // The run's prefetches may have replaced this block's SSD copy: look again.
                    self.read_disk(dev, b0, k, from, at - from, out)?;
                    continue;
                }
                let live = dev.accounting();
                if in_mem == Some(true) {
                    let s = self.mem_slot(block).unwrap();
                    dev.side_read(SideKind::Memory, Cause::Host, s as u64, off, m, out)?;
                    if live {
                        self.counts.mem_read_hits += 1;
                        let seg = block / self.backend.blocks_per_segment() as u64;
                        self.touch(s, seg);
                    }
                } else {
                    let s = ssd.unwrap();
                    if live {
                        self.counts.ssd_read_hits += 1;
                        self.state.as_mut().unwrap().ssd_lru.touch(s);
                    }
                    let start = out.len();
                    dev.side_read(SideKind::Ssd, Cause::Host, s as u64, off, m, out)?;
                    if carry {
                        let (_, tail) = out.split_at_mut(start);
                        self.overlay(dev, block, off, m, tail)?;
                    } else {
                        self.overlay(dev, block, off, m, &mut [])?;
                    }
                }
            } else {
                run = match run {
                    Some((b0, k, from)) => Some((b0, k + 1, from)),
                    None => Some((block, 1, at)),
                };
            }
            at += m as u64;
        }
        if let Some((b0, k, from)) = run {
            self.read_disk(dev, b0, k, from, end - from, out)?;
        }
        Ok(())
    }

    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        self.init(dev)?;
        let b = self.block_sectors as u64;
        let end = w.lba.0 + w.sectors.0;
        let mut at = w.lba.0;
        while at < end {
            let block = at / b;
            let off = (at % b) as u32;
            let m = ((b - off as u64).min(end - at)) as u32;
            let d = if w.data.is_empty() {
                &[][..]
            } else {
                let o = (at - w.lba.0) as usize;
                &w.data[o..o + m as usize]
            };
            self.write_block(dev, w.cause, block, off, m, d)?;
            at += m as u64;
        }
        Ok(())
    }

    fn host_capacity(&self, geom: &Geometry) -> Sectors {
        self.backend.host_capacity(geom)
    }

    fn reserved_home(&self) -> Vec<(Lba, Sectors)> {
        self.backend.reserved_home()
    }

    fn supports_prefill(&self) -> bool {
        self.backend.supports_prefill()
    }

    fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        self.init(dev)?;
        let mut seq = self.backend.recover(dev)?;
        let st = self.state.as_ref().unwrap();
        if st.persistent {
            let m = dev.side(SideKind::Memory).unwrap();
            let mut found: Vec<(u64, u32, u64, SectorSet)> = vec![];
            for s in 0..st.slots {
                if let Some(sl) = m.slot(s) {
                    if sl.words.len() == 7 && sl.words[0] == MEM_TAG {
                        found.push((
                            sl.words[2],
                            s as u32,
                            sl.words[1],
                            SectorSet::from_words(&sl.words[3..7]),
                        ));
                    }
                }
            }
            found.sort_unstable_by_key(|f| (f.0, f.1));
            let st = self.state.as_mut().unwrap();
            st.mem_free.clear();
            let used: std::collections::HashSet<u32> = found.iter().map(|f| f.1).collect();
            st.mem_free = (0..st.slots as u32)
                .rev()
                .filter(|s| !used.contains(s))
                .collect();
            let spb = st.spb as u64;
            for (sq, slot, block, valid) in found {
                seq = seq.max(sq);
                let (seg, idx) = (block / spb, (block % spb) as usize);
                let node = st.node(seg);
                st.nodes[node as usize].mb[idx] = slot;
                st.nodes[node as usize].in_mem += 1;
                if st.nodes[node as usize].in_mem == 1 {
                    st.seg_lru.push_front(node);
                } else {
                    st.seg_lru.touch(node);
                }
                st.mem[slot as usize] = Some(MemSlot {
                    block,
                    valid,
                    dirty: true,
                });
                st.mem_lru.push_front(slot);
            }
        }
        let st = self.state.as_mut().unwrap();
        st.seq = seq + 1;
        self.backend.set_seq(seq + 1);
        // The SSD map was volatile: its slots are free again.
        let n = st.ssd.len() as u64;
        for s in 0..n {
            dev.side_discard(SideKind::Ssd, s);
        }
        Ok(())
    }

    fn series_gauges(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("evictions", self.counts.evictions as f64));
        self.backend.series_gauges(out);
    }

    fn report(&self) -> LayerReport {
        let mut r = LayerReport::new();
        let c = &self.counts;
        r.insert("evictions".into(), c.evictions as f64);
        r.insert("evictions_clean".into(), c.clean_drops as f64);
        r.insert("blocks_evicted".into(), c.blocks_evicted as f64);
        r.insert("memory_read_hits".into(), c.mem_read_hits as f64);
        r.insert("disk_reads".into(), c.disk_reads as f64);
        if self.wants_ssd {
            r.insert("ssd_read_hits".into(), c.ssd_read_hits as f64);
            r.insert("ssd_prefetched_blocks".into(), c.prefetched_blocks as f64);
            r.insert("ssd_invalidations".into(), c.ssd_invalidations as f64);
        }
        if let Some(st) = &self.state {
            let bytes = |blocks: u64| blocks as f64 * st.b as f64 * self.sector_bytes;
            r.insert("memory_buffer_bytes".into(), bytes(st.slots));
            r.insert(
                "memory_used_bytes".into(),
                bytes(st.slots - st.mem_free.len() as u64),
            );
        }
        self.backend.report(&mut r);
        r
    }
}
