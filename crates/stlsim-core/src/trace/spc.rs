//! UMass Trace Repository SPC format (Financial1/2, WebSearch1-3), no header:
//! `ASU,LBA,Size,Opcode,Timestamp`.
//!
//! * `ASU`: the application storage unit (volume); several interleave in one
//!   file. Exposed for disk selection.
//! * `LBA`: 512-byte blocks (offset = LBA * 512 bytes).
//! * `Size`: bytes.
//! * `Opcode`: `r` / `w`, either case (`read` / `write` are accepted too).
//! * `Timestamp`: seconds since the start of the trace, fractional; kept exactly
//!   to the nanosecond.

use crate::error::SimResult;
use crate::trace::open::text::{show, CsvLines};
use crate::trace::open::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

const LAYOUT: &str = "ASU,LBA,Size,Opcode,Timestamp";

/// Reader of UMass SPC traces.
pub struct SpcReader {
    src: CsvLines,
}

impl SpcReader {
    /// A reader over decompressed SPC text; `file` labels error messages.
    pub fn new(input: Box<dyn Read + Send>, file: &str) -> Self {
        SpcReader {
            src: CsvLines::new(input, file, b','),
        }
    }
}

impl RawTraceReader for SpcReader {
    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        let s = &mut self.src;
        if !s.advance()? {
            return Ok(None);
        }
        s.expect_fields(5, LAYOUT)?;
        let asu = s.u64_field(0, "ASU")?;
        let lba = s.u64_field(1, "LBA")?;
        let offset = lba.checked_mul(512).ok_or_else(|| {
            s.err(format!(
                "LBA (field 2) is too large: {lba} blocks of 512 bytes overflow"
            ))
        })?;
        let len = s.u64_field(2, "Size")?;
        let op = match s.field(3) {
            b"r" | b"R" => Op::Read,
            b"w" | b"W" => Op::Write,
            other => crate::trace::msr::parse_rw_word(other)
                .ok_or_else(|| s.err(format!("Opcode (field 4) is '{}', expected r or w", show(other))))?,
        };
        let time = s.scaled_field(4, 1_000_000_000, "Timestamp (seconds)")?;
        let rec = TraceRecord {
            time: Nanos(time),
            op,
            offset: Bytes(offset),
            len: Bytes(len),
            line: s.line(),
        };
        Ok(Some((rec, Some(asu))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::open::test_util::*;

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
        assert_eq!((r[4].time, r[4].op, r[4].line), (Nanos(1_500_000_000), Op::Read, 6));
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
            ("0,1,512,w", "expected 5 fields"),
            ("0,1,512,w,0.5,9", "found 6"),
            ("0,1,512,w,-0.5", "Timestamp"),
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
