//! `buffered-cmr`: paper 001's "traditional disk" (section IV.A): "a
//! traditional disk without shingled tracks [...] also has a MEM buffer
//! which has the same size" as HWSR's; it has no SSD.
//!
//! Choices where the paper is silent: the disk is the user's drive run as
//! conventional (a wave drive keeps its physical tracks, guard bands
//! included, as data tracks). "The same memory buffer" is taken to mean the
//! same policy too: a conventional disk has no segments, so a segment here
//! is `segment_blocks` consecutive blocks of LBA space (default 20, HWSR's
//! segment of the paper's 20-track regions), and the least-write-
//! amplification LRU evicts the tail block with the blocks of its run
//! found in the window. A flush writes only the valid sector runs to their
//! home sectors, adjacent runs of adjacent blocks as one operation, with no
//! read (nothing on a conventional track is endangered).

use super::{Backend, BlockImage, HybridLayer, BUFFER_PARAMS};
use crate::device::{Cause, Device};
use crate::drive::DriveConfig;
use crate::error::SimResult;
use crate::geometry::Geometry;
use crate::layers::cmr::{read_home, write_home};
use crate::layers::{
    Layer, LayerEntry, LayerReport, LayoutNeed, ParamKind, ParamSpec, Params, WriteReq,
};
use crate::medium::Token;
use crate::units::{Lba, Sectors};

/// The longest segment (blocks), as long as the longest wave region a drive may have.
const MAX_SEGMENT_BLOCKS: u64 = 100_000;

fn shape(p: &Params, d: &mut DriveConfig) -> SimResult<()> {
    super::shape_devices(p, d, false)
}

/// The `buffered-cmr` layer's entry in `layers::REGISTRY`: paper 001 section IV.A's
/// traditional disk (the drive run as conventional behind HWSR's memory buffer, no SSD).
pub static ENTRY: LayerEntry = LayerEntry {
    name: "buffered-cmr",
    runs_in: crate::layers::RunsIn::Host,
    summary:
        "conventional disk behind HWSR's memory write buffer, no SSD (paper 001's traditional disk)",
    paper: "001 section IV.A (traditional disk)",
    layout: LayoutNeed::AsConventionalShaped(shape),
    params: &PARAMS,
    build: |p: &Params, g: &Geometry| -> SimResult<Box<dyn Layer>> {
        // Each segment the policies track holds two slot arrays of this length.
        let spb = p.u64("segment_blocks");
        if !(1..=MAX_SEGMENT_BLOCKS).contains(&spb) {
            return Err(crate::error::SimError::Config(format!(
                "segment_blocks = {spb} must be between 1 and {MAX_SEGMENT_BLOCKS}"
            )));
        }
        let backend = Home {
            b: p.u64_at_least("buffered-cmr", "block_sectors", 1)?,
            spb: p.u64("segment_blocks") as u32,
            blocks_written: 0,
            writes: 0,
            runs: vec![],
        };
        Ok(Box::new(HybridLayer::new(
            "buffered-cmr",
            p,
            g,
            false,
            Box::new(backend),
        )?))
    },
};

const PARAMS: [ParamSpec; 7] = [
    BUFFER_PARAMS[0],
    BUFFER_PARAMS[1],
    BUFFER_PARAMS[2],
    BUFFER_PARAMS[3],
    BUFFER_PARAMS[4],
    super::DRIVE_FLUSH,
    ParamSpec {
        name: "segment_blocks",
        kind: ParamKind::Int,
        unit: "blocks",
        default: "20",
        doc: "consecutive blocks the eviction policies treat as one segment (HWSR's segment of 20-track regions)",
    },
];

/// Blocks at their home sectors.
pub struct Home {
    b: u64,
    spb: u32,
    blocks_written: u64,
    writes: u64,
    /// A flush's runs (reused list: no allocation per flush).
    runs: Vec<(u64, u64, Vec<Token>)>,
}

impl Backend for Home {
    fn blocks_per_segment(&self) -> u32 {
        self.spb
    }

    fn span(&self, _lo: u32) -> Option<std::ops::Range<u32>> {
        None
    }

    fn read(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        read_home(dev, cause, lba, n, out)
    }

    fn flush(&mut self, dev: &mut Device, seg: u64, images: &mut [BlockImage]) -> SimResult<()> {
        let b = self.b as u32;
        let first = seg * self.spb as u64 * self.b;
        // Valid runs in LBA order, adjacent ones merged: (first LBA, sectors, tokens).
        let mut runs = std::mem::take(&mut self.runs);
        runs.clear();
        for im in images.iter() {
            self.blocks_written += 1;
            im.valid.for_runs(b, |s, len| {
                let lba = first + im.idx as u64 * self.b + s as u64;
                let data = if im.data.is_empty() {
                    &[][..]
                } else {
                    &im.data[s as usize..(s + len) as usize]
                };
                match runs.last_mut() {
                    Some(r) if r.0 + r.1 == lba => {
                        r.1 += len as u64;
                        r.2.extend_from_slice(data);
                    }
                    _ => runs.push((lba, len as u64, data.to_vec())),
                }
            });
        }
        let r = runs.iter().try_for_each(|(lba, n, data)| {
            let w = WriteReq {
                lba: Lba(*lba),
                sectors: Sectors(*n),
                cause: Cause::Destage,
                data,
            };
            write_home(dev, &w)?;
            self.writes += 1;
            Ok(())
        });
        self.runs = runs;
        r?;
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
        r.insert("flush_writes".into(), self.writes as f64);
    }
}
