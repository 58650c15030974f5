use super::*;
use crate::device::Cause;
use crate::drive::DriveConfig;
use crate::error::SimError;
use crate::geometry::LayoutConfig;
use crate::layers::WriteReq;
use crate::layers::{cmr, LayerEntry, LayoutNeed, REGISTRY};
use crate::trace::{Op, TraceRecord, TraceSpec, VecTrace};
use crate::units::Bytes;
use std::collections::HashMap;

/// A small CMR-ish drive: 4 KiB sectors, 100-sector tracks, 2000 tracks.
pub(super) fn small_drive(kind: &str) -> DriveConfig {
    DriveConfig {
        name: "test".into(),
        sector_bytes: 4096,
        rpm: 6000.0,
        track_bytes: 100 * 4096,
        tracks: Some(2000),
        capacity_gib: None,
        write_cache_mib: 0.0,
        interface_mb_s: 0.0, // no link time: exact medium times
        layout: LayoutConfig {
            kind: <crate::geometry::LayoutKind as crate::choice::Choice>::parse(kind).unwrap(),
            ..Default::default()
        },
        ..Default::default()
    }
}

pub(super) fn rec(t_us: u64, op: Op, lba: u64, sectors: u64) -> TraceRecord {
    TraceRecord {
        time: Nanos(t_us * 1000),
        op,
        offset: Bytes(lba * 4096),
        len: Bytes(sectors * 4096),
        line: 0,
    }
}

pub(super) fn cfg(drive: DriveConfig, layer: &str) -> RunConfig {
    RunConfig {
        trace: TraceSpec {
            path: "memory".into(),
            ..Default::default()
        },
        drive,
        layer: LayerConfig {
            name: layer.into(),
            params: Default::default(),
        },
        ..Default::default()
    }
}

/// Records from `(write?, lba, sectors, gap_us)` tuples, gaps accumulated into times.
pub(super) fn timed(seq: &[(bool, u64, u64, u64)]) -> Vec<TraceRecord> {
    let mut t = 0;
    seq.iter()
        .map(|&(w, lba, n, gap)| {
            t += gap;
            rec(t, if w { Op::Write } else { Op::Read }, lba, n)
        })
        .collect()
}

/// Set those of `kv` that layer `e` declares (the others do not apply to it).
pub(super) fn set_declared(c: &mut RunConfig, e: &LayerEntry, kv: &[(&str, &str)]) {
    for &(k, v) in kv {
        if e.params.iter().any(|p| p.name == k) {
            c.layer.params.insert(k.into(), serde_json::Value::from(v));
        }
    }
}

pub(super) fn run(c: RunConfig, recs: Vec<TraceRecord>) -> SimResult<Simulation> {
    let mut s = Simulation::with_reader(c, Box::new(VecTrace::new(recs)))?;
    s.run()?;
    Ok(s)
}

pub(super) fn data_path(name: &str) -> String {
    format!("{}/../../tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn flat_out_random_read_is_seek_half_rotation_transfer() {
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.replay.mode = Mode::FlatOut;
    // Head starts at track 0; one read of 1 sector on track 1000.
    let s = run(c, vec![rec(0, Op::Read, 1000 * 100 + 37, 1)]).unwrap();
    let dev = s.device();
    let want = dev.mechanics().seek_time(1000) + Nanos(5_000_000) + Nanos(10_000_000 / 100);
    let r = s.report();
    assert_eq!(r.latency["all"].count, 1);
    assert!(
        (r.latency["all"].mean_ms - want.as_ms()).abs() < 1e-6,
        "{} vs {}",
        r.latency["all"].mean_ms,
        want
    );
}

#[test]
fn flat_out_ignores_timestamps_and_issues_back_to_back() {
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.replay.mode = Mode::FlatOut;
    let recs = (0..10)
        .map(|i| rec(i * 1_000_000, Op::Read, i * 7919 % 100_000, 1))
        .collect();
    let s = run(c, recs).unwrap();
    let r = s.report();
    // Back to back: the run lasts the sum of the service times, not the 9 s of the trace.
    assert!(r.simulated_s < 0.5, "{}", r.simulated_s);
    assert!((r.device.busy_s - r.simulated_s).abs() < 1e-9);
}

#[test]
fn closed_mode_issues_each_request_its_think_time_after_the_previous_completes() {
    // Without measured response times the think time is the whole trace gap:
    // 100 ms after each completion, not 100 ms after each arrival.
    let recs = || {
        timed(&[
            (false, 100 * 500, 1, 0),
            (false, 100 * 900, 1, 100_000),
            (false, 7, 1, 100_000),
        ])
    };
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.replay.mode = Mode::Closed;
    let mut s = Simulation::with_reader(c.clone(), Box::new(VecTrace::new(recs()))).unwrap();
    s.keep_latencies();
    s.run().unwrap();
    let lat: Vec<u64> = s
        .latencies()
        .iter()
        .map(|k| {
            assert_eq!((k.measured, k.write), (None, false));
            k.latency.0
        })
        .collect();
    assert_eq!(lat.len(), 3);
    let end = lat.iter().sum::<u64>() + 200_000_000;
    assert_eq!((s.report().simulated_s * 1e9).round() as u64, end);
    assert_eq!(s.report().queue_depth, 1);
    // Open loop at the trace's times ends at 200 ms plus the last service only.
    c.replay.mode = Mode::Queue;
    let q = run(c, recs()).unwrap();
    assert!(q.report().simulated_s < s.report().simulated_s - 1e-3);
}

#[test]
fn queue_mode_keeps_arrivals_while_the_device_keeps_up() {
    let c = cfg(small_drive("cmr"), "cmr");
    // One read every 100 ms: far slower than the device.
    let recs = (0..20)
        .map(|i| rec(i * 100_000, Op::Read, i * 3001 % 100_000, 1))
        .collect();
    let s = run(c, recs).unwrap();
    assert_eq!(s.report().max_disparity_s, 0.0);
}

#[test]
fn queue_mode_dilates_time_when_the_queue_is_full() {
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.replay.queue_depth = 4;
    // 100 reads all at time 0: only 4 can be outstanding.
    let recs: Vec<_> = (0..100)
        .map(|i| rec(0, Op::Read, i * 7919 % 200_000, 1))
        .collect();
    let s = run(c, recs).unwrap();
    let r = s.report();
    assert!(r.max_disparity_s > 0.5, "{}", r.max_disparity_s);
    // With depth 4 and FIFO service, each latency is about four service times,
    // never the whole backlog.
    let mean_service = r.device.busy_s / 100.0;
    assert!(
        r.latency["all"].mean_ms / 1e3 < 4.5 * mean_service,
        "{} vs {}",
        r.latency["all"].mean_ms,
        mean_service
    );
    // Depth 64 with the same trace: latencies grow with the queue.
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.replay.queue_depth = 64;
    let recs: Vec<_> = (0..100)
        .map(|i| rec(0, Op::Read, i * 7919 % 200_000, 1))
        .collect();
    let deep = run(c, recs).unwrap().report();
    assert!(deep.latency["all"].mean_ms > 3.0 * r.latency["all"].mean_ms);
}

#[test]
fn scaled_mode_multiplies_inter_arrival_times() {
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.replay.mode = Mode::Scaled;
    c.replay.scale = 0.5;
    c.replay.series_every = 1;
    let recs = (0..10)
        .map(|i| rec(i * 1_000_000, Op::Read, 5, 1))
        .collect();
    let s = run(c, recs).unwrap();
    let issue = &s.metrics().series.issue_s;
    for (i, t) in issue.iter().enumerate() {
        assert!((t - i as f64 * 0.5).abs() < 1e-9, "{issue:?}");
    }
}

#[test]
fn write_cache_absorbs_writes_and_destages_when_idle() {
    let mut d = small_drive("cmr");
    d.write_cache_mib = 1.0;
    let c = cfg(d, "cmr");
    // Writes 50 ms apart: each is acknowledged from the cache and destaged in the gap.
    let recs = (0..20)
        .map(|i| rec(i * 50_000, Op::Write, i * 5003 % 100_000, 4))
        .collect();
    let s = run(c, recs).unwrap();
    let r = s.report();
    assert_eq!(r.host.cached_writes, 20);
    assert!(
        r.latency["write"].max_ms < 0.01,
        "{}",
        r.latency["write"].max_ms
    );
    assert_eq!(r.device.media_write_sectors, 80);
    let destage = r
        .device
        .by_cause
        .iter()
        .find(|c| c.cause == "destage")
        .unwrap();
    assert_eq!(destage.write_sectors, 80);
    assert_eq!(r.waf, 1.0);
}

#[test]
fn full_write_cache_makes_writes_wait_for_destaging() {
    let mut d = small_drive("cmr");
    d.write_cache_mib = 64.0 * 4096.0 / (1024.0 * 1024.0); // 64 sectors
    let c = cfg(d, "cmr");
    let recs = (0..200)
        .map(|i| rec(0, Op::Write, i * 7919 % 200_000, 8))
        .collect();
    let s = run(c, recs).unwrap();
    let r = s.report();
    assert!(
        r.latency["write"].max_ms > 5.0,
        "writes never waited: {}",
        r.latency["write"].max_ms
    );
    assert_eq!(r.device.media_write_sectors, 1600);
}

#[test]
fn reads_of_cached_data_are_cache_hits_and_verified() {
    let mut d = small_drive("cmr");
    d.write_cache_mib = 1.0;
    let mut c = cfg(d, "cmr");
    c.verify = true;
    let recs = vec![
        rec(0, Op::Write, 100, 8),
        rec(0, Op::Read, 102, 4),
        rec(0, Op::Read, 90, 20),
    ];
    let s = run(c, recs).unwrap();
    let r = s.report();
    assert_eq!(r.host.cache_read_hits, 1);
    assert_eq!(r.verification.read_blocks_checked, 24);
    assert_eq!(r.verification.scan_blocks_checked, 8);
}

#[test]
fn same_inputs_give_identical_reports() {
    let go = || {
        let mut d = small_drive("cmr");
        d.write_cache_mib = 0.5;
        let recs = (0..5000u64)
            .map(|i| {
                rec(
                    i * 300,
                    if i % 3 == 0 { Op::Read } else { Op::Write },
                    i * 104_729 % 190_000,
                    1 + i % 16,
                )
            })
            .collect();
        serde_json::to_string(&run(cfg(d, "cmr"), recs).unwrap().report()).unwrap()
    };
    assert_eq!(go(), go());
}

#[test]
fn request_beyond_capacity_is_an_error_unless_folded() {
    let c = cfg(small_drive("cmr"), "cmr");
    let e = run(c.clone(), vec![rec(0, Op::Write, 10_000_000, 1)])
        .err()
        .unwrap();
    assert!(matches!(e, SimError::TraceFormat { .. }), "{e}");
    assert!(e.to_string().contains("--fold"), "{e}");
    let mut c = c;
    c.replay.fold = true;
    c.verify = true;
    run(
        c,
        vec![
            rec(0, Op::Write, 10_000_000, 1),
            rec(1, Op::Read, 10_000_000, 1),
        ],
    )
    .unwrap();
}

#[test]
fn unknown_layer_and_parameter_are_config_errors() {
    let e = run(cfg(small_drive("cmr"), "nope"), vec![]).err().unwrap();
    assert!(e.to_string().contains("unknown layer 'nope'"), "{e}");
    // A slip gets one suggestion, not the list of every layer.
    let e = run(cfg(small_drive("imr"), "imr-dmt"), vec![])
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("did you mean 'imr-dtm'?") && !e.contains("imr-flip"),
        "{e}"
    );
    let mut c = cfg(small_drive("imr"), "imr-cache");
    c.layer
        .params
        .insert("cache_track".into(), serde_json::Value::from(3));
    let e = run(c, vec![]).err().unwrap().to_string();
    assert!(e.contains("did you mean 'cache_tracks'?"), "{e}");
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.layer
        .params
        .insert("cache_tracks".into(), serde_json::Value::from(3));
    let e = run(c, vec![]).err().unwrap();
    assert!(e.to_string().contains("no parameter 'cache_tracks'"), "{e}");
}

// ---- verification catches broken layers ----

/// Deliberately wrong: writes IMR bottom tracks in place without saving the
/// top-track neighbours it destroys.
pub(super) static NAIVE_IMR: LayerEntry = LayerEntry {
    name: "naive-imr",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "test only: IMR without read-modify-write",
    paper: "-",
    layout: LayoutNeed::Kind(crate::geometry::LayoutKind::Imr),
    params: &[],
    build: |_, _| Ok(Box::new(NaiveImr)),
};

struct NaiveImr;
impl Layer for NaiveImr {
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        cmr::read_home(dev, Cause::Host, lba, n, out)
    }
    fn write(&mut self, dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        cmr::write_home(dev, w)
    }
}

pub(super) fn imr_drive() -> DriveConfig {
    let mut d = small_drive("imr");
    d.layout.group_tracks = 1;
    d
}

#[test]
fn verifier_catches_a_layer_that_skips_read_modify_write() {
    let mut c = cfg(imr_drive(), "naive-imr");
    c.verify = true;
    // LBA 100..110 live on top track 1; then bottom track 2 (LBAs 200..) is written over the same angles.
    let recs = vec![
        rec(0, Op::Write, 105, 4),
        rec(10, Op::Write, 205, 4),
        rec(20, Op::Read, 105, 4),
    ];
    let mut s = Simulation::with_layer(c, &NAIVE_IMR, Box::new(VecTrace::new(recs))).unwrap();
    let e = s.run().unwrap_err();
    let SimError::DataLoss(d) = &e else {
        panic!("expected data loss, got {e}")
    };
    assert_eq!(d.lba, 105);
    assert_eq!(d.expected, 1);
    assert!(d.during.contains("host read"));
    let by = d.destroyed_by.as_deref().unwrap();
    assert!(by.contains("Write host") && by.contains("track 2"), "{by}");
}

#[test]
fn final_scan_catches_loss_that_no_host_read_saw() {
    let mut c = cfg(imr_drive(), "naive-imr");
    c.verify = true;
    let recs = vec![rec(0, Op::Write, 100, 100), rec(10, Op::Write, 200, 1)];
    let mut s = Simulation::with_layer(c, &NAIVE_IMR, Box::new(VecTrace::new(recs))).unwrap();
    let e = s.run().unwrap_err();
    assert!(e.to_string().contains("final scan"), "{e}");
}

/// Deliberately wrong: acknowledges writes from a volatile buffer that it
/// only writes out when idle, and never persists it.
static VOLATILE: LayerEntry = LayerEntry {
    name: "volatile-buffer",
    runs_in: crate::layers::RunsIn::Drive,
    summary: "test only: loses buffered writes on power loss",
    paper: "-",
    layout: LayoutNeed::AsConventional,
    params: &[],
    build: |_, _| Ok(Box::new(Volatile::default())),
};

#[derive(Default)]
struct Volatile {
    buf: HashMap<u64, Token>,
}
impl Layer for Volatile {
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let start = out.len();
        cmr::read_home(dev, Cause::Host, lba, n, out)?;
        for i in 0..n.0 {
            if let Some(t) = self.buf.get(&(lba.0 + i)) {
                out[start + i as usize] = *t;
            }
        }
        Ok(())
    }
    fn write(&mut self, _dev: &mut Device, w: &WriteReq) -> SimResult<()> {
        for (i, t) in w.data.iter().enumerate() {
            self.buf.insert(w.lba.0 + i as u64, *t);
        }
        Ok(())
    }
}

#[test]
fn crash_verification_catches_volatile_state_passed_off_as_durable() {
    let mut c = cfg(small_drive("cmr"), "volatile-buffer");
    c.verify = true;
    c.crash_after = vec![3];
    let recs = (0..6).map(|i| rec(i, Op::Write, i * 10, 2)).collect();
    let mut s =
        Simulation::with_layer(c.clone(), &VOLATILE, Box::new(VecTrace::new(recs))).unwrap();
    let e = s.run().unwrap_err();
    assert!(e.to_string().contains("after crash #1"), "{e}");
    // Without the crash the same layer passes: only the crash exposes it.
    c.crash_after.clear();
    let recs = (0..6).map(|i| rec(i, Op::Write, i * 10, 2)).collect();
    let mut s = Simulation::with_layer(c, &VOLATILE, Box::new(VecTrace::new(recs))).unwrap();
    s.run().unwrap();
}

#[test]
fn crashes_with_the_write_cache_on_lose_only_unflushed_writes() {
    let mut d = small_drive("cmr");
    d.write_cache_mib = 1.0;
    let mut c = cfg(d, "cmr");
    c.verify = true;
    // Writes arrive faster than they destage, so crashes find dirty cache contents.
    c.crash_after = vec![50, 120, 333];
    let recs: Vec<_> = (0..500u64)
        .map(|i| {
            rec(
                i * 20,
                if i % 4 == 0 { Op::Read } else { Op::Write },
                i * 7919 % 3000,
                4,
            )
        })
        .collect();
    let s = run(c, recs).unwrap();
    let r = s.report();
    assert_eq!(r.crashes, 3);
    assert!(r.verification.scan_blocks_checked > 0);
}

#[test]
fn crash_points_between_physical_operations_are_survived_by_cmr() {
    let recs: Vec<_> = (0..300u64)
        .map(|i| {
            rec(
                i * 500,
                if i % 5 == 0 { Op::Read } else { Op::Write },
                i * 7919 % 150_000,
                1 + i % 150,
            )
        })
        .collect();
    let mut covered = 0;
    for point in (0..400).step_by(7) {
        let mut c = cfg(small_drive("cmr"), "cmr");
        c.verify = true;
        c.crash_at_ops = vec![point];
        let s = run(c, recs.clone()).unwrap();
        covered += s.crashes();
    }
    assert!(covered >= 50, "{covered}");
}

// ---- every registered layer, on real traces, verified ----

/// [`drive_for_layer`] with a capacity of `gib` GiB.
pub(super) fn drive_for_layer_sized(e: &LayerEntry, gib: f64) -> DriveConfig {
    DriveConfig {
        capacity_gib: Some(gib),
        ..drive_for_layer(e)
    }
}

pub(super) fn drive_for_layer(e: &LayerEntry) -> DriveConfig {
    let mut d = DriveConfig {
        name: "imr-paper".into(),
        sector_bytes: 4096,
        rpm: 6000.0,
        track_bytes: 2 << 20,
        capacity_gib: Some(1024.0),
        write_cache_mib: 100.0,
        ..Default::default()
    };
    d.layout.kind = match e.layout {
        LayoutNeed::AsConventional | LayoutNeed::AsConventionalShaped(_) => "imr".into(),
        LayoutNeed::Kind(k) | LayoutNeed::Shaped(k, _) => k,
    };
    // Shingled layers keep scratch copies in a random-access zone; the
    // drive-managed ones cache tracks in a persistent cache (1 GiB).
    d.layout.random_access_tracks = 16;
    if d.layout.kind == crate::geometry::LayoutKind::Smr {
        d.layout.cache_tracks = 512;
    }
    // Hybrid layers (paper 001): a memory buffer small enough that real
    // traces evict from it, and an SSD cache.
    d.memory = Some(crate::side_device::SideConfig::ddr3_1333(8.0));
    d.ssd = Some(crate::side_device::SideConfig::intel_x25m(16.0));
    // Host-managed buffer layers keep their buffer in conventional zones (2 GiB).
    if d.layout.kind == crate::geometry::LayoutKind::Zoned {
        d.layout.conventional_zones = 8;
        d.layout.max_open_zones = 4;
    }
    d
}

#[test]
fn every_registered_layer_keeps_every_block_on_real_traces() {
    for e in REGISTRY {
        // IMR layers run on both LBA orders and on equal and 0.9 top tracks.
        let variants: &[(f64, &str, u64)] = match e.layout {
            LayoutNeed::Kind(crate::geometry::LayoutKind::Imr) => &[
                (1.0, "zigzag", 8),
                (0.9, "serpentine", 8),
                (0.9, "zigzag", 1),
            ],
            _ => &[(1.0, "zigzag", 8)],
        };
        for &(ratio, order, group) in variants {
            for (trace, limit) in [
                ("rsrch_1.csv", None),
                ("wdev_1.csv", None),
                ("wdev_3.csv", None),
                ("cloudPhysicsIO.vscsi", None),
            ] {
                // Drive-managed shingled layers also start from a full drive.
                let prefills: &[Option<f64>] = if e.name.starts_with("smr-")
                    || e.layout.kind() == Some(crate::geometry::LayoutKind::Zoned)
                {
                    &[None, Some(1.0)]
                } else {
                    &[None]
                };
                for (cache, prefill) in [true, false]
                    .into_iter()
                    .flat_map(|c| prefills.iter().map(move |&p| (c, p)))
                {
                    let mut d = drive_for_layer(e);
                    d.layout.top_ratio = ratio;
                    d.layout.order = order.into();
                    d.layout.group_tracks = group;
                    let mut c = cfg(d, e.name);
                    c.trace = TraceSpec {
                        path: data_path(trace),
                        limit,
                        ..Default::default()
                    };
                    c.replay.write_cache = Some(cache);
                    c.replay.prefill = prefill.map(crate::medium::prefill::PrefillSpec::Fraction);
                    // Hybrid layers: a volatile buffer without the write cache, a battery-backed one with it.
                    if let Some(m) = c.drive.memory.as_mut() {
                        m.battery_backed = cache;
                    }
                    c.verify = true;
                    let mut s = Simulation::new(c).unwrap();
                    s.run().unwrap_or_else(|err| {
                        panic!("layer {} on {trace} (cache {cache}, prefill {prefill:?}, top {ratio}, {order}/{group}): {err}", e.name)
                    });
                    let r = s.report();
                    assert!(r.verification.scan_blocks_checked > 0);
                    // A memory buffer may absorb overwrites and still hold data at the end.
                    if r.device.by_device.is_empty() {
                        assert!(r.waf >= 1.0 - 1e-12, "{} WAF {}", e.name, r.waf);
                    }
                }
            }
        }
    }
}

// ---- property: every read returns the newest acknowledged write ----

mod props {
    use super::*;
    use proptest::prelude::*;

    fn ops() -> impl Strategy<Value = Vec<(bool, u64, u64, u64)>> {
        // (write?, lba, sectors, gap_us), over a small footprint so requests overlap.
        proptest::collection::vec((any::<bool>(), 0u64..2_000, 1u64..64, 0u64..5_000), 1..300)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn cmr_reads_see_newest_writes(
            seq in ops(),
            cache_sectors in prop_oneof![Just(0u64), 1u64..256, Just(4096u64)],
            qd in 1u64..64,
            crash in proptest::option::of(1u64..300),
        ) {
            let mut d = small_drive("cmr");
            d.write_cache_mib = cache_sectors as f64 * 4096.0 / (1024.0 * 1024.0);
            let mut c = cfg(d, "cmr");
            c.verify = true;
            c.replay.queue_depth = qd;
            // A crash point beyond the trace is a configuration error (tested elsewhere).
            c.crash_after = crash.map(|k| k.min(seq.len() as u64)).into_iter().collect();
            let s = run(c, timed(&seq));
            prop_assert!(s.is_ok(), "{}", s.err().unwrap());
        }
    }
}

// ---- golden reports: a behaviour change is a visible, deliberate diff ----

/// Compare a run's report with `tests/data/golden/<name>.json`; write it
/// instead when STLSIM_BLESS=1.
fn golden(name: &str, c: RunConfig) {
    let mut s = Simulation::new(c).unwrap();
    s.run().unwrap();
    let mut r = s.report();
    r.trace = r.trace.rsplit('/').next().unwrap_or_default().to_string();
    let got = serde_json::to_string_pretty(&r).unwrap() + "\n";
    let path = format!(
        "{}/../../tests/data/golden/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var("STLSIM_BLESS").as_deref() == Ok("1") {
        std::fs::create_dir_all(std::path::Path::new(&path).parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (run with STLSIM_BLESS=1 to create it)"));
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "report differs from {path} at line {}: got `{}`, golden `{}` (rerun with STLSIM_BLESS=1 if the change is intended)",
            line + 1,
            got.lines().nth(line).unwrap_or(""),
            want.lines().nth(line).unwrap_or("")
        );
    }
}

#[test]
fn golden_cmr_wdev_3_queue() {
    let mut c = cfg(drive_for_layer(&cmr::ENTRY), "cmr");
    c.trace = TraceSpec {
        path: data_path("wdev_3.csv"),
        ..Default::default()
    };
    c.verify = true;
    golden("cmr-wdev_3-queue", c);
}

#[test]
fn golden_cmr_wdev_3_flat_out_angular() {
    let mut d = drive_for_layer(&cmr::ENTRY);
    d.rotation = crate::mechanics::Rotation::Angular;
    let mut c = cfg(d, "cmr");
    c.trace = TraceSpec {
        path: data_path("wdev_3.csv"),
        ..Default::default()
    };
    c.replay.mode = Mode::FlatOut;
    c.replay.write_cache = Some(false);
    golden("cmr-wdev_3-flat-out-angular", c);
}

#[test]
fn golden_imr_rmw_wdev_3_queue() {
    let mut c = cfg(drive_for_layer(&crate::layers::imr::rmw::ENTRY), "imr-rmw");
    c.trace = TraceSpec {
        path: data_path("wdev_3.csv"),
        ..Default::default()
    };
    c.verify = true;
    golden("imr-rmw-wdev_3-queue", c);
}

/// Verification on its own thread changes nothing a run reports, power
/// losses included, for every layer: the oracle sees the same events in
/// the same order, only later.
#[test]
fn verification_on_its_own_thread_reports_what_inline_verification_does() {
    for e in REGISTRY {
        let go = |threaded: bool| {
            let mut c = cfg(drive_for_layer(e), e.name);
            c.trace = TraceSpec {
                path: data_path("cloudPhysicsIO.vscsi"),
                limit: Some(30_000),
                ..Default::default()
            };
            c.verify = true;
            c.crash_after = vec![7_000, 19_000];
            // Hybrid layers: a volatile memory buffer (durability reported by the layer).
            if let Some(m) = c.drive.memory.as_mut() {
                m.battery_backed = false;
            }
            let mut s = Simulation::new(c).unwrap();
            s.set_verify_thread_after(if threaded { 0 } else { u64::MAX });
            let mut was_threaded = false;
            while !s
                .step(500)
                .unwrap_or_else(|err| panic!("layer {}: {err}", e.name))
            {
                was_threaded |= s.verify_threaded();
            }
            assert_eq!(was_threaded, threaded, "layer {}", e.name);
            let r = s.report();
            assert!(r.verification.read_blocks_checked > 0, "layer {}", e.name);
            (
                serde_json::to_string(&r).unwrap(),
                s.verification_memory().unwrap(),
            )
        };
        let (inline, mem_inline) = go(false);
        let (threaded, mem_threaded) = go(true);
        assert_eq!(inline, threaded, "layer {}", e.name);
        assert_eq!(
            mem_inline.state_bytes, mem_threaded.state_bytes,
            "layer {}",
            e.name
        );
    }
}

/// A block lost while the oracle checks on its own thread is reported as
/// inline checking reports it: the same block, versions, read and
/// destroying operation, and before the run goes on to its end.
#[test]
fn verification_on_its_own_thread_reports_the_first_lost_block() {
    // Writes over top and bottom tracks of the naive layer's drive, then
    // reads of everything: a bottom write destroys top neighbours that
    // were written earlier.
    let mut seq = vec![];
    let mut x = 12345u64;
    for i in 0..20_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let lba = (x >> 33) % 150_000;
        seq.push((i < 4_000 || i % 3 == 0, lba, 1 + (x >> 20) % 8, 50));
    }
    let go = |threaded: bool| {
        let mut c = cfg(imr_drive(), "naive-imr");
        c.verify = true;
        let mut s =
            Simulation::with_layer(c, &NAIVE_IMR, Box::new(VecTrace::new(timed(&seq)))).unwrap();
        s.set_verify_thread_after(if threaded { 0 } else { u64::MAX });
        let e = s.run().unwrap_err();
        let SimError::DataLoss(d) = &e else {
            panic!("expected data loss, got {e}")
        };
        assert!(d.during.contains("host read"), "{e}");
        assert!(
            d.destroyed_by.as_deref().unwrap().contains("Write host"),
            "{e}"
        );
        (e, s.requests_done())
    };
    let (inline, at) = go(false);
    let (threaded, later) = go(true);
    assert_eq!(inline, threaded);
    // Found late (the thread lags), but not only at the end.
    assert!(
        later >= at && later < seq.len() as u64,
        "inline at {at}, threaded at {later}"
    );
}

#[test]
fn every_registered_layer_is_deterministic() {
    for e in REGISTRY {
        let go = || {
            let mut d = drive_for_layer(e);
            d.layout.top_ratio = 0.9;
            let mut c = cfg(d, e.name);
            c.trace = TraceSpec {
                path: data_path("cloudPhysicsIO.vscsi"),
                ..Default::default()
            };
            // Short intervals so the layers' own moves happen many times.
            set_declared(
                &mut c,
                e,
                &[
                    ("interval_writes", "2000"),
                    ("flip_threshold", "5"),
                    ("swap_threshold", "5"),
                ],
            );
            let mut s = Simulation::new(c).unwrap();
            s.run().unwrap();
            let r = s.report();
            let moves: f64 = ["flips", "swaps", "promotions"]
                .iter()
                .filter_map(|k| r.layer_counters.get(*k))
                .sum();
            (serde_json::to_string(&r).unwrap(), moves)
        };
        let (a, moves) = go();
        assert_eq!(a, go().0, "layer {}", e.name);
        if e.params.iter().any(|p| p.name == "interval_writes") {
            assert!(
                moves > 10.0,
                "layer {} moved data only {moves} times",
                e.name
            );
        }
    }
}

/// A small IMR drive (64-sector tracks) so that requests cross tracks and
/// every layer's moves happen within a few hundred requests.
pub(super) fn tiny_imr(cache_sectors: u64, ratio: f64) -> DriveConfig {
    let mut d = small_drive("imr");
    d.track_bytes = 64 * 4096;
    d.tracks = Some(400);
    d.layout.group_tracks = 2;
    d.layout.top_ratio = ratio;
    d.write_cache_mib = cache_sectors as f64 * 4096.0 / (1024.0 * 1024.0);
    d
}

/// [`tiny_imr`] for IMR and conventional layers; for shingled layers a tiny
/// SMR drive of the same track size (bands of 4, W = 2, 20 bands, an
/// 8-track random-access zone).
pub(super) fn tiny_for(e: &LayerEntry, cache_sectors: u64, ratio: f64) -> DriveConfig {
    let mut d = tiny_imr(cache_sectors, ratio);
    if e.layout.kind() == Some(crate::geometry::LayoutKind::Smr) {
        d.layout = crate::geometry::LayoutConfig {
            kind: crate::geometry::LayoutKind::Smr,
            band_tracks: 4,
            head_width_tracks: 2,
            random_access_tracks: 8,
            cache_tracks: 40,
            ..Default::default()
        };
        d.tracks = Some(8 + 41 + 20 * 5);
    }
    if e.layout.kind() == Some(crate::geometry::LayoutKind::Wave) {
        // Regions of 4 tracks, kappa = 2: 80 regions.
        d.layout = crate::geometry::LayoutConfig {
            kind: crate::geometry::LayoutKind::Wave,
            region_tracks: 4,
            kappa_tracks: 2,
            ..Default::default()
        };
    }
    // Hybrid layers: a memory buffer and an SSD (sized by BUSY's mem_mib and ssd_mib).
    d.memory = Some(crate::side_device::SideConfig::ddr3_1333(1.0));
    d.ssd = Some(crate::side_device::SideConfig::intel_x25m(1.0));
    if e.layout.kind() == Some(crate::geometry::LayoutKind::Zoned) {
        // Zones of 2 tracks (128 sectors), the first 8 conventional.
        d.layout = crate::geometry::LayoutConfig {
            kind: crate::geometry::LayoutKind::Zoned,
            zone_tracks: 2,
            conventional_zones: 8,
            max_open_zones: 3,
            ..Default::default()
        };
    }
    d
}

/// Parameters that make each layer move data often.
pub(super) const BUSY: [(&str, &str); 11] = [
    ("block_sectors", "16"),
    ("mem_mib", "0.5"),
    ("ssd_mib", "0.25"),
    ("buffer_mib", "1"),
    ("collect_blocks", "8"),
    ("interval_writes", "16"),
    ("flip_threshold", "1"),
    ("swap_threshold", "1"),
    ("cache_tracks", "6"),
    ("foreground_after_writes", "8"),
    ("foreground_every_writes", "8"),
];

/// The busy parameters really make the layers that move data move it.
#[test]
fn busy_parameters_make_every_moving_layer_move_data() {
    for e in REGISTRY {
        let mut c = cfg(tiny_for(e, 64, 1.0), e.name);
        set_declared(&mut c, e, &BUSY);
        c.verify = true;
        let recs: Vec<_> = (0..200u64)
            .map(|i| {
                rec(
                    i * 700,
                    if i % 3 == 0 { Op::Read } else { Op::Write },
                    (i * 7919 + (i % 5) * 64) % 2400,
                    1 + i % 40,
                )
            })
            .collect();
        let r = run(c, recs).unwrap().report();
        let moves: f64 = ["flips", "swaps", "promotions"]
            .iter()
            .filter_map(|k| r.layer_counters.get(*k))
            .sum();
        if e.params.iter().any(|p| p.name == "interval_writes") {
            assert!(moves >= 5.0, "layer {} moved data {moves} times", e.name);
        }
    }
}

mod layer_props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
        #[test]
        fn every_layer_reads_see_newest_writes(
            layer in 0..REGISTRY.len(),
            seq in proptest::collection::vec((any::<bool>(), 0u64..2_400, 1u64..48, 0u64..3_000), 1..250),
            cache_sectors in prop_oneof![Just(0u64), 8u64..128, Just(2048u64)],
            ratio in prop_oneof![Just(1.0f64), Just(0.9f64)],
            crash in proptest::option::of(0u64..1_500),
        ) {
            let e = REGISTRY[layer];
            let mut c = cfg(tiny_for(e, cache_sectors, ratio), e.name);
            set_declared(&mut c, e, &BUSY);
            c.verify = true;
            c.crash_at_ops = crash.into_iter().collect();
            let s = run(c, timed(&seq));
            prop_assert!(s.is_ok(), "layer {}: {}", e.name, s.err().unwrap());
        }
    }
}

/// Found by the property test: a write whose first piece caches the track
/// its second piece writes needs room for two slots (the second relocates).
#[test]
fn vguard_waits_for_room_for_every_slot_a_write_makes() {
    let e = crate::layers::find("smr-vguard").unwrap();
    let mut c = cfg(tiny_for(e, 0, 0.9), e.name);
    set_declared(&mut c, e, &BUSY);
    c.verify = true;
    let seq = [
        (false, 0, 1, 0),
        (true, 244, 13, 0),
        (true, 468, 45, 0),
        (true, 174, 19, 0),
        (true, 1058, 31, 0),
        (false, 0, 1, 0),
        (true, 575, 2, 0),
        (true, 1110, 43, 404),
        (true, 1693, 36, 1891),
        (true, 1649, 18, 487),
    ];
    let s = run(c, timed(&seq));
    if let Err(e) = &s {
        panic!("{e}");
    }
}

/// Found by the property test: a disk read's SSD prefetches may replace the
/// SSD copy of the next block of the same host read, which must then be
/// looked up again (it was read from the reused slot: another block's data).
#[test]
fn hybrid_reads_look_again_after_prefetching_into_a_full_ssd() {
    for name in ["sblock", "hwsr"] {
        let e = crate::layers::find(name).unwrap();
        let mut c = cfg(tiny_for(e, 0, 1.0), e.name);
        set_declared(&mut c, e, &BUSY);
        c.verify = true;
        let seq = [
            (true, 0, 1, 0),
            (true, 772, 45, 0),
            (false, 0, 33, 0),
            (false, 42, 23, 0),
            (true, 80, 1, 0),
            (true, 95, 34, 0),
            (false, 0, 17, 0),
        ];
        let s = run(c, timed(&seq));
        if let Err(e) = &s {
            panic!("{name}: {e}");
        }
    }
}

/// A zero or a repeated crash point used to disable every later one; a zero
/// series interval was silently taken as 1. All three are now errors.
#[test]
fn zero_or_repeated_crash_points_and_a_zero_series_interval_are_errors() {
    let recs: Vec<_> = (0..400u64)
        .map(|i| rec(i * 500, Op::Write, i * 64, 8))
        .collect();
    let err = |f: &dyn Fn(&mut RunConfig)| {
        let mut c = cfg(small_drive("cmr"), "cmr");
        f(&mut c);
        run(c, recs.clone())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(err(&|c| c.crash_after = vec![0, 100, 300]).contains("crash_after 0"));
    assert!(err(&|c| c.crash_after = vec![100, 100, 300]).contains("given twice"));
    assert!(err(&|c| c.replay.series_every = 0).contains("series_every must be at least 1"));
    // Distinct points each inject one power loss.
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.crash_after = vec![100, 300, 200];
    assert_eq!(run(c, recs.clone()).unwrap().crashes(), 3);
}

/// Found by fuzzing (issue 11): an MSR-like record whose size is 2^64 - 1
/// wrapped round to a write of 0 sectors and ran with exit 0.
#[test]
fn a_request_ending_past_two_to_the_64_bytes_is_an_overflow_error() {
    let mut r = rec(0, Op::Write, 0, 1);
    r.offset = Bytes(4096);
    r.len = Bytes(u64::MAX);
    r.line = 7;
    let e = run(cfg(small_drive("cmr"), "cmr"), vec![r])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("overflow") && e.contains(":7"), "{e}");
}
