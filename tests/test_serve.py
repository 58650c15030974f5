"""Issue 37, second slice: the NBD server in front of a live simulation
run (stlsim.serve.SimBackend). A real client (qemu-io) writes and reads;
the same requests go through the engine, layer, medium and oracle, and the
run's report counts them."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from stlsim import nbd
from stlsim.serve import SimBackend



def _qemu_io(path: str, *commands: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("qemu-io")
    assert tool, "qemu-io not found: install qemu-utils (CI has it)"
    args = [tool, "-f", "raw", f"nbd+unix:///?socket={path}"]
    for c in commands:
        args += ["-c", c]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("drive", "layer"), [("cmr", "cmr"), ("imr-paper", "imr-rmw")])
def test_a_real_client_is_served_through_the_simulated_drive(sock_path: str, drive: str, layer: str) -> None:
    backend = SimBackend(drive=drive, layer=layer)
    server = nbd.serve(backend, socket_path=sock_path)
    try:
        p = _qemu_io(
            sock_path,
            "write -P 0xab 0 1M",
            "write -P 0xcd 8M 256k",
            "read -P 0xab 0 1M",
            "read -P 0xcd 8M 256k",
            "write -P 0x11 4k 4k",
            "read -P 0x11 4k 4k",
        )
        assert p.returncode == 0 and "Pattern verification failed" not in p.stdout, p.stdout + p.stderr
        stats = dict(server.stats)
    finally:
        server.shutdown()
    r = backend.finish()
    # Every read and write the server served went through the engine.
    assert r["host"]["writes"] == stats["writes"] >= 3, (r["host"], stats)
    assert r["host"]["reads"] == stats["reads"] >= 3, (r["host"], stats)
    assert r["layer"] == layer and r["drive"]["name"] == drive
    assert r["verification"]["mismatches"] == 0
    assert r["verification"]["scan_blocks_checked"] > 0
    assert r["latency"]["all"]["count"] == stats["reads"] + stats["writes"]
    if layer == "imr-rmw":
        # On the full imr-paper drive a write to a bottom track rewrites its top neighbours.
        assert r["waf"] > 1.0, r["waf"]


def test_the_export_is_the_layers_host_capacity(sock_path: str) -> None:
    backend = SimBackend(drive="imr-paper", layer="imr-dtm")
    tool = shutil.which("qemu-img")
    assert tool, "qemu-img not found: install qemu-utils (CI has it)"
    with nbd.serve(backend, socket_path=sock_path) as server:
        p = subprocess.run([tool, "info", "--output=json", f"nbd+unix:///?socket={sock_path}"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        stats = dict(server.stats)
    assert p.returncode == 0, p.stderr
    r = backend.finish()
    assert json.loads(p.stdout)["virtual-size"] == backend.size_bytes
    assert 0 < backend.size_bytes == r["drive"]["capacity_bytes"]
    # qemu-img probes the start of the export: those reads are the run's requests.
    assert r["host"]["requests"] == stats["reads"] + stats["writes"]


def test_the_serve_command_serves_until_ctrl_c_and_prints_the_runs_summary(sock_path: str) -> None:
    import json as _json
    import os
    import signal
    import sys
    import time

    # SIGINT reset: a shell that started the suite in the background ignores it.
    p = subprocess.Popen(
        [sys.executable, "-m", "stlsim", "serve", "--drive", "cmr", "--layer", "cmr", "--socket", sock_path, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock_path) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert os.path.exists(sock_path), p.stderr.read() if p.poll() is not None else "no socket"
        q = _qemu_io(sock_path, "write -P 0x5a 0 64k", "read -P 0x5a 0 64k")
        assert q.returncode == 0 and "Pattern verification failed" not in q.stdout, q.stdout + q.stderr
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert "serving cmr on cmr" in err
    r = _json.loads(out)
    assert r["host"]["writes"] >= 1 and r["host"]["reads"] >= 1
    assert r["verification"]["mismatches"] == 0
