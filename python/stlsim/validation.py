"""Validation against a real drive: replay a DiskSim ``validate`` trace as
DiskSim's validation runs do and compare the simulated response times with
the ones measured on the real drive (``stlsim validate``).

**How DiskSim replays a validate trace.** Closed loop, one request at a time:
when a request completes, the driver reads the next trace line and gives it
the arrival time ``now + NEXT_US/1000`` ms, NEXT_US being the think time of
the line just completed (DiskSim 4.0, ``src/disksim_iodriver.c``,
``iodriver_access_complete``, the ``traceformat == VALIDATE`` case; the
time is set in ``src/disksim_iotrace.c``, ``iotrace_validate_get_ioreq_event``:
``new_event->time = simtime + (validate_nextinter / 1000)``). stlsim's replay
mode ``closed`` does exactly that (docs/drive-model.md).

**What DiskSim compares.** ``valid/runvalid`` runs ``rms X.outv X.outv -1 -1
1``: the simulated distribution is DiskSim's ``IOdriver Physical access time
distribution`` (with one request outstanding and no driver delays, the
request's response time), the measured one ``VALIDATE Trace access time
distribution`` (every line's SERVICE_US). Both are DiskSim statistics of
1750 buckets from ``valid/statdefs`` (``Scale/Equals: 1000/0``, ``Start 0
step 1 grow 1``: values truncated to whole microseconds; bucket boundaries
``b[0] = 0, b[i+1] = b[i] + 1 + floor(b[i]/100)`` microseconds, i.e. 1 us
wide up to 0.1 ms, then growing by 1 %), printed as CDF points (boundary in
ms with 3 decimals, cumulative fraction with 6) by
``src/disksim_stat.c`` (``stat_update``, ``stat_print_large_dist``).

**The demerit** (``src/rms.c``, ``compute_rms``; Ruemmler & Wilkes, "An
introduction to disk drive modeling", IEEE Computer 27(3), 1994): for each
cumulative fraction p = 0.0001, 0.0002, ... 1.0, the response time at which
each printed CDF reaches p (linear interpolation between its points), and the
root mean square of their difference: the RMS horizontal distance between
the two CDFs, in ms. :func:`demerit` reproduces all of it, the bucketing, the
printed precision and the floating-point steps of p included.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["DISKSIM_DEMERITS", "Validation", "demerit", "disksim_cdf", "disksim_demerit", "rms_distance", "validate"]

#: DiskSim's statdefs for "Physical access time" and "Trace access time".
DIST_BUCKETS = 1750
DIST_SCALE = 1000  # values (ms) times this, truncated: whole microseconds
#: rms.c's step in cumulative fraction.
RMS_INCR = 0.0001

#: Where :data:`DISKSIM_DEMERITS` come from.
DISKSIM_DEMERIT_SOURCE = "DiskSim 4.0 valid/runvalid"

#: DiskSim's own demerit (ms) for the drives of its validation suite, by
#: stlsim preset, with the validate trace it was measured on: the figure
#: DiskSim 4.0's ``valid/runvalid`` script expects of each run ("rms should be
#: about ..."). Recomputed here from DiskSim's own simulated distributions
#: (tests/test_validation.py, docs/validation.md *DiskSim's own outputs*).
DISKSIM_DEMERITS: dict[str, tuple[float, str]] = {
    "hp-c3323a": (0.306, "hp_c3323a.trace"),
    "hp-c2490a": (0.254, "hp_c2490a.trace"),
    "atlas10k": (0.268, "atlas10k.trace"),
    "barracuda": (0.349, "barracuda.trace"),
    "cheetah4lp": (0.318, "cheetah4LP.trace"),
}


def _trace_stem(path: str | os.PathLike[str]) -> str:
    name = Path(path).name.lower()
    for ext in (".gz", ".zst"):
        name = name.removesuffix(ext)
    return name


def disksim_demerit(drive: str, trace: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """DiskSim's published demerit for ``drive`` (a preset name), or None
    where DiskSim published none: ``{"demerit_ms", "source", "trace",
    "same_trace"}``, ``same_trace`` telling whether ``trace`` is (by its file
    name, compression aside) the one DiskSim's figure was measured on."""
    known = DISKSIM_DEMERITS.get(drive)
    if known is None:
        return None
    ms, theirs = known
    same = None if trace is None else _trace_stem(trace) == theirs.lower()
    return {"demerit_ms": ms, "source": DISKSIM_DEMERIT_SOURCE, "trace": theirs, "same_trace": same}


def _bucket_starts() -> list[int]:
    # disksim_stat.c, stat_get_large_dist: bucketval += step + (int)((abs(bucketval) * grow) / 100.0)
    starts, v = [], 0
    for _ in range(DIST_BUCKETS):
        starts.append(v)
        v += 1 + int(abs(v) * 1 / 100.0)
    return starts


_STARTS = _bucket_starts()


def disksim_cdf(values_ms: Sequence[float]) -> tuple[list[float], list[float]]:
    """The CDF points DiskSim prints for a "Physical access time" or "Trace
    access time" statistic of ``values_ms``, as ``rms`` reads them back:
    (bucket boundary in ms, cumulative fraction rounded to 6 decimals), up to
    and including the first point whose fraction reads as 1.0.

    Bucket i > 0 counts the values whose whole microseconds ``u`` satisfy
    ``b[i-1] <= u < b[i]`` (the last bucket everything above), so the point
    (b[i] ms, F) says a fraction F of the values is below b[i].
    """
    n = len(values_ms)
    if n == 0:
        raise ValueError("no values")
    counts = [0] * DIST_BUCKETS
    for v in values_ms:
        u = int(v * DIST_SCALE)  # C's (int) truncates towards zero
        if u < 0:
            i = 0
        else:
            i = min(bisect.bisect_right(_STARTS, u), DIST_BUCKETS - 1)
        counts[i] += 1
    xs: list[float] = []
    ys: list[float] = []
    dist = 0.0
    for i, c in enumerate(counts):
        dist += c / n  # accumulated as stat_print_large_dist does
        y = float(f"{dist:f}")  # printed with %f, read back with %lf
        xs.append(float(f"{_STARTS[i] / DIST_SCALE:6.3f}"))
        ys.append(y)
        if y >= 1.0:
            break
    return xs, ys


def printed_cdf(rows: Iterable[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """A distribution as DiskSim prints it (every bucket boundary, as
    :func:`disksim_cdf` gives them) from some of its printed rows ``(ms,
    cumulative fraction)``, e.g. only those with a nonzero count of a
    "Physical access time distribution" in an ``.outv`` file: a bucket left
    out keeps the cumulative fraction of the one before. Up to and including
    the first point whose fraction is 1.0."""
    cum = {f"{ms:.3f}": c for ms, c in rows}
    xs: list[float] = []
    ys: list[float] = []
    y = 0.0
    for start in _STARTS:
        key = f"{start / DIST_SCALE:.3f}"
        y = cum.get(key, y)
        xs.append(float(key))
        ys.append(y)
        if y >= 1.0:
            return xs, ys
    raise ValueError("the printed distribution never reaches 1.0")


def rms_distance(x1: Sequence[float], y1: Sequence[float], x2: Sequence[float], y2: Sequence[float]) -> float:
    """DiskSim's ``compute_rms`` (src/rms.c): the RMS over p = 0.0001 ...
    1.0 (steps of 0.0001, accumulated in floating point as rms.c does) of
    the horizontal distance between two CDFs given as points (x, cumulative
    fraction), each interpolated linearly. Both must start below the first
    p and reach 1.0."""
    if not (y1 and y2) or y1[0] >= RMS_INCR or y2[0] >= RMS_INCR or y1[-1] < 1.0 or y2[-1] < 1.0:
        raise ValueError("each CDF must start below 0.0001 and reach 1.0")
    i1 = i2 = 0
    pnt = RMS_INCR
    count = 0
    squares = 0.0
    while pnt <= 1.0:
        while y1[i1] < pnt:
            i1 += 1
        while y2[i2] < pnt:
            i2 += 1
        f = (pnt - y1[i1 - 1]) / (y1[i1] - y1[i1 - 1])
        a = x1[i1 - 1] + f * (x1[i1] - x1[i1 - 1])
        f = (pnt - y2[i2 - 1]) / (y2[i2] - y2[i2 - 1])
        b = x2[i2 - 1] + f * (x2[i2] - x2[i2 - 1])
        squares += (a - b) * (a - b)
        count += 1
        pnt += RMS_INCR
    return math.sqrt(squares / count)


def demerit(simulated_ms: Sequence[float], measured_ms: Sequence[float]) -> float:
    """DiskSim's demerit figure (ms) of simulated against measured response
    times: :func:`rms_distance` between their :func:`disksim_cdf` points."""
    return rms_distance(*disksim_cdf(simulated_ms), *disksim_cdf(measured_ms))


@dataclass
class Validation:
    """The outcome of :func:`validate`: the figures, both CDFs and per-request times."""

    drive: str
    trace: str
    #: DiskSim's demerit figure, ms.
    demerit_ms: float
    mean_simulated_ms: float
    mean_measured_ms: float
    #: Mean of (simulated - measured) over the requests, ms.
    mean_error_ms: float
    requests: int
    #: Per-request simulated and measured response times (ms), and whether
    #: each was a write, in trace order.
    simulated_ms: list[float] = field(repr=False)
    measured_ms: list[float] = field(repr=False)
    writes: list[bool] = field(repr=False, default_factory=list)
    report: dict[str, Any] = field(repr=False, default_factory=dict)

    def _error(self, write: bool) -> tuple[int, float]:
        d = [a - b for a, b, w in zip(self.simulated_ms, self.measured_ms, self.writes) if w == write]
        return len(d), (math.fsum(d) / len(d) if d else math.nan)

    @property
    def mean_read_error_ms(self) -> float:
        """Mean of (simulated - measured) over the reads, ms (NaN without reads)."""
        return self._error(False)[1]

    @property
    def mean_write_error_ms(self) -> float:
        """Mean of (simulated - measured) over the writes, ms (NaN without writes)."""
        return self._error(True)[1]

    @property
    def disksim(self) -> dict[str, Any] | None:
        """DiskSim's published demerit for this drive (:func:`disksim_demerit`), or None."""
        return disksim_demerit(self.drive, self.trace)

    @property
    def summary(self) -> dict[str, Any]:
        """The headline figures as a dict (``disksim_demerit_ms`` and
        ``disksim_demerit_source`` None where DiskSim published no figure
        for the drive)."""
        theirs = self.disksim
        return {
            "drive": self.drive,
            "trace": self.trace,
            "requests": self.requests,
            "demerit_ms": self.demerit_ms,
            "disksim_demerit_ms": None if theirs is None else theirs["demerit_ms"],
            "disksim_demerit_source": None if theirs is None else f"{theirs['source']}, on {theirs['trace']}",
            "mean_simulated_ms": self.mean_simulated_ms,
            "mean_measured_ms": self.mean_measured_ms,
            "mean_error_ms": self.mean_error_ms,
            "reads": self._error(False)[0],
            "mean_read_error_ms": self.mean_read_error_ms,
            "writes": self._error(True)[0],
            "mean_write_error_ms": self.mean_write_error_ms,
        }

    def cdfs(self) -> pd.DataFrame:
        """Both CDFs as DiskSim prints them: columns ``which`` (``simulated``
        or ``measured``), ``latency_ms`` (bucket boundary), ``fraction``."""
        import pandas as pd

        frames = []
        for which, vals in (("simulated", self.simulated_ms), ("measured", self.measured_ms)):
            x, y = disksim_cdf(vals)
            frames.append(pd.DataFrame({"which": which, "latency_ms": x, "fraction": y}))
        return pd.concat(frames, ignore_index=True)

    def figure(self) -> Figure:
        """Both response-time CDFs on one plot, the figures in its title."""
        from .plots import _figure

        fig = _figure(7.0, 4.2)
        ax = fig.add_subplot(1, 1, 1)
        df = self.cdfs()
        for which, style in (("measured", "-"), ("simulated", "--")):
            d = df[df["which"] == which]
            ax.plot(d["latency_ms"], d["fraction"], style, label=f"{which} (mean {getattr(self, 'mean_' + which + '_ms'):.3f} ms)")
        top = max(self.simulated_ms + self.measured_ms)
        ax.set_xlim(0, min(top, sorted(self.simulated_ms + self.measured_ms)[int(0.999 * (2 * self.requests - 1))]) * 1.05)
        ax.set_ylim(0, 1.0)
        ax.set_xlabel("response time (ms)")
        ax.set_ylabel("fraction of requests")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
        ax.set_title(f"{Path(self.trace).name} on {self.drive}: demerit {self.demerit_ms:.3f} ms, mean error {self.mean_error_ms:+.3f} ms", fontsize=10)
        return fig

    @staticmethod
    def output_names() -> list[str]:
        """The names of the files :meth:`save` may write in its folder (the
        plot in every format)."""
        from .plots import PLOT_FORMATS

        return ["validation.json", "validation_cdf.csv", "requests.csv", *(f"validation_cdf.{ext}" for ext in PLOT_FORMATS)]

    def save(self, out: str | os.PathLike[str], plot_format: str | None = "png") -> Path:
        """Write ``validation.json`` (figures), ``validation_cdf.csv`` (both
        CDFs), ``requests.csv`` (per-request times) and, unless
        ``plot_format`` is None, ``validation_cdf.<fmt>`` into ``out``."""
        import pandas as pd

        from .plots import _save, check_plot_format

        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        (d / "validation.json").write_text(json.dumps({**self.summary, "report": self.report}, indent=2) + "\n")
        self.cdfs().to_csv(d / "validation_cdf.csv", index=False)
        pd.DataFrame({"write": self.writes, "simulated_ms": self.simulated_ms, "measured_ms": self.measured_ms}).to_csv(d / "requests.csv", index=False)
        if plot_format is not None:
            _save(self.figure(), d / f"validation_cdf.{check_plot_format(plot_format)}")
        return d


def validate(
    drive: str | os.PathLike[str] | dict[str, Any],
    trace: str | os.PathLike[str],
    fold: bool = False,
    out: str | os.PathLike[str] | None = None,
    plot_format: str | None = None,
) -> Validation:
    """Replay a DiskSim ``validate`` trace on ``drive`` as DiskSim's
    validation does (closed loop: each request issued its think time after
    the previous one completes; layer ``cmr``; the drive's own write cache)
    and compare the simulated response times with the measured ones.

    Args:
        drive: a preset name, a drive TOML path or a dict.
        trace: a DiskSim ``validate`` trace (``.gz``/``.zst`` read too).
        fold: fold requests beyond the drive's capacity back into it (a
            drive smaller than the traced one; the comparison then means little).
        out: save the result there (:meth:`Validation.save`).
        plot_format: with ``out``, the CDF plot's format (png, pdf, svg); None: png.

    Raises:
        ConfigError, TraceFormatError, TraceIOError.
    """
    from . import api
    from .errors import TraceFormatError
    from .plots import check_plot_format
    from .result import check_output_folder

    fmt = check_plot_format(plot_format) if plot_format is not None else "png"
    if out is not None:
        api._out_path(out)
        check_output_folder(out)
    s = api.resolve_settings(
        None,
        {"trace": os.fspath(trace), "drive": drive, "layer": "cmr", "mode": "closed", "format": "disksim-validate", "fold": fold, "prefill": 0.0},
    )
    cfg = api.core_config(s)
    sim = api._open(cfg)
    sim.keep_latencies()
    while not sim.step(api.CHUNK):
        pass
    simulated, measured, writes = sim.latencies()
    if not simulated:
        raise TraceFormatError(f"{trace}: no request to replay")
    if any(math.isnan(m) for m in measured):
        raise TraceFormatError(f"{trace}: {sum(math.isnan(m) for m in measured)} request(s) have no measured response time")
    report = json.loads(sim.report_json())
    report["warnings"] = list(cfg.get(api.NOTES, [])) + list(report.get("warnings") or [])
    n = len(simulated)
    v = Validation(
        drive=str(report.get("drive", {}).get("name") or drive),
        trace=os.fspath(trace),
        demerit_ms=demerit(simulated, measured),
        mean_simulated_ms=math.fsum(simulated) / n,
        mean_measured_ms=math.fsum(measured) / n,
        mean_error_ms=math.fsum(a - b for a, b in zip(simulated, measured)) / n,
        requests=n,
        simulated_ms=list(simulated),
        measured_ms=list(measured),
        writes=list(writes),
        report=report,
    )
    if out is not None:
        v.save(out, plot_format=fmt)
    return v
