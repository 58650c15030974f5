//! Criterion benchmarks of the replay engine with the CMR layer: the
//! CloudPhysics sample replayed in `queue` mode on the imr-paper drive
//! (metrics on, verification off), with and without the write cache, and
//! with verification on for comparison; every registered IMR layer the same
//! way (their defaults; then counting destaged extents, the pre-arrival
//! counting, and on a full drive, the paper's assumption); the four
//! shingled mappings of paper 002 on its drive at 75 % usage; paper 003's
//! drive-managed layers on a dmsmr-5tb-like drive; and parsing the vscsi
//! trace format.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use stlsim_core::drive::DriveConfig;
use stlsim_core::engine::{LayerConfig, RunConfig};
use stlsim_core::layers::REGISTRY;
use stlsim_core::trace::open::open_reader;
use stlsim_core::trace::{open_trace, Format, TraceRecord, TraceSpec, VecTrace};
use stlsim_core::Simulation;

#[path = "../tests/common/drives.rs"]
mod drives;
use drives::{dmsmr, exos_x18z, hwsr_paper, imr_paper, swd_paper};

fn sample() -> Vec<TraceRecord> {
    let spec = TraceSpec {
        path: concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/cloudPhysicsIO.vscsi"
        )
        .into(),
        ..Default::default()
    };
    let mut r = open_trace(&spec).unwrap();
    let mut v = vec![];
    while let Some(x) = r.next_record().unwrap() {
        v.push(x);
    }
    v
}

fn bench(c: &mut Criterion) {
    let recs = sample();
    let mut g = c.benchmark_group("engine-cmr-queue");
    g.throughput(Throughput::Elements(recs.len() as u64));
    g.sample_size(10);
    for (name, cache, verify) in [
        ("cache-on", true, false),
        ("cache-off", false, false),
        ("cache-on-verify", true, true),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let cfg = RunConfig {
                        drive: imr_paper(),
                        layer: LayerConfig {
                            name: "cmr".into(),
                            ..Default::default()
                        },
                        verify,
                        replay: stlsim_core::engine::ReplayConfig {
                            write_cache: Some(cache),
                            ..Default::default()
                        },
                        ..Default::default()
                    };
                    Simulation::with_reader(cfg, Box::new(VecTrace::new(recs.clone()))).unwrap()
                },
                |mut s| {
                    s.run().unwrap();
                    s.requests_done()
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
    // The IMR layers on the same drive and trace (cache on, verification off).
    for (group, destage, full) in [
        ("engine-imr-queue", false, false),
        ("engine-imr-queue-destage", true, false),
        ("engine-imr-queue-full", false, true),
    ] {
        bench_imr(c, &recs, group, destage, full);
    }
}

/// Every IMR layer on the imr-paper drive, cache on: with its defaults, or
/// counting destaged extents (`destage`), or on a full drive (`full`).
fn bench_imr(c: &mut Criterion, recs: &[TraceRecord], group: &str, destage: bool, full: bool) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(recs.len() as u64));
    g.sample_size(10);
    for layer in REGISTRY
        .iter()
        .map(|e| e.name)
        .filter(|n| n.starts_with("imr-"))
    {
        if destage && layer == "imr-rmw" {
            continue;
        }
        g.bench_function(layer, |b| {
            b.iter_batched(
                || {
                    let mut params = std::collections::BTreeMap::new();
                    if destage {
                        params.insert("count_at".to_string(), serde_json::Value::from("destage"));
                    }
                    let cfg = RunConfig {
                        drive: imr_paper(),
                        layer: LayerConfig {
                            name: layer.to_string(),
                            params,
                        },
                        replay: stlsim_core::engine::ReplayConfig {
                            prefill: full.then_some(
                                stlsim_core::medium::prefill::PrefillSpec::Fraction(1.0),
                            ),
                            ..Default::default()
                        },
                        ..Default::default()
                    };
                    Simulation::with_reader(cfg, Box::new(VecTrace::new(recs.to_vec()))).unwrap()
                },
                |mut s| {
                    s.run().unwrap();
                    s.requests_done()
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

/// The four mappings on the CloudPhysics sample folded into 75 % of the
/// swd-paper drive, scaled mode (x1), verification off.
fn bench_swd(c: &mut Criterion) {
    let recs = sample();
    let mut g = c.benchmark_group("engine-swd-75pct");
    g.throughput(Throughput::Elements(recs.len() as u64));
    g.sample_size(10);
    for layer in ["swd-1234", "swd-r4123", "swd-124r3", "swd-14r23", "swd"] {
        g.bench_function(layer, |b| {
            b.iter_batched(
                || {
                    let cfg = RunConfig {
                        drive: swd_paper(),
                        layer: LayerConfig {
                            name: layer.to_string(),
                            ..Default::default()
                        },
                        replay: stlsim_core::engine::ReplayConfig {
                            mode: stlsim_core::engine::Mode::Scaled,
                            prefill: Some(stlsim_core::medium::prefill::PrefillSpec::Fraction(
                                0.75,
                            )),
                            fold_to_prefill: true,
                            ..Default::default()
                        },
                        ..Default::default()
                    };
                    Simulation::with_reader(cfg, Box::new(VecTrace::new(recs.clone()))).unwrap()
                },
                |mut s| {
                    s.run().unwrap();
                    s.requests_done()
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

/// Paper 003's two layers, flat out at queue depth 1 with the write cache
/// off: on the CloudPhysics sample (no cleaning) and on 20,000 random 4 KiB
/// writes over 500 GB (cleaning all the time), verification off.
fn bench_dmsmr(c: &mut Criterion) {
    use stlsim_core::trace::{SynthReader, SynthSpec};
    let recs = sample();
    let drive = dmsmr();
    let mut g = c.benchmark_group("engine-dmsmr");
    g.sample_size(10);
    for layer in ["smr-eregion", "smr-vguard"] {
        let cfg = |layer: &str| RunConfig {
            drive: drive.clone(),
            layer: LayerConfig {
                name: layer.to_string(),
                ..Default::default()
            },
            replay: stlsim_core::engine::ReplayConfig {
                mode: stlsim_core::engine::Mode::FlatOut,
                write_cache: Some(false),
                ..Default::default()
            },
            ..Default::default()
        };
        g.throughput(Throughput::Elements(recs.len() as u64));
        g.bench_function(format!("{layer}-cloudphysics"), |b| {
            b.iter_batched(
                || {
                    Simulation::with_reader(cfg(layer), Box::new(VecTrace::new(recs.clone())))
                        .unwrap()
                },
                |mut s| {
                    s.run().unwrap();
                    s.requests_done()
                },
                BatchSize::LargeInput,
            )
        });
        let spec = SynthSpec {
            seed: 1,
            ..SynthSpec::uniform(20_000, 500_000_000_000)
        };
        g.throughput(Throughput::Elements(20_000));
        g.bench_function(format!("{layer}-random-500GB"), |b| {
            b.iter_batched(
                || {
                    Simulation::with_reader(cfg(layer), Box::new(SynthReader::new(&spec).unwrap()))
                        .unwrap()
                },
                |mut s| {
                    s.run().unwrap();
                    s.requests_done()
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

/// Paper 004's four host-side buffer layers on an Exos X18z-like zoned
/// drive: the CloudPhysics sample with the buffer at 1 % of its access
/// range (queue depth 64, write cache off), verification off.
fn bench_zoned(c: &mut Criterion) {
    let d = exos_x18z();
    bench_layers(
        c,
        "engine-zoned",
        &d,
        &["hm-fluid", "hm-fluid-loop", "hm-skylight", "amphisbaena"],
        |_| {},
    );
}

/// One benchmark per layer in group `group`: the whole CloudPhysics sample
/// replayed on drive `d`, with `tweak` applied to each run's configuration.
fn bench_layers(
    c: &mut Criterion,
    group: &str,
    d: &DriveConfig,
    layers: &[&str],
    tweak: fn(&mut RunConfig),
) {
    let recs = sample();
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    for layer in layers {
        let mut cfg = RunConfig {
            drive: d.clone(),
            layer: LayerConfig {
                name: layer.to_string(),
                ..Default::default()
            },
            ..Default::default()
        };
        tweak(&mut cfg);
        g.throughput(Throughput::Elements(recs.len() as u64));
        g.bench_function(format!("{layer}-cloudphysics"), |b| {
            b.iter_batched(
                || {
                    Simulation::with_reader(cfg.clone(), Box::new(VecTrace::new(recs.clone())))
                        .unwrap()
                },
                |mut s| {
                    s.run().unwrap();
                    s.requests_done()
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

/// Paper 001's hybrid systems on its hwsr-paper drive (wave layout, 100 MB
/// battery-backed memory buffer, 200 MB SSD): the CloudPhysics sample at
/// queue depth 1, verification off.
fn bench_hybrid(c: &mut Criterion) {
    let d = hwsr_paper();
    bench_layers(
        c,
        "engine-hybrid",
        &d,
        &["buffered-cmr", "sblock", "hwsr"],
        |cfg| cfg.replay.queue_depth = 1,
    );
}

/// Reader throughput from memory (records per second), text and binary forms
/// of the same requests where both exist.
fn bench_readers(c: &mut Criterion) {
    let data = |name: &str| -> &'static [u8] {
        let path = format!("{}/../../tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        Box::leak(std::fs::read(path).unwrap().into_boxed_slice())
    };
    let gunzip = |bytes: &[u8]| -> &'static [u8] {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(bytes), &mut out)
            .unwrap();
        Box::leak(out.into_boxed_slice())
    };
    let count = |bytes: &'static [u8], format: Format| -> u64 {
        let spec = TraceSpec {
            path: "mem".into(),
            format: Some(format),
            all_devices: true,
            ..Default::default()
        };
        let mut r = open_reader(Box::new(bytes), &spec).unwrap();
        let mut n = 0;
        while r.next_record().unwrap().is_some() {
            n += 1;
        }
        n
    };
    // The MSR text and its binary form (written here, as `stlsim convert` would).
    let msr = data("rsrch_1.csv");
    let binary: &'static [u8] = {
        let spec = TraceSpec {
            path: "mem".into(),
            format: Some(Format::Msr),
            ..Default::default()
        };
        let mut r = open_reader(Box::new(msr), &spec).unwrap();
        let mut w = stlsim_core::trace::binary::BinaryWriter::new(Vec::new(), "{}").unwrap();
        while let Some(rec) = r.next_record().unwrap() {
            w.push(&rec, Some(1)).unwrap();
        }
        Box::leak(w.finish().unwrap().1.into_boxed_slice())
    };
    let inputs: [(&str, &'static [u8], Format); 7] = [
        ("vscsi-parse", data("cloudPhysicsIO.vscsi"), Format::Vscsi),
        ("msr-parse", msr, Format::Msr),
        (
            "cloudphysics-csv-parse",
            data("cloudPhysicsIO.csv"),
            Format::CloudphysicsCsv,
        ),
        (
            "fio-parse",
            gunzip(data("iolog_8G.log.gz")),
            Format::FioIolog,
        ),
        ("stlt-parse", binary, Format::Binary),
        (
            "blkparse-parse",
            gunzip(data("blktrace.txt.gz")),
            Format::Blkparse,
        ),
        (
            "mqsim-parse",
            gunzip(data("wsrch-small.trace.gz")),
            Format::Mqsim,
        ),
    ];
    // The other text readers have small samples: their records repeated
    // (the header, if any, once) to about 20,000 records in memory.
    let repeated = |name: &str, header_lines: usize| -> &'static [u8] {
        let text = data(name);
        let mut at = 0;
        for _ in 0..header_lines {
            at += text[at..].iter().position(|&c| c == b'\n').unwrap() + 1;
        }
        let body = &text[at..];
        let times = 20_000 / body.iter().filter(|&&c| c == b'\n').count().max(1) + 1;
        let mut out = text[..at].to_vec();
        for _ in 0..times {
            out.extend_from_slice(body);
        }
        Box::leak(out.into_boxed_slice())
    };
    let others: [(&str, &'static [u8], Format); 9] = [
        ("spc-parse", repeated("samples/wdev_3.spc", 0), Format::Spc),
        (
            "systor17-parse",
            repeated("samples/wdev_3.systor17.csv", 1),
            Format::Systor17,
        ),
        (
            "alibaba-parse",
            repeated("samples/wdev_3.alibaba.csv", 0),
            Format::Alibaba,
        ),
        (
            "tencent-parse",
            repeated("samples/wdev_3.tencent.csv", 0),
            Format::Tencent,
        ),
        (
            "fiu-parse",
            repeated("samples/wdev_3.fiu.txt", 0),
            Format::Fiu,
        ),
        (
            "disksim-parse",
            repeated("samples/wdev_3.disksim", 0),
            Format::Disksim,
        ),
        (
            "disksim-validate-parse",
            repeated("disksim/hp_c3323a.trace", 0),
            Format::DisksimValidate,
        ),
        (
            "thesios-parse",
            repeated("thesios/data-00000-of-00001", 1),
            Format::Thesios,
        ),
        (
            "fio3-parse",
            repeated("samples/wdev_3.fio3.log", 3),
            Format::FioIolog,
        ),
    ];
    let mut g = c.benchmark_group("trace");
    // blkparse prints one line per event, several per request (3.2 in this
    // capture): its reader is also timed per event line read.
    let blkparse = inputs[5];
    let blkparse_events = (
        "blkparse-parse-event-lines",
        blkparse.1,
        blkparse.2,
        Some(blkparse.1.iter().filter(|&&c| c == b'\n').count() as u64),
    );
    let inputs = inputs
        .into_iter()
        .map(|(n, b, f)| (n, b, f, None))
        .chain([blkparse_events])
        .chain(others.into_iter().map(|(n, b, f)| (n, b, f, None)));
    for (name, bytes, format, lines) in inputs {
        g.throughput(Throughput::Elements(
            lines.unwrap_or_else(|| count(bytes, format)),
        ));
        g.bench_function(name, |b| {
            b.iter(|| {
                let spec = TraceSpec {
                    path: "mem".into(),
                    format: Some(format),
                    all_devices: true,
                    ..Default::default()
                };
                let mut r = open_reader(Box::new(bytes), &spec).unwrap();
                let mut n = 0u64;
                while let Some(rec) = r.next_record().unwrap() {
                    n += rec.len.0;
                }
                n
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    bench,
    bench_swd,
    bench_dmsmr,
    bench_zoned,
    bench_hybrid,
    bench_readers
);
criterion_main!(benches);
