//! stlsim-core: a fast, trace-driven simulator of the translation layers of
//! shingled (SMR) and interlaced (IMR) magnetic-recording drives.
//!
//! The pieces, bottom up (each names only those before it; docs/architecture.md
//! gives the levels, `scripts/module_graph.py` checks them): [`units`],
//! [`error`], [`choice`]; [`geometry`] (tracks, zones, layouts, home maps), [`cause`],
//! [`metrics`] (histograms, series), [`trace`] (readers); [`mechanics`]
//! (seek, rotation), [`medium`] (contents and overlap physics);
//! [`front_end`] (the controller, the caches, the queue, the link),
//! [`side_device`]; [`device`] (all of them
//! on one clock, counters by cause) and [`drive`] (the drive description
//! above the parts it configures); [`layers`] (the translation layers and
//! their registry); [`engine`] (replay, write cache, verification, crashes,
//! the report); [`analysis`] (what a trace does to a drive, micro-benchmarks).
#![warn(missing_docs)]
// `!(x >= lo)` rejects NaN along with values below `lo`, which `x < lo` would let through.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod analysis;
pub mod cause;
pub mod choice;
pub mod device;
pub mod drive;
pub mod engine;
pub mod error;
pub mod front_end;
pub mod geometry;
pub mod layers;
pub mod mechanics;
pub mod medium;
pub mod metrics;
pub mod side_device;
pub mod spelling;
pub mod trace;
pub mod track_bits;
pub mod units;
pub(crate) mod xorshift;

pub use engine::{RunConfig, Simulation, VerifyMemory};
pub use error::{SimError, SimResult};
