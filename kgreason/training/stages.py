"""Stage hooks the runner calls with what it has built.

A hook is a plain callable; the config group that selects it passes its options with
``_partial_: true`` and the runner calls it with the run's parts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kgreason.declarations import declare
from kgreason.envs.base import KGEnv
from kgreason.types import KBQASample


def no_ranker_training(train: Sequence[KBQASample], make_env: Callable[[], KGEnv], out: Path,
                       trainer_kw: dict[str, Any], from_run: Path | None = None) -> dict[str, Any]:
    """The ranker-training stage of a method without a trainable ranker: nothing to do.

    A trainable ranker's stage has the same signature, trains the ranker the env factory
    holds (``make_env.space``'s ranker) and returns figures to report. ``from_run`` is the
    run folder of the ``checkpoint=`` policy the run starts from, if any: that run's
    ranker is the one the policy was trained with.
    """
    return {}


@declare(trains=True)
def train_ranker(train: Sequence[KBQASample], make_env: Callable[[], KGEnv], out: Path,
                 trainer_kw: dict[str, Any], from_run: Path | None = None, **options: Any) -> dict[str, Any]:
    """The ranker-training stage of a trainable ranker (``ranker_training=gat``): fits the
    env factory's ranker on gold paths with
    :func:`kgreason.training.ranker.train_entity_ranker` (``options`` are its own). The
    hook is here, apart from it, so that reading what the stage declares (it needs a
    trainable ranker) does not import Lightning and PyG."""
    from kgreason.training.ranker import train_entity_ranker

    return train_entity_ranker(train, make_env, out, trainer_kw, from_run, **options)
