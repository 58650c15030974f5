//! blkparse's default text output (Linux `blktrace` + `blkparse`), one event a
//! line, fields separated by runs of spaces:
//!
//! ```text
//!   8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]
//!   MAJ,MIN CPU  SEQUENCE  SECONDS     PID  ACTION RWBS SECTOR + SECTORS [PROCESS]
//! ```
//!
//! * A request is one event of the chosen kind ([`Event`], default `Q`, the
//!   request as the host queued it; `D` when the driver issued it, `C` when
//!   it completed). Other events (`A` remaps, `G`, `I`, `M` merges, `P`/`U`
//!   plugs, `m` scheduler messages ...) are skipped.
//! * RWBS: `R` read, `W` write; `D` discard, `F` flush, `S` sync, `M` meta,
//!   `A` read-ahead, `N` no data are flags. An event with neither `R` nor `W`
//!   (a flush `FN`, a discard `D`) carries no data to replay and is skipped.
//! * SECONDS since the trace started (nanoseconds after the point); SECTOR
//!   and SECTORS in 512-byte units, whatever the device's sector size.
//! * The device `MAJ,MIN` is the record's disk, numbered as Linux's
//!   `dev_t` is (`MAJ << 20 | MIN`: `8,16` is 8388624), so one device of a
//!   multi-device capture can be selected.
//! * The per-CPU and total summary blkparse prints at the end (`CPU0
//!   (8,16):`, `Total (8,16):`, `Throughput ...`) ends the events: it and
//!   everything after it are ignored. Any other line that is not an event
//!   is an error naming it.
//!
//! # Pairing completions ([`TraceSpec::pair`](crate::trace::TraceSpec::pair))
//!
//! With pairing, each request event (`Q` or `D`, as chosen; not `C`) is
//! matched with the later `C` event of the same device, start sector and
//! size (blkparse prints a completion as `SECTOR + SECTORS`, like its
//! request), and the request's measured response time
//! ([`RawTraceReader::measured`]) is the `C` time minus the request's time.
//! Several outstanding requests with the same extent complete oldest first.
//! Records still come out in request order: a request is held until it is
//! settled, and the ones behind it wait with it. A request is settled when
//!
//! * its completion is read (measured response: `Some`);
//! * with `Q`, an `M` (back merge) or `F` (front merge) event of its extent
//!   follows: it joined an earlier request and gets no completion of its own
//!   (`None`);
//! * [`PAIR_WINDOW`] (500,000) later requests have been read without its
//!   completion (`None`): this bounds the memory whatever the trace (a
//!   capture without completions, say) to that many held requests;
//! * the trace ends first (`None`).
//!
//! A completion that matches no held request (its request came before the
//! capture started, or was merged) is counted
//! ([`RawTraceReader::unpaired_completions`]) and otherwise ignored.

use crate::error::{SimError, SimResult};
use crate::trace::text::{show, CsvLines};
use crate::trace::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::collections::VecDeque;
use std::io::Read;

/// With pairing, how many later requests a request waits for its completion
/// before it is given up and returned without a measured response. The
/// window bounds memory (held requests with their index: about 100 MB at
/// most, measured), not patience: a request outstanding while half a million
/// later ones are queued is unheard of (an NVMe drive at 100,000 IOPS would
/// have stalled it for 5 s; a disk at 200 IOPS, for 40 minutes), so in
/// practice only a capture without completions reaches it.
pub const PAIR_WINDOW: u64 = 500_000;

/// Which blkparse event stands for a host request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `Q`: queued by the host (the default: the host's request stream).
    Queued,
    /// `D`: issued to the device driver (after merging and scheduling).
    Issued,
    /// `C`: completed.
    Completed,
}

impl Event {
    /// Parse an event letter (`Q`, `D` or `C`).
    pub fn parse(s: &str) -> SimResult<Event> {
        match s {
            "Q" | "q" => Ok(Event::Queued),
            "D" | "d" => Ok(Event::Issued),
            "C" | "c" => Ok(Event::Completed),
            other => Err(SimError::Config(format!(
                "blkparse event '{other}' is not one of Q (queued), D (issued), C (completed)"
            ))),
        }
    }

    fn letter(self) -> &'static [u8] {
        match self {
            Event::Queued => b"Q",
            Event::Issued => b"D",
            Event::Completed => b"C",
        }
    }
}

/// `MAJ,MIN` as Linux's `dev_t` encodes it.
pub fn device_number(major: u64, minor: u64) -> Option<u64> {
    (major < (1 << 12) && minor < (1 << 20)).then_some(major << 20 | minor)
}

/// What pairing settled so far ([`BlkparseReader::pair_counts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairCounts {
    /// Requests returned with a measured response time.
    pub paired: u64,
    /// Requests merged into an earlier one (`M`/`F` after a `Q`).
    pub merged: u64,
    /// Requests given up: no completion within [`PAIR_WINDOW`] later
    /// requests or before the end of the trace.
    pub unfinished: u64,
    /// Completions that matched no held request.
    pub unpaired_completions: u64,
}

/// An extent as blkparse prints it: device, start sector, sectors.
type Extent = (u64, u64, u64);

/// A request held until it is settled.
struct Held {
    rec: TraceRecord,
    dev: u64,
    measured: Option<Nanos>,
    /// Still waiting for its completion (or a merge).
    waiting: bool,
    /// The next newer / older waiting request of the same extent (sequence numbers).
    newer: Option<u64>,
    older: Option<u64>,
}

impl Held {
    fn extent(&self) -> Extent {
        (self.dev, self.rec.offset.0 / 512, self.rec.len.0 / 512)
    }
}

/// The requests held for their completions, in request order.
struct Pairing {
    /// [`PAIR_WINDOW`] (smaller in tests).
    window: u64,
    held: VecDeque<Held>,
    /// Sequence number (0-based request count) of `held[0]`.
    first: u64,
    /// The oldest and newest waiting requests of each extent (sequence
    /// numbers), linked through [`Held::newer`] and [`Held::older`]. A chain
    /// rather than a list per extent: the common extent has one request (a
    /// list would be an allocation per request), and a trace that rewrites
    /// one block without completing it must not make a walk of each request.
    waiting: rustc_hash::FxHashMap<Extent, (u64, u64)>,
    /// The input has ended: everything held is settled as it is.
    ended: bool,
    counts: PairCounts,
}

impl Pairing {
    /// The held request `seq`.
    fn get(&mut self, seq: u64) -> Option<&mut Held> {
        let i = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.held.get_mut(i)
    }

    /// Take the oldest waiting request of `extent` out of its chain.
    fn pop_oldest(&mut self, extent: Extent) -> Option<u64> {
        let (oldest, newest) = self.waiting.remove(&extent)?;
        if oldest != newest {
            if let Some(next) = self.get(oldest).and_then(|h| h.newer.take()) {
                if let Some(h) = self.get(next) {
                    h.older = None;
                }
                self.waiting.insert(extent, (next, newest));
            }
        }
        Some(oldest)
    }

    /// Take the newest waiting request of `extent` out of its chain.
    fn pop_newest(&mut self, extent: Extent) -> Option<u64> {
        let (oldest, newest) = self.waiting.remove(&extent)?;
        if oldest != newest {
            if let Some(prev) = self.get(newest).and_then(|h| h.older.take()) {
                if let Some(h) = self.get(prev) {
                    h.newer = None;
                }
                self.waiting.insert(extent, (oldest, prev));
            }
        }
        Some(newest)
    }

    /// Hold a new request; give up on the oldest once it has waited for
    /// [`PAIR_WINDOW`] later ones.
    fn hold(&mut self, rec: TraceRecord, dev: u64, extent: Extent) {
        let seq = self.first + self.held.len() as u64;
        let mut older = None;
        match self.waiting.get_mut(&extent) {
            None => {
                self.waiting.insert(extent, (seq, seq));
            }
            Some(ends) => {
                older = Some(ends.1);
                ends.1 = seq;
            }
        }
        if let Some(prev) = older.and_then(|o| self.get(o)) {
            prev.newer = Some(seq);
        }
        self.held.push_back(Held {
            rec,
            dev,
            measured: None,
            waiting: true,
            newer: None,
            older,
        });
        if seq - self.first >= self.window && self.held.front().is_some_and(|h| h.waiting) {
            self.give_up_front();
        }
    }

    /// Stop waiting for the oldest request (the oldest of its extent too).
    fn give_up_front(&mut self) {
        let Some(extent) = self.held.front().map(Held::extent) else {
            return;
        };
        self.pop_oldest(extent);
        if let Some(front) = self.held.front_mut() {
            front.waiting = false;
            self.counts.unfinished += 1;
        }
    }

    /// A completion of `extent` at `time`: settles the oldest request
    /// waiting for it. `Err` with the request's line and time when the
    /// completion comes before its request.
    fn complete(&mut self, extent: Extent, time: u64) -> Result<(), (u64, u64)> {
        let Some(seq) = self.pop_oldest(extent) else {
            self.counts.unpaired_completions += 1;
            return Ok(());
        };
        let Some(h) = self.get(seq) else {
            return Ok(());
        };
        let response = time
            .checked_sub(h.rec.time.0)
            .ok_or((h.rec.line, h.rec.time.0))?;
        h.measured = Some(Nanos(response));
        h.waiting = false;
        self.counts.paired += 1;
        Ok(())
    }

    /// A merge of `extent`: the newest request of that extent (the one just
    /// queued) joined another and will not complete on its own.
    fn merged(&mut self, extent: Extent) {
        let Some(seq) = self.pop_newest(extent) else {
            return;
        };
        if let Some(h) = self.get(seq) {
            h.waiting = false;
            self.counts.merged += 1;
        }
    }

    /// The oldest request, if it is settled (or the input has ended).
    fn pop_settled(&mut self) -> Option<Held> {
        if self.held.front()?.waiting {
            if !self.ended {
                return None;
            }
            self.give_up_front();
        }
        let h = self.held.pop_front()?;
        self.first += 1;
        Some(h)
    }
}

/// The events a reader looks at.
#[derive(Clone, Copy)]
enum Kind {
    Request,
    Completion,
    Merge,
}

/// One event line of interest.
enum Line {
    /// The chosen request event.
    Request(TraceRecord, u64, Extent),
    /// A completion (with pairing): its time and extent.
    Completion(u64, Extent),
    /// A merge of a queued request (with pairing of `Q`).
    Merge(Extent),
}

/// Reader of blkparse text output.
pub struct BlkparseReader {
    src: CsvLines,
    event: Event,
    summary: bool,
    /// With pairing: the requests held for their completions.
    pairing: Option<Pairing>,
    /// The measured response of the record last returned.
    measured: Option<Nanos>,
}

impl BlkparseReader {
    /// A reader over decompressed blkparse text; `file` labels error messages.
    pub fn new(input: Box<dyn Read + Send>, file: &str, event: Event) -> Self {
        BlkparseReader {
            src: CsvLines::words(input, file),
            event,
            summary: false,
            pairing: None,
            measured: None,
        }
    }

    /// Pair each request with its completion (when `pair`), see the module
    /// documentation; an error for requests that are completions (`C`).
    pub fn with_pairing(mut self, pair: bool) -> SimResult<Self> {
        if pair && self.event == Event::Completed {
            return Err(SimError::Config(
                "pairing completions needs the requests to be Q (queued) or D (issued) events, not C (completed) ones".into(),
            ));
        }
        self.pairing = pair.then(|| Pairing {
            window: PAIR_WINDOW,
            held: VecDeque::new(),
            first: 0,
            waiting: Default::default(),
            ended: false,
            counts: PairCounts::default(),
        });
        Ok(self)
    }

    /// What pairing settled so far (`None` without pairing).
    pub fn pair_counts(&self) -> Option<PairCounts> {
        self.pairing.as_ref().map(|p| p.counts)
    }

    /// The next event line of interest; `None` at the end of the events.
    fn next_line(&mut self) -> SimResult<Option<Line>> {
        let pairing = self.pairing.is_some();
        // The actions the fast path returns, the request's first.
        let mut wanted = [self.event.letter()[0], 0, 0, 0];
        let n_wanted = match (pairing, self.event) {
            (false, _) => 1,
            (true, Event::Queued) => {
                wanted[1..].copy_from_slice(b"CMF");
                4
            }
            (true, _) => {
                wanted[1] = b'C';
                2
            }
        };
        loop {
            let s = &mut self.src;
            if self.summary || !s.next_line()? {
                return Ok(None);
            }
            let fast = if s.fast_paths() {
                fast_line(s.raw(), &wanted[..n_wanted])
            } else {
                None
            };
            match fast {
                Some(Fast::Skip) => continue,
                Some(Fast::Event(action, op, dev, time, sector, sectors)) => {
                    s.mark_record();
                    let extent = (dev, sector, sectors);
                    return Ok(Some(if action == wanted[0] {
                        let rec = TraceRecord {
                            time: Nanos(time),
                            op,
                            // Checked by the fast path.
                            offset: Bytes(sector * 512),
                            len: Bytes(sectors * 512),
                            line: s.line(),
                        };
                        Line::Request(rec, dev, extent)
                    } else if action == b'C' {
                        Line::Completion(time, extent)
                    } else {
                        Line::Merge(extent)
                    }));
                }
                None => {
                    if !s.split_current()? {
                        continue;
                    }
                }
            }
            let Some((major, minor)) = parse_device(s.field(0)) else {
                if starts_summary(s.field(0), s.field(1)) {
                    self.summary = true;
                    return Ok(None);
                }
                return Err(s.err(format!(
                    "not a blkparse event: the first field is '{}', expected the device as MAJ,MIN (e.g. 8,16)",
                    show(s.field(0))
                )));
            };
            if s.len() < 7 {
                return Err(s.err(format!(
                    "a blkparse event has at least 7 fields (MAJ,MIN CPU SEQ SECONDS PID ACTION RWBS), found {}",
                    s.len()
                )));
            }
            let action = s.field(5);
            let kind = if action == self.event.letter() {
                Kind::Request
            } else if pairing && action == b"C" {
                Kind::Completion
            } else if pairing && self.event == Event::Queued && (action == b"M" || action == b"F") {
                Kind::Merge
            } else {
                continue;
            };
            let rwbs = s.field(6);
            let op = if rwbs.contains(&b'W') {
                Op::Write
            } else if rwbs.contains(&b'R') {
                Op::Read
            } else {
                continue; // a flush, a discard or no data: nothing to replay
            };
            // blkparse prints `SECTOR [ERROR]` without a size for an event
            // of no sectors (the completion of a flush): a zero-length request.
            let sized = s.len() >= 10 && s.field(8) == b"+";
            let sizeless = s.len() == 9 && s.field(8).first() == Some(&b'[');
            if !sized && !sizeless {
                return Err(s.err(format!(
                    "a {} event of a read or write needs 'SECTOR + SECTORS' after RWBS '{}'",
                    show(action),
                    show(rwbs)
                )));
            }
            let dev = device_number(major, minor).ok_or_else(|| {
                s.err(format!(
                    "device {major},{minor} is out of Linux's range (major < 4096, minor < 2^20)"
                ))
            })?;
            let time = s.scaled_field(3, 1_000_000_000, "SECONDS")?;
            let sector = s.u64_field(7, "SECTOR")?;
            let sectors = if sized { s.u64_field(9, "SECTORS")? } else { 0 };
            let extent = (dev, sector, sectors);
            match kind {
                Kind::Request => {
                    let offset = sector.checked_mul(512).ok_or_else(|| {
                        s.err(format!(
                            "SECTOR (field 8) overflows: {sector} sectors of 512 bytes"
                        ))
                    })?;
                    let len = sectors
                        .checked_mul(512)
                        .ok_or_else(|| s.err(format!("SECTORS (field 10) overflows: {sectors}")))?;
                    let rec = TraceRecord {
                        time: Nanos(time),
                        op,
                        offset: Bytes(offset),
                        len: Bytes(len),
                        line: s.line(),
                    };
                    return Ok(Some(Line::Request(rec, dev, extent)));
                }
                Kind::Completion => return Ok(Some(Line::Completion(time, extent))),
                Kind::Merge => return Ok(Some(Line::Merge(extent))),
            }
        }
    }
}

/// What the one-pass fast path made of a line.
#[derive(Debug, PartialEq, Eq)]
enum Fast {
    /// A well-formed event of an action not asked for, or of no data (a
    /// flush, a discard): nothing to do.
    Skip,
    /// An event asked for: action letter, op, device (`dev_t`), time in
    /// ns, sector, sectors.
    Event(u8, Op, u64, u64, u64, u64),
}

/// The words of a blkparse line, split at runs of spaces and tabs, whose
/// positions are found sixteen bytes at a time (`text::Separators`) rather
/// than byte by byte, and stepped over a word at a time: a line's first
/// seven words cross some 25 blanks, which taken one by one were a third
/// of a line's instructions.
struct Words<'a> {
    line: &'a [u8],
    /// The blanks among the 64 bytes from `base`: bit k for byte `base +
    /// k`, the bytes past the line's end counted as blanks.
    blanks: u64,
    base: usize,
    /// Where the next word may start (at most 64 past `base`).
    at: usize,
}

impl<'a> Words<'a> {
    fn new(line: &'a [u8]) -> Self {
        Words {
            line,
            blanks: Self::blanks_at(line, 0),
            base: 0,
            at: 0,
        }
    }

    /// The blanks among the 64 bytes of `line` from `base`, those past its
    /// end included.
    #[inline(always)]
    fn blanks_at(line: &[u8], base: usize) -> u64 {
        match line.len().saturating_sub(base) {
            0 => !0,
            rest => {
                let m = crate::trace::text::Separators::stretch(line, base, b' ', true);
                if rest < 64 {
                    m | !0u64 << rest
                } else {
                    m
                }
            }
        }
    }

    /// Move to the next 64 bytes; `false` past the line's end. Out of
    /// line: most lines fit one stretch, and the compare code inlined in
    /// the loops below cost every word a dozen instructions of set-up.
    #[cold]
    #[inline(never)]
    fn advance(&mut self) -> bool {
        self.base += 64;
        self.blanks = Self::blanks_at(self.line, self.base);
        self.at = self.at.max(self.base);
        self.base < self.line.len()
    }

    /// The next word; `None` at the end of the line, or when the word
    /// starts with other white space (the general way trims such a word,
    /// or drops it).
    #[inline(always)]
    fn next_word(&mut self) -> Option<&'a [u8]> {
        // The first byte from `at` that is no blank.
        let from = loop {
            let off = self.at - self.base;
            if off < 64 {
                let starts = !self.blanks & !0u64 << off;
                if starts != 0 {
                    break self.base + starts.trailing_zeros() as usize;
                }
            }
            if !self.advance() {
                return None;
            }
        };
        // The first blank after it: at the latest, the line's end (a
        // stretch past the end is all blanks).
        self.at = from;
        let end = loop {
            let ends = self.blanks & !0u64 << (self.at - self.base);
            if ends != 0 {
                break self.base + ends.trailing_zeros() as usize;
            }
            self.advance();
        };
        self.at = end + 1;
        let w = &self.line[from..end];
        (w[0] > b' ').then_some(w)
    }
}

/// A word of digits (at most 18, so none overflows), as a number.
#[inline(always)]
fn small_number(w: &[u8]) -> Option<u64> {
    let mut i = 0;
    crate::trace::text::digits_to_end(w, &mut i)
}

/// An event line as blkparse prints it, read in one pass: whether it is
/// one to skip or an event among `wanted` (action letters), with every
/// field it needs well formed. `None` sends the line the general way:
/// anything unusual, the summary, every error.
#[inline]
fn fast_line(line: &[u8], wanted: &[u8]) -> Option<Fast> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > crate::trace::text::MAX_FIELDS {
        // It might hold more fields than the general way allows, beyond
        // the ones read here.
        return None;
    }
    let mut words = Words::new(line);
    let device = words.next_word()?;
    let (major, minor) = fast_device(device)?;
    words.next_word()?; // CPU
    words.next_word()?; // SEQUENCE
    let seconds = words.next_word()?;
    words.next_word()?; // PID
    let &[action] = words.next_word()? else {
        return None;
    };
    let rwbs = words.next_word()?;
    if !rwbs.iter().all(u8::is_ascii_uppercase) {
        return None;
    }
    // Byte loops: `contains` on bytes calls memchr, whose set-up costs
    // more than these few bytes.
    if !wanted.contains(&action) {
        return Some(Fast::Skip);
    }
    let op = if rwbs.contains(&b'W') {
        Op::Write
    } else if rwbs.contains(&b'R') {
        Op::Read
    } else {
        return Some(Fast::Skip);
    };
    let sector = small_number(words.next_word()?)?;
    if words.next_word()? != b"+" {
        return None;
    }
    let sectors = small_number(words.next_word()?)?;
    let dev = device_number(major, minor)?;
    sector.checked_mul(512)?;
    sectors.checked_mul(512)?;
    Some(Fast::Event(
        action,
        op,
        dev,
        nanoseconds(seconds)?,
        sector,
        sectors,
    ))
}

/// `SECONDS.FRACTION` with one to nine fraction digits (blkparse prints
/// nine), as nanoseconds: exact, so the general way's rounding agrees.
#[inline(always)]
fn nanoseconds(w: &[u8]) -> Option<u64> {
    let mut i = 0;
    let whole = crate::trace::text::digits_then(w, &mut i, b'.')?;
    let frac = &w[i..];
    if frac.is_empty() || frac.len() > 9 {
        return None;
    }
    let mut j = 0;
    let f = crate::trace::text::digits_to_end(frac, &mut j)?;
    whole
        .checked_mul(1_000_000_000)?
        .checked_add(crate::trace::text::shift_fraction(f, frac.len(), 9)?)
}

/// [`parse_device`] for the fast path: plain digits each side of the comma
/// (up to 18), read in one pass; anything else goes the general way.
#[inline(always)]
fn fast_device(f: &[u8]) -> Option<(u64, u64)> {
    let mut i = 0;
    let major = crate::trace::text::digits_then(f, &mut i, b',')?;
    let minor = crate::trace::text::digits_to_end(f, &mut i)?;
    Some((major, minor))
}

/// `8,16` as (8, 16).
fn parse_device(f: &[u8]) -> Option<(u64, u64)> {
    let comma = f.iter().position(|&c| c == b',')?;
    let major = crate::trace::text::parse_u64(&f[..comma])?;
    let minor = crate::trace::text::parse_u64(&f[comma + 1..])?;
    Some((major, minor))
}

/// Whether a line starts blkparse's closing summary.
fn starts_summary(first: &[u8], second: &[u8]) -> bool {
    let cpu =
        first.len() > 3 && first.starts_with(b"CPU") && first[3..].iter().all(u8::is_ascii_digit);
    (cpu || first == b"Total") && second.first() == Some(&b'(')
}

impl RawTraceReader for BlkparseReader {
    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            if let Some(p) = &mut self.pairing {
                if let Some(h) = p.pop_settled() {
                    self.measured = h.measured;
                    return Ok(Some((h.rec, Some(h.dev))));
                }
                if p.ended {
                    self.measured = None;
                    return Ok(None);
                }
            }
            let line = self.next_line()?;
            let Some(p) = &mut self.pairing else {
                // Without pairing only requests are read, and go straight out.
                match line {
                    Some(Line::Request(rec, dev, _)) => return Ok(Some((rec, Some(dev)))),
                    Some(_) => continue,
                    None => return Ok(None),
                }
            };
            match line {
                None => p.ended = true,
                Some(Line::Request(rec, dev, extent)) => p.hold(rec, dev, extent),
                Some(Line::Merge(extent)) => p.merged(extent),
                Some(Line::Completion(time, extent)) => {
                    if let Err((line, at)) = p.complete(extent, time) {
                        return Err(self.src.err(format!(
                            "this completion at {:.9} s comes before its request (line {line}) at {:.9} s",
                            time as f64 / 1e9,
                            at as f64 / 1e9
                        )));
                    }
                }
            }
        }
    }

    fn measured(&self) -> Option<Nanos> {
        self.measured
    }

    fn unpaired_completions(&self) -> u64 {
        self.pairing
            .as_ref()
            .map_or(0, |p| p.counts.unpaired_completions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_util::*;

    /// `text` read with the fast path and the general way only.
    fn both_ways(text: &str, event: Event, pair: bool) -> (Drained, Drained) {
        let make = || {
            BlkparseReader::new(text_input(text), "t.txt", event)
                .with_pairing(pair)
                .unwrap()
        };
        fast_and_general(make, |r| r.src.general_only = true)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]
        /// The fast path reads every text as the general way does, for every
        /// event and with pairing or without: the same records, devices and
        /// measured times, the same error on the same line.
        #[test]
        fn the_fast_path_reads_what_the_general_way_reads(
            text in mutated_lines(&[
                &["8,16", "8,32", "  8,16", "4096,1", "CPU0", "Total"], &["5", "(8,16):"], &["1", "0"],
                &["0.000001850", "1.5", "2", "0.0000000001", "1."], &["18615", "0"],
                &["Q", "A", "C", "D", "M", "F", "m", "QQ", "q"], &["R", "WS", "FN", "N", "Rs", "RA"],
                &["1444645666", "0", "36028797018963968"], &["+", "[0]"], &["256", "8"], &["[java]", "<-"],
            ], " "),
            event in proptest::sample::select(&[Event::Queued, Event::Issued, Event::Completed][..]),
            pair in proptest::bool::ANY,
        ) {
            let pair = pair && event != Event::Completed;
            let (fast, general) = both_ways(&text, event, pair);
            proptest::prop_assert_eq!(fast, general, "{:?}", text);
        }
    }

    proptest::proptest! {
        /// The words are the line's runs of bytes other than spaces and
        /// tabs, in order, up to the first that starts with other white
        /// space: on lines past several 64-byte stretches, with long runs
        /// of blanks and words crossing a stretch's end.
        #[test]
        fn words_are_the_runs_between_blanks(
            parts in proptest::collection::vec(proptest::prop_oneof![
                "[ \t]{1,3}", " {60,70}", "[a-z0-9,.+]{1,8}", "[a-z]{60,70}", "[\r\x0b\x00]",
            ], 0..12),
        ) {
            let line = parts.concat().into_bytes();
            let mut want = vec![];
            for w in line.split(|&c| c == b' ' || c == b'\t').filter(|w| !w.is_empty()) {
                if w[0] <= b' ' {
                    break;
                }
                want.push(w);
            }
            let mut words = Words::new(&line);
            let got: Vec<&[u8]> = std::iter::from_fn(|| words.next_word()).collect();
            proptest::prop_assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&line));
        }
    }

    #[test]
    fn the_fast_path_takes_blkparse_events() {
        let q = b"  8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]\r";
        assert_eq!(
            fast_line(q, b"Q"),
            Some(Fast::Event(
                b'Q',
                Op::Read,
                8 << 20 | 16,
                1_850,
                1_444_645_666,
                256
            ))
        );
        assert_eq!(fast_line(q, b"D"), Some(Fast::Skip));
        assert_eq!(
            fast_line(
                b"  8,16   5 0 0.1 0  m   N cfq18615S / insert_request",
                b"Q"
            ),
            Some(Fast::Skip)
        );
        assert_eq!(
            fast_line(b"  8,16   2 43 1.7 16766  Q  FN [kworker]", b"Q"),
            Some(Fast::Skip)
        );
        for other in [
            "CPU0 (8,16):",
            "  8,16   5  2  0.000001850 18615  \"Q\"   R 1444645666 + 256 [java]",
            "  8,16   5  2  0.000001850 18615  Q   R 1444645666 256 [java]",
            "  8,16   5  2  0.0000018501 18615  Q   R 1444645666 + 256 [java]",
            "  8,16   5  2  0.000001850 18615  Q",
            "  8,16   5        8     2.100000000     0  C  WS 1950885322 [0]",
        ] {
            assert_eq!(fast_line(other.as_bytes(), b"QC"), None, "{other}");
        }
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(
                std::fs::File::open(data("blktrace.txt.gz")).unwrap(),
            ),
            &mut text,
        )
        .unwrap();
        for (event, pair) in [
            (Event::Queued, false),
            (Event::Queued, true),
            (Event::Issued, true),
            (Event::Completed, false),
        ] {
            let (fast, general) = both_ways(&text, event, pair);
            assert!(fast.0.len() > 100, "{event:?}");
            assert_eq!(fast, general, "{event:?} {pair}");
        }
    }

    const SAMPLE: &str =
        "  8,16   5        1     0.000000000 18615  A   R 1444645666 + 256 <- (8,17) 1444645632\n\
  8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]\n\
  8,16   5        3     0.000006438 18615  G   R 1444645666 + 256 [java]\n\
  8,16   5        0     0.000012990     0  m   N cfq18615S / insert_request\n\
  8,16   5        6     0.000031865 18615  D   R 1444645666 + 256 [java]\n\
  8,32   2       41     1.500000000 16766  Q  WS 3428327338 + 8 [flush-8:16]\n\
  8,16   2       42     1.600000000 16766  Q  FWS 0 + 0 [kworker]\n\
  8,16   2       43     1.700000000 16766  Q  FN [kworker]\n\
  8,16   5        7     2.000000000     0  C   R 1444645666 + 256 [0]\n\
  8,16   5        8     2.100000000     0  C  WS 1950885322 [0]\n\
\n\
CPU0 (8,16):\n\
 Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB\n\
Total (8,16):\n\
 Reads Queued:           1,      128KiB\t Writes Queued:           1,        4KiB\n\
Throughput (R/W): 0KiB/s / 0KiB/s\n";

    fn read(text: &str, event: Event) -> SimResult<Vec<(TraceRecord, Option<u64>)>> {
        let mut r = BlkparseReader::new(text_input(text), "t.blk", event);
        let mut v = vec![];
        while let Some(x) = r.next_raw()? {
            v.push(x);
        }
        Ok(v)
    }

    #[test]
    fn queued_events_with_data_are_the_requests_and_the_summary_ends_them() {
        let v = read(SAMPLE, Event::Queued).unwrap();
        assert_eq!(v.len(), 3, "{v:?}");
        let (r, dev) = v[0];
        assert_eq!(
            (r.time, r.op, r.offset, r.len, r.line),
            (
                Nanos(1_850),
                Op::Read,
                Bytes(1444645666 * 512),
                Bytes(256 * 512),
                2
            )
        );
        assert_eq!(dev, Some(8 << 20 | 16));
        assert_eq!(
            (v[1].0.op, v[1].0.time, v[1].1),
            (Op::Write, Nanos(1_500_000_000), Some(8 << 20 | 32))
        );
        // A flush with a zero-length payload stays (the engine skips empty requests); FN has no payload.
        assert_eq!((v[2].0.op, v[2].0.len), (Op::Write, Bytes(0)));
    }

    #[test]
    fn issued_and_completed_events_can_stand_for_the_requests() {
        let d = read(SAMPLE, Event::Issued).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0.time, Nanos(31_865));
        let c = read(SAMPLE, Event::Completed).unwrap();
        assert_eq!(
            (c.len(), c[0].0.time, c[0].0.line),
            (2, Nanos(2_000_000_000), 9)
        );
        // A completion printed without a size (a flush's) is a zero-length write.
        assert_eq!(
            (c[1].0.op, c[1].0.len, c[1].0.offset),
            (Op::Write, Bytes(0), Bytes(1950885322 * 512))
        );
        assert!(Event::parse("X")
            .unwrap_err()
            .to_string()
            .contains("Q (queued)"));
    }

    #[test]
    fn malformed_events_name_the_line() {
        for (bad, needle) in [
            ("  8,16 0 1 0.5 1 Q R 10 - 8 [x]\n", "SECTOR + SECTORS"),
            ("  8,16 0 1 0.5 1 Q R 10 8\n", "SECTOR + SECTORS"),
            ("  8,16 0 1 0.5 1 Q\n", "at least 7 fields"),
            ("garbage here\n", "MAJ,MIN"),
            ("  8,16 0 1 -0.5 1 Q W 10 + 8 [x]\n", "SECONDS"),
            ("  8,16 0 1 0.5 1 Q W 10 + x [x]\n", "SECTORS"),
            (
                "  9999,16 0 1 0.5 1 Q W 10 + 8 [x]\n",
                "out of Linux's range",
            ),
            (
                "  8,16 0 1 0.5 1 Q W 36028797018963968 + 8 [x]\n",
                "overflows",
            ),
        ] {
            let e = read(
                &format!("  8,16 0 1 0.1 1 Q W 0 + 8 [x]\n{bad}"),
                Event::Queued,
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains("t.blk:2") && e.contains(needle), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_real_capture_reads_whole() {
        // tests/data/blktrace.txt.gz: 15,524 Q events in 50,000 lines of a real capture.
        let recs = read_all(&spec(&data("blktrace.txt.gz"))).unwrap();
        assert_eq!(recs.len(), 15_524);
        let (r, w) = counts(&recs);
        assert!(r > 0 && w > 0, "{r} reads, {w} writes");
        assert!(recs.windows(2).all(|p| p[0].line < p[1].line));
    }
    type Measured = Vec<(TraceRecord, Option<Nanos>)>;

    /// Every record with its measured response, and the pairing counts.
    fn read_paired(
        text: &str,
        event: Event,
        window: Option<u64>,
    ) -> SimResult<(Measured, PairCounts)> {
        let input = text_input(text);
        let mut r = BlkparseReader::new(input, "p.blk", event).with_pairing(true)?;
        if let (Some(w), Some(p)) = (window, r.pairing.as_mut()) {
            p.window = w;
        }
        let mut v = vec![];
        while let Some((rec, _)) = r.next_raw()? {
            v.push((rec, r.measured()));
        }
        let counts = r.pair_counts().unwrap_or_default();
        assert_eq!(r.unpaired_completions(), counts.unpaired_completions);
        Ok((v, counts))
    }

    #[test]
    fn pairing_measures_each_request_and_keeps_request_order() {
        let text = "  8,16 0 1 0.000000100 1 Q W 100 + 8 [a]\n\
  8,16 0 2 0.000000200 1 Q W 108 + 8 [a]\n\
  8,16 0 3 0.000000210 1 M W 108 + 8 [a]\n\
  8,16 0 4 0.000000300 1 Q R 500 + 16 [a]\n\
  8,32 0 5 0.000000400 1 Q W 100 + 8 [a]\n\
  8,16 0 6 0.000000500 1 D W 100 + 16 [a]\n\
  8,16 0 7 0.000000600 1 Q W 200 + 8 [a]\n\
  8,16 0 8 0.000000700 1 Q W 200 + 8 [a]\n\
  8,16 0 9 0.000001000 0 C W 999 + 8 [0]\n\
  8,16 0 10 0.000001100 0 C W 200 + 8 [0]\n\
  8,16 0 11 0.000001200 0 C W 100 + 8 [0]\n\
  8,32 0 12 0.000001300 0 C W 100 + 8 [0]\n\
  8,16 0 13 0.000001500 0 C W 200 + 8 [0]\n";
        let (v, counts) = read_paired(text, Event::Queued, None).unwrap();
        let got: Vec<(u64, Option<Nanos>)> = v.iter().map(|(r, m)| (r.line, *m)).collect();
        assert_eq!(
            got,
            vec![
                (1, Some(Nanos(1_100))), // completed on line 11, not by 8,32's line 12
                (2, None),               // merged (line 3): no completion of its own
                (4, None),               // never completed
                (5, Some(Nanos(900))),   // 8,32's own
                (7, Some(Nanos(500))),   // two outstanding of one extent: oldest first
                (8, Some(Nanos(800))),
            ]
        );
        assert_eq!(
            counts,
            PairCounts {
                paired: 4,
                merged: 1,
                unfinished: 1,
                unpaired_completions: 1
            }
        );
        // The same records as without pairing, in the same order.
        let plain: Vec<TraceRecord> = read(text, Event::Queued)
            .unwrap()
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(v.iter().map(|x| x.0).collect::<Vec<_>>(), plain);
        // D events pair too (line 6's completion never comes; merges are Q's business).
        let (v, counts) = read_paired(text, Event::Issued, None).unwrap();
        assert_eq!(
            (
                v.len(),
                v[0].1,
                counts.unfinished,
                counts.unpaired_completions
            ),
            (1, None, 1, 5)
        );
    }

    #[test]
    fn a_request_waits_for_its_completion_only_a_window_of_later_requests() {
        let text = "  8,16 0 1 1.0 1 Q W 1 + 8 [a]\n\
  8,16 0 2 1.1 1 Q W 2 + 8 [a]\n\
  8,16 0 3 1.2 0 C W 2 + 8 [0]\n\
  8,16 0 4 1.3 1 Q W 3 + 8 [a]\n\
  8,16 0 5 1.4 0 C W 3 + 8 [0]\n\
  8,16 0 6 1.5 0 C W 1 + 8 [0]\n";
        let (v, counts) = read_paired(text, Event::Queued, Some(2)).unwrap();
        let got: Vec<Option<Nanos>> = v.iter().map(|x| x.1).collect();
        assert_eq!(
            got,
            vec![None, Some(Nanos(100_000_000)), Some(Nanos(100_000_000))]
        );
        assert_eq!(
            counts,
            PairCounts {
                paired: 2,
                merged: 0,
                unfinished: 1,
                unpaired_completions: 1
            }
        );
        // With the full window, the first one is paired after all.
        let (v, _) = read_paired(text, Event::Queued, None).unwrap();
        assert_eq!(v[0].1, Some(Nanos(500_000_000)));
    }

    #[test]
    fn pairing_refuses_completions_as_requests_and_completions_before_requests() {
        let e = read_paired("", Event::Completed, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Q (queued) or D (issued)"), "{e}");
        let e = read_paired(
            "  8,16 0 1 2.0 1 Q W 1 + 8 [a]\n  8,16 0 2 1.0 0 C W 1 + 8 [0]\n",
            Event::Queued,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("p.blk:2") && e.contains("before its request (line 1)"),
            "{e}"
        );
        // Other formats do not take the option.
        let mut s = spec(&data("wdev_3.csv"));
        s.pair = true;
        assert!(read_err(&s).to_string().contains("--pair-completions"));
    }

    #[test]
    fn the_real_capture_pairs_its_unmerged_requests() {
        let mut s = spec(&data("blktrace.txt.gz"));
        s.pair = true;
        let (_, mut sel) = crate::trace::open::open_selection(&s).unwrap();
        let (mut n, mut measured, mut last_line) = (0, vec![], 0);
        while let Some((rec, _)) = sel.next_record().unwrap() {
            assert!(rec.line > last_line, "records keep their request order");
            last_line = rec.line;
            n += 1;
            measured.extend(sel.measured());
        }
        assert_eq!(n, 15_524);
        // Most Q events were merged into others; the ones issued as they were get their completion.
        assert!(
            measured.len() > 50 && measured.len() < 200,
            "{}",
            measured.len()
        );
        assert!(
            measured.iter().all(|m| m.0 > 0 && m.0 < 10_000_000_000),
            "{measured:?}"
        );
        // The first request completes 354,819 ns after it was queued (lines 2 and 34).
        assert_eq!(measured[0], Nanos(356_669 - 1_850));
    }
}
