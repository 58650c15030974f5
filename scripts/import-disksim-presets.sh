#!/bin/sh
# Regenerate the drive presets imported from DiskSim 4.0's validation suite
# (tests/data/disksim/, provenance in tests/data/README.md) with
# `stlsim import-disksim`. tests/test_disksim_import.py checks that the
# shipped presets are exactly what this writes. Run from anywhere, with
# stlsim installed (pip install .).
set -eu
cd "$(dirname "$0")/.."
D=tests/data/disksim
for pair in hp_c3323a:hp-c3323a hp_c2490a:hp-c2490a atlas10k:atlas10k barracuda:barracuda cheetah4LP:cheetah4lp; do
    src=${pair%%:*}
    name=${pair#*:}
    # The values stlsim cannot express yet are listed in each file's header too.
    stlsim import-disksim "$D/$src.parv" --name "$name" -o "python/stlsim/drives/$name.toml" --force 2>/dev/null
    echo "wrote python/stlsim/drives/$name.toml"
done
