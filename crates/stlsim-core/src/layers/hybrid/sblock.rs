//! `sblock`: the S-block circular-log architecture of Cassuto et al., as
//! paper 001 (Wan et al.) configures it for its comparison (sections III.A,
//! III.B and IV): the same memory buffer and SSD cache as HWSR
//! ([`super`]) over a conventional shingled disk whose regions are circular
//! logs of segment-sized S-blocks.
//!
//! * Layout (section III.B): a region holds `S` tracks of log, plus an
//!   internal guard band of `kappa` tracks that travels between the log's
//!   head and tail, then a guard band of `kappa` tracks: the drive runs as
//!   shingled bands of `S + kappa` tracks with a write head `kappa + 1`
//!   tracks wide (track utilisation `S / (S + 2 kappa)`). An S-block is the
//!   size of an HWSR segment (`S x S_blk` sectors); a region's log has room
//!   for `n = S_T / S_blk` of them in its `S` tracks, and `beta x n` of
//!   those are spare (region utilisation `1 - beta`).
//! * A flush from the memory buffer rewrites the S-block of the evicted
//!   blocks: the old copy is read and merged, the new copy is appended at
//!   the head, the old one becomes invalid.
//! * Garbage collection (section III.A) runs when the head needs room: from
//!   the tail, a valid S-block is moved (read, appended at the head) and an
//!   invalid one is skipped, until the free run between head and tail holds
//!   the internal guard band plus two S-blocks (one for the append, one so
//!   that the next collection can move a block).
//!
//! Choices where the papers are silent:
//! * S-blocks are laid along the log track after track, so one may straddle
//!   two tracks (two operations). Slots per region: `floor((S + kappa) S_T
//!   / (S S_blk))`; the internal guard is `ceil(kappa S_T / (S S_blk))`
//!   slots; host S-blocks per region `floor((1 - beta) n)`. With the
//!   paper's S = 20, kappa = 8, 64-sector blocks and 4 MiB tracks: 179
//!   slots, 52 of guard, 89 host S-blocks and 38 spare (beta n = 38.4).
//! * The log starts full of the region's host S-blocks in order (slot `j`
//!   holds S-block `j`, head after them), as on a drive in use: so a
//!   prefilled drive is supported, and the first collections move real data.
//! * Crash safety: every S-block copy carries an out-of-band record
//!   (S-block, sequence number, piece) on each of its pieces; recovery reads
//!   every region holding records, takes the newest complete copy of each
//!   S-block, and finds the head after the newest record and the tail at
//!   the first valid slot after it. A copy is written before the old one is
//!   given up, so a power loss never leaves an S-block without a copy.

use super::{Backend, BlockImage, HybridLayer, BUFFER_PARAMS};
use crate::device::{Cause, Device};
use crate::drive::DriveConfig;
use crate::error::{SimError, SimResult};
use crate::geometry::{Geometry, Layout, LayoutKind};
use crate::layers::{Layer, LayerEntry, LayerReport, LayoutNeed, ParamKind, ParamSpec, Params};
use crate::medium::Token;
use crate::units::{Lba, PhysAddr, Sectors, Track};

const SBLK_TAG: u64 = 0x5342_4c4b_4c4f_4731; // "SBLKLOG1"
const NIL: u32 = u32::MAX;

const PARAMS: [ParamSpec; 9] = [
    BUFFER_PARAMS[0],
    BUFFER_PARAMS[1],
    BUFFER_PARAMS[2],
    BUFFER_PARAMS[3],
    BUFFER_PARAMS[4],
    BUFFER_PARAMS[5],
    super::DRIVE_FLUSH,
    ParamSpec {
        name: "region_tracks",
        kind: ParamKind::Int,
        unit: "tracks",
        default: "0",
        doc: "tracks of log per region S_reg (0: the drive's wave layout's region_tracks)",
    },
    ParamSpec {
        name: "beta",
        kind: ParamKind::Float,
        unit: "-",
        default: "0.3",
        doc: "spare capacity rate per region (paper 001 Figure 8 uses 0.3)",
    },
];

/// The same physical disk as the wave drive, formatted as shingled bands of
/// `S + kappa` tracks (log and internal guard) and `kappa` guard tracks.
fn shape(p: &Params, d: &mut DriveConfig) -> SimResult<()> {
    let tracks = d.geometry()?.tracks();
    let s = if p.u64("region_tracks") > 0 {
        p.u64("region_tracks")
    } else {
        d.layout.region_tracks
    };
    let (lo, hi) = crate::geometry::config::int_range("layout.region_tracks");
    if !(lo..=hi).contains(&s) {
        return Err(SimError::Config(format!(
            "region_tracks = {s} must be between {lo} and {hi}"
        )));
    }
    let k = d.layout.kappa_tracks;
    let unit = s + 2 * k;
    if tracks < unit {
        return Err(SimError::Config(format!(
            "the drive's {tracks} tracks hold no S-block region of {unit} tracks"
        )));
    }
    d.layout = crate::geometry::LayoutConfig {
        kind: LayoutKind::Smr,
        band_tracks: s + k,
        head_width_tracks: k + 1,
        direction: "up".into(),
        ..Default::default()
    };
    d.tracks = Some(tracks / unit * unit);
    d.capacity_gib = None;
    super::shape_devices(p, d, true)
}

/// The `sblock` layer's entry in `layers::REGISTRY`: paper 001 sections III-IV's
/// S-block baseline (circular logs of S-blocks on a shingled disk, with HWSR's buffer and cache).
pub static ENTRY: LayerEntry = LayerEntry {
    name: "sblock",
    runs_in: crate::layers::RunsIn::Host,
    summary: "S-block circular logs (Cassuto et al.) on a shingled disk, with HWSR's memory buffer and SSD cache",
    paper: "001 sections III-IV (S-block baseline)",
    layout: LayoutNeed::Shaped(LayoutKind::Wave, shape),
    params: &PARAMS,
    build: |p: &Params, g: &Geometry| -> SimResult<Box<dyn Layer>> {
        let backend = Logs::new(p, g)?;
        Ok(Box::new(HybridLayer::new("sblock", p, g, true, Box::new(backend))?))
    },
};

/// One region's circular log.
#[derive(Clone, Debug)]
struct Log {
    /// Slot of each host S-block.
    at: Vec<u32>,
    /// Host S-block of each slot (NIL: invalid or free).
    holds: Vec<u32>,
    head: u32,
    tail: u32,
    free: u32,
}

/// The circular logs of every region.
pub struct Logs {
    geom: std::sync::Arc<Geometry>,
    s: u32,
    b: u32,
    st: u64,
    /// Tracks of a band: the log and its internal guard (`S + kappa`).
    band: u64,
    slot_sectors: u64,
    slots: u32,
    guard: u32,
    host: u32,
    /// Number of regions (bands).
    regions: u64,
    /// The logs of the regions written so far (absent: a fresh log): they
    /// follow what the run wrote, not the drive's capacity.
    logs: rustc_hash::FxHashMap<u64, Log>,
    seq: u64,
    appended: u64,
    immigrated: u64,
    gcs: u64,
    skipped: u64,
    merges: u64,
    /// Causes of a collected slot's blocks (reused list).
    causes: Vec<Cause>,
    /// Causes of a flushed S-block's blocks (reused list).
    flush_causes: Vec<Cause>,
    /// Tail slots freed by collection since the drive's cache was last
    /// flushed, by region: their data's migrated copies may still be in
    /// the drive's volatile cache, so the head must not write over them
    /// (or within the guard before them) until a flush.
    freed_unflushed: Vec<(u64, u32)>,
}

impl Logs {
    fn new(p: &Params, g: &Geometry) -> SimResult<Logs> {
        let Layout::Smr { band, width, .. } = g.layout() else {
            return Err(SimError::Config(
                "sblock needs the shingled layout its shaping gives".into(),
            ));
        };
        let kappa = width - 1;
        let s = band - kappa;
        let b = p.u64_at_least("sblock", "block_sectors", 1)?;
        let st = g.max_sectors_per_track() as u64;
        let beta = p.f64("beta");
        if !(0.0..1.0).contains(&beta) {
            return Err(SimError::Config(format!("beta {beta} must be in [0, 1)")));
        }
        let slot_sectors = s * b;
        let slots = (band * st / slot_sectors) as u32;
        let guard = (kappa * st).div_ceil(slot_sectors) as u32;
        let n = st / b;
        let host = ((1.0 - beta) * n as f64).floor() as u32;
        if host == 0 || host + guard + 2 > slots {
            return Err(SimError::Config(format!(
                "an S-block region of {slots} slots cannot hold {host} host S-blocks, an internal guard of {guard} slots and two free slots (lower beta's complement or enlarge the region)"
            )));
        }
        Ok(Logs {
            geom: std::sync::Arc::new(g.clone()),
            s: s as u32,
            b: b as u32,
            st,
            band,
            slot_sectors,
            slots,
            guard,
            host,
            regions: g.bands(),
            logs: Default::default(),
            seq: 1,
            appended: 0,
            immigrated: 0,
            gcs: 0,
            skipped: 0,
            merges: 0,
            causes: vec![],
            flush_causes: vec![],
            freed_unflushed: vec![],
        })
    }

    fn fresh(&self) -> Log {
        let mut holds = vec![NIL; self.slots as usize];
        for j in 0..self.host {
            holds[j as usize] = j;
        }
        Log {
            at: (0..self.host).collect(),
            holds,
            head: self.host,
            tail: 0,
            free: self.slots - self.host,
        }
    }

    fn log(&mut self, r: u64) -> &mut Log {
        if !self.logs.contains_key(&r) {
            let fresh = self.fresh();
            self.logs.insert(r, fresh);
        }
        self.logs.get_mut(&r).expect("inserted above")
    }

    /// Call `f(at, sectors, offset in the slot)` for each piece (one per
    /// track) of sectors `[off, off + n)` of slot `slot` of region `r`, in
    /// order (no list of them per call).
    fn for_pieces(
        &self,
        r: u64,
        slot: u32,
        off: u64,
        n: u64,
        mut f: impl FnMut(PhysAddr, u32, u64),
    ) {
        let mut q = slot as u64 * self.slot_sectors + off;
        let end = q + n;
        while q < end {
            let p = q / self.st;
            let sec = q % self.st;
            let take = (self.st - sec).min(end - q);
            let t = self.geom.band_track(r, p as u32 + 1);
            f(
                PhysAddr {
                    track: t,
                    sector: sec as u32,
                },
                take as u32,
                q - slot as u64 * self.slot_sectors,
            );
            q += take;
        }
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "a slot read's place, its span and where the tokens go: no smaller whole"
    )]
    fn read_slot(
        &self,
        dev: &mut Device,
        cause: Cause,
        r: u64,
        slot: u32,
        off: u64,
        n: u64,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let mut res = Ok(());
        self.for_pieces(r, slot, off, n, |at, k, _| {
            if res.is_ok() {
                res = dev.read(cause, at, k, out).map(|_| ());
            }
        });
        res
    }

    /// Append a copy of host S-block `j` of region `r` at the head; `causes`
    /// gives each block's cause (runs of one cause are one operation per track).
    fn append(
        &mut self,
        dev: &mut Device,
        r: u64,
        j: u32,
        data: &[Token],
        causes: &[Cause],
    ) -> SimResult<()> {
        let log = self.log(r);
        let h = log.head;
        debug_assert!(log.free > self.guard);
        let (slots, reach) = (self.slots, self.guard + 1);
        if !dev.has_cached_writes() {
            self.freed_unflushed.clear();
        }
        if self
            .freed_unflushed
            .iter()
            .any(|&(rr, t)| rr == r && (t + slots - h) % slots < reach)
        {
            dev.flush()?;
            self.freed_unflushed.clear();
        }
        let global = r * self.host as u64 + j as u64;
        let b = self.b as u64;
        let mut i = 0usize;
        while i < causes.len() {
            let mut k = i + 1;
            while k < causes.len() && causes[k] == causes[i] {
                k += 1;
            }
            let mut res = Ok(());
            self.for_pieces(r, h, i as u64 * b, (k - i) as u64 * b, |at, cnt, rel| {
                if res.is_err() {
                    return;
                }
                let d = if data.is_empty() {
                    &[][..]
                } else {
                    &data[rel as usize..rel as usize + cnt as usize]
                };
                let mut words = dev.meta_words(5);
                words.extend([SBLK_TAG, global, self.seq, rel, cnt as u64]);
                res = dev.write_meta(causes[i], at, cnt, d, words).map(|_| ());
            });
            res?;
            i = k;
        }
        let slots = self.slots;
        let log = self.log(r);
        let old = log.at[j as usize];
        if old != NIL && log.holds[old as usize] == j {
            log.holds[old as usize] = NIL;
        }
        log.at[j as usize] = h;
        log.holds[h as usize] = j;
        log.head = (h + 1) % slots;
        log.free -= 1;
        self.seq += 1;
        self.appended += 1;
        Ok(())
    }

    /// Collect from the tail until the free run holds the guard and two slots.
    fn collect(&mut self, dev: &mut Device, r: u64) -> SimResult<()> {
        let need = self.guard + 2;
        if self.log(r).free >= need {
            return Ok(());
        }
        self.gcs += 1;
        let spb = self.s as usize;
        while self.log(r).free < need {
            let (t, j) = {
                let log = self.log(r);
                (log.tail, log.holds[log.tail as usize])
            };
            if j != NIL {
                let mut data = vec![];
                self.read_slot(dev, Cause::Gc, r, t, 0, self.slot_sectors, &mut data)?;
                // The causes in a list kept between calls (no allocation per slot).
                let mut causes = std::mem::take(&mut self.causes);
                causes.clear();
                causes.resize(spb, Cause::Gc);
                let appended = self.append(dev, r, j, &data, &causes);
                self.causes = causes;
                appended?;
                self.immigrated += 1;
            } else {
                self.skipped += 1;
            }
            if j != NIL && dev.has_cached_writes() {
                self.freed_unflushed.push((r, t));
            }
            let slots = self.slots;
            let log = self.log(r);
            log.holds[t as usize] = NIL;
            log.tail = (t + 1) % slots;
            log.free += 1;
        }
        Ok(())
    }
}

impl Backend for Logs {
    fn blocks_per_segment(&self) -> u32 {
        self.s
    }

    fn span(&self, _lo: u32) -> Option<std::ops::Range<u32>> {
        Some(0..self.s)
    }

    fn read(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let end = lba.0 + n.0;
        let mut cur = lba.0;
        while cur < end {
            let g = cur / self.slot_sectors;
            let off = cur % self.slot_sectors;
            let take = (self.slot_sectors - off).min(end - cur);
            let (r, j) = (g / self.host as u64, (g % self.host as u64) as u32);
            let slot = self.log(r).at[j as usize];
            self.read_slot(dev, cause, r, slot, off, take, out)?;
            cur += take;
        }
        Ok(())
    }

    fn flush(&mut self, dev: &mut Device, seg: u64, images: &mut [BlockImage]) -> SimResult<()> {
        let (r, j) = (seg / self.host as u64, (seg % self.host as u64) as u32);
        let b = self.b;
        let carry = dev.carries_data();
        let mut data: Vec<Token> = vec![];
        if images.iter().any(|im| !im.valid.covers(0, b)) {
            self.merges += 1;
            let slot = self.log(r).at[j as usize];
            self.read_slot(dev, Cause::Rmw, r, slot, 0, self.slot_sectors, &mut data)?;
        }
        if carry {
            data.resize(self.slot_sectors as usize, Token::EMPTY);
            for im in images.iter() {
                for i in 0..b {
                    if im.valid.has(i) {
                        data[(im.idx * b + i) as usize] = im.data[i as usize];
                    }
                }
            }
        }
        let mut causes = std::mem::take(&mut self.flush_causes);
        causes.clear();
        causes.resize(self.s as usize, Cause::Rmw);
        for im in images.iter() {
            if im.dirty {
                causes[im.idx as usize] = Cause::Destage;
            }
        }
        let r = self
            .collect(dev, r)
            .and_then(|_| self.append(dev, r, j, &data, &causes));
        self.flush_causes = causes;
        r
    }

    fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }

    fn recover(&mut self, dev: &mut Device) -> SimResult<u64> {
        let mut max_seq = 0;
        let band_tracks = self.band as u32;
        for r in 0..self.regions {
            // (slot, seq) -> sectors covered, and the S-block.
            let mut cover: std::collections::HashMap<(u32, u64), (u64, u32)> = Default::default();
            let mut any = false;
            for p in 1..=band_tracks {
                let t: Track = self.geom.band_track(r, p);
                for rec in dev.meta_records(t) {
                    if rec.words.len() != 5 || rec.words[0] != SBLK_TAG {
                        continue;
                    }
                    any = true;
                    let q = (p as u64 - 1) * self.st + rec.sector as u64;
                    let slot = (q / self.slot_sectors) as u32;
                    let j = (rec.words[1] % self.host as u64) as u32;
                    let e = cover.entry((slot, rec.words[2])).or_insert((0, j));
                    e.0 += rec.words[4];
                }
            }
            if !any {
                self.logs.remove(&r);
                continue;
            }
            // Recovery reads the region's log to find its records.
            for p in 1..=band_tracks {
                let t = self.geom.band_track(r, p);
                dev.read(
                    Cause::Recovery,
                    PhysAddr {
                        track: t,
                        sector: 0,
                    },
                    self.st as u32,
                    &mut vec![],
                )?;
            }
            let mut log = self.fresh();
            let mut newest: Vec<(u64, u32)> = vec![(0, NIL); self.host as usize];
            let mut top: Option<(u64, u32)> = None;
            for (&(slot, seq), &(sectors, j)) in &cover {
                if sectors != self.slot_sectors {
                    continue;
                }
                max_seq = max_seq.max(seq);
                if newest[j as usize].1 == NIL || newest[j as usize].0 < seq {
                    newest[j as usize] = (seq, slot);
                }
                if top.is_none_or(|t| t.0 < seq) {
                    top = Some((seq, slot));
                }
            }
            log.holds.iter_mut().for_each(|h| *h = NIL);
            for j in 0..self.host {
                let slot = if newest[j as usize].1 != NIL {
                    newest[j as usize].1
                } else {
                    j
                };
                log.at[j as usize] = slot;
                log.holds[slot as usize] = j;
            }
            let head = top.map(|t| (t.1 + 1) % self.slots).unwrap_or(self.host);
            let mut tail = head;
            let mut free = 0;
            while log.holds[tail as usize] == NIL {
                tail = (tail + 1) % self.slots;
                free += 1;
            }
            log.head = head;
            log.tail = tail;
            log.free = free;
            self.logs.insert(r, log);
        }
        self.seq = max_seq + 1;
        Ok(max_seq)
    }

    fn host_capacity(&self, _geom: &Geometry) -> Sectors {
        Sectors(self.regions * self.host as u64 * self.slot_sectors)
    }

    fn reserved_home(&self) -> Vec<(Lba, Sectors)> {
        let region = self.slots_span();
        let used = self.host as u64 * self.slot_sectors;
        (0..self.regions)
            .map(|r| (Lba(r * region + used), Sectors(region - used)))
            .collect()
    }

    fn supports_prefill(&self) -> bool {
        true
    }

    fn series_gauges(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("segments_immigrated", self.immigrated as f64));
    }

    fn report(&self, r: &mut LayerReport) {
        r.insert("sblocks_appended".into(), self.appended as f64);
        r.insert("segments_immigrated".into(), self.immigrated as f64);
        r.insert("gc_runs".into(), self.gcs as f64);
        r.insert("gc_invalid_skipped".into(), self.skipped as f64);
        r.insert("sblocks_merged".into(), self.merges as f64);
    }
}

impl Logs {
    /// Sectors of one band (the home LBAs of a region).
    fn slots_span(&self) -> u64 {
        self.band * self.st
    }
}
