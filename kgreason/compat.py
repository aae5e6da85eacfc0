"""Compose-time checks: what each part declares it needs, against what the others offer.

Runs on the composed config before any part is built (no model, no KB, no encoder):
each part's declarations (:mod:`kgreason.declarations`, and the registries' ``meta``)
are read from its ``_target_`` or registered name, and every pair that cannot work is a
:class:`~kgreason.errors.ConfigError` naming both parts, the fix and the options of the
faulty group that would fit. Parts kgreason does not know (a ``_target_`` of one's own
that declares nothing, an unregistered name) are not judged.

The pairs judged:

* reward component × rollout kind and action space (a reward that reads another
  space's tags, or a whole episode's turns on a tree of one-step samples, would score 0);
* advantage estimator × rollout kind (a reward without per-turn values is all global
  to a turn-level estimator, so any reward fits one);
* ranker × action space (a space that ranks nothing; a graph ranker on a flat list is
  adapted, see :meth:`~kgreason.rankers.base.TrainableRanker.flat_context`), and the
  ranker-training stage × a trainable ranker;
* cold start (or its teachers) × action space, and × the gold fields the data carries;
* KB schema × the data's schema, and × the schemas the action space can address.

:func:`problems` lists every refusal; :func:`check_compatible` raises the first. The
mixing-matrix test enumerates the shipped options through :func:`problems`.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from kgreason.config import CONFIG_DIR
from kgreason.declarations import declared
from kgreason.errors import ConfigError


@functools.cache
def _locate(target: object) -> Any:
    """The object a ``_target_`` names, or ``None`` when it cannot be imported."""
    if not isinstance(target, str) or not target:
        return None
    from hydra.utils import get_object

    try:
        obj = get_object(target)
    except Exception:  # a target of one's own that does not import here is not judged
        return None
    return getattr(obj, "__self__", obj)  # a classmethod (``LinearExperience.build``) declares on its class


def facts(node: object) -> dict[str, Any]:
    """What the part a config node builds declares (``{}``: nothing, or no ``_target_``)."""
    if not isinstance(node, DictConfig):
        return {}
    return declared(_locate(node.get("_target_")))


@functools.cache
def option_names(group: str) -> list[str]:
    """The shipped options of a config group."""
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


@functools.cache
def _option_node(group: str, name: str) -> DictConfig:
    node = OmegaConf.load(CONFIG_DIR / group / f"{name}.yaml")
    if not isinstance(node, DictConfig):
        raise ConfigError(f"{group}/{name}.yaml is not a mapping")
    parents = [d for d in node.pop("defaults", []) if isinstance(d, str) and d != "_self_"]
    for parent in parents:
        node = OmegaConf.merge(_option_node(group, parent), node)
    return node


def option_node(group: str, name: str) -> DictConfig:
    """A shipped option's node as its file says, merged over the same-group options it
    lists in ``defaults`` (``objective/tree_step`` over ``objective/grpo``); a copy."""
    return copy.deepcopy(_option_node(group, name))


def option_nodes(group: str) -> dict[str, DictConfig]:
    """:func:`option_node` of every shipped option of ``group``."""
    return {name: option_node(group, name) for name in option_names(group)}


def _fitting(group: str, ok: Callable[[DictConfig], bool]) -> str:
    names = [name for name in option_names(group) if ok(_option_node(group, name))]
    return ", ".join(names) or "none shipped"


@dataclass
class Composition:
    """The declarations of one composed config, read once."""

    kind: str | None             #: rollout kind: linear | tree
    space: str | None            #: the action space's registered name
    space_facts: dict[str, Any]
    ranker: DictConfig | None
    ranker_facts: dict[str, Any]
    components: list[str]         #: reward component names
    advantage: str | None
    cold_start: DictConfig | None
    training_facts: dict[str, Any]  #: the ranker-training stage's
    kb_schema: str | None
    data_name: str | None
    data_meta: dict[str, Any]

    @classmethod
    def read(cls, cfg: DictConfig) -> Composition:
        """The declarations of a composed config's parts."""
        return cls.of(**{g: cfg.get(g) for g in ("env", "rollout", "ranker", "reward", "objective", "cold_start",
                                                 "ranker_training", "kb", "data")})

    @classmethod
    def of(cls, env: Any = None, rollout: Any = None, ranker: Any = None, reward: Any = None, objective: Any = None,
           cold_start: Any = None, ranker_training: Any = None, kb: Any = None, data: Any = None) -> Composition:
        """The declarations of the parts these group nodes build (a node may be missing)."""
        from kgreason.envs.factory import ACTION_SPACES

        space_node = env.get("space") if isinstance(env, DictConfig) else None
        target = space_node.get("_target_") if isinstance(space_node, DictConfig) else None
        data_name = data.get("name") if isinstance(data, DictConfig) else None
        return cls(
            kind=facts(rollout).get("rollout"),
            space=ACTION_SPACES.name_of(str(target)) if target else None,
            space_facts=facts(space_node),
            ranker=ranker if isinstance(ranker, DictConfig) else None,
            ranker_facts=facts(ranker),
            components=component_names(reward),
            advantage=objective.get("advantage") if isinstance(objective, DictConfig) else None,
            cold_start=cold_start if isinstance(cold_start, DictConfig) else None,
            training_facts=facts(ranker_training),
            kb_schema=kb_schema(kb),
            data_name=str(data_name) if data_name else None,
            data_meta=_dataset_meta(data_name),
        )


def component_names(reward: object) -> list[str]:
    """The registered names of a ``CompositeReward`` config's components."""
    comps = reward.get("components") if isinstance(reward, DictConfig) else None
    return [str(c.get("name")) for c in comps or () if isinstance(c, DictConfig) and c.get("name")]


def kb_schema(node: object) -> str | None:
    """A KB config's schema: its ``schema`` option when it is a name, else what its loader declares."""
    if not isinstance(node, DictConfig):
        return None
    schema = node.get("schema")
    if isinstance(schema, str):
        return schema
    return None if schema is not None else facts(node).get("schema")


def _dataset_meta(name: object) -> dict[str, Any]:
    if not name:
        return {}
    from kgreason.data.datasets import DATASETS

    return DATASETS.meta(str(name)) if str(name) in DATASETS else {}


# ----------------------------------------------------------------------------- the checks
def _reward_misfit(meta: dict[str, Any], kind: str | None, space: str | None) -> str | None:
    # the action space first: a reward of another space's tags fits no rollout of this one
    if meta.get("action_space") and space and meta["action_space"] != space:
        return (f"scores the output of action space {meta['action_space']!r}, but env uses {space!r} "
                "(it would score 0 on every step)")
    if meta.get("rollout") and kind and meta["rollout"] != kind:
        if meta["rollout"] == "tree":
            return f"scores tree nodes: it needs rollout=tree, but the rollout is {kind}"
        return (f"reads the turns of whole episodes: it needs rollout={meta['rollout']}, but the rollout is {kind} "
                "(a tree's one-step samples have no turns: it would score 0)")
    return None


def _reward_problems(c: Composition) -> Iterable[str]:
    from kgreason.rewards import REWARDS

    for i, name in enumerate(c.components):
        meta = REWARDS.meta(name) if name in REWARDS else {}
        why = _reward_misfit(meta, c.kind, c.space)
        if why is None:
            continue
        fix = (f"env={meta['action_space']}" if meta.get("action_space") and meta["action_space"] != c.space
               else f"rollout={meta['rollout']}")
        fit = _fitting("reward", lambda n: bool(component_names(n)) and all(
            _reward_misfit(REWARDS.meta(x) if x in REWARDS else {}, c.kind, c.space) is None
            for x in component_names(n)))
        yield (f"reward component {name!r} (reward.components.{i}) {why}. Choose {fix}, or a reward "
               f"that fits rollout={c.kind} and env={c.space}: {fit}")


def _advantage_problems(c: Composition) -> Iterable[str]:
    if not c.advantage:
        return
    from kgreason.rl.advantages import ADVANTAGES

    meta = ADVANTAGES.meta(str(c.advantage)) if str(c.advantage) in ADVANTAGES else {}
    if meta.get("rollout") and c.kind and meta["rollout"] != c.kind:
        fit = _fitting("objective", lambda n: (ADVANTAGES.meta(str(n.get("advantage")))
                                               if str(n.get("advantage")) in ADVANTAGES else {}
                                               ).get("rollout") in (None, c.kind))
        yield (f"objective.advantage={c.advantage!r} groups {meta['rollout']} samples: it needs "
               f"rollout={meta['rollout']}, but the rollout is {c.kind}. Choose rollout={meta['rollout']}, "
               f"or an objective that fits rollout={c.kind}: {fit}")


def _ranker_problems(c: Composition) -> Iterable[str]:
    ranks = c.space_facts.get("ranks")
    ranker_name = c.ranker.get("_target_") if c.ranker is not None else None
    if c.ranker is not None and c.space_facts and not ranks:
        yield (f"ranker {ranker_name} was given, but env's action space {c.space!r} ranks nothing. "
               "Choose ranker=null, or an env whose action space ranks: "
               + _fitting("env", lambda n: bool(facts(n.get("space")).get("ranks"))))
    elif c.ranker is not None and ranks and c.ranker_facts:
        offered = set(c.space_facts.get("contexts") or ())
        readable = set(c.ranker_facts.get("contexts") or ()) | set(c.ranker_facts.get("adapts") or ())
        if offered and not offered & readable:
            yield (f"ranker {ranker_name} reads a {' or '.join(sorted(readable))} context, but env's action space "
                   f"{c.space!r} offers {' or '.join(sorted(offered))} candidates. Choose a ranker that fits: "
                   + _fitting("ranker", lambda n: bool(offered & (set(facts(n).get("contexts") or ())
                                                                | set(facts(n).get("adapts") or ())))))
    if c.training_facts.get("trains") and not c.ranker_facts.get("trainable"):
        yield (f"ranker_training trains the env's ranker, but ranker={ranker_name or 'null'} has no parameters. "
               "Choose ranker_training=none, or a trainable ranker: "
               + _fitting("ranker", lambda n: bool(facts(n).get("trainable"))))


def _teacher_facts(cold_start: DictConfig) -> list[tuple[str, dict[str, Any]]]:
    teachers = cold_start.get("teachers")
    if not isinstance(teachers, ListConfig):
        return []
    return [(str(t.get("_target_")), facts(t)) for t in teachers if isinstance(t, DictConfig)]


def _cold_start_problems(c: Composition) -> Iterable[str]:
    if c.cold_start is None:
        return
    own = facts(c.cold_start)
    who = f"cold_start {c.cold_start.get('_target_')}"
    players = [(who, own)] if own.get("action_space") else _teacher_facts(c.cold_start)
    for name, f in players:
        if f.get("action_space") and c.space and f["action_space"] != c.space:
            yield (f"{name} plays action space {f['action_space']!r}, but env uses {c.space!r} "
                   f"(its episodes would not parse). Choose env={f['action_space']}, or a cold start that fits "
                   f"env={c.space}: {_fitting('cold_start', lambda n: _plays(n) in (None, c.space))}")
            return
    has = c.data_meta.get("gold")
    if has is None:  # data of one's own: which gold fields it has is known only when it loads
        return
    for name, f in [(who, own), *_teacher_facts(c.cold_start)]:
        need = tuple(f.get("gold") or ())
        if need and not set(need) & set(has):
            yield (f"{name} builds its episodes from gold {' or '.join(need)}, but data {c.data_name!r} has "
                   f"{', '.join(has) or 'no gold logical form'}. Choose data with {' or '.join(need)}, or a cold "
                   f"start these questions fit: {_fitting('cold_start', lambda n: _fits_gold(n, has))}")
            return


def _plays(node: DictConfig) -> str | None:
    """The action space a cold-start option plays (its own, or its teachers'), ``None``: any."""
    own = facts(node).get("action_space")
    if own:
        return own
    spaces = {f.get("action_space") for _, f in _teacher_facts(node)} - {None}
    return next(iter(spaces)) if len(spaces) == 1 else None


def _fits_gold(node: DictConfig, has: Iterable[str]) -> bool:
    needs = [tuple(facts(node).get("gold") or ())] + [tuple(f.get("gold") or ()) for _, f in _teacher_facts(node)]
    return all(not need or set(need) & set(has) for need in needs)


def _schema_problems(c: Composition) -> Iterable[str]:
    data_schema = c.data_meta.get("schema")
    if c.kb_schema and data_schema and c.kb_schema != data_schema:
        yield (f"kb has schema {c.kb_schema!r}, but data {c.data_name!r} asks about a {data_schema!r} KB "
               f"(its topic entities and answers are not in this KB). Choose a {data_schema} kb "
               f"({_fitting('kb', lambda n: kb_schema(n) == data_schema)}), or data of the {c.kb_schema} KB")
    schemas = c.space_facts.get("schemas")
    if c.kb_schema and schemas and c.kb_schema not in schemas:
        yield (f"env's action space {c.space!r} addresses {' or '.join(schemas)} KBs, but kb has schema "
               f"{c.kb_schema!r}. Choose an env that fits it: "
               + _fitting("env", lambda n: c.kb_schema in (facts(n.get("space")).get("schemas") or (c.kb_schema,))))


CHECKS = (_reward_problems, _advantage_problems, _ranker_problems, _cold_start_problems, _schema_problems)


def problems(cfg: DictConfig | Composition) -> list[str]:
    """Every combination of ``cfg``'s parts that cannot work, as one message each."""
    c = cfg if isinstance(cfg, Composition) else Composition.read(cfg)
    return [p for check in CHECKS for p in check(c)]


def check_compatible(cfg: DictConfig) -> None:
    """Refuse a composition whose parts do not fit each other (the first problem found).

    Raises:
        ConfigError: naming both parts, the fix and the options that fit.

    >>> from kgreason.config import compose_config
    >>> check_compatible(compose_config(["method=kg_r1", "reward=isp_dtpo"]))
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: reward component 'isp_format' (reward.components.0) scores the output of action space 'isp_dtpo', but env uses 'kg_r1' (it would score 0 on every step). Choose env=isp_dtpo, or a reward that fits rollout=linear and env=kg_r1: em, f1, kg_r1
    """
    found = problems(cfg)
    if found:
        raise ConfigError(found[0])
