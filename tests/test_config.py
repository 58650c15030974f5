"""Configuration: drive presets, run-config files, parameters, init-config."""

from __future__ import annotations

import json
import string
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import stlsim
from stlsim import ConfigError
from stlsim.config import DEFAULTS, deep_merge, init_config_text, load_drive, load_run_config, parse_param

# --------------------------------------------------------------------------
# Drives
# --------------------------------------------------------------------------


def test_drives_lists_the_presets() -> None:
    listed = {d["name"]: d for d in stlsim.drives()}
    assert {"imr-paper", "cmr"} <= set(listed)
    for d in listed.values():
        assert d["description"]
        assert Path(d["path"]).is_file()


@pytest.mark.parametrize("name", [d["name"] for d in stlsim.drives()])
def test_every_preset_is_valid(name: str) -> None:
    d = load_drive(name)
    assert d["name"] == name
    figures = stlsim.config.check_drive(d)
    assert figures["capacity_bytes"] > 0
    assert figures["tracks"] > 0


def test_imr_paper_preset_matches_the_paper() -> None:
    fig = stlsim.config.check_drive(load_drive("imr-paper"))
    assert fig["rotation_ms"] == pytest.approx(10.0)  # 6000 RPM
    assert fig["single_track_seek_ms"] == pytest.approx(2.0)
    assert fig["full_stroke_seek_ms"] == pytest.approx(20.0)
    assert fig["max_sectors_per_track"] * fig["sector_bytes"] == 2 * 1024 * 1024


def test_overrides_merge_tables_key_by_key() -> None:
    base = load_drive("imr-paper")
    d = load_drive("imr-paper", {"seek": {"max_ms": 25.0}, "rpm": 5400.0})
    assert d["seek"] == {**base["seek"], "max_ms": 25.0}
    assert d["rpm"] == 5400.0
    assert d["layout"] == base["layout"]
    assert stlsim.config.check_drive(d)["full_stroke_seek_ms"] == pytest.approx(25.0)


def test_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(ConfigError, match=r"unknown drive 'nope' \(presets: .*cmr.*imr-paper"):
        load_drive("nope")


def test_drive_file_with_preset_and_name_from_file(tmp_path: Path) -> None:
    f = tmp_path / "slow-imr.toml"
    f.write_text('preset = "imr-paper"\nrpm = 5400.0\n[seek]\nmax_ms = 22.0\n')
    d = load_drive(f)
    assert d["name"] == "slow-imr"
    assert d["rpm"] == 5400.0
    assert d["seek"]["min_ms"] == 2.0 and d["seek"]["max_ms"] == 22.0
    assert d["layout"]["kind"] == "imr"


def test_drive_file_errors_name_the_file(tmp_path: Path) -> None:
    syntax = tmp_path / "syntax.toml"
    syntax.write_text("rpm = = 3\n")
    with pytest.raises(ConfigError, match="syntax.toml: invalid TOML"):
        load_drive(syntax)
    geometry = tmp_path / "geometry.toml"
    geometry.write_text('preset = "imr-paper"\nsector_bytes = 1000\n')
    with pytest.raises(ConfigError, match=r"geometry\.toml.*sector_bytes 1000"):
        load_drive(geometry)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('preset = "imr-paper"\nspindles = 2\n')
    with pytest.raises(ConfigError, match=r"unknown\.toml.*unknown field `spindles`"):
        load_drive(unknown)
    with pytest.raises(ConfigError, match="drive file .*missing.toml' not found"):
        load_drive(tmp_path / "missing.toml")


# --------------------------------------------------------------------------
# Layers and --param
# --------------------------------------------------------------------------


def test_layers_listing_shape() -> None:
    listed = stlsim.layers()
    names = [e["name"] for e in listed]
    assert "cmr" in names
    assert len(names) == len(set(names))
    for e in listed:
        assert {"name", "summary", "paper", "layout", "params"} <= set(e)
        for p in e["params"]:
            assert {"name", "kind", "unit", "default", "doc"} <= set(p)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cache_tracks=100", ("cache_tracks", "100")),
        (" cache_tracks = 100 ", ("cache_tracks", "100")),
        ("policy=a=b", ("policy", "a=b")),
        ("flag=", ("flag", "")),
    ],
)
def test_parse_param(text: str, expected: tuple[str, str]) -> None:
    assert parse_param(text) == expected


@pytest.mark.parametrize("text", ["cache_tracks", "=3", "", "two words=1"])
def test_parse_param_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="expected NAME=VALUE"):
        parse_param(text)


NAMES = st.text(alphabet=string.ascii_letters + string.digits + "_.-", min_size=1, max_size=20)
VALUES = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), max_size=20)


@given(name=NAMES, value=VALUES)
def test_parse_param_round_trips(name: str, value: str) -> None:
    assert parse_param(f"{name}={value}") == (name, value.strip())


@given(text=st.text(max_size=30).filter(lambda t: "=" not in t))
def test_parse_param_without_equals_is_an_error(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_param(text)


# --------------------------------------------------------------------------
# Run-configuration files
# --------------------------------------------------------------------------


def _write(tmp_path: Path, text: str, name: str = "run.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_run_config_maps_sections_onto_settings(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        """
label = "exp1"
verify = true
crash_after = [10, 20]
[trace]
path = "/abs/trace.csv"
format = "msr"
disk = 1
start = 5
limit = 100
[drive]
preset = "cmr"
rpm = 5400.0
[layer]
name = "cmr"
[layer.params]
x = 1
[replay]
mode = "scaled"
queue_depth = 8
scale = 2
write_cache = false
fold = true
series_every = 50
""",
    )
    s = load_run_config(p)
    assert s == {
        "label": "exp1",
        "verify": True,
        "crash_after": [10, 20],
        "trace": "/abs/trace.csv",
        "format": "msr",
        "disk": 1,
        "start": 5,
        "limit": 100,
        "drive": {"preset": "cmr", "rpm": 5400.0},
        "layer": "cmr",
        "params": {"x": 1},
        "mode": "scaled",
        "queue_depth": 8,
        "scale": 2.0,
        "write_cache": False,
        "fold": True,
        "series_every": 50,
    }


def test_run_config_label_defaults_to_the_file_name(tmp_path: Path) -> None:
    assert load_run_config(_write(tmp_path, "", "baseline.toml"))["label"] == "baseline"
    assert load_run_config(_write(tmp_path, 'label = ""\n', "other.toml"))["label"] == "other"


def test_unknown_top_level_key_names_file_and_key(tmp_path: Path) -> None:
    p = _write(tmp_path, 'lable = "typo"\n', "typo.toml")
    with pytest.raises(ConfigError, match=r"typo\.toml: unknown key 'lable'"):
        load_run_config(p)


def test_unknown_section_key_names_file_and_key(tmp_path: Path) -> None:
    p = _write(tmp_path, "[replay]\nqueue_dept = 4\n", "typo.toml")
    with pytest.raises(ConfigError, match=r"typo\.toml: unknown key 'replay\.queue_dept'"):
        load_run_config(p)


def test_ill_typed_value_names_file_and_key(tmp_path: Path) -> None:
    p = _write(tmp_path, '[replay]\nqueue_depth = "64"\n', "types.toml")
    with pytest.raises(ConfigError, match=r"types\.toml: replay\.queue_depth must be a non-negative integer"):
        load_run_config(p)
    p = _write(tmp_path, '[replay]\nmode = "fast"\n', "mode.toml")
    with pytest.raises(ConfigError, match=r"mode\.toml: replay\.mode must be one of queue, flat-out, scaled"):
        load_run_config(p)


def test_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    p = _write(tmp_path, "[trace\n", "broken.toml")
    with pytest.raises(ConfigError, match=r"broken\.toml: invalid TOML"):
        load_run_config(p)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file .*absent.toml' not found"):
        load_run_config(tmp_path / "absent.toml")


def test_dict_configs_accept_string_shorthands() -> None:
    assert load_run_config({"layer": "cmr", "drive": "cmr"}) == {"layer": "cmr", "drive": "cmr"}
    with pytest.raises(ConfigError, match="unknown key 'params'"):
        load_run_config({"params": {}})


# Hypothesis: any valid settings written as TOML read back unchanged.

REPLAY = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.sampled_from(["queue", "flat-out", "scaled"]),
        "queue_depth": st.integers(1, 10_000),
        "scale": st.floats(min_value=1e-3, max_value=1e3, allow_nan=False),
        "write_cache": st.booleans(),
        "fold": st.booleans(),
        "series_every": st.integers(1, 10**6),
    },
)
TRACE = st.fixed_dictionaries(
    {},
    optional={
        "format": st.sampled_from(["msr", "spc", "vscsi", "cloudphysics-csv", "csv"]),
        "disk": st.integers(0, 100),
        "start": st.integers(0, 10**9),
        "limit": st.integers(0, 10**9),
    },
)
TOP = st.fixed_dictionaries(
    {},
    optional={
        "label": st.text(alphabet=string.ascii_letters + "-_ ", min_size=1, max_size=12),
        "verify": st.booleans(),
        "crash_after": st.lists(st.integers(0, 10**6), max_size=4),
    },
)


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    return "[" + ", ".join(_toml(x) for x in v) + "]"


@given(top=TOP, trace=TRACE, replay=REPLAY)
def test_settings_round_trip_through_toml(top: dict, trace: dict, replay: dict) -> None:
    text = "".join(f"{k} = {_toml(v)}\n" for k, v in top.items())
    text += "[trace]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in trace.items())
    text += "[replay]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in replay.items())
    tree = tomllib.loads(text)
    s = load_run_config(tree)
    expected = {**top, **trace, **replay}
    assert s == expected
    assert set(s) <= set(DEFAULTS)


@given(
    base=st.recursive(st.integers() | st.text(max_size=3), lambda c: st.dictionaries(st.text(max_size=3), c, max_size=3), max_leaves=8),
    over=st.recursive(st.integers() | st.text(max_size=3), lambda c: st.dictionaries(st.text(max_size=3), c, max_size=3), max_leaves=8),
)
def test_deep_merge_properties(base: Any, over: Any) -> None:
    if not (isinstance(base, dict) and isinstance(over, dict)):
        return
    before = json.dumps(base, sort_keys=True)
    m = deep_merge(base, over)
    assert json.dumps(base, sort_keys=True) == before  # inputs untouched
    assert set(m) == set(base) | set(over)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            assert m[k] == deep_merge(base[k], v)
        else:
            assert m[k] == v
    assert deep_merge(m, over) == m  # idempotent


# --------------------------------------------------------------------------
# init-config
# --------------------------------------------------------------------------


def test_init_config_parses_and_holds_every_setting() -> None:
    text = init_config_text()
    tree = tomllib.loads(text)
    assert set(tree) == {"label", "verify", "crash_after", "crash_at_ops", "trace", "drive", "layer", "replay"}
    assert tree["drive"]["preset"] == "imr-paper"
    assert tree["layer"]["name"] == "cmr"
    settings = load_run_config(tree)
    commented = {"disk", "event", "limit", "write_cache", "prefill", "history", "only", "time_from_s", "time_to_s", "file_extent_mib", "rate_iops"}  # None defaults: present as commented lines
    for key, default in DEFAULTS.items():
        if key in ("label", "trace", "drive", "params", "csv") or key in commented:
            continue
        assert settings[key] == default or (settings[key] == [] and default is None), key
    for key in commented:
        assert f"# {key} = " in text, key
    # Every layer's parameters are listed with their defaults.
    for entry in stlsim.layers():
        assert f"layer '{entry['name']}'" in text
        for p in entry["params"]:
            assert f"{p['name']} = " in text


def test_init_config_comments_every_line() -> None:
    for line in init_config_text().splitlines():
        stripped = line.strip()
        if "=" in stripped and not stripped.startswith("#"):
            assert " # " in line, line
