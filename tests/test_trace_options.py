"""stlsim.TraceOptions: the trace-reading settings written once (issue 36,
item 4), taken by run, compare, analyze, convert and trace_info together as
``trace_options=`` or one by one as the keywords they always took."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

import stlsim
import stlsim.trace_options as trace_options_module
from stlsim import ConfigError, TraceOptions
from stlsim.trace_options import FIELDS

#: A selection that differs from the defaults in three ways, small enough to be quick.
SELECTION: dict[str, Any] = {"start": 20000, "limit": 2000, "only": "write"}


def _without_time(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != "converted_at"}


# --------------------------------------------------------------------------
# The class
# --------------------------------------------------------------------------


def test_the_fields_are_the_trace_settings_with_their_defaults() -> None:
    from stlsim.config import DEFAULTS

    expected = (
        "format", "disk", "start", "limit", "csv", "event", "skip_unknown", "only",
        "time_from_s", "time_to_s", "file_extent_mib", "rate_iops", "pair_completions",
    )  # fmt: skip
    assert FIELDS == expected
    for f in dataclasses.fields(TraceOptions):
        assert f.default == DEFAULTS[f.name], f.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        TraceOptions().limit = 5  # type: ignore[misc]


def test_every_field_has_its_docstring() -> None:
    # The Args text the four functions repeated lives here, once: a string
    # right after each field.
    source = Path(trace_options_module.__file__).read_text()
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "TraceOptions")
    documented = []
    for node, after in zip(cls.body, cls.body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            assert isinstance(after.value.value, str) and len(after.value.value) > 20
            documented.append(node.target.id)  # type: ignore[union-attr]
    assert tuple(documented) == FIELDS


def test_settings_are_the_fields_off_their_default() -> None:
    assert TraceOptions().settings() == {}
    assert TraceOptions(**SELECTION).settings() == SELECTION
    # Equal to the default but not of its type: set (and refused when checked).
    assert TraceOptions(disk=0).settings() == {"disk": 0}


def test_a_bad_value_is_refused_when_the_options_are_made() -> None:
    with pytest.raises(ConfigError, match="start must be a non-negative integer"):
        TraceOptions(start=-1)
    # False equals 0, the default, but is not a count (refused as start=False is in run).
    with pytest.raises(ConfigError, match="start must be a non-negative integer, got False"):
        TraceOptions(start=False)
    with pytest.raises(ConfigError, match="skip_unknown must be true or false"):
        TraceOptions(skip_unknown=0)
    with pytest.raises(ConfigError, match="start must be given"):
        TraceOptions(start=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="did you mean 'msr'"):
        TraceOptions(format="mrs")


def test_merged() -> None:
    base = TraceOptions(limit=2000)
    assert TraceOptions.merged(base, start=300) == TraceOptions(start=300, limit=2000)
    assert TraceOptions.merged(None, only="write") == TraceOptions(only="write")
    assert TraceOptions.merged(base) == base
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'limt'; did you mean 'limit'\?"):
        TraceOptions.merged(base, limt=5)
    with pytest.raises(TypeError, match="trace option 'limit' twice"):
        TraceOptions.merged(base, limit=5)


# --------------------------------------------------------------------------
# The functions: the options give what the keywords give
# --------------------------------------------------------------------------


def test_run_with_options_is_run_with_keywords() -> None:
    by_keywords = stlsim.run(**SELECTION)
    by_options = stlsim.run(trace_options=TraceOptions(**SELECTION))
    assert by_keywords.report["host"]["requests"] == 2000
    assert by_keywords.report["host"]["reads"] == 0  # only="write" was applied
    assert by_options.report == by_keywords.report
    assert by_options.config == by_keywords.config
    # Both ways at once, different fields: merged.
    mixed = stlsim.run(trace_options=TraceOptions(start=20000, only="write"), limit=2000)
    assert mixed.report == by_keywords.report
    # And the options do something: without them the selection differs.
    assert stlsim.run(start=20000, limit=2000).report["host"]["reads"] > 0


def test_analyze_with_options_is_analyze_with_keywords() -> None:
    by_keywords = stlsim.analyze(**SELECTION, hottest=50, neighbours=5)
    by_options = stlsim.analyze(trace_options=TraceOptions(**SELECTION), hottest=50, neighbours=5)
    assert by_options.to_dict() == by_keywords.to_dict()
    assert by_options.to_dict() != stlsim.analyze(start=20000, limit=2000, hottest=50, neighbours=5).to_dict()


def test_trace_info_with_options_is_trace_info_with_keywords() -> None:
    by_keywords = stlsim.trace_info(None, None, **SELECTION)
    by_options = stlsim.trace_info(None, None, trace_options=TraceOptions(**SELECTION))
    assert by_keywords["requests"] == 2000 and by_keywords["reads"] == 0
    assert by_options == by_keywords


def test_convert_with_options_is_convert_with_keywords(tmp_path: Path) -> None:
    by_keywords = stlsim.convert(stlsim.default_trace(), tmp_path / "k.stlt", **SELECTION)
    by_options = stlsim.convert(stlsim.default_trace(), tmp_path / "o.stlt", trace_options=TraceOptions(**SELECTION))
    assert by_keywords["records"] == 2000
    assert by_keywords["selection"] == SELECTION
    assert _without_time(by_options) == _without_time(by_keywords)
    info = [stlsim.trace_info(str(tmp_path / n), None) for n in ("k.stlt", "o.stlt")]
    assert {**info[0], "path": "", "header": None} == {**info[1], "path": "", "header": None}


def test_compare_takes_options_too() -> None:
    by_keywords = stlsim.compare([{"layer": "cmr"}], **SELECTION)
    by_options = stlsim.compare([{"layer": "cmr"}], trace_options=TraceOptions(**SELECTION))
    assert by_options.results[0].report == by_keywords.results[0].report
    assert by_options.results[0].report["host"]["requests"] == 2000
    with pytest.raises(TypeError, match="trace option 'limit' twice"):
        stlsim.compare([{"layer": "cmr"}], trace_options=TraceOptions(limit=10), limit=20)


# --------------------------------------------------------------------------
# Mistakes: TypeErrors, as Python gives for a keyword a function lacks
# --------------------------------------------------------------------------

NAMES = ("run", "analyze", "convert", "trace_info")


@pytest.fixture
def call(tmp_path: Path) -> Any:
    """``call(name, **kw)``: the API function ``name`` on the bundled trace
    (convert into a temporary folder)."""

    def call(name: str, **kw: Any) -> Any:
        if name == "convert":
            return stlsim.convert(stlsim.default_trace(), tmp_path / "out.stlt", **kw)
        return getattr(stlsim, name)(**kw)

    return call


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_keyword_is_a_type_error_with_a_suggestion(name: str, call: Any) -> None:
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'limt'; did you mean 'limit'\?"):
        call(name, limt=10)
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'skip_unknwon'; did you mean 'skip_unknown'\?"):
        call(name, skip_unknwon=True)
    # Nothing near: the trace options are listed instead.
    with pytest.raises(TypeError, match=r"'zzqx' \(trace options: format, disk, start, limit,"):
        call(name, zzqx=1)


def test_the_suggestion_covers_the_functions_own_parameters() -> None:
    with pytest.raises(TypeError, match="did you mean 'label'"):
        stlsim.run(lable="x")
    with pytest.raises(TypeError, match="did you mean 'hottest'"):
        stlsim.analyze(hotest=10)
    with pytest.raises(TypeError, match="did you mean 'force'"):
        stlsim.convert(stlsim.default_trace(), "never-written.stlt", forse=True)  # refused before anything is written
    with pytest.raises(TypeError, match="did you mean 'limit'"):
        stlsim.compare([{"layer": "cmr"}], limt=10)


@pytest.mark.parametrize("name", NAMES)
def test_a_field_given_twice_is_a_type_error(name: str, call: Any) -> None:
    with pytest.raises(TypeError, match=rf"^{name}\(\) got trace option 'limit' twice: .*\(limit=10\).*\(limit=20\)"):
        call(name, trace_options=TraceOptions(limit=10), limit=20)


@pytest.mark.parametrize("name", NAMES)
def test_trace_options_must_be_trace_options(name: str, call: Any) -> None:
    with pytest.raises(TypeError, match="trace_options must be a stlsim.TraceOptions or None, not dict"):
        call(name, trace_options={"limit": 10})


def test_run_refuses_too_many_positional_arguments_with_pythons_message() -> None:
    # The trace options, once run's 11th to 38th parameters, are keywords
    # only: a call that gave them by position fails rather than shifting.
    with pytest.raises(TypeError, match=r"run\(\) takes from 0 to 10 positional arguments but 11 were given"):
        stlsim.run(None, "imr-paper", "cmr", None, "queue", 64, 1.0, None, False, False, "vscsi")


# --------------------------------------------------------------------------
# A run configuration's trace settings
# --------------------------------------------------------------------------


def test_a_config_files_trace_settings_and_what_overrides_them(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[trace]\nstart = 300\nlimit = 3000\nonly = "write"\n[layer]\nname = "cmr"\n')

    def selection(**kw: Any) -> tuple[int, int | None, str | None]:
        t = stlsim.run(config=cfg, **kw).config["trace"]
        return t["start"], t["limit"], t["only"]

    assert selection() == (300, 3000, "write")
    assert selection(limit=2000) == (300, 2000, "write")
    # A keyword given at its default still overrides the file.
    assert selection(start=0, limit=2000) == (0, 2000, "write")
    # The options' fields other than their defaults override it; the others leave it alone.
    assert selection(trace_options=TraceOptions(limit=2000)) == (300, 2000, "write")
    assert selection(trace_options=TraceOptions(limit=2000), start=0) == (0, 2000, "write")


# --------------------------------------------------------------------------
# What help() shows
# --------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [stlsim.run, stlsim.analyze, stlsim.convert, stlsim.trace_info, stlsim.compare])
def test_signatures_take_the_options_once(fn: Any) -> None:
    params = inspect.signature(fn).parameters
    assert "trace_options" in params
    assert params["trace_options"].kind is inspect.Parameter.KEYWORD_ONLY
    assert not set(FIELDS) & set(params), fn.__name__
    assert "TraceOptions" in (fn.__doc__ or "")


def test_runs_docstring_names_every_option() -> None:
    doc = stlsim.run.__doc__ or ""
    for name in FIELDS:
        assert name in doc, name


def test_traceoptions_is_public() -> None:
    assert "TraceOptions" in stlsim.__all__
    assert stlsim.TraceOptions is trace_options_module.TraceOptions
