//! stlsim-core: a fast, trace-driven simulator of the translation layers of
//! shingled (SMR) and interlaced (IMR) magnetic-recording drives.
//!
//! The pieces, bottom up: [`units`] (newtypes), [`geometry`] (tracks, zones,
//! layouts, home maps), [`medium`] (contents and overlap physics),
//! [`mechanics`] (seek, rotation, transfer), [`device`] (all of them plus
//! counters by cause), [`layers`] (the translation layers and their
//! registry), [`trace`] (readers), [`engine`] (replay, write cache,
//! verification, crashes) and [`metrics`] (histograms, series, report).
#![warn(missing_docs)]

pub mod analysis;
pub mod cause;
pub mod controller;
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
