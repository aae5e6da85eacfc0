"""Query engines run under a data cap: a query that builds gigabytes ends the engine's
process (which is restarted, or answers a typed error), not the host's memory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kgreason.kb.limits import limited


def data_cap_bytes(pid: int) -> int | None:
    """The soft ``Max data size`` of a process (``None``: unlimited)."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max data size"):
            soft = line.split()[3]
            return None if soft == "unlimited" else int(soft)
    raise AssertionError("no data limit line")


def test_a_limited_command_cannot_allocate_past_its_cap():
    probe = "import resource; print(resource.getrlimit(resource.RLIMIT_DATA)[0]); bytearray({n} << 20)"
    small = subprocess.run(limited([sys.executable, "-c", probe.format(n=50)], 300), capture_output=True, text=True)
    assert small.returncode == 0 and int(small.stdout) == 300 << 20
    big = subprocess.run(limited([sys.executable, "-c", probe.format(n=400)], 300), capture_output=True, text=True)
    assert big.returncode != 0 and "MemoryError" in big.stderr
    assert limited(["true"], None) == ["true"]


def test_the_virtuoso_process_runs_under_its_cap(virtuoso_server):
    ini = str(Path(virtuoso_server._tmp.name) / "virtuoso.ini")
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
            and (p / "cmdline").exists() and ini in (p / "cmdline").read_bytes().decode(errors="replace")]
    engines = [pid for pid in pids if Path(f"/proc/{pid}/exe").resolve().name == "virtuoso-t"]
    assert engines, "no virtuoso-t process found"
    assert data_cap_bytes(engines[0]) == virtuoso_server.memory_limit_mb << 20
