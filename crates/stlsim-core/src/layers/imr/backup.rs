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
//! * **Slots** (`backup_location = spread`): the region may be several
//!   copies of those tracks spread over the disk; a record goes to the slot
//!   nearest the tracks it saves, so the trip there and back fits the
//!   rotations the paper's analysis counts. Sequence numbers are global and
//!   a cleared header keeps its record's number, so recovery reads each
//!   slot's first track and only the slot with the highest number counts:
//!   an older record left uncleared in another slot is never restored over
//!   newer data.

use crate::device::{Cause, Device};
use crate::error::SimResult;
use crate::medium::Token;
use crate::units::{PhysAddr, Track};

const MAGIC: u64 = 0x494d_5242_4b55_5031; // "IMRBKUP1"
const CLEARED: u64 = u64::MAX;

/// A home extent saved in a record: `count` sectors from `sector` of `track`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saved {
    /// The home track the sectors came from (and go back to on recovery).
    pub track: Track,
    /// First sector saved, counted from the track's sector 0.
    pub sector: u32,
    /// Sectors saved from `sector` on, all on `track`.
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
    /// The slots, `per` tracks each, one after another: each a run of top
    /// tracks a record is written to from its first. Sorted by first track.
    tracks: Vec<Track>,
    /// Tracks per slot: the top tracks one record may span.
    per: usize,
    /// The slot the live record is in.
    live_slot: usize,
    seq: u64,
    live: Vec<Saved>,
    /// The parts of the record being written (reused buffer).
    parts: Vec<(Track, u64)>,
    /// Records written, each before the data it saves was endangered (the
    /// report's `backup_records`).
    pub records: u64,
    /// Records cleared by a header write before their contents went stale
    /// (`backup_clears`); a record replaced by the next is not counted.
    pub clears: u64,
    /// Records restored by recovery.
    pub restored: u64,
    /// Records written to a different slot than the record before.
    pub slot_changes: u64,
}

impl BackupRegion {
    /// A backup region on top tracks of a reserved region (usable ones only).
    pub fn new(tracks: Vec<Track>) -> BackupRegion {
        BackupRegion::spread(vec![tracks])
    }

    /// A backup region of several slots (each a list of usable top tracks,
    /// all of the same length); records go to the slot nearest their data.
    pub fn spread(mut slots: Vec<Vec<Track>>) -> BackupRegion {
        slots.sort_by_key(|s| s[0]);
        let per = slots.iter().map(Vec::len).min().unwrap_or(0);
        let tracks = slots
            .iter()
            .flat_map(|s| s[..per].iter().copied())
            .collect();
        BackupRegion::flat(tracks, per)
    }

    /// A backup region of slots of `per` tracks each, laid one after another
    /// in `tracks` in ascending order of their first tracks.
    pub fn flat(tracks: Vec<Track>, per: usize) -> BackupRegion {
        assert!(per > 0 && tracks.len().is_multiple_of(per), "whole slots");
        BackupRegion {
            tracks,
            per,
            live_slot: 0,
            seq: 0,
            live: vec![],
            parts: vec![],
            records: 0,
            clears: 0,
            restored: 0,
            slot_changes: 0,
        }
    }

    /// Slots records can go to.
    pub fn slots(&self) -> usize {
        self.tracks.len() / self.per
    }

    /// The tracks of slot `i`.
    fn slot(&self, i: usize) -> &[Track] {
        &self.tracks[i * self.per..(i + 1) * self.per]
    }

    /// The first track of the slot a record saving track `t` goes to.
    pub fn slot_near(&self, t: Track) -> Track {
        self.slot(self.nearest(t))[0]
    }

    /// The slot nearest track `t`.
    fn nearest(&self, t: Track) -> usize {
        let n = self.slots();
        // The first slot starting past `t` (binary search over the slots).
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.slot(mid)[0] <= t {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let i = lo;
        let dist = |j: usize| self.slot(j)[0].0.abs_diff(t.0);
        match i {
            0 => 0,
            i if i == n => i - 1,
            i if dist(i) < dist(i - 1) => i,
            i => i - 1,
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
        // A record still live elsewhere is superseded by this one's higher
        // number; nothing needs clearing first.
        let slot = saved.first().map_or(0, |s| self.nearest(s.track));
        if slot != self.live_slot && self.records > 0 {
            self.slot_changes += 1;
        }
        self.live_slot = slot;
        self.seq += 1;
        // The parts go in a buffer kept between records (no allocation per record).
        let mut parts = std::mem::take(&mut self.parts);
        parts.clear();
        let mut left = total;
        for &t in self.slot(self.live_slot) {
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
        self.room_in(dev.geometry())
    }

    /// Largest number of sectors one record can hold, in every slot.
    pub fn room_in(&self, g: &crate::geometry::Geometry) -> u64 {
        (0..self.slots())
            .map(|i| {
                self.slot(i)
                    .iter()
                    .map(|&t| g.sectors_in(t) as u64 - 1)
                    .sum()
            })
            .min()
            .unwrap_or(0)
    }

    /// Make the live record harmless before its data goes stale.
    pub fn clear(&mut self, dev: &mut Device, cause: Cause) -> SimResult<()> {
        if self.live.is_empty() {
            return Ok(());
        }
        let mut words = dev.meta_words(3);
        words.extend([MAGIC, CLEARED, self.seq]);
        let payload = if dev.carries_data() {
            vec![Token::EMPTY]
        } else {
            vec![]
        };
        dev.write_meta(
            cause,
            PhysAddr {
                track: self.slot(self.live_slot)[0],
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

    /// Read backup track `t` (timed) and return its header's words.
    fn read_header(dev: &mut Device, t: Track) -> SimResult<Option<Vec<u64>>> {
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
        Ok(Self::header_at(dev, t).map(|h| h.0))
    }

    /// The header record at sector 0 of backup track `t` (words, sectors), untimed.
    fn header_at(dev: &Device, t: Track) -> Option<(Vec<u64>, u32)> {
        dev.meta_records(t)
            .into_iter()
            .find(|r| r.sector == 0 && r.words.first() == Some(&MAGIC))
            .map(|r| (r.words, r.count))
    }

    /// After a power loss: restore the newest complete, uncleared record,
    /// unless it belongs to a relocation committed as map change `<= committed`.
    pub fn recover(&mut self, dev: &mut Device, committed: u64) -> SimResult<()> {
        // Each slot's first track says which record it holds; the slot with
        // the highest number is the only one that may need restoring.
        let mut best: Option<(u64, usize, bool)> = None;
        for i in 0..self.slots() {
            let t = self.slot(i)[0];
            let Some(words) = Self::read_header(dev, t)? else {
                continue;
            };
            let (seq, cleared) = match words.get(1) {
                Some(&CLEARED) => (words.get(2).copied().unwrap_or(0), true),
                Some(&s) if words.len() >= 6 => (s, false),
                _ => continue,
            };
            if best.is_none_or(|b| seq > b.0) {
                best = Some((seq, i, cleared));
            }
        }
        let Some((seq, slot, cleared)) = best else {
            return Ok(());
        };
        self.seq = seq;
        if cleared {
            return Ok(());
        }
        self.live_slot = slot;
        // Read the slot's other tracks the record says it spans.
        let tracks = self.slot(slot).to_vec();
        let mut found: Vec<(Track, Vec<u64>, u32)> = vec![];
        if let Some((w, c)) = Self::header_at(dev, tracks[0]) {
            found.push((tracks[0], w, c));
        }
        let parts = found[0].1[3] as usize;
        for &t in tracks.iter().take(parts).skip(1) {
            Self::read_header(dev, t)?;
            match Self::header_at(dev, t) {
                Some((w, c)) => found.push((t, w, c)),
                None => break,
            }
        }
        let first = &found[0];
        // Complete: parts 0..parts on consecutive backup tracks with the same sequence number.
        let complete = found.len() >= parts
            && (0..parts).all(|i| {
                found[i].0 == tracks[i]
                    && found[i].1.get(1) == Some(&seq)
                    && found[i].1.get(2) == Some(&(i as u64))
            });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::DriveConfig;
    use crate::geometry::LayoutConfig;

    use crate::units::Lba;

    fn device() -> Device {
        let d = DriveConfig {
            track_bytes: 16 * 4096,
            tracks: Some(400),
            capacity_gib: None,
            layout: LayoutConfig {
                kind: crate::geometry::LayoutKind::Imr,
                group_tracks: 2,
                ..Default::default()
            },
            ..Default::default()
        };
        let g = d.geometry().unwrap();
        let m = d.mechanics(g.tracks()).unwrap();
        Device::new(g, m, true)
    }

    fn ext(track: u64) -> Saved {
        Saved {
            track: Track(track),
            sector: 0,
            count: 2,
        }
    }

    #[test]
    fn records_go_to_the_nearest_slot_and_the_newest_slot_decides_recovery() {
        let mut dev = device();
        let slots = vec![
            vec![Track(301), Track(303), Track(305)],
            vec![Track(1), Track(3), Track(5)],
        ];
        let mut b = BackupRegion::spread(slots);
        assert_eq!(b.slots(), 2);
        let old = [Token::data(Lba(7), 1), Token::data(Lba(8), 1)];
        // A record for track 41 goes to the slot at track 1, one for 251 to the slot at 301.
        b.save(&mut dev, &[ext(41)], &old).unwrap();
        assert_eq!(b.slot(b.live_slot)[0], Track(1));
        let new = [Token::data(Lba(9), 2), Token::data(Lba(10), 2)];
        b.save(&mut dev, &[ext(251)], &new).unwrap();
        assert_eq!(b.slot(b.live_slot)[0], Track(301));
        assert_eq!(b.slot_changes, 1);
        // The newer record is cleared; the older one, in the other slot, was
        // never cleared but is superseded: recovery restores nothing.
        b.clear(&mut dev, Cause::Backup).unwrap();
        let mut fresh = BackupRegion::flat(b.tracks.clone(), b.per);
        fresh.recover(&mut dev, 0).unwrap();
        assert_eq!(fresh.restored, 0);
        assert_eq!(fresh.seq, 2, "numbering continues after the newest record");
        // Uncleared, the newest record is the one restored, to its own home.
        let mut b = fresh;
        b.save(&mut dev, &[ext(41)], &new).unwrap();
        let mut again = BackupRegion::flat(b.tracks.clone(), b.per);
        again.recover(&mut dev, 0).unwrap();
        assert_eq!(again.restored, 1);
        let mut home = vec![];
        dev.peek_sectors(
            PhysAddr {
                track: Track(41),
                sector: 0,
            },
            2,
            &mut home,
        );
        assert_eq!(home, new.to_vec());
    }
}
