"""What each stage of a run cost: wall-clock time, CPU time and peak memory.

Budgets in this field are stated in GPU- or CPU-hours of *training* (issue 22: "within 2
CPU-hours"), so the runner books every stage under its name and ``results.json`` carries
the bill: no ``/usr/bin/time`` around the command, and one figure per stage instead of
one per process. CPU time is user + system of this process, of the child processes that
ended and were waited for (as ``/usr/bin/time`` counts them) and of those still running —
the SPARQL query process lives through the whole run, so its time would otherwise only
show up when it ends.
"""

from __future__ import annotations

import contextlib
import resource
import sys
import time
from collections.abc import Callable, Iterator

import psutil

#: the stages that train: their CPU time is the run's training budget
TRAINING_STAGES = ("ranker_training", "cold_start", "rl")


def cpu_seconds(proc: psutil.Process | None = None) -> float:
    """User + system CPU seconds of ``proc`` (default: this process) and all its descendants.

    Ended children count once they are waited for (``children_user``/``children_system``);
    running ones are read live. The sum only grows while the process runs.
    """
    proc = proc or psutil.Process()
    t = proc.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in proc.children(recursive=True):
        with contextlib.suppress(psutil.Error):  # it ended between the listing and the read
            c = child.cpu_times()
            total += c.user + c.system + c.children_user + c.children_system
    return total


def peak_rss_gb() -> float:
    """The largest resident set this process has had so far, in GiB (``ru_maxrss``)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / (1 << 30) if sys.platform == "darwin" else kib / (1 << 20)  # macOS reports bytes


class StageCost:
    """Books wall-clock and CPU time under stage names; a stage entered twice adds up.

    Args:
        clock: wall-clock seconds (``time.perf_counter``).
        cpu: CPU seconds so far (:func:`cpu_seconds`).

    >>> wall, cpu = iter([0.0, 10.0, 10.0, 70.0]), iter([0.0, 20.0, 20.0, 80.0])
    >>> cost = StageCost(clock=lambda: next(wall), cpu=lambda: next(cpu))
    >>> with cost.stage("cold_start"):
    ...     pass
    >>> with cost.stage("eval/trained"):
    ...     pass
    >>> d = cost.as_dict()
    >>> d["stages"]["cold_start"]["wall_s"], d["stages"]["cold_start"]["cpu_min"]
    (10.0, 0.3333333333333333)
    >>> d["training"]["cpu_min"], d["total"]["wall_s"]
    (0.3333333333333333, 70.0)
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter, cpu: Callable[[], float] = cpu_seconds):
        self.clock = clock
        self.cpu = cpu
        #: stage → {"wall_s", "cpu_s", "peak_rss_gb"}, in the order the stages first ran
        self.stages: dict[str, dict[str, float]] = {}

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Book the time spent inside the block under ``name`` (also when it raises)."""
        wall, cpu = self.clock(), self.cpu()
        try:
            yield
        finally:
            row = self.stages.setdefault(name, {"wall_s": 0.0, "cpu_s": 0.0, "peak_rss_gb": 0.0})
            row["wall_s"] += self.clock() - wall
            row["cpu_s"] += self.cpu() - cpu
            row["peak_rss_gb"] = max(row["peak_rss_gb"], peak_rss_gb())

    def _sum(self, names: list[str]) -> dict[str, float]:
        rows = [self.stages[n] for n in names]
        cpu = sum(r["cpu_s"] for r in rows)
        return {"wall_s": sum(r["wall_s"] for r in rows), "cpu_s": cpu, "cpu_min": cpu / 60,
                "peak_rss_gb": max((r["peak_rss_gb"] for r in rows), default=0.0)}

    def as_dict(self) -> dict[str, dict]:
        """Every stage, the training stages (:data:`TRAINING_STAGES`) summed, and the total."""
        stages = {n: r | {"cpu_min": r["cpu_s"] / 60} for n, r in self.stages.items()}
        return {"stages": stages, "training": self._sum([n for n in self.stages if n in TRAINING_STAGES]),
                "total": self._sum(list(self.stages))}

    def markdown(self) -> str:
        """The bill as a table: a row a stage, then training and total.

        >>> wall, cpu = iter([0.0, 90.0]), iter([0.0, 180.0])
        >>> cost = StageCost(clock=lambda: next(wall), cpu=lambda: next(cpu))
        >>> with cost.stage("rl"):
        ...     pass
        >>> print(cost.markdown().replace(f"{cost.stages['rl']['peak_rss_gb']:.1f}", "R"))
        ## Cost
        <BLANKLINE>
        | stage | wall | CPU-minutes | peak RSS (GB) |
        |---|---|---|---|
        | rl | 1:30 | 3.0 | R |
        | training | 1:30 | 3.0 | R |
        | total | 1:30 | 3.0 | R |
        """
        d = self.as_dict()
        rows = [*d["stages"].items(), ("training", d["training"]), ("total", d["total"])]
        lines = ["## Cost", "", "| stage | wall | CPU-minutes | peak RSS (GB) |", "|---|---|---|---|"]
        lines += [f"| {n} | {_clock(r['wall_s'])} | {r['cpu_min']:.1f} | {r['peak_rss_gb']:.1f} |" for n, r in rows]
        return "\n".join(lines)


def _clock(seconds: float) -> str:
    """``h:mm:ss`` or ``m:ss``.

    >>> _clock(65.4), _clock(3725.0)
    ('1:05', '1:02:05')
    """
    s = round(seconds)
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"
