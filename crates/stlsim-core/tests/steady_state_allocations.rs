//! No allocation per request in steady state (issue 14): the host path and
//! every registered layer's write path, counted with a global allocator that
//! wraps the system one (this test is its own process, so the allocator is
//! only this binary's).
//!
//! Each case replays a write-heavy pattern of [`PATTERN`] requests (three
//! writes to one read, 4 to 64 KiB, random with sequential runs, over a
//! fixed address span) again and again, with advancing timestamps and a
//! pause every thousand requests so background work (destaging, cleaning,
//! moves) runs too. The first [`WARM_UP`] requests are the warm-up; the
//! allocations (`alloc`, `alloc_zeroed` and `realloc` calls; frees are not
//! counted) made while the next [`MEASURED`] requests are replayed must stay
//! at or below [`BOUND`].
//!
//! The bound is amortised, not per request (100 in 100,000 requests, one
//! per thousand): a steady-state run still grows the vectors that keep a
//! point every N requests (the time series: every `series_every` = 1,000
//! requests; the WAF series: every 10,000 writes), each doubling now and
//! then (about 11 allocations in every case), a latency histogram may
//! widen, and a reused buffer may meet a record, extent list or queue
//! longer than any before (11 to 26 in all, measured). Everything touched for the first time (a track's row in the
//! medium, a layer's map entry for a new track, a log's fresh tracks) may
//! also allocate, which is why the warm-up replays the same addresses the
//! measured window does: the window touches nothing new.
//!
//! Each layer family runs on a drive like the benches' (see `case`): the
//! IMR layers and `cmr` on `imr-paper` (queue mode, 100 MiB write cache),
//! the shingled mappings of paper 002 on `swd-paper` (75 % prefilled,
//! scaled mode), paper 003's layers on a `dmsmr-5tb`-like drive with a
//! 1 GiB persistent cache so the warm-up wraps its log and the window
//! cleans bands (flat-out, no write cache), paper 004's buffer layers on an
//! Exos X18z-like zoned drive, and paper 001's hybrid layers on
//! `hwsr-paper` (queue depth 1) over a 512 MiB span, so their logs and
//! buffers wrap within the warm-up too.
//!
//! The records are built before the window and fed by a `VecTrace`, which
//! copies one out per request without allocating. The trace is longer than
//! warm-up plus window, so the window never reaches the end of the run.
//!
//! `cargo test --release -p stlsim-core --test steady_state_allocations -- --nocapture`
//! prints each case's count. To find where a window allocates, set
//! `STLSIM_ALLOC_BACKTRACES=N`: the first N allocations of each window print
//! a backtrace (build with `CARGO_PROFILE_RELEASE_DEBUG=1` for line numbers);
//! `STLSIM_ALLOC_ONLY=layer` measures that layer only.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use stlsim_core::engine::{LayerConfig, Mode, RunConfig};
use stlsim_core::layers::REGISTRY;
use stlsim_core::medium::prefill::PrefillSpec;
use stlsim_core::trace::{Op, TraceRecord, VecTrace};
use stlsim_core::units::{Bytes, Nanos};
use stlsim_core::Simulation;

#[path = "common/drives.rs"]
mod drives;
use drives::for_layer;

/// Allocations allowed in [`MEASURED`] steady-state requests (amortised
/// growth of the run's series; see the module comment).
const BOUND: u64 = 100;
/// Requests replayed before the measured window.
const WARM_UP: u64 = 200_000;
/// Requests in the measured window.
const MEASURED: u64 = 100_000;
/// Distinct requests in the repeated pattern (warm-up and window are whole
/// passes over it, so both touch the same addresses).
const PATTERN: u64 = 20_000;

// ---- the counting allocator ----

struct Counting;

thread_local! {
    /// Whether this thread's allocations are being counted (the measured window).
    static ON: Cell<bool> = const { Cell::new(false) };
    /// Allocations this thread made while counting.
    static COUNT: Cell<u64> = const { Cell::new(0) };
    /// Backtraces still to print in this window (diagnosis only).
    static TRACES: Cell<u64> = const { Cell::new(0) };
}

/// Count an allocation if this thread is measuring. Thread-local, so test
/// cases running side by side in other threads never count here.
#[inline]
fn note(size: usize) {
    let _ = ON.try_with(|on| {
        if on.get() {
            COUNT.with(|c| c.set(c.get() + 1));
            if TRACES.with(|t| t.get()) > 0 {
                TRACES.with(|t| t.set(t.get() - 1));
                // Capturing a backtrace allocates: not counted.
                on.set(false);
                let bt = std::backtrace::Backtrace::force_capture();
                eprintln!("allocation of {size} bytes in the measured window:\n{bt}");
                on.set(true);
            }
        }
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size());
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size());
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(p, l, new_size)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Allocations this thread makes while `f` runs.
fn allocations_during(f: impl FnOnce()) -> u64 {
    let traces = std::env::var("STLSIM_ALLOC_BACKTRACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    TRACES.with(|t| t.set(traces));
    COUNT.with(|c| c.set(0));
    ON.with(|on| on.set(true));
    f();
    ON.with(|on| on.set(false));
    COUNT.with(|c| c.get())
}

// ---- the workload ----

/// How a case's requests arrive and where they go.
#[derive(Clone, Copy)]
struct Workload {
    /// The address span in bytes the pattern covers (from offset 0).
    span: u64,
    /// Time between requests: request `g` arrives at `g * gap`, plus the pauses.
    gap: Nanos,
    /// An extra pause after every 1,000 requests (idle time for background work).
    pause: Nanos,
}

/// The pattern's request `i`: (write, offset, length), in bytes.
fn pattern(i: u64, span: u64) -> (bool, u64, u64) {
    // A fixed mix (SplitMix64 of the index): the same every pass.
    let mut x = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let len = [4096u64, 8192, 16384, 65536][(x & 3) as usize];
    let write = !(x >> 2).is_multiple_of(4);
    let blocks = span / 4096 - 16;
    // One request in eight continues the previous one (a sequential run).
    let offset = if (x >> 8).is_multiple_of(8) && i > 0 {
        let (_, o, n) = pattern(i - 1, span);
        (o + n) % (blocks * 4096)
    } else {
        ((x >> 16) % blocks) * 4096
    };
    (write, offset, len)
}

/// `n` records: the pattern repeated, timestamps advancing throughout.
fn records(n: u64, w: Workload) -> Vec<TraceRecord> {
    let one: Vec<(bool, u64, u64)> = (0..PATTERN).map(|i| pattern(i, w.span)).collect();
    (0..n)
        .map(|g| {
            let (write, offset, len) = one[(g % PATTERN) as usize];
            TraceRecord {
                time: Nanos(g * w.gap.0 + (g / 1000) * w.pause.0),
                op: if write { Op::Write } else { Op::Read },
                offset: Bytes(offset),
                len: Bytes(len),
                line: g + 1,
            }
        })
        .collect()
}

/// Allocations while the run replays its [`MEASURED`] requests after [`WARM_UP`].
fn measure(name: &str, cfg: RunConfig, w: Workload) -> u64 {
    let recs = records(WARM_UP + MEASURED + PATTERN, w);
    let mut s = Simulation::with_reader(cfg, Box::new(VecTrace::new(recs))).unwrap();
    assert!(!s.step(WARM_UP).unwrap(), "{name}: warm-up ended the run");
    let before = s.requests_done();
    let n = allocations_during(|| {
        assert!(!s.step(MEASURED).unwrap());
    });
    assert_eq!(s.requests_done() - before, MEASURED, "{name}");
    println!("{name}: {n} allocations in {MEASURED} steady-state requests");
    n
}

/// A layer's case: its family's drive and replay, as the benches run it.
fn case(layer: &str) -> (RunConfig, Workload) {
    let ms = |x: u64| Nanos(x * 1_000_000);
    let mut cfg = RunConfig {
        layer: LayerConfig {
            name: layer.into(),
            ..Default::default()
        },
        ..Default::default()
    };
    // Metrics on (always), verification off: the hot path as users run it.
    let mut w = Workload {
        span: 8 << 30,
        gap: ms(1),
        pause: ms(500),
    };
    cfg.drive = for_layer(layer);
    if layer == "swd" || layer.starts_with("swd-") {
        // Paper 002's usage level: a 75 % prefilled drive, LBAs folded into it.
        cfg.replay.mode = Mode::Scaled;
        cfg.replay.prefill = Some(PrefillSpec::Fraction(0.75));
        cfg.replay.fold_to_prefill = true;
        w = Workload {
            span: 512 << 20,
            gap: ms(40),
            pause: ms(2000),
        };
    } else if layer.starts_with("smr-") {
        // A 1 GiB persistent cache instead of 24 GB: the warm-up wraps its
        // log (with 24 GB it would still be writing fresh log tracks, first
        // touches, after millions of requests), and the window cleans bands.
        cfg.drive.layout.cache_mib = Some(1024.0);
        cfg.replay.mode = Mode::FlatOut;
        cfg.replay.write_cache = Some(false);
    } else if ["buffered-cmr", "sblock", "hwsr"].contains(&layer) {
        // A span the hybrid layers' S-block logs wrap in within the
        // warm-up (with 8 GiB, fresh log tracks for much longer).
        cfg.replay.queue_depth = 1;
        w.span = 512 << 20;
    }
    (cfg, w)
}

// ---- the tests ----

/// The host path: the CMR layer in queue mode with the write cache on,
/// metrics on, verification off.
#[test]
fn the_host_path_allocates_nothing_per_request() {
    let (mut cfg, w) = case("cmr");
    cfg.replay.write_cache = Some(true);
    let n = measure("host path (cmr, queue, cache on)", cfg, w);
    assert!(n <= BOUND, "host path: {n} allocations > {BOUND}");
}

/// Every registered layer on its family's drive.
#[test]
fn every_layer_allocates_nothing_per_request() {
    let mut over = vec![];
    let only = std::env::var("STLSIM_ALLOC_ONLY").ok();
    for e in REGISTRY {
        if only.as_deref().is_some_and(|o| o != e.name) {
            continue;
        }
        let (cfg, w) = case(e.name);
        let n = measure(e.name, cfg, w);
        if n > BOUND {
            over.push(format!("{}: {n}", e.name));
        }
    }
    assert!(
        over.is_empty(),
        "allocations per {MEASURED} steady-state requests above {BOUND}: {}",
        over.join(", ")
    );
}
