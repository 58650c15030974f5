//! Replay the bundled CloudPhysics sample (read into memory first) through
//! one layer on the imr-paper drive, queue mode, metrics on, verification
//! off: the engine benchmark's workload as a single run, for instruction
//! counts under `valgrind --tool=callgrind` (deterministic, unlike wall time).
//!
//!     cargo build --release --example replay_sample
//!     valgrind --tool=callgrind target/release/examples/replay_sample imr-dtm on count_at=destage

use stlsim_core::engine::{LayerConfig, ReplayConfig, RunConfig};
use stlsim_core::trace::{open_trace, TraceSpec, VecTrace};
use stlsim_core::Simulation;

#[path = "../tests/common/drives.rs"]
mod drives;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let layer = args.get(1).map(String::as_str).unwrap_or("cmr");
    let cache = args.get(2).map(String::as_str) != Some("off");
    // Layer parameters as NAME=VALUE (numbers stay numbers).
    let params = args
        .iter()
        .skip(3)
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| {
            let val = v
                .parse::<i64>()
                .map(serde_json::Value::from)
                .unwrap_or_else(|_| serde_json::Value::from(v));
            (k.to_string(), val)
        })
        .collect();
    let spec = TraceSpec {
        path: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/cloudPhysicsIO.vscsi"
        )
        .into(),
        ..Default::default()
    };
    let mut r = open_trace(&spec).unwrap();
    let mut recs = vec![];
    while let Some(x) = r.next_record().unwrap() {
        recs.push(x);
    }
    let cfg = RunConfig {
        drive: drives::imr_paper(),
        layer: LayerConfig {
            name: layer.into(),
            params,
        },
        replay: ReplayConfig {
            write_cache: Some(cache),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut s = Simulation::with_reader(cfg, Box::new(VecTrace::new(recs))).unwrap();
    s.run().unwrap();
    println!(
        "{layer} cache {cache}: {} requests, WAF {:.3}",
        s.requests_done(),
        s.report().waf
    );
}
