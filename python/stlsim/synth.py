"""Synthetic traces: generated from a seed as they are replayed, never held in
memory (see docs/traces.md, "Synthetic traces").

Two kinds, as the native generator (``crates/stlsim-core/src/trace/synth.rs``)
knows them:

* ``sequential``: writes of ``request_bytes`` one after another from
  ``start_bytes`` until ``total_bytes`` are written (He & Du's SYN trace);
* ``uniform``: ``count`` requests at uniformly random offsets, aligned to
  ``align_bytes``, within ``span_bytes`` from ``start_bytes``; a
  ``write_fraction`` of them writes.

Inter-arrival times are normal (``iat_mean_ms``, ``iat_sd_ms``), clamped at 0.
``usage=F`` sets ``total_bytes`` (sequential) or ``span_bytes`` (uniform) to
F x the host capacity of the drive simulated (or given), rounded down to a
whole number of requests (alignment units).

A trace is given as a :class:`SynthTrace` (:func:`synth_trace`) or as text,
``synth:KIND,KEY=VALUE,...`` (what ``--trace`` takes).
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import _core
from .errors import ConfigError

if TYPE_CHECKING:
    import re

__all__ = ["KINDS", "SYNTH_FIELDS", "SynthTrace", "is_synth_text", "parse_bytes", "parse_synth", "synth_trace"]

#: Kinds of synthetic trace.
KINDS = ("sequential", "uniform")
#: Fields of a synthetic trace: name -> (value kind, kinds it applies to, meaning).
SYNTH_FIELDS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "request_bytes": ("bytes", KINDS, "bytes per request (default 4096: 8 blocks of 512 B)"),
    "start_bytes": ("bytes", KINDS, "offset where the written range / the span begins (default 0)"),
    "total_bytes": ("bytes", ("sequential",), "bytes to write in all (or usage)"),
    "count": ("int", ("uniform",), "number of requests"),
    "span_bytes": ("bytes", ("uniform",), "bytes of address space the requests fall in (or usage)"),
    "align_bytes": ("bytes", ("uniform",), "offsets are start_bytes + a multiple of this (default: request_bytes)"),
    "write_fraction": ("float", ("uniform",), "fraction of requests that are writes, 0..1 (default 1)"),
    "iat_mean_ms": ("float", KINDS, "mean inter-arrival time, ms (default 50)"),
    "iat_sd_ms": ("float", KINDS, "standard deviation of the inter-arrival time, ms (default 10)"),
    "seed": ("int", KINDS, "seed of the generator (default 0); the same seed gives the same trace"),
}
_PREFIX = "synth:"
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


@functools.cache
def _size_pattern() -> re.Pattern[str]:
    """A byte count's number and unit. Compiled, like decimal imported, at
    first use: every run imports this module, few parse a size."""
    import re

    return re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9_]*)?(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def _err(msg: str, where: str = "") -> ConfigError:
    prefix = f"synthetic trace '{where}': " if where else "synthetic trace: "
    return ConfigError(f"configuration error: {prefix}{msg}")


def parse_bytes(text: Any, key: str = "size", where: str = "") -> int:
    """A byte count: an integer (``_`` allowed) or a number with a unit,
    ``B``, ``KB``/``MB``/``GB``/``TB`` (powers of 1000) or ``KiB``/``MiB``/
    ``GiB``/``TiB`` (powers of 1024), e.g. ``4096``, ``500KB``, ``1.5GiB``."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise _err(f"{key} must be a non-negative byte count, got {text}", where)
        return text
    m = _size_pattern().match(str(text)) if isinstance(text, str) else None
    unit = _UNITS.get(m.group(2).lower()) if m else None
    if m is None or unit is None:
        raise _err(f"{key} must be a byte count like 4096, 500KB or 1.5GiB, got {text!r}", where)
    import decimal

    exact = decimal.Decimal(m.group(1).replace("_", "")) * unit
    if exact != exact.to_integral_value():
        raise _err(f"{key} must be a whole number of bytes, got {text!r}", where)
    return int(exact)


def _parse_value(key: str, v: Any, where: str) -> int | float:
    kind = SYNTH_FIELDS[key][0]
    if kind == "bytes":
        return parse_bytes(v, key, where)
    if kind == "int":
        if isinstance(v, int) and not isinstance(v, bool):
            out = v
        else:
            try:
                out = int(str(v).replace("_", "").strip())
            except ValueError:
                raise _err(f"{key} must be a non-negative integer, got {v!r}", where) from None
        if out < 0:
            raise _err(f"{key} must be a non-negative integer, got {v!r}", where)
        return out
    try:
        f = float(v) if not isinstance(v, bool) else math.nan
    except (TypeError, ValueError):
        f = math.nan
    if not math.isfinite(f):
        raise _err(f"{key} must be a number, got {v!r}", where)
    return f


def _parse_usage(v: Any, where: str) -> float:
    text = v.strip() if isinstance(v, str) else v
    try:
        u = float(text[:-1]) / 100 if isinstance(text, str) and text.endswith("%") else float(text)
    except (TypeError, ValueError):
        u = math.nan
    if isinstance(v, bool) or not math.isfinite(u) or u <= 0:
        raise _err(f"usage must be a positive fraction of the drive's capacity (e.g. 0.75), got {v!r}", where)
    return u


class SynthTrace:
    """A synthetic trace: what :func:`stlsim.run`, :func:`stlsim.compare` and
    :func:`stlsim.analyze` take as ``trace=`` (or write with :meth:`write`).

    Build one with :func:`synth_trace` or :func:`parse_synth`. ``usage`` is
    resolved against a drive's capacity when the trace is used.
    """

    def __init__(self, kind: str, fields: Mapping[str, Any] | None = None, usage: Any = None, *, where: str = "") -> None:
        where = where or _PREFIX + str(kind)
        if kind not in KINDS:
            raise _err(f"unknown kind '{kind}' (known: {', '.join(KINDS)})", where)
        parsed: dict[str, int | float] = {}
        for key, v in (fields or {}).items():
            if key not in SYNTH_FIELDS:
                known = ", ".join([*SYNTH_FIELDS, "usage"])
                raise _err(f"unknown field '{key}' (known: {known})", where)
            if kind not in SYNTH_FIELDS[key][1]:
                takes = ", ".join([k for k, f in SYNTH_FIELDS.items() if kind in f[1]] + ["usage"])
                raise _err(f"{key} does not apply to kind {kind} (it takes {takes})", where)
            parsed[key] = _parse_value(key, v, where)
        sized = "total_bytes" if kind == "sequential" else "span_bytes"
        self.usage: float | None = None if usage is None else _parse_usage(usage, where)
        if self.usage is not None and sized in parsed:
            raise _err(f"give usage or {sized}, not both", where)
        self.kind = kind
        self.fields = parsed
        self._where = where
        #: The trace's name in reports: the text it was parsed from, else :meth:`__str__`.
        self.name = where if where.startswith(_PREFIX) and where != _PREFIX + kind else str(self)

    # ------------------------------------------------------------------

    def __str__(self) -> str:
        """The trace as text, ``synth:KIND,KEY=VALUE,...`` (its name in reports)."""
        parts = [self.kind] + [f"{k}={_text(v)}" for k, v in self.fields.items()]
        if self.usage is not None:
            parts.append(f"usage={_text(self.usage)}")
        return _PREFIX + ",".join(parts)

    def __repr__(self) -> str:
        return f"SynthTrace({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SynthTrace):
            return NotImplemented
        return (self.kind, self.fields, self.usage) == (other.kind, other.fields, other.usage)

    __hash__ = None  # type: ignore[assignment]

    def spec(self, drive: str | os.PathLike[str] | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The generator's spec (the core's ``SynthSpec`` as a dict, defaults
        filled in), with ``usage`` resolved against ``drive`` (a preset name,
        drive file or dict; None: the default drive)."""
        spec: dict[str, Any] = {"kind": self.kind, **self.fields}
        if self.usage is not None:
            from .config import DEFAULT_DRIVE, check_drive, load_drive

            d = load_drive(drive if drive is not None else DEFAULT_DRIVE)
            capacity = int(check_drive(d)["capacity_bytes"])
            request = int(spec.get("request_bytes", 4096))
            if self.kind == "sequential":
                unit, key = request, "total_bytes"
            else:
                unit, key = int(spec.get("align_bytes", request)), "span_bytes"
            unit = max(unit, 1)
            size = int(self.usage * capacity) // unit * unit
            if size == 0:
                raise _err(
                    f"usage={_text(self.usage)} of drive '{d.get('name', '?')}' ({capacity:,} bytes) "
                    f"is less than one request ({unit:,} bytes)",
                    self._where,
                )
            spec[key] = size
        return self.check_spec(spec)["spec"]

    def check_spec(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        try:
            checked: dict[str, Any] = json.loads(_core.synth_check(json.dumps(spec)))
        except ConfigError as e:
            from .config import _core_message

            msg = _core_message(e).removeprefix("synthetic trace: ")
            raise _err(msg, self._where) from None
        return checked

    def summary(self, drive: str | os.PathLike[str] | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``{spec, requests, bytes, duration_s}`` of the trace on ``drive``."""
        return self.check_spec(self.spec(drive))

    def write(
        self,
        path: str | os.PathLike[str],
        drive: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        *,
        hostname: str = "synth",
        disk: int = 0,
    ) -> int:
        """Stream the trace into ``path`` as MSR Cambridge CSV
        (``Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime``,
        timestamps in 100 ns ticks from 0, response time 0; ``.gz`` / ``.zst``
        names are compressed). Returns the number of requests written."""
        spec = self.spec(drive)
        target = os.path.expanduser(os.fspath(path))
        return int(_core.write_synth_msr(json.dumps(spec), target, hostname, disk))


def _text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def synth_trace(kind: str, *, usage: float | str | None = None, **fields: Any) -> SynthTrace:
    """A synthetic trace of ``kind`` (``"sequential"`` or ``"uniform"``) with
    the given fields (see :data:`SYNTH_FIELDS`; byte sizes may be texts like
    ``"500KB"``), for ``trace=`` of :func:`stlsim.run` and friends.

    ``usage=F`` sets ``total_bytes`` (sequential) or ``span_bytes`` (uniform)
    to F x the host capacity of the drive simulated.

    Example: He & Du's SYN on an empty drive filled to 75 %::

        stlsim.run(trace=stlsim.synth_trace("sequential", usage=0.75, seed=1), prefill=0)
    """
    return SynthTrace(kind, fields, usage)


def is_synth_text(text: Any) -> bool:
    """Whether ``text`` names a synthetic trace (``synth:...``)."""
    return isinstance(text, str) and text.strip().lower().startswith(_PREFIX)


def parse_synth(text: str) -> SynthTrace:
    """Parse ``synth:KIND[,KEY=VALUE...]``, e.g. ``synth:sequential,usage=0.75,seed=1``."""
    where = text.strip()
    body = where[len(_PREFIX):] if is_synth_text(where) else where
    parts = [p.strip() for p in body.split(",")]
    if not parts or not parts[0]:
        raise _err(f"expected synth:KIND,KEY=VALUE,... with KIND one of {', '.join(KINDS)}", where)
    kind = parts[0].lower()
    fields: dict[str, str] = {}
    usage: str | None = None
    for p in parts[1:]:
        if not p:
            continue
        key, sep, value = p.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not sep or not key or not value.strip():
            raise _err(f"expected KEY=VALUE, got '{p}'", where)
        if key in fields or (key == "usage" and usage is not None):
            raise _err(f"{key} given twice", where)
        if key == "usage":
            usage = value.strip()
        else:
            fields[key] = value.strip()
    return SynthTrace(kind, fields, usage, where=where)


def as_synth(trace: Any) -> SynthTrace | None:
    """``trace`` as a :class:`SynthTrace` if it is one or names one, else None."""
    if isinstance(trace, SynthTrace):
        return trace
    if is_synth_text(trace):
        return parse_synth(trace)
    return None
