#!/bin/sh
# System packages the test suite uses beyond pip's: Debian's chromium, for the
# test that renders `stlsim report` pages headless. Installs it when it is
# missing and this is a Debian machine we may install on (root with apt-get);
# otherwise says that the browser test will be skipped, and why.
set -eu
for b in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$b" >/dev/null 2>&1; then exit 0; fi
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test-deps: installing Debian's chromium for the HTML report test" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
    echo "test-deps: no Chromium and no root apt-get here: the headless-browser test will be skipped (install chromium to run it)" >&2
fi
