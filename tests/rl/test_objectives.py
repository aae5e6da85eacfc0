"""Advantage estimators and the policy loss on hand-worked 3-element tensors."""

from __future__ import annotations

import math

import pytest
import torch

from kgreason.rl import (
    AdvantageBatch,
    get_advantage,
    group_normalize,
    policy_loss,
    token_advantages,
)
from kgreason.rl.losses import AGGREGATIONS, KL_ESTIMATORS


def test_grpo_hand_worked_and_std_switch():
    b = AdvantageBatch(rewards=torch.tensor([1.0, 2.0, 3.0, 5.0, 5.0, 5.0]), index=torch.tensor([0, 0, 0, 1, 1, 1]))
    adv = torch.cat(get_advantage("grpo")(b))
    s = math.sqrt(2 / 3)
    assert torch.allclose(adv, torch.tensor([-1 / s, 0, 1 / s, 0, 0, 0]), atol=1e-4)
    dr = torch.cat(get_advantage("grpo")(b, norm_by_std=False))
    assert torch.allclose(dr, torch.tensor([-1.0, 0, 1, 0, 0, 0]))


def test_grpo_repeats_over_turns():
    b = AdvantageBatch(rewards=torch.tensor([0.0, 1.0]), index=torch.tensor([7, 7]), n_turns=[2, 3])
    out = get_advantage("grpo")(b, norm_by_std=False)
    assert [o.tolist() for o in out] == [[-0.5, -0.5], [0.5, 0.5, 0.5]]


def test_group_normalize_loop_and_vectorised_agree():
    g = torch.Generator().manual_seed(0)
    values = torch.randn(50, generator=g)
    index = torch.randint(0, 7, (50,), generator=g)
    fast = group_normalize(values, index)
    slow = torch.empty(50)
    for k in index.unique():
        sel = index == k
        v = values[sel]
        slow[sel] = (v - v.mean()) / (v.std(unbiased=False) + 1e-6)
    assert torch.allclose(fast, slow, atol=1e-5)


def test_kg_r1_turn_paper_pools_all_turns():
    b = AdvantageBatch(rewards=torch.zeros(2), index=torch.tensor([0, 0]),
                       turn_rewards=[torch.tensor([0.5, 1.0]), torch.tensor([0.5])],
                       global_rewards=torch.tensor([2.0, 0.0]))
    a, c = get_advantage("kg_r1_turn")(b, lam=1.0)
    g = torch.tensor([2.5, 3.0, 0.5])  # r_t + λ·R
    expected = (g - g.mean()) / (g.std(unbiased=False) + 1e-6)
    assert torch.allclose(torch.cat([a, c]), expected, atol=1e-5)
    assert torch.allclose(torch.cat([a, c]), torch.tensor([0.4629, 0.9258, -1.3887]), atol=1e-4)


def test_kg_r1_turn_code_mode():
    b = AdvantageBatch(rewards=torch.zeros(2), index=torch.tensor([0, 0]),
                       turn_rewards=[torch.tensor([0.5, 1.0]), torch.tensor([0.5])],
                       global_rewards=torch.tensor([2.0, 0.0]))
    a, c = get_advantage("kg_r1_turn")(b, mode="code")
    t, r = torch.tensor([0.5, 1.0, 0.5]), torch.tensor([2.0, 0.0])
    zt, zr = (t - t.mean()) / (t.std() + 1e-6), (r - r.mean()) / (r.std() + 1e-6)  # torch.std: n - 1
    expected = 0.5 * zt + zr[[0, 0, 1]]
    assert torch.allclose(torch.cat([a, c]), expected, atol=1e-5)
    assert torch.allclose(torch.cat([a, c]), torch.tensor([0.4184, 1.2845, -0.9958]), atol=1e-4)


def _verl_z(scores: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """verl's GRPO outcome advantage written out: per group torch.std, a singleton keeps its score."""
    out = torch.empty_like(scores)
    for k in index.unique():
        sel = index == k
        v = scores[sel].double()
        out[sel] = (v if len(v) == 1 else (v - v.mean()) / (v.std() + 1e-6)).float()
    return out


def test_kg_r1_turn_code_mode_matches_the_written_out_formula_on_random_groups():
    g = torch.Generator().manual_seed(1)
    for _ in range(200):
        n = int(torch.randint(1, 9, (1,), generator=g))
        index = torch.randint(0, 3, (n,), generator=g)
        lengths = torch.randint(1, 4, (n,), generator=g).tolist()
        turns = [torch.randint(0, 3, (k,), generator=g).float() / 2 for k in lengths]
        glob = torch.randint(0, 3, (n,), generator=g).float()
        b = AdvantageBatch(rewards=glob, index=index, turn_rewards=turns, global_rewards=glob)
        got = torch.cat(get_advantage("kg_r1_turn")(b, mode="code", turn_weight=0.5))
        turn_index = torch.repeat_interleave(index, torch.tensor(lengths))
        want = 0.5 * _verl_z(torch.cat(turns), turn_index) + torch.repeat_interleave(
            _verl_z(glob, index), torch.tensor(lengths))
        assert torch.allclose(got, want, atol=1e-5), (index, turns, glob)


@pytest.mark.parametrize("value", [5 / 3, 0.4, 0.1, 1e-3])
@pytest.mark.parametrize("size", [2, 5, 16])
def test_a_group_of_equal_rewards_gets_zero_advantage_from_every_estimator(value, size):
    idx = torch.zeros(size, dtype=torch.long)
    rewards = torch.full((size,), value)
    turns = [torch.full((2,), value) for _ in range(size)]
    b = AdvantageBatch(rewards=rewards, index=idx, turn_rewards=turns, global_rewards=rewards)
    for name, kw in [("grpo", {}), ("grpo", {"norm_by_std": False}), ("tree_step", {}),
                     ("kg_r1_turn", {"mode": "paper"}), ("kg_r1_turn", {"mode": "code"})]:
        adv = torch.cat(get_advantage(name)(b, **kw))
        assert adv.abs().max().item() == 0.0, (name, kw)


def test_token_advantages_follow_turn_index_and_mask():
    per_turn = [torch.tensor([1.0, 2.0]), torch.tensor([3.0])]
    turn_index = torch.tensor([[-1, 0, 0, 1, 1], [-1, -1, 0, 0, -1]])
    mask = torch.tensor([[0, 1, 0, 1, 1], [0, 0, 1, 1, 0]])
    assert token_advantages(per_turn, turn_index, mask).tolist() == [[0, 1, 0, 2, 2], [0, 0, 3, 3, 0]]


def ratios(r):
    logp = torch.zeros(1, 3)
    return logp, logp - torch.log(torch.tensor([r]))


def test_clip_symmetric_and_asymmetric():
    logp, old = ratios([1.0, 1.5, 0.5])
    adv, mask = torch.tensor([[1.0, 1.0, -1.0]]), torch.ones(1, 3)
    loss, m = policy_loss(logp, old, adv, mask, clip_low=0.2)
    assert loss.item() == pytest.approx((-1 - 1.2 + 0.8) / 3)
    assert m["clip_frac"] == pytest.approx(2 / 3)
    loss, _ = policy_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.6)
    assert loss.item() == pytest.approx((-1 - 1.5 + 0.8) / 3)


def test_on_policy_gradient_is_reinforce():
    logp = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    adv = torch.tensor([[1.0, -2.0, 0.5]])
    loss, m = policy_loss(logp, torch.full((1, 3), 99.0), adv, torch.ones(1, 3), on_policy=True)
    loss.backward()
    assert torch.allclose(logp.grad, -adv / 3) and m["ratio_mean"] == 1.0


def test_kl_estimators_and_kl_term():
    logp, ref = torch.tensor([-1.0]), torch.tensor([0.0])
    assert KL_ESTIMATORS.get("k1")(logp, ref).item() == -1.0
    assert KL_ESTIMATORS.get("k2")(logp, ref).item() == 0.5
    assert KL_ESTIMATORS.get("k3")(logp, ref).item() == pytest.approx(math.e - 2)
    lp = torch.tensor([[-1.0, 0.0, 0.0]])
    base, _ = policy_loss(lp, lp, torch.zeros(1, 3), torch.ones(1, 3))
    with_kl, m = policy_loss(lp, lp, torch.zeros(1, 3), torch.ones(1, 3), ref_logp=torch.zeros(1, 3), kl_coef=0.1)
    assert (with_kl - base).item() == pytest.approx(0.1 * (math.e - 2) / 3) and m["kl"] == pytest.approx((math.e - 2) / 3)


def test_entropy_bonus():
    lp = torch.zeros(1, 3)
    ent = torch.tensor([[1.0, 2.0, 3.0]])
    loss, m = policy_loss(lp, lp, torch.zeros(1, 3), torch.ones(1, 3), entropy=ent, entropy_coef=0.01)
    assert loss.item() == pytest.approx(-0.02) and m["entropy"] == 2.0


def test_dr_grpo_normaliser_is_a_constant_not_the_padded_length():
    loss, mask = torch.tensor([[1.0, 2.0, 0.0]]), torch.tensor([[1.0, 1.0, 0.0]])
    padded = torch.cat([loss, torch.zeros(1, 5)], -1), torch.cat([mask, torch.zeros(1, 5)], -1)
    agg = AGGREGATIONS.get("seq_mean_token_sum_norm")
    assert agg(loss, mask, norm=512).item() == agg(*padded, norm=512).item() == pytest.approx(3 / 512)


def test_aggregations_hand_worked():
    loss = torch.tensor([[1.0, 2.0, 9.0], [4.0, 9.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert AGGREGATIONS.get("token_mean")(loss, mask).item() == pytest.approx(7 / 3)
    assert AGGREGATIONS.get("seq_mean_token_mean")(loss, mask).item() == pytest.approx(2.75)
    with pytest.raises(ValueError, match="constant normaliser"):
        AGGREGATIONS.get("seq_mean_token_sum_norm")(loss, mask)  # the padded length is not a constant
    assert AGGREGATIONS.get("seq_mean_token_sum_norm")(loss, mask, norm=2).item() == pytest.approx((1.5 + 2) / 2)


def test_masked_tokens_do_not_count():
    logp = torch.tensor([[0.0, 0.0, 5.0]], requires_grad=True)
    loss, _ = policy_loss(logp, torch.zeros(1, 3), torch.tensor([[1.0, 1.0, 100.0]]), torch.tensor([[1, 1, 0]]))
    loss.backward()
    assert logp.grad[0, 2] == 0
