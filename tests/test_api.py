"""The Python API: run(), compare(), Result and Comparison."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pytest

import stlsim
from stlsim import ConfigError, TraceFormatError, TraceIOError

SERIES_COLUMNS = [
    "requests",
    "issue_s",
    "mean_latency_ms",
    "mean_read_latency_ms",
    "mean_write_latency_ms",
    "max_latency_ms",
    "disparity_s",
]


# --------------------------------------------------------------------------
# The bundled trace
# --------------------------------------------------------------------------


def test_bundled_trace_counts_and_cmr_waf(bundled: stlsim.Result) -> None:
    s = bundled.summary
    assert (s["requests"], s["reads"], s["writes"]) == (113_872, 46_974, 66_898)
    assert s["layer"] == "cmr"
    assert s["drive"] == "imr-paper"
    assert s["mode"] == "queue"
    assert s["waf"] == 1.0  # the identity map writes each host sector exactly once
    r = bundled.report
    assert r["finished"] is True
    assert r["queue_depth"] == 64
    assert r["trace"] == str(stlsim.default_trace())
    assert r["latency"]["all"]["count"] == 113_872
    assert r["latency"]["read"]["count"] + r["latency"]["write"]["count"] == 113_872
    assert s["p50_ms"] <= s["p99_ms"] <= s["p999_ms"] <= s["max_ms"]
    assert 0 < s["mean_ms"] <= s["max_ms"]


def test_default_trace_is_the_bundled_file() -> None:
    p = stlsim.default_trace()
    assert p.name == "cloudPhysicsIO.vscsi"
    assert p.is_file()
    assert p.stat().st_size == 113_872 * 32  # version-1 vscsi records are 32 bytes


def test_runs_are_deterministic() -> None:
    a = stlsim.run(limit=30_000)
    b = stlsim.run(limit=30_000)
    assert json.dumps(a.report, sort_keys=True) == json.dumps(b.report, sort_keys=True)
    pd.testing.assert_frame_equal(a.latency_cdf(), b.latency_cdf())
    pd.testing.assert_frame_equal(a.series(), b.series())


def test_whole_bundled_run_is_deterministic(bundled: stlsim.Result) -> None:
    again = stlsim.run()
    assert json.dumps(again.report) == json.dumps(bundled.report)


# --------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["all", "read", "write"])
def test_latency_cdf_is_monotone_and_ends_at_one(bundled: stlsim.Result, which: str) -> None:
    cdf = bundled.latency_cdf(which)
    assert list(cdf.columns) == ["latency_ms", "fraction"]
    assert len(cdf) > 10
    assert cdf["latency_ms"].is_monotonic_increasing
    assert cdf["fraction"].is_monotonic_increasing
    assert (cdf["latency_ms"] > 0).all()
    assert (cdf["fraction"] > 0).all()
    assert cdf["fraction"].iloc[-1] == pytest.approx(1.0, abs=1e-12)
    # The CDF's top equals the report's maximum latency.
    assert cdf["latency_ms"].iloc[-1] == pytest.approx(bundled.report["latency"][which]["max_ms"], rel=1e-9)


def test_latency_cdf_of_an_absent_class_is_empty(data: Path) -> None:
    r = stlsim.run(trace=data / "wdev_1.csv")  # all writes
    assert r.summary["reads"] == 0
    assert r.latency_cdf("read").empty
    assert math.isnan(r.summary["read_mean_ms"])
    assert r.latency_cdf("write")["fraction"].iloc[-1] == pytest.approx(1.0)


def test_latency_cdf_rejects_an_unknown_class(bundled: stlsim.Result) -> None:
    with pytest.raises(ConfigError, match="no latency class 'reads'"):
        bundled.latency_cdf("reads")


def test_series_columns_and_length(bundled: stlsim.Result) -> None:
    s = bundled.series()
    assert list(s.columns) == SERIES_COLUMNS
    assert len(s) == math.ceil(113_872 / 1000)
    assert s["requests"].dtype == "int64"
    assert s["requests"].iloc[-1] == 113_872
    assert s["requests"].is_monotonic_increasing
    assert s["issue_s"].is_monotonic_increasing
    assert (s["disparity_s"] >= 0).all()
    assert s["disparity_s"].max() == pytest.approx(bundled.report["max_disparity_s"])
    assert (s["max_latency_ms"] >= s["mean_latency_ms"]).all()


def test_series_every_sets_the_bucket_size() -> None:
    r = stlsim.run(limit=5_000, series_every=500)
    s = r.series()
    assert len(s) == 10
    assert s["requests"].tolist() == list(range(500, 5_001, 500))


def test_counters_by_cause_add_up(bundled: stlsim.Result) -> None:
    df = bundled.counters_by_cause()
    for col in ("cause", "read_ops", "read_sectors", "write_ops", "write_sectors", "busy_s", "seeks"):
        assert col in df.columns
    dev = bundled.report["device"]
    assert df["write_sectors"].sum() == dev["media_write_sectors"]
    assert df["read_ops"].sum() == dev["read_ops"]
    assert df["busy_s"].sum() == pytest.approx(dev["busy_s"])
    assert (df["write_bytes"] == df["write_sectors"] * 4096).all()
    assert "host" in set(df["cause"])


def test_summary_holds_the_headline_figures(bundled: stlsim.Result) -> None:
    s = bundled.summary
    for key in (
        "label",
        "layer",
        "requests",
        "reads",
        "writes",
        "waf",
        "io_amplification",
        "mean_ms",
        "p50_ms",
        "p99_ms",
        "p999_ms",
        "max_ms",
        "read_mean_ms",
        "write_mean_ms",
        "simulated_s",
        "iops",
        "final_disparity_s",
        "crashes",
    ):
        assert key in s, key
    for k, v in bundled.report["layer_counters"].items():
        assert s.get(k, s.get(f"layer.{k}")) == v
    assert s["p99_ms"] == bundled.report["latency"]["all"]["p99_ms"]


def test_save_writes_report_and_parquet(bundled: stlsim.Result, tmp_path: Path) -> None:
    out = bundled.save(tmp_path / "run")
    assert json.loads((out / "report.json").read_text()) == bundled.report
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["layer"]["name"] == "cmr"
    cdf = pd.read_parquet(out / "latency_cdf.parquet")
    assert list(cdf.columns) == ["class", "latency_ms", "fraction"]
    assert set(cdf["class"]) == {"all", "read", "write"}
    assert len(cdf[cdf["class"] == "read"]) == len(bundled.latency_cdf("read"))
    series = pd.read_parquet(out / "series.parquet")
    assert list(series.columns) == SERIES_COLUMNS
    assert len(series) == len(bundled.series())


def test_run_out_saves(tmp_path: Path) -> None:
    stlsim.run(limit=1000, out=tmp_path / "o")
    assert {p.name for p in (tmp_path / "o").iterdir()} >= {"report.json", "latency_cdf.parquet", "series.parquet"}


# --------------------------------------------------------------------------
# Settings, configs and verification
# --------------------------------------------------------------------------


@pytest.mark.parametrize("out", [5, 2.5, True, ["r"], b"r"])
def test_out_that_is_not_a_path_is_an_stlsim_error(out: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``out=5`` used to fail deep in pathlib with a TypeError; it is a
    ConfigError naming the argument, raised before any work."""
    monkeypatch.chdir(tmp_path)
    calls = (
        lambda: stlsim.run(limit=10, out=out),  # type: ignore[arg-type]
        lambda: stlsim.compare(["cmr"], limit=10, out=out),  # type: ignore[arg-type]
        lambda: stlsim.analyze(limit=10, out=out),  # type: ignore[arg-type]
        lambda: stlsim.validate("hp-c3323a", "nowhere.trace", out=out),  # type: ignore[arg-type]
    )
    for call in calls:
        with pytest.raises(stlsim.StlsimError, match=r"^configuration error: out must be a path \(a str or os.PathLike\), got "):
            call()
    assert list(tmp_path.iterdir()) == []


def test_verify_passes_for_cmr_on_rsrch(data: Path) -> None:
    r = stlsim.run(trace=data / "rsrch_1.csv", verify=True, limit=6_000)
    v = r.report["verification"]
    assert v["enabled"] is True
    assert v["mismatches"] == 0
    assert v["scan_blocks_checked"] > 0
    assert r.summary["requests"] == 6_000
    assert r.summary["waf"] == 1.0


def test_crash_with_verify_recovers(data: Path) -> None:
    r = stlsim.run(trace=data / "rsrch_1.csv", verify=True, limit=3_000, crash_after=[1_000, 2_000])
    assert r.summary["crashes"] == 2
    assert r.report["verification"]["mismatches"] == 0


def test_limit_start_and_modes() -> None:
    r = stlsim.run(limit=1_000, start=500, mode="flat-out")
    assert r.summary["requests"] == 1_000
    assert r.report["mode"] == "flat-out"
    assert r.report["queue_depth"] == 1
    r = stlsim.run(limit=1_000, mode="scaled", scale=0.5)
    assert r.report["mode"] == "scaled"


def test_write_cache_off_sends_host_writes_to_the_layer() -> None:
    on = stlsim.run(limit=2_000)
    off = stlsim.run(limit=2_000, write_cache=False)
    assert on.report["host"]["cached_writes"] > 0
    assert off.report["host"]["cached_writes"] == 0
    assert off.report["drive"]["write_cache_bytes"] == 0


def test_other_trace_formats(data: Path) -> None:
    msr = stlsim.run(trace=data / "wdev_3.csv.zst")
    assert (msr.summary["requests"], msr.summary["reads"], msr.summary["writes"]) == (682, 11, 671)
    cp = stlsim.run(trace=data / "cloudPhysicsIO.csv", format="cloudphysics-csv", limit=1_000)
    assert cp.summary["requests"] == 1_000


def test_drive_preset_dict_and_overrides() -> None:
    r = stlsim.run(limit=500, drive={"preset": "imr-paper", "rpm": 5400.0, "name": "slow"})
    assert r.report["drive"]["name"] == "slow"
    assert r.report["drive"]["rotation_ms"] == pytest.approx(60_000 / 5400, rel=1e-6)
    r = stlsim.run(limit=500, drive="cmr")
    assert r.report["drive"]["name"] == "cmr"


def test_explicit_arguments_override_the_config() -> None:
    cfg = {"label": "from-config", "trace": {"limit": 300}, "replay": {"mode": "flat-out"}}
    r = stlsim.run(config=cfg)
    assert (r.summary["requests"], r.report["mode"], r.label) == (300, "flat-out", "from-config")
    # Passing a default value explicitly still overrides the config.
    r = stlsim.run(config=cfg, mode="queue", limit=400, label="explicit")
    assert (r.summary["requests"], r.report["mode"], r.label) == (400, "queue", "explicit")


def test_config_file_paths_are_relative_to_the_file(tmp_path: Path, data: Path) -> None:
    conf = tmp_path / "sub" / "exp.toml"
    conf.parent.mkdir()
    rel = os.path.relpath(data / "wdev_1.csv", conf.parent)
    conf.write_text(f'[trace]\npath = "{rel}"\n\n[replay]\nmode = "flat-out"\n')
    r = stlsim.run(config=conf)
    assert r.label == "exp"
    assert r.summary["requests"] == 1_055
    assert r.report["mode"] == "flat-out"


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_unknown_layer_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown layer 'nope' \(known: .*cmr"):
        stlsim.run(layer="nope", limit=10)


def test_unknown_parameter_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="has no parameter 'no_such_param'"):
        stlsim.run(params={"no_such_param": 1}, limit=10)


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="limit must be a non-negative integer"):
        stlsim.run(limit=-1)
    with pytest.raises(ConfigError, match="mode must be one of queue, flat-out, scaled"):
        stlsim.run(mode="fast")
    with pytest.raises(ConfigError, match="unknown trace format 'foo'"):
        stlsim.run(format="foo")
    with pytest.raises(ConfigError, match="queue_depth must be at least 1"):
        stlsim.run(queue_depth=0, limit=10)


def test_malformed_trace_line_names_file_and_line(tmp_path: Path, data: Path) -> None:
    lines = (data / "wdev_3.csv").read_text().splitlines()[:6]
    lines[2] = "128166410318061390,wdev,3,Write,notanumber,4096,798"
    bad = tmp_path / "broken.csv"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceFormatError) as e:
        stlsim.run(trace=bad)
    assert "broken.csv:3:" in str(e.value)


def test_missing_trace_is_a_trace_io_error(tmp_path: Path) -> None:
    missing = tmp_path / "nothere.csv"
    with pytest.raises(TraceIOError, match="nothere.csv") as e:
        stlsim.run(trace=missing)
    assert isinstance(e.value, OSError)


def test_impossible_geometry_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="sector_bytes 1000"):
        stlsim.run(drive={"preset": "imr-paper", "sector_bytes": 1000}, limit=10)


def test_trace_beyond_capacity_needs_fold(data: Path) -> None:
    small = {"preset": "imr-paper", "capacity_gib": 1.0, "name": "tiny"}
    with pytest.raises(TraceFormatError, match="beyond the drive's capacity"):
        stlsim.run(trace=data / "wdev_3.csv", drive=small)
    r = stlsim.run(trace=data / "wdev_3.csv", drive=small, fold=True)
    assert r.summary["requests"] == 682


# --------------------------------------------------------------------------
# Every registered layer runs
# --------------------------------------------------------------------------


def _drive_for(layout: str) -> dict:
    """imr-paper, with its layout kind replaced when a layer needs another."""
    if layout == "smr":
        # Shingled layers keep rescue copies in a random-access zone; the
        # drive-managed ones cache tracks in a persistent cache.
        return {"preset": "imr-paper", "layout": {"kind": layout, "random_access_tracks": 16, "cache_tracks": 256}}
    if layout == "zoned":
        # Host-managed buffer layers keep their buffer in conventional zones.
        return {"preset": "imr-paper", "layout": {"kind": layout, "conventional_zones": 8}}
    if layout == "imr":
        return {"preset": "imr-paper", "layout": {"kind": layout}}
    if layout == "wave":
        # Paper 001's hybrid layers: the wave disk with its memory buffer and SSD.
        return {"preset": "hwsr-paper"}
    # buffered-cmr needs a memory buffer beside the disk.
    return {"preset": "imr-paper", "memory": {"mib": 8, "read_latency_us": 0.1, "write_latency_us": 0.1, "read_mb_s": 10666, "write_mb_s": 10666}}


@pytest.mark.parametrize("entry", stlsim.layers(), ids=lambda e: e["name"])
def test_every_registered_layer_runs_with_verification(entry: dict, data: Path) -> None:
    r = stlsim.run(trace=data / "rsrch_1.csv", layer=entry["name"], drive=_drive_for(entry["layout"]), verify=True, limit=2_000)
    assert r.summary["layer"] == entry["name"]
    assert r.summary["requests"] == 2_000
    assert r.report["verification"]["mismatches"] == 0
    # A memory buffer may absorb overwrites and still hold data at the end.
    if not r.report["device"].get("by_device"):
        assert r.summary["waf"] >= 1.0 - 1e-12


# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------


def test_compare_runs_each_config_and_saves(tmp_path: Path, data: Path) -> None:
    cmp = stlsim.compare(
        [{"layer": "cmr"}, {"layer": "cmr", "replay": {"mode": "flat-out"}}, {"label": "small-qd", "layer": "cmr", "replay": {"queue_depth": 4}}],
        trace=data / "rsrch_1.csv",
        limit=2_000,
    )
    assert [r.label for r in cmp.results] == ["cmr", "cmr-2", "small-qd"]
    table = cmp.table()
    assert len(table) == 3
    assert table["requests"].tolist() == [2_000] * 3
    assert table["mode"].tolist() == ["queue", "flat-out", "queue"]
    assert cmp["small-qd"].report["queue_depth"] == 4
    out = cmp.save(tmp_path / "cmp")
    for name in ("summary.csv", "latency_cdf.png", "headline.png", "disparity.png"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "latency_cdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv = pd.read_csv(out / "summary.csv")
    assert csv["label"].tolist() == ["cmr", "cmr-2", "small-qd"]
    for label in ("cmr", "cmr-2", "small-qd"):
        assert (out / label / "report.json").is_file()


def test_compare_validates_every_config_before_running() -> None:
    with pytest.raises(ConfigError, match="unknown layer 'nope'"):
        stlsim.compare([{"layer": "cmr"}, {"layer": "nope"}], limit=10)
    with pytest.raises(ConfigError, match="at least one"):
        stlsim.compare([])
    with pytest.raises(TypeError, match="bogus"):
        stlsim.compare([{"layer": "cmr"}], bogus=1)


def test_public_surface() -> None:
    for name in stlsim.__all__:
        assert hasattr(stlsim, name), name
    assert stlsim.__version__
    assert issubclass(stlsim.ConfigError, ValueError)
    assert issubclass(stlsim.TraceIOError, OSError)
    assert issubclass(stlsim.DataLossError, stlsim.StlsimError)


def test_verifying_on_a_second_thread_gives_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """A verified run long enough to check on a thread of its own (past
    20,000 writes) reports what it reports with STLSIM_VERIFY_THREAD=0,
    power losses included; the setting is not part of the configuration."""
    trace = Path(__file__).parent / "data" / "cloudPhysicsIO.vscsi"
    reports = []
    for threads in ("0", "1"):
        monkeypatch.setenv("STLSIM_VERIFY_THREAD", threads)
        r = stlsim.run(trace=trace, verify=True, crash_after=[40_000])
        assert stlsim.api.verify_thread() is (threads == "1")
        assert "verify_thread" not in r.config["replay"]
        reports.append(r.report)
    assert reports[0] == reports[1]
    assert reports[0]["verification"]["read_blocks_checked"] > 0
    assert reports[0]["verification"]["scan_blocks_checked"] > 0


def test_parsing_on_a_second_thread_gives_the_same_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """STLSIM_PARSE_THREAD=0 parses on the engine's thread; the default on
    a second one. Every figure of the report is the same, including the
    skipped-record count and the measured response times of MSR's trace."""
    msr = Path(__file__).parent / "data" / "rsrch_1.csv"
    lines = msr.read_text().splitlines()
    # A record of another operation past the first batch, skipped and counted.
    lines.insert(6000, lines[6000].replace(",Read,", ",Trim,").replace(",Write,", ",Trim,"))
    trace = tmp_path / "t.csv"
    trace.write_text("\n".join(lines) + "\n")
    reports = []
    for threads in ("0", "1"):
        monkeypatch.setenv("STLSIM_PARSE_THREAD", threads)
        r = stlsim.run(trace=trace, format="msr", skip_unknown=True, mode="closed", limit=12_000)
        assert stlsim.api.parse_thread() is (threads == "1")
        assert "parse_thread" not in r.config["replay"]
        reports.append(r.report)
    assert reports[0] == reports[1]
    assert reports[0]["host"]["requests"] == 12_000


def test_a_long_runs_series_stays_bounded_and_keeps_its_means() -> None:
    """Past 10,000 points the series merges its pairs (issue 34: its growth
    was most of a 50 M-request run's); the merged means, weighted by the
    requests each point covers, still give the run's mean latency."""
    import stlsim

    r = stlsim.run(trace="synth:uniform,count=25000,span_bytes=64MiB,write_fraction=0.5", drive="imr-paper",
                   series_every=1)
    s = r.series()
    assert 5_000 < len(s) <= 10_000
    assert s["requests"].iloc[-1] == 25_000
    covered = s["requests"].diff().fillna(s["requests"].iloc[0])
    mean = (s["mean_latency_ms"] * covered).sum() / covered.sum()
    assert abs(mean - r.report["latency"]["all"]["mean_ms"]) < 1e-6 * r.report["latency"]["all"]["mean_ms"]
    # The report's maximum is the histogram's (three significant digits).
    assert abs(s["max_latency_ms"].max() - r.report["latency"]["all"]["max_ms"]) < 1e-3 * s["max_latency_ms"].max()


def test_every_core_error_has_its_exception() -> None:
    """The binding raises by name from stlsim.errors: every name it uses exists
    there and is a StlsimError (LayerError: a layer that broke its contract)."""
    import re

    from stlsim import errors

    binding = (Path(__file__).parent.parent / "crates" / "stlsim-py" / "src" / "lib.rs").read_text()
    names = set(re.findall(r'SimError::\w+(?:\(_\)|\(d\)| \{ \.\. \})? => \(\s*"(\w+)"', binding))
    assert {"ConfigError", "MediumError", "LayerError", "DataLossError"} <= names, names
    for name in names:
        assert issubclass(getattr(errors, name), stlsim.StlsimError), name
    assert stlsim.LayerError is errors.LayerError
