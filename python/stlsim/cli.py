"""The ``stlsim`` command.

    stlsim run          replay a trace through one layer, print a summary
    stlsim compare      run several configurations, print a table (--out: save it, plots)
    stlsim analyze      which tracks a trace writes, and when (no simulation)
    stlsim layers       list the translation layers and their parameters
    stlsim drives       list the drive presets with derived figures
    stlsim init-config  write a fully commented run configuration
    stlsim synth        write a synthetic trace (sequential or uniform) as MSR CSV

Every error a user can cause is printed as one line ``stlsim: error: ...`` on
stderr with exit status 2; Ctrl-C exits with 130 after one line saying
what was saved; a closed stdout
(``stlsim run | head -1``) stops quietly with 141.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from .errors import ConfigError, StlsimError

__all__ = ["build_parser", "main"]

#: Trace options beyond the format's: the operation filter, the time window
#: the Thesios file extent and the rate of an untimed fio log.
SELECTION_KEYS = ("only", "time_from_s", "time_to_s", "file_extent_mib", "rate_iops")
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
#: The reader of stdout went away (`stlsim run | head -1`): 128 + SIGPIPE, as
#: for any Unix tool a closed pipe stops.
EXIT_BROKEN_PIPE = 141


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one line, like every other stlsim error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"stlsim: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_ERROR)


def _nonneg(text: str) -> int:
    try:
        v = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    return v


def _positive(text: str) -> int:
    try:
        v = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return v


def _usage_list(text: str) -> list[float]:
    from .api import _usage_levels

    try:
        return _usage_levels([t for t in text.replace(" ", "").split(",") if t])
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("configuration error: ")) from None


def _history(text: str) -> float:
    from .config import parse_history

    try:
        return parse_history(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("configuration error: ")) from None


def _prefill(text: str) -> float | str:
    from .config import parse_prefill

    try:
        return parse_prefill(text)
    except ConfigError:
        raise argparse.ArgumentTypeError(f"expected a fraction between 0 and 1 or 'footprint', got '{text}'") from None


def _track_list(text: str) -> list[int]:
    parts = [t.strip() for t in text.split(",")]
    try:
        out = [int(t.replace("_", "")) for t in parts if t]
    except ValueError:
        out = []
    if not out or any(t < 0 for t in out):
        raise argparse.ArgumentTypeError(f"expected physical track numbers like 3054,3055, got '{text}'")
    return out


def _bounded(what: str, low: float, high: float, *, above: bool = False) -> Any:
    """An argument parser for a finite number from ``low`` (excluded when
    ``above``) to ``high``, naming ``what`` it expects."""
    span = f"above {low:g} and at most {high:g}" if above else f"from {low:g} to {high:g}"

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not (math.isfinite(v) and (v > low if above else v >= low) and v <= high):
            raise argparse.ArgumentTypeError(f"expected {what} {span}, got {text!r}")
        return v

    return parse


_rate = _bounded("requests per second", 0, 1e9, above=True)
_seconds = _bounded("seconds", 0, 1e9)


def _device(text: str) -> int | str:
    if text.strip().lower() == "all":
        return "all"
    return _nonneg(text)


def _add_trace_options(p: argparse.ArgumentParser, repeat: bool = False, positional: bool = False) -> None:
    from .config import FORMATS  # the core's one list

    t = p.add_argument_group("trace")
    if positional:
        t.add_argument("trace", metavar="TRACE", help="trace file (.gz/.zst ok)")
    else:
        t.add_argument(
            "--trace",
            metavar="FILE|synth:...",
            help="trace file (.gz/.zst ok), or a synthetic trace generated on the fly, e.g. "
            "synth:sequential,usage=0.75,seed=1 (see 'stlsim synth'); default: the bundled CloudPhysics trace",
        )
    t.add_argument(
        "--format",
        metavar="F",
        help=", ".join(FORMATS) + " or auto (default: guess; see docs/traces.md)",
    )
    t.add_argument("--event", metavar="Q|D|C", help="blkparse: the event that stands for a request (default Q, queued)")
    t.add_argument(
        "--file-extent-mib",
        dest="file_extent_mib",
        type=_positive,
        metavar="MIB",
        help="thesios: MiB of addresses each traced file is given (default 64)",
    )
    t.add_argument(
        "--rate",
        "--rate-iops",
        dest="rate_iops",
        type=_rate,
        metavar="IOPS",
        help="fio version-2 logs (no times): issue this many requests a second (default: all at once)",
    )
    t.add_argument(
        "--pair-completions",
        "--pair",
        dest="pair_completions",
        action="store_const",
        const=True,
        help="blkparse: pair each request with its completion (C) for the trace's measured response time",
    )
    t.add_argument(
        "--csv",
        metavar="LAYOUT",
        help="column layout of a --format csv trace, e.g. 'time=1,op=4,offset=5,size=6,header,delim=,' (see docs/traces.md)",
    )
    t.add_argument(
        "--skip-unknown",
        action="store_const",
        const=True,
        help="skip (and count) records whose operation is neither a read nor a write instead of failing",
    )
    t.add_argument(
        "--device",
        "--disk",
        dest="disk",
        type=_device,
        metavar="N|all",
        help="keep only this device (MSR disk number, SPC ASU, fio file, DiskSim/MQSim/blkparse device, CSV device column); "
        "'all' merges them; unset, a trace holding several is an error",
    )
    t.add_argument("--only", choices=("read", "write", "reads", "writes"), metavar="read|write", help="replay only reads or only writes")
    t.add_argument(
        "--time-from",
        dest="time_from_s",
        type=_seconds,
        metavar="S",
        help="leave out the requests before S seconds after the trace's first one (of the chosen device)",
    )
    t.add_argument(
        "--time-to",
        dest="time_to_s",
        type=_seconds,
        metavar="S",
        help="leave out the requests from S seconds after the trace's first one on",
    )
    t.add_argument("--start", type=_nonneg, metavar="N", help="skip N requests first (after --device, --time-from/--time-to and --only)")
    t.add_argument("--limit", type=_nonneg, metavar="N", help="replay at most N requests")
    if repeat:
        t.add_argument(
            "--repeat",
            type=_positive,
            metavar="N",
            help="replay the selection N times back to back, each copy shifted in time (default: 1)",
        )


def _add_plot_format(p: Any, text: str) -> None:
    from .plots import PLOT_FORMATS

    p.add_argument("--plot-format", choices=PLOT_FORMATS, metavar="png|pdf|svg", help=text)


def _plot_format(ns: argparse.Namespace, out: Any) -> str:
    """The format of the plots: --plot-format (which needs somewhere to put them), else png."""
    if ns.plot_format is not None and not out:
        raise ConfigError(f"configuration error: --plot-format needs --out DIR (stlsim {ns.command} saves plots only there)")
    return str(ns.plot_format or "png")


def _saved(out: str | os.PathLike[str], names: Sequence[str]) -> str:
    """The files among ``names`` now in ``out``, as a list for a message."""
    there = [n for n in names if (Path(out) / n).is_file()]
    return ", ".join(there[:-1]) + (" and " if len(there) > 1 else "") + (there[-1] if there else "")


def _add_common(p: argparse.ArgumentParser) -> None:
    """Options shared by run and compare (all default to 'not given')."""
    _add_trace_options(p, repeat=True)
    d = p.add_argument_group("drive and layer")
    d.add_argument("--drive", metavar="NAME|FILE", help="drive preset or drive TOML file (default: imr-paper)")
    d.add_argument(
        "--param", action="append", metavar="NAME=VALUE", help="a layer parameter (repeatable; see 'stlsim layers')"
    )
    r = p.add_argument_group("replay")
    r.add_argument("--mode", choices=("queue", "flat-out", "scaled", "closed"), help="replay mode (default: queue)")
    r.add_argument("--queue-depth", type=_nonneg, metavar="Q", help="host queue depth in queue mode (default: 64)")
    r.add_argument("--scale", type=_positive_float, metavar="X", help="inter-arrival multiplier in scaled mode")
    r.add_argument(
        "--write-cache",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="force the drive's write cache on or off (default: the drive's)",
    )
    r.add_argument(
        "--fold", action=argparse.BooleanOptionalAction, default=None, help="fold offsets beyond the capacity"
    )
    r.add_argument(
        "--prefill",
        type=_prefill,
        metavar="F|footprint",
        help="drive state at the start: fraction F of the capacity holding data (0: empty, 1: full), or "
        "'footprint' (every track the trace touches); default: the drive's (imr-paper: full)",
    )
    r.add_argument(
        "--fold-to-prefill",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fold LBAs into the prefilled range: LBA mod (F x capacity)",
    )
    r.add_argument(
        "--history",
        type=_history,
        metavar="F",
        help="start from a drive with a history: random 4 KiB writes until the layer's persistent cache "
        "or map is F full (0 < F < 1; smr-eregion, smr-vguard; docs/drive-model.md)",
    )
    r.add_argument("--history-seed", type=_nonneg, metavar="N", help="the history's seed (default: 1)")
    r.add_argument("--waf-every", type=_positive, metavar="N", help="host writes per point of the WAF series (default: 10000)")
    r.add_argument(
        "--verify",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="carry data and check every read and the final footprint",
    )
    r.add_argument("--series-every", type=_positive, metavar="N", help="requests per time-series point (default: 1000; doubled whenever the series reaches 10,000 points)")
    r.add_argument(
        "--crash-after",
        type=_nonneg,
        nargs="+",
        action="extend",
        metavar="N",
        help="inject a power loss after N completed requests (several allowed)",
    )
    r.add_argument(
        "--crash-at-op",
        dest="crash_at_ops",
        type=_nonneg,
        nargs="+",
        action="extend",
        metavar="N",
        help="inject a power loss before physical operation N (several allowed)",
    )
    o = p.add_argument_group("output")
    o.add_argument("--json", action="store_true", help="print JSON instead of tables")
    o.add_argument("--explain", action="store_true", help="say under each headline figure what it means (no effect with --json)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``stlsim`` command."""
    from . import __version__

    parser = _Parser(
        prog="stlsim",
        description="Trace-driven simulator of SMR and IMR translation layers.",
        epilog="Run 'stlsim COMMAND --help' for a command's options; see docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"stlsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "run",
        help="replay a trace through one layer and print a summary",
        description="Replay a trace through one translation layer. With no options: layer cmr on drive "
        "imr-paper over the bundled CloudPhysics trace, queue mode, queue depth 64.",
    )
    p.add_argument("--config", metavar="FILE", help="run configuration TOML (options given here override it)")
    p.add_argument("--layer", metavar="NAME", help="translation layer (default: cmr; see 'stlsim layers')")
    p.add_argument("--label", metavar="NAME", help="name of the run in the report")
    p.add_argument("--out", metavar="DIR", help="save report.json, config.json, Parquet files and plots into DIR")
    p.add_argument("--force", action="store_true", help="overwrite an earlier run's files in --out DIR")
    _add_plot_format(p, "with --out, the format of the run's plots (default: png)")
    _add_common(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser(
        "compare",
        help="run several configurations and print a table (with --out, save it and plots)",
        description="Run several configurations over the same trace and print a table of their figures. "
        "With --out DIR, also save summary.csv, per-run files and plots there (latency_cdf, headline, "
        "tail_latency, disparity, waf_series ...; PNG unless --plot-format); without it nothing is written. "
        "Give configurations as --config files "
        "and/or --layer names; the other options apply to every configuration and override it. "
        "--usage runs every configuration at several usage levels (paper 002 Figure 3).",
    )
    p.add_argument("--config", action="append", metavar="FILE", help="a run configuration TOML (repeatable)")
    p.add_argument(
        "--layer",
        action="append",
        metavar="NAME",
        help="a layer to run with its defaults (repeatable; NAME,NAME,... gives several)",
    )
    p.add_argument(
        "--usage",
        type=_usage_list,
        metavar="U,U,...",
        help="run every configuration at each usage level (fractions or percentages, e.g. 25,50,75,100): "
        "the drive starts that full and LBAs fold into the filled range (--prefill U --fold-to-prefill); "
        "prints response time and WAR per level (and, with --out, saves by_usage.png)",
    )
    p.add_argument("--out", metavar="DIR", help="save summary.csv, one folder per run and the plots into DIR (default: print the table only, write nothing)")
    p.add_argument("--force", action="store_true", help="overwrite an earlier comparison's files in --out DIR")
    _add_plot_format(p, "with --out, the format of the plots (default: png)")
    _add_common(p)
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser(
        "analyze",
        help="which tracks a trace writes, and when (the paper's workload figures)",
        description="Map every write of a trace onto the physical tracks of a drive (nothing is simulated) and "
        "report: the write-count CDF of the hottest tracks (paper Figures 2, 10), the hottest bottom tracks "
        "with their neighbours T-1 and T+1 (Figures 4, 11) and the write frequency of chosen tracks over time "
        "(Figure 5). With --out, save hottest_cdf.png, hottest_neighbours.png, track_frequency.png (or "
        "--plot-format pdf or svg) and track_counts.parquet.",
    )
    _add_trace_options(p)
    d = p.add_argument_group("drive")
    d.add_argument("--drive", metavar="NAME|FILE", help="drive preset or drive TOML file (default: imr-paper)")
    d.add_argument(
        "--fold", action=argparse.BooleanOptionalAction, default=None, help="fold offsets beyond the capacity"
    )
    a = p.add_argument_group("analysis")
    a.add_argument("--hottest", type=_positive, default=3000, metavar="K", help="tracks in the CDF (default: 3000)")
    a.add_argument(
        "--tracks",
        type=_track_list,
        metavar="T1,T2,...",
        help="physical tracks followed over time (default: the 4 hottest)",
    )
    a.add_argument(
        "--interval",
        type=_positive,
        default=10_000,
        metavar="N",
        help="write requests per interval of the frequency figure (default: 10000)",
    )
    o = p.add_argument_group("output")
    o.add_argument("--out", metavar="DIR", help="save the three figures and track_counts.parquet into DIR (default: none)")
    o.add_argument("--force", action="store_true", help="overwrite an earlier analysis's files in --out DIR")
    _add_plot_format(o, "with --out, the format of the figures (default: png)")
    o.add_argument("--json", action="store_true", help="print the figures' numbers as JSON instead of tables")
    p.set_defaults(func=_cmd_analyze)

    p = sub.add_parser(
        "serve",
        help="serve a simulated drive as a live block device over NBD (docs/serve.md)",
        description="Serve the simulated drive over the NBD protocol until Ctrl-C: every read and write a client "
        "(qemu-io, qemu-img, fio's nbd engine, nbdcopy, a virtual machine) sends goes through the engine, the layer, "
        "the medium and the oracle; the bytes are kept in memory or in --store FILE. On exit it prints the run's "
        "summary, as 'stlsim run' does; 'stlsim serve --report --socket PATH' prints the report of a running server.",
    )
    p.add_argument("--drive", metavar="NAME|FILE", default="cmr", help="drive preset or drive TOML file (default: cmr)")
    p.add_argument("--layer", metavar="NAME", default="cmr", help="translation layer (default: cmr)")
    p.add_argument(
        "--param", action="append", metavar="NAME=VALUE", help="a layer parameter (repeatable; see 'stlsim layers')"
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", metavar="PATH", help="listen on this Unix socket (nbd+unix:///?socket=PATH)")
    where.add_argument("--port", type=_nonneg, metavar="N", help="listen on 127.0.0.1:N (nbd://127.0.0.1:N)")
    p.add_argument("--mode", choices=("queue", "flat-out", "closed"), default="queue", help="replay mode (default: queue)")
    p.add_argument(
        "--time",
        choices=("simulated", "real"),
        default="simulated",
        help="simulated: answer at once and account the simulated latency (default); "
        "real: hold each reply until its simulated completion",
    )
    p.add_argument(
        "--time-scale",
        type=_positive_float,
        default=1.0,
        metavar="X",
        help="simulated time per wall-clock time: arrivals are wall-clock arrivals times X, held replies wait latency / X (default: 1)",
    )
    p.add_argument(
        "--back-to-back",
        action="store_true",
        help="each request arrives when the one before it completed (simulated time), not at its wall-clock arrival",
    )
    p.add_argument("--store", metavar="FILE", help="keep the bytes in this (sparse) file instead of memory")
    p.add_argument("--record", metavar="FILE.stlt", help="write the requests served as a binary trace that 'stlsim run' replays")
    p.add_argument(
        "--crash-after",
        type=_positive,
        action="append",
        metavar="N",
        help="a power loss after the N-th request: every connection dropped, the layer rebuilt (repeatable)",
    )
    p.add_argument("--out", metavar="DIR", help="on exit, save report.json, Parquet files and plots into DIR, as 'stlsim run --out'")
    p.add_argument("--force", action="store_true", help="overwrite an earlier run's files in --out DIR")
    p.add_argument(
        "--report",
        action="store_true",
        help="do not serve: print the report so far of the server running on --socket/--port, as JSON",
    )
    p.add_argument("--no-verify", action="store_true", help="leave the oracle off (on by default)")
    p.add_argument("--json", action="store_true", help="on exit, print the report as JSON instead of the summary")
    p.set_defaults(func=_cmd_serve)

    p = sub.add_parser("layers", help="list the translation layers and their parameters")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=_cmd_layers)

    p = sub.add_parser("drives", help="list the drive presets with derived figures")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_drives)

    p = sub.add_parser(
        "init-config",
        help="write a fully commented run configuration",
        description="Write a commented run configuration that runs as is on the bundled trace "
        "(to FILE, or to stdout).",
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="where to write it (default: stdout)")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.set_defaults(func=_cmd_init_config)

    p = sub.add_parser(
        "validate",
        help="replay a DiskSim validate trace as DiskSim does and compare with the real drive's measured times",
        description="Replay TRACE (DiskSim's validate format: each request with the response time measured "
        "on the real drive) on DRIVE as DiskSim's validation runs do (closed loop: each request issued its "
        "think time after the previous one completes) and print DiskSim's demerit figure (RMS horizontal "
        "distance between the simulated and measured response-time CDFs), beside DiskSim's own where it "
        "published one for the drive, the mean simulated and measured response and the mean error. "
        "See docs/validation.md.",
    )
    p.add_argument("--drive", required=True, metavar="NAME|FILE", help="drive preset or drive TOML (e.g. one made by import-disksim)")
    p.add_argument("--trace", required=True, metavar="TRACE", help="a DiskSim validate trace (.gz/.zst read too)")
    p.add_argument("--out", metavar="DIR", help="save validation.json, the CDFs (CSV), per-request times and the CDF plot there")
    p.add_argument("--force", action="store_true", help="overwrite an earlier validation's files in --out DIR")
    p.add_argument("--plot-format", metavar="FMT", help="with --out: the plot's format, png (default), pdf or svg")
    p.add_argument("--fold", action="store_true", help="fold requests beyond the drive's capacity back into it")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=_cmd_validate)

    p = sub.add_parser(
        "import-disksim",
        help="write a commented stlsim drive file from DiskSim's .parv/.diskspecs/.model",
        description="Read a DiskSim parameter file (.parv run file, .diskspecs or .model; 'source' lines "
        "and the .seek curve are followed) and write a commented stlsim drive description citing the "
        "DiskSim file:line of every value. Values stlsim cannot express yet are listed on stderr and in "
        "the file's header. See docs/validation.md.",
    )
    p.add_argument("file", metavar="FILE", help="a DiskSim .parv, .diskspecs or .model file")
    p.add_argument("-o", "--output", metavar="OUT.toml", help="where to write the drive (default: stdout)")
    p.add_argument("--name", metavar="NAME", help="the drive's name (default: from FILE, hp_c3323a -> hp-c3323a)")
    p.add_argument("--force", action="store_true", help="overwrite OUT.toml if it exists")
    p.set_defaults(func=_cmd_import_disksim)

    p = sub.add_parser(
        "sweep",
        help="run every cell of a sweep plan on a process pool or Ray (resumable)",
        description="Run every cell of a sweep plan (traces x drives x layers x parameters x replay "
        "options) and append one row per run to a Parquet dataset in OUT/rows; cells already there "
        "are skipped, so an interrupted sweep resumes. See docs/sweeps.md.",
    )
    p.add_argument("plan", metavar="PLAN.toml", help="the sweep plan")
    p.add_argument("--out", metavar="DIR", help="results folder (default: results/sweep-<plan name>)")
    p.add_argument("--jobs", type=_positive, metavar="N", help="worker processes, or CPUs of a local Ray instance (default: every core)")
    p.add_argument(
        "--engine",
        choices=("pool", "ray"),
        default="pool",
        help="pool: local processes (default); ray: Ray tasks (pip install 'stlsim[ray]')",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="an existing Ray cluster (e.g. 10.0.0.1:6379; default $RAY_ADDRESS, else a local instance)",
    )
    p.add_argument("--retry-failed", action="store_true", help="run again the cells whose row records an error")
    p.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser(
        "report",
        help="write one self-contained HTML page for a saved run, compare or sweep folder",
        description="Write DIR/report.html: one self-contained page (plots embedded, tables, "
        "configuration, warnings, provenance) for a folder written by run --out, compare --out or sweep.",
    )
    p.add_argument("dir", metavar="DIR", help="a folder written by run --out, compare --out or sweep --out")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser(
        "convert",
        help="convert a trace into stlsim's binary form (.stlt), read much faster than text",
        description="Convert TRACE (any format stlsim reads, with its selection applied) into OUT, "
        "stlsim's binary trace form: every command reads it directly. Its header records the source's "
        "path, size, SHA-256, format and the selection.",
    )
    _add_trace_options(p, positional=True)
    p.add_argument("out", metavar="OUT", help="the binary trace to write (by convention .stlt)")
    p.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_convert)

    p = sub.add_parser(
        "trace-info",
        help="what a trace holds: requests, read/write mix, sizes, span, duration, footprint in tracks",
        description="Read TRACE once, without simulating, and print its detected format, requests, "
        "read/write mix, request sizes, address span, duration, devices, and the tracks of --drive its writes touch.",
    )
    _add_trace_options(p, positional=True)
    p.add_argument("--drive", metavar="NAME|FILE", help="drive whose tracks the write footprint counts (default: imr-paper)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(func=_cmd_trace_info)

    _add_synth(sub)
    return parser


def _add_synth(sub: Any) -> None:
    from .synth import SYNTH_FIELDS

    p = sub.add_parser(
        "synth",
        help="write a synthetic trace (sequential or uniform) as MSR CSV",
        description="Generate a synthetic trace from a seed and write it, streaming, as MSR Cambridge CSV "
        "(any tool, and 'stlsim run --trace FILE', can replay it). Kinds: sequential (He & Du's SYN: "
        "contiguous writes until total_bytes are written) and uniform (count requests at uniformly random "
        "aligned offsets within span_bytes). Inter-arrival times are normal(iat_mean_ms, iat_sd_ms), "
        "clamped at 0. 'run', 'compare' and 'analyze' also take the same trace without a file: "
        "--trace synth:KIND,KEY=VALUE,...",
        epilog="Sizes take units: 4096, 500KB, 1.5GiB. See docs/traces.md.",
    )
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    about = {
        "sequential": "writes of request_bytes one after another from start_bytes until total_bytes are written",
        "uniform": "count requests at uniformly random offsets (aligned to align_bytes) within span_bytes",
    }
    for kind, text in about.items():
        k = kinds.add_parser(
            kind,
            help=text,
            description=f"A {kind} synthetic trace: {text}. Give "
            + ("--total-bytes or --usage." if kind == "sequential" else "--count, and --span-bytes or --usage."),
            epilog="Sizes take units: 4096, 500KB, 1.5GiB. See docs/traces.md.",
        )
        g = k.add_argument_group("trace")
        for name, (vkind, applies, doc) in SYNTH_FIELDS.items():
            if kind in applies:
                metavar = {"bytes": "SIZE", "int": "N", "float": "X"}[vkind]
                g.add_argument("--" + name.replace("_", "-"), dest=name, metavar=metavar, help=doc)
        sized = "total_bytes" if kind == "sequential" else "span_bytes"
        g.add_argument(
            "--usage",
            metavar="F",
            help=f"set {sized} to F x the host capacity of --drive (e.g. 0.75), rounded down to whole requests",
        )
        g.add_argument("--drive", metavar="NAME|FILE", help="drive whose capacity --usage refers to (default: imr-paper)")
        o = k.add_argument_group("output")
        o.add_argument("-o", "--output", required=True, metavar="FILE", help="trace file to write (.gz/.zst compressed)")
        o.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
        o.add_argument("--json", action="store_true", help="print the generator's spec and figures as JSON")
        k.set_defaults(func=_cmd_synth)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------



def _given(ns: argparse.Namespace) -> dict[str, Any]:
    """The run settings given on the command line (options not given are left out)."""
    from .config import DEFAULTS, parse_params

    # Every run setting has its option of the same name, but the label, the
    # layer and its parameters, which the commands read themselves.
    names = [k for k in DEFAULTS if k not in ("label", "layer", "params")]
    out = {k: getattr(ns, k) for k in names if getattr(ns, k, None) is not None}
    if ns.param:
        out["params"] = parse_params(ns.param)
    return out


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich would exit with status 1 itself; main() stops with 141 like any other write.
            self.quiet = True
            raise BrokenPipeError

    stream = sys.stderr if stderr else sys.stdout
    # A terminal gets tables fitted to its width; a pipe or file gets them at
    # their natural width (never squeezed into 80 columns with ellipses).
    width = None if stream.isatty() else 200
    return _Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)


def _show_progress() -> bool:
    return sys.stderr.isatty()


def _info(message: str) -> None:
    sys.stderr.write(f"stlsim: {message}\n")


def _num(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:
            return "-"
        return f"{v:,.{digits}f}"
    return str(v)


def _counter(v: Any) -> str:
    """A layer counter or gauge: whole numbers without decimals."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return _num(v)


def _fig(v: Any, decimals: int = 1, sig: int = 2) -> str:
    """A figure with thousands separators and ``decimals`` decimals, or more
    where a non-zero value would otherwise show fewer than ``sig``
    significant digits (0.0042, not 0.0)."""
    if v is None or v != v:
        return "-"
    v = float(v)
    if v and math.isfinite(v):
        decimals = max(decimals, sig - 1 - math.floor(math.log10(abs(v))))
    return f"{v:,.{decimals}f}"


def _ms(v: float) -> str:
    """A latency in ms with about five significant digits (two at least)."""
    if v != v:
        return "-"
    return _fig(v, 3) if v < 10 else f"{v:,.2f}" if v < 1000 else f"{v:,.1f}"


#: The footer of a table whose figures --explain would explain.
EXPLAIN_HINT = "--explain says what each figure means"


def _host_op_ms(r: dict[str, Any]) -> float | None:
    """Device time per physical operation done for the host (the cause
    ``host``): what a request costs the drive once it is served, ms."""
    row = next((c for c in r["device"]["by_cause"] if c["cause"] == "host"), None)
    ops = (row["read_ops"] + row["write_ops"]) if row else 0
    return 1000 * row["busy_s"] / ops if row and ops else None


def _latency_meaning(r: dict[str, Any]) -> str:
    """One line on what the host latencies measure, and why reads may take
    long on a lightly used drive (the queue, not the media)."""
    base = "host latency: issue to completion, ms, waiting in the drive's queue included"
    service = _host_op_ms(r)
    read = r["latency"]["read"]
    if service is None or not read["count"]:
        return base
    mean = read["mean_ms"]
    if r["mode"] == "queue" and mean > 3 * service:
        return (
            f"{base}. Reads average {_ms(mean)} ms against {_ms(service)} ms of device time per host operation: "
            f"the rest is waiting. In the trace's bursts the queue (depth {r['queue_depth']}, first come first served) "
            "fills and a read waits behind every read and destage ahead of it (writes complete once cached); "
            "utilisation averages over the whole, mostly idle, trace"
        )
    return f"{base}; device time per host operation {_ms(service)} ms"


def _run_figures(r: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The run's headline figures: (name, value with its unit, one-line meaning)."""
    host = r["host"]
    steady = r.get("waf_steady")
    intervals = r.get("intervals_completed")
    prefill = (r.get("prefill") or {}).get("spec", 0.0)
    sb = r["drive"]["sector_bytes"]

    def count(v: Any, unit: str) -> str:
        return "-" if v is None else f"{_num(v)} {unit}"

    rows = [
        ("WAF", f"{_fig(r['waf'], 3)} x", "media sectors written, every cause / sectors the layer was asked to store (host writes and destages); 1 = nothing written twice"),
        ("WAF excluding moves", f"{_fig(r.get('waf_excluding_moves', r['waf']), 3)} x", "WAF without the sectors background work (moves, cleaning) wrote: the foreground path's cost"),
        ("WAF per host sector", f"{_fig(r.get('waf_per_host_sector', r['waf']), 3)} x", "media sectors written / sectors the host wrote (below WAF when the write cache merged rewrites)"),
        ("WAF steady state", "-" if steady is None else f"{_fig(steady, 3)} x", "WAF over the second half of the run's host writes, the warm-up left out (- : run too short)"),
        ("intervals completed", count(intervals, "intervals"), "move intervals an interval-driven layer completed (fewer than 10: not steady state; - : not such a layer)"),
        ("prefill", prefill if isinstance(prefill, str) else f"{_fig(100 * prefill, 0)} %", "share of the capacity holding data at the start"),
        *(
            [("history", f"{_num(hist['writes'])} writes to {_fig(100 * hist['fill_reached'], 1)} % full", "random 4 KiB writes run before the trace to age the layer's cache or map")]
            if (hist := r.get("history"))
            else []
        ),
        ("I/O amplification", f"{_fig(r['io_amplification'], 3)} ops/request", "physical operations (media reads and writes, every cause) / host requests; below 1 when caches absorb requests"),
        ("simulated time", f"{_fig(r['simulated_s'], 1)} s", "from the first request's issue to the device's last activity"),
        ("IOPS", f"{_fig(r['iops'], 1)} requests/s", "host requests / simulated time"),
        ("throughput", f"{_fig(r['throughput_mb_s'], 2)} MB/s", "host bytes (10^6) / simulated time"),
        ("device utilisation", f"{_fig(100 * r['utilisation'], 1)} %", "share of the simulated time the device was busy (busy s below / simulated time)"),
        ("disparity final", f"{_fig(r['final_disparity_s'], 2)} s", "how much later than the trace's own time the last request was issued (the queue was full: the drive fell behind); 0 = kept up"),
        ("disparity max", f"{_fig(r['max_disparity_s'], 2)} s", "the largest such lag during the run"),
        ("writes cached", count(host.get("cached_writes"), "writes"), "host writes the DRAM write cache took (each completed once cached)"),
        ("reads hit in cache", count(host.get("cache_read_hits"), "reads"), "host reads served whole from the write cache"),
        ("crashes", count(r["crashes"], "power losses"), "power losses injected (--crash-after, --crash-at-op)"),
        ("requests lost in crashes", count(host.get("lost_in_crash"), "requests"), "host requests a power loss cut short"),
    ]
    if "read_cache_hits" in host or "read_ahead_sectors" in host:  # the drive has a read cache
        rows += [
            ("reads hit in read cache", count(host.get("read_cache_hits", 0), "reads"), "host reads served whole from the read cache"),
            ("reads partly hit", count(host.get("read_cache_partial_hits", 0), "reads"), "host reads with some of their sectors in the read cache"),
            ("read ahead", f"{_num(host.get('read_ahead_sectors', 0))} sectors ({_mib(host.get('read_ahead_sectors', 0), sb)} MiB)", "sectors the read cache read beyond what the host asked"),
        ]
    return rows


def _mib(sectors: int, sector_bytes: int) -> str:
    return f"{sectors * sector_bytes / 2**20:,.1f}"


def _print_summary(result: Any, explain: bool = False) -> None:
    """The tables of `stlsim run`; with ``explain``, what each headline figure means."""
    from rich import box
    from rich.table import Table

    r = result.report
    con = _console()
    host = r["host"]
    drive = r["drive"]
    mode = r["mode"] + " mode" + (f" (queue depth {r['queue_depth']})" if r["mode"] == "queue" else "")
    con.print(
        f"[bold]{result.label}[/bold]: layer [bold]{r['layer']}[/bold] on drive [bold]{drive['name']}[/bold] "
        f"({drive['layout']} layout, {drive['capacity_bytes'] / 1e9:,.0f} GB), {mode}"
    )
    if r.get("params"):
        con.print("parameters: " + ", ".join(f"{k}={v}" for k, v in r["params"].items()))
    status = "" if r.get("finished", True) else " [red](not finished)[/red]"
    con.print(
        f"trace {r['trace']}: {host['requests']:,} requests "
        f"({host['reads']:,} reads, {host['writes']:,} writes){status}"
    )

    lat = Table(title="Host latency (ms)", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
    lat.add_column("class", no_wrap=True)
    for c in ("count", "mean", "p50", "p90", "p99", "p99.9", "max"):
        lat.add_column(c, justify="right", no_wrap=True)
    for cls in ("all", "read", "write"):
        s = r["latency"][cls]
        lat.add_row(
            cls,
            _num(s["count"]),
            *(_ms(s[k]) if s["count"] else "-" for k in ("mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms")),
        )
    con.print(lat)
    if explain:
        con.print(_latency_meaning(r))

    run = Table(title="Run", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True, show_header=False)
    rows = _run_figures(r)
    if explain:
        # One figure a line, its meaning beside it.
        run.add_column("figure", no_wrap=True)
        run.add_column("value", justify="right", no_wrap=True)
        run.add_column("meaning")
        for row in rows:
            run.add_row(*row)
    else:
        run.add_column("figure", no_wrap=True)
        run.add_column("value", justify="right", no_wrap=True)
        run.add_column("figure", no_wrap=True)
        run.add_column("value", justify="right", no_wrap=True)
        for i in range(0, len(rows), 2):
            a, b = rows[i], rows[i + 1] if i + 1 < len(rows) else ("", "", "")
            run.add_row(a[0], a[1], b[0], b[1])
    con.print(run)
    groups = r.get("waf_by_group") or {}
    if groups:
        con.print("WAF by cause group: " + ", ".join(f"{k} {v:.3f}" for k, v in groups.items()))
    bg = r.get("background") or {}
    if bg.get("stages"):
        con.print(
            f"Background work: {bg['stages']:,} stages ({bg['stages_idle']:,} idle, {bg['stages_foreground']:,} "
            f"foreground), {bg['aborted']:,} aborted, {bg['postponed']:,} postponed; "
            f"{bg['requests_waited']:,} requests waited {bg['host_wait_s']:,.2f} s behind stages"
        )

    dev = Table(title="Device work by cause", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
    for c, j in (
        ("cause", "left"),
        ("read ops", "right"),
        ("read MiB", "right"),
        ("write ops", "right"),
        ("write MiB", "right"),
        ("busy s", "right"),
        ("seeks", "right"),
    ):
        dev.add_column(c, justify=j, no_wrap=True)  # type: ignore[arg-type]
    sb = drive["sector_bytes"]
    for row in r["device"]["by_cause"]:
        dev.add_row(
            row["cause"],
            _num(row["read_ops"]),
            _mib(row["read_sectors"], sb),
            _num(row["write_ops"]),
            _mib(row["write_sectors"], sb),
            _fig(row["busy_s"], 1),
            _num(row["seeks"]),
        )
    d = r["device"]
    dev.add_section()
    dev.add_row(
        "total",
        _num(d["read_ops"]),
        _mib(d["media_read_sectors"], sb),
        _num(d["write_ops"]),
        _mib(d["media_write_sectors"], sb),
        _fig(d["busy_s"], 1),
        _num(d["seeks"]),
    )
    con.print(dev)

    if d.get("by_device"):
        # Systems with a memory buffer or SSD beside the disk (paper 001): where time and bytes went.
        bd = Table(title="Work by device", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
        for c, j in (
            ("device", "left"),
            ("read ops", "right"),
            ("read MiB", "right"),
            ("write ops", "right"),
            ("write MiB", "right"),
            ("busy s", "right"),
        ):
            bd.add_column(c, justify=j, no_wrap=True)  # type: ignore[arg-type]
        for row in d["by_device"]:
            bd.add_row(
                row["device"],
                _num(row["read_ops"]),
                f"{row['read_bytes'] / 2**20:,.1f}",
                _num(row["write_ops"]),
                f"{row['write_bytes'] / 2**20:,.1f}",
                f"{row['busy_s']:,.3f}",
            )
        con.print(bd)

    counters = r.get("layer_counters") or {}
    if counters:
        lc = Table(title=f"Layer counters ({r['layer']})", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
        lc.add_column("counter", no_wrap=True)
        lc.add_column("value", justify="right", no_wrap=True)
        for k, v in counters.items():
            lc.add_row(k, _counter(v))
        con.print(lc)
    else:
        con.print(f"Layer counters ({r['layer']}): none")

    v = r["verification"]
    if v["enabled"]:
        verdict = "[green]passed[/green]" if v["mismatches"] == 0 else f"[red]{v['mismatches']} mismatches[/red]"
        con.print(
            f"Verification: {verdict}: {v['read_blocks_checked']:,} blocks checked on reads, "
            f"{v['scan_blocks_checked']:,} by scans, {v['mismatches']} mismatches"
        )
        if v.get("written_sectors"):
            con.print(
                f"Verification state: {v['state_bytes'] / 2**20:,.1f} MiB, "
                f"{v['bytes_per_written_sector']:.2f} bytes per written sector ({v['written_sectors']:,} sectors)"
            )
    else:
        con.print("Verification: off (use --verify)")


def _check_out(out: str | os.PathLike[str], names: Sequence[str], force: bool) -> list[Path]:
    """Before any work: ``out`` can be written, and (without ``force``) holds
    none of the files ``names`` an earlier run left. Returns those files
    (to be removed before saving, so none of them is left stale)."""
    from .result import check_output_folder

    d = check_output_folder(out)
    earlier = [d / n for n in names if (d / n).is_file()]
    if earlier and not force:
        shown = ", ".join(p.name for p in earlier[:3]) + (", ..." if len(earlier) > 3 else "")
        raise FileExistsError(f"cannot save results in '{out}': it holds an earlier run's files ({shown}); use --force to overwrite them")
    return earlier


#: The folder a command is saving into, while it does: what Ctrl-C then
#: says was left there (see main()).
_saving: list[str] = []


def _save(obj: Any, out: str | os.PathLike[str], earlier: Sequence[Path] = (), **how: Any) -> None:
    """Save a Result, Comparison, Analysis or Validation (``obj.save(out,
    **how)``), first removing an earlier run's files ``earlier`` (with
    --force); a file-system failure names the folder."""
    _saving.append(os.fspath(out))
    try:
        for f in earlier:
            f.unlink(missing_ok=True)
        obj.save(out, **how)
        _saving.pop()
    except OSError as e:
        reason = e.strerror or str(e)
        where = f" ({e.filename})" if e.filename and str(e.filename) != str(out) else ""
        raise OSError(f"cannot save results in '{out}': {reason}{where}") from None


def _warn_empty(result: Any, name: bool = False) -> None:
    if result.report["host"]["requests"] == 0:
        _info(f"warning: run '{result.label}' replayed no requests (check --disk, --start and --limit)")
    for w in result.report.get("warnings") or []:
        _info(f"warning: {result.label}: {w}" if name else f"warning: {w}")


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------


def _cmd_run(ns: argparse.Namespace) -> int:
    from .api import core_config, resolve_settings, simulate
    from .result import Result

    given = _given(ns)
    if ns.layer is not None:
        given["layer"] = ns.layer
    if ns.label is not None:
        given["label"] = ns.label
    s = resolve_settings(ns.config, given)
    cfg = core_config(s)
    fmt = _plot_format(ns, ns.out)
    earlier = _check_out(ns.out, Result.output_names(), ns.force) if ns.out else []
    result = simulate(cfg, s["label"] or s["layer"], progress=_show_progress())
    if ns.out:
        _save(result, ns.out, earlier, plot_format=fmt)
    if ns.json:
        sys.stdout.write(json.dumps(result.report, indent=2) + "\n")
    else:
        _print_summary(result, explain=ns.explain)
        if not ns.explain:
            _console().print(EXPLAIN_HINT)
    _warn_empty(result)
    if ns.out:
        _info(f"saved {_saved(ns.out, Result.output_names())} in {ns.out}")
    return 0


#: What each column of the compare table means (--explain).
COMPARE_MEANINGS = {
    "requests": "host requests replayed",
    "waf": "media sectors written, every cause / sectors the layer was asked to store; 1 = nothing written twice",
    "waf_excluding_moves": "WAF without the sectors background work (moves, cleaning) wrote",
    "waf_steady": "WAF over the second half of the run's host writes, the warm-up left out",
    "intervals_completed": "move intervals an interval-driven layer completed (fewer than 10: not steady state)",
    "mean_ms": "mean host latency, ms, issue to completion, queue wait included (in queue mode mostly waiting in the trace's bursts: see 'stlsim run --explain')",
    "p90_ms": "latency 90 % of the requests stay within, ms",
    "p99_ms": "latency 99 % of the requests stay within, ms",
    "p999_ms": "latency 99.9 % of the requests stay within, ms",
    "max_ms": "the longest latency, ms",
    "final_disparity_s": "how much later than the trace's own time the last request was issued, s (the drive fell behind); 0 = kept up",
    "clean_bands": "bands the layer cleaned",
    "write_hit_rate": "share of host writes the buffer absorbed",
    "writebacks_rmw": "buffer write-backs that read-modify-wrote a zone",
    "writebacks_rmw_free": "buffer write-backs without a read-modify-write",
    "disparity_vs_cmr_s": "final disparity minus the cmr run's, s: how much further behind the trace than CMR",
}


def _print_table(comparison: Any, explain: bool = False) -> None:
    """The table of `stlsim compare`; with ``explain``, what each column means."""
    from rich import box
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    cols = [
        ("label", "label", None),
        ("layer", "layer", None),
        ("drive", "drive", None),
        ("requests", "requests", 0),
        ("WAF", "waf", 3),
        ("WAF excl moves", "waf_excluding_moves", 3),
        ("WAF steady", "waf_steady", 3),
        ("intervals", "intervals_completed", 0),
        ("mean ms", "mean_ms", 3),
        ("p90 ms", "p90_ms", 3),
        ("p99 ms", "p99_ms", 3),
        ("p99.9 ms", "p999_ms", 3),
        ("max ms", "max_ms", 3),
        ("disparity s", "final_disparity_s", 2),
    ]
    table = comparison.table()
    if "intervals_completed" in table.columns and table["intervals_completed"].isna().all():
        cols = [c for c in cols if c[1] != "intervals_completed"]
    if "clean_bands" in table.columns and table["clean_bands"].notna().any():
        cols.append(("cleaned bands", "clean_bands", 0))
    # Host-managed buffer layers (paper 004's metrics).
    if "write_hit_rate" in table.columns and table["write_hit_rate"].notna().any():
        cols += [("write hits", "write_hit_rate", 3), ("RMW", "writebacks_rmw", 0), ("RMW-free", "writebacks_rmw_free", 0)]
    if "disparity_vs_cmr_s" in table.columns:
        cols.append(("vs CMR s", "disparity_vs_cmr_s", 2))
    for title, key, digits in cols:
        t.add_column(title, justify="left" if digits is None else "right", no_wrap=True)
    for row in table.to_dict("records"):
        cells = []
        for _, k, digits in cols:
            v = row.get(k)
            if digits is None:
                cells.append(str(v))
            elif digits == 0 and isinstance(v, float) and v == v:
                cells.append(_num(int(v)))
            else:
                cells.append(_fig(v, digits) if v is not None else "-")
        t.add_row(*cells)
    con = _console()
    con.print(t)
    if explain:
        for title, key, _ in cols:
            if key in COMPARE_MEANINGS:
                con.print(f"{title}: {COMPARE_MEANINGS[key]}")
    else:
        con.print(EXPLAIN_HINT)


def _print_usage_table(comparison: Any, explain: bool = False) -> None:
    """Paper 002's Figure 3 as a table: mean response time and WAR per configuration and usage."""
    from rich import box
    from rich.table import Table

    df = comparison.by_usage()
    levels = sorted(df["usage"].unique())
    t = Table(
        title="Average response time (ms) and average WAR by usage level (paper 002 Figure 3)",
        box=box.SIMPLE_HEAD,
        title_justify="left",
        pad_edge=False,
        collapse_padding=True,
    )
    t.add_column("configuration", no_wrap=True)
    for u in levels:
        t.add_column(f"{100 * u:g}% ms", justify="right", no_wrap=True)
        t.add_column(f"{100 * u:g}% WAR", justify="right", no_wrap=True)
    for cfg in dict.fromkeys(df["config"]):
        sub = df[df["config"] == cfg].set_index("usage")
        cells = [cfg]
        for u in levels:
            cells += [_fig(sub["mean_ms"].get(u), 1), _fig(sub["war"].get(u), 2)]
        t.add_row(*cells)
    con = _console()
    con.print(t)
    if explain:
        con.print("U% ms: mean host latency, ms, issue to completion, with the drive U % full at the start and the trace's LBAs folded into that range")
        con.print("U% WAR: write amplification ratio, 1 + read-modify-write operations / host writes (paper 002)")
    else:
        con.print(EXPLAIN_HINT)


def _cmd_compare(ns: argparse.Namespace) -> int:
    from .api import compare
    from .result import Comparison

    configs: list[Any] = list(ns.config or [])
    names = [n.strip() for arg in ns.layer or [] for n in arg.split(",") if n.strip()]
    configs += [{"layer": {"name": name}} for name in names]
    if not configs:
        raise ConfigError("configuration error: compare needs configurations: --config FILE ... and/or --layer NAME ...")
    if ns.usage is not None and ns.prefill is not None:
        raise ConfigError("configuration error: give either --usage or --prefill, not both")
    # Like run: without --out nothing is written (no folder appears in whatever directory it ran in).
    out = Path(ns.out) if ns.out else None
    fmt = _plot_format(ns, out)
    earlier = _check_out(out, Comparison.output_names(), ns.force) if out else []
    comparison = compare(configs, progress=_show_progress(), usages=ns.usage, **_given(ns))
    if out:
        _save(comparison, out, earlier, plot_format=fmt)
    if ns.json:
        rows = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.summary.items()} for r in comparison]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif ns.usage is not None:
        _print_usage_table(comparison, explain=ns.explain)
    else:
        _print_table(comparison, explain=ns.explain)
    folded = 0
    for r in comparison.results:
        if ns.usage is not None:
            # The sweep asked for folding: one line for all runs instead of one per run.
            kept = [w for w in r.report.get("warnings") or [] if not w.endswith("(fold_to_prefill)")]
            folded += len(r.report.get("warnings") or []) - len(kept)
            r.report["warnings"] = kept
        _warn_empty(r, name=True)
    for w in comparison.warnings():
        _info(f"warning: {w}")
    if folded:
        _info(f"note: {folded} of {len(comparison.results)} runs folded trace LBAs into their usage level's filled range")
    if out:
        _info(f"saved {_saved(out, Comparison.output_names())}, and one folder per run, in {out}")
    return 0


def _pct(v: Any) -> str:
    return "-" if v is None or v != v else f"{100 * v:.1f}%"


def _sparkline(values: Sequence[int]) -> str:
    """Counts as a row of block characters, scaled to the largest."""
    bars = "·▁▂▃▄▅▆▇█"
    top = max(values, default=0)
    if top <= 0:
        return bars[0] * len(values)
    return "".join(bars[0] if v <= 0 else bars[max(1, round(8 * v / top))] for v in values)


def _print_analysis(analysis: Any) -> None:
    import pandas as pd
    from rich import box
    from rich.table import Table

    s = analysis.summary
    con = _console()
    con.print(
        f"[bold]Track writes[/bold] of {s['trace']} on drive [bold]{s['drive']}[/bold] "
        f"({s['layout']} layout, {s['tracks']:,} physical tracks)"
    )
    con.print(
        f"{s['requests']:,} requests, {s['write_requests']:,} writes: {s['track_writes']:,} track writes "
        f"({s['sectors_written']:,} sectors) on {s['tracks_written']:,} distinct tracks"
    )

    h = Table(title="Hottest tracks (paper Figures 2, 10)", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
    h.add_column("figure", no_wrap=True)
    h.add_column("value", justify="right", no_wrap=True)
    if s["hottest_track"] is not None:
        h.add_row("hottest track", f"{s['hottest_track']:,} ({s['hottest_track_writes']:,} writes)")
    for k, v in s["share_hottest"].items():
        if k != "1":
            h.add_row(f"share of track writes on the hottest {int(k):,}", _pct(v))
    h.add_row(f"share on the hottest {s['hottest_k']:,} (the CDF)", _pct(s["share_hottest_k"]))
    h.add_row("tracks taking 50% of track writes", _num(s["tracks_for_50pct"]))
    h.add_row("tracks taking 80% of track writes", _num(s["tracks_for_80pct"]))
    con.print(h)

    nb = analysis.neighbours()
    which = "bottom tracks" if s["bottom_only"] else "tracks"
    t = Table(
        title=f"{len(nb)} hottest {which} T and their neighbours (paper Figures 4, 11)",
        box=box.SIMPLE_HEAD,
        title_justify="left",
        pad_edge=False,
        collapse_padding=True,
    )
    for c in ("rank", "track T", "writes", "T-1 writes", "T+1 writes", "colder by", "flip-friendly"):
        t.add_column(c, justify="right", no_wrap=True)
    def cell(v: Any) -> str:
        return "-" if pd.isna(v) else f"{int(v):,}"

    for row in nb.itertuples(index=False):
        t.add_row(
            str(row.rank),
            f"{row.physical_track:,}",
            f"{row.writes:,}",
            cell(row.left_writes),
            cell(row.right_writes),
            cell(row.colder_by),
            "yes" if row.friendly else "no",
        )
    con.print(t)
    con.print(
        f"flip-friendly: {s['flip_friendly']} of {s['neighbours_n']} hottest {which} have a neighbour "
        f"at least {s['colder']} writes colder (paper section 2.2)"
    )

    fr = analysis.frequency()
    sizes = fr.drop_duplicates("interval")["interval_writes"].tolist()
    short = f"; the last of {len(sizes)} intervals holds {sizes[-1]:,}" if sizes and sizes[-1] < s["interval"] else ""
    f = Table(
        title=f"Write frequency per {s['interval']:,} writes (paper Figure 5{short})",
        box=box.SIMPLE_HEAD,
        title_justify="left",
        pad_edge=False,
        collapse_padding=True,
    )
    for c, j in (("track", "right"), ("writes", "right"), ("busiest interval", "right"), ("over time", "left")):
        f.add_column(c, justify=j, no_wrap=True)  # type: ignore[arg-type]
    for track in analysis.default_tracks():
        counts = fr.loc[fr["physical_track"] == track, "writes"].tolist()
        peak = max(counts, default=0)
        at = counts.index(peak) if counts and peak else None
        f.add_row(
            f"{track:,}",
            f"{sum(counts):,}",
            "-" if at is None else f"{peak:,} (#{at + 1} of {len(counts)})",
            _sparkline(counts) if len(counts) <= 100 else "(more than 100 intervals: see --out or --json)",
        )
    con.print(f)


def _cmd_analyze(ns: argparse.Namespace) -> int:
    from .analysis import Analysis
    from .api import analyze
    from .plots import ANALYSIS_PLOTS

    kwargs: dict[str, Any] = {
        k: getattr(ns, k)
        for k in ("trace", "format", "event", "csv", "skip_unknown", "disk", "limit", "drive", "tracks", "pair_completions", *SELECTION_KEYS)
        if getattr(ns, k) is not None
    }
    if ns.start is not None:
        kwargs["start"] = ns.start
    if ns.fold is not None:
        kwargs["fold"] = ns.fold
    fmt = _plot_format(ns, ns.out)
    earlier = _check_out(ns.out, Analysis.output_names(), ns.force) if ns.out else []
    analysis = analyze(hottest=ns.hottest, interval=ns.interval, **kwargs)
    if ns.out:
        _save(analysis, ns.out, earlier, plot_format=fmt)
    if ns.json:
        sys.stdout.write(analysis.to_json() + "\n")
    else:
        _print_analysis(analysis)
    if analysis.requests == 0:
        _info("warning: the trace selection holds no requests (check --disk, --start and --limit)")
    elif analysis.track_writes == 0:
        _info("warning: the trace selection holds no writes")
    if ns.out:
        names = [*(f"{p}.{fmt}" for p in ANALYSIS_PLOTS), "track_counts.parquet"]
        _info(f"saved {_saved(ns.out, names)} in {ns.out}")
    return 0


def _kind_text(kind: Any) -> str:
    if isinstance(kind, dict) and "choice" in kind:
        return " | ".join(kind["choice"])
    return str(kind)


def _control_path(ns: argparse.Namespace, port: int | None = None) -> str:
    """The Unix socket a running server answers --report on: beside its
    NBD socket, or (TCP) in the temporary folder, named by the port."""
    if ns.socket:
        return f"{ns.socket}.ctl"
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"stlsim-serve-{port if port is not None else ns.port}.ctl")


def _serve_report(ns: argparse.Namespace) -> int:
    import socket

    path = _control_path(ns)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(30)
        s.connect(path)
        chunks = []
        while chunk := s.recv(1 << 16):
            chunks.append(chunk)
    except OSError as e:
        raise ConfigError(f"no stlsim serve answers on {path} ({e.strerror or e}): is the server running with this --socket/--port?") from None
    finally:
        s.close()
    sys.stdout.write(b"".join(chunks).decode() + "\n")
    return 0


def _cmd_serve(ns: argparse.Namespace) -> int:
    import logging
    import signal
    import socket
    import threading

    from . import nbd
    from .config import parse_params
    from .result import Result
    from .serve import SimBackend

    if ns.report:
        return _serve_report(ns)
    earlier = _check_out(ns.out, Result.output_names(), ns.force) if ns.out else []
    logging.basicConfig(level=logging.INFO, format="stlsim serve: %(message)s")
    try:
        backend = SimBackend(
            drive=ns.drive,
            layer=ns.layer,
            params=parse_params(ns.param),
            mode=ns.mode,
            verify=not ns.no_verify,
            time=ns.time,
            time_scale=ns.time_scale,
            back_to_back=ns.back_to_back,
            store=ns.store,
            record=ns.record,
            crash_after=ns.crash_after,
        )
    except nbd.BackendError as e:
        raise ConfigError(f"configuration error: {e}") from None
    server = nbd.serve(backend, socket_path=ns.socket, port=ns.port)
    port = None if ns.socket else server.address[1]
    where = f"nbd+unix:///?socket={ns.socket}" if ns.socket else f"nbd://127.0.0.1:{port}"
    ctl_path = _control_path(ns, port)
    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        # The NBD socket's rule: a stale socket is replaced, anything else refused.
        nbd._remove_stale_socket(ctl_path)
        ctl.bind(ctl_path)
    except OSError:
        server.shutdown()
        ctl.close()
        raise
    ctl.listen(4)

    def answer_reports() -> None:
        while True:
            try:
                c, _ = ctl.accept()
            except OSError:
                return
            with c:
                with server.lock:
                    text = json.dumps(backend.snapshot(), indent=2)
                try:
                    c.sendall(text.encode())
                except OSError:
                    pass

    threading.Thread(target=answer_reports, name="stlsim-serve-report", daemon=True).start()
    _info(f"serving {ns.layer} on {ns.drive} ({backend.size_bytes:,} bytes) at {where}; Ctrl-C ends the run")
    # SIGTERM ends the run as Ctrl-C does (a service manager's stop).
    signal.signal(signal.SIGTERM, lambda *_: signal.raise_signal(signal.SIGINT))
    import time

    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        ctl.close()
        try:
            os.unlink(ctl_path)
        except FileNotFoundError:
            pass
    backend.finish()
    result = backend.result
    assert result is not None
    if ns.record:
        _info(f"recorded {backend.recorded:,} requests in {ns.record} (replay: stlsim run --trace {ns.record} --drive {ns.drive} --layer {ns.layer} --mode {ns.mode})")
    if ns.out:
        _save(result, ns.out, earlier, plot_format="png")
    if ns.json:
        sys.stdout.write(json.dumps(result.report, indent=2) + "\n")
    else:
        _print_summary(result)
    if ns.out:
        _info(f"saved {_saved(ns.out, Result.output_names())} in {ns.out}")
    return 0


def _cmd_layers(ns: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table

    from .config import layers

    listed = layers()
    if ns.json:
        sys.stdout.write(json.dumps(listed, indent=2) + "\n")
        return 0
    con = _console()
    t = Table(title="Translation layers", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
    t.add_column("layer", no_wrap=True, style="bold")
    t.add_column("runs in")
    t.add_column("layout")
    t.add_column("summary")
    t.add_column("paper")
    for e in listed:
        t.add_row(e["name"], e.get("runs_in", "drive"), e["layout"], e["summary"], e["paper"])
    con.print(t)
    for e in listed:
        params = e.get("params") or []
        if not params:
            con.print(f"[bold]{e['name']}[/bold]: no parameters")
            continue
        p = Table(title=f"Parameters of {e['name']} (--param NAME=VALUE)", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
        p.add_column("name", no_wrap=True)
        p.add_column("kind")
        p.add_column("unit", no_wrap=True)
        p.add_column("default", justify="right", no_wrap=True)
        p.add_column("meaning")
        for q in params:
            p.add_row(q["name"], _kind_text(q["kind"]), q.get("unit", ""), str(q.get("default", "")), q.get("doc", ""))
        con.print(p)
    return 0


def _cmd_drives(ns: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table

    from .config import check_drive, drives, load_drive

    rows = []
    for preset in drives():
        d = load_drive(preset["name"])
        rows.append({"name": preset["name"], "description": preset["description"], "drive": d, "derived": check_drive(d)})
    if ns.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    con = _console()
    t = Table(title="Drive presets (--drive NAME)", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
    for c, j in (
        ("preset", "left"),
        ("layout", "left"),
        ("GB", "right"),
        ("tracks", "right"),
        ("sector", "right"),
        ("rpm", "right"),
        ("rot ms", "right"),
        ("seek ms", "right"),
        ("cache MiB", "right"),
        ("PC GB", "right"),
        ("SG", "right"),
    ):
        t.add_column(c, justify=j, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        d, x = row["drive"], row["derived"]
        t.add_row(
            row["name"],
            str(d.get("layout", {}).get("kind", "cmr")),
            f"{x['capacity_bytes'] / 1e9:,.0f}" if x["capacity_bytes"] >= 10e9 else f"{x['capacity_bytes'] / 1e9:.3g}",
            _num(x["tracks"]),
            _num(x["sector_bytes"]),
            _counter(float(d.get("rpm", 0))),
            f"{x['rotation_ms']:.2f}",
            f"{x['single_track_seek_ms']:.1f}-{x['full_stroke_seek_ms']:.1f}",
            _counter(float(d.get("write_cache_mib", 0))),
            f"{x['persistent_cache_bytes'] / 1e9:.3g}" if x.get("persistent_cache_bytes") else "-",
            f"{x['space_gain']:.3g}",
        )
    con.print(t)
    con.print("cache MiB: DRAM write cache; PC GB: shingled persistent (media) cache of drive-managed SMR drives")
    con.print("SG: space gain over conventional recording with the same head (SMR: W*N/(N+W-1), paper 002 eq. 1)")
    for row in rows:
        con.print(f"[bold]{row['name']}[/bold]: {row['description']}")
    return 0


def _cmd_validate(ns: argparse.Namespace) -> int:
    from .validation import Validation, validate

    earlier = _check_out(ns.out, Validation.output_names(), ns.force) if ns.out else []
    v = validate(ns.drive, ns.trace, fold=ns.fold, plot_format=ns.plot_format)
    if ns.out:
        _save(v, ns.out, earlier, plot_format=ns.plot_format or "png")
    for w in v.report.get("warnings") or []:
        _info(f"warning: {w}")
    if ns.json:
        print(json.dumps(v.summary, indent=2))
        if ns.out:
            _info(f"saved {_saved(ns.out, Validation.output_names())} in {ns.out}")
        return 0
    print(f"{Path(v.trace).name} on {v.drive}: {v.requests:,} requests, replayed closed loop as DiskSim's validation")
    print(f"  demerit (RMS distance of the CDFs)  {v.demerit_ms:9.3f} ms")
    theirs = v.disksim
    if theirs is not None:
        other = "" if theirs["same_trace"] else ", not this trace"
        print(f"  DiskSim's demerit                   {theirs['demerit_ms']:9.3f} ms  ({theirs['source']}, on {theirs['trace']}{other})")
    print(f"  mean response, simulated            {v.mean_simulated_ms:9.3f} ms")
    print(f"  mean response, measured             {v.mean_measured_ms:9.3f} ms")
    print(f"  mean error (simulated - measured)   {v.mean_error_ms:+9.3f} ms")
    for what, count, err in (("reads", v.summary["reads"], v.mean_read_error_ms), ("writes", v.summary["writes"], v.mean_write_error_ms)):
        shown = "        -" if math.isnan(err) else f"{err:+9.3f}"
        print(f"    {f'of the {count:,} {what}':<34}{shown} ms")
    if ns.out:
        _info(f"saved {_saved(ns.out, Validation.output_names())} in {ns.out}")
    return 0


def _cmd_import_disksim(ns: argparse.Namespace) -> int:
    from .disksim import main_import

    return main_import(ns.file, ns.output, ns.force, ns.name)


def _cmd_init_config(ns: argparse.Namespace) -> int:
    from .config import init_config_text

    text = init_config_text()
    if ns.file is None:
        sys.stdout.write(text)
        return 0
    path = Path(ns.file)
    if path.is_dir():
        raise OSError(f"cannot write configuration '{path}': it is a folder")
    if path.exists() and not ns.force:
        raise ConfigError(f"configuration error: '{path}' exists; use --force to overwrite it")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise OSError(f"cannot write configuration '{path}': {_why(e, path)}") from None
    _info(f"wrote {path}; run it with: stlsim run --config {path}")
    return 0


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.1f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} days"


def _cmd_synth(ns: argparse.Namespace) -> int:
    from .synth import SYNTH_FIELDS, SynthTrace

    fields = {k: getattr(ns, k) for k in SYNTH_FIELDS if getattr(ns, k, None) is not None}
    synth = SynthTrace(ns.kind, fields, ns.usage)
    drive = ns.drive
    summary = synth.summary(drive)
    path = Path(ns.output).expanduser()
    if path.exists() and not ns.force:
        raise ConfigError(f"configuration error: '{path}' exists; use --force to overwrite it")
    n = synth.write(path, drive)
    if ns.json:
        sys.stdout.write(json.dumps({"trace": str(synth), "file": str(path), **summary}, indent=2) + "\n")
    size = summary["bytes"]
    _info(
        f"wrote {n:,} requests ({size / 2**30:,.2f} GiB, {_duration(summary['duration_s'])} of trace time) "
        f"to {path}; replay it with: stlsim run --trace {path}"
    )
    return 0


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def _cmd_sweep(ns: argparse.Namespace) -> int:
    from .sweep import SweepInterrupted, sweep

    out = Path(ns.out) if ns.out else Path("results") / f"sweep-{Path(ns.plan).stem}"
    bar: dict[str, Any] = {}

    def on_cell(done: int, total: int) -> None:
        if "started" not in bar:
            bar["started"] = True
            if done:
                # The first call: the cells found done before any ran.
                _info(f"resumed: {done:,} of {total:,} cells already done, running {total - done:,}")
        if not _show_progress():
            return
        if "p" not in bar:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            bar["p"] = Progress("cells", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=_console(stderr=True))
            bar["p"].start()
            bar["t"] = bar["p"].add_task("cells", total=total)
        bar["p"].update(bar["t"], completed=done)

    try:
        rows = sweep(
            ns.plan,
            out,
            jobs=ns.jobs,
            on_cell=on_cell,
            engine=ns.engine,
            ray_address=ns.ray_address,
            retry_failed=ns.retry_failed,
            on_warning=lambda m: _info(f"warning: {m}"),
        )
    except SweepInterrupted as e:
        if "p" in bar:
            bar.pop("p").stop()
        _info(f"interrupted: {e.saved:,} of {e.total:,} cells saved in {e.out}; run the same command to resume")
        if _as_command:
            # Leave at once: the process pool's exit handlers join its
            # manager and queue threads, which on a loaded machine took
            # seconds after the workers were killed. Nothing is lost: every
            # saved row was renamed into place whole, and the workers are gone.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    finally:
        if "p" in bar:
            bar["p"].stop()
    if ns.json:
        print(rows.to_json(orient="records"))
        return 0
    failed = _print_sweep_rows(rows)
    _info(f"{len(rows):,} cells in {out}/rows" + (f", {failed:,} failed (listed above)" if failed else ", none failed"))
    return 0


def _print_sweep_rows(rows: Any) -> int:
    """The sweep's table (one row per cell, human titles) and, below it, the
    failed cells with their errors; returns how many failed."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from .sweep import REPLAY_KEYS, readable

    cols = [c for c in ("trace", "drive", "layer") if c in rows.columns]
    cols += [c for c in rows.columns if c.startswith("param.")]
    # Swept replay options (a usage level, a queue depth ...) name their rows too.
    cols += [c for c in rows.columns if c in REPLAY_KEYS and rows[c].astype(str).nunique() > 1]
    key_cols = list(cols)
    cols += [c for c in ("mean_ms", "p99_ms", "waf", "wall_s") if c in rows.columns]
    view = readable(rows[cols])
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for i, title in enumerate(view.columns):
        t.add_column(title, justify="left" if cols[i] in key_cols else "right", no_wrap=True)
    for r in view.itertuples(index=False):
        t.add_row(*(Text(v) for v in r))  # values as text, never as rich markup
    con = _console()
    con.print(t)
    bad = rows[rows["error"].notna()] if "error" in rows.columns else rows.iloc[0:0]
    if len(bad):
        con.print(f"{len(bad):,} failed cell{'s' if len(bad) > 1 else ''}:")
        names = readable(rows.loc[bad.index, key_cols])
        for (_, r), (_, name) in zip(bad.iterrows(), names.iterrows()):
            con.print("  " + ", ".join(f"{k}={v}" for k, v in name.items() if v != "-") + f": {r['error']}", markup=False)
    return len(bad)


def _trace_kwargs(ns: argparse.Namespace) -> dict[str, Any]:
    keys = ("format", "disk", "start", "limit", "csv", "event", "skip_unknown", "pair_completions", *SELECTION_KEYS)
    return {k: getattr(ns, k) for k in keys if getattr(ns, k, None) is not None}


def _cmd_convert(ns: argparse.Namespace) -> int:
    from .api import convert

    done = convert(ns.trace, ns.out, force=ns.force, **_trace_kwargs(ns))
    if ns.json:
        sys.stdout.write(json.dumps(done, indent=2) + "\n")
    else:
        _info(f"wrote {ns.out}: {done['records']:,} requests from {ns.trace} ({done['format']}), {done['bytes']:,} bytes")
    return 0


def _size_text(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)


def _cmd_trace_info(ns: argparse.Namespace) -> int:
    from .api import trace_info

    from .config import DEFAULT_DRIVE

    info = trace_info(ns.trace, ns.drive or DEFAULT_DRIVE, **_trace_kwargs(ns))
    if ns.json:
        sys.stdout.write(json.dumps(info, indent=2) + "\n")
        return 0
    n = info["requests"]
    pct = (lambda k: f"{100 * info[k] / n:.1f} %") if n else (lambda k: "-")
    lines = [
        ("trace", info["path"]),
        ("format", info["format"]),
        ("requests", f"{n:,}"),
        ("reads", f"{info['reads']:,} ({pct('reads')}), {_size_text(info['read_bytes'])}"),
        ("writes", f"{info['writes']:,} ({pct('writes')}), {_size_text(info['write_bytes'])}"),
        ("zero-length", f"{info['empty']:,}"),
        ("duration", f"{info['duration_s']:,.3f} s"),
    ]
    if info["first_byte"] is not None:
        span = info["end_byte"] - info["first_byte"]
        lines.append(("address span", f"bytes {info['first_byte']:,} to {info['end_byte']:,} ({_size_text(span)})"))
    if info["write_blocks"]:
        upd = info["updated_blocks"] / info["write_blocks"]
        mean_len = info["write_bytes"] / info["writes"] / 512
        lines.append(
            (
                "write statistics (4 KiB blocks)",
                f"{info['write_blocks']:,} written, {100 * upd:.1f} % updates; footprint "
                f"{info['write_footprint_blocks']:,} blocks ({_size_text(4096 * info['write_footprint_blocks'])}) in "
                f"{info['write_zones']:,} 256 MiB zones; mean write {mean_len:.1f} sectors of 512 bytes",
            )
        )
    if info.get("write_tracks") is not None:
        beyond = f"; {info['writes_beyond']:,} writes beyond its capacity" if info["writes_beyond"] else ""
        lines.append((f"write footprint on {info['drive']}", f"{info['write_tracks']:,} tracks{beyond}"))
    if info["devices"]:
        devs = ", ".join(f"{d}: {c:,}" for d, c in list(info["devices"].items())[:12])
        more = " ..." if len(info["devices"]) > 12 or info["devices_truncated"] else ""
        lines.append((f"devices ({len(info['devices'])}{'+' if info['devices_truncated'] else ''})", devs + more))
    m = info.get("measured")
    if m:
        missing = f"; {info['measured_missing']:,} without" if info["measured_missing"] else ""
        lines.append(("measured response", f"{m['count']:,} requests{missing}: mean {m['mean_ms']:.3f} ms, p50 {m['p50_ms']:.3f} ms, p99 {m['p99_ms']:.3f} ms, max {m['max_ms']:.3f} ms"))
    elif info.get("unpaired_completions") or (ns.pair_completions and n):
        lines.append(("measured response", "none (no request was paired with a completion)"))
    if info.get("unpaired_completions"):
        lines.append(("unpaired completions", f"{info['unpaired_completions']:,} (their request is not in the trace, or was merged)"))
    sizes = ", ".join(f"<= {_size_text(b)}: {c:,}" for b, c in info["sizes"][:10])
    lines.append(("request sizes", sizes + (" ..." if len(info["sizes"]) > 10 else "")))
    if info.get("header"):
        src = info["header"].get("source", {})
        lines.append(("converted from", f"{src.get('path')} (sha256 {str(src.get('sha256'))[:16]}..., {info['header'].get('format')})"))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k:<{width}}  {v}")
    return 0


def _cmd_report(ns: argparse.Namespace) -> int:
    from .html_report import write_report

    path = write_report(ns.dir)
    _info(f"wrote {path}")
    return 0


def _why(e: OSError, path: Path) -> str:
    """Why writing the file ``path`` failed, in words (no errno)."""
    parent = path.parent
    if not parent.exists():
        return f"its folder '{parent}' does not exist"
    if not parent.is_dir():
        return f"'{parent}' is not a folder"
    return (e.strerror or str(e)).lower()


def _one_line(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror and e.filename is not None:
        # "[Errno 13] Permission denied: 'x'" -> "x: permission denied"
        where = f"{e.filename}" + (f" -> {e.filename2}" if e.filename2 is not None else "")
        return f"{where}: {e.strerror.lower()}"
    text = str(e) or type(e).__name__
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _command_parser(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)command parser that parsed ``ns``: ``stlsim run``, ``stlsim synth uniform`` ..."""
    p = parser
    while True:
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(ns, sub.dest, None) if sub is not None else None
        if sub is None or name not in sub.choices:
            return p
        p = sub.choices[name]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line; arguments no option takes are an error that
    points at the subcommand's help (argparse would point at ``stlsim --help``)."""
    parser = build_parser()
    ns, extra = parser.parse_known_args(argv)
    if extra:
        _command_parser(parser, ns).error(f"unrecognized arguments: {' '.join(extra)}")
    return ns


#: Commands that write nothing but through _save: interrupted before it, they saved nothing.
_SAVE_ONLY_VIA_SAVE = frozenset({"run", "compare", "analyze", "validate", "layers", "drives", "trace-info"})


def _interrupted(ns: argparse.Namespace | None) -> str:
    """What Ctrl-C left behind, for its one line."""
    if _saving:
        return f"interrupted while saving in '{_saving[-1]}'; the files there are incomplete"
    if ns is None or getattr(ns, "command", None) in _SAVE_ONLY_VIA_SAVE:
        return "interrupted; nothing saved"
    return "interrupted"


#: Whether ``main`` runs as the process's own command (``stlsim``,
#: ``python -m stlsim``: called without ``argv``), not from Python code that
#: wants its exit status back (tests call ``cli.main([...])`` in-process).
_as_command = False


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``stlsim`` command; returns the exit status."""
    global _as_command
    _as_command = argv is None
    ns: argparse.Namespace | None = None
    _saving.clear()
    try:
        ns = _parse(argv)
        status = int(ns.func(ns))
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return status
    except KeyboardInterrupt:
        sys.stderr.write(f"stlsim: {_interrupted(ns)}\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `stlsim run | head -1`): stop quietly. Point
        # stdout at /dev/null so the interpreter's final flush cannot fail again.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_BROKEN_PIPE
    except (StlsimError, OSError) as e:
        sys.stderr.write(f"stlsim: error: {_one_line(e)}\n")
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
