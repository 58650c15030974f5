#!/usr/bin/env python3
"""Start-up benchmark: time a short `stlsim run` as a user types it.

Runs `stlsim run --limit 1000` (the bundled trace, cmr on imr-paper) N times
(default 20) after one untimed warm-up run, each in a fresh process with its
output discarded, and prints the minimum, median and maximum wall time.

    python benches/startup.py                     # 20 runs of `stlsim run --limit 1000`
    python benches/startup.py --runs 50 --extra=--json
    python benches/startup.py --extra=--layer --extra=imr-rmw

The replay of 1,000 requests takes about a millisecond, so the figure is
almost all start-up: the interpreter, `import stlsim` and the imports the
run's summary needs. The `stlsim` script beside this interpreter is timed
(the console entry point), or `python -m stlsim` where there is none.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def stlsim_command() -> list[str]:
    script = Path(sys.executable).with_name("stlsim")
    if script.is_file():
        return [str(script)]
    found = shutil.which("stlsim")
    return [found] if found else [sys.executable, "-m", "stlsim"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--extra", action="append", default=[], help="extra argument for stlsim run (repeatable)")
    args = ap.parse_args()

    cmd = [*stlsim_command(), "run", "--limit", str(args.limit), *args.extra]
    # The first run pays for cold file caches, which a user's second run does not.
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    walls = []
    for _ in range(args.runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
    result = {
        "command": " ".join([Path(cmd[0]).name, *cmd[1:]]),
        "runs": args.runs,
        "min_s": round(min(walls), 4),
        "median_s": round(statistics.median(walls), 4),
        "max_s": round(max(walls), 4),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
