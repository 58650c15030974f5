"""The drive's own cache and queue beneath host-side layers (issue 30,
item 3), as a user meets it: where each layer runs, the report's drive-cache
counters, the queue's settings from a drive file, a clear error for a bad
one, and the hybrid layers' `drive_flush` choice."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import stlsim

ROOT = Path(__file__).parent.parent
RSRCH = str(ROOT / "tests" / "data" / "rsrch_1.csv")
HOST_SIDE = {"hm-fluid", "hm-fluid-loop", "hm-skylight", "amphisbaena", "hwsr", "sblock", "buffered-cmr"}


def test_every_layer_says_where_it_runs() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "layers", "--json"], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    listed = {e["name"]: e["runs_in"] for e in json.loads(p.stdout)}
    assert {n for n, where in listed.items() if where == "host"} == HOST_SIDE
    assert set(listed.values()) == {"host", "drive"}


def _small(layer: str, **kw: object) -> stlsim.Result:
    return stlsim.run(RSRCH, drive="hwsr-paper", layer=layer, params={"mem_mib": 2.0}, verify=True, **kw)


@pytest.mark.parametrize("layer", ["hwsr", "sblock", "buffered-cmr"])
def test_host_side_layers_report_what_the_drive_cache_did(layer: str) -> None:
    """hwsr-paper has the RE4's cache on beneath its host-side layers: the
    report counts absorbed writes, flushes and destages; with the cache off
    there is no such section and the summary's columns are NaN."""
    on = _small(layer)
    dc = on.report["device"]["drive_cache"]
    assert dc["absorbed_ops"] > 0 and dc["absorbed_sectors"] > 0
    assert dc["flushes"] > 0
    assert dc["destaged_ops"] == dc["absorbed_ops"]  # the run ends with the media holding everything
    assert on.summary["drive_cache_absorbed_sectors"] == dc["absorbed_sectors"]
    off = _small(layer, write_cache=False)
    assert "drive_cache" not in off.report["device"]
    assert math.isnan(off.summary["drive_cache_flushes"])
    # Same data written either way: the cache changes when, not what.
    assert on.report["device"]["media_write_sectors"] == off.report["device"]["media_write_sectors"]


def test_the_queue_comes_from_the_drive_file_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    runs = {}
    for reorder in ("fifo", "c-look", "sptf"):
        r = stlsim.run(
            RSRCH,
            drive={"preset": "hwsr-paper", "queue": {"depth": 32, "reorder": reorder}},
            layer="sblock",
            params={"mem_mib": 2.0, "drive_flush": "never"},
            verify=True,
        )
        runs[reorder] = r.report["device"]["drive_cache"]["reordered"]
    assert runs["fifo"] == 0 and runs["sptf"] > 0 and runs["c-look"] > 0, runs
    bad = tmp_path / "bad.toml"
    bad.write_text('preset = "hwsr-paper"\n[queue]\nreorder = "elevator"\n')
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "run", "--drive", str(bad), "--layer", "sblock", "--trace", RSRCH],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode != 0
    err = p.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "elevator" in err and "sptf" in err, err


def test_a_hybrid_layer_that_never_flushes_is_faster_and_unsafe() -> None:
    """`drive_flush=never` sends no FLUSH CACHE: the cache absorbs more and
    the disk reorders more; a power loss then loses acknowledged data."""
    safe = _small("hwsr")
    never = stlsim.run(RSRCH, drive="hwsr-paper", layer="hwsr", params={"mem_mib": 2.0, "drive_flush": "never"})
    assert never.report["device"]["drive_cache"]["flushes"] == 0
    assert never.summary["write_mean_ms"] < safe.summary["write_mean_ms"]
    with pytest.raises(stlsim.StlsimError, match="data loss"):
        stlsim.run(
            RSRCH,
            drive="hwsr-paper",
            layer="buffered-cmr",
            params={"mem_mib": 2.0, "drive_flush": "never"},
            verify=True,
            crash_at_ops=list(range(300, 20_000, 97)),
        )
