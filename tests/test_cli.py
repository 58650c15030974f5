"""The `stlsim` command, run as `python -m stlsim` in a subprocess."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import stlsim
from stlsim import cli


def test_run_prints_the_summary_tables(cli, tmp_path: Path) -> None:
    p = cli("run", "--limit", "2000", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for text in ("Host latency (ms)", "WAF", "Device work by cause", "Layer counters (cmr)", "Verification: off"):
        assert text in out, text
    assert "2,000 requests" in out
    assert "imr-paper" in out
    assert p.stderr == ""  # no progress bar when stderr is not a terminal
    assert not (tmp_path / "results").exists()


def test_run_without_arguments_replays_the_bundled_trace(cli, tmp_path: Path) -> None:
    p = cli("run", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert (r["host"]["requests"], r["host"]["reads"], r["host"]["writes"]) == (113_872, 46_974, 66_898)
    assert (r["layer"], r["drive"]["name"], r["mode"], r["queue_depth"]) == ("cmr", "imr-paper", "queue", 64)
    assert r["waf"] == 1.0


def test_run_options_reach_the_core(cli, tmp_path: Path, data: Path) -> None:
    p = cli(
        "run",
        "--trace", str(data / "rsrch_1.csv"),
        "--drive", "cmr",
        "--mode", "flat-out",
        "--no-write-cache",
        "--verify",
        "--limit", "1500",
        "--crash-after", "500", "1000",
        "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["host"]["requests"] == 1500
    assert r["drive"]["name"] == "cmr"
    assert r["mode"] == "flat-out"
    assert r["drive"]["write_cache_bytes"] == 0
    assert r["crashes"] == 2
    assert r["verification"]["enabled"] and r["verification"]["mismatches"] == 0


def test_run_verify_prints_the_verdict(cli, tmp_path: Path, data: Path) -> None:
    p = cli("run", "--trace", str(data / "rsrch_1.csv"), "--limit", "3000", "--verify", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Verification: passed" in p.stdout
    assert "0 mismatches" in p.stdout


def test_run_out_saves_files(cli, tmp_path: Path) -> None:
    p = cli("run", "--limit", "1000", "--out", "res", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    res = tmp_path / "res"
    assert json.loads((res / "report.json").read_text())["host"]["requests"] == 1000
    assert list(pd.read_parquet(res / "latency_cdf.parquet").columns) == ["class", "latency_ms", "fraction"]
    assert len(pd.read_parquet(res / "series.parquet")) == 1
    assert "saved" in p.stderr


def test_layers_lists_every_registered_layer(cli) -> None:
    p = cli("layers")
    assert p.returncode == 0, p.stderr
    assert "cmr" in p.stdout
    for entry in stlsim.layers():
        assert entry["name"] in p.stdout
        for param in entry["params"]:
            assert param["name"] in p.stdout
    j = cli("layers", "--json")
    assert [e["name"] for e in json.loads(j.stdout)] == [e["name"] for e in stlsim.layers()]


def test_drives_lists_the_presets_with_figures(cli) -> None:
    p = cli("drives")
    assert p.returncode == 0, p.stderr
    for name in ("imr-paper", "cmr"):
        assert name in p.stdout
    assert "524,288" in p.stdout  # imr-paper's tracks, derived by the core
    rows = json.loads(cli("drives", "--json").stdout)
    assert {r["name"] for r in rows} == {d["name"] for d in stlsim.drives()}
    assert all(r["derived"]["capacity_bytes"] > 0 for r in rows)


def test_init_config_output_parses_and_runs(cli, tmp_path: Path) -> None:
    p = cli("init-config")
    assert p.returncode == 0, p.stderr
    tree = tomllib.loads(p.stdout)
    assert tree["layer"]["name"] == "cmr"
    conf = tmp_path / "mine.toml"
    w = cli("init-config", str(conf), cwd=tmp_path)
    assert w.returncode == 0, w.stderr
    assert conf.read_text() == p.stdout
    r = cli("run", "--config", str(conf), "--limit", "2000", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["host"]["requests"] == 2000
    assert report["trace"] == str(stlsim.default_trace())
    again = cli("init-config", str(conf), cwd=tmp_path)
    assert "exists" in again.stderr and again.returncode == 2
    assert cli("init-config", str(conf), "--force", cwd=tmp_path).returncode == 0


def test_config_values_and_command_line_overrides(cli, tmp_path: Path, data: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text(f'label = "mine"\n[trace]\npath = "{data / "wdev_1.csv"}"\nlimit = 100\n[replay]\nmode = "flat-out"\n')
    r = json.loads(cli("run", "--config", str(conf), "--json", cwd=tmp_path).stdout)
    assert (r["host"]["requests"], r["mode"]) == (100, "flat-out")
    r = json.loads(cli("run", "--config", str(conf), "--limit", "200", "--mode", "queue", "--json", cwd=tmp_path).stdout)
    assert (r["host"]["requests"], r["mode"]) == (200, "queue")


def test_compare_writes_table_and_plots(cli, tmp_path: Path) -> None:
    p = cli("compare", "--layer", "cmr", "--layer", "cmr", "--limit", "3000", "--out", "tmp", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "tmp"
    for name in ("latency_cdf.png", "headline.png", "disparity.png", "summary.csv"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "headline.png").read_bytes()[:4] == b"\x89PNG"
    table = pd.read_csv(out / "summary.csv")
    assert table["label"].tolist() == ["cmr", "cmr-2"]
    assert table["requests"].tolist() == [3000, 3000]
    assert (out / "cmr-2" / "report.json").is_file()
    assert "cmr-2" in p.stdout and "WAF" in p.stdout


IMR_LAYERS = ["cmr", "imr-rmw", "imr-flip", "imr-cache", "imr-dtm"]


def test_compare_runs_the_imr_papers_evaluation(cli, tmp_path: Path) -> None:
    """The paper's comparison in one command: WAF and latency table, Figures 8/9, 12, 13."""
    layers = [a for name in IMR_LAYERS for a in ("--layer", name)]
    p = cli("compare", "--drive", "imr-paper", *layers, "--limit", "30000", "--out", "imr", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = {r["label"]: r for r in json.loads(p.stdout)}
    assert list(rows) == IMR_LAYERS
    assert rows["cmr"]["waf"] == 1.0
    for name in IMR_LAYERS[1:]:
        assert rows[name]["waf"] > 1.0, name
        assert rows[name]["requests"] == 30000
    out = tmp_path / "imr"
    for name in ("latency_cdf.png", "headline.png", "disparity.png", "summary.csv"):
        assert (out / name).stat().st_size > 0, name
    report = json.loads((out / "imr-flip" / "report.json").read_text())
    assert report["layer_counters"]["map_bytes"] > 0


def test_compare_configs_without_out_write_nothing(cli, tmp_path: Path, data: Path) -> None:
    (tmp_path / "a.toml").write_text('[replay]\nmode = "flat-out"\n')
    (tmp_path / "b.toml").write_text('label = "bee"\n[drive]\npreset = "cmr"\n')
    p = cli("compare", "--config", "a.toml", "--config", "b.toml", "--trace", str(data / "wdev_3.csv"), "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [(r["label"], r["mode"], r["drive"], r["requests"]) for r in rows] == [
        ("a", "flat-out", "imr-paper", 682),
        ("bee", "queue", "cmr", 682),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.toml", "b.toml"]


def test_compare_without_out_prints_its_table_and_writes_nothing(cli, tmp_path: Path) -> None:
    """Like run, compare without --out only prints (issue 35: it used to
    leave results/compare-<time>/ wherever it ran)."""
    p = cli("compare", "--layer", "cmr,imr-rmw", "--limit", "500", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "imr-rmw" in p.stdout and "WAF" in p.stdout
    assert list(tmp_path.iterdir()) == []
    assert "saved" not in p.stderr
    line = cli("compare", "--layer", "cmr", "--limit", "10", "--plot-format", "svg", cwd=tmp_path).stderr
    assert "--plot-format needs --out DIR" in line
    assert list(tmp_path.iterdir()) == []


def test_compare_needs_configurations(cli, one_line_error, tmp_path: Path) -> None:
    line = one_line_error(cli("compare", "--limit", "10", cwd=tmp_path))
    assert "--config" in line and "--layer" in line


# --------------------------------------------------------------------------
# User errors: exit 2, one line, no traceback
# --------------------------------------------------------------------------


def _broken_trace(tmp_path: Path, data: Path) -> Path:
    lines = (data / "wdev_3.csv").read_text().splitlines()[:8]
    lines[2] = "128166410318061390,wdev,3,Write,3154144768,4096"  # a field short
    bad = tmp_path / "broken_trace.csv"
    bad.write_text("\n".join(lines) + "\n")
    return bad


def test_error_unknown_layer(cli, one_line_error) -> None:
    line = one_line_error(cli("run", "--layer", "no-such-layer", "--limit", "10"))
    assert "unknown layer 'no-such-layer'" in line and "cmr" in line


def test_error_unknown_param(cli, one_line_error) -> None:
    line = one_line_error(cli("run", "--param", "no_such_param=3", "--limit", "10"))
    assert "no parameter 'no_such_param'" in line


def test_error_param_without_value(cli, one_line_error) -> None:
    line = one_line_error(cli("run", "--param", "cache_tracks", "--limit", "10"))
    assert "expected NAME=VALUE" in line


def test_error_unknown_drive(cli, one_line_error) -> None:
    line = one_line_error(cli("run", "--drive", "no-such-drive", "--limit", "10"))
    assert "unknown drive 'no-such-drive'" in line and "imr-paper" in line


def test_error_malformed_third_line(cli, one_line_error, tmp_path: Path, data: Path) -> None:
    bad = _broken_trace(tmp_path, data)
    line = one_line_error(cli("run", "--trace", str(bad)))
    assert "broken_trace.csv:3:" in line


def test_error_missing_trace(cli, one_line_error, tmp_path: Path) -> None:
    line = one_line_error(cli("run", "--trace", str(tmp_path / "absent.vscsi")))
    assert "absent.vscsi" in line


def test_error_impossible_geometry(cli, one_line_error, tmp_path: Path) -> None:
    drive = tmp_path / "odd_sectors.toml"
    base = (Path(stlsim.__file__).parent / "drives" / "imr-paper.toml").read_text()
    drive.write_text(base.replace("sector_bytes = 4096", "sector_bytes = 1000"))
    line = one_line_error(cli("run", "--drive", str(drive), "--limit", "10"))
    assert "odd_sectors.toml" in line and "sector_bytes 1000" in line


def test_error_config_with_unknown_key(cli, one_line_error, tmp_path: Path) -> None:
    conf = tmp_path / "typo.toml"
    conf.write_text("[replay]\nqueue_dept = 4\n")
    line = one_line_error(cli("run", "--config", str(conf)))
    assert "typo.toml" in line and "replay.queue_dept" in line


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--mode", "fastest"], "invalid choice"),
        (["run", "--limit", "-5"], "non-negative integer"),
        (["run", "--format", "xml"], "unknown trace format 'xml'"),
        (["run", "--queue-depth", "0", "--limit", "10"], "queue_depth must be at least 1"),
        (["run", "--no-such-option"], "unrecognized arguments"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_error_usage(cli, one_line_error, args: list[str], needle: str) -> None:
    assert needle in one_line_error(cli(*args))


def test_error_unwritable_output(cli, one_line_error, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    line = one_line_error(cli("run", "--limit", "10", "--out", str(blocker / "sub"), cwd=tmp_path))
    assert "cannot save results" in line


# --------------------------------------------------------------------------
# In-process: exit statuses
# --------------------------------------------------------------------------


def test_keyboard_interrupt_exits_130_quietly(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import stlsim.api

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(stlsim.api, "simulate", interrupted)
    assert cli.main(["run", "--limit", "10"]) == 130
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err


def test_main_returns_2_on_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--layer", "nope", "--limit", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stlsim: error: ") and err.count("\n") == 1


def test_version(cli) -> None:
    p = cli("--version")
    assert p.returncode == 0
    assert stlsim.__version__ in p.stdout


def test_a_parameter_given_twice_and_a_zero_series_interval_are_errors(data: Path) -> None:
    """Rough edges of issue 11: `--param X=1 --param X=2` used to keep the
    last; `--series-every 0` was silently 1; `--crash-after 0` disabled every
    later crash point."""
    import subprocess
    import sys

    base = [sys.executable, "-m", "stlsim", "run", "--trace", str(data / "wdev_3.csv")]
    for extra, message in (
        (["--layer", "imr-rmw", "--param", "backup_tracks=8", "--param", "backup_tracks=16"], "given twice"),
        (["--series-every", "0"], "--series-every"),
        (["--crash-after", "0", "--crash-after", "100"], "crash_after 0"),
        (["--crash-after", "100", "--crash-after", "100"], "given twice"),
    ):
        p = subprocess.run(base + extra, capture_output=True, text=True)
        assert p.returncode != 0, extra
        assert message in p.stderr, (extra, p.stderr)
        assert "Traceback" not in p.stderr


# --------------------------------------------------------------------------
# Command-line rough edges
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["run", "--limit", "10", "--foo"], "stlsim run"),
        (["compare", "--layer", "cmr", "stray"], "stlsim compare"),
        (["synth", "uniform", "--count", "5", "--span-bytes", "1MiB", "-o", "x.csv", "--bogus"], "stlsim synth uniform"),
        (["layers", "--nope"], "stlsim layers"),
    ],
)
def test_unrecognized_arguments_point_at_the_subcommands_help(
    cli, one_line_error, tmp_path: Path, args: list[str], command: str
) -> None:
    line = one_line_error(cli(*args, cwd=tmp_path))
    assert f"unrecognized arguments: {args[-1]}" in line
    assert line.endswith(f"(see '{command} --help')"), line
    assert not (tmp_path / "x.csv").exists()  # refused before anything ran


@pytest.mark.parametrize("args", [["run", "--limit", "3000"], ["run", "--limit", "3000", "--json"], ["layers"], ["init-config"]])
def test_a_closed_stdout_stops_quietly(tmp_path: Path, args: list[str]) -> None:
    """`stlsim run | head -1`: the reader is gone before stlsim writes. No
    BrokenPipeError traceback (nor 'Exception ignored' from the interpreter's
    final flush), exit status 141 (128 + SIGPIPE) as for other Unix tools."""
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone: every write fails with EPIPE
    try:
        p = subprocess.run(
            [sys.executable, "-m", "stlsim", *args], stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=120
        )
    finally:
        os.close(write_end)
    assert p.returncode == cli.EXIT_BROKEN_PIPE == 141, p.stderr
    assert p.stderr == ""


def test_head_of_the_output_exits_quietly(tmp_path: Path) -> None:
    """The shell form: `stlsim run | head -1` prints the first line, nothing on stderr."""
    import shlex
    import subprocess
    import sys

    cmd = f"{shlex.quote(sys.executable)} -m stlsim run --limit 3000 | head -1"
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0
    assert p.stdout.startswith("cmr: layer cmr on drive imr-paper") and p.stdout.count("\n") == 1
    assert p.stderr == ""


def test_init_config_unwritable_target_is_one_line_naming_the_file(cli, one_line_error, tmp_path: Path) -> None:
    blocker = tmp_path / "plain-file"
    blocker.write_text("x")
    (tmp_path / "folder").mkdir()
    for target, reason in (
        (tmp_path / "absent" / "my.toml", f"its folder '{tmp_path / 'absent'}' does not exist"),
        (blocker / "my.toml", f"'{blocker}' is not a folder"),
        (tmp_path / "folder", "it is a folder"),
    ):
        for force in ([], ["--force"]):
            line = one_line_error(cli("init-config", str(target), *force, cwd=tmp_path))
            assert line == f"stlsim: error: cannot write configuration '{target}': {reason}", line
            assert "Errno" not in line


def test_os_errors_are_worded_without_errno(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """An OSError that reaches main() names its file and says why in words."""

    def denied(ns: object) -> int:
        raise PermissionError(13, "Permission denied", "/some/file")

    monkeypatch.setattr(cli, "_cmd_layers", denied)
    assert cli.main(["layers"]) == 2
    assert capsys.readouterr().err == "stlsim: error: /some/file: permission denied\n"


@pytest.fixture()
def no_simulation(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the simulation (and the analysis) by a recorder: a test can
    check that an error came before any work."""
    import stlsim.api

    calls: list[str] = []

    def simulate(cfg: object, label: str, progress: bool = False) -> None:
        calls.append(label)
        raise AssertionError("the simulation started")

    def track_writes_json(*args: object) -> None:
        calls.append("analyze")
        raise AssertionError("the analysis started")

    monkeypatch.setattr(stlsim.api, "simulate", simulate)
    monkeypatch.setattr(stlsim.api._core, "track_writes_json", track_writes_json)
    return calls


@pytest.mark.parametrize(
    "command",
    [["run", "--limit", "10"], ["compare", "--layer", "cmr", "--limit", "10"], ["analyze", "--limit", "10"]],
)
def test_unwritable_out_is_refused_before_any_work(
    command: list[str], tmp_path: Path, no_simulation: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "plain-file"
    blocker.write_text("x")
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == locked else real_access(p, mode))
    for out, why in (
        (blocker / "sub", f"'{blocker}' is not a folder"),
        (blocker, "it is a file, not a folder"),
        (locked / "new" / "deeper", f"no permission to write in '{locked}'"),
    ):
        assert cli.main([*command, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err == f"stlsim: error: cannot save results in '{out}': {why}\n"
    assert no_simulation == []
    assert not (locked / "new").exists()


def test_api_checks_out_before_the_run(tmp_path: Path, no_simulation: list[str]) -> None:
    blocker = tmp_path / "plain-file"
    blocker.write_text("x")
    with pytest.raises(OSError, match="cannot save results in .*is not a folder"):
        stlsim.run(limit=10, out=blocker / "r")
    with pytest.raises(OSError, match="cannot save results in .*is not a folder"):
        stlsim.compare([{"layer": "cmr"}], limit=10, out=blocker / "c")
    with pytest.raises(OSError, match="cannot save results in .*is not a folder"):
        stlsim.analyze(limit=10, out=blocker / "a")
    assert no_simulation == []


def test_run_out_refuses_to_overwrite_an_earlier_run_without_force(cli, one_line_error, tmp_path: Path) -> None:
    assert cli("run", "--limit", "1000", "--out", "res", cwd=tmp_path).returncode == 0
    again = cli("run", "--limit", "2000", "--out", "res", cwd=tmp_path)
    line = one_line_error(again)
    assert line.startswith("stlsim: error: cannot save results in 'res': it holds an earlier run's files (report.json")
    assert line.endswith("use --force to overwrite them")
    assert json.loads((tmp_path / "res" / "report.json").read_text())["host"]["requests"] == 1000
    forced = cli("run", "--limit", "2000", "--out", "res", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert json.loads((tmp_path / "res" / "report.json").read_text())["host"]["requests"] == 2000
    # A folder holding other things (not an earlier run) is fine without --force.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    assert cli("run", "--limit", "100", "--out", "other", cwd=tmp_path).returncode == 0
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_overwrite_is_refused_before_the_simulation(tmp_path: Path, no_simulation: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "report.json").write_text("{}")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "summary.csv").write_text("label\n")
    assert cli.main(["run", "--limit", "10", "--out", str(tmp_path / "r")]) == 2
    assert cli.main(["compare", "--layer", "cmr", "--limit", "10", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("use --force to overwrite them" in e for e in err)
    assert no_simulation == []


def test_compare_out_refuses_to_overwrite_and_force_leaves_nothing_stale(cli, one_line_error, tmp_path: Path) -> None:
    first = cli("compare", "--layer", "cmr,imr-rmw", "--limit", "1000", "--out", "cmp", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "cmp" / "disparity_vs_cmr.png").is_file()  # there is a cmr run
    line = one_line_error(cli("compare", "--layer", "imr-rmw", "--limit", "500", "--out", "cmp", cwd=tmp_path))
    assert "cannot save results in 'cmp': it holds an earlier run's files" in line and "--force" in line
    assert pd.read_csv(tmp_path / "cmp" / "summary.csv")["label"].tolist() == ["cmr", "imr-rmw"]
    forced = cli("compare", "--layer", "imr-rmw", "--limit", "500", "--out", "cmp", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert pd.read_csv(tmp_path / "cmp" / "summary.csv")["label"].tolist() == ["imr-rmw"]
    # The earlier comparison's CMR plot would now be a lie: it is gone.
    assert not (tmp_path / "cmp" / "disparity_vs_cmr.png").exists()
    assert (tmp_path / "cmp" / "latency_cdf.png").is_file()


@pytest.mark.parametrize(
    ("labels", "needle"),
    [
        (["a/b", "a_b"], "labels 'a/b' (a.toml) and 'a_b' (b.toml) would both be saved in folder 'a_b'"),
        (["Fast", "fast"], "labels 'Fast' (a.toml) and 'fast' (b.toml) would both be saved in folder 'fast'"),
        (["summary.csv", "ok"], "label 'summary.csv' (a.toml) would be saved in 'summary.csv', a file of the comparison itself"),
        (["???", "ok"], "label '???' (a.toml) has no ASCII letter or digit to name its folder"),
    ],
)
def test_compare_refuses_labels_that_cannot_each_have_a_folder(
    tmp_path: Path, no_simulation: list[str], capsys: pytest.CaptureFixture[str], labels: list[str], needle: str
) -> None:
    for name, label in zip(("a", "b"), labels):
        (tmp_path / f"{name}.toml").write_text(f"label = {json.dumps(label)}\n")
    out = tmp_path / "cmp"
    configs = ["--config", str(tmp_path / "a.toml"), "--config", str(tmp_path / "b.toml")]
    assert cli.main(["compare", *configs, "--limit", "10", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle.replace("a.toml", str(tmp_path / "a.toml")).replace("b.toml", str(tmp_path / "b.toml")) in err, err
    assert no_simulation == []
    assert not out.exists()


def test_comparison_save_refuses_colliding_labels_before_writing(tmp_path: Path) -> None:
    r1, r2 = stlsim.run(limit=200, label="x y"), stlsim.run(limit=200, label="x_y")
    with pytest.raises(stlsim.ConfigError, match="labels 'x y' and 'x_y' would both be saved in folder 'x_y'"):
        stlsim.Comparison([r1, r2]).save(tmp_path / "c")
    assert not (tmp_path / "c").exists()
    with pytest.raises(stlsim.ConfigError, match="would both be saved"):
        stlsim.compare([{"label": "p/q", "layer": "cmr"}, {"label": "p_q", "layer": "cmr"}], limit=10)


# --------------------------------------------------------------------------
# Headline figures: units, enough digits, --explain (issue 35)


def _figure(stdout: str, name: str) -> str:
    """The value printed beside headline figure ``name`` in the Run table."""
    import re

    m = re.search(rf"(?:^|\s){re.escape(name)}\s{{2,}}(\S+(?: \S+)?)", stdout, re.M)
    assert m, (name, stdout)
    return m.group(1)


def test_run_headline_figures_carry_their_units(cli, tmp_path: Path) -> None:
    p = cli("run", "--limit", "2000", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    units = {
        "WAF": " x",
        "I/O amplification": " ops/request",
        "simulated time": " s",
        "IOPS": " requests/s",
        "throughput": " MB/s",
        "device utilisation": " %",
        "disparity final": " s",
        "disparity max": " s",
        "prefill": " %",
        "writes cached": " writes",
    }
    for name, unit in units.items():
        assert _figure(p.stdout, name).endswith(unit), (name, _figure(p.stdout, name))
    assert p.stdout.rstrip().splitlines()[-1] == "--explain says what each figure means"


@pytest.mark.parametrize(
    "trace",
    [[], ["--trace", "synth:uniform,count=20,span_bytes=1GB,iat_mean_ms=100000,seed=1"]],
    ids=["limit-50", "one-request-a-100-s"],
)
def test_small_runs_show_non_zero_rates(cli, tmp_path: Path, trace: list[str]) -> None:
    """IOPS, throughput and utilisation of a small or sparse trace keep
    significant digits instead of printing 0.0."""
    p = cli("run", *trace, "--limit", "50", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    report = json.loads(cli("run", *trace, "--limit", "50", "--json", cwd=tmp_path).stdout)
    for name, key, scale in (("IOPS", "iops", 1), ("throughput", "throughput_mb_s", 1), ("device utilisation", "utilisation", 100)):
        shown = float(_figure(p.stdout, name).split()[0].replace(",", ""))
        assert shown > 0 and shown == pytest.approx(scale * report[key], rel=0.05), (name, shown, report[key])
    total = next(ln.split() for ln in p.stdout.splitlines() if ln.strip().startswith("total"))
    busy = float(total[5])  # busy s
    assert busy > 0 and busy == pytest.approx(report["device"]["busy_s"], rel=0.05)


def test_figures_keep_two_significant_digits() -> None:
    assert cli._fig(0.000042, 1) == "0.000042"
    assert cli._fig(0.37, 1) == "0.37"
    assert cli._fig(15.58, 1) == "15.6"
    assert cli._fig(7305.44, 1) == "7,305.4"
    assert cli._fig(0.0, 2) == "0.00"
    assert cli._fig(float("nan"), 2) == "-"


def test_run_explain_says_what_each_figure_means(cli, tmp_path: Path) -> None:
    p = cli("run", "--explain", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for meaning in (
        "physical operations (media reads and writes, every cause) / host requests",
        "how much later than the trace's own time the last request was issued",
        "share of the simulated time the device was busy",
        "media sectors written, every cause / sectors the layer was asked to store",
    ):
        assert meaning in out, meaning
    # The bundled trace's reads average hundreds of ms on a drive busy 7 % of
    # the time: the line under the latencies says it is the queue in bursts.
    report = json.loads(cli("run", "--json", cwd=tmp_path).stdout)
    host = next(c for c in report["device"]["by_cause"] if c["cause"] == "host")
    service_ms = 1000 * host["busy_s"] / (host["read_ops"] + host["write_ops"])
    assert report["latency"]["read"]["mean_ms"] > 10 * service_ms
    line = next(ln for ln in out.splitlines() if ln.startswith("host latency:"))
    assert f"against {stlsim.cli._ms(service_ms)} ms of device time per host operation" in line
    assert "queue (depth 64, first come first served) fills" in line
    assert "--explain says" not in out


def test_compare_explain_says_what_each_column_means(cli, tmp_path: Path) -> None:
    p = cli("compare", "--layer", "cmr,imr-rmw", "--limit", "500", "--explain", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "WAF: media sectors written" in p.stdout
    assert "disparity s: how much later than the trace's own time" in p.stdout
    assert "vs CMR s: final disparity minus the cmr run's" in p.stdout
    plain = cli("compare", "--layer", "cmr", "--limit", "500", cwd=tmp_path)
    assert plain.stdout.rstrip().splitlines()[-1] == "--explain says what each figure means"


# --------------------------------------------------------------------------
# Ctrl-C (issue 35)


def _wait_for_cpu(pid: int, seconds: float) -> None:
    """Wait until process ``pid`` has used ``seconds`` of CPU (Linux's
    /proc; elsewhere twice that of wall time), so a loaded machine's slow
    start-up is not mistaken for the replay."""
    import time

    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        time.sleep(2 * seconds)
        return
    tick = os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / tick >= seconds:  # utime + stime
            return
        time.sleep(0.05)


def test_ctrl_c_stops_run_with_one_line_and_130(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    trace = "synth:uniform,count=500000000,span_bytes=8GB,seed=1"
    env = dict(os.environ, PYTHONWARNINGS="error")
    proc = subprocess.Popen(
        [sys.executable, "-m", "stlsim", "run", "--trace", trace, "--mode", "flat-out"],
        cwd=tmp_path,
        env=env,
        # Ctrl-C as a terminal delivers it: a suite started in the background
        # by a non-interactive shell passes SIGINT on ignored, and Python then
        # never turns it into KeyboardInterrupt.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_cpu(proc.pid, 1.0)  # well into the replay: start-up takes a tenth of that
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        stopped = time.monotonic()
        out, err = proc.communicate(timeout=10)
        took = time.monotonic() - stopped
    finally:
        proc.kill()
        proc.communicate()  # closes the pipes, whatever happened above
    assert proc.returncode == 130, (proc.returncode, err)
    assert took < 3, took
    assert err == "stlsim: interrupted; nothing saved\n"
    assert out == ""
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_saving_says_what_is_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def save(self: object, directory: object, **how: object) -> None:
        Path(directory).mkdir()  # type: ignore[arg-type]
        (Path(directory) / "report.json").write_text("{")  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(stlsim.Result, "save", save)
    out = tmp_path / "r"
    assert cli.main(["run", "--limit", "100", "--out", str(out)]) == 130
    captured = capsys.readouterr()
    assert captured.err == f"stlsim: interrupted while saving in '{out}'; the files there are incomplete\n"
    assert cli.main(["layers", "--json"]) == 0  # the next command starts afresh


# --------------------------------------------------------------------------
# analyze --out and validate --out, like run: no overwrite without --force


def test_analyze_out_refuses_to_overwrite_without_force(cli, one_line_error, tmp_path: Path) -> None:
    assert cli("analyze", "--limit", "2000", "--out", "a", cwd=tmp_path).returncode == 0
    before = (tmp_path / "a" / "track_counts.parquet").read_bytes()
    line = one_line_error(cli("analyze", "--limit", "500", "--out", "a", cwd=tmp_path))
    assert "cannot save results in 'a': it holds an earlier run's files" in line and "use --force" in line
    assert (tmp_path / "a" / "track_counts.parquet").read_bytes() == before
    forced = cli("analyze", "--limit", "500", "--out", "a", "--force", "--plot-format", "svg", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "a" / "track_counts.parquet").read_bytes() != before
    assert (tmp_path / "a" / "hottest_cdf.svg").is_file()
    assert not (tmp_path / "a" / "hottest_cdf.png").exists()  # nothing stale left


def test_validate_out_refuses_to_overwrite_without_force(cli, one_line_error, tmp_path: Path, data: Path) -> None:
    args = ("validate", "--drive", "hp-c3323a", "--trace", str(data / "disksim" / "hp_c3323a.trace"), "--out", "v")
    assert cli(*args, cwd=tmp_path).returncode == 0
    (tmp_path / "v" / "requests.csv").write_text("mine\n")
    line = one_line_error(cli(*args, cwd=tmp_path))
    assert "cannot save results in 'v': it holds an earlier run's files (validation.json" in line and "use --force" in line
    assert (tmp_path / "v" / "requests.csv").read_text() == "mine\n"
    forced = cli(*args, "--force", "--plot-format", "svg", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "v" / "requests.csv").read_text() != "mine\n"
    assert (tmp_path / "v" / "validation_cdf.svg").is_file() and not (tmp_path / "v" / "validation_cdf.png").exists()


def test_the_repository_guard_sees_stray_output(tmp_path: Path) -> None:
    """conftest's session guard (no test leaves files in the repository)
    lists what a stray command leaves, and not a test run's own caches."""
    from conftest import repository_entries

    (tmp_path / "results").mkdir()
    before = repository_entries(tmp_path)
    for debris in ("__pycache__", ".pytest_cache", ".hypothesis", ".coverage"):
        (tmp_path / debris).mkdir()
    (tmp_path / "results" / "__pycache__").mkdir()
    assert repository_entries(tmp_path) == before
    (tmp_path / "results" / "compare-20261128-053732").mkdir()
    (tmp_path / "x.csv").write_text("")
    assert repository_entries(tmp_path) - before == {"results/compare-20261128-053732", "x.csv"}
