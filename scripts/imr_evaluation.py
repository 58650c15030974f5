#!/usr/bin/env python3
"""The IMR evaluation of docs/imr.md: the five layers on the bundled trace
(repeated N times), and the variants that show which simulator assumption
decides the ranking. Prints Markdown tables.

    python scripts/imr_evaluation.py                 # N = 1, 10 and 30 (about a minute)
    python scripts/imr_evaluation.py --repeat 10     # one N
    python scripts/imr_evaluation.py --repeat 1 --variants-only

Each variant changes one assumption against the defaults of the imr-paper
drive (a full drive, writes counted on arrival, imr-cache's evict_threshold
of 50): an empty drive, counting destaged extents, Algorithm 2's eviction
without hysteresis. A cell is WAF total / WAF excluding moves / mean latency (ms).
"""

from __future__ import annotations

import argparse
import math

import stlsim

LAYERS = ["cmr", "imr-rmw", "imr-flip", "imr-cache", "imr-dtm"]
VARIANTS = [
    ("defaults (full drive, arrival, `evict_threshold` 50)", {}, {}),
    ("empty drive (`--prefill 0`)", {"prefill": 0.0}, {}),
    ("`count_at=destage`", {}, {"count_at": "destage"}),
    ("`evict_threshold=0`", {}, {"evict_threshold": 0}),
]


def _declared(layer: str) -> set[str]:
    return {p["name"] for e in stlsim.layers() if e["name"] == layer for p in e["params"]}


def _f(v: float | None, digits: int = 3) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.{digits}f}"


def main_table(repeat: int) -> None:
    c = stlsim.compare([{"layer": name} for name in LAYERS], repeat=repeat)
    t = c.table()
    n = int(t["requests"].iloc[0])
    print(f"\nThe bundled trace x{repeat}: {n:,} requests\n")
    print("| layer | WAF | excl. moves | steady | intervals | mean ms | p99 ms | p99.9 ms | disparity s | vs CMR s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in t.to_dict("records"):
        iv = r["intervals_completed"]
        iv = "-" if iv is None or (isinstance(iv, float) and math.isnan(iv)) else f"{int(iv)}"
        print(
            f"| {r['label']} | {_f(r['waf'])} | {_f(r['waf_excluding_moves'])} | {_f(r['waf_steady'])} | {iv} "
            f"| {_f(r['mean_ms'], 1)} | {_f(r['p99_ms'], 0)} | {_f(r['p999_ms'], 0)} "
            f"| {_f(r['final_disparity_s'], 1)} | {_f(r['disparity_vs_cmr_s'], 1)} |"
        )
    print("\n| layer | host | rmw | backup | moves | metadata | stages | waited s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in t.to_dict("records"):
        print(
            f"| {r['label']} | {_f(r['waf_host'])} | {_f(r['waf_rmw'])} | {_f(r['waf_backup'])} | {_f(r['waf_moves'])} "
            f"| {_f(r['waf_metadata'])} | {int(r['stages']):,} | {_f(r['stage_wait_s'], 1)} |"
        )


def variants_table(repeat: int) -> None:
    layers = LAYERS[1:]
    print(f"\nAssumption variants, x{repeat} (WAF / WAF excluding moves / mean ms)\n")
    print("| variant | " + " | ".join(layers) + " |")
    print("|---|" + "---|" * len(layers))
    for name, kw, params in VARIANTS:
        cells = []
        for layer in layers:
            p = {k: v for k, v in params.items() if k in _declared(layer)}
            if params and not p:
                cells.append("")
                continue
            s = stlsim.run(layer=layer, repeat=repeat, params=p, **kw).summary
            cells.append(f"{s['waf']:.3f} / {s['waf_excluding_moves']:.3f} / {s['mean_ms']:.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, action="append", help="copies of the trace (repeatable; default 1, 10, 30)")
    ap.add_argument("--variants-only", action="store_true", help="only the assumption variants")
    args = ap.parse_args()
    for n in args.repeat or [1, 10, 30]:
        if not args.variants_only:
            main_table(n)
        if n <= 10:
            variants_table(n)


if __name__ == "__main__":
    main()
