"""Workload analysis: stlsim.analyze(), Analysis and `stlsim analyze`."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import stlsim
from stlsim import ConfigError, TraceFormatError

PNGS = ("hottest_cdf.png", "hottest_neighbours.png", "track_frequency.png")


@pytest.fixture(scope="module")
def bundled_work() -> stlsim.Analysis:
    return stlsim.analyze()


@pytest.fixture(scope="module")
def rsrch_work(data: Path) -> stlsim.Analysis:
    return stlsim.analyze(data / "rsrch_1.csv")


@pytest.fixture(scope="module", params=["bundled", "rsrch_1"])
def work(request: pytest.FixtureRequest) -> stlsim.Analysis:
    return request.getfixturevalue("bundled_work" if request.param == "bundled" else "rsrch_work")


def _msr(path: Path, offsets: list[int], size: int = 4096) -> Path:
    """A small MSR trace of writes at these byte offsets, 1 ms apart."""
    t0 = 128166372003061629
    lines = [f"{t0 + 10_000 * i},hm,0,Write,{off},{size},100" for i, off in enumerate(offsets)]
    path.write_text("\n".join(lines) + "\n")
    return path


# --------------------------------------------------------------------------
# Counts
# --------------------------------------------------------------------------


def test_request_and_write_counts(bundled_work: stlsim.Analysis, rsrch_work: stlsim.Analysis) -> None:
    assert (bundled_work.requests, bundled_work.write_requests) == (113_872, 66_898)
    assert (rsrch_work.requests, rsrch_work.write_requests) == (13_780, 13_738)
    for a in (bundled_work, rsrch_work):
        assert a.tracks == 524_288  # imr-paper
        assert a.layout == "imr" and a.bottom_only
        assert a.track_writes >= a.write_requests  # a request spanning tracks counts on each


def test_counts_add_up(work: stlsim.Analysis) -> None:
    rows = work.rows()
    counts = work.track_counts()
    assert list(counts.columns) == ["physical_track", "writes", "sectors"]
    assert int(counts["writes"].sum()) == len(rows) == work.track_writes
    assert int(counts["sectors"].sum()) == int(rows["sectors"].sum()) == work.summary["sectors_written"]
    assert len(counts) == rows["physical_track"].nunique() == work.tracks_written
    assert counts["physical_track"].is_monotonic_increasing
    # one row per (write request, track): no pair twice
    assert not rows.duplicated(["request", "physical_track"]).any()
    assert rows["request"].is_monotonic_increasing
    assert rows["physical_track"].between(0, work.tracks - 1).all()
    assert (rows["sectors"] > 0).all()


# --------------------------------------------------------------------------
# Figure 1: hottest-track CDF
# --------------------------------------------------------------------------


def test_cdf_is_monotone_and_ends_at_one(work: stlsim.Analysis) -> None:
    h = work.hottest(work.tracks_written + 10)  # K covers every track written
    assert len(h) == work.tracks_written
    assert list(h.columns) == ["rank", "physical_track", "writes", "sectors", "cumulative_writes", "cumulative_fraction"]
    assert h["rank"].tolist() == list(range(1, len(h) + 1))
    assert h["writes"].is_monotonic_decreasing
    assert h["cumulative_fraction"].is_monotonic_increasing
    assert h["cumulative_fraction"].iloc[-1] == pytest.approx(1.0, abs=1e-12)
    assert int(h["cumulative_writes"].iloc[-1]) == work.track_writes
    assert (h["cumulative_fraction"] > 0).all() and (h["cumulative_fraction"] <= 1.0).all()
    assert set(h["physical_track"]) == set(work.track_counts()["physical_track"])


def test_cdf_head_and_headline_shares(bundled_work: stlsim.Analysis) -> None:
    h10 = bundled_work.hottest(10)
    assert len(h10) == 10
    assert h10["cumulative_fraction"].iloc[-1] == pytest.approx(bundled_work.share(10))
    assert bundled_work.share(10) < 1.0
    s = bundled_work.summary
    assert s["share_hottest"]["100"] == pytest.approx(bundled_work.share(100))
    assert s["hottest_track"] == int(h10["physical_track"].iloc[0])
    assert s["hottest_track_writes"] == int(h10["writes"].iloc[0])
    assert len(bundled_work.hottest()) == min(3000, bundled_work.tracks_written)  # default K
    # tracks_for: the fewest hottest tracks reaching the fraction
    k = s["tracks_for_50pct"]
    assert bundled_work.share(k) >= 0.5 > (bundled_work.share(k - 1) if k > 1 else 0.0)
    assert bundled_work.tracks_for(1.0) == bundled_work.tracks_written


# --------------------------------------------------------------------------
# Figure 2: hottest bottom tracks and their neighbours
# --------------------------------------------------------------------------


def test_neighbours_are_bottom_tracks_with_top_neighbours_on_imr(work: stlsim.Analysis) -> None:
    nb = work.neighbours()
    counts = dict(zip(work.track_counts()["physical_track"], work.track_counts()["writes"]))
    assert len(nb) == 20
    assert (nb["physical_track"] % 2 == 0).all()  # even physical tracks are IMR bottom tracks
    assert (nb["left_track"] == nb["physical_track"] - 1).all()
    assert (nb["right_track"] == nb["physical_track"] + 1).all()
    assert (nb["left_track"] % 2 == 1).all() and (nb["right_track"] % 2 == 1).all()  # top tracks
    assert nb["writes"].is_monotonic_decreasing
    for row in nb.itertuples(index=False):
        assert row.writes == counts[row.physical_track]
        assert row.left_writes == counts.get(row.left_track, 0)
        assert row.right_writes == counts.get(row.right_track, 0)
        assert row.colder_by == row.writes - min(row.left_writes, row.right_writes)
        assert row.friendly == (row.colder_by >= 50)
    # they are the 20 hottest even tracks
    even = work.hottest(work.tracks_written)
    even = even[even["physical_track"] % 2 == 0]
    assert nb["physical_track"].tolist() == even["physical_track"].head(20).tolist()
    assert work.summary["flip_friendly"] == int(nb["friendly"].sum())


def test_neighbours_take_any_track_on_other_layouts() -> None:
    a = stlsim.analyze(drive="cmr", limit=3000)
    assert not a.bottom_only
    nb = a.neighbours(n=10)
    assert nb["physical_track"].tolist() == a.hottest(10)["physical_track"].tolist()
    assert (nb["physical_track"] % 2 == 1).any()


def test_neighbour_beyond_the_first_track_is_missing(tmp_path: Path) -> None:
    trace = _msr(tmp_path / "edge.csv", [0] * 60 + [2 * 2**20 * 1] * 3)  # logical track 0 sixty times
    a = stlsim.analyze(trace)
    nb = a.neighbours()
    top = nb.iloc[0]
    assert top["physical_track"] == 0 and top["writes"] == 60
    assert pd.isna(top["left_track"]) and pd.isna(top["left_writes"])
    assert top["right_track"] == 1
    assert top["colder_by"] == 60 - top["right_writes"] and bool(top["friendly"])
    assert a.to_dict()["neighbours"][0]["left_writes"] is None


# --------------------------------------------------------------------------
# Figure 3: write frequency over time
# --------------------------------------------------------------------------


def test_frequency_of_the_hottest_tracks(bundled_work: stlsim.Analysis) -> None:
    f = bundled_work.frequency()
    assert list(f.columns) == ["interval", "first_write", "interval_writes", "time_s", "physical_track", "writes"]
    hottest4 = bundled_work.hottest(4)
    assert sorted(f["physical_track"].unique()) == sorted(hottest4["physical_track"])
    n = -(-bundled_work.write_requests // 10_000)
    assert f["interval"].nunique() == n == 7
    per_interval = f.drop_duplicates("interval")
    assert int(per_interval["interval_writes"].sum()) == bundled_work.write_requests
    assert per_interval["first_write"].tolist() == [10_000 * i for i in range(n)]
    assert per_interval["time_s"].is_monotonic_increasing and per_interval["time_s"].iloc[0] == 0.0
    totals = f.groupby("physical_track")["writes"].sum()
    for row in hottest4.itertuples(index=False):
        assert totals[row.physical_track] == row.writes


def test_frequency_of_chosen_tracks_and_interval(rsrch_work: stlsim.Analysis) -> None:
    counts = dict(zip(rsrch_work.track_counts()["physical_track"], rsrch_work.track_counts()["writes"]))
    f = rsrch_work.frequency([1538, 7, 1540], interval=1000)
    assert f["interval"].nunique() == 14
    assert f.groupby("physical_track")["writes"].sum().to_dict() == {7: 0, 1538: counts[1538], 1540: counts[1540]}
    assert (f["writes"] <= f["interval_writes"]).all()
    wide = f.pivot(index="interval", columns="physical_track", values="writes")
    assert list(wide.columns) == [7, 1538, 1540]
    with pytest.raises(ConfigError, match="beyond the drive's last physical track"):
        rsrch_work.frequency([10**9])
    with pytest.raises(ConfigError, match="interval"):
        rsrch_work.frequency(interval=0)


# --------------------------------------------------------------------------
# API options, files and errors
# --------------------------------------------------------------------------


def test_analyze_options_and_save(tmp_path: Path, data: Path) -> None:
    a = stlsim.analyze(data / "rsrch_1.csv", start=1000, limit=2000, hottest=50, tracks=[1504, 1536], interval=500, out=tmp_path / "a")
    assert a.requests == 2000
    assert len(a.hottest()) == 50
    assert a.default_tracks() == [1504, 1536]
    assert a.frequency()["interval"].nunique() == 4
    for name in PNGS:
        assert (tmp_path / "a" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    saved = pd.read_parquet(tmp_path / "a" / "track_counts.parquet")
    pd.testing.assert_frame_equal(saved, a.track_counts())


def test_analyze_of_nothing_still_saves(tmp_path: Path) -> None:
    a = stlsim.analyze(limit=0)
    assert (a.requests, a.track_writes, a.tracks_written) == (0, 0, 0)
    assert a.hottest().empty and a.neighbours().empty and a.frequency().empty
    assert a.summary["share_hottest"]["10"] is None
    a.save(tmp_path / "empty")
    assert all((tmp_path / "empty" / name).is_file() for name in PNGS)
    json.loads(a.to_json())


def test_analyze_errors(tmp_path: Path, data: Path) -> None:
    with pytest.raises(ConfigError, match="unknown drive 'nope'"):
        stlsim.analyze(drive="nope")
    with pytest.raises(ConfigError, match="hottest"):
        stlsim.analyze(limit=10, hottest=0)
    with pytest.raises(ConfigError, match="beyond the drive's last physical track"):
        stlsim.analyze(limit=10, tracks=[524_288])
    small = {"preset": "imr-paper", "capacity_gib": 1.0, "name": "tiny"}
    with pytest.raises(TraceFormatError, match="beyond the drive's capacity"):
        stlsim.analyze(data / "wdev_3.csv", drive=small)
    assert stlsim.analyze(data / "wdev_3.csv", drive=small, fold=True).requests == 682


# --------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------


def test_cli_out_writes_the_figures(cli, tmp_path: Path, data: Path) -> None:
    p = cli("analyze", "--trace", str(data / "rsrch_1.csv"), "--out", "res", "--interval", "2000", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for name in PNGS:
        assert (tmp_path / "res" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    counts = pd.read_parquet(tmp_path / "res" / "track_counts.parquet")
    assert int(counts["writes"].sum()) == 13_792
    for text in ("13,780 requests", "Hottest tracks", "hottest bottom tracks", "flip-friendly:", "Write frequency per 2,000 writes"):
        assert text in p.stdout, text
    assert "saved" in p.stderr


def test_cli_json_matches_the_api(cli, tmp_path: Path, rsrch_work: stlsim.Analysis, data: Path) -> None:
    p = cli("analyze", "--trace", str(data / "rsrch_1.csv"), "--hottest", "100", "--tracks", "1504,1540", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["summary"]["track_writes"] == rsrch_work.track_writes
    assert j["summary"]["flip_friendly"] == rsrch_work.summary["flip_friendly"]
    assert len(j["cdf"]) == 100 and j["cdf"] == sorted(j["cdf"])
    assert j["hottest"] == rsrch_work.hottest(100)["physical_track"].tolist()
    assert [r["physical_track"] for r in j["neighbours"]] == rsrch_work.neighbours()["physical_track"].tolist()
    assert set(j["frequency"]["writes"]) == {"1504", "1540"}
    assert not list(tmp_path.iterdir())  # nothing saved without --out
    assert p.stderr == ""


def test_cli_errors_are_one_line(cli, one_line_error, tmp_path: Path, data: Path) -> None:
    assert "unknown drive 'nope'" in one_line_error(cli("analyze", "--drive", "nope"))
    lines = (data / "wdev_3.csv").read_text().splitlines()[:8]
    lines[2] = "128166410318061390,wdev,3,Write,3154144768,4096"  # a field short
    bad = tmp_path / "broken_trace.csv"
    bad.write_text("\n".join(lines) + "\n")
    assert "broken_trace.csv:3:" in one_line_error(cli("analyze", "--trace", str(bad)))
    assert "--tracks" in one_line_error(cli("analyze", "--tracks", "12,x"))
    assert "--interval" in one_line_error(cli("analyze", "--interval", "0"))
