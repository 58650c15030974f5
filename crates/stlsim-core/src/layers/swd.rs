//! In-place-update shingled write disks with static address mappings: He &
//! Du, "Novel Address Mappings for Shingled Write Disks" (paper 002),
//! section 4 (the mappings `1234`, `R(4123)`, `124R(3)`, `14R(23)`) and
//! section 5.1 (the *write amplifier*).
//!
//! The mapping is the drive's home map: the layer sets the `smr` layout's
//! `mapping` key from its `mapping` parameter ([`LayoutNeed::Shaped`]), so
//! the prefill, the oracle and every read and write use the same static
//! LBA-to-track order ([`crate::geometry::BandMap`]). The layer
//! itself is the write amplifier: a write to track k of a band first reads
//! what it would destroy downstream, writes k, then rewrites what it read,
//! in shingling order, every step a timed physical operation.
//!
//! Choices where the paper is silent:
//! * **Validity** is per track and comes from what the medium holds: a track
//!   holds data if it was prefilled or has been written since power-on. The
//!   cascade walks downstream from k: with a head W tracks wide, a track
//!   within W-1 of the last track written (k or a rescued track) is rescued
//!   if it holds data; the walk stops when no track within reach does, or
//!   at the band end. For W = 2 that is the paper's rule: stop at the first
//!   track holding no valid data.
//! * **What is rescued** (`rescue`): `span` (default) reads and rewrites only
//!   the sectors the write overlaps angularly (the same sectors on tracks of
//!   equal size), which is what the overlap physics destroys; `track` reads
//!   and rewrites the whole downstream tracks. Both issue the same number of
//!   requests, so the paper's WAR does not depend on it; response times do.
//! * **Crash safety** (`rescue_copy`, default on; the paper does not discuss
//!   it): before the write to k, the rescued sectors are copied to the
//!   drive's random-access zone (the `smr` layout's `random_access_tracks`,
//!   paper 002 Figure 1's "random access zone") with a header naming their
//!   home extents, the backup record of the IMR layers. After a power loss
//!   the newest complete record is restored home in shingling order. The
//!   record is cleared lazily, before the next write into its band that is
//!   not itself amplified (a new amplified update replaces it). With
//!   `rescue_copy = false` a crash between the write to k and the last
//!   rewrite loses the rescued data: the paper's model, not crash-safe.
//! * **After a power loss** the layer no longer knows which tracks hold data
//!   and treats every track as holding some (as the IMR layers do): safe,
//!   and it amplifies more until the run ends.
//! * **WAR** as the paper defines it (requests per host write, 1 = no
//!   amplification) counts the rescue reads and rewrites (cause `rmw`), not
//!   the rescue copy (cause `backup`), which the paper's model does not
//!   have; WAF counts every sector written.

use super::cmr::{for_home_pieces, read_home};
use super::imr::backup::{BackupRegion, Saved};
use super::{Layer, LayerEntry, LayerReport, LayoutNeed, ParamKind, ParamSpec, Params, WriteReq};
use crate::device::{Cause, Device};
use crate::drive::DriveConfig;
use crate::error::{config_err, SimResult};
use crate::geometry::{BandMap, Geometry, Layout, LayoutKind};
use crate::medium::Token;
use crate::track_bits::TrackBits;
use crate::units::{Lba, PhysAddr, Sectors, Track};

/// What the write amplifier reads and rewrites on each downstream track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rescue {
    /// The angularly overlapping sectors.
    Span,
    /// Every sector of each rescued downstream track, from sector 0 (`rescue = track`).
    Track,
}

/// An in-place-update shingled layer with the write amplifier.
#[derive(Debug)]
pub struct Swd {
    band: u64,
    width: u64,
    rescue: Rescue,
    written: TrackBits,
    backup: Option<BackupRegion>,
    /// Rescued extents of the update in progress, and their tokens.
    saved: Vec<Saved>,
    buf: Vec<Token>,
    counts: Counts,
}

#[derive(Debug, Default)]
struct Counts {
    write_requests: u64,
    amplified_requests: u64,
    amplified_pieces: u64,
    rescued_tracks: u64,
    rescue_reads: u64,
    rescue_writes: u64,
    rescued_sectors: u64,
}

macro_rules! swd_params {
    ($mapping:expr, $doc:expr) => {
        &[
            ParamSpec { name: "mapping", kind: ParamKind::Text, unit: "-", default: $mapping, doc: $doc },
            ParamSpec {
                name: "rescue",
                kind: ParamKind::Choice(&["span", "track"]),
                unit: "-",
                default: "span",
                doc: "what the write amplifier reads and rewrites downstream: the overlapped sectors (span) or whole tracks (track)",
            },
            ParamSpec {
                name: "rescue_copy",
                kind: ParamKind::Bool,
                unit: "-",
                default: "true",
                doc: "copy rescued sectors to the random-access zone before overwriting (crash-safe; the paper has no copy)",
            },
        ]
    };
}

const FIXED: &str =
    "the static band mapping in paper 002's notation (fixed by this preset; layer 'swd' takes any)";

/// Set the drive's band mapping from the layer's `mapping` parameter (empty: keep the drive's).
fn shape(p: &Params, d: &mut DriveConfig) -> SimResult<()> {
    let m = p.text("mapping");
    if !m.is_empty() {
        BandMap::parse(m, d.layout.band_tracks)?;
        d.layout.mapping = m.to_string();
    }
    Ok(())
}

/// The generic layer: any mapping (default: the drive's own).
pub static ENTRY: LayerEntry = LayerEntry {
    name: "swd",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "in-place-update shingled disk: a static band mapping (any order) and the write amplifier",
    paper: "002 sections 4 and 5.1",
    layout: LayoutNeed::Shaped(LayoutKind::Smr, shape),
    params: swd_params!(
        "",
        "the static band mapping in paper 002's notation, e.g. 1234, R(4123), 124R(3), 14R(23) (empty: the drive's layout.mapping)"
    ),
    build: |p, g| Ok(Box::new(Swd::new("swd", p, g)?)),
};

/// `1234`: the conventional mapping.
pub static ENTRY_1234: LayerEntry = LayerEntry {
    name: "swd-1234",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "in-place-update SWD, conventional mapping 1234 (tracks of each band in order)",
    paper: "002 section 3.2",
    layout: LayoutNeed::Shaped(LayoutKind::Smr, shape),
    params: swd_params!("1234", FIXED),
    build: |p, g| Ok(Box::new(Swd::new("swd-1234", p, g)?)),
};

/// `R(4123)`: every band's 4th track, then 1st, 2nd, 3rd, round-robin.
pub static ENTRY_R4123: LayerEntry = LayerEntry {
    name: "swd-r4123",
    runs_in: crate::layers::RunsIn::Drive,
    summary:
        "in-place-update SWD, mapping R(4123): 4th tracks of all bands first, then 1st, 2nd, 3rd",
    paper: "002 section 4.2",
    layout: LayoutNeed::Shaped(LayoutKind::Smr, shape),
    params: swd_params!("R(4123)", FIXED),
    build: |p, g| Ok(Box::new(Swd::new("swd-r4123", p, g)?)),
};

/// `124R(3)`: tracks 1, 2, 4 of each band in order, then the 3rd tracks.
pub static ENTRY_124R3: LayerEntry = LayerEntry {
    name: "swd-124r3",
    runs_in: crate::layers::RunsIn::Drive,
    summary:
        "in-place-update SWD, mapping 124R(3): tracks 1, 2, 4 band by band, then every 3rd track",
    paper: "002 section 4.3",
    layout: LayoutNeed::Shaped(LayoutKind::Smr, shape),
    params: swd_params!("124R(3)", FIXED),
    build: |p, g| Ok(Box::new(Swd::new("swd-124r3", p, g)?)),
};

/// `14R(23)`: tracks 1, 4 of each band in order, then the 2nd, then the 3rd tracks.
pub static ENTRY_14R23: LayerEntry = LayerEntry {
    name: "swd-14r23",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "in-place-update SWD, mapping 14R(23): tracks 1, 4 band by band, then every 2nd, then every 3rd track",
    paper: "002 section 4.4",
    layout: LayoutNeed::Shaped(LayoutKind::Smr, shape),
    params: swd_params!("14R(23)", FIXED),
    build: |p, g| Ok(Box::new(Swd::new("swd-14r23", p, g)?)),
};

impl Swd {
    /// Build for an `smr` geometry whose mapping the entry has set.
    pub fn new(name: &'static str, p: &Params, g: &Geometry) -> SimResult<Swd> {
        let Layout::Smr { band, width, .. } = g.layout() else {
            return config_err(format!("layer '{name}' needs an smr drive layout"));
        };
        // A preset's mapping is its declared default; only `swd` takes another.
        let fixed = [&ENTRY_1234, &ENTRY_R4123, &ENTRY_124R3, &ENTRY_14R23]
            .into_iter()
            .find(|e| e.name == name)
            .and_then(|e| e.params.iter().find(|q| q.name == "mapping"))
            .map(|q| q.default);
        if let Some(m) = fixed.filter(|&m| m != p.text("mapping")) {
            return config_err(format!(
                "layer '{name}' is mapping {m}; for mapping '{}' use layer 'swd' (--param mapping=...)",
                p.text("mapping")
            ));
        }
        let rescue = if p.choice("rescue") == "track" {
            Rescue::Track
        } else {
            Rescue::Span
        };
        let backup = if p.bool("rescue_copy") {
            let tracks = g.random_access_tracks();
            let room: u64 = tracks
                .iter()
                .map(|&t| g.sectors_in(t).saturating_sub(1) as u64)
                .sum();
            let need = (band - 1) * g.max_sectors_per_track() as u64;
            if room < need {
                let per = g.max_sectors_per_track().max(2) as u64 - 1;
                return config_err(format!(
                    "layer '{name}' copies up to {} downstream tracks ({need} sectors) to the random-access zone before \
                     overwriting them, but the drive's zone holds {room} (layout.random_access_tracks = {}); \
                     set random_access_tracks to at least {} or rescue_copy = false",
                    band - 1,
                    g.tracks() - g.bands() * (band + width - 1),
                    need.div_ceil(per) * width
                ));
            }
            Some(BackupRegion::new(tracks))
        } else {
            None
        };
        Ok(Swd {
            band,
            width,
            rescue,
            written: TrackBits::new(g.tracks()),
            backup,
            saved: vec![],
            buf: vec![],
            counts: Counts::default(),
        })
    }

    #[inline]
    fn holds_data(&self, dev: &Device, t: Track) -> bool {
        self.written.get(t) || dev.prefilled(t)
    }

    /// The downstream extents a write of `[sector, sector+count)` on `at`
    /// would destroy, in shingling order, into `self.saved`; returns the band.
    fn cascade(&mut self, dev: &Device, at: PhysAddr, count: u32) -> Option<u64> {
        self.saved.clear();
        let g = dev.geometry();
        let (b, p) = g.band_position(at.track)?;
        let (mut last, mut lo, mut hi) = (p as u64, at.sector, at.sector + count);
        let mut from = at.track;
        let mut q = p as u64 + 1;
        while q <= self.band && q < last + self.width {
            let t = g.band_track(b, q as u32);
            if self.holds_data(dev, t) {
                let (l, h) = match self.rescue {
                    Rescue::Track => (0, g.sectors_in(t)),
                    Rescue::Span => g.overlap_span(from, lo, hi - lo, t),
                };
                self.saved.push(Saved {
                    track: t,
                    sector: l,
                    count: h - l,
                });
                (last, lo, hi, from) = (q, l, h, t);
            }
            q += 1;
        }
        Some(b)
    }

    /// Write one home-track piece of a host write, amplified as needed.
    fn write_piece(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        data: &[Token],
    ) -> SimResult<bool> {
        let band = self.cascade(dev, at, count);
        if self.saved.is_empty() {
            if let Some(bk) = self.backup.as_mut() {
                // The live record restores extents of one band: stale once that band is written.
                let g = dev.geometry();
                if bk
                    .live()
                    .first()
                    .and_then(|s| g.band_position(s.track))
                    .map(|x| x.0)
                    == band
                    && band.is_some()
                {
                    bk.clear(dev, Cause::Backup)?;
                }
            }
            dev.write(cause, at, count, data)?;
            self.written.set(at.track);
            return Ok(false);
        }
        let carries = dev.carries_data();
        self.buf.clear();
        for s in &self.saved {
            dev.read(
                Cause::Rmw,
                PhysAddr {
                    track: s.track,
                    sector: s.sector,
                },
                s.count,
                &mut self.buf,
            )?;
            self.counts.rescue_reads += 1;
            self.counts.rescued_sectors += s.count as u64;
        }
        if let Some(bk) = self.backup.as_mut() {
            bk.save(dev, &self.saved, &self.buf)?;
        }
        dev.write(cause, at, count, data)?;
        self.written.set(at.track);
        let mut off = 0usize;
        for s in &self.saved {
            let chunk = if carries {
                &self.buf[off..off + s.count as usize]
            } else {
                &[][..]
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
            self.counts.rescue_writes += 1;
        }
        self.counts.rescued_tracks += self.saved.len() as u64;
        self.counts.amplified_pieces += 1;
        Ok(true)
    }
}

impl Layer for Swd {
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
        let geom = dev.geometry_arc();
        let mut amplified = false;
        let done = for_home_pieces(&geom, w, |at, count, data| {
            amplified |= self.write_piece(dev, w.cause, at, count, data)?;
            Ok(())
        });
        self.counts.write_requests += 1;
        self.counts.amplified_requests += amplified as u64;
        done
    }
    fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        self.written.set_all();
        match self.backup.as_mut() {
            Some(bk) => bk.recover(dev, 0),
            None => Ok(()),
        }
    }
    fn report(&self) -> LayerReport {
        let c = &self.counts;
        let mut r = LayerReport::new();
        r.insert("write_requests".into(), c.write_requests as f64);
        r.insert("amplified_requests".into(), c.amplified_requests as f64);
        r.insert("amplified_pieces".into(), c.amplified_pieces as f64);
        r.insert("rescued_tracks".into(), c.rescued_tracks as f64);
        r.insert("rescue_reads".into(), c.rescue_reads as f64);
        r.insert("rescue_writes".into(), c.rescue_writes as f64);
        r.insert("rescued_sectors".into(), c.rescued_sectors as f64);
        if let Some(bk) = &self.backup {
            r.insert("rescue_copies".into(), bk.records as f64);
            r.insert("rescue_copy_clears".into(), bk.clears as f64);
            r.insert("rescue_copy_restores".into(), bk.restored as f64);
        }
        r
    }
}

#[cfg(test)]
mod tests;
