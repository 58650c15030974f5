"""Import a drive from DiskSim's parameter files into a commented stlsim
drive description (``stlsim import-disksim``).

DiskSim 4.0 describes a disk in three files tied together by a run file:

* ``.parv`` (the run file): buses, controller, driver, ``source X.diskspecs``,
  ``instantiate [ disk0 ] as NAME`` and the ``topology`` that puts the disk
  on a bus;
* ``.diskspecs``: a ``disksim_disk NAME { ... }`` block: controller
  overheads, buffer (segments, read-ahead, fast writes), scheduler, and
  ``Model = source X.model``;
* ``.model``: a ``dm_disk NAME { ... }`` block: surfaces, cylinders, the
  mechanics (``dm_mech_g1``: seek type and ``Full seek curve = X.seek``, or a
  seek equation, head switch, write settle, RPM) and the layout
  (``dm_layout_g1``: zones with blocks per track, skews, spares; or
  ``dm_layout_g4``, an index tree, often sourced from a ``.layout`` file);
* ``.seek``: ``Seek distances measured: N`` then ``distance, ms`` lines.

Seek equations are imported by ``disksim_seek`` and g4 layouts by
``disksim_g4`` (imported when needed: they use this module's types).

The parameter language (DiskSim's libparam) is nested ``Type { Key = value,
... }`` blocks; values are numbers, words (file names), typed blocks, lists
``[ ... ]`` and ``source FILE`` (another file holding one block, resolved
relative to the including file); ``#`` starts a comment. This module parses
it with the file and line of every value, so the drive file it writes can
cite the DiskSim line each value came from, as the hand-made
``hp-c3323a-1surface`` preset does.

Every DiskSim value stlsim cannot express yet is listed, with its file and
line, in a comment block of the output and on stderr. A value is *not*
listed when stlsim already behaves as it says (a zero overhead, a disabled
feature, FCFS scheduling, one request at a time) or when it only controls
DiskSim's own statistics output.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from .disksim_seek import SeekImport

__all__ = ["Block", "DisksimImport", "Param", "import_disksim", "parse_file"]


# --------------------------------------------------------------------------
# The parameter language


@dataclass
class Param:
    """One ``Key = value`` of a block, with where it was written."""

    key: str
    value: Any  # float | int | str | Block | list[Any]
    file: Path
    line: int

    @property
    def where(self) -> str:
        """``file:line`` (the file's name only: the files sit side by side)."""
        return f"{self.file.name}:{self.line}"


@dataclass
class Block:
    """A ``Type Name { ... }`` definition or a typed block value ``Type { ... }``."""

    type: str
    name: str | None
    file: Path
    line: int
    params: list[Param] = field(default_factory=list)

    def get(self, key: str) -> Param | None:
        """The parameter named ``key`` (DiskSim matches names exactly), or None."""
        for p in self.params:
            if p.key == key:
                return p
        return None

    def need(self, key: str) -> Param:
        """The parameter named ``key``, or a ConfigError naming the block's file and line."""
        p = self.get(key)
        if p is None:
            raise ConfigError(f"{self.file}:{self.line}: {self.type} {self.name or ''} has no '{key}'".replace("  ", " "))
        return p


@dataclass
class ParsedFile:
    """The top level of one parameter file."""

    path: Path
    blocks: list[Block] = field(default_factory=list)
    #: ``instantiate [ names ] as TYPE``: instance name -> (definition name, line).
    instances: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: ``topology``: (parent instance, its type) of each instance.
    parents: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Files this one sourced at its top level, parsed.
    sourced: list[ParsedFile] = field(default_factory=list)

    def all_blocks(self) -> Iterator[Block]:
        """Its blocks, then those of the files it sourced (recursively)."""
        yield from self.blocks
        for s in self.sourced:
            yield from s.all_blocks()


_WORD_END = set(" \t\r\n,{}[]=#")
_MODEL_TABLE = 'model = "table"'


class _Parser:
    """A recursive-descent reader of one DiskSim parameter file."""

    def __init__(self, path: Path, seen: tuple[Path, ...]) -> None:
        self.path = path
        self.seen = (*seen, path.resolve())
        try:
            self.text = path.read_text(encoding="latin-1")
        except OSError as e:
            raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
        self.pos = 0
        self.line = 1

    # -- characters
    def _error(self, msg: str, line: int | None = None) -> ConfigError:
        return ConfigError(f"{self.path}:{line or self.line}: {msg}")

    def _skip(self) -> None:
        """Skip white space and ``#`` comments, counting lines."""
        t = self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c == "\n":
                self.line += 1
                self.pos += 1
            elif c in " \t\r":
                self.pos += 1
            elif c == "#":
                while self.pos < len(t) and t[self.pos] != "\n":
                    self.pos += 1
            else:
                return

    def _peek(self) -> str:
        self._skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _expect(self, c: str, what: str) -> None:
        if self._peek() != c:
            got = self._peek() or "end of file"
            raise self._error(f"expected '{c}' {what}, found {got!r}")
        self.pos += 1

    def _word(self, what: str) -> str:
        self._skip()
        start = self.pos
        t = self.text
        while self.pos < len(t) and t[self.pos] not in _WORD_END:
            self.pos += 1
        if self.pos == start:
            got = t[self.pos] if self.pos < len(t) else "end of file"
            raise self._error(f"expected {what}, found {got!r}")
        return t[start : self.pos]

    def _key(self) -> str:
        """A parameter name: everything up to ``=`` (names hold spaces, dots, brackets)."""
        self._skip()
        start, line = self.pos, self.line
        t = self.text
        while self.pos < len(t) and t[self.pos] not in "=\n{}[],#":
            self.pos += 1
        key = " ".join(t[start : self.pos].split())
        if not key:
            got = t[self.pos] if self.pos < len(t) else "end of file"
            raise self._error(f"expected a parameter name, found {got!r}", line)
        if self._peek() != "=":
            raise self._error(f"expected '=' after '{key}'", line)
        return key

    # -- grammar
    def parse(self) -> ParsedFile:
        """The whole file."""
        out = ParsedFile(self.path)
        while self._peek():
            line = self.line
            word = self._word("a block definition, 'source', 'instantiate' or 'topology'")
            if word == "source":
                out.sourced.append(self._source(line).parse())
            elif word == "instantiate":
                names = self._list(line)
                if self._word("'as'") != "as":
                    raise self._error("expected 'as' after 'instantiate [ ... ]'", line)
                target = self._word("the name of a definition")
                for n in names:
                    out.instances[str(n)] = (target, line)
            elif word == "topology":
                self._topology(out, None)
            elif self._peek() == "{":
                # A block without a name: a file that holds one block to be
                # sourced as a value (DiskSim's g4 layouts, "Layout Model =
                # source X.layout" holding "dm_layout_g4 { ... }").
                out.blocks.append(self._block(word, None, line))
            else:
                name = self._word(f"a name for the {word} definition")
                if self._peek() != "{":
                    raise self._error(f"expected '{{' after '{word} {name}'")
                out.blocks.append(self._block(word, name, self.line))
        return out

    def _source(self, line: int) -> _Parser:
        fname = self._word("a file name after 'source'")
        p = (self.path.parent / fname)
        if not p.is_file():
            raise self._error(f"source file '{fname}' not found (looked in {self.path.parent})", line)
        if p.resolve() in self.seen:
            raise self._error(f"'{fname}' sources itself (a cycle of source lines)", line)
        return _Parser(p, self.seen)

    def _topology(self, out: ParsedFile, parent: tuple[str, str] | None) -> None:
        kind = self._word("a component type in the topology")
        name = self._word("a component name in the topology")
        if parent is not None:
            out.parents[name] = parent
        self._expect("[", f"after '{kind} {name}' in the topology")
        while self._peek() != "]":
            if not self._peek():
                raise self._error("the topology's '[' is never closed")
            self._topology(out, (name, kind))
            if self._peek() == ",":
                self.pos += 1
        self.pos += 1

    def _block(self, kind: str, name: str | None, line: int) -> Block:
        self._expect("{", "to open a block")
        b = Block(kind, name, self.path, line)
        while True:
            c = self._peek()
            if c == "}":
                self.pos += 1
                return b
            if not c:
                raise self._error(f"the block '{kind} {name or ''}' opened on line {line} is never closed".replace("  ", " "), line)
            key_line = self.line
            key = self._key()
            self.pos += 1  # '='
            value = self._value(key_line)
            b.params.append(Param(key, value, self.path, key_line))
            c = self._peek()
            if c == ",":
                self.pos += 1
            elif not c:
                raise self._error(f"the block '{kind} {name or ''}' opened on line {line} is never closed".replace("  ", " "), line)
            elif c != "}":
                raise self._error(f"expected ',' or '}}' after the value of '{key}', found {c!r}")

    def _value(self, line: int) -> Any:
        c = self._peek()
        if c == "[":
            return self._list(line)
        if c == "{":
            return self._block("", None, self.line)
        word = self._word("a value")
        if word == "source":
            sub = self._source(self.line)
            parsed = sub.parse()
            if len(parsed.blocks) != 1:
                raise self._error(f"'{sub.path.name}' must define exactly one block to be a value (it defines {len(parsed.blocks)})", line)
            return parsed.blocks[0]
        if self._peek() == "{":
            return self._block(word, None, self.line)
        return _number(word)

    def _list(self, line: int) -> list[Any]:
        self._expect("[", "to open a list")
        items: list[Any] = []
        while True:
            c = self._peek()
            if c == "]":
                self.pos += 1
                return items
            if not c:
                raise self._error(f"the list opened on line {line} is never closed", line)
            items.append(self._value(self.line))
            c = self._peek()
            if c == ",":
                self.pos += 1
            elif c != "]":
                raise self._error(f"expected ',' or ']' in a list, found {c or 'end of file'!r}")


def _number(word: str) -> Any:
    """An int or float when ``word`` is one (as libparam reads it), else the word."""
    try:
        return int(word)
    except ValueError:
        pass
    try:
        return float(word)
    except ValueError:
        return word


def parse_file(path: str | Path) -> ParsedFile:
    """Parse one DiskSim parameter file (``source`` lines resolved relative to it).

    Raises:
        ConfigError: naming ``file:line`` of the first malformed construct.
    """
    return _Parser(Path(path), ()).parse()


# --------------------------------------------------------------------------
# From DiskSim's blocks to stlsim's keys


@dataclass
class _Out:
    """One emitted ``key = value`` with its comment."""

    key: str
    value: Any
    why: str


@dataclass
class DisksimImport:
    """A drive imported from DiskSim: its TOML text and what could not be expressed."""

    #: The drive description, commented.
    toml: str
    #: ``file:line Key = value: why`` for every DiskSim value stlsim cannot express yet.
    unexpressed: list[str]
    #: The drive's name.
    name: str


# Keys that only steer DiskSim's statistics or its own bookkeeping.
_REPORTING = re.compile(r"^(Print |Avg sectors per cylinder$)")

# DiskSim values that say what stlsim already does: a key maps to the values
# that are equivalent (a zero/disabled feature is handled generically).
_EQUIVALENT: dict[str, tuple[Any, ...]] = {
    "Scheduling policy": (1,),  # FCFS, as stlsim's device
    "Max queue length": (1,),  # the disk serves one request at a time, as stlsim's device
    "Cylinder mapping strategy": tuple(range(0, 7)),  # only used by cylinder-aware schedulers; FCFS ignores it
    "Timeout time/weight": tuple(range(0, 100)),  # scheduler timeouts: off ("Scheduling timeout scheme = 0")
    "Timeout scheduling": tuple(range(0, 100)),
    "Priority scheduling": tuple(range(0, 100)),
    "Maximum concat size": tuple(range(0, 100000)),  # request concatenation: off ("Sequential stream scheme = 0")
    "Calc sector by sector": (0, 1),  # how DiskSim steps its buffer model; no timing of its own
    "Percent error in rpms": (0, 0.0),
    "Access time type": ("trackSwitchPlusRotation",),  # seek (or head switch), then rotational latency: stlsim's order
    "Rangesize for sparing": tuple(range(0, 100000)),  # only meaningful with sparing (listed there)
    "Immed transfer partial hit": (1,),  # a read's cached prefix is sent at once, as stlsim's read cache does
}


def _neutral(key: str, value: Any) -> bool:
    """Whether a value of a key stlsim does not model means "nothing to model"."""
    if key in _EQUIVALENT:
        return value in _EQUIVALENT[key]
    if isinstance(value, (int, float)) and value == 0:
        return True
    if isinstance(value, list) and not value:
        return True
    return False


def _fmt(v: Any) -> str:
    """A value as DiskSim's files write it (for comments)."""
    if isinstance(v, Block):
        return f"{v.type} {{...}}"
    if isinstance(v, list):
        inner = ", ".join(_fmt(x) for x in v[:6])
        return f"[{inner}{', ...' if len(v) > 6 else ''}]"
    return str(v)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
            return f"{v:.1f}"
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(v)


def _as_int(p: Param, what: str) -> int:
    v = p.value
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 0:
        raise ConfigError(f"{p.file}:{p.line}: '{p.key}' must be a whole number ({what}), not {_fmt(v)}")
    return int(v)


def _as_float(p: Param, what: str) -> float:
    v = p.value
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)) or v < 0:
        raise ConfigError(f"{p.file}:{p.line}: '{p.key}' must be a non-negative number ({what}), not {_fmt(v)}")
    return float(v)


def _as_block(p: Param, what: str) -> Block:
    if not isinstance(p.value, Block):
        raise ConfigError(f"{p.file}:{p.line}: '{p.key}' must be a block ({what}), not {_fmt(p.value)}")
    return p.value


def read_seek_file(path: Path) -> list[tuple[int, float, int]]:
    """The measured seek curve of a DiskSim ``.seek`` file: (cylinders, ms, line).

    Format (diskmodel/mech_g1_load.c): ``Seek distances measured: N`` then N
    lines ``distance, ms``.
    """
    try:
        lines = path.read_text(encoding="latin-1").splitlines()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the seek curve: {e.strerror or e}") from None
    m = re.match(r"\s*Seek distances measured:\s*(\d+)\s*$", lines[0] if lines else "")
    if not m:
        raise ConfigError(f"{path}:1: expected 'Seek distances measured: N'")
    n = int(m.group(1))
    out: list[tuple[int, float, int]] = []
    for i, text in enumerate(lines[1:], start=2):
        if not text.strip():
            continue
        mm = re.match(r"\s*(\d+)\s*,\s*([0-9.eE+-]+)\s*$", text)
        if not mm:
            raise ConfigError(f"{path}:{i}: expected 'distance, ms', found {text.strip()!r}")
        d, ms = int(mm.group(1)), float(mm.group(2))
        if out and d <= out[-1][0]:
            raise ConfigError(f"{path}:{i}: seek distances must increase ({d} after {out[-1][0]})")
        if not (math.isfinite(ms) and ms >= 0):
            raise ConfigError(f"{path}:{i}: seek time must be a non-negative number of ms, not {mm.group(2)}")
        out.append((d, ms, i))
    if len(out) != n:
        raise ConfigError(f"{path}:1: says {n} seek distances were measured but lists {len(out)}")
    return out


def _extracted_seek(mech: Block, type_p: Param, use: Any) -> SeekImport:
    """``Seek type = extracted``: every point of the ``Full seek curve`` file,
    which DiskSim interpolates linearly (mech_g1_seektime.c, seek_extracted)."""
    from .disksim_seek import SeekImport

    curve_p = use(mech.need("Full seek curve"))
    assert curve_p is not None
    seek_path = curve_p.file.parent / str(curve_p.value)
    if not seek_path.is_file():
        raise ConfigError(f"{curve_p.where}: seek curve file '{curve_p.value}' not found (looked in {curve_p.file.parent})")
    seek = read_seek_file(seek_path)
    # With an extracted curve DiskSim takes every seek time from the curve
    # (mech_g1_seektime.c, seek_extracted); these two only feed other seek types.
    for k in ("Single cylinder seek time", "Full strobe seek time"):
        use(mech.get(k))
    lines = [
        "",
        "[seek]",
        f"{_MODEL_TABLE:<40} # {type_p.where} \"Seek type = extracted\": the measured curve, interpolated linearly",
        f"# {curve_p.where} \"Full seek curve = {curve_p.value}\": [distance in cylinders, ms], every measured point",
        "table = [",
    ]
    for i in range(0, len(seek), 4):
        chunk = seek[i : i + 4]
        pts = ", ".join(f"[{d}, {ms!r}]" for d, ms, _ in chunk)
        lines.append(f"  {pts + ',':<80} # {seek_path.name} lines {chunk[0][2]}-{chunk[-1][2]}")
    lines.append("]")
    return SeekImport(lines, "measured seek table", [seek_path.name])


def _find_disk(parsed: ParsedFile, path: Path) -> tuple[Block, Block | None]:
    """The disk block of a run, diskspecs or model file (a ``disksim_disk``,
    or a lone ``dm_disk``) and, for a run file, the bus the topology puts
    the instantiated disk on."""
    blocks = list(parsed.all_blocks())
    by_name = {b.name: b for b in blocks if b.name}
    disks = [b for b in blocks if b.type == "disksim_disk"]
    models = [b for b in blocks if b.type == "dm_disk"]
    if path.suffix == ".parv" or parsed.instances:
        inst = [(i, by_name.get(t[0]), t[1]) for i, t in parsed.instances.items() if by_name.get(t[0]) is not None and by_name[t[0]].type == "disksim_disk"]
        if len(inst) != 1:
            raise ConfigError(f"{path}:1: expected exactly one instantiated disksim_disk, found {len(inst)}")
        inst_name, disk, _ = inst[0]
        assert disk is not None
        bus = None
        parent = parsed.parents.get(inst_name)
        if parent is not None and parent[1] == "disksim_bus":
            bus_def = parsed.instances.get(parent[0])
            bus = by_name.get(bus_def[0]) if bus_def else None
        return disk, bus
    if len(disks) == 1:
        return disks[0], None
    if not disks and len(models) == 1:
        return models[0], None
    raise ConfigError(f"{path}:1: expected one disksim_disk (or one dm_disk) block, found {len(disks)} (and {len(models)} dm_disk)")


def _name_from(path: Path) -> str:
    """The preset name DiskSim's file stem suggests: ``hp_c3323a`` -> ``hp-c3323a``."""
    stem = path.stem.removesuffix("_validate")
    return re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")


def import_disksim(path: str | Path, name: str | None = None) -> DisksimImport:
    """Read a DiskSim ``.parv``, ``.diskspecs`` or ``.model`` file (and what
    it sources) and describe the drive in stlsim's TOML.

    Args:
        path: the DiskSim file.
        name: the drive's name (default: from the file's stem, ``hp_c3323a``
            -> ``hp-c3323a``).

    Raises:
        ConfigError: a malformed or incomplete file, naming file and line.
    """
    path = Path(path)
    parsed = parse_file(path)
    top, bus = _find_disk(parsed, path)
    name = name or _name_from(path)
    unexpressed: list[str] = []
    used: set[int] = set()  # id() of every Param emitted or deliberately consumed

    def use(p: Param | None) -> Param | None:
        if p is not None:
            used.add(id(p))
        return p

    if top.type == "disksim_disk":
        disk: Block | None = top
        model = _as_block(use(top.need("Model")), "the dm_disk model")  # type: ignore[arg-type]
    else:
        disk, model = None, top
    if model.type != "dm_disk":
        raise ConfigError(f"{model.file}:{model.line}: the model must be a dm_disk block, not {model.type or 'an untyped block'}")

    surfaces_p = use(model.need("Number of data surfaces"))
    cyls_p = use(model.need("Number of cylinders"))
    assert surfaces_p is not None and cyls_p is not None
    surfaces, cylinders = _as_int(surfaces_p, "surfaces"), _as_int(cyls_p, "cylinders")
    if surfaces < 1 or cylinders < 1:
        raise ConfigError(f"{surfaces_p.where}: a disk needs at least one surface and one cylinder")
    mech = _as_block(use(model.need("Mechanical Model")), "dm_mech_g1")  # type: ignore[arg-type]
    layout = _as_block(use(model.need("Layout Model")), "dm_layout_g1 or dm_layout_g4")  # type: ignore[arg-type]
    if mech.type != "dm_mech_g1":
        raise ConfigError(f"{mech.file}:{mech.line}: only DiskSim's dm_mech_g1 mechanics can be imported, not {mech.type}")
    if layout.type == "dm_layout_g2":
        # layout_g2.modspec: "Layout Map File", a DIXtrac map of every LBN.
        raise ConfigError(f"{layout.file}:{layout.line}: dm_layout_g2 (an LBN-by-LBN 'Layout Map File') is not imported: stlsim describes a layout by zones")
    if layout.type not in ("dm_layout_g1", "dm_layout_g4"):
        raise ConfigError(f"{layout.file}:{layout.line}: only DiskSim's dm_layout_g1 and dm_layout_g4 layouts can be imported, not {layout.type or 'an untyped block'}")

    rpm_p = use(mech.need("Rotation speed (in rpms)"))
    assert rpm_p is not None
    rpm = _as_float(rpm_p, "revolutions per minute")
    head_p = use(mech.need("Head switch time"))
    settle_p = use(mech.need("Add. write settling delay"))
    assert head_p is not None and settle_p is not None
    from .disksim_seek import import_seek

    seek = import_seek(mech, cylinders, use, unexpressed, lambda type_p: _extracted_seek(mech, type_p, use))

    if layout.type == "dm_layout_g1":
        zones_p, zones = _g1_zone_table(layout, cylinders, use)
        zone_spts = [_as_int(z["spt"], "sectors") for z in zones]
        g4 = None
    else:
        from .disksim_g4 import import_g4

        g4 = import_g4(layout, surfaces, cylinders, use)
        zone_spts = [z.spt for z in g4.zones]
        _g4_block_count(model, g4, use, unexpressed)

    # The host link: DiskSim charges each block max(bus block transfer time,
    # the disk's "Bulk sector transfer time") (disksim_disk.c, disk_get_blktranstime).
    block_ms = 0.0
    link_src: list[str] = []
    if bus is not None:
        for k in ("Read block transfer time", "Write block transfer time"):
            bp = bus.get(k)
            if bp is not None:
                block_ms = max(block_ms, _as_float(bp, "ms per block"))
                link_src.append(f"{bp.where} {bus.name} \"{k} = {_fmt(bp.value)}\"")
        rp, wp = bus.get("Read block transfer time"), bus.get("Write block transfer time")
        if rp is not None and wp is not None and rp.value != wp.value:
            unexpressed.append(f"{wp.where} {bus.name} Write block transfer time = {_fmt(wp.value)}: stlsim has one link rate; the larger of read and write was taken")
    bulk_p = use(disk.get("Bulk sector transfer time")) if disk is not None else None
    if bulk_p is not None:
        bulk = _as_float(bulk_p, "ms per block")
        link_src.append(f"{bulk_p.where} \"Bulk sector transfer time = {_fmt(bulk_p.value)}\"")
        block_ms = max(block_ms, bulk)
    interface = 0.512 / block_ms if block_ms > 0 else 0.0  # 512 bytes per block_ms, in MB/s

    out: list[tuple[str, str]] = []  # (toml line, comment)
    header: list[str] = []

    def emit(key: str, value: Any, why: str) -> None:
        out.append((f"{key} = {_toml_value(value)}", why))

    desc_spt = sorted(set(zone_spts), reverse=True)
    ident = disk.name if disk is not None else model.name
    spt_text = f"{desc_spt[0]}-{desc_spt[-1]}" if len(desc_spt) > 1 else f"{desc_spt[0]}"
    emit("name", name, "")
    emit(
        "description",
        f"{ident} from DiskSim's validated model: {rpm:g} RPM, {surfaces} surfaces x {cylinders} cylinders, "
        f"{len(zone_spts)} zone(s) ({spt_text} sectors/track), {seek.what}",
        "",
    )
    emit("sector_bytes", 512, "DiskSim counts 512-byte blocks")
    emit("rpm", rpm, f"{rpm_p.where} \"Rotation speed (in rpms) = {_fmt(rpm_p.value)}\"")
    emit("tracks", cylinders * surfaces, f"{cyls_p.where} \"Number of cylinders = {cylinders}\" x {surfaces_p.where} \"Number of data surfaces = {surfaces}\"")
    emit("surfaces", surfaces, f"{surfaces_p.where} \"Number of data surfaces\": tracks are numbered cylinder by cylinder, head by head")
    # DiskSim's LBN-to-PBN mapping scheme (diskmodel/layout_g1.c, g1_surfno_on_cyl):
    # the order in which LBAs visit a cylinder's surfaces.
    map_p = use(layout.get("LBN-to-PBN mapping scheme")) if g4 is None else None
    if g4 is not None:
        emit("surface_order", g4.surface_order, f"{g4.idx.where} \"IDX\": the order in which the tree's LBNs visit each cylinder's surfaces")
    elif map_p is not None:
        orders = {0: "ascending", 1: "serpentine-in-zone", 2: "serpentine"}
        if map_p.value not in orders:
            unexpressed.append(f"{map_p.where} LBN-to-PBN mapping scheme = {_fmt(map_p.value)}: no stlsim surface_order for it; ascending here")
        else:
            emit("surface_order", orders[map_p.value], f"{map_p.where} \"LBN-to-PBN mapping scheme = {map_p.value}\"")
    emit("head_switch_ms", _as_float(head_p, "ms"), f"{head_p.where} \"Head switch time = {_fmt(head_p.value)}\"")
    settle = settle_p.value
    if isinstance(settle, bool) or not isinstance(settle, (int, float)) or not math.isfinite(float(settle)):
        raise ConfigError(f"{settle_p.file}:{settle_p.line}: '{settle_p.key}' must be a number of ms, not {_fmt(settle)}")
    # May be negative (hp_c2490a_validate.model: -0.642): writes then settle
    # sooner than the read seek curve says; the core allows it.
    emit("write_settle_ms", float(settle), f"{settle_p.where} \"Add. write settling delay = {_fmt(settle)}\"")
    # Zero-latency access (DiskSim "Immediate buffer read/write": sectors
    # taken in the order they pass under the head). stlsim has one switch
    # for both, and it covers whole-track accesses.
    if disk is not None:
        imm_r, imm_w = use(disk.get("Immediate buffer read")), use(disk.get("Immediate buffer write"))
        if imm_r is not None and imm_w is not None:
            if imm_r.value == imm_w.value == 0:
                emit("zero_latency", False, f"{imm_r.where} \"Immediate buffer read = 0\", {imm_w.where} \"Immediate buffer write = 0\"")
            elif imm_r.value == imm_w.value:
                emit("zero_latency", True, f"{imm_r.where} \"Immediate buffer read = {_fmt(imm_r.value)}\" and write alike (whole tracks only)")
            else:
                unexpressed.append(f"{imm_r.where} Immediate buffer read = {_fmt(imm_r.value)} with write = {_fmt(imm_w.value)}: stlsim has one zero_latency switch for both")

    # Write-back caching. DiskSim 4.0 manual (CMU-PDL-08-101) section 3.4.5,
    # "Fast write level": 0 disables write-back caching (a write completes once
    # on the media); 1 enables it for contiguous sequential write streams (a
    # write that appends to the segment being written completes once its data
    # are in the buffer); 2 does so even when such streams are interleaved with
    # reads or other writes. In DiskSim's code (src/disksim_diskctlr.c) every
    # write then completes once its data are in the buffer
    # (disk_buffer_transfer_size) after the write-hit overhead
    # (disk_write_arrive), and goes to the media at once (disk_check_hda);
    # the level only decides whether a write appending to the one the media
    # is still writing may come in meanwhile (disk_buffer_stopable_access:
    # level 1 only when no other request is pending). [controller]
    # destage_at_once does that; the cache is sized as DiskSim's write segments.
    wc_mib = 0.0
    fw_p = use(disk.get("Fast write level")) if disk is not None else None
    if fw_p is not None and _as_int(fw_p, "0, 1 or 2") > 0:
        seg_p, nseg_p = disk.get("Segment size (in blks)"), disk.get("Maximum number of write segments")  # type: ignore[union-attr]
        if seg_p is None:
            raise ConfigError(f"{fw_p.where}: fast writes need 'Segment size (in blks)' in the same block")
        nwseg = _as_int(nseg_p, "segments") if nseg_p is not None else 1
        use(nseg_p)
        wc_mib = _as_int(seg_p, "blocks") * max(nwseg, 1) * 512 / 2**20
        emit(
            "write_cache_mib",
            wc_mib,
            f"{fw_p.where} \"Fast write level = {fw_p.value}\": write-back caching, a write completing once buffered; sized as "
            f"{max(nwseg, 1)} write segment(s) of {_fmt(seg_p.value)} blocks ({seg_p.where})",
        )
        if fw_p.value == 1:
            unexpressed.append(
                f"{fw_p.where} Fast write level = 1: a write appending to the one the media is writing comes in only "
                "when no other request is pending; stlsim lets it in whatever is queued (level 2)"
            )
    else:
        if disk is not None:
            # With fast writes off the write segments only stage data on its way to the media.
            use(disk.get("Maximum number of write segments"))
        emit("write_cache_mib", 0.0, f"{fw_p.where} \"Fast write level = 0\": no write-back caching" if fw_p else "no .diskspecs: no write-back caching known")
    emit("interface_mb_s", interface, "; ".join(link_src) + (f": 512 bytes per {block_ms:g} ms" if block_ms else ": 0 ms a block, an ideal link") if link_src else "no bus or disk transfer time known: an ideal link")
    emit("rotation", "angular", "DiskSim tracks the platter's angle (mech_g1.c)")

    body: list[str] = []
    for line, why in out:
        body.append(f"{line:<40} # {why}" if why else line)

    if g4 is None:
        zone_lines, range_line = _g1_zone_lines(layout, zones_p, zones, surfaces, cylinders, use, used, unexpressed)
        if range_line is not None:
            body.append(range_line)
    else:
        zone_lines = g4.header + [line for z in g4.zones for line in z.lines]

    seek_lines = seek.lines

    # Controller overheads and the read cache (the core's [controller] and [read_cache]).
    ctrl_lines: list[str] = []
    cache_lines: list[str] = []
    if disk is not None:
        scale_p = use(disk.get("Time scale for overheads"))
        scale = _as_float(scale_p, "factor") if scale_p is not None else 1.0
        scale_note = f" x {scale_p.where} \"Time scale for overheads = {_fmt(scale_p.value)}\"" if scale_p is not None else ""
        ctrl = [
            ("read_hit_after_read_ms", "Read hit over. after read"),
            ("read_hit_after_write_ms", "Read hit over. after write"),
            ("read_miss_after_read_ms", "Read miss over. after read"),
            ("read_miss_after_write_ms", "Read miss over. after write"),
            ("write_hit_after_read_ms", "Write hit over. after read"),
            ("write_hit_after_write_ms", "Write hit over. after write"),
            ("write_miss_after_read_ms", "Write miss over. after read"),
            ("write_miss_after_write_ms", "Write miss over. after write"),
            ("read_completion_ms", "Read completion overhead"),
            ("write_completion_ms", "Write completion overhead"),
            ("per_request_ms", "Per-request overhead time"),
        ]
        ctrl_lines += ["", "[controller]"]
        for key, dk in ctrl:
            p = use(disk.get(dk))
            if p is None:
                continue
            ctrl_lines.append(f"{key + ' = ' + _toml_value(_as_float(p, 'ms') * scale):<40} # {p.where} \"{dk} = {_fmt(p.value)}\"{scale_note}")
        # The read high water mark is a fraction of the request when DiskSim
        # sets it by request size (every validated drive does).
        hw, by_req = use(disk.get("High (read) water mark")), use(disk.get("Set watermark by reqsize"))
        if hw is not None and (by_req is None or by_req.value == 1):
            ctrl_lines.append(f"{'read_high_water_mark = ' + _toml_value(float(hw.value)):<40} # {hw.where} \"High (read) water mark = {_fmt(hw.value)}\" (of the request: \"Set watermark by reqsize = 1\")")
            # A mark of 0 by request size is one block in DiskSim
            # (max(1, ...), disk_select_bus_request): the bus takes each block
            # once it is buffered, a block transfer time apart.
            if float(hw.value) == 0.0:
                ctrl_lines.append(f"{'read_link_per_block = true':<40} # {hw.where} \"High (read) water mark = {_fmt(hw.value)}\": DiskSim's mark is then one block, and each block crosses the bus once buffered")
        elif hw is not None:
            unexpressed.append(f"{hw.where} High (read) water mark = {_fmt(hw.value)} of a segment: stlsim takes it as a fraction of the request")
        # Written through (no fast writes), DiskSim writes each sector only if
        # its block is in the buffer as the sector starts to pass
        # (disk_buffer_block_available, disk_buffer_sector_done); else the
        # sector goes by and is written a rotation later.
        if fw_p is not None and fw_p.value == 0:
            ctrl_lines.append(f"{'write_link_per_block = true':<40} # {fw_p.where} \"Fast write level = 0\": a write's media write takes each block only once it has crossed the bus")
        # Fast writes complete once buffered and go to the media at once,
        # later requests waiting for that media write (disk_write_arrive,
        # disk_check_hda, disk_buffer_stopable_access).
        if fw_p is not None and fw_p.value in (1, 2):
            ctrl_lines.append(f"{'destage_at_once = true':<40} # {fw_p.where} \"Fast write level = {fw_p.value}\": a fast write goes to the media once its command is done, and later requests wait for it")
        sched = disk.get("Scheduler")
        if sched is not None and isinstance(sched.value, Block):
            pol = sched.value.get("Scheduling policy")
            if pol is not None and pol.value == 1:
                use(pol)
                ctrl_lines.append(f"{'scheduler = ' + _toml_value('fcfs'):<40} # {pol.where} \"Scheduling policy = 1\" (FCFS)")
        cache = [
            ("segments", "Number of buffer segments", "int"),
            ("segment_sectors", "Segment size (in blks)", "int"),
            ("read_ahead_min_sectors", "Minimum read-ahead (blks)", "int"),
            ("read_ahead_max_sectors", "Maximum read-ahead (blks)", "int"),
            ("read_hits_on_write_data", "Allow read hits on write data", "bool"),
            ("separate_write_segment", "Use separate write segment", "bool"),
        ]
        cache_lines += ["", "[read_cache]"]
        for key, dk, kind in cache:
            p = use(disk.get(dk))
            if p is None:
                continue
            v: Any = bool(_as_int(p, "0 or 1")) if kind == "bool" else _as_int(p, "blocks")
            cache_lines.append(f"{key + ' = ' + _toml_value(v):<40} # {p.where} \"{dk} = {_fmt(p.value)}\"")
        # How far a read-ahead goes ("Buffer continuous read",
        # disk_buffer_get_max_readahead in src/disksim_diskcache.c): 3 is the
        # maximum read-ahead past the request's end (or, with a maximum of 0,
        # as "Read-ahead over requested" says), 4 DEC's scheme (to the end of
        # the track after the request); 1 and 2 (to the track's or the
        # cylinder's end) have no stlsim key.
        contread = disk.get("Buffer continuous read")
        extent = {3: "request", 4: "track"}.get(contread.value) if contread is not None else None
        if extent is not None:
            use(contread)
            cache_lines.append(f"{'read_ahead_extent = ' + _toml_value(extent):<40} # {contread.where} \"Buffer continuous read = {_fmt(contread.value)}\"")
            over = disk.get("Read-ahead over requested")
            if over is not None and over.value in (0, 1) and extent == "track":
                use(over)  # DEC's scheme does not look at it (nor at the maximum read-ahead)
            elif over is not None and over.value in (0, 1):
                use(over)
                cache_lines.append(f"{'read_ahead_over_requested = ' + _toml_value(over.value == 1):<40} # {over.where} \"Read-ahead over requested = {_fmt(over.value)}\" (used only with a maximum read-ahead of 0, as in DiskSim)")
            # DiskSim lets a read hit on the segment being prefetched take
            # over the ongoing access, which goes on past the new request
            # (disk_buffer_attempt_access_swap in src/disksim_diskctlr.c),
            # whatever the parameters say.
            cache_lines.append(f"{'hits_continue_read_ahead = true':<40} # DiskSim: a read hit on the segment being read ahead takes over the access (disk_buffer_attempt_access_swap)")
            idle = disk.get("Read-ahead on idle hit")
            if idle is not None and idle.value == 1:
                use(idle)
                cache_lines.append(f"{'read_ahead_on_idle_hit = true':<40} # {idle.where} \"Read-ahead on idle hit = 1\"")
        # A write takes a clean segment holding any of its blocks, emptied of
        # the rest, before a free or the least recently used one
        # (disk_buffer_select_write_segment in src/disksim_diskcache.c, whatever
        # the parameters say); it matters where written data stay in a read
        # segment.
        hits_w, sep_w = disk.get("Allow read hits on write data"), disk.get("Use separate write segment")
        if hits_w is not None and hits_w.value == 1 and (sep_w is None or sep_w.value == 0):
            cache_lines.append(f"{'writes_take_overlapping_segment = true':<40} # DiskSim: a write takes a segment it overlaps, dropping its other blocks (disk_buffer_select_write_segment)")
        use(disk.get("Enable caching in buffer"))
        ec = disk.get("Enable caching in buffer")
        # DiskSim stores the value as is (DISKSIM_DISK_ENABLE_CACHING_IN_BUFFER
        # loader, 0 to 2) and reads it only as a truth value (disk_release_hda,
        # disk_buffer_stopable_access, disk_buffer_select_read_segment,
        # disk_buffer_check_read_segments): 2 caches as 1 does.
        if ec is not None and ec.value not in (1, 2):
            unexpressed.append(f"{ec.where} Enable caching in buffer = {_fmt(ec.value)}: [read_cache] assumes caching on (1)")
        # Everything else of the disk block (its scheduler's values included).
        for p in disk.params:
            if id(p) in used or _REPORTING.match(p.key):
                continue
            if isinstance(p.value, Block):
                for q in p.value.params:
                    if not _neutral(q.key, q.value) and not _REPORTING.match(q.key):
                        unexpressed.append(f"{q.where} {p.key}: {q.key} = {_fmt(q.value)}")
                continue
            if not _neutral(p.key, p.value):
                unexpressed.append(f"{p.where} {p.key} = {_fmt(p.value)}")
    for blk in (model, mech, layout):
        for p in blk.params:
            if id(p) in used or _REPORTING.match(p.key):
                continue
            if not _neutral(p.key, p.value):
                unexpressed.append(f"{p.where} {p.key} = {_fmt(p.value)}")
    if bus is not None:
        for p in bus.params:
            if p.key in ("Read block transfer time", "Write block transfer time") or _REPORTING.match(p.key) or p.key == "type":
                continue
            if not _neutral(p.key, p.value) and not (p.key == "Arbitration type" and p.value == 1):
                unexpressed.append(f"{p.where} {bus.name}: {p.key} = {_fmt(p.value)}")

    src = [parsed.path.name] + sorted(({b.file.name for b in parsed.all_blocks()} | {model.file.name, layout.file.name, *seek.files}) - {parsed.path.name})
    header += [
        f"# {ident}, imported from DiskSim by `stlsim import-disksim {path.name}`.",
        f"# Files read: {', '.join(src)} (each value below cites its file:line).",
        "# DiskSim 4.0's validation suite (Western Digital's DiskSim release, BSD-style",
        "# licence: COPYING.disksim beside the files).",
        "#",
        f"# Geometry: {surfaces} surfaces x {cylinders} cylinders = {cylinders * surfaces} tracks, numbered",
        "# cylinder by cylinder and, within a cylinder, surface by surface, as DiskSim's",
        "# LBN-to-PBN mapping fills a cylinder before it moves the arm; seek distances",
        "# in the table are cylinders (track / surfaces).",
    ]
    lines = header + [""] + _unexpressed_block(unexpressed) + [""] + body + zone_lines + seek_lines
    if ctrl_lines or cache_lines:
        lines += ["", "# DiskSim's controller overheads and its buffer (docs/drive-model.md, the controller)."]
        lines += ctrl_lines + cache_lines
    text = "\n".join(lines).rstrip() + "\n"
    _check_imported(path, text)
    return DisksimImport(text, unexpressed, name)


def _check_imported(path: Path, text: str) -> None:
    """The core's check of the drive written, so that a DiskSim description
    stlsim cannot run fails here, in one line, rather than at the first run."""
    import tomllib

    from .config import check_drive

    try:
        check_drive(tomllib.loads(text))
    except ConfigError as e:
        msg = str(e).removeprefix("configuration error: ")
        raise ConfigError(f"{path}: the drive imported from it does not check in stlsim: {msg}") from None


def _zone_int(key: str, p: Param, unexpressed: list[str], extra: str = "") -> str:
    """A zone's integer key from a DiskSim value that should be a whole
    number of sectors (the files write skews as ``63.000000``)."""
    v = p.value
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)) or v < 0:
        raise ConfigError(f"{p.file}:{p.line}: '{p.key}' must be a non-negative number, not {_fmt(v)}")
    n = round(v)
    if n != v:
        unexpressed.append(f"{p.where} {p.key} = {_fmt(v)}: stlsim counts whole sectors; rounded to {n}")
    why = f"{p.where} \"{p.key} = {_fmt(v)}\"" + (f" {extra}" if extra else "")
    return f"{key + ' = ' + str(int(n)):<40} # {why}"


def _g4_block_count(model: Block, g4: Any, use: Any, unexpressed: list[str]) -> None:
    """Under g4 DiskSim's LBN count is the model's "Block count" (dm_sectors:
    no checknumblocks replaces it, as under g1), and ltop maps no LBN past it."""
    p = use(model.get("Block count"))
    if p is None:
        return
    n = _as_int(p, "blocks")
    if n == g4.lbns:
        g4.header.append(f"# {p.where} \"Block count = {n}\": every LBN of the tree")
    elif n < g4.lbns:
        unexpressed.append(f"{p.where} Block count = {n}: DiskSim maps LBNs 0..{n - 1} of the tree's {g4.lbns} (ltop refuses the rest); all {g4.lbns} are LBAs here")
    else:
        unexpressed.append(f"{p.where} Block count = {n}: more than the tree's {g4.lbns} LBNs, which are the LBAs here (DiskSim's ltop maps no LBN past the tree)")


def _g1_zone_table(layout: Block, cylinders: int, use: Any) -> tuple[Param, list[dict[str, Any]]]:
    """The zones of a ``dm_layout_g1`` block, checked: (its ``Zones``, one
    dict a zone of its values and the cylinders after it in no zone)."""
    zones_p = use(layout.need("Zones"))
    assert zones_p is not None
    if not isinstance(zones_p.value, list) or not zones_p.value or not all(isinstance(z, Block) for z in zones_p.value):
        raise ConfigError(f"{zones_p.where}: 'Zones' must be a list of dm_layout_g1_zone blocks")
    zones: list[dict[str, Any]] = []
    expect_first = 0
    for z in zones_p.value:
        first_p, last_p, spt_p = (use(z.need(k)) for k in ("First cylinder number", "Last cylinder number", "Blocks per track"))
        ts_p, cs_p = use(z.need("Skew for track switch")), use(z.need("Skew for cylinder switch"))
        assert first_p and last_p and spt_p and ts_p and cs_p
        first, last, spt = _as_int(first_p, "cylinder"), _as_int(last_p, "cylinder"), _as_int(spt_p, "sectors")
        if first < expect_first or (not zones and first != 0) or first >= cylinders:
            raise ConfigError(f"{first_p.where}: zones must start at cylinder 0 and follow each other without overlap: this zone starts at {first}, expected {expect_first}")
        if first > expect_first:
            # The validation suite's own files have such gaps (barracuda,
            # cheetah4LP): the cylinders between belong to no zone, so
            # DiskSim maps no LBN there (its zones count
            # endcyl - startcyl + 1 cylinders). stlsim zones run up to the
            # next zone's first track: the previous zone ends in them as
            # gap_cylinders.
            zones[-1]["gap"] = (first - expect_first, first_p)
        if last < first:
            raise ConfigError(f"{last_p.where}: last cylinder {last} is before the zone's first, {first}")
        past = 0
        if last >= cylinders:
            # hp_c2490a_validate.model's last zone ends at cylinder 2629 of
            # 2629 (0..2628). DiskSim counts the zone's LBNs over all its
            # cylinders, the one past the disk too; stlsim's zone ends with
            # the disk, and the spares make up the difference if they cover
            # the cylinders past it (below).
            past = last - (cylinders - 1)
            last = cylinders - 1
        if spt < 1:
            raise ConfigError(f"{spt_p.where}: a zone needs at least one block per track")
        expect_first = last + 1
        zones.append({"first": first_p, "last": last_p, "spt": spt_p, "track_skew": ts_p, "cyl_skew": cs_p, "block": z, "gap": None, "past": past})
    if expect_first < cylinders:
        raise ConfigError(f"{zones_p.where}: the zones end at cylinder {expect_first - 1}, but the disk has {cylinders} cylinders")
    return zones_p, zones


def _check_slipped_tracks(slips: Param, values: list[int], spares: Param | None, defects: Param | None) -> None:
    """DiskSim 4.0 refuses a scheme-1 zone with more slips and defects than
    spare tracks (dm_layout_g1_initialize asserts it)."""
    k = spares.value if spares is not None and isinstance(spares.value, int) else 0
    d = len(defects.value) // 2 if defects is not None and isinstance(defects.value, list) else 0
    if len(values) + d > k:
        raise ConfigError(
            f"{slips.where}: {len(values)} slips and {d} defects outnumber the zone's {k} spare tracks, "
            "which DiskSim 4.0 refuses (dm_layout_g1_initialize: 'Defects and slips outnumber the available spares')"
        )


def _slip_push(slips: list[int], base: int, last: int) -> int:
    """Where DiskSim puts the LBN at position ``last`` of the period starting
    at ``base``: one on for each of the period's slips at or before its
    running position, counted in list order (g1_ltop_sectperrangespare,
    _sectperzonespare)."""
    n = 0
    for s in slips:
        if s >= base and s - base <= last + n:
            n += 1
    return last + n


def _check_slipped_sectors(
    slips: Param, values: list[int], z: dict[str, Any], zones: list[dict[str, Any]], spares: Param | None, scheme: int, range_p: Param | None, surfaces: int, cylinders: int
) -> None:
    """Refuse, in one line, the slips of a scheme-8 or scheme-9 zone that
    push a sparing period's last LBN off the period's data tracks.

    Past the period's end (more slips than spares; a zone or range with no
    spares at all) DiskSim's ltop puts those LBNs on the next period's first
    sectors, which hold that period's own first LBNs ("Assume no
    remapping/slipping out of a range", layout_g1.c), or past the zone: two
    LBNs on one sector, which stlsim, giving each LBA a sector of its own,
    cannot express. Onto a spare track within the period, DiskSim maps them
    well, but stlsim's slipped_sectors keep a period's LBAs on its data
    tracks (crates/stlsim-core/src/geometry/spares.rs)."""
    spt = _as_int(z["spt"], "sectors")
    k = int(spares.value) if spares is not None and isinstance(spares.value, (int, float)) and not isinstance(spares.value, bool) else 0
    front = z["block"].get("Empty space at zone front")
    if front is not None and front.value != 0:
        raise ConfigError(f"{slips.where}: slips in a zone with {front.where} 'Empty space at zone front = {_fmt(front.value)}' are not imported: stlsim's slipped_sectors do not combine with front_empty_sectors")
    # DiskSim's zone: its own cylinder count (dm_layout_g1_compute_blksinband).
    cyls = _as_int(z["last"], "cylinder") - _as_int(z["first"], "cylinder") + 1
    per_cyl = spt * surfaces
    if scheme == 8:
        rng = _as_int(range_p, "cylinders") if range_p is not None else 1
        size, full = per_cyl * max(rng, 1), cyls // max(rng, 1)
    else:
        size, full = per_cyl * cyls, 1
    fn = "g1_ltop_sectperrangespare" if scheme == 8 else "g1_ltop_sectperzonespare"
    zone_end = cyls * per_cyl
    beyond = [v for v in values if v >= zone_end]
    if beyond:
        raise ConfigError(f"{slips.where}: slip {beyond[0]} lies past the zone's {zone_end} sectors, where DiskSim's {fn} never counts it")
    for j in sorted({v // size for v in values}):
        base = j * size
        whole = j < full  # a last partial range keeps no spares (its LBN count subtracts none)
        end = min(base + size, zone_end) - base  # the period's sectors
        lbns = end - (k if whole else 0)
        data_end = -(-lbns // spt) * spt  # the end of its last data track
        at = _slip_push(values, base, lbns - 1)  # where its last LBN goes
        count = sum(1 for v in values if base <= v <= base + at)
        what = f"range {j} (zone cylinders {base // per_cyl}..{(base + end) // per_cyl - 1})" if scheme == 8 else "the zone"
        if at >= end:
            more = scheme == 8 and base + end < zone_end
            onto = "the next range's first sectors, which hold its own first LBNs" if more else _after_zone(z, zones, cylinders)
            raise ConfigError(
                f"{slips.where}: {count} slipped sector(s) in {what}, which has {k if whole else 0} spare(s), push its last {at - end + 1} LBN(s) "
                f"past its end onto {onto} ({fn}: no slipping out of a range): two LBNs on one sector, which stlsim cannot express (without the slips the zone imports)"
            )
        if at >= data_end:
            raise ConfigError(
                f"{slips.where}: {count} slipped sector(s) in {what} push its last LBN onto a spare track, as DiskSim's {fn} does; "
                f"stlsim's slipped_sectors keep a period's LBAs on its data tracks (the {data_end - lbns} spare sector(s) of its last one)"
            )


def _after_zone(z: dict[str, Any], zones: list[dict[str, Any]], cylinders: int) -> str:
    """What lies after a zone's last cylinder, for messages."""
    last = _as_int(z["last"], "cylinder")
    if last + 1 >= cylinders:
        return "cylinders past the disk's last"
    if z["gap"] is not None:
        return f"cylinder {last + 1}, which lies in no zone"
    return f"the next zone's first cylinder ({last + 1}), whose sectors hold its own LBNs"


def _g1_zone_lines(
    layout: Block, zones_p: Param, zones: list[dict[str, Any]], surfaces: int, cylinders: int, use: Any, used: set[int], unexpressed: list[str]
) -> tuple[list[str], str | None]:
    """The ``[[zones]]`` of a ``dm_layout_g1`` layout, and the
    ``spare_range_cylinders`` line its sparing scheme 8 needs."""
    # DiskSim's sparing schemes (diskmodel/layout_g1.c) that the core has keys for.
    scheme_p = use(layout.get("Sparing scheme used"))
    scheme = scheme_p.value if scheme_p is not None else 0
    spare_key = {1: "spare_tracks", 2: "spare_sectors_per_cylinder", 3: "spare_sectors_per_track", 8: "spare_sectors_per_range", 9: "spare_sectors_per_zone"}.get(scheme) if scheme else None
    range_p = use(layout.get("Rangesize for sparing"))
    range_line = None
    if scheme == 8 and range_p is not None:
        key = f"spare_range_cylinders = {_as_int(range_p, 'cylinders')}"
        range_line = f"{key:<40} # {range_p.where} \"Rangesize for sparing = {_fmt(range_p.value)}\" (sparing scheme 8)"
    zone_lines: list[str] = ["", f"# {zones_p.where} \"Zones\": first_track = \"First cylinder number\" x {surfaces} surfaces"]
    for z in zones:
        zb: Block = z["block"]
        first = _as_int(z["first"], "cylinder")
        zone_lines += [
            "",
            "[[zones]]",
            f"{'first_track = ' + str(first * surfaces):<40} # {z['first'].where} \"First cylinder number = {first}\" (last {_fmt(z['last'].value)})",
            f"{'sectors_per_track = ' + str(_as_int(z['spt'], 'sectors')):<40} # {z['spt'].where} \"Blocks per track\"",
            _zone_int("track_skew_sectors", z["track_skew"], unexpressed),
            _zone_int("cylinder_skew_sectors", z["cyl_skew"], unexpressed),
        ]
        for key, dk in (("first_block_offset_sectors", "Offset of first block"), ("front_empty_sectors", "Empty space at zone front")):
            p = use(zb.get(dk))
            if p is not None and p.value != 0:
                zone_lines.append(_zone_int(key, p, unexpressed))
        spares = use(zb.get("Number of spares"))
        # The zone's positions past the disk, in the unit of its spare key:
        # with spares at the zone's end (schemes 1 and 9) that cover them,
        # DiskSim puts no LBN there, and fewer spares on the disk map its LBNs
        # exactly (ltop fills the zone from its first track).
        past_unit = {1: z["past"] * surfaces, 9: z["past"] * surfaces * _as_int(z["spt"], "sectors")}.get(scheme, 0)
        covered = (
            past_unit > 0
            and spares is not None
            and isinstance(spares.value, (int, float))
            and not isinstance(spares.value, bool)
            and spares.value >= past_unit
        )
        if z["past"] > 0 and not covered:
            unexpressed.append(f"{z['last'].where} Last cylinder number = {_fmt(z['last'].value)}: past the disk's {cylinders} cylinders; the zone ends at cylinder {cylinders - 1} here")
        if spares is not None and spares.value != 0:
            if spare_key is None:
                unexpressed.append(f"{spares.where} Number of spares = {_fmt(spares.value)}: sparing scheme {_fmt(scheme_p.value) if scheme_p else '?'} has no stlsim key")
            elif covered:
                _zone_int(spare_key, spares, unexpressed)  # refuses a negative or non-finite count
                n = round(spares.value) - past_unit
                what = "tracks" if scheme == 1 else "sectors"
                zone_lines.append(
                    f"{spare_key + ' = ' + str(n):<40} # {spares.where} \"Number of spares = {_fmt(spares.value)}\" with {scheme_p.where} \"Sparing scheme used = {scheme_p.value}\","
                    f" less the {past_unit} {what} of cylinder(s) {cylinders}..{_fmt(z['last'].value)} past the disk's {cylinders} cylinders: DiskSim's zone ends there, in spares"
                )
            else:
                zone_lines.append(_zone_int(spare_key, spares, unexpressed, f"with {scheme_p.where} \"Sparing scheme used = {scheme_p.value}\"" if scheme_p else ""))
        slips = use(zb.get("slips"))
        if slips is not None and slips.value:
            values = slips.value if isinstance(slips.value, list) else None
            ok = (
                scheme in (1, 8, 9)
                and values is not None
                and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)
                and all(a < b for a, b in zip(values, values[1:]))
            )
            if ok and scheme == 1:
                _check_slipped_tracks(slips, values, spares, zb.get("defects"))
                zone_lines.append(
                    f"slipped_tracks = {values}  # {slips.where} \"slips\" with {scheme_p.where} \"Sparing scheme used = 1\": "
                    "tracks skipped for defects (g1_ltop_trackspare)"
                )
            elif ok:
                fn = "g1_ltop_sectperrangespare" if scheme == 8 else "g1_ltop_sectperzonespare"
                _check_slipped_sectors(slips, values, z, zones, spares, scheme, range_p, surfaces, cylinders)
                zone_lines.append(
                    f"slipped_sectors = {values}  # {slips.where} \"slips\" with {scheme_p.where} \"Sparing scheme used = {scheme}\": "
                    f"sectors skipped for defects ({fn})"
                )
            else:
                unexpressed.append(f"{slips.where} slips = {_fmt(slips.value)}")
        defects = use(zb.get("defects"))
        if defects is not None and defects.value:
            dv = defects.value if isinstance(defects.value, list) else None
            # Pairs (defect, remap); one remapped to itself moves no LBN
            # (the ltop functions skip it: b->remap[i] != b->defect[i]).
            if dv is not None and len(dv) % 2 == 0 and all(dv[i] == dv[i + 1] for i in range(0, len(dv), 2)):
                zone_lines.append(f"# {defects.where} \"defects = {_fmt(defects.value)}\": each sector remapped to itself, which DiskSim's LBN-to-PBN mapping ignores")
            else:
                unexpressed.append(f"{defects.where} defects = {_fmt(defects.value)}")
        if z["gap"] is not None:
            n, nxt = z["gap"]
            lastc = _as_int(z["last"], "cylinder")
            zone_lines.append(
                f"{'gap_cylinders = ' + str(n):<40} # cylinder(s) {lastc + 1}..{lastc + n} lie in no DiskSim zone: after {z['last'].where} \"Last cylinder number = {lastc}\", before {nxt.where} \"First cylinder number = {_fmt(nxt.value)}\""
            )
        for p in zb.params:
            if id(p) not in used and not _neutral(p.key, p.value):
                unexpressed.append(f"{p.where} {p.key} = {_fmt(p.value)}")
            used.add(id(p))
    return zone_lines, range_line


def _unexpressed_block(items: list[str]) -> list[str]:
    if not items:
        return ["# Every DiskSim value of this drive is expressed below."]
    return [
        f"# NOT EXPRESSED: {len(items)} DiskSim value(s) this stlsim cannot express yet",
        "# (left out, not approximated unless said so):",
        *[f"#   {x}" for x in items],
    ]


def main_import(path: str, out: str | None, force: bool, name: str | None) -> int:
    """The ``stlsim import-disksim`` command: write the TOML (to ``out`` or
    stdout) and list the unexpressed values on stderr."""
    if out is not None and Path(out).exists() and not force:
        raise ConfigError(f"{out} exists; use --force to overwrite it")
    imp = import_disksim(path, name)
    if out is None:
        sys.stdout.write(imp.toml)
    else:
        Path(out).write_text(imp.toml)
    if imp.unexpressed:
        sys.stderr.write(f"stlsim: note: {len(imp.unexpressed)} DiskSim value(s) cannot be expressed yet (also listed in the file's header):\n")
        for x in imp.unexpressed:
            sys.stderr.write(f"  {x}\n")
    return 0
