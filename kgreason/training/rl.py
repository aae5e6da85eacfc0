"""GRPO-style RL as a LightningModule with manual optimisation (design §7–§8, docs/design.md).

One training step = one batch of questions: experience from a source (lock-step
episodes or trees), group filters, advantages, then ``ppo_epochs`` passes of mini-batch
updates of the clipped surrogate (+ KL to the reference, − entropy bonus) with gradient
clipping. Components arrive built; the module never reads config strings beyond
registry names.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import IterableDataset

from kgreason.envs.base import KGEnv
from kgreason.models.policy import first_loss_position
from kgreason.models.precision import Bf16Setting, resolve_bf16
from kgreason.models.protocol import TrainablePolicy, check_policy
from kgreason.rl import (
    AdvantageBatch,
    CriticSettings,
    ValueModel,
    aggregation_units,
    gae,
    get_advantage,
    masked_moments,
    policy_loss,
    sampler_mismatch,
    terminal_rewards,
    token_advantages,
    truncated_is_weights,
    value_loss,
    whiten,
)
from kgreason.training.batching import TrainingBatch
from kgreason.training.experience import Experience, ExperienceSource, filter_groups
from kgreason.training.sharding import gathered, is_sharded, shard_for_strategy
from kgreason.training.zero import (
    before_backward,
    engine_of,
    gathered_zero3,
    log_partition,
    zero3_params,
)
from kgreason.types import Episode, KBQASample, Trajectory


@dataclass
class RLConfig:
    """Update hyper-parameters (KG-R1 defaults: clip 0.2, k3 KL 0.01, lr 1e-6).

    The group size (N rollouts, or K branches) belongs to the experience source.
    """

    ppo_epochs: int = 1
    mini_batch_size: int = 8
    #: rows of one forward/backward pass in each process; a mini-batch's passes accumulate
    #: into its one optimiser step (verl's ``ppo_micro_batch_size_per_gpu``). None: the
    #: process's whole share of the mini-batch in one pass. Bounds activation memory only
    micro_batch_size: int | None = None
    clip_low: float = 0.2
    clip_high: float | None = None
    #: one optimiser step per batch (its mini-batches' gradients accumulated), so the ratio
    #: to the sampling policy is 1 by construction (KnowCoder-A1); needs ppo_epochs=1
    on_policy: bool = False
    kl_coef: float = 0.01
    kl_estimator: str = "k3"
    entropy_coef: float = 0.0
    agg: str = "token_mean"
    agg_norm: float | None = None  # seq_mean_token_sum_norm's constant (Dr. GRPO)
    max_grad_norm: float = 1.0
    lr: float = 1e-6
    weight_decay: float = 0.01
    #: weight decay on biases and normalisation weights too (verl's AdamW over all
    #: parameters); false: on matrices only (KG-R1 D.4)
    decay_biases_and_norms: bool = True
    #: linear warm-up of the rate over this share of ``iterations``, then constant
    #: (verl's ``lr_warmup_steps_ratio``; KBQA-R1 §V-A: 0.3)
    warmup_ratio: float = 0.0
    max_len: int | None = None
    advantage: str = "grpo"
    advantage_kwargs: dict[str, Any] | None = None
    #: groups larger than this are subsampled to it (ISP/DTPO code: 6); None keeps all
    group_size: int | None = None
    #: leave out groups whose rewards are all equal (ISP/DTPO code)
    drop_zero_variance: bool = False
    #: RL iterations (batches of questions) to run; Lightning's ``max_steps`` counts
    #: optimizer updates, of which one iteration makes several.
    iterations: int | None = None
    #: bf16 autocast for the old / reference log-probs and the updates (True, False, or
    #: "auto": where the host declares fast bf16 training products, see
    #: :mod:`kgreason.models.precision`); the weights and the rollouts
    #: keep the policy's precision. Old and new log-probs share it, so the ratio compares
    #: like with like.
    bf16: Bf16Setting = False
    #: the temperature the rollout engine samples at; every log-prob the update takes (new,
    #: old, reference) is scored under ``softmax(logits / temperature)``, as the sampler drew
    temperature: float = 1.0
    #: cap ``C`` of the truncated importance-sampling weights ``min(π_old / π_sampler, C)``
    #: applied where the engine's own log-probs come from other kernels or another
    #: precision than the trainer's (:mod:`kgreason.rl.correction`); None: the gap is
    #: measured and logged, not corrected
    tis_cap: float | None = 2.0
    #: PPO with a learned critic (:class:`~kgreason.rl.CriticSettings`, or its fields as a
    #: mapping): a value model built from the policy's weights, trained beside it; the
    #: advantages are GAE's over the policy's tokens (``advantage: gae``). None: no critic
    critic: CriticSettings | Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.micro_batch_size is not None and self.micro_batch_size < 1:
            raise ValueError(f"objective.micro_batch_size must be a positive number of rows or null, "
                             f"got {self.micro_batch_size}")
        if isinstance(self.critic, Mapping):
            self.critic = CriticSettings(**self.critic)
        if (self.critic is not None) != (self.advantage == "gae"):
            raise ValueError("advantage 'gae' and a critic go together: set objective.advantage=gae with "
                             f"objective.critic (got advantage={self.advantage!r}, critic={self.critic!r})")


def warmup_constant(ratio: float, iterations: int) -> Callable[[int], float]:
    """The rate multiplier of a linear warm-up over ``int(ratio × iterations)`` iterations,
    then 1: HF's ``get_constant_schedule_with_warmup``, which verl uses (the first
    iteration's rate is 0, as there).

    >>> f = warmup_constant(0.3, 10)
    >>> [round(f(i), 3) for i in range(5)]
    [0.0, 0.333, 0.667, 1.0, 1.0]
    """
    warm = int(ratio * iterations)

    def multiplier(step: int) -> float:
        return step / max(1, warm) if step < warm else 1.0

    return multiplier


def decay_groups(params: Iterable[torch.nn.Parameter], weight_decay: float,
                 biases_and_norms: bool = True) -> list[dict[str, Any]]:
    """AdamW parameter groups: ``weight_decay`` on every trainable parameter, or, with
    ``biases_and_norms=False``, not on 1-D ones (biases, normalisation weights), as KG-R1
    (D.4) and Hugging Face's Trainer do.

    >>> lin, norm = torch.nn.Linear(2, 2), torch.nn.LayerNorm(2)
    >>> [(len(g["params"]), g["weight_decay"]) for g in decay_groups([*lin.parameters(), *norm.parameters()], 0.01, False)]
    [(1, 0.01), (3, 0.0)]
    """
    params = list(params)
    if biases_and_norms:  # every parameter, as before the option (checkpoints' optimiser states load)
        return [{"params": params, "weight_decay": weight_decay}]
    trainable = [p for p in params if p.requires_grad]
    groups = [{"params": [p for p in trainable if p.ndim >= 2], "weight_decay": weight_decay},
              {"params": [p for p in trainable if p.ndim < 2], "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


#: checkpoint key of the RL iterations done (read back by :func:`kgreason.training.resume.rl_progress`)
ITERATION_KEY = "rl_iteration"


class UniformStream(IterableDataset):
    """Endless shuffled batches of questions (one batch per training step).

    ``start`` skips that many batches (a resumed run goes on with the questions an
    uninterrupted run would see next).
    """

    def __init__(self, samples: Sequence[KBQASample], batch_size: int, seed: int = 0, start: int = 0):
        if not samples:
            raise ValueError("no training samples")
        self.samples = list(samples)
        self.batch_size = batch_size
        self.seed = seed
        self.start = start

    def __iter__(self) -> Iterator[list[KBQASample]]:
        rng = random.Random(self.seed)
        it = 0
        while True:
            order = self.samples[:]
            rng.shuffle(order)
            for i in range(0, len(order) - self.batch_size + 1, self.batch_size):
                if it >= self.start:
                    yield order[i : i + self.batch_size]
                it += 1


class JsonlSink:
    """Appends episodes to a JSON-lines file, flushed after every batch (crash-safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, episodes: Sequence[Episode | Trajectory], step: int, stage: str) -> None:
        lines = []
        for t in episodes:
            d = t.to_dict()
            for k in ("token_ids", "loss_mask", "turn_index"):
                d.pop(k, None)  # large and re-derivable; the text is kept
            lines.append(json.dumps({"step": step, "stage": stage, **d}, ensure_ascii=False, default=str) + "\n")
        # one appending write per batch: data-parallel processes share the file
        with self.path.open("a", encoding="utf-8") as f:
            f.write("".join(lines))
            f.flush()


def _plain(config: Any) -> dict[str, Any]:
    """A dataclass's fields that a YAML file can hold (callables by their names)."""
    out = {}
    for f in fields(config):
        v = getattr(config, f.name)
        out[f.name] = v if isinstance(v, str | int | float | bool | type(None)) else repr(v)
    return out


class _OldLogprobs:
    """The old log-probs of an update's rows, gathered from its own first forwards.

    Until the update's first optimiser step the policy is the one that sampled, so the
    log-probs a mini-batch's forward computes for its loss are its rows' old log-probs: no
    separate pass for them. At that first step the rows no forward has reached yet are
    scored in one no-grad pass, and ``data.old_logp`` holds every row's from then on (later
    mini-batches and PPO epochs read it). With one mini-batch an iteration the old-log-prob
    pass disappears; with ``k`` it shrinks by ``1/k``.

    Shapes: ``data``'s tensors ``[N, L]``; ``taker(rows)`` takes ``[len(rows), L]``.
    """

    def __init__(self, data: TrainingBatch):
        self.data = data
        self.old = torch.zeros(data.loss_mask.shape, dtype=torch.float32, device=data.loss_mask.device)
        self.seen = torch.zeros(len(data), dtype=torch.bool)

    def taker(self, rows: torch.Tensor) -> Callable[[torch.Tensor], None]:
        def take(logp: torch.Tensor) -> None:
            self.old[rows.to(self.old.device)] = logp.float()
            self.seen[rows] = True
        return take

    def score_the_rest(self, score: Callable[[TrainingBatch], torch.Tensor]) -> None:
        """Score the rows no forward has reached with ``score`` and hand ``data`` its old log-probs."""
        rest = (~self.seen).nonzero().squeeze(-1)
        if len(rest):
            self.old[rest.to(self.old.device)] = score(self.data.rows(rest)).float()
        self.data.old_logp = self.old


class RLLitModule(L.LightningModule):
    """RL fine-tuning of a policy in KG environments, for any :class:`ExperienceSource`.

    One training step is one batch of questions: the source rolls out and scores them,
    groups are filtered (``config.group_size``, ``config.drop_zero_variance``), the
    registered advantage estimator turns rewards into per-turn advantages, and
    ``ppo_epochs`` passes of mini-batch updates of the clipped surrogate (+ KL to the
    reference, − entropy bonus) follow, with gradient clipping.

    Args:
        policy: the policy (LoRA or full): any :class:`~kgreason.models.TrainablePolicy`.
        source: where experience comes from (:class:`~kgreason.training.LinearExperience`,
            :class:`~kgreason.training.TreeExperience`, or your own).
        make_env: builds a fresh environment (one per rollout).
        config: :class:`RLConfig`.
        sink: called with each step's episodes (e.g. :class:`JsonlSink`).
        hparams: more to save as hyper-parameters (the runner gives its whole config).
    """

    def __init__(self, policy: TrainablePolicy, source: ExperienceSource, make_env: Callable[[], KGEnv],
                 config: RLConfig | None = None,
                 sink: Callable[[Sequence[Episode], int, str], None] | None = None,
                 hparams: Mapping[str, Any] | None = None):
        super().__init__()
        # in every Lightning checkpoint (``hyper_parameters``) and given to every logger
        self.save_hyperparameters({"rl": _plain(config or RLConfig()), **(hparams or {})})
        check_policy(policy, TrainablePolicy)
        if not isinstance(source, ExperienceSource):
            raise TypeError(f"source must have collect(batch, make_env, step), got {type(source).__name__}")
        self.automatic_optimization = False
        self.policy = policy
        self.model = policy.model
        self.source = source
        self.make_env = make_env
        self.cfg = config or RLConfig()
        self.sink = sink
        if self.cfg.on_policy and self.cfg.ppo_epochs != 1:
            raise ValueError(f"on_policy=True is one update per batch; ppo_epochs={self.cfg.ppo_epochs} would reuse "
                             "the batch off-policy (set ppo_epochs=1, or on_policy=false for PPO's clipped ratio)")
        self.estimator = get_advantage(self.cfg.advantage)
        #: PPO's value model (objective.critic), trained beside the policy
        self.critic = ValueModel.from_policy(policy) if self.cfg.critic is not None else None
        #: the training passes' autocast (a bf16 policy autocasts everything already)
        self.bf16 = not policy.bf16 and resolve_bf16(self.cfg.bf16, policy.device, "train")
        self.iteration = 0
        self._rng_to_restore: dict[str, Any] | None = None
        if self.cfg.temperature <= 0:
            raise ValueError(f"objective.temperature must be > 0 (the sampling temperature), got {self.cfg.temperature}")
        # only passed when not 1: a user's Policy written before the keyword still works
        self._temperature = {"temperature": self.cfg.temperature} if self.cfg.temperature != 1.0 else {}

    @property
    def sampler_is_trainer(self) -> bool:
        """Whether the rollout engine's log-probs are the trainer's own: an engine that runs
        the policy's forward pass (:attr:`~kgreason.rollout.Engine.scores_like_trainer`) at
        the trainer's temperature, with no bf16 autocast added for the training passes."""
        engine = getattr(getattr(self.source, "rollout", None), "engine", None)
        return (bool(getattr(engine, "scores_like_trainer", False)) and not self.bf16
                and float(getattr(engine, "temperature", 1.0)) == self.cfg.temperature)

    def configure_model(self) -> None:
        """Shard the policy over the data-parallel processes under ``trainer=fsdp``
        (:mod:`kgreason.training.sharding`); other strategies leave it whole."""
        shard_for_strategy(self)

    def on_fit_start(self) -> None:
        # transformers loads models in eval mode, and Lightning trains modules in the mode
        # it finds them in (warning about each of them)
        self.model.train()
        log_partition(self)
        if self.critic is not None:
            self.critic.train()

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint[ITERATION_KEY] = self.iteration
        # sampling and mini-batch order draw from the global generators; with their state
        # a resumed run samples what an uninterrupted one would
        checkpoint["rl_rng"] = {"torch": torch.get_rng_state(), "python": random.getstate(),
                                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.iteration = checkpoint.get(ITERATION_KEY, 0)
        # applied at the next step: Lightning draws from the generator between loading
        # and the first batch (the data loader's base seed)
        self._rng_to_restore = checkpoint.get("rl_rng")

    def _restore_rng(self) -> None:
        state, self._rng_to_restore = self._rng_to_restore, None
        if state is None:
            return
        torch.set_rng_state(state["torch"])
        random.setstate(state["python"])
        if state.get("cuda") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda"])

    def configure_optimizers(self):
        opt = torch.optim.AdamW(decay_groups(self.policy.parameters(), self.cfg.weight_decay,
                                             self.cfg.decay_biases_and_norms), lr=self.cfg.lr)
        policy: dict[str, Any] = {"optimizer": opt}
        if self.cfg.warmup_ratio:
            # stepped once an iteration (training_step), as verl steps its scheduler once a training step
            sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_constant(self.cfg.warmup_ratio,
                                                                           self.cfg.iterations or 0))
            policy["lr_scheduler"] = {"scheduler": sched, "interval": "step"}
        if self.critic is None:
            return policy
        trainable = [p for p in self.critic.parameters() if p.requires_grad]
        critic = torch.optim.AdamW(decay_groups(trainable, self.cfg.weight_decay, self.cfg.decay_biases_and_norms),
                                   lr=self.cfg.critic.lr)
        return [policy, {"optimizer": critic}]

    def _optimizers(self) -> tuple[Any, Any]:
        """The policy's optimiser and the critic's (None without a critic)."""
        opts = self.optimizers()
        if isinstance(opts, list):
            return opts[0], opts[1]
        return opts, None

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        return batch  # questions, not tensors: rollouts build their tensors on the policy's device

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> int | None:
        # a run resumed from its last checkpoint has nothing left to do but load the weights
        if self.cfg.iterations is not None and self.iteration >= self.cfg.iterations:
            return -1  # Lightning: end the epoch
        return None

    # ------------------------------------------------------------------ step
    @property
    def _world(self) -> tuple[int, int]:
        """(this process's rank, number of processes): (0, 1) outside data-parallel training."""
        tr = self._trainer
        return (tr.global_rank, tr.world_size) if tr is not None else (0, 1)

    def training_step(self, batch: list[KBQASample], batch_idx: int) -> None:
        self._restore_rng()
        t0 = time.perf_counter()
        rank, world = self._world
        # trainer=fsdp: the policy gathered whole while each process plays and scores its own
        # questions (their forwards then need no collective); resharded before the update
        # (ZeRO-3: gathered the same way, its per-layer fetch hooks off)
        models = (self.model, getattr(self.policy, "reference_model", None), self.critic)
        with gathered(*models), gathered_zero3(engine_of(self), *models):
            # data parallel: every process reads the same stream and plays its share of the
            # batch's questions (whole groups stay in one process: their advantages need them)
            exp = self.source.collect(batch[rank::world], self.make_env, self.iteration)
            kept = filter_groups(exp, self.cfg.group_size, self.cfg.drop_zero_variance, seed=self.iteration)
            logs = dict(exp.logs)
            logs["train/rollout_s"] = time.perf_counter() - t0
            logs["train/samples_kept"] = float(len(kept.samples))
            data = self._scored_batch(kept, logs) if kept.samples else None
        if self.critic is not None and self.cfg.critic.whiten:
            self._whiten_advantages(data)
        if data is not None or world > 1:  # a process with nothing to learn still joins the all-reduces
            logs.update({f"train/{k}": v for k, v in self._update(data).items()})
        logs["train/lr"] = float(self._optimizers()[0].param_groups[0]["lr"])
        sched = self.lr_schedulers()
        if sched is not None:  # manual optimisation: Lightning leaves the stepping to us
            sched.step()
        logs["train/iteration"] = float(self.iteration)
        logs["train/iteration_s"] = time.perf_counter() - t0  # rollouts + updates: RL iterations per hour
        n = max(1, len(exp.episodes))
        # the row goes to the loggers now, not after the batch as self.log's would: the
        # iteration's checkpoint (on_train_batch_end) flushes them first, so a run killed
        # after it keeps the row (tests/training/test_resume.py)
        for lg in self.loggers:
            lg.log_metrics({**logs, "epoch": self.current_epoch}, step=self.iteration)
        self.log_dict(logs, prog_bar=False, batch_size=n, logger=False)
        if "train/f1" in logs:
            self.log("f1", logs["train/f1"], prog_bar=True, batch_size=n, logger=False)
        if self.sink is not None:
            self.sink(exp.episodes, self.iteration, "train")
        self.iteration += 1
        if self.cfg.iterations is not None and self.iteration >= self.cfg.iterations:
            self.trainer.should_stop = True

    def _scored_batch(self, kept: Experience, logs: dict[str, float]) -> TrainingBatch:
        """The training batch of ``kept`` with its old and reference log-probs (no grad)."""
        data = self.make_batch(kept)
        # sequences cut at objective.max_len: their ends (the answer, often) are not trained on
        logs["train/max_len_cut"] = data.truncated / len(data)
        # the engine's own log-probs, where it scored with the trainer's forward pass and
        # precision, are the old log-probs: the policy has not moved since it sampled
        reuse = data.sampler_logp is not None and self.sampler_is_trainer
        if reuse and not self.cfg.on_policy:
            data.old_logp = data.sampler_logp * data.loss_mask
        logs["train/old_logp_from_sampler"] = float(reuse)
        with torch.no_grad(), self.policy.autocast(self.bf16):
            # in one process the update's own forwards score the rows of its first step, the
            # policy not having moved yet (_OldLogprobs); with several, every row is scored
            # here, where the processes' forwards need no collective (FSDP's are gathered)
            if not self.cfg.on_policy and not reuse and self._world[1] > 1:
                data.old_logp = self._old_logprobs(data)
            if self.cfg.kl_coef:
                data.ref_logp = self._logp_chunks(data, self.policy.reference_logprobs)
        if reuse:
            data.sampler_logp = None  # nothing to correct: the sampler is the trainer
        return data

    def make_batch(self, exp: Experience) -> TrainingBatch:
        """The :class:`~kgreason.training.TrainingBatch` of ``exp``, with per-token advantages,
        on the policy's device."""
        trajs = exp.samples
        adv_in = AdvantageBatch(
            rewards=torch.tensor([t.reward for t in trajs]),
            index=torch.tensor(exp.index, dtype=torch.long),
            # rewards without per-turn values are all trajectory-level (global)
            turn_rewards=[torch.tensor(t.turn_rewards if t.turn_rewards else [0.0] * n)
                          for t, n in zip(trajs, exp.n_turns, strict=True)],
            global_rewards=torch.tensor([t.reward if t.global_reward is None else t.global_reward for t in trajs]),
            n_turns=list(exp.n_turns),
        )
        if self.critic is not None:
            batch = TrainingBatch.of(trajs, exp.index, lambda ti, lm: torch.zeros(lm.shape),
                                     self.policy.tokenizer.pad_token_id, self.cfg.max_len).to(self.policy.device)
            return self._critic_advantages(batch, adv_in.global_rewards)
        per_turn = self.estimator(adv_in, **(self.cfg.advantage_kwargs or {}))
        batch = TrainingBatch.of(trajs, exp.index, lambda ti, lm: token_advantages(per_turn, ti, lm),
                                 self.policy.tokenizer.pad_token_id, self.cfg.max_len)
        # to the policy's device (a GPU run): the batch is built here, not by a data loader
        return batch.to(self.policy.device)

    @torch.no_grad()
    def _critic_advantages(self, batch: TrainingBatch, outcome: torch.Tensor) -> TrainingBatch:
        """PPO: the critic's values at sampling time, GAE over the policy's tokens with the
        trajectory-level reward on the last one (KG-R1's "w PPO" sets the turn rewards'
        weight to 0); :meth:`_whiten_advantages` whitens them over the whole batch, as verl does."""
        settings = self.cfg.critic
        assert self.critic is not None and isinstance(settings, CriticSettings)
        with self.policy.autocast(self.bf16):
            values = self._in_chunks(batch, lambda sl: self.critic(batch.input_ids[sl], batch.attention_mask[sl]).float())
        batch.old_values = values * batch.loss_mask
        rewards = terminal_rewards(outcome.to(batch.loss_mask.device), batch.loss_mask)
        # whitened in training_step, with the statistics of every process's rows
        batch.advantages, batch.returns = gae(rewards, batch.old_values, batch.loss_mask, settings.gamma, settings.lam)
        return batch

    def _whiten_advantages(self, data: TrainingBatch | None) -> None:
        """PPO: whiten the GAE advantages over the whole batch. Under data parallelism every
        process calls it (one with no rows adds zeros), so that each whitens its share with
        the combined batch's mean and spread, as one process would."""
        moments = (masked_moments(data.advantages, data.loss_mask) if data is not None
                   else torch.zeros(3, dtype=torch.float64, device=self.policy.device))
        if self._world[1] > 1:
            moments = self.trainer.strategy.reduce(moments, reduce_op="sum")
        if data is not None:
            data.advantages = whiten(data.advantages, data.loss_mask, moments=moments)

    def _in_chunks(self, data: TrainingBatch, fn: Callable[[slice], torch.Tensor]) -> torch.Tensor:
        """``fn`` over ``data``'s rows a mini-batch at a time (the no-grad scoring passes),
        concatenated and detached. Shapes: ``fn(rows)`` ``[n, L]`` → ``[len(data), L]``."""
        return torch.cat([fn(slice(i, i + self.cfg.mini_batch_size))
                          for i in range(0, len(data), self.cfg.mini_batch_size)]).detach()

    def _old_logprobs(self, data: TrainingBatch) -> torch.Tensor:
        """The current policy's log-probs of ``data``'s tokens, a no-grad pass in the update's precision."""
        with torch.no_grad(), self.policy.autocast(self.bf16):
            return self._logp_chunks(data, self.policy.token_logprobs)

    def _logp_chunks(self, data: TrainingBatch, fn) -> torch.Tensor:
        """The log-probs ``fn`` (the policy's or the reference's) gives ``data``'s tokens."""
        def scored(sl: slice) -> torch.Tensor:
            r = fn(data.input_ids[sl], data.attention_mask[sl], from_pos=first_loss_position(data.loss_mask[sl]),
                   loss_mask=data.loss_mask[sl], **self._temperature)
            return r[0] if isinstance(r, tuple) else r
        return self._in_chunks(data, scored)

    def _update(self, data: TrainingBatch | None) -> dict[str, float]:
        """``ppo_epochs`` passes of mini-batch updates over ``data`` (None: no rows here).

        Under data parallelism ``mini_batch_size`` counts rows over all processes, every
        process makes the same number of updates (one with no rows left backpropagates a
        zero loss, so that the gradient all-reduce still meets), and each loss is weighted
        by the process's share of the aggregation units (:func:`aggregation_units`): the
        averaged gradient is that of the combined mini-batch. ``on_policy``: the
        mini-batches' gradients, each weighted by its share of the whole batch's units,
        accumulate into one optimiser step (mini-batches then only bound memory).
        ``micro_batch_size`` splits each process's share of a mini-batch into passes of
        that many rows, each weighted by its share of the units, before the step.
        """
        cfg = self.cfg
        opt, critic_opt = self._optimizers()
        _, world = self._world
        n = 0 if data is None else len(data)
        size = max(1, -(-cfg.mini_batch_size // world))
        micro = min(size, cfg.micro_batch_size or size)
        chunks = -(-size // micro)
        steps = -(-n // size)
        if world > 1:
            steps = int(self._reduce(steps, "max"))
        # on-policy: the mini-batches' gradients add up to the whole batch's, and one optimiser
        # step follows, so every row is scored by the weights that sampled it (ratio 1 holds)
        batch_units = 0.0
        if cfg.on_policy:
            batch_units = aggregation_units(cfg.agg, data.loss_mask) if data is not None else 0.0
            if world > 1:
                batch_units = self._reduce(batch_units, "sum")
        agg: dict[str, list[float]] = {}
        pending = _OldLogprobs(data) if data is not None and data.old_logp is None and not cfg.on_policy else None
        for _ in range(cfg.ppo_epochs):
            perm = torch.randperm(n)
            if cfg.on_policy:
                self._zero_grad(opt, critic_opt)
            for j in range(steps):
                idx = perm[j * size : (j + 1) * size]
                mb = None if data is None or not len(idx) else data.rows(idx)
                if cfg.on_policy:
                    units = aggregation_units(cfg.agg, mb.loss_mask) if mb is not None else 0.0
                    total = batch_units
                elif world > 1:
                    units = aggregation_units(cfg.agg, mb.loss_mask) if mb is not None else 0.0
                    total = self._reduce(units, "sum")
                elif chunks > 1:
                    units = total = aggregation_units(cfg.agg, mb.loss_mask) if mb is not None else 0.0
                else:  # one process, one pass: any aggregation, registered or not, weight 1
                    units = total = float(mb.loss_mask.sum()) if mb is not None else 0.0
                if total == 0:
                    continue  # no process has a token to learn from: no update anywhere
                if not cfg.on_policy:
                    self._zero_grad(opt, critic_opt)
                # micro-batches: the mini-batch's gradient accumulated over passes of `micro`
                # rows; every process makes the same number of passes (the all-reduces meet)
                for c in range(chunks):
                    part = mb if chunks == 1 or mb is None else (
                        mb.rows(torch.arange(c * micro, min((c + 1) * micro, len(mb)))) if c * micro < len(mb) else None)
                    part_units = units if chunks == 1 else (
                        aggregation_units(cfg.agg, part.loss_mask) if part is not None else 0.0)
                    if part_units == 0 or part is None:
                        # nothing here, but the gradient all-reduce needs this process: a zero loss
                        loss, m = self._zero_loss(), {}
                    else:
                        loss, m = self._loss(part, pending and pending.taker(idx[c * micro : (c + 1) * micro]))
                    # × world: the all-reduce averages; × units / total: this pass's share (of the
                    # processes' combined mini-batch, or on-policy of the whole batch)
                    before_backward(self, c == chunks - 1 and (not cfg.on_policy or j == steps - 1))
                    self.manual_backward(loss * (part_units * world / total))
                    if not cfg.on_policy and c == chunks - 1:
                        if pending is not None:  # the last moment the policy is the one that sampled
                            pending.score_the_rest(self._old_logprobs)
                            pending = None
                        stepped = self._step(opt, critic_opt)
                        if m:  # a process with no rows here steps too (the all-reduce), but logs nothing
                            m.update(stepped)
                    for k, v in m.items():
                        agg.setdefault(k, []).append(v)
            if cfg.on_policy and batch_units:
                for k, v in self._step(opt, critic_opt).items():
                    agg.setdefault(k, []).append(v)
        return {k: sum(v) / len(v) for k, v in agg.items()}

    def _loss(self, mb: TrainingBatch,
              keep_logp: Callable[[torch.Tensor], None] | None = None) -> tuple[torch.Tensor, dict[str, float]]:
        """The objective on the rows ``mb`` (the policy's clipped surrogate, KL and entropy
        terms, and the critic's value loss when there is one) and its metrics;
        ``keep_logp`` is given the rows' log-probs, detached."""
        cfg = self.cfg
        # entropy is always logged; it needs a graph only when it is in the loss
        with self.policy.autocast(self.bf16):
            logp, ent = self.policy.token_logprobs(mb.input_ids, mb.attention_mask,
                                                   with_entropy=True, entropy_grad=cfg.entropy_coef > 0,
                                                   from_pos=first_loss_position(mb.loss_mask),
                                                   loss_mask=mb.loss_mask, **self._temperature)
        behaviour = mb.old_logp if mb.old_logp is not None else logp.detach()
        if keep_logp is not None:
            keep_logp(logp.detach())
        is_weights, gap = None, {}
        if mb.sampler_logp is not None:  # an engine with other kernels or precision sampled
            gap = sampler_mismatch(behaviour, mb.sampler_logp, mb.loss_mask, cfg.clip_low, cfg.clip_high)
            if cfg.tis_cap is not None:
                is_weights = truncated_is_weights(behaviour, mb.sampler_logp, cfg.tis_cap)
        loss, m = policy_loss(
            logp, behaviour, mb.advantages, mb.loss_mask,
            clip_low=cfg.clip_low, clip_high=cfg.clip_high, on_policy=cfg.on_policy,
            ref_logp=mb.ref_logp, kl_coef=cfg.kl_coef, kl_estimator=cfg.kl_estimator,
            entropy=ent, entropy_coef=cfg.entropy_coef, agg=cfg.agg, norm=cfg.agg_norm,
            is_weights=is_weights)
        m.update(gap)
        if self.critic is not None:
            # the critic's weights are its own: one backward of the sum trains both
            with self.policy.autocast(self.bf16):
                v = self.critic(mb.input_ids, mb.attention_mask).float()
            vf, vm = value_loss(v, mb.old_values, mb.returns, mb.loss_mask, cfg.critic.value_clip)
            loss = loss + vf
            m.update(vm)
        m["loss"] = float(loss.detach())
        return loss, m

    def _zero_loss(self) -> torch.Tensor:
        """A loss of 0 whose backward still meets the other processes' collectives: over the
        parameters under DDP, through a one-row forward under FSDP (whose gathers and
        reductions hang on the forward)."""
        if not is_sharded(self.model) and not zero3_params(self.model):
            return sum(p.sum() for p in self._trained_parameters()) * 0.0
        ids = torch.ones(1, 2, dtype=torch.long, device=self.policy.device)
        loss = self.policy.token_logprobs(ids, torch.ones_like(ids))[0].sum() * 0.0
        if self.critic is not None:
            loss = loss + self.critic(ids, torch.ones_like(ids)).sum() * 0.0
        return loss

    def _trained_parameters(self) -> Iterator[torch.nn.Parameter]:
        yield from self.policy.parameters()
        if self.critic is not None:
            yield from (p for p in self.critic.parameters() if p.requires_grad)

    @staticmethod
    def _zero_grad(opt, critic_opt) -> None:  # noqa: ANN001 - Lightning's optimizer wrappers
        opt.zero_grad()
        if critic_opt is not None:
            critic_opt.zero_grad()

    def _step(self, opt, critic_opt=None) -> dict[str, float]:  # noqa: ANN001 - Lightning's optimizer wrappers
        engine = engine_of(self)
        if engine is not None:  # DeepSpeed clips (objective.max_grad_norm) the gradients it has partitioned
            opt.step()
            return {"grad_norm": float(engine.get_global_grad_norm() or 0.0)}
        grad_norm = torch.nn.utils.clip_grad_norm_(list(self.policy.parameters()), self.cfg.max_grad_norm)
        opt.step()
        out = {"grad_norm": float(grad_norm)}
        if critic_opt is not None:
            assert self.critic is not None
            params = [p for p in self.critic.parameters() if p.requires_grad]
            out["vf_grad_norm"] = float(torch.nn.utils.clip_grad_norm_(params, self.cfg.max_grad_norm))
            critic_opt.step()
        return out

    def _reduce(self, value: float, op: str) -> float:
        # on the module's device: NCCL reduces CUDA tensors only
        return float(self.trainer.strategy.reduce(torch.tensor(float(value), device=self.device), reduce_op=op))
