"""stlsim: a fast trace-driven simulator of SMR and IMR translation layers.

Quick start::

    import stlsim

    result = stlsim.run()                      # cmr on imr-paper, bundled trace
    print(result.summary["waf"], result.summary["p99_ms"])
    cmp = stlsim.compare([{"layer": "cmr"}, {"layer": "cmr", "drive": "cmr"}], limit=5000)
    print(cmp.table())
    work = stlsim.analyze(limit=20000)         # which tracks the trace writes, and when
    syn = stlsim.synth_trace("sequential", usage=0.75, seed=1)   # generated, never stored
    stlsim.run(trace=syn, prefill=0, limit=1000)
    print(work.hottest(100).tail(1), work.neighbours())
    first = stlsim.TraceOptions(start=1000, limit=5000)   # how a trace is read, once
    stlsim.run(layer="cmr", trace_options=first)          # = stlsim.run(layer="cmr", start=1000, limit=5000)

The simulation core is native (Rust); this package is its front: the API,
the ``stlsim`` command, DataFrames, files and plots.
"""

from __future__ import annotations

import sys
from types import ModuleType

# typing.TYPE_CHECKING without importing typing, which imports re, enum and
# more (several milliseconds); type checkers know this spelling too.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._core import __version__
    from .analysis import Analysis
    from .api import analyze, compare, convert, run, trace_info
    from .config import default_trace, drives, init_config_text, layers, load_drive, load_run_config
    from .errors import (
        ConfigError,
        DataLossError,
        LayerError,
        MediumError,
        SimulationError,
        StlsimError,
        TraceFormatError,
        TraceIOError,
    )
    from .result import Comparison, Result
    from .sweep import SweepResult, sweep
    from .synth import SynthTrace, synth_trace
    from .trace_options import TraceOptions
    from .validation import Validation, validate

# The names below are imported when first used (PEP 562), not by `import
# stlsim`: a short `stlsim run` would otherwise spend most of its time
# importing modules (the sweep's, the analysis's, the validation's, and what
# they import) that it never uses. Each name maps to the submodule that
# defines it.
_ORIGIN = {
    "__version__": "_core",
    "Analysis": "analysis",
    "analyze": "api",
    "compare": "api",
    "convert": "api",
    "run": "api",
    "trace_info": "api",
    "default_trace": "config",
    "drives": "config",
    "init_config_text": "config",
    "layers": "config",
    "load_drive": "config",
    "load_run_config": "config",
    "ConfigError": "errors",
    "DataLossError": "errors",
    "LayerError": "errors",
    "MediumError": "errors",
    "SimulationError": "errors",
    "StlsimError": "errors",
    "TraceFormatError": "errors",
    "TraceIOError": "errors",
    "Comparison": "result",
    "Result": "result",
    "SweepResult": "sweep",
    "sweep": "sweep",
    "SynthTrace": "synth",
    "synth_trace": "synth",
    "TraceOptions": "trace_options",
    "Validation": "validation",
    "validate": "validation",
}
#: Submodules that are attributes of the package once it is imported, as
#: they were when it imported them eagerly (``stlsim.api``, ``stlsim.config``
#: ...). ``stlsim.sweep`` is the function, not the module (see _Package).
_SUBMODULES = ("_core", "analysis", "api", "config", "errors", "plots", "result", "synth", "validation")


def _submodule(name: str) -> Any:
    full = f"{__name__}.{name}"
    __import__(full)
    return sys.modules[full]


def __getattr__(name: str) -> Any:
    if name in _ORIGIN:
        value = getattr(_submodule(_ORIGIN[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return _submodule(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))


class _Package(ModuleType):
    """The package's module type: keeps ``stlsim.sweep`` the function.

    Importing the submodule ``stlsim.sweep`` (``stlsim sweep``, a report of
    a sweep) binds it on the package as ``sweep``; when the package imported
    it eagerly, its ``__init__`` bound the function over it once and for all.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "sweep" and isinstance(value, ModuleType) and value.__name__ == f"{__name__}.sweep":
            value = value.sweep
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "Analysis",
    "Comparison",
    "ConfigError",
    "DataLossError",
    "LayerError",
    "MediumError",
    "Result",
    "SimulationError",
    "SweepResult",
    "SynthTrace",
    "StlsimError",
    "TraceFormatError",
    "TraceIOError",
    "TraceOptions",
    "Validation",
    "__version__",
    "analyze",
    "compare",
    "convert",
    "default_trace",
    "drives",
    "init_config_text",
    "layers",
    "load_drive",
    "load_run_config",
    "run",
    "sweep",
    "synth_trace",
    "trace_info",
    "validate",
]
