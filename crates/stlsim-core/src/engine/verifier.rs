//! Verification beside the simulation: the engine tells the [`Oracle`] what
//! the host wrote, what became durable and what each read returned, and
//! once a run has written [`THREAD_AFTER`] times the oracle does its
//! bookkeeping and its checks on a thread of its own, fed in batches.
//!
//! Nothing the engine simulates waits for an answer from the oracle: a
//! write's tokens carry the write's serial number as their version (handed
//! out here, so making them reads nothing), and a check only ever stops
//! the run. So the oracle can lag behind by a batch or two, and on a
//! two-core machine a verified run costs the engine's thread little more
//! than handing over what it did (a quarter of its time, measured on the
//! 10 M-request benchmark, was the oracle's own).
//!
//! What the lag changes, and what it does not:
//!
//! * The oracle sees every event in the engine's order, so it finds the
//!   same first lost block, with the same versions and the same `during`,
//!   as it would inline.
//! * It is found later: at the next read checked once the thread has
//!   reported it, at the end of the [`Simulation::step`](super::Simulation::step)
//!   call, or before any other error the engine returns (a lost block is
//!   reported first, as inline). The device names the destroying operation
//!   from its log of recent operations, which by then may have moved on (the
//!   message then gives the operation's number alone).
//! * Everything that needs the oracle's answer at once (a crash's
//!   uncertainty, the scan after it, the footprint a final scan reads, the
//!   memory figure) first takes the oracle back from its thread
//!   ([`Verifier::sync`]); checking moves back to the thread afterwards.
//!
//! Runs shorter than [`THREAD_AFTER`] writes never start the thread, so
//! short runs (most tests, a quick look at a trace) check every read as
//! it happens.

use super::oracle::{Mismatch, Oracle};
use crate::error::{SimError, SimResult};
use crate::medium::Token;
use crate::units::Lba;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Host writes after which the oracle moves to its own thread: a run this
/// short takes a few milliseconds verified, and checking inline reports a
/// lost block at the read that found it.
pub const THREAD_AFTER: u64 = 20_000;

/// Events per hand-over: a channel message each way per batch costs a few
/// microseconds, a few nanoseconds an event; a batch's tokens stay in cache.
const BATCH: usize = 2048;

/// Tokens per hand-over (1 MiB): a scan's reads are a track each, and
/// batches of them must not hold the footprint's tokens many times over.
const BATCH_TOKENS: usize = 1 << 16;

/// Batches in flight to the thread before the engine waits for it.
const AHEAD: usize = 4;

/// What happened, in the engine's order.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// A host write of `n` sectors from `lba`, all at version `ver`, was
    /// acknowledged; `durable`: on the medium.
    Acknowledged {
        lba: u64,
        n: u64,
        ver: u32,
        durable: bool,
    },
    /// The write cache destaged `[lba, lba + n)` ([`Oracle::destaged`]).
    Destaged { lba: u64, n: u64 },
    /// The next `n` tokens of the batch reached the medium ([`Oracle::made_durable`]).
    MadeDurable { n: usize },
    /// A read of `lba` returned the next `n` tokens of the batch.
    Read {
        lba: u64,
        n: usize,
        during: &'static str,
    },
}

/// Events handed over at once, with the tokens they carry.
#[derive(Default)]
struct Batch {
    events: Vec<Event>,
    tokens: Vec<Token>,
}

/// The oracle on its own thread.
struct Worker {
    batches: SyncSender<Batch>,
    empties: Receiver<Batch>,
    /// Set by the thread when a check failed (it then ignores what follows).
    failed: Arc<AtomicBool>,
    thread: JoinHandle<(Oracle, Result<(), Mismatch>)>,
}

/// The oracle, here or on its thread, and what the engine reports of it.
pub struct Verifier {
    /// Here while checking inline (and after [`sync`](Self::sync)).
    oracle: Option<Oracle>,
    worker: Option<Worker>,
    /// Events not yet handed over (used only while the worker runs).
    batch: Batch,
    /// The check that failed on the thread, kept once collected so that
    /// every later [`sync`](Self::sync) reports it too.
    failure: Option<Mismatch>,
    /// The last host write's serial number: its tokens' version.
    serial: u32,
    /// Host writes so far.
    writes: u64,
    /// Where the last host write ended (a write starting there continues its stream).
    stream_end: u64,
    /// Writes after which checking moves to a thread (`u64::MAX`: never).
    thread_after: u64,
    /// Host-read sectors checked (handed over, when threaded).
    pub read_blocks_checked: u64,
    /// Sectors checked by scans (end of run, after crashes).
    pub scan_blocks_checked: u64,
}

impl Verifier {
    /// A verifier over `oracle`, checking inline until [`THREAD_AFTER`] writes.
    pub fn new(oracle: Oracle) -> Verifier {
        Verifier {
            oracle: Some(oracle),
            worker: None,
            batch: Batch::default(),
            failure: None,
            serial: 0,
            stream_end: 0,
            writes: 0,
            thread_after: THREAD_AFTER,
            read_blocks_checked: 0,
            scan_blocks_checked: 0,
        }
    }

    /// Move checking to a thread after `writes` host writes (0: at the
    /// first; `u64::MAX`: never).
    pub fn set_thread_after(&mut self, writes: u64) {
        self.thread_after = writes;
    }

    /// Whether the oracle is on its own thread now.
    pub fn threaded(&self) -> bool {
        self.worker.is_some()
    }

    /// The tokens of a new host write of `n` sectors from `lba`, into `out`
    /// (emptied first): the next serial number is their version, or the
    /// last write's when this one starts where it ended.
    ///
    /// A sequential stream thus writes one version, and the oracle's rows
    /// and the medium's keep it as one run however small its writes (a run
    /// per write cost 16 bytes a sector for a stream of one-sector writes).
    /// An LBA still never sees one version twice: a stream's LBAs only
    /// climb, and any other write takes a new number.
    pub fn new_write_into(&mut self, lba: u64, n: u64, out: &mut Vec<Token>) -> SimResult<()> {
        self.writes += 1;
        if self.worker.is_none() && self.wants_thread() {
            self.start()?;
        }
        let continues = self.serial > 0 && lba == self.stream_end;
        self.stream_end = lba + n;
        if !continues {
            self.serial = self.serial.checked_add(1).ok_or_else(|| {
                SimError::Config(format!(
                    "verification numbers host writes in 32 bits: this run has more than {} writes; \
                     run it without --verify, or split the trace",
                    u32::MAX
                ))
            })?;
        }
        write_tokens(out, lba, n, self.serial);
        Ok(())
    }

    /// A write was acknowledged: `data` is what
    /// [`new_write_into`](Self::new_write_into) made for it; `durable`: it
    /// reached the medium.
    pub fn acknowledge(&mut self, data: &[Token], durable: bool) {
        let Some(first) = data.first() else {
            return;
        };
        debug_assert!(data
            .iter()
            .zip(first.lba..)
            .all(|(t, l)| t.lba == l && t.ver == first.ver));
        match &mut self.oracle {
            Some(o) => o.acknowledge(data, durable),
            None => self.push(Event::Acknowledged {
                lba: first.lba,
                n: data.len() as u64,
                ver: first.ver,
                durable,
            }),
        }
    }

    /// The write cache destaged `[lba, lba + n)`, its newest versions.
    pub fn destaged(&mut self, lba: u64, n: u64) {
        match &mut self.oracle {
            Some(o) => o.destaged(lba, n),
            None => self.push(Event::Destaged { lba, n }),
        }
    }

    /// Cached data reached the medium (a layer with volatile acknowledgements).
    pub fn made_durable(&mut self, data: &[Token]) {
        match &mut self.oracle {
            Some(o) => o.made_durable(data),
            None if data.is_empty() => {}
            None => {
                self.batch.tokens.extend_from_slice(data);
                self.push(Event::MadeDurable { n: data.len() });
            }
        }
    }

    /// Check what a host read or the final scan returned for `[lba, lba +
    /// got.len())` against the newest versions acknowledged; threaded, an
    /// earlier check's failure the thread has reported.
    pub fn check(&mut self, lba: u64, got: &[Token], during: &'static str) -> Result<(), Mismatch> {
        match &mut self.oracle {
            Some(o) => o.check(lba, got, during, false),
            None => {
                if self.failed() {
                    self.sync()?;
                    return self.check(lba, got, during);
                }
                self.batch.tokens.extend_from_slice(got);
                self.push(Event::Read {
                    lba,
                    n: got.len(),
                    during,
                });
                Ok(())
            }
        }
    }

    /// Whether the thread has reported a failed check not yet collected.
    pub fn failed(&self) -> bool {
        self.worker
            .as_ref()
            .is_some_and(|w| w.failed.load(Ordering::Relaxed))
    }

    /// The oracle, brought back from its thread first (the first failed
    /// check, if there was one, is returned instead).
    pub fn oracle(&mut self) -> Result<&mut Oracle, Mismatch> {
        self.sync()?;
        Ok(self.oracle.as_mut().expect("synced"))
    }

    /// The oracle, when it is here (inline, or synced).
    pub fn oracle_here(&self) -> Option<&Oracle> {
        self.oracle.as_ref()
    }

    /// The oracle, when it is here, to change.
    pub fn oracle_here_mut(&mut self) -> Option<&mut Oracle> {
        self.oracle.as_mut()
    }

    /// Bring the oracle back from its thread, once it has seen every event
    /// handed to it; the first check that failed there, if any.
    pub fn sync(&mut self) -> Result<(), Mismatch> {
        let Some(w) = self.worker.take() else {
            return match &self.failure {
                Some(m) => Err(m.clone()),
                None => Ok(()),
            };
        };
        let batch = std::mem::take(&mut self.batch);
        // The thread stops at a closed channel once it has everything.
        let _ = w.batches.send(batch);
        drop(w.batches);
        let (oracle, r) = match w.thread.join() {
            Ok(x) => x,
            Err(p) => std::panic::resume_unwind(p),
        };
        self.oracle = Some(oracle);
        self.batch = w.empties.try_recv().unwrap_or_default();
        self.batch.events.clear();
        self.batch.tokens.clear();
        if let Err(m) = &r {
            self.failure = Some(m.clone());
        }
        r
    }

    /// Whether a run that has written this much checks on a thread.
    pub fn wants_thread(&self) -> bool {
        self.writes > self.thread_after
    }

    /// Move the oracle to its own thread (if it is not there already), to
    /// check the reads of a scan or of the writes to come.
    pub fn start(&mut self) -> SimResult<()> {
        let Some(oracle) = self.oracle.take() else {
            return Ok(());
        };
        let (batches, batch_rx) = sync_channel::<Batch>(AHEAD);
        let (empty_tx, empties) = sync_channel::<Batch>(AHEAD + 2);
        let failed = Arc::new(AtomicBool::new(false));
        let flag = failed.clone();
        let thread = std::thread::Builder::new()
            .name("stlsim-verify".into())
            .spawn(move || work(oracle, batch_rx, empty_tx, flag))
            .map_err(|e| SimError::Io(format!("cannot start the verification thread: {e}")))?;
        self.worker = Some(Worker {
            batches,
            empties,
            failed,
            thread,
        });
        Ok(())
    }

    fn push(&mut self, e: Event) {
        self.batch.events.push(e);
        if self.batch.events.len() >= BATCH || self.batch.tokens.len() >= BATCH_TOKENS {
            self.hand_over();
        }
    }

    /// Send the batch to the thread, taking an emptied one back if there is one.
    fn hand_over(&mut self) {
        let Some(w) = &self.worker else {
            return;
        };
        let mut next = w.empties.try_recv().unwrap_or_else(|_| Batch {
            events: Vec::with_capacity(BATCH),
            tokens: Vec::new(),
        });
        next.events.clear();
        next.tokens.clear();
        let full = std::mem::replace(&mut self.batch, next);
        // A thread that stopped has failed (it keeps the receiver until the
        // sync); its result is collected there.
        let _ = w.batches.send(full);
    }
}

/// Fill `out` with the tokens of a write of `n` sectors from `lba` at version `ver`.
fn write_tokens(out: &mut Vec<Token>, lba: u64, n: u64, ver: u32) {
    out.clear();
    out.extend((lba..lba + n).map(|l| Token::data(Lba(l), ver)));
}

/// The thread's work: apply every batch's events in order until the engine
/// closes the channel; after a failed check, only drain.
fn work(
    mut oracle: Oracle,
    batches: Receiver<Batch>,
    empties: SyncSender<Batch>,
    failed: Arc<AtomicBool>,
) -> (Oracle, Result<(), Mismatch>) {
    let mut result = Ok(());
    let mut data: Vec<Token> = Vec::new();
    while let Ok(batch) = batches.recv() {
        if result.is_ok() {
            result = apply(&mut oracle, &batch, &mut data);
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
        }
        let _ = empties.try_send(batch);
    }
    (oracle, result)
}

/// One batch's events, in order; the first failed check stops it.
fn apply(oracle: &mut Oracle, batch: &Batch, data: &mut Vec<Token>) -> Result<(), Mismatch> {
    let mut at = 0;
    for e in &batch.events {
        match *e {
            Event::Acknowledged {
                lba,
                n,
                ver,
                durable,
            } => {
                write_tokens(data, lba, n, ver);
                oracle.acknowledge(data, durable);
            }
            Event::Destaged { lba, n } => oracle.destaged(lba, n),
            Event::MadeDurable { n } => {
                oracle.made_durable(&batch.tokens[at..at + n]);
                at += n;
            }
            Event::Read { lba, n, during } => {
                oracle.check(lba, &batch.tokens[at..at + n], during, false)?;
                at += n;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn verifier() -> Verifier {
        let mut v = Verifier::new(Oracle::new(None));
        v.set_thread_after(u64::MAX);
        v
    }

    #[test]
    fn a_sequential_stream_shares_one_version_and_anything_else_takes_a_new_one() {
        let mut v = verifier();
        let mut out = vec![];
        let mut ver = |v: &mut Verifier, lba, n| {
            v.new_write_into(lba, n, &mut out).unwrap();
            assert!(out
                .iter()
                .zip(lba..)
                .all(|(t, l)| t.lba == l && t.ver == out[0].ver));
            out[0].ver
        };
        assert_eq!(ver(&mut v, 100, 1), 1);
        assert_eq!(ver(&mut v, 101, 1), 1);
        assert_eq!(ver(&mut v, 102, 8), 1);
        assert_eq!(ver(&mut v, 100, 1), 2, "a rewrite");
        assert_eq!(ver(&mut v, 500, 4), 3, "a jump");
        assert_eq!(ver(&mut v, 504, 4), 3);
        assert_eq!(ver(&mut v, 507, 4), 4, "an overlap");
    }

    proptest! {
        /// Every LBA's versions only grow, write after write (so no two
        /// writes to it share one), streams included.
        #[test]
        fn an_lba_never_sees_a_version_twice(
            writes in proptest::collection::vec((0u64..64, 1u64..9, any::<bool>()), 1..200),
        ) {
            let mut v = verifier();
            let mut last: HashMap<u64, u32> = HashMap::new();
            let mut end = 0;
            let mut out = vec![];
            for (lba, n, follow) in writes {
                // Half the writes continue the last one's stream.
                let lba = if follow { end } else { lba };
                end = lba + n;
                v.new_write_into(lba, n, &mut out).unwrap();
                for t in &out {
                    let before = last.insert(t.lba, t.ver).unwrap_or(0);
                    prop_assert!(t.ver > before, "LBA {} at version {} after {}", t.lba, t.ver, before);
                }
            }
        }
    }
}
