"""DiskSim's ``dm_layout_g4`` as stlsim zones (``stlsim import-disksim``).

The g4 layout (``diskmodel/layout_g4.c``, ``layout_g4_load.c`` and the
parameter description ``modules/layout_g4.modspec`` of DiskSim 4.0) maps LBNs
by a tree instead of a zone table:

* ``TP``: track patterns, triples ``low, high, spt``: a track of ``spt``
  sectors whose LBNs ``0 .. high - low`` lie on sectors ``low .. high``;
* ``IDX``: index nodes, the last one the root. An entry is ``lbn, cyl, off,
  len, cyllen, alen, runlen, cylrunlen, TRACK|IDX, child[, head]``: from
  LBN ``lbn`` and cylinder ``cyl`` of its parent, ``runlen / len`` instances
  of the child (a track pattern on surface ``head``, or another index node),
  each ``len`` LBNs and ``cyllen`` cylinders on (downwards when ``cylrunlen``
  is negative) and ``alen`` of a turn later in angle, the first at ``off``
  (``ltop`` and ``g4_skew``: an LBN's path down the tree gives its cylinder,
  surface, sector and the angle of its track's first sector);
* ``Slips`` (LBN, count) and ``Remaps`` (LBN, count, cylinder, head,
  sector, spt): defects.

stlsim describes a drive by zones of whole cylinders (tracks numbered
cylinder by cylinder), each cylinder's tracks filled in one surface order,
every track's LBAs from its sector 0, and skews in whole sectors. The tree is
walked LBN by LBN and each cylinder checked against that: what fits becomes
the zone table, exactly; the first thing that does not stops the import
with one line naming it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Callable

from .disksim import Block, Param, _fmt
from .errors import ConfigError

__all__ = ["G4Import", "import_g4"]

#: dm_angle_t: a turn is 2^32 (diskmodel/dm_types.h).
_TURN = 1 << 32
#: The error of one angle as DiskSim's files write it ("%f": 6 decimals),
#: plus the truncation to dm_angle_t, in turns.
_ANGLE_ERR = 0.5e-6 + 1.0 / _TURN


def _angle(v: float) -> int:
    """DiskSim's ``dm_angle_dtoi`` (convert.c): a fraction of a turn (whole
    turns dropped) to 2^-32 units, truncated."""
    if v > 1.0:
        v -= int(v)
    return int(v * _TURN) % _TURN


@dataclass
class _Entry:
    """One index entry (``struct idx_ent``)."""

    lbn: int
    cyl: int
    off: int  # dm_angle_t
    len: int
    cyllen: int
    alen: int  # dm_angle_t
    runlen: int
    cylrunlen: int
    track: bool  # child is a track pattern (TRACK), else an index node (IDX)
    child: int
    head: int
    where: str  # "IDX node n entry j" for messages


@dataclass
class _Track:
    """A track holding LBNs, in LBN order."""

    lbn: int
    cyl: int
    head: int
    lbns: int
    tp: int
    angle: int  # dm_angle_t of its first sector
    err: float  # how far, in turns, the file's rounded angles may put it
    where: str


@dataclass
class _Cylinder:
    """The tracks of one cylinder, in LBN order."""

    cyl: int
    tracks: list[_Track]
    spt: int
    spare: int
    descending: bool


@dataclass
class G4Zone:
    """One stlsim zone: ``[[zones]]`` keys with the comments citing DiskSim."""

    first_cyl: int
    spt: int
    lines: list[str] = field(default_factory=list)


@dataclass
class G4Import:
    """The zone table of a g4 layout."""

    surface_order: str
    zones: list[G4Zone]
    lbns: int
    header: list[str]
    #: The ``IDX`` parameter (for citations).
    idx: Param


def _int(p: Param, v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{p.where}: {what} must be a whole number, not {_fmt(v)}")
    return v


def _num(p: Param, v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise ConfigError(f"{p.where}: {what} must be a number, not {_fmt(v)}")
    return float(v)


def _list(p: Param | None, block: Block, key: str) -> tuple[Param, list[Any]]:
    if p is None:
        raise ConfigError(f"{block.file}:{block.line}: dm_layout_g4 has no '{key}'")
    if not isinstance(p.value, list):
        raise ConfigError(f"{p.where}: '{key}' must be a list, not {_fmt(p.value)}")
    return p, p.value


def _patterns(p: Param) -> list[tuple[int, int, int]]:
    """``TP``: (low, high, spt) triples (g4_load_tp)."""
    v = p.value
    if len(v) % 3:
        raise ConfigError(f"{p.where}: 'TP' must hold (low, high, spt) triples; it has {len(v)} values")
    out = []
    for i in range(0, len(v), 3):
        low, high, spt = (_int(p, x, f"TP[{i // 3}]") for x in v[i : i + 3])
        if not 0 <= low <= high < spt:
            raise ConfigError(f"{p.where}: TP[{i // 3}] = [{low}, {high}, {spt}]: needs 0 <= low <= high < spt")
        out.append((low, high, spt))
    return out


def _nodes(p: Param, n_tps: int, surfaces: int) -> list[list[_Entry]]:
    """``IDX``: the index nodes, each a list of entries (g4_load_idx)."""
    nodes: list[list[_Entry]] = []
    for n, node in enumerate(p.value):
        if not isinstance(node, list):
            raise ConfigError(f"{p.where}: IDX node {n} must be a list of entries, not {_fmt(node)}")
        ents, i = [], 0
        while i < len(node):
            where = f"IDX node {n} entry {len(ents)}"
            if i + 10 > len(node):
                raise ConfigError(f"{p.where}: {where} is cut short: an entry has 8 numbers, TRACK or IDX, a child index (and a head)")
            lbn, cyl = _int(p, node[i], f"{where} lbn"), _int(p, node[i + 1], f"{where} cyl")
            off = _angle(_num(p, node[i + 2], f"{where} off"))
            ln, cyllen = _int(p, node[i + 3], f"{where} len"), _int(p, node[i + 4], f"{where} cyllen")
            alen = _angle(_num(p, node[i + 5], f"{where} alen"))
            runlen, cylrunlen = _int(p, node[i + 6], f"{where} runlen"), _int(p, node[i + 7], f"{where} cylrunlen")
            kind, child = node[i + 8], _int(p, node[i + 9], f"{where} child")
            if kind not in ("TRACK", "IDX"):
                raise ConfigError(f"{p.where}: {where}: the child type must be TRACK or IDX, not {_fmt(kind)}")
            track = kind == "TRACK"
            head = 0
            if track:
                if i + 11 > len(node):
                    raise ConfigError(f"{p.where}: {where}: a TRACK entry ends with its head")
                head = _int(p, node[i + 10], f"{where} head")
                if not 0 <= head < surfaces:
                    raise ConfigError(f"{p.where}: {where}: head {head} is not one of the disk's {surfaces} surfaces")
            if not (0 <= child < (n_tps if track else len(p.value))):
                raise ConfigError(f"{p.where}: {where}: no {kind} {child}")
            if ln < 1 or runlen < 0 or lbn < 0:
                raise ConfigError(f"{p.where}: {where}: needs len >= 1 and lbn, runlen >= 0")
            ents.append(_Entry(lbn, cyl, off, ln, cyllen, alen, runlen, cylrunlen, track, child, head, where))
            i += 11 if track else 10
        nodes.append(sorted(ents, key=lambda e: e.lbn))
    if not nodes:
        raise ConfigError(f"{p.where}: 'IDX' has no index node (the last one is the root)")
    return nodes


def _walk(
    p: Param,
    nodes: list[list[_Entry]],
    tps: list[tuple[int, int, int]],
    n: int,
    limit: int | None,
    base: tuple[int, int, int, float],
    path: tuple[int, ...],
) -> Iterator[_Track]:
    """The tracks under node ``n`` in LBN order (ltop's path), its first
    ``limit`` LBNs (all when None); ``base`` is (LBN, cylinder, angle, error)."""
    if n in path:
        raise ConfigError(f"{p.where}: IDX node {n} contains itself (a cycle of IDX children: {' -> '.join(map(str, (*path, n)))})")
    lbn0, cyl0, ang0, err0 = base
    end = 0
    for e in nodes[n]:
        if limit is not None and e.lbn >= limit:
            break
        if e.lbn != end:
            what = "overlaps the one before" if e.lbn < end else f"leaves LBNs {end}..{e.lbn - 1} of its node on no track"
            raise ConfigError(f"{p.where}: {e.where} (LBN {e.lbn}) {what}")
        run = e.runlen if limit is None else min(e.runlen, limit - e.lbn)
        for q in range(-(-run // e.len)):
            # ltop negates the instance for a downward entry (cylrunlen < 0);
            # g4_skew's path (ptol's) does not, so the angle always adds q * alen.
            qc = -q if e.cylrunlen < 0 else q
            at = (lbn0 + e.lbn + q * e.len, cyl0 + e.cyl + qc * e.cyllen, (ang0 + e.off + q * e.alen) % _TURN, err0 + (1 + q) * _ANGLE_ERR)
            count = min(e.len, run - q * e.len)
            if e.track:
                low, high, _ = tps[e.child]
                if count > high - low + 1:
                    raise ConfigError(f"{p.where}: {e.where}: {count} LBNs on TP[{e.child}], which holds {high - low + 1}")
                yield _Track(at[0], at[1], e.head, count, e.child, at[2], at[3], e.where)
            else:
                yield from _walk(p, nodes, tps, e.child, count, at, (*path, n))
        end = e.lbn + e.runlen
    if limit is not None and end < limit:
        raise ConfigError(f"{p.where}: IDX node {n} maps {end} LBNs where its parent entry needs {limit}")


def _cylinders(p: Param, tracks: Iterator[_Track], tps: list[tuple[int, int, int]], surfaces: int, cylinders: int) -> Iterator[_Cylinder]:
    """The tracks grouped by cylinder, each cylinder checked for what a
    stlsim zone can hold: every surface's track, in ascending or descending
    surface order, each holding its pattern's LBNs from sector 0."""
    cur: list[_Track] = []
    done: set[int] = set()

    def close() -> _Cylinder:
        c = cur[0].cyl
        heads = [t.head for t in cur]
        if len(cur) != surfaces:
            raise ConfigError(
                f"{p.where}: {cur[-1].where}: LBNs leave cylinder {c} after {len(cur)} of its {surfaces} surfaces' tracks "
                "(stlsim fills every track of a cylinder before the next: tracks numbered cylinder by cylinder)"
            )
        asc = list(range(surfaces))
        if heads not in (asc, asc[::-1]):
            raise ConfigError(f"{p.where}: {cur[0].where}: cylinder {c} visits its surfaces in the order {heads}; stlsim's are ascending or descending")
        pats = {tps[t.tp][1:] for t in cur}
        if len(pats) > 1:
            raise ConfigError(f"{p.where}: {cur[0].where}: the tracks of cylinder {c} have different track patterns (sectors per track or spares)")
        high, spt = pats.pop()
        done.add(c)
        return _Cylinder(c, list(cur), spt, spt - 1 - high, heads != asc)

    for t in tracks:
        low, high, spt = tps[t.tp]
        if not 0 <= t.cyl < cylinders:
            raise ConfigError(f"{p.where}: {t.where}: LBN {t.lbn} lies on cylinder {t.cyl}, outside the disk's {cylinders}")
        if low != 0 or t.lbns != high - low + 1:
            what = f"starts at sector {low}" if low else f"holds {t.lbns} of its pattern's {high - low + 1} LBNs"
            raise ConfigError(f"{p.where}: {t.where}: the track at cylinder {t.cyl}, head {t.head} {what}; stlsim's tracks hold their LBAs from sector 0, all of them")
        if cur and t.cyl != cur[0].cyl:
            yield close()
            if t.cyl < cur[0].cyl:
                raise ConfigError(f"{p.where}: {t.where}: LBN {t.lbn} moves down to cylinder {t.cyl} (stlsim numbers LBAs cylinder by cylinder, upwards)")
            cur = []
        if t.cyl in done:
            raise ConfigError(f"{p.where}: {t.where}: LBN {t.lbn} returns to cylinder {t.cyl} (stlsim numbers LBAs cylinder by cylinder, upwards)")
        if any(u.head == t.head for u in cur):
            raise ConfigError(f"{p.where}: {t.where}: LBN {t.lbn} maps to the track at cylinder {t.cyl}, head {t.head} again: a track holds one run of LBNs here")
        cur.append(t)
    if cur:
        yield close()


def _sectors(t: _Track, spt: int) -> float:
    """The track's first-sector angle in sectors of its track."""
    return t.angle * spt / _TURN


def _off(actual: float, want: int, spt: int) -> float:
    """How far ``actual`` lies from ``want`` sectors, modulo a turn."""
    return abs((actual - want + spt / 2) % spt - spt / 2)


@dataclass
class _Fit:
    """A zone being fitted: its whole-sector skews (cs None until its
    second cylinder) and how far DiskSim's angles stray from them."""

    first: _Cylinder
    fbo: int
    ts: int
    cs: int | None = None
    last: int = 0
    stray: float = 0.0

    def angle(self, c: int, i: int, surfaces: int) -> int:
        m = c - self.first.cyl
        return self.fbo + (i + (surfaces - 1) * m) * self.ts + m * (self.cs or 0)

    def fits(self, cyl: _Cylinder, surfaces: int) -> bool:
        """Whether every track of ``cyl`` lies where the skews put it, to
        the file's precision (and record the largest stray)."""
        spt = cyl.spt
        stray = 0.0
        for i, t in enumerate(cyl.tracks):
            d = _off(_sectors(t, spt), self.angle(cyl.cyl, i, surfaces) % spt, spt)
            if d > t.err * spt + 1e-9:
                return False
            stray = max(stray, d)
        self.stray = max(self.stray, stray)
        return True


def _start(cyl: _Cylinder, surfaces: int, p: Param) -> _Fit:
    """A zone starting at ``cyl``: its first-sector offset and track skew,
    whole sectors, or a one-line error."""
    spt = cyl.spt
    a = [_sectors(t, spt) for t in cyl.tracks]
    fbo = round(a[0]) % spt
    ts = round(a[1] - a[0]) % spt if surfaces > 1 else 0
    fit = _Fit(cyl, fbo, ts, last=cyl.cyl)
    if not fit.fits(cyl, surfaces):
        i = max(range(surfaces), key=lambda k: _off(a[k], fit.angle(cyl.cyl, k, surfaces) % spt, spt))
        t = cyl.tracks[i]
        raise ConfigError(
            f"{p.where}: {t.where}: the track at cylinder {cyl.cyl}, head {t.head} starts {a[i]:.6f} sectors into the turn (its IDX angles), "
            "which no whole-sector skews from its cylinder's first track give: stlsim counts skews in whole sectors"
        )
    return fit


def _join(fit: _Fit, cyl: _Cylinder, surfaces: int, serp_in_zone: bool) -> bool:
    """Whether ``cyl`` continues the zone ``fit`` (adjacent, same format,
    skews that carry on)."""
    f = fit.first
    if cyl.cyl != fit.last + 1 or (cyl.spt, cyl.spare) != (f.spt, f.spare):
        return False
    if serp_in_zone and cyl.descending != ((cyl.cyl - f.cyl) % 2 == 1):
        return False
    if fit.cs is None:
        m = cyl.cyl - f.cyl
        want = fit.fbo + (surfaces - 1) * m * fit.ts
        fit.cs = round(_sectors(cyl.tracks[0], cyl.spt) - want) % cyl.spt
        if not fit.fits(cyl, surfaces):
            fit.cs = None
            return False
    elif not fit.fits(cyl, surfaces):
        return False
    fit.last = cyl.cyl
    return True


def _order(cyls: list[_Cylinder]) -> str:
    """The surface order of every cylinder: ascending, serpentine by the
    cylinder's number, or (checked zone by zone) serpentine within zones."""
    if not any(c.descending for c in cyls):
        return "ascending"
    if all(c.descending == (c.cyl % 2 == 1) for c in cyls):
        return "serpentine"
    return "serpentine-in-zone"


def _zones(p: Param, cyls: list[_Cylinder], surfaces: int) -> tuple[str, list[tuple[_Fit, int]]]:
    """Zones, greedily: a cylinder joins the zone before it when it follows
    it directly with the same format and skews; each with its gap (cylinders
    without LBNs after it)."""
    order = _order(cyls)
    serp = order == "serpentine-in-zone"
    out: list[_Fit] = []
    for c in cyls:
        if out and _join(out[-1], c, surfaces, serp):
            continue
        if serp and c.descending:
            raise ConfigError(
                f"{p.where}: {c.tracks[0].where}: cylinder {c.cyl} visits its surfaces last to first where a zone would start; "
                "stlsim's serpentine orders start each zone (or each even cylinder) on surface 0"
            )
        out.append(_start(c, surfaces, p))
    zones = [(f, (out[i + 1].first.cyl if i + 1 < len(out) else -1) - f.last - 1) for i, f in enumerate(out)]
    return order, zones


def _zone_lines(fit: _Fit, gap: int, surfaces: int, tp_p: Param, idx_p: Param, tps: list[tuple[int, int, int]]) -> G4Zone:
    f = fit.first
    t0 = f.tracks[0]
    low, high, spt = tps[t0.tp]
    cs = fit.cs or 0
    z = G4Zone(f.cyl, spt)
    span = f"cylinders {f.cyl}-{fit.last}" if fit.last > f.cyl else f"cylinder {f.cyl}"
    z.lines = [
        "",
        "[[zones]]",
        f"{'first_track = ' + str(f.cyl * surfaces):<40} # {idx_p.where} IDX: {span} ({t0.where} holds LBN {t0.lbn} on cylinder {f.cyl})",
        f"{'sectors_per_track = ' + str(spt):<40} # {tp_p.where} TP[{t0.tp}] = [{low}, {high}, {spt}]",
        f"{'track_skew_sectors = ' + str(fit.ts):<40} # {idx_p.where} IDX angles: each track of a cylinder starts this many sectors after the one before",
        f"{'cylinder_skew_sectors = ' + str(cs):<40} # {idx_p.where} IDX angles: a cylinder's first track, after the last one before it",
    ]
    if fit.fbo:
        z.lines.append(f"{'first_block_offset_sectors = ' + str(fit.fbo):<40} # {idx_p.where} IDX angles: the zone's first track (off, alen along its path)")
    if f.spare:
        z.lines.append(f"{'spare_sectors_per_track = ' + str(f.spare):<40} # {tp_p.where} TP[{t0.tp}]: LBNs on sectors 0..{high} of {spt}")
    if gap > 0:
        z.lines.append(f"{'gap_cylinders = ' + str(gap):<40} # {idx_p.where} IDX: cylinder(s) {fit.last + 1}..{fit.last + gap} hold no LBN")
    if fit.stray > 1e-9:
        z.lines.append(f"# DiskSim's own angles, from the file's rounded fractions of a turn, lie within {fit.stray:.2g} sectors of these skews")
    return z


def import_g4(layout: Block, surfaces: int, cylinders: int, use: Callable[[Param | None], Param | None]) -> G4Import:
    """The zone table of ``layout`` (a ``dm_layout_g4`` block), or a one-line
    ConfigError naming what stlsim's zones cannot hold."""
    tp_p, _ = _list(use(layout.get("TP")), layout, "TP")
    idx_p, _ = _list(use(layout.get("IDX")), layout, "IDX")
    slips_p, slips = _list(use(layout.get("Slips")), layout, "Slips")
    remaps_p, remaps = _list(use(layout.get("Remaps")), layout, "Remaps")
    if any(slips[i] != 0 for i in range(1, len(slips), 2)):
        raise ConfigError(
            f"{slips_p.where}: dm_layout_g4 Slips are not imported: a slip moves every later LBN on across the whole disk "
            "(layout_g4.c, slipcount), which stlsim's slipped sectors, moving LBAs into their zone's spares, cannot follow"
        )
    if remaps:
        raise ConfigError(f"{remaps_p.where}: dm_layout_g4 Remaps are not imported: stlsim has no remapped defects (LBNs sent to another track, remap_lbn)")
    tps = _patterns(tp_p)
    nodes = _nodes(idx_p, len(tps), surfaces)
    tracks = _walk(idx_p, nodes, tps, len(nodes) - 1, None, (0, 0, 0, 0.0), ())
    cyls = list(_cylinders(idx_p, tracks, tps, surfaces, cylinders))
    if not cyls:
        raise ConfigError(f"{idx_p.where}: the g4 layout maps no LBN")
    if cyls[0].cyl != 0:
        raise ConfigError(f"{idx_p.where}: the g4 layout's first LBN lies on cylinder {cyls[0].cyl}; stlsim's first zone starts at cylinder 0")
    order, fits = _zones(idx_p, cyls, surfaces)
    zones = []
    for fit, gap in fits:
        if gap < 0:  # the last zone: the cylinders after its last to the disk's end
            gap = cylinders - 1 - fit.last
        zones.append(_zone_lines(fit, gap, surfaces, tp_p, idx_p, tps))
    lbns = sum(t.lbns for c in cyls for t in c.tracks)
    header = [
        "",
        f"# {idx_p.where} \"IDX\": DiskSim's g4 index tree (layout_g4.c, ltop and g4_skew) walked LBN by LBN: {lbns} LBNs",
        f"# on {len(cyls)} cylinders, each filled track by track from sector 0; zones are its runs of cylinders",
        "# of one track pattern whose track angles step by whole-sector skews (first_track = cylinder x surfaces).",
    ]
    return G4Import(order, zones, lbns, header, idx_p)
