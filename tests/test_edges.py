"""Edges of the input space: extreme numbers in drives, layer parameters and
trace layouts are one-line errors naming the key (and the file), never a
panic or a traceback; a drive without a preset says which defaults it took."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stlsim
from stlsim import _core
from stlsim.config import drive_defaults_taken, load_drive, load_drive_noting
from stlsim.errors import ConfigError, StlsimError

TINY = {"preset": "imr-paper", "capacity_gib": 1.0, "name": "tiny", "prefill": 0.0}


def _one_line(e: BaseException) -> str:
    msg = str(e)
    assert "\n" not in msg and msg, repr(msg)
    return msg


# --------------------------------------------------------------------------
# Finding 1: panics and clamped integers through the Python API and the CLI
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("drive", "needle"),
    [
        ({"preset": "imr-paper", "layout": {"group_tracks": 2**63}}, "layout.group_tracks = 9223372036854775808"),
        ({"preset": "swd-paper", "layout": {"band_tracks": 2**64 - 1}}, "layout.band_tracks = 18446744073709551615"),
        ({"preset": "dmsmr-small", "layout": {"band_tracks": 2**64 - 1}}, "layout.band_tracks"),
        ({"preset": "imr-paper", "tracks": 2**64}, "tracks = 18446744073709551616 does not fit in 64 bits"),
        ({"preset": "imr-paper", "layout": {"group_tracks": -1}}, "layout.group_tracks"),
        ({"preset": "imr-paper", "seek": {"min_ms": "fast"}}, "seek.min_ms"),
        ({"preset": "cmr", "zones": [{"first_track": 0, "sectors_per_track": 2**40}]}, "zones[0].sectors_per_track"),
    ],
)
def test_huge_geometry_through_the_api_is_a_config_error(drive: dict[str, Any], needle: str) -> None:
    for call in (lambda: stlsim.run(drive=drive, limit=10), lambda: stlsim.analyze(drive=drive, limit=10)):
        with pytest.raises(ConfigError) as e:
            call()
        assert needle in _one_line(e.value)


@pytest.mark.parametrize("value", [2**64, 2**70, -(2**64)])
def test_integers_beyond_64_bits_are_rejected_not_clamped(value: int) -> None:
    with pytest.raises(ConfigError, match=rf"params\.backup_tracks = {value} does not fit in 64 bits"):
        stlsim.run(layer="imr-rmw", params={"backup_tracks": value}, limit=10)
    with pytest.raises(ConfigError, match="limit"):
        stlsim.run(limit=value)


def test_a_float_parameter_beyond_64_bits_is_rejected_by_the_core() -> None:
    # 1e300 reaches the core (it is a finite JSON number); 2^64-1 used to come back.
    with pytest.raises(ConfigError, match=r"backup_tracks' of layer 'imr-dtm' must be a non-negative integer up to 2\^40"):
        stlsim.run(layer="imr-dtm", params={"backup_tracks": 1e300}, limit=10)


@pytest.mark.parametrize("layer", ["imr-dtm", "imr-flip", "imr-rmw", "imr-cache"])
def test_cli_backup_tracks_near_2_64_is_one_line(cli, one_line_error, layer: str) -> None:
    line = one_line_error(cli("run", "--layer", layer, "--param", "backup_tracks=18446744073709551613", "--limit", "10"))
    assert "backup_tracks" in line and layer in line, line


# --------------------------------------------------------------------------
# Finding 3: physical plausibility
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ({"seek": {"max_ms": 1e17}}, "seek.max_ms = 100000000000000000 is outside the plausible range 0 to 1000 (ms)"),
        ({"rpm": 1e12}, "rpm = 1000000000000 is outside the plausible range 1000 to 30000"),
        ({"rpm": 1e-300}, "rpm = 0.0"),
        ({"interface_mb_s": 1e-9}, "interface_mb_s = 0.000000001 is outside the plausible range 1 to 100000 (MB/s)"),
        ({"interface_mb_s": 1e9}, "interface_mb_s = 1000000000 is outside the plausible range 1 to 100000 (MB/s)"),
        ({"rpm": math.nan}, "rpm must be a finite number, got nan"),
        ({"rpm": math.inf}, "rpm must be a finite number, got inf"),
        ({"write_cache_mib": -1.0}, "write_cache_mib = -1 is outside"),
        ({"layout": {"top_ratio": 0.01}}, "layout.top_ratio = 0.01 is outside"),
        ({"capacity_gib": 1e9}, "capacity_gib = 1000000000 is outside"),
        ({"surfaces": 0}, "surfaces = 0 is outside the range 1 to 4096"),
        ({"head_switch_ms": -0.5}, "head_switch_ms = -0.5 is outside the plausible range 0 to 100 (ms)"),
        ({"write_settle_ms": -1e3}, "write_settle_ms = -1000 is outside the plausible range -100 to 100 (ms)"),
        ({"write_settle_ms": math.nan}, "write_settle_ms must be a finite number, got nan"),
        (
            {"zones": [{"first_track": 0, "sectors_per_track": 100, "track_skew_sectors": 2**21}]},
            "zones.track_skew_sectors = 2097152 is outside the range 0 to 1048576",
        ),
        (
            {
                "surfaces": 2,
                "layout": {"kind": "cmr"},
                "zones": [{"first_track": 0, "sectors_per_track": 100}, {"first_track": 3, "sectors_per_track": 90}],
            },
            "zone first_track 3 is not the first track of a cylinder (a multiple of surfaces = 2)",
        ),
        ({"surfaces": 2}, "surfaces = 2 needs layout kind 'cmr'"),
        ({"surface_order": "zigzag", "layout": {"kind": "cmr"}}, "surface_order 'zigzag' is not 'ascending'"),
    ],
)
def test_implausible_drive_values_name_the_key(override: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_drive("imr-paper", override)
    assert needle in _one_line(e.value)


# The cmr preset's controller charges a command overhead on every write the
# cache absorbs; without it a cached write costs exactly its link transfer.
NO_WRITE_HIT_OVERHEAD = {"write_hit_after_read_ms": 0.0, "write_hit_after_write_ms": 0.0}


def test_an_interface_rate_of_zero_is_an_ideal_link() -> None:
    """0 MB/s is not a slow link but none: the host transfer takes no time,
    so a request costs only the medium's time (paper-style studies of the
    medium alone). Writes into the write cache cost exactly their transfer."""
    kw = {"trace": "synth:uniform,count=200,span_bytes=1GB,seed=3", "mode": "flat-out", "write_cache": True}
    slow, fast, ideal = (
        stlsim.run(**kw, drive={"preset": "cmr", "interface_mb_s": rate, "controller": NO_WRITE_HIT_OVERHEAD}).summary[
            "mean_ms"
        ]
        for rate in (1.0, 1e5, 0)
    )
    assert ideal == 0 < fast < slow


def test_every_preset_lies_within_the_documented_ranges() -> None:
    for d in stlsim.drives():
        load_drive(d["name"])  # raises if any value is outside its range


def _fmt(v: float) -> str:
    """A bound as docs/drive-model.md writes it: 10^k for large or tiny powers of ten, else with commas."""
    if v == 0:
        return "0"
    exp = math.log10(abs(v))
    if (abs(v) >= 1e6 or abs(v) < 1e-3) and exp == round(exp):
        return f"10^{round(exp)}"
    return f"{int(v):,}" if v == int(v) else f"{v:g}"


def test_the_documented_ranges_match_the_core() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "drive-model.md").read_text(encoding="utf-8")
    ranges = json.loads(_core.drive_ranges_json())
    assert len(ranges["real"]) >= 14 and len(ranges["int"]) >= 9
    for key, lo, hi, *_ in ranges["real"] + ranges["int"]:
        assert f"| `{key}` | {_fmt(lo)} | {_fmt(hi)} |" in doc, key
    for v, ok in [(999.0, False), (1000.0, True), (30000.0, True), (30001.0, False)]:
        if ok:
            load_drive("imr-paper", {"rpm": v})
        else:
            with pytest.raises(ConfigError, match="rpm"):
                load_drive("imr-paper", {"rpm": v})


# --------------------------------------------------------------------------
# Finding 9: error texts name the file and the key
# --------------------------------------------------------------------------


def test_nan_in_a_drive_file_names_the_file_and_key(cli, one_line_error, tmp_path: Path) -> None:
    f = tmp_path / "nanrpm.toml"
    f.write_text('preset = "imr-paper"\nrpm = nan\n')
    line = one_line_error(cli("run", "--drive", str(f), "--limit", "10"))
    assert "nanrpm.toml" in line and "rpm must be a finite number, got nan" in line, line
    f.write_text('preset = "imr-paper"\n[seek]\nmax_ms = inf\n')
    line = one_line_error(cli("run", "--drive", str(f), "--limit", "10"))
    assert "nanrpm.toml" in line and "seek.max_ms must be a finite number, got inf" in line, line


@pytest.mark.parametrize(
    ("table", "line", "needle"),
    [
        ("read_cache", 'read_ahead_extent = "cylinder"', "read_cache.read_ahead_extent: unknown variant `cylinder`"),
        ("read_cache", "read_ahead_over_requested = 1", "read_cache.read_ahead_over_requested: invalid type"),
        ("read_cache", 'hits_continue_read_ahead = "yes"', "read_cache.hits_continue_read_ahead: invalid type"),
        ("controller", "write_link_per_block = 1", "controller.write_link_per_block: invalid type"),
        ("controller", 'write_link_per_block = "yes"', "controller.write_link_per_block: invalid type"),
        ("controller", "destage_at_once = 2", "controller.destage_at_once: invalid type"),
        ("controller", 'destage_at_once = "on"', "controller.destage_at_once: invalid type"),
    ],
)
def test_bad_read_ahead_and_write_link_keys_name_the_file_and_key(
    cli, one_line_error, tmp_path: Path, table: str, line: str, needle: str
) -> None:
    f = tmp_path / "drive.toml"
    # The read cache's table needs its segments; a preset gives the rest.
    extra = "segments = 3\n" if table == "read_cache" else ""
    f.write_text(f'preset = "barracuda"\n[{table}]\n{extra}{line}\n')
    msg = one_line_error(cli("run", "--drive", str(f), "--limit", "10"))
    assert "drive.toml" in msg and needle in msg, msg


@pytest.mark.parametrize(
    ("csv", "needle"),
    [
        ('delimiter = ";;"', 'trace.csv.delimiter: ";;" is not a usable delimiter'),
        ('delimiter = ""', 'trace.csv.delimiter: "" is not a usable delimiter'),
        ('delimiter = "é"', 'trace.csv.delimiter: "é" is not a usable delimiter'),
        ('delimiter = "\\n"', "trace.csv.delimiter"),
        ("delimiter = 7", "trace.csv.delimiter: invalid type"),
        ("time_col = -1", "trace.csv.time_col: invalid value: integer `-1`"),
        ("op_col = 0", "trace.csv.time_col and op_col are both column 0"),
        ("size_unit_bytes = 0", "size_unit_bytes must be at least 1"),
        ('time_unit = "fortnight"', "trace.csv.time_unit: unknown variant `fortnight`"),
        ("offset_col = 18446744073709551616", "trace.csv.offset_col = 18446744073709551616 does not fit in 64 bits"),
        ("offset_col = 100000", "trace.csv.offset_col = 100000 is beyond column 4096"),
        ("colour = 1", "trace.csv.colour"),
    ],
)
def test_bad_csv_layout_names_the_file_and_key(cli, one_line_error, tmp_path: Path, csv: str, needle: str) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("0,w,0,8\n")
    conf = tmp_path / "layout.toml"
    conf.write_text(f'[trace]\npath = "t.csv"\nformat = "csv"\n[trace.csv]\n{csv}\n', encoding="utf-8")
    line = one_line_error(cli("run", "--config", str(conf)))
    assert "layout.toml" in line and needle in line, line


def test_bad_csv_layout_through_the_api_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        stlsim.run(trace=tmp_path / "t.csv", format="csv", csv={"delimiter": ";;"})
    assert _one_line(e.value).startswith('configuration error: csv.delimiter: ";;" is not a usable delimiter')


# --------------------------------------------------------------------------
# Finding 4: a drive file without a preset says which defaults it took
# --------------------------------------------------------------------------


def test_a_drive_without_a_preset_names_the_defaults_it_took(tmp_path: Path) -> None:
    f = tmp_path / "bare.toml"
    f.write_text("rpm = 5400.0\ncapacity_gib = 1.0\n[layout]\nkind = \"imr\"\ngroup_tracks = 4\n")
    d, notes = load_drive_noting(f)
    assert len(notes) == 1
    note = notes[0]
    assert note.startswith(f"drive file '{f}' gives no preset and leaves out")
    for taken in ("sector_bytes = 4096", "interface_mb_s = 600.0", "seek.min_ms = 2.0", "seek.max_ms = 20.0",
                  "track_bytes = 2097152", "layout.top_ratio = 1.0", 'layout.order = "zigzag"'):  # fmt: skip
        assert taken in note, taken
    for given_key in ("rpm", "capacity_gib", "layout.kind", "layout.group_tracks", "tracks"):
        assert f"{given_key} =" not in note, given_key
    r = stlsim.run(drive=f, limit=200, fold=True)
    assert r.report["warnings"][0] == note
    assert r.report["drive"]["name"] == "bare"


def test_a_complete_drive_or_a_preset_takes_no_defaults(tmp_path: Path) -> None:
    full = {
        "sector_bytes": 4096, "rpm": 7200.0, "track_bytes": 2097152, "capacity_gib": 1.0, "write_cache_mib": 0.0,
        "interface_mb_s": 600.0, "rotation": "average", "seek": {"model": "sqrt", "min_ms": 1.0, "max_ms": 9.0},
        "layout": {"kind": "cmr"},
    }  # fmt: skip
    assert drive_defaults_taken(full) == []
    assert load_drive_noting(full)[1] == []
    assert load_drive_noting(TINY)[1] == []
    for d in stlsim.drives():
        assert load_drive_noting(d["name"])[1] == [], d["name"]
    r = stlsim.run(drive=full, limit=100, fold=True)
    assert not any("built-in defaults" in w for w in r.report["warnings"])
    # A zone table stands for track_bytes, tracks for capacity_gib, a table seek for min/max.
    zoned = {**full, "zones": [{"first_track": 0, "sectors_per_track": 512}], "seek": {"model": "table", "table": [[1, 1.0]]}}
    del zoned["track_bytes"]
    assert drive_defaults_taken(zoned) == []


def test_cli_prints_the_defaults_warning(cli, tmp_path: Path) -> None:
    f = tmp_path / "bare.toml"
    f.write_text("rpm = 5400.0\ncapacity_gib = 1.0\n")
    p = cli("run", "--drive", str(f), "--limit", "100", "--fold", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "gives no preset and leaves out" in p.stderr and "seek.max_ms = 20.0" in p.stderr


# --------------------------------------------------------------------------
# Finding 2: a property test through the public API
# --------------------------------------------------------------------------

_EXTREME_INTS = [0, 1, 2, 3, 2**31, 2**32, 2**40, 2**40 + 1, 2**63, 2**64 - 1, 2**64, -1]
_EXTREME_FLOATS = [0.0, 1.0, -1.0, 1e-300, 5e-324, 1e17, 1e300, math.inf, -math.inf, math.nan]
_DRIVE_KEYS: list[tuple[str, ...]] = [
    ("sector_bytes",), ("rpm",), ("track_bytes",), ("tracks",), ("capacity_gib",), ("write_cache_mib",),
    ("interface_mb_s",), ("seek", "min_ms"), ("seek", "max_ms"), ("layout", "top_ratio"), ("layout", "group_tracks"),
    ("prefill",),
    ("controller", "read_miss_after_read_ms"), ("controller", "read_high_water_mark"),
    ("controller", "write_link_per_block"), ("controller", "destage_at_once"),
    ("read_cache", "segments"), ("read_cache", "segment_sectors"), ("read_cache", "read_ahead_max_sectors"),
    ("read_cache", "read_ahead_extent"), ("read_cache", "read_ahead_over_requested"),
    ("read_cache", "hits_continue_read_ahead"), ("read_cache", "read_ahead_on_idle_hit"),
]  # fmt: skip
_LAYER_PARAMS = {
    lay["name"]: [p["name"] for p in lay["params"] if p["kind"] in ("int", "float")] for lay in stlsim.layers()
}
_IMR_LAYERS = sorted(n for n in _LAYER_PARAMS if n.startswith("imr-")) + ["cmr"]


def _extreme() -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(_EXTREME_INTS), st.sampled_from(_EXTREME_FLOATS), st.integers(), st.floats())


def _set(d: dict[str, Any], path: tuple[str, ...], v: Any) -> None:
    for k in path[:-1]:
        d = d.setdefault(k, {})
    d[path[-1]] = v


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    layer=st.sampled_from(_IMR_LAYERS),
    drive_keys=st.lists(st.tuples(st.sampled_from(_DRIVE_KEYS), _extreme()), max_size=3),
    params=st.lists(st.tuples(st.integers(0, 20), _extreme()), max_size=3),
)
def test_extreme_values_give_one_line_errors_or_sane_runs(layer: str, drive_keys: list[Any], params: list[Any]) -> None:
    drive: dict[str, Any] = {**TINY, "layout": {}, "seek": {}}
    for path, v in drive_keys:
        _set(drive, path, v)
    names = _LAYER_PARAMS[layer]
    chosen = {names[i % len(names)]: v for i, v in params} if names else {}
    try:
        r = stlsim.run(drive=drive, layer=layer, params=chosen, limit=60, verify=True, fold=True)
    except StlsimError as e:
        _one_line(e)
        assert isinstance(e, ConfigError), repr(e)
    else:
        assert r.report["host"]["requests"] == 60
        assert math.isfinite(r.summary["mean_ms"]) and r.summary["mean_ms"] >= 0


# --------------------------------------------------------------------------
# Findings 6, 7, 8: trace readers
# --------------------------------------------------------------------------

DATA = Path(__file__).parent / "data"


def test_zstd_with_a_wrong_checksum_is_one_line_naming_the_file(cli, one_line_error, tmp_path: Path) -> None:
    good = (DATA / "wdev_3.csv.zst").read_bytes()
    bad = bytearray(good)
    bad[-1] ^= 0xFF  # the frame's content checksum
    f = tmp_path / "badsum.csv.zst"
    f.write_bytes(bytes(bad))
    line = one_line_error(cli("run", "--trace", str(f), "--drive", "cmr"))
    assert str(f) in line and "zstd frame 1 fails its checksum" in line, line
    # Damaged data: one line, no decoder debug structures.
    bad = bytearray(good)
    bad[len(good) // 2] ^= 0x55
    f.write_bytes(bytes(bad))
    line = one_line_error(cli("run", "--trace", str(f), "--drive", "cmr"))
    assert str(f) in line and "zstd" in line and "{" not in line and "Error(" not in line, line
    f.write_bytes(good[: len(good) // 2])
    with pytest.raises(stlsim.errors.TraceIOError, match=r"badsum\.csv\.zst.*ends inside frame 1 \(truncated file\?\)"):
        stlsim.run(trace=f, drive="cmr")


def test_a_giant_line_in_a_small_gz_is_file_and_line(cli, one_line_error, tmp_path: Path) -> None:
    import gzip

    f = tmp_path / "giant.csv.gz"
    with gzip.open(f, "wb", compresslevel=1) as z:
        z.write(b"128166481075232275,rsrch,1,Write,281358336,45056,94872\n")
        z.write(b"," * (8 << 20))  # 8 million delimiters on line 2
        z.write(b"\n")
    assert f.stat().st_size < 100_000
    line = one_line_error(cli("run", "--trace", str(f), "--format", "msr", "--drive", "cmr"))
    assert line == f"stlsim: error: {f}:2: line longer than 1 MiB (1048576 bytes): not a trace in this format, or a damaged file"


def test_an_offset_near_2_64_reports_an_overflow(cli, one_line_error, tmp_path: Path) -> None:
    f = tmp_path / "near.csv"
    f.write_text(f"128166481075232275,h,0,Write,4096,4096,0\n128166481075232276,h,0,Write,{2**64 - 100},4096,0\n")
    line = one_line_error(cli("run", "--trace", str(f), "--format", "msr", "--drive", "cmr", "--fold"))
    assert f"{f}:2: offset {2**64 - 100} plus length 4096 overflows" in line, line
    assert "larger than" not in line and "beyond" not in line


def test_simulated_time_past_2_64_ns_is_refused_not_saturated(cli, one_line_error, tmp_path: Path) -> None:
    """A scale or a repeat that would carry times past 2^64 ns (584 years)
    is one line, not a clock stuck at its end or wrapped to the start."""
    line = one_line_error(cli("run", "--limit", "20000", "--mode", "scaled", "--scale", "1e8"))
    assert "past 2^64 ns" in line and "smaller --scale" in line, line
    f = tmp_path / "span.csv"
    f.write_text("0,h,0,Read,0,4096,0\n92233720368547758,h,0,Write,4096,4096,0\n")  # 2^63 ns apart
    line = one_line_error(cli("run", "--trace", str(f), "--drive", "cmr", "--repeat", "3"))
    assert f"{f}:2:" in line and "repeat it fewer times" in line, line
    # Once, it replays.
    proc = cli("run", "--trace", str(f), "--drive", "cmr", "--json")
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------
# Issue 35 item 17: no silent clamps of layer parameters
# --------------------------------------------------------------------------

# Each layer on its paper's drive (as benches/layer_costs.py chooses).
_DRIVE_OF_LAYOUT = {"imr": "imr-paper", "smr": "swd-paper", "zoned": "exos-x18z", "wave": "hwsr-paper"}
_DRIVE_OF_LAYER = {"smr-eregion": "dmsmr-5tb", "smr-vguard": "dmsmr-5tb", "cmr": "imr-paper", "buffered-cmr": "hwsr-paper"}
_NUMERIC = [
    (lay["name"], p["name"], p["kind"], p["unit"])
    for lay in stlsim.layers()
    for p in lay["params"]
    if p["kind"] in ("int", "float")
]


_LAYOUT_OF = {lay["name"]: str(lay["layout"]).split()[0] for lay in stlsim.layers()}


def _paper_drive(layer: str) -> str:
    return _DRIVE_OF_LAYER.get(layer) or _DRIVE_OF_LAYOUT[_LAYOUT_OF[layer]]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.sampled_from(_NUMERIC),
    value=st.one_of(
        st.sampled_from([0, 1, -1, 2, 0.5, -0.5, 1e-300, -1e-300, 1.5, 100.0, 101.0]),
        st.integers(-5, 300),
        st.floats(-10, 10, allow_nan=False),
    ),
)
def test_a_layer_parameter_runs_as_given_or_is_refused(which: tuple[str, str, str, str], value: float) -> None:
    """Every numeric parameter of every layer: a value is either refused in
    one line or run and reported as given, never quietly run as another
    (collect_blocks = 0 was reported 0 and run as 1; buffer_mib = -1 as 0)."""
    layer, name, kind, unit = which
    if kind == "int" and isinstance(value, float):
        value = round(value)
    try:
        r = stlsim.run(drive=_paper_drive(layer), layer=layer, params={name: value}, limit=50, fold=True, mode="flat-out")
    except StlsimError as e:
        _one_line(e)
        assert isinstance(e, ConfigError), repr(e)
        return
    assert value >= 0, f"{layer}.{name} = {value} was accepted"
    if unit == "fraction":
        assert value <= 1, f"{layer}.{name} = {value} was accepted"
    if unit == "%":
        assert value <= 100, f"{layer}.{name} = {value} was accepted"
    assert r.report["params"][name] == value, (name, value, r.report["params"])


@pytest.mark.parametrize(
    ("layer", "param"),
    [
        ("hm-fluid", "collect_blocks=0"),
        ("hm-fluid", "buffer_mib=-1"),
        ("hwsr", "mem_mib=-1"),
        ("hwsr", "ssd_mib=-1"),
        ("sblock", "block_sectors=0"),
        ("smr-vguard", "clean_buffer_mib=1e-300"),
        ("amphisbaena", "lambda=1.5"),
    ],
)
def test_the_silent_clamps_of_the_review_are_one_line_errors(cli, one_line_error, layer: str, param: str) -> None:
    line = one_line_error(cli("run", "--limit", "10", "--drive", _paper_drive(layer), "--layer", layer, "--param", param, "--fold"))
    assert param.split("=")[0] in line, line


def test_a_crash_point_given_twice_is_refused_for_ops_as_for_requests(cli, one_line_error) -> None:
    line = one_line_error(cli("run", "--limit", "10", "--crash-at-op", "5", "--crash-at-op", "5"))
    assert "crash_at_ops 5 is given twice" in line, line
    line = one_line_error(cli("run", "--limit", "10", "--crash-after", "5", "--crash-after", "5"))
    assert "crash_after 5 is given twice" in line, line


# --------------------------------------------------------------------------
# Issue 36: a layout takes only its own kind's keys
# --------------------------------------------------------------------------


def test_a_layout_key_of_another_kind_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError) as e:
        load_drive({"preset": "imr-paper", "layout": {"cache_mib": 4.0}})
    msg = _one_line(e.value)
    assert "layout key 'cache_mib' belongs to 'smr' layouts; kind 'imr' takes top_ratio, group_tracks, order" in msg
    with pytest.raises(ConfigError) as e:
        load_drive({"preset": "cmr", "layout": {"kind": "smr", "bandtracks": 4}})
    assert "did you mean 'band_tracks'?" in _one_line(e.value)
    with pytest.raises(ConfigError) as e:
        load_drive({"preset": "cmr", "rotation": "fast"})
    assert "rotation 'fast' is not 'average' or 'angular'" in _one_line(e.value)


def test_a_layout_of_another_kind_replaces_the_presets_whole() -> None:
    # swd-paper is an smr drive: its band keys mean nothing to a cmr or imr layout.
    d = load_drive({"preset": "swd-paper", "layout": {"kind": "cmr"}})
    assert d["layout"] == {"kind": "cmr"}
    d = load_drive({"preset": "swd-paper", "layout": {"kind": "imr", "top_ratio": 0.8}})
    assert d["layout"] == {"kind": "imr", "top_ratio": 0.8}
    # The same kind still merges key by key.
    d = load_drive({"preset": "swd-paper", "layout": {"direction": "down"}})
    assert d["layout"]["direction"] == "down" and d["layout"]["kind"] == "smr" and d["layout"]["band_tracks"] == 4
