"""GRPO-style RL as a LightningModule with manual optimisation (SPEC §7–§8).

One training step = one batch of questions: N rollouts each (lock-step, multi-turn),
rewards, group advantages, then ``ppo_epochs`` passes of mini-batch updates of the
clipped surrogate (+ KL to the reference, − entropy bonus) with gradient clipping.
Components arrive built; the module never reads config strings beyond registry names.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import IterableDataset

from kgreason.envs.base import KGEnv
from kgreason.eval.metrics import precision_recall_f1
from kgreason.models.policy import CausalLMPolicy, first_loss_position
from kgreason.rewards.base import RewardFn
from kgreason.rl import AdvantageBatch, get_advantage, policy_loss, token_advantages
from kgreason.rollout.multiturn import MultiTurnRollout
from kgreason.training.batching import collate
from kgreason.types import KBQASample, Trajectory


@dataclass
class RLConfig:
    """Update hyper-parameters (KG-R1 defaults: clip 0.2, k3 KL 0.01, lr 1e-6, N=16)."""

    n_rollouts: int = 4
    ppo_epochs: int = 1
    mini_batch_size: int = 8
    clip_low: float = 0.2
    clip_high: float | None = None
    on_policy: bool = False
    kl_coef: float = 0.01
    kl_estimator: str = "k3"
    entropy_coef: float = 0.0
    agg: str = "token_mean"
    max_grad_norm: float = 1.0
    lr: float = 1e-6
    weight_decay: float = 0.01
    max_len: int | None = None
    advantage: str = "grpo"
    advantage_kwargs: dict[str, Any] | None = None
    #: RL iterations (batches of questions) to run; Lightning's ``max_steps`` counts
    #: optimizer updates, of which one iteration makes several.
    iterations: int | None = None


class PromptStream(IterableDataset):
    """Endless shuffled batches of questions (one batch per training step)."""

    def __init__(self, samples: Sequence[KBQASample], batch_size: int, seed: int = 0):
        if not samples:
            raise ValueError("no training samples")
        self.samples = list(samples)
        self.batch_size = batch_size
        self.seed = seed

    def __iter__(self) -> Iterator[list[KBQASample]]:
        rng = random.Random(self.seed)
        while True:
            order = self.samples[:]
            rng.shuffle(order)
            for i in range(0, len(order) - self.batch_size + 1, self.batch_size):
                yield order[i : i + self.batch_size]


class JsonlSink:
    """Appends trajectories to a JSON-lines file, flushed after every batch (crash-safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, trajs: Sequence[Trajectory], step: int, stage: str) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            for t in trajs:
                d = asdict(t)
                for k in ("token_ids", "loss_mask", "turn_index"):
                    d.pop(k)  # large and re-derivable; the text is kept
                f.write(json.dumps({"step": step, "stage": stage, **d}, ensure_ascii=False, default=str) + "\n")
            f.flush()


class RLLitModule(L.LightningModule):
    """RL fine-tuning of a policy in KG environments.

    Args:
        policy: the policy (LoRA or full).
        rollout: a :class:`MultiTurnRollout` on an engine over this policy.
        make_env: builds a fresh environment (one per rollout).
        reward: a reward function or :class:`~kgreason.rewards.CompositeReward`.
        config: :class:`RLConfig`.
        sink: called with each step's trajectories (e.g. :class:`JsonlSink`).
    """

    def __init__(self, policy: CausalLMPolicy, rollout: MultiTurnRollout, make_env: Callable[[], KGEnv],
                 reward: RewardFn, config: RLConfig | None = None,
                 sink: Callable[[Sequence[Trajectory], int, str], None] | None = None):
        super().__init__()
        self.automatic_optimization = False
        self.policy = policy
        self.model = policy.model
        self.rollout = rollout
        self.make_env = make_env
        self.reward = reward
        self.cfg = config or RLConfig()
        self.sink = sink
        self.estimator = get_advantage(self.cfg.advantage)
        self.iteration = 0

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["rl_iteration"] = self.iteration

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.iteration = checkpoint.get("rl_iteration", 0)

    def configure_optimizers(self):
        return torch.optim.AdamW(list(self.policy.parameters()), lr=self.cfg.lr,
                                 weight_decay=self.cfg.weight_decay)

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        return batch  # questions, not tensors: rollouts build their tensors on the policy's device

    # ------------------------------------------------------------------ step
    def training_step(self, batch: list[KBQASample], batch_idx: int) -> None:
        data, logs, trajs = self.make_experience(batch)
        cfg = self.cfg
        with torch.no_grad():
            if not cfg.on_policy:
                data["old_logp"] = self._logp_chunks(data, self.policy.token_logprobs)
            if cfg.kl_coef:
                data["ref_logp"] = self._logp_chunks(data, self.policy.reference_logprobs)
        metrics = self._update(data)
        logs.update({f"train/{k}": v for k, v in metrics.items()})
        logs["train/iteration"] = float(self.iteration)
        self.log_dict(logs, prog_bar=False, batch_size=len(trajs))
        self.log("f1", logs["train/f1"], prog_bar=True, batch_size=len(trajs), logger=False)
        if self.sink is not None:
            self.sink(trajs, self.iteration, "train")
        self.iteration += 1
        if self.cfg.iterations is not None and self.iteration >= self.cfg.iterations:
            self.trainer.should_stop = True

    def make_experience(self, batch: list[KBQASample]) -> tuple[dict[str, torch.Tensor], dict[str, float],
                                                                  list[Trajectory]]:
        """Roll out, score and compute advantages for one batch of questions.

        Returns the collated training tensors (with ``advantages``), the metrics to log
        and the trajectories to record. Subclasses change how experience is gathered
        (e.g. :class:`~kgreason.training.TreeRLLitModule`); the update stays the same.
        """
        cfg = self.cfg
        samples = [s for s in batch for _ in range(cfg.n_rollouts)]
        index = torch.tensor([i for i in range(len(batch)) for _ in range(cfg.n_rollouts)])
        trajs, stats = self.rollout.run([self.make_env() for _ in samples], samples)
        outs = [self.reward(t, s, step=self.iteration) for t, s in zip(trajs, samples, strict=True)]
        for t, o in zip(trajs, outs, strict=True):
            t.reward, t.turn_rewards, t.reward_components = o.total, o.turn or [], o.components
        adv_in = AdvantageBatch(
            rewards=torch.tensor([o.total for o in outs]),
            index=index,
            # rewards without per-turn values are all trajectory-level (global)
            turn_rewards=[torch.tensor(o.turn if o.turn else [0.0] * len(t.turns))
                          for o, t in zip(outs, trajs, strict=True)],
            global_rewards=torch.tensor([o.components.get("global", o.total) for o in outs]),
            n_turns=[len(t.turns) for t in trajs],
        )
        per_turn = self.estimator(adv_in, **(cfg.advantage_kwargs or {}))
        data = collate(trajs, self.policy.tokenizer.pad_token_id, cfg.max_len)
        data["advantages"] = token_advantages(per_turn, data["turn_index"], data["loss_mask"])
        return data, self._episode_logs(trajs, samples, stats), trajs

    def _logp_chunks(self, data: dict[str, torch.Tensor], fn) -> torch.Tensor:
        out = []
        for i in range(0, data["input_ids"].shape[0], self.cfg.mini_batch_size):
            sl = slice(i, i + self.cfg.mini_batch_size)
            r = fn(data["input_ids"][sl], data["attention_mask"][sl],
                   from_pos=first_loss_position(data["loss_mask"][sl]))
            out.append(r[0] if isinstance(r, tuple) else r)
        return torch.cat(out).detach()

    def _update(self, data: dict[str, torch.Tensor]) -> dict[str, float]:
        cfg = self.cfg
        opt = self.optimizers()
        n = data["input_ids"].shape[0]
        agg: dict[str, list[float]] = {}
        for _ in range(cfg.ppo_epochs):
            perm = torch.randperm(n)
            for i in range(0, n, cfg.mini_batch_size):
                idx = perm[i : i + cfg.mini_batch_size]
                mb = {k: v[idx] for k, v in data.items() if isinstance(v, torch.Tensor) and v.dim() == 2}
                if mb["loss_mask"].sum() == 0:
                    continue
                # entropy is always logged; it needs a graph only when it is in the loss
                logp, ent = self.policy.token_logprobs(mb["input_ids"], mb["attention_mask"], with_entropy=True,
                                                       entropy_grad=cfg.entropy_coef > 0,
                                                       from_pos=first_loss_position(mb["loss_mask"]))
                loss, m = policy_loss(
                    logp, mb.get("old_logp", logp.detach()), mb["advantages"], mb["loss_mask"],
                    clip_low=cfg.clip_low, clip_high=cfg.clip_high, on_policy=cfg.on_policy,
                    ref_logp=mb.get("ref_logp"), kl_coef=cfg.kl_coef, kl_estimator=cfg.kl_estimator,
                    entropy=ent, entropy_coef=cfg.entropy_coef, agg=cfg.agg)
                opt.zero_grad()
                self.manual_backward(loss)
                grad_norm = torch.nn.utils.clip_grad_norm_(list(self.policy.parameters()), cfg.max_grad_norm)
                opt.step()
                m["loss"] = float(loss.detach())
                m["grad_norm"] = float(grad_norm)
                for k, v in m.items():
                    agg.setdefault(k, []).append(v)
        return {k: sum(v) / len(v) for k, v in agg.items()}

    def _episode_logs(self, trajs, samples, stats) -> dict[str, float]:
        n = len(trajs)
        f1s = [precision_recall_f1(t.answer, s.answers)[2] for t, s in zip(trajs, samples, strict=True)]
        logs = {
            "train/reward": sum(t.reward for t in trajs) / n,
            "train/f1": sum(f1s) / n,
            "train/turns": sum(len(t.turns) for t in trajs) / n,
            "train/response_tokens": stats.generated_tokens / n,
            "train/invalid_calls": stats.invalid_calls / n,
            "train/kb_calls": stats.kb_calls / n,
            "train/gen_tokens_per_s": stats.tokens_per_s,
        }
        comps: dict[str, list[float]] = {}
        for t in trajs:
            for k, v in t.reward_components.items():
                comps.setdefault(k, []).append(v)
        logs.update({f"reward/{k}": sum(v) / len(v) for k, v in comps.items()})
        return logs
