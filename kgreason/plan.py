"""A memory planner: what a composed run needs on each device under each sharding strategy.

``python -m kgreason.plan method=kbqa_r1 preset=full`` composes the run's config (any
overrides), takes the model's shape (:data:`MODEL_SHAPES`, by ``hardware.model`` or the
policy's name) and prints, per device, the bytes of weights, gradients, optimiser state,
the KL reference, a PPO critic, the activations of one forward/backward pass and the
rollouts' KV cache, for DDP, FSDP, FSDP with CPU offload and DeepSpeed ZeRO-2/3, over 1,
2, 4 and 8 devices and the ``hardware.devices`` the paper used, and which fit
``hardware.gpu``.

Model states follow the ZeRO paper's accounting (Rajbhandari et al. 2020) for bf16 mixed
precision with Adam: trainable weights keep an fp32 master copy (4 bytes), fp32 gradients
(4) and two fp32 moments (8), 16 bytes a trainable parameter under DDP; frozen weights (a
LoRA policy's base) are 2 bytes (bf16). FSDP shards all of it over the devices and gathers
one unit (a decoder layer or the embeddings) at a time, with the next one prefetched.
``trainer=deepspeed`` trains these float32 weights too (bf16 is autocast:
``trainer.precision`` stays 32-true), so ZeRO-2 keeps them whole on each device and shards
the gradients and the optimiser state, to which DeepSpeed adds a float32 copy of each
device's partition (12 bytes); ZeRO-3 shards everything as FSDP does (its optimiser
updates the float32 partitions in place). Offload keeps the sharded states in host memory (reported as
``cpu``). Activations are counted per token and layer from the tensors a Llama-style
decoder saves for backward (SDPA/flash attention, SwiGLU MLP), or only each layer's input
with activation checkpointing (``model.policy.activation_checkpointing``), plus the fp32 logits of the loss positions (kgreason
projects only those onto the vocabulary). ``experiments/benchmarks/memory_plan.py`` checks
the formulas against measured peak memory of SmolLM2 runs.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kgreason.errors import ConfigError

GIB = 1024**3


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a Llama-style decoder (Qwen2/3, Llama 3, SmolLM2), MoE optional.

    Attributes:
        hidden, layers, heads, kv_heads, intermediate, vocab: the config's sizes.
        head_dim: per head (default ``hidden // heads``).
        tied: input and output embeddings shared.
        qkv_bias: biases on the q/k/v projections (Qwen2).
        experts, active_experts, moe_intermediate: a mixture-of-experts MLP (Qwen3-MoE).
    """

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    head_dim: int | None = None
    tied: bool = False
    qkv_bias: bool = False
    experts: int = 0
    active_experts: int = 0
    moe_intermediate: int = 0

    @property
    def hd(self) -> int:
        return self.head_dim or self.hidden // self.heads

    def attention_params(self) -> int:
        q, kv = self.heads * self.hd, self.kv_heads * self.hd
        bias = (q + 2 * kv) if self.qkv_bias else 0
        return self.hidden * q + 2 * self.hidden * kv + q * self.hidden + bias

    def mlp_params(self) -> int:
        if self.experts:
            return self.experts * 3 * self.hidden * self.moe_intermediate + self.hidden * self.experts
        return 3 * self.hidden * self.intermediate

    def layer_params(self) -> int:
        """One decoder layer: attention, MLP and its two RMSNorm weights."""
        return self.attention_params() + self.mlp_params() + 2 * self.hidden

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def params(self) -> int:
        """Every parameter.

        >>> MODEL_SHAPES["smollm2-135m-instruct"].params
        134515008
        """
        head = 0 if self.tied else self.embedding_params
        return self.embedding_params + head + self.layers * self.layer_params() + self.hidden

    def largest_unit(self) -> int:
        """Parameters of the largest unit FSDP/ZeRO-3 gathers at once: a decoder layer, or
        the embeddings (with a large vocabulary they are bigger than a layer)."""
        return max(self.layer_params(), self.embedding_params)

    def lora_params(self, r: int, targets: Sequence[str], top_layers: int | None = None) -> int:
        """Trainable parameters of LoRA adapters of rank ``r`` on ``targets``.

        >>> MODEL_SHAPES["smollm2-135m-instruct"].lora_params(16, ("q_proj", "k_proj", "v_proj", "o_proj"))
        1843200
        """
        q, kv = self.heads * self.hd, self.kv_heads * self.hd
        sizes = {"q_proj": (self.hidden, q), "k_proj": (self.hidden, kv), "v_proj": (self.hidden, kv),
                 "o_proj": (q, self.hidden), "gate_proj": (self.hidden, self.intermediate),
                 "up_proj": (self.hidden, self.intermediate), "down_proj": (self.intermediate, self.hidden)}
        unknown = [t for t in targets if t not in sizes]
        if unknown:
            raise ConfigError(f"LoRA target modules {unknown} are not in the planner's decoder; it knows {sorted(sizes)}")
        per_layer = sum(r * (a + b) for a, b in (sizes[t] for t in targets))
        return per_layer * (top_layers or self.layers)

    def activation_bytes_per_token_layer(self, dtype_bytes: int = 2) -> int:
        """Bytes one token leaves for backward in one decoder layer: two RMSNorms' inputs
        and outputs (4h), q/k/v and the rotated q/k (3·q + 3·kv), the attention output (q),
        and the SwiGLU MLP's gate, up, activation and product (4i; per active expert)."""
        q, kv = self.heads * self.hd, self.kv_heads * self.hd
        mlp = 4 * (self.active_experts * self.moe_intermediate if self.experts else self.intermediate)
        return dtype_bytes * (4 * self.hidden + 3 * q + 3 * kv + q + mlp)

    def kv_bytes_per_token(self, dtype_bytes: int = 2) -> int:
        """The KV cache of one token over all layers."""
        return 2 * self.layers * self.kv_heads * self.hd * dtype_bytes


#: the papers' models and the one shipped here, by the names presets use (lower case)
MODEL_SHAPES: dict[str, ModelShape] = {
    "smollm2-135m-instruct": ModelShape(576, 30, 9, 3, 1536, 49152, tied=True),
    "qwen2.5-3b-instruct": ModelShape(2048, 36, 16, 2, 11008, 151936, tied=True, qkv_bias=True),
    "qwen2.5-7b-instruct": ModelShape(3584, 28, 28, 4, 18944, 152064, qkv_bias=True),
    "qwen2.5-coder-7b": ModelShape(3584, 28, 28, 4, 18944, 152064, qkv_bias=True),
    "llama-3.1-8b-instruct": ModelShape(4096, 32, 32, 8, 14336, 128256),
    "qwen3-30b-a3b": ModelShape(2048, 48, 32, 4, 6144, 151936, head_dim=128, experts=128, active_experts=8,
                                moe_intermediate=768),
}

#: GPU memory in GiB, by the names ``hardware.gpu`` takes
GPUS: dict[str, float] = {"a100-40gb": 40, "a100-80gb": 80, "h100-80gb": 80, "h200-141gb": 141,
                          "a6000-48gb": 48, "l40s-48gb": 48, "rtx4090-24gb": 24}

STRATEGIES = ("ddp", "fsdp", "fsdp_offload", "zero2", "zero3", "zero3_offload")


@dataclass(frozen=True)
class Workload:
    """What the run puts on the devices, from its config.

    Attributes:
        trainable: trainable parameters of the policy (all, or its LoRA adapters).
        reference: the KL term needs a reference policy copy (full fine-tuning with KL > 0;
            a LoRA policy's reference is its base with the adapters off).
        critic: PPO's value model, as large as the policy and trained like it.
        rows: sequences in one forward/backward pass on one device.
        seq_len: tokens of one sequence (prompt and every turn).
        response_len: the policy's own tokens in it (the positions projected onto the vocabulary).
        rollout_seqs: sequences one device generates at once (batch × group size / devices).
        checkpointing: activation checkpointing (each layer's input kept, the rest recomputed).
        act_bytes: bytes of a saved activation (2: bf16 autocast; 4: float32, as on a CPU
            without fast bf16).
        frozen_bytes: bytes of a frozen weight (2: a bf16 base; 4: float32).
    """

    trainable: int
    reference: bool
    critic: bool
    rows: int
    seq_len: int
    response_len: int
    rollout_seqs: int
    checkpointing: bool = False
    act_bytes: int = 2
    frozen_bytes: int = 2


#: share of a card the plan may fill: the CUDA context, the allocator's fragmentation and
#: the collectives' buffers take the rest
HEADROOM = 0.9


@dataclass
class MemoryPlan:
    """Bytes on one device in the update phase (``parts``), what offload keeps in host
    memory per device (``cpu``), and the rollout phase's needs.

    The phases alternate (verl's hybrid engine frees the rollout's KV cache before the
    update): the update holds the model states, the reference, the critic and one pass's
    activations and logits; the rollout holds the model states, a bf16 copy of the weights
    for the inference engine, and the KV cache of the sequences decoding at once.
    """

    strategy: str
    devices: int
    parts: dict[str, float] = field(default_factory=dict)
    cpu: float = 0.0
    #: bytes the inference engine's weights take in the rollout phase
    engine_weights: float = 0.0
    #: KV-cache bytes of one sequence at full length
    kv_per_sequence: float = 0.0
    #: sequences one device generates in a rollout batch
    rollout_seqs: int = 0

    @property
    def total(self) -> float:
        """The update phase's peak."""
        return sum(self.parts.values())

    @property
    def states(self) -> float:
        return self.parts["weights"] + self.parts["gradients"] + self.parts["optimizer"] + self.parts["critic"]

    def concurrent_sequences(self, gib: float) -> int:
        """Rollout sequences whose KV cache fits beside the states and the engine's weights
        on a card of ``gib`` GiB (at most the batch's own)."""
        room = HEADROOM * gib * GIB - self.states - self.engine_weights
        return max(0, min(self.rollout_seqs, int(room // self.kv_per_sequence))) if self.kv_per_sequence else 0

    def fits(self, gib: float) -> bool:
        """The update fits within :data:`HEADROOM` of a card of ``gib`` GiB and the
        rollout can decode at least one sequence at a time."""
        return self.total <= HEADROOM * gib * GIB and self.concurrent_sequences(gib) >= 1


def model_states(shape: ModelShape, trainable: int, strategy: str, devices: int,
                 frozen_bytes: int = 2) -> tuple[dict[str, float], float]:
    """Weights, gradients and optimiser state on one device, and what offload puts on the host.

    >>> s = MODEL_SHAPES["smollm2-135m-instruct"]
    >>> on_gpu, _ = model_states(s, s.params, "ddp", 1)
    >>> round(sum(on_gpu.values()) / s.params)  # 16 bytes a parameter
    16
    >>> on_gpu, _ = model_states(s, s.params, "zero2", 4)
    >>> round(on_gpu["optimizer"] / s.params, 2)  # 12 bytes (DeepSpeed's fp32 copy + moments) over 4 devices
    3.0
    """
    if strategy not in STRATEGIES:
        raise ConfigError(f"strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    frozen = shape.params - trainable
    unit = 2 * 2 * shape.largest_unit()  # a gathered bf16 unit and the prefetched next one
    if strategy == "ddp":
        return {"weights": 4 * trainable + frozen_bytes * frozen, "gradients": 4 * trainable,
                "optimizer": 8 * trainable}, 0.0
    if strategy == "zero2":
        return {"weights": 4 * trainable + frozen_bytes * frozen, "gradients": 4 * trainable / devices,
                "optimizer": 12 * trainable / devices}, 0.0
    if strategy in ("fsdp", "zero3"):
        return {"weights": (4 * trainable + 2 * frozen) / devices + unit, "gradients": 4 * trainable / devices,
                "optimizer": 8 * trainable / devices}, 0.0
    # offload: the shards live in host memory; the device holds the gathered units and their gradients
    host = (16 * trainable + 2 * frozen) / devices
    return {"weights": unit, "gradients": 2 * shape.largest_unit(), "optimizer": 0.0}, host


def activations(shape: ModelShape, w: Workload) -> dict[str, float]:
    """One pass's activations and logits on one device (bf16 activations, fp32 logits).

    >>> s = MODEL_SHAPES["smollm2-135m-instruct"]
    >>> a = activations(s, Workload(s.params, False, False, rows=1, seq_len=1000, response_len=100, rollout_seqs=1))
    >>> a["activations"] == 1000 * 30 * s.activation_bytes_per_token_layer()
    True
    """
    tokens = w.rows * w.seq_len
    per_layer = shape.activation_bytes_per_token_layer(w.act_bytes)
    if w.checkpointing:  # each layer's input kept, one layer's activations while it is recomputed
        act = tokens * shape.layers * w.act_bytes * shape.hidden + tokens * per_layer
    else:
        act = tokens * shape.layers * per_layer
    # the loss positions' logits: bf16 from the head, fp32 for the log-softmax, and its gradient
    logits = w.rows * w.response_len * shape.vocab * (w.act_bytes + 4 + 4)
    return {"activations": float(act), "logits": float(logits)}


def plan(shape: ModelShape, w: Workload, strategy: str, devices: int) -> MemoryPlan:
    """The per-device memory of ``w`` under ``strategy`` on ``devices`` devices."""
    states, host = model_states(shape, w.trainable, strategy, devices, w.frozen_bytes)
    parts = dict(states)
    sharded = strategy in ("fsdp", "fsdp_offload", "zero3", "zero3_offload")
    parts["reference"] = (2 * shape.params / (devices if sharded else 1)) if w.reference else 0.0
    if w.critic:  # a second model trained the same way (verl: a critic worker beside the actor)
        critic_states, critic_host = model_states(shape, w.trainable, strategy, devices, w.frozen_bytes)
        parts["critic"] = sum(critic_states.values())
        host += critic_host
    else:
        parts["critic"] = 0.0
    parts.update(activations(shape, w))
    if w.critic:
        parts["activations"] *= 2  # the critic's pass beside the policy's
    return MemoryPlan(strategy, devices, parts, host, engine_weights=2.0 * shape.params,
                      kv_per_sequence=float(w.seq_len * shape.kv_bytes_per_token()), rollout_seqs=w.rollout_seqs)


def shape_of(name: str) -> ModelShape:
    key = name.lower().rsplit("/", 1)[-1]
    if not key:
        raise ConfigError("the composed model has no name (model=tiny, the default, is a random test model): "
                          "plan a method's preset (method=kg_r1 preset=demo) or set hardware.model to one of "
                          f"{', '.join(sorted(MODEL_SHAPES))}")
    if key not in MODEL_SHAPES:
        raise ConfigError(f"the planner has no shape for model {name!r}; known: {', '.join(sorted(MODEL_SHAPES))} "
                          "(set hardware.model to one of them)")
    return MODEL_SHAPES[key]


def workload(cfg: Any, shape: ModelShape, devices: int) -> Workload:
    """The :class:`Workload` of a composed config on ``devices`` devices."""
    lora = cfg.model.policy.get("lora")
    if lora:
        trainable = shape.lora_params(int(lora.r), tuple(lora.get("target_modules") or
                                                         ("q_proj", "k_proj", "v_proj", "o_proj")),
                                      lora.get("top_layers"))
    else:
        trainable = shape.params
    turns = int(cfg.env.max_turns)
    per_turn = int(cfg.model.max_new_tokens)
    budget = cfg.model.get("max_response_tokens")
    response = int(budget) if budget else turns * per_turn
    prompt = int(cfg.get("hardware", {}).get("prompt_tokens") or 512)
    seq = prompt + response + (turns - 1) * int(cfg.env.max_obs_tokens)
    obj = cfg.objective
    share = math.ceil(int(obj.mini_batch_size) / devices)  # a process's rows of a mini-batch
    rows = min(share, int(obj.get("micro_batch_size") or share))
    group = int(cfg.rollout.n_rollouts)
    rollout = math.ceil(int(cfg.curriculum.batch_size) * group / devices)
    return Workload(trainable=trainable, reference=bool(obj.kl_coef) and not lora, critic=obj.get("critic") is not None,
                    rows=rows, seq_len=seq, response_len=response, rollout_seqs=rollout,
                    checkpointing=bool(cfg.model.policy.get("activation_checkpointing")))


def largest_pass(cfg: Any, shape: ModelShape, strategy: str, devices: int, gib: float) -> int:
    """The most rows a pass can hold on a card of ``gib`` GiB (0: not even one)."""
    w = workload(cfg, shape, devices)
    best = 0
    for rows in range(1, w.rows + 1):
        if not plan(shape, Workload(**{**w.__dict__, "rows": rows}), strategy, devices).fits(gib):
            break
        best = rows
    return best


def report(overrides: Sequence[str]) -> str:
    """The planner's table for the config ``overrides`` compose (what ``python -m
    kgreason.plan`` prints)."""
    from kgreason.config import compose_config

    cfg = compose_config(list(overrides))
    hw = cfg.get("hardware") or {}
    shape = shape_of(hw.get("model") or cfg.model.policy.get("name") or "")
    gpu = hw.get("gpu")
    if gpu is not None and gpu not in GPUS:
        raise ConfigError(f"hardware.gpu={gpu!r}: choose one of {', '.join(GPUS)}")
    counts = sorted({1, 2, 4, 8, *([int(hw.devices)] if hw.get("devices") else [])})
    name = hw.get("model") or cfg.model.policy.get("name")
    lines = [f"model {name}: {shape.params / 1e9:.2f} B parameters; "
             f"{'card ' + gpu + f' ({GPUS[gpu]:g} GiB)' if gpu else 'no card named (hardware.gpu)'}"]
    if hw.get("devices"):
        lines.append(f"the paper's setting: {hw.devices} × {gpu}, {hw.get('strategy')}")
    lines.append("GiB per device in the update: weights + gradients + optimizer + reference + critic + activations "
                 "+ logits = total; cpu: host memory per device with offload; rollout: sequences of the batch "
                 "whose KV cache fits at once beside the states and the engine's bf16 weights")
    lines.append("| strategy | devices | rows/pass | weights | grads | optim | ref | critic | act | logits | "
                 "total | cpu | rollout | fits |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for strategy in STRATEGIES:
        for n in counts:
            w = workload(cfg, shape, n)
            p = plan(shape, w, strategy, n)
            g = {k: v / GIB for k, v in p.parts.items()}
            fits = ("yes" if p.fits(GPUS[gpu]) else "no") if gpu else "-"
            rollout = f"{p.concurrent_sequences(GPUS[gpu])}/{p.rollout_seqs}" if gpu else "-"
            mark = " (paper)" if hw.get("devices") == n and hw.get("strategy") == strategy else ""
            lines.append(f"| {strategy}{mark} | {n} | {w.rows} | {g['weights']:.1f} | {g['gradients']:.1f} | "
                         f"{g['optimizer']:.1f} | {g['reference']:.1f} | {g['critic']:.1f} | "
                         f"{g['activations']:.1f} | {g['logits']:.1f} | "
                         f"{p.total / GIB:.1f} | {p.cpu / GIB:.1f} | {rollout} | {fits} |")
    if hw.get("devices") and hw.get("strategy") and gpu:
        w = workload(cfg, shape, int(hw.devices))
        p = plan(shape, w, str(hw.strategy), int(hw.devices))
        verdict = "fits" if p.fits(GPUS[gpu]) else "does not fit"
        lines.append(f"paper setting: {p.total / GIB:.1f} GiB a device in the update on {hw.devices} × {gpu} with "
                     f"{hw.strategy}, {p.concurrent_sequences(GPUS[gpu])} of {p.rollout_seqs} rollout sequences at "
                     f"once: {verdict} (≤ {HEADROOM:.0%} of {GPUS[gpu]:g} GiB)")
        if not p.fits(GPUS[gpu]):
            best = largest_pass(cfg, shape, str(hw.strategy), int(hw.devices), GPUS[gpu])
            lines.append(f"largest pass that fits: objective.micro_batch_size={best}" if best else
                         "no pass of one row fits: add devices, offload, or activation checkpointing")
    return "\n".join(lines)


def paper_fit(overrides: Sequence[str]) -> MemoryPlan:
    """The plan of the paper's own setting (``hardware.*`` of a full preset)."""
    from kgreason.config import compose_config

    cfg = compose_config(list(overrides))
    hw = cfg.get("hardware")
    if not hw or not hw.get("devices") or not hw.get("strategy"):
        raise ConfigError("the config names no paper hardware (hardware.devices, hardware.strategy): "
                          "use preset=full, or set them")
    shape = shape_of(hw.get("model") or cfg.model.policy.get("name"))
    return plan(shape, workload(cfg, shape, int(hw.devices)), str(hw.strategy), int(hw.devices))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        return 0
    try:
        print(report(args))
    except ConfigError as e:
        print(f"ConfigError: {e}", file=sys.stderr)
        return 2
    return 0


__all__ = ["GPUS", "MODEL_SHAPES", "STRATEGIES", "MemoryPlan", "ModelShape", "Workload", "activations",
           "largest_pass", "model_states", "paper_fit", "plan", "report", "shape_of", "workload"]

if __name__ == "__main__":
    raise SystemExit(main())
