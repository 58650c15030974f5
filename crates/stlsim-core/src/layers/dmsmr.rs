//! Drive-managed SMR with a persistent cache: the machinery shared by the
//! E-region baseline ([`eregion`], `smr-eregion`) and Virtual Guard
//! ([`vguard`], `smr-vguard`) of Shafaei & Desnoyers, "Virtual Guard: A
//! Track-Based Translation Layer for Shingled Disks" (paper 003).
//!
//! Both run on an `smr` drive with a shingled persistent cache at the outer
//! diameter (the layout's `cache_tracks`, bands of N tracks each followed by
//! one guard). The cache is split, in shingling order, into
//!
//! * two **scratch-pad areas** A and B, each followed by a spacer track (a
//!   write to the last track of A damages the spacer, never B);
//! * the **cache log**: a circular log of tracks ([`TrackRing`]) written only
//!   at its head, so its own shingling damages only free tracks (one free
//!   track always separates the head from the tail).
//!
//! **Band cleaning** ([`Cleaner`]) rewrites band positions `first..=last` of
//! one band with their newest contents (paper 003 section 3, cleaning steps
//! 1-5), in *stages* of at most `clean_buffer_mib` (15 MB, the paper's
//! cleaning buffer) so that host requests are served between stages. A stage
//! that writes positions `a..b` first reads (home tracks merged with the
//! layer's cached data) positions `a..=b` (`b` is the next stage's first
//! track: writing `b-1` damages it), persists all of them to the scratch
//! pad, then writes `a..b` home; track `b` is carried in the buffer to the
//! next stage. Records go to A and B alternately, data first and a header
//! (a metadata record: band, positions, the layer's persistent state) last,
//! so a power loss while one is written leaves the other intact. The band
//! is finished by a *done* record carrying the layer's state after the
//! commit. After a power loss, if the newest record is a stage record, the
//! rewrite resumes from it: positions `a..b` are rewritten from the pad,
//! track `b` comes from the pad, and the rest of the band is cleaned as
//! before (merging cached data again is idempotent: writes to a band being
//! cleaned wait until it is done).
//!
//! **Scheduling** (both layers): an *episode* of cleaning starts when the
//! layer's trigger fires after a write; then every host request owes one
//! stage, run before the next request ([`Background::Overdue`] once per
//! request), and idle time runs stages too. A write that cannot be stored
//! at all (no cache room, no map entry) or that touches the band being
//! cleaned waits for the stages it needs.

mod chunk_map;
pub mod eregion;
pub mod vguard;

use super::{Background, ParamKind, ParamSpec, StageOutcome};
use crate::device::{Cause, Device};
use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, Layout};
use crate::medium::Token;
use crate::units::{Nanos, PhysAddr, Track};

const PAD_MAGIC: u64 = 0x444d_5343_5241_5431; // "DMSCRAT1"
/// A scratch record of a stage in progress.
pub const PAD_STAGE: u64 = 1;
/// A scratch record written when a band is finished (the commit).
pub const PAD_DONE: u64 = 2;

/// `ceil(log2(n))`, at least 1.
pub fn bits_for(n: u64) -> u64 {
    (64 - n.saturating_sub(1).leading_zeros() as u64).max(1)
}

/// Paper 003 equation 1: `MapSize = N_MTE x (log N_tr + log N_trc)` bits,
/// with base-2 logarithms rounded up (bits of a track number and of a cache
/// track number), returned in bytes.
pub fn map_bytes_eq1(entries: u64, tracks: u64, cache_tracks: u64) -> u64 {
    (entries * (bits_for(tracks) + bits_for(cache_tracks))).div_ceil(8)
}

/// Parameters both layers share.
pub(crate) const CLEAN_BUFFER: ParamSpec = ParamSpec {
    name: "clean_buffer_mib",
    kind: ParamKind::Float,
    unit: "MiB",
    default: "15",
    doc: "cleaning buffer: each cleaning stage reads, persists to the scratch pad and rewrites at most this much (paper 003: 15 MB)",
};

/// A circular log of tracks counted by monotonic offsets (offset `o` is
/// ring track `o % len`), with live units per track. The head is the next
/// track to write; the tail the oldest track that may hold live data.
#[derive(Clone, Debug)]
pub struct TrackRing {
    len: u64,
    /// Next free track (offset).
    pub head: u64,
    /// Oldest possibly live track (offset).
    pub tail: u64,
    live: Vec<u32>,
}

impl TrackRing {
    /// An empty ring of `len` tracks.
    pub fn new(len: u64) -> TrackRing {
        TrackRing {
            len,
            head: 0,
            tail: 0,
            live: vec![0; len as usize],
        }
    }
    /// Tracks in one lap.
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Whether the ring has no tracks (never, once built: a lap holds at least one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Ring index of an offset.
    #[inline]
    pub fn index(&self, off: u64) -> usize {
        (off % self.len) as usize
    }
    /// Tracks from the tail to the head, invalidated ones included (the paper's log span).
    pub fn span(&self) -> u64 {
        self.head - self.tail
    }
    /// Tracks that may still be written: one free track always stays between
    /// head and tail, because writing a track damages the next one.
    pub fn free(&self) -> u64 {
        (self.tail + self.len).saturating_sub(self.head + 1)
    }
    /// Add `n` live units to the track at `off`.
    pub fn add(&mut self, off: u64, n: u32) {
        let i = self.index(off);
        self.live[i] += n;
    }
    /// Remove `n` live units from the track at `off`.
    pub fn sub(&mut self, off: u64, n: u32) {
        let i = self.index(off);
        debug_assert!(
            self.live[i] >= n,
            "ring track {i}: {} live, removing {n}",
            self.live[i]
        );
        self.live[i] = self.live[i].saturating_sub(n);
    }
    /// Move the tail past dead tracks, but not beyond `limit`.
    pub fn advance_tail(&mut self, limit: u64) {
        while self.tail < limit.min(self.head) && self.live[self.index(self.tail)] == 0 {
            self.tail += 1;
        }
    }
    /// Restart from a recovered state: head, tail and no live counts (the caller re-adds them).
    pub fn reset(&mut self, head: u64, tail: u64) {
        self.head = head;
        self.tail = tail.min(head);
        self.live.iter_mut().for_each(|l| *l = 0);
    }
}

/// How the persistent cache is divided: scratch-pad areas, spacers, log.
#[derive(Clone, Debug)]
pub struct CacheSplit {
    /// Scratch-pad areas A and B (tracks in shingling order).
    pub pad: [Vec<Track>; 2],
    /// Log tracks in shingling order.
    pub log: Vec<Track>,
    /// Home positions rewritten per cleaning stage.
    pub stage_tracks: u32,
    /// Sectors of the largest home track.
    pub home_spt: u32,
}

impl CacheSplit {
    /// Split the drive's cache for a cleaning buffer of `buffer_mib`, keeping
    /// at least `min_log` log tracks.
    pub fn new(name: &str, g: &Geometry, buffer_mib: f64, min_log: u64) -> SimResult<CacheSplit> {
        let Layout::Smr { band, width, .. } = g.layout() else {
            return config_err(format!("layer '{name}' needs an smr drive layout"));
        };
        if width != 2 {
            return config_err(format!(
                "layer '{name}' models bands separated by one guard track: the drive needs head_width_tracks = 2 (it has {width})"
            ));
        }
        if let Some(m) = g
            .band_map()
            .filter(|m| m.notation() != crate::geometry::BandMap::sequential(band).notation())
        {
            return config_err(format!(
                "layer '{name}' maps LBAs to band tracks in order; the drive's mapping is {}",
                m.notation()
            ));
        }
        let c = g.cache_tracks();
        if c == 0 {
            return config_err(format!(
                "layer '{name}' needs a drive with a persistent cache (smr layout key cache_tracks or cache_mib)"
            ));
        }
        if !(buffer_mib > 0.0) {
            return config_err(format!("clean_buffer_mib {buffer_mib:?} must be positive"));
        }
        // The largest home track decides how many fit the buffer (one more is carried).
        let home_spt = g.max_home_sectors_per_track();
        let home_bytes = home_spt as f64 * g.sector_bytes() as f64;
        let fit = (buffer_mib * 1024.0 * 1024.0 / home_bytes).floor() as u64;
        if fit == 0 {
            // Not run as one track anyway: a buffer that holds none is a slip.
            return config_err(format!(
                "clean_buffer_mib {buffer_mib:?} holds no whole track ({:.3} MiB); the cleaning buffer must hold at least one",
                home_bytes / (1024.0 * 1024.0)
            ));
        }
        let stage_tracks = fit.saturating_sub(1).max(1).min(band) as u32;
        let cache_spt = (0..c)
            .map(|i| g.sectors_in(g.cache_track(i)))
            .min()
            .unwrap_or(1) as u64;
        let need = (stage_tracks as u64 + 1) * home_spt as u64 + 1;
        let area = need.div_ceil(cache_spt);
        let reserved = 2 * (area + 1);
        if c < reserved + min_log {
            return config_err(format!(
                "layer '{name}' needs a persistent cache of at least {} tracks (two scratch-pad areas of {area} tracks \
                 for a {buffer_mib} MiB cleaning buffer, spacers, and {min_log} log tracks); the drive has {c}",
                reserved + min_log
            ));
        }
        let t = |i: u64| g.cache_track(i);
        Ok(CacheSplit {
            pad: [
                (0..area).map(t).collect(),
                (area + 1..2 * area + 1).map(t).collect(),
            ],
            log: (reserved..c).map(t).collect(),
            stage_tracks,
            home_spt,
        })
    }
}

/// Crash recovery's scan of the cache log: read every log track (timed,
/// cause `recovery`) and return the intact metadata records whose first word
/// is `magic`.
pub fn scan_log(
    dev: &mut Device,
    log: &[Track],
    magic: u64,
) -> SimResult<Vec<crate::medium::MetaRecord>> {
    let mut found = vec![];
    for &t in log {
        let spt = dev.geometry().sectors_in(t);
        dev.read(
            Cause::Recovery,
            PhysAddr {
                track: t,
                sector: 0,
            },
            spt,
            &mut vec![],
        )?;
        found.extend(
            dev.meta_records(t)
                .into_iter()
                .filter(|r| r.words.first() == Some(&magic)),
        );
    }
    Ok(found)
}

/// A newest scratch-pad record found by recovery.
#[derive(Debug)]
pub struct PadRecord {
    /// `PAD_STAGE` or `PAD_DONE`.
    pub kind: u64,
    /// Stage records: band, first, a, b (inclusive), last.
    pub job: [u64; 5],
    /// The layer's state words.
    pub state: Vec<u64>,
    /// Stage records: the tokens of positions a..=b (when data is carried).
    pub data: Vec<Token>,
}

/// The scratch pad: two areas used alternately.
#[derive(Debug)]
pub struct ScratchPad {
    areas: [Vec<Track>; 2],
    next: usize,
    counter: u64,
    /// A record's words as they are put together (reused list).
    words: Vec<u64>,
}

impl ScratchPad {
    fn new(areas: [Vec<Track>; 2]) -> ScratchPad {
        ScratchPad {
            areas,
            next: 0,
            counter: 0,
            words: vec![],
        }
    }

    /// Write a record: `sectors` of data (tokens in `data` when carried)
    /// from the area's first track, then the header on the area's last
    /// sector. Returns the media sectors written.
    fn write<S: BandContents + ?Sized>(
        &mut self,
        dev: &mut Device,
        kind: u64,
        job: [u64; 5],
        sectors: u64,
        data: &[Token],
        state: &S,
    ) -> SimResult<u64> {
        let area = &self.areas[self.next];
        let last = *area.last().expect("areas are not empty");
        let mut left = sectors;
        let mut off = 0usize;
        let mut written = 0;
        for &t in area {
            if left == 0 {
                break;
            }
            let room = dev.geometry().sectors_in(t) as u64 - if t == last { 1 } else { 0 };
            let take = left.min(room) as u32;
            let chunk = if data.is_empty() {
                &[][..]
            } else {
                &data[off..off + take as usize]
            };
            dev.write(
                Cause::Clean,
                PhysAddr {
                    track: t,
                    sector: 0,
                },
                take,
                chunk,
            )?;
            off += take as usize;
            left -= take as u64;
            written += take as u64;
        }
        assert!(left == 0, "scratch area too small (sized at build time)");
        self.counter += 1;
        // Put together in a reused list, then copied into a lost record's
        // buffer of about its length (no allocation per stage in steady state).
        let w = &mut self.words;
        w.clear();
        w.extend([PAD_MAGIC, self.counter, kind, sectors]);
        w.extend(job);
        state.state_words(w);
        let mut words = dev.meta_words(w.len());
        words.extend_from_slice(w);
        let spt = dev.geometry().sectors_in(last);
        let blank = if dev.carries_data() {
            vec![Token::EMPTY]
        } else {
            vec![]
        };
        dev.write_meta(
            Cause::Clean,
            PhysAddr {
                track: last,
                sector: spt - 1,
            },
            1,
            &blank,
            words,
        )?;
        self.next ^= 1;
        Ok(written + 1)
    }

    /// Read both areas' headers (and the newest stage record's data): the newest intact record.
    fn recover(&mut self, dev: &mut Device) -> SimResult<Option<PadRecord>> {
        let mut best: Option<(usize, Vec<u64>)> = None;
        for (i, area) in self.areas.iter().enumerate() {
            let last = *area.last().expect("areas are not empty");
            let spt = dev.geometry().sectors_in(last);
            dev.read(
                Cause::Recovery,
                PhysAddr {
                    track: last,
                    sector: spt - 1,
                },
                1,
                &mut vec![],
            )?;
            if let Some(r) = dev.meta_records(last).into_iter().find(|r| {
                r.sector == spt - 1 && r.words.first() == Some(&PAD_MAGIC) && r.words.len() >= 9
            }) {
                if best.as_ref().is_none_or(|b| r.words[1] > b.1[1]) {
                    best = Some((i, r.words));
                }
            }
        }
        let Some((i, w)) = best else { return Ok(None) };
        self.counter = w[1];
        self.next = i ^ 1;
        let (kind, sectors) = (w[2], w[3]);
        let job = [w[4], w[5], w[6], w[7], w[8]];
        let mut data = vec![];
        if kind == PAD_STAGE {
            let mut left = sectors;
            for &t in &self.areas[i] {
                if left == 0 {
                    break;
                }
                let room = dev.geometry().sectors_in(t) as u64
                    - if Some(&t) == self.areas[i].last() {
                        1
                    } else {
                        0
                    };
                let take = left.min(room) as u32;
                let mut v = vec![];
                dev.read(
                    Cause::Recovery,
                    PhysAddr {
                        track: t,
                        sector: 0,
                    },
                    take,
                    &mut v,
                )?;
                data.extend(v);
                left -= take as u64;
            }
        }
        Ok(Some(PadRecord {
            kind,
            job,
            state: w[9..].to_vec(),
            data,
        }))
    }
}

/// What the cleaner needs from its layer.
pub trait BandContents {
    /// Append the newest contents of home track `t` (all its sectors; tokens
    /// only when data is carried), issuing the timed reads this costs
    /// (cause `clean`). Returns the sectors read from the media.
    fn merged_track(&mut self, dev: &mut Device, t: Track, out: &mut Vec<Token>) -> SimResult<u64>;
    /// The layer's persistent state, written with every scratch record
    /// (appended to `out`: the record's buffer, no list of its own).
    fn state_words(&self, out: &mut Vec<u64>);
}

/// One band being rewritten: positions `first..=last`, next to write `next`.
#[derive(Clone, Debug)]
pub struct BandJob {
    /// The band's number (from 0, in the geometry's order of bands).
    pub band: u64,
    /// First position rewritten (1-based, shingling order).
    pub first: u32,
    /// Last position rewritten (1-based, inclusive).
    pub last: u32,
    /// Next position to write.
    pub next: u32,
    /// Whether position `next`'s newest contents are in `carry` (its home is damaged).
    carried: bool,
    carry: Vec<Token>,
}

impl BandJob {
    /// A job rewriting positions `first..=last` of `band`.
    pub fn new(band: u64, first: u32, last: u32) -> BandJob {
        BandJob {
            band,
            first,
            last,
            next: first,
            carried: false,
            carry: vec![],
        }
    }
}

/// Cleaning statistics (counters).
#[derive(Clone, Debug, Default)]
pub struct CleanStats {
    /// Episodes started: times the layer's trigger fired with no cleaning in
    /// progress (the report's `clean_episodes`).
    pub episodes: u64,
    /// Bands whose rewrite finished, resumed ones included (`clean_bands`).
    pub bands: u64,
    /// Cleaning stages completed, each of at most `clean_buffer_mib` (`clean_stages`).
    pub stages: u64,
    /// Home tracks written back by cleaning stages (`clean_tracks_rewritten`).
    pub tracks_rewritten: u64,
    /// Sectors read by cleaning (home, cache).
    pub read_sectors: u64,
    /// Sectors written by cleaning (scratch pad, home).
    pub written_sectors: u64,
    /// Sum of episode durations (first stage start to last stage end).
    pub episode_time: Nanos,
    /// Longest episode, first stage start to last stage end (`clean_episode_max_s`).
    pub episode_max: Nanos,
    /// Device time spent in cleaning stages.
    pub busy: Nanos,
    /// Bands finished by crash recovery.
    pub resumed: u64,
}

/// The band cleaner, its scratch pad and its episode schedule.
#[derive(Debug)]
pub struct Cleaner {
    pad: ScratchPad,
    stage_tracks: u32,
    /// The band in progress.
    pub job: Option<BandJob>,
    buf: Vec<Token>,
    /// What cleaning has done since the run's measurements started (the
    /// report's `clean_*` figures).
    pub stats: CleanStats,
    /// Bands still to clean in the current episode (0: no episode).
    pub episode_left: u32,
    episode_start: Option<Nanos>,
    /// A host request was served since the last stage: one stage is owed.
    pub owed: bool,
}

impl Cleaner {
    /// A cleaner for a cache split.
    pub fn new(split: &CacheSplit) -> Cleaner {
        Cleaner {
            pad: ScratchPad::new(split.pad.clone()),
            stage_tracks: split.stage_tracks,
            job: None,
            buf: vec![],
            stats: CleanStats::default(),
            episode_left: 0,
            episode_start: None,
            owed: false,
        }
    }

    /// The band being rewritten, if any.
    pub fn band(&self) -> Option<u64> {
        self.job.as_ref().map(|j| j.band)
    }

    /// The newest contents of `t` if it is the carried track of the band in progress.
    pub fn carried(&self, g: &Geometry, t: Track) -> Option<&[Token]> {
        let j = self.job.as_ref()?;
        (j.carried && g.band_track(j.band, j.next) == t).then_some(&j.carry[..])
    }

    /// Host LBAs `[lo, hi)` of band `b` (bands of `band_tracks` tracks filled in order).
    pub fn band_lbas(g: &Geometry, band_tracks: u64, b: u64) -> (u64, u64) {
        (
            g.logical_track_start(b * band_tracks).0,
            g.logical_track_start((b + 1) * band_tracks).0,
        )
    }

    /// Whether any of `ws` writes into the band being rewritten (it must wait).
    pub fn touches_band(&self, g: &Geometry, band_tracks: u64, ws: &[super::WriteReq]) -> bool {
        self.band().is_some_and(|b| {
            let (lo, hi) = Self::band_lbas(g, band_tracks, b);
            ws.iter()
                .any(|w| w.lba.0 < hi && lo < w.lba.0 + w.sectors.0)
        })
    }

    /// Forget the statistics so far (the run starts at `now`, after a
    /// history); an episode in progress counts as the run's, from `now`.
    pub fn restart_counts(&mut self, now: Nanos) {
        self.stats = CleanStats::default();
        if self.episode_start.is_some() {
            self.episode_start = Some(now);
            self.stats.episodes = 1;
        }
    }

    /// Whether an episode or a band is in progress.
    pub fn busy(&self) -> bool {
        self.job.is_some() || self.episode_left > 0
    }

    /// Start an episode of `bands` bands (no effect if one is running).
    pub fn start_episode(&mut self, bands: u32, now: Nanos) {
        if !self.busy() {
            self.episode_left = bands.max(1);
            self.episode_start = Some(now);
            self.stats.episodes += 1;
        }
    }

    /// What the schedule asks of the engine (`idle`: the layer would clean in idle time anyway).
    pub fn background(&self, idle: bool) -> Background {
        if self.busy() {
            if self.owed {
                Background::Overdue
            } else {
                Background::Idle
            }
        } else if idle {
            Background::Idle
        } else {
            Background::None
        }
    }

    fn end_episode(&mut self, now: Nanos) {
        if let Some(s) = self.episode_start.take() {
            let d = now.saturating_sub(s);
            self.stats.episode_time += d;
            self.stats.episode_max = self.stats.episode_max.max(d);
        }
        self.episode_left = 0;
    }

    /// Run one stage of the band in progress; returns the job when it has
    /// just been written completely (the caller commits, then calls [`finish`](Self::finish)).
    fn stage<S: BandContents>(
        &mut self,
        dev: &mut Device,
        src: &mut S,
    ) -> SimResult<Option<BandJob>> {
        let start = dev.now();
        let g = dev.geometry_arc();
        let job = self.job.as_mut().expect("a stage needs a job");
        let (a, e) = (job.next, job.last);
        let b = (a + self.stage_tracks).min(e + 1);
        let upto = b.min(e);
        self.buf.clear();
        let mut sectors = 0u64;
        for p in a..=upto {
            let t = g.band_track(job.band, p);
            if p == a && job.carried {
                self.buf.extend_from_slice(&job.carry);
            } else {
                self.stats.read_sectors += src.merged_track(dev, t, &mut self.buf)?;
            }
            sectors += g.sectors_in(t) as u64;
        }
        let words = [job.band, job.first as u64, a as u64, upto as u64, e as u64];
        self.stats.written_sectors += self
            .pad
            .write(dev, PAD_STAGE, words, sectors, &self.buf, &*src)?;
        let carries = dev.carries_data();
        let mut off = 0usize;
        for p in a..b {
            let t = g.band_track(job.band, p);
            let n = g.sectors_in(t);
            let chunk = if carries {
                &self.buf[off..off + n as usize]
            } else {
                &[][..]
            };
            dev.write(
                Cause::Clean,
                PhysAddr {
                    track: t,
                    sector: 0,
                },
                n,
                chunk,
            )?;
            off += n as usize;
            self.stats.written_sectors += n as u64;
            self.stats.tracks_rewritten += 1;
        }
        self.stats.stages += 1;
        self.stats.busy += dev.now().saturating_sub(start);
        if b <= e {
            job.carry.clear();
            if carries {
                job.carry.extend_from_slice(&self.buf[off..]);
            }
            job.carried = true;
            job.next = b;
            Ok(None)
        } else {
            self.stats.bands += 1;
            Ok(self.job.take())
        }
    }

    /// Persist the layer's state after a committed band (the done record).
    fn finish<S: BandContents>(&mut self, dev: &mut Device, src: &S) -> SimResult<()> {
        self.stats.written_sectors += self.pad.write(dev, PAD_DONE, [0; 5], 0, &[], src)?;
        Ok(())
    }

    /// After a power loss: the newest scratch record (timed reads).
    pub fn recover_pad(&mut self, dev: &mut Device) -> SimResult<Option<PadRecord>> {
        self.pad.recover(dev)
    }

    /// Resume the band a stage record describes: rewrite its written
    /// positions from the pad and carry its last track; later stages run as usual.
    pub fn resume(&mut self, dev: &mut Device, rec: &PadRecord) -> SimResult<()> {
        let g = dev.geometry_arc();
        let [band, first, a, upto, last] = rec.job;
        let (a, last) = (a as u32, last as u32);
        debug_assert!(upto as u32 <= last);
        // The stage wrote positions a..b, b = min(a + stage_tracks, last + 1), as `stage` does.
        let b = (a + self.stage_tracks).min(last + 1);
        let carries = dev.carries_data();
        let mut off = 0usize;
        for p in a..b.min(last + 1) {
            let t = g.band_track(band, p);
            let n = g.sectors_in(t);
            let chunk = if carries {
                &rec.data[off..off + n as usize]
            } else {
                &[][..]
            };
            dev.write(
                Cause::Recovery,
                PhysAddr {
                    track: t,
                    sector: 0,
                },
                n,
                chunk,
            )?;
            off += n as usize;
        }
        let mut job = BandJob::new(band, first as u32, last);
        if b <= last {
            job.next = b;
            job.carried = true;
            if carries {
                job.carry.extend_from_slice(&rec.data[off..]);
            }
        } else {
            job.next = last + 1;
        }
        self.job = Some(job);
        self.stats.resumed += 1;
        Ok(())
    }

    /// Sets of figures for the report.
    pub fn report(&self, r: &mut super::LayerReport, sector_bytes: u32) {
        let s = &self.stats;
        let mib = |x: u64| x as f64 * sector_bytes as f64 / (1024.0 * 1024.0);
        r.insert("clean_episodes".into(), s.episodes as f64);
        r.insert("clean_bands".into(), s.bands as f64);
        r.insert("clean_stages".into(), s.stages as f64);
        r.insert("clean_tracks_rewritten".into(), s.tracks_rewritten as f64);
        r.insert("clean_read_mib".into(), mib(s.read_sectors));
        r.insert("clean_written_mib".into(), mib(s.written_sectors));
        r.insert("clean_episode_s".into(), s.episode_time.as_secs());
        r.insert("clean_episode_max_s".into(), s.episode_max.as_secs());
        r.insert("clean_busy_s".into(), s.busy.as_secs());
        r.insert("clean_resumed".into(), s.resumed as f64);
    }
}

/// The layer side of cleaning: choosing the next band and committing it.
pub trait CleaningState: BandContents {
    /// The next band to rewrite in the current episode (from the log tail), if any.
    fn plan(&mut self, g: &Geometry) -> Option<BandJob>;
    /// The band's positions `first..=last` now hold their newest data: update the maps.
    fn commit(&mut self, g: &Geometry, job: &BandJob);
}

/// Run one stage: start the episode's next band if none is in progress,
/// rewrite one buffer of it, and commit it when it is done.
pub fn run_stage<S: CleaningState>(
    cl: &mut Cleaner,
    st: &mut S,
    dev: &mut Device,
    idle_bands: u32,
) -> SimResult<StageOutcome> {
    if cl.job.is_none() {
        if cl.episode_left == 0 {
            if idle_bands == 0 {
                return Ok(StageOutcome::Nothing);
            }
            cl.start_episode(idle_bands, dev.now());
        }
        match st.plan(dev.geometry()) {
            Some(job) => cl.job = Some(job),
            None => {
                cl.end_episode(dev.now());
                return Ok(StageOutcome::Nothing);
            }
        }
    }
    cl.owed = false;
    if let Some(job) = cl.stage(dev, st)? {
        st.commit(dev.geometry(), &job);
        cl.finish(dev, st)?;
        cl.episode_left = cl.episode_left.saturating_sub(1);
        if cl.episode_left == 0 {
            cl.end_episode(dev.now());
        }
    }
    Ok(StageOutcome::Ran)
}

/// Finish the band a recovered stage record describes, synchronously (crash recovery).
pub fn finish_resumed<S: CleaningState>(
    cl: &mut Cleaner,
    st: &mut S,
    dev: &mut Device,
) -> SimResult<()> {
    while cl.job.is_some() {
        let done = if cl.job.as_ref().is_some_and(|j| j.next > j.last) {
            cl.job.take()
        } else {
            cl.stage(dev, st)?
        };
        if let Some(job) = done {
            st.commit(dev.geometry(), &job);
            cl.finish(dev, st)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
