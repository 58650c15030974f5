//! Setting a run up: the layer built on the drive it shaped, the run's
//! configuration checked ([`super::RunConfig::validate`]), side devices and
//! the front end attached, the trace read once ahead when the run needs its
//! footprint, range or length, the starting fill laid out, the verifier and
//! the history before the trace.

use super::arrivals::ArrivalState;
use super::config::{Mode, RunConfig};
use super::crash::CrashState;
use super::oracle::Oracle;
use super::stages::{StageState, WafState};
use super::verifier::Verifier;
use super::{BackgroundCounts, HostCounts, Irregular, Simulation};
use crate::device::Device;
use crate::error::{SimError, SimResult};
use crate::front_end::controller::{Overheads, ReadCache, Scheduler};
use crate::front_end::drive_front::DriveFront;
use crate::front_end::link::Link;
use crate::front_end::queued_cache::QueuedCache;
use crate::front_end::write_cache::WriteCache;
use crate::layers::{LayerEntry, Needs, Params, RunsIn};
use crate::medium::prefill::{HomeMap, Prefill, PrefillSpec};
use crate::metrics::{HostMetrics, WafSeries};
use crate::side_device::SideKind;
use crate::trace::{Op, TraceReader, TraceRecord};
use crate::track_bits::TrackBits;
use crate::units::{Lba, Nanos, Sectors};
use std::collections::VecDeque;
use std::sync::Arc;

impl Simulation {
    /// Set up a run with a layer that is not in the registry (tests of the
    /// verifier use deliberately broken layers). `entry` builds it again after a crash.
    pub fn with_layer(
        cfg: RunConfig,
        entry: &'static LayerEntry,
        reader: Box<dyn TraceReader>,
    ) -> SimResult<Simulation> {
        let params = Params::resolve(entry.name, entry.params, &cfg.layer.params)?;
        let drive = entry.drive_for(&cfg.drive, &params)?;
        let geom = drive.geometry()?;
        let layer = (entry.build)(&params, &geom)?;
        let mech = drive.mechanics(geom.tracks())?;
        let r = &cfg.replay;
        let prefill = cfg.validate(&drive)?;
        let cache_on = r.write_cache.unwrap_or(drive.write_cache_mib > 0.0);
        let cache_sectors = if cache_on {
            (drive.write_cache_mib * 1024.0 * 1024.0 / geom.sector_bytes() as f64) as u64
        } else {
            0
        };
        let ns_per_sector = if drive.interface_mb_s == 0.0 {
            0.0
        } else {
            geom.sector_bytes() as f64 * 1000.0 / drive.interface_mb_s
        };
        let host_cap = layer.host_capacity(&geom).0;
        let sector_bytes = geom.sector_bytes() as u64;
        let fold_to_prefill = r.fold_to_prefill;
        let home_map = HomeMap::new(&layer.reserved_home());
        let prefill_limit = match prefill {
            PrefillSpec::Fraction(f) => ((host_cap as f64 * f).floor() as u64).min(host_cap),
            PrefillSpec::Footprint => u64::MAX,
        };
        let mut dev = Device::new(geom, mech, cfg.verify);
        for (kind, slot_sectors) in layer.side_devices() {
            let c = match kind {
                SideKind::Memory => drive.memory.clone(),
                SideKind::Ssd => drive.ssd.clone(),
            };
            let Some(c) = c else {
                return Err(SimError::Config(format!(
                    "layer '{}' needs a {} beside the disk, but drive '{}' has no [{}] table (preset hwsr-paper has one)",
                    entry.name,
                    kind.name(),
                    drive.name,
                    kind.name()
                )));
            };
            dev.attach_side(kind, c, slot_sectors)?;
        }
        if !layer.supports_prefill() && !prefill.is_empty() {
            return Err(SimError::Config(format!(
                "layer '{}' places host data by its own map, so it starts from an empty drive; run it without a prefill",
                entry.name
            )));
        }
        // A host-side layer's physical operations are commands to a drive
        // with its own cache and queue: the cache goes beneath the layer.
        let cache_sectors = if entry.runs_in == RunsIn::Host {
            if cache_sectors > 0 {
                dev.attach_front_end(QueuedCache::new(
                    cache_sectors,
                    drive.queue.clone().unwrap_or_default(),
                    Link::new(ns_per_sector),
                ));
            }
            0
        } else {
            cache_sectors
        };
        let cache = WriteCache::new(cache_sectors, dev.geometry_arc());
        let overheads = Overheads::new(cfg.drive.controller.as_ref());
        let read_cache = cfg
            .drive
            .read_cache
            .clone()
            .map(|c| ReadCache::new(c, cfg.verify));
        let mut crash_after = cfg.crash_after.clone();
        crash_after.sort_unstable_by(|a, b| b.cmp(a));
        let mut sim = Simulation {
            metrics: HostMetrics::new(r.series_every),
            verifier: None,
            cfg,
            entry,
            params,
            dev,
            layer,
            reader,
            cache,
            host: HostCounts::default(),
            outstanding: Default::default(),
            latency_log: None,
            in_flight: vec![],
            scratch: vec![],
            finished: false,
            prefill_limit,
            prefill_tracks: 0,
            irregular: Irregular::default(),
            host_cap,
            sector_bytes,
            sector_shift: sector_bytes
                .is_power_of_two()
                .then(|| sector_bytes.trailing_zeros()),
            unfolded_end: if fold_to_prefill {
                0
            } else {
                host_cap.saturating_add(1)
            },
            trace_range: None,
            history: None,
            arrivals: ArrivalState {
                base_trace: None,
                prev_trace: 0,
                prev_issue: Nanos::ZERO,
                prev_measured: None,
                pending: vec![],
                rec: TraceRecord {
                    time: Nanos(0),
                    op: Op::Read,
                    offset: crate::units::Bytes(0),
                    len: crate::units::Bytes(0),
                    line: 0,
                },
                peeked: None,
                scheduler: Scheduler::Fcfs,
            },
            front: DriveFront::new(overheads, read_cache, Link::new(ns_per_sector)),
            crash: CrashState {
                crash_after,
                crashes: 0,
                crash_requested: false,
                crashes_during: Default::default(),
                crashes_in_stages: 0,
                past_counters: Default::default(),
                past_intervals: 0,
            },
            stage: StageState {
                bg: BackgroundCounts::default(),
                bg_wait: Nanos::ZERO,
                stage_spans: VecDeque::new(),
                gauges: vec![],
                batch: vec![],
                batch_reqs: vec![],
                batch_queued: vec![],
                needs: Needs::default(),
            },
            waf: WafState {
                series: WafSeries::default(),
                arrived: 0,
                countdown: 0,
            },
        };
        if let Some(c) = &sim.cfg.drive.controller {
            // Reordering needs a queue: one request at a time leaves no choice.
            if sim.cfg.replay.mode == Mode::Queue && sim.cfg.replay.queue_depth > 1 {
                sim.arrivals.scheduler = c.scheduler;
            }
        }
        sim.stage.needs = sim.layer_needs();
        sim.waf.countdown = sim.cfg.replay.waf_every;
        // A first pass over the trace when the run needs to know it ahead:
        // the tracks it touches (footprint prefill), its length (crash points).
        let footprint = prefill == PrefillSpec::Footprint;
        let wants_range = sim.layer.wants_trace_range();
        let mut range = (u64::MAX, 0u64);
        let mut touched = TrackBits::default();
        if footprint || wants_range || !sim.cfg.crash_after.is_empty() {
            match sim.reader.reopen() {
                Some(first) => {
                    let mut first = first?;
                    if footprint {
                        touched = TrackBits::new(sim.dev.geometry().tracks());
                    }
                    let mut count = 0u64;
                    let geom = sim.dev.geometry_arc();
                    while let Some(rec) = first.next_record()? {
                        if rec.len.0 == 0 {
                            continue;
                        }
                        count += 1;
                        if wants_range || footprint {
                            let (lba, n, _) = sim.convert(&rec)?;
                            range = (range.0.min(lba.0), range.1.max(lba.0 + n.0));
                            if footprint {
                                home_map.for_home_pieces(lba.0, n.0, |home, k, _| {
                                    geom.for_home_extents(Lba(home), Sectors(k), |at, _, _| touched.set(at.track));
                                });
                            }
                        }
                    }
                    sim.irregular = Irregular { trace_requests: Some(count), ..Irregular::default() };
                }
                None if footprint => {
                    return Err(SimError::Config(
                        "prefill = 'footprint' reads the trace twice, but this trace source cannot be read again".into(),
                    ))
                }
                None if wants_range => {
                    return Err(SimError::Config(format!(
                        "layer '{}' sizes its buffer from the trace's address range, which needs a trace that can be read twice; give the buffer size as a parameter instead",
                        sim.entry.name
                    )))
                }
                None => {}
            }
        }
        if wants_range {
            let (lo, hi) = if range.0 > range.1 { (0, 0) } else { range };
            sim.trace_range = Some((lo, hi));
            sim.layer.set_trace_range(Lba(lo), Lba(hi))?;
        }
        if let (Some(total), Some(&last)) = (
            sim.irregular.trace_requests,
            sim.cfg.crash_after.iter().max(),
        ) {
            if last > total {
                return Err(SimError::Config(format!(
                    "crash_after {last} lies beyond the end of the trace, which holds {total} requests"
                )));
            }
        }
        let start = match prefill {
            PrefillSpec::Footprint => Prefill::tracks(home_map, touched),
            PrefillSpec::Fraction(_) => Prefill::below(sim.dev.geometry(), home_map, prefill_limit),
        };
        sim.prefill_tracks = start.track_count();
        if sim.cfg.verify {
            let start = start
                .any()
                .then(|| (Arc::new(start.clone()), sim.dev.geometry_arc()));
            let mut v = Verifier::new(Oracle::new(start));
            if !sim.cfg.replay.verify_thread {
                v.set_thread_after(u64::MAX);
            }
            sim.verifier = Some(Box::new(v));
        }
        sim.dev.set_prefill(start);
        if let Some(fill) = sim.cfg.replay.history {
            sim.history = Some(sim.run_history(fill, sim.cfg.replay.history_seed)?);
        }
        sim.dev.set_crash_points(sim.cfg.crash_at_ops.clone());
        sim.waf.series.push(0, 0, 0, 0);
        Ok(sim)
    }
}
