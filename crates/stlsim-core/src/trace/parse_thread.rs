//! Parsing on a second thread: a [`TraceReader`] that runs another one on
//! its own thread and hands its records over in batches, so that a run on a
//! two-core machine parses the next requests while the engine simulates the
//! last ones.
//!
//! The records, their measured response times, the skipped-record counts
//! and the errors come out exactly as the inner reader gives them, in the
//! same order: an error is returned after every record before it, never
//! earlier. The thread reads at most a few batches ahead (a bounded
//! channel), so a run that stops early (a request limit, an error in the
//! simulation) leaves it little work; dropping the reader stops it. Batches
//! go back to the thread once emptied, so steady state allocates nothing.
//! Only [`TraceReader::progress`] is coarser: it moves a batch at a time.

use crate::error::{SimError, SimResult};
use crate::trace::{TraceReader, TraceRecord};
use crate::units::Nanos;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Records per batch: large enough that the hand-over (a channel message
/// each way) costs little per record, small enough to stay in cache.
const BATCH: usize = 4096;

/// Batches in flight between the threads.
const AHEAD: usize = 2;

/// One record as the inner reader gave it, with what the reader said about
/// it then.
#[derive(Clone, Copy)]
struct Item {
    rec: TraceRecord,
    measured: Option<Nanos>,
    /// The inner reader's [`TraceReader::skipped_unknown`] after this record.
    skipped: u64,
}

/// Records handed over at once, and how the inner reader stood after them.
struct Batch {
    items: Vec<Item>,
    progress: f64,
    skipped: u64,
    /// `Some` when the inner reader ended (`Ok`) or failed after these items.
    end: Option<SimResult<()>>,
}

/// A reader whose inner reader parses on its own thread.
pub struct ParseThread {
    batches: Receiver<Batch>,
    empties: SyncSender<Vec<Item>>,
    thread: Option<JoinHandle<()>>,
    current: Vec<Item>,
    next: usize,
    /// What the batch being read said once its items are through.
    end: Option<SimResult<()>>,
    finished: bool,
    progress: f64,
    skipped: u64,
    /// The skip count the batch being read ended on (skips after its last record included).
    batch_skipped: u64,
    measured: Option<Nanos>,
    /// A fresh reader of the same source, kept for [`TraceReader::reopen`]
    /// (the inner reader itself lives on the thread).
    again: Option<Box<dyn TraceReader>>,
}

impl ParseThread {
    /// Run `inner` on a new thread.
    pub fn new(inner: Box<dyn TraceReader>) -> SimResult<ParseThread> {
        let again = match inner.reopen() {
            Some(r) => Some(r?),
            None => None,
        };
        let (batch_tx, batches) = sync_channel::<Batch>(AHEAD);
        let (empties, empty_rx) = sync_channel::<Vec<Item>>(AHEAD + 2);
        let thread = std::thread::Builder::new()
            .name("stlsim-parse".into())
            .spawn(move || parse(inner, batch_tx, empty_rx))
            .map_err(|e| SimError::Io(format!("cannot start the trace-parsing thread: {e}")))?;
        Ok(ParseThread {
            batches,
            empties,
            thread: Some(thread),
            current: Vec::new(),
            next: 0,
            end: None,
            finished: false,
            progress: 0.0,
            skipped: 0,
            batch_skipped: 0,
            measured: None,
            again,
        })
    }
}

/// The thread's work: fill batches until the inner reader ends or fails, or
/// the reading side is gone.
fn parse(
    mut inner: Box<dyn TraceReader>,
    batches: SyncSender<Batch>,
    empties: Receiver<Vec<Item>>,
) {
    loop {
        let mut items = empties
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
        items.clear();
        let mut end = None;
        while items.len() < BATCH {
            match inner.next_record() {
                Ok(Some(rec)) => items.push(Item {
                    rec,
                    measured: inner.measured(),
                    skipped: inner.skipped_unknown(),
                }),
                Ok(None) => {
                    end = Some(Ok(()));
                    break;
                }
                Err(e) => {
                    end = Some(Err(e));
                    break;
                }
            }
        }
        let done = end.is_some();
        let batch = Batch {
            items,
            progress: inner.progress(),
            skipped: inner.skipped_unknown(),
            end,
        };
        if batches.send(batch).is_err() || done {
            return; // the reader was dropped, or the input is through
        }
    }
}

impl ParseThread {
    /// [`TraceReader::next_into`] past the end of the batch in hand.
    #[cold]
    fn next_into_slow(&mut self, rec: &mut TraceRecord) -> SimResult<bool> {
        Ok(match self.next_record()? {
            Some(r) => {
                *rec = r;
                true
            }
            None => false,
        })
    }
}

impl TraceReader for ParseThread {
    #[inline]
    fn next_into(&mut self, rec: &mut TraceRecord) -> SimResult<bool> {
        if let Some(item) = self.current.get(self.next) {
            self.next += 1;
            self.measured = item.measured;
            self.skipped = item.skipped;
            *rec = item.rec;
            return Ok(true);
        }
        self.next_into_slow(rec)
    }

    fn next_record(&mut self) -> SimResult<Option<TraceRecord>> {
        loop {
            if let Some(item) = self.current.get(self.next) {
                self.next += 1;
                self.measured = item.measured;
                self.skipped = item.skipped;
                return Ok(Some(item.rec));
            }
            if self.finished {
                return Ok(None);
            }
            if let Some(end) = self.end.take() {
                self.finished = true;
                self.skipped = self.batch_skipped;
                end?;
                return Ok(None);
            }
            // The batch is through: hand it back, take the next.
            let Ok(batch) = self.batches.recv() else {
                // The thread ended without saying why: it panicked.
                self.finished = true;
                return Err(SimError::Io(
                    "the trace-parsing thread stopped unexpectedly".into(),
                ));
            };
            let spent = std::mem::replace(&mut self.current, batch.items);
            let _ = self.empties.try_send(spent);
            self.next = 0;
            self.progress = batch.progress;
            self.batch_skipped = batch.skipped;
            self.end = batch.end;
        }
    }

    fn progress(&self) -> f64 {
        self.progress
    }

    fn reopen(&self) -> Option<SimResult<Box<dyn TraceReader>>> {
        self.again.as_ref().and_then(|r| r.reopen())
    }

    fn skipped_unknown(&self) -> u64 {
        self.skipped
    }

    fn measured(&self) -> Option<Nanos> {
        self.measured
    }
}

impl Drop for ParseThread {
    fn drop(&mut self) {
        // Closing the channel stops the thread at its next hand-over.
        let (_, closed) = sync_channel(0);
        drop(std::mem::replace(&mut self.batches, closed));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::open_trace;
    use crate::trace::test_util::*;

    /// Everything a reader gives: records with their measured times and
    /// skip counts, then how it ended.
    fn all(mut r: Box<dyn TraceReader>) -> (Vec<(TraceRecord, Option<Nanos>, u64)>, String) {
        let mut v = Vec::new();
        loop {
            match r.next_record() {
                Ok(Some(rec)) => v.push((rec, r.measured(), r.skipped_unknown())),
                Ok(None) => return (v, "end".into()),
                Err(e) => return (v, e.to_string()),
            }
        }
    }

    #[test]
    fn gives_what_the_reader_gives_in_order_with_its_errors_last() {
        let mut bad = std::fs::read_to_string(data("rsrch_1.csv")).unwrap();
        // A record the MSR reader skips with skip_unknown, then (far past a
        // batch) a malformed line that ends the run with an error.
        bad = bad.replacen(",Read,", ",Trim,", 1);
        let at = bad.match_indices('\n').nth(9_000).unwrap().0;
        bad.insert_str(at + 1, "junk\n");
        let p = write_temp("parse-thread", "bad.csv", bad.as_bytes());
        for skip in [false, true] {
            let mut s = spec(&p);
            s.skip_unknown = skip;
            let plain = all(open_trace(&s).unwrap());
            let threaded = all(Box::new(ParseThread::new(open_trace(&s).unwrap()).unwrap()));
            assert_eq!(plain, threaded);
            assert!(plain.1.contains("bad.csv:"), "{}", plain.1);
        }
        // The real file whole, measured response times included.
        let s = spec(&data("rsrch_1.csv"));
        let plain = all(open_trace(&s).unwrap());
        let r = ParseThread::new(open_trace(&s).unwrap()).unwrap();
        let again = r.reopen().unwrap().unwrap();
        assert_eq!(plain, all(Box::new(r)));
        assert_eq!(plain, all(again));
        assert_eq!(plain.0.len(), 13_780);
    }

    #[test]
    fn a_reader_dropped_early_stops_its_thread() {
        let s = spec(&data("rsrch_1.csv"));
        let mut r = ParseThread::new(open_trace(&s).unwrap()).unwrap();
        assert!(r.next_record().unwrap().is_some());
        drop(r); // joins the thread: the test would hang if it did not stop
    }
}
