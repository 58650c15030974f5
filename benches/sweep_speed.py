"""Benchmark: the IMR sweep plan on one worker and on every core.

    python benches/sweep_speed.py [--jobs N] [--plan examples/sweeps/imr.toml]

Runs the plan into two fresh temporary folders, first with one worker, then
with N (default: every core), and prints both wall times and the speed-up.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import stlsim

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--plan", default=str(ROOT / "examples" / "sweeps" / "imr.toml"))
    a = ap.parse_args()
    walls = {}
    for jobs in (1, a.jobs):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            rows = stlsim.sweep(a.plan, d, jobs=jobs)
            walls[jobs] = time.perf_counter() - t0
            assert rows["error"].isna().all(), rows["error"].dropna().tolist()
        print(f"{len(rows)} cells, {jobs} worker(s): {walls[jobs]:.2f} s")
    print(f"speed-up with {a.jobs} workers: {walls[1] / walls[a.jobs]:.2f}x")


if __name__ == "__main__":
    main()
