"""RL iterations on fixed experience, in one process or data parallel, then SFT steps (for
test_ddp.py).

``python tests/training/ddp_rl_worker.py OUT DEVICES [STRATEGY]``: for each case of ``CASES``, two
iterations of four questions each from the same initial weights; with ``DEVICES`` 2
Lightning's DDP (gloo, CPU; ``STRATEGY`` ``fsdp``: FSDP2, each process a shard of the
weights; ``zero2`` / ``zero3`` / ``zero3_offload``: DeepSpeed ZeRO on its CPU accelerator, PPO left out) runs two processes that take two questions each. The first
process saves ``{case: trained LoRA weights}`` to ``OUT``. In case ``masked:q1,q2`` those
questions bring no policy token, in ``none:q1,q2`` no trajectory: the second process has
nothing to learn from in the first iteration while the first has. Then two SFT steps on
eight one-question trajectories in batches of two: each process writes the per-question
losses it ends with to ``OUT.sft<rank>.json``. Last, two SFT steps on batches of four rows
(two a process): the first process saves the trained LoRA weights to ``OUT.sft_weights.pt``.
"""

from __future__ import annotations

import functools
import json
import random
import sys
from collections.abc import Iterator, Sequence

import lightning as L
import torch
from torch.utils.data import DataLoader, Sampler

from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.training import (
    LengthGroupedBatches,
    RLConfig,
    RLLitModule,
    SFTLitModule,
    UniformStream,
    collate,
    leave_process_group,
)
from kgreason.training.distributed import rank_and_world, share_cpu_threads
from kgreason.training.experience import Experience
from kgreason.training.sharding import full_state, held_weights
from kgreason.types import KBQASample, Trajectory


class FixedExperience:
    """Two trajectories per question drawn from its id: the same in any process.

    Lengths differ from question to question, so the processes hold different numbers of
    policy tokens (the loss weighting must make up for it).
    """

    def __init__(self, empty: str | None = None):
        self.kind, _, ids = (empty or ":").partition(":")
        self.empty = set(ids.split(","))

    def collect(self, batch: Sequence[KBQASample], make_env, step: int) -> Experience:
        samples, index, n_turns = [], [], []
        for g, q in enumerate(batch):
            if self.kind == "none" and q.id in self.empty:
                continue
            rng = random.Random(q.id)
            for _ in range(2):
                t = Trajectory(sample_id=q.id)
                t.append_tokens([rng.randrange(5, 400) for _ in range(rng.randrange(4, 12))], policy=False, turn=-1)
                turns = rng.randrange(1, 3)
                for k in range(turns):
                    t.append_tokens([rng.randrange(5, 400) for _ in range(rng.randrange(2, 15))],
                                    policy=not (self.kind == "masked" and q.id in self.empty), turn=k)
                    t.append_tokens([rng.randrange(5, 400) for _ in range(rng.randrange(1, 6))], policy=False, turn=k)
                t.reward = rng.random()
                if self.kind == "turn":  # KG-R1's turn-level advantage reads a reward a turn
                    t.turn_rewards = [rng.random() for _ in range(turns)]
                samples.append(t)
                index.append(g)
                n_turns.append(turns)
        return Experience(samples, index, n_turns, samples)


#: "micro": all rows, in passes of one row per process (micro_batch_size=1); "full": full
#: fine-tuning, the KL taken against a frozen copy (sharded too under FSDP); "turn:": KG-R1's
#: turn-level advantage; "ppo": GAE over a learned critic's values (GRPO is every other case's)
CASES = ("all", "masked:q1,q2", "none:q1,q2", "micro", "full", "turn:", "ppo")


def strategy(devices: int, kind: str) -> object:
    if devices == 1:
        return "auto"
    if kind == "fsdp":
        from lightning.pytorch.strategies import ModelParallelStrategy

        return ModelParallelStrategy(data_parallel_size=devices, tensor_parallel_size=1,
                                     save_distributed_checkpoint=False)
    if kind.startswith("zero"):  # DeepSpeed ZeRO-2 / ZeRO-3 (zero3_offload: states and weights in host memory)
        from kgreason.training.zero import deepspeed_strategy

        offload = kind.endswith("_offload")
        return deepspeed_strategy({"stage": int(kind[4]), "offload_optimizer": offload, "offload_parameters": offload},
                                  RLConfig().max_grad_norm)
    return "ddp"


def train(devices: int, case: str, kind: str = "ddp") -> tuple[L.Trainer, dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=None if case == "full" else LoraSettings(r=4, alpha=8))
    questions = [KBQASample(id=f"q{i}", question=f"question {i}") for i in range(8)]
    # mini_batch_size counts rows over all processes: one update per epoch here, as in one process
    config = RLConfig(mini_batch_size=8, ppo_epochs=2, lr=1e-3, kl_coef=0.01, iterations=2,
                      micro_batch_size=1 if case == "micro" else None,
                      advantage={"turn:": "kg_r1_turn", "ppo": "gae"}.get(case, "grpo"),
                      critic={"lr": 1e-3} if case == "ppo" else None)
    module = RLLitModule(policy, FixedExperience(None if case in ("all", "micro", "full", "ppo") else case),
                         lambda: None, config)
    trainer = L.Trainer(accelerator="cpu", devices=devices, strategy=strategy(devices, kind),
                        max_epochs=1, limit_train_batches=2, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(module, DataLoader(UniformStream(questions, batch_size=4), batch_size=None))
    weights = policy.adapter_state()  # whole, gathered from the shards under FSDP
    if module.critic is not None:  # the critic's trained weights too
        trained = {k: v.detach() for k, v in module.critic.state_dict().items() if "lora" in k or k.startswith("head")}
        weights.update({f"critic.{k}": v.clone() for k, v in full_state(trained).items()})
    return trainer, weights





def sft(devices: int, kind: str = "ddp") -> tuple[L.Trainer, dict[str, float], dict[str, int]]:
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8))
    trajs = []
    for i in range(8):
        rng = random.Random(i)
        t = Trajectory(sample_id=f"q{i}")
        t.append_tokens([rng.randrange(5, 400) for _ in range(6)], policy=False, turn=-1)
        t.append_tokens([rng.randrange(5, 400) for _ in range(rng.randrange(3, 9))], policy=True, turn=0)
        trajs.append(t)
    batches = LengthGroupedBatches([len(t.token_ids) for t in trajs], batch_size=2, seed=0)
    trainer, module = fit_sft(policy, trajs, batches, devices, kind)
    held, total = held_weights(policy.model)  # FSDP: this process's shard
    return trainer, module.question_losses, {"held": held, "total": total}


def fit_sft(policy: CausalLMPolicy, trajs: list[Trajectory], batches: Sampler[list[int]], devices: int,
            kind: str) -> tuple[L.Trainer, SFTLitModule]:
    """Two SFT steps on ``trajs`` in the batches ``batches`` gives each process."""
    loader = DataLoader(trajs, batch_sampler=batches,
                        collate_fn=functools.partial(collate, pad_id=policy.tokenizer.pad_token_id))
    module = SFTLitModule(policy, lr=1e-3)
    trainer = L.Trainer(accelerator="cpu", devices=devices, strategy=strategy(devices, kind),
                        max_steps=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, use_distributed_sampler=False)
    trainer.fit(module, loader)
    return trainer, module


class CombinedBatches(Sampler[list[int]]):
    """Batches of four rows in one process; each of two processes takes two rows of each."""

    def __iter__(self) -> Iterator[list[int]]:
        rank, world = rank_and_world()
        for start in (0, 4):
            rows = range(start, start + 4)
            yield list(rows) if world == 1 else list(rows[2 * rank : 2 * rank + 2])

    def __len__(self) -> int:
        return 2


def sft_on_combined_batches(devices: int, kind: str = "ddp") -> dict[str, torch.Tensor]:
    """Two SFT steps on rows whose policy turns are 2 to 12 tokens long: the trained LoRA weights."""
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8))
    trajs = []
    for i, n in enumerate((2, 12, 3, 4, 10, 2, 5, 3)):  # processes' token counts differ: 14 vs 7, 12 vs 8
        rng = random.Random(100 + i)
        t = Trajectory(sample_id=f"q{i}")
        t.append_tokens([rng.randrange(5, 400) for _ in range(5)], policy=False, turn=-1)
        t.append_tokens([rng.randrange(5, 400) for _ in range(n)], policy=True, turn=0)
        trajs.append(t)
    fit_sft(policy, trajs, CombinedBatches(), devices, kind)
    return policy.adapter_state()


def main(out: str, devices: int, kind: str = "ddp") -> None:
    share_cpu_threads(devices)
    weights = {}
    for case in CASES:  # Lightning starts the second process at the first fit; later fits reuse it
        if case == "ppo" and kind.startswith("zero"):
            continue  # DeepSpeed trains one optimiser; PPO's critic has its own
        trainer, weights[case] = train(devices, case, kind)
    if trainer.is_global_zero:
        torch.save(weights, out)
    trainer, losses, held = sft(devices, kind)
    combined = sft_on_combined_batches(devices, kind)
    if trainer.is_global_zero:
        torch.save(combined, f"{out}.sft_weights.pt")
    with open(f"{out}.sft{trainer.global_rank}.json", "w") as f:
        json.dump(losses, f)
    with open(f"{out}.held{trainer.global_rank}.json", "w") as f:
        json.dump(held, f)
    leave_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:4])
