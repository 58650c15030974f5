"""docs/cli.md stays true: its examples run, and it covers every command and option.
Also: the checked-in type stub of the native module matches the module."""

from __future__ import annotations

import argparse
import ast
import re
import tomllib
from pathlib import Path

import pytest

import stlsim
from stlsim import _core, cli
from stlsim.config import load_drive, load_run_config

DOC = Path(__file__).parent.parent / "docs" / "cli.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks("python")
    assert blocks
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        namespace: dict[str, object] = {}
        exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    assert (tmp_path / "results" / "api-example" / "summary.csv").is_file()


def test_toml_examples_are_valid() -> None:
    blocks = _blocks("toml")
    assert len(blocks) >= 2
    for text in blocks:
        tree = tomllib.loads(text)
        if "preset" in tree:  # a drive file
            assert load_drive(tree)["rpm"] > 0
        else:  # a run configuration
            settings = load_run_config(tree)
            assert settings["layer"] == "cmr"
            load_drive(settings["drive"])


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def test_every_command_and_option_is_documented() -> None:
    text = DOC.read_text()
    for name, sub in _subparsers(cli.build_parser()).items():
        assert f"stlsim {name}" in text, name
        for action in sub._actions:
            for opt in action.option_strings:
                if opt.startswith("--") and opt != "--help":
                    assert opt in text, f"{name} {opt}"


def test_stub_matches_the_native_module() -> None:
    stub = Path(stlsim.__file__).parent / "_core.pyi"
    assert (Path(stlsim.__file__).parent / "py.typed").is_file()
    tree = ast.parse(stub.read_text())
    names: set[str] = set()
    methods: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            methods |= {n.name for n in node.body if isinstance(n, ast.FunctionDef)} - {"__init__"}
    public = {n for n in dir(_core) if not n.startswith("_")} | {"__version__", "__commit__"}
    assert names == public
    runtime = {n for n in dir(_core.Simulation) if not n.startswith("_")}
    assert methods == runtime


def _script_rows(script: str, *args: str) -> list[str]:
    """The markdown table rows (headers aside) that scripts/SCRIPT prints."""
    import subprocess
    import sys

    root = Path(__file__).parent.parent
    out = subprocess.run(
        [sys.executable, str(root / "scripts" / script), *args], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    return [line for line in out.splitlines() if line.startswith("| ") and not line.startswith(("| layer", "| trace"))]


def _missing_from(doc: str, rows: list[str]) -> list[str]:
    text = (Path(__file__).parent.parent / "docs" / doc).read_text()
    return [row for row in rows if row not in text]


def test_imr_evaluation_tables_are_what_the_script_prints() -> None:
    """docs/imr.md's tables for one copy of the bundled trace come from
    scripts/imr_evaluation.py: rerunning it reproduces them row for row."""
    rows = _script_rows("imr_evaluation.py", "--repeat", "1") + _script_rows("imr_evaluation.py", "--traces")
    claims = [r for r in _script_rows("imr_evaluation.py", "--claims") if not r.startswith("| statement")]
    assert len(claims) == 7 and all(r.split(" | ")[3] in ("match", "same direction", "contradicts") for r in claims), claims
    rows += claims
    assert len(rows) >= 14
    missing = _missing_from("imr.md", rows)
    assert not missing, "docs/imr.md differs from scripts/imr_evaluation.py --repeat 1:\n" + "\n".join(missing)


def test_vguard_evaluation_tables_are_what_the_script_prints() -> None:
    """docs/dmsmr.md's real-trace tables (Figures 2 and 3: each trace once
    and repeated to a million requests, both readings of Vguard, both map
    sizes of the baseline) come from scripts/vguard_evaluation.py: rerunning
    it reproduces them row for row, from both start states. (The synthetic
    table takes half a minute; the script runs it the same way.)"""
    rows = _script_rows("vguard_evaluation.py", "--real-only")
    # 4 traces x 3 variants, once and repeated, from the empty and the
    # filled drive; 4 x 2 readings x 2 lengths of cache use.
    assert len(rows) == 2 * (12 + 12) + 16
    missing = _missing_from("dmsmr.md", rows)
    assert not missing, "docs/dmsmr.md differs from scripts/vguard_evaluation.py --real-only:\n" + "\n".join(missing)


def test_amphisbaena_evaluation_table_is_what_the_script_prints() -> None:
    """docs/hm-smr.md's comparison of paper 004's four layers on the bundled
    traces comes from scripts/amphisbaena_evaluation.py: rerunning it
    reproduces it row for row. (The sweeps run the same way.)"""
    rows = _script_rows("amphisbaena_evaluation.py", "compare")
    # Four layers on each run that writes back (cloudPhysicsIO once and x4,
    # rsrch_1 x7), one row on each of the four that never fill the buffer.
    assert len(rows) == 3 * 4 + 4
    assert sum("the buffer never fills" in r for r in rows) == 4
    missing = _missing_from("hm-smr.md", rows)
    assert not missing, "docs/hm-smr.md differs from scripts/amphisbaena_evaluation.py compare:\n" + "\n".join(missing)


def test_amphisbaena_table_3_and_claims_are_what_the_script_prints() -> None:
    """docs/hm-smr.md's Table 3 (the paper's traces beside ours) and its
    claims table (sections 6.2-6.3, verdicts computed from the runs) come
    from scripts/amphisbaena_evaluation.py table3 and claims."""
    rows = _script_rows("amphisbaena_evaluation.py", "table3")
    assert len(rows) == 8 + 7 and sum("(paper)" in r for r in rows) == 8
    rows += [r for r in _script_rows("amphisbaena_evaluation.py", "claims") if not r.startswith("| claim")]
    verdicts = [r.split(" | ")[3] for r in rows if " | section" not in r and r.count(" | ") >= 4 and "(section 6." in r]
    assert len(verdicts) >= 12 and set(verdicts) <= {"match", "same direction", "contradicts"}, verdicts
    missing = _missing_from("hm-smr.md", rows)
    assert not missing, "docs/hm-smr.md differs from scripts/amphisbaena_evaluation.py table3 / claims:\n" + "\n".join(missing)


def test_hwsr_evaluation_tables_are_what_the_script_prints(tmp_path: Path) -> None:
    """docs/hwsr.md's comparison of paper 001's three systems on the bundled
    traces comes from scripts/hwsr_evaluation.py: rerunning it reproduces it
    row for row (and the block-size sweep likewise)."""
    for args in (
        ("compare", "--out", str(tmp_path)),
        ("block-size", "--out", str(tmp_path)),
        ("claims", "--out", str(tmp_path)),
    ):
        rows = _script_rows("hwsr_evaluation.py", *args)
        assert len(rows) >= 6
        missing = _missing_from("hwsr.md", rows)
        assert not missing, f"docs/hwsr.md differs from scripts/hwsr_evaluation.py {args[0]}:\n" + "\n".join(missing)


def test_validation_table_is_what_the_script_prints() -> None:
    """docs/validation.md's demerit table comes from scripts/disksim_validation.py
    (stlsim validate on each of DiskSim's five validation drives)."""
    rows = _script_rows("disksim_validation.py")
    assert len(rows) == 12  # two tables: header and five drives each
    missing = _missing_from("validation.md", rows)
    assert not missing, "docs/validation.md differs from scripts/disksim_validation.py:\n" + "\n".join(missing)


def test_dmsmr_claims_table_is_what_the_script_prints() -> None:
    """docs/dmsmr.md's claims table (paper 003, section 4) comes from
    scripts/vguard_evaluation.py --claims, verdicts computed from the runs."""
    rows = [r for r in _script_rows("vguard_evaluation.py", "--claims") if not r.startswith("| claim")]
    assert len(rows) >= 16
    assert all(r.split(" | ")[3] in ("match", "same direction", "contradicts") for r in rows), rows
    missing = _missing_from("dmsmr.md", rows)
    assert not missing, "docs/dmsmr.md differs from scripts/vguard_evaluation.py --claims:\n" + "\n".join(missing)
