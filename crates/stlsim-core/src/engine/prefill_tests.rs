//! The drive's starting state: prefilled drives, folding into the prefill,
//! the first pass over the trace, and the warnings of irregular runs.

use super::tests::{cfg, data_path, imr_drive, rec, run, small_drive, NAIVE_IMR};
use super::*;
use crate::error::SimError;
use crate::medium::prefill::{HomeMap, Prefill, PrefillSpec};
use crate::trace::TraceRecord;
use crate::trace::{Op, TraceSpec, VecTrace};
use crate::units::{PhysAddr, Track};

fn verified(drive: crate::drive::DriveConfig, layer: &str, prefill: PrefillSpec) -> RunConfig {
    let mut c = cfg(drive, layer);
    c.verify = true;
    c.replay.prefill = Some(prefill);
    c
}

#[test]
fn reads_of_a_prefilled_drive_return_version_zero_and_are_verified() {
    // 2000 tracks of 100 sectors; half the drive prefilled.
    let c = verified(small_drive("cmr"), "cmr", PrefillSpec::Fraction(0.5));
    let recs = vec![
        rec(0, Op::Read, 5, 10),       // prefilled
        rec(10, Op::Write, 7, 2),      // overwrites two prefilled blocks
        rec(20, Op::Read, 0, 20),      // versions 0, 1 and 0 again
        rec(30, Op::Read, 99_990, 20), // straddles the end of the prefill (LBA 100,000)
        rec(40, Op::Read, 150_000, 4), // never written: empty
    ];
    let s = run(c, recs).unwrap();
    let r = s.report();
    assert_eq!(r.prefill.limit_sectors, Some(100_000));
    assert_eq!(r.prefill.tracks, 1000);
    assert_eq!(r.verification.read_blocks_checked, 54);
    // Both the read that straddles the prefill and the one beyond it are checked.
    assert_eq!(
        s.device().peek(PhysAddr {
            track: Track(999),
            sector: 99
        }),
        Token::data(Lba(99_999), 0)
    );
    assert!(s
        .device()
        .peek(PhysAddr {
            track: Track(1000),
            sector: 0
        })
        .is_empty());
    // No simulated time for the prefill: the first read is the first thing the device did.
    assert!(r.simulated_s < 0.1, "{}", r.simulated_s);
}

#[test]
fn naive_imr_is_caught_on_a_prefilled_drive_whose_neighbours_the_trace_never_wrote() {
    // Only bottom tracks are written (group of 1: LBAs 0..100 on bottom 0,
    // 100..200 on top 1, 200..300 on bottom 2 ...); no top track is ever
    // written or read by the trace, yet each holds prefilled data.
    let recs: Vec<_> = (0..20u64)
        .map(|i| rec(i * 1000, Op::Write, 200 * (i + 5) + 10, 4))
        .collect();
    // Empty drive: nothing to destroy, the broken layer passes.
    let c = verified(imr_drive(), "naive-imr", PrefillSpec::Fraction(0.0));
    let mut s =
        Simulation::with_layer(c, &NAIVE_IMR, Box::new(VecTrace::new(recs.clone()))).unwrap();
    s.run().unwrap();
    // Full drive: the final scan finds the destroyed top-track data.
    let c = verified(imr_drive(), "naive-imr", PrefillSpec::Fraction(1.0));
    let mut s = Simulation::with_layer(c, &NAIVE_IMR, Box::new(VecTrace::new(recs))).unwrap();
    let e = s.run().unwrap_err();
    let SimError::DataLoss(d) = &e else {
        panic!("expected data loss, got {e}")
    };
    assert!(d.during.contains("final scan"), "{e}");
    assert_eq!(
        d.expected, 0,
        "the lost block is prefilled data the host never wrote: {e}"
    );
    assert!(
        d.destroyed_by
            .as_deref()
            .unwrap_or("")
            .contains("Write host"),
        "{e}"
    );
}

#[test]
fn imr_layers_treat_prefilled_neighbours_as_data() {
    // Writes to bottom tracks next to never-written tops: skipped RMWs on an
    // empty drive, real ones on a full drive.
    let recs: Vec<_> = (0..10u64)
        .map(|i| rec(i * 100_000, Op::Write, 200 * (i + 5) + 10, 4))
        .collect();
    let go = |f: f64| {
        let mut c = verified(imr_drive(), "imr-rmw", PrefillSpec::Fraction(f));
        c.replay.write_cache = Some(false);
        run(c, recs.clone()).unwrap().report()
    };
    let (empty, full) = (go(0.0), go(1.0));
    assert_eq!(empty.layer_counters["rmw_skipped_empty"], 10.0);
    assert_eq!(empty.layer_counters["rmws"], 0.0);
    assert_eq!(full.layer_counters["rmws"], 10.0);
    assert!(full.waf > empty.waf);
    // The scans covered the prefilled neighbours the RMWs rewrote.
    assert!(
        full.verification.scan_blocks_checked > 10 * 200,
        "{:?}",
        full.verification
    );
}

#[test]
fn footprint_prefill_fills_every_track_the_trace_touches_whole() {
    let c = verified(small_drive("cmr"), "cmr", PrefillSpec::Footprint);
    let recs = vec![
        rec(0, Op::Write, 150, 10),
        rec(10, Op::Read, 1000, 300),
        rec(20, Op::Read, 100, 100),
    ];
    let s = run(c, recs).unwrap();
    let r = s.report();
    // Track 1 (LBAs 100..200) and tracks 10, 11, 12 (LBAs 1000..1300).
    assert_eq!(r.prefill.tracks, 4);
    assert_eq!(r.prefill.limit_sectors, None);
    assert_eq!(
        s.device().peek(PhysAddr {
            track: Track(1),
            sector: 0
        }),
        Token::data(Lba(100), 0)
    );
    assert!(s
        .device()
        .peek(PhysAddr {
            track: Track(2),
            sector: 0
        })
        .is_empty());
}

#[test]
fn footprint_prefill_needs_a_trace_that_can_be_read_twice() {
    let spec = TraceSpec {
        path: "memory.csv".into(),
        format: Some(crate::trace::Format::Msr),
        ..Default::default()
    };
    let reader =
        crate::trace::open::open_reader(Box::new(std::io::Cursor::new(b"".to_vec())), &spec)
            .unwrap();
    let c = verified(small_drive("cmr"), "cmr", PrefillSpec::Footprint);
    let e = Simulation::with_reader(c, reader).err().unwrap();
    assert!(e.to_string().contains("read again"), "{e}");
}

#[test]
fn prefill_fractions_must_be_fractions() {
    for bad in [-0.1, 1.5, f64::NAN] {
        let c = verified(small_drive("cmr"), "cmr", PrefillSpec::Fraction(bad));
        let e = run(c, vec![]).err().unwrap();
        assert!(e.to_string().contains("prefill"), "{e}");
    }
}

#[test]
fn the_drive_description_gives_the_default_and_the_run_overrides_it() {
    let mut d = small_drive("cmr");
    d.prefill = Some(PrefillSpec::Fraction(1.0));
    let mut c = cfg(d, "cmr");
    c.verify = true;
    let r = run(c.clone(), vec![rec(0, Op::Read, 0, 1)])
        .unwrap()
        .report();
    assert_eq!(r.prefill.tracks, 2000);
    c.replay.prefill = Some(PrefillSpec::Fraction(0.0));
    let r = run(c, vec![rec(0, Op::Read, 0, 1)]).unwrap().report();
    assert_eq!(r.prefill.tracks, 0);
}

#[test]
fn fold_to_prefill_folds_lbas_into_the_prefilled_range() {
    let mut c = verified(small_drive("cmr"), "cmr", PrefillSpec::Fraction(0.25));
    c.replay.fold_to_prefill = true;
    // The prefilled range is LBAs 0..50,000.
    let recs = vec![
        rec(0, Op::Write, 60_000, 4),  // -> 10,000
        rec(10, Op::Read, 10_000, 4),  // sees it
        rec(20, Op::Write, 49_998, 4), // straddles the end: moved back to 49,996
        rec(30, Op::Read, 120, 4),
    ];
    let s = run(c, recs).unwrap();
    let r = s.report();
    assert_eq!(
        r.device
            .by_cause
            .iter()
            .map(|c| c.write_sectors)
            .sum::<u64>(),
        8
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("2 request(s)") && w.contains("fold_to_prefill")),
        "{:?}",
        r.warnings
    );
    assert_eq!(
        s.device().peek(PhysAddr {
            track: Track(100),
            sector: 0
        }),
        Token::data(Lba(10_000), 1)
    );
    // Without a prefill there is nothing to fold into.
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.replay.fold_to_prefill = true;
    let e = run(c, vec![]).err().unwrap();
    assert!(e.to_string().contains("fold_to_prefill"), "{e}");
}

#[test]
fn prefilled_sequential_zones_start_with_their_write_pointers_after_the_data() {
    let mut d = small_drive("zoned");
    d.layout.zone_tracks = 10;
    d.layout.conventional_zones = 2;
    // 2000 tracks of 100 sectors: 200 zones of 1000 sectors; data on LBAs 0..50,050.
    let geom = d.geometry().unwrap();
    let mut m = crate::medium::Medium::new(&geom, false);
    m.set_prefill(&geom, Prefill::below(&geom, HomeMap::default(), 50_050));
    assert_eq!(
        m.write_pointer(2),
        Some(Lba(3000)),
        "a full sequential zone"
    );
    assert_eq!(
        m.write_pointer(50),
        Some(Lba(50_050)),
        "the zone the prefill ends in"
    );
    assert_eq!(m.write_pointer(51), Some(Lba(51_000)), "an empty zone");
    assert_eq!(
        m.write_pointer(0),
        None,
        "conventional zones have no pointer"
    );
    assert_eq!(
        m.zones().info(2).cond,
        crate::medium::zones::ZoneCondition::Full
    );
    assert_eq!(
        m.zones().info(50).cond,
        crate::medium::zones::ZoneCondition::Closed
    );
    assert_eq!(
        m.zones().info(51).cond,
        crate::medium::zones::ZoneCondition::Empty
    );
}

#[test]
fn a_prefilled_20_tb_drive_costs_a_bit_a_track() {
    // 20 TB of 1.5 MiB tracks: 12.7 M tracks. Verification off (the usual
    // configuration for big runs) and on (one more bitmap of touched tracks).
    let d = crate::drive::DriveConfig {
        sector_bytes: 4096,
        track_bytes: 1536 * 1024,
        capacity_gib: Some(20e12 / (1u64 << 30) as f64),
        tracks: None,
        layout: crate::geometry::LayoutConfig {
            kind: crate::geometry::LayoutKind::Imr,
            group_tracks: 8,
            ..Default::default()
        },
        ..Default::default()
    };
    let g = d.geometry().unwrap();
    assert!(g.tracks() > 12_000_000, "{}", g.tracks());
    for tracked in [false, true] {
        let mut m = crate::medium::Medium::new(&g, tracked);
        let before = m.heap_bytes();
        m.set_prefill(&g, Prefill::below(&g, HomeMap::default(), g.capacity().0));
        let added = m.heap_bytes() - before;
        assert_eq!(m.prefill().track_count(), g.tracks());
        assert!(added < 2 << 20, "prefill added {added} bytes");
    }
}

#[test]
fn each_irregularity_of_a_run_is_a_warning() {
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.replay.fold = true;
    c.crash_at_ops = vec![5_000_000];
    let recs = vec![
        rec(100, Op::Write, 0, 4),
        rec(50, Op::Write, 10, 4),          // went backwards
        rec(200, Op::Write, 10_000_000, 4), // beyond the capacity: folded
        TraceRecord {
            len: crate::units::Bytes(0),
            ..rec(300, Op::Read, 0, 1)
        }, // empty
    ];
    let r = run(c, recs).unwrap().report();
    let w = r.warnings.join("\n");
    assert!(w.contains("1 trace timestamp(s) went backwards"), "{w}");
    assert!(w.contains("folded into it (fold)"), "{w}");
    assert!(
        w.contains("1 zero-length trace record(s) were skipped"),
        "{w}"
    );
    assert!(
        w.contains("physical operation 5000000") && w.contains("never fired"),
        "{w}"
    );
    // A clean run has none.
    let r = run(
        cfg(small_drive("cmr"), "cmr"),
        vec![rec(0, Op::Write, 0, 4)],
    )
    .unwrap()
    .report();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn spares_the_home_map_does_not_use_are_warned_about() {
    // DiskSim's spares and management area are carried in the zone table
    // but mapped only on CMR drives with a given track count, and an empty
    // front only when it ends on a track's first LBA: the report says so
    // instead of changing silently.
    let mut d = small_drive("cmr");
    d.zones = vec![crate::geometry::ZoneSpec {
        first_track: 0,
        sectors_per_track: (d.track_bytes / d.sector_bytes as u64) as u32,
        spare_sectors_per_cylinder: 3,
        front_empty_sectors: 10,
        ..Default::default()
    }];
    let warned = |d: &crate::drive::DriveConfig| {
        let r = run(cfg(d.clone(), "cmr"), vec![rec(0, Op::Write, 0, 4)])
            .unwrap()
            .report();
        let w = r.warnings.join("\n");
        assert!(w.contains("does not map"), "{w}");
        w
    };
    // 97 LBAs a track: the 10-sector front ends inside track 0.
    let w = warned(&d);
    assert!(w.contains("give front_empty_sectors ("), "{w}");
    d.tracks = None;
    d.capacity_gib = Some(0.5);
    let w = warned(&d);
    assert!(
        w.contains("front_empty_sectors, spare_sectors_per_cylinder"),
        "{w}"
    );
}

#[test]
fn crash_points_beyond_the_trace_are_rejected_before_the_run() {
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.crash_after = vec![3, 10];
    let recs = (0..5).map(|i| rec(i, Op::Write, i * 10, 1)).collect();
    let e = run(c.clone(), recs).err().unwrap();
    assert!(
        e.to_string()
            .contains("crash_after 10 lies beyond the end of the trace, which holds 5 requests"),
        "{e}"
    );
    // From a file too (the first pass reads it).
    c.trace = TraceSpec {
        path: data_path("wdev_3.csv"),
        ..Default::default()
    };
    c.crash_after = vec![1_000_000];
    let e = Simulation::new(c).err().unwrap();
    assert!(
        e.to_string().contains("crash_after 1000000 lies beyond"),
        "{e}"
    );
}

#[test]
fn an_interval_layer_with_few_intervals_warns_it_is_not_steady_state() {
    let mut d = small_drive("imr");
    d.layout.group_tracks = 2;
    let recs: Vec<_> = (0..100u64)
        .map(|i| rec(i * 1000, Op::Write, (i * 37) % 5000, 4))
        .collect();
    let mut c = cfg(d.clone(), "imr-flip");
    c.layer
        .params
        .insert("interval_writes".into(), serde_json::Value::from(20));
    let r = run(c.clone(), recs.clone()).unwrap().report();
    assert_eq!(r.intervals_completed, Some(5));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("completed 5 interval(s)") && w.contains("not steady state")),
        "{:?}",
        r.warnings
    );
    c.layer
        .params
        .insert("interval_writes".into(), serde_json::Value::from(10));
    let r = run(c, recs).unwrap().report();
    assert_eq!(r.intervals_completed, Some(10));
    assert!(
        !r.warnings.iter().any(|w| w.contains("steady")),
        "{:?}",
        r.warnings
    );
    // Layers that do not work in intervals report none.
    let r = run(cfg(d, "imr-rmw"), vec![rec(0, Op::Write, 0, 4)])
        .unwrap()
        .report();
    assert_eq!(r.intervals_completed, None);
}

#[test]
fn a_repeated_trace_replays_its_selection_shifted_in_time() {
    let spec = TraceSpec {
        path: data_path("wdev_3.csv"),
        ..Default::default()
    };
    let count = |spec: &TraceSpec| {
        let mut r = crate::trace::open_trace(spec).unwrap();
        let mut v = vec![];
        while let Some(x) = r.next_record().unwrap() {
            v.push(x);
        }
        v
    };
    let once = count(&spec);
    let thrice = count(&TraceSpec {
        repeat: 3,
        ..spec.clone()
    });
    assert_eq!(thrice.len(), 3 * once.len());
    let n = once.len();
    let span = once[n - 1].time.0 - once[0].time.0;
    let gap = span / (n as u64 - 1);
    // The second copy starts one mean gap after the first ends, same offsets.
    assert_eq!(thrice[n].time.0, once[n - 1].time.0 + gap);
    assert_eq!(thrice[n].offset, once[0].offset);
    assert_eq!(
        thrice[2 * n + 5].time.0 - thrice[2 * n].time.0,
        once[5].time.0 - once[0].time.0
    );
    assert!(crate::trace::open_trace(&TraceSpec { repeat: 0, ..spec }).is_err());
}

#[test]
fn waf_groups_add_up_and_moves_are_left_out_where_asked() {
    let mut c = cfg(super::tests::tiny_imr(64, 1.0), "imr-flip");
    super::tests::set_declared(
        &mut c,
        crate::layers::find("imr-flip").unwrap(),
        &super::tests::BUSY,
    );
    c.replay.prefill = Some(PrefillSpec::Fraction(1.0));
    c.replay.waf_every = 20;
    let recs: Vec<_> = (0..400u64)
        .map(|i| {
            rec(
                i * 5000,
                Op::Write,
                (i * 7919 + (i % 5) * 64) % 2400,
                1 + i % 40,
            )
        })
        .collect();
    let r = run(c, recs).unwrap().report();
    let sum: f64 = r.waf_by_group.values().sum();
    assert!(
        (sum - r.waf).abs() < 1e-9,
        "{:?} vs {}",
        r.waf_by_group,
        r.waf
    );
    assert!(
        r.waf_by_group["moves"] > 0.0 && r.waf_by_group["rmw"] > 0.0,
        "{:?}",
        r.waf_by_group
    );
    assert!(
        r.waf_excluding_moves < r.waf - r.waf_by_group["moves"] + 1e-9,
        "{} {:?}",
        r.waf_excluding_moves,
        r.waf_by_group
    );
    assert!(r.waf_steady.is_some());
    assert!(r.background.stages > 0, "{:?}", r.background);
    // CMR: WAF 1 by every measure.
    let r = run(
        cfg(small_drive("cmr"), "cmr"),
        vec![rec(0, Op::Write, 0, 4), rec(1, Op::Write, 9, 4)],
    )
    .unwrap()
    .report();
    assert_eq!(
        (r.waf, r.waf_excluding_moves, r.waf_by_group["host"]),
        (1.0, 1.0, 1.0)
    );
}

#[test]
fn a_drive_with_spare_tracks_runs_verified_and_prefilled() {
    // Two surfaces, zones with an empty front and spare tracks (mapped):
    // a prefilled, verified run of writes and reads over the whole LBA
    // space finds every block where it was written, and never touches a
    // spare track.
    let mut d = small_drive("cmr");
    d.surfaces = 2;
    d.head_switch_ms = 0.5;
    d.write_settle_ms = -0.2;
    d.rotation = crate::mechanics::Rotation::Angular;
    d.zones = vec![
        crate::geometry::ZoneSpec {
            first_track: 0,
            sectors_per_track: 100,
            front_empty_sectors: 200,
            spare_tracks: 4,
            track_skew_sectors: 7,
            cylinder_skew_sectors: 13,
            ..Default::default()
        },
        crate::geometry::ZoneSpec {
            first_track: 1000,
            sectors_per_track: 90,
            spare_tracks: 2,
            track_skew_sectors: 6,
            cylinder_skew_sectors: 11,
            first_block_offset_sectors: 5,
            ..Default::default()
        },
    ];
    let cap = (994 * 100 + 998 * 90) as u64;
    let mut c = cfg(d, "cmr");
    c.verify = true;
    c.replay.prefill = Some(PrefillSpec::Fraction(1.0));
    let mut recs = vec![];
    for i in 0..200u64 {
        let lba = (i * 7919 * 13) % (cap - 300);
        recs.push(rec(
            i * 100,
            if i % 3 == 0 { Op::Read } else { Op::Write },
            lba,
            1 + i % 250,
        ));
    }
    let s = run(c, recs).unwrap();
    assert_eq!(s.device().geometry().capacity().0, cap);
    for t in [0u64, 1, 996, 997, 998, 999, 1998, 1999] {
        assert_eq!(
            s.device()
                .geometry()
                .phys_logical_track(crate::units::Track(t)),
            None,
            "{t}"
        );
    }
    assert!(s.report().warnings.is_empty(), "{:?}", s.report().warnings);
}

#[test]
fn a_drive_with_sector_spares_runs_verified_and_prefilled() {
    // Two surfaces, ranges of 3 cylinders with 150 spare sectors (scheme 8):
    // a range's fifth track holds 50 LBAs and 50 spares, its sixth only
    // spares (zone 0; zone 1 alike with 90-sector tracks). A prefilled,
    // verified run over the whole LBA space finds every block where it was
    // written, through the short tracks and across zones.
    let mut d = small_drive("cmr");
    d.surfaces = 2;
    d.head_switch_ms = 0.5;
    d.rotation = crate::mechanics::Rotation::Angular;
    d.spare_range_cylinders = 3;
    d.zones = vec![
        crate::geometry::ZoneSpec {
            first_track: 0,
            sectors_per_track: 100,
            spare_sectors_per_range: 150,
            track_skew_sectors: 7,
            cylinder_skew_sectors: 13,
            ..Default::default()
        },
        crate::geometry::ZoneSpec {
            first_track: 1000,
            sectors_per_track: 90,
            spare_sectors_per_range: 150,
            track_skew_sectors: 6,
            cylinder_skew_sectors: 11,
            ..Default::default()
        },
    ];
    // 500 cylinders a zone: 166 whole ranges and 2 cylinders without spares.
    let cap = (500 * 200 - 166 * 150 + 500 * 180 - 166 * 150) as u64;
    let mut c = cfg(d, "cmr");
    c.verify = true;
    c.replay.prefill = Some(PrefillSpec::Fraction(1.0));
    let mut recs = vec![];
    for i in 0..300u64 {
        let lba = (i * 7919 * 13) % (cap - 300);
        recs.push(rec(
            i * 100,
            if i % 3 == 0 { Op::Read } else { Op::Write },
            lba,
            1 + i % 250,
        ));
    }
    let s = run(c, recs).unwrap();
    let g = s.device().geometry();
    assert_eq!(g.capacity().0, cap);
    let at = |t, s| crate::units::PhysAddr {
        track: crate::units::Track(t),
        sector: s,
    };
    assert_eq!(g.home_lba(at(4, 49)), Some(crate::units::Lba(449)));
    assert_eq!(g.home_lba(at(4, 50)), None);
    assert_eq!(g.phys_logical_track(crate::units::Track(5)), None);
    assert_eq!(g.home_lba(at(6, 0)), Some(crate::units::Lba(450)));
    assert!(s.report().warnings.is_empty(), "{:?}", s.report().warnings);
}
