"""KG-Reasoner's gold-path and error-correction episodes on the demo KG."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from kgreason.data import load_dataset, sample_subset
from kgreason.envs import EnvFactory
from kgreason.errors import ConfigError
from kgreason.eval import f1
from kgreason.methods.kg_reasoner import KGReasonerActionSpace
from kgreason.methods.kg_reasoner.teacher import KGReasonerColdStart, KGReasonerPathWriter
from kgreason.models import CausalLMPolicy
from kgreason.rankers import DenseRanker
from kgreason.rewards import get


@pytest.fixture(scope="module")
def questions():
    return sample_subset([s for s in load_dataset("demo", split="train") if s.relation_path], 60, 0)


@pytest.fixture(scope="module")
def make(demo_oxigraph):
    return EnvFactory(KGReasonerActionSpace, demo_oxigraph, max_turns=6, ranker=DenseRanker())


def test_gold_episodes_answer_inside_one_thought(make, questions):
    w, rng = KGReasonerPathWriter(p_error=0.0), random.Random(0)
    written = [(q, t) for q in questions if (t := w.episode(make(), q, rng)) is not None]
    assert len(written) >= 45, len(written)
    fmt, ret = get("kg_reasoner_format"), get("kg_reasoner_retrieval")
    for q, t in written:
        assert f1(t.answer, q.answers) == 1.0, (q.question, t.answer_text)
        assert fmt(t, q).total == 1.0 and ret(t, q).total >= 0.2
        assert not any("backtrack" in x.text for x in t.turns)
        assert t.turns[0].text.startswith("<think>") and sum("<think>" in x.text for x in t.turns) == 1


def test_error_correction_episodes_take_a_wrong_step_back(make):
    multi = sample_subset([s for s in load_dataset("demo", split="train") if s.relation_path and len(s.relation_path) > 1],
                          40, 0)
    w, rng = KGReasonerPathWriter(p_error=1.0), random.Random(0)
    fixed = [t for q in multi if (t := w.episode(make(), q, rng)) is not None]
    pairs = [t for t in fixed if any("backtrack </search>" in x.text for x in t.turns)]
    assert len(pairs) >= 12, (len(fixed), len(pairs))
    for t in pairs:
        k = next(i for i, x in enumerate(t.turns) if "backtrack </search>" in x.text)
        wrong = t.turns[k - 1].actions[0].args[0]
        assert wrong in t.turns[k].text and "Backtracked to" in t.turns[k].observation
        assert t.turns[k + 1].actions and t.turns[k + 1].actions[0].args[0] != wrong  # then the right step


def test_the_builder_reports_and_refuses_empty_sets(make, questions):
    cs = KGReasonerColdStart(p_error=0.5, seed=1)
    trajs = cs(questions[:30], make, CausalLMPolicy.tiny())
    assert cs.report["written"] == len(trajs) > 0 and 0 < cs.report["corrections"] < len(trajs)
    assert all(len(t.token_ids) == len(t.loss_mask) and sum(t.loss_mask) > 0 for t in trajs)
    no_path = [q for q in load_dataset("demo", split="train") if not q.relation_path][:5]
    with pytest.raises(ConfigError, match="5 of 5 questions not used: 5 without relation_path"):
        cs(no_path, make, CausalLMPolicy.tiny())
    with pytest.raises(ConfigError, match="p_error=2"):
        KGReasonerPathWriter(p_error=2)


def test_balance_by_hops_resamples_to_equal_hop_counts(make, questions):
    """``balance: hops`` (preset=metaqa) groups by the sample field when no meta key has it."""
    plain = KGReasonerColdStart(p_error=0.0, seed=1)(questions, make, CausalLMPolicy.tiny())
    hops = {q.id: q.hops for q in questions}
    before = Counter(hops[t.sample_id] for t in plain)
    assert len(before) >= 2 and len(set(before.values())) > 1  # unequal to begin with
    out = KGReasonerColdStart(p_error=0.0, seed=1, balance="hops")(questions, make, CausalLMPolicy.tiny())
    after = Counter(hops[t.sample_id] for t in out)
    assert after.keys() == before.keys() and len(set(after.values())) == 1


def test_planned_episodes_count_their_hops_and_still_answer(make):
    """``plan_hops``: the first thought names the path's relations as the triples write them
    and counts them; every later thought opens with the hop it decides, a wrong step and its
    backtrack at the hop they went wrong at, and only hop n of n answers."""
    qs = sample_subset([s for s in load_dataset("demo", split="train") if s.relation_path], 40, 0)
    w, rng = KGReasonerPathWriter(p_error=0.5, plan_hops=True), random.Random(0)
    written = [(q, t) for q in qs if (t := w.episode(make(), q, rng)) is not None]
    assert len(written) >= 25 and {len(q.relation_path) for q, _ in written} >= {1, 2}
    fmt = get("kg_reasoner_format")
    corrected = 0
    for q, t in written:
        n = len(q.relation_path)
        rels = ", ".join(r.lstrip("~") for r in q.relation_path)
        assert f1(t.answer, q.answers) == 1.0 and fmt(t, q).total == 1.0
        assert f"It follows {rels}: {n} hop{'s' * (n > 1)}." in t.turns[0].text
        at = [int(x.text.split(" of ")[0].removeprefix("Hop ")) for x in t.turns[1:]]
        assert all(x.text.startswith(f"Hop {k} of {n}: ") for k, x in zip(at, t.turns[1:], strict=True))
        assert at == sorted(at) and at[-1] == n and set(at) == set(range(1, n + 1))
        assert t.turns[-1].text.startswith(f"Hop {n} of {n}: So ")
        back = [k for k, x in zip(at, t.turns[1:], strict=True) if "backtrack </search>" in x.text]
        corrected += bool(back)
        assert all(at.count(k) >= 3 for k in back)  # the wrong step, its backtrack, the right step
    assert corrected >= 3
    # without the option the episode is the paper's: no plan, no hop labels
    plain = KGReasonerPathWriter(p_error=0.0).episode(make(), written[0][0], random.Random(0))
    assert "It follows" not in plain.turns[0].text and not any(x.text.startswith("Hop ") for x in plain.turns)


def test_a_plan_that_only_counts_names_no_relation_before_a_search_shows_it(make):
    """``hops_only``: the first thought counts the hops ("It takes 2 hops.") and names none
    of the path's relations; the later thoughts are those of the naming plan, and the
    option without ``plan_hops`` is refused."""
    qs = sample_subset([s for s in load_dataset("demo", split="train") if s.relation_path], 20, 1)
    named = KGReasonerPathWriter(p_error=0.0, plan_hops=True)
    counted = KGReasonerPathWriter(p_error=0.0, plan_hops=True, hops_only=True)
    pairs = [(q, a, b) for q in qs if (a := named.episode(make(), q, random.Random(0))) is not None
             and (b := counted.episode(make(), q, random.Random(0))) is not None]
    assert len(pairs) >= 10 and {len(q.relation_path) for q, _, _ in pairs} >= {1, 2}
    for q, a, b in pairs:
        n = len(q.relation_path)
        first = b.turns[0].text.split("<search>")[0]
        assert f"It takes {n} hop{'s' * (n > 1)}." in first and "It follows" not in first
        assert not any(r.lstrip("~") in first for r in q.relation_path), first
        assert [x.text for x in b.turns[1:]] == [x.text for x in a.turns[1:]] and b.answer == a.answer
    with pytest.raises(ConfigError, match="hops_only=True needs plan_hops=True"):
        KGReasonerColdStart(hops_only=True)
