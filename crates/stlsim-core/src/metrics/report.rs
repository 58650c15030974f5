//! The structured report of a run (serialised to JSON for the front end).
//! It holds only simulated quantities, so the same inputs give a
//! byte-identical report.

use super::{HostMetrics, LatencySummary};
use crate::device::{Cause, Device};
use crate::engine::oracle::Oracle;
use crate::engine::{HostCounts, Mode, RunConfig};
use crate::geometry::Layout;
use crate::layers::{Layer, LayerEntry, LayerReport, Params};
use serde::Serialize;
use std::collections::BTreeMap;

/// Physical work done for one cause.
#[derive(Clone, Debug, Serialize)]
pub struct CauseRow {
    /// The cause.
    pub cause: &'static str,
    /// Read operations.
    pub read_ops: u64,
    /// Sectors read.
    pub read_sectors: u64,
    /// Write operations.
    pub write_ops: u64,
    /// Sectors written.
    pub write_sectors: u64,
    /// Device time spent, seconds.
    pub busy_s: f64,
    /// Operations that moved the head.
    pub seeks: u64,
}

/// The drive as run.
#[derive(Clone, Debug, Serialize)]
pub struct DriveSummary {
    /// Drive name.
    pub name: String,
    /// Layout kind the layer ran on.
    pub layout: String,
    /// Bytes per sector.
    pub sector_bytes: u32,
    /// Physical tracks.
    pub tracks: u64,
    /// Host capacity in bytes.
    pub capacity_bytes: u64,
    /// Rotation time, ms.
    pub rotation_ms: f64,
    /// Rotation model.
    pub rotation_model: String,
    /// Write cache size in bytes (0: off).
    pub write_cache_bytes: u64,
}

/// Device-side figures.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceSummary {
    /// Per-cause rows (causes with no work left out).
    pub by_cause: Vec<CauseRow>,
    /// Total device busy time, seconds.
    pub busy_s: f64,
    /// Physical reads.
    pub read_ops: u64,
    /// Physical writes.
    pub write_ops: u64,
    /// Sectors read from the medium.
    pub media_read_sectors: u64,
    /// Sectors written to the medium.
    pub media_write_sectors: u64,
    /// Head movements.
    pub seeks: u64,
}

/// Verification figures.
#[derive(Clone, Debug, Serialize)]
pub struct VerifySummary {
    /// Whether verification was on.
    pub enabled: bool,
    /// Sectors checked on host reads.
    pub read_blocks_checked: u64,
    /// Sectors checked by scans (final and post-crash).
    pub scan_blocks_checked: u64,
    /// Mismatches (a run with one fails, so a finished report always says 0).
    pub mismatches: u64,
}

/// The full run report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Layer name.
    pub layer: String,
    /// Resolved layer parameters.
    pub params: BTreeMap<String, serde_json::Value>,
    /// Trace path.
    pub trace: String,
    /// Replay mode.
    pub mode: String,
    /// Queue depth (queue mode).
    pub queue_depth: u64,
    /// Whether the run reached the end of the trace.
    pub finished: bool,
    /// The drive.
    pub drive: DriveSummary,
    /// Host counts.
    pub host: HostCounts,
    /// Latency summaries: all, read, write.
    pub latency: BTreeMap<&'static str, LatencySummary>,
    /// Device figures.
    pub device: DeviceSummary,
    /// Media sectors written / sectors the layer was asked to store.
    pub waf: f64,
    /// Physical operations / host requests.
    pub io_amplification: f64,
    /// Time from the first issue to the last device activity, seconds.
    pub simulated_s: f64,
    /// Fraction of the simulated time the device was busy.
    pub utilisation: f64,
    /// Host requests per simulated second.
    pub iops: f64,
    /// Host MB (10^6 bytes) per simulated second.
    pub throughput_mb_s: f64,
    /// Issue-time disparity at the end of the run, seconds.
    pub final_disparity_s: f64,
    /// Largest issue-time disparity, seconds.
    pub max_disparity_s: f64,
    /// Power losses injected.
    pub crashes: u64,
    /// Power losses by the cause of the physical operation they interrupted
    /// (`between-requests` for `crash_after`, `recovery` for a crash during recovery).
    pub crashes_during: BTreeMap<&'static str, u64>,
    /// The layer's own counters and gauges.
    pub layer_counters: LayerReport,
    /// Verification.
    pub verification: VerifySummary,
}

/// What the report is built from.
pub struct Inputs<'a> {
    pub(crate) cfg: &'a RunConfig,
    pub(crate) entry: &'a LayerEntry,
    pub(crate) params: &'a Params,
    pub(crate) dev: &'a Device,
    pub(crate) layer: &'a dyn Layer,
    pub(crate) past_counters: &'a LayerReport,
    pub(crate) crashes_during: &'a BTreeMap<&'static str, u64>,
    pub(crate) host: &'a HostCounts,
    pub(crate) metrics: &'a HostMetrics,
    pub(crate) oracle: Option<&'a Oracle>,
    pub(crate) crashes: u64,
    pub(crate) cache_sectors: u64,
    pub(crate) finished: bool,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Assemble the report.
pub fn build(i: Inputs) -> Report {
    let dev = i.dev;
    let g = dev.geometry();
    let mut by_cause = vec![];
    for (k, c) in Cause::ALL.iter().enumerate() {
        let r = dev.read_counts()[k];
        let w = dev.write_counts()[k];
        if r.ops + w.ops == 0 {
            continue;
        }
        by_cause.push(CauseRow {
            cause: c.name(),
            read_ops: r.ops,
            read_sectors: r.sectors,
            write_ops: w.ops,
            write_sectors: w.sectors,
            busy_s: (r.busy + w.busy).as_secs(),
            seeks: r.seeks + w.seeks,
        });
    }
    let (rt, wt) = dev.totals();
    let busy = (rt.busy + wt.busy).as_secs();
    let simulated = dev.now().as_secs().max(i.metrics.series.issue_s.last().copied().unwrap_or(0.0));
    let layout = match g.layout() {
        Layout::Cmr => "cmr",
        Layout::Smr { .. } => "smr",
        Layout::Imr { .. } => "imr",
        Layout::Zoned { .. } => "zoned",
    };
    let mut latency = BTreeMap::new();
    latency.insert("all", i.metrics.all.summary());
    latency.insert("read", i.metrics.reads.summary());
    latency.insert("write", i.metrics.writes.summary());
    let host_bytes = (i.host.read_sectors + i.host.write_sectors) as f64 * g.sector_bytes() as f64;
    Report {
        layer: i.entry.name.to_string(),
        params: i.params.values().clone(),
        trace: i.cfg.trace.path.clone(),
        mode: match i.cfg.replay.mode {
            Mode::Queue => "queue",
            Mode::FlatOut => "flat-out",
            Mode::Scaled => "scaled",
        }
        .into(),
        queue_depth: match i.cfg.replay.mode {
            Mode::Queue => i.cfg.replay.queue_depth,
            Mode::FlatOut => 1,
            Mode::Scaled => 0,
        },
        finished: i.finished,
        drive: DriveSummary {
            name: i.cfg.drive.name.clone(),
            layout: layout.into(),
            sector_bytes: g.sector_bytes(),
            tracks: g.tracks(),
            capacity_bytes: i.layer.host_capacity(g).0 * g.sector_bytes() as u64,
            rotation_ms: dev.mechanics().rotation_time().as_ms(),
            rotation_model: format!("{:?}", dev.mechanics().rotation()).to_lowercase(),
            write_cache_bytes: i.cache_sectors * g.sector_bytes() as u64,
        },
        host: i.host.clone(),
        latency,
        device: DeviceSummary {
            by_cause,
            busy_s: busy,
            read_ops: rt.ops,
            write_ops: wt.ops,
            media_read_sectors: rt.sectors,
            media_write_sectors: wt.sectors,
            seeks: rt.seeks + wt.seeks,
        },
        waf: ratio(wt.sectors as f64, i.host.layer_write_sectors as f64),
        io_amplification: ratio((rt.ops + wt.ops) as f64, i.host.requests as f64),
        simulated_s: simulated,
        utilisation: ratio(busy, simulated),
        iops: ratio(i.host.requests as f64, simulated),
        throughput_mb_s: ratio(host_bytes / 1e6, simulated),
        final_disparity_s: i.metrics.last_disparity.as_secs(),
        max_disparity_s: i.metrics.max_disparity.as_secs(),
        crashes: i.crashes,
        crashes_during: i.crashes_during.clone(),
        layer_counters: {
            let mut r = i.layer.report();
            for (k, v) in i.past_counters {
                *r.entry(k.clone()).or_insert(0.0) += v;
            }
            r
        },
        verification: VerifySummary {
            enabled: i.oracle.is_some(),
            read_blocks_checked: i.oracle.map(|o| o.read_blocks_checked).unwrap_or(0),
            scan_blocks_checked: i.oracle.map(|o| o.scan_blocks_checked).unwrap_or(0),
            mismatches: 0,
        },
    }
}
