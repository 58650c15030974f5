"""Results of runs: :class:`Result` (one run) and :class:`Comparison` (several).

Everything leaves as structured data: the report as a dict (the core's JSON),
tables as pandas DataFrames, files as JSON, Parquet and CSV. pandas and
matplotlib are imported only when a DataFrame or a plot is asked for, so the
command line starts fast.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Comparison", "Result", "check_labels", "check_output_folder", "safe_label"]

LATENCY_CLASSES = ("all", "read", "write")

#: The files :meth:`Result.save` writes.
RUN_FILES = (
    "report.json",
    "config.json",
    "latency_cdf.parquet",
    "series.parquet",
    "waf_series.parquet",
    "waf_counts.json",
    "provenance.json",
)

# Series columns with their dtypes (requests is an integer count).
_SERIES_INT = ("requests",)

# A trace's SHA-256 by (path, size, modification time): a sweep or a compare
# replays one trace many times, and hashing a large one costs a second a GB.
_TRACE_SHA256: dict[tuple[str, int, int], str] = {}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def _nan(v: Any) -> Any:
    return math.nan if v is None else v


def check_output_folder(directory: str | os.PathLike[str]) -> Path:
    """Check, before any work, that results can be saved in ``directory``:
    it is a folder that can be written, or one that can be created (its
    nearest existing ancestor is a writable folder). Nothing is created.

    Raises:
        OSError: ``cannot save results in 'DIR': why`` (one line).
    """
    import tempfile

    d = Path(directory)

    def fail(why: str) -> NoReturn:
        raise OSError(f"cannot save results in '{d}': {why}")

    if d.is_symlink() and not d.exists():
        fail("it is a broken symbolic link")
    if d.exists() and not d.is_dir():
        fail("it is a file, not a folder")
    base = d
    while not base.exists() and base.parent != base:
        base = base.parent
    if not base.is_dir():
        fail(f"'{base}' is not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        fail(f"no permission to write in '{base}'")
    try:
        with tempfile.TemporaryFile(dir=base):
            pass
    except OSError as e:
        fail(f"'{base}' cannot be written ({(e.strerror or str(e)).lower()})")
    return d


def safe_label(label: str) -> str:
    """A label usable as a folder name."""
    s = re.sub(r"[^A-Za-z0-9._+-]+", "_", label).strip("._")
    return s or "run"


def check_labels(labels: Sequence[str], sources: Sequence[str] | None = None) -> None:
    """Refuse labels a comparison cannot save each in a folder of its own:
    two whose folder names (:func:`safe_label`) coincide, also
    case-insensitively as on macOS and Windows (``a/b`` and ``a_b``); one
    without an ASCII letter or digit (its folder name would be made up); one
    whose folder would be a file of the comparison itself (``summary.csv``).
    ``sources`` (one per label, e.g. the configuration file) are named in
    the message.

    Raises:
        ConfigError: naming the label(s) and their folder (one line).
    """
    from .errors import ConfigError

    def named(i: int) -> str:
        where = f" ({sources[i]})" if sources is not None and sources[i] else ""
        return f"{labels[i]!r}{where}"

    reserved = {n.casefold() for n in Comparison.output_names()}
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        folder = safe_label(label)
        if not re.search(r"[A-Za-z0-9]", label):
            raise ConfigError(f"configuration error: label {named(i)} has no ASCII letter or digit to name its folder")
        key = folder.casefold()
        if key in reserved:
            raise ConfigError(
                f"configuration error: label {named(i)} would be saved in '{folder}', a file of the comparison itself"
            )
        if key in seen:
            raise ConfigError(
                f"configuration error: labels {named(seen[key])} and {named(i)} would both be saved in folder "
                f"'{folder}'; give them distinct labels"
            )
        seen[key] = i


class Result:
    """The outcome of one run.

    Attributes:
        label: the run's name in tables and folders.
        report: the core's report (a dict; see ``docs/cli.md``).
        config: the run configuration handed to the core (a dict).
        wall_s: wall-clock seconds the run took (not part of the report, which
            holds only simulated quantities and is reproducible bit for bit).
        group: the configuration's label in a usage sweep (else the label).
        usage: the usage level of a usage sweep (a fraction), else None.
    """

    def __init__(
        self,
        label: str,
        report: dict[str, Any],
        config: dict[str, Any],
        cdfs: Mapping[str, tuple[Sequence[float], Sequence[float]]],
        series: Mapping[str, Sequence[Any]] | str,
        wall_s: float = 0.0,
        waf_series: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        self.label = label
        self.report = report
        self.config = config
        self._cdfs = {k: (list(x), list(y)) for k, (x, y) in cdfs.items()}
        # The core's JSON text of the series is decoded when first used: a
        # 10 M-request run's 10,000 points took 7 ms to decode (1 % of the
        # run), and a run that prints only its summary never reads them.
        self._series_src: dict[str, list[Any]] | str = (
            series if isinstance(series, str) else {k: list(v) for k, v in series.items()}
        )
        self._waf = {k: list(v) for k, v in (waf_series or {}).items()}
        self.wall_s = wall_s
        self.group = label
        self.usage: float | None = None

    @property
    def _series(self) -> dict[str, list[Any]]:
        """The series' columns (decoded from the core's JSON on first use)."""
        if isinstance(self._series_src, str):
            self._series_src = {k: list(v) for k, v in json.loads(self._series_src).items()}
        return self._series_src

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<Result {self.label!r}: layer {s['layer']}, {s['requests']} requests, "
            f"WAF {s['waf']:.3f}, mean {s['mean_ms']:.3f} ms>"
        )

    @property
    def summary(self) -> dict[str, Any]:
        """Headline figures (one row of a comparison table), then the layer's own counters.

        Latency figures of a class with no requests (e.g. reads of a write-only
        trace) are NaN.
        """
        r = self.report
        lat = {
            cls: {k: (v if s["count"] or k == "count" else math.nan) for k, v in s.items()}
            for cls, s in r["latency"].items()
        }
        out: dict[str, Any] = {
            "label": self.label,
            "layer": r["layer"],
            "drive": r["drive"]["name"],
            "mode": r["mode"],
            "requests": r["host"]["requests"],
            "reads": r["host"]["reads"],
            "writes": r["host"]["writes"],
            "waf": r["waf"],
            "war": r.get("war", 1.0),
            "io_amplification": r["io_amplification"],
            "mean_ms": lat["all"]["mean_ms"],
            "p50_ms": lat["all"]["p50_ms"],
            "p90_ms": lat["all"]["p90_ms"],
            "p99_ms": lat["all"]["p99_ms"],
            "p999_ms": lat["all"]["p999_ms"],
            "max_ms": lat["all"]["max_ms"],
            "read_mean_ms": lat["read"]["mean_ms"],
            "write_mean_ms": lat["write"]["mean_ms"],
            "simulated_s": r["simulated_s"],
            "iops": r["iops"],
            "final_disparity_s": r["final_disparity_s"],
            "crashes": r["crashes"],
            "clean_bands": _nan(r["layer_counters"].get("clean_bands")),
            "write_hit_rate": _nan(r["layer_counters"].get("write_hit_rate")),
            "writebacks_rmw": _nan(r["layer_counters"].get("writebacks_rmw")),
            "writebacks_rmw_free": _nan(r["layer_counters"].get("writebacks_rmw_free")),
            "waf_excluding_moves": r.get("waf_excluding_moves", r["waf"]),
            "waf_per_host_sector": r.get("waf_per_host_sector", r["waf"]),
            "moves_per_host_sector": r.get("moves_per_host_sector", 0.0),
            "waf_steady": _nan(r.get("waf_steady")),
            "intervals_completed": r.get("intervals_completed"),
            "prefill": (r.get("prefill") or {}).get("spec", 0.0),
        }
        for group, v in (r.get("waf_by_group") or {}).items():
            out[f"waf_{group}"] = v
        # The drive's own cache beneath a host-side layer (absent: NaN).
        dc = r["device"].get("drive_cache") or {}
        for k in ("absorbed_sectors", "read_hit_sectors", "read_hits", "flushes", "destaged_sectors", "reordered"):
            out[f"drive_cache_{k}"] = dc.get(k, math.nan)
        bg = r.get("background") or {}
        out["stages"] = bg.get("stages", 0)
        out["stages_aborted"] = bg.get("aborted", 0)
        out["stages_postponed"] = bg.get("postponed", 0)
        out["stage_wait_s"] = bg.get("host_wait_s", 0.0)
        out["warnings"] = "; ".join(r.get("warnings") or [])
        for k, v in r.get("layer_counters", {}).items():
            out[k if k not in out else f"layer.{k}"] = v
        return out

    def latency_cdf(self, which: str = "all") -> pd.DataFrame:
        """The latency CDF of ``which`` (all, read or write): columns latency_ms, fraction (ascending)."""
        import pandas as pd

        from .errors import ConfigError

        if which not in self._cdfs:
            raise ConfigError(f"configuration error: no latency class '{which}' (all, read, write)")
        x, y = self._cdfs[which]
        return pd.DataFrame({"latency_ms": pd.Series(x, dtype="float64"), "fraction": pd.Series(y, dtype="float64")})

    def series(self) -> pd.DataFrame:
        """Per-N-request series: requests, issue_s, mean/read/write/max latency (ms), disparity_s.

        A bucket with no reads (or writes) has NaN as its read (write) mean.
        """
        import pandas as pd

        cols = {}
        for k, v in self._series.items():
            if k in _SERIES_INT:
                cols[k] = pd.Series(v, dtype="int64")
            else:
                cols[k] = pd.Series([math.nan if x is None else x for x in v], dtype="float64")
        return pd.DataFrame(cols)

    def waf_series(self) -> pd.DataFrame:
        """WAF as the run went, one row per ``waf_every`` host writes (and one at the end):
        host_writes, the cumulative sector counts layer_write_sectors,
        media_write_sectors and move_write_sectors, and the WAF of the window
        since the previous row (``waf``), of the run so far
        (``waf_cumulative``) and of the window without background moves
        (``waf_excluding_moves``). Windows that stored nothing are NaN.
        """
        import pandas as pd

        return pd.DataFrame(self._waf_columns())

    def _waf_columns(self) -> dict[str, Any]:
        """The columns of :meth:`waf_series` as numpy arrays."""
        import numpy as np

        cols = ("host_writes", "layer_write_sectors", "media_write_sectors", "move_write_sectors")
        # The core's series starts with the run's start (all zeros); each later point closes a window.
        full = {c: np.asarray(self._waf.get(c, []), dtype="int64") for c in cols}
        out: dict[str, Any] = {c: v[1:] for c, v in full.items()}
        stored, media, moves = (np.diff(full[c]).astype("float64") for c in cols[1:])
        total = out["layer_write_sectors"].astype("float64")
        with np.errstate(divide="ignore", invalid="ignore"):
            out["waf"] = np.where(stored > 0, media / stored, np.nan)
            out["waf_excluding_moves"] = np.where(stored > 0, (media - moves) / stored, np.nan)
            out["waf_cumulative"] = np.where(total > 0, out["media_write_sectors"].astype("float64") / total, np.nan)
        return out

    def counters_by_cause(self) -> pd.DataFrame:
        """Physical work by cause: read/write ops, sectors and bytes, busy seconds, seeks."""
        import pandas as pd

        rows = self.report["device"]["by_cause"]
        sb = self.report["drive"]["sector_bytes"]
        cols = ["cause", "read_ops", "read_sectors", "write_ops", "write_sectors", "busy_s", "seeks"]
        df = pd.DataFrame(rows, columns=cols)
        df["read_bytes"] = df["read_sectors"].astype("int64") * sb
        df["write_bytes"] = df["write_sectors"].astype("int64") * sb
        return df

    @staticmethod
    def output_names() -> list[str]:
        """The names of the files :meth:`save` may write in its folder (the
        plots in every format)."""
        from .plots import PLOT_FORMATS, RUN_PLOTS

        return [*RUN_FILES, *(f"{p}.{ext}" for p in RUN_PLOTS for ext in PLOT_FORMATS)]

    def save(self, directory: str | os.PathLike[str], plot_format: str | None = None) -> Path:
        """Write report.json, config.json, latency_cdf.parquet (class, latency_ms, fraction),
        series.parquet, waf_series.parquet, waf_counts.json and provenance.json
        into ``directory`` (created); with ``plot_format`` (png, pdf or svg)
        also the plots of :meth:`plot`. Returns the folder."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from .plots import check_plot_format

        fmt = None if plot_format is None else check_plot_format(plot_format)
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "report.json").write_text(json.dumps(self.report, indent=2) + "\n", encoding="utf-8")
        (d / "config.json").write_text(json.dumps(self.config, indent=2) + "\n", encoding="utf-8")
        # Arrow tables straight from the core's lists: a sweep saves every
        # cell, and going through pandas took longer than a short simulation.
        classes, xs, ys = [], [], []
        for c in LATENCY_CLASSES:
            x, y = self._cdfs[c]
            classes += [c] * len(x)
            xs += x
            ys += y
        pq.write_table(
            pa.table({"class": pa.array(classes, pa.string()), "latency_ms": pa.array(xs, pa.float64()), "fraction": pa.array(ys, pa.float64())}),
            d / "latency_cdf.parquet",
        )
        pq.write_table(
            pa.table({k: pa.array(v, pa.int64() if k in _SERIES_INT else pa.float64()) for k, v in self._series.items()}),
            d / "series.parquet",
        )
        pq.write_table(pa.table(self._waf_columns()), d / "waf_series.parquet")
        # The cumulative WAF counters as the core gave them, for load().
        (d / "waf_counts.json").write_text(json.dumps(self._waf) + "\n", encoding="utf-8")
        (d / "provenance.json").write_text(json.dumps(self.provenance(), indent=2) + "\n", encoding="utf-8")
        if fmt is not None:
            self.plot(d, fmt)
        return d

    def plot(self, directory: str | os.PathLike[str], plot_format: str = "png") -> list[Path]:
        """Write this run's plots into ``directory`` (created) as png, pdf or svg:
        latency_cdf (CDF of all requests, reads and writes, with the tail as a
        log-log CCDF beside it), tail_latency (mean, p50 ... max per class,
        values on the bars), series (mean latency per interval and the
        issue-time disparity over the run), waf_series (WAF per window) and,
        for a layer with a persistent cache, cache_utilisation. Returns the
        files written."""
        from . import plots

        fmt = plots.check_plot_format(plot_format)
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        written = [
            plots.run_latency_cdf(self, d / f"latency_cdf.{fmt}"),
            plots.run_tail_latency(self, d / f"tail_latency.{fmt}"),
            plots.run_series(self, d / f"series.{fmt}"),
            plots.waf_series([self], d / f"waf_series.{fmt}"),
        ]
        if "cache_span_tracks" in self.series().columns:
            written.append(plots.cache_utilisation([self], d / f"cache_utilisation.{fmt}"))
        return written

    def provenance(self) -> dict[str, Any]:
        """What it takes to reproduce the run: stlsim's version and git commit
        (when built from a checkout), the trace's path, size and SHA-256, the
        label, the wall time and the host. The resolved configuration is
        :attr:`config` (saved as config.json)."""
        import hashlib
        import platform

        from . import _core

        trace = self.config.get("trace", {}).get("path", "")
        info: dict[str, Any] = {"path": trace}
        p = Path(trace)
        if trace and p.is_file():
            st = p.stat()
            key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
            digest = _TRACE_SHA256.get(key)
            if digest is None:
                h = hashlib.sha256()
                with p.open("rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                digest = _TRACE_SHA256[key] = h.hexdigest()
            info.update(size_bytes=st.st_size, sha256=digest)
        return {
            "stlsim_version": _core.__version__,
            "git_commit": getattr(_core, "__commit__", "") or None,
            "label": self.label,
            "trace": info,
            "wall_s": self.wall_s,
            "host": platform.node(),
            "python": platform.python_version(),
        }

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Result:
        """Bring back a result saved by :meth:`save` (report, configuration,
        latency CDFs, series, WAF series, wall time)."""
        import pandas as pd

        from .errors import ConfigError

        d = Path(directory)
        try:
            report = json.loads((d / "report.json").read_text(encoding="utf-8"))
            config = json.loads((d / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ConfigError(f"{d}: not a saved stlsim result ({e})") from None
        cdf = pd.read_parquet(d / "latency_cdf.parquet")
        cdfs = {
            c: (list(g["latency_ms"]), list(g["fraction"])) for c, g in ((c, cdf[cdf["class"] == c]) for c in LATENCY_CLASSES)
        }
        series = {k: list(v) for k, v in pd.read_parquet(d / "series.parquet").to_dict("list").items()}
        waf_path = d / "waf_counts.json"
        waf = json.loads(waf_path.read_text(encoding="utf-8")) if waf_path.exists() else None
        prov_path = d / "provenance.json"
        prov = json.loads(prov_path.read_text(encoding="utf-8")) if prov_path.exists() else {}
        label = prov.get("label") or d.name
        return cls(label, report, config, cdfs, series, wall_s=float(prov.get("wall_s", 0.0)), waf_series=waf)

    def _repr_html_(self) -> str:
        """The headline figures as a table (Jupyter)."""
        import html

        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th><td>{html.escape(_fmt(v))}</td></tr>"
            for k, v in self.summary.items()
        )
        return f"<table><caption>stlsim run {html.escape(self.label)}</caption>{rows}</table>"


#: IMR layers that move tracks to save read-modify-writes (paper 000 sections 2.2-2.4).
MOVING_IMR_LAYERS = ("imr-flip", "imr-cache", "imr-dtm")


class Comparison:
    """Several runs side by side (see :func:`stlsim.compare`)."""

    def __init__(self, results: Sequence[Result]) -> None:
        self.results: list[Result] = list(results)

    def __repr__(self) -> str:
        return f"<Comparison of {len(self.results)} runs: {', '.join(r.label for r in self.results)}>"

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[Result]:
        return iter(self.results)

    def __getitem__(self, key: int | str) -> Result:
        if isinstance(key, str):
            for r in self.results:
                if r.label == key:
                    return r
            raise KeyError(key)
        return self.results[key]

    def table(self) -> pd.DataFrame:
        """One row per run: the :attr:`Result.summary` figures (layer counters a layer lacks are NaN),
        plus ``disparity_vs_cmr_s`` (final disparity minus the CMR run's) when a ``cmr`` run is included."""
        import pandas as pd

        df = pd.DataFrame([r.summary for r in self.results])
        base = self.cmr()
        if base is not None and len(df):
            df["disparity_vs_cmr_s"] = df["final_disparity_s"] - base.report["final_disparity_s"]
        return df

    def by_usage(self) -> pd.DataFrame:
        """The runs of a usage sweep (:func:`stlsim.compare` with ``usages``),
        one row per configuration and usage level, as paper 002's Figure 3:
        columns config, layer, usage, mean_ms, write_mean_ms, read_mean_ms,
        war, waf. Empty when no run had a usage level."""
        import pandas as pd

        cols = ["config", "layer", "usage", "mean_ms", "write_mean_ms", "read_mean_ms", "war", "waf"]
        rows = []
        for r in self.results:
            if r.usage is None:
                continue
            s = r.summary
            rows.append({
                "config": r.group,
                "layer": s["layer"],
                "usage": r.usage,
                "mean_ms": s["mean_ms"],
                "write_mean_ms": s["write_mean_ms"],
                "read_mean_ms": s["read_mean_ms"],
                "war": s["war"],
                "waf": s["waf"],
            })
        if not rows:
            return pd.DataFrame({c: pd.Series(dtype="float64") for c in cols})
        return pd.DataFrame(rows, columns=cols)

    def warnings(self) -> list[str]:
        """What the runs say only side by side: an IMR layer that moves
        tracks (imr-flip, imr-cache, imr-dtm) whose WAF per host sector is
        above naive read-modify-write's on the same trace and drive (its moves
        cost more media writes than the read-modify-writes they were to save)."""
        out = []
        key = lambda r: (r.report.get("trace"), r.report["drive"]["name"])  # noqa: E731
        rmw = {key(r): r for r in self.results if r.report.get("layer") == "imr-rmw"}
        for r in self.results:
            base = rmw.get(key(r))
            if base is None or r.report.get("layer") not in MOVING_IMR_LAYERS:
                continue
            mine, theirs = r.report["waf_per_host_sector"], base.report["waf_per_host_sector"]
            if mine > theirs:
                out.append(
                    f"{r.label} ({r.report['layer']}) writes {mine:.3f} media sectors per host sector, more than "
                    f"{base.label} (imr-rmw, {theirs:.3f}): its moves cost more than the read-modify-writes they were to save"
                )
        return out

    def cmr(self) -> Result | None:
        """The first run of the ``cmr`` layer, the baseline others are compared with (None if absent)."""
        return next((r for r in self.results if r.report.get("layer") == "cmr"), None)

    def disparity_vs_cmr(self) -> pd.DataFrame:
        """Each run's issue-time disparity minus the CMR run's, over the run (paper 000
        Figure 13: the gap to CMR): columns label, requests, disparity_s,
        cmr_disparity_s, disparity_vs_cmr_s. Empty without a ``cmr`` run."""
        import pandas as pd

        cols = ["label", "requests", "disparity_s", "cmr_disparity_s", "disparity_vs_cmr_s"]
        base = self.cmr()
        if base is None:
            return pd.DataFrame({c: pd.Series(dtype="float64") for c in cols})
        b = base.series()[["requests", "disparity_s"]].rename(columns={"disparity_s": "cmr_disparity_s"})
        parts = []
        for r in self.results:
            if r is base:
                continue
            s = r.series()[["requests", "disparity_s"]].merge(b, on="requests", how="inner")
            s.insert(0, "label", r.label)
            s["disparity_vs_cmr_s"] = s["disparity_s"] - s["cmr_disparity_s"]
            parts.append(s)
        if not parts:
            return pd.DataFrame({c: pd.Series(dtype="float64") for c in cols})
        return pd.concat(parts, ignore_index=True)[cols]

    @staticmethod
    def output_names() -> list[str]:
        """The names of the files :meth:`save` may write in its folder (besides
        one folder per run): summary.csv, by_usage.csv and every plot in every
        format."""
        from .plots import COMPARISON_PLOTS, PLOT_FORMATS

        return ["summary.csv", "by_usage.csv", *(f"{p}.{ext}" for p in COMPARISON_PLOTS for ext in PLOT_FORMATS)]

    def save(self, directory: str | os.PathLike[str], plot_format: str = "png") -> Path:
        """Write summary.csv, each run's files under ``<label>/``, and the plots
        (``plot_format``: png, pdf or svg) latency_cdf (with the tail as a
        log-log CCDF beside it), headline, tail_latency (p90/p99/p99.9/max,
        paper 003 Figures 2 and 6), disparity, waf_series and, with a
        ``cmr`` run, disparity_vs_cmr; runs of a layer with a persistent
        cache add cache_utilisation (paper 003 Figure 3); a usage sweep adds
        by_usage.csv and by_usage (paper 002 Figure 3). Labels that would
        share a folder are refused before anything is written
        (:func:`check_labels`). Returns the folder."""
        from . import plots

        fmt = plots.check_plot_format(plot_format)
        check_labels([r.label for r in self.results])
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.table().to_csv(d / "summary.csv", index=False)
        for r in self.results:
            r.save(d / safe_label(r.label))
        if any(r.usage is not None for r in self.results):
            self.by_usage().to_csv(d / "by_usage.csv", index=False)
        self.plot(d, fmt)
        return d

    def plot(self, directory: str | os.PathLike[str], plot_format: str = "png") -> list[Path]:
        """Write only the plots :meth:`save` writes into ``directory``
        (created), as png, pdf or svg. Returns the files written."""
        from . import plots

        fmt = plots.check_plot_format(plot_format)
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        plots.latency_cdf(self.results, d / f"latency_cdf.{fmt}")
        plots.headline(self.results, d / f"headline.{fmt}")
        plots.tail_latency(self.results, d / f"tail_latency.{fmt}")
        if any("cache_span_tracks" in r.series().columns for r in self.results):
            plots.cache_utilisation(self.results, d / f"cache_utilisation.{fmt}")
        plots.disparity(self.results, d / f"disparity.{fmt}")
        plots.waf_series(self.results, d / f"waf_series.{fmt}")
        if self.cmr() is not None:
            plots.disparity_vs_cmr(self, d / f"disparity_vs_cmr.{fmt}")
        if any(r.usage is not None for r in self.results):
            plots.by_usage(self, d / f"by_usage.{fmt}")
        return sorted(p for p in d.iterdir() if p.suffix == f".{fmt}" and p.stem in plots.COMPARISON_PLOTS)

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Comparison:
        """Bring back a comparison saved by :meth:`save`, its runs in table order."""
        import pandas as pd

        from .errors import ConfigError

        d = Path(directory)
        try:
            labels = [str(x) for x in pd.read_csv(d / "summary.csv")["label"]]
        except (OSError, KeyError, ValueError) as e:
            raise ConfigError(f"{d}: not a saved stlsim comparison ({e})") from None
        results = []
        for label in labels:
            r = Result.load(d / safe_label(label))
            r.label = label
            results.append(r)
        return cls(results)

    def _repr_html_(self) -> str:
        """The comparison table (Jupyter)."""
        return str(self.table().to_html(index=False, float_format=lambda v: f"{v:,.4g}"))
