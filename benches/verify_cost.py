#!/usr/bin/env python3
"""What `--verify` costs (issue 14, target 4): the same whole `stlsim run`
with and without verification, for CMR and each IMR layer.

The trace is run_long.py's: the bundled CloudPhysics sample repeated to N
requests (default 10 M), each copy shifted by 7 GiB, which writes 65 GiB
of 4 KiB sectors on `imr-paper` (17.1 M distinct sectors). Each run is a
child process timed from outside (Python start-up, reading the trace, the
simulation, the final scan and printing the report); the best of
`--repeat` runs is kept, as other work on the machine only ever adds time.

    python benches/verify_cost.py                      # cmr and every imr-* layer, 10 M requests
    python benches/verify_cost.py --layers cmr --repeat 5
    python benches/verify_cost.py --requests 1000000   # a quicker look
    python benches/verify_cost.py --threads 1          # every run on one thread

By default a run parses its trace on a second thread, and a verified one
also checks on a thread of its own once it is long enough (docs/cli.md);
`--threads 1` sets `STLSIM_PARSE_THREAD=0` and `STLSIM_VERIFY_THREAD=0`
for the one-thread figures.

It prints one row per layer: seconds unverified and verified, their ratio
(target: at most 3), the verification state per written sector from the
report (`verification.bytes_per_written_sector`: heap bytes of the
oracle's versions and the medium's contents over the distinct host
sectors written; target: at most 16) and each run's peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_long  # noqa: E402  (the trace builder, shared)


def layers() -> list[str]:
    import stlsim

    names = [layer["name"] for layer in stlsim.layers()]
    return [n for n in names if n == "cmr" or n.startswith("imr-")]


def run(trace: Path, layer: str, verify: bool, drive: str, threads: int = 2) -> tuple[float, float, dict]:
    """(wall seconds, peak RSS MiB, report) of one `stlsim run` in a child."""
    on = "1" if threads == 2 else "0"
    env = dict(os.environ, STLSIM_PARSE_THREAD=on, STLSIM_VERIFY_THREAD=on)
    cmd = [sys.executable, "-m", "stlsim", "run", "--trace", str(trace), "--drive", drive,
           "--layer", layer, "--json", "--verify" if verify else "--no-verify"]
    with tempfile.TemporaryFile("w+") as out:
        t = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, text=True, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"stlsim run failed: {' '.join(cmd)}")
        out.seek(0)
        return wall, usage.ru_maxrss / 1024, json.load(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--layers", nargs="*", help="layers to run (default: cmr and every imr-* layer)")
    ap.add_argument("--drive", default="imr-paper")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each configuration; the best is kept (default 3)")
    ap.add_argument("--keep", type=Path, help="keep the generated trace at this path")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--threads", type=int, choices=(1, 2), default=2,
                    help="2 (default): parse and verify on threads of their own; 1: everything on one")
    args = ap.parse_args()
    names = args.layers or layers()

    with tempfile.TemporaryDirectory() as tmp:
        trace = args.keep or Path(tmp) / "long.vscsi"
        if not trace.exists() or trace.stat().st_size != args.requests * run_long.REC.size:
            # In a child, so the runs (forked from this process) do not
            # count the builder's pages in their peak memory.
            subprocess.run([sys.executable, __file__, "--build-trace", str(trace), str(args.requests)], check=True)
        rows = []
        for layer in names:
            best: dict[bool, tuple[float, float, dict]] = {}
            for _ in range(args.repeat):
                # Alternate, so a slow spell of the machine hits both alike.
                for verify in (False, True):
                    r = run(trace, layer, verify, args.drive, args.threads)
                    if verify not in best or r[0] < best[verify][0]:
                        best[verify] = r
            v = best[True][2]["verification"]
            rows.append({
                "layer": layer,
                "requests": best[True][2]["host"]["requests"],
                "unverified_s": round(best[False][0], 3),
                "verified_s": round(best[True][0], 3),
                "ratio": round(best[True][0] / best[False][0], 2),
                "bytes_per_written_sector": v["bytes_per_written_sector"],
                "written_sectors": v["written_sectors"],
                "state_mib": round(v["state_bytes"] / 2**20, 1),
                "peak_rss_mib_unverified": round(best[False][1], 1),
                "peak_rss_mib_verified": round(best[True][1], 1),
            })
            print(f"{layer}: {best[False][0]:.2f} s, --verify {best[True][0]:.2f} s", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| layer | unverified (s) | --verify (s) | ratio | bytes / written sector | state (MiB) | peak RSS (MiB) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['layer']} | {r['unverified_s']:.2f} | {r['verified_s']:.2f} | {r['ratio']:.2f}x | "
              f"{r['bytes_per_written_sector']:.1f} | {r['state_mib']:.0f} | "
              f"{r['peak_rss_mib_unverified']:.0f} / {r['peak_rss_mib_verified']:.0f} |")
    print(f"\n{rows[0]['requests']:,} requests, {rows[0]['written_sectors']:,} sectors written "
          f"(best of {args.repeat} runs each, {args.drive}, {args.threads} thread{'s' if args.threads > 1 else ''})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--build-trace"]:
        run_long.build_trace(Path(sys.argv[2]), int(sys.argv[3]))
        raise SystemExit(0)
    raise SystemExit(main())
