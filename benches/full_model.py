#!/usr/bin/env python3
"""Throughput with the validated drive model on and off (issue 13).

Runs the bundled CloudPhysics sample (113,872 requests, folded into the
drive) on the `hp-c3323a` preset as shipped -- seven surfaces with head
switches, eight zones with track and cylinder skews and spares, the
measured seek table, controller overheads, the segmented read cache with
read-ahead, SPTF scheduling at queue depth 64 -- and on the same drive
reduced to the simple model: one surface of uniform tracks of the same
capacity, the same seek table, no overheads, no read cache, first come
first served. Prints simulated requests per second of wall time for each
(median of --repeat runs, whole `stlsim.run` calls) and the ratio.

    python benches/full_model.py [--repeat 5] [--drive hp-c3323a]
    python benches/full_model.py --requests 10000000 --repeat 3   # run_long.py's trace
    git show f870e07:python/stlsim/drives/cmr.toml > /tmp/cmr-analytic.toml
    python benches/full_model.py --requests 10000000 --repeat 3 --against /tmp/cmr-analytic.toml

With `--requests N` the requests are `benches/run_long.py`'s trace of N
(the CloudPhysics sample repeated, shifted in time and LBA, folded into
the drive), each model's runs alternating with the other's so that a
change in the machine's load falls on both (issue 34, item 4: the full
model at no less than half the rate of an analytic preset on the same
requests). `--against DRIVE` (a preset or a file, repeatable) runs more
drives in the same alternation, such as the `cmr` preset as it was before
issue 30 moved it onto the physical model (f870e07, above).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import stlsim

#: The keys of the validated model (issue 13): without them a drive is the simple model.
FULL_MODEL_KEYS = (
    "surfaces",
    "surface_order",
    "head_switch_ms",
    "write_settle_ms",
    "zero_latency",
    "zones",
    "controller",
    "read_cache",
    "rotation",
)


def simple(drive: dict[str, Any]) -> dict[str, Any]:
    """The drive with the validated model's parts taken out: one surface of
    uniform tracks holding the same number of sectors, its seek table kept."""
    zones = drive.get("zones") or []
    tracks = drive["tracks"]
    sectors = 0
    for i, z in enumerate(zones):
        end = zones[i + 1]["first_track"] if i + 1 < len(zones) else tracks
        sectors += (end - z["first_track"]) * z["sectors_per_track"]
    out = {k: v for k, v in drive.items() if k not in FULL_MODEL_KEYS}
    out["name"] = drive["name"] + "-simple"
    out["description"] = "the simple model of " + drive["name"]
    out["track_bytes"] = (sectors // tracks) * drive["sector_bytes"]
    return out


def one_run(drive: dict[str, Any], trace: Path | None) -> tuple[float, int]:
    """Wall seconds and requests of one whole `stlsim.run`."""
    where: dict[str, Any] = {"trace": str(trace), "format": "vscsi"} if trace else {}
    r = stlsim.run(drive=drive, layer="cmr", fold=True, prefill=0, queue_depth=64, **where)
    return r.wall_s, r.report["host"]["requests"]


def rates(drives: list[dict[str, Any]], repeat: int, trace: Path | None) -> tuple[list[float], int]:
    """Requests per second of each drive (median wall of `repeat` runs, the
    drives' runs alternating)."""
    walls: list[list[float]] = [[] for _ in drives]
    n = 0
    for _ in range(repeat):
        for i, d in enumerate(drives):
            wall, n = one_run(d, trace)
            walls[i].append(wall)
    return [n / statistics.median(w) for w in walls], n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--drive", default="hp-c3323a")
    ap.add_argument("--requests", type=int, help="run run_long.py's trace of this many requests, not the sample")
    ap.add_argument("--against", action="append", default=[], help="another drive (preset or file) run alongside")
    a = ap.parse_args()
    full = stlsim.load_drive(a.drive)
    stlsim.run(drive=full, layer="cmr", fold=True, prefill=0, limit=1000)  # warm imports and caches
    with tempfile.TemporaryDirectory() as tmp:
        trace = None
        if a.requests:
            trace = Path(tmp) / "long.vscsi"
            # In a child, which keeps the built trace's memory out of this process.
            subprocess.run([sys.executable, str(Path(__file__).parent / "run_long.py"), "--build-trace", str(trace),
                            str(a.requests)], check=True)
        others = [stlsim.load_drive(d) for d in a.against]
        (full_rate, simple_rate, *other_rates), n = rates([full, simple(full), *others], a.repeat, trace)
    print(json.dumps({
        "drive": a.drive,
        "requests": n,
        "full_model_requests_per_s": round(full_rate),
        "simple_model_requests_per_s": round(simple_rate),
        "simple_over_full": round(simple_rate / full_rate, 2),
        **{f"{d}_requests_per_s": round(r) for d, r in zip(a.against, other_rates)},
        **{f"full_over_{d}": round(full_rate / r, 2) for d, r in zip(a.against, other_rates)},
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
