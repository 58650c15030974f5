"""The core's module graph (issue 36): the trace readers are a leaf, each
part takes its own settings with the drive description above them, the
report sits with the engine, and no module circles back
(scripts/module_graph.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _graph():
    spec = importlib.util.spec_from_file_location("module_graph", ROOT / "scripts" / "module_graph.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    g = mod.edges()
    return g, mod.circles(g)


def test_the_trace_readers_depend_on_nothing_above_them() -> None:
    g, cs = _graph()
    # Readers, detection and the binary form: errors, units and the spelling of names only.
    assert g["trace"] <= {"error", "units", "spelling"}, g["trace"]
    # What looks at a trace with a drive (trace-info, track writes) sits above both.
    assert {"trace", "drive"} <= g["analysis"]
    assert not any(m in c for c in cs for m in ("trace", "analysis", "units", "error", "spelling", "cause"))


def test_why_an_operation_was_issued_is_a_leaf_below_the_devices() -> None:
    g, _ = _graph()
    # Cause and OpCounts: named by the device, the side devices and the report.
    assert g["cause"] <= {"units"}, g["cause"]
    assert "device" not in g["side_device"], g["side_device"]


def test_no_circles_among_the_core_modules() -> None:
    _, cs = _graph()
    # 2026-11-28: the last two ({controller, device, front_end, geometry,
    # mechanics, medium, side_device} and {engine, layers, metrics}) removed.
    assert cs == [], cs


def test_the_drive_description_sits_above_the_parts_it_configures() -> None:
    g, _ = _graph()
    parts = ("geometry", "mechanics", "medium", "front_end", "side_device", "device")
    for part in parts:
        assert "drive" not in g[part], (part, g[part])
    # The geometry is the bottom of the drive: tracks, zones and layouts only.
    assert g["geometry"] <= {"choice", "error", "spelling", "units"}, g["geometry"]
    assert {"geometry", "mechanics", "front_end", "side_device"} <= g["drive"]


def test_the_front_end_is_one_module_below_the_device_and_the_engine() -> None:
    g, _ = _graph()
    # Both placements (above a drive-managed layer, owned by the engine;
    # beneath a host-side one, owned by the device) are built from its parts.
    assert "controller" not in g, sorted(g)
    assert "front_end" in g["engine"] and "front_end" in g["device"]
    assert not ({"device", "drive", "layers", "engine"} & g["front_end"]), g["front_end"]


def test_layers_and_metrics_sit_below_the_engine() -> None:
    g, _ = _graph()
    assert "engine" not in g["layers"], g["layers"]
    assert not ({"engine", "layers"} & g["metrics"]), g["metrics"]


def test_the_graph_sees_a_circle_and_ignores_doc_links(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("module_graph", ROOT / "scripts" / "module_graph.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "mod.rs").write_text("use crate::b::X;\n/// see [`crate::c::Y`]\n")
    (tmp_path / "b.rs").write_text("pub fn f() { crate::a::g() }\n")
    (tmp_path / "c.rs").write_text("use crate::a::Z;\n#[cfg(test)]\nmod tests { use crate::b::Q; }\n")
    (tmp_path / "d.rs").write_text("use crate::c::Z;\n#[cfg(test)]\nmod timing_tests {\n    use crate::a::Q;\n}\n")
    g = mod.edges(tmp_path)
    assert g == {"a": {"b"}, "b": {"a"}, "c": {"a"}, "d": {"c"}}
    assert mod.circles(g) == [["a", "b"]]


def test_the_architecture_page_gives_the_graphs_order() -> None:
    spec = importlib.util.spec_from_file_location("module_graph", ROOT / "scripts" / "module_graph.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    order = mod.levels(mod.edges())
    page = (ROOT / "docs" / "architecture.md").read_text()
    listed = [line for line in page.splitlines() if line[:1].isdigit() and ". " in line[:4]]
    assert listed == [f"{i}. " + ", ".join(ms) for i, ms in enumerate(order)], listed
