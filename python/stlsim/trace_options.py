"""How a trace is read: :class:`TraceOptions`, the settings that select and
read a trace's requests, shared by :func:`stlsim.run`, :func:`stlsim.compare`,
:func:`stlsim.analyze`, :func:`stlsim.convert` and :func:`stlsim.trace_info`.

Each of those functions takes them either together, as
``trace_options=TraceOptions(...)``, or one by one as keyword arguments of the
same names (``stlsim.run(trace, limit=5000, format="msr")``); both at once
merge, a field given in both ways being an error.

Imported when first used, not by ``stlsim.api``: :mod:`dataclasses` imports
:mod:`inspect`, which ``stlsim run`` does without (tests/test_startup.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["TraceOptions"]


@dataclasses.dataclass(frozen=True)
class TraceOptions:
    """The trace-reading settings of a run, an analysis, a conversion or a
    trace's summary: which requests of the trace are read, and how.

    The selection is applied in this order: ``disk``, then the time window
    (``time_from_s``, ``time_to_s``), then ``only``, then ``start`` and
    ``limit``.

    A value is checked when the options are made (a
    :class:`stlsim.ConfigError`, as when given as a keyword). With a run
    configuration (``stlsim.run(config=...)``), the fields given a value
    other than their default override the file's; a field left at its
    default leaves the file's value alone (pass the keyword, e.g.
    ``start=0``, to override a file's value with the default).
    """

    format: str | None = None
    """Trace format, a name of :data:`stlsim.config.FORMATS` (the core's
    list: msr, spc, vscsi, csv, fio, blkparse ...); None (or ``"auto"``)
    guesses it from the file (docs/traces.md)."""

    disk: int | str | None = None
    """Keep only this device: MSR disk number, SPC ASU, fio file, DiskSim or
    MQSim device, blkparse device (MAJ << 20 | MIN), CSV device column;
    ``"all"`` merges every device. Unset, a trace that holds more than one
    device is an error."""

    start: int = 0
    """Skip this many requests of the selection before the first one read."""

    limit: int | None = None
    """Read at most this many requests after ``start`` (None: to the trace's end)."""

    csv: Mapping[str, Any] | str | None = None
    """The generic CSV layout (``format="csv"``): a dict of the
    ``[trace.csv]`` keys, or its one-line form
    ``"time=1,op=2,offset=3,size=4,header,delim=,"`` (docs/traces.md)."""

    event: str | None = None
    """blkparse only: the event that stands for a request, Q (queued,
    default), D (issued) or C (completed)."""

    skip_unknown: bool = False
    """Skip records whose operation is neither a read nor a write (counted in
    the report's warnings) instead of failing."""

    only: str | None = None
    """``"read"`` or ``"write"``: read only those requests (None: both)."""

    time_from_s: float | None = None
    """Read only the records from this many seconds after the trace's first
    record (of the chosen device) on (None: from the first)."""

    time_to_s: float | None = None
    """Read only the records before (not at) this many seconds after the
    trace's first record (of the chosen device) (None: to the last)."""

    file_extent_mib: int | None = None
    """Thesios traces only: MiB of addresses each traced file is given
    (None: 64; docs/traces.md)."""

    rate_iops: float | None = None
    """fio version-2 logs only (they record no times): issue request ``i`` at
    ``i / rate_iops`` seconds (None: all at once)."""

    pair_completions: bool = False
    """blkparse only: pair each request (the ``event``, Q or D) with its
    completion, giving it the trace's measured response time (see
    :func:`stlsim.trace_info`; the replay does not use it yet)."""

    def __post_init__(self) -> None:
        from .config import check_settings

        check_settings(self.settings())

    def settings(self) -> dict[str, Any]:
        """The fields given a value other than their default, by name: what
        these options set (run settings of the same names)."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            # By type too: start=False or start=0.0 equals 0 but is not the
            # default (it is an error, reported as for the keyword).
            if not (v is f.default or (type(v) is type(f.default) and v == f.default)):
                out[f.name] = v
        return out

    @classmethod
    def merged(cls, options: TraceOptions | None = None, /, **kw: Any) -> TraceOptions:
        """``options`` (None: the defaults) with the fields given as keywords
        set too, e.g. ``TraceOptions.merged(base, limit=1000)``.

        Raises TypeError for a keyword that is not a field (naming the field
        it most likely meant) and for a field ``options`` sets as well (use
        :func:`dataclasses.replace` to change a field's value).
        """
        return cls(**trace_settings("TraceOptions.merged", options, kw))


#: The fields of :class:`TraceOptions`, in order.
FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(TraceOptions))


def parameter_names(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The names ``fn`` (or the function it wraps) takes as keywords."""
    code = getattr(fn, "__wrapped__", fn).__code__
    return code.co_varnames[code.co_posonlyargcount : code.co_argcount + code.co_kwonlyargcount]


def trace_settings(
    function: str, options: TraceOptions | None, kw: Mapping[str, Any], parameters: Iterable[str] = ()
) -> dict[str, Any]:
    """The trace settings ``function`` was given: the fields ``options`` sets
    (:meth:`TraceOptions.settings`) and the keywords ``kw``, which are trace
    options given one by one (each counts as given, whatever its value).

    ``parameters``, the function's own parameter names, are offered with the
    fields when a keyword is unknown. Raises TypeError, as Python does for an
    unexpected keyword, for a keyword that is no field, for a field given
    both in ``options`` and as a keyword, and for ``options`` that are not
    a TraceOptions.
    """
    from .config import closest_name

    unknown = [k for k in kw if k not in FIELDS]
    if unknown:
        word = unknown[0]
        near = closest_name(word, [*FIELDS, *parameters])
        hint = f"; did you mean '{near}'?" if near else f" (trace options: {', '.join(FIELDS)})"
        raise TypeError(f"{function}() got an unexpected keyword argument '{word}'{hint}; see stlsim.TraceOptions")
    if options is None:
        return dict(kw)
    if not isinstance(options, TraceOptions):
        raise TypeError(f"{function}(): trace_options must be a stlsim.TraceOptions or None, not {type(options).__name__}")
    given = options.settings()
    twice = [k for k in kw if k in given]
    if twice:
        raise TypeError(
            f"{function}() got trace option '{twice[0]}' twice: in the TraceOptions "
            f"({twice[0]}={given[twice[0]]!r}) and as a keyword ({twice[0]}={kw[twice[0]]!r})"
        )
    return {**given, **kw}
