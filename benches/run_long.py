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
    python benches/run_long.py --trace-format msr   # the same requests as MSR CSV text
    python benches/run_long.py --trace-format stlt  # ... as stlsim's binary form (stlsim convert)
    python benches/run_long.py --parse-threads 1    # parse on the engine's thread

By default the trace is parsed on a second thread while the engine
simulates (`STLSIM_PARSE_THREAD`, docs/cli.md); `--parse-threads 1` measures
the one-thread figure.

The wall time covers the whole command: Python start-up, reading the trace
file, the simulation and printing the JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
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


def build_trace(out: Path, requests: int, wrap_gib: int = 896) -> None:
    """`requests` requests: the sample repeated, each copy shifted in time
    and by 7 GiB in LBA, modulo `wrap_gib` GiB."""
    raw = sample_path().read_bytes()
    recs = [REC.unpack_from(raw, i) for i in range(0, len(raw) - len(raw) % REC.size, REC.size)]
    t0, t1 = recs[0][6], max(r[6] for r in recs)
    span_us = t1 - t0 + 1_000_000
    shift_sectors = 7 * (1 << 30) // 512
    wrap_sectors = wrap_gib * (1 << 30) // 512
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


def build_msr(vscsi: Path, out: Path) -> None:
    """The vscsi trace's reads and writes as MSR Cambridge CSV (times in
    100 ns ticks, offsets and sizes in bytes, one disk)."""
    raw = vscsi.read_bytes()
    ops = {0x28: "Read", 0x08: "Read", 0xA8: "Read", 0x88: "Read", 0x2A: "Write", 0x0A: "Write", 0xAA: "Write", 0x8A: "Write"}
    with out.open("w") as f:
        lines = []
        for i in range(0, len(raw) - len(raw) % REC.size, REC.size):
            _, ln, _, cmd, _, lbn, ts = REC.unpack_from(raw, i)
            op = ops.get(cmd)
            if op:
                lines.append(f"{ts * 10},bench,0,{op},{lbn * 512},{ln},0\n")
            if len(lines) >= 100_000:
                f.write("".join(lines))
                lines.clear()
        f.write("".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--layer", default="cmr")
    ap.add_argument("--drive", default="imr-paper")
    ap.add_argument("--extra", action="append", default=[], help="extra argument for stlsim run (repeatable)")
    ap.add_argument("--keep", type=Path, help="keep the generated trace at this path")
    ap.add_argument("--trace-format", choices=("vscsi", "msr", "stlt"), default="vscsi",
                    help="the form the requests are replayed from (default: vscsi)")
    ap.add_argument("--parse-threads", type=int, choices=(1, 2), default=2,
                    help="2: parse on a second thread (the default of stlsim run); 1: on the engine's")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        trace = args.keep or Path(tmp) / "long.vscsi"
        if not trace.exists() or trace.stat().st_size != args.requests * REC.size:
            t = time.perf_counter()
            # In a child, as below: a run forked from a parent that built the
            # trace in-process inherits its peak memory (75 MiB, not the run's 32).
            subprocess.run([sys.executable, __file__, "--build-trace", str(trace), str(args.requests)], check=True)
            print(f"built {trace} ({args.requests:,} requests) in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        if args.trace_format != "vscsi":
            t = time.perf_counter()
            msr = Path(tmp) / "long.csv"
            # In a child: the parent stays small, and a forked run would
            # otherwise count the parent's pages in its peak memory.
            subprocess.run([sys.executable, __file__, "--build-msr", str(trace), str(msr)], check=True)
            trace = msr
            if args.trace_format == "stlt":
                trace = Path(tmp) / "long.stlt"
                subprocess.run([sys.executable, "-m", "stlsim", "convert", str(msr), str(trace), "--format", "msr"],
                               check=True, stdout=subprocess.DEVNULL)
            print(f"wrote {trace} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        cmd = [sys.executable, "-m", "stlsim", "run", "--trace", str(trace), "--format", args.trace_format,
               "--drive", args.drive, "--layer", args.layer, "--json", *args.extra]
        env = dict(os.environ, STLSIM_PARSE_THREAD="1" if args.parse_threads == 2 else "0")
        t = time.perf_counter()
        with tempfile.TemporaryFile("w+") as out:
            child = subprocess.Popen(cmd, stdout=out, text=True, env=env)
            # The run's own peak memory (RUSAGE_CHILDREN would also count the
            # convert step's), from the wait that reaps it.
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - t
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode != 0:
                raise SystemExit(f"stlsim run failed ({child.returncode}): {' '.join(cmd)}")
            peak_kib = usage.ru_maxrss
            out.seek(0)
            report = json.load(out)
    n = report["host"]["requests"]
    result = {
        "requests": n,
        "layer": args.layer,
        "drive": args.drive,
        "extra": args.extra,
        "trace_format": args.trace_format,
        "parse_threads": args.parse_threads,
        "wall_s": round(wall, 3),
        "requests_per_s": round(n / wall),
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "waf": report["waf"],
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--build-trace"]:
        build_trace(Path(sys.argv[2]), int(sys.argv[3]), *(int(a) for a in sys.argv[4:5]))
        raise SystemExit(0)
    if sys.argv[1:2] == ["--build-msr"]:
        build_msr(Path(sys.argv[2]), Path(sys.argv[3]))
        raise SystemExit(0)
    raise SystemExit(main())
