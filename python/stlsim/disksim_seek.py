"""DiskSim's seek models as stlsim ``[seek]`` tables (``stlsim import-disksim``).

DiskSim 4.0's ``dm_mech_g1`` picks its seek function by ``Seek type``
(the generated loader ``modules/dm_mech_g1_param.c``, ``DM_MECH_G1_SEEK_TYPE``
and the table ``dm_mech_g1_seekfns`` in ``diskmodel/mech_g1_seektime.c``):

* ``extracted``: a measured curve (a ``.seek`` file), interpolated linearly;
* ``hplplus10``: ``dm_mech_g1_seek_1st10_plus_hpl``: ``First ten seek times``
  for distances 1 to 10, then Ruemmler and Wilkes's equation from the six
  ``HPL seek equation values``: ``V2 + V3 * sqrt(d)`` below the boundary
  ``V1``, ``V4 + V5 * d`` from it on (``V6``, the one-cylinder time, is not
  read);
* ``hpl``: ``dm_mech_g1_seek_hpl``: the same equation, ``V6`` for one
  cylinder unless it is -1;
* ``constant``, ``linear``, ``curve``: ``dm_mech_g1_seek_const``,
  ``_3pt_line``, ``_3pt_curve``.

DiskSim computes in ``dm_time_t``, whole picoseconds (``diskmodel/dm_types.h``):
each time in the file is truncated to picoseconds (``dm_time_dtoi``,
``convert.c``), the square root is ``sqrt64(d << 32)`` (``sqrt.c``, the
integer square root scaled by 2^16) times ``V3`` shifted down 16 bits. The
tables here hold exactly those values (ms = picoseconds / 10^9), one point per
whole distance where the curve is not linear and the two ends of its linear
part: stlsim interpolates linearly between points and is only ever asked
whole cylinder distances, so the table is DiskSim's function.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from .disksim import Block, Param, _fmt
from .errors import ConfigError

__all__ = ["SeekImport", "import_seek"]

#: Picoseconds a millisecond (DM_TIME_MSEC).
_PS_PER_MS = 1_000_000_000
_U64 = 1 << 64


@dataclass
class SeekImport:
    """A seek model as ``[seek]`` lines, with what it says about the drive."""

    #: The ``[seek]`` section (starting with an empty line).
    lines: list[str]
    #: How the description names it ("measured seek table", ...).
    what: str
    #: Files read besides the parameter files (the ``.seek`` file).
    files: list[str] = field(default_factory=list)


def _dtoi(ms: float) -> int:
    """DiskSim's ``dm_time_dtoi``: ms to picoseconds, truncated as C's cast."""
    return int(ms * float(_PS_PER_MS))


def _itod(ps: int) -> float:
    """DiskSim's ``dm_time_itod``: picoseconds to ms."""
    return ps / float(_PS_PER_MS)


def _sqrt64(x: int) -> int:
    """``sqrt64`` of ``diskmodel/sqrt.c``: a binary search that returns the
    integer square root for every ``d << 32`` with d below 2^22 cylinders
    (checked against ``math.isqrt``); larger ones run the search itself."""
    if x < 1 << 54:
        return math.isqrt(x)
    if x <= 1:
        return x
    r = 2147483647
    for c in range(33):
        xsq = (r * r) % _U64
        if xsq <= x and ((r + 1) * (r + 1)) % _U64 > x:
            return r
        if xsq > x:
            r = (r - (1 << (31 - c))) % _U64
        else:
            r = (r + (0 if r == 2147483647 else 1 << (31 - c))) % _U64
    return r


def _hpl_root_ps(d: int, v2: int, v3: int) -> int:
    """``((sqrt64((uint64_t)dist << 32) * hpseek[2]) >> 16) + hpseek[1]``,
    in C's unsigned 64-bit arithmetic."""
    return ((((_sqrt64(d << 32) * v3) % _U64) >> 16) + v2) % _U64


@dataclass
class _Hpl:
    """``HPL seek equation values`` as DiskSim loads them (``do_hpl_seek``)."""

    v1: int  # the boundary, in cylinders
    ps: list[int]  # V2..V6 in picoseconds; V6 is -1 for "none"
    param: Param


def _typed(p: Param, i: int, name: str, want: type, fn: str, notes: list[str]) -> float:
    """Value ``i`` of list ``p`` as a number. DiskSim's loaders also want it
    written as an int or a float (libparam types ``300`` and ``300.0``
    apart) and otherwise leave the whole curve unset; the number is taken
    here, and the difference listed."""
    v = p.value[i]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise ConfigError(f"{p.where}: '{p.key}' {name} must be a number, not {_fmt(v)}")
    if not isinstance(v, want):
        have, need = ("a float", "an int") if want is int else ("an int", "a float")
        notes.append(
            f"{p.where} {p.key}: {name} = {_fmt(v)} is written as {have} where DiskSim 4.0 wants {need} ({fn} rejects it and leaves "
            f"the seek curve unset); taken as {_fmt(want(v))} here"
        )
    return float(v)


def _hpl(p: Param, notes: list[str]) -> _Hpl:
    """The six HPL values, checked as ``do_hpl_seek`` (mech_g1_load.c) checks them."""
    if not isinstance(p.value, list) or len(p.value) < 6:
        n = len(p.value) if isinstance(p.value, list) else 1
        raise ConfigError(f"{p.where}: 'HPL seek equation values' needs 6 values (V1..V6), found {n}")
    v1 = _typed(p, 0, "V1", int, "do_hpl_seek", notes)
    if v1 < 0 or v1 != int(v1):
        raise ConfigError(f"{p.where}: 'HPL seek equation values' V1 = {_fmt(p.value[0])} must be a whole number of cylinders")
    ps: list[int] = []
    for i in range(1, 6):
        v = _typed(p, i, f"V{i + 1}", float, "do_hpl_seek", notes)
        if i == 5 and v == -1.0:
            ps.append(-1)  # "no one-cylinder value" (hpseek[5] = -1)
        elif v < 0:
            # DiskSim lets V6 be negative (its test skips e == 5) and would
            # time a one-cylinder seek below zero.
            raise ConfigError(f"{p.where}: 'HPL seek equation values' V{i + 1} = {_fmt(v)} must not be negative (V6 may be -1.0, none)")
        else:
            ps.append(_dtoi(v))
    return _Hpl(int(v1), ps, p)


def _first_ten(p: Param, notes: list[str]) -> list[int]:
    """The ten times of ``First ten seek times``, as ``do_1st10_seeks`` loads them."""
    if not isinstance(p.value, list) or len(p.value) < 10:
        n = len(p.value) if isinstance(p.value, list) else 1
        raise ConfigError(f"{p.where}: 'First ten seek times' needs 10 values (distances 1 to 10), found {n}")
    out = []
    for i in range(10):
        v = _typed(p, i, f"value {i + 1}", float, "do_1st10_seeks", notes)
        if v < 0:
            raise ConfigError(f"{p.where}: 'First ten seek times' value {i + 1} = {_fmt(v)} must not be negative")
        out.append(_dtoi(v))
    return out


# One point of a table: (distance, picoseconds, what computed it).
_Point = tuple[int, int, str]


def _hpl_points(hpl: _Hpl, first10: list[int] | None, full: int) -> list[_Point]:
    """DiskSim's seek time at every whole distance 1..full where the curve
    is not linear, and the ends of its linear part (``V4 + V5 * d``, exact
    in picoseconds, so stlsim's interpolation between the ends is DiskSim's
    value at every distance between)."""
    v2, v3, v4, v5, v6 = hpl.ps
    pts: list[_Point] = []
    start = 1
    if first10 is not None:  # dm_mech_g1_seek_1st10_plus_hpl: dist <= 10
        pts += [(d, first10[d - 1], "ten") for d in range(1, min(10, full) + 1)]
        start = 11
    elif v6 != -1:  # dm_mech_g1_seek_hpl: dist == 1 && hpseek[5] != -1
        pts.append((1, v6, "one"))
        start = 2
    root_end = min(hpl.v1, full + 1)  # dist < V1: the root part
    pts += [(d, _hpl_root_ps(d, v2, v3), "root") for d in range(start, root_end)]
    lin_start = max(start, hpl.v1)
    # hplplus10 multiplies in integers, hpl in double ((double) dist); both
    # exact for any real drive's picoseconds (below 2^53).
    ends = sorted({lin_start, full}) if lin_start <= full else []
    pts += [(d, v5 * d + v4, "line") for d in ends]
    return pts or [(1, 0, "line")]


def _table_lines(pts: list[_Point], cite: dict[str, str]) -> list[str]:
    """``table = [ ... ]``, four points a line, each line citing its part."""
    lines = ["table = ["]
    i = 0
    while i < len(pts):
        part = pts[i][2]
        chunk = [pts[i]]
        while len(chunk) < 4 and i + len(chunk) < len(pts) and pts[i + len(chunk)][2] == part:
            chunk.append(pts[i + len(chunk)])
        text = ", ".join(f"[{d}, {_itod(ps)!r}]" for d, ps, _ in chunk)
        lines.append(f"  {text + ',':<80} # {cite[part]}")
        i += len(chunk)
    lines.append("]")
    return lines


_MODEL = 'model = "table"'


def _formula_seek(
    mech: Block, type_p: Param, cylinders: int, use: Callable[[Param | None], Param | None], unexpressed: list[str]
) -> SeekImport:
    """``Seek type = hplplus10`` or ``hpl`` as an exact table."""
    kind = type_p.value
    hpl_p = use(mech.get("HPL seek equation values"))
    if hpl_p is None:
        raise ConfigError(f"{type_p.where}: 'Seek type = {kind}' needs 'HPL seek equation values' in the same block")
    hpl = _hpl(hpl_p, unexpressed)
    ten_p = use(mech.get("First ten seek times"))
    first10 = None
    if kind == "hplplus10":
        if ten_p is None:
            raise ConfigError(f"{type_p.where}: 'Seek type = hplplus10' needs 'First ten seek times' in the same block")
        first10 = _first_ten(ten_p, unexpressed)
    full = max(cylinders - 1, 1)
    pts = _hpl_points(hpl, first10, full)
    v = ", ".join(_fmt(x) for x in hpl_p.value[:6])
    fn = "dm_mech_g1_seek_1st10_plus_hpl" if first10 is not None else "dm_mech_g1_seek_hpl"
    cite = {
        "ten": f"{ten_p.where if ten_p else ''} First ten seek times",
        "one": f"{hpl_p.where} V6, one cylinder",
        "root": f"{hpl_p.where} V2 + V3 * sqrt(d), d < V1",
        "line": f"{hpl_p.where} V4 + V5 * d, d >= V1: linear between these",
    }
    lines = [
        "",
        "[seek]",
        f"{_MODEL:<40} # {type_p.where} \"Seek type = {kind}\": DiskSim's seek equation ({fn}, mech_g1_seektime.c)",
    ]
    if first10 is not None and ten_p is not None:
        lines.append(f"# {ten_p.where} \"First ten seek times\": distances 1 to 10, as given.")
    lines += [
        f"# {hpl_p.where} \"HPL seek equation values = [{v}]\": below V1 = {hpl.v1} cylinders",
        "# V2 + V3 * sqrt(d), from it on V4 + V5 * d"
        + ("; V6, the one-cylinder time, is not read by this type." if first10 is not None else "; V6 for one cylinder unless it is -1."),
        "# Each value is DiskSim's own, in its whole picoseconds (dm_time_t: times truncated by",
        "# dm_time_dtoi, sqrt64(d << 32) * V3 >> 16): one point per whole distance where the",
        f"# curve is not linear, the ends of its linear part, up to the full stroke ({full} cylinders).",
    ]
    if kind == "hpl":
        # dm_mech_g1_seek_hpl compares the distance with hpseek[0], which
        # do_hpl_seek never sets (V1 goes to hpseek_v1): DiskSim's own curve
        # then depends on whatever that word holds.
        unexpressed.append(
            f"{type_p.where} Seek type = hpl: imported as Ruemmler and Wilkes's equation with V1 = {hpl.v1} as the boundary; "
            "DiskSim 4.0's dm_mech_g1_seek_hpl compares with hpseek[0], which its loader never sets (do_hpl_seek keeps V1 in hpseek_v1)"
        )
        one = mech.get("Single cylinder seek time")
        numeric = one is not None and isinstance(one.value, (int, float)) and not isinstance(one.value, bool) and math.isfinite(float(one.value))
        if one is not None and numeric and hpl.ps[4] != -1 and one.line > hpl_p.line:
            # Loaded after the HPL values, it replaces seekone unconverted
            # (DM_MECH_G1_SINGLE_CYLINDER_SEEK_TIME: result->seekone = d).
            unexpressed.append(
                f"{one.where} Single cylinder seek time = {_fmt(one.value)}: read after the HPL values, DiskSim 4.0 takes it as {int(one.value)} picoseconds "
                f"for a one-cylinder seek (stored unconverted); V6 = {_fmt(hpl_p.value[5])} ms is used here"
            )
    if kind == "hpl" and ten_p is not None:
        lines.append(f"# {ten_p.where} \"First ten seek times\": ignored by DiskSim for this seek type (do_1st10_seeks)")
    lines += _table_lines(pts, cite)
    return SeekImport(lines, "HPL seek equation" + (" with the first ten seek times" if first10 is not None else ""))


def _constant_seek(mech: Block, type_p: Param, use: Callable[[Param | None], Param | None], unexpressed: list[str]) -> SeekImport:
    """``Seek type = constant``: every seek takes ``Constant seek time``."""
    p = use(mech.get("Constant seek time"))
    if p is None:
        raise ConfigError(f"{type_p.where}: 'Seek type = constant' needs 'Constant seek time' in the same block")
    v = p.value
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)) or v < 0:
        raise ConfigError(f"{p.where}: 'Constant seek time' must be a non-negative number of ms, not {_fmt(v)}")
    # The generated loader stores the value in dm_time_t picoseconds without
    # converting it (result->seektime = d), and dm_mech_g1_seek_const
    # returns it: DiskSim 4.0's seeks take that many picoseconds.
    unexpressed.append(
        f"{p.where} Constant seek time = {_fmt(v)}: imported as {_fmt(v)} ms a seek, as DiskSim's manual says; "
        f"DiskSim 4.0's loader stores it unconverted (result->seektime = d), so its own seeks take {int(v)} picoseconds"
    )
    lines = [
        "",
        "[seek]",
        f"{_MODEL:<40} # {type_p.where} \"Seek type = constant\": every seek of a cylinder or more takes the same time",
        "table = [",
        f"  {'[1, ' + repr(float(v)) + '],':<80} # {p.where} \"Constant seek time = {_fmt(v)}\"",
        "]",
    ]
    return SeekImport(lines, "constant seek time")


def _ignored(mech: Block, use: Callable[[Param | None], Param | None], keys: tuple[str, ...], kind: str) -> list[str]:
    """Comment lines for values this seek type's function never reads
    (do_hpl_seek and do_1st10_seeks warn and skip them)."""
    out = []
    for k in keys:
        p = use(mech.get(k))
        if p is not None:
            out.append(f"# {p.where} \"{k}\": not read by DiskSim for Seek type = {kind}")
    return out


def import_seek(mech: Block, cylinders: int, use: Callable[[Param | None], Param | None], unexpressed: list[str], extracted: Callable[[Param], SeekImport]) -> SeekImport:
    """The seek model of a ``dm_mech_g1`` block. ``extracted`` builds the
    measured curve's table (the importer's own, unchanged)."""
    type_p = use(mech.need("Seek type"))
    assert type_p is not None
    kind = type_p.value
    # DiskSim reads "Average seek time" only for the linear and curve types,
    # which are refused below.
    use(mech.get("Average seek time"))
    if kind == "extracted":
        imp = extracted(type_p)
        imp.lines[4:4] = _ignored(mech, use, ("HPL seek equation values", "First ten seek times", "Constant seek time"), kind)
        return imp
    curve = mech.get("Full seek curve")
    if curve is not None:
        # Its loader marks the type extracted (result->seektime =
        # SEEK_EXTRACTED) without changing the seek function; HPL values or
        # first ten times read after it are then ignored (do_hpl_seek).
        raise ConfigError(
            f"{curve.where}: 'Full seek curve' with 'Seek type = {_fmt(kind)}' ({type_p.where}) is not imported: "
            "DiskSim 4.0 then marks the type extracted but keeps the formula, ignoring its values read after the curve"
        )
    if kind in ("hplplus10", "hpl"):
        # The one-cylinder and full-stroke times only feed linear and curve.
        # (Under hpl a "Single cylinder seek time" read after the HPL values
        # replaces V6; _formula_seek lists that.)
        for k in ("Single cylinder seek time", "Full strobe seek time"):
            use(mech.get(k))
        return _formula_seek(mech, type_p, cylinders, use, unexpressed)
    if kind == "constant":
        for k in ("Single cylinder seek time", "Full strobe seek time"):
            use(mech.get(k))
        imp = _constant_seek(mech, type_p, use, unexpressed)
        imp.lines[3:3] = _ignored(mech, use, ("HPL seek equation values", "First ten seek times"), kind)
        return imp
    if kind == "linear":
        raise ConfigError(
            f"{type_p.where}: 'Seek type = linear' is not imported: DiskSim 4.0's dm_mech_g1_seek_3pt_line divides by the distance itself "
            "(numcyls = cyls), so it gives the full-stroke time to every seek of 2 or more cylinders, and reads its three times unconverted as picoseconds"
        )
    if kind == "curve":
        raise ConfigError(
            f"{type_p.where}: 'Seek type = curve' is not imported: DiskSim 4.0's dm_mech_g1_seek_3pt_curve takes the three seek times, "
            "unconverted (picoseconds), as the coefficients that dm_mech_g1_seek_init (never run in 4.0) would have fitted"
        )
    raise ConfigError(f"{type_p.where}: 'Seek type = {_fmt(kind)}' is not one of DiskSim's (constant, linear, curve, hpl, hplplus10, extracted)")
