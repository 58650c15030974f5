//! Translation layers for interlaced magnetic recording (paper 000,
//! Hajkazemi et al., "Track-based Translation Layers for Interlaced Magnetic
//! Recording"), and the pieces they share: the reserved region and the
//! backup region.

pub mod backup;
pub mod dynamic_map;
pub mod flip;
pub mod map_store;
pub mod region;
pub mod relocation;
pub mod rmw;
pub mod track_cache;

use crate::device::{Cause, Device};
use crate::error::SimResult;
use crate::geometry::{Geometry, HomeExtents};
use crate::layers::{ParamKind, ParamSpec};
use crate::medium::Token;
use crate::units::{Lba, PhysAddr, Track};
use region::Reserved;

/// Where the interval-driven IMR layers count a write (shared parameter).
pub const COUNT_AT: ParamSpec = ParamSpec {
    name: "count_at",
    kind: ParamKind::Choice(&["arrival", "destage"]),
    unit: "-",
    default: "arrival",
    doc: "count host writes as they arrive (Algorithms 1-3's ReceiveIO) or the extents the write cache destages",
};

/// One piece of a host request at its home location: `count` sectors from
/// `at`, the `offset` of the piece within the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HomePiece {
    /// Its first sector: the home location, or where a layer that moves data
    /// (flip, swap) has mapped it.
    pub at: PhysAddr,
    /// Sectors in the piece, all on the track of `at`.
    pub count: u32,
    /// Offset of the piece within the host request, in sectors.
    pub offset: u64,
}

/// Split host `[lba, lba+n)` into per-track pieces at their home locations.
pub fn home_pieces(geom: &Geometry, res: &Reserved, lba: u64, n: u64, out: &mut Vec<HomePiece>) {
    for_home_pieces(geom, res, lba, n, |p| out.push(p));
}

/// Call `f` for each per-track piece of host `[lba, lba+n)` at its home
/// location, in order ([`home_pieces`] without a list).
pub fn for_home_pieces(
    geom: &Geometry,
    res: &Reserved,
    lba: u64,
    n: u64,
    mut f: impl FnMut(HomePiece),
) {
    res.for_home_pieces(lba, n, |home, count, off| {
        geom.for_home_extents(Lba(home), crate::units::Sectors(count), |at, c, l| {
            f(HomePiece {
                at,
                count: c,
                offset: off + (l.0 - home),
            });
        });
    });
}

/// Read host `[lba, lba+n)` from home, appending tokens to `out`.
pub fn read_home_mapped(
    dev: &mut Device,
    res: &Reserved,
    lba: u64,
    n: u64,
    out: &mut Vec<Token>,
) -> SimResult<()> {
    // Each piece is read as it is found (no list of pieces per read), the
    // geometry borrowed for each step only (no reference count taken).
    let mut off = 0;
    while off < n {
        let (home, count) = res.home_piece(lba + off, n - off);
        let mut walk = HomeExtents::new(Lba(home), crate::units::Sectors(count));
        while let Some((at, c, _)) = walk.next(dev.geometry()) {
            dev.read(Cause::Host, at, c, out)?;
        }
        off += count;
    }
    Ok(())
}

/// The top tracks next to bottom track `t` (one or two).
pub fn top_neighbours(geom: &Geometry, t: Track) -> impl Iterator<Item = Track> {
    geom.damaged_by_write(t)
}
