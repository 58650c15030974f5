//! The structured report of a run (serialised to JSON for the front end).
//! It holds only simulated quantities, so the same inputs give a
//! byte-identical report.

use crate::device::{Cause, Device};
use crate::engine::verifier::Verifier;
use crate::engine::{BackgroundCounts, HostCounts, Irregular, Mode, RunConfig};
use crate::geometry::Layout;
use crate::layers::{Layer, LayerEntry, LayerReport, Params};
use crate::medium::prefill::PrefillSpec;
use crate::metrics::{HostMetrics, LatencySummary, WafSeries};
use serde::Serialize;
use std::collections::BTreeMap;

/// Physical work done for one cause.
#[derive(Clone, Debug, Serialize)]
pub struct CauseRow {
    /// The cause's name (`host`, `rmw`, `gc`, ...).
    pub cause: &'static str,
    /// Read operations issued for it, each on one track (or one side-device access).
    pub read_ops: u64,
    /// Sectors those reads covered.
    pub read_sectors: u64,
    /// Write operations issued for it, each on one track (or one side-device access).
    pub write_ops: u64,
    /// Sectors those writes covered.
    pub write_sectors: u64,
    /// Device time spent, seconds.
    pub busy_s: f64,
    /// Operations that moved the head.
    pub seeks: u64,
}

/// The drive as run.
#[derive(Clone, Debug, Serialize)]
pub struct DriveSummary {
    /// The drive configuration's name: its preset's, or the user's.
    pub name: String,
    /// Layout kind the layer ran on.
    pub layout: String,
    /// Bytes per sector (512 or 4096 on real drives); the report's byte figures
    /// are sector counts times this.
    pub sector_bytes: u32,
    /// Physical tracks of the geometry, including those the layer reserves (the
    /// host sees `capacity_bytes`).
    pub tracks: u64,
    /// Host capacity in bytes.
    pub capacity_bytes: u64,
    /// Rotation time, ms.
    pub rotation_ms: f64,
    /// How rotational latency was modelled: `average` (half a turn per
    /// repositioning) or `angular` (the head's angle tracked).
    pub rotation_model: String,
    /// Write cache size in bytes (0: off).
    pub write_cache_bytes: u64,
    /// Areal-density gain over conventional recording (SMR: W*N/(N+W-1), paper 002 eq. 1).
    pub space_gain: f64,
    /// SMR: the band mapping in paper 002's notation (null for other layouts).
    pub mapping: Option<String>,
}

/// What the disk (and any device beside it) did: operations, sectors and
/// busy time, split by cause.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceSummary {
    /// Per-cause rows (causes with no work left out).
    pub by_cause: Vec<CauseRow>,
    /// Total device busy time, seconds.
    pub busy_s: f64,
    /// Physical read operations on the disk, all causes (side devices not counted).
    pub read_ops: u64,
    /// Physical write operations on the disk, all causes (side devices not counted).
    pub write_ops: u64,
    /// Sectors read from the medium.
    pub media_read_sectors: u64,
    /// Sectors written to the medium.
    pub media_write_sectors: u64,
    /// Disk operations that moved the head to another track.
    pub seeks: u64,
    /// Where time and bytes went, device by device (disk, memory buffer,
    /// SSD), for systems with devices beside the disk (empty otherwise; the
    /// other figures of this table are the disk's alone).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_device: Vec<DeviceRow>,
    /// Zone-management commands (host-managed drives only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_ops: Option<crate::medium::zones::ZoneOpCounts>,
    /// The drive's own cache and queue beneath a host-side layer, when on:
    /// writes absorbed, reads it served, flushes, destages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drive_cache: Option<crate::front_end::queued_cache::QueuedCacheCounts>,
}

/// The work of one device (the disk or one beside it), all causes summed.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceRow {
    /// `disk`, `memory` or `ssd`.
    pub device: &'static str,
    /// Read operations on this device.
    pub read_ops: u64,
    /// Bytes read (sectors times the disk's sector size).
    pub read_bytes: u64,
    /// Write operations on this device.
    pub write_ops: u64,
    /// Bytes written (sectors times the disk's sector size).
    pub write_bytes: u64,
    /// Time the device spent, seconds.
    pub busy_s: f64,
    /// Per-cause rows (causes with no work left out).
    pub by_cause: Vec<CauseRow>,
}

fn cause_rows(
    reads: &[crate::device::OpCounts],
    writes: &[crate::device::OpCounts],
) -> Vec<CauseRow> {
    let mut rows = vec![];
    for (k, c) in Cause::ALL.iter().enumerate() {
        let (r, w) = (reads[k], writes[k]);
        if r.ops + w.ops == 0 {
            continue;
        }
        rows.push(CauseRow {
            cause: c.name(),
            read_ops: r.ops,
            read_sectors: r.sectors,
            write_ops: w.ops,
            write_sectors: w.sectors,
            busy_s: (r.busy + w.busy).as_secs(),
            seeks: r.seeks + w.seeks,
        });
    }
    rows
}

fn device_rows(dev: &Device) -> Vec<DeviceRow> {
    use crate::side_device::SideKind;
    let sides: Vec<_> = SideKind::ALL.iter().filter_map(|&k| dev.side(k)).collect();
    if sides.is_empty() {
        return vec![];
    }
    let sb = dev.geometry().sector_bytes() as u64;
    let (rt, wt) = dev.totals();
    let mut rows = vec![DeviceRow {
        device: "disk",
        read_ops: rt.ops,
        read_bytes: rt.sectors * sb,
        write_ops: wt.ops,
        write_bytes: wt.sectors * sb,
        busy_s: (rt.busy + wt.busy).as_secs(),
        by_cause: cause_rows(dev.read_counts(), dev.write_counts()),
    }];
    for d in sides {
        let (r, w) = d.totals();
        rows.push(DeviceRow {
            device: d.kind().name(),
            read_ops: r.ops,
            read_bytes: r.sectors * sb,
            write_ops: w.ops,
            write_bytes: w.sectors * sb,
            busy_s: (r.busy + w.busy).as_secs(),
            by_cause: cause_rows(d.read_counts(), d.write_counts()),
        });
    }
    rows
}

/// What the verifier checked (all zero when the run did not verify).
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

/// The drive's starting state as run.
#[derive(Clone, Debug, Serialize)]
pub struct PrefillSummary {
    /// The fraction of the host capacity prefilled, or `"footprint"`.
    pub spec: PrefillSpec,
    /// Host LBAs below this started with data (absent for a footprint prefill).
    pub limit_sectors: Option<u64>,
    /// Physical tracks that started with data.
    pub tracks: u64,
    /// LBAs were folded into the prefilled range.
    pub fold_to_prefill: bool,
}

/// The full run report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The layer's registry name (`cmr`, `imr-rmw`, ...).
    pub layer: String,
    /// Every layer parameter as run: the user's values, checked, and the
    /// defaults for the rest.
    pub params: BTreeMap<String, serde_json::Value>,
    /// The trace file's path as given in the run configuration.
    pub trace: String,
    /// Replay mode: `queue`, `flat-out`, `scaled` or `closed`.
    pub mode: String,
    /// Queue depth (queue mode).
    pub queue_depth: u64,
    /// Whether the run reached the end of the trace.
    pub finished: bool,
    /// The drive as run: geometry, capacity, rotation, write cache.
    pub drive: DriveSummary,
    /// Host requests and sectors completed, and how the drive's caches served them.
    pub host: HostCounts,
    /// Latency summaries: all, read, write.
    pub latency: BTreeMap<&'static str, LatencySummary>,
    /// What the disk and side devices did, by cause.
    pub device: DeviceSummary,
    /// How full the drive was when the run started.
    pub prefill: PrefillSummary,
    /// The history that brought the drive to its start state, if the run had one.
    pub history: Option<crate::engine::history::HistorySummary>,
    /// Media sectors written / sectors the layer was asked to store (with
    /// the drive's write cache on, what the cache destaged: the WAF of the
    /// medium behind the cache).
    pub waf: f64,
    /// Media sectors written / sectors the host wrote: the cost per byte the
    /// host wrote, and the WAF papers report when their layers count host
    /// writes on arrival (paper 000). Equal to `waf` unless the drive's write
    /// cache absorbed (coalesced) some host writes.
    pub waf_per_host_sector: f64,
    /// Sectors written by background work (moves, cleaning) per sector the host wrote.
    pub moves_per_host_sector: f64,
    /// Write amplification ratio (paper 002): requests per host write, 1 +
    /// (read and write operations with cause `rmw`) / host writes completed;
    /// 1 means no write was amplified.
    pub war: f64,
    /// WAF broken down by cause group (host, rmw, backup, moves, metadata); the groups sum to `waf`.
    pub waf_by_group: BTreeMap<&'static str, f64>,
    /// WAF without the sectors written by background work (moves, cleaning), whatever their cause.
    pub waf_excluding_moves: f64,
    /// WAF over the second half of the run's host writes (null when the run has fewer than two WAF points).
    pub waf_steady: Option<f64>,
    /// Host writes per point of the WAF series.
    pub waf_every: u64,
    /// Intervals an interval-driven layer completed (null for other layers).
    pub intervals_completed: Option<u64>,
    /// Background work: stages run, aborted and postponed, and host time spent waiting behind them.
    pub background: BackgroundCounts,
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
    /// Power losses injected, those that struck during a recovery included.
    pub crashes: u64,
    /// Power losses by the cause of the physical operation they interrupted
    /// (`between-requests` for `crash_after`, `recovery` for a crash during recovery).
    pub crashes_during: BTreeMap<&'static str, u64>,
    /// Power losses that fell inside a stage of background work.
    pub crashes_in_stages: u64,
    /// Everything that silently changed the meaning of the run (empty: nothing).
    pub warnings: Vec<String>,
    /// The layer's own counters and gauges.
    pub layer_counters: LayerReport,
    /// What the verifier checked and found.
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
    pub(crate) crashes_in_stages: u64,
    pub(crate) host: &'a HostCounts,
    pub(crate) metrics: &'a HostMetrics,
    pub(crate) verifier: Option<&'a Verifier>,
    pub(crate) crashes: u64,
    pub(crate) cache_sectors: u64,
    pub(crate) finished: bool,
    pub(crate) background: BackgroundCounts,
    pub(crate) waf: &'a WafSeries,
    pub(crate) intervals: Option<u64>,
    pub(crate) irregular: &'a Irregular,
    pub(crate) prefill_tracks: u64,
    pub(crate) prefill_limit: u64,
    pub(crate) history: Option<&'a crate::engine::history::HistorySummary>,
}

/// Layers that complete fewer intervals than this get the not-steady-state warning.
pub const STEADY_INTERVALS: u64 = 10;

/// Everything that silently changed the meaning of a run, one sentence each.
fn warnings(i: &Inputs, ops: u64) -> Vec<String> {
    let mut w = vec![];
    if let Some(n) = i.intervals {
        if n < STEADY_INTERVALS {
            w.push(format!(
                "layer {} completed {n} interval(s), fewer than {STEADY_INTERVALS}: not steady state; moves amortised over too few intervals",
                i.entry.name
            ));
        }
    }
    let (host_w, stored) = (i.host.write_sectors, i.host.layer_write_sectors);
    if i.finished && host_w > 0 && stored * 2 < host_w {
        let media = i.dev.totals().1.sectors;
        let moves = if i.layer.needs().arrivals {
            format!(
                "; layer {} decided its moves on host writes as they arrived, most of which never reached the medium",
                i.entry.name
            )
        } else {
            String::new()
        };
        w.push(format!(
            "the drive's write cache absorbed {:.1} % of the host's write sectors (only {stored} of {host_w} reached the layer): WAF is {:.2} per sector the cache destaged but {:.3} per host sector written{moves}",
            100.0 * (1.0 - stored as f64 / host_w as f64),
            ratio(media as f64, stored as f64),
            ratio(media as f64, host_w as f64),
        ));
    }
    let x = i.irregular;
    if x.clamped > 0 {
        w.push(format!(
            "{} trace timestamp(s) went backwards and were replayed at the latest time seen",
            x.clamped
        ));
    }
    if x.folded > 0 {
        w.push(format!(
            "{} request(s) lay beyond the drive's capacity and were folded into it (fold)",
            x.folded
        ));
    }
    if x.folded_to_prefill > 0 {
        w.push(format!(
            "{} request(s) lay beyond the prefilled range and were folded into it (fold_to_prefill)",
            x.folded_to_prefill
        ));
    }
    if !x.timed && i.host.requests > 1 && i.cfg.replay.mode != Mode::FlatOut {
        w.push(format!(
            "the trace carries no times (every request at one instant, as in a fio version-2 iolog): {} mode issued the requests as fast as the queue allowed",
            i.cfg.replay.mode.name()
        ));
    }
    if x.unknown_skipped > 0 {
        w.push(format!(
            "{} trace record(s) whose operation was neither a read nor a write were skipped (skip_unknown)",
            x.unknown_skipped
        ));
    }
    let unmapped = i.cfg.drive.unmapped_zone_keys();
    if !unmapped.is_empty() {
        w.push(format!(
            "the drive's zones give {} (DiskSim spares / management area), which stlsim does not map: LBAs fill those sectors too, so later LBAs lie earlier on the disk than on the real drive",
            unmapped.join(", ")
        ));
    }
    if i.host.empty_skipped > 0 {
        w.push(format!(
            "{} zero-length trace record(s) were skipped",
            i.host.empty_skipped
        ));
    }
    if i.finished {
        let late: Vec<String> = i
            .cfg
            .crash_at_ops
            .iter()
            .filter(|&&p| p >= ops)
            .map(|p| p.to_string())
            .collect();
        if !late.is_empty() {
            w.push(format!(
                "crash point(s) at physical operation {} lie beyond the run's {ops} operations and never fired",
                late.join(", ")
            ));
        }
        let late: Vec<String> = i
            .cfg
            .crash_after
            .iter()
            .filter(|&&p| p > i.host.requests)
            .map(|p| p.to_string())
            .collect();
        if !late.is_empty() {
            w.push(format!(
                "crash point(s) after request {} lie beyond the run's {} requests and never fired",
                late.join(", "),
                i.host.requests
            ));
        }
    }
    w
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Assemble the report from the run's end state; only simulated quantities,
/// so the same inputs give the same report.
pub fn build(i: Inputs) -> Report {
    let dev = i.dev;
    let g = dev.geometry();
    let by_cause = cause_rows(dev.read_counts(), dev.write_counts());
    let (rt, wt) = dev.totals();
    let busy = (rt.busy + wt.busy).as_secs();
    let simulated = dev
        .elapsed()
        .as_secs()
        .max(i.metrics.series.issue_s.last().copied().unwrap_or(0.0));
    let layout = match g.layout() {
        Layout::Cmr => "cmr",
        Layout::Smr { .. } => "smr",
        Layout::Imr { .. } => "imr",
        Layout::Zoned { .. } => "zoned",
        Layout::Wave { .. } => "wave",
    };
    let mut latency = BTreeMap::new();
    latency.insert("all", i.metrics.all().summary());
    latency.insert("read", i.metrics.reads.summary());
    latency.insert("write", i.metrics.writes.summary());
    let host_bytes = (i.host.read_sectors + i.host.write_sectors) as f64 * g.sector_bytes() as f64;
    let stored = i.host.layer_write_sectors as f64;
    let mut waf_by_group: BTreeMap<&'static str, f64> =
        Cause::GROUPS.iter().map(|&g| (g, 0.0)).collect();
    for (k, c) in Cause::ALL.iter().enumerate() {
        *waf_by_group.entry(c.group()).or_insert(0.0) += dev.write_counts()[k].sectors as f64;
    }
    for v in waf_by_group.values_mut() {
        *v = ratio(*v, stored);
    }
    let prefill_spec = i
        .cfg
        .replay
        .prefill
        .or(i.cfg.drive.prefill)
        .unwrap_or(PrefillSpec::Fraction(0.0));
    Report {
        layer: i.entry.name.to_string(),
        params: i.params.values().clone(),
        trace: i.cfg.trace.path.clone(),
        mode: i.cfg.replay.mode.name().into(),
        queue_depth: match i.cfg.replay.mode {
            Mode::Queue => i.cfg.replay.queue_depth,
            Mode::FlatOut | Mode::Closed => 1,
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
            space_gain: g.space_gain(),
            mapping: g.band_map().map(|b| b.notation()),
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
            by_device: device_rows(dev),
            zone_ops: dev.medium().zones().is_zoned().then(|| dev.zone_counts()),
            drive_cache: dev.front_end().map(|f| f.counts.clone()),
        },
        prefill: PrefillSummary {
            spec: prefill_spec,
            limit_sectors: (prefill_spec != PrefillSpec::Footprint).then_some(i.prefill_limit),
            tracks: i.prefill_tracks,
            fold_to_prefill: i.cfg.replay.fold_to_prefill,
        },
        history: i.history.cloned(),
        waf: ratio(wt.sectors as f64, stored),
        waf_per_host_sector: ratio(wt.sectors as f64, i.host.write_sectors as f64),
        moves_per_host_sector: ratio(
            dev.stage_write_sectors() as f64,
            i.host.write_sectors as f64,
        ),
        war: {
            let k = Cause::ALL
                .iter()
                .position(|&c| c == Cause::Rmw)
                .expect("rmw is a cause");
            let ops = (dev.read_counts()[k].ops + dev.write_counts()[k].ops) as f64;
            if i.host.writes == 0 {
                1.0
            } else {
                1.0 + ops / i.host.writes as f64
            }
        },
        waf_by_group,
        waf_excluding_moves: ratio(
            wt.sectors.saturating_sub(dev.stage_write_sectors()) as f64,
            stored,
        ),
        waf_steady: i.waf.waf_from(0.5),
        waf_every: i.cfg.replay.waf_every,
        intervals_completed: i.intervals,
        background: i.background.clone(),
        io_amplification: ratio((rt.ops + wt.ops) as f64, i.host.requests as f64),
        simulated_s: simulated,
        utilisation: ratio(busy, simulated),
        iops: ratio(i.host.requests as f64, simulated),
        throughput_mb_s: ratio(host_bytes / 1e6, simulated),
        final_disparity_s: i.metrics.last_disparity.as_secs(),
        max_disparity_s: i.metrics.max_disparity.as_secs(),
        crashes: i.crashes,
        crashes_during: i.crashes_during.clone(),
        crashes_in_stages: i.crashes_in_stages,
        warnings: warnings(&i, dev.ops_issued()),
        layer_counters: crate::layers::with_past(i.layer.report(), i.past_counters),
        verification: VerifySummary {
            enabled: i.verifier.is_some(),
            read_blocks_checked: i.verifier.map(|v| v.read_blocks_checked).unwrap_or(0),
            scan_blocks_checked: i.verifier.map(|v| v.scan_blocks_checked).unwrap_or(0),
            mismatches: 0,
        },
    }
}
