"""KG-Reasoner's search-in-think action space on the demo KG (every backend for the
contract), with a scripted path follower through the lock-step rollout."""

from __future__ import annotations

import numpy as np
import pytest

from kgreason.data import load_dataset
from kgreason.data.paths import gold_walk
from kgreason.envs import make_env
from kgreason.eval import f1
from kgreason.methods.kg_reasoner import KGReasonerActionSpace
from kgreason.methods.kg_reasoner.space import (
    KGR_BAD_ARGUMENTS,
    KGR_FORMAT_ERROR,
    KGR_NO_BACKTRACKING,
    KGR_NOTHING_TO_BACKTRACK,
    KGR_UNKNOWN_ENTITY,
    KGReasonerState,
)
from kgreason.models import CausalLMPolicy
from kgreason.rankers import DenseRanker, GATEntityRanker
from kgreason.rollout import MultiTurnRollout
from kgreason.testing import check_env
from tests.rollout.test_rollout import ScriptedEngine


@pytest.fixture(scope="module")
def dostoevsky():
    return next(s for s in load_dataset("demo", split="dev") if s.question == "In which country was Fyodor Dostoevsky born?")


def test_the_contract_holds_on_every_backend(any_kb, dostoevsky):
    check_env(make_env("kg_reasoner", any_kb, max_turns=4), dostoevsky)


def test_search_shows_both_directions_and_resumes_inside_the_thought(demo_oxigraph, dostoevsky):
    env = make_env("kg_reasoner", demo_oxigraph, max_turns=5)
    prompt = env.reset(dostoevsky)[-1]["content"]
    assert "<search> entity </search>" in prompt and "Topic entities: Fyodor Dostoevsky" in prompt
    assert env.stop_sequences == ("</search>", "</answer>")
    r = env.step("<think>Where was he born? <search> Fyodor Dostoevsky </search>")
    assert r.error is None and r.observation.startswith("\n<triples>\n") and r.observation.endswith("</triples>\n")
    assert "(Fyodor Dostoevsky, people.person.place_of_birth, Moscow)" in r.observation
    assert "(Crime and Punishment, book.written_work.author, Fyodor Dostoevsky)" in r.observation  # incoming
    assert "</think>" not in r.observation and "<information>" not in r.observation
    # a name from the triples is searchable; the explored path grows
    r = env.step("Moscow is the city. <search> Moscow </search>")
    assert r.error is None and "(Moscow, location.location.containedby, Russia)" in r.observation
    assert env.state.of(KGReasonerState).tree.current.path() == [dostoevsky.topic_entities[0].id, demo_oxigraph.lookup("Moscow")[0]]
    r = env.step("So Russia. </think>\n<answer>Russia</answer>")
    assert r.done and f1(r.answer, dostoevsky.answers) == 1.0


def test_backtrack_offers_the_next_best_neighbours_in_rank_order(demo_oxigraph, dostoevsky):
    env = make_env("kg_reasoner", demo_oxigraph, max_turns=8, top_k=3)
    env.reset(dostoevsky)
    r = env.step("<think><search> backtrack </search>")
    assert r.error == KGR_NOTHING_TO_BACKTRACK
    first = env.step("<search> Fyodor Dostoevsky </search>")
    shown = [line for line in first.observation.splitlines() if line.startswith("(")]
    assert len(shown) == 3 and "more neighbours of Fyodor Dostoevsky not shown" in first.observation
    top = env.state.of(KGReasonerState).shown[dostoevsky.topic_entities[0].id]
    env.step(f"<search> {top[0][2]} </search>")  # the best candidate, then a dead end
    r = env.step(f"Wrong way. <search> {top[0][2]}, backtrack </search>")
    assert r.error is None and "Backtracked to Fyodor Dostoevsky; its next candidate:" in r.observation
    assert top[1][0] in r.observation
    r = env.step("<search> Backtrack=True </search>")  # the offer turned down: the next one
    assert top[2][0] in r.observation


def test_without_backtracking_as_table_2_ablates_it(demo_oxigraph, dostoevsky):
    from kgreason.methods.kg_reasoner.teacher import KGReasonerPathWriter

    env = make_env("kg_reasoner", demo_oxigraph, max_turns=8, backtracking=False)
    prompt = env.reset(dostoevsky)[-1]["content"]
    assert "backtrack" not in prompt and "<search> entity </search>" in prompt
    env.step("<think><search> Fyodor Dostoevsky </search>")
    r = env.step("<search> Fyodor Dostoevsky, backtrack </search>")
    assert r.error == KGR_NO_BACKTRACKING and not r.done
    # the cold start writes no error-correction episode it could not play
    two_hop = [s for s in load_dataset("demo", split="train") if len(s.relation_path or []) == 2][:10]
    import random

    writer, rng = KGReasonerPathWriter(p_error=1.0), random.Random(0)
    texts = ["".join(t.text for t in traj.turns) for s in two_hop
             if (traj := writer.episode(make_env("kg_reasoner", demo_oxigraph, max_turns=8, backtracking=False), s, rng))]
    assert texts and not any("backtrack" in t for t in texts)
    with_bt = [writer.episode(make_env("kg_reasoner", demo_oxigraph, max_turns=8), s, random.Random(0)) for s in two_hop]
    assert any("backtrack" in "".join(t.text for t in traj.turns) for traj in with_bt if traj)


def test_errors_are_observations(demo_oxigraph, dostoevsky):
    env = make_env("kg_reasoner", demo_oxigraph, max_turns=8)
    env.reset(dostoevsky)
    assert env.step("<think>I wonder.").error == KGR_FORMAT_ERROR
    r = env.step("<search> Atlantis </search>")
    assert r.error == KGR_UNKNOWN_ENTITY and "Atlantis" in r.observation and not r.done
    assert env.step("<search>  </search>").error == KGR_BAD_ARGUMENTS
    assert env.step("<search>" + "x" * 400 + "</search>").error == KGR_BAD_ARGUMENTS
    assert env.step('<search> "Fyodor Dostoevsky", backtrack=false </search>').error is None
    with pytest.raises(ValueError, match="search_tag='think'"):
        KGReasonerActionSpace(search_tag="think")
    with pytest.raises(ValueError, match="top_k=0"):
        KGReasonerActionSpace(top_k=0)


def test_tag_variants(demo_oxigraph, dostoevsky):
    env = make_env("kg_reasoner", demo_oxigraph, search_tag="kg-search", result_tag="facts")
    assert "<kg-search> entity </kg-search>" in env.reset(dostoevsky)[-1]["content"]
    assert env.stop_sequences[0] == "</kg-search>"
    r = env.step("<think><kg-search> Fyodor Dostoevsky </kg-search>")
    assert r.observation.startswith("\n<facts>\n") and env.step("<search> Moscow </search>").error == KGR_FORMAT_ERROR


def letters(texts):
    v = np.array([[t.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], "float32") + 1e-3
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_rankers_order_the_neighbours(demo_oxigraph, dostoevsky):
    env = make_env("kg_reasoner", demo_oxigraph, ranker=DenseRanker(), top_k=3)
    env.reset(dostoevsky)
    r = env.step("<think><search> Fyodor Dostoevsky </search>")
    assert "people.person.place_of_birth" in r.observation  # "born" ranks the birthplace in the top 3
    gat = make_env("kg_reasoner", demo_oxigraph, ranker=GATEntityRanker(encoder=letters, dim=26, hidden=8, heads=2))
    gat.reset(dostoevsky)
    r2 = gat.step("<think><search> Fyodor Dostoevsky </search>")
    assert r2.error is None and r2.kb_calls > r.kb_calls  # the GAT ranker reads the second ring too


def path_script(kb, q):
    """Search along the gold path inside one thought, then answer."""
    hops = gold_walk(kb, q)
    names = kb.names([h.centre for h in hops] + [g for h in hops for g in h.gold])
    texts, centre = [], hops[0].centre
    for i in range(len(q.relation_path)):
        h = next(x for x in hops if x.hop == i and x.centre == centre)
        texts.append(("<think>" if i == 0 else "") + f"Step {i + 1}. <search> {names[h.centre]} </search>")
        centre = h.gold[0]
    last = [g for h in hops if h.hop == len(q.relation_path) - 1 for g in h.gold]
    texts.append(f"Found it.</think>\n<answer>{' | '.join(names.get(g, g) for g in last)}</answer>")
    return texts


def test_search_in_think_through_the_lock_step_rollout(demo_oxigraph):
    tiny = CausalLMPolicy.tiny(seed=0)
    qs = [q for q in load_dataset("demo", split="dev") if q.meta["qtype"] in ("1-hop", "2-hop") and gold_walk(demo_oxigraph, q)][::20][:6]
    scripts = {}
    for q in qs:
        env = make_env("kg_reasoner", demo_oxigraph, max_turns=4)
        scripts[q.id] = {"prompt": tiny.chat_ids(env.reset(q)), "texts": path_script(demo_oxigraph, q)}
    ro = MultiTurnRollout(ScriptedEngine(tiny.tokenizer, scripts), tiny.tokenizer, tiny.chat_ids)
    trajs, stats = ro.run([make_env("kg_reasoner", demo_oxigraph, max_turns=4) for _ in qs], qs)
    assert all(f1(t.answer, q.answers) == 1.0 for t, q in zip(trajs, qs, strict=True)), [t.answer_text for t in trajs]
    for t in trajs:
        n_prompt = len(tiny.chat_ids(t.prompt))
        body = tiny.tokenizer.decode(t.token_ids[n_prompt:])
        # one thought holds every search and its triples: no chat turn opens after the prompt
        assert body.count("<think>") == 1 and body.index("<triples>") < body.index("</think>")
        assert "<|im_start|>" not in body
        inserted = [tok for tok, m in zip(t.token_ids[n_prompt:], t.loss_mask[n_prompt:], strict=True) if not m]
        assert "<triples>" in tiny.tokenizer.decode(inserted) and "<search>" not in tiny.tokenizer.decode(inserted)
    assert stats.invalid_calls == 0 and stats.kb_calls > 0
