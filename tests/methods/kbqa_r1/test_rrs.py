"""KBQA-R1's referenced rejection sampling (RRS) and its scripted teacher."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kgreason.data import load_dataset
from kgreason.envs import EnvFactory, make_env
from kgreason.errors import ConfigError
from kgreason.methods.kbqa_r1 import KBQAR1ActionSpace, ReferencedRejectionSampledColdStart
from kgreason.methods.kbqa_r1.reference import ReferencedEnv
from kgreason.methods.kbqa_r1.space import reference_actions, reference_note
from kgreason.methods.kbqa_r1.teacher import ScriptedKBQAR1Teacher
from kgreason.models import CausalLMPolicy
from kgreason.training.teachers import OpenAITeacher
from tests.conftest import FIXTURES
from tests.training.test_rejection_sampling import _Stub, stub  # noqa: F401 - the endpoint fixture


@pytest.fixture(scope="module")
def by_type():
    out: dict[str, list] = {}
    for s in load_dataset("demo", split="train"):
        out.setdefault(s.meta["qtype"], []).append(s)
    return out


@pytest.fixture(scope="module")
def policy():
    return CausalLMPolicy.tiny()


def test_the_reference_is_shown_but_not_kept(demo_oxigraph, by_type, stub, policy):  # noqa: F811
    q = by_type["2-hop"][0]
    actions = reference_actions(q.sexpr)
    _Stub.replies = [f"<think>step</think><action>{a}" for a in actions]  # the endpoint strips </action>
    final = next(x.label for x in q.answers)
    _Stub.replies.append(f"<think>so</think><answer>{final}")
    _Stub.seen = []
    builder = ReferencedRejectionSampledColdStart([OpenAITeacher(stub, model="big")], reference="all", attempts=1)
    (kept,) = builder([q], EnvFactory(KBQAR1ActionSpace, demo_oxigraph, max_turns=6), policy)
    first = _Stub.seen[0]["messages"][0]["content"]
    assert "Reference actions" in first and actions[0] in first  # the teacher saw the gold actions
    assert "Reference actions" not in kept.prompt[0]["content"]  # ... the kept episode does not
    assert q.question in kept.prompt[0]["content"]
    assert [t.text.endswith(("</action>", "</answer>")) for t in kept.turns] == [True] * (len(actions) + 1)
    _Stub.seen = []
    plain = ReferencedRejectionSampledColdStart([OpenAITeacher(stub, model="big")], reference="none", attempts=1)
    plain([q], EnvFactory(KBQAR1ActionSpace, demo_oxigraph, max_turns=6), policy)
    assert "Reference" not in _Stub.seen[0]["messages"][0]["content"]
    with pytest.raises(ConfigError, match="cold_start.reference=True: choose one of stepwise, all, none"):
        ReferencedRejectionSampledColdStart([], reference=True)


def test_the_stepwise_reference_names_the_next_gold_action_at_each_step(demo_oxigraph, by_type, stub, policy):  # noqa: F811
    """The paper's RRS (§IV-B1 step 2): at step t the teacher's messages hold a*_t alone."""
    q = by_type["2-hop"][0]
    actions = reference_actions(q.sexpr)
    _Stub.replies = [f"<think>step</think><action>{a}" for a in actions]
    _Stub.replies.append(f"<think>so</think><answer>{next(x.label for x in q.answers)}")
    _Stub.seen = []
    builder = ReferencedRejectionSampledColdStart([OpenAITeacher(stub, model="big")], attempts=1)
    (kept,) = builder([q], EnvFactory(KBQAR1ActionSpace, demo_oxigraph, max_turns=6), policy)
    for t, request in enumerate(_Stub.seen[:len(actions)]):
        shown = request["messages"][-1]["content"]
        assert shown.rstrip().endswith(f"Reference action for step {t + 1}: {actions[t]}")
        later = " ".join(m["content"] for m in request["messages"])
        assert all(a not in later for a in actions[t + 1:] if a != actions[t])  # no step ahead of its turn
    assert "every reference action is done" in _Stub.seen[len(actions)]["messages"][-1]["content"]
    assert "Reference" not in kept.prompt[0]["content"] + "".join(x.observation for x in kept.turns)


def test_acceptance_with_and_without_the_reference(demo_oxigraph, by_type, policy):
    qs = [s for v in by_type.values() for s in v[:8]]
    make = EnvFactory(KBQAR1ActionSpace, demo_oxigraph, max_turns=6)
    rates = {}
    for ref in ("stepwise", "all", "none"):
        b = ReferencedRejectionSampledColdStart([ScriptedKBQAR1Teacher()], reference=ref, attempts=1)
        b(qs, make, policy)
        rates[ref] = {t: r["rate"] for t, r in b.report["scripted"].items()}
    assert min(rates["all"].values()) >= 0.75  # every question type, with the gold actions
    assert min(rates["stepwise"].values()) >= 0.75  # ... shown one at a time
    assert rates["none"]["1-hop"] > 0.1  # one hop found through the gate alone
    for qtype in ("2-hop", "cvt", "count", "superlative", "comparison", "time"):
        assert rates["none"][qtype] == 0.0 < min(rates["all"][qtype], rates["stepwise"][qtype])


def test_the_teacher_leans_on_the_gate_and_recovers(demo_oxigraph, by_type):
    teacher = ScriptedKBQAR1Teacher(p_short=0.5, p_flip=0.3)
    notes = Counter()
    rng = random.Random(0)
    for s in by_type["2-hop"][:20] + by_type["cvt"][:20]:
        env = ReferencedEnv(make_env("kbqa_r1", demo_oxigraph, max_turns=6), reference_note(s))
        t = teacher.episode(env, s, rng)
        seen = "\n".join(x.observation for x in t.turns)
        notes["snapped"] += "is not a relation here; using" in seen
        notes["turned"] += "links the other way here" in seen
        notes["right"] += all(a.label in t.answer_text for a in s.answers)
    assert notes["snapped"] >= 5 and notes["turned"] >= 3 and notes["right"] >= 25, notes  # most slips are recovered by the gate


def test_the_first_thought_names_the_later_steps(demo_oxigraph, by_type):
    teacher = ScriptedKBQAR1Teacher(p_short=0.0, p_flip=0.0)
    for s in by_type["2-hop"][:5] + by_type["count"][:3]:
        env = ReferencedEnv(make_env("kbqa_r1", demo_oxigraph, max_turns=6), reference_note(s))
        t = teacher.episode(env, s, random.Random(0))
        first, second = t.turns[0].text, t.turns[1].text
        if s.meta["qtype"] == "count":
            assert "Then I count." in first and "<action>Count(" in second
        else:  # "... I follow directed by from it. Then I follow place of birth."
            later = second.split("I follow ", 1)[1].split(" to get closer")[0]
            assert f"Then I follow {later}." in first
        assert "Then I" not in second


def test_the_filters(demo_oxigraph, by_type, policy):
    q = next(s for s in by_type["type"] if len(s.answers) >= 2)

    class Partial:
        """Answers one of the gold answers, well formatted (or not)."""

        def __init__(self, think: bool):
            self.name, self.think = ("partial", think)

        def episode(self, env, sample, rng):
            env.reset(sample)
            for a in reference_actions(sample.sexpr):
                env.step(("<think>t</think>" if self.think else "") + f"<action>{a}</action>")
            env.step(f"<think>t</think><answer>{sample.answers[0].label}</answer>")
            return env.trajectory

    make = EnvFactory(KBQAR1ActionSpace, demo_oxigraph, max_turns=6)
    assert len(ReferencedRejectionSampledColdStart([Partial(True)], min_f1=0.5, attempts=1)([q], make, policy)) == 1
    with pytest.raises(ConfigError, match="passed the filter"):  # F1 < 0.9
        ReferencedRejectionSampledColdStart([Partial(True)], attempts=1)([q], make, policy)
    with pytest.raises(ConfigError, match="passed the filter"):  # no <think> before the actions
        ReferencedRejectionSampledColdStart([Partial(False)], min_f1=0.5, attempts=1)([q], make, policy)
    kept = ReferencedRejectionSampledColdStart([Partial(False)], min_f1=0.5, require_format=False,
                                               attempts=1)([q], make, policy)
    assert len(kept) == 1


def test_the_probe_reads_the_gold_relation_off_the_gate_and_renumbers(demo_oxigraph, by_type):
    from kgreason.rankers import DenseRanker

    teacher = ScriptedKBQAR1Teacher(p_short=0.0, p_flip=0.0, p_probe=1.0)
    ranker = DenseRanker()  # scores question words against relations well enough to accept some probes
    right = shifted = probed = 0
    qs = by_type["2-hop"][:15] + by_type["cvt"][:15] + by_type["superlative"][:10]
    for s in qs:
        env = ReferencedEnv(make_env("kbqa_r1", demo_oxigraph, max_turns=6, ranker=ranker), reference_note(s))
        t = teacher.episode(env, s, random.Random(0))
        probed += "I am not sure of the relation" in t.turns[0].text
        shifted += t.turns[0].error is None and "expression2" in "".join(x.text for x in t.turns[2:])
        right += all(a.label in (t.answer_text or "") for a in s.answers)
    assert probed == len(qs) and shifted >= 3  # an accepted probe moves every later number up
    assert right >= 0.9 * len(qs)


def test_metaqa_references_come_from_the_relation_path(policy):
    from kgreason.kb import load_metaqa_kb

    fixtures = FIXTURES / "metaqa_mini"
    kb = load_metaqa_kb(fixtures / "kb.txt")
    qs = load_dataset("metaqa", path=fixtures, split="dev", hops=(1, 2))
    assert qs and all(s.sexpr is None and s.relation_path for s in qs)
    b = ReferencedRejectionSampledColdStart([ScriptedKBQAR1Teacher(p_short=0.0, p_flip=0.0)], attempts=1)
    kept = b(qs, EnvFactory(KBQAR1ActionSpace, kb, max_turns=6), policy)
    assert len(kept) >= len(qs) // 2 and "Reference actions" not in kept[0].prompt[0]["content"]
