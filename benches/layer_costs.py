#!/usr/bin/env python3
"""Every registered layer's cost per request at several trace lengths.

Builds `run_long.py`'s trace (the CloudPhysics sample repeated, each copy
shifted in time and by 7 GiB in LBA) at each length, runs `stlsim run
--json` on it for every registered layer on its paper's drive, and prints
one table: CPU time per request, its ratio to `cmr`'s on `imr-paper`, and
the child's peak resident memory. The per-layer table in
docs/performance.md is this script's output.

The last columns divide the cost by the commands the drive served (reads
and writes, host and the layer's own: `device.read_ops + write_ops`), at
the longest length: a layer whose paper moves each block several times
costs more per request than cmr, but per command about what cmr costs.

CPU time is user + system of the child process (Python start-up, parsing
on the second thread and the simulation). Per request it is the marginal
cost: the CPU time of the same command stopped after 1,000 requests
(`--limit 1000`: start-up, the drive's and the layer's set-up; the median
of three such runs) is taken off, and shown as its own column, so a short
run's figure is not its start-up's.

The copies' LBA shift wraps at 56 GiB (`--wrap-gib`; run_long.py's own
default is 896): every length from 1 M requests on then touches the same
blocks over the same range, so a layer's structures sized by what the
trace touches (a buffer at 1 % of the range, a map of written blocks) are
the same size at every length, and what the table shows is the effect of
length alone. With 896 the footprint grows with the length (9 copies' at
1 M, 88 at 10 M, 128 from 15 M on), and with it such structures.

    python benches/layer_costs.py                           # 1 M, 10 M, 50 M requests
    python benches/layer_costs.py --requests 1000000        # one length
    python benches/layer_costs.py --layer amphisbaena --layer hm-fluid-loop
    python benches/layer_costs.py --markdown                # the table as docs/performance.md has it
    python benches/layer_costs.py --json costs.json         # the measurements, for later
    python benches/layer_costs.py --wrap-gib 896            # run_long.py's trace as it is

Every run replays flat out (`--mode flat-out`: requests back to back, so
that no idle time lets a layer's background work hide), offsets beyond a
small drive's capacity folded (`--fold`), verification off. The script exits
1 if a layer's run fails; it checks nothing else: the targets (flat cost per
request, bounded memory, within 10x cmr) are read off the table.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_long import REC  # noqa: E402

# The drive each layer family runs on in its paper's evaluation (the
# bundled preset of that paper); `cmr` runs on each of them as the baseline.
DRIVE_OF_LAYOUT = {"imr": "imr-paper", "smr": "swd-paper", "zoned": "exos-x18z", "wave": "hwsr-paper"}
DRIVE_OF_LAYER = {"smr-eregion": "dmsmr-5tb", "smr-vguard": "dmsmr-5tb", "cmr": "imr-paper", "buffered-cmr": "hwsr-paper"}
REFERENCE_DRIVE = "imr-paper"
# Host-managed drives refuse in-place writes, so cmr has no baseline there;
# their layers are compared with cmr on the reference drive only.
NO_CMR = {"exos-x18z"}
# Requests of the run whose CPU time counts as set-up, not per request.
FIXED_REQUESTS = 1000


def layer_drives() -> list[tuple[str, str]]:
    """(layer, drive) for every registered layer, in the registry's order."""
    # Asked of a child: importing stlsim here would grow this process, and
    # a child forked from it starts its peak memory from this one's.
    listing = subprocess.run([sys.executable, "-c", "import json, stlsim; print(json.dumps("
                              "[(l['name'], str(l['layout'])) for l in stlsim.layers()]))"],
                             check=True, capture_output=True, text=True).stdout
    out = []
    for name, layout in json.loads(listing):
        drive = DRIVE_OF_LAYER.get(name) or DRIVE_OF_LAYOUT.get(layout.split()[0])
        if drive is None:
            raise SystemExit(f"layer_costs.py: no drive chosen for layer {name!r} (layout {layout!r})")
        out.append((name, drive))
    return out


def measure(trace: Path, layer: str, drive: str, limit: int | None = None) -> dict[str, float]:
    """One `stlsim run`: requests, CPU seconds, wall seconds, peak RSS."""
    cmd = [sys.executable, "-m", "stlsim", "run", "--trace", str(trace), "--format", "vscsi", "--drive", drive,
           "--layer", layer, "--mode", "flat-out", "--fold", "--json"]
    if limit:
        cmd += ["--limit", str(limit)]
    t = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        # The run's own usage, from the wait that reaps it (RUSAGE_CHILDREN
        # would add every earlier child's).
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"layer_costs.py: {layer} on {drive} failed: {err.read().strip()[-500:]}")
        out.seek(0)
        report = json.load(out)
    return {
        "requests": report["host"]["requests"],
        "device_ops": report["device"]["read_ops"] + report["device"]["write_ops"],
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": wall,
        "peak_rss_mib": usage.ru_maxrss / 1024,
    }


def table(rows: list[dict], lengths: list[int], markdown: bool) -> str:
    """The measurements as one row per layer, one column group per length."""
    def key(r: dict) -> tuple[int, str, str]:
        return (r["requests_asked"], r["layer"], r["drive"])

    by = {key(r): r for r in rows}
    cmr = {(r["requests_asked"], r["drive"]): r for r in rows if r["layer"] == "cmr"}

    def ns(r: dict) -> float:
        return (r["cpu_s"] - r["fixed_cpu_s"]) / (r["requests"] - r["fixed_requests"]) * 1e9

    def ops(r: dict) -> float:
        return r["device_ops"] / r["requests"]

    head = ["layer", "drive", "set-up ms"]
    for n in lengths:
        m = f"{n / 1e6:g} M"
        head += [f"{m} ns/req", f"{m} x cmr", f"{m} MiB"]
    if len(lengths) > 1:
        head += ["ns/req spread", f"MiB {lengths[-1] / 1e6:g} M / {lengths[0] / 1e6:g} M"]
    head += ["ops/req", "ns/op", "x cmr per op"]
    body = []
    seen = []
    for r in rows:
        if (r["layer"], r["drive"]) not in seen:
            seen.append((r["layer"], r["drive"]))
    for layer, drive in seen:
        first = next(r for r in rows if (r["layer"], r["drive"]) == (layer, drive))
        cells = [layer, drive, f"{first['fixed_cpu_s'] * 1e3:,.0f}"]
        per = []
        for n in lengths:
            r = by.get((n, layer, drive))
            if r is None:
                cells += ["", "", ""]
                continue
            ref = cmr.get((n, REFERENCE_DRIVE))
            per.append(r)
            cells += [
                f"{ns(r):,.0f}",
                f"{ns(r) / ns(ref):.2f}" if ref else "",
                f"{r['peak_rss_mib']:,.0f}",
            ]
        if len(lengths) > 1:
            if len(per) == len(lengths):
                costs = [ns(r) for r in per]
                cells += [f"{max(costs) / min(costs) - 1:.0%}", f"{per[-1]['peak_rss_mib'] / per[0]['peak_rss_mib']:.2f}"]
            else:
                cells += ["", ""]
        # Per drive command (read or write the drive serves), at the longest length.
        last = per[-1] if per else None
        ref = cmr.get((last["requests_asked"], REFERENCE_DRIVE)) if last else None
        if last and ref:
            per_op = ns(last) / ops(last)
            cells += [f"{ops(last):.2f}", f"{per_op:,.0f}", f"{per_op / (ns(ref) / ops(ref)):.2f}"]
        else:
            cells += ["", "", ""]
        body.append(cells)
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i < 2 else "--:" for i in range(len(head))) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(c[i]) for c in body)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" if i < 2 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return "\n".join([fmt.format(*head)] + [fmt.format(*c) for c in body])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, action="append", help="trace length (repeatable; default 1 M, 10 M, 50 M)")
    ap.add_argument("--layer", action="append", help="only this layer (repeatable; cmr always runs as the baseline)")
    ap.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    ap.add_argument("--json", type=Path, help="also write the measurements to this file")
    ap.add_argument("--traces", type=Path, help="keep the built traces in this directory (reused when present)")
    ap.add_argument("--wrap-gib", type=int, default=56, help="the copies' LBA shift wraps here (default 56; see above)")
    args = ap.parse_args()
    lengths = sorted(args.requests or [1_000_000, 10_000_000, 50_000_000])
    pairs = layer_drives()
    if args.layer:
        unknown = set(args.layer) - {layer for layer, _ in pairs}
        if unknown:
            raise SystemExit(f"layer_costs.py: unknown layer(s) {', '.join(sorted(unknown))}")
        chosen = [(layer, drive) for layer, drive in pairs if layer in args.layer]
        drives = {REFERENCE_DRIVE} | {drive for _, drive in chosen}
    else:
        chosen = pairs
        drives = {drive for _, drive in pairs}
    pairs = [("cmr", drive) for drive in sorted(drives - NO_CMR)] + [p for p in chosen if p[0] != "cmr"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.traces or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        fixed: dict[tuple[str, str], dict[str, float]] = {}
        for n in lengths:
            trace = folder / f"long-{n}-wrap{args.wrap_gib}.vscsi"
            if not trace.exists() or trace.stat().st_size != n * REC.size:
                # In a child, for the reason layer_drives gives.
                subprocess.run([sys.executable, str(HERE / "run_long.py"), "--build-trace", str(trace), str(n),
                                str(args.wrap_gib)], check=True)
            for layer, drive in pairs:
                if (layer, drive) not in fixed:
                    # The median of three: start-up's CPU time varies by tens of ms.
                    runs = sorted((measure(trace, layer, drive, limit=FIXED_REQUESTS) for _ in range(3)),
                                  key=lambda m: m["cpu_s"])
                    fixed[layer, drive] = runs[1]
                r = measure(trace, layer, drive)
                f = fixed[layer, drive]
                r.update(layer=layer, drive=drive, requests_asked=n, wrap_gib=args.wrap_gib,
                         fixed_cpu_s=f["cpu_s"], fixed_requests=f["requests"])
                rows.append(r)
                marginal = (r["cpu_s"] - f["cpu_s"]) / (r["requests"] - f["requests"]) * 1e9
                print(f"{n:>11,}  {layer:<14} {drive:<11} {marginal:9,.0f} ns/req"
                      f"  {r['peak_rss_mib']:7,.0f} MiB", file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(table(rows, lengths, args.markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
