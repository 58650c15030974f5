"""Every plot the tools write is ready for a paper (issue 35, item 7): it
draws every kind on small inputs, lays it out as saving does, and checks
that no text runs off the figure, that a title names the trace(s), drive(s)
and layer(s), that every axis with tick labels has a label with a unit
where the quantity has one, that fraction axes stop at 1, and that a ratio
with nothing under it (0/0) is left out rather than drawn as 0."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import stlsim
from stlsim import html_report, plots

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _script(name: str) -> Any:
    """Import scripts/NAME.py (its own folder first on the path, for claims_table)."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(f"_layout_{name}", SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------
# What a paper-ready figure is
# --------------------------------------------------------------------------


def _drawn_texts(fig) -> list:
    """Every non-empty Text the canvas draws, after the figure's layout:
    tick labels only of the ticks inside the view (the others are kept but
    not drawn)."""
    from matplotlib.text import Text

    fig.canvas.draw()
    every_tick_label, drawn = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                every_tick_label.update((tick.label1, tick.label2))
            for tick in axis._update_ticks():  # the ticks the axis draws
                drawn.update(t for t in (tick.label1, tick.label2) if t.get_visible())
    return [
        t
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and (t not in every_tick_label or t in drawn) and t.figure is fig
    ]


def _outside(fig) -> list[str]:
    """The drawn texts whose extent is not inside the figure (1 px slack)."""
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    bad = []
    for t in _drawn_texts(fig):
        e = t.get_window_extent(renderer)
        if e.x0 < box.x0 - 1 or e.y0 < box.y0 - 1 or e.x1 > box.x1 + 1 or e.y1 > box.y1 + 1:
            bad.append(f"{t.get_text()!r} at {tuple(round(v) for v in e.extents)} outside {tuple(round(v) for v in box.extents)}")
    return bad


def _titles(fig) -> str:
    parts = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
    return "\n".join(parts)


def _drawn_tick_labels(axis) -> list[str]:
    return [t.get_text() for tick in axis._update_ticks() for t in (tick.label1,) if t.get_visible() and t.get_text()]


# A quantity named in an axis label, and the unit the label must then name.
UNITS = [
    (r"latency|response time|disparity|busy", r"\((ms|s)\b|\bms\b|\(s\)|\bs\)"),
    (r"\bsize\b|padding", r"KiB|MiB|GiB|sectors|tracks|blocks"),
]


def _label_problems(fig) -> list[str]:
    """Axes that draw tick labels but have no label; labels of a quantity
    with a unit that name none."""
    sup = {"x": fig.get_supxlabel() if fig._supxlabel else "", "y": fig.get_supylabel() if fig._supylabel else ""}
    bad = []
    for i, ax in enumerate(fig.axes):
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if not _drawn_tick_labels(axis):
                continue
            label = axis.get_label_text() or sup[which]
            if not label.strip():
                bad.append(f"axes {i} ({ax.get_title()!r}): no {which} label")
                continue
            if re.match(r"(fraction|ratio|share|number|count)\b", label):
                continue  # a pure number, whatever it counts
            for quantity, unit in UNITS:
                if re.search(quantity, label, re.I) and not re.search(unit, label):
                    bad.append(f"axes {i}: {which} label {label!r} names no unit")
    return bad


def _fraction_problems(fig) -> list[str]:
    """A y axis labelled as a fraction must not reach past 1, nor its lines."""
    bad = []
    for i, ax in enumerate(fig.axes):
        if "fraction" not in ax.get_ylabel():
            continue
        top = ax.get_ylim()[1]
        if top > 1.0 + 1e-9:
            bad.append(f"axes {i} ({ax.get_ylabel()!r}) reaches {top:.3f}")
        for line in ax.get_lines():
            y = np.asarray(line.get_ydata(), dtype="float64")
            if np.nanmax(y, initial=0.0) > 1.0 + 1e-9:
                bad.append(f"axes {i}: line {line.get_label()!r} reaches {np.nanmax(y):.3f}")
    return bad


def _names_what_it_shows(fig, traces: list[str], drives: list[str], layers: list[str] | None) -> list[str]:
    """The suptitle (or a title) names the trace(s), drive(s) and layer(s);
    ``layers`` None: nothing replayed (a workload analysis), said so."""
    text = _titles(fig)
    flat = text.replace("\n", " ")
    bad = []
    for word, names in (("trace", traces), ("drive", drives), ("layer", layers or [])):
        if names and not re.search(rf"\b{word}s?\b", flat):
            bad.append(f"no '{word}' in {text!r}")
        bad += [f"{word} {n!r} not named in {text!r}" for n in names if n not in flat]
    if layers is None and "no replay" not in flat:
        bad.append(f"neither layer nor 'no replay' in {text!r}")
    return bad


def _paper_ready(fig, traces: list[str], drives: list[str], layers: list[str] | None) -> list[str]:
    return (
        _outside(fig) + _names_what_it_shows(fig, traces, drives, layers) + _label_problems(fig) + _fraction_problems(fig)
    )


# --------------------------------------------------------------------------
# Small inputs for every kind
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def queue_run(data: Path) -> stlsim.Result:
    return stlsim.run(trace=data / "rsrch_1.csv", limit=5500, series_every=1000, waf_every=2000)


@pytest.fixture(scope="module")
def flat_out_run(data: Path) -> stlsim.Result:
    return stlsim.run(trace=data / "rsrch_1.csv", drive="cmr", mode="flat-out", limit=3000, series_every=500)


@pytest.fixture(scope="module")
def imr(data: Path) -> stlsim.Comparison:
    return stlsim.compare([{"layer": "cmr"}, {"layer": "imr-rmw"}, {"layer": "imr-dtm"}], trace=data / "rsrch_1.csv", limit=4000)


@pytest.fixture(scope="module")
def dmsmr(data: Path) -> stlsim.Comparison:
    """Paper 003's replay (docs/dmsmr.md): long legend labels of two caches."""
    return stlsim.compare(
        [{"layer": "smr-eregion"}, {"layer": "smr-vguard"}], trace=data / "rsrch_1.csv", drive="dmsmr-5tb",
        mode="flat-out", write_cache=False, limit=5000,
    )  # fmt: skip


@pytest.fixture(scope="module")
def mixed(data: Path) -> stlsim.Comparison:
    return stlsim.compare(
        [{"label": "cmr-queue", "layer": "cmr"}, {"label": "rmw-flat", "layer": "imr-rmw", "replay": {"mode": "flat-out"}}],
        trace=data / "wdev_3.csv",
    )


@pytest.fixture(scope="module")
def usage(data: Path) -> stlsim.Comparison:
    return stlsim.compare(
        [{"layer": "cmr"}, {"layer": "swd-1234"}], trace=data / "wdev_3.csv", drive="swd-paper", usages=[0.5, 1.0]
    )


@pytest.fixture(scope="module")
def work(data: Path) -> stlsim.Analysis:
    return stlsim.analyze(data / "rsrch_1.csv", limit=2000)


@pytest.fixture(scope="module")
def hwsr() -> Any:
    return _script("hwsr_evaluation")


@pytest.fixture(scope="module")
def amphisbaena() -> Any:
    return _script("amphisbaena_evaluation")


HWSR_TRACES = ["cloudPhysicsIO.vscsi", "rsrch_1.csv"]


def _per_10k_rows(hwsr: Any, empty_bucket: bool = False) -> pd.DataFrame:
    """per_10k()'s rows as compare() gathers them: 113,000 requests of one
    trace, 13,738 of rsrch_1 (one full bucket and a shorter one)."""
    rows = []
    for trace, total in zip(HWSR_TRACES, (113_000, 13_738)):
        for k, layer in enumerate(hwsr.LAYERS):
            ends = [*range(10_000, total, 10_000), total]
            prev = 0
            for j, end in enumerate(ends):
                n = end - prev
                # rsrch_1's bucket without requests: a series point repeated.
                if empty_bucket and trace == "rsrch_1.csv" and j == 1:
                    n = 0
                mean = 1.0 + k + 0.1 * j
                rows.append({
                    "trace": trace, "layer": layer, "requests": end, "in_bucket": n,
                    "sum_s": mean * n / 1000 if n else np.nan, "mean_ms": mean if n else np.nan,
                    "segments": 0.0 if layer == "buffered-cmr" else 40.0 * (j + 1),
                })  # fmt: skip
                prev = end
    return pd.DataFrame(rows)


def _hwsr_sweep_rows(param: str, values: list[int]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"trace": t, "layer": layer, param: v, "read_ms": 0.5 + v / 40, "write_ms": 2 + v / 10 * (1 + i), "all_ms": 1 + v / 20}
            for t in HWSR_TRACES
            for i, layer in enumerate(("sblock", "hwsr"))
            for v in values
        ]
    )


def _amphisbaena_results(values: list[float]) -> dict[str, list[dict]]:
    """run()'s metrics per trace label: rsrch_1 never writes back (its RMW
    count and padding are 0 at every setting, 0/0 relative to the first)."""
    out = {}
    for label, grows in (("cloudPhysicsIO.vscsi", 1.0), ("rsrch_1.csv", 0.0), ("cloudPhysicsIO.vscsi x4", 2.0)):
        out[label] = [
            {"mean_ms": 5 + i * grows, "waf": 1 + 0.1 * i * grows, "hit": 0.5, "rmw": 10.0 * i * grows + 3 * grows,
             "padding_mib": (i + 1) * grows, "victim": 30.0 - i}  # fmt: skip
            for i, _ in enumerate(values)
        ]
    return out


def _sweep_rows() -> pd.DataFrame:
    """A sweep's rows: sub-millisecond CMR cells beside a 118 ms one."""
    rows = []
    for t, scale in (("/data/traces/cloudPhysicsIO.vscsi", 1.0), ("/data/traces/rsrch_1.csv", 0.01)):
        for layer, ms in (("cmr", 0.3), ("imr-rmw", 118.0), ("imr-dtm", 4.0)):
            for qd in (1, 32):
                rows.append({
                    "hash": f"{t}{layer}{qd}", "trace": t, "drive": "imr-paper", "layer": layer, "queue_depth": qd,
                    "mean_ms": ms * scale * (1 + qd / 64), "p99_ms": 3 * ms * scale, "waf": 1.0 if layer == "cmr" else 2.5,
                })  # fmt: skip
    return pd.DataFrame(rows)


def _fig_cases() -> list[tuple[str, Callable[..., Any], list[str], list[str], list[str] | None]]:
    """(name, draw(request) -> Figure, traces, drives, layers) for every plot kind."""
    rsrch, wdev = "rsrch_1.csv", "wdev_3.csv"
    three = ["cmr", "imr-rmw", "imr-dtm"]

    def f(fixture: str, draw: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda request: draw(request.getfixturevalue(fixture))

    return [
        ("run latency_cdf", f("queue_run", plots.run_latency_cdf_figure), [rsrch], ["imr-paper"], ["cmr"]),
        ("run tail_latency", f("queue_run", plots.run_tail_latency_figure), [rsrch], ["imr-paper"], ["cmr"]),
        ("run series", f("queue_run", plots.run_series_figure), [rsrch], ["imr-paper"], ["cmr"]),
        ("run series flat-out", f("flat_out_run", plots.run_series_figure), [rsrch], ["cmr"], ["cmr"]),
        ("run waf_series", f("queue_run", lambda r: plots.waf_series_figure([r])), [rsrch], ["imr-paper"], ["cmr"]),
        ("latency_cdf", f("imr", lambda c: plots.latency_cdf_figure(c.results)), [rsrch], ["imr-paper"], three),
        ("headline", f("imr", lambda c: plots.headline_figure(c.results)), [rsrch], ["imr-paper"], three),
        ("tail_latency", f("imr", lambda c: plots.tail_latency_figure(c.results)), [rsrch], ["imr-paper"], three),
        ("disparity", f("mixed", lambda c: plots.disparity_figure(c.results)), [wdev], ["imr-paper"], ["cmr", "imr-rmw"]),
        ("disparity_vs_cmr", f("imr", plots.disparity_vs_cmr_figure), [rsrch], ["imr-paper"], three),
        ("waf_series", f("imr", lambda c: plots.waf_series_figure(c.results)), [rsrch], ["imr-paper"], three),
        ("cache_utilisation dmsmr", f("dmsmr", lambda c: plots.cache_utilisation_figure(c.results)), [rsrch], ["dmsmr-5tb"],
         ["smr-eregion", "smr-vguard"]),  # fmt: skip
        ("by_usage", f("usage", plots.by_usage_figure), [wdev], ["swd-paper"], ["cmr", "swd-1234"]),
        ("hottest_cdf", f("work", plots.hottest_cdf_figure), [rsrch], ["imr-paper"], None),
        ("hottest_neighbours", f("work", plots.hottest_neighbours_figure), [rsrch], ["imr-paper"], None),
        ("track_frequency", f("work", plots.track_frequency_figure), [rsrch], ["imr-paper"], None),
        ("hwsr per_10k", f("hwsr", lambda m: m.per_10k_figure(_per_10k_rows(m), HWSR_TRACES)), HWSR_TRACES, ["hwsr-paper"],
         ["buffered-cmr", "sblock", "hwsr"]),  # fmt: skip
        ("hwsr block-size", f("hwsr", lambda m: m.sweep_figure(_hwsr_sweep_rows("block_sectors", [16, 32, 64]), HWSR_TRACES,
         "block_sectors")), HWSR_TRACES, ["hwsr-paper"], ["sblock", "hwsr"]),  # fmt: skip
        ("hwsr region-size", f("hwsr", lambda m: m.sweep_figure(_hwsr_sweep_rows("region_tracks", [10, 20, 40]), HWSR_TRACES,
         "region_tracks")), HWSR_TRACES, ["hwsr-paper"], ["sblock", "hwsr"]),  # fmt: skip
        ("amphisbaena chunk_sweep", f("amphisbaena", lambda m: m.sweep_figure("chunk", _amphisbaena_results(m.CHUNKS))),
         ["cloudPhysicsIO.vscsi", rsrch], ["exos-x18z"], ["amphisbaena"]),  # fmt: skip
        ("amphisbaena lambda_sweep", f("amphisbaena", lambda m: m.sweep_figure("lambda", _amphisbaena_results(m.LAMBDAS))),
         ["cloudPhysicsIO.vscsi", rsrch], ["exos-x18z"], ["amphisbaena"]),  # fmt: skip
        *[
            (f"sweep bars {metric}", lambda request, metric=metric: plots.sweep_bars_figure(_sweep_rows(), ["trace", "layer", "queue_depth"], metric),
             ["cloudPhysicsIO.vscsi", rsrch], ["imr-paper"], three)  # fmt: skip
            for metric in ("mean_ms", "p99_ms", "waf")
        ],
    ]


CASES = _fig_cases()


@pytest.mark.parametrize(("name", "draw", "traces", "drives", "layers"), CASES, ids=[c[0] for c in CASES])
def test_every_plot_kind_is_ready_for_a_paper(request, name: str, draw, traces, drives, layers) -> None:
    fig = draw(request)
    assert fig is not None, name
    problems = _paper_ready(fig, traces, drives, layers)
    assert problems == [], "\n".join([name, *problems])


def test_every_plot_the_tools_save_is_among_the_kinds_checked() -> None:
    """A new plot kind in plots.py must join the cases above."""
    checked = " ".join(c[0] for c in CASES)
    for stem in {*plots.RUN_PLOTS, *plots.COMPARISON_PLOTS, *plots.ANALYSIS_PLOTS}:
        assert stem in checked, stem


# --------------------------------------------------------------------------
# The defects of issue 35, item 7, one by one
# --------------------------------------------------------------------------


class _Filled:
    """A result whose cache series reaches a full cache (1.0), as a long run's does."""

    def __init__(self, r: stlsim.Result) -> None:
        self._r, self.label, self.report, self.config = r, r.label, r.report, r.config

    def series(self) -> pd.DataFrame:
        s = self._r.series().copy()
        for c in ("cache_active_fraction", "cache_span_fraction_of_beta", "cache_span_fraction", "map_entries_fraction"):
            if c in s.columns:
                s[c] = np.linspace(0.2, 1.0, len(s))
        return s


def test_cache_utilisation_of_a_full_cache_stops_at_one_and_keeps_its_legend_inside(dmsmr: stlsim.Comparison) -> None:
    fig = plots.cache_utilisation_figure([_Filled(r) for r in dmsmr.results])
    assert _outside(fig) == []
    (ax,) = fig.axes
    assert ax.get_ylim() == (0.0, 1.0)
    labels = [t for leg in fig.legends for t in leg.get_texts()]
    assert any("smr-vguard: log span / beta" in t.get_text() for t in labels)


def test_a_flat_out_series_leaves_out_the_disparity_and_labels_its_log_axis_plainly(flat_out_run: stlsim.Result) -> None:
    fig = plots.run_series_figure(flat_out_run)
    assert len(fig.axes) == 1, "a disparity panel of zeros"
    assert any("no" in t.get_text() and "disparity" in t.get_text() for leg in fig.legends for t in leg.get_texts())
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    fig.canvas.draw()
    labels = _drawn_tick_labels(ax.yaxis)
    assert labels, "no labels on the latency axis"
    for text in labels:
        assert re.fullmatch(r"[0-9.,]+", text), f"not a plain number: {text!r}"


def test_a_queued_series_keeps_a_disparity_that_moves(queue_run: stlsim.Result) -> None:
    assert (queue_run.series()["disparity_s"] != 0).any()
    assert len(plots.run_series_figure(queue_run).axes) == 2


def test_per_10k_draws_buckets_as_stairs_with_a_scaled_last_one_and_leaves_empty_ones_blank(hwsr: Any) -> None:
    from matplotlib.colors import to_rgb
    from matplotlib.patches import StepPatch

    fig = hwsr.per_10k_figure(_per_10k_rows(hwsr, empty_bucket=True), HWSR_TRACES)
    sums, cdf, segs = fig.axes[3:6]  # rsrch_1's row
    assert [ln for ln in sums.get_lines() if len(ln.get_xdata()) == 2] == [], "a bucket drawn as a 2-point line"
    steps = [p for p in sums.patches if isinstance(p, StepPatch)]
    hwsr_steps = [p.get_data() for p in steps if p.get_edgecolor()[:3] == pytest.approx(to_rgb(hwsr.COLOURS["hwsr"]))]
    values = np.concatenate([d.values for d in hwsr_steps])
    assert np.isnan(values[-1]), "a bucket without requests drawn as 0"
    assert values[0] == pytest.approx(3.0 * 10)  # hwsr's mean 3 ms x 10,000 requests
    assert cdf.get_ylim() == (0.0, 1.0)
    (line, *_) = cdf.get_lines()
    assert line.get_ydata()[0] == 0.0 and line.get_ydata()[-1] == 1.0
    notes = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "rsrch_1.csv: buckets without requests left blank" in notes
    # The first trace's last bucket holds 3,000 requests: its sum is scaled to 10,000.
    first = hwsr.per_10k_figure(_per_10k_rows(hwsr), HWSR_TRACES)
    dashed = [p for p in first.axes[0].patches if isinstance(p, StepPatch) and p.get_linestyle() == "--"]
    assert dashed and dashed[-1].get_data().values[0] == pytest.approx((3.0 + 1.1) * 10)
    assert any("last bucket 3,000 requests, scaled to 10,000" in t.get_text() for leg in first.legends for t in leg.get_texts())


def test_chunk_sweep_leaves_out_a_ratio_to_zero_and_says_so(amphisbaena: Any) -> None:
    fig = amphisbaena.sweep_figure("chunk", _amphisbaena_results(amphisbaena.CHUNKS))
    rmw = next(ax for ax in fig.axes if ax.get_title().startswith("RMW"))
    assert sorted(ln.get_label() for ln in rmw.get_lines()) == ["cloudPhysicsIO.vscsi", "cloudPhysicsIO.vscsi x4"]
    for ax in fig.axes:
        assert ax.get_xlabel() == "chunk size (KiB)"
    notes = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "RMW write-backs: 0 at 64 KiB on rsrch_1.csv, no ratio (not drawn)" in notes
    assert "drive exos-x18z" in fig.get_suptitle() and "layer amphisbaena" in fig.get_suptitle()


def test_sweep_bars_show_a_submillisecond_bar_beside_a_118_ms_one() -> None:
    fig = plots.sweep_bars_figure(_sweep_rows(), ["trace", "layer", "queue_depth"], "mean_ms")
    assert [ax.get_title() for ax in fig.axes] == ["cloudPhysicsIO.vscsi", "rsrch_1.csv"]  # a panel per trace
    for ax in fig.axes:
        assert ax.get_yscale() == "log"
        assert ax.get_ylabel().startswith("mean latency (ms")
        heights = [p.get_height() for p in ax.patches]
        low, high = ax.get_ylim()
        # The smallest bar rises a visible part of the axis above its bottom.
        assert (np.log(min(heights)) - np.log(low)) / (np.log(high) - np.log(low)) > 0.05
    waf = plots.sweep_bars_figure(_sweep_rows(), ["trace", "layer", "queue_depth"], "waf")
    assert waf.axes[0].get_yscale() == "linear" and waf.axes[0].get_ylabel() == "WAF (media / host sectors written)"


def test_the_sweep_report_saves_its_bars(tmp_path: Path) -> None:
    path = html_report._sweep_bars(_sweep_rows(), ["trace", "layer", "queue_depth"], "p99_ms", tmp_path / "b.png")
    assert path is not None and path.read_bytes().startswith(b"\x89PNG")
    assert html_report._sweep_bars(_sweep_rows().iloc[0:0], ["layer"], "p99_ms", tmp_path / "c.png") is None
