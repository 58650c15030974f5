//! Host-side persistent buffers on a host-managed SMR drive (paper 004,
//! Zhang et al., "Amphisbaena", sections 2.2-2.3 and 6.1): what the four
//! buffer layers (`hm-fluid`, `hm-fluid-loop`, `hm-skylight`, `amphisbaena`)
//! share. The translation runs on the host; the drive only enforces its zone
//! rules ([`crate::medium::zones`]), so every write into a sequential zone
//! here is at that zone's write pointer, through real zone commands.
//!
//! * **Address space.** Host block `h` lives in *native zone* `h / Z` at
//!   offset `h % Z` (Z = sectors per zone; one sector is one 4 KiB block on
//!   the paper's drive). Native zones are the drive's sequential zones in
//!   order, less `spare_zones` at the end; the conventional (CMR) zones hold
//!   the buffer and its metadata and are outside the host's space.
//! * **The buffer** is `slots` blocks of conventional space. Which slot a
//!   block goes to is the policy of each layer ([`Placement`]).
//! * **Zone write-back** ([`WriteBack`]), shared by all four layers: collect
//!   the victim blocks from the buffer (in stages of `collect_blocks`), then
//!   either *RMW-free* — every victim lies at or after the native zone's
//!   write pointer: append from the pointer, padding the gaps between
//!   victims — or *RMW* — read the zone's valid data, merge, write the
//!   merged zone image, reset. Padding sectors are written with the
//!   `padding` cause and counted.
//! * **Crash consistency** (the paper leaves it out of scope, section 5.4;
//!   we do not): every buffer block carries its host LBA and a sequence
//!   number as out-of-band metadata of its own sector (modelled as the
//!   sector's metadata: a host implementation would pack these 16 bytes into
//!   a header, which this model does not charge); a small metadata log in
//!   conventional space records each write-back's freed slots and zone
//!   remapping, with a checkpoint (zone map + bitmap of valid slots) each
//!   time the log wraps. Recovery reads the log, the checkpoints and the
//!   whole buffer, and keeps, for each LBA, the newest slot not freed after
//!   it was written.
//! * **RMW without a window of loss.** Resetting a native zone before its
//!   merged image is on the medium would lose the zone's data to a power
//!   failure. So the merged image is written to a *spare* sequential zone,
//!   the remapping is committed in the log, and only then is the old zone
//!   reset; it becomes the spare (Linux dm-zoned's reclaim works the same
//!   way). The I/O is the paper's (one zone read, one zone write, one
//!   reset); only the physical zone changes.
//! * **Stages and waiting.** A write-back is background work run in
//!   stages ([`super::background`]); it is overdue as soon as it starts (a
//!   write is waiting for room), and a host write to the victim's native
//!   zone waits for it. Amphisbaena's GC may stop collecting at a stage
//!   boundary when a queued write targets the victim zone (section 5.3).
//! * **The drive's own cache beneath** (host software; paper 004 turns the
//!   cache off, so this applies only when a run turns it on): a write is
//!   flushed before it is acknowledged; log records and checkpoints are
//!   written after a flush with FORCE UNIT ACCESS; a zone reset and a write
//!   into a slot freed while the drive still caches writes wait for a flush.

pub mod amphisbaena;
pub mod fluid;
pub mod skylight;

use crate::device::{Cause, Device};
use crate::error::{config_err, SimError, SimResult};
use crate::geometry::{Geometry, Layout};
use crate::layers::{LayerReport, ParamKind, ParamSpec, Params, QueueView, StageOutcome};
use crate::medium::Token;
use crate::units::{Lba, Sectors};
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;

const SLOT_MAGIC: u64 = 0x484d_534c_4f54_3031; // "HMSLOT01"
const LOG_MAGIC: u64 = 0x484d_4c4f_4752_4331; // "HMLOGRC1"
const CKPT_MAGIC: u64 = 0x484d_434b_5054_3031; // "HMCKPT01"
const FREE: u64 = u64::MAX;
/// Sectors of the metadata log ring.
const LOG_SECTORS: u64 = 256;

/// Parameters every buffer layer has.
pub const COMMON_PARAMS: [ParamSpec; 4] = [
    ParamSpec {
        name: "buffer_percent",
        kind: ParamKind::Float,
        unit: "%",
        default: "1.0",
        doc: "buffer size as a percentage of the trace's maximum access range (paper 004 section 6.1: 1 %)",
    },
    ParamSpec {
        name: "buffer_mib",
        kind: ParamKind::Float,
        unit: "MiB",
        default: "0",
        doc: "absolute buffer size (0: use buffer_percent of the trace's access range)",
    },
    ParamSpec {
        name: "spare_zones",
        kind: ParamKind::Int,
        unit: "zones",
        default: "1",
        doc: "sequential zones kept outside the host space to receive merged zone images (RMW without a window of loss)",
    },
    ParamSpec {
        name: "collect_blocks",
        kind: ParamKind::Int,
        unit: "blocks",
        default: "256",
        doc: "victim blocks collected from the buffer per stage of a write-back (1 MiB of 4 KiB blocks)",
    },
];

/// The drive's zones as the host sees them: native zones, their physical
/// zones and the spares.
#[derive(Clone, Debug)]
pub struct ZoneMap {
    /// Sectors per zone, the same for every zone (`Geometry::zone_sectors`); one
    /// sector is one buffer block.
    pub zone_sectors: u64,
    /// Conventional zones at the start of the drive (the layout's `conventional`
    /// key, at least 1): they hold the buffer and its metadata, not host data.
    pub conventional: u64,
    /// Native (host) zones.
    pub natives: u64,
    /// Physical zone of each native zone.
    pub phys: Vec<u32>,
    /// Sequential zones no native zone is mapped to (`spare_zones` of them): a
    /// read-modify-write write-back rewrites its zone into the first, and the old zone becomes one.
    pub spares: Vec<u64>,
    /// Bytes per sector (one sector is one buffer block).
    pub sector_bytes: u64,
}

impl ZoneMap {
    /// The map for a geometry, keeping `spares` sequential zones back.
    pub fn new(geom: &Geometry, spares: u64) -> SimResult<ZoneMap> {
        let Layout::Zoned { conventional, .. } = geom.layout() else {
            return config_err("host-managed buffer layers need a drive with the 'zoned' layout");
        };
        let zs = geom.zone_sectors().unwrap_or(0);
        let zones = geom.capacity().0 / zs.max(1);
        if conventional == 0 {
            return config_err("host-managed buffer layers need conventional zones for the buffer (conventional_zones >= 1)");
        }
        if zones <= conventional + spares {
            return config_err(format!(
                "the drive has {zones} whole zones, {conventional} of them conventional: no sequential zone is left for the host after {spares} spare(s)"
            ));
        }
        let natives = zones - conventional - spares;
        Ok(ZoneMap {
            zone_sectors: zs,
            conventional,
            natives,
            phys: (0..natives).map(|n| (conventional + n) as u32).collect(),
            spares: (conventional + natives..zones).collect(),
            sector_bytes: geom.sector_bytes() as u64,
        })
    }
    /// Host-visible sectors: the native zones' (conventional and spare zones are
    /// the layer's own).
    pub fn host_sectors(&self) -> u64 {
        self.natives * self.zone_sectors
    }
    /// Conventional sectors (buffer and metadata).
    pub fn conventional_sectors(&self) -> u64 {
        self.conventional * self.zone_sectors
    }
    /// Native zone and offset of host block `h`.
    pub fn split(&self, h: u64) -> (u64, u64) {
        (h / self.zone_sectors, h % self.zone_sectors)
    }
    /// First drive LBA of native zone `nz`'s physical zone.
    pub fn phys_start(&self, nz: u64) -> u64 {
        self.phys[nz as usize] as u64 * self.zone_sectors
    }
    /// The native zone's write pointer, as an offset into the zone.
    pub fn wp_off(&self, dev: &Device, nz: u64) -> u64 {
        let z = self.phys[nz as usize] as u64;
        dev.medium()
            .write_pointer(z)
            .map(|w| w.0 - z * self.zone_sectors)
            .unwrap_or(0)
    }
    /// Reserved home ranges: conventional zones and the spares.
    pub fn reserved(&self) -> Vec<(Lba, Sectors)> {
        let spare_start = (self.conventional + self.natives) * self.zone_sectors;
        vec![
            (Lba(0), Sectors(self.conventional_sectors())),
            (
                Lba(spare_start),
                Sectors(self.spares.len() as u64 * self.zone_sectors),
            ),
        ]
    }
}

/// Counters every buffer layer reports (paper 004 section 6.2's metrics).
#[derive(Clone, Debug, Default)]
pub struct BufferCounts {
    /// Host blocks (sectors) placed in the buffer by writes, write hits included,
    /// since the run started (the report's `blocks_written`).
    pub blocks_written: u64,
    /// Host blocks written that were already buffered (write hits).
    pub write_hits: u64,
    /// Zone write-backs needing a read-modify-write.
    pub rmw: u64,
    /// Zone write-backs appended at the write pointer.
    pub rmw_free: u64,
    /// Victim blocks written back.
    pub victim_blocks: u64,
    /// Sectors of empty data written during write-backs to fill a native zone from
    /// its write pointer up to the next buffered block (cause `padding`).
    pub padding_sectors: u64,
    /// Write-backs cut short by a queued write to the victim zone.
    pub collections_aborted: u64,
    /// Blocks moved inside the buffer (loops, evictions into chunks).
    pub moved_blocks: u64,
    /// Checkpoints (zone map and slot bitmap) written to the conventional zones:
    /// one each time the metadata log fills, and one after each recovery.
    pub checkpoints: u64,
    /// Slots found valid by recovery.
    pub recovered_blocks: u64,
}

/// The buffer's contents: which host block each slot holds, and the
/// persistence of that knowledge (slot records, metadata log, checkpoints).
#[derive(Debug)]
pub struct Buffer {
    /// Native, conventional and spare zones, and the physical zone of each native
    /// zone (changed by each read-modify-write write-back's commit and by recovery).
    pub zones: ZoneMap,
    /// First drive LBA of slot 0.
    pub slot_base: u64,
    /// The buffer's size in blocks (one block is one sector): slot `s` lies at
    /// drive LBA `slot_base + s`.
    pub slots: u64,
    /// Host block held by each slot ([`FREE`] if none).
    owner: Vec<u64>,
    /// A policy's tag for each slot (which part of the buffer wrote it), kept in its record.
    aux: Vec<u8>,
    /// Padding sectors below each native zone's write pointer (volatile; 0 after a crash).
    zone_padding: FxHashMap<u64, u64>,
    /// Slot of each buffered host block.
    index: FxHashMap<u64, u32>,
    /// Buffered offsets of each native zone (their slots are `index`'s).
    by_zone: FxHashMap<u64, ZoneBlocks>,
    /// Offset lists of zones that emptied, reused for zones that fill.
    spare_offsets: Vec<Vec<u32>>,
    /// Slots freed in memory since the last log record.
    pending_free: SlotSet,
    /// Slots freed since the drive's cache was last seen empty: the newer
    /// copy of what they held may still be in that volatile cache, so a
    /// write into one waits for a flush.
    freed_unflushed: Vec<u32>,
    /// Their runs, for a log record (reused list).
    runs: Vec<(u32, u32)>,
    seq: u64,
    log_gen: u64,
    log_pos: u64,
    ckpt_sectors: u64,
    ckpt_next: u64,
    /// What the buffer has done since the run started (paper 004 section 6.2's
    /// metrics), reported by [`Buffer::report`].
    pub counts: BufferCounts,
}

impl Buffer {
    /// A buffer of `buffer_sectors` on the drive's conventional zones.
    pub fn new(zones: ZoneMap, buffer_sectors: u64, sector_bytes: u64) -> SimResult<Buffer> {
        let words_per_sector = sector_bytes / 8;
        let ckpt_words = 4 + zones.natives.div_ceil(2) + buffer_sectors.div_ceil(64);
        let ckpt_sectors = ckpt_words.div_ceil(words_per_sector).max(1);
        let slot_base = LOG_SECTORS + 2 * ckpt_sectors;
        let room = zones.conventional_sectors().saturating_sub(slot_base);
        if buffer_sectors == 0 {
            return config_err(
                "the buffer must hold at least one block (buffer_mib or buffer_percent too small)",
            );
        }
        if buffer_sectors > room {
            return config_err(format!(
                "a buffer of {buffer_sectors} blocks does not fit the drive's conventional zones ({room} blocks after the metadata)"
            ));
        }
        Ok(Buffer {
            zones,
            slot_base,
            slots: buffer_sectors,
            owner: vec![FREE; buffer_sectors as usize],
            aux: vec![0; buffer_sectors as usize],
            zone_padding: FxHashMap::default(),
            index: FxHashMap::default(),
            by_zone: FxHashMap::default(),
            spare_offsets: vec![],
            pending_free: SlotSet::new(buffer_sectors),
            freed_unflushed: vec![],
            runs: vec![],
            seq: 1,
            log_gen: 1,
            log_pos: 0,
            ckpt_sectors,
            ckpt_next: 0,
            counts: BufferCounts::default(),
        })
    }

    /// The buffer size a layer's parameters ask for, given the trace's range.
    pub fn sectors_wanted(
        p: &Params,
        range: Option<(Lba, Lba)>,
        sector_bytes: u64,
    ) -> SimResult<Option<u64>> {
        let mib = p.f64("buffer_mib");
        if mib > 0.0 {
            return Ok(Some(((mib * 1048576.0) / sector_bytes as f64).ceil() as u64));
        }
        let pct = p.f64("buffer_percent");
        if !(pct > 0.0 && pct <= 100.0) {
            return config_err(format!("buffer_percent {pct} must be in (0, 100]"));
        }
        Ok(range.map(|(lo, hi)| {
            ((hi.0.saturating_sub(lo.0)) as f64 * pct / 100.0)
                .ceil()
                .max(1.0) as u64
        }))
    }

    /// Slot holding host block `h`, if buffered.
    #[inline]
    pub fn slot_of(&self, h: u64) -> Option<u32> {
        self.index.get(&h).copied()
    }
    /// Host block in slot `s`, if any.
    #[inline]
    pub fn owner(&self, s: u32) -> Option<u64> {
        let o = self.owner[s as usize];
        (o != FREE).then_some(o)
    }
    /// The policy tag slot `s` was written with.
    pub fn tag(&self, s: u32) -> u8 {
        self.aux[s as usize]
    }
    /// Padding sectors known to lie below native zone `nz`'s write pointer.
    pub fn zone_padding(&self, nz: u64) -> u64 {
        self.zone_padding.get(&nz).copied().unwrap_or(0)
    }
    /// Host blocks buffered now: the slots holding a block's live copy.
    pub fn used(&self) -> u64 {
        self.index.len() as u64
    }
    /// Blocks of native zone `nz` buffered.
    pub fn zone_block_count(&self, nz: u64) -> u64 {
        self.by_zone.get(&nz).map_or(0, |z| z.live as u64)
    }
    /// Every buffered block of native zone `nz` as write-back victims: (offset, slot), by offset.
    pub fn zone_victims(&self, nz: u64) -> Vec<(u32, u32)> {
        let mut v = vec![];
        self.zone_victims_into(nz, &mut v);
        v
    }
    /// [`zone_victims`](Self::zone_victims) into `v` (cleared first; a
    /// policy's list reused from one write-back to the next).
    pub fn zone_victims_into(&self, nz: u64, v: &mut Vec<(u32, u32)>) {
        v.clear();
        let Some(z) = self.by_zone.get(&nz) else {
            return;
        };
        let base = nz * self.zones.zone_sectors;
        v.extend(
            z.offsets
                .iter()
                .filter_map(|&o| self.index.get(&(base + o as u64)).map(|&s| (o, s))),
        );
        v.sort_unstable();
        v.dedup();
        debug_assert_eq!(v.len(), z.live as usize);
    }
    /// Native zones with buffered blocks.
    pub fn zones_buffered(&self) -> impl Iterator<Item = u64> + '_ {
        self.by_zone.keys().copied()
    }
    /// Drive LBA of slot `s`.
    pub fn slot_lba(&self, s: u32) -> Lba {
        Lba(self.slot_base + s as u64)
    }

    fn bind(&mut self, s: u32, h: u64, tag: u8) {
        self.aux[s as usize] = tag;
        if let Some(old) = self.owner(s) {
            if old != h {
                self.unbind(s);
            }
        }
        let prev = self.index.insert(h, s);
        if let Some(prev) = prev {
            if prev != s {
                self.owner[prev as usize] = FREE;
                self.pending_free.insert(prev);
                self.freed_unflushed.push(prev);
            }
        }
        self.owner[s as usize] = h;
        self.pending_free.remove(s);
        let (nz, off) = self.zones.split(h);
        let spare = &mut self.spare_offsets;
        let z = self.by_zone.entry(nz).or_insert_with(|| ZoneBlocks {
            live: 0,
            offsets: spare.pop().unwrap_or_default(),
        });
        if prev.is_none() {
            // A block new to the buffer: a new offset of its zone.
            z.live += 1;
            z.offsets.push(off as u32);
            if z.offsets.len() > 2 * z.live as usize + 64 {
                let (index, base) = (&self.index, nz * self.zones.zone_sectors);
                z.offsets.sort_unstable();
                z.offsets.dedup();
                z.offsets
                    .retain(|&o| index.contains_key(&(base + o as u64)));
            }
        }
    }

    /// Forget slot `s`'s block (freed in memory; the next log record makes it durable).
    pub fn unbind(&mut self, s: u32) {
        let Some(h) = self.owner(s) else { return };
        self.owner[s as usize] = FREE;
        self.freed_unflushed.push(s);
        if self.index.get(&h) == Some(&s) {
            self.index.remove(&h);
            let (nz, _) = self.zones.split(h);
            if let Some(z) = self.by_zone.get_mut(&nz) {
                // Its offset stays in the list, stale, until the zone empties
                // or the list is compacted.
                z.live -= 1;
                if z.live == 0 {
                    let mut z = self.by_zone.remove(&nz).expect("present");
                    z.offsets.clear();
                    self.spare_offsets.push(z.offsets);
                }
            }
        }
        self.pending_free.insert(s);
    }

    /// Write host blocks into slots: `items` are (slot, host block) in the
    /// order of `data` (one token each when carried). Contiguous slots go in
    /// one command; each sector carries its record.
    pub fn store(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        items: &[(u32, u64)],
        data: &[Token],
    ) -> SimResult<()> {
        self.store_tagged(dev, cause, items, data, &[])
    }

    /// [`store`](Self::store) with a policy tag per item (empty: all 0) kept in each slot's record.
    pub fn store_tagged(
        &mut self,
        dev: &mut Device,
        cause: Cause,
        items: &[(u32, u64)],
        data: &[Token],
        tags: &[u8],
    ) -> SimResult<()> {
        // Under a drive's volatile cache: a slot whose block was rewritten
        // or moved elsewhere is reused only once the new copy is on the media.
        if !dev.has_cached_writes() {
            self.freed_unflushed.clear();
        } else if !self.freed_unflushed.is_empty()
            && items
                .iter()
                .any(|&(s, _)| self.freed_unflushed.contains(&s))
        {
            dev.flush()?;
            self.freed_unflushed.clear();
        }
        let mut i = 0;
        while i < items.len() {
            let mut j = i + 1;
            while j < items.len() && items[j].0 == items[j - 1].0 + 1 {
                j += 1;
            }
            let d = if data.is_empty() {
                &[][..]
            } else {
                &data[i..j]
            };
            let first = self.slot_lba(items[i].0);
            let base = self.seq;
            let run = &items[i..j];
            let tags_run = if tags.is_empty() {
                &[][..]
            } else {
                &tags[i..j]
            };
            let mut done = 0usize;
            let r = dev.write_lbas_tagged(cause, first, Sectors((j - i) as u64), d, 4, |l, w| {
                let k = (l.0 - first.0) as usize;
                done = done.max(k + 1);
                w.extend([
                    SLOT_MAGIC,
                    run[k].1,
                    base + k as u64,
                    tags_run.get(k).copied().unwrap_or(0) as u64,
                ]);
            });
            // Sectors written before a power loss are bound too (the layer is rebuilt anyway).
            for (k, &(s, h)) in run[..done].iter().enumerate() {
                self.bind(s, h, tags_run.get(k).copied().unwrap_or(0));
            }
            self.seq = base + done as u64;
            r?;
            i = j;
        }
        Ok(())
    }

    /// Read the blocks of `slots` (any order), appending their tokens in that order.
    pub fn load(
        &self,
        dev: &mut Device,
        cause: Cause,
        slots: &[u32],
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let mut i = 0;
        while i < slots.len() {
            let mut j = i + 1;
            while j < slots.len() && slots[j] == slots[j - 1] + 1 {
                j += 1;
            }
            dev.read_lbas(cause, self.slot_lba(slots[i]), Sectors((j - i) as u64), out)?;
            i = j;
        }
        Ok(())
    }

    /// Serve a host read: buffered blocks from their slots, the rest from
    /// their native zones (empty past a zone's write pointer, with no I/O).
    pub fn read(
        &self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let carries = dev.carries_data();
        let mut h = lba.0;
        let end = lba.0 + n.0;
        while h < end {
            if let Some(s) = self.slot_of(h) {
                let mut k = 1;
                while h + k < end && self.slot_of(h + k) == Some(s + k as u32) {
                    k += 1;
                }
                dev.read_lbas(Cause::Host, self.slot_lba(s), Sectors(k), out)?;
                h += k;
                continue;
            }
            let (nz, off) = self.zones.split(h);
            let zone_end = (nz + 1) * self.zones.zone_sectors;
            let wp = self.zones.wp_off(dev, nz);
            let mut k = 1;
            while h + k < end && h + k < zone_end && self.slot_of(h + k).is_none() {
                k += 1;
            }
            let below = if off < wp { (wp - off).min(k) } else { 0 };
            if below > 0 {
                dev.read_lbas(
                    Cause::Host,
                    Lba(self.zones.phys_start(nz) + off),
                    Sectors(below),
                    out,
                )?;
            }
            if carries {
                out.extend(std::iter::repeat_n(Token::EMPTY, (k - below) as usize));
            }
            h += k;
        }
        Ok(())
    }

    /// Append one log record (freed slots since the last record, and a zone
    /// remapping if any), checkpointing first when the ring is full.
    pub fn log_commit(&mut self, dev: &mut Device, remap: Option<(u64, u64)>) -> SimResult<()> {
        // Under a drive's volatile cache the record must not reach the
        // media before what it commits, nor after writes that rely on it:
        // flush, then write it with FORCE UNIT ACCESS.
        dev.flush()?;
        dev.set_fua(true);
        let r = self.log_commit_now(dev, remap);
        dev.set_fua(false);
        r
    }

    fn log_commit_now(&mut self, dev: &mut Device, remap: Option<(u64, u64)>) -> SimResult<()> {
        // The runs in a list kept between records; one record per `per`
        // runs (one, empty, when there are none), found by index.
        let mut runs = std::mem::take(&mut self.runs);
        self.pending_free.runs_into(&mut runs);
        let wps = (dev.geometry().sector_bytes() / 8) as usize;
        let per = (wps - 6) / 2;
        let nchunks = runs.len().div_ceil(per).max(1);
        let chunk = |k: usize| &runs[(k * per).min(runs.len())..((k + 1) * per).min(runs.len())];
        if self.log_pos + nchunks as u64 > LOG_SECTORS {
            self.runs = runs;
            return self.checkpoint_now(dev);
        }
        let at = Lba(self.log_pos);
        let blank = blank(dev, nchunks);
        let (nz, pz) = remap.unwrap_or((FREE, FREE));
        let (gen, seq) = (self.log_gen, self.seq);
        let r = dev.write_lbas_tagged(
            Cause::Metadata,
            at,
            Sectors(nchunks as u64),
            &blank,
            // The longest a record may be, so reused buffers need not grow.
            6 + per,
            |l, w| {
                let k = (l.0 - at.0) as usize;
                let c = chunk(k);
                w.extend([LOG_MAGIC, gen + k as u64, seq, nz, pz, c.len() as u64]);
                w.extend(c.iter().map(|&(s, l)| (s as u64) << 32 | l as u64));
            },
        );
        self.runs = runs;
        r?;
        self.log_gen += nchunks as u64;
        self.seq += 1;
        self.log_pos += nchunks as u64;
        self.pending_free.clear();
        Ok(())
    }

    /// Write a checkpoint (zone map and bitmap of valid slots) to the older
    /// of the two checkpoint areas, and restart the log.
    pub fn checkpoint(&mut self, dev: &mut Device) -> SimResult<()> {
        dev.flush()?;
        dev.set_fua(true);
        let r = self.checkpoint_now(dev);
        dev.set_fua(false);
        r
    }

    fn checkpoint_now(&mut self, dev: &mut Device) -> SimResult<()> {
        // In a lost record's buffer, the slot bitmap set in place (no
        // allocation per checkpoint in steady state).
        let mut w = dev
            .meta_words(4 + self.zones.phys.len().div_ceil(2) + self.slots.div_ceil(64) as usize);
        w.extend([CKPT_MAGIC, self.log_gen, self.seq, self.zones.natives]);
        for pair in self.zones.phys.chunks(2) {
            w.push(pair[0] as u64 | (pair.get(1).copied().unwrap_or(0) as u64) << 32);
        }
        let at_bits = w.len();
        w.resize(at_bits + self.slots.div_ceil(64) as usize, 0);
        let bits = &mut w[at_bits..];
        for (s, &o) in self.owner.iter().enumerate() {
            if o != FREE {
                bits[s / 64] |= 1 << (s % 64);
            }
        }
        let at = Lba(LOG_SECTORS + self.ckpt_next * self.ckpt_sectors);
        let blank = blank(dev, self.ckpt_sectors as usize);
        dev.write_lbas(Cause::Metadata, at, Sectors(self.ckpt_sectors), &blank)?;
        dev.tag_range(at, Sectors(self.ckpt_sectors), w);
        self.ckpt_next ^= 1;
        self.log_gen += 1;
        self.seq += 1;
        self.log_pos = 0;
        self.pending_free.clear();
        self.counts.checkpoints += 1;
        Ok(())
    }

    /// Rebuild the buffer's contents and the zone map from the medium after
    /// a power loss (timed reads of the log, the checkpoints and every slot).
    pub fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        let mut scratch = vec![];
        dev.read_lbas(
            Cause::Recovery,
            Lba(0),
            Sectors(self.slot_base),
            &mut scratch,
        )?;
        // The newest intact checkpoint.
        let mut ckpt: Option<Vec<u64>> = None;
        for (_, r) in dev.meta_records_in(Lba(LOG_SECTORS), Sectors(2 * self.ckpt_sectors)) {
            if r.first() == Some(&CKPT_MAGIC) && ckpt.as_ref().is_none_or(|c| c[1] < r[1]) {
                ckpt = Some(r);
            }
        }
        let (ck_gen, ck_seq) = ckpt.as_ref().map(|c| (c[1], c[2])).unwrap_or((0, 0));
        if let Some(c) = &ckpt {
            let natives = c[3] as usize;
            for i in 0..natives {
                let w = c[4 + i / 2];
                self.zones.phys[i] = if i % 2 == 0 {
                    w as u32
                } else {
                    (w >> 32) as u32
                };
            }
        }
        // Log records after the checkpoint, in order.
        let mut recs: Vec<Vec<u64>> = vec![];
        for (_, r) in dev.meta_records_in(Lba(0), Sectors(LOG_SECTORS)) {
            if r.first() == Some(&LOG_MAGIC) && r[1] > ck_gen {
                recs.push(r);
            }
        }
        recs.sort_by_key(|r| r[1]);
        let mut freed_at: FxHashMap<u32, u64> = FxHashMap::default();
        let mut max_gen = ck_gen;
        let mut max_seq = ck_seq;
        for r in &recs {
            max_gen = max_gen.max(r[1]);
            max_seq = max_seq.max(r[2]);
            if r[3] != FREE {
                self.zones.phys[r[3] as usize] = r[4] as u32;
            }
            for &run in &r[6..6 + r[5] as usize] {
                let (s, l) = ((run >> 32) as u32, run as u32);
                for x in s..s + l {
                    freed_at.insert(x, r[2]);
                }
            }
        }
        let used: BTreeSet<u64> = self.zones.phys.iter().map(|&p| p as u64).collect();
        let total = self.zones.conventional + self.zones.natives + self.zones.spares.len() as u64;
        self.zones.spares = (self.zones.conventional..total)
            .filter(|z| !used.contains(z))
            .collect();
        // Every slot's record: valid if written after it was last freed.
        scratch.clear();
        dev.read_lbas(
            Cause::Recovery,
            Lba(self.slot_base),
            Sectors(self.slots),
            &mut scratch,
        )?;
        let bits = ckpt
            .as_ref()
            .map(|c| c[4 + (c[3] as usize).div_ceil(2)..].to_vec());
        let mut best: FxHashMap<u64, (u64, u32, u8)> = FxHashMap::default();
        for (at, r) in dev.meta_records_in(Lba(self.slot_base), Sectors(self.slots)) {
            let s = (at.0 - self.slot_base) as u32;
            {
                if r.first() != Some(&SLOT_MAGIC) {
                    continue;
                }
                let (h, seq, tag) = (r[1], r[2], r.get(3).copied().unwrap_or(0) as u8);
                max_seq = max_seq.max(seq);
                let valid = match freed_at.get(&s) {
                    Some(&f) => seq > f,
                    None => {
                        seq > ck_seq
                            || bits
                                .as_ref()
                                .is_some_and(|b| b[s as usize / 64] >> (s % 64) & 1 == 1)
                    }
                };
                if valid && best.get(&h).is_none_or(|&(q, _, _)| q < seq) {
                    best.insert(h, (seq, s, tag));
                }
            }
        }
        let mut by_slot: Vec<(u32, u64, u8)> =
            best.into_iter().map(|(h, (_, s, t))| (s, h, t)).collect();
        by_slot.sort_unstable();
        for (s, h, t) in by_slot {
            self.bind(s, h, t);
        }
        self.counts.recovered_blocks += self.index.len() as u64;
        // Stale copies found on the medium are free in memory; make that durable with a checkpoint.
        self.pending_free.clear();
        self.seq = max_seq + 1;
        self.log_gen = max_gen + 1;
        self.ckpt_next = 0;
        self.checkpoint(dev)
    }

    /// Layer-report figures of the buffer.
    pub fn report(&self, r: &mut LayerReport, sector_bytes: u64) {
        let c = &self.counts;
        r.insert("buffer_bytes".into(), (self.slots * sector_bytes) as f64);
        r.insert("blocks_written".into(), c.blocks_written as f64);
        r.insert("write_hits".into(), c.write_hits as f64);
        r.insert(
            "write_hit_rate".into(),
            ratio(c.write_hits, c.blocks_written),
        );
        r.insert("writebacks_rmw".into(), c.rmw as f64);
        r.insert("writebacks_rmw_free".into(), c.rmw_free as f64);
        r.insert("victim_blocks".into(), c.victim_blocks as f64);
        r.insert(
            "avg_victim_zone_blocks".into(),
            ratio(c.victim_blocks, c.rmw + c.rmw_free),
        );
        r.insert("padding_sectors".into(), c.padding_sectors as f64);
        r.insert("collections_aborted".into(), c.collections_aborted as f64);
        r.insert("moved_blocks".into(), c.moved_blocks as f64);
        r.insert("checkpoints".into(), c.checkpoints as f64);
        r.insert("recovered_blocks".into(), c.recovered_blocks as f64);
    }
}

/// `a / b`, 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn blank(dev: &Device, n: usize) -> Vec<Token> {
    if dev.carries_data() {
        vec![Token::EMPTY; n]
    } else {
        vec![]
    }
}

/// The buffered offsets of one native zone. A `BTreeMap` kept in order
/// here allocated a node every few blocks buffered (zones empty at each
/// write-back and fill again); this list is only put in order when the zone
/// is written back ([`Buffer::zone_victims`]). Offsets are appended when a
/// block enters the buffer and left in place, stale, when it leaves
/// (`index` says which are live); the list is compacted when stale
/// offsets outnumber live ones.
#[derive(Debug, Default)]
struct ZoneBlocks {
    /// Blocks of the zone buffered.
    live: u32,
    /// Their offsets, each once, among stale ones, in no order.
    offsets: Vec<u32>,
}

/// A set of slots (the ones freed since the last log record) with no
/// allocation per insertion in steady state (a `BTreeSet` allocated a node
/// every few): a bit per slot for membership, and a list of the members in
/// no order, which may also hold slots removed since (their bit is clear)
/// and repeats; it is compacted when these outnumber the members.
#[derive(Debug)]
struct SlotSet {
    bits: Vec<u64>,
    list: Vec<u32>,
    len: usize,
}

impl SlotSet {
    fn new(slots: u64) -> SlotSet {
        SlotSet {
            bits: vec![0; slots.div_ceil(64) as usize],
            list: vec![],
            len: 0,
        }
    }
    fn has(&self, s: u32) -> bool {
        self.bits[s as usize / 64] >> (s % 64) & 1 == 1
    }
    fn insert(&mut self, s: u32) {
        if !self.has(s) {
            self.bits[s as usize / 64] |= 1 << (s % 64);
            self.list.push(s);
            self.len += 1;
            if self.list.len() > 2 * self.len + 64 {
                self.compact();
            }
        }
    }
    fn remove(&mut self, s: u32) {
        if self.has(s) {
            self.bits[s as usize / 64] &= !(1 << (s % 64));
            self.len -= 1;
        }
    }
    fn clear(&mut self) {
        for &s in &self.list {
            self.bits[s as usize / 64] &= !(1 << (s % 64));
        }
        self.list.clear();
        self.len = 0;
    }
    /// Keep each member once, in the list's order.
    fn compact(&mut self) {
        let bits = &mut self.bits;
        // A member's bit is cleared as it is kept, so its repeats go too.
        self.list.retain(|&s| {
            let live = bits[s as usize / 64] >> (s % 64) & 1 == 1;
            bits[s as usize / 64] &= !(1 << (s % 64));
            live
        });
        for &s in &self.list {
            self.bits[s as usize / 64] |= 1 << (s % 64);
        }
    }
    /// The members as runs of consecutive slots `(first, count)`, in order, into `v` (cleared first).
    fn runs_into(&mut self, v: &mut Vec<(u32, u32)>) {
        self.compact();
        self.list.sort_unstable();
        v.clear();
        for &s in &self.list {
            match v.last_mut() {
                Some((a, l)) if *a + *l == s => *l += 1,
                _ => v.push((s, 1)),
            }
        }
    }
}

/// Phases of a zone write-back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Collect,
    ReadNative,
    Write,
    Commit,
}

/// One zone write-back in progress: collect victims, (read the native zone,)
/// write, commit.
#[derive(Debug)]
pub struct WriteBack {
    /// The native (host) zone being written back, as numbered by the host, not
    /// its physical zone.
    pub nz: u64,
    /// Victims: (offset, slot), by offset.
    victims: Vec<(u32, u32)>,
    collected: usize,
    abortable: bool,
    phase: Phase,
    rmw: bool,
    wp: u64,
    end: u64,
    native: Vec<Token>,
    native_read: u64,
    vdata: Vec<Token>,
    written: u64,
    target: u64,
    /// Victim indices where collection stages end (empty: every `collect_blocks`).
    cuts: Vec<usize>,
    /// A collection stage's (slot, victim index) pairs, its slots and their
    /// tokens (lists reused from stage to stage).
    part: Vec<(u32, usize)>,
    slots: Vec<u32>,
    got: Vec<Token>,
}

/// Blocks read or written per stage of a write-back's native-zone phases (16 MiB of 4 KiB blocks).
const IO_STAGE_BLOCKS: u64 = 4096;

impl WriteBack {
    /// A write-back of these victim blocks of native zone `nz` (offset -> slot).
    pub fn new(nz: u64, victims: Vec<(u32, u32)>, abortable: bool) -> WriteBack {
        let n = victims.len();
        WriteBack {
            nz,
            victims,
            collected: 0,
            abortable,
            phase: Phase::Collect,
            rmw: false,
            wp: 0,
            end: 0,
            native: vec![],
            native_read: 0,
            vdata: Vec::with_capacity(n),
            written: 0,
            target: 0,
            cuts: vec![],
            part: vec![],
            slots: vec![],
            got: vec![],
        }
    }

    /// This finished write-back's lists reused for a new one (as
    /// [`new`](Self::new) makes it; `cuts` are the caller's to fill).
    pub fn reset(&mut self, nz: u64, victims: Vec<(u32, u32)>, abortable: bool) {
        self.nz = nz;
        self.victims = victims;
        self.collected = 0;
        self.abortable = abortable;
        self.phase = Phase::Collect;
        self.rmw = false;
        self.wp = 0;
        self.end = 0;
        self.native.clear();
        self.native_read = 0;
        self.vdata.clear();
        self.written = 0;
        self.target = 0;
        self.cuts.clear();
    }

    /// Collect in stages that end at these victim indices (chunk boundaries).
    pub fn with_cuts(mut self, cuts: Vec<usize>) -> WriteBack {
        self.cuts = cuts;
        self
    }

    /// The host range of the victim zone.
    pub fn host_range(&self, zs: u64) -> (Lba, Sectors) {
        (Lba(self.nz * zs), Sectors(zs))
    }

    /// Run one stage; `Ok(true)` when the write-back has committed.
    pub fn stage(
        &mut self,
        buf: &mut Buffer,
        dev: &mut Device,
        queue: &QueueView,
        collect_blocks: u64,
    ) -> SimResult<(StageOutcome, bool)> {
        let zs = buf.zones.zone_sectors;
        match self.phase {
            Phase::Collect => {
                if self.abortable && self.collected > 0 && self.collected < self.victims.len() {
                    let (l, n) = self.host_range(zs);
                    if queue.write_touches(l, n) {
                        self.victims.truncate(self.collected);
                        buf.counts.collections_aborted += 1;
                        self.plan(buf, dev);
                        return Ok((StageOutcome::Aborted, false));
                    }
                }
                let take = match self.cuts.iter().find(|&&c| c > self.collected) {
                    Some(&c) => c.min(self.victims.len()) - self.collected,
                    None if !self.cuts.is_empty() => self.victims.len() - self.collected,
                    None => {
                        (self.victims.len() - self.collected).min(collect_blocks.max(1) as usize)
                    }
                };
                let (part, slots, got) = (&mut self.part, &mut self.slots, &mut self.got);
                part.clear();
                part.extend(
                    self.victims[self.collected..self.collected + take]
                        .iter()
                        .enumerate()
                        .map(|(i, &(_, s))| (s, i)),
                );
                part.sort_unstable();
                slots.clear();
                slots.extend(part.iter().map(|&(s, _)| s));
                got.clear();
                buf.load(dev, Cause::Gc, slots, got)?;
                if dev.carries_data() {
                    let mut ordered = vec![Token::EMPTY; take];
                    for (k, &(_, i)) in part.iter().enumerate() {
                        ordered[i] = got[k];
                    }
                    self.vdata.extend(ordered);
                }
                self.collected += take;
                if self.collected == self.victims.len() {
                    self.plan(buf, dev);
                }
                Ok((StageOutcome::Ran, false))
            }
            Phase::ReadNative => {
                let take = (self.wp - self.native_read).min(IO_STAGE_BLOCKS);
                let start = buf.zones.phys_start(self.nz) + self.native_read;
                dev.read_lbas(Cause::Rmw, Lba(start), Sectors(take), &mut self.native)?;
                self.native_read += take;
                if self.native_read == self.wp {
                    self.begin_write(buf, dev)?;
                }
                Ok((StageOutcome::Ran, false))
            }
            Phase::Write => {
                let from = if self.rmw { 0 } else { self.wp };
                let pos = from + self.written;
                let take = (self.end - pos).min(IO_STAGE_BLOCKS);
                self.write_span(buf, dev, pos, pos + take)?;
                self.written += take;
                if pos + take == self.end {
                    self.phase = Phase::Commit;
                }
                Ok((StageOutcome::Ran, false))
            }
            Phase::Commit => {
                let old = buf.zones.phys[self.nz as usize] as u64;
                let remap = self.rmw.then_some((self.nz, self.target));
                for &(_, s) in &self.victims {
                    buf.unbind(s);
                }
                if self.rmw {
                    buf.zones.phys[self.nz as usize] = self.target as u32;
                    buf.zones.spares.retain(|&z| z != self.target);
                }
                buf.log_commit(dev, remap)?;
                if self.rmw {
                    dev.reset_zone(Cause::Gc, old)?;
                    buf.zones.spares.push(old);
                    buf.counts.rmw += 1;
                } else {
                    buf.counts.rmw_free += 1;
                }
                buf.counts.victim_blocks += self.victims.len() as u64;
                Ok((StageOutcome::Ran, true))
            }
        }
    }

    /// After collection: RMW-free if every victim is at or past the write pointer.
    fn plan(&mut self, buf: &mut Buffer, dev: &mut Device) {
        self.wp = buf.zones.wp_off(dev, self.nz);
        let last = self.victims.last().map(|&(o, _)| o as u64 + 1).unwrap_or(0);
        self.rmw = self
            .victims
            .first()
            .is_some_and(|&(o, _)| (o as u64) < self.wp);
        self.end = self.wp.max(last);
        self.phase = if self.victims.is_empty() {
            Phase::Commit
        } else if self.rmw {
            Phase::ReadNative
        } else {
            Phase::Write
        };
        if self.phase == Phase::Write {
            self.target = buf.zones.phys[self.nz as usize] as u64;
        }
    }

    fn begin_write(&mut self, buf: &mut Buffer, dev: &mut Device) -> SimResult<()> {
        let spare = *buf
            .zones
            .spares
            .first()
            .ok_or_else(|| SimError::Layer("no spare zone for a write-back".into()))?;
        if dev.medium().write_pointer(spare).map(|w| w.0) != Some(spare * buf.zones.zone_sectors) {
            // A spare left holding an old image by a crash after its commit.
            // (Nothing cached may still be on its way to it.)
            dev.flush()?;
            dev.reset_zone(Cause::Gc, spare)?;
        }
        self.target = spare;
        self.phase = Phase::Write;
        Ok(())
    }

    /// Write zone offsets `[a, b)` of the image to the target zone, one command per run of one cause.
    fn write_span(&mut self, buf: &mut Buffer, dev: &mut Device, a: u64, b: u64) -> SimResult<()> {
        let zs = buf.zones.zone_sectors;
        let base = self.target * zs;
        let carries = dev.carries_data();
        // Victim index of the first victim at or after a.
        let mut vi = self.victims.partition_point(|&(o, _)| (o as u64) < a);
        let mut pos = a;
        let mut data: Vec<Token> = vec![];
        while pos < b {
            let (cause, stop) = if vi < self.victims.len() && self.victims[vi].0 as u64 == pos {
                let mut k = vi + 1;
                while k < self.victims.len()
                    && self.victims[k].0 as u64 == self.victims[k - 1].0 as u64 + 1
                    && (self.victims[k].0 as u64) < b
                {
                    k += 1;
                }
                let stop = self.victims[k - 1].0 as u64 + 1;
                if carries {
                    data.clear();
                    data.extend_from_slice(&self.vdata[vi..k]);
                }
                vi = k;
                (Cause::Gc, stop)
            } else {
                let next_v = self
                    .victims
                    .get(vi)
                    .map(|&(o, _)| o as u64)
                    .unwrap_or(u64::MAX)
                    .min(b);
                if pos < self.wp {
                    let stop = next_v.min(self.wp);
                    if carries {
                        data.clear();
                        data.extend_from_slice(&self.native[pos as usize..stop as usize]);
                    }
                    (Cause::Rmw, stop)
                } else {
                    if carries {
                        data.clear();
                        data.resize((next_v - pos) as usize, Token::EMPTY);
                    }
                    buf.counts.padding_sectors += next_v - pos;
                    *buf.zone_padding.entry(self.nz).or_insert(0) += next_v - pos;
                    (Cause::Padding, next_v)
                }
            };
            dev.write_lbas(cause, Lba(base + pos), Sectors(stop - pos), &data)?;
            pos = stop;
        }
        Ok(())
    }
}

/// Cleaning work a placement policy asks for when the buffer lacks room.
#[derive(Debug)]
pub enum Work {
    /// Write these buffered blocks of a native zone back: (offset, slot), by offset.
    WriteBack(u64, Vec<(u32, u32)>),
    /// Move the block in slot `from` to slot `to` (already allocated by the policy).
    Move {
        /// Slot holding the block now, read with cause `gc`; `from == to` moves
        /// nothing.
        from: u32,
        /// Slot the block is written to, tagged by the policy's `move_tag`.
        to: u32,
    },
    /// Nothing can be done (a policy bug if room is still lacking).
    None,
}

/// Where a buffer layer puts blocks and what it cleans: the part of each
/// of paper 004's strategies that differs.
pub trait Placement: Send + 'static {
    /// Whether these writes' (first block, blocks) new blocks fit now.
    fn fits(&self, buf: &Buffer, ws: &[(u64, u64)]) -> bool;
    /// Choose a slot for each block of a write of `n` blocks from host
    /// block `lba`, appending (slot, block) to `out` in block order, as far
    /// as there is room; returns how many were placed (the rest is offered
    /// again after cleaning, with `first` false). Counts write hits.
    fn place(
        &mut self,
        buf: &mut Buffer,
        lba: u64,
        n: u64,
        first: bool,
        out: &mut Vec<(u32, u64)>,
    ) -> SimResult<u64>;
    /// The next piece of cleaning work, to make room for the `waiting` writes.
    fn next_work(&mut self, buf: &Buffer, dev: &Device, waiting: &[(u64, u64)]) -> Work;
    /// Whether the policy has planned work it must finish before the next host request.
    fn pending(&self) -> bool {
        false
    }
    /// Whether the policy wants cleaning started now, before the next host
    /// request (its free space has run out), without a write waiting for it.
    fn wants_work(&self) -> bool {
        false
    }
    /// The tag a move's destination slot is written with.
    fn move_tag(&self, _to: u32) -> u8 {
        0
    }
    /// A write-back committed (its victims are freed), or a move completed.
    fn work_done(&mut self, buf: &Buffer, work: &Work);
    /// A finished write-back's victim list, for the policy to fill again
    /// (no allocation per write-back). Default: dropped.
    fn recycle(&mut self, _victims: Vec<(u32, u32)>) {}
    /// Rebuild the policy's state from the buffer after a crash.
    fn rebuild(&mut self, buf: &Buffer);
    /// Whether collection stops when a queued write targets the victim zone.
    fn abortable(&self) -> bool {
        false
    }
    /// Where a write-back's collection stages end (victim indices appended
    /// to `out`, which comes empty; left empty: every `collect_blocks`).
    fn cuts(&self, _victims: &[(u32, u32)], _out: &mut Vec<usize>) {}
    /// The tag a written block's slot gets (default 0).
    fn write_tag(&self, _slot: u32) -> u8 {
        0
    }
    /// Policy figures for the report.
    fn report(&self, _r: &mut LayerReport) {}
}

/// Builds a placement policy for a buffer of `slots` blocks.
pub type MakePlacement = fn(&Params, &ZoneMap, u64) -> SimResult<Box<dyn Placement>>;

/// A host-side buffer layer: the shared buffer, write-back and recovery,
/// with a placement policy.
pub struct BufferLayer {
    name: &'static str,
    params: Params,
    zones: ZoneMap,
    sector_bytes: u64,
    make: MakePlacement,
    buf: Option<Buffer>,
    policy: Option<Box<dyn Placement>>,
    job: Option<WriteBack>,
    /// The last finished write-back, its lists kept for the next.
    spare_job: Option<WriteBack>,
    collect_blocks: u64,
    scratch: Vec<(u32, u64)>,
    /// A write's slot tags (reused buffer).
    tags: Vec<u8>,
    /// The queued requests a stage may stop for (reused buffer).
    others: Vec<crate::layers::QueuedRequest>,
    /// The writes last found waiting for room (noted by `write_must_wait`
    /// and by a write that took only its front), which cleaning makes room for.
    waiting: Vec<(u64, u64)>,
}

impl BufferLayer {
    /// Build the layer; the buffer is laid out now if its size is absolute,
    /// else when the trace's range is known.
    pub fn build(
        name: &'static str,
        p: &Params,
        geom: &Geometry,
        make: MakePlacement,
    ) -> SimResult<BufferLayer> {
        let zones = ZoneMap::new(geom, p.u64("spare_zones"))?;
        if p.u64("spare_zones") == 0 {
            return config_err("spare_zones must be at least 1 (a merged zone image is written to a spare before the old zone is reset)");
        }
        let mut l = BufferLayer {
            name,
            params: p.clone(),
            zones,
            sector_bytes: geom.sector_bytes() as u64,
            make,
            buf: None,
            policy: None,
            job: None,
            spare_job: None,
            collect_blocks: p.u64_at_least(name, "collect_blocks", 1)?,
            scratch: vec![],
            tags: vec![],
            others: vec![],
            waiting: Default::default(),
        };
        if let Some(n) = Buffer::sectors_wanted(p, None, l.sector_bytes)? {
            l.lay_out(n)?;
        }
        Ok(l)
    }

    fn lay_out(&mut self, sectors: u64) -> SimResult<()> {
        let buf = Buffer::new(self.zones.clone(), sectors, self.sector_bytes)?;
        self.policy = Some((self.make)(&self.params, &self.zones, buf.slots)?);
        self.buf = Some(buf);
        Ok(())
    }

    fn parts(&mut self) -> SimResult<(&mut Buffer, &mut Box<dyn Placement>)> {
        match (&mut self.buf, &mut self.policy) {
            (Some(b), Some(p)) => Ok((b, p)),
            _ => config_err(format!(
                "layer '{}' has no buffer size: give buffer_mib, or run it on a trace so buffer_percent can apply",
                self.name
            )),
        }
    }

    /// The buffer (tests).
    pub fn buffer(&self) -> Option<&Buffer> {
        self.buf.as_ref()
    }
}

impl crate::layers::Layer for BufferLayer {
    fn host_capacity(&self, _geom: &Geometry) -> Sectors {
        Sectors(self.zones.host_sectors())
    }
    fn reserved_home(&self) -> Vec<(Lba, Sectors)> {
        self.zones.reserved()
    }
    fn needs(&self) -> crate::layers::Needs {
        crate::layers::Needs {
            arrivals: false,
            background: true,
            ..Default::default()
        }
    }
    fn wants_trace_range(&self) -> bool {
        self.buf.is_none()
    }
    fn set_trace_range(&mut self, lo: Lba, hi: Lba) -> SimResult<()> {
        if self.buf.is_none() {
            let n = Buffer::sectors_wanted(&self.params, Some((lo, hi)), self.sector_bytes)?
                .unwrap_or(1);
            self.lay_out(n)?;
        }
        Ok(())
    }
    fn read(
        &mut self,
        dev: &mut Device,
        lba: Lba,
        n: Sectors,
        out: &mut Vec<Token>,
    ) -> SimResult<()> {
        let (buf, _) = self.parts()?;
        buf.read(dev, lba, n, out)
    }
    fn write(&mut self, dev: &mut Device, w: &crate::layers::WriteReq) -> SimResult<()> {
        // The engine calls `write_part` and runs the stages between the
        // parts itself (counted as its stages); this whole-write form, for
        // callers without an engine, does the same with the layer's own stages.
        let (mut done, n) = (0u64, w.sectors.0);
        let mut stuck = 0;
        loop {
            let rest = crate::layers::WriteReq {
                lba: Lba(w.lba.0 + done),
                sectors: Sectors(n - done),
                cause: w.cause,
                data: if w.data.is_empty() {
                    &[]
                } else {
                    &w.data[done as usize..]
                },
            };
            let placed = self.write_part(dev, &rest, done == 0)?.0;
            done += placed;
            if done == n {
                return Ok(());
            }
            dev.set_in_stage(true);
            let out = self.stage(dev, &QueueView::default());
            dev.set_in_stage(false);
            stuck = if placed == 0 && out? == StageOutcome::Nothing {
                stuck + 1
            } else {
                0
            };
            if stuck > 1 {
                return Err(SimError::Layer(format!(
                    "write of {n} blocks at LBA {} found no room in layer '{}''s buffer",
                    w.lba.0, self.name
                )));
            }
        }
    }
    fn write_part(
        &mut self,
        dev: &mut Device,
        w: &crate::layers::WriteReq,
        first: bool,
    ) -> SimResult<Sectors> {
        let n = w.sectors.0;
        // Work under way runs to its end first: a write-back must not see
        // its victims updated between collection and commit.
        if self.job.is_some() || self.policy.as_ref().is_some_and(|p| p.pending()) {
            self.waiting.clear();
            self.waiting.push((w.lba.0, n));
            return Ok(Sectors(0));
        }
        let mut items = std::mem::take(&mut self.scratch);
        // Tags in a buffer kept between writes (no allocation per write).
        let mut tags = std::mem::take(&mut self.tags);
        let (buf, pol) = self.parts()?;
        items.clear();
        let placed = match pol.place(buf, w.lba.0, n, first, &mut items) {
            Ok(k) => k,
            Err(e) => {
                self.scratch = items;
                return Err(e);
            }
        };
        buf.counts.blocks_written += placed;
        tags.clear();
        tags.extend(items.iter().map(|&(s, _)| pol.write_tag(s)));
        let data = if w.data.is_empty() {
            &[][..]
        } else {
            &w.data[..placed as usize]
        };
        let stored = buf.store_tagged(dev, w.cause, &items, data, &tags);
        self.scratch = items;
        self.tags = tags;
        stored?;
        self.waiting.clear();
        if placed < n {
            // The rest waits for cleaning to make room.
            self.waiting.push((w.lba.0 + placed, n - placed));
            return Ok(Sectors(placed));
        }
        // The write is acknowledged once durable: under a drive's volatile
        // cache, flush (its blocks carry their own records).
        dev.flush()?;
        Ok(Sectors(placed))
    }
    fn background(&self) -> crate::layers::Background {
        if self.job.is_some()
            || self
                .policy
                .as_ref()
                .is_some_and(|p| p.pending() || p.wants_work())
        {
            crate::layers::Background::Overdue
        } else {
            crate::layers::Background::None
        }
    }
    fn write_must_wait(&mut self, _geom: &Geometry, ws: &[crate::layers::WriteReq]) -> bool {
        let (Some(buf), Some(_)) = (&self.buf, &self.policy) else {
            return false;
        };
        if let Some(j) = &self.job {
            let (l, n) = j.host_range(buf.zones.zone_sectors);
            if ws
                .iter()
                .any(|w| w.lba.0 < l.0 + n.0 && l.0 < w.lba.0 + w.sectors.0)
            {
                return true;
            }
        }
        self.waiting.clear();
        self.waiting
            .extend(ws.iter().map(|w| (w.lba.0, w.sectors.0)));
        !self
            .policy
            .as_ref()
            .is_some_and(|p| p.fits(buf, &self.waiting))
    }
    fn stage(&mut self, dev: &mut Device, queue: &QueueView) -> SimResult<StageOutcome> {
        let collect = self.collect_blocks;
        // The waiting writes are lent out for the stage (not copied: no
        // allocation per stage) and put back before it returns.
        let waiting = std::mem::take(&mut self.waiting);
        let r = self.stage_with(dev, queue, collect, &waiting);
        self.waiting = waiting;
        r
    }
    fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        let (buf, pol) = self.parts()?;
        buf.recover(dev)?;
        pol.rebuild(buf);
        Ok(())
    }
    fn report(&self) -> LayerReport {
        let mut r = LayerReport::new();
        if let (Some(b), Some(p)) = (&self.buf, &self.policy) {
            b.report(&mut r, self.sector_bytes);
            p.report(&mut r);
        }
        r
    }
}

impl BufferLayer {
    /// One stage of [`Layer::stage`], with the writes waiting for room.
    fn stage_with(
        &mut self,
        dev: &mut Device,
        queue: &QueueView,
        collect: u64,
        waiting: &[(u64, u64)],
    ) -> SimResult<StageOutcome> {
        if self.job.is_none() {
            let name = self.name;
            self.parts()?;
            // Borrowed field by field, so the spare write-back is at hand too.
            let (Some(buf), Some(pol)) = (&mut self.buf, &mut self.policy) else {
                unreachable!("checked by parts()");
            };
            match pol.next_work(buf, dev, waiting) {
                Work::WriteBack(nz, victims) => {
                    let abortable = pol.abortable();
                    // The last write-back's lists, reused for the next.
                    let job = match self.spare_job.take() {
                        Some(mut j) => {
                            j.reset(nz, victims, abortable);
                            pol.cuts(&j.victims, &mut j.cuts);
                            j
                        }
                        None => {
                            let mut cuts = vec![];
                            pol.cuts(&victims, &mut cuts);
                            WriteBack::new(nz, victims, abortable).with_cuts(cuts)
                        }
                    };
                    self.job = Some(job);
                }
                Work::Move { from, to } if from == to => {
                    pol.work_done(buf, &Work::Move { from, to });
                    return Ok(StageOutcome::Ran);
                }
                Work::Move { from, to } => {
                    let h = buf
                        .owner(from)
                        .ok_or_else(|| SimError::Layer(format!("move from free slot {from}")))?;
                    let mut t = vec![];
                    buf.load(dev, Cause::Gc, &[from], &mut t)?;
                    let tag = pol.move_tag(to);
                    buf.store_tagged(dev, Cause::Gc, &[(to, h)], &t, &[tag])?;
                    buf.counts.moved_blocks += 1;
                    pol.work_done(buf, &Work::Move { from, to });
                    return Ok(StageOutcome::Ran);
                }
                Work::None => {
                    if !pol.fits(buf, waiting) && buf.used() == 0 {
                        return config_err(format!(
                            "a write of {} blocks cannot fit in layer '{}''s buffer even when it is empty ({} blocks): give a larger buffer",
                            waiting.iter().map(|w| w.1).sum::<u64>(),
                            name,
                            buf.slots
                        ));
                    }
                    return Ok(StageOutcome::Nothing);
                }
            }
        }
        let mut job = self.job.take().expect("job");
        // The write waiting for the room this work makes is not a queued
        // write the garbage collector should stop for (paper 004 Figure 6:
        // the collector serves it); later requests are.
        let mut others = std::mem::take(&mut self.others);
        others.clear();
        others.extend(
            queue
                .requests()
                .iter()
                .filter(|r| !(r.write && waiting.contains(&(r.lba.0, r.sectors.0))))
                .copied(),
        );
        let (buf, _) = self.parts()?;
        let staged = job.stage(buf, dev, &QueueView::new(&others), collect);
        self.others = others;
        let (out, done) = staged?;
        let (buf, pol) = self.parts()?;
        if done {
            let work = Work::WriteBack(job.nz, std::mem::take(&mut job.victims));
            pol.work_done(buf, &work);
            if let Work::WriteBack(_, victims) = work {
                pol.recycle(victims);
            }
            self.spare_job = Some(job);
        } else {
            self.job = Some(job);
        }
        Ok(out)
    }
}

#[cfg(test)]
pub(crate) mod tests;
