//! fio I/O logs, version 2 (`write_iolog` / `read_iolog` of the fio
//! benchmark): a first line `fio version 2 iolog`, then one action per line,
//! space-separated: `FILE add|open|close` for files, and
//! `FILE read|write OFFSET LENGTH` for I/O (OFFSET and LENGTH in bytes).
//! `sync`, `datasync`, `trim` and `wait` actions are skipped.
//!
//! * Version 2 records no time: every request is at time 0, so queue mode
//!   issues them as fast as its queue allows and flat-out mode one after
//!   another (a rate-limited replay belongs to the trace-ingestion work).
//! * Each distinct FILE is a device (numbered 0, 1 ... in order of first
//!   appearance) for disk selection.
//! * Version 3 (timestamps) is recognised and refused with a clear error
//!   until it is read.

use crate::error::SimResult;
use crate::trace::open::text::{show, CsvLines};
use crate::trace::open::RawTraceReader;
use crate::trace::{Op, TraceRecord};
use crate::units::{Bytes, Nanos};
use std::io::Read;

/// The most distinct FILEs (devices) a log may name; their names are kept.
pub const MAX_FILES: usize = 4096;

/// The header line of a version-2 log.
pub const HEADER_V2: &str = "fio version 2 iolog";

/// Reader of fio version-2 I/O logs.
pub struct FioIologReader {
    src: CsvLines,
    files: Vec<Vec<u8>>,
    header_seen: bool,
}

impl FioIologReader {
    /// A reader over decompressed iolog text; `file` labels error messages.
    pub fn new(input: Box<dyn Read + Send>, file: &str) -> Self {
        FioIologReader { src: CsvLines::new(input, file, b' '), files: vec![], header_seen: false }
    }
}

impl RawTraceReader for FioIologReader {
    fn next_raw(&mut self) -> SimResult<Option<(TraceRecord, Option<u64>)>> {
        loop {
            let s = &mut self.src;
            if !s.advance()? {
                return Ok(None);
            }
            if !self.header_seen {
                let line: Vec<&[u8]> = (0..s.len()).map(|i| s.field(i)).collect();
                let text = line.iter().map(|f| show(f)).collect::<Vec<_>>().join(" ");
                if text == HEADER_V2 {
                    self.header_seen = true;
                    continue;
                }
                if text.starts_with("fio version") {
                    return Err(s.err(format!("'{text}': only fio iolog version 2 is read so far")));
                }
                return Err(s.err(format!("expected the header '{HEADER_V2}', found '{text}'")));
            }
            let name = s.field(0).to_vec();
            let action = s.field(1);
            let op = match action {
                b"read" => Op::Read,
                b"write" => Op::Write,
                b"add" | b"open" | b"close" | b"sync" | b"datasync" | b"trim" | b"wait" => continue,
                other => {
                    return Err(s.err(format!(
                        "action (field 2) is '{}', expected read, write, add, open, close, sync, datasync, trim or wait",
                        show(other)
                    )))
                }
            };
            s.expect_fields(4, "FILE ACTION OFFSET LENGTH")?;
            let offset = s.u64_field(2, "OFFSET")?;
            let len = s.u64_field(3, "LENGTH")?;
            let line = s.line();
            let dev = match self.files.iter().position(|f| *f == name) {
                Some(i) => i,
                None if self.files.len() >= MAX_FILES => {
                    return Err(s.err(format!("more than {MAX_FILES} distinct files: each is a device, and no drive has that many")));
                }
                None => {
                    self.files.push(name);
                    self.files.len() - 1
                }
            };
            let rec = TraceRecord { time: Nanos(0), op, offset: Bytes(offset), len: Bytes(len), line };
            return Ok(Some((rec, Some(dev as u64))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &'static str) -> SimResult<Vec<TraceRecord>> {
        let mut r = FioIologReader::new(Box::new(text.as_bytes()), "t.log");
        let mut v = vec![];
        while let Some((rec, _)) = r.next_raw()? {
            v.push(rec);
        }
        Ok(v)
    }

    #[test]
    fn reads_version_2_actions_and_skips_file_actions() {
        let text = "fio version 2 iolog\n/dev/sda add\n/dev/sda open\n/dev/sda write 2188587008 4096\n\
                    /dev/sda read 4096 8192\n/dev/sda sync\n/dev/sda close\n";
        let recs = read_all(text).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[0].op, recs[0].offset, recs[0].len, recs[0].line), (Op::Write, Bytes(2188587008), Bytes(4096), 4));
        assert_eq!((recs[1].op, recs[1].offset, recs[1].len), (Op::Read, Bytes(4096), Bytes(8192)));
    }

    #[test]
    fn bad_headers_versions_and_actions_name_the_line() {
        let e = read_all("/dev/sda write 0 4096\n").unwrap_err();
        assert!(e.to_string().contains("t.log:1"), "{e}");
        let e = read_all("fio version 3 iolog\n").unwrap_err();
        assert!(e.to_string().contains("version 2"), "{e}");
        let e = read_all("fio version 2 iolog\n/dev/sda erase 0 1\n").unwrap_err();
        assert!(e.to_string().contains("t.log:2") && e.to_string().contains("erase"), "{e}");
    }
}
