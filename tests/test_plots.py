"""Plots a paper can use: formats, titles naming trace / drive / mode, the
latency tail on log-log axes, values on bars, the shorter last interval of
per-interval plots, and the single-run plots of `stlsim run --out`."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import stlsim
from stlsim import plots

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-"}


def _is_format(path: Path, fmt: str) -> bool:
    head = path.read_bytes()[:400]
    if fmt == "svg":
        return head.startswith(b"<?xml") and b"<svg" in head
    return head.startswith(MAGIC[fmt])


def _texts(fig) -> str:
    """Every title of a figure: the suptitle and each panel's."""
    parts = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
    return "\n".join(parts)


def _step_patches(ax) -> list:
    from matplotlib.patches import StepPatch

    return [p for p in ax.patches if isinstance(p, StepPatch)]


def _hatched(ax) -> list:
    return [p for p in ax.patches if p.get_hatch()]


def _legend_texts(fig) -> list[str]:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [t.get_text() for leg in legends for t in leg.get_texts()]


@pytest.fixture(scope="module")
def rsrch(data: Path) -> stlsim.Result:
    """5,500 requests of rsrch_1 on imr-paper: series every 1,000 (the last
    interval holds 500), WAF every 2,000 host writes (the last window is shorter)."""
    return stlsim.run(trace=data / "rsrch_1.csv", limit=5500, series_every=1000, waf_every=2000)


@pytest.fixture(scope="module")
def mixed(data: Path) -> stlsim.Comparison:
    """Two drives and two modes over one trace."""
    return stlsim.compare(
        [{"label": "cmr-queue", "layer": "cmr"}, {"label": "rmw-flat", "layer": "imr-rmw", "replay": {"mode": "flat-out"}, "drive": "imr-paper"}],
        trace=data / "wdev_3.csv",
    )


@pytest.fixture(scope="module")
def same(data: Path) -> stlsim.Comparison:
    return stlsim.compare([{"layer": "cmr"}, {"layer": "imr-rmw"}, {"layer": "imr-dtm"}], trace=data / "rsrch_1.csv", limit=4000)


# --------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["png", "pdf", "svg"])
def test_every_plot_is_written_in_the_format_asked_for(
    fmt: str, tmp_path: Path, rsrch: stlsim.Result, same: stlsim.Comparison
) -> None:
    run_dir = rsrch.save(tmp_path / "run", plot_format=fmt)
    cmp_dir = same.save(tmp_path / "cmp", plot_format=fmt)
    work = stlsim.analyze(limit=3000, out=tmp_path / "work", plot_format=fmt)
    assert work.requests == 3000
    expected = {
        run_dir: ["latency_cdf", "tail_latency", "series", "waf_series"],
        cmp_dir: ["latency_cdf", "headline", "tail_latency", "disparity", "waf_series", "disparity_vs_cmr"],
        tmp_path / "work": list(plots.ANALYSIS_PLOTS),
    }
    for folder, stems in expected.items():
        for stem in stems:
            f = folder / f"{stem}.{fmt}"
            assert f.is_file(), f
            assert _is_format(f, fmt), f
        others = [p.name for p in folder.iterdir() if p.suffix.lstrip(".") in plots.PLOT_FORMATS and p.suffix != f".{fmt}"]
        assert others == [], others


def test_saving_the_same_plot_twice_gives_the_same_bytes(tmp_path: Path, rsrch: stlsim.Result) -> None:
    """No creation date in PDF or SVG: a saved result is reproducible."""
    for fmt in ("pdf", "svg"):
        a = plots.run_latency_cdf(rsrch, tmp_path / f"a.{fmt}").read_bytes()
        b = plots.run_latency_cdf(rsrch, tmp_path / f"b.{fmt}").read_bytes()
        assert a == b, fmt


def test_vector_plots_keep_text_and_embed_truetype(tmp_path: Path, rsrch: stlsim.Result) -> None:
    svg = plots.run_latency_cdf(rsrch, tmp_path / "l.svg").read_text()
    assert re.search(r"<text[^>]*>trace rsrch_1\.csv · drive imr-paper · mode queue \(depth 64\)", svg)
    pdf = plots.run_latency_cdf(rsrch, tmp_path / "l.pdf").read_bytes()
    assert b"/Type3" not in pdf and b"/FontFile2" in pdf


def test_an_unknown_plot_format_is_an_error(tmp_path: Path, rsrch: stlsim.Result) -> None:
    with pytest.raises(stlsim.ConfigError, match="unknown plot format 'jpg'"):
        rsrch.save(tmp_path / "r", plot_format="jpg")
    with pytest.raises(stlsim.ConfigError, match="unknown plot format 'gif'"):
        stlsim.compare([{"layer": "cmr"}], limit=10, plot_format="gif")
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------------------
# Titles name trace, drive and mode
# --------------------------------------------------------------------------


def test_titles_name_trace_drive_mode_and_layers(rsrch: stlsim.Result, same: stlsim.Comparison) -> None:
    context = "trace rsrch_1.csv · drive imr-paper · mode queue (depth 64)"
    one = {"run_latency_cdf", "run_tail_latency", "run_series"}
    figures = {
        "run_latency_cdf": plots.run_latency_cdf_figure(rsrch),
        "run_tail_latency": plots.run_tail_latency_figure(rsrch),
        "run_series": plots.run_series_figure(rsrch),
        "latency_cdf": plots.latency_cdf_figure(same.results),
        "headline": plots.headline_figure(same.results),
        "tail_latency": plots.tail_latency_figure(same.results),
        "disparity": plots.disparity_figure(same.results),
        "disparity_vs_cmr": plots.disparity_vs_cmr_figure(same),
        "waf_series": plots.waf_series_figure(same.results),
        "cache_utilisation": plots.cache_utilisation_figure(same.results),
    }
    for name, fig in figures.items():
        assert context in _texts(fig), (name, _texts(fig))
        layers = "layer cmr" if name in one else "layers cmr, imr-rmw, imr-dtm"
        assert layers in _texts(fig).replace("\n", " · "), (name, _texts(fig))


def test_titles_list_every_drive_and_mode_of_a_mixed_comparison(mixed: stlsim.Comparison) -> None:
    text = _texts(plots.latency_cdf_figure(mixed.results))
    assert "trace wdev_3.csv · drive imr-paper · modes queue (depth 64), flat-out" in text
    cmr_drive = stlsim.compare([{"layer": "cmr", "drive": "cmr"}, {"layer": "cmr"}], limit=200)
    assert "drives cmr, imr-paper" in _texts(plots.headline_figure(cmr_drive.results))


def test_usage_sweep_and_analysis_titles(data: Path) -> None:
    sweep = stlsim.compare(
        [{"layer": "cmr"}, {"layer": "swd-1234"}], trace=data / "wdev_3.csv", drive="swd-paper", usages=[0.5, 1.0],
        mode="scaled", scale=2.0,
    )  # fmt: skip
    assert "trace wdev_3.csv · drive swd-paper · mode scaled (x2)" in _texts(plots.by_usage_figure(sweep))
    work = stlsim.analyze(data / "rsrch_1.csv", limit=2000)
    for fig in (plots.hottest_cdf_figure(work), plots.hottest_neighbours_figure(work), plots.track_frequency_figure(work)):
        # Nothing is replayed: the figures say so instead of naming a mode.
        assert "trace rsrch_1.csv · drive imr-paper · no replay" in _texts(fig)


# --------------------------------------------------------------------------
# The latency tail
# --------------------------------------------------------------------------


def test_latency_cdf_has_its_tail_on_log_log_axes_beside_it(rsrch: stlsim.Result, same: stlsim.Comparison) -> None:
    for fig in (plots.latency_cdf_figure(same.results), plots.run_latency_cdf_figure(rsrch)):
        cdf_ax, tail_ax = fig.axes
        assert (cdf_ax.get_xscale(), cdf_ax.get_yscale()) == ("log", "linear")
        assert (tail_ax.get_xscale(), tail_ax.get_yscale()) == ("log", "log")
        assert "CCDF" in tail_ax.get_title()


def test_the_tail_is_the_fraction_of_requests_at_least_that_slow(rsrch: stlsim.Result) -> None:
    fig = plots.latency_cdf_figure([rsrch])
    line = fig.axes[1].get_lines()[0]
    x, y = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
    cdf = rsrch.latency_cdf()
    assert y[0] == pytest.approx(1.0)  # every request takes at least the least latency
    assert np.all(np.diff(y) <= 1e-12) and np.all(y > 0)
    assert x[-1] == pytest.approx(cdf["latency_ms"].iloc[-1])  # reaches the largest latency
    # The slowest request(s): at least one of 5,500 is that slow.
    assert y[-1] >= 1 / 5500 - 1e-12
    # At p99 at least 1 % of requests are that slow or slower, beyond it fewer.
    p99 = rsrch.summary["p99_ms"]
    at = y[np.searchsorted(x, p99)]
    assert at >= 0.01 - 1e-9


def test_run_latency_cdf_draws_all_reads_and_writes(rsrch: stlsim.Result) -> None:
    fig = plots.run_latency_cdf_figure(rsrch)
    labels = _legend_texts(fig)
    lat = rsrch.report["latency"]
    assert labels == [f"{c} ({lat[c]['count']:,})" for c in ("all", "read", "write")]
    assert len(fig.axes[1].get_lines()) >= 3


# --------------------------------------------------------------------------
# Values on bars
# --------------------------------------------------------------------------


def _bar_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_headline_bars_carry_their_values(same: stlsim.Comparison) -> None:
    fig = plots.headline_figure(same.results)
    for ax, key in zip(fig.axes, ("waf", "mean_ms", "p99_ms", "p999_ms")):
        assert _bar_labels(ax) == [plots.value_text(r.summary[key]) for r in same.results], key
    assert _bar_labels(fig.axes[0])[0] == "1.00"  # cmr's WAF


def test_tail_latency_bars_carry_their_values(rsrch: stlsim.Result, same: stlsim.Comparison) -> None:
    fig = plots.tail_latency_figure(same.results)
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    expected = [plots.value_text(r.summary[k]) for r in same.results for k in ("p90_ms", "p99_ms", "p999_ms", "max_ms")]
    assert _bar_labels(ax) == expected
    one = plots.run_tail_latency_figure(rsrch).axes[0]
    assert len(_bar_labels(one)) == 3 * 6  # all, read, write x mean, p50, p90, p99, p99.9, max
    assert plots.value_text(rsrch.report["latency"]["read"]["max_ms"]) in _bar_labels(one)


def test_usage_and_neighbour_bars_carry_their_values(data: Path) -> None:
    sweep = stlsim.compare([{"layer": "cmr"}], trace=data / "wdev_3.csv", drive="swd-paper", usages=[0.5, 1.0])
    top, bottom = plots.by_usage_figure(sweep).axes
    table = sweep.by_usage()
    assert _bar_labels(top) == [plots.value_text(v) for v in table["mean_ms"]]
    assert _bar_labels(bottom) == [plots.value_text(v) for v in table["war"]]
    work = stlsim.analyze(data / "rsrch_1.csv", limit=2000)
    nb = work.neighbours()
    labels = _bar_labels(plots.hottest_neighbours_figure(work).axes[0])
    assert len(labels) == 3 * len(nb)
    assert labels[len(nb) : 2 * len(nb)] == [f"{w:,}" for w in nb["writes"]]  # counts, no decimals


def test_value_text() -> None:
    assert [plots.value_text(v) for v in (1.0, 3.7312, 21.93, 1234.4, 0.0722, 0.0, float("nan"))] == [
        "1.00", "3.73", "21.9", "1,234", "0.072", "0", "-",
    ]  # fmt: skip
    assert plots.value_text(83.0, integer=True) == "83"


# --------------------------------------------------------------------------
# The shorter last interval
# --------------------------------------------------------------------------


def test_track_frequency_scales_the_last_interval_and_marks_it(data: Path) -> None:
    work = stlsim.analyze(data / "rsrch_1.csv", interval=4000)  # 13,738 writes: 3 full intervals and 1,738
    freq = work.frequency()
    last = freq[freq["interval"] == freq["interval"].max()]
    held = int(last["interval_writes"].iloc[0])
    assert held == 13_738 - 3 * 4000
    fig = plots.track_frequency_figure(work)
    ax = fig.axes[0]
    dashed = [p for p in _step_patches(ax) if p.get_linestyle() == "--"]
    assert len(dashed) == len(work.default_tracks())
    for patch, track in zip(dashed, work.default_tracks()):
        raw = int(last.loc[last["physical_track"] == track, "writes"].iloc[0])
        assert patch.get_data().values[0] == pytest.approx(raw * 4000 / held)  # per 4,000 writes, like the others
        assert patch.get_data().edges[-1] - patch.get_data().edges[0] == held
    (band,) = _hatched(ax)
    assert any(f"last interval: {held:,} writes, scaled to 4,000" in t for t in _legend_texts(fig))
    # Full intervals are drawn as counted, solid.
    solid = [p for p in _step_patches(ax) if p.get_linestyle() != "--"]
    first = work.default_tracks()[0]
    counted = freq[freq["physical_track"] == first].sort_values("interval")["writes"].tolist()[:-1]
    assert list(solid[0].get_data().values) == counted
    assert band is not None


def test_track_frequency_without_a_shorter_interval_marks_nothing(data: Path) -> None:
    work = stlsim.analyze(data / "rsrch_1.csv", interval=13_738 // 2)  # exactly two intervals
    fig = plots.track_frequency_figure(work)
    ax = fig.axes[0]
    assert _hatched(ax) == []
    assert all(p.get_linestyle() != "--" for p in _step_patches(ax))
    assert not any("last interval" in t for t in _legend_texts(fig))


def test_run_series_marks_the_last_interval_without_rescaling_its_means(rsrch: stlsim.Result) -> None:
    fig = plots.run_series_figure(rsrch)
    top, bottom = fig.axes
    series = rsrch.series()
    assert series["requests"].tolist()[-2:] == [5000, 5500]
    dashed = [p for p in _step_patches(top) if p.get_linestyle() == "--"]
    assert dashed, "the last interval is not marked"
    means = dashed[0].get_data()
    assert list(means.edges) == [5000, 5500]
    assert means.values[0] == pytest.approx(series["mean_latency_ms"].iloc[-1])  # a mean: not rescaled
    assert len(_hatched(top)) == 1 and len(_hatched(bottom)) == 1
    assert "last interval: 500 of 1,000 requests (dashed)" in _legend_texts(fig)
    assert top.get_yscale() == "log"


def test_run_series_of_whole_intervals_marks_nothing(data: Path) -> None:
    r = stlsim.run(trace=data / "rsrch_1.csv", limit=3000, series_every=1000)
    fig = plots.run_series_figure(r)
    assert all(_hatched(ax) == [] for ax in fig.axes)
    assert all(p.get_linestyle() != "--" for p in _step_patches(fig.axes[0]))


def test_waf_series_marks_the_last_window(rsrch: stlsim.Result) -> None:
    fig = plots.waf_series_figure([rsrch])
    (ax,) = fig.axes
    df = rsrch.waf_series()
    last = int(df["host_writes"].iloc[-1] - df["host_writes"].iloc[-2])
    assert last < 2000
    dashed = [p for p in _step_patches(ax) if p.get_linestyle() == "--"]
    assert len(dashed) == 1
    assert dashed[0].get_data().values[0] == pytest.approx(df["waf"].iloc[-1])  # a ratio: not rescaled
    assert len(_hatched(ax)) == 1
    assert f"last window: {last:,} of 2,000 host writes (dashed)" in _legend_texts(fig)


# --------------------------------------------------------------------------
# The command line
# --------------------------------------------------------------------------


def test_run_out_writes_the_single_run_plots(cli, tmp_path: Path, data: Path) -> None:
    p = cli("run", "--trace", str(data / "rsrch_1.csv"), "--drive", "cmr", "--mode", "flat-out", "--limit", "3000",
            "--out", "r", "--plot-format", "svg", cwd=tmp_path)  # fmt: skip
    assert p.returncode == 0, p.stderr
    for stem in ("latency_cdf", "tail_latency", "series", "waf_series"):
        f = tmp_path / "r" / f"{stem}.svg"
        assert _is_format(f, "svg"), f
        assert "trace rsrch_1.csv · drive cmr · mode flat-out · layer cmr" in f.read_text(), stem
        assert f"{stem}.svg" in p.stderr  # the "saved ..." line lists it
    assert not list((tmp_path / "r").glob("*.png"))
    default = cli("run", "--limit", "1000", "--out", "d", cwd=tmp_path)
    assert default.returncode == 0, default.stderr
    assert _is_format(tmp_path / "d" / "latency_cdf.png", "png")


@pytest.mark.parametrize(("command", "stem"), [(["compare", "--layer", "cmr"], "headline"), (["analyze"], "hottest_cdf")])
def test_compare_and_analyze_take_a_plot_format(cli, tmp_path: Path, command: list[str], stem: str) -> None:
    p = cli(*command, "--limit", "2000", "--out", "o", "--plot-format", "pdf", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert _is_format(tmp_path / "o" / f"{stem}.pdf", "pdf")
    assert not list((tmp_path / "o").glob("*.png"))


@pytest.mark.parametrize("command", [["run"], ["analyze"]])
def test_plot_format_without_out_is_an_error(cli, one_line_error, tmp_path: Path, command: list[str]) -> None:
    line = one_line_error(cli(*command, "--limit", "10", "--plot-format", "svg", cwd=tmp_path))
    assert "--plot-format needs --out DIR" in line


def test_a_bad_plot_format_points_at_the_commands_help(cli, one_line_error) -> None:
    line = one_line_error(cli("compare", "--layer", "cmr", "--plot-format", "jpg"))
    assert "invalid choice: 'jpg'" in line and "(see 'stlsim compare --help')" in line
