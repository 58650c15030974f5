//! `hm-skylight`: the set-associative persistent buffer paper 004 section
//! 6.1 calls "Skylight" (after Aghayev & Desnoyers' Skylight measurements of
//! drive-managed SMR, its reference \[6\]): native zones are hashed onto
//! buffer zones; a buffer zone is appended to; when it is full, every native
//! zone it holds is written back and the buffer zone starts empty again.
//!
//! Choices where the paper is silent:
//! * **Buffer zones** [`buffer_zones`, 0 = auto]: the buffer is split into
//!   equal parts; auto takes as many 256 MiB zones as the buffer holds, and
//!   at least 4 (the 1 % rule gives buffers smaller than one zone for
//!   traces that touch under 100 GB).
//! * **Hash**: Fibonacci hashing of the native zone number, so neighbouring
//!   zones spread over the parts.
//! * **Updates** of a buffered block are appended like any write (the
//!   buffer zone is a log); the older copy is dead. They count as write hits.
//! * **Write-back order** in a full part: the part's native zones one at a
//!   time, lowest first.
//! * **Crash**: each part's fill pointer is rebuilt as one past its last
//!   live slot.

use super::{Buffer, Placement, Work, ZoneMap, COMMON_PARAMS};
use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, LayoutKind};
use crate::layers::{Layer, LayerEntry, LayerReport, LayoutNeed, ParamKind, ParamSpec, Params};

const PARAMS: [ParamSpec; 5] = [
    COMMON_PARAMS[0],
    COMMON_PARAMS[1],
    COMMON_PARAMS[2],
    COMMON_PARAMS[3],
    ParamSpec {
        name: "buffer_zones",
        kind: ParamKind::Int,
        unit: "parts",
        default: "0",
        doc: "parts the buffer is split into, native zones hashed onto them (0: the buffer's size in 256 MiB zones, at least 4)",
    },
];

/// The `hm-skylight` layer's entry in `layers::REGISTRY`: paper 004 section 6.1's
/// Skylight-style set-associative persistent buffer on a zoned drive.
pub static ENTRY: LayerEntry = LayerEntry {
    name: "hm-skylight",
    runs_in: crate::layers::RunsIn::Host,
    summary: "host-managed SMR: native zones hashed onto buffer zones, appended; a full buffer zone writes back every zone it holds",
    paper: "004 section 6.1 (Skylight-style set-associative buffer)",
    layout: LayoutNeed::Kind(LayoutKind::Zoned),
    params: &PARAMS,
    build: |p: &Params, g: &Geometry| -> SimResult<Box<dyn Layer>> {
        Ok(Box::new(super::BufferLayer::build("hm-skylight", p, g, make)?))
    },
};

fn make(p: &Params, z: &ZoneMap, slots: u64) -> SimResult<Box<dyn Placement>> {
    let parts = match p.u64("buffer_zones") {
        0 => (slots / z.zone_sectors).max(4).min(slots),
        k => k,
    };
    if parts > slots {
        return config_err(format!(
            "buffer_zones = {parts} is more than the buffer's {slots} blocks"
        ));
    }
    Ok(Box::new(Skylight::new(slots, parts)))
}

/// Fill pointers and live counts of the buffer's parts.
#[derive(Debug)]
pub struct Skylight {
    part_slots: u64,
    fill: Vec<u64>,
    live: Vec<u64>,
    /// A finished write-back's victim list, filled again for the next.
    spare: Vec<(u32, u32)>,
    /// Scratch of `demand`: (part, blocks).
    demand: std::cell::RefCell<Vec<(usize, u64)>>,
}

impl Skylight {
    /// `parts` equal parts of a buffer of `slots`.
    pub fn new(slots: u64, parts: u64) -> Skylight {
        Skylight {
            part_slots: slots / parts,
            fill: vec![0; parts as usize],
            live: vec![0; parts as usize],
            spare: vec![],
            demand: Default::default(),
        }
    }

    fn part_of(&self, nz: u64) -> usize {
        ((nz.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % self.fill.len() as u64) as usize
    }

    /// Blocks `ws` would add to each part, in a list reused between calls
    /// (no allocation per write).
    fn demand(&self, buf: &Buffer, ws: &[(u64, u64)]) -> std::cell::RefMut<'_, Vec<(usize, u64)>> {
        let mut d = self.demand.borrow_mut();
        d.clear();
        for &(l, n) in ws {
            for h in l..l + n {
                let p = self.part_of(buf.zones.split(h).0);
                match d.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, k)) => *k += 1,
                    None => d.push((p, 1)),
                }
            }
        }
        d
    }
}

impl Placement for Skylight {
    fn fits(&self, buf: &Buffer, ws: &[(u64, u64)]) -> bool {
        self.demand(buf, ws)
            .iter()
            .all(|&(p, k)| self.fill[p] + k <= self.part_slots)
    }
    fn place(
        &mut self,
        buf: &mut Buffer,
        lba: u64,
        n: u64,
        _first: bool,
        out: &mut Vec<(u32, u64)>,
    ) -> SimResult<u64> {
        for h in lba..lba + n {
            let p = self.part_of(buf.zones.split(h).0);
            if self.fill[p] == self.part_slots {
                return Ok(h - lba);
            }
            if buf.slot_of(h).is_some() || out.iter().any(|&(_, x)| x == h) {
                buf.counts.write_hits += 1;
            } else {
                self.live[p] += 1;
            }
            out.push(((p as u64 * self.part_slots + self.fill[p]) as u32, h));
            self.fill[p] += 1;
        }
        Ok(n)
    }
    fn next_work(
        &mut self,
        buf: &Buffer,
        _dev: &crate::device::Device,
        waiting: &[(u64, u64)],
    ) -> Work {
        // The parts short of room (decided before any is emptied below).
        let mut d = std::mem::take(&mut *self.demand(buf, waiting));
        d.retain(|&(p, k)| self.fill[p] + k > self.part_slots);
        let mut work = Work::None;
        for &(p, _) in d.iter() {
            let zone = buf
                .zones_buffered()
                .filter(|&nz| self.part_of(nz) == p)
                .min();
            match zone {
                Some(nz) => {
                    let mut victims = std::mem::take(&mut self.spare);
                    buf.zone_victims_into(nz, &mut victims);
                    work = Work::WriteBack(nz, victims);
                    break;
                }
                None => self.fill[p] = 0,
            }
        }
        *self.demand.borrow_mut() = d;
        work
    }
    fn recycle(&mut self, victims: Vec<(u32, u32)>) {
        self.spare = victims;
    }
    fn work_done(&mut self, buf: &Buffer, work: &Work) {
        if let Work::WriteBack(nz, victims) = work {
            let p = self.part_of(*nz);
            self.live[p] -= victims.len() as u64;
            if self.live[p] == 0 {
                self.fill[p] = 0;
            }
            let _ = buf;
        }
    }
    fn rebuild(&mut self, buf: &Buffer) {
        for p in 0..self.fill.len() {
            let base = p as u64 * self.part_slots;
            let used: Vec<u64> = (0..self.part_slots)
                .filter(|&i| buf.owner((base + i) as u32).is_some())
                .collect();
            self.fill[p] = used.last().map(|&i| i + 1).unwrap_or(0);
            self.live[p] = used.len() as u64;
        }
    }
    fn report(&self, r: &mut LayerReport) {
        r.insert("buffer_parts".into(), self.fill.len() as f64);
    }
}
