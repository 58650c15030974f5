//! Helpers the trace modules' tests share: inputs, specs, reading whole
//! files, and comparing a reader's fast path with its general one.

use crate::error::{SimError, SimResult};
use crate::trace::open::open_trace;
use crate::trace::{Op, RawTraceReader, TraceRecord, TraceSpec};
use crate::units::Nanos;

/// `text` as a reader's input (each reader of a test gets its own copy).
pub(crate) fn text_input(text: &str) -> Box<dyn std::io::Read + Send> {
    Box::new(std::io::Cursor::new(text.as_bytes().to_vec()))
}

/// `<repo>/tests/data/<name>`.
pub(crate) fn data(name: &str) -> String {
    format!("{}/../../tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A fresh temporary directory for one test.
pub(crate) fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("stlsim-trace-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The whole file, every device merged (tests of the readers).
pub(crate) fn spec(path: &str) -> TraceSpec {
    TraceSpec {
        path: path.to_string(),
        all_devices: true,
        ..TraceSpec::default()
    }
}

pub(crate) fn read_all(spec: &TraceSpec) -> SimResult<Vec<TraceRecord>> {
    let mut r = open_trace(spec)?;
    let mut v = Vec::new();
    while let Some(rec) = r.next_record()? {
        v.push(rec);
    }
    assert_eq!(r.progress(), 1.0);
    Ok(v)
}

pub(crate) fn counts(recs: &[TraceRecord]) -> (usize, usize) {
    let reads = recs.iter().filter(|r| r.op == Op::Read).count();
    (reads, recs.len() - reads)
}

/// The error of reading `spec` to the end.
pub(crate) fn read_err(spec: &TraceSpec) -> SimError {
    match read_all(spec) {
        Ok(v) => panic!("expected an error, read {} records", v.len()),
        Err(e) => e,
    }
}

/// The message of the trace-format error that reading `spec` must raise at `line` of its file.
pub(crate) fn format_error_at(spec: &TraceSpec, line: u64) -> String {
    match read_err(spec) {
        SimError::TraceFormat { at, msg } => {
            assert_eq!(
                at,
                crate::error::Location {
                    file: spec.path.clone(),
                    line
                },
                "{msg}"
            );
            msg
        }
        e => panic!("expected a trace format error at line {line}, got {e:?}"),
    }
}

/// Everything a raw reader gives until its end or first error: records
/// with their device and measured time, the error's text, the skipped
/// count.
pub(crate) type Drained = (
    Vec<(TraceRecord, Option<u64>, Option<Nanos>)>,
    Option<String>,
    u64,
);

/// Read `r` to its end or first error.
pub(crate) fn drain(r: &mut dyn RawTraceReader) -> Drained {
    let mut v = Vec::new();
    loop {
        match r.next_raw() {
            Ok(Some((rec, dev))) => v.push((rec, dev, r.measured())),
            Ok(None) => return (v, None, r.skipped_unknown()),
            Err(e) => return (v, Some(e.to_string()), r.skipped_unknown()),
        }
    }
}

/// What `make()` reads with its fast path, and with the general way only
/// (`general_only` switches a reader's fast path off).
pub(crate) fn fast_and_general<R: RawTraceReader>(
    make: impl Fn() -> R,
    general_only: impl FnOnce(&mut R),
) -> (Drained, Drained) {
    let mut general = make();
    general_only(&mut general);
    (drain(&mut make()), drain(&mut general))
}

/// Texts for the readers' fast-path property tests: lines of the
/// format's `columns` (each field one of its column's values), a field
/// now and then replaced by a near miss (spaces, a sign, 17 to 20
/// digits, empty, a decimal) or junk, a field dropped or added now and
/// then, joined by `sep`, with `\r` endings and blank lines sometimes.
pub(crate) fn mutated_lines(
    columns: &'static [&'static [&'static str]],
    sep: &'static str,
) -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let junk = || {
        prop_oneof![
            3 => "[0-9]{1,12}",
            1 => "[0-9]{17,20}",
            1 => Just("18446744073709551615".to_string()),
            1 => Just("999999999999999999".to_string()),
            1 => "[ \t]?\\+?[0-9]{1,3}[ \t]?",
            1 => "[a-zA-Z\"]{0,4}",
            1 => Just(String::new()),
            1 => "[0-9]{1,3}\\.[0-9]{1,2}",
        ]
    };
    let fields: Vec<BoxedStrategy<String>> = columns
        .iter()
        .map(|col| {
            prop_oneof![
                8 => proptest::sample::select(*col).prop_map(str::to_string),
                1 => junk(),
            ]
            .boxed()
        })
        .collect();
    let line = (fields, proptest::bool::ANY, 0u8..12, junk()).prop_map(
        move |(mut f, cr, shape, extra)| {
            match shape {
                0 => return String::new(),
                1 => {
                    f.pop();
                }
                2 => f.push(extra),
                _ => {}
            }
            let mut l = f.join(sep);
            if cr {
                l.push('\r');
            }
            l
        },
    );
    proptest::collection::vec(line, 1..12).prop_map(|ls| ls.join("\n"))
}

/// Write `contents` to `name` in a temp dir and return the path.
pub(crate) fn write_temp(tag: &str, name: &str, contents: &[u8]) -> String {
    let p = temp_dir(tag).join(name);
    std::fs::write(&p, contents).unwrap();
    p.to_string_lossy().into_owned()
}
