"""Print the evaluation tables of docs/dmsmr.md: paper 003's replay (queue
depth 1, flat out, write cache off, LBAs unmodified) of smr-eregion and
smr-vguard on the dmsmr-5tb drive, over the bundled real traces (Figure 2 and
Figure 3) and the paper's synthetic traces, 100,000 random 4 KiB writes over
0.5, 1, 2 and 4 TB (Figure 6).

    python scripts/vguard_evaluation.py [--requests N] [--real-only] [--synthetic-only]

Takes about 30 seconds on the CI machine class.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import stlsim

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
REAL = ["rsrch_1.csv", "wdev_1.csv", "wdev_3.csv", "cloudPhysicsIO.vscsi"]
SPANS = ["500GB", "1TB", "2TB", "4TB"]
LAYERS = ["smr-eregion", "smr-vguard"]


def run(trace: str, layer: str, params: dict | None = None) -> tuple[dict, dict, float]:
    t = time.time()
    r = stlsim.run(trace=trace, drive="dmsmr-5tb", layer=layer, mode="flat-out", write_cache=False, params=params or {})
    return r.report["latency"]["all"], r.report["layer_counters"], time.time() - t


def row(name: str, layer: str, lat: dict, c: dict) -> str:
    cells = [name, layer] + [f"{lat[k]:,.1f}" for k in ("mean_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms")]
    cells.append(f"{c.get('clean_bands', 0):,.0f}")
    return "| " + " | ".join(cells) + " |"


HEAD = "| trace | layer | mean ms | p90 ms | p99 ms | p99.9 ms | max ms | bands cleaned |\n|---|---|---|---|---|---|---|---|"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=100_000, help="writes per synthetic trace (paper: 100,000)")
    ap.add_argument("--real-only", action="store_true")
    ap.add_argument("--synthetic-only", action="store_true")
    a = ap.parse_args()
    if not a.synthetic_only:
        print("Real traces (Figure 2):\n")
        print(HEAD)
        util = []
        for t in REAL:
            for layer in LAYERS:
                lat, c, _ = run(str(DATA / t), layer)
                print(row(t, layer, lat, c), flush=True)
                if layer == "smr-vguard":
                    util.append((t, c))
        print("\nVguard's cache use (Figure 3):\n")
        print("| trace | tracks copied | peak active tracks | peak active / cache | peak log span / beta | relocations |")
        print("|---|---|---|---|---|---|")
        for t, c in util:
            print(
                f"| {t} | {c['tracks_copied']:,.0f} | {c['cache_active_peak_tracks']:,.0f} | "
                f"{100 * c['cache_active_peak_fraction']:.2f} % | {100 * c['log_peak_fraction_of_beta']:.2f} % | {c['relocations']:,.0f} |"
            )
    if not a.real_only:
        print(f"\nSynthetic: {a.requests:,} random 4 KiB writes (Figure 6):\n")
        print(HEAD)
        for span in SPANS:
            for layer in LAYERS:
                lat, c, _ = run(f"synth:uniform,count={a.requests},span_bytes={span},seed=1", layer)
                print(row(span, layer, lat, c), flush=True)


if __name__ == "__main__":
    main()
