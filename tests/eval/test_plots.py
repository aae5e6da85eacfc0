"""kgreason.eval.plots: the run's figure from what the run wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgreason.eval.plots import plot_run


def _run(tmp_path: Path) -> Path:
    (tmp_path / "sft").mkdir()
    (tmp_path / "sft" / "metrics.csv").write_text("epoch,sft/loss,sft/lr,step\n0,2.0,1e-4,0\n0,1.5,1e-4,1\n0,1.2,1e-4,2\n")
    (tmp_path / "rl").mkdir()
    (tmp_path / "rl" / "metrics.csv").write_text(
        "epoch,step,train/iteration,train/reward,train/f1,train/kl\n0,0,0,0.1,0.2,0.0\n0,1,1,0.3,0.4,0.001\n")
    ev = {"untrained": {"overall": {"f1": 0.0, "hit1": 0.0, "n": 5}},
          "trained": {"overall": {"f1": 0.4, "hit1": 0.6, "n": 5}}}
    (tmp_path / "results.json").write_text(json.dumps({"eval": ev}))
    return tmp_path


def test_the_figure_has_sft_loss_rl_curves_and_the_evaluations(tmp_path):
    import matplotlib.pyplot as plt

    figures = []
    real_savefig = plt.Figure.savefig

    def keep(self, *a, **kw):
        figures.append(self)
        return real_savefig(self, *a, **kw)

    plt.Figure.savefig = keep
    try:
        path = plot_run(_run(tmp_path), title="method=kg_r1 preset=demo")
    finally:
        plt.Figure.savefig = real_savefig
    assert path == tmp_path / "training_curves.png" and path.stat().st_size > 10_000
    fig = figures[0]
    axes = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in axes] == ["SFT loss (cold start)", "RL reward", "RL answer F1", "KL to reference",
                                              "dev evaluation (n=5)"]
    assert fig._suptitle.get_text() == "method=kg_r1 preset=demo"
    rl_ticks = axes[1].xaxis.get_major_locator().tick_values(1, 2)
    assert all(float(t).is_integer() for t in rl_ticks)  # no fractional iterations
    assert [t.get_text() for t in axes[-1].get_xticklabels()] == ["untrained", "trained"]


def test_nothing_to_draw_is_no_figure(tmp_path):
    assert plot_run(tmp_path) is None
    assert not (tmp_path / "training_curves.png").exists()


@pytest.mark.parametrize("only", ["sft", "results.json"])
def test_a_run_with_one_stage_draws_that_stage(tmp_path, only):
    _run(tmp_path)
    for p in ("sft", "rl", "results.json"):
        if p != only and (tmp_path / p).exists():
            import shutil

            shutil.rmtree(tmp_path / p) if (tmp_path / p).is_dir() else (tmp_path / p).unlink()
    assert plot_run(tmp_path) is not None


def test_mixed_hop_counts_add_a_hit1_panel_per_hop(tmp_path):
    import matplotlib.pyplot as plt

    run = _run(tmp_path)
    hops = {"sft": {"1": {"hit1": 0.5, "n": 3}, "2": {"hit1": 0.2, "n": 3}},
            "trained": {"1": {"hit1": 0.6, "n": 3}, "2": {"hit1": 0.4, "n": 3}}}
    ev = {t: {"overall": {"f1": 0.3, "hit1": 0.5, "n": 6}, "by_hops": h} for t, h in hops.items()}
    (run / "results.json").write_text(json.dumps({"eval": ev}))
    figures = []
    real_savefig = plt.Figure.savefig
    plt.Figure.savefig = lambda self, *a, **kw: (figures.append(self), real_savefig(self, *a, **kw))[1]
    try:
        plot_run(run)
    finally:
        plt.Figure.savefig = real_savefig
    ax = [a for a in figures[0].axes if a.get_visible()][-1]
    assert ax.get_title() == "Hit@1 by hops (n=3/3)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1-hop", "2-hop"]
    heights = sorted(round(p.get_height(), 2) for p in ax.patches)
    assert heights == [0.2, 0.4, 0.5, 0.6]
    # one hop count only (the demo's 1-hop evaluation): no such panel
    ev = {"trained": {"overall": {"f1": 0.3, "hit1": 0.5, "n": 3}, "by_hops": {"1": hops["trained"]["1"]}}}
    (run / "results.json").write_text(json.dumps({"eval": ev}))
    figures.clear()
    plt.Figure.savefig = lambda self, *a, **kw: (figures.append(self), real_savefig(self, *a, **kw))[1]
    try:
        plot_run(run)
    finally:
        plt.Figure.savefig = real_savefig
    assert "Hit@1 by hops" not in [a.get_title() for a in figures[0].axes]
