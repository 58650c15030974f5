"""The dependency graph of stlsim-core's top-level modules, and its circles.

A module depends on another when one of its files (tests left out) names
`crate::<other>`. A circle is a strongly connected component of more than
one module: code in it cannot be read, changed or tested bottom up. Issue 36
removes them one by one; `tests/test_architecture.py` holds the ground won.

    python scripts/module_graph.py            # the circles, each module's edges in it
    python scripts/module_graph.py --json     # {"edges": {...}, "circles": [[...]]}
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "crates" / "stlsim-core" / "src"


def _module(path: Path, src: Path) -> str | None:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts == ["lib"]:
        return None
    return parts[0]


def _is_test_code(path: Path) -> bool:
    return path.name in ("tests.rs", "test_util.rs") or path.stem.endswith("_tests") or "tests" in path.parts[:-1]


def edges(src: Path = SRC) -> dict[str, set[str]]:
    """Module -> the other top-level modules its non-test code names."""
    g: dict[str, set[str]] = defaultdict(set)
    for f in sorted(src.rglob("*.rs")):
        m = _module(f, src)
        if m is None or _is_test_code(f):
            continue
        text = f.read_text()
        # Inline test modules (`#[cfg(test)] mod tests`, `mod mechanics_tests`)
        # close their files.
        cut = re.search(r"#\[cfg\(test\)\]\s*\n\s*mod \w+", text)
        if cut:
            text = text[: cut.start()]
        # Doc comments name modules in links; only code counts.
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
        g[m]  # a module that names no other is a node too
        for ref in re.findall(r"crate::([a-z_][a-z0-9_]*)", code):
            if ref != m:
                g[m].add(ref)
    return dict(g)


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(set(g) | {t for ts in g.values() for t in ts}):
        if v not in index:
            visit(v)
    return out


def levels(g: dict[str, set[str]]) -> list[list[str]]:
    """The modules bottom up, when there are no circles: level 0 names no
    other module of the core, each module above names only modules of lower
    levels (its level is one more than the highest it names)."""
    level: dict[str, int] = {}

    def of(m: str) -> int:
        if m not in level:
            level[m] = 1 + max((of(d) for d in g.get(m, ()) if d in g), default=-1)
        return level[m]

    for m in g:
        of(m)
    top = max(level.values(), default=-1)
    return [sorted(m for m in g if level[m] == i) for i in range(top + 1)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print the edges and circles as JSON")
    ns = p.parse_args()
    g = edges()
    cs = circles(g)
    if ns.json:
        order = levels(g) if not cs else None
        print(json.dumps({"edges": {k: sorted(v) for k, v in sorted(g.items())}, "circles": cs, "levels": order}, indent=1))
        return 0
    for c in cs:
        print("circle: " + ", ".join(c))
        for m in c:
            print(f"    {m} -> " + ", ".join(sorted(t for t in g[m] if t in c)))
    if not cs:
        print("bottom up (each level names only the levels below it):")
        for i, ms in enumerate(levels(g)):
            print(f"{i}. " + ", ".join(ms))
    print(f"{len(g)} modules, {len(cs)} circle{'s' if len(cs) != 1 else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
