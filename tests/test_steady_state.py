"""A drive that starts full, background work in stages, counting where the
papers count, steady-state figures and warnings: the IMR evaluation's
assumptions, as a user meets them on the command line and in the API."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import stlsim

IMR_LAYERS = ["cmr", "imr-rmw", "imr-flip", "imr-cache", "imr-dtm"]
STEADY = "not steady state; moves amortised over too few intervals"


def _layers() -> list[str]:
    return [a for name in IMR_LAYERS for a in ("--layer", name)]


def test_compare_on_the_bundled_trace_warns_it_is_not_steady_state(cli, tmp_path: Path) -> None:
    p = cli("compare", "--drive", "imr-paper", *_layers(), "--out", "one", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    warned = [line for line in p.stderr.splitlines() if STEADY in line]
    # The three interval-driven layers complete 3 intervals of 20,000 writes on the 66,898-write sample.
    assert sorted(line.split(": ")[2] for line in warned) == ["imr-cache", "imr-dtm", "imr-flip"], p.stderr
    assert all(line.startswith("stlsim: warning: ") and "completed 3 interval(s)" in line for line in warned)
    for title in ("WAF excl moves", "WAF steady", "intervals", "vs CMR s"):
        assert title in p.stdout, title
    out = tmp_path / "one"
    for name in ("waf_series.png", "disparity_vs_cmr.png", "disparity.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG", name


def test_compare_on_the_trace_repeated_ten_times_prints_the_full_table(cli, tmp_path: Path) -> None:
    p = cli("compare", "--drive", "imr-paper", *_layers(), "--repeat", "10", "--out", "ten", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert STEADY not in p.stderr
    rows = {r["label"]: r for r in json.loads(p.stdout)}
    assert list(rows) == IMR_LAYERS
    for name in IMR_LAYERS:
        r = rows[name]
        assert r["requests"] == 1_138_720
        assert r["prefill"] == 1.0, "imr-paper starts full"
        assert r["waf_excluding_moves"] <= r["waf"] + 1e-12
        assert r["waf_steady"] is not None and r["waf_steady"] >= 1.0
    for name in ("imr-flip", "imr-cache", "imr-dtm"):
        assert rows[name]["intervals_completed"] == 33, name  # 668,980 writes / 20,000
        assert rows[name]["stages"] > 0
        assert rows[name]["waf_moves"] > 0
    assert rows["cmr"]["waf"] == rows["cmr"]["waf_excluding_moves"] == 1.0
    assert rows["imr-rmw"]["waf_moves"] == 0 and rows["imr-rmw"]["stages"] == 0
    table = pd.read_csv(tmp_path / "ten" / "summary.csv")
    assert "disparity_vs_cmr_s" in table.columns
    cmr = table.set_index("label").loc["cmr"]
    assert cmr["disparity_vs_cmr_s"] == 0.0
    # The plain table shows the same columns.
    p = cli("compare", "--drive", "imr-paper", "--layer", "cmr", "--layer", "imr-dtm", "--repeat", "10", "--out", "t2", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    header = next(line for line in p.stdout.splitlines() if "WAF excl moves" in line)
    for title in ("WAF steady", "intervals", "vs CMR s"):
        assert title in header


def test_prefill_and_fold_to_prefill_on_the_command_line(cli, tmp_path: Path, data: Path) -> None:
    trace = str(data / "rsrch_1.csv")
    runs = {}
    for prefill in ("0", "0.5", "footprint", "100%"):
        p = cli("run", "--trace", trace, "--layer", "imr-rmw", "--prefill", prefill, "--json", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        runs[prefill] = json.loads(p.stdout)
    assert runs["0"]["prefill"]["tracks"] == 0
    assert runs["0.5"]["prefill"]["spec"] == 0.5 and runs["0.5"]["prefill"]["tracks"] > 0
    assert runs["footprint"]["prefill"]["spec"] == "footprint"
    assert runs["100%"]["prefill"]["spec"] == 1.0
    # Writing next to data costs read-modify-writes an empty drive skips.
    empty, full = runs["0"]["layer_counters"], runs["100%"]["layer_counters"]
    assert full["rmw_skipped_empty"] < empty["rmw_skipped_empty"]
    assert runs["100%"]["waf"] > runs["0"]["waf"]
    # He & Du's usage levels: fold the trace into the first 5 % of the drive, verified.
    p = cli(
        "run", "--trace", trace, "--drive", "cmr", "--prefill", "0.05", "--fold-to-prefill", "--verify", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["prefill"]["fold_to_prefill"] and r["verification"]["mismatches"] == 0
    assert "fold_to_prefill" in p.stderr and p.stderr.startswith("stlsim: warning: ")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--prefill", "most"], "expected a fraction between 0 and 1 or 'footprint'"),
        (["run", "--prefill", "1.5"], "expected a fraction between 0 and 1 or 'footprint'"),
        (["run", "--drive", "cmr", "--fold-to-prefill", "--limit", "10"], "fold_to_prefill"),
        (["run", "--crash-after", "200000"], "lies beyond the end of the trace, which holds 113872 requests"),
        (["run", "--repeat", "0"], "positive integer"),
        (["run", "--waf-every", "0"], "positive integer"),
    ],
)
def test_bad_prefill_and_crash_settings_are_one_line_errors(cli, one_line_error, args: list[str], needle: str) -> None:
    assert needle in one_line_error(cli(*args))


def test_run_prints_warnings_and_steady_state_figures(cli, tmp_path: Path) -> None:
    p = cli("run", "--layer", "imr-flip", "--crash-at-op", "999999999", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for text in ("WAF excluding moves", "WAF steady state", "intervals completed", "WAF by cause group", "Background work"):
        assert text in p.stdout, text
    lines = p.stderr.splitlines()
    assert any(STEADY in line for line in lines), p.stderr
    assert any("999999999" in line and "never fired" in line for line in lines), p.stderr


def test_api_waf_series_and_disparity_relative_to_cmr() -> None:
    c = stlsim.compare([{"layer": n} for n in ("cmr", "imr-rmw", "imr-dtm")], waf_every=5000)
    dtm = c["imr-dtm"]
    w = dtm.waf_series()
    assert list(w.columns) == [
        "host_writes", "layer_write_sectors", "media_write_sectors", "move_write_sectors",
        "waf", "waf_excluding_moves", "waf_cumulative",
    ]  # fmt: skip
    assert w["host_writes"].tolist()[:3] == [5000, 10000, 15000]
    assert w["host_writes"].iloc[-1] == 66_898
    # The last cumulative point is the run's WAF.
    assert math.isclose(w["waf_cumulative"].iloc[-1], dtm.report["waf"])
    assert (w["waf_excluding_moves"].dropna() <= w["waf"].dropna() + 1e-12).all()
    d = c.disparity_vs_cmr()
    assert set(d["label"]) == {"imr-rmw", "imr-dtm"}
    rmw = d[d["label"] == "imr-rmw"]
    assert (rmw["disparity_vs_cmr_s"] == rmw["disparity_s"] - rmw["cmr_disparity_s"]).all()
    assert rmw["disparity_vs_cmr_s"].iloc[-1] > 0, "RMW falls behind CMR on a full drive"
    t = c.table().set_index("label")
    assert t.loc["cmr", "disparity_vs_cmr_s"] == 0.0
    # Without a CMR run there is nothing to subtract.
    assert stlsim.compare({"layer": "imr-rmw"}, limit=2000).disparity_vs_cmr().empty


def test_prefill_in_files_and_drive_descriptions(tmp_path: Path) -> None:
    (tmp_path / "half.toml").write_text('[replay]\nprefill = 0.5\nfold_to_prefill = true\n[trace]\nlimit = 3000\n')
    r = stlsim.run(config=tmp_path / "half.toml", drive="cmr")
    assert r.report["prefill"]["spec"] == 0.5 and r.report["prefill"]["fold_to_prefill"]
    (tmp_path / "full-cmr.toml").write_text('preset = "cmr"\nname = "full-cmr"\nprefill = "footprint"\n')
    r = stlsim.run(drive=tmp_path / "full-cmr.toml", limit=3000)
    assert r.report["prefill"]["spec"] == "footprint"
    # The run overrides the drive's default.
    r = stlsim.run(drive=tmp_path / "full-cmr.toml", limit=3000, prefill=0)
    assert r.report["prefill"]["tracks"] == 0
    (tmp_path / "bad.toml").write_text('preset = "cmr"\nprefill = 2.0\n')
    with pytest.raises(stlsim.ConfigError, match="prefill"):
        stlsim.run(drive=tmp_path / "bad.toml", limit=10)


@given(
    prefill=st.sampled_from([0.0, 0.3, 1.0, "footprint"]),
    layer=st.sampled_from(IMR_LAYERS),
    start=st.integers(0, 100_000),
    cache=st.booleans(),
)
def test_every_layer_keeps_prefilled_and_written_data(prefill: float | str, layer: str, start: int, cache: bool) -> None:
    """Every read returns the newest acknowledged write, on drives that start
    partly or wholly full, with moves forced to happen often."""
    params = {"interval_writes": 200, "flip_threshold": 2, "swap_threshold": 2, "evict_threshold": 2, "cache_tracks": 20}
    declared = {p["name"] for e in stlsim.layers() if e["name"] == layer for p in e["params"]}
    r = stlsim.run(
        layer=layer,
        params={k: v for k, v in params.items() if k in declared},
        prefill=prefill,
        start=start,
        limit=2500,
        verify=True,
        write_cache=cache,
    )
    assert r.report["verification"]["mismatches"] == 0
    assert r.report["verification"]["scan_blocks_checked"] > 0
