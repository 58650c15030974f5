//! Any delimited text trace, laid out by a [`GenericCsv`]: which (0-based)
//! columns hold time, operation, offset and size, their units, the op values
//! meaning read and write (case-insensitive), the delimiter and whether the
//! first line is a header. Extra columns are ignored. Numbers may be
//! fractional (`4096.0`, `0.25`); they are scaled to bytes / nanoseconds and
//! rounded.

use crate::error::{SimError, SimResult};
use crate::trace::text::{show, Columns, CsvLines, Take};
use crate::trace::RawTraceReader;
use crate::trace::{GenericCsv, Op, TimeUnit, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

/// Nanoseconds per unit of a time column.
pub fn time_unit_nanos(unit: TimeUnit) -> u64 {
    match unit {
        TimeUnit::S => 1_000_000_000,
        TimeUnit::Ms => 1_000_000,
        TimeUnit::Us => 1_000,
        TimeUnit::Ns => 1,
        TimeUnit::Filetime => 100,
    }
}

fn norm_values(v: &[String]) -> Vec<Vec<u8>> {
    v.iter()
        .map(|s| s.trim().to_ascii_lowercase().into_bytes())
        .collect()
}

/// The most columns a layout may name (a column beyond it would make every
/// line hold that many fields; text lines are bounded, see `crate::trace::text`).
pub const MAX_CSV_COLUMN: usize = 4096;

impl GenericCsv {
    fn columns(&self) -> Vec<(&'static str, usize)> {
        let mut c = vec![
            ("time_col", self.time_col),
            ("op_col", self.op_col),
            ("offset_col", self.offset_col),
            ("size_col", self.size_col),
        ];
        if let Some(d) = self.device_col {
            c.push(("device_col", d));
        }
        c
    }

    /// Check the layout; a one-line `Config` error naming the key at fault
    /// (`csv delimiter ...`, `csv op_col ...`).
    pub fn validate(&self) -> SimResult<()> {
        if !delimiter_usable(self.delimiter) {
            return Err(SimError::Config(format!(
                "csv delimiter {:?} is not usable: use a single ASCII character other than a newline or quote",
                self.delimiter
            )));
        }
        if self.offset_unit_bytes == 0 || self.size_unit_bytes == 0 {
            return Err(SimError::Config(
                "csv offset_unit_bytes and size_unit_bytes must be at least 1".into(),
            ));
        }
        let cols = self.columns();
        for (i, (a, ca)) in cols.iter().enumerate() {
            if *ca > MAX_CSV_COLUMN {
                return Err(SimError::Config(format!(
                    "csv {a} = {ca} is beyond column {MAX_CSV_COLUMN}"
                )));
            }
            for (b, cb) in &cols[i + 1..] {
                if ca == cb {
                    return Err(SimError::Config(format!(
                        "csv {a} and {b} are both column {ca}"
                    )));
                }
            }
        }
        let (read_values, write_values) = (
            norm_values(&self.read_values),
            norm_values(&self.write_values),
        );
        if let Some(both) = read_values.iter().find(|v| write_values.contains(v)) {
            return Err(SimError::Config(format!(
                "csv read_values and write_values both list '{}'",
                String::from_utf8_lossy(both)
            )));
        }
        Ok(())
    }
}

/// Whether `c` can separate fields: one ASCII byte, not a line end or the quote.
pub fn delimiter_usable(c: char) -> bool {
    c.is_ascii() && c != '\n' && c != '\r' && c != '"'
}

/// Deserialise a delimiter from text, so that `";;"` or `""` is an error
/// naming the rule rather than serde's "expected a character".
pub(crate) fn deserialize_delimiter<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<char, D::Error> {
    use serde::de::Error;
    let s = <String as serde::Deserialize>::deserialize(d)?;
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if delimiter_usable(c) => Ok(c),
        _ => Err(D::Error::custom(format!(
            "{s:?} is not a usable delimiter: use a single ASCII character other than a newline or quote"
        ))),
    }
}

/// Reader of generic CSV traces.
pub struct GenericCsvReader {
    src: CsvLines,
    cfg: GenericCsv,
    skip_unknown: bool,
    skipped: u64,
    time_scale: u64,
    read_values: Vec<Vec<u8>>,
    write_values: Vec<Vec<u8>>,
    min_fields: usize,
    skip_header: bool,
    /// The one-pass fast path for this layout, and where it puts the
    /// time, offset, size and device among its numbers.
    fast: Option<Columns>,
    slots: [usize; 4],
}

impl GenericCsvReader {
    /// A reader over decompressed text laid out by `cfg`; `file` labels error
    /// messages. A `Config` error if the layout is unusable.
    /// With `skip_unknown`, a record whose op is neither a read nor a write
    /// value is skipped and counted instead of being an error.
    pub fn new(
        input: Box<dyn Read + Send>,
        file: &str,
        cfg: &GenericCsv,
        skip_unknown: bool,
    ) -> SimResult<Self> {
        cfg.validate()?;
        let read_values = norm_values(&cfg.read_values);
        let write_values = norm_values(&cfg.write_values);
        let min_fields = cfg
            .columns()
            .iter()
            .map(|(_, c)| *c)
            .max()
            .unwrap_or(0)
            .saturating_add(1);
        let src = if cfg.whitespace {
            CsvLines::words(input, file)
        } else {
            CsvLines::new(input, file, cfg.delimiter as u8)
        };
        let time_scale = time_unit_nanos(cfg.time_unit);
        // The numbers come out in column order: each one's place among them.
        let mut numeric = vec![
            (cfg.time_col, Take::Scaled(time_scale)),
            (cfg.offset_col, Take::Scaled(cfg.offset_unit_bytes)),
            (cfg.size_col, Take::Scaled(cfg.size_unit_bytes)),
        ];
        if let Some(d) = cfg.device_col {
            numeric.push((d, Take::Int));
        }
        let mut slots = [0; 4];
        for (slot, (col, _)) in slots.iter_mut().zip(&numeric) {
            *slot = numeric.iter().filter(|(c, _)| c < col).count();
        }
        let mut takes = vec![Take::Skip; min_fields];
        for &(col, take) in &numeric {
            takes[col] = take;
        }
        takes[cfg.op_col] = Take::Word;
        let fast = Columns::new(takes, &src, false);
        let mut src = src;
        if let Some(up_to) = fast.as_ref().and_then(Columns::marks_wanted) {
            src.mark_delimiters(up_to);
        }
        Ok(GenericCsvReader {
            src,
            fast,
            slots,
            skip_unknown,
            skipped: 0,
            time_scale,
            read_values,
            write_values,
            min_fields,
            skip_header: cfg.header,
            cfg: cfg.clone(),
        })
    }

    fn op(&self, v: &[u8]) -> Option<Op> {
        let is = |set: &[Vec<u8>]| set.iter().any(|x| x.eq_ignore_ascii_case(v));
        if is(&self.write_values) {
            Some(Op::Write)
        } else if is(&self.read_values) {
            Some(Op::Read)
        } else {
            None
        }
    }
}

impl RawTraceReader for GenericCsvReader {
    fn skipped_unknown(&self) -> u64 {
        self.skipped
    }

    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            let s = &mut self.src;
            if !s.next_line()? {
                return Ok(None);
            }
            if !self.skip_header && s.fast_paths() {
                if let Some(rec) = self.fast_record() {
                    return Ok(Some(rec));
                }
            }
            let s = &mut self.src;
            if !s.split_current()? {
                continue; // blank
            }
            if self.skip_header {
                self.skip_header = false;
                continue;
            }
            if let Some(rec) = self.one()? {
                return Ok(Some(rec));
            }
            // An unknown op, skipped (and counted): on to the next line.
        }
    }
}

impl GenericCsvReader {
    /// The current line as a record by the fast path, if it takes it (a
    /// read or write in the plain form).
    #[inline]
    fn fast_record(&mut self) -> Option<(TraceRecord, Option<u64>)> {
        let fast = self.fast.as_ref()?;
        let mut nums = [0u64; 4];
        let mut words: [&[u8]; 1] = [&[]];
        fast.read_current(&self.src, &mut nums, &mut words)?;
        let op = self.op(words[0])?;
        self.src.mark_record();
        let [time, offset, size, device] = self.slots.map(|k| nums[k]);
        let rec = TraceRecord {
            time: Nanos(time),
            op,
            offset: Bytes(offset),
            len: Bytes(size),
            line: self.src.line(),
        };
        Some((rec, self.cfg.device_col.map(|_| device)))
    }

    /// The current line as a record; `None` for an op to skip.
    fn one(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        let s = &self.src;
        let c = &self.cfg;
        if s.len() < self.min_fields {
            return Err(s.err(format!(
                "expected at least {} fields (time in column {}, op {}, offset {}, size {}; 0-based), found {}",
                self.min_fields,
                c.time_col,
                c.op_col,
                c.offset_col,
                c.size_col,
                s.len()
            )));
        }
        let time = s.scaled_field(c.time_col, self.time_scale, "time")?;
        let opv = s.field(c.op_col);
        let Some(op) = self.op(opv) else {
            s.unknown_op(self.skip_unknown, &mut self.skipped, || {
                format!(
                    "op (field {}) is '{}', which is neither a read value {:?} nor a write value {:?}",
                    c.op_col + 1,
                    show(opv),
                    c.read_values,
                    c.write_values
                )
            })?;
            return Ok(None);
        };
        let device = match c.device_col {
            Some(col) => Some(s.u64_field(col, "device")?),
            None => None,
        };
        let offset = s.scaled_field(c.offset_col, c.offset_unit_bytes, "offset")?;
        let len = s.scaled_field(c.size_col, c.size_unit_bytes, "size")?;
        let rec = TraceRecord {
            time: Nanos(time),
            op,
            offset: Bytes(offset),
            len: Bytes(len),
            line: s.line(),
        };
        Ok(Some((rec, device)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_util::*;
    use crate::trace::{Format, TraceSpec};

    /// `text` read by `cfg` with the fast path and the general way only.
    fn both_ways(text: &str, cfg: &GenericCsv, skip: bool) -> (Drained, Drained) {
        let make = || GenericCsvReader::new(text_input(text), "t.csv", cfg, skip).unwrap();
        fast_and_general(make, |r| r.src.general_only = true)
    }

    const SYSTOR17: &[&[&str]] = &[
        &["0.000000", "1.5", "12", "0.0000000001"],
        &["0.000100"],
        &["W", "R", "", "w", "Read"],
        &["0", "3"],
        &["3156835840", "0"],
        &["4096", "512", "4096.5"],
    ];
    const ALIBABA: &[&[&str]] = &[
        &["3", "0"],
        &["W", "R", "r", "X"],
        &["3156835840", "0"],
        &["4096", "512"],
        &["1577808000000000", "7"],
    ];
    const TENCENT: &[&[&str]] = &[
        &["1538323200", "0"],
        &["6165695", "0"],
        &["8", "1"],
        &["1", "0", "2"],
        &["1283", "0"],
    ];
    const FIU: &[&[&str]] = &[
        &["0", "7100"],
        &["4242"],
        &["postgres", "\"a b\"", "\t"],
        &["6165695", "0"],
        &["8", "1"],
        &["W", "R", "w", "X"],
        &["8"],
        &["0", "1"],
        &["d41d8cd98f00b204e9800998ecf8427e"],
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1000, ..Default::default() })]
        /// The fast path reads every text as the general way does, for each
        /// preset layout: the same records and devices, the same error on
        /// the same line, the same skips.
        #[test]
        fn the_fast_path_reads_what_the_general_way_reads(
            systor in mutated_lines(SYSTOR17, ","),
            alibaba in mutated_lines(ALIBABA, ","),
            tencent in mutated_lines(TENCENT, ","),
            fiu in mutated_lines(FIU, " "),
            skip in proptest::bool::ANY,
        ) {
            for (format, text) in [(Format::Systor17, systor), (Format::Alibaba, alibaba), (Format::Tencent, tencent), (Format::Fiu, fiu)] {
                let cfg = format.layout().unwrap();
                let (fast, general) = both_ways(&text, &cfg, skip);
                proptest::prop_assert_eq!(fast, general, "{:?} {:?}", format, text);
            }
        }

        /// The same for user layouts: tabs, header lines, a time column
        /// after the others, units of every size.
        #[test]
        fn the_fast_path_reads_user_layouts_as_the_general_way_does(
            text in mutated_lines(&[&["r", "w", "x", " r"], &["12", "0.5"], &["7", "0"], &["1", "2.25"], &["9", "1e3"], &["3"]], "\t"),
            header in proptest::bool::ANY,
            unit in proptest::sample::select(&[TimeUnit::S, TimeUnit::Ms, TimeUnit::Us, TimeUnit::Ns, TimeUnit::Filetime][..]),
            offset_unit in proptest::sample::select(&[1u64, 512, 4096, 1 << 40][..]),
        ) {
            let cfg = GenericCsv {
                op_col: 0,
                offset_col: 1,
                size_col: 3,
                time_col: 4,
                device_col: Some(2),
                time_unit: unit,
                offset_unit_bytes: offset_unit,
                delimiter: '\t',
                header,
                ..GenericCsv::default()
            };
            let (fast, general) = both_ways(&text, &cfg, false);
            proptest::prop_assert_eq!(fast, general, "{:?}", text);
        }
    }

    #[test]
    fn the_fast_path_takes_the_samples_lines() {
        for (format, name) in [
            (Format::Systor17, "wdev_3.systor17.csv"),
            (Format::Alibaba, "wdev_3.alibaba.csv"),
            (Format::Tencent, "wdev_3.tencent.csv"),
            (Format::Fiu, "wdev_3.fiu.txt"),
        ] {
            let text = std::fs::read_to_string(data(&format!("samples/{name}"))).unwrap();
            let cfg = format.layout().unwrap();
            let (fast, general) = both_ways(&text, &cfg, false);
            assert_eq!(fast.0.len(), 200, "{format:?}");
            assert_eq!(fast, general, "{format:?}");
            // And the fast path took them all: each line, read alone, is a record.
            let mut r = GenericCsvReader::new(
                Box::new(std::io::Cursor::new(text.into_bytes())),
                "t",
                &cfg,
                false,
            )
            .unwrap();
            if cfg.header {
                r.src.next_line().unwrap();
                r.skip_header = false;
            }
            let mut taken = 0;
            while r.src.next_line().unwrap() {
                taken += usize::from(r.fast_record().is_some());
            }
            assert_eq!(taken, 200, "{format:?}");
        }
    }

    fn csv_spec(path: &str, cfg: GenericCsv) -> TraceSpec {
        TraceSpec {
            path: path.into(),
            format: Some(Format::Csv),
            csv: cfg,
            ..TraceSpec::default()
        }
    }

    #[test]
    fn defaults_seconds_and_sectors() {
        let text = "0.5,r,8,8\n1,W,16,1,extra\n\n2.000000001,read,0,0\n";
        let p = write_temp("gcsv", "t.txt", text.as_bytes());
        let r = read_all(&csv_spec(&p, GenericCsv::default())).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            r[0],
            TraceRecord {
                time: Nanos(500_000_000),
                op: Op::Read,
                offset: Bytes(4096),
                len: Bytes(4096),
                line: 1
            }
        );
        assert_eq!(
            (r[1].op, r[1].offset, r[1].len),
            (Op::Write, Bytes(8192), Bytes(512))
        );
        assert_eq!((r[2].time, r[2].line), (Nanos(2_000_000_001), 4));
    }

    #[test]
    fn custom_layout_reproduces_msr() {
        // MSR read as a generic CSV: same records as the MSR reader.
        let cfg = GenericCsv {
            time_col: 0,
            time_unit: TimeUnit::Filetime,
            op_col: 3,
            offset_col: 4,
            offset_unit_bytes: 1,
            size_col: 5,
            size_unit_bytes: 1,
            ..GenericCsv::default()
        };
        let a = read_all(&csv_spec(&data("wdev_3.csv"), cfg)).unwrap();
        let b = read_all(&spec(&data("wdev_3.csv"))).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn header_delimiter_units() {
        let text = "size;lba;type;ts\n8;100;1;1500\n 4 ; 0 ; 0 ; 2500.5 \n";
        let cfg = GenericCsv {
            time_col: 3,
            time_unit: TimeUnit::Us,
            op_col: 2,
            offset_col: 1,
            offset_unit_bytes: 4096,
            size_col: 0,
            size_unit_bytes: 512,
            read_values: vec!["1".into()],
            write_values: vec!["0".into()],
            delimiter: ';',
            header: true,
            ..GenericCsv::default()
        };
        let p = write_temp("gcsv-hdr", "t.csv", text.as_bytes());
        let r = read_all(&csv_spec(&p, cfg.clone())).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0],
            TraceRecord {
                time: Nanos(1_500_000),
                op: Op::Read,
                offset: Bytes(409_600),
                len: Bytes(4096),
                line: 2
            }
        );
        assert_eq!(
            (r[1].time, r[1].op, r[1].len, r[1].line),
            (Nanos(2_500_500), Op::Write, Bytes(2048), 3)
        );
        // Other units.
        for (unit, ns) in [
            (TimeUnit::S, 1_500_000_000_000u64),
            (TimeUnit::Ms, 1_500_000_000),
            (TimeUnit::Ns, 1500),
            (TimeUnit::Filetime, 150_000),
        ] {
            let r = read_all(&csv_spec(
                &p,
                GenericCsv {
                    time_unit: unit,
                    ..cfg.clone()
                },
            ))
            .unwrap();
            assert_eq!(r[0].time, Nanos(ns), "{unit:?}");
        }
    }

    #[test]
    fn malformed_lines_and_bad_config() {
        for (bad, needle) in [
            ("1,x,0,1", "op (field 2) is 'x'"),
            ("1,r,0", "at least 4 fields"),
            ("t,r,0,1", "time"),
            ("1,r,-4,1", "offset"),
            ("1,r,0,z", "size"),
        ] {
            let text = format!("0,r,0,1\n0,w,0,1\n{bad}\n");
            let p = write_temp("gcsv-bad", "bad.txt", text.as_bytes());
            let msg = format_error_at(&csv_spec(&p, GenericCsv::default()), 3);
            assert!(msg.contains(needle), "{bad}: {msg}");
        }
        let p = write_temp("gcsv-cfg", "x.txt", b"0,r,0,1\n");
        for cfg in [
            GenericCsv {
                delimiter: 'é',
                ..GenericCsv::default()
            },
            GenericCsv {
                offset_unit_bytes: 0,
                ..GenericCsv::default()
            },
            GenericCsv {
                op_col: 0,
                ..GenericCsv::default()
            },
            GenericCsv {
                read_values: vec!["x".into()],
                write_values: vec!["X".into()],
                ..GenericCsv::default()
            },
        ] {
            let e = crate::trace::open_trace(&csv_spec(&p, cfg.clone())).err();
            assert!(matches!(e, Some(SimError::Config(_))), "{cfg:?}: {e:?}");
        }
    }

    /// Samples written from each collection's published description (the
    /// SNIA IOTTA pages and alibaba/block-traces' README), one line each of
    /// the real layout.
    #[test]
    fn published_layouts_read_their_samples() {
        // (time ns, op, offset, length, disk) of each record a sample holds.
        type Expected = (u64, Op, u64, u64, Option<u64>);
        let cases: [(Format, &str, &[Expected]); 4] = [
            (
                Format::Systor17,
                "Timestamp,Response,IOType,LUN,Offset,Size\n1485353461.235532,0.000405,W,3,44883968,4096\n1485353462.5,0.0002,R,1,8192,8192\n",
                &[(1_485_353_461_235_532_000, Op::Write, 44_883_968, 4096, Some(3)), (1_485_353_462_500_000_000, Op::Read, 8192, 8192, Some(1))],
            ),
            (
                Format::Alibaba,
                "419,W,8111259648,4096,1577808000000171\n33,R,0,512,1577808000000300\n",
                &[(1_577_808_000_000_171_000, Op::Write, 8_111_259_648, 4096, Some(419)), (1_577_808_000_000_300_000, Op::Read, 0, 512, Some(33))],
            ),
            (
                Format::Tencent,
                "1538323200,12058624,8,1,1283\n1538323201,7990312,16,0,1283\n",
                &[(1_538_323_200_000_000_000, Op::Write, 12_058_624 * 512, 4096, Some(1283)), (1_538_323_201_000_000_000, Op::Read, 7_990_312 * 512, 8192, Some(1283))],
            ),
            (
                Format::Fiu,
                "89967404324372 4485 syslogd 32632 8 W 8 0 ff0fcb9fdbfcc71e0fd7fbdd4fc1a1bf\n89967404324999\t4485 syslogd 64 1 R 8 1 00ff\n",
                &[(89_967_404_324_372, Op::Write, 32_632 * 512, 4096, Some(0)), (89_967_404_324_999, Op::Read, 64 * 512, 512, Some(1))],
            ),
        ];
        for (format, text, want) in cases {
            let p = write_temp("layouts", &format!("{format:?}.txt"), text.as_bytes());
            let spec = TraceSpec {
                path: p.clone(),
                format: Some(format),
                all_devices: true,
                ..TraceSpec::default()
            };
            let mut r = crate::trace::open_trace(&spec).unwrap();
            let mut got = vec![];
            while let Some(rec) = r.next_record().unwrap() {
                got.push(rec);
            }
            let got: Vec<_> = got
                .iter()
                .map(|r| (r.time.0, r.op, r.offset.0, r.len.0))
                .collect();
            let want_t: Vec<_> = want.iter().map(|w| (w.0, w.1, w.2, w.3)).collect();
            assert_eq!(got, want_t, "{format:?}");
            // The device column selects.
            let dev = want[1].4.unwrap();
            let sel = TraceSpec {
                path: p,
                format: Some(format),
                disk: Some(dev),
                ..TraceSpec::default()
            };
            let n = read_all(&sel).unwrap().len();
            assert_eq!(
                n,
                want.iter().filter(|w| w.4 == Some(dev)).count(),
                "{format:?}"
            );
        }
    }

    #[test]
    fn unknown_ops_stop_the_replay_unless_skipped_and_counted() {
        // SYSTOR '17 has lines with no IOType.
        let text = "Timestamp,Response,IOType,LUN,Offset,Size\n1.0,0.1,W,3,0,4096\n1.5,0.1,,3,0,512\n2.0,0.1,R,3,4096,4096\n";
        let p = write_temp("systor-blank", "vdi.csv", text.as_bytes());
        let spec = TraceSpec {
            path: p.clone(),
            format: Some(Format::Systor17),
            ..TraceSpec::default()
        };
        let e = read_err(&spec).to_string();
        assert!(
            e.contains("vdi.csv:3") && e.contains("--skip-unknown"),
            "{e}"
        );
        let spec = TraceSpec {
            skip_unknown: true,
            ..spec
        };
        let mut r = crate::trace::open_trace(&spec).unwrap();
        let mut n = 0;
        while r.next_record().unwrap().is_some() {
            n += 1;
        }
        assert_eq!((n, r.skipped_unknown()), (2, 1));
        // Repeated passes add up.
        let spec = TraceSpec { repeat: 3, ..spec };
        let mut r = crate::trace::open_trace(&spec).unwrap();
        while r.next_record().unwrap().is_some() {}
        assert_eq!(r.skipped_unknown(), 3);
    }

    /// Found by fuzzing (tests/fuzz_readers.rs, tencent case 30): a file
    /// whose lines end in lone carriage returns is one line, and its error
    /// quoted the carriage return raw. It is escaped: the error stays on one line.
    #[test]
    fn a_file_of_lone_carriage_returns_is_one_line_and_one_error_line() {
        let text = "1538323200,12058624,8,1,1286\r1538323201,7990312,16,0,1283\r";
        let p = write_temp("tencent-cr", "cr.txt", text.as_bytes());
        let spec = TraceSpec {
            path: p.clone(),
            format: Some(Format::Tencent),
            ..TraceSpec::default()
        };
        let msg = format_error_at(&spec, 1);
        assert_eq!(
            msg,
            "device (field 5) is not a non-negative integer: '1286\\r1538323201'"
        );
    }
}
