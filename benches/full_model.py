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
"""

from __future__ import annotations

import argparse
import json
import statistics
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


def rate(drive: dict[str, Any], repeat: int) -> tuple[float, int]:
    walls = []
    n = 0
    for _ in range(repeat):
        r = stlsim.run(drive=drive, layer="cmr", fold=True, prefill=0, queue_depth=64)
        walls.append(r.wall_s)
        n = r.report["host"]["requests"]
    return n / statistics.median(walls), n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--drive", default="hp-c3323a")
    a = ap.parse_args()
    full = stlsim.load_drive(a.drive)
    stlsim.run(drive=full, layer="cmr", fold=True, prefill=0, limit=1000)  # warm imports and caches
    full_rate, n = rate(full, a.repeat)
    simple_rate, _ = rate(simple(full), a.repeat)
    print(json.dumps({
        "drive": a.drive,
        "requests": n,
        "full_model_requests_per_s": round(full_rate),
        "simple_model_requests_per_s": round(simple_rate),
        "simple_over_full": round(simple_rate / full_rate, 2),
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
