//! The PyO3 binding of stlsim-core, imported as the private module
//! `stlsim._core`. Conversions and errors only: configuration arrives as JSON
//! (validated by serde with unknown keys rejected), results leave as JSON and
//! plain lists, and every core error becomes a typed exception from
//! `stlsim.errors`.

use pyo3::prelude::*;
use serde::Serialize;
use stlsim_core::drive::DriveConfig;
use stlsim_core::error::SimError;
use stlsim_core::layers::{LayoutNeed, REGISTRY};

fn raise(py: Python<'_>, e: SimError) -> PyErr {
    let (class, extra): (&str, Option<(u64, u32, String, String)>) = match &e {
        SimError::Config(_) => ("ConfigError", None),
        SimError::TraceFormat { .. } => ("TraceFormatError", None),
        SimError::Io(_) => ("TraceIOError", None),
        SimError::DataLoss(d) => (
            "DataLossError",
            Some((d.lba, d.expected, d.found.clone(), d.during.clone())),
        ),
        SimError::Medium(_) => ("MediumError", None),
        SimError::Layer(_) => ("LayerError", None),
        SimError::Crash => ("SimulationError", None),
    };
    let msg = e.to_string();
    let made = (|| -> PyResult<PyErr> {
        let errors = py.import("stlsim.errors")?;
        let cls = errors.getattr(class)?;
        let obj = cls.call1((msg.clone(),))?;
        if let Some((lba, expected, found, during)) = extra {
            obj.setattr("lba", lba)?;
            obj.setattr("expected_version", expected)?;
            obj.setattr("found", found)?;
            obj.setattr("during", during)?;
        }
        Ok(PyErr::from_value(obj))
    })();
    made.unwrap_or_else(|_| pyo3::exceptions::PyRuntimeError::new_err(msg))
}

/// Deserialise JSON from the Python front; a value serde refuses becomes a
/// configuration error naming its key (`what: layout.group_tracks: ...`).
fn from_json<T: serde::de::DeserializeOwned>(
    py: Python<'_>,
    what: &str,
    text: &str,
) -> PyResult<T> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = if path.is_empty() || path == "." {
            format!("{what}: {inner}")
        } else {
            format!("{what}: {path}: {inner}")
        };
        raise(py, SimError::Config(msg))
    })
}

/// One simulation run, stepped from Python so a progress bar can follow it.
#[pyclass(module = "stlsim._core")]
struct Simulation {
    // A mutex makes the class Sync for PyO3; Python never shares a run between threads.
    inner: std::sync::Mutex<stlsim_core::Simulation>,
    /// The pushing end of a live run's trace (`Simulation.live`), else None.
    live: Option<stlsim_core::trace::live::LiveQueue>,
}

impl Simulation {
    fn sim(&self) -> std::sync::MutexGuard<'_, stlsim_core::Simulation> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl Simulation {
    /// Validate a JSON run configuration and open the trace.
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        let cfg: stlsim_core::RunConfig = from_json(py, "invalid run configuration", config_json)?;
        let inner = py
            .allow_threads(|| stlsim_core::Simulation::new(cfg))
            .map_err(|e| raise(py, e))?;
        Ok(Simulation {
            inner: std::sync::Mutex::new(inner),
            live: None,
        })
    }

    /// A run fed by a live client (issue 37's NBD server) instead of a trace
    /// file: the configuration's trace path is only named in messages.
    /// Each :meth:`submit` hands over one request and serves it; a
    /// :meth:`step` with nothing submitted ends the run.
    /// With `record` (a path and a JSON header), every request submitted
    /// is also written there as a binary trace.
    #[staticmethod]
    #[pyo3(signature = (config_json, record=None))]
    fn live(py: Python<'_>, config_json: &str, record: Option<(String, String)>) -> PyResult<Self> {
        let cfg: stlsim_core::RunConfig = from_json(py, "invalid run configuration", config_json)?;
        let queue = stlsim_core::trace::live::LiveQueue::default();
        if let Some((path, header)) = record {
            queue.record_to(&path, &header).map_err(|e| raise(py, e))?;
        }
        let reader = Box::new(queue.reader());
        let mut inner = py
            .allow_threads(|| stlsim_core::Simulation::with_reader(cfg, reader))
            .map_err(|e| raise(py, e))?;
        inner.keep_latencies();
        Ok(Simulation {
            inner: std::sync::Mutex::new(inner),
            live: Some(queue),
        })
    }

    /// Serve one request of a live run: a read or write of `length` bytes at
    /// byte `offset`, arriving at `time_ns` (the run uses differences only).
    /// Returns its simulated latency in ms (issue to completion).
    fn submit(
        &self,
        py: Python<'_>,
        write: bool,
        offset: u64,
        length: u64,
        time_ns: u64,
    ) -> PyResult<f64> {
        let Some(queue) = &self.live else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "submit needs a live run (Simulation.live)",
            ));
        };
        let inner = &self.inner;
        py.allow_threads(|| {
            let mut sim = inner.lock().unwrap_or_else(|p| p.into_inner());
            let line = sim.requests_done() + 1;
            queue.push(stlsim_core::trace::TraceRecord {
                time: stlsim_core::units::Nanos(time_ns),
                op: if write {
                    stlsim_core::trace::Op::Write
                } else {
                    stlsim_core::trace::Op::Read
                },
                offset: stlsim_core::units::Bytes(offset),
                len: stlsim_core::units::Bytes(length),
                line,
            })?;
            sim.step(1)?;
            Ok(sim
                .take_latencies()
                .last()
                .map_or(0.0, |k| k.latency.0 as f64 / 1e6))
        })
        .map_err(|e| raise(py, e))
    }

    /// FLUSH CACHE from a live client arriving at `time_ns`: the drive's
    /// write cache to the media. Returns its simulated latency in ms.
    fn flush(&self, py: Python<'_>, time_ns: u64) -> PyResult<f64> {
        let inner = &self.inner;
        py.allow_threads(|| {
            let mut sim = inner.lock().unwrap_or_else(|p| p.into_inner());
            let t = stlsim_core::units::Nanos(time_ns);
            sim.flush(t)
                .map(|done| done.saturating_sub(t).0 as f64 / 1e6)
        })
        .map_err(|e| raise(py, e))
    }

    /// End a live run's recording; returns the requests it holds (None
    /// when the run records nothing).
    fn finish_record(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        match &self.live {
            Some(q) => q.finish_record().map_err(|e| raise(py, e)),
            None => Ok(None),
        }
    }

    /// A power loss now, between requests: the layer rebuilds from the
    /// medium and, verifying, every block is checked.
    fn power_loss(&self, py: Python<'_>) -> PyResult<()> {
        let inner = &self.inner;
        py.allow_threads(|| inner.lock().unwrap_or_else(|p| p.into_inner()).power_loss())
            .map_err(|e| raise(py, e))
    }

    /// Power losses so far.
    #[getter]
    fn crashes(&self) -> u64 {
        self.sim().crashes()
    }

    /// Replay up to `max_requests` more requests; True when the run has finished.
    fn step(&self, py: Python<'_>, max_requests: u64) -> PyResult<bool> {
        let inner = &self.inner;
        py.allow_threads(|| {
            inner
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .step(max_requests)
        })
        .map_err(|e| raise(py, e))
    }

    /// Fraction of the trace consumed (0..1).
    #[getter]
    fn progress(&self) -> f64 {
        self.sim().progress()
    }

    /// Bytes the host may address: the drive's capacity less what the
    /// layer keeps for itself.
    #[getter]
    fn host_capacity_bytes(&self) -> u64 {
        let sim = self.sim();
        sim.host_capacity().0 * sim.device().geometry().sector_bytes() as u64
    }

    /// Host requests completed so far.
    #[getter]
    fn requests_done(&self) -> u64 {
        self.sim().requests_done()
    }

    /// Whether the run has finished.
    #[getter]
    fn finished(&self) -> bool {
        self.sim().finished()
    }

    /// With verification on: (heap bytes of the oracle and the medium's
    /// contents, distinct host sectors written); None otherwise.
    fn verification_memory(&self) -> Option<(u64, u64)> {
        self.sim()
            .verification_memory()
            .map(|m| (m.state_bytes, m.written_sectors))
    }

    /// Inject a power loss before the next request.
    fn request_crash(&self) {
        self.sim().request_crash()
    }

    /// Keep each request's simulated latency beside its measured response
    /// time (call before stepping; see :meth:`latencies`).
    fn keep_latencies(&self) {
        self.sim().keep_latencies()
    }

    /// The kept per-request latencies in completion order: (simulated ms,
    /// measured ms, write?), the measured value NaN where the trace has none.
    fn latencies(&self) -> (Vec<f64>, Vec<f64>, Vec<bool>) {
        let sim = self.sim();
        let log = sim.latencies();
        let ms = |n: stlsim_core::units::Nanos| n.0 as f64 / 1e6;
        (
            log.iter().map(|k| ms(k.latency)).collect(),
            log.iter()
                .map(|k| k.measured.map_or(f64::NAN, ms))
                .collect(),
            log.iter().map(|k| k.write).collect(),
        )
    }

    /// The run report as JSON.
    fn report_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.sim().report())
            .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
    }

    /// The latency CDF of `which` ('all', 'read' or 'write'): (latency_ms, fraction).
    fn cdf(&self, py: Python<'_>, which: &str) -> PyResult<(Vec<f64>, Vec<f64>)> {
        let sim = self.sim();
        let m = sim.metrics();
        Ok(match which {
            "all" => m.all().cdf(),
            "read" => m.reads.cdf(),
            "write" => m.writes.cdf(),
            w => {
                return Err(raise(
                    py,
                    SimError::Config(format!("no latency class '{w}' (all, read, write)")),
                ))
            }
        })
    }

    /// The per-N-request series as JSON columns.
    fn series_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.sim().metrics().series)
            .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
    }

    /// The WAF series (cumulative sector counts every `waf_every` host writes) as JSON columns.
    fn waf_series_json(&self) -> PyResult<String> {
        serde_json::to_string(self.sim().waf_series())
            .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
    }
}

#[derive(Serialize)]
struct LayerListing {
    name: &'static str,
    /// `drive` (the drive's firmware) or `host`.
    runs_in: stlsim_core::layers::RunsIn,
    summary: &'static str,
    paper: &'static str,
    layout: String,
    params: &'static [stlsim_core::layers::ParamSpec],
}

/// Every registered layer with its parameters, as JSON.
#[pyfunction]
fn layers_json() -> String {
    let v: Vec<LayerListing> = REGISTRY
        .iter()
        .map(|e| LayerListing {
            name: e.name,
            runs_in: e.runs_in,
            summary: e.summary,
            paper: e.paper,
            layout: match e.layout {
                LayoutNeed::AsConventional | LayoutNeed::AsConventionalShaped(_) => {
                    "any (runs the drive as conventional)".to_string()
                }
                LayoutNeed::Kind(k) | LayoutNeed::Shaped(k, _) => k.to_string(),
            },
            params: e.params,
        })
        .collect();
    serde_json::to_string(&v).expect("layer listing serialises")
}

#[derive(Serialize)]
struct FormatListing {
    name: &'static str,
    aliases: &'static [&'static str],
    summary: &'static str,
    /// The published column names whose header line is skipped (empty: none).
    columns: &'static [&'static str],
}

/// Every trace format the core reads (the core's one list), as JSON.
#[pyfunction]
fn formats_json() -> String {
    let v: Vec<FormatListing> = stlsim_core::trace::FORMATS
        .iter()
        .map(|f| FormatListing {
            name: f.name,
            aliases: f.aliases,
            summary: f.summary,
            columns: f.columns,
        })
        .collect();
    serde_json::to_string(&v).expect("format listing serialises")
}

#[derive(Serialize)]
struct DriveCheck {
    tracks: u64,
    capacity_bytes: u64,
    sector_bytes: u32,
    max_sectors_per_track: u32,
    rotation_ms: f64,
    full_stroke_seek_ms: f64,
    single_track_seek_ms: f64,
    /// Areal-density gain over conventional recording (SMR: W*N/(N+W-1)).
    space_gain: f64,
    /// SMR: the band mapping in paper 002's notation (null for other layouts).
    mapping: Option<String>,
    /// SMR: tracks of the shingled persistent (media) cache (0: none).
    persistent_cache_tracks: u64,
    /// SMR: bytes of the persistent cache.
    persistent_cache_bytes: u64,
}

/// Validate a drive description (JSON); returns derived figures as JSON.
#[pyfunction]
fn check_drive(py: Python<'_>, drive_json: &str) -> PyResult<String> {
    let d: DriveConfig = from_json(py, "invalid drive description", drive_json)?;
    if let Some(p) = d.prefill {
        p.validate().map_err(|e| raise(py, SimError::Config(e)))?;
    }
    let g = d.geometry().map_err(|e| raise(py, e))?;
    let m = d.mechanics(g.tracks()).map_err(|e| raise(py, e))?;
    let c = DriveCheck {
        tracks: g.tracks(),
        capacity_bytes: g.capacity().0 * g.sector_bytes() as u64,
        sector_bytes: g.sector_bytes(),
        max_sectors_per_track: g.max_sectors_per_track(),
        rotation_ms: m.rotation_time().as_ms(),
        full_stroke_seek_ms: m
            .seek_time(g.tracks().div_ceil(m.surfaces()).saturating_sub(1))
            .as_ms(),
        single_track_seek_ms: m.seek_time(1).as_ms(),
        space_gain: g.space_gain(),
        mapping: g.band_map().map(|b| b.notation()),
        persistent_cache_tracks: g.cache_tracks(),
        persistent_cache_bytes: (0..g.cache_tracks())
            .map(|i| g.sectors_in(g.cache_track(i)) as u64 * g.sector_bytes() as u64)
            .sum(),
    };
    Ok(serde_json::to_string(&c).expect("drive check serialises"))
}

/// Micro-benchmarks of the IMR layers' operations on an IMR drive (JSON),
/// `samples` trials each; rows as JSON (see `stlsim_core::analysis::imr_micro`).
#[pyfunction]
fn imr_micro_json(py: Python<'_>, drive_json: &str, samples: u32) -> PyResult<String> {
    let d: DriveConfig = from_json(py, "invalid drive description", drive_json)?;
    let rows = py
        .allow_threads(|| stlsim_core::analysis::imr_micro::imr_micro(&d, samples))
        .map_err(|e| raise(py, e))?;
    Ok(serde_json::to_string(&rows).expect("micro rows serialise"))
}

/// The drive description every key of which is stlsim's built-in default
/// (what a drive file without a preset gets for the keys it leaves out), as JSON.
#[pyfunction]
fn default_drive_json() -> String {
    serde_json::to_string(&DriveConfig::default()).expect("drive serialises")
}

/// The built-in defaults of one layout kind's keys (`{"kind": ..., ...}`),
/// as a drive's `[layout]` table of that kind starts from.
#[pyfunction]
fn default_layout_json(kind: &str) -> PyResult<String> {
    use stlsim_core::choice::Choice;
    let kind = stlsim_core::geometry::LayoutKind::parse(kind)
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
    let d = stlsim_core::drive::DriveConfig {
        layout: stlsim_core::geometry::LayoutConfig {
            kind,
            ..Default::default()
        },
        ..Default::default()
    };
    let v = serde_json::to_value(&d).expect("drive serialises");
    Ok(v["layout"].to_string())
}

/// The plausible range of every drive key, as JSON `{"real": [[key, lowest,
/// highest, unit], ...], "int": [[key, lowest, highest], ...]}` (docs/drive-model.md lists them).
#[pyfunction]
fn drive_ranges_json() -> String {
    use stlsim_core::drive::REAL_RANGES;
    use stlsim_core::geometry::config::INT_RANGES;
    serde_json::json!({"real": REAL_RANGES, "int": INT_RANGES}).to_string()
}

/// Validate the column layout of a generic CSV trace (JSON, the keys of
/// `[trace.csv]`); a bad key is a `ConfigError` naming it.
#[pyfunction]
fn check_trace_csv(py: Python<'_>, csv_json: &str) -> PyResult<()> {
    let c: stlsim_core::trace::GenericCsv = from_json(py, "invalid csv layout", csv_json)?;
    c.validate().map_err(|e| raise(py, e))
}

/// Every write of a trace mapped onto the home tracks of a drive, as JSON
/// columns (request, time_s, logical_track, physical_track, sectors).
#[pyfunction]
#[pyo3(signature = (trace_json, drive_json, fold = false))]
fn track_writes_json(
    py: Python<'_>,
    trace_json: &str,
    drive_json: &str,
    fold: bool,
) -> PyResult<String> {
    let t: stlsim_core::trace::TraceSpec = from_json(py, "invalid trace description", trace_json)?;
    let d: DriveConfig = from_json(py, "invalid drive description", drive_json)?;
    let cols = py
        .allow_threads(|| stlsim_core::analysis::track_writes(&t, &d, fold))
        .map_err(|e| raise(py, e))?;
    Ok(serde_json::to_string(&cols).expect("columns serialise"))
}

/// Convert a trace (JSON spec) into stlsim's binary form at `out`; `header_json`
/// (a JSON object, the caller's provenance) is stored in its header. Returns
/// the records, format and bytes written, as JSON.
#[pyfunction]
fn convert_trace(
    py: Python<'_>,
    trace_json: &str,
    out: &str,
    header_json: &str,
) -> PyResult<String> {
    let t: stlsim_core::trace::TraceSpec = from_json(py, "invalid trace description", trace_json)?;
    let header: serde_json::Value = from_json(py, "invalid header", header_json)?;
    let path = std::path::PathBuf::from(out);
    let done = py
        .allow_threads(|| stlsim_core::trace::binary::convert(&t, &path, header))
        .map_err(|e| raise(py, e))?;
    Ok(serde_json::to_string(&done).expect("summary serialises"))
}

/// What a trace (JSON spec) holds, as JSON; with a drive (JSON, or empty),
/// the tracks its writes touch.
#[pyfunction]
fn trace_info_json(py: Python<'_>, trace_json: &str, drive_json: &str) -> PyResult<String> {
    let t: stlsim_core::trace::TraceSpec = from_json(py, "invalid trace description", trace_json)?;
    let d: Option<DriveConfig> = if drive_json.is_empty() {
        None
    } else {
        Some(from_json(py, "invalid drive description", drive_json)?)
    };
    let info = py
        .allow_threads(|| stlsim_core::analysis::trace_info::trace_info(&t, d.as_ref()))
        .map_err(|e| raise(py, e))?;
    Ok(serde_json::to_string(&info).expect("info serialises"))
}

/// The header (JSON text) of a binary trace.
#[pyfunction]
fn binary_trace_header(py: Python<'_>, path: &str) -> PyResult<String> {
    let file = std::fs::File::open(path).map_err(|e| {
        raise(
            py,
            stlsim_core::error::SimError::Io(format!("cannot open trace '{path}': {e}")),
        )
    })?;
    let r = stlsim_core::trace::binary::BinaryReader::new(
        Box::new(std::io::BufReader::new(file)),
        path,
    )
    .map_err(|e| raise(py, e))?;
    Ok(r.header().to_string())
}

#[derive(Serialize)]
struct SynthCheck {
    spec: stlsim_core::trace::SynthSpec,
    requests: u64,
    bytes: u128,
    /// Expected time from the first to the last request, s (mean gaps).
    duration_s: f64,
}

fn synth_spec(py: Python<'_>, spec_json: &str) -> PyResult<stlsim_core::trace::SynthSpec> {
    let s: stlsim_core::trace::SynthSpec = from_json(py, "invalid synthetic trace", spec_json)?;
    s.validate().map_err(|e| raise(py, e))?;
    Ok(s)
}

/// Validate a synthetic trace spec (JSON); returns it with its defaults
/// filled in, its request count, bytes and expected duration, as JSON.
#[pyfunction]
fn synth_check(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    let spec = synth_spec(py, spec_json)?;
    let requests = spec.requests();
    let c = SynthCheck {
        requests,
        bytes: spec.bytes(),
        duration_s: requests.saturating_sub(1) as f64 * spec.iat_mean_ms / 1e3,
        spec,
    };
    Ok(serde_json::to_string(&c).expect("synth check serialises"))
}

/// Generate a synthetic trace (spec as JSON) into `path` as MSR Cambridge
/// CSV (`.gz` / `.zst` compressed by name), streaming; returns the number
/// of requests written.
#[pyfunction]
#[pyo3(signature = (spec_json, path, hostname = "synth", disk = 0))]
fn write_synth_msr(
    py: Python<'_>,
    spec_json: &str,
    path: &str,
    hostname: &str,
    disk: u64,
) -> PyResult<u64> {
    let spec = synth_spec(py, spec_json)?;
    py.allow_threads(|| {
        let mut r = stlsim_core::trace::SynthReader::new(&spec)?;
        stlsim_core::trace::msr::write_msr_file(&mut r, path, hostname, disk)
    })
    .map_err(|e| raise(py, e))
}

/// The native core of stlsim (private; use the `stlsim` package).
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(layers_json, m)?)?;
    m.add_function(wrap_pyfunction!(formats_json, m)?)?;
    m.add_function(wrap_pyfunction!(check_drive, m)?)?;
    m.add_function(wrap_pyfunction!(imr_micro_json, m)?)?;
    m.add_function(wrap_pyfunction!(default_layout_json, m)?)?;
    m.add_function(wrap_pyfunction!(track_writes_json, m)?)?;
    m.add_function(wrap_pyfunction!(convert_trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info_json, m)?)?;
    m.add_function(wrap_pyfunction!(binary_trace_header, m)?)?;
    m.add_function(wrap_pyfunction!(check_trace_csv, m)?)?;
    m.add_function(wrap_pyfunction!(default_drive_json, m)?)?;
    m.add_function(wrap_pyfunction!(drive_ranges_json, m)?)?;
    m.add_function(wrap_pyfunction!(synth_check, m)?)?;
    m.add_function(wrap_pyfunction!(write_synth_msr, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The git commit built from, "" when not built from a checkout.
    m.add("__commit__", env!("STLSIM_GIT_COMMIT"))?;
    Ok(())
}
