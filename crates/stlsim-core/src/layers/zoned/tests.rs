//! The host-managed buffer layers against paper 004's rules, with
//! verification on, and crash injection inside write-backs.

use crate::drive::DriveConfig;
use crate::engine::report::Report;
use crate::engine::{LayerConfig, Mode, RunConfig, Simulation};
use crate::geometry::LayoutConfig;
use crate::medium::prefill::PrefillSpec;
use crate::trace::{Op, TraceRecord, TraceSpec, VecTrace};
use crate::units::{Bytes, Nanos};
use crate::xorshift::Rng;

/// Zones of 2 tracks of 64 sectors (128 blocks), 8 conventional, 40 sequential.
const ZS: u64 = 128;
pub(crate) const LAYERS: [&str; 4] = ["hm-fluid", "hm-fluid-loop", "hm-skylight", "amphisbaena"];

pub(crate) fn drive() -> DriveConfig {
    DriveConfig {
        name: "zoned-test".into(),
        sector_bytes: 4096,
        rpm: 7200.0,
        track_bytes: 64 * 4096,
        tracks: Some(2 * 48),
        capacity_gib: None,
        interface_mb_s: 0.0, // no link time: exact medium times
        write_cache_mib: 0.0,
        layout: LayoutConfig {
            kind: crate::geometry::LayoutKind::Zoned,
            zone_tracks: 2,
            conventional_zones: 8,
            max_open_zones: 2,
            ..Default::default()
        },
        ..Default::default()
    }
}

pub(crate) fn cfg(layer: &str, params: &[(&str, &str)]) -> RunConfig {
    let mut c = RunConfig {
        trace: TraceSpec {
            path: "memory".into(),
            ..Default::default()
        },
        drive: drive(),
        layer: LayerConfig {
            name: layer.into(),
            params: Default::default(),
        },
        ..Default::default()
    };
    // Paper 004: write cache and read-ahead off; requests one at a time.
    c.replay.mode = Mode::FlatOut;
    c.replay.write_cache = Some(false);
    c.verify = true;
    // 64 blocks of buffer, collected 4 at a time, unless a test says otherwise.
    c.layer
        .params
        .insert("buffer_mib".into(), serde_json::Value::from(0.25));
    c.layer
        .params
        .insert("collect_blocks".into(), serde_json::Value::from(4));
    for &(k, v) in params {
        let v = v
            .parse::<f64>()
            .map(serde_json::Value::from)
            .unwrap_or_else(|_| serde_json::Value::from(v));
        c.layer.params.insert(k.into(), v);
    }
    c
}

pub(crate) fn rec(i: u64, write: bool, lba: u64, n: u64) -> TraceRecord {
    TraceRecord {
        time: Nanos(i * 1_000),
        op: if write { Op::Write } else { Op::Read },
        offset: Bytes(lba * 4096),
        len: Bytes(n * 4096),
        line: i + 1,
    }
}

pub(crate) fn run(c: RunConfig, recs: Vec<TraceRecord>) -> Report {
    let mut s = Simulation::with_reader(c, Box::new(VecTrace::new(recs))).unwrap();
    s.run().unwrap_or_else(|e| panic!("{e}"));
    let r = s.report();
    assert_eq!(r.verification.mismatches, 0);
    assert!(r.verification.scan_blocks_checked > 0);
    r
}

pub(crate) fn counter(r: &Report, k: &str) -> f64 {
    *r.layer_counters
        .get(k)
        .unwrap_or_else(|| panic!("no counter {k} in {:?}", r.layer_counters.keys()))
}

/// `n` requests of 1-6 blocks at random offsets of the first `zones` native
/// zones (seeded); every `read_every`-th is a read.
pub(crate) fn random_requests(seed: u64, n: u64, zones: u64, read_every: u64) -> Vec<TraceRecord> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let z = rng.below(zones);
            rec(
                i,
                i % read_every != read_every - 1,
                z * ZS + rng.below(ZS - 6),
                1 + rng.below(6),
            )
        })
        .collect()
}

#[test]
fn a_writeback_past_the_write_pointer_appends_with_padding_and_one_below_it_is_an_rmw() {
    // Zone 0 gets blocks 10 and 20; 62 blocks of zones 1-2 fill the 64-block log,
    // and the next write makes Fluid clean from the tail: zone 0.
    let mut recs = vec![rec(0, true, 10, 1), rec(1, true, 20, 1)];
    for i in 0..62 {
        recs.push(rec(2 + i, true, ZS + (i % 2) * ZS + i / 2, 1));
    }
    recs.push(rec(64, true, 3 * ZS, 1));
    let r = run(cfg("hm-fluid", &[]), recs.clone());
    assert_eq!(counter(&r, "writebacks_rmw_free"), 1.0);
    assert_eq!(counter(&r, "writebacks_rmw"), 0.0);
    // 0..10 and 11..20 padded: 19 sectors, written with the padding cause.
    assert_eq!(counter(&r, "padding_sectors"), 19.0);
    let pad = r
        .device
        .by_cause
        .iter()
        .find(|c| c.cause == "padding")
        .unwrap();
    assert_eq!(pad.write_sectors, 19);
    assert_eq!(counter(&r, "victim_blocks"), 2.0);
    // Now block 5 of zone 0 (below its write pointer, 21) and a full log again.
    recs.push(rec(65, true, 5, 1));
    for i in 0..70 {
        recs.push(rec(66 + i, true, 4 * ZS + i, 1));
    }
    let r = run(cfg("hm-fluid", &[]), recs);
    assert!(counter(&r, "writebacks_rmw") >= 1.0);
    // The RMW read the zone's 21 valid sectors and rewrote them with the victim.
    let rmw = r.device.by_cause.iter().find(|c| c.cause == "rmw").unwrap();
    assert!(rmw.read_sectors >= 21, "{rmw:?}");
}

#[test]
fn on_a_full_drive_every_writeback_is_an_rmw_through_the_spare_zone() {
    let mut c = cfg("hm-fluid", &[]);
    c.replay.prefill = Some(PrefillSpec::Fraction(1.0));
    let r = run(c, random_requests(7, 600, 6, 5));
    assert!(counter(&r, "writebacks_rmw") >= 10.0);
    assert_eq!(counter(&r, "writebacks_rmw_free"), 0.0);
    assert_eq!(counter(&r, "padding_sectors"), 0.0);
    // One reset per RMW (the old zone, once its image is committed elsewhere).
    assert_eq!(
        r.device.zone_ops.unwrap().resets as f64,
        counter(&r, "writebacks_rmw")
    );
}

#[test]
fn fluid_updates_buffered_blocks_in_place_and_counts_write_hits() {
    let recs = vec![
        rec(0, true, 7, 4),
        rec(1, true, 8, 2),
        rec(2, true, 200, 1),
        rec(3, false, 7, 4),
    ];
    let r = run(cfg("hm-fluid", &[]), recs);
    assert_eq!(counter(&r, "blocks_written"), 7.0);
    assert_eq!(counter(&r, "write_hits"), 2.0);
    assert_eq!(counter(&r, "log_span_blocks"), 5.0);
    assert!((counter(&r, "write_hit_rate") - 2.0 / 7.0).abs() < 1e-12);
}

#[test]
fn blocks_written_once_never_hit_in_any_layer() {
    // Every block written once, in random order (as the fio iolog of the paper's repository).
    let mut rng = Rng(3);
    let mut blocks: Vec<u64> = (0..6 * ZS).collect();
    for i in (1..blocks.len()).rev() {
        blocks.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let recs: Vec<_> = blocks
        .iter()
        .enumerate()
        .map(|(i, &b)| rec(i as u64, true, b, 1))
        .collect();
    for l in LAYERS {
        let r = run(cfg(l, &[]), recs.clone());
        assert_eq!(counter(&r, "write_hits"), 0.0, "{l}");
        assert_eq!(counter(&r, "write_hit_rate"), 0.0, "{l}");
        assert!(
            counter(&r, "writebacks_rmw") + counter(&r, "writebacks_rmw_free") > 5.0,
            "{l}"
        );
    }
}

#[test]
fn fluid_loop_requeues_blocks_of_hot_zones_instead_of_writing_them_back() {
    // Zone 0's blocks are updated over and over; other zones stream through.
    let mut recs = vec![];
    for i in 0..400u64 {
        let (lba, n) = if i % 4 == 0 {
            ((i / 4) % 8, 1)
        } else {
            (ZS * (1 + i % 5) + (i * 7) % (ZS - 1), 1)
        };
        recs.push(rec(i, true, lba, n));
    }
    let plain = run(cfg("hm-fluid", &[]), recs.clone());
    let looped = run(cfg("hm-fluid-loop", &[]), recs);
    assert!(counter(&looped, "looped_blocks") > 10.0);
    // Zone 0's blocks stay buffered and keep hitting.
    assert!(counter(&looped, "write_hits") > counter(&plain, "write_hits"));
}

#[test]
fn skylight_writes_back_every_native_zone_of_a_full_buffer_zone() {
    // One part: 64 blocks of zones 0, 1 and 2, then one more write.
    let mut recs = vec![];
    for i in 0..64u64 {
        recs.push(rec(i, true, (i % 3) * ZS + i / 3, 1));
    }
    recs.push(rec(64, true, 5 * ZS, 1));
    let r = run(cfg("hm-skylight", &[("buffer_zones", "1")]), recs);
    assert_eq!(
        counter(&r, "writebacks_rmw") + counter(&r, "writebacks_rmw_free"),
        3.0
    );
    assert_eq!(counter(&r, "victim_blocks"), 64.0);
    assert_eq!(counter(&r, "buffer_parts"), 1.0);
    // An update is appended (a new copy), and still a hit.
    let r = run(
        cfg("hm-skylight", &[("buffer_zones", "2")]),
        vec![rec(0, true, 9, 1), rec(1, true, 9, 1)],
    );
    assert_eq!(counter(&r, "write_hits"), 1.0);
}

/// Runs of a write-back-heavy workload with crash points every `step` ops
/// from an offset; returns (crashes, crashes inside write-backs, crashes in recovery).
fn crash_sweep(layer: &str, runs: u64, step: u64, prefill: bool) -> (u64, u64, u64) {
    let (all, wb, rec_, _) = crash_sweep_cached(layer, runs, step, prefill, false);
    (all, wb, rec_)
}

/// [`crash_sweep`], with the drive's own write cache (1 MiB) beneath the
/// layer when `cached`; also returns the cached writes the crashes dropped.
fn crash_sweep_cached(
    layer: &str,
    runs: u64,
    step: u64,
    prefill: bool,
    cached: bool,
) -> (u64, u64, u64, u64) {
    let (mut all, mut wb, mut rec_, mut lost) = (0, 0, 0, 0);
    for k in 0..runs {
        let mut c = cfg(layer, &[]);
        if prefill {
            c.replay.prefill = Some(PrefillSpec::Fraction(1.0));
        }
        if cached {
            c.drive.write_cache_mib = 1.0;
            c.replay.write_cache = Some(true);
        }
        // Pairs of close points, so that some crashes fall inside recovery itself.
        // Points `step` apart (more than a recovery's operations), every third
        // one followed closely by another, so some crashes fall inside recovery.
        c.crash_at_ops = (0..300)
            .flat_map(|j| {
                [
                    20 + k * 5 + j * step,
                    if j % 3 == 0 {
                        21 + k * 5 + j * step + j % 4
                    } else {
                        0
                    },
                ]
            })
            .filter(|&p| p > 0)
            .collect();
        let r = run(c, random_requests(100 + k, 700, 6, 4));
        all += r.crashes;
        wb += ["gc", "rmw", "padding"]
            .iter()
            .filter_map(|c| r.crashes_during.get(*c))
            .sum::<u64>();
        rec_ += r.crashes_during.get("recovery").copied().unwrap_or(0);
        lost += r.device.drive_cache.map_or(0, |d| d.lost_ops);
    }
    (all, wb, rec_, lost)
}

#[test]
fn every_buffer_layer_survives_crashes_with_the_drive_cache_beneath_it() {
    // Host-side layers under a drive whose volatile cache reorders their
    // writes and loses what it holds at each power loss: they flush before
    // acknowledging and before each log record, which they write with FUA.
    for l in LAYERS {
        let (all_e, wb_e, _, lost_e) = crash_sweep_cached(l, 3, 23, false, true);
        let (all_f, wb_f, _, lost_f) = crash_sweep_cached(l, 3, 23, true, true);
        let (all, wb, lost) = (all_e + all_f, wb_e + wb_f, lost_e + lost_f);
        eprintln!(
            "{l} (drive cache on): {all} crashes, {wb} in write-backs, {lost} cached writes lost"
        );
        assert!(all >= 500, "{l}: {all} crashes");
        assert!(wb >= 100, "{l}: {wb} crashes fell inside write-backs");
        assert!(
            lost >= 50,
            "{l}: the crashes dropped only {lost} cached writes"
        );
    }
}

#[test]
fn every_buffer_layer_survives_crashes_inside_writebacks() {
    for l in LAYERS {
        let (all_e, wb_e, _) = crash_sweep(l, 6, 23, false);
        let (all_f, wb_f, rec_f) = crash_sweep(l, 6, 23, true);
        let (all, wb) = (all_e + all_f, wb_e + wb_f);
        eprintln!("{l}: {all} crashes, {wb} in write-backs, {rec_f} in recovery");
        assert!(all >= 1000, "{l}: {all} crashes");
        assert!(wb >= 300, "{l}: {wb} crashes fell inside write-backs");
        assert!(rec_f >= 10, "{l}: {rec_f} crashes fell inside recovery");
    }
}

#[test]
fn a_drive_without_conventional_zones_or_too_small_for_the_buffer_is_refused() {
    let mut c = cfg("hm-fluid", &[]);
    c.drive.layout.conventional_zones = 0;
    let e = Simulation::with_reader(c, Box::new(VecTrace::new(vec![rec(0, true, 0, 1)])))
        .err()
        .unwrap();
    assert!(e.to_string().contains("conventional zones"), "{e}");
    let c = cfg("hm-fluid", &[("buffer_mib", "64")]);
    let e = Simulation::with_reader(c, Box::new(VecTrace::new(vec![rec(0, true, 0, 1)])))
        .err()
        .unwrap();
    assert!(e.to_string().contains("does not fit"), "{e}");
    let mut c = cfg("hm-fluid", &[]);
    c.drive.layout.kind = crate::geometry::LayoutKind::Smr;
    let e = Simulation::with_reader(c, Box::new(VecTrace::new(vec![rec(0, true, 0, 1)])))
        .err()
        .unwrap();
    assert!(e.to_string().contains("'zoned' layout"), "{e}");
}

#[test]
fn the_buffer_is_one_percent_of_the_traces_access_range_by_default() {
    let mut c = cfg("hm-fluid", &[]);
    c.layer.params.remove("buffer_mib");
    // Range 100..4100: 4,000 blocks, so 40.
    let r = run(c, vec![rec(0, true, 100, 1), rec(1, true, 4099, 1)]);
    assert_eq!(counter(&r, "buffer_bytes"), 40.0 * 4096.0);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Every read returns the newest acknowledged write, for every buffer
        /// layer, whatever the workload, buffer size, starting state, crash
        /// point and drive cache beneath it.
        #[test]
        fn buffer_layers_keep_every_block(
            layer in 0..LAYERS.len(),
            seed in any::<u64>(),
            zones in 1u64..8,
            read_every in 2u64..6,
            buffer_kib in prop_oneof![Just(256u64), Just(512u64), Just(1024u64)],
            full in any::<bool>(),
            crash in proptest::option::of(0u64..3_000),
            drive_cache in prop_oneof![Just(None), Just(Some(crate::front_end::queued_cache::Reorder::Fifo)), Just(Some(crate::front_end::queued_cache::Reorder::Sptf))],
        ) {
            let mut c = cfg(LAYERS[layer], &[]);
            c.layer.params.insert("buffer_mib".into(), serde_json::Value::from(buffer_kib as f64 / 1024.0));
            if full {
                c.replay.prefill = Some(PrefillSpec::Fraction(1.0));
            }
            // The drive's own cache beneath, in arrival order or reordered.
            if let Some(reorder) = drive_cache {
                c.drive.write_cache_mib = 1.0;
                c.drive.queue = Some(crate::front_end::queued_cache::QueueConfig { depth: 32, reorder });
                c.replay.write_cache = Some(true);
            }
            c.crash_at_ops = crash.into_iter().collect();
            let recs = random_requests(seed, 400, zones, read_every);
            let mut s = Simulation::with_reader(c, Box::new(VecTrace::new(recs))).unwrap();
            let r = s.run();
            prop_assert!(r.is_ok(), "{}: {}", LAYERS[layer], r.err().unwrap());
        }
    }
}
/// Found by the property test: a buffer write spanning two tracks, cut by a
/// power loss after its first track, must leave that track's sectors with
/// their records (an in-place update had dropped the old record, and the
/// block fell back to its native zone's older copy).
#[test]
fn a_torn_buffer_write_keeps_the_records_of_the_sectors_it_wrote() {
    let mut c = cfg("hm-fluid", &[("buffer_mib", "0.5")]);
    c.replay.prefill = Some(PrefillSpec::Fraction(1.0));
    c.crash_at_ops = vec![963];
    let r = run(c, random_requests(1623498862690627052, 400, 5, 4));
    assert_eq!(r.crashes, 1);
}

/// Found by the property test: an Amphisbaena write placed in rounds keeps
/// the labels of its first round when asking for room.
#[test]
fn a_write_placed_in_rounds_keeps_its_labels() {
    run(
        cfg("amphisbaena", &[]),
        random_requests(1139870113856869247, 400, 1, 4),
    );
}

/// Paper 004's no-reuse case, on the real fio log bundled with the tests
/// (`tests/data/iolog_8G.log.gz`: 17,395 random 4 KiB writes over 8 GiB,
/// every block written once): no layer ever hits, with the buffer at 1 % of
/// the log's access range.
#[test]
fn on_the_fio_log_that_writes_every_block_once_no_layer_hits() {
    for l in LAYERS {
        let mut c = cfg(l, &[]);
        c.layer.params.remove("buffer_mib");
        c.layer.params.remove("collect_blocks");
        c.drive.track_bytes = 256 * 1024;
        c.drive.tracks = None;
        c.drive.capacity_gib = Some(10.0);
        c.drive.layout.zone_tracks = 16;
        c.drive.layout.conventional_zones = 32;
        c.trace = TraceSpec {
            path: format!(
                "{}/../../tests/data/iolog_8G.log.gz",
                env!("CARGO_MANIFEST_DIR")
            ),
            ..Default::default()
        };
        let mut s = Simulation::new(c).unwrap();
        s.run().unwrap_or_else(|e| panic!("{l}: {e}"));
        let r = s.report();
        assert_eq!(r.verification.mismatches, 0);
        assert_eq!(counter(&r, "blocks_written"), 17_395.0, "{l}");
        assert_eq!(counter(&r, "write_hits"), 0.0, "{l}");
        assert_eq!(counter(&r, "write_hit_rate"), 0.0, "{l}");
        // 1 % of the 8 GiB range, in 4 KiB blocks.
        let range_blocks = counter(&r, "buffer_bytes") / 4096.0;
        assert!(
            (range_blocks - 20_967.0).abs() < 30.0,
            "{l}: {range_blocks}"
        );
    }
}

/// ZBC's zone rules for every layer, from the registry: on a host-managed
/// drive each layer that is not of the `zoned` kind is refused before it
/// runs, in one line naming the drive and the layer (a real drive would
/// fail its in-place writes with UNALIGNED WRITE COMMAND); every zoned
/// layer is accepted.
#[test]
fn host_managed_drive_refuses_every_layer_that_is_not_zone_aware() {
    use crate::layers::{Params, REGISTRY};
    let d = drive();
    for e in REGISTRY {
        let params = Params::resolve(e.name, e.params, &Default::default()).unwrap();
        let got = e.drive_for(&d, &params);
        if e.layout.kind() == Some(crate::geometry::LayoutKind::Zoned) {
            assert!(got.is_ok(), "{}: {:?}", e.name, got.err());
            continue;
        }
        let msg = got.expect_err(e.name).to_string();
        assert!(!msg.contains('\n'), "{msg}");
        assert!(msg.contains(e.name) && msg.contains("zoned-test"), "{msg}");
    }
    // The conventional layers name what to run instead.
    let params = Params::resolve("cmr", &[], &Default::default()).unwrap();
    let msg = crate::layers::find("cmr")
        .unwrap()
        .drive_for(&d, &params)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("not zone-aware") && msg.contains("hm-fluid"),
        "{msg}"
    );
    // A zoned drive with no sequential zone takes in-place writes anywhere.
    let mut all_conventional = drive();
    all_conventional.layout.conventional_zones = 48;
    let d = crate::layers::find("cmr")
        .unwrap()
        .drive_for(&all_conventional, &params)
        .unwrap();
    assert_eq!(d.layout.kind, crate::geometry::LayoutKind::Cmr);
    all_conventional.layout.conventional_zones = 47;
    assert!(crate::layers::find("cmr")
        .unwrap()
        .drive_for(&all_conventional, &params)
        .is_err());
}

/// Issue 36: a buffer layer's cleaning runs only as the engine's counted
/// stages, never out of their sight: every sector it writes for any cause
/// but the host's is written inside a stage (the sectors
/// `waf_excluding_moves` leaves out). A write that finds the buffer full
/// part-way through hands its rest back (`write_part`) and the engine runs
/// the stage; `engine::stage_tests` pins that loop with a layer that always
/// takes writes in parts (the engine's wait for room before a write makes
/// it rare: none of these runs has one; hm-fluid-loop on the CloudPhysics
/// sample has 534, docs/hm-smr.md).
#[test]
fn a_buffer_layers_cleaning_is_written_only_inside_the_engines_stages() {
    use crate::device::Cause;
    for l in LAYERS {
        let c = cfg(l, &[]);
        let mut s = Simulation::with_reader(
            c,
            Box::new(VecTrace::new(random_requests(
                1139870113856869247,
                400,
                1,
                4,
            ))),
        )
        .unwrap();
        s.run().unwrap_or_else(|e| panic!("{l}: {e}"));
        let dev = s.device();
        let not_host: u64 = Cause::ALL
            .iter()
            .zip(dev.write_counts())
            .filter(|(c, _)| **c != Cause::Host)
            .map(|(_, n)| n.sectors)
            .sum();
        assert!(not_host > 0, "{l}: no cleaning");
        assert_eq!(dev.stage_write_sectors(), not_host, "{l}");
        let r = s.report();
        assert_eq!(r.verification.mismatches, 0, "{l}");
        assert!(r.background.stages_foreground > 0, "{l}");
    }
}
