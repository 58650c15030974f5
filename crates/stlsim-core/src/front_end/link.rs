//! The host link: how long a request's data take to cross the interface.
//! One type for both placements of the drive's front end, so a write the
//! engine's cache absorbs and one the host-side queue absorbs cost the same
//! link time.

use crate::units::Nanos;

/// The interface's transfer rate, with the last request length's time kept:
/// requests mostly repeat a few sizes, and the float product and its
/// conversion back were a sixtieth of a request's instructions.
#[derive(Clone, Debug)]
pub struct Link {
    ns_per_sector: f64,
    last: (u64, Nanos),
}

impl Link {
    /// A link moving one sector in `ns_per_sector` (0: an infinitely fast
    /// link, as DiskSim's drives without an interface rate).
    pub fn new(ns_per_sector: f64) -> Link {
        Link {
            ns_per_sector,
            last: (0, Nanos::ZERO),
        }
    }

    /// Nanoseconds one sector takes.
    pub fn ns_per_sector(&self) -> f64 {
        self.ns_per_sector
    }

    /// Time `sectors` take, truncated to the nanosecond (DiskSim's
    /// millisecond products, converted, truncate too).
    #[inline]
    pub fn time_of(&self, sectors: u64) -> Nanos {
        Nanos((sectors as f64 * self.ns_per_sector) as u64)
    }

    /// [`Link::time_of`], remembering the last length asked.
    #[inline]
    pub fn time(&mut self, sectors: u64) -> Nanos {
        if sectors == self.last.0 {
            return self.last.1;
        }
        let t = self.time_of(sectors);
        self.last = (sectors, t);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remembered_time_is_the_computed_one() {
        let mut l = Link::new(1234.567);
        for n in [8, 8, 1, 8, 256, 256, 0] {
            assert_eq!(l.time(n), l.time_of(n));
        }
        assert_eq!(l.time_of(8), Nanos(9876));
        assert_eq!(Link::new(0.0).time(4096), Nanos::ZERO);
    }
}
