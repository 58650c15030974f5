//! HWSR's segment-based data layout (paper 001, Wan et al., section II.B.2
//! and the address formulas (1)-(5) of section II.C): a region of `S`
//! tracks is cut radially into segments, a segment being one block of
//! `S_blk` sectors on each track of the region. Consecutive LBAs fill a
//! segment block by block, one track after another, so that updating
//! block `i` of a segment rewrites blocks `i..S` of that segment only
//! (the shingled tracks downstream of it), never a neighbouring segment.
//!
//! The formulas, all in sectors (`S_T` the track size, `S_reg = S x S_T`,
//! `S_seg = S x S_blk`):
//! `N_reg = LBA / S_reg`, `N_seg = (LBA mod S_reg) / S_seg`,
//! `N_blk = (LBA mod S_seg) / S_blk`, `N_offset = LBA mod S_blk`,
//! `PBA = N_reg S_reg + N_blk S_T + N_seg S_blk + N_offset`.
//!
//! Choice where the paper is silent: formula (5) places block `N_blk` on
//! track `N_blk` of its region, counting from the region's first track. On a
//! wave-like disk every second region is shingled in the opposite radial
//! direction (paper 001 Figure 2(c)); there the shingling order starts at
//! the region's last track, so [`SegmentMap::track_in_region`] counts block
//! numbers from that end (`S - 1 - N_blk`) for odd regions. [`SegmentMap::pba`]
//! is formula (5) exactly, as the paper writes it (for its worked values);
//! [`SegmentMap::placed`] is where the block actually lies.

use crate::error::{config_err, SimResult};

/// The parts of an LBA by formulas (1)-(4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentAddr {
    /// Region number (1).
    pub region: u64,
    /// Segment number within the region (2).
    pub segment: u64,
    /// Block number within the segment (3): the block's place in shingling order.
    pub block: u64,
    /// Sector within the block (4).
    pub offset: u64,
}

/// The segment layout of a disk with uniform tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentMap {
    track_sectors: u64,
    block_sectors: u64,
    region_tracks: u64,
}

impl SegmentMap {
    /// Tracks of `track_sectors`, blocks of `block_sectors`, regions of `region_tracks` tracks.
    pub fn new(
        track_sectors: u64,
        block_sectors: u64,
        region_tracks: u64,
    ) -> SimResult<SegmentMap> {
        if block_sectors == 0
            || region_tracks == 0
            || !track_sectors.is_multiple_of(block_sectors.max(1))
        {
            return config_err(format!(
                "a segment layout needs blocks ({block_sectors} sectors) that divide the track ({track_sectors} sectors) and regions of at least one track"
            ));
        }
        Ok(SegmentMap {
            track_sectors,
            block_sectors,
            region_tracks,
        })
    }
    /// `S_reg`: sectors in a region.
    pub fn region_sectors(&self) -> u64 {
        self.region_tracks * self.track_sectors
    }
    /// `S_seg`: sectors in a segment (one block on each track of the region).
    pub fn segment_sectors(&self) -> u64 {
        self.region_tracks * self.block_sectors
    }
    /// Segments in a region (`n`).
    pub fn segments_per_region(&self) -> u64 {
        self.track_sectors / self.block_sectors
    }
    /// Formulas (1)-(4).
    pub fn split(&self, lba: u64) -> SegmentAddr {
        SegmentAddr {
            region: lba / self.region_sectors(),
            segment: (lba % self.region_sectors()) / self.segment_sectors(),
            block: (lba % self.segment_sectors()) / self.block_sectors,
            offset: lba % self.block_sectors,
        }
    }
    /// Formula (5), exactly as the paper writes it.
    pub fn pba(&self, lba: u64) -> u64 {
        let a = self.split(lba);
        a.region * self.region_sectors()
            + a.block * self.track_sectors
            + a.segment * self.block_sectors
            + a.offset
    }
    /// The track of region `region` that holds block `block` of every
    /// segment: block order follows the region's shingling direction, which
    /// reverses in every second region of a wave-like disk.
    pub fn track_in_region(&self, region: u64, block: u64) -> u64 {
        if region % 2 == 1 {
            self.region_tracks - 1 - block
        } else {
            block
        }
    }
    /// Where the sector of `lba` lies: (region, track within the region, sector within the track).
    pub fn placed(&self, lba: u64) -> (u64, u64, u64) {
        let a = self.split(lba);
        (
            a.region,
            self.track_in_region(a.region, a.block),
            a.segment * self.block_sectors + a.offset,
        )
    }
    /// The blocks an update of `lba`'s block rewrites: its own and every
    /// later block of its segment in shingling order (`block..S`).
    pub fn rewrite_span(&self, lba: u64) -> std::ops::Range<u64> {
        self.split(lba).block..self.region_tracks
    }
}

/// Paper 001 section III.B: the disk utilisation of HWSR over S-block,
/// `2 (S_reg + 2 kappa) / ((2 S_reg + kappa)(1 - beta))`, with `S_reg` in tracks.
pub fn hwsr_over_sblock_utilisation(region_tracks: f64, kappa: f64, beta: f64) -> f64 {
    2.0 * (region_tracks + 2.0 * kappa) / ((2.0 * region_tracks + kappa) * (1.0 - beta))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 MiB tracks of 512-byte sectors, 64-sector blocks, 20-track regions.
    fn map() -> SegmentMap {
        SegmentMap::new(8192, 64, 20).unwrap()
    }

    #[test]
    fn the_papers_worked_addresses() {
        let m = map();
        assert_eq!(
            (
                m.region_sectors(),
                m.segment_sectors(),
                m.segments_per_region()
            ),
            (163_840, 1_280, 128)
        );
        assert_eq!(m.pba(64), 8192);
        assert_eq!(m.pba(1300), 84);
        assert_eq!(m.pba(163_905), 172_033);
        // Derived: the last sector of the first segment lies on the region's
        // last track; the first sector of the second segment beside the first's first.
        assert_eq!(m.pba(1279), 19 * 8192 + 63);
        assert_eq!(m.pba(1280), 64);
        assert_eq!(
            m.split(163_905),
            SegmentAddr {
                region: 1,
                segment: 0,
                block: 1,
                offset: 1
            }
        );
    }

    #[test]
    fn every_second_region_counts_blocks_from_its_far_edge() {
        let m = map();
        assert_eq!(m.placed(64), (0, 1, 0));
        // Region 1 is shingled the other way: its block 1 is on its track 18.
        assert_eq!(m.placed(163_905), (1, 18, 1));
        assert_eq!(m.placed(163_840 + 1300), (1, 19, 84));
    }

    #[test]
    fn an_update_rewrites_the_rest_of_its_segment_only() {
        let m = map();
        assert_eq!(m.rewrite_span(64), 1..20);
        assert_eq!(m.rewrite_span(1279), 19..20);
        assert_eq!(m.rewrite_span(1280), 0..20);
    }

    #[test]
    fn utilisation_ratio_is_2_65_at_the_papers_point() {
        let r = hwsr_over_sblock_utilisation(10.0, 8.0, 0.3);
        assert!((r - 2.653).abs() < 0.001, "{r}");
        assert!(SegmentMap::new(8192, 100, 20).is_err());
    }
}
