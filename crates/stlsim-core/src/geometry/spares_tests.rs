//! DiskSim's sector-level spares in the home map: hand-computed examples of
//! each scheme, the errors, and a property test against DiskSim's own
//! LBN-to-PBN formulas (`diskmodel/layout_g1.c`, `g1_ltop_*`) and zone
//! sizes (`layout_g1_load.c`, `dm_layout_g1_compute_blksinband`).

use super::tests::drive;
use super::*;
use crate::drive::DriveConfig;

fn at(t: u64, s: u32) -> PhysAddr {
    PhysAddr {
        track: Track(t),
        sector: s,
    }
}

/// A CMR drive of `cylinders` cylinders of `surfaces` surfaces, one zone of
/// `spt` sectors a track.
fn one_zone(surfaces: u64, cylinders: u64, spt: u32, z: ZoneSpec) -> DriveConfig {
    let mut d = drive("cmr", surfaces * cylinders, spt);
    d.surfaces = surfaces;
    d.zones = vec![ZoneSpec {
        first_track: 0,
        sectors_per_track: spt,
        ..z
    }];
    d
}

/// Every LBA's home, in LBA order, and that each maps back.
fn homes(g: &Geometry) -> Vec<PhysAddr> {
    (0..g.capacity().0)
        .map(|l| {
            let h = g.home(Lba(l));
            assert_eq!(g.home_lba(h), Some(Lba(l)), "LBA {l} at {h:?}");
            h
        })
        .collect()
}

#[test]
fn spare_sectors_per_track_end_every_track() {
    // Scheme 3: 2 surfaces x 4 cylinders of 10 sectors, 3 spares a track:
    // 7 LBAs a track, sectors 0..7 of every track (g1_ltop_sectpertrackspare:
    // track x / 7, sector x % 7).
    let d = one_zone(
        2,
        4,
        10,
        ZoneSpec {
            spare_sectors_per_track: 3,
            ..Default::default()
        },
    );
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(8 * 7));
    assert_eq!(g.home(Lba(6)), at(0, 6));
    assert_eq!(g.home(Lba(7)), at(1, 0));
    assert_eq!(g.home(Lba(20)), at(2, 6));
    assert_eq!(g.home(Lba(55)), at(7, 6));
    for t in 0..8 {
        assert_eq!(g.home_lba(at(t, 7)), None, "track {t}");
        assert_eq!(g.home_lba(at(t, 9)), None, "track {t}");
    }
    // The track keeps its 10 sectors for the mechanics and the medium.
    assert_eq!(g.sectors_in(Track(0)), 10);
    assert!(d.unmapped_zone_keys().is_empty());
}

#[test]
fn spare_sectors_per_cylinder_end_each_cylinder() {
    // Scheme 2: 2 surfaces of 10 sectors, 3 spares a cylinder: 17 LBAs a
    // cylinder, track 0 whole and sectors 0..7 of track 1.
    let mut d = one_zone(
        2,
        3,
        10,
        ZoneSpec {
            spare_sectors_per_cylinder: 3,
            ..Default::default()
        },
    );
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(3 * 17));
    assert_eq!(g.home(Lba(9)), at(0, 9));
    assert_eq!(g.home(Lba(16)), at(1, 6));
    assert_eq!(g.home(Lba(17)), at(2, 0));
    assert_eq!(g.home(Lba(50)), at(5, 6));
    assert_eq!(g.home_lba(at(1, 7)), None);
    assert_eq!(g.home_lba(at(2, 9)), Some(Lba(26)));
    // A request over the short track's end goes on at the next cylinder.
    let mut ext = vec![];
    g.for_home_extents(Lba(14), Sectors(6), |a, n, l| ext.push((a, n, l)));
    assert_eq!(ext, vec![(at(1, 4), 3, Lba(14)), (at(2, 0), 3, Lba(17))]);
    // 12 spares: the cylinder's 8 LBAs on track 0, track 1 wholly spare.
    d.zones[0].spare_sectors_per_cylinder = 12;
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(3 * 8));
    assert_eq!(g.home(Lba(8)), at(2, 0));
    assert_eq!(g.logical_tracks(), 3);
    assert_eq!(g.phys_logical_track(Track(1)), None);
    assert_eq!(g.phys_logical_track(Track(4)), Some(2));
    assert_eq!(g.logical_track_phys(2), Track(4));
}

#[test]
fn spare_sectors_per_range_end_each_whole_range() {
    // Scheme 8: 2 surfaces of 10 sectors, ranges of 2 cylinders (4 tracks,
    // 40 sectors), 15 spares a range: 25 LBAs a range on tracks 0, 1 and
    // sectors 0..5 of track 2; track 3 spare. 5 cylinders: two whole ranges
    // and a last partial range of one cylinder that keeps no spares
    // (blksinband: 100 - 15 x (5 / 2) = 70).
    let mut d = one_zone(
        2,
        5,
        10,
        ZoneSpec {
            spare_sectors_per_range: 15,
            ..Default::default()
        },
    );
    d.spare_range_cylinders = 2;
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(70));
    assert_eq!(g.home(Lba(24)), at(2, 4));
    assert_eq!(g.home(Lba(25)), at(4, 0));
    assert_eq!(g.home(Lba(49)), at(6, 4));
    assert_eq!(g.home(Lba(50)), at(8, 0));
    assert_eq!(g.home(Lba(69)), at(9, 9));
    for t in [3, 7] {
        assert_eq!(g.phys_logical_track(Track(t)), None, "track {t}");
    }
    assert_eq!(g.home_lba(at(2, 5)), None);
    assert_eq!(g.home_lba(at(6, 4)), Some(Lba(49)));
    assert_eq!(g.logical_tracks(), 8);
    assert_eq!(g.logical_track_start(3), Lba(25));
    assert_eq!(g.logical_track_start(8), Lba(70));
    // A zone shorter than a range keeps no spares.
    d.spare_range_cylinders = 6;
    assert_eq!(d.geometry().unwrap().capacity(), Sectors(100));
}

#[test]
fn spare_sectors_per_zone_end_the_zone() {
    // Scheme 9: zone 0 is 3 cylinders of 2 surfaces of 10 sectors with 13
    // spares: 47 LBAs, tracks 0..4 whole, sectors 0..7 of track 4, track 5
    // spare; zone 1 (tracks 6..10, 8 sectors) follows with its 5 spares.
    let mut d = one_zone(
        2,
        5,
        10,
        ZoneSpec {
            spare_sectors_per_zone: 13,
            ..Default::default()
        },
    );
    d.zones.push(ZoneSpec {
        first_track: 6,
        sectors_per_track: 8,
        spare_sectors_per_zone: 5,
        ..Default::default()
    });
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(47 + 27));
    assert_eq!(g.home(Lba(46)), at(4, 6));
    assert_eq!(g.home(Lba(47)), at(6, 0));
    assert_eq!(g.home(Lba(73)), at(9, 2));
    assert_eq!(g.home_lba(at(4, 7)), None);
    assert_eq!(g.phys_logical_track(Track(5)), None);
    assert_eq!(g.home_lba(at(9, 3)), None);
    assert_eq!(g.max_sectors_per_track(), 10);
}

#[test]
fn an_empty_front_is_mapped_when_it_ends_on_a_track_start() {
    // DiskSim adds the front to the LBN's position before the scheme places
    // it, so with 7 LBAs a track (scheme 3) a 7-sector front takes track 0
    // and a 10-sector one ends inside track 1: that one is left unmapped.
    let mut d = one_zone(
        2,
        2,
        10,
        ZoneSpec {
            spare_sectors_per_track: 3,
            front_empty_sectors: 7,
            ..Default::default()
        },
    );
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(3 * 7));
    assert_eq!(g.home(Lba(0)), at(1, 0));
    assert_eq!(g.phys_logical_track(Track(0)), None);
    assert!(d.unmapped_zone_keys().is_empty());
    d.zones[0].front_empty_sectors = 10;
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(4 * 7));
    assert_eq!(g.home(Lba(0)), at(0, 0));
    assert_eq!(d.unmapped_zone_keys(), vec!["front_empty_sectors"]);
}

#[test]
fn spares_that_leave_no_data_or_mix_schemes_are_errors_naming_the_key() {
    let mut d = one_zone(
        2,
        3,
        10,
        ZoneSpec {
            spare_sectors_per_track: 10,
            ..Default::default()
        },
    );
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("spare_sectors_per_track = 10 leaves no data sectors in a track of 10 sectors"),
        "{e}"
    );
    d.zones[0].spare_sectors_per_track = 0;
    d.zones[0].spare_sectors_per_cylinder = 25;
    let e = d.geometry().unwrap_err().to_string();
    assert!(e.contains("spare_sectors_per_cylinder = 25"), "{e}");
    d.zones[0].spare_sectors_per_cylinder = 0;
    d.zones[0].spare_sectors_per_range = 60;
    d.spare_range_cylinders = 3;
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("spare_sectors_per_range = 60 leaves no data sectors in a range of 3 cylinders"),
        "{e}"
    );
    d.zones[0].spare_sectors_per_range = 0;
    d.zones[0].spare_sectors_per_zone = 60;
    let e = d.geometry().unwrap_err().to_string();
    assert!(e.contains("spare_sectors_per_zone = 60"), "{e}");
    d.zones[0].spare_sectors_per_zone = 59;
    assert_eq!(d.geometry().unwrap().capacity(), Sectors(1));
    d.zones[0].spare_tracks = 1;
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("spare_tracks and spare_sectors_per_zone") && e.contains("one sparing scheme"),
        "{e}"
    );
    // On a drive sized by capacity the spares are not mapped, and warned.
    d.zones[0].spare_tracks = 0;
    d.tracks = None;
    d.capacity_gib = Some(1e-3);
    assert_eq!(d.unmapped_zone_keys(), vec!["spare_sectors_per_zone"]);
}

#[test]
fn slipped_tracks_hold_no_lba_and_move_the_tracks_after_them_on() {
    // One surface, 8 tracks of 4 sectors, 3 spare tracks, tracks 2 and 4
    // slipped (DiskSim scheme 1): LBNs 0..19 on tracks 0, 1, 3, 5, 6; the
    // track after a slip keeps its sector numbering (LBN 8 at sector 0 of
    // track 3), and track 7 is spare still.
    let d = one_zone(
        1,
        8,
        4,
        ZoneSpec {
            spare_tracks: 3,
            slipped_tracks: vec![2, 4],
            ..Default::default()
        },
    );
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(20));
    let tracks: Vec<u64> = (0..20).step_by(4).map(|l| g.home(Lba(l)).track.0).collect();
    assert_eq!(tracks, vec![0, 1, 3, 5, 6]);
    assert_eq!(g.home(Lba(9)), at(3, 1));
    for t in [2, 4, 7] {
        assert_eq!(g.home_lba(at(t, 0)), None, "track {t}");
    }
    assert_eq!(g.home_lba(at(5, 3)), Some(Lba(15)));
}

#[test]
fn slipped_sectors_hold_no_lba_and_move_the_lbas_after_them_on() {
    // One surface, 4 tracks of 5 sectors, 3 spare sectors at the zone's end
    // (scheme 9), sectors 6 and 12 slipped: DiskSim's LBN x lies at
    // position x + (slips at or before it). Track 1's positions 5..9 hold
    // LBNs 5, (slip), 6, 7, 8; track 2's 10..14 hold 9, 10, (slip), 11, 12;
    // track 3's 15..19 hold 13..16 and one spare.
    let d = one_zone(
        1,
        4,
        5,
        ZoneSpec {
            spare_sectors_per_zone: 3,
            slipped_sectors: vec![6, 12],
            ..Default::default()
        },
    );
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(17));
    assert_eq!(g.home(Lba(5)), at(1, 0));
    assert_eq!(g.home(Lba(6)), at(1, 2));
    assert_eq!(g.home(Lba(8)), at(1, 4));
    assert_eq!(g.home(Lba(11)), at(2, 3));
    assert_eq!(g.home(Lba(16)), at(3, 3));
    assert_eq!(g.home_lba(at(1, 1)), None);
    assert_eq!(g.home_lba(at(2, 2)), None);
    assert_eq!(g.home_lba(at(3, 4)), None);
    assert_eq!(g.logical_track_start(2), Lba(9));
    // A transfer over a slipped sector is two pieces of one track.
    let mut pieces = vec![];
    g.for_home_extents(Lba(5), Sectors(4), |a, n, l| pieces.push((a, n, l)));
    assert_eq!(pieces, vec![(at(1, 0), 1, Lba(5)), (at(1, 2), 3, Lba(6))]);
    homes(&g);
}

#[test]
fn slipped_sectors_need_a_sector_scheme_order_and_room() {
    let mut d = one_zone(
        1,
        4,
        5,
        ZoneSpec {
            slipped_sectors: vec![6],
            ..Default::default()
        },
    );
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("slipped_sectors need spare_sectors_per_range or spare_sectors_per_zone"),
        "{e}"
    );
    d.zones[0].spare_sectors_per_zone = 3;
    d.zones[0].slipped_sectors = vec![6, 2];
    let e = d.geometry().unwrap_err().to_string();
    assert!(e.contains("slipped_sectors must ascend (6 then 2)"), "{e}");
    d.zones[0].slipped_sectors = vec![20];
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("slipped sector 20 lies outside the zone's whole sparing periods (20 sectors)"),
        "{e}"
    );
    // Three slips move LBN 16 to position 19, the last data track's last
    // sector; a fourth would need another track.
    d.zones[0].slipped_sectors = vec![1, 2, 3];
    assert!(d.geometry().is_ok());
    d.zones[0].slipped_sectors = vec![1, 2, 3, 4];
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("4 slipped_sectors in sparing period 0 move its LBAs past the 3 spare sectors"),
        "{e}"
    );
    d.zones[0].slipped_sectors = vec![1];
    d.zones[0].front_empty_sectors = 5;
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("slipped_sectors with front_empty_sectors are not supported"),
        "{e}"
    );
}

#[test]
fn slipped_tracks_out_of_order_past_the_zone_or_beyond_the_spares_are_errors() {
    let mut d = one_zone(
        1,
        8,
        4,
        ZoneSpec {
            spare_tracks: 2,
            slipped_tracks: vec![4, 2],
            ..Default::default()
        },
    );
    let e = d.geometry().unwrap_err().to_string();
    assert!(e.contains("slipped_tracks must ascend (4 then 2)"), "{e}");
    d.zones[0].slipped_tracks = vec![2, 8];
    let e = d.geometry().unwrap_err().to_string();
    assert!(e.contains("slipped track 8 is past its 8 tracks"), "{e}");
    d.zones[0].slipped_tracks = vec![1, 2, 3];
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("3 slipped_tracks need as many spare_tracks (it has 2)"),
        "{e}"
    );
    // Not mapped on a drive sized by capacity: warned.
    d.zones[0].slipped_tracks = vec![1];
    d.zones[0].spare_tracks = 0;
    d.tracks = None;
    d.capacity_gib = Some(1e-3);
    assert_eq!(d.unmapped_zone_keys(), vec!["slipped_tracks"]);
}

#[test]
fn gap_cylinders_hold_no_lba_and_keep_the_next_zone_in_place() {
    // 2 surfaces. Zone 0: cylinders 0..1 of 10 sectors (tracks 0..3), then
    // one gap cylinder (tracks 4, 5) in no DiskSim zone; zone 1 starts at
    // cylinder 3 (track 6) with 8 sectors, cylinders 3..4 (tracks 6..9).
    // DiskSim: 2 x 2 x 10 + 2 x 2 x 8 = 72 LBNs, LBN 40 on cylinder 3.
    let mut d = one_zone(
        2,
        5,
        10,
        ZoneSpec {
            gap_cylinders: 1,
            ..Default::default()
        },
    );
    d.zones.push(ZoneSpec {
        first_track: 6,
        sectors_per_track: 8,
        ..Default::default()
    });
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(72));
    assert_eq!(g.home(Lba(0)), at(0, 0));
    // LBA 39: cylinder 1, head 1, sector 9; LBA 40: cylinder 3, head 0, sector 0.
    assert_eq!(g.home(Lba(39)), at(3, 9));
    assert_eq!(g.home(Lba(40)), at(6, 0));
    assert_eq!(g.home(Lba(51)), at(7, 3));
    assert_eq!(g.home(Lba(71)), at(9, 7));
    for t in [4, 5] {
        assert_eq!(g.phys_logical_track(Track(t)), None, "track {t}");
        for s in 0..10 {
            assert_eq!(g.home_lba(at(t, s)), None, "track {t} sector {s}");
        }
        // The gap keeps its tracks and format for the medium and the arm.
        assert_eq!(g.sectors_in(Track(t)), 10);
    }
    assert_eq!(g.tracks(), 10);
    assert_eq!(g.logical_tracks(), 8);
    assert_eq!(g.logical_track_phys(4), Track(6));
    assert_eq!(g.logical_track_start(4), Lba(40));
    // A request over the gap goes on at the next zone's first track.
    let mut ext = vec![];
    g.for_home_extents(Lba(38), Sectors(4), |a, n, l| ext.push((a, n, l)));
    assert_eq!(ext, vec![(at(3, 8), 2, Lba(38)), (at(6, 0), 2, Lba(40))]);
    assert!(d.unmapped_zone_keys().is_empty());
}

#[test]
fn gap_cylinders_are_outside_the_sparing_ranges() {
    // Scheme 8, ranges of 2 cylinders, 5 spares a range, 2 surfaces of 10
    // sectors. Zone 0 is cylinders 0..2 and a gap cylinder 3: DiskSim counts
    // 3 cylinders, one whole range (60 - 5 x (3 / 2) = 55 LBNs); were the gap
    // part of the zone it would be two ranges. Zone 1: cylinders 4..5, 8
    // sectors, one range (32 - 5 = 27).
    let mut d = one_zone(
        2,
        6,
        10,
        ZoneSpec {
            spare_sectors_per_range: 5,
            gap_cylinders: 1,
            ..Default::default()
        },
    );
    d.spare_range_cylinders = 2;
    d.zones.push(ZoneSpec {
        first_track: 8,
        sectors_per_track: 8,
        spare_sectors_per_range: 5,
        ..Default::default()
    });
    let g = d.geometry().unwrap();
    assert_eq!(g.capacity(), Sectors(55 + 27));
    // The range's 35 LBAs: tracks 0..2, sectors 0..4 of track 3.
    assert_eq!(g.home(Lba(34)), at(3, 4));
    assert_eq!(g.home_lba(at(3, 5)), None);
    // The last partial range (cylinder 2) holds LBAs 35..54, all its sectors.
    assert_eq!(g.home(Lba(35)), at(4, 0));
    assert_eq!(g.home(Lba(54)), at(5, 9));
    assert_eq!(g.phys_logical_track(Track(6)), None);
    assert_eq!(g.phys_logical_track(Track(7)), None);
    assert_eq!(g.home(Lba(55)), at(8, 0));
    assert_eq!(g.home(Lba(81)), at(11, 2));
    assert_eq!(g.home_lba(at(11, 3)), None);
}

#[test]
fn gap_cylinders_that_leave_no_data_are_errors_naming_the_key() {
    let mut d = one_zone(
        2,
        3,
        10,
        ZoneSpec {
            gap_cylinders: 3,
            ..Default::default()
        },
    );
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("gap_cylinders (3, 6 tracks)") && e.contains("leave none for data"),
        "{e}"
    );
    d.zones[0].gap_cylinders = 2;
    d.zones[0].spare_tracks = 2;
    let e = d.geometry().unwrap_err().to_string();
    assert!(
        e.contains("gap_cylinders (2, 4 tracks) and spare_tracks (2)"),
        "{e}"
    );
    d.zones[0].spare_tracks = 1;
    assert_eq!(d.geometry().unwrap().capacity(), Sectors(10));
    d.zones[0].gap_cylinders = 1 << 40;
    let e = d.check_ranges().unwrap_err().to_string();
    assert!(e.contains("zones.gap_cylinders"), "{e}");
    // Not mapped on a drive sized by capacity: warned.
    d.zones[0].gap_cylinders = 1;
    d.zones[0].spare_tracks = 0;
    d.tracks = None;
    d.capacity_gib = Some(1e-3);
    assert_eq!(d.unmapped_zone_keys(), vec!["gap_cylinders"]);
}

/// DiskSim's sparing scheme of a generated zone: 0 none, then 1, 2, 3, 8, 9.
#[derive(Clone, Copy, Debug)]
struct Case {
    surfaces: u64,
    range: u64,
    scheme: u64,
}

/// DiskSim's LBN count of a zone of `cyls` cylinders (`compute_blksinband`).
fn blksinband(c: Case, z: &ZoneSpec, tracks: u64, cyls: u64) -> u64 {
    let spt = z.sectors_per_track as u64;
    let all = tracks * spt - z.front_empty_sectors;
    all - match c.scheme {
        1 => z.spare_tracks * spt,
        2 => z.spare_sectors_per_cylinder * cyls,
        3 => z.spare_sectors_per_track as u64 * tracks,
        8 => z.spare_sectors_per_range * (cyls / c.range),
        9 => z.spare_sectors_per_zone,
        _ => 0,
    }
}

/// DiskSim's placement of position `x` (LBN offset in the zone plus the
/// front) as (track offset in the zone, sector): the `g1_ltop_*` functions.
fn ltop(c: Case, z: &ZoneSpec, x: u64) -> (u64, u64) {
    let spt = z.sectors_per_track as u64;
    match c.scheme {
        3 => {
            let n = spt - z.spare_sectors_per_track as u64;
            (x / n, x % n)
        }
        2 | 8 => {
            let (k, tracks) = if c.scheme == 2 {
                (z.spare_sectors_per_cylinder, c.surfaces)
            } else {
                (z.spare_sectors_per_range, c.surfaces * c.range)
            };
            let n = tracks * spt - k;
            let mut off = x % n;
            // g1_ltop_sectperrangespare: the range's slips at or before the running position.
            let first = (x / n) * tracks * spt;
            let mut slips = 0;
            for &s in &z.slipped_sectors {
                if s >= first && s - first <= off + slips {
                    slips += 1;
                }
            }
            off += slips;
            ((x / n) * tracks + off / spt, off % spt)
        }
        9 => {
            // g1_ltop_sectperzonespare: the zone's slips at or before the running position.
            let mut slips = 0;
            for &s in &z.slipped_sectors {
                if s <= x + slips {
                    slips += 1;
                }
            }
            ((x + slips) / spt, (x + slips) % spt)
        }
        1 => {
            // g1_ltop_trackspare: the track steps over each slip at or before it.
            let mut t = x / spt;
            for &s in &z.slipped_tracks {
                if s <= t {
                    t += 1;
                }
            }
            (t, x % spt)
        }
        _ => (x / spt, x % spt),
    }
}

/// Tracks of the last zone's gap cylinders.
fn z_gap(d: &DriveConfig, surfaces: u64) -> u64 {
    d.zones.last().map_or(0, |z| z.gap_cylinders * surfaces)
}

/// Tracks of zone `i` in DiskSim's zone, its gap cylinders left out (the
/// drive ends at track `end`).
fn data_tracks(d: &DriveConfig, i: usize, end: u64) -> u64 {
    let z = &d.zones[i];
    let next = d.zones.get(i + 1).map_or(end, |n| n.first_track);
    next - z.first_track - z.gap_cylinders * d.surfaces
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 400, ..Default::default() })]
    /// On random zone tables of each scheme, with and without gap cylinders
    /// between the zones, every LBA lands where DiskSim's ltop puts it, the
    /// map is a bijection from the LBAs onto the sectors that are not spare
    /// (nor gap), and the capacity is DiskSim's LBN count.
    #[test]
    fn the_map_is_disksims_and_a_bijection_onto_the_non_spare_sectors(
        surfaces in 1u64..4,
        range in 1u64..4,
        scheme in proptest::sample::select(vec![0u64, 1, 2, 3, 8, 9]),
        zones in proptest::collection::vec(
            ((1u64..7, 1u32..13, 0u64..1000, 0u64..4, 0u64..3), proptest::collection::vec(0u64..64, 0..4)),
            1..4,
        ),
        gaps in proptest::bool::ANY,
    ) {
        let c = Case { surfaces, range, scheme };
        let mut d = drive("cmr", 1, 1);
        d.surfaces = surfaces;
        d.spare_range_cylinders = range;
        let mut first = 0;
        for &((cyls, spt, k, front, gap), ref slips) in &zones {
            let tracks = cyls * surfaces;
            let blocks = tracks * spt as u64;
            let mut z = ZoneSpec { first_track: first, sectors_per_track: spt, ..Default::default() };
            // A spare count below what would leave the scheme's unit empty.
            match scheme {
                1 => z.spare_tracks = k % tracks,
                2 => z.spare_sectors_per_cylinder = k % (surfaces * spt as u64),
                3 => z.spare_sectors_per_track = (k % spt as u64) as u32,
                8 => z.spare_sectors_per_range = k % (surfaces * range * spt as u64),
                9 => z.spare_sectors_per_zone = k % blocks,
                _ => {}
            }
            // Fronts of 0..3 sectors per LBA of a unit: some end on a track start, some inside one.
            z.front_empty_sectors = front * (spt as u64 - z.spare_sectors_per_track as u64) / 2;
            // Half the cases put 0..2 gap cylinders after each zone.
            z.gap_cylinders = if gaps { gap } else { 0 };
            // Schemes 8 and 9 slip sectors of whole periods, up to the room
            // the period's last data track has spare (zones without a front).
            if (scheme == 8 || scheme == 9) && z.front_empty_sectors == 0 {
                let spt = spt as u64;
                let (period, k) = if scheme == 8 {
                    (surfaces * range, z.spare_sectors_per_range)
                } else {
                    (tracks, z.spare_sectors_per_zone)
                };
                let per_lbas = period * spt - k;
                let room = per_lbas.div_ceil(spt) * spt - per_lbas;
                let whole = tracks / period * period * spt;
                if whole > 0 {
                    let mut v: Vec<u64> = slips.iter().map(|s| s * 7919 % whole).collect();
                    v.sort_unstable();
                    v.dedup();
                    let mut kept: Vec<u64> = vec![];
                    for s in v {
                        let j = s / (period * spt);
                        if (kept.iter().filter(|&&t| t / (period * spt) == j).count() as u64) < room {
                            kept.push(s);
                        }
                    }
                    z.slipped_sectors = kept;
                }
            }
            // Scheme 1 slips up to one track per spare track, anywhere in the zone.
            if scheme == 1 {
                let mut v: Vec<u64> = slips.iter().map(|s| s % tracks).collect();
                v.sort_unstable();
                v.dedup();
                v.truncate(z.spare_tracks as usize);
                z.slipped_tracks = v;
            }
            d.zones.push(z);
            first += tracks + z_gap(&d, surfaces);
        }
        d.tracks = Some(first);
        let Ok(g) = d.geometry() else {
            // The spares leave every unit data, so only a front that takes
            // all of a zone's LBAs is refused.
            let full = d.zones.iter().enumerate().any(|(i, z)| {
                let tracks = data_tracks(&d, i, first);
                let bare = ZoneSpec { front_empty_sectors: 0, ..z.clone() };
                z.front_empty_sectors >= blksinband(c, &bare, tracks, tracks / surfaces)
            });
            proptest::prop_assert!(full, "{:?}", d.zones);
            return Ok(());
        };
        let (mut lba, mut cap) = (0u64, 0u64);
        for (i, z) in d.zones.iter().enumerate() {
            let tracks = data_tracks(&d, i, first);
            let cyls = tracks / surfaces;
            // The last partial range of scheme 8 holds fewer sectors than a
            // range's LBAs in DiskSim's drives; past that DiskSim maps LBNs
            // beyond the zone, and only the bijection is checked.
            let spt = z.sectors_per_track as u64;
            let consistent = scheme != 8
                || (cyls % range) * surfaces * spt < surfaces * range * spt - z.spare_sectors_per_range;
            // stlsim maps a front that ends on a track's first sector.
            let mapped = spares::front_mapped(z, tracks + z.gap_cylinders * surfaces, surfaces, range);
            // (Slipped sectors come only with no front: where a front ends is
            // DiskSim's placement without them.)
            let unslipped = ZoneSpec { slipped_sectors: vec![], ..z.clone() };
            let (t, s) = ltop(c, &unslipped, z.front_empty_sectors);
            if consistent {
                proptest::prop_assert_eq!(mapped, s == 0, "zone {} front at {:?}", i, (t, s));
            }
            let dead = if mapped { z.front_empty_sectors } else { 0 };
            let zz = ZoneSpec { front_empty_sectors: dead, ..z.clone() };
            let n = blksinband(c, &zz, tracks, cyls);
            // Commands find their pieces by `for_home_extents` (one zone
            // search, shared quotients): a command over the whole zone
            // (from its second LBA, so that pieces start inside tracks
            // too) puts each LBA where `home` does.
            let mut pieces = vec![];
            if n > 1 {
                g.for_home_extents(Lba(lba + 1), Sectors(n - 1), |at, k, first| {
                    pieces.extend((0..k).map(|i| (first.0 + i as u64, PhysAddr { track: at.track, sector: at.sector + i })));
                });
                proptest::prop_assert_eq!(pieces.len() as u64, n - 1);
                for &(l, at) in &pieces {
                    proptest::prop_assert_eq!(at, g.home(Lba(l)), "LBA {}", l);
                }
            }
            for x in 0..n {
                let h = g.home(Lba(lba + x));
                if consistent {
                    let (t, s) = ltop(c, z, x + dead);
                    proptest::prop_assert_eq!(h, at(z.first_track + t, s as u32), "LBA {} of zone {}", lba + x, i);
                }
            }
            lba += n;
            cap += n;
        }
        proptest::prop_assert_eq!(g.capacity(), Sectors(cap));
        // A bijection: distinct homes that map back, and as many non-spare
        // sectors as LBAs.
        let hs = homes(&g);
        let mut sorted: Vec<_> = hs.iter().map(|h| (h.track.0, h.sector)).collect();
        sorted.sort_unstable();
        sorted.dedup();
        proptest::prop_assert_eq!(sorted.len() as u64, cap);
        let mut mapped = 0;
        for t in 0..g.tracks() {
            for s in 0..g.sectors_in(Track(t)) {
                if let Some(l) = g.home_lba(at(t, s)) {
                    proptest::prop_assert_eq!(g.home(l), at(t, s));
                    mapped += 1;
                }
            }
        }
        proptest::prop_assert_eq!(mapped, cap);
        // Logical tracks cover the LBAs in order, and extents follow the homes.
        for lt in 0..g.logical_tracks() {
            let (s, e) = (g.logical_track_start(lt), g.logical_track_start(lt + 1));
            proptest::prop_assert!(s < e);
            proptest::prop_assert_eq!(g.logical_track_of(s), lt);
            // A logical track starts on its track's first sector not slipped.
            let phys = g.logical_track_phys(lt).0;
            let first = (0..).find(|&k| g.home_lba(at(phys, k)).is_some()).unwrap();
            proptest::prop_assert_eq!(g.home(s), at(phys, first));
            proptest::prop_assert_eq!(g.phys_logical_track(g.logical_track_phys(lt)), Some(lt));
        }
        let mut next = 0;
        g.for_home_extents(Lba(0), g.capacity(), |a, n, l| {
            assert_eq!(l, Lba(next));
            assert_eq!(a, hs[next as usize]);
            assert_eq!(g.home(Lba(next + n as u64 - 1)), at(a.track.0, a.sector + n - 1));
            next += n as u64;
        });
        proptest::prop_assert_eq!(next, cap);
    }
}
