#!/bin/sh
# Fuzz every trace reader with 100,000 mutated inputs each (the default test
# run feeds 500): crates/stlsim-core/tests/fuzz_readers.rs in release mode.
# Each input is read with its format named and again with the format left to
# detection; a panic, a hang, a read over 64 MiB or an error that is not one
# line naming the file (and the line or record) fails the run, and the
# failing inputs are written under target/tmp/fuzz-readers/.
#
#   scripts/fuzz-readers.sh                      # 100,000 per reader
#   STLSIM_FUZZ_CASES=1000000 scripts/fuzz-readers.sh
#   scripts/fuzz-readers.sh blkparse             # one reader (a test name filter)
#   STLSIM_FUZZ_ONLY=spc:234 scripts/fuzz-readers.sh spc   # one case again
set -eu
cd "$(dirname "$0")/.."
STLSIM_FUZZ_CASES="${STLSIM_FUZZ_CASES:-100000}"
export STLSIM_FUZZ_CASES
echo "fuzz-readers: $STLSIM_FUZZ_CASES mutated inputs per reader (release build)" >&2
start=$(date +%s)
cargo test --release -p stlsim-core --test fuzz_readers -- --nocapture "$@"
echo "fuzz-readers: done in $(( $(date +%s) - start )) s" >&2
