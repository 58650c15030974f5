//! Virtual Guard (`smr-vguard`): paper 003 (Shafaei & Desnoyers), section 3.
//!
//! A track-mapped translation layer. Host LBAs live at static home tracks
//! in bands of N tracks separated by one guard track. Before track T of a
//! band is first modified, track T+1 is copied to the write frontier of the
//! persistent cache (a *virtual guard*), unless T is the band's last track
//! or T+1 is cached already; then T is written in place, as often as the
//! host likes. An exception map (home track -> cache slot) redirects reads
//! and writes of cached tracks. Cleaning moves cached tracks home, only on
//! demand: when free map entries fall below `alpha` or the log span (oldest
//! cached track to the frontier, invalidated tracks included) exceeds
//! `beta`; an episode cleans `bands_per_episode` (2) bands, each the band
//! of the log's tail track, through the scratch pad in stages of the 15 MB
//! cleaning buffer (the shared cleaner of [`super`]).
//!
//! Choices where the paper is silent or lost (parameters in brackets):
//! * **Writes to a cached track** \[`cache_write`\]. The text says: if the
//!   cache track after it holds a valid track, copy *that* track to the
//!   frontier, then write in place (`copy-next`, the default). Figure 1(d)'s
//!   caption says the written track itself is relocated to the frontier
//!   (`relocate`): the hot track then sits just before the frontier, where
//!   the next write to it is in place (Figure 1(c)). Both copy one track per
//!   write, but only copy-next keeps section 3's observations as writes
//!   repeat (the log never past 38 % of beta, no trace above 13 % of the
//!   cache): relocating a hot track moves it in front of tracks that are
//!   then copied again, so the log keeps growing with the repeats. The text
//!   is the specification; the caption's reading stays a parameter.
//!   A slot of two cache tracks is always relocated, never written in place
//!   (writing its first track would damage its second).
//! * **Slots**: a cached track occupies whole cache tracks: its data from
//!   the slot's first sector, and on the slot's last track first a header
//!   holding the map copy (1 + equation-1 bytes of the current map, in
//!   sectors), then the rest of the data. Outer-diameter cache tracks hold a
//!   home track and its header in one track unless the home track is as
//!   large as a cache track (the outermost zone): then two (the paper's
//!   "rare" case). The header is written last, so a slot is valid only when
//!   complete.
//! * **Persistence of the map**: the paper writes a full map copy with each
//!   cached track. The simulator times that (the header's sectors) but
//!   stores the full copy's entries in every `K`-th header only (K = a
//!   quarter of the log, at most 256) and the slot's own entry in the
//!   others: recovery takes the newest full copy and applies the newer slot
//!   headers in sequence, which yields the same map. Each cleaning commit
//!   writes the map to the scratch pad (its *done* record). Recovery reads
//!   every log track (a firmware would binary-search the newest header; the
//!   simulator's recovery time is an upper bound).
//! * **Thresholds** [`alpha`, `beta`, `map_entries`]: the paper's Table 1
//!   was lost. `map_entries` 0 = one entry per log track; `alpha` 0 = 5 % of
//!   the entries; `beta` 0 = 95 % of the log's tracks. The headroom must
//!   absorb the copies the host makes while an episode runs (one stage per
//!   host request); a write that finds no room waits for the episode.
//! * **Partial cleaning** [`partial_clean`, default on]: the rewrite of a
//!   band stops before the first cached track *after* the log-tail track
//!   (that track stays cached as the virtual guard of the last rewritten
//!   one), so the tail track always goes home. **Skip leading**
//!   [`skip_leading`, default on]: the rewrite starts at the band's first
//!   cached track.
//! * **Empty tracks** [`skip_empty`, default off]: the paper copies T+1
//!   whatever it holds; with `skip_empty` a T+1 that has never held data
//!   (not prefilled, not written) is not copied.
//! * Upstream interference (footnote 2: T may be overwritten in place only
//!   a limited number of times) is not modelled.

use super::{
    bits_for, finish_resumed, map_bytes_eq1, run_stage, scan_log, BandContents, BandJob,
    CacheSplit, Cleaner, CleaningState, TrackRing, CLEAN_BUFFER,
};
use crate::device::{Cause, Device};
use crate::error::{config_err, SimError, SimResult};
use crate::geometry::{Geometry, Layout, LayoutKind};
use crate::layers::cmr::for_home_pieces;
use crate::layers::{
    Background, Layer, LayerEntry, LayerReport, LayoutNeed, Needs, ParamKind, ParamSpec, Params,
    QueueView, StageOutcome, WriteReq,
};
use crate::medium::Token;
use crate::track_bits::TrackBits;
use crate::units::{Lba, Nanos, PhysAddr, Sectors, Track};
use rustc_hash::FxHashMap;

const SLOT: u64 = 0x5647_5344_534c_4f54; // "VGSDSLOT"
const NONE: u64 = u64::MAX;

/// The `smr-vguard` layer's entry in `layers::REGISTRY`: name, parameters,
/// constructor.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "smr-vguard",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "Virtual Guard: copy track T+1 to the persistent cache, write T in place; clean on demand",
    paper: "003 section 3",
    layout: LayoutNeed::Kind(LayoutKind::Smr),
    params: &[
        ParamSpec {
            name: "map_entries",
            kind: ParamKind::Int,
            unit: "entries",
            default: "0",
            doc: "exception-map entries (N_MTE); 0: one per cache log track",
        },
        ParamSpec {
            name: "alpha",
            kind: ParamKind::Int,
            unit: "entries",
            default: "0",
            doc: "clean when free map entries fall below this (0: 5 % of map_entries)",
        },
        ParamSpec {
            name: "beta",
            kind: ParamKind::Int,
            unit: "tracks",
            default: "0",
            doc: "clean when the log span (oldest cached track to the frontier) exceeds this (0: 95 % of the log)",
        },
        ParamSpec {
            name: "bands_per_episode",
            kind: ParamKind::Int,
            unit: "bands",
            default: "2",
            doc: "bands cleaned per cleaning episode, each from the log tail (paper: 2)",
        },
        ParamSpec {
            name: "cache_write",
            kind: ParamKind::Choice(&["copy-next", "relocate"]),
            unit: "-",
            default: "copy-next",
            doc: "write to a cached track followed by a valid one: relocate it to the frontier (Figure 1(d)) or copy the next one there and write in place (section 3 text)",
        },
        ParamSpec {
            name: "skip_leading",
            kind: ParamKind::Bool,
            unit: "-",
            default: "true",
            doc: "cleaning skips the band's leading uncached tracks (optimisation 1)",
        },
        ParamSpec {
            name: "partial_clean",
            kind: ParamKind::Bool,
            unit: "-",
            default: "true",
            doc: "stop a band's rewrite before the first cached track after the log-tail track (optimisation 2)",
        },
        ParamSpec {
            name: "skip_empty",
            kind: ParamKind::Bool,
            unit: "-",
            default: "false",
            doc: "do not copy a next track that has never held data (the paper always copies)",
        },
        CLEAN_BUFFER,
    ],
    build: |p, g| Ok(Box::new(VGuard::new(p, g)?)),
};

/// Where a cached track lives: `k` log tracks from ring offset `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    off: u64,
    k: u32,
    /// Header sectors at the start of its last track.
    h: u32,
}

#[derive(Debug, Default, Clone)]
struct Counts {
    write_pieces: u64,
    guard_copies: u64,
    in_place_home: u64,
    in_place_cache: u64,
    relocations: u64,
    next_copies: u64,
    last_track_writes: u64,
    slot_tracks_written: u64,
    peak_active: u64,
    peak_span: u64,
}

/// The map, log and policy of Vguard (everything but the cleaner).
#[derive(Debug)]
struct State {
    band: u64,
    log: Vec<Track>,
    cache_spt: u32,
    /// The largest home track.
    home_spt: u32,
    ring: TrackRing,
    /// Home track -> slot (a hash map: looked up, never walked in order —
    /// `flat` holds the order; a `BTreeMap` allocated a node every few
    /// slots written).
    map: FxHashMap<u64, Slot>,
    /// The same map as (home, off, k, h) quadruples in home order: a full
    /// map copy is one copy of it.
    flat: Vec<u64>,
    /// Home track of the live slot on each ring track (NONE: free or dead).
    owner: Vec<u64>,
    active: u64,
    seq: u64,
    full_every: u64,
    map_entries: u64,
    alpha: u64,
    beta: u64,
    relocate: bool,
    skip_leading: bool,
    partial: bool,
    skip_empty: bool,
    written: TrackBits,
    tracks: u64,
    c: Counts,
    buf: Vec<Token>,
    /// Scratch of [`needs`](Self::needs): tracks a batch copies.
    copied: std::cell::RefCell<Vec<u64>>,
}

/// The Virtual Guard layer.
#[derive(Debug)]
pub struct VGuard {
    st: State,
    cl: Cleaner,
    bands_per_episode: u32,
    cache_tracks: u64,
    sector_bytes: u32,
}

impl VGuard {
    /// Build for an `smr` drive with a persistent cache.
    pub fn new(p: &Params, g: &Geometry) -> SimResult<VGuard> {
        let split = CacheSplit::new("smr-vguard", g, p.f64("clean_buffer_mib"), 8)?;
        let Layout::Smr { band, .. } = g.layout() else {
            unreachable!("checked by CacheSplit")
        };
        let log_len = split.log.len() as u64;
        let cache_spt = split
            .log
            .iter()
            .map(|&t| g.sectors_in(t))
            .min()
            .unwrap_or(1);
        let kmax = State::slot_tracks_for(
            split.home_spt,
            cache_spt,
            Self::header_for(g, log_len, log_len),
        );
        if kmax as u64 * 4 > log_len {
            return config_err(format!(
                "smr-vguard: the cache log ({log_len} tracks) must hold at least 4 slots of {kmax} tracks"
            ));
        }
        let map_entries = match p.u64("map_entries") {
            0 => log_len / kmax as u64,
            n => n,
        };
        let alpha = match p.u64("alpha") {
            0 => (map_entries as f64 * 0.05).ceil() as u64,
            a => a,
        };
        let beta = match p.u64("beta") {
            0 => (log_len as f64 * 0.95).floor() as u64,
            b => b,
        };
        if alpha >= map_entries {
            return config_err(format!(
                "smr-vguard alpha {alpha} must be below map_entries {map_entries}"
            ));
        }
        if beta + 1 >= log_len || beta < 2 * kmax as u64 {
            return config_err(format!(
                "smr-vguard beta {beta} must be between {} and {} (the log's {log_len} tracks less a free one)",
                2 * kmax,
                log_len.saturating_sub(2)
            ));
        }
        let bpe = p.u64("bands_per_episode");
        if bpe == 0 {
            return config_err("smr-vguard bands_per_episode must be at least 1");
        }
        Ok(VGuard {
            cl: Cleaner::new(&split),
            st: State {
                band,
                cache_spt,
                home_spt: split.home_spt,
                ring: TrackRing::new(log_len),
                owner: vec![NONE; log_len as usize],
                log: split.log,
                map: FxHashMap::default(),
                flat: vec![],
                active: 0,
                seq: 0,
                full_every: (log_len / 4).clamp(1, 256),
                map_entries,
                alpha,
                beta,
                relocate: p.choice("cache_write") == "relocate",
                skip_leading: p.bool("skip_leading"),
                partial: p.bool("partial_clean"),
                skip_empty: p.bool("skip_empty"),
                written: TrackBits::new(g.tracks()),
                tracks: g.tracks(),
                c: Counts::default(),
                buf: vec![],
                copied: Default::default(),
            },
            bands_per_episode: bpe as u32,
            cache_tracks: g.cache_tracks(),
            sector_bytes: g.sector_bytes(),
        })
    }

    /// Header sectors of a slot when the map holds `entries`: one sector of
    /// slot identity plus the map copy by equation 1.
    fn header_for(g: &Geometry, entries: u64, log_len: u64) -> u32 {
        1 + map_bytes_eq1(entries, g.tracks(), log_len).div_ceil(g.sector_bytes() as u64) as u32
    }

    /// Equation 1 for this drive: the exception map at `map_entries`.
    pub fn map_bytes(&self) -> u64 {
        map_bytes_eq1(self.st.map_entries, self.st.tracks, self.cache_tracks)
    }

    fn triggered(&self) -> bool {
        let s = &self.st;
        s.map_entries.saturating_sub(s.map.len() as u64) < s.alpha || s.ring.span() > s.beta
    }
}

impl State {
    fn slot_tracks_for(home_spt: u32, cache_spt: u32, header: u32) -> u32 {
        (home_spt + header).div_ceil(cache_spt)
    }

    fn header(&self, g: &Geometry) -> u32 {
        1 + map_bytes_eq1(self.map.len() as u64 + 1, self.tracks, self.ring.len())
            .div_ceil(g.sector_bytes() as u64) as u32
    }

    fn kmax(&self, g: &Geometry) -> u32 {
        Self::slot_tracks_for(self.home_spt, self.cache_spt, self.header(g))
    }

    fn holds_data(&self, dev: &Device, t: Track) -> bool {
        self.written.get(t) || dev.prefilled(t)
    }

    /// The physical sectors of home sector range `[s, s+n)` of a slot, piece by piece.
    fn slot_pieces(
        &self,
        slot: Slot,
        header: u32,
        s: u32,
        n: u32,
        mut f: impl FnMut(PhysAddr, u32, u32),
    ) {
        let cs = self.cache_spt;
        let first_part = (slot.k - 1) * cs;
        let (mut cur, end) = (s, s + n);
        while cur < end {
            let (i, sector, room) = if cur < first_part {
                (cur / cs, cur % cs, cs - cur % cs)
            } else {
                (
                    slot.k - 1,
                    header + cur - first_part,
                    cs - (header + cur - first_part),
                )
            };
            let take = room.min(end - cur);
            f(
                PhysAddr {
                    track: self.log[self.ring.index(slot.off + i as u64)],
                    sector,
                },
                take,
                cur - s,
            );
            cur += take;
        }
    }

    /// Whether the cache track after a slot holds a live slot (writing the slot would damage it).
    fn next_is_live(&self, slot: Slot) -> bool {
        let after = slot.off + slot.k as u64;
        if self.ring.index(after) == 0 {
            return false; // the last log track: the cache's guard follows
        }
        after < self.ring.head && self.owner[self.ring.index(after)] != NONE
    }

    fn set_owner(&mut self, slot: Slot, home: u64) {
        for i in 0..slot.k as u64 {
            let idx = self.ring.index(slot.off + i);
            self.owner[idx] = home;
            if home == NONE {
                self.ring.sub(slot.off + i, 1);
            } else {
                self.ring.add(slot.off + i, 1);
            }
        }
    }

    /// Where `home`'s quadruple is (or would go) in the flat copy.
    fn flat_find(&self, home: u64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.flat.len() / 4);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.flat[4 * mid].cmp(&home) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Map `home` to `slot`, keeping the flat copy (what a full map copy writes) in step.
    fn map_insert(&mut self, home: u64, slot: Slot) {
        let q = [home, slot.off, slot.k as u64, slot.h as u64];
        match self.flat_find(home) {
            Ok(j) => self.flat[4 * j..4 * j + 4].copy_from_slice(&q),
            Err(j) => {
                self.flat.splice(4 * j..4 * j, q);
            }
        }
        self.map.insert(home, slot);
    }

    fn map_clear(&mut self) {
        self.map.clear();
        self.flat.clear();
    }

    fn drop_slot(&mut self, home: u64) {
        if let Some(old) = self.map.remove(&home) {
            if let Ok(j) = self.flat_find(home) {
                self.flat.drain(4 * j..4 * j + 4);
            }
            self.set_owner(old, NONE);
            self.active -= old.k as u64;
        }
    }

    /// A slot's record, in `w` (a buffer from [`Device::meta_words`]).
    fn words(&self, mut w: Vec<u64>, home: u64, slot: Slot) -> Vec<u64> {
        w.extend([SLOT, self.seq, home, slot.off, slot.k as u64, slot.h as u64]);
        if self.seq.is_multiple_of(self.full_every) {
            self.full_copy(&mut w);
        }
        w
    }

    /// The whole map: head, tail, entries, then (home, off, k, h) quadruples
    /// (appended to `v`).
    fn full_copy(&self, v: &mut Vec<u64>) {
        #[cfg(test)]
        assert!(
            self.flat.len() == 4 * self.map.len()
                && self.flat.chunks_exact(4).all(|q| self
                    .map
                    .get(&q[0])
                    .is_some_and(|s| q == [q[0], s.off, s.k as u64, s.h as u64])),
            "the flat map copy is out of step with the map"
        );
        v.extend([self.ring.head, self.ring.tail, self.map.len() as u64]);
        v.extend_from_slice(&self.flat);
    }

    /// Write home track `home`'s newest contents (`data`: one token per
    /// sector, or empty) as a new slot at the log head, and map it there.
    fn write_slot(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        home: Track,
        data: &[Token],
    ) -> SimResult<()> {
        let g = dev.geometry_arc();
        let spt = g.sectors_in(home);
        let header = self.header(&g);
        let k = Self::slot_tracks_for(spt, self.cache_spt, header);
        if self.ring.index(self.ring.head) as u64 + k as u64 > self.ring.len() {
            self.ring.head += self.ring.len() - self.ring.index(self.ring.head) as u64;
            // skip to the next lap
        }
        if self.ring.free() < k as u64 {
            return Err(SimError::Layer(format!(
                "smr-vguard: no room for a {k}-track slot in the cache log (a write was not made to wait for cleaning)"
            )));
        }
        let slot = Slot {
            off: self.ring.head,
            k,
            h: header,
        };
        self.ring.head += k as u64;
        self.seq += 1;
        self.drop_slot(home.0);
        self.map_insert(home.0, slot);
        self.set_owner(slot, home.0);
        self.active += k as u64;
        let len = if self.seq.is_multiple_of(self.full_every) {
            9 + self.flat.len()
        } else {
            6
        };
        let words = self.words(dev.meta_words(len), home.0, slot);
        let cs = self.cache_spt;
        let carries = dev.carries_data();
        for i in 0..k - 1 {
            let t = self.log[self.ring.index(slot.off + i as u64)];
            let from = (i * cs) as usize;
            let chunk = if carries {
                &data[from..from + cs as usize]
            } else {
                &[][..]
            };
            dev.write(
                cause,
                PhysAddr {
                    track: t,
                    sector: 0,
                },
                cs,
                chunk,
            )?;
        }
        let last = self.log[self.ring.index(slot.off + k as u64 - 1)];
        let rest = spt - (k - 1) * cs;
        let mut payload = vec![];
        if carries {
            payload.resize(header as usize, Token::EMPTY);
            payload.extend_from_slice(&data[((k - 1) * cs) as usize..]);
        }
        dev.write_meta_head(
            cause,
            PhysAddr {
                track: last,
                sector: 0,
            },
            header + rest,
            &payload,
            header,
            words,
        )?;
        self.c.slot_tracks_written += k as u64;
        self.c.peak_active = self.c.peak_active.max(self.active);
        self.c.peak_span = self.c.peak_span.max(self.ring.span());
        Ok(())
    }

    /// Read all of a slot's data (cause `cause`), appending tokens to `out`.
    fn read_slot(
        &self,
        dev: &mut Device,
        cause: Cause,
        home: Track,
        slot: Slot,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let spt = dev.geometry().sectors_in(home);
        let mut err = Ok(());
        self.slot_pieces(slot, slot.h, 0, spt, |at, n, _| {
            if err.is_ok() {
                err = dev.read(cause, at, n, out).map(|_| ());
            }
        });
        err
    }

    /// Read home track `t` in full from wherever its newest data is.
    fn read_track(
        &self,
        dev: &mut Device,
        cause: Cause,
        t: Track,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        match self.map.get(&t.0) {
            Some(&slot) => self.read_slot(dev, cause, t, slot, out),
            None => dev
                .read(
                    cause,
                    PhysAddr {
                        track: t,
                        sector: 0,
                    },
                    dev.geometry().sectors_in(t),
                    out,
                )
                .map(|_| ()),
        }
    }

    /// Copy home track `home`'s newest contents (from its slot, else from
    /// home) to a new slot at the log head, overlaying `piece` (sectors
    /// `[s, s+n)` with `data`) on the way: a guard copy, a copy of the track
    /// in front, or a relocation.
    fn copy_track(
        &mut self,
        dev: &mut Device,
        home: Track,
        piece: Option<(u32, u32, &[Token])>,
    ) -> SimResult<()> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let r = self
            .read_track(dev, Cause::Promote, home, &mut buf)
            .and_then(|_| {
                if let Some((s, n, data)) = piece.filter(|p| !p.2.is_empty()) {
                    buf[s as usize..(s + n) as usize].copy_from_slice(data);
                }
                self.write_slot(dev, Cause::Promote, home, &buf)
            });
        self.buf = buf;
        r
    }

    /// One home-track piece of a host write.
    fn write_piece(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        at: PhysAddr,
        n: u32,
        data: &[Token],
    ) -> SimResult<()> {
        let g = dev.geometry_arc();
        let t = at.track;
        self.c.write_pieces += 1;
        if let Some(&slot) = self.map.get(&t.0) {
            let next_live = self.next_is_live(slot);
            if slot.k == 1 && next_live && !self.relocate {
                // Section 3's text: copy the valid track in front to the frontier, then write in place.
                let next_home = self.owner[self.ring.index(slot.off + 1)];
                self.copy_track(dev, Track(next_home), None)?;
                self.c.next_copies += 1;
            } else if slot.k > 1 || next_live {
                // Figure 1(d): relocate the written track to the frontier.
                self.copy_track(dev, t, Some((at.sector, n, data)))?;
                self.c.relocations += 1;
                return Ok(());
            }
            // Figure 1(c): in place inside the cache (the data follows the header).
            let slot = self.map[&t.0];
            let mut err = Ok(());
            self.slot_pieces(slot, slot.h, at.sector, n, |pa, m, off| {
                if err.is_ok() {
                    let chunk = if data.is_empty() {
                        &[][..]
                    } else {
                        &data[off as usize..(off + m) as usize]
                    };
                    err = dev.write(cause, pa, m, chunk).map(|_| ());
                }
            });
            self.c.in_place_cache += 1;
            return err;
        }
        let (b, p) = g.band_position(t).expect("host data lives in bands");
        if p as u64 == self.band {
            self.c.last_track_writes += 1;
        } else {
            let next = g.band_track(b, p + 1);
            if !self.map.contains_key(&next.0) && (!self.skip_empty || self.holds_data(dev, next)) {
                // The virtual guard: copy T+1 to the frontier before T is written.
                self.copy_track(dev, next, None)?;
                self.c.guard_copies += 1;
            }
        }
        dev.write(cause, at, n, data)?;
        self.written.set(t);
        self.c.in_place_home += 1;
        Ok(())
    }

    /// Log tracks a batch of writes may consume at most (each piece that
    /// may copy or relocate a track takes one slot at the head, skipping to
    /// the next lap where a slot would not fit), and map entries.
    fn needs(&self, g: &Geometry, ws: &[WriteReq]) -> (u64, u64) {
        let k = self.kmax(g) as u64;
        let len = self.ring.len();
        let (mut pos, mut tracks, mut slots) = (self.ring.index(self.ring.head) as u64, 0u64, 0u64);
        // Tracks an earlier piece of the batch caches: a later piece on one
        // of them writes a cached track (and may relocate it).
        // A list kept between calls (no allocation per write).
        let mut copied = self.copied.borrow_mut();
        copied.clear();
        for w in ws {
            g.for_home_extents(w.lba, w.sectors, |at, _, _| {
                let t = at.track;
                let cached = |x: u64| self.map.contains_key(&x) || copied.contains(&x);
                let next = g
                    .band_position(t)
                    .filter(|&(_, p)| (p as u64) < self.band)
                    .map(|(b, p)| g.band_track(b, p + 1).0);
                let copies = cached(t.0) || next.is_some_and(|n| !cached(n));
                if let Some(n) = next.filter(|&n| !cached(t.0) && !cached(n)) {
                    copied.push(n);
                }
                if copies {
                    if pos + k > len {
                        tracks += len - pos;
                        pos = 0;
                    }
                    tracks += k;
                    pos += k;
                    slots += 1;
                }
            });
        }
        (tracks, slots)
    }

    fn advance_tail(&mut self) {
        self.ring.advance_tail(self.ring.head);
    }
}

impl BandContents for State {
    fn merged_track(&mut self, dev: &mut Device, t: Track, out: &mut Vec<Token>) -> SimResult<u64> {
        self.read_track(dev, Cause::Clean, t, out)?;
        Ok(dev.geometry().sectors_in(t) as u64)
    }
    fn state_words(&self, out: &mut Vec<u64>) {
        out.push(self.seq);
        self.full_copy(out);
    }
}

impl CleaningState for State {
    fn plan(&mut self, g: &Geometry) -> Option<BandJob> {
        self.advance_tail();
        if self.ring.tail >= self.ring.head {
            return None;
        }
        let home = self.owner[self.ring.index(self.ring.tail)];
        debug_assert!(home != NONE, "the tail track is live after advance_tail");
        let (b, px) = g.band_position(Track(home))?;
        // The band's cached positions, walked without a list of them.
        let mut cached =
            (1..=self.band as u32).filter(|&p| self.map.contains_key(&g.band_track(b, p).0));
        let first = if self.skip_leading {
            cached
                .clone()
                .next()
                .expect("the tail's home track is cached")
        } else {
            1
        };
        let last = match cached.find(|&p| p > px) {
            Some(q) if self.partial => q - 1,
            _ => self.band as u32,
        };
        Some(BandJob::new(b, first, last))
    }

    fn commit(&mut self, g: &Geometry, job: &BandJob) {
        for p in job.first..=job.last {
            let t = g.band_track(job.band, p);
            self.drop_slot(t.0);
            self.written.set(t);
        }
        self.seq += 1;
        self.advance_tail();
    }
}

impl Layer for VGuard {
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
        let mut err = Ok(());
        let (st, cl) = (&self.st, &self.cl);
        g.for_home_extents(lba, n, |at, count, _| {
            if err.is_err() {
                return;
            }
            if let Some(&slot) = st.map.get(&at.track.0) {
                st.slot_pieces(slot, slot.h, at.sector, count, |pa, m, _| {
                    if err.is_ok() {
                        err = dev.read(Cause::Host, pa, m, out).map(|_| ());
                    }
                });
            } else if let Some(buf) = cl.carried(&g, at.track) {
                if !buf.is_empty() {
                    out.extend_from_slice(&buf[at.sector as usize..(at.sector + count) as usize]);
                }
            } else {
                err = dev.read(Cause::Host, at, count, out).map(|_| ());
            }
        });
        self.cl.owed = self.cl.busy();
        err
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        let geom = dev.geometry_arc();
        for_home_pieces(&geom, w, |at, count, data| {
            self.st.write_piece(dev, w.cause, at, count, data)
        })?;
        self.st.advance_tail();
        if self.triggered() {
            self.cl.start_episode(self.bands_per_episode, dev.now());
        }
        self.cl.owed = self.cl.busy();
        Ok(())
    }
    fn background(&self) -> Background {
        self.cl.background(false)
    }
    fn stage(&mut self, dev: &mut Device, _queue: &QueueView) -> SimResult<StageOutcome> {
        // A write that cannot be stored starts an episode if none is running.
        let forced = if self.st.map.is_empty() {
            0
        } else {
            self.bands_per_episode
        };
        run_stage(&mut self.cl, &mut self.st, dev, forced)
    }
    fn write_must_wait(&mut self, geom: &Geometry, ws: &[WriteReq]) -> bool {
        let (tracks, entries) = self.st.needs(geom, ws);
        if self.st.ring.free() < tracks || self.st.map_entries < self.st.map.len() as u64 + entries
        {
            return !self.st.map.is_empty() || self.cl.job.is_some();
        }
        self.cl.touches_band(geom, self.st.band, ws)
    }
    fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        let pad = self.cl.recover_pad(dev)?;
        let st = &mut self.st;
        // Read every log track for the slot headers.
        let mut slots: Vec<Vec<u64>> = scan_log(dev, &st.log, SLOT)?
            .into_iter()
            .map(|r| r.words)
            .collect();
        // The newest full copy: a scratch record, or a slot header carrying one.
        let mut full: Option<(u64, Vec<u64>)> =
            pad.as_ref().map(|p| (p.state[0], p.state[1..].to_vec()));
        for w in slots.iter().filter(|w| w.len() > 6) {
            if full.as_ref().is_none_or(|f| w[1] > f.0) {
                full = Some((w[1], w[6..].to_vec()));
            }
        }
        st.map_clear();
        st.owner.iter_mut().for_each(|o| *o = NONE);
        st.active = 0;
        let (mut seq, mut head) = (0, 0);
        if let Some((s, v)) = &full {
            seq = *s;
            head = v[0];
            st.ring.reset(v[0], v[1]);
            for e in v[3..].chunks(4) {
                st.map_insert(
                    e[0],
                    Slot {
                        off: e[1],
                        k: e[2] as u32,
                        h: e[3] as u32,
                    },
                );
            }
        } else {
            st.ring.reset(0, 0);
        }
        // Newer slot headers, in sequence.
        slots.retain(|w| w[1] > seq);
        slots.sort_by_key(|w| w[1]);
        for w in &slots {
            if w[1] != seq + 1 {
                break;
            }
            seq = w[1];
            let slot = Slot {
                off: w[3],
                k: w[4] as u32,
                h: w[5] as u32,
            };
            st.map_insert(w[2], slot);
            head = head.max(slot.off + slot.k as u64);
        }
        let tail = st.map.values().map(|s| s.off).min().unwrap_or(head);
        st.ring.reset(head, tail);
        // In home order (the flat copy's).
        let entries: Vec<(u64, Slot)> = st
            .flat
            .chunks_exact(4)
            .map(|q| {
                let s = Slot {
                    off: q[1],
                    k: q[2] as u32,
                    h: q[3] as u32,
                };
                (q[0], s)
            })
            .collect();
        for (h, s) in entries {
            st.set_owner(s, h);
            st.active += s.k as u64;
        }
        st.seq = seq;
        // Which tracks hold data is no longer known: treat every track as written.
        st.written.set_all();
        if let Some(p) = pad.filter(|p| p.kind == super::PAD_STAGE) {
            self.cl.resume(dev, &p)?;
            finish_resumed(&mut self.cl, &mut self.st, dev)?;
        }
        Ok(())
    }
    fn fill(&self) -> Option<f64> {
        // What `triggered` compares with alpha and beta: map entries and the log's span.
        let s = &self.st;
        let entries = s.map.len() as f64 / s.map_entries as f64;
        Some(entries.max(s.ring.span() as f64 / s.ring.len() as f64))
    }
    fn restart_counts(&mut self, now: Nanos) {
        let s = &mut self.st;
        s.c = Counts {
            peak_active: s.active,
            peak_span: s.ring.span(),
            ..Counts::default()
        };
        self.cl.restart_counts(now);
    }
    fn series_gauges(&self, out: &mut Vec<(&'static str, f64)>) {
        let s = &self.st;
        // Paper 003 Figure 3: active tracks as a share of the cache, the log's length as a share of beta.
        out.push(("cache_active_tracks", s.active as f64));
        out.push(("cache_span_tracks", s.ring.span() as f64));
        out.push(("tracks_copied", s.c.slot_tracks_written as f64));
        out.push((
            "cache_active_fraction",
            s.active as f64 / self.cache_tracks as f64,
        ));
        out.push((
            "cache_span_fraction_of_beta",
            s.ring.span() as f64 / s.beta as f64,
        ));
        out.push(("map_entries", s.map.len() as f64));
        out.push(("clean_bands", self.cl.stats.bands as f64));
    }
    fn report(&self) -> LayerReport {
        let s = &self.st;
        let c = &s.c;
        let mut r = LayerReport::new();
        r.insert("map_bytes".into(), self.map_bytes() as f64);
        r.insert("map_entries_limit".into(), s.map_entries as f64);
        r.insert(
            "map_entry_bits".into(),
            (bits_for(s.tracks) + bits_for(self.cache_tracks)) as f64,
        );
        r.insert("alpha_entries".into(), s.alpha as f64);
        r.insert("beta_tracks".into(), s.beta as f64);
        r.insert("cache_log_tracks".into(), s.ring.len() as f64);
        r.insert("cache_active_tracks".into(), s.active as f64);
        r.insert("cache_active_peak_tracks".into(), c.peak_active as f64);
        r.insert("cache_span_peak_tracks".into(), c.peak_span as f64);
        r.insert("tracks_copied".into(), c.slot_tracks_written as f64);
        // Paper 003 Figure 3: the most tracks active at once as a share of the
        // whole cache, and the longest log as a share of beta.
        r.insert(
            "cache_active_peak_fraction".into(),
            c.peak_active as f64 / self.cache_tracks as f64,
        );
        r.insert(
            "log_peak_fraction_of_beta".into(),
            c.peak_span as f64 / s.beta as f64,
        );
        r.insert("write_pieces".into(), c.write_pieces as f64);
        r.insert("guard_copies".into(), c.guard_copies as f64);
        r.insert("in_place_home".into(), c.in_place_home as f64);
        r.insert("in_place_cache".into(), c.in_place_cache as f64);
        r.insert("relocations".into(), c.relocations as f64);
        r.insert("next_copies".into(), c.next_copies as f64);
        r.insert("last_track_writes".into(), c.last_track_writes as f64);
        self.cl.report(&mut r, self.sector_bytes);
        r
    }
}
