"""Sequential QD1 writes with the write cache off, on every drive preset.

The table of docs/drive-model.md ("What a sequential write costs on each
preset"): 4 KiB writes one after another (each issued when the previous one
completes, flat-out, queue depth 1), write cache off, so each write waits for
its sector to come round under the head after the command overhead. Every
preset should charge at least half a revolution; one that charges nothing is
streaming for free (the analytic model without overheads did).

    python scripts/drive_model_table.py
"""

from __future__ import annotations

import sys

import stlsim

TRACE = "synth:sequential,total_bytes=4MB,request_bytes=4096"

# Every preset with the layer its papers run on it (cmr where the drive is
# not host-managed, a zoned layer where it is: cmr is refused there).
RUNS: list[tuple[str, str]] = [
    ("hp-c3323a", "cmr"),
    ("hp-c3323a-1surface", "cmr"),
    ("hp-c2490a", "cmr"),
    ("atlas10k", "cmr"),
    ("barracuda", "cmr"),
    ("cheetah4lp", "cmr"),
    ("swd-paper", "cmr"),
    ("imr-paper", "cmr"),
    ("imr-paper", "imr-rmw"),
    ("cmr", "cmr"),
    ("dmsmr-5tb", "cmr"),
    ("dmsmr-5tb", "smr-eregion"),
    ("dmsmr-small", "smr-eregion"),
    ("exos-x18z", "hm-fluid"),
    ("exos-small", "hm-fluid"),
    ("hwsr-paper", "cmr"),
]


def measure(drive: str, layer: str) -> tuple[float, float, str]:
    """(mean latency ms, rotation ms, rotation model) of the run."""
    r = stlsim.run(trace=TRACE, drive=drive, layer=layer, mode="flat-out", queue_depth=1, write_cache=False)
    d = r.report["drive"]
    return r.summary["mean_ms"], d["rotation_ms"], d["rotation_model"]


def rows() -> list[tuple[str, str, str, float, float, float]]:
    """(preset, layer, rotation model, rotation ms, mean ms, revolutions)."""
    out = []
    for drive, layer in RUNS:
        mean, rot, model = measure(drive, layer)
        out.append((drive, layer, model, rot, mean, mean / rot))
    return out


def main() -> int:
    missing = sorted({d["name"] for d in stlsim.drives()} - {d for d, _ in RUNS})
    if missing:
        print(f"drive_model_table.py: presets not in the table: {', '.join(missing)}", file=sys.stderr)
        return 1
    print("| preset | layer | rotation model | one revolution (ms) | mean write (ms) | revolutions |")
    print("|---|---|---|---|---|---|")
    for drive, layer, model, rot, mean, revs in rows():
        print(f"| {drive} | {layer} | {model} | {rot:.3f} | {mean:.3f} | {revs:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
