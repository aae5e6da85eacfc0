"""The policy protocols: what rollouts and the training modules need of a policy."""

from __future__ import annotations

import pytest

from kgreason.models import CausalLMPolicy, Policy, TrainablePolicy
from kgreason.models.protocol import missing_members
from kgreason.training import LinearExperience, RLLitModule, SFTLitModule


class ChatOnly:
    """A policy that can prompt but not be trained (a served model, say)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def chat_ids(self, messages):
        return self.tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)


def test_the_library_policy_is_both():
    p = CausalLMPolicy.tiny()
    assert isinstance(p, Policy) and isinstance(p, TrainablePolicy)
    assert missing_members(p, TrainablePolicy) == []


def test_the_training_modules_name_what_a_policy_lacks():
    chat = ChatOnly(CausalLMPolicy.tiny().tokenizer)
    assert isinstance(chat, Policy) and not isinstance(chat, TrainablePolicy)
    source = LinearExperience.build(engine=None, policy=chat, reward=lambda *a, **k: None)
    with pytest.raises(TypeError, match=r"ChatOnly is not a TrainablePolicy: it lacks autocast, bf16, device, "
                                        r"model, parameters, reference_logprobs, token_logprobs"):
        RLLitModule(chat, source, make_env=lambda: None)
    with pytest.raises(TypeError, match="ChatOnly is not a TrainablePolicy"):
        SFTLitModule(chat)
