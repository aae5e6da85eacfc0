"""KG-R1's cold-start data: gold-path oracle episodes with templated ``<think>`` text.

The paper runs RL from the instruct model (``cold_start=none``). A 135M model does not
follow the tag protocol out of the box (the untrained SmolLM2 writes plain prose: every
turn is a format error), so kgreason's small presets first teach the format on these
trajectories, then run RL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kgreason.declarations import declare
from kgreason.envs.base import KGEnv
from kgreason.errors import ConfigError
from kgreason.eval import f1
from kgreason.methods.kg_r1.oracle import PathOracle, expressible
from kgreason.training.cold_start import ColdStart, Skipped, episode_tokens
from kgreason.types import KBQASample, Trajectory


def oracle_sft_trajectories(
    samples: Sequence[KBQASample],
    make_env: Callable[[], KGEnv],
    chat_ids: Callable[[list[dict[str, str]]], list[int]],
    tokenizer,
    max_turns: int | None = None,
    oracle: PathOracle | None = None,
    skipped: Skipped | None = None,
) -> list[Trajectory]:
    """Oracle episodes as token sequences (policy turns mask 1, prompt/observations 0).

    Keeps only episodes that answer correctly (F1 = 1) within the env's turn budget
    (or ``max_turns``); questions without a relation path or topic entity are skipped.
    ``skipped`` records each unused question with its reason.
    """
    oracle = oracle or PathOracle()
    skipped = skipped if skipped is not None else Skipped()
    out = []
    for s in samples:
        if not s.relation_path:
            skipped.add("without relation_path (the gold field the oracle follows)", s.id)
            continue
        if not expressible(s):
            skipped.add("without a topic entity", s.id)
            continue
        env = make_env()
        traj = oracle.messages(env, s)
        if f1(traj.answer, s.answers) < 1.0:
            skipped.add("whose gold path does not reach the gold answers in the KB (F1 < 1)", s.id)
            continue
        if max_turns and len(traj.turns) > max_turns:
            skipped.add(f"whose path needs more than max_turns={max_turns} turns", s.id)
            continue
        out.append(episode_tokens(traj, chat_ids, tokenizer))
    return out



@declare(action_space="kg_r1", gold=("relation_path",))
class OracleColdStart(ColdStart):
    """Gold-path oracle episodes (:class:`~kgreason.methods.kg_r1.oracle.PathOracle`) as SFT data.

    Raises:
        ConfigError: no oracle episode fits the environment's turn limit.
    """

    def __init__(self, oracle: PathOracle | None = None, **kw):
        super().__init__(**kw)
        self.oracle = oracle or PathOracle()

    def build(self, samples, make_env, policy) -> list[Trajectory]:
        skipped = Skipped()
        trajs = oracle_sft_trajectories(samples, make_env, policy.chat_ids, policy.tokenizer, oracle=self.oracle,
                                        skipped=skipped)
        self.report = {"questions": len(samples), "episodes": len(trajs), "skipped": skipped.as_dict()}
        if samples and not trajs:
            raise ConfigError(f"no oracle episode (max_turns={make_env().max_turns}): {skipped.summary(len(samples))}; "
                              "use questions with relation paths, raise env.max_turns, or use cold_start=none")
        skipped.log(len(samples))
        return trajs
