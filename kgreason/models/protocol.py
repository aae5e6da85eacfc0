"""What the rest of kgreason needs of a policy: :class:`Policy` for rollouts and cold
starts, :class:`TrainablePolicy` for the SFT and RL modules.

:class:`~kgreason.models.CausalLMPolicy` is both; a policy of your own (another model
family, a remote scorer for the log-probs) needs only these members.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Generic, Protocol, runtime_checkable

import torch
from torch import Tensor


@runtime_checkable
class Policy(Protocol):
    """What rollouts and cold starts use: the tokenizer and the chat template.

    Attributes:
        tokenizer: a Hugging Face tokenizer (``pad_token_id``, ``decode``).
    """

    tokenizer: Any

    def chat_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """Token ids of the chat prompt, ending where the assistant starts to write."""
        ...


@runtime_checkable
class TrainablePolicy(Policy, Protocol):
    """What the SFT and RL modules use on top of :class:`Policy`.

    Shapes:
        - input_ids, attention_mask, loss_mask: ``[N, L]``
        - token log-probs and entropies: ``[N, L]`` (0 before ``from_pos``)
    """

    model: torch.nn.Module
    bf16: bool

    @property
    def device(self) -> torch.device: ...

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        """The trained parameters (the adapters of a LoRA policy)."""
        ...

    def autocast(self, enabled: bool | None = None) -> contextlib.AbstractContextManager: ...

    def token_logprobs(self, input_ids: Tensor, attention_mask: Tensor, with_entropy: bool = False,
                       model: Any = None, entropy_grad: bool = True, from_pos: int = 1,
                       loss_mask: Tensor | None = None, temperature: float = 1.0) -> tuple[Tensor, Tensor | None]: ...

    def reference_logprobs(self, input_ids: Tensor, attention_mask: Tensor, from_pos: int = 1,
                           loss_mask: Tensor | None = None, temperature: float = 1.0) -> Tensor: ...


def missing_members(obj: Any, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks (for a ``TypeError`` naming them).

    >>> missing_members(object(), Policy)
    ['chat_ids', 'tokenizer']
    """
    return [n for n in protocol_members(protocol) if not hasattr(obj, n)]


def protocol_members(protocol: type) -> list[str]:
    """The public members a protocol declares, its bases' included.

    >>> protocol_members(Policy)
    ['chat_ids', 'tokenizer']
    """
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (object, Protocol, Generic) or not getattr(cls, "_is_protocol", False):
            continue
        names.update(getattr(cls, "__annotations__", {}))
        names.update(cls.__dict__)
    return sorted(n for n in names if not n.startswith("_"))


def check_policy(obj: Any, protocol: type = Policy) -> None:
    """Raise ``TypeError`` naming what ``obj`` lacks of ``protocol``."""
    missing = missing_members(obj, protocol)
    if missing:
        raise TypeError(f"{type(obj).__name__} is not a {protocol.__name__}: it lacks {', '.join(missing)} "
                        f"(see kgreason.models.{protocol.__name__})")
