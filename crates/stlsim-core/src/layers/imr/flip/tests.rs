use super::*;
use crate::drive::DriveConfig;
use crate::engine::{Mode, Simulation};
use crate::geometry::LayoutConfig;
#[allow(unused_imports)]
use crate::layers::{background::direct, Background};
use crate::mechanics::Rotation;
use crate::trace::TraceSpec;
use crate::units::Nanos;
use std::collections::{BTreeMap, HashMap};

/// A layer and an untracked or tracked device, without the engine.
fn direct(rot: &str, ratio: f64, params: &[(&str, &str)], tracked: bool) -> (ImrFlip, Device) {
    let d = paper_drive(rot, ratio);
    let g = d.geometry().unwrap();
    let m = d.mechanics(g.tracks()).unwrap();
    let user: BTreeMap<String, serde_json::Value> = params
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    let p = Params::resolve("imr-flip", ENTRY.params, &user).unwrap();
    (ImrFlip::new(&p, &g).unwrap(), Device::new(g, m, tracked))
}

// ---- Harness: shared with the other IMR layers' tests ----

use super::super::rmw::tests::{
    crash_sweep, paper_drive, rsrch_drive, rsrch_head, run_cfg, simulate, w,
};

// ---- Tests ----

const OUTER: &[(&str, &str)] = &[("backup_location", "outer"), ("skip_empty", "false")];

fn set_state(l: &mut ImrFlip, b: u64, f: Flipped) {
    l.state.insert(b, f.code() as u8);
    l.flipped_now += 1;
}

fn counts(entries: &[(u64, u32, u32, u32, u32)]) -> FxHashMap<u64, Count> {
    entries
        .iter()
        .map(|&(t, n, head, tail, swapped)| {
            (
                t,
                Count {
                    n,
                    head,
                    tail,
                    swapped,
                },
            )
        })
        .collect()
}

const NEXT_LOW: Flipped = Flipped {
    side: Side::Next,
    part: Part::Low,
};

#[test]
fn states_round_trip_in_the_papers_order() {
    for c in 1..=4 {
        assert_eq!(Flipped::from_code(c).unwrap().code(), c);
    }
    assert_eq!(Flipped::from_code(0), None);
    assert_eq!(Flipped::from_code(5), None);
    assert_eq!(
        Flipped {
            side: Side::Prev,
            part: Part::Low
        }
        .code(),
        1
    );
    assert_eq!(
        Flipped {
            side: Side::Next,
            part: Part::Low
        }
        .code(),
        4
    );
}

#[test]
fn a_flip_costs_the_relocation_steps_average_model() {
    // Paper 000 section 2.2: flipping bottom T with top T+1 costs 3 t_seek + 8 t_rot
    // (seek to T, read T-1, T, T+1; seek to the backup region, write T-1 and T;
    // seek back, write T, T+1, T-1), whole-track accesses having no rotational latency.
    // The simulator's flip (RmwEngine::relocate, average rotation model) is computed here
    // op by op from the simulator's seek function for the actual distances.
    let (mut l, mut dev) = direct("average", 1.0, OUTER, false);
    let (b, p, q) = (Track(1000), Track(1001), Track(999));
    for t in [b, q, p] {
        dev.write(
            Cause::Host,
            PhysAddr {
                track: t,
                sector: 0,
            },
            512,
            &[],
        )
        .unwrap();
    }
    // Leave the head somewhere else ("an arbitrary location").
    dev.read(
        Cause::Host,
        PhysAddr {
            track: Track(1700),
            sector: 3,
        },
        1,
        &mut vec![],
    )
    .unwrap();
    let (t0, h) = (dev.now(), dev.head().track);
    let done = l
        .execute(
            &mut dev,
            Planned {
                bottom: b,
                state: NEXT_LOW,
                back: false,
            },
        )
        .unwrap();
    assert!(done);
    let took = (dev.now() - t0).as_ms();

    let m = dev.mechanics();
    let seek = |a: Track, z: Track| m.seek_time(a.distance(z)).as_ms();
    let rot = m.rotation_time().as_ms();
    let bk = l.res.tops[..4].to_vec();
    let log = l.store_tracks[2];
    // 1536 sectors (T, T+1 and T-1) in records of 511 sectors + a header per backup track:
    // three whole backup tracks and a fourth part of 3 + 1 sectors.
    let long_seeks = seek(h, b) + seek(q, bk[0]) + seek(bk[3], b);
    let short_seeks = seek(b, p)
        + seek(p, q)
        + seek(bk[0], bk[1])
        + seek(bk[1], bk[2])
        + seek(bk[2], bk[3])
        + seek(b, q)
        + seek(q, p);
    let commit_seek = seek(p, log);
    let whole_tracks = 9.0 * rot; // read T, T+1, T-1; 3 whole backup tracks; write T, T-1, T+1
    let fourth_part = 0.5 * rot + 4.0 / 512.0 * rot;
    let commit = 0.5 * rot + 1.0 / 512.0 * rot;
    let want = long_seeks + short_seeks + commit_seek + whole_tracks + fourth_part + commit;
    assert!(
        (took - want).abs() < 1e-6,
        "flip took {took} ms, ops add up to {want} ms"
    );

    // Against the paper's 3 t_seek + 8 t_rot (with its three seeks at their actual lengths):
    // + 1 t_rot: relocate also saves T+1 (a roll-back record: the paper saves T-1 and T only
    //   and would roll an interrupted flip forward from T's new contents);
    // + 0.5 t_rot + transfer: three tracks do not fit three backup tracks with their headers;
    // + a seek and 0.5 t_rot: the map change's log record (the commit point), which the paper
    //   treats as amortised;
    // + the short seeks between adjacent tracks the paper leaves out (its footnote 4).
    let paper = long_seeks + 8.0 * rot;
    let extra = rot + fourth_part + commit + commit_seek + short_seeks;
    assert!((took - (paper + extra)).abs() < 1e-6);
    println!(
        "flip: simulator {took:.3} ms, paper 3 t_seek + 8 t_rot = {paper:.3} ms (t_seek as the three actual long \
         seeks: {long_seeks:.3} ms); difference {:.3} ms = 1 t_rot (T+1 saved) + {:.3} (4th backup part) + \
         {:.3} (commit record) + {:.3} (seek to log) + {:.3} (short seeks)",
        took - paper,
        fourth_part,
        commit,
        commit_seek,
        short_seeks
    );
    let ops = |c: Cause| {
        (
            dev.read_counts()[c as usize].ops,
            dev.write_counts()[c as usize].ops,
        )
    };
    assert_eq!(ops(Cause::Flip), (3, 3));
    assert_eq!(ops(Cause::Backup), (0, 4));
    assert_eq!(ops(Cause::Metadata), (0, 1));
    assert_eq!(l.state(b), Some(NEXT_LOW));
}

#[test]
fn a_flip_in_the_angular_model_differs_only_in_its_two_partial_accesses() {
    // Angular model: whole-track accesses still cost exactly one rotation; only the fourth
    // backup part and the log record wait for their first sector, from the platter's angle
    // when the head arrives (sector s of S passes at s/S of a turn). Pinned exactly.
    let (mut l, mut dev) = direct("angular", 1.0, OUTER, false);
    assert_eq!(dev.mechanics().rotation(), Rotation::Angular);
    let (b, p, q) = (Track(600), Track(601), Track(599));
    for t in [b, q, p] {
        dev.write(
            Cause::Host,
            PhysAddr {
                track: t,
                sector: 0,
            },
            512,
            &[],
        )
        .unwrap();
    }
    let (t0, h) = (dev.now(), dev.head().track);
    l.execute(
        &mut dev,
        Planned {
            bottom: b,
            state: NEXT_LOW,
            back: false,
        },
    )
    .unwrap();
    let m = dev.mechanics();
    let rot = m.rotation_time().0;
    let bk = l.res.tops[..4].to_vec();
    let log = l.store_tracks[2];
    // (from, to, sectors, whole track?)
    let steps = [
        (h, b, 512, true),
        (b, p, 512, true),
        (p, q, 512, true),
        (q, bk[0], 512, true),
        (bk[0], bk[1], 512, true),
        (bk[1], bk[2], 512, true),
        (bk[2], bk[3], 4, false),
        (bk[3], b, 512, true),
        (b, q, 512, true),
        (q, p, 512, true),
        (p, log, 1, false),
    ];
    let mut t = t0.0;
    let mut waits = 0;
    for (from, to, n, whole) in steps {
        t += m.seek_time(from.distance(to)).0;
        if !whole {
            let wait = (rot - t % rot) % rot; // both partial accesses start at sector 0
            waits += wait;
            t += wait;
        }
        t += rot * n / 512;
    }
    assert_eq!(dev.now().0, t, "angular flip time");
    // The two waits replace the average model's two half rotations: each is under one rotation.
    assert!(waits < 2 * rot);
}

#[test]
fn map_bytes_for_a_20_tb_drive_match_the_paper() {
    // Paper: 3 bits per bottom track (1.5 bits per track); 1.5 MB mean tracks on a 20 TB drive
    // give ~1.3e7 tracks and a map of about 2.5 MB.
    let d = DriveConfig {
        name: "20tb".into(),
        sector_bytes: 512,
        track_bytes: 2930 * 512, // 1.5 MB
        tracks: None,
        capacity_gib: Some(20e12 / (1u64 << 30) as f64),
        layout: LayoutConfig {
            kind: crate::geometry::LayoutKind::Imr,
            group_tracks: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    let g = d.geometry().unwrap();
    assert!(
        (g.tracks() as f64 - 1.333e7).abs() < 0.01e7,
        "{} tracks",
        g.tracks()
    );
    let p = Params::resolve("imr-flip", ENTRY.params, &BTreeMap::new()).unwrap();
    let l = ImrFlip::new(&p, &g).unwrap();
    let bytes = l.report()["map_bytes"];
    assert_eq!(bytes, (g.tracks() / 2 * 3).div_ceil(8) as f64);
    assert!(
        (bytes - 2.5e6).abs() < 0.01 * 2.5e6,
        "map {bytes} bytes vs the paper's ~2.5 MB"
    );
}

#[test]
fn configuration_errors_are_reported_not_panicked() {
    let d = paper_drive("average", 1.0);
    let g = d.geometry().unwrap();
    let build = |pairs: &[(&str, &str)]| {
        let user = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect();
        ImrFlip::new(
            &Params::resolve("imr-flip", ENTRY.params, &user).unwrap(),
            &g,
        )
    };
    // Three backup tracks hold 3 * 511 sectors; a flip of equal tracks saves 3 * 512.
    let e = build(&[("backup_tracks", "3")]).unwrap_err();
    assert!(
        matches!(&e, SimError::Config(m) if m.contains("largest flip saves 1536")),
        "{e}"
    );
    let e = build(&[("backup_tracks", "2")]).unwrap_err();
    assert!(
        matches!(&e, SimError::Config(m) if m.contains("at least 3")),
        "{e}"
    );
    let e = build(&[("interval_writes", "0")]).unwrap_err();
    assert!(
        matches!(&e, SimError::Config(m) if m.contains("interval_writes")),
        "{e}"
    );
    assert!(build(&[]).is_ok());
    // With 0.9 top tracks (461 sectors) a flip saves 3 * 461 = 1383 sectors: three backup
    // tracks (3 * 460) are still too few, the default four are enough.
    let g9 = paper_drive("average", 0.9).geometry().unwrap();
    let build9 = |pairs: &[(&str, &str)]| {
        let user = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect();
        ImrFlip::new(
            &Params::resolve("imr-flip", ENTRY.params, &user).unwrap(),
            &g9,
        )
    };
    let e = build9(&[("backup_tracks", "3")]).unwrap_err();
    assert!(
        matches!(&e, SimError::Config(m) if m.contains("holds 1380") && m.contains("saves 1383")),
        "{e}"
    );
    assert!(build9(&[]).is_ok());
}

#[test]
fn the_search_takes_the_colder_free_neighbour_above_the_threshold() {
    let (l, dev) = direct("average", 1.0, OUTER, false);
    let g = dev.geometry_arc();
    let c = counts(&[
        // Hottest: 100 (101 colder than 99).
        (100, 200, 0, 0, 0),
        (99, 10, 0, 0, 0),
        (101, 5, 0, 0, 0),
        // 200: exactly 50 hotter than its colder neighbour: not flipped (the paper's strict >).
        (200, 70, 0, 0, 0),
        (199, 20, 0, 0, 0),
        (201, 30, 0, 0, 0),
        // 300: 51 hotter than 301 (unwritten: 0), its colder neighbour.
        (300, 51, 0, 0, 0),
        (299, 3, 0, 0, 0),
        // Top tracks are never candidates, however hot.
        (401, 1000, 0, 0, 0),
    ]);
    let plan = l.plan(&g, &c);
    assert_eq!(
        plan,
        vec![
            Planned {
                bottom: Track(100),
                state: NEXT_LOW,
                back: false
            },
            Planned {
                bottom: Track(300),
                state: NEXT_LOW,
                back: false
            },
        ]
    );
    // Ties go to T-1.
    let plan = l.plan(&g, &counts(&[(500, 100, 0, 0, 0)]));
    assert_eq!(plan[0].state.side, Side::Prev);
}

#[test]
fn no_chained_flips_and_at_most_max_flips() {
    let (mut l, dev) = direct(
        "average",
        1.0,
        &[("backup_location", "outer"), ("max_flips", "3")],
        false,
    );
    let g = dev.geometry_arc();
    // 104 is flipped with 105: 106 may not take 105, so it takes the hotter 107.
    set_state(&mut l, 104, NEXT_LOW);
    // 120 and 122 are both hot and share cold top 121: 120 (hotter) takes it; 122's other
    // neighbour 123 is too hot, so 122 is not flipped. 140 is a fourth candidate beyond max_flips.
    let c = counts(&[
        (106, 300, 0, 0, 0),
        (105, 0, 0, 0, 0),
        (107, 40, 0, 0, 0),
        (119, 100, 0, 0, 0),
        (120, 250, 0, 0, 0),
        (121, 0, 0, 0, 0),
        (122, 240, 0, 0, 0),
        (123, 200, 0, 0, 0),
        (130, 230, 0, 0, 0),
        (140, 220, 0, 0, 0),
    ]);
    let plan = l.plan(&g, &c);
    let pairs: Vec<(u64, Side)> = plan.iter().map(|p| (p.bottom.0, p.state.side)).collect();
    assert_eq!(
        pairs,
        vec![(106, Side::Next), (120, Side::Next), (130, Side::Prev)]
    );
    // A flipped bottom is never flipped with its other side, however hot.
    let plan = l.plan(&g, &counts(&[(104, 500, 0, 0, 0), (103, 0, 0, 0, 0)]));
    assert!(plan.is_empty(), "{plan:?}");
    // Reserved tracks are never partners: host track 16 may only take 17 (15 is reserved and
    // would be colder), and 17 is too hot.
    let plan = l.plan(&g, &counts(&[(16, 500, 0, 0, 0), (17, 460, 0, 0, 0)]));
    assert!(plan.is_empty(), "{plan:?}");
}

#[test]
fn a_flipped_track_whose_moved_down_data_is_hot_is_flipped_back() {
    let (mut l, dev) = direct("average", 1.0, &[("backup_location", "outer")], false);
    let g = dev.geometry_arc();
    set_state(&mut l, 100, NEXT_LOW);
    set_state(&mut l, 200, NEXT_LOW);
    let c = counts(&[
        // The partner's data, now on 100, got 120 writes; 101 (100's old hot part) only 10.
        (100, 120, 0, 0, 120),
        (101, 10, 0, 0, 0),
        // 200: 90 writes, but only 60 on the swapped range, 201 had 30: 30 is not > 50.
        (200, 90, 0, 0, 60),
        (201, 30, 0, 0, 0),
    ]);
    let plan = l.plan(&g, &c);
    assert_eq!(
        plan,
        vec![Planned {
            bottom: Track(100),
            state: NEXT_LOW,
            back: true
        }]
    );
}

#[test]
fn the_swapped_part_is_the_end_the_writes_fell_on() {
    let (l, dev) = direct("average", 0.9, &[("backup_location", "outer")], false);
    let g = dev.geometry_arc();
    let c = counts(&[
        (100, 100, 10, 90, 0),
        (200, 100, 90, 10, 0),
        (300, 100, 50, 50, 0),
    ]);
    let parts: Vec<(u64, Part)> = l
        .plan(&g, &c)
        .iter()
        .map(|p| (p.bottom.0, p.state.part))
        .collect();
    assert_eq!(
        parts,
        vec![(100, Part::High), (200, Part::Low), (300, Part::Low)]
    );
    // And the swap it describes: m = 461 sectors, the last ones for High.
    let s = swap_of(
        &g,
        Track(100),
        Flipped {
            side: Side::Prev,
            part: Part::High,
        },
    );
    assert_eq!((s.top, s.lo, s.m), (Track(99), 512 - 461, 461));
}

/// Host LBA of sector `s` of physical track `t` (paper drive, N = 1, region at the outer edge).
fn host_lba(g: &Geometry, t: u64, s: u32) -> u64 {
    g.logical_track_start(t).0 - g.logical_track_start(16).0 + s as u64
}

/// A deterministic workload through the layer, checked against a model after every step.
fn model_run(ratio: f64) -> (ImrFlip, Device, HashMap<u64, u32>) {
    let params = &[
        ("backup_location", "outer"),
        ("interval_writes", "40"),
        ("flip_threshold", "3"),
    ];
    let (mut l, mut dev) = direct("average", ratio, params, true);
    let g = dev.geometry_arc();
    let mut model: HashMap<u64, u32> = HashMap::new();
    let mut ver = 0u32;
    let mut x = 12345u64;
    let mut rnd = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    // Neighbourhoods of tracks 100..110; phase 1 heats the ends of bottoms 100 (high end) and
    // 104 (low end); phase 2 heats the home data of tops 101, 103, 105 (to force flip-backs);
    // every phase also writes everywhere around a little, so every neighbour holds data.
    for phase in 0..3 {
        for _ in 0..400 {
            let r = rnd(10);
            let (t, s, n) = match (phase, r) {
                (0, 0..=3) => (100, 440 + rnd(60) as u32, 4),
                (0, 4..=7) => (104, rnd(40) as u32, 4),
                (1, 0..=7) => (101 + 2 * rnd(3), rnd(300) as u32, 8),
                (2, 0..=4) => (100 + rnd(2) * 4, rnd(400) as u32, 16),
                _ => (98 + rnd(12), 0, 1 + rnd(40) as u32),
            };
            let n = n.min(g.sectors_in(Track(t)) - s);
            let lba = host_lba(&g, t, s);
            let data: Vec<Token> = (0..n as u64)
                .map(|i| {
                    ver += 1;
                    model.insert(lba + i, ver);
                    Token::data(Lba(lba + i), ver)
                })
                .collect();
            let wr = WriteReq {
                lba: Lba(lba),
                sectors: Sectors(n as u64),
                cause: Cause::Host,
                data: &data,
            };
            direct::write(&mut l, &mut dev, &wr).unwrap();
            // Idle time in phases 0 and 2 only: phase 1's flips are done in the foreground.
            if phase != 1 && rnd(4) == 0 {
                let until = dev.now() + Nanos::from_ms(500.0);
                direct::idle(&mut l, &mut dev, until).unwrap();
            }
        }
        check(&mut l, &mut dev, &model);
    }
    (l, dev, model)
}

fn check(l: &mut ImrFlip, dev: &mut Device, model: &HashMap<u64, u32>) {
    let mut lbas: Vec<_> = model.iter().collect();
    lbas.sort();
    for (&lba, &ver) in lbas {
        let mut out = vec![];
        l.read(dev, Lba(lba), Sectors(1), &mut out).unwrap();
        assert_eq!(out, vec![Token::data(Lba(lba), ver)], "LBA {lba}");
    }
}

#[test]
fn every_block_survives_flips_and_flip_backs_with_unequal_tracks() {
    let (mut l, mut dev, model) = model_run(0.9);
    let r = l.report();
    println!("model run, top ratio 0.9: {r:?}");
    assert!(r["flips"] >= 3.0 && r["flip_backs"] >= 1.0, "{r:?}");
    assert!(
        r["flips_idle"] >= 1.0 && r["flips_foreground"] >= 1.0,
        "{r:?}"
    );
    // One log record (commit) per flip or flip-back.
    assert!(r["map_log_writes"] == r["flips"] + r["flip_backs"]);
    // A fresh layer rebuilds the same map from the medium and reads the same data.
    let state = l.state.clone();
    let (mut fresh, _) = direct("average", 0.9, &[("backup_location", "outer")], true);
    fresh.recover(&mut dev).unwrap();
    assert_eq!(fresh.state, state);
    assert_eq!(fresh.flipped(), l.flipped());
    check(&mut fresh, &mut dev, &model);
    check(&mut l, &mut dev, &model);
}

#[test]
fn hot_ends_choose_the_matching_part() {
    // 0.9 top tracks: 100's writes fall on its high end, 104's on its low end.
    let params = &[
        ("backup_location", "outer"),
        ("interval_writes", "50"),
        ("flip_threshold", "3"),
    ];
    let (mut l, mut dev) = direct("average", 0.9, params, false);
    let g = dev.geometry_arc();
    for i in 0..25u64 {
        for (t, s) in [(100u64, 500u32), (104, 2)] {
            let lba = host_lba(&g, t, s + (i % 5) as u32);
            direct::write(
                &mut l,
                &mut dev,
                &WriteReq {
                    lba: Lba(lba),
                    sectors: Sectors(4),
                    cause: Cause::Host,
                    data: &[],
                },
            )
            .unwrap();
        }
    }
    assert_eq!(l.pending.len(), 2);
    direct::idle(&mut l, &mut dev, Nanos(u64::MAX)).unwrap();
    assert_eq!(l.state(Track(100)).map(|f| f.part), Some(Part::High));
    assert_eq!(l.state(Track(104)).map(|f| f.part), Some(Part::Low));
}

#[test]
fn hot_bottom_writes_become_direct_top_writes_after_a_flip() {
    // One bottom track rewritten 200 times, 100 ms apart (idle in between), cache off:
    // after the first interval of 20 writes it is flipped and later writes go straight to the top track.
    let recs: Vec<_> = (0..200)
        .map(|i| w(i * 100, 1024 + (i % 64) * 8, 8))
        .collect();
    let run = |layer: &str, params: &[(&str, &str)]| {
        let mut c = run_cfg(paper_drive("average", 1.0), layer, params);
        c.verify = true;
        simulate(c, recs.clone()).report()
    };
    let flip = run(
        "imr-flip",
        &[
            ("interval_writes", "20"),
            ("flip_threshold", "5"),
            ("skip_empty", "false"),
        ],
    );
    let rmw = run("imr-rmw", &[("skip_empty", "false")]);
    let (f, r) = (&flip.layer_counters, &rmw.layer_counters);
    println!("imr-flip {f:?}\nimr-rmw {r:?}");
    assert_eq!(f["flips"], 1.0);
    assert_eq!(f["flips_idle"], 1.0);
    assert_eq!(r["rmws"], 200.0);
    assert_eq!(
        f["rmws"], 20.0,
        "only the first interval's writes needed RMW"
    );
    assert_eq!(f["top_writes"], 180.0);
    assert!(flip.latency["write"].mean_ms < rmw.latency["write"].mean_ms);
}

#[test]
fn a_host_that_is_never_idle_gets_its_flips_at_the_next_boundary() {
    // Flat-out replay leaves no idle time: the flips decided at a boundary are done at the next one.
    let recs: Vec<_> = (0..100).map(|i| w(i, 1024 + (i % 64) * 8, 8)).collect();
    let mut c = run_cfg(
        paper_drive("average", 1.0),
        "imr-flip",
        &[("interval_writes", "20"), ("flip_threshold", "5")],
    );
    c.replay.mode = Mode::FlatOut;
    c.verify = true;
    let r = simulate(c, recs).report();
    let f = &r.layer_counters;
    assert_eq!(f["flips_idle"], 0.0, "{f:?}");
    assert_eq!(f["flips_foreground"], 1.0, "{f:?}");
    assert_eq!(f["flip_intervals"], 5.0);
    // Writes 1-40 were RMWs (flip decided at 20, done at 40), the remaining 60 went to the top.
    assert_eq!(f["top_writes"], 60.0, "{f:?}");
}

#[test]
fn flips_happen_on_a_real_trace() {
    let mut out = vec![];
    for (ratio, order, cache) in [(1.0, "zigzag", true), (0.9, "serpentine", false)] {
        let params = [("interval_writes", "500"), ("flip_threshold", "10")];
        let mut c = run_cfg(rsrch_drive(ratio, order), "imr-flip", &params);
        c.trace = rsrch_head(u64::MAX);
        c.replay.write_cache = Some(cache);
        c.verify = true;
        let mut s = Simulation::new(c).unwrap();
        s.run().unwrap_or_else(|e| panic!("{e}"));
        let r = s.report();
        let f = &r.layer_counters;
        println!("rsrch_1 top {ratio} {order} cache {cache}: {f:?}");
        assert!(f["flips"] > 0.0 && f["flips_idle"] > 0.0, "{f:?}");
        assert!(f["map_log_writes"] > 0.0);
        assert!(r.verification.scan_blocks_checked > 0);
        out.push(r);
    }
}

#[test]
fn two_thousand_crash_points_lose_no_acknowledged_write() {
    // rsrch_1's first 1000 requests, a decision every 2 writes and no threshold: flips and
    // flip-backs run all along (in idle time and at boundaries), so a crash at each of the
    // first 2000 physical operations lands inside a flip about a quarter of the time.
    let params = [
        ("interval_writes", "2"),
        ("flip_threshold", "0"),
        ("skip_empty", "false"),
    ];
    let (by_cause, totals) = crash_sweep("imr-flip", &params, 1000, 0..2000);
    let total: u64 = by_cause.values().sum();
    let get = |c: &str| by_cause.get(c).copied().unwrap_or(0);
    // Flip-cause ops are a flip's reads and writes; metadata ops are its commit records (and
    // checkpoints); backup ops are shared with RMW.
    let inside = get("flip") + get("metadata");
    println!("imr-flip crash points covered: {total} ({by_cause:?}); inside flips (flip + metadata): {inside}");
    assert!(total >= 1000, "{by_cause:?}");
    assert!(get("flip") >= 400, "crashes inside flips: {by_cause:?}");
    assert!(inside >= 450, "{by_cause:?}");
    // Flips run in stages: the crashes inside them fell between two stages or inside one.
    println!("crashes inside stages: {}", totals["crashes_in_stages"]);
    assert!(totals["crashes_in_stages"] >= 400.0, "{totals:?}");
}

#[test]
fn the_papers_defaults_flip_on_a_cloudphysics_trace() {
    // Table 2's configuration (20K-write intervals, threshold 50, 50 flips) on the paper's drive
    // model (2 MiB tracks, 100 MB cache), on the CloudPhysics sample trace (114K requests):
    // flips happen in idle time and save read-modify-writes against imr-rmw.
    for cache in [true, false] {
        let run = |layer: &str| {
            let mut d = paper_drive("average", 1.0);
            d.tracks = None;
            d.capacity_gib = Some(1024.0);
            d.write_cache_mib = 100.0;
            d.layout.group_tracks = 8;
            let mut c = run_cfg(d, layer, &[]);
            c.trace = TraceSpec {
                path: format!(
                    "{}/../../tests/data/cloudPhysicsIO.vscsi",
                    env!("CARGO_MANIFEST_DIR")
                ),
                ..Default::default()
            };
            c.replay.write_cache = Some(cache);
            c.verify = true;
            let mut s = Simulation::new(c).unwrap();
            s.run().unwrap_or_else(|e| panic!("{e}"));
            s.report()
        };
        let (f, r) = (run("imr-flip"), run("imr-rmw"));
        let (fc, rc) = (&f.layer_counters, &r.layer_counters);
        println!(
            "cloudPhysicsIO, defaults, cache {cache}: imr-flip {fc:?}; imr-rmw rmws {}",
            rc["rmws"]
        );
        assert!(
            fc["flip_intervals"] >= 1.0 && fc["flips"] >= 30.0 && fc["flips_idle"] >= 30.0,
            "{fc:?}"
        );
        assert!(fc["rmws"] < rc["rmws"], "{} vs {}", fc["rmws"], rc["rmws"]);
    }
}
