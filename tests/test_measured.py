"""Measured response times kept from the trace: DiskSim validate's SERVICE,
MSR's ResponseTime, blkparse requests paired with their completions
(``--pair-completions``); summed up by ``stlsim trace-info`` and kept by
``stlsim convert``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import stlsim
from stlsim.errors import ConfigError


def _info(*args: str) -> dict:
    p = subprocess.run([sys.executable, "-m", "stlsim", "trace-info", *args, "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_trace_info_pairs_blkparse_completions(data: Path) -> None:
    info = _info(str(data / "blktrace.txt.gz"), "--pair-completions")
    m = info["measured"]
    # 15,524 Q events, most merged into others: the ones issued as they were
    # (about a hundred) get their completion, at most one per C event (171).
    assert 0 < m["count"] <= 171 and m["count"] + info["measured_missing"] == info["requests"] == 15_524
    assert 0 < m["p50_ms"] <= m["p99_ms"] <= m["max_ms"] < 10_000 and 0 < m["mean_ms"] <= m["max_ms"]
    assert 0 < info["unpaired_completions"] < 171
    # D events are never merged: every one is paired (the alias --pair).
    d = _info(str(data / "blktrace.txt.gz"), "--pair", "--event", "D")
    assert d["measured"]["count"] == d["requests"] == 170 and d["measured_missing"] == 0
    # Without pairing there is nothing measured.
    plain = _info(str(data / "blktrace.txt.gz"))
    assert plain["measured"] is None and plain["requests"] == 15_524


def test_measured_columns_of_disksim_validate_and_msr(data: Path) -> None:
    v = stlsim.trace_info(str(data / "disksim" / "hp_c3323a.trace"))
    assert v["measured"]["count"] == 9_074 and v["measured"]["mean_ms"] == pytest.approx(15.765, abs=1e-3)
    msr = stlsim.trace_info(str(data / "rsrch_1.csv"))
    assert msr["measured"]["count"] == 13_780
    assert stlsim.trace_info(str(data / "cloudPhysicsIO.vscsi"))["measured"] is None


def test_convert_keeps_the_measured_responses(tmp_path: Path, data: Path) -> None:
    src = str(data / "blktrace.txt.gz")
    out = tmp_path / "paired.stlt"
    done = stlsim.convert(src, out, pair_completions=True)
    assert done["selection"]["pair"] is True
    before = stlsim.trace_info(src, pair_completions=True)
    after = _info(str(out))
    for k in ("measured", "measured_missing", "requests"):
        assert after[k] == before[k], k
    # The text output names them.
    p = subprocess.run([sys.executable, "-m", "stlsim", "trace-info", str(out)], capture_output=True, text=True)
    assert p.returncode == 0 and f"{before['measured']['count']:,} requests" in p.stdout, p.stdout + p.stderr


def test_pairing_is_refused_where_it_means_nothing(data: Path) -> None:
    with pytest.raises(ConfigError, match="Q \\(queued\\) or D"):
        stlsim.trace_info(str(data / "blktrace.txt.gz"), event="C", pair_completions=True)
    with pytest.raises(ConfigError, match="pairs blkparse requests"):
        stlsim.trace_info(str(data / "wdev_3.csv"), pair_completions=True)
    with pytest.raises(ConfigError, match="pair_completions"):
        stlsim.run(trace=str(data / "blktrace.txt.gz"), pair_completions="yes")
    # A run takes it (the replay does not use the measured times yet).
    r = stlsim.run(trace=str(data / "blktrace.txt.gz"), drive="cmr", fold=True, event="D", pair_completions=True)
    assert r.summary["requests"] == 170
