"""The claims tables of the evaluation scripts (docs: each paper's page):
one row per claim with the paper's value, ours, a verdict computed from the
figures, and the reason where it falls short."""

from __future__ import annotations


class Claims:
    """Rows of a claims table, printed as Markdown."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str, str]] = []

    def add(self, what: str, paper: str, ours: str, ok: bool, direction: bool, reason: str) -> None:
        """A claim: match when `ok`, else same direction (when `direction`)
        or contradicts, with `reason` (kept only when it does not match)."""
        verdict = "match" if ok else ("same direction" if direction else "contradicts")
        self.rows.append((what, paper, ours, verdict, "" if ok else reason))

    def print(self, first: str = "claim") -> None:
        """The table, its first column headed `first`."""
        print(f"| {first} | paper | ours | verdict | reason |")
        print("|---|---|---|---|---|")
        for r in self.rows:
            print("| " + " | ".join(r) + " |")
