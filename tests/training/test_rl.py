"""RLLitModule end to end on the tiny model and the demo KG."""

from __future__ import annotations

import json

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from kgreason import rewards
from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.rollout import HFEngine, MultiTurnRollout
from kgreason.training import JsonlSink, LinearExperience, RLConfig, RLLitModule, UniformStream
from kgreason.types import KBQASample


def _fit(module: RLLitModule, questions: list[KBQASample], *, batch_size: int = 2, start: int = 0,
         ckpt_path: str | None = None, **trainer_kw) -> L.Trainer:
    """``module`` trained on CPU over ``questions`` in batches of ``batch_size`` (no logger,
    checkpoints or bars; ``trainer_kw`` adds to or overrides the Trainer's arguments)."""
    kw = {"accelerator": "cpu", "max_epochs": 1, "logger": False, "enable_checkpointing": False,
          "enable_progress_bar": False, "enable_model_summary": False} | trainer_kw
    trainer = L.Trainer(**kw)
    trainer.fit(module, DataLoader(UniformStream(questions, batch_size=batch_size, start=start), batch_size=None),
                ckpt_path=ckpt_path)
    return trainer


def _two_questions() -> list[KBQASample]:
    """Two placeholder questions: :class:`FixedExperience` gives each two fixed rows."""
    return [KBQASample(id=f"q{i}", question=f"question {i}") for i in range(2)]


@pytest.mark.parametrize("advantage,kwargs", [("grpo", {}), ("kg_r1_turn", {"mode": "paper"})])
def test_rl_steps_update_lora_and_log(tmp_path, demo_oxigraph, advantage, kwargs):
    torch.manual_seed(0)
    pol = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8))
    before = {n: p.detach().clone() for n, p in pol.model.named_parameters() if p.requires_grad}
    frozen = {n: p.detach().clone() for n, p in pol.model.named_parameters() if not p.requires_grad}
    ro = MultiTurnRollout(HFEngine(pol), pol.tokenizer, pol.chat_ids, max_new_tokens=12)
    sink = JsonlSink(tmp_path / "trajectories.jsonl")
    module = RLLitModule(pol, LinearExperience(ro, rewards.get("kg_r1"), n_rollouts=2),
                         lambda: make_env("kg_r1", demo_oxigraph, max_turns=2),
                         RLConfig(mini_batch_size=2, lr=1e-2, kl_coef=0.01, advantage=advantage,
                                  advantage_kwargs=kwargs, iterations=2),
                         sink=sink)
    samples = load_dataset("demo", split="train")[:6]
    trainer = _fit(module, samples, max_steps=-1, max_epochs=None)
    changed = [n for n, p in pol.model.named_parameters() if p.requires_grad and not torch.equal(p, before[n])]
    assert changed, "no LoRA weight moved"
    assert all(torch.equal(p, frozen[n]) for n, p in pol.model.named_parameters() if not p.requires_grad)
    m = trainer.callback_metrics
    for key in ("train/reward", "train/f1", "train/kl", "train/entropy", "train/clip_frac", "train/turns",
                "train/invalid_calls", "train/max_len_cut", "train/out_of_budget", "train/response_tokens", "reward/turn_format", "reward/retrieval"):
        assert key in m, key
    rows = [json.loads(line) for line in sink.path.read_text().splitlines()]
    assert len(rows) == 2 * 2 * 2 and {r["step"] for r in rows} == {0, 1}  # 2 iterations × 2 questions × N=2
    assert module.iteration == 2 and trainer.global_step == 4  # two optimizer updates per iteration
    assert all("turns" in r and "reward" in r for r in rows)


def test_rl_module_rejects_a_source_without_collect(demo_oxigraph):
    pol = CausalLMPolicy.tiny()
    with pytest.raises(TypeError, match="collect"):
        RLLitModule(pol, MultiTurnRollout(HFEngine(pol), pol.tokenizer, pol.chat_ids),  # a rollout, not a source
                    lambda: make_env("kg_r1", demo_oxigraph))


def test_bf16_rl_autocasts_the_training_passes_not_the_rollouts(demo_oxigraph):
    torch.manual_seed(0)
    pol = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8))
    before = {n: p.detach().clone() for n, p in pol.model.named_parameters() if p.requires_grad}
    ro = MultiTurnRollout(HFEngine(pol), pol.tokenizer, pol.chat_ids, max_new_tokens=12)
    source = LinearExperience(ro, rewards.get("kg_r1"), n_rollouts=2)
    module = RLLitModule(pol, source, lambda: make_env("kg_r1", demo_oxigraph, max_turns=2),
                         RLConfig(mini_batch_size=2, lr=1e-2, kl_coef=0.01, iterations=1, bf16=True))
    assert module.bf16 and not pol.bf16
    phase = ["train"]
    seen: list[tuple[str, torch.dtype]] = []
    collect = source.collect

    def collect_marked(*args, **kw):  # the rollouts' passes are marked, everything after is training
        phase[0] = "rollout"
        try:
            return collect(*args, **kw)
        finally:
            phase[0] = "train"

    source.collect = collect_marked
    proj = pol.model.get_decoder().layers[0].mlp.down_proj
    hook = proj.register_forward_hook(lambda mod, args, out: seen.append((phase[0], out.dtype)))
    _fit(module, load_dataset("demo", split="train")[:4], max_steps=-1, max_epochs=None)
    hook.remove()
    rollout = {d for p, d in seen if p == "rollout"}
    training = [d for p, d in seen if p == "train"]
    assert rollout == {torch.float32}
    # old and reference log-probs (2 chunks each) and 2 updates, all in bf16
    assert len(training) >= 6 and set(training) == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in pol.model.parameters())
    assert any(not torch.equal(p, before[n]) for n, p in pol.model.named_parameters() if p.requires_grad)


class GradsAtStep(L.Callback):
    """The policy's trainable weights' gradients at each optimiser step (``grads``, in order)."""

    def __init__(self, policy: CausalLMPolicy):
        self.policy = policy
        self.grads: list[dict[str, torch.Tensor]] = []

    def on_before_optimizer_step(self, trainer, module, optimizer):
        self.grads.append({n: p.grad.detach().clone() for n, p in self.policy.model.named_parameters()
                           if p.requires_grad and p.grad is not None})


def _one_on_policy_iteration(mini_batch_size: int, on_policy: bool) -> tuple[list[dict[str, torch.Tensor]],
                                                                           dict[str, torch.Tensor]]:
    """One RL iteration on 4 fixed rows: the adapters' gradients at each optimiser step, and the
    adapters after."""
    from tests.training.ddp_rl_worker import FixedExperience

    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    recorder = GradsAtStep(policy)
    config = RLConfig(mini_batch_size=mini_batch_size, ppo_epochs=1, lr=1e-2, kl_coef=0.0, on_policy=on_policy,
                      iterations=1)
    module = RLLitModule(policy, FixedExperience(), lambda: None, config)
    trainer = _fit(module, _two_questions(), limit_train_batches=1, callbacks=[recorder])
    assert len(recorder.grads) == trainer.global_step
    return recorder.grads, {n: p.detach().clone() for n, p in policy.model.named_parameters() if p.requires_grad}


def test_on_policy_is_one_optimiser_step_per_batch_whatever_the_mini_batches():
    """KnowCoder-A1's objective: the ratio is 1 only if every row is scored by the weights that
    sampled it, so mini-batches accumulate into one step (they used to step each, leaving the
    later ones off-policy with no correction). The gradients are compared, not Adam's step: its
    first step is about lr·sign(g), so a gradient entry near Adam's eps flips with the summation
    order of the host's kernels."""
    whole, _ = _one_on_policy_iteration(4, on_policy=True)
    split, after_split = _one_on_policy_iteration(1, on_policy=True)
    assert len(whole) == len(split) == 1
    scale = max(g.abs().max() for g in whole[0].values())
    assert scale > 0 and whole[0].keys() == split[0].keys()
    # four accumulated quarter-batches give the whole batch's mean gradient, not 4× it
    assert all(torch.allclose(whole[0][k], split[0][k], rtol=1e-4, atol=1e-5 * scale) for k in whole[0])
    off, after_off = _one_on_policy_iteration(1, on_policy=False)
    assert len(off) == 4
    assert not all(torch.allclose(after_split[k], after_off[k], atol=1e-4) for k in after_split)


def test_on_policy_with_several_epochs_is_refused():
    with pytest.raises(ValueError, match="on_policy=True is one update per batch; ppo_epochs=2"):
        RLLitModule(CausalLMPolicy.tiny(), LinearExperience(None, lambda *a, **k: None), lambda: None,
                    RLConfig(on_policy=True, ppo_epochs=2))


def test_warm_up_raises_the_rate_once_an_iteration_and_decay_spares_biases_and_norms(demo_oxigraph):
    """KBQA-R1's linear warm-up (30 % of 4 iterations: 1 iteration at rate 0, as verl's
    scheduler gives) and KG-R1's AdamW groups, on the tiny model with LoRA off."""
    torch.manual_seed(0)
    pol = CausalLMPolicy.tiny(lora=None)
    ro = MultiTurnRollout(HFEngine(pol), pol.tokenizer, pol.chat_ids, max_new_tokens=8)
    rates: list[float] = []

    class Rates(L.Callback):
        def on_train_batch_end(self, trainer, module, *args):
            rates.append(module.optimizers().param_groups[0]["lr"])

    module = RLLitModule(pol, LinearExperience(ro, rewards.get("kg_r1"), n_rollouts=2),
                         lambda: make_env("kg_r1", demo_oxigraph, max_turns=2),
                         RLConfig(mini_batch_size=4, lr=1e-3, kl_coef=0.0, iterations=4, warmup_ratio=0.5,
                                  decay_biases_and_norms=False))
    samples = load_dataset("demo", split="train")[:4]
    _fit(module, samples, batch_size=1, max_steps=-1, max_epochs=None, callbacks=[Rates()])
    # the rate after each iteration's step: warm-up over int(0.5 × 4) = 2 iterations
    assert rates == pytest.approx([5e-4, 1e-3, 1e-3, 1e-3])
    groups = module.optimizers().param_groups
    assert [g["weight_decay"] for g in groups] == [0.01, 0.0]
    assert all(p.ndim >= 2 for p in groups[0]["params"]) and all(p.ndim == 1 for p in groups[1]["params"])
    norms = {id(p) for n, p in pol.model.named_parameters() if "norm" in n}
    assert norms and norms <= {id(p) for p in groups[1]["params"]}


def test_ppo_with_a_critic_trains_both_and_its_advantages_are_whitened_gae():
    """KG-R1's "w PPO" row: the critic's values give GAE advantages over the policy tokens,
    and one backward of the summed losses trains the policy's adapters and the critic."""
    from kgreason.rl import gae, terminal_rewards, whiten
    from tests.training.ddp_rl_worker import FixedExperience

    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    config = RLConfig(mini_batch_size=4, lr=1e-2, kl_coef=0.0, iterations=6, advantage="gae",
                      critic={"lr": 1e-2, "value_clip": 10.0})
    module = RLLitModule(policy, FixedExperience(), lambda: None, config)
    before_pol = {n: p.detach().clone() for n, p in policy.model.named_parameters() if p.requires_grad}
    before_critic = {n: p.detach().clone() for n, p in module.critic.named_parameters() if p.requires_grad}
    seen = []
    make_batch = module.make_batch

    def keep(exp):
        batch = make_batch(exp)
        seen.append(batch)
        return batch

    module.make_batch = keep
    logged = []
    module.log_dict = lambda d, **kw: logged.append(dict(d))  # noqa: ARG005 - the rows, as the loggers get them
    _fit(module, _two_questions())
    assert module.iteration == 6
    first = seen[0]
    expected, returns = gae(terminal_rewards(first.rewards, first.loss_mask), first.old_values, first.loss_mask)
    assert torch.allclose(first.advantages, whiten(expected, first.loss_mask), atol=1e-5)
    assert torch.allclose(first.returns, returns) and torch.equal(first.old_values, torch.zeros_like(first.old_values))
    assert any(not torch.equal(p, before_pol[n]) for n, p in policy.model.named_parameters() if p.requires_grad)
    assert any(not torch.equal(p, before_critic[n]) for n, p in module.critic.named_parameters() if p.requires_grad)
    # the same trajectories every iteration: the critic fits their returns
    vf = [row["train/vf_loss"] for row in logged]
    assert vf[-1] < 0.5 * vf[0], vf
    assert "critic.head.weight" in module.state_dict()  # checkpoints carry the critic


@pytest.mark.parametrize("agg", ["token_mean", "seq_mean_token_mean"])
def test_micro_batches_accumulate_to_the_whole_mini_batchs_step(agg):
    """Passes of 1 or 3 rows give the gradient (and so the step) of one pass over the 4-row
    mini-batch: each pass is weighted by its share of the aggregation's units. Gradients are
    compared, not only the weights: Adam's first step is lr·sign(g), blind to a scale error."""
    from tests.training.ddp_rl_worker import FixedExperience

    def train(micro):
        torch.manual_seed(0)
        policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8, dropout=0.0))
        config = RLConfig(mini_batch_size=4, micro_batch_size=micro, lr=1e-2, kl_coef=0.01, agg=agg, iterations=1)
        module = RLLitModule(policy, FixedExperience(), lambda: None, config)
        recorder = GradsAtStep(policy)
        _fit(module, _two_questions(), callbacks=[recorder])
        return recorder.grads

    (whole,) = train(None)
    assert any(g.abs().sum() > 0 for g in whole.values())
    for micro in (1, 3):
        (split,) = train(micro)
        assert all(torch.allclose(whole[k], split[k], atol=1e-6, rtol=1e-4) for k in whole), micro


def test_a_micro_batch_of_no_rows_is_refused():
    with pytest.raises(ValueError, match="micro_batch_size must be a positive number"):
        RLConfig(micro_batch_size=0)


def test_a_ppo_run_resumed_from_its_checkpoint_ends_as_an_uninterrupted_one(tmp_path):
    """The critic and its optimiser state are in Lightning's checkpoint: a run of two
    iterations saves one after the first, and a new module resumed from it ends with the
    same policy adapters and critic as the run itself."""
    from tests.training.ddp_rl_worker import FixedExperience

    questions = _two_questions()
    ckpt = tmp_path / "first.ckpt"

    class SaveFirst(L.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if batch_idx == 0:
                trainer.save_checkpoint(ckpt)

    def module():
        torch.manual_seed(0)
        policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8, dropout=0.0))
        return RLLitModule(policy, FixedExperience(), lambda: None,
                           RLConfig(mini_batch_size=2, lr=1e-2, kl_coef=0.0, iterations=2, advantage="gae",
                                    critic={"lr": 1e-2}))

    def weights(m):
        return {k: v.detach().clone() for k, v in m.state_dict().items() if "lora_" in k or k.startswith("critic.")}

    whole = module()
    _fit(whole, questions, callbacks=[SaveFirst()])
    resumed = module()
    _fit(resumed, questions, start=1, ckpt_path=str(ckpt))
    assert whole.iteration == resumed.iteration == 2
    a, b = weights(whole), weights(resumed)
    assert "critic.head.weight" in a and a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(b[k], a[k], rtol=0, atol=1e-6, msg=k)
