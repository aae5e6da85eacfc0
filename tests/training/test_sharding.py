"""``trainer=fsdp``: what it refuses, and a policy's round trip through sharding helpers."""

from __future__ import annotations

import pytest

from kgreason.config import compose_config, validate_config
from kgreason.errors import ConfigError
from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.models.policy import _plain_head
from kgreason.training.sharding import decoder_layers, held_weights, is_sharded


@pytest.mark.parametrize(("overrides", "message"), [
    (["method=kg_r1", "engine=ct2"], r"rolls out with engine=hf .*not CT2Engine"),
])
def test_what_fsdp_does_not_run_yet_is_refused_at_compose_time(overrides, message):
    cfg = compose_config([*overrides, "preset=smoke", "trainer=fsdp"])
    with pytest.raises(ConfigError, match=message):
        validate_config(cfg)
    validate_config(compose_config([*overrides, "preset=smoke", "trainer=ddp"]))  # DDP runs each


def test_an_unsharded_policy_keeps_its_fast_paths():
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8))
    assert not is_sharded(policy.model) and _plain_head(policy.model) is not None
    assert len(decoder_layers(policy.model)) == policy.model.config.num_hidden_layers
    held, total = held_weights(policy.model)
    assert held == total == sum(p.numel() for p in policy.model.parameters())
