"""save_pretrained exports: the merged model and one peft adapter equal to a run's adapter stack."""

from __future__ import annotations

import json

import pytest
import torch

from kgreason.models import CausalLMPolicy
from kgreason.models.export import combine_adapters, export_pretrained


def _randomise_adapters(policy: CausalLMPolicy, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in policy.model.named_parameters():
            if "lora_" in n:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)


def _logits(model, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny LoRA policy as after SFT (adapter merged) and RL (a second adapter), and its base."""
    base_dir = tmp_path_factory.mktemp("base")
    base = CausalLMPolicy.tiny(seed=0)
    base.model.save_pretrained(base_dir)
    policy = CausalLMPolicy.tiny(lora={"r": 4, "alpha": 8, "dropout": 0.0}, seed=0)
    _randomise_adapters(policy, 1)
    policy.merge_lora()  # SFT's adapter folded in, as run.py does before RL
    _randomise_adapters(policy, 2)
    return policy, base_dir


def test_the_merged_model_and_the_adapter_reproduce_the_policy(trained, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    policy, base_dir = trained
    ids = torch.tensor([[1, 5, 9, 200, 3000, 17]])
    want = _logits(policy.model, ids)
    written = export_pretrained(policy, tmp_path, base=base_dir)
    assert set(written) == {"merged", "adapter"}
    merged = AutoModelForCausalLM.from_pretrained(written["merged"])
    assert torch.allclose(_logits(merged, ids), want, atol=1e-4)
    cfg = json.loads((written["adapter"] / "adapter_config.json").read_text())
    assert (cfg["r"], cfg["lora_alpha"], cfg["base_model_name_or_path"]) == (8, 16, str(base_dir))
    adapted = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), written["adapter"])
    assert torch.allclose(_logits(adapted, ids), want, atol=1e-4)
    plain = AutoModelForCausalLM.from_pretrained(base_dir)
    assert not torch.allclose(_logits(plain, ids), want, atol=1e-4)  # the adapters did change the model


def test_without_a_base_only_the_merged_model_is_written(trained, tmp_path):
    policy, _ = trained
    assert set(export_pretrained(policy, tmp_path)) == {"merged"}
    assert not (tmp_path / "adapter").exists()


def test_combining_checks_the_stack():
    a = {"m.lora_A.default.weight": torch.ones(1, 2), "m.lora_B.default.weight": torch.ones(3, 1)}
    with pytest.raises(ValueError, match="no adapters"):
        combine_adapters([])
    with pytest.raises(ValueError, match="different modules"):
        combine_adapters([a, {"n.lora_A.default.weight": torch.ones(1, 2)}])
    with pytest.raises(ValueError, match="not a LoRA weight"):
        combine_adapters([{"m.weight": torch.ones(1)}])


def test_the_merged_model_stops_where_the_action_space_does(trained, tmp_path):
    """A plain ``generate`` on the export stops after a tool call, as the rollouts do."""
    from transformers import AutoModelForCausalLM, GenerationConfig

    policy, _ = trained
    written = export_pretrained(policy, tmp_path, stop_strings=("</kg-query>", "</answer>"))
    assert GenerationConfig.from_pretrained(written["merged"]).stop_strings == ["</kg-query>", "</answer>"]
    assert AutoModelForCausalLM.from_pretrained(written["merged"]).generation_config.stop_strings == \
        ["</kg-query>", "</answer>"]
