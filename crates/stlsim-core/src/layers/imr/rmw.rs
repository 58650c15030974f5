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
//!   new space. Turn it off to reproduce the paper's model. The layer knows a
//!   track was written from its own bitmap (one bit per track); after a power
//!   loss the bitmap is gone and every track counts as written.
//! * **Backup region** (`backup_location`, `backup_tracks`): whole LBA groups
//!   reserved at the outer edge, the middle (default: shortest mean seek) or
//!   the inner edge, of which `backup_tracks` top tracks (default 4, at least
//!   3: a record of two full top tracks plus headers must fit) hold records.
//!   Host capacity shrinks by the reserved groups. See `backup.rs` for the
//!   record format, lazy clearing and recovery.
//! * The data of the bottom write is not logged: a crash before it completes
//!   leaves the old or new contents, which is what an unacknowledged write
//!   may do.

use super::backup::{BackupRegion, Saved};
use super::map_store::MapStore;
use super::region::Reserved;
use super::{home_pieces, read_home_mapped, top_neighbours, HomePiece};
use crate::device::{Cause, Device};
use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, TrackKind};
use crate::layers::{Layer, LayerEntry, LayerReport, LayoutNeed, ParamKind, ParamSpec, Params, WriteReq};
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
pub const BACKUP_PARAMS: [ParamSpec; 2] = [
    ParamSpec {
        name: "backup_location",
        kind: ParamKind::Choice(&["outer", "middle", "inner"]),
        unit: "-",
        default: "middle",
        doc: "where the reserved backup region lies",
    },
    ParamSpec {
        name: "backup_tracks",
        kind: ParamKind::Int,
        unit: "tracks",
        default: "4",
        doc: "top tracks of the backup region holding records (at least 3)",
    },
];

/// Registry entry.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "imr-rmw",
    summary: "IMR naive read-modify-write: save, write, restore the top neighbours of every bottom write",
    paper: "000 section 2.1",
    layout: LayoutNeed::Kind("imr"),
    params: &[
        SKIP_EMPTY,
        BACKUP_PARAMS[0],
        BACKUP_PARAMS[1],
    ],
    build: |p, g| Ok(Box::new(ImrRmw::new(p, g)?)),
};

/// Build the reserved region and backup region the parameters ask for.
pub fn backup_from(p: &Params, g: &Geometry) -> SimResult<(Reserved, BackupRegion)> {
    let tracks = p.u64("backup_tracks");
    if tracks < 3 {
        return config_err(format!("backup_tracks = {tracks}: at least 3 are needed"));
    }
    let res = Reserved::new(g, p.choice("backup_location"), tracks)?;
    let backup = BackupRegion::new(res.tops[..tracks as usize].to_vec());
    Ok((res, backup))
}

/// A bitmap of physical tracks.
#[derive(Clone, Debug, Default)]
pub struct TrackBits(Vec<u64>);

impl TrackBits {
    /// All clear, for `n` tracks.
    pub fn new(n: u64) -> TrackBits {
        TrackBits(vec![0; n.div_ceil(64) as usize])
    }
    /// Whether track `t` is set.
    pub fn get(&self, t: Track) -> bool {
        self.0[(t.0 / 64) as usize] >> (t.0 % 64) & 1 == 1
    }
    /// Set track `t`.
    pub fn set(&mut self, t: Track) {
        self.0[(t.0 / 64) as usize] |= 1 << (t.0 % 64);
    }
    /// Set every track.
    pub fn set_all(&mut self) {
        self.0.fill(u64::MAX);
    }
}

/// One data movement of a relocation: `count` sectors from `src` to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// Where the data is.
    pub src: PhysAddr,
    /// Where it goes.
    pub dst: PhysAddr,
    /// Sectors.
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
    /// The backup region.
    pub backup: BackupRegion,
    /// Skip never-written neighbours.
    pub skip_empty: bool,
    /// Tracks written since power-on (after recovery: all).
    pub written: TrackBits,
    /// Counters.
    pub counters: RmwCounters,
}

impl RmwEngine {
    /// An engine over `backup` for a drive of `tracks` tracks.
    pub fn new(backup: BackupRegion, skip_empty: bool, tracks: u64) -> RmwEngine {
        RmwEngine { backup, skip_empty, written: TrackBits::new(tracks), counters: RmwCounters::default() }
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
                self.backup.before_write(dev, track, p.at.sector, p.at.sector + p.count)?;
                dev.write(cause(p), p.at, p.count, data(p))?;
                self.counters.top_writes += 1;
            }
            self.written.set(track);
            return Ok(());
        }
        // Spans of each neighbour overlapped by any piece, merged where they touch.
        let mut spans: Vec<Saved> = vec![];
        for nb in top_neighbours(&geom, track) {
            if self.skip_empty && !self.written.get(nb) {
                continue;
            }
            let mut s: Vec<(u32, u32)> =
                pieces.iter().map(|p| geom.overlap_span(track, p.at.sector, p.count, nb)).collect();
            s.sort_unstable();
            for (lo, hi) in s {
                match spans.last_mut() {
                    Some(last) if last.track == nb && last.sector + last.count >= lo => {
                        last.count = last.count.max(hi - last.sector);
                    }
                    _ => spans.push(Saved { track: nb, sector: lo, count: hi - lo }),
                }
            }
        }
        let mut saved: Vec<Token> = vec![];
        for s in &spans {
            dev.read(Cause::Rmw, PhysAddr { track: s.track, sector: s.sector }, s.count, &mut saved)?;
        }
        if spans.is_empty() {
            self.counters.rmw_skipped_empty += 1;
        } else {
            self.backup.save(dev, &spans, &saved)?;
            self.counters.rmws += 1;
        }
        for p in pieces {
            dev.write(cause(p), p.at, p.count, data(p))?;
        }
        let mut off = 0usize;
        for s in &spans {
            let chunk = if saved.is_empty() { &[][..] } else { &saved[off..off + s.count as usize] };
            dev.write(Cause::Rmw, PhysAddr { track: s.track, sector: s.sector }, s.count, chunk)?;
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
        let parts: Vec<HomePiece> = group.iter().map(|x| x.0).collect();
        let owner = |p: &HomePiece| group[parts.iter().position(|q| q == p).unwrap_or(0)].1;
        self.write_track(dev, track, &parts, |p| piece_data(&ws[owner(p)], p), |p| ws[owner(p)].cause)
    }

    /// Write every piece of a batch, one physical track at a time (sorts `pieces`).
    pub fn write_pieces(&mut self, dev: &mut Device, pieces: &mut [(HomePiece, usize)], ws: &[WriteReq]) -> SimResult<()> {
        sort_by_location(pieces);
        for_track_groups(pieces, |t, group| self.write_group(dev, t, group, ws))
    }

    /// Move data between physical extents as one crash-safe step: read the
    /// sources, save them and every written top-track span a bottom
    /// destination would damage in the backup region, write the bottom
    /// destinations, restore the damaged spans, write the top destinations,
    /// then commit `updates` to the map store (the commit point). A power loss
    /// before the commit rolls everything back from the backup region.
    pub fn relocate(
        &mut self,
        dev: &mut Device,
        store: &mut MapStore,
        moves: &[Move],
        updates: &[(u64, Option<u64>)],
        cause: Cause,
    ) -> SimResult<u64> {
        let geom = dev.geometry_arc();
        let mut src_data: Vec<Token> = vec![];
        for m in moves {
            dev.read(cause, m.src, m.count, &mut src_data)?;
        }
        // Spans of top neighbours of bottom destinations, less the destinations themselves.
        let mut collateral: Vec<Saved> = vec![];
        for m in moves.iter().filter(|m| geom.kind(m.dst.track) == TrackKind::Bottom) {
            for nb in top_neighbours(&geom, m.dst.track) {
                if self.skip_empty && !self.written.get(nb) {
                    continue;
                }
                let (lo, hi) = geom.overlap_span(m.dst.track, m.dst.sector, m.count, nb);
                let mut pieces = vec![(lo, hi)];
                for d in moves.iter().filter(|d| d.dst.track == nb) {
                    let (a, b) = (d.dst.sector, d.dst.sector + d.count);
                    pieces = pieces
                        .into_iter()
                        .flat_map(|(x, y)| [(x, y.min(a)), (x.max(b), y)])
                        .filter(|(x, y)| x < y)
                        .collect();
                }
                collateral.extend(pieces.into_iter().map(|(x, y)| Saved { track: nb, sector: x, count: y - x }));
            }
        }
        // Spans of neighbouring destinations overlap on a shared top track: merge them.
        collateral.sort_by_key(|c| (c.track, c.sector));
        let mut merged: Vec<Saved> = vec![];
        for c in collateral {
            match merged.last_mut() {
                Some(m) if m.track == c.track && m.sector + m.count >= c.sector => {
                    m.count = m.count.max(c.sector + c.count - m.sector);
                }
                _ => merged.push(c),
            }
        }
        let collateral = merged;
        let mut col_data: Vec<Token> = vec![];
        for c in &collateral {
            dev.read(cause, PhysAddr { track: c.track, sector: c.sector }, c.count, &mut col_data)?;
        }
        let mut saved: Vec<Saved> =
            moves.iter().map(|m| Saved { track: m.src.track, sector: m.src.sector, count: m.count }).collect();
        saved.extend_from_slice(&collateral);
        let mut data = src_data.clone();
        data.extend_from_slice(&col_data);
        let tx = store.seq() + 1;
        self.backup.save_tx(dev, &saved, &data, tx)?;
        let carries = !src_data.is_empty();
        let mut offs = vec![];
        let mut off = 0usize;
        for m in moves {
            offs.push(off);
            off += m.count as usize;
        }
        let slice = |i: usize, n: u32| if carries { &src_data[offs[i]..offs[i] + n as usize] } else { &[][..] };
        for (i, m) in moves.iter().enumerate().filter(|(_, m)| geom.kind(m.dst.track) == TrackKind::Bottom) {
            dev.write(cause, m.dst, m.count, slice(i, m.count))?;
            self.written.set(m.dst.track);
        }
        let mut off = 0usize;
        for c in &collateral {
            let chunk = if carries { &col_data[off..off + c.count as usize] } else { &[][..] };
            dev.write(cause, PhysAddr { track: c.track, sector: c.sector }, c.count, chunk)?;
            off += c.count as usize;
        }
        for (i, m) in moves.iter().enumerate().filter(|(_, m)| geom.kind(m.dst.track) != TrackKind::Bottom) {
            dev.write(cause, m.dst, m.count, slice(i, m.count))?;
            self.written.set(m.dst.track);
        }
        let seq = store.commit(dev, updates)?;
        debug_assert_eq!(seq, tx);
        self.backup.forget();
        Ok(seq)
    }

    /// Counters for the report.
    pub fn report(&self, r: &mut LayerReport) {
        r.insert("rmws".into(), self.counters.rmws as f64);
        r.insert("rmw_skipped_empty".into(), self.counters.rmw_skipped_empty as f64);
        r.insert("top_writes".into(), self.counters.top_writes as f64);
        r.insert("rmw_saved_sectors".into(), self.counters.saved_sectors as f64);
        r.insert("backup_records".into(), self.backup.records as f64);
        r.insert("backup_clears".into(), self.backup.clears as f64);
        r.insert("backup_restores".into(), self.backup.restored as f64);
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
        let j = i + pieces[i..].iter().take_while(|(p, _)| p.at.track == t).count();
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
}

impl ImrRmw {
    /// Build for a geometry.
    pub fn new(p: &Params, g: &Geometry) -> SimResult<ImrRmw> {
        let (res, backup) = backup_from(p, g)?;
        Ok(ImrRmw { res, rmw: RmwEngine::new(backup, p.bool("skip_empty"), g.tracks()), pieces: vec![] })
    }
}

impl Layer for ImrRmw {
    fn name(&self) -> &'static str {
        "imr-rmw"
    }
    fn host_capacity(&self, _geom: &Geometry) -> Sectors {
        self.res.host_capacity()
    }
    fn read(&mut self, dev: &mut Device, lba: Lba, n: Sectors, out: &mut Vec<Token>) -> SimResult<()> {
        read_home_mapped(dev, &self.res, lba.0, n.0, out)
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        self.write_batch(dev, std::slice::from_ref(w))
    }
    fn write_batch(&mut self, dev: &mut Device, ws: &[WriteReq]) -> SimResult<()> {
        let geom = dev.geometry_arc();
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        let mut buf = vec![];
        for (i, w) in ws.iter().enumerate() {
            buf.clear();
            home_pieces(&geom, &self.res, w.lba.0, w.sectors.0, &mut buf);
            pieces.extend(buf.iter().map(|&p| (p, i)));
        }
        let result = self.rmw.write_pieces(dev, &mut pieces, ws);
        self.pieces = pieces;
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
        r.insert("reserved_tracks".into(), (self.res.end.0 - self.res.first.0) as f64);
        r
    }
}

#[cfg(test)]
pub(crate) mod tests;
