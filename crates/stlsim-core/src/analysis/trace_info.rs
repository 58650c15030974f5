//! `stlsim trace-info`: what a trace holds, in one pass and without
//! simulating: requests, read/write mix, request sizes, address span,
//! duration, devices, (given a drive) the tracks its writes touch, and the
//! response times the trace measured, if it has them.

use crate::drive::DriveConfig;
use crate::error::SimResult;
use crate::metrics::{LatencyHistogram, LatencySummary};
use crate::trace::open::open_selection;
use crate::trace::{Op, TraceSpec};
use crate::units::{Lba, Sectors};
use std::collections::{BTreeMap, HashSet};

/// The block of the write statistics (paper 004's: 4 KiB).
const BLOCK: u64 = 4096;
/// 4 KiB blocks in a 256 MiB zone.
const ZONE_BLOCKS: u64 = (256 << 20) / BLOCK;

/// The most distinct devices listed (a trace with more lists the first).
const MAX_DEVICES: usize = 4096;

/// What `stlsim trace-info` reports of a trace (see the module comment).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TraceInfo {
    /// The format read (detected or named).
    pub format: String,
    /// Requests (after `disk`, `start`, `limit`), zero-length ones included.
    pub requests: u64,
    /// Reads and writes among them.
    pub reads: u64,
    /// Write requests among `requests`.
    pub writes: u64,
    /// Zero-length requests (a replay skips them).
    pub empty: u64,
    /// Bytes read and written.
    pub read_bytes: u128,
    /// Bytes the write requests ask for (summed lengths, overlaps counted twice).
    pub write_bytes: u128,
    /// Requests by size: the smallest power of two of bytes at least as large
    /// (`4096`: 2,049 to 4,096 bytes), as (bytes, requests).
    pub sizes: Vec<(u64, u64)>,
    /// Lowest byte offset and highest end of any request.
    pub first_byte: Option<u64>,
    /// Highest end (exclusive) of any request.
    pub end_byte: Option<u64>,
    /// First and last timestamps, ns as recorded.
    pub first_ns: Option<u64>,
    /// Last timestamp, ns.
    pub last_ns: Option<u64>,
    /// Requests per device, for formats with devices (at most 4,096 listed).
    pub devices: BTreeMap<u64, u64>,
    /// Whether more devices than listed were seen.
    pub devices_truncated: bool,
    /// 4 KiB blocks the writes touch, counted once per write (paper 004
    /// Table 3's statistics count in these blocks).
    pub write_blocks: u64,
    /// Those that update a block an earlier write in the trace touched.
    pub updated_blocks: u64,
    /// Distinct 4 KiB blocks written (the write footprint).
    pub write_footprint_blocks: u64,
    /// Distinct 256 MiB regions written (a host-managed drive's zones:
    /// Table 3's "write range (zone)").
    pub write_zones: u64,
    /// With a drive: distinct logical tracks the writes touch.
    pub write_tracks: Option<u64>,
    /// With a drive: writes lying beyond its capacity (not counted in tracks).
    pub writes_beyond: Option<u64>,
    /// Records skipped for an unknown operation (with `skip_unknown`).
    pub unknown_skipped: u64,
    /// The response times the trace measured (DiskSim validate, MSR,
    /// blkparse with pairing, a `.stlt` made from them), over the requests
    /// that have one (`count` of them; HDR histogram, 3 significant
    /// digits); `None` when no request has one.
    pub measured: Option<LatencySummary>,
    /// Requests without a measured response, when some have one (blkparse:
    /// merged, or never completed within the pairing window or the trace).
    pub measured_missing: u64,
    /// blkparse with pairing: completions that matched no request (in the
    /// whole file read, before `disk`, `start` and `limit`).
    pub unpaired_completions: u64,
}

/// Read `spec` once and sum up what it holds; `drive` (if given) maps the
/// writes to its tracks.
pub fn trace_info(spec: &TraceSpec, drive: Option<&DriveConfig>) -> SimResult<TraceInfo> {
    let geom = drive.map(DriveConfig::geometry).transpose()?;
    let (format, mut sel) = open_selection(spec)?;
    let mut info = TraceInfo {
        format: format.name().to_string(),
        ..TraceInfo::default()
    };
    let mut sizes: BTreeMap<u64, u64> = BTreeMap::new();
    let mut tracks: HashSet<u64> = HashSet::new();
    let mut beyond = 0u64;
    let mut measured = LatencyHistogram::default();
    let mut blocks: rustc_hash::FxHashSet<u64> = Default::default();
    let mut zones: rustc_hash::FxHashSet<u64> = Default::default();
    while let Some((rec, disk)) = sel.next_record()? {
        info.requests += 1;
        if let Some(m) = sel.measured() {
            measured.record(m);
        }
        let len = rec.len.0;
        let end = rec.offset.0 + len; // checked by the selection
        match rec.op {
            Op::Read => {
                info.reads += 1;
                info.read_bytes += u128::from(len);
            }
            Op::Write => {
                info.writes += 1;
                info.write_bytes += u128::from(len);
                for b in rec.offset.0 / BLOCK..end.div_ceil(BLOCK) {
                    info.write_blocks += 1;
                    if !blocks.insert(b) {
                        info.updated_blocks += 1;
                    }
                    zones.insert(b / ZONE_BLOCKS);
                }
            }
        }
        if len == 0 {
            info.empty += 1;
        }
        // Sizes above 2^63 bytes have no power of two in 64 bits: their
        // bucket is "up to 2^64 - 1" (a wrapped 0 filed them under "<= 0 B").
        let bucket = len.max(1).checked_next_power_of_two().unwrap_or(u64::MAX);
        *sizes.entry(bucket).or_default() += 1;
        info.first_byte = Some(
            info.first_byte
                .map_or(rec.offset.0, |b| b.min(rec.offset.0)),
        );
        info.end_byte = Some(info.end_byte.map_or(end, |b| b.max(end)));
        info.first_ns = Some(info.first_ns.map_or(rec.time.0, |t| t.min(rec.time.0)));
        info.last_ns = Some(info.last_ns.map_or(rec.time.0, |t| t.max(rec.time.0)));
        if let Some(d) = disk {
            if info.devices.len() < MAX_DEVICES || info.devices.contains_key(&d) {
                *info.devices.entry(d).or_default() += 1;
            } else {
                info.devices_truncated = true;
            }
        }
        if let (Some(g), Op::Write) = (&geom, rec.op) {
            if len > 0 {
                let sb = g.sector_bytes() as u64;
                let lba = rec.offset.0 / sb;
                let n = end.div_ceil(sb) - lba;
                if lba + n > g.capacity().0 {
                    beyond += 1;
                } else {
                    g.for_home_extents(Lba(lba), Sectors(n), |_, _, l| {
                        tracks.insert(g.logical_track_of(l));
                    });
                }
            }
        }
    }
    info.sizes = sizes.into_iter().collect();
    info.write_footprint_blocks = blocks.len() as u64;
    info.write_zones = zones.len() as u64;
    if measured.count() > 0 {
        info.measured = Some(measured.summary());
        info.measured_missing = info.requests - measured.count();
    }
    info.unpaired_completions = sel.unpaired_completions();
    if geom.is_some() {
        info.write_tracks = Some(tracks.len() as u64);
        info.writes_beyond = Some(beyond);
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_util::*;

    #[test]
    fn sums_up_a_real_trace() {
        let i = trace_info(&spec(&data("wdev_3.csv")), None).unwrap();
        assert_eq!(
            (i.format.as_str(), i.requests, i.reads, i.writes),
            ("msr", 682, 11, 671)
        );
        assert_eq!(i.sizes.iter().map(|s| s.1).sum::<u64>(), 682);
        assert!(
            i.first_byte.unwrap() < i.end_byte.unwrap()
                && i.first_ns.unwrap() <= i.last_ns.unwrap()
        );
        assert_eq!(i.devices.values().sum::<u64>(), 682);
        assert_eq!(i.write_tracks, None);
        // Paper 004 Table 3's statistics, in 4 KiB blocks (checked by hand
        // with a ten-line script over the CSV).
        assert_eq!(
            (
                i.write_blocks,
                i.updated_blocks,
                i.write_footprint_blocks,
                i.write_zones
            ),
            (1401, 1268, 133, 5)
        );
        // MSR's ResponseTime column: every request has one.
        assert_eq!(
            (i.measured.as_ref().map(|m| m.count), i.measured_missing),
            (Some(682), 0)
        );
    }

    #[test]
    fn sums_up_the_measured_response_times() {
        // DiskSim's HP C3323A validation trace: 9,074 requests, SERVICE
        // averaging 15.765 ms, at most 57.456 ms.
        let i = trace_info(&spec(&data("disksim/hp_c3323a.trace")), None).unwrap();
        let m = i.measured.unwrap();
        assert_eq!(
            (m.count, i.measured_missing, i.unpaired_completions),
            (9_074, 0, 0)
        );
        assert!((m.mean_ms - 15.7649).abs() < 1e-3, "{m:?}");
        assert!((m.max_ms - 57.456).abs() < 0.06, "{m:?}");
        assert!(
            m.p50_ms > 5.0 && m.p50_ms < m.p99_ms && m.p99_ms <= m.max_ms,
            "{m:?}"
        );
        // blkparse with pairing: most Q events were merged and have none.
        let mut s = spec(&data("blktrace.txt.gz"));
        s.pair = true;
        let i = trace_info(&s, None).unwrap();
        let m = i.measured.unwrap();
        assert_eq!(m.count + i.measured_missing, 15_524);
        assert!(
            m.count > 50 && i.unpaired_completions < 171,
            "{m:?} {}",
            i.unpaired_completions
        );
    }

    #[test]
    fn a_request_past_2_63_bytes_is_filed_under_the_largest_bucket() {
        let big = u64::MAX - 4095;
        let text = format!("1,h,0,Read,0,{big},0\n2,h,0,Read,0,4096,0\n");
        let p = write_temp("info-big", "big.csv", text.as_bytes());
        let i = trace_info(&spec(&p), None).unwrap();
        assert_eq!(i.sizes, vec![(4096, 1), (u64::MAX, 1)]);
    }

    #[test]
    fn counts_the_tracks_writes_touch() {
        // 2,000 tracks of 100 sectors of 4 KiB: 800 MiB.
        let drive = DriveConfig {
            sector_bytes: 4096,
            track_bytes: 100 * 4096,
            tracks: Some(2000),
            capacity_gib: None,
            ..DriveConfig::default()
        };
        // Generic CSV: offsets and sizes in 512-byte units. Writes to sectors
        // 0, 0, 1-2 (track 0), 100 (track 1); a read; a write past the end.
        let text = "0,w,0,8\n1,w,0,8\n2,w,8,16\n3,w,800,8\n4,r,1600,8\n5,w,100000000,8\n";
        let p = write_temp("info", "t.txt", text.as_bytes());
        let mut s = spec(&p);
        s.format = Some(crate::trace::Format::Csv);
        let i = trace_info(&s, Some(&drive)).unwrap();
        assert_eq!((i.requests, i.writes, i.reads), (6, 5, 1));
        assert_eq!((i.write_tracks, i.writes_beyond), (Some(2), Some(1)));
        assert_eq!(i.sizes, vec![(4096, 5), (8192, 1)]);
        assert_eq!((i.first_ns, i.last_ns), (Some(0), Some(5_000_000_000)));
        assert!(i.measured.is_none());
    }
}
