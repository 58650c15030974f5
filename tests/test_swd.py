"""Shingled write disks with static band mappings (paper 002): the swd-paper
drive, the SYN workload, the Figure 3 usage sweep and the user's errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import stlsim
from stlsim.config import check_drive, load_drive

MAPPINGS = ["swd-1234", "swd-r4123", "swd-124r3", "swd-14r23"]


def test_swd_paper_is_the_papers_drive() -> None:
    x = check_drive(load_drive("swd-paper"))
    # Section 5.1: 3,000 tracks of 1,000 blocks, bands of 4, W = 2, one surface.
    assert x["capacity_bytes"] == 2_400_000 * 512
    assert x["max_sectors_per_track"] == 1000
    assert x["space_gain"] == pytest.approx(1.6)
    # HP C3323A mechanics.
    assert x["rotation_ms"] == pytest.approx(60_000 / 5400)
    assert x["single_track_seek_ms"] == pytest.approx(1.178043)


def test_space_gain_of_any_configuration_is_equation_1() -> None:
    d = load_drive("swd-paper", {"layout": {"band_tracks": 5, "head_width_tracks": 3, "random_access_tracks": 12}, "tracks": 12 + 400 * 7})
    assert check_drive(d)["space_gain"] == pytest.approx(15 / 7)  # 2.143


def test_drives_and_layers_list_space_gain_and_mappings(cli) -> None:
    p = cli("drives")
    assert p.returncode == 0, p.stderr
    row = next(line for line in p.stdout.splitlines() if line.strip().startswith("swd-paper"))
    assert row.split()[-1] == "1.6"
    p = cli("layers", "--json")
    listed = {e["name"]: e for e in json.loads(p.stdout)}
    want = {"swd-1234": "1234", "swd-r4123": "R(4123)", "swd-124r3": "124R(3)", "swd-14r23": "14R(23)"}
    for name, mapping in want.items():
        params = {q["name"]: q for q in listed[name]["params"]}
        assert params["mapping"]["default"] == mapping
        assert listed[name]["layout"] == "smr"


def test_syn_ends_at_the_papers_last_lba(tmp_path: Path) -> None:
    # Table 1: SYN's largest LBA is 2,399,999 on the paper's drive.
    t = stlsim.synth_trace("sequential", usage=1.0, seed=7)
    s = t.summary("swd-paper")
    assert s["requests"] == 300_000
    path = tmp_path / "syn.csv"
    t.write(path, "swd-paper")
    last = path.read_text().splitlines()[-1].split(",")
    assert (int(last[4]) + int(last[5])) // 512 - 1 == 2_399_999


@pytest.mark.parametrize("layer", MAPPINGS)
def test_syn_amplifies_only_past_75_percent_and_not_under_1234(layer: str) -> None:
    # Section 5.4: SYN to 75 %: no mapping amplifies; to 100 %: 1234 does not,
    # the three new mappings average 1.5.
    def war(usage: float) -> float:
        r = stlsim.run(
            trace=stlsim.synth_trace("sequential", usage=usage, seed=1),
            drive="swd-paper",
            layer=layer,
            mode="scaled",
            prefill=0.0,
        )
        assert r.report["host"]["writes"] == int(usage * 300_000)
        return r.report["war"]

    assert war(0.75) == 1.0
    assert war(1.0) == (1.0 if layer == "swd-1234" else 1.5)


def test_figure_3_in_one_command(cli, tmp_path: Path, data: Path) -> None:
    out = tmp_path / "fig3"
    p = cli(
        "compare", "--drive", "swd-paper", "--layer", "cmr," + ",".join(MAPPINGS),
        "--usage", "25,50,75,100", "--trace", str(data / "rsrch_1.csv"), "--limit", "3000",
        "--mode", "scaled", "--scale", "200", "--out", str(out),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "paper 002 Figure 3" in p.stdout
    assert "cmr@" not in p.stdout  # one row per configuration, usage levels as columns
    df = pd.read_csv(out / "by_usage.csv")
    assert len(df) == 20 and (out / "by_usage.png").is_file()
    war = df.set_index(["config", "usage"])["war"]
    # Structure the mappings guarantee on any trace: nothing to damage below the usage
    # at which the first downstream neighbour fills.
    for u in (0.25, 0.5, 0.75, 1.0):
        assert war["cmr", u] == 1.0
    for u in (0.25, 0.5):
        assert war["swd-r4123", u] == 1.0 and war["swd-14r23", u] == 1.0
    for u in (0.25, 0.5, 0.75):
        assert 1.0 < war["swd-124r3", u] <= 3.0 + 1e-9
        assert war["swd-1234", u] > war["swd-124r3", u]
    # This trace's writes are mostly updates of full bands under 1234: far above 1.
    assert war["swd-1234", 0.25] > 3.0
    # Every mapping amplifies a full drive.
    for m in MAPPINGS:
        assert war[m, 1.0] > 3.0
    # Amplification costs time: the worst WAR is slower than CMR at every level.
    mean = df.set_index(["config", "usage"])["mean_ms"]
    for u in (0.25, 0.5, 0.75, 1.0):
        assert mean["swd-1234", u] > mean["cmr", u]


def test_usage_sweep_from_python(data: Path) -> None:
    c = stlsim.compare([{"layer": "cmr"}, {"layer": "swd-r4123"}], trace=data / "wdev_3.csv", drive="swd-paper", usages=[0.5, 1.0], mode="scaled")
    assert [r.label for r in c] == ["cmr@50%", "swd-r4123@50%", "cmr@100%", "swd-r4123@100%"]
    t = c.by_usage()
    assert list(t["config"]) == ["cmr", "swd-r4123", "cmr", "swd-r4123"]
    assert t.loc[(t["config"] == "swd-r4123") & (t["usage"] == 0.5), "war"].item() == 1.0
    assert all(r.report["prefill"]["spec"] == r.usage for r in c)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "--layer", "cmr", "--usage", "0,50"], "usage level"),
        (["compare", "--layer", "cmr", "--usage", "50", "--prefill", "0.5"], "either --usage or --prefill"),
        (["run", "--drive", "swd-paper", "--layer", "swd", "--param", "mapping=1235"], "track 5 is not in a band of 4"),
        (["run", "--drive", "swd-paper", "--layer", "swd-r4123", "--param", "mapping=1234"], "use layer 'swd'"),
        (["run", "--layer", "swd-1234"], "needs a drive with the 'smr' layout"),
    ],
)
def test_bad_swd_input_is_one_clear_line(cli, one_line_error, tmp_path: Path, args: list[str], message: str) -> None:
    line = one_line_error(cli(*args, cwd=tmp_path))
    assert message in line, line


def test_a_drive_without_a_random_access_zone_is_refused_with_the_fix(cli, one_line_error, tmp_path: Path) -> None:
    drive = tmp_path / "bare.toml"
    drive.write_text('preset = "swd-paper"\ntracks = 3000\n[layout]\nrandom_access_tracks = 0\n')
    line = one_line_error(cli("run", "--drive", str(drive), "--layer", "swd-1234", "--limit", "10", cwd=tmp_path))
    assert "random_access_tracks to at least" in line and "rescue_copy = false" in line, line
    # Without copies it runs (the paper's model).
    p = cli("run", "--drive", str(drive), "--layer", "swd-1234", "--param", "rescue_copy=false", "--limit", "10",
            "--prefill", "0.5", "--fold-to-prefill", "--json", cwd=tmp_path)  # fmt: skip
    assert p.returncode == 0, p.stderr


def test_any_mapping_runs_verified_through_the_generic_layer(data: Path) -> None:
    r = stlsim.run(
        trace=data / "wdev_1.csv", drive="swd-paper", layer="swd", params={"mapping": "R(43)12"},
        prefill=0.75, fold_to_prefill=True, verify=True, mode="scaled",
    )  # fmt: skip
    assert r.report["verification"]["mismatches"] == 0
    assert r.report["drive"]["mapping"] == "R(43)12"
