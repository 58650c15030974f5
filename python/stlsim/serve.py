"""The simulated drive behind the NBD server (issue 37).

:class:`SimBackend` is an :class:`stlsim.nbd.Backend` whose every read and
write also goes through a live simulation run: the same engine, layer,
medium and oracle as a replay (``_core.Simulation.live``). The bytes
themselves are kept beside it, sparse in memory or in a file (``store``):
the simulation carries tokens, not data, and checks with verification on
that each read returns the newest acknowledged write.

* **Time.** A request arrives at its wall-clock arrival (nanoseconds since
  the server started, times ``time_scale``), or, ``back_to_back``, when the
  request before it completed in simulated time. With ``time="simulated"``
  the server answers as fast as it can and the simulated latency goes into
  the report; with ``time="real"`` each reply is held until the request's
  simulated completion (scaled back to wall time), so the client sees the
  drive's latency. How late a held reply went out is measured
  (:attr:`SimBackend.stats`).
* **FLUSH** destages the drive's write cache (``Simulation.flush``); a
  **FUA** write is a write followed by that flush (an upper bound on its
  cost: a drive may write through only the FUA write). **TRIM** frees the
  bytes; no layer of the papers has a trim, so the simulation is not told.
* **Record.** ``record`` writes the requests as a binary trace (``.stlt``)
  that ``stlsim run`` replays to the same report, if no FLUSH found data to
  destage (a trace has no flushes).
* **Power loss.** ``crash_after`` (request counts, this session's) injects
  a power loss in the simulation after those requests (the layer rebuilds
  from the medium and the oracle checks every acknowledged, durable block)
  and drops every connection (:class:`stlsim.nbd.PowerLoss`); clients
  reconnect and go on.
* **Store and restart.** With ``store``, the bytes live in that file and
  every request, flush and power loss is appended to ``STORE.journal``. A
  server started again on the same store replays the journal through a
  fresh run, so the simulated drive (medium, layer, oracle) is where the
  last session left it, deterministically; if that session did not end
  cleanly (its process died), a power loss follows, the layer recovers
  from the medium and the oracle checks every block.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from . import _core
from .nbd import Backend, BackendError, FileBackend, MemoryBackend, PowerLoss
from .result import LATENCY_CLASSES, Result

#: The time modes of ``stlsim serve --time``.
TIME_MODES = ("simulated", "real")

#: The first word of a store's journal, and its version.
JOURNAL_MAGIC = "stlsim-serve-journal 1"


class Journal:
    """The history of a store (``STORE.journal``): a header line naming the
    drive, layer, parameters and mode, then one line an event, appended as
    it happens (one ``write`` each, so a process that dies leaves every
    event it finished): ``W time offset length`` and ``R ...`` (a write or
    read served), ``F time`` (FLUSH), ``P`` (a power loss after the line
    before), ``E time`` (the server stopped cleanly). Times are simulated ns."""

    def __init__(self, path: str, identity: dict[str, Any]) -> None:
        self.path = path
        self.events: list[tuple[str, ...]] = []
        head = JOURNAL_MAGIC + " " + json.dumps(identity, sort_keys=True)
        if os.path.exists(path) and os.path.getsize(path) > 0:
            with open(path, encoding="utf-8") as f:
                first = f.readline().rstrip("\n")
                if not first.startswith(JOURNAL_MAGIC + " "):
                    raise BackendError(f"{path}:1: not a stlsim serve journal")
                if first != head:
                    made = json.loads(first[len(JOURNAL_MAGIC) + 1 :])
                    raise BackendError(
                        f"{path}:1: the store was made by layer {made.get('layer')!r} on drive "
                        f"{made.get('drive', {}).get('name')!r} (mode {made.get('mode')!r}, parameters "
                        f"{made.get('params')}); serve it with those, or give another --store"
                    )
                for n, line in enumerate(f, start=2):
                    parts = tuple(line.split())
                    if not line.endswith("\n"):
                        break  # a line the process died writing: never acknowledged
                    if not parts or parts[0] not in "WRFPE" or len(parts) != {"W": 4, "R": 4, "F": 2, "P": 1, "E": 2}[parts[0]]:
                        raise BackendError(f"{path}:{n}: malformed journal line {line.strip()[:60]!r}")
                    self.events.append(parts)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        else:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            self.append(head)

    def append(self, line: str) -> None:
        os.write(self._fd, (line + "\n").encode())

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class SimBackend(Backend):
    """Bytes in memory (or a file), timing and verification from a live simulation."""

    def __init__(
        self,
        drive: Any = "cmr",
        layer: str = "cmr",
        params: Mapping[str, Any] | None = None,
        *,
        mode: str = "queue",
        verify: bool = True,
        time: str = "simulated",
        time_scale: float = 1.0,
        back_to_back: bool = False,
        store: str | os.PathLike[str] | None = None,
        record: str | os.PathLike[str] | None = None,
        crash_after: Sequence[int] | None = None,
    ) -> None:
        from . import api

        if time not in TIME_MODES:
            raise ValueError(f"time must be one of {', '.join(TIME_MODES)}, not {time!r}")
        if not time_scale > 0:
            raise ValueError(f"time_scale must be positive, not {time_scale!r}")
        crashes = sorted(set(int(n) for n in crash_after or ()))
        if any(n < 1 for n in crashes):
            raise ValueError("crash_after counts requests: each must be at least 1")
        self._crash_at = crashes
        settings = api.resolve_settings(None, dict(drive=drive, layer=layer, params=params, mode=mode, verify=verify))
        cfg = api.core_config(settings)
        cfg.pop(api.NOTES, None)
        cfg["trace"]["path"] = "nbd client"
        self.config = cfg
        self.label = f"serve {layer}"
        rec = None
        if record is not None:
            header = {"source": "stlsim serve", "drive": cfg["drive"].get("name"), "layer": layer, "mode": mode}
            rec = (os.fspath(record), json.dumps(header))
        self._sim = _core.Simulation.live(json.dumps(cfg), rec)
        self._size = self._sim.host_capacity_bytes
        # The drive's sector size as the core built it (a drive file may leave it to the default).
        sector = json.loads(self._sim.report_json())["drive"]["sector_bytes"]
        self._scale = time_scale
        self._real = time == "real"
        self._back_to_back = back_to_back
        self._base = 0
        self._last = 0
        self._done = 0
        self._served = 0
        self.journal: Journal | None = None
        #: Events replayed from the store's journal, and whether its last
        #: session ended without a clean stop (then a power loss followed).
        self.replayed = 0
        self.recovered = False
        if store is not None:
            fb = FileBackend(store, self._size, sector)
            self._bytes: Backend = fb
            identity = {"drive": cfg["drive"], "layer": layer, "params": cfg["layer"]["params"], "mode": mode}
            self.journal = Journal(os.fspath(store) + ".journal", identity)
            if self.journal.events and not fb.reused:
                raise BackendError(
                    f"{self.journal.path} records a history but {os.fspath(store)} was missing (created empty now): "
                    "restore the store or remove the journal"
                )
            self._replay(self.journal.events)
        else:
            self._bytes = MemoryBackend(self._size, sector)
        self._t0 = _wall()
        self.report: dict[str, Any] | None = None
        self.result: Result | None = None
        #: What the server did beyond the report: flushes and their simulated
        #: time, FUA writes, trims, power losses, and with ``time="real"``
        #: how late held replies went out (the mode's tolerance).
        self.stats: dict[str, Any] = {
            "flushes": 0,
            "flush_ms": 0.0,
            "fua_writes": 0,
            "trims": 0,
            "power_losses": 0,
            "held_replies": 0,
            "late_ms_max": 0.0,
            "late_ms_mean": 0.0,
            "journal_events_replayed": self.replayed,
            "recovered_at_start": self.recovered,
        }
        self._late_sum = 0.0
        self._due = threading.local()
        self._stats_lock = threading.Lock()

    def _replay(self, events: list[tuple[str, ...]]) -> None:
        """Bring a fresh run to where the store's last session left it."""
        for ev in events:
            kind = ev[0]
            if kind == "P":
                self._call(self._sim.power_loss)
                continue
            t = int(ev[1])
            if kind in "WR":
                lat = self._call(self._sim.submit, kind == "W", int(ev[2]), int(ev[3]), t)
            else:  # F, and E (a clean stop) as a flush
                lat = self._call(self._sim.flush, t)
            self._done = max(self._done, t + int(lat * 1e6))
            self._base = max(self._base, t)
        self.replayed = len(events)
        self._base = self._last = max(self._base, self._done)
        if events and events[-1][0] != "E":
            # The last session's process died: its drive lost power then.
            self._call(self._sim.power_loss)
            assert self.journal is not None
            self.journal.append("P")
            self.recovered = True

    @property
    def size_bytes(self) -> int:
        return self._size

    @property
    def sector_bytes(self) -> int:
        return self._bytes.sector_bytes

    def _arrival(self) -> int:
        """The next request's simulated arrival (ns)."""
        if self._back_to_back:
            return self._done
        # Arrivals never go back in time (the clock is monotonic, the scale positive).
        t = self._base + int((_wall() - self._t0) * self._scale)
        self._last = max(self._last, t)
        return self._last

    def _check_open(self) -> None:
        if self.report is not None:
            raise BackendError("the run has ended")

    def _finish_request(self, events: list[str], wall_in: int, arrival: int, latency_ms: float) -> None:
        """Note a served request's completion (and journal its ``events``);
        with ``time="real"``, when its reply is due (:meth:`hold`); raise
        :class:`PowerLoss` if the run lost power after it."""
        if self.journal is not None:
            for e in events:
                self.journal.append(e)
        self._served += 1
        lat_ns = int(latency_ms * 1e6)
        self._done = max(self._done, arrival + lat_ns)
        if self._crash_at and self._crash_at[0] == self._served:
            self._crash_at.pop(0)
            self._call(self._sim.power_loss)
            if self.journal is not None:
                self.journal.append("P")
            self.stats["power_losses"] += 1
            raise PowerLoss(f"after request {self._served} of this session (--crash-after)")
        if self._real:
            self._due.at = wall_in + int(lat_ns / self._scale)

    def _call(self, fn, *args) -> Any:
        try:
            return fn(*args)
        except Exception as e:  # a core error: say it to the client as EIO, log it
            raise BackendError(f"simulation: {e}") from e

    def _request(self, write: bool, offset: int, length: int, fua: bool = False) -> None:
        self._check_open()
        wall_in = _wall()
        arrival = self._arrival()
        lat = self._call(self._sim.submit, write, offset, length, arrival)
        events = [f"{'W' if write else 'R'} {arrival} {offset} {length}"]
        if fua:
            # The flush starts when the write completes; the journal has it after the write too.
            flush_at = arrival + int(lat * 1e6)
            lat += self._call(self._sim.flush, flush_at)
            events.append(f"F {flush_at}")
            self.stats["fua_writes"] += 1
            self.stats["flushes"] += 1
        self._finish_request(events, wall_in, arrival, lat)

    def read(self, offset: int, length: int) -> bytes:
        data = self._bytes.read(offset, length)
        self._request(False, offset, length)
        return data

    def write(self, offset: int, data: bytes, fua: bool = False) -> None:
        # The bytes first: a power loss after this request leaves them (docs/serve.md).
        self._bytes.write(offset, data, fua)
        self._request(True, offset, len(data), fua)

    def flush(self) -> None:
        self._check_open()
        self._bytes.flush()
        wall_in = _wall()
        arrival = max(self._arrival(), self._done)
        lat = self._call(self._sim.flush, arrival)
        if self.journal is not None:
            self.journal.append(f"F {arrival}")
        self.stats["flushes"] += 1
        self.stats["flush_ms"] += lat
        self._done = max(self._done, arrival + int(lat * 1e6))
        if self._real:
            self._due.at = wall_in + int(lat * 1e6 / self._scale)

    def hold(self) -> None:
        """With ``time="real"``, wait until the request this thread just
        served completes in simulated time (scaled), and note how late the
        wait ended. The NBD server calls it outside its lock, so requests of
        other connections are simulated meanwhile; a caller driving the
        backend directly calls it after each request."""
        due = getattr(self._due, "at", None)
        if due is None:
            return
        self._due.at = None
        now = _wall()
        if due > now:
            time.sleep((due - now) / 1e9)
        late = max(0.0, (_wall() - due) / 1e6)
        with self._stats_lock:
            st = self.stats
            st["held_replies"] += 1
            self._late_sum += late
            st["late_ms_max"] = max(st["late_ms_max"], late)
            st["late_ms_mean"] = self._late_sum / st["held_replies"]

    def trim(self, offset: int, length: int) -> None:
        self._bytes.trim(offset, length)
        self.stats["trims"] += 1

    def snapshot(self) -> dict[str, Any]:
        """The run's report so far (``stlsim serve --report``), the run going on."""
        if self.report is not None:
            return self.report
        r = json.loads(self._sim.report_json())
        r["serve"] = dict(self.stats)
        return r

    def finish(self) -> dict[str, Any]:
        """End the run (the end of its trace: final scans when verifying) and
        return its report, the same a replay gives plus the server's
        ``serve`` counts; :attr:`result` holds it as a :class:`stlsim.Result`
        (latency CDFs, series, plots). Ends the recording. Idempotent."""
        if self.report is None:
            self.recorded = self._sim.finish_record()
            if self.journal is not None:
                # A clean stop: the next session on this store replays it as a FLUSH.
                self.journal.append(f"E {max(self._last, self._done)}")
                self.journal.close()
            while not self._sim.step(1):
                pass
            self.report = json.loads(self._sim.report_json())
            self.report["serve"] = dict(self.stats)
            cdfs = {c: self._sim.cdf(c) for c in LATENCY_CLASSES}
            waf = json.loads(self._sim.waf_series_json())
            wall = (_wall() - self._t0) / 1e9
            series = self._sim.series_json()
            self.result = Result(self.label, self.report, dict(self.config), cdfs, series, wall_s=wall, waf_series=waf)
        return self.report

    def close(self) -> None:
        self.finish()
        self._bytes.close()


def _wall() -> int:
    return time.monotonic_ns()
