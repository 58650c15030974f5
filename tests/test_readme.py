"""The README's tour runs as pasted (issue 35): every line of its shell
block, in order, then its Python block, from a folder laid out like the
repository's root (its `tests`, `examples` and `scripts` linked in), so
what the tour writes under `results/` lands in a temporary folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"


def _tour() -> tuple[list[str], str]:
    """The tour's shell commands (continuation lines joined) and its Python block."""
    text = README.read_text()
    section = text[text.index("## A short tour") :]
    section = section[: section.index("\n## ", 1)]
    shell = re.search(r"```sh\n(.*?)```", section, re.S)
    python = re.search(r"```python\n(.*?)```", section, re.S)
    assert shell and python, "the tour has a shell block and a Python block"
    lines = shell.group(1).replace("\\\n", " ").splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")], python.group(1)


def test_the_tour_has_no_placeholders() -> None:
    commands, _ = _tour()
    assert len(commands) >= 25
    for line in commands:
        words = line.split("#")[0].split()
        assert "T" not in words and not any(re.fullmatch(r"[ab]\.toml", w) for w in words), line


def test_every_tour_line_runs_as_pasted(tmp_path: Path) -> None:
    for d in ("tests", "examples", "scripts"):
        (tmp_path / d).symlink_to(ROOT / d)
    # `stlsim` and `python` as the tour's reader has them: this interpreter's.
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"], COLUMNS="120")
    commands, python = _tour()
    for line in commands:
        proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"tour line failed: {line}\n{proc.stderr[-3000:]}"
        assert "Traceback" not in proc.stderr, line
    proc = subprocess.run([sys.executable, "-c", python], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the tour's Python block failed:\n{proc.stderr[-3000:]}"
    # What the tour says it writes, it wrote, under results/.
    for made in ("flat-out/report.json", "cmp/summary.csv", "imr/rows", "tracks", "my.toml", "api-run/report.json", "atlas10k.toml", "blk.stlt"):
        assert (tmp_path / "results" / made).exists(), made


def test_ci_runs_the_readmes_test_command_with_clippy() -> None:
    text = README.read_text()
    section = text[text.index("## Two commands") :]
    blocks = re.findall(r"```sh\n(.*?)```", section[: section.index("\n## ", 1)], re.S)
    assert len(blocks) == 2, "an install command and a test command"
    test_command = blocks[1].strip()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == test_command, (ci[-1], test_command)
    # Issue 36: lints are denied, not merely printed.
    assert "cargo clippy" in test_command and "-D warnings" in test_command
