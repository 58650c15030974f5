use super::*;
use crate::drive::DriveConfig;
use crate::engine::RunConfig;
use crate::engine::{Mode, Simulation};
use crate::error::SimError;
#[allow(unused_imports)]
use crate::layers::{background::direct, Background};
use crate::trace::TraceRecord;
use crate::trace::TraceSpec;
use crate::units::Nanos;
use std::collections::BTreeMap as Map;

// ---- harness shared with the other IMR layers' tests ----

use super::super::rmw::tests::{crash_sweep, paper_drive, r, rsrch_drive, run_cfg, simulate, w};

// ---- imr-dtm ----

fn params(user: &[(&str, &str)]) -> Params {
    let u: Map<String, serde_json::Value> = user
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    Params::resolve("imr-dtm", ENTRY.params, &u).unwrap()
}

fn build(d: &DriveConfig, user: &[(&str, &str)]) -> SimResult<(Geometry, ImrDtm)> {
    let g = d.geometry()?;
    let l = ImrDtm::new(&params(user), &g)?;
    Ok((g, l))
}

/// A device and the layer on the paper's drive (2000 tracks, N = 1), without data.
fn direct(rot: &str, ratio: f64) -> (Device, ImrDtm) {
    let d = paper_drive(rot, ratio);
    let (g, l) = build(&d, &[("backup_location", "outer")]).unwrap();
    let m = d.mechanics(g.tracks()).unwrap();
    (Device::new(g, m, false), l)
}

fn data_path(name: &str) -> String {
    format!("{}/../../tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn pseudo_tracks_straddle_top_tracks_and_zones_hold_at_most_256() {
    // Paper drive with 0.9 tops: bottoms 512 sectors, tops 461.
    let (_, l) = direct("average", 0.9);
    assert_eq!(l.p, 512, "default pseudo-track: one bottom track");
    // Outer reserved region of 12 groups (tracks 0..24): 988 host bottoms and tops.
    assert_eq!((l.spaces[BOTTOM].tracks, l.spaces[TOP].tracks), (988, 988));
    assert_eq!(l.n, [988, (988 * 461u64).div_ceil(512)]);
    assert_eq!(l.full[TOP], 988 * 461 / 512);
    // Bottom pseudo-track 100 is bottom track 224 exactly; top pseudo-track 150
    // starts at sector 274 of top track 357 and ends in track 359.
    assert_eq!(
        l.spaces[BOTTOM].locate(100 * 512),
        (
            PhysAddr {
                track: Track(224),
                sector: 0
            },
            512
        )
    );
    assert_eq!(
        l.spaces[TOP].locate(150 * 512),
        (
            PhysAddr {
                track: Track(357),
                sector: 274
            },
            187
        )
    );
    assert_eq!(
        l.spaces[TOP].locate(150 * 512 + 187).0,
        PhysAddr {
            track: Track(359),
            sector: 0
        }
    );
    assert_eq!(l.spaces[TOP].offset(Track(359), 0), 150 * 512 + 187);
    // Zones: 1878 pseudo-tracks in 8 zones of at most 256, bottoms and tops split in proportion.
    assert_eq!(l.zones, 8);
    let mut seen = [0u64; 2];
    for z in 0..l.zones {
        let (b, t) = (l.zone_range(BOTTOM, z), l.zone_range(TOP, z));
        assert!(b.end - b.start + t.end - t.start <= 256, "zone {z}");
        for q in b.clone() {
            assert_eq!(l.zone_of(BOTTOM, q), z);
        }
        for q in t.clone() {
            assert_eq!(l.zone_of(TOP, q), z);
        }
        // The zone's bottoms and tops lie at about the same radius.
        let bt = l.spaces[BOTTOM].locate(b.start * 512).0.track.0;
        let tt = l.spaces[TOP].locate(t.start * 512).0.track.0;
        assert!(bt.abs_diff(tt) <= 4, "zone {z}: bottom {bt} top {tt}");
        seen[0] += b.end - b.start;
        seen[1] += t.end - t.start;
    }
    assert_eq!(seen, l.n);
    // 1878 entries of 8 bits.
    assert_eq!(l.map_bytes(), 1878);
}

#[test]
fn a_20_tb_drive_needs_the_papers_12_5_mb_map() {
    // Paper 000 section 2.4: zones of 256 pseudo-tracks need 8 bits per
    // entry; "for our 20 TB drive with almost 13M tracks this would require
    // about 12.5 MB". 20 TB of the paper's mean 1.5 MB track (section 2.2):
    // 1.5 MiB tracks of 384 4-KiB sectors, equal tops.
    let d = DriveConfig {
        sector_bytes: 4096,
        track_bytes: 1536 << 10,
        tracks: None,
        capacity_gib: Some(20e12 / (1u64 << 30) as f64),
        layout: crate::geometry::LayoutConfig {
            kind: crate::geometry::LayoutKind::Imr,
            group_tracks: 8,
            ..Default::default()
        },
        ..Default::default()
    };
    let (g, l) = build(&d, &[]).unwrap();
    let tracks = g.tracks();
    assert!(
        (12_500_000..13_000_000).contains(&tracks),
        "{tracks} tracks"
    );
    let pseudo = l.n[0] + l.n[1];
    // The backup slots spread over the drive (one every 4,096 tracks) are
    // not host tracks.
    let reserved = l.report()["reserved_tracks"] as u64;
    assert!(reserved < tracks / 100, "{reserved} reserved tracks");
    assert!(
        pseudo + reserved + 64 >= tracks && pseudo <= tracks,
        "{pseudo} pseudo-tracks"
    );
    let mb = l.map_bytes() as f64 / 1e6;
    assert!((mb - 12.5).abs() < 0.5, "{mb} MB");
    assert_eq!(l.report()["map_bytes"], l.map_bytes() as f64);
    println!(
        "20 TB: {tracks} tracks, {pseudo} pseudo-tracks in {} zones, map {mb:.2} MB",
        l.zones
    );
}

#[test]
fn configuration_problems_are_errors() {
    let d = paper_drive("average", 0.9);
    let err = |user: &[(&str, &str)]| match build(&d, user) {
        Err(SimError::Config(m)) => m,
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("{user:?} was accepted"),
    };
    assert!(err(&[("backup_tracks", "4")]).contains("raise backup_tracks"));
    assert!(err(&[("pseudo_track_sectors", "2048")]).contains("raise backup_tracks"));
    assert!(err(&[("zone_pseudo_tracks", "1")]).contains("zone_pseudo_tracks"));
    assert!(err(&[("interval_writes", "0")]).contains("interval_writes"));
    assert!(build(
        &d,
        &[("pseudo_track_sectors", "2048"), ("backup_tracks", "24")]
    )
    .is_ok());
}

/// Hot bottom pseudo-track 100 (track 224) with written top neighbours 223
/// and 225; cold top pseudo-track 150. Returns the swap's time in ms and the device.
fn timed_swap(rot: &str, ratio: f64, phase: u64) -> (f64, Device, ImrDtm) {
    let (mut dev, mut l) = direct(rot, ratio);
    l.rmw.written.set(Track(223));
    l.rmw.written.set(Track(225));
    let rot_ns = dev.mechanics().rotation_time().0;
    dev.advance_to(Nanos(1_000_000_000 + phase * rot_ns / 64));
    let t0 = dev.now();
    let cold = l.id(TOP, 150);
    assert!(l.swap(&mut dev, 100, cold).unwrap());
    ((dev.now().0 - t0.0) as f64 / 1e6, dev, l)
}

#[test]
fn an_aligned_swap_costs_the_papers_13_rotations_average_model() {
    // Paper 000 section 2.4: a swap costs 5 t_seek + 13 t_rot: 11 whole-track
    // accesses (read T-1, T, T+1; back up three tracks; read T'; write T,
    // T-1, T+1; write T') plus half a rotation on each of the four arrivals
    // at a pseudo-track that may not start at a track boundary.
    // The simulator, with equal tops (every pseudo-track is a whole track):
    // reads T', T-1, T+1, T (4 whole tracks: the relocation saves T' too,
    // the paper reads it after the backup), backs up 2048 sectors as four
    // whole backup tracks and a 4-sector tail (plus headers), writes T,
    // T-1, T+1, T' (4 whole tracks), then commits the log record: 12 whole
    // rotations, two half-rotation repositionings (backup tail, log record)
    // and their transfers = 13 t_rot + 6 sectors, the paper's 13 t_rot by a
    // different route. Seeks: 6 long ones (to T', back to T-1, to the backup
    // region, to T, to T', to the log track) against the paper's 5 (the log
    // record is the sixth), plus 1-2 track moves the paper ignores.
    let (ms, dev, l) = timed_swap("average", 1.0, 0);
    let m = dev.mechanics();
    let seek = |d: u64| m.seek_time(d).as_ms();
    let x = |n: u32| m.transfer_time(n, 512).as_ms();
    // Head at track 0; T' = top pseudo-track 150 = track 325; log on track 21.
    let seeks = seek(325) + seek(102) + seek(2) + seek(1) // reads T', T-1, T+1, T
        + seek(223) + 4.0 * seek(2)                          // backup tracks 1, 3, 5, 7, 9
        + seek(215) + seek(1) + seek(2) + seek(100)          // write T, T-1, T+1, T'
        + seek(304); //                                         log record
    let rotations = 12.0 * 10.0 + 2.0 * 5.0 + x(5) + x(1);
    assert!(
        (ms - (seeks + rotations)).abs() < 1e-6,
        "{ms} vs {}",
        seeks + rotations
    );
    assert!((rotations - 130.0).abs() < 0.2, "13 t_rot: {rotations}");
    let paper_seeks =
        5.0 * (seek(325) + seek(102) + seek(223) + seek(215) + seek(100) + seek(304)) / 6.0;
    println!(
        "aligned swap (average): {ms:.2} ms; paper 5 t_seek + 13 t_rot = {:.2} ms",
        paper_seeks + 130.0
    );
    assert_eq!(l.c.swaps, 1);
    assert_eq!(l.store.as_ref().unwrap().log_writes, 1);
    assert_eq!(l.rmw.backup.records, 1);
}

#[test]
fn an_unaligned_swap_average_model() {
    // Tops of 461 sectors: top pseudo-track 150 is sectors 274.. of track
    // 357 (187) and ..325 of track 359, so T' is read and written as two
    // partial accesses: 2 x 0.5 t_rot of repositioning and 512/461 t_rot of
    // transfer each way, where the paper charges 0.5 + 1. T, cut into the
    // same two pieces, costs half a rotation more each way (its second piece
    // continues the first). The backup record (1946 sectors) is four whole
    // backup tracks and a 107-sector tail, the log record half a rotation.
    // In all 16.46 t_rot against the paper's 13: the paper's half rotation
    // per unaligned arrival assumes a pseudo-track is one access, while here
    // the unaligned one straddles two tracks (and the aligned bottom is cut
    // where the top side is).
    let (ms, dev, _) = timed_swap("average", 0.9, 0);
    let m = dev.mechanics();
    let seek = |d: u64| m.seek_time(d).as_ms();
    let xt = |n: u32| m.transfer_time(n, 461).as_ms();
    let xb = |n: u32| m.transfer_time(n, 512).as_ms();
    let half = 5.0;
    let reads = seek(357) + half + xt(187) + seek(2) + half + xt(325) // T' in two pieces
        + seek(136) + 10.0 + seek(2) + 10.0                            // T-1, T+1
        + seek(1) + half + xb(187) + xb(325); //                          T: second piece continues
    let backup = seek(223) + 10.0 + 3.0 * (seek(2) + 10.0) + seek(2) + half + xt(107);
    let writes = seek(215) + half + xb(187) + xb(325)                  // T
        + seek(1) + 10.0 + seek(2) + 10.0                              // T-1, T+1
        + seek(132) + half + xt(187) + seek(2) + half + xt(325); //       T'
    let log = seek(338) + half + xt(1);
    let want = reads + backup + writes + log;
    assert!((ms - want).abs() < 1e-6, "{ms} vs {want}");
    let seeks =
        seek(357) + 2.0 * seek(2) + seek(136) + seek(1) + seek(223) + 4.0 * seek(2) + seek(215);
    let seeks = seeks + seek(1) + seek(2) + seek(132) + seek(2) + seek(338);
    let rot = (ms - seeks) / 10.0;
    assert!((rot - 16.5).abs() < 0.1, "{rot} rotations");
    println!("unaligned swap (average): {ms:.2} ms = seeks {seeks:.2} ms + {rot:.2} t_rot (paper 13 t_rot)");
}

#[test]
fn swap_times_in_the_angular_model() {
    // Angular model, 64 start phases. Whole-track accesses cost one rotation
    // as in the average model and end at the angle they started, so the
    // phase carries over until the first partial access, which waits for its
    // first sector and leaves the head at a fixed angle: from then on the
    // swap is deterministic. So a swap's time varies by less than one
    // rotation with the phase, and its later partial waits are set by the
    // geometry rather than averaging half a rotation:
    // * aligned: the first partial access is the backup tail; the log record
    //   then always waits ~3.6 ms instead of 5: ~1.3 ms less than the average model.
    // * unaligned: the first partial access is the first piece of T'. The
    //   second piece starts at sector 0 of the next top track just after the
    //   first ended at its track's end (angle 0): the 2-track seek makes it
    //   miss sector 0 and wait t_rot - t_seek(2) ~ 7.7 ms instead of 5 (read
    //   and write: +5.5 ms; no track skew is modelled), while T's first piece
    //   (after T+1, and after the backup tail) arrives shortly before sector
    //   0 comes round (-7.5 ms): ~4 ms less than the average model in all.
    // Both stay within half a rotation of the average model's figure; the
    // paper's analysis (13 t_rot) matches the aligned case only.
    let times = |ratio: f64| {
        (0..64)
            .map(|ph| timed_swap("angular", ratio, ph).0)
            .collect::<Vec<f64>>()
    };
    let (avg_aligned, avg_unaligned) = (
        timed_swap("average", 1.0, 0).0,
        timed_swap("average", 0.9, 0).0,
    );
    for (ratio, avg) in [(1.0, avg_aligned), (0.9, avg_unaligned)] {
        let t = times(ratio);
        let mean = t.iter().sum::<f64>() / t.len() as f64;
        let (lo, hi) = t
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        println!(
            "swap, top ratio {ratio}, angular: mean {mean:.2} ms, range {lo:.2}..{hi:.2} (average model {avg:.2})"
        );
        assert!(hi - lo < 10.0, "one random wait only: {lo}..{hi}");
        assert!(
            hi - lo > 5.0,
            "the first partial wait does vary: {lo}..{hi}"
        );
        assert!((mean - avg).abs() < 5.0, "{mean} vs {avg}");
        assert!(mean < avg, "{mean} vs {avg}");
    }
}

/// First LBA of host track `k` on the paper drive with 0.9 tops (N = 1:
/// bottoms of 512 and tops of 461 sectors alternate; host track k is
/// physical 24 + k behind the outer reserved region).
fn lt(k: u64) -> u64 {
    k.div_ceil(2) * 512 + k / 2 * 461
}

/// The hot-bottom scenario through the engine, verified: its top neighbours
/// written, then 60 writes to host track 8 (a bottom), a pause, 10 more,
/// then a read of everything.
fn hot_bottom_cfg(mode: Mode, user: &[(&str, &str)]) -> (RunConfig, Vec<TraceRecord>) {
    let mut recs = vec![w(0, lt(7), 461), w(1, lt(9), 461), w(2, lt(21), 461)];
    for i in 0..60u64 {
        recs.push(w(10 + 100 * i, lt(8) + (i * 37) % 500, 4));
    }
    for i in 0..10u64 {
        recs.push(w(10_000 + 100 * i, lt(8) + i * 50, 2));
    }
    recs.push(r(12_000, 0, lt(40)));
    let mut all = vec![
        ("backup_location", "outer"),
        ("interval_writes", "50"),
        ("swap_threshold", "20"),
    ];
    all.extend_from_slice(user);
    let mut c = run_cfg(paper_drive("average", 0.9), "imr-dtm", &all);
    c.replay.mode = mode;
    c.verify = true;
    (c, recs)
}

fn hot_bottom_run(mode: Mode, user: &[(&str, &str)]) -> Simulation {
    let (c, recs) = hot_bottom_cfg(mode, user);
    simulate(c, recs)
}

#[test]
fn a_crash_at_every_step_of_a_swap_rolls_it_back_or_keeps_it() {
    // Crash before every physical operation of the scenario. A crash inside
    // the swap's moves (tagged swap) rolls it back: the map is the identity
    // again and every block is where it was (verified). Once its log record
    // is written, the swap stays.
    let total = hot_bottom_run(Mode::Queue, &[]).device().ops_issued();
    let (mut in_swap, mut restored, mut kept) = (0, 0, 0);
    for point in 0..total {
        let (mut c, recs) = hot_bottom_cfg(Mode::Queue, &[]);
        c.crash_at_ops = vec![point];
        let sim = simulate(c, recs);
        let rep = sim.report();
        assert_eq!(rep.crashes, 1, "point {point}");
        let cause = *rep.crashes_during.keys().next().unwrap();
        let remapped = rep.layer_counters["remapped_pseudo_tracks"];
        let swaps = rep.layer_counters["swaps"];
        if cause == "swap" {
            in_swap += 1;
            assert_eq!(
                remapped, 0.0,
                "point {point}: a swap cut short must be rolled back"
            );
            assert_eq!(swaps, 0.0, "point {point}");
            restored += (rep.layer_counters["backup_restores"] > 0.0) as u64;
        }
        if swaps == 1.0 {
            assert_eq!(remapped, 2.0, "point {point}");
            kept += 1;
        }
    }
    println!("{total} crash points; {in_swap} inside the swap's moves, {restored} of them restored from the backup");
    assert_eq!(in_swap, 12, "6 reads and 6 writes of pieces: {in_swap}");
    assert!(restored >= 6, "{restored}");
    assert!(kept > 0);
}

#[test]
fn a_hot_bottom_pseudo_track_is_swapped_to_a_top_in_idle_time() {
    // The plan comes after write 50 (47 to the hot track: gap 47 > 20); the
    // swap runs in the idle time before write 51; the remaining 13 + 10
    // writes to the hot data land on a top: no read-modify-write.
    let sim = hot_bottom_run(Mode::Queue, &[]);
    let c = &sim.report().layer_counters;
    assert_eq!(c["swap_plans"], 1.0);
    assert_eq!(c["swaps"], 1.0, "{c:?}");
    assert_eq!(c["foreground_swaps"], 0.0);
    assert_eq!(c["map_log_writes"], 1.0);
    assert_eq!(c["remapped_pseudo_tracks"], 2.0);
    assert_eq!(c["rmws"] + c["rmw_skipped_empty"], 47.0, "{c:?}");
    let sim = hot_bottom_run(Mode::Queue, &[("swap_threshold", "50")]);
    let c = &sim.report().layer_counters;
    assert_eq!((c["swaps_planned"], c["swaps"]), (0.0, 0.0));
    assert_eq!(c["rmws"] + c["rmw_skipped_empty"], 70.0, "{c:?}");
}

#[test]
fn without_idle_time_swaps_are_done_in_the_foreground() {
    // Flat-out replay leaves no idle time.
    let sim = hot_bottom_run(Mode::FlatOut, &[("foreground_every_writes", "3")]);
    let c = &sim.report().layer_counters;
    assert_eq!((c["swaps"], c["foreground_swaps"]), (1.0, 1.0), "{c:?}");
    let sim = hot_bottom_run(Mode::FlatOut, &[("foreground_every_writes", "0")]);
    let c = &sim.report().layer_counters;
    assert_eq!((c["swaps_planned"], c["swaps"]), (1.0, 0.0), "{c:?}");
}

#[test]
fn the_map_survives_a_power_loss() {
    // Crash after the swap (between requests): the rebuilt layer reads the
    // map back from the log and every block is where the map says.
    let mut recs = vec![w(0, lt(7), 461), w(1, lt(9), 461)];
    for i in 0..60u64 {
        recs.push(w(10 + i, lt(8) + (i * 37) % 500, 4));
    }
    // A long pause: the swap's stages all run before the next request.
    recs.push(r(8000, lt(8), 512));
    recs.push(w(8001, lt(8), 8));
    recs.push(r(8002, 0, lt(20)));
    let params = [
        ("backup_location", "outer"),
        ("interval_writes", "50"),
        ("swap_threshold", "20"),
    ];
    let mut c = run_cfg(paper_drive("average", 0.9), "imr-dtm", &params);
    c.verify = true;
    c.crash_after = vec![63];
    let sim = simulate(c, recs);
    let rep = sim.report();
    assert_eq!(rep.crashes, 1);
    assert_eq!(rep.layer_counters["swaps"], 1.0);
    assert_eq!(rep.layer_counters["remapped_pseudo_tracks"], 2.0);
}

#[test]
fn a_thousand_crash_points_lose_no_acknowledged_write() {
    let params = [
        ("interval_writes", "10"),
        ("swap_threshold", "0"),
        ("max_swaps", "4"),
        ("foreground_every_writes", "2"),
        ("skip_empty", "false"),
    ];
    let (by_cause, totals) = crash_sweep("imr-dtm", &params, 600, 0..1500);
    let total: u64 = by_cause.values().sum();
    let swaps = by_cause.get("swap").copied().unwrap_or(0);
    println!("imr-dtm crash points covered: {total} ({by_cause:?}); in swap moves: {swaps}");
    assert!(total >= 1000, "{by_cause:?}");
    assert!(swaps >= 400, "crashes inside swaps: {by_cause:?}");
    println!("crashes inside stages: {}", totals["crashes_in_stages"]);
    assert!(totals["crashes_in_stages"] >= 400.0, "{totals:?}");
}

fn waf(layer: &str, trace: &str, limit: Option<u64>, user: &[(&str, &str)]) -> (f64, LayerReport) {
    let mut d = rsrch_drive(1.0, "zigzag");
    d.capacity_gib = Some(1024.0);
    d.write_cache_mib = 100.0;
    d.layout.group_tracks = 8;
    let mut c = run_cfg(d, layer, user);
    c.trace = TraceSpec {
        path: data_path(trace),
        limit,
        ..Default::default()
    };
    let mut s = Simulation::new(c).unwrap();
    s.run().unwrap();
    let r = s.report();
    (r.waf, r.layer_counters)
}

#[test]
fn swaps_happen_on_real_traces_and_waf_against_rmw() {
    // The issue expects DTM's WAF to be the lowest of the IMR layers on most
    // traces. Checked here against imr-rmw (paper drive: 2 MiB tracks, 100 MiB
    // cache, 1 TiB, N = 8), not tuned to: the printed figures are the finding.
    // rsrch_1 has 13,738 writes, fewer than one 20,000-write interval, so
    // with the paper's parameters DTM never swaps there; a 2,000-write
    // interval is shown as well.
    let mut lines = vec![];
    let mut swapped = 0.0;
    for (trace, limit) in [("rsrch_1.csv", None), ("cloudPhysicsIO.vscsi", None)] {
        for skip in ["true", "false"] {
            let (rmw, _) = waf("imr-rmw", trace, limit, &[("skip_empty", skip)]);
            let (dtm, c) = waf("imr-dtm", trace, limit, &[("skip_empty", skip)]);
            let (dtm2k, c2k) = waf(
                "imr-dtm",
                trace,
                limit,
                &[("skip_empty", skip), ("interval_writes", "2000")],
            );
            swapped += c["swaps"];
            lines.push(format!(
                "{trace} skip_empty={skip}: WAF imr-rmw {rmw:.3}, imr-dtm {dtm:.3} ({} swaps, {} writes to \
                 swapped-up data), imr-dtm/2000 {dtm2k:.3} ({} swaps, {} writes)",
                c["swaps"], c["writes_to_swapped_up"], c2k["swaps"], c2k["writes_to_swapped_up"]
            ));
            assert!(dtm >= 1.0 && rmw >= 1.0);
        }
    }
    for l in &lines {
        println!("{l}");
    }
    assert!(
        swapped > 0.0,
        "no swaps with the paper's parameters: {lines:?}"
    );
}
