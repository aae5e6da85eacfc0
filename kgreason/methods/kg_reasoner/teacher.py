"""KG-Reasoner's cold start: gold-path episodes and error-correction pairs (paper 001, §4.2.3, App.).

A gold episode searches the topic entity inside one thought, reads the triples, names
the relation that leads on and searches the entity it reaches, hop by hop, then answers.
An error-correction episode takes one of those steps wrong first — it searches the
best-ranked neighbour that is *not* on a gold path — sees from its triples that it does
not lead on, backtracks (``<search> X, backtrack </search>``), and takes the right step:
the paper's "we intentionally introduce errors into correct reasoning chains and then
revise them back to the correct form".

With ``plan_hops`` (not in the paper) the first thought names the relations the question
follows, as the triples write them, and counts them, and every later thought opens with
the hop it is at, so that answering or searching on follows from a count in the episode's
own text rather than from the question alone. With ``hops_only`` as well the first thought
only counts: no relation is named before a search has shown it, so the plan's words are
the same on every KG.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kgreason.data.paths import GoldHop, gold_walk
from kgreason.declarations import declare
from kgreason.envs.base import KGEnv
from kgreason.errors import ConfigError
from kgreason.eval import f1
from kgreason.methods.kg_reasoner.space import KGReasonerState
from kgreason.training.cold_start import ColdStart, Skipped, episode_tokens
from kgreason.training.teachers import check_needs, check_probabilities, hop_at
from kgreason.types import KBQASample, Trajectory


def _chain(hops: list[GoldHop], n: int) -> list[GoldHop] | None:
    """One gold chain: from the topic entity, always the first gold successor."""
    out, centre = [], hops[0].centre
    for i in range(n):
        h = next((x for x in hops if x.hop == i and x.centre == centre), None)
        if h is None:
            return None
        out.append(h)
        centre = h.gold[0]
    return out


class KGReasonerPathWriter:
    """Writes one KG-Reasoner episode along a question's gold path.

    Args:
        p_error: chance that a multi-hop episode takes one wrong step and corrects it
            (an error-correction pair); the step is drawn uniformly among the hops that
            have a next hop.
        plan_hops: the first thought names the gold path's relations in order, directions
            left out ("It follows written_by, release_year: 2 hops."), and each later thought
            opens with the hop it decides ("Hop 2 of 2: So release_year gives the answer.");
            a wrong step and its backtrack keep the hop they went wrong at.
        hops_only: with ``plan_hops``, the first thought counts the hops without naming
            their relations ("It takes 2 hops."); the later thoughts are unchanged.

    Raises:
        ConfigError: ``p_error`` outside [0, 1], or ``hops_only`` without ``plan_hops``.
    """

    def __init__(self, p_error: float = 0.3, plan_hops: bool = False, hops_only: bool = False):
        check_probabilities(type(self).__name__, p_error=p_error)
        check_needs(type(self).__name__, ("hops_only", hops_only, "plan_hops", plan_hops))
        self.p_error = p_error
        self.plan_hops = plan_hops
        self.hops_only = hops_only

    def episode(self, env: KGEnv, sample: KBQASample, rng: random.Random) -> Trajectory | None:
        """Play ``sample`` on ``env``; ``None`` when the path cannot be written (no gold
        walk, or a gold entity the search does not show)."""
        hops = gold_walk(env.kb, sample)
        n = len(sample.relation_path or [])
        chain = _chain(hops, n) if hops else None
        if not chain:
            return None
        env.reset(sample)
        shown: dict[str, str] = {}  # id -> name as the triples wrote it
        topic = sample.topic_entities[0]
        shown[topic.id] = topic.name or topic.id
        # a wrong step needs a next hop to miss (only multi-hop questions get one) and a
        # backtrack to correct it (not in the "w/o backtracking" ablation)
        p_error = self.p_error if getattr(env.action_space, "backtracking", True) else 0.0
        wrong_at = rng.randrange(n - 1) if n > 1 and p_error and rng.random() < p_error else -1
        question = sample.question.strip().rstrip("?")
        call = env.action_space.search_call
        plan, planned = "", n if self.plan_hops else 0  # hop_at writes nothing for 0 planned hops
        if self.plan_hops:
            rels = [r.lstrip("~") for r in sample.relation_path or []]
            count = f"{n} hop{'s' * (n > 1)}"
            plan = f" It takes {count}." if self.hops_only else f" It follows {', '.join(rels)}: {count}."
        text = f"<think>The question: {question}.{plan} I start from {shown[topic.id]}. {call(shown[topic.id])}"
        r = env.step(text)
        explored = env.state.of(KGReasonerState)
        for i, h in enumerate(chain):
            if r.error:
                return None
            listed = explored.shown.get(h.centre, [])
            names = {nid: name for _, nid, name in listed[: env.action_space.top_k]}
            if h.gold[0] not in names:
                return None
            step = h.relation.lstrip("~")
            right = names[h.gold[0]]
            last = i == n - 1
            if i == wrong_at and not last:
                wrong = next((nid for _, nid, _ in listed[: env.action_space.top_k]
                              if nid not in h.reached and nid in names), None)
                if wrong is not None:
                    r = env.step(f"{hop_at(i, i, planned)}Maybe {names[wrong]} leads on. {call(names[wrong])}")
                    if r.error:
                        return None
                    r = env.step(f"{hop_at(i, i, planned)}These facts do not follow {step} from {names.get(h.centre, shown.get(h.centre))}; "
                                 f"{names[wrong]} was a wrong turn. {call(names[wrong], backtrack=True)}")
                    if r.error:
                        return None
            if last:
                break
            r = env.step(f"{hop_at(i, i, planned)}From {shown.get(h.centre, names.get(h.centre, h.centre))} the relation {step} leads to "
                         f"{right}. {call(right)}")
            shown[h.gold[0]] = right
        # the last hop may start from several gold entities (the films of an actor, the
        # CVT rows of a position): search each of them that the last search showed
        finals = [x for x in hops if x.hop == n - 1 and (n == 1 or x.centre in chain[-2].gold)]
        answers: dict[str, str] = {}
        for k, h in enumerate(finals):
            if k:
                prev = explored.shown.get(chain[-2].centre, [])
                label = next((name for _, nid, name in prev if nid == h.centre), None)
                if label is None or env.state.turn + 2 > env.max_turns:
                    return None
                r = env.step(f"{hop_at(n - 1, n - 1, planned)}{label} is another one. {call(label)}")
                shown[h.centre] = label
                if r.error:
                    return None
            listed = {nid: name for _, nid, name in explored.shown.get(h.centre, [])}
            if not all(g in listed for g in h.gold):
                return None
            answers.update((g, listed[g]) for g in h.gold)
        rel = finals[0].relation.lstrip("~")
        if len(sample.answers) == 1 and sample.answers[0].label == str(len(answers)) and \
                sample.answers[0].id not in answers:
            answer, why = str(len(answers)), f"{rel} gives {len(answers)} of them"
        else:
            answer, why = " | ".join(answers.values()), f"{rel} gives the answer"
        r = env.step(f"{hop_at(n - 1, n - 1, planned)}So {why}.</think>\n<answer>{answer}</answer>")
        assert env.trajectory is not None
        return env.trajectory if r.done else None


@declare(action_space="kg_reasoner", gold=("relation_path",))
class KGReasonerColdStart(ColdStart):
    """Gold-path episodes plus error-correction pairs as SFT data, kept when they answer
    with F1 = 1.

    Args:
        p_error: share of episodes written with one wrong step and its correction.
        plan_hops: the episodes plan and count their hops (:class:`KGReasonerPathWriter`).
        hops_only: the plan counts the hops without naming relations (:class:`KGReasonerPathWriter`).
        seed: the writer's random draws (which episodes, which step).
        limit, balance: as :class:`ColdStart`.

    Raises:
        ConfigError: no question's gold path could be written within the turn limit, or
            ``hops_only`` without ``plan_hops``.
    """

    def __init__(self, p_error: float = 0.3, plan_hops: bool = False, hops_only: bool = False, **kw):
        super().__init__(**kw)
        self.writer = KGReasonerPathWriter(p_error, plan_hops, hops_only)
        self.report: dict[str, int] = {}

    def build(self, samples: Sequence[KBQASample], make_env, policy) -> list[Trajectory]:
        rng = random.Random(self.seed)
        out: list[Trajectory] = []
        self.report = {"questions": len(samples), "written": 0, "corrections": 0}
        skipped = Skipped()
        for s in samples:
            if not s.relation_path:
                skipped.add("without relation_path (the gold field the path writer follows)", s.id)
                continue
            t = self.writer.episode(make_env(), s, rng)
            if t is None:
                skipped.add("whose gold path cannot be written within env.max_turns", s.id)
                continue
            if f1(t.answer, s.answers) < 1.0:
                skipped.add("whose gold path does not reach the gold answers in the KB (F1 < 1)", s.id)
                continue
            self.report["written"] += 1
            self.report["corrections"] += any(a.kwargs.get("backtrack") for x in t.turns for a in x.actions)
            out.append(episode_tokens(t, policy.chat_ids, policy.tokenizer))
        self.report["skipped"] = skipped.as_dict()
        if samples and not out:
            raise ConfigError(f"no gold-path episode could be written: {skipped.summary(len(samples))}; the "
                              "questions need relation paths, and env.max_turns must cover a search per hop")
        skipped.log(len(samples))
        return out

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(p_error={self.writer.p_error}, plan_hops={self.writer.plan_hops}, "
                f"hops_only={self.writer.hops_only}, "
                f"limit={self.limit}, seed={self.seed})")


def gold_episode(env: KGEnv, sample: KBQASample, rng: random.Random | None = None) -> Trajectory | None:
    """KG-Reasoner's scripted policy: the gold path searched hop by hop, no wrong step
    (``None``: the path cannot be written)."""
    return KGReasonerPathWriter(p_error=0.0).episode(env, sample, rng or random.Random(0))
