"""Issue 37: `stlsim serve` driven by real NBD clients that the project's own
test set-up installs (scripts/test-deps.sh: Debian's fio, built with
libnbd, and libnbd-bin's nbdcopy; qemu-utils' qemu-img): fio's random and
sequential jobs with crc32c verification at queue depths 1 and 32, and a
bulk copy in and out that must read back byte-identical. Each checks the
data and that the run's report counts exactly the requests the clients sent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from stlsim import nbd
from stlsim.serve import SimBackend


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} not found: scripts/test-deps.sh installs it (Debian's fio / libnbd-bin / qemu-utils)"
    return path


def _fio(sock: str, *args: str) -> dict:
    p = subprocess.run(
        [_tool("fio"), "--name=served", "--ioengine=nbd", f"--uri=nbd+unix:///?socket={sock}",
         "--output-format=json", *args],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    # fio's nbd engine says it connected before the JSON.
    return json.loads(p.stdout[p.stdout.index("{") :])["jobs"][0]


@pytest.mark.parametrize(
    ("drive", "layer", "rw", "depth"),
    [("cmr", "cmr", "randwrite", 1), ("imr-paper", "imr-rmw", "randwrite", 32), ("imr-paper", "imr-cache", "write", 32)],
)
def test_fio_writes_and_verifies_through_the_simulated_drive(sock_path: str, drive: str, layer: str, rw: str, depth: int) -> None:
    backend = SimBackend(drive=drive, layer=layer)
    with nbd.serve(backend, socket_path=sock_path) as server:
        job = _fio(sock_path, f"--rw={rw}", "--bs=4k", "--size=4M", f"--iodepth={depth}",
                   "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--verify_state_save=0")  # fmt: skip
        stats = dict(server.stats)
    r = backend.finish()
    assert job["error"] == 0
    writes, reads = job["write"]["total_ios"], job["read"]["total_ios"]
    assert writes == 1024 and reads == 1024  # every block written, then read back and verified
    assert r["host"]["writes"] == stats["writes"] == writes, (r["host"], stats)
    assert r["host"]["reads"] == stats["reads"] == reads
    assert r["verification"]["mismatches"] == 0 and r["verification"]["read_blocks_checked"] > 0


def test_nbdcopy_copies_in_and_qemu_img_reads_back_byte_identical(sock_path: str, tmp_path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(24 << 20))
    backend = SimBackend(drive="imr-paper", layer="imr-dtm")
    with nbd.serve(backend, socket_path=sock_path) as server:
        uri = f"nbd+unix:///?socket={sock_path}"
        p = subprocess.run([_tool("nbdcopy"), "--flush", str(src), uri], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        out = tmp_path / "back.bin"
        p = subprocess.run([_tool("qemu-img"), "dd", "-f", "raw", "-O", "raw", f"if={uri}", f"of={out}", "bs=1M", "count=24"],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
        assert p.returncode == 0, p.stderr
        stats = dict(server.stats)
    assert out.read_bytes() == src.read_bytes()
    r = backend.finish()
    assert r["host"]["write_sectors"] * r["drive"]["sector_bytes"] == 24 << 20
    assert r["host"]["writes"] == stats["writes"] and r["host"]["reads"] == stats["reads"]
    assert r["serve"]["flushes"] == stats["flushes"] >= 1
    assert r["verification"]["mismatches"] == 0
