"""Where a run's policy lives between its stages: the trainer settings → a device, and the
policy's move there (the CUDA side runs in the ``gpu`` tests)."""

from __future__ import annotations

import pytest
import torch

from kgreason.config import compose_config, validate_config
from kgreason.errors import ConfigError
from kgreason.models import CausalLMPolicy, load_tokenizer
from kgreason.models import policy as policy_module
from kgreason.models.loading import tiny_causal_lm
from kgreason.training.devices import place_policy, run_device

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here")


def test_cpu_and_auto_without_a_gpu_are_the_cpu():
    assert run_device({"accelerator": "cpu", "devices": 2}) == torch.device("cpu")
    if not torch.cuda.is_available():
        assert run_device({"accelerator": "auto"}) == torch.device("cpu")


@no_cuda
@pytest.mark.parametrize("accelerator", ["gpu", "cuda", "GPU"])
def test_a_gpu_asked_for_where_there_is_none_is_a_config_error_naming_the_way_out(accelerator):
    with pytest.raises(ConfigError, match=rf"trainer.accelerator='{accelerator.lower()}' needs a CUDA device.*trainer=cpu"):
        run_device({"accelerator": accelerator, "devices": 1})


@no_cuda
def test_the_config_check_refuses_trainer_gpu_before_anything_loads():
    with pytest.raises(ConfigError, match="needs a CUDA device"):
        validate_config(compose_config(["method=kg_r1", "preset=smoke", "trainer=gpu"]))
    validate_config(compose_config(["method=kg_r1", "preset=smoke", "trainer=ddp"]))  # auto: the CPU here


def test_an_unknown_accelerator_names_the_choices():
    with pytest.raises(ConfigError, match="'tpu': choose one of cpu, gpu, cuda, mps, auto"):
        run_device({"accelerator": "tpu"})


@pytest.mark.parametrize("devices,local_rank,index", [(1, "0", 0), (2, "1", 1), ([2, 3], "1", 3), ([5], None, 5)])
def test_each_process_takes_its_own_gpu(monkeypatch, devices, local_rank, index):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # only the index is computed: no CUDA call
    if local_rank is None:
        monkeypatch.delenv("LOCAL_RANK", raising=False)
    else:
        monkeypatch.setenv("LOCAL_RANK", local_rank)
    assert run_device({"accelerator": "gpu", "devices": devices}) == torch.device("cuda", index)
    assert run_device({"accelerator": "auto", "devices": devices}) == torch.device("cuda", index)


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


@pytest.mark.parametrize("setting,fast,bf16_weights,expected", [
    ("auto", True, False, True), ("auto", False, False, False),
    ("auto", False, True, True),   # bf16 weights cannot meet float32 activations
    (False, True, False, False), (True, False, False, True),
])
def test_moving_a_policy_decides_bf16_auto_again_for_the_device(monkeypatch, tok, setting, fast, bf16_weights,
                                                                 expected):
    model = tiny_causal_lm(tok)
    if bf16_weights:
        model = model.to(torch.bfloat16)
    policy = CausalLMPolicy(model, tok, bf16=setting)
    calls: list[torch.device] = []

    def resolve(s, device="cpu", stage="decode"):
        calls.append(torch.device(device))
        return fast if str(s).lower() == "auto" else bool(s)

    monkeypatch.setattr(policy_module, "resolve_bf16", resolve)
    assert policy.to("cpu") is policy
    assert policy.bf16 is expected
    assert calls == ([torch.device("cpu")] if setting == "auto" else [])


def test_place_policy_moves_the_reference_copy_too_and_a_bare_model_without_to(tok):
    policy = CausalLMPolicy(tiny_causal_lm(tok), tok, lora=None, bf16=False)
    ref = policy.make_reference()
    place_policy(policy, torch.device("meta"))
    assert policy.device.type == "meta" and next(ref.parameters()).device.type == "meta"

    class Bare:  # a policy of one's own: a model and no `to`
        model = torch.nn.Linear(2, 2)

    bare = Bare()
    place_policy(bare, torch.device("meta"))
    assert bare.model.weight.device.type == "meta"
