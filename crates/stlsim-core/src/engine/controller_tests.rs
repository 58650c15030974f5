//! The controller's overheads and the on-drive read cache in whole runs.

use super::tests::{cfg, data_path, rec, run, small_drive, timed};
use super::*;
use crate::front_end::controller::{ControllerConfig, ReadAheadExtent, ReadCacheConfig, Scheduler};
use crate::trace::Op;
use crate::trace::TraceSpec;
use proptest::prelude::*;

fn controller() -> ControllerConfig {
    ControllerConfig {
        read_hit_after_read_ms: 0.3,
        read_hit_after_write_ms: 1.3,
        read_miss_after_read_ms: 2.5,
        read_miss_after_write_ms: 2.6,
        write_hit_after_read_ms: 3.2,
        write_hit_after_write_ms: 2.9,
        write_miss_after_read_ms: 3.3,
        write_miss_after_write_ms: 2.95,
        read_completion_ms: 0.25,
        write_completion_ms: 0.1,
        per_request_ms: 0.0,
        scheduler: Scheduler::Fcfs,
        read_high_water_mark: 0.0,
        read_link_per_block: false,
        write_link_per_block: false,
        destage_at_once: false,
    }
}

fn mean_ms(s: &Simulation, class: &str) -> f64 {
    s.report().latency[class].mean_ms
}

#[test]
fn a_read_miss_pays_its_command_and_completion_overheads_around_the_media_time() {
    let mut d = small_drive("cmr");
    d.rotation = crate::mechanics::Rotation::Average;
    let plain = run(
        cfg(d.clone(), "cmr"),
        vec![rec(0, Op::Read, 1000 * 100 + 37, 1)],
    )
    .unwrap();
    d.controller = Some(controller());
    let s = run(cfg(d, "cmr"), vec![rec(0, Op::Read, 1000 * 100 + 37, 1)]).unwrap();
    // The first request counts as following a read: 2.5 ms before the seek, 0.25 ms after the data.
    let want = mean_ms(&plain, "all") + 2.5 + 0.25;
    assert!(
        (mean_ms(&s, "all") - want).abs() < 1e-6,
        "{} vs {want}",
        mean_ms(&s, "all")
    );
}

#[test]
fn write_overheads_depend_on_the_request_before() {
    // Two writes to the same sector far apart in time: the first follows
    // "a read" (the start), the second a write. Write-through (no cache).
    let mut d = small_drive("cmr");
    d.rotation = crate::mechanics::Rotation::Average;
    let recs = vec![rec(0, Op::Write, 500, 1), rec(1_000_000, Op::Write, 500, 1)];
    let plain = run(cfg(d.clone(), "cmr"), recs.clone()).unwrap();
    d.controller = Some(controller());
    let s = run(cfg(d, "cmr"), recs).unwrap();
    let extra = (mean_ms(&s, "write") - mean_ms(&plain, "write")) * 2.0;
    assert!((extra - (3.3 + 2.95 + 2.0 * 0.1)).abs() < 1e-6, "{extra}");
}

fn read_cache(segments: u32, ahead: u32) -> ReadCacheConfig {
    ReadCacheConfig {
        segments,
        segment_sectors: 512,
        read_ahead_max_sectors: ahead,
        read_ahead_min_sectors: 0,
        read_hits_on_write_data: false,
        separate_write_segment: false,
        ..ReadCacheConfig::default()
    }
}

/// Hits, partial hits and sectors read ahead of a run of `seq` on the small
/// drive (100-sector tracks, 0.1 ms a sector) with the read cache `rc`.
fn ahead_run(rc: ReadCacheConfig, seq: &[(bool, u64, u64, u64)]) -> (u64, u64, u64, Simulation) {
    let mut d = small_drive("cmr");
    d.rotation = crate::mechanics::Rotation::Angular;
    d.controller = Some(controller());
    d.read_cache = Some(rc);
    let mut c = cfg(d, "cmr");
    c.verify = true;
    let s = run(c, timed(seq)).unwrap();
    let h = &s.report().host;
    (
        h.read_cache_hits,
        h.read_cache_partial_hits,
        h.read_ahead_sectors,
        s,
    )
}

#[test]
fn request_extent_reads_ahead_past_the_segment_room_and_the_segment_slides() {
    // Segment of 64, read-ahead 60. "segment": 64 - 8 = 56 sectors after an
    // 8-sector read; "request" (DiskSim Buffer continuous read = 3): 60 past
    // the request's end, the segment keeping its newest 64, so the request's
    // first sectors are gone by then.
    let rc = |extent| ReadCacheConfig {
        segment_sectors: 64,
        read_ahead_extent: extent,
        ..read_cache(1, 60)
    };
    let far = [(false, 1_000, 8, 0), (false, 1_060, 8, 30_000)];
    let again = [(false, 1_000, 8, 0), (false, 1_000, 8, 30_000)];
    let (hits, _, ahead, _) = ahead_run(rc(ReadAheadExtent::Segment), &far);
    assert_eq!((hits, ahead), (0, 56));
    let (hits, _, ahead, _) = ahead_run(rc(ReadAheadExtent::Request), &far);
    assert_eq!((hits, ahead), (1, 60));
    assert_eq!(ahead_run(rc(ReadAheadExtent::Segment), &again).0, 1);
    assert_eq!(
        ahead_run(rc(ReadAheadExtent::Request), &again).0,
        0,
        "slid out"
    );
    // Read-ahead 0: a segment's worth past the request's end (over requested)
    // or the segment filled from the request's start.
    for (over, want) in [(true, 64), (false, 56)] {
        let c = ReadCacheConfig {
            read_ahead_over_requested: over,
            ..rc(ReadAheadExtent::Request)
        };
        let c = ReadCacheConfig {
            read_ahead_max_sectors: 0,
            ..c
        };
        assert_eq!(ahead_run(c, &far).2, want, "over requested {over}");
    }
}

#[test]
fn track_extent_reads_ahead_to_the_track_end_or_a_track_further() {
    // DiskSim Buffer continuous read = 4: to the end of the track holding
    // the sector after the request (tracks of 100 sectors); a read that
    // began on the track before goes a track's worth further.
    let rc = ReadCacheConfig {
        read_ahead_extent: ReadAheadExtent::Track,
        ..read_cache(1, 7)
    };
    let (_, _, ahead, _) = ahead_run(rc.clone(), &[(false, 1_010, 8, 0), (false, 0, 1, 80_000)]);
    assert_eq!(ahead, 100 - 18);
    let (_, _, ahead, _) = ahead_run(rc, &[(false, 1_095, 10, 0), (false, 0, 1, 80_000)]);
    assert_eq!(ahead, 300 - 105);
}

#[test]
fn a_hit_on_the_segment_being_read_ahead_lets_the_read_ahead_go_on() {
    // A read, a sequential hit 20 ms later while the read-ahead (256) is
    // still running, and a read 40 ms after that past where it had got to:
    // a hit when the first hit let the read-ahead go on (DiskSim's access
    // swap), a miss when every request stops it.
    let seq = [
        (false, 1_000, 8, 0),
        (false, 1_008, 8, 20_000),
        (false, 1_256, 8, 40_000),
    ];
    for (go_on, want) in [(false, 1), (true, 2)] {
        let rc = ReadCacheConfig {
            read_ahead_extent: ReadAheadExtent::Request,
            hits_continue_read_ahead: go_on,
            ..read_cache(2, 256)
        };
        assert_eq!(ahead_run(rc, &seq).0, want, "hits continue {go_on}");
    }
    // A write stops it all the same.
    let seq = [
        (false, 1_000, 8, 0),
        (true, 5_000, 1, 20_000),
        (false, 1_256, 8, 40_000),
    ];
    let rc = ReadCacheConfig {
        read_ahead_extent: ReadAheadExtent::Request,
        hits_continue_read_ahead: true,
        ..read_cache(2, 256)
    };
    assert_eq!(ahead_run(rc, &seq).0, 0);
}

#[test]
fn a_prefix_hit_on_the_read_ahead_reads_the_rest_on_without_positioning() {
    // The second read finds its first sectors read ahead; the read-ahead
    // reads the rest on from where it is, a sector each 0.1 ms, so the read
    // ends (60 - buffered) sectors after it arrived, give or take a sector,
    // plus the completion (the 2.5 ms command overhead runs beside it). All
    // of it lies on one track (LBAs 1,000 to 1,099).
    let first = ahead_run(read_cache(2, 256), &[(false, 1_000, 8, 0)]).3;
    let lat1 = mean_ms(&first, "read");
    let seq = [(false, 1_000, 8, 0), (false, 1_008, 60, 13_000)];
    let rc = |go_on| ReadCacheConfig {
        read_ahead_extent: ReadAheadExtent::Request,
        hits_continue_read_ahead: go_on,
        ..read_cache(2, 256)
    };
    let (_, partial, have, s) = ahead_run(rc(true), &seq);
    assert_eq!(partial, 1);
    assert!(have > 8 && have < 40, "{have}");
    let lat2 = 2.0 * mean_ms(&s, "read") - lat1;
    let want = (60 - have) as f64 * 0.1 + 0.25;
    assert!((lat2 - want).abs() < 0.11, "{lat2} vs {want}");
    // Stopped instead, the rest waits for the overhead and the platter.
    let (_, _, _, s) = ahead_run(rc(false), &seq);
    assert!(2.0 * mean_ms(&s, "read") - lat1 > lat2 + 2.0);
}

#[test]
fn read_ahead_turns_the_next_sequential_read_into_a_buffer_hit() {
    // 100-sector tracks at 6000 RPM: a sector passes in 0.1 ms. A read of 8
    // sectors, then 30 ms after it was issued the next 8: the sectors that
    // passed under the head between the first read's end and then were read ahead.
    let mut d = small_drive("cmr");
    d.rotation = crate::mechanics::Rotation::Angular;
    d.controller = Some(controller());
    d.read_cache = Some(read_cache(2, 256));
    let first = run(cfg(d.clone(), "cmr"), timed(&[(false, 100_000, 8, 0)])).unwrap();
    let s = run(
        cfg(d, "cmr"),
        timed(&[(false, 100_000, 8, 0), (false, 100_008, 8, 30_000)]),
    )
    .unwrap();
    let r = s.report();
    assert_eq!(r.host.read_cache_hits, 1);
    // The hit costs the hit overhead and the completion only (no link time here).
    let hit_ms = 2.0 * mean_ms(&s, "read") - mean_ms(&first, "read");
    assert!((hit_ms - (0.3 + 0.25)).abs() < 1e-6, "{hit_ms}");
    let ahead = r
        .device
        .by_cause
        .iter()
        .find(|c| c.cause == "read_ahead")
        .expect("a read_ahead row");
    let first_done_ms = mean_ms(&first, "read") - 0.25;
    let want = ((30.0 - first_done_ms) / 0.1).floor() as u64;
    // (The mean comes from the latency histogram, good to a few microseconds: one sector either way.)
    assert!(
        want > 8 && ahead.read_sectors.abs_diff(want) <= 1,
        "{} vs {want}",
        ahead.read_sectors
    );
    assert_eq!(r.host.read_ahead_sectors, ahead.read_sectors);
}

#[test]
fn a_read_arriving_at_once_stops_the_read_ahead_and_a_write_drops_buffered_data() {
    let mut d = small_drive("cmr");
    d.read_cache = Some(read_cache(1, 256));
    // Back to back (no gap): nothing is read ahead, the second read misses.
    let s = run(
        cfg(d.clone(), "cmr"),
        timed(&[(false, 100_000, 8, 0), (false, 100_008, 8, 0)]),
    )
    .unwrap();
    assert_eq!(s.report().host.read_cache_hits, 0);
    assert_eq!(s.report().host.read_ahead_sectors, 0);
    // Re-reading buffered data hits, until a write overlaps it.
    let seq = [
        (false, 100_000, 8, 0),
        (false, 100_000, 8, 100_000),
        (true, 100_004, 1, 100_000),
        (false, 100_000, 8, 100_000),
    ];
    let mut c = cfg(d, "cmr");
    c.verify = true;
    let s = run(c, timed(&seq)).unwrap();
    assert_eq!(s.report().host.read_cache_hits, 1);
    assert_eq!(
        s.report().host.read_cache_partial_hits,
        1,
        "the last read found only sectors 0-3"
    );
}

#[test]
fn drives_without_the_tables_keep_their_reports() {
    // The read cache and overheads are off unless asked for: a run of the
    // same trace with and without `controller = None` is identical, and
    // the report has no read-cache keys.
    let mut c = cfg(small_drive("cmr"), "cmr");
    c.trace = TraceSpec {
        path: data_path("rsrch_1.csv"),
        limit: Some(2000),
        ..Default::default()
    };
    c.replay.fold = true;
    let a = serde_json::to_value(
        Simulation::new(c.clone())
            .and_then(|mut s| s.run().map(|_| s.report()))
            .unwrap(),
    )
    .unwrap();
    c.drive.controller = Some(ControllerConfig::default());
    let b = serde_json::to_value(
        Simulation::new(c)
            .and_then(|mut s| s.run().map(|_| s.report()))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(a["latency"], b["latency"]);
    assert!(a["host"].get("read_cache_hits").is_none());
}

#[test]
fn the_read_cache_keeps_every_block_on_real_traces_with_crashes() {
    for trace in ["rsrch_1.csv", "wdev_3.csv"] {
        for on_write in [false, true] {
            for crash in [None, Some(300)] {
                let mut d = small_drive("cmr");
                d.tracks = Some(400_000);
                d.rotation = crate::mechanics::Rotation::Angular;
                d.read_cache = Some(ReadCacheConfig {
                    read_hits_on_write_data: on_write,
                    ..read_cache(4, 128)
                });
                d.controller = Some(controller());
                let mut c = cfg(d, "cmr");
                c.trace = TraceSpec {
                    path: data_path(trace),
                    ..Default::default()
                };
                c.replay.fold = true;
                c.verify = true;
                c.crash_after = crash.into_iter().collect();
                let mut s = Simulation::new(c).unwrap();
                s.run().unwrap_or_else(|e| {
                    panic!("{trace} (hits on writes {on_write}, crash {crash:?}): {e}")
                });
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// Every read returns the newest acknowledged write with the read cache
    /// and the write cache on, across crashes.
    #[test]
    fn reads_through_the_read_cache_see_newest_writes(
        seq in proptest::collection::vec((any::<bool>(), 0u64..2_000, 1u64..64, 0u64..5_000), 1..300),
        segments in 1u32..5,
        ahead in 0u32..300,
        on_write in any::<bool>(),
        cache_sectors in prop_oneof![Just(0u64), 1u64..256],
        crash in proptest::option::of(1u64..300),
        extent in prop_oneof![Just(ReadAheadExtent::Segment), Just(ReadAheadExtent::Request), Just(ReadAheadExtent::Track)],
        go_on in any::<bool>(),
        over in any::<bool>(),
        idle in any::<bool>(),
    ) {
        let mut d = small_drive("cmr");
        d.write_cache_mib = cache_sectors as f64 * 4096.0 / (1024.0 * 1024.0);
        d.read_cache = Some(ReadCacheConfig {
            read_hits_on_write_data: on_write,
            read_ahead_extent: extent,
            hits_continue_read_ahead: go_on,
            read_ahead_over_requested: over,
            read_ahead_on_idle_hit: idle,
            ..read_cache(segments, ahead)
        });
        let mut c = cfg(d, "cmr");
        c.verify = true;
        c.crash_after = crash.map(|k| k.min(seq.len() as u64)).into_iter().collect();
        let s = run(c, timed(&seq));
        prop_assert!(s.is_ok(), "{}", s.err().unwrap());
    }
}

/// Three requests: one that keeps the drive busy, then, while it works, a
/// far one and a near one; the order the drive served them in.
fn served_order(scheduler: Scheduler) -> Vec<u64> {
    let mut d = small_drive("cmr");
    d.rotation = crate::mechanics::Rotation::Angular;
    d.controller = Some(ControllerConfig {
        scheduler,
        ..Default::default()
    });
    let mut c = cfg(d, "cmr");
    c.replay.queue_depth = 8;
    c.verify = true; // the device logs its operations when it carries data
                     // Track 0 first (100 sectors, a whole rotation); then track 1900 and track 5.
    let recs = vec![
        rec(0, Op::Read, 0, 100),
        rec(10, Op::Read, 1900 * 100 + 50, 1),
        rec(20, Op::Read, 5 * 100 + 50, 1),
    ];
    let s = run(c, recs).unwrap();
    // The first three: the final verification scan reads again.
    s.device()
        .recent_ops()
        .take(3)
        .map(|o| o.at.track.0)
        .collect()
}

#[test]
fn sptf_and_sstf_serve_the_nearest_first_and_fcfs_keeps_arrival_order() {
    assert_eq!(served_order(Scheduler::Fcfs), [0, 1900, 5]);
    assert_eq!(served_order(Scheduler::Sstf), [0, 5, 1900]);
    assert_eq!(served_order(Scheduler::Sptf), [0, 5, 1900]);
}

#[test]
fn sptf_weighs_rotation_not_only_distance() {
    // Head on track 0 after a whole-track read ending at angle 0. Two
    // one-sector reads queued: track 1 at sector 10 (a 1-track seek of 2 ms
    // then wait for sector 10, which passed at 1 ms: almost a rotation, 10.0
    // ms in all) and track 3 at sector 40 (seek ~2.3 ms, sector 40 comes at
    // 4 ms: 4.0 ms in all). SSTF takes track 1, SPTF track 3.
    let order = |scheduler| {
        let mut d = small_drive("cmr");
        d.rotation = crate::mechanics::Rotation::Angular;
        d.controller = Some(ControllerConfig {
            scheduler,
            ..Default::default()
        });
        let mut c = cfg(d, "cmr");
        c.replay.queue_depth = 8;
        c.verify = true;
        let recs = vec![
            rec(0, Op::Read, 0, 100),
            rec(10, Op::Read, 100 + 10, 1),
            rec(20, Op::Read, 300 + 40, 1),
        ];
        let s = run(c, recs).unwrap();
        s.device()
            .recent_ops()
            .take(3)
            .map(|o| o.at.track.0)
            .collect::<Vec<_>>()
    };
    assert_eq!(order(Scheduler::Sstf), [0, 1, 3]);
    assert_eq!(order(Scheduler::Sptf), [0, 3, 1]);
}

#[test]
fn a_scheduler_never_reorders_overlapping_requests_when_one_writes() {
    let mut d = small_drive("cmr");
    d.controller = Some(ControllerConfig {
        scheduler: Scheduler::Sptf,
        ..Default::default()
    });
    let mut c = cfg(d, "cmr");
    c.replay.queue_depth = 8;
    c.verify = true;
    // Busy on track 0; then a write far away, a read of the sector it
    // writes, and a read nearby: the nearby read may go first, the read of
    // the written sector not before the write.
    let recs = vec![
        rec(0, Op::Read, 0, 100),
        rec(10, Op::Write, 1900 * 100, 1),
        rec(20, Op::Read, 1900 * 100, 1),
        rec(30, Op::Read, 500, 1),
    ];
    let s = run(c, recs).unwrap();
    let order: Vec<u64> = s
        .device()
        .recent_ops()
        .take(4)
        .map(|o| o.at.track.0)
        .collect();
    assert_eq!(order, [0, 5, 1900, 1900]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
    /// Reordered by SPTF or SSTF, with the read cache and the write cache,
    /// every read still returns the newest acknowledged write, across crashes.
    #[test]
    fn reordering_keeps_reads_newest(
        seq in proptest::collection::vec((any::<bool>(), 0u64..2_000, 1u64..64, 0u64..2_000), 1..300),
        sptf in any::<bool>(),
        qd in 2u64..32,
        cached in any::<bool>(),
        crash in proptest::option::of(1u64..300),
    ) {
        let mut d = small_drive("cmr");
        d.write_cache_mib = if cached { 0.5 } else { 0.0 };
        d.read_cache = Some(read_cache(2, 64));
        d.controller = Some(ControllerConfig { scheduler: if sptf { Scheduler::Sptf } else { Scheduler::Sstf }, ..Default::default() });
        let mut c = cfg(d, "cmr");
        c.verify = true;
        c.replay.queue_depth = qd;
        c.crash_after = crash.map(|k| k.min(seq.len() as u64)).into_iter().collect();
        let s = run(c, timed(&seq));
        prop_assert!(s.is_ok(), "{}", s.err().unwrap());
        // Every request was served (or lost in flight at a crash), none twice.
        let h = s.unwrap().report().host;
        prop_assert_eq!(h.requests + h.lost_in_crash, seq.len() as u64);
    }
}

#[test]
fn a_high_water_mark_of_one_sends_a_read_once_it_is_all_buffered() {
    // 8 sectors of 4 KiB over a 40 MB/s link: 0.8192 ms. Overlapped with the
    // media read (mark 0) the link adds nothing past the media's end unless
    // it is slower; with mark 1 it follows the media read whole.
    let mut d = small_drive("cmr");
    d.interface_mb_s = 40.0;
    let recs = vec![rec(0, Op::Read, 100_000, 8)];
    d.controller = Some(ControllerConfig {
        read_high_water_mark: 0.0,
        ..Default::default()
    });
    let overlapped = mean_ms(&run(cfg(d.clone(), "cmr"), recs.clone()).unwrap(), "read");
    d.controller = Some(ControllerConfig {
        read_high_water_mark: 1.0,
        ..Default::default()
    });
    let after = mean_ms(&run(cfg(d, "cmr"), recs).unwrap(), "read");
    assert!(
        (after - overlapped - 8.0 * 4096.0 / 40e3).abs() < 1e-3,
        "{after} {overlapped}"
    );
}

#[test]
fn a_read_sent_block_by_block_waits_for_each_block_to_be_buffered() {
    // 100 sectors of 4 KiB a track at 6,000 rpm: a sector passes under the
    // head every 0.1 ms. Over a 20.48 MB/s link a 4 KiB block takes 0.2 ms.
    // Overlapped with the media (mark 0, the link free to start at once) an
    // 8-block read completes when the media read ends: its 1.6 ms of link
    // time fit in the seek. Block by block, the link sends block k once it is
    // buffered and block k-1 is sent: the first block is buffered 0.7 ms
    // before the media read ends and the link then needs 8 x 0.2 = 1.6 ms,
    // so the read completes 1.6 - 0.7 = 0.9 ms after the media read. Over an
    // 81.92 MB/s link (0.05 ms a block, faster than the media) only the last
    // block's 0.05 ms is left after the media read ends.
    let recs = vec![rec(0, Op::Read, 100_000, 8)];
    let read_ms = |mb_s: f64, per_block: bool| {
        let mut d = small_drive("cmr");
        d.rotation = crate::mechanics::Rotation::Average;
        d.interface_mb_s = mb_s;
        d.controller = Some(ControllerConfig {
            read_link_per_block: per_block,
            ..Default::default()
        });
        mean_ms(&run(cfg(d, "cmr"), recs.clone()).unwrap(), "read")
    };
    let media = read_ms(0.0, false);
    assert!((read_ms(20.48, false) - media).abs() < 1e-6);
    assert!((read_ms(20.48, true) - media - 0.9).abs() < 1e-6);
    assert!((read_ms(81.92, false) - media).abs() < 1e-6);
    assert!((read_ms(81.92, true) - media - 0.05).abs() < 1e-6);
    // Block by block is the one-block water mark; another mark is refused.
    let mut d = small_drive("cmr");
    d.controller = Some(ControllerConfig {
        read_link_per_block: true,
        read_high_water_mark: 0.5,
        ..Default::default()
    });
    let e = run(cfg(d, "cmr"), recs).err().unwrap().to_string();
    assert!(
        e.contains("controller.read_link_per_block = true needs read_high_water_mark = 0"),
        "{e}"
    );
}

#[test]
fn a_write_through_write_waits_for_each_block_to_come_over_the_link() {
    // 100 sectors of 4 KiB a track at 6,000 rpm: a sector passes every 0.1
    // ms, a rotation takes 10 ms. Written through (no write cache), an
    // 8-block write's media write starts S after issue (seek and half a
    // rotation) and ends 0.8 ms later. Over a link that brings the last
    // block 0.5 ms after its sector starts to pass (8 blocks in S + 1.2 ms,
    // every earlier block in time), the media write passes that sector over
    // and writes it a rotation later: the write completes 10 ms after the
    // media alone would have, where the link overlapping the media whole
    // only made it end with the link, 0.4 ms after the media. A link faster
    // than the media changes nothing.
    let recs = vec![rec(0, Op::Write, 100_000, 8)];
    let write_ms = |mb_s: f64, per_block: bool| {
        let mut d = small_drive("cmr");
        d.rotation = crate::mechanics::Rotation::Average;
        d.write_cache_mib = 0.0;
        d.interface_mb_s = mb_s;
        d.controller = Some(ControllerConfig {
            write_link_per_block: per_block,
            ..Default::default()
        });
        mean_ms(&run(cfg(d, "cmr"), recs.clone()).unwrap(), "write")
    };
    let media = write_ms(0.0, false);
    let s = media - 0.8;
    assert!(s > 5.0, "{media}");
    let slow = 8.0 * 4.096 / (s + 1.2);
    assert!((write_ms(slow, false) - media - 0.4).abs() < 1e-3);
    assert!((write_ms(slow, true) - media - 10.0).abs() < 1e-3);
    assert!((write_ms(81.92, false) - media).abs() < 1e-6);
    assert!((write_ms(81.92, true) - media).abs() < 1e-6);
}

#[test]
fn a_read_ahead_never_runs_past_the_arrival_that_stops_it() {
    // A read ending 8 sectors before its track's end; the next request, far
    // away, arrives 3 ms (30 sector times) after it. The read-ahead reads
    // the rest of the track, but the next track's first sector (a seek and
    // most of a rotation away) would come after the arrival: it stops at
    // the track's end, the head stays on the track, and the far read takes
    // just what it takes without a read cache (the rotational wait is the
    // platter's angle at the same moment). Counting 30 sector times at the
    // media rate, stlsim used to read on into the next track and start the
    // far read many milliseconds late.
    let mut d = small_drive("cmr");
    d.rotation = crate::mechanics::Rotation::Angular;
    d.controller = Some(controller());
    let first = run(cfg(d.clone(), "cmr"), timed(&[(false, 1_090, 2, 0)])).unwrap();
    let gap = ((mean_ms(&first, "read") - 0.25 + 3.0) * 1000.0).round() as u64;
    let seq = [(false, 1_090, 2, 0), (false, 150_000, 1, gap)];
    let plain = run(cfg(d, "cmr"), timed(&seq)).unwrap();
    let (_, _, ahead, s) = ahead_run(read_cache(1, 256), &seq);
    assert_eq!(ahead, 8, "the rest of the track only");
    let (a, b) = (mean_ms(&s, "read"), mean_ms(&plain, "read"));
    assert!((a - b).abs() < 0.01, "{a} vs {b}");
}

#[test]
fn an_idle_hit_starts_the_read_ahead_again() {
    // Read-ahead 16: the first read's stops at 1,024, long before the hit on
    // 1,016-1,023 arrives. With read_ahead_on_idle_hit (DiskSim "Read-ahead
    // on idle hit") the hit starts it again, to 16 past its own end, so the
    // read of 1,032-1,039 after it hits too; without, it misses.
    let seq = [
        (false, 1_000, 8, 0),
        (false, 1_016, 8, 30_000),
        (false, 1_032, 8, 30_000),
    ];
    for (idle, want) in [(false, 1), (true, 2)] {
        let rc = ReadCacheConfig {
            read_ahead_extent: ReadAheadExtent::Request,
            read_ahead_on_idle_hit: idle,
            ..read_cache(2, 16)
        };
        let (hits, _, ahead, _) = ahead_run(rc, &seq);
        assert_eq!(hits, want, "on idle hit {idle}");
        assert_eq!(ahead, if idle { 32 } else { 16 });
    }
}

/// The small CMR drive with the averaged rotation, a 1 MiB write cache and
/// the controller, its writes destaged at once (DiskSim's fast writes) or
/// when idle.
fn fast_write_drive(at_once: bool) -> crate::drive::DriveConfig {
    let mut d = small_drive("cmr");
    d.rotation = crate::mechanics::Rotation::Average;
    d.write_cache_mib = 1.0;
    d.controller = Some(ControllerConfig {
        destage_at_once: at_once,
        ..controller()
    });
    d
}

#[test]
fn a_fast_write_goes_to_the_media_once_its_command_is_done_and_a_read_waits_for_it() {
    // DiskSim's fast writes (destage_at_once): a write absorbed at time 0
    // (3.2 ms write-hit overhead after "a read", 0.1 ms completion) is
    // written to track 1000 from 3.2 ms; a read of track 0 arriving at 1
    // ms waits for that media write, its 2.6 ms miss overhead running
    // beside the wait. The idle-time destage instead starts the media write
    // when the device is free (at 0 here), and the read then pays its
    // overhead after the destage: the read takes 3.2 - 2.6 = 0.6 ms longer
    // with the key, the write the same 3.3 ms.
    let recs = vec![rec(0, Op::Write, 100_000, 8), rec(1_000, Op::Read, 0, 1)];
    let go = |at_once: bool| {
        let s = run(cfg(fast_write_drive(at_once), "cmr"), recs.clone()).unwrap();
        assert_eq!(s.report().host.cached_writes, 1);
        (mean_ms(&s, "write"), mean_ms(&s, "read"))
    };
    let (w_off, r_off) = go(false);
    let (w_on, r_on) = go(true);
    assert!(
        (w_off - 3.3).abs() < 1e-6 && (w_on - 3.3).abs() < 1e-6,
        "{w_off} {w_on}"
    );
    assert!((r_on - r_off - 0.6).abs() < 1e-6, "{r_on} {r_off}");
}

#[test]
fn a_fast_write_waits_for_the_media_write_before_it_unless_it_appends() {
    // A write at time 0 to track 1000 goes to the media from 3.2 ms (seek
    // S, half a rotation, 8 sectors: it ends at D = 3.2 + S + 5.8 ms). A
    // second write arriving at 1 ms elsewhere may bring its data in only
    // once that media write ends (DiskSim: the access is not stoppable),
    // so it completes at D + 0.1 ms; one that starts where the first ends
    // comes in at once (2.9 ms write-hit overhead after a write, 0.1 ms
    // completion), as every write does with the idle-time destage.
    let plain = {
        let mut d = small_drive("cmr");
        d.rotation = crate::mechanics::Rotation::Average;
        mean_ms(
            &run(cfg(d, "cmr"), vec![rec(0, Op::Read, 100_000, 1)]).unwrap(),
            "read",
        )
    };
    let s = plain - 5.0 - 0.1;
    assert!(s > 1.0, "{plain}");
    let second = |lba: u64, at_once: bool| {
        let d = fast_write_drive(at_once);
        let recs = vec![rec(0, Op::Write, 100_000, 8), rec(1_000, Op::Write, lba, 8)];
        2.0 * mean_ms(&run(cfg(d, "cmr"), recs).unwrap(), "write") - 3.3
    };
    let d_end = 3.2 + s + 5.8;
    assert!(
        (second(50_000, true) - (d_end + 0.1 - 1.0)).abs() < 1e-6,
        "{}",
        second(50_000, true)
    );
    assert!(
        (second(100_008, true) - 3.0).abs() < 1e-6,
        "{}",
        second(100_008, true)
    );
    assert!(
        (second(50_000, false) - 3.0).abs() < 1e-6,
        "{}",
        second(50_000, false)
    );
}
