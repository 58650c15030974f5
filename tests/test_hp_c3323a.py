"""The `hp-c3323a-1surface` preset against DiskSim's description of the real HP C3323A.

The DiskSim files (tests/data/disksim/, copied unchanged from DiskSim 4.0's
validation suite) are parsed here, independently of the preset, and every
value the preset takes from them is checked; then the preset is run, and the
times the simulator charges are checked against figures computed by hand from
the same files.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

import stlsim
from stlsim.config import check_drive, load_drive

DISKSIM = Path(__file__).parent / "data" / "disksim"


# --------------------------------------------------------------------------
# A small reader of the DiskSim parameter files
# --------------------------------------------------------------------------


def _params(text: str) -> dict[str, str]:
    """Every `Name = value` line of a DiskSim block (comments dropped; a later name wins)."""
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        m = re.match(r"\s*([A-Za-z][^=]*?)\s*=\s*([^,{\[]+?)\s*,?\s*$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _model(stem: str = "hp_c3323a") -> dict:
    text = (DISKSIM / f"{stem}.model").read_text()
    head, _, rest = text.partition("Layout Model")
    zones_text, _, mech = rest.partition("Mechanical Model")
    zones = []
    for block in zones_text.split("dm_layout_g1_zone")[1:]:
        p = _params(block)
        zones.append(
            {
                "first": int(p["First cylinder number"]),
                "last": int(p["Last cylinder number"]),
                "blocks": int(p["Blocks per track"]),
                "spares": int(p["Number of spares"]),
                "empty_front": int(p["Empty space at zone front"]),
            }
        )
    top = _params(head)
    return {
        "surfaces": int(top["Number of data surfaces"]),
        "cylinders": int(top["Number of cylinders"]),
        "block_count": int(top["Block count"]),
        "sparing": int(_params(zones_text)["Sparing scheme used"]),
        "zones": zones,
        "mech": _params(mech),
    }


def _seek(name: str = "hp_c3323a.seek") -> list[tuple[int, float]]:
    lines = (DISKSIM / name).read_text().splitlines()
    m = re.fullmatch(r"Seek distances measured:\s*(\d+)", lines[0].strip())
    assert m, lines[0]
    pts = [(int(d), float(t)) for d, t in (ln.split(",") for ln in lines[1:] if ln.strip())]
    assert len(pts) == int(m.group(1))
    return pts


def _bus1_block_ms() -> tuple[float, float]:
    text = (DISKSIM / "hp_c3323a.parv").read_text()
    block = re.search(r"disksim_bus BUS1 \{(.*?)\}", text, flags=re.S)
    assert block
    p = _params(block.group(1))
    return float(p["Read block transfer time"]), float(p["Write block transfer time"])


def _interp(pts: list[tuple[int, float]], d: int, extrapolate: bool) -> float:
    """Seek time over d cylinders from the measured points: linear between
    points; past the last one DiskSim extends the last segment
    (`dm_mech_g1_seek_extracted`), stlsim stays flat."""
    if d == 0:
        return 0.0
    for (d0, t0), (d1, t1) in zip(pts, pts[1:]):
        if d0 <= d <= d1:
            return t0 + (t1 - t0) * (d - d0) / (d1 - d0)
    (d0, t0), (d1, t1) = pts[-2], pts[-1]
    return t0 + (t1 - t0) * (d - d0) / (d1 - d0) if extrapolate else t1


MODEL = _model()
SEEK = _seek()


def _preset() -> dict:
    return load_drive("hp-c3323a-1surface")


# --------------------------------------------------------------------------
# The preset holds DiskSim's values
# --------------------------------------------------------------------------


def test_the_copied_files_are_the_ones_described() -> None:
    """The facts the preset's comments rely on."""
    assert (MODEL["surfaces"], MODEL["cylinders"], MODEL["block_count"]) == (7, 2982, 1_743_672)
    assert MODEL["mech"]["Seek type"] == "extracted"
    assert MODEL["mech"]["Full seek curve"] == "hp_c3323a.seek"
    assert float(MODEL["mech"]["Head switch time"]) == 0.65
    assert float(MODEL["mech"]["Percent error in rpms"]) == 0.0
    # Track sparing: the exported blocks are 7 surfaces less the spare tracks
    # and zone 0's empty front: 2,056,008, the count the header comment names.
    assert MODEL["sparing"] == 1
    exported = sum(((z["last"] - z["first"] + 1) * 7 - z["spares"]) * z["blocks"] - z["empty_front"] for z in MODEL["zones"])
    assert exported == 2_056_008
    # hp_c3323a.parv sources the _validate chain, which differs only in its RPM.
    assert "source hp_c3323a_validate.diskspecs" in (DISKSIM / "hp_c3323a.parv").read_text()
    assert "hp_c3323a_validate.model" in (DISKSIM / "hp_c3323a_validate.diskspecs").read_text()
    validate = _model("hp_c3323a_validate")
    assert validate["zones"] == MODEL["zones"]
    assert _seek(validate["mech"]["Full seek curve"]) == SEEK
    assert float(validate["mech"]["Rotation speed (in rpms)"]) == 5396.0
    assert "fast write level = 0" in (DISKSIM / "hp_c3323a.diskspecs").read_text().lower()


def test_rpm_is_the_models() -> None:
    d = _preset()
    assert d["rpm"] == float(MODEL["mech"]["Rotation speed (in rpms)"]) == 5400.0
    assert check_drive(d)["rotation_ms"] == pytest.approx(60_000 / 5400, abs=1e-6)


def test_zones_are_the_models_zone_table_on_one_surface() -> None:
    d = _preset()
    zones = MODEL["zones"]
    assert len(zones) == 8
    # The zones cover the cylinders without gaps, so first cylinders suffice.
    assert zones[0]["first"] == 0 and zones[-1]["last"] == MODEL["cylinders"] - 1
    assert all(a["last"] + 1 == b["first"] for a, b in zip(zones, zones[1:]))
    assert [(z["first_track"], z["sectors_per_track"]) for z in d["zones"]] == [(z["first"], z["blocks"]) for z in zones]
    assert d["sector_bytes"] == 512
    # One surface: one track per cylinder.
    assert d["tracks"] == MODEL["cylinders"]
    fig = check_drive(d)
    assert fig["tracks"] == 2982
    one_surface = sum((z["last"] - z["first"] + 1) * z["blocks"] for z in zones)
    assert fig["capacity_bytes"] == one_surface * 512 == 154_302_464
    assert fig["max_sectors_per_track"] == 120


def test_seek_table_is_every_measured_point() -> None:
    d = _preset()
    assert d["seek"]["model"] == "table"
    assert [(int(x), float(t)) for x, t in d["seek"]["table"]] == SEEK
    assert len(SEEK) == 67
    fig = check_drive(d)
    assert fig["single_track_seek_ms"] == pytest.approx(SEEK[0][1], abs=1e-6)
    assert fig["full_stroke_seek_ms"] == pytest.approx(SEEK[-1][1], abs=1e-6)
    # stlsim differs from DiskSim's interpolation only past the last measured
    # distance (2976), by what the preset's comment says.
    gap = max(abs(_interp(SEEK, x, True) - _interp(SEEK, x, False)) for x in range(1, MODEL["cylinders"]))
    assert 0.019 < gap < 0.021


def test_link_rate_is_bus1_and_there_is_no_write_cache() -> None:
    d = _preset()
    read_ms, write_ms = _bus1_block_ms()
    assert read_ms == write_ms == 0.1455
    # stlsim: a sector crosses the link in sector_bytes * 1000 / interface_mb_s ns.
    assert 512 * 1000 / d["interface_mb_s"] == pytest.approx(read_ms * 1e6, abs=1e-6)
    assert d["write_cache_mib"] == 0
    assert d["layout"]["kind"] == "cmr"
    assert d["rotation"] == "angular"


# --------------------------------------------------------------------------
# The CLI knows it and runs it
# --------------------------------------------------------------------------


def test_cli_lists_the_preset(cli) -> None:
    p = cli("drives")
    assert p.returncode == 0, p.stderr
    assert "hp-c3323a-1surface" in p.stdout
    rows = {r["name"]: r for r in json.loads(cli("drives", "--json").stdout)}
    assert rows["hp-c3323a-1surface"]["derived"]["tracks"] == 2982
    assert rows["hp-c3323a-1surface"]["derived"]["capacity_bytes"] == 154_302_464


def test_cli_runs_an_msr_trace_folded_into_one_surface(cli, tmp_path: Path, data: Path) -> None:
    """rsrch_1 reaches 191 GB: it must be folded into the 154 MB surface."""
    args = ("run", "--drive", "hp-c3323a-1surface", "--layer", "cmr", "--trace", str(data / "rsrch_1.csv"))
    refused = cli(*args, cwd=tmp_path)
    assert refused.returncode == 2
    assert "beyond the drive's capacity of 154302464 bytes" in refused.stderr
    p = cli(*args, "--fold", "--verify", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["drive"]["name"] == "hp-c3323a-1surface"
    assert r["drive"]["capacity_bytes"] == 154_302_464
    assert r["drive"]["rotation_model"] == "angular"
    assert r["host"]["requests"] == 13_780
    assert any("folded" in w for w in r["warnings"])
    assert r["verification"]["mismatches"] == 0
    assert r["waf"] == 1.0
    # At least a seek and some rotation per request that needs the arm: the
    # mean latency cannot be below the single-cylinder seek.
    assert r["latency"]["all"]["mean_ms"] > SEEK[0][1]


# --------------------------------------------------------------------------
# Service times, computed by hand from the DiskSim files
# --------------------------------------------------------------------------

ROT_NS = round(60e9 / 5400)  # stlsim rounds a rotation to whole ns


def _zone_of(track: int) -> dict:
    return next(z for z in MODEL["zones"] if z["first"] <= track <= z["last"])


def _first_lba(track: int) -> int:
    """First LBA of a track of the one-surface layout (LBAs fill tracks in order)."""
    lba = 0
    for z in MODEL["zones"]:
        if track > z["last"]:
            lba += (z["last"] - z["first"] + 1) * z["blocks"]
        else:
            return lba + (track - z["first"]) * z["blocks"]
    raise AssertionError(track)


def _spc_reads(path: Path, targets: list[tuple[int, int]]) -> None:
    """An SPC trace of one-sector reads of (track, sector)."""
    lines = [f"0,{_first_lba(t) + s},512,r,{i * 0.001:.3f}" for i, (t, s) in enumerate(targets)]
    path.write_text("\n".join(lines) + "\n")


def _random_targets(n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        t = rng.randrange(MODEL["cylinders"])
        out.append((t, rng.randrange(_zone_of(t)["blocks"])))
    return out


def _device(trace: Path, **drive: object) -> dict:
    r = stlsim.run(trace=trace, format="spc", drive={"preset": "hp-c3323a-1surface", **drive}, mode="flat-out")
    assert r.report["host"]["requests"] == r.report["device"]["read_ops"]  # one media access each
    return r.report["device"]


def test_single_sector_reads_cost_seek_half_rotation_and_transfer(tmp_path: Path) -> None:
    """With `average` rotation every access is seek(d) + half a rotation + one
    sector's passage, so the device's busy time is known to the nanosecond."""
    targets = [(0, 5), (1, 0), (994, 7), (994, 9), (2981, 71), (0, 119), (1500, 3), (1507, 3)]
    targets += _random_targets(300, seed=3323)
    trace = tmp_path / "reads.spc"
    _spc_reads(trace, targets)
    dev = _device(trace, rotation="average")
    want = 0
    head = 0  # the head starts on track 0
    for t, _ in targets:
        seek_ms = _interp(SEEK, abs(t - head), extrapolate=False)
        want += round(seek_ms * 1e6) + ROT_NS // 2 + ROT_NS // _zone_of(t)["blocks"]
        head = t
    assert dev["busy_s"] * 1e9 == pytest.approx(want, abs=len(targets))  # 1 ns of rounding a request


def test_random_accesses_match_the_measured_seek_curve(tmp_path: Path) -> None:
    """The preset as shipped (`angular` rotation) on reads of uniformly random
    cylinders: the mean service time is DiskSim's mean seek between two random
    cylinders (from the .seek table, weighted by how often each distance
    occurs) plus half a rotation plus a sector's passage, within 2 % (it is
    0.14 % off; a square-root curve through the same end points is 4 % off,
    the table's distances read as 7 x cylinders 32 %)."""
    n_cyl = MODEL["cylinders"]
    mean_seek = sum(2 * (n_cyl - d) / n_cyl**2 * _interp(SEEK, d, extrapolate=True) for d in range(1, n_cyl))
    assert 9.4 < mean_seek < 9.6  # 9.52 ms; near the time for a third of the stroke (1000 cylinders: 9.95 ms)
    targets = _random_targets(6000, seed=5400)
    mean_xfer_ms = sum(ROT_NS / _zone_of(t)["blocks"] for t, _ in targets) / len(targets) / 1e6
    trace = tmp_path / "random.spc"
    _spc_reads(trace, targets)
    dev = _device(trace)
    mean_ms = dev["busy_s"] * 1e3 / len(targets)
    want = mean_seek + ROT_NS / 2e6 + mean_xfer_ms
    assert mean_ms == pytest.approx(want, rel=0.02)


# --------------------------------------------------------------------------
# The whole drive: seven surfaces, head switch, write settle and skew
# --------------------------------------------------------------------------


def _skews() -> list[tuple[int, int]]:
    """(track skew, cylinder skew) of each zone, in sectors, from the model."""
    text = (DISKSIM / "hp_c3323a.model").read_text()
    zones_text = text.partition("Layout Model")[2].partition("Mechanical Model")[0]
    out = []
    for block in zones_text.split("dm_layout_g1_zone")[1:]:
        p = _params(block)
        out.append((int(p["Skew for track switch"]), int(p["Skew for cylinder switch"])))
    return out


def _whole_drive(skew: bool = True) -> dict:
    """The HP C3323A with all 7 surfaces (tracks cylinder-major), its head
    switch, write settle and skews; no link time, so that a run's device
    busy time is the mechanics' alone. The spares and zone 0's empty front
    are left out (stlsim does not map them yet)."""
    s = MODEL["surfaces"]
    zones = [
        {
            "first_track": z["first"] * s,
            "sectors_per_track": z["blocks"],
            "track_skew_sectors": ts if skew else 0,
            "cylinder_skew_sectors": cs if skew else 0,
        }
        for z, (ts, cs) in zip(MODEL["zones"], _skews())
    ]
    return {
        "preset": "hp-c3323a-1surface",
        "surfaces": s,
        "tracks": MODEL["cylinders"] * s,
        "zones": zones,
        "head_switch_ms": float(MODEL["mech"]["Head switch time"]),
        "write_settle_ms": float(MODEL["mech"]["Add. write settling delay"]),
        "interface_mb_s": 0,
    }


def test_the_whole_drive_loads() -> None:
    d = check_drive(load_drive(_whole_drive()))
    assert d["tracks"] == 2982 * 7
    assert d["full_stroke_seek_ms"] == pytest.approx(SEEK[-1][1])  # 2981 cylinders: past the last point, flat


@pytest.mark.parametrize(
    ("lba", "skew", "want_ns"),
    [
        # LBAs 100..140: sectors 100..120 of track 0 then 0..20 of track 1
        # (cylinder 0, surfaces 0 and 1; zone 0: 120 sectors, track skew 17).
        # One rotation is round(60e9 / 5400) = 11,111,111 ns, a sector 1/120
        # of it. The head is on track 0 at t = 0: it waits for sector 100,
        # 11,111,111 x 100/120 = 9,259,259, reads 20 sectors, 1,851,851, and
        # ends at 11,111,110. The head switch, 650,000, brings it to angle
        # 649,999; track 1's sector 0 is at 17/120 of a turn, 1,574,074:
        # a 924,075 wait, then 1,851,851 more: 14,537,036.
        (100, True, 14_537_036),
        # Without skew track 1's sector 0 has just passed: 10,461,112 wait.
        (100, False, 24_074_073),
        # LBAs 820..860: sectors 100..120 of track 6 (cylinder 0, surface 6:
        # 6 track skews, 102 sectors) then 0..20 of track 7 (cylinder 1,
        # surface 0: 6 track skews and a cylinder skew of 34: 136, i.e. 16).
        # Head switch 0 -> 6: 650,000; sector 100 of track 6 is at
        # (102 + 100) mod 120 = 82 sectors, 7,592,592: wait 6,942,592; read
        # 1,851,851; end 9,444,443. The one-cylinder seek, 1,178,043, beats the
        # head switch; track 7's sector 0 is at 16 sectors, 1,481,481: wait
        # 1,970,106 (34 sectors from the end of track 6, less the seek);
        # read 1,851,851: 14,444,443.
        (820, True, 14_444_443),
    ],
)
def test_a_read_across_a_track_boundary_lands_per_the_skew(tmp_path: Path, lba: int, skew: bool, want_ns: int) -> None:
    trace = tmp_path / "cross.spc"
    trace.write_text(f"0,{lba},{40 * 512},r,0.000\n")
    r = stlsim.run(trace=trace, format="spc", drive=_whole_drive(skew), mode="flat-out")
    dev = r.report["device"]
    assert dev["read_ops"] == 2  # one piece a track
    assert dev["busy_s"] * 1e9 == pytest.approx(want_ns, abs=2)


@pytest.mark.parametrize(
    ("sector", "settle_ms", "read_ns", "write_ns"),
    [
        # One sector of track 7 (cylinder 1, surface 0; skewed by 16 sectors)
        # from the head on track 0 at t = 0: the one-cylinder seek is
        # 1,178,043 ns (it beats the 650,000 head switch), a sector passes in
        # 92,592. Sector 117 is at (16 + 117) mod 120 = 13 sectors, 1,203,703:
        # a read waits 25,660 and ends at 1,296,295; a write settles 70,000
        # more, arrives at 1,248,043 just after the sector passed and waits
        # 11,066,771 for it to come round: 12,407,406.
        (117, 0.07, 1_296_295, 12_407_406),
        # hp_c2490a's settle, -0.642 ms, on the same drive: sector 110 is at
        # 6 sectors, 555,555. A read arrives at 1,178,043, after it passed:
        # 10,488,623 to wait, 11,759,258 in all. A write repositions in
        # 1,178,043 - 642,000 = 536,043, waits 19,512: 648,147.
        (110, -0.642, 11_759_258, 648_147),
    ],
)
def test_a_write_after_a_move_adds_the_settle(
    tmp_path: Path, sector: int, settle_ms: float, read_ns: int, write_ns: int
) -> None:
    busy = {}
    for op in ("r", "w"):
        trace = tmp_path / f"{op}.spc"
        trace.write_text(f"0,{7 * 120 + sector},512,{op},0.000\n")
        drive = {**_whole_drive(), "write_settle_ms": settle_ms}
        r = stlsim.run(trace=trace, format="spc", drive=drive, mode="flat-out", write_cache=False)
        busy[op] = r.report["device"]["busy_s"] * 1e9
    assert busy["r"] == pytest.approx(read_ns, abs=2)
    assert busy["w"] == pytest.approx(write_ns, abs=2)


def test_the_whole_drive_with_its_spares_exports_disksims_lbns(tmp_path: Path) -> None:
    """With each zone's spare tracks (sparing scheme 1) and zone 0's empty
    front (1320 sectors: 11 tracks) left out of the LBA space, the drive
    exports what DiskSim's layout does: 2,056,008 blocks (see
    test_the_copied_files_are_the_ones_described), and the first LBA lies on
    track 11 (cylinder 1, surface 4), so reading it from track 0 costs the
    one-cylinder seek and the wait for its sector, not a head switch."""
    d = _whole_drive()
    for z, m in zip(d["zones"], MODEL["zones"]):
        z["spare_tracks"] = m["spares"]
        z["front_empty_sectors"] = m["empty_front"]
    assert check_drive(load_drive(d))["capacity_bytes"] == 2_056_008 * 512
    trace = tmp_path / "first.spc"
    trace.write_text("0,0,512,r,0.000\n")
    r = stlsim.run(trace=trace, format="spc", drive=d, mode="flat-out")
    assert r.report["warnings"] == []
    # Track 11 is surface 4 of cylinder 1: 4 + 6 x 1 = 10 track switches and
    # 1 cylinder switch since the zone start (g1_map_pbn_skew), 10 x 17 + 34
    # = 204 sectors, i.e. 84: 11,111,111 x 84/120 = 7,777,777 ns. The seek
    # (1,178,043) lands before it: the access ends one sector later.
    assert r.report["device"]["busy_s"] * 1e9 == pytest.approx(7_777_777 + 92_592, abs=2)
