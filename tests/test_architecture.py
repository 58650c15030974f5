"""The core's module graph (issue 36): the trace readers are a leaf, and
the circles among the modules only shrink (scripts/module_graph.py)."""

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
    assert {"trace", "geometry"} <= g["analysis"]
    assert not any(m in c for c in cs for m in ("trace", "analysis", "units", "error", "spelling", "cause"))


def test_why_an_operation_was_issued_is_a_leaf_below_the_devices() -> None:
    g, _ = _graph()
    # Cause and OpCounts: named by the device, the side devices and the report.
    assert g["cause"] <= {"units"}, g["cause"]
    assert "device" not in g["side_device"], g["side_device"]


def test_the_circles_among_the_core_modules_only_shrink() -> None:
    _, cs = _graph()
    # 2026-11-28: {controller, device, front_end, geometry, mechanics, medium,
    # side_device} and {engine, layers, metrics}. Lower this as issue 36 goes on.
    assert sum(len(c) for c in cs) <= 10, cs


def test_the_graph_sees_a_circle_and_ignores_doc_links(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("module_graph", ROOT / "scripts" / "module_graph.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "mod.rs").write_text("use crate::b::X;\n/// see [`crate::c::Y`]\n")
    (tmp_path / "b.rs").write_text("pub fn f() { crate::a::g() }\n")
    (tmp_path / "c.rs").write_text("use crate::a::Z;\n#[cfg(test)]\nmod tests { use crate::b::Q; }\n")
    g = mod.edges(tmp_path)
    assert g == {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert mod.circles(g) == [["a", "b"]]
