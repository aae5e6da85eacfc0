"""Value checks of a composed config: ranges, types, paths and installed extras.

:func:`check_values` runs in the command line's precheck and at the start of a run,
before any model loads (:func:`kgreason.config.validate_config`): each bad value is one
:class:`~kgreason.errors.ConfigError` line naming the key, the value and what is valid,
instead of a hang (``curriculum.batch_size=-2`` drew batches for ever), a run that does
nothing and exits 0 (``rl.iterations=-1``) or a traceback after the model loaded.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from kgreason.errors import ConfigError


@dataclass(frozen=True)
class Rule:
    """One key's valid values.

    Attributes:
        key: the dotted config key (skipped where the config has no such key).
        kind: ``int`` or ``float`` (an int is a valid float).
        low: the smallest valid value; ``strict``: the value must be above it.
        high: the largest valid value (``None``: no bound).
        nullable: ``null`` is valid too.
        meaning: what a boundary value means, said in the message (``0 skips RL``).
    """

    key: str
    kind: type = int
    low: float = 1
    strict: bool = False
    nullable: bool = False
    meaning: str = ""
    high: float | None = None

    def valid(self) -> str:
        name = "an integer" if self.kind is int else "a number"
        bound = f"> {self.low:g}" if self.strict else f">= {self.low:g}"
        if self.high is not None:
            bound = f"in ({self.low:g}, {self.high:g}]" if self.strict else f"in [{self.low:g}, {self.high:g}]"
        return f"{name} {bound}" + (" or null" if self.nullable else "") + (f" ({self.meaning})" if self.meaning else "")


RULES = (
    Rule("seed", low=0),
    Rule("sft.steps", low=0, meaning="0 skips the cold start's SFT"),
    Rule("sft.epochs", nullable=True, meaning="null: sft.steps counts the steps"),
    Rule("sft.lr", float, 0, strict=True),
    Rule("sft.batch_size"),
    Rule("sft.max_len"),
    Rule("rl.iterations", low=0, meaning="0 skips RL"),
    Rule("rl.epochs", nullable=True, meaning="null: rl.iterations counts the iterations"),
    Rule("rl.checkpoint_every"),
    Rule("eval.batch_size"),
    Rule("eval.runs", meaning="the N of an N-run union"),
    Rule("curriculum.batch_size", meaning="questions per RL iteration"),
    Rule("rollout.n_rollouts", meaning="the group size"),
    Rule("model.max_new_tokens", meaning="tokens per turn"),
    Rule("model.max_response_tokens", nullable=True, meaning="null: no cap"),
    Rule("engine.temperature", float, 0, strict=True),
    Rule("engine.top_p", float, 0, strict=True, high=1.0, meaning="1: no nucleus cut"),
    Rule("engine.top_k", low=0, meaning="0: no top-k cut"),
    Rule("kb.timeout_s", float, 0, strict=True, nullable=True, meaning="null: no time limit"),
    Rule("env.max_turns"),
    Rule("env.max_obs_tokens"),
    Rule("objective.lr", float, 0, strict=True),
    Rule("objective.mini_batch_size"),
    Rule("objective.ppo_epochs"),
    Rule("objective.clip_low", float, 0),
    Rule("objective.clip_high", float, 0, nullable=True),
    Rule("objective.kl_coef", float, 0),
    Rule("objective.entropy_coef", float, 0),
    Rule("objective.max_grad_norm", float, 0, strict=True),
    Rule("objective.weight_decay", float, 0),
    Rule("objective.warmup_ratio", float, 0, high=1.0, meaning="0: no warm-up"),
    Rule("objective.temperature", float, 0, strict=True, meaning="the sampling temperature: it follows engine.temperature"),
    Rule("objective.tis_cap", float, 0, strict=True, nullable=True),
    Rule("objective.max_len", nullable=True),
    Rule("objective.group_size", nullable=True),
    Rule("data.train_limit", nullable=True, meaning="null: every question"),
    Rule("data.eval_limit", nullable=True, meaning="null: every question"),
)

#: key → its valid values
CHOICES: dict[str, tuple[str, ...]] = {"data.unanswered": ("drop", "fail"), "data.on_missing": ("keep", "drop", "fail"),
                                       "rollout.overlong": ("keep", "mask")}

#: loader target → what its ``path`` must be
PATH_KINDS: dict[str, str] = {
    "kgreason.kb.load_rdf_kb": "file", "kgreason.kb.load_tsv_kb": "file", "kgreason.kb.load_metaqa_kb": "file",
}
#: (group, option's ``_target_`` or logger class) → (module that must import, extra to install)
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "lightning.pytorch.loggers.TensorBoardLogger": (("tensorboard", "tensorboardX"), "loggers"),
    "lightning.pytorch.loggers.WandbLogger": (("wandb",), "loggers"),
    "kgreason.rollout.VLLMEngine": (("vllm",), "gpu"),
    "kgreason.rollout.CT2Engine": (("ctranslate2",), "ct2"),
    "kgreason.rollout.ORTEngine": (("onnxruntime_genai",), "ort"),
}


def _value(cfg: DictConfig, key: str) -> tuple[bool, Any]:
    """(present, value) of ``key``; a required value left unset is a ConfigError."""
    try:
        node = OmegaConf.select(cfg, key, throw_on_missing=True, default=_ABSENT)
    except MissingMandatoryValue:
        raise ConfigError(f"{key} is required; set it on the command line ({key}=...)") from None
    return (node is not _ABSENT), node


_ABSENT = object()


def check_rule(rule: Rule, value: Any) -> str | None:
    """Why ``value`` breaks ``rule`` (``None``: it is valid).

    >>> check_rule(Rule("rl.iterations", low=0, meaning="0 skips RL"), -1)
    'rl.iterations=-1: must be an integer >= 0 (0 skips RL)'
    >>> check_rule(Rule("model.max_new_tokens"), "abc")
    "model.max_new_tokens='abc': must be an integer >= 1"
    >>> check_rule(Rule("objective.lr", float, 0, strict=True), 1e-6) is None
    True
    >>> check_rule(Rule("engine.top_p", float, 0, strict=True, high=1.0), 2)
    'engine.top_p=2: must be a number in (0, 1]'

    """
    if value is None:
        return None if rule.nullable else f"{rule.key}=null: must be {rule.valid()}"
    ok_type = isinstance(value, int | float) and not isinstance(value, bool)
    if rule.kind is int:
        ok_type = ok_type and float(value).is_integer()
    if not ok_type or (value <= rule.low if rule.strict else value < rule.low) \
            or (rule.high is not None and value > rule.high):
        return f"{rule.key}={value!r}: must be {rule.valid()}"
    return None


def _check_paths(cfg: DictConfig) -> None:
    for group in ("kb", "data"):
        node = cfg.get(group)
        if not isinstance(node, DictConfig):
            continue
        present, path = _value(cfg, f"{group}.path")  # an unset ??? is named here
        if not present or path is None:
            continue
        p = Path(str(path)).expanduser()
        target = str(node.get("_target_", ""))
        if not p.exists():
            raise ConfigError(f"{group}.path={path!r}: no such file or directory")
        if PATH_KINDS.get(target, "file" if group == "data" and p.suffix else "any") == "file" and p.is_dir():
            raise ConfigError(f"{group}.path={path!r} is a directory; {group}={_option(group, target)} reads a file")


def _option(group: str, target: str, node_of: Callable[[DictConfig], Any] = lambda node: node) -> str:
    """The shipped option of ``group`` whose node (or ``node_of`` it: a logger's ``extra``)
    builds ``target`` (the target's name if none)."""
    from kgreason.compat import option_nodes

    return next((name for name, node in option_nodes(group).items()
                 if (node_of(node) or {}).get("_target_") == target), target.rpartition(".")[2])


def _check_extras(cfg: DictConfig) -> None:
    nodes = [("engine", cfg.get("engine")), ("logger", (cfg.get("logger") or {}).get("extra"))]
    for group, node in nodes:
        if not isinstance(node, DictConfig):
            continue
        target = str(node.get("_target_", ""))
        if target not in EXTRAS:
            continue
        modules, extra = EXTRAS[target]
        if not any(importlib.util.find_spec(m) is not None for m in modules):
            option = _option(group, target, (lambda node: node.get("extra")) if group == "logger" else (lambda node: node))
            raise ConfigError(f"{group}={option} needs {' or '.join(modules)}, which is not installed: "
                              f"pip install 'kgreason[{extra}]'")



def check_values(cfg: DictConfig, rules: tuple[Rule, ...] = RULES,
                 extra_checks: tuple[Callable[[DictConfig], None], ...] = (_check_paths, _check_extras)) -> None:
    """Raise :class:`ConfigError` on the first key whose value cannot run (see :data:`RULES`),
    a ``kb.path`` / ``data.path`` that does not exist or is a directory where a file is read,
    or a logger or engine whose extra is not installed."""
    for rule in rules:
        present, value = _value(cfg, rule.key)
        if present and (why := check_rule(rule, value)) is not None:
            raise ConfigError(why)
    present, on_policy = _value(cfg, "objective.on_policy")
    if present and on_policy and cfg.objective.get("ppo_epochs", 1) != 1:
        raise ConfigError(f"objective.on_policy=true is one update per batch; objective.ppo_epochs="
                          f"{cfg.objective.ppo_epochs} would reuse the batch off-policy: set ppo_epochs=1, or "
                          "on_policy=false for PPO's clipped ratio")
    present, precision = _value(cfg, "trainer.precision")
    if present and str(precision) not in ("32-true", "32"):
        # Lightning's precision plugins would wrap the whole RL step, rollouts included, and
        # DeepSpeed's would train bf16 weights: neither is what results.json records
        raise ConfigError(f"trainer.precision={precision!r}: choose 32-true; bf16 is set per stage, as autocast "
                          "over float32 weights (sft.bf16, objective.bf16: true, false or auto) or as bf16 "
                          "weights (model.policy.bf16=true), and results.json records what each stage ran in")
    for key, choices in CHOICES.items():
        present, value = _value(cfg, key)
        if present and str(value) not in choices:
            raise ConfigError(f"{key}={value!r}: choose one of {', '.join(choices)}")
    for check in extra_checks:
        check(cfg)
