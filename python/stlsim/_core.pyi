"""Type stubs of the native core (``crates/stlsim-py``). Private: use the ``stlsim`` package."""

__version__: str
__commit__: str

class Simulation:
    """One simulation run, stepped from Python."""

    def __init__(self, config_json: str) -> None:
        """Validate a JSON run configuration and open the trace (raises stlsim.errors exceptions)."""
    def step(self, max_requests: int) -> bool:
        """Replay up to ``max_requests`` more requests; True when the run has finished."""
    @staticmethod
    def live(config_json: str, record: tuple[str, str] | None = None) -> Simulation:
        """A run fed one request at a time by a live client (see submit);
        with ``record`` (path, JSON header) the requests are also written as a binary trace."""
    def submit(self, write: bool, offset: int, length: int, time_ns: int) -> float:
        """Serve one request of a live run; its simulated latency in ms."""
    def flush(self, time_ns: int) -> float:
        """FLUSH CACHE from a live client at ``time_ns``; its simulated latency in ms."""
    def finish_record(self) -> int | None:
        """End a live run's recording; the requests it holds (None when not recording)."""
    def power_loss(self) -> None:
        """A power loss now, between requests: the layer rebuilds from the medium."""
    @property
    def crashes(self) -> int:
        """Power losses so far."""
    @property
    def host_capacity_bytes(self) -> int:
        """Bytes the host may address (the drive's capacity less what the layer keeps)."""
    @property
    def progress(self) -> float:
        """Fraction of the trace consumed (0..1)."""
    @property
    def requests_done(self) -> int:
        """Host requests completed so far."""
    @property
    def finished(self) -> bool:
        """Whether the run has finished."""
    def request_crash(self) -> None:
        """Inject a power loss before the next request."""
    def keep_latencies(self) -> None:
        """Keep each request's simulated latency beside its measured response time (call before stepping)."""
    def verification_memory(self) -> tuple[int, int] | None:
        """With verification on: (heap bytes of the oracle and the medium's contents, distinct host sectors written)."""
    def latencies(self) -> tuple[list[float], list[float], list[bool]]:
        """The kept per-request latencies in completion order: (simulated ms, measured ms; NaN where none, write?)."""
    def report_json(self) -> str:
        """The run report as JSON."""
    def cdf(self, which: str) -> tuple[list[float], list[float]]:
        """The latency CDF of ``which`` ('all', 'read' or 'write'): (latency_ms, fraction)."""
    def series_json(self) -> str:
        """The per-N-request series as JSON columns (NaN as null)."""
    def waf_series_json(self) -> str:
        """The WAF series as JSON columns: host_writes, layer_write_sectors,
        media_write_sectors, move_write_sectors (cumulative, every waf_every host writes)."""

def layers_json() -> str:
    """Every registered layer with its parameters, as JSON."""

def formats_json() -> str:
    """Every trace format the core reads (the core's one list), as JSON."""

def check_drive(drive_json: str) -> str:
    """Validate a drive description (JSON); returns derived figures as JSON."""

def imr_micro_json(drive_json: str, samples: int) -> str:
    """Micro-benchmarks of the IMR layers' operations on an IMR drive (JSON),
    ``samples`` trials each: drive figures and one row per operation, as JSON."""

def default_drive_json() -> str:
    """stlsim's built-in drive defaults (every key of a drive description) as JSON."""

def default_layout_json(kind: str) -> str:
    """The built-in defaults of one layout kind's keys, as JSON."""

def drive_ranges_json() -> str:
    """The plausible range of every drive key: JSON {"real": [[key, lowest, highest, unit]],
    "int": [[key, lowest, highest]]}."""

def check_trace_csv(csv_json: str) -> None:
    """Validate a generic CSV column layout (JSON, the keys of ``[trace.csv]``);
    raises ConfigError naming the key at fault."""

def track_writes_json(trace_json: str, drive_json: str, fold: bool = False) -> str:
    """Every write of a trace (a TraceSpec as JSON) mapped onto the home tracks of a
    drive (JSON), as JSON columns request, time_s, logical_track, physical_track,
    sectors, plus the scalars requests and tracks (raises stlsim.errors exceptions)."""

def synth_check(spec_json: str) -> str:
    """Validate a synthetic trace spec (JSON, a SynthSpec); returns JSON
    {spec (defaults filled in), requests, bytes, duration_s} (raises ConfigError)."""

def write_synth_msr(spec_json: str, path: str, hostname: str = "synth", disk: int = 0) -> int:
    """Stream a synthetic trace (a SynthSpec as JSON) into ``path`` as MSR Cambridge CSV
    (``.gz`` / ``.zst`` compressed by name); returns the requests written."""
def convert_trace(trace_json: str, out: str, header_json: str) -> str: ...
def trace_info_json(trace_json: str, drive_json: str) -> str: ...
def binary_trace_header(path: str) -> str: ...
