"""KnowCoder-A1's rewards (paper 003 §4.3.2 and §5.4.3).

The paper's reward is a format term plus an F-beta answer term whose beta follows an
easy-to-hard curriculum (0.5, then 1), total capped at 1 — a
:class:`~kgreason.rewards.CompositeReward` of ``knowcoder_format`` and two scheduled
``fbeta`` components (``kgreason/conf/reward/knowcoder_a1.yaml``). The process
penalty is the variant the paper ablates (it lowered F1).
"""

from __future__ import annotations

from typing import Any

from kgreason.kb.guard import schema_names
from kgreason.methods.knowcoder_a1.grammar import boxed_answer
from kgreason.rewards.base import RewardOutput, message_format, register
from kgreason.types import KBQASample, Trajectory

#: dotted schema names (relations, types) inside a tool call: ns:a.b.c, rel:x, or bare a.b.c


@register("knowcoder_format", action_space="knowcoder_a1", rollout="linear")
def knowcoder_format(trajectory: Trajectory, sample: KBQASample, correct: float = 0.1, wrong: float = 0.0,
                     **ctx: Any) -> RewardOutput:
    r"""``correct`` when the final answer holds a ``\boxed{}``, else ``wrong``.

    The values did not survive in our copy of the paper; 0.1 / 0 make the cap of 1 bind
    on a perfect answer (F-beta 1 + format 0.1), as a cap is only needed then.

    >>> from kgreason.types import Turn
    >>> t = Trajectory(sample_id="q", prompt=[], turns=[Turn(text=r'<answer>\boxed{["A"]}</answer>', is_answer=True)])
    >>> knowcoder_format(t, None).total, knowcoder_format(Trajectory(sample_id="q", prompt=[]), None).total
    (0.1, 0.0)
    """
    last = trajectory.turns[-1] if trajectory.turns else None
    ok = last is not None and last.is_answer and message_format(ctx, boxed_answer)(last.text)
    return RewardOutput(correct if ok else wrong)


def hallucinated_names(trajectory: Trajectory) -> list[str]:
    """Relations and classes a query used before any observation showed them: the
    predicates and ``a``-classes of its triple patterns (:func:`~kgreason.kb.guard.schema_names`,
    read with SPARQL's own terms, so MetaQA's plain ``directed_by`` counts as Freebase's
    dotted names do).

    >>> from kgreason.types import Action, Turn
    >>> seen = Turn(text="", observation="(?x, film.film.directed_by, 'Nolan')")
    >>> call = Turn(text="", actions=[Action("ExecuteSPARQL", kwargs={"sparql": "SELECT ?s WHERE { "
    ...     "?x ns:film.film.directed_by ?d . ?d ns:people.person.spouse ?s }"})])
    >>> hallucinated_names(Trajectory(sample_id="q", prompt=[], turns=[seen, call]))
    ['people.person.spouse']
    >>> metaqa = Turn(text="", actions=[Action("ExecuteSPARQL", kwargs={"sparql": "SELECT ?d WHERE { "
    ...     "<http://kg/e/Heat> <http://kg/r/starred_actors> ?d }"})])
    >>> hallucinated_names(Trajectory(sample_id="q", prompt=[], turns=[metaqa]))
    ['starred_actors']
    """
    shown = ""
    out: list[str] = []
    for turn in trajectory.turns:
        for a in turn.actions:
            sparql = a.kwargs.get("sparql") if a.kwargs else None
            if not isinstance(sparql, str):  # SearchTypes: a type *name* to look for, not a claim
                continue
            for name in schema_names(sparql):
                if name not in shown and name not in out:
                    out.append(name)
        shown += "\n" + (turn.observation or "")
    return out


@register("process_penalty", action_space="knowcoder_a1", rollout="linear")
def process_penalty(trajectory: Trajectory, sample: KBQASample, per_event: float = -0.2, floor: float = -0.5,
                    timeout_code: str = "KC_TIMEOUT", **_: Any) -> RewardOutput:
    """−0.2 per hallucinated relation or type and per timed-out query, at most −0.5 in
    all (paper 003 §5.4.3, the variant it ablates).

    >>> from kgreason.types import Turn
    >>> t = Trajectory(sample_id="q", prompt=[], turns=[Turn(text="", error="KC_TIMEOUT")] * 4)
    >>> process_penalty(t, None).total
    -0.5
    """
    events = len(hallucinated_names(trajectory)) + sum(t.error == timeout_code for t in trajectory.turns)
    return RewardOutput(max(floor, per_event * events), components={"events": float(events)})
