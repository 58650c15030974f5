"""`stlsim import-disksim`: DiskSim's parameter files -> a commented stlsim
drive, checked value by value against the DiskSim files (read here with
plain regular expressions, independently of the importer's parser); the
shipped presets are exactly what the importer writes; bad input is one line
naming file:line."""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

import pytest

import stlsim
from stlsim.config import check_drive, load_drive
from stlsim.disksim import import_disksim, parse_file

DISKSIM = Path(__file__).parent / "data" / "disksim"
DRIVES = Path(stlsim.__file__).parent / "drives"

# stem of the run file -> (files it loads: diskspecs, model, seek), preset name
RUNS = {
    "hp_c3323a": (("hp_c3323a_validate.diskspecs", "hp_c3323a_validate.model", "hp_c3323a_validate.seek"), "hp-c3323a"),
    "hp_c2490a": (("hp_c2490a.diskspecs", "hp_c2490a_validate.model", "hp_c2490a_validate.seek"), "hp-c2490a"),
    "atlas10k": (("atlas10k.diskspecs", "atlas10k.model", "atlas10k.seek"), "atlas10k"),
    "barracuda": (("barracuda.diskspecs", "barracuda.model", "barracuda.seek"), "barracuda"),
    "cheetah4LP": (("cheetah4LP.diskspecs", "cheetah4LP.model", "cheetah4LP.seek"), "cheetah4lp"),
}


def _all(text: str, key: str) -> list[float]:
    """Every value of `key = number` in file order (comments dropped)."""
    text = "\n".join(ln.split("#", 1)[0] for ln in text.splitlines())
    return [float(v) for v in re.findall(re.escape(key) + r"\s*=\s*(-?[\d.]+)", text)]


def _one(text: str, key: str) -> float:
    vals = _all(text, key)
    assert len(vals) == 1, (key, vals)
    return vals[0]


@pytest.mark.parametrize("stem", list(RUNS))
def test_every_value_comes_from_the_disksim_files(stem: str) -> None:
    (specs_f, model_f, seek_f), name = RUNS[stem]
    parv, specs, model = ((DISKSIM / f).read_text() for f in (f"{stem}.parv", specs_f, model_f))
    # The run file sources the diskspecs, which sources the model, which names the seek curve.
    assert f"source {specs_f}" in parv and f"source {model_f}" in specs and f"Full seek curve = {seek_f}" in model
    imp = import_disksim(DISKSIM / f"{stem}.parv")
    d = tomllib.loads(imp.toml)
    assert d["name"] == name == imp.name
    surfaces, cyls = int(_one(model, "Number of data surfaces")), int(_one(model, "Number of cylinders"))
    assert (d["surfaces"], d["tracks"]) == (surfaces, surfaces * cyls)
    assert d["rpm"] == _one(model, "Rotation speed (in rpms)")
    assert d["head_switch_ms"] == _one(model, "Head switch time")
    assert d["write_settle_ms"] == _one(model, "Add. write settling delay")
    assert d["sector_bytes"] == 512 and d["rotation"] == "angular"
    scheme = int(_one(model, "LBN-to-PBN mapping scheme"))
    assert d["surface_order"] == ("ascending", "serpentine-in-zone", "serpentine")[scheme]
    # Zones, in order: first cylinder x surfaces, blocks per track, skews.
    firsts = [int(v) for v in _all(model, "First cylinder number")]
    assert [z["first_track"] for z in d["zones"]] == [f * surfaces for f in firsts]
    assert [z["sectors_per_track"] for z in d["zones"]] == [int(v) for v in _all(model, "Blocks per track")]
    assert [z["track_skew_sectors"] for z in d["zones"]] == [int(v) for v in _all(model, "Skew for track switch")]
    assert [z["cylinder_skew_sectors"] for z in d["zones"]] == [int(v) for v in _all(model, "Skew for cylinder switch")]
    offsets = [int(v) for v in _all(model, "Offset of first block")]
    assert [z.get("first_block_offset_sectors", 0) for z in d["zones"]] == offsets
    # Spares under the key of the file's sparing scheme.
    scheme = int(_one(model, "Sparing scheme used"))
    key = {1: "spare_tracks", 8: "spare_sectors_per_range", 9: "spare_sectors_per_zone"}[scheme]
    spares = [int(v) for v in _all(model, "Number of spares")]
    lasts = [int(v) for v in _all(model, "Last cylinder number")]
    # A last zone that runs past the disk (hp_c2490a) ends with it here; the
    # spare tracks at DiskSim's zone end take the cylinders past it.
    past = max(0, lasts[-1] - (cyls - 1))
    if past:
        assert scheme == 1
        spares[-1] -= past * surfaces
    assert [z.get(key, 0) for z in d["zones"]] == spares
    # The cylinders between a zone's last and the next zone's first are its gap.
    assert [z.get("gap_cylinders", 0) for z in d["zones"]] == [f - la - 1 for la, f in zip(lasts, firsts[1:] + [lasts[-1] + 1])]
    if scheme == 8:
        assert d["spare_range_cylinders"] == int(_one(model, "Rangesize for sparing"))
    # Every measured seek point, unchanged.
    seek = (DISKSIM / seek_f).read_text().splitlines()
    pts = [[int(a), float(b)] for a, b in (ln.split(",") for ln in seek[1:] if ln.strip())]
    assert d["seek"] == {"model": "table", "table": pts} and len(pts) == int(seek[0].split(":")[1])
    # The link: max(BUS1 block time, the disk's bulk sector time) per 512 bytes.
    bus1 = re.search(r"disksim_bus BUS1 \{(.*?)\}", parv, flags=re.S)
    assert bus1
    block_ms = max(_one(bus1.group(1), "Read block transfer time"), _one(specs, "Bulk sector transfer time"))
    assert d["interface_mb_s"] == pytest.approx(512 / (block_ms * 1e-3) / 1e6, rel=1e-12)
    # Write-back caching only with fast writes: one write segment.
    fast = int(_one(specs, "Fast write level"))
    seg = int(_one(specs, "Segment size (in blks)"))
    assert d["write_cache_mib"] == (seg * 512 / 2**20 if fast else 0.0)
    # Controller overheads and the buffer.
    t = d
    scale = _one(specs, "Time scale for overheads")
    c = t["controller"]
    assert c["read_hit_after_read_ms"] == _one(specs, "Read hit over. after read") * scale
    assert c["write_miss_after_write_ms"] == _one(specs, "Write miss over. after write") * scale
    assert c["read_completion_ms"] == _one(specs, "Read completion overhead") * scale
    assert c["per_request_ms"] == _one(specs, "Per-request overhead time") * scale
    # The read high water mark, a fraction of the request (every file sets it by request size).
    assert int(_one(specs, "Set watermark by reqsize")) == 1
    assert c["read_high_water_mark"] == _one(specs, "High (read) water mark")
    # A mark of 0 is one block in DiskSim: the link follows the media block by block.
    assert c.get("read_link_per_block", False) == (c["read_high_water_mark"] == 0.0)
    assert c["scheduler"] == "fcfs" and int(_one(specs, "Scheduling policy")) == 1
    # Written through, each block is written to the media once it has crossed the bus.
    assert c.get("write_link_per_block", False) == (fast == 0)
    # Fast writes go to the media once their command is done, later requests waiting for them.
    assert c.get("destage_at_once", False) == (fast in (1, 2))
    assert len(c) == 13 + ("read_link_per_block" in c) + ("write_link_per_block" in c) + ("destage_at_once" in c)
    rc = t["read_cache"]
    assert rc == {
        "segments": int(_one(specs, "Number of buffer segments")),
        "segment_sectors": seg,
        "read_ahead_min_sectors": int(_one(specs, "Minimum read-ahead (blks)")),
        "read_ahead_max_sectors": int(_one(specs, "Maximum read-ahead (blks)")),
        "read_hits_on_write_data": bool(_one(specs, "Allow read hits on write data")),
        "separate_write_segment": bool(_one(specs, "Use separate write segment")),
        **_read_ahead(specs),
        # A write takes a segment it overlaps (disk_buffer_select_write_segment)
        # where written data stay in read segments.
        **(
            {"writes_take_overlapping_segment": True}
            if _one(specs, "Allow read hits on write data") == 1 and _one(specs, "Use separate write segment") == 0
            else {}
        ),
    }
    # Each value cites its source line: the rpm's comment names the model's line.
    rpm_line = next(i for i, ln in enumerate(model.splitlines(), 1) if "Rotation speed (in rpms)" in ln)
    assert re.search(rf"^rpm = .*# {re.escape(model_f)}:{rpm_line} ", imp.toml, flags=re.M)
    # The core takes it.
    check_drive(d)


def _read_ahead(specs: str) -> dict[str, object]:
    """The read-ahead keys DiskSim's "Buffer continuous read" gives: 3 the
    maximum read-ahead past the request ("Read-ahead over requested" with a
    maximum of 0), 4 DEC's track scheme; either way a read hit on the segment
    being read ahead lets it go on (disk_buffer_attempt_access_swap)."""
    extent = {3: "request", 4: "track"}.get(int(_one(specs, "Buffer continuous read")))
    if extent is None:
        return {}
    d: dict[str, object] = {"read_ahead_extent": extent, "hits_continue_read_ahead": True}
    if extent == "request":
        d["read_ahead_over_requested"] = int(_one(specs, "Read-ahead over requested")) == 1
    if int(_one(specs, "Read-ahead on idle hit")) == 1:
        d["read_ahead_on_idle_hit"] = True
    return d


def test_unexpressed_values_are_listed_in_the_header_and_on_stderr(cli, tmp_path: Path) -> None:
    imp = import_disksim(DISKSIM / "atlas10k.parv")
    # The buffer's behaviour stlsim lacks: each with its line.
    assert any(x.startswith("atlas10k.diskspecs:48 Read any free blocks = 1") for x in imp.unexpressed)
    # Slips are expressed: whole tracks under sparing scheme 1, sectors under 8 and 9.
    assert not any("slips" in x for x in imp.unexpressed)
    assert "slipped_sectors = [55017, 358148, 394564, 420533, 483742]" in imp.toml
    assert "slipped_tracks = [1626, 1850]" in import_disksim(DISKSIM / "hp_c2490a.parv").toml
    # A defect remapped to itself moves no LBN in DiskSim: noted, not listed.
    cheetah = import_disksim(DISKSIM / "cheetah4LP.parv")
    assert not any("defects" in x for x in cheetah.unexpressed)
    assert '"defects = [233375, 233375]": each sector remapped to itself' in cheetah.toml
    # Fast write level 2 is expressed whole (destage_at_once); level 1's rule for queued requests is not.
    assert not any("Fast write level" in x for x in imp.unexpressed)
    assert any(x.startswith("barracuda.diskspecs:49 Fast write level = 1") for x in import_disksim(DISKSIM / "barracuda.parv").unexpressed)
    assert not any("LBN-to-PBN" in x for x in imp.unexpressed)  # surface_order expresses it
    # DiskSim reads "Enable caching in buffer" as a truth value: hp_c2490a's 2 caches as 1 does.
    assert not any("Enable caching" in x for x in import_disksim(DISKSIM / "hp_c2490a.parv").unexpressed)
    # What stlsim does anyway is not listed: FCFS, one request at a time, zero overheads.
    assert not any("Scheduling policy" in x or "Max queue length" in x or "Data preparation overhead" in x for x in imp.unexpressed)
    header = imp.toml.split("\nname = ", 1)[0]
    assert f"# NOT EXPRESSED: {len(imp.unexpressed)} DiskSim value(s)" in header
    assert all(f"#   {x}" in header for x in imp.unexpressed)
    out = tmp_path / "a.toml"
    p = cli("import-disksim", str(DISKSIM / "atlas10k.parv"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert out.read_text() == imp.toml and p.stdout == ""
    assert all(x in p.stderr for x in imp.unexpressed)
    # An existing file needs --force.
    p = cli("import-disksim", str(DISKSIM / "atlas10k.parv"), "-o", str(out))
    assert p.returncode == 2 and "--force" in p.stderr and "Traceback" not in p.stderr
    assert cli("import-disksim", str(DISKSIM / "atlas10k.parv"), "-o", str(out), "--force").returncode == 0
    # Without -o the drive goes to stdout.
    p = cli("import-disksim", str(DISKSIM / "hp_c3323a.parv"))
    assert p.returncode == 0 and p.stdout == import_disksim(DISKSIM / "hp_c3323a.parv").toml


def test_diskspecs_and_model_files_import_too() -> None:
    via_run = tomllib.loads(import_disksim(DISKSIM / "barracuda.parv").toml)
    specs = tomllib.loads(import_disksim(DISKSIM / "barracuda.diskspecs").toml)
    # Without the run file there is no bus: the disk's own bulk transfer time sets the link.
    assert {k: v for k, v in specs.items() if k != "interface_mb_s"} == {k: v for k, v in via_run.items() if k != "interface_mb_s"}
    model = import_disksim(DISKSIM / "barracuda.model")
    d = tomllib.loads(model.toml)
    assert d["zones"] == via_run["zones"] and d["seek"] == via_run["seek"]
    assert d["write_cache_mib"] == 0.0 and d["interface_mb_s"] == 0.0  # nothing known: no cache, an ideal link
    assert "[controller]" not in model.toml
    check_drive(d)


@pytest.mark.parametrize("stem", list(RUNS))
def test_shipped_presets_are_what_the_importer_writes(stem: str) -> None:
    """scripts/import-disksim-presets.sh regenerates them; this says it would change nothing."""
    name = RUNS[stem][1]
    assert (DRIVES / f"{name}.toml").read_text() == import_disksim(DISKSIM / f"{stem}.parv", name=name).toml
    assert load_drive(name)["name"] == name


def _blksinband(scheme: int, rangesize: int, surfaces: int, cyls: int, spt: int, dead: int, spares: int) -> int:
    """DiskSim's LBN count of a zone (diskmodel/layout_g1_load.c,
    dm_layout_g1_compute_blksinband): its sectors less the front, less the
    spares of its scheme, per range only for whole ranges."""
    per_scheme = {1: spares * spt, 2: spares * cyls, 3: spares * cyls * surfaces, 8: spares * (cyls // rangesize), 9: spares}
    return cyls * surfaces * spt - dead - per_scheme[scheme]


@pytest.mark.parametrize("stem", list(RUNS))
def test_the_presets_hold_disksims_lbns(stem: str) -> None:
    """The preset's capacity is exactly DiskSim's own LBN count (the sum of
    its zones' blksinband, which DiskSim's checknumblocks puts in place of the
    model's Block count), its spares, fronts and gap cylinders mapped: the
    cylinders between two zones (barracuda, cheetah4LP) hold no LBA, and the
    cylinder past the disk of hp_c2490a's last zone is spare in DiskSim too.
    The model's Block count, the capacity the drive reports to its host, is
    smaller on every drive but hp_c2490a."""
    (_, model_f, _), name = RUNS[stem]
    model = (DISKSIM / model_f).read_text()
    surfaces, cylinders = int(_one(model, "Number of data surfaces")), int(_one(model, "Number of cylinders"))
    scheme, rangesize = int(_one(model, "Sparing scheme used")), int(_one(model, "Rangesize for sparing"))
    firsts, lasts = [int(v) for v in _all(model, "First cylinder number")], [int(v) for v in _all(model, "Last cylinder number")]
    spts, deads = [int(v) for v in _all(model, "Blocks per track")], [int(v) for v in _all(model, "Empty space at zone front")]
    spares = [int(v) for v in _all(model, "Number of spares")]
    ends = firsts[1:] + [cylinders]
    disksim = sum(_blksinband(scheme, rangesize, surfaces, b - a + 1, s, d, k) for a, b, s, d, k in zip(firsts, lasts, spts, deads, spares))
    capacity = check_drive(load_drive(name))["capacity_bytes"] // 512
    assert capacity == disksim
    # The drives this pins: gap cylinders (positive) and a zone past the disk (-1).
    expected_gaps = {"barracuda": 10, "cheetah4lp": 6, "hp-c2490a": -1}.get(name, 0)
    assert sum(e - b - 1 for b, e in zip(lasts, ends)) == expected_gaps
    if name != "hp-c2490a":
        assert capacity >= int(_one(model, "Block count"))


def test_the_one_surface_model_keeps_its_name_and_swd_paper_builds_on_it() -> None:
    assert load_drive("hp-c3323a-1surface")["tracks"] == 2982
    assert 'preset = "hp-c3323a-1surface"' in (DRIVES / "swd-paper.toml").read_text()
    assert load_drive("hp-c3323a")["tracks"] == 7 * 2982


def _bad(tmp_path: Path, files: dict[str, str]) -> Path:
    for n, text in files.items():
        (tmp_path / n).write_text(text)
    return tmp_path / next(iter(files))


@pytest.mark.parametrize(
    "files, where",
    [
        ({"a.diskspecs": "disksim_disk D {\n  Model = 3,\n  Per-request overhead time = 0.0\n"}, "a.diskspecs:1: the block 'disksim_disk D' opened on line 1 is never closed"),
        ({"a.diskspecs": "disksim_disk D {\n  Model 3,\n}\n"}, "a.diskspecs:2: expected '=' after 'Model 3'"),
        ({"a.diskspecs": "disksim_disk D {\n  Model = source gone.model,\n}\n"}, "a.diskspecs:2: source file 'gone.model' not found"),
        ({"a.diskspecs": "disksim_disk D {\n  Model = source a.diskspecs,\n}\n"}, "a.diskspecs:2: 'a.diskspecs' sources itself"),
        ({"a.diskspecs": "disksim_disk D {\n  Zones = [ 1, 2\n}\n"}, "a.diskspecs:3: expected ',' or ']' in a list"),
        ({"a.diskspecs": "disksim_disk D {\n  Model = 3,\n}\n"}, "a.diskspecs:2: 'Model' must be a block"),
        ({"a.diskspecs": "disksim_disk D {\n  Foo = 1,\n}\n"}, "a.diskspecs:1: disksim_disk D has no 'Model'"),
        ({"a.parv": "disksim_bus B { type = 1 }\n"}, "a.parv:1: expected exactly one instantiated disksim_disk, found 0"),
    ],
)
def test_malformed_input_is_one_line_naming_file_and_line(cli, tmp_path: Path, files: dict[str, str], where: str) -> None:
    p = cli("import-disksim", str(_bad(tmp_path, files)))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("stlsim: error: ") and where in lines[0], p.stderr


def test_a_bad_seek_curve_or_zone_table_names_its_line(tmp_path: Path) -> None:
    model = (DISKSIM / "cheetah4LP.model").read_text()
    for n in ("cheetah4LP.diskspecs", "cheetah4LP.seek"):
        (tmp_path / n).write_text((DISKSIM / n).read_text())
    seek = (DISKSIM / "cheetah4LP.seek").read_text().splitlines()
    (tmp_path / "cheetah4LP.seek").write_text("\n".join([*seek[:3], "7, fast", *seek[4:]]) + "\n")
    (tmp_path / "cheetah4LP.model").write_text(model)
    with pytest.raises(stlsim.ConfigError, match=r"cheetah4LP\.seek:4: expected 'distance, ms', found '7, fast'"):
        import_disksim(tmp_path / "cheetah4LP.diskspecs")
    (tmp_path / "cheetah4LP.seek").write_text("\n".join(seek) + "\n")
    # Two zones that overlap.
    bad = model.replace("First cylinder number = 1345", "First cylinder number = 1000", 1)
    (tmp_path / "cheetah4LP.model").write_text(bad)
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "First cylinder number = 1000" in ln)
    with pytest.raises(stlsim.ConfigError, match=rf"cheetah4LP\.model:{line}: zones must start at cylinder 0 and follow each other without overlap"):
        import_disksim(tmp_path / "cheetah4LP.diskspecs")


def test_the_parser_keeps_blocks_lists_sources_and_lines() -> None:
    f = parse_file(DISKSIM / "atlas10k.parv")
    blocks = {b.name: b for b in f.all_blocks()}
    disk = blocks["QUANTUM_TORNADO_validate"]
    model = disk.need("Model").value
    assert model.type == "dm_disk" and model.file.name == "atlas10k.model" and model.line == 1
    zones = model.need("Layout Model").value.need("Zones")
    assert len(zones.value) == 24 and zones.value[0].need("slips").value == [55017, 358148, 394564, 420533, 483742]
    assert f.instances["disk0"] == ("QUANTUM_TORNADO_validate", 119)
    assert f.parents["disk0"] == ("bus1", "disksim_bus")
    sched = disk.need("Scheduler")
    assert sched.value.type == "disksim_ioqueue" and sched.line == 19
    gens = blocks["Synthio"].need("Generators").value
    assert len(gens) == 5 and gens[0].need("Sizes").value == ["exponential", 0.0, 8.0]


def test_a_last_zone_past_the_disk_ends_in_its_spares_or_is_cut_and_listed(tmp_path: Path) -> None:
    """hp_c2490a's last zone runs a cylinder past the disk; DiskSim's 72
    spare tracks at the zone's end cover its 18 tracks, so 54 stay on the
    disk and the LBNs lie where DiskSim has them. With fewer spares than the
    tracks past the disk, DiskSim would map LBNs there: the zone is cut at
    the disk's end and the importer lists it."""
    for f in ("hp_c2490a.parv", "hp_c2490a.diskspecs", "hp_c2490a_validate.model", "hp_c2490a_validate.seek"):
        (tmp_path / f).write_text((DISKSIM / f).read_text())
    d = tomllib.loads(import_disksim(tmp_path / "hp_c2490a.parv").toml)
    assert d["zones"][-1]["spare_tracks"] == 54 and "gap_cylinders" not in d["zones"][-1]
    model = tmp_path / "hp_c2490a_validate.model"
    text = model.read_text()
    at = text.index("First cylinder number = 2498")
    model.write_text(text[:at] + text[at:].replace("Number of spares = 72,", "Number of spares = 10,", 1))
    imp = import_disksim(tmp_path / "hp_c2490a.parv")
    assert tomllib.loads(imp.toml)["zones"][-1]["spare_tracks"] == 10
    assert any(x.startswith("hp_c2490a_validate.model:161 Last cylinder number = 2629: past the disk's 2629 cylinders") for x in imp.unexpressed)


# --------------------------------------------------------------------------
# Descriptions beyond the validation suite: formula seek curves, the g4
# layout, slips past the spares. Each test writes a small DiskSim
# description of its own.

_TEN = [2.63, 3.42, 3.55, 3.72, 4.01, 4.39, 4.26, 4.39, 4.56, 4.73]  # hp_c3323a.model's (commented out) first ten
_HPL = [300, 3.75, 0.33, 7.69, 0.0059, -1.0]  # and its HPL values, V1 as the int DiskSim 4.0 wants


def _g1_layout(cylinders: int, spt: int = 100) -> str:
    return f"""dm_layout_g1 {{
      LBN-to-PBN mapping scheme = 0,
      Sparing scheme used = 0,
      Rangesize for sparing = 1,
      Zones = [ dm_layout_g1_zone {{
         First cylinder number = 0, Last cylinder number = {cylinders - 1}, Blocks per track = {spt},
         Offset of first block = 0, Empty space at zone front = 0,
         Skew for track switch = 10, Skew for cylinder switch = 20,
         Number of spares = 0, slips = [], defects = [] }} ]
   }}"""


def _model(tmp_path: Path, seek: str, layout: str, *, cylinders: int = 2000, surfaces: int = 2, block_count: int = 0, files: dict[str, str] | None = None) -> Path:
    """A dm_disk in tmp_path/test.model (and any files it sources)."""
    for n, text in (files or {}).items():
        (tmp_path / n).write_text(text)
    path = tmp_path / "test.model"
    path.write_text(f"""dm_disk TEST {{
   Number of data surfaces = {surfaces},
   Number of cylinders = {cylinders},
   Block count = {block_count},
   Mechanical Model = dm_mech_g1 {{
      Access time type = trackSwitchPlusRotation,
{seek}
      Add. write settling delay = 0.0,
      Head switch time = 0.5,
      Rotation speed (in rpms) = 7200,
      Percent error in rpms = 0.0
   }},
   Layout Model = {layout}
}}
""")
    return path


def _floats(values: list[float]) -> str:
    return ", ".join(f"{v:.6f}" if isinstance(v, float) else str(v) for v in values)


def _table_ms(table: list[list[float]], d: int) -> float:
    """A table seek as the core reads it: linear between points, flat past the last."""
    if d <= table[0][0]:
        return table[0][1] * d / table[0][0]
    for (d0, t0), (d1, t1) in zip(table, table[1:]):
        if d <= d1:
            return t0 + (t1 - t0) * (d - d0) / (d1 - d0)
    return table[-1][1]


def _core_seek_ms(drive: dict, d: int) -> float:
    """The core's own seek over d cylinders: the full stroke of the same
    drive cut to d + 1 cylinders of one plain zone."""
    cut = {**drive, "tracks": (d + 1) * drive["surfaces"], "zones": [{"first_track": 0, "sectors_per_track": 100}]}
    return check_drive(cut)["full_stroke_seek_ms"]


def _runs(path: Path, tmp_path: Path, span: str = "10MB") -> None:
    """The imported drive replays a small synthetic trace, every read checked."""
    out = tmp_path / "imported.toml"
    out.write_text(import_disksim(path).toml)
    r = stlsim.run(f"synth:uniform,count=200,span_bytes={span},write_fraction=0.5,seed=1", drive=out, layer="cmr", verify=True, fold=True)
    assert r.summary["requests"] == 200 and r.summary["reads"] > 0 and r.summary["mean_ms"] > 0


def test_hplplus10_imports_as_disksims_curve_at_every_distance(tmp_path: Path) -> None:
    """DiskSim's dm_mech_g1_seek_1st10_plus_hpl (mech_g1_seektime.c): the
    first ten seek times for 1..10 cylinders, V2 + V3 sqrt(d) below V1,
    V4 + V5 d from V1 on. The table is exact at every whole distance (to
    DiskSim's picoseconds, whose fixed-point square root differs from the
    real one by under V3 / 2^16 ms)."""
    path = _model(
        tmp_path,
        f"      Seek type = hplplus10,\n      HPL seek equation values = [ {_floats(_HPL)} ],\n      First ten seek times = [ {_floats(_TEN)} ],",
        _g1_layout(2000),
    )
    imp = import_disksim(path)
    assert imp.unexpressed == []
    d = tomllib.loads(imp.toml)
    table = d["seek"]["table"]
    assert d["seek"]["model"] == "table"

    def disksim(dist: int) -> float:
        v1, v2, v3, v4, v5, _ = _HPL
        if dist <= 10:
            return _TEN[dist - 1]
        return v2 + v3 * math.sqrt(dist) if dist < v1 else v4 + v5 * dist

    for dist in (1, 2, 7, 10, 11, 12, 57, 100, 299, 300, 301, 1234, 1999):
        assert _table_ms(table, dist) == pytest.approx(disksim(dist), abs=1e-5), dist
        assert _core_seek_ms(d, dist) == pytest.approx(disksim(dist), abs=1e-5), dist
    # Exact points where the curve is not linear; the linear part is its two ends.
    assert [p[0] for p in table] == [*range(1, 300), 300, 1999]
    # Each value is DiskSim's fixed-point one: 16 cylinders, sqrt64(16 << 32) = 4 << 16 exactly.
    assert table[15] == [16, 3.75 + 0.33 * 4]
    assert "HPL seek equation with the first ten seek times" in d["description"]
    assert re.search(r'^model = "table" +# test\.model:\d+ "Seek type = hplplus10"', imp.toml, flags=re.M)
    _runs(path, tmp_path)


def test_hpl_and_constant_import_with_disksims_own_departures_listed(tmp_path: Path) -> None:
    # hpl: V6 for one cylinder; the boundary is V1 here, though DiskSim 4.0's
    # dm_mech_g1_seek_hpl reads it from a word its loader never sets: listed.
    hpl = [40, 1.0, 0.5, 1.5, 0.25, 2.0]
    path = _model(tmp_path, f"      Seek type = hpl,\n      HPL seek equation values = [ {_floats(hpl)} ],", _g1_layout(100), cylinders=100)
    imp = import_disksim(path)
    table = tomllib.loads(imp.toml)["seek"]["table"]
    assert _table_ms(table, 1) == 2.0
    for dist in (2, 9, 39):
        assert _table_ms(table, dist) == pytest.approx(1.0 + 0.5 * math.sqrt(dist), abs=1e-5)
    for dist in (40, 77, 99):
        assert _table_ms(table, dist) == pytest.approx(1.5 + 0.25 * dist, abs=1e-9)
    assert [x for x in imp.unexpressed if "hpseek[0]" in x] and len(imp.unexpressed) == 1
    # constant: the manual's meaning (every seek the same), DiskSim 4.0's own
    # loader's unconverted picoseconds listed.
    path = _model(tmp_path, "      Seek type = constant,\n      Constant seek time = 5.0,", _g1_layout(100), cylinders=100)
    imp = import_disksim(path)
    assert tomllib.loads(imp.toml)["seek"] == {"model": "table", "table": [[1, 5.0]]}
    assert any("Constant seek time = 5.0" in x and "5 picoseconds" in x for x in imp.unexpressed)
    # V1 written as a float, as DiskSim's own files do: taken, and listed.
    hpl_f = ", ".join(f"{v:.6f}" for v in _HPL)
    path = _model(
        tmp_path, f"      Seek type = hplplus10,\n      HPL seek equation values = [ {hpl_f} ],\n      First ten seek times = [ {_floats(_TEN)} ],", _g1_layout(400), cylinders=400
    )
    imp = import_disksim(path)
    assert [x for x in imp.unexpressed if "V1 = 300.0 is written as a float" in x]
    _runs(path, tmp_path)


@pytest.mark.parametrize(
    "seek, message",
    [
        ("      Seek type = linear,\n      Single cylinder seek time = 1.0,", "'Seek type = linear' is not imported: DiskSim 4.0's dm_mech_g1_seek_3pt_line"),
        ("      Seek type = curve,", "'Seek type = curve' is not imported"),
        ("      Seek type = bogus,", "'Seek type = bogus' is not one of DiskSim's"),
        ("      Seek type = hpl,", "'Seek type = hpl' needs 'HPL seek equation values'"),
        ("      Seek type = hplplus10,\n      HPL seek equation values = [ 300, 3.75, 0.33 ],", "needs 6 values (V1..V6), found 3"),
        (f"      Seek type = hplplus10,\n      HPL seek equation values = [ {_floats(_HPL)} ],", "'Seek type = hplplus10' needs 'First ten seek times'"),
        (f"      Seek type = hpl,\n      HPL seek equation values = [ 300, 3.75, 0.33, 7.69, -0.1, -1.0 ],", "V5 = -0.1 must not be negative"),
        (f"      Seek type = hpl,\n      HPL seek equation values = [ {_floats(_HPL)} ],\n      Full seek curve = x.seek,", "'Full seek curve' with 'Seek type = hpl'"),
    ],
)
def test_seek_types_stlsim_cannot_follow_are_one_line(cli, tmp_path: Path, seek: str, message: str) -> None:
    path = _model(tmp_path, seek, _g1_layout(100), cylinders=100)
    p = cli("import-disksim", str(path))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("stlsim: error: test.model:") and message in lines[0], p.stderr


_SEEK_FILE = {"test.seek": "Seek distances measured: 2\n1, 1.0\n9, 3.0\n"}
_EXTRACTED = "      Seek type = extracted,\n      Full seek curve = test.seek,"


def _g4(tp: str, idx: str, slips: str = "", remaps: str = "") -> str:
    return f"dm_layout_g4 {{\nTP = [ {tp} ],\nIDX = [\n{idx}\n],\nSlips = [ {slips} ],\nRemaps = [ {remaps} ]\n}}\n"


# Two zones of two surfaces, as DIXtrac writes a drive: a node per zone's
# cylinder (a track a head, each a quarter turn = 2 of 8 sectors after the
# one before) under a root entry per zone, a cylinder on; zone 2's tracks keep
# 5 of their 6 sectors' LBNs (TP[1]).
_G4_TWO_ZONES = _g4(
    "0, 7, 8,  0, 4, 6",
    """  [ 0, 0, 0.000000, 8, 1, 0.000000, 8, 1, TRACK, 0, 0,
      8, 0, 0.250000, 8, 1, 0.000000, 8, 1, TRACK, 0, 1 ],
  [ 0, 0, 0.000000, 5, 1, 0.000000, 5, 1, TRACK, 1, 0,
      5, 0, 0.166667, 5, 1, 0.000000, 5, 1, TRACK, 1, 1 ],
  [ 0, 0, 0.125000, 16, 1, 0.625000, 1920, 120, IDX, 0,
      1920, 120, 0.500000, 10, 1, 0.500000, 800, 80, IDX, 1 ]""",
)


def test_a_g4_layout_imports_as_zones_its_angles_whole_sector_skews(tmp_path: Path) -> None:
    """The g4 tree (layout_g4.c: ltop for the LBNs, g4_skew for the angles)
    becomes stlsim's zone table: the LBNs fill each cylinder track by track
    from sector 0, and each track's angle, off + q * alen down its path, is
    the zone's first-block offset plus its whole-sector track and cylinder
    skews, as stlsim counts them."""
    path = _model(tmp_path, _EXTRACTED, "source test.layout", cylinders=200, block_count=2720, files={**_SEEK_FILE, "test.layout": _G4_TWO_ZONES})
    imp = import_disksim(path)
    assert imp.unexpressed == []
    d = tomllib.loads(imp.toml)
    assert d["surface_order"] == "ascending" and d["tracks"] == 400
    assert d["zones"] == [
        {"first_track": 0, "sectors_per_track": 8, "track_skew_sectors": 2, "cylinder_skew_sectors": 3, "first_block_offset_sectors": 1},
        {"first_track": 240, "sectors_per_track": 6, "track_skew_sectors": 1, "cylinder_skew_sectors": 2, "first_block_offset_sectors": 3, "spare_sectors_per_track": 1},
    ]
    # Every track's angle, in sectors: DiskSim's (root off + cylinder x alen +
    # the head's off, in turns) against stlsim's skew formula (drive-model.md:
    # o = offset + k x track skew + c x cylinder skew, k = i + (surfaces - 1) c).
    for z, (off, alen, head_off, first, cyls) in zip(d["zones"], [(0.125, 0.625, 0.25, 0, 120), (0.5, 0.5, 0.166667, 120, 80)]):
        spt = z["sectors_per_track"]
        for c in range(cyls):
            for i in range(2):
                disksim = ((off + c * alen + i * head_off) % 1.0) * spt
                o = z.get("first_block_offset_sectors", 0) + (i + c) * z["track_skew_sectors"] + c * z["cylinder_skew_sectors"]
                assert abs((disksim - o % spt + spt / 2) % spt - spt / 2) < 1e-3, (first + c, i)
    assert check_drive(d)["capacity_bytes"] == 2720 * 512  # the tree's LBNs, = Block count
    assert re.search(r"^sectors_per_track = 6 +# test\.layout:2 TP\[1\] = \[0, 4, 6\]", imp.toml, flags=re.M)
    _runs(path, tmp_path, span="1MB")


def test_a_serpentine_g4_layout_with_a_gap_imports(tmp_path: Path) -> None:
    """Two-cylinder patterns whose second cylinder visits the surfaces last
    to first: DiskSim's serpentine within zones (the second zone, after an
    empty cylinder, starts on an odd cylinder); a Block count below the
    tree's LBNs is listed."""
    layout = _g4(
        "0, 7, 8",
        """  [ 0, 0, 0.000000, 8, 1, 0.000000, 8, 1, TRACK, 0, 0,
      8, 0, 0.250000, 8, 1, 0.000000, 8, 1, TRACK, 0, 1,
      16, 1, 0.625000, 8, 1, 0.000000, 8, 1, TRACK, 0, 1,
      24, 1, 0.875000, 8, 1, 0.000000, 8, 1, TRACK, 0, 0 ],
  [ 0, 0, 0.000000, 32, 2, 1.250000, 2560, 160, IDX, 0,
      2560, 161, 0.500000, 32, 2, 1.250000, 1216, 76, IDX, 0 ]""",
    )
    path = _model(tmp_path, _EXTRACTED, "source test.layout", cylinders=240, block_count=3700, files={**_SEEK_FILE, "test.layout": layout})
    imp = import_disksim(path)
    d = tomllib.loads(imp.toml)
    assert d["surface_order"] == "serpentine-in-zone"
    assert d["zones"] == [
        {"first_track": 0, "sectors_per_track": 8, "track_skew_sectors": 2, "cylinder_skew_sectors": 3, "gap_cylinders": 1},
        {"first_track": 322, "sectors_per_track": 8, "track_skew_sectors": 2, "cylinder_skew_sectors": 3, "first_block_offset_sectors": 4, "gap_cylinders": 3},
    ]
    assert imp.unexpressed == ["test.model:4 Block count = 3700: DiskSim maps LBNs 0..3699 of the tree's 3776 (ltop refuses the rest); all 3776 are LBAs here"]
    assert check_drive(d)["capacity_bytes"] == 3776 * 512
    _runs(path, tmp_path, span="1MB")


def _g4_bad(**k: str) -> str:
    idx = k.pop("idx", """  [ 0, 0, 0.000000, 8, 1, 0.000000, 8, 1, TRACK, 0, 0,
      8, 0, 0.250000, 8, 1, 0.000000, 8, 1, TRACK, 0, 1 ],
  [ 0, 0, 0.000000, 16, 1, 0.625000, 64, 4, IDX, 0 ]""")
    return _g4(k.pop("tp", "0, 7, 8"), idx, **k)


@pytest.mark.parametrize(
    "layout, message",
    [
        # The WD release's 4 TB example: each surface's LBNs run over many cylinders (surface-major).
        (
            _g4_bad(idx="""  [ 0, 0, 0.000000, 8, 1, 0.100000, 32, 4, TRACK, 0, 0,
      32, 3, 0.000000, 8, 1, 0.100000, 32, -4, TRACK, 0, 1 ],
  [ 0, 0, 0.000000, 64, 4, 0.000000, 64, 4, IDX, 0 ]"""),
            "LBNs leave cylinder 0 after 1 of its 2 surfaces' tracks",
        ),
        (_g4_bad(slips="20, 1"), "dm_layout_g4 Slips are not imported: a slip moves every later LBN on"),
        (_g4_bad(remaps="20, 1, 3, 0, 7, 8"), "dm_layout_g4 Remaps are not imported"),
        (_g4_bad(tp="1, 8, 9"), "starts at sector 1"),
        (_g4_bad(tp="0, 7, 8, 9"), "'TP' must hold (low, high, spt) triples"),
        (
            _g4_bad(idx="""  [ 0, 0, 0.000000, 8, 1, 0.000000, 8, 1, TRACK, 0, 0,
      8, 0, 0.300000, 8, 1, 0.000000, 8, 1, TRACK, 0, 1 ],
  [ 0, 0, 0.000000, 16, 1, 0.625000, 64, 4, IDX, 0 ]"""),
            "starts 2.400000 sectors into the turn (its IDX angles), which no whole-sector skews",
        ),
        (
            _g4_bad(idx="""  [ 0, 0, 0.000000, 8, 1, 0.000000, 8, 1, TRACK, 0, 0,
      9, 0, 0.250000, 8, 1, 0.000000, 8, 1, TRACK, 0, 1 ],
  [ 0, 0, 0.000000, 16, 1, 0.625000, 64, 4, IDX, 0 ]"""),
            "IDX node 0 entry 1 (LBN 9) leaves LBNs 8..8 of its node on no track",
        ),
        (
            _g4_bad(idx="""  [ 0, 0, 0.000000, 8, 1, 0.000000, 8, 1, TRACK, 0, 0,
      8, 0, 0.250000, 8, 1, 0.000000, 8, 1, TRACK, 0, 1 ],
  [ 0, 2, 0.000000, 16, 1, 0.625000, 32, 2, IDX, 0 ]"""),
            "first LBN lies on cylinder 2",
        ),
        (_g4_bad(idx="  [ 0, 0, 0.000000, 8, 1, 0.000000, 8, 1, TRACK, 0 ]"), "a TRACK entry ends with its head"),
        (_g4_bad(idx="  [ 0, 0, 0.000000, 8, 1, 0.000000, 8, 1, IDX, 0 ]"), "IDX node 0 contains itself"),
        ("dm_layout_g2 {\n  Layout Map File = x.map,\n  Zones = []\n}\n", "dm_layout_g2 (an LBN-by-LBN 'Layout Map File') is not imported"),
    ],
)
def test_g4_layouts_stlsim_cannot_hold_are_one_line(cli, tmp_path: Path, layout: str, message: str) -> None:
    path = _model(tmp_path, _EXTRACTED, "source test.layout", cylinders=4, files={**_SEEK_FILE, "test.layout": layout})
    p = cli("import-disksim", str(path))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("stlsim: error: ") and message in lines[0], p.stderr


def _copy(tmp_path: Path, stem: str) -> Path:
    """The validation drive's files in tmp_path; returns its run file."""
    (files, _), _ = RUNS[stem], None
    for f in (f"{stem}.parv", *files):
        (tmp_path / f).write_text((DISKSIM / f).read_text())
    return tmp_path / f"{stem}.parv"


def _set_zone(model: Path, zone_first: str, key: str, value: str) -> None:
    """Set `key` of the zone whose first cylinder line is `zone_first`."""
    text = model.read_text()
    at = text.index(zone_first)
    end = text.index(key, at)
    line_end = text.index(",", end)
    model.write_text(text[:end] + f"{key} = {value}" + text[line_end:])


@pytest.mark.parametrize(
    "stem, spares, message",
    [
        # Scheme 9, no spares: DiskSim's g1_ltop_sectperzonespare pushes the
        # zone's last 5 LBNs onto the next zone's first sectors.
        ("atlas10k", "0", "5 slipped sector(s) in the zone, which has 0 spare(s), push its last 5 LBN(s) past its end onto the next zone's first cylinder (433)"),
        # Fewer spares than slips: the last 2 run off.
        ("atlas10k", "3", "which has 3 spare(s), push its last 2 LBN(s) past its end"),
        # Scheme 8, no spares: onto the next range's first sectors.
        ("barracuda", "0", "push its last 3 LBN(s) past its end onto the next range's first sectors, which hold its own first LBNs (g1_ltop_sectperrangespare"),
    ],
)
def test_slips_past_the_spares_are_one_line_naming_disksims_mapping(cli, tmp_path: Path, stem: str, spares: str, message: str) -> None:
    """Where a sparing period (range or zone) has fewer spares than slips,
    DiskSim's ltop moves its last LBNs past the period's end ("Assume no
    remapping/slipping out of a range", layout_g1.c) onto sectors that hold
    other LBNs: two LBNs on one sector, which stlsim cannot express."""
    run = _copy(tmp_path, stem)
    model = tmp_path / RUNS[stem][0][1]
    _set_zone(model, "First cylinder number = 0,", "Number of spares", spares)
    p = cli("import-disksim", str(run))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and f"stlsim: error: {model.name}:" in lines[0] and message in lines[0], p.stderr
    assert "two LBNs on one sector, which stlsim cannot express" in lines[0]


def test_slips_onto_a_spare_track_are_refused_and_slips_that_fit_run(tmp_path: Path) -> None:
    run = _copy(tmp_path, "atlas10k")
    model = tmp_path / "atlas10k.model"
    # A whole track of spares (334 sectors): the zone's last data track is
    # full, so DiskSim moves its last LBNs onto the spare track, which
    # stlsim's slipped_sectors cannot follow.
    _set_zone(model, "First cylinder number = 0,", "Number of spares", "334")
    with pytest.raises(stlsim.ConfigError, match=r"atlas10k\.model:\d+: 5 slipped sector\(s\) in the zone push its last LBN onto a spare track"):
        import_disksim(run)
    # 400 spares leave 66 on the last data track: the 5 slips fit, and the drive runs.
    _set_zone(model, "First cylinder number = 0,", "Number of spares", "400")
    d = tomllib.loads(import_disksim(run).toml)
    assert d["zones"][0]["spare_sectors_per_zone"] == 400 and d["zones"][0]["slipped_sectors"] == [55017, 358148, 394564, 420533, 483742]
    _runs(run, tmp_path)


def test_more_slipped_tracks_than_spares_is_disksims_own_refusal(tmp_path: Path) -> None:
    run = _copy(tmp_path, "hp_c2490a")
    model = tmp_path / "hp_c2490a_validate.model"
    text = model.read_text()
    first = re.search(r"First cylinder number = \d+,(?=(?:(?!First cylinder).)*slips = \[\s*1626)", text, flags=re.S)
    assert first
    _set_zone(model, first.group(0), "Number of spares", "1")
    with pytest.raises(stlsim.ConfigError, match=r"2 slips and 0 defects outnumber the zone's 1 spare tracks, which DiskSim 4.0 refuses \(dm_layout_g1_initialize"):
        import_disksim(run)


def test_a_drive_stlsim_cannot_run_fails_at_import_in_one_line(cli, tmp_path: Path) -> None:
    """The importer checks the drive it writes with the core, so a DiskSim
    description that maps (here: more spare tracks than the zone has) fails
    at import, in one line, not at the first run."""
    layout = _g1_layout(100).replace("Sparing scheme used = 0", "Sparing scheme used = 1").replace("Number of spares = 0", "Number of spares = 500")
    path = _model(tmp_path, _EXTRACTED, layout, cylinders=100, files=_SEEK_FILE)
    p = cli("import-disksim", str(path))
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and "test.model: the drive imported from it does not check in stlsim:" in lines[0] and "spare_tracks (500)" in lines[0], p.stderr


def test_a_lone_unnamed_block_is_a_file_to_source(tmp_path: Path) -> None:
    """A file holding one block without a name, as g4 layouts are kept
    ("Layout Model = source X.layout"), parses; before, its type read as a
    definition missing its name."""
    (tmp_path / "x.layout").write_text("dm_layout_g4 {\n  TP = [ 0, 7, 8 ]\n}\n")
    f = parse_file(tmp_path / "x.layout")
    assert [(b.type, b.name, b.line) for b in f.blocks] == [("dm_layout_g4", None, 1)]


def test_equation_values_an_extracted_curve_never_reads_are_noted_not_listed(tmp_path: Path) -> None:
    """DEC RZ26's model in DiskSim's release keeps HPL values beside its
    extracted curve; do_hpl_seek skips them for that type (with a warning),
    so they are noted at the table, not listed as something stlsim lacks."""
    seek = f"{_EXTRACTED}\n      HPL seek equation values = [ {_floats(_HPL)} ],"
    imp = import_disksim(_model(tmp_path, seek, _g1_layout(100), cylinders=100, files=_SEEK_FILE))
    assert imp.unexpressed == []
    assert re.search(r'^# test\.model:\d+ "HPL seek equation values": not read by DiskSim for Seek type = extracted$', imp.toml, flags=re.M)
    assert tomllib.loads(imp.toml)["seek"]["table"] == [[1, 1.0], [9, 3.0]]
