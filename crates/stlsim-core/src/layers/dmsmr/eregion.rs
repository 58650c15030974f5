//! The E-region (media-cache) drive-managed SMR baseline (`smr-eregion`):
//! the translation layer paper 003 compares Virtual Guard against, as
//! measured on the Seagate ST5000AS0011 (section 1: "writes are made to an
//! exception region (or persistent cache), and later migrated to a
//! permanent location"; bands with static home locations separated by guard
//! tracks, section 4's "DM-SMR").
//!
//! * **Writes** are appended at the head of the persistent cache's log
//!   (split at log-track boundaries), each piece an extent in an in-memory
//!   extent map (LBA range -> log position); a newer write trims the older
//!   extents it overlaps. **Reads** take each piece from the newest extent
//!   holding it, else from its home track.
//! * **Cleaning** picks the band of the oldest live extent (the log tail, so
//!   the log's space comes back in order), reads the band, merges its cached
//!   blocks, persists each stage to the scratch pad and overwrites the band
//!   (the shared staged cleaner of [`super`]), then drops the band's extents.
//!
//! Choices where the paper is silent (parameters in brackets):
//! * **When** [`clean_reserve`, `idle_clean`]: an episode of one band starts
//!   when free cache space or free map entries fall below `clean_reserve`
//!   (1 %) of the total, and then runs one stage per host request and in idle
//!   time; a write that finds no room waits for cleaning. With `idle_clean`
//!   (default on, a documented guess: E-region drives are commonly described
//!   as cleaning when idle) idle time cleans bands until the cache is empty.
//! * **Map limit** [`map_entries`, default 65,536]: paper 003 cites a ~1 MB
//!   map for commercial E-region drives; at 16 bytes an extent (64-bit LBA,
//!   32-bit cache address, 32-bit length) that is 65,536 extents. The map
//!   entry limit, not the 24 GB of space, is what small random writes run
//!   into (100,000 4 KiB writes fill 0.4 GB of cache but 100,000 entries).
//! * **Skip leading tracks** [`skip_leading`, default on]: cleaning starts
//!   at the band's first track holding cached data (paper 003 says drives on
//!   the market do this).
//! * **Persistence**: each append carries its map entry (LBA, length,
//!   sequence number, log offset, log tail) as out-of-band metadata of its
//!   own sectors, as a journal written with the data: no extra sector.
//!   Recovery reads every log track, rebuilds the map from the intact
//!   entries newer than the newest recorded tail (newest wins), and resumes
//!   an interrupted band rewrite from the scratch pad. Extents of bands
//!   cleaned since the tail last moved come back as live after a crash:
//!   their data equals the band's, so nothing is lost; they are cleaned
//!   again. Until they are, the map may hold more than `map_entries`
//!   extents (measured: 81 of 40 on a test workload), and writes wait for
//!   cleaning to bring it back under the limit.

use super::chunk_map::ChunkMap;
use super::{
    finish_resumed, map_bytes_eq1, run_stage, scan_log, BandContents, BandJob, CacheSplit, Cleaner,
    CleaningState, TrackRing, CLEAN_BUFFER,
};
use crate::device::{Cause, Device};
use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, LayoutKind};
use crate::layers::{
    Background, Layer, LayerEntry, LayerReport, LayoutNeed, Needs, ParamKind, ParamSpec, Params,
    QueueView, StageOutcome, WriteReq,
};
use crate::medium::Token;
use crate::units::{Lba, Nanos, PhysAddr, Sectors, Track};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const EXT: u64 = 0x4552_4547_4558_5431; // "EREGEXT1"
/// Bytes of one extent-map entry in firmware (64-bit LBA, 32-bit cache address, 32-bit length).
pub const ENTRY_BYTES: u64 = 16;

/// The `smr-eregion` layer's entry in `layers::REGISTRY`: name, parameters,
/// constructor.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "smr-eregion",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "drive-managed SMR baseline: writes appended to a persistent cache (extent map), bands cleaned from the log tail",
    paper: "003 sections 1 and 4 (the DM-SMR / E-region baseline)",
    layout: LayoutNeed::Kind(LayoutKind::Smr),
    params: &[
        ParamSpec {
            name: "map_entries",
            kind: ParamKind::Int,
            unit: "entries",
            default: "65536",
            doc: "extent-map entries the drive can hold (1 MiB at 16 bytes an entry: paper 003's ~1 MB map)",
        },
        ParamSpec {
            name: "clean_reserve",
            kind: ParamKind::Float,
            unit: "fraction",
            default: "0.01",
            doc: "start cleaning when free cache space or free map entries fall below this fraction",
        },
        ParamSpec {
            name: "idle_clean",
            kind: ParamKind::Bool,
            unit: "-",
            default: "true",
            doc: "clean bands in idle time until the cache is empty",
        },
        ParamSpec {
            name: "skip_leading",
            kind: ParamKind::Bool,
            unit: "-",
            default: "true",
            doc: "start a band's rewrite at its first track holding cached data",
        },
        CLEAN_BUFFER,
    ],
    build: |p, g| Ok(Box::new(ERegion::new(p, g)?)),
};

#[derive(Clone, Copy, Debug)]
struct Ext {
    len: u64,
    /// Ring offset of its log track.
    off: u64,
    sector: u32,
}

/// The maps and log of the E-region layer (everything but the cleaner).
#[derive(Debug)]
struct State {
    band: u64,
    log: Vec<Track>,
    ring: TrackRing,
    /// The log track being filled (ring offset) and its next sector.
    cur: Option<(u64, u32)>,
    /// Extents by first LBA (non-overlapping), in a map that reuses its
    /// storage as extents come and go (a `BTreeMap` allocated nodes).
    map: ChunkMap<Ext>,
    /// Extents by log position, oldest first: a min-heap of ((offset,
    /// sector), first LBA) whose entries leave lazily (live while `map`
    /// holds that extent at that position). Only the oldest is ever asked
    /// for; a `BTreeMap` here allocated a node every few appends.
    by_pos: BinaryHeap<Reverse<((u64, u32), u64)>>,
    seq: u64,
    map_entries: u64,
    skip_leading: bool,
    log_sectors: u64,
    /// Sectors of each log track; free space is counted in the smallest.
    log_spt: Vec<u32>,
    min_spt: u64,
    appended_sectors: u64,
    peak_span: u64,
    peak_entries: u64,
    tmp: Vec<Token>,
    keys: Vec<u64>,
}

/// The E-region layer (`smr-eregion`): the log in the persistent cache, its
/// extent map and the band cleaner.
#[derive(Debug)]
pub struct ERegion {
    st: State,
    cl: Cleaner,
    reserve: f64,
    idle_clean: bool,
    cache_tracks: u64,
    tracks: u64,
    sector_bytes: u32,
}

/// Reads `n` sectors at an LBA from their home location, appending tokens.
type HomeRead<'a> = dyn FnMut(&mut Device, u64, u64, &mut Vec<Token>) -> SimResult<()> + 'a;

impl ERegion {
    /// Build for an `smr` drive with a persistent cache.
    pub fn new(p: &Params, g: &Geometry) -> SimResult<ERegion> {
        let split = CacheSplit::new("smr-eregion", g, p.f64("clean_buffer_mib"), 4)?;
        let map_entries = p.u64("map_entries");
        if map_entries < 16 {
            return config_err(format!(
                "smr-eregion map_entries {map_entries} must be at least 16"
            ));
        }
        let reserve = p.f64("clean_reserve");
        if !(0.0..0.5).contains(&reserve) {
            return config_err(format!(
                "smr-eregion clean_reserve {reserve} must be in [0, 0.5)"
            ));
        }
        let crate::geometry::Layout::Smr { band, .. } = g.layout() else {
            unreachable!("checked by CacheSplit")
        };
        let log_sectors = split.log.iter().map(|&t| g.sectors_in(t) as u64).sum();
        let min_spt = split
            .log
            .iter()
            .map(|&t| g.sectors_in(t) as u64)
            .min()
            .unwrap_or(1);
        Ok(ERegion {
            cl: Cleaner::new(&split),
            st: State {
                band,
                ring: TrackRing::new(split.log.len() as u64),
                log_spt: split.log.iter().map(|&t| g.sectors_in(t)).collect(),
                log: split.log,
                cur: None,
                map: ChunkMap::default(),
                by_pos: BinaryHeap::new(),
                seq: 0,
                map_entries,
                skip_leading: p.bool("skip_leading"),
                log_sectors,
                min_spt,
                appended_sectors: 0,
                peak_span: 0,
                peak_entries: 0,
                tmp: vec![],
                keys: vec![],
            },
            reserve,
            idle_clean: p.bool("idle_clean"),
            cache_tracks: g.cache_tracks(),
            tracks: g.tracks(),
            sector_bytes: g.sector_bytes(),
        })
    }

    /// Firmware bytes of the extent map at its entry limit.
    pub fn map_bytes(&self) -> u64 {
        self.st.map_entries * ENTRY_BYTES
    }

    fn low(&self) -> bool {
        let s = &self.st;
        let free = s.free_sectors() as f64 / s.log_sectors as f64;
        let entries =
            s.map_entries.saturating_sub(s.map.len() as u64) as f64 / s.map_entries as f64;
        free < self.reserve.max(1e-9) || entries < self.reserve.max(1e-9)
    }
}

impl State {
    /// Sectors that can still be appended.
    fn free_sectors(&self) -> u64 {
        let cur = self
            .cur
            .map(|(off, s)| self.spt(off) - s as u64)
            .unwrap_or(0);
        cur + self.ring.free() * self.min_spt
    }

    fn spt(&self, off: u64) -> u64 {
        self.log_spt[self.ring.index(off)] as u64
    }

    fn log_track(&self, off: u64) -> Track {
        self.log[self.ring.index(off)]
    }

    /// Whether `n` sectors in `pieces` extents can be stored now.
    fn fits(&self, n: u64) -> bool {
        // What the current log track still holds, then whole new tracks (one extent each).
        let here = self
            .cur
            .map(|(off, s)| self.spt(off) - s as u64)
            .unwrap_or(0)
            .min(n);
        let new_tracks = (n - here).div_ceil(self.min_spt);
        let pieces = (here > 0) as u64 + new_tracks;
        // A piece landing inside an older extent splits it: up to two entries more each.
        new_tracks <= self.ring.free() && self.map.len() as u64 + 2 * pieces <= self.map_entries
    }

    /// The first LBA of the extent holding `lba`, or `lba` itself: where a
    /// walk of the extents meeting a range from `lba` starts.
    fn covering_start(&self, lba: u64) -> u64 {
        self.map
            .last_at_or_below(lba)
            .filter(|&(s, e)| s + e.len > lba)
            .map(|(s, _)| s)
            .unwrap_or(lba)
    }

    /// Drop (trim) extents overlapping `[lo, hi)`.
    fn remove_range(&mut self, lo: u64, hi: u64) {
        let start = self.covering_start(lo);
        let mut keys = std::mem::take(&mut self.keys);
        keys.clear();
        keys.extend(
            self.map
                .iter_from(start)
                .map(|(k, _)| k)
                .take_while(|&k| k < hi),
        );
        for &k in &keys {
            // Its position entry dies with it (lazily); a head left in
            // place keeps the same entry.
            let e = self.map.remove(&k).expect("listed");
            let (a, b) = (k.max(lo), (k + e.len).min(hi));
            self.ring.sub(e.off, (b - a) as u32);
            if k < a {
                let left = Ext { len: a - k, ..e };
                self.map.insert(k, left);
            }
            if b < k + e.len {
                let right = Ext {
                    len: k + e.len - b,
                    off: e.off,
                    sector: e.sector + (b - k) as u32,
                };
                self.map.insert(b, right);
                self.by_pos.push(Reverse(((right.off, right.sector), b)));
            }
        }
        self.keys = keys;
    }

    fn insert(&mut self, lba: u64, e: Ext) {
        self.remove_range(lba, lba + e.len);
        self.map.insert(lba, e);
        self.by_pos.push(Reverse(((e.off, e.sector), lba)));
        self.tidy_by_pos();
        self.ring.add(e.off, e.len as u32);
    }

    /// Whether `by_pos` entry `(pos, lba)` is live.
    fn pos_live(&self, pos: (u64, u32), lba: u64) -> bool {
        self.map.get(&lba).is_some_and(|e| (e.off, e.sector) == pos)
    }

    /// Drop dead entries from the top of `by_pos`, and compact it when the
    /// dead outnumber the live (one live entry per extent).
    fn tidy_by_pos(&mut self) {
        while self
            .by_pos
            .peek()
            .is_some_and(|&Reverse((pos, lba))| !self.pos_live(pos, lba))
        {
            self.by_pos.pop();
        }
        if self.by_pos.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.by_pos.retain(|&Reverse((pos, lba))| {
                map.get(&lba).is_some_and(|e| (e.off, e.sector) == pos)
            });
        }
    }

    fn advance_tail(&mut self) {
        let limit = self.cur.map(|c| c.0).unwrap_or(self.ring.head);
        self.ring.advance_tail(limit);
        self.peak_span = self.peak_span.max(self.ring.span());
        self.peak_entries = self.peak_entries.max(self.map.len() as u64);
    }

    /// Append one write to the log, piece by piece.
    fn append(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        let mut done = 0u64;
        while done < w.sectors.0 {
            let (off, sector) = match self.cur {
                Some((off, s)) if (s as u64) < self.spt(off) => (off, s),
                _ => {
                    if self.ring.free() == 0 {
                        return Err(crate::error::SimError::Layer(
                            "smr-eregion: the cache log is full (a write was not made to wait for cleaning)".into(),
                        ));
                    }
                    let off = self.ring.head;
                    self.ring.head += 1;
                    (off, 0)
                }
            };
            let take = (w.sectors.0 - done).min(self.spt(off) - sector as u64) as u32;
            let lba = w.lba.0 + done;
            let data = if w.data.is_empty() {
                &[][..]
            } else {
                &w.data[done as usize..done as usize + take as usize]
            };
            self.seq += 1;
            // In a lost record's buffer (no allocation per write).
            let mut words = dev.meta_words(6);
            words.extend([EXT, self.seq, lba, take as u64, off, self.ring.tail]);
            let at = PhysAddr {
                track: self.log_track(off),
                sector,
            };
            dev.write_meta(w.cause, at, take, data, words)?;
            self.cur = Some((off, sector + take));
            self.insert(
                lba,
                Ext {
                    len: take as u64,
                    off,
                    sector,
                },
            );
            self.appended_sectors += take as u64;
            done += take as u64;
        }
        self.advance_tail();
        Ok(())
    }

    fn band_lbas(&self, g: &Geometry, b: u64) -> (u64, u64) {
        Cleaner::band_lbas(g, self.band, b)
    }

    /// Read `[lba, lba + n)` of one home track's range: cached pieces from
    /// the log, the rest from `home` (a closure reading home sectors).
    fn read_cached(
        &self,
        dev: &mut Device,
        cause: Cause,
        lba: u64,
        n: u64,
        out: &mut Vec<Token>,
        home: &mut HomeRead,
    ) -> SimResult<()> {
        let end = lba + n;
        let mut cur = lba;
        let first = self.covering_start(lba);
        for (k, &e) in self.map.iter_from(first).take_while(|&(k, _)| k < end) {
            let (a, b) = (k.max(cur), (k + e.len).min(end));
            if a >= b {
                continue;
            }
            if cur < a {
                home(dev, cur, a - cur, out)?;
            }
            let at = PhysAddr {
                track: self.log_track(e.off),
                sector: e.sector + (a - k) as u32,
            };
            dev.read(cause, at, (b - a) as u32, out)?;
            cur = b;
        }
        if cur < end {
            home(dev, cur, end - cur, out)?;
        }
        Ok(())
    }
}

impl BandContents for State {
    fn merged_track(&mut self, dev: &mut Device, t: Track, out: &mut Vec<Token>) -> SimResult<u64> {
        let g = dev.geometry_arc();
        let spt = g.sectors_in(t);
        let lba = g
            .home_lba(PhysAddr {
                track: t,
                sector: 0,
            })
            .expect("band tracks hold host data")
            .0;
        let mut home = std::mem::take(&mut self.tmp);
        home.clear();
        dev.read(
            Cause::Clean,
            PhysAddr {
                track: t,
                sector: 0,
            },
            spt,
            &mut home,
        )?;
        let mut read = spt as u64;
        let carries = dev.carries_data();
        // Overlay the cached extents of this track, read from the log.
        let first = self.covering_start(lba);
        let end = lba + spt as u64;
        let mut piece = vec![];
        for (k, &e) in self.map.iter_from(first).take_while(|&(k, _)| k < end) {
            let (a, b) = (k.max(lba), (k + e.len).min(end));
            let at = PhysAddr {
                track: self.log_track(e.off),
                sector: e.sector + (a - k) as u32,
            };
            piece.clear();
            dev.read(Cause::Clean, at, (b - a) as u32, &mut piece)?;
            read += b - a;
            if carries {
                home[(a - lba) as usize..(b - lba) as usize].copy_from_slice(&piece);
            }
        }
        out.extend_from_slice(&home);
        self.tmp = home;
        Ok(read)
    }

    fn state_words(&self, out: &mut Vec<u64>) {
        out.extend([self.seq, self.ring.tail, self.ring.head]);
    }
}

impl CleaningState for State {
    fn plan(&mut self, g: &Geometry) -> Option<BandJob> {
        self.tidy_by_pos();
        let &Reverse((_, lba)) = self.by_pos.peek()?;
        let (b, _) = g.band_position(g.home(Lba(lba)).track)?;
        let (lo, hi) = self.band_lbas(g, b);
        let first = if self.skip_leading {
            let straddles = self.map.last_below(lo).is_some_and(|(s, e)| s + e.len > lo);
            let k = if straddles {
                lo
            } else {
                self.map.iter_from(lo).next().filter(|&(k, _)| k < hi)?.0
            };
            g.band_position(g.home(Lba(k)).track)?.1
        } else {
            1
        };
        Some(BandJob::new(b, first, self.band as u32))
    }

    fn commit(&mut self, g: &Geometry, job: &BandJob) {
        let (lo, hi) = self.band_lbas(g, job.band);
        self.remove_range(lo, hi);
        self.advance_tail();
    }
}

impl Layer for ERegion {
    fn needs(&self) -> Needs {
        Needs {
            arrivals: false,
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
        let g = dev.geometry_arc();
        let cl = &self.cl;
        let mut home =
            |dev: &mut Device, lba: u64, n: u64, out: &mut Vec<Token>| -> SimResult<()> {
                let mut err = Ok(());
                g.for_home_extents(Lba(lba), Sectors(n), |at, count, _| {
                    if err.is_err() {
                        return;
                    }
                    match cl.carried(&g, at.track) {
                        Some(buf) if !buf.is_empty() => out.extend_from_slice(
                            &buf[at.sector as usize..(at.sector + count) as usize],
                        ),
                        Some(_) => {}
                        None => err = dev.read(Cause::Host, at, count, out).map(|_| ()),
                    }
                });
                err
            };
        self.st
            .read_cached(dev, Cause::Host, lba.0, n.0, out, &mut home)?;
        self.cl.owed = self.cl.busy();
        Ok(())
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        if !self.st.fits(w.sectors.0) && self.st.map.is_empty() && self.cl.job.is_none() {
            return Err(crate::error::SimError::Config(format!(
                "smr-eregion: a write of {} sectors does not fit the drive's empty persistent cache (use a larger cache_tracks)",
                w.sectors.0
            )));
        }
        self.st.append(dev, w)?;
        if self.low() {
            self.cl.start_episode(1, dev.now());
        }
        self.cl.owed = self.cl.busy();
        Ok(())
    }
    fn background(&self) -> Background {
        self.cl
            .background(self.idle_clean && !self.st.map.is_empty())
    }
    fn stage(&mut self, dev: &mut Device, _queue: &QueueView) -> SimResult<StageOutcome> {
        // Called in idle time (idle_clean), for an episode, or for a write
        // that must wait: each of them may start a one-band episode.
        let idle = if self.st.map.is_empty() { 0 } else { 1 };
        run_stage(&mut self.cl, &mut self.st, dev, idle)
    }
    fn write_must_wait(&mut self, geom: &Geometry, ws: &[WriteReq]) -> bool {
        let n: u64 = ws.iter().map(|w| w.sectors.0).sum();
        if !self.st.fits(n) {
            return true;
        }
        self.cl.touches_band(geom, self.st.band, ws)
    }
    fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        let pad = self.cl.recover_pad(dev)?;
        let st = &mut self.st;
        // Read the whole log and collect the journal entries riding on it.
        let mut recs: Vec<[u64; 6]> = scan_log(dev, &st.log, EXT)?
            .into_iter()
            .filter(|r| r.words.len() == 6)
            .map(|r| {
                [
                    r.words[1],
                    r.words[2],
                    r.words[3],
                    r.words[4],
                    r.words[5],
                    r.sector as u64,
                ]
            })
            .collect();
        let mut tail = recs.iter().map(|r| r[4]).max().unwrap_or(0);
        let mut head = recs.iter().map(|r| r[3] + 1).max().unwrap_or(0);
        let mut seq = recs.iter().map(|r| r[0]).max().unwrap_or(0);
        if let Some(p) = &pad {
            if let [s, t, h, ..] = p.state[..] {
                seq = seq.max(s);
                tail = tail.max(t);
                head = head.max(h);
            }
        }
        recs.retain(|r| r[3] >= tail);
        recs.sort_by_key(|r| r[0]);
        st.map.clear();
        st.by_pos.clear();
        st.ring.reset(head, tail);
        for r in &recs {
            st.insert(
                r[1],
                Ext {
                    len: r[2],
                    off: r[3],
                    sector: r[5] as u32,
                },
            );
        }
        st.seq = seq;
        st.cur = None;
        st.advance_tail();
        if let Some(p) = pad.filter(|p| p.kind == super::PAD_STAGE) {
            self.cl.resume(dev, &p)?;
            finish_resumed(&mut self.cl, &mut self.st, dev)?;
        }
        Ok(())
    }
    fn fill(&self) -> Option<f64> {
        // What `low` compares with the reserve: cache space and map entries.
        let s = &self.st;
        let space = 1.0 - s.free_sectors() as f64 / s.log_sectors as f64;
        Some(space.max(s.map.len() as f64 / s.map_entries as f64))
    }
    fn restart_counts(&mut self, now: Nanos) {
        let s = &mut self.st;
        s.appended_sectors = 0;
        s.peak_span = s.ring.span();
        s.peak_entries = s.map.len() as u64;
        self.cl.restart_counts(now);
    }
    fn series_gauges(&self, out: &mut Vec<(&'static str, f64)>) {
        let s = &self.st;
        out.push(("cache_span_tracks", s.ring.span() as f64));
        out.push((
            "cache_span_fraction",
            s.ring.span() as f64 / s.ring.len() as f64,
        ));
        out.push(("map_entries", s.map.len() as f64));
        out.push((
            "map_entries_fraction",
            s.map.len() as f64 / s.map_entries as f64,
        ));
        out.push(("clean_bands", self.cl.stats.bands as f64));
    }
    fn report(&self) -> LayerReport {
        let mut r = LayerReport::new();
        let s = &self.st;
        r.insert("map_bytes".into(), self.map_bytes() as f64);
        r.insert(
            "map_eq1_bytes".into(),
            map_bytes_eq1(s.map_entries, self.tracks, self.cache_tracks) as f64,
        );
        r.insert("map_entries_limit".into(), s.map_entries as f64);
        r.insert("map_entries_peak".into(), s.peak_entries as f64);
        r.insert("cache_log_tracks".into(), s.ring.len() as f64);
        r.insert("cache_span_peak_tracks".into(), s.peak_span as f64);
        r.insert("cache_span_tracks".into(), s.ring.span() as f64);
        r.insert("appended_sectors".into(), s.appended_sectors as f64);
        self.cl.report(&mut r, self.sector_bytes);
        r
    }
}
