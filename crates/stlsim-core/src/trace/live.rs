//! Requests handed over one at a time by a live client rather than read
//! from a file: the NBD server of `stlsim serve` (issue 37) pushes each
//! request it receives and steps the simulation once. The reader has no
//! end of its own: it is empty between requests, and the engine sees the
//! end of the trace when it is stepped with nothing pushed, which is how
//! a server ends its run. It cannot be read twice, so a layer sized from
//! the trace's address range, or a footprint prefill, is refused with the
//! engine's usual message.

use super::{TraceReader, TraceRecord};
use crate::error::SimResult;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The pushing end, kept by the server.
#[derive(Clone, Default)]
pub struct LiveQueue(Arc<Mutex<VecDeque<TraceRecord>>>);

impl LiveQueue {
    /// Queue one request for the next step.
    pub fn push(&self, rec: TraceRecord) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(rec);
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
            });
        }
        let lines: Vec<u64> = std::iter::from_fn(|| r.next_record().unwrap())
            .map(|t| t.line)
            .collect();
        assert_eq!(lines, [1, 2, 3]);
    }
}
