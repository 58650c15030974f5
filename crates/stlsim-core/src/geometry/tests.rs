use super::*;
use crate::drive::DriveConfig;

pub(crate) fn drive(kind: &str, tracks: u64, spt: u32) -> DriveConfig {
    DriveConfig {
        sector_bytes: 4096,
        track_bytes: spt as u64 * 4096,
        tracks: Some(tracks),
        capacity_gib: None,
        layout: LayoutConfig {
            kind: <crate::geometry::LayoutKind as crate::choice::Choice>::parse(kind).unwrap(),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn cmr_home_map_is_ascending() {
    let g = drive("cmr", 10, 100).geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(1000));
    assert_eq!(
        g.home(Lba(0)),
        PhysAddr {
            track: Track(0),
            sector: 0
        }
    );
    assert_eq!(
        g.home(Lba(250)),
        PhysAddr {
            track: Track(2),
            sector: 50
        }
    );
    assert_eq!(
        g.home_lba(PhysAddr {
            track: Track(9),
            sector: 99
        }),
        Some(Lba(999))
    );
}

#[test]
fn requests_split_at_track_boundaries() {
    let g = drive("cmr", 10, 100).geometry().unwrap();
    let mut v = vec![];
    g.for_home_extents(Lba(90), Sectors(120), |at, n, lba| {
        v.push((at.track.0, at.sector, n, lba.0))
    });
    assert_eq!(v, vec![(0, 90, 10, 90), (1, 0, 100, 100), (2, 0, 10, 200)]);
}

#[test]
fn imr_zigzag_and_serpentine_orders() {
    let mut d = drive("imr", 8, 10);
    d.layout.group_tracks = 2;
    let g = d.geometry().unwrap();
    // Group of 4 physical tracks: bottoms 0, 2 then tops 1, 3.
    let order: Vec<u64> = (0..8).map(|lt| g.logical_track_phys(lt).0).collect();
    assert_eq!(order, vec![0, 2, 1, 3, 4, 6, 5, 7]);
    assert_eq!(g.kind(Track(0)), TrackKind::Bottom);
    assert_eq!(g.kind(Track(3)), TrackKind::Top);
    d.layout.order = "serpentine".into();
    let g = d.geometry().unwrap();
    let order: Vec<u64> = (0..8).map(|lt| g.logical_track_phys(lt).0).collect();
    assert_eq!(order, vec![0, 2, 3, 1, 4, 6, 7, 5]);
}

#[test]
fn imr_top_ratio_shrinks_top_tracks() {
    let mut d = drive("imr", 4, 100);
    d.layout.top_ratio = 0.9;
    let g = d.geometry().unwrap();
    assert_eq!(g.sectors_in(Track(0)), 100);
    assert_eq!(g.sectors_in(Track(1)), 90);
    assert_eq!(g.capacity(), Sectors(380));
    // Unequal logical tracks: lookups binary-search.
    assert_eq!(
        g.home(Lba(100)),
        PhysAddr {
            track: Track(1),
            sector: 0
        }
    );
    assert_eq!(
        g.home(Lba(189)),
        PhysAddr {
            track: Track(1),
            sector: 89
        }
    );
    assert_eq!(
        g.home(Lba(190)),
        PhysAddr {
            track: Track(2),
            sector: 0
        }
    );
}

#[test]
fn imr_bottom_write_damages_adjacent_tops_only() {
    let g = drive("imr", 6, 10).geometry().unwrap();
    assert_eq!(
        g.damaged_by_write(Track(2)).collect::<Vec<_>>(),
        vec![Track(1), Track(3)]
    );
    assert_eq!(
        g.damaged_by_write(Track(0)).collect::<Vec<_>>(),
        vec![Track(1)]
    );
    assert_eq!(g.damaged_by_write(Track(3)).count(), 0);
}

#[test]
fn smr_bands_guards_and_damage() {
    let mut d = drive("smr", 2 * (4 + 2), 10);
    d.layout.band_tracks = 4;
    d.layout.head_width_tracks = 3;
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(80));
    assert_eq!(g.kind(Track(4)), TrackKind::Guard);
    assert_eq!(g.kind(Track(5)), TrackKind::Guard);
    assert_eq!(g.home(Lba(40)).track, Track(6));
    assert_eq!(
        g.damaged_by_write(Track(1)).collect::<Vec<_>>(),
        vec![Track(2), Track(3)]
    );
    // The last data track's overlap falls on the guards, never on the next band.
    assert_eq!(
        g.damaged_by_write(Track(3)).collect::<Vec<_>>(),
        vec![Track(4), Track(5)]
    );
    d.layout.direction = "down".into();
    let g = d.geometry().unwrap();
    assert_eq!(g.kind(Track(0)), TrackKind::Guard);
    assert_eq!(g.home(Lba(0)).track, Track(5));
    assert_eq!(
        g.damaged_by_write(Track(2)).collect::<Vec<_>>(),
        vec![Track(0), Track(1)]
    );
}

#[test]
fn capacity_derivation_reaches_the_request() {
    let mut d = drive("imr", 0, 512);
    d.tracks = None;
    d.capacity_gib = Some(1.0);
    d.layout.group_tracks = 8;
    let g = d.geometry().unwrap();
    assert!(g.capacity().0 * 4096 >= 1 << 30);
    assert_eq!(g.tracks() % 16, 0);
    // Not more than one layout unit past what was asked.
    assert!(g.capacity().0 * 4096 < (1 << 30) + 16 * 512 * 4096);
}

#[test]
fn zones_give_per_track_sizes() {
    let mut d = drive("cmr", 10, 100);
    d.zones = vec![
        ZoneSpec {
            first_track: 0,
            sectors_per_track: 100,
            ..Default::default()
        },
        ZoneSpec {
            first_track: 5,
            sectors_per_track: 60,
            ..Default::default()
        },
    ];
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(800));
    assert_eq!(
        g.home(Lba(530)),
        PhysAddr {
            track: Track(5),
            sector: 30
        }
    );
}

#[test]
fn impossible_geometries_are_config_errors() {
    let bad = |f: &dyn Fn(&mut DriveConfig)| {
        let mut d = drive("imr", 8, 10);
        f(&mut d);
        d.geometry().unwrap_err().to_string()
    };
    assert!(bad(&|d| d.sector_bytes = 1000).contains("512 or 4096"));
    assert!(bad(&|d| d.layout.top_ratio = 1.5).contains("top_ratio"));
    assert!(bad(&|d| d.tracks = Some(7)).contains("multiple"));
    assert!(bad(&|d| d.track_bytes = 5000).contains("multiple of sector_bytes"));
    assert!(bad(&|d| d.zones = vec![ZoneSpec {
        first_track: 3,
        sectors_per_track: 5,
        ..Default::default()
    }])
    .contains("track 0"));
    // Sizes that would exhaust memory are refused up front, not attempted.
    assert!(bad(&|d| d.tracks = Some(1 << 40)).contains("more than stlsim simulates"));
    assert!(bad(&|d| d.track_bytes = 4096 << 30).contains("sectors per track"));
    assert!(bad(&|d| {
        d.tracks = None;
        d.capacity_gib = Some(1e6);
    })
    .contains("needs more than"));
}

#[test]
fn implausible_physical_quantities_are_one_line_errors_naming_the_key() {
    let bad = |f: &dyn Fn(&mut DriveConfig)| {
        let mut d = DriveConfig {
            tracks: Some(100),
            ..Default::default()
        };
        f(&mut d);
        let e = d.geometry().unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        e
    };
    for (rpm, shown) in [
        (1e12, "1000000000000"),
        (1e-300, "0.000"),
        (f64::NAN, "NaN"),
        (999.0, "999"),
        (30_001.0, "30001"),
    ] {
        let e = bad(&|d| d.rpm = rpm);
        assert!(
            e.contains("rpm = ") && e.contains(shown) && e.contains("1000 to 30000"),
            "{e}"
        );
    }
    assert!(bad(&|d| d.interface_mb_s = 1e-9).contains("interface_mb_s = 0.000000001 is outside"));
    assert!(bad(&|d| d.interface_mb_s = 1e9)
        .contains("interface_mb_s = 1000000000 is outside the plausible range 1 to 100000"));
    assert!(bad(&|d| d.seek.max_ms = 1e17).contains("seek.max_ms = 100000000000000000 is outside"));
    assert!(bad(&|d| d.seek.min_ms = -1.0).contains("seek.min_ms"));
    assert!(bad(&|d| d.write_cache_mib = f64::INFINITY).contains("write_cache_mib = inf"));
    assert!(bad(&|d| {
        d.tracks = None;
        d.capacity_gib = Some(1e15);
    })
    .contains("capacity_gib = 1000000000000000 is outside"));
    assert!(bad(&|d| d.layout.group_tracks = 1 << 63)
        .contains("layout.group_tracks = 9223372036854775808 is outside"));
    assert!(bad(&|d| d.layout.band_tracks = u64::MAX).contains("layout.band_tracks"));
    assert!(bad(&|d| d.layout.top_ratio = 0.01).contains("layout.top_ratio"));
    assert!(
        bad(&|d| d.ssd = Some(crate::side_device::SideConfig::intel_x25m(f64::NAN)))
            .contains("ssd.mib = NaN")
    );
    // The edges themselves are accepted.
    for rpm in [1000.0, 30_000.0] {
        let d = DriveConfig {
            tracks: Some(100),
            rpm,
            ..Default::default()
        };
        assert!(d.geometry().is_ok());
    }
}

/// The paper-002 drive in miniature: bands of 4, W = 2, 3 bands.
fn swd(mapping: &str, ra: u64) -> Geometry {
    let mut d = drive("smr", ra + 3 * 5, 10);
    d.layout.band_tracks = 4;
    d.layout.head_width_tracks = 2;
    d.layout.mapping = mapping.into();
    d.layout.random_access_tracks = ra;
    d.geometry().unwrap()
}

/// Which (band, position) each logical track lands on.
fn fill(g: &Geometry) -> Vec<(u64, u32)> {
    (0..g.logical_tracks())
        .map(|lt| g.band_position(g.logical_track_phys(lt)).unwrap())
        .collect()
}

#[test]
fn smr_mappings_fill_bands_in_the_papers_orders() {
    let g = swd("1234", 0);
    assert_eq!(&fill(&g)[..5], &[(0, 1), (0, 2), (0, 3), (0, 4), (1, 1)]);
    let g = swd("R(4123)", 0);
    assert_eq!(
        fill(&g),
        vec![
            (0, 4),
            (1, 4),
            (2, 4),
            (0, 1),
            (1, 1),
            (2, 1),
            (0, 2),
            (1, 2),
            (2, 2),
            (0, 3),
            (1, 3),
            (2, 3)
        ]
    );
    let g = swd("124R(3)", 0);
    assert_eq!(
        fill(&g),
        vec![
            (0, 1),
            (0, 2),
            (0, 4),
            (1, 1),
            (1, 2),
            (1, 4),
            (2, 1),
            (2, 2),
            (2, 4),
            (0, 3),
            (1, 3),
            (2, 3)
        ]
    );
    let g = swd("14R(23)", 0);
    assert_eq!(
        fill(&g),
        vec![
            (0, 1),
            (0, 4),
            (1, 1),
            (1, 4),
            (2, 1),
            (2, 4),
            (0, 2),
            (1, 2),
            (2, 2),
            (0, 3),
            (1, 3),
            (2, 3)
        ]
    );
    // Capacity does not depend on the mapping; every data track is used once.
    assert_eq!(g.capacity(), Sectors(120));
    assert_eq!(g.band_map().unwrap().notation(), "14R(23)");
}

#[test]
fn smr_random_access_zone_sits_before_the_bands_outside_the_lba_space() {
    let g = swd("1234", 4);
    assert_eq!(g.capacity(), Sectors(120));
    assert_eq!(g.random_access_tracks(), vec![Track(0), Track(2)]);
    assert_eq!(g.kind(Track(0)), TrackKind::RandomAccess);
    assert_eq!(g.kind(Track(1)), TrackKind::Guard);
    assert_eq!(g.home(Lba(0)).track, Track(4));
    assert_eq!(
        g.home_lba(PhysAddr {
            track: Track(2),
            sector: 0
        }),
        None
    );
    // A random-access track's overlap falls on its guard; band damage stays in the band.
    assert_eq!(
        g.damaged_by_write(Track(2)).collect::<Vec<_>>(),
        vec![Track(3)]
    );
    assert_eq!(
        g.damaged_by_write(Track(7)).collect::<Vec<_>>(),
        vec![Track(8)]
    );
    assert_eq!(g.band_position(Track(9)), Some((1, 1)));
    assert_eq!(g.band_track(1, 4), Track(12));
    assert_eq!(g.bands(), 3);
    // Shingling down mirrors the zone and the bands.
    let mut d = drive("smr", 4 + 3 * 5, 10);
    d.layout.band_tracks = 4;
    d.layout.direction = "down".into();
    d.layout.random_access_tracks = 4;
    let g = d.geometry().unwrap();
    assert_eq!(g.random_access_tracks(), vec![Track(1), Track(3)]);
    assert_eq!(
        g.damaged_by_write(Track(3)).collect::<Vec<_>>(),
        vec![Track(2)]
    );
    assert_eq!(g.band_track(0, 1), Track(8));
    assert_eq!(g.band_position(Track(5)), Some((0, 4)));
    assert_eq!(
        g.damaged_by_write(g.band_track(0, 1)).collect::<Vec<_>>(),
        vec![g.band_track(0, 2)]
    );
}

#[test]
fn smr_space_gain_is_equation_1() {
    assert!((swd("", 0).space_gain() - 1.6).abs() < 1e-12);
    let mut d = drive("smr", 7 * 2, 10);
    d.layout.band_tracks = 5;
    d.layout.head_width_tracks = 3;
    assert!((d.geometry().unwrap().space_gain() - 15.0 / 7.0).abs() < 1e-12);
}

#[test]
fn smr_layout_errors_are_clear() {
    let mut d = drive("smr", 15, 10);
    d.layout.random_access_tracks = 3;
    assert!(d
        .geometry()
        .unwrap_err()
        .to_string()
        .contains("multiple of head_width_tracks"));
    d.layout.random_access_tracks = 2;
    assert!(d
        .geometry()
        .unwrap_err()
        .to_string()
        .contains("persistent-cache tracks plus"));
    d.layout.random_access_tracks = 0;
    d.layout.mapping = "1243x".into();
    assert!(d
        .geometry()
        .unwrap_err()
        .to_string()
        .contains("smr mapping '1243x'"));
    let mut d = drive("cmr", 15, 10);
    d.layout.mapping = "1234".into();
    assert!(d
        .geometry()
        .unwrap_err()
        .to_string()
        .contains("smr layout key"));
}

#[test]
fn smr_persistent_cache_is_one_shingled_run_before_the_bands() {
    // 2 random-access tracks, a cache of 5 tracks + 1 guard, then 3 bands of 4 + 1.
    let mut d = drive("smr", 2 + 6 + 3 * 5, 10);
    d.layout.band_tracks = 4;
    d.layout.random_access_tracks = 2;
    d.layout.cache_tracks = 5;
    let g = d.geometry().unwrap();
    assert_eq!(
        g.capacity(),
        Sectors(120),
        "the cache adds no host capacity"
    );
    assert_eq!(g.cache_tracks(), 5);
    assert_eq!(
        (0..5).map(|i| g.cache_track(i).0).collect::<Vec<_>>(),
        vec![2, 3, 4, 5, 6]
    );
    assert_eq!(g.kind(Track(2)), TrackKind::Cache);
    assert_eq!(g.kind(Track(7)), TrackKind::Guard);
    assert_eq!(g.kind(Track(0)), TrackKind::RandomAccess);
    assert_eq!(g.home(Lba(0)).track, Track(8));
    assert_eq!(
        g.home_lba(PhysAddr {
            track: Track(3),
            sector: 0
        }),
        None
    );
    // A cache track damages the next one; the last damages the guard, never a band.
    assert_eq!(
        g.damaged_by_write(Track(3)).collect::<Vec<_>>(),
        vec![Track(4)]
    );
    assert_eq!(
        g.damaged_by_write(Track(6)).collect::<Vec<_>>(),
        vec![Track(7)]
    );
    assert_eq!(g.band_track(0, 1), Track(8));
    assert_eq!(g.band_position(Track(13)), Some((1, 1)));
    assert_eq!(g.bands(), 3);
    // Shingling down mirrors it: the guard comes first, the order is descending.
    d.layout.direction = "down".into();
    let g = d.geometry().unwrap();
    assert_eq!(g.kind(Track(2)), TrackKind::Guard);
    assert_eq!(g.cache_track(0), Track(7));
    assert_eq!(
        g.damaged_by_write(Track(7)).collect::<Vec<_>>(),
        vec![Track(6)]
    );
    assert_eq!(
        g.damaged_by_write(Track(3)).collect::<Vec<_>>(),
        vec![Track(2)]
    );
    // cache_mib rounds up to whole tracks (10 sectors of 4 KiB a track here).
    let mut d = drive("smr", 2 + 6 + 3 * 5, 10);
    d.layout.random_access_tracks = 2;
    d.layout.cache_mib = Some(0.17); // 178,258 B: 4.35 tracks of 40,960 B -> 5
    assert_eq!(d.geometry().unwrap().cache_tracks(), 5);
    d.layout.cache_tracks = 5;
    assert!(d
        .geometry()
        .unwrap_err()
        .to_string()
        .contains("either cache_tracks or cache_mib"));
    let mut d = drive("cmr", 10, 10);
    d.layout.cache_tracks = 3;
    assert!(d
        .geometry()
        .unwrap_err()
        .to_string()
        .contains("smr layout key"));
}

#[test]
fn a_capacity_that_ends_before_inner_zones_leaves_them_unused() {
    let mut d = drive("cmr", 10, 10);
    d.zones = vec![
        ZoneSpec {
            first_track: 0,
            sectors_per_track: 10,
            ..Default::default()
        },
        ZoneSpec {
            first_track: 100,
            sectors_per_track: 5,
            ..Default::default()
        },
    ];
    d.tracks = None;
    d.capacity_gib = Some(50.0 * 4096.0 / (1u64 << 30) as f64); // 50 sectors: 5 tracks of the outer zone
    assert_eq!(d.geometry().unwrap().tracks(), 5);
    // Given explicitly, a track count that leaves a zone out is a mistake.
    d.tracks = Some(5);
    assert!(d
        .geometry()
        .unwrap_err()
        .to_string()
        .contains("beyond the last track"));
}

/// The per-track tables the geometry used to hold (sizes, logical track
/// order, first LBA of each logical track), built the way it built them:
/// the reference the computed home order must match exactly.
fn reference_tables(g: &Geometry) -> (Vec<u32>, Vec<u64>, Vec<u64>) {
    let (layout, tracks) = (g.layout(), g.tracks());
    let spt: Vec<u32> = (0..tracks).map(|t| g.sectors_in(Track(t))).collect();
    let mut lt_phys: Vec<u64> = vec![];
    match layout {
        Layout::Cmr | Layout::Zoned { .. } => lt_phys.extend(0..tracks),
        Layout::Wave { .. } => lt_phys.extend((0..tracks).filter(|&t| spt[t as usize] > 0)),
        Layout::Smr {
            band, width, up, ..
        } => {
            let u = band + width - 1;
            let first = layout.bands_start();
            let bands = (tracks - first) / u;
            let phys = |b: u64, p: u32| {
                if up {
                    first + b * u + p as u64 - 1
                } else {
                    first + b * u + width - 1 + band - p as u64
                }
            };
            let map = g
                .band_map()
                .cloned()
                .unwrap_or_else(|| BandMap::sequential(band));
            for grp in map.groups() {
                for b in 0..bands {
                    lt_phys.extend(grp.iter().map(|&p| phys(b, p)));
                }
            }
        }
        Layout::Imr { group, order, .. } => {
            let u = 2 * group;
            for gi in 0..tracks / u {
                let base = gi * u;
                match order {
                    ImrOrder::Ascending => lt_phys.extend((0..u).map(|i| base + i)),
                    ImrOrder::ZigZag => {
                        lt_phys.extend((0..group).map(|i| base + 2 * i));
                        lt_phys.extend((0..group).map(|i| base + 2 * i + 1));
                    }
                    ImrOrder::Serpentine => {
                        lt_phys.extend((0..group).map(|i| base + 2 * i));
                        lt_phys.extend((0..group).rev().map(|i| base + 2 * i + 1));
                    }
                }
            }
        }
    }
    let mut lt_start = vec![];
    let mut acc = 0;
    for &p in &lt_phys {
        lt_start.push(acc);
        acc += spt[p as usize] as u64;
    }
    lt_start.push(acc);
    (spt, lt_phys, lt_start)
}

/// Every lookup of the computed home order against the tables.
fn assert_matches_tables(g: &Geometry, what: &str) {
    let (spt, lt_phys, lt_start) = reference_tables(g);
    let mut sizes = vec![];
    assert_eq!(
        g.max_sectors_per_track(),
        spt.iter().copied().max().unwrap_or(0),
        "{what}: max spt"
    );
    let home_max = lt_phys.iter().map(|&p| spt[p as usize]).max().unwrap_or(0);
    assert_eq!(
        g.max_home_sectors_per_track(),
        home_max,
        "{what}: max home spt"
    );
    assert_eq!(
        g.logical_tracks(),
        lt_phys.len() as u64,
        "{what}: logical tracks"
    );
    assert_eq!(
        g.capacity().0,
        *lt_start.last().unwrap(),
        "{what}: capacity"
    );
    let mut phys_lt = vec![None; spt.len()];
    for (lt, &p) in lt_phys.iter().enumerate() {
        phys_lt[p as usize] = Some(lt as u64);
        assert_eq!(
            g.logical_track_phys(lt as u64).0,
            p,
            "{what}: phys of lt {lt}"
        );
        assert_eq!(
            g.logical_track_start(lt as u64).0,
            lt_start[lt],
            "{what}: start of lt {lt}"
        );
        let (s, e) = (lt_start[lt], lt_start[lt + 1]);
        for lba in [s, (s + e) / 2, e - 1] {
            assert_eq!(
                g.logical_track_of(Lba(lba)),
                lt as u64,
                "{what}: lt of lba {lba}"
            );
            let (at, take) = g.home_extent(lba, u64::MAX);
            assert_eq!(
                (at.track.0, at.sector as u64, take as u64),
                (p, lba - s, e - lba),
                "{what}: home extent of lba {lba}"
            );
        }
        sizes.push(spt[p as usize]);
    }
    assert_eq!(
        g.logical_track_start(lt_phys.len() as u64).0,
        *lt_start.last().unwrap(),
        "{what}: end"
    );
    for (t, want) in phys_lt.iter().enumerate() {
        assert_eq!(
            g.phys_logical_track(Track(t as u64)),
            *want,
            "{what}: lt of track {t}"
        );
    }
    let uniform = sizes
        .first()
        .filter(|&&f| sizes.iter().all(|&s| s == f))
        .map(|&f| f as u64);
    assert_eq!(g.uniform_lt, uniform, "{what}: uniform");
}

/// Drives of every layout, order, mapping and zone table, with zones that
/// do and do not straddle units.
fn home_order_cases() -> Vec<(String, DriveConfig)> {
    let zones = |v: &[(u64, u32)]| {
        v.iter()
            .map(|&(f, s)| ZoneSpec {
                first_track: f,
                sectors_per_track: s,
                ..Default::default()
            })
            .collect::<Vec<_>>()
    };
    let mut out = vec![];
    for z in [
        zones(&[(0, 10)]),
        zones(&[(0, 12), (40, 9), (97, 5), (150, 7)]),
    ] {
        let zoned_table = z.len() > 1;
        let mut cmr = drive("cmr", 200, 10);
        cmr.zones = z.clone();
        out.push((format!("cmr zones={zoned_table}"), cmr));
        for (order, ratio, group) in [
            ("zigzag", 1.0, 4),
            ("zigzag", 0.7, 4),
            ("serpentine", 0.9, 3),
            ("ascending", 0.5, 2),
        ] {
            let mut d = drive("imr", 240, 10);
            d.layout.order = order.into();
            d.layout.top_ratio = ratio;
            d.layout.group_tracks = group;
            // IMR zones start on group boundaries.
            d.zones = z
                .iter()
                .map(|s| ZoneSpec {
                    first_track: s.first_track / (2 * group) * (2 * group),
                    ..s.clone()
                })
                .collect();
            d.zones.dedup_by_key(|s| s.first_track);
            out.push((
                format!("imr {order} {ratio} N={group} zones={zoned_table}"),
                d,
            ));
        }
        for (mapping, up, ra, cache) in [
            ("", true, 0, 0),
            ("R(4123)", true, 6, 0),
            ("14R(23)", false, 4, 7),
            ("124R(3)", true, 2, 5),
            ("1234", false, 0, 9),
        ] {
            let mut d = drive("smr", 0, 10);
            d.layout.band_tracks = 4;
            d.layout.head_width_tracks = 2 + u64::from(!up);
            d.layout.direction = if up { "up" } else { "down" }.into();
            d.layout.mapping = mapping.into();
            d.layout.random_access_tracks = ra * d.layout.head_width_tracks / 2;
            d.layout.random_access_tracks -=
                d.layout.random_access_tracks % d.layout.head_width_tracks;
            d.layout.cache_tracks = cache;
            let unit = d.layout.band_tracks + d.layout.head_width_tracks - 1;
            let extra = d.layout.random_access_tracks
                + if cache > 0 {
                    cache + d.layout.head_width_tracks - 1
                } else {
                    0
                };
            d.tracks = Some(extra + 40 * unit);
            d.zones = z.clone();
            out.push((
                format!("smr '{mapping}' up={up} ra={ra} cache={cache} zones={zoned_table}"),
                d,
            ));
        }
        let mut w = drive("wave", 0, 10);
        w.layout.region_tracks = 5;
        w.layout.kappa_tracks = 3;
        w.tracks = Some(13 * 15);
        w.zones = z.clone();
        out.push((format!("wave zones={zoned_table}"), w));
        if !zoned_table {
            let mut d = drive("zoned", 256, 10);
            d.layout.zone_tracks = 16;
            d.layout.conventional_zones = 2;
            out.push(("zoned".into(), d));
        }
    }
    out
}

#[test]
fn home_order_matches_the_per_track_tables() {
    for (what, d) in home_order_cases() {
        let g = d.geometry().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_matches_tables(&g, &what);
    }
    // The presets' shapes at full size, on their own zone tables.
    let mut d = DriveConfig {
        capacity_gib: Some(64.0),
        tracks: None,
        ..drive("imr", 0, 0)
    };
    d.track_bytes = 2 << 20;
    d.layout.group_tracks = 8;
    assert_matches_tables(&d.geometry().unwrap(), "imr 64 GiB");
}

/// A drive of 200,000 GiB is as cheap as a small one: the geometry holds
/// no table per track (it took 2 GB).
#[test]
fn a_huge_drive_costs_no_memory_per_track() {
    let d = DriveConfig {
        capacity_gib: Some(200_000.0),
        tracks: None,
        ..drive("imr", 0, 512)
    };
    let g = d.geometry().unwrap();
    assert_eq!(g.tracks(), 102_400_000);
    let bytes = std::mem::size_of_val(&g) as u64 + g.home_heap_bytes();
    assert!(bytes < 4096, "{bytes} bytes");
    // Lookups at the far end work.
    let last = g.capacity().0 - 1;
    let at = g.home(Lba(last));
    assert_eq!(g.home_lba(at), Some(Lba(last)));
}

#[test]
fn surfaces_need_cylinder_aligned_zones_and_the_cmr_layout() {
    let mut d = drive("cmr", 12, 10);
    d.surfaces = 3;
    d.zones = vec![
        ZoneSpec {
            first_track: 0,
            sectors_per_track: 10,
            ..Default::default()
        },
        ZoneSpec {
            first_track: 6,
            sectors_per_track: 8,
            ..Default::default()
        },
    ];
    let g = d.geometry().unwrap();
    // LBAs still ascend track by track: with tracks numbered cylinder-major
    // that fills cylinder 0 (tracks 0, 1, 2) before cylinder 1.
    assert_eq!(g.home(Lba(25)).track, Track(2));
    assert_eq!(g.home(Lba(60)).track, Track(6));
    d.zones[1].first_track = 7;
    let e = d.geometry().unwrap_err().to_string();
    assert!(e.contains("not the first track of a cylinder"), "{e}");
    d.zones[1].first_track = 6;
    d.layout.kind = crate::geometry::LayoutKind::Imr;
    let e = d.geometry().unwrap_err().to_string();
    assert!(e.contains("surfaces = 3 needs layout kind 'cmr'"), "{e}");
}

#[test]
fn spare_tracks_and_empty_zone_fronts_hold_no_lbas() {
    // Zone 0: tracks 0..10 of 10 sectors, a 20-sector (2-track) empty front
    // and 3 spare tracks: data on tracks 2..7. Zone 1: tracks 10..20 of 8
    // sectors, 2 spare tracks: data on 10..18. DiskSim sparing scheme 1.
    let mut d = drive("cmr", 20, 10);
    d.zones = vec![
        ZoneSpec {
            first_track: 0,
            sectors_per_track: 10,
            front_empty_sectors: 20,
            spare_tracks: 3,
            ..Default::default()
        },
        ZoneSpec {
            first_track: 10,
            sectors_per_track: 8,
            spare_tracks: 2,
            ..Default::default()
        },
    ];
    let g = d.geometry().unwrap();
    assert_eq!(g.tracks(), 20);
    assert_eq!(g.capacity(), Sectors(5 * 10 + 8 * 8));
    let at = |t: u64, s: u32| PhysAddr {
        track: Track(t),
        sector: s,
    };
    assert_eq!(g.home(Lba(0)), at(2, 0));
    assert_eq!(g.home(Lba(49)), at(6, 9));
    assert_eq!(g.home(Lba(50)), at(10, 0));
    assert_eq!(g.home(Lba(113)), at(17, 7));
    for t in [0, 1, 7, 8, 9, 18, 19] {
        assert_eq!(g.phys_logical_track(Track(t)), None, "track {t}");
    }
    assert_eq!(g.home_lba(at(11, 3)), Some(Lba(61)));
    // Holes keep their zone's size: the medium and the mechanics see them.
    assert_eq!(g.sectors_in(Track(8)), 10);
    assert_eq!(g.sectors_in(Track(19)), 8);
    assert_eq!(g.max_sectors_per_track(), 10);
    let mut ext = vec![];
    g.for_home_extents(Lba(45), Sectors(10), |a, n, l| ext.push((a, n, l)));
    assert_eq!(ext, vec![(at(6, 5), 5, Lba(45)), (at(10, 0), 5, Lba(50))]);
    // Holes that leave a zone no data are an error naming the zone.
    d.zones[1].spare_tracks = 10;
    let e = d.geometry().unwrap_err().to_string();
    assert!(e.contains("the zone at track 10 has 10 tracks"), "{e}");
    // The same holes on a drive sized by capacity are not mapped (warned).
    d.zones[1].spare_tracks = 2;
    assert!(d.unmapped_zone_keys().is_empty());
    d.tracks = None;
    d.capacity_gib = Some(1e-3);
    assert_eq!(
        d.unmapped_zone_keys(),
        vec!["front_empty_sectors", "spare_tracks"]
    );
}

/// `tracks_for_capacity` as it was: every track's size, one by one.
fn tracks_for_capacity_walk(
    layout: Layout,
    zones: &[ZoneSpec],
    limit: u64,
    want: u64,
) -> Option<u64> {
    let (first, unit) = (layout.extra_tracks(), layout.unit_tracks());
    let (mut cap, mut z) = (0u64, 0usize);
    for t in 0..limit {
        while z + 1 < zones.len() && zones[z + 1].first_track <= t {
            z += 1;
        }
        if t >= first {
            cap += home::size_rule(layout, zones[z].sectors_per_track, t) as u64;
            if (t + 1 - first) % unit == 0 && cap >= want {
                return Some(t + 1);
            }
        }
    }
    None
}

proptest::proptest! {
    /// Taking whole units at once inside a zone finds the track count the
    /// track-by-track walk finds, for every layout, over zones of any sizes
    /// and boundaries (a planted off-by-one in the jump fails this).
    #[test]
    fn capacity_sizing_takes_whole_units_as_the_walk_would(
        kind in 0u8..5,
        a in 1u64..6,
        b in 1u64..4,
        up in proptest::bool::ANY,
        ratio in 0.3f64..1.0,
        zones in proptest::collection::vec((1u64..60, 1u32..40), 1..4),
        want in proptest::prop_oneof![proptest::strategy::Just(0u64), 0u64..50, 0u64..20_000],
    ) {
        let layout = match kind {
            0 => Layout::Cmr,
            1 => Layout::Imr { top_ratio: ratio, group: a, order: ImrOrder::ZigZag },
            2 => Layout::Smr { band: a, width: b + 1, up, random_access: (b + 1) * (a % 3), cache: a % 2 * 3 },
            3 => Layout::Wave { region: a, kappa: b },
            _ => Layout::Zoned { zone_tracks: a, conventional: 0, max_open: 0, unrestricted_reads: false },
        };
        let mut first = 0;
        let zones: Vec<ZoneSpec> = zones
            .into_iter()
            .map(|(len, spt)| {
                let z = ZoneSpec { first_track: first, sectors_per_track: spt, ..Default::default() };
                first += len;
                z
            })
            .collect();
        let fast = tracks_for_capacity(layout, &zones, want);
        // The walk stops where the fast form gives up only past MAX_TRACKS:
        // compare within a bound both reach.
        let walk = tracks_for_capacity_walk(layout, &zones, 1_000_000, want);
        proptest::prop_assert_eq!(fast, walk);
    }
}

/// Issue 36: a layout's keys are its kind's; a key of another kind, an
/// unknown kind or a misspelt key is a one-line error naming it, and a
/// drive description written out reads back.
#[test]
fn a_layout_takes_only_its_kinds_keys() {
    let err = |json: &str| {
        serde_json::from_str::<DriveConfig>(json)
            .unwrap_err()
            .to_string()
    };
    let e = err(r#"{"layout": {"kind": "imr", "cache_mib": 4}}"#);
    assert!(
        e.starts_with("layout key 'cache_mib' belongs to 'smr' layouts; kind 'imr' takes top_ratio, group_tracks, order"),
        "{e}"
    );
    let e = err(r#"{"layout": {"band_tracks": 4}}"#);
    assert!(
        e.starts_with(
            "layout key 'band_tracks' belongs to 'smr' layouts; kind 'cmr' takes no other key"
        ),
        "{e}"
    );
    let e = err(r#"{"layout": {"kind": "hamr"}}"#);
    assert!(
        e.starts_with("layout.kind 'hamr' is not 'cmr', 'smr', 'imr', 'zoned' or 'wave'"),
        "{e}"
    );
    let e = err(r#"{"layout": {"kind": "smr", "bandtracks": 4}}"#);
    assert!(
        e.starts_with("unknown layout key 'bandtracks' (kind 'smr' takes band_tracks,"),
        "{e}"
    );
    assert!(e.contains("did you mean 'band_tracks'?"), "{e}");
    let e = err(r#"{"rotation": "fast"}"#);
    assert!(
        e.starts_with("rotation 'fast' is not 'average' or 'angular'"),
        "{e}"
    );

    let mut d = drive("smr", 40, 10);
    d.layout.cache_mib = Some(1.0);
    d.rotation = crate::mechanics::Rotation::Angular;
    let text = serde_json::to_string(&d).unwrap();
    assert!(
        text.contains(r#""kind":"smr""#) && text.contains(r#""rotation":"angular""#),
        "{text}"
    );
    assert!(
        !text.contains("top_ratio"),
        "another kind's key written: {text}"
    );
    assert_eq!(serde_json::from_str::<DriveConfig>(&text).unwrap(), d);
    let cmr = serde_json::to_string(&DriveConfig::default()).unwrap();
    assert!(cmr.contains(r#""layout":{"kind":"cmr"}"#), "{cmr}");
}

/// `LayoutKind::keys` lists the layout fields by hand: every field of
/// `LayoutConfig` but `kind` belongs to exactly one kind, so a new field
/// cannot be left unreadable.
#[test]
fn every_layout_field_belongs_to_exactly_one_kind() {
    use crate::choice::Choice;
    use crate::geometry::LayoutKind;
    let v = serde_json::to_value(LayoutConfig {
        cache_mib: Some(1.0),
        ..Default::default()
    })
    .unwrap();
    let fields: Vec<&String> = v
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| *k != "kind")
        .collect();
    for f in &fields {
        let owners = LayoutKind::NAMES
            .iter()
            .filter(|(_, k)| k.keys().contains(&f.as_str()))
            .count();
        assert_eq!(owners, 1, "layout field '{f}'");
    }
    let listed: usize = LayoutKind::NAMES.iter().map(|(_, k)| k.keys().len()).sum();
    assert_eq!(listed, fields.len());
}
