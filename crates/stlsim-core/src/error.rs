//! The one error type of the core. Every failure a user can cause (bad
//! configuration, bad trace, lost data) is a variant with enough context to
//! print a single line naming what and where; the binding maps each variant
//! onto a typed Python exception.

use std::fmt;

/// Where in an input file a problem was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file's path as given by the user.
    pub file: String,
    /// 1-based line number (for binary formats: 1-based record number).
    pub line: u64,
}

/// A verified block that did not hold what the host last wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataLoss {
    /// The logical block that was wrong.
    pub lba: u64,
    /// The version the host last wrote and had acknowledged (0: never written).
    pub expected: u32,
    /// What the layer returned: a version, or a description (empty, destroyed, another LBA).
    pub found: String,
    /// When the mismatch was seen (host read, final scan, post-crash scan).
    pub during: String,
    /// The physical operation that destroyed the block, when the medium knows it.
    pub destroyed_by: Option<String>,
}

/// Everything that can stop a simulation.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// An invalid configuration: unknown layer or parameter, impossible geometry, bad value.
    Config(String),
    /// A malformed trace record.
    TraceFormat {
        /// The file and line (or record number) of the bad record.
        at: Location,
        /// What was wrong with it, for the message after `file:line:`.
        msg: String,
    },
    /// An I/O failure reading an input file.
    Io(String),
    /// The verifier found a block that does not hold its newest acknowledged write.
    DataLoss(Box<DataLoss>),
    /// A write the medium refused (e.g. not at a sequential zone's write pointer).
    Medium(String),
    /// A translation layer broke its contract with the engine (a read that
    /// returned the wrong number of sectors, background work said overdue
    /// with no stage to run, a cache log full because a write was not made
    /// to wait): a bug in the layer, not in the run's input.
    Layer(String),
    /// Simulated power loss, raised by the device at an injected crash point.
    /// The engine catches it; a layer only propagates it with `?`.
    Crash,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Config(m) => write!(f, "configuration error: {m}"),
            SimError::TraceFormat { at, msg } => write!(f, "{}:{}: {msg}", at.file, at.line),
            SimError::Io(m) => write!(f, "{m}"),
            SimError::DataLoss(d) => {
                write!(
                    f,
                    "data loss at LBA {} during {}: expected version {}, found {}",
                    d.lba, d.during, d.expected, d.found
                )?;
                if let Some(op) = &d.destroyed_by {
                    write!(f, "; destroyed by {op}")?;
                }
                Ok(())
            }
            SimError::Medium(m) => write!(f, "medium error: {m}"),
            SimError::Layer(m) => write!(f, "layer error (a bug in the layer): {m}"),
            SimError::Crash => write!(f, "simulated power loss"),
        }
    }
}

impl std::error::Error for SimError {}

/// Shorthand for results in the core.
pub type SimResult<T> = Result<T, SimError>;

/// Build a configuration error from anything printable.
pub fn config_err<T>(msg: impl Into<String>) -> SimResult<T> {
    Err(SimError::Config(msg.into()))
}
