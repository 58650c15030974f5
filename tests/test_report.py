"""`stlsim report DIR`: one self-contained HTML page for a run, a compare or
a sweep folder, checked as HTML and rendered in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

import stlsim
from stlsim.errors import ConfigError
from stlsim.html_report import write_report


class _Page(HTMLParser):
    """Tables (with their header cells), images and external references of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables = 0
        self.headers: list[str] = []
        self.images: list[str] = []
        self.external: list[str] = []
        self.h2: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables += 1
        if tag == "img":
            self.images.append(a.get("src") or "")
        for key in ("src", "href"):
            v = a.get(key) or ""
            if re.match(r"(https?:)?//", v):
                self.external.append(v)
        if tag in ("th", "h2"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "th":
            self.headers.append(data.strip())
        elif self._in == "h2":
            self.h2.append(data.strip())


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, data: Path) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("report")
    trace = str(data / "wdev_3.csv")
    stlsim.run(trace=trace, drive="imr-paper", layer="imr-rmw").save(base / "run")
    stlsim.compare([{"layer": "cmr"}, {"layer": "imr-flip"}], trace=trace, drive="imr-paper").save(base / "compare")
    plan = {"sweep": {"traces": [trace], "drives": ["imr-paper"], "layers": ["cmr", "imr-rmw", "smr-vguard"], "replay": {"queue_depth": [1, 8]}}}
    stlsim.sweep(plan, base / "sweep", jobs=2)
    return {k: base / k for k in ("run", "compare", "sweep")}


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.mark.parametrize("kind", ["run", "compare", "sweep"])
def test_the_page_is_self_contained_with_tables_plots_configuration_and_provenance(folders: dict[str, Path], kind: str) -> None:
    out = write_report(folders[kind])
    assert out == folders[kind] / "report.html"
    page = _parse(out)
    assert page.external == []  # nothing fetched: one file that opens offline
    assert page.images and all(src.startswith("data:image/png;base64,") for src in page.images)
    assert page.tables >= 3
    assert {"Summary" if kind != "sweep" else "Cells", "Plots", "Warnings", "Configuration and provenance"} <= set(page.h2)
    text = out.read_text(encoding="utf-8")
    assert stlsim.__version__ in text  # provenance: the version that made the runs
    # Titles a reader knows, with units; never the data's column names.
    assert not {"mean_ms", "p99_ms", "waf", "wall_s", "queue_depth", "hash"} & set(page.headers)
    if kind == "sweep":
        assert {"layer", "queue depth", "mean (ms)", "WAF", "wall (s)", "cell"} <= set(page.headers)
        assert "Failed cells" in page.h2 and "smr-vguard" in text  # the failing cell is listed with its error
        assert "the plan as last run" in text
        assert "6 cells, 2 failed; varying: layer, queue depth." in text
    else:
        assert {"label", "WAF", "mean (ms)", "p99 (ms)", "read (bytes)"} <= set(page.headers)
        assert "resolved configuration" in text and "wdev_3.csv" in text
        # Counts with separated digits (the work by cause runs to millions of bytes).
        assert re.search(r"<td>\d{1,3}(,\d{3}){2,}</td>", text)
        assert not re.search(r"<td>-?\d{4,}(\.\d+)?</td>", text)


def test_tables_show_human_titles_and_separated_digits() -> None:
    import pandas as pd

    from stlsim.html_report import _table

    frame = {"requests": [1234567, 89], "mean_ms": [0.987654321, 12.5], "wall_s": [12.3456, None], "param.chunk_kib": [64, 1024], "waf": [1.0, 1.0]}
    table = _table(pd.DataFrame(frame))
    headers = re.findall(r"<th>(.*?)</th>", table)
    assert headers == ["requests", "mean (ms)", "wall (s)", "chunk_kib", "WAF"]
    cells = re.findall(r"<td>(.*?)</td>", table)
    # Decimals fitted to the column; a ratio keeps them even when whole.
    assert cells == ["1,234,567", "0.99", "12.35", "64", "1.000", "89", "12.50", "", "1,024", "1.000"]


def test_report_on_a_sweep_with_a_truncated_row_names_the_file(cli, one_line_error, folders: dict[str, Path], tmp_path: Path) -> None:
    d = tmp_path / "sweep"
    shutil.copytree(folders["sweep"], d)
    row = sorted((d / "rows").glob("*.parquet"))[0]
    row.write_bytes(row.read_bytes()[:100])
    line = one_line_error(cli("report", str(d)))
    assert line.startswith(f"stlsim: error: {row}: unreadable sweep row (")
    assert line.endswith("); run the sweep again to redo its cell")


def test_report_on_a_folder_that_holds_no_results_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a saved stlsim run, compare or sweep folder"):
        write_report(tmp_path)
    p = subprocess.run([sys.executable, "-m", "stlsim", "report", str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert p.returncode != 0 and "no such folder" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_the_cli_writes_the_page(folders: dict[str, Path]) -> None:
    target = folders["run"] / "report.html"
    target.unlink(missing_ok=True)
    p = subprocess.run([sys.executable, "-m", "stlsim", "report", str(folders["run"])], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert target.is_file() and str(target) in p.stderr


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if found := shutil.which(name):
            return found
    return None


@pytest.mark.parametrize("kind", ["run", "compare", "sweep"])
def test_the_page_renders_in_headless_chromium_with_every_image_loaded(folders: dict[str, Path], kind: str) -> None:
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium on PATH (the README's test command installs Debian's chromium where it can)")
    out = write_report(folders[kind])
    p = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000", "--dump-dom", out.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(out.parent)},
    )
    dom = p.stdout
    assert p.returncode == 0 and "<table" in dom, p.stderr[-2000:]
    m = re.search(r'data-images="(\d+)/(\d+)"', dom)
    assert m, "the page's load handler did not run"
    loaded, total = int(m.group(1)), int(m.group(2))
    assert total == len(_parse(out).images) and total > 0
    assert loaded == total
    assert dom.count("<table") == _parse(out).tables


def test_comparison_plot_writes_the_plots_save_writes_and_nothing_else(folders: dict[str, Path], tmp_path: Path) -> None:
    cmp = stlsim.Comparison.load(folders["compare"])
    written = cmp.plot(tmp_path / "p", "svg")
    assert written and all(p.suffix == ".svg" for p in written)
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == sorted(p.name for p in written)
    saved = {p.stem for p in folders["compare"].glob("*.png")}
    assert {p.stem for p in written} == saved
