"""A causal-LM policy: chat template, optional LoRA, per-token log-probs, bf16 autocast.

With LoRA, reference log-probs (for KL) come from the same weights with the adapters
disabled — no second copy of the model; without LoRA a frozen copy is made on first use.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from kgreason.models.compat import cache_kwargs, output_cache
from kgreason.models.loading import load_causal_lm, load_tokenizer, tiny_causal_lm
from kgreason.models.logprobs import chunked_logprobs
from kgreason.models.precision import Bf16Setting, resolve_bf16


@dataclass(frozen=True)
class LoraSettings:
    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    #: adapt only the top ``top_layers`` decoder layers (None = all). Backward then stops
    #: there, which is what makes CPU fine-tuning affordable (see docs/training.md).
    top_layers: int | None = None


DEFAULT_LORA = LoraSettings()


class CausalLMPolicy:
    """Wraps a Hugging Face causal LM and its tokenizer.

    Args:
        model: the causal LM.
        tokenizer: its tokenizer (with a chat template).
        lora: LoRA settings, or None for full fine-tuning.
        bf16: run forward passes under bf16 autocast: ``True``, ``False`` or ``"auto"`` —
            bf16 where the hardware multiplies it natively (see
            :mod:`kgreason.models.precision`). The decision is kept in ``self.bf16``.
        share_prefix: in :meth:`token_logprobs`, encode the token prefix all rows of a batch
            share once when it is at least this many tokens (0: off). SFT and RL batches
            share the instructions (≈270 tokens for KG-R1's prompt) and a GRPO group its whole
            question: on the demo's SFT batches a CPU step went from 6.8–7.8 s to 5.1–6.2 s.
        activation_checkpointing: keep only each decoder layer's input for backward and
            recompute the rest (Hugging Face's gradient checkpointing, non-reentrant): one
            more forward pass for activations a layer's input wide instead of all of its
            tensors (``python -m kgreason.plan`` counts both). The shared prefix is then
            encoded per row: its cache pass cannot run under checkpointing.
    """

    def __init__(self, model, tokenizer, lora: LoraSettings | None = None, bf16: Bf16Setting = "auto",
                 share_prefix: int = 32, activation_checkpointing: bool = False):
        self.tokenizer = tokenizer
        self.activation_checkpointing = activation_checkpointing
        if activation_checkpointing:
            if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5 names it so
                model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            share_prefix = 0
        self.share_prefix = share_prefix
        #: the ``bf16`` setting as given: ``"auto"`` is decided again by :meth:`to`
        self.bf16_setting = bf16
        self.bf16 = resolve_bf16(bf16, next(model.parameters()).device)
        if isinstance(lora, Mapping):  # from a config file
            lora = LoraSettings(**{k: tuple(v) if k == "target_modules" else v for k, v in lora.items()})
        self.lora = lora
        if lora is not None:
            model = self._wrap(model)
        self.model = model
        self._ref = None
        #: adapters already folded into the base weights, oldest first (for checkpoints)
        self.merged_adapters: list[dict[str, Tensor]] = []

    @classmethod
    def from_pretrained(cls, name: str = "smollm2-135m-instruct", lora: LoraSettings | None = DEFAULT_LORA,
                        bf16: Bf16Setting = "auto", activation_checkpointing: bool = False) -> CausalLMPolicy:
        """Load a pretrained policy. With LoRA and bf16 the frozen base weights are stored
        in bf16 (≈1.5× faster generation on an AMX CPU) while peft keeps the trainable
        adapters in fp32; full fine-tuning keeps fp32 master weights."""
        dtype = torch.bfloat16 if (resolve_bf16(bf16) and lora is not None) else torch.float32
        return cls(load_causal_lm(name, dtype=dtype), load_tokenizer(name), lora=lora, bf16=bf16,
                   activation_checkpointing=activation_checkpointing)

    @classmethod
    def tiny(cls, lora: LoraSettings | Mapping | None = None, seed: int = 0, activation_checkpointing: bool = False,
             **kw) -> CausalLMPolicy:
        """A tiny random model with SmolLM2's tokenizer and chat template (tests, smoke runs)."""
        tok = load_tokenizer()
        return cls(tiny_causal_lm(tok, seed=seed, **kw), tok, lora=lora, bf16=False,
                   activation_checkpointing=activation_checkpointing)

    def _wrap(self, model):
        from peft import LoraConfig, get_peft_model

        lora = self.lora
        layers = None
        if lora.top_layers is not None:
            n = model.config.num_hidden_layers
            if not 0 < lora.top_layers <= n:
                raise ValueError(f"lora.top_layers must be in 1..{n}, got {lora.top_layers}")
            layers = list(range(n - lora.top_layers, n))
        config = LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                            target_modules=list(lora.target_modules), layers_to_transform=layers,
                            task_type="CAUSAL_LM")
        with warnings.catch_warnings():
            # peft reads a property transformers 5 deprecated; nothing for our users to act on
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing", category=FutureWarning)
            return get_peft_model(model, config)

    def adapter_state(self) -> dict[str, Tensor]:
        """The trainable weights (the adapters, or everything when fully fine-tuned)."""
        from kgreason.training.sharding import full_state
        from kgreason.training.zero import whole_weights

        names = {n for n, p in self.model.named_parameters() if p.requires_grad}
        # trainer=fsdp, ZeRO-3: every process gathers the shards (a collective), each gets the whole
        with whole_weights(self.model):
            state = full_state({k: v.detach() for k, v in self.model.state_dict().items() if k in names})
            return {k: v.clone() for k, v in state.items()}

    def merge_lora(self) -> None:
        """Fold the adapters into the base weights and start fresh (zero) adapters.

        Call before RL: the reference policy (adapters disabled) then is the policy RL
        starts from (after SFT, or a loaded checkpoint), not the pre-trained model, so the
        KL term keeps RL near it. Untrained (zero) adapters are left as they are.
        """
        if self.lora is None or not any(p.any() for n, p in self.model.named_parameters() if "lora_B" in n):
            return
        self.merged_adapters.append(self.adapter_state())
        self.model = self._wrap(self.model.merge_and_unload())
        self._ref = None

    def adopt(self, other: CausalLMPolicy) -> None:
        """Take ``other``'s model and adapter history, keeping this object (which engines and
        rollouts hold): how a policy trained sharded (``trainer=fsdp``) becomes whole again."""
        self.model, self.merged_adapters, self.share_prefix = other.model, other.merged_adapters, other.share_prefix
        self._ref = None

    def checkpoint_state(self) -> dict:
        """What :meth:`load_checkpoint_state` needs to rebuild this policy's weights."""
        if self.lora is None:
            return {"full": self.adapter_state()}
        return {"adapters": [*self.merged_adapters, self.adapter_state()]}

    def load_checkpoint_state(self, state: dict) -> None:
        """Load :meth:`checkpoint_state` output (adapter stacks are merged in order)."""
        if "full" in state:
            self.model.load_state_dict(state["full"], strict=False)
            return
        if self.lora is None:
            raise ValueError("this checkpoint holds LoRA adapters; build the policy with lora settings")
        stack = state["adapters"]
        for i, adapters in enumerate(stack):
            missing = set(adapters) - set(self.model.state_dict())
            if missing:
                raise ValueError(f"checkpoint adapters do not fit this model: {sorted(missing)[:3]}")
            self.model.load_state_dict(adapters, strict=False)
            if i < len(stack) - 1:
                self.merge_lora()

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def to(self, device: torch.device | str) -> CausalLMPolicy:
        """Move the model, and a fully fine-tuned policy's reference copy, to ``device``.

        ``bf16: auto`` is decided again for ``device`` (a CUDA device with bf16 runs it
        whatever the host CPU multiplies natively); weights already stored in bf16 keep
        bf16 autocast on, since float32 activations cannot meet them.
        """
        device = torch.device(device)
        self.model.to(device)
        if self._ref is not None:
            self._ref.to(device)
        if str(self.bf16_setting).lower() == "auto":
            self.bf16 = resolve_bf16("auto", device) or any(
                p.dtype == torch.bfloat16 for p in self.model.parameters())
        return self

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        return (p for p in self.model.parameters() if p.requires_grad)

    def chat_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """Token ids of the chat prompt, ending where the assistant starts to write."""
        ids = self.tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def autocast(self, enabled: bool | None = None) -> contextlib.AbstractContextManager:
        """bf16 autocast where this policy runs bf16 (``enabled=None``), or as ``enabled``
        says for one block: the training passes of ``sft.bf16`` / ``objective.bf16`` over
        float32 weights."""
        if not (self.bf16 if enabled is None else enabled):
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    def token_logprobs(self, input_ids: Tensor, attention_mask: Tensor, with_entropy: bool = False,
                       model=None, entropy_grad: bool = True, from_pos: int = 1,
                       loss_mask: Tensor | None = None, temperature: float = 1.0) -> tuple[Tensor, Tensor | None]:
        """Log-prob of every token given its prefix, and optionally the entropy there.

        ``temperature`` scores under ``softmax(logits / temperature)``: the distribution a
        rollout engine sampled from at that temperature (RL scores at the sampling one).

        With ``entropy_grad=False`` the entropy is computed detached, in chunks of
        positions (for logging: no ``[N, L, V]`` tensors kept for backward). ``from_pos``
        skips the vocabulary projection for earlier positions (their log-probs are 0):
        pass the first position any loss covers, e.g. :func:`first_loss_position` — with a
        300-token shared prompt this saves a large share of an update on CPU. Columns before
        ``from_pos - 1`` that all rows share are encoded once (``share_prefix``).
        ``loss_mask`` goes further: only the tokens it marks are projected onto the
        vocabulary (log-prob and entropy 0 elsewhere). Tool observations sit between a
        multi-turn episode's policy turns, and the projection with its log-sum-exp was a
        third of a KnowCoder-A1 SFT step (``experiments/benchmarks/sft_step.py``).

        Shapes: ``input_ids``/``attention_mask``/``loss_mask`` ``[N, L]`` → ``[N, L]``
        (positions ``< from_pos`` are 0).
        """
        model = model or self.model
        n_pos = input_ids.shape[1]
        from_pos = max(1, min(from_pos, n_pos))
        head = _plain_head(model) if loss_mask is not None else None
        if head is not None:
            return self._masked_logprobs(model, head, input_ids, attention_mask, from_pos, loss_mask,
                                         with_entropy, entropy_grad, temperature)
        with self.autocast():
            # logits at positions from_pos-1 .. L-2 predict tokens from_pos .. L-1
            logits = self._forward(model, input_ids, attention_mask, from_pos)[:, :-1].float()
        if temperature != 1.0:
            logits = logits / temperature
        # gather − logsumexp: no full [N, L, V] log-prob tensor unless entropy is wanted
        lse = torch.logsumexp(logits, dim=-1)
        lp = logits.gather(-1, input_ids[:, from_pos:, None]).squeeze(-1) - lse
        lp = torch.cat([lp.new_zeros(lp.shape[0], from_pos), lp], dim=1)
        ent = None
        if with_entropy and entropy_grad:
            logp_all = logits - lse[..., None]
            e = -(logp_all.exp() * logp_all).sum(-1)
            ent = torch.cat([e.new_zeros(e.shape[0], from_pos), e], dim=1)
        elif with_entropy:
            with torch.no_grad():
                parts = []
                for i in range(0, logits.shape[1], 128):
                    chunk = logits[:, i : i + 128].detach()
                    logp_c = chunk - lse[:, i : i + 128, None].detach()
                    parts.append(-(logp_c.exp() * logp_c).sum(-1))
                e = torch.cat(parts, dim=1) if parts else lse.detach()[:, :0]
            ent = torch.cat([e.new_zeros(e.shape[0], from_pos), e], dim=1)
        return lp, ent

    def _masked_logprobs(self, model, head: torch.nn.Module, input_ids: Tensor, attention_mask: Tensor,
                         from_pos: int, loss_mask: Tensor, with_entropy: bool,
                         entropy_grad: bool, temperature: float = 1.0) -> tuple[Tensor, Tensor | None]:
        """:meth:`token_logprobs` projecting only the tokens ``loss_mask`` marks.

        Shapes: ``[N, L]`` inputs → ``[N, L]`` log-probs (and entropies), 0 off the mask.
        """
        want = loss_mask.bool().clone()
        want[:, :from_pos] = False
        with self.autocast():
            hidden = self._forward(model.get_decoder(), input_ids, attention_mask, from_pos)
            # the state at position t - 1 predicts token t
            picked = hidden[:, :-1][want[:, from_pos:]]
            lp_k, e_k = chunked_logprobs(picked, head.weight, input_ids[want], temperature, entropy=with_entropy)
        lp = lp_k.new_zeros(want.shape).masked_scatter(want, lp_k)
        if not with_entropy:
            return lp, None
        if not entropy_grad:
            e_k = e_k.detach()
        return lp, e_k.new_zeros(want.shape).masked_scatter(want, e_k)

    def _forward(self, model, input_ids: Tensor, attention_mask: Tensor, from_pos: int) -> Tensor:
        """``model``'s output at positions ``from_pos - 1 .. L - 1``, the shared prefix encoded once.

        ``model`` is the causal LM (→ logits) or its decoder (→ last hidden states).
        Rows that begin with the same tokens (the instructions of every prompt; a GRPO
        group's whole question) run that prefix through the model once; its keys and
        values, repeated per row, stay in the graph, so gradients are those of the
        unshared pass. Only a prefix ending before ``from_pos - 1`` is shared: its outputs
        are never needed.
        """
        n_rows, n_pos = input_ids.shape
        keep = n_pos - from_pos + 1
        lm = model.get_output_embeddings() is not None
        kw = {"logits_to_keep": keep} if lm else {}
        shared = shared_prefix_len(input_ids, attention_mask) if n_rows > 1 and self.share_prefix else 0
        shared = min(shared, from_pos - 1)
        if shared < max(self.share_prefix, 1):
            out = model(input_ids=input_ids, attention_mask=attention_mask, **kw)
            return out.logits if lm else out.last_hidden_state[:, -keep:]
        cache = output_cache(model(input_ids=input_ids[:1, :shared], use_cache=True))
        cache.batch_repeat_interleave(n_rows)
        positions = torch.arange(shared, n_pos, device=input_ids.device).expand(n_rows, -1)
        out = model(input_ids=input_ids[:, shared:], attention_mask=attention_mask,
                    position_ids=positions, use_cache=False, **cache_kwargs(cache), **kw)
        return out.logits if lm else out.last_hidden_state[:, -keep:]

    @torch.no_grad()
    def reference_logprobs(self, input_ids: Tensor, attention_mask: Tensor, from_pos: int = 1,
                           loss_mask: Tensor | None = None, temperature: float = 1.0) -> Tensor:
        """Log-probs under the reference policy (LoRA adapters disabled, else a frozen copy);
        arguments as in :meth:`token_logprobs`."""
        if self.lora is not None:
            with self.model.disable_adapter():
                return self.token_logprobs(input_ids, attention_mask, from_pos=from_pos, loss_mask=loss_mask,
                                           temperature=temperature)[0]
        return self.token_logprobs(input_ids, attention_mask, model=self.make_reference(), from_pos=from_pos,
                                   loss_mask=loss_mask, temperature=temperature)[0]

    @property
    def reference_model(self) -> torch.nn.Module | None:
        """The frozen copy a fully fine-tuned policy's KL is taken against (None: LoRA, whose
        reference is the base with adapters off, or not made yet)."""
        return self._ref

    def make_reference(self) -> torch.nn.Module:
        """:attr:`reference_model`, copied from the current weights on first use."""
        if self._ref is None:
            self._ref = copy.deepcopy(self.model).eval().requires_grad_(False)
        return self._ref


#: config fields of Hugging Face models whose logits are not just ``lm_head(hidden)``
_LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "logits_scaling", "output_multiplier_scale")


def _plain_head(model) -> torch.nn.Module | None:
    """The vocabulary projection of a causal LM whose logits are ``head(last hidden state)``
    with nothing after it (None otherwise: then the whole forward pass is used).

    >>> from kgreason.models import CausalLMPolicy
    >>> _plain_head(CausalLMPolicy.tiny().model)
    Linear(in_features=64, out_features=49152, bias=False)
    """
    from kgreason.training.sharding import is_sharded

    head = model.get_output_embeddings()
    config = getattr(model, "config", None)
    if not isinstance(head, torch.nn.Linear) or head.bias is not None or not hasattr(model, "get_decoder"):
        return None
    if is_sharded(model):  # the head's weights are gathered by the whole model's forward only (trainer=fsdp)
        return None
    if hasattr(head.weight, "ds_id"):  # ZeRO-3 partitioned: whole only inside the head's own forward
        return None
    if any(getattr(config, a, None) not in (None, 1, 1.0) for a in _LOGIT_TRANSFORMS):
        return None
    return head


def first_loss_position(loss_mask: Tensor) -> int:
    """The first position (column) any row's loss covers; 1 if none does.

    Shapes: ``loss_mask`` ``[N, L]`` → int.
    """
    cols = loss_mask.bool().any(dim=0).nonzero()
    return int(cols[0]) if len(cols) and int(cols[0]) > 0 else 1


def shared_prefix_len(input_ids: Tensor, attention_mask: Tensor) -> int:
    """Number of leading columns where every row holds the same, unpadded token.

    Shapes: ``input_ids``/``attention_mask`` ``[N, L]`` → int.

    >>> shared_prefix_len(torch.tensor([[5, 6, 7, 0], [5, 6, 8, 9]]), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]))
    2
    """
    same = (input_ids == input_ids[:1]).all(dim=0) & attention_mask.bool().all(dim=0)
    differ = (~same).nonzero()
    return int(differ[0]) if len(differ) else input_ids.shape[1]
