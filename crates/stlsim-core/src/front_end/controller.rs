//! The drive's controller between the host link and the medium: per-request
//! command-processing overheads and the on-drive read cache (buffer segments
//! with read-ahead), as DiskSim's validated disk model describes them
//! (DiskSim 4.0 `disk.modspec`, "Read hit over. after read" ... "Maximum
//! read-ahead (blks)"). Both are off unless a drive's `[controller]` or
//! `[read_cache]` table asks for them, so drives without those tables keep
//! their figures.
//!
//! Overheads: a request pays one command overhead before any media or buffer
//! work, chosen by whether it is a read or a write, whether it hits (a read
//! served from the buffer, a write absorbed by the write cache) and whether
//! the request before it was a read or a write; plus `per_request_ms`. The
//! completion overhead runs after the data are through, before the host sees
//! the completion, and overlaps whatever the mechanism does next.
//!
//! Scheduler: with a host queue deeper than one (`queue` mode), the drive
//! picks the next request among those the host has issued by the time the
//! drive is free: in arrival order (`fcfs`, the default), the fewest
//! cylinders away (`sstf`) or the shortest positioning time (`sptf`: seek
//! plus rotational wait to the request's first sector at its home
//! location); ties go to the earlier arrival. A request is never served
//! ahead of an earlier one it overlaps when either writes. The engine does
//! the picking.
//!
//! Read cache, choices where DiskSim has more knobs than stlsim models:
//! * segments hold runs of consecutive host LBAs, replaced least recently
//!   used; a run is at most `segment_sectors` long;
//! * after a read that went to the media, the drive keeps reading the
//!   following LBAs into the same segment (read-ahead, DiskSim's "Buffer
//!   continuous read" up to the segment's end) until `read_ahead_max_sectors`
//!   are read, the segment is full, or the next request arrives: that request
//!   stops the prefetch at once (DiskSim's "Stop prefetch in sector"); the
//!   prefetch is timed on the device as ordinary reads of cause `ReadAhead`;
//! * a read whose first sectors are buffered (a prefix hit) transfers them and
//!   reads only the rest from the media (DiskSim's "Immed transfer partial
//!   hit"); a read that starts outside every segment is a miss;
//! * a write replaces the sectors it overlaps in every segment
//!   (`read_hits_on_write_data`, DiskSim's "Allow read hits on write data") or
//!   drops them;
//! * the buffer is volatile: a crash empties it.

use crate::error::{config_err, SimResult};
use crate::medium::Token;
use crate::units::Nanos;
use serde::{Deserialize, Serialize};

/// Command-processing overheads of the drive's controller, milliseconds
/// (DiskSim's `disksim_disk` overheads, already multiplied by its "Time
/// scale for overheads").
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControllerConfig {
    /// A read served from the buffer, after a read.
    pub read_hit_after_read_ms: f64,
    /// A read served from the buffer, after a write.
    pub read_hit_after_write_ms: f64,
    /// A read that goes to the media, after a read.
    pub read_miss_after_read_ms: f64,
    /// A read that goes to the media, after a write.
    pub read_miss_after_write_ms: f64,
    /// A write absorbed by the write cache, after a read.
    pub write_hit_after_read_ms: f64,
    /// A write absorbed by the write cache, after a write.
    pub write_hit_after_write_ms: f64,
    /// A write that completes only once on the media, after a read.
    pub write_miss_after_read_ms: f64,
    /// A write that completes only once on the media, after a write.
    pub write_miss_after_write_ms: f64,
    /// Completing a read, before the host sees it.
    pub read_completion_ms: f64,
    /// Completing a write, before the host sees it.
    pub write_completion_ms: f64,
    /// Added to every request on arrival (DiskSim's "Per-request overhead time").
    pub per_request_ms: f64,
    /// Which of the queued requests the drive serves next.
    pub scheduler: Scheduler,
    /// The fraction of a read's data the buffer holds before the transfer to
    /// the host starts (DiskSim "High (read) water mark", set by request
    /// size): 0 overlaps the link with the media, 1 sends the data once all
    /// of it is read.
    pub read_high_water_mark: f64,
    /// With `read_high_water_mark = 0`: the link sends each block of a read
    /// only once the buffer holds it, one block after the other at the
    /// link's rate (DiskSim's water mark of one block and its block-by-block
    /// bus transfers). Off: the link may carry the whole request from the
    /// moment the command is processed, even before the media is read.
    pub read_link_per_block: bool,
    /// A write that goes to the media (not absorbed by a write cache)
    /// writes each block only once the link has brought it into the buffer:
    /// a block whose sector comes under the head before it is buffered is
    /// passed over and written a rotation later (DiskSim's
    /// `disk_buffer_block_available` check in `disk_buffer_sector_done`).
    /// Off: the media write may run ahead of the link, which overlaps it whole.
    pub write_link_per_block: bool,
    /// DiskSim's fast writes (`Fast write level` 1 and 2): a write the write
    /// cache absorbs goes to the media at once, its positioning starting
    /// when its command overhead ends and each block written only once it
    /// has crossed the link (`disk_write_arrive`, `disk_check_hda`,
    /// `disk_buffer_sector_done`); it completes when its data has crossed
    /// the link (`disk_buffer_transfer_size`). Until its media write ends the
    /// drive is busy: a later write waits for it unless it starts where it
    /// ends (`disk_buffer_stopable_access`), a read waits, paying a miss's
    /// command overhead beside the wait. Off: cached data is destaged when
    /// the device is idle.
    pub destage_at_once: bool,
}

/// The drive's command scheduler: which request, of those the host has
/// queued, the drive serves when it is free (DiskSim's "Scheduling policy").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    /// First come, first served: arrival order.
    #[default]
    Fcfs,
    /// Shortest seek time first: the fewest cylinders from the head.
    Sstf,
    /// Shortest positioning time first: the least seek plus rotational
    /// wait, from where the head is and when the drive is free.
    Sptf,
}

/// The on-drive read cache (DiskSim's buffer segments and read-ahead).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReadCacheConfig {
    /// Buffer segments (DiskSim "Number of buffer segments").
    pub segments: u32,
    /// Sectors per segment (DiskSim "Segment size (in blks)").
    pub segment_sectors: u32,
    /// Sectors read ahead after a read that went to the media, at most
    /// (DiskSim "Maximum read-ahead (blks)").
    pub read_ahead_max_sectors: u32,
    /// Accepted for DiskSim's "Minimum read-ahead (blks)"; stlsim stops a
    /// prefetch when the next request arrives whatever this says, so only 0
    /// is modelled exactly (every validated drive has 0).
    pub read_ahead_min_sectors: u32,
    /// Whether data written by the host can serve later reads from the buffer.
    pub read_hits_on_write_data: bool,
    /// Written data goes to one segment of its own rather than taking a read
    /// segment (DiskSim "Use separate write segment"); with
    /// `read_hits_on_write_data` only.
    pub separate_write_segment: bool,
    /// How far the read-ahead after a media read may go (DiskSim "Buffer
    /// continuous read"): see [`ReadAheadExtent`].
    pub read_ahead_extent: ReadAheadExtent,
    /// With `read_ahead_extent = "request"` and `read_ahead_max_sectors = 0`:
    /// the read-ahead is a segment's worth past the request's end (true) or
    /// fills the segment from the request's start (false) (DiskSim
    /// "Read-ahead over requested" 1 / 0). Unused otherwise, as in DiskSim.
    pub read_ahead_over_requested: bool,
    /// A read that hits the segment being read ahead, while the read-ahead is
    /// still running, lets it go on (its sectors still to come are read by
    /// that access, with no new positioning) and extends it past the new
    /// request, as DiskSim's `disk_buffer_attempt_access_swap` does. Off: any
    /// request stops the read-ahead.
    pub hits_continue_read_ahead: bool,
    /// A read wholly in a segment whose read-ahead is not running starts it
    /// again, up to the new request's bound, once the read's command
    /// overhead (as for a miss) is done (DiskSim "Read-ahead on idle hit",
    /// `disk_check_hda`).
    pub read_ahead_on_idle_hit: bool,
    /// Written data (with `read_hits_on_write_data`, no separate write
    /// segment) takes a read segment holding any of the written sectors,
    /// whose other sectors it drops, before a free or the least recently
    /// used one, as DiskSim's `disk_buffer_select_write_segment` ranks them
    /// (a clean segment overlapping the write above an empty one), and the
    /// other read segments holding written sectors are emptied whole
    /// (`disk_buffer_set_segment`). Off: it takes a free or the least
    /// recently used segment, and an overlapping one keeps its other sectors.
    pub writes_take_overlapping_segment: bool,
}

/// How far the read-ahead after a media read may go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadAheadExtent {
    /// `read_ahead_max_sectors` past the request, at most what the segment
    /// has room for beside the request's own sectors.
    #[default]
    Segment,
    /// DiskSim "Buffer continuous read = 3": `read_ahead_max_sectors` past
    /// the request's end (`disk_buffer_get_max_readahead`), the segment
    /// keeping its newest `segment_sectors` (`disk_buffer_segment_wrap`), so
    /// the request's own sectors leave it as the read-ahead goes on.
    Request,
    /// DiskSim "Buffer continuous read = 4" (`BUFFER_DEC_PREFETCH_SCHEME`):
    /// to the end of the track holding the sector after the request, and a
    /// track's worth further when the segment starts before that track;
    /// `read_ahead_max_sectors` is not used. The segment slides as with
    /// `request`.
    Track,
}

impl Default for ReadCacheConfig {
    fn default() -> Self {
        ReadCacheConfig {
            segments: 1,
            segment_sectors: 256,
            read_ahead_max_sectors: 0,
            read_ahead_min_sectors: 0,
            read_hits_on_write_data: false,
            separate_write_segment: false,
            read_ahead_extent: ReadAheadExtent::Segment,
            read_ahead_over_requested: true,
            hits_continue_read_ahead: false,
            read_ahead_on_idle_hit: false,
            writes_take_overlapping_segment: false,
        }
    }
}

/// The plausible range of every controller time, ms.
const MAX_OVERHEAD_MS: f64 = 1_000.0;

impl ControllerConfig {
    /// Every time within 0 to 1,000 ms, or a one-line error naming the key.
    pub fn check(&self) -> SimResult<()> {
        for (k, v) in [
            ("read_hit_after_read_ms", self.read_hit_after_read_ms),
            ("read_hit_after_write_ms", self.read_hit_after_write_ms),
            ("read_miss_after_read_ms", self.read_miss_after_read_ms),
            ("read_miss_after_write_ms", self.read_miss_after_write_ms),
            ("write_hit_after_read_ms", self.write_hit_after_read_ms),
            ("write_hit_after_write_ms", self.write_hit_after_write_ms),
            ("write_miss_after_read_ms", self.write_miss_after_read_ms),
            ("write_miss_after_write_ms", self.write_miss_after_write_ms),
            ("read_completion_ms", self.read_completion_ms),
            ("write_completion_ms", self.write_completion_ms),
            ("per_request_ms", self.per_request_ms),
        ] {
            if !(0.0..=MAX_OVERHEAD_MS).contains(&v) {
                return config_err(format!(
                    "controller.{k} = {v} is outside the plausible range 0 to {MAX_OVERHEAD_MS} (ms)"
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.read_high_water_mark) {
            return config_err(format!(
                "controller.read_high_water_mark = {} is outside the range 0 to 1 (a fraction of the request)",
                self.read_high_water_mark
            ));
        }
        if self.read_link_per_block && self.read_high_water_mark != 0.0 {
            return config_err(format!(
                "controller.read_link_per_block = true needs read_high_water_mark = 0 (it is {})",
                self.read_high_water_mark
            ));
        }
        Ok(())
    }
}

impl ReadCacheConfig {
    /// Segments 1 to 4,096, segment size 1 to 2^20 sectors, read-ahead at
    /// most a segment; else a one-line error naming the key.
    pub fn check(&self) -> SimResult<()> {
        if !(1..=4096).contains(&self.segments) {
            return config_err(format!(
                "read_cache.segments = {} is outside the range 1 to 4096",
                self.segments
            ));
        }
        if !(1..=1 << 20).contains(&self.segment_sectors) {
            return config_err(format!(
                "read_cache.segment_sectors = {} is outside the range 1 to 1048576",
                self.segment_sectors
            ));
        }
        for (k, v) in [
            ("read_ahead_max_sectors", self.read_ahead_max_sectors),
            ("read_ahead_min_sectors", self.read_ahead_min_sectors),
        ] {
            if v > self.segment_sectors {
                return config_err(format!(
                    "read_cache.{k} = {v} is more than a segment (segment_sectors = {})",
                    self.segment_sectors
                ));
            }
        }
        Ok(())
    }
}

/// The overheads in nanoseconds, and which kind of request came last.
#[derive(Clone, Debug, Default)]
pub struct Overheads {
    /// Indexed by [read/write][hit/miss][after read/after write].
    command: [[[Nanos; 2]; 2]; 2],
    per_request: Nanos,
    completion: [Nanos; 2],
    last_was_write: bool,
    /// [`ControllerConfig::read_high_water_mark`].
    pub read_high_water_mark: f64,
    /// [`ControllerConfig::read_link_per_block`].
    pub read_link_per_block: bool,
    /// [`ControllerConfig::write_link_per_block`].
    pub write_link_per_block: bool,
    /// [`ControllerConfig::destage_at_once`].
    pub destage_at_once: bool,
}

impl Overheads {
    /// From a drive's `[controller]` table (None: every overhead zero).
    pub fn new(c: Option<&ControllerConfig>) -> Overheads {
        let Some(c) = c else {
            return Overheads::default();
        };
        let ms = Nanos::from_ms;
        Overheads {
            command: [
                [
                    [ms(c.read_hit_after_read_ms), ms(c.read_hit_after_write_ms)],
                    [
                        ms(c.read_miss_after_read_ms),
                        ms(c.read_miss_after_write_ms),
                    ],
                ],
                [
                    [
                        ms(c.write_hit_after_read_ms),
                        ms(c.write_hit_after_write_ms),
                    ],
                    [
                        ms(c.write_miss_after_read_ms),
                        ms(c.write_miss_after_write_ms),
                    ],
                ],
            ],
            per_request: ms(c.per_request_ms),
            completion: [ms(c.read_completion_ms), ms(c.write_completion_ms)],
            last_was_write: false,
            read_high_water_mark: c.read_high_water_mark,
            read_link_per_block: c.read_link_per_block,
            write_link_per_block: c.write_link_per_block,
            destage_at_once: c.destage_at_once,
        }
    }

    /// The command overhead of a request (and it becomes the last request).
    pub fn command(&mut self, write: bool, hit: bool) -> Nanos {
        let t = self.command[write as usize][!hit as usize][self.last_was_write as usize];
        self.last_was_write = write;
        t + self.per_request
    }

    /// The command overhead a request would pay now, without making it the
    /// last request.
    pub fn peek(&self, write: bool, hit: bool) -> Nanos {
        self.command[write as usize][!hit as usize][self.last_was_write as usize] + self.per_request
    }

    /// The completion overhead of a read or a write.
    pub fn completion(&self, write: bool) -> Nanos {
        self.completion[write as usize]
    }
}

/// One buffer segment: host LBAs `start..start + len` are buffered (their
/// tokens too, when data is carried).
#[derive(Clone, Debug)]
struct Segment {
    start: u64,
    len: u64,
    /// Tokens of the buffered sectors (empty when data is not carried).
    tokens: Vec<Token>,
    last_use: u64,
    /// The separate write segment (not one of the `segments` read segments).
    write: bool,
}

impl Segment {
    fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// A read-ahead in progress: the media read that ended at `from` may go on
/// into segment `seg` from its end, up to `until` (an LBA).
#[derive(Clone, Copy, Debug)]
pub struct Prefetch {
    /// When the read that started it ended.
    pub from: Nanos,
    /// First LBA past the last the prefetch may read.
    pub until: u64,
    /// The segment it reads into.
    pub seg: usize,
}

/// The track holding the sector after a request, for
/// `read_ahead_extent = "track"`: its first LBA, the first LBA past it, and
/// the sectors per track where the request starts (DiskSim's
/// `dm_get_track_boundaries`, `dm_get_sectors_lbn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrackSpan {
    /// First LBA of the track.
    pub start: u64,
    /// First LBA past the track.
    pub end: u64,
    /// Sectors per track at the request's first sector.
    pub sectors_per_track: u64,
}

/// What a read-ahead after a media read is measured from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AheadCtx {
    /// The request's first LBA (of the whole request, hit part included).
    pub req_start: u64,
    /// The track holding the sector after the request (`track` extent only).
    pub track: Option<TrackSpan>,
    /// The read-ahead goes at least this far (a read-ahead the request
    /// continued: DiskSim keeps the larger of the old and new bounds).
    pub floor: u64,
}

/// What the buffer holds of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Every sector is buffered.
    Full,
    /// The first `n` sectors are buffered, the rest are not.
    Prefix(u64),
    /// The first sector is not buffered.
    Miss,
}

/// The buffer segments of the on-drive read cache.
#[derive(Clone, Debug)]
pub struct ReadCache {
    cfg: ReadCacheConfig,
    segs: Vec<Segment>,
    clock: u64,
    carries: bool,
    prefetch: Option<Prefetch>,
}

impl ReadCache {
    /// An empty buffer; `carries`: keep each sector's token (verification on).
    pub fn new(cfg: ReadCacheConfig, carries: bool) -> ReadCache {
        ReadCache {
            cfg,
            segs: Vec::new(),
            clock: 0,
            carries,
            prefetch: None,
        }
    }

    /// The segment holding `lba` that reaches furthest past it.
    fn find(&self, lba: u64) -> Option<usize> {
        (0..self.segs.len())
            .filter(|&i| self.segs[i].start <= lba && lba < self.segs[i].end())
            .max_by_key(|&i| self.segs[i].end())
    }

    /// How much of `lba..lba + n` the buffer holds from its start.
    pub fn lookup(&mut self, lba: u64, n: u64) -> Lookup {
        let Some(i) = self.find(lba) else {
            return Lookup::Miss;
        };
        self.clock += 1;
        self.segs[i].last_use = self.clock;
        let have = self.segs[i].end() - lba;
        if have >= n {
            Lookup::Full
        } else {
            Lookup::Prefix(have)
        }
    }

    /// Append the tokens of `lba..lba + n` (all buffered) to `out`.
    pub fn copy_out(&self, lba: u64, n: u64, out: &mut Vec<Token>) {
        if !self.carries {
            return;
        }
        if let Some(i) = self.find(lba) {
            let s = &self.segs[i];
            let a = (lba - s.start) as usize;
            out.extend_from_slice(&s.tokens[a..a + n as usize]);
        }
    }

    /// A read of `lba..lba + n` went to the media and its sectors (tokens
    /// `data`, empty unless carried) are now buffered; the read ended at
    /// `done`. Starts the read-ahead that may follow it, as far as `ctx`
    /// and [`ReadCacheConfig::read_ahead_extent`] say.
    pub fn filled(&mut self, lba: u64, n: u64, data: &[Token], done: Nanos, ctx: AheadCtx) {
        let seg_len = self.cfg.segment_sectors as u64;
        let slide = self.cfg.read_ahead_extent != ReadAheadExtent::Segment;
        let req_end = lba + n;
        // A read longer than a segment keeps its last segment's worth.
        let (lba, data) = if n > seg_len {
            let cut = (n - seg_len) as usize;
            (
                lba + n - seg_len,
                if self.carries { &data[cut..] } else { data },
            )
        } else {
            (lba, data)
        };
        let n = n.min(seg_len);
        let (i, seg_start) = match self
            .segs
            .iter()
            .position(|s| !s.write && s.end() == lba && (slide || s.len + n <= seg_len))
        {
            // A read that continues a segment (the tail of a prefix hit)
            // extends it: one sequential stream stays in one segment.
            Some(i) => {
                let s = &mut self.segs[i];
                let start = s.start;
                s.len += n;
                if self.carries {
                    s.tokens.extend_from_slice(data);
                }
                self.wrap(i);
                (i, start)
            }
            None => (self.claim(lba, n, data), ctx.req_start),
        };
        self.clock += 1;
        self.segs[i].last_use = self.clock;
        let s = &self.segs[i];
        let until = match self.cfg.read_ahead_extent {
            ReadAheadExtent::Segment => {
                let room = seg_len - s.len;
                s.end() + room.min(self.cfg.read_ahead_max_sectors as u64)
            }
            _ => self.read_ahead_until(ctx.req_start, req_end, seg_start, ctx.track),
        }
        .max(ctx.floor);
        self.prefetch = (until > s.end()).then_some(Prefetch {
            from: done,
            until,
            seg: i,
        });
    }

    /// The first LBA past the read-ahead after a read of
    /// `req_start..req_end` into a segment starting at `seg_start`
    /// (DiskSim's `disk_buffer_get_max_readahead`, for
    /// `read_ahead_extent` `request` and `track`; `track` is the track
    /// holding `req_end`).
    pub fn read_ahead_until(
        &self,
        req_start: u64,
        req_end: u64,
        seg_start: u64,
        track: Option<TrackSpan>,
    ) -> u64 {
        let c = &self.cfg;
        let (seg_len, min, max) = (
            c.segment_sectors as u64,
            c.read_ahead_min_sectors as u64,
            c.read_ahead_max_sectors as u64,
        );
        match c.read_ahead_extent {
            ReadAheadExtent::Segment => req_end + max,
            ReadAheadExtent::Track => match track {
                Some(t) if seg_start < t.start => t.end + t.sectors_per_track,
                Some(t) => t.end,
                None => req_end,
            },
            ReadAheadExtent::Request if max > 0 => req_end + max,
            ReadAheadExtent::Request if c.read_ahead_over_requested => req_end + seg_len,
            ReadAheadExtent::Request => {
                let n = req_end - req_start;
                if n >= seg_len || seg_len - n < min {
                    req_end + min
                } else {
                    req_start + seg_len
                }
            }
        }
    }

    /// A sliding segment keeps its newest `segment_sectors` (DiskSim's
    /// `disk_buffer_segment_wrap`).
    fn wrap(&mut self, i: usize) {
        let seg_len = self.cfg.segment_sectors as u64;
        let s = &mut self.segs[i];
        if s.len > seg_len {
            let cut = s.len - seg_len;
            s.start += cut;
            s.len = seg_len;
            if self.carries {
                s.tokens.drain(..cut as usize);
            }
        }
    }

    /// The read segment a read starting at `lba` hits, if any.
    pub fn segment_of(&self, lba: u64) -> Option<usize> {
        self.find(lba)
    }

    /// The first LBA of segment `i` (0 if there is none).
    pub fn segment_start(&self, i: usize) -> u64 {
        self.segs.get(i).map_or(0, |s| s.start)
    }

    /// Let a read-ahead that a request interrupted go on from `from`, up to
    /// `until` now ([`ReadCacheConfig::hits_continue_read_ahead`]).
    pub fn resume(&mut self, p: Prefetch, from: Nanos, until: u64) {
        if p.seg < self.segs.len() {
            self.prefetch = Some(Prefetch {
                from,
                until: until.max(p.until),
                seg: p.seg,
            });
        }
    }

    /// A read segment holding `data` (tokens carried or not) for `lba..lba + n`.
    fn segment(&self, lba: u64, n: u64, data: &[Token]) -> Segment {
        Segment {
            start: lba,
            len: n,
            tokens: if self.carries {
                data.to_vec()
            } else {
                Vec::new()
            },
            last_use: 0,
            write: false,
        }
    }

    /// A read segment for `lba..lba + n`: a free one, or the least recently used.
    fn claim(&mut self, lba: u64, n: u64, data: &[Token]) -> usize {
        let seg = self.segment(lba, n, data);
        if self.segs.iter().filter(|s| !s.write).count() < self.cfg.segments as usize {
            self.segs.push(seg);
            return self.segs.len() - 1;
        }
        let i = (0..self.segs.len())
            .filter(|&i| !self.segs[i].write)
            .min_by_key(|&i| self.segs[i].last_use)
            .unwrap_or(0);
        if self.prefetch.is_some_and(|p| p.seg == i) {
            self.prefetch = None;
        }
        self.segs[i] = seg;
        i
    }

    /// The read-ahead in progress, if any (it stops when taken).
    pub fn take_prefetch(&mut self) -> Option<Prefetch> {
        self.prefetch.take()
    }

    /// The first LBA a prefetch would read next.
    pub fn prefetch_next(&self, p: &Prefetch) -> u64 {
        self.segs.get(p.seg).map_or(p.until, |s| s.end())
    }

    /// The prefetch read `n` more sectors (tokens `data`) into its segment.
    pub fn prefetched(&mut self, p: &Prefetch, n: u64, data: &[Token]) {
        let Some(s) = self.segs.get_mut(p.seg) else {
            return;
        };
        s.len += n;
        if self.carries {
            s.tokens.extend_from_slice(data);
        }
        if self.cfg.read_ahead_extent != ReadAheadExtent::Segment {
            self.wrap(p.seg);
        }
    }

    /// Whether a hit on a segment with no read-ahead running starts one.
    pub fn on_idle_hit(&self) -> bool {
        self.cfg.read_ahead_on_idle_hit
    }

    /// The bound of a read-ahead that a hit on `lba..end` in segment `i`
    /// starts or continues: [`Self::read_ahead_until`], and with the
    /// `segment` extent what the segment has room for.
    pub fn hit_bound(&self, i: usize, lba: u64, end: u64, track: Option<TrackSpan>) -> u64 {
        let start = self.segment_start(i);
        match self.cfg.read_ahead_extent {
            ReadAheadExtent::Segment => (end + self.cfg.read_ahead_max_sectors as u64)
                .min(start + self.cfg.segment_sectors as u64),
            _ => self.read_ahead_until(lba, end, start, track),
        }
    }

    /// Start a read-ahead into segment `i` from its end at `from`, up to
    /// `until` (a hit that starts one), if it has anything to read.
    pub fn restart(&mut self, i: usize, from: Nanos, until: u64) {
        if self
            .segs
            .get(i)
            .is_some_and(|s| !s.write && s.end() < until)
        {
            self.prefetch = Some(Prefetch {
                from,
                until,
                seg: i,
            });
        }
    }

    /// Whether read hits may let an interrupted read-ahead go on.
    pub fn hits_continue(&self) -> bool {
        self.cfg.hits_continue_read_ahead
    }

    /// The read-ahead extent in force.
    pub fn extent(&self) -> ReadAheadExtent {
        self.cfg.read_ahead_extent
    }

    /// A host write of `lba..lba + n` (tokens `data`, empty unless carried):
    /// buffered copies of those sectors are replaced or dropped.
    pub fn written(&mut self, lba: u64, n: u64, data: &[Token]) {
        let end = lba + n;
        let update = self.cfg.read_hits_on_write_data;
        let mut k = 0;
        while k < self.segs.len() {
            let s = &mut self.segs[k];
            let (a, b) = (s.start.max(lba), s.end().min(end));
            if a < b {
                if update {
                    if self.carries {
                        let src = &data[(a - lba) as usize..(b - lba) as usize];
                        s.tokens[(a - s.start) as usize..(b - s.start) as usize]
                            .copy_from_slice(src);
                    }
                } else if a == s.start {
                    // The overlap is a prefix (or all): keep what follows it.
                    let cut = b - s.start;
                    s.start = b;
                    s.len -= cut;
                    if self.carries {
                        s.tokens.drain(..cut as usize);
                    }
                } else {
                    // Keep what precedes the overlap (a segment is one run).
                    let keep = a - s.start;
                    s.len = keep;
                    if self.carries {
                        s.tokens.truncate(keep as usize);
                    }
                }
            }
            k += 1;
        }
        if !update {
            self.segs.retain(|s| s.len > 0);
            // Segment indices moved: a prefetch in progress stops.
            self.prefetch = None;
            return;
        }
        // The written data is buffered too: its last segment's worth.
        let seg_len = self.cfg.segment_sectors as u64;
        let keep = n.min(seg_len);
        let (start, data) = (
            end - keep,
            if self.carries {
                &data[(n - keep) as usize..]
            } else {
                data
            },
        );
        self.clock += 1;
        if self.cfg.separate_write_segment {
            let tokens = if self.carries {
                data.to_vec()
            } else {
                Vec::new()
            };
            let seg = Segment {
                start,
                len: keep,
                tokens,
                last_use: self.clock,
                write: true,
            };
            match self.segs.iter().position(|s| s.write) {
                Some(i) => self.segs[i] = seg,
                None => self.segs.push(seg),
            }
        } else {
            // DiskSim's rank: a clean segment the write overlaps (its other
            // sectors are emptied with it), then a free one, then the least
            // recently used.
            let overlapping = self
                .cfg
                .writes_take_overlapping_segment
                .then(|| {
                    (0..self.segs.len())
                        .filter(|&i| {
                            let s = &self.segs[i];
                            !s.write && s.start < end && lba < s.end()
                        })
                        .min_by_key(|&i| self.segs[i].last_use)
                })
                .flatten();
            let i = match overlapping {
                Some(i) => {
                    // The other clean segments the write overlaps are
                    // emptied whole (disk_buffer_set_segment: "clear out
                    // clean, non-active, overlapping segments if write").
                    let seg = self.segment(start, keep, data);
                    let mut kept = 0;
                    let mut at = 0;
                    self.segs.retain(|s| {
                        let gone = !s.write && s.start < end && lba < s.end() && at != i;
                        if !gone && at < i {
                            kept += 1;
                        }
                        at += 1;
                        !gone
                    });
                    // Segment indices moved: a prefetch in progress stops
                    // (a write stops it anyway).
                    self.prefetch = None;
                    self.segs[kept] = seg;
                    kept
                }
                None => self.claim(start, keep, data),
            };
            self.segs[i].last_use = self.clock;
        }
    }

    /// A power loss: the buffer is volatile.
    pub fn clear(&mut self) {
        self.segs.clear();
        self.prefetch = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(segments: u32, seg: u32, ahead: u32) -> ReadCache {
        ReadCache::new(
            ReadCacheConfig {
                segments,
                segment_sectors: seg,
                read_ahead_max_sectors: ahead,
                ..Default::default()
            },
            false,
        )
    }

    #[test]
    fn overheads_follow_kind_hit_and_the_previous_request() {
        let c = ControllerConfig {
            read_hit_after_read_ms: 0.348,
            read_hit_after_write_ms: 1.387,
            read_miss_after_read_ms: 2.502,
            read_miss_after_write_ms: 2.6,
            write_hit_after_read_ms: 3.0,
            write_hit_after_write_ms: 3.1,
            write_miss_after_read_ms: 3.29,
            write_miss_after_write_ms: 2.92,
            read_completion_ms: 0.241,
            write_completion_ms: 0.0,
            per_request_ms: 0.01,
            scheduler: Scheduler::Fcfs,
            read_high_water_mark: 0.0,
            read_link_per_block: false,
            write_link_per_block: false,
            destage_at_once: false,
        };
        let mut o = Overheads::new(Some(&c));
        let ms = Nanos::from_ms;
        // The first request counts as following a read.
        assert_eq!(o.command(false, false), ms(2.502) + ms(0.01));
        assert_eq!(o.command(true, false), ms(3.29) + ms(0.01));
        assert_eq!(o.command(true, false), ms(2.92) + ms(0.01));
        assert_eq!(o.command(false, true), ms(1.387) + ms(0.01));
        assert_eq!(o.command(false, true), ms(0.348) + ms(0.01));
        assert_eq!(o.command(true, true), ms(3.0) + ms(0.01));
        assert_eq!(o.command(false, false), ms(2.6) + ms(0.01));
        assert_eq!(o.completion(false), ms(0.241));
        assert_eq!(Overheads::new(None).command(false, false), Nanos::ZERO);
    }

    #[test]
    fn a_read_then_its_read_ahead_serve_the_next_sequential_read() {
        let mut c = cache(2, 512, 256);
        assert_eq!(c.lookup(1000, 8), Lookup::Miss);
        c.filled(1000, 8, &[], Nanos(5), AheadCtx::default());
        let p = c.take_prefetch().unwrap();
        assert_eq!(
            (p.from, p.until, c.prefetch_next(&p)),
            (Nanos(5), 1008 + 256, 1008)
        );
        c.prefetched(&p, 20, &[]);
        assert_eq!(c.lookup(1008, 8), Lookup::Full);
        assert_eq!(c.lookup(1020, 16), Lookup::Prefix(8));
        assert_eq!(c.lookup(1028, 1), Lookup::Miss);
        assert_eq!(c.lookup(999, 1), Lookup::Miss);
    }

    #[test]
    fn read_ahead_stops_at_the_segment_end_and_segments_are_replaced_lru() {
        let mut c = cache(2, 16, 256);
        c.filled(0, 10, &[], Nanos(0), AheadCtx::default());
        assert_eq!(c.take_prefetch().unwrap().until, 16, "the segment holds 16");
        c.filled(100, 4, &[], Nanos(0), AheadCtx::default());
        assert_eq!(c.lookup(0, 1), Lookup::Full); // segment 0 is now the more recent
        c.filled(200, 4, &[], Nanos(0), AheadCtx::default());
        assert_eq!(
            c.lookup(100, 1),
            Lookup::Miss,
            "the least recently used went"
        );
        assert_eq!(c.lookup(0, 1), Lookup::Full);
        // A read longer than a segment keeps its last segment's worth.
        c.filled(1000, 40, &[], Nanos(0), AheadCtx::default());
        assert_eq!(c.lookup(1023, 1), Lookup::Miss);
        assert_eq!(c.lookup(1024, 16), Lookup::Full);
        assert!(c.take_prefetch().is_none(), "no room left to read ahead");
    }

    #[test]
    fn writes_drop_or_replace_buffered_sectors() {
        let t = |l: u64| Token {
            lba: l,
            ..Token::EMPTY
        };
        let data: Vec<Token> = (0..10).map(t).collect();
        let mut c = ReadCache::new(
            ReadCacheConfig {
                segments: 1,
                segment_sectors: 64,
                ..Default::default()
            },
            true,
        );
        c.filled(0, 10, &data, Nanos(0), AheadCtx::default());
        c.written(4, 2, &[t(99), t(98)]);
        assert_eq!(
            c.lookup(0, 10),
            Lookup::Prefix(4),
            "dropped from the first written sector"
        );
        c.written(0, 1, &[t(7)]);
        assert_eq!(c.lookup(0, 1), Lookup::Miss);
        assert_eq!(c.lookup(1, 3), Lookup::Full);
        for separate in [true, false] {
            let mut c = ReadCache::new(
                ReadCacheConfig {
                    segments: 2,
                    segment_sectors: 64,
                    read_hits_on_write_data: true,
                    separate_write_segment: separate,
                    ..Default::default()
                },
                true,
            );
            c.filled(0, 10, &data, Nanos(0), AheadCtx::default());
            c.written(4, 2, &[t(99), t(98)]);
            let mut out = vec![];
            c.copy_out(3, 4, &mut out);
            assert_eq!(
                out.iter().map(|x| x.lba).collect::<Vec<_>>(),
                [3, 99, 98, 6]
            );
            // The written data is buffered on its own: a read of it hits
            // even after the read segment it updated is gone.
            c.written(500, 3, &[t(5), t(6), t(7)]);
            assert_eq!(c.lookup(500, 3), Lookup::Full);
            c.filled(1000, 4, &[t(1); 4], Nanos(0), AheadCtx::default());
            c.filled(2000, 4, &[t(2); 4], Nanos(0), AheadCtx::default());
            assert_eq!(c.lookup(0, 1), Lookup::Miss);
            // A separate write segment survives two reads; a shared one does not.
            assert_eq!(c.lookup(500, 3) == Lookup::Full, separate);
        }
    }

    #[test]
    fn a_write_takes_the_segment_it_overlaps_when_asked() {
        let t = |l: u64| Token {
            lba: l,
            ..Token::EMPTY
        };
        let data: Vec<Token> = (0..10).map(t).collect();
        for take in [false, true] {
            let mut c = ReadCache::new(
                ReadCacheConfig {
                    segments: 2,
                    segment_sectors: 64,
                    read_hits_on_write_data: true,
                    writes_take_overlapping_segment: take,
                    ..Default::default()
                },
                true,
            );
            c.filled(500, 4, &[t(5); 4], Nanos(0), AheadCtx::default());
            c.filled(0, 10, &data, Nanos(0), AheadCtx::default());
            c.written(4, 2, &[t(99), t(98)]);
            assert_eq!(c.lookup(4, 2), Lookup::Full);
            // DiskSim's rank: the overlapped segment holds the write alone,
            // its other sectors dropped, and the other segment stays; else
            // the least recently used one (500..504) gives way.
            assert_eq!(c.lookup(0, 4) == Lookup::Miss, take);
            assert_eq!(c.lookup(500, 4) == Lookup::Full, take);
        }
        // Every other segment the write overlaps is emptied whole.
        let mut c = ReadCache::new(
            ReadCacheConfig {
                segments: 3,
                segment_sectors: 64,
                read_hits_on_write_data: true,
                writes_take_overlapping_segment: true,
                ..Default::default()
            },
            true,
        );
        c.filled(0, 10, &data, Nanos(0), AheadCtx::default());
        c.filled(8, 10, &[t(8); 10], Nanos(0), AheadCtx::default());
        c.filled(500, 4, &[t(5); 4], Nanos(0), AheadCtx::default());
        c.written(9, 1, &[t(77)]);
        assert_eq!(c.lookup(9, 1), Lookup::Full);
        assert_eq!(c.lookup(0, 1), Lookup::Miss);
        assert_eq!(c.lookup(12, 1), Lookup::Miss);
        assert_eq!(c.lookup(500, 4), Lookup::Full);
    }

    #[test]
    fn bad_tables_are_one_line_errors_naming_the_key() {
        let e = ControllerConfig {
            read_completion_ms: -1.0,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("controller.read_completion_ms = -1 is outside"),
            "{e}"
        );
        let e = ReadCacheConfig {
            segments: 0,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert!(e.to_string().contains("read_cache.segments = 0"), "{e}");
        let e = ReadCacheConfig {
            read_ahead_max_sectors: 999,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("read_cache.read_ahead_max_sectors = 999 is more than a segment"),
            "{e}"
        );
    }
}
