"""Rule-based cold-start data for ISP/DTPO (paper 002, appendix E.2).

A gold logical form is decomposed into an ordered list of executable sub-forms:

* progressive reasoning — a chain ``a → b`` becomes ``a`` then ``a, b``;
* compositional reasoning — ``AND(A, B)`` becomes ``A``, ``B``, then ``A ∧ B``
  ("separate then merge"); COUNT, ARGMAX/ARGMIN, comparisons and time constraints come
  last, over the set they constrain.

Every sub-form is compiled to SPARQL (written with the ``ns:`` prefix, as a policy
would) and executed in the ``isp_dtpo`` environment, so observations are real; a
``<node>`` step explores each topic entity (and, optionally, each intermediate variable)
before it is first queried. Thoughts are templated (the paper has a strong LLM write
them; no such model runs here).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kgreason.envs.base import KGEnv, StepResult
from kgreason.envs.payloads import QueryResult
from kgreason.eval import f1
from kgreason.kb.schema import KBSchema
from kgreason.kb.sexpr import SExpr, parse_sexpr, sexpr_to_sparql
from kgreason.rankers.base import verbalize_relation
from kgreason.training.cold_start import episode_tokens
from kgreason.types import KBQASample, Trajectory

_ENTITY = re.compile(r"^(m|g)\.[0-9a-z_]+$")


def _is_entity(e: SExpr) -> bool:
    return isinstance(e, str) and bool(_ENTITY.match(e))


def _anchored(e: SExpr) -> bool:
    """Does the sub-form start from an entity (so it can run on its own)?"""
    if isinstance(e, str):
        return _is_entity(e)
    return any(_anchored(x) for x in e[1:])


def _topics(e: SExpr) -> list[str]:
    if isinstance(e, str):
        return [e] if _is_entity(e) else []
    return [t for x in e[1:] for t in _topics(x)]


def decompose_sexpr(sexpr: str | SExpr) -> list[SExpr]:
    """Ordered executable sub-forms of a logical form, the whole form last.

    >>> [str(s) for s in decompose_sexpr("(JOIN (R b) (JOIN (R a) m.1))")]
    ["['JOIN', ['R', 'a'], 'm.1']", "['JOIN', ['R', 'b'], ['JOIN', ['R', 'a'], 'm.1']]"]
    >>> len(decompose_sexpr("(AND (JOIN r1 m.1) (JOIN r2 m.2))"))
    3
    >>> len(decompose_sexpr("(JOIN (R r3) (AND (JOIN r1 m.1) (JOIN r2 m.2)))"))  # separate, merge in the last hop
    3
    """
    tree = parse_sexpr(sexpr) if isinstance(sexpr, str) else sexpr
    out: list[SExpr] = []

    def visit(e: SExpr, parent: str | None = None) -> None:
        if isinstance(e, str) or not _anchored(e):
            return
        head = e[0]
        if head in ("JOIN", "AND"):
            for x in e[1:]:
                if not _is_entity(x):
                    visit(x, head)
        elif head in ("COUNT", "ARGMAX", "ARGMIN", "TC"):
            visit(e[1], head)
        # an AND joined onward (a CVT's constraints) is merged by that JOIN: the merged
        # step would only list unnamed CVT nodes, and it would cost a turn
        if not (head == "AND" and parent == "JOIN") and e not in out:
            out.append(e)

    visit(tree)
    return out


def _relations(e: SExpr) -> list[str]:
    if isinstance(e, str):
        return [e] if "." in e and not _is_entity(e) else []
    if e[0] == "R":
        return _relations(e[1])
    return [r for x in e[1:] for r in _relations(x)]


def compact(sparql: str, schema: KBSchema, prefix: str = "ns") -> str:
    """Write ``<ns…local>`` IRIs as ``prefix:local`` (what a policy writes; the environment
    expands them again)."""
    ns = re.escape(schema.entity_ns)
    return re.sub(rf"<{ns}([A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?)>", rf"{prefix}:\1", sparql)


def _thought(step: SExpr, k: int, n: int, names: dict[str, str]) -> str:
    rels = ", ".join(verbalize_relation(r) for r in dict.fromkeys(_relations(step)))
    topics = ", ".join(names.get(t, t) for t in dict.fromkeys(_topics(step)))
    head = step[0] if isinstance(step, list) else ""
    what = {"COUNT": "count the entities", "ARGMAX": "keep the one with the largest value",
            "ARGMIN": "keep the one with the smallest value", "TC": "apply the time constraint",
            "AND": "combine the conditions"}.get(head, "follow the relation")
    return f"Step {k} of {n}: {what} ({rels}) from {topics}."


def isp_cold_start_messages(sample: KBQASample, schema: KBSchema, explore_variables: bool = False) -> list[str] | None:
    """The policy messages of one decomposed episode (the answer turn is added while
    executing, from what the last query returned). None if the sample has no S-expression."""
    if not sample.sexpr:
        return None
    steps = decompose_sexpr(sample.sexpr)
    names = {e.id: e.name or e.id for e in sample.topic_entities}
    msgs: list[str] = []
    explored: set[str] = set()
    for k, step in enumerate(steps, 1):
        for t in _topics(step):
            if t not in explored:
                explored.add(t)
                msgs.append(f"<think>I need the relations around {names.get(t, t)}.</think><node>{t}</node>")
        if explore_variables and k > 1 and isinstance(step, list) and step[0] == "JOIN" and not _is_entity(step[2]):
            msgs.append("<think>Explore what the previous query found.</think><node>?x</node>")
        sparql = compact(sexpr_to_sparql(step, schema), schema)
        msgs.append(f"<think>{_thought(step, k, len(steps), names)}</think><sparql>{sparql}</sparql>")
    return msgs


def gold_episode(env: KGEnv, sample: KBQASample, rng: object = None,
                 explore_variables: bool = False) -> Trajectory | None:
    """ISP/DTPO's scripted policy: the gold S-expression's decomposed steps executed in
    ``env``, then the answer copied from the last query's result (E.2).

    Returns:
        The trajectory when every step runs without error within the turn budget and the
        answer has F1 = 1, else ``None``.
    """
    msgs = isp_cold_start_messages(sample, env.kb.schema, explore_variables)
    if not msgs or len(msgs) + 1 > env.max_turns:
        return None
    env.reset(sample)
    last: StepResult | None = None
    for m in msgs:
        last = env.step(m)
        if last.done or last.error:
            return None
    payloads = last.payloads if last is not None else ()
    payload = next((p for p in reversed(payloads) if isinstance(p, QueryResult)), None)
    if payload is None:
        return None
    listed = ", ".join(_answer_labels(payload, env))
    # the thought copies the names out of the observation first, as KG-R1's oracle does:
    # the answer then repeats what the model has just written
    r = env.step(f"<think>The last query returned the answer: {listed}.</think><answer>\\boxed{{{listed}}}</answer>")
    if not r.done or env.trajectory is None or f1(env.trajectory.answer, sample.answers) < 1.0:
        return None
    return env.trajectory


def isp_sft_trajectories(samples: Sequence[KBQASample], make_env: Callable[[], KGEnv],
                         chat_ids: Callable[[list[dict[str, str]]], list[int]], tokenizer,
                         explore_variables: bool = False) -> list[Trajectory]:
    """Cold-start trajectories: :func:`gold_episode` of each question, as tokens.

    Keeps episodes whose answer has F1 = 1 within the env's turn budget; loss only on the
    policy's tokens (E.3: observations are masked so the model does not memorise the KG).
    """
    out = []
    for s in samples:
        traj = gold_episode(make_env(), s, explore_variables=explore_variables)
        if traj is not None:
            out.append(episode_tokens(traj, chat_ids, tokenizer))
    return out


def _answer_labels(payload: QueryResult, env: KGEnv) -> list[str]:
    ids = list(payload.values)
    names = env.kb.names([v for v in ids if _is_entity(v)])
    return [names.get(v, v) for v in ids]
