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

The simulation core is native (Rust); this package is its front: the API,
the ``stlsim`` command, DataFrames, files and plots.
"""

from ._core import __version__
from .analysis import Analysis
from .api import analyze, compare, convert, run, trace_info
from .config import default_trace, drives, init_config_text, layers, load_drive, load_run_config
from .errors import (
    ConfigError,
    DataLossError,
    MediumError,
    SimulationError,
    StlsimError,
    TraceFormatError,
    TraceIOError,
)
from .result import Comparison, Result
from .sweep import SweepResult, sweep
from .synth import SynthTrace, synth_trace
from .validation import Validation, validate

__all__ = [
    "Analysis",
    "Comparison",
    "ConfigError",
    "DataLossError",
    "MediumError",
    "Result",
    "SimulationError",
    "SweepResult",
    "SynthTrace",
    "StlsimError",
    "TraceFormatError",
    "TraceIOError",
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
