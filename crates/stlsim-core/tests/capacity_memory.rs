//! Memory does not grow with the drive's capacity: a run of a few thousand
//! requests on a 200,000 GiB drive (100 million tracks) costs about what it
//! costs on a 1 GiB one, for every kind of layout, empty or full, verified
//! or not (it took 2 GB: the home map held 20 bytes a track). Measured with
//! a counting global allocator (this test is its own process).
//!
//! The IMR layers' default backup region is a slot every 4,096 tracks, so
//! what it costs does grow with capacity (24,000 slots on the huge drive):
//! the main cases run them with one region (`backup_location = middle`),
//! and a case of its own bounds the spread slots' cost per slot.

mod common;

use stlsim_core::drive::DriveConfig;
use stlsim_core::engine::{LayerConfig, ReplayConfig, RunConfig};
use stlsim_core::geometry::LayoutConfig;
use stlsim_core::medium::prefill::PrefillSpec;
use stlsim_core::trace::{Op, TraceRecord, VecTrace};
use stlsim_core::units::{Bytes, Nanos};
use stlsim_core::Simulation;

/// Peak bytes allocated setting up and running 3,000 requests (spread over
/// the first GiB) on a drive of `gib` GiB of 2 MiB tracks.
fn peak(kind: &str, layer: &str, gib: f64, prefill: f64, verify: bool) -> usize {
    peak_with(kind, layer, "middle", gib, prefill, verify)
}

fn peak_with(kind: &str, layer: &str, backup: &str, gib: f64, prefill: f64, verify: bool) -> usize {
    let layout = LayoutConfig {
        kind: <stlsim_core::geometry::LayoutKind as stlsim_core::choice::Choice>::parse(kind)
            .unwrap(),
        group_tracks: 8,
        ..Default::default()
    };
    let drive = DriveConfig {
        name: "big".into(),
        sector_bytes: 4096,
        track_bytes: 2 << 20,
        capacity_gib: Some(gib),
        write_cache_mib: 16.0,
        layout,
        ..Default::default()
    };
    let cfg = RunConfig {
        drive,
        layer: LayerConfig {
            name: layer.into(),
            params: if layer.starts_with("imr-") {
                [(
                    "backup_location".to_string(),
                    serde_json::Value::from(backup),
                )]
                .into()
            } else {
                Default::default()
            },
        },
        replay: ReplayConfig {
            prefill: Some(PrefillSpec::Fraction(prefill)),
            fold: true,
            ..Default::default()
        },
        verify,
        ..Default::default()
    };
    let recs: Vec<TraceRecord> = (0..3000u64)
        .map(|i| TraceRecord {
            time: Nanos(i * 1_000_000),
            op: if i % 3 == 0 { Op::Read } else { Op::Write },
            offset: Bytes((i * 7_919 % 262_144) * 4096),
            len: Bytes(16 * 1024),
            line: i + 1,
        })
        .collect();
    common::peak_during(|| {
        let mut s = Simulation::with_reader(cfg, Box::new(VecTrace::new(recs))).unwrap();
        s.run().unwrap();
        assert_eq!(s.requests_done(), 3000);
    })
    .0
}

#[test]
fn a_200000_gib_drive_costs_what_a_1_gib_drive_costs() {
    let cases = [
        ("imr-rmw", 0.0, false),
        ("imr-rmw", 1.0, true),
        ("cmr", 1.0, false),
        ("imr-flip", 1.0, true),
    ];
    for (layer, prefill, verify) in cases {
        let kind = "imr";
        {
            let small = peak(kind, layer, 1.0, prefill, verify);
            let huge = peak(kind, layer, 200_000.0, prefill, verify);
            println!(
                "{layer} prefill {prefill} verify {verify}: 1 GiB peak {:.1} MB, 200,000 GiB peak {:.1} MB",
                small as f64 / 1e6,
                huge as f64 / 1e6
            );
            // The huge drive's 100 million tracks cost a few MB of leaf
            // slots at most (bitmaps of prefilled and touched tracks).
            assert!(
                huge < small + (8 << 20),
                "{layer} {prefill} {verify}: {huge} bytes vs {small}"
            );
        }
    }
}

#[test]
fn spread_backup_slots_cost_a_few_hundred_bytes_each() {
    // 100 million tracks / 4,096 = 24,414 slots; a full drive, verified.
    let small = peak_with("imr", "imr-rmw", "spread", 1.0, 1.0, true);
    let huge = peak_with("imr", "imr-rmw", "spread", 200_000.0, 1.0, true);
    let slots = 100_000_000 / 4096;
    let per_slot = (huge - small) / slots;
    println!("spread backup: {per_slot} bytes a slot ({small} -> {huge} bytes)");
    assert!(per_slot < 1024, "{per_slot} bytes a slot");
}
