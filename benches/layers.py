#!/usr/bin/env python3
"""Requests per second of every registered layer, engine alone (criterion).

Runs the engine benchmarks (`cargo bench -p stlsim-core --bench engine --
engine-`), reads criterion's estimates from `target/criterion`, and prints
one row per benchmark: group, layer, simulated requests per second (the
median time's). Checks that every layer the registry holds has at least one
benchmark, and compares each figure with `benches/layer_figures.json` (the
figures the README's performance table quotes) as a ratio to the CMR
benchmark measured in the same run (`engine-cmr-queue/cache-on`), so that a
faster or slower machine than the reference's changes nothing: a ratio more
than 10 % below the reference's is flagged and makes the exit status 1.

    python benches/layers.py                 # run the benchmarks, then the table
    python benches/layers.py --no-run        # the table from the last run's estimates
    python benches/layers.py --quick         # shorter measurements (noisier)
    python benches/layers.py --update        # write the figures as the new reference
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITERION = ROOT / "target" / "criterion"
FIGURES = Path(__file__).resolve().parent / "layer_figures.json"
# The benchmark every figure is compared as a ratio to.
BASE = "engine-cmr-queue/cache-on"


def estimates() -> dict[str, float]:
    """`group/function` -> elements per second, from criterion's files."""
    out: dict[str, float] = {}
    for bench in CRITERION.glob("engine*/*/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        elements = (meta.get("throughput") or {}).get("Elements")
        if not elements:
            continue
        ns = est["median"]["point_estimate"]
        out[f"{meta['group_id']}/{meta['function_id']}"] = elements / (ns * 1e-9)
    return out


def covers(key: str, layer: str) -> bool:
    """Whether benchmark `group/function` runs `layer` (functions are named
    for their layer, `LAYER` or `LAYER-WORKLOAD`; the CMR group for CMR)."""
    group, function = key.split("/", 1)
    return function == layer or function.startswith(layer + "-") or group == f"engine-{layer}-queue"


def registered_layers() -> list[str]:
    import stlsim

    layers = stlsim.layers()
    return list(layers["layer"]) if hasattr(layers, "columns") else [layer["name"] for layer in layers]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-run", action="store_true", help="only read the last run's estimates")
    ap.add_argument("--quick", action="store_true", help="1 s warm-up, 3 s measurement per benchmark")
    ap.add_argument("--update", action="store_true", help=f"write the figures to {FIGURES.name}")
    a = ap.parse_args()
    if not a.no_run:
        cmd = ["cargo", "bench", "-p", "stlsim-core", "--bench", "engine", "--", "engine-"]
        if a.quick:
            cmd += ["--warm-up-time", "1", "--measurement-time", "3"]
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    got = estimates()
    reference = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    bad = 0
    base, ref_base = got.get(BASE), reference.get(BASE)
    print(f"{'benchmark':<48} {'requests/s':>14} {'reference':>14}  {'vs CMR':>7} {'ref':>7}  change")
    for name in sorted(got):
        ref = reference.get(name)
        change, ratio, ref_ratio = "", "", ""
        if base and ref_base and ref:
            # Ratios to the CMR benchmark of the same run: the machine cancels out.
            r, rr = got[name] / base, ref / ref_base
            ratio, ref_ratio = f"{r:.3f}", f"{rr:.3f}"
            delta = r / rr - 1
            change = f"{delta:+.1%}"
            if delta < -0.10:
                change += "  REGRESSION (ratio to CMR more than 10 % below the reference's)"
                bad += 1
        print(f"{name:<48} {got[name]:>14,.0f} {ref or 0:>14,.0f}  {ratio:>7} {ref_ratio:>7}  {change}")
    missing = [n for n in registered_layers() if not any(covers(k, n) for k in got)]
    if missing:
        print(f"layers without an engine benchmark: {', '.join(missing)}")
        bad += 1
    if a.update:
        FIGURES.write_text(json.dumps({k: round(v) for k, v in sorted(got.items())}, indent=2) + "\n")
        print(f"wrote {FIGURES}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
