"""Write tests/data/samples/: the first 200 requests of the real MSR trace
tests/data/wdev_3.csv in each format stlsim reads that has no real sample in
tests/data, following each format's public documentation (docs/traces.md).

    python scripts/make-format-samples.py

The requests are real (wdev_3, MSR Cambridge); the files are written here.
Times count from wdev_3's first request; writes stay writes, reads reads;
offsets and sizes keep their bytes (rounded down to 512-byte sectors where a
format counts sectors: wdev_3 is 512-aligned, so nothing changes)."""

from __future__ import annotations

import csv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tests" / "data" / "wdev_3.csv"
OUT = ROOT / "tests" / "data" / "samples"


def requests(n: int = 200) -> list[tuple[int, str, int, int]]:
    """(time_ns from the first, 'R'/'W', offset bytes, size bytes)."""
    rows = list(csv.reader(SRC.open()))[:n]
    t0 = int(rows[0][0])
    return [((int(r[0]) - t0) * 100, "W" if r[3].lower() == "write" else "R", int(r[4]), int(r[5])) for r in rows]


def main() -> None:
    OUT.mkdir(exist_ok=True)
    reqs = requests()
    write = lambda name, lines: (OUT / name).write_text("".join(f"{line}\n" for line in lines))
    write("wdev_3.spc", [f"0,{o // 512},{s},{op.lower()},{t / 1e9:.6f}" for t, op, o, s in reqs])
    write("wdev_3.disksim", [f"{t / 1e6:.6f} 0 {o // 512} {s // 512} {1 if op == 'R' else 0:x}" for t, op, o, s in reqs])
    write(
        "wdev_3.fio3.log",
        ["fio version 3 iolog", "0 /dev/sdb add", "0 /dev/sdb open"]
        + [f"{t // 1000} /dev/sdb {'read' if op == 'R' else 'write'} {o} {s}" for t, op, o, s in reqs]
        + [f"{reqs[-1][0] // 1000} /dev/sdb close"],
    )
    write(
        "wdev_3.systor17.csv",
        ["Timestamp,Response,IOType,LUN,Offset,Size"] + [f"{t / 1e9:.6f},0.000100,{op},0,{o},{s}" for t, op, o, s in reqs],
    )
    write("wdev_3.alibaba.csv", [f"3,{op},{o},{s},{1577808000000000 + t // 1000}" for t, op, o, s in reqs])
    write("wdev_3.tencent.csv", [f"{1538323200 + t // 10**9},{o // 512},{s // 512},{0 if op == 'R' else 1},1283" for t, op, o, s in reqs])
    write(
        "wdev_3.fiu.txt",
        [f"{t} 4242 postgres {o // 512} {s // 512} {op} 8 0 d41d8cd98f00b204e9800998ecf8427e" for t, op, o, s in reqs],
    )
    write("wdev_3.generic.csv", ["time_us;lba;bytes;kind"] + [f"{t // 1000};{o // 512};{s};{'read' if op == 'R' else 'write'}" for t, op, o, s in reqs])


if __name__ == "__main__":
    main()
