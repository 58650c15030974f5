"""Workload analysis: which physical tracks a trace writes, and when.

:func:`stlsim.analyze` maps every write of a trace onto the home tracks of a
drive (natively, in the core) and returns an :class:`Analysis` with the
figures the IMR paper (Hajkazemi et al., paper 000) uses to explain its
results:

* the track write-count CDF of the hottest tracks (paper Figures 2 and 10):
  :meth:`Analysis.hottest`;
* the hottest bottom tracks with the write counts of their neighbours T-1 and
  T+1 (Figures 4 and 11), and how many of them are "track flipping-friendly"
  (a neighbour at least ``colder`` writes colder, section 2.2):
  :meth:`Analysis.neighbours`;
* the write frequency of chosen tracks over time (Figure 5):
  :meth:`Analysis.frequency`.

A *track write* is one write request touching one physical track: a request
spanning three tracks counts once on each. Time in :meth:`Analysis.frequency`
is counted in write requests, as in the paper ("writes to a track out of
100,000 total writes").
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_COLDER",
    "DEFAULT_FREQUENCY_TRACKS",
    "DEFAULT_HOTTEST",
    "DEFAULT_INTERVAL",
    "DEFAULT_NEIGHBOURS",
    "HEADLINE_TOP",
    "Analysis",
]

#: Hottest tracks in the CDF (the paper's Figure 2 shows 3000).
DEFAULT_HOTTEST = 3000
#: Hottest bottom tracks shown with their neighbours (Figures 4 and 11 show 20).
DEFAULT_NEIGHBOURS = 20
#: A hot bottom track is flip-friendly when a neighbour is at least this many writes colder.
DEFAULT_COLDER = 50
#: Write requests per interval of the write-frequency figure.
DEFAULT_INTERVAL = 10_000
#: Tracks in the write-frequency figure when none are chosen (the hottest ones).
DEFAULT_FREQUENCY_TRACKS = 4
#: The k of the "share of track writes on the hottest k tracks" headline figures.
HEADLINE_TOP = (1, 10, 100, 1000)

_COLUMNS = ("request", "time_s", "logical_track", "physical_track", "sectors")


def _positive(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ConfigError(f"configuration error: {name} must be a positive integer, got {v!r}")
    return v


def _nonneg(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ConfigError(f"configuration error: {name} must be a non-negative integer, got {v!r}")
    return v


def _finite(v: float) -> float | None:
    return None if v != v else float(v)


class Analysis:
    """The track writes of one trace on one drive (see :func:`stlsim.analyze`).

    Attributes:
        trace: the trace file analysed.
        drive: the drive description (a dict, as :func:`stlsim.load_drive` returns it).
        requests: requests read from the trace (reads included, after
            ``disk``, ``start`` and ``limit``).
        tracks: physical tracks of the drive.
        bottom_only: True on an IMR layout, where only the even (bottom)
            physical tracks are candidates for :meth:`neighbours`.
        k, n, colder, interval, frequency_tracks: the defaults of the
            accessors (set by :func:`stlsim.analyze`).
    """

    def __init__(
        self,
        trace: str,
        drive: Mapping[str, Any],
        columns: Mapping[str, Any],
        *,
        hottest: int = DEFAULT_HOTTEST,
        neighbours: int = DEFAULT_NEIGHBOURS,
        colder: int = DEFAULT_COLDER,
        interval: int = DEFAULT_INTERVAL,
        tracks: Sequence[int] | None = None,
    ) -> None:
        import numpy as np
        import pandas as pd

        self.trace = trace
        self.drive = dict(drive)
        self.requests = int(columns["requests"])
        self.tracks = int(columns["tracks"])
        self.layout = str(self.drive.get("layout", {}).get("kind", "cmr"))
        self.bottom_only = self.layout == "imr"
        dtypes = {"request": "int64", "time_s": "float64", "logical_track": "int64", "physical_track": "int64", "sectors": "int64"}
        self._rows = pd.DataFrame({c: np.asarray(columns[c], dtype=dtypes[c]) for c in _COLUMNS})
        self.k = _positive("hottest", hottest)
        self.n = _positive("neighbours", neighbours)
        self.colder = _nonneg("colder", colder)
        self.interval = _positive("interval", interval)
        self.frequency_tracks = None if tracks is None else self._check_tracks(tracks)

        g = self._rows.groupby("physical_track", sort=True)
        counts = pd.DataFrame({"writes": g.size(), "sectors": g["sectors"].sum()}).reset_index()
        self._counts = counts.astype({"physical_track": "int64", "writes": "int64", "sectors": "int64"})
        self._ranked = self._counts.sort_values(
            ["writes", "physical_track"], ascending=[False, True], kind="stable"
        ).reset_index(drop=True)

    def __repr__(self) -> str:
        return (
            f"<Analysis of {Path(self.trace).name} on {self.drive.get('name', '?')}: {self.requests} requests, "
            f"{self.track_writes} track writes on {self.tracks_written} tracks>"
        )

    # ------------------------------------------------------------------
    # Plain figures
    # ------------------------------------------------------------------

    @property
    def write_requests(self) -> int:
        """Write requests that wrote at least one sector."""
        return int(self._rows["request"].nunique())

    @property
    def track_writes(self) -> int:
        """Track writes: (write request, physical track) pairs, the rows of :meth:`rows`."""
        return len(self._rows)

    @property
    def tracks_written(self) -> int:
        """Distinct physical tracks written."""
        return len(self._counts)

    def rows(self) -> pd.DataFrame:
        """One row per track write: request (0-based index in the trace), time_s
        (trace time since the first write), logical_track, physical_track, sectors."""
        return self._rows.copy()

    def track_counts(self) -> pd.DataFrame:
        """Per physical track written: physical_track, writes (write requests
        touching it), sectors (sectors written on it); ascending by track."""
        return self._counts.copy()

    def share(self, k: int) -> float:
        """Fraction of all track writes that land on the ``k`` hottest tracks (NaN with no writes)."""
        _positive("k", k)
        total = self.track_writes
        if total == 0:
            return math.nan
        return float(self._ranked["writes"].head(k).sum()) / total

    def tracks_for(self, fraction: float) -> int | None:
        """The fewest hottest tracks that take at least ``fraction`` of all track writes (None with no writes)."""
        if not 0 < fraction <= 1:
            raise ConfigError(f"configuration error: fraction must be in (0, 1], got {fraction!r}")
        total = self.track_writes
        if total == 0:
            return None
        import numpy as np

        cum = self._ranked["writes"].cumsum().to_numpy()
        need = math.ceil(fraction * total - 1e-9)
        return int(np.searchsorted(cum, need, side="left")) + 1

    # ------------------------------------------------------------------
    # The three figures
    # ------------------------------------------------------------------

    def hottest(self, k: int | None = None) -> pd.DataFrame:
        """The ``k`` hottest physical tracks (default: ``hottest`` of :func:`stlsim.analyze`),
        hottest first; ties go to the lower track number.

        Columns: rank (1 = hottest), physical_track, writes, sectors,
        cumulative_writes, cumulative_fraction (of all track writes; 1.0 at
        the last row when ``k`` covers every track written). Fewer than ``k``
        rows when fewer tracks were written.
        """
        k = self.k if k is None else _positive("k", k)
        df = self._ranked.head(k).copy()
        df.insert(0, "rank", range(1, len(df) + 1))
        df["rank"] = df["rank"].astype("int64")
        df["cumulative_writes"] = df["writes"].cumsum().astype("int64")
        total = self.track_writes
        df["cumulative_fraction"] = (df["cumulative_writes"] / total) if total else df["cumulative_writes"].astype("float64")
        return df.reset_index(drop=True)

    def neighbours(self, n: int | None = None, colder: int | None = None) -> pd.DataFrame:
        """The ``n`` hottest bottom tracks (even physical tracks on an IMR drive;
        any track on other layouts) with the write counts of their neighbours.

        Columns: rank, physical_track, writes, left_track (T-1), left_writes,
        right_track (T+1), right_writes, colder_by (writes minus the colder
        neighbour's writes), friendly (colder_by >= ``colder``: flipping T with
        that neighbour would move hot data to a rewritable top track, paper
        section 2.2). A neighbour beyond the first or last track is <NA>.
        """
        import pandas as pd

        n = self.n if n is None else _positive("n", n)
        colder = self.colder if colder is None else _nonneg("colder", colder)
        cand = self._ranked
        if self.bottom_only:
            cand = cand[cand["physical_track"] % 2 == 0]
        cand = cand.head(n)
        writes = dict(zip(self._counts["physical_track"].tolist(), self._counts["writes"].tolist()))
        rows = []
        for rank, (t, w) in enumerate(zip(cand["physical_track"].tolist(), cand["writes"].tolist()), start=1):
            left = t - 1 if t >= 1 else None
            right = t + 1 if t + 1 < self.tracks else None
            lw = None if left is None else writes.get(left, 0)
            rw = None if right is None else writes.get(right, 0)
            sides = [x for x in (lw, rw) if x is not None]
            colder_by = w - min(sides) if sides else None
            rows.append((rank, t, w, left, lw, right, rw, colder_by, colder_by is not None and colder_by >= colder))
        df = pd.DataFrame(
            rows,
            columns=[
                "rank",
                "physical_track",
                "writes",
                "left_track",
                "left_writes",
                "right_track",
                "right_writes",
                "colder_by",
                "friendly",
            ],
        )
        return df.astype(
            {
                "rank": "int64",
                "physical_track": "int64",
                "writes": "int64",
                "left_track": "Int64",
                "left_writes": "Int64",
                "right_track": "Int64",
                "right_writes": "Int64",
                "colder_by": "Int64",
                "friendly": "bool",
            }
        )

    def _check_tracks(self, tracks: Iterable[int]) -> list[int]:
        if isinstance(tracks, (str, bytes)) or not hasattr(tracks, "__iter__"):
            raise ConfigError(f"configuration error: tracks must be a list of track numbers, got {tracks!r}")
        out: list[int] = []
        for t in tracks:
            if isinstance(t, bool) or not isinstance(t, int) or t < 0:
                raise ConfigError(f"configuration error: tracks must be non-negative track numbers, got {t!r}")
            if t >= self.tracks:
                raise ConfigError(
                    f"configuration error: track {t} is beyond the drive's last physical track ({self.tracks - 1:,})"
                )
            if t not in out:
                out.append(t)
        if not out:
            raise ConfigError("configuration error: tracks must name at least one track")
        return out

    def default_tracks(self) -> list[int]:
        """The tracks :meth:`frequency` follows by default: those given to
        :func:`stlsim.analyze`, else the 4 hottest."""
        if self.frequency_tracks is not None:
            return list(self.frequency_tracks)
        return self._ranked["physical_track"].head(DEFAULT_FREQUENCY_TRACKS).tolist()

    def frequency(self, tracks: Iterable[int] | None = None, interval: int | None = None) -> pd.DataFrame:
        """Writes to each of ``tracks`` in each interval of ``interval`` write
        requests (defaults: as given to :func:`stlsim.analyze`; tracks: the 4
        hottest; interval: 10,000). The last interval may be shorter.

        Long format, every (interval, track) pair present (0 when not written):
        interval (0-based), first_write (write requests before the interval),
        interval_writes (write requests in the interval), time_s (trace time
        of its first write), physical_track, writes. ``pivot(index="interval",
        columns="physical_track", values="writes")`` gives one column per track.
        """
        import numpy as np
        import pandas as pd

        chosen = self.default_tracks() if tracks is None else self._check_tracks(tracks)
        interval = self.interval if interval is None else _positive("interval", interval)
        rows = self._rows
        # Write ordinal of each row: rows come in request order, so factorize
        # numbers the write requests 0, 1, 2 ...
        ordinal, _ = pd.factorize(rows["request"], sort=False)
        bucket = ordinal // interval
        writes_total = int(ordinal.max()) + 1 if len(ordinal) else 0
        n_buckets = -(-writes_total // interval)
        idx = np.arange(n_buckets, dtype="int64")
        first = idx * interval
        in_bucket = np.minimum(first + interval, writes_total) - first
        # trace time of the first write of each interval
        first_rows = np.searchsorted(ordinal, first, side="left") if len(ordinal) else np.zeros(0, dtype="int64")
        times = rows["time_s"].to_numpy()[first_rows] if len(first_rows) else np.zeros(0)
        parts = []
        for t in chosen:
            mask = rows["physical_track"].to_numpy() == t
            counts = np.bincount(bucket[mask], minlength=n_buckets).astype("int64")[:n_buckets]
            parts.append(
                pd.DataFrame(
                    {
                        "interval": idx,
                        "first_write": first,
                        "interval_writes": in_bucket.astype("int64"),
                        "time_s": times.astype("float64"),
                        "physical_track": np.full(n_buckets, t, dtype="int64"),
                        "writes": counts,
                    }
                )
            )
        if not parts:  # nothing written, so no hottest tracks to follow
            return pd.DataFrame(
                {
                    "interval": pd.Series(dtype="int64"),
                    "first_write": pd.Series(dtype="int64"),
                    "interval_writes": pd.Series(dtype="int64"),
                    "time_s": pd.Series(dtype="float64"),
                    "physical_track": pd.Series(dtype="int64"),
                    "writes": pd.Series(dtype="int64"),
                }
            )
        df = pd.concat(parts, ignore_index=True)
        return df.sort_values(["interval", "physical_track"], kind="stable").reset_index(drop=True)

    # ------------------------------------------------------------------
    # Summary, JSON and files
    # ------------------------------------------------------------------

    @property
    def summary(self) -> dict[str, Any]:
        """Headline figures (JSON-ready; a share is None when nothing was written)."""
        nb = self.neighbours()
        top = self._ranked.head(1)
        return {
            "trace": self.trace,
            "drive": self.drive.get("name"),
            "layout": self.layout,
            "tracks": self.tracks,
            "requests": self.requests,
            "write_requests": self.write_requests,
            "track_writes": self.track_writes,
            "sectors_written": int(self._counts["sectors"].sum()),
            "tracks_written": self.tracks_written,
            "hottest_track": int(top["physical_track"].iloc[0]) if len(top) else None,
            "hottest_track_writes": int(top["writes"].iloc[0]) if len(top) else 0,
            "share_hottest": {str(k): _finite(self.share(k)) for k in HEADLINE_TOP},
            "tracks_for_50pct": self.tracks_for(0.5),
            "tracks_for_80pct": self.tracks_for(0.8),
            "hottest_k": self.k,
            "share_hottest_k": _finite(self.share(self.k)),
            "bottom_only": self.bottom_only,
            "neighbours_n": len(nb),
            "colder": self.colder,
            "flip_friendly": int(nb["friendly"].sum()),
            "interval": self.interval,
            "frequency_tracks": self.default_tracks(),
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything :meth:`save` plots, as plain data: ``summary``, ``cdf``
        (cumulative fraction for k = 1 .. hottest), ``hottest`` (track numbers in
        that order), ``neighbours`` (rows of :meth:`neighbours`) and ``frequency``
        (interval, first_write and writes per track)."""
        h = self.hottest()
        nb = self.neighbours()
        fr = self.frequency()
        wide = fr.pivot(index="interval", columns="physical_track", values="writes") if len(fr) else None
        first = fr.drop_duplicates("interval")["first_write"].tolist()
        return {
            "summary": self.summary,
            "cdf": [round(float(x), 9) for x in h["cumulative_fraction"]],
            "hottest": h["physical_track"].tolist(),
            "neighbours": [{k: _plain(v) for k, v in row.items()} for row in nb.to_dict("records")],
            "frequency": {
                "interval": self.interval,
                "first_write": first,
                "writes": {str(t): ([] if wide is None else wide[t].astype(int).tolist()) for t in self.default_tracks()},
            },
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON."""
        return json.dumps(self.to_dict(), indent=2)

    @staticmethod
    def output_names() -> list[str]:
        """The names of the files :meth:`save` may write in its folder (the
        figures in every format)."""
        from .plots import ANALYSIS_PLOTS, PLOT_FORMATS

        return ["track_counts.parquet", *(f"{p}.{ext}" for p in ANALYSIS_PLOTS for ext in PLOT_FORMATS)]

    def save(self, directory: str | os.PathLike[str], plot_format: str = "png") -> Path:
        """Write hottest_cdf, hottest_neighbours and track_frequency (as
        ``plot_format``: png, pdf or svg) and track_counts.parquet
        (physical_track, writes, sectors) into ``directory`` (created).
        Returns the folder."""
        from . import plots

        fmt = plots.check_plot_format(plot_format)
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        plots.hottest_cdf(self, d / f"hottest_cdf.{fmt}")
        plots.hottest_neighbours(self, d / f"hottest_neighbours.{fmt}")
        plots.track_frequency(self, d / f"track_frequency.{fmt}")
        self.track_counts().to_parquet(d / "track_counts.parquet", index=False)
        return d


def _plain(v: Any) -> Any:
    """A DataFrame cell as a JSON value (<NA> -> None, numpy scalars -> Python)."""
    import pandas as pd

    if v is None or v is pd.NA:
        return None
    if hasattr(v, "item"):
        v = v.item()
    return v
