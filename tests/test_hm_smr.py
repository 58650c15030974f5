"""Host-managed SMR (paper 004): the exos-x18z zoned drive, the four host
buffer layers on it, the paper's metrics in reports and `compare`, the chunk
and lambda sweeps, the fio log, and the user's errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import stlsim
from stlsim.config import check_drive, load_drive

LAYERS = ["amphisbaena", "hm-fluid", "hm-fluid-loop", "hm-skylight"]
ROOT = Path(__file__).parent.parent


def test_exos_x18z_is_the_drive_of_paper_004_table_2() -> None:
    d = load_drive("exos-x18z")
    x = check_drive(d)
    assert d["rpm"] == 7200.0 and d["sector_bytes"] == 4096
    zone_bytes = d["layout"]["zone_tracks"] * d["track_bytes"]
    assert zone_bytes == 256 * 2**20  # 256 MiB zones
    assert d["layout"]["conventional_zones"] == 720  # zones #0-#719
    assert x["capacity_bytes"] == 67_056 * zone_bytes  # zones #0-#67,055: 18.0 TB
    assert 17.9e12 < x["capacity_bytes"] < 18.1e12
    assert d["write_cache_mib"] == 0.0  # write cache off (section 6.1)
    small = load_drive("exos-small")
    assert small["layout"]["kind"] == "zoned" and small["layout"]["conventional_zones"] >= 1


@pytest.mark.parametrize("layer", LAYERS)
def test_every_buffer_layer_runs_verified_on_the_zoned_drive(data: Path, layer: str) -> None:
    r = stlsim.run(trace=str(data / "wdev_3.csv"), drive="exos-x18z", layer=layer, verify=True)
    c = r.report["layer_counters"]
    for k in ("write_hit_rate", "writebacks_rmw", "writebacks_rmw_free", "padding_sectors", "avg_victim_zone_blocks"):
        assert k in c
    # 1 % of the trace's maximum access range.
    assert c["buffer_bytes"] > 0
    assert r.report["verification"]["scan_blocks_checked"] > 0
    assert r.report["device"]["zone_ops"]["resets"] >= 0


def test_compare_shows_the_papers_metrics_and_writes_back(cli, data: Path, tmp_path: Path) -> None:
    p = cli(
        "compare", "--drive", "exos-small", "--fold", "--trace", str(data / "rsrch_1.csv"),
        "--layer", ",".join(LAYERS), "--param", "buffer_mib=4", "--out", str(tmp_path / "cmp"),
    )
    assert p.returncode == 0, p.stderr
    for col in ("write hits", "RMW", "RMW-free"):
        assert col in p.stdout
    rows = {r["layer"]: r for r in __import__("pandas").read_csv(tmp_path / "cmp" / "summary.csv").to_dict("records")}
    assert set(rows) == set(LAYERS)
    # A 4 MiB buffer against 165 MB of writes: every layer writes back.
    assert all(rows[l]["writebacks_rmw"] + rows[l]["writebacks_rmw_free"] > 0 for l in LAYERS)
    assert (tmp_path / "cmp" / "latency_cdf.png").exists()


def test_the_fio_log_writes_every_block_once_so_nothing_hits(cli) -> None:
    p = cli("run", "--drive", "exos-x18z", "--layer", "amphisbaena", "--trace", str(ROOT / "tests/data/iolog_8G.log.gz"), "--json")
    assert p.returncode == 0, p.stderr
    import json

    c = json.loads(p.stdout)["layer_counters"]
    assert c["blocks_written"] == 17_395 and c["write_hits"] == 0


@pytest.mark.parametrize("kind,values", [("chunk", 5), ("lambda", 3)])
def test_each_sweep_is_one_command_with_a_plot(tmp_path: Path, kind: str, values: int) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "amphisbaena_evaluation.py"), kind, "--trace", "wdev_3.csv", "--out", str(tmp_path)],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout
    rows = [l for l in out.splitlines() if l.startswith("| wdev_3.csv |")]
    assert len(rows) == values
    assert (tmp_path / f"{kind}_sweep.png").stat().st_size > 10_000


def test_user_errors_are_one_line(cli, one_line_error, data: Path, tmp_path: Path) -> None:
    e = one_line_error(cli("run", "--drive", "imr-paper", "--layer", "amphisbaena", "--trace", str(data / "wdev_3.csv")))
    assert "'zoned' layout" in e
    e = one_line_error(cli("run", "--drive", "exos-x18z", "--layer", "amphisbaena", "--param", "lambda=2", "--trace", str(data / "wdev_3.csv")))
    assert "lambda" in e
    e = one_line_error(cli("run", "--drive", "exos-small", "--layer", "hm-fluid", "--param", "buffer_mib=100", "--trace", str(data / "wdev_3.csv"), "--fold"))
    assert "does not fit" in e
    bad = tmp_path / "v4.log"
    bad.write_text("fio version 4 iolog\n0 /dev/sda write 0 4096\n")
    e = one_line_error(cli("run", "--drive", "exos-x18z", "--layer", "hm-fluid", "--trace", str(bad)))
    assert "v4.log:1" in e and "versions 2 and 3" in e
