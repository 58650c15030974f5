"""IMR with the drive's write cache on (issue 33): WAF per sector destaged
and per host sector written, moves per host sector, and the warnings that
say when the cache absorbed the writes the moving layers counted, or when a
moving layer writes more than naive read-modify-write."""

from __future__ import annotations

from pathlib import Path

import pytest

import stlsim
from stlsim.result import Comparison

DATA = Path(__file__).parent / "data"
ABSORBED = "write cache absorbed"


def test_a_cache_absorbed_replay_reports_both_wafs_and_warns() -> None:
    # wdev_3's 133 hot blocks replayed 300 times back to back, flat out: the
    # imr-paper's 100 MiB cache coalesces most rewrites before they reach the layer.
    r = stlsim.run(str(DATA / "wdev_3.csv"), drive="imr-paper", layer="imr-flip", repeat=300, mode="flat-out")
    rep = r.report
    host, stored = rep["host"]["write_sectors"], rep["host"]["layer_write_sectors"]
    assert stored < 0.5 * host
    media = rep["device"]["media_write_sectors"]
    assert rep["waf"] == pytest.approx(media / stored)
    assert rep["waf_per_host_sector"] == pytest.approx(media / host)
    assert rep["waf_per_host_sector"] < rep["waf"]
    assert 0 < rep["moves_per_host_sector"] < 1
    w = [x for x in rep["warnings"] if ABSORBED in x]
    assert len(w) == 1, rep["warnings"]
    assert "imr-flip decided its moves on host writes as they arrived" in w[0]
    assert r.summary["waf_per_host_sector"] == rep["waf_per_host_sector"]


@pytest.mark.parametrize("layer", ["cmr", "imr-rmw", "imr-flip", "imr-cache", "imr-dtm"])
def test_the_bundled_evaluation_raises_no_cache_warning(layer: str) -> None:
    # docs/imr.md's runs: the bundled CloudPhysics sample with the drive's defaults.
    r = stlsim.run(layer=layer, drive="imr-paper")
    assert not [x for x in r.report["warnings"] if ABSORBED in x], r.report["warnings"]
    # (The cache coalesces about 5 % of the sample's write sectors.)
    assert r.report["waf_per_host_sector"] == pytest.approx(r.report["waf"], rel=0.1)


def test_a_moving_layer_above_rmw_is_named_side_by_side() -> None:
    runs = [
        stlsim.run(str(DATA / "wdev_3.csv"), drive="imr-paper", layer=layer, label=layer)
        for layer in ("imr-rmw", "imr-flip")
    ]
    assert Comparison(runs).warnings() == []  # flipping saves writes here
    # The same two runs with flipping's figure made worse than RMW's.
    runs[1].report["waf_per_host_sector"] = runs[0].report["waf_per_host_sector"] + 1
    (w,) = Comparison(runs).warnings()
    assert w.startswith("imr-flip (imr-flip) writes") and "more than imr-rmw (imr-rmw" in w
