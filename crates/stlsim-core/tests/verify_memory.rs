//! Verification's memory stays under [`BOUND`] bytes per written sector
//! (issue 14): the oracle's versions and the medium's contents are
//! run-length encoded, so a run pays for stretches written, not sectors.
//!
//! CMR and every IMR layer replay, with verification on, on the `imr-paper`
//! drive (4 KiB sectors), a synthetic sequential trace and a uniformly
//! random one (see [`traces`]); the figure is
//! [`Simulation::verification_memory`]: heap bytes of the oracle and of the
//! medium's tracked contents over the host sectors written at least once.
//!
//! `cargo test --release -p stlsim-core --test verify_memory -- --nocapture`
//! prints each case's figure.

use stlsim_core::engine::{LayerConfig, RunConfig};
use stlsim_core::layers::REGISTRY;
use stlsim_core::trace::{SynthKind, SynthSpec, TraceSpec};
use stlsim_core::Simulation;

#[path = "common/drives.rs"]
mod drives;
use drives::imr_paper;

/// Bytes of verification state allowed per written sector, on average.
const BOUND: f64 = 16.0;

const MIB: u64 = 1 << 20;

/// The workloads: 512 MiB written sequentially in 64 KiB requests, 256 MiB
/// in 4 KiB requests (a sector each: only because a sequential stream's
/// writes share a version do they make one run, not one a sector), and
/// 40,000 requests of 16 KiB (three in four writes) at aligned uniformly
/// random offsets in a 256 MiB span, which leave most of the span written
/// once or twice and a few blocks more often, in stretches of every length.
fn traces() -> Vec<(&'static str, SynthSpec)> {
    let mut seq = SynthSpec::new(SynthKind::Sequential);
    seq.request_bytes = 64 << 10;
    seq.total_bytes = Some(512 * MIB);
    seq.start_bytes = 3 * 1024 * MIB;
    let mut small = SynthSpec::new(SynthKind::Sequential);
    small.request_bytes = 4 << 10;
    small.total_bytes = Some(256 * MIB);
    small.start_bytes = 5 * 1024 * MIB;
    let mut uni = SynthSpec::new(SynthKind::Uniform);
    uni.request_bytes = 16 << 10;
    uni.count = Some(40_000);
    uni.span_bytes = Some(256 * MIB);
    uni.start_bytes = 7 * 1024 * MIB;
    uni.write_fraction = Some(0.75);
    uni.seed = 3;
    vec![
        ("sequential", seq),
        ("sequential-4k", small),
        ("uniform", uni),
    ]
}

fn bytes_per_sector(layer: &str, synth: &SynthSpec) -> (f64, u64) {
    let cfg = RunConfig {
        trace: TraceSpec {
            synth: Some(synth.clone()),
            ..Default::default()
        },
        drive: imr_paper(),
        layer: LayerConfig {
            name: layer.into(),
            ..Default::default()
        },
        verify: true,
        ..Default::default()
    };
    let mut s = Simulation::new(cfg).unwrap();
    s.run().unwrap();
    let m = s.verification_memory().expect("verification is on");
    (m.per_written_sector(), m.written_sectors)
}

#[test]
fn verification_state_per_written_sector_stays_under_the_bound() {
    let layers: Vec<&str> = REGISTRY
        .iter()
        .map(|e| e.name)
        .filter(|n| *n == "cmr" || n.starts_with("imr"))
        .collect();
    assert!(layers.len() >= 5, "cmr and the four IMR layers: {layers:?}");
    let mut over = vec![];
    for (trace, synth) in traces() {
        for layer in &layers {
            let (b, written) = bytes_per_sector(layer, &synth);
            println!("{layer:10} {trace:10} {b:6.2} bytes per written sector ({written} sectors)");
            assert!(
                written > 50_000,
                "{layer} {trace}: the trace wrote {written} sectors"
            );
            if b > BOUND {
                over.push(format!("{layer} on {trace}: {b:.2}"));
            }
        }
    }
    assert!(
        over.is_empty(),
        "over {BOUND} bytes per written sector: {over:?}"
    );
}
