"""Trace formats read natively (issue 12): blkparse text, fio iologs v2 and
v3, DiskSim ASCII and validate traces, MQSim traces; detection from the
first line; the blkparse event choice; and their one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import stlsim
from stlsim.errors import ConfigError, TraceFormatError


@pytest.mark.parametrize(
    ("name", "requests", "reads"),
    [
        ("blktrace.txt.gz", 15_524, 80),  # every Q event of the real capture (80 R, 15,444 W)
        ("wsrch-small.trace.gz", 24_783, None),  # MQSim's own excerpt
        ("disksim/hp_c3323a.trace", 9_074, None),  # DiskSim's HP C3323A validation trace
        ("iolog_8G.log.gz", 17_395, 0),  # fio version 2
    ],
)
def test_each_real_sample_is_detected_and_replayed_whole(data: Path, name: str, requests: int, reads: int | None) -> None:
    r = stlsim.run(trace=str(data / name), drive="cmr", layer="cmr", mode="flat-out", fold=True, disk="all")
    assert r.summary["requests"] == requests
    if reads is not None:
        assert r.summary["reads"] == reads


def test_a_format_named_explicitly_reads_the_same(data: Path) -> None:
    auto = stlsim.run(trace=str(data / "wsrch-small.trace.gz"), drive="cmr", fold=True, limit=2000, disk="all")
    named = stlsim.run(trace=str(data / "wsrch-small.trace.gz"), drive="cmr", fold=True, limit=2000, format="mqsim", disk="all")
    assert auto.report == named.report


def test_blkparse_event_chooses_the_requests(data: Path) -> None:
    t = str(data / "blktrace.txt.gz")
    issued = stlsim.run(trace=t, drive="cmr", fold=True, event="D")
    assert issued.summary["requests"] == 170  # D events of reads and writes in the capture
    completed = stlsim.run(trace=t, drive="cmr", fold=True, event="c")
    assert completed.summary["requests"] == 170  # one more C event carries no size and is skipped
    assert any("zero-length" in w for w in completed.report["warnings"])
    # The capture holds one device, 8,16 (dev_t 8 << 20 | 16).
    one = stlsim.run(trace=t, drive="cmr", fold=True, disk=8 << 20 | 16, limit=100)
    assert one.summary["requests"] == 100
    with pytest.raises(ConfigError, match="blkparse event"):
        stlsim.run(trace=t, drive="cmr", event="X")
    with pytest.raises(ConfigError, match="'event' chooses a blkparse event"):
        stlsim.run(trace=str(data / "wdev_3.csv"), drive="cmr", event="Q")


def test_fio_v2_says_its_requests_carry_no_times_and_v3_replays_its_microseconds(tmp_path: Path, data: Path) -> None:
    v2 = stlsim.run(trace=str(data / "iolog_8G.log.gz"), drive="cmr", limit=500)
    assert any("carries no times" in w for w in v2.report["warnings"])
    log = tmp_path / "job.log"
    log.write_text("fio version 3 iolog\n0 /dev/sdb add\n1 /dev/sdb open\n1000 /dev/sdb write 0 4096\n" "501000 /dev/sdb read 4096 4096\n502000 /dev/sdb close\n")
    v3 = stlsim.run(trace=str(log), drive="cmr", mode="scaled")
    assert v3.summary["requests"] == 2 and not any("carries no times" in w for w in v3.report["warnings"])
    assert v3.summary["simulated_s"] == pytest.approx(0.5, abs=0.05)  # the read comes 500 ms after the write
    # A rate gives version 2 its times (and the report says so); version 3 keeps its own.
    paced = stlsim.run(trace=str(data / "iolog_8G.log.gz"), drive="cmr", limit=500, mode="scaled", rate_iops=100)
    assert paced.summary["simulated_s"] == pytest.approx(499 / 100, rel=0.01)
    assert any("issued at 100 a second" in w for w in paced.report["warnings"])
    assert not any("carries no times (every" in w for w in paced.report["warnings"])
    with pytest.raises(TraceFormatError, match="version-3"):
        stlsim.run(trace=str(log), drive="cmr", rate_iops=10)
    p = subprocess.run([sys.executable, "-m", "stlsim", "trace-info", str(data / "rsrch_1.csv"), "--rate", "10"], capture_output=True, text=True)
    assert p.returncode != 0 and "rate_iops" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "fmt", "needle"),
    [
        ("  8,16 0 1 0.5 1 Q W 10 + 8 [x]\n  8,16 0 2 0.6 1 Q W 10 8\n", "blkparse", ":2: "),
        ("1.5 0 10 8 1\n1.6 0 10 8 zz\n", "disksim", "FLAGS"),
        ("100 0 10 8 1\n200 0 10 8 5\n", "mqsim", "TYPE"),
        ("R Hit 1 1 1.0 1.0\nX Hit 1 1 1.0 1.0\n", "disksim-validate", "expected R or W"),
        ("fio version 3 iolog\n5 f write 0\n", "fio", "expected 5 fields"),
    ],
)
def test_a_malformed_record_is_one_line_naming_file_and_line(tmp_path: Path, text: str, fmt: str, needle: str) -> None:
    t = tmp_path / "bad.trace"
    t.write_text(text)
    with pytest.raises(TraceFormatError, match=needle):
        stlsim.run(trace=str(t), drive="cmr", format=fmt)
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "run", "--trace", str(t), "--format", fmt, "--drive", "cmr"], capture_output=True, text=True
    )
    assert p.returncode != 0 and "bad.trace:" in p.stderr and needle.strip(": ") in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_the_cli_takes_event_and_the_new_format_names(data: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "run", "--trace", str(data / "blktrace.txt.gz"), "--format", "blktrace",
         "--event", "D", "--drive", "cmr", "--fold", "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert '"requests": 170' in p.stdout


def test_a_one_line_csv_layout_reads_like_the_table(tmp_path: Path, data: Path) -> None:
    from stlsim.config import parse_csv_layout

    # MSR read as a generic CSV, laid out in one line: the same run as the MSR reader.
    msr = stlsim.run(trace=str(data / "wdev_3.csv"), drive="cmr")
    line = "time=1,time-unit=filetime,op=4,offset=5,offset-unit=bytes,size=6,size-unit=bytes,device=3,delim=,"
    generic = stlsim.run(trace=str(data / "wdev_3.csv"), drive="cmr", format="csv", csv=line)
    assert generic.report["latency"] == msr.report["latency"] and generic.summary["waf"] == msr.summary["waf"]
    assert parse_csv_layout("time=2,op=1,read=R|r,write=W,delim=tab,header") == {
        "time_col": 1, "op_col": 0, "read_values": ["R", "r"], "write_values": ["W"], "delimiter": "\t", "header": True,
    }  # fmt: skip
    assert parse_csv_layout("offset=3,offset-unit=4k,delim=ws") == {"offset_col": 2, "offset_unit_bytes": 4096, "whitespace": True}
    for bad, needle in [("time=0", "column number from 1"), ("colour=3", "unknown key 'colour'"), ("delim=;;", "not one character"),
                        ("time-unit=weeks", "time-unit 'weeks'"), ("size-unit=-1", "size-unit")]:  # fmt: skip
        with pytest.raises(ConfigError, match=needle):
            parse_csv_layout(bad)
    # On the command line, with a device column selecting one disk.
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "run", "--trace", str(data / "wdev_3.csv"), "--format", "csv", "--csv", line,
         "--disk", "3", "--drive", "cmr", "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert '"requests": 682' in p.stdout
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "run", "--trace", str(data / "wdev_3.csv"), "--format", "csv", "--csv", "time=1,bogus=2"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode != 0 and "unknown key 'bogus'" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_published_layouts_and_skipping_unknown_operations(tmp_path: Path) -> None:
    vdi = tmp_path / "vdi.csv"
    vdi.write_text("Timestamp,Response,IOType,LUN,Offset,Size\n1.0,0.1,W,3,0,4096\n1.5,0.1,,3,0,512\n2.0,0.1,R,1,4096,4096\n")
    with pytest.raises(TraceFormatError, match=r"vdi\.csv:3: .*--skip-unknown"):
        stlsim.run(trace=str(vdi), drive="cmr")  # detected from its header
    r = stlsim.run(trace=str(vdi), drive="cmr", skip_unknown=True, disk="all")  # LUNs 3 and 1
    assert r.summary["requests"] == 2
    assert any("1 trace record(s) whose operation was neither" in w for w in r.report["warnings"])
    assert stlsim.run(trace=str(vdi), drive="cmr", skip_unknown=True, disk=1).summary["requests"] == 1
    ali = tmp_path / "ali.csv"
    ali.write_text("419,W,8111259648,4096,1577808000000171\n419,R,0,512,1577808000500171\n")
    r = stlsim.run(trace=str(ali), drive="cmr", mode="scaled")
    assert (r.summary["requests"], r.summary["reads"]) == (2, 1)
    assert r.summary["simulated_s"] == pytest.approx(0.5, abs=0.05)  # microsecond timestamps
    cbs = tmp_path / "cbs.csv"
    cbs.write_text("1538323200,12058624,8,1,1283\n1538323201,7990312,16,0,1283\n")
    with pytest.raises(ConfigError, match="--format"):
        stlsim.run(trace=str(cbs), drive="cmr")  # all numbers: not guessed
    assert stlsim.run(trace=str(cbs), drive="cmr", format="tencent").summary["reads"] == 1



def test_skip_unknown_on_the_command_line_counts_an_msr_record_of_another_type(tmp_path: Path) -> None:
    msr = tmp_path / "msr.csv"
    msr.write_text(
        "128166372003061629,h,0,Write,0,4096,1\n128166372013061629,h,0,Trim,8192,4096,1\n128166372023061629,h,0,Read,0,4096,1\n"
    )
    run = [sys.executable, "-m", "stlsim", "run", "--trace", str(msr), "--drive", "cmr", "--json"]
    p = subprocess.run(run, capture_output=True, text=True)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "msr.csv:2: " in p.stderr and "'Trim'" in p.stderr and "--skip-unknown" in p.stderr
    p = subprocess.run([*run, "--skip-unknown"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert (report["host"]["requests"], report["host"]["reads"]) == (2, 1)
    assert any(w.startswith("1 trace record(s) whose operation was neither") for w in report["warnings"]), report["warnings"]
    # The other text readers take the option too (an SPC opcode here).
    spc = tmp_path / "f.spc"
    spc.write_text("0,1,512,w,0.0\n0,2,512,x,0.1\n0,3,512,r,0.2,optional\n")
    r = stlsim.run(trace=str(spc), drive="cmr", skip_unknown=True)
    assert r.summary["requests"] == 2
    assert any("1 trace record(s) whose operation was neither" in w for w in r.report["warnings"])

ROUND_TRIP = [
    ("wdev_3.csv", {}),
    ("wdev_3.csv.zst", {}),
    ("cloudPhysicsIO.vscsi", {"limit": 20_000}),
    ("cloudPhysicsIO.csv", {"limit": 5_000}),
    ("iolog_8G.log.gz", {"limit": 5_000}),
    ("blktrace.txt.gz", {}),
    ("wsrch-small.trace.gz", {"disk": 1}),
    ("disksim/hp_c3323a.trace", {}),
    ("thesios/data-00000-of-00001", {"file_extent_mib": 128}),
    # wdev_3's first 200 requests written in each remaining format (scripts/make-format-samples.py)
    ("samples/wdev_3.spc", {}),
    ("samples/wdev_3.disksim", {"format": "disksim"}),
    ("samples/wdev_3.fio3.log", {}),
    ("samples/wdev_3.systor17.csv", {}),
    ("samples/wdev_3.alibaba.csv", {"format": "alibaba"}),
    ("samples/wdev_3.tencent.csv", {"format": "tencent"}),
    ("samples/wdev_3.fiu.txt", {"format": "fiu"}),
    ("samples/wdev_3.generic.csv", {"format": "csv", "csv": "time=1,time-unit=us,offset=2,offset-unit=512,size=3,size-unit=bytes,op=4,header,delim=semicolon"}),
]


@pytest.mark.parametrize(("name", "selection"), ROUND_TRIP)
def test_every_format_round_trips_through_convert_with_identical_results(tmp_path: Path, data: Path, name: str, selection: dict) -> None:
    src = data / name
    out = tmp_path / "t.stlt"
    done = stlsim.convert(str(src), out, **selection)
    assert done["records"] > 0 and out.stat().st_size == done["bytes"]
    # The header says where the file came from.
    import hashlib

    assert done["source"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert done["source"]["size_bytes"] == src.stat().st_size and done["stlsim_version"] == stlsim.__version__
    kw = {"drive": "imr-paper", "layer": "imr-rmw", "fold": True}
    text = stlsim.run(trace=str(src), **kw, **selection)
    binary = stlsim.run(trace=str(out), **kw)  # detected by its name and magic
    assert binary.report == {**text.report, "trace": binary.report["trace"]}
    info = stlsim.trace_info(str(out))
    assert info["format"] == "stlt" and info["requests"] == done["records"] == text.summary["requests"] + text.report["host"].get("empty_skipped", 0)
    assert info["header"]["source"]["path"] == str(src.resolve())


def test_a_binary_trace_keeps_devices_source_lines_and_is_detected_without_its_extension(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "mq.bin"
    stlsim.convert(str(data / "wsrch-small.trace.gz"), out)
    assert stlsim.trace_info(str(out), format="stlt")["devices"] == stlsim.trace_info(str(data / "wsrch-small.trace.gz"))["devices"]
    assert stlsim.run(trace=str(out), drive="cmr", fold=True, disk=3).summary["requests"] == 8  # device 3 holds 8
    # An error about a converted request names its line in the source file.
    blk = tmp_path / "blk.stlt"
    stlsim.convert(str(data / "blktrace.txt.gz"), blk)
    with pytest.raises(TraceFormatError, match="beyond the drive's capacity") as text_error:
        stlsim.run(trace=str(data / "blktrace.txt.gz"), drive="imr-paper")  # a 1.2 TiB span on a 1 TiB drive
    line = str(text_error.value).split(":")[1]
    with pytest.raises(TraceFormatError, match=rf"blk\.stlt:{line}: .*beyond the drive's capacity"):
        stlsim.run(trace=str(blk), drive="imr-paper")


def test_convert_refuses_to_overwrite_and_damage_is_one_line(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "w.stlt"
    stlsim.convert(str(data / "wdev_3.csv"), out)
    p = subprocess.run([sys.executable, "-m", "stlsim", "convert", str(data / "wdev_3.csv"), str(out)], capture_output=True, text=True)
    assert p.returncode != 0 and "exists (use --force" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = subprocess.run([sys.executable, "-m", "stlsim", "convert", str(data / "wdev_3.csv"), str(out), "--force"], capture_output=True, text=True)
    assert p.returncode == 0 and "682 requests" in p.stderr
    data_bytes = out.read_bytes()
    cut = tmp_path / "cut.stlt"
    cut.write_bytes(data_bytes[: len(data_bytes) // 2])
    p = subprocess.run([sys.executable, "-m", "stlsim", "run", "--trace", str(cut), "--drive", "cmr"], capture_output=True, text=True)
    assert p.returncode != 0 and "cut.stlt" in p.stderr and "truncated" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_trace_info_prints_the_figures_a_user_checks_first(data: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "stlsim", "trace-info", str(data / "wdev_3.csv")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for needle in ("format", "msr", "requests", "682", "reads", "11 (1.6 %)", "writes", "671", "duration", "address span",
                   "write footprint on imr-paper", "request sizes"):  # fmt: skip
        assert needle in p.stdout, needle
    info = stlsim.trace_info(str(data / "wdev_3.csv"), drive="cmr")
    assert (info["requests"], info["reads"], info["writes"]) == (682, 11, 671)
    assert sum(c for _, c in info["sizes"]) == 682 and info["write_tracks"] > 0 and info["drive"] == "cmr"


def test_a_trace_of_several_devices_needs_a_choice(data: Path) -> None:
    t = str(data / "wsrch-small.trace.gz")  # MQSim's excerpt: devices 0 to 5
    with pytest.raises(TraceFormatError, match=r"wsrch-small\.trace\.gz:2: .*more than one device \(0 and 1 so far\).*--device all"):
        stlsim.run(trace=t, drive="cmr", fold=True)
    merged = stlsim.run(trace=t, drive="cmr", fold=True, disk="all")
    parts = [stlsim.run(trace=t, drive="cmr", fold=True, disk=d).summary["requests"] for d in range(6)]
    assert sum(parts) == merged.summary["requests"] == 24_783
    p = subprocess.run([sys.executable, "-m", "stlsim", "run", "--trace", t, "--drive", "cmr", "--fold", "--device", "all", "--json"],
                       capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 0 and '"requests": 24783' in p.stdout, p.stderr
    p = subprocess.run([sys.executable, "-m", "stlsim", "run", "--trace", t, "--drive", "cmr", "--fold"], capture_output=True, text=True)
    assert p.returncode != 0 and "more than one device" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    with pytest.raises(ConfigError, match='non-negative integer or "all"'):
        stlsim.run(trace=t, drive="cmr", disk="some")


def _msr_frame(path: Path):  # the MSR file read independently of stlsim
    import pandas as pd

    df = pd.read_csv(path, header=None, names=["ticks", "host", "disk", "type", "offset", "size", "resp"])
    df["t"] = (df["ticks"] - df["ticks"].iloc[0]) / 1e7  # 100 ns ticks, from the first record
    return df


def test_time_window_and_operation_filter_select_what_pandas_selects(data: Path, tmp_path: Path) -> None:
    path = data / "rsrch_1.csv"
    df = _msr_frame(path)
    frm, to = 86_400.0, 3 * 86_400.0
    want = df[(df["t"] >= frm) & (df["t"] < to)]
    info = stlsim.trace_info(str(path), None, time_from_s=frm, time_to_s=to)
    assert (info["requests"], info["reads"]) == (len(want), int((want["type"] == "Read").sum()))
    assert 0 < info["reads"] < info["requests"]
    # only= after the window; start/limit count what is left.
    writes = want[want["type"] == "Write"]
    r = stlsim.run(trace=str(path), drive="cmr", fold=True, time_from_s=frm, time_to_s=to, only="write", start=10, limit=50)
    assert (r.summary["requests"], r.summary["reads"]) == (min(50, len(writes) - 10), 0)
    assert stlsim.run(trace=str(path), drive="cmr", fold=True, only="reads").summary["requests"] == int((df["type"] == "Read").sum())
    # The same selection from a configuration file, from the CLI and kept by convert.
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'[trace]\npath = "{path}"\nonly = "write"\ntime_from_s = {frm}\ntime_to_s = {to}\n')
    assert stlsim.run(config=str(cfg), drive="cmr", fold=True).summary["requests"] == len(writes)
    out = subprocess.run(
        [sys.executable, "-m", "stlsim", "trace-info", str(path), "--time-from", str(frm), "--time-to", str(to), "--only", "write", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert '"requests": %d' % len(writes) in out.stdout
    done = stlsim.convert(str(path), tmp_path / "w.stlt", time_from_s=frm, time_to_s=to, only="write")
    assert done["records"] == len(writes) and done["selection"]["only"] == "write"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--time-from", "5", "--time-to", "5"], "time window is empty"),
        (["--time-to", "-1"], "expected seconds"),
        (["--time-from", "nan"], "expected seconds"),
        (["--only", "trim"], "invalid choice"),
    ],
)
def test_bad_filters_are_one_line_errors(data: Path, args: list[str], needle: str) -> None:
    p = subprocess.run([sys.executable, "-m", "stlsim", "trace-info", str(data / "rsrch_1.csv"), *args], capture_output=True, text=True)
    assert p.returncode != 0 and needle in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_filters_do_not_apply_to_a_synthetic_trace() -> None:
    with pytest.raises(ConfigError, match="'only'"):
        stlsim.run(trace="synth:sequential,usage=0.001", drive="cmr", only="read")


def test_a_thesios_shard_is_detected_and_its_files_placed_in_extents(data: Path) -> None:
    import pandas as pd

    path = data / "thesios" / "data-00000-of-00001"
    df = pd.read_csv(path)
    kept = df[(df["op_type"] == "WRITE") | (df["cache_hit"] != 1)]
    info = stlsim.trace_info(str(path), None)
    assert info["format"] == "thesios"
    assert (info["requests"], info["reads"]) == (len(kept), int((kept["op_type"] == "READ").sum()))
    files = list(dict.fromkeys(kept["filename"]))  # in order of first appearance
    assert info["end_byte"] <= len(files) * (64 << 20)
    # A smaller extent than a file's offsets is a one-line error naming the option.
    p = subprocess.run(
        [sys.executable, "-m", "stlsim", "trace-info", str(path), "--file-extent-mib", "1"], capture_output=True, text=True
    )
    assert p.returncode != 0 and "file_extent_mib" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    with pytest.raises(ConfigError, match="file_extent_mib"):
        stlsim.trace_info(str(data / "rsrch_1.csv"), None, file_extent_mib=64)


SAMPLES = [n for n, _ in ROUND_TRIP if n.startswith("samples/")]


@pytest.mark.parametrize("name", SAMPLES)
def test_each_written_sample_holds_the_requests_of_the_real_trace_it_came_from(data: Path, name: str) -> None:
    selection = dict(ROUND_TRIP)[name]
    msr = stlsim.trace_info(str(data / "wdev_3.csv"), None, limit=200)
    got = stlsim.trace_info(str(data / name), None, **selection)
    keys = ("requests", "reads", "writes", "read_bytes", "write_bytes", "first_byte", "end_byte")
    assert {k: got[k] for k in keys} == {k: msr[k] for k in keys}
    if name.endswith((".spc", ".fio3.log", ".systor17.csv")):
        assert got["format"] == name.split(".")[1].removesuffix("3")  # detected without --format
    # Times survive where the format keeps them finer than a second.
    if not name.endswith("tencent.csv"):
        assert got["duration_s"] == pytest.approx(msr["duration_s"], abs=1e-5)


# --------------------------------------------------------------------------
# Issue 35: header lines, binary files, one list of formats, "did you mean"
# --------------------------------------------------------------------------


def test_an_msr_csv_with_a_header_line_is_read_guessed_or_named(tmp_path: Path, data: Path, cli) -> None:
    body = (data / "rsrch_1.csv").read_text().splitlines()[:200]
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join(body) + "\n")
    headed = tmp_path / "headed.csv"
    headed.write_text("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n" + "\n".join(body) + "\n")
    want = stlsim.run(trace=str(plain), drive="cmr", fold=True).summary
    for fmt in (None, "msr"):
        got = stlsim.run(trace=str(headed), drive="cmr", fold=True, format=fmt).summary
        assert got["requests"] == want["requests"] == 200
        assert got == want
    proc = cli("trace-info", str(headed))
    assert proc.returncode == 0, proc.stderr
    assert "msr" in proc.stdout


def test_a_binary_file_is_refused_in_hexadecimal_not_echoed(tmp_path: Path, cli, one_line_error) -> None:
    elf = tmp_path / "a.out"
    elf.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    for extra in ([], ["--format", "msr"]):
        line = one_line_error(cli("run", "--trace", str(elf), *extra))
        assert "binary data (first bytes 7f 45 4c 46 02 01 01 00)" in line, line
        assert "ELF" not in line and "\\u{" not in line, line


def test_the_format_hint_lists_every_format_the_core_reads(tmp_path: Path, cli, one_line_error) -> None:
    from stlsim import _core, config

    listed = [f["name"] for f in json.loads(_core.formats_json())]
    assert len(listed) == 16 and list(config.FORMATS) == listed
    odd = tmp_path / "odd.txt"
    odd.write_text("time op lba\n1 2 3\n")
    line = one_line_error(cli("run", "--trace", str(odd)))
    assert "cannot guess the format" in line
    assert all(name in line for name in listed), line
    # Python accepts every alias the core does, and nothing the core refuses.
    for f in json.loads(_core.formats_json()):
        for alias in f["aliases"]:
            assert config.normalize_format(alias) == f["name"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--layer", "imr-dmt"], "did you mean 'imr-dtm'?"),
        (["--layer", "imr-cache", "--param", "cache_track=4"], "did you mean 'cache_tracks'?"),
        (["--format", "mrs"], "did you mean 'msr'?"),
    ],
)
def test_a_mistyped_name_gets_a_suggestion(cli, one_line_error, args: list[str], needle: str) -> None:
    line = one_line_error(cli("run", "--limit", "10", *args))
    assert needle in line, line
    if "--layer" in args and "--param" not in args:
        # One suggestion instead of the list of every layer.
        assert "hm-fluid-loop" not in line, line


def test_a_binary_trace_with_reads_and_writes_swapped_is_refused_by_its_checksum(tmp_path: Path, data: Path, cli, one_line_error) -> None:
    out = tmp_path / "w.stlt"
    stlsim.convert(str(data / "wdev_3.csv"), out)
    raw = bytearray(out.read_bytes())
    assert raw[:8] == b"STLSIMT2"
    header = int.from_bytes(raw[8:12], "little")
    block = 12 + header + 4  # magic, header size, header, its checksum
    n = int.from_bytes(raw[block : block + 4], "little") & 0x7FFF_FFFF
    assert n == 682
    ops = block + 4 + 5 * 8 * n
    for i in range(n):
        raw[ops + i] ^= 1  # every read a write and every write a read: each a valid value
    bad = tmp_path / "swapped.stlt"
    bad.write_bytes(bytes(raw))
    line = one_line_error(cli("run", "--trace", str(bad), "--drive", "cmr"))
    assert "swapped.stlt" in line and "records 1 to 682 fail their block's checksum" in line, line


def test_convert_refuses_a_device_at_once_and_trace_info_files_huge_requests_last(tmp_path: Path, cli, one_line_error) -> None:
    proc = cli("convert", "/dev/zero", str(tmp_path / "z.stlt"), "--format", "msr", timeout=20)
    line = one_line_error(proc)
    assert "regular file" in line and "/dev/zero" in line, line
    assert not (tmp_path / "z.stlt").exists()
    f = tmp_path / "huge.csv"
    f.write_text(f"1,h,0,Read,0,{2**64 - 4096},0\n2,h,0,Read,0,4096,0\n")
    info = stlsim.trace_info(str(f), drive=None)
    assert info["sizes"] == [[4096, 1], [2**64 - 1, 1]], info["sizes"]
    out = cli("trace-info", str(f)).stdout
    assert "<= 0 B" not in out and "16.0 EiB" in out, out
