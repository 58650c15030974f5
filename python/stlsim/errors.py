"""Typed exceptions raised by stlsim (the native core raises these too).

Every error a user can cause maps onto one of these; the CLI prints the
message as one line and exits non-zero.
"""


class StlsimError(Exception):
    """Base class of every stlsim error."""


class ConfigError(StlsimError, ValueError):
    """An invalid configuration: unknown layer, drive or parameter, impossible geometry, bad value."""


class TraceFormatError(StlsimError, ValueError):
    """A malformed trace record; the message names the file and line."""


class TraceIOError(StlsimError, OSError):
    """A trace file that cannot be opened or read."""


class DataLossError(StlsimError):
    """The verifier found a block that does not hold its newest acknowledged write.

    Attributes set by the core: ``lba``, ``expected_version``, ``found``, ``during``.
    """

    lba: int
    expected_version: int
    found: str
    during: str


class MediumError(StlsimError):
    """A physical operation the medium refused (e.g. a write off a zone's write pointer)."""


class LayerError(StlsimError):
    """A translation layer broke its contract with the engine: a bug in the
    layer (a read returning the wrong number of sectors, a cache log that
    filled because a write was not made to wait), not in the run's input."""


class SimulationError(StlsimError):
    """Any other failure of a run."""
