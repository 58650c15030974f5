#!/usr/bin/env python3
"""`stlsim serve` benchmark (issue 37): requests a second through the NBD
server, driven by fio's nbd engine at queue depths 1 and 32, against the
same requests replayed from the trace the server recorded (`--record`).
The ratio is what the protocol, the server and the Python between them
cost over the engine alone.

    python benches/serve_speed.py                          # cmr on cmr, 4 KiB random writes
    python benches/serve_speed.py --layer imr-rmw --drive imr-paper
    python benches/serve_speed.py --size 256M --rw randrw

Needs fio (Debian's, built with libnbd: scripts/test-deps.sh installs it).
For each depth: start `stlsim serve --socket S --record R` (verification on,
the default), run one fio job (`--bs 4k --size SIZE --rw RW`, no verify,
so every request is the job's), stop the server; then replay R with
`stlsim.run` (verification on) and time the replay alone (the engine's
wall time, start-up excluded). Served requests a second are fio's total
I/Os over fio's run time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def serve_and_fio(args: argparse.Namespace, depth: int, work: str) -> tuple[float, int, str]:
    sock = os.path.join(work, f"qd{depth}.sock")
    rec = os.path.join(work, f"qd{depth}.stlt")
    server = subprocess.Popen(
        [sys.executable, "-m", "stlsim", "serve", "--drive", args.drive, "--layer", args.layer,
         "--socket", sock, "--record", rec, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(sock + ".ctl") and time.monotonic() < deadline:
            time.sleep(0.05)
        p = subprocess.run(
            [args.fio, "--name=bench", "--ioengine=nbd", f"--uri=nbd+unix:///?socket={sock}", f"--rw={args.rw}",
             "--bs=4k", f"--size={args.size}", f"--iodepth={depth}", "--randrepeat=1", "--output-format=json"],
            capture_output=True, text=True, timeout=3600,
        )  # fmt: skip
        if p.returncode != 0:
            raise SystemExit(f"fio failed: {p.stderr.strip()[-500:]}")
        job = json.loads(p.stdout[p.stdout.index("{") :])["jobs"][0]
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=600)
    if server.returncode != 0:
        raise SystemExit(f"stlsim serve failed: {err.strip()[-500:]}")
    ios = job["read"]["total_ios"] + job["write"]["total_ios"]
    secs = job["job_runtime"] / 1000.0
    served = json.loads(out)["host"]["requests"]
    if served != ios:
        raise SystemExit(f"the server's report counts {served} requests, fio {ios}")
    return ios / secs, ios, rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drive", default="cmr")
    ap.add_argument("--layer", default="cmr")
    ap.add_argument("--rw", default="randwrite", help="fio's --rw (default randwrite)")
    ap.add_argument("--size", default="64M", help="fio's --size: bytes the job covers (default 64M: 16,384 requests)")
    ap.add_argument("--depths", default="1,32")
    args = ap.parse_args()
    args.fio = shutil.which("fio")
    if not args.fio:
        raise SystemExit("fio not found: sh scripts/test-deps.sh installs it")
    import stlsim

    rows = []
    with tempfile.TemporaryDirectory(prefix="stlsim-serve-bench") as work:
        for depth in (int(d) for d in args.depths.split(",")):
            served_rps, n, rec = serve_and_fio(args, depth, work)
            t = time.perf_counter()
            r = stlsim.run(trace=rec, drive=args.drive, layer=args.layer, mode="queue", verify=True)
            replay_s = r.wall_s or (time.perf_counter() - t)
            replay_rps = n / replay_s
            rows.append((depth, n, served_rps, replay_rps, replay_rps / served_rps))
    print(f"stlsim serve, {args.layer} on {args.drive}, fio {args.rw} 4 KiB x {args.size}, verification on")
    print(f"{'depth':>5} {'requests':>9} {'served req/s':>13} {'replayed req/s':>15} {'replay / served':>16}")
    for depth, n, s, r, ratio in rows:
        print(f"{depth:>5} {n:>9,} {s:>13,.0f} {r:>15,.0f} {ratio:>16.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
