//! DiskSim's text trace formats and MQSim's, fields separated by runs of
//! spaces or tabs.
//!
//! * **DiskSim ASCII** (`disksim`): `TIME DEVNO BLKNO BCOUNT FLAGS`, as
//!   DiskSim's `iotrace_ascii_get_ioreq_event` reads it: TIME in
//!   milliseconds (fractional), BLKNO and BCOUNT in 512-byte blocks, FLAGS a
//!   hexadecimal bit set whose bit 0 is DiskSim's `READ` (set: read, clear:
//!   write). DEVNO is the record's disk.
//! * **MQSim** (`mqsim`): `ARRIVAL_NS DEVICE LBA SECTORS TYPE`, the same
//!   columns with the time in nanoseconds and TYPE `1` read, `0` write
//!   (MQSim's ASCII trace reader); LBA and SECTORS in 512-byte sectors.
//!   Another TYPE is an error, or with `skip_unknown` a record skipped and
//!   counted (DiskSim's FLAGS have no such case: bit 0 decides).
//! * **DiskSim validate** (`disksim-validate`): `R|W HIT|MISS BLKNO BCOUNT
//!   SERVICE_US NEXT_US`, DiskSim's `iotrace_validate_get_ioreq_event`: the
//!   request's measured response time on the real drive, then the think time
//!   before the next request, both in microseconds. In DiskSim's validation
//!   run a request arrives NEXT_US after the previous one *completes*; this
//!   reader gives each request the arrival time of the measured run
//!   (previous arrival + its measured response + NEXT_US), so an open-loop
//!   replay issues the requests when the real drive saw them. SERVICE_US is
//!   each request's measured response time
//!   ([`RawTraceReader::measured`]). HIT/MISS (the real drive's cache
//!   outcome) is ignored. A first field other than `R` / `W` is an
//!   error, or with `skip_unknown` a record skipped and counted (its
//!   measured times still advance the arrival clock: the real drive served
//!   it).

use crate::error::SimResult;
use crate::trace::text::{digits_then, parse_scaled, show, Columns, CsvLines, Take};
use crate::trace::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

/// Which of the two five-column layouts a [`DisksimAsciiReader`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// DiskSim: milliseconds, hexadecimal flags (bit 0 = read).
    Disksim,
    /// MQSim: nanoseconds, type 1 = read, 0 = write.
    Mqsim,
}

/// Reader of DiskSim ASCII and MQSim traces.
pub struct DisksimAsciiReader {
    src: CsvLines,
    /// DiskSim's one-pass fast path (MQSim has its own).
    fast: Option<Columns>,
    flavour: Flavour,
    skip_unknown: bool,
    skipped: u64,
}

impl DisksimAsciiReader {
    /// A reader over decompressed trace text; `file` labels error messages.
    /// With `skip_unknown`, an MQSim record whose TYPE is neither 0 nor 1 is
    /// skipped and counted instead of being an error.
    pub fn new(
        input: Box<dyn Read + Send>,
        file: &str,
        flavour: Flavour,
        skip_unknown: bool,
    ) -> Self {
        let src = CsvLines::words(input, file);
        let takes = vec![
            Take::Scaled(1_000_000),
            Take::Int,
            Take::Int,
            Take::Int,
            Take::Word,
        ];
        DisksimAsciiReader {
            fast: Columns::new(takes, &src, true),
            src,
            flavour,
            skip_unknown,
            skipped: 0,
        }
    }
}

/// An MQSim line in the form MQSim writes it (one space between fields,
/// numbers of at most 18 digits, TYPE `0` or `1`, an optional `\r`) read in
/// one pass: `(arrival ns, device, offset bytes, length bytes, op)`. `None`
/// sends the line the general way, which also words every error.
#[inline]
fn mqsim_fast_line(line: &[u8]) -> Option<(u64, u64, u64, u64, Op)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut i = 0;
    let time = digits_then(line, &mut i, b' ')?;
    let dev = digits_then(line, &mut i, b' ')?;
    let blk = digits_then(line, &mut i, b' ')?;
    let count = digits_then(line, &mut i, b' ')?;
    let op = match line.get(i..)? {
        b"1" => Op::Read,
        b"0" => Op::Write,
        _ => return None,
    };
    Some((
        time,
        dev,
        blk.checked_mul(512)?,
        count.checked_mul(512)?,
        op,
    ))
}

/// A DiskSim ASCII line in the plain form (one space between fields,
/// numbers of at most 18 digits, FLAGS of at most 16 hexadecimal digits)
/// read in one pass, as [`mqsim_fast_line`] reads MQSim's.
#[inline]
fn disksim_fast_line(fast: &Columns, line: &[u8]) -> Option<(u64, u64, u64, u64, Op)> {
    let mut nums = [0u64; 4];
    let mut words: [&[u8]; 1] = [&[]];
    fast.read(line, &mut nums, &mut words)?;
    let [time, dev, blk, count] = nums;
    let f = words[0];
    let hex = f
        .strip_prefix(b"0x")
        .or_else(|| f.strip_prefix(b"0X"))
        .unwrap_or(f);
    if hex.is_empty() || hex.len() > 16 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    // Bit 0 of the number is bit 0 of its last digit.
    let read = (*hex.last()? as char).to_digit(16)? & 1 == 1;
    let op = if read { Op::Read } else { Op::Write };
    Some((
        time,
        dev,
        blk.checked_mul(512)?,
        count.checked_mul(512)?,
        op,
    ))
}

fn sectors_to_bytes(s: &CsvLines, v: u64, name: &str, field: usize) -> SimResult<u64> {
    v.checked_mul(512).ok_or_else(|| {
        s.err(format!(
            "{name} (field {field}) overflows: {v} blocks of 512 bytes"
        ))
    })
}

impl RawTraceReader for DisksimAsciiReader {
    fn skipped_unknown(&self) -> u64 {
        self.skipped
    }

    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            let s = &mut self.src;
            if !s.next_line()? {
                return Ok(None);
            }
            let fast = match self.flavour {
                _ if !s.fast_paths() => None,
                Flavour::Mqsim => mqsim_fast_line(s.raw()),
                Flavour::Disksim => self
                    .fast
                    .as_ref()
                    .and_then(|f| disksim_fast_line(f, s.raw())),
            };
            if let Some((time, dev, offset, len, op)) = fast {
                s.mark_record();
                let rec = TraceRecord {
                    time: Nanos(time),
                    op,
                    offset: Bytes(offset),
                    len: Bytes(len),
                    line: s.line(),
                };
                return Ok(Some((rec, Some(dev))));
            }
            // Blank lines, runs of spaces, huge numbers, errors: the general way.
            if !s.split_current()? {
                continue;
            }
            let (time, op) = match self.flavour {
                Flavour::Disksim => {
                    s.expect_fields(5, "TIME_MS DEVNO BLKNO BCOUNT FLAGS")?;
                    let time = s.scaled_field(0, 1_000_000, "TIME (ms)")?;
                    let f = s.field(4);
                    let hex = f
                        .strip_prefix(b"0x")
                        .or_else(|| f.strip_prefix(b"0X"))
                        .unwrap_or(f);
                    let flags = std::str::from_utf8(hex)
                        .ok()
                        .and_then(|t| u64::from_str_radix(t, 16).ok())
                        .ok_or_else(|| {
                            s.err(format!(
                                "FLAGS (field 5) is not a hexadecimal number: '{}'",
                                show(f)
                            ))
                        })?;
                    (time, if flags & 1 == 1 { Op::Read } else { Op::Write })
                }
                Flavour::Mqsim => {
                    s.expect_fields(5, "ARRIVAL_NS DEVICE LBA SECTORS TYPE")?;
                    let op = match s.field(4) {
                        b"1" => Op::Read,
                        b"0" => Op::Write,
                        other => {
                            s.unknown_op(self.skip_unknown, &mut self.skipped, || {
                                format!(
                                    "TYPE (field 5) is '{}', expected 1 (read) or 0 (write)",
                                    show(other)
                                )
                            })?;
                            continue;
                        }
                    };
                    (s.u64_field(0, "ARRIVAL (ns)")?, op)
                }
            };
            let dev = s.u64_field(1, "DEVICE")?;
            let blk = s.u64_field(2, "BLKNO")?;
            let count = s.u64_field(3, "BCOUNT")?;
            let offset = sectors_to_bytes(s, blk, "BLKNO", 3)?;
            let len = sectors_to_bytes(s, count, "BCOUNT", 4)?;
            let rec = TraceRecord {
                time: Nanos(time),
                op,
                offset: Bytes(offset),
                len: Bytes(len),
                line: s.line(),
            };
            return Ok(Some((rec, Some(dev))));
        }
    }
}

/// A validate line in the plain form (one space between fields, `R` or
/// `W`, numbers of at most 18 digits each side of the point) read in one
/// pass: `(op, BLKNO, BCOUNT, SERVICE ns, NEXT ns)`.
#[inline]
fn validate_fast_line(fast: &Columns, line: &[u8]) -> Option<(Option<Op>, u64, u64, u64, u64)> {
    let mut nums = [0u64; 4];
    let mut words: [&[u8]; 1] = [&[]];
    fast.read(line, &mut nums, &mut words)?;
    let op = match words[0] {
        b"R" => Op::Read,
        b"W" => Op::Write,
        _ => return None,
    };
    let [blk, count, service, next] = nums;
    Some((Some(op), blk, count, service, next))
}

/// Reader of DiskSim `validate` traces.
pub struct DisksimValidateReader {
    src: CsvLines,
    /// The one-pass fast path: R|W, HIT|MISS, BLKNO, BCOUNT, SERVICE, NEXT.
    fast: Option<Columns>,
    /// Arrival of the next request in the measured run, nanoseconds.
    next_arrival: u64,
    skip_unknown: bool,
    skipped: u64,
    /// SERVICE of the record last returned.
    measured: Option<Nanos>,
}

impl DisksimValidateReader {
    /// A reader over decompressed trace text; `file` labels error messages.
    /// With `skip_unknown`, a record whose first field is neither R nor W is
    /// skipped and counted instead of being an error.
    pub fn new(input: Box<dyn Read + Send>, file: &str, skip_unknown: bool) -> Self {
        let src = CsvLines::words(input, file);
        let takes = vec![
            Take::Word,
            Take::Skip,
            Take::Int,
            Take::Int,
            Take::Scaled(1_000),
            Take::Scaled(1_000),
        ];
        DisksimValidateReader {
            fast: Columns::new(takes, &src, true),
            src,
            next_arrival: 0,
            skip_unknown,
            skipped: 0,
            measured: None,
        }
    }
}

impl RawTraceReader for DisksimValidateReader {
    fn skipped_unknown(&self) -> u64 {
        self.skipped
    }

    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            let s = &mut self.src;
            if !s.next_line()? {
                return Ok(None);
            }
            let fast = if s.fast_paths() {
                self.fast
                    .as_ref()
                    .and_then(|f| validate_fast_line(f, s.raw()))
            } else {
                None
            };
            let (op, blk, count, service, next) = match fast {
                Some(f) => {
                    s.mark_record();
                    f
                }
                None => {
                    if !s.split_current()? {
                        continue;
                    }
                    s.expect_fields(6, "R|W HIT|MISS BLKNO BCOUNT SERVICE_US NEXT_US")?;
                    let op = match s.field(0) {
                        b"R" => Some(Op::Read),
                        b"W" => Some(Op::Write),
                        other => {
                            s.unknown_op(self.skip_unknown, &mut self.skipped, || {
                                format!("field 1 is '{}', expected R or W", show(other))
                            })?;
                            None
                        }
                    };
                    let blk = s.u64_field(2, "BLKNO")?;
                    let count = s.u64_field(3, "BCOUNT")?;
                    let service = s.scaled_field(4, 1_000, "SERVICE (us)")?;
                    let next = parse_scaled(s.field(5), 1_000).ok_or_else(|| {
                        s.err(format!(
                            "NEXT (us) (field 6) is not a valid non-negative number: '{}'",
                            show(s.field(5))
                        ))
                    })?;
                    (op, blk, count, service, next)
                }
            };
            let time = self.next_arrival;
            // A skipped record still took its time on the measured drive: the
            // arrivals after it keep the measured run's clock.
            self.next_arrival = time
                .checked_add(service)
                .and_then(|t| t.checked_add(next))
                .ok_or_else(|| s.err("the arrival times overflow 2^64 ns"))?;
            let Some(op) = op else { continue };
            let offset = sectors_to_bytes(s, blk, "BLKNO", 3)?;
            let len = sectors_to_bytes(s, count, "BCOUNT", 4)?;
            self.measured = Some(Nanos(service));
            let rec = TraceRecord {
                time: Nanos(time),
                op,
                offset: Bytes(offset),
                len: Bytes(len),
                line: s.line(),
            };
            return Ok(Some((rec, None)));
        }
    }

    fn measured(&self) -> Option<Nanos> {
        self.measured
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_util::*;

    /// `text` read as MQSim with the fast path and the general way only.
    fn mqsim_both_ways(text: &str, skip: bool) -> (Drained, Drained) {
        let make = || DisksimAsciiReader::new(text_input(text), "t.trace", Flavour::Mqsim, skip);
        fast_and_general(make, |r| r.src.general_only = true)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]
        /// The MQSim fast path reads every text as the general way does: the
        /// same records, the same error on the same line, the same skips.
        #[test]
        fn the_mqsim_fast_path_reads_what_the_general_way_reads(
            text in mutated_lines(&[&["11413000", "0"], &["0", "1", "\t"], &["657728", "0"], &["16", "1"], &["1", "0", "2"]], " "),
            skip in proptest::bool::ANY,
        ) {
            let (fast, general) = mqsim_both_ways(&text, skip);
            proptest::prop_assert_eq!(fast, general, "{:?}", text);
        }
    }

    /// `text` read as DiskSim ASCII with the fast path and the general way only.
    fn disksim_both_ways(text: &str) -> (Drained, Drained) {
        let make = || DisksimAsciiReader::new(text_input(text), "t.trace", Flavour::Disksim, false);
        fast_and_general(make, |r| r.src.general_only = true)
    }

    /// `text` read as a validate trace with the fast path and the general way only.
    fn validate_both_ways(text: &str, skip: bool) -> (Drained, Drained) {
        let make = || DisksimValidateReader::new(text_input(text), "t.trace", skip);
        fast_and_general(make, |r| r.src.general_only = true)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]
        /// The DiskSim ASCII fast path reads every text as the general way
        /// does: the same records, the same error on the same line.
        #[test]
        fn the_disksim_fast_path_reads_what_the_general_way_reads(
            text in mutated_lines(&[
                &["0.000000", "0.007100", "12", "1.5", "0.1234567"], &["0", "1"], &["6165695", "0"], &["8", "1"],
                &["0", "1", "0x1", "0X0", "ffffffffffffffff", "1ffffffffffffffff", "00000000000000001", "+1", "0x", "g"],
            ], " "),
        ) {
            let (fast, general) = disksim_both_ways(&text);
            proptest::prop_assert_eq!(fast, general, "{:?}", text);
        }

        /// The validate fast path reads every text as the general way does:
        /// the same records, arrivals and measured times, the same error on
        /// the same line, the same skips.
        #[test]
        fn the_validate_fast_path_reads_what_the_general_way_reads(
            text in mutated_lines(&[
                &["R", "W", "r", "X"], &["Hit", "Miss"], &["4583176", "0"], &["4", "44"],
                &["663.00000", "14901.000000", "1", "0.0005"], &["45422.00000", "4757.708232", "0"],
            ], " "),
            skip in proptest::bool::ANY,
        ) {
            let (fast, general) = validate_both_ways(&text, skip);
            proptest::prop_assert_eq!(fast, general, "{:?}", text);
        }
    }

    #[test]
    fn the_disksim_and_validate_fast_paths_take_the_samples_lines() {
        let text = std::fs::read_to_string(data("samples/wdev_3.disksim")).unwrap();
        let (fast, general) = disksim_both_ways(&text);
        assert_eq!(fast.0.len(), 200);
        assert_eq!(fast, general);
        let r = DisksimAsciiReader::new(Box::new(std::io::empty()), "t", Flavour::Disksim, false);
        for line in text.lines() {
            assert!(
                disksim_fast_line(r.fast.as_ref().unwrap(), line.as_bytes()).is_some(),
                "{line}"
            );
        }
        let text = std::fs::read_to_string(data("disksim/hp_c3323a.trace")).unwrap();
        let (fast, general) = validate_both_ways(&text, false);
        assert_eq!(fast.0.len(), 9074);
        assert_eq!(fast, general);
        let r = DisksimValidateReader::new(Box::new(std::io::empty()), "t", false);
        for line in text.lines() {
            assert!(
                validate_fast_line(r.fast.as_ref().unwrap(), line.as_bytes()).is_some(),
                "{line}"
            );
        }
    }

    #[test]
    fn the_mqsim_fast_path_takes_mqsims_lines() {
        assert_eq!(
            mqsim_fast_line(b"11413000 0 657728 16 1\r"),
            Some((11_413_000, 0, 657_728 * 512, 16 * 512, Op::Read))
        );
        for other in [
            "1 0 1 1 2",
            "1  0 1 1 1",
            " 1 0 1 1 1",
            "1 0 1 1 1 ",
            "1\t0 1 1 1",
            "1 0 1 1",
        ] {
            assert_eq!(mqsim_fast_line(other.as_bytes()), None, "{other}");
        }
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(
                std::fs::File::open(data("wsrch-small.trace.gz")).unwrap(),
            ),
            &mut text,
        )
        .unwrap();
        let (fast, general) = mqsim_both_ways(&text, false);
        assert_eq!(fast.0.len(), 24_783);
        assert_eq!(fast, general);
    }

    fn read<R: RawTraceReader>(mut r: R) -> SimResult<Vec<(TraceRecord, Option<u64>)>> {
        let mut v = vec![];
        while let Some(x) = r.next_raw()? {
            v.push(x);
        }
        Ok(v)
    }

    fn input(t: &str) -> Box<dyn Read + Send> {
        Box::new(std::io::Cursor::new(t.as_bytes().to_vec()))
    }

    #[test]
    fn disksim_ascii_units_and_flags() {
        let v = read(DisksimAsciiReader::new(
            input("0.5 0 100 8 1\n12.25\t3  200 16 0x0\n\n13 1 0 1 a\n"),
            "t.trace",
            Flavour::Disksim,
            false,
        ))
        .unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(
            (v[0].0.time, v[0].0.op, v[0].0.offset, v[0].0.len, v[0].1),
            (
                Nanos(500_000),
                Op::Read,
                Bytes(51_200),
                Bytes(4096),
                Some(0)
            )
        );
        assert_eq!(
            (v[1].0.time, v[1].0.op, v[1].1),
            (Nanos(12_250_000), Op::Write, Some(3))
        );
        assert_eq!((v[2].0.op, v[2].0.line), (Op::Write, 4)); // 0xa: bit 0 clear
        let e = read(DisksimAsciiReader::new(
            input("1 0 1 1 zz\n"),
            "t.trace",
            Flavour::Disksim,
            false,
        ))
        .unwrap_err();
        assert!(
            e.to_string().contains("t.trace:1") && e.to_string().contains("FLAGS"),
            "{e}"
        );
    }

    #[test]
    fn mqsim_units_and_the_real_sample() {
        let v = read(DisksimAsciiReader::new(
            input("11413000 0 657728 16 1\n11565000 1 31244784 64 0\n"),
            "t.trace",
            Flavour::Mqsim,
            false,
        ))
        .unwrap();
        assert_eq!(
            (v[0].0.time, v[0].0.op, v[0].0.offset, v[0].0.len),
            (
                Nanos(11_413_000),
                Op::Read,
                Bytes(657_728 * 512),
                Bytes(8192)
            )
        );
        assert_eq!((v[1].0.op, v[1].1), (Op::Write, Some(1)));
        let e = read(DisksimAsciiReader::new(
            input("1 0 1 1 2\n"),
            "t.trace",
            Flavour::Mqsim,
            false,
        ))
        .unwrap_err();
        assert!(
            e.to_string().contains("TYPE") && e.to_string().contains("--skip-unknown"),
            "{e}"
        );
        // With skip_unknown: skipped and counted, the rest read.
        let mut r = DisksimAsciiReader::new(
            input("1 0 1 1 2\n2 0 8 8 1\n3 0 9 1 x\n4 1 0 8 0\n"),
            "t.trace",
            Flavour::Mqsim,
            true,
        );
        let mut lines = vec![];
        while let Some((rec, _)) = r.next_raw().unwrap() {
            lines.push(rec.line);
        }
        assert_eq!((lines, r.skipped_unknown()), (vec![2, 4], 2));
        // DiskSim's FLAGS have no unknown case: the option changes nothing.
        let mut r =
            DisksimAsciiReader::new(input("0.5 0 1 1 2\n"), "t.trace", Flavour::Disksim, true);
        assert_eq!(r.next_raw().unwrap().map(|x| x.0.op), Some(Op::Write));
        assert_eq!(r.skipped_unknown(), 0);
        // tests/data/wsrch-small.trace.gz: MQSim's own excerpt, 24,783 requests.
        let mut sp = spec(&data("wsrch-small.trace.gz"));
        sp.format = Some(crate::trace::Format::Mqsim);
        let recs = read_all(&sp).unwrap();
        assert_eq!(recs.len(), 24_783);
    }

    #[test]
    fn validate_arrivals_follow_the_measured_run() {
        let v = read(DisksimValidateReader::new(
            input("R Hit 265552 2 14901.0 4757.5\nW Miss    311664 30 12628.000000 17035.849408\n"),
            "v.trace",
            false,
        ))
        .unwrap();
        assert_eq!(
            (v[0].0.time, v[0].0.op, v[0].0.offset, v[0].0.len),
            (Nanos(0), Op::Read, Bytes(265_552 * 512), Bytes(1024))
        );
        // Arrives 14.901 ms (response) + 4.7575 ms (think time) after the first.
        assert_eq!((v[1].0.time, v[1].0.op), (Nanos(19_658_500), Op::Write));
        let e = read(DisksimValidateReader::new(
            input("X Hit 1 1 1 1\n"),
            "v.trace",
            false,
        ))
        .unwrap_err();
        assert!(
            e.to_string().contains("v.trace:1") && e.to_string().contains("expected R or W"),
            "{e}"
        );
        assert!(e.to_string().contains("--skip-unknown"), "{e}");
        // With skip_unknown the record is skipped and counted, and the next
        // arrives when it did in the measured run (after the skipped one's times).
        let mut r = DisksimValidateReader::new(
            input("R Hit 1 2 1000 500\nX Miss 5 2 2000 250\nW Hit 9 2 10 0\n"),
            "v.trace",
            true,
        );
        let mut got = vec![];
        while let Some((rec, _)) = r.next_raw().unwrap() {
            got.push((rec.line, rec.time));
        }
        assert_eq!(got, vec![(1, Nanos(0)), (3, Nanos(3_750_000))]);
        assert_eq!(r.skipped_unknown(), 1);
        // DiskSim's HP C3323A validation trace reads whole, sniffed from its first line.
        let recs = read_all(&spec(&data("disksim/hp_c3323a.trace"))).unwrap();
        assert_eq!(recs.len(), 9_074);
        assert!(recs.windows(2).all(|p| p[0].time < p[1].time));
    }

    #[test]
    fn validate_keeps_the_measured_response_times() {
        // The first lines of DiskSim's HP C3323A validation trace:
        //   R Hit 265552 2 14901.000000 4757.708232
        //   R Hit 751567 44 21725.000000 7050.375042
        //   R Hit 310927 37 24368.000000 15410.132732
        let mut s = spec(&data("disksim/hp_c3323a.trace"));
        s.limit = Some(3);
        let (_, mut sel) = crate::trace::open::open_selection(&s).unwrap();
        let mut got = vec![];
        while let Some((rec, _)) = sel.next_record().unwrap() {
            got.push((rec.time, sel.measured()));
        }
        assert_eq!(
            got,
            vec![
                (Nanos(0), Some(Nanos(14_901_000))),
                (Nanos(19_658_708), Some(Nanos(21_725_000))),
                (Nanos(48_434_083), Some(Nanos(24_368_000))),
            ]
        );
        // The replay reader answers too.
        let mut r = crate::trace::open_trace(&s).unwrap();
        r.next_record().unwrap();
        assert_eq!(r.measured(), Some(Nanos(14_901_000)));
    }
}
