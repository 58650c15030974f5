"""Validate stlsim's drive model against the five real drives of DiskSim
4.0's validation suite: replay each drive's validate trace on its imported
preset as DiskSim does (``stlsim validate``) and print the markdown table of
docs/validation.md (tests/test_docs.py checks the page holds exactly these
rows).

Usage: python scripts/disksim_validation.py [--json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import stlsim

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "disksim"

#: preset, trace, DiskSim's own demerit (valid/runvalid: "rms should be about ...").
DRIVES = [
    ("hp-c3323a", "hp_c3323a.trace", 0.306),
    ("hp-c2490a", "hp_c2490a.trace.gz", 0.254),
    ("atlas10k", "atlas10k.trace.gz", 0.268),
    ("barracuda", "barracuda.trace.gz", 0.349),
    ("cheetah4lp", "cheetah4LP.trace.gz", 0.318),
]


def main() -> None:
    """Print the table (or the figures as JSON)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ns = ap.parse_args()
    rows = []
    for drive, trace, theirs in DRIVES:
        v = stlsim.validate(drive, DATA / trace)
        rows.append({**v.summary, "trace": trace, "disksim_demerit_ms": theirs})
    if ns.json:
        print(json.dumps(rows, indent=2))
        return
    print("| drive | trace | requests | stlsim demerit (ms) | DiskSim demerit (ms) | mean simulated (ms) | mean measured (ms) | mean error (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['drive']} | {r['trace']} | {r['requests']:,} | {r['demerit_ms']:.3f} | {r['disksim_demerit_ms']:.3f} "
            f"| {r['mean_simulated_ms']:.3f} | {r['mean_measured_ms']:.3f} | {r['mean_error_ms']:+.3f} |"
        )
    print()
    print("| drive | reads | mean read error (ms) | writes | mean write error (ms) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['drive']} | {r['reads']:,} | {r['mean_read_error_ms']:+.3f} | {r['writes']:,} | {r['mean_write_error_ms']:+.3f} |")


if __name__ == "__main__":
    main()
