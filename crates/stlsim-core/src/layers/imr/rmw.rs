//! Naive read-modify-write for IMR (`imr-rmw`): paper 000 section 2.1.
//!
//! Sectors keep their home locations (the layout's static map). A top-track
//! write goes straight to the medium. A write to a bottom track T
//! (1) reads the overlapped sectors of T-1 and T+1, (2) saves them in the
//! backup region with a header naming their home, (3) writes T, and
//! (4) rewrites T-1 and T+1. Every step is a real physical operation, tagged
//! `rmw` (steps 1, 4), `backup` (step 2) or the request's own cause (step 3).
//!
//! Choices where the paper is silent:
//! * **Coalescing**: writes queued together (one write-cache destage batch,
//!   i.e. all cached writes on one home track) are served by one RMW: the
//!   overlapped neighbour sectors of all of them are merged into one span per
//!   neighbour where they touch, read, saved and rewritten once.
//! * **Skip empty neighbours** (`skip_empty`, default on): a top track that
//!   has never been written holds nothing to save, so it is neither read,
//!   saved nor rewritten. The paper's analysis assumes both neighbours hold
//!   data; with the parameter on, writes into a fresh region of the disk cost
//!   little more than on CMR, which flatters RMW on traces that write much
//!   new space. Turn it off, or start from a full drive (`prefill`, the
//!   `imr-paper` default), to reproduce the paper's model. The layer knows a
//!   track holds data from its own bitmap (one bit per track) and from the
//!   drive's starting state (`Device::prefilled`); after a power loss the
//!   bitmap is gone and every track counts as written.
//! * **Backup region** (`backup_location`, `backup_tracks`,
//!   `backup_spacing_tracks`): whole LBA groups of which `backup_tracks` top
//!   tracks (default 4, at least 3: a record of two full top tracks plus
//!   headers must fit) hold records. By default (`spread`) a slot of them
//!   every 4,096 tracks, the nearest one used: the paper's analysis has the
//!   drive reach the safe track and come back within one or two rotations
//!   (steps 3 and 4), which a single far region cannot give. `outer`,
//!   `middle` or `inner` put one region there instead. Host capacity shrinks
//!   by the reserved groups. See `backup.rs` for the record format, lazy
//!   clearing and recovery.
//! * The data of the bottom write is not logged: a crash before it completes
//!   leaves the old or new contents, which is what an unacknowledged write
//!   may do.

use super::backup::{BackupRegion, Saved};
use super::map_store::MapStore;
use super::region::Reserved;
use super::relocation::{relocation_steps, Relocation};
use super::{home_pieces, read_home_mapped, top_neighbours, HomePiece};
use crate::device::{Cause, Device};
use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, LayoutKind, TrackKind};
use crate::layers::{
    Layer, LayerEntry, LayerReport, LayoutNeed, ParamKind, ParamSpec, Params, WriteReq,
};
use crate::medium::Token;
use crate::units::{Lba, PhysAddr, Sectors, Track};

/// The read-modify-write parameter shared by every IMR layer.
pub const SKIP_EMPTY: ParamSpec = ParamSpec {
    name: "skip_empty",
    kind: ParamKind::Bool,
    unit: "-",
    default: "true",
    doc: "do not save never-written top neighbours (off: the paper's analysis)",
};

/// Parameters shared by the IMR layers that use a backup region.
pub const BACKUP_PARAMS: [ParamSpec; 3] = [
    ParamSpec {
        name: "backup_location",
        kind: ParamKind::Choice(&["spread", "outer", "middle", "inner"]),
        unit: "-",
        default: "spread",
        doc: "where the reserved backup region lies: spread (a slot every backup_spacing_tracks, \
              the nearest used; the paper's analysis) or one region at the outer edge, middle or inner edge",
    },
    ParamSpec {
        name: "backup_tracks",
        kind: ParamKind::Int,
        unit: "tracks",
        default: "4",
        doc: "top tracks of the backup region (of each slot when spread) holding records (at least 3)",
    },
    ParamSpec {
        name: "backup_spacing_tracks",
        kind: ParamKind::Int,
        unit: "tracks",
        default: "4096",
        doc: "with backup_location = spread: one backup slot every this many tracks",
    },
];

/// The `imr-rmw` layer's entry in `layers::REGISTRY`: paper 000 section 2.1's
/// naive read-modify-write on an IMR drive.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "imr-rmw",
    runs_in: crate::layers::RunsIn::Drive,
    summary:
        "IMR naive read-modify-write: save, write, restore the top neighbours of every bottom write",
    paper: "000 section 2.1",
    layout: LayoutNeed::Kind(LayoutKind::Imr),
    params: &[
        SKIP_EMPTY,
        BACKUP_PARAMS[0],
        BACKUP_PARAMS[1],
        BACKUP_PARAMS[2],
    ],
    build: |p, g| Ok(Box::new(ImrRmw::new(p, g)?)),
};

/// Build the reserved region and backup region the parameters ask for,
/// with `extra` more usable top tracks in the main region (the map store's
/// checkpoint location), returned third. With `backup_location = spread`
/// the main region sits in the middle and the backup slots are its first
/// `backup_tracks` tops plus small regions every `backup_spacing_tracks`.
pub fn backup_from(
    p: &Params,
    g: &Geometry,
    extra: u64,
) -> SimResult<(Reserved, BackupRegion, Vec<Track>)> {
    let tracks = p.u64("backup_tracks");
    if tracks < 3 {
        return config_err(format!("backup_tracks = {tracks}: at least 3 are needed"));
    }
    let n = tracks as usize;
    let location = p.choice("backup_location");
    let spread = location == "spread";
    let main = Reserved::new(
        g,
        if spread { "middle" } else { location },
        tracks.saturating_add(extra),
    )?;
    let extra_tops = main.tops[n..n + extra as usize].to_vec();
    if !spread {
        let backup = BackupRegion::new(main.tops[..n].to_vec());
        return Ok((main, backup, extra_tops));
    }
    let main_run = main.runs(g)[0];
    let mut slots = spread_slots(p, g, tracks, &[main_run])?;
    slots.push((main_run, main.tops[..n].to_vec()));
    slots.sort_unstable_by_key(|s| s.0);
    // Slots in ascending order, laid flat (a 200,000 GiB drive has 24,000).
    let mut flat = Vec::with_capacity(slots.len() * n);
    let mut runs = Vec::with_capacity(slots.len());
    for (r, tops) in slots {
        flat.extend_from_slice(&tops);
        runs.push(r);
    }
    let res = Reserved::from_runs(g, &runs)?;
    Ok((res, BackupRegion::flat(flat, n), extra_tops))
}

/// A backup slot: its LBA range `(first, sectors)` and the tracks that hold it.
pub type BackupSlot = ((u64, u64), Vec<Track>);

/// The spread backup slots of `backup_location = spread`: runs of whole
/// groups `(first group, groups)` one every `backup_spacing_tracks`, away
/// from the runs in `taken`, each with its first `per_slot` usable tops.
pub fn spread_slots(
    p: &Params,
    g: &Geometry,
    per_slot: u64,
    taken: &[(u64, u64)],
) -> SimResult<Vec<BackupSlot>> {
    let spacing = p.u64("backup_spacing_tracks");
    let (group, _) = Reserved::groups_on(g)?;
    if spacing < 2 * group {
        return config_err(format!(
            "backup_spacing_tracks = {spacing}: at least one LBA group ({} tracks) apart",
            2 * group
        ));
    }
    let len = per_slot.saturating_add(1).div_ceil(group).max(1);
    let n = per_slot as usize;
    Reserved::spread_runs(g, len, spacing / (2 * group), taken)?
        .into_iter()
        .map(|r| {
            let mut tops = Reserved::run_tops(g, r);
            if tops.len() < n {
                return config_err(format!(
                    "could not reserve {n} usable top tracks per backup slot"
                ));
            }
            tops.truncate(n);
            Ok((r, tops))
        })
        .collect()
}

pub use crate::track_bits::TrackBits;

/// One data movement of a relocation: `count` sectors from `src` to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// Where the data is.
    pub src: PhysAddr,
    /// First physical sector the data is written to; the move's `count` sectors
    /// go from there on.
    pub dst: PhysAddr,
    /// Sectors moved, from `src` to `dst`.
    pub count: u32,
}

/// Counters of the RMW engine shared by the IMR layers.
#[derive(Clone, Debug, Default)]
pub struct RmwCounters {
    /// Bottom-track writes that needed a read-modify-write.
    pub rmws: u64,
    /// Bottom-track writes with no written neighbour to save.
    pub rmw_skipped_empty: u64,
    /// Top-track writes written directly.
    pub top_writes: u64,
    /// Neighbour sectors saved and rewritten.
    pub saved_sectors: u64,
}

/// Read-modify-write of bottom tracks at their home locations, with a
/// backup region: the mechanism of `imr-rmw`, reused by the other IMR layers
/// for the bottom writes they cannot avoid.
#[derive(Debug)]
pub struct RmwEngine {
    /// The backup region: reserved top tracks (`backup_location`, `backup_tracks`,
    /// `backup_spacing_tracks`) that records of endangered sectors are written to first.
    pub backup: BackupRegion,
    /// The `skip_empty` parameter (default on): a top neighbour that holds no
    /// data (not written since power-on, not prefilled) is neither read, saved nor rewritten.
    pub skip_empty: bool,
    /// Tracks written since power-on (after recovery: all).
    pub written: TrackBits,
    /// Counts since the run started, reported as `rmws`, `rmw_skipped_empty`,
    /// `top_writes` and `rmw_saved_sectors` (see [`RmwCounters`]).
    pub counters: RmwCounters,
    /// The move in progress, run one step per stage.
    pub in_flight: Option<Relocation>,
    /// Host-read pieces served from a move's memory buffer.
    pub reads_from_move_buffer: u64,
    /// Reused buffers of [`write_track`](Self::write_track) and
    /// [`write_group`](Self::write_group) (no allocation per write).
    scratch: RmwScratch,
}

/// Buffers an RMW reuses from one write to the next.
#[derive(Debug, Default)]
struct RmwScratch {
    /// The neighbour spans to save.
    spans: Vec<Saved>,
    /// One neighbour's overlapped spans, before merging.
    overlaps: Vec<(u32, u32)>,
    /// The saved sectors' tokens (data carried only).
    saved: Vec<Token>,
    /// The pieces of one track's batch that `write_group` hands to `write_track`
    /// (reused, not reallocated per write).
    parts: Vec<HomePiece>,
}

impl RmwEngine {
    /// An engine over `backup` for a drive of `tracks` tracks.
    pub fn new(backup: BackupRegion, skip_empty: bool, tracks: u64) -> RmwEngine {
        RmwEngine {
            backup,
            skip_empty,
            written: TrackBits::new(tracks),
            counters: RmwCounters::default(),
            in_flight: None,
            reads_from_move_buffer: 0,
            scratch: RmwScratch::default(),
        }
    }

    /// Whether top track `t` holds data worth saving: written since power-on,
    /// or holding the drive's starting data (a prefilled drive).
    #[inline]
    pub fn holds_data(&self, dev: &Device, t: Track) -> bool {
        self.written.get(t) || dev.prefilled(t)
    }

    /// Whether a move is in progress.
    pub fn busy(&self) -> bool {
        self.in_flight.is_some()
    }

    /// What a layer's moves ask of the engine: nothing (no move in progress
    /// and none `planned`), the foreground (`overdue`), or idle time.
    pub fn background(&self, planned: bool, overdue: bool) -> crate::layers::Background {
        use crate::layers::Background;
        if !self.busy() && !planned {
            Background::None
        } else if overdue {
            Background::Overdue
        } else {
            Background::Idle
        }
    }

    /// Run the next step of the move in progress; returns `true` when that
    /// finished it (the caller applies its map change to its own state).
    pub fn step(&mut self, dev: &mut Device, store: Option<&mut MapStore>) -> SimResult<bool> {
        let Some(mut r) = self.in_flight.take() else {
            return Ok(false);
        };
        let out = r.step(self, dev, store);
        let done = r.done();
        if !done || out.is_err() {
            self.in_flight = Some(r);
        }
        out.map(|_| done)
    }

    /// Run every remaining step of the move in progress.
    pub fn finish(&mut self, dev: &mut Device, mut store: Option<&mut MapStore>) -> SimResult<()> {
        while self.busy() {
            self.step(dev, store.as_deref_mut())?;
        }
        Ok(())
    }

    /// Whether a write landing on `track` (needing a read-modify-write when
    /// `rmw`) must wait for the move in progress.
    pub fn must_wait(&self, track: Track, rmw: bool) -> bool {
        match &self.in_flight {
            Some(r) => r.started() && (rmw || r.locks(track)),
            None => false,
        }
    }

    /// Read `count` sectors at `at` for the host: from the medium, or from
    /// the memory buffer of a move in progress where it holds the data.
    pub fn read(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let Some(r) = self.in_flight.as_ref().filter(|r| r.started()) else {
            dev.read(cause, at, count, out)?;
            return Ok(());
        };
        let mut parts = vec![];
        r.split_read(at, count, &mut parts);
        for (sector, n, mem) in parts {
            match mem {
                Some(off) => {
                    let r = self.in_flight.as_ref().expect("checked above");
                    out.extend_from_slice(r.buffered(off, n));
                    self.reads_from_move_buffer += 1;
                }
                None => {
                    dev.read(
                        cause,
                        PhysAddr {
                            track: at.track,
                            sector,
                        },
                        n,
                        out,
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Write pieces of one physical track: directly for a top track, by
    /// read-modify-write for a bottom track. `data(p)` gives a piece's tokens
    /// and `cause(p)` its cause.
    pub fn write_track<'a>(
        &mut self,
        dev: &mut Device,
        track: Track,
        pieces: &[HomePiece],
        data: impl Fn(&HomePiece) -> &'a [Token],
        cause: impl Fn(&HomePiece) -> Cause,
    ) -> SimResult<()> {
        let geom = dev.geometry_arc();
        if geom.kind(track) != TrackKind::Bottom {
            for p in pieces {
                self.backup
                    .before_write(dev, track, p.at.sector, p.at.sector + p.count)?;
                dev.write(cause(p), p.at, p.count, data(p))?;
                self.counters.top_writes += 1;
            }
            self.written.set(track);
            return Ok(());
        }
        // Spans of each neighbour overlapped by any piece, merged where they touch.
        let mut spans = std::mem::take(&mut self.scratch.spans);
        let mut s = std::mem::take(&mut self.scratch.overlaps);
        let mut saved = std::mem::take(&mut self.scratch.saved);
        spans.clear();
        saved.clear();
        for nb in top_neighbours(&geom, track) {
            if self.skip_empty && !self.holds_data(dev, nb) {
                continue;
            }
            s.clear();
            s.extend(
                pieces
                    .iter()
                    .map(|p| geom.overlap_span(track, p.at.sector, p.count, nb)),
            );
            s.sort_unstable();
            for &(lo, hi) in &s {
                match spans.last_mut() {
                    Some(last) if last.track == nb && last.sector + last.count >= lo => {
                        last.count = last.count.max(hi - last.sector);
                    }
                    _ => spans.push(Saved {
                        track: nb,
                        sector: lo,
                        count: hi - lo,
                    }),
                }
            }
        }
        let r = self.rmw_spans(dev, track, pieces, &spans, &mut saved, data, cause);
        self.scratch.spans = spans;
        self.scratch.overlaps = s;
        self.scratch.saved = saved;
        r
    }

    /// [`write_track`](Self::write_track) on a bottom track, once the
    /// neighbour `spans` to save are known: read, save, write, restore.
    #[allow(clippy::too_many_arguments)]
    fn rmw_spans<'a>(
        &mut self,
        dev: &mut Device,
        track: Track,
        pieces: &[HomePiece],
        spans: &[Saved],
        saved: &mut Vec<Token>,
        data: impl Fn(&HomePiece) -> &'a [Token],
        cause: impl Fn(&HomePiece) -> Cause,
    ) -> SimResult<()> {
        for s in spans {
            dev.read(
                Cause::Rmw,
                PhysAddr {
                    track: s.track,
                    sector: s.sector,
                },
                s.count,
                saved,
            )?;
        }
        if spans.is_empty() {
            self.counters.rmw_skipped_empty += 1;
        } else {
            self.backup.save(dev, spans, saved)?;
            self.counters.rmws += 1;
        }
        for p in pieces {
            dev.write(cause(p), p.at, p.count, data(p))?;
        }
        let mut off = 0usize;
        for s in spans {
            let chunk = if saved.is_empty() {
                &[][..]
            } else {
                &saved[off..off + s.count as usize]
            };
            dev.write(
                Cause::Rmw,
                PhysAddr {
                    track: s.track,
                    sector: s.sector,
                },
                s.count,
                chunk,
            )?;
            off += s.count as usize;
            self.counters.saved_sectors += s.count as u64;
        }
        self.written.set(track);
        Ok(())
    }

    /// Write one physical track's pieces of a batch (each piece with the
    /// index of its write in `ws`): directly on a top track, by one coalesced
    /// read-modify-write on a bottom track.
    pub fn write_group(
        &mut self,
        dev: &mut Device,
        track: Track,
        group: &[(HomePiece, usize)],
        ws: &[WriteReq],
    ) -> SimResult<()> {
        let mut parts = std::mem::take(&mut self.scratch.parts);
        parts.clear();
        parts.extend(group.iter().map(|x| x.0));
        let owner = |p: &HomePiece| group[parts.iter().position(|q| q == p).unwrap_or(0)].1;
        let r = self.write_track(
            dev,
            track,
            &parts,
            |p| piece_data(&ws[owner(p)], p),
            |p| ws[owner(p)].cause,
        );
        self.scratch.parts = parts;
        r
    }

    /// Write every piece of a batch, one physical track at a time (sorts `pieces`).
    pub fn write_pieces(
        &mut self,
        dev: &mut Device,
        pieces: &mut [(HomePiece, usize)],
        ws: &[WriteReq],
    ) -> SimResult<()> {
        sort_by_location(pieces);
        for_track_groups(pieces, |t, group| self.write_group(dev, t, group, ws))
    }

    /// Move data between physical extents as one crash-safe step: read the
    /// sources, save them and every written top-track span a bottom
    /// destination would damage in the backup region, write the bottom
    /// destinations, restore the damaged spans, write the top destinations,
    /// then commit `updates` to the map store (the commit point). A power loss
    /// before the commit rolls everything back from the backup region.
    /// (Runs every step at once; layers run the same program in stages.)
    pub fn relocate(
        &mut self,
        dev: &mut Device,
        store: &mut MapStore,
        moves: &[Move],
        updates: &[(u64, Option<u64>)],
        cause: Cause,
    ) -> SimResult<u64> {
        let tx = store.seq() + 1;
        let steps = relocation_steps(self, dev, moves, updates, cause, tx);
        self.in_flight = Some(Relocation::new(dev.geometry(), steps));
        self.finish(dev, Some(store))?;
        Ok(store.seq())
    }

    /// Counters for the report.
    pub fn report(&self, r: &mut LayerReport) {
        r.insert("rmws".into(), self.counters.rmws as f64);
        r.insert(
            "rmw_skipped_empty".into(),
            self.counters.rmw_skipped_empty as f64,
        );
        r.insert("top_writes".into(), self.counters.top_writes as f64);
        r.insert(
            "rmw_saved_sectors".into(),
            self.counters.saved_sectors as f64,
        );
        r.insert("backup_records".into(), self.backup.records as f64);
        r.insert("backup_clears".into(), self.backup.clears as f64);
        r.insert("backup_restores".into(), self.backup.restored as f64);
        r.insert("backup_slots".into(), self.backup.slots() as f64);
        r.insert(
            "backup_slot_changes".into(),
            self.backup.slot_changes as f64,
        );
        r.insert(
            "reads_from_move_buffer".into(),
            self.reads_from_move_buffer as f64,
        );
    }
}

/// The tokens of a piece of write `w` (empty when data is not carried).
pub fn piece_data<'a>(w: &WriteReq<'a>, p: &HomePiece) -> &'a [Token] {
    if w.data.is_empty() {
        &[]
    } else {
        &w.data[p.offset as usize..p.offset as usize + p.count as usize]
    }
}

/// Sort a batch's pieces by physical location.
pub fn sort_by_location(pieces: &mut [(HomePiece, usize)]) {
    pieces.sort_by_key(|(p, _)| (p.at.track, p.at.sector));
}

/// Call `f(track, group)` for each run of (sorted) pieces on one physical track,
/// stopping at the first error.
pub fn for_track_groups(
    pieces: &[(HomePiece, usize)],
    mut f: impl FnMut(Track, &[(HomePiece, usize)]) -> SimResult<()>,
) -> SimResult<()> {
    let mut i = 0;
    while i < pieces.len() {
        let t = pieces[i].0.at.track;
        let j = i + pieces[i..]
            .iter()
            .take_while(|(p, _)| p.at.track == t)
            .count();
        f(t, &pieces[i..j])?;
        i = j;
    }
    Ok(())
}

/// The `imr-rmw` layer.
#[derive(Debug)]
pub struct ImrRmw {
    res: Reserved,
    rmw: RmwEngine,
    pieces: Vec<(HomePiece, usize)>,
    /// One write's pieces (reused buffer).
    buf: Vec<HomePiece>,
}

impl ImrRmw {
    /// Build for a geometry.
    pub fn new(p: &Params, g: &Geometry) -> SimResult<ImrRmw> {
        let (res, backup, _) = backup_from(p, g, 0)?;
        Ok(ImrRmw {
            res,
            rmw: RmwEngine::new(backup, p.bool("skip_empty"), g.tracks()),
            pieces: vec![],
            buf: vec![],
        })
    }
}

impl Layer for ImrRmw {
    fn host_capacity(&self, _geom: &Geometry) -> Sectors {
        self.res.host_capacity()
    }
    fn reserved_home(&self) -> Vec<(Lba, Sectors)> {
        self.res.home_ranges()
    }
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        read_home_mapped(dev, &self.res, lba.0, n.0, out)
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        self.write_batch(dev, std::slice::from_ref(w))
    }
    fn write_batch(&mut self, dev: &mut Device, ws: &[WriteReq]) -> SimResult<()> {
        let geom = dev.geometry();
        let mut pieces = std::mem::take(&mut self.pieces);
        let mut buf = std::mem::take(&mut self.buf);
        pieces.clear();
        for (i, w) in ws.iter().enumerate() {
            buf.clear();
            home_pieces(geom, &self.res, w.lba.0, w.sectors.0, &mut buf);
            pieces.extend(buf.iter().map(|&p| (p, i)));
        }
        let result = self.rmw.write_pieces(dev, &mut pieces, ws);
        self.pieces = pieces;
        self.buf = buf;
        result
    }
    fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        self.rmw.written.set_all();
        self.rmw.backup.recover(dev, 0)
    }
    fn report(&self) -> LayerReport {
        let mut r = LayerReport::new();
        self.rmw.report(&mut r);
        r.insert("map_bytes".into(), 0.0);
        r.insert("reserved_tracks".into(), self.res.tracks_reserved() as f64);
        r
    }
}

#[cfg(test)]
pub(crate) mod tests;
