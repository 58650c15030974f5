"""Track skews of the paper presets, derived from their mechanics.

The paper presets (imr-paper, cmr, dmsmr-*, exos-*, hwsr-paper) simulate one
sequence of tracks under one head, so every move to the next track is a
one-cylinder seek (plus the write settle for a write), and only
`cylinder_skew_sectors` is used. A drive's formatter chooses the skew so that
a transfer running off the end of one track lands on the next just after
the switch, instead of a revolution later. No data sheet publishes it, so it
is derived the way the validated drives show it is chosen:

    skew time = MARGIN x (one-cylinder seek + write settle)
    skew      = ceil(skew time / rotation x sectors per track)

with MARGIN = 1.2, the ratio of the newest validated drives' cylinder skew
to their one-cylinder write move (Seagate Barracuda ST32171W, 1997: 52 of
186 sectors at 7,200 RPM = 2.330 ms over a 1.943 ms move, 1.20; Quantum
Atlas 10K, 1999: 113 of 334 at 10,025 RPM = 2.025 ms over 1.245 + 0.487 ms,
1.17). The older HP drives leave more (2.5x) and the Cheetah 4LP 1.8x.

    python scripts/preset_skews.py          # the derivation, a row a zone
    python scripts/preset_skews.py --check  # exit 1 if a preset's skew differs
"""

from __future__ import annotations

import argparse
import math
import sys

import stlsim

MARGIN = 1.2
PRESETS = ("imr-paper", "cmr", "dmsmr-5tb", "dmsmr-small", "exos-x18z", "exos-small", "hwsr-paper")


def one_cylinder_ms(drive: dict) -> float:
    """The preset's one-cylinder seek: the sqrt curve's `min_ms`, or a table's
    time at distance 1."""
    seek = drive["seek"]
    if seek["model"] == "sqrt":
        return float(seek["min_ms"])
    table = seek["table"]
    return float(table[0][1])


def derived_skew(drive: dict, sectors: int) -> int:
    """The cylinder skew, in sectors of a track of `sectors`, that the rule
    above gives on `drive`."""
    move = one_cylinder_ms(drive) + max(0.0, float(drive.get("write_settle_ms", 0.0)))
    rotation_ms = 60_000.0 / float(drive["rpm"])
    return math.ceil(MARGIN * move / rotation_ms * sectors - 1e-9)


def rows() -> list[tuple[str, int, int, int, int]]:
    """(preset, zone's first track, sectors a track, derived skew, preset's skew)."""
    out = []
    for name in PRESETS:
        d = stlsim.load_drive(name)
        zones = d.get("zones") or []
        if not zones:
            out.append((name, 0, 0, -1, -1))
            continue
        for z in zones:
            spt = int(z["sectors_per_track"])
            out.append((name, int(z["first_track"]), spt, derived_skew(d, spt), int(z.get("cylinder_skew_sectors", 0))))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a preset's skew differs from the derivation")
    args = ap.parse_args()
    bad = []
    print("| preset | first track | sectors/track | derived skew | preset's skew |")
    print("|---|---|---|---|---|")
    for name, first, spt, want, have in rows():
        if want < 0:
            bad.append(f"{name}: no [[zones]] table to hold its skew")
            continue
        print(f"| {name} | {first} | {spt} | {want} | {have} |")
        if want != have:
            bad.append(f"{name}: zone at track {first}: cylinder_skew_sectors = {have}, derivation gives {want}")
    for b in bad:
        print(b, file=sys.stderr)
    return 1 if (bad and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
