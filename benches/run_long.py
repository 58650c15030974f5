#!/usr/bin/env python3
"""Whole-run benchmark: time `stlsim run` on a long trace.

Builds a CloudPhysics vscsi trace of N requests (default 10 M) by repeating
the bundled CloudPhysics sample, each copy shifted in time (by the sample's
span plus one second) and in LBA (by 7 GiB per copy, modulo 896 GiB so the
trace fits the imr-paper drive), then runs `stlsim run` on it in a child
process and reports simulated host requests per second of wall time and the
child's peak resident memory.

    python benches/run_long.py                      # 10 M requests, cmr, queue mode
    python benches/run_long.py --requests 2000000 --layer cmr --extra=--no-write-cache
    python benches/run_long.py --extra=--out --extra=/tmp/out   # include writing Parquet

The wall time covers the whole command: Python start-up, reading the trace
file, the simulation and printing the JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REC = struct.Struct("<IIIHHQQ")  # vscsi version 1: seq, len, nSG, cmd, ver, lbn, ts_us


def sample_path() -> Path:
    import stlsim.config

    return Path(stlsim.config.default_trace())


def build_trace(out: Path, requests: int) -> None:
    raw = sample_path().read_bytes()
    recs = [REC.unpack_from(raw, i) for i in range(0, len(raw) - len(raw) % REC.size, REC.size)]
    t0, t1 = recs[0][6], max(r[6] for r in recs)
    span_us = t1 - t0 + 1_000_000
    shift_sectors = 7 * (1 << 30) // 512
    wrap_sectors = 896 * (1 << 30) // 512
    written = 0
    copy = 0
    with out.open("wb") as f:
        while written < requests:
            dt = copy * span_us
            dl = (copy * shift_sectors) % wrap_sectors
            take = recs[: requests - written]
            f.write(b"".join(REC.pack(s, ln, sg, cmd, ver, lbn + dl, ts + dt) for s, ln, sg, cmd, ver, lbn, ts in take))
            written += len(take)
            copy += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--layer", default="cmr")
    ap.add_argument("--drive", default="imr-paper")
    ap.add_argument("--extra", action="append", default=[], help="extra argument for stlsim run (repeatable)")
    ap.add_argument("--keep", type=Path, help="keep the generated trace at this path")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        trace = args.keep or Path(tmp) / "long.vscsi"
        if not trace.exists() or trace.stat().st_size != args.requests * REC.size:
            t = time.perf_counter()
            build_trace(trace, args.requests)
            print(f"built {trace} ({args.requests:,} requests) in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        cmd = [sys.executable, "-m", "stlsim", "run", "--trace", str(trace), "--format", "vscsi",
               "--drive", args.drive, "--layer", args.layer, "--json", *args.extra]
        t = time.perf_counter()
        done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        report = json.loads(done.stdout)
    n = report["host"]["requests"]
    result = {
        "requests": n,
        "layer": args.layer,
        "drive": args.drive,
        "extra": args.extra,
        "wall_s": round(wall, 3),
        "requests_per_s": round(n / wall),
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "waf": report["waf"],
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
