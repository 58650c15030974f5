//! Trace readers. Each format lives in its own module and turns a file into a
//! stream of [`TraceRecord`]s in bytes and nanoseconds; the engine converts
//! bytes to the drive's sectors. Readers stream: memory does not grow with the
//! trace length. Compressed inputs (`.gz`, `.zst`) are decoded on the fly.
//!
//! Units of every format are documented in `docs/traces.md`.

use crate::error::{SimError, SimResult};
use crate::units::{Bytes, Nanos};
use serde::Deserialize;

pub mod binary;
pub mod blkparse;
pub mod cloudphysics_csv;
pub(crate) mod decompress;
pub mod disksim;
pub mod fio_iolog;
pub mod generic_csv;
pub mod header;
pub mod live;
pub mod msr;
pub mod open;
pub mod parse_thread;
pub mod selection;
pub mod spc;
pub mod synth;
#[cfg(test)]
pub(crate) mod test_util;
pub(crate) mod text;
pub mod thesios;
pub mod vscsi;

pub use open::open_trace;
pub use synth::{SynthKind, SynthReader, SynthSpec};

/// Direction of a host request (`"read"` / `"write"` in a configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// A host read.
    Read,
    /// A host write.
    Write,
}

/// One host request as recorded in a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Timestamp as recorded (absolute or relative; the engine uses differences only).
    pub time: Nanos,
    /// Read or write.
    pub op: Op,
    /// Byte offset on the traced volume.
    pub offset: Bytes,
    /// Length in bytes (may be zero; the engine skips empty requests).
    pub len: Bytes,
    /// 1-based line (or record) number in the file, for error messages.
    pub line: u64,
}

/// A format reader before the [`TraceSpec`] options are applied.
pub trait RawTraceReader: Send {
    /// The next record and, for formats with several volumes in one file, its
    /// disk number (MSR `DiskNumber`) or ASU (SPC); `None` at the end.
    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>>;
    /// Records skipped so far for an operation neither read nor write.
    fn skipped_unknown(&self) -> u64 {
        0
    }
    /// The response time the trace measured for the record the last
    /// `next_raw` returned (`None`: the format has no such column, or this
    /// record has no value). See [`TraceReader::measured`].
    fn measured(&self) -> Option<Nanos> {
        None
    }
    /// blkparse with [`TraceSpec::pair`]: completions read so far that
    /// matched no outstanding request (their request came before the capture
    /// started, or was merged into another one).
    fn unpaired_completions(&self) -> u64 {
        0
    }
}

/// The end (offset + length, in bytes) of a request, or a format error
/// naming `file` and the record's line when it would pass 2^64 bytes (a
/// wrapped end would make a short request of a huge one).
#[inline]
pub fn request_end(rec: &TraceRecord, file: &str) -> SimResult<u64> {
    rec.offset
        .0
        .checked_add(rec.len.0)
        .ok_or_else(|| SimError::TraceFormat {
            at: crate::error::Location {
                file: file.to_string(),
                line: rec.line,
            },
            msg: format!(
                "offset {} plus length {} overflows: the request would end past 2^64 bytes",
                rec.offset.0, rec.len.0
            ),
        })
}

/// The trace formats stlsim reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// MSR Cambridge CSV (SNIA IOTTA 388).
    Msr,
    /// UMass Trace Repository SPC format (Financial, WebSearch).
    Spc,
    /// CloudPhysics binary vscsi records.
    Vscsi,
    /// The text form of CloudPhysics traces: `version,time,op,size,lbn`.
    CloudphysicsCsv,
    /// Any CSV with configurable columns and units ([`GenericCsv`]).
    Csv,
    /// SYSTOR '17 VDI traces (a [`GenericCsv`] layout, [`Format::layout`]).
    #[serde(rename = "systor17")]
    Systor17,
    /// Alibaba Cloud block traces (2020).
    Alibaba,
    /// Tencent CBS block traces (2018).
    Tencent,
    /// FIU traces (iodedup, srcmap).
    Fiu,
    /// stlsim's binary form (`.stlt`, written by `stlsim convert`).
    #[serde(rename = "stlt", alias = "binary")]
    Binary,
    /// fio I/O log, version 2 or 3.
    #[serde(rename = "fio", alias = "fio-iolog")]
    FioIolog,
    /// blkparse's default text output.
    Blkparse,
    /// DiskSim ASCII traces (milliseconds, hexadecimal flags).
    Disksim,
    /// MQSim traces (nanoseconds, type 1 read / 0 write).
    Mqsim,
    /// DiskSim `validate` traces (measured response and think times).
    DisksimValidate,
    /// Google's Thesios traces of one HDD per storage server (CSV with a header).
    Thesios,
}

impl Format {
    /// The column layout of a format that is a fixed [`GenericCsv`] layout
    /// (the published layouts of public trace collections); `None` for
    /// formats with their own reader.
    ///
    /// * `systor17`: SYSTOR '17 VDI traces (SNIA IOTTA 4964), header
    ///   `Timestamp,Response,IOType,LUN,Offset,Size`: seconds, `R`/`W`
    ///   (some lines have none: see `skip_unknown`), LUN, bytes, bytes.
    /// * `alibaba`: Alibaba Cloud block traces (alibaba/block-traces),
    ///   `device_id,opcode,offset,length,timestamp`: `R`/`W`, bytes, bytes,
    ///   microseconds.
    /// * `tencent`: Tencent CBS traces (SNIA IOTTA 27917),
    ///   `Timestamp,Offset,Size,IOType,VolumeID`: seconds, 512-byte sectors,
    ///   sectors, `0` read / `1` write, volume.
    /// * `fiu`: FIU iodedup / srcmap traces (SNIA IOTTA 390/391),
    ///   whitespace-separated `TS PID PROCESS LBA SIZE OP MAJOR MINOR MD5`:
    ///   nanoseconds, 512-byte blocks, blocks, `R`/`W`; the device is MINOR.
    pub fn layout(self) -> Option<GenericCsv> {
        let base = GenericCsv::default();
        let rw = |r: &str, w: &str| (vec![r.to_string()], vec![w.to_string()]);
        Some(match self {
            Format::Systor17 => {
                let (read_values, write_values) = rw("R", "W");
                GenericCsv {
                    time_col: 0,
                    time_unit: TimeUnit::S,
                    op_col: 2,
                    device_col: Some(3),
                    offset_col: 4,
                    offset_unit_bytes: 1,
                    size_col: 5,
                    size_unit_bytes: 1,
                    read_values,
                    write_values,
                    header: true,
                    ..base
                }
            }
            Format::Alibaba => {
                let (read_values, write_values) = rw("R", "W");
                GenericCsv {
                    device_col: Some(0),
                    op_col: 1,
                    offset_col: 2,
                    offset_unit_bytes: 1,
                    size_col: 3,
                    size_unit_bytes: 1,
                    time_col: 4,
                    time_unit: TimeUnit::Us,
                    read_values,
                    write_values,
                    ..base
                }
            }
            Format::Tencent => {
                let (read_values, write_values) = rw("0", "1");
                GenericCsv {
                    time_col: 0,
                    time_unit: TimeUnit::S,
                    offset_col: 1,
                    offset_unit_bytes: 512,
                    size_col: 2,
                    size_unit_bytes: 512,
                    op_col: 3,
                    device_col: Some(4),
                    read_values,
                    write_values,
                    ..base
                }
            }
            Format::Fiu => {
                let (read_values, write_values) = rw("R", "W");
                GenericCsv {
                    time_col: 0,
                    time_unit: TimeUnit::Ns,
                    offset_col: 3,
                    offset_unit_bytes: 512,
                    size_col: 4,
                    size_unit_bytes: 512,
                    op_col: 5,
                    device_col: Some(7),
                    read_values,
                    write_values,
                    whitespace: true,
                    ..base
                }
            }
            _ => return None,
        })
    }

    /// Parse a user-given format name (a name or alias of [`FORMATS`]).
    pub fn parse(s: &str) -> SimResult<Format> {
        FORMATS
            .iter()
            .find(|f| f.name == s || f.aliases.contains(&s))
            .map(|f| f.format)
            .ok_or_else(|| {
                let names = FORMATS
                    .iter()
                    .flat_map(|f| std::iter::once(f.name).chain(f.aliases.iter().copied()));
                SimError::Config(format!(
                    "unknown trace format '{s}'{} (known: {})",
                    crate::spelling::did_you_mean(s, names),
                    format_names()
                ))
            })
    }

    /// The name users give this format (`--format`), as [`FORMATS`] lists it.
    pub fn name(self) -> &'static str {
        FORMATS
            .iter()
            .find(|f| f.format == self)
            .map_or("?", |f| f.name)
    }

    /// Guess the format from a file name (after stripping `.gz` / `.zst`).
    pub fn guess(path: &str) -> Option<Format> {
        let p = path
            .trim_end_matches(".gz")
            .trim_end_matches(".zst")
            .to_ascii_lowercase();
        if p.ends_with(".vscsi") {
            Some(Format::Vscsi)
        } else if p.ends_with(".stlt") {
            Some(Format::Binary)
        } else if p.ends_with(".csv") {
            // MSR files are .csv too; the opener sniffs the first line to tell them apart.
            None
        } else if p.ends_with(".spc") {
            Some(Format::Spc)
        } else {
            None
        }
    }
}

/// One trace format as users name it. [`FORMATS`] is the one list of them:
/// `Format::parse`, the opener's hints and the Python package's lists
/// (through the binding's `formats_json`) all read it.
#[derive(Clone, Copy, Debug)]
pub struct FormatInfo {
    /// The format this entry describes.
    pub format: Format,
    /// The name `--format` takes.
    pub name: &'static str,
    /// Other names it accepts.
    pub aliases: &'static [&'static str],
    /// The collection or tool whose traces it reads, for listings.
    pub summary: &'static str,
    /// The column names the format's publisher lists, for a text format
    /// whose files have no header of their own: a first line naming them
    /// is a header and skipped (`trace::header`). Empty for the others.
    pub columns: &'static [&'static str],
}

/// Every format stlsim reads, in the order listings show them.
pub const FORMATS: &[FormatInfo] = &[
    FormatInfo {
        format: Format::Msr,
        name: "msr",
        aliases: &[],
        summary: "MSR Cambridge CSV (SNIA IOTTA 388)",
        columns: &[
            "Timestamp",
            "Hostname",
            "DiskNumber",
            "Type",
            "Offset",
            "Size",
            "ResponseTime",
        ],
    },
    FormatInfo {
        format: Format::Spc,
        name: "spc",
        aliases: &["umass"],
        summary: "UMass Trace Repository SPC (Financial, WebSearch)",
        columns: &["ASU", "LBA", "Size", "Opcode", "Timestamp"],
    },
    FormatInfo {
        format: Format::Vscsi,
        name: "vscsi",
        aliases: &[],
        summary: "CloudPhysics binary vscsi records",
        columns: &[],
    },
    FormatInfo {
        format: Format::CloudphysicsCsv,
        name: "cloudphysics-csv",
        aliases: &["cp-csv"],
        summary: "CloudPhysics text form (header version,time,op,size,lbn)",
        columns: &[],
    },
    FormatInfo {
        format: Format::Csv,
        name: "csv",
        aliases: &[],
        summary: "any delimited text, columns given by a layout",
        columns: &[],
    },
    FormatInfo {
        format: Format::FioIolog,
        name: "fio",
        aliases: &["fio-iolog"],
        summary: "fio I/O log, version 2 or 3",
        columns: &[],
    },
    FormatInfo {
        format: Format::Blkparse,
        name: "blkparse",
        aliases: &["blktrace"],
        summary: "blkparse's default text output",
        columns: &[],
    },
    FormatInfo {
        format: Format::Disksim,
        name: "disksim",
        aliases: &["disksim-ascii"],
        summary: "DiskSim ASCII traces",
        columns: &[],
    },
    FormatInfo {
        format: Format::Mqsim,
        name: "mqsim",
        aliases: &[],
        summary: "MQSim traces",
        columns: &[],
    },
    FormatInfo {
        format: Format::DisksimValidate,
        name: "disksim-validate",
        aliases: &["validate"],
        summary: "DiskSim validate traces (measured response times)",
        columns: &[],
    },
    FormatInfo {
        format: Format::Systor17,
        name: "systor17",
        aliases: &["systor"],
        summary: "SYSTOR '17 VDI traces (SNIA IOTTA 4964)",
        columns: &[],
    },
    FormatInfo {
        format: Format::Alibaba,
        name: "alibaba",
        aliases: &[],
        summary: "Alibaba Cloud block traces",
        columns: &["device_id", "opcode", "offset", "length", "timestamp"],
    },
    FormatInfo {
        format: Format::Tencent,
        name: "tencent",
        aliases: &["tencent-cbs"],
        summary: "Tencent CBS traces (SNIA IOTTA 27917)",
        columns: &["Timestamp", "Offset", "Size", "IOType", "VolumeID"],
    },
    FormatInfo {
        format: Format::Fiu,
        name: "fiu",
        aliases: &[],
        summary: "FIU iodedup / srcmap (SNIA IOTTA 390, 391)",
        columns: &[
            "TS", "PID", "PROCESS", "LBA", "SIZE", "OP", "MAJOR", "MINOR", "MD5",
        ],
    },
    FormatInfo {
        format: Format::Thesios,
        name: "thesios",
        aliases: &["google-thesios"],
        summary: "Google's Thesios CSV shards",
        columns: &[],
    },
    FormatInfo {
        format: Format::Binary,
        name: "stlt",
        aliases: &["binary"],
        summary: "stlsim's binary form (stlsim convert)",
        columns: &[],
    },
];

/// The names of [`FORMATS`], comma-separated, for messages.
pub fn format_names() -> String {
    FORMATS
        .iter()
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Unit of a time column in a generic CSV.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeUnit {
    /// Seconds (may be fractional).
    S,
    /// Milliseconds.
    Ms,
    /// Microseconds.
    Us,
    /// Nanoseconds.
    Ns,
    /// Windows filetime ticks of 100 ns.
    Filetime,
}

/// Column layout of a generic CSV trace. Columns are 0-based.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GenericCsv {
    /// Column holding the timestamp.
    pub time_col: usize,
    /// Unit of the timestamp.
    pub time_unit: TimeUnit,
    /// Column holding the operation.
    pub op_col: usize,
    /// Column holding the offset.
    pub offset_col: usize,
    /// Bytes per unit of the offset column (1 for bytes, 512 for sectors).
    pub offset_unit_bytes: u64,
    /// Column holding the size.
    pub size_col: usize,
    /// Bytes per unit of the size column.
    pub size_unit_bytes: u64,
    /// Values of the op column meaning read (compared case-insensitively).
    pub read_values: Vec<String>,
    /// Values of the op column meaning write (compared case-insensitively).
    pub write_values: Vec<String>,
    /// Field delimiter: one ASCII character other than a line end or `"`.
    #[serde(deserialize_with = "generic_csv::deserialize_delimiter")]
    pub delimiter: char,
    /// Skip the first line.
    pub header: bool,
    /// Column holding the device (disk, LUN, volume) number, if any, for
    /// disk selection.
    pub device_col: Option<usize>,
    /// Fields are separated by runs of spaces and tabs (`delimiter` unused).
    pub whitespace: bool,
}

impl Default for GenericCsv {
    fn default() -> Self {
        GenericCsv {
            time_col: 0,
            time_unit: TimeUnit::S,
            op_col: 1,
            offset_col: 2,
            offset_unit_bytes: 512,
            size_col: 3,
            size_unit_bytes: 512,
            read_values: vec!["r".into(), "read".into()],
            write_values: vec!["w".into(), "write".into()],
            delimiter: ',',
            header: false,
            device_col: None,
            whitespace: false,
        }
    }
}

/// What to read from a trace file (or which synthetic trace to generate).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraceSpec {
    /// Path of the trace file (`.gz` and `.zst` are decompressed).
    pub path: String,
    /// Format name; `None` guesses from the extension and first line.
    pub format: Option<Format>,
    /// Keep only this disk number (MSR) or ASU (SPC).
    pub disk: Option<u64>,
    /// Skip this many requests (after disk selection) before replaying.
    pub start: u64,
    /// Replay at most this many requests (after `start`).
    pub limit: Option<u64>,
    /// Column layout for the generic CSV format.
    pub csv: GenericCsv,
    /// Replay the selection this many times back to back (each copy shifted
    /// in time to start one mean inter-arrival gap after the previous one
    /// ends; LBAs unchanged). 1: once.
    pub repeat: u64,
    /// Replay every device of a trace that holds several, merged into one
    /// address space (`--device all`). Without it (and without `disk`), a
    /// second device is an error: merging volumes silently mixes their
    /// address spaces.
    pub all_devices: bool,
    /// Skip records whose operation is neither a read nor a write (counted
    /// in the report) instead of stopping at the first with an error.
    pub skip_unknown: bool,
    /// blkparse only: the event that stands for a host request, `Q`
    /// (queued, the default), `D` (issued) or `C` (completed).
    pub event: Option<String>,
    /// Keep only reads or only writes (see [`selection`] for the order the
    /// options apply in).
    pub only: Option<Op>,
    /// Leave out the records before this many seconds after the first
    /// record (of the chosen device).
    pub time_from_s: Option<f64>,
    /// Leave out the records from this many seconds after the first record on.
    pub time_to_s: Option<f64>,
    /// Thesios only: MiB of addresses each traced file is given (see
    /// [`thesios`]); unset: [`thesios::DEFAULT_FILE_EXTENT_MIB`].
    pub file_extent_mib: Option<u64>,
    /// fio version-2 logs only (they carry no times): issue the requests at
    /// this many per second, request `i` at `i / rate_iops` seconds.
    pub rate_iops: Option<f64>,
    /// blkparse only: pair each request event (`Q` or `D`, as `event`
    /// chooses) with its completion (`C`) so that the request carries its
    /// measured response time ([`TraceReader::measured`]); records still come
    /// in request order. See [`blkparse`] for how requests are matched and
    /// how long one is waited for.
    pub pair: bool,
    /// Generate a synthetic trace instead of reading a file (`path` is then
    /// only its name in reports and messages; `start`, `limit` and `repeat`
    /// apply as to a file, `disk` and `format` must be unset).
    pub synth: Option<SynthSpec>,
}

impl Default for TraceSpec {
    fn default() -> Self {
        TraceSpec {
            path: String::new(),
            format: None,
            disk: None,
            start: 0,
            limit: None,
            csv: GenericCsv::default(),
            repeat: 1,
            skip_unknown: false,
            all_devices: false,
            event: None,
            only: None,
            time_from_s: None,
            time_to_s: None,
            file_extent_mib: None,
            rate_iops: None,
            pair: false,
            synth: None,
        }
    }
}

/// A stream of trace records. `next_record` returns `Ok(None)` at the end.
pub trait TraceReader: Send {
    /// The next record, or `None` at the end of the trace.
    fn next_record(&mut self) -> SimResult<Option<TraceRecord>>;
    /// [`next_record`](Self::next_record) into `rec` (false at the end):
    /// what the engine calls. A record handed back by value inside a
    /// `Result<Option<_>>` was read back in 16-byte pieces its writer had
    /// stored in other sizes, which missed store forwarding on every
    /// request; readers on the hot path store it whole instead.
    #[inline]
    fn next_into(&mut self, rec: &mut TraceRecord) -> SimResult<bool> {
        Ok(match self.next_record()? {
            Some(r) => {
                *rec = r;
                true
            }
            None => false,
        })
    }
    /// Fraction of the input consumed so far, 0.0 ..= 1.0 (for progress bars).
    fn progress(&self) -> f64;
    /// A fresh reader of the same records from the start, if the source can
    /// be read again (a first pass: footprint prefill, trace length).
    fn reopen(&self) -> Option<SimResult<Box<dyn TraceReader>>> {
        None
    }
    /// Records skipped so far because their operation was neither a read
    /// nor a write (with [`TraceSpec::skip_unknown`]).
    fn skipped_unknown(&self) -> u64 {
        0
    }
    /// The response time the trace measured for the record the last
    /// `next_record` returned, if the trace has one for it (DiskSim
    /// `validate`, MSR, blkparse with [`TraceSpec::pair`], a `.stlt`
    /// converted from one of them). A method rather than a record field so
    /// that records stay small and formats without the column cost nothing.
    fn measured(&self) -> Option<Nanos> {
        None
    }
}

/// An in-memory trace (tests, benchmarks and synthetic workloads).
pub struct VecTrace {
    records: std::sync::Arc<[TraceRecord]>,
    next: usize,
}

impl VecTrace {
    /// A trace of these records, in order.
    pub fn new(records: Vec<TraceRecord>) -> VecTrace {
        VecTrace {
            records: records.into(),
            next: 0,
        }
    }
}

impl TraceReader for VecTrace {
    #[inline]
    fn next_record(&mut self) -> SimResult<Option<TraceRecord>> {
        let r = self.records.get(self.next).copied();
        self.next += 1;
        Ok(r)
    }
    #[inline]
    fn next_into(&mut self, rec: &mut TraceRecord) -> SimResult<bool> {
        let Some(r) = self.records.get(self.next) else {
            self.next += 1;
            return Ok(false);
        };
        *rec = *r;
        self.next += 1;
        Ok(true)
    }
    fn progress(&self) -> f64 {
        (self.next as f64 / self.records.len().max(1) as f64).min(1.0)
    }
    fn reopen(&self) -> Option<SimResult<Box<dyn TraceReader>>> {
        Some(Ok(Box::new(VecTrace {
            records: std::sync::Arc::clone(&self.records),
            next: 0,
        })))
    }
}
