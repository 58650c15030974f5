//! UMass Trace Repository SPC format (Financial1/2, WebSearch1-3), no header:
//! `ASU,LBA,Size,Opcode,Timestamp[,optional...]`, as the SPC Trace File
//! Format Specification (revision 1.0.1, Storage Performance Council, 2002)
//! defines it and the UMass files use it.
//!
//! * `ASU`: the application storage unit (volume); several interleave in one
//!   file. Exposed for disk selection.
//! * `LBA`: 512-byte blocks (offset = LBA * 512 bytes).
//! * `Size`: bytes.
//! * `Opcode`: one character, `r` / `w` in either case (Financial uses
//!   lowercase, WebSearch uppercase); stlsim also takes `read` / `write`.
//!   Anything else is an error, or with `skip_unknown` a record skipped and
//!   counted.
//! * `Timestamp`: seconds since the start of the trace, fractional with any
//!   number of decimals; kept to the nanosecond (rounded beyond nine).
//!
//! The variants the specification allows, all accepted (`docs/traces.md`
//! lists them with their sources):
//!
//! * optional fields after the fifth, their number varying from record to
//!   record (the specification's own example has `...,0.551706,Alpha/NT`);
//!   they are not read;
//! * white space around fields (revision 1.0.1: "Allowed white space
//!   characters in field contents"); white space *inside* a required field
//!   (`2 448003`) is an error;
//! * compression: `.gz` and `.zst` as for every format. The repository
//!   serves `.spc.bz2` files, which stlsim does not decode: the opener says
//!   so in one line.
//!
//! A header line is not part of the format, but a first line naming the
//! published columns (`ASU,LBA,Size,Opcode,Timestamp`) is skipped, as in
//! every format with a published column list (`trace::header`); a header
//! line further down (files joined together) is an error saying so.

use crate::error::SimResult;
use crate::trace::text::{show, Columns, CsvLines, Take};
use crate::trace::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

const LAYOUT: &str = "ASU,LBA,Size,Opcode,Timestamp";

/// Reader of UMass SPC traces.
pub struct SpcReader {
    src: CsvLines,
    /// The one-pass fast path: ASU, LBA, Size, Opcode, Timestamp.
    fast: Option<Columns>,
    skip_unknown: bool,
    skipped: u64,
}

impl SpcReader {
    /// A reader over decompressed SPC text; `file` labels error messages.
    /// With `skip_unknown`, a record whose Opcode is neither a read nor a
    /// write is skipped and counted instead of being an error.
    pub fn new(input: Box<dyn Read + Send>, file: &str, skip_unknown: bool) -> Self {
        let src = CsvLines::new(input, file, b',');
        let takes = vec![
            Take::Int,
            Take::Int,
            Take::Int,
            Take::Word,
            Take::Scaled(1_000_000_000),
        ];
        SpcReader {
            fast: Columns::new(takes, &src, false),
            src,
            skip_unknown,
            skipped: 0,
        }
    }
}

/// An SPC opcode: `r` / `w` (the specification's single character, either
/// case) or the words `read` / `write`.
fn parse_opcode(v: &[u8]) -> Option<Op> {
    match v {
        b"r" | b"R" => Some(Op::Read),
        b"w" | b"W" => Some(Op::Write),
        other => crate::trace::msr::parse_rw_word(other),
    }
}

/// The current line as a record by the fast path, if it takes it (a read or
/// write in the plain form).
#[inline]
fn fast_record(fast: &Columns, s: &mut CsvLines) -> Option<(TraceRecord, Option<u64>)> {
    if !s.fast_paths() {
        return None;
    }
    let mut nums = [0u64; 4];
    let mut words: [&[u8]; 1] = [&[]];
    fast.read(s.raw(), &mut nums, &mut words)?;
    let op = parse_opcode(words[0])?;
    let [asu, lba, len, time] = nums;
    let offset = lba.checked_mul(512)?;
    s.mark_record();
    let rec = TraceRecord {
        time: Nanos(time),
        op,
        offset: Bytes(offset),
        len: Bytes(len),
        line: s.line(),
    };
    Some((rec, Some(asu)))
}

impl RawTraceReader for SpcReader {
    fn skipped_unknown(&self) -> u64 {
        self.skipped
    }

    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            let s = &mut self.src;
            if !s.next_line()? {
                return Ok(None);
            }
            if let Some(rec) = self.fast.as_ref().and_then(|f| fast_record(f, s)) {
                return Ok(Some(rec));
            }
            if !s.split_current()? {
                continue;
            }
            if s.len() < 5 {
                return Err(s.err(format!(
                    "expected at least 5 fields ({LAYOUT}, then optional ones), found {}",
                    s.len()
                )));
            }
            // Fields 6 and beyond are the specification's optional fields:
            // their meaning is not defined, so they are not read.
            let asu = match s.u64_field(0, "ASU") {
                Ok(v) => v,
                Err(_) if s.field(0).eq_ignore_ascii_case(b"asu") => {
                    return Err(s.err(format!(
                        "'{}' looks like a header line, which an SPC trace may have only as its first line: remove it",
                        (0..s.len()).map(|i| show(s.field(i))).collect::<Vec<_>>().join(",")
                    )));
                }
                Err(e) => return Err(e),
            };
            let Some(op) = parse_opcode(s.field(3)) else {
                s.unknown_op(self.skip_unknown, &mut self.skipped, || {
                    format!(
                        "Opcode (field 4) is '{}', expected r or w",
                        show(s.field(3))
                    )
                })?;
                continue;
            };
            let lba = s.u64_field(1, "LBA")?;
            let offset = lba.checked_mul(512).ok_or_else(|| {
                s.err(format!(
                    "LBA (field 2) is too large: {lba} blocks of 512 bytes overflow"
                ))
            })?;
            let len = s.u64_field(2, "Size")?;
            let time = s.scaled_field(4, 1_000_000_000, "Timestamp (seconds)")?;
            let rec = TraceRecord {
                time: Nanos(time),
                op,
                offset: Bytes(offset),
                len: Bytes(len),
                line: s.line(),
            };
            return Ok(Some((rec, Some(asu))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::open_trace;
    use crate::trace::test_util::*;

    /// `text` read with the fast path and the general way only.
    fn both_ways(text: &str, skip: bool) -> (Drained, Drained) {
        let make = || SpcReader::new(text_input(text), "t.spc", skip);
        fast_and_general(make, |r| r.src.general_only = true)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]
        /// The fast path reads every text as the general way does: the same
        /// records and ASUs, the same error on the same line, the same skips.
        #[test]
        fn the_fast_path_reads_what_the_general_way_reads(
            text in mutated_lines(&[
                &["0", "3", "ASU"], &["303567", "0", "36028797018963968"], &["3584", "512"], &["w", "R", "read", "Write", "x"],
                &["0.000000", "0.026214", "12345.123456789", "1.5", "2", "0.1234567890123456789"], &["Alpha/NT"],
            ], ","),
            skip in proptest::bool::ANY,
        ) {
            let (fast, general) = both_ways(&text, skip);
            proptest::prop_assert_eq!(fast, general, "{:?}", text);
        }
    }

    #[test]
    fn the_fast_path_takes_the_samples_lines() {
        let text = std::fs::read_to_string(data("samples/wdev_3.spc")).unwrap();
        let (fast, general) = both_ways(&text, false);
        assert_eq!(fast.0.len(), 200);
        assert_eq!(fast, general);
        let mut r = SpcReader::new(
            Box::new(std::io::Cursor::new(text.into_bytes())),
            "t",
            false,
        );
        let mut taken = 0;
        while r.src.next_line().unwrap() {
            taken += usize::from(fast_record(r.fast.as_ref().unwrap(), &mut r.src).is_some());
        }
        assert_eq!(taken, 200);
    }

    const SAMPLE: &str = "0,303567,3584,w,0.000000\n\
                          1,55590,3072,w,0.000000\n\
                          0,303574,3072,W,0.026214\n\
                          1,240840,3072,r,0.026214\n\
                          \n\
                          2,1,512,R,1.5\n\
                          0,0,0,w,12345.123456789";

    #[test]
    fn parses_units_and_asus() {
        let p = write_temp("spc", "Financial1.spc", SAMPLE.as_bytes());
        let r = read_all(&spec(&p)).unwrap();
        assert_eq!(r.len(), 6);
        assert_eq!(counts(&r), (2, 4));
        assert_eq!(
            r[2],
            TraceRecord {
                time: Nanos(26_214_000),
                op: Op::Write,
                offset: Bytes(303_574 * 512),
                len: Bytes(3072),
                line: 3
            }
        );
        assert_eq!(
            (r[4].time, r[4].op, r[4].line),
            (Nanos(1_500_000_000), Op::Read, 6)
        );
        assert_eq!(r[5].time, Nanos(12_345_123_456_789));

        // ASU selection.
        let mut s = spec(&p);
        s.disk = Some(1);
        let r = read_all(&s).unwrap();
        assert_eq!(r.iter().map(|r| r.line).collect::<Vec<_>>(), vec![2, 4]);
        s.disk = Some(0);
        s.start = 1;
        s.limit = Some(1);
        let r = read_all(&s).unwrap();
        assert_eq!(r.iter().map(|r| r.line).collect::<Vec<_>>(), vec![3]);

        // A .csv name is sniffed as SPC.
        let p = write_temp("spc-sniff", "web.csv", SAMPLE.as_bytes());
        assert_eq!(read_all(&spec(&p)).unwrap().len(), 6);
    }

    #[test]
    fn malformed_lines() {
        for (bad, needle) in [
            ("0,1,512,x,0.5", "Opcode"),
            ("0,1,512,x,0.5", "--skip-unknown"),
            ("0,1,512,,0.5", "Opcode (field 4) is ''"),
            ("0,1,512,w", "expected at least 5 fields"),
            ("0,1,512,w", "found 4"),
            ("0,1,512,w,-0.5", "Timestamp"),
            // The specification's own example has this slip; a space inside a
            // required field is not one of its variants.
            ("2,30862016,4096,W,2 448003", "Timestamp"),
            ("0,1,512,wr,0.5", "'wr'"),
            ("0;1;512;w;0.5", "expected at least 5 fields"),
            ("0 1 512 w 0.5", "expected at least 5 fields"),
            ("0,1,512,w,abc", "'abc'"),
            ("0,1.5,512,w,0.5", "LBA"),
            ("0,99999999999999999,512,w,0.5", "too large"),
            ("a,1,512,w,0.5", "ASU"),
        ] {
            let text = format!("0,1,512,w,0.1\n0,2,512,r,0.2\n{bad}\n0,3,512,r,0.3\n");
            let p = write_temp("spc-bad", "bad.spc", text.as_bytes());
            let msg = format_error_at(&spec(&p), 3);
            assert!(msg.contains(needle), "{bad}: {msg}");
        }
    }

    /// Records with their ASU, and the count of skipped ones.
    type Got = (Vec<(TraceRecord, Option<u64>)>, u64);

    fn read_text(tag: &str, name: &str, text: &str, skip_unknown: bool) -> SimResult<Got> {
        let mut r = SpcReader::new(text_input(text), &format!("{tag}/{name}"), skip_unknown);
        let mut v = vec![];
        while let Some(x) = r.next_raw()? {
            v.push(x);
        }
        Ok((v, r.skipped_unknown()))
    }

    #[test]
    fn variant_optional_fields_after_the_fifth_vary_per_record() {
        // SPC Trace File Format Specification 1.0.1, "Field 6 (through n)":
        // any number of optional fields, changing from record to record.
        let text = "0,100,8192,W,0.500000,host-a\n\
                    0,116,8192,w,0.502000\n\
                    1,9000,15872,W,1.250000,0x1f,5.99,any text at all\n\
                    1,9031,512,r,1.300000,\n";
        let (v, _) = read_text("spc-opt", "opt.spc", text, false).unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(
            (v[0].0.op, v[0].0.offset, v[0].0.len, v[0].1),
            (Op::Write, Bytes(100 * 512), Bytes(8192), Some(0))
        );
        assert_eq!(
            (v[2].0.time, v[2].0.len, v[2].1, v[2].0.line),
            (Nanos(1_250_000_000), Bytes(15872), Some(1), 3)
        );
        assert_eq!((v[3].0.op, v[3].0.offset), (Op::Read, Bytes(9031 * 512)));
        // Such a file is recognised from its first line.
        let p = write_temp("spc-opt-sniff", "fin.txt", text.as_bytes());
        assert_eq!(read_all(&spec(&p)).unwrap().len(), 4);
        assert_eq!(
            crate::trace::open::sniff_line("0,100,8192,W,0.500000,host-a"),
            Some(crate::trace::Format::Spc)
        );
        assert_eq!(
            crate::trace::open::sniff_line("a,100,8192,W,0.5,host-a"),
            None
        );
    }

    #[test]
    fn variant_white_space_around_fields() {
        // Revision 1.0.1 allowed white space between a comma and the next field.
        let text = "0, 100,\t4096, r, 1.000000\n 1 ,200 , 512 ,W , 2.5 , opt \n";
        let (v, _) = read_text("spc-ws", "ws.spc", text, false).unwrap();
        assert_eq!(
            (v[0].0.op, v[0].0.offset, v[0].0.len, v[0].0.time),
            (Op::Read, Bytes(51_200), Bytes(4096), Nanos(1_000_000_000))
        );
        assert_eq!(
            (v[1].0.op, v[1].1, v[1].0.time),
            (Op::Write, Some(1), Nanos(2_500_000_000))
        );
    }

    #[test]
    fn variant_opcode_case_and_timestamp_decimals() {
        // Financial uses r/w, WebSearch R/W; timestamps are "s.d" with any
        // number of decimals (the UMass files have six).
        let text = "0,1,512,r,0.000774\n0,2,512,R,0.1\n0,3,512,w,12.123456789012\n0,4,512,W,1.9999999996\n0,5,512,Read,3\n0,6,512,WRITE,4.0\n";
        let (v, _) = read_text("spc-case", "case.spc", text, false).unwrap();
        let ops: Vec<Op> = v.iter().map(|x| x.0.op).collect();
        assert_eq!(
            ops,
            vec![
                Op::Read,
                Op::Read,
                Op::Write,
                Op::Write,
                Op::Read,
                Op::Write
            ]
        );
        let times: Vec<u64> = v.iter().map(|x| x.0.time.0).collect();
        assert_eq!(
            times,
            vec![
                774_000,
                100_000_000,
                12_123_456_789,
                2_000_000_000,
                3_000_000_000,
                4_000_000_000
            ]
        );
    }

    #[test]
    fn variant_compressed_files() {
        use std::io::Write;
        // gzip (and zstd) are decoded as for every format.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(SAMPLE.as_bytes()).unwrap();
        let p = write_temp("spc-gz", "Financial1.spc.gz", &gz.finish().unwrap());
        let plain = write_temp("spc-plain", "Financial1.spc", SAMPLE.as_bytes());
        assert_eq!(
            read_all(&spec(&p)).unwrap(),
            read_all(&spec(&plain)).unwrap()
        );
        // bzip2, as the repository serves them: one line saying what to do,
        // by name and by content.
        let bz = b"BZh91AY&SY\x00\x01\x02";
        for name in ["Financial1.spc.bz2", "Financial1.spc"] {
            let p = write_temp("spc-bz2", name, bz);
            match open_trace(&spec(&p)).err() {
                Some(crate::error::SimError::Io(m)) => {
                    assert!(
                        m.contains(&p) && m.contains("bzip2") && m.contains("bunzip2"),
                        "{m}"
                    );
                    assert_eq!(m.lines().count(), 1, "{m}");
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_first_header_line_is_skipped_and_a_later_one_refused() {
        let p = write_temp(
            "spc-header",
            "h.spc",
            b"ASU,LBA,Size,Opcode,Timestamp\n0,1,512,w,0.5\n",
        );
        let recs = read_all(&spec(&p)).unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].line, 2);
        let p = write_temp(
            "spc-header-later",
            "h2.spc",
            b"0,1,512,w,0.5\nASU,LBA,Size,Opcode,Timestamp\n0,1,512,w,0.5\n",
        );
        let msg = format_error_at(&spec(&p), 2);
        assert!(
            msg.contains("header") && msg.contains("first line"),
            "{msg}"
        );
        let mut s = spec(&p);
        s.skip_unknown = true;
        assert!(format_error_at(&s, 2).contains("header"));
    }

    #[test]
    fn skip_unknown_counts_records_with_other_opcodes() {
        let text = "0,1,512,w,0.1\n0,2,512,x,0.2\n0,3,512,r,0.3\n0,4,512,,0.4\n";
        let (v, skipped) = read_text("spc-skip", "s.spc", text, true).unwrap();
        assert_eq!(v.iter().map(|x| x.0.line).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(skipped, 2);
        let e = read_text("spc-skip", "s.spc", text, false).unwrap_err();
        assert!(
            e.to_string().starts_with("spc-skip/s.spc:2: ")
                && e.to_string().contains("--skip-unknown"),
            "{e}"
        );
        // Through the opener, the count reaches the reader the engine sees.
        let p = write_temp("spc-skip-open", "s.spc", text.as_bytes());
        let mut sp = spec(&p);
        sp.skip_unknown = true;
        let mut r = open_trace(&sp).unwrap();
        while r.next_record().unwrap().is_some() {}
        assert_eq!(r.skipped_unknown(), 2);
    }

    /// Found by fuzzing (tests/fuzz_readers.rs, spc case 234): a lone
    /// carriage return inside a field was quoted raw, so the one-line error
    /// printed on two (or overwrote itself on a terminal). Control
    /// characters in a quoted field are escaped.
    #[test]
    fn control_characters_in_a_field_are_escaped_in_the_error() {
        for (bad, shown) in [
            ("0,1,512,a\rb,0.5", "'a\\rb'"),
            ("0,6160\r475\u{1b}[2J,512,w,0.5", "'6160\\r475\\u{1b}[2J'"),
            ("0,1,512,w\u{b}x,0.5", "'w\\u{b}x'"),
        ] {
            let text = format!("0,1,512,w,0.1\n{bad}\n");
            let p = write_temp("spc-ctrl", "ctrl.spc", text.as_bytes());
            let msg = format_error_at(&spec(&p), 2);
            assert!(msg.contains(shown), "{bad:?}: {msg}");
            assert!(!msg.chars().any(char::is_control), "{msg:?}");
        }
    }
}
