"""Parameter sweeps: :func:`sweep` runs every cell of a plan (traces x drives x
layers x layer parameters x replay options) on a local process pool or as
Ray tasks and appends one row per run to a Parquet dataset, resumable after an
interruption.

A plan is a TOML file (or a dict of the same shape)::

    [sweep]
    traces = ["../tests/data/rsrch_1.csv"]   # relative to the plan file
    drives = ["imr-paper"]
    layers = ["cmr", "imr-rmw"]
    zip = []                                  # axes combined element-wise, not as a grid

    [sweep.params]                            # layer-parameter axes (a layer that does not
    interval_writes = [1000, 10000]           # declare one runs without it)

    [sweep.replay]                            # replay-option axes
    queue_depth = [1, 64]

    [sweep.fixed]                             # settings of every cell
    limit = 5000

Each cell is one :func:`stlsim.run`. Its row holds every configuration value
as a column, the headline figures (:attr:`stlsim.Result.summary`), the
warnings, the wall time, the path of the run's saved report, and the error if
the cell failed (a failing cell does not stop the sweep). Rows are written as
``OUT/rows/<hash>.parquet`` (a Parquet dataset), named by a hash of the
cell's configuration: a re-run skips the cells that already have a row.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import REPLAY_SETTINGS
from .errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from .result import Result

__all__ = ["Plan", "SweepInterrupted", "SweepResult", "SweepWarning", "load_plan", "read_rows", "sweep"]

#: Replay options a plan may sweep or fix (keyword arguments of :func:`stlsim.run`).
REPLAY_KEYS = REPLAY_SETTINGS
_SWEEP_KEYS = {"traces", "drives", "layers", "zip", "params", "replay", "fixed"}


def _did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known``, or nothing."""
    from .config import closest_name

    near = closest_name(word, known)
    return f" (did you mean '{near}'?)" if near else ""


class Plan:
    """A validated sweep plan: its axes and the cells they make.

    Every name is checked before any cell runs, as ``stlsim run`` checks its
    options: a misspelled layer, layer parameter, replay option or table is
    an error, never an axis dropped in silence."""

    def __init__(self, spec: Mapping[str, Any], base: Path) -> None:
        if "sweep" not in spec or not isinstance(spec["sweep"], Mapping):
            raise ConfigError("a sweep plan needs a [sweep] table with traces, drives and layers lists")
        for k in spec:
            if k != "sweep":
                what = f"table [{k}]" if isinstance(spec[k], Mapping) else f"key '{k}'"
                raise ConfigError(f"unknown {what} outside [sweep] (a plan holds only the [sweep] table and its sub-tables)")
        s = spec["sweep"]
        for k in s:
            if k not in _SWEEP_KEYS:
                raise ConfigError(f"[sweep] has unknown key '{k}'{_did_you_mean(k, _SWEEP_KEYS)} (known: {', '.join(sorted(_SWEEP_KEYS))})")
        self.base = base
        self.axes: dict[str, list[Any]] = {}
        for key in ("traces", "drives", "layers"):
            v = s.get(key)
            if not isinstance(v, list) or not v:
                raise ConfigError(f"[sweep] {key} must be a non-empty list")
            self.axes[key] = [self._resolve(x) if key != "layers" else x for x in v]
        from .config import layers

        declared = {e["name"]: [p["name"] for p in e.get("params", [])] for e in layers()}
        for name in self.axes["layers"]:
            if not isinstance(name, str) or name not in declared:
                hint = _did_you_mean(str(name), declared) or f" (known: {', '.join(declared)})"
                raise ConfigError(f"[sweep] layers: unknown layer '{name}'{hint}")
        # The parameters of the plan's layers, in the order the layers declare them.
        own = list(dict.fromkeys(p for name in self.axes["layers"] for p in declared[name]))
        for table in ("params", "replay", "fixed"):
            if not isinstance(s.get(table, {}), Mapping):
                raise ConfigError(f"[sweep.{table}] must be a table" + (" of lists" if table != "fixed" else ""))
        params, replay, fixed = (dict(s.get(t, {})) for t in ("params", "replay", "fixed"))
        for k in params:
            if k not in own:
                where = "it is a replay option: put it in [sweep.replay]" if k in REPLAY_KEYS else None
                hint = where or (_did_you_mean(k, own).strip(" ()") or f"their parameters: {', '.join(own) or 'none'}")
                raise ConfigError(f"[sweep.params] {k}: no layer of the plan ({', '.join(self.axes['layers'])}) has this parameter ({hint})")
        for table, keys in (("replay", replay), ("fixed", fixed)):
            for k in keys:
                if k not in REPLAY_KEYS:
                    where = "it is a layer parameter: put it in [sweep.params] as a list" if k in own else None
                    hint = where or _did_you_mean(k, REPLAY_KEYS).strip(" ()") or f"known: {', '.join(sorted(REPLAY_KEYS))}"
                    raise ConfigError(f"[sweep.{table}] {k} is not a replay option ({hint})")
        for k in replay.keys() & fixed.keys():
            # Which would win is an accident of the code; the plan must say.
            raise ConfigError(f"[sweep] {k} is given in both [sweep.replay] and [sweep.fixed]: keep one")
        for table, prefix, t in (("params", "param.", params), ("replay", "", replay)):
            for k, v in t.items():
                if not isinstance(v, list) or not v:
                    raise ConfigError(f"[sweep.{table}] {k} must be a non-empty list of values")
                self.axes[prefix + k] = v
        self.fixed = fixed
        zipped = s.get("zip", [])
        if not isinstance(zipped, list) or any(k not in self.axes for k in zipped):
            raise ConfigError(f"[sweep] zip must list axes of the plan ({', '.join(self.axes)})")
        lengths = {len(self.axes[k]) for k in zipped}
        if len(lengths) > 1:
            raise ConfigError(f"[sweep] zipped axes {zipped} must have equal lengths, not {sorted(lengths)}")
        self.zip = list(zipped)
        self._declared = {k: set(v) for k, v in declared.items()}
        #: The plan with its trace and drive paths resolved (saved as OUT/plan.json).
        self.spec = {"sweep": {**s, **{k: self.axes[k] for k in ("traces", "drives")}}}

    def _resolve(self, v: Any) -> Any:
        """A trace or drive file relative to the plan; preset names and synth: specs unchanged."""
        if not isinstance(v, str) or v.startswith("synth:"):
            return v
        p = self.base / v
        return str(p.resolve()) if ("/" in v or v.endswith(".toml")) and p.exists() else v

    def cells(self) -> list[dict[str, Any]]:
        """Every cell: a dict of :func:`stlsim.run` keyword arguments (params by name)."""
        free = [k for k in self.axes if k not in self.zip]
        groups: list[list[dict[str, Any]]] = [[{k: v} for v in self.axes[k]] for k in free]
        if self.zip:
            groups.append([dict(zip(self.zip, vals)) for vals in zip(*(self.axes[k] for k in self.zip))])
        declared = self._declared
        out, seen = [], set()
        for combo in itertools.product(*groups):
            flat: dict[str, Any] = {}
            for part in combo:
                flat.update(part)
            layer = flat["layers"]
            cell: dict[str, Any] = {
                "trace": flat["traces"],
                "drive": flat["drives"],
                "layer": layer,
                "params": {
                    k[6:]: v for k, v in flat.items() if k.startswith("param.") and k[6:] in declared.get(layer, set())
                },
                **self.fixed,
                **{k: v for k, v in flat.items() if k in REPLAY_KEYS},
            }
            h = cell_hash(cell)
            if h not in seen:
                seen.add(h)
                out.append(cell)
        return out


def load_plan(plan: str | os.PathLike[str] | Mapping[str, Any]) -> Plan:
    """Read and validate a plan (a TOML path or a dict)."""
    if isinstance(plan, Mapping):
        return Plan(plan, Path.cwd())
    p = Path(plan)
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the plan: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not a UTF-8 text file (byte {e.start}); a sweep plan is TOML") from None
    try:
        spec = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: {e}") from None
    try:
        return Plan(spec, p.parent)
    except ConfigError as e:
        raise ConfigError(f"{p}: {e}") from None


def cell_hash(cell: Mapping[str, Any]) -> str:
    """A stable hash of a cell's configuration (its row's name)."""
    text = json.dumps(cell, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _columns(cell: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for k, v in cell.items():
        if k == "params":
            for pk, pv in v.items():
                row[f"param.{pk}"] = json.dumps(pv) if isinstance(pv, (list, dict)) else pv
        else:
            row[k] = json.dumps(v) if isinstance(v, (list, dict)) else v
    return row


def run_cell(cell: Mapping[str, Any], out: str, ship: bool = False) -> dict[str, Any]:
    """Run one cell and return its row (errors recorded, never raised).

    With ``ship`` the run's report is saved to a scratch folder and its files
    travel back inside the row (key ``_files``) for the caller to write under
    ``out``: a Ray worker on another machine need not see ``out``."""
    import shutil
    import tempfile

    from . import api

    h = cell_hash(cell)
    row: dict[str, Any] = {"hash": h, **_columns(cell)}
    run_dir = Path(out) / "runs" / h
    t0 = time.perf_counter()
    try:
        r = api.run(**{k: v for k, v in cell.items() if k != "params"}, params=cell["params"], label=h)
        if ship:
            scratch = Path(tempfile.mkdtemp(prefix="stlsim-cell-"))
            try:
                r.save(scratch)
                row["_files"] = {f.name: f.read_bytes() for f in scratch.iterdir() if f.is_file()}
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        else:
            r.save(run_dir)
        summary = {k: v for k, v in r.summary.items() if k not in ("label", "layer", "drive") and isinstance(v, (int, float))}
        row.update(summary)
        row["warnings"] = "; ".join(r.report.get("warnings", []))
        row["report"] = str(run_dir / "report.json")
        row["error"] = None
    except Exception as e:  # a failing cell is a row, not the end of the sweep
        row["error"] = f"{type(e).__name__}: {e}"
        row["warnings"] = ""
        row["report"] = None
    row["wall_s"] = time.perf_counter() - t0
    return row


def _write_row(out: Path, row: dict[str, Any]) -> None:
    files = row.pop("_files", None)
    if files:
        run_dir = out / "runs" / row["hash"]
        run_dir.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (run_dir / name).write_bytes(data)
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = out / "rows"
    rows.mkdir(parents=True, exist_ok=True)
    tmp = rows / f".{row['hash']}.tmp"
    # pyarrow directly: a fifth of the time pandas takes for a one-row file.
    pq.write_table(pa.Table.from_pylist([row]), tmp)
    os.replace(tmp, rows / f"{row['hash']}.parquet")


def read_rows(out: str | os.PathLike[str]) -> pd.DataFrame:
    """Every row a sweep folder holds, one per cell."""
    import pandas as pd

    # One frame from every row's values (rows of different plans may have
    # different columns); far faster than a pandas read per file.
    return pd.DataFrame(_read_row_files(Path(out)))


def _read_row_files(out: Path, only: Iterable[str] | None = None, unreadable: list[Path] | None = None) -> list[dict[str, Any]]:
    """The rows saved under ``out``, as dicts; with ``only``, those of the
    cells whose hash is in it. A row file that cannot be read (truncated by
    a full disk, a partial copy ...) is an error naming it, or, given the
    list ``unreadable``, is appended to it and left out."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    keep = None if only is None else set(only)
    rows: list[dict[str, Any]] = []
    for f in sorted((out / "rows").glob("*.parquet")):
        if keep is not None and f.stem not in keep:
            continue
        try:
            rows += pq.read_table(f).to_pylist()
        except (pa.ArrowException, OSError, ValueError) as e:
            if unreadable is None:
                why = (str(e) or type(e).__name__).strip().splitlines()[0]
                why = why.replace(f"Could not open Parquet input source '{f}': ", "")  # the path is said once
                raise ConfigError(f"{f}: unreadable sweep row ({why}); run the sweep again to redo its cell") from None
            unreadable.append(f)
    return rows


#: Titles of the columns a reader sees (the sweep's printed table, the HTML
#: report), with their units; other columns get :func:`column_title`'s rule.
COLUMN_TITLES: dict[str, str] = {
    "hash": "cell",
    "waf": "WAF",
    "war": "WAR",
    "io_amplification": "I/O amplification",
    "mean_ms": "mean (ms)",
    "p50_ms": "p50 (ms)",
    "p90_ms": "p90 (ms)",
    "p99_ms": "p99 (ms)",
    "p999_ms": "p99.9 (ms)",
    "max_ms": "max (ms)",
    "read_mean_ms": "read mean (ms)",
    "write_mean_ms": "write mean (ms)",
    "simulated_s": "simulated time (s)",
    "iops": "IOPS",
    "final_disparity_s": "disparity (s)",
    "disparity_vs_cmr_s": "disparity vs CMR (s)",
    "wall_s": "wall (s)",
    "waf_steady": "WAF steady",
    "waf_excluding_moves": "WAF excl. moves",
    "intervals_completed": "intervals",
    "clean_bands": "cleaned bands",
    "stlsim_version": "stlsim version",
    "trace_sha256": "trace SHA-256",
}

_UNITS = (("_ms", "ms"), ("_s", "s"), ("_mib", "MiB"), ("_kib", "KiB"), ("_bytes", "bytes"))


def column_title(name: str) -> str:
    """A column's title for a reader: ``mean_ms`` -> ``mean (ms)``,
    ``queue_depth`` -> ``queue depth``. A layer parameter keeps its own name
    (``param.interval_writes`` -> ``interval_writes``), as a plan spells it."""
    if name in COLUMN_TITLES:
        return COLUMN_TITLES[name]
    if name.startswith("param."):
        return name[len("param.") :]
    for suffix, unit in _UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return f"{name[: -len(suffix)].replace('_', ' ')} ({unit})"
    return name.replace("_", " ")


#: Ratios and times: shown with decimals even when every value is whole
#: (a CMR-only sweep's WAF is 1.000, not a count of 1).
_FRACTIONAL = ("waf", "war", "io_amplification", "iops", "write_hit_rate", "prefill")


def _fractional(name: str) -> bool:
    return name.startswith(_FRACTIONAL) or name.endswith(("_ms", "_s"))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def readable(df: pd.DataFrame, missing: str = "-") -> pd.DataFrame:
    """``df`` as text for a reader: titles from :func:`column_title`, whole
    numbers with thousands separators (``12,345``), others with a column's
    decimals fitted to its largest value (3 below 10, 2 below 1,000, else 1;
    ratios and times always so),
    a trace by its file name, and ``missing`` for an absent value."""
    import math

    import pandas as pd

    out: dict[str, list[str]] = {}
    for col in df.columns:
        values = df[col].tolist()
        numbers = [float(v) for v in values if _is_number(v) and not math.isnan(v)]
        whole = not _fractional(str(col)) and all(x.is_integer() and abs(x) < 1e15 for x in numbers)
        top = max((abs(x) for x in numbers), default=0.0)
        digits = 3 if top < 10 else 2 if top < 1000 else 1

        def text(v: Any) -> str:
            if v is None or (not isinstance(v, (list, dict)) and pd.isna(v)):
                return missing
            if isinstance(v, bool):
                return "yes" if v else "no"
            if _is_number(v):
                return f"{int(v):,}" if whole else f"{v:,.{digits}f}"
            if col == "trace" and not str(v).startswith("synth:"):
                return Path(str(v)).name
            return str(v)

        title = column_title(str(col))
        # Two columns never share a title (a parameter named like a replay option).
        out[title if title not in out else str(col)] = [text(v) for v in values]
    return pd.DataFrame(out, columns=list(out), index=range(len(df)))


def _trace_bytes(cell: Mapping[str, Any]) -> int:
    """The size of a cell's trace file (0 if it is not a file)."""
    try:
        return os.stat(cell["trace"]).st_size
    except (OSError, KeyError, TypeError):
        return 0


# Each layer's time per request relative to CMR's, from the engine benchmarks
# (README, "Performance"; `cargo bench --bench engine`). They only order a
# sweep's cells, so rough figures do: a layer missing here counts as CMR.
LAYER_COST: dict[str, float] = {
    "cmr": 1.0,
    "imr-rmw": 1.6,
    "imr-flip": 1.8,
    "imr-cache": 1.8,
    "imr-dtm": 2.1,
    "swd-1234": 2.4,
    "swd-r4123": 1.5,
    "swd-124r3": 1.6,
    "swd-14r23": 1.5,
    "swd": 2.4,
    "smr-eregion": 5.5,
    "smr-vguard": 2.0,
    "hm-fluid": 8.0,
    "hm-fluid-loop": 48.0,
    "hm-skylight": 9.0,
    "amphisbaena": 87.0,
    "hwsr": 3.1,
    "sblock": 3.1,
    "buffered-cmr": 2.5,
}


def cell_cost(cell: Mapping[str, Any]) -> float:
    """A cell's expected run time in arbitrary units: its trace's size, times
    the copies it replays, times its layer's cost per request (``LAYER_COST``).

    Only the order of a sweep's cells depends on it: the costliest run first
    (longest-processing-time first), so that the cells left when a worker
    runs out of work are the short ones, and no worker sits idle while
    another finishes a long cell."""
    repeat = cell.get("repeat") or 1
    try:
        copies = max(1.0, float(repeat))
    except (TypeError, ValueError):
        copies = 1.0
    return _trace_bytes(cell) * copies * LAYER_COST.get(str(cell.get("layer")), 1.0)


def schedule(cells: Iterable[Mapping[str, Any]]) -> list[Any]:
    """The order a sweep starts its cells in: costliest first (``cell_cost``),
    so that no worker is left with a long cell while the others sit idle.
    Ties keep the plan's order."""
    return sorted(cells, key=cell_cost, reverse=True)


class SweepResult:
    """A sweep folder brought back: its rows (in the order of the plan last
    run into it, rows of earlier plans after them), that plan, and each
    cell's saved run.

    ``SweepResult.load("results/imr").rows`` is the DataFrame
    :func:`sweep` returned; ``.result(i)`` (a row number or a cell hash) is
    that cell's :class:`~stlsim.Result`."""

    def __init__(self, directory: Path, rows: pd.DataFrame, plan: dict[str, Any] | None) -> None:
        self.directory = directory
        self.rows = rows
        self.plan = plan

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> SweepResult:
        """Read a folder written by :func:`sweep` (``stlsim sweep --out``)."""
        d = Path(directory)
        if not (d / "rows").is_dir():
            raise ConfigError(f"{d}: not a saved stlsim sweep (no rows/ folder)")
        rows = read_rows(d)
        plan = None
        try:
            plan = json.loads((d / "plan.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        if plan is not None and not rows.empty:
            try:
                cells = load_plan(plan).cells()
            except ConfigError:
                cells = []
            order = {cell_hash(c): i for i, c in enumerate(cells)}
            key = rows["hash"].map(lambda h: order.get(h, len(order)))
            rows = rows.assign(_o=key).sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)
        return cls(d, rows, plan)

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        failed = int(self.rows["error"].notna().sum()) if "error" in self.rows.columns else 0
        return f"<SweepResult {self.directory}: {len(self.rows)} cells, {failed} failed>"

    def result(self, key: int | str) -> Result:
        """The saved run of a cell, by row number or by cell hash."""
        from .result import Result

        if isinstance(key, str):
            match = self.rows[self.rows["hash"] == key]
            if match.empty:
                raise KeyError(f"no cell with hash {key!r} in {self.directory}")
            row = match.iloc[0]
        else:
            row = self.rows.iloc[key]
        if not isinstance(row.get("report"), str) or not row["report"]:
            raise KeyError(f"cell {row['hash']} failed and has no saved run: {row.get('error')}")
        return Result.load(self.directory / "runs" / row["hash"])

    def _repr_html_(self) -> str:
        """The rows as a table (Jupyter)."""
        # The same human titles and digits as the printed table and the report.
        return str(readable(self.rows).to_html(index=False))


ENGINES = ("pool", "ray")


class SweepWarning(UserWarning):
    """Something a sweep worked around (an unreadable row file it runs again)."""


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C: ``saved`` of its ``total`` cells have rows in
    ``out``; running it again runs the rest."""

    def __init__(self, saved: int, total: int, out: Path) -> None:
        super().__init__(f"{saved} of {total} cells saved in {out}")
        self.saved, self.total, self.out = saved, total, out


def sweep(
    plan: str | os.PathLike[str] | Mapping[str, Any],
    out: str | os.PathLike[str],
    jobs: int | None = None,
    on_cell: Callable[[int, int], None] | None = None,
    engine: str = "pool",
    ray_address: str | None = None,
    retry_failed: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Run every cell of ``plan`` not yet in ``out`` and return all of the
    folder's rows for this plan, in plan order.

    ``engine="pool"`` (default) runs the cells on ``jobs`` local processes
    (default: every core). ``engine="ray"`` runs them as Ray tasks on the
    cluster at ``ray_address`` (or ``$RAY_ADDRESS``), or on a local Ray
    instance it starts when neither is given; Ray is imported only then
    (``pip install 'stlsim[ray]'``). Either way the rows are written by this
    process, so a worker need not see ``out``. ``on_cell(done, total)`` is
    called as cells finish (a progress bar). ``retry_failed`` runs again the
    cells whose row records an error (they are kept, and skipped, otherwise).

    A row file that cannot be read is a cell not yet done: it runs again, and
    ``on_warning(message)`` says so (default: a :class:`SweepWarning`).
    Ctrl-C (:class:`KeyboardInterrupt`) stops the workers at once and raises
    :class:`SweepInterrupted`, which says how many cells are saved; the same
    call resumes from there."""
    if engine not in ENGINES:
        raise ConfigError(f"unknown sweep engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if ray_address and engine != "ray":
        raise ConfigError("--ray-address needs --engine ray")
    p = load_plan(plan)
    outp = Path(out)
    try:
        outp.mkdir(parents=True, exist_ok=True)
        probe = outp / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"{outp}: cannot write the sweep's results there: {e.strerror or e}") from None
    cells = p.cells()
    (outp / "plan.json").write_text(json.dumps(p.spec, indent=2, default=str) + "\n", encoding="utf-8")
    order = {cell_hash(c): i for i, c in enumerate(cells)}
    # The rows of earlier runs of the plan are read now, not after the run:
    # an unreadable one is then a cell to run again, not a failure at the end.
    bad: list[Path] = []
    kept = {r["hash"]: r for r in _read_row_files(outp, only=order, unreadable=bad)}
    for f in bad:
        (on_warning or _warn)(f"{f} is unreadable; running its cell again")
    if retry_failed:
        kept = {h: r for h, r in kept.items() if r.get("error") is None}
    todo = [c for c in cells if cell_hash(c) not in kept]
    total, done = len(cells), len(cells) - len(todo)
    if on_cell:
        on_cell(done, total)

    fresh: dict[str, dict[str, Any]] = {}

    def finished(row: dict[str, Any]) -> None:
        nonlocal done
        done += 1
        fresh[row["hash"]] = row
        if on_cell:
            on_cell(done, total)

    if todo:
        todo = schedule(todo)
        # Those of the unreadable files that are still the same bytes after an
        # interruption are not saved rows.
        stale = {f.stem: _stamp(f) for f in bad}
        try:
            if engine == "ray":
                _run_on_ray(todo, str(outp), jobs, ray_address, finished)
            else:
                _run_on_pool(todo, str(outp), jobs, finished)
        except KeyboardInterrupt:
            rows_dir = outp / "rows"
            for c in todo:
                # A worker stopped mid-write leaves its temporary file.
                (rows_dir / f".{cell_hash(c)}.tmp").unlink(missing_ok=True)
            on_disk = {f.stem for f in rows_dir.glob("*.parquet") if f.stem in order and _stamp(f) != stale.get(f.stem)}
            raise SweepInterrupted(len(on_disk), total, outp) from None
    found = {**kept, **fresh}
    import pandas as pd

    # Built in plan order, so that the columns come in the same order however
    # the rows were found.
    return pd.DataFrame(sorted(found.values(), key=lambda r: order[r["hash"]]))


def _stamp(f: Path) -> tuple[int, int] | None:
    """A file's modification time and size (None if it is gone)."""
    try:
        st = f.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _warn(message: str) -> None:
    import warnings

    warnings.warn(message, SweepWarning, stacklevel=3)


def _run_and_write(cell: Mapping[str, Any], out: str) -> dict[str, Any]:
    """A pool worker's job: run the cell and write its row itself (the
    Parquet write then runs in parallel, not in the parent)."""
    row = run_cell(cell, out)
    _write_row(Path(out), row)
    return row


def _worker_setup(one_thread: bool) -> None:
    """Pool-worker set-up: Ctrl-C is the parent's to handle (it stops the
    workers itself, at once); with ``one_thread`` parse and verify run on the
    worker's own thread."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if one_thread:
        os.environ["STLSIM_PARSE_THREAD"] = "0"
        os.environ["STLSIM_VERIFY_THREAD"] = "0"


def _run_on_pool(todo: list[dict[str, Any]], out: str, jobs: int | None, finished: Callable[[dict[str, Any]], None]) -> None:
    workers = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
    if workers == 1:
        for c in todo:
            finished(_run_and_write(c, out))
        return
    # Here, not at the top: multiprocessing is a tenth of `import stlsim`,
    # which every command pays.
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    # Imported before the workers fork, so that each does not import them again
    # (pyarrow's import alone costs about as much as a short cell).
    import pyarrow.parquet  # noqa: F401

    from . import api  # noqa: F401

    # Workers enough for every core: each parses on its own thread rather
    # than start a second one per run (docs/cli.md), unless the user chose.
    one_thread = workers >= (os.cpu_count() or 1) and not {"STLSIM_PARSE_THREAD", "STLSIM_VERIFY_THREAD"} & set(os.environ)
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_setup, initargs=(one_thread,))
    try:
        pending = {pool.submit(_run_and_write, c, out) for c in todo}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                finished(f.result())
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown()


def _stop_pool(pool: Any) -> None:
    """Stop a process pool now: drop the queued cells and kill the running
    ones. ``shutdown`` alone waits for every queued cell (a 44-cell sweep ran
    on for 29 s after Ctrl-C); a worker holds nothing worth keeping, since a
    row is renamed into place only once complete."""
    # The executor has no public way to kill its workers; its process table is it.
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.join(timeout=1)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=1)


def _run_on_ray(
    todo: list[dict[str, Any]],
    out: str,
    jobs: int | None,
    address: str | None,
    finished: Callable[[dict[str, Any]], None],
) -> None:
    try:
        import ray
    except ImportError:
        raise ConfigError("--engine ray needs Ray: pip install 'stlsim[ray]'") from None
    address = address or os.environ.get("RAY_ADDRESS") or None
    started = False
    if not ray.is_initialized():
        try:
            if address:
                ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
            else:
                # A private instance on loopback, sized like the pool would be.
                ray.init(
                    num_cpus=jobs or os.cpu_count() or 1,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.ERROR,
                    _node_ip_address="127.0.0.1",
                )
        except Exception as e:  # Ray's own errors are long; the first line says what
            first = (str(e) or type(e).__name__).strip().splitlines()[0]
            where = address or "a local instance"
            raise ConfigError(f"cannot start or reach Ray ({where}): {first}") from None
        started = True
    try:
        # One CPU per cell; the row (with the report's files) comes back by value.
        task = ray.remote(num_cpus=1, max_retries=0)(run_cell)
        pending = [task.remote(c, out, True) for c in todo]
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    row = ray.get(ref)
                    _write_row(Path(out), row)  # the row and its report's files, here
                    finished(row)
        except KeyboardInterrupt:
            # A shared cluster would otherwise run the rest of the plan for nobody.
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # a task that just finished cannot be cancelled; nothing to do
                    pass
            raise
    finally:
        if started:
            ray.shutdown()
