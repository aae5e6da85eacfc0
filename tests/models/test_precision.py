import pytest
import torch

from kgreason.models import CausalLMPolicy, LoraSettings, bf16_is_fast, precision, resolve_bf16
from kgreason.models.precision import Bf16Support, bf16_support, stage_precisions


def _flags(monkeypatch, amx: bool, avx512_bf16: bool, vendor: str = "AuthenticAMD") -> None:
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(precision, "_cpu_vendor", lambda: vendor)


@pytest.mark.parametrize(("amx", "avx512_bf16", "vendor", "decode", "train"), [
    (True, True, "GenuineIntel", True, True),     # Sapphire Rapids and later: bf16 everywhere
    (False, True, "AuthenticAMD", False, True),   # Zen 4 (AVX512-BF16, no AMX): training passes only
    (False, True, "GenuineIntel", False, False),  # Intel without AMX: bf16 products slower than float32
    (False, True, "", False, False),              # vendor unknown: float32
    (False, False, "AuthenticAMD", False, False),
])
def test_auto_follows_the_declared_capabilities_per_stage(monkeypatch, amx, avx512_bf16, vendor, decode, train):
    _flags(monkeypatch, amx, avx512_bf16, vendor)
    assert bf16_is_fast("cpu", "decode") is decode and resolve_bf16("auto") is decode and resolve_bf16(None) is decode
    assert bf16_is_fast("cpu", "train") is train and resolve_bf16("auto", stage="train") is train
    assert resolve_bf16(True, stage="decode") and not resolve_bf16("false", stage="train")  # an explicit choice wins


def test_the_decision_never_times_the_host(monkeypatch):
    def no_products(*a, **k):
        raise AssertionError("auto must not time a product")

    monkeypatch.setattr(torch, "matmul", no_products)
    monkeypatch.setattr(torch.Tensor, "__matmul__", no_products)
    _flags(monkeypatch, False, True)
    first = [resolve_bf16("auto", stage=s) for s in ("decode", "train")]
    assert first == [resolve_bf16("auto", stage=s) for s in ("decode", "train")] == [False, True]


def test_other_devices_and_unknown_settings():
    assert Bf16Support("cuda", cuda_bf16=True).fast("decode") and not Bf16Support("cuda").fast("train")
    assert bf16_support("meta") == Bf16Support("meta") and not resolve_bf16("auto", device="meta", stage="train")
    with pytest.raises(ValueError, match="bf16 must be"):
        resolve_bf16("half")
    with pytest.raises(ValueError, match="stage must be one of"):
        Bf16Support("cpu").fast("rollout")


def test_stage_precisions_name_what_each_stage_computes_in(monkeypatch):
    _flags(monkeypatch, False, True)
    assert stage_precisions(True, False, False) == {
        "host": "cpu (avx512_bf16; AuthenticAMD)", "rollouts": "bf16", "eval": "bf16", "sft": "bf16", "rl": "bf16"}
    assert stage_precisions(False, "auto", False) == {
        "host": "cpu (avx512_bf16; AuthenticAMD)", "rollouts": "float32", "eval": "float32", "sft": "bf16 autocast",
        "rl": "float32"}
    _flags(monkeypatch, False, False, "")
    assert stage_precisions(False, "auto", "auto")["host"] == "cpu (no native bf16)"
    assert stage_precisions(False, "auto", "auto")["sft"] == "float32"


@pytest.mark.parametrize("amx", [True, False])
def test_auto_policy_stores_base_weights_in_the_chosen_dtype(monkeypatch, amx):
    _flags(monkeypatch, amx, True)
    pol = CausalLMPolicy.from_pretrained(lora=LoraSettings(r=4, alpha=8))
    frozen = {p.dtype for p in pol.model.parameters() if not p.requires_grad}
    assert pol.bf16 is amx  # the policy's weights serve decoding: AVX512-BF16 alone keeps float32
    assert frozen == {torch.bfloat16 if amx else torch.float32}
