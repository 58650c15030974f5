//! A data movement of an IMR layer (flip, promotion, eviction, swap) as a
//! program of steps that the engine runs one stage at a time in idle time,
//! so that host requests can cut in between (paper 000 sections 2.2 and 2.3:
//! "track flipping is a background operation, and can be interrupted at any
//! point in time"; "promotions and evictions are interruptible background
//! operations").
//!
//! A program is compiled when the move starts, from the state of the medium
//! and maps at that moment, and lists exactly the physical operations the
//! move performs, in the paper's order: reads into a memory buffer, one
//! backup record, writes from the buffer, metadata, the commit. Each step is
//! one stage (the backup record, which may span several backup tracks, is
//! one step). Every step boundary is crash-safe: a power loss rolls the move
//! back from the backup record until the commit, as before.
//!
//! While a move is in progress ("in flight"):
//! * **Host reads** of an extent the move has read and may since have
//!   overwritten or damaged are served from the move's memory buffer once
//!   its first write has been issued: in-memory state is still available,
//!   as the paper says, and costs no media time. (Before that, the media
//!   still hold the data.)
//! * **Writes** (host or destage) that land on a track the move reads,
//!   writes or damages, or that need a read-modify-write (which would reuse
//!   the backup region the move's record occupies), must wait: the layer's
//!   `write_must_wait` says so and the engine runs the move's remaining
//!   stages first.
//!
//! The map change takes effect at the commit, so until then every read and
//! write is mapped as before the move.

use super::backup::Saved;
use super::map_store::MapStore;
use super::rmw::RmwEngine;
use crate::device::{Cause, Device};
use crate::error::{SimError, SimResult};
use crate::geometry::{Geometry, TrackKind};
use crate::medium::Token;
use crate::units::{PhysAddr, Track};

/// One physical step of a move.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Read `count` sectors at `at` into the buffer at `off`.
    Read {
        /// Cause of the read.
        cause: Cause,
        /// First physical sector read (track and sector index).
        at: PhysAddr,
        /// Sectors read from `at` on.
        count: u32,
        /// Token index in the move's buffer where the data goes: reads append, so it is
        /// the number of sectors the move has read before (checked only when data is carried).
        off: usize,
    },
    /// Save `saved` (buffer `[from, from + total)`) as one backup record:
    /// of a relocation committing as change `tx`, or (`None`) an RMW record
    /// restored unconditionally after a power loss.
    Backup {
        /// The home extents the record saves (track, first sector, count); their data
        /// lies in the buffer from `from`, one extent after another in this order.
        saved: Vec<Saved>,
        /// Buffer offset of their data.
        from: usize,
        /// The map change the record belongs to.
        tx: Option<u64>,
    },
    /// Write `count` sectors at `at` from the buffer at `off`.
    Write {
        /// Cause of the write.
        cause: Cause,
        /// First physical sector written: a move's destination, or neighbour sectors
        /// the move read and now restores.
        at: PhysAddr,
        /// Sectors written from `at` on.
        count: u32,
        /// Token index in the move's buffer of the first sector's data (where a
        /// `Read` step put it).
        off: usize,
        /// Mark the track written (it now holds data).
        mark: bool,
    },
    /// Write a one-sector metadata record.
    Header {
        /// Cause of the write.
        cause: Cause,
        /// The one sector the record is written to (e.g. the last sector of a track
        /// cache slot).
        at: PhysAddr,
        /// The record's contents as 64-bit words (e.g. a magic number, the cached
        /// track, a sequence number), kept with the sector (`Device::write_meta`) for recovery.
        words: Vec<u64>,
    },
    /// Overwrite one sector with nothing (e.g. a header, to retire it).
    Blank {
        /// Cause of the write.
        cause: Cause,
        /// The sector overwritten (e.g. a slot's header, so recovery no longer finds it).
        at: PhysAddr,
    },
    /// Commit the map change to the map store (the move's commit point).
    Commit {
        /// Key -> new value (`None` removes the entry).
        updates: Vec<(u64, Option<u64>)>,
        /// Forget the move's backup record: a relocation record belongs to
        /// the change and is never restored once it commits. (An RMW record,
        /// restored unconditionally, stays live for lazy clearing.)
        forget: bool,
    },
}

/// A move in progress: its steps, the next one, and its memory buffer.
#[derive(Clone, Debug)]
pub struct Relocation {
    steps: Vec<Step>,
    next: usize,
    buf: Vec<Token>,
    /// Extents read whose media copy may go stale: `(at, count, buffer offset)`.
    volatile: Vec<(PhysAddr, u32, usize)>,
    /// Tracks the move reads, writes or damages, sorted.
    locked: Vec<Track>,
    /// Whether a write step has been issued (volatile extents come from memory since).
    wrote: bool,
}

impl Relocation {
    /// A move of these steps on `geom`.
    pub fn new(geom: &Geometry, steps: Vec<Step>) -> Relocation {
        let mut locked = vec![];
        let mut writes: Vec<(Track, u32, u32)> = vec![];
        for s in &steps {
            let (at, count) = match s {
                Step::Read { at, .. } => {
                    locked.push(at.track);
                    continue;
                }
                Step::Write { at, count, .. } => (at, *count),
                Step::Header { at, .. } | Step::Blank { at, .. } => (at, 1),
                Step::Backup { .. } | Step::Commit { .. } => continue,
            };
            {
                {
                    locked.push(at.track);
                    writes.push((at.track, at.sector, at.sector + count));
                    for nb in geom.damaged_by_write(at.track) {
                        let (lo, hi) = geom.overlap_span(at.track, at.sector, count, nb);
                        locked.push(nb);
                        writes.push((nb, lo, hi));
                    }
                }
            }
        }
        locked.sort_unstable();
        locked.dedup();
        // A read extent is volatile if some write of the move lands on it or damages it.
        let volatile = steps
            .iter()
            .filter_map(|s| match s {
                Step::Read { at, count, off, .. } => Some((*at, *count, *off)),
                _ => None,
            })
            .filter(|(at, count, _)| {
                writes
                    .iter()
                    .any(|&(t, lo, hi)| t == at.track && lo < at.sector + count && at.sector < hi)
            })
            .collect();
        Relocation {
            steps,
            next: 0,
            buf: vec![],
            volatile,
            locked,
            wrote: false,
        }
    }

    /// Whether the move has run every step.
    pub fn done(&self) -> bool {
        self.next >= self.steps.len()
    }

    /// The steps (tests and diagnostics).
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Whether the move reads, writes or damages track `t`.
    pub fn locks(&self, t: Track) -> bool {
        self.locked.binary_search(&t).is_ok()
    }

    /// Whether the move has started (run at least one step).
    pub fn started(&self) -> bool {
        self.next > 0
    }

    /// Run the next step. `store` must be given for a move that commits to one.
    pub fn step(
        &mut self,
        rmw: &mut RmwEngine,
        dev: &mut Device,
        store: Option<&mut MapStore>,
    ) -> SimResult<()> {
        let carries = dev.carries_data();
        // Steps and buffer are separate fields: a step borrows the list while
        // its data moves through the buffer, with no copy of either.
        let Some(step) = self.steps.get(self.next) else {
            return Ok(());
        };
        let one: &[Token] = if carries { &[Token::EMPTY] } else { &[] };
        match step {
            &Step::Read {
                cause,
                at,
                count,
                off,
            } => {
                debug_assert!(!carries || self.buf.len() == off);
                dev.read(cause, at, count, &mut self.buf)?;
            }
            Step::Backup { saved, from, tx } => {
                let total: usize = saved.iter().map(|s| s.count as usize).sum();
                let data = if carries {
                    &self.buf[*from..*from + total]
                } else {
                    &[][..]
                };
                match *tx {
                    Some(tx) => rmw.backup.save_tx(dev, saved, data, tx)?,
                    None => rmw.backup.save(dev, saved, data)?,
                }
            }
            &Step::Write {
                cause,
                at,
                count,
                off,
                mark,
            } => {
                self.wrote = true;
                let data = if carries {
                    &self.buf[off..off + count as usize]
                } else {
                    &[][..]
                };
                dev.write(cause, at, count, data)?;
                if mark {
                    rmw.written.set(at.track);
                }
            }
            Step::Header { cause, at, words } => {
                self.wrote = true;
                dev.write_meta(*cause, *at, 1, one, words.clone())?;
            }
            &Step::Blank { cause, at } => {
                self.wrote = true;
                dev.write(cause, at, 1, one)?;
            }
            Step::Commit { updates, forget } => {
                let store = store.ok_or_else(|| {
                    SimError::Layer("a move commits to a map store it was not given".into())
                })?;
                store.commit(dev, updates)?;
                if *forget {
                    rmw.backup.forget();
                }
            }
        }
        self.next += 1;
        Ok(())
    }

    /// If the move holds the data of `[at, at + count)` in memory in place of
    /// the medium, append pieces of it to `out` as `(sector, count, Some(offset))`
    /// (from memory) or `(sector, count, None)` (from the medium), in order.
    pub fn split_read(&self, at: PhysAddr, count: u32, out: &mut Vec<(u32, u32, Option<usize>)>) {
        let mut cur = at.sector;
        let end = at.sector + count;
        while cur < end {
            let hit = self
                .volatile
                .iter()
                .filter(|v| self.wrote && v.0.track == at.track)
                .find(|v| v.0.sector <= cur && cur < v.0.sector + v.1);
            match hit {
                Some(&(v, n, off)) => {
                    let take = (v.sector + n).min(end) - cur;
                    out.push((cur, take, Some(off + (cur - v.sector) as usize)));
                    cur += take;
                }
                None => {
                    // Media up to the next volatile extent on the track.
                    let next = self
                        .volatile
                        .iter()
                        .filter(|v| self.wrote && v.0.track == at.track && v.0.sector > cur)
                        .map(|v| v.0.sector)
                        .min()
                        .unwrap_or(end)
                        .min(end);
                    out.push((cur, next - cur, None));
                    cur = next;
                }
            }
        }
    }

    /// The buffered tokens from `off` (empty when data is not carried).
    pub fn buffered(&self, off: usize, n: u32) -> &[Token] {
        if self.buf.len() >= off + n as usize {
            &self.buf[off..off + n as usize]
        } else {
            &[]
        }
    }
}

/// The steps of the classic relocation (`RmwEngine::relocate`): read the
/// sources, then every written top-track span a bottom destination would
/// damage (less the destinations themselves); save all of it as one record
/// of change `tx`; write the bottom destinations, restore the damaged spans,
/// write the top destinations; commit `updates`.
pub fn relocation_steps(
    rmw: &RmwEngine,
    dev: &Device,
    moves: &[super::rmw::Move],
    updates: &[(u64, Option<u64>)],
    cause: Cause,
    tx: u64,
) -> Vec<Step> {
    let geom = dev.geometry();
    let mut steps = vec![];
    let mut off = 0usize;
    let mut src_off = vec![];
    for m in moves {
        src_off.push(off);
        steps.push(Step::Read {
            cause,
            at: m.src,
            count: m.count,
            off,
        });
        off += m.count as usize;
    }
    // Spans of top neighbours of bottom destinations, less the destinations themselves.
    let mut collateral: Vec<Saved> = vec![];
    for m in moves
        .iter()
        .filter(|m| geom.kind(m.dst.track) == TrackKind::Bottom)
    {
        for nb in geom.damaged_by_write(m.dst.track) {
            if rmw.skip_empty && !rmw.holds_data(dev, nb) {
                continue;
            }
            let (lo, hi) = geom.overlap_span(m.dst.track, m.dst.sector, m.count, nb);
            let mut pieces = vec![(lo, hi)];
            for d in moves.iter().filter(|d| d.dst.track == nb) {
                let (a, b) = (d.dst.sector, d.dst.sector + d.count);
                pieces = pieces
                    .into_iter()
                    .flat_map(|(x, y)| [(x, y.min(a)), (x.max(b), y)])
                    .filter(|(x, y)| x < y)
                    .collect();
            }
            collateral.extend(pieces.into_iter().map(|(x, y)| Saved {
                track: nb,
                sector: x,
                count: y - x,
            }));
        }
    }
    // Spans of neighbouring destinations overlap on a shared top track: merge them.
    collateral.sort_by_key(|c| (c.track, c.sector));
    let mut merged: Vec<Saved> = vec![];
    for c in collateral {
        match merged.last_mut() {
            Some(m) if m.track == c.track && m.sector + m.count >= c.sector => {
                m.count = m.count.max(c.sector + c.count - m.sector);
            }
            _ => merged.push(c),
        }
    }
    let collateral = merged;
    let mut col_off = vec![];
    for c in &collateral {
        col_off.push(off);
        steps.push(Step::Read {
            cause,
            at: PhysAddr {
                track: c.track,
                sector: c.sector,
            },
            count: c.count,
            off,
        });
        off += c.count as usize;
    }
    let mut saved: Vec<Saved> = moves
        .iter()
        .map(|m| Saved {
            track: m.src.track,
            sector: m.src.sector,
            count: m.count,
        })
        .collect();
    saved.extend_from_slice(&collateral);
    steps.push(Step::Backup {
        saved,
        from: 0,
        tx: Some(tx),
    });
    for (i, m) in moves
        .iter()
        .enumerate()
        .filter(|(_, m)| geom.kind(m.dst.track) == TrackKind::Bottom)
    {
        steps.push(Step::Write {
            cause,
            at: m.dst,
            count: m.count,
            off: src_off[i],
            mark: true,
        });
    }
    for (i, c) in collateral.iter().enumerate() {
        let at = PhysAddr {
            track: c.track,
            sector: c.sector,
        };
        steps.push(Step::Write {
            cause,
            at,
            count: c.count,
            off: col_off[i],
            mark: false,
        });
    }
    for (i, m) in moves
        .iter()
        .enumerate()
        .filter(|(_, m)| geom.kind(m.dst.track) != TrackKind::Bottom)
    {
        steps.push(Step::Write {
            cause,
            at: m.dst,
            count: m.count,
            off: src_off[i],
            mark: true,
        });
    }
    steps.push(Step::Commit {
        updates: updates.to_vec(),
        forget: true,
    });
    steps
}

/// The steps of a full-track read-modify-write of bottom track `track` with
/// data already in the buffer at `data_off` (an eviction's home write): read
/// the written top neighbours (cause `rmw`) into the buffer from `off`, save
/// them as one RMW record, write the track (`cause`), restore the
/// neighbours. Returns the next free buffer offset (less `off`: the
/// sectors saved; none: nothing to save, `rmw_skipped_empty`).
pub fn track_rmw_steps(
    rmw: &RmwEngine,
    dev: &Device,
    track: Track,
    cause: Cause,
    data_off: usize,
    mut off: usize,
    steps: &mut Vec<Step>,
) -> usize {
    let geom = dev.geometry();
    let spt = geom.sectors_in(track);
    let mut spans: Vec<Saved> = vec![];
    for nb in geom.damaged_by_write(track) {
        if rmw.skip_empty && !rmw.holds_data(dev, nb) {
            continue;
        }
        let (lo, hi) = geom.overlap_span(track, 0, spt, nb);
        spans.push(Saved {
            track: nb,
            sector: lo,
            count: hi - lo,
        });
    }
    let from = off;
    let mut span_off = vec![];
    for s in &spans {
        span_off.push(off);
        steps.push(Step::Read {
            cause: Cause::Rmw,
            at: PhysAddr {
                track: s.track,
                sector: s.sector,
            },
            count: s.count,
            off,
        });
        off += s.count as usize;
    }
    if !spans.is_empty() {
        steps.push(Step::Backup {
            saved: spans.clone(),
            from,
            tx: None,
        });
    }
    steps.push(Step::Write {
        cause,
        at: PhysAddr { track, sector: 0 },
        count: spt,
        off: data_off,
        mark: true,
    });
    for (i, s) in spans.iter().enumerate() {
        let at = PhysAddr {
            track: s.track,
            sector: s.sector,
        };
        steps.push(Step::Write {
            cause: Cause::Rmw,
            at,
            count: s.count,
            off: span_off[i],
            mark: false,
        });
    }
    off
}
