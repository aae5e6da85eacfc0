"""The runner's config, checked before anything heavy loads (no torch, no engines here).

A typo on the command line should be answered in about a second, not after torch,
Lightning, transformers and a KB have loaded: ``experiments/run.py`` imports only this
module before it has checked the overrides (:func:`check_overrides`) and the composed
config (:func:`validate_config`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from kgreason.errors import ConfigError, DatasetError

#: where the runner's config groups live
CONFIG_DIR = Path(__file__).resolve().parents[1] / "experiments" / "conf"
#: what ``stage=`` may say
STAGES = ("all", "eval", "sft", "rl")


def run_dir_of(ckpt: str | Path | None, default: str) -> str:
    """The run folder a checkpoint belongs to (``<run>/checkpoints/rl/x.ckpt``), else ``default``.

    ``hydra.run.dir`` in ``config.yaml``, so that a resumed run writes on in the folder it
    started in.

    >>> run_dir_of(None, "outputs/new")
    'outputs/new'
    """
    if ckpt:
        p = Path(ckpt).resolve()
        run = p.parent.parent.parent
        if p.parent.name == "rl" and p.parent.parent.name == "checkpoints" and (run / "config.yaml").is_file():
            return str(run)
    return default


OmegaConf.register_new_resolver("kgreason.run_dir", run_dir_of, replace=True)


def data_dir(sub: str = "") -> str:
    """Absolute path of the shared data (``$KGREASON_DATA``, else ``../shared/data`` beside the checkout).

    ``${kgreason.data:metaqa}`` in a config: the same file whatever folder the runner is
    started from.
    """
    import os

    root = os.environ.get("KGREASON_DATA") or str(CONFIG_DIR.parents[1] / ".." / "shared" / "data")
    return str((Path(root) / sub).resolve())


OmegaConf.register_new_resolver("kgreason.data", data_dir, replace=True)


def compose_config(overrides: Sequence[str] = (), config_dir: str | Path | None = None) -> DictConfig:
    """Compose the runner's config in-process (no subprocess), as ``run.py`` would see it."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(str(Path(config_dir or CONFIG_DIR).resolve()), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def validate_config(cfg: DictConfig) -> None:
    """Refuse a config that cannot run, before anything loads (a model takes seconds).

    Raises:
        ConfigError: an unknown ``stage``, a ``checkpoint``/``resume`` path that is not
            a file, a ``data.stratify`` that is not a question field, or an ``sft.bf16``
            or ``objective.bf16`` that is not true, false or auto; the message names the
            bad value and the valid choices.

    >>> validate_config(compose_config(["method=kg_r1", "preset=smoke", "stage=evl"]))
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: stage='evl' is not a stage; choose one of all, eval, sft, rl (did you mean 'eval'?)
    """
    stage = cfg.get("stage")
    if stage not in STAGES:
        close = difflib.get_close_matches(str(stage), STAGES, n=1)
        raise ConfigError(f"stage={stage!r} is not a stage; choose one of {', '.join(STAGES)}"
                          + (f" (did you mean {close[0]!r}?)" if close else ""))
    for key in ("checkpoint", "resume"):
        path = cfg.get(key)
        if path and not Path(path).is_file():
            raise ConfigError(f"{key}={path!r}: no such file")
    if cfg.get("resume") and stage not in ("all", "rl"):
        raise ConfigError(f"resume continues the RL stage; stage={stage!r} has none (use stage=all or stage=rl)")
    by = (cfg.get("data") or {}).get("stratify")
    if by is not None:  # otherwise found only after the questions load
        from kgreason.data.splits import check_stratify

        try:
            check_stratify(by)
        except DatasetError as e:
            raise ConfigError(str(e)) from None
    for group in ("sft", "objective"):  # otherwise found when that stage starts
        if (cfg.get(group) or {}).get("bf16") is not None:
            from kgreason.models.precision import resolve_bf16

            try:
                resolve_bf16(cfg[group].bf16)
            except ValueError as e:
                raise ConfigError(f"{group}.{e}") from None
    check_compatible(cfg)


#: rollout ``_target_`` → the kind a reward may ask for (``register(..., rollout=)``)
ROLLOUT_KINDS = {"kgreason.training.LinearExperience.build": "linear",
                 "kgreason.training.TreeExperience.build": "tree"}
#: action-space ``_target_`` → its registered name (a test keeps this equal to ACTION_SPACES)
ACTION_SPACE_TARGETS = {"kgreason.envs.ISPActionSpace": "isp_dtpo", "kgreason.envs.KBQAR1ActionSpace": "kbqa_r1",
                        "kgreason.envs.KGR1ActionSpace": "kg_r1", "kgreason.envs.KGReasonerActionSpace": "kg_reasoner",
                        "kgreason.envs.KnowCoderActionSpace": "knowcoder_a1"}


def _component_names(reward: object) -> list[str]:
    comps = reward.get("components") if isinstance(reward, DictConfig) else None
    return [str(c.get("name")) for c in comps or () if isinstance(c, DictConfig) and c.get("name")]


def _fitting_rewards(kind: str | None, space: str | None) -> list[str]:
    """The ``reward`` options whose every component fits this rollout kind and action space."""
    from kgreason.rewards import REWARDS

    fit = []
    for f in sorted((CONFIG_DIR / "reward").glob("*.yaml")):
        names = _component_names(OmegaConf.load(f))
        if names and all(_misfit(REWARDS.meta(n) if n in REWARDS else {}, kind, space) is None for n in names):
            fit.append(f.stem)
    return fit


def _misfit(meta: dict, kind: str | None, space: str | None) -> str | None:
    if meta.get("rollout") and kind and meta["rollout"] != kind:
        return f"scores {meta['rollout']} nodes: it needs rollout={meta['rollout']}, but the rollout is {kind}"
    if meta.get("action_space") and space and meta["action_space"] != space:
        return (f"scores the output of action space {meta['action_space']!r}, but env uses {space!r} "
                "(it would score 0 on every step)")
    return None


def check_compatible(cfg: DictConfig) -> None:
    """Refuse a reward whose components do not fit the rollout or the action space.

    Each registered reward declares what it needs (``kgreason.rewards.register(name,
    rollout=..., action_space=...)``); parts from outside kgreason (unknown targets or
    names) are not judged.

    Raises:
        ConfigError: naming the component, both parts and the ``reward`` options that fit.

    >>> check_compatible(compose_config(["method=kg_r1", "reward=isp_dtpo"]))
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: reward component 'isp_format' (reward.components.0) scores the output of action space 'isp_dtpo', but env uses 'kg_r1' (it would score 0 on every step). Choose env=isp_dtpo, or a reward that fits rollout=linear and env=kg_r1: em, f1, kg_r1
    """
    reward = cfg.get("reward")
    names = _component_names(reward)
    if not names:
        return
    from kgreason.rewards import REWARDS

    rollout, env = cfg.get("rollout"), cfg.get("env")
    kind = ROLLOUT_KINDS.get(str(rollout.get("_target_"))) if isinstance(rollout, DictConfig) else None
    space_node = env.get("space") if isinstance(env, DictConfig) else None
    space = ACTION_SPACE_TARGETS.get(str(space_node.get("_target_"))) if isinstance(space_node, DictConfig) else None
    for i, name in enumerate(names):
        meta = REWARDS.meta(name) if name in REWARDS else {}
        why = _misfit(meta, kind, space)
        if why is None:
            continue
        fix = (f"rollout={meta['rollout']}" if meta.get("rollout") and meta["rollout"] != kind
               else f"env={meta['action_space']}")
        fit = _fitting_rewards(kind, space)
        raise ConfigError(f"reward component {name!r} (reward.components.{i}) {why}. Choose {fix}, or a reward "
                          f"that fits rollout={kind} and env={space}: {', '.join(fit) or 'none shipped'}")


_NOT_IN_STRUCT = re.compile(r"Could not override '([^']+)'")


def check_overrides(overrides: Sequence[str]) -> DictConfig:
    """Compose with the command line's overrides; a key that does not exist is a
    :class:`ConfigError` naming the keys that do, and the closest one.

    >>> check_overrides(["method=kg_r1", "rl.iteration=3"])
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: rl.iteration is not a key of rl (keys: checkpoint_every, iterations); did you mean rl.iterations? (to add a new key, write +rl.iteration=...)
    """
    from hydra.errors import ConfigCompositionException

    try:
        return compose_config(overrides)
    except ConfigCompositionException as e:
        m = _NOT_IN_STRUCT.search(str(e))
        if m is None:
            raise ConfigError(str(e)) from None
        key = m.group(1)
        parent, _, leaf = key.rpartition(".")
        rest = [o for o in overrides if not o.lstrip("+~").startswith(key + "=")]
        base = compose_config(rest)
        node = OmegaConf.select(base, parent) if parent else base
        if not isinstance(node, DictConfig):
            raise ConfigError(f"{key}: {parent or 'the root'} has no keys") from None
        keys = sorted(str(k) for k in node)
        close = difflib.get_close_matches(leaf, keys, n=1)
        if close:
            guess = f"{parent}.{close[0]}" if parent else close[0]
        else:  # the right key in another group (trainer.rl_iteration -> rl.iterations)
            paths = _paths(OmegaConf.to_container(base, resolve=False))
            by_leaf = difflib.get_close_matches(leaf, [p.rpartition(".")[2] for p in paths], n=1, cutoff=0.75)
            guess = next((p for p in paths if by_leaf and p.rpartition(".")[2] == by_leaf[0]), None)
        raise ConfigError(f"{key} is not a key of {parent or 'the root config'} (keys: {', '.join(keys)})"
                          + (f"; did you mean {guess}?" if guess else "")
                          + f" (to add a new key, write +{key}=...)") from None


def _paths(tree: dict, prefix: str = "", depth: int = 3) -> list[str]:
    """Dotted paths of a config's keys (as a plain dict), ``depth`` levels down."""
    out = []
    for k, v in tree.items():
        path = f"{prefix}{k}"
        out.append(path)
        if depth > 1 and isinstance(v, dict):
            out += _paths(v, path + ".", depth - 1)
    return out
