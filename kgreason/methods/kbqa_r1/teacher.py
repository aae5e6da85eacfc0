"""A scripted KBQA-R1 teacher for referenced rejection sampling (RRS).

The paper has Qwen-2.5-72B write the reasoning around the reference actions (paper 000
§IV-B); no such model runs here, so this teacher reads the reference the environment
shows it (:class:`~kgreason.methods.kbqa_r1.reference.ReferencedEnv`) and writes a short reason before each action; the
first reason also names the steps after it ("... I follow directed by from it. Then I
follow place of birth."), as a teacher planning from the reference would. It explores
the way a model leaning on the relation gate would: with some probability it writes a
relation by its last word only (``capital`` for ``location.country.capital``) or the
wrong way round, and lets RRCG snap or turn it (the note stays in the episode); the
filter keeps what still ends right. Without a reference (standard rejection sampling,
Table VII's baseline) it can only do what the question and the gate give it: from the
first candidate entity, it proposes the question's words as a relation, takes what the
gate selects, and answers with the results.
"""

from __future__ import annotations

import random
import re

from kgreason.declarations import declare
from kgreason.envs.base import KGEnv
from kgreason.kb.sexpr import to_text
from kgreason.methods.kbqa_r1.reference import ReferencedEnv
from kgreason.methods.kbqa_r1.space import reference_note, relation_arg, split_action_args
from kgreason.rankers.base import verbalize_relation
from kgreason.training.teachers import check_probabilities
from kgreason.types import KBQASample, Trajectory

_REF_LINE = re.compile(r"^\s*\d+\.\s*(\w+)\((.*)\)\s*$")
_STEP_REF = re.compile(r"^Reference action for step \d+: (\w+)\((.*)\)\s*$", re.M)


def _next_reference(text: str) -> tuple[str, str] | None:
    """The action a step-wise reference names last in ``text`` (name, arguments)."""
    found = _STEP_REF.findall(text)
    return found[-1] if found else None
_RESULTS = re.compile(r"Results \(\d+\): (.*?)(?: … \d+ more)?(?:</information>|$)", re.S)
_COUNT = re.compile(r"Count: ([^\s<]+)")
_EXPR_NUM = re.compile(r"expression(\d+)")
_STOP = {"what", "which", "who", "whom", "where", "when", "is", "are", "was", "were", "the", "a", "an", "of", "in",
         "did", "does", "do", "has", "have", "how", "many", "by", "to", "for", "on", "at", "and"}


def _words(rel: str) -> str:
    return verbalize_relation(rel).split(" ", 2)[-1] if rel.count(".") >= 2 else verbalize_relation(rel)


def _rel_words(arg: str) -> str:
    """A relation argument in words, its direction dropped: ``(R a.b.place_of_birth)`` → ``place of birth``."""
    rel = relation_arg(arg)
    plain = rel[1] if isinstance(rel, list) else rel
    return _words(plain if isinstance(plain, str) else to_text(plain))


def _attr_words(arg: str) -> str:
    """The last relation of an attribute argument in words."""
    return _words(to_text(relation_arg(arg)).split()[-1].strip(")"))


def _extreme(mode: str) -> str:
    """An Order mode in words.

    >>> _extreme("MAX"), _extreme("min")
    ('largest', 'smallest')
    """
    return "largest" if mode.upper() == "MAX" else "smallest"


@declare(action_space="kbqa_r1", gold=("sexpr", "relation_path"))
class ScriptedKBQAR1Teacher:
    """Writes KBQA-R1 episodes from the reference actions, one action per turn.

    Args:
        p_short: chance to write a relation by its last word only (the gate snaps it).
        p_flip: chance to write a Find_relation relation the wrong way round (the gate
            turns it).
        p_probe: chance to open with a probe: the question's words as the relation, then
            the gold relation read off the gate's candidate list (when the plan leaves a
            turn for it).
        name: the teacher's name in the acceptance report.
    """

    def __init__(self, p_short: float = 0.1, p_flip: float = 0.05, p_probe: float = 0.0, name: str = "scripted"):
        check_probabilities(type(self).__name__, p_short=p_short, p_flip=p_flip, p_probe=p_probe)
        self.p_short = p_short
        self.p_flip = p_flip
        self.p_probe = p_probe
        self.name = name

    # ------------------------------------------------------------- episodes
    def episode(self, env: KGEnv, sample: KBQASample, rng: random.Random) -> Trajectory:
        messages = env.reset(sample)
        hint = messages[-1]["content"].split("Reference actions", 1)
        plan = [m.groups() for m in map(_REF_LINE.match, hint[1].splitlines()) if m] if len(hint) > 1 else None
        first = _next_reference(messages[-1]["content"])
        if plan:
            self._referenced(env, sample, plan, rng)
        elif first:
            self._stepwise(env, sample, first, rng)
        else:
            self._unreferenced(env, sample)
        assert env.trajectory is not None
        return env.trajectory

    def _stepwise(self, env: KGEnv, sample: KBQASample, step: tuple[str, str], rng: random.Random) -> None:
        """Play the reference one action at a time, as each message names the next (the
        paper's step-wise RRS): no thought can name the steps after it."""
        names = {e.id: e.name or e.id for e in sample.topic_entities}
        obs = ""
        next_step: tuple[str, str] | None = step
        while next_step is not None and not env.done:
            name, args = next_step
            parts = split_action_args(args)
            written = self._explore(name, parts, rng)
            r = env.step(f"<think>{self._thought(name, parts, names)}</think>\n<action>{name}({', '.join(written)})</action>")
            obs, _, _ = r.observation.partition("\n\nReference")
            next_step = _next_reference(r.observation)
        if not env.done:
            self._answer(env, obs)

    def _referenced(self, env: KGEnv, sample: KBQASample, plan: list[tuple[str, str]], rng: random.Random) -> None:
        names = {e.id: e.name or e.id for e in sample.topic_entities}
        obs = ""
        shift, why = 0, ""
        # no draw at p_probe=0, so seeded episodes stay those of a teacher without probes
        if (self.p_probe and plan[0][0] == "Find_relation" and len(plan) + 2 <= env.max_turns
                and rng.random() < self.p_probe):
            shift, why = self._probe(env, sample, split_action_args(plan[0][1]))
        # the first thought names the steps after it, so a small policy sees in its own context
        # what is left to do: on the demo it then completes CVT constraints (three actions)
        # that it otherwise stops short of (docs/methods/kbqa_r1.md, Runs)
        later = [self._step(n, split_action_args(a)) for n, a in plan[1:]]
        if getattr(env.action_space, "single_turn", False):
            # the "w/o Multi-turn" ablation: the whole plan in one message, nothing observed
            written = [f"{n}({', '.join(self._explore(n, split_action_args(a), rng))})" for n, a in plan]
            thought = self._thought(plan[0][0], split_action_args(plan[0][1]), names)
            if later:
                thought += f" Then I {', then '.join(later)}."
            env.step(f"<think>{thought}</think>\n<action>{chr(10).join(written)}</action>")
            return
        for i, (name, args) in enumerate(plan):
            if env.done:
                return
            if shift:  # the probe opened an expression of its own: every later number moves up
                args = _EXPR_NUM.sub(lambda m: f"expression{int(m.group(1)) + shift}", args)
            parts = split_action_args(args)
            written = self._explore(name, parts, rng)
            thought = self._thought(name, parts, names)
            if i == 0 and later:
                thought += f" Then I {', then '.join(later)}."
            if why:
                thought, why = f"{why} {thought}", ""
            r = env.step(f"<think>{thought}</think>\n<action>{name}({', '.join(written)})</action>")
            obs = r.observation
        if not env.done:
            self._answer(env, obs)

    def _probe(self, env: KGEnv, sample: KBQASample, first: list[str]) -> tuple[int, str]:
        """Ask the gate with the question's words before the first relation, then read the
        gold relation off its candidate list (the way a policy can find a relation it does
        not know). Returns how many expressions the probe opened (0 or 1) and what the
        next thought says of the candidates."""
        source, gold = first
        words = self._question_words(sample, names=[e.name or "" for e in sample.topic_entities])
        r = env.step(f"<think>I am not sure of the relation; I try {' '.join(words)}.</think>\n"
                     f"<action>Find_relation({source}, {'_'.join(words)})</action>")
        gold_name = relation_arg(gold)
        gold_name = gold_name[1] if isinstance(gold_name, list) else gold_name
        shown = isinstance(gold_name, str) and gold_name in r.observation
        why = (f"The candidates include {gold_name}, which fits the question better." if shown
               else "That is not what the question asks.")
        return (0 if r.error else 1), why

    @staticmethod
    def _question_words(sample: KBQASample, names: list[str]) -> list[str]:
        words = [w for w in re.findall(r"[a-z]+", sample.question.lower()) if w not in _STOP]
        skip = {w for n in names for w in n.lower().split()}
        return [w for w in words if w not in skip][:3] or ["related"]

    def _unreferenced(self, env: KGEnv, sample: KBQASample) -> None:
        if not sample.topic_entities:
            env.step("<think>The question names no entity to start from.</think>\n<answer>unknown</answer>")
            return
        e = sample.topic_entities[0]
        words = self._question_words(sample, names=[e.name or ""])
        r = env.step(f"<think>The question is about {e.name or e.id}; I look for the relation that means "
                     f"{' '.join(words)}.</think>\n<action>Find_relation({e.id}, {'_'.join(words)})</action>")
        if not env.done:
            self._answer(env, r.observation)

    def _answer(self, env: KGEnv, obs: str) -> None:
        count = _COUNT.search(obs)
        found = _RESULTS.search(obs)
        if count:
            answer, why = count.group(1), "The count answers the question."
        elif found:
            answer = " | ".join(x.strip() for x in found.group(1).split(" | ") if x.strip(" |") and x.strip() != "…")
            why = "The last expression gives the answer."
        else:
            answer, why = "unknown", "The expression found nothing."
        env.step(f"<think>{why}</think>\n<answer>{answer}</answer>")

    # ------------------------------------------------------------ writing
    def _explore(self, name: str, parts: list[str], rng: random.Random) -> list[str]:
        out = list(parts)
        slot = {"Find_relation": 1, "Order": 2, "Compare": 1, "Time_constraint": 0}.get(name)
        if slot is None or slot >= len(out):
            return out
        rel = relation_arg(out[slot])
        if isinstance(rel, str) and rng.random() < self.p_short:
            out[slot] = rel.rsplit(".", 1)[-1]
        elif name == "Find_relation" and rng.random() < self.p_flip:
            out[slot] = to_text(rel[1]) if isinstance(rel, list) and rel[0] == "R" else f"(R {to_text(rel)})"
        elif name == "Find_relation" and isinstance(rel, list) and rel[0] == "R" and rng.random() < self.p_short:
            out[slot] = f"(R {rel[1]})" if isinstance(rel[1], list) else f"(R {str(rel[1]).rsplit('.', 1)[-1]})"
        return out

    @staticmethod
    def _thought(name: str, parts: list[str], names: dict[str, str]) -> str:
        if name == "Find_relation":
            src, words = parts[0], _rel_words(parts[1])
            if src.startswith("expression"):
                return f"From {src} I follow {words} to get closer to the answer."
            return f"The question mentions {names.get(src, src.split('^^')[0])}; I follow {words} from it."
        if name == "Merge":
            return f"The answer must satisfy both {parts[0]} and {parts[1]}, so I merge them."
        if name == "Order":
            return f"The question asks for the {_extreme(parts[0])} {_attr_words(parts[2])}."
        if name == "Compare":
            return f"Only members whose {_attr_words(parts[1])} is {parts[0]} {parts[2]} count."
        if name == "Time_constraint":
            return f"The question is about {parts[1]}, so I keep what held then."
        return "The question asks how many, so I count."

    @staticmethod
    def _step(name: str, parts: list[str]) -> str:
        """A later step of the plan, in a few words, for the first thought.

        >>> ScriptedKBQAR1Teacher._step("Find_relation", ["expression1", "(R people.person.place_of_birth)"])
        'follow place of birth'
        >>> ScriptedKBQAR1Teacher._step("Order", ["MAX", "expression1", "film.film.initial_release_date"])
        'take the largest initial release date'
        """
        if name == "Find_relation":
            return f"follow {_rel_words(parts[1])}"
        if name == "Order":
            return f"take the {_extreme(parts[0])} {_attr_words(parts[2])}"
        if name == "Compare":
            return f"keep {_attr_words(parts[1])} {parts[0]} {parts[2]}"
        if name == "Time_constraint":
            return f"keep what held in {parts[1]}"
        return {"Merge": "merge", "Count": "count"}.get(name, name.lower())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p_short={self.p_short}, p_flip={self.p_flip}, p_probe={self.p_probe})"


def gold_episode(env: KGEnv, sample: KBQASample, rng: random.Random | None = None) -> Trajectory | None:
    """KBQA-R1's scripted policy: the reference actions of the gold S-expression (or relation
    path), written without slips (``None``: the question has neither)."""
    note = reference_note(sample)
    if note is None:
        return None
    return ScriptedKBQAR1Teacher(p_short=0.0, p_flip=0.0).episode(ReferencedEnv(env, note), sample,
                                                                  rng or random.Random(0))
