"""Plots of results, drawn with matplotlib's Agg canvas.

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

    from .result import Result

__all__ = ["disparity", "headline", "latency_cdf"]


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
