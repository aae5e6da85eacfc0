"""Runs that would build the same cold start share one (``cold_start_cache=DIR``).

Most rows of a paper's ablation table differ only after the cold start: the reward, the
RL stage, the rollouts (KnowCoder-A1 Table 3, ISP/DTPO Table 6 and RQ2, three of KBQA-R1
Table VI's rows). With a cache folder, the first row that needs a cold start builds and
trains it and stores what later stages read: the SFT weights, the cold-start record, each
question's SFT loss and the evaluation after SFT. A later row whose config agrees on
everything the cold start and that evaluation read takes them from the cache instead of
redoing them; its ``results.json`` names the run it took them from (``cold_start_reused``).

The key is a hash of the resolved config without the keys only later stages read
(:data:`AFTER_COLD_START`), of the precision the host gives SFT (``sft.bf16=auto`` is
decided per host) and of the library's version. A cache belongs to one checkout of the
code: the ablation configs keep it inside the sweep's folder
(``${hydra:sweep.dir}/cold_start_cache``).

Layout: ``DIR/<key>/`` holds ``policy_sft.pt``, ``cold_start.json``, ``sft_losses.json``,
``eval_sft.jsonl`` and ``trajectories_sft.jsonl`` (the SFT evaluation's episodes) when it
ran, ``key.yaml`` (the config that was hashed) and ``made_by.json``; an entry is written to
a temporary folder and renamed into place, so a reader never sees half of one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("kgreason.cold_start_cache")

#: config keys read only after the cold start and its evaluation (the RL stage, its
#: rewards, rollouts and curriculum, and bookkeeping): runs that differ only in these share
#: a cold start. Everything else (model, data, KB, env, ranker, cold start, SFT, trainer,
#: evaluation, engine, seed, checkpoint) is part of the key.
AFTER_COLD_START = ("rl", "objective", "reward", "rollout", "curriculum", "logger", "row", "stage",
                    "resume", "cold_start_cache")

#: the files of an entry, and where a run keeps them (relative to its folder)
FILES = {"policy_sft.pt": "checkpoints/policy_sft.pt", "cold_start.json": "checkpoints/cold_start.json",
         "sft_losses.json": "sft_losses.json"}


def cold_start_key(cfg: DictConfig, sft_precision: str | None = None) -> tuple[str, dict[str, Any]]:
    """The cache key of ``cfg``'s cold start, and the config it hashes.

    Args:
        cfg: the run's config (resolved here; it is not changed).
        sft_precision: what the host gives SFT (``results["precision"]["sft"]``).

    Returns:
        The key (16 hex digits) and the hashed config.

    >>> a = OmegaConf.create({"seed": 0, "sft": {"lr": 1e-4}, "reward": {"beta": 0.5}})
    >>> b = OmegaConf.create({"seed": 0, "sft": {"lr": 1e-4}, "reward": {"beta": 1.0}})
    >>> c = OmegaConf.create({"seed": 0, "sft": {"lr": 2e-4}, "reward": {"beta": 0.5}})
    >>> cold_start_key(a)[0] == cold_start_key(b)[0], cold_start_key(a)[0] == cold_start_key(c)[0]
    (True, False)
    """
    from kgreason import __version__

    resolved = OmegaConf.to_container(cfg, resolve=True)
    kept = {k: v for k, v in resolved.items() if k not in AFTER_COLD_START}
    kept["_host"] = {"sft_precision": sft_precision, "kgreason": __version__}
    text = json.dumps(kept, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16], kept


class ColdStartCache:
    """A folder of cold starts, one per key (see the module's docstring).

    Args:
        root: the cache folder (made when the first entry is stored).
        key: this run's key (:func:`cold_start_key`).
        hashed: the config the key hashes (stored beside the entry as ``key.yaml``).
    """

    def __init__(self, root: str | Path, key: str, hashed: dict[str, Any] | None = None):
        self.root = Path(root)
        self.key = key
        self.hashed = hashed or {}
        self.entry = self.root / key

    def hit(self) -> bool:
        """Whether a cold start with this key is stored."""
        return (self.entry / "policy_sft.pt").is_file()

    def made_by(self) -> dict[str, Any]:
        """The run that stored the entry (``run``, ``row``)."""
        path = self.entry / "made_by.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def restore(self, out: Path, with_eval: bool) -> bool:
        """Copy the entry into the run folder ``out`` where a run's own cold start would
        have written it; with ``with_eval``, the SFT evaluation's rows too
        (``eval_sft.jsonl``) and its episodes appended to ``trajectories.jsonl``.

        Returns:
            Whether the SFT evaluation was restored (stored and asked for).
        """
        for name, where in FILES.items():
            if (self.entry / name).is_file():
                (out / where).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(self.entry / name, out / where)
        if not (with_eval and (self.entry / "eval_sft.jsonl").is_file()):
            return False
        shutil.copy2(self.entry / "eval_sft.jsonl", out / "eval_sft.jsonl")
        episodes = self.entry / "trajectories_sft.jsonl"
        if episodes.is_file():
            with open(out / "trajectories.jsonl", "a", encoding="utf-8") as f:
                f.write(episodes.read_text(encoding="utf-8"))
        return True

    def store(self, out: Path, row: str | None = None) -> None:
        """Store the cold start the run in ``out`` built (and its SFT evaluation, if it ran);
        an entry already there is kept (the first run with a key made it)."""
        if self.hit() or not (out / FILES["policy_sft.pt"]).is_file():
            return
        tmp = self.root / f".{self.key}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, where in FILES.items():
            if (out / where).is_file():
                shutil.copy2(out / where, tmp / name)
        if (out / "eval_sft.jsonl").is_file():
            shutil.copy2(out / "eval_sft.jsonl", tmp / "eval_sft.jsonl")
            lines = []
            if (out / "trajectories.jsonl").is_file():
                with open(out / "trajectories.jsonl", encoding="utf-8") as f:
                    lines = [line for line in f if _stage(line) == "eval/sft"]
            (tmp / "trajectories_sft.jsonl").write_text("".join(lines), encoding="utf-8")
        (tmp / "key.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(self.hashed)), encoding="utf-8")
        (tmp / "made_by.json").write_text(json.dumps({"run": str(out), "row": row}), encoding="utf-8")
        try:
            os.replace(tmp, self.entry)
        except OSError:  # another run stored the same key first: theirs stays
            shutil.rmtree(tmp, ignore_errors=True)
            return
        log.info("cold start stored for reuse: %s", self.entry)


def _stage(line: str) -> str | None:
    try:
        return json.loads(line).get("stage")
    except (json.JSONDecodeError, AttributeError):  # a line cut off mid-write
        return None
