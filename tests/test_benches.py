"""The benchmark suite keeps up with the registry (issue 14): every layer
has an engine benchmark, and the table script reads criterion's files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import stlsim

ROOT = Path(__file__).resolve().parent.parent


def _layers_script():
    spec = importlib.util.spec_from_file_location("bench_layers", ROOT / "benches" / "layers.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_registered_layer_has_an_engine_benchmark() -> None:
    src = (ROOT / "crates" / "stlsim-core" / "benches" / "engine.rs").read_text()
    layers = _layers_script().registered_layers()
    assert len(layers) == len(set(layers)) >= 19
    # The IMR benchmarks take their layers from the registry; the rest are named.
    assert '.filter(|n| n.starts_with("imr-"))' in src
    missing = [n for n in layers if not (n.startswith("imr-") or f'"{n}"' in src)]
    assert not missing, f"layers without an engine benchmark in benches/engine.rs: {missing}"


def test_the_table_reads_criterions_estimates(tmp_path: Path, monkeypatch) -> None:
    m = _layers_script()
    bench = tmp_path / "engine-zoned" / "hm-fluid-cloudphysics" / "new"
    bench.mkdir(parents=True)
    (bench / "benchmark.json").write_text(json.dumps(
        {"group_id": "engine-zoned", "function_id": "hm-fluid-cloudphysics", "throughput": {"Elements": 1000}}))
    (bench / "estimates.json").write_text(json.dumps({"median": {"point_estimate": 2e6}}))  # 2 ms
    monkeypatch.setattr(m, "CRITERION", tmp_path)
    assert m.estimates() == {"engine-zoned/hm-fluid-cloudphysics": 500_000.0}
    assert m.covers("engine-zoned/hm-fluid-cloudphysics", "hm-fluid")
    assert not m.covers("engine-zoned/hm-fluid-loop-cloudphysics", "hm-fluid-loop-x")
    assert m.covers("engine-cmr-queue/cache-on", "cmr")
    # The reference figures name benchmarks that exist.
    reference = json.loads((ROOT / "benches" / "layer_figures.json").read_text())
    src = (ROOT / "crates" / "stlsim-core" / "benches" / "engine.rs").read_text()
    for key in reference:
        assert key.split("/")[0] in src, key
    assert stlsim.layers() is not None
