"""Issue 37, second slice: the NBD server in front of a live simulation
run (stlsim.serve.SimBackend). A real client (qemu-io) writes and reads;
the same requests go through the engine, layer, medium and oracle, and the
run's report counts them."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

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


@contextlib.contextmanager
def _serve_process(sock_path: str, *args: str, interrupt: bool = True):
    """``stlsim serve --socket sock_path ARGS`` in a process, yielded once it
    answers (its report socket exists); on leaving, Ctrl-C (``interrupt``) and
    its output read into ``p.out`` and ``p.err``, or SIGKILL (a server that dies)."""
    # SIGINT reset: a shell that started the suite in the background ignores it.
    p = subprocess.Popen(
        [sys.executable, "-m", "stlsim", "serve", "--socket", sock_path, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock_path + ".ctl") and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert os.path.exists(sock_path + ".ctl"), p.stderr.read() if p.poll() is not None else "no socket"
        yield p
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGINT if interrupt else signal.SIGKILL)
        try:
            p.out, p.err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            raise


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
    with _serve_process(sock_path, "--drive", "cmr", "--layer", "cmr", "--json") as p:
        q = _qemu_io(sock_path, "write -P 0x5a 0 64k", "read -P 0x5a 0 64k")
        assert q.returncode == 0 and "Pattern verification failed" not in q.stdout, q.stdout + q.stderr
    assert p.returncode == 0, p.err
    assert "serving cmr on cmr" in p.err
    r = json.loads(p.out)
    assert r["host"]["writes"] >= 1 and r["host"]["reads"] >= 1
    assert r["verification"]["mismatches"] == 0


# --- Issue 37, third slice: flush, record, store, time, power loss, report ----


def _client(path: str):
    from test_nbd import Client

    return Client(path).connect_go()


def test_flush_destages_the_drives_write_cache_and_fua_flushes(sock_path: str) -> None:
    # cmr has a 64 MiB write cache: writes are absorbed, a FLUSH sends them to the media.
    backend = SimBackend(drive="cmr", layer="cmr")
    with nbd.serve(backend, socket_path=sock_path):
        c = _client(sock_path)
        for i in range(16):
            assert c.write(i * (1 << 20), b"\x33" * 65536) == 0
        assert c.request(nbd.NBD_CMD_FLUSH)[0] == 0
        assert c.request(nbd.NBD_CMD_FLUSH)[0] == 0  # nothing left: free
        assert c.write(1 << 30, b"\x44" * 4096, fua=True) == 0
        assert c.read(1 << 30, 4096) == b"\x44" * 4096
        c.disconnect()
    r = backend.finish()
    s = r["serve"]
    assert s["flushes"] == 3 and s["fua_writes"] == 1
    # The first flush wrote 16 cached writes (each a seek and a rotation at least): tens of ms.
    assert s["flush_ms"] > 16 * 2.0, s
    assert r["host"]["writes"] == 17 and r["verification"]["mismatches"] == 0


def test_a_recorded_session_replays_to_the_same_report(sock_path: str, tmp_path) -> None:
    import stlsim

    rec = tmp_path / "served.stlt"
    backend = SimBackend(drive="imr-paper", layer="imr-rmw", record=rec)
    with nbd.serve(backend, socket_path=sock_path):
        c = _client(sock_path)
        for i in range(40):
            assert c.write((i * 7919 % 512) * 65536, bytes([i]) * 16384) == 0
            c.read((i * 104729 % 512) * 65536, 8192)
        c.disconnect()
    served = backend.finish()
    assert backend.recorded == 80
    replay = stlsim.run(trace=rec, drive="imr-paper", layer="imr-rmw", mode="queue", verify=True).report
    for key in ("host", "latency", "waf", "layer_counters", "device", "drive_cache"):
        assert served.get(key) == replay.get(key), key
    # stlsim.run adds the oracle's memory figures beside the checks.
    assert served["verification"] == {k: replay["verification"][k] for k in served["verification"]}
    assert served["waf"] > 1.0


def test_the_store_keeps_the_bytes_across_server_runs(sock_path: str, tmp_path) -> None:
    store = tmp_path / "disk.img"
    first = SimBackend(drive="cmr", layer="cmr", store=store)
    with nbd.serve(first, socket_path=sock_path):
        c = _client(sock_path)
        assert c.write(5 << 20, b"kept" * 1024) == 0
        c.disconnect()
    assert store.stat().st_size == first.size_bytes
    assert store.stat().st_blocks * 512 < 1 << 20  # sparse: only what was written
    second = SimBackend(drive="cmr", layer="cmr", store=store)
    with nbd.serve(second, socket_path=sock_path):
        c = _client(sock_path)
        assert c.read(5 << 20, 4096) == b"kept" * 1024
        c.disconnect()
    with pytest.raises(nbd.BackendError, match="export"):
        SimBackend(drive="imr-paper", layer="imr-dtm", store=store)


def test_real_time_holds_each_reply_until_its_simulated_completion() -> None:
    backend = SimBackend(drive="cmr", layer="cmr", time="real", mode="closed")
    took = []
    for i in range(12):
        t = time.monotonic()
        backend.read((i * 7717 % 4096) * (1 << 20), 4096)  # scattered reads: each seeks
        backend.hold()  # what the NBD server calls before it replies
        took.append(time.monotonic() - t)
    r = backend.finish()
    s = r["serve"]
    assert s["held_replies"] == 12
    # Every reply went out no earlier than its simulated latency: the run's mean read latency is
    # at most the wall-clock mean, and at least what it would be if replies went out at once.
    mean_ms = r["latency"]["read"]["mean_ms"]
    assert mean_ms > 1.0
    assert sum(took) / len(took) * 1000 >= mean_ms
    # How late a held reply went out is the mode's tolerance (docs/serve.md): a few ms at worst.
    assert s["late_ms_max"] < 20.0, s


def test_a_power_loss_drops_the_connections_and_the_layer_recovers(sock_path: str) -> None:
    backend = SimBackend(drive="imr-paper", layer="imr-rmw", crash_after=[6])
    with nbd.serve(backend, socket_path=sock_path) as server:
        c = _client(sock_path)
        for i in range(5):
            assert c.write(i * 65536, bytes([i + 1]) * 4096) == 0
        assert c.request(nbd.NBD_CMD_FLUSH)[0] == 0
        with pytest.raises((EOFError, ConnectionError)):
            c.write(9 * 65536, b"\x77" * 4096)  # the 6th request: power lost after it
        assert server.connections == 0 or c.closed_by_server()
        c.sock.close()
        again = _client(sock_path)
        for i in range(5):
            assert again.read(i * 65536, 4096) == bytes([i + 1]) * 4096
        again.disconnect()
    r = backend.finish()
    assert r["serve"]["power_losses"] == 1 and r["crashes"] == 1
    assert r["verification"]["mismatches"] == 0
    assert r["host"]["requests"] == 11


def test_a_host_managed_drive_is_served_through_its_host_side_layer(sock_path: str) -> None:
    # The zone rules hold between the layer and the drive; the client sees a conventional device.
    backend = SimBackend(drive="exos-small", layer="hm-fluid", params={"buffer_mib": 16})
    with nbd.serve(backend, socket_path=sock_path):
        q = _qemu_io(sock_path, "write -P 0x21 3k 5k", "write -P 0x22 1G 300k", "read -P 0x21 3k 5k", "read -P 0x22 1G 300k")
        assert q.returncode == 0 and "Pattern verification failed" not in q.stdout, q.stdout + q.stderr
    r = backend.finish()
    assert r["verification"]["mismatches"] == 0 and r["host"]["writes"] >= 2


def test_serve_report_prints_the_running_servers_report(sock_path: str, tmp_path) -> None:
    rec = tmp_path / "r.stlt"
    report = [sys.executable, "-m", "stlsim", "serve", "--report", "--socket", sock_path]
    with _serve_process(sock_path, "--record", str(rec), "--out", str(tmp_path / "out")) as p:
        q = _qemu_io(sock_path, "write -P 0x5a 0 64k", "write -P 0x5b 1M 64k", "read -P 0x5a 0 64k")
        assert q.returncode == 0, q.stderr
        rep = subprocess.run(report, capture_output=True, text=True, timeout=60)
        assert rep.returncode == 0, rep.stderr
        mid = json.loads(rep.stdout)
        assert mid["host"]["writes"] == 2 and mid["host"]["reads"] >= 1, mid["host"]
    assert p.returncode == 0, p.err
    assert "recorded" in p.err and rec.stat().st_size > 0
    assert (tmp_path / "out" / "report.json").is_file()
    # No server: one line, non-zero exit.
    rep = subprocess.run(report, capture_output=True, text=True, timeout=60)
    assert rep.returncode != 0 and "Traceback" not in rep.stderr and len(rep.stderr.strip().splitlines()) == 1, rep.stderr


def test_a_store_restarted_after_its_server_died_recovers_the_drive(sock_path: str, tmp_path) -> None:
    store = tmp_path / "disk.img"
    args = ("--drive", "imr-paper", "--layer", "imr-rmw", "--store", str(store))
    with _serve_process(sock_path, *args, interrupt=False):  # the server dies: no clean stop
        c = _client(sock_path)
        for i in range(8):
            assert c.write(i * (1 << 20), bytes([0x10 + i]) * 8192) == 0
        assert c.request(nbd.NBD_CMD_FLUSH)[0] == 0
        assert c.write(64 << 20, b"\x99" * 4096) == 0  # acknowledged, not flushed
        c.sock.close()
    lines = (tmp_path / "disk.img.journal").read_text().splitlines()
    assert lines[0].startswith("stlsim-serve-journal 1 ") and lines[-1].startswith("W ") and len(lines) == 1 + 8 + 1 + 1
    os.unlink(sock_path)
    second = SimBackend(drive="imr-paper", layer="imr-rmw", store=store)
    assert second.replayed == 10 and second.recovered
    with nbd.serve(second, socket_path=sock_path):
        c = _client(sock_path)
        for i in range(8):
            assert c.read(i * (1 << 20), 8192) == bytes([0x10 + i]) * 8192
        assert c.write(3 << 20, b"\x42" * 4096) == 0
        c.disconnect()
    r = second.finish()
    # The replayed history, the power loss at the restart (every block checked), then this session.
    assert r["crashes"] == 1 and r["serve"]["recovered_at_start"]
    assert r["host"]["writes"] == 9 + 1 and r["host"]["reads"] == 8
    assert r["verification"]["mismatches"] == 0 and r["verification"]["scan_blocks_checked"] > 0
    assert (tmp_path / "disk.img.journal").read_text().splitlines()[-1].startswith("E ")
    # A cleanly stopped store restarts without a power loss; another layer is refused.
    third = SimBackend(drive="imr-paper", layer="imr-rmw", store=store)
    assert not third.recovered and third.finish()["crashes"] == 1  # the one replayed
    with pytest.raises(nbd.BackendError, match="made by layer 'imr-rmw'"):
        SimBackend(drive="imr-paper", layer="imr-flip", store=store)


def test_real_time_holds_replies_outside_the_servers_lock(sock_path: str) -> None:
    import threading

    # Two connections, each reading far apart on cmr (about 8 ms a read): while one
    # connection's reply is held, the other's request is simulated and held beside it.
    backend = SimBackend(drive="cmr", layer="cmr", time="real", mode="closed")
    with nbd.serve(backend, socket_path=sock_path):
        clients = [_client(sock_path) for _ in range(2)]
        took: list[float] = []

        def reads(c, k: int) -> None:
            t = time.monotonic()
            for i in range(10):
                c.read(((i * 7717 + k * 3001) % 4096) * (1 << 20), 4096)
            took.append(time.monotonic() - t)

        threads = [threading.Thread(target=reads, args=(c, k)) for k, c in enumerate(clients)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        wall = time.monotonic() - t0
        for c in clients:
            c.disconnect()
    r = backend.finish()
    held_ms = r["latency"]["read"]["mean_ms"] * r["host"]["reads"]
    assert r["serve"]["held_replies"] == 20 and held_ms > 100
    # Serialised holds would take the sum of every latency; overlapped, clearly less.
    assert wall * 1000 < 0.8 * held_ms, (wall, held_ms)
