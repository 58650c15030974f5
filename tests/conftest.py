"""Shared fixtures of the Python test suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

import stlsim

# No example database in the repository; deterministic enough for CI.
settings.register_profile("stlsim", database=None, deadline=None, max_examples=60)
settings.load_profile("stlsim")

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def data() -> Path:
    """The folder of checked-in test traces (read-only)."""
    return DATA


@pytest.fixture(scope="session")
def bundled() -> stlsim.Result:
    """cmr on imr-paper over the whole bundled trace, queue mode (the `stlsim run` default)."""
    return stlsim.run()


def _run_cli(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `python -m stlsim ARGS` and capture its output."""
    env = dict(os.environ, COLUMNS="200", PYTHONWARNINGS="error")
    return subprocess.run(
        [sys.executable, "-m", "stlsim", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def _assert_one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """A user error: exit 2, one `stlsim: error:` line on stderr, no traceback, nothing on stdout."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("stlsim: error: "), proc.stderr
    assert proc.stdout == ""
    return lines[0]


@pytest.fixture(scope="session")
def cli():
    """`cli(*args, cwd=None)`: run `python -m stlsim ARGS`, returning the CompletedProcess."""
    return _run_cli


@pytest.fixture(scope="session")
def one_line_error():
    """`one_line_error(proc)`: assert a one-line user error (exit 2) and return the line."""
    return _assert_one_line_error
