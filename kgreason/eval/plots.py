"""The run's figure, `training_curves.png`: SFT loss, RL curves and the evaluations (also by
hop count when the questions mix them).

Reads what the run wrote (`sft/metrics.csv`, `rl/metrics.csv`, `results.json`), so it
can be redrawn for any finished run: `python -m kgreason.eval.plots <run dir>`.
Needs the `runner` extra (matplotlib, pandas).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: RL panels, in order, drawn when the run logged them
RL_PANELS = [("train/reward", "RL reward"), ("train/f1", "RL answer F1"), ("train/response_tokens", "response tokens"),
             ("train/turns", "turns"), ("train/invalid_calls", "invalid calls"), ("train/kl", "KL to reference")]
#: evaluation tags in the order a run makes them
EVAL_ORDER = ("untrained", "checkpoint", "sft", "trained")


def _csv(path: Path, x: str):
    import pandas as pd

    if not path.is_file():
        return None
    df = pd.read_csv(path)
    return df.dropna(subset=[x]) if x in df else None


def plot_run(out: str | Path, title: str | None = None) -> Path | None:
    """Draw ``<out>/training_curves.png``; ``None`` when the run has nothing to draw.

    Args:
        out: the run folder.
        title: the figure's title (default: the folder's name).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    out = Path(out)
    sft = _csv(out / "sft" / "metrics.csv", "sft/loss")
    rl = _csv(out / "rl" / "metrics.csv", "train/iteration")
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").is_file() else {}
    evals = {k: v["overall"] for k, v in results.get("eval", {}).items()}
    # Hit@1 per hop count, when the evaluation mixes hop counts (MetaQA 1/2/3-hop)
    by_hops = {k: v["by_hops"] for k, v in results.get("eval", {}).items() if len(v.get("by_hops", {})) > 1}
    panels: list[tuple[str, object]] = []
    if sft is not None and len(sft):
        panels.append(("sft", None))
    if rl is not None and len(rl):
        panels += [("rl", (k, t)) for k, t in RL_PANELS if k in rl]
    if evals:
        panels.append(("eval", None))
    if by_hops:
        panels.append(("hops", None))
    if not panels:
        return None
    cols = min(4, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.9 * rows + 0.4), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (kind, what) in zip(axes.flat, panels, strict=False):
        ax.grid(alpha=0.3)
        if kind == "sft":
            ax.plot(sft["step"] + 1, sft["sft/loss"], lw=1)
            ax.set(title="SFT loss (cold start)", xlabel="SFT step")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        elif kind == "rl":
            key, name = what  # type: ignore[misc]
            ax.plot(rl["train/iteration"] + 1, rl[key], marker="o", ms=3)
            ax.set(title=name, xlabel="RL iteration")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        elif kind == "hops":
            tags = [t for t in EVAL_ORDER if t in by_hops] + [t for t in by_hops if t not in EVAL_ORDER]
            hops = sorted({h for t in tags for h in by_hops[t]}, key=int)
            w = 0.8 / len(tags)
            for i, t in enumerate(tags):
                xs = [j + (i - (len(tags) - 1) / 2) * w for j in range(len(hops))]
                vals = [by_hops[t].get(h, {}).get("hit1", 0.0) for h in hops]
                ax.bar(xs, vals, w, label=t)
                for x, v in zip(xs, vals, strict=True):
                    ax.annotate(f"{v:.2f}", (x, v), ha="center", va="bottom", fontsize=7)
            ns = "/".join(str(by_hops[tags[-1]].get(h, {}).get("n", 0)) for h in hops)
            ax.set_xticks(range(len(hops)), [f"{h}-hop" for h in hops])
            ax.set(title=f"Hit@1 by hops (n={ns})", ylim=(0, 1.05))
            ax.legend(fontsize=7, loc="upper right")
        else:
            tags = [t for t in EVAL_ORDER if t in evals] + [t for t in evals if t not in EVAL_ORDER]
            xs = range(len(tags))
            w = 0.38
            f1 = [evals[t]["f1"] for t in tags]
            hit = [evals[t]["hit1"] for t in tags]
            ax.bar([x - w / 2 for x in xs], f1, w, label="F1")
            ax.bar([x + w / 2 for x in xs], hit, w, label="Hit@1")
            for x, v in zip(xs, f1, strict=True):
                ax.annotate(f"{v:.2f}", (x - w / 2, v), ha="center", va="bottom", fontsize=7)
            ax.set_xticks(list(xs), tags)
            n = next(iter(evals.values())).get("n")
            ax.set(title=f"dev evaluation (n={n})", ylim=(0, 1.05))
            ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title or out.name)
    fig.tight_layout()
    path = out / "training_curves.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m kgreason.eval.plots <run dir>")
    print(plot_run(sys.argv[1]) or "nothing to plot")
