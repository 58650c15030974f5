"""The presets' drive model (issue 30): every paper preset on the physical
mechanics with its values derived as documented, sequential writes charged
what the platter charges, and host-managed drives refusing layers that are
not zone-aware."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import stlsim

ROOT = Path(__file__).parent.parent
PAPER_PRESETS = ["imr-paper", "swd-paper", "dmsmr-5tb", "dmsmr-small", "exos-x18z", "exos-small", "hwsr-paper", "cmr"]


def _script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("preset", PAPER_PRESETS)
def test_paper_presets_run_the_physical_model(preset: str) -> None:
    """No preset takes the analytic half-rotation shortcut; each has the
    command overheads of a controller."""
    d = stlsim.load_drive(preset)
    assert d["rotation"] == "angular"
    assert d["controller"]["write_miss_after_write_ms"] > 0
    assert d["controller"]["read_miss_after_read_ms"] > 0
    zones = d.get("zones") or []
    if preset != "swd-paper":  # DiskSim's HP C3323A mechanics, skews of its own
        assert zones and all(z["cylinder_skew_sectors"] > 0 for z in zones)


def test_preset_skews_are_the_documented_derivation() -> None:
    """scripts/preset_skews.py --check: every paper preset's skew equals the
    rule its docs give (1.2 x the one-track write move, in sectors)."""
    p = _script("preset_skews.py", "--check")
    assert p.returncode == 0, p.stderr


def test_sequential_qd1_writes_cost_at_least_half_a_revolution_on_every_preset() -> None:
    """docs/drive-model.md's table is what scripts/drive_model_table.py
    prints, and no preset streams 4 KiB QD1 writes with the cache off for
    less than half a revolution each."""
    p = _script("drive_model_table.py")
    assert p.returncode == 0, p.stderr
    rows = [r for r in p.stdout.splitlines() if r.startswith("| ") and not r.startswith("| preset")]
    assert len(rows) >= 16
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        assert float(cells[-1]) >= 0.5, r
    doc = (ROOT / "docs" / "drive-model.md").read_text()
    missing = [r for r in rows if r not in doc]
    assert not missing, "docs/drive-model.md differs from scripts/drive_model_table.py:\n" + "\n".join(missing)


def _zoned_presets() -> list[str]:
    names = [d["name"] for d in stlsim.drives()]
    return [n for n in names if stlsim.load_drive(n).get("layout", {}).get("kind") == "zoned"]


def test_host_managed_drives_refuse_every_layer_that_is_not_zone_aware() -> None:
    """Registry-driven: on every host-managed preset, each layer whose
    layout is not `zoned` is refused before it runs, in one line naming the
    drive and the layer; the zoned layers run."""
    zoned = _zoned_presets()
    assert {"exos-x18z", "exos-small"} <= set(zoned)
    layers = stlsim.layers()
    refused = [e["name"] for e in layers if e["layout"] != "zoned"]
    aware = [e["name"] for e in layers if e["layout"] == "zoned"]
    assert "cmr" in refused and "buffered-cmr" in refused and len(aware) == 4
    trace = "synth:sequential,total_bytes=64KB,request_bytes=4096"
    for drive in zoned:
        for layer in refused:
            with pytest.raises(stlsim.ConfigError) as e:
                stlsim.run(trace=trace, drive=drive, layer=layer)
            msg = str(e.value)
            assert "\n" not in msg and layer in msg and drive in msg, msg
        for layer in aware:  # buffers sized from the trace's range: give them one
            stlsim.run(trace="synth:uniform,count=50,span_bytes=1GB,seed=1", drive=drive, layer=layer, mode="flat-out")


def test_zone_refusal_on_the_command_line_is_one_line() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "run", "--drive", "exos-small", "--layer", "cmr",
         "--trace", "synth:sequential,total_bytes=64KB,request_bytes=4096"],
        capture_output=True, text=True, timeout=120,
    )
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "not zone-aware" in lines[0] and "exos-small" in lines[0], p.stderr
    assert "Traceback" not in p.stderr
