"""Start-up: `import stlsim` and the plain `stlsim run` leave the heavy
libraries unimported (together they take several times as long to import as
a short run takes; README, Performance)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "numpy", "pyarrow", "matplotlib")

# Prints, as JSON on the last line of stderr, which of HEAVY the code before
# it imported; stdout is left to the code under test.
REPORT = f"""
import json, sys
sys.stderr.write(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))) + "\\n")
"""


def _heavy_imported(code: str) -> list[str]:
    p = subprocess.run([sys.executable, "-c", code + REPORT], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stderr.splitlines()[-1])


@pytest.mark.parametrize("code", ["import stlsim", "import stlsim.cli", "from stlsim import *"])
def test_importing_the_package_imports_no_heavy_library(code: str) -> None:
    assert _heavy_imported(code) == []


def test_plain_run_imports_no_heavy_library() -> None:
    run = "from stlsim.cli import main\nassert main(['run', '--limit', '1000']) == 0\n"
    assert _heavy_imported(run) == []
    assert _heavy_imported(run.replace("'1000'", "'1000', '--json'")) == []


def test_the_check_sees_a_heavy_import() -> None:
    # Without this, a check that could never fail would pass too.
    assert "pandas" in _heavy_imported("import stlsim\nimport pandas")
