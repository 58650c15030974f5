#!/bin/sh
# System packages the test suite uses beyond pip's, from Debian: chromium
# (the test that renders `stlsim report` pages headless), and the NBD
# clients that drive `stlsim serve` (fio, built with libnbd; libnbd-bin's
# nbdcopy; qemu-utils' qemu-io, qemu-img). Installs what is missing when
# this is a Debian machine we may install on (root with apt-get); otherwise
# says what is missing: the browser test is then skipped, and the NBD client
# tests fail naming the tool.
set -eu
missing=""
have_browser=""
for b in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$b" >/dev/null 2>&1; then have_browser=1; fi
done
[ -n "$have_browser" ] || missing="$missing chromium"
command -v fio >/dev/null 2>&1 || missing="$missing fio"
command -v nbdcopy >/dev/null 2>&1 || missing="$missing libnbd-bin"
command -v qemu-io >/dev/null 2>&1 || missing="$missing qemu-utils"
[ -n "$missing" ] || exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test-deps: installing Debian's$missing for the tests" >&2
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
    echo "test-deps: missing$missing and no root apt-get here: install them (Debian package names) to run every test" >&2
fi
