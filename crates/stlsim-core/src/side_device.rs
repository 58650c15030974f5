//! Devices beside the disk (paper 001, HWSR, Figure 1): a memory write
//! buffer (host DRAM, or battery-backed NVRAM) and an SSD read cache.
//!
//! A side device is a store of fixed-size slots (a layer's blocks). Each slot
//! holds one token per sector when data is carried, and one record of words
//! (the layer's out-of-band metadata: which block the slot holds, a sequence
//! number, which sectors are valid), written with the slot. Operations are
//! timed as `latency + bytes / bandwidth` and counted by cause like the
//! disk's; the [`Device`](crate::device::Device) runs them on its one clock
//! (the system serves one operation at a time, as the paper's prototype
//! replays a trace synchronously) and can crash before any of them.
//!
//! Power loss: an SSD keeps its slots; a volatile memory loses every slot; a
//! battery-backed memory keeps them (it is written back by its battery, as an
//! NVDIMM is).
//!
//! Timing sources (defaults):
//! * memory: the prototype's Hynix HMT151R7A7FP4C-H9 is DDR3-1333 (PC3-10600),
//!   10,666 MB/s peak per module (JEDEC DDR3-1333: 1333 MT/s x 8 bytes);
//!   100 ns access latency (a DDR3 row miss is about 50 ns; a software buffer
//!   lookup adds as much). Reads and writes alike.
//! * SSD: Intel X25-M G2 80 GB (SSDSA2M080G2GC), Intel's product
//!   specification (document 322296): sequential read up to 250 MB/s,
//!   sequential write up to 70 MB/s, read latency 65 us, write latency 85 us.

use crate::cause::{Cause, OpCounts};
use crate::error::{config_err, SimResult};
use crate::medium::Token;
use crate::units::Nanos;
use serde::{Deserialize, Serialize};

/// Which device beside the disk: the memory write buffer or the SSD read cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SideKind {
    /// The memory write buffer.
    Memory,
    /// The SSD read cache.
    Ssd,
}

impl SideKind {
    /// Both, in report order.
    pub const ALL: [SideKind; 2] = [SideKind::Memory, SideKind::Ssd];
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            SideKind::Memory => "memory",
            SideKind::Ssd => "ssd",
        }
    }
}

/// A side device as a drive description gives it (`[memory]` or `[ssd]`).
/// `preset = "intel-x25m-80gb"` (SSD) or `"ddr3-1333"` (memory) fills in
/// the timing; keys given beside it override the preset's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideConfig {
    /// Capacity in MiB; cut into slots of the layer's block size, a last partial
    /// slot unused.
    pub mib: f64,
    /// Latency of a read, microseconds.
    pub read_latency_us: f64,
    /// Latency of a write, microseconds.
    pub write_latency_us: f64,
    /// Read bandwidth, MB/s (10^6 bytes).
    pub read_mb_s: f64,
    /// Write bandwidth, MB/s (10^6 bytes).
    pub write_mb_s: f64,
    /// Memory: whether its contents survive a power loss (battery-backed);
    /// an SSD always keeps them.
    pub battery_backed: bool,
}

/// The presets a `[memory]` or `[ssd]` table may name.
pub const SIDE_PRESETS: [&str; 2] = ["ddr3-1333", "intel-x25m-80gb"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSide {
    preset: Option<String>,
    mib: Option<f64>,
    read_latency_us: Option<f64>,
    write_latency_us: Option<f64>,
    read_mb_s: Option<f64>,
    write_mb_s: Option<f64>,
    battery_backed: Option<bool>,
}

impl<'de> Deserialize<'de> for SideConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let r = RawSide::deserialize(d)?;
        let base = match r.preset.as_deref() {
            Some("intel-x25m-80gb") => Some(SideConfig::intel_x25m(0.0)),
            Some("ddr3-1333") => Some(SideConfig::ddr3_1333(0.0)),
            Some(p) => {
                return Err(D::Error::custom(format!(
                    "unknown memory/SSD preset '{p}' (known: {})",
                    SIDE_PRESETS.join(", ")
                )))
            }
            None => None,
        };
        let need = |v: Option<f64>, from: Option<f64>, k: &str| {
            v.or(from).ok_or_else(|| {
                D::Error::custom(format!(
                    "missing key '{k}' (or give a preset: {})",
                    SIDE_PRESETS.join(", ")
                ))
            })
        };
        let b = base.as_ref();
        Ok(SideConfig {
            mib: r
                .mib
                .ok_or_else(|| D::Error::custom("missing key 'mib' (the size in MiB)"))?,
            read_latency_us: need(
                r.read_latency_us,
                b.map(|b| b.read_latency_us),
                "read_latency_us",
            )?,
            write_latency_us: need(
                r.write_latency_us,
                b.map(|b| b.write_latency_us),
                "write_latency_us",
            )?,
            read_mb_s: need(r.read_mb_s, b.map(|b| b.read_mb_s), "read_mb_s")?,
            write_mb_s: need(r.write_mb_s, b.map(|b| b.write_mb_s), "write_mb_s")?,
            battery_backed: r.battery_backed.unwrap_or(false),
        })
    }
}

impl SideConfig {
    /// The paper's memory: DDR3-1333 DRAM, volatile (sources in the module doc).
    pub fn ddr3_1333(mib: f64) -> SideConfig {
        SideConfig {
            mib,
            read_latency_us: 0.1,
            write_latency_us: 0.1,
            read_mb_s: 10_666.0,
            write_mb_s: 10_666.0,
            battery_backed: false,
        }
    }
    /// The paper's SSD: Intel X25-M G2 80 GB (sources in the module doc).
    pub fn intel_x25m(mib: f64) -> SideConfig {
        SideConfig {
            mib,
            read_latency_us: 65.0,
            write_latency_us: 85.0,
            read_mb_s: 250.0,
            write_mb_s: 70.0,
            battery_backed: false,
        }
    }
    /// Check the values: sizes and bandwidths positive, latencies not negative;
    /// `what` names the table in the error.
    pub fn validate(&self, what: &str) -> SimResult<()> {
        for (k, v) in [
            ("mib", self.mib),
            ("read_mb_s", self.read_mb_s),
            ("write_mb_s", self.write_mb_s),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return config_err(format!("[{what}] {k} = {v} must be a positive number"));
            }
        }
        for (k, v) in [
            ("read_latency_us", self.read_latency_us),
            ("write_latency_us", self.write_latency_us),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return config_err(format!("[{what}] {k} = {v} must be >= 0"));
            }
        }
        Ok(())
    }
}

/// One slot's contents: the layer's record and, when data is carried, its sectors.
#[derive(Clone, Debug, Default)]
pub struct Slot {
    /// The layer's record (block, sequence number, valid sectors ...).
    pub words: Vec<u64>,
    /// One token per sector of the slot when data is carried (else empty).
    pub data: Vec<Token>,
}

/// A memory buffer or SSD: slots, timing and counters.
#[derive(Clone, Debug)]
pub struct SideDevice {
    kind: SideKind,
    cfg: SideConfig,
    sector_bytes: u32,
    slot_sectors: u32,
    /// Every slot's contents, kept when it is discarded (its buffers are
    /// reused: no allocation per write in steady state); `live` says which
    /// slots hold something.
    slots: Vec<Slot>,
    live: Vec<bool>,
    reads: [OpCounts; Cause::ALL.len()],
    writes: [OpCounts; Cause::ALL.len()],
}

impl SideDevice {
    /// A device of `cfg.mib` cut into slots of `slot_sectors` sectors (the
    /// last partial slot is not used).
    pub fn new(
        kind: SideKind,
        cfg: SideConfig,
        sector_bytes: u32,
        slot_sectors: u32,
    ) -> SimResult<SideDevice> {
        cfg.validate(kind.name())?;
        if slot_sectors == 0 {
            return config_err(format!(
                "{} slots must hold at least one sector",
                kind.name()
            ));
        }
        let slot_bytes = slot_sectors as f64 * sector_bytes as f64;
        let n = (cfg.mib * 1024.0 * 1024.0 / slot_bytes).floor() as usize;
        if n == 0 {
            return config_err(format!(
                "the {} of {} MiB holds no slot of {} sectors",
                kind.name(),
                cfg.mib,
                slot_sectors
            ));
        }
        Ok(SideDevice {
            kind,
            cfg,
            sector_bytes,
            slot_sectors,
            slots: vec![Slot::default(); n],
            live: vec![false; n],
            reads: Default::default(),
            writes: Default::default(),
        })
    }
    /// Which device this is (memory buffer or SSD).
    pub fn kind(&self) -> SideKind {
        self.kind
    }
    /// Its configuration: capacity, latencies, bandwidths, battery backing.
    pub fn config(&self) -> &SideConfig {
        &self.cfg
    }
    /// Number of slots: the whole slots the capacity holds.
    pub fn slots(&self) -> u64 {
        self.slots.len() as u64
    }
    /// Sectors per slot, as the layer asked (`Layer::side_devices`).
    pub fn slot_sectors(&self) -> u32 {
        self.slot_sectors
    }
    /// Whether its contents survive a power loss.
    pub fn persistent(&self) -> bool {
        self.kind == SideKind::Ssd || self.cfg.battery_backed
    }
    /// A slot's contents (what a scan of the device finds; no timing).
    pub fn slot(&self, i: u64) -> Option<&Slot> {
        let i = i as usize;
        (*self.live.get(i)?).then(|| &self.slots[i])
    }
    /// Counters of reads by cause, in [`Cause::ALL`] order.
    pub fn read_counts(&self) -> &[OpCounts] {
        &self.reads
    }
    /// Counters of writes by cause, in [`Cause::ALL`] order.
    pub fn write_counts(&self) -> &[OpCounts] {
        &self.writes
    }
    /// Forget the counts so far (the run's measurements start here).
    pub fn reset_counts(&mut self) {
        self.reads = Default::default();
        self.writes = Default::default();
    }
    /// Totals over all causes: (reads, writes).
    pub fn totals(&self) -> (OpCounts, OpCounts) {
        let sum = |v: &[OpCounts]| {
            v.iter().fold(OpCounts::default(), |mut a, c| {
                a.ops += c.ops;
                a.sectors += c.sectors;
                a.busy += c.busy;
                a
            })
        };
        (sum(&self.reads), sum(&self.writes))
    }

    fn check(&self, slot: u64, offset: u32, n: u32) -> SimResult<()> {
        if slot >= self.slots() || n == 0 || offset as u64 + n as u64 > self.slot_sectors as u64 {
            return Err(crate::error::SimError::Medium(format!(
                "{} access of {n} sectors at slot {slot} sector {offset} does not fit (slots: {}, {} sectors each)",
                self.kind.name(),
                self.slots(),
                self.slot_sectors
            )));
        }
        Ok(())
    }

    fn cost(&self, write: bool, n: u32) -> Nanos {
        let (lat, mb_s) = if write {
            (self.cfg.write_latency_us, self.cfg.write_mb_s)
        } else {
            (self.cfg.read_latency_us, self.cfg.read_mb_s)
        };
        let bytes = n as f64 * self.sector_bytes as f64;
        Nanos((lat * 1000.0 + bytes * 1000.0 / mb_s).round() as u64)
    }

    /// The time of an operation of `n` sectors, counted under `cause` when `account`.
    fn count(&mut self, write: bool, cause: Cause, n: u32, account: bool) -> Nanos {
        let t = self.cost(write, n);
        if account {
            let c = if write {
                &mut self.writes[cause as usize]
            } else {
                &mut self.reads[cause as usize]
            };
            c.ops += 1;
            c.sectors += n as u64;
            c.busy += t;
        }
        t
    }

    /// Read sectors `[offset, offset + n)` of a slot, appending their tokens
    /// (empty tokens where nothing was written) when `carry`. Returns the time it took.
    #[allow(
        clippy::too_many_arguments,
        reason = "a side read's place, its span, timing and where the tokens go: no smaller whole"
    )]
    pub(crate) fn read(
        &mut self,
        cause: Cause,
        slot: u64,
        offset: u32,
        n: u32,
        out: &mut Vec<Token>,
        carry: bool,
        account: bool,
    ) -> SimResult<Nanos> {
        self.check(slot, offset, n)?;
        if carry {
            match self.slot(slot).filter(|s| !s.data.is_empty()) {
                Some(s) => out.extend_from_slice(&s.data[offset as usize..(offset + n) as usize]),
                None => out.extend(std::iter::repeat_n(Token::EMPTY, n as usize)),
            }
        }
        Ok(self.count(false, cause, n, account))
    }

    /// Write sectors `[offset, offset + n)` of a slot with `data` (empty or
    /// one token per sector) and set its record to `words`. Returns the time it took.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write(
        &mut self,
        cause: Cause,
        slot: u64,
        offset: u32,
        n: u32,
        data: &[Token],
        words: &[u64],
        account: bool,
    ) -> SimResult<Nanos> {
        self.check(slot, offset, n)?;
        let ss = self.slot_sectors as usize;
        // A discarded slot's buffers were emptied, not freed.
        self.live[slot as usize] = true;
        let s = &mut self.slots[slot as usize];
        s.words.clear();
        s.words.extend_from_slice(words);
        if !data.is_empty() {
            if s.data.is_empty() {
                s.data.resize(ss, Token::EMPTY);
            }
            s.data[offset as usize..(offset + n) as usize].copy_from_slice(data);
        }
        Ok(self.count(true, cause, n, account))
    }

    /// Drop a slot's contents (a free-list update: no media time). Its
    /// buffers are emptied and kept for the slot's next write.
    pub(crate) fn discard(&mut self, slot: u64) {
        if let Some(s) = self.slots.get_mut(slot as usize) {
            s.words.clear();
            s.data.clear();
            self.live[slot as usize] = false;
        }
    }

    /// A power loss: a volatile device forgets everything.
    pub(crate) fn power_cycle(&mut self) {
        if !self.persistent() {
            for i in 0..self.slots.len() {
                self.discard(i as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Lba;

    #[test]
    fn timing_is_latency_plus_transfer() {
        let mut ssd = SideDevice::new(SideKind::Ssd, SideConfig::intel_x25m(1.0), 512, 64).unwrap();
        // 32 KiB read: 65 us + 32768 B / 250 MB/s = 65 + 131.072 us.
        let t = ssd
            .read(Cause::Host, 0, 0, 64, &mut vec![], false, true)
            .unwrap();
        assert_eq!(t, Nanos(196_072));
        // 4 KiB write: 85 us + 4096 / 70 MB/s = 85 + 58.514 us.
        let t = ssd.write(Cause::Promote, 1, 0, 8, &[], &[], true).unwrap();
        assert_eq!(t, Nanos(143_514));
        assert_eq!(ssd.slots(), 32);
        assert_eq!(ssd.read_counts()[Cause::Host as usize].ops, 1);
        assert_eq!(ssd.write_counts()[Cause::Promote as usize].sectors, 8);
    }

    #[test]
    fn volatile_memory_forgets_and_battery_backed_keeps() {
        let tok = Token::data(Lba(5), 1);
        for backed in [false, true] {
            let mut cfg = SideConfig::ddr3_1333(1.0);
            cfg.battery_backed = backed;
            let mut m = SideDevice::new(SideKind::Memory, cfg, 512, 4).unwrap();
            m.write(Cause::Host, 2, 1, 1, &[tok], &[7, 9], true)
                .unwrap();
            let mut out = vec![];
            m.read(Cause::Host, 2, 0, 2, &mut out, true, true).unwrap();
            assert_eq!(out, vec![Token::EMPTY, tok]);
            m.power_cycle();
            assert_eq!(m.slot(2).is_some(), backed);
        }
    }

    #[test]
    fn a_table_may_name_a_preset_and_override_it() {
        let c: SideConfig = serde_json::from_str(
            r#"{"preset": "intel-x25m-80gb", "mib": 200.0, "write_mb_s": 100.0}"#,
        )
        .unwrap();
        assert_eq!(
            c,
            SideConfig {
                write_mb_s: 100.0,
                ..SideConfig::intel_x25m(200.0)
            }
        );
        let e = serde_json::from_str::<SideConfig>(r#"{"preset": "x", "mib": 1.0}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown memory/SSD preset 'x'"), "{e}");
        let e = serde_json::from_str::<SideConfig>(r#"{"mib": 1.0}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing key 'read_latency_us'"), "{e}");
        assert!(
            serde_json::from_str::<SideConfig>(r#"{"preset": "ddr3-1333"}"#)
                .unwrap_err()
                .to_string()
                .contains("'mib'")
        );
    }

    #[test]
    fn bad_accesses_and_configs_are_errors() {
        let mut m = SideDevice::new(SideKind::Memory, SideConfig::ddr3_1333(1.0), 512, 64).unwrap();
        assert!(m
            .read(Cause::Host, 32, 0, 1, &mut vec![], false, true)
            .is_err());
        assert!(m.write(Cause::Host, 0, 60, 8, &[], &[], true).is_err());
        let mut c = SideConfig::ddr3_1333(0.0);
        assert!(SideDevice::new(SideKind::Memory, c.clone(), 512, 64).is_err());
        c.mib = 0.01;
        assert!(SideDevice::new(SideKind::Memory, c, 512, 64)
            .unwrap_err()
            .to_string()
            .contains("holds no slot"));
    }
}
