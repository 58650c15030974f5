"""Plots of results and of workload analyses, drawn with matplotlib's Agg canvas.

No pyplot and no global backend switch: each plot is a standalone
:class:`~matplotlib.figure.Figure` on a ``FigureCanvasAgg``, so plotting works
without a display and does not disturb a notebook's own backend.

Every plot comes in two forms: ``NAME(..., path)`` saves it and returns the
path (the format follows the file name: ``.png``, ``.pdf`` or ``.svg``), and
``NAME_figure(...)`` returns the :class:`~matplotlib.figure.Figure` unsaved,
to show in a notebook or restyle. Titles name the trace, the drive and the
replay mode; bar charts carry their values; a latency CDF has its tail
(CCDF, log-log) beside it; in per-interval plots the last, shorter interval
is marked (hatched, dashed) and, where the value is a count, scaled to a
full interval.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .analysis import Analysis
    from .result import Comparison, Result

__all__ = [
    "ANALYSIS_PLOTS",
    "COMPARISON_PLOTS",
    "PLOT_FORMATS",
    "RUN_PLOTS",
    "by_usage",
    "by_usage_figure",
    "cache_utilisation",
    "cache_utilisation_figure",
    "check_plot_format",
    "disparity",
    "disparity_figure",
    "disparity_vs_cmr",
    "disparity_vs_cmr_figure",
    "headline",
    "headline_figure",
    "hottest_cdf",
    "hottest_cdf_figure",
    "hottest_neighbours",
    "hottest_neighbours_figure",
    "latency_cdf",
    "latency_cdf_figure",
    "run_context",
    "run_latency_cdf",
    "run_latency_cdf_figure",
    "run_series",
    "run_series_figure",
    "run_tail_latency",
    "run_tail_latency_figure",
    "tail_latency",
    "tail_latency_figure",
    "track_frequency",
    "track_frequency_figure",
    "value_text",
    "waf_series",
    "waf_series_figure",
]

#: The formats plots can be saved in (``--plot-format``).
PLOT_FORMATS = ("png", "pdf", "svg")

#: The plots :meth:`Comparison.save` may write (file name stems).
COMPARISON_PLOTS = (
    "latency_cdf",
    "headline",
    "tail_latency",
    "cache_utilisation",
    "disparity",
    "disparity_vs_cmr",
    "by_usage",
    "waf_series",
)

#: The plots :meth:`Result.save` writes when asked for plots (file name stems).
RUN_PLOTS = ("latency_cdf", "tail_latency", "series", "waf_series", "cache_utilisation")

#: The plots :meth:`Analysis.save` writes (file name stems).
ANALYSIS_PLOTS = ("hottest_cdf", "hottest_neighbours", "track_frequency")

#: Resolution of PNG files (the vector formats do not need one).
PNG_DPI = 150

# The hatch and line style that mark a shorter last interval.
_PARTIAL_HATCH = "//"
_PARTIAL_STYLE = "--"
_LATENCY_KEYS = (("p90_ms", "p90"), ("p99_ms", "p99"), ("p999_ms", "p99.9"), ("max_ms", "max"))


def check_plot_format(fmt: str) -> str:
    """``fmt`` if it is one of :data:`PLOT_FORMATS` (any case), else a ConfigError."""
    from .errors import ConfigError

    f = str(fmt).lower().lstrip(".")
    if f not in PLOT_FORMATS:
        raise ConfigError(f"configuration error: unknown plot format '{fmt}' (png, pdf or svg)")
    return f


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    """Save ``fig`` in the format its file name says. Text stays text in SVG
    and PDF (TrueType fonts, no Type 3: what publishers ask for), and no
    creation date is stamped in, so the same result gives the same file."""
    import matplotlib

    p = Path(path)
    fmt = check_plot_format(p.suffix or "png")
    metadata: dict[str, Any] = {
        "png": {"Software": "stlsim (matplotlib)"},
        "pdf": {"Creator": "stlsim (matplotlib)", "CreationDate": None},
        "svg": {"Creator": "stlsim (matplotlib)", "Date": None},
    }[fmt]
    with matplotlib.rc_context({"svg.fonttype": "none", "pdf.fonttype": 42, "svg.hashsalt": "stlsim"}):
        fig.savefig(p, format=fmt, dpi=PNG_DPI, metadata=metadata)
    return p


# --------------------------------------------------------------------------
# What a figure is about: trace, drive, mode
# --------------------------------------------------------------------------


def _short(text: str, most: int = 48) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _trace_name(trace: str) -> str:
    """A trace file's name (a synthetic trace's ``synth:`` text)."""
    return _short(trace if trace.startswith("synth:") else Path(trace).name)


def _mode_text(r: Result) -> str:
    rep = r.report
    mode = str(rep["mode"])
    if mode == "queue":
        return f"queue (depth {rep['queue_depth']})"
    if mode == "scaled":
        scale = (r.config.get("replay") or {}).get("scale")
        return f"scaled (x{scale:g})" if isinstance(scale, (int, float)) else "scaled"
    return mode


def _one_or_more(word: str, values: Sequence[str]) -> str:
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return f"{word} {distinct[0]}"
    return f"{word}s {', '.join(distinct)}"


def run_context(results: Sequence[Result]) -> str:
    """The line naming what the runs replayed: trace(s), drive(s), mode(s),
    e.g. ``trace rsrch_1.csv · drive imr-paper · mode queue (depth 64)``."""
    if not results:
        return "no runs"
    return " · ".join(
        (
            _one_or_more("trace", [_trace_name(str(r.report["trace"])) for r in results]),
            _one_or_more("drive", [str(r.report["drive"]["name"]) for r in results]),
            _one_or_more("mode", [_mode_text(r) for r in results]),
        )
    )


def _titled(fig: Figure, title: str, context: str) -> None:
    fig.suptitle(f"{title}\n{context}", fontsize=11)


# --------------------------------------------------------------------------
# Shared drawing helpers
# --------------------------------------------------------------------------


def value_text(v: float, integer: bool = False) -> str:
    """A bar's value, short: 1.00, 12.3, 1,234 (``integer``: a count, 83);
    '-' for a missing value."""
    if v is None or v != v:
        return "-"
    if integer:
        return f"{round(v):,}"
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a == 0:
        return "0"
    return f"{v:.2g}"


def _bar_values(
    ax: Axes, bars: Any, values: Sequence[float], *, rotate: bool = False, size: float = 8, integer: bool = False
) -> None:
    """Write each bar's value on top of it."""
    ax.bar_label(
        bars,
        labels=[value_text(v, integer) for v in values],
        padding=2,
        fontsize=size,
        rotation=90 if rotate else 0,
    )


def _headroom(ax: Axes, values: Sequence[float], *, log: bool, rotated: bool = False) -> None:
    """Room above the tallest bar for its value label."""
    finite = [v for v in values if v == v and v is not None]
    if not finite:
        return
    top = max(finite)
    if log:
        positive = [v for v in finite if v > 0]
        if positive:
            ax.set_ylim(min(positive) / 3, top * (8 if rotated else 3))
    elif top > 0:
        ax.set_ylim(0, top * (1.35 if rotated else 1.15))


def _grouped_bars(
    ax: Axes, groups: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], *, log: bool
) -> None:
    """Bars of each series side by side in each group, values on top."""
    width = 0.8 / max(1, len(series))
    rotate = len(series) > 3
    everything: list[float] = []
    for i, (label, values) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(groups))]
        bars = ax.bar(xs, values, width=width, label=label, color=f"C{i % 10}")
        _bar_values(ax, bars, values, rotate=rotate, size=7 if rotate else 8)
        everything += list(values)
    ax.set_xticks(range(len(groups)), list(groups))
    if log and any(v > 0 for v in everything if v == v):
        ax.set_yscale("log")
    _headroom(ax, everything, log=log and ax.get_yscale() == "log", rotated=rotate)


def _legend_below(fig: Figure, ax: Axes, title: str | None = None) -> None:
    """The axes' legend below the figure, where it hides no curve."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(
            handles, labels, loc="outside lower center", ncols=min(len(labels), 4), fontsize=9, frameon=False,
            title=title, title_fontsize=9,
        )  # fmt: skip


def _partial_span(ax: Axes, x0: float, x1: float, label: str | None) -> None:
    """Hatch the x range of a shorter last interval."""
    ax.axvspan(x0, x1, facecolor="none", edgecolor="0.65", hatch=_PARTIAL_HATCH, linewidth=0.0, label=label, zorder=0)


def _stairs_with_partial(
    ax: Axes, values: Sequence[float], edges: Sequence[float], partial: bool, **style: Any
) -> None:
    """Per-interval values as stairs; the last one dashed when ``partial``."""
    if not len(values):
        return
    label = style.pop("label", None)
    if partial and len(values) > 1:
        ax.stairs(values[:-1], edges[:-1], label=label, baseline=None, **style)
        ax.stairs(values[-1:], edges[-2:], baseline=None, linestyle=_PARTIAL_STYLE, **style)
    elif partial:
        ax.stairs(values, edges, label=label, baseline=None, linestyle=_PARTIAL_STYLE, **style)
    else:
        ax.stairs(values, edges, label=label, baseline=None, **style)


# --------------------------------------------------------------------------
# Latency: CDF and its tail
# --------------------------------------------------------------------------


def _latency_figure(curves: Sequence[tuple[str, pd.DataFrame]], title: str, context: str) -> Figure:
    """A latency CDF (log x) and, beside it, its tail: the CCDF
    P(latency >= x) on log-log axes, with p99 and p99.9 marked."""
    import numpy as np

    fig = _figure(11.0, 4.6)
    cdf_ax, tail_ax = fig.subplots(1, 2)
    drawn = False
    lowest = 1.0
    for i, (label, df) in enumerate(curves):
        df = df[df["latency_ms"] > 0]
        if df.empty:
            continue
        color = f"C{i % 10}"
        x = df["latency_ms"].to_numpy(dtype="float64")
        f = df["fraction"].to_numpy(dtype="float64")
        cdf_ax.step(x, f, where="post", color=color, label=label)
        # P(latency >= x_i) = 1 - F(x_{i-1}): positive up to the largest latency.
        tail = 1.0 - np.concatenate(([0.0], f[:-1]))
        keep = tail > 1e-12
        tail_ax.step(x[keep], tail[keep], where="pre", color=color, label=label)
        lowest = min(lowest, float(tail[keep].min()))
        drawn = True
    if drawn:
        cdf_ax.set_xscale("log")
        tail_ax.set_xscale("log")
        tail_ax.set_yscale("log")
        tail_ax.set_ylim(lowest / 2, 1.5)
        for y, name in ((1e-2, "p99"), (1e-3, "p99.9")):
            if y >= lowest / 2:
                tail_ax.axhline(y, color="0.5", lw=0.8, ls=":")
                tail_ax.annotate(
                    name, (1.0, y), xycoords=("axes fraction", "data"), xytext=(-2, 2), textcoords="offset points",
                    ha="right", va="bottom", fontsize=8, color="0.35",
                )  # fmt: skip
        _legend_below(fig, cdf_ax)  # one legend for both panels
    else:
        for ax in (cdf_ax, tail_ax):
            ax.text(0.5, 0.5, "no requests", ha="center", va="center", transform=ax.transAxes)
    cdf_ax.set_xlabel("latency (ms, log scale)")
    cdf_ax.set_ylabel("fraction of requests with latency ≤ x")
    cdf_ax.set_ylim(0.0, 1.02)
    cdf_ax.set_title("CDF", fontsize=10)
    tail_ax.set_xlabel("latency (ms, log scale)")
    tail_ax.set_ylabel("fraction of requests with latency ≥ x (log scale)")
    tail_ax.set_title("tail: CCDF, log-log", fontsize=10)
    for ax in (cdf_ax, tail_ax):
        ax.grid(True, which="both", alpha=0.3)
    _titled(fig, title, context)
    return fig


def latency_cdf_figure(results: Sequence[Result], which: str = "all") -> Figure:
    """Latency CDF of ``which`` requests (all, read or write) per run, log x
    axis, and beside it the tail (CCDF, log-log)."""
    curves = [(r.label, r.latency_cdf(which)) for r in results]
    return _latency_figure(curves, f"Latency of {which} requests", run_context(results))


def latency_cdf(results: Sequence[Result], path: str | os.PathLike[str], which: str = "all") -> Path:
    """Save :func:`latency_cdf_figure` to ``path``."""
    return _save(latency_cdf_figure(results, which), path)


def run_latency_cdf_figure(result: Result) -> Figure:
    """One run's latency CDF and tail (CCDF, log-log), all requests, reads and writes."""
    counts = {c: result.report["latency"][c]["count"] for c in ("all", "read", "write")}
    curves = [(f"{c} ({counts[c]:,})", result.latency_cdf(c)) for c in ("all", "read", "write") if counts[c]]
    title = f"Latency of {result.label} (layer {result.report['layer']})"
    return _latency_figure(curves, title, run_context([result]))


def run_latency_cdf(result: Result, path: str | os.PathLike[str]) -> Path:
    """Save :func:`run_latency_cdf_figure` to ``path``."""
    return _save(run_latency_cdf_figure(result), path)


# --------------------------------------------------------------------------
# Bar charts
# --------------------------------------------------------------------------


def _summary_value(summary: dict[str, Any], key: str) -> float:
    v = summary.get(key)
    return math.nan if v is None else float(v)


def headline_figure(results: Sequence[Result]) -> Figure:
    """Bar charts of WAF, mean, p99 and p99.9 latency per run, values on the bars."""
    panels = [
        ("waf", "WAF", "media / host sectors written"),
        ("mean_ms", "mean latency", "ms"),
        ("p99_ms", "p99 latency", "ms"),
        ("p999_ms", "p99.9 latency", "ms"),
    ]
    labels = [r.label for r in results]
    summaries = [r.summary for r in results]
    fig = _figure(max(9.0, 2.2 * len(panels) + 0.55 * len(panels) * len(results) ** 0.8), 4.2)
    axes = fig.subplots(1, len(panels))
    colors = [f"C{i % 10}" for i in range(len(results))]
    rotate = len(results) > 4
    for ax, (key, title, unit) in zip(axes, panels):
        values = [_summary_value(s, key) for s in summaries]
        bars = ax.bar(range(len(values)), values, color=colors)
        _bar_values(ax, bars, values, rotate=rotate, size=7 if rotate else 8)
        _headroom(ax, values, log=False, rotated=rotate)
        ax.set_xticks(range(len(values)), labels, rotation=30, ha="right")
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(unit)
        ax.grid(True, axis="y", alpha=0.3)
    _titled(fig, "Write amplification and latency", run_context(results))
    return fig


def headline(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Save :func:`headline_figure` to ``path``."""
    return _save(headline_figure(results), path)


def tail_latency_figure(results: Sequence[Result]) -> Figure:
    """Grouped bars of p90, p99, p99.9 and max latency per run, log scale,
    values on the bars (the form of paper 003's Figures 2 and 6)."""
    fig = _figure(max(7.5, 1.2 * len(_LATENCY_KEYS) * max(1, len(results)) ** 0.5 + 3.5), 4.6)
    ax = fig.subplots()
    series = [(r.label, [_summary_value(r.summary, k) for k, _ in _LATENCY_KEYS]) for r in results]
    _grouped_bars(ax, [t for _, t in _LATENCY_KEYS], series, log=True)
    ax.set_ylabel("latency (ms, log scale)")
    ax.grid(True, axis="y", alpha=0.3, which="both")
    ax.legend(fontsize=9)
    _titled(fig, "Tail latency", run_context(results))
    return fig


def tail_latency(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Save :func:`tail_latency_figure` to ``path``."""
    return _save(tail_latency_figure(results), path)


def run_tail_latency_figure(result: Result) -> Figure:
    """One run's mean, p50, p90, p99, p99.9 and max latency of all requests,
    reads and writes as grouped bars, log scale, values on the bars."""
    keys = (("mean_ms", "mean"), ("p50_ms", "p50"), *_LATENCY_KEYS)
    lat = result.report["latency"]
    series = [
        (f"{c} ({lat[c]['count']:,})", [float(lat[c][k]) for k, _ in keys]) for c in ("all", "read", "write") if lat[c]["count"]
    ]
    fig = _figure(9.0, 4.6)
    ax = fig.subplots()
    _grouped_bars(ax, [t for _, t in keys], series, log=True)
    ax.set_ylabel("latency (ms, log scale)")
    ax.grid(True, axis="y", alpha=0.3, which="both")
    if series:
        ax.legend(fontsize=9)
    _titled(fig, f"Latency of {result.label} (layer {result.report['layer']})", run_context([result]))
    return fig


def run_tail_latency(result: Result, path: str | os.PathLike[str]) -> Path:
    """Save :func:`run_tail_latency_figure` to ``path``."""
    return _save(run_tail_latency_figure(result), path)


def by_usage_figure(comparison: Comparison) -> Figure:
    """Paper 002's Figure 3: average response time (top, log scale) and average
    WAR (bottom) of every configuration at every usage level, grouped bars
    with their values."""
    df = comparison.by_usage()
    fig = _figure(9.0, 7.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    levels = sorted(df["usage"].unique())
    configs = list(dict.fromkeys(df["config"]))
    groups = [f"{100 * u:g}%" for u in levels]
    ms, war = [], []
    for cfg in configs:
        sub = df[df["config"] == cfg].set_index("usage")
        ms.append((cfg, [float(sub["mean_ms"].get(u, math.nan)) for u in levels]))
        war.append((cfg, [float(sub["war"].get(u, math.nan)) for u in levels]))
    _grouped_bars(top, groups, ms, log=bool(len(df)) and bool((df["mean_ms"] > 0).all()))
    _grouped_bars(bottom, groups, war, log=False)
    top.set_ylabel("average response time (ms)")
    bottom.set_ylabel("average WAR (requests per write)")
    bottom.axhline(1.0, color="grey", linewidth=0.6)
    bottom.set_xlabel("space usage")
    for ax in (top, bottom):
        ax.grid(True, axis="y", alpha=0.3)
    fig.legend(*top.get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    _titled(fig, "Response time and write amplification by usage level (paper 002 Figure 3)", run_context(comparison.results))
    return fig


def by_usage(comparison: Comparison, path: str | os.PathLike[str]) -> Path:
    """Save :func:`by_usage_figure` to ``path``."""
    return _save(by_usage_figure(comparison), path)


# --------------------------------------------------------------------------
# Over the run
# --------------------------------------------------------------------------


def cache_utilisation_figure(results: Sequence[Result]) -> Figure:
    """Persistent-cache use over the run (paper 003 Figure 3): tracks
    active (holding live data) and the log's span, as fractions; runs of
    layers without a persistent cache are left out."""
    fig = _figure(9.0, 4.4)
    ax = fig.subplots()
    for i, r in enumerate(results):
        s = r.series()
        color = f"C{i % 10}"
        if "cache_active_fraction" in s.columns:
            ax.plot(s["requests"], s["cache_active_fraction"], color=color, label=f"{r.label}: active tracks / cache")
        if "cache_span_fraction_of_beta" in s.columns:
            ax.plot(s["requests"], s["cache_span_fraction_of_beta"], color=color, linestyle="--", label=f"{r.label}: log span / beta")
        elif "cache_span_fraction" in s.columns:
            ax.plot(s["requests"], s["cache_span_fraction"], color=color, linestyle="--", label=f"{r.label}: log span / log")
        if "map_entries_fraction" in s.columns:
            ax.plot(s["requests"], s["map_entries_fraction"], color=color, linestyle=":", label=f"{r.label}: map entries / limit")
    ax.set_xlabel("requests")
    ax.set_ylabel("fraction")
    ax.grid(True, alpha=0.3)
    _legend_below(fig, ax)
    _titled(fig, "Persistent cache utilisation", run_context(results))
    return fig


def cache_utilisation(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Save :func:`cache_utilisation_figure` to ``path``."""
    return _save(cache_utilisation_figure(results), path)


def disparity_figure(results: Sequence[Result]) -> Figure:
    """Issue-time disparity (issued time minus trace time) over the run, per run."""
    fig = _figure(7.5, 4.8)
    ax = fig.add_subplot()
    drawn = False
    for r in results:
        s = r.series()
        if s.empty:
            continue
        ax.plot(s["requests"], s["disparity_s"], label=r.label)
        drawn = True
    if drawn:
        _legend_below(fig, ax)
    ax.set_xlabel("requests completed")
    ax.set_ylabel("issue-time disparity (s)")
    ax.grid(True, alpha=0.3)
    _titled(fig, "Issue-time disparity", run_context(results))
    return fig


def disparity(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Save :func:`disparity_figure` to ``path``."""
    return _save(disparity_figure(results), path)


def disparity_vs_cmr_figure(comparison: Comparison) -> Figure:
    """Each run's issue-time disparity minus the CMR run's over the run (paper 000 Figure 13)."""
    df = comparison.disparity_vs_cmr()
    fig = _figure(7.5, 4.8)
    ax = fig.add_subplot()
    drawn = False
    for label, part in df.groupby("label", sort=False):
        ax.plot(part["requests"], part["disparity_vs_cmr_s"], label=str(label))
        drawn = True
    if drawn:
        _legend_below(fig, ax)
    ax.axhline(0.0, color="0.5", lw=0.8)
    ax.set_xlabel("requests completed")
    ax.set_ylabel("issue-time disparity minus CMR's (s)")
    ax.grid(True, alpha=0.3)
    _titled(fig, "Issue-time disparity relative to CMR", run_context(comparison.results))
    return fig


def disparity_vs_cmr(comparison: Comparison, path: str | os.PathLike[str]) -> Path:
    """Save :func:`disparity_vs_cmr_figure` to ``path``."""
    return _save(disparity_vs_cmr_figure(comparison), path)


def _window_edges(ends: Sequence[int]) -> list[float]:
    return [0.0, *(float(e) for e in ends)]


def waf_series_figure(results: Sequence[Result]) -> Figure:
    """WAF per window of ``waf_every`` host writes (solid stairs) and of the
    run so far (dotted), per run. A shorter last window (the run ended
    inside it) is dashed over a hatched band: its WAF is a ratio, so it is
    not rescaled, but it rests on fewer writes."""
    fig = _figure(7.5, 4.8)
    ax = fig.add_subplot()
    drawn = False
    partials: dict[tuple[float, float], str] = {}
    for i, r in enumerate(results):
        df = r.waf_series()
        if df.empty:
            continue
        color = f"C{i % 10}"
        every = int(r.report.get("waf_every") or 0)
        edges = _window_edges(df["host_writes"].tolist())
        last = edges[-1] - edges[-2]
        partial = bool(every) and last < every
        _stairs_with_partial(ax, df["waf"].to_numpy(), edges, partial, color=color, label=r.label, lw=1.6)
        ax.plot(df["host_writes"], df["waf_cumulative"], color=color, ls=":", lw=1.2)
        if partial:
            partials.setdefault((edges[-2], edges[-1]), f"last window: {last:,.0f} of {every:,} host writes (dashed)")
        drawn = True
    for (x0, x1), text in partials.items():
        _partial_span(ax, x0, x1, text)
    if drawn:
        _legend_below(fig, ax, "WAF per window (solid), cumulative (dotted)")
    ax.set_xlabel("host writes")
    ax.set_ylabel("WAF (media / stored sectors)")
    ax.grid(True, alpha=0.3)
    _titled(fig, "Write amplification over the run", run_context(results))
    return fig


def waf_series(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Save :func:`waf_series_figure` to ``path``."""
    return _save(waf_series_figure(results), path)


def run_series_figure(result: Result) -> Figure:
    """One run over time: mean latency of all requests, reads and writes per
    interval of ``series_every`` requests (log scale; top) and the
    issue-time disparity (bottom). A shorter last interval is dashed over a
    hatched band: its values are means, so they are not rescaled, but they
    rest on fewer requests."""
    s = result.series()
    every = int((result.config.get("replay") or {}).get("series_every") or 0)
    fig = _figure(8.0, 6.4)
    top, bottom = fig.subplots(2, 1, sharex=True)
    if s.empty:
        for ax in (top, bottom):
            ax.text(0.5, 0.5, "no requests", ha="center", va="center", transform=ax.transAxes)
    else:
        edges = _window_edges(s["requests"].tolist())
        last = edges[-1] - edges[-2]
        # A long run's points cover more requests than asked (the series is
        # capped: docs/cli.md): the full windows' length is what was given.
        every = max([every] + [b - a for a, b in zip(edges[:-2], edges[1:-1])])
        partial = bool(every) and last < every
        positive = False
        for column, label, color in (
            ("mean_latency_ms", "mean, all", "C0"),
            ("mean_read_latency_ms", "mean, reads", "C1"),
            ("mean_write_latency_ms", "mean, writes", "C2"),
            ("max_latency_ms", "max, all", "0.6"),
        ):
            if column not in s.columns or s[column].isna().all():
                continue
            width = 1.0 if column == "max_latency_ms" else 1.6
            _stairs_with_partial(top, s[column].to_numpy(), edges, partial, color=color, label=label, lw=width)
            positive = positive or bool((s[column] > 0).any())
        if positive:
            top.set_yscale("log")
        bottom.plot(s["requests"], s["disparity_s"], color="C3")
        if partial:
            note = f"last interval: {last:,.0f} of {every:,} requests (dashed)"
            _partial_span(top, edges[-2], edges[-1], note)
            _partial_span(bottom, edges[-2], edges[-1], None)
        _legend_below(fig, top)
        bottom.set_xlim(0, edges[-1])
    top.set_ylabel(f"latency per {every:,} requests\n(ms, log scale)" if every else "latency (ms, log scale)")
    bottom.set_ylabel("issue-time disparity (s)")
    bottom.set_xlabel("requests completed")
    for ax in (top, bottom):
        ax.grid(True, which="both", alpha=0.3)
    _titled(fig, f"{result.label} over the run (layer {result.report['layer']})", run_context([result]))
    return fig


def run_series(result: Result, path: str | os.PathLike[str]) -> Path:
    """Save :func:`run_series_figure` to ``path``."""
    return _save(run_series_figure(result), path)


# --------------------------------------------------------------------------
# Workload analysis (stlsim analyze; the IMR paper's workload figures)
# --------------------------------------------------------------------------


def _workload_title(analysis: Analysis) -> str:
    return f"trace {_trace_name(str(analysis.trace))} · drive {analysis.drive.get('name', 'drive')} · no replay (track writes only)"


def _no_writes(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no writes", ha="center", va="center", transform=ax.transAxes)


def hottest_cdf_figure(analysis: Analysis) -> Figure:
    """Cumulative fraction of track writes on the k hottest tracks, k = 1 .. K
    (paper Figures 2 and 10), with the hottest 10 / 100 / 1000 marked."""
    df = analysis.hottest()
    fig = _figure(7.5, 4.8)
    ax = fig.add_subplot()
    if df.empty:
        _no_writes(ax)
    else:
        ax.plot(df["rank"], df["cumulative_fraction"], color="C0", lw=1.8, drawstyle="steps-post")
        for k in (10, 100, 1000):
            if k <= len(df):
                y = float(df["cumulative_fraction"].iloc[k - 1])
                ax.plot([k], [y], "o", color="C3", ms=5)
                ax.annotate(
                    f"top {k:,}: {100 * y:.1f}%", (k, y), textcoords="offset points", xytext=(8, -14), fontsize=9
                )
    # Up to K, or up to the last track written when fewer were (the curve is flat at 1.0 beyond).
    ax.set_xlim(0, max(1, min(analysis.k, math.ceil(1.05 * len(df)))))
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("number of hottest tracks (hottest first)")
    ax.set_ylabel("cumulative fraction of track writes")
    ax.grid(True, alpha=0.3)
    _titled(
        fig,
        f"Track write-count CDF, hottest {min(analysis.k, len(df)):,} tracks: "
        f"{analysis.track_writes:,} track writes on {analysis.tracks_written:,} tracks",
        _workload_title(analysis),
    )
    return fig


def hottest_cdf(analysis: Analysis, path: str | os.PathLike[str]) -> Path:
    """Save :func:`hottest_cdf_figure` to ``path``."""
    return _save(hottest_cdf_figure(analysis), path)


def hottest_neighbours_figure(analysis: Analysis) -> Figure:
    """Write counts of the hottest bottom tracks T and of T-1 and T+1 as
    grouped bars with their values (paper Figures 4 and 11)."""
    df = analysis.neighbours()
    fig = _figure(max(7.5, 0.5 * len(df) + 2.0), 4.8)
    ax = fig.add_subplot()
    which = "bottom tracks" if analysis.bottom_only else "tracks"
    if df.empty:
        _no_writes(ax)
    else:
        x = list(range(len(df)))
        w = 0.27
        left = df["left_writes"].fillna(0).astype("int64").tolist()
        right = df["right_writes"].fillna(0).astype("int64").tolist()
        hot = df["writes"].astype("int64").tolist()
        for xs, values, label, color in (
            ([i - w for i in x], left, "T-1", "C0"),
            (x, hot, f"T (hot {which[:-1]})", "C3"),
            ([i + w for i in x], right, "T+1", "C2"),
        ):
            bars = ax.bar(xs, values, w, label=label, color=color)
            _bar_values(ax, bars, [float(v) for v in values], rotate=True, size=6, integer=True)
        _headroom(ax, [float(v) for v in hot + left + right], log=False, rotated=True)
        ax.set_xticks(x, [f"{t}" for t in df["physical_track"]], rotation=60, ha="right", fontsize=8)
        for label, ok in zip(ax.get_xticklabels(), df["friendly"]):
            if not ok:  # no neighbour cold enough to flip with
                label.set_color("0.55")
                label.set_fontstyle("italic")
        ax.legend(loc="upper right")
        ax.set_xlim(-0.6, len(df) - 0.4)
    ax.set_xlabel(f"physical track T (hottest {which}, hottest first)")
    ax.set_ylabel("write requests")
    ax.grid(True, axis="y", alpha=0.3)
    friendly = int(df["friendly"].sum()) if not df.empty else 0
    _titled(
        fig,
        f"{len(df)} hottest {which} and their neighbours: {friendly} of {len(df)} have a neighbour at least "
        f"{analysis.colder} writes colder\n(flip-friendly; the others in grey italics)",
        _workload_title(analysis),
    )
    return fig


def hottest_neighbours(analysis: Analysis, path: str | os.PathLike[str]) -> Path:
    """Save :func:`hottest_neighbours_figure` to ``path``."""
    return _save(hottest_neighbours_figure(analysis), path)


def track_frequency_figure(analysis: Analysis) -> Figure:
    """Writes to each chosen track per interval of write requests (paper
    Figure 5). The last interval usually holds fewer writes: its counts are
    scaled to a full interval (count x interval / writes it holds) and drawn
    dashed over a hatched band, so it reads on the same per-interval axis."""
    df = analysis.frequency()
    fig = _figure(7.5, 4.8)
    ax = fig.add_subplot()
    if df.empty:
        _no_writes(ax)
    else:
        wide = df.pivot(index="interval", columns="physical_track", values="writes").astype("float64")
        firsts = df.drop_duplicates("interval")
        edges = [*firsts["first_write"].tolist(), int(firsts["first_write"].iloc[-1] + firsts["interval_writes"].iloc[-1])]
        last = int(firsts["interval_writes"].iloc[-1])
        partial = last < analysis.interval
        if partial:
            wide.iloc[-1] = wide.iloc[-1] * (analysis.interval / last)
        for i, t in enumerate(analysis.default_tracks()):
            where = (" (bottom)" if t % 2 == 0 else " (top)") if analysis.bottom_only else ""
            _stairs_with_partial(ax, wide[t].to_numpy(), edges, partial, label=f"track {t}{where}", color=f"C{i % 10}", lw=1.8)
        if partial:
            _partial_span(
                ax, edges[-2], edges[-1], f"last interval: {last:,} writes, scaled to {analysis.interval:,} (dashed)"
            )
        # Room above the highest step for the legend, so it hides no data.
        entries = len(wide.columns) + (1 if partial else 0)
        cols = min(entries, 2)
        rows = math.ceil(entries / cols)
        top = max(float(wide.to_numpy().max()), 1.0)
        ax.set_ylim(0, top * (1.08 + 0.1 * rows))
        ax.legend(loc="upper center", ncols=cols, fontsize=9, frameon=False)
        ax.set_xlim(0, edges[-1])
    ax.set_xlabel("write requests so far")
    ax.set_ylabel(f"writes to the track per {analysis.interval:,} writes")
    ax.grid(True, alpha=0.3)
    _titled(fig, "Track write frequency over time", _workload_title(analysis))
    return fig


def track_frequency(analysis: Analysis, path: str | os.PathLike[str]) -> Path:
    """Save :func:`track_frequency_figure` to ``path``."""
    return _save(track_frequency_figure(analysis), path)
