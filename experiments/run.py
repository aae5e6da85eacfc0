"""Train and evaluate a method: ``python experiments/run.py method=kg_r1 preset=smoke``.

Stages (``stage=all``): evaluate the untrained policy → cold-start SFT on gold-path
oracle trajectories (``sft=oracle``; ``sft=none`` is paper-faithful KG-R1) → RL →
evaluate again. Everything lands in the run's output folder: the resolved config,
checkpoints, metrics CSVs, trajectories JSONL (appended and flushed as they are made),
results as JSON and Markdown, and PNG plots of the training curves.

Ablations swap one group: ``python experiments/run.py -m method=kg_r1 preset=smoke reward=kg_r1,f1_only``.
"""

from __future__ import annotations

import functools
import json
import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra
import lightning as L
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch.utils.data import DataLoader
from tqdm import tqdm

from kgreason.data import load_dataset, sample_subset, train_eval_split
from kgreason.envs import make_env
from kgreason.envs.oracle import PathOracle
from kgreason.eval import EvalReport, evaluate
from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.rewards import Component, CompositeReward
from kgreason.rollout import HFEngine, MultiTurnRollout, TreeRollout
from kgreason.training import (
    CurriculumStream,
    JsonlSink,
    LengthGroupedBatches,
    PromptStream,
    RLConfig,
    RLLitModule,
    SFTLitModule,
    TreeRLLitModule,
    balance,
    collate,
    isp_sft_trajectories,
    oracle_sft_trajectories,
    warmup_cosine,
)

log = logging.getLogger("kgreason.run")


def build_policy(model_cfg: DictConfig, checkpoint: str | None) -> CausalLMPolicy:
    lora = LoraSettings(**model_cfg.lora) if model_cfg.lora else None
    if model_cfg.name == "tiny":
        policy = CausalLMPolicy.tiny(lora=lora)
    else:
        policy = CausalLMPolicy.from_pretrained(model_cfg.name, lora=lora, bf16=model_cfg.bf16)
        log.info("model %s, %s (bf16=%s)", model_cfg.name, "bf16" if policy.bf16 else "float32", model_cfg.bf16)
    if checkpoint:
        policy.load_checkpoint_state(torch.load(checkpoint, map_location="cpu"))
        log.info("loaded policy weights from %s", checkpoint)
    return policy


def save_policy(policy: CausalLMPolicy, path: Path) -> None:
    """Save the trained weights (the LoRA adapter stack, or everything when fully fine-tuned)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(policy.checkpoint_state(), path)


def build_reward(cfg: DictConfig):
    """A ``_target_`` reward (e.g. DTPO's tree reward) or a :class:`CompositeReward`."""
    if "_target_" in cfg:
        return instantiate(cfg)
    comps = [Component(**OmegaConf.to_container(c, resolve=True)) for c in cfg.components]
    return CompositeReward(comps, cap=cfg.cap)


def sft_data(cfg: DictConfig, train: list, make, policy: CausalLMPolicy) -> list:
    """Cold-start trajectories: gold-path oracle episodes (KG-R1 presets) or decomposed
    gold logical forms (ISP/DTPO, appendix E.2)."""
    pool = sample_subset(train, cfg.trainer.sft_limit, cfg.seed + 2)
    if cfg.sft == "oracle":
        oracle = PathOracle(list_relations=cfg.trainer.oracle_list_relations,
                            probe_tail_first=cfg.trainer.oracle_probe_tail_first,
                            announce_hops=cfg.trainer.oracle_announce_hops,
                            restate_question=cfg.trainer.oracle_restate_question,
                            restate_at_decision=cfg.trainer.oracle_restate_at_decision,
                            enumerate_count=cfg.trainer.oracle_enumerate_count)
        trajs = oracle_sft_trajectories(pool, make, policy.chat_ids, policy.tokenizer, oracle=oracle)
    elif cfg.sft == "decomposed":
        trajs = isp_sft_trajectories(pool, make, policy.chat_ids, policy.tokenizer)
    else:
        raise ValueError(f"unknown sft={cfg.sft!r}: oracle | decomposed | none")
    if cfg.trainer.sft_balance:
        group = {s.id: s.meta.get(cfg.trainer.sft_balance) for s in train}
        trajs = balance(trajs, key=lambda t: group[t.sample_id], seed=cfg.seed)
    return trajs


def opening_weighting(cfg: DictConfig, policy: CausalLMPolicy) -> dict[str, Any]:
    """SFTLitModule's turn-opening weights: ``trainer.sft_opening_tokens`` tokens after
    ``trainer.sft_opening_after`` (the think tag) weighted ``trainer.sft_opening_weight``."""
    t = cfg.trainer
    skip = len(policy.tokenizer(t.sft_opening_after, add_special_tokens=False)["input_ids"])
    return {"opening_weight": t.sft_opening_weight, "opening_skip": skip, "opening_tokens": t.sft_opening_tokens}


def sft_lr_lambda(cfg: DictConfig) -> Callable[[int], float] | None:
    """``trainer.sft_schedule``: ``constant`` (None) or ``cosine`` (warm-up, then decay to 0)."""
    t = cfg.trainer
    if t.sft_schedule == "constant":
        return None
    if t.sft_schedule == "cosine":
        return warmup_cosine(t.sft_steps, warmup_steps=int(t.sft_warmup * t.sft_steps))
    raise ValueError(f"unknown trainer.sft_schedule={t.sft_schedule!r}: constant | cosine")


def rl_module(cfg: DictConfig, policy: CausalLMPolicy, make, out: Path) -> RLLitModule:
    objective = OmegaConf.to_container(cfg.objective, resolve=True)
    group_size = objective.pop("group_size", None)
    drop_zero_variance = objective.pop("drop_zero_variance", False)
    rl_cfg = RLConfig(**objective, iterations=cfg.trainer.rl_iterations)
    sink = JsonlSink(out / "trajectories.jsonl")
    reward = build_reward(cfg.reward)
    if cfg.rollout.kind == "tree":
        r = cfg.rollout
        tree = TreeRollout(HFEngine(policy), policy.tokenizer, policy.chat_ids, k=r.k, max_depth=r.max_depth,
                           max_new_tokens=cfg.model.max_new_tokens, prune=r.prune,
                           dedup_failures=r.dedup_failures, max_active=r.max_active)
        return TreeRLLitModule(policy, tree, make, reward, rl_cfg, sink=sink, group_size=group_size,
                               drop_zero_variance=drop_zero_variance)
    rollout = MultiTurnRollout(HFEngine(policy), policy.tokenizer, policy.chat_ids, cfg.model.max_new_tokens)
    return RLLitModule(policy, rollout, make, reward, rl_cfg, sink=sink)


def prompt_stream(cfg: DictConfig, train: list):
    t = cfg.trainer
    if t.curriculum == "hops":
        return CurriculumStream(train, t.rl_batch_size, t.curriculum_stage_iterations, seed=cfg.seed)
    if t.curriculum:
        raise ValueError(f"unknown trainer.curriculum={t.curriculum!r}: null | hops")
    return PromptStream(train, t.rl_batch_size, cfg.seed)


def trainer(out: Path, name: str, **kw: Any) -> L.Trainer:
    return L.Trainer(accelerator="cpu", devices=1, default_root_dir=out,
                     logger=L.pytorch.loggers.CSVLogger(out, name=name, version=""),
                     enable_model_summary=False, log_every_n_steps=1, **kw)


def run_eval(rollout, make, samples, cfg: DictConfig, out: Path, tag: str) -> EvalReport:
    bar = tqdm(total=len(samples), desc=f"eval ({tag})", unit="q")
    report, trajs = evaluate(rollout, make, samples, batch_size=cfg.trainer.eval_batch_size,
                             n_runs=cfg.trainer.eval_runs, seed=cfg.seed, progress=bar.update)
    bar.close()
    JsonlSink(out / "trajectories.jsonl")(trajs, -1, f"eval/{tag}")
    with (out / f"eval_{tag}.jsonl").open("w", encoding="utf-8") as f:
        for r in report.rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return report


def plot_curves(out: Path) -> list[Path]:
    """PNG plots of the RL curves (reward, F1, response length, turns, invalid calls)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    csv = out / "rl" / "metrics.csv"
    if not csv.exists():
        return []
    df = pd.read_csv(csv)
    if "train/iteration" not in df:
        return []
    df = df.dropna(subset=["train/iteration"])
    panels = [("train/reward", "reward"), ("train/f1", "F1"), ("train/response_tokens", "response tokens"),
              ("train/turns", "turns"), ("train/invalid_calls", "invalid calls"), ("train/kl", "KL")]
    panels = [(k, t) for k, t in panels if k in df]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3))
    for ax, (k, title) in zip(axes if len(panels) > 1 else [axes], panels, strict=True):
        ax.plot(df["train/iteration"], df[k], marker="o", ms=3)
        ax.set_title(title)
        ax.set_xlabel("RL iteration")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path = out / "training_curves.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> dict[str, Any]:
    out = Path(HydraConfig.get().runtime.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    L.seed_everything(cfg.seed, verbose=False)

    kb = instantiate(cfg.kb)
    env_kw = instantiate(cfg.env, _convert_="all")  # builds the ranker when the env has one
    make = functools.partial(make_env, env_kw.pop("method"), kb, **env_kw)
    policy = build_policy(cfg.model, cfg.checkpoint)
    rollout = MultiTurnRollout(HFEngine(policy), policy.tokenizer, policy.chat_ids, cfg.model.max_new_tokens)
    d = cfg.data
    train_pool = load_dataset(d.name, d.path, split=d.train_split, **d.kwargs)
    eval_pool = train_pool if d.eval_split == d.train_split else load_dataset(d.name, d.path, split=d.eval_split, **d.kwargs)
    train, dev = train_eval_split(train_pool, eval_pool, d.train_limit, d.eval_limit, cfg.seed)
    results: dict[str, Any] = {"output_dir": str(out)}
    reports: dict[str, EvalReport] = {}

    if cfg.stage == "eval" or (cfg.stage == "all" and cfg.trainer.eval_untrained):
        tag = "untrained" if cfg.stage == "all" else "checkpoint"
        reports[tag] = run_eval(rollout, make, dev, cfg, out, tag)

    if cfg.stage in ("all", "sft") and cfg.sft != "none" and cfg.trainer.sft_steps > 0:
        trajs = sft_data(cfg, train, make, policy)
        log.info("SFT on %d %s trajectories", len(trajs), cfg.sft)
        if not trajs:
            raise ValueError(f"no {cfg.sft} cold-start trajectory fits env.max_turns={cfg.env.max_turns}; "
                             "raise it or use sft=none")
        batches = LengthGroupedBatches([len(t.token_ids) for t in trajs], cfg.trainer.sft_batch_size, seed=cfg.seed)
        loader = DataLoader(trajs, batch_sampler=batches,
                            collate_fn=functools.partial(collate, pad_id=policy.tokenizer.pad_token_id,
                                                         max_len=cfg.trainer.sft_max_len))
        trainer(out, "sft", max_steps=cfg.trainer.sft_steps, enable_checkpointing=False).fit(
            SFTLitModule(policy, lr=cfg.trainer.sft_lr, lr_lambda=sft_lr_lambda(cfg), **opening_weighting(cfg, policy)),
            loader)
        save_policy(policy, out / "checkpoints" / "policy_sft.pt")
        results["sft_trajectories"] = len(trajs)
        if cfg.stage == "all" and cfg.trainer.eval_after_sft:
            reports["sft"] = run_eval(rollout, make, dev, cfg, out, "sft")

    if cfg.stage in ("all", "rl") and cfg.trainer.rl_iterations > 0:
        policy.merge_lora()  # RL's reference (adapters off) is what RL starts from: SFT's or the checkpoint's weights
        module = rl_module(cfg, policy, make, out)
        ckpt = L.pytorch.callbacks.ModelCheckpoint(
            dirpath=out / "checkpoints" / "rl", save_last=True, every_n_train_steps=cfg.trainer.checkpoint_every)
        # One epoch of an endless prompt stream, which the module ends after its iterations.
        tr = trainer(out, "rl", max_steps=-1, max_epochs=1, callbacks=[ckpt])
        with warnings.catch_warnings():
            # Lightning warns that a checkpoint holds the weights after the update; resuming
            # from the iteration after it wants exactly those.
            warnings.filterwarnings("ignore", message="Using ModelCheckpoint with manual optimization")
            tr.fit(module, DataLoader(prompt_stream(cfg, train), batch_size=None),
                   ckpt_path=cfg.resume)
        save_policy(policy, out / "checkpoints" / "policy.pt")

    if cfg.stage == "all":
        reports["trained"] = run_eval(rollout, make, dev, cfg, out, "trained")

    results["eval"] = {k: {"overall": r.overall, "by_level": r.by_level, "by_qtype": r.by_qtype}
                       for k, r in reports.items()}
    (out / "results.json").write_text(json.dumps(results, indent=2))
    md = [f"# Results: method={HydraConfig.get().runtime.choices.get('method')} "
          f"preset={HydraConfig.get().runtime.choices.get('preset')}"]
    md += [r.markdown(k) for k, r in reports.items()]
    (out / "results.md").write_text("\n\n".join(md) + "\n")
    results["plots"] = [str(p) for p in plot_curves(out)]
    for k, r in reports.items():
        print(f"[{k}] dev F1 {r.overall['f1']:.3f}  Hit@1 {r.overall['hit1']:.3f}  (n={r.overall['n']})")
    print(f"outputs: {out}")
    return results


if __name__ == "__main__":
    main()
