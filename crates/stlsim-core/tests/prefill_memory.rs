//! A prefilled drive costs memory per track, not per sector: a 20 TB drive
//! prefilled to 100 % must add well under 100 MB. Measured with a counting
//! global allocator (this test is its own process, so nothing else allocates).

mod common;

use stlsim_core::drive::DriveConfig;
use stlsim_core::engine::{LayerConfig, ReplayConfig, RunConfig};
use stlsim_core::geometry::LayoutConfig;
use stlsim_core::medium::prefill::PrefillSpec;
use stlsim_core::trace::{Op, TraceRecord, VecTrace};
use stlsim_core::units::{Bytes, Nanos};
use stlsim_core::Simulation;

/// Peak bytes allocated while setting up and running a few requests on a
/// 20 TB IMR drive (1.5 MiB tracks) prefilled to `fraction`.
fn peak(fraction: f64, verify: bool) -> usize {
    let drive = DriveConfig {
        name: "20tb".into(),
        sector_bytes: 4096,
        track_bytes: 1536 * 1024,
        capacity_gib: Some(20e12 / (1u64 << 30) as f64),
        layout: LayoutConfig {
            kind: stlsim_core::geometry::LayoutKind::Imr,
            group_tracks: 8,
            ..Default::default()
        },
        ..Default::default()
    };
    let cfg = RunConfig {
        drive,
        layer: LayerConfig {
            name: "imr-rmw".into(),
            ..Default::default()
        },
        replay: ReplayConfig {
            prefill: Some(PrefillSpec::Fraction(fraction)),
            ..Default::default()
        },
        verify,
        ..Default::default()
    };
    let recs: Vec<TraceRecord> = (0..100u64)
        .map(|i| TraceRecord {
            time: Nanos(i * 1_000_000),
            op: if i % 2 == 0 { Op::Write } else { Op::Read },
            offset: Bytes((i * 7_919 % 18_000) * (1 << 30)),
            len: Bytes(64 * 1024),
            line: i + 1,
        })
        .collect();
    common::peak_during(|| {
        let mut s = Simulation::with_reader(cfg, Box::new(VecTrace::new(recs))).unwrap();
        s.run().unwrap();
        let r = s.report();
        assert_eq!(r.prefill.tracks > 0, fraction > 0.0);
    })
    .0
}

#[test]
fn a_full_20_tb_drive_adds_well_under_100_mb() {
    for verify in [false, true] {
        let empty = peak(0.0, verify);
        let full = peak(1.0, verify);
        let added = full.saturating_sub(empty);
        println!(
            "verify {verify}: empty drive peak {} MB, full drive peak {} MB, added {} MB",
            empty >> 20,
            full >> 20,
            added >> 20
        );
        assert!(added < 100 << 20, "prefill added {added} bytes");
        // Per track: a bit for the prefill (twice with verification: the oracle keeps its own copy),
        // plus the rows of the tracks the run touched.
        assert!(added < 16 << 20, "prefill added {added} bytes");
    }
}
