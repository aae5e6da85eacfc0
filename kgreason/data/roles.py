"""The three fixed splits of a dataset and the rule that keeps its report split honest.

Every dataset preset has a **train** split (what cold starts and RL learn from), a
**tune** split (what presets, teachers and sweeps may be chosen by) and a **report**
split (what a paper-style figure is measured on, and nothing is chosen by). The rule
(docs/data.md#three-splits):

* nothing trains on the report split: :func:`~kgreason.data.load_splits` refuses it as
  ``data.train_split`` and takes its questions out of a training split that contains it;
* a run that evaluates on it says so (``results.json`` → ``split``, a log line);
* a sweep that varies anything but the seed, the method or an ablation row refuses it
  (:func:`check_report_sweep`): a value picked by its report score is tuned on it.

MetaQA ships only its dev files here, so its three splits are a fixed partition of
them (:func:`partition`): by a hash of the hop count and the question's text, so that
the partition does not move with the seed, the file's order or the hops loaded, and a
question written twice lands in one split.
"""

from __future__ import annotations

import dataclasses
import hashlib

from kgreason.errors import ConfigError

#: the roles a split can play, and the two an evaluation may have without being either
ROLES = ("train", "tune", "report")
#: what a sweep on the report split may vary: each value is a row of a table, not a choice
REPORT_SWEEPABLE = frozenset({"seed", "method", "ablation", "ablation_row"})


@dataclasses.dataclass(frozen=True)
class SplitRoles:
    """Which of a dataset's split names plays each role.

    Attributes:
        train, tune, report: the split names.
        covering: other split names whose questions include the report split's
            (MetaQA's whole ``dev`` file, a JSON-lines file's ``all``).

    >>> roles = SplitRoles("train", "dev", "test", covering=("all",))
    >>> [roles.role(s) for s in ("train", "dev", "test", "all", "other")]
    ['train', 'tune', 'report', 'covers report', 'other']
    """

    train: str
    tune: str
    report: str
    covering: tuple[str, ...] = ()

    def role(self, split: str) -> str:
        """``train``, ``tune``, ``report``, ``covers report`` or ``other``."""
        for role in ROLES:
            if split == getattr(self, role):
                return role
        return "covers report" if split in self.covering else "other"

    def touches_report(self, split: str) -> bool:
        """Whether evaluating ``split`` scores report questions."""
        return self.role(split) in ("report", "covers report")


#: MetaQA's partition of its dev file: tenths of a hash, 8 train, 1 tune, 1 report
METAQA_SHARES = (("dev_report", 1), ("dev_tune", 1), ("dev_train", 8))


def partition(key: str, shares: tuple[tuple[str, int], ...] = METAQA_SHARES) -> str:
    """The split ``key`` falls in: a SHA-256 of ``key`` modulo the shares' sum, so the
    answer depends on the key alone.

    >>> partition("1|what movies did [Sam Raimi] direct")
    'dev_train'
    >>> from collections import Counter
    >>> sorted(Counter(partition(str(i)) for i in range(10_000)).items())
    [('dev_report', 1018), ('dev_train', 7935), ('dev_tune', 1047)]
    """
    total = sum(n for _, n in shares)
    bucket = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % total
    for name, n in shares:
        if bucket < n:
            return name
        bucket -= n
    raise AssertionError("unreachable: the buckets cover the total")


def split_roles(dataset: str) -> SplitRoles | None:
    """The roles a registered dataset declares (``None``: it declares none, e.g. a
    benchmark file that is one test set)."""
    from kgreason.data.datasets import DATASETS

    return DATASETS.meta(dataset).get("splits") if dataset in DATASETS else None


def eval_role(dataset: str, eval_split: str) -> str:
    """The role of ``eval_split`` in ``dataset`` (``other`` when it declares none).

    >>> eval_role("metaqa", "dev_report"), eval_role("metaqa", "dev"), eval_role("demo", "dev")
    ('report', 'covers report', 'tune')
    """
    roles = split_roles(dataset)
    return roles.role(eval_split) if roles else "other"


def check_report_sweep(dataset: str, eval_split: str, swept: set[str]) -> None:
    """Refuse a sweep that would choose a value by its score on the report split.

    Args:
        dataset, eval_split: the run's ``data.name`` and ``data.eval_split``.
        swept: the keys the sweep varies (the command line's and ``hydra.sweeper.params``).

    Raises:
        ConfigError: ``eval_split`` touches the report split and ``swept`` has a key
            outside :data:`REPORT_SWEEPABLE`; the message names the tune split.

    >>> check_report_sweep("demo", "dev", {"objective.lr"})
    >>> check_report_sweep("demo", "test", {"seed", "ablation_row"})
    >>> check_report_sweep("demo", "test", {"objective.lr", "seed"})
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: this sweep varies objective.lr and evaluates on data.eval_split=test, the report split of dataset 'demo' (role: report): a value chosen by that score is tuned on it. Sweep on the tune split (data.eval_split=dev) and evaluate the chosen setting on test once; a sweep on the report split may vary only ablation, ablation_row, method, seed
    """
    roles = split_roles(dataset)
    tuned = sorted(swept - REPORT_SWEEPABLE)
    if roles is None or not tuned or not roles.touches_report(eval_split):
        return
    raise ConfigError(
        f"this sweep varies {', '.join(tuned)} and evaluates on data.eval_split={eval_split}, the report split of "
        f"dataset {dataset!r} (role: {roles.role(eval_split)}): a value chosen by that score is tuned on it. "
        f"Sweep on the tune split (data.eval_split={roles.tune}) and evaluate the chosen setting on "
        f"{roles.report} once; a sweep on the report split may vary only {', '.join(sorted(REPORT_SWEEPABLE))}")
