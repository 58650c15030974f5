//! Replay the bundled CloudPhysics sample (read into memory first) through
//! one layer on the imr-paper drive, queue mode, metrics on, verification
//! off: the engine benchmark's workload as a single run, for instruction
//! counts under `valgrind --tool=callgrind` (deterministic, unlike wall time).
//! It prints the replay's own rate too (the records read into memory first,
//! so the engine alone is timed): alternate two builds' binaries to compare.
//!
//!     cargo build --release --example replay_sample
//!     valgrind --tool=callgrind target/release/examples/replay_sample imr-dtm on count_at=destage
//!
//! `STLSIM_VERIFY=1` turns verification on; `STLSIM_UNIFORM=N` replays N
//! synthetic requests instead (16 KiB, three in four writes, uniformly
//! random over 80 GiB), `STLSIM_TRACE=FILE` replays that file (its first
//! `STLSIM_LIMIT` requests), and `STLSIM_PREFILL=F` starts the drive F full
//! (the `imr-paper` preset's own default is 1). `STLSIM_STREAM=thread`
//! replays the trace as it is read, parsed on a second thread as `stlsim
//! run` does (`STLSIM_STREAM=inline`: on the engine's thread), so that the
//! rate includes reading the trace. `STLSIM_CONFIG=FILE` runs the JSON
//! configuration `stlsim run` would hand the core (the other settings are
//! then ignored).

use stlsim_core::engine::{LayerConfig, ReplayConfig, RunConfig};
use stlsim_core::medium::prefill::PrefillSpec;
use stlsim_core::trace::parse_thread::ParseThread;
use stlsim_core::trace::{open_trace, SynthKind, SynthSpec, TraceReader, TraceSpec, VecTrace};
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
    let verify = std::env::var("STLSIM_VERIFY").as_deref() == Ok("1");
    let uniform: Option<u64> = std::env::var("STLSIM_UNIFORM")
        .ok()
        .and_then(|v| v.parse().ok());
    let mut spec = TraceSpec {
        path: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/cloudPhysicsIO.vscsi"
        )
        .into(),
        ..Default::default()
    };
    if let Ok(path) = std::env::var("STLSIM_TRACE") {
        spec.path = path;
    }
    spec.limit = std::env::var("STLSIM_LIMIT")
        .ok()
        .and_then(|v| v.parse().ok());
    let prefill = std::env::var("STLSIM_PREFILL")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(PrefillSpec::Fraction);
    if let Some(n) = uniform {
        let mut u = SynthSpec::new(SynthKind::Uniform);
        u.request_bytes = 16 << 10;
        u.count = Some(n);
        u.span_bytes = Some(80 << 30);
        u.write_fraction = Some(0.75);
        spec.synth = Some(u);
    }
    let stream = std::env::var("STLSIM_STREAM")
        .ok()
        .filter(|s| !s.is_empty());
    let reader: Box<dyn TraceReader> = match stream.as_deref() {
        Some("thread") => Box::new(ParseThread::new(open_trace(&spec).unwrap()).unwrap()),
        Some("inline") => open_trace(&spec).unwrap(),
        Some(other) => panic!("STLSIM_STREAM is 'thread' or 'inline', not '{other}'"),
        None => {
            let mut r = open_trace(&spec).unwrap();
            let mut recs = vec![];
            while let Some(x) = r.next_record().unwrap() {
                recs.push(x);
            }
            Box::new(VecTrace::new(recs))
        }
    };
    let cfg = RunConfig {
        drive: drives::imr_paper(),
        layer: LayerConfig {
            name: layer.into(),
            params,
        },
        replay: ReplayConfig {
            write_cache: Some(cache),
            prefill,
            ..Default::default()
        },
        verify,
        ..Default::default()
    };
    // A whole run's configuration as `stlsim run` hands it to the core.
    let mut s = match std::env::var("STLSIM_CONFIG") {
        Ok(path) => {
            let text = std::fs::read_to_string(path).unwrap();
            Simulation::new(serde_json::from_str(&text).unwrap()).unwrap()
        }
        Err(_) => Simulation::with_reader(cfg, reader).unwrap(),
    };
    let t = std::time::Instant::now();
    s.run().unwrap();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{layer} cache {cache}: {} requests, WAF {:.3}, replayed in {secs:.3} s ({:.2} M requests/s)",
        s.requests_done(),
        s.report().waf,
        s.requests_done() as f64 / secs / 1e6
    );
    if let Some(m) = s.verification_memory() {
        println!(
            "verification state {} bytes, {} sectors written, {:.2} bytes/sector",
            m.state_bytes,
            m.written_sectors,
            m.state_bytes as f64 / m.written_sectors as f64
        );
    }
}
