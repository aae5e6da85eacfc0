"""Lock-step multi-turn rollouts: all trajectories of a batch advance together.

Each round generates one message for every unfinished trajectory in a single batched
call, parses and executes it in its environment, and appends the observation. Token
sequences are built as they go: prompt and observation tokens get loss mask 0, the
policy's tokens 1, and every token carries its turn index (-1 for the prompt).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kgreason.envs.base import KGEnv
from kgreason.rollout.engine import Engine
from kgreason.types import KBQASample, Trajectory


@dataclass
class RolloutStats:
    generated_tokens: int = 0
    llm_calls: int = 0
    kb_calls: int = 0
    turns: int = 0
    invalid_calls: int = 0
    #: episodes ended by the response budget
    truncated: int = 0
    gen_time_s: float = 0.0
    env_time_s: float = 0.0
    per_trajectory: list[dict[str, float]] = field(default_factory=list)

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.gen_time_s if self.gen_time_s else 0.0


#: the error of a turn whose observation the response budget kept from the policy
OUT_OF_BUDGET = "OUT_OF_BUDGET"


def unseen(traj: Trajectory) -> None:
    """Mark the last turn's observation as never seen: the response budget ended the
    episode after the environment ran the turn's call but before its result entered the
    context, so no reward may count what it revealed (a retrieval, a successful query)."""
    last = traj.turns[-1]
    last.observation, last.entities, last.relations = "", [], []
    last.error = OUT_OF_BUDGET
    traj.meta["truncated"] = "response_budget"


class MultiTurnRollout:
    """Runs episodes of environments (:class:`~kgreason.envs.KGEnv`) with a generation engine.

    Args:
        engine: any :class:`~kgreason.rollout.engine.Engine`.
        tokenizer: the policy's tokenizer (observations are tokenised with it).
        chat_ids: ``messages -> prompt token ids`` (the policy's chat template).
        max_new_tokens: per turn (KG-R1: 256).
        max_response_tokens: per episode, over all turns (the papers' "max response
            length"; KnowCoder-A1: 8192): an episode that has generated this many tokens
            ends without an answer. None: only the turn limit.
    """

    def __init__(self, engine: Engine, tokenizer, chat_ids, max_new_tokens: int = 256,
                 max_response_tokens: int | None = None):
        self.engine = engine
        self.tokenizer = tokenizer
        self.chat_ids = chat_ids
        self.max_new_tokens = max_new_tokens
        self.max_response_tokens = max_response_tokens

    def run(self, envs: Sequence[KGEnv], samples: Sequence[KBQASample], greedy: bool = False,
            progress: Callable[[int], None] | None = None) -> tuple[list[Trajectory], RolloutStats]:
        """Play one episode per environment in lock-step.

        Args:
            envs: one fresh environment per sample.
            samples: the questions.
            greedy: greedy decoding (evaluation) instead of sampling.
            progress: called after every lock-step turn with the turns it accounts for:
                one per episode that played it, plus the unused turns of each episode
                that ended early, so the calls add up to ``sum(env.max_turns)``.
        """
        if len(envs) != len(samples):
            raise ValueError("one environment per sample")
        stats = RolloutStats()
        trajs: list[Trajectory] = []
        for env, s in zip(envs, samples, strict=True):
            prompt = self.chat_ids(env.reset(s))
            assert env.trajectory is not None
            t = env.trajectory
            t.start_tokens()
            t.append_tokens(list(prompt), policy=False, turn=-1)
            trajs.append(t)
        active = list(range(len(envs)))
        generated = [0] * len(envs)
        turn = 0
        self.engine.clear_cache()
        try:
            while active:
                stop = sorted({s for i in active for s in envs[i].stop_sequences})
                t0 = time.perf_counter()
                gens = self.engine.generate([trajs[i].token_ids for i in active], stop=stop,
                                            max_new_tokens=self.max_new_tokens, greedy=greedy)
                gen_s = time.perf_counter() - t0
                stats.gen_time_s += gen_s
                stats.llm_calls += len(active)
                still = []
                for i, g in zip(active, gens, strict=True):
                    env, traj = envs[i], trajs[i]
                    traj.append_tokens(g.token_ids, policy=True, turn=turn, logprobs=g.logprobs)
                    stats.generated_tokens += len(g.token_ids)
                    t0 = time.perf_counter()
                    r = env.step(g.text)
                    stats.env_time_s += time.perf_counter() - t0
                    traj.turns[-1].n_generated_tokens = len(g.token_ids)
                    traj.turns[-1].gen_time_s = gen_s
                    stats.kb_calls += r.kb_calls
                    stats.invalid_calls += int(bool(r.error) and not r.done)
                    generated[i] += len(g.token_ids)
                    if not r.done and self.max_response_tokens is not None \
                            and generated[i] >= self.max_response_tokens:
                        stats.truncated += 1  # out of response budget: ends unanswered
                        unseen(traj)
                        continue
                    if not r.done:
                        obs = self.tokenizer(r.observation, add_special_tokens=False)["input_ids"]
                        traj.append_tokens(obs, policy=False, turn=turn)
                        traj.turns[-1].n_observation_tokens = len(obs)
                        still.append(i)
                if progress is not None:
                    ended = set(active) - set(still)
                    progress(len(active) + sum(max(0, envs[i].max_turns - turn - 1) for i in ended))
                active = still
                turn += 1
        finally:
            self.engine.clear_cache()  # the kept KV cache is large and tied to these weights
        stats.turns = sum(len(t.turns) for t in trajs)
        for t in trajs:
            t.check_token_fields()
            stats.per_trajectory.append({"turns": len(t.turns), "generated_tokens": sum(t.loss_mask),
                                         "kb_calls": sum(x.kb_calls for x in t.turns)})
        return trajs, stats
