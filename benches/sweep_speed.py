"""Benchmark: the IMR sweep plan on one worker and on every core.

    python benches/sweep_speed.py [--jobs N] [--repeat R] [--plan examples/sweeps/imr.toml] [--cell-repeat K]

Runs the plan R times (default 7) with one worker and R times with N (default:
every core), alternating, each into a fresh temporary folder, and prints the
median and the best wall time of each and the speed-ups they give. 
plan takes under a second, so one run is at the mercy of the machine's other
tenants: compare medians, not single runs. ``--cell-repeat K`` replays each
cell's trace K times (the plan's ``repeat``), for cells K times longer.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import stlsim

ROOT = Path(__file__).resolve().parent.parent


def once(plan: Any, jobs: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        rows = stlsim.sweep(plan, d, jobs=jobs)
        wall = time.perf_counter() - t0
        assert rows["error"].isna().all(), rows["error"].dropna().tolist()
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--plan", default=str(ROOT / "examples" / "sweeps" / "imr.toml"))
    ap.add_argument("--cell-repeat", type=int, default=1, help="replay each cell's trace this many times")
    a = ap.parse_args()
    if a.cell_repeat > 1:
        from stlsim.sweep import load_plan

        inner = dict(load_plan(a.plan).spec["sweep"])  # its paths resolved
        inner["fixed"] = {**inner.get("fixed", {}), "repeat": a.cell_repeat}
        a.plan = {"sweep": inner}
    once(a.plan, 1)  # warm the imports and the file cache for both sides
    # The cells one after another on one core (each run parsing on its own
    # thread), one after another with a parse thread each (stlsim's
    # default: two cores, partly), and on a pool of workers.
    sides = {"1 worker, one thread": (1, "0"), "1 worker, parse thread": (1, "1"), f"{a.jobs} workers": (a.jobs, None)}
    walls: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(a.repeat):
        for name, (jobs, env) in sides.items():
            if env is None:
                os.environ.pop("STLSIM_PARSE_THREAD", None)
            else:
                os.environ["STLSIM_PARSE_THREAD"] = env
            walls[name].append(once(a.plan, jobs))
    os.environ.pop("STLSIM_PARSE_THREAD", None)
    for name, w in walls.items():
        print(f"{name}: median {statistics.median(w):.3f} s, best {min(w):.3f} s over {len(w)} runs")
    pool = walls[f"{a.jobs} workers"]
    for base in ("1 worker, one thread", "1 worker, parse thread"):
        med = statistics.median(walls[base]) / statistics.median(pool)
        best = min(walls[base]) / min(pool)
        print(f"speed-up of {a.jobs} workers over {base}: {med:.2f}x (medians), {best:.2f}x (best runs)")



if __name__ == "__main__":
    main()
