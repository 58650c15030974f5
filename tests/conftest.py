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
ROOT = Path(__file__).resolve().parent.parent

#: What a test run itself leaves in the repository (pytest's and hypothesis's
#: caches, bytecode, coverage data).
_RUN_DEBRIS = ("__pycache__", ".pytest_cache", ".hypothesis", ".coverage")
#: The git-ignored output folders a command writes into by default or by
#: habit, listed one level down (where a stray ``results/compare-...`` shows).
#: Source folders are not: a file someone adds there while the suite runs is
#: not the suite's doing.
_OUTPUT_FOLDERS = ("results", "bench-out", "build", "dist")


def repository_entries(root: Path = ROOT) -> set[str]:
    """The repository's top-level entries and those of its output folders,
    but a test run's own debris."""
    def kept(p: Path) -> bool:
        return not p.name.startswith(_RUN_DEBRIS)

    out = {p.name for p in filter(kept, root.iterdir())}
    for name in _OUTPUT_FOLDERS:
        d = root / name
        if d.is_dir():
            out.update(f"{name}/{p.name}" for p in filter(kept, d.iterdir()))
    return out


@pytest.fixture(scope="session", autouse=True)
def _nothing_written_in_the_repository():
    """Every test writes in a temporary folder: the suite fails if it leaves
    anything new in the repository (a command run without --out in the
    repository, a relative path)."""
    before = repository_entries()
    yield
    new = sorted(repository_entries() - before)
    if new:
        pytest.fail(f"the tests left new files in the repository {ROOT}: {', '.join(new)}", pytrace=False)


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


@pytest.fixture
def sock_path(tmp_path: Path):
    """A Unix socket path in tmp_path, or in a short temporary folder where
    tmp_path is too long for a socket address (108 bytes): the NBD tests."""
    import shutil
    import tempfile

    path = tmp_path / "nbd.sock"
    if len(str(path)) < 100:
        yield str(path)
        return
    d = tempfile.mkdtemp(prefix="nbd")
    yield str(Path(d) / "s")
    shutil.rmtree(d, ignore_errors=True)
