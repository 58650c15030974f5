//! Which records of a trace file a run replays: the [`TraceSpec`] options
//! every format shares, applied in one order by the replaying reader,
//! `stlsim convert` and `stlsim trace-info` alike.
//!
//! The order is: the device (`disk`; without it a second device is an error
//! unless `all_devices`), the time window (`time_from_s`, `time_to_s`), the
//! operation filter (`only`), then the request window (`start` skips that
//! many of what is left, `limit` keeps at most that many).
//!
//! Choices where users could differ, written down:
//! * The time window is measured from the first record of the chosen device
//!   (trace clocks are absolute, e.g. MSR counts from 1601), before `only`,
//!   so `--time-from 600 --only write` is "the writes after ten minutes".
//! * A record at exactly `time_to_s` is outside (half-open window).
//! * Real traces are not strictly in time order (blkparse merges per-CPU
//!   buffers; MSR volumes drift by microseconds), so reading stops only at a
//!   record [`REORDER_SLACK`] past the window's end; a record that far out
//!   of order after the window is dropped, which is documented.

use crate::error::{Location, SimError, SimResult};
use crate::trace::{Op, TraceRecord, TraceSpec};
use crate::units::Nanos;

/// How far past the window's end a record must be before reading stops:
/// records out of order by less than this are still found.
pub const REORDER_SLACK: Nanos = Nanos(1_000_000_000);

/// What to do with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Select it: the reader hands it on to the replay.
    Keep,
    /// Leave it out and read on.
    Skip,
    /// Leave it out and stop reading: nothing later can be selected.
    Stop,
}

/// The selection state of one pass over a trace.
#[derive(Clone, Debug)]
pub struct Selection {
    file: String,
    disk: Option<u64>,
    /// Without `disk`: refuse a second device rather than merge it.
    one_device: bool,
    first_device: Option<u64>,
    from: Option<Nanos>,
    to: Option<Nanos>,
    /// The time of the first record of the chosen device.
    origin: Option<Nanos>,
    only: Option<Op>,
    to_skip: u64,
    limit: Option<u64>,
    emitted: u64,
}

/// Seconds as nanoseconds, or the option's one-line error.
fn seconds(key: &str, v: Option<f64>) -> SimResult<Option<Nanos>> {
    match v {
        None => Ok(None),
        Some(s) if (0.0..=1e9).contains(&s) => Ok(Some(Nanos((s * 1e9).round() as u64))),
        Some(s) => Err(SimError::Config(format!(
            "trace option '{key}' is {s}: expected seconds from the trace's first request, 0 to 1e9"
        ))),
    }
}

impl Selection {
    /// The selection `spec` asks for; errors for an impossible window.
    pub fn new(spec: &TraceSpec) -> SimResult<Selection> {
        let from = seconds("time_from_s", spec.time_from_s)?;
        let to = seconds("time_to_s", spec.time_to_s)?;
        if let (Some(f), Some(t)) = (from, to) {
            if t <= f {
                return Err(SimError::Config(format!(
                    "the time window is empty: time_to_s ({}) must be after time_from_s ({})",
                    spec.time_to_s.unwrap_or(0.0),
                    spec.time_from_s.unwrap_or(0.0)
                )));
            }
        }
        Ok(Selection {
            file: spec.path.clone(),
            disk: spec.disk,
            one_device: !spec.all_devices,
            first_device: None,
            from,
            to,
            origin: None,
            only: spec.only,
            to_skip: spec.start,
            limit: spec.limit,
            emitted: 0,
        })
    }

    /// Whether the request window is full (nothing more will be kept).
    #[inline]
    pub fn full(&self) -> bool {
        self.limit.is_some_and(|l| self.emitted >= l)
    }

    /// Records kept so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    /// The limit on kept records, if any.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// The verdict on `rec` of device `disk`, counting it as kept when kept.
    #[inline(always)]
    pub fn judge(&mut self, rec: &TraceRecord, disk: Option<u64>) -> SimResult<Verdict> {
        if self.full() {
            return Ok(Verdict::Stop);
        }
        if let (None, true, Some(d)) = (self.disk, self.one_device, disk) {
            match self.first_device {
                None => self.first_device = Some(d),
                Some(first) if first != d => {
                    return Err(SimError::TraceFormat {
                        at: Location { file: self.file.clone(), line: rec.line },
                        msg: format!(
                            "the trace holds more than one device ({first} and {d} so far): choose one with --device N (disk=N), or merge them with --device all (disk=\"all\"); `stlsim trace-info` lists them"
                        ),
                    });
                }
                Some(_) => {}
            }
        }
        if self.disk.is_some() && disk != self.disk {
            return Ok(Verdict::Skip);
        }
        if self.from.is_some() || self.to.is_some() {
            let origin = *self.origin.get_or_insert(rec.time);
            // A record earlier than the first counts as time 0.
            let at = rec.time.0.saturating_sub(origin.0);
            if let Some(to) = self.to {
                if at >= to.0 {
                    return Ok(if at >= to.0.saturating_add(REORDER_SLACK.0) {
                        Verdict::Stop
                    } else {
                        Verdict::Skip
                    });
                }
            }
            if self.from.is_some_and(|f| at < f.0) {
                return Ok(Verdict::Skip);
            }
        }
        if self.only.is_some_and(|op| op != rec.op) {
            return Ok(Verdict::Skip);
        }
        if self.to_skip > 0 {
            self.to_skip -= 1;
            return Ok(Verdict::Skip);
        }
        self.emitted += 1;
        Ok(Verdict::Keep)
    }

    /// The options of `spec` this selection takes that a synthetic trace
    /// cannot (it has one device and its own operation mix and times).
    pub fn synthetic_conflict(spec: &TraceSpec) -> Option<&'static str> {
        if spec.disk.is_some() {
            Some("disk")
        } else if spec.only.is_some() {
            Some("only")
        } else if spec.time_from_s.is_some() {
            Some("time_from_s")
        } else if spec.time_to_s.is_some() {
            Some("time_to_s")
        } else {
            None
        }
    }
}
