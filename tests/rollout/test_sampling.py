"""The inverse-CDF sampler draws from softmax(scores) after generate's warpers, and the
engine samples through it."""

from __future__ import annotations

import math

import torch

from kgreason.models import CausalLMPolicy
from kgreason.rollout import HFEngine
from kgreason.rollout.sampling import InverseCdfSampler, sampling_processors


def draw(processors, scores: torch.Tensor, n: int) -> torch.Tensor:
    out = []
    for _ in range(n):
        s = scores
        for proc in processors:
            s = proc(None, s)
        out.append(s.argmax(-1))
    return torch.cat(out)


def test_draws_follow_the_softmax_and_leave_one_finite_score():
    # softmax([log 1, log 2, log 7]) = [0.1, 0.2, 0.7]
    scores = torch.tensor([[0.0, math.log(2), math.log(7)]])
    out = InverseCdfSampler(torch.Generator().manual_seed(0))(None, scores.expand(4, -1))
    assert out.isfinite().sum(-1).tolist() == [1, 1, 1, 1] and out.max() == 0
    gen = torch.Generator().manual_seed(1)
    draws = draw([InverseCdfSampler(gen)], scores.expand(1000, -1), 20)
    freq = torch.bincount(draws, minlength=3).float() / draws.numel()
    # 20,000 draws: a frequency's standard error is at most 0.0035
    torch.testing.assert_close(freq, torch.tensor([0.1, 0.2, 0.7]), atol=0.015, rtol=0)


def test_masked_tokens_are_never_drawn_and_the_warpers_apply_in_generates_order():
    scores = torch.tensor([[1.0, -float("inf"), 0.5, 0.9, -2.0]]).expand(500, -1)
    gen = torch.Generator().manual_seed(2)
    assert not draw([InverseCdfSampler(gen)], scores, 4).eq(1).any()
    # top-k 2 keeps tokens 0 and 3; at temperature 0.1 token 0 (1.0 against 0.9) takes
    # e / (1 + e) = 0.73 of the draws
    warped = draw(sampling_processors(0.1, top_k=2, generator=gen), scores, 4)
    assert set(warped.tolist()) == {0, 3}
    assert abs(float(warped.eq(0).float().mean()) - math.e / (1 + math.e)) < 0.03
    # probabilities 0.39, 0, 0.24, 0.35, 0.02: top-p keeps the most likely tokens up to its mass
    assert draw(sampling_processors(top_p=0.3, generator=gen), scores, 2).eq(0).all()
    assert set(draw(sampling_processors(top_p=0.6, generator=gen), scores, 2).tolist()) == {0, 3}


def test_a_draw_rounded_up_to_the_total_takes_the_last_token_of_positive_probability(monkeypatch):
    # u = rand · total can round to the total itself; no index lies past the cumulative sum
    monkeypatch.setattr(torch, "rand", lambda *a, **k: torch.ones(a[0], 1))
    scores = torch.tensor([[0.0, 1.0, -float("inf"), -float("inf")], [0.0, 0.0, 0.0, 0.0]])
    assert InverseCdfSampler()(None, scores).argmax(-1).tolist() == [1, 3]


def test_the_engine_samples_reproducibly_and_top_k_one_is_greedy():
    policy = CausalLMPolicy.tiny(seed=0)
    prompts = [policy.chat_ids([{"role": "user", "content": f"question {i}"}]) for i in range(3)]
    torch.manual_seed(5)
    first = HFEngine(policy).generate(prompts, max_new_tokens=12)
    torch.manual_seed(5)
    again = HFEngine(policy).generate(prompts, max_new_tokens=12)
    assert [g.token_ids for g in first] == [g.token_ids for g in again]
    greedy = HFEngine(policy).generate(prompts, max_new_tokens=12, greedy=True)
    assert [g.token_ids for g in first] != [g.token_ids for g in greedy]  # it did sample
    top1 = HFEngine(policy, top_k=1).generate(prompts, max_new_tokens=12)
    assert [g.token_ids for g in top1] == [g.token_ids for g in greedy]
    # the recorded log-probs are still the untruncated distribution's (temperature 1)
    assert all(lp <= 0 for g in top1 for lp in g.logprobs) and any(lp < -1e-3 for g in top1 for lp in g.logprobs)
