"""The Python API: :func:`run` one configuration, :func:`compare` several,
:func:`analyze` a trace's track writes.

A run is validated completely (settings, drive, layer and its parameters,
trace format) before the first request is replayed. The native simulation is
stepped in chunks so a progress bar can follow it and Ctrl-C is honoured
between chunks.
"""

from __future__ import annotations

import contextvars
import functools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import _core
from .config import (
    DEFAULT_DRIVE,
    DEFAULT_LAYER,
    DEFAULTS,
    _core_message,
    check_settings,
    default_trace,
    load_drive,
    load_drive_noting,
    load_run_config,
)
from .errors import ConfigError, TraceIOError
from .plots import check_plot_format
from .result import LATENCY_CLASSES, Comparison, Result, check_labels, check_output_folder
from .synth import SynthTrace, as_synth

if TYPE_CHECKING:
    import inspect

    from .analysis import Analysis
    from .trace_options import TraceOptions

__all__ = ["analyze", "compare", "run"]

#: Requests replayed per call into the core between progress updates.
CHUNK = 16384
#: A progress bar appears only once a run has taken this long (seconds).
PROGRESS_AFTER_S = 1.0

ConfigSource = str | os.PathLike[str] | Mapping[str, Any]

_F = TypeVar("_F", bound=Callable[..., Any])
_GIVEN: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("stlsim_given", default=frozenset())


def _out_path(out: Any, what: str = "out") -> Path:
    """``out`` as a Path, refusing what is not a path (``out=5`` would
    otherwise fail deep in pathlib with a TypeError, not an stlsim error)."""
    if isinstance(out, bool) or not isinstance(out, (str, os.PathLike)):
        raise ConfigError(f"configuration error: {what} must be a path (a str or os.PathLike), got {type(out).__name__} {out!r}")
    return Path(out)


def _records_given(fn: _F) -> _F:
    """Let ``fn`` know which arguments its caller passed (so explicit
    arguments beat a config file while defaults do not)."""

    @functools.cache
    def signature() -> inspect.Signature:
        # Taken at the first call, not at import: inspect is slow to import,
        # and `stlsim run` calls no decorated function (it calls simulate).
        import inspect

        return inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature().bind(*args, **kwargs)
        except TypeError:
            return fn(*args, **kwargs)  # fails too, with Python's own message naming fn
        token = _GIVEN.set(frozenset(bound.arguments))
        try:
            return fn(*args, **kwargs)
        finally:
            _GIVEN.reset(token)

    return cast(_F, wrapper)


def resolve_settings(config: ConfigSource | None, given: Mapping[str, Any]) -> dict[str, Any]:
    """Run settings: the defaults, then ``config`` (a TOML path or dict), then
    the explicitly ``given`` settings. Layer parameters merge by name."""
    s = dict(DEFAULTS)
    if config is not None:
        s.update(load_run_config(config))
    for k, v in check_settings(given).items():
        if k == "params" and v is not None and s.get("params"):
            s["params"] = {**s["params"], **v}
        else:
            s[k] = v
    return s


def _trace_source(trace: Any, drive: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The trace's path (a synthetic trace's name) and, for a synthetic
    trace, the generator's spec with ``usage`` resolved against ``drive``."""
    if trace is None:
        trace = default_trace()
    synth = as_synth(trace)
    if synth is not None:
        return synth.name, synth.spec(drive)
    return os.path.expanduser(os.fspath(trace)), None


def _trace_spec(s: Mapping[str, Any], drive: Mapping[str, Any]) -> dict[str, Any]:
    """The core's trace description from run settings (``drive`` resolves a
    synthetic trace's ``usage``)."""
    path, synth = _trace_source(s["trace"], drive)
    spec: dict[str, Any] = {
        "path": path,
        "format": s["format"],
        "disk": None if s["disk"] == "all" else s["disk"],
        "all_devices": s["disk"] == "all",
        "start": s["start"],
        "limit": s["limit"],
        "repeat": s.get("repeat", 1),
        "event": s["event"],
        "skip_unknown": s["skip_unknown"],
        "only": s["only"],
        "time_from_s": s["time_from_s"],
        "time_to_s": s["time_to_s"],
        "file_extent_mib": s["file_extent_mib"],
        "rate_iops": s["rate_iops"],
        "pair": s["pair_completions"],
    }
    if synth is not None:
        spec["synth"] = synth
    if s["csv"]:
        spec["csv"] = dict(s["csv"])
    return spec


#: Key of a core configuration holding warnings the front end adds to the
#: run's report (not passed to the core).
NOTES = "front_end_warnings"


def core_config(s: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-ready run configuration the core takes, from run settings
    (plus, under :data:`NOTES`, warnings for the report, e.g. the drive keys
    a drive without a preset took from the built-in defaults)."""
    drive, notes = load_drive_noting(s["drive"])
    spec = _trace_spec(s, drive)
    cfg: dict[str, Any] = {
        "trace": spec,
        "drive": drive,
        "layer": {"name": s["layer"], "params": dict(s["params"] or {})},
        "replay": {
            "mode": s["mode"],
            "queue_depth": s["queue_depth"],
            "scale": s["scale"],
            "write_cache": s["write_cache"],
            "fold": s["fold"],
            "series_every": s["series_every"],
            "prefill": s["prefill"],
            "fold_to_prefill": s["fold_to_prefill"],
            "waf_every": s["waf_every"],
            "history": s["history"],
            "history_seed": s["history_seed"],
        },
        "verify": s["verify"],
        "crash_after": list(s["crash_after"] or []),
        "crash_at_ops": list(s["crash_at_ops"] or []),
    }
    if s["rate_iops"] is not None:
        notes = [*(notes or []), f"the trace carries no times: its requests were issued at {s['rate_iops']:g} a second (rate_iops)"]
    if notes:
        cfg[NOTES] = notes
    return cfg


def parse_thread() -> bool:
    """Whether runs parse their trace on a second thread (the default;
    ``STLSIM_PARSE_THREAD=0`` keeps them on one). A speed setting, not part
    of a run's configuration: the results are the same either way."""
    return os.environ.get("STLSIM_PARSE_THREAD", "1") != "0"


def verify_thread() -> bool:
    """Whether verified runs check on a second thread once they are long
    enough (the default; ``STLSIM_VERIFY_THREAD=0`` keeps the checks on the
    engine's thread). A speed setting like :func:`parse_thread`."""
    return os.environ.get("STLSIM_VERIFY_THREAD", "1") != "0"


def _open(cfg: Mapping[str, Any]) -> _core.Simulation:
    core = {k: v for k, v in cfg.items() if k != NOTES}
    core["replay"] = {**core["replay"], "parse_thread": parse_thread(), "verify_thread": verify_thread()}
    try:
        return _core.Simulation(json.dumps(core))
    except ConfigError as e:
        raise ConfigError(f"configuration error: {_core_message(e)}") from None


class _Bar:
    """A rich progress bar on stderr (by fraction of the trace)."""

    def __init__(self, label: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._progress.add_task(label, total=1.0)
        self._progress.start()

    def update(self, fraction: float) -> None:
        self._progress.update(self._task, completed=min(max(fraction, 0.0), 1.0))

    def stop(self) -> None:
        self._progress.stop()


def _fraction(sim: _core.Simulation, limit: int | None) -> float:
    f = sim.progress
    if limit:
        f = max(f, sim.requests_done / limit)
    return f


def _add_verification_memory(report: dict[str, Any], sim: _core.Simulation) -> None:
    """Put what verification held into the report's verification section
    (measured from the run's own structures, so kept out of the core's
    deterministic report, whose bytes the golden tests pin)."""
    mem = sim.verification_memory()
    if mem is None:
        return
    state, written = mem
    v = report["verification"]
    v["state_bytes"] = state
    v["written_sectors"] = written
    v["bytes_per_written_sector"] = round(state / written, 3) if written else 0.0


def simulate(cfg: Mapping[str, Any], label: str, progress: bool = False) -> Result:
    """Run one core configuration to the end and collect its result."""
    t0 = time.perf_counter()
    sim = _open(cfg)
    limit = cfg["trace"].get("limit")
    bar: _Bar | None = None
    try:
        while not sim.step(CHUNK):
            if progress and bar is None and time.perf_counter() - t0 > PROGRESS_AFTER_S:
                bar = _Bar(label)
            if bar is not None:
                bar.update(_fraction(sim, limit))
    finally:
        if bar is not None:
            bar.stop()
    report = json.loads(sim.report_json())
    report["warnings"] = list(cfg.get(NOTES, [])) + list(report.get("warnings") or [])
    _add_verification_memory(report, sim)
    cdfs = {c: sim.cdf(c) for c in LATENCY_CLASSES}
    series = sim.series_json()  # decoded by Result when first used
    waf = json.loads(sim.waf_series_json())
    return Result(label, report, dict(cfg), cdfs, series, wall_s=time.perf_counter() - t0, waf_series=waf)


@_records_given
def run(
    trace: str | os.PathLike[str] | SynthTrace | None = None,
    drive: str | os.PathLike[str] | Mapping[str, Any] = DEFAULT_DRIVE,
    layer: str = DEFAULT_LAYER,
    params: Mapping[str, Any] | None = None,
    mode: str = "queue",
    queue_depth: int = 64,
    scale: float = 1.0,
    write_cache: bool | None = None,
    fold: bool = False,
    verify: bool = False,
    *,
    series_every: int = 1000,
    prefill: float | str | None = None,
    fold_to_prefill: bool = False,
    waf_every: int = 10_000,
    history: float | None = None,
    history_seed: int = 1,
    repeat: int = 1,
    crash_after: Sequence[int] | None = None,
    crash_at_ops: Sequence[int] | None = None,
    config: ConfigSource | None = None,
    progress: bool = False,
    out: str | os.PathLike[str] | None = None,
    label: str | None = None,
    plot_format: str | None = None,
    trace_options: TraceOptions | None = None,
    **trace_kw: Any,
) -> Result:
    """Replay a trace through one translation layer on one drive.

    Args:
        trace: trace file (``.gz`` / ``.zst`` are decompressed); a synthetic
            trace, generated as it is replayed (:func:`stlsim.synth_trace`, or
            text like ``"synth:sequential,usage=0.75,seed=1"``; ``usage`` is
            resolved against ``drive``); None: the bundled CloudPhysics trace
            (113,872 requests).
        drive: a preset name (:func:`stlsim.drives`), a drive TOML path, or a dict.
        layer: a registered layer (:func:`stlsim.layers`).
        params: the layer's parameters by name (values are converted to their declared kinds).
        mode: ``queue`` (host queue of ``queue_depth``, trace timing), ``flat-out``
            (queue depth 1, no gaps), ``scaled`` (open loop, gaps times ``scale``)
            or ``closed`` (queue depth 1, each request its think time after the
            previous one completes, as DiskSim replays validate traces).
        write_cache: force the drive's write cache on or off (None: the drive's own).
        fold: fold offsets beyond the drive's capacity back into it.
        verify: carry data and check every read and the final footprint.
        series_every: requests per point of :meth:`Result.series` (doubled, with
            pairs of points merged, whenever the series reaches 10,000 points).
        prefill: how full the drive is when the run starts: a fraction of the
            host capacity (0: empty, 1: full; host LBAs from 0), or
            ``"footprint"`` (every track the trace touches); None: the drive's
            own default (``imr-paper``: full, the paper's assumption; the other presets: empty).
        fold_to_prefill: fold trace LBAs into the prefilled range (LBA mod
            prefill x capacity), as He & Du do for their usage levels.
        waf_every: host writes per point of :meth:`Result.waf_series`.
        history: start from a drive with a history: before the trace, random
            4 KiB writes (seeded, uniform over the host space, no idle time)
            until the layer's persistent cache or map is this full (a fraction
            above 0 and below 1; layers with such a buffer: smr-eregion,
            smr-vguard). The run's counts and clock start after it
            (docs/drive-model.md). None: no history.
        history_seed: the history's seed.
        repeat: replay the trace selection this many times back to back,
            each copy shifted in time (LBAs unchanged).
        crash_after: inject a power loss after each of these many completed requests.
        crash_at_ops: inject a power loss before these physical operation numbers.
        config: a run-configuration TOML path or dict (layout of ``stlsim
            init-config``); arguments passed explicitly override it.
        progress: show a progress bar on stderr once the run takes over a second.
        out: save the result into this folder (:meth:`Result.save`).
        label: the run's name (default: the config's label or file name, else the layer).
        plot_format: with ``out``, also save the run's plots (:meth:`Result.plot`)
            as ``png``, ``pdf`` or ``svg``; None: no plots.
        trace_options: how the trace is read (:class:`stlsim.TraceOptions`);
            its fields given a value other than their default override
            ``config``.
        **trace_kw: the same options one by one, as keywords: format, disk,
            start, limit, csv, event, skip_unknown, only, time_from_s,
            time_to_s, file_extent_mib, rate_iops, pair_completions (each
            described on :class:`stlsim.TraceOptions`), e.g. ``limit=5000``;
            each given overrides ``config``. A field given in
            ``trace_options`` too is a TypeError.

    Raises:
        ConfigError, TraceFormatError, TraceIOError, DataLossError, MediumError;
        TypeError for a keyword that is neither a parameter nor a trace option.
    """
    from .trace_options import parameter_names, trace_settings

    traced = trace_settings("run", trace_options, trace_kw, parameter_names(run))
    if out is not None:
        _out_path(out)
    given_names = _GIVEN.get()
    args = dict(locals())
    given = {k: args[k] for k in given_names if k in DEFAULTS}
    given.update(traced)
    s = resolve_settings(config, given)
    cfg = core_config(s)
    fmt = None if plot_format is None else check_plot_format(plot_format)
    if out is not None:
        check_output_folder(out)
    result = simulate(cfg, s["label"] or s["layer"], progress)
    if out is not None:
        result.save(out, plot_format=fmt)
    return result


def _unique(labels: list[str]) -> list[str]:
    """Labels made unique by appending -2, -3 ... to repeats."""
    out: list[str] = []
    for lab in labels:
        name, n = lab, 1
        while name in out:
            n += 1
            name = f"{lab}-{n}"
        out.append(name)
    return out


def _usage_levels(usages: Sequence[float]) -> list[float]:
    """Usage levels as fractions: each in (0, 1], or a percentage in (1, 100]."""
    out = []
    for u in usages:
        try:
            f = float(u)
        except (TypeError, ValueError):
            raise ConfigError(f"configuration error: usage level {u!r} is not a number") from None
        if 1.0 < f <= 100.0:
            f /= 100.0
        if not (0.0 < f <= 1.0):
            raise ConfigError(
                f"configuration error: usage level {u!r} must be a fraction in (0, 1] or a percentage in (0, 100]"
            )
        out.append(f)
    if not out:
        raise ConfigError("configuration error: usages needs at least one usage level")
    return out


def compare(
    configs: Sequence[ConfigSource] | ConfigSource,
    trace: str | os.PathLike[str] | SynthTrace | None = None,
    *,
    progress: bool = False,
    out: str | os.PathLike[str] | None = None,
    usages: Sequence[float] | None = None,
    plot_format: str = "png",
    trace_options: TraceOptions | None = None,
    **common: Any,
) -> Comparison:
    """Run several configurations in turn and put them side by side.

    Each entry of ``configs`` is a run-configuration TOML path or a dict of the
    same shape (``{"label": ..., "layer": {"name": ..., "params": {...}}, ...}``;
    ``layer`` and ``drive`` may be plain strings). ``trace`` and ``common``
    (any :func:`run` setting, e.g. ``limit=5000``, ``drive="cmr"``) apply to
    every configuration and override it. Labels default to the config's label,
    its file name, or its layer, made unique with ``-2``, ``-3`` ...
    ``trace_options`` (:class:`stlsim.TraceOptions`) sets how the trace is
    read, as the same options given one by one in ``common`` do (for
    :func:`run`: its fields other than their defaults override the
    configurations).

    ``usages`` (fractions such as ``[0.25, 0.5, 0.75, 1.0]``, or percentages)
    runs every configuration at every usage level, as He & Du's Figure 3 does
    (paper 002 section 5.3): the drive starts that full (``prefill``) and the
    trace's LBAs fold into the filled range (``fold_to_prefill``, unless
    given as False). Runs are labelled ``LABEL@25%``; see
    :meth:`Comparison.by_usage`.

    ``out``: save the comparison there (:meth:`Comparison.save`), its plots
    as ``plot_format`` (png, pdf or svg).

    Every configuration is validated before the first run starts, and so
    are the labels: two that would be saved in the same folder (``a/b`` and
    ``a_b``; see :func:`stlsim.result.check_labels`) are an error.
    """
    if out is not None:
        _out_path(out)
    if isinstance(configs, (str, os.PathLike, Mapping)):
        configs = [configs]
    configs = list(configs)
    if not configs:
        raise ConfigError("configuration error: compare needs at least one configuration")
    unknown = sorted(set(common) - set(DEFAULTS) | ({"label"} & set(common)))
    if unknown:
        from .config import closest_name

        near = closest_name(unknown[0], [k for k in DEFAULTS if k != "label"]) if unknown != ["label"] else None
        hint = f"; did you mean '{near}'?" if near and len(unknown) == 1 else ""
        raise TypeError(f"compare() got unexpected keyword argument(s): {', '.join(unknown)}{hint}")
    given = dict(common)
    if trace_options is not None:
        from .trace_options import FIELDS, trace_settings

        given.update(trace_settings("compare", trace_options, {k: v for k, v in common.items() if k in FIELDS}))
    if trace is not None:
        given["trace"] = trace
    levels: list[float | None] = [None]
    if usages is not None:
        if "prefill" in given:
            raise ConfigError("configuration error: give either usages or prefill, not both")
        levels = list(_usage_levels(usages))
        given.setdefault("fold_to_prefill", True)
    runs: list[tuple[dict[str, Any], str, float | None]] = []
    bases = [resolve_settings(c, given) for c in configs]
    base_labels = _unique([s["label"] or s["layer"] for s in bases])
    for level in levels:
        for c, base in zip(configs, base_labels):
            if level is None:
                runs.append((resolve_settings(c, given), base, None))
            else:
                runs.append((resolve_settings(c, {**given, "prefill": level}), base, level))
    labels = [base if level is None else f"{base}@{100 * level:g}%" for _, base, level in runs]
    # Each run is saved in a folder named after its label: refuse labels that would share one.
    where = {base: (os.fspath(c) if isinstance(c, (str, os.PathLike)) else "") for c, base in zip(configs, base_labels)}
    check_labels(labels, [where[base] for _, base, _ in runs])
    cfgs = [core_config(s) for s, _, _ in runs]
    fmt = check_plot_format(plot_format)
    if out is not None:
        check_output_folder(out)
    results = []
    for cfg, label, (_, base, level) in zip(cfgs, labels, runs):
        r = simulate(cfg, label, progress)
        r.group, r.usage = base, level
        results.append(r)
    comparison = Comparison(results)
    if out is not None:
        comparison.save(Path(out), plot_format=fmt)
    return comparison


def analyze(
    trace: str | os.PathLike[str] | SynthTrace | None = None,
    drive: str | os.PathLike[str] | Mapping[str, Any] = DEFAULT_DRIVE,
    *,
    fold: bool = False,
    hottest: int = 3000,
    neighbours: int = 20,
    colder: int = 50,
    tracks: Sequence[int] | None = None,
    interval: int = 10_000,
    out: str | os.PathLike[str] | None = None,
    plot_format: str = "png",
    trace_options: TraceOptions | None = None,
    **trace_kw: Any,
) -> Analysis:
    """Map every write of a trace onto the physical (home) tracks of a drive
    and analyse them, as the IMR paper does to explain its results.

    Nothing is simulated: each write request is split into the tracks it
    touches in the drive's layout (LBA order, e.g. IMR zigzag), and each
    (request, track) pair counts as one *track write*.

    Args:
        trace: trace file (``.gz`` / ``.zst`` ok), a synthetic trace (as for
            :func:`run`); None: the bundled CloudPhysics trace.
        drive: a preset name, a drive TOML path, or a dict (as for :func:`run`).
        fold: fold offsets beyond the drive's capacity back into it (as for :func:`run`).
        hottest: tracks in the write-count CDF (:meth:`Analysis.hottest`, paper Figures 2 and 10).
        neighbours: hottest bottom tracks shown with their neighbours
            (:meth:`Analysis.neighbours`, Figures 4 and 11).
        colder: a hot bottom track is flip-friendly when a neighbour is at least
            this many writes colder (section 2.2).
        tracks: physical tracks followed over time (:meth:`Analysis.frequency`,
            Figure 5); None: the 4 hottest.
        interval: write requests per interval of :meth:`Analysis.frequency`.
        out: save the figures and ``track_counts.parquet`` into this folder (:meth:`Analysis.save`).
        plot_format: the figures' format with ``out``: png, pdf or svg.
        trace_options, **trace_kw: how the trace is read, as for :func:`run`:
            a :class:`stlsim.TraceOptions`, or its fields as keywords
            (``format``, ``disk``, ``start``, ``limit``, ``csv`` ...).

    Raises:
        ConfigError (unknown drive, bad setting, track beyond the drive),
        TraceFormatError (a malformed record, or one beyond the capacity
        without ``fold``), TraceIOError; TypeError for a keyword that is
        neither a parameter nor a trace option.
    """
    from .analysis import Analysis
    from .trace_options import parameter_names, trace_settings

    traced = trace_settings("analyze", trace_options, trace_kw, parameter_names(analyze))
    if out is not None:
        _out_path(out)
    # fold and drive are checked even when None (an error), as are the trace options given.
    given = {"drive": drive, "fold": fold, **({} if trace is None else {"trace": trace}), **traced}
    s = resolve_settings(None, given)
    drive_cfg = load_drive(s["drive"])
    spec = _trace_spec(s, drive_cfg)
    fmt = check_plot_format(plot_format)
    if out is not None:
        check_output_folder(out)
    try:
        text = _core.track_writes_json(json.dumps(spec), json.dumps(drive_cfg), bool(s["fold"]))
    except ConfigError as e:
        raise ConfigError(f"configuration error: {_core_message(e)}") from None
    analysis = Analysis(
        spec["path"],
        drive_cfg,
        json.loads(text),
        hottest=hottest,
        neighbours=neighbours,
        colder=colder,
        interval=interval,
        tracks=tracks,
    )
    if out is not None:
        analysis.save(out, plot_format=fmt)
    return analysis


def convert(
    trace: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    trace_options: TraceOptions | None = None,
    **trace_kw: Any,
) -> dict[str, Any]:
    """Convert a trace into stlsim's binary form (``.stlt``), which every
    command reads directly and much faster than text.

    The selection (``disk``, ``start``, ``limit``) is applied; each record
    keeps its disk and its source line (errors about it name the original
    line). The file's header records where it came from: the source's path,
    size and SHA-256, its format, the selection, and the stlsim version.
    Returns that header plus ``records`` and ``bytes`` written.

    How the trace is read: ``trace_options`` (a :class:`stlsim.TraceOptions`)
    or its fields as keywords (``format``, ``disk``, ``start``, ``limit``,
    ``csv`` ...), as for :func:`run`. ``force``: overwrite an existing ``out``.

    Raises:
        ConfigError (an existing ``out`` without ``force``, a bad option),
        TraceFormatError, TraceIOError; TypeError for a keyword that is
        neither a parameter nor a trace option.
    """
    import hashlib

    from ._core import __version__
    from .trace_options import parameter_names, trace_settings

    traced = trace_settings("convert", trace_options, trace_kw, parameter_names(convert))
    given = {**({} if trace is None else {"trace": trace}), **traced}
    s = resolve_settings(None, given)
    spec = _trace_spec(s, {})
    if "synth" in spec:
        raise ConfigError("configuration error: convert reads a trace file; write a synthetic trace with `stlsim synth`")
    src, dst = Path(spec["path"]), _out_path(out)
    if dst.exists() and not force:
        raise ConfigError(f"configuration error: '{dst}' exists (use --force to overwrite it)")
    if src.resolve() == dst.resolve():
        raise ConfigError(f"configuration error: '{dst}' is the trace being converted")
    check_output_folder(dst.parent if str(dst.parent) else ".")
    # The header records the source's size and SHA-256, read before the
    # conversion: a device or a pipe has neither (/dev/zero never ends).
    if src.exists() and not src.is_file():
        raise ConfigError(
            f"configuration error: convert reads a regular file (it records the file's size and SHA-256); '{src}' is not one"
        )
    h = hashlib.sha256()
    try:
        with src.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        size = src.stat().st_size
    except OSError as e:
        raise TraceIOError(f"cannot open trace '{src}': {e.strerror or e}") from None
    header = {
        "stlsim_version": __version__,
        "converted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "source": {"path": str(src.resolve()), "size_bytes": size, "sha256": h.hexdigest()},
        "selection": {
            k: spec[k]
            for k in ("disk", "all_devices", "start", "limit", "event", "skip_unknown", "only", "time_from_s", "time_to_s", "file_extent_mib", "rate_iops", "pair")
            if spec.get(k) not in (None, 0, False)
        },
    }
    if "csv" in spec:
        header["csv"] = spec["csv"]
    done = json.loads(_core.convert_trace(json.dumps(spec), os.fspath(dst), json.dumps(header)))
    return {**header, **done}


def trace_info(
    trace: str | os.PathLike[str] | None = None,
    drive: str | os.PathLike[str] | Mapping[str, Any] | None = DEFAULT_DRIVE,
    *,
    trace_options: TraceOptions | None = None,
    **trace_kw: Any,
) -> dict[str, Any]:
    """What a trace holds, read once without simulating: the detected
    ``format``, ``requests``, ``reads``, ``writes``, bytes read and written,
    ``sizes`` (requests by size, powers of two), the address span
    (``first_byte``, ``end_byte``), ``duration_s``, requests per device,
    paper 004 Table 3's write statistics in 4 KiB blocks (``write_blocks``,
    ``updated_blocks`` among them, ``write_footprint_blocks``, ``write_zones``
    of 256 MiB), and, with a ``drive``, ``write_tracks`` (distinct tracks the
    writes touch) and ``writes_beyond`` its capacity. A binary trace adds its
    ``header``.

    How the trace is read: ``trace_options`` (a :class:`stlsim.TraceOptions`)
    or its fields as keywords (``format``, ``disk``, ``start``, ``limit``,
    ``csv`` ...), as for :func:`run`; a keyword that is neither a parameter
    nor a trace option is a TypeError.
    """
    from .trace_options import parameter_names, trace_settings

    traced = trace_settings("trace_info", trace_options, trace_kw, parameter_names(trace_info))
    given = {**({} if trace is None else {"trace": trace}), **traced}
    if drive is not None:
        given["drive"] = drive
    s = resolve_settings(None, given)
    drive_cfg = load_drive(s["drive"]) if drive is not None else {}
    spec = _trace_spec(s, drive_cfg)
    info = json.loads(_core.trace_info_json(json.dumps(spec), json.dumps(drive_cfg) if drive is not None else ""))
    first, last = info.get("first_ns"), info.get("last_ns")
    info["duration_s"] = (last - first) / 1e9 if first is not None and last is not None else 0.0
    info["drive"] = drive_cfg.get("name") if drive is not None else None
    info["path"] = spec["path"]
    if info["format"] == "stlt":
        info["header"] = json.loads(_core.binary_trace_header(spec["path"]))
    return info
