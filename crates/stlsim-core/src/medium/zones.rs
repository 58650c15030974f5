//! Host-managed zones as ZBC (SCSI) and ZAC (ATA) drives expose them, with
//! the names Linux's zoned block layer uses: conventional zones, which take
//! writes anywhere, and sequential-write-required zones, which take a write
//! only at their write pointer. A sequential zone has a condition (empty,
//! implicitly or explicitly open, closed, full); the drive may limit how
//! many zones are open at once.
//!
//! Rules mirrored from ZBC-2 / ZAC-2 (and the errors the drive returns,
//! named by their sense code):
//! * a write must start at the zone's write pointer (`UNALIGNED WRITE
//!   COMMAND`), must not cross the zone's end (`WRITE BOUNDARY VIOLATION`),
//!   and a full zone takes no write (`INVALID FIELD IN CDB`, its write
//!   pointer being invalid);
//! * a read of a sequential zone at or past its write pointer fails
//!   (`ATTEMPT TO READ INVALID DATA`) unless the drive allows unrestricted
//!   reads (the URSWRZ bit);
//! * a write to an empty or closed zone opens it implicitly; when the open
//!   limit is reached the drive closes the implicitly open zone opened
//!   longest ago, and if every open zone was opened explicitly the write
//!   fails (`INSUFFICIENT ZONE RESOURCES`);
//! * a zone whose write pointer reaches its end becomes full;
//! * RESET WRITE POINTER empties a zone; FINISH ZONE moves the pointer to
//!   the end (full); OPEN ZONE and CLOSE ZONE change the condition only;
//!   zone operations on a conventional zone are refused;
//! * after a power loss every open zone is closed (an open zone that holds
//!   nothing becomes empty).
//!
//! Zone operations take no media time here (a drive records them in its own
//! metadata; their command overhead belongs to the mechanics issue).

use crate::error::{SimError, SimResult};
use crate::units::{Lba, Sectors};
use serde::Serialize;
use std::collections::VecDeque;

/// A zone's type, as REPORT ZONES gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ZoneType {
    /// Randomly writable, no write pointer.
    Conventional,
    /// Sequential write required: writes only at the write pointer.
    SequentialWriteRequired,
}

/// A zone's condition, as REPORT ZONES gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ZoneCondition {
    /// A conventional zone (no write pointer).
    NotWritePointer,
    /// Write pointer at the zone's start.
    Empty,
    /// Opened by a write.
    ImplicitOpen,
    /// Opened by OPEN ZONE.
    ExplicitOpen,
    /// Holds data, not open.
    Closed,
    /// Write pointer at the end (or finished).
    Full,
}

/// One entry of REPORT ZONES.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ZoneInfo {
    /// Zone number, from 0 at LBA 0 (the conventional zones come first).
    pub zone: u64,
    /// Conventional or sequential write required.
    pub kind: ZoneType,
    /// Condition (empty, open, closed, full; not-write-pointer if conventional).
    pub cond: ZoneCondition,
    /// The zone's first LBA (zone number times the zone size).
    pub start: Lba,
    /// Sectors in the zone: the zone size, less for a last zone cut short by the
    /// capacity.
    pub len: Sectors,
    /// Write pointer (the zone's end for conventional and full zones).
    pub wp: Lba,
}

/// Zone-management commands, counted in the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ZoneOpCounts {
    /// RESET WRITE POINTER commands that succeeded.
    pub resets: u64,
    /// FINISH ZONE commands that succeeded.
    pub finishes: u64,
    /// OPEN ZONE commands that succeeded (a write's implicit open is not counted).
    pub opens: u64,
    /// CLOSE ZONE commands that succeeded (including those on a zone not open).
    pub closes: u64,
    /// Zones closed by the drive to open another (open limit reached).
    pub implicit_closes: u64,
    /// REPORT ZONES commands, one per call whatever the number of zones
    /// returned (a layer's in-memory look-ups are not counted).
    pub reports: u64,
}

/// The implicitly open zones as `(stamp, zone)`, oldest first: a queue in
/// stamp order (zones are opened with ever larger stamps), which, unlike a
/// `BTreeSet`, allocates nothing as zones open and close.
#[derive(Clone, Debug, Default)]
struct ImplicitOpen(VecDeque<(u64, u64)>);

impl ImplicitOpen {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    /// Add a zone opened with a stamp larger than any held.
    fn push(&mut self, e: (u64, u64)) {
        debug_assert!(self.0.back().is_none_or(|b| b.0 < e.0));
        self.0.push_back(e);
    }
    fn remove(&mut self, e: &(u64, u64)) {
        if let Ok(i) = self.0.binary_search(e) {
            self.0.remove(i);
        }
    }
}

/// The zones of a host-managed drive: write pointers, conditions, open zones.
#[derive(Clone, Debug, Default)]
pub struct ZoneTable {
    zone_sectors: u64,
    conventional: u64,
    capacity: u64,
    wp: Vec<u64>,
    cond: Vec<ZoneCondition>,
    /// 0: no limit.
    max_open: u64,
    unrestricted_reads: bool,
    explicit_open: u64,
    /// Implicitly open zones by the order they were opened: (stamp, zone).
    implicit: ImplicitOpen,
    opened_at: Vec<u64>,
    stamp: u64,
    counts: ZoneOpCounts,
}

fn zbc(sense: &str, msg: String) -> SimError {
    SimError::Medium(format!("{sense}: {msg}"))
}

impl ZoneTable {
    /// Zones of `zone_sectors` over `capacity` sectors, the first `conventional` of them conventional.
    pub fn new(
        zone_sectors: u64,
        conventional: u64,
        capacity: u64,
        max_open: u64,
        unrestricted_reads: bool,
    ) -> ZoneTable {
        let zones = capacity.div_ceil(zone_sectors);
        ZoneTable {
            zone_sectors,
            conventional,
            capacity,
            wp: (0..zones).map(|z| z * zone_sectors).collect(),
            cond: (0..zones)
                .map(|z| {
                    if z < conventional {
                        ZoneCondition::NotWritePointer
                    } else {
                        ZoneCondition::Empty
                    }
                })
                .collect(),
            max_open,
            unrestricted_reads,
            opened_at: vec![0; zones as usize],
            ..Default::default()
        }
    }

    /// Whether the drive has zones at all.
    pub fn is_zoned(&self) -> bool {
        self.zone_sectors > 0
    }
    /// Sectors per zone (0: the drive has no zones); the last zone may be shorter.
    pub fn zone_sectors(&self) -> u64 {
        self.zone_sectors
    }
    /// Number of zones, conventional ones included.
    pub fn zones(&self) -> u64 {
        self.wp.len() as u64
    }
    /// Number of conventional zones (the first ones).
    pub fn conventional(&self) -> u64 {
        self.conventional
    }
    /// The zone holding `lba`.
    pub fn zone_of(&self, lba: u64) -> u64 {
        lba / self.zone_sectors
    }
    /// Zone-management commands counted since the run's measurements started.
    pub fn counts(&self) -> ZoneOpCounts {
        self.counts
    }
    /// Forget the command counts so far (the run's measurements start here).
    pub fn reset_counts(&mut self) {
        self.counts = ZoneOpCounts::default();
    }
    /// Heap bytes of the per-zone write pointers, conditions and open stamps
    /// (part of the medium's state in the report).
    pub fn heap_bytes(&self) -> u64 {
        (self.wp.capacity() * 8 + self.cond.capacity() + self.opened_at.capacity() * 8) as u64
    }

    fn end(&self, z: u64) -> u64 {
        ((z + 1) * self.zone_sectors).min(self.capacity)
    }

    fn check_zone(&self, z: u64, what: &str) -> SimResult<()> {
        if z >= self.zones() {
            return Err(zbc(
                "INVALID FIELD IN CDB",
                format!(
                    "{what} of zone {z}, but the drive has {} zones",
                    self.zones()
                ),
            ));
        }
        if z < self.conventional {
            return Err(zbc(
                "INVALID FIELD IN CDB",
                format!("{what} of zone {z}, a conventional zone"),
            ));
        }
        Ok(())
    }

    /// REPORT ZONES for one zone (no count: see [`report`](Self::report)).
    pub fn info(&self, z: u64) -> ZoneInfo {
        let conv = z < self.conventional;
        ZoneInfo {
            zone: z,
            kind: if conv {
                ZoneType::Conventional
            } else {
                ZoneType::SequentialWriteRequired
            },
            cond: self.cond[z as usize],
            start: Lba(z * self.zone_sectors),
            len: Sectors(self.end(z) - z * self.zone_sectors),
            wp: Lba(if conv {
                self.end(z)
            } else {
                self.wp[z as usize]
            }),
        }
    }

    /// REPORT ZONES: up to `max` zones from `from` (counted as one command).
    pub fn report(&mut self, from: u64, max: u64) -> Vec<ZoneInfo> {
        self.counts.reports += 1;
        (from..self.zones().min(from.saturating_add(max)))
            .map(|z| self.info(z))
            .collect()
    }

    /// The write pointer of a sequential zone.
    pub fn write_pointer(&self, z: u64) -> Option<Lba> {
        (z >= self.conventional)
            .then(|| self.wp.get(z as usize).map(|&w| Lba(w)))
            .flatten()
    }

    fn is_open(c: ZoneCondition) -> bool {
        matches!(c, ZoneCondition::ImplicitOpen | ZoneCondition::ExplicitOpen)
    }

    fn open_count(&self) -> u64 {
        self.explicit_open + self.implicit.len() as u64
    }

    /// Make room for one more open zone, closing the oldest implicitly open one if the limit is reached.
    fn reserve_open(&mut self, z: u64, what: &str) -> SimResult<()> {
        if self.max_open == 0 || self.open_count() < self.max_open {
            return Ok(());
        }
        let Some(&(s, victim)) = self.implicit.0.front() else {
            return Err(zbc(
                "INSUFFICIENT ZONE RESOURCES",
                format!(
                    "{what} zone {z}: {} zones are explicitly open, the drive's limit",
                    self.explicit_open
                ),
            ));
        };
        self.implicit.remove(&(s, victim));
        self.cond[victim as usize] = ZoneCondition::Closed;
        self.counts.implicit_closes += 1;
        Ok(())
    }

    fn leave_open(&mut self, z: u64) {
        match self.cond[z as usize] {
            ZoneCondition::ImplicitOpen => {
                self.implicit.remove(&(self.opened_at[z as usize], z));
            }
            ZoneCondition::ExplicitOpen => self.explicit_open -= 1,
            _ => {}
        }
    }

    /// Check a write command of `count` sectors at `lba` and advance the write pointer.
    pub fn admit_write(&mut self, lba: u64, count: u64) -> SimResult<()> {
        self.check_write(lba, count)?;
        if self.zone_sectors == 0 || self.zone_of(lba) < self.conventional {
            return Ok(());
        }
        let z = self.zone_of(lba);
        let end = self.end(z);
        if !Self::is_open(self.cond[z as usize]) {
            self.reserve_open(z, "write to")?;
            self.stamp += 1;
            self.opened_at[z as usize] = self.stamp;
            self.implicit.push((self.stamp, z));
            self.cond[z as usize] = ZoneCondition::ImplicitOpen;
        }
        self.wp[z as usize] = lba + count;
        if lba + count == end {
            self.leave_open(z);
            self.cond[z as usize] = ZoneCondition::Full;
        }
        Ok(())
    }

    /// Check a write command of `count` sectors at `lba` against the zone rules, changing nothing.
    pub fn check_write(&self, lba: u64, count: u64) -> SimResult<()> {
        if self.zone_sectors == 0 {
            return Ok(());
        }
        let z = self.zone_of(lba);
        if z < self.conventional {
            if lba + count > self.conventional * self.zone_sectors {
                return Err(zbc(
                    "WRITE BOUNDARY VIOLATION",
                    format!("write at LBA {lba} of {count} sectors crosses from conventional zone {z} into a sequential zone"),
                ));
            }
            return Ok(());
        }
        let wp = self.wp[z as usize];
        if self.cond[z as usize] == ZoneCondition::Full {
            return Err(zbc(
                "INVALID FIELD IN CDB",
                format!("write at LBA {lba} to zone {z}, which is full"),
            ));
        }
        if lba != wp {
            return Err(zbc(
                "UNALIGNED WRITE COMMAND",
                format!("write at LBA {lba} in sequential zone {z} is not at its write pointer (LBA {wp})"),
            ));
        }
        let end = self.end(z);
        if lba + count > end {
            return Err(zbc(
                "WRITE BOUNDARY VIOLATION",
                format!(
                    "write at LBA {lba} of {count} sectors crosses the end of zone {z} (LBA {end})"
                ),
            ));
        }
        if self.max_open > 0
            && !Self::is_open(self.cond[z as usize])
            && self.open_count() >= self.max_open
            && self.implicit.is_empty()
        {
            return Err(zbc(
                "INSUFFICIENT ZONE RESOURCES",
                format!(
                    "write to zone {z}: {} zones are explicitly open, the drive's limit",
                    self.explicit_open
                ),
            ));
        }
        Ok(())
    }

    /// Check a read command: a sequential zone's sectors at or past its write pointer hold no data.
    pub fn admit_read(&self, lba: u64, count: u64) -> SimResult<()> {
        if self.zone_sectors == 0 || self.unrestricted_reads {
            return Ok(());
        }
        let (first, last) = (self.zone_of(lba), self.zone_of(lba + count - 1));
        for z in first.max(self.conventional)..=last {
            let wp = self.wp[z as usize];
            if lba + count > wp && self.cond[z as usize] != ZoneCondition::Full {
                return Err(zbc(
                    "ATTEMPT TO READ INVALID DATA",
                    format!("read of LBA {lba}..{} in sequential zone {z} reaches past its write pointer (LBA {wp})", lba + count),
                ));
            }
        }
        Ok(())
    }

    /// RESET WRITE POINTER: empty the zone.
    pub fn reset(&mut self, z: u64) -> SimResult<()> {
        self.check_zone(z, "RESET WRITE POINTER")?;
        self.leave_open(z);
        self.wp[z as usize] = z * self.zone_sectors;
        self.cond[z as usize] = ZoneCondition::Empty;
        self.counts.resets += 1;
        Ok(())
    }

    /// FINISH ZONE: move the write pointer to the end; the zone becomes full.
    pub fn finish(&mut self, z: u64) -> SimResult<()> {
        self.check_zone(z, "FINISH ZONE")?;
        self.leave_open(z);
        self.wp[z as usize] = self.end(z);
        self.cond[z as usize] = ZoneCondition::Full;
        self.counts.finishes += 1;
        Ok(())
    }

    /// OPEN ZONE (explicit).
    pub fn open(&mut self, z: u64) -> SimResult<()> {
        self.check_zone(z, "OPEN ZONE")?;
        match self.cond[z as usize] {
            ZoneCondition::ExplicitOpen => {}
            ZoneCondition::Full => {
                return Err(zbc(
                    "INVALID FIELD IN CDB",
                    format!("OPEN ZONE of zone {z}, which is full"),
                ))
            }
            ZoneCondition::ImplicitOpen => {
                self.leave_open(z);
                self.explicit_open += 1;
                self.cond[z as usize] = ZoneCondition::ExplicitOpen;
            }
            _ => {
                self.reserve_open(z, "OPEN ZONE of")?;
                self.explicit_open += 1;
                self.cond[z as usize] = ZoneCondition::ExplicitOpen;
            }
        }
        self.counts.opens += 1;
        Ok(())
    }

    /// CLOSE ZONE: an open zone becomes closed, or empty if it holds nothing;
    /// counted even when the zone was not open.
    pub fn close(&mut self, z: u64) -> SimResult<()> {
        self.check_zone(z, "CLOSE ZONE")?;
        if Self::is_open(self.cond[z as usize]) {
            self.leave_open(z);
            self.cond[z as usize] = if self.wp[z as usize] == z * self.zone_sectors {
                ZoneCondition::Empty
            } else {
                ZoneCondition::Closed
            };
        }
        self.counts.closes += 1;
        Ok(())
    }

    /// Power loss: every open zone is closed (or empty if it holds nothing).
    pub fn power_cycle(&mut self) {
        for z in self.conventional..self.zones() {
            if Self::is_open(self.cond[z as usize]) {
                self.cond[z as usize] = if self.wp[z as usize] == z * self.zone_sectors {
                    ZoneCondition::Empty
                } else {
                    ZoneCondition::Closed
                };
            }
        }
        self.implicit.clear();
        self.explicit_open = 0;
    }

    /// A power loss lost the drive's cached writes into zone `z` from LBA
    /// `first` on: its write pointer goes back there (if it was past it).
    pub fn roll_back(&mut self, z: u64, first: u64) {
        if (z as usize) < self.wp.len() && self.wp[z as usize] > first {
            self.set_prefilled(z, first);
        }
    }

    /// Set a zone's write pointer from a prefilled starting state (no command):
    /// the zone holds data up to `wp` and is closed, or full, or empty.
    pub fn set_prefilled(&mut self, z: u64, wp: u64) {
        let (start, end) = (z * self.zone_sectors, self.end(z));
        self.wp[z as usize] = wp;
        self.cond[z as usize] = if wp >= end {
            ZoneCondition::Full
        } else if wp == start {
            ZoneCondition::Empty
        } else {
            ZoneCondition::Closed
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 zones of 100 sectors, the first conventional, at most 2 open.
    fn table(max_open: u64) -> ZoneTable {
        ZoneTable::new(100, 1, 400, max_open, false)
    }

    fn err(r: SimResult<()>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn writes_follow_the_write_pointer_and_name_the_sense_code() {
        let mut t = table(0);
        t.admit_write(5, 10).unwrap(); // conventional: anywhere
        assert_eq!(t.info(0).cond, ZoneCondition::NotWritePointer);
        assert!(err(t.admit_write(110, 1)).contains("UNALIGNED WRITE COMMAND"));
        t.admit_write(100, 30).unwrap();
        assert_eq!(t.info(1).cond, ZoneCondition::ImplicitOpen);
        assert_eq!(t.write_pointer(1), Some(Lba(130)));
        assert!(err(t.admit_write(130, 71)).contains("WRITE BOUNDARY VIOLATION"));
        assert!(err(t.admit_write(95, 10)).contains("WRITE BOUNDARY VIOLATION"));
        t.admit_write(130, 70).unwrap();
        assert_eq!(t.info(1).cond, ZoneCondition::Full);
        assert!(err(t.admit_write(200 - 1, 1)).contains("full"));
    }

    #[test]
    fn reads_past_the_write_pointer_fail_unless_unrestricted() {
        let mut t = table(0);
        t.admit_write(100, 10).unwrap();
        t.admit_read(100, 10).unwrap();
        assert!(err(t.admit_read(105, 6)).contains("ATTEMPT TO READ INVALID DATA"));
        let mut u = ZoneTable::new(100, 1, 400, 0, true);
        u.admit_write(100, 10).unwrap();
        u.admit_read(105, 50).unwrap();
    }

    #[test]
    fn reset_finish_open_and_close_change_conditions() {
        let mut t = table(0);
        t.admit_write(100, 10).unwrap();
        t.close(1).unwrap();
        assert_eq!(t.info(1).cond, ZoneCondition::Closed);
        t.open(1).unwrap();
        assert_eq!(t.info(1).cond, ZoneCondition::ExplicitOpen);
        t.finish(1).unwrap();
        assert_eq!(
            (t.info(1).cond, t.info(1).wp),
            (ZoneCondition::Full, Lba(200))
        );
        t.reset(1).unwrap();
        assert_eq!(
            (t.info(1).cond, t.info(1).wp),
            (ZoneCondition::Empty, Lba(100))
        );
        t.open(2).unwrap();
        t.close(2).unwrap();
        assert_eq!(t.info(2).cond, ZoneCondition::Empty);
        assert!(err(t.reset(0)).contains("conventional"));
        assert!(err(t.finish(9)).contains("4 zones"));
        let c = t.counts();
        assert_eq!((c.resets, c.finishes, c.opens, c.closes), (1, 1, 2, 2));
        assert_eq!(t.report(0, 10).len(), 4);
        assert_eq!(t.counts().reports, 1);
    }

    #[test]
    fn the_open_limit_closes_the_oldest_implicit_zone_or_refuses() {
        let mut t = table(2);
        t.admit_write(100, 1).unwrap();
        t.admit_write(200, 1).unwrap();
        t.admit_write(300, 1).unwrap(); // closes zone 1, opened first
        assert_eq!(t.info(1).cond, ZoneCondition::Closed);
        assert_eq!(t.info(3).cond, ZoneCondition::ImplicitOpen);
        assert_eq!(t.counts().implicit_closes, 1);
        t.open(2).unwrap();
        t.open(3).unwrap();
        assert!(err(t.admit_write(101, 1)).contains("INSUFFICIENT ZONE RESOURCES"));
        assert!(err(t.open(1)).contains("INSUFFICIENT ZONE RESOURCES"));
        t.close(3).unwrap();
        t.admit_write(101, 1).unwrap();
        // A power loss closes every open zone.
        t.power_cycle();
        assert_eq!(t.info(1).cond, ZoneCondition::Closed);
        assert_eq!(t.info(2).cond, ZoneCondition::Closed);
    }
}
