//! Extreme values in every numeric drive key and every layer parameter:
//! each run must end in a one-line error or a sane short run, never a panic
//! (an overflow, a division by zero, a slice out of range). The sweeps try
//! every key with every extreme; the property tests combine several.

use super::tests::{drive_for_layer_sized, timed};
use super::*;
use crate::drive::DriveConfig;
use crate::layers::{LayerEntry, ParamKind, REGISTRY};
use crate::trace::TraceRecord;
use crate::trace::{TraceSpec, VecTrace};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Integer extremes, including ones only JSON can carry (2^64 arrives as a float).
fn int_extremes() -> Vec<Value> {
    vec![
        Value::from(0u64),
        Value::from(1u64),
        Value::from(2u64),
        Value::from(3u64),
        Value::from(u32::MAX as u64),
        Value::from(1u64 << 32),
        Value::from(1u64 << 63),
        Value::from(u64::MAX - 2),
        Value::from(u64::MAX),
        Value::from(18446744073709551616.0f64),
        Value::from(1e300),
        Value::from(-1i64),
        Value::from("18446744073709551616"),
    ]
}

/// Real extremes; NaN and the infinities arrive as text (JSON has no literal for them).
fn float_extremes() -> Vec<Value> {
    vec![
        Value::from(0.0),
        Value::from(1.0),
        Value::from(-1.0),
        Value::from(1e-300),
        Value::from(f64::MIN_POSITIVE),
        Value::from(1e17),
        Value::from(1e300),
        Value::from(f64::MAX),
        Value::from("nan"),
        Value::from("inf"),
        Value::from("-inf"),
    ]
}

fn extremes(kind: ParamKind) -> Vec<Value> {
    match kind {
        ParamKind::Int => int_extremes(),
        ParamKind::Float => float_extremes(),
        ParamKind::Bool => vec![Value::from(true), Value::from(false), Value::from("maybe")],
        ParamKind::Choice(opts) => opts
            .iter()
            .map(|&o| Value::from(o))
            .chain([Value::from("")])
            .collect(),
        ParamKind::Text => vec![
            Value::from(""),
            Value::from("R(99999999999999999999)"),
            Value::from("1,,2"),
        ],
    }
}

/// A short trace touching the start, the middle and the end of a few GiB.
fn short_trace() -> Vec<TraceRecord> {
    let mut seq = vec![];
    for i in 0..24u64 {
        seq.push((i % 3 != 2, (i * 7919 * 64) % 500_000, 1 + i % 40, 300));
    }
    timed(&seq)
}

/// What a run ended in, or the panic's message.
fn outcome(c: RunConfig) -> Result<SimResult<u64>, String> {
    catch_unwind(AssertUnwindSafe(|| {
        let mut s = Simulation::with_reader(c, Box::new(VecTrace::new(short_trace())))?;
        s.run()?;
        Ok(s.requests_done())
    }))
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// `None` when the run ended sanely; else what went wrong. Counts the runs
/// that replayed the whole trace in `ran`.
fn judge_counting(c: RunConfig, ran: &mut u64) -> Option<String> {
    let o = outcome(c);
    if matches!(o, Ok(Ok(n)) if n == short_trace().len() as u64) {
        *ran += 1;
    }
    judge_outcome(o)
}

fn judge(c: RunConfig) -> Option<String> {
    judge_outcome(outcome(c))
}

fn judge_outcome(o: Result<SimResult<u64>, String>) -> Option<String> {
    match o {
        Err(panic) => Some(format!("panicked: {panic}")),
        Ok(Err(e)) if e.to_string().contains('\n') || e.to_string().is_empty() => {
            Some(format!("error is not one line: {e:?}"))
        }
        // A small drive may not hold the trace: a one-line trace error is sane too.
        Ok(Err(SimError::Config(_) | SimError::TraceFormat { .. })) => None,
        Ok(Err(e)) => Some(format!("not a configuration error: {e}")),
        Ok(Ok(_)) => None,
    }
}

fn run_cfg(e: &LayerEntry, drive: DriveConfig) -> RunConfig {
    let mut c = super::tests::cfg(drive, e.name);
    c.trace = TraceSpec {
        path: "memory".into(),
        ..Default::default()
    };
    c.verify = true;
    c
}

#[test]
fn every_layer_parameter_at_every_extreme_is_an_error_or_a_sane_run() {
    let (mut bad, mut ran, mut cases) = (vec![], 0, 0);
    for e in REGISTRY {
        for spec in e.params {
            for v in extremes(spec.kind) {
                let mut c = run_cfg(e, drive_for_layer_sized(e, 8.0));
                c.layer.params.insert(spec.name.into(), v.clone());
                if std::env::var_os("STLSIM_TRACE_CASES").is_some() {
                    eprintln!("case {} {}={v}", e.name, spec.name);
                }
                cases += 1;
                if let Some(why) = judge_counting(c, &mut ran) {
                    bad.push(format!("{} {}={v}: {why}", e.name, spec.name));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} cases went wrong:\n{}",
        bad.len(),
        bad.join("\n")
    );
    // The sweep must exercise runs, not only refusals (the defaults and the
    // small values run; most extremes are refused).
    assert!(
        ran * 5 > cases,
        "only {ran} of {cases} cases replayed the trace"
    );
}

/// Every numeric key of a drive description, as the JSON path Python hands over.
const DRIVE_KEYS: &[(&str, bool)] = &[
    // (path, integer?)
    ("/sector_bytes", true),
    ("/rpm", false),
    ("/track_bytes", true),
    ("/tracks", true),
    ("/capacity_gib", false),
    ("/write_cache_mib", false),
    ("/interface_mb_s", false),
    ("/seek/min_ms", false),
    ("/seek/max_ms", false),
    ("/layout/band_tracks", true),
    ("/layout/head_width_tracks", true),
    ("/layout/random_access_tracks", true),
    ("/layout/cache_tracks", true),
    ("/layout/cache_mib", false),
    ("/layout/top_ratio", false),
    ("/layout/group_tracks", true),
    ("/layout/zone_tracks", true),
    ("/layout/conventional_zones", true),
    ("/layout/max_open_zones", true),
    ("/layout/region_tracks", true),
    ("/layout/kappa_tracks", true),
    ("/prefill", false),
    ("/memory/mib", false),
    ("/memory/read_latency_us", false),
    ("/memory/write_latency_us", false),
    ("/memory/read_mb_s", false),
    ("/memory/write_mb_s", false),
    ("/ssd/mib", false),
    ("/ssd/read_mb_s", false),
    ("/ssd/write_latency_us", false),
    ("/surfaces", true),
    ("/head_switch_ms", false),
    ("/write_settle_ms", false),
    ("/spare_range_cylinders", true),
    ("/zones/0/track_skew_sectors", true),
    ("/zones/0/cylinder_skew_sectors", true),
    ("/zones/0/first_block_offset_sectors", true),
    ("/zones/0/front_empty_sectors", true),
    ("/zones/0/spare_tracks", true),
    ("/zones/0/spare_sectors_per_track", true),
    ("/zones/0/spare_sectors_per_cylinder", true),
    ("/zones/0/spare_sectors_per_range", true),
    ("/zones/0/spare_sectors_per_zone", true),
    ("/zones/0/gap_cylinders", true),
];

/// A drive with `path` set to `v`, or `None` when serde refuses the value
/// (a type error: the binding reports it as a configuration error naming the key).
fn drive_with(base: &DriveConfig, path: &str, v: &Value) -> Option<DriveConfig> {
    let mut j = serde_json::to_value(base).expect("drive serialises");
    if path.starts_with("/seek/table") {
        j["seek"]["model"] = Value::from("table");
    }
    // Zone keys need a zone table: the uniform track size as one zone.
    if path.starts_with("/zones/0/") && base.zones.is_empty() {
        let spt = base.track_bytes / base.sector_bytes.max(1) as u64;
        j["zones"] = serde_json::json!([{"first_track": 0, "sectors_per_track": spt}]);
    }
    let slot = j.pointer_mut(path)?;
    // JSON has no NaN: a placeholder goes through serde, then the real value
    // is set on the struct (a Rust caller can build such a drive directly).
    let nan = v.as_str() == Some("nan");
    *slot = match v.as_str() {
        Some("nan") => Value::from(1.0),
        Some(s) => s
            .parse::<f64>()
            .map(Value::from)
            .unwrap_or_else(|_| v.clone()),
        None => v.clone(),
    };
    if path == "/capacity_gib" {
        j["tracks"] = Value::Null;
    }
    let mut d: DriveConfig = serde_json::from_value(j).ok()?;
    if nan {
        let f = f64::NAN;
        match path {
            "/rpm" => d.rpm = f,
            "/capacity_gib" => d.capacity_gib = Some(f),
            "/write_cache_mib" => d.write_cache_mib = f,
            "/interface_mb_s" => d.interface_mb_s = f,
            "/seek/min_ms" => d.seek.min_ms = f,
            "/seek/max_ms" => d.seek.max_ms = f,
            "/head_switch_ms" => d.head_switch_ms = f,
            "/write_settle_ms" => d.write_settle_ms = f,
            "/layout/cache_mib" => d.layout.cache_mib = Some(f),
            "/layout/top_ratio" => d.layout.top_ratio = f,
            "/memory/mib" => d.memory.as_mut()?.mib = f,
            "/memory/read_latency_us" => d.memory.as_mut()?.read_latency_us = f,
            "/memory/write_latency_us" => d.memory.as_mut()?.write_latency_us = f,
            "/memory/read_mb_s" => d.memory.as_mut()?.read_mb_s = f,
            "/memory/write_mb_s" => d.memory.as_mut()?.write_mb_s = f,
            "/ssd/mib" => d.ssd.as_mut()?.mib = f,
            "/ssd/read_mb_s" => d.ssd.as_mut()?.read_mb_s = f,
            "/ssd/write_latency_us" => d.ssd.as_mut()?.write_latency_us = f,
            "/prefill" => d.prefill = Some(crate::medium::prefill::PrefillSpec::Fraction(f)),
            _ => return None,
        }
    }
    Some(d)
}

#[test]
fn every_numeric_drive_key_at_every_extreme_is_an_error_or_a_sane_run() {
    let (mut bad, mut ran, mut cases) = (vec![], 0, 0);
    let layers = [
        "cmr",
        "imr-rmw",
        "smr-eregion",
        "hm-fluid",
        "hwsr",
        "swd-1234",
    ];
    for name in layers {
        let e = crate::layers::find(name).unwrap();
        let base = drive_for_layer_sized(e, 8.0);
        for &(path, int) in DRIVE_KEYS {
            let values = if int {
                int_extremes()
            } else {
                float_extremes()
            };
            for v in values {
                let Some(d) = drive_with(&base, path, &v) else {
                    continue;
                };
                cases += 1;
                if let Some(why) = judge_counting(run_cfg(e, d), &mut ran) {
                    bad.push(format!("{name} {path}={v}: {why}"));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} cases went wrong:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(
        ran * 10 > cases,
        "only {ran} of {cases} cases replayed the trace"
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn any_extreme() -> impl Strategy<Value = (bool, usize)> {
        (any::<bool>(), 0usize..13)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Several parameters of one layer at extremes at once.
        #[test]
        fn layer_parameters_combined(layer in 0usize..REGISTRY.len(), picks in proptest::collection::vec((0usize..16, 0usize..16), 1..5)) {
            let e = REGISTRY[layer];
            let mut c = run_cfg(e, drive_for_layer_sized(e, 8.0));
            for (p, x) in picks {
                if e.params.is_empty() {
                    break;
                }
                let spec = &e.params[p % e.params.len()];
                let vals = extremes(spec.kind);
                c.layer.params.insert(spec.name.into(), vals[x % vals.len()].clone());
            }
            let why = judge(c.clone());
            prop_assert!(why.is_none(), "{} {:?}: {}", e.name, c.layer.params, why.unwrap_or_default());
        }

        /// Several drive keys at extremes at once, on each kind of layout.
        #[test]
        fn drive_keys_combined(layer in 0usize..6, picks in proptest::collection::vec((0usize..DRIVE_KEYS.len(), any_extreme()), 1..5)) {
            let name = ["cmr", "imr-rmw", "smr-eregion", "hm-fluid", "hwsr", "swd-1234"][layer];
            let e = crate::layers::find(name).unwrap();
            let mut d = drive_for_layer_sized(e, 8.0);
            let mut set = vec![];
            for (k, (_, x)) in picks {
                let (path, int) = DRIVE_KEYS[k];
                let values = if int { int_extremes() } else { float_extremes() };
                let v = &values[x % values.len()];
                if let Some(next) = drive_with(&d, path, v) {
                    d = next;
                    set.push(format!("{path}={v}"));
                }
            }
            let why = judge(run_cfg(e, d));
            prop_assert!(why.is_none(), "{name} {}: {}", set.join(" "), why.unwrap_or_default());
        }
    }
}
