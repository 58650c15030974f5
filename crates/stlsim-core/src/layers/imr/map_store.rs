//! Persistent translation maps for the IMR layers that move data (track
//! flipping, selective track caching, dynamic track mapping): a checkpoint of
//! the whole map plus a log of updates, in a "checkpoint location" (paper 000
//! section 2.2, "Safety and crash consistency").
//!
//! Choices where the paper is silent:
//! * Three reserved top tracks: two checkpoint slots used alternately (so a
//!   power loss while writing one leaves the other intact) and one log track.
//! * Each map change (one flip, promotion, eviction or swap) is one log
//!   record of one sector, appended at the next free sector of the log track:
//!   the commit point of the move. When the log track is full, the whole map
//!   is checkpointed to the older slot and the log starts again from sector 0;
//!   records older than the newest checkpoint are ignored on recovery.
//! * A checkpoint occupies as many sectors as the map's in-memory size by the
//!   paper's formula (e.g. 3 bits per bottom track for flipping), so its cost
//!   is realistic; its words hold only the entries that differ from the
//!   identity map.
//! * Recovery reads the three tracks, takes the newest intact checkpoint and
//!   replays the newer log records in order.

use crate::device::{Cause, Device};
use crate::error::SimResult;
use crate::medium::Token;
use crate::units::{PhysAddr, Track};
use std::collections::BTreeMap;

const CKPT: u64 = 0x494d_5243_4b50_5431; // "IMRCKPT1"
const LOG: u64 = 0x494d_524c_4f47_3031; // "IMRLOG01"

/// A map from keys to values persisted by checkpoint and log.
#[derive(Debug)]
pub struct MapStore {
    slots: [Track; 2],
    log: Track,
    /// Sectors a checkpoint occupies.
    ckpt_sectors: u32,
    /// The live map (entries that differ from the layer's default).
    pub map: BTreeMap<u64, u64>,
    seq: u64,
    next_log_sector: u32,
    next_slot: usize,
    /// One-sector log records written, one per map change (`map_log_writes`).
    pub log_writes: u64,
    /// Whole-map checkpoints written, one each time the log track filled
    /// (`map_checkpoints`).
    pub checkpoints: u64,
}

impl MapStore {
    /// A store on three reserved top tracks, for a map of `map_bytes` bytes.
    pub fn new(dev: &Device, tracks: [Track; 3], map_bytes: u64) -> MapStore {
        let sb = dev.geometry().sector_bytes() as u64;
        let room = dev
            .geometry()
            .sectors_in(tracks[0])
            .min(dev.geometry().sectors_in(tracks[1]));
        MapStore {
            slots: [tracks[0], tracks[1]],
            log: tracks[2],
            ckpt_sectors: (map_bytes.div_ceil(sb) + 1).min(room as u64) as u32,
            map: BTreeMap::new(),
            seq: 0,
            next_log_sector: 0,
            next_slot: 0,
            log_writes: 0,
            checkpoints: 0,
        }
    }

    /// Add the store's counters (`map_log_writes`, `map_checkpoints`) to a
    /// report; a store not yet created counts zero.
    pub fn report(store: Option<&MapStore>, r: &mut crate::layers::LayerReport) {
        let (logs, ckpts) = store
            .map(|s| (s.log_writes, s.checkpoints))
            .unwrap_or((0, 0));
        r.insert("map_log_writes".into(), logs as f64);
        r.insert("map_checkpoints".into(), ckpts as f64);
    }

    /// The sequence number of the last committed change.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    fn blank(dev: &Device, n: u32) -> Vec<Token> {
        if dev.carries_data() {
            vec![Token::EMPTY; n as usize]
        } else {
            vec![]
        }
    }

    /// Commit a change: apply `updates` (key → value; `None` removes the
    /// entry) and append them as one log record. Returns the change's sequence number.
    pub fn commit(&mut self, dev: &mut Device, updates: &[(u64, Option<u64>)]) -> SimResult<u64> {
        if self.next_log_sector >= dev.geometry().sectors_in(self.log) {
            self.checkpoint(dev)?;
        }
        let seq = self.seq + 1;
        let mut words = vec![LOG, seq, updates.len() as u64];
        for &(k, v) in updates {
            words.extend([k, v.map(|v| v + 1).unwrap_or(0)]);
        }
        let at = PhysAddr {
            track: self.log,
            sector: self.next_log_sector,
        };
        dev.write_meta(Cause::Metadata, at, 1, &Self::blank(dev, 1), words)?;
        self.seq = seq;
        self.next_log_sector += 1;
        self.log_writes += 1;
        for &(k, v) in updates {
            match v {
                Some(v) => self.map.insert(k, v),
                None => self.map.remove(&k),
            };
        }
        Ok(seq)
    }

    /// Write the whole map to the older checkpoint slot and restart the log.
    pub fn checkpoint(&mut self, dev: &mut Device) -> SimResult<()> {
        let mut words = vec![CKPT, self.seq, self.map.len() as u64];
        for (&k, &v) in &self.map {
            words.extend([k, v]);
        }
        let slot = self.slots[self.next_slot];
        let n = self.ckpt_sectors;
        dev.write_meta(
            Cause::Metadata,
            PhysAddr {
                track: slot,
                sector: 0,
            },
            n,
            &Self::blank(dev, n),
            words,
        )?;
        self.next_slot ^= 1;
        self.next_log_sector = 0;
        self.checkpoints += 1;
        Ok(())
    }

    /// Rebuild the map after a power loss.
    pub fn recover(&mut self, dev: &mut Device) -> SimResult<()> {
        let mut best: Option<(u64, Vec<u64>, usize)> = None;
        for (i, &t) in self.slots.iter().enumerate() {
            let spt = dev.geometry().sectors_in(t);
            dev.read(
                Cause::Recovery,
                PhysAddr {
                    track: t,
                    sector: 0,
                },
                spt,
                &mut vec![],
            )?;
            for r in dev.meta_records(t) {
                if r.sector == 0
                    && r.words.first() == Some(&CKPT)
                    && best.as_ref().is_none_or(|b| r.words[1] > b.0)
                {
                    best = Some((r.words[1], r.words, i));
                }
            }
        }
        self.map.clear();
        let mut seq = 0;
        if let Some((s, words, slot)) = best {
            seq = s;
            let n = words[2] as usize;
            for i in 0..n {
                self.map.insert(words[3 + 2 * i], words[4 + 2 * i]);
            }
            self.next_slot = slot ^ 1;
        }
        let spt = dev.geometry().sectors_in(self.log);
        dev.read(
            Cause::Recovery,
            PhysAddr {
                track: self.log,
                sector: 0,
            },
            spt,
            &mut vec![],
        )?;
        let mut logs: Vec<(u64, Vec<u64>, u32)> = dev
            .meta_records(self.log)
            .into_iter()
            .filter(|r| r.words.first() == Some(&LOG) && r.words[1] > seq)
            .map(|r| (r.words[1], r.words, r.sector))
            .collect();
        logs.sort_by_key(|l| l.0);
        let mut next_sector = 0;
        for (s, words, sector) in logs {
            // Only an unbroken run of sequence numbers counts.
            if s != seq + 1 {
                break;
            }
            seq = s;
            next_sector = sector + 1;
            let n = words[2] as usize;
            for i in 0..n {
                let (k, v) = (words[3 + 2 * i], words[4 + 2 * i]);
                if v == 0 {
                    self.map.remove(&k);
                } else {
                    self.map.insert(k, v - 1);
                }
            }
        }
        self.seq = seq;
        self.next_log_sector = next_sector;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::DriveConfig;
    use crate::geometry::LayoutConfig;

    fn dev() -> Device {
        let d = DriveConfig {
            track_bytes: 8 * 4096,
            tracks: Some(20),
            capacity_gib: None,
            layout: LayoutConfig {
                kind: crate::geometry::LayoutKind::Imr,
                ..Default::default()
            },
            ..Default::default()
        };
        let g = d.geometry().unwrap();
        let m = d.mechanics(g.tracks()).unwrap();
        Device::new(g, m, false)
    }

    #[test]
    fn log_and_checkpoints_rebuild_the_map() {
        let mut d = dev();
        let tracks = [Track(1), Track(3), Track(5)];
        let mut s = MapStore::new(&d, tracks, 4096);
        // 8-sector log track: 20 commits force two checkpoints.
        for i in 0..20u64 {
            s.commit(
                &mut d,
                &[
                    (i % 7, Some(i)),
                    (100 + i, if i % 2 == 0 { Some(1) } else { None }),
                ],
            )
            .unwrap();
        }
        assert!(s.checkpoints >= 2);
        let want = s.map.clone();
        let mut fresh = MapStore::new(&d, tracks, 4096);
        fresh.recover(&mut d).unwrap();
        assert_eq!(fresh.map, want);
        assert_eq!(fresh.seq(), 20);
        // And it keeps going from there.
        fresh.commit(&mut d, &[(3, Some(33))]).unwrap();
        let mut again = MapStore::new(&d, tracks, 4096);
        again.recover(&mut d).unwrap();
        assert_eq!(again.map.get(&3), Some(&33));
    }

    #[test]
    fn a_crash_before_the_log_record_loses_only_that_change() {
        let mut d = dev();
        let tracks = [Track(1), Track(3), Track(5)];
        let mut s = MapStore::new(&d, tracks, 4096);
        s.commit(&mut d, &[(1, Some(10))]).unwrap();
        d.set_crash_points(vec![d.ops_issued()]);
        assert!(s.commit(&mut d, &[(2, Some(20))]).is_err());
        let mut fresh = MapStore::new(&d, tracks, 4096);
        fresh.recover(&mut d).unwrap();
        assert_eq!(fresh.map.get(&1), Some(&10));
        assert_eq!(fresh.map.get(&2), None);
    }

    #[test]
    fn a_crash_at_every_operation_including_checkpoints_keeps_a_consistent_map() {
        let tracks = [Track(1), Track(3), Track(5)];
        let update = |i: u64| {
            [
                (i % 5, Some(i)),
                (50 + i % 3, if i.is_multiple_of(4) { None } else { Some(i) }),
            ]
        };
        let mut points = 0;
        let mut in_checkpoints = 0;
        for k in 0..60u64 {
            let mut d = dev();
            let mut s = MapStore::new(&d, tracks, 4096);
            d.set_crash_points(vec![k]);
            let mut before = s.map.clone();
            let mut crashed = None;
            for i in 0..30u64 {
                before = s.map.clone();
                let ckpt = s.checkpoints;
                if s.commit(&mut d, &update(i)).is_err() {
                    crashed = Some((i, s.checkpoints == ckpt && s.next_log_sector >= 8));
                    break;
                }
            }
            let Some((i, during_checkpoint)) = crashed else {
                continue;
            };
            points += 1;
            in_checkpoints += during_checkpoint as u64;
            let mut fresh = MapStore::new(&d, tracks, 4096);
            fresh.recover(&mut d).unwrap();
            let mut after = before.clone();
            for (key, v) in update(i) {
                match v {
                    Some(v) => after.insert(key, v),
                    None => after.remove(&key),
                };
            }
            assert!(
                fresh.map == before || fresh.map == after,
                "crash at op {k} (commit {i})"
            );
            // And the store goes on from there, through further checkpoints.
            for j in 100..120 {
                fresh.commit(&mut d, &update(j)).unwrap();
            }
            let want = fresh.map.clone();
            let mut again = MapStore::new(&d, tracks, 4096);
            again.recover(&mut d).unwrap();
            assert_eq!(again.map, want, "after recovering from a crash at op {k}");
        }
        assert!(points >= 30, "{points}");
        assert!(
            in_checkpoints >= 2,
            "crashes inside checkpoint writes: {in_checkpoints}"
        );
    }
}
