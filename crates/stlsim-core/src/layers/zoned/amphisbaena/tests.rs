//! Amphisbaena's equations and policies (paper 004 sections 5.2-5.3).

use super::*;
use crate::layers::zoned::tests::{cfg, counter, drive, rec, run};

#[test]
fn equation_2_chunk_numbers_for_64_kib_and_1_mib_chunks() {
    // 256 MiB zones of 4 KiB blocks (65,536 blocks): block 300 of zone 3.
    let zb = 65_536;
    let b = 3 * zb + 300;
    assert_eq!(chunk_num(b, 3, zb, 16), 18); // 64 KiB chunks: 16 blocks
    assert_eq!(chunk_num(b, 3, zb, 256), 1); // 1 MiB chunks: 256 blocks (Figure 9)
    assert_eq!(chunk_num(3 * zb + 255, 3, zb, 256), 0);
    assert_eq!(chunk_num(4 * zb - 1, 3, zb, 16), 4095);
}

#[test]
fn sixty_ghost_hits_with_sixteen_block_chunks_move_four_chunks() {
    assert_eq!(chunks_for_ghost_hits(60, 16), 4);
    assert_eq!(chunks_for_ghost_hits(16, 16), 0); // not more than a chunk
    assert_eq!(chunks_for_ghost_hits(17, 16), 1);
}

/// A policy over a 256-block buffer of 16-block chunks (16 chunks, 4 in the HFB).
fn policy() -> (Amphisbaena, Buffer) {
    let geom = drive().geometry().unwrap();
    let zones = ZoneMap::new(&geom, 1).unwrap();
    let user: std::collections::BTreeMap<String, serde_json::Value> = Default::default();
    let p = Params::resolve("amphisbaena", ENTRY.params, &user).unwrap();
    let buf = Buffer::new(zones.clone(), 256, 4096).unwrap();
    (Amphisbaena::new(&p, &zones, 256).unwrap(), buf)
}

#[test]
fn reallocation_follows_ghost_hits_and_keeps_the_hfb_within_25_to_75_percent() {
    let (mut a, buf) = policy();
    assert_eq!((a.nchunks, a.hfb_chunks, a.c), (16, 4, 16));
    a.roles.period_ghost_hits = 60;
    a.reallocate(&buf);
    assert_eq!((a.hfb_chunks, a.counts.chunks_to_hfb), (8, 4));
    assert_eq!(a.hfb_free.len(), 8 * 16);
    // However many ghost hits, at most 75 % (12 chunks).
    a.roles.period_ghost_hits = 10_000;
    a.reallocate(&buf);
    assert_eq!(a.hfb_chunks, 12);
    // A whole period in which reallocated chunks held no block returns
    // them (chunks added during a period are judged after the next one), down to 25 %.
    a.reallocate(&buf);
    assert_eq!((a.hfb_chunks, a.counts.chunks_to_lfb), (8, 4));
    a.reallocate(&buf);
    assert_eq!((a.hfb_chunks, a.counts.chunks_to_lfb), (4, 8));
    assert_eq!(a.lfb_free.len(), 12);
}

#[test]
fn a_queued_write_to_the_victim_zone_stops_collection_at_the_next_chunk() {
    // One small (hot) write to warm the window, then 8-block writes are cold:
    // chunks 0, 1, 2 of native zone 0 take the 3 LFB chunks (the HFB has 1),
    // so cleaning of zone 0 is overdue before the next request.
    let mut recs = vec![rec(0, true, 200, 1)];
    for (i, off) in [0u64, 16, 32].iter().enumerate() {
        recs.push(rec(1 + i as u64, true, *off, 8));
    }
    // The next request writes zone 0: the collector stops after its first chunk.
    recs.push(rec(4, true, 48, 8));
    let r = run(cfg("amphisbaena", &[]), recs.clone());
    assert_eq!(counter(&r, "collections_aborted"), 1.0);
    assert_eq!(counter(&r, "victim_blocks"), 8.0);
    assert_eq!(counter(&r, "lfb_gc_writebacks"), 1.0);
    assert!(r.background.aborted >= 1, "{:?}", r.background);
    // A next request elsewhere lets the collection finish: all 24 blocks.
    let mut other = recs.clone();
    other[4] = rec(4, true, 5 * 128, 8);
    let r = run(cfg("amphisbaena", &[]), other);
    assert_eq!(counter(&r, "collections_aborted"), 0.0);
    assert_eq!(counter(&r, "victim_blocks"), 24.0);
    // Fluid's write-back of the same zone runs to its end.
    let f = run(cfg("hm-fluid", &[]), recs);
    assert_eq!(counter(&f, "collections_aborted"), 0.0);
}

#[test]
fn hits_are_split_between_hfb_and_lfb() {
    // Two hot blocks (SUP), a cold 8-block write (to the LFB, shadow
    // entries above both SUP blocks), the upper SUP block again (a hit that
    // prunes nothing), then the cold blocks again.
    let recs = vec![
        rec(0, true, 200, 1),
        rec(1, true, 201, 1),
        rec(2, true, 0, 8),
        rec(3, true, 201, 1),
        rec(4, true, 0, 8),
    ];
    let r = run(cfg("amphisbaena", &[]), recs);
    assert_eq!(counter(&r, "hfb_hits"), 1.0);
    // The second cold write of blocks 0-7 hits their shadow entries: LFB hits, admitted to the HFB as LUP.
    assert_eq!(counter(&r, "lfb_hits"), 8.0);
    assert_eq!(counter(&r, "shadow_hits"), 8.0);
    assert_eq!(counter(&r, "write_hits"), 9.0);
}

/// `passes` passes over `blocks` distinct single-block writes at random
/// native offsets (seeded), each pass in a new random order (`shuffle`) or
/// in the first pass's order (an exact replay).
fn passes(blocks: u64, passes: u64, shuffle: bool) -> Vec<crate::trace::TraceRecord> {
    let mut rng = crate::xorshift::Rng(7);
    let mut set = std::collections::BTreeSet::new();
    while (set.len() as u64) < blocks {
        set.insert(rng.below(36 * 128));
    }
    let mut order: Vec<u64> = set.into_iter().collect();
    let mut out = vec![];
    for _ in 0..passes {
        if shuffle || out.is_empty() {
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        for &b in &order {
            out.push(rec(out.len() as u64, true, b, 1));
        }
    }
    out
}

/// A 2 MiB buffer (32 chunks of 16 blocks: an HFB of 8 to 24 chunks) and
/// sampling periods of 1,000 writes, so that a few periods fit a short run.
fn resizing_cfg() -> crate::engine::RunConfig {
    let mut c = cfg(
        "amphisbaena",
        &[("buffer_mib", "2"), ("sampling_writes", "1000")],
    );
    c.replay.waf_every = 1000;
    c
}

#[test]
fn a_footprint_that_fits_75_percent_of_the_buffer_grows_the_hfb_to_hold_it() {
    // 300 blocks (75 % of the buffer is 384) rewritten 30 times, each pass
    // in its own order: re-referenced blocks come back as ghosts (section
    // 5.2.3), the HFB grows by their hits within a few periods, and then
    // every block is a write hit in the HFB: no write-back, WAF 1.
    let r = run(resizing_cfg(), passes(300, 30, true));
    let grown = counter(&r, "chunks_to_hfb") - counter(&r, "chunks_to_lfb");
    assert!(counter(&r, "ghost_hits") > 100.0, "{:?}", r.layer_counters);
    assert!(
        8.0 + grown >= 300.0 / 16.0,
        "the HFB grew by {grown} chunks: {:?}",
        r.layer_counters
    );
    let steady = r.waf_steady.expect("a WAF series");
    assert!(
        steady < 1.05,
        "WAF over the second half {steady}: {:?}",
        r.layer_counters
    );
    // (The first pass cannot hit, and the first periods evict while the HFB grows.)
    assert!(
        counter(&r, "write_hit_rate") > 0.85,
        "{:?}",
        r.layer_counters
    );
}

#[test]
fn an_exact_replay_prunes_every_ghost_before_its_block_returns() {
    // The same 300 blocks in the same order every pass (a trace replayed
    // over and over): the classifier keeps a fixed set of SUP blocks, and
    // every ghost or shadow entry sinks below the bottom SUP block, and is
    // pruned (section 5.2.2), before its block is written again. Ghost hits
    // stop after the second pass, so the HFB never grows (section 5.2.3's
    // only signal) and the blocks beyond it churn through the LFB.
    let two = run(resizing_cfg(), passes(300, 2, false));
    let thirty = run(resizing_cfg(), passes(300, 30, false));
    assert_eq!(counter(&thirty, "ghost_hits"), counter(&two, "ghost_hits"));
    assert_eq!(
        counter(&thirty, "shadow_hits"),
        counter(&two, "shadow_hits")
    );
    assert!(counter(&thirty, "chunks_to_hfb") <= counter(&two, "ghost_hits") / 16.0 + 1.0);
    assert!(counter(&thirty, "writebacks_rmw") > 10.0 * counter(&two, "writebacks_rmw").max(1.0));
    // Shuffled, the same blocks grow the HFB (the test above).
    let shuffled = run(resizing_cfg(), passes(300, 30, true));
    assert!(
        shuffled.waf < thirty.waf / 5.0,
        "{} vs {}",
        shuffled.waf,
        thirty.waf
    );
}

#[test]
fn a_reallocated_chunk_goes_back_if_any_block_it_held_was_not_updated() {
    // Section 5.2.3: "if any block in a reallocated chunk obtained from the
    // LFB is not updated again within a sample period, the reallocated
    // chunk is returned to the LFB".
    let (mut a, buf) = policy();
    a.roles.period_ghost_hits = 32; // 2 chunks
    a.reallocate(&buf);
    assert_eq!(a.hfb_chunks, 6);
    let ks: Vec<u32> = a.reallocated.keys().copied().collect();
    // Both chunks held two blocks at the period's start; the first saw
    // both updated, the second only one.
    a.reallocated.insert(ks[0], Some(vec![1000, 1001]));
    a.reallocated.insert(ks[1], Some(vec![2000, 2001]));
    a.updated.extend([1000, 1001, 2000]);
    a.reallocate(&buf);
    assert_eq!((a.hfb_chunks, a.counts.chunks_to_lfb), (5, 1));
    assert!(a.reallocated.contains_key(&ks[0]) && !a.reallocated.contains_key(&ks[1]));
    // The period's updates are forgotten; what the chunk holds now is judged next.
    assert!(a.updated.is_empty());
}

#[test]
fn crashes_while_the_hfb_grows_and_shrinks_lose_nothing() {
    // The shuffled passes above with reallocation every 1,000 writes, and
    // power losses every 37 physical operations: chunks move between the
    // LFB and the HFB (blocks moved out of returning chunks included)
    // between and across crashes, and every block reads back.
    let (mut crashes, mut to_hfb, mut to_lfb) = (0, 0.0, 0.0);
    for k in 0..3 {
        let mut c = resizing_cfg();
        c.crash_at_ops = (0..250).map(|i| 30 + 11 * k + 37 * i).collect();
        let r = run(c, passes(300, 20, true));
        crashes += r.crashes;
        to_hfb += counter(&r, "chunks_to_hfb");
        to_lfb += counter(&r, "chunks_to_lfb");
    }
    assert!(crashes >= 500, "{crashes} crashes");
    assert!(
        to_hfb >= 10.0 && to_lfb >= 1.0,
        "{to_hfb} chunks to the HFB, {to_lfb} back"
    );
}

mod props {
    use super::*;
    use crate::engine::Simulation;

    /// The policy's lists agree with the buffer: free HFB slots are free,
    /// unique and in HFB chunks; every pending move takes a held block out
    /// of a chunk going back to a free slot of a chunk staying in the HFB,
    /// no two to the same slot; the HFB's chunk count is its chunks'.
    fn lists_agree(a: &Amphisbaena, buf: &Buffer) -> Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for &s in &a.hfb_free {
            if !seen.insert(s)
                || buf.owner(s).is_some()
                || a.kind[a.chunk_of(s) as usize] != Kind::Hfb
            {
                return Err(format!(
                    "free HFB slot {s} is taken, repeated or outside the HFB"
                ));
            }
        }
        for &(from, to) in &a.moves {
            if a.kind[a.chunk_of(from) as usize] != Kind::Returning || buf.owner(from).is_none() {
                return Err(format!(
                    "move from {from}: not a held slot of a chunk going back"
                ));
            }
            if a.kind[a.chunk_of(to) as usize] != Kind::Hfb
                || buf.owner(to).is_some()
                || !seen.insert(to)
            {
                return Err(format!(
                    "move to {to}: not a free slot of its own in a chunk staying in the HFB"
                ));
            }
        }
        let hfb = a.kind.iter().filter(|&&k| k == Kind::Hfb).count() as u64;
        if hfb != a.hfb_chunks {
            return Err(format!("{hfb} HFB chunks counted as {}", a.hfb_chunks));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Reallocation over any occupancy of the HFB's chunks and any
        /// blocks updated in a period keeps the lists in agreement (the
        /// property that would have caught chunks going back into each other).
        #[test]
        fn reallocation_keeps_the_lists_in_agreement(
            hits in 17u64..200,
            held in proptest::collection::vec(0u64..=16, 16),
            updated in proptest::collection::vec(any::<bool>(), 256),
            more_hits in 0u64..100,
        ) {
            let (mut a, mut buf) = policy();
            a.roles.period_ghost_hits = hits;
            a.reallocate(&buf);
            prop_assert!(lists_agree(&a, &buf).is_ok(), "{:?}", lists_agree(&a, &buf));
            let mut lba = 10_000;
            for k in 0..a.nchunks as u32 {
                if a.kind[k as usize] != Kind::Hfb {
                    continue;
                }
                for i in 0..held[k as usize] {
                    buf.bind((k as u64 * a.c + i) as u32, lba, TAG_HFB);
                    lba += 1;
                }
            }
            a.hfb_free.retain(|&s| buf.owner(s).is_none());
            a.reallocate(&buf);
            prop_assert!(lists_agree(&a, &buf).is_ok(), "{:?}", lists_agree(&a, &buf));
            // Some of the blocks are updated during the next period.
            for s in 0..256u32 {
                if let Some(h) = buf.owner(s) {
                    if updated[s as usize] {
                        a.updated.insert(h);
                    }
                }
            }
            a.roles.period_ghost_hits = more_hits;
            a.reallocate(&buf);
            prop_assert!(lists_agree(&a, &buf).is_ok(), "{:?}", lists_agree(&a, &buf));
        }
    }
    use crate::layers::zoned::tests::random_requests;
    use crate::trace::VecTrace;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        /// With sampling periods short enough for the HFB to grow and shrink
        /// many times in a run, every block stays where the classifier says
        /// it is (a resident block always has its slot: the eviction that
        /// finds one without panics) and reads back its newest version.
        #[test]
        fn reallocation_keeps_every_resident_block_in_its_slot(
            seed in any::<u64>(),
            zones in 1u64..6,
            period in 5u64..120,
            buffer_kib in prop_oneof![Just(256u64), Just(512u64)],
            hfb in prop_oneof![Just((0.25, 0.75)), Just((0.5, 0.75)), Just((0.25, 0.5))],
            gc_abort in any::<bool>(),
        ) {
            let mut c = cfg("amphisbaena", &[]);
            let p = &mut c.layer.params;
            p.insert("buffer_mib".into(), serde_json::Value::from(buffer_kib as f64 / 1024.0));
            p.insert("sampling_writes".into(), serde_json::Value::from(period));
            p.insert("hfb_initial".into(), serde_json::Value::from(hfb.0));
            p.insert("hfb_max".into(), serde_json::Value::from(hfb.1));
            p.insert("gc_abort".into(), serde_json::Value::from(gc_abort));
            // Hot sets that move: the HFB grows for one and shrinks after it.
            let mut recs = random_requests(seed, 600, zones, 7);
            for (i, r) in random_requests(seed ^ 0x5bd1, 900, 6, 7).into_iter().enumerate() {
                let off = r.offset.0 / 4096;
                recs.push(rec(600 + i as u64, r.op == crate::trace::Op::Write, (off + 2 * 128) % (36 * 128), r.len.0 / 4096));
            }
            let mut s = Simulation::with_reader(c, Box::new(VecTrace::new(recs))).unwrap();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.run()));
            prop_assert!(r.is_ok(), "panicked");
            let r = r.unwrap();
            prop_assert!(r.is_ok(), "{}", r.err().unwrap());
        }
    }
}

#[test]
fn a_returning_chunk_never_moves_its_blocks_into_another_chunk_going_back() {
    // Found by `benches/run_long.py --requests 1000000 --layer amphisbaena
    // --drive exos-x18z`, which panicked with "resident block is buffered":
    // two reallocated chunks went back to the LFB at the same period's end;
    // the first one's blocks were moved to free slots of the second, which,
    // holding no block yet, went back at once. The blocks then lay in an LFB
    // chunk that the next LFB placement overwrote, while the classifier still
    // had them resident.
    let (mut a, mut buf) = policy();
    a.roles.period_ghost_hits = 32; // 2 chunks to the HFB
    a.reallocate(&buf);
    let ks: Vec<u32> = a.reallocated.keys().copied().collect();
    assert_eq!((a.hfb_chunks, ks.len()), (6, 2));
    // Every original HFB slot holds a block, and the first new chunk four:
    // the only free slots are the rest of the first and all of the second.
    let hfb: Vec<u32> = (0..a.nchunks as u32)
        .filter(|&k| a.kind[k as usize] == Kind::Hfb)
        .collect();
    let mut lba = 10_000;
    for &k in &hfb {
        let n = if k == ks[1] {
            0
        } else if k == ks[0] {
            4
        } else {
            a.c
        };
        for i in 0..n {
            buf.bind((k as u64 * a.c + i) as u32, lba, TAG_HFB);
            lba += 1;
        }
    }
    a.hfb_free.retain(|&s| buf.owner(s).is_none());
    // The next period's end judges what each holds now; the one after,
    // with none of those blocks updated, returns both if it can.
    a.reallocate(&buf);
    a.reallocate(&buf);
    assert!(!a.moves.is_empty());
    for &(from, to) in &a.moves {
        assert_eq!(a.kind[a.chunk_of(from) as usize], Kind::Returning);
        assert_eq!(
            a.kind[a.chunk_of(to) as usize],
            Kind::Hfb,
            "a move into chunk {} going back",
            a.chunk_of(to)
        );
    }
}
