"""Reproducibility (issue 11, item 5): saved results carry their provenance
and come back as objects; results display as tables in Jupyter."""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import pandas as pd
import pytest

import stlsim


def test_a_saved_run_records_its_provenance_and_loads_back(tmp_path: Path, data: Path) -> None:
    trace = data / "wdev_3.csv"
    r = stlsim.run(trace=str(trace), layer="imr-rmw", series_every=100, label="rmw")
    r.save(tmp_path / "run")
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert prov["stlsim_version"] == stlsim.__version__
    assert prov["trace"]["sha256"] == hashlib.sha256(trace.read_bytes()).hexdigest()
    assert prov["trace"]["size_bytes"] == trace.stat().st_size
    assert prov["host"] == platform.node() and prov["label"] == "rmw" and prov["wall_s"] > 0
    back = stlsim.Result.load(tmp_path / "run")
    assert back.label == "rmw" and back.report == r.report and back.config == r.config
    assert back.summary == r.summary
    pd.testing.assert_frame_equal(back.series(), r.series())
    pd.testing.assert_frame_equal(back.latency_cdf("write"), r.latency_cdf("write"))
    pd.testing.assert_frame_equal(back.waf_series(), r.waf_series())
    html = back._repr_html_()
    assert html.startswith("<table>") and "rmw" in html and "waf" in html


def test_a_saved_comparison_loads_back_in_order(tmp_path: Path, data: Path) -> None:
    c = stlsim.compare([{"layer": "imr-rmw"}, {"layer": "cmr", "label": "a/b"}], trace=str(data / "wdev_3.csv"))
    c.save(tmp_path / "cmp")
    back = stlsim.Comparison.load(tmp_path / "cmp")
    assert [r.label for r in back] == [r.label for r in c]
    pd.testing.assert_frame_equal(back.table(), c.table())
    assert "<table" in back._repr_html_()


def test_loading_a_folder_that_is_not_a_result_is_a_clear_error(tmp_path: Path) -> None:
    import pytest

    with pytest.raises(stlsim.ConfigError, match="not a saved stlsim result"):
        stlsim.Result.load(tmp_path)
    with pytest.raises(stlsim.ConfigError, match="not a saved stlsim comparison"):
        stlsim.Comparison.load(tmp_path)


def test_a_saved_sweep_comes_back_in_plan_order_with_each_cells_run(tmp_path: Path, data: Path) -> None:
    plan = {"sweep": {"traces": [str(data / "wdev_3.csv")], "drives": ["imr-paper"], "layers": ["imr-rmw", "cmr", "smr-vguard"]}}
    rows = stlsim.sweep(plan, tmp_path, jobs=1)
    back = stlsim.SweepResult.load(tmp_path)
    assert list(back.rows["hash"]) == list(rows["hash"])  # plan order, not file order
    assert list(back.rows["layer"]) == ["imr-rmw", "cmr", "smr-vguard"]
    assert back.plan is not None and back.plan["sweep"]["layers"] == ["imr-rmw", "cmr", "smr-vguard"]
    r = back.result(0)
    assert r.summary["layer"] == "imr-rmw" and r.summary["waf"] == rows["waf"][0]
    assert back.result(str(rows["hash"][1])).summary["layer"] == "cmr"
    with pytest.raises(KeyError, match="failed and has no saved run"):
        back.result(2)
    html = back._repr_html_()
    assert "<table" in html and "3 cells, 1 failed" in repr(back)
    # Human titles, as the printed table and the report have them (not mean_ms).
    assert "mean (ms)" in html and "mean_ms" not in html
    with pytest.raises(stlsim.ConfigError, match="not a saved stlsim sweep"):
        stlsim.SweepResult.load(tmp_path / "runs")
