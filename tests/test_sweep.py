"""`stlsim sweep`: plans, the grid and zipped axes, the process pool, resuming,
failing cells as rows, and the shipped example plans."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import stlsim
from stlsim.errors import ConfigError
from stlsim.sweep import SweepWarning, cell_hash, load_plan

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


def _bad(**extra: object) -> dict:
    return {"sweep": {"traces": ["t"], "drives": ["x"], "layers": ["cmr", "imr-flip"], **extra}}


@pytest.mark.parametrize(
    "spec, message",
    [
        ({}, "needs a [sweep] table"),
        ({"sweep": {"traces": [], "drives": ["x"], "layers": ["cmr"]}}, "traces must be a non-empty list"),
        (_bad(colour=1), "[sweep] has unknown key 'colour'"),
        (_bad(replay={"speed": [1]}), "[sweep.replay] speed is not a replay option"),
        ({"sweep": {"traces": ["t", "u"], "drives": ["x"], "layers": ["cmr"], "zip": ["traces", "drives"]}}, "equal lengths"),
        # Issue 35 item 13: nothing misspelled is dropped in silence.
        (
            _bad(params={"interval_write": [1000, 10000]}),
            "[sweep.params] interval_write: no layer of the plan (cmr, imr-flip) has this parameter (did you mean 'interval_writes'?)",
        ),
        (_bad(params={"queue_depth": [1, 8]}), "queue_depth: no layer of the plan (cmr, imr-flip) has this parameter (it is a replay option"),
        (_bad(layers=["cmr", "imr-rwm"]), "[sweep] layers: unknown layer 'imr-rwm' (did you mean 'imr-rmw'?)"),
        (_bad(fixed={"limt": 5}), "[sweep.fixed] limt is not a replay option (did you mean 'limit'?)"),
        (_bad(fixed={"interval_writes": 5}), "[sweep.fixed] interval_writes is not a replay option (it is a layer parameter"),
        (_bad(replay={"limit": [100, 200]}, fixed={"limit": 5000}), "[sweep] limit is given in both [sweep.replay] and [sweep.fixed]"),
        ({**_bad(), "sweeps": {"layers": ["cmr"]}}, "unknown table [sweeps] outside [sweep]"),
        ({**_bad(), "limit": 5}, "unknown key 'limit' outside [sweep]"),
    ],
)
def test_bad_plans_are_clear_errors(spec: dict, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_plan(spec)
    assert message in str(e.value)


def test_a_misspelled_parameter_axis_stops_the_sweep_before_any_cell_runs(cli, one_line_error, tmp_path: Path, data: Path) -> None:
    plan = tmp_path / "typo.toml"
    plan.write_text(
        f'[sweep]\ntraces = ["{data / "wdev_3.csv"}"]\ndrives = ["imr-paper"]\nlayers = ["imr-flip"]\n'
        "[sweep.params]\ninterval_write = [1000, 10000]\n"
    )
    line = one_line_error(cli("sweep", str(plan), "--out", str(tmp_path / "out")))
    assert line == (
        f"stlsim: error: {plan}: [sweep.params] interval_write: no layer of the plan (imr-flip) has this parameter "
        "(did you mean 'interval_writes'?)"
    )
    assert not (tmp_path / "out").exists()  # not one cell ran


def test_a_plan_that_is_not_utf8_is_a_one_line_error(cli, one_line_error, tmp_path: Path) -> None:
    plan = tmp_path / "latin1.toml"
    plan.write_bytes('[sweep]\ntraces = ["caf\u00e9.csv"]\n'.encode("latin-1"))
    line = one_line_error(cli("sweep", str(plan), "--out", str(tmp_path / "out")))
    assert line == f"stlsim: error: {plan}: not a UTF-8 text file (byte 22); a sweep plan is TOML"


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


def _plan_file(tmp_path: Path, data: Path, layers: list[str], extra: str = "") -> Path:
    plan = tmp_path / "plan.toml"
    layer_list = ", ".join(f'"{l}"' for l in layers)
    plan.write_text(f'[sweep]\ntraces = ["{data / "wdev_3.csv"}"]\ndrives = ["imr-paper"]\nlayers = [{layer_list}]\n{extra}')
    return plan


def test_the_printed_table_has_human_titles_and_digits_and_no_error_column_without_failures(cli, tmp_path: Path, data: Path) -> None:
    plan = _plan_file(tmp_path, data, ["cmr", "imr-flip"], "[sweep.params]\ninterval_writes = [1000, 10000]\n")
    p = cli("sweep", str(plan), "--out", str(tmp_path / "out"), "--jobs", "2")
    assert p.returncode == 0, p.stderr
    header = p.stdout.splitlines()[1].split()
    assert header[:4] == ["trace", "drive", "layer", "interval_writes"]
    assert "mean (ms)" in p.stdout and "p99 (ms)" in p.stdout and "WAF" in header and "wall (s)" in p.stdout
    assert "error" not in p.stdout and "None" not in p.stdout and "mean_ms" not in p.stdout
    assert "10,000" in p.stdout  # counts with thousands separators
    flip = [l.split() for l in p.stdout.splitlines() if " imr-flip " in l]
    assert len(flip) == 2 and all(re.fullmatch(r"\d\.\d{3}", row[4]) for row in flip), flip  # mean: 3 decimals, not 6
    assert p.stderr.strip().splitlines()[-1] == f"stlsim: 3 cells in {tmp_path / 'out'}/rows, none failed"


def test_failed_cells_are_listed_below_the_table_with_their_errors(cli, tmp_path: Path, data: Path) -> None:
    plan = _plan_file(tmp_path, data, ["cmr", "smr-vguard"])  # vguard needs an smr drive
    p = cli("sweep", str(plan), "--out", str(tmp_path / "out"), "--jobs", "1")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    i = lines.index("1 failed cell:")
    assert lines[i + 1].startswith("  trace=wdev_3.csv, drive=imr-paper, layer=smr-vguard: ConfigError: ")
    assert "needs a drive with the 'smr' layout" in lines[i + 1]
    assert p.stderr.strip().splitlines()[-1].endswith("2 cells in " + f"{tmp_path / 'out'}/rows, 1 failed (listed above)")


def test_a_resumed_sweep_says_how_many_cells_it_skips(cli, tmp_path: Path, data: Path) -> None:
    plan = _plan_file(tmp_path, data, ["cmr", "imr-rmw", "imr-flip"])
    out = tmp_path / "out"
    first = cli("sweep", str(plan), "--out", str(out), "--jobs", "1")
    assert first.returncode == 0 and "stlsim: resumed" not in first.stderr
    next(iter((out / "rows").glob("*.parquet"))).unlink()
    again = cli("sweep", str(plan), "--out", str(out), "--jobs", "1")
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines()[0] == "stlsim: resumed: 2 of 3 cells already done, running 1"


def test_a_truncated_row_is_run_again_on_resume_with_a_warning(cli, tmp_path: Path, data: Path) -> None:
    plan = _plan_file(tmp_path, data, ["cmr", "imr-rmw"])
    out = tmp_path / "out"
    assert cli("sweep", str(plan), "--out", str(out), "--jobs", "1").returncode == 0
    row = sorted((out / "rows").glob("*.parquet"))[0]
    row.write_bytes(row.read_bytes()[:100])  # as a full disk or a partial copy leaves it
    p = cli("sweep", str(plan), "--out", str(out), "--jobs", "1")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines()[:2] == [
        f"stlsim: warning: {row} is unreadable; running its cell again",
        "stlsim: resumed: 1 of 2 cells already done, running 1",
    ]
    assert len(stlsim.SweepResult.load(out).rows) == 2  # the row is whole again
    # The Python API says it with a warning.
    row.write_bytes(row.read_bytes()[:100])
    with pytest.warns(SweepWarning, match=f"{re.escape(str(row))} is unreadable; running its cell again"):
        rows = stlsim.sweep(plan, out, jobs=1)
    assert len(rows) == 2 and rows["error"].isna().all()


def test_ctrl_c_stops_the_sweep_at_once_says_what_was_saved_and_a_rerun_completes(cli, tmp_path: Path, data: Path) -> None:
    # 120 short cells: seconds of work for two workers, so the signal lands mid-sweep.
    depths = ", ".join(str(d) for d in range(1, 61))
    plan = _plan_file(tmp_path, data, ["cmr", "imr-rmw"], f"[sweep.replay]\nqueue_depth = [{depths}]\n")
    out = tmp_path / "out"
    rows_dir = out / "rows"
    proc = subprocess.Popen(
        [sys.executable, "-m", "stlsim", "sweep", str(plan), "--out", str(out), "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the clean-up below reaches any worker it leaves
        # Ctrl-C as a terminal delivers it: a suite started in the background
        # by a non-interactive shell passes SIGINT on ignored, and Python then
        # never turns it into KeyboardInterrupt.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while not (rows_dir.is_dir() and any(rows_dir.glob("*.parquet"))):
            assert proc.poll() is None and time.monotonic() < deadline, "the sweep wrote no row"
            time.sleep(0.01)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=3)
        stopped = time.monotonic() - sent
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()  # reaps it and closes the pipes, whatever happened above
    assert proc.returncode == 130, err
    assert stopped < 3
    m = re.fullmatch(rf"stlsim: interrupted: (\d+) of 120 cells saved in {re.escape(str(out))}; run the same command to resume\n", err)
    assert m, err
    saved = len(list(rows_dir.glob("*.parquet")))
    assert int(m[1]) == saved and 1 <= saved < 120  # it stopped before the end, and counted right
    assert not list(rows_dir.glob(".*.tmp"))

    again = cli("sweep", str(plan), "--out", str(out), "--jobs", "2")
    assert again.returncode == 0, again.stderr
    assert f"stlsim: resumed: {saved} of 120 cells already done, running {120 - saved}" in again.stderr
    expected = {cell_hash(c) for c in load_plan(plan).cells()}
    assert sorted(f.stem for f in rows_dir.glob("*.parquet")) == sorted(expected)
    rows = stlsim.SweepResult.load(out).rows
    assert len(rows) == 120 and set(rows["hash"]) == expected and rows["error"].isna().all()
