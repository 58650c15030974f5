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

use crate::error::{SimError, SimResult};
use crate::trace::open::text::{show, CsvLines};
use crate::trace::open::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

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

/// Reader of blkparse text output.
pub struct BlkparseReader {
    src: CsvLines,
    event: Event,
    summary: bool,
}

impl BlkparseReader {
    /// A reader over decompressed blkparse text; `file` labels error messages.
    pub fn new(input: Box<dyn Read + Send>, file: &str, event: Event) -> Self {
        BlkparseReader { src: CsvLines::words(input, file), event, summary: false }
    }
}

/// `8,16` as (8, 16).
fn parse_device(f: &[u8]) -> Option<(u64, u64)> {
    let comma = f.iter().position(|&c| c == b',')?;
    let major = crate::trace::open::text::parse_u64(&f[..comma])?;
    let minor = crate::trace::open::text::parse_u64(&f[comma + 1..])?;
    Some((major, minor))
}

/// Whether a line starts blkparse's closing summary.
fn starts_summary(first: &[u8], second: &[u8]) -> bool {
    let cpu = first.len() > 3 && first.starts_with(b"CPU") && first[3..].iter().all(u8::is_ascii_digit);
    (cpu || first == b"Total") && second.first() == Some(&b'(')
}

impl RawTraceReader for BlkparseReader {
    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            let s = &mut self.src;
            if self.summary || !s.advance()? {
                return Ok(None);
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
            if s.field(5) != self.event.letter() {
                continue;
            }
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
                    show(self.event.letter()),
                    show(rwbs)
                )));
            }
            let dev = device_number(major, minor)
                .ok_or_else(|| s.err(format!("device {major},{minor} is out of Linux's range (major < 4096, minor < 2^20)")))?;
            let time = s.scaled_field(3, 1_000_000_000, "SECONDS")?;
            let sector = s.u64_field(7, "SECTOR")?;
            let sectors = if sized { s.u64_field(9, "SECTORS")? } else { 0 };
            let offset = sector.checked_mul(512).ok_or_else(|| s.err(format!("SECTOR (field 8) overflows: {sector} sectors of 512 bytes")))?;
            let len = sectors.checked_mul(512).ok_or_else(|| s.err(format!("SECTORS (field 10) overflows: {sectors}")))?;
            let rec = TraceRecord { time: Nanos(time), op, offset: Bytes(offset), len: Bytes(len), line: s.line() };
            return Ok(Some((rec, Some(dev))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::open::test_util::*;

    const SAMPLE: &str = "  8,16   5        1     0.000000000 18615  A   R 1444645666 + 256 <- (8,17) 1444645632\n\
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
        let mut r = BlkparseReader::new(Box::new(std::io::Cursor::new(text.as_bytes().to_vec())), "t.blk", event);
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
        assert_eq!((r.time, r.op, r.offset, r.len, r.line), (Nanos(1_850), Op::Read, Bytes(1444645666 * 512), Bytes(256 * 512), 2));
        assert_eq!(dev, Some(8 << 20 | 16));
        assert_eq!((v[1].0.op, v[1].0.time, v[1].1), (Op::Write, Nanos(1_500_000_000), Some(8 << 20 | 32)));
        // A flush with a zero-length payload stays (the engine skips empty requests); FN has no payload.
        assert_eq!((v[2].0.op, v[2].0.len), (Op::Write, Bytes(0)));
    }

    #[test]
    fn issued_and_completed_events_can_stand_for_the_requests() {
        let d = read(SAMPLE, Event::Issued).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0.time, Nanos(31_865));
        let c = read(SAMPLE, Event::Completed).unwrap();
        assert_eq!((c.len(), c[0].0.time, c[0].0.line), (2, Nanos(2_000_000_000), 9));
        // A completion printed without a size (a flush's) is a zero-length write.
        assert_eq!((c[1].0.op, c[1].0.len, c[1].0.offset), (Op::Write, Bytes(0), Bytes(1950885322 * 512)));
        assert!(Event::parse("X").unwrap_err().to_string().contains("Q (queued)"));
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
            ("  9999,16 0 1 0.5 1 Q W 10 + 8 [x]\n", "out of Linux's range"),
            ("  8,16 0 1 0.5 1 Q W 36028797018963968 + 8 [x]\n", "overflows"),
        ] {
            let e = read(&format!("  8,16 0 1 0.1 1 Q W 0 + 8 [x]\n{bad}"), Event::Queued).unwrap_err().to_string();
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
}
