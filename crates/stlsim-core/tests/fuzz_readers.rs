//! Every trace reader fed mutated real files: no panic, no runaway memory, no
//! hang, and every error one line naming the file (and, for a malformed
//! record, its line, or for a binary file its record number).
//!
//! For each format a seed input is taken from a real sample in `tests/data`
//! (the first 100-200 lines or records), or, where the repository holds no
//! sample of the format, built from the records of a real one (`wdev_3.csv`,
//! `wsrch-small.trace.gz`, `iolog_8G.log.gz`); the `stlt` seed is the first
//! 120 `rsrch_1.csv` records written by the crate's binary writer, in three
//! blocks. Each case
//! applies one to four seeded mutations (bit flips, byte inserts and deletes,
//! duplicated, dropped, swapped, cut and spliced lines, lines from other
//! formats, fields replaced by extremes such as `18446744073709551615`, `-1`,
//! `1e308`, `NaN`, empty, hundreds of digits or non-UTF-8 bytes, runs of
//! delimiters, lines of about 1 MiB; for the binary formats words set to
//! extremes at record fields, block counts and header lengths) and reads the
//! whole input through `open_reader`, once with the format named and once
//! with the format left to detection, under `catch_unwind`.
//!
//! Per read: no panic; the reader ends (it returns no more records than the
//! input has lines, or records for a binary format, and a watchdog aborts
//! the run, naming the case, if one case takes more than two minutes); the
//! peak of memory allocated by the reading thread stays under 64 MiB
//! (`STLSIM_FUZZ_MEMORY_MIB` sets another bound) and nothing is left
//! allocated once the reader is dropped; every
//! record's line is within the input and increasing (text formats); an error
//! is at most 1,000 characters on one line and names the file, and a
//! `TraceFormat` error names a line within the input (1 ..= its lines; for a
//! binary file a record number within it).
//!
//! Cases per reader: `STLSIM_FUZZ_CASES` (default 1,000, the default test
//! run, a few seconds for all readers). `scripts/fuzz-readers.sh` runs
//! 100,000 per reader in release mode. Case `i` of a reader is always the
//! same input; a failing input is written to
//! `target/tmp/fuzz-readers/<reader>-<case>.bin` and
//! `STLSIM_FUZZ_ONLY=<reader>:<case>` reruns just that case.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::io::{Cursor, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use stlsim_core::error::SimError;
use stlsim_core::trace::binary::BinaryWriter;
use stlsim_core::trace::open::open_reader;
use stlsim_core::trace::{Format, GenericCsv, Op, TimeUnit, TraceRecord, TraceSpec};
use stlsim_core::units::{Bytes, Nanos};

// ---------------------------------------------------------------------------
// Memory: a global allocator counting, per thread, the bytes live and their
// peak (the readers run on the test's own thread; tests run in parallel, so a
// process-wide count would mix them).

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get().wrapping_add(delta);
        live.set(now);
        let _ = PEAK.try_with(|p| {
            if now > p.get() {
                p.set(now)
            }
        });
    });
}

/// A single request above this is refused (the process then aborts with
/// "memory allocation of N bytes failed"): no reader has a reason for it.
const HUGE: usize = 1 << 30;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.size() > HUGE {
            return std::ptr::null_mut();
        }
        let p = System.alloc(l);
        if !p.is_null() {
            count(l.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if l.size() > HUGE {
            return std::ptr::null_mut();
        }
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            count(l.size() as isize);
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > HUGE {
            return std::ptr::null_mut();
        }
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            count(new as isize - l.size() as isize);
        }
        q
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        count(-(l.size() as isize));
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The most bytes the calling thread had live at once while `f` ran, above
/// what it had before, and the bytes still live after it (above the same).
fn peak_during<T>(f: impl FnOnce() -> T) -> (usize, isize, T) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (
        PEAK.with(Cell::get).saturating_sub(base).max(0) as usize,
        LIVE.with(Cell::get) - base,
        out,
    )
}

/// The peak memory one read of one input may reach: 64 MiB, or
/// `STLSIM_FUZZ_MEMORY_MIB`.
fn memory_bound() -> usize {
    static B: OnceLock<usize> = OnceLock::new();
    *B.get_or_init(|| {
        std::env::var("STLSIM_FUZZ_MEMORY_MIB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(64)
            << 20
    })
}

// ---------------------------------------------------------------------------
// A small deterministic generator (SplitMix64).

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

fn case_seed(name: &str, case: u64) -> u64 {
    // FNV-1a of the name, then the case mixed in.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

// ---------------------------------------------------------------------------
// Seeds.

fn data(name: &str) -> String {
    format!("{}/../../tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The first `n` lines (with their line ends) of a file, gunzipped if `.gz`.
fn first_lines(name: &str, n: usize) -> Vec<u8> {
    let file = std::fs::File::open(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut text = Vec::new();
    if name.ends_with(".gz") {
        flate2::read::MultiGzDecoder::new(file)
            .take(1 << 20)
            .read_to_end(&mut text)
            .unwrap();
    } else {
        file.take(1 << 20).read_to_end(&mut text).unwrap();
    }
    let end = memchr_nth(&text, n).unwrap_or(text.len());
    text.truncate(end);
    text
}

/// The position just after the `n`-th line end.
fn memchr_nth(text: &[u8], n: usize) -> Option<usize> {
    text.iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .nth(n - 1)
        .map(|(i, _)| i + 1)
}

/// Requests of a real trace, as plain numbers, to lay out in other formats.
struct Req {
    time_ns: u64,
    device: u64,
    offset: u64,
    len: u64,
    read: bool,
}

/// MSR lines (`ticks,host,disk,Read|Write,offset,size,resp`) as requests,
/// times relative to the first.
fn msr_requests(name: &str, n: usize) -> Vec<Req> {
    let text = String::from_utf8(first_lines(name, n)).unwrap();
    let mut v: Vec<Req> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Req {
                time_ns: f[0].parse::<u64>().unwrap() * 100,
                device: f[2].parse().unwrap(),
                offset: f[4].parse().unwrap(),
                len: f[5].parse().unwrap(),
                read: f[3] == "Read",
            }
        })
        .collect();
    let t0 = v[0].time_ns;
    for r in &mut v {
        r.time_ns -= t0;
    }
    v
}

/// MQSim lines (`ns device lba sectors type`) as requests.
fn mqsim_requests(n: usize) -> Vec<Req> {
    let text = String::from_utf8(first_lines("wsrch-small.trace.gz", n)).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<u64> = l
                .split_ascii_whitespace()
                .map(|w| w.parse().unwrap())
                .collect();
            Req {
                time_ns: f[0],
                device: f[1],
                offset: f[2] * 512,
                len: f[3] * 512,
                read: f[4] == 1,
            }
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    /// Fixed-size binary records of this many bytes (vscsi v1).
    Records(usize),
    /// stlsim's own binary trace (`.stlt`), records in blocks of columns.
    Stlt,
}

struct Target {
    name: &'static str,
    format: Format,
    /// The column layout, for `Format::Csv`.
    csv: Option<GenericCsv>,
    kind: Kind,
    seed: Vec<u8>,
}

fn csv_layout() -> GenericCsv {
    GenericCsv {
        time_col: 3,
        time_unit: TimeUnit::Us,
        op_col: 2,
        offset_col: 1,
        offset_unit_bytes: 512,
        size_col: 0,
        size_unit_bytes: 1,
        read_values: vec!["1".into()],
        write_values: vec!["0".into()],
        delimiter: ';',
        header: true,
        device_col: Some(4),
        whitespace: false,
    }
}

/// `rsrch_1.csv`'s first 120 requests in stlsim's binary form, in three
/// blocks of 40 records: each written by the crate's binary writer (whose
/// blocks hold 65,536 records), their blocks (each with its checksum) then
/// put in one file behind one header, and a new end with its checksum.
fn stlt_seed() -> Vec<u8> {
    let reqs = msr_requests("rsrch_1.csv", 120);
    let header = r#"{"source":"rsrch_1.csv","format":"msr"}"#;
    let mut out = Vec::new();
    for (part, chunk) in reqs.chunks(40).enumerate() {
        let mut w = BinaryWriter::new(Vec::new(), header).unwrap();
        for (i, r) in chunk.iter().enumerate() {
            let rec = TraceRecord {
                time: Nanos(r.time_ns),
                op: if r.read { Op::Read } else { Op::Write },
                offset: Bytes(r.offset),
                len: Bytes(r.len),
                line: (part * 40 + i) as u64 + 1,
            };
            w.push(&rec, Some(r.device)).unwrap();
        }
        let bytes = w.finish().unwrap().1;
        // Magic, header and its checksum once, then each file's block (without
        // its end marker, count and their checksum).
        let start = if part == 0 { 0 } else { 12 + header.len() + 4 };
        out.extend_from_slice(&bytes[start..bytes.len() - 16]);
    }
    let mut end = [0u8; 12];
    end[4..].copy_from_slice(&(reqs.len() as u64).to_le_bytes());
    out.extend_from_slice(&end);
    out.extend_from_slice(&crc32fast::hash(&end).to_le_bytes());
    out
}

/// Where the blocks of a binary trace start, and their record counts (as
/// far as the counts lead without leaving the file).
fn stlt_blocks(b: &[u8]) -> Vec<(usize, usize)> {
    let word = |at: usize| {
        b.get(at..at + 4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()) as usize)
    };
    let mut v = Vec::new();
    let Some(h) = word(8) else { return v };
    let mut at = 12 + h + 4;
    while let Some(n) = word(at) {
        if n == 0 || n > 65_536 || at + 4 + 41 * n + 4 > b.len() {
            break;
        }
        v.push((at, n));
        at += 4 + 41 * n + 4;
    }
    v
}

/// Make the checksums of a (mutated) binary trace right again where its
/// structure still leads to them, so a mutation reaches the decoding behind
/// the checks and not only the checks.
fn fix_stlt_checksums(b: &mut [u8]) {
    if let Some(h) = b
        .get(8..12)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()) as usize)
    {
        if 12 + h + 4 <= b.len() {
            let crc = crc32fast::hash(&b[8..12 + h]);
            b[12 + h..16 + h].copy_from_slice(&crc.to_le_bytes());
        }
    }
    for (at, n) in stlt_blocks(b) {
        let end = at + 4 + 41 * n;
        let crc = crc32fast::hash(&b[at..end]);
        b[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    }
}

fn targets() -> &'static [Target] {
    static T: OnceLock<Vec<Target>> = OnceLock::new();
    T.get_or_init(|| {
        let wdev = msr_requests("wdev_3.csv", 150);
        let mq = mqsim_requests(150);
        let lines = |f: &dyn Fn(&Req) -> String, reqs: &[Req]| -> String { reqs.iter().map(f).collect() };
        let rw = |r: &Req| if r.read { "R" } else { "W" };
        let spc = lines(&|r| format!("{},{},{},{},{}.{:06}\n", r.device, r.offset / 512, r.len, if r.read { "r" } else { "w" }, r.time_ns / 1_000_000_000, r.time_ns / 1000 % 1_000_000), &wdev);
        let csv = "size;lba;type;ts;dev\n".to_string()
            + &lines(&|r| format!("{};{};{};{}.{};{}\n", r.len, r.offset / 512, u8::from(!r.read), r.time_ns / 1000, r.time_ns % 1000 / 100, r.device), &wdev);
        let systor = "Timestamp,Response,IOType,LUN,Offset,Size\n".to_string()
            + &lines(&|r| format!("{}.{:06},0.000{},{},{},{},{}\n", 1_485_353_461 + r.time_ns / 1_000_000_000, r.time_ns / 1000 % 1_000_000, r.len % 997, rw(r), r.device, r.offset, r.len), &wdev);
        let alibaba = lines(&|r| format!("{},{},{},{},{}\n", 419 + r.device, rw(r), r.offset, r.len, 1_577_808_000_000_171 + r.time_ns / 1000), &wdev);
        let tencent = lines(&|r| format!("{},{},{},{},{}\n", 1_538_323_200 + r.time_ns / 1_000_000_000, r.offset / 512, r.len / 512, u8::from(!r.read), 1283 + r.device), &wdev);
        let fiu = lines(
            &|r| format!("{} 4485 syslogd {} {} {} 8 {} {:016x}{:016x}\n", 89_967_404_324_372 + r.time_ns, r.offset / 512, r.len / 512, rw(r), r.device, r.offset, r.len),
            &wdev,
        );
        let disksim = lines(&|r| format!("{}.{:06} {} {} {} {:x}\n", r.time_ns / 1_000_000, r.time_ns % 1_000_000, r.device, r.offset / 512, r.len / 512, u8::from(r.read)), &mq);
        let fio2 = first_lines("iolog_8G.log.gz", 150);
        let mut fio3 = b"fio version 3 iolog\n".to_vec();
        for (i, l) in String::from_utf8(fio2.clone()).unwrap().lines().skip(1).enumerate() {
            fio3.extend(format!("{} {l}\n", 872 + i * 137).bytes());
        }
        let mut blk = first_lines("blktrace.txt.gz", 200);
        blk.extend_from_slice(b"CPU0 (8,16):\n Reads Queued:           2,       68KiB\t Writes Queued:         150,   23,312KiB\nTotal (8,16):\n");
        let mut cp = first_lines("cloudPhysicsIO.csv", 150);
        // A read among the writes.
        cp.extend_from_slice(b"1,5633899,28,4096,42932800\n");
        let vscsi = std::fs::read(data("cloudPhysicsIO.vscsi")).unwrap()[..32 * 150].to_vec();
        let t = |name, format, kind, seed: Vec<u8>| Target { name, format, csv: None, kind, seed };
        vec![
            t("msr", Format::Msr, Kind::Text, first_lines("rsrch_1.csv", 150)),
            t("spc", Format::Spc, Kind::Text, spc.into_bytes()),
            t("vscsi", Format::Vscsi, Kind::Records(32), vscsi),
            t("cloudphysics-csv", Format::CloudphysicsCsv, Kind::Text, cp),
            Target { csv: Some(csv_layout()), ..t("csv", Format::Csv, Kind::Text, csv.into_bytes()) },
            t("systor17", Format::Systor17, Kind::Text, systor.into_bytes()),
            t("alibaba", Format::Alibaba, Kind::Text, alibaba.into_bytes()),
            t("tencent", Format::Tencent, Kind::Text, tencent.into_bytes()),
            t("fiu", Format::Fiu, Kind::Text, fiu.into_bytes()),
            t("fio-v2", Format::FioIolog, Kind::Text, fio2),
            t("fio-v3", Format::FioIolog, Kind::Text, fio3),
            t("blkparse", Format::Blkparse, Kind::Text, blk),
            t("disksim", Format::Disksim, Kind::Text, disksim.into_bytes()),
            t("mqsim", Format::Mqsim, Kind::Text, first_lines("wsrch-small.trace.gz", 150)),
            t("disksim-validate", Format::DisksimValidate, Kind::Text, first_lines("disksim/hp_c3323a.trace", 150)),
            t("stlt", Format::Binary, Kind::Stlt, stlt_seed()),
        ]
    })
}

// ---------------------------------------------------------------------------
// Mutations.

const EXTREMES: &[&[u8]] = &[
    b"18446744073709551615",
    b"18446744073709551616",
    b"18446744073709551615.9",
    b"36028797018963967",
    b"9223372036854775808",
    b"4294967296",
    b"-1",
    b"-0",
    b"+0",
    b"+",
    b"0",
    b"1e308",
    b"-1e308",
    b"1e-308",
    b"1e19",
    b"1.8e19",
    b"1E999",
    b"NaN",
    b"nan",
    b"inf",
    b"-inf",
    b"",
    b" ",
    b".",
    b"..",
    b"1.2.3",
    b"0x",
    b"0xffffffffffffffff",
    b"0.000000000000000000000000001",
    b"0.99999999999999999999999999",
    b"\"\"",
    b"\"",
    b"\"1\"",
    b"\xff\xfe\xfd",
    b"\xc3\x28",
    b"\xef\xbb\xbf1",
    b"\x00",
    b"\r",
    b"a\rb",
    b"\x1b[2J",
    b"R",
    b"W",
    b"r",
    b"w",
    b"Read",
    b"Write",
    b"read",
    b"write",
    b"add",
    b"2a",
    b"28",
    b"0x2A",
    b"Q",
    b"D",
    b"C",
    b"+",
    b"[java]",
    b"8,16",
    b"4095,1048575",
    b"4096,0",
    b"CPU0",
    b"Total",
    b"(8,16):",
    b"version",
    b"fio version 2 iolog",
    b"fio version 3 iolog",
    b"fio version 9 iolog",
    b"Hit",
    b"Miss",
];

const BYTES: &[u8] = b"0123456789,;. \t\n\r\"+-eExXrRwW\x00\x7f\x80\xff\xc3";

/// The lines of `b` as (start, end) without their `\n`.
fn line_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            v.push((start, i));
            start = i + 1;
        }
    }
    if start < b.len() {
        v.push((start, b.len()));
    }
    v
}

/// A random line of `b` with its line end, or nothing.
fn random_line(b: &[u8], rng: &mut Rng) -> Vec<u8> {
    let spans = line_spans(b);
    if spans.is_empty() {
        return Vec::new();
    }
    let (s, e) = *rng.pick(&spans);
    let mut l = b[s..e].to_vec();
    l.push(b'\n');
    l
}

fn digits(n: usize, rng: &mut Rng) -> Vec<u8> {
    (0..n)
        .map(|i| {
            if i == 0 {
                b'1' + rng.below(9) as u8
            } else {
                b'0' + rng.below(10) as u8
            }
        })
        .collect()
}

/// Apply one random mutation to a text input: a byte edit (flip, replace,
/// insert, delete), a line edit (duplicate, drop, swap, truncate, splice), a
/// field rewritten, a run of separators, or a line of another format.
fn mutate_text(b: &mut Vec<u8>, rng: &mut Rng, donors: &[Target]) {
    let len = b.len();
    let at = rng.below(len + 1);
    match rng.below(20) {
        0 if len > 0 => {
            let i = rng.below(len);
            b[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            b[i] = *rng.pick(BYTES);
        }
        2 => {
            let n = 1 + rng.below(8);
            let ins: Vec<u8> = (0..n).map(|_| *rng.pick(BYTES)).collect();
            b.splice(at..at, ins);
        }
        3 if len > 0 => {
            let i = rng.below(len);
            let n = (1 + rng.below(16)).min(len - i);
            b.drain(i..i + n);
        }
        4 => {
            // Duplicate a line, up to a few hundred times (and 2 MiB: a
            // long line copied hundreds of times would only slow the run).
            let l = random_line(b, rng);
            let times = if rng.chance(8) {
                1 + rng.below(300)
            } else {
                1 + rng.below(3)
            };
            let times = times.min(((2 << 20) / l.len().max(1)).max(1));
            let spans = line_spans(b);
            let to = if spans.is_empty() {
                0
            } else {
                rng.pick(&spans).0
            };
            let ins: Vec<u8> = l.iter().copied().cycle().take(l.len() * times).collect();
            b.splice(to..to, ins);
        }
        5 => {
            let spans = line_spans(b);
            if !spans.is_empty() {
                let (s, e) = *rng.pick(&spans);
                b.drain(s..(e + 1).min(b.len()));
            }
        }
        6 => b.truncate(at),
        7 => {
            // Swap two lines.
            let spans = line_spans(b);
            if spans.len() >= 2 {
                let (i, j) = (rng.below(spans.len()), rng.below(spans.len()));
                let (i, j) = (i.min(j), i.max(j));
                if i != j {
                    let (a, c) = (spans[i], spans[j]);
                    let mut out = b[..a.0].to_vec();
                    out.extend_from_slice(&b[c.0..c.1]);
                    out.extend_from_slice(&b[a.1..c.0]);
                    out.extend_from_slice(&b[a.0..a.1]);
                    out.extend_from_slice(&b[c.1..]);
                    *b = out;
                }
            }
        }
        8 => {
            // Splice: the input up to one point, then from another.
            let j = rng.below(len + 1);
            let tail = b[j..].to_vec();
            b.truncate(at);
            b.extend_from_slice(&tail);
        }
        9..=11 => replace_field(b, rng),
        12 => {
            let run = *rng.pick(b", \t;\n\"");
            let n = if rng.chance(4) {
                1 + rng.below(5000)
            } else {
                1 + rng.below(8)
            };
            b.splice(at..at, std::iter::repeat_n(run, n));
        }
        13 => {
            // A line from another format (donor seeds, text ones).
            let d = rng.pick(donors);
            if d.kind == Kind::Text {
                let l = random_line(&d.seed, rng);
                let spans = line_spans(b);
                let to = if spans.is_empty() {
                    0
                } else {
                    rng.pick(&spans).0
                };
                b.splice(to..to, l);
            }
        }
        14 => {
            // Line ends: CRLF, lone CR, none at the end, blank lines.
            match rng.below(4) {
                0 => {
                    *b = b
                        .iter()
                        .flat_map(|&c| {
                            if c == b'\n' {
                                vec![b'\r', b'\n']
                            } else {
                                vec![c]
                            }
                        })
                        .collect()
                }
                1 => b.iter_mut().for_each(|c| {
                    if *c == b'\n' {
                        *c = b'\r'
                    }
                }),
                2 => {
                    while b.last() == Some(&b'\n') {
                        b.pop();
                    }
                }
                _ => {
                    let blank: &[u8] =
                        rng.pick::<&[u8]>(&[&b"\n"[..], b"   \n", b"\r\n", b"\t\n", b"\n\n\n"]);
                    b.splice(at..at, blank.iter().copied());
                }
            }
        }
        15 => {
            // Non-UTF-8 bytes and control characters.
            let junk: &[u8] = rng.pick::<&[u8]>(&[
                &b"\xff"[..],
                b"\x80\x80",
                b"\xc3",
                b"\xed\xa0\x80",
                b"\x00\x00",
                b"\x1b",
                b"\xef\xbb\xbf",
            ]);
            b.splice(at..at, junk.iter().copied());
        }
        16 => {
            // A huge number.
            let n = if rng.chance(4) {
                1000 + rng.below(20_000)
            } else {
                19 + rng.below(40)
            };
            let d = digits(n, rng);
            b.splice(at..at, d);
        }
        17 if rng.chance(8) => {
            // A line near the 1 MiB bound, or far past it.
            let n = match rng.below(3) {
                0 => (1 << 20) - 2 + rng.below(5),
                1 => (1 << 20) + rng.below(1 << 20),
                _ => rng.below(1 << 16),
            };
            let fill = *rng.pick(b"a1, \t\xff\r");
            b.splice(at..at, std::iter::repeat_n(fill, n));
        }
        18 => {
            // Many fields.
            let sep = *rng.pick::<&[u8]>(&[&b"1,"[..], b"1 ", b",", b"1;"]);
            let n = 1 + rng.below(70_000);
            let ins: Vec<u8> = sep.iter().copied().cycle().take(sep.len() * n).collect();
            b.splice(at..at, ins);
        }
        _ => {
            // Empty input, or just the first line.
            if rng.chance(3) {
                let spans = line_spans(b);
                let keep = spans.first().map(|s| (s.1 + 1).min(b.len())).unwrap_or(0);
                b.truncate(keep);
            } else if rng.chance(20) {
                b.clear();
            }
        }
    }
}

/// Replace one field of one line by an extreme value.
fn replace_field(b: &mut Vec<u8>, rng: &mut Rng) {
    let spans = line_spans(b);
    if spans.is_empty() {
        return;
    }
    let (s, e) = *rng.pick(&spans);
    let delim = |c: u8| c == b',' || c == b' ' || c == b'\t' || c == b';';
    // Field boundaries within the line.
    let mut fields = Vec::new();
    let mut start = s;
    for (i, &c) in b.iter().enumerate().take(e).skip(s) {
        if delim(c) {
            fields.push((start, i));
            start = i + 1;
        }
    }
    fields.push((start, e));
    let (fs, fe) = *rng.pick(&fields);
    let token: Vec<u8> = match rng.below(6) {
        0 => digits(
            if rng.chance(3) {
                500 + rng.below(2000)
            } else {
                20 + rng.below(10)
            },
            rng,
        ),
        1 => format!("{}", rng.next()).into_bytes(),
        2 => format!(
            "{}.{}e{}",
            rng.below(100),
            rng.below(100),
            rng.below(400) as i64 - 200
        )
        .into_bytes(),
        _ => rng.pick(EXTREMES).to_vec(),
    };
    b.splice(fs..fe, token);
}

const WORDS: &[u64] = &[
    0,
    1,
    2,
    0xff,
    0x7fff_ffff,
    0xffff_ffff,
    65_535,
    65_536,
    65_537,
    1 << 24,
    (1 << 24) + 1,
    1 << 32,
    u64::MAX / 512,
    u64::MAX / 1000 + 1,
    1 << 63,
    u64::MAX - 1,
    u64::MAX,
];

/// One binary mutation of `b`, whose unmutated form is `seed`.
fn mutate_binary(b: &mut Vec<u8>, rng: &mut Rng, kind: Kind, seed: &[u8]) {
    let len = b.len();
    let at = rng.below(len + 1);
    let write = |b: &mut Vec<u8>, pos: usize, width: usize, v: u64| {
        let bytes = v.to_le_bytes();
        for k in 0..width {
            if pos + k < b.len() {
                b[pos + k] = bytes[k];
            }
        }
    };
    match rng.below(11) {
        0 if len > 0 => {
            let i = rng.below(len);
            b[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            b[i] = rng.next() as u8;
        }
        2 => {
            let n = 1 + rng.below(16);
            let ins: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            b.splice(at..at, ins);
        }
        3 if len > 0 => {
            let i = rng.below(len);
            let n = (1 + rng.below(64)).min(len - i);
            b.drain(i..i + n);
        }
        4 => b.truncate(at),
        5 => {
            // Duplicate a chunk.
            let i = rng.below(len + 1);
            let n = (1 + rng.below(200)).min(len - i);
            let chunk = b[i..i + n].to_vec();
            b.splice(at..at, chunk);
        }
        6 => {
            let j = rng.below(len + 1);
            let tail = b[j..].to_vec();
            b.truncate(at);
            b.extend_from_slice(&tail);
        }
        7 => {
            // Garbage, text or random, appended or inserted.
            let junk: Vec<u8> = if rng.chance(2) {
                b"0,1,2,W,3\n".to_vec()
            } else {
                (0..rng.below(100)).map(|_| rng.next() as u8).collect()
            };
            b.splice(at..at, junk);
        }
        _ => {
            // An extreme word at a field of the layout.
            let v = *rng.pick(WORDS);
            match kind {
                Kind::Records(size) => {
                    let r = rng.below(len / size + 1);
                    let (off, width) = *rng.pick(&[
                        (0, 4),
                        (4, 4),
                        (8, 4),
                        (12, 1),
                        (12, 2),
                        (14, 2),
                        (15, 1),
                        (16, 8),
                        (24, 8),
                        (3, 1),
                    ]);
                    write(b, r * size + off, width, v);
                }
                Kind::Stlt => {
                    // Positions in the seed (earlier mutations may have moved them).
                    let (blk, n) = *rng.pick(&stlt_blocks(seed));
                    let cols = blk + 4;
                    match rng.below(6) {
                        0 => write(b, 8, 4, v),                            // header length
                        1 => write(b, blk, 4, v),                          // records in a block
                        2 => write(b, seed.len() - 16, 4, v),              // the end marker
                        3 => write(b, seed.len() - 12, 8, v), // record count at the end
                        4 => write(b, cols + 40 * n + rng.below(n), 1, v), // an op code
                        _ => write(b, cols + 8 * rng.below(5 * n), 8, v), // a column word
                    }
                    // Half the time past the checksums, to the decoding behind them.
                    if rng.below(2) == 0 {
                        fix_stlt_checksums(b);
                    }
                }
                Kind::Text => unreachable!(),
            }
        }
    }
}

fn mutate(t: &Target, case: u64) -> Vec<u8> {
    let mut rng = Rng::new(case_seed(t.name, case));
    let mut b = t.seed.clone();
    let n = 1 + rng.below(4);
    for _ in 0..n {
        match t.kind {
            Kind::Text => mutate_text(&mut b, &mut rng, targets()),
            kind => mutate_binary(&mut b, &mut rng, kind, &t.seed),
        }
    }
    b
}

// ---------------------------------------------------------------------------
// Reading and checking.

/// How one read ended, when nothing went wrong.
struct Outcome {
    /// Records the reader returned before the end or the error.
    records: u64,
    /// The kind of error that ended it, if one did.
    error: Option<&'static str>,
    /// Most bytes the reading thread had live at once above its start (held to
    /// `memory_bound`).
    peak: usize,
}

/// Read `input` to its end or first error; what went wrong, if anything.
fn read_and_check(t: &Target, input: &[u8], spec: &TraceSpec) -> Result<Outcome, String> {
    let lines = input.iter().filter(|&&c| c == b'\n').count() as u64
        + u64::from(input.last().is_some_and(|&c| c != b'\n'));
    let records_bound = match t.kind {
        Kind::Text => lines,
        Kind::Records(size) => (input.len() as u64).div_ceil(size as u64),
        Kind::Stlt => (input.len() as u64).div_ceil(41),
    };
    // Detection may read a text input as another text format, or a binary
    // one as text: bound by whichever unit is larger.
    let any_bound = lines.max(records_bound).max(1);
    let named = spec.format.is_some();
    let text_lines = named && t.kind == Kind::Text;
    let owned = input.to_vec();
    let (peak, kept, outcome) = peak_during(|| {
        catch_unwind(AssertUnwindSafe(
            || -> Result<(u64, Option<SimError>), String> {
                let mut r = match open_reader(Box::new(Cursor::new(owned)), spec) {
                    Ok(r) => r,
                    Err(e) => return Ok((0, Some(e))),
                };
                let mut n = 0u64;
                let mut last_line = 0u64;
                loop {
                    match r.next_record() {
                        Ok(Some(rec)) => {
                            n += 1;
                            if n > any_bound {
                                return Err(format!("runaway: more than {any_bound} records from {lines} lines / {} bytes", input.len()));
                            }
                            if text_lines {
                                if rec.line == 0 || rec.line > lines || rec.line <= last_line {
                                    return Err(format!("record {n} has line {} (previous {last_line}, input has {lines} lines)", rec.line));
                                }
                                last_line = rec.line;
                            }
                        }
                        Ok(None) => {
                            // The end stays the end.
                            match r.next_record() {
                                Ok(None) => return Ok((n, None)),
                                other => {
                                    return Err(format!(
                                        "after the end, next_record gave {other:?}"
                                    ))
                                }
                            }
                        }
                        Err(e) => return Ok((n, Some(e))),
                    }
                }
            },
        ))
    });
    let outcome = match outcome {
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let at = PANIC_AT.with(|p| p.borrow_mut().take()).unwrap_or_default();
            return Err(format!("panic at {at}: {msg}"));
        }
        Ok(o) => o?,
    };
    if peak > memory_bound() {
        return Err(format!("peak memory {} MiB", peak >> 20));
    }
    // What is left once the reader is dropped: the outcome (an error's text).
    if kept > 64 << 10 {
        return Err(format!(
            "{kept} bytes still allocated after the reader was dropped"
        ));
    }
    let (records, err) = outcome;
    let Some(e) = err else {
        return Ok(Outcome {
            records,
            error: None,
            peak,
        });
    };
    let text = e.to_string();
    if text
        .chars()
        .any(|c| c.is_control() || c == '\u{2028}' || c == '\u{2029}')
    {
        return Err(format!(
            "error not on one line (a control character in it): {text:?}"
        ));
    }
    if text.chars().count() > 1000 {
        return Err(format!(
            "error of {} characters: {:?}...",
            text.chars().count(),
            text.chars().take(200).collect::<String>()
        ));
    }
    if !text.contains(&spec.path) {
        return Err(format!("error does not name the file: {text:?}"));
    }
    if let SimError::TraceFormat { at, msg } = &e {
        if at.file != spec.path {
            return Err(format!("error names file {:?}: {text:?}", at.file));
        }
        // A converted file's records keep their source lines: errors about
        // their content name those (whatever a mutation made of them).
        let source_line = input.starts_with(stlsim_core::trace::binary::MAGIC)
            && (msg.starts_with("offset ") || msg.contains("more than one device"));
        let bound = if named { records_bound } else { any_bound };
        if !source_line && (at.line == 0 || at.line > bound.max(1)) {
            return Err(format!(
                "error at line {} of an input of {lines} lines ({} bytes): {text:?}",
                at.line,
                input.len()
            ));
        }
    }
    let kind = match e {
        SimError::TraceFormat { .. } => "format",
        SimError::Io(_) => "io",
        SimError::Config(_) => "config",
        _ => return Err(format!("unexpected kind of error: {text:?}")),
    };
    Ok(Outcome {
        records,
        error: Some(kind),
        peak,
    })
}

thread_local! {
    /// Inside a fuzzed read: where the last panic happened (the hook stays quiet).
    static IN_READ: Cell<bool> = const { Cell::new(false) };
    static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install_hook() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_READ.with(Cell::get) {
                let at = info.location().map(|l| l.to_string()).unwrap_or_default();
                PANIC_AT.with(|p| *p.borrow_mut() = Some(at));
            } else {
                default(info)
            }
        }));
    });
}

/// Every running reader test, for the watchdog: name, case, when the case started.
static RUNNING: Mutex<Vec<(&'static str, u64, Instant)>> = Mutex::new(Vec::new());

fn start_watchdog() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_secs(5));
            let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
            for (name, case, since) in running.iter() {
                if since.elapsed() > Duration::from_secs(120) {
                    eprintln!("fuzz_readers: {name} case {case} has run for over two minutes: a hang (rerun with STLSIM_FUZZ_ONLY={name}:{case})");
                    std::process::abort();
                }
            }
        });
    });
}

fn cases() -> u64 {
    std::env::var("STLSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(1000)
}

fn fuzz(name: &str) {
    install_hook();
    start_watchdog();
    let t = targets().iter().find(|t| t.name == name).expect("a target");
    let only = std::env::var("STLSIM_FUZZ_ONLY").ok();
    let range: Box<dyn Iterator<Item = u64>> = match only.as_deref().and_then(|o| o.split_once(':'))
    {
        Some((n, c)) if n == name => Box::new(std::iter::once(
            c.parse::<u64>().expect("STLSIM_FUZZ_ONLY=reader:case"),
        )),
        Some(_) => Box::new(std::iter::empty()),
        None => Box::new(0..cases()),
    };
    // The unmutated seed reads to its end with its format named.
    let mut spec = base_spec(t, 0);
    spec.all_devices = true;
    match read_and_check(t, &t.seed, &spec) {
        Ok(Outcome {
            error: None,
            records,
            ..
        }) if records > 0 => {}
        Ok(o) => panic!(
            "{name}: the seed itself: {} records, error {:?}",
            o.records, o.error
        ),
        Err(e) => panic!("{name}: the seed itself: {e}"),
    }
    let mut failures: Vec<String> = Vec::new();
    // With the format named: inputs read to the end, and ended by each kind of error.
    let (mut clean, mut errors) = (0u64, std::collections::BTreeMap::<&str, u64>::new());
    let (mut records, mut max_peak) = (0u64, 0usize);
    RUNNING.lock().unwrap().push((t.name, 0, Instant::now()));
    let started = Instant::now();
    let mut ran = 0u64;
    for case in range {
        if let Some(e) = RUNNING.lock().unwrap().iter_mut().find(|e| e.0 == t.name) {
            *e = (t.name, case, Instant::now());
        }
        let input = mutate(t, case);
        ran += 1;
        for named in [true, false] {
            let mut spec = base_spec(t, case);
            if !named {
                spec.format = None;
                spec.csv = GenericCsv::default();
            }
            IN_READ.with(|f| f.set(true));
            let got = read_and_check(t, &input, &spec);
            IN_READ.with(|f| f.set(false));
            match got {
                Ok(o) => {
                    max_peak = max_peak.max(o.peak);
                    if named {
                        records += o.records;
                        match o.error {
                            None => clean += 1,
                            Some(kind) => *errors.entry(kind).or_default() += 1,
                        }
                    }
                }
                Err(problem) => {
                    let how = if named {
                        "format named"
                    } else {
                        "format detected"
                    };
                    let dir =
                        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-readers");
                    let _ = std::fs::create_dir_all(&dir);
                    let file = dir.join(format!("{name}-{case}.bin"));
                    let _ = std::fs::write(&file, &input);
                    failures.push(format!(
                        "{name} case {case} ({how}): {problem}\n    input: {}",
                        file.display()
                    ));
                    break;
                }
            }
        }
    }
    RUNNING.lock().unwrap().retain(|e| e.0 != t.name);
    println!(
        "{name}: {ran} mutated inputs in {:.1} s, each read with the format named and detected; named: {clean} read to the end, errors {errors:?}, {records} records; peak memory {} KiB",
        started.elapsed().as_secs_f64(),
        max_peak >> 10
    );
    if !failures.is_empty() {
        let shown: Vec<&str> = failures.iter().take(20).map(String::as_str).collect();
        panic!(
            "{} of {ran} inputs failed:\n{}",
            failures.len(),
            shown.join("\n")
        );
    }
}

fn base_spec(t: &Target, case: u64) -> TraceSpec {
    TraceSpec {
        path: format!("fuzz/{}#{case}", t.name),
        format: Some(t.format),
        csv: t.csv.clone().unwrap_or_default(),
        // Every other case refuses a second device (an error naming the line).
        all_devices: case.is_multiple_of(2),
        skip_unknown: case.is_multiple_of(3),
        event: (t.format == Format::Blkparse && case % 4 == 1)
            .then(|| ["D", "C", "Q"][(case / 4 % 3) as usize].to_string()),
        ..TraceSpec::default()
    }
}

macro_rules! readers {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                fuzz($name);
            }
        )*
        /// Every target has a test.
        #[test]
        fn every_reader_is_fuzzed() {
            let tested = [$($name),*];
            for t in targets() {
                assert!(tested.contains(&t.name), "{} has no test", t.name);
            }
        }
    };
}

readers! {
    msr => "msr",
    spc => "spc",
    vscsi => "vscsi",
    cloudphysics_csv => "cloudphysics-csv",
    csv_layout_semicolons => "csv",
    systor17 => "systor17",
    alibaba => "alibaba",
    tencent => "tencent",
    fiu => "fiu",
    fio_v2 => "fio-v2",
    fio_v3 => "fio-v3",
    blkparse => "blkparse",
    disksim_ascii => "disksim",
    mqsim => "mqsim",
    disksim_validate => "disksim-validate",
    stlt_binary => "stlt",
}
