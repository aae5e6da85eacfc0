"""Every ``python experiments/benchmarks/<script>.py ...`` command the docs show, run to its end
with its sizes cut (:data:`SHRINK`: two questions, one repeat, eight new tokens, batch 1, …):
each script loads the real model and KB, times both sides it compares and prints its table,
so a benchmark that no longer runs shows up here, not when a figure is re-measured.
``tests/test_docs_commands.py`` checks that every option a command passes exists; this runs
them. Slow: about 5 minutes on 2 CPU cores (``pytest -m slow tests/experiments/test_benchmarks.py``).
The figures they print at these sizes mean nothing; the docs' figures come from the
commands as shown."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docs_commands import TOOL_COMMANDS

ROOT = Path(__file__).resolve().parents[2]

#: option → the value a benchmark runs with here (only the options its script defines)
SHRINK = {"--n": "2", "--repeats": "1", "--rounds": "1", "--tokens": "8", "--turns": "1", "--sizes": "1",
          "--batch": "1", "--context": "64", "--steps": "3", "--epochs": "1", "--metaqa-train": "30",
          "--metaqa-test": "10", "--limit": "10", "--seqs": "2", "--len": "64", "--mini": "2", "--k": "2",
          "--sft-steps": "1", "--prompt": "32", "--top-layers": "2"}


def script_options(script: Path) -> set[str]:
    """The ``--options`` a benchmark script's parser defines."""
    return set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", script.read_text(encoding="utf-8")))


def shrunk(command: str) -> list[str] | None:
    """The command's arguments with :data:`SHRINK`'s sizes, optional parts (``[--group]``) left
    out; None for a command that names one experiment's files (``<isp demo run>``, ``…``)."""
    command = re.sub(r"\s*\[[^\]]*\]", "", command)
    if re.search(r"<[^<>]*>|…", command):
        return None
    args = shlex.split(command)
    script = ROOT / args[0]
    own = script_options(script)
    out, i = [args[0]], 1
    while i < len(args):
        a = args[i]
        takes_value = a in own and i + 1 < len(args) and not args[i + 1].startswith("--")
        if a in SHRINK:
            i += 2 if takes_value else 1
            continue
        out.append(a)
        i += 1
    for opt, value in SHRINK.items():
        if opt in own:
            out += [opt, value]
    return out


BENCHMARKS = sorted({c for _, c in TOOL_COMMANDS if c.startswith("experiments/benchmarks/")})
RUNS: dict[tuple[str, ...], str] = {}
for _c in BENCHMARKS:
    _argv = shrunk(_c)
    if _argv is not None:
        RUNS.setdefault(tuple(_argv), _c)


def test_every_docs_benchmark_is_run_or_names_one_experiments_files():
    assert len(RUNS) >= 15
    assert {c for c in BENCHMARKS if shrunk(c) is None} <= {c for c in BENCHMARKS if "<" in c or "…" in c}


@pytest.mark.slow
@pytest.mark.parametrize("argv", list(RUNS), ids=[" ".join(a).removeprefix("experiments/benchmarks/") for a in RUNS])
def test_every_docs_benchmark_runs_to_its_end_shrunk(argv):
    side = argv[argv.index("--side") + 1] if "--side" in argv else "both"
    if argv[0].endswith("rl_update.py") and side != "precision" and importlib.util.find_spec("trl") is None:
        pytest.skip("TRL's side needs the bench extra: make test-all installs it (pip install -e '.[bench]')")
    p = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert p.returncode == 0, f"{RUNS[argv]}\n{p.stderr[-3000:]}"
    assert p.stdout.strip(), f"{RUNS[argv]} printed nothing"
