//! The backup region of IMR read-modify-write and track flipping (paper 000
//! section 2.1, "Safety and crash consistency"): before data is endangered
//! it is copied here, with a header that says where it belongs; after a
//! power loss the newest complete record is copied back home.
//!
//! Choices where the paper is silent:
//! * One record at a time (one RMW or flip in flight), written from sector 0
//!   of the region's first top track and continued on the next ones when it
//!   does not fit; each track's part starts with a one-sector header (a
//!   metadata record) naming the record's sequence number, the part, the
//!   number of parts and the home extents saved.
//! * Lazy clearing as the paper describes: the layer keeps the live record's
//!   extents in memory and clears the record (one header write) only before a
//!   write would make its contents stale. A new record replaces the old one.
//! * Recovery reads every backup track, restores the newest complete,
//!   uncleared record to its home extents, then clears it.

use crate::device::{Cause, Device};
use crate::error::SimResult;
use crate::medium::Token;
use crate::units::{PhysAddr, Track};

const MAGIC: u64 = 0x494d_5242_4b55_5031; // "IMRBKUP1"
const CLEARED: u64 = u64::MAX;

/// A home extent saved in a record: `count` sectors from `sector` of `track`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saved {
    /// Home track.
    pub track: Track,
    /// First sector.
    pub sector: u32,
    /// Sectors.
    pub count: u32,
}

impl Saved {
    /// Whether the extent meets sectors `[lo, hi)` of `t`.
    pub fn meets(&self, t: Track, lo: u32, hi: u32) -> bool {
        self.track == t && self.sector < hi && lo < self.sector + self.count
    }
}

/// The backup region: where records go, and the live record's extents.
#[derive(Debug)]
pub struct BackupRegion {
    tracks: Vec<Track>,
    seq: u64,
    live: Vec<Saved>,
    /// The parts of the record being written (reused buffer).
    parts: Vec<(Track, u64)>,
    /// Records written.
    pub records: u64,
    /// Lazy clears performed.
    pub clears: u64,
    /// Records restored by recovery.
    pub restored: u64,
}

impl BackupRegion {
    /// A backup region on top tracks of a reserved region (usable ones only).
    pub fn new(tracks: Vec<Track>) -> BackupRegion {
        BackupRegion {
            tracks,
            seq: 0,
            live: vec![],
            parts: vec![],
            records: 0,
            clears: 0,
            restored: 0,
        }
    }

    /// The home extents of the live (uncleared) record; empty when none is live.
    pub fn live(&self) -> &[Saved] {
        &self.live
    }

    /// Whether a write to `[lo, hi)` of `t` would make the live record stale.
    pub fn endangers(&self, t: Track, lo: u32, hi: u32) -> bool {
        self.live.iter().any(|s| s.meets(t, lo, hi))
    }

    /// A record part's header words, written into `w` (a buffer from
    /// [`Device::meta_words`]).
    fn header(
        mut w: Vec<u64>,
        seq: u64,
        part: usize,
        parts: usize,
        saved: &[Saved],
        tx: u64,
    ) -> Vec<u64> {
        w.extend([
            MAGIC,
            seq,
            part as u64,
            parts as u64,
            saved.len() as u64,
            tx,
        ]);
        for s in saved {
            w.extend([s.track.0, s.sector as u64, s.count as u64]);
        }
        w
    }

    /// Save `saved` extents (their tokens concatenated in `data` when data
    /// is carried) as the new live record of a read-modify-write: restored
    /// unconditionally after a power loss.
    pub fn save(&mut self, dev: &mut Device, saved: &[Saved], data: &[Token]) -> SimResult<()> {
        self.save_tx(dev, saved, data, 0)
    }

    /// Save the pre-move contents of a relocation that commits as map change
    /// `tx`: after a power loss they are restored only if `tx` was not committed.
    pub fn save_tx(
        &mut self,
        dev: &mut Device,
        saved: &[Saved],
        data: &[Token],
        tx: u64,
    ) -> SimResult<()> {
        let total: u64 = saved.iter().map(|s| s.count as u64).sum();
        self.seq += 1;
        // The parts go in a buffer kept between records (no allocation per record).
        let mut parts = std::mem::take(&mut self.parts);
        parts.clear();
        let mut left = total;
        for &t in &self.tracks {
            let room = dev.geometry().sectors_in(t) as u64 - 1;
            let take = left.min(room);
            parts.push((t, take));
            left -= take;
            if left == 0 {
                break;
            }
        }
        assert!(
            left == 0,
            "backup region too small for {total} sectors (validated at build time)"
        );
        let mut off = 0usize;
        let n = parts.len();
        for (i, &(t, take)) in parts.iter().enumerate() {
            let words = Self::header(
                dev.meta_words(6 + 3 * saved.len()),
                self.seq,
                i,
                n,
                saved,
                tx,
            );
            let payload: Vec<Token> = if data.is_empty() {
                vec![]
            } else {
                let mut v = Vec::with_capacity(take as usize + 1);
                v.push(Token::EMPTY);
                v.extend_from_slice(&data[off..off + take as usize]);
                v
            };
            dev.write_meta(
                Cause::Backup,
                PhysAddr {
                    track: t,
                    sector: 0,
                },
                take as u32 + 1,
                &payload,
                words,
            )?;
            off += take as usize;
        }
        self.parts = parts;
        self.live.clear();
        self.live.extend_from_slice(saved);
        self.records += 1;
        Ok(())
    }

    /// Largest number of sectors one record can hold.
    pub fn room(&self, dev: &Device) -> u64 {
        self.tracks
            .iter()
            .map(|&t| dev.geometry().sectors_in(t) as u64 - 1)
            .sum()
    }

    /// Make the live record harmless before its data goes stale.
    pub fn clear(&mut self, dev: &mut Device, cause: Cause) -> SimResult<()> {
        if self.live.is_empty() {
            return Ok(());
        }
        let mut words = dev.meta_words(2);
        words.extend([MAGIC, CLEARED]);
        let payload = if dev.carries_data() {
            vec![Token::EMPTY]
        } else {
            vec![]
        };
        dev.write_meta(
            cause,
            PhysAddr {
                track: self.tracks[0],
                sector: 0,
            },
            1,
            &payload,
            words,
        )?;
        self.live.clear();
        self.clears += 1;
        Ok(())
    }

    /// Clear the live record if a write to `[lo, hi)` of `t` would make it stale.
    pub fn before_write(&mut self, dev: &mut Device, t: Track, lo: u32, hi: u32) -> SimResult<()> {
        if self.endangers(t, lo, hi) {
            self.clear(dev, Cause::Backup)?;
        }
        Ok(())
    }

    /// Forget the live record without writing (a committed relocation's
    /// record is never restored, so it needs no lazy clearing).
    pub fn forget(&mut self) {
        self.live.clear();
    }

    /// After a power loss: restore the newest complete, uncleared record,
    /// unless it belongs to a relocation committed as map change `<= committed`.
    pub fn recover(&mut self, dev: &mut Device, committed: u64) -> SimResult<()> {
        // Read every backup track to find the headers.
        let mut found: Vec<(Track, Vec<u64>, u32)> = vec![];
        for &t in &self.tracks {
            let spt = dev.geometry().sectors_in(t);
            let mut sink = vec![];
            dev.read(
                Cause::Recovery,
                PhysAddr {
                    track: t,
                    sector: 0,
                },
                spt,
                &mut sink,
            )?;
            if let Some(r) = dev
                .meta_records(t)
                .into_iter()
                .find(|r| r.sector == 0 && r.words.first() == Some(&MAGIC))
            {
                found.push((t, r.words, r.count));
            }
        }
        let Some(first) = found.first() else {
            return Ok(());
        };
        if first.1.get(1) == Some(&CLEARED) || first.1.len() < 6 {
            self.seq = found
                .iter()
                .filter_map(|f| f.1.get(1))
                .filter(|&&s| s != CLEARED)
                .max()
                .copied()
                .unwrap_or(0);
            return Ok(());
        }
        let seq = first.1[1];
        let parts = first.1[3] as usize;
        // Complete: parts 0..parts on consecutive backup tracks with the same sequence number.
        let complete = found.len() >= parts
            && (0..parts).all(|i| {
                found[i].0 == self.tracks[i]
                    && found[i].1.get(1) == Some(&seq)
                    && found[i].1.get(2) == Some(&(i as u64))
            });
        self.seq = seq;
        if !complete {
            return Ok(());
        }
        let words = &first.1;
        let n = words[4] as usize;
        let tx = words[5];
        if tx != 0 && tx <= committed {
            return Ok(());
        }
        let saved: Vec<Saved> = (0..n)
            .map(|i| Saved {
                track: Track(words[6 + 3 * i]),
                sector: words[7 + 3 * i] as u32,
                count: words[8 + 3 * i] as u32,
            })
            .collect();
        // Gather the saved tokens (the reads above were timed; this collects their contents).
        let mut data: Vec<Token> = vec![];
        if dev.carries_data() {
            for f in found.iter().take(parts) {
                let mut v = vec![];
                dev.peek_sectors(
                    PhysAddr {
                        track: f.0,
                        sector: 1,
                    },
                    f.2 - 1,
                    &mut v,
                );
                data.extend(v);
            }
        }
        // Bottom tracks first: restoring them damages their top neighbours,
        // whose saved contents are written after.
        let mut order: Vec<(usize, usize)> = vec![];
        let mut off = 0usize;
        for (i, s) in saved.iter().enumerate() {
            order.push((i, off));
            off += s.count as usize;
        }
        order.sort_by_key(|&(i, _)| {
            dev.geometry().kind(saved[i].track) != crate::geometry::TrackKind::Bottom
        });
        for (i, off) in order {
            let s = &saved[i];
            let chunk = if data.is_empty() {
                &[][..]
            } else {
                &data[off..off + s.count as usize]
            };
            dev.write(
                Cause::Recovery,
                PhysAddr {
                    track: s.track,
                    sector: s.sector,
                },
                s.count,
                chunk,
            )?;
        }
        self.restored += 1;
        self.live = saved;
        self.clear(dev, Cause::Recovery)
    }
}
