//! The hybrid layers of paper 001 against its rules, with verification on,
//! and crash injection inside segment rewrites and S-block collection.

use crate::drive::DriveConfig;
use crate::engine::report::Report;
use crate::engine::{LayerConfig, Mode, RunConfig, Simulation};
use crate::geometry::segment_map::hwsr_over_sblock_utilisation;
use crate::geometry::LayoutConfig;
use crate::layers::{find, Params};
use crate::side_device::SideConfig;
use crate::trace::{Op, TraceRecord, TraceSpec, VecTrace};
use crate::units::{Bytes, Nanos, Track};
use crate::xorshift::Rng;

/// A wave drive of 512-byte sectors, tracks of `spt` sectors, regions of 4
/// tracks and kappa = 2 (units of 10 tracks), `units` units.
fn drive(spt: u64, units: u64) -> DriveConfig {
    DriveConfig {
        name: "wave-test".into(),
        sector_bytes: 512,
        rpm: 7200.0,
        track_bytes: spt * 512,
        tracks: Some(10 * units),
        capacity_gib: None,
        interface_mb_s: 0.0, // no link time: exact medium times
        write_cache_mib: 0.0,
        layout: LayoutConfig {
            kind: crate::geometry::LayoutKind::Wave,
            region_tracks: 4,
            kappa_tracks: 2,
            ..Default::default()
        },
        // 32 blocks of 16 sectors in memory, 64 in the SSD.
        memory: Some(SideConfig {
            battery_backed: true,
            ..SideConfig::ddr3_1333(0.25)
        }),
        ssd: Some(SideConfig::intel_x25m(0.5)),
        ..Default::default()
    }
}

fn cfg(layer: &str, d: DriveConfig, params: &[(&str, &str)]) -> RunConfig {
    let mut c = RunConfig {
        trace: TraceSpec {
            path: "memory".into(),
            ..Default::default()
        },
        drive: d,
        layer: LayerConfig {
            name: layer.into(),
            params: Default::default(),
        },
        ..Default::default()
    };
    c.replay.mode = Mode::FlatOut;
    c.replay.write_cache = Some(false);
    c.verify = true;
    c.layer
        .params
        .insert("block_sectors".into(), serde_json::Value::from(16));
    for &(k, v) in params {
        let v = v
            .parse::<f64>()
            .map(serde_json::Value::from)
            .unwrap_or_else(|_| serde_json::Value::from(v));
        c.layer.params.insert(k.into(), v);
    }
    c
}

fn rec(i: u64, write: bool, lba: u64, n: u64) -> TraceRecord {
    TraceRecord {
        time: Nanos(i * 1_000),
        op: if write { Op::Write } else { Op::Read },
        offset: Bytes(lba * 512),
        len: Bytes(n * 512),
        line: i + 1,
    }
}

// The zoned layers' helpers: run verified (no mismatch, a scan), and read a counter.
use crate::layers::zoned::tests::{counter, run};

/// `n` requests of 1-40 sectors over the first `span` LBAs; every `read_every`-th a read.
fn random_requests(seed: u64, n: u64, span: u64, read_every: u64) -> Vec<TraceRecord> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            rec(
                i,
                i % read_every != read_every - 1,
                rng.below(span - 40),
                1 + rng.below(40),
            )
        })
        .collect()
}

const LAYERS: [&str; 3] = ["hwsr", "sblock", "buffered-cmr"];

#[test]
fn the_wave_layout_overlaps_in_both_directions_into_one_shared_guard_band() {
    let g = drive(128, 2).geometry().unwrap();
    assert_eq!(g.tracks(), 20);
    assert_eq!(g.wave_regions(), 4);
    // Unit: region 0 = tracks 0-3 (shingled up), guard 4-5, region 1 = 6-9 (down).
    assert_eq!(
        (0..10)
            .filter(|&t| g.sectors_in(Track(t)) == 0)
            .collect::<Vec<_>>(),
        vec![4, 5]
    );
    let dmg = |t: u64| {
        g.damaged_by_write(Track(t))
            .map(|t| t.0)
            .collect::<Vec<_>>()
    };
    assert_eq!(dmg(0), vec![1, 2]);
    assert_eq!(dmg(3), vec![4, 5]);
    assert_eq!(dmg(9), vec![7, 8]);
    assert_eq!(dmg(6), vec![4, 5]);
    // A pair's outer edges need no guard: region 1's top track and region 2's bottom one.
    assert_eq!(dmg(10), vec![11, 12]);
    assert!(!dmg(9).contains(&10) && !dmg(10).contains(&9));
    assert_eq!(g.wave_track(1, 0), Track(6));
    assert_eq!(g.wave_track(2, 3), Track(13));
    assert_eq!(g.capacity().0, 16 * 128);
}

#[test]
fn hwsr_over_sblock_utilisation_from_the_built_layouts_is_the_papers_2_65() {
    // Paper 001 section III.B: S = 10, kappa = 8, beta = 0.3 -> 2.65. The same
    // physical disk (4 MiB tracks, 64-sector blocks) formatted both ways.
    let mut d = drive(8192, 0);
    d.tracks = Some(28 * 26 * 10);
    d.layout.region_tracks = 10;
    d.layout.kappa_tracks = 8;
    let formula = hwsr_over_sblock_utilisation(10.0, 8.0, 0.3);
    assert!((formula - 2.653).abs() < 1e-3, "{formula}");
    let cap = |name: &str| {
        let e = find(name).unwrap();
        let mut user = std::collections::BTreeMap::new();
        user.insert("block_sectors".to_string(), serde_json::Value::from(64));
        let p = Params::resolve(name, e.params, &user).unwrap();
        let dd = e.drive_for(&d, &p).unwrap();
        let g = dd.geometry().unwrap();
        assert_eq!(g.tracks(), 28 * 26 * 10, "{name} runs on the same tracks");
        (e.build)(&p, &g).unwrap().host_capacity(&g).0 as f64
    };
    // HWSR keeps one region of 2 x 260 for its scratch segment: count it as used.
    let hwsr = cap("hwsr") * 520.0 / 519.0;
    let ratio = hwsr / cap("sblock");
    // Whole S-blocks: floor((1 - beta) n) = 89 of n = 128 host S-blocks (0.695, not 0.7).
    let expected = formula * 0.7 / (89.0 / 128.0);
    assert!(
        (ratio - expected).abs() < 1e-9,
        "built {ratio}, expected {expected}"
    );
    assert!((ratio - 2.65).abs() < 0.03, "built {ratio}");
}

#[test]
fn an_update_of_block_i_rewrites_blocks_i_to_the_end_of_its_segment_only() {
    // One block per write, to block 2 of segment 3 of region 0; the buffer
    // of 28 blocks is then flushed by writes elsewhere.
    let (b, s) = (16u64, 4u64);
    let seg = 3;
    let lba = seg * s * b + 2 * b + 5; // block 2 of segment 3, sector 5
    let mut recs = vec![rec(0, true, lba, 1)];
    for i in 0..40 {
        recs.push(rec(1 + i, true, 4096 + i * s * b, 1));
    }
    let mut c = cfg("hwsr", drive(128, 8), &[("policy", "block")]);
    c.drive.memory.as_mut().unwrap().battery_backed = true;
    let mut sim = Simulation::with_reader(c, Box::new(VecTrace::new(recs))).unwrap();
    sim.run().unwrap();
    // The first flush: block 2 read-merged, blocks 2, 3 written (region 0 shingles up: tracks 2, 3).
    let writes: Vec<_> = sim
        .device()
        .recent_ops()
        .filter(|o| o.kind == crate::device::OpKind::Write)
        .map(|o| (o.at.track.0, o.at.sector, o.count))
        .take(2)
        .collect();
    assert_eq!(writes, vec![(2, 48, 16), (3, 48, 16)]);
    let r = sim.report();
    assert_eq!(counter(&r, "flushes_over_one_segment"), 0.0);
    assert_eq!(
        counter(&r, "segments_rewritten"),
        counter(&r, "evictions") - counter(&r, "evictions_clean")
    );
}

#[test]
fn every_second_region_counts_blocks_from_its_far_edge() {
    // Block 0 of a segment of region 1 lies on its last track (9), so an
    // update of block 0 rewrites tracks 9, 8, 7, 6 in that order.
    let (b, s) = (16u64, 4u64);
    let region = 128 * s;
    let mut recs = vec![rec(0, true, region, b)];
    for i in 0..40 {
        recs.push(rec(1 + i, true, 4096 + i * s * b, 1));
    }
    let c = cfg("hwsr", drive(128, 8), &[("policy", "block")]);
    let mut sim = Simulation::with_reader(c, Box::new(VecTrace::new(recs))).unwrap();
    sim.run().unwrap();
    let tracks: Vec<_> = sim
        .device()
        .recent_ops()
        .filter(|o| o.kind == crate::device::OpKind::Write)
        .map(|o| o.at.track.0)
        .take(4)
        .collect();
    assert_eq!(tracks, vec![9, 8, 7, 6]);
}

#[test]
fn lwa_evicts_the_tail_blocks_segment_within_the_window_block_lru_one_block_segment_lru_the_whole_segment(
) {
    // Blocks 0 and 2 of segment 0 written first, then 26 blocks of other
    // segments fill the 28-block buffer; the next write evicts.
    let b = 16u64;
    let mut recs = vec![rec(0, true, 0, 1), rec(1, true, 2 * b, 1)];
    for i in 0..26 {
        recs.push(rec(2 + i, true, 1024 + i * 4 * b, 1));
    }
    recs.push(rec(30, true, 4000, 1));
    let go = |params: &[(&str, &str)]| run(cfg("hwsr", drive(128, 8), params), recs.clone());
    let r = go(&[("policy", "lwa"), ("window_blocks", "4")]);
    assert_eq!(
        (counter(&r, "evictions"), counter(&r, "blocks_evicted")),
        (1.0, 2.0)
    );
    let r = go(&[("policy", "lwa"), ("window_blocks", "1")]);
    assert_eq!(
        (counter(&r, "evictions"), counter(&r, "blocks_evicted")),
        (1.0, 1.0)
    );
    let r = go(&[("policy", "block")]);
    assert_eq!(
        (counter(&r, "evictions"), counter(&r, "blocks_evicted")),
        (1.0, 1.0)
    );
    let r = go(&[("policy", "segment")]);
    assert_eq!(
        (counter(&r, "evictions"), counter(&r, "blocks_evicted")),
        (1.0, 2.0)
    );
    // Block LRU then segment LRU differ once segment 0 is touched again.
    let mut recs2 = recs.clone();
    recs2.insert(28, rec(29, true, 2 * b, 1));
    let r = run(
        cfg("hwsr", drive(128, 8), &[("policy", "segment")]),
        recs2.clone(),
    );
    assert_eq!(
        counter(&r, "blocks_evicted"),
        1.0,
        "segment 0 is recent; the LRU segment is the first of the others"
    );
}

#[test]
fn reads_come_from_memory_then_ssd_then_disk_and_disk_reads_are_prefetched() {
    let recs = vec![
        rec(0, false, 100, 8), // disk, prefetched
        rec(1, false, 100, 8), // SSD hit
        rec(2, true, 100, 1),  // buffered; SSD copy invalidated
        rec(3, false, 100, 1), // memory hit
        rec(4, false, 101, 4), // SSD invalidated: disk, merged with the buffer
    ];
    let r = run(cfg("hwsr", drive(128, 8), &[]), recs);
    assert_eq!(counter(&r, "ssd_read_hits"), 1.0);
    assert_eq!(counter(&r, "memory_read_hits"), 1.0);
    assert_eq!(counter(&r, "disk_reads"), 2.0);
    assert_eq!(counter(&r, "ssd_invalidations"), 1.0);
    assert_eq!(counter(&r, "ssd_prefetched_blocks"), 2.0);
    let ssd = r
        .device
        .by_device
        .iter()
        .find(|d| d.device == "ssd")
        .unwrap();
    assert_eq!((ssd.read_ops, ssd.write_ops), (1, 2));
    // buffered-cmr has no SSD.
    let r = run(
        cfg("buffered-cmr", drive(128, 8), &[]),
        vec![
            rec(0, false, 100, 8),
            rec(1, false, 100, 8),
            rec(2, true, 5, 1),
        ],
    );
    assert_eq!(counter(&r, "disk_reads"), 2.0);
    assert!(r.device.by_device.iter().all(|d| d.device != "ssd"));
}

/// S-block rewrites on one S-block region of S = 20 log tracks and kappa = 1
/// (tracks of 1,280 sectors, 16-sector blocks: n = 80 S-blocks of 320
/// sectors; 84 slots, 4 of internal guard, 56 host S-blocks, 24 spare:
/// beta = 0.3). The buffer holds one S-block, so every write is flushed.
/// Returns (immigrated per collection, immigrated per host S-block).
fn sblock_gc(hot: Option<u64>, writes: u64) -> (f64, f64) {
    let mut d = drive(1280, 1);
    d.tracks = Some(41);
    d.layout.region_tracks = 20;
    d.layout.kappa_tracks = 1;
    d.memory = Some(SideConfig::ddr3_1333(20.0 * 16.0 * 512.0 / 1048576.0));
    let mut rng = Rng(7);
    let slot = 320u64;
    let recs = (0..writes)
        .map(|i| {
            let j = match hot {
                Some(h) => rng.below(h),
                None => rng.below(56),
            };
            rec(i, true, j * slot, slot)
        })
        .collect();
    let mut c = cfg("sblock", d, &[("policy", "segment")]);
    c.verify = false;
    let mut s = Simulation::with_reader(c, Box::new(VecTrace::new(recs))).unwrap();
    s.run().unwrap();
    let r = s.report();
    let (imm, gcs, app) = (
        counter(&r, "segments_immigrated"),
        counter(&r, "gc_runs"),
        counter(&r, "sblocks_appended"),
    );
    (imm / gcs, imm / (app - imm))
}

#[test]
fn sblock_immigrates_about_one_over_beta_when_invalid_sblocks_gather_at_the_head() {
    // Paper 001 section III.A: omega ~ 1/beta, assuming "invalid segments are
    // mostly concentrated to the head of circular log" (a hot set). Once
    // collection starts, every host S-block needs one collection. The live
    // log is the P - g = n = 80 slots outside the internal guard, less the
    // 1.5 free slots collection keeps on average (it stops at g + 2 free,
    // the append takes one): every S-block meets the tail once per 78.5
    // tail steps. In that time the tail moves the 54 cold S-blocks and
    // frees 78.5 - 54 = 24.5 slots, one per host S-block: 54 / 24.5 = 2.20
    // moves per collection. The paper's model (no free slots kept, no hot
    // set) gives (1 - beta) / beta = 56 / 24 = 2.33 moves, and 1 / beta =
    // 3.33 S-block writes per host S-block (the host's own included).
    let (per_gc, per_host) = sblock_gc(Some(2), 4000);
    eprintln!(
        "hot: {per_gc} per collection, {per_host} per host S-block; uniform: {:?}",
        sblock_gc(None, 4000)
    );
    let cycle = 54.0 / 24.5;
    assert!(
        (per_gc - cycle).abs() / cycle < 0.05,
        "{per_gc} per collection, expected {cycle}"
    );
    assert!((per_host - cycle).abs() / cycle < 0.05, "{per_host}");
    let (beta, writes) = (0.3, 1.0 + per_host);
    assert!(
        (writes - 1.0 / beta).abs() / (1.0 / beta) < 0.1,
        "{writes} S-block writes per host S-block"
    );
    // Uniform rewrites leave invalid copies spread along the log: FIFO
    // cleaning moves far less (u = (f - 1) / ln f; f / (1 - f) moves).
    let (per_gc_u, _) = sblock_gc(None, 4000);
    assert!(per_gc_u < 0.6 * per_gc, "uniform {per_gc_u}, hot {per_gc}");
}

/// Crash-sweep one layer: runs with crash points every `step` ops.
fn crash_sweep(layer: &str, battery: bool, runs: u64, step: u64, requests: u64) -> Report {
    crash_sweep_cached(layer, battery, runs, step, requests, false).0
}

/// [`crash_sweep`], with the drive's own write cache (256 KiB) beneath the
/// layer when `cached`; also returns the cached writes the crashes dropped.
fn crash_sweep_cached(
    layer: &str,
    battery: bool,
    runs: u64,
    step: u64,
    requests: u64,
    cached: bool,
) -> (Report, u64) {
    let mut total: Option<Report> = None;
    let mut crashes = 0;
    let mut lost = 0;
    let mut during = std::collections::BTreeMap::new();
    for k in 0..runs {
        let mut d = drive(128, 8);
        d.memory.as_mut().unwrap().battery_backed = battery;
        if cached {
            d.write_cache_mib = 0.25;
        }
        let mut c = cfg(layer, d, &[]);
        if cached {
            c.replay.write_cache = Some(true);
        }
        c.crash_at_ops = (0..250)
            .flat_map(|j| {
                [
                    15 + k * 3 + j * step,
                    if j % 4 == 0 { 16 + k * 3 + j * step } else { 0 },
                ]
            })
            .filter(|&p| p > 0)
            .collect();
        // S-block recovery reads every region holding records: keep to three regions.
        let cap = if layer == "sblock" { 960 } else { 6000 };
        let r = run(c, random_requests(50 + k, requests, cap, 5));
        crashes += r.crashes;
        lost += r.device.drive_cache.as_ref().map_or(0, |d| d.lost_ops);
        for (c, n) in &r.crashes_during {
            *during.entry(*c).or_insert(0) += n;
        }
        total = Some(r);
    }
    let mut r = total.unwrap();
    r.crashes = crashes;
    r.crashes_during = during;
    (r, lost)
}

#[test]
fn every_hybrid_layer_survives_crashes_with_the_drive_cache_beneath_it() {
    // The disk writes of flushes, rewrites and collection go through the
    // drive's volatile cache, which reorders them and loses what it holds
    // at each power loss: the layers flush before they let go of a copy.
    for l in LAYERS {
        let mut all = 0;
        let mut lost = 0;
        for battery in [true, false] {
            let step = if l == "sblock" { 31 } else { 11 };
            let (r, lo) = if battery {
                crash_sweep_cached(l, true, 2, step, 900, true)
            } else {
                crash_sweep_cached(l, false, 2, 61, 2500, true)
            };
            eprintln!(
                "{l} (battery {battery}, drive cache on): {} crashes, {lo} cached writes lost: {:?}",
                r.crashes, r.crashes_during
            );
            all += r.crashes;
            lost += lo;
        }
        assert!(all >= 500, "{l}: {all} crashes");
        assert!(
            lost >= 20,
            "{l}: the crashes dropped only {lost} cached writes"
        );
    }
}

#[test]
fn every_hybrid_layer_survives_crashes_inside_segment_rewrites_and_collection() {
    for l in LAYERS {
        let mut all = 0;
        for battery in [true, false] {
            // A volatile buffer empties at every crash: points further apart let it fill and flush.
            let step = if l == "sblock" { 31 } else { 11 };
            let r = if battery {
                crash_sweep(l, true, 4, step, 900)
            } else {
                crash_sweep(l, false, 4, 61, 2500)
            };
            let get = |k: &str| r.crashes_during.get(k).copied().unwrap_or(0);
            assert!(
                get("destage") >= 20,
                "{l} (battery {battery}): crashes inside flushes: {:?}",
                r.crashes_during
            );
            all += r.crashes;
            let d = &r.crashes_during;
            let get = |k: &str| d.get(k).copied().unwrap_or(0);
            eprintln!("{l} (battery {battery}): {} crashes: {d:?}", r.crashes);
            if l == "hwsr" {
                assert!(
                    get("rmw") >= 50,
                    "{l}: crashes inside segment rewrites: {d:?}"
                );
                if !battery {
                    assert!(
                        get("backup") >= 50,
                        "{l}: crashes while saving the scratch image: {d:?}"
                    );
                }
            }
            if l == "sblock" && battery {
                assert!(get("gc") >= 50, "{l}: crashes inside collection: {d:?}");
            }
        }
        assert!(all >= 1000, "{l}: {all} crashes");
    }
}

#[test]
fn a_volatile_buffer_loses_only_writes_not_yet_evicted_and_a_battery_backed_one_none() {
    // Write A (evicted by the 40 writes after it), then B, then a crash.
    let mk = || {
        let mut v = vec![rec(0, true, 0, 4)];
        for i in 0..40 {
            v.push(rec(1 + i, true, 1024 + i * 64, 1));
        }
        v.push(rec(41, true, 8, 4));
        v.push(rec(42, false, 0, 12));
        v
    };
    for battery in [false, true] {
        let mut d = drive(128, 8);
        d.memory.as_mut().unwrap().battery_backed = battery;
        let mut c = cfg("hwsr", d, &[]);
        c.crash_after = vec![42];
        let mut s = Simulation::with_reader(c, Box::new(VecTrace::new(mk()))).unwrap();
        s.run().unwrap();
        let r = s.report();
        assert_eq!(r.crashes, 1);
        // The verifier held A to its newest version (durable once evicted) and
        // accepted either version of B from the volatile buffer; the read after
        // the crash checked both.
        assert_eq!(r.verification.mismatches, 0);
        let used = *r.layer_counters.get("memory_used_bytes").unwrap();
        if battery {
            assert!(used > 0.0, "a battery-backed buffer keeps its blocks");
        } else {
            assert_eq!(used, 0.0, "a volatile buffer starts empty after a crash");
        }
    }
}

#[test]
fn bad_configurations_are_clear_errors() {
    let e = |c: RunConfig| {
        Simulation::with_reader(c, Box::new(VecTrace::new(vec![rec(0, true, 0, 1)])))
            .err()
            .unwrap()
            .to_string()
    };
    let mut d = drive(128, 8);
    d.memory = None;
    assert!(e(cfg("hwsr", d, &[])).contains("no [memory] table"));
    let mut d = drive(128, 8);
    d.ssd = None;
    assert!(e(cfg("sblock", d, &[])).contains("no [ssd] table"));
    assert!(e(cfg("hwsr", drive(128, 8), &[("block_sectors", "24")])).contains("divide"));
    let mut c = cfg("hwsr", drive(128, 8), &[]);
    c.replay.prefill = Some(crate::medium::prefill::PrefillSpec::Fraction(0.5));
    assert!(e(c).contains("empty drive"));
    let mut d = drive(128, 8);
    d.layout.kind = crate::geometry::LayoutKind::Cmr;
    assert!(e(cfg("hwsr", d, &[])).contains("'wave' layout"));
    assert!(e(cfg("sblock", drive(128, 8), &[("beta", "0.95")])).contains("cannot hold"));
}

#[test]
fn sblock_starts_from_a_prefilled_drive() {
    let mut c = cfg("sblock", drive(128, 8), &[]);
    c.replay.prefill = Some(crate::medium::prefill::PrefillSpec::Fraction(1.0));
    let r = run(c, random_requests(3, 600, 3000, 3));
    assert!(counter(&r, "segments_immigrated") > 0.0);
}

#[test]
fn a_hybrid_layer_that_never_flushes_the_drive_cache_loses_data_at_power_loss() {
    // `drive_flush = never` drops buffered copies once the drive has
    // acknowledged their write from its volatile cache, as a prototype
    // trusting the drive would: a power loss then loses acknowledged
    // data, and the verifier says so. The safe default survives the same
    // crash points (see the sweeps above).
    let mut lost = 0;
    for k in 0..6u64 {
        for (flush, expect_ok) in [("never", false), ("safe", true)] {
            let mut d = drive(128, 8);
            d.write_cache_mib = 0.25;
            let mut c = cfg("buffered-cmr", d, &[("drive_flush", flush)]);
            c.replay.write_cache = Some(true);
            c.crash_at_ops = (0..40).map(|j| 200 + k * 7 + j * 97).collect();
            let r = Simulation::with_reader(
                c,
                Box::new(VecTrace::new(random_requests(70 + k, 2500, 6000, 5))),
            )
            .and_then(|mut s| s.run());
            match (r, expect_ok) {
                (Ok(()), true) => {}
                (Err(crate::error::SimError::DataLoss(_)), false) => lost += 1,
                (Ok(()), false) => {}
                (r, _) => panic!("{flush}, run {k}: {r:?}"),
            }
        }
    }
    assert!(lost >= 3, "only {lost} of 6 runs without flushes lost data");
}

#[test]
fn the_papers_worked_addresses_are_where_a_run_puts_them() {
    // Paper 001 section II.C's example: 8,192-sector tracks, 64-sector
    // blocks, 20-track regions (here kappa = 8). Write LBAs 64, 1300 and
    // 163,905 through the layer, push them out of the memory buffer, and
    // find where the medium holds them.
    let mut d = drive(8192, 1);
    d.tracks = Some(2 * (2 * 20 + 8));
    d.layout.region_tracks = 20;
    d.layout.kappa_tracks = 8;
    // Memory for 64 blocks of 64 sectors (the layer needs more than a segment's 21).
    d.memory = Some(SideConfig {
        battery_backed: true,
        ..SideConfig::ddr3_1333(2.0)
    });
    let mut c = cfg("hwsr", d, &[("policy", "block")]);
    c.layer
        .params
        .insert("block_sectors".into(), serde_json::Value::from(64));
    let mut recs = vec![
        rec(0, true, 64, 1),
        rec(1, true, 1300, 1),
        rec(2, true, 163_905, 1),
    ];
    // Then writes to other segments of region 0 evict them (the buffer holds a few blocks).
    for i in 0..100 {
        recs.push(rec(3 + i, true, (20 + i) * 1280 + 5 * 64, 1));
    }
    let mut sim = Simulation::with_reader(c, Box::new(VecTrace::new(recs))).unwrap();
    sim.run().unwrap();
    let dev = sim.device();
    let at = |track: u64, sector: u32| {
        dev.peek(crate::units::PhysAddr {
            track: Track(track),
            sector,
        })
        .lba
    };
    // Formula (5): PBA 8192 (track 1, sector 0) and PBA 84 (track 0,
    // sector 84); region 0 is laid out as the formula says.
    assert_eq!(at(1, 0), 64);
    assert_eq!(at(0, 84), 1300);
    // Formula (5) gives PBA 172,033: track 21, sector 1, with no guard band
    // and blocks counted from the region's first track. On the wave-like
    // disk region 1 begins after the shared guard band (tracks 20-27) and
    // is shingled the other way, so its block 1 is its track 18 from the
    // start: physical track 28 + 18 = 46, sector 1 (docs/hwsr.md).
    assert_eq!(at(46, 1), 163_905);
    assert_ne!(at(21, 1), 163_905);
}
