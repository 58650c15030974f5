"""Paper 001 (HWSR): the hwsr-paper drive with its memory buffer and SSD,
the three hybrid layers verified on every real trace, HWSR's one segment per
eviction, the per-device report, the evaluation script, and the user's errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import stlsim
from stlsim.config import check_drive, load_drive

ROOT = Path(__file__).parent.parent
LAYERS = ["hwsr", "sblock", "buffered-cmr"]
TRACES = ["rsrch_1.csv", "wdev_1.csv", "wdev_3.csv", "cloudPhysicsIO.vscsi"]


def test_hwsr_paper_is_the_system_of_table_2() -> None:
    d = load_drive("hwsr-paper")
    x = check_drive(d)
    assert d["rpm"] == 7200.0 and d["sector_bytes"] == 512
    assert d["track_bytes"] == 8 * 1024 * 512  # tracks of 8 x 1,024 sectors
    assert d["layout"] == {**d["layout"], "kind": "wave", "region_tracks": 20, "kappa_tracks": 8}
    assert 821e9 <= x["capacity_bytes"] < 822e9  # 821 GB used
    assert abs(d["memory"]["mib"] * 2**20 - 100e6) < 1e5 and abs(d["ssd"]["mib"] * 2**20 - 200e6) < 1e5
    # Timing from the named presets (values and sources in side_device.rs; unit-tested there).
    assert (d["memory"]["preset"], d["ssd"]["preset"]) == ("ddr3-1333", "intel-x25m-80gb")
    assert d["memory"]["battery_backed"] is True


@pytest.mark.parametrize("trace", TRACES)
def test_hwsr_rewrites_at_most_one_segment_per_eviction_on_every_real_trace(data: Path, trace: str) -> None:
    # A small buffer, so that every trace evicts; verification on.
    r = stlsim.run(trace=str(data / trace), drive="hwsr-paper", layer="hwsr", params={"mem_mib": 1}, verify=True)
    c = r.report["layer_counters"]
    assert c["evictions"] > 0
    assert c["flushes_over_one_segment"] == 0
    # Each eviction that wrote anything rewrote exactly one segment, and at most S = 20 blocks of it.
    assert c["segments_rewritten"] == c["evictions"] - c["evictions_clean"]
    assert c["blocks_rewritten"] <= 20 * c["segments_rewritten"]
    assert r.report["verification"]["mismatches"] == 0


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("memory", ["battery-backed", "volatile"])
def test_every_hybrid_layer_survives_crashes_verified(data: Path, layer: str, memory: str) -> None:
    r = stlsim.run(
        trace=str(data / "rsrch_1.csv"),
        drive="hwsr-paper",
        layer=layer,
        params={"mem_mib": 1, "memory": memory},
        verify=True,
        crash_at_ops=list(range(50, 20000, 97)),
    )
    rep = r.report
    assert rep["crashes"] >= 20
    assert rep["verification"]["mismatches"] == 0


def test_the_report_breaks_work_down_by_device(data: Path) -> None:
    r = stlsim.run(trace=str(data / "rsrch_1.csv"), drive="hwsr-paper", layer="hwsr")
    rows = {d["device"]: d for d in r.report["device"]["by_device"]}
    assert set(rows) == {"disk", "memory", "ssd"}
    assert rows["memory"]["write_ops"] > 0 and rows["memory"]["busy_s"] > 0
    assert rows["disk"]["write_bytes"] == r.report["device"]["media_write_sectors"] * 512
    # The CLI prints the same table.
    out = subprocess.run(
        [sys.executable, "-m", "stlsim", "run", "--trace", str(data / "rsrch_1.csv"), "--drive", "hwsr-paper", "--layer", "buffered-cmr"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Work by device" in out and "memory" in out


def test_series_carry_segments_per_interval(data: Path) -> None:
    r = stlsim.run(trace=str(data / "cloudPhysicsIO.vscsi"), drive="hwsr-paper", layer="sblock", series_every=10_000, repeat=3)
    s = r.series()
    assert "segments_immigrated" in s.columns
    assert s["segments_immigrated"].is_monotonic_increasing
    assert s["segments_immigrated"].iloc[-1] == r.report["layer_counters"]["segments_immigrated"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--layer", "hwsr", "--drive", "cmr"], "needs a drive with the 'wave' layout"),
        (["--layer", "hwsr", "--drive", "hwsr-paper", "--prefill", "0.5"], "empty drive"),
        (["--layer", "sblock", "--drive", "hwsr-paper", "--param", "beta=0.01"], "cannot hold"),
        (["--layer", "buffered-cmr", "--drive", "cmr"], "no [memory] table"),
        (["--layer", "hwsr", "--drive", "hwsr-paper", "--param", "block_sectors=48"], "divide"),
    ],
)
def test_bad_configurations_are_one_line_errors(data: Path, args: list[str], message: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "run", "--trace", str(data / "rsrch_1.csv"), *args], capture_output=True, text=True
    )
    assert p.returncode != 0
    assert message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_the_evaluation_script_saves_its_plots(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "hwsr_evaluation.py"), "region-size", "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    assert (tmp_path / "region_size_sweep.png").stat().st_size > 10_000
