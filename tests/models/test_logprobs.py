"""Chunked log-probs and entropies: values and gradients against the plain softmax."""

import pytest
import torch

from kgreason.models.logprobs import chunked_logprobs


def plain(h, w, y, t=1.0):
    logp = torch.log_softmax(h @ w.T / t, -1)
    return logp.gather(-1, y[:, None]).squeeze(-1), -(logp.exp() * logp).sum(-1)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("chunk", [1, 2, 5])
def test_values_and_gradients_match_the_plain_softmax(temperature, chunk):
    g = torch.Generator().manual_seed(0)
    h = torch.randn(5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(7, 4, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 6, 2, 2, 1])
    a, b = torch.randn(5, generator=g, dtype=torch.float64), torch.randn(5, generator=g, dtype=torch.float64)
    lp, ent = chunked_logprobs(h, w, y, temperature, entropy=True, chunk=chunk)
    lp_ref, ent_ref = plain(h, w, y, temperature)
    # the chunked path keeps its log-sum-exp in float32
    torch.testing.assert_close(lp, lp_ref.float(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ent, ent_ref.float(), atol=1e-5, rtol=1e-5)
    gh, gw = torch.autograd.grad((lp * a).sum() + (ent * b).sum(), (h, w))
    gh_ref, gw_ref = torch.autograd.grad((lp_ref * a).sum() + (ent_ref * b).sum(), (h, w))
    torch.testing.assert_close(gh, gh_ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(gw, gw_ref, atol=1e-5, rtol=1e-4)


def test_a_frozen_head_gets_no_gradient_and_the_log_probs_alone_backpropagate():
    h = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(6, 4)
    y = torch.tensor([5, 0, 3])
    lp, ent = chunked_logprobs(h, w, y, chunk=2)
    assert ent is None
    lp.sum().backward()
    p = torch.softmax(h.detach() @ w.T, -1)
    # d Σ log p_y / dh = Σ_rows (onehot(y) − p) W
    expected = (torch.nn.functional.one_hot(y, 6).float() - p) @ w
    torch.testing.assert_close(h.grad, expected, atol=1e-5, rtol=1e-5)


def test_under_bf16_autocast_the_products_run_in_bf16_and_the_result_is_float32():
    h = torch.randn(4, 8, requires_grad=True)
    w = torch.randn(10, 8)
    y = torch.tensor([1, 2, 3, 9])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lp, _ = chunked_logprobs(h, w, y, chunk=3)
    assert lp.dtype == torch.float32
    ref, _ = plain(h.detach().bfloat16().float(), w.bfloat16().float(), y)
    torch.testing.assert_close(lp.detach(), ref, atol=0.05, rtol=0.05)
    assert not torch.equal(lp.detach(), plain(h.detach(), w, y)[0])  # it did round to bf16
    lp.sum().backward()
    assert h.grad.dtype == torch.float32 and h.grad.abs().sum() > 0


def test_no_positions_give_empty_results_that_still_backpropagate():
    # a batch with no loss position still steps (a loss of 0 whose backward reaches the weights)
    h = torch.zeros(0, 4, requires_grad=True)
    lp, ent = chunked_logprobs(h, torch.randn(6, 4), torch.zeros(0, dtype=torch.long), entropy=True)
    assert lp.shape == ent.shape == (0,)
    lp.sum().backward()
    assert h.grad.shape == (0, 4)


@pytest.mark.parametrize("used", ["logprob", "entropy"])
def test_either_output_alone_backpropagates_its_own_gradient(used):
    # the RL update logs the entropy without differentiating it (its gradient is None, not
    # zeros); an entropy bonus alone differentiates only the entropy
    g = torch.Generator().manual_seed(1)
    h = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([4, 0, 1, 1])
    lp, ent = chunked_logprobs(h, w, y, 0.7, entropy=True, chunk=3)
    lp_ref, ent_ref = plain(h, w, y, 0.7)
    out, ref = (lp, lp_ref) if used == "logprob" else (ent, ent_ref)
    grads = torch.autograd.grad(out.sum(), (h, w))
    grads_ref = torch.autograd.grad(ref.sum(), (h, w))
    for got, want in zip(grads, grads_ref, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
