//! Micro-benchmarks of the IMR layers' operations against the timing
//! analyses of paper 000 (sections 2.1-2.4): each operation alone on a
//! drive, the head already on the track it concerns, write and read caches
//! off, averaged over tracks across the disk and start angles.
//!
//! * Host requests (CMR random write, RMW random and sequential write) run
//!   through the engine, flat-out: a one-sector read puts the head on track
//!   T, then the measured write arrives. Their latency includes what the
//!   drive charges a command (the preset's controller overheads).
//! * Background operations (flip, promotion, eviction, swap) are called on
//!   the layer directly, as the engine's idle stages would run them, and
//!   timed on the device's clock.
//!
//! The paper's figure for each is its formula with every `t_seek` it names
//! evaluated by the drive's own seek curve at the distance this layer
//! actually travels (to the backup slot, the cache track, the swapped
//! track), and zero for the seek the head is already past. The gaps that
//! remain are the steps the paper leaves out; docs/imr.md lists them and
//! `scripts/imr_micro.py` prints the table.

use crate::device::{Cause, Device};
use crate::drive::DriveConfig;
use crate::engine::{LayerConfig, Mode, RunConfig, Simulation};
use crate::error::{config_err, SimResult};
use crate::geometry::{Geometry, TrackKind};
use crate::layers::imr::dynamic_map::{self, ImrDtm};
use crate::layers::imr::flip::{self, ImrFlip};
use crate::layers::imr::region::Reserved;
use crate::layers::imr::track_cache::{self, TrackCache};
use crate::layers::Params;
use crate::trace::{Op, TraceRecord, TraceSpec, VecTrace};
use crate::units::{Bytes, Nanos, PhysAddr, Track};
use std::collections::BTreeMap;

/// One row of the table: an operation's mean time on this drive beside the
/// paper's formula, and where the difference goes.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MicroRow {
    /// The operation measured, as the table names it ("flip", "RMW random write").
    pub op: &'static str,
    /// The layer that performs it.
    pub layer: &'static str,
    /// The paper's cost of the operation in seeks and rotations ("5.5 t_rot").
    pub formula: &'static str,
    /// The formula's value on this drive (ms), mean over the samples.
    pub paper_ms: f64,
    /// What the simulator took (ms), mean over the samples.
    pub stlsim_ms: f64,
    /// Trials averaged: the sample tracks found, which can be fewer than asked
    /// when a stretch of the disk has no track the operation applies to.
    pub samples: u32,
    /// For background operations: mean device time per cause (ms) and
    /// mean physical operations, which say where the gap goes.
    pub by_cause: BTreeMap<String, f64>,
    /// Mean physical operations per trial.
    pub ops: f64,
    /// The paper's formula split over the same causes and directions as
    /// `by_cause` (its steps grouped by what they do), mean ms.
    pub paper_parts: BTreeMap<String, f64>,
}

/// A map of (cause and direction, ms) pairs.
fn parts(items: &[(&str, f64)]) -> BTreeMap<String, f64> {
    items.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

/// The micro-benchmarks and the drive figures that explain their gaps.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MicroReport {
    /// One rotation (ms).
    pub rot_ms: f64,
    /// One sector passing under the head, first zone (ms).
    pub sector_ms: f64,
    /// Sectors per track, first zone.
    pub sectors_per_track: u32,
    /// Cylinder skew of the first zone, as time (ms).
    pub skew_ms: f64,
    /// Seek over one and two tracks, and over half the stroke (ms).
    pub seek_ms: [f64; 3],
    /// One row per operation: the three host writes, then flip, promotion,
    /// eviction and swap.
    pub rows: Vec<MicroRow>,
}

/// Run every micro-benchmark on `drive` with `samples` trials each.
pub fn imr_micro(drive: &DriveConfig, samples: u32) -> SimResult<MicroReport> {
    if samples == 0 {
        return config_err("micro-benchmarks need at least one sample");
    }
    let mut d = drive.clone();
    // Caches off: each operation alone, as the paper analyses it.
    d.write_cache_mib = 0.0;
    d.read_cache = None;
    let g = d.geometry()?;
    if !matches!(g.layout(), crate::geometry::Layout::Imr { .. }) {
        return config_err(format!(
            "IMR micro-benchmarks need an IMR drive; '{}' is not one",
            d.name
        ));
    }
    let rot = d.mechanics(g.tracks())?.rotation_time().as_ms();
    let mut rows = vec![
        host_write(&d, &g, "cmr", samples, false)?,
        host_write(&d, &g, "imr-rmw", samples, false)?,
        host_write(&d, &g, "imr-rmw", samples, true)?,
    ];
    // Steps 1-2 read the neighbours, 3 saves them, 4 writes S, 5-6 rewrite
    // them; the paper's 2 t_rot for steps 3 and 4 is split evenly.
    rows[0].paper_parts = parts(&[("host write", 0.5 * rot)]);
    rows[1].paper_parts = parts(&[
        ("rmw read", 1.5 * rot),
        ("backup write", rot),
        ("host write", rot),
        ("rmw write", 2.0 * rot),
    ]);
    rows[2].paper_parts = parts(&[
        ("rmw read", 2.0 * rot),
        ("backup write", rot),
        ("host write", rot),
        ("rmw write", 2.0 * rot),
    ]);
    for r in &mut rows {
        r.paper_ms = r.paper_parts.values().sum();
    }
    rows.push(background(&d, &g, samples, Bg::Flip)?);
    rows.push(background(&d, &g, samples, Bg::Promote)?);
    rows.push(background(&d, &g, samples, Bg::Evict)?);
    rows.push(background(&d, &g, samples, Bg::Swap)?);
    let m = d.mechanics(g.tracks())?;
    let spt = g.sectors_in(Track(0));
    let skew = d.zones.first().map_or(0, |z| z.cylinder_skew_sectors);
    Ok(MicroReport {
        rot_ms: rot,
        sector_ms: m.transfer_time(1, spt).as_ms(),
        sectors_per_track: spt,
        skew_ms: rot * skew as f64 / spt as f64,
        seek_ms: [
            m.seek_time(1).as_ms(),
            m.seek_time(2).as_ms(),
            m.seek_time(g.tracks() / 2).as_ms(),
        ],
        rows,
    })
}

/// Bottom tracks spread across the disk for `samples` trials, each passing `ok`.
fn sample_tracks(g: &Geometry, samples: u32, ok: impl Fn(Track) -> bool) -> Vec<Track> {
    let n = g.tracks();
    let mut out = vec![];
    for i in 0..samples as u64 {
        // Stratified: one per stretch of the disk, away from its edges.
        let mut t = (2 * i + 1) * n / (2 * samples as u64);
        while t + 2 < n && !(g.kind(Track(t)) == TrackKind::Bottom && ok(Track(t))) {
            t += 1;
        }
        if t + 2 < n {
            out.push(Track(t));
        }
    }
    out
}

/// The host LBA of sector `s` of track `t` for a layer reserving `res`.
fn host_lba(g: &Geometry, res: Option<&Reserved>, t: Track, s: u32) -> Option<u64> {
    let home = g.logical_track_start(g.phys_logical_track(t)?).0 + s as u64;
    let below: u64 = res.map_or(0, |r| {
        r.home_ranges()
            .iter()
            .filter(|&&(a, _)| a.0 <= home)
            .map(|&(a, l)| l.0.min(home - a.0))
            .sum()
    });
    Some(home - below)
}

/// The parameters a micro-benchmark gives `layer`: the paper's analysis
/// has both neighbours of a bottom track hold data.
fn user_of(layer: &str) -> BTreeMap<String, serde_json::Value> {
    if layer == "cmr" {
        BTreeMap::new()
    } else {
        [("skip_empty".to_string(), serde_json::Value::from(false))].into()
    }
}

fn write_req(lba: crate::units::Lba) -> crate::layers::WriteReq<'static> {
    crate::layers::WriteReq {
        lba,
        sectors: crate::units::Sectors(1),
        cause: Cause::Host,
        data: &[],
    }
}

fn record(op: Op, lba: u64, sector_bytes: u64) -> TraceRecord {
    TraceRecord {
        time: Nanos::ZERO,
        op,
        offset: Bytes(lba * sector_bytes),
        len: Bytes(sector_bytes),
        line: 0,
    }
}

/// A one-sector host write on a bottom track with the head already there:
/// random (a read elsewhere on the track first) or sequential (the write
/// before it ended on the sector before).
fn host_write(
    d: &DriveConfig,
    g: &Geometry,
    layer: &'static str,
    samples: u32,
    sequential: bool,
) -> SimResult<MicroRow> {
    let user = user_of(layer);
    let res = if layer == "cmr" {
        None
    } else {
        let p = Params::resolve(layer, crate::layers::imr::rmw::ENTRY.params, &user)?;
        Some(crate::layers::imr::rmw::backup_from(&p, g, 0)?.0)
    };
    let tracks = sample_tracks(g, samples, |t| {
        res.as_ref()
            .is_none_or(|r| !(t.0 - 1..=t.0 + 1).any(|x| r.contains(Track(x))))
    });
    let sb = d.sector_bytes as u64;
    let mut recs = vec![];
    let mut measured = vec![];
    for (i, &t) in tracks.iter().enumerate() {
        let spt = g.sectors_in(t);
        // Stratified angles: the write's sector steps evenly round the track.
        let a = (i as u64 * 7919 % spt as u64) as u32;
        let b = (a as u64 + 1 + (i as u64 * spt as u64) / tracks.len() as u64) as u32 % spt;
        let lba = |s: u32| host_lba(g, res.as_ref(), t, s).expect("a host track");
        if sequential {
            let s = a.min(spt - 2);
            recs.push(record(Op::Write, lba(s), sb));
            recs.push(record(Op::Write, lba(s + 1), sb));
        } else {
            recs.push(record(Op::Read, lba(a), sb));
            recs.push(record(Op::Write, lba(b), sb));
        }
        measured.push(recs.len() - 1);
    }
    let mut cfg = RunConfig {
        trace: TraceSpec {
            path: "memory".into(),
            ..Default::default()
        },
        drive: d.clone(),
        layer: LayerConfig {
            name: layer.into(),
            params: user,
        },
        ..Default::default()
    };
    cfg.replay.mode = Mode::FlatOut;
    cfg.replay.write_cache = Some(false);
    cfg.replay.series_every = 1;
    let mut sim = Simulation::with_reader(cfg, Box::new(VecTrace::new(recs.clone())))?;
    sim.run()?;
    let lat = &sim.metrics().series.max_latency_ms;
    let mean = measured.iter().map(|&k| lat[k]).sum::<f64>() / measured.len() as f64;
    // The same writes straight to the layer on a bare device: where the
    // medium's time goes, by cause (no command overhead, no link).
    let entry = crate::layers::find(layer)?;
    let p = Params::resolve(layer, entry.params, &user_of(layer))?;
    let mut l = (entry.build)(&p, g)?;
    let mech = d.mechanics(g.tracks())?;
    let mut dev = Device::new(g.clone(), mech, false);
    let mut by: BTreeMap<String, f64> = BTreeMap::new();
    let mut ops = 0;
    for pair in recs.chunks(2) {
        let lba = |r: &TraceRecord| crate::units::Lba(r.offset.0 / sb);
        let one = crate::units::Sectors(1);
        if pair[0].op == Op::Read {
            l.read(&mut dev, lba(&pair[0]), one, &mut vec![])?;
        } else {
            l.write(&mut dev, &write_req(lba(&pair[0])))?;
        }
        let (c0, o0) = counts(&dev);
        l.write(&mut dev, &write_req(lba(&pair[1])))?;
        let (c1, o1) = counts(&dev);
        ops += o1 - o0;
        for (k, v) in c1 {
            *by.entry(k.clone()).or_insert(0.0) += v - c0.get(&k).copied().unwrap_or(0.0);
        }
    }
    let nf = measured.len() as f64;
    by.retain(|_, v| *v > 1e-9);
    by.values_mut().for_each(|v| *v /= nf);
    Ok(MicroRow {
        op: match (layer, sequential) {
            ("cmr", _) => "CMR random write",
            (_, false) => "RMW random write",
            (_, true) => "RMW sequential write",
        },
        layer: if layer == "cmr" { "cmr" } else { "imr-rmw" },
        formula: match (layer, sequential) {
            ("cmr", _) => "0.5 t_rot",
            (_, false) => "5.5 t_rot",
            (_, true) => "6 t_rot",
        },
        paper_ms: 0.0,
        stlsim_ms: mean,
        samples: measured.len() as u32,
        by_cause: by,
        ops: ops as f64 / nf,
        paper_parts: BTreeMap::new(),
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bg {
    Flip,
    Promote,
    Evict,
    Swap,
}

/// Device time per cause and direction ("rmw read") and operations so far.
fn counts(dev: &Device) -> (BTreeMap<String, f64>, u64) {
    let mut m = BTreeMap::new();
    let mut ops = 0;
    for c in Cause::ALL {
        let (r, w) = (
            dev.read_counts()[c as usize],
            dev.write_counts()[c as usize],
        );
        ops += r.ops + w.ops;
        for (kind, n) in [("read", r), ("write", w)] {
            if n.ops > 0 {
                m.insert(format!("{} {kind}", c.name()), n.busy.as_ms());
            }
        }
    }
    (m, ops)
}

fn params_for(layer: &str, entry: &crate::layers::LayerEntry) -> SimResult<Params> {
    let user: BTreeMap<String, serde_json::Value> =
        [("skip_empty".to_string(), serde_json::Value::from(false))].into();
    Params::resolve(layer, entry.params, &user)
}

/// One background operation per trial, on a fresh layer and device.
fn background(d: &DriveConfig, g: &Geometry, samples: u32, which: Bg) -> SimResult<MicroRow> {
    let mech = d.mechanics(g.tracks())?;
    let rot = mech.rotation_time();
    let seek = |a: Track, b: Track| mech.seek_time(a.distance(b)).as_ms();
    let rot_ms = rot.as_ms();
    enum L {
        Flip(ImrFlip),
        Cache(TrackCache),
        Dtm(ImrDtm),
    }
    let build = || -> SimResult<L> {
        Ok(match which {
            Bg::Flip => L::Flip(ImrFlip::new(&params_for("imr-flip", &flip::ENTRY)?, g)?),
            Bg::Promote | Bg::Evict => L::Cache(TrackCache::new(
                &params_for("imr-cache", &track_cache::ENTRY)?,
                g,
            )?),
            Bg::Swap => L::Dtm(ImrDtm::new(
                &params_for("imr-dtm", &dynamic_map::ENTRY)?,
                g,
            )?),
        })
    };
    let probe = build()?;
    let tracks = sample_tracks(g, samples, |t| match &probe {
        L::Flip(l) => l.host_track(t),
        L::Cache(l) => l.host_track(t),
        L::Dtm(l) => l.host_track(t),
    });
    drop(probe);
    let (mut took, mut ops) = (0.0, 0u64);
    let mut paper_parts: BTreeMap<String, f64> = BTreeMap::new();
    let mut by: BTreeMap<String, f64> = BTreeMap::new();
    let mut n = 0u32;
    for (i, &t) in tracks.iter().enumerate() {
        let mut l = build()?;
        let mut dev = Device::new(g.clone(), mech.clone(), false);
        // A start angle stepped evenly over the trials.
        dev.advance_to(Nanos(1 + rot.0 * i as u64 / tracks.len() as u64));
        let on = |dev: &mut Device, t: Track| {
            dev.read(
                Cause::Host,
                PhysAddr {
                    track: t,
                    sector: 0,
                },
                1,
                &mut vec![],
            )
        };
        if let (L::Cache(l), Bg::Evict) = (&mut l, which) {
            if !l.promote(&mut dev, t.0)? {
                continue;
            }
        }
        on(&mut dev, t)?;
        let (c0, o0) = counts(&dev);
        let t0 = dev.now();
        let formula = match &mut l {
            L::Flip(l) => {
                let (done, slot) = l.flip_now(&mut dev, t)?;
                if !done {
                    continue;
                }
                parts(&[
                    ("flip read", 3.0 * rot_ms),
                    ("backup write", seek(t, slot) + 2.0 * rot_ms),
                    ("flip write", seek(slot, t) + 3.0 * rot_ms),
                ])
            }
            L::Cache(l) => match which {
                Bg::Promote => {
                    if !l.promote(&mut dev, t.0)? {
                        continue;
                    }
                    let c = l.cache_track_of(t.0).expect("promoted");
                    parts(&[
                        ("promote read", rot_ms),
                        ("promote write", seek(t, c) + rot_ms),
                    ])
                }
                _ => {
                    let c = l.cache_track_of(t.0).expect("promoted");
                    let slot = l.backup_near(t);
                    if !l.evict(&mut dev, t.0)? {
                        continue;
                    }
                    parts(&[
                        ("evict read", seek(t, c) + rot_ms),
                        ("rmw read", seek(c, t) + 2.0 * rot_ms),
                        ("backup write", seek(t, slot) + 2.0 * rot_ms),
                        ("evict write", seek(slot, t) + rot_ms),
                        ("rmw write", 2.0 * rot_ms),
                    ])
                }
            },
            L::Dtm(l) => {
                let Some((tp, slot)) = l.swap_at(&mut dev, t)? else {
                    continue;
                };
                // Steps 1-2 and 5-6 read, 3-4 back up, 7-10 write.
                parts(&[
                    ("swap read", seek(slot, tp) + 5.0 * rot_ms),
                    ("backup write", seek(t, slot) + 3.0 * rot_ms),
                    ("swap write", 2.0 * seek(t, tp) + 5.0 * rot_ms),
                ])
            }
        };
        for (k, v) in formula {
            *paper_parts.entry(k).or_insert(0.0) += v;
        }
        took += (dev.now() - t0).as_ms();
        let (c1, o1) = counts(&dev);
        ops += o1 - o0;
        for (k, v) in c1 {
            *by.entry(k.clone()).or_insert(0.0) += v - c0.get(&k).copied().unwrap_or(0.0);
        }
        n += 1;
    }
    if n == 0 {
        return config_err("no trial of the micro-benchmark could run on this drive");
    }
    let nf = n as f64;
    by.retain(|_, v| *v > 1e-9);
    by.values_mut().for_each(|v| *v /= nf);
    paper_parts.values_mut().for_each(|v| *v /= nf);
    let (op, layer, formula) = match which {
        Bg::Flip => ("flip", "imr-flip", "3 t_seek + 8 t_rot"),
        Bg::Promote => ("promotion", "imr-cache", "2 t_seek + 2 t_rot"),
        Bg::Evict => ("eviction", "imr-cache", "4 t_seek + 8 t_rot"),
        Bg::Swap => ("swap", "imr-dtm", "5 t_seek + 13 t_rot"),
    };
    Ok(MicroRow {
        op,
        layer,
        formula,
        paper_ms: paper_parts.values().sum(),
        stlsim_ms: took / nf,
        samples: n,
        by_cause: by,
        ops: ops as f64 / nf,
        paper_parts,
    })
}
