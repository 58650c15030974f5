//! Virtual Guard and the E-region baseline against paper 003's rules, with
//! verification on, and crash injection inside cleaning.

use super::{bits_for, map_bytes_eq1};
use crate::drive::DriveConfig;
use crate::engine::report::Report;
use crate::engine::{LayerConfig, Mode, RunConfig, Simulation};
use crate::geometry::{LayoutConfig, ZoneSpec};
use crate::medium::prefill::PrefillSpec;
use crate::trace::{Op, TraceRecord, TraceSpec, VecTrace};
use crate::units::{Bytes, Nanos};

/// Bands of 8 tracks of 64 sectors (4 KiB), one guard each; a persistent
/// cache of 44 tracks of 80 sectors at the outer edge (so a home track and
/// its header fit one cache track).
const N: u64 = 8;
const SPT: u64 = 64;
const CACHE: u64 = 44;

fn drive(bands: u64) -> DriveConfig {
    DriveConfig {
        name: "dmsmr-test".into(),
        sector_bytes: 4096,
        rpm: 5900.0,
        zones: vec![
            ZoneSpec {
                first_track: 0,
                sectors_per_track: 80,
                ..Default::default()
            },
            ZoneSpec {
                first_track: CACHE + 1,
                sectors_per_track: SPT as u32,
                ..Default::default()
            },
        ],
        tracks: Some(CACHE + 1 + bands * (N + 1)),
        capacity_gib: None,
        interface_mb_s: 0.0, // no link time: exact medium times
        write_cache_mib: 0.0,
        layout: LayoutConfig {
            kind: crate::geometry::LayoutKind::Smr,
            band_tracks: N,
            head_width_tracks: 2,
            cache_tracks: CACHE,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn cfg(layer: &str, bands: u64, params: &[(&str, &str)]) -> RunConfig {
    let mut c = RunConfig {
        trace: TraceSpec {
            path: "memory".into(),
            ..Default::default()
        },
        drive: drive(bands),
        layer: LayerConfig {
            name: layer.into(),
            params: Default::default(),
        },
        ..Default::default()
    };
    // Paper 003's replay: queue depth 1, flat out, write cache off; a full drive.
    c.replay.mode = Mode::FlatOut;
    c.replay.write_cache = Some(false);
    c.replay.prefill = Some(PrefillSpec::Fraction(1.0));
    c.verify = true;
    // A 1 MiB cleaning buffer: 4 home tracks, so a band takes three stages.
    c.layer
        .params
        .insert("clean_buffer_mib".into(), serde_json::Value::from(1.0));
    for &(k, v) in params {
        let v = v
            .parse::<f64>()
            .map(serde_json::Value::from)
            .unwrap_or_else(|_| match v {
                "true" | "false" => serde_json::Value::from(v == "true"),
                _ => serde_json::Value::from(v),
            });
        c.layer.params.insert(k.into(), v);
    }
    c
}

fn rec(i: u64, write: bool, lba: u64, n: u64) -> TraceRecord {
    TraceRecord {
        time: Nanos(i * 1_000),
        op: if write { Op::Write } else { Op::Read },
        offset: Bytes(lba * 4096),
        len: Bytes(n * 4096),
        line: i + 1,
    }
}

/// The first LBA of position p (1-based) of band b.
fn lba(b: u64, p: u64) -> u64 {
    (b * N + p - 1) * SPT
}

fn run(c: RunConfig, recs: Vec<TraceRecord>) -> Report {
    let mut s = Simulation::with_reader(c, Box::new(VecTrace::new(recs))).unwrap();
    s.run().unwrap_or_else(|e| panic!("{e}"));
    let r = s.report();
    assert_eq!(r.verification.mismatches, 0);
    assert!(r.verification.scan_blocks_checked > 0);
    r
}

fn counter(r: &Report, k: &str) -> f64 {
    *r.layer_counters
        .get(k)
        .unwrap_or_else(|| panic!("no counter {k} in {:?}", r.layer_counters.keys()))
}

use crate::xorshift::Rng;

/// `n` requests of 1-8 sectors at random positions of `bands` bands (seeded);
/// every `read_every`-th is a read, the rest writes.
fn random_requests(seed: u64, n: u64, bands: u64, read_every: u64) -> Vec<TraceRecord> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let (b, p) = (rng.below(bands), 1 + rng.below(N));
            rec(
                i,
                i % read_every != read_every - 1,
                lba(b, p) + rng.below(SPT - 8),
                1 + rng.below(8),
            )
        })
        .collect()
}

#[test]
fn equation_1_counts_bits_of_a_track_and_a_cache_track_number() {
    assert_eq!(bits_for(2), 1);
    assert_eq!(bits_for(4_000_000), 22);
    assert_eq!(bits_for(12_720), 14);
    // 12,720 entries x 36 bits = 57,240 bytes: tens of KB.
    assert_eq!(map_bytes_eq1(12_720, 4_000_000, 12_720), 57_240);
}

#[test]
fn first_write_copies_the_next_track_once_and_last_tracks_copy_nothing() {
    let recs = vec![
        rec(0, true, lba(0, 3) + 5, 1), // track 3: copy track 4
        rec(1, true, lba(0, 3) + 9, 2), // again: nothing
        rec(2, true, lba(1, N) + 1, 4), // the band's last track: nothing
        rec(3, true, lba(2, 1), SPT),   // a whole track 1: copy track 2
        rec(4, false, lba(0, 4), SPT),  // the cached track 4 reads from the cache
    ];
    let r = run(cfg("smr-vguard", 6, &[]), recs);
    assert_eq!(counter(&r, "guard_copies"), 2.0);
    assert_eq!(counter(&r, "in_place_home"), 4.0);
    assert_eq!(counter(&r, "last_track_writes"), 1.0);
    assert_eq!(counter(&r, "tracks_copied"), 2.0);
    assert_eq!(counter(&r, "clean_episodes"), 0.0);
    // Each copy is one track read and one cache-track write (cause promote).
    let promote = r
        .device
        .by_cause
        .iter()
        .find(|c| c.cause == "promote")
        .unwrap();
    assert_eq!((promote.read_ops, promote.write_ops), (2, 2));
    assert_eq!(promote.read_sectors, 2 * SPT);
}

#[test]
fn writes_to_cached_tracks_follow_figure_1() {
    let recs = vec![
        rec(0, true, lba(0, 1), 1),     // copies (0,2) to log track 0
        rec(1, true, lba(0, 2) + 3, 1), // (0,2) is just before the frontier: in place in the cache (1c)
        rec(2, true, lba(1, 1), 1),     // copies (1,2) to log track 1
        rec(3, true, lba(0, 2) + 4, 1), // (0,2) has a valid track in front of it now
        rec(4, false, lba(0, 2), SPT),
        rec(5, false, lba(1, 2), SPT),
    ];
    let r = run(
        cfg("smr-vguard", 6, &[("cache_write", "relocate")]),
        recs.clone(),
    );
    assert_eq!(counter(&r, "in_place_cache"), 1.0);
    assert_eq!(
        counter(&r, "relocations"),
        1.0,
        "Figure 1(d): the written track moves to the frontier"
    );
    assert_eq!(counter(&r, "tracks_copied"), 3.0);
    // The default: section 3's text.
    let r = run(cfg("smr-vguard", 6, &[]), recs);
    assert_eq!(
        counter(&r, "next_copies"),
        1.0,
        "the text's rule copies the track in front instead"
    );
    assert_eq!(counter(&r, "in_place_cache"), 2.0);
    assert_eq!(counter(&r, "tracks_copied"), 3.0);
}

#[test]
fn cleaning_starts_at_beta_and_cleans_two_bands_from_the_tail() {
    let bands = 40;
    let recs = random_requests(7, 300, bands, 4);
    let r = run(cfg("smr-vguard", bands, &[("beta", "12")]), recs);
    let (eps, cleaned) = (counter(&r, "clean_episodes"), counter(&r, "clean_bands"));
    assert!(eps >= 10.0, "{eps} episodes");
    // Each episode cleans two bands (the last one may still be running).
    assert!(
        cleaned >= 2.0 * (eps - 1.0) && cleaned <= 2.0 * eps,
        "{cleaned} bands in {eps} episodes"
    );
    assert!(counter(&r, "cache_span_peak_tracks") <= 32.0);
    // Cleaning is staged: host requests waited behind single stages.
    assert!(r.background.stages_foreground > 0);
    assert!(counter(&r, "clean_stages") > cleaned);
}

#[test]
fn skip_leading_halves_the_cleaning_work_when_one_track_of_a_band_is_cached() {
    // One write per band at a random position: one cached track per band.
    let work = |skip: &str| {
        let mut rng = Rng(11);
        let bands = 60;
        let recs: Vec<_> = (0..bands)
            .map(|b| rec(b, true, lba(b, 1 + rng.below(N - 1)), 1))
            .collect();
        let r = run(
            cfg(
                "smr-vguard",
                bands,
                &[("beta", "10"), ("skip_leading", skip)],
            ),
            recs,
        );
        counter(&r, "clean_tracks_rewritten") / counter(&r, "clean_bands")
    };
    let (with, without) = (work("true"), work("false"));
    assert_eq!(
        without, N as f64,
        "without the optimisation every band is rewritten whole"
    );
    let ratio = with / without;
    assert!((0.4..=0.6).contains(&ratio), "skip-leading ratio {ratio}");
}

#[test]
fn partial_cleaning_stops_before_the_next_cached_track() {
    let recs = |extra: u64| {
        let mut v = vec![
            rec(0, true, lba(0, 2), 1), // caches (0,3): the log tail
            rec(1, true, lba(0, 5), 1), // caches (0,6)
            rec(2, true, lba(1, 1), 1),
            rec(3, true, lba(2, 1), 1), // span 4 > beta 3: an episode of one band
        ];
        v.extend((0..extra).map(|i| rec(4 + i, false, lba(4, 1), 1)));
        v
    };
    let p = [("beta", "3"), ("bands_per_episode", "1")];
    let r = run(cfg("smr-vguard", 6, &p), recs(4));
    assert_eq!(counter(&r, "clean_bands"), 1.0);
    assert_eq!(counter(&r, "clean_tracks_rewritten"), 3.0, "positions 3..5");
    assert_eq!(
        counter(&r, "cache_active_tracks"),
        3.0,
        "(0,6), (1,2) and (2,2) stay cached"
    );
    let r = run(
        cfg("smr-vguard", 6, &[p[0], p[1], ("partial_clean", "false")]),
        recs(4),
    );
    assert_eq!(counter(&r, "clean_tracks_rewritten"), 6.0, "positions 3..8");
    assert_eq!(counter(&r, "cache_active_tracks"), 2.0);
}

#[test]
fn eregion_appends_writes_and_cleans_when_map_entries_run_out() {
    let bands = 30;
    let recs = random_requests(3, 400, bands, 3);
    let r = run(
        cfg("smr-eregion", bands, &[("map_entries", "32")]),
        recs.clone(),
    );
    assert!(counter(&r, "clean_bands") >= 20.0);
    assert!(counter(&r, "map_entries_peak") <= 32.0);
    // Host writes go to the cache, never home: home is written only by cleaning.
    let host = r
        .device
        .by_cause
        .iter()
        .find(|c| c.cause == "host")
        .unwrap();
    assert_eq!(host.write_sectors, r.host.write_sectors);
    // With room for every write, nothing is cleaned in a flat-out replay.
    let r = run(
        cfg(
            "smr-eregion",
            bands,
            &[("map_entries", "100000"), ("idle_clean", "false")],
        ),
        recs,
    );
    assert_eq!(counter(&r, "clean_bands"), 0.0);
}

#[test]
fn eregion_cleans_when_cache_space_runs_out() {
    // Sequential whole-track writes fill the log (about 30 tracks) long before 10,000 entries.
    let bands = 12;
    let recs: Vec<_> = (0..bands * N).map(|i| rec(i, true, i * SPT, SPT)).collect();
    let r = run(cfg("smr-eregion", bands, &[("map_entries", "10000")]), recs);
    assert!(
        counter(&r, "clean_bands") >= 6.0,
        "{}",
        counter(&r, "clean_bands")
    );
    assert!(counter(&r, "map_entries_peak") < 100.0);
}

/// Runs of a cleaning-heavy workload with crash points every `step` ops
/// from `offset`; returns (crashes inside cleaning, crashes in recovery, resumed bands).
fn crash_sweep(layer: &str, params: &[(&str, &str)], runs: u64, step: u64) -> (u64, u64, u64) {
    let bands = 24;
    let recs = random_requests(5, 500, bands, 5);
    let (mut clean, mut recovery, mut resumed) = (0, 0, 0);
    for offset in 0..runs {
        let mut c = cfg(layer, bands, params);
        c.crash_at_ops = (0..400).map(|k| 40 + offset * 7 + k * step).collect();
        let r = run(c, recs.clone());
        clean += r.crashes_during.get("clean").copied().unwrap_or(0);
        recovery += r.crashes_during.get("recovery").copied().unwrap_or(0);
        resumed += counter(&r, "clean_resumed") as u64;
    }
    (clean, recovery, resumed)
}

#[test]
fn vguard_survives_crashes_inside_cleaning_and_scratch_pad_replays() {
    let (clean, recovery, resumed) = crash_sweep("smr-vguard", &[("beta", "12")], 16, 53);
    assert!(clean >= 1000, "{clean} crashes fell inside cleaning");
    assert!(
        resumed >= 100,
        "{resumed} band rewrites resumed from the scratch pad"
    );
    assert!(
        recovery >= 50,
        "{recovery} crashes fell inside recovery (replays included)"
    );
}

#[test]
fn eregion_survives_crashes_inside_cleaning_and_scratch_pad_replays() {
    let (clean, recovery, resumed) = crash_sweep("smr-eregion", &[("map_entries", "24")], 16, 53);
    assert!(clean >= 1000, "{clean} crashes fell inside cleaning");
    assert!(
        resumed >= 100,
        "{resumed} band rewrites resumed from the scratch pad"
    );
    assert!(
        recovery >= 50,
        "{recovery} crashes fell inside recovery (replays included)"
    );
}

#[test]
fn bad_configurations_get_one_line_errors() {
    let err = |c: RunConfig| {
        Simulation::with_reader(c, Box::new(VecTrace::new(vec![])))
            .err()
            .unwrap()
            .to_string()
    };
    let mut c = cfg("smr-vguard", 6, &[]);
    c.drive.layout.cache_tracks = 0;
    c.drive.tracks = Some(6 * (N + 1));
    c.drive.zones.truncate(1);
    assert!(err(c).contains("needs a drive with a persistent cache"));
    let mut c = cfg("smr-eregion", 6, &[]);
    c.drive.layout.cache_tracks = 12;
    c.drive.tracks = Some(13 + 6 * (N + 1));
    c.drive.zones[1].first_track = 13;
    assert!(err(c).contains("needs a persistent cache of at least"));
    let c = cfg("smr-vguard", 6, &[("beta", "1")]);
    assert!(err(c).contains("beta 1 must be between"));
    let mut c = cfg("smr-vguard", 6, &[]);
    c.drive.layout.head_width_tracks = 3;
    c.drive.tracks = Some(CACHE + 2 + 6 * (N + 2));
    assert!(err(c).contains("head_width_tracks = 2"));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Every read returns the newest acknowledged write, whatever the
        /// workload, cache room, thresholds, write-cache size and crash point.
        #[test]
        fn reads_see_newest_writes_through_cleaning_and_crashes(
            vguard in any::<bool>(),
            seq in proptest::collection::vec((any::<bool>(), 0u64..(12 * N * SPT), 1u64..160), 1..300),
            tight in 0u64..3,
            cache_mib in prop_oneof![Just(0.0f64), Just(0.05), Just(1.0)],
            prefill in any::<bool>(),
            copy_next in any::<bool>(),
            crash in proptest::option::of(0u64..3_000),
        ) {
            let layer = if vguard { "smr-vguard" } else { "smr-eregion" };
            let p: Vec<(&str, &str)> = if vguard {
                vec![("beta", ["4", "10", "30"][tight as usize]), ("cache_write", if copy_next { "copy-next" } else { "relocate" })]
            } else {
                vec![("map_entries", ["16", "40", "1000"][tight as usize])]
            };
            let mut c = cfg(layer, 12, &p);
            c.drive.write_cache_mib = cache_mib;
            c.replay.write_cache = Some(cache_mib > 0.0);
            c.replay.prefill = Some(PrefillSpec::Fraction(if prefill { 1.0 } else { 0.0 }));
            c.crash_at_ops = crash.into_iter().collect();
            let recs: Vec<_> = seq.iter().enumerate().map(|(i, &(w, lba, n))| rec(i as u64, w, lba.min(12 * N * SPT - n), n)).collect();
            let mut s = Simulation::with_reader(c, Box::new(VecTrace::new(recs))).unwrap();
            let r = s.run();
            prop_assert!(r.is_ok(), "{layer}: {}", r.err().unwrap());
        }
    }
}

#[test]
fn the_cmr_baseline_runs_on_a_drive_with_a_persistent_cache() {
    let mut c = cfg("cmr", 6, &[]);
    c.layer.params.clear();
    let r = run(c, vec![rec(0, true, 5, 3), rec(1, false, 5, 3)]);
    assert_eq!(r.drive.layout, "cmr");
}

// A drive with a history (engine::history): both layers from a filled
// persistent cache, verified, with the run's counts starting after it.

/// `cfg` with a history filling the layer's buffer to `fill`.
fn with_history(layer: &str, bands: u64, params: &[(&str, &str)], fill: f64) -> RunConfig {
    let mut c = cfg(layer, bands, params);
    c.replay.history = Some(fill);
    c
}

#[test]
fn a_history_fills_the_buffer_and_the_run_counts_from_its_end() {
    for layer in ["smr-eregion", "smr-vguard"] {
        let r = run(with_history(layer, 24, &[], 0.8), vec![]);
        let h = r
            .history
            .as_ref()
            .expect("the report says what the history did");
        assert!(
            h.fill_reached >= 0.8 && h.fill_reached < 0.9,
            "{layer}: {h:?}"
        );
        assert!(h.writes > 0 && h.simulated_s > 0.0, "{layer}: {h:?}");
        // Nothing of the history is the run's: no requests, no device work, no time.
        assert_eq!(r.host.requests, 0, "{layer}");
        assert_eq!(r.device.read_ops + r.device.write_ops, 0, "{layer}");
        assert_eq!(r.simulated_s, 0.0, "{layer}");
        assert_eq!(counter(&r, "clean_episodes"), 0.0, "{layer}");
        // Peaks restart from the level the history left.
        if layer == "smr-eregion" {
            assert_eq!(counter(&r, "appended_sectors"), 0.0);
            let log = counter(&r, "cache_log_tracks");
            assert!(counter(&r, "cache_span_peak_tracks") >= (0.8 * log).floor() - 1.0);
        } else {
            assert_eq!(counter(&r, "guard_copies"), 0.0);
            assert_eq!(counter(&r, "tracks_copied"), 0.0);
            assert!(counter(&r, "cache_active_peak_tracks") > 0.0);
        }
    }
}

#[test]
fn every_block_of_the_history_reads_back_through_both_layers() {
    let bands = 24;
    let cap = bands * N * SPT;
    // Read the whole host space, a track at a time: history blocks and
    // prefilled ones, each checked against the version the oracle expects.
    let reads: Vec<_> = (0..cap / SPT)
        .map(|i| rec(i, false, i * SPT, SPT))
        .collect();
    for layer in ["smr-eregion", "smr-vguard"] {
        // With the drive's write cache too: the history ends with it drained.
        for cache_mib in [0.0, 1.0] {
            let mut c = with_history(layer, bands, &[], 0.9);
            c.drive.write_cache_mib = cache_mib;
            c.replay.write_cache = Some(cache_mib > 0.0);
            let r = run(c, reads.clone());
            assert_eq!(r.verification.read_blocks_checked, cap, "{layer}");
            let h = r.history.as_ref().unwrap();
            assert!(h.fill_reached >= 0.9, "{layer}: {h:?}");
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_history_and_another_seed_another() {
    let recs = random_requests(3, 200, 24, 4);
    let go = |seed: u64| {
        let mut c = with_history("smr-vguard", 24, &[], 0.7);
        c.replay.history_seed = seed;
        let r = run(c, recs.clone());
        (r.history.clone().unwrap(), r.latency["all"].mean_ms)
    };
    let (a, b, other) = (go(7), go(7), go(8));
    assert_eq!(a, b);
    assert_ne!(a.0.writes, 0);
    assert!(a != other, "seeds 7 and 8 gave the same history and run");
}

#[test]
fn after_a_history_trace_times_and_crash_points_count_from_its_end() {
    // Ten reads a second apart, replayed on the trace's own clock: the run
    // lasts about nine seconds and keeps up with the trace, however long
    // the history took.
    let recs: Vec<_> = (0..10)
        .map(|i| TraceRecord {
            time: Nanos(i * 1_000_000_000),
            ..rec(i, false, lba(i, 1), 4)
        })
        .collect();
    let mut c = with_history("smr-eregion", 24, &[], 0.8);
    c.replay.mode = Mode::Scaled;
    let r = run(c, recs.clone());
    assert!(r.history.as_ref().unwrap().simulated_s > 0.0);
    assert!((9.0..9.5).contains(&r.simulated_s), "{}", r.simulated_s);
    assert!(r.max_disparity_s < 0.1, "{}", r.max_disparity_s);
    // A power loss after the third request and before the run's 5th
    // physical operation: counted from the end of the history.
    let mut c = with_history("smr-eregion", 24, &[], 0.8);
    c.crash_after = vec![3];
    c.crash_at_ops = vec![5];
    let r = run(c, recs);
    assert_eq!(r.crashes, 2);
    assert_eq!(r.host.requests + r.host.lost_in_crash, 10);
}

/// Crash points spread over a write-heavy run from a filled start state:
/// returns (crashes, crashes inside cleaning). Recovery reads the whole
/// log (some 45 operations here), and operation numbers count them, so
/// points 64 apart move the run on by about 20 operations a crash.
fn crash_sweep_from_history(layer: &str, params: &[(&str, &str)]) -> (u64, u64) {
    let bands = 24;
    let recs = random_requests(11, 400, bands, 5);
    let r = run(with_history(layer, bands, params, 0.9), recs.clone());
    assert!(
        counter(&r, "clean_bands") > 0.0,
        "{layer} cleans from the filled state"
    );
    let (mut crashes, mut clean) = (0, 0);
    for k in 0..8 {
        let mut c = with_history(layer, bands, params, 0.9);
        c.crash_at_ops = (0..300).map(|i| 1 + k * 8 + i * 64).collect();
        let r = run(c, recs.clone());
        crashes += r.crashes;
        clean += r.crashes_during.get("clean").copied().unwrap_or(0);
    }
    (crashes, clean)
}

#[test]
fn eregion_loses_nothing_in_crashes_from_a_filled_state() {
    let (crashes, clean) = crash_sweep_from_history("smr-eregion", &[]);
    assert!(crashes >= 500, "{crashes} crashes");
    assert!(clean >= 200, "{clean} crashes fell inside cleaning");
}

#[test]
fn vguard_loses_nothing_in_crashes_from_a_filled_state() {
    let (crashes, clean) = crash_sweep_from_history("smr-vguard", &[]);
    assert!(crashes >= 500, "{crashes} crashes");
    assert!(clean >= 200, "{clean} crashes fell inside cleaning");
}

#[test]
fn histories_the_drive_cannot_have_get_one_line_errors() {
    let err = |c: RunConfig| match Simulation::with_reader(c, Box::new(VecTrace::new(vec![]))) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    let mut c = with_history("cmr", 6, &[], 0.5);
    c.layer.params.clear();
    let e = err(c);
    assert!(e.contains("layer 'cmr' keeps no persistent cache"), "{e}");
    for f in [0.0, 1.0, -0.5, f64::NAN] {
        let e = err(with_history("smr-eregion", 6, &[], f));
        assert!(
            e.contains("must be a fraction above 0 and below 1"),
            "{f}: {e}"
        );
    }
    // Cleaning starts when 30 % of the cache is free: 90 % is out of reach.
    let e = err(with_history(
        "smr-eregion",
        6,
        &[("clean_reserve", "0.3")],
        0.9,
    ));
    assert!(
        e.contains("stayed at most") && e.contains("ask for a lower fill"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn crashes_keep_settings_and_peaks_and_sum_counters() {
    // Limits and settings are the latest incarnation's, peaks the largest,
    // counters summed: a run with crashes reports what one without would.
    let recs = random_requests(5, 300, 12, 5);
    for (layer, p) in [
        ("smr-eregion", ("map_entries", "40")),
        ("smr-vguard", ("beta", "10")),
    ] {
        let plain = run(cfg(layer, 12, &[p]), recs.clone());
        let mut c = cfg(layer, 12, &[p]);
        c.crash_after = vec![50, 150, 250];
        let crashed = run(c, recs.clone());
        assert_eq!(crashed.crashes, 3);
        let same = |k: &str| assert_eq!(counter(&crashed, k), counter(&plain, k), "{layer} {k}");
        same("map_entries_limit");
        if layer == "smr-vguard" {
            same("alpha_entries");
            same("map_entry_bits");
            assert!(counter(&crashed, "cache_active_peak_fraction") <= 1.0);
            assert!(
                counter(&crashed, "cache_active_peak_tracks")
                    <= counter(&crashed, "cache_log_tracks")
            );
        } else {
            // (Not bounded by the limit after a crash: recovery brings back
            // the extents of bands cleaned since the tail last moved, which
            // writes then wait for cleaning to remove; module doc.)
            assert!(counter(&plain, "map_entries_peak") <= 40.0);
        }
        // Counters add up over the incarnations: the crashed run did at
        // least the plain run's host writes' work.
        assert!(counter(&crashed, "clean_bands") >= 1.0);
    }
}
