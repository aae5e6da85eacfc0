"""kgreason.training.cost: CPU and wall time booked under stage names."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kgreason.training.cost import TRAINING_STAGES, StageCost, cpu_seconds, peak_rss_gb


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_running_child_counts_before_it_ends():
    # the SPARQL query process lives through the run: its CPU must show while it runs.
    # The child says when it has spun, so a busy host only makes the test slower.
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\nsys.stdin.readline()\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.5: pass\nprint('spun', flush=True)\ntime.sleep(600)"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        before = cpu_seconds()  # only the spin that follows is asserted
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "spun"
        assert child.poll() is None
        assert cpu_seconds() - before >= 0.45
    finally:
        child.kill()
        child.wait()
    # and once it was waited for, its time stays in the sum
    assert cpu_seconds() - before >= 0.45


def test_stages_book_cpu_and_wall_apart():
    cost = StageCost()
    with cost.stage("rl"):
        _spin(0.3)
    with cost.stage("eval/trained"):
        time.sleep(0.3)
    with cost.stage("rl"):  # a stage entered twice adds up
        _spin(0.2)
    rl, ev = cost.stages["rl"], cost.stages["eval/trained"]
    assert rl["cpu_s"] >= 0.45 and rl["wall_s"] >= 0.45
    assert ev["wall_s"] >= 0.3 and ev["cpu_s"] < 0.15
    d = cost.as_dict()
    assert d["training"]["cpu_s"] == pytest.approx(rl["cpu_s"])  # evaluation is not training
    assert d["total"]["wall_s"] == pytest.approx(rl["wall_s"] + ev["wall_s"])
    assert 0 < d["total"]["peak_rss_gb"] == pytest.approx(peak_rss_gb(), rel=0.5)
    assert "rl" in TRAINING_STAGES and "eval/trained" not in TRAINING_STAGES


def test_a_stage_that_raises_is_booked():
    cost = StageCost()
    with pytest.raises(RuntimeError), cost.stage("cold_start"):
        _spin(0.1)
        raise RuntimeError("killed")
    assert cost.stages["cold_start"]["cpu_s"] >= 0.05
    assert "| cold_start |" in cost.markdown()
