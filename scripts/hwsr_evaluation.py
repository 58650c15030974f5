"""Paper 001's evaluation (Wan et al., HWSR) on the bundled traces, each one command:

    python scripts/hwsr_evaluation.py compare      [--trace T ...] [--out DIR]
    python scripts/hwsr_evaluation.py block-size   [--trace T ...] [--out DIR]
    python scripts/hwsr_evaluation.py region-size  [--trace T ...] [--out DIR]
    python scripts/hwsr_evaluation.py drive-cache  [--trace T ...]
    python scripts/hwsr_evaluation.py claims       [--trace T ...]

Every run: drive hwsr-paper (WD RE4-like disk, 100 MB battery-backed memory
buffer, 200 MB X25-M SSD), trace LBAs unmodified, each layer's defaults
(64-sector blocks, 20-track regions, least-write-amplification LRU), the
trace replayed one request at a time with its own timing (queue mode, depth
1, as the paper's prototype replays it), series every 10,000 requests.

compare: buffered-cmr, sblock and hwsr side by side (Figures 9 and 10):
average read / write / overall response time, and per 10,000 requests the
*sum* of the response times (the paper's "about 90 % ... less than 5
seconds" reads as a sum: a mean of 5 s per request is impossible on a disk),
the mean, segments rewritten (HWSR) or immigrated (S-block), disk operations
per host request, and the disk's busy time against the trace's span (busy
time above the span is work no cache can hide: the disk would fall behind
the trace whatever the order of its commands). Saves
per_10k.png (the sums per 10,000 requests, a shorter last bucket scaled to
10,000 and dashed; the CDF of the full buckets' sums; segments per 10,000
requests) and per_10k.csv into --out (default: the current folder).

drive-cache: the three layers with the drive's own write cache off, on
(the layers flushing before they drop a buffered copy), and on with no
flush at all (drive_flush=never, as a prototype trusting the drive would).

block-size: block_sectors 16, 32, 64 for sblock and hwsr (Figure 11);
region-size: region_tracks 10, 20, 40 (Figure 12). Each prints a table of
average read, write and overall response time and saves a plot.

claims: section IV's claims, each with the paper's value, ours (from the
runs of compare, block-size and region-size), a verdict and the reason
where it falls short.

Default traces: the bundled CloudPhysics sample and MSR rsrch_1.
--repeat N replays each trace N times back to back, each copy shifted in
time: the bundled traces are too short for S-block's logs to run out of
spare S-blocks (see docs/hwsr.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

import stlsim
from claims_table import Claims
from stlsim.plots import _save

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
TRACES = ["cloudPhysicsIO.vscsi", "rsrch_1.csv"]
LAYERS = ["buffered-cmr", "sblock", "hwsr"]
COLOURS = {"buffered-cmr": "tab:blue", "sblock": "tab:orange", "hwsr": "tab:green"}
EVERY = 10_000


REPEAT = 1


def run(trace: str, layer: str, params: dict | None = None, write_cache: bool | None = None) -> stlsim.Result:
    path = trace if "/" in trace else str(DATA / trace)
    return stlsim.run(
        trace=path,
        drive="hwsr-paper",
        layer=layer,
        params=params or {},
        queue_depth=1,
        series_every=EVERY,
        repeat=REPEAT,
        write_cache=write_cache,
    )


def drive_cache(traces: list[str]) -> None:
    """The drive's own write cache beneath the layers: off, on with the
    layers flushing before they drop a buffered copy (the default, crash
    safe), and on with no flush at all (`drive_flush=never`: a prototype
    that trusts the drive's acknowledgement; loses data at power loss)."""
    rows = []
    for t in traces:
        for layer in LAYERS:
            for label, wc, params in (
                ("off", False, {}),
                ("on, safe", True, {}),
                ("on, never flushed", True, {"drive_flush": "never"}),
            ):
                r = run(t, layer, params, write_cache=wc)
                dc = r.report["device"].get("drive_cache") or {}
                rows.append(
                    {
                        "trace": Path(t).name,
                        "layer": layer,
                        "drive cache": label,
                        **averages(r),
                        "flushes": dc.get("flushes", 0),
                        "reordered": dc.get("reordered", 0),
                        "disk busy s": r.report["device"]["busy_s"],
                    }
                )
    print(markdown(pd.DataFrame(rows)))


def per_10k(r: stlsim.Result) -> pd.DataFrame:
    """Per-10,000-request rows: requests in the bucket, sum (s) and mean (ms) of response times, segments moved."""
    s = r.series()
    n = s["requests"].diff().fillna(s["requests"]).astype(int)
    out = pd.DataFrame({"requests": s["requests"], "in_bucket": n})
    # A bucket without requests has no mean: its sum stays NaN (a gap), not 0.
    out["sum_s"] = (s["mean_latency_ms"] * n / 1000.0).where(n > 0)
    out["mean_ms"] = s["mean_latency_ms"]
    for col in ("segments_rewritten", "segments_immigrated"):
        if col in s.columns:
            # Cumulative per incarnation of the layer; a crash-free run's differences are per bucket.
            out["segments"] = s[col].diff().fillna(s[col])
    if "segments" not in out.columns:
        out["segments"] = 0.0
    return out


def markdown(table: pd.DataFrame) -> str:
    """A markdown table: integers with thousands separators, other numbers to 3 decimals."""

    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:,.0f}" if v.is_integer() and abs(v) >= 100 else f"{v:,.3f}"
        if isinstance(v, (int, np.integer)):
            return f"{v:,}"
        return str(v)

    head = "| " + " | ".join(table.columns) + " |\n|" + "---|" * len(table.columns)
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join([head, *rows])


def averages(r: stlsim.Result) -> dict:
    lat = r.report["latency"]
    return {"read_ms": lat["read"]["mean_ms"], "write_ms": lat["write"]["mean_ms"], "all_ms": lat["all"]["mean_ms"]}


def span_s(trace: str) -> float:
    """The trace's span in seconds (its replay here: REPEAT copies back to back)."""
    return stlsim.trace_info(trace if "/" in trace else str(DATA / trace))["duration_s"] * REPEAT


def _per_full_bucket(d: pd.DataFrame, col: str) -> np.ndarray:
    """`col` per bucket, a shorter last bucket's count scaled to a full
    EVERY requests (a sum over fewer requests would read as a faster
    stretch); NaN where a bucket holds no requests."""
    n = d["in_bucket"].to_numpy(dtype="float64")
    v = d[col].to_numpy(dtype="float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, v * EVERY / n, np.nan)


def per_10k_figure(data: pd.DataFrame, traces: list[str]) -> Figure:
    """Per trace (a row): the sum of response times per 10,000 requests and
    the segments moved per 10,000 requests as stairs over the requests
    replayed (a shorter last bucket scaled to 10,000, dashed over a hatched
    band), and the CDF of the full buckets' sums. `data`: per_10k()'s rows
    with `trace` and `layer` columns; `traces`: the trace names, in order."""
    from stlsim import plots

    from matplotlib.lines import Line2D

    fig = plots._figure(14.0, 3.4 * len(traces) + 1.4)
    axes = fig.subplots(len(traces), 3, squeeze=False)
    notes: dict[str, None] = {}
    highest = {}
    for row, name in zip(axes, traces):
        sums, cdf, segs = row
        full_counts = []
        spans = set()
        for layer in LAYERS:
            d = data[(data["trace"] == name) & (data["layer"] == layer)].sort_values("requests")
            if d.empty:
                continue
            edges = np.concatenate(([0.0], d["requests"].to_numpy(dtype="float64")))
            partial = int(d["in_bucket"].iloc[-1]) < EVERY
            style = {"color": COLOURS[layer], "lw": 1.6}
            for ax, col in ((sums, "sum_s"), (segs, "segments")):
                if ax is segs and layer == "buffered-cmr":
                    continue
                values = _per_full_bucket(d, col)
                plots._stairs_with_partial(ax, values, edges, partial, **style)
                highest[ax] = np.nanmax([highest.get(ax, 0.0), *values], initial=0.0)
            if partial:
                last = int(d["in_bucket"].iloc[-1])
                spans.add((edges[-2], edges[-1]))
                notes[f"{name}: last bucket {last:,} requests, scaled to {EVERY:,} (dashed)"] = None
            if d["sum_s"].isna().any():
                notes[f"{name}: buckets without requests left blank"] = None
            full = np.sort(d.loc[d["in_bucket"] == EVERY, "sum_s"].dropna().to_numpy())
            full_counts.append(len(full))
            if len(full):
                # From 0 at the least sum up to 1 at the largest: a single bucket is one full step.
                xs = np.concatenate(([full[0]], full))
                ys = np.concatenate(([0.0], np.arange(1, len(full) + 1) / len(full)))
                cdf.step(xs, ys, where="post", color=COLOURS[layer])
        for x0, x1 in spans:
            for ax in (sums, segs):
                plots._partial_span(ax, x0, x1, None)
        if not any(full_counts):
            cdf.text(0.5, 0.5, f"no full bucket of {EVERY:,} requests", ha="center", va="center", transform=cdf.transAxes)
        else:
            cdf.set_ylim(0.0, 1.0)
            n = max(full_counts)
            cdf.set_title(f"{plots._short(name, 24)}: CDF over {n} full bucket{'s' if n > 1 else ''}", fontsize=10)
        sums.set_title(f"{plots._short(name, 24)}: response-time sum", fontsize=10)
        segs.set_title(f"{plots._short(name, 24)}: segments moved", fontsize=10)
        sums.set(xlabel="requests replayed", ylabel=f"sum of response times\nper {EVERY:,} requests (s)")
        cdf.set(xlabel=f"sum of response times per {EVERY:,} requests (s)", ylabel="fraction of full buckets")
        segs.set(xlabel="requests replayed", ylabel=f"segments rewritten (HWSR) or\nimmigrated (S-block) per {EVERY:,}")
        for ax in row:
            ax.grid(alpha=0.3)
        for ax in (sums, segs):
            ax.set_xlim(left=0)
            # Room above the highest step: a line on the frame is hard to see.
            ax.set_ylim(0, 1.08 * highest.get(ax, 0.0) or 1.0)
            ax.xaxis.set_major_formatter("{x:,.0f}")
    # Solid proxies: a trace with only a shorter bucket draws its layers dashed.
    handles = [Line2D([], [], color=COLOURS[layer], lw=1.6) for layer in LAYERS]
    plots._fitted_legend(fig, handles + [plots._note_handle() for _ in notes], LAYERS + list(notes))
    plots._titled(
        fig,
        f"Response time per {EVERY:,} requests (paper 001 Figures 9 and 10)",
        plots.context_line(traces, ["hwsr-paper"], LAYERS, "queue (depth 1)"),
    )
    return fig


def compare(traces: list[str], out: Path) -> pd.DataFrame:
    rows, frames = [], []
    for t in traces:
        for layer in LAYERS:
            r = run(t, layer)
            p = per_10k(r)
            p.insert(0, "layer", layer)
            p.insert(0, "trace", Path(t).name)
            frames.append(p)
            c = r.report["layer_counters"]
            full = p[p["in_bucket"] == EVERY]
            rows.append(
                {
                    "trace": Path(t).name,
                    "layer": layer,
                    **averages(r),
                    "p90 sum per 10k (s)": float(np.percentile(p["sum_s"], 90)),
                    "segments per 10k": float(full["segments"].mean()) if len(full) else float(p["segments"].sum()),
                    "segments": c.get("segments_rewritten", c.get("segments_immigrated", 0.0)),
                    "evictions": c["evictions"],
                    "WAF": r.report["waf"],
                    "disk ops": r.report["device"]["read_ops"] + r.report["device"]["write_ops"],
                    "disk ops per request": (r.report["device"]["read_ops"] + r.report["device"]["write_ops"])
                    / max(r.report["host"]["requests"], 1),
                    "disk busy s": r.report["device"]["busy_s"],
                    "busy / span": r.report["device"]["busy_s"] / max(span_s(t), 1e-9),
                }
            )
    table = pd.DataFrame(rows)
    print(markdown(table))
    over = table[table["busy / span"] > 1]
    if len(over):
        print(
            "\nBusy longer than the trace's span (no cache can hide it): "
            + ", ".join(f"{r['trace']} {r['layer']} ({r['busy / span']:.2f}x)" for _, r in over.iterrows())
        )
    data = pd.concat(frames, ignore_index=True)
    out.mkdir(parents=True, exist_ok=True)
    data.to_csv(out / "per_10k.csv", index=False)
    _save(per_10k_figure(data, [Path(t).name for t in traces]), out / "per_10k.png")
    print(f"saved {out / 'per_10k.png'} and {out / 'per_10k.csv'}")
    table.attrs["per_10k"] = data
    return table


# What a sweep's parameter is, with its unit, on a plot's axis.
SWEPT = {"block_sectors": ("block size", "sectors"), "region_tracks": ("region size", "tracks")}


def sweep_figure(table: pd.DataFrame, traces: list[str], param: str) -> Figure:
    """Average read, write and overall response time of sblock (dashed) and
    hwsr (solid) against `param`, a panel per trace (log y). `table`:
    sweep()'s rows; `traces`: the trace names, in order."""
    from stlsim import plots

    what, unit = SWEPT.get(param, (param, ""))
    fig = plots._figure(max(7.0, 5.5 * len(traces)), 4.8)
    axes = fig.subplots(1, len(traces), squeeze=False)[0]
    for ax, name in zip(axes, traces):
        d = table[table["trace"] == name]
        for layer, style in (("sblock", "--"), ("hwsr", "-")):
            e = d[d["layer"] == layer].sort_values(param)
            for col, mk, which, colour in (("all_ms", "o", "all", "C0"), ("read_ms", "^", "reads", "C1"), ("write_ms", "s", "writes", "C2")):
                ax.plot(e[param], e[col], style, marker=mk, color=colour, label=f"{layer}, {which}")
        ax.set_yscale("log")
        plots._plain_log(ax)
        values = sorted(d[param].unique())
        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.set(title=plots._short(name, 40), xlabel=f"{what} ({unit})" if unit else what, ylabel="average response time (ms, log scale)")
        ax.grid(alpha=0.3, which="both")
    plots._legend_below(fig, axes[0])
    figure = "Figure 11" if param == "block_sectors" else "Figure 12"
    plots._titled(
        fig,
        f"Response time by {what} (paper 001 {figure})",
        plots.context_line(traces, ["hwsr-paper"], ["sblock", "hwsr"], "queue (depth 1)"),
    )
    return fig


def sweep(traces: list[str], out: Path, param: str, values: list[int], fname: str) -> pd.DataFrame:
    rows = []
    for t in traces:
        for layer in ("sblock", "hwsr"):
            for v in values:
                r = run(t, layer, {param: v})
                rows.append({"trace": Path(t).name, "layer": layer, param: v, **averages(r)})
    table = pd.DataFrame(rows)
    print(markdown(table))
    out.mkdir(parents=True, exist_ok=True)
    _save(sweep_figure(table, [Path(t).name for t in traces], param), out / fname)
    print(f"saved {out / fname}")
    return table


def claims(traces: list[str], out: Path) -> None:
    """Section IV's claims, from the runs of compare, block-size and region-size."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        cmp = compare(traces, out)
        blocks = sweep(traces, out, "block_sectors", [16, 32, 64], "block_size_sweep.png")
        regions = sweep(traces, out, "region_tracks", [10, 20, 40], "region_size_sweep.png")
    per = cmp.attrs["per_10k"]
    table = Claims()
    claim = table.add

    def mean(t: str, layer: str, col: str = "all_ms") -> float:
        return float(cmp[(cmp["trace"] == Path(t).name) & (cmp["layer"] == layer)][col].iloc[0])

    names = [Path(t).name for t in traces]
    mechanics = "each of a segment rewrite's blocks is a separately positioned operation on another track (see below)"
    ratio = {n: mean(n, "hwsr") / mean(n, "buffered-cmr") for n in names}
    claim(
        "HWSR almost reaches the traditional disk's response time (Figures 9-10)",
        "close",
        ", ".join(f"{n}: {r:.1f}x" for n, r in ratio.items()),
        all(r < 1.3 for r in ratio.values()),
        all(r < 2 for r in ratio.values()),
        mechanics,
    )
    vs = {n: mean(n, "sblock") / mean(n, "hwsr") for n in names}
    claim(
        "HWSR far faster than S-block (Figures 9-10)",
        "S-block several times slower",
        ", ".join(f"{n}: S-block/HWSR {r:.2f}" for n, r in vs.items()),
        all(r > 2 for r in vs.values()),
        all(r > 1 for r in vs.values()),
        mechanics + "; and S-block's logs hardly collect on traces this short",
    )
    p90 = {}
    for n in names:
        for layer in ("hwsr", "sblock"):
            d = per[(per["trace"] == n) & (per["layer"] == layer) & (per["in_bucket"] == EVERY)]
            p90[(n, layer)] = float(np.percentile(d["sum_s"], 90)) if len(d) else float("nan")
    claim(
        "90 % of the per-10,000 sums: HWSR under 5 s, S-block about 27 s (Figure 9(c))",
        "HWSR < 5 s, S-block ~27 s",
        ", ".join(f"{n}: HWSR {p90[(n, 'hwsr')]:.1f} s, S-block {p90[(n, 'sblock')]:.1f} s" for n in names),
        all(p90[(n, "hwsr")] < 5 and p90[(n, "hwsr")] < p90[(n, "sblock")] for n in names),
        all(p90[(n, "hwsr")] < p90[(n, "sblock")] for n in names),
        mechanics,
    )
    segs = {n: float(cmp[(cmp["trace"] == n) & (cmp["layer"] == "hwsr")]["segments per 10k"].iloc[0]) for n in names}
    claim(
        "about one segment rewritten per 10,000 requests (Figure 9(b))",
        "about 1",
        ", ".join(f"{n}: {v:,.0f}" for n, v in segs.items()),
        all(v < 10 for v in segs.values()),
        False,
        "the memory buffer evicts a block of these traces' scattered writes every few requests, and each eviction rewrites its segment's tail",
    )

    def trend(table: pd.DataFrame, param: str, layer: str, n: str) -> tuple[float, float]:
        d = table[(table["trace"] == n) & (table["layer"] == layer)].sort_values(param)
        return float(d["all_ms"].iloc[0]), float(d["all_ms"].iloc[-1])

    better = {(n, lay): trend(blocks, "block_sectors", lay, n) for n in names for lay in ("hwsr", "sblock")}
    claim(
        "larger blocks make both faster (Figure 11(a), Financial1: HWSR 0.8 -> 0.3 ms, S-block 5.7 -> 1.8 ms)",
        "16 -> 64 sectors: faster",
        ", ".join(f"{n} {lay}: {a:.2f} -> {b:.2f} ms" for (n, lay), (a, b) in better.items()),
        all(b < a for a, b in better.values()),
        any(b < a for a, b in better.values()),
        "on rsrch_1 S-block's time barely moves: its logs do not collect",
    )
    reads = {n: mean(n, "hwsr", "read_ms") - mean(n, "sblock", "read_ms") for n in names}
    claim(
        "HWSR's reads about 0.1 ms slower than S-block's (Figure 11)",
        "+0.1 ms",
        ", ".join(f"{n}: {v:+.2f} ms" for n, v in reads.items()),
        all(0 <= v <= 0.5 for v in reads.values()),
        any(v > 0 for v in reads.values()),
        "reads depend on the SSD cache's hits and where each layer left the blocks",
    )
    reg = {(n, lay): trend(regions, "region_tracks", lay, n) for n in names for lay in ("hwsr", "sblock")}
    claim(
        "larger regions: HWSR slower, S-block faster (Figure 12)",
        "HWSR up, S-block down",
        ", ".join(f"{n} {lay}: {a:.2f} -> {b:.2f} ms" for (n, lay), (a, b) in reg.items()),
        all((b > a) == (lay == "hwsr") for (n, lay), (a, b) in reg.items()),
        any((b > a) == (lay == "hwsr") for (n, lay), (a, b) in reg.items()),
        "on rsrch_1 S-block does not collect, so region size hardly matters to it",
    )
    busy = cmp[cmp["busy / span"] > 1]
    table.print("claim")
    if len(busy):
        print("\nBusy longer than the trace's span: " + ", ".join(f"{r.trace} {r.layer}" for r in busy.itertuples()))
    else:
        print("\nNo layer's disk is busy for longer than the trace's span: a cache could in principle hide all of it.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("compare", "block-size", "region-size", "drive-cache", "claims"))
    ap.add_argument("--trace", action="append", help="trace file (repeatable; default: the bundled two)")
    ap.add_argument("--out", default=".", help="folder for the plots and tables (default: .)")
    ap.add_argument("--repeat", type=int, default=1, help="replay each trace N times back to back (steady state)")
    a = ap.parse_args()
    global REPEAT
    REPEAT = a.repeat
    traces = a.trace or TRACES
    out = Path(a.out)
    if a.what == "compare":
        compare(traces, out)
    elif a.what == "drive-cache":
        drive_cache(traces)
    elif a.what == "claims":
        claims(traces, out)
    elif a.what == "block-size":
        sweep(traces, out, "block_sectors", [16, 32, 64], "block_size_sweep.png")
    else:
        sweep(traces, out, "region_tracks", [10, 20, 40], "region_size_sweep.png")


if __name__ == "__main__":
    main()
