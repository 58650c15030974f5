//! The device: geometry + medium + mechanics + clock + counters. Every
//! physical read, write or zone operation a layer issues goes through here,
//! is timed by the mechanics, changes the medium by its physics and is
//! counted under its [`Cause`]. Crash points are injected here, so a crash can
//! fall between any two physical operations of a layer.

pub use crate::cause::{Cause, OpCounts};
use crate::error::{SimError, SimResult};
use crate::front_end::queued_cache::{CachedMeta, Pending, QueuedCache};
use crate::geometry::{Geometry, HomeExtents};
use crate::mechanics::{HeadState, Mechanics};
use crate::medium::{Medium, Token};
use crate::side_device::{SideConfig, SideDevice, SideKind};
use crate::units::{Lba, Nanos, PhysAddr, Sectors, Track};
use std::collections::VecDeque;
use std::sync::Arc;

/// The kinds of physical operation the device issues and logs (see [`OpRecord`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// A read of sectors on one track of the disk.
    Read,
    /// A write of sectors on one track of the disk.
    Write,
    /// RESET WRITE POINTER of a host-managed zone.
    ResetZone,
    /// FINISH ZONE of a host-managed zone.
    FinishZone,
    /// A read of a device beside the disk (memory buffer, SSD).
    SideRead(SideKind),
    /// A write of a device beside the disk.
    SideWrite(SideKind),
}

/// A past physical operation, kept for naming the operation that destroyed data.
#[derive(Clone, Copy, Debug)]
pub struct OpRecord {
    /// Serial number (0-based count of physical operations).
    pub serial: u64,
    /// Read, write or reset.
    pub kind: OpKind,
    /// Why it was issued.
    pub cause: Cause,
    /// Its first sector; for a side-device operation, the slot number as the
    /// track and sector 0.
    pub at: PhysAddr,
    /// Sectors it covers (0 for a zone reset or finish).
    pub count: u32,
    /// The device clock when it was issued.
    pub start: Nanos,
}

const OP_LOG: usize = 1 << 16;

/// One read of a track's sectors, as the buffer receives them: when its
/// first sector is buffered and when its last is. Between the two the
/// sectors arrive one sector time apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadPiece {
    /// When the piece's first (lowest) sector is in the buffer.
    pub first_ready: Nanos,
    /// When its last sector is (the read's completion).
    pub end: Nanos,
    /// Sectors the read covers, all on one track.
    pub count: u32,
}

/// A host write whose blocks reach the buffer one by one over the link
/// (see [`Device::gate_writes`]).
#[derive(Clone, Copy, Debug)]
pub struct WriteGate {
    /// When the link starts bringing the write's first block.
    start: Nanos,
    /// Link time of one block.
    ns_per_block: f64,
    /// Blocks of the write already written to the media.
    written: u64,
}

impl WriteGate {
    /// When block `k` (from 0) of the write is wholly in the buffer.
    fn ready(&self, k: u64) -> Nanos {
        self.start + Nanos(((k + 1) as f64 * self.ns_per_block) as u64)
    }

    /// The rotations lost writing the write's next `count` blocks to a track
    /// of `spt` sectors turning once in `turn`, the first passing under the
    /// head at `first`: each block must be buffered when its sector starts
    /// to pass, and a late one (and every one after it) waits whole turns.
    /// `exhaustive` checks every sector even where the ends show none late.
    fn wait(&self, first: Nanos, turn: Nanos, spt: u32, count: u32, exhaustive: bool) -> Nanos {
        let spt64 = u64::from(spt.max(1));
        // Sector j passes `Mechanics::transfer_time(j, spt)` after the first.
        let passes = |j: u32| Nanos(crate::mechanics::turn_share_ns(turn.0, u64::from(j), spt64));
        // How far sector j's block is from being buffered as it passes
        // (late if positive), no sector before it late: linear in j but
        // for two floors (under 1 ns each), so it peaks at an end, within
        // 2 ns. Both ends on time with a margin: none is late, and the
        // sectors are not walked (the usual case, the seek outlasting the
        // link; walking each write's sectors made the full model 2.8x the
        // simple model's time, where the issue allows 2x).
        let behind =
            |j: u32| self.ready(self.written + j as u64).0 as i128 - (first + passes(j)).0 as i128;
        if count == 0 || !exhaustive && behind(0).max(behind(count - 1)) + 3 <= 0 {
            return Nanos::ZERO;
        }
        let mut late = Nanos::ZERO;
        for j in 0..count {
            let at = first + passes(j) + late;
            let ready = self.ready(self.written + j as u64);
            if at < ready && turn.0 > 0 {
                let wait = Nanos((ready.0 - at.0).div_ceil(turn.0) * turn.0);
                late += wait;
                // This sector now waits; if it and the last are then both on
                // time with the margin, so is every one between (as above).
                let now = ready.0 as i128 - (at + wait).0 as i128;
                if !exhaustive && now.max(behind(count - 1) - late.0 as i128) + 3 <= 0 {
                    break;
                }
            }
        }
        late
    }
}

/// A tagged write's record maker: about how many words a record has, and
/// the closure appending sector `lba`'s words.
type Tagger<'a> = (usize, &'a mut dyn FnMut(Lba, &mut Vec<u64>));

/// A simulated drive: every physical operation a layer issues passes through
/// it to be checked, timed, applied to the medium and counted.
pub struct Device {
    geom: Arc<Geometry>,
    medium: Medium,
    mech: Mechanics,
    head: HeadState,
    clock: Nanos,
    reads: [OpCounts; Cause::ALL.len()],
    writes: [OpCounts; Cause::ALL.len()],
    serial: u64,
    /// The serial and the clock when the run's measurements started
    /// ([`Device::start_measuring`]): operation numbers and elapsed time
    /// count from them.
    serial_base: u64,
    time_base: Nanos,
    crash_points: Vec<u64>,
    op_log: VecDeque<OpRecord>,
    accounting: bool,
    crashed_during: Option<Cause>,
    in_stage: bool,
    /// Host-cause reads are the read cache's read-ahead (the layer reads
    /// them as it reads for the host).
    reading_ahead: bool,
    crashed_in_stage: bool,
    stage_write_sectors: u64,
    /// The memory buffer and the SSD, when the system has them.
    side: [Option<SideDevice>; 2],
    /// Host data made durable by the layer since the engine last asked
    /// (kept only when data is carried and the layer acknowledges volatile writes).
    made_durable: Vec<Token>,
    /// Whether reads are noted in `read_pieces` (the engine asks for it
    /// when the host link follows the media block by block).
    noting_reads: bool,
    /// The reads noted since the engine last asked, in the order issued.
    read_pieces: Vec<ReadPiece>,
    /// While set, host-cause writes wait, block by block, for the link.
    write_gate: Option<WriteGate>,
    /// The drive's own cache and queue beneath a host-side layer, if attached.
    front: Option<QueuedCache>,
    /// Writes bypass that cache (FORCE UNIT ACCESS) while set.
    fua: bool,
    /// Host data a layer said is durable while the front end still held
    /// writes: durable once the cache is drained.
    durable_after_drain: Vec<Token>,
    /// Emptied per-sector record lists of tagged writes, reused.
    spare_meta_lists: Vec<Vec<Vec<u64>>>,
    /// Whether the layer's FLUSH CACHE commands are sent (a layer may
    /// choose not to: see `drive_flush` of the hybrid layers).
    flush_commands: bool,
}

impl Device {
    /// A new device with an empty medium; `tracked` keeps contents for verification.
    pub fn new(geom: Geometry, mech: Mechanics, tracked: bool) -> Device {
        let medium = Medium::new(&geom, tracked);
        Device {
            geom: Arc::new(geom),
            medium,
            mech,
            head: HeadState::default(),
            clock: Nanos::ZERO,
            reads: Default::default(),
            writes: Default::default(),
            serial: 0,
            serial_base: 0,
            time_base: Nanos::ZERO,
            crash_points: vec![],
            op_log: VecDeque::new(),
            accounting: true,
            crashed_during: None,
            in_stage: false,
            reading_ahead: false,
            crashed_in_stage: false,
            stage_write_sectors: 0,
            side: [None, None],
            made_durable: vec![],
            noting_reads: false,
            read_pieces: vec![],
            write_gate: None,
            front: None,
            fua: false,
            durable_after_drain: vec![],
            spare_meta_lists: vec![],
            flush_commands: true,
        }
    }

    /// Until [`Device::ungate_writes`], write each host-cause sector only once
    /// the link has brought it into the buffer: the sectors written from now
    /// on are the write's blocks in order, block `k` (from 0) buffered at
    /// `start + (k + 1) x ns_per_block`. A sector that comes under the head
    /// before its block is buffered is passed over, and the head writes it
    /// when it comes round again, whole rotations later (DiskSim's
    /// `disk_buffer_sector_done`, which checks `disk_buffer_block_available`
    /// as each sector starts to pass and otherwise lets it go by unwritten).
    pub fn gate_writes(&mut self, start: Nanos, ns_per_block: f64) {
        self.write_gate = Some(WriteGate {
            start,
            ns_per_block,
            written: 0,
        });
    }

    /// Stop gating host writes on the link (see [`Device::gate_writes`]).
    pub fn ungate_writes(&mut self) {
        self.write_gate = None;
    }

    /// Set the gate of a host write aside while something else writes (a
    /// stage of background work that makes room for the write's rest), to
    /// put it back with [`Device::resume_write_gate`]: the rest's blocks
    /// keep their places in the link's stream.
    pub fn suspend_write_gate(&mut self) -> Option<WriteGate> {
        self.write_gate.take()
    }

    /// Put back a gate [`Device::suspend_write_gate`] set aside.
    pub fn resume_write_gate(&mut self, gate: Option<WriteGate>) {
        self.write_gate = gate;
    }

    /// Start noting each read's [`ReadPiece`] (forgetting those noted before).
    pub fn note_reads(&mut self) {
        self.noting_reads = true;
        self.read_pieces.clear();
    }

    /// Stop noting reads; the pieces noted since [`Device::note_reads`].
    pub fn noted_reads(&mut self) -> &[ReadPiece] {
        self.noting_reads = false;
        &self.read_pieces
    }

    /// Give the system a device beside the disk, cut into slots of `slot_sectors`.
    pub fn attach_side(
        &mut self,
        kind: SideKind,
        cfg: SideConfig,
        slot_sectors: u32,
    ) -> SimResult<()> {
        let d = SideDevice::new(kind, cfg, self.geom.sector_bytes(), slot_sectors)?;
        self.side[kind as usize] = Some(d);
        Ok(())
    }

    /// A device beside the disk, if the system has it.
    pub fn side(&self, kind: SideKind) -> Option<&SideDevice> {
        self.side[kind as usize].as_ref()
    }

    fn side_mut(&mut self, kind: SideKind) -> SimResult<&mut SideDevice> {
        self.side[kind as usize].as_mut().ok_or_else(|| {
            SimError::Config(format!(
                "the system has no {} (give the drive a [{}] table)",
                kind.name(),
                kind.name()
            ))
        })
    }

    fn begin_side(&mut self, kind: OpKind, cause: Cause, slot: u64, count: u32) -> SimResult<()> {
        self.crash_point(cause)?;
        self.log_op(
            kind,
            cause,
            PhysAddr {
                track: Track(slot),
                sector: 0,
            },
            count,
        );
        if self.accounting {
            self.serial += 1;
        }
        Ok(())
    }

    /// An injected power loss due before the next operation, if any.
    fn crash_point(&mut self, cause: Cause) -> SimResult<()> {
        if self.accounting && self.crash_points.last() == Some(&self.serial) {
            self.crash_points.pop();
            self.crashed_during = Some(cause);
            self.crashed_in_stage = self.in_stage;
            return Err(SimError::Crash);
        }
        Ok(())
    }

    /// Remember the operation about to be issued (only when data is carried).
    fn log_op(&mut self, kind: OpKind, cause: Cause, at: PhysAddr, count: u32) {
        if self.medium.tracked() {
            if self.op_log.len() == OP_LOG {
                self.op_log.pop_front();
            }
            self.op_log.push_back(OpRecord {
                serial: self.serial,
                kind,
                cause,
                at,
                count,
                start: self.clock,
            });
        }
    }

    /// Read sectors `[offset, offset + n)` of a slot of a side device (tokens
    /// appended to `out` when data is carried). Returns the completion time.
    pub fn side_read(
        &mut self,
        kind: SideKind,
        cause: Cause,
        slot: u64,
        offset: u32,
        n: u32,
        out: &mut Vec<Token>,
    ) -> SimResult<Nanos> {
        self.begin_side(OpKind::SideRead(kind), cause, slot, n)?;
        let (carry, account) = (self.medium.tracked(), self.accounting);
        let t = self
            .side_mut(kind)?
            .read(cause, slot, offset, n, out, carry, account)?;
        if account {
            self.clock += t;
        }
        Ok(self.clock)
    }

    /// Write sectors `[offset, offset + n)` of a slot of a side device with
    /// `data` (empty, or one token per sector) and set the slot's record to
    /// `words`, written with it. Returns the completion time.
    #[allow(clippy::too_many_arguments)]
    pub fn side_write(
        &mut self,
        kind: SideKind,
        cause: Cause,
        slot: u64,
        offset: u32,
        n: u32,
        data: &[Token],
        words: &[u64],
    ) -> SimResult<Nanos> {
        self.begin_side(OpKind::SideWrite(kind), cause, slot, n)?;
        let account = self.accounting;
        let t = self
            .side_mut(kind)?
            .write(cause, slot, offset, n, data, words, account)?;
        if account {
            self.clock += t;
        }
        Ok(self.clock)
    }

    /// Free a slot of a side device (a free-list update in the device's own
    /// metadata: no media time, not a crash point).
    pub fn side_discard(&mut self, kind: SideKind, slot: u64) {
        if let Some(d) = self.side[kind as usize].as_mut() {
            d.discard(slot);
        }
    }

    /// A layer that acknowledges writes before they are durable (a volatile
    /// memory buffer) says here which host data has now reached persistent
    /// storage; the engine tells the verifier.
    pub fn note_durable(&mut self, data: &[Token]) {
        if self.medium.tracked() && self.volatile_memory() {
            if self.has_cached_writes() {
                // In the drive's volatile cache it is not durable yet.
                self.durable_after_drain.extend_from_slice(data);
            } else {
                self.made_durable.extend_from_slice(data);
            }
        }
    }

    /// Whether the system has a memory buffer that a power loss empties: a
    /// layer writing into it acknowledges writes before they are durable.
    pub fn volatile_memory(&self) -> bool {
        self.side(SideKind::Memory).is_some_and(|m| !m.persistent())
    }

    /// The host data made durable since the last call, taken.
    pub fn take_made_durable(&mut self) -> Vec<Token> {
        std::mem::take(&mut self.made_durable)
    }

    /// The drive's geometry: tracks, zones of sectors per track, the layout.
    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }
    /// A shared handle on the geometry, for walking extents while issuing operations.
    pub fn geometry_arc(&self) -> Arc<Geometry> {
        Arc::clone(&self.geom)
    }
    /// The medium (read-only: layers change it only through operations).
    pub fn medium(&self) -> &Medium {
        &self.medium
    }
    /// The mechanics model that times every access: seek curve, rotation,
    /// head switches.
    pub fn mechanics(&self) -> &Mechanics {
        &self.mech
    }
    /// Whether payload tokens are carried (verification on).
    pub fn carries_data(&self) -> bool {
        self.medium.tracked()
    }
    /// The time at which the device finishes its last operation.
    pub fn now(&self) -> Nanos {
        self.clock
    }
    /// Let the device sit idle until `t` (no effect if it is busy past `t`).
    pub fn advance_to(&mut self, t: Nanos) {
        if self.accounting && t > self.clock {
            self.clock = t;
        }
    }
    /// Where the head is: its track, the sector after its last access, and when
    /// that access ended.
    pub fn head(&self) -> HeadState {
        self.head
    }
    /// Physical operations issued since the measurements started.
    pub fn ops_issued(&self) -> u64 {
        self.serial - self.serial_base
    }
    /// The clock when the measurements started (zero unless the run began
    /// with a history: [`Device::start_measuring`]).
    pub fn time_base(&self) -> Nanos {
        self.time_base
    }
    /// Simulated time since the measurements started.
    pub fn elapsed(&self) -> Nanos {
        self.clock.saturating_sub(self.time_base)
    }
    /// Forget everything counted so far: the run's measurements start here.
    /// The engine calls it after a history has brought the drive to its
    /// start state, so that operation numbers (crash points, messages),
    /// elapsed time and every counter (by cause, side devices, the drive's
    /// cache, zone commands) describe the run alone.
    pub fn start_measuring(&mut self) {
        self.reads = Default::default();
        self.writes = Default::default();
        self.stage_write_sectors = 0;
        self.serial_base = self.serial;
        self.time_base = self.clock;
        for s in self.side.iter_mut().flatten() {
            s.reset_counts();
        }
        if let Some(f) = &mut self.front {
            f.counts = Default::default();
        }
        self.medium.zones_mut().reset_counts();
    }
    /// Counters of reads by cause, in [`Cause::ALL`] order.
    pub fn read_counts(&self) -> &[OpCounts] {
        &self.reads
    }
    /// Counters of writes by cause, in [`Cause::ALL`] order.
    pub fn write_counts(&self) -> &[OpCounts] {
        &self.writes
    }
    /// Totals over all causes: (reads, writes).
    pub fn totals(&self) -> (OpCounts, OpCounts) {
        let mut r = OpCounts::default();
        let mut w = OpCounts::default();
        self.reads.iter().for_each(|c| r.add(c));
        self.writes.iter().for_each(|c| w.add(c));
        (r, w)
    }

    /// Crash (power loss) just before the physical operations with these
    /// serials (counted from the start of the measurements).
    pub fn set_crash_points(&mut self, serials: Vec<u64>) {
        let mut serials: Vec<u64> = serials.into_iter().map(|s| s + self.serial_base).collect();
        serials.sort_unstable_by(|a, b| b.cmp(a));
        serials.dedup();
        self.crash_points = serials;
    }

    /// The cause of the operation an injected power loss interrupted, taken
    /// (so the next crash starts afresh).
    pub fn take_crash_cause(&mut self) -> Option<Cause> {
        self.crashed_during.take()
    }

    /// Count the host-cause reads that follow as read-ahead (until switched off).
    pub fn set_reading_ahead(&mut self, on: bool) {
        self.reading_ahead = on;
    }

    /// Mark the work that follows as part of a background stage (or not).
    pub fn set_in_stage(&mut self, on: bool) {
        self.in_stage = on;
    }

    /// Whether the operations now issued belong to a stage of background work.
    pub fn in_stage(&self) -> bool {
        self.in_stage
    }

    /// Sectors written inside stages of background work (moves, cleaning ...), whatever their cause.
    pub fn stage_write_sectors(&self) -> u64 {
        self.stage_write_sectors
    }

    /// Whether the last injected power loss fell inside a stage, taken.
    pub fn take_crash_in_stage(&mut self) -> bool {
        std::mem::take(&mut self.crashed_in_stage)
    }

    /// Turn timing and counting off (verification scans) or back on.
    pub fn set_accounting(&mut self, on: bool) {
        self.accounting = on;
    }

    /// Whether operations are timed and counted (off during verification
    /// scans: a layer must then change nothing a later request would see).
    pub fn accounting(&self) -> bool {
        self.accounting
    }

    /// The most recent physical operations (up to 65,536; kept only when data is carried).
    pub fn recent_ops(&self) -> impl Iterator<Item = &OpRecord> {
        self.op_log.iter()
    }

    /// Describe the operation whose serial's low 32 bits are `op`, if still remembered.
    pub fn describe_op(&self, op: u32) -> String {
        match self.op_log.iter().rev().find(|r| r.serial as u32 == op) {
            Some(r) => format!(
                "physical op #{} ({:?} {} of {} sectors at {} sector {}, t={:.6} s)",
                r.serial.wrapping_sub(self.serial_base) as i64,
                r.kind,
                r.cause.name(),
                r.count,
                r.at.track,
                r.at.sector,
                (r.start.0 as f64 - self.time_base.0 as f64) / 1e9
            ),
            None => format!("physical op #{op} (mod 2^32)"),
        }
    }

    /// Check an operation and log it; its serial number and its track's
    /// sectors (looked up once here: the timing needs them too).
    fn begin(
        &mut self,
        kind: OpKind,
        cause: Cause,
        at: PhysAddr,
        count: u32,
    ) -> SimResult<(u64, u32)> {
        self.crash_point(cause)?;
        let spt = self.geom.sectors_in_checked(at.track)?;
        if matches!(kind, OpKind::Read | OpKind::Write)
            && (count == 0 || at.sector as u64 + count as u64 > spt as u64)
        {
            return Err(SimError::Medium(format!(
                "{:?} of {count} sectors at {} sector {} does not fit the track ({spt} sectors)",
                kind, at.track, at.sector
            )));
        }
        let serial = self.serial;
        self.log_op(kind, cause, at, count);
        if self.accounting {
            self.serial += 1;
        }
        Ok((serial, spt))
    }

    fn time(&mut self, write: bool, cause: Cause, at: PhysAddr, count: u32, spt: u32) -> Nanos {
        if !self.accounting {
            return self.clock;
        }
        let t = self
            .mech
            .access(&self.head, self.clock, at, count, spt, write);
        let mut busy = t.total();
        if write && cause == Cause::Host {
            if let Some(g) = &mut self.write_gate {
                // Each sector must be buffered as it starts to pass; a late
                // one costs whole rotations, and so does every sector after
                // it (they pass that much later at the same angles).
                let first = self.clock + t.seek + t.rotate;
                let late = g.wait(first, self.mech.rotation_time(), spt, count, false);
                g.written += count as u64;
                busy += late;
            }
        }
        if self.noting_reads && !write {
            // A zero-latency whole track is read from wherever the head
            // lands, so its first sector may be the last one buffered:
            // take the whole piece as buffered at its end.
            let first_ready = if count >= spt && self.mech.zero_latency() {
                self.clock + busy
            } else {
                self.clock + t.seek + t.rotate + self.mech.transfer_time(1, spt)
            };
            self.read_pieces.push(ReadPiece {
                first_ready,
                end: self.clock + busy,
                count,
            });
        }
        self.clock += busy;
        let moved = self.head.track != at.track;
        self.head = HeadState {
            track: at.track,
            // A read or write ends on its track (`begin` checked), so the
            // sum is at most `spt`: no division.
            next_sector: crate::mechanics::below_turn(
                u64::from(at.sector + count),
                u64::from(spt.max(1)),
            ) as u32,
            at: self.clock,
        };
        let c = if write {
            &mut self.writes[cause as usize]
        } else {
            &mut self.reads[cause as usize]
        };
        c.ops += 1;
        c.sectors += count as u64;
        c.busy += busy;
        c.seeks += moved as u64;
        if write && self.in_stage {
            self.stage_write_sectors += count as u64;
        }
        self.clock
    }

    /// Read `count` sectors of one track from `at`; their tokens are appended
    /// to `out` when data is carried. Returns the completion time.
    pub fn read(
        &mut self,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        out: &mut Vec<Token>,
    ) -> SimResult<Nanos> {
        let cause = if self.reading_ahead && cause == Cause::Host {
            Cause::ReadAhead
        } else {
            cause
        };
        if self.front.as_ref().is_some_and(|f| f.touches(at.track)) {
            return self.front_read(cause, at, count, out);
        }
        let (_, spt) = self.begin(OpKind::Read, cause, at, count)?;
        self.medium.admit_read(&self.geom, at, count)?;
        self.medium
            .read(&self.geom, at, count, out, self.accounting);
        Ok(self.time(false, cause, at, count, spt))
    }

    /// A read meeting cached writes: from the cache when it holds every
    /// sector, else from the media with the cached sectors laid over.
    fn front_read(
        &mut self,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        out: &mut Vec<Token>,
    ) -> SimResult<Nanos> {
        let tracked = self.medium.tracked();
        let fe = self.front.as_ref().expect("a front end");
        let held = fe.overlay(at, count, &mut []);
        if held == count {
            self.begin(OpKind::Read, cause, at, count)?;
            self.medium.admit_read(&self.geom, at, count)?;
            let fe = self.front.as_mut().expect("a front end");
            let link = fe.link_time(count);
            if self.accounting {
                fe.counts.read_hits += 1;
                fe.counts.read_hit_sectors += count as u64;
                self.clock += link;
            }
            if tracked {
                let start = out.len();
                out.resize(start + count as usize, Token::EMPTY);
                fe.overlay(at, count, &mut out[start..]);
            }
            return Ok(self.clock);
        }
        let (_, spt) = self.begin(OpKind::Read, cause, at, count)?;
        self.medium.admit_read(&self.geom, at, count)?;
        let start = out.len();
        self.medium
            .read(&self.geom, at, count, out, self.accounting);
        if tracked && out.len() == start + count as usize {
            let fe = self.front.as_ref().expect("a front end");
            fe.overlay(at, count, &mut out[start..]);
        }
        if self.accounting {
            if let Some(fe) = self.front.as_mut() {
                fe.counts.read_hit_sectors += held as u64;
            }
        }
        Ok(self.time(false, cause, at, count, spt))
    }

    /// Write `count` sectors of one track from `at` with payload `data` (one
    /// token per sector when data is carried, else empty). Applies the
    /// layout's overlap physics. Returns the completion time.
    pub fn write(
        &mut self,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        data: &[Token],
    ) -> SimResult<Nanos> {
        self.write_with(cause, at, count, data, CachedMeta::None)
    }

    /// A write and the metadata record(s) it carries: to the drive's cache
    /// when a front end is attached (and FUA is off), else to the media.
    fn write_with(
        &mut self,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        data: &[Token],
        meta: CachedMeta,
    ) -> SimResult<Nanos> {
        if self.front.is_some() && self.accounting {
            return self.front_write(cause, at, count, data, meta);
        }
        self.media_write(cause, at, count, data, meta)
    }

    /// A write to the media now, with its zone check.
    fn media_write(
        &mut self,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        data: &[Token],
        meta: CachedMeta,
    ) -> SimResult<Nanos> {
        let (serial, spt) = self.begin(OpKind::Write, cause, at, count)?;
        self.medium.admit_write(&self.geom, at, count)?;
        self.medium.write(&self.geom, at, count, data, serial);
        if let Some(list) = self.put_cached_meta(at, meta) {
            self.spare_meta_lists.push(list);
        }
        Ok(self.time(true, cause, at, count, spt))
    }

    /// Put a write's records on the medium; returns an emptied per-sector
    /// list for reuse.
    fn put_cached_meta(&mut self, at: PhysAddr, meta: CachedMeta) -> Option<Vec<Vec<u64>>> {
        match meta {
            CachedMeta::None => None,
            CachedMeta::Head(n, words) => {
                self.medium.put_meta(at, n, words);
                None
            }
            CachedMeta::PerSector(mut v) => {
                for (k, words) in v.drain(..).enumerate() {
                    self.put_sector_meta(at, k as u32, words);
                }
                Some(v)
            }
        }
    }

    /// Sector `k` after `at` carries its own record `words`.
    fn put_sector_meta(&mut self, at: PhysAddr, k: u32, words: Vec<u64>) {
        let a = PhysAddr {
            track: at.track,
            sector: at.sector + k,
        };
        self.medium.put_meta(a, 1, words);
    }

    /// The sequential zone a write at `at` falls in, on a zoned drive.
    fn seq_zone(&self, at: PhysAddr) -> Option<u64> {
        let z = self.medium.zones();
        if !z.is_zoned() {
            return None;
        }
        let lba = self.geom.home_lba(at)?.0;
        let zone = z.zone_of(lba);
        (zone >= z.conventional()).then_some(zone)
    }

    /// A write through the front end: cached, or (FUA, or larger than the
    /// cache) to the media after the cached writes it must follow.
    fn front_write(
        &mut self,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        data: &[Token],
        meta: CachedMeta,
    ) -> SimResult<Nanos> {
        let zone = self.seq_zone(at);
        let fe = self.front.as_ref().expect("a front end");
        if self.fua || !fe.cacheable(count) {
            if let Some(i) = fe.last_conflict(&self.geom, at, count, zone) {
                for _ in 0..=i {
                    self.destage_at(0)?;
                }
            }
            if let Some(fe) = self.front.as_mut() {
                fe.counts.write_through_ops += 1;
            }
            return self.media_write(cause, at, count, data, meta);
        }
        self.begin(OpKind::Write, cause, at, count)?;
        self.medium.admit_write(&self.geom, at, count)?;
        while !self.front.as_ref().is_some_and(|f| f.fits(count)) {
            self.destage_next()?;
            if let Some(fe) = self.front.as_mut() {
                fe.counts.destaged_for_room += 1;
            }
        }
        let lba = self.geom.home_lba(at).map(|l| l.0);
        let fe = self.front.as_mut().expect("a front end");
        let link = fe.link_time(count);
        let mut d = fe.data_buf();
        d.extend_from_slice(data);
        fe.absorb(Pending {
            cause,
            at,
            count,
            data: d,
            meta,
            zone,
            lba,
        });
        self.clock += link;
        Ok(self.clock)
    }

    /// Destage cached write `i` of the queue to the media.
    fn destage_at(&mut self, i: usize) -> SimResult<()> {
        let (cause, at, count) = {
            let p = &self.front.as_ref().expect("a front end").pending_at(i);
            (p.cause, p.at, p.count)
        };
        // The crash point comes before the write leaves the queue: a power
        // loss here loses it with the rest of the cache.
        let (serial, spt) = self.begin(OpKind::Write, cause, at, count)?;
        let p = self.front.as_mut().expect("a front end").take(i);
        self.medium.write(&self.geom, at, count, &p.data, serial);
        if let Some(list) = self.put_cached_meta(at, p.meta) {
            self.spare_meta_lists.push(list);
        }
        if let Some(fe) = self.front.as_mut() {
            fe.recycle(p.data);
        }
        self.time(true, cause, at, count, spt);
        if self.front.as_ref().is_some_and(|f| f.is_empty()) && !self.durable_after_drain.is_empty()
        {
            let d = std::mem::take(&mut self.durable_after_drain);
            self.made_durable.extend(d);
        }
        Ok(())
    }

    /// Destage the cached write the queue's policy picks next; false when
    /// nothing is cached.
    pub fn destage_next(&mut self) -> SimResult<bool> {
        let Some(fe) = self.front.as_ref() else {
            return Ok(false);
        };
        let Some(i) = fe.pick(&self.geom, &self.mech, &self.head, self.clock) else {
            return Ok(false);
        };
        self.destage_at(i)?;
        Ok(true)
    }

    /// FLUSH CACHE: every cached write to the media, in the queue's order.
    /// Returns the completion time.
    pub fn flush(&mut self) -> SimResult<Nanos> {
        if self.front.is_none() || !self.flush_commands {
            return Ok(self.clock);
        }
        self.drain()?;
        if let Some(fe) = self.front.as_mut() {
            fe.counts.flushes += 1;
        }
        Ok(self.clock)
    }

    /// Destage everything cached (the engine at the end of a run: no
    /// command of the layer's, so `flush_commands` does not apply).
    pub fn drain(&mut self) -> SimResult<Nanos> {
        while self.destage_next()? {}
        Ok(self.clock)
    }

    /// Whether the layer's FLUSH CACHE commands reach the drive (on unless
    /// a layer chooses otherwise; a power loss turns them back on).
    pub fn set_flush_commands(&mut self, on: bool) {
        self.flush_commands = on;
    }

    /// Destage cached writes while the drive is idle until `until` (the
    /// write under way finishes).
    pub fn destage_idle(&mut self, until: Nanos) -> SimResult<()> {
        while self.clock < until && self.destage_next()? {}
        Ok(())
    }

    /// Writes issued while `on` bypass the drive's cache (FORCE UNIT ACCESS).
    pub fn set_fua(&mut self, on: bool) {
        self.fua = on;
    }

    /// Put the drive's own cache and queue beneath the layer (host-side layers).
    pub fn attach_front_end(&mut self, fe: QueuedCache) {
        self.front = Some(fe);
    }

    /// The drive's front end, if attached.
    pub fn front_end(&self) -> Option<&QueuedCache> {
        self.front.as_ref()
    }

    /// Whether the drive's cache holds writes not yet on the media.
    pub fn has_cached_writes(&self) -> bool {
        self.front.as_ref().is_some_and(|f| !f.is_empty())
    }

    /// An empty buffer for the words of a metadata record of about `n`
    /// words, reused from a record the medium lost (pass it to
    /// [`write_meta`](Self::write_meta): a layer writing a record per write
    /// then allocates none).
    pub fn meta_words(&mut self, n: usize) -> Vec<u64> {
        self.medium.meta_words(n)
    }

    /// Write `count` sectors from `at` holding a layer metadata record
    /// (`words`) and, when data is carried, `data` tokens (empty or one per
    /// sector: a record may carry saved host data after its header). The record
    /// survives power loss until any of its sectors is overwritten or damaged.
    pub fn write_meta(
        &mut self,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        data: &[Token],
        words: Vec<u64>,
    ) -> SimResult<Nanos> {
        self.write_with(cause, at, count, data, CachedMeta::Head(count, words))
    }

    /// One timed write of `count` sectors from `at` whose first `meta_sectors`
    /// sectors hold a metadata record (`words`); the sectors after them hold
    /// data that later writes may overwrite without losing the record.
    pub fn write_meta_head(
        &mut self,
        cause: Cause,
        at: PhysAddr,
        count: u32,
        data: &[Token],
        meta_sectors: u32,
        words: Vec<u64>,
    ) -> SimResult<Nanos> {
        self.write_with(
            cause,
            at,
            count,
            data,
            CachedMeta::Head(meta_sectors.min(count), words),
        )
    }

    /// The tokens of sectors already read in a timed operation (no timing,
    /// no counting): for layers that read a whole track once and then pick
    /// pieces of it.
    pub fn peek_sectors(&self, at: PhysAddr, count: u32, out: &mut Vec<Token>) {
        let start = out.len();
        self.medium.peek_into(&self.geom, at, count, out);
        if let Some(fe) = &self.front {
            if out.len() == start + count as usize {
                fe.overlay(at, count, &mut out[start..]);
            }
        }
    }

    /// What one sector holds (tests and diagnostics; no timing).
    pub fn peek(&self, at: PhysAddr) -> Token {
        self.medium.peek(&self.geom, at)
    }

    /// Whether physical track `t` holds data from the drive's starting state
    /// (a prefilled drive): layers treat such tracks as written.
    #[inline]
    pub fn prefilled(&self, t: Track) -> bool {
        self.medium.prefilled(t)
    }

    /// Set the medium's starting state (before the first operation; costs no time).
    pub fn set_prefill(&mut self, prefill: crate::medium::prefill::Prefill) {
        let geom = Arc::clone(&self.geom);
        self.medium.set_prefill(&geom, prefill);
    }

    /// The intact metadata records on a track (what a read of the track would
    /// find; the caller times that read itself).
    pub fn meta_records(&self, t: Track) -> Vec<crate::medium::MetaRecord> {
        self.medium.meta_records(t)
    }

    /// RESET WRITE POINTER of a sequential zone: rewind it and empty its
    /// sectors. Costs no media time (see [`zones`](crate::medium::zones)).
    pub fn reset_zone(&mut self, cause: Cause, zone: u64) -> SimResult<()> {
        self.begin(
            OpKind::ResetZone,
            cause,
            PhysAddr {
                track: Track(0),
                sector: 0,
            },
            0,
        )?;
        if let Some(fe) = self.front.as_mut() {
            fe.drop_zone(zone);
        }
        self.medium.zones_mut().reset(zone)?;
        let geom = Arc::clone(&self.geom);
        self.medium.empty_zone(&geom, zone);
        Ok(())
    }

    /// FINISH ZONE: the zone becomes full (its unwritten sectors stay empty).
    pub fn finish_zone(&mut self, cause: Cause, zone: u64) -> SimResult<()> {
        self.begin(
            OpKind::FinishZone,
            cause,
            PhysAddr {
                track: Track(0),
                sector: 0,
            },
            0,
        )?;
        self.medium.zones_mut().finish(zone)
    }

    /// OPEN ZONE (explicitly).
    pub fn open_zone(&mut self, zone: u64) -> SimResult<()> {
        self.medium.zones_mut().open(zone)
    }

    /// CLOSE ZONE: an open zone becomes closed (empty if it holds nothing); no
    /// media time.
    pub fn close_zone(&mut self, zone: u64) -> SimResult<()> {
        self.medium.zones_mut().close(zone)
    }

    /// REPORT ZONES: up to `max` zones from `from`.
    pub fn report_zones(&mut self, from: u64, max: u64) -> Vec<crate::medium::zones::ZoneInfo> {
        self.medium.zones_mut().report(from, max)
    }

    /// One zone's state as REPORT ZONES would give it (no command counted:
    /// a host layer keeps this in memory once it has reported the zones).
    pub fn zone_info(&self, zone: u64) -> crate::medium::zones::ZoneInfo {
        self.medium.zones().info(zone)
    }

    /// Zone-management commands issued so far.
    pub fn zone_counts(&self) -> crate::medium::zones::ZoneOpCounts {
        self.medium.zones().counts()
    }

    /// A power loss as the drive sees it: open zones are closed.
    pub fn power_cycle(&mut self) {
        if let Some(fe) = self.front.as_mut() {
            for (z, first) in fe.power_loss() {
                self.medium.zones_mut().roll_back(z, first);
            }
        }
        self.fua = false;
        self.flush_commands = true;
        self.durable_after_drain.clear();
        self.medium.zones_mut().power_cycle();
        self.made_durable.clear();
        for d in self.side.iter_mut().flatten() {
            d.power_cycle();
        }
    }

    /// Write `n` sectors of host-visible LBA space from `lba` as one command:
    /// the zone rules are checked for the whole command (a command that is
    /// not at the write pointer or crosses a zone's end fails before any
    /// sector is written, as on a ZBC drive), then it is issued track by track.
    pub fn write_lbas(
        &mut self,
        cause: Cause,
        lba: Lba,
        n: Sectors,
        data: &[Token],
    ) -> SimResult<Nanos> {
        self.write_command(cause, lba, n, data, None)
    }

    /// Attach one metadata record to sectors `[lba, lba + n)` of one track
    /// (just written by the caller).
    pub fn tag_range(&mut self, lba: Lba, n: Sectors, words: Vec<u64>) {
        let at = self.geom.home(lba);
        // Still in the drive's cache: the record travels with the write.
        if let Some(fe) = self.front.as_mut() {
            if fe.attach_meta(at, n.0 as u32, &words) {
                return;
            }
        }
        self.medium.put_meta(at, n.0 as u32, words);
    }

    /// The intact metadata records starting in drive LBAs `[lba, lba + n)`,
    /// with the LBA each starts at (what reads of the range would find; the
    /// caller times those reads itself).
    pub fn meta_records_in(&self, lba: Lba, n: Sectors) -> Vec<(Lba, Vec<u64>)> {
        let mut out = vec![];
        self.geom.for_home_extents(lba, n, |at, count, l| {
            for r in self.medium.meta_records(at.track) {
                if r.sector >= at.sector && r.sector < at.sector + count {
                    out.push((Lba(l.0 + (r.sector - at.sector) as u64), r.words));
                }
            }
        });
        out
    }

    /// [`write_lbas`](Self::write_lbas) where every sector carries its own
    /// out-of-band record, `tag(lba, words)` appending its words to an
    /// empty buffer (a lost record's: no allocation per sector in steady
    /// state), written with it: a power loss part way through the command
    /// leaves the sectors already written with their records, as a drive
    /// writes a sector and its metadata together.
    /// `words` is about how many words a record has (the size of buffer it gets).
    pub fn write_lbas_tagged(
        &mut self,
        cause: Cause,
        lba: Lba,
        n: Sectors,
        data: &[Token],
        words: usize,
        mut tag: impl FnMut(Lba, &mut Vec<u64>),
    ) -> SimResult<Nanos> {
        self.write_command(cause, lba, n, data, Some((words, &mut tag)))
    }

    fn write_command(
        &mut self,
        cause: Cause,
        lba: Lba,
        n: Sectors,
        data: &[Token],
        mut tag: Option<Tagger>,
    ) -> SimResult<Nanos> {
        self.medium.zones().check_write(lba.0, n.0)?;
        let mut res = self.clock;
        let mut walk = HomeExtents::new(lba, n);
        while let Some((at, count, l)) = walk.next(&self.geom) {
            let d = if data.is_empty() {
                &[][..]
            } else {
                &data[(l.0 - lba.0) as usize..][..count as usize]
            };
            if self.front.is_none() || !self.accounting {
                // Straight to the media, each sector's record put as it is
                // made (the common case: no list built).
                res = self.media_write(cause, at, count, d, CachedMeta::None)?;
                if let Some((n, tag)) = tag.as_mut() {
                    for k in 0..count {
                        let mut words = self.medium.meta_words(*n);
                        tag(Lba(l.0 + k as u64), &mut words);
                        self.put_sector_meta(at, k, words);
                    }
                }
                continue;
            }
            let meta = match tag.as_mut() {
                Some((n, tag)) => {
                    // A list kept between commands (no allocation per command).
                    let mut v = self.spare_meta_lists.pop().unwrap_or_default();
                    for k in 0..count {
                        let mut words = self.medium.meta_words(*n);
                        tag(Lba(l.0 + k as u64), &mut words);
                        v.push(words);
                    }
                    CachedMeta::PerSector(v)
                }
                None => CachedMeta::None,
            };
            res = self.write_with(cause, at, count, d, meta)?;
        }
        Ok(res)
    }

    /// Read `n` sectors of host-visible LBA space from `lba` as one command
    /// (checked against the zone rules first), track by track.
    pub fn read_lbas(
        &mut self,
        cause: Cause,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<Nanos> {
        self.medium.zones().admit_read(lba.0, n.0)?;
        let mut res = self.clock;
        let mut walk = HomeExtents::new(lba, n);
        while let Some((at, count, _)) = walk.next(&self.geom) {
            res = self.read(cause, at, count, out)?;
        }
        Ok(res)
    }
}

impl Geometry {
    /// Sectors on a track, or an error for a track past the end.
    #[inline]
    pub fn sectors_in_checked(&self, t: Track) -> SimResult<u32> {
        if t.0 >= self.tracks() {
            return Err(self.past_the_end(t));
        }
        Ok(self.sectors_in(t))
    }

    /// The error for an operation on a track past the last one (kept out of
    /// line: every device operation checks).
    #[cold]
    fn past_the_end(&self, t: Track) -> SimError {
        SimError::Medium(format!(
            "{t} is past the last track ({})",
            self.tracks() - 1
        ))
    }
}

#[cfg(test)]
mod write_gate_tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 5000, ..Default::default() })]
        /// Skipping the sectors when both ends are on time never misses a
        /// late one: the result is the sector-by-sector walk's, on drives
        /// whose link is slower or faster than the media, near and far.
        #[test]
        fn the_shortcut_gives_the_walks_wait(
            start in 0u64..50_000_000,
            ns_per_block in 1.0f64..400_000.0,
            written in 0u64..600,
            first in 0u64..60_000_000,
            turn in 1u64..20_000_000,
            spt in 1u32..1_000,
            count in 0u32..1_000,
            whole in proptest::bool::ANY,
        ) {
            // Half the cases a whole number of nanoseconds a block, as
            // DiskSim's block times in tenths of microseconds are.
            let ns_per_block = if whole { ns_per_block.ceil() } else { ns_per_block };
            let g = WriteGate { start: Nanos(start), ns_per_block, written };
            let (first, turn) = (Nanos(first), Nanos(turn));
            proptest::prop_assert_eq!(
                g.wait(first, turn, spt, count, false),
                g.wait(first, turn, spt, count, true)
            );
        }
    }
}

#[cfg(test)]
mod mechanics_tests {
    //! Multi-track commands on a drive with surfaces, head switch, settle
    //! and skew: the device splits a command per track, and each piece is
    //! timed from where the previous one left the head.
    use super::*;
    use crate::drive::DriveConfig;
    use crate::geometry::ZoneSpec;
    use crate::mechanics::SeekConfig;

    /// 6,000 RPM (10 ms a turn), 100 sectors a track (100,000 ns a sector),
    /// one-cylinder seek 1.5 ms, head switch 0.5 ms, 200 tracks.
    fn dev(surfaces: u64, track_skew: u32, cyl_skew: u32, settle_ms: f64) -> Device {
        dev_zl(surfaces, track_skew, cyl_skew, settle_ms, true)
    }

    fn dev_zl(
        surfaces: u64,
        track_skew: u32,
        cyl_skew: u32,
        settle_ms: f64,
        zero_latency: bool,
    ) -> Device {
        let d = DriveConfig {
            zero_latency,
            sector_bytes: 512,
            rpm: 6000.0,
            rotation: crate::mechanics::Rotation::Angular,
            surfaces,
            head_switch_ms: 0.5,
            write_settle_ms: settle_ms,
            seek: SeekConfig {
                model: "table".into(),
                table: vec![(1, 1.5), (100, 11.4)],
                ..Default::default()
            },
            zones: vec![ZoneSpec {
                first_track: 0,
                sectors_per_track: 100,
                track_skew_sectors: track_skew,
                cylinder_skew_sectors: cyl_skew,
                ..Default::default()
            }],
            tracks: Some(200),
            capacity_gib: None,
            ..Default::default()
        };
        let g = d.geometry().unwrap();
        let m = d.mechanics(g.tracks()).unwrap();
        Device::new(g, m, false)
    }

    #[test]
    fn a_read_crossing_onto_the_next_cylinder_lands_per_the_skew() {
        // LBAs 150..230: track 1 (cylinder 0, surface 1) sectors 50..100,
        // then track 2 (cylinder 1, surface 0) sectors 0..30.
        // Skewed (track 10, cylinder 20 sectors): the head (track 0, t = 0)
        // switches surface, 500,000; track 1's sector 50 is at (10 + 50)/100
        // of a turn, 6,000,000: wait 5,500,000; 50 sectors 5,000,000; the
        // piece ends at 11,000,000. Then max(seek 1,500,000, switch 500,000)
        // to 12,500,000 (angle 2,500,000); track 2's sector 0 is at
        // (10 + 20)/100, 3,000,000: wait 500,000; 30 sectors 3,000,000.
        // Done at 16,000,000.
        let mut d = dev(2, 10, 20, 0.0);
        let t = d.read_lbas(Cause::Host, Lba(150), Sectors(80), &mut vec![]);
        assert_eq!(t.unwrap(), Nanos(16_000_000));
        // Unskewed: wait 4,500,000 for sector 50 (5,000,000), end at
        // 10,000,000; arrive on track 2 at 11,500,000 (angle 1,500,000)
        // just after its sector 0 passed: wait 8,500,000, then 3,000,000.
        let mut d = dev(2, 0, 0, 0.0);
        let t = d.read_lbas(Cause::Host, Lba(150), Sectors(80), &mut vec![]);
        assert_eq!(t.unwrap(), Nanos(23_000_000));
    }

    #[test]
    fn lbas_fill_a_cylinder_before_the_arm_moves() {
        // 400 LBAs = tracks 0..4, whole tracks (zero latency, 10 ms each).
        // Two surfaces: tracks 0,1 are cylinder 0 and 2,3 cylinder 1, so
        // the moves are a head switch, a one-cylinder seek, a head switch:
        // 40 + 0.5 + 1.5 + 0.5 = 42.5 ms.
        let mut d = dev(2, 0, 0, 0.0);
        let t = d.read_lbas(Cause::Host, Lba(0), Sectors(400), &mut vec![]);
        assert_eq!(t.unwrap(), Nanos(42_500_000));
        // One surface: every track is a cylinder, three 1.5 ms seeks: 44.5 ms.
        let mut d = dev(1, 0, 0, 0.0);
        let t = d.read_lbas(Cause::Host, Lba(0), Sectors(400), &mut vec![]);
        assert_eq!(t.unwrap(), Nanos(44_500_000));
        // Writing them adds the 0.07 ms settle after each of the three moves.
        let mut d = dev(2, 0, 0, 0.07);
        let t = d.write_lbas(Cause::Host, Lba(0), Sectors(400), &[]);
        assert_eq!(t.unwrap(), Nanos(42_710_000));
        // Each move counts as a seek (to another track), all three.
        assert_eq!(d.totals().1.seeks, 3);
    }

    #[test]
    fn without_zero_latency_whole_tracks_wait_for_their_skewed_first_sector() {
        // LBAs 0..300: whole tracks 0 (cylinder 0, surface 0), 1 (surface 1)
        // and 2 (cylinder 1, surface 0), 10 ms each; the head starts on
        // track 0 at t = 0, so the first one continues without a wait.
        // Zero-latency (the default): 10 + 0.5 + 10 + 1.5 + 10 = 32 ms.
        let mut d = dev(2, 10, 20, 0.0);
        let t = d.read_lbas(Cause::Host, Lba(0), Sectors(300), &mut vec![]);
        assert_eq!(t.unwrap(), Nanos(32_000_000));
        // Not zero-latency, skewed: track 1's sector 0 is at 10 sectors,
        // 1 ms; the head switch lands at 10.5 ms (angle 0.5 ms): wait 0.5,
        // end at 21 ms. Track 2's sector 0 is at 30 sectors, 3 ms; the seek
        // lands at 22.5 (angle 2.5): wait 0.5, end at 33 ms.
        let mut d = dev_zl(2, 10, 20, 0.0, false);
        let t = d.read_lbas(Cause::Host, Lba(0), Sectors(300), &mut vec![]);
        assert_eq!(t.unwrap(), Nanos(33_000_000));
        // Not zero-latency, unskewed: each switch misses sector 0 and waits
        // 9.5 and 8.5 ms: 10 + 0.5 + 9.5 + 10 + 1.5 + 8.5 + 10 = 50 ms.
        let mut d = dev_zl(2, 0, 0, 0.0, false);
        let t = d.read_lbas(Cause::Host, Lba(0), Sectors(300), &mut vec![]);
        assert_eq!(t.unwrap(), Nanos(50_000_000));
    }
}
