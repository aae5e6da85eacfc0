"""Each action space owns its grammar: a gold episode follows it, a broken one does not,
and the method's format reward asks the space (so renamed tags still score)."""

from __future__ import annotations

import random

import pytest
from hydra.utils import instantiate

from kgreason.config import compose_config
from kgreason.envs import make_env
from kgreason.eval import f1
from kgreason.registry import load_methods
from kgreason.rewards import get
from kgreason.testing import GOLD_POLICIES
from kgreason.types import Trajectory, Turn

#: each method's format reward, and how its format value is read off the output
FORMAT = {
    "kg_r1": ("kg_r1", lambda out: out.components["turn_format"]),
    "kbqa_r1": ("kbqa_r1_format", lambda out: out.total),
    "isp_dtpo": ("isp_format", lambda out: out.total),
    "knowcoder_a1": ("knowcoder_format", lambda out: out.total),
    "kg_reasoner": ("kg_reasoner_format", lambda out: out.total),
}


@pytest.fixture(scope="module")
def questions():
    cfg = compose_config(["method=kg_r1"]).data.copy()
    cfg.train_limit = 40
    return list(instantiate(cfg)[0])


def gold(method, questions, kb, **space_kw):
    load_methods()
    play = GOLD_POLICIES.get(method)
    for s in questions:
        env = make_env(method, kb, **space_kw)
        t = play(env, s, random.Random(0))
        if t is not None and f1(t.answer, s.answers) == 1.0:
            return env, s, t
    pytest.fail(f"the {method} gold policy answers none of {len(questions)} demo questions")


def broken(t: Trajectory) -> Trajectory:
    """The same episode with its thoughts' opening tags dropped."""
    turns = [type(x)(**{**x.__dict__, "text": x.text.replace("<think>", "")}) for x in t.turns]
    return Trajectory(t.sample_id, t.prompt, turns, t.answer_text, t.answer)


@pytest.mark.parametrize("method", list(FORMAT))
def test_a_gold_episode_follows_its_spaces_grammar_and_its_format_reward_asks_the_space(method, questions,
                                                                                         demo_oxigraph):
    env, s, t = gold(method, questions, demo_oxigraph)
    space = env.action_space
    texts = [x.text for x in t.turns]
    assert space.response_format_ok(texts)
    name, value = FORMAT[method]
    good = value(get(name)(t, s, space=space))
    assert good > 0
    if method == "knowcoder_a1":  # its grammar is the boxed answer
        bad_t = Trajectory(t.sample_id, t.prompt, [type(x)(**{**x.__dict__, "text": x.text.replace("\\boxed", "")})
                                                  for x in t.turns], t.answer_text, t.answer)
    else:
        bad_t = broken(t)
    assert not space.response_format_ok([x.text for x in bad_t.turns])
    assert value(get(name)(bad_t, s, space=space)) < good


def test_kg_reasoners_format_reward_scores_renamed_search_tags(questions, demo_oxigraph):
    """The reward reads renamed tags through the space (``search_tag=kg-search``)."""
    env, s, t = gold("kg_reasoner", questions, demo_oxigraph, search_tag="kg-search")
    assert "<kg-search>" in t.turns[0].text and "<search>" not in t.turns[0].text
    fmt = get("kg_reasoner_format")
    assert fmt(t, s, space=env.action_space).total == 1.0
    # a search outside the thought breaks the protocol: the space's grammar sees it, the
    # paper's tag names (a reward left to its own grammar) would not
    texts = [x.text for x in t.turns]
    texts[0] = "<think>a</think>" + texts[0].replace("<think>", "")
    texts[-1] = texts[-1].replace("</think>", "")
    outside = Trajectory(t.sample_id, t.prompt, [Turn(x) for x in texts], t.answer_text, t.answer)
    assert fmt(outside, s, space=env.action_space).total == 0.0
    assert fmt(outside, s).total == 1.0
