"""The simulated drive behind the NBD server (issue 37, second slice).

:class:`SimBackend` is an :class:`stlsim.nbd.Backend` whose every read and
write also goes through a live simulation run: the same engine, layer,
medium and oracle as a replay (``_core.Simulation.live``). The bytes
themselves are kept beside it, sparse in memory (:class:`stlsim.nbd.MemoryBackend`):
the simulation carries tokens, not data, and checks with verification on
that each read returns the newest acknowledged write.

Time is ``simulated`` only: a request arrives at its wall-clock arrival
(nanoseconds since the server started, times ``time_scale``), the server
answers as fast as it can, and the simulated latency goes into the run's
report. What is not built yet (``--time real``, ``--record``,
``--crash-after``, ``--store``, FLUSH/FUA through the drive's write cache,
TRIM through a layer's trim, zoned drives) is listed in docs/serve.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from . import _core
from .nbd import Backend, BackendError, MemoryBackend
from .result import LATENCY_CLASSES, Result


class SimBackend(Backend):
    """Bytes in memory, timing and verification from a live simulation."""

    def __init__(
        self,
        drive: Any = "cmr",
        layer: str = "cmr",
        params: Mapping[str, Any] | None = None,
        *,
        mode: str = "queue",
        verify: bool = True,
        time_scale: float = 1.0,
    ) -> None:
        from . import api

        settings = api.resolve_settings(None, dict(drive=drive, layer=layer, params=params, mode=mode, verify=verify))
        cfg = api.core_config(settings)
        cfg.pop(api.NOTES, None)
        cfg["trace"]["path"] = "nbd client"
        self.config = cfg
        self.label = f"serve {layer}"
        self._sim = _core.Simulation.live(json.dumps(cfg))
        self._size = self._sim.host_capacity_bytes
        # The drive's sector size as the core built it (a drive file may leave it to the default).
        sector = json.loads(self._sim.report_json())["drive"]["sector_bytes"]
        self._bytes = MemoryBackend(self._size, sector)
        self._t0 = time.monotonic_ns()
        self._scale = time_scale
        self._last = 0
        self.report: dict[str, Any] | None = None
        self.result: Result | None = None
        self.flushes = 0

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def sector_bytes(self) -> int:
        return self._bytes.sector_bytes

    def _now(self) -> int:
        # Arrivals never go back in time (the clock is monotonic, the scale positive).
        t = int((time.monotonic_ns() - self._t0) * self._scale)
        self._last = max(self._last, t)
        return self._last

    def _submit(self, write: bool, offset: int, length: int) -> None:
        if self.report is not None:
            raise BackendError("the run has ended")
        try:
            self._sim.submit(write, offset, length, self._now())
        except Exception as e:  # a core error: say it to the client as EIO, log it
            raise BackendError(f"simulation: {e}") from e

    def read(self, offset: int, length: int) -> bytes:
        self._submit(False, offset, length)
        return self._bytes.read(offset, length)

    def write(self, offset: int, data: bytes, fua: bool = False) -> None:
        self._submit(True, offset, len(data))
        self._bytes.write(offset, data, fua)

    def flush(self) -> None:
        # Not yet through the drive's write cache (docs/serve.md): counted only.
        self.flushes += 1

    def trim(self, offset: int, length: int) -> None:
        self._bytes.trim(offset, length)

    def finish(self) -> dict[str, Any]:
        """End the run (the end of its trace: final scans when verifying) and
        return its report, the same a replay gives; :attr:`result` holds it
        as a :class:`stlsim.Result` (latency CDFs, series, plots). Idempotent."""
        if self.report is None:
            while not self._sim.step(1):
                pass
            self.report = json.loads(self._sim.report_json())
            cdfs = {c: self._sim.cdf(c) for c in LATENCY_CLASSES}
            waf = json.loads(self._sim.waf_series_json())
            wall = (time.monotonic_ns() - self._t0) / 1e9
            series = self._sim.series_json()
            self.result = Result(self.label, self.report, dict(self.config), cdfs, series, wall_s=wall, waf_series=waf)
        return self.report

    def close(self) -> None:
        self.finish()
