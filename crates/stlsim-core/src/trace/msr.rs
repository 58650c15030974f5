//! MSR Cambridge block traces (SNIA IOTTA 388), no header:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
//!
//! * `Timestamp`: Windows filetime, 100 ns ticks since 1601; kept absolute
//!   (`ticks * 100` ns) since the engine only uses differences.
//! * `Hostname`: ignored. `DiskNumber`: the volume, exposed for disk selection.
//! * `Type`: `Read` or `Write`, any case. Anything else is an error, or with
//!   `skip_unknown` a record skipped and counted.
//! * `Offset`, `Size`: bytes.
//! * `ResponseTime`: the measured response time in 100 ns ticks
//!   ([`RawTraceReader::measured`]). `0` (or an empty field) means unknown:
//!   no real request completes in under 100 ns, and stlsim's own MSR writer
//!   and other converters write 0 where they have no value.

use crate::error::SimResult;
use crate::trace::text::{digits_then, digits_to_end, show, CsvLines};
use crate::trace::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

const LAYOUT: &str = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";

/// Reader of MSR Cambridge CSV traces.
pub struct MsrReader {
    src: CsvLines,
    skip_unknown: bool,
    skipped: u64,
    /// ResponseTime of the record last returned.
    measured: Option<Nanos>,
}

impl MsrReader {
    /// A reader over decompressed MSR CSV; `file` labels error messages.
    /// With `skip_unknown`, a record whose Type is neither Read nor Write is
    /// skipped and counted instead of being an error.
    pub fn new(input: Box<dyn Read + Send>, file: &str, skip_unknown: bool) -> Self {
        MsrReader {
            src: CsvLines::new(input, file, b','),
            skip_unknown,
            skipped: 0,
            measured: None,
        }
    }
}

/// `Read` / `Write`, any case: each byte with bit 5 set (`| 0x20`) equals
/// the lower-case letter, which for letters is exactly a case-blind match
/// (a word compare, where `eq_ignore_ascii_case` took a sixth of a Thesios
/// line's time).
#[inline]
pub(crate) fn parse_rw_word(s: &[u8]) -> Option<Op> {
    const LOWER: u32 = 0x2020_2020;
    let head = u32::from_le_bytes(*s.first_chunk::<4>()?) | LOWER;
    match s.len() {
        4 if head == u32::from_le_bytes(*b"read") => Some(Op::Read),
        5 if head == u32::from_le_bytes(*b"writ") && s[4] | 0x20 == b'e' => Some(Op::Write),
        _ => None,
    }
}

/// The fields of a line in the canonical form, as MSR's own files write
/// them: no spaces, `Read` or `Write`, numbers of at most 18 digits (so none
/// overflows while it is parsed), a timestamp whose nanoseconds fit, an
/// optional `\r` at the end.
#[derive(Debug, PartialEq, Eq)]
struct FastLine {
    time_ns: u64,
    disk: u64,
    op: Op,
    offset: u64,
    len: u64,
    response: u64,
}

/// One pass over a canonical line; `None` sends it the general way (which
/// also words every error).
#[inline]
fn fast_line(line: &[u8]) -> Option<FastLine> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut i = 0;
    let time_ns = digits_then(line, &mut i, b',')?.checked_mul(100)?;
    i += memchr::memchr(b',', line.get(i..)?)? + 1; // the host name
    let disk = digits_then(line, &mut i, b',')?;
    let rest = line.get(i..)?;
    let op = if rest.starts_with(b"Write,") {
        i += 6;
        Op::Write
    } else if rest.starts_with(b"Read,") {
        i += 5;
        Op::Read
    } else {
        return None;
    };
    let offset = digits_then(line, &mut i, b',')?;
    let len = digits_then(line, &mut i, b',')?;
    // The response time ends the line; it may be empty (unknown).
    let response = if i == line.len() {
        0
    } else {
        digits_to_end(line, &mut i)?
    };
    Some(FastLine {
        time_ns,
        disk,
        op,
        offset,
        len,
        response,
    })
}

/// The fields of a split line, checked one by one so that an error names
/// the field and its value; `None` for a record skipped for its operation.
fn general_fields(
    s: &CsvLines,
    skip_unknown: bool,
    skipped: &mut u64,
) -> SimResult<Option<FastLine>> {
    s.expect_fields(7, LAYOUT)?;
    let Some(op) = parse_rw_word(s.field(3)) else {
        // A skipped record is set aside whole: its other fields are not read.
        s.unknown_op(skip_unknown, skipped, || {
            format!(
                "Type (field 4) is '{}', expected Read or Write",
                show(s.field(3))
            )
        })?;
        return Ok(None);
    };
    let ticks = s.u64_field(0, "Timestamp")?;
    let time_ns = ticks.checked_mul(100).ok_or_else(|| {
        s.err(format!(
            "Timestamp (field 1) is too large: {ticks} ticks of 100 ns overflow"
        ))
    })?;
    let disk = s.u64_field(2, "DiskNumber")?;
    let offset = s.u64_field(4, "Offset")?;
    let len = s.u64_field(5, "Size")?;
    // 0 or empty: not measured (stlsim's own MSR writer writes 0).
    let response = if s.field(6).is_empty() {
        0
    } else {
        s.u64_field(6, "ResponseTime")?
    };
    Ok(Some(FastLine {
        time_ns,
        disk,
        op,
        offset,
        len,
        response,
    }))
}

impl RawTraceReader for MsrReader {
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
                fast_line(s.raw())
            } else {
                None
            };
            let f = match fast {
                Some(f) => {
                    s.mark_record();
                    f
                }
                // Anything the fast path does not take (blank lines, spaces, a
                // sign, other letter cases, huge numbers, errors) goes the general way.
                None => {
                    if !s.split_current()? {
                        continue;
                    }
                    match general_fields(s, self.skip_unknown, &mut self.skipped)? {
                        Some(f) => f,
                        None => continue, // an unknown operation, skipped
                    }
                }
            };
            self.measured = f.response.checked_mul(100).filter(|&ns| ns > 0).map(Nanos);
            let rec = TraceRecord {
                time: Nanos(f.time_ns),
                op: f.op,
                offset: Bytes(f.offset),
                len: Bytes(f.len),
                line: s.line(),
            };
            return Ok(Some((rec, Some(f.disk))));
        }
    }

    fn measured(&self) -> Option<Nanos> {
        self.measured
    }
}

/// Write every record of `reader` to `out` as MSR Cambridge CSV
/// (`Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`): the
/// timestamp in 100 ns ticks (`time / 100`, so times that are whole ticks
/// read back unchanged), `hostname` and `disk` on every line, response time 0.
/// Streams: memory does not grow with the trace. Returns the records written.
pub fn write_msr(
    reader: &mut dyn crate::trace::TraceReader,
    out: &mut dyn std::io::Write,
    hostname: &str,
    disk: u64,
) -> SimResult<u64> {
    use crate::error::SimError;
    if hostname.is_empty() || hostname.contains([',', '\n', '\r']) {
        return Err(SimError::Config(format!(
            "MSR hostname must be non-empty without commas or line breaks, got {hostname:?}"
        )));
    }
    let io = |e: std::io::Error| SimError::Io(format!("cannot write trace: {e}"));
    let mut n = 0u64;
    while let Some(r) = reader.next_record()? {
        let op = match r.op {
            Op::Read => "Read",
            Op::Write => "Write",
        };
        writeln!(
            out,
            "{},{hostname},{disk},{op},{},{},0",
            r.time.0 / 100,
            r.offset.0,
            r.len.0
        )
        .map_err(io)?;
        n += 1;
    }
    out.flush().map_err(io)?;
    Ok(n)
}

/// [`write_msr`] into the file `path`, compressed when the name ends in
/// `.gz` (gzip) or `.zst` (zstd, one frame per 4 MiB of text); any other
/// name is written plain. Streams: memory does not grow with the trace.
pub fn write_msr_file(
    reader: &mut dyn crate::trace::TraceReader,
    path: &str,
    hostname: &str,
    disk: u64,
) -> SimResult<u64> {
    use crate::error::SimError;
    use std::io::{BufWriter, Write};
    let file = std::fs::File::create(path)
        .map_err(|e| SimError::Io(format!("cannot create trace '{path}': {e}")))?;
    let lower = path.to_ascii_lowercase();
    let io = |e: std::io::Error| SimError::Io(format!("cannot write trace '{path}': {e}"));
    let with_path = |e: SimError| match e {
        SimError::Io(m) => SimError::Io(m.replace(
            "cannot write trace:",
            &format!("cannot write trace '{path}':"),
        )),
        e => e,
    };
    let buffered = BufWriter::with_capacity(1 << 16, file);
    if lower.ends_with(".gz") {
        let mut enc = flate2::write::GzEncoder::new(buffered, flate2::Compression::default());
        let n = write_msr(reader, &mut enc, hostname, disk).map_err(with_path)?;
        enc.finish().and_then(|mut w| w.flush()).map_err(io)?;
        Ok(n)
    } else if lower.ends_with(".zst") {
        let mut enc = ZstdFrames {
            out: buffered,
            buf: Vec::with_capacity(ZSTD_FRAME),
        };
        let n = write_msr(reader, &mut enc, hostname, disk).map_err(with_path)?;
        enc.finish().map_err(io)?;
        Ok(n)
    } else {
        let mut w = buffered;
        write_msr(reader, &mut w, hostname, disk).map_err(with_path)
    }
}

/// Text per zstd frame.
const ZSTD_FRAME: usize = 4 << 20;

/// A zstd writer without a streaming encoder: text is compressed in frames of
/// [`ZSTD_FRAME`] bytes (concatenated frames form one valid zstd stream).
struct ZstdFrames<W: std::io::Write> {
    out: W,
    buf: Vec<u8>,
}

impl<W: std::io::Write> ZstdFrames<W> {
    fn frame(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            let c = ruzstd::encoding::compress_to_vec(
                &self.buf[..],
                ruzstd::encoding::CompressionLevel::Fastest,
            );
            self.out.write_all(&c)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(mut self) -> std::io::Result<()> {
        self.frame()?;
        self.out.flush()
    }
}

impl<W: std::io::Write> std::io::Write for ZstdFrames<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= ZSTD_FRAME {
            self.frame()?;
        }
        Ok(data.len())
    }

    /// Frames are cut by size only (a flush must not make tiny frames).
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    /// The general way, on one line.
    fn general(line: &str) -> Option<FastLine> {
        let mut s = CsvLines::new(
            Box::new(std::io::Cursor::new(line.as_bytes().to_vec())),
            "t",
            b',',
        );
        assert!(s.next_line().unwrap());
        if !s.split_current().unwrap() {
            return None;
        }
        general_fields(&s, false, &mut 0).ok().flatten()
    }

    proptest::proptest! {
        /// The word compare matches `eq_ignore_ascii_case` on any bytes
        /// (letters of both cases, their bit-5 twins such as '@' and '`').
        #[test]
        fn parse_rw_word_is_a_case_blind_match(
            s in proptest::collection::vec(proptest::prop_oneof![
                proptest::sample::select(b"readwritREADWRIT@`AEIRTWaeirtw".to_vec()),
                proptest::num::u8::ANY,
            ], 0..7)
        ) {
            let want = if s.eq_ignore_ascii_case(b"read") {
                Some(Op::Read)
            } else if s.eq_ignore_ascii_case(b"write") {
                Some(Op::Write)
            } else {
                None
            };
            proptest::prop_assert_eq!(parse_rw_word(&s), want);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 4000, ..Default::default() })]
        /// Whatever the fast path takes, the general way reads the same.
        #[test]
        fn the_fast_path_reads_what_the_general_way_reads(
            fields in proptest::collection::vec(
                proptest::prop_oneof![
                    "[0-9]{1,20}", "Read", "Write", "read", "WRITE", "[a-z]{0,6}", " ?[0-9]{1,4} ?", "\\+?[0-9]{1,3}", "",
                    "18446744073709551615", "184467440737095516", "999999999999999999", "[0-9]{1,3}\\.[0-9]",
                ],
                5..9,
            ),
            cr in proptest::bool::ANY,
        ) {
            let line = fields.join(",") + if cr { "\r" } else { "" };
            if let Some(f) = fast_line(line.as_bytes()) {
                proptest::prop_assert_eq!(Some(f), general(&line), "{:?}", line);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]
        /// Whole texts read with and without the fast path: the same records,
        /// devices and measured times, the same error on the same line, the same skips.
        #[test]
        fn the_reader_reads_the_same_with_and_without_the_fast_path(
            text in crate::trace::test_util::mutated_lines(&[
                &["128166372002993722", "0"], &["wdev", ""], &["0", "3"], &["Read", "Write", "read", "Trim"],
                &["3154149376", "0"], &["4096", "512"], &["1903", "0", ""],
            ], ","),
            skip in proptest::bool::ANY,
        ) {
            use crate::trace::test_util::{drain, text_input};
            let make = || MsrReader::new(text_input(&text), "t.csv", skip);
            let mut general = make();
            general.src.general_only = true;
            proptest::prop_assert_eq!(drain(&mut make()), drain(&mut general), "{:?}", text);
        }
    }

    #[test]
    fn the_fast_path_takes_canonical_lines_and_leaves_the_rest() {
        let f = fast_line(b"128166372002993722,wdev,3,Write,3154149376,4096,1903\r").unwrap();
        assert_eq!(
            f,
            FastLine {
                time_ns: 12816637200299372200,
                disk: 3,
                op: Op::Write,
                offset: 3154149376,
                len: 4096,
                response: 1903
            }
        );
        assert_eq!(fast_line(b"1,h,0,Read,0,512,").unwrap().response, 0);
        for other in [
            "1,h,0,read,0,512,1",
            "1,h,0,Read, 0,512,1",
            "+1,h,0,Read,0,512,1",
            "999999999999999999,h,0,Read,0,512,1",
            "1,h,0,Read,0,512",
            "1,h,0,Read,0,512,1,2",
            "",
        ] {
            assert!(fast_line(other.as_bytes()).is_none(), "{other}");
        }
    }
    use super::*;
    use crate::error::{Location, SimError};
    use crate::trace::test_util::spec as spec_of;
    use crate::trace::test_util::*;
    use crate::trace::Format;

    #[test]
    fn rsrch_1() {
        let mut s = spec(&data("rsrch_1.csv"));
        s.format = Some(Format::Msr);
        let r = read_all(&s).unwrap();
        assert_eq!(r.len(), 13_780);
        assert_eq!(counts(&r), (42, 13_738));
        // 128166481075232275,rsrch,1,Write,281358336,45056,94872
        assert_eq!(
            r[0],
            TraceRecord {
                time: Nanos(12_816_648_107_523_227_500),
                op: Op::Write,
                offset: Bytes(281_358_336),
                len: Bytes(45_056),
                line: 1
            }
        );
        // 128166624705595699,rsrch,1,Read,279339008,4096,122805
        assert_eq!(r[4].op, Op::Read);
        assert_eq!(r[4].offset, Bytes(279_339_008));
        assert_eq!(r[4].len, Bytes(4096));
        assert_eq!(r[13_779].line, 13_780);
        assert!(r.windows(2).all(|w| w[0].time <= w[1].time));
    }

    #[test]
    fn written_msr_reads_back_the_same_records() {
        use crate::trace::synth::{SynthReader, SynthSpec};
        use crate::trace::TraceReader;
        let spec = SynthSpec {
            write_fraction: Some(0.4),
            seed: 3,
            request_bytes: 512_000,
            ..SynthSpec::uniform(2000, 1 << 34)
        };
        let mut buf = Vec::new();
        let n = write_msr(&mut SynthReader::new(&spec).unwrap(), &mut buf, "synth", 2).unwrap();
        assert_eq!(n, 2000);
        let text = String::from_utf8(buf.clone()).unwrap();
        assert_eq!(text.lines().count(), 2000);
        assert!(text.starts_with("0,synth,2,"), "{}", &text[..40]);
        let p = write_temp("msr-write", "synth.csv", &buf);
        let back = read_all(&spec_of(&p)).unwrap();
        let mut gen = SynthReader::new(&spec).unwrap();
        let mut want = Vec::new();
        while let Some(r) = gen.next_record().unwrap() {
            want.push(r);
        }
        assert_eq!(back, want);
        assert!(back.iter().any(|r| r.op == Op::Read) && back.iter().any(|r| r.op == Op::Write));
        // Disk selection sees the written disk number.
        let mut s = spec_of(&p);
        s.disk = Some(2);
        assert_eq!(read_all(&s).unwrap().len(), 2000);
        assert!(write_msr(
            &mut SynthReader::new(&spec).unwrap(),
            &mut Vec::new(),
            "a,b",
            0
        )
        .is_err());
        // Files, plain and compressed (zstd over several frames).
        let dir = temp_dir("msr-write-files");
        let big = SynthSpec {
            seed: 4,
            ..SynthSpec::uniform(120_000, 1 << 34)
        };
        let mut want_big = Vec::new();
        let mut gen = SynthReader::new(&big).unwrap();
        while let Some(r) = gen.next_record().unwrap() {
            want_big.push(r);
        }
        for name in ["t.csv", "t.csv.gz", "t.csv.zst"] {
            let p = dir.join(name).to_string_lossy().into_owned();
            let n = write_msr_file(&mut SynthReader::new(&big).unwrap(), &p, "synth", 0).unwrap();
            assert_eq!(n, 120_000);
            assert_eq!(read_all(&spec_of(&p)).unwrap(), want_big, "{name}");
        }
        let zst = std::fs::metadata(dir.join("t.csv.zst")).unwrap().len();
        let plain = std::fs::metadata(dir.join("t.csv")).unwrap().len();
        assert!(
            plain > ZSTD_FRAME as u64 && zst < plain / 2,
            "{zst} {plain}"
        );
        match write_msr_file(
            &mut SynthReader::new(&spec).unwrap(),
            "/nonexistent/dir/t.csv",
            "h",
            0,
        ) {
            Err(crate::error::SimError::Io(m)) => {
                assert!(m.contains("/nonexistent/dir/t.csv"), "{m}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn wdev_1_and_3() {
        let r = read_all(&spec(&data("wdev_1.csv"))).unwrap();
        assert_eq!(r.len(), 1_055);
        assert_eq!(counts(&r), (0, 1_055));
        let r = read_all(&spec(&data("wdev_3.csv"))).unwrap();
        assert_eq!(r.len(), 682);
        assert_eq!(counts(&r), (11, 671));
    }

    #[test]
    fn no_final_newline_crlf_blank_lines_case_and_spaces() {
        let text = "\n100,h,0,write,0,4096,1\r\n\r\n  \n 200 , h , 0 , READ , 512 , 1024 , 2 \n300,h,2,WrItE,1024,0,3";
        let p = write_temp("msr-misc", "misc.csv", text.as_bytes());
        let r = read_all(&spec(&p)).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r[0].time, r[0].op, r[0].line),
            (Nanos(10_000), Op::Write, 2)
        );
        assert_eq!(
            (r[1].time, r[1].op, r[1].offset, r[1].len, r[1].line),
            (Nanos(20_000), Op::Read, Bytes(512), Bytes(1024), 5)
        );
        assert_eq!((r[2].op, r[2].len, r[2].line), (Op::Write, Bytes(0), 6));
    }

    fn bad_third_line(line: &str) -> (Location, String) {
        let text = format!("1,h,0,Write,0,512,1\n2,h,0,Read,0,512,1\n{line}\n4,h,0,Read,0,512,1\n");
        // One file per call: tests run in parallel and two of them use this.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = write_temp("msr-bad", &format!("bad-{k}.csv"), text.as_bytes());
        let mut s = spec(&p);
        s.format = Some(Format::Msr);
        match read_err(&s) {
            SimError::TraceFormat { at, msg } => {
                assert_eq!(
                    at,
                    Location {
                        file: p.clone(),
                        line: 3
                    }
                );
                (at, msg)
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn malformed_lines_name_file_line_field_and_value() {
        let (_, m) = bad_third_line("3,h,0,Wrote,0,512,1");
        assert!(
            m.contains("Type") && m.contains("'Wrote'") && m.contains("--skip-unknown"),
            "{m}"
        );
        let (_, m) = bad_third_line("3,h,0,Write,0,512");
        assert!(
            m.contains("expected 7 fields") && m.contains("found 6"),
            "{m}"
        );
        let (_, m) = bad_third_line("3,h,0,Write,0x10,512,1");
        assert!(m.contains("Offset") && m.contains("'0x10'"), "{m}");
        let (_, m) = bad_third_line("3,h,0,Write,0,-512,1");
        assert!(m.contains("Size") && m.contains("'-512'"), "{m}");
        let (_, m) = bad_third_line("3.5,h,0,Write,0,512,1");
        assert!(m.contains("Timestamp") && m.contains("'3.5'"), "{m}");
        let (_, m) = bad_third_line("99999999999999999999,h,0,Write,0,512,1");
        assert!(m.contains("Timestamp"), "{m}");
        let (_, m) = bad_third_line("999999999999999999,h,0,Write,0,512,1");
        assert!(m.contains("Timestamp") && m.contains("too large"), "{m}");
        let (_, m) = bad_third_line("3,h,x,Write,0,512,1");
        assert!(m.contains("DiskNumber") && m.contains("'x'"), "{m}");
        // The display form is file:line: message.
        let e = SimError::TraceFormat {
            at: Location {
                file: "f.csv".into(),
                line: 3,
            },
            msg: m,
        };
        assert!(e.to_string().starts_with("f.csv:3: "));
    }

    #[test]
    fn skip_unknown_counts_records_whose_type_is_neither_read_nor_write() {
        use crate::trace::open_trace;
        let text = "1,h,0,Write,0,512,1\n2,h,0,Flush,0,0,1\n3,h,0,Read,512,512,1\n4,h,0,,0,512,1\n";
        let p = write_temp("msr-skip", "skip.csv", text.as_bytes());
        let mut s = spec(&p);
        s.format = Some(Format::Msr);
        // Without the option: the first unknown Type stops the read at its line.
        let m = format_error_at(&s, 2);
        assert!(m.contains("'Flush'") && m.contains("--skip-unknown"), "{m}");
        s.skip_unknown = true;
        let mut r = open_trace(&s).unwrap();
        let mut lines = vec![];
        while let Some(rec) = r.next_record().unwrap() {
            lines.push(rec.line);
        }
        assert_eq!(lines, vec![1, 3]);
        assert_eq!(r.skipped_unknown(), 2);
    }

    #[test]
    fn response_time_is_the_measured_response_and_zero_is_unknown() {
        // rsrch_1.csv: 128166481075232275,rsrch,1,Write,281358336,45056,94872 (ticks of 100 ns)
        let mut s = spec(&data("rsrch_1.csv"));
        s.limit = Some(2);
        let (_, mut sel) = crate::trace::open::open_selection(&s).unwrap();
        sel.next_record().unwrap();
        assert_eq!(sel.measured(), Some(Nanos(9_487_200)));
        sel.next_record().unwrap();
        assert_eq!(sel.measured(), Some(Nanos(9_443_000)));
        let text = "1,h,0,Write,0,512,0\n2,h,0,Read,0,512,\n3,h,0,Read,0,512,7\n";
        let p = write_temp("msr-measured", "m.csv", text.as_bytes());
        let (_, mut sel) = crate::trace::open::open_selection(&spec(&p)).unwrap();
        let mut got = vec![];
        while sel.next_record().unwrap().is_some() {
            got.push(sel.measured());
        }
        assert_eq!(got, vec![None, None, Some(Nanos(700))]);
        let (_, m) = bad_third_line("3,h,0,Write,0,512,1.5");
        assert!(m.contains("ResponseTime") && m.contains("'1.5'"), "{m}");
    }
}
