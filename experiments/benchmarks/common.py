"""Shared by the benchmark scripts."""

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

#: ../shared/data beside the checkout (where CI and developer machines keep the real data)
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def metaqa_kb_file(data: str | Path) -> Path:
    """The MetaQA ``kb.txt`` under ``data``, or exit with where it was looked for."""
    kb_file = Path(data) / "metaqa" / "kb.txt"
    if not kb_file.exists():
        raise SystemExit(f"MetaQA KB not found at {kb_file}")
    return kb_file


def metaqa_sample_heads(kb_file: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` distinct head entities of the MetaQA KB, drawn with a fixed seed."""
    import random

    from kgreason.kb import read_metaqa_triples

    heads = sorted({h for h, _, _ in read_metaqa_triples(kb_file, with_names=False)})
    return random.Random(seed).sample(heads, n)


def json_child(script: str | Path, *args: str, env: dict[str, str] | None = None) -> dict:
    """Run ``script`` again in a process of its own and return the JSON of its last line.

    A side measured in its own process has its own peak RSS (``ru_maxrss``) and its own
    start-up settings (allocator, threads); ``env`` is the child's whole environment
    (``None``: this process's).
    """
    out = subprocess.run([sys.executable, str(script), *args], check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def median_ms(fn: Callable, args: Iterable[tuple]) -> float:
    """Median wall time of ``fn(*a)`` over ``args``, in milliseconds."""
    times = []
    for a in args:
        t0 = time.perf_counter()
        fn(*a)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)
