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

#: where the runner's config groups live (package data: an installed wheel has them too)
CONFIG_DIR = Path(__file__).resolve().parent / "conf"
#: what ``stage=`` may say
STAGES = ("all", "eval", "sft", "rl")


def _run_holding(ckpt: str | Path | None, *folders: str) -> Path | None:
    """The run folder (one with ``config.yaml``) that holds ``ckpt`` inside ``folders``
    (outermost first), or ``None``."""
    if not ckpt:
        return None
    run = Path(ckpt).resolve().parent
    for name in reversed(folders):
        if run.name != name:
            return None
        run = run.parent
    return run if (run / "config.yaml").is_file() else None


def run_dir_of(ckpt: str | Path | None, default: str) -> str:
    """The run folder a checkpoint belongs to (``<run>/checkpoints/rl/x.ckpt``), else ``default``.

    ``hydra.run.dir`` in ``config.yaml``, so that a resumed run writes on in the folder it
    started in.

    >>> run_dir_of(None, "outputs/new")
    'outputs/new'
    """
    run = _run_holding(ckpt, "checkpoints", "rl")
    return str(run) if run else default


OmegaConf.register_new_resolver("kgreason.run_dir", run_dir_of, replace=True)


def policy_run_of(ckpt: str | Path | None) -> Path | None:
    """The run folder a policy checkpoint was saved in (``<run>/checkpoints/policy.pt``), or
    ``None`` for a file outside a run folder.

    >>> policy_run_of("/nowhere/policy.pt") is None
    True
    """
    return _run_holding(ckpt, "checkpoints")


#: the longest sweep-job folder name kept whole (file systems allow 255 bytes)
JOB_DIR_BYTES = 200


def job_dir_of(overrides: str) -> str:
    """A sweep job's folder name: its overrides (Hydra's ``override_dirname``), cut with a
    hash of the whole where they would pass :data:`JOB_DIR_BYTES`, so that a sweep with
    many overrides still gets one folder a job, each still telling what it ran. A path in
    an override (``cold_start_cache=/runs/cache``) has its ``/`` written ``%2F``, so that
    every job stays one folder directly under the sweep's, where its table looks.

    >>> job_dir_of("reward=f1,seed=0")
    'reward=f1,seed=0'
    >>> job_dir_of("cold_start_cache=/runs/cache,reward=f1")
    'cold_start_cache=%2Fruns%2Fcache,reward=f1'
    >>> long = job_dir_of("data.train_limit=8," * 20)
    >>> len(long.encode()), long[-9:] != job_dir_of("data.eval_limit=8," * 20)[-9:]
    (200, True)
    """
    overrides = overrides.replace("%", "%25").replace("/", "%2F")
    raw = overrides.encode()
    if len(raw) <= JOB_DIR_BYTES:
        return overrides
    import hashlib

    digest = hashlib.sha1(raw).hexdigest()[:8]
    head = raw[: JOB_DIR_BYTES - len(digest) - 1].decode(errors="ignore")
    return f"{head}-{digest}"


OmegaConf.register_new_resolver("kgreason.job_dir", job_dir_of, replace=True)


def data_dir(sub: str = "") -> str:
    """Absolute path of the shared data (``$KGREASON_DATA``, else ``../shared/data`` beside the checkout).

    ``${kgreason.data:metaqa}`` in a config: the same file whatever folder the runner is
    started from.
    """
    import os

    # a checkout's kgreason/ sits in the repository, which has ../shared/data beside it
    root = os.environ.get("KGREASON_DATA") or str(CONFIG_DIR.parents[2] / "shared" / "data")
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
            or ``objective.bf16`` that is not true, false or auto, or a CUDA
            ``trainer.accelerator`` where torch sees no CUDA device; the message names
            the bad value and the valid choices.

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
        # resume also takes the folder a trainer=fsdp or trainer=deepspeed run checkpoints to
        if path and not Path(path).is_file() and not (key == "resume" and Path(path).is_dir()):
            raise ConfigError(f"{key}={path!r}: no such file")
    if cfg.get("resume") and stage not in ("all", "rl"):
        raise ConfigError(f"resume continues the RL stage; stage={stage!r} has none (use stage=all or stage=rl)")
    if cfg.get("resume"):
        check_resume_fits(cfg)
    from kgreason.training.sharding import check_fsdp_config
    from kgreason.training.zero import check_deepspeed_config

    check_fsdp_config(cfg)
    check_deepspeed_config(cfg)
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
    if cfg.get("trainer") is not None:  # a GPU asked for where torch sees none: said before anything loads
        from kgreason.training.devices import run_device

        run_device(cfg.trainer)
    from kgreason.validation import check_values  # ranges, types, paths, installed extras

    check_values(cfg)
    objective, engine = cfg.get("objective") or {}, cfg.get("engine") or {}
    if "temperature" in objective and "temperature" in engine \
            and float(objective.temperature) != float(engine.temperature):
        raise ConfigError(
            f"objective.temperature={objective.temperature} but engine.temperature={engine.temperature}: the "
            "trainer must score rollouts at the temperature they were sampled at (set engine.temperature: objective.temperature follows it)")
    from kgreason.compat import check_compatible  # every part's declarations against the others'

    check_compatible(cfg)


#: keys that fix what a checkpoint holds: the policy's weights and adapters, the objective's state
RESUME_KEYS = ("model.policy", "objective._target_", "objective.advantage")


def _plain(cfg: DictConfig, key: str) -> object:
    node = OmegaConf.select(cfg, key, default=None)
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def _leaf_diffs(key: str, a: object, b: object) -> list[tuple[str, object, object]]:
    """The dotted keys under ``key`` whose values differ between ``a`` and ``b``.

    >>> _leaf_diffs("model", {"name": "x", "lora": {"r": 8}}, {"name": "x", "lora": {"r": 16}})
    [('model.lora.r', 8, 16)]
    """
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str) for d in _leaf_diffs(f"{key}.{k}", a.get(k), b.get(k))]
    return [] if a == b else [(key, a, b)]


def check_resume_fits(cfg: DictConfig) -> None:
    """Refuse ``resume`` from a run whose policy or objective differ from this one's, before
    anything loads (loading its weights fails late, with a state-dict listing of hundreds of
    keys). The run's ``config.yaml``, next to ``checkpoints/``, says what it was; a
    checkpoint moved out of its run folder is not checked here.

    Raises:
        ConfigError: naming each key that differs, both values, and the overrides that wrote the run.
    """
    run = run_dir_of(cfg.resume, "")
    if not run:
        return
    saved = OmegaConf.load(Path(run) / "config.yaml")
    diffs = [d for key in RESUME_KEYS for d in _leaf_diffs(key, _plain(saved, key), _plain(cfg, key))
             if not d[0].endswith(".bf16")]  # precision is not part of the weights' shape
    if not diffs:
        return
    overrides = Path(run) / ".hydra" / "overrides.yaml"
    wrote = " ".join(str(o) for o in OmegaConf.load(overrides)) if overrides.is_file() else "see its config.yaml"
    said = "; ".join(f"{k}: checkpoint {a!r}, this run {b!r}"[:160] for k, a, b in diffs[:4]) \
        + (f"; and {len(diffs) - 4} more" if len(diffs) > 4 else "")
    raise ConfigError(f"resume={str(cfg.resume)!r} was written by a different policy or objective ({said}); "
                      f"resume with the overrides that wrote it: {wrote}")


_NOT_IN_STRUCT = re.compile(r"Could not override '([^']+)'")
_NO_OPTION = re.compile(r"Could not find '([^']+)/([^'/]+)'\s+Available options in '[^']+':\s+((?:\t\S+\n?)+)")


def check_overrides(overrides: Sequence[str]) -> DictConfig:
    """Compose with the command line's overrides; a key that does not exist is a
    :class:`ConfigError` naming the keys that do, and the closest one.

    >>> check_overrides(["method=kg_r1", "rl.iteration=3"])
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: rl.iteration is not a key of rl (keys: checkpoint_every, epochs, iterations); did you mean rl.iterations? (to add a new key, write +rl.iteration=...)
    """
    from hydra.errors import ConfigCompositionException

    try:
        return compose_config(overrides)
    except ConfigCompositionException as e:
        m = _NOT_IN_STRUCT.search(str(e))
        if m is None:
            if (opt := _NO_OPTION.search(str(e))) is not None:  # method=nope: one line, not Hydra's listing
                group, name, listed = opt.groups()
                choices = listed.split()
                close = difflib.get_close_matches(name, choices, n=1)
                raise ConfigError(f"{group.replace('/', '.')}={name} is not an option; choose one of "
                                  f"{', '.join(choices)}" + (f" (did you mean {close[0]}?)" if close else "")) from None
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
