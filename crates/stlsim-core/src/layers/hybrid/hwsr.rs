//! `hwsr`: the hybrid wave-like shingled-recording system of paper 001
//! (Wan et al.), sections II.B (wave-like layout, segment layout), II.C
//! (address formulas (1)-(5), segment hash table) and II.D (replacement):
//! the memory buffer and SSD cache of [`super`] over segments of a
//! wave-like shingled disk ([`crate::geometry::Layout::Wave`]).
//!
//! * Host LBAs are placed by [`SegmentMap`]: a segment is one block on each
//!   track of a region; a flush of blocks from index `i` of a segment
//!   rewrites blocks `i..S` of that segment only (their downstream
//!   neighbours in shingling order), read-merged from the disk.
//! * The medium enforces the overlap: writing block `i` destroys the same
//!   sectors of the next `kappa` tracks in the region's shingling
//!   direction, so a layer that forgot a block would lose it.
//!
//! Choices where the paper is silent:
//! * Every second region shingles downwards, so its block `0` lies on its
//!   last track ([`SegmentMap::track_in_region`]).
//! * **Crash safety of a rewrite** (the paper has none): the merged image of
//!   the blocks being rewritten is saved before the first home write, and a
//!   power loss part way is finished from it by recovery. With a
//!   battery-backed buffer the image goes to `S` staging slots of the buffer
//!   (memory writes, no disk I/O); with a volatile buffer it goes to a
//!   scratch segment on the disk (the disk's last region, outside the host
//!   space), written with cause `backup`, and each home block carries an
//!   out-of-band record (segment, block, sequence number) so recovery can
//!   tell a finished rewrite from an interrupted one.
//! * The host space is every region but the last, which holds the scratch
//!   segment (`S x S_T` sectors out of 821 GB on the paper's disk).
//! * The drive starts empty (the segment layout is not the geometry's
//!   track-ordered home map, so prefill is refused).

use super::{Backend, BlockImage, HybridLayer, BUFFER_PARAMS};
use crate::device::{Cause, Device};
use crate::drive::DriveConfig;
use crate::error::{SimError, SimResult};
use crate::geometry::segment_map::SegmentMap;
use crate::geometry::{Geometry, Layout, LayoutKind};
use crate::layers::{Layer, LayerEntry, LayerReport, LayoutNeed, ParamKind, ParamSpec, Params};
use crate::medium::Token;
use crate::side_device::SideKind;
use crate::units::{Lba, PhysAddr, Sectors};

const STAGE_TAG: u64 = 0x4857_5352_5354_4731; // "HWSRSTG1"
const PAD_TAG: u64 = 0x4857_5352_5041_4431; // "HWSRPAD1"
const HOME_TAG: u64 = 0x4857_5352_484f_4d31; // "HWSRHOM1"

const PARAMS: [ParamSpec; 8] = [
    BUFFER_PARAMS[0],
    BUFFER_PARAMS[1],
    BUFFER_PARAMS[2],
    BUFFER_PARAMS[3],
    BUFFER_PARAMS[4],
    BUFFER_PARAMS[5],
    super::DRIVE_FLUSH,
    ParamSpec {
        name: "region_tracks",
        kind: ParamKind::Int,
        unit: "tracks",
        default: "0",
        doc: "tracks per region S_reg (0: the drive's wave layout)",
    },
];

fn shape(p: &Params, d: &mut DriveConfig) -> SimResult<()> {
    let s = p.u64("region_tracks");
    if s > 0 {
        let (lo, hi) = crate::geometry::config::int_range("layout.region_tracks");
        if !(lo..=hi).contains(&s) {
            return Err(SimError::Config(format!(
                "region_tracks = {s} must be between {lo} and {hi}"
            )));
        }
        d.layout.region_tracks = s;
    }
    super::shape_devices(p, d, true)
}

/// The `hwsr` layer's entry in `layers::REGISTRY`: paper 001 sections II-III
/// (memory buffer, SSD cache and segment layout over a wave-layout drive).
pub static ENTRY: LayerEntry = LayerEntry {
    name: "hwsr",
    runs_in: crate::layers::RunsIn::Host,
    summary: "hybrid wave-like shingled disk: memory write buffer (least-write-amplification LRU), SSD read cache, segment layout",
    paper: "001 sections II-III (HWSR)",
    layout: LayoutNeed::Shaped(LayoutKind::Wave, shape),
    params: &PARAMS,
    build: |p: &Params, g: &Geometry| -> SimResult<Box<dyn Layer>> {
        let backend = Segments::new(p, g)?;
        Ok(Box::new(HybridLayer::new("hwsr", p, g, true, Box::new(backend))?))
    },
};

/// The segment layout on a wave-like disk.
pub struct Segments {
    map: SegmentMap,
    geom: std::sync::Arc<Geometry>,
    regions: u64,
    s: u32,
    b: u32,
    seq: u64,
    staging: u64,
    segments_rewritten: u64,
    blocks_rewritten: u64,
    blocks_read: u64,
    flushes_over_one_segment: u64,
    recoveries_redone: u64,
}

impl Segments {
    fn new(p: &Params, g: &Geometry) -> SimResult<Segments> {
        let Layout::Wave { region, .. } = g.layout() else {
            return Err(SimError::Config("hwsr needs a wave layout".into()));
        };
        let b = p.u64_at_least("hwsr", "block_sectors", 1)?;
        let spt = g.max_sectors_per_track() as u64;
        if g.logical_tracks() > 0
            && (0..g.tracks()).any(|t| {
                let n = g.sectors_in(crate::units::Track(t)) as u64;
                n != 0 && n != spt
            })
        {
            return Err(SimError::Config(
                "hwsr's address formulas need tracks of one size (no zone table)".into(),
            ));
        }
        let map = SegmentMap::new(spt, b, region)?;
        let regions = g.wave_regions();
        if regions < 2 {
            return Err(SimError::Config(format!(
                "hwsr needs at least two regions (one holds the scratch segment); the drive has {regions}"
            )));
        }
        Ok(Segments {
            map,
            geom: std::sync::Arc::new(g.clone()),
            regions,
            s: region as u32,
            b: b as u32,
            seq: 1,
            staging: 0,
            segments_rewritten: 0,
            blocks_rewritten: 0,
            blocks_read: 0,
            flushes_over_one_segment: 0,
            recoveries_redone: 0,
        })
    }

    /// Where block `idx` of global segment `seg` lies.
    fn at(&self, seg: u64, idx: u32) -> PhysAddr {
        let n = self.map.segments_per_region();
        let (r, s) = (seg / n, seg % n);
        let t = self
            .geom
            .wave_track(r, self.map.track_in_region(r, idx as u64));
        PhysAddr {
            track: t,
            sector: (s * self.b as u64) as u32,
        }
    }

    /// The scratch segment: segment 0 of the last region.
    fn pad_seg(&self) -> u64 {
        (self.regions - 1) * self.map.segments_per_region()
    }

    /// The (region, segment) a physical block address belongs to.
    fn segment_of(&self, at: PhysAddr) -> (u64, u64) {
        let Layout::Wave { region, kappa } = self.geom.layout() else {
            unreachable!()
        };
        let unit = 2 * region + kappa;
        let r = at.track.0 / unit * 2 + u64::from(at.track.0 % unit >= region);
        (r, at.sector as u64 / self.b as u64)
    }

    fn write_home(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        seg: u64,
        idx: u32,
        data: &[Token],
        tagged: bool,
    ) -> SimResult<()> {
        let at = self.at(seg, idx);
        if tagged {
            let mut words = dev.meta_words(4);
            words.extend([HOME_TAG, seg, idx as u64, self.seq]);
            dev.write_meta(cause, at, self.b, data, words)?;
        } else {
            dev.write(cause, at, self.b, data)?;
        }
        Ok(())
    }
}

impl Backend for Segments {
    fn blocks_per_segment(&self) -> u32 {
        self.s
    }

    fn span(&self, lo: u32) -> Option<std::ops::Range<u32>> {
        Some(lo..self.s)
    }

    fn read(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let end = lba.0 + n.0;
        let b = self.b as u64;
        let mut cur = lba.0;
        while cur < end {
            let a = self.map.split(cur);
            let take = (b - a.offset).min(end - cur);
            let seg = cur / self.map.segment_sectors();
            let mut at = self.at(seg, a.block as u32);
            at.sector += a.offset as u32;
            dev.read(cause, at, take as u32, out)?;
            cur += take;
        }
        Ok(())
    }

    fn flush(&mut self, dev: &mut Device, seg: u64, images: &mut [BlockImage]) -> SimResult<()> {
        let b = self.b;
        let carry = dev.carries_data();
        // Read-merge: what the buffer does not hold comes from the disk.
        for im in images.iter_mut() {
            if im.valid.covers(0, b) {
                continue;
            }
            let mut disk = vec![];
            dev.read(Cause::Rmw, self.at(seg, im.idx), b, &mut disk)?;
            self.blocks_read += 1;
            if carry {
                for i in 0..b {
                    if !im.valid.has(i) {
                        im.data[i as usize] = disk[i as usize];
                    }
                }
            }
        }
        let (lo, len) = (images[0].idx as u64, images.len() as u64);
        let persistent = dev.side(SideKind::Memory).is_some_and(|m| m.persistent());
        // Save the image before endangering anything.
        if persistent {
            for (k, im) in images.iter().enumerate() {
                let words = [STAGE_TAG, seg, im.idx as u64, self.seq, lo, len];
                dev.side_write(
                    SideKind::Memory,
                    Cause::Backup,
                    self.staging + k as u64,
                    0,
                    b,
                    &im.data,
                    &words,
                )?;
            }
        } else {
            let pad = self.pad_seg();
            for (k, im) in images.iter().enumerate() {
                let at = self.at(pad, k as u32);
                let mut words = dev.meta_words(6);
                words.extend([PAD_TAG, seg, lo, self.seq, k as u64, len]);
                dev.write_meta(Cause::Backup, at, b, &im.data, words)?;
            }
            // The saved image must be on the media before the rewrite
            // endangers the segment (a drive's cache may reorder them).
            dev.flush()?;
        }
        // Whether the blocks lie in more than one segment (no set of them per flush).
        let (mut first, mut over_one) = (None, false);
        for im in images.iter() {
            let cause = if im.dirty { Cause::Destage } else { Cause::Rmw };
            let s = self.segment_of(self.at(seg, im.idx));
            over_one |= *first.get_or_insert(s) != s;
            self.write_home(dev, cause, seg, im.idx, &im.data, !persistent)?;
        }
        if persistent {
            // The rewrite must be on the media before its staged copy goes.
            dev.flush()?;
            for k in 0..len {
                dev.side_discard(SideKind::Memory, self.staging + k);
            }
        }
        self.seq += 1;
        self.segments_rewritten += 1;
        self.blocks_rewritten += len;
        if over_one {
            self.flushes_over_one_segment += 1;
        }
        Ok(())
    }

    fn staging_slots(&self) -> u64 {
        self.s as u64
    }

    fn set_staging(&mut self, first: u64) {
        self.staging = first;
    }

    fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }

    fn recover(&mut self, dev: &mut Device) -> SimResult<u64> {
        let b = self.b;
        let mut max_seq = 0;
        if dev.side(SideKind::Memory).is_some_and(|m| m.persistent()) {
            // A complete staged image is rewritten (idempotent); an incomplete one is dropped.
            let m = dev.side(SideKind::Memory).unwrap();
            let mut found: Vec<(u64, Vec<u64>)> = vec![];
            for k in 0..self.s as u64 {
                if let Some(sl) = m.slot(self.staging + k) {
                    if sl.words.len() == 6 && sl.words[0] == STAGE_TAG {
                        found.push((k, sl.words.clone()));
                    }
                }
            }
            if let Some(top) = found.iter().map(|f| f.1[3]).max() {
                max_seq = top;
                let set: Vec<_> = found.iter().filter(|f| f.1[3] == top).collect();
                let len = set[0].1[5];
                if set.len() as u64 == len && set.iter().all(|f| f.1[5] == len) {
                    self.seq = top;
                    self.recoveries_redone += 1;
                    for f in &set {
                        let mut data = vec![];
                        dev.side_read(
                            SideKind::Memory,
                            Cause::Recovery,
                            self.staging + f.0,
                            0,
                            b,
                            &mut data,
                        )?;
                        self.write_home(dev, Cause::Recovery, f.1[1], f.1[2] as u32, &data, false)?;
                    }
                }
            }
            for k in 0..self.s as u64 {
                dev.side_discard(SideKind::Memory, self.staging + k);
            }
        } else {
            // The scratch segment: a complete image whose home blocks do not
            // all carry its sequence number (or a later one) is rewritten.
            let pad = self.pad_seg();
            let mut recs: Vec<(u64, Vec<u64>)> = vec![];
            for k in 0..self.s {
                let at = self.at(pad, k);
                for r in dev.meta_records(at.track) {
                    if r.sector == at.sector
                        && r.words.len() == 6
                        && r.words[0] == PAD_TAG
                        && r.words[4] == k as u64
                    {
                        recs.push((k as u64, r.words));
                    }
                }
            }
            if let Some(top) = recs.iter().map(|r| r.1[3]).max() {
                max_seq = top;
                let set: Vec<_> = recs.iter().filter(|r| r.1[3] == top).collect();
                let (seg, lo, len) = (set[0].1[1], set[0].1[2], set[0].1[5]);
                let complete = (0..len).all(|k| set.iter().any(|r| r.0 == k));
                if complete {
                    let done = (lo..lo + len).all(|idx| {
                        let at = self.at(seg, idx as u32);
                        dev.meta_records(at.track).iter().any(|r| {
                            r.sector == at.sector
                                && r.words.len() == 4
                                && r.words[0] == HOME_TAG
                                && r.words[1] == seg
                                && r.words[2] == idx
                                && r.words[3] >= top
                        })
                    });
                    // Recovery reads the scratch segment to learn this.
                    let mut images = vec![];
                    for k in 0..len {
                        let mut d = vec![];
                        dev.read(Cause::Recovery, self.at(pad, k as u32), b, &mut d)?;
                        images.push(d);
                    }
                    if !done {
                        self.seq = top;
                        self.recoveries_redone += 1;
                        for (k, d) in images.iter().enumerate() {
                            self.write_home(
                                dev,
                                Cause::Recovery,
                                seg,
                                (lo + k as u64) as u32,
                                d,
                                true,
                            )?;
                        }
                    }
                }
            }
        }
        self.seq = max_seq + 1;
        Ok(max_seq)
    }

    fn host_capacity(&self, _geom: &Geometry) -> Sectors {
        Sectors((self.regions - 1) * self.map.region_sectors())
    }

    fn supports_prefill(&self) -> bool {
        false
    }

    fn series_gauges(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("segments_rewritten", self.segments_rewritten as f64));
    }

    fn report(&self, r: &mut LayerReport) {
        r.insert("segments_rewritten".into(), self.segments_rewritten as f64);
        r.insert("blocks_rewritten".into(), self.blocks_rewritten as f64);
        r.insert("blocks_read_for_merge".into(), self.blocks_read as f64);
        r.insert(
            "flushes_over_one_segment".into(),
            self.flushes_over_one_segment as f64,
        );
        r.insert(
            "rewrites_finished_by_recovery".into(),
            self.recoveries_redone as f64,
        );
    }
}
