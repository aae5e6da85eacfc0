"""Rule-based cold start (ISP/DTPO E.2) and the hop curriculum (E.1)."""

from __future__ import annotations

import collections
import functools

import pytest

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.kb import FREEBASE
from kgreason.methods.isp_dtpo import decompose_sexpr, isp_sft_trajectories
from kgreason.methods.isp_dtpo.decompose import compact, isp_cold_start_messages
from kgreason.models import load_tokenizer
from kgreason.training import StagedStream, hop_level
from kgreason.types import KBQASample


def test_progressive_and_compositional_decomposition():
    chain = decompose_sexpr("(JOIN (R b) (JOIN (R a) m.1))")
    assert chain == [["JOIN", ["R", "a"], "m.1"], ["JOIN", ["R", "b"], ["JOIN", ["R", "a"], "m.1"]]]
    merged = decompose_sexpr("(AND (JOIN r.x.y m.1) (JOIN r.x.z m.2))")
    assert merged == [["JOIN", "r.x.y", "m.1"], ["JOIN", "r.x.z", "m.2"],
                      ["AND", ["JOIN", "r.x.y", "m.1"], ["JOIN", "r.x.z", "m.2"]]]
    # a class or a comparison is not a step on its own; COUNT/ARGMAX come after their set
    assert decompose_sexpr("(AND film.film (JOIN r.x.y m.1))")[0] == ["JOIN", "r.x.y", "m.1"]
    assert decompose_sexpr("(COUNT (JOIN r.x.y m.1))") == [["JOIN", "r.x.y", "m.1"], ["COUNT", ["JOIN", "r.x.y", "m.1"]]]
    assert len(decompose_sexpr("(ARGMAX (JOIN r.x.y m.1) r.x.d)")) == 2


def test_messages_explore_each_topic_before_querying_it():
    s = KBQASample(id="q", question="?", sexpr="(AND (JOIN r.x.y m.1) (JOIN r.x.z m.2))")
    msgs = isp_cold_start_messages(s, FREEBASE)
    kinds = ["node" if "<node>" in m else "sparql" for m in msgs]
    assert kinds == ["node", "sparql", "node", "sparql", "sparql"]
    assert "ns:r.x.y" in msgs[1] and "<http" not in msgs[1]


def test_compact_is_undone_by_the_environment():
    from kgreason.methods.isp_dtpo.space import expand_prefixes

    full = "SELECT ?x WHERE { <http://rdf.freebase.com/ns/m.1> <http://rdf.freebase.com/ns/a.b.c> ?x . }"
    assert expand_prefixes(compact(full, FREEBASE), {"ns": FREEBASE.entity_ns}) == full


@pytest.fixture(scope="module")
def cold_start(demo_oxigraph):
    tok = load_tokenizer()
    train = load_dataset("demo", split="train")
    picked = [s for s in train if s.meta["qtype"] in ("1-hop", "cvt", "count", "superlative", "2-hop")]
    by_type = collections.defaultdict(list)
    for s in picked:
        by_type[s.meta["qtype"]].append(s)
    samples = [s for v in by_type.values() for s in v[:4]]
    make = functools.partial(make_env, "isp_dtpo", demo_oxigraph, max_turns=6)
    chat = lambda m: list(tok.apply_chat_template(m, tokenize=True, add_generation_prompt=True)["input_ids"])  # noqa: E731
    return samples, isp_sft_trajectories(samples, make, chat, tok), tok


def test_cold_start_episodes_answer_correctly_with_loss_on_policy_text_only(cold_start):
    samples, trajs, tok = cold_start
    byid = {s.id: s for s in samples}
    assert len(trajs) >= 0.8 * len(samples)
    assert {byid[t.sample_id].meta["qtype"] for t in trajs} == {"1-hop", "cvt", "count", "superlative", "2-hop"}
    for t in trajs:
        t.check_token_fields()
        trained = tok.decode([i for i, m in zip(t.token_ids, t.loss_mask, strict=True) if m])
        assert "<information>" not in trained and "<relation>" not in trained
        assert trained.count("<think>") == len(t.turns) and "\\boxed{" in trained
        assert t.turns[-1].is_answer and not any(turn.error for turn in t.turns)
        # the answer turn names what the last query returned, then boxes the same names
        listed = t.turns[-1].text.split("The last query returned the answer: ", 1)[1].split(".</think>", 1)[0]
        assert listed and t.turns[-1].text.endswith(f"\\boxed{{{listed}}}</answer>")


def test_hop_curriculum_adds_harder_levels_in_order():
    qs = [KBQASample(id=f"{h}-{i}", question="?", hops=h) for h in (1, 2, 3) for i in range(5)]
    assert [hop_level(q) for q in qs[::5]] == [0, 1, 2]
    stream = iter(StagedStream(qs, batch_size=4, stage_iterations=3, seed=0))
    levels = [max(q.hops for q in next(stream)) for _ in range(12)]
    assert max(levels[:3]) == 1 and max(levels[3:6]) <= 2 and 3 in levels[6:]
    assert StagedStream(qs, 4, 3).stage(100) == 2
    only_hard = StagedStream([q for q in qs if q.hops == 3], 2, 1)
    assert only_hard.stage(0) == 2  # empty easier levels are skipped


def test_the_decomposed_cold_start_names_the_missing_gold_field(demo_oxigraph):
    """Questions without logical forms: the error says so (it used to blame max_turns)."""
    from kgreason.envs import make_env
    from kgreason.errors import ConfigError
    from kgreason.methods.isp_dtpo import DecomposedColdStart
    from kgreason.types import Entity, KBQASample

    qs = [KBQASample(f"q{i}", "Who directed it?", answers=[Entity("m.1", "X")]) for i in range(3)]
    with pytest.raises(ConfigError, match=r"cold_start=decomposed needs gold S-expressions \(sexpr\); none of the 3 "
                                          r"questions has one \(e.g. q0, q1, q2\)"):
        DecomposedColdStart().build(qs, lambda: make_env("isp_dtpo", demo_oxigraph), policy=None)
