//! Memory does not grow with the trace's length: every registered layer,
//! on its paper's drive, replaying 100,000 and then 400,000 random
//! requests over the same 64 MiB (both runs write every block of it, so
//! whatever a layer keeps per block it keeps as much of in both), peaks
//! within 1.5x (and 1 MiB) of the shorter run. A structure that keeps
//! something per request (a history, a list that only grows, dead entries
//! never swept) fails it. What the drive holds is bounded by the drive:
//! the E-region's log keeps a record on the media for every extent
//! appended until the log wraps (a 24 GB log outlasts both runs, and its
//! records then grew 3.4x), so its drive here has a 128 MiB log, which
//! both runs wrap. Measured with a counting global allocator (this
//! test is its own process). Issue 34, item 2; `benches/layer_costs.py`
//! measures the same of whole runs at 1 M, 10 M and 50 M requests.

mod common;
#[path = "common/drives.rs"]
mod drives;

use stlsim_core::drive::DriveConfig;
use stlsim_core::engine::{LayerConfig, Mode, ReplayConfig, RunConfig};
use stlsim_core::layers::REGISTRY;
use stlsim_core::trace::{SynthReader, SynthSpec};
use stlsim_core::Simulation;

/// The drive `layer` runs on in its paper; the E-region's with a log both
/// runs wrap (above).
fn drive_for(layer: &str) -> DriveConfig {
    let mut d = drives::for_layer(layer);
    if layer.starts_with("smr-") {
        d.layout.cache_mib = Some(128.0);
    }
    d
}

/// Peak bytes allocated setting up and running `count` uniform random 4 KiB
/// requests (70 % writes) over 64 MiB, flat out.
fn peak(layer: &str, drive: &DriveConfig, count: u64) -> usize {
    let cfg = RunConfig {
        drive: drive.clone(),
        layer: LayerConfig {
            name: layer.into(),
            ..Default::default()
        },
        replay: ReplayConfig {
            mode: Mode::FlatOut,
            ..Default::default()
        },
        ..Default::default()
    };
    let spec = SynthSpec {
        seed: 7,
        write_fraction: Some(0.7),
        ..SynthSpec::uniform(count, 64 << 20)
    };
    common::peak_during(|| {
        let reader = SynthReader::new(&spec).unwrap();
        let mut s = Simulation::with_reader(cfg, Box::new(reader)).unwrap();
        s.run().unwrap();
        assert_eq!(s.requests_done(), count, "{layer}");
    })
    .0
}

#[test]
fn no_layer_s_memory_grows_with_the_trace_s_length() {
    let mut over = vec![];
    for entry in REGISTRY {
        let drive = drive_for(entry.name);
        let short = peak(entry.name, &drive, 100_000);
        let long = peak(entry.name, &drive, 400_000);
        println!(
            "{:<14} {:<11} 100,000 requests {:7.2} MB, 400,000 {:7.2} MB ({:.2}x)",
            entry.name,
            drive.name,
            short as f64 / 1e6,
            long as f64 / 1e6,
            long as f64 / short as f64
        );
        if long as f64 > 1.5 * short as f64 + (1 << 20) as f64 {
            over.push(format!("{}: {short} -> {long} bytes", entry.name));
        }
    }
    assert!(over.is_empty(), "memory grew with the trace: {over:?}");
}
