"""Configuration: drive presets, run-configuration TOML files, layer listings
and ``--param NAME=VALUE`` parsing.

Everything here is validated before a simulation starts, and every problem is
a :class:`~stlsim.errors.ConfigError` whose message names the file and key
at fault. The native core validates again (unknown keys are rejected there
too), so this module never has to know every field of the Rust structs; it
knows the run-level settings that the Python API exposes as arguments.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core
from .errors import ConfigError

# tomllib, copy and re are imported in the functions that use them: a short
# `stlsim run` starts in a few tens of milliseconds, and each module a call
# does not need costs one or more (docs/architecture.md).
if TYPE_CHECKING:
    import re

__all__ = [
    "DEFAULT_DRIVE",
    "DEFAULT_LAYER",
    "DEFAULTS",
    "FORMATS",
    "MODES",
    "check_drive",
    "default_trace",
    "deep_merge",
    "drives",
    "init_config_text",
    "layers",
    "drive_defaults_taken",
    "load_drive",
    "load_drive_noting",
    "load_run_config",
    "parse_param",
    "parse_params",
    "parse_history",
    "parse_prefill",
]

DEFAULT_DRIVE = "imr-paper"
DEFAULT_LAYER = "cmr"
#: Replay modes the core knows.
MODES = ("queue", "flat-out", "scaled", "closed")
#: Trace formats the core knows, as the core lists them (one list: the
#: Rust registry ``trace::FORMATS``), with their aliases.
_FORMAT_LISTING: list[dict[str, Any]] = json.loads(_core.formats_json())
FORMATS = tuple(f["name"] for f in _FORMAT_LISTING)
_FORMAT_ALIASES: dict[str, str | None] = {"auto": None, "": None} | {a: f["name"] for f in _FORMAT_LISTING for a in f["aliases"]}

#: Defaults of every run setting (the keyword arguments of :func:`stlsim.run`
#: that describe a run). ``trace=None`` means the bundled CloudPhysics trace.
DEFAULTS: dict[str, Any] = {
    "label": None,
    "trace": None,
    "format": None,
    "disk": None,
    "start": 0,
    "limit": None,
    "csv": None,
    "event": None,
    "skip_unknown": False,
    "only": None,
    "time_from_s": None,
    "time_to_s": None,
    "file_extent_mib": None,
    "rate_iops": None,
    "pair_completions": False,
    "drive": DEFAULT_DRIVE,
    "layer": DEFAULT_LAYER,
    "params": None,
    "mode": "queue",
    "queue_depth": 64,
    "scale": 1.0,
    "write_cache": None,
    "fold": False,
    "series_every": 1000,
    "prefill": None,
    "fold_to_prefill": False,
    "waf_every": 10_000,
    "history": None,
    "history_seed": 1,
    "repeat": 1,
    "verify": False,
    "crash_after": None,
    "crash_at_ops": None,
}

#: The settings that say how a trace is read and replayed: every run setting
#: but which trace, drive and layer, the layer's parameters and the label
#: (the options a sweep plan may set per cell).
REPLAY_SETTINGS = frozenset(DEFAULTS) - {"label", "trace", "drive", "layer", "params"}

# Where each run setting lives in a run-configuration TOML file.
_TOML_NAME = {
    "label": "label",
    "trace": "trace.path",
    "format": "trace.format",
    "disk": "trace.disk",
    "start": "trace.start",
    "limit": "trace.limit",
    "csv": "trace.csv",
    "event": "trace.event",
    "skip_unknown": "trace.skip_unknown",
    "only": "trace.only",
    "time_from_s": "trace.time_from_s",
    "time_to_s": "trace.time_to_s",
    "file_extent_mib": "trace.file_extent_mib",
    "rate_iops": "trace.rate_iops",
    "pair_completions": "trace.pair_completions",
    "drive": "drive",
    "layer": "layer.name",
    "params": "layer.params",
    "mode": "replay.mode",
    "queue_depth": "replay.queue_depth",
    "scale": "replay.scale",
    "write_cache": "replay.write_cache",
    "fold": "replay.fold",
    "series_every": "replay.series_every",
    "prefill": "replay.prefill",
    "fold_to_prefill": "replay.fold_to_prefill",
    "waf_every": "replay.waf_every",
    "history": "replay.history",
    "history_seed": "replay.history_seed",
    "repeat": "trace.repeat",
    "verify": "verify",
    "crash_after": "crash_after",
    "crash_at_ops": "crash_at_ops",
}
_TOP_KEYS = ("label", "verify", "crash_after", "crash_at_ops", "trace", "drive", "layer", "replay")
_SECTION_KEYS = {
    "trace": {
        "path": "trace",
        "format": "format",
        "disk": "disk",
        "start": "start",
        "limit": "limit",
        "repeat": "repeat",
        "csv": "csv",
        "event": "event",
        "skip_unknown": "skip_unknown",
        "only": "only",
        "time_from_s": "time_from_s",
        "time_to_s": "time_to_s",
        "file_extent_mib": "file_extent_mib",
        "rate_iops": "rate_iops",
        "pair_completions": "pair_completions",
    },
    "layer": {"name": "layer", "params": "params"},
    "replay": {
        "mode": "mode",
        "queue_depth": "queue_depth",
        "scale": "scale",
        "write_cache": "write_cache",
        "fold": "fold",
        "series_every": "series_every",
        "prefill": "prefill",
        "fold_to_prefill": "fold_to_prefill",
        "waf_every": "waf_every",
        "history": "history",
        "history_seed": "history_seed",
    },
}


@functools.cache
def _serde_position() -> re.Pattern[str]:
    """serde_json's `` at line L column C`` ending (compiled at first use:
    a run that meets no error needs no pattern)."""
    import re

    return re.compile(r" at line \d+ column \d+$")


#: Integers the core takes are 64-bit: JSON would hand it 2^64 and above as
#: a float, which a layer parameter once saturated to 2^64-1.
_INT_MIN, _INT_END = -(1 << 63), 1 << 64


def _core_message(e: Exception) -> str:
    """The message of a core ConfigError without its prefix and JSON position."""
    msg = _serde_position().sub("", str(e))
    return msg.removeprefix("configuration error: ")


# --------------------------------------------------------------------------
# Files and resources
# --------------------------------------------------------------------------

#: The package's folder, which holds the bundled data/ and drives/. The
#: package is always installed as files (a wheel, a source checkout), which
#: is where importlib.resources would find them too; it is not used here
#: because importing it costs a short run several milliseconds.
_PACKAGE_DIR = Path(__file__).parent


def default_trace() -> Path:
    """Path of the bundled trace (``cloudPhysicsIO.vscsi``, 113,872 requests)."""
    return _PACKAGE_DIR / "data" / "cloudPhysicsIO.vscsi"


def check_numbers(value: Any, where: str, path: str) -> None:
    """Reject the numbers JSON cannot carry to the core faithfully: integers
    outside 64 bits (2^64 would become a float) and NaN or infinities (JSON
    has no literal for them). The ConfigError names ``where`` (a file, or ""),
    and the key as a dotted ``path`` (``layout.group_tracks``)."""
    prefix = f"{where}: " if where else ""
    if isinstance(value, Mapping):
        for k, v in value.items():
            check_numbers(v, where, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_numbers(v, where, f"{path}[{i}]")
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        if not _INT_MIN <= value < _INT_END:
            raise ConfigError(f"configuration error: {prefix}{path} = {value} does not fit in 64 bits (at most 2^64-1)")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"configuration error: {prefix}{path} must be a finite number, got {value}")


def _read_toml(path: Path | Any, what: str) -> dict[str, Any]:
    """Parse a TOML file; syntax and read errors become ConfigError naming the file."""
    import tomllib

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"configuration error: {what} '{path}' not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"configuration error: cannot read {what} '{path}': {e}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"configuration error: {path}: invalid TOML: {e}") from None


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` laid on top; nested tables merge key by key, anything else is replaced."""
    import copy

    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


# --------------------------------------------------------------------------
# Drives
# --------------------------------------------------------------------------


def merge_drive(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """A drive description ``over`` laid on ``base`` (a preset): tables merge
    key by key, except a ``layout`` of another ``kind``, which replaces the
    base's whole (each layout kind takes only its own keys: an smr preset's
    ``band_tracks`` means nothing to an imr layout, and the core refuses it)."""
    out = deep_merge(base, over)
    lay, base_lay = over.get("layout"), base.get("layout")
    if isinstance(lay, Mapping) and isinstance(base_lay, Mapping):
        if lay.get("kind", base_lay.get("kind", "cmr")) != base_lay.get("kind", "cmr"):
            import copy

            out["layout"] = copy.deepcopy(dict(lay))
    return out


def _preset_files() -> dict[str, Any]:
    folder = _PACKAGE_DIR / "drives"
    return {p.name[: -len(".toml")]: p for p in folder.iterdir() if p.name.endswith(".toml")}


def drives() -> list[dict[str, Any]]:
    """The shipped drive presets: ``[{name, description, path}]`` sorted by name."""
    out = []
    for name, path in sorted(_preset_files().items()):
        d = _read_toml(path, "drive preset")
        out.append({"name": name, "description": d.get("description", ""), "path": str(path)})
    return out


def check_drive(drive: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a drive description; returns its derived figures
    (tracks, capacity_bytes, sector_bytes, rotation_ms, seek times ...)."""
    figures: dict[str, Any] = json.loads(_core.check_drive(json.dumps(drive)))
    return figures


# The keys that shape a simulation, by layout kind where they belong to one.
# A drive without a preset that leaves one out gets stlsim's built-in
# default for it, and the run says so (see drive_defaults_taken).
_SHAPING_KEYS = (
    "sector_bytes", "rpm", "write_cache_mib", "interface_mb_s", "rotation",
    "seek.model", "layout.kind",
)  # fmt: skip
_SHAPING_BY_MODEL = {"sqrt": ("seek.min_ms", "seek.max_ms"), "table": ("seek.table",)}
_SHAPING_BY_KIND = {
    "smr": ("layout.band_tracks", "layout.head_width_tracks", "layout.direction"),
    "imr": ("layout.top_ratio", "layout.group_tracks", "layout.order"),
    "zoned": ("layout.zone_tracks",),
    "wave": ("layout.region_tracks", "layout.kappa_tracks"),
}


def _builtin_drive() -> dict[str, Any]:
    """stlsim's built-in drive defaults (the core's)."""
    builtin: dict[str, Any] = json.loads(_core.default_drive_json())
    return builtin


def _get(d: Mapping[str, Any], key: str) -> Any:
    table, _, leaf = key.rpartition(".")
    sub = d.get(table, {}) if table else d
    return sub.get(leaf) if isinstance(sub, Mapping) else None


def drive_defaults_taken(d: Mapping[str, Any]) -> list[str]:
    """For a drive description without a preset: the keys that shape the
    simulation but are not given, each as ``key = built-in value`` (empty
    when the description is complete). The size (``track_bytes`` or
    ``[[zones]]``, ``tracks`` or ``capacity_gib``) counts as given when
    either of its pair is."""
    builtin = _builtin_drive()
    keys = list(_SHAPING_KEYS)
    if "zones" not in d or not d.get("zones"):
        keys.append("track_bytes")
    if "tracks" not in d and "capacity_gib" not in d:
        keys.append("capacity_gib")
    model = _get(d, "seek.model") or builtin["seek"]["model"]
    keys += _SHAPING_BY_MODEL.get(model, ())
    kind = _get(d, "layout.kind") or builtin["layout"]["kind"]
    keys += _SHAPING_BY_KIND.get(kind, ())
    # Each layout kind has its own keys and defaults (the core's, by kind).
    if kind in _SHAPING_BY_KIND:
        builtin["layout"] = json.loads(_core.default_layout_json(kind))
    return [f"{k} = {_toml_value(_get(builtin, k))}" for k in keys if _get(d, k) is None]


def load_drive(
    drive: str | os.PathLike[str] | Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
    *,
    base_dir: Path | None = None,
) -> dict[str, Any]:
    """A validated drive description.

    ``drive`` is a preset name (see :func:`drives`), a path to a drive TOML
    file, or a dict. A file or dict may hold ``preset = "NAME"``: the preset
    is loaded and the other keys override it. ``overrides`` are laid on top
    (tables such as ``seek`` and ``layout`` merge key by key). Relative paths
    resolve against ``base_dir`` (default: the working directory).

    A file or dict without a preset takes stlsim's built-in default for each
    key it leaves out; :func:`load_drive_noting` also says which.
    """
    return load_drive_noting(drive, overrides, base_dir=base_dir)[0]


def load_drive_noting(
    drive: str | os.PathLike[str] | Mapping[str, Any],
    overrides: Mapping[str, Any] | None = None,
    *,
    base_dir: Path | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """:func:`load_drive`, and the warnings a run should carry: for a drive
    without a preset that leaves out keys shaping the simulation, one
    sentence naming them and the built-in values they took."""
    source: str
    if isinstance(drive, Mapping):
        import copy

        d = copy.deepcopy(dict(drive))
        source = "drive"
        where = base_dir
    elif isinstance(drive, (str, os.PathLike)):
        text = os.fspath(drive)
        presets = _preset_files()
        path = Path(text)
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        if isinstance(drive, str) and text in presets:
            d = _read_toml(presets[text], "drive preset")
            source = f"drive preset '{text}'"
            where = None
        elif path.is_file():
            d = _read_toml(path, "drive file")
            d.setdefault("name", path.stem)  # a user's drive is named after its file
            source = f"drive file '{path}'"
            where = path.parent
        elif text.endswith(".toml") or os.sep in text or "/" in text:
            raise ConfigError(f"configuration error: drive file '{path}' not found")
        else:
            known = ", ".join(sorted(presets))
            raise ConfigError(
                f"configuration error: unknown drive '{text}' (presets: {known}; or give the path of a drive TOML file)"
            )
    else:
        raise ConfigError(f"configuration error: drive must be a preset name, a path or a dict, not {type(drive).__name__}")

    notes: list[str] = []
    if "preset" in d:
        preset = d.pop("preset")
        if not isinstance(preset, str):
            raise ConfigError(f"configuration error: {source}: 'preset' must be a preset name or a path")
        base, notes = load_drive_noting(preset, base_dir=where)
        d = merge_drive(base, d)
    elif source.startswith("drive preset"):
        pass  # a shipped preset is complete (tests/test_config.py checks it)
    else:
        taken = drive_defaults_taken(merge_drive(d, overrides or {}))
        if taken:
            notes = [
                f"{source} gives no preset and leaves out {len(taken)} key(s) shaping the simulation, "
                f"which took stlsim's built-in defaults: {', '.join(taken)}"
            ]
    if overrides:
        d = merge_drive(d, overrides)
    check_numbers(d, source, "")
    try:
        check_drive(d)
    except ConfigError as e:
        raise ConfigError(f"configuration error: {source}: {_core_message(e)}") from None
    return d, notes


# --------------------------------------------------------------------------
# Layers and parameters
# --------------------------------------------------------------------------


def layers() -> list[dict[str, Any]]:
    """Every registered layer: ``[{name, summary, paper, layout, params: [{name, kind, unit, default, doc}]}]``."""
    listed: list[dict[str, Any]] = json.loads(_core.layers_json())
    return listed


def parse_param(text: str) -> tuple[str, str]:
    """Split ``NAME=VALUE`` (the value may contain ``=``; the core converts it to the declared type)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name or any(c.isspace() for c in name):
        raise ConfigError(f"configuration error: expected NAME=VALUE for a layer parameter, got '{text}'")
    return name, value.strip()


def parse_params(items: list[str] | None) -> dict[str, str]:
    """``--param`` options as a dict; a NAME given twice is an error."""
    out: dict[str, str] = {}
    for t in items or []:
        k, v = parse_param(t)
        if k in out:
            raise ConfigError(f"configuration error: --param {k} is given twice ({out[k]!r} and {v!r})")
        out[k] = v
    return out


# --------------------------------------------------------------------------
# Run settings
# --------------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    """An int (not a bool) the core's 64-bit integers can hold."""
    return isinstance(v, int) and not isinstance(v, bool) and _INT_MIN <= v < _INT_END


def _bad(where: str, key: str, want: str, v: Any) -> ConfigError:
    prefix = f"{where}: " if where else ""
    return ConfigError(f"configuration error: {prefix}{key} must be {want}, got {v!r}")


def parse_prefill(v: Any, where: str = "", key: str = "prefill") -> float | str:
    """A prefill setting: a fraction of the host capacity in [0, 1] (a number
    or its text, ``"50%"`` too), or ``"footprint"``."""
    if isinstance(v, str):
        text = v.strip().lower()
        if text == "footprint":
            return "footprint"
        try:
            v = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise _bad(where, key, "a fraction between 0 and 1 or 'footprint'", v) from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0.0 <= float(v) <= 1.0):
        raise _bad(where, key, "a fraction between 0 and 1 or 'footprint'", v)
    return float(v)


def parse_history(v: Any, where: str = "", key: str = "history") -> float:
    """A history setting: how full the layer's persistent buffer is when the
    trace starts, a fraction above 0 and below 1 (a number or its text,
    ``"90%"`` too)."""
    want = "a fraction above 0 and below 1 (how full the layer's persistent buffer starts)"
    if isinstance(v, str):
        text = v.strip()
        try:
            v = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise _bad(where, key, want, v) from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0.0 < float(v) < 1.0):
        raise _bad(where, key, want, v)
    return float(v)


#: Units a ``--csv`` layout may name for offsets and sizes, in bytes.
_CSV_BYTE_UNITS = {"byte": 1, "bytes": 1, "b": 1, "sector": 512, "sectors": 512, "block": 512, "blocks": 512, "4k": 4096}
_CSV_COLUMNS = {"time": "time_col", "op": "op_col", "offset": "offset_col", "size": "size_col", "device": "device_col"}


def parse_csv_layout(text: str, where: str = "", key: str = "csv") -> dict[str, Any]:
    """A generic CSV layout from its one-line form, as libCacheSim takes it::

        time=1,op=4,offset=5,size=6,header,delim=,
        time=1,time-unit=us,op=2,read=R,write=W,offset=3,offset-unit=bytes,size=4,size-unit=bytes,device=5,delim=tab

    Columns are 1-based (as ``cut`` and libCacheSim count them). Keys:
    ``time``, ``op``, ``offset``, ``size``, ``device`` (columns);
    ``time-unit`` (s, ms, us, ns, filetime); ``offset-unit``, ``size-unit``
    (bytes per unit: a number, or byte, sector, block, 4k); ``read``,
    ``write`` (op values, ``|``-separated); ``delim`` (one character, or
    tab, space, comma, semicolon, ws for runs of whitespace); ``header``
    (skip the first line). Unnamed keys keep the generic CSV's defaults.
    """
    prefix = f"{where}: " if where else ""

    def bad(msg: str) -> ConfigError:
        return ConfigError(f"configuration error: {prefix}{key} layout '{text}': {msg}")

    out: dict[str, Any] = {}
    tokens = [t.strip() for t in text.split(",")]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok:
            continue
        name, eq, value = tok.partition("=")
        name = name.strip().lower().replace("_", "-")
        value = value.strip()
        if name == "header" and not eq:
            out["header"] = True
        elif name in ("delim", "delimiter"):
            if value == "" and i < len(tokens) and tokens[i] == "":
                value = ","  # "delim=," split on its own comma
                i += 1
            named = {"tab": "\t", "space": " ", "comma": ",", "semicolon": ";", "pipe": "|"}
            if value.lower() in ("ws", "whitespace"):
                out["whitespace"] = True
            elif value.lower() in named:
                out["delimiter"] = named[value.lower()]
            elif len(value) == 1:
                out["delimiter"] = value
            else:
                raise bad(f"delim '{value}' is not one character (or tab, space, comma, semicolon, pipe, ws)")
        elif name in _CSV_COLUMNS:
            if not value.isdigit() or int(value) < 1:
                raise bad(f"{name} must be a column number from 1, not '{value}'")
            out[_CSV_COLUMNS[name]] = int(value) - 1
        elif name == "time-unit":
            if value.lower() not in ("s", "ms", "us", "ns", "filetime"):
                raise bad(f"time-unit '{value}' is not s, ms, us, ns or filetime")
            out["time_unit"] = value.lower()
        elif name in ("offset-unit", "size-unit"):
            n = _CSV_BYTE_UNITS.get(value.lower()) or (int(value) if value.isdigit() and int(value) > 0 else None)
            if n is None:
                raise bad(f"{name} '{value}' is not a positive number of bytes (or byte, sector, block, 4k)")
            out[name.replace("-unit", "_unit_bytes")] = n
        elif name in ("read", "write"):
            if not value:
                raise bad(f"{name} needs the op values that mean it, e.g. {name}={name[0].upper()}")
            out[f"{name}_values"] = [v for v in value.split("|") if v]
        else:
            raise bad(
                f"unknown key '{name}' (known: time, op, offset, size, device, time-unit, offset-unit, "
                "size-unit, read, write, delim, header)"
            )
    return out


def closest_name(word: str, known: Iterable[str]) -> str | None:
    """The name of ``known`` a mistyped ``word`` most likely meant, if any
    is close enough (difflib's ratio of at least 0.6), for "did you mean"."""
    import difflib

    near = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return near[0] if near else None


def normalize_format(fmt: str | None, where: str = "", key: str = "format") -> str | None:
    """A trace format name as the core expects it (aliases resolved, ``auto`` -> None)."""
    if fmt is None:
        return None
    if not isinstance(fmt, str):
        raise _bad(where, key, "a format name", fmt)
    f = fmt.strip().lower()
    if f in _FORMAT_ALIASES:
        return _FORMAT_ALIASES[f]
    if f not in FORMATS:
        prefix = f"{where}: " if where else ""
        near = closest_name(f, [*FORMATS, *_FORMAT_ALIASES])
        hint = f"; did you mean '{near}'?" if near else ""
        raise ConfigError(
            f"configuration error: {prefix}unknown trace format '{fmt}'{hint} (known: {', '.join(FORMATS)}, or auto)"
        )
    return f


def check_settings(s: Mapping[str, Any], where: str = "", names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Type-check run settings (see :data:`DEFAULTS`) and normalise them.

    ``where`` prefixes messages (a file name); ``names`` maps setting names to
    the names the user wrote (TOML keys).
    """
    out = dict(s)
    for key, v in s.items():
        name = (names or {}).get(key, key)
        if key not in DEFAULTS:
            raise ConfigError(f"configuration error: {where + ': ' if where else ''}unknown setting '{name}'")
        if v is None:
            if key in (
                "drive", "layer", "mode", "start", "scale", "queue_depth", "series_every", "fold", "verify",
                "fold_to_prefill", "waf_every", "repeat", "skip_unknown", "pair_completions", "history_seed",
            ):  # fmt: skip
                raise _bad(where, name, "given (not None)", v)
            continue
        if key == "disk" and isinstance(v, str) and v.strip().lower() == "all":
            out[key] = "all"
        elif key in ("disk", "start", "limit", "queue_depth"):
            if not _is_int(v) or v < 0:
                raise _bad(where, name, "a non-negative integer" + (' or "all"' if key == "disk" else ""), v)
        elif key in ("waf_every", "repeat", "series_every"):
            if not _is_int(v) or v < 1:
                raise _bad(where, name, "a positive integer", v)
        elif key == "prefill":
            out[key] = parse_prefill(v, where, name)
        elif key == "history":
            out[key] = parse_history(v, where, name)
        elif key == "history_seed":
            if not _is_int(v) or v < 0:
                raise _bad(where, name, "a non-negative integer", v)
        elif key == "scale":
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
                raise _bad(where, name, "a positive number", v)
            out[key] = float(v)
        elif key in ("fold", "verify", "write_cache", "fold_to_prefill", "skip_unknown", "pair_completions"):
            if not isinstance(v, bool):
                raise _bad(where, name, "true or false", v)
        elif key in ("crash_after", "crash_at_ops"):
            if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                raise _bad(where, name, "a list of non-negative integers", v)
            items = list(v)
            if not all(_is_int(x) and x >= 0 for x in items):
                raise _bad(where, name, "a list of non-negative integers", v)
            out[key] = items
        elif key == "mode":
            if v not in MODES:
                raise _bad(where, name, "one of " + ", ".join(MODES), v)
        elif key == "format":
            out[key] = normalize_format(v, where, name)
        elif key == "only":
            word = v.strip().lower().removesuffix("s") if isinstance(v, str) else None
            if word not in ("read", "write"):
                raise _bad(where, name, "read or write", v)
            out[key] = word
        elif key == "rate_iops":
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not 0 < v <= 1e9:
                raise _bad(where, name, "requests per second, above 0 and at most 1e9", v)
            out[key] = float(v)
        elif key == "file_extent_mib":
            if not _is_int(v) or not 1 <= v <= 1 << 30:
                raise _bad(where, name, "MiB of addresses per traced file, 1 to 2^30", v)
        elif key in ("time_from_s", "time_to_s"):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not 0 <= v <= 1e9:
                raise _bad(where, name, "seconds after the trace's first request, 0 to 1e9", v)
            out[key] = float(v)
        elif key == "event":
            if not isinstance(v, str) or v.upper() not in ("Q", "D", "C"):
                raise _bad(where, name, "a blkparse event: Q (queued), D (issued) or C (completed)", v)
            out[key] = v.upper()
        elif key in ("layer", "label"):
            if not isinstance(v, str) or (key == "layer" and not v):
                raise _bad(where, name, "a name", v)
        elif key == "trace":
            from .synth import SynthTrace, as_synth

            if not isinstance(v, (str, os.PathLike, SynthTrace)):
                raise _bad(where, name, "a path or a synthetic trace (synth:KIND,...)", v)
            synth = as_synth(v)
            if synth is not None:
                out[key] = synth
        elif key == "drive":
            if not isinstance(v, (str, os.PathLike, Mapping)):
                raise _bad(where, name, "a preset name, a path or a table", v)
        elif key in ("params", "csv"):
            if key == "csv" and isinstance(v, str):
                v = parse_csv_layout(v, where, name)
            if not isinstance(v, Mapping):
                raise _bad(where, name, "a table", v)
            check_numbers(v, where, name)
            out[key] = dict(v)
            if key == "csv":
                _check_csv(out[key], where, name)
    return out


def _check_csv(csv: Mapping[str, Any], where: str, name: str) -> None:
    """Validate a generic CSV layout in the core; errors name the file and key."""
    try:
        _core.check_trace_csv(json.dumps(csv))
    except ConfigError as e:
        msg = _core_message(e).removeprefix("invalid csv layout: ").removeprefix("csv ")
        prefix = f"{where}: " if where else ""
        raise ConfigError(f"configuration error: {prefix}{name}.{msg}") from None


def _settings_from_tree(tree: Mapping[str, Any], where: str, base_dir: Path | None) -> dict[str, Any]:
    """Map a run-configuration tree (TOML layout) onto run settings."""
    out: dict[str, Any] = {}
    prefix = f"{where}: " if where else ""
    for key, value in tree.items():
        if key not in _TOP_KEYS:
            raise ConfigError(
                f"configuration error: {prefix}unknown key '{key}' (known: {', '.join(_TOP_KEYS)})"
            )
        if key in ("label", "verify", "crash_after", "crash_at_ops"):
            out[key] = value
        elif key == "drive":
            if isinstance(value, Mapping):
                out["drive"] = dict(value)
            else:
                out["drive"] = value
        elif key == "layer" and isinstance(value, str):
            out["layer"] = value
        else:
            if not isinstance(value, Mapping):
                raise ConfigError(f"configuration error: {prefix}'{key}' must be a table ([{key}])")
            known = _SECTION_KEYS[key]
            for k, v in value.items():
                if k not in known:
                    raise ConfigError(
                        f"configuration error: {prefix}unknown key '{key}.{k}' (known: {', '.join(known)})"
                    )
                out[known[k]] = v
    if out.get("label") == "":
        del out["label"]
    if out.get("trace") == "":
        del out["trace"]  # empty path: the bundled trace
    out = check_settings(out, where, _TOML_NAME)
    if base_dir is not None:
        # Relative paths in a file resolve against the file's folder.
        t = out.get("trace")
        if isinstance(t, (str, os.PathLike)) and not Path(t).is_absolute():
            out["trace"] = str(base_dir / t)
        d = out.get("drive")
        if isinstance(d, Mapping):
            p = d.get("preset")
            if isinstance(p, str) and p not in _preset_files() and not Path(p).is_absolute():
                out["drive"] = {**d, "preset": str(base_dir / p)}
        elif isinstance(d, (str, os.PathLike)) and str(d) not in _preset_files() and not Path(d).is_absolute():
            out["drive"] = str(base_dir / d)
    return out


def load_run_config(config: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """Read a run configuration (a TOML file or a dict of the same shape) into
    run settings (keyword arguments of :func:`stlsim.run`).

    The layout (see ``stlsim init-config``)::

        label = "..."            verify = false       crash_after = [..]  crash_at_ops = [..]
        [trace]   path, format, disk, start, limit, event, pair_completions, [trace.csv]
        [drive]   preset = "imr-paper" plus any drive key to override
        [layer]   name, [layer.params]
        [replay]  mode, queue_depth, scale, write_cache, fold, series_every

    A dict may also give ``layer`` and ``drive`` as plain strings. Unknown
    keys are errors naming the file and key. In a file, relative paths are
    relative to the file's folder. When a file gives no label, its name
    (without ``.toml``) is the label.
    """
    if isinstance(config, Mapping):
        return _settings_from_tree(config, "", None)
    if not isinstance(config, (str, os.PathLike)):
        raise ConfigError(f"configuration error: config must be a path or a dict, not {type(config).__name__}")
    path = Path(config)
    tree = _read_toml(path, "config file")
    out = _settings_from_tree(tree, str(path), path.parent)
    out.setdefault("label", path.stem)
    return out


# --------------------------------------------------------------------------
# init-config
# --------------------------------------------------------------------------


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {v!r} as TOML")


def _line(key: str, value: Any, comment: str, commented: bool = False, width: int = 30) -> str:
    text = f"{'# ' if commented else ''}{key} = {_toml_value(value)}"
    return f"{text:<{width}} # {comment}"


# Units and meaning of the drive keys, for the commented [drive] section.
_DRIVE_DOCS = {
    "name": "name shown in reports",
    "description": "one line describing the drive",
    "sector_bytes": "bytes per sector: 512 or 4096; host LBAs count in this unit",
    "rpm": "spindle speed, revolutions per minute",
    "track_bytes": "bytes per track when there is no zone table",
    "capacity_gib": "host-visible capacity, GiB (or give tracks)",
    "tracks": "physical tracks (instead of capacity_gib)",
    "write_cache_mib": "DRAM write cache, MiB (0: none)",
    "interface_mb_s": "host link rate, MB/s",
    "prefill": "how full the drive is when a run starts: a fraction of the capacity, or 'footprint'",
    "rotation": "'average' (half a rotation per access) or 'angular' (head angle tracked)",
    "zones": "zoned-bit recording: [[drive.zones]] first_track, sectors_per_track (and DiskSim's skews, offsets and spares, docs/drive-model.md)",
    "surfaces": "data surfaces (heads); tracks are numbered cylinder-major, seeks count cylinders",
    "surface_order": "surfaces a cylinder's LBAs visit: ascending, serpentine-in-zone or serpentine (DiskSim mapping scheme 0, 1, 2)",
    "head_switch_ms": "switching surfaces within a cylinder, ms (overlaps a seek)",
    "write_settle_ms": "added to a write that moved the head, ms (DiskSim; may be negative)",
    "zero_latency": "whole-track accesses start at any sector (true) or wait for the first (DiskSim Immediate buffer read/write = 0)",
    "spare_range_cylinders": "cylinders per sparing range (zones' spare_sectors_per_range)",
}
_SEEK_DOCS = {
    "model": "'sqrt' (a*sqrt(d)+b through min and max) or 'table'",
    "min_ms": "single-track seek, ms",
    "max_ms": "full-stroke seek, ms",
    "table": "'table' model: [[tracks, ms], ...] ascending",
}
_LAYOUT_DOCS = {
    "kind": "recording layout: cmr, smr, imr, zoned or wave",
    "band_tracks": "smr: data tracks per band",
    "head_width_tracks": "smr: write-head width in tracks",
    "direction": "smr: shingling direction, up or down",
    "mapping": "smr: band LBA-to-track mapping, paper 002 notation: 1234, R(4123), 124R(3), 14R(23) ('' = 12..N)",
    "random_access_tracks": "smr: tracks of a random-access zone before the bands (multiple of W; outside the LBA space)",
    "cache_tracks": "smr: tracks of a shingled persistent cache after that zone, before the bands (drive-managed SMR; outside the LBA space)",
    "cache_mib": "smr: the persistent cache's size in MiB instead of cache_tracks",
    "top_ratio": "imr: top-track capacity / bottom-track capacity",
    "group_tracks": "imr: bottom tracks per LBA group",
    "order": "imr: LBA order: zigzag, serpentine or ascending",
    "zone_tracks": "zoned: tracks per zone",
    "conventional_zones": "zoned: conventional zones at the start",
    "max_open_zones": "zoned: most sequential zones open at once (0: no limit)",
    "unrestricted_reads": "zoned: reads past a write pointer allowed (ZBC URSWRZ); false: they fail",
    "region_tracks": "wave: tracks per region S_reg (paper 001)",
    "kappa_tracks": "wave: tracks a shingled write overlaps; each pair of regions shares one guard band this wide",
}


def _param_value(p: Mapping[str, Any]) -> Any:
    """A parameter's default as a TOML value of its declared kind."""
    d = p.get("default", "")
    kind = p.get("kind")
    try:
        if kind == "int":
            return int(str(d).replace("_", ""))
        if kind == "float":
            return float(d)
        if kind == "bool":
            return str(d).strip().lower() in ("true", "yes", "on", "1")
    except ValueError:
        pass
    return str(d)


def _param_comment(p: Mapping[str, Any]) -> str:
    kind = p.get("kind")
    if isinstance(kind, Mapping) and "choice" in kind:
        kind_text = "one of " + "/".join(kind["choice"])
    else:
        kind_text = str(kind)
    unit = p.get("unit", "-")
    unit_text = "" if unit in ("-", "") else f", {unit}"
    return f"{kind_text}{unit_text}: {p.get('doc', '')}"


def init_config_text() -> str:
    """A fully commented run configuration that runs as is on the bundled trace."""
    preset = _read_toml(_preset_files()[DEFAULT_DRIVE], "drive preset")
    lines: list[str] = [
        "# stlsim run configuration (written by `stlsim init-config`).",
        "# Run it with `stlsim run --config FILE`, or compare several with",
        "# `stlsim compare --config A.toml --config B.toml`. Command-line options",
        "# override the values here. Relative paths are relative to this file.",
        "",
        _line("label", "", "name in tables, plots and output folders; empty: this file's name"),
        _line("verify", False, "carry data and check every read and the final footprint"),
        _line("crash_after", [], "inject a power loss after N completed host requests (one per entry)"),
        _line("crash_at_ops", [], "inject a power loss before these physical operation numbers"),
        "",
        "[trace]",
        _line("path", "", "trace file (.gz/.zst decompressed) or synth:KIND,KEY=VALUE,...; empty: the bundled trace"),
        _line("format", "auto", "auto (from name and first line), " + ", ".join(FORMATS)),
        _line("start", 0, "requests to skip before replaying"),
        _line("disk", 0, 'keep only this device: MSR disk number, SPC ASU, fio file, device; "all": merge them (absent: the only one)', commented=True),
        _line("event", "Q", "blkparse only: the event that stands for a request, Q, D or C (absent: Q)", commented=True),
        _line("file_extent_mib", 64, "thesios only: MiB of addresses each traced file is given (absent: 64)", commented=True),
        _line("rate_iops", 1000.0, "fio version-2 logs only (no times): issue this many requests a second (absent: all at once)", commented=True),
        _line("skip_unknown", False, "skip (and count) records whose operation is neither read nor write; false: an error"),
        _line("pair_completions", False, "blkparse only: pair each request with its completion (C) for its measured response time"),
        _line("limit", 100000, "replay at most this many requests (absent: the whole trace)", commented=True),
        _line("only", "write", "keep only reads or only writes (absent: both)", commented=True),
        _line("time_from_s", 0.0, "leave out what comes before this many seconds after the first request (absent: nothing)", commented=True),
        _line("time_to_s", 3600.0, "leave out what comes from this many seconds after the first request on (absent: nothing)", commented=True),
        _line("repeat", 1, "replay the selection this many times back to back (shifted in time)"),
        "",
        "[trace.csv]                    # column layout, used only with format = \"csv\"",
        _line("time_col", 0, "0-based column of the timestamp"),
        _line("time_unit", "s", "s, ms, us, ns or filetime (100 ns ticks)"),
        _line("op_col", 1, "column of the operation"),
        _line("offset_col", 2, "column of the offset"),
        _line("offset_unit_bytes", 512, "bytes per offset unit (1: bytes, 512: sectors)"),
        _line("size_col", 3, "column of the size"),
        _line("size_unit_bytes", 512, "bytes per size unit"),
        _line("read_values", ["r", "read"], "op values meaning read (any case)"),
        _line("write_values", ["w", "write"], "op values meaning write (any case)"),
        _line("delimiter", ",", "field separator"),
        _line("header", False, "skip the first line"),
        _line("device_col", 4, "column of the device (disk, LUN, volume) number, for disk (absent: none)", commented=True),
        _line("whitespace", False, "fields separated by runs of spaces and tabs (delimiter unused)"),
        "",
        "[drive]",
        _line("preset", DEFAULT_DRIVE, "a preset (`stlsim drives`) or the path of a drive TOML file"),
        f"# Any drive key below overrides the preset; the values shown are {DEFAULT_DRIVE}'s.",
    ]
    for key, doc in _DRIVE_DOCS.items():
        if key in preset and key != "zones":
            lines.append(_line(key, preset[key], doc, commented=True))
    for table, docs in (("seek", _SEEK_DOCS), ("layout", _LAYOUT_DOCS)):
        lines += ["", f"# [drive.{table}]"]
        for key, doc in docs.items():
            if key in preset.get(table, {}):
                lines.append(_line(key, preset[table][key], doc, commented=True))
    lines += [
        "",
        "[layer]",
        _line("name", DEFAULT_LAYER, "translation layer (`stlsim layers` lists them)"),
        "",
        "[layer.params]",
    ]
    listed = layers()
    for entry in listed:
        params = entry.get("params", [])
        active = entry["name"] == DEFAULT_LAYER
        lines.append(f"# parameters of layer '{entry['name']}' ({entry.get('summary', '')}):")
        if not params:
            lines.append("#   (none)")
        for p in params:
            lines.append(_line(p["name"], _param_value(p), _param_comment(p), commented=not active))
    lines += [
        "",
        "[replay]",
        _line("mode", "queue", "queue (host queue, trace timing), flat-out (QD 1, no gaps), scaled or closed (think times)"),
        _line("queue_depth", 64, "host queue depth, requests (queue mode)"),
        _line("scale", 1.0, "inter-arrival time multiplier (scaled mode)"),
        _line("fold", False, "fold offsets beyond the drive's capacity back into it"),
        _line("series_every", 1000, "requests per point of the time series"),
        _line("waf_every", 10000, "host writes per point of the WAF series"),
        _line(
            "prefill",
            1.0,
            "drive full at the start: fraction of the capacity (0: empty) or 'footprint' (absent: the drive's)",
            commented=True,
        ),
        _line("fold_to_prefill", False, "fold LBAs into the prefilled range: LBA mod (prefill x capacity)"),
        _line(
            "history",
            0.9,
            "start from a drive with a history: random 4 KiB writes until the layer's cache is this full (docs/drive-model.md)",
            commented=True,
        ),
        _line("history_seed", 1, "the history's seed"),
        _line("write_cache", False, "force the drive's write cache on/off (absent: on if write_cache_mib > 0)", commented=True),
        "",
    ]
    return "\n".join(lines)
