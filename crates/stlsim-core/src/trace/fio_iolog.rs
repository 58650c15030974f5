//! fio I/O logs, versions 2 and 3 (`write_iolog` / `read_iolog` of the fio
//! benchmark): a header line `fio version 2 iolog` or `fio version 3 iolog`,
//! then one action per line, fields separated by spaces:
//!
//! * version 2: `FILE add|open|close` for files, `FILE read|write OFFSET LENGTH`
//!   for I/O;
//! * version 3: the same, each line prefixed by a TIMESTAMP in microseconds
//!   since the start of the run (fio's `log_io_u` writes `utime_since_now`).
//!
//! OFFSET and LENGTH are bytes. `sync`, `datasync`, `trim` and `wait`
//! actions are skipped. Any other action is an error, or with
//! `skip_unknown` a line skipped and counted.
//!
//! * Version 2 records no time: every request is at time 0, so queue mode
//!   issues them as fast as its queue allows and flat-out mode one after
//!   another; the engine notes in the report that the trace has no times.
//! * Each distinct FILE is a device (numbered 0, 1 ... in order of first
//!   appearance) for disk selection.

use crate::error::SimResult;
use crate::trace::text::{digits_then, digits_to_end, show, CsvLines};
use crate::trace::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

/// The header line of a version-2 log.
pub const HEADER_V2: &str = "fio version 2 iolog";
/// The header line of a version-3 log.
pub const HEADER_V3: &str = "fio version 3 iolog";

/// The most distinct files (devices) one log may name.
const MAX_FILES: usize = 1 << 16;

/// Reader of fio version-2 and version-3 I/O logs.
pub struct FioIologReader {
    src: CsvLines,
    files: Files,
    /// 2 or 3 once the header is read; 0 before.
    version: u8,
    skip_unknown: bool,
    skipped: u64,
    /// Version 2 with a rate: nanoseconds between requests, and requests so far.
    gap: Option<f64>,
    issued: u64,
}

impl FioIologReader {
    /// A reader over decompressed iolog text; `file` labels error messages.
    /// With `skip_unknown`, a line whose action is none of those fio writes
    /// is skipped and counted instead of being an error.
    pub fn new(input: Box<dyn Read + Send>, file: &str, skip_unknown: bool) -> Self {
        FioIologReader {
            src: CsvLines::words(input, file),
            files: Files::default(),
            version: 0,
            skip_unknown,
            skipped: 0,
            gap: None,
            issued: 0,
        }
    }

    /// Give a version-2 log (which records no times) request `i` the time
    /// `i / rate_iops` seconds; a version-3 log with a rate is an error.
    pub fn with_rate(mut self, rate_iops: Option<f64>) -> SimResult<Self> {
        if let Some(r) = rate_iops {
            if !(r.is_finite() && r > 0.0 && r <= 1e9) {
                return Err(crate::error::SimError::Config(format!(
                    "trace option 'rate_iops' is {r}: expected requests per second, above 0 and at most 1e9"
                )));
            }
            self.gap = Some(1e9 / r);
        }
        Ok(self)
    }
}

/// A read or write line as fio writes it (one space between fields, a file
/// name without quotes or other white space at its ends, numbers of at most
/// 18 digits, an optional `\r`), read in one pass: `(timestamp us when
/// `timed`, file name, op, offset, length)`. `None` sends the line the
/// general way: file actions, errors, anything unusual.
#[inline]
fn fast_line(line: &[u8], timed: bool) -> Option<(u64, &[u8], Op, u64, u64)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut i = 0;
    let us = if timed {
        digits_then(line, &mut i, b' ')?
    } else {
        0
    };
    let rest = line.get(i..)?;
    let n = memchr::memchr(b' ', rest)?;
    let name = &rest[..n];
    // The general way trims a word of white space and one pair of quotes.
    match (name.first(), name.last()) {
        (Some(a), Some(z))
            if !a.is_ascii_whitespace() && !z.is_ascii_whitespace() && *a != b'"' => {}
        _ => return None,
    }
    i += n + 1;
    let rest = &line[i..];
    let op = if rest.starts_with(b"write ") {
        i += 6;
        Op::Write
    } else if rest.starts_with(b"read ") {
        i += 5;
        Op::Read
    } else {
        return None;
    };
    let offset = digits_then(line, &mut i, b' ')?;
    let len = digits_to_end(line, &mut i)?;
    Some((us, name, op, offset, len))
}

/// The files a log names, each a device numbered in order of first
/// appearance.
#[derive(Default)]
struct Files {
    names: Vec<Vec<u8>>,
    /// The device last asked for, tried first (logs name one file for long runs).
    last: usize,
}

impl Files {
    /// The device number of `name`, added if new.
    fn device(&mut self, s: &CsvLines, name: &[u8]) -> SimResult<u64> {
        if self.names.get(self.last).map(Vec::as_slice) == Some(name) {
            return Ok(self.last as u64);
        }
        let dev = match self.names.iter().position(|f| f.as_slice() == name) {
            Some(i) => i,
            None if self.names.len() >= MAX_FILES => {
                return Err(s.err(format!("more than {MAX_FILES} distinct files: each is a device, and no drive has that many")));
            }
            None => {
                self.names.push(name.to_vec());
                self.names.len() - 1
            }
        };
        self.last = dev;
        Ok(dev as u64)
    }
}

impl RawTraceReader for FioIologReader {
    fn skipped_unknown(&self) -> u64 {
        self.skipped
    }

    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            let s = &mut self.src;
            if self.version == 0 {
                if !s.advance()? {
                    return Ok(None);
                }
                self.version = header_version(s)?;
                if self.version == 3 && self.gap.is_some() {
                    return Err(s.err("rate_iops (--rate) gives times to a version-2 log, which has none; this version-3 log records its own"));
                }
                continue;
            }
            if !s.next_line()? {
                return Ok(None);
            }
            let timed = self.version == 3;
            // Marked before the parse: the file name borrows the line, and an
            // error numbering files names it (a blank line is then passed over).
            s.mark_record();
            let fast = if s.fast_paths() {
                fast_line(s.raw(), timed)
            } else {
                None
            };
            let (us, op, offset, len, dev) = match fast {
                Some((us, name, op, offset, len)) => {
                    let dev = self.files.device(s, name)?;
                    (us, op, offset, len, dev)
                }
                None => {
                    if !s.split_current()? {
                        continue;
                    }
                    // Version 3 shifts every field by its timestamp.
                    let at = usize::from(timed);
                    let us = if timed {
                        s.u64_field(0, "TIMESTAMP (us)")?
                    } else {
                        0
                    };
                    let action = s.field(at + 1);
                    let op = match action {
                        b"read" => Op::Read,
                        b"write" => Op::Write,
                        b"add" | b"open" | b"close" | b"sync" | b"datasync" | b"trim" | b"wait" => {
                            continue
                        }
                        other => {
                            s.unknown_op(self.skip_unknown, &mut self.skipped, || {
                                format!(
                                    "action (field {}) is '{}', expected read, write, add, open, close, sync, datasync, trim or wait",
                                    at + 2,
                                    show(other)
                                )
                            })?;
                            continue;
                        }
                    };
                    if timed {
                        s.expect_fields(5, "TIMESTAMP FILE ACTION OFFSET LENGTH")?;
                    } else {
                        s.expect_fields(4, "FILE ACTION OFFSET LENGTH")?;
                    }
                    let offset = s.u64_field(at + 2, "OFFSET")?;
                    let len = s.u64_field(at + 3, "LENGTH")?;
                    let dev = self.files.device(s, s.field(at))?;
                    (us, op, offset, len, dev)
                }
            };
            let time = if timed {
                Nanos(
                    us.checked_mul(1_000)
                        .ok_or_else(|| s.err(format!("TIMESTAMP (field 1) overflows: {us} us")))?,
                )
            } else {
                // Version 2: from the rate (or 0) by the request's number.
                Nanos(
                    self.gap
                        .map_or(0, |g| (self.issued as f64 * g).round() as u64),
                )
            };
            self.issued += 1;
            let rec = TraceRecord {
                time,
                op,
                offset: Bytes(offset),
                len: Bytes(len),
                line: s.line(),
            };
            return Ok(Some((rec, Some(dev))));
        }
    }
}

/// The version (2 or 3) a log's header line names, or an error.
fn header_version(s: &CsvLines) -> SimResult<u8> {
    // The words of the line, one space apart (quoted in an error as one
    // field is: at most 60 characters).
    let line = (0..s.len())
        .map(|i| s.field(i))
        .collect::<Vec<_>>()
        .join(&b' ');
    match line.as_slice() {
        l if l == HEADER_V2.as_bytes() => Ok(2),
        l if l == HEADER_V3.as_bytes() => Ok(3),
        l if l.starts_with(b"fio version") => Err(s.err(format!(
            "'{}': fio iolog versions 2 and 3 are read, not this one",
            show(l)
        ))),
        l => Err(s.err(format!(
            "expected the header '{HEADER_V2}' or '{HEADER_V3}', found '{}'",
            show(l)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_util::{fast_and_general, mutated_lines, text_input, Drained};

    /// `text` read with the fast path and the general way only.
    fn both_ways(text: &str, skip: bool, rate: Option<f64>) -> (Drained, Drained) {
        let make = || {
            FioIologReader::new(text_input(text), "t.log", skip)
                .with_rate(rate)
                .unwrap()
        };
        fast_and_general(make, |r| r.src.general_only = true)
    }

    const FILES: &[&str] = &["/dev/sda", "/dev/sdb", "\"/dev/sda\"", "\"/dev/sdb"];
    const ACTIONS: &[&str] = &["read", "write", "add", "open", "sync", "Write"];
    const NUMBERS: &[&str] = &["4096", "2188587008", "0"];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]
        /// The fast path reads every log as the general way does: the same
        /// records and devices, the same error on the same line, the same skips.
        #[test]
        fn the_fast_path_reads_what_the_general_way_reads(
            v2 in mutated_lines(&[FILES, ACTIONS, NUMBERS, NUMBERS], " "),
            v3 in mutated_lines(&[&["7", "0", "18446744073709552"], FILES, ACTIONS, NUMBERS, NUMBERS], " "),
            timed in proptest::bool::ANY,
            skip in proptest::bool::ANY,
            rate in proptest::option::of(1.0f64..1e6),
        ) {
            let (header, body, rate) = if timed { (HEADER_V3, v3, None) } else { (HEADER_V2, v2, rate) };
            let text = format!("{header}\n{body}");
            let (fast, general) = both_ways(&text, skip, rate);
            proptest::prop_assert_eq!(fast, general, "{:?}", text);
        }
    }

    #[test]
    fn the_fast_path_takes_fios_lines() {
        assert_eq!(
            fast_line(b"/dev/sda write 2188587008 4096\r", false),
            Some((0, &b"/dev/sda"[..], Op::Write, 2_188_587_008, 4096))
        );
        assert_eq!(
            fast_line(b"7 /dev/sda read 0 512", true),
            Some((7, &b"/dev/sda"[..], Op::Read, 0, 512))
        );
        for (other, timed) in [
            ("/dev/sda add", false),
            ("/dev/sda  read 0 512", false),
            ("\"/dev/sda\" read 0 512", false),
            ("/dev/sda read 0 512", true),
            ("/dev/sda read 0 512 1", false),
        ] {
            assert_eq!(fast_line(other.as_bytes(), timed), None, "{other}");
        }
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(
                std::fs::File::open(crate::trace::test_util::data("iolog_8G.log.gz")).unwrap(),
            ),
            &mut text,
        )
        .unwrap();
        let (fast, general) = both_ways(&text, false, None);
        assert!(fast.0.len() > 1000, "{}", fast.0.len());
        assert_eq!(fast, general);
    }

    fn read_all(text: &'static str) -> SimResult<Vec<TraceRecord>> {
        let mut r = FioIologReader::new(Box::new(text.as_bytes()), "t.log", false);
        let mut v = vec![];
        while let Some((rec, _)) = r.next_raw()? {
            v.push(rec);
        }
        Ok(v)
    }

    #[test]
    fn reads_version_2_actions_and_skips_file_actions() {
        let text =
            "fio version 2 iolog\n/dev/sda add\n/dev/sda open\n/dev/sda write 2188587008 4096\n\
                    /dev/sda read 4096 8192\n/dev/sda sync\n/dev/sda close\n";
        let recs = read_all(text).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            (recs[0].op, recs[0].offset, recs[0].len, recs[0].line),
            (Op::Write, Bytes(2188587008), Bytes(4096), 4)
        );
        assert_eq!(
            (recs[1].op, recs[1].offset, recs[1].len),
            (Op::Read, Bytes(4096), Bytes(8192))
        );
    }

    #[test]
    fn bad_headers_versions_and_actions_name_the_line() {
        let e = read_all("/dev/sda write 0 4096\n").unwrap_err();
        assert!(e.to_string().contains("t.log:1"), "{e}");
        let e = read_all("fio version 4 iolog\n").unwrap_err();
        assert!(e.to_string().contains("versions 2 and 3"), "{e}");
        let e = read_all("fio version 2 iolog\n/dev/sda erase 0 1\n").unwrap_err();
        assert!(
            e.to_string().contains("t.log:2") && e.to_string().contains("erase"),
            "{e}"
        );
        assert!(e.to_string().contains("--skip-unknown"), "{e}");
    }

    #[test]
    fn skip_unknown_counts_lines_with_other_actions() {
        // A v3 log with an action fio does not write, and a v2 one.
        let text = "fio version 3 iolog\n1 f add\n2 f write 0 4096\n3 f erase 0 4096\n4 f trim 0 4096\n5 f read 0 512\n6 f zap\n";
        let mut r = FioIologReader::new(Box::new(text.as_bytes()), "t.log", true);
        let mut lines = vec![];
        while let Some((rec, _)) = r.next_raw().unwrap() {
            lines.push(rec.line);
        }
        assert_eq!(lines, vec![3, 6]);
        // trim is a known action (skipped, not counted); erase and zap are not.
        assert_eq!(r.skipped_unknown(), 2);
        let mut r = FioIologReader::new(Box::new(text.as_bytes()), "t.log", false);
        let e = loop {
            match r.next_raw() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("no error"),
                Err(e) => break e,
            }
        };
        assert!(
            e.to_string().starts_with("t.log:4: ") && e.to_string().contains("--skip-unknown"),
            "{e}"
        );
    }

    /// Found by fuzzing (tests/fuzz_readers.rs, fio-v2 case 85): a first
    /// line that is not the header was quoted whole, every word of it, in
    /// an error of thousands of characters. It is quoted as a field is, at
    /// most 60 characters.
    #[test]
    fn a_long_first_line_is_quoted_short() {
        let text: &'static str = Box::leak(format!("fio {}\n", "1 ".repeat(5000)).into_boxed_str());
        let e = read_all(text).unwrap_err().to_string();
        assert!(e.starts_with("t.log:1: expected the header 'fio version 2 iolog' or 'fio version 3 iolog', found 'fio 1 1 1"), "{e}");
        assert!(e.ends_with("1 1 ...'") && e.len() < 200, "{e}");
        let e = read_all("fio version 9 iolog\r\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "t.log:1: 'fio version 9 iolog': fio iolog versions 2 and 3 are read, not this one"
        );
        assert!(read_all("fio  version\t2 iolog \n/dev/a write 0 1\n").is_ok());
    }

    #[test]
    fn version_3_carries_microsecond_timestamps_and_runs_of_spaces() {
        let text = "fio version 3 iolog\n2 Nvme1n1 add\n872 Nvme1n1 open\n878  Nvme1n1\twrite 0 16384\n\
                    888 Nvme1n1 read 16384 4096\n891 /dev/sdb write 8192 512\n10001677 Nvme1n1 close\n";
        let mut r = FioIologReader::new(Box::new(text.as_bytes()), "t.log", false);
        let mut v = vec![];
        while let Some(x) = r.next_raw().unwrap() {
            v.push(x);
        }
        assert_eq!(v.len(), 3);
        assert_eq!(
            (v[0].0.time, v[0].0.op, v[0].0.offset, v[0].0.len, v[0].1),
            (Nanos(878_000), Op::Write, Bytes(0), Bytes(16384), Some(0))
        );
        assert_eq!(
            (v[1].0.time, v[1].0.op, v[1].0.line),
            (Nanos(888_000), Op::Read, 5)
        );
        assert_eq!((v[2].0.time, v[2].1), (Nanos(891_000), Some(1)));
        let e = read_all("fio version 3 iolog\n5 f write 0\n").unwrap_err();
        assert!(
            e.to_string().contains("t.log:2") && e.to_string().contains("expected 5 fields"),
            "{e}"
        );
        let e = read_all("fio version 3 iolog\nx f write 0 1\n").unwrap_err();
        assert!(e.to_string().contains("TIMESTAMP"), "{e}");
    }

    #[test]
    fn a_rate_gives_a_version_2_log_its_times() {
        let v2 = "fio version 2 iolog\nf add\nf open\nf write 0 4096\nf sync\nf read 0 512\nf write 4096 4096\n";
        let read = |text: &str, rate: Option<f64>| -> SimResult<Vec<u64>> {
            let mut r = FioIologReader::new(text_input(text), "t.log", false).with_rate(rate)?;
            let mut t = vec![];
            while let Some((rec, _)) = r.next_raw()? {
                t.push(rec.time.0);
            }
            Ok(t)
        };
        assert_eq!(read(v2, None).unwrap(), vec![0, 0, 0]);
        // 4,000 requests a second: one every 250 us, the sync not counted.
        assert_eq!(read(v2, Some(4000.0)).unwrap(), vec![0, 250_000, 500_000]);
        let e = read("fio version 3 iolog\n1 f write 0 512\n", Some(10.0))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.log:1: ") && e.contains("version-3"), "{e}");
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(read(v2, Some(bad))
                .unwrap_err()
                .to_string()
                .contains("rate_iops"));
        }
    }
}
