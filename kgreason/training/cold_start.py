"""Cold-start SFT data: gold-path oracle trajectories with templated ``<think>`` text.

The KG-R1 paper trains RL from the instruct model directly (``sft=none``, paper-faithful).
A 135M model does not follow the tag protocol out of the box (the untrained SmolLM2 writes
plain prose: every turn is a format error), so kgreason's small presets first teach the
format on these trajectories, then run RL.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from typing import TypeVar

from kgreason.envs.base import KGEnv
from kgreason.envs.oracle import PathOracle, expressible
from kgreason.eval import f1
from kgreason.types import KBQASample, Trajectory


def oracle_sft_trajectories(
    samples: Sequence[KBQASample],
    make_env: Callable[[], KGEnv],
    chat_ids: Callable[[list[dict[str, str]]], list[int]],
    tokenizer,
    max_turns: int | None = None,
    oracle: PathOracle | None = None,
) -> list[Trajectory]:
    """Oracle episodes as token sequences (policy turns mask 1, prompt/observations 0).

    Keeps only episodes that answer correctly (F1 = 1) within the env's turn budget
    (or ``max_turns``); questions without a relation path are skipped.
    """
    oracle = oracle or PathOracle()
    out = []
    for s in samples:
        if not expressible(s):
            continue
        env = make_env()
        traj = oracle.messages(env, s)
        if f1(traj.answer, s.answers) < 1.0 or (max_turns and len(traj.turns) > max_turns):
            continue
        traj.token_ids, traj.loss_mask, traj.turn_index = [], [], []
        traj.append_tokens(chat_ids(traj.prompt), policy=False, turn=-1)
        for k, turn in enumerate(traj.turns):
            traj.append_tokens(tokenizer(turn.text, add_special_tokens=False)["input_ids"], policy=True, turn=k)
            if turn.observation:
                traj.append_tokens(tokenizer(turn.observation, add_special_tokens=False)["input_ids"],
                                   policy=False, turn=k)
        traj.check_token_fields()
        out.append(traj)
    return out



T = TypeVar("T")


def balance(items: Sequence[T], key: Callable[[T], object], seed: int = 0) -> list[T]:
    """Resample so every group (by ``key``) is as large as the median group.

    Large groups are subsampled and small ones repeated, so a training split that is half
    1-hop questions does not teach a small model to answer after one query. The result is
    shuffled.

    >>> out = balance(["a1", "a2", "a3", "a4", "b1", "c1", "c2"], key=lambda s: s[0])
    >>> sorted(s[0] for s in out)
    ['a', 'a', 'b', 'b', 'c', 'c']
    """
    rng = random.Random(seed)
    groups: dict[object, list[T]] = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    if not groups:
        return []
    target = int(statistics.median(len(g) for g in groups.values()))
    out: list[T] = []
    for g in groups.values():
        out += rng.sample(g, target) if len(g) >= target else [g[i % len(g)] for i in range(target)]
    rng.shuffle(out)
    return out
