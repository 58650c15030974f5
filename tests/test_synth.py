"""Synthetic traces: `stlsim synth`, `--trace synth:...` and `stlsim.synth_trace`."""

from __future__ import annotations

import csv
import gzip
import json
import statistics
from pathlib import Path

import pytest

import stlsim
from stlsim.config import check_drive, load_drive
from stlsim.synth import parse_bytes, parse_synth

GIB = 2**30


@pytest.fixture()
def small_drive(tmp_path: Path) -> Path:
    """imr-paper cut down to 1 GiB (1 % usage: 2,621 requests of 4 KiB)."""
    p = tmp_path / "small.toml"
    p.write_text('preset = "imr-paper"\ncapacity_gib = 1.0\n')
    assert check_drive(load_drive(str(p)))["capacity_bytes"] == GIB
    return p


def _rows(path: Path) -> list[list[str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as f:
        return list(csv.reader(f))


def _json(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _without_trace_name(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in ("trace", "wall_s", "elapsed_s")}


# --------------------------------------------------------------------------
# stlsim synth
# --------------------------------------------------------------------------


def test_sequential_file_is_the_papers_syn_and_replays(cli, tmp_path: Path, small_drive: Path) -> None:
    out = tmp_path / "syn.csv"
    p = cli("synth", "sequential", "--usage", "0.01", "--drive", str(small_drive), "--seed", "1", "-o", str(out))
    assert p.returncode == 0, p.stderr
    want = int(0.01 * GIB) // 4096
    assert f"wrote {want:,} requests" in p.stderr and p.stdout == ""
    rows = _rows(out)
    assert len(rows) == want
    assert all(len(r) == 7 and r[1] == "synth" and r[2] == "0" and r[3] == "Write" and r[6] == "0" for r in rows)
    offsets = [int(r[4]) for r in rows]
    sizes = [int(r[5]) for r in rows]
    assert offsets == [4096 * i for i in range(want)]  # contiguous from 0
    assert set(sizes) == {4096}
    ticks = [int(r[0]) for r in rows]
    assert ticks[0] == 0
    gaps_ms = [(b - a) / 1e4 for a, b in zip(ticks, ticks[1:])]  # 100 ns ticks -> ms
    assert min(gaps_ms) >= 0
    assert abs(statistics.mean(gaps_ms) - 50) < 1.0
    assert abs(statistics.stdev(gaps_ms) - 10) < 1.0

    # The file replays, and gives the same run as generating the trace on the fly.
    common = ["--drive", str(small_drive), "--prefill", "0", "--json"]
    from_file = _json(cli("run", "--trace", str(out), *common, cwd=tmp_path))
    assert from_file["host"]["requests"] == want and from_file["host"]["writes"] == want
    assert from_file["trace"] == str(out)
    text = "synth:sequential,usage=0.01,seed=1"
    on_the_fly = _json(cli("run", "--trace", text, *common, cwd=tmp_path))
    assert on_the_fly["trace"] == text
    assert _without_trace_name(on_the_fly) == _without_trace_name(from_file)


def test_uniform_file(cli, tmp_path: Path) -> None:
    out = tmp_path / "u.csv.gz"
    p = cli(
        "synth", "uniform",
        "--count", "4000", "--span-bytes", "1GiB", "--start-bytes", "1MiB",
        "--request-bytes", "512000", "--align-bytes", "4096", "--write-fraction", "0.25",
        "--iat-mean-ms", "2", "--iat-sd-ms", "0", "--seed", "7", "-o", str(out), "--json",
    )  # fmt: skip
    summary = _json(p)
    assert summary["requests"] == 4000 and summary["spec"]["span_bytes"] == GIB
    assert summary["trace"].startswith("synth:uniform,")
    rows = _rows(out)
    assert len(rows) == 4000
    for r in rows:
        off, size = int(r[4]), int(r[5])
        assert size == 512_000
        assert 2**20 <= off and off + size <= 2**20 + GIB
        assert (off - 2**20) % 4096 == 0
    writes = sum(r[3] == "Write" for r in rows)
    assert 850 < writes < 1150
    ticks = [int(r[0]) for r in rows]
    assert ticks == [20_000 * i for i in range(4000)]  # constant 2 ms gaps
    assert len({r[4] for r in rows}) > 3900  # spread, not stuck


def test_same_seed_same_file(cli, tmp_path: Path) -> None:
    def make(name: str, seed: str) -> bytes:
        f = tmp_path / name
        p = cli("synth", "uniform", "--count", "500", "--span-bytes", "100MB", "--seed", seed, "-o", str(f))
        assert p.returncode == 0, p.stderr
        return f.read_bytes()

    a, b, c = make("a.csv", "3"), make("b.csv", "3"), make("c.csv", "4")
    assert a == b
    assert a != c and len(a.splitlines()) == len(c.splitlines()) == 500


def test_synth_refuses_to_overwrite(cli, one_line_error, tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("precious\n")
    line = one_line_error(cli("synth", "sequential", "--total-bytes", "8192", "-o", str(f)))
    assert "exists" in line and "--force" in line
    assert f.read_text() == "precious\n"
    assert cli("synth", "sequential", "--total-bytes", "8192", "-o", str(f), "--force").returncode == 0
    assert len(_rows(f)) == 2


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["synth"], "required: KIND"),
        (["synth", "zipf", "-o", "x.csv"], "invalid choice: 'zipf'"),
        (["synth", "sequential", "--total-bytes", "1GB"], "required: -o/--output"),
        (["synth", "sequential", "-o", "x.csv"], "needs total_bytes (or usage)"),
        (["synth", "sequential", "--total-bytes", "0", "-o", "x.csv"], "total_bytes must be positive"),
        (["synth", "sequential", "--total-bytes", "4 parsecs", "-o", "x.csv"], "total_bytes must be a byte count"),
        (["synth", "sequential", "--usage", "0.5", "--total-bytes", "1GB", "-o", "x.csv"], "usage or total_bytes, not both"),
        (["synth", "sequential", "--usage", "-1", "-o", "x.csv"], "usage must be a positive fraction"),
        (["synth", "sequential", "--usage", "0.5", "--drive", "nope", "-o", "x.csv"], "unknown drive 'nope'"),
        (["synth", "sequential", "--count", "5", "-o", "x.csv"], "unrecognized arguments: --count"),
        (["synth", "uniform", "--count", "5", "--span-bytes", "100", "-o", "x.csv"], "span_bytes (100) is smaller than request_bytes (4096)"),
        (["synth", "uniform", "--count", "5", "--usage", "0.1", "--iat-sd-ms", "-2", "-o", "x.csv"], "iat_sd_ms must be a non-negative number"),
        (["synth", "uniform", "--count", "5", "--usage", "0.1", "--write-fraction", "2", "-o", "x.csv"], "write_fraction must be between 0 and 1"),
        (["synth", "uniform", "--count", "x", "--usage", "0.1", "-o", "x.csv"], "count must be a non-negative integer"),
        (["run", "--trace", "synth:", "--limit", "5"], "expected synth:KIND"),
        (["run", "--trace", "synth:zipf,count=5"], "unknown kind 'zipf'"),
        (["run", "--trace", "synth:uniform,count=5,span_bytes"], "expected KEY=VALUE, got 'span_bytes'"),
        (["run", "--trace", "synth:uniform,count=5,usage=0.1,usage=0.2"], "usage given twice"),
        (["run", "--trace", "synth:uniform,count=5,usage=0.1,sead=1"], "unknown field 'sead'"),
        (["run", "--trace", "synth:sequential,usage=0.1,count=5"], "count does not apply to kind sequential"),
        (["run", "--trace", "synth:uniform,usage=0.1"], "kind uniform needs count"),
        (["run", "--trace", "synth:sequential,usage=1e-12"], "less than one request"),
        (["run", "--trace", "synth:sequential,usage=0.1", "--disk", "1"], "'disk' does not apply to a synthetic trace"),
        (["compare", "--layer", "cmr", "--trace", "synth:uniform,count=0,usage=0.1"], "count must be positive"),
        (["analyze", "--trace", "synth:uniform,count=5,span_bytes=1x"], "span_bytes must be a byte count"),
    ],
)
def test_malformed_synth_is_one_line_error(cli, one_line_error, tmp_path: Path, args: list[str], needle: str) -> None:
    line = one_line_error(cli(*args, cwd=tmp_path))
    assert needle in line, line
    assert not (tmp_path / "x.csv").exists()


# --------------------------------------------------------------------------
# --trace synth:... in run, compare, analyze
# --------------------------------------------------------------------------


def test_run_usage_resolves_against_the_drive_simulated(cli, tmp_path: Path, small_drive: Path) -> None:
    r = _json(cli("run", "--trace", "synth:sequential,usage=0.02", "--drive", str(small_drive), "--prefill", "0", "--json"))
    assert r["host"]["requests"] == int(0.02 * GIB) // 4096
    # start/limit/repeat apply as to a file.
    r = _json(
        cli(
            "run", "--trace", "synth:uniform,count=3000,usage=1,request_bytes=64KiB,write_fraction=0.5,seed=2",
            "--drive", str(small_drive), "--start", "1000", "--limit", "500", "--repeat", "2", "--json",
        )  # fmt: skip
    )
    assert r["host"]["requests"] == 1000
    assert 0 < r["host"]["reads"] < 1000


def test_compare_and_analyze_take_a_synth_trace(cli, tmp_path: Path, small_drive: Path) -> None:
    text = "synth:uniform,count=2000,usage=0.5,seed=5"
    p = cli("compare", "--layer", "cmr", "--layer", "cmr", "--trace", text, "--drive", str(small_drive), "--json", "--out", "cmp", cwd=tmp_path)
    rows = _json(p)
    assert [r["requests"] for r in rows] == [2000, 2000]
    cfg = json.loads((tmp_path / "cmp" / "cmr" / "config.json").read_text())
    assert cfg["trace"]["path"] == text
    assert cfg["trace"]["synth"]["span_bytes"] == GIB // 2 and cfg["trace"]["synth"]["seed"] == 5
    a = _json(cli("analyze", "--trace", text, "--drive", str(small_drive), "--json", cwd=tmp_path))
    assert a["summary"]["requests"] == 2000 and a["summary"]["write_requests"] == 2000


# --------------------------------------------------------------------------
# Python API
# --------------------------------------------------------------------------


def test_api_synth_trace(tmp_path: Path, small_drive: Path) -> None:
    syn = stlsim.synth_trace("sequential", usage=0.01, seed=1)
    assert str(syn) == "synth:sequential,seed=1,usage=0.01"
    assert syn == parse_synth("synth:sequential,usage=0.01,seed=1")
    spec = syn.spec(str(small_drive))
    assert spec == {
        "kind": "sequential",
        "request_bytes": 4096,
        "start_bytes": 0,
        "total_bytes": int(0.01 * GIB) // 4096 * 4096,
        "iat_mean_ms": 50.0,
        "iat_sd_ms": 10.0,
        "seed": 1,
    }
    r = stlsim.run(trace=syn, drive=str(small_drive), prefill=0)
    assert r.report["trace"] == "synth:sequential,seed=1,usage=0.01"
    assert r.report["host"]["requests"] == int(0.01 * GIB) // 4096
    # The same as its file, written compressed.
    f = tmp_path / "syn.csv.gz"
    assert syn.write(f, str(small_drive)) == r.report["host"]["requests"]
    again = stlsim.run(trace=f, drive=str(small_drive), prefill=0)
    assert again.summary["p99_ms"] == r.summary["p99_ms"]
    assert again.report["host"] == r.report["host"]
    # The text form is accepted too.
    r2 = stlsim.run(trace="synth:uniform,count=300,span_bytes=64MiB", drive=str(small_drive))
    assert r2.report["host"]["requests"] == 300


def test_api_errors_are_config_errors() -> None:
    with pytest.raises(stlsim.ConfigError, match="span_bytes must be a byte count"):
        stlsim.synth_trace("uniform", count=5, span_bytes="lots")
    with pytest.raises(stlsim.ConfigError, match="unknown kind 'random'"):
        stlsim.synth_trace("random")
    with pytest.raises(stlsim.ConfigError, match="needs count"):
        stlsim.run(trace=stlsim.synth_trace("uniform", usage=0.1))
    with pytest.raises(stlsim.ConfigError, match="'format' does not apply"):
        stlsim.run(trace="synth:sequential,total_bytes=1MB", format="msr")


def test_config_file_synth_path_is_not_a_relative_file(tmp_path: Path) -> None:
    conf = tmp_path / "syn.toml"
    conf.write_text('[trace]\npath = "synth:uniform,count=100,span_bytes=1GiB"\n')
    s = stlsim.load_run_config(conf)
    assert s["trace"] == parse_synth("synth:uniform,count=100,span_bytes=1GiB")
    r = stlsim.run(config=conf)
    assert r.report["host"]["requests"] == 100


@pytest.mark.parametrize(
    ("text", "want"),
    [("4096", 4096), ("1_000", 1000), ("500KB", 500_000), ("4 KiB", 4096), ("1.5GiB", 3 * 2**29), ("2TB", 2 * 10**12), ("1.1KB", 1100), ("0.3KB", 300), (512, 512)],
)
def test_parse_bytes(text: object, want: int) -> None:
    assert parse_bytes(text) == want


@pytest.mark.parametrize("text", ["", "KB", "1.5", "0.0003KB", "1e-3", "-1", "5 parsecs", True])
def test_parse_bytes_rejects(text: object) -> None:
    with pytest.raises(stlsim.ConfigError):
        parse_bytes(text)
