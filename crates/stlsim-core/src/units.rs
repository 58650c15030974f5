//! Unit newtypes. Time, sectors, tracks and block addresses are distinct
//! types so that a count of sectors can never be passed where a time or an
//! address is expected. Each wraps a `u64` and converts explicitly.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Simulated time or a duration, in nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero time.
    pub const ZERO: Nanos = Nanos(0);
    /// A duration from (possibly fractional) milliseconds, rounded to the nearest nanosecond.
    pub fn from_ms(ms: f64) -> Nanos {
        Nanos((ms * 1e6).round().max(0.0) as u64)
    }
    /// A duration from (possibly fractional) microseconds.
    pub fn from_us(us: f64) -> Nanos {
        Nanos((us * 1e3).round().max(0.0) as u64)
    }
    /// A duration from seconds.
    pub fn from_secs(s: f64) -> Nanos {
        Nanos((s * 1e9).round().max(0.0) as u64)
    }
    /// This duration in milliseconds.
    pub fn as_ms(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// This duration in seconds.
    pub fn as_secs(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// `self - other`, or zero when `other` is later.
    pub fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, o: Nanos) -> Nanos {
        Nanos(self.0 + o.0)
    }
}
impl AddAssign for Nanos {
    fn add_assign(&mut self, o: Nanos) {
        self.0 += o.0;
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, o: Nanos) -> Nanos {
        Nanos(self.0 - o.0)
    }
}
impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ms", self.as_ms())
    }
}

/// A host logical block address, in units of the drive's sector size.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Lba(pub u64);

impl Lba {
    /// The address `n` sectors further on.
    pub fn offset(self, n: Sectors) -> Lba {
        Lba(self.0 + n.0)
    }
}
impl fmt::Display for Lba {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LBA {}", self.0)
    }
}

/// A count of sectors (of the drive's sector size).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Sectors(pub u64);

impl Add for Sectors {
    type Output = Sectors;
    fn add(self, o: Sectors) -> Sectors {
        Sectors(self.0 + o.0)
    }
}
impl AddAssign for Sectors {
    fn add_assign(&mut self, o: Sectors) {
        self.0 += o.0;
    }
}

/// A physical track index, counted from the outer diameter (track 0).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Track(pub u64);

impl Track {
    /// Absolute distance to another track, in tracks.
    pub fn distance(self, o: Track) -> u64 {
        self.0.abs_diff(o.0)
    }
}
impl fmt::Display for Track {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "track {}", self.0)
    }
}

/// A physical location: a sector index within a physical track.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct PhysAddr {
    /// The physical track.
    pub track: Track,
    /// Sector index within the track, from its index mark.
    pub sector: u32,
}

/// A byte count (trace sizes and offsets before conversion to sectors).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Bytes(pub u64);
