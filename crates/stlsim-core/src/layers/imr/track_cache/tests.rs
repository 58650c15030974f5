use super::*;
use crate::drive::DriveConfig;
use crate::engine::{Mode, Simulation};
#[allow(unused_imports)]
use crate::layers::{background::direct, Background};
use crate::trace::TraceSpec;
use crate::units::Nanos;
use std::collections::BTreeMap;

// ---- harness shared with the other IMR layers' tests ----

use super::super::rmw::tests::{paper_drive, r, rsrch_drive, rsrch_head, run_cfg, simulate, w};

fn crash_sweep(
    params: &[(&str, &str)],
    requests: u64,
    points: impl Iterator<Item = u64>,
) -> (BTreeMap<&'static str, u64>, LayerReport) {
    super::super::rmw::tests::crash_sweep("imr-cache", params, requests, points)
}

// ---- tests ----

fn data_path(name: &str) -> String {
    format!("{}/../../tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn params(kv: &[(&str, &str)]) -> Params {
    let user: BTreeMap<String, serde_json::Value> = kv
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    Params::resolve("imr-cache", ENTRY.params, &user).unwrap()
}

/// A bare device on the paper's drive (2000 tracks, N = 1), no data carried.
fn device(rotation: &str) -> Device {
    let d = paper_drive(rotation, 1.0);
    let g = d.geometry().unwrap();
    let m = d.mechanics(g.tracks()).unwrap();
    Device::new(g, m, false)
}

fn layer(dev: &Device, kv: &[(&str, &str)]) -> TrackCache {
    TrackCache::new(&params(kv), dev.geometry()).unwrap()
}

/// Run a real trace with verification; returns the report's layer counters.
fn run_trace(
    trace: &str,
    limit: Option<u64>,
    drive: DriveConfig,
    cache: bool,
    kv: &[(&str, &str)],
) -> LayerReport {
    let mut c = run_cfg(drive, "imr-cache", kv);
    c.trace = TraceSpec {
        path: data_path(trace),
        limit,
        ..Default::default()
    };
    c.replay.write_cache = Some(cache);
    c.verify = true;
    let mut s = Simulation::new(c).unwrap();
    s.run()
        .unwrap_or_else(|e| panic!("{trace} {kv:?} cache {cache}: {e}"));
    let r = s.report();
    assert!(r.verification.scan_blocks_checked > 0);
    r.layer_counters
}

#[test]
fn moves_happen_on_real_traces_and_keep_every_block() {
    let variants: &[&[(&str, &str)]] = &[
        &[("interval_writes", "500"), ("cache_tracks", "20")],
        &[
            ("interval_writes", "500"),
            ("cache_tracks", "20"),
            ("map_persistence", "scan"),
        ],
        &[
            ("interval_writes", "300"),
            ("cache_tracks", "24"),
            ("cache_location", "spread"),
            ("cache_groups", "3"),
        ],
        &[
            ("interval_writes", "200"),
            ("cache_tracks", "8"),
            ("foreground_after_writes", "0"),
        ],
    ];
    for (i, kv) in variants.iter().enumerate() {
        for cache in [true, false] {
            let (ratio, order, group) = [
                (1.0, "zigzag", 4),
                (0.9, "serpentine", 8),
                (0.9, "zigzag", 1),
            ][i % 3];
            let mut d = rsrch_drive(ratio, order);
            d.layout.group_tracks = group;
            let c = run_trace("rsrch_1.csv", None, d, cache, kv);
            println!("rsrch_1 {kv:?} cache {cache}: {c:?}");
            assert!(
                c["promotions"] > 0.0 && c["evictions"] > 0.0,
                "{kv:?} cache {cache}: {c:?}"
            );
            assert!(c["cache_write_pieces"] > 0.0, "{kv:?}: {c:?}");
            assert!(
                c["background_moves"] + c["foreground_moves"] >= c["promotions"],
                "{c:?}"
            );
        }
    }
}

#[test]
fn default_parameters_promote_on_the_cloudphysics_trace() {
    // Table 2's parameters (20K-write interval, 100 tracks at the OD) on a real
    // trace with enough writes for several intervals.
    let mut d = rsrch_drive(1.0, "zigzag");
    d.capacity_gib = Some(1024.0);
    d.write_cache_mib = 0.0;
    let c = run_trace("cloudPhysicsIO.vscsi", None, d, false, &[]);
    println!("cloudPhysicsIO defaults: {c:?}");
    assert!(c["intervals"] >= 3.0, "{c:?}");
    assert!(
        c["promotions"] > 0.0 && c["cache_write_pieces"] > 0.0,
        "{c:?}"
    );
    assert_eq!(c["cache_capacity_tracks"], 99.0);
}

// ---- the paper's timing (section 2.3) ----

/// Device time spent per cause so far.
fn busy_by_cause(dev: &Device) -> BTreeMap<&'static str, f64> {
    let mut m = BTreeMap::new();
    for c in Cause::ALL {
        let b = dev.read_counts()[c as usize].busy + dev.write_counts()[c as usize].busy;
        if b > Nanos::ZERO {
            m.insert(c.name(), b.as_ms());
        }
    }
    m
}

fn delta(
    after: &BTreeMap<&'static str, f64>,
    before: &BTreeMap<&'static str, f64>,
    causes: &[&str],
) -> f64 {
    causes
        .iter()
        .map(|c| after.get(c).unwrap_or(&0.0) - before.get(c).unwrap_or(&0.0))
        .sum()
}

// With the defaults on the 2000-track paper drive (N = 1): the cache is
// bottom tracks 0, 2, ..., 198 (slot 0 = all of track 0 + its header at
// track 2 sector 0; slot 1 = track 2 sectors 1.. + track 4 sectors 0..2);
// the backup region is top tracks 993..999 and the map log track 1005.
const HOME: u64 = 1200;
const LOG_TRACK: u64 = 1005;

#[test]
fn the_cache_layout_on_the_paper_drive() {
    let dev = device("average");
    let l = layer(&dev, &[]);
    let tracks: Vec<Track> = l.cache_tracks().collect();
    assert_eq!(tracks.len(), 100);
    assert_eq!((tracks[0], tracks[99]), (Track(0), Track(198)));
    assert_eq!(l.capacity_tracks(), 99);
    assert_eq!(
        l.header_at(0),
        PhysAddr {
            track: Track(2),
            sector: 0
        }
    );
    assert_eq!(
        l.header_at(1),
        PhysAddr {
            track: Track(4),
            sector: 1
        }
    );
    assert_eq!(l.store_tracks.map(|t| t[2]), Some(Track(LOG_TRACK)));
    // The cache's top neighbours (1 .. 199) are reserved and never used.
    assert!((0..200).all(|t| l.res.contains(Track(t))) && !l.res.contains(Track(202)));
    assert_eq!(l.reserved_tracks, 202 + 16);
}

#[test]
fn promotion_costs_two_seeks_two_rotations_plus_header_average_model() {
    // Paper 000 section 2.3: promotion = t_seek + t_rot (read T) + t_seek +
    // t_rot (write it into the cache) = 2 t_seek + 2 t_rot. Average rotation
    // model, pinned exactly. The simulator adds what the formula leaves out:
    // the slot header (a logical track is a full track plus a header sector,
    // so it ends one sector into the next cache track: a two-track seek — a
    // track switch, which the paper excludes (footnote 4) — half a rotation
    // and one sector), and the map commit (one log sector, cause `metadata`).
    let mut dev = device("average");
    let mut l = layer(&dev, &[]);
    let m = dev.mechanics().clone();
    let seek = |d: u64| m.seek_time(d).as_ms();
    let x = |n: u32| m.transfer_time(n, 512).as_ms();
    let rot = 10.0;
    let h0 = dev.head().track.0;
    let before = busy_by_cause(&dev);
    assert!(l.promote(&mut dev, HOME).unwrap());
    let after = busy_by_cause(&dev);
    let paper = seek(HOME.abs_diff(h0)) + rot + seek(HOME) + rot;
    let header = seek(2) + 0.5 * rot + x(1);
    let got = delta(&after, &before, &["promote"]);
    assert!(
        (got - (paper + header)).abs() < 1e-6,
        "promotion {got} ms vs {paper} + {header}"
    );
    let commit = delta(&after, &before, &["metadata"]);
    assert!(
        (commit - (seek(LOG_TRACK - 2) + 0.5 * rot + x(1))).abs() < 1e-6,
        "{commit}"
    );
    println!("promotion into slot 0: {got:.3} ms = paper 2 t_seek + 2 t_rot ({paper:.3}) + header {header:.3}; commit {commit:.3}");
    // Any other slot straddles two cache tracks: both pieces are partial
    // (half a rotation each on average) and the header follows the second
    // piece without a wait: 2 t_seek + 2 t_rot + a track switch + the header sector.
    let before = busy_by_cause(&dev);
    assert!(l.promote(&mut dev, HOME + 100).unwrap());
    let after = busy_by_cause(&dev);
    let got = delta(&after, &before, &["promote"]);
    let want =
        seek(HOME + 100 - LOG_TRACK) + rot + seek(HOME + 100 - 2) + 2.0 * rot + seek(2) + x(1);
    assert!(
        (got - want).abs() < 1e-6,
        "promotion into slot 1 {got} ms vs {want}"
    );
    assert_eq!(l.cached.get(&HOME), Some(&0));
    assert_eq!(l.cached.get(&(HOME + 100)), Some(&1));
}

#[test]
fn promotion_angular_model_matches_the_average_figure_on_average() {
    // Angular model: the read and the slot-0 write are whole-track accesses
    // (one rotation from wherever the head lands, the paper's zero-latency
    // assumption); only the header waits for its sector, uniformly over the
    // start angles, so the mean over start times equals the average-model figure.
    let n = 64;
    let mut sum = 0.0;
    let mut want = 0.0;
    for i in 0..n {
        let mut dev = device("angular");
        dev.advance_to(Nanos(10_000_000 * i / n + 1));
        let mut l = layer(&dev, &[]);
        let m = dev.mechanics().clone();
        want = m.seek_time(HOME).as_ms() * 2.0
            + 20.0
            + m.seek_time(2).as_ms()
            + 5.0
            + m.transfer_time(1, 512).as_ms();
        let before = busy_by_cause(&dev);
        l.promote(&mut dev, HOME).unwrap();
        sum += delta(&busy_by_cause(&dev), &before, &["promote"]);
    }
    let mean = sum / n as f64;
    assert!(
        (mean - want).abs() < 0.2,
        "angular mean {mean:.3} ms vs {want:.3}"
    );
}

/// A layer with HOME cached in slot 0 and both its top neighbours written.
fn cached_home(rotation: &str, kv: &[(&str, &str)]) -> (Device, TrackCache) {
    let mut dev = device(rotation);
    let mut l = layer(&dev, kv);
    l.rmw.written.set(Track(HOME - 1));
    l.rmw.written.set(Track(HOME + 1));
    assert!(l.promote(&mut dev, HOME).unwrap());
    (dev, l)
}

#[test]
fn eviction_costs_four_seeks_eight_rotations_plus_overheads_average_model() {
    // Paper 000 section 2.3: eviction = t_seek + t_rot (read C) + t_seek +
    // 2 t_rot (read T-1, T+1) + t_seek + 2 t_rot (back them up) + t_seek +
    // t_rot (write T) + 2 t_rot (rewrite T-1, T+1) = 4 t_seek + 8 t_rot.
    // Average model, pinned exactly. The simulator adds: the two-track seek
    // between T-1 and T+1 (twice) and between backup tracks (footnote 4:
    // excluded by the paper); the backup record's per-track header sectors,
    // which push its last 2 of 1024 sectors onto a third backup track (half a
    // rotation + 3 sectors); and the commit (one log sector).
    let (mut dev, mut l) = cached_home("average", &[]);
    let m = dev.mechanics().clone();
    let seek = |d: u64| m.seek_time(d).as_ms();
    let x = |n: u32| m.transfer_time(n, 512).as_ms();
    let rot = 10.0;
    assert_eq!(dev.head().track, Track(LOG_TRACK));
    let before = busy_by_cause(&dev);
    assert!(l.evict(&mut dev, HOME).unwrap());
    let after = busy_by_cause(&dev);
    let paper =
        seek(LOG_TRACK) + seek(HOME - 1) + seek(HOME + 1 - 993) + seek(HOME - 997) + 8.0 * rot;
    let switches = seek(2) + seek(2) + seek(1) + seek(2);
    let third_backup_track = seek(2) + 0.5 * rot + x(3);
    let got = delta(&after, &before, &["evict", "rmw", "backup"]);
    assert!(
        (got - (paper + switches + third_backup_track)).abs() < 1e-6,
        "eviction {got} vs {paper}"
    );
    let commit = delta(&after, &before, &["metadata"]);
    assert!(
        (commit - (seek(HOME + 1 - LOG_TRACK) + 0.5 * rot + x(1))).abs() < 1e-6,
        "{commit}"
    );
    println!(
        "eviction: {got:.3} ms = paper 4 t_seek + 8 t_rot ({paper:.3}) + track switches {switches:.3} \
         + third backup track {third_backup_track:.3}; commit {commit:.3}"
    );
    // The physical steps: read C; read, save, rewrite both neighbours; write T.
    let ev = dev.read_counts()[Cause::Evict as usize];
    assert_eq!((ev.ops, ev.sectors), (1, 512));
    assert_eq!(dev.write_counts()[Cause::Evict as usize].sectors, 512);
    assert_eq!(dev.read_counts()[Cause::Rmw as usize].sectors, 1024);
    assert_eq!(dev.write_counts()[Cause::Rmw as usize].sectors, 1024);
    assert_eq!(dev.write_counts()[Cause::Backup as usize].ops, 3);
    assert!(l.cached.is_empty() && l.slot_home.iter().all(|s| s.is_none()));
}

#[test]
fn eviction_angular_model_matches_the_average_figure_on_average() {
    // Every data access is a whole track except the third backup part and
    // the commit, whose waits are uniform over start angles: the angular mean
    // equals the average-model figure.
    let n = 64;
    let (mut sum, mut want) = (0.0, 0.0);
    for i in 0..n {
        let (mut dev, mut l) = cached_home("angular", &[]);
        dev.advance_to(dev.now() + Nanos(10_000_000 * i / n + 1));
        let m = dev.mechanics().clone();
        let seek = |d: u64| m.seek_time(d).as_ms();
        want =
            seek(LOG_TRACK) + seek(HOME - 1) + seek(HOME + 1 - 993) + seek(HOME - 997) + 8.0 * 10.0;
        want += 3.0 * seek(2) + seek(1) + seek(2) + 5.0 + m.transfer_time(3, 512).as_ms();
        let before = busy_by_cause(&dev);
        l.evict(&mut dev, HOME).unwrap();
        sum += delta(&busy_by_cause(&dev), &before, &["evict", "rmw", "backup"]);
    }
    let mean = sum / n as f64;
    assert!(
        (mean - want).abs() < 0.2,
        "angular mean {mean:.3} ms vs {want:.3}"
    );
}

#[test]
fn scan_recovery_costs_one_rotation_per_cache_track() {
    // Paper 000 section 2.3: rebuilding the map by scanning the cache takes
    // t_rot per cache track (plus, here, a two-track seek between cache
    // tracks: bottom-only tracks are every other track). Average model, exact.
    let scan = [("map_persistence", "scan")];
    let (mut dev, mut l) = cached_home("average", &scan);
    assert!(l.promote(&mut dev, HOME + 100).unwrap());
    assert!(l.promote(&mut dev, HOME + 200).unwrap());
    assert!(l.evict(&mut dev, HOME + 100).unwrap());
    let want_map = l.cached.clone();
    let h = dev.head().track.0;
    let m = dev.mechanics().clone();
    let mut fresh = layer(&dev, &scan);
    let t0 = dev.now();
    fresh.scan_cache(&mut dev).unwrap();
    let took = (dev.now() - t0).as_ms();
    let want = m.seek_time(h).as_ms() + 100.0 * 10.0 + 99.0 * m.seek_time(2).as_ms();
    assert!((took - want).abs() < 1e-6, "scan {took} ms vs {want}");
    assert_eq!(fresh.cached, want_map);
    assert_eq!(want_map.len(), 2);
    // The next promotion's sequence number follows the newest header.
    assert_eq!(fresh.next_seq, l.next_seq);
}

#[test]
fn log_recovery_rebuilds_the_same_map() {
    let (mut dev, mut l) = cached_home("average", &[]);
    for k in 1..=5 {
        assert!(l.promote(&mut dev, HOME + 100 * k).unwrap());
    }
    assert!(l.evict(&mut dev, HOME + 300).unwrap());
    let mut fresh = layer(&dev, &[]);
    fresh.recover(&mut dev).unwrap();
    assert_eq!(fresh.cached, l.cached);
    assert_eq!(fresh.cached.len(), 5);
    assert_eq!(
        fresh
            .slot_home
            .iter()
            .map(|s| s.map(|x| x.0))
            .collect::<Vec<_>>(),
        l.slot_home
            .iter()
            .map(|s| s.map(|x| x.0))
            .collect::<Vec<_>>()
    );
}

// ---- host I/O, background work, configuration ----

/// The host LBA whose home is sector 0 of physical track `t`.
fn host_lba_of(l: &TrackCache, g: &Geometry, t: u64) -> u64 {
    let home = g
        .home_lba(PhysAddr {
            track: Track(t),
            sector: 0,
        })
        .unwrap()
        .0;
    // to_home is monotonic: binary search for the host LBA.
    let (mut lo, mut hi) = (0, l.res.host_capacity().0);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if l.res.to_home(mid) < home {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    assert_eq!(l.res.to_home(lo), home);
    lo
}

fn wreq(lba: u64, n: u64) -> WriteReq<'static> {
    WriteReq {
        lba: Lba(lba),
        sectors: Sectors(n),
        cause: Cause::Host,
        data: &[],
    }
}

#[test]
fn a_cached_track_is_written_in_place_without_read_modify_write() {
    let (mut dev, mut l) = cached_home("average", &[]);
    let g = dev.geometry_arc();
    let lba = host_lba_of(&l, &g, HOME);
    let rmw_before = dev.read_counts()[Cause::Rmw as usize].ops;
    let ops = dev.ops_issued();
    direct::write(&mut l, &mut dev, &wreq(lba + 500, 12)).unwrap();
    // Slot 0 is track 0 (data) and track 2 (header): sectors 500..512 of the home track are cache track 0's.
    assert_eq!(dev.ops_issued() - ops, 1);
    assert_eq!(dev.head().track, Track(0));
    assert_eq!(dev.read_counts()[Cause::Rmw as usize].ops, rmw_before);
    assert_eq!(l.counters.cache_write_pieces, 1);
    let mut out = vec![];
    l.read(&mut dev, Lba(lba + 508), Sectors(4), &mut out)
        .unwrap();
    assert_eq!(l.counters.cache_read_pieces, 1);
    assert_eq!(dev.head().track, Track(0));
    // Uncached, the same write is a read-modify-write of both neighbours.
    l.evict(&mut dev, HOME).unwrap();
    let rmw_before = dev.read_counts()[Cause::Rmw as usize].ops;
    direct::write(&mut l, &mut dev, &wreq(lba + 500, 12)).unwrap();
    assert_eq!(dev.read_counts()[Cause::Rmw as usize].ops, rmw_before + 2);
    assert_eq!(dev.head().track, Track(HOME + 1));
}

#[test]
fn the_hottest_tracks_replace_strictly_colder_cached_ones() {
    let mut dev = device("average");
    // 4 cache tracks: 3 slots. Interval of 12 writes.
    let mut l = layer(
        &dev,
        &[
            ("cache_tracks", "4"),
            ("interval_writes", "12"),
            ("foreground_after_writes", "100"),
            ("evict_threshold", "0"),
        ],
    );
    let g = dev.geometry_arc();
    let lba = |l: &TrackCache, t: u64| host_lba_of(l, &g, t);
    let writes = |l: &mut TrackCache, dev: &mut Device, t: u64, n: usize| {
        let a = lba(l, t);
        for _ in 0..n {
            direct::write(l, dev, &wreq(a, 1)).unwrap();
        }
    };
    // Interval 1: 1200 x5, 1300 x4, 1400 x2, 1500 x1 (a top track, 1501, is never a candidate).
    writes(&mut l, &mut dev, 1501, 0);
    writes(&mut l, &mut dev, 1200, 5);
    writes(&mut l, &mut dev, 1300, 4);
    writes(&mut l, &mut dev, 1400, 2);
    writes(&mut l, &mut dev, 1500, 1);
    assert_eq!(
        l.plan,
        [
            Move::Promote(1200),
            Move::Promote(1300),
            Move::Promote(1400)
        ]
    );
    assert!((l.background() != Background::None));
    let now = dev.now();
    direct::idle(&mut l, &mut dev, now).unwrap(); // no time: nothing starts
    assert_eq!(l.counters.promotions, 0);
    direct::idle(&mut l, &mut dev, now + Nanos(1)).unwrap(); // one stage of a move starts, and ends past `until`
    assert_eq!(l.counters.promotions, 0);
    assert!(l.rmw.busy(), "a promotion is in progress");
    direct::idle(&mut l, &mut dev, Nanos(u64::MAX)).unwrap();
    assert_eq!(l.counters.promotions, 3);
    assert!(!(l.background() != Background::None));
    // Interval 2: 1600 x5, 1200 x4, 1300 x2, 1700 x1: 1400 (0 writes) and then 1300 (2) are colder than 1600 and ... 1700 (1).
    writes(&mut l, &mut dev, 1600, 5);
    writes(&mut l, &mut dev, 1200, 4);
    writes(&mut l, &mut dev, 1300, 2);
    writes(&mut l, &mut dev, 1700, 1);
    assert_eq!(l.plan, [Move::Evict(1400), Move::Promote(1600)]);
    direct::idle(&mut l, &mut dev, Nanos(u64::MAX)).unwrap();
    let mut cached: Vec<u64> = l.cached.keys().copied().collect();
    cached.sort_unstable();
    assert_eq!(cached, vec![1200, 1300, 1600]);
    assert_eq!(l.counters.background_moves, 5);
}

#[test]
fn a_host_that_is_never_idle_gets_one_move_per_write_batch() {
    let mut dev = device("average");
    let mut l = layer(
        &dev,
        &[
            ("cache_tracks", "12"),
            ("interval_writes", "20"),
            ("foreground_after_writes", "5"),
        ],
    );
    let g = dev.geometry_arc();
    // 20 writes to 10 distinct bottom tracks: a plan of 10 promotions (11 slots).
    let lbas: Vec<u64> = (0..10)
        .map(|i| host_lba_of(&l, &g, 1200 + 20 * i))
        .collect();
    for k in 0..20 {
        direct::write(&mut l, &mut dev, &wreq(lbas[k % 10], 1)).unwrap();
    }
    assert_eq!(l.plan.len(), 10);
    let other = host_lba_of(&l, &g, 1801);
    let mut moves = vec![];
    for _ in 0..20 {
        let before = l.counters.promotions;
        direct::write(&mut l, &mut dev, &wreq(other, 1)).unwrap();
        moves.push(l.counters.promotions - before);
    }
    // Nothing during the first 4 writes after the plan, then exactly one per write.
    assert_eq!(
        moves,
        [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(l.counters.foreground_moves, 10);
    assert_eq!(l.counters.background_moves, 0);
}

#[test]
fn flat_out_replay_runs_the_moves_in_the_foreground() {
    // Flat-out replay, write cache off: the device is never idle, so only the
    // foreground step moves tracks.
    let mut c = run_cfg(
        rsrch_drive(1.0, "zigzag"),
        "imr-cache",
        &[("interval_writes", "200"), ("cache_tracks", "10")],
    );
    c.trace = rsrch_head(3000);
    c.replay.mode = Mode::FlatOut;
    c.replay.write_cache = Some(false);
    c.verify = true;
    let mut s = Simulation::new(c).unwrap();
    s.run().unwrap();
    let k = &s.report().layer_counters;
    assert_eq!(k["background_moves"], 0.0, "{k:?}");
    assert!(
        k["foreground_moves"] > 0.0 && k["promotions"] > 0.0,
        "{k:?}"
    );
}

#[test]
fn bad_parameters_are_configuration_errors() {
    let g = paper_drive("average", 1.0).geometry().unwrap();
    for kv in [
        &[("cache_tracks", "1")][..],
        &[("cache_tracks", "0")],
        &[("interval_writes", "0")],
        &[("cache_location", "spread"), ("cache_groups", "0")],
        &[("cache_location", "spread"), ("cache_groups", "60")],
        &[("backup_tracks", "2")],
        &[("backup_tracks", "0")],
        &[("cache_tracks", "1990")],
        &[("cache_tracks", "100000")],
        &[("cache_tracks", "1099511627776")],
        &[("backup_tracks", "1099511627776")],
        &[
            ("cache_location", "spread"),
            ("cache_groups", "1099511627776"),
        ],
    ] {
        match (ENTRY.build)(&params(kv), &g) {
            Err(crate::error::SimError::Config(msg)) => println!("{kv:?}: {msg}"),
            Err(e) => panic!("{kv:?}: not a config error: {e}"),
            Ok(_) => panic!("{kv:?} was accepted"),
        }
    }
    // Not an IMR drive.
    let mut d = paper_drive("average", 1.0);
    d.layout.kind = crate::geometry::LayoutKind::Cmr;
    let cmr = d.geometry().unwrap();
    assert!(matches!(
        (ENTRY.build)(&params(&[]), &cmr),
        Err(crate::error::SimError::Config(_))
    ));
}

#[test]
fn spread_groups_sit_across_the_disk_and_promote_into_the_nearest() {
    let mut dev = device("average");
    let mut l = layer(&dev, &[("cache_location", "spread"), ("cache_groups", "4")]);
    assert_eq!(l.runs.len(), 4);
    let mids: Vec<u64> = l.runs.iter().map(|r| r.mid).collect();
    // Runs of 25 tracks (26 groups of 2 tracks) centred near 1/8, 3/8, 5/8, 7/8 of the disk
    // (the middle one moved aside by the backup region).
    assert!(mids.windows(2).all(|w| w[1] > w[0] + 300), "{mids:?}");
    assert!(mids[0] < 400 && mids[3] > 1600, "{mids:?}");
    assert_eq!(l.capacity_tracks(), 4 * 24);
    l.promote(&mut dev, 1800).unwrap();
    let s = l.cached[&1800];
    assert_eq!(l.slots[s as usize].run, 3);
    l.promote(&mut dev, 300).unwrap();
    assert_eq!(l.slots[l.cached[&300] as usize].run, 0);
}

// ---- crash consistency ----

const SWEEP: &[(&str, &str)] = &[
    ("interval_writes", "8"),
    ("cache_tracks", "6"),
    ("foreground_after_writes", "0"),
    ("evict_threshold", "0"),
    ("skip_empty", "false"),
];

fn check_sweep(persistence: &str, points: std::ops::Range<u64>) {
    let mut kv = SWEEP.to_vec();
    kv.push(("map_persistence", persistence));
    let n = points.end - points.start;
    let (by_cause, totals) = crash_sweep(&kv, 400, points);
    let total: u64 = by_cause.values().sum();
    let inside: u64 = ["promote", "evict", "rmw", "backup", "metadata"]
        .iter()
        .map(|c| by_cause.get(c).copied().unwrap_or(0))
        .sum();
    let moves: u64 = ["promote", "evict"]
        .iter()
        .map(|c| by_cause.get(c).copied().unwrap_or(0))
        .sum();
    println!("imr-cache ({persistence}) crash points covered: {total}, inside promotions/evictions/RMWs/commits: {inside} ({by_cause:?})");
    assert!(total >= n, "{by_cause:?}");
    assert!(
        inside * 2 >= total,
        "crashes inside the layer's multi-step operations: {by_cause:?}"
    );
    assert!(
        moves * 6 >= total,
        "crashes inside promotions and evictions: {by_cause:?}"
    );
    // Every recovery ran (and restored interrupted read-modify-writes).
    assert!(totals["backup_restores"] > 0.0, "{totals:?}");
    // Moves run in stages, and many crashes fall inside them.
    println!("crashes inside stages: {}", totals["crashes_in_stages"]);
    assert!(totals["crashes_in_stages"] * 8.0 >= n as f64, "{totals:?}");
    if persistence == "scan" {
        assert!(totals["scan_recoveries"] >= n as f64, "{totals:?}");
    }
}

#[test]
fn a_thousand_crash_points_lose_no_acknowledged_write() {
    check_sweep("log", 0..1200);
}

#[test]
fn crashes_with_scan_persistence_lose_no_acknowledged_write() {
    check_sweep("scan", 0..400);
}

#[test]
fn a_hot_track_is_promoted_in_idle_time_and_survives_a_crash() {
    for persistence in ["log", "scan"] {
        let kv = [("interval_writes", "3"), ("map_persistence", persistence)];
        let dev = device("average");
        let l = layer(&dev, &kv);
        let g = dev.geometry_arc();
        let a = host_lba_of(&l, &g, HOME);
        // Three writes make HOME the interval's hottest track; the gap before
        // the fourth is idle time, where it is promoted. The fourth write and
        // the reads after the crash go to the cache copy.
        let recs = vec![
            w(0, a, 8),
            w(1, a + 100, 8),
            w(2, a + 300, 8),
            w(500, a + 104, 8),
            r(600, a, 512),
            r(700, a + 96, 16),
        ];
        let mut c = run_cfg(paper_drive("average", 1.0), "imr-cache", &kv);
        c.verify = true;
        c.crash_after = vec![4];
        let sim = simulate(c, recs);
        let k = &sim.report().layer_counters;
        assert_eq!(sim.crashes(), 1);
        assert_eq!(
            (
                k["promotions"],
                k["background_moves"],
                k["foreground_moves"]
            ),
            (1.0, 1.0, 0.0),
            "{k:?}"
        );
        assert_eq!(k["cache_write_pieces"], 1.0, "{k:?}");
        assert!(k["cache_read_pieces"] >= 2.0, "{k:?}");
        assert_eq!(k["cached_tracks"], 1.0, "{k:?}");
        assert_eq!(
            k["scan_recoveries"],
            if persistence == "scan" { 1.0 } else { 0.0 }
        );
    }
}

// ---- memory (paper 000 section 2.3, "Memory usage") ----

#[test]
fn map_memory_is_proportional_to_the_cache_not_the_drive() {
    // The paper's 20 TB drive with a mean track size of 1.5 MB has 1.3e7
    // tracks. A look-aside exception map costs MAP_ENTRY_BYTES per cache slot:
    // "a trivial amount" for Table 2's 100 tracks, and "a few MB" at most for
    // "several tens of thousands of tracks" — the same on a 1 TB drive.
    let drive = |tb: f64| {
        let mut d = paper_drive("average", 1.0);
        d.track_bytes = 384 * 4096; // 1.5 MiB
        let t = (tb * 1e12 / d.track_bytes as f64) as u64;
        d.tracks = Some(t + t % 2);
        d.geometry().unwrap()
    };
    let big = drive(20.0);
    assert!(
        (1.25e7..1.35e7).contains(&(big.tracks() as f64)),
        "{}",
        big.tracks()
    );
    let small = drive(1.0);
    for (k, slots) in [(100u64, 99u64), (50_000, 49_870)] {
        let kv = [("cache_tracks", k.to_string())];
        let kv: Vec<(&str, &str)> = kv.iter().map(|(a, b)| (*a, b.as_str())).collect();
        let on_big = TrackCache::new(&params(&kv), &big).unwrap();
        let on_small = TrackCache::new(&params(&kv), &small).unwrap();
        assert_eq!(on_big.capacity_tracks(), slots);
        assert_eq!(on_big.map_bytes(), MAP_ENTRY_BYTES * slots);
        assert_eq!(on_big.map_bytes(), on_small.map_bytes());
        let rep = on_big.report();
        assert_eq!(rep["map_bytes"], (MAP_ENTRY_BYTES * slots) as f64);
        println!(
            "20 TB drive, {k} cache tracks: map {} bytes, monitor {} bytes",
            rep["map_bytes"], rep["monitor_bytes"]
        );
    }
    let l = TrackCache::new(&params(&[]), &big).unwrap();
    assert_eq!(l.map_bytes(), 1188); // 100 tracks: ~1 KB
    assert_eq!(l.monitor_bytes(), 80_000); // the paper's "less than 0.25 MB" track log
    let l = TrackCache::new(&params(&[("cache_tracks", "50000")]), &big).unwrap();
    assert!(
        l.map_bytes() < 4 << 20 && l.map_bytes() > 100_000,
        "{}",
        l.map_bytes()
    );
}
