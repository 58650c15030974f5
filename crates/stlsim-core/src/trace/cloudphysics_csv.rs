//! The text form of CloudPhysics traces (as shipped with libCacheSim,
//! `data/cloudPhysicsIO.csv`), with a header line `version,time,op,size,lbn`.
//!
//! * `version`: the vscsi record version; must be present, otherwise ignored.
//! * `time`: **whole seconds**. Checked against the binary form of the same
//!   requests (`cloudPhysicsIO.vscsi`, microsecond timestamps): on all 113,872
//!   records `time == floor(vscsi_timestamp_us / 1_000_000)`, i.e. the
//!   microsecond timestamp truncated to seconds. Fractional values are
//!   accepted; the result is kept in nanoseconds (`time * 1e9`). Requests
//!   within one second therefore share a timestamp: prefer the vscsi file
//!   when inter-arrival times matter.
//! * `op`: the SCSI command byte in hexadecimal (`28` read, `2a` write; an
//!   optional `0x` prefix is accepted). The READ/WRITE(6/12/16) opcodes are
//!   understood as in the vscsi reader; other valid opcodes are skipped (as the
//!   vscsi reader skips them) and counted ([`CloudphysicsCsvReader::skipped`]).
//! * `size`: bytes.
//! * `lbn`: 512-byte sectors (offset = lbn * 512 bytes).
//!
//! The header is optional: it is recognised by its first field `version`.

use crate::error::SimResult;
use crate::trace::text::{digits_then, digits_to_end, show, CsvLines};
use crate::trace::vscsi::scsi_op;
use crate::trace::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

const LAYOUT: &str = "version,time,op,size,lbn";

/// Reader of the CloudPhysics CSV form.
pub struct CloudphysicsCsvReader {
    src: CsvLines,
    first: bool,
    skipped: u64,
}

impl CloudphysicsCsvReader {
    /// A reader over decompressed CloudPhysics CSV; `file` labels error messages.
    pub fn new(input: Box<dyn Read + Send>, file: &str) -> Self {
        CloudphysicsCsvReader {
            src: CsvLines::new(input, file, b','),
            first: true,
            skipped: 0,
        }
    }

    /// Records skipped so far because their opcode was not a read or write.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }
}

/// A line as libCacheSim's file writes it (no spaces, whole seconds, a
/// two-digit hexadecimal opcode of a read or write, numbers of at most 18
/// digits, an optional `\r`) read in one pass: `(time ns, op, offset bytes,
/// length bytes)`. `None` sends the line the general way, which also words
/// every error and counts skipped opcodes.
#[inline]
fn fast_line(line: &[u8]) -> Option<(u64, Op, u64, u64)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut i = 0;
    digits_then(line, &mut i, b',')?; // version
    let time = digits_then(line, &mut i, b',')?.checked_mul(1_000_000_000)?;
    let hex = |c: u8| (c as char).to_digit(16);
    let (&[a, b, b','], _) = line.get(i..)?.split_first_chunk::<3>()? else {
        return None;
    };
    let op = scsi_op((hex(a)? * 16 + hex(b)?) as u8)?;
    i += 3;
    let len = digits_then(line, &mut i, b',')?;
    let offset = digits_to_end(line, &mut i)?.checked_mul(512)?;
    Some((time, op, offset, len))
}

impl RawTraceReader for CloudphysicsCsvReader {
    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            let s = &mut self.src;
            if !s.next_line()? {
                return Ok(None);
            }
            // The first line may be the header: the general way sees it.
            if !self.first && s.fast_paths() {
                if let Some((time, op, offset, len)) = fast_line(s.raw()) {
                    s.mark_record();
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
            if !s.split_current()? {
                continue;
            }
            if self.first {
                self.first = false;
                if s.field(0).eq_ignore_ascii_case(b"version") {
                    continue;
                }
            }
            s.expect_fields(5, LAYOUT)?;
            s.u64_field(0, "version")?;
            let time = s.scaled_field(1, 1_000_000_000, "time (seconds)")?;
            let opf = s.field(2);
            let cmd = crate::trace::text::parse_hex_u8(opf).ok_or_else(|| {
                s.err(format!(
                    "op (field 3) is not a hexadecimal SCSI opcode: '{}'",
                    show(opf)
                ))
            })?;
            let len = s.u64_field(3, "size")?;
            let lbn = s.u64_field(4, "lbn")?;
            let offset = lbn.checked_mul(512).ok_or_else(|| {
                s.err(format!(
                    "lbn (field 5) is too large: {lbn} sectors of 512 bytes overflow"
                ))
            })?;
            let Some(op) = scsi_op(cmd) else {
                self.skipped += 1;
                continue;
            };
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_util::*;
    use crate::trace::{Format, Op};

    /// `text` read with the fast path and the general way only.
    fn both_ways(text: &str) -> (Drained, Drained) {
        let make = || CloudphysicsCsvReader::new(text_input(text), "t.csv");
        fast_and_general(make, |r| r.src.general_only = true)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]
        /// The fast path reads every text as the general way does: the same
        /// records, the same error on the same line, the same skips.
        #[test]
        fn the_fast_path_reads_what_the_general_way_reads(text in mutated_lines(
            &[&["1", "version"], &["5633898", "0", "1.5"], &["2a", "28", "2A", "0x28", "12", "a8", "zz"], &["512", "4096"], &["42932745", "0"]], ",",
        )) {
            let (fast, general) = both_ways(&text);
            proptest::prop_assert_eq!(fast, general, "{:?}", text);
        }
    }

    #[test]
    fn the_fast_path_takes_the_files_lines() {
        assert_eq!(
            fast_line(b"1,5633898,2a,512,42932745\r"),
            Some((5_633_898_000_000_000, Op::Write, 42_932_745 * 512, 512))
        );
        for other in [
            "1,1,12,512,1",
            "1,1.5,28,512,1",
            "1,1,0x28,512,1",
            "1,1,28,512,",
            "1,1,28,512,1,1",
            "version,time,op,size,lbn",
        ] {
            assert_eq!(fast_line(other.as_bytes()), None, "{other}");
        }
        let text = std::fs::read_to_string(data("cloudPhysicsIO.csv")).unwrap();
        let (fast, general) = both_ways(&text);
        assert_eq!(fast.0.len(), 113_872);
        assert_eq!(fast, general);
    }

    #[test]
    fn cloudphysics_file_matches_vscsi() {
        let csv = read_all(&spec(&data("cloudPhysicsIO.csv"))).unwrap();
        assert_eq!(csv.len(), 113_872);
        assert_eq!(counts(&csv), (46_974, 66_898));
        // 1,5633898,2a,512,42932745 on line 2 (after the header).
        assert_eq!(
            csv[0],
            TraceRecord {
                time: Nanos(5_633_898_000_000_000),
                op: Op::Write,
                offset: Bytes(42_932_745 * 512),
                len: Bytes(512),
                line: 2
            }
        );
        let bin = read_all(&spec(&data("cloudPhysicsIO.vscsi"))).unwrap();
        assert_eq!(bin.len(), csv.len());
        for (i, (c, b)) in csv.iter().zip(&bin).enumerate() {
            assert_eq!(
                (c.op, c.offset, c.len),
                (b.op, b.offset, b.len),
                "record {}",
                i + 1
            );
            // The CSV time is the vscsi microsecond timestamp truncated to whole seconds.
            assert_eq!(
                c.time.0,
                b.time.0 / 1_000_000_000 * 1_000_000_000,
                "record {}",
                i + 1
            );
            assert_eq!(c.line, b.line + 1);
        }
    }

    #[test]
    fn no_header_fractional_time_skipped_ops() {
        let text = "1,1.25,0x28,4096,8\n1,2,12,36,0\n\n1,3,2A,512,1";
        let p = write_temp("cpcsv", "nohdr.txt", text.as_bytes());
        let mut s = spec(&p);
        s.format = Some(Format::CloudphysicsCsv);
        let r = read_all(&s).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].time, r[0].op, r[0].offset, r[0].line),
            (Nanos(1_250_000_000), Op::Read, Bytes(4096), 1)
        );
        assert_eq!(
            (r[1].time, r[1].op, r[1].line),
            (Nanos(3_000_000_000), Op::Write, 4)
        );
    }

    #[test]
    fn malformed_lines() {
        for (bad, needle) in [
            ("1,3,zz,512,1", "op"),
            ("1,3,2a,512", "expected 5 fields"),
            ("1,x,2a,512,1", "time"),
            ("1,3,2a,5.5,1", "size"),
            ("1,3,2a,512,-1", "lbn"),
            ("v,3,2a,512,1", "version"),
        ] {
            let text = format!("version,time,op,size,lbn\n1,1,28,512,1\n{bad}\n1,4,28,512,1\n");
            let p = write_temp("cpcsv-bad", "bad.csv", text.as_bytes());
            let msg = format_error_at(&spec(&p), 3);
            assert!(msg.contains(needle), "{bad}: {msg}");
        }
    }
}
