"""`stlsim sweep`: plans, the grid and zipped axes, the process pool, resuming,
failing cells as rows, and the shipped example plans."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import stlsim
from stlsim.errors import ConfigError
from stlsim.sweep import cell_hash, load_plan

ROOT = Path(__file__).parent.parent


def _plan(data: Path, **extra: object) -> dict:
    s = {"traces": [str(data / "wdev_3.csv")], "drives": ["imr-paper"], "layers": ["cmr", "imr-rmw"]}
    s.update(extra)
    return {"sweep": s}


def test_a_grid_runs_every_cell_once_and_rows_match_single_runs(tmp_path: Path, data: Path) -> None:
    plan = _plan(data, replay={"queue_depth": [1, 64]})
    rows = stlsim.sweep(plan, tmp_path, jobs=2)
    assert len(rows) == 4 and rows["error"].isna().all()
    assert set(zip(rows["layer"], rows["queue_depth"])) == {("cmr", 1), ("cmr", 64), ("imr-rmw", 1), ("imr-rmw", 64)}
    one = stlsim.run(trace=str(data / "wdev_3.csv"), drive="imr-paper", layer="imr-rmw", queue_depth=1)
    row = rows[(rows["layer"] == "imr-rmw") & (rows["queue_depth"] == 1)].iloc[0]
    assert row["mean_ms"] == one.summary["mean_ms"] and row["waf"] == one.summary["waf"]
    assert Path(row["report"]).exists()


def test_a_rerun_skips_finished_cells_and_an_interrupted_sweep_completes_only_the_missing(tmp_path: Path, data: Path) -> None:
    plan = _plan(data)
    first = stlsim.sweep(plan, tmp_path, jobs=1)
    seen: list[tuple[int, int]] = []
    again = stlsim.sweep(plan, tmp_path, jobs=1, on_cell=lambda d, t: seen.append((d, t)))
    assert seen == [(2, 2)]  # nothing left to run
    assert list(again["wall_s"]) == list(first["wall_s"])
    # Lose one row, as a machine crash mid-sweep would: only that cell runs again.
    (tmp_path / "rows" / f"{first['hash'][1]}.parquet").unlink()
    seen.clear()
    third = stlsim.sweep(plan, tmp_path, jobs=1, on_cell=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)]
    assert third["wall_s"][0] == first["wall_s"][0] and len(third) == 2


def test_a_failing_cell_is_a_row_and_the_sweep_goes_on(tmp_path: Path, data: Path) -> None:
    plan = _plan(data, layers=["cmr", "smr-vguard"])  # vguard needs an smr drive
    rows = stlsim.sweep(plan, tmp_path, jobs=2)
    assert len(rows) == 2
    bad = rows[rows["layer"] == "smr-vguard"].iloc[0]
    assert "smr" in bad["error"]
    assert rows[rows["layer"] == "cmr"]["error"].isna().all()


def test_zipped_axes_pair_up_and_params_go_only_to_layers_declaring_them(data: Path) -> None:
    p = load_plan(
        {
            "sweep": {
                "traces": ["a", "b"],
                "drives": ["imr-paper", "cmr"],
                "layers": ["cmr", "imr-rmw"],
                "zip": ["traces", "drives"],
                "params": {"backup_tracks": [8, 16]},
            }
        }
    )
    cells = p.cells()
    assert {(c["trace"], c["drive"]) for c in cells} == {("a", "imr-paper"), ("b", "cmr")}
    # cmr declares no backup_tracks: its two param values collapse into one cell.
    assert len([c for c in cells if c["layer"] == "cmr"]) == 2
    assert len([c for c in cells if c["layer"] == "imr-rmw"]) == 4
    assert len({cell_hash(c) for c in cells}) == len(cells)


@pytest.mark.parametrize(
    "spec, message",
    [
        ({}, "needs a [sweep] table"),
        ({"sweep": {"traces": [], "drives": ["x"], "layers": ["y"]}}, "traces must be a non-empty list"),
        ({"sweep": {"traces": ["t"], "drives": ["x"], "layers": ["y"], "colour": 1}}, "unknown keys"),
        ({"sweep": {"traces": ["t"], "drives": ["x"], "layers": ["y"], "replay": {"speed": [1]}}}, "not a replay option"),
        ({"sweep": {"traces": ["t", "u"], "drives": ["x"], "layers": ["y"], "zip": ["traces", "drives"]}}, "equal lengths"),
    ],
)
def test_bad_plans_are_clear_errors(spec: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_plan(spec)


def test_the_cli_runs_the_minimal_plan_and_reports_a_bad_one_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "min"
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "sweep", str(ROOT / "examples" / "sweeps" / "minimal.toml"), "--out", str(out), "--jobs", "2"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert "imr-rmw" in p.stdout and "2 cells" in p.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[sweep]\ntraces = 3\n")
    p = subprocess.run([sys.executable, "-m", "stlsim", "sweep", str(bad)], capture_output=True, text=True)
    assert p.returncode != 0 and "traces must be a non-empty list" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


PLANS = {"minimal": 2, "imr": 10, "hwsr": 36, "swd": 60, "vguard": 16, "amphisbaena": 30}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_example_plans_are_valid_and_point_at_existing_traces(name: str) -> None:
    p = load_plan(ROOT / "examples" / "sweeps" / f"{name}.toml")
    cells = p.cells()
    assert len(cells) == PLANS[name]
    for c in cells:
        assert c["trace"].startswith("synth:") or Path(c["trace"]).exists(), c["trace"]


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_example_plan_runs_as_shipped_on_a_short_prefix(name: str, tmp_path: Path) -> None:
    # The plan as shipped, each trace cut to its first 300 requests: every
    # layer, parameter and replay value it names is accepted and runs.
    spec = tomllib.loads((ROOT / "examples" / "sweeps" / f"{name}.toml").read_text())
    base = ROOT / "examples" / "sweeps"
    spec["sweep"]["traces"] = [t if t.startswith("synth:") else str((base / t).resolve()) for t in spec["sweep"]["traces"]]
    spec["sweep"]["traces"] = [t.replace("count=100000", "count=300") for t in spec["sweep"]["traces"]]
    spec["sweep"].setdefault("fixed", {})["limit"] = 300
    rows = stlsim.sweep(spec, tmp_path, jobs=2)
    assert len(rows) == PLANS[name]
    assert rows["error"].isna().all(), rows["error"].dropna().tolist()


def test_the_imr_plan_gives_identical_rows_on_the_pool_and_on_a_local_ray_instance(tmp_path: Path) -> None:
    import ray  # noqa: F401  (the test extra installs it; missing Ray fails here, loudly)

    plan = ROOT / "examples" / "sweeps" / "imr.toml"
    pool = stlsim.sweep(plan, tmp_path / "pool", jobs=2)
    ray_rows = stlsim.sweep(plan, tmp_path / "ray", jobs=2, engine="ray")
    assert len(pool) == 10 and pool["error"].isna().all()
    # Every column but the wall time and the report's folder is the same.
    for rows, base in ((pool, tmp_path / "pool"), (ray_rows, tmp_path / "ray")):
        for rep in rows["report"]:
            assert Path(rep).is_file() and Path(rep).is_relative_to(base)
    strip = lambda df: df.drop(columns=["wall_s", "report"])  # noqa: E731
    pd.testing.assert_frame_equal(strip(pool), strip(ray_rows))
    # The Ray worker shipped the whole report back: the same files, the same figures.
    h = pool["hash"][0]
    names = lambda d: sorted(f.name for f in (d / "runs" / h).iterdir())  # noqa: E731
    assert names(tmp_path / "pool") == names(tmp_path / "ray")
    a = json.loads((tmp_path / "pool" / "runs" / h / "report.json").read_text())
    b = json.loads((tmp_path / "ray" / "runs" / h / "report.json").read_text())
    assert a == b


def test_an_unknown_engine_and_a_ray_address_without_ray_are_errors(tmp_path: Path, data: Path) -> None:
    with pytest.raises(ConfigError, match="unknown sweep engine 'dask'"):
        stlsim.sweep(_plan(data), tmp_path, engine="dask")
    with pytest.raises(ConfigError, match="--ray-address needs --engine ray"):
        stlsim.sweep(_plan(data), tmp_path, ray_address="127.0.0.1:6379")


def test_ray_missing_is_a_one_line_error(tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ConfigError, match=r"--engine ray needs Ray: pip install 'stlsim\[ray\]'"):
        stlsim.sweep(_plan(data), tmp_path, engine="ray")


def test_retry_failed_runs_again_only_the_failed_cells(tmp_path: Path, data: Path) -> None:
    plan = _plan(data, layers=["cmr", "smr-vguard"])
    first = stlsim.sweep(plan, tmp_path, jobs=1)
    seen: list[tuple[int, int]] = []
    stlsim.sweep(plan, tmp_path, jobs=1, on_cell=lambda d, t: seen.append((d, t)))
    assert seen == [(2, 2)]  # a failed row is a row: skipped by default
    seen.clear()
    again = stlsim.sweep(plan, tmp_path, jobs=1, retry_failed=True, on_cell=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)]
    ok = first["layer"] == "cmr"
    assert again.loc[ok, "wall_s"].tolist() == first.loc[ok, "wall_s"].tolist()
    assert again.loc[~ok, "wall_s"].tolist() != first.loc[~ok, "wall_s"].tolist()


def test_every_registered_layer_has_a_cost_for_ordering_cells() -> None:
    from stlsim.config import layers
    from stlsim.sweep import LAYER_COST

    assert {l["name"] for l in layers()} <= LAYER_COST.keys()


def test_a_sweep_starts_its_costliest_cells_first() -> None:
    from stlsim.sweep import schedule

    cells = load_plan(ROOT / "examples" / "sweeps" / "imr.toml").cells()
    order = [(Path(c["trace"]).name, c["layer"]) for c in schedule(cells)]
    # The larger sample (vscsi) on its slowest layer first, the smaller
    # (rsrch_1) on CMR last: the cells left at the end are the short ones.
    assert order[0] == ("cloudPhysicsIO.vscsi", "imr-dtm")
    assert order[-1] == ("rsrch_1.csv", "cmr")
    assert [t for t, _ in order] == ["cloudPhysicsIO.vscsi"] * 5 + ["rsrch_1.csv"] * 5
    longer = dict(cells[0], repeat=40)
    assert schedule([cells[0], longer])[0] is longer
