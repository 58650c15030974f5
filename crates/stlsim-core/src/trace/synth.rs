//! Synthetic traces, generated lazily from a seed: a [`SynthSpec`] describes
//! the workload and a [`SynthReader`] streams its records (constant memory,
//! whatever the request count). The same spec and seed always give the same
//! records, so a reader can be reopened for a second pass.
//!
//! Two kinds:
//!
//! * `sequential`: the SYN trace of He & Du ("Novel Address Mappings for
//!   Shingled Write Disks", section 5.2): writes of `request_bytes` one after
//!   another from `start_bytes` until `total_bytes` have been written (the
//!   last request is shorter when `total_bytes` is not a multiple).
//! * `uniform`: `count` requests of `request_bytes` at offsets drawn
//!   uniformly from `[start_bytes, start_bytes + span_bytes)`, aligned to
//!   `align_bytes` and lying wholly inside the span; a `write_fraction` of them
//!   are writes, the rest reads.
//!
//! Inter-arrival times follow a normal distribution (`iat_mean_ms`,
//! `iat_sd_ms`), negative draws clamped to 0. The first request is at time 0.
//! Times are whole 100 ns ticks (the MSR timestamp unit), so a synthetic trace
//! written as MSR CSV ([`crate::trace::msr::write_msr`]) reads back identical.
//!
//! Randomness: `oorandom`'s PCG-XSL-RR 128/64 generator, one independent
//! stream per purpose (inter-arrival times, offsets, read/write choice), so
//! for example changing `write_fraction` does not change the timing.

use crate::error::{SimError, SimResult};
use crate::trace::{Op, TraceReader, TraceRecord};
use crate::units::{Bytes, Nanos};
use oorandom::Rand64;
use serde::{Deserialize, Serialize};

/// The kinds of synthetic trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SynthKind {
    /// Contiguous writes from `start_bytes` until `total_bytes` are written.
    Sequential,
    /// `count` requests at uniformly random aligned offsets within a span.
    Uniform,
}

impl SynthKind {
    /// The name a synthetic trace spec and its error messages use (`sequential`,
    /// `uniform`).
    pub fn name(self) -> &'static str {
        match self {
            SynthKind::Sequential => "sequential",
            SynthKind::Uniform => "uniform",
        }
    }
}

/// Default request size: 8 blocks of 512 bytes (He & Du's SYN).
pub const DEFAULT_REQUEST_BYTES: u64 = 4096;
/// Default mean inter-arrival time, ms (He & Du's SYN).
pub const DEFAULT_IAT_MEAN_MS: f64 = 50.0;
/// Default standard deviation of the inter-arrival time, ms (He & Du's SYN).
pub const DEFAULT_IAT_SD_MS: f64 = 10.0;

/// A synthetic workload. Fields that do not apply to the `kind` must be
/// absent; a missing required field is an error of [`SynthSpec::validate`].
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SynthSpec {
    /// `sequential` or `uniform`.
    pub kind: SynthKind,
    /// Bytes per request (default 4096: 8 blocks of 512 B).
    #[serde(default = "default_request_bytes")]
    pub request_bytes: u64,
    /// Byte offset where the written range (sequential) or the span
    /// (uniform) begins (default 0).
    #[serde(default)]
    pub start_bytes: u64,
    /// Sequential only, required: bytes to write in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<u64>,
    /// Uniform only, required: number of requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Uniform only, required: bytes of address space the requests fall in
    /// (each request lies wholly inside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_bytes: Option<u64>,
    /// Uniform only: offsets are `start_bytes` plus a multiple of this
    /// (default: `request_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub align_bytes: Option<u64>,
    /// Uniform only: fraction of requests that are writes, 0..=1 (default 1: all writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_fraction: Option<f64>,
    /// Mean inter-arrival time, ms (default 50).
    #[serde(default = "default_iat_mean_ms")]
    pub iat_mean_ms: f64,
    /// Standard deviation of the inter-arrival time, ms (default 10; 0: constant gaps).
    #[serde(default = "default_iat_sd_ms")]
    pub iat_sd_ms: f64,
    /// Seed of the generator (default 0): the same seed gives the same trace.
    #[serde(default)]
    pub seed: u64,
}

fn default_request_bytes() -> u64 {
    DEFAULT_REQUEST_BYTES
}
fn default_iat_mean_ms() -> f64 {
    DEFAULT_IAT_MEAN_MS
}
fn default_iat_sd_ms() -> f64 {
    DEFAULT_IAT_SD_MS
}

impl SynthSpec {
    /// A spec of `kind` with every default and no size set.
    pub fn new(kind: SynthKind) -> SynthSpec {
        SynthSpec {
            kind,
            request_bytes: DEFAULT_REQUEST_BYTES,
            start_bytes: 0,
            total_bytes: None,
            count: None,
            span_bytes: None,
            align_bytes: None,
            write_fraction: None,
            iat_mean_ms: DEFAULT_IAT_MEAN_MS,
            iat_sd_ms: DEFAULT_IAT_SD_MS,
            seed: 0,
        }
    }

    /// A sequential spec writing `total_bytes` (other fields at their defaults).
    pub fn sequential(total_bytes: u64) -> SynthSpec {
        SynthSpec {
            total_bytes: Some(total_bytes),
            ..SynthSpec::new(SynthKind::Sequential)
        }
    }

    /// A uniform spec of `count` requests over `span_bytes` (other fields at their defaults).
    pub fn uniform(count: u64, span_bytes: u64) -> SynthSpec {
        SynthSpec {
            count: Some(count),
            span_bytes: Some(span_bytes),
            ..SynthSpec::new(SynthKind::Uniform)
        }
    }

    /// Check the spec; the error is one line naming the field at fault.
    pub fn validate(&self) -> SimResult<()> {
        let kind = self.kind.name();
        let err = |m: String| Err(SimError::Config(format!("synthetic trace: {m}")));
        let given: [(&str, bool); 5] = [
            ("total_bytes", self.total_bytes.is_some()),
            ("count", self.count.is_some()),
            ("span_bytes", self.span_bytes.is_some()),
            ("align_bytes", self.align_bytes.is_some()),
            ("write_fraction", self.write_fraction.is_some()),
        ];
        let (own, takes): (&[&str], &str) = match self.kind {
            SynthKind::Sequential => (
                &["total_bytes"],
                "request_bytes, start_bytes, total_bytes, iat_mean_ms, iat_sd_ms, seed",
            ),
            SynthKind::Uniform => (
                &["count", "span_bytes", "align_bytes", "write_fraction"],
                "request_bytes, start_bytes, count, span_bytes, align_bytes, write_fraction, iat_mean_ms, iat_sd_ms, seed",
            ),
        };
        for (name, set) in given {
            if set && !own.contains(&name) {
                return err(format!(
                    "{name} does not apply to kind {kind} (it takes {takes})"
                ));
            }
        }
        if self.request_bytes == 0 {
            return err("request_bytes must be positive, got 0".into());
        }
        if !self.iat_mean_ms.is_finite() || self.iat_mean_ms < 0.0 {
            return err(format!(
                "iat_mean_ms must be a non-negative number, got {}",
                self.iat_mean_ms
            ));
        }
        if !self.iat_sd_ms.is_finite() || self.iat_sd_ms < 0.0 {
            return err(format!(
                "iat_sd_ms must be a non-negative number, got {}",
                self.iat_sd_ms
            ));
        }
        match self.kind {
            SynthKind::Sequential => {
                let Some(total) = self.total_bytes else {
                    return err("kind sequential needs total_bytes (or usage)".into());
                };
                if total == 0 {
                    return err("total_bytes must be positive, got 0".into());
                }
                if self.start_bytes.checked_add(total).is_none() {
                    return err(format!(
                        "start_bytes + total_bytes overflows ({} + {total})",
                        self.start_bytes
                    ));
                }
            }
            SynthKind::Uniform => {
                let Some(count) = self.count else {
                    return err("kind uniform needs count".into());
                };
                if count == 0 {
                    return err("count must be positive, got 0".into());
                }
                let Some(span) = self.span_bytes else {
                    return err("kind uniform needs span_bytes (or usage)".into());
                };
                if span < self.request_bytes {
                    return err(format!(
                        "span_bytes ({span}) is smaller than request_bytes ({}): a request must fit in the span",
                        self.request_bytes
                    ));
                }
                if self.align_bytes == Some(0) {
                    return err("align_bytes must be positive, got 0".into());
                }
                if let Some(f) = self.write_fraction {
                    if !(0.0..=1.0).contains(&f) {
                        return err(format!("write_fraction must be between 0 and 1, got {f}"));
                    }
                }
                if self.start_bytes.checked_add(span).is_none() {
                    return err(format!(
                        "start_bytes + span_bytes overflows ({} + {span})",
                        self.start_bytes
                    ));
                }
            }
        }
        Ok(())
    }

    /// Number of requests the trace holds (of a valid spec).
    pub fn requests(&self) -> u64 {
        match self.kind {
            SynthKind::Sequential => self
                .total_bytes
                .unwrap_or(0)
                .div_ceil(self.request_bytes.max(1)),
            SynthKind::Uniform => self.count.unwrap_or(0),
        }
    }

    /// Bytes the trace's requests add up to (of a valid spec).
    pub fn bytes(&self) -> u128 {
        match self.kind {
            SynthKind::Sequential => u128::from(self.total_bytes.unwrap_or(0)),
            SynthKind::Uniform => {
                u128::from(self.count.unwrap_or(0)) * u128::from(self.request_bytes)
            }
        }
    }
}

/// PCG stream increments, one per purpose.
const STREAM_IAT: u128 = 0x5EED_0001;
const STREAM_OFFSET: u128 = 0x5EED_0002;
const STREAM_OP: u128 = 0x5EED_0003;

/// Nanoseconds per MSR timestamp tick; synthetic times are whole ticks.
const TICK_NS: u64 = 100;

/// Normal deviates by the Box-Muller transform (the second of each pair kept).
struct Normal {
    rng: Rand64,
    spare: Option<f64>,
}

impl Normal {
    fn next(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // u1 in (0, 1] so that ln(u1) is finite.
        let u1 = 1.0 - self.rng.rand_float();
        let u2 = self.rng.rand_float();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
        self.spare = Some(r * s);
        r * c
    }
}

/// Streams the records of a [`SynthSpec`], optionally skipping the first
/// `start` and stopping after `limit` (as the trace options of a file do).
pub struct SynthReader {
    spec: SynthSpec,
    start: u64,
    limit: Option<u64>,
    /// Index (0-based) of the next request to generate.
    next: u64,
    /// Index one past the last request to emit.
    end: u64,
    /// Time of the next request, ns.
    time: u64,
    iat: Normal,
    offsets: Rand64,
    ops: Rand64,
    /// Offset slots of a uniform trace, and their spacing.
    slots: u64,
    align: u64,
    write_fraction: f64,
}

impl SynthReader {
    /// A reader of the whole trace of `spec` (validated here).
    pub fn new(spec: &SynthSpec) -> SimResult<SynthReader> {
        SynthReader::with_selection(spec, 0, None)
    }

    /// A reader skipping the first `start` requests and emitting at most
    /// `limit`. Record `line`s stay the 1-based request numbers of the
    /// whole trace.
    pub fn with_selection(
        spec: &SynthSpec,
        start: u64,
        limit: Option<u64>,
    ) -> SimResult<SynthReader> {
        spec.validate()?;
        let count = spec.requests();
        let first = start.min(count);
        let end = match limit {
            Some(l) => first.saturating_add(l).min(count),
            None => count,
        };
        let align = spec.align_bytes.unwrap_or(spec.request_bytes);
        let slots = match spec.kind {
            SynthKind::Sequential => 0,
            SynthKind::Uniform => (spec.span_bytes.unwrap_or(0) - spec.request_bytes) / align + 1,
        };
        let seed = u128::from(spec.seed);
        Ok(SynthReader {
            spec: spec.clone(),
            start,
            limit,
            next: 0,
            end,
            time: 0,
            iat: Normal {
                rng: Rand64::new_inc(seed, STREAM_IAT),
                spare: None,
            },
            offsets: Rand64::new_inc(seed, STREAM_OFFSET),
            ops: Rand64::new_inc(seed, STREAM_OP),
            slots,
            align,
            write_fraction: spec.write_fraction.unwrap_or(1.0),
        })
    }

    /// The spec this reader generates.
    pub fn spec(&self) -> &SynthSpec {
        &self.spec
    }

    /// The gap to the next request, in whole ticks of 100 ns.
    fn gap_ns(&mut self) -> u64 {
        let ms = if self.spec.iat_sd_ms > 0.0 {
            self.spec.iat_mean_ms + self.spec.iat_sd_ms * self.iat.next()
        } else {
            self.spec.iat_mean_ms
        };
        // ms -> ticks, rounded; negative clamps to 0 (float-to-int casts saturate).
        let ticks = (ms.max(0.0) * (1e6 / TICK_NS as f64)).round() as u64;
        ticks.saturating_mul(TICK_NS)
    }

    /// Generate request `self.next` (0-based).
    fn generate(&mut self) -> TraceRecord {
        let i = self.next;
        if i > 0 {
            let gap = self.gap_ns();
            self.time = self.time.saturating_add(gap);
        }
        let s = &self.spec;
        let (op, offset, len) = match s.kind {
            SynthKind::Sequential => {
                let done = i * s.request_bytes;
                let len = s.request_bytes.min(s.total_bytes.unwrap_or(0) - done);
                (Op::Write, s.start_bytes + done, len)
            }
            SynthKind::Uniform => {
                let slot = if self.slots > 1 {
                    self.offsets.rand_range(0..self.slots)
                } else {
                    0
                };
                let op = if self.ops.rand_float() < self.write_fraction {
                    Op::Write
                } else {
                    Op::Read
                };
                (op, s.start_bytes + slot * self.align, s.request_bytes)
            }
        };
        self.next += 1;
        TraceRecord {
            time: Nanos(self.time),
            op,
            offset: Bytes(offset),
            len: Bytes(len),
            line: i + 1,
        }
    }
}

impl TraceReader for SynthReader {
    fn next_record(&mut self) -> SimResult<Option<TraceRecord>> {
        while self.next < self.end {
            let rec = self.generate();
            if rec.line > self.start {
                crate::trace::request_end(&rec, "synthetic trace")?;
                return Ok(Some(rec));
            }
        }
        Ok(None)
    }

    fn progress(&self) -> f64 {
        let first = self.start.min(self.end);
        let total = self.end - first;
        if total == 0 {
            return 1.0;
        }
        (self.next.saturating_sub(first) as f64 / total as f64).clamp(0.0, 1.0)
    }

    fn reopen(&self) -> Option<SimResult<Box<dyn TraceReader>>> {
        Some(
            SynthReader::with_selection(&self.spec, self.start, self.limit)
                .map(|r| Box::new(r) as Box<dyn TraceReader>),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{open_trace, TraceSpec};

    fn all(r: &mut dyn TraceReader) -> Vec<TraceRecord> {
        let mut v = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            v.push(rec);
        }
        assert_eq!(r.progress(), 1.0);
        v
    }

    fn records(spec: &SynthSpec) -> Vec<TraceRecord> {
        all(&mut SynthReader::new(spec).unwrap())
    }

    fn config_err(spec: &SynthSpec) -> String {
        match spec.validate() {
            Err(SimError::Config(m)) => {
                assert!(
                    m.starts_with("synthetic trace: ") && !m.contains('\n'),
                    "{m}"
                );
                m
            }
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    /// Sample mean and standard deviation of the gaps, ms.
    fn gap_stats(recs: &[TraceRecord]) -> (f64, f64) {
        let gaps: Vec<f64> = recs
            .windows(2)
            .map(|w| (w[1].time.0 - w[0].time.0) as f64 / 1e6)
            .collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt())
    }

    #[test]
    fn sequential_is_contiguous_and_exact() {
        // 10 000 full requests and a short last one.
        let total = 4096 * 10_000 + 1000;
        let spec = SynthSpec {
            start_bytes: 1 << 20,
            ..SynthSpec::sequential(total)
        };
        assert_eq!(spec.requests(), 10_001);
        let r = records(&spec);
        assert_eq!(r.len(), 10_001);
        assert_eq!(r[0].offset, Bytes(1 << 20));
        assert_eq!(r[0].time, Nanos(0));
        for (i, w) in r.windows(2).enumerate() {
            assert_eq!(
                w[1].offset.0,
                w[0].offset.0 + w[0].len.0,
                "request {}",
                i + 2
            );
            assert!(w[1].time >= w[0].time);
        }
        assert!(r.iter().all(|x| x.op == Op::Write));
        assert!(r[..10_000].iter().all(|x| x.len == Bytes(4096)));
        assert_eq!(r[10_000].len, Bytes(1000));
        assert_eq!(r.iter().map(|x| x.len.0).sum::<u64>(), total);
        assert_eq!(
            r.last().unwrap().offset.0 + r.last().unwrap().len.0,
            (1 << 20) + total
        );
        let lines: Vec<u64> = r.iter().map(|x| x.line).collect();
        assert_eq!(lines, (1..=10_001).collect::<Vec<_>>());
        // Times are whole 100 ns ticks.
        assert!(r.iter().all(|x| x.time.0 % 100 == 0));
    }

    #[test]
    fn interarrival_times_follow_the_normal_model() {
        let r = records(&SynthSpec {
            seed: 7,
            ..SynthSpec::sequential(4096 * 20_000)
        });
        let (mean, sd) = gap_stats(&r);
        assert!((mean - 50.0).abs() < 0.3, "mean {mean}");
        assert!((sd - 10.0).abs() < 0.3, "sd {sd}");
        let spec = SynthSpec {
            iat_mean_ms: 2.0,
            iat_sd_ms: 0.5,
            seed: 3,
            ..SynthSpec::uniform(20_000, 1 << 30)
        };
        let (mean, sd) = gap_stats(&records(&spec));
        assert!((mean - 2.0).abs() < 0.02, "mean {mean}");
        assert!((sd - 0.5).abs() < 0.02, "sd {sd}");
        // sd 0: constant gaps.
        let r = records(&SynthSpec {
            iat_mean_ms: 1.5,
            iat_sd_ms: 0.0,
            ..SynthSpec::sequential(4096 * 100)
        });
        assert!(r.windows(2).all(|w| w[1].time.0 - w[0].time.0 == 1_500_000));
        // A wide distribution is clamped at 0, never negative (times never go back).
        let r = records(&SynthSpec {
            iat_mean_ms: 1.0,
            iat_sd_ms: 5.0,
            ..SynthSpec::sequential(4096 * 5_000)
        });
        let zeros = r.windows(2).filter(|w| w[1].time == w[0].time).count();
        assert!(zeros > 1_000, "{zeros} zero gaps");
    }

    #[test]
    fn uniform_offsets_in_span_and_aligned() {
        let span = 1_000_000_000;
        let spec = SynthSpec {
            request_bytes: 512_000,
            start_bytes: 4096,
            align_bytes: Some(4096),
            seed: 11,
            ..SynthSpec::uniform(20_000, span)
        };
        let r = records(&spec);
        assert_eq!(r.len(), 20_000);
        for x in &r {
            assert_eq!(x.len, Bytes(512_000));
            assert!(
                x.offset.0 >= 4096 && x.offset.0 + x.len.0 <= 4096 + span,
                "{x:?}"
            );
            assert_eq!((x.offset.0 - 4096) % 4096, 0);
        }
        // Spread over the whole span: each tenth gets about 10 %.
        let mut tenths = [0u32; 10];
        for x in &r {
            tenths[((x.offset.0 - 4096) * 10 / (span - 512_000 + 4096)) as usize] += 1;
        }
        assert!(
            tenths.iter().all(|&n| (1_700..2_300).contains(&n)),
            "{tenths:?}"
        );
        // Default alignment: the request size.
        let r = records(&SynthSpec {
            request_bytes: 8192,
            ..SynthSpec::uniform(1000, 8192 * 50 + 100)
        });
        assert!(r
            .iter()
            .all(|x| x.offset.0 % 8192 == 0 && x.offset.0 + 8192 <= 8192 * 50 + 100));
        assert!(
            r.iter().any(|x| x.offset.0 == 8192 * 49),
            "the last slot is reachable"
        );
        assert!(
            r.iter().any(|x| x.offset.0 == 0),
            "the first slot is reachable"
        );
        // A span holding one request: every offset is the start.
        let r = records(&SynthSpec {
            start_bytes: 512,
            ..SynthSpec::uniform(10, 4096)
        });
        assert!(r.iter().all(|x| x.offset == Bytes(512)));
    }

    #[test]
    fn write_fraction() {
        let count = |f: f64| {
            let r = records(&SynthSpec {
                write_fraction: Some(f),
                seed: 5,
                ..SynthSpec::uniform(20_000, 1 << 30)
            });
            r.iter().filter(|x| x.op == Op::Write).count()
        };
        assert_eq!(count(1.0), 20_000);
        assert_eq!(count(0.0), 0);
        let w = count(0.3);
        assert!((5_700..6_300).contains(&w), "{w}");
        // The op stream is separate: the offsets and times do not change with the fraction.
        let a = records(&SynthSpec {
            write_fraction: Some(0.3),
            ..SynthSpec::uniform(500, 1 << 30)
        });
        let b = records(&SynthSpec::uniform(500, 1 << 30));
        assert!(a
            .iter()
            .zip(&b)
            .all(|(x, y)| x.offset == y.offset && x.time == y.time));
        assert!(a.iter().zip(&b).any(|(x, y)| x.op != y.op));
    }

    #[test]
    fn same_seed_same_trace_other_seed_other_trace() {
        for spec in [
            SynthSpec::sequential(4096 * 3000),
            SynthSpec::uniform(3000, 1 << 32),
        ] {
            let a = records(&SynthSpec {
                seed: 42,
                ..spec.clone()
            });
            let b = records(&SynthSpec {
                seed: 42,
                ..spec.clone()
            });
            let c = records(&SynthSpec {
                seed: 43,
                ..spec.clone()
            });
            assert_eq!(a, b);
            assert_eq!(a.len(), c.len());
            assert_ne!(a, c);
            // reopen() regenerates the identical stream, even mid-way.
            let mut r = SynthReader::new(&SynthSpec {
                seed: 42,
                ..spec.clone()
            })
            .unwrap();
            for _ in 0..100 {
                r.next_record().unwrap();
            }
            let again = all(&mut *r.reopen().unwrap().unwrap());
            assert_eq!(again, a);
        }
    }

    #[test]
    fn start_limit_and_progress() {
        let spec = SynthSpec {
            seed: 9,
            ..SynthSpec::uniform(1000, 1 << 30)
        };
        let whole = records(&spec);
        let mut r = SynthReader::with_selection(&spec, 100, Some(50)).unwrap();
        assert_eq!(r.progress(), 0.0);
        let mut got = Vec::new();
        while let Some(x) = r.next_record().unwrap() {
            got.push(x);
            if got.len() == 25 {
                assert!((r.progress() - 0.5).abs() < 0.03, "{}", r.progress());
            }
        }
        assert_eq!(r.progress(), 1.0);
        assert_eq!(got, whole[100..150]);
        assert_eq!(got[0].line, 101);
        assert_eq!(all(&mut *r.reopen().unwrap().unwrap()), whole[100..150]);
        // Beyond the end, and a zero limit: nothing.
        assert!(all(&mut SynthReader::with_selection(&spec, 5000, None).unwrap()).is_empty());
        assert!(all(&mut SynthReader::with_selection(&spec, 0, Some(0)).unwrap()).is_empty());
        assert_eq!(
            all(&mut SynthReader::with_selection(&spec, 990, Some(50)).unwrap()),
            whole[990..]
        );
    }

    #[test]
    fn through_open_trace() {
        let synth = SynthSpec {
            seed: 1,
            ..SynthSpec::sequential(4096 * 1000)
        };
        let mut spec = TraceSpec {
            path: "synth:sequential".into(),
            synth: Some(synth.clone()),
            ..Default::default()
        };
        let whole = records(&synth);
        assert_eq!(all(&mut *open_trace(&spec).unwrap()), whole);
        spec.start = 10;
        spec.limit = Some(20);
        let sel = all(&mut *open_trace(&spec).unwrap());
        assert_eq!(sel, whole[10..30]);
        let r = open_trace(&spec).unwrap();
        assert_eq!(all(&mut *r.reopen().unwrap().unwrap()), sel);
        // repeat: the selection again, LBAs unchanged, later in time.
        spec.repeat = 3;
        let rep = all(&mut *open_trace(&spec).unwrap());
        assert_eq!(rep.len(), 60);
        assert!(rep.windows(2).all(|w| w[0].time < w[1].time));
        assert!(rep[20..40]
            .iter()
            .zip(&sel)
            .all(|(a, b)| a.offset == b.offset && a.len == b.len));
        // Options that only make sense for files.
        let s = TraceSpec {
            disk: Some(0),
            ..spec.clone()
        };
        match open_trace(&s).err().unwrap() {
            SimError::Config(m) => assert!(m.contains("disk") && m.contains("synthetic"), "{m}"),
            e => panic!("{e:?}"),
        }
        let s = TraceSpec {
            format: Some(crate::trace::Format::Msr),
            ..spec.clone()
        };
        assert!(matches!(open_trace(&s).err().unwrap(), SimError::Config(_)));
        // An invalid spec fails at open.
        let s = TraceSpec {
            synth: Some(SynthSpec::new(SynthKind::Uniform)),
            ..spec.clone()
        };
        assert!(
            matches!(open_trace(&s).err().unwrap(), SimError::Config(m) if m.contains("needs count"))
        );
    }

    #[test]
    fn validation_errors() {
        let seq = SynthSpec::sequential(1 << 20);
        let uni = SynthSpec::uniform(10, 1 << 20);
        assert!(seq.validate().is_ok() && uni.validate().is_ok());
        for (spec, want) in [
            (
                SynthSpec {
                    request_bytes: 0,
                    ..seq.clone()
                },
                "request_bytes must be positive",
            ),
            (
                SynthSpec {
                    total_bytes: Some(0),
                    ..seq.clone()
                },
                "total_bytes must be positive",
            ),
            (SynthSpec::new(SynthKind::Sequential), "needs total_bytes"),
            (
                SynthSpec {
                    count: Some(5),
                    ..seq.clone()
                },
                "count does not apply to kind sequential",
            ),
            (
                SynthSpec {
                    write_fraction: Some(0.5),
                    ..seq.clone()
                },
                "write_fraction does not apply",
            ),
            (
                SynthSpec {
                    total_bytes: Some(5),
                    ..uni.clone()
                },
                "total_bytes does not apply to kind uniform",
            ),
            (
                SynthSpec {
                    iat_sd_ms: -1.0,
                    ..seq.clone()
                },
                "iat_sd_ms must be a non-negative number, got -1",
            ),
            (
                SynthSpec {
                    iat_mean_ms: f64::NAN,
                    ..seq.clone()
                },
                "iat_mean_ms must be",
            ),
            (
                SynthSpec {
                    iat_mean_ms: -0.5,
                    ..uni.clone()
                },
                "iat_mean_ms must be",
            ),
            (
                SynthSpec {
                    count: Some(0),
                    ..uni.clone()
                },
                "count must be positive",
            ),
            (
                SynthSpec {
                    count: None,
                    ..uni.clone()
                },
                "needs count",
            ),
            (
                SynthSpec {
                    span_bytes: None,
                    ..uni.clone()
                },
                "needs span_bytes",
            ),
            (
                SynthSpec {
                    span_bytes: Some(4095),
                    ..uni.clone()
                },
                "span_bytes (4095) is smaller than request_bytes (4096)",
            ),
            (
                SynthSpec {
                    span_bytes: Some(0),
                    ..uni.clone()
                },
                "span_bytes (0) is smaller",
            ),
            (
                SynthSpec {
                    align_bytes: Some(0),
                    ..uni.clone()
                },
                "align_bytes must be positive",
            ),
            (
                SynthSpec {
                    write_fraction: Some(1.5),
                    ..uni.clone()
                },
                "write_fraction must be between 0 and 1",
            ),
            (
                SynthSpec {
                    write_fraction: Some(f64::NAN),
                    ..uni.clone()
                },
                "write_fraction must be between 0 and 1",
            ),
            (
                SynthSpec {
                    start_bytes: u64::MAX,
                    ..seq.clone()
                },
                "overflows",
            ),
            (
                SynthSpec {
                    start_bytes: u64::MAX,
                    ..uni.clone()
                },
                "overflows",
            ),
        ] {
            let m = config_err(&spec);
            assert!(m.contains(want), "{m} (wanted: {want})");
            assert!(SynthReader::new(&spec).is_err());
        }
    }

    #[test]
    fn serde_shape() {
        let s: SynthSpec =
            serde_json::from_str(r#"{"kind":"sequential","total_bytes":8192}"#).unwrap();
        assert_eq!(s, SynthSpec::sequential(8192));
        assert_eq!(
            (s.request_bytes, s.iat_mean_ms, s.iat_sd_ms, s.seed),
            (4096, 50.0, 10.0, 0)
        );
        let s: SynthSpec = serde_json::from_str(
            r#"{"kind":"uniform","count":3,"span_bytes":65536,"align_bytes":512,"write_fraction":0.5,"seed":2}"#,
        )
        .unwrap();
        assert_eq!(s.align_bytes, Some(512));
        // Round trip.
        let back: SynthSpec = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        // Unknown fields and kinds are rejected.
        let e =
            serde_json::from_str::<SynthSpec>(r#"{"kind":"sequential","total":1}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `total`"), "{e}");
        let e = serde_json::from_str::<SynthSpec>(r#"{"kind":"zipf"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant `zipf`"), "{e}");
        // Inside a TraceSpec.
        let t: TraceSpec = serde_json::from_str(
            r#"{"path":"x","synth":{"kind":"uniform","count":1,"span_bytes":4096}}"#,
        )
        .unwrap();
        assert_eq!(t.synth, Some(SynthSpec::uniform(1, 4096)));
    }

    /// Generated lazily: a reader of ten million requests is as small as one of ten.
    #[test]
    fn streams_without_materialising() {
        let big = SynthReader::new(&SynthSpec::uniform(10_000_000, 1 << 40)).unwrap();
        assert!(std::mem::size_of_val(&big) < 512);
        let mut r = SynthReader::new(&SynthSpec {
            iat_sd_ms: 0.0,
            ..SynthSpec::sequential(4096 * 10_000_000)
        })
        .unwrap();
        let mut n = 0u64;
        let mut last = None;
        while let Some(x) = r.next_record().unwrap() {
            n += 1;
            last = Some(x);
        }
        assert_eq!(n, 10_000_000);
        let last = last.unwrap();
        assert_eq!(last.offset, Bytes(4096 * 9_999_999));
        assert_eq!(last.time, Nanos(9_999_999 * 50_000_000));
    }
}
