"""Paper 004's evaluation on the bundled traces: the four host-managed
buffer layers side by side (section 6.2), and Amphisbaena's chunk-size
(section 6.3) and lambda (section 6.4) sweeps, each one command:

    python scripts/amphisbaena_evaluation.py compare [--trace T ...]
    python scripts/amphisbaena_evaluation.py chunk   [--trace T ...] [--out DIR]
    python scripts/amphisbaena_evaluation.py lambda  [--trace T ...] [--out DIR]
    python scripts/amphisbaena_evaluation.py drive-cache [--trace T ...]

Every run: drive exos-x18z (trace LBAs unmodified), the buffer at 1 % of
the trace's maximum access range, the layers' defaults (chunk 64 KiB,
lambda 0.1, window 1,024, period 10,000 writes), queue mode at depth 64
with the drive's write cache off. The sweeps print a table and save a
plot of each metric normalised to its first value, as the paper's
figures are (chunk_sweep.png, lambda_sweep.png in --out, default the
current directory). drive-cache runs the four layers with the drive's own
write cache off (the paper's setting) and on beneath them (256 MiB, the
Exos X18 data sheet's, destaged by the drive's queue). Default traces: the
bundled CloudPhysics sample and MSR rsrch_1.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import stlsim

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
TRACES = ["cloudPhysicsIO.vscsi", "rsrch_1.csv"]
LAYERS = ["amphisbaena", "hm-fluid", "hm-fluid-loop", "hm-skylight"]
CHUNKS = [64, 128, 256, 512, 1024]
LAMBDAS = [0.1, 0.3, 0.5]


def run(trace: str, layer: str, params: dict | None = None) -> dict:
    path = trace if "/" in trace else str(DATA / trace)
    r = stlsim.run(trace=path, drive="exos-x18z", layer=layer, params=params or {})
    rep = r.report
    c = rep["layer_counters"]
    bg = rep["background"]
    return {
        "mean_ms": rep["latency"]["all"]["mean_ms"],
        "waf": rep["waf"],
        "hit": c["write_hit_rate"],
        "hfb_hit": c.get("hfb_hits", 0.0) / max(c["blocks_written"], 1.0),
        "lfb_hit": c.get("lfb_hits", 0.0) / max(c["blocks_written"], 1.0),
        "rmw": c["writebacks_rmw"],
        "rmw_free": c["writebacks_rmw_free"],
        "padding_mib": c["padding_sectors"] * 4096 / 2**20,
        "victim": c["avg_victim_zone_blocks"],
        "stages": bg["stages"],
        "aborted": bg["aborted"],
        "to_hfb": c.get("chunks_to_hfb", 0.0),
        "to_lfb": c.get("chunks_to_lfb", 0.0),
    }


HEAD = (
    "| trace | layer | mean ms | WAF | write hits (HFB + LFB) | RMW | RMW-free | padding MiB | avg victim blocks | GC stages (aborted) |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def row(trace: str, label: str, m: dict) -> str:
    hits = f"{m['hit']:.3f}"
    if label.startswith("amphisbaena"):
        hits += f" ({m['hfb_hit']:.3f} + {m['lfb_hit']:.3f})"
    cells = [
        trace,
        label,
        f"{m['mean_ms']:,.1f}",
        f"{m['waf']:.2f}",
        hits,
        f"{m['rmw']:,.0f}",
        f"{m['rmw_free']:,.0f}",
        f"{m['padding_mib']:,.1f}",
        f"{m['victim']:,.1f}",
        f"{m['stages']:,} ({m['aborted']:,})",
    ]
    return "| " + " | ".join(cells) + " |"


def sweep(kind: str, traces: list[str], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = CHUNKS if kind == "chunk" else LAMBDAS
    param = "chunk_kib" if kind == "chunk" else "lambda"
    print(HEAD.replace("| layer |", f"| {param} |"))
    results: dict[str, list[dict]] = {}
    for t in traces:
        results[t] = []
        for v in values:
            m = run(t, "amphisbaena", {param: v})
            results[t].append(m)
            print(row(t, f"{v}", m), flush=True)
    metrics = [("mean_ms", "mean latency"), ("waf", "WAF"), ("hit", "write hit rate"), ("rmw", "RMW count"),
               ("padding_mib", "padding"), ("victim", "avg victim zone size")]
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    for ax, (key, title) in zip(axes.flat, metrics):
        for t in traces:
            base = results[t][0][key] or 1.0
            ax.plot([str(v) for v in values], [m[key] / base for m in results[t]], marker="o", label=t)
        ax.set_title(title)
        ax.set_xlabel(param)
        ax.set_ylabel(f"relative to {param} = {values[0]}")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{kind}_sweep.png"
    fig.savefig(path, dpi=110)
    print(f"\nsaved {path}")
    return path


def drive_cache(traces: list[str]) -> None:
    """The four layers with the drive's write cache off and on (256 MiB)."""
    print("| trace | layer | drive cache | mean ms | WAF | flushes | reordered | disk busy s |")
    print("|---|---|---|---|---|---|---|---|")
    for t in traces:
        path = t if "/" in t else str(DATA / t)
        for layer in LAYERS:
            for label, mib in (("off", 0.0), ("on, 256 MiB", 256.0)):
                r = stlsim.run(trace=path, drive={"preset": "exos-x18z", "write_cache_mib": mib}, layer=layer)
                rep = r.report
                dc = rep["device"].get("drive_cache") or {}
                print(
                    f"| {Path(t).name} | {layer} | {label} | {rep['latency']['all']['mean_ms']:,.1f} | {rep['waf']:.2f} "
                    f"| {dc.get('flushes', 0):,} | {dc.get('reordered', 0):,} | {rep['device']['busy_s']:,.1f} |",
                    flush=True,
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="?", default="compare", choices=["compare", "chunk", "lambda", "drive-cache"])
    ap.add_argument("--trace", action="append", help="trace (a bundled name or a path); repeatable")
    ap.add_argument("--out", default=".", help="directory for the sweep plots")
    a = ap.parse_args()
    traces = a.trace or TRACES
    if a.what == "compare":
        print(HEAD)
        for t in traces:
            for layer in LAYERS:
                print(row(t, layer, run(t, layer)), flush=True)
    elif a.what == "drive-cache":
        drive_cache(traces)
    else:
        sweep(a.what, traces, Path(a.out))


if __name__ == "__main__":
    main()
