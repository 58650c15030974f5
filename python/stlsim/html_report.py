"""`stlsim report DIR`: one self-contained HTML page for a saved run, compare
or sweep folder, written as ``DIR/report.html``.

Self-contained means one file that opens anywhere, offline: the plots are
PNG images embedded as ``data:`` URIs, the style sheet is inline, and no
script or font is fetched. The page is rebuilt from the folder's saved data
(:meth:`Result.load`, :meth:`Comparison.load`, the sweep's Parquet rows),
so it can be made at any time after the run, on any machine with stlsim.

A small inline script marks ``<body data-images="loaded/total">`` once the
page has loaded, and shows a banner if an image failed to decode: the test
suite reads that mark from headless Chromium, and a reader sees the banner.
"""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from .result import Comparison, Result

__all__ = ["kind_of", "write_report"]

#: Headline columns of the summary tables, in this order where present.
HEADLINE = (
    "label",
    "layer",
    "drive",
    "mode",
    "requests",
    "waf",
    "mean_ms",
    "p50_ms",
    "p99_ms",
    "p999_ms",
    "max_ms",
    "read_mean_ms",
    "write_mean_ms",
    "simulated_s",
    "iops",
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
.warn { background: #fff4d6; border-left: 4px solid #e0a800; padding: 0.4em 0.8em; margin: 0.3em 0; }
.error { background: #fde2e2; border-left: 4px solid #c0392b; padding: 0.4em 0.8em; }
#broken { display: none; } .scroll { overflow-x: auto; }
"""

# Counts the images that decoded; a reader sees a banner if any did not.
_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.body.setAttribute('data-images', ok + '/' + imgs.length);
  if (ok < imgs.length) { document.getElementById('broken').style.display = 'block'; }
});
"""


def kind_of(directory: Path) -> str:
    """What a results folder holds: ``sweep``, ``compare`` or ``run``."""
    if (directory / "rows").is_dir():
        return "sweep"
    if (directory / "summary.csv").is_file():
        return "compare"
    if (directory / "report.json").is_file():
        return "run"
    raise ConfigError(
        f"{directory}: not a saved stlsim run, compare or sweep folder "
        "(expected report.json, summary.csv or rows/; write one with run/compare --out or sweep --out)"
    )


def write_report(directory: str | os.PathLike[str]) -> Path:
    """Write ``DIR/report.html`` for the run, compare or sweep saved in
    ``directory`` and return its path."""
    d = Path(directory)
    if not d.is_dir():
        raise ConfigError(f"{d}: no such folder")
    kind = kind_of(d)
    if kind == "sweep":
        body = _sweep_page(d)
    else:
        from .result import Comparison, Result

        comparison = Comparison.load(d) if kind == "compare" else Comparison([Result.load(d)])
        body = _results_page(d, kind, comparison)
    out = d / "report.html"
    page = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>stlsim {kind}: {html.escape(d.resolve().name)}</title>"
        f"<style>{_STYLE}</style><script>{_SCRIPT}</script></head><body>"
        "<div id='broken' class='error'>Some images of this report failed to load.</div>"
        f"{body}</body></html>\n"
    )
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{out}: cannot write the report: {e.strerror or e}") from None
    return out


# ---- pieces -------------------------------------------------------------


def _table(df: pd.DataFrame, caption: str = "") -> str:
    """``df`` as an HTML table for a reader: human column titles with units
    and numbers with separated digits (:func:`stlsim.sweep.readable`)."""
    from .sweep import readable

    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    body = readable(df, missing="").to_html(index=False, escape=True, border=0)
    # Wide tables scroll inside their box instead of widening the page.
    return "<div class='scroll'>" + body.replace('<table class="dataframe">', f"<table class='dataframe'>{cap}", 1) + "</div>"


def _kv_table(pairs: Iterable[tuple[str, Any]], caption: str = "") -> str:
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td style='text-align:left'>{html.escape(_text(v))}</td></tr>" for k, v in pairs
    )
    return f"<table>{cap}{rows}</table>"


def _text(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return "" if v is None else str(v)


def _figures(paths: Sequence[Path]) -> str:
    out = []
    for p in paths:
        data = base64.b64encode(p.read_bytes()).decode("ascii")
        name = html.escape(p.stem.replace("_", " "))
        out.append(f"<figure><img alt='{name}' src='data:image/png;base64,{data}'><figcaption>{name}</figcaption></figure>")
    return "".join(out)


def _warnings(items: Iterable[str]) -> str:
    text = "".join(f"<div class='warn'>{html.escape(w)}</div>" for w in items if w)
    return text or "<p>None.</p>"


def _details(summary: str, content: str) -> str:
    return f"<details><summary>{html.escape(summary)}</summary>{content}</details>"


def _provenance_rows(prov: dict[str, Any]) -> list[tuple[str, Any]]:
    trace = prov.get("trace") or {}
    return [
        ("stlsim version", prov.get("stlsim_version")),
        ("git commit", prov.get("git_commit") or "(not built from a checkout)"),
        ("trace", trace.get("path")),
        ("trace size (bytes)", trace.get("size_bytes")),
        ("trace SHA-256", trace.get("sha256")),
        ("wall time (s)", prov.get("wall_s")),
        ("host", prov.get("host")),
        ("python", prov.get("python")),
    ]


def _read_provenance(run_dir: Path) -> dict[str, Any]:
    p = run_dir / "provenance.json"
    try:
        return dict(json.loads(p.read_text(encoding="utf-8"))) if p.is_file() else {}
    except (OSError, ValueError):
        return {}


# ---- a run or a compare ---------------------------------------------------


def _results_page(d: Path, kind: str, comparison: Comparison) -> str:
    import pandas as pd

    from .result import safe_label

    results = comparison.results
    first = results[0]
    trace = _one_or_varies(Path(str(r.config.get("trace", {}).get("path", ""))).name for r in results)
    drive = _one_or_varies(r.summary["drive"] for r in results)
    mode = _one_or_varies(r.summary["mode"] for r in results)
    title = f"stlsim {kind}: {first.label if kind == 'run' else d.resolve().name}"
    parts = [f"<h1>{html.escape(title)}</h1>"]
    parts.append(
        f"<p>Trace <b>{html.escape(trace)}</b>, drive <b>{html.escape(drive)}</b>, "
        f"mode <b>{html.escape(mode)}</b>; {len(results)} run(s).</p>"
    )
    table = comparison.table()
    cols = [c for c in HEADLINE if c in table.columns]
    parts.append("<h2>Summary</h2>" + _table(table[cols]))

    parts.append("<h2>Plots</h2>")
    with tempfile.TemporaryDirectory(prefix="stlsim-report-") as tmp:
        # The plots compare --out writes, without its data files.
        pngs = sorted(comparison.plot(tmp, "png"), key=_plot_order)
        parts.append(_figures(pngs) if pngs else "<p>No plots.</p>")

    parts.append("<h2>Warnings</h2>")
    warns = [f"{r.label}: {w}" for r in results for w in (r.report.get("warnings") or [])]
    parts.append(_warnings(warns))

    parts.append("<h2>Work by cause</h2>")
    for r in results:
        parts.append(_table(r.counters_by_cause(), caption=r.label))

    parts.append("<h2>Layer counters</h2>")
    counters = pd.DataFrame([{"label": r.label, **r.report.get("layer_counters", {})} for r in results])
    parts.append(_table(counters))

    parts.append("<h2>Configuration and provenance</h2>")
    for r in results:
        run_dir = d if kind == "run" else d / safe_label(r.label)
        prov = _read_provenance(run_dir)
        parts.append(f"<h3>{html.escape(r.label)}</h3>")
        parts.append(_kv_table(_provenance_rows(prov), caption="provenance"))
        parts.append(_details("resolved configuration", f"<pre>{html.escape(json.dumps(r.config, indent=2))}</pre>"))
    return "".join(parts)


#: Plots a reader looks at first; the rest follow by name.
_FIRST = ("latency_cdf", "latency_ccdf", "headline", "tail_latency", "by_usage", "waf_series")


def _plot_order(p: Path) -> tuple[int, str]:
    return (_FIRST.index(p.stem) if p.stem in _FIRST else len(_FIRST), p.stem)


def _one_or_varies(values: Iterable[Any]) -> str:
    distinct = list(dict.fromkeys(str(v) for v in values))
    return distinct[0] if len(distinct) == 1 else "varies (" + ", ".join(distinct) + ")"


# ---- a sweep --------------------------------------------------------------


def _sweep_page(d: Path) -> str:
    import pandas as pd

    from .sweep import SweepResult

    rows = SweepResult.load(d).rows
    parts = [f"<h1>stlsim sweep: {html.escape(d.resolve().name)}</h1>"]
    if rows.empty:
        return "".join(parts) + "<p>The sweep has no rows yet.</p>"
    failed = rows[rows["error"].notna()] if "error" in rows.columns else rows.iloc[0:0]
    axes = _varying(rows)
    from .sweep import column_title

    varying = ", ".join(column_title(a) for a in axes) or "nothing"
    parts.append(f"<p>{len(rows):,} cells, {len(failed):,} failed; varying: {html.escape(varying)}.</p>")

    show = ["trace", "drive", "layer"] + [c for c in axes if c not in ("trace", "drive", "layer")]
    show += [c for c in ("mean_ms", "p99_ms", "p999_ms", "waf", "requests", "wall_s") if c in rows.columns]
    view = rows[[c for c in dict.fromkeys(show) if c in rows.columns]]
    parts.append("<h2>Cells</h2>" + _table(view))

    parts.append("<h2>Plots</h2>")
    ok = rows[rows["error"].isna()] if "error" in rows.columns else rows
    with tempfile.TemporaryDirectory(prefix="stlsim-report-") as tmp:
        pngs = [p for m in ("mean_ms", "p99_ms", "waf") if (p := _sweep_bars(ok, axes, m, Path(tmp) / f"sweep_{m}.png"))]
        parts.append(_figures(pngs) if pngs else "<p>No successful cells to plot.</p>")

    parts.append("<h2>Failed cells</h2>")
    if failed.empty:
        parts.append("<p>None.</p>")
    else:
        parts.append(_table(failed[[c for c in ("hash", "trace", "layer", "error") if c in failed.columns]]))

    parts.append("<h2>Warnings</h2>")
    warns = [f"{r['layer']} on {Path(str(r['trace'])).name}: {r['warnings']}" for _, r in rows.iterrows() if r.get("warnings")]
    parts.append(_warnings(warns))

    parts.append("<h2>Configuration and provenance</h2>")
    cfg_cols = [c for c in rows.columns if c in _config_columns(rows)]
    parts.append(_details("every cell's configuration", _table(rows[cfg_cols])))
    provs = []
    for _, r in rows.iterrows():
        rep = r.get("report")
        if isinstance(rep, str) and rep:
            p = _read_provenance(Path(rep).parent)
            if p:
                trace = p.get("trace") or {}
                provs.append(
                    {
                        "hash": r["hash"],
                        "stlsim_version": p.get("stlsim_version"),
                        "git_commit": p.get("git_commit"),
                        "trace": trace.get("path"),
                        "trace_sha256": trace.get("sha256"),
                        "host": p.get("host"),
                        "wall_s": p.get("wall_s"),
                    }
                )
    parts.append(_table(pd.DataFrame(provs), caption="provenance of each cell") if provs else "<p>No provenance saved.</p>")
    plan = d / "plan.json"
    if plan.is_file():
        parts.append(_details("the plan as last run", f"<pre>{html.escape(plan.read_text(encoding='utf-8'))}</pre>"))
    return "".join(parts)


def _config_columns(rows: pd.DataFrame) -> list[str]:
    from .sweep import REPLAY_KEYS

    return [c for c in rows.columns if c in ("hash", "trace", "drive", "layer") or c in REPLAY_KEYS or c.startswith("param.")]


def _varying(rows: pd.DataFrame) -> list[str]:
    """The configuration columns that take more than one value (the plan's axes)."""
    return [c for c in _config_columns(rows) if c != "hash" and rows[c].astype(str).nunique() > 1]


def _sweep_bars(rows: pd.DataFrame, axes: list[str], metric: str, path: Path) -> Path | None:
    """One metric's bars (:func:`stlsim.plots.sweep_bars_figure`: a panel
    per trace, a group per combination of the other axes, a bar per layer
    with its value) saved at ``path``; None when there is nothing to plot."""
    from .plots import sweep_bars_figure

    fig = sweep_bars_figure(rows, axes, metric)
    if fig is None:
        return None
    fig.savefig(path, dpi=100)
    return path
