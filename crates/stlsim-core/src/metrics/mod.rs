//! What a run measures: host latency histograms (HDR), a per-N-request time
//! series, issue-time disparity, and the final structured report.

use crate::units::Nanos;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Latency summary of one class of requests, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Requests in the class (0: no requests, and every figure below is null).
    pub count: u64,
    /// Mean latency, exact (from the summed nanoseconds, not the histogram).
    pub mean_ms: f64,
    /// Median latency (the histogram's 3 significant digits, as the percentiles below).
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest latency, to the histogram's 3 significant digits.
    pub max_ms: f64,
}

/// One HDR histogram of latencies in nanoseconds, plus an exact sum for the mean.
///
/// A latency equal to the one before it is counted beside the histogram
/// and recorded with its repeats in one go: writes the cache absorbs take
/// the same time when they are the same size, and each recording was a
/// few dozen instructions. The figures are those of recording each.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    sum_ns: u128,
    /// The last latency recorded and how many times in a row, not yet in `hist`.
    repeat: (u64, u64),
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            hist: Histogram::new(3).expect("3 significant figures is valid"),
            sum_ns: 0,
            repeat: (0, 0),
        }
    }
}

impl LatencyHistogram {
    /// One histogram holding the latencies of both: the same counts, sum and
    /// extremes as one that recorded each latency itself.
    pub fn merged(a: &LatencyHistogram, b: &LatencyHistogram) -> LatencyHistogram {
        let mut hist = a.settled().into_owned();
        hist.add(&*b.settled())
            .expect("histograms of one precision that resize merge");
        LatencyHistogram {
            hist,
            sum_ns: a.sum_ns + b.sum_ns,
            repeat: (0, 0),
        }
    }

    /// Count one latency (completion minus issue; the histogram takes a zero as 1 ns).
    #[inline]
    pub fn record(&mut self, lat: Nanos) {
        self.sum_ns += lat.0 as u128;
        let v = lat.0.max(1);
        if v == self.repeat.0 {
            self.repeat.1 += 1;
            return;
        }
        self.settle();
        self.repeat = (v, 1);
    }

    /// Record the pending repeats.
    fn settle(&mut self) {
        let (v, n) = std::mem::take(&mut self.repeat);
        if n > 0 {
            // Auto-resizing histogram: recording cannot fail for u64 values >= 0.
            let _ = self.hist.record_n(v, n);
        }
    }

    /// The histogram with the pending repeats recorded.
    fn settled(&self) -> std::borrow::Cow<'_, Histogram<u64>> {
        let mut h = std::borrow::Cow::Borrowed(&self.hist);
        if self.repeat.1 > 0 {
            let _ = h.to_mut().record_n(self.repeat.0, self.repeat.1);
        }
        h
    }

    /// Latencies recorded, the pending repeats included.
    pub fn count(&self) -> u64 {
        self.hist.len() + self.repeat.1
    }
    /// Count, mean, percentiles and maximum in ms (NaN, serialised as null, when
    /// nothing was recorded).
    pub fn summary(&self) -> LatencySummary {
        let hist = self.settled();
        let n = hist.len();
        if n == 0 {
            // No requests of this class: no figures (serialised as null), not zeros.
            let nan = f64::NAN;
            return LatencySummary {
                count: 0,
                mean_ms: nan,
                p50_ms: nan,
                p90_ms: nan,
                p99_ms: nan,
                p999_ms: nan,
                max_ms: nan,
            };
        }
        let q = |x: f64| hist.value_at_quantile(x) as f64 / 1e6;
        LatencySummary {
            count: n,
            mean_ms: self.sum_ns as f64 / n as f64 / 1e6,
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: hist.max() as f64 / 1e6,
        }
    }
    /// The CDF as (latency ms, cumulative fraction) at every recorded bucket.
    pub fn cdf(&self) -> (Vec<f64>, Vec<f64>) {
        let hist = self.settled();
        let n = hist.len().max(1) as f64;
        let mut xs = vec![];
        let mut ys = vec![];
        for v in hist.iter_recorded() {
            xs.push(hist.highest_equivalent(v.value_iterated_to()) as f64 / 1e6);
            ys.push(v.count_since_last_iteration() as f64);
        }
        let mut acc = 0.0;
        for y in ys.iter_mut() {
            acc += *y;
            *y = acc / n;
        }
        (xs, ys)
    }
}

/// The per-N-request time series, as columns.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Series {
    /// Index of the last request in each bucket (1-based count).
    pub requests: Vec<u64>,
    /// Issue time of that request, seconds.
    pub issue_s: Vec<f64>,
    /// Mean latency over the bucket, ms.
    pub mean_latency_ms: Vec<f64>,
    /// Mean read latency over the bucket, ms (NaN when none).
    pub mean_read_latency_ms: Vec<f64>,
    /// Mean write latency over the bucket, ms (NaN when none).
    pub mean_write_latency_ms: Vec<f64>,
    /// Largest latency in the bucket, ms.
    pub max_latency_ms: Vec<f64>,
    /// Issue-time disparity (issue time minus trace time) at the bucket's end, seconds.
    pub disparity_s: Vec<f64>,
    /// The layer's own gauges at each bucket's end (e.g. persistent-cache
    /// utilisation), one column per gauge, serialised beside the others.
    #[serde(flatten)]
    pub layer: std::collections::BTreeMap<String, Vec<f64>>,
    /// Requests, reads and writes in each bucket (to merge buckets' means).
    #[serde(skip)]
    counts: Vec<[u64; 3]>,
}

impl Series {
    /// Points in the series.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether the series has no point.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Merge each pair of points into one (a last unpaired point stays):
    /// counts and ends from the later, means weighted by the pair's
    /// requests, maxima the larger, the layer's gauges the later's (they
    /// are readings at a bucket's end).
    fn halve(&mut self) {
        let n = self.len();
        let mean = |a: f64, na: u64, b: f64, nb: u64| match (na, nb) {
            (0, _) => b,
            (_, 0) => a,
            _ => (a * na as f64 + b * nb as f64) / (na + nb) as f64,
        };
        let mut k = 0;
        for i in (0..n).step_by(2) {
            let j = (i + 1).min(n - 1);
            let (ci, cj) = (self.counts[i], self.counts[j]);
            let pair = j != i;
            let w = |c: [u64; 3], x: usize| if pair { c[x] } else { 0 };
            self.mean_latency_ms[k] = mean(
                self.mean_latency_ms[i],
                ci[0],
                self.mean_latency_ms[j],
                w(cj, 0),
            );
            self.mean_read_latency_ms[k] = mean(
                self.mean_read_latency_ms[i],
                ci[1],
                self.mean_read_latency_ms[j],
                w(cj, 1),
            );
            self.mean_write_latency_ms[k] = mean(
                self.mean_write_latency_ms[i],
                ci[2],
                self.mean_write_latency_ms[j],
                w(cj, 2),
            );
            self.max_latency_ms[k] = self.max_latency_ms[i].max(self.max_latency_ms[j]);
            self.requests[k] = self.requests[j];
            self.issue_s[k] = self.issue_s[j];
            self.disparity_s[k] = self.disparity_s[j];
            self.counts[k] = if pair {
                [ci[0] + cj[0], ci[1] + cj[1], ci[2] + cj[2]]
            } else {
                ci
            };
            for col in self.layer.values_mut() {
                col[k] = col[j];
            }
            k += 1;
        }
        self.requests.truncate(k);
        self.issue_s.truncate(k);
        self.mean_latency_ms.truncate(k);
        self.mean_read_latency_ms.truncate(k);
        self.mean_write_latency_ms.truncate(k);
        self.max_latency_ms.truncate(k);
        self.disparity_s.truncate(k);
        self.counts.truncate(k);
        for col in self.layer.values_mut() {
            col.truncate(k);
        }
    }

    /// Append the layer's gauges for the bucket just closed (columns that a
    /// sample lacks get NaN, so every column keeps the series' length).
    pub fn push_layer(&mut self, gauges: &[(&'static str, f64)]) {
        let n = self.requests.len();
        for &(k, v) in gauges {
            // Look the column up first: a new key only for a new gauge (no
            // String allocated per sample).
            let col = match self.layer.get_mut(k) {
                Some(col) => col,
                None => self.layer.entry(k.to_string()).or_default(),
            };
            col.resize(n - 1, f64::NAN);
            col.push(v);
        }
        for col in self.layer.values_mut() {
            col.resize(n, f64::NAN);
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Bucket {
    n: u64,
    sum: u128,
    nr: u64,
    sum_r: u128,
    nw: u64,
    sum_w: u128,
    max: u64,
}

/// Write amplification as the run goes: cumulative sector counts every N
/// host writes (as they arrive), so a window's WAF is the ratio of the
/// differences between two points.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WafSeries {
    /// Host write requests arrived so far.
    pub host_writes: Vec<u64>,
    /// Sectors the layer was asked to store so far (direct writes plus destages).
    pub layer_write_sectors: Vec<u64>,
    /// Sectors written to the medium so far (all causes).
    pub media_write_sectors: Vec<u64>,
    /// Of those, sectors written inside stages of background work (moves).
    pub move_write_sectors: Vec<u64>,
}

impl WafSeries {
    /// Append a point of cumulative counts; a point at the same host-write count
    /// as the last is dropped.
    pub fn push(&mut self, host_writes: u64, layer: u64, media: u64, moves: u64) {
        if self.host_writes.last() == Some(&host_writes) {
            return;
        }
        self.host_writes.push(host_writes);
        self.layer_write_sectors.push(layer);
        self.media_write_sectors.push(media);
        self.move_write_sectors.push(moves);
    }

    /// WAF between the point nearest `from` of the run's host writes and the
    /// last point (`None` when that point is the run's start — too few
    /// points to leave a warm-up out — or the window stored nothing).
    pub fn waf_from(&self, from: f64) -> Option<f64> {
        let n = self.host_writes.len();
        if n < 3 {
            return None;
        }
        let total = self.host_writes[n - 1] as f64;
        let i = (1..n - 1).min_by(|&a, &b| {
            let da = (self.host_writes[a] as f64 - from * total).abs();
            let db = (self.host_writes[b] as f64 - from * total).abs();
            da.total_cmp(&db)
        })?;
        let stored = self.layer_write_sectors[n - 1] - self.layer_write_sectors[i];
        (stored > 0).then(|| {
            (self.media_write_sectors[n - 1] - self.media_write_sectors[i]) as f64 / stored as f64
        })
    }
}

/// Points a run's time series holds at most (before its pairs are merged):
/// 10 M requests at the default point every 1,000, about 2 MB; without a
/// cap a 50 M-request run's series was most of its memory's growth.
pub const MAX_SERIES_POINTS: usize = 10_000;

/// Live host-side metrics of a run.
#[derive(Clone, Debug)]
pub struct HostMetrics {
    /// Latencies of host reads (issue to completion).
    pub reads: LatencyHistogram,
    /// Latencies of host writes (issue to acknowledgement, which a write cache
    /// may give before the data reach the media).
    pub writes: LatencyHistogram,
    /// One point per `series_every` requests (pairs merged past `MAX_SERIES_POINTS`).
    pub series: Series,
    every: u64,
    /// Points the series may hold before its pairs are merged.
    max_points: usize,
    bucket: Bucket,
    done: u64,
    /// Largest issue-time disparity (issue time minus trace time) seen so far.
    pub max_disparity: Nanos,
    /// Disparity of the request recorded last.
    pub last_disparity: Nanos,
    last_issue: Nanos,
    /// Device time at which the run's clock reads zero (the end of a history).
    origin: Nanos,
}

impl HostMetrics {
    /// Metrics with a series point every `every` requests.
    pub fn new(every: u64) -> HostMetrics {
        HostMetrics {
            reads: LatencyHistogram::default(),
            writes: LatencyHistogram::default(),
            series: Series::default(),
            every: every.max(1),
            max_points: MAX_SERIES_POINTS,
            bucket: Bucket::default(),
            done: 0,
            max_disparity: Nanos::ZERO,
            last_disparity: Nanos::ZERO,
            last_issue: Nanos::ZERO,
            origin: Nanos::ZERO,
        }
    }

    /// Metrics of a run whose clock reads zero at device time `origin`
    /// (a run that starts after a history): the series' issue times count from it.
    pub fn starting_at(every: u64, origin: Nanos) -> HostMetrics {
        HostMetrics {
            origin,
            ..HostMetrics::new(every)
        }
    }

    /// All requests: the reads' and the writes' histograms merged when
    /// asked for, rather than a third histogram recorded on every request
    /// (a histogram record was a twentieth of the engine's time).
    pub fn all(&self) -> LatencyHistogram {
        LatencyHistogram::merged(&self.reads, &self.writes)
    }

    /// Count one completed request; true when it closed a series point.
    #[inline(always)]
    pub fn record(&mut self, write: bool, issue: Nanos, complete: Nanos, disparity: Nanos) -> bool {
        let lat = complete.saturating_sub(issue);
        let b = &mut self.bucket;
        b.n += 1;
        b.sum += lat.0 as u128;
        b.max = b.max.max(lat.0);
        if write {
            self.writes.record(lat);
            b.nw += 1;
            b.sum_w += lat.0 as u128;
        } else {
            self.reads.record(lat);
            b.nr += 1;
            b.sum_r += lat.0 as u128;
        }
        self.done += 1;
        self.last_issue = issue;
        self.last_disparity = disparity;
        if disparity > self.max_disparity {
            self.max_disparity = disparity;
        }
        b.n >= self.every && self.flush_bucket()
    }

    /// Close the current series bucket (at the end of a run); true when it
    /// made a series point.
    pub fn flush_bucket(&mut self) -> bool {
        let b = std::mem::take(&mut self.bucket);
        if b.n == 0 {
            return false;
        }
        // A long run's series stays bounded: at the cap, each pair of points
        // becomes one and buckets grow twice as long (done here, before the
        // new point, when the layer's gauges of the last one are in).
        if self.series.len() >= self.max_points {
            self.series.halve();
            self.every *= 2;
        }
        let mean = |s: u128, n: u64| {
            if n == 0 {
                f64::NAN
            } else {
                s as f64 / n as f64 / 1e6
            }
        };
        let s = &mut self.series;
        s.requests.push(self.done);
        s.issue_s
            .push(self.last_issue.saturating_sub(self.origin).as_secs());
        s.mean_latency_ms.push(mean(b.sum, b.n));
        s.mean_read_latency_ms.push(mean(b.sum_r, b.nr));
        s.mean_write_latency_ms.push(mean(b.sum_w, b.nw));
        s.max_latency_ms.push(b.max as f64 / 1e6);
        s.disparity_s.push(self.last_disparity.as_secs());
        s.counts.push([b.n, b.nr, b.nw]);
        true
    }

    /// Requests per series point now (the asked-for figure, doubled each
    /// time the series reached its cap).
    pub fn series_every(&self) -> u64 {
        self.every
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The merged histogram of reads and writes is the one a third
        /// histogram recording every request would hold: same summary, CDF,
        /// count and sum.
        #[test]
        fn all_merged_from_reads_and_writes_is_all_recorded(
            reqs in proptest::collection::vec((proptest::bool::ANY, 0u64..1u64 << 45), 0..300)
        ) {
            let mut m = HostMetrics::new(7);
            let mut all = LatencyHistogram::default();
            for &(write, lat) in &reqs {
                m.record(write, Nanos(1_000), Nanos(1_000 + lat), Nanos::ZERO);
                all.record(Nanos(lat));
            }
            let merged = m.all();
            proptest::prop_assert_eq!(merged.count(), all.count());
            proptest::prop_assert_eq!(merged.sum_ns, all.sum_ns);
            proptest::prop_assert_eq!(merged.cdf(), all.cdf());
            let (a, b) = (merged.summary(), all.summary());
            proptest::prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
    }

    proptest::proptest! {
        /// Repeats counted beside the histogram give the figures of a
        /// histogram that recorded every latency, whenever they are read.
        #[test]
        fn repeats_recorded_together_are_each_recorded(
            lats in proptest::collection::vec(proptest::prop_oneof![0u64..4, 0u64..1u64 << 40], 1..200),
            read_at in 0usize..200,
        ) {
            let mut h = LatencyHistogram::default();
            let mut plain = Histogram::<u64>::new(3).unwrap();
            for (i, &l) in lats.iter().enumerate() {
                h.record(Nanos(l));
                plain.record(l.max(1)).unwrap();
                if i == read_at {
                    proptest::prop_assert_eq!(h.count(), plain.len());
                }
            }
            proptest::prop_assert_eq!(h.count(), plain.len());
            proptest::prop_assert_eq!(h.sum_ns, lats.iter().map(|&l| l as u128).sum::<u128>());
            let s = h.summary();
            proptest::prop_assert_eq!(s.max_ms, plain.max() as f64 / 1e6);
            proptest::prop_assert_eq!(s.p99_ms, plain.value_at_quantile(0.99) as f64 / 1e6);
            proptest::prop_assert_eq!(s.p50_ms, plain.value_at_quantile(0.5) as f64 / 1e6);
            let merged = LatencyHistogram::merged(&h, &h);
            proptest::prop_assert_eq!(merged.count(), 2 * plain.len());
            let mut twice = plain.clone();
            twice.add(&plain).unwrap();
            proptest::prop_assert_eq!(merged.summary().p90_ms, twice.value_at_quantile(0.9) as f64 / 1e6);
            let n = plain.len() as f64;
            let mut acc = 0.0;
            let mut want_cdf = (vec![], vec![]);
            for v in plain.iter_recorded() {
                want_cdf.0.push(plain.highest_equivalent(v.value_iterated_to()) as f64 / 1e6);
                acc += v.count_since_last_iteration() as f64;
                want_cdf.1.push(acc / n);
            }
            proptest::prop_assert_eq!(h.cdf(), want_cdf);
        }
    }

    #[test]
    fn summary_and_cdf_agree_with_recorded_values() {
        let mut h = LatencyHistogram::default();
        for ms in 1..=1000u64 {
            h.record(Nanos(ms * 1_000_000));
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert!((s.mean_ms - 500.5).abs() < 1e-9);
        assert!((s.p50_ms - 500.0).abs() / 500.0 < 0.002, "{}", s.p50_ms);
        assert!((s.p99_ms - 990.0).abs() / 990.0 < 0.002, "{}", s.p99_ms);
        assert!((s.max_ms - 1000.0).abs() / 1000.0 < 0.002);
        let (xs, ys) = h.cdf();
        assert_eq!(xs.len(), ys.len());
        assert!((ys.last().unwrap() - 1.0).abs() < 1e-12);
        assert!(ys.windows(2).all(|w| w[1] >= w[0]));
    }

    #[test]
    fn waf_series_windows_from_a_point() {
        let mut w = WafSeries::default();
        w.push(0, 0, 0, 0);
        w.push(10, 100, 300, 50);
        w.push(20, 200, 400, 50);
        w.push(20, 200, 400, 50); // duplicate point ignored
        assert_eq!(w.host_writes, vec![0, 10, 20]);
        // From the middle: (400 - 300) / (200 - 100).
        assert_eq!(w.waf_from(0.5), Some(1.0));
        // The run's start is never a window's start: a warm-up is always left out.
        assert_eq!(w.waf_from(0.0), Some(1.0));
        let mut short = WafSeries::default();
        short.push(0, 0, 0, 0);
        short.push(5, 10, 20, 0);
        assert_eq!(short.waf_from(0.5), None);
    }

    proptest::proptest! {
        /// A series capped at a few points is the series of longer buckets:
        /// each point's request count, means (of all, reads and writes),
        /// maximum and end are those of the requests it covers, recomputed
        /// here from the latencies themselves.
        #[test]
        fn a_capped_series_is_the_series_of_longer_buckets(
            lats in proptest::collection::vec((proptest::bool::ANY, 1u64..5_000_000), 1..3000),
            every in 1u64..20,
            cap in 2usize..12,
        ) {
            let mut m = HostMetrics::new(every);
            m.max_points = cap;
            let mut t = 0;
            for &(write, lat) in &lats {
                t += 1000;
                m.record(write, Nanos(t), Nanos(t + lat), Nanos(0));
            }
            m.flush_bucket();
            let s = &m.series;
            proptest::prop_assert!(s.len() <= cap);
            proptest::prop_assert_eq!(*s.requests.last().unwrap(), lats.len() as u64);
            let mut from = 0usize;
            for k in 0..s.len() {
                let to = s.requests[k] as usize;
                let part = &lats[from..to];
                let mean = |f: &dyn Fn(bool) -> bool| {
                    let v: Vec<f64> = part.iter().filter(|p| f(p.0)).map(|p| p.1 as f64 / 1e6).collect();
                    if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 }
                };
                let close = |a: f64, b: f64| (a.is_nan() && b.is_nan()) || (a - b).abs() < 1e-9 * b.abs().max(1.0);
                proptest::prop_assert!(close(s.mean_latency_ms[k], mean(&|_| true)), "point {}", k);
                proptest::prop_assert!(close(s.mean_read_latency_ms[k], mean(&|w| !w)), "point {}", k);
                proptest::prop_assert!(close(s.mean_write_latency_ms[k], mean(&|w| w)), "point {}", k);
                let max = part.iter().map(|p| p.1).max().unwrap() as f64 / 1e6;
                proptest::prop_assert_eq!(s.max_latency_ms[k], max);
                proptest::prop_assert_eq!(s.issue_s[k], (to as u64 * 1000) as f64 / 1e9);
                from = to;
            }
        }
    }

    #[test]
    fn series_buckets_every_n() {
        let mut m = HostMetrics::new(10);
        for i in 0..25u64 {
            m.record(
                i % 2 == 0,
                Nanos(i * 1000),
                Nanos(i * 1000 + 2_000_000),
                Nanos(i),
            );
        }
        m.flush_bucket();
        assert_eq!(m.series.requests, vec![10, 20, 25]);
        assert!(m
            .series
            .mean_latency_ms
            .iter()
            .all(|&x| (x - 2.0).abs() < 1e-9));
        assert_eq!(m.max_disparity, Nanos(24));
    }
}
