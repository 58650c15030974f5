//! The medium is the truth: what each physical sector holds, and the overlap
//! physics of the recording layout applied on every write.
//!
//! * SMR: writing sectors of track T destroys the angularly overlapping
//!   sectors of the W-1 tracks downstream inside the band.
//! * IMR: writing a bottom track destroys the angularly overlapping sectors
//!   of the adjacent top tracks.
//! * Host-managed zones: a write into a sequential-write-required zone must
//!   start at the zone's write pointer; a reset rewinds it and empties the zone.
//!
//! Contents are tracked only when verification is on (a run-length encoded
//! row of tokens per track written or damaged, module `runs`: a track written in
//! order is one 16-byte run); with it off the medium keeps only the write
//! pointers, so the physics costs nothing.
//!
//! A medium may start *prefilled* ([`prefill`]): prefilled tracks hold
//! version 0 of their home LBAs implicitly (one bit per track); a track's
//! row of tokens is made from it on the first write or damage.

pub mod prefill;
mod records;
pub(crate) mod runs;
pub mod zones;

use crate::error::SimResult;
use crate::geometry::{Geometry, Layout};
use crate::track_bits::TrackBits;
use crate::units::{Lba, PhysAddr, Track};
use prefill::Prefill;
use records::TrackRecords;
use runs::{Run, RunRow};
use zones::ZoneTable;

/// What a sector holds: the host block (LBA, version) last written there, or
/// a marker for an empty or destroyed sector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Token {
    /// The host LBA, or one of the marker values.
    pub lba: u64,
    /// The host's version of that LBA; for a destroyed sector, the serial of the destroying operation.
    pub ver: u32,
}

impl Token {
    const EMPTY_LBA: u64 = u64::MAX;
    const DESTROYED_LBA: u64 = u64::MAX - 1;
    /// A sector never written.
    pub const EMPTY: Token = Token {
        lba: Token::EMPTY_LBA,
        ver: 0,
    };
    /// Version `ver` of host block `lba`.
    pub fn data(lba: Lba, ver: u32) -> Token {
        Token { lba: lba.0, ver }
    }
    /// A sector damaged by physical operation number `op`.
    pub fn destroyed(op: u64) -> Token {
        Token {
            lba: Token::DESTROYED_LBA,
            ver: op as u32,
        }
    }
    /// True for a never-written sector.
    pub fn is_empty(&self) -> bool {
        self.lba == Token::EMPTY_LBA
    }
    /// The operation serial (low 32 bits) that destroyed this sector, if it was destroyed.
    pub fn destroyed_by(&self) -> Option<u32> {
        (self.lba == Token::DESTROYED_LBA).then_some(self.ver)
    }
    /// Describe the token for error messages.
    pub fn describe(&self) -> String {
        if self.is_empty() {
            "an empty sector".into()
        } else if let Some(op) = self.destroyed_by() {
            format!("a sector destroyed by physical op #{op}")
        } else {
            format!("LBA {} version {}", self.lba, self.ver)
        }
    }
}

/// A translation layer's persistent record (backup-region header, map log
/// entry, checkpoint ...): an opaque list of words stored on `count` sectors
/// from `sector` of a track. It survives power loss and is lost as soon as any
/// of its sectors is overwritten or damaged, so a layer learns of torn or
/// stale metadata the way firmware would: the record is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaRecord {
    /// First sector on the track.
    pub sector: u32,
    /// Sectors it occupies from `sector`: overwriting or damaging any of them
    /// loses the record.
    pub count: u32,
    /// The layer's words, opaque to the medium (each layer parses its own).
    pub words: Vec<u64>,
}

/// Buffers of lost metadata records kept for reuse, at most (of each
/// kind). Layers lose records in bursts (a cleaned band, a collected log
/// region) and write them again later, so the pool must hold a burst; the
/// bound only matters for records whose buffers did not come from it.
const MAX_SPARE: usize = 1 << 16;
/// Long word buffers kept, at most.
const MAX_SPARE_LONG: usize = 256;
/// Words a record may have and still count as short.
const SMALL_WORDS: usize = 16;

/// Keep a lost record's word buffer for reuse, with the short or the long ones.
fn keep_words(short: &mut Vec<Vec<u64>>, long: &mut Vec<Vec<u64>>, mut w: Vec<u64>) {
    w.clear();
    if w.capacity() > SMALL_WORDS {
        if long.len() < MAX_SPARE_LONG {
            long.push(w);
        }
    } else if short.len() < MAX_SPARE {
        short.push(w);
    }
}

/// Per-sector contents, layer metadata records and zone write pointers.
#[derive(Debug)]
pub struct Medium {
    meta: rustc_hash::FxHashMap<u64, TrackRecords>,
    /// Emptied word buffers of lost records, handed out again by
    /// [`meta_words`](Self::meta_words) (layers write a record per write
    /// or per move; reused, they cost no allocation in steady state): small
    /// ones, and ones of more than [`SMALL_WORDS`] (few records are long,
    /// and each should get a long buffer back).
    spare_words: Vec<Vec<u64>>,
    spare_long: Vec<Vec<u64>>,
    /// Emptied record stores of tracks that lost their last record, reused
    /// (with their room) for the next track that gets one.
    spare_tracks: Vec<TrackRecords>,
    tracked: bool,
    /// Rows of tokens of the tracks written or damaged, by track: memory
    /// follows what the run wrote (and how sequentially), not the drive's capacity.
    tracks: rustc_hash::FxHashMap<u64, RunRow>,
    /// Buffers reused by every write (no allocation per write).
    run_scratch: Vec<Run>,
    token_scratch: Vec<Token>,
    zones: ZoneTable,
    prefill: Prefill,
    /// Tracks read, written or damaged (tracked media only): what a final scan must cover.
    touched: TrackBits,
}

impl Medium {
    /// An empty medium for `geom`; `tracked` keeps contents (verification).
    pub fn new(geom: &Geometry, tracked: bool) -> Medium {
        let zones = match (geom.layout(), geom.zone_sectors()) {
            (
                Layout::Zoned {
                    conventional,
                    max_open,
                    unrestricted_reads,
                    ..
                },
                Some(zs),
            ) => ZoneTable::new(
                zs,
                conventional,
                geom.capacity().0,
                max_open,
                unrestricted_reads,
            ),
            _ => ZoneTable::default(),
        };
        Medium {
            meta: Default::default(),
            spare_words: vec![],
            spare_long: vec![],
            spare_tracks: vec![],
            tracked,
            tracks: Default::default(),
            run_scratch: vec![],
            token_scratch: vec![],
            zones,
            prefill: Prefill::none(),
            touched: if tracked {
                TrackBits::new(geom.tracks())
            } else {
                TrackBits::default()
            },
        }
    }

    /// Start from `prefill` (before any operation). In sequential zones the
    /// prefilled data is a prefix of the zone: every track up to the last
    /// prefilled one is prefilled, and the write pointer follows it.
    pub fn set_prefill(&mut self, geom: &Geometry, mut prefill: Prefill) {
        if self.zones.is_zoned() && prefill.any() {
            let zs = self.zones.zone_sectors();
            for z in self.zones.conventional()..self.zones.zones() {
                let (start, end) = (z * zs, (z + 1) * zs);
                let lts = self.zone_logical_tracks(geom, z);
                let Some(last) = lts
                    .clone()
                    .rev()
                    .find(|&lt| prefill.track(geom.logical_track_phys(lt)))
                else {
                    continue;
                };
                for lt in lts.start..=last {
                    prefill.set_track(geom.logical_track_phys(lt));
                }
                let top = geom.logical_track_start(last + 1).0.min(end);
                // A partly prefilled last track (a fraction ending inside it) ends the data there.
                let home_limit = if prefill.is_footprint() || prefill.limit() == 0 {
                    top
                } else {
                    prefill
                        .map()
                        .home_of_host(prefill.limit())
                        .clamp(start, top)
                };
                self.zones.set_prefilled(z, home_limit.min(end));
            }
        }
        self.prefill = prefill;
    }

    /// The prefill the medium started from.
    pub fn prefill(&self) -> &Prefill {
        &self.prefill
    }

    /// Whether physical track `t` still holds prefilled data it was never written over with.
    #[inline]
    pub fn prefilled(&self, t: Track) -> bool {
        self.prefill.track(t)
    }

    /// Tracks read, written or damaged so far (tracked media only).
    pub fn touched(&self) -> &TrackBits {
        &self.touched
    }

    /// Heap bytes of the contents, metadata and bookkeeping (not the geometry).
    pub fn heap_bytes(&self) -> u64 {
        let rows: u64 = self.tracks.values().map(RunRow::heap_bytes).sum();
        rows + (self.tracks.capacity() * (std::mem::size_of::<(u64, RunRow)>() + 1)) as u64
            + self.prefill.heap_bytes()
            + self.touched.heap_bytes()
            + self.zones.heap_bytes()
    }

    /// The row of track `t`, made on first use (from the prefill, else empty).
    fn row<'a>(
        tracks: &'a mut rustc_hash::FxHashMap<u64, RunRow>,
        prefill: &Prefill,
        geom: &Geometry,
        t: Track,
        tokens: &mut Vec<Token>,
        scratch: &mut Vec<Run>,
    ) -> &'a mut RunRow {
        tracks.entry(t.0).or_insert_with(|| {
            let mut row = RunRow::default();
            if prefill.track(t) {
                let spt = geom.sectors_in(t);
                tokens.clear();
                prefill.tokens(
                    geom,
                    PhysAddr {
                        track: t,
                        sector: 0,
                    },
                    spt,
                    tokens,
                );
                row.write(spt, 0, tokens, scratch);
            }
            row
        })
    }

    /// Whether contents are kept.
    pub fn tracked(&self) -> bool {
        self.tracked
    }

    /// Check a write against the zone rules and advance the write pointer
    /// (see [`zones`]); a no-op on drives without zones.
    pub fn admit_write(&mut self, geom: &Geometry, at: PhysAddr, count: u32) -> SimResult<()> {
        if !self.zones.is_zoned() {
            return Ok(());
        }
        let Some(first) = geom.home_lba(at) else {
            return Ok(());
        };
        self.zones.admit_write(first.0, count as u64)
    }

    /// Check a read against the zone rules (no data past a write pointer).
    pub fn admit_read(&self, geom: &Geometry, at: PhysAddr, count: u32) -> SimResult<()> {
        if !self.zones.is_zoned() {
            return Ok(());
        }
        let Some(first) = geom.home_lba(at) else {
            return Ok(());
        };
        self.zones.admit_read(first.0, count as u64)
    }

    /// The zones (host-managed layouts; an empty table otherwise).
    pub fn zones(&self) -> &ZoneTable {
        &self.zones
    }

    /// The zones, for zone commands (the device issues them).
    pub(crate) fn zones_mut(&mut self) -> &mut ZoneTable {
        &mut self.zones
    }

    /// The write pointer of a sequential zone, as an LBA.
    pub fn write_pointer(&self, zone: u64) -> Option<Lba> {
        self.zones.write_pointer(zone)
    }

    /// Empty a sequential zone's sectors after RESET WRITE POINTER (the table was reset by the caller).
    pub fn empty_zone(&mut self, geom: &Geometry, zone: u64) {
        for lt in self.zone_logical_tracks(geom, zone) {
            let t = geom.logical_track_phys(lt);
            if let Some(v) = self.meta.remove(&t.0) {
                self.keep_spare(v);
            }
            self.prefill.clear_track(t);
            if self.tracked {
                self.tracks.remove(&t.0);
                self.touched.set(t);
            }
        }
    }

    /// The logical tracks of host-managed zone `zone`, in LBA order.
    fn zone_logical_tracks(&self, geom: &Geometry, zone: u64) -> std::ops::Range<u64> {
        let zs = self.zones.zone_sectors();
        let (start, end) = (zone * zs, ((zone + 1) * zs).min(geom.capacity().0));
        geom.logical_track_of(Lba(start))..geom.logical_track_of(Lba(end - 1)) + 1
    }

    /// Drop the metadata records of track `t` that meet sectors `[lo, hi)`
    /// (their buffers are kept for reuse).
    fn drop_meta(&mut self, t: Track, lo: u32, hi: u32) {
        if let Some(v) = self.meta.get_mut(&t.0) {
            let (short, long) = (&mut self.spare_words, &mut self.spare_long);
            v.drop_range(lo, hi, |w| keep_words(short, long, w));
            if v.is_empty() {
                let v = self.meta.remove(&t.0).expect("present");
                self.keep_spare(v);
            }
        }
    }

    /// Keep a removed track's record store and its records' buffers for reuse.
    fn keep_spare(&mut self, mut v: TrackRecords) {
        let (short, long) = (&mut self.spare_words, &mut self.spare_long);
        v.clear(|w| keep_words(short, long, w));
        if self.spare_tracks.len() < MAX_SPARE {
            self.spare_tracks.push(v);
        }
    }

    /// An empty buffer for a metadata record of about `n` words (a lost
    /// record's, when there is one: no allocation per record in steady state).
    pub fn meta_words(&mut self, n: usize) -> Vec<u64> {
        let mut w = if n <= SMALL_WORDS {
            self.spare_words.pop()
        } else {
            self.spare_long.pop()
        }
        .unwrap_or_default();
        w.reserve(n);
        w
    }

    /// Store a metadata record on sectors `[at.sector, at.sector+count)` (after
    /// the sectors themselves were written by [`write`](Self::write)).
    pub fn put_meta(&mut self, at: PhysAddr, count: u32, words: Vec<u64>) {
        let (short, long, spare) = (
            &mut self.spare_words,
            &mut self.spare_long,
            &mut self.spare_tracks,
        );
        self.meta
            .entry(at.track.0)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push(
                MetaRecord {
                    sector: at.sector,
                    count,
                    words,
                },
                |w| keep_words(short, long, w),
            );
    }

    /// The intact metadata records of a track, in sector order.
    pub fn meta_records(&self, t: Track) -> Vec<MetaRecord> {
        self.meta.get(&t.0).map(|v| v.records()).unwrap_or_default()
    }

    /// Store `data` (one token per sector) from `at`, then apply overlap
    /// damage to neighbouring tracks, marking it with operation `op`.
    /// Metadata records on the written or damaged sectors are lost.
    pub fn write(&mut self, geom: &Geometry, at: PhysAddr, count: u32, data: &[Token], op: u64) {
        if !self.meta.is_empty() {
            self.drop_meta(at.track, at.sector, at.sector + count);
            for nb in geom.damaged_by_write(at.track) {
                let (lo, hi) = geom.overlap_span(at.track, at.sector, count, nb);
                self.drop_meta(nb, lo, hi);
            }
        }
        if !self.tracked {
            return;
        }
        self.touched.set(at.track);
        let spt = geom.sectors_in(at.track);
        let (tokens, scratch) = (&mut self.token_scratch, &mut self.run_scratch);
        let row = Self::row(
            &mut self.tracks,
            &self.prefill,
            geom,
            at.track,
            tokens,
            scratch,
        );
        if data.len() == count as usize {
            row.write(spt, at.sector, data, scratch);
        } else {
            // A layer that moves no payload (should not happen with verification on).
            row.fill(spt, at.sector, count, Token::destroyed(op));
        }
        for nb in geom.damaged_by_write(at.track) {
            let (lo, hi) = geom.overlap_span(at.track, at.sector, count, nb);
            let nspt = geom.sectors_in(nb);
            let row = match self.tracks.get_mut(&nb.0) {
                Some(row) => row,
                None if self.prefill.track(nb) => {
                    Self::row(&mut self.tracks, &self.prefill, geom, nb, tokens, scratch)
                }
                None => continue, // nothing there to damage
            };
            self.touched.set(nb);
            row.damage(nspt, lo, hi, Token::destroyed(op), scratch);
        }
    }

    /// Append the tokens of `count` sectors from `at` to `out`; `touch`
    /// marks the track as one a final scan must cover (a timed read).
    pub fn read(
        &mut self,
        geom: &Geometry,
        at: PhysAddr,
        count: u32,
        out: &mut Vec<Token>,
        touch: bool,
    ) {
        if !self.tracked {
            return;
        }
        if touch {
            self.touched.set(at.track);
        }
        self.peek_into(geom, at, count, out);
    }

    /// Append the tokens of `count` sectors from `at` to `out`, touching nothing.
    pub fn peek_into(&self, geom: &Geometry, at: PhysAddr, count: u32, out: &mut Vec<Token>) {
        if !self.tracked {
            return;
        }
        match self.tracks.get(&at.track.0) {
            Some(row) => row.read(at.sector, count, out),
            None if self.prefill.track(at.track) => self.prefill.tokens(geom, at, count, out),
            None => out.extend(std::iter::repeat_n(Token::EMPTY, count as usize)),
        }
    }

    /// Peek at one sector without timing (tests and diagnostics).
    pub fn peek(&self, geom: &Geometry, at: PhysAddr) -> Token {
        match self.tracks.get(&at.track.0) {
            Some(r) => r.get(at.sector),
            None => self.prefill.token(geom, at),
        }
    }

    /// Whether any sector of a track has been written or holds prefilled data (tracked media only).
    pub fn track_written(&self, t: Track) -> bool {
        self.tracks.contains_key(&t.0) || self.prefill.track(t)
    }
}

#[cfg(test)]
mod tests;
