"""Plots of results and of workload analyses, drawn with matplotlib's Agg canvas.

No pyplot and no global backend switch: each plot is a standalone
:class:`~matplotlib.figure.Figure` on a ``FigureCanvasAgg``, so plotting works
without a display and does not disturb a notebook's own backend.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .analysis import Analysis
    from .result import Comparison, Result

__all__ = [
    "by_usage",
    "disparity",
    "disparity_vs_cmr",
    "headline",
    "hottest_cdf",
    "hottest_neighbours",
    "latency_cdf",
    "track_frequency",
    "waf_series",
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


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    fig.savefig(p, dpi=120)
    return p


def latency_cdf(results: Sequence[Result], path: str | os.PathLike[str], which: str = "all") -> Path:
    """CDF of request latency (``which``: all, read or write) per run, log x axis."""
    fig = _figure(7.0, 4.5)
    ax = fig.add_subplot()
    drawn = False
    for r in results:
        df = r.latency_cdf(which)
        df = df[df["latency_ms"] > 0]
        if df.empty:
            continue
        ax.step(df["latency_ms"], df["fraction"], where="post", label=r.label)
        drawn = True
    if drawn:
        ax.set_xscale("log")
        ax.legend(loc="lower right")
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0.0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(f"Latency CDF ({which} requests)")
    return _save(fig, path)


def headline(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Bar charts of WAF, mean, p99 and p99.9 latency per run."""
    panels = [
        ("waf", "WAF", "media / host sectors written"),
        ("mean_ms", "mean latency", "ms"),
        ("p99_ms", "p99 latency", "ms"),
        ("p999_ms", "p99.9 latency", "ms"),
    ]
    labels = [r.label for r in results]
    summaries = [r.summary for r in results]
    fig = _figure(max(8.0, 2.2 * len(panels) + 0.5 * len(results)), 3.8)
    axes = fig.subplots(1, len(panels))
    colors = [f"C{i % 10}" for i in range(len(results))]
    for ax, (key, title, unit) in zip(axes, panels):
        values = [float(s[key]) if s[key] is not None else math.nan for s in summaries]
        ax.bar(range(len(values)), values, color=colors)
        ax.set_xticks(range(len(values)), labels, rotation=30, ha="right")
        ax.set_title(title)
        ax.set_ylabel(unit)
        ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def tail_latency(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Grouped bars of p90, p99, p99.9 and max latency per run, log scale
    (the form of paper 003's Figures 2 and 6)."""
    keys = [("p90_ms", "p90"), ("p99_ms", "p99"), ("p999_ms", "p99.9"), ("max_ms", "max")]
    fig = _figure(max(7.0, 1.2 * len(keys) * max(1, len(results)) ** 0.5 + 3), 4.2)
    ax = fig.subplots()
    width = 0.8 / max(1, len(results))
    for i, r in enumerate(results):
        values = [float(r.summary[k]) if r.summary[k] is not None else math.nan for k, _ in keys]
        xs = [j + (i - (len(results) - 1) / 2) * width for j in range(len(keys))]
        ax.bar(xs, values, width=width, label=r.label, color=f"C{i % 10}")
    ax.set_xticks(range(len(keys)), [t for _, t in keys])
    ax.set_yscale("log")
    ax.set_ylabel("latency, ms")
    ax.set_title("tail latency")
    ax.grid(True, axis="y", alpha=0.3, which="both")
    ax.legend()
    return _save(fig, path)


def cache_utilisation(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Persistent-cache use over the run (paper 003 Figure 3): tracks
    active (holding live data) and the log's span, as fractions; runs of
    layers without a persistent cache are left out."""
    fig = _figure(9.0, 4.2)
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
    ax.set_title("persistent cache utilisation")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return _save(fig, path)


def disparity(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """Issue-time disparity (issued time minus trace time) over the run, per run."""
    fig = _figure(7.0, 4.5)
    ax = fig.add_subplot()
    drawn = False
    for r in results:
        s = r.series()
        if s.empty:
            continue
        ax.plot(s["requests"], s["disparity_s"], label=r.label)
        drawn = True
    if drawn:
        ax.legend(loc="upper left")
    ax.set_xlabel("requests completed")
    ax.set_ylabel("issue-time disparity (s)")
    ax.grid(True, alpha=0.3)
    ax.set_title("Issue-time disparity")
    return _save(fig, path)


def disparity_vs_cmr(comparison: Comparison, path: str | os.PathLike[str]) -> Path:
    """Each run's issue-time disparity minus the CMR run's over the run (paper 000 Figure 13)."""
    df = comparison.disparity_vs_cmr()
    fig = _figure(7.0, 4.5)
    ax = fig.add_subplot()
    drawn = False
    for label, part in df.groupby("label", sort=False):
        ax.plot(part["requests"], part["disparity_vs_cmr_s"], label=str(label))
        drawn = True
    if drawn:
        ax.legend(loc="upper left")
    ax.axhline(0.0, color="0.5", lw=0.8)
    ax.set_xlabel("requests completed")
    ax.set_ylabel("issue-time disparity minus CMR's (s)")
    ax.grid(True, alpha=0.3)
    ax.set_title("Issue-time disparity relative to CMR")
    return _save(fig, path)


def by_usage(comparison: Comparison, path: str | os.PathLike[str]) -> Path:
    """Paper 002's Figure 3: average response time (top, log scale) and average
    WAR (bottom) of every configuration at every usage level, grouped bars."""
    df = comparison.by_usage()
    fig = _figure(8.0, 6.5)
    top, bottom = fig.subplots(2, 1, sharex=True)
    levels = sorted(df["usage"].unique())
    configs = list(dict.fromkeys(df["config"]))
    width = 0.8 / max(len(configs), 1)
    for i, cfg in enumerate(configs):
        sub = df[df["config"] == cfg].set_index("usage")
        xs = [k + (i - (len(configs) - 1) / 2) * width for k in range(len(levels))]
        top.bar(xs, [sub["mean_ms"].get(u, math.nan) for u in levels], width, label=cfg)
        bottom.bar(xs, [sub["war"].get(u, math.nan) for u in levels], width, label=cfg)
    top.set_ylabel("average response time (ms)")
    if len(df) and (df["mean_ms"] > 0).all():
        top.set_yscale("log")
    bottom.set_ylabel("average WAR (requests per write)")
    bottom.axhline(1.0, color="grey", linewidth=0.6)
    bottom.set_xticks(range(len(levels)), [f"{100 * u:g}%" for u in levels])
    bottom.set_xlabel("space usage")
    fig.legend(*top.get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    top.set_title("Response time and write amplification by usage level (paper 002 Figure 3)")
    return _save(fig, path)


def waf_series(results: Sequence[Result], path: str | os.PathLike[str]) -> Path:
    """WAF per window of host writes (solid) and cumulative (dashed), per run."""
    fig = _figure(7.0, 4.5)
    ax = fig.add_subplot()
    drawn = False
    for i, r in enumerate(results):
        df = r.waf_series()
        if df.empty:
            continue
        color = f"C{i % 10}"
        ax.plot(df["host_writes"], df["waf"], color=color, label=r.label, drawstyle="steps-pre")
        ax.plot(df["host_writes"], df["waf_cumulative"], color=color, ls="--", lw=1.0)
        drawn = True
    if drawn:
        ax.legend(loc="upper right", title="window (dashed: cumulative)", fontsize=9)
    ax.set_xlabel("host writes")
    ax.set_ylabel("WAF (media / stored sectors)")
    ax.grid(True, alpha=0.3)
    ax.set_title("Write amplification over the run")
    return _save(fig, path)


# --------------------------------------------------------------------------
# Workload analysis (stlsim analyze; the IMR paper's workload figures)
# --------------------------------------------------------------------------


def _workload_title(analysis: Analysis) -> str:
    return f"{Path(analysis.trace).name} on {analysis.drive.get('name', 'drive')}"


def _no_writes(ax: object) -> None:
    ax.text(0.5, 0.5, "no writes", ha="center", va="center", transform=ax.transAxes)  # type: ignore[attr-defined]


def hottest_cdf(analysis: Analysis, path: str | os.PathLike[str]) -> Path:
    """Cumulative fraction of track writes on the k hottest tracks, k = 1 .. K
    (paper Figures 2 and 10), with the hottest 10 / 100 / 1000 marked."""
    df = analysis.hottest()
    fig = _figure(7.0, 4.5)
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
    ax.set_title(
        f"Track write-count CDF, hottest {min(analysis.k, len(df)):,} tracks\n"
        f"{_workload_title(analysis)}: {analysis.track_writes:,} track writes on {analysis.tracks_written:,} tracks",
        fontsize=10,
    )
    return _save(fig, path)


def hottest_neighbours(analysis: Analysis, path: str | os.PathLike[str]) -> Path:
    """Write counts of the hottest bottom tracks T and of T-1 and T+1 as
    grouped bars (paper Figures 4 and 11)."""
    df = analysis.neighbours()
    fig = _figure(max(7.0, 0.45 * len(df) + 2.0), 4.5)
    ax = fig.add_subplot()
    which = "bottom tracks" if analysis.bottom_only else "tracks"
    if df.empty:
        _no_writes(ax)
    else:
        x = list(range(len(df)))
        w = 0.27
        left = df["left_writes"].fillna(0).astype("int64")
        right = df["right_writes"].fillna(0).astype("int64")
        ax.bar([i - w for i in x], left, w, label="T-1", color="C0")
        ax.bar(x, df["writes"], w, label=f"T (hot {which[:-1]})", color="C3")
        ax.bar([i + w for i in x], right, w, label="T+1", color="C2")
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
    ax.set_title(
        f"{len(df)} hottest {which} and their neighbours, {_workload_title(analysis)}\n"
        f"{friendly} of {len(df)} have a neighbour at least {analysis.colder} writes colder "
        "(flip-friendly; the others in grey italics)",
        fontsize=10,
    )
    return _save(fig, path)


def track_frequency(analysis: Analysis, path: str | os.PathLike[str]) -> Path:
    """Writes to each chosen track per interval of write requests (paper Figure 5)."""
    df = analysis.frequency()
    fig = _figure(7.0, 4.5)
    ax = fig.add_subplot()
    xlabel = "write requests so far"
    if df.empty:
        _no_writes(ax)
    else:
        wide = df.pivot(index="interval", columns="physical_track", values="writes")
        firsts = df.drop_duplicates("interval")
        edges = [*firsts["first_write"].tolist(), int(firsts["first_write"].iloc[-1] + firsts["interval_writes"].iloc[-1])]
        for i, t in enumerate(analysis.default_tracks()):
            where = (" (bottom)" if t % 2 == 0 else " (top)") if analysis.bottom_only else ""
            ax.stairs(wide[t].to_numpy(), edges, label=f"track {t}{where}", color=f"C{i % 10}", lw=1.8, baseline=None)
        # Room above the highest step for the legend, so it hides no data.
        cols = min(len(wide.columns), 2)
        rows = math.ceil(len(wide.columns) / cols)
        top = max(float(wide.to_numpy().max()), 1.0)
        ax.set_ylim(0, top * (1.08 + 0.1 * rows))
        ax.legend(loc="upper center", ncols=cols, fontsize=9, frameon=False)
        ax.set_xlim(0, edges[-1])
        last = int(firsts["interval_writes"].iloc[-1])
        if last < analysis.interval:
            xlabel += f" (the last interval holds {last:,} writes)"
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"writes to the track per {analysis.interval:,} writes")
    ax.grid(True, alpha=0.3)
    ax.set_title(f"Track write frequency over time, {_workload_title(analysis)}", fontsize=10)
    return _save(fig, path)
