//! The conventional (CMR) baseline: the identity map. Host writes go straight
//! to their home sectors, reads come from them.
//!
//! Paper: Hajkazemi et al., "Track-based Translation Layers for Interlaced
//! Magnetic Recording", section 3 (the CMR baseline every IMR layer is
//! compared against); the SMR papers use the same baseline.
//!
//! Choices where the papers are silent: the baseline runs on the user's drive
//! with its layout replaced by `cmr` (same track sizes and mechanics), so a
//! comparison isolates the translation layer. On an IMR drive the baseline's
//! tracks all have the bottom-track size.

use super::{Layer, LayerEntry, LayoutNeed, Params, WriteReq};
use crate::device::{Cause, Device};
use crate::error::SimResult;
use crate::geometry::{Geometry, HomeExtents};
use crate::medium::Token;
use crate::units::{Lba, Sectors};

/// The CMR identity layer.
#[derive(Debug, Default)]
pub struct Cmr;

/// The `cmr` layer's entry in `layers::REGISTRY`: name, parameters, constructor.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "cmr",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "conventional baseline: identity map, writes in place",
    paper: "000 section 3 (CMR baseline)",
    layout: LayoutNeed::AsConventional,
    params: &[],
    build: |_p: &Params, _g: &Geometry| Ok(Box::new(Cmr)),
};

/// Read a range from its home sectors, track by track (shared by layers that
/// keep data at home).
pub fn read_home(
    dev: &mut Device,
    cause: Cause,
    lba: Lba,
    n: Sectors,
    out: &mut Vec<Token>,
) -> SimResult<()> {
    let mut walk = HomeExtents::new(lba, n);
    while let Some((at, count, _)) = walk.next(dev.geometry()) {
        dev.read(cause, at, count, out)?;
    }
    Ok(())
}

/// Split a write at home-track boundaries: `f(at, count, data)` for each
/// piece in LBA order, with the piece's tokens when data is carried; stops
/// at the first error.
pub fn for_home_pieces(
    geom: &crate::geometry::Geometry,
    w: &WriteReq,
    mut f: impl FnMut(crate::units::PhysAddr, u32, &[Token]) -> SimResult<()>,
) -> SimResult<()> {
    let mut err = Ok(());
    let carries = !w.data.is_empty();
    geom.for_home_extents(w.lba, w.sectors, |at, count, lba| {
        if err.is_ok() {
            let data = if carries {
                let off = (lba.0 - w.lba.0) as usize;
                &w.data[off..off + count as usize]
            } else {
                &[][..]
            };
            err = f(at, count, data);
        }
    });
    err
}

/// Write a range to its home sectors, track by track.
pub fn write_home(dev: &mut Device, w: &WriteReq) -> SimResult<()> {
    let mut walk = HomeExtents::new(w.lba, w.sectors);
    while let Some((at, count, lba)) = walk.next(dev.geometry()) {
        let data = if w.data.is_empty() {
            &[][..]
        } else {
            let off = (lba.0 - w.lba.0) as usize;
            &w.data[off..off + count as usize]
        };
        dev.write(w.cause, at, count, data)?;
    }
    Ok(())
}

impl Layer for Cmr {
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        read_home(dev, Cause::Host, lba, n, out)
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        write_home(dev, w)
    }
}
