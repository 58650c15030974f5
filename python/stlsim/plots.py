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

import functools
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
    "context_line",
    "run_context",
    "run_latency_cdf",
    "run_latency_cdf_figure",
    "run_series",
    "run_series_figure",
    "run_tail_latency",
    "run_tail_latency_figure",
    "sweep_bars_figure",
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
    """The line naming what the runs replayed: trace(s), drive(s), mode(s)
    and layer(s), e.g. ``trace rsrch_1.csv · drive imr-paper · mode queue
    (depth 64) · layer cmr``."""
    if not results:
        return "no runs"
    return " · ".join(
        (
            _one_or_more("trace", [_trace_name(str(r.report["trace"])) for r in results]),
            _one_or_more("drive", [str(r.report["drive"]["name"]) for r in results]),
            _one_or_more("mode", [_mode_text(r) for r in results]),
            _one_or_more("layer", [str(r.report["layer"]) for r in results]),
        )
    )


def context_line(traces: Sequence[str], drives: Sequence[str], layers: Sequence[str], mode: str | None = None) -> str:
    """:func:`run_context`'s line from names rather than results (the
    evaluation scripts' and the sweep report's plots): ``trace(s) ... ·
    drive(s) ... · [mode ... ·] layer(s) ...``."""
    parts = [
        _one_or_more("trace", [_trace_name(str(t)) for t in traces]),
        _one_or_more("drive", [_short(Path(str(d)).name) for d in drives]),
    ]
    if mode:
        parts.append(f"mode {mode}")
    parts.append(_one_or_more("layer", [str(x) for x in layers]))
    return " · ".join(parts)


def _wrapped(text: str, most: int) -> str:
    """``text`` broken at its `` · `` separators into lines of at most
    ``most`` characters where it can be (a long context line would run off
    a narrow figure)."""
    lines: list[str] = []
    for part in text.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= most:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return "\n".join(lines)


def _titled(fig: Figure, title: str, context: str) -> None:
    # About 11 characters of 11-point text per inch of figure, less a margin.
    most = int(fig.get_figwidth() * 11)
    fig.suptitle(f"{title}\n{_wrapped(context, most)}", fontsize=11)


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
        _plain_log(ax)
    _headroom(ax, everything, log=log and ax.get_yscale() == "log", rotated=rotate)


def _legend_below(fig: Figure, ax: Axes, title: str | None = None, extra: Sequence[str] = ()) -> None:
    """The axes' legend below the figure, where it hides no curve, in as
    many columns (up to 4) as fit the figure's width; ``extra`` are notes
    shown as entries without a line."""
    handles, labels = ax.get_legend_handles_labels()
    _fitted_legend(fig, handles + [_note_handle() for _ in extra], labels + list(extra), title)


def _note_handle() -> Any:
    from matplotlib.lines import Line2D

    return Line2D([], [], linestyle="none", marker="none")


def _fitted_legend(fig: Figure, handles: list[Any], labels: list[str], title: str | None = None) -> None:
    """A legend below the figure in the most columns (up to 4) whose width
    fits inside it: long labels in four columns ran off both edges."""
    if not handles:
        return
    renderer = fig.canvas.get_renderer()
    for ncols in range(min(len(labels), 4), 0, -1):
        leg = fig.legend(
            handles, labels, loc="outside lower center", ncols=ncols, fontsize=9, frameon=False,
            title=title, title_fontsize=9,
        )  # fmt: skip
        if ncols == 1 or leg.get_window_extent(renderer).width <= 0.97 * fig.bbox.width:
            return
        leg.remove()


def _plain_log(ax: Axes, which: str = "y") -> None:
    """Label a log axis with plain numbers (6, 20, 0.01) where matplotlib
    would write 6x10^0 on an axis spanning less than a decade."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    plain = _plain_log_formatter_class()
    axis.set_major_formatter(plain())
    axis.set_minor_formatter(plain(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def _plain_number(x: float) -> str:
    if x >= 1:
        return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.6g}"
    return f"{x:.10f}".rstrip("0").rstrip(".")


def _fraction_axis(ax: Axes) -> None:
    """A y axis of fractions stops at 0 and 1, not at the margins beyond them."""
    lo, hi = ax.get_ylim()
    ax.set_ylim(max(lo, 0.0), min(hi, 1.0))


@functools.cache
def _plain_log_formatter_class() -> type:
    # Made on first use: matplotlib is imported only when a plot is drawn.
    from matplotlib.ticker import LogFormatterSciNotation

    class PlainLogFormatter(LogFormatterSciNotation):
        """Which ticks to label as matplotlib decides; the label a plain number."""

        def __call__(self, x: float, pos: int | None = None) -> str:
            text = super().__call__(x, pos)
            return _plain_number(x) if text and x > 0 else text

    return PlainLogFormatter


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
        tail_ax.set_ylim(lowest / 2, 1.0)
        _plain_log(cdf_ax, "x")
        _plain_log(tail_ax, "x")
        _plain_log(tail_ax, "y")
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
    cdf_ax.set_ylim(0.0, 1.0)
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
    return _latency_figure(curves, f"Latency of {result.label}", run_context([result]))


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
        ("mean_ms", "mean latency", "latency (ms)"),
        ("p99_ms", "p99 latency", "latency (ms)"),
        ("p999_ms", "p99.9 latency", "latency (ms)"),
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
    fig.supxlabel("run", fontsize=10)
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
    ax.set_xlabel("statistic: percentile or maximum")
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
    ax.set_xlabel("statistic: mean, percentile or maximum")
    ax.set_ylabel("latency (ms, log scale)")
    ax.grid(True, axis="y", alpha=0.3, which="both")
    if series:
        ax.legend(fontsize=9)
    _titled(fig, f"Latency of {result.label}", run_context([result]))
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
    top.set_ylabel("average response time (ms, log scale)" if top.get_yscale() == "log" else "average response time (ms)")
    bottom.set_ylabel("average WAR (requests per write)")
    bottom.axhline(1.0, color="grey", linewidth=0.6)
    bottom.set_xlabel("space usage")
    for ax in (top, bottom):
        ax.grid(True, axis="y", alpha=0.3)
    _legend_below(fig, top)
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
    left_out = []
    for i, r in enumerate(results):
        s = r.series()
        if not any(c in s.columns for c in ("cache_active_fraction", "cache_span_fraction", "map_entries_fraction")):
            left_out.append(r.label)
            continue
        color = f"C{i % 10}"
        if "cache_active_fraction" in s.columns:
            ax.plot(s["requests"], s["cache_active_fraction"], color=color, label=f"{r.label}: active tracks / cache")
        if "cache_span_fraction_of_beta" in s.columns:
            ax.plot(s["requests"], s["cache_span_fraction_of_beta"], color=color, linestyle="--", label=f"{r.label}: log span / beta")
        elif "cache_span_fraction" in s.columns:
            ax.plot(s["requests"], s["cache_span_fraction"], color=color, linestyle="--", label=f"{r.label}: log span / log")
        if "map_entries_fraction" in s.columns:
            ax.plot(s["requests"], s["map_entries_fraction"], color=color, linestyle=":", label=f"{r.label}: map entries / limit")
    ax.set_xlabel("requests completed")
    ax.set_ylabel("fraction in use")
    ax.grid(True, alpha=0.3)
    if len(left_out) == len(results):
        ax.text(0.5, 0.5, "no run's layer has a persistent cache", ha="center", va="center", transform=ax.transAxes)
    else:
        # Fractions: the axis stops at 1 (a full cache), not at a margin past it.
        ax.set_ylim(bottom=0.0)
        _fraction_axis(ax)
    notes = [f"{', '.join(left_out)}: no persistent cache"] if left_out and len(left_out) < len(results) else []
    _legend_below(fig, ax, extra=notes)
    _titled(fig, "Persistent cache utilisation", run_context(results))
    return fig


def cache_utilisation(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Save :func:`cache_utilisation_figure` to ``path``."""
    return _save(cache_utilisation_figure(results), path)


def disparity_figure(results: Sequence[Result]) -> Figure:
    """Issue-time disparity (issued time minus trace time) over the run, per run."""
    fig = _figure(7.5, 4.8)
    ax = fig.add_subplot()
    notes = []
    for i, r in enumerate(results):
        s = r.series()
        if r.report["mode"] == "flat-out":
            # Flat out, each request is issued when the drive is free: there
            # is no trace time to fall behind, so a line of zeros would mislead.
            notes.append(f"{r.label}: flat-out, no issue-time disparity")
            continue
        if s.empty:
            notes.append(f"{r.label}: no samples")
            continue
        # A short run has a point or two: a line alone would not show them.
        ax.plot(s["requests"], s["disparity_s"], label=r.label, color=f"C{i % 10}", marker="o" if len(s) < 3 else None)
    if not ax.lines:
        # Empty axes from 0 to 1 would read as data: say so, without them.
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no run has an issue-time disparity", ha="center", va="center", transform=ax.transAxes)
    else:
        ax.set_xlabel("requests completed")
        ax.set_ylabel("issue-time disparity (s)")
        ax.grid(True, alpha=0.3)
    _legend_below(fig, ax, extra=notes)
    _titled(fig, "Issue-time disparity", run_context(results))
    return fig


def disparity(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Save :func:`disparity_figure` to ``path``."""
    return _save(disparity_figure(results), path)


def disparity_vs_cmr_figure(comparison: Comparison) -> Figure:
    """Each run's issue-time disparity minus the CMR run's over the run (paper 000 Figure 13)."""
    df = comparison.disparity_vs_cmr()
    modes = {r.label: r.report["mode"] for r in comparison.results}
    fig = _figure(7.5, 4.8)
    ax = fig.add_subplot()
    notes = []
    for i, (label, part) in enumerate(df.groupby("label", sort=False)):
        if modes.get(str(label)) == "flat-out":
            # Its own disparity is 0 by definition: the difference would only be CMR's, negated.
            notes.append(f"{label}: flat-out, no issue-time disparity")
            continue
        marker = "o" if len(part) < 3 else None
        ax.plot(part["requests"], part["disparity_vs_cmr_s"], label=str(label), color=f"C{i % 10}", marker=marker)
    if not ax.lines:
        ax.text(0.5, 0.5, "no run to set against CMR's disparity", ha="center", va="center", transform=ax.transAxes)
    _legend_below(fig, ax, extra=notes)
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
    rest on fewer requests. A flat-out run has no disparity (it issues each
    request when the drive is free) and a run whose disparity stays 0 has
    nothing to show: the panel is left out and the legend says why."""
    s = result.series()
    every = int((result.config.get("replay") or {}).get("series_every") or 0)
    flat_out = result.report["mode"] == "flat-out"
    disparity = not s.empty and not flat_out and bool((s["disparity_s"].fillna(0) != 0).any())
    notes = []
    if flat_out:
        notes.append("issue-time disparity: none (flat-out replay ignores trace times)")
    elif not s.empty and not disparity:
        notes.append("issue-time disparity: 0 throughout (the drive kept up with the trace)")
    fig = _figure(8.0, 6.4 if disparity else 4.6)
    if disparity:
        top, bottom = fig.subplots(2, 1, sharex=True)
        axes = [top, bottom]
    else:
        top = bottom = fig.subplots()
        axes = [top]
    if s.empty:
        for ax in axes:
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
            _plain_log(top)
        if disparity:
            bottom.plot(s["requests"], s["disparity_s"], color="C3")
        if partial:
            note = f"last interval: {last:,.0f} of {every:,} requests (dashed)"
            _partial_span(top, edges[-2], edges[-1], note)
            if disparity:
                _partial_span(bottom, edges[-2], edges[-1], None)
        _legend_below(fig, top, extra=notes)
        bottom.set_xlim(0, edges[-1])
    top.set_ylabel(f"latency per {every:,} requests\n(ms, log scale)" if every else "latency (ms, log scale)")
    if disparity:
        bottom.set_ylabel("issue-time disparity (s)")
    bottom.set_xlabel("requests completed")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    _titled(fig, f"{result.label} over the run", run_context([result]))
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
    ax.set_ylim(0.0, 1.0)
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


# --------------------------------------------------------------------------
# A sweep's cells (stlsim report on a sweep folder)
# --------------------------------------------------------------------------

#: What a sweep's metric is called on a plot's axis, with its unit.
SWEEP_METRICS = {
    "mean_ms": ("mean latency", "mean latency (ms)"),
    "p50_ms": ("median latency", "p50 latency (ms)"),
    "p99_ms": ("p99 latency", "p99 latency (ms)"),
    "p999_ms": ("p99.9 latency", "p99.9 latency (ms)"),
    "max_ms": ("maximum latency", "max latency (ms)"),
    "waf": ("write amplification", "WAF (media / host sectors written)"),
    "iops": ("throughput", "requests per second"),
}

# Bars on a linear axis hide a value this many times smaller than the largest.
_LOG_SPREAD = 20.0


def sweep_bars_figure(rows: pd.DataFrame, axes: Sequence[str], metric: str) -> Figure | None:
    """One metric of a sweep's cells as bars with their values: a panel per
    trace, each on its own scale (log where its values spread over more than
    20x, so a 0.3 ms bar shows beside a 118 ms one), a group per combination
    of the other varying settings (``axes``), a bar per layer. None when
    there is nothing to draw, or more bars than can be read (the report's
    table has them)."""
    if rows.empty or metric not in rows.columns:
        return None
    traces = list(dict.fromkeys(rows["trace"].astype(str))) if "trace" in rows.columns else ["?"]
    keys = [a for a in axes if a not in ("layer", "trace")]
    layers = list(dict.fromkeys(rows["layer"].astype(str)))
    # Past 8 traces the panels get too narrow: one panel, the trace a setting of each group.
    panel_traces: list[str | None] = list(traces) if len(traces) <= 8 else [None]
    if panel_traces == [None]:
        keys.insert(0, "trace")

    def setting(k: str) -> str:
        return k.removeprefix("param.").replace("_", " ")

    def group(r: Any) -> str:
        if not keys:
            return str(r["layer"])
        values = [(k, _trace_name(str(r[k])) if k == "trace" else str(r[k])) for k in keys]
        if len(values) == 1:
            return values[0][1]  # the axis label names the setting
        return ", ".join(f"{setting(k)} {v}" for k, v in values)

    groups = list(dict.fromkeys(group(r) for _, r in rows.iterrows()))
    bars_per_panel = len(groups) * (len(layers) if keys else 1)
    if bars_per_panel * len(panel_traces) > 240:
        return None
    short, label = SWEEP_METRICS.get(metric, (metric, metric))
    panel_width = max(3.2, 0.42 * bars_per_panel + 1.4)
    fig = _figure(min(18.0, max(7.5, panel_width * len(panel_traces) + 0.6)), 5.0)
    panels = fig.subplots(1, len(panel_traces), squeeze=False)[0]
    width = 0.8 / max(1, len(layers)) if keys else 0.6
    for ax, trace in zip(panels, panel_traces):
        part = rows[rows["trace"].astype(str) == trace] if trace is not None and "trace" in rows.columns else rows
        everything: list[float] = []
        for i, layer in enumerate(layers):
            cells = part[part["layer"].astype(str) == layer]
            value = {group(r): float(r[metric]) for _, r in cells.iterrows() if r[metric] is not None}
            if keys:
                xs = [g + (i - (len(layers) - 1) / 2) * width for g in range(len(groups))]
                vals = [value.get(g, math.nan) for g in groups]
            else:
                xs, vals = [i], [value.get(layer, math.nan)]
            bars = ax.bar(xs, vals, width=width, label=layer, color=f"C{i % 10}")
            if bars_per_panel <= 40:
                _bar_values(ax, bars, vals, rotate=True, size=7)
            everything += vals
        positive = [v for v in everything if v == v and v > 0]
        log = bool(positive) and max(positive) / min(positive) > _LOG_SPREAD
        if log:
            ax.set_yscale("log")
            _plain_log(ax)
        _headroom(ax, everything, log=log, rotated=True)
        slanted = any(len(g) > 8 for g in groups)
        ax.set_xticks(range(len(groups)), groups, rotation=30 if slanted else 0, ha="right" if slanted else "center", fontsize=8)
        ax.set_xlabel(", ".join(setting(k) for k in keys) if keys else "layer", fontsize=9)
        ax.set_ylabel(label[:-1] + ", log scale)" if log and label.endswith(")") else label)
        ax.set_title(_trace_name(trace) if trace is not None else "every trace", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    if keys:
        _legend_below(fig, panels[0])
    drives = list(dict.fromkeys(rows["drive"].astype(str))) if "drive" in rows.columns else ["?"]
    modes = list(dict.fromkeys(rows["mode"].astype(str))) if "mode" in rows.columns else []
    context = context_line(traces, drives, layers, modes[0] if len(modes) == 1 else None)
    _titled(fig, f"{short[0].upper()}{short[1:]} of each sweep cell", context)
    return fig
