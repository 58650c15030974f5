#!/bin/bash
# The README's two commands from a fresh clone of this repository (its
# committed state): the time and disk of each step, for the README and notes.
# Usage: bash benches/test_command.sh [DIR]   (default /tmp/stlsim-fresh)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd); D=${1:-/tmp/stlsim-fresh}; V=$D-venv
rm -rf "$D" "$V"; git clone -q "$SRC" "$D"; cd "$D"
python -m venv $V; . $V/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1
du_now() { echo "du: clone $(du -sm $D | cut -f1) MiB, venv $(du -sm $V | cut -f1) MiB, pip cache $(du -sm ~/.cache/pip 2>/dev/null | cut -f1) MiB"; }
step() { local name=$1; shift; local t=$(date +%s); "$@" > $D-log-$name.log 2>&1; local rc=$?; echo "$name: $(( $(date +%s)-t )) s rc=$rc"; du_now; }
du_now
step install pip install .
step run stlsim run
T0=$(date +%s)
step deps sh scripts/test-deps.sh
step piptest pip install '.[test]'
step clippy cargo clippy --release --all-targets -p stlsim-core -p stlsim-py -- -D warnings
step cargo cargo test --release -p stlsim-core
step pytest python -m pytest -q -rs -n auto
echo "test command total: $(( $(date +%s)-T0 )) s"
tail -3 $D-log-pytest.log
