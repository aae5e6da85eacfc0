import pytest
import torch

from kgreason.models import CausalLMPolicy, LoraSettings, bf16_is_fast, resolve_bf16


def test_auto_follows_the_hardware_probe(monkeypatch):
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    assert bf16_is_fast("cpu") and resolve_bf16("auto") and resolve_bf16(None)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert not bf16_is_fast("cpu") and not resolve_bf16("auto")
    assert resolve_bf16(True) and resolve_bf16("True")  # an explicit choice wins


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="bf16 must be"):
        resolve_bf16("half")


@pytest.mark.parametrize("amx", [True, False])
def test_auto_policy_stores_base_weights_in_the_chosen_dtype(monkeypatch, amx):
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    pol = CausalLMPolicy.from_pretrained(lora=LoraSettings(r=4, alpha=8))
    frozen = {p.dtype for p in pol.model.parameters() if not p.requires_grad}
    assert pol.bf16 is amx
    assert frozen == {torch.bfloat16 if amx else torch.float32}


def test_measured_auto_takes_bf16_only_where_its_products_are_faster(monkeypatch):
    from kgreason.models import precision

    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    for speedup, expected in ((2.4, True), (1.1, False), (0.5, False)):
        precision._bf16_measured_fast.cache_clear()
        monkeypatch.setattr(precision, "bf16_speedup", lambda s=speedup: s)
        assert resolve_bf16("auto", measure=True) is expected
        assert resolve_bf16("auto") is False  # without measuring, the AMX flag decides
    precision._bf16_measured_fast.cache_clear()
    monkeypatch.setattr(precision, "bf16_speedup", lambda: pytest.fail("measured on a GPU"))
    assert resolve_bf16("auto", device="meta", measure=True) is False


def test_bf16_speedup_times_both_precisions():
    from kgreason.models.precision import bf16_speedup

    # a ratio of two real timings, not a constant; best of 5 each because a busy host can
    # stall one product (best of 2 gave 154x in a suite run beside two evaluations)
    assert 0.05 < bf16_speedup(256, 5) < 50
