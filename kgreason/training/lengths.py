"""Do the cold-start episodes fit the lengths the run trains and generates with?

Three limits cut an episode silently: SFT cuts a sequence longer than ``sft.max_len`` at
its end (where the answer is), a rollout ends an episode unanswered once the turns before
its answer have generated ``model.max_response_tokens``, and a turn stops at
``model.max_new_tokens``. A preset sized on one dataset can overrun on another (the
KnowCoder-A1 MetaQA episodes against the demo's lengths: docs/methods/knowcoder_a1.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

from kgreason.types import Trajectory


@dataclass(frozen=True)
class LengthFit:
    """How many episodes overrun each limit, and the longest of each measure.

    ``over_*`` count episodes; a ``None`` limit is never overrun. ``str()`` names each
    overrun limit, the config key that sets it and the smallest value that fits every
    episode.
    """

    max_len: int | None
    max_response_tokens: int | None
    max_new_tokens: int | None
    episodes: int
    over_max_len: int
    over_response: int
    over_turn: int
    longest: int
    longest_before_answer: int
    longest_turn: int

    @property
    def fits(self) -> bool:
        """No episode overruns any limit."""
        return not (self.over_max_len or self.over_response or self.over_turn)

    def __str__(self) -> str:
        parts = []
        if self.over_max_len:
            parts.append(f"{self.over_max_len} longer than sft.max_len={self.max_len} (SFT cuts their end, where the "
                         f"answer is; {self.longest} fits all)")
        if self.over_response:
            parts.append(f"{self.over_response} generate model.max_response_tokens={self.max_response_tokens} or more "
                         f"before their answer (a policy writing them ends unanswered; "
                         f"{self.longest_before_answer + 1} fits all)")
        if self.over_turn:
            parts.append(f"{self.over_turn} have a turn longer than model.max_new_tokens={self.max_new_tokens} "
                         f"({self.longest_turn} fits all)")
        return f"of {self.episodes} episodes: " + "; ".join(parts) if parts else f"all {self.episodes} episodes fit"


def length_fit(trajs: Sequence[Trajectory], max_len: int | None = None, max_response_tokens: int | None = None,
               max_new_tokens: int | None = None) -> LengthFit:
    """Count the tokenised episodes that a run's length limits would cut.

    Mirrors the rollout's budget (:class:`~kgreason.rollout.multiturn.MultiTurnRollout`):
    an episode is stopped once a turn that is not its last brings its generated tokens to
    ``max_response_tokens``, so only the turns before the last count against it.

    Args:
        trajs: episodes with token fields (e.g. a cold start's, after
            :func:`~kgreason.training.cold_start.episode_tokens`).
        max_len: SFT's sequence limit (prompt, turns and observations).
        max_response_tokens: the rollout's generated-token budget per episode.
        max_new_tokens: the rollout's limit per turn.

    >>> t = Trajectory("q")
    >>> t.append_tokens([1] * 10, policy=False, turn=-1)   # prompt
    >>> t.append_tokens([2] * 6, policy=True, turn=0)      # a query
    >>> t.append_tokens([3] * 8, policy=False, turn=0)     # its observation
    >>> t.append_tokens([2] * 4, policy=True, turn=1)      # the answer
    >>> fit = length_fit([t], max_len=24, max_response_tokens=6, max_new_tokens=8)
    >>> fit.over_max_len, fit.over_response, fit.over_turn, fit.longest, fit.longest_before_answer
    (1, 1, 0, 28, 6)
    >>> str(length_fit([t], max_len=28, max_response_tokens=7, max_new_tokens=5))
    'of 1 episodes: 1 have a turn longer than model.max_new_tokens=5 (6 fits all)'
    """
    over_len = over_resp = over_turn = 0
    longest = before_answer = longest_turn = 0
    for t in trajs:
        # policy tokens of each turn: a turn's tokens are contiguous (its text, then its observation)
        turns = [sum(m for m, _ in g) for k, g in groupby(zip(t.loss_mask, t.turn_index, strict=True),
                                                           key=lambda x: x[1]) if k >= 0]
        before, top = sum(turns[:-1]), max(turns, default=0)
        over_len += max_len is not None and len(t.token_ids) > max_len
        over_resp += max_response_tokens is not None and before >= max_response_tokens
        over_turn += max_new_tokens is not None and top > max_new_tokens
        longest = max(longest, len(t.token_ids))
        before_answer = max(before_answer, before)
        longest_turn = max(longest_turn, top)
    return LengthFit(max_len, max_response_tokens, max_new_tokens, len(trajs), over_len, over_resp, over_turn,
                     longest, before_answer, longest_turn)
