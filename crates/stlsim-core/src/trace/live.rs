//! Requests handed over one at a time by a live client rather than read
//! from a file: the NBD server of `stlsim serve` (issue 37) pushes each
//! request it receives and steps the simulation once. The reader has no
//! end of its own: it is empty between requests, and the engine sees the
//! end of the trace when it is stepped with nothing pushed, which is how
//! a server ends its run. It cannot be read twice, so a layer sized from
//! the trace's address range, or a footprint prefill, is refused with the
//! engine's usual message.
//!
//! The queue can also write what it is given as a binary trace
//! ([`LiveQueue::record_to`], `stlsim serve --record`), so that a served
//! workload can be replayed by `stlsim run` and give the same report.

use super::binary::BinaryWriter;
use super::{TraceReader, TraceRecord};
use crate::error::{SimError, SimResult};
use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;
use std::sync::{Arc, Mutex};

/// The binary trace a live run's requests are written to, and its path.
type Record = (BinaryWriter<BufWriter<File>>, String);

/// The pushing end, kept by the server.
#[derive(Clone, Default)]
pub struct LiveQueue(
    Arc<Mutex<VecDeque<TraceRecord>>>,
    Arc<Mutex<Option<Record>>>,
);

impl LiveQueue {
    /// Queue one request for the next step (and record it, when recording).
    pub fn push(&self, rec: TraceRecord) -> SimResult<()> {
        if let Some((w, path)) = self.1.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            w.push(&rec, None)
                .map_err(|e| SimError::Io(format!("{path}: cannot record the request: {e}")))?;
        }
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(rec);
        Ok(())
    }

    /// Write every request pushed from now on to `path` as a binary trace
    /// (`.stlt`) with this header (JSON text).
    pub fn record_to(&self, path: &str, header_json: &str) -> SimResult<()> {
        let io = |e: std::io::Error| SimError::Io(format!("{path}: cannot record to it: {e}"));
        let w = BinaryWriter::new(BufWriter::new(File::create(path).map_err(io)?), header_json)
            .map_err(io)?;
        *self.1.lock().unwrap_or_else(|p| p.into_inner()) = Some((w, path.to_string()));
        Ok(())
    }

    /// End the recording (its last block and end marker written); returns
    /// the requests recorded, or `None` when not recording. Idempotent.
    pub fn finish_record(&self) -> SimResult<Option<u64>> {
        let Some((w, path)) = self.1.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Ok(None);
        };
        let (n, _) = w
            .finish()
            .map_err(|e| SimError::Io(format!("{path}: cannot finish the recording: {e}")))?;
        Ok(Some(n))
    }

    /// The reader the simulation pulls from.
    pub fn reader(&self) -> LiveTrace {
        LiveTrace(self.0.clone())
    }
}

/// The pulling end, the simulation's trace reader.
pub struct LiveTrace(Arc<Mutex<VecDeque<TraceRecord>>>);

impl TraceReader for LiveTrace {
    fn next_record(&mut self) -> SimResult<Option<TraceRecord>> {
        Ok(self.0.lock().unwrap_or_else(|p| p.into_inner()).pop_front())
    }
    /// A live client's requests have no known end.
    fn progress(&self) -> f64 {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Op;
    use crate::units::{Bytes, Nanos};

    #[test]
    fn pushed_requests_come_out_in_order_and_an_empty_queue_ends_the_trace() {
        let q = LiveQueue::default();
        let mut r = q.reader();
        assert_eq!(r.next_record().unwrap(), None);
        for i in 0..3 {
            q.push(TraceRecord {
                time: Nanos(i),
                op: Op::Write,
                offset: Bytes(4096 * i),
                len: Bytes(4096),
                line: i + 1,
            })
            .unwrap();
        }
        let lines: Vec<u64> = std::iter::from_fn(|| r.next_record().unwrap())
            .map(|t| t.line)
            .collect();
        assert_eq!(lines, [1, 2, 3]);
    }

    #[test]
    fn a_recording_reads_back_as_the_requests_pushed() {
        use crate::trace::RawTraceReader;
        let dir = std::env::temp_dir().join(format!("stlsim-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("served.stlt");
        let path = path.to_str().unwrap();
        let q = LiveQueue::default();
        q.record_to(path, "{\"source\":\"test\"}").unwrap();
        let recs: Vec<TraceRecord> = (0..5u64)
            .map(|i| TraceRecord {
                time: Nanos(1000 * i),
                op: if i % 2 == 0 { Op::Write } else { Op::Read },
                offset: Bytes(8192 * i),
                len: Bytes(4096),
                line: i + 1,
            })
            .collect();
        for r in &recs {
            q.push(*r).unwrap();
        }
        assert_eq!(q.finish_record().unwrap(), Some(5));
        assert_eq!(q.finish_record().unwrap(), None);
        let mut r = crate::trace::binary::BinaryReader::new(
            Box::new(std::fs::File::open(path).unwrap()),
            path,
        )
        .unwrap();
        let mut back = vec![];
        while let Some(x) = r.next_raw().unwrap() {
            back.push(x.0);
        }
        assert_eq!(back, recs);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
