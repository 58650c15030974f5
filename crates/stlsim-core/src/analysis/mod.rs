//! Workload analysis, above the trace readers and the drive: which tracks a
//! trace writes, and when. Feeds the figures the IMR paper uses to explain
//! its results (track write counts of the hottest tracks, hottest tracks
//! with their neighbours, write frequency over time), computed by the front
//! end from these columns. [`trace_info`] is `stlsim trace-info`'s pass.

use crate::drive::DriveConfig;
use crate::error::{SimError, SimResult};
use crate::trace::{open_trace, Op, TraceSpec};
use crate::units::{Lba, Sectors};
use serde::Serialize;

pub mod imr_micro;
pub mod trace_info;

/// One row per (write request, home track it touches), as columns.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TrackWrites {
    /// 0-based index of the request in the (filtered) trace.
    pub request: Vec<u64>,
    /// Trace time from the first request, seconds.
    pub time_s: Vec<f64>,
    /// Logical track (LBA order) written.
    pub logical_track: Vec<u64>,
    /// Physical track written (the layout's home location).
    pub physical_track: Vec<u64>,
    /// Sectors written on that track.
    pub sectors: Vec<u32>,
    /// Total requests in the trace (reads included).
    pub requests: u64,
    /// Physical tracks of the drive.
    pub tracks: u64,
}

/// Map every write of a trace onto the home tracks of a drive.
pub fn track_writes(trace: &TraceSpec, drive: &DriveConfig, fold: bool) -> SimResult<TrackWrites> {
    let geom = drive.geometry()?;
    let mut r = open_trace(trace)?;
    let sb = geom.sector_bytes() as u64;
    let cap = geom.capacity().0;
    let mut out = TrackWrites {
        tracks: geom.tracks(),
        ..Default::default()
    };
    let mut base = None;
    let mut i = 0u64;
    while let Some(rec) = r.next_record()? {
        let idx = i;
        i += 1;
        if rec.op != Op::Write || rec.len.0 == 0 {
            continue;
        }
        let t0 = *base.get_or_insert(rec.time.0);
        let mut lba = rec.offset.0 / sb;
        let n = crate::trace::request_end(&rec, &trace.path)?.div_ceil(sb) - lba;
        if lba + n > cap {
            if !fold || n > cap {
                return Err(SimError::TraceFormat {
                    at: crate::error::Location {
                        file: trace.path.clone(),
                        line: rec.line,
                    },
                    msg: format!(
                        "request at byte offset {} lies beyond the drive's capacity",
                        rec.offset.0
                    ),
                });
            }
            lba %= cap;
            lba = lba.min(cap - n);
        }
        let time = rec.time.0.saturating_sub(t0) as f64 / 1e9;
        geom.for_home_extents(Lba(lba), Sectors(n), |at, count, l| {
            out.request.push(idx);
            out.time_s.push(time);
            out.logical_track.push(geom.logical_track_of(l));
            out.physical_track.push(at.track.0);
            out.sectors.push(count);
        });
    }
    out.requests = i;
    Ok(out)
}
