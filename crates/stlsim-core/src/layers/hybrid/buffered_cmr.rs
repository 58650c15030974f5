//! `buffered-cmr`: paper 001's "traditional disk" (section IV.A): "a
//! traditional disk without shingled tracks [...] also has a MEM buffer
//! which has the same size" as HWSR's; it has no SSD.
//!
//! Choices where the paper is silent: the disk is the user's drive run as
//! conventional (a wave drive keeps its physical tracks, guard bands
//! included, as data tracks); a conventional disk has no segments, so each
//! block is its own segment and every eviction policy is block LRU; an
//! evicted block writes only its valid sector runs to their home sectors,
//! with no read (nothing on a conventional track is endangered).

use super::{Backend, BlockImage, HybridLayer, BUFFER_PARAMS};
use crate::device::{Cause, Device};
use crate::error::SimResult;
use crate::geometry::{DriveConfig, Geometry};
use crate::layers::cmr::{read_home, write_home};
use crate::layers::{Layer, LayerEntry, LayerReport, LayoutNeed, Params, WriteReq};
use crate::medium::Token;
use crate::units::{Lba, Sectors};

fn shape(p: &Params, d: &mut DriveConfig) -> SimResult<()> {
    super::shape_devices(p, d, false)
}

/// Registry entry.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "buffered-cmr",
    summary: "conventional disk behind HWSR's memory write buffer, no SSD (paper 001's traditional disk)",
    paper: "001 section IV.A (traditional disk)",
    layout: LayoutNeed::AsConventionalShaped(shape),
    params: &BUFFER_PARAMS,
    build: |p: &Params, g: &Geometry| -> SimResult<Box<dyn Layer>> {
        let backend = Home { b: p.u64("block_sectors").max(1), blocks_written: 0 };
        Ok(Box::new(HybridLayer::new("buffered-cmr", p, g, false, Box::new(backend))?))
    },
};

/// Blocks at their home sectors.
pub struct Home {
    b: u64,
    blocks_written: u64,
}

impl Backend for Home {
    fn blocks_per_segment(&self) -> u32 {
        1
    }

    fn span(&self, _lo: u32) -> Option<std::ops::Range<u32>> {
        None
    }

    fn read(&mut self, dev: &mut Device, cause: Cause, lba: Lba, n: Sectors, out: &mut Vec<Token>) -> SimResult<()> {
        read_home(dev, cause, lba, n, out)
    }

    fn flush(&mut self, dev: &mut Device, seg: u64, images: &mut [BlockImage]) -> SimResult<()> {
        let b = self.b as u32;
        for im in images.iter() {
            let first = seg * self.b;
            for (s, len) in im.valid.runs(b) {
                let data = if im.data.is_empty() { &[][..] } else { &im.data[s as usize..(s + len) as usize] };
                let w = WriteReq { lba: Lba(first + s as u64), sectors: Sectors(len as u64), cause: Cause::Destage, data };
                write_home(dev, &w)?;
            }
            self.blocks_written += 1;
        }
        Ok(())
    }

    fn recover(&mut self, _dev: &mut Device) -> SimResult<u64> {
        Ok(0)
    }

    fn host_capacity(&self, geom: &Geometry) -> Sectors {
        geom.capacity()
    }

    fn supports_prefill(&self) -> bool {
        true
    }

    fn report(&self, r: &mut LayerReport) {
        r.insert("blocks_written".into(), self.blocks_written as f64);
    }
}
