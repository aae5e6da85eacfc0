"""PPO's critic pieces on hand-worked tensors: GAE over multi-turn masks, whitening, the
clipped value loss, and a value model built from a policy."""

from __future__ import annotations

import pytest
import torch

from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.rl import ValueModel, gae, terminal_rewards, value_loss, whiten
from kgreason.training import RLConfig


def test_gae_discounts_over_policy_tokens_only():
    # γ = 0.5, λ = 1: two policy tokens, an observation token, then one more policy token
    rewards = torch.tensor([[0.0, 0.0, 0.0, 4.0]])
    values = torch.tensor([[1.0, 2.0, 100.0, 3.0]])
    mask = torch.tensor([[1, 1, 0, 1]])
    adv, ret = gae(rewards, values, mask, gamma=0.5, lam=1.0)
    # returns are discounted over the 3 policy tokens: 4·0.25, 4·0.5, 4
    assert torch.allclose(ret, torch.tensor([[1.0, 2.0, 0.0, 4.0]]))
    assert torch.allclose(adv, torch.tensor([[0.0, 0.0, 0.0, 1.0]]))


def test_gae_with_lambda_zero_is_the_one_step_error_and_rows_are_independent():
    rewards = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    values = torch.tensor([[0.5, 0.25, 0.0], [1.0, 1.0, 1.0]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    adv, _ = gae(rewards, values, mask, gamma=1.0, lam=0.0)
    assert torch.allclose(adv, torch.tensor([[-0.25, 0.75, 0.0], [0.0, 0.0, 1.0]]))


def test_terminal_reward_goes_on_the_last_policy_token_and_whitening_ignores_the_rest():
    r = terminal_rewards(torch.tensor([1.0, -1.0, 3.0]), torch.tensor([[1, 1, 0], [0, 1, 0], [0, 0, 0]]))
    assert r.tolist() == [[0.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 0.0]]
    w = whiten(torch.tensor([[2.0, 4.0, 50.0]]), torch.tensor([[1, 1, 0]]))
    assert torch.allclose(w, torch.tensor([[-1.0, 1.0, 0.0]]), atol=1e-6)


def test_value_loss_takes_the_larger_of_the_clipped_and_unclipped_errors():
    old = torch.zeros(1, 3)
    ret = torch.tensor([[1.0, 1.0, -1.0]])
    new = torch.tensor([[2.0, 0.25, 1.0]])
    loss, m = value_loss(new, old, ret, torch.ones(1, 3), clip=0.5)
    # token 1: unclipped (2−1)² = 1, clipped (0.5−1)² = 0.25 → 1; token 2: both 0.5625;
    # token 3: unclipped (1+1)² = 4, clipped (0.5+1)² = 2.25 → 4
    assert loss.item() == pytest.approx(0.5 * (1 + 0.5625 + 4) / 3)
    assert m["vf_clip_frac"] == 0.0
    loss_masked, _ = value_loss(new, old, ret, torch.tensor([[0, 1, 0]]), clip=0.5)
    assert loss_masked.item() == pytest.approx(0.5 * 0.5625)


@pytest.mark.parametrize("top_layers", [None, 1], ids=["all-layers", "top-layer"])
def test_value_model_from_a_lora_policy_trains_only_its_adapters_and_head(top_layers):
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8, top_layers=top_layers))
    with torch.no_grad():  # an SFT-moved adapter: the critic starts from the merged weights
        for n, p in policy.model.named_parameters():
            if "lora_B" in n:
                p.add_(0.1)
    critic = ValueModel.from_policy(policy)
    trainable = {n for n, p in critic.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or n.startswith("head.") for n in trainable)
    adapted = {n.split(".layers.")[1].split(".")[0] for n in trainable if "lora_" in n}
    assert adapted == ({"1"} if top_layers else {"0", "1"})  # the policy's layers (the demo preset: its top 12)
    ids = torch.randint(5, 300, (2, 7))
    v = critic(ids, torch.ones_like(ids))
    assert v.shape == (2, 7) and torch.equal(v, torch.zeros(2, 7))  # a zero head
    # the critic's backbone is a copy: the policy's weights are untouched by its training
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    opt = torch.optim.Adam([p for p in critic.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((critic(ids, torch.ones_like(ids))[:, 1:] - 1.0) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] == 1.0 and losses[-1] < 0.1
    assert all(torch.equal(p, before[n]) for n, p in policy.model.named_parameters())


def test_a_critic_needs_gae_and_gae_needs_a_critic():
    with pytest.raises(ValueError, match="advantage 'gae' and a critic go together"):
        RLConfig(advantage="gae")
    with pytest.raises(ValueError, match="advantage 'gae' and a critic go together"):
        RLConfig(critic={"lr": 1e-5})
    assert RLConfig(advantage="gae", critic={"lr": 2e-5}).critic.lr == 2e-5
