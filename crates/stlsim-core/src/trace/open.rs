//! Opening a trace: format dispatch (named, guessed from the name, sniffed
//! from the first line), and the options every format shares (disk
//! selection, `start`, `limit`, repeats). Decompression is
//! `crate::trace::decompress`'s, the text readers' toolkit
//! `crate::trace::text`'s, the formats' list [`crate::trace::FORMATS`].
//!
//! Each format module provides a reader implementing [`RawTraceReader`],
//! which yields records together with their disk number (MSR) or ASU (SPC).
//! [`open_trace`] wraps that reader in one that applies the [`TraceSpec`]
//! options and reports progress as the fraction of the (compressed) file read.

use crate::error::{SimError, SimResult};
use crate::trace::decompress::open_input;
use crate::trace::selection::{Selection, Verdict};
use crate::trace::text;
use crate::trace::{
    binary::BinaryReader,
    blkparse::{BlkparseReader, Event},
    cloudphysics_csv::CloudphysicsCsvReader,
    disksim::{DisksimAsciiReader, DisksimValidateReader, Flavour},
    generic_csv::GenericCsvReader,
    msr::MsrReader,
    spc::SpcReader,
    synth::{SynthReader, SynthSpec},
    thesios::ThesiosReader,
    vscsi::VscsiReader,
    Format, RawTraceReader, TraceReader, TraceRecord, TraceSpec,
};
use crate::units::Nanos;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Open the trace `spec.path`: decompress `.gz` / `.zst` on the fly, pick the
/// format (`spec.format`, else from the file name, else from the first line)
/// and apply `spec.disk`, `spec.start` and `spec.limit`.
pub fn open_trace(spec: &TraceSpec) -> SimResult<Box<dyn TraceReader>> {
    match spec.repeat {
        0 => Err(SimError::Config(
            "trace option 'repeat' must be at least 1".into(),
        )),
        1 => open_once(spec),
        _ => Ok(Box::new(RepeatReader::new(spec.clone())?)),
    }
}

/// Open one pass over the trace (no repetition).
fn open_once(spec: &TraceSpec) -> SimResult<Box<dyn TraceReader>> {
    if let Some(synth) = &spec.synth {
        return open_synth(spec, synth);
    }
    let (decoded, consumed, size) = open_input(&spec.path)?;
    build(decoded, spec, Some((consumed, size)), true)
}

/// The records of a trace file after the selection options (device, time
/// window, operation, `start`, `limit`: see [`Selection`]), each with its
/// disk, one call at a time (`None` at the end), and the format.
#[allow(clippy::type_complexity)]
pub fn open_selected(
    spec: &TraceSpec,
) -> SimResult<(
    Format,
    Box<dyn FnMut() -> SimResult<Option<(TraceRecord, Option<u64>)>> + Send>,
)> {
    let (format, mut sel) = open_selection(spec)?;
    Ok((format, Box::new(move || sel.next_record())))
}

/// [`open_selected`] as a value that also answers for the format reader
/// ([`Selected::measured`]): for tools that keep or sum up more than the
/// records (`stlsim convert`, `stlsim trace-info`).
pub fn open_selection(spec: &TraceSpec) -> SimResult<(Format, Selected)> {
    // These tools see every device (each record keeps its own): a second
    // device is not an error here, as it is for a replay.
    let sel = Selection::new(&TraceSpec {
        all_devices: true,
        ..spec.clone()
    })?;
    let (format, raw) = open_raw(spec)?;
    Ok((
        format,
        Selected {
            raw,
            sel,
            file: spec.path.clone(),
            done: false,
        },
    ))
}

/// The records of a trace file after the selection options ([`Selection`]),
/// with each record's disk ([`open_selection`]).
pub struct Selected {
    raw: Box<dyn RawTraceReader>,
    sel: Selection,
    file: String,
    done: bool,
}

impl Selected {
    /// The next selected record and its disk; `None` at the end.
    pub fn next_record(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        while !self.done && !self.sel.full() {
            let Some((rec, disk)) = self.raw.next_raw()? else {
                break;
            };
            crate::trace::request_end(&rec, &self.file)?;
            match self.sel.judge(&rec, disk)? {
                Verdict::Keep => return Ok(Some((rec, disk))),
                Verdict::Skip => {}
                Verdict::Stop => break,
            }
        }
        self.done = true;
        Ok(None)
    }

    /// The measured response time of the record `next_record` last returned.
    pub fn measured(&self) -> Option<Nanos> {
        self.raw.measured()
    }

    /// Completions that matched no request (blkparse with pairing; the
    /// whole file so far, before the selection).
    pub fn unpaired_completions(&self) -> u64 {
        self.raw.unpaired_completions()
    }
}

/// The format reader of a trace file (decompressed, its format named or
/// detected) without the selection options, and the format: for tools that
/// need each record's disk (`stlsim convert`, `stlsim trace-info`).
pub fn open_raw(spec: &TraceSpec) -> SimResult<(Format, Box<dyn RawTraceReader>)> {
    if spec.synth.is_some() {
        return Err(SimError::Config(format!(
            "'{}' is a synthetic trace, not a file",
            spec.path
        )));
    }
    let (decoded, _, _) = open_input(&spec.path)?;
    let (format, input) = detect(decoded, spec)?;
    Ok((format, raw_reader(input, format, spec)?))
}

/// The generator of a synthetic trace, with `start` and `limit` applied.
fn open_synth(spec: &TraceSpec, synth: &SynthSpec) -> SimResult<Box<dyn TraceReader>> {
    let unset = |what: &str| {
        Err(SimError::Config(format!(
            "trace option '{what}' does not apply to a synthetic trace ('{}')",
            spec.path
        )))
    };
    if let Some(key) = Selection::synthetic_conflict(spec) {
        return unset(key);
    }
    if spec.format.is_some() {
        return unset("format");
    }
    Ok(Box::new(SynthReader::with_selection(
        synth, spec.start, spec.limit,
    )?))
}

/// Read a trace from an already opened, already decompressed stream (for
/// example an in-memory buffer). `spec.path` only labels error messages and
/// guides format detection; progress is unknown (0.0) until the end.
pub fn open_reader(
    input: Box<dyn Read + Send>,
    spec: &TraceSpec,
) -> SimResult<Box<dyn TraceReader>> {
    build(input, spec, None, false)
}

/// Whether records of `format` carry a disk number / ASU that `disk` can select.
pub fn format_has_disks(format: Format) -> bool {
    matches!(
        format,
        Format::Msr
            | Format::Spc
            | Format::FioIolog
            | Format::Blkparse
            | Format::Disksim
            | Format::Mqsim
            | Format::Binary
    ) || format.layout().is_some_and(|l| l.device_col.is_some())
}

/// The reader of `format` over a decompressed stream, without the spec's
/// selection options (its `csv`, `event` and `skip_unknown` apply).
pub fn raw_reader(
    input: Box<dyn Read + Send>,
    format: Format,
    spec: &TraceSpec,
) -> SimResult<Box<dyn RawTraceReader>> {
    let file = spec.path.as_str();
    Ok(match format {
        Format::Msr => Box::new(MsrReader::new(input, file, spec.skip_unknown)),
        Format::Spc => Box::new(SpcReader::new(input, file, spec.skip_unknown)),
        Format::FioIolog => Box::new(
            crate::trace::fio_iolog::FioIologReader::new(input, file, spec.skip_unknown)
                .with_rate(spec.rate_iops)?,
        ),
        Format::Vscsi => Box::new(VscsiReader::new(input, file)?),
        Format::CloudphysicsCsv => Box::new(CloudphysicsCsvReader::new(input, file)),
        Format::Csv => Box::new(GenericCsvReader::new(
            input,
            file,
            &spec.csv,
            spec.skip_unknown,
        )?),
        Format::Systor17 | Format::Alibaba | Format::Tencent | Format::Fiu => {
            Box::new(GenericCsvReader::new(
                input,
                file,
                &format.layout().unwrap_or_default(),
                spec.skip_unknown,
            )?)
        }
        Format::Blkparse => Box::new(blkparse_reader(input, spec)?),
        Format::Disksim => Box::new(DisksimAsciiReader::new(
            input,
            file,
            Flavour::Disksim,
            spec.skip_unknown,
        )),
        Format::Mqsim => Box::new(DisksimAsciiReader::new(
            input,
            file,
            Flavour::Mqsim,
            spec.skip_unknown,
        )),
        Format::DisksimValidate => {
            Box::new(DisksimValidateReader::new(input, file, spec.skip_unknown))
        }
        Format::Thesios => Box::new(ThesiosReader::new(
            input,
            file,
            spec.file_extent_mib,
            spec.skip_unknown,
        )?),
        Format::Binary => Box::new(BinaryReader::new(input, file)?),
    })
}

/// The blkparse reader `spec` asks for: its `event` (default `Q`), paired
/// with completions when `spec.pair`.
fn blkparse_reader(input: Box<dyn Read + Send>, spec: &TraceSpec) -> SimResult<BlkparseReader> {
    let event = Event::parse(spec.event.as_deref().unwrap_or("Q"))?;
    BlkparseReader::new(input, &spec.path, event).with_pairing(spec.pair)
}

/// The format (named, else guessed from the name, else sniffed) and the
/// stream still at its start; errors for options the format does not take
/// (`event` but for blkparse, `disk` for a format without devices).
fn detect(
    input: Box<dyn Read + Send>,
    spec: &TraceSpec,
) -> SimResult<(Format, Box<dyn Read + Send>)> {
    let (format, input) = match spec.format.or_else(|| Format::guess(&spec.path)) {
        Some(f) => (f, input),
        None => sniff(input, &spec.path)?,
    };
    if spec.event.is_some() && format != Format::Blkparse {
        return Err(SimError::Config(format!(
            "trace option 'event' chooses a blkparse event (Q, D or C), but trace '{}' is in format {}",
            spec.path,
            format.name()
        )));
    }
    if spec.rate_iops.is_some() && format != Format::FioIolog {
        return Err(SimError::Config(format!(
            "trace option 'rate_iops' gives times to a fio version-2 log, but trace '{}' is in format {}",
            spec.path,
            format.name()
        )));
    }
    if spec.file_extent_mib.is_some() && format != Format::Thesios {
        return Err(SimError::Config(format!(
            "trace option 'file_extent_mib' places the files of a Thesios trace, but trace '{}' is in format {}",
            spec.path,
            format.name()
        )));
    }
    if spec.pair && format != Format::Blkparse {
        return Err(SimError::Config(format!(
            "trace option 'pair' (--pair-completions) pairs blkparse requests with their completions, but trace '{}' is in format {}",
            spec.path,
            format.name()
        )));
    }
    let csv_devices = format == Format::Csv && spec.csv.device_col.is_some();
    if spec.disk.is_some() && !format_has_disks(format) && !csv_devices {
        let hint = if format == Format::Csv {
            " (name its device column: device_col)"
        } else {
            ""
        };
        return Err(SimError::Config(format!(
            "trace option 'disk' selects a disk, device, LUN or volume, but trace '{}' is in format {} which has none{hint}",
            spec.path,
            format.name()
        )));
    }
    let input = if matches!(format, Format::Vscsi | Format::Binary) {
        input
    } else {
        crate::trace::header::open_text(input, format, &spec.path)?
    };
    Ok((format, input))
}

fn build(
    input: Box<dyn Read + Send>,
    spec: &TraceSpec,
    progress: Option<(Arc<AtomicU64>, u64)>,
    from_file: bool,
) -> SimResult<Box<dyn TraceReader>> {
    let (format, input) = detect(input, spec)?;
    // One monomorphic wrapper per format, so the per-record call into the
    // format reader is static (and inlined).
    fn wrap<R: RawTraceReader + 'static>(
        inner: R,
        spec: &TraceSpec,
        progress: Option<(Arc<AtomicU64>, u64)>,
        from_file: bool,
    ) -> SimResult<Box<dyn TraceReader>> {
        Ok(Box::new(SpecReader {
            inner,
            file: spec.path.clone(),
            sel: Selection::new(spec)?,
            done: false,
            progress,
            again: from_file.then(|| TraceSpec {
                repeat: 1,
                ..spec.clone()
            }),
        }))
    }
    let file = spec.path.as_str();
    let p = progress;
    let f = from_file;
    match format {
        Format::Msr => wrap(MsrReader::new(input, file, spec.skip_unknown), spec, p, f),
        Format::Spc => wrap(SpcReader::new(input, file, spec.skip_unknown), spec, p, f),
        Format::FioIolog => wrap(
            crate::trace::fio_iolog::FioIologReader::new(input, file, spec.skip_unknown)
                .with_rate(spec.rate_iops)?,
            spec,
            p,
            f,
        ),
        Format::Vscsi => wrap(VscsiReader::new(input, file)?, spec, p, f),
        Format::CloudphysicsCsv => wrap(CloudphysicsCsvReader::new(input, file), spec, p, f),
        Format::Csv => wrap(
            GenericCsvReader::new(input, file, &spec.csv, spec.skip_unknown)?,
            spec,
            p,
            f,
        ),
        Format::Systor17 | Format::Alibaba | Format::Tencent | Format::Fiu => {
            let layout = format.layout().unwrap_or_default();
            wrap(
                GenericCsvReader::new(input, file, &layout, spec.skip_unknown)?,
                spec,
                p,
                f,
            )
        }
        Format::Blkparse => wrap(blkparse_reader(input, spec)?, spec, p, f),
        Format::Disksim => wrap(
            DisksimAsciiReader::new(input, file, Flavour::Disksim, spec.skip_unknown),
            spec,
            p,
            f,
        ),
        Format::Mqsim => wrap(
            DisksimAsciiReader::new(input, file, Flavour::Mqsim, spec.skip_unknown),
            spec,
            p,
            f,
        ),
        Format::DisksimValidate => wrap(
            DisksimValidateReader::new(input, file, spec.skip_unknown),
            spec,
            p,
            f,
        ),
        Format::Thesios => wrap(
            ThesiosReader::new(input, file, spec.file_extent_mib, spec.skip_unknown)?,
            spec,
            p,
            f,
        ),
        Format::Binary => wrap(BinaryReader::new(input, file)?, spec, p, f),
    }
}

/// Guess the format from the first non-blank line of a text trace.
pub fn sniff_line(line: &str) -> Option<Format> {
    let line = line.trim();
    if let Some(f) = crate::trace::header::header_format(line) {
        return Some(f);
    }
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let compact: String = line
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    let number = |w: &str| !w.is_empty() && w.bytes().all(|c| c.is_ascii_digit() || c == b'.');
    let device = |w: &str| {
        w.split_once(',')
            .is_some_and(|(a, b)| number(a) && number(b) && !a.contains('.'))
    };
    if line.starts_with("fio version") && line.ends_with("iolog") {
        Some(Format::FioIolog)
    } else if words.len() >= 7 && device(words[0]) && number(words[3]) && words[5].len() <= 2 {
        Some(Format::Blkparse)
    } else if words.len() == 6
        && (words[0] == "R" || words[0] == "W")
        && (words[1].eq_ignore_ascii_case("hit") || words[1].eq_ignore_ascii_case("miss"))
    {
        Some(Format::DisksimValidate)
    } else if words.len() == 5
        && fields.len() == 1
        && words[..4].iter().all(|w| number(w))
        && words[0].contains('.')
    {
        Some(Format::Disksim)
    } else if words.len() == 5
        && fields.len() == 1
        && words[..4].iter().all(|w| number(w))
        && (words[4] == "0" || words[4] == "1")
    {
        Some(Format::Mqsim)
    } else if fields.len() == 7
        && (fields[3].eq_ignore_ascii_case("read") || fields[3].eq_ignore_ascii_case("write"))
    {
        Some(Format::Msr)
    } else if [",filename,", ",file_offset,", ",op_type,", ",start_time,"]
        .iter()
        .all(|c| format!(",{compact},").contains(c))
    {
        Some(Format::Thesios)
    } else if compact.starts_with("version,time,op,size,lbn") {
        Some(Format::CloudphysicsCsv)
    } else if compact.starts_with("timestamp,response,iotype,lun,offset,size") {
        Some(Format::Systor17)
    } else if fields.len() == 5
        && (fields[1] == "R" || fields[1] == "W")
        && [0, 2, 3, 4]
            .iter()
            .all(|&i| number(fields[i]) && !fields[i].contains('.'))
    {
        Some(Format::Alibaba)
    } else if words.len() == 9
        && fields.len() == 1
        && number(words[0])
        && (words[5] == "R" || words[5] == "W")
    {
        Some(Format::Fiu)
    } else if fields.len() >= 5
        && (fields[3].eq_ignore_ascii_case("r") || fields[3].eq_ignore_ascii_case("w"))
        // Beyond five fields (SPC's optional ones), the numbers must be right too.
        && (fields.len() == 5 || ([0, 1, 2].iter().all(|&i| number(fields[i]) && !fields[i].contains('.')) && number(fields[4])))
    {
        Some(Format::Spc)
    } else {
        None
    }
}

/// Read the first non-blank line, classify it, and hand back a stream that
/// still starts at the beginning.
fn sniff(mut input: Box<dyn Read + Send>, path: &str) -> SimResult<(Format, Box<dyn Read + Send>)> {
    // Blank lines may precede the first line; a line itself is bounded.
    const MAX_PREFIX: usize = 4 << 20;
    let mut prefix: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    let first_line = loop {
        // A complete non-blank line in the prefix?
        let mut start = 0;
        let mut found = None;
        for (i, &b) in prefix.iter().enumerate() {
            if b == b'\n' || b == b'\r' {
                if !prefix[start..i].iter().all(u8::is_ascii_whitespace) {
                    found = Some((start, i));
                    break;
                }
                start = i + 1;
            }
        }
        if let Some((s, e)) = found {
            break Some(String::from_utf8_lossy(&prefix[s..e]).into_owned());
        }
        if (prefix.len() - start) as u64 > text::MAX_LINE_BYTES {
            // No trace format has such lines.
            let line = memchr::memchr_iter(b'\n', &prefix[..start]).count() as u64 + 1;
            return Err(SimError::TraceFormat {
                at: crate::error::Location {
                    file: path.to_string(),
                    line,
                },
                msg: text::too_long_msg(),
            });
        }
        if prefix.len() >= MAX_PREFIX {
            break Some(String::from_utf8_lossy(&prefix[start..]).into_owned());
        }
        let n = match input.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(SimError::Io(format!("error reading trace '{path}': {e}"))),
        };
        let stem = crate::trace::binary::MAGIC_STEM;
        if prefix.len() < stem.len()
            && prefix.len() + n >= stem.len()
            && chunk[..stem.len() - prefix.len()] == stem[prefix.len()..]
            && prefix[..] == stem[..prefix.len()]
        {
            prefix.extend_from_slice(&chunk[..n]);
            return Ok((
                Format::Binary,
                Box::new(io::Cursor::new(prefix).chain(input)),
            ));
        }
        if n == 0 {
            let rest = &prefix[start..];
            if rest.iter().all(u8::is_ascii_whitespace) {
                break None;
            }
            break Some(String::from_utf8_lossy(rest).into_owned());
        }
        prefix.extend_from_slice(&chunk[..n]);
    };
    let Some(line) = first_line else {
        return Err(SimError::Config(format!(
            "cannot guess the format of trace '{path}': it is empty; pass --format (one of: {})",
            crate::trace::format_names()
        )));
    };
    if crate::trace::header::looks_binary(&prefix[..prefix.len().min(8192)]) {
        return Err(crate::trace::header::binary_error(path, &prefix, None));
    }
    match sniff_line(&line) {
        Some(f) => Ok((f, Box::new(io::Cursor::new(prefix).chain(input)))),
        None => {
            let shown = text::printable(&line, 80);
            Err(SimError::Config(format!(
                "cannot guess the format of trace '{path}' from its name or first line ('{shown}'); \
                 pass --format (one of: {})",
                crate::trace::format_names()
            )))
        }
    }
}

/// Applies the selection options (see [`Selection`]) and reports progress.
struct SpecReader<R> {
    inner: R,
    /// The trace's path, for messages.
    file: String,
    sel: Selection,
    done: bool,
    progress: Option<(Arc<AtomicU64>, u64)>,
    /// The spec to open the file again with (readers of files only).
    again: Option<TraceSpec>,
}

impl<R: RawTraceReader> TraceReader for SpecReader<R> {
    #[inline]
    fn next_record(&mut self) -> SimResult<Option<TraceRecord>> {
        // A full request window stops before reading on: a malformed line
        // past the selection is not the run's business.
        while !self.done && !self.sel.full() {
            let Some((rec, disk)) = self.inner.next_raw()? else {
                break;
            };
            // Every format's records: an end past 2^64 bytes is an error here,
            // before anything sizes or folds the request.
            crate::trace::request_end(&rec, &self.file)?;
            match self.sel.judge(&rec, disk)? {
                Verdict::Keep => return Ok(Some(rec)),
                Verdict::Skip => {}
                Verdict::Stop => break,
            }
        }
        self.done = true;
        Ok(None)
    }

    fn progress(&self) -> f64 {
        if self.done {
            return 1.0;
        }
        let file = match &self.progress {
            Some((consumed, size)) if *size > 0 => {
                consumed.load(Ordering::Relaxed) as f64 / *size as f64
            }
            _ => 0.0,
        };
        let by_limit = match self.sel.limit() {
            Some(l) if l > 0 => self.sel.emitted() as f64 / l as f64,
            _ => 0.0,
        };
        file.max(by_limit).clamp(0.0, 1.0)
    }

    fn reopen(&self) -> Option<SimResult<Box<dyn TraceReader>>> {
        self.again.as_ref().map(open_once)
    }

    fn skipped_unknown(&self) -> u64 {
        self.inner.skipped_unknown()
    }

    fn measured(&self) -> Option<Nanos> {
        self.inner.measured()
    }
}

/// Replays the selection of a trace `repeat` times: each pass is read from
/// the file again and shifted in time so that it starts one mean
/// inter-arrival gap (of the first pass) after the previous pass ended.
struct RepeatReader {
    spec: TraceSpec,
    inner: Box<dyn TraceReader>,
    pass: u64,
    /// First and last timestamps and record count of the first pass.
    first: Option<u64>,
    last: u64,
    count: u64,
    /// Where the current pass starts, in shifted time.
    base: u64,
    /// The largest shifted time emitted so far.
    end: u64,
    /// Unknown-operation records skipped by the finished passes.
    skipped_before: u64,
}

impl RepeatReader {
    fn new(spec: TraceSpec) -> SimResult<RepeatReader> {
        let inner = open_once(&TraceSpec {
            repeat: 1,
            ..spec.clone()
        })?;
        Ok(RepeatReader {
            spec,
            inner,
            pass: 0,
            first: None,
            last: 0,
            count: 0,
            base: 0,
            end: 0,
            skipped_before: 0,
        })
    }

    /// The error for a record of a later pass whose shifted time would
    /// wrap past 2^64 ns ("timestamps went backwards" otherwise).
    #[cold]
    fn past_time_end(&self, rec: &TraceRecord) -> SimError {
        SimError::TraceFormat {
            at: crate::error::Location {
                file: self.spec.path.clone(),
                line: rec.line,
            },
            msg: format!(
                "repeating the trace {} times takes its times past 2^64 ns (584 years) in pass {}: repeat it fewer times",
                self.spec.repeat,
                self.pass + 1
            ),
        }
    }
}

impl TraceReader for RepeatReader {
    fn next_record(&mut self) -> SimResult<Option<TraceRecord>> {
        loop {
            if let Some(mut rec) = self.inner.next_record()? {
                let t = rec.time.0;
                if self.pass == 0 {
                    let first = *self.first.get_or_insert(t);
                    self.last = self.last.max(t);
                    self.count += 1;
                    self.base = first;
                } else {
                    let first = self.first.unwrap_or(0);
                    let Some(shifted) = self.base.checked_add(t.saturating_sub(first)) else {
                        return Err(self.past_time_end(&rec));
                    };
                    rec.time = crate::units::Nanos(shifted);
                }
                self.end = self.end.max(rec.time.0);
                return Ok(Some(rec));
            }
            self.pass += 1;
            if self.pass >= self.spec.repeat || self.count == 0 {
                return Ok(None);
            }
            let span = self.last - self.first.unwrap_or(0);
            let gap = if self.count > 1 {
                (span / (self.count - 1)).max(1)
            } else {
                1_000_000
            };
            let Some(base) = self.end.checked_add(gap) else {
                return Err(SimError::Config(format!(
                    "repeating trace '{}' {} times takes its times past 2^64 ns (584 years) in pass {}: repeat it fewer times",
                    self.spec.path,
                    self.spec.repeat,
                    self.pass + 1
                )));
            };
            self.base = base;
            self.skipped_before += self.inner.skipped_unknown();
            self.inner = open_once(&TraceSpec {
                repeat: 1,
                ..self.spec.clone()
            })?;
        }
    }

    fn progress(&self) -> f64 {
        ((self.pass as f64 + self.inner.progress()) / self.spec.repeat as f64).min(1.0)
    }

    fn reopen(&self) -> Option<SimResult<Box<dyn TraceReader>>> {
        Some(RepeatReader::new(self.spec.clone()).map(|r| Box::new(r) as Box<dyn TraceReader>))
    }

    fn skipped_unknown(&self) -> u64 {
        self.skipped_before + self.inner.skipped_unknown()
    }

    fn measured(&self) -> Option<Nanos> {
        self.inner.measured()
    }
}

#[cfg(test)]
mod tests;
