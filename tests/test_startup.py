"""Start-up: `import stlsim` and the plain `stlsim run` leave the heavy
libraries unimported (together they take several times as long to import as
a short run takes; README, Performance), and so the modules of the other
commands and the standard library modules only they need (each costs a
millisecond or more: docs/architecture.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "numpy", "pyarrow", "matplotlib")

# Put before the code under test: the modules the interpreter had already
# imported at start-up, which are not that code's doing (a `.pth` file in
# site-packages may import some: CI's interpreter imports importlib.resources,
# tempfile and zipfile through certifi before any code runs).
BEFORE = "import sys as _sys\n_BEFORE = set(_sys.modules)\n"

# Appended to the code under test: prints, as JSON on the last line of
# stderr, which of the modules named in WATCHED (each by its full name) that
# code imported; stdout is left to the code under test.
WATCH = """
import json, sys
sys.stderr.write(json.dumps(sorted(m for m in WATCHED if m in sys.modules and m not in _BEFORE)) + "\\n")
"""


def _imported(code: str, watched: tuple[str, ...]) -> list[str]:
    report = f"WATCHED = {watched!r}" + WATCH
    p = subprocess.run(
        [sys.executable, "-c", BEFORE + code + "\n" + report], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stderr.splitlines()[-1])


def _heavy_imported(code: str) -> list[str]:
    # A package's submodule is never imported without the package itself.
    return _imported(code, HEAVY)


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


#: Modules `stlsim run` does without, with its summary tables or with
#: --json: the other commands' (and what only they import), the standard
#: library modules that only some functions need.
NOT_ON_RUN = (
    "stlsim.analysis",
    "stlsim.disksim",
    "stlsim.html_report",
    "stlsim.sweep",
    "stlsim.validation",
    "hashlib",
    "importlib.resources",
    "logging",
    "tempfile",
    "zipfile",
)
#: And those `stlsim run --json` does without too (the summary tables'
#: library, rich, imports them for itself).
NOT_ON_JSON_RUN = (*NOT_ON_RUN, "rich", "inspect", "decimal", "dataclasses", "copy")


def test_importing_the_package_imports_none_of_its_modules() -> None:
    # `import stlsim` binds its names when they are first used (PEP 562).
    code = "import sys, stlsim\nassert not [m for m in sys.modules if m.startswith('stlsim.')], sorted(sys.modules)"
    assert _imported(code, NOT_ON_JSON_RUN) == []
    assert _imported("import stlsim.cli", NOT_ON_JSON_RUN) == []


@pytest.mark.parametrize("json_out", [False, True])
def test_a_run_imports_only_what_it_uses(json_out: bool) -> None:
    args = "'run', '--limit', '1000'" + (", '--json'" if json_out else "")
    run = f"import stlsim\nfrom stlsim.cli import main\nassert main([{args}]) == 0\n"
    assert _imported(run, NOT_ON_JSON_RUN if json_out else NOT_ON_RUN) == []
    # The API's run takes its arguments' signature at its first call.
    api = "import stlsim\nstlsim.run(limit=1000)\n"
    assert _imported(api, NOT_ON_RUN) == []


def test_the_watch_sees_a_lazy_import() -> None:
    # Without this, a check that could never fail would pass too: the names
    # of the package import their modules when used.
    seen = _imported("import stlsim\nstlsim.sweep\nstlsim.Validation\nstlsim.analysis", NOT_ON_RUN)
    assert {"stlsim.sweep", "stlsim.validation", "stlsim.analysis", "hashlib", "logging"} <= set(seen)


def test_the_lazy_names_are_the_modules_objects() -> None:
    import stlsim

    for name in stlsim.__all__:
        value = getattr(stlsim, name)
        origin = sys.modules[f"stlsim.{stlsim._ORIGIN[name]}"]
        assert value is getattr(origin, name), name
    assert set(stlsim.__all__) <= set(dir(stlsim))
    assert stlsim.config is sys.modules["stlsim.config"]
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        stlsim.nope  # noqa: B018


def test_stlsim_sweep_stays_the_function() -> None:
    # Importing the submodule (the sweep command does) binds it on the
    # package under the function's name; the package keeps the function.
    code = (
        "import sys, stlsim.sweep, stlsim\n"
        "assert stlsim.sweep is sys.modules['stlsim.sweep'].sweep, stlsim.sweep\n"
        "from stlsim import sweep\nassert callable(sweep)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
