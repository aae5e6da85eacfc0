"""Training a trainable entity ranker on gold-path labels (KG-Reasoner §4.2.2, Eq. 4).

Examples come from :func:`~kgreason.data.paths.gold_walk`: at every step of a question's
gold path, the centre entity's neighbourhood is the graph, the entities that lead on to
an answer are "relevant", every other neighbour "irrelevant". :class:`RankerLitModule`
fits the ranker with cross-entropy; :func:`train_entity_ranker` is the composition's
ranker-training stage (``ranker_training=gat``).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch import Tensor
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from kgreason.data.paths import gold_walk
from kgreason.errors import ConfigError
from kgreason.eval.ranking import ranking_report
from kgreason.kb.base import KnowledgeBase
from kgreason.rankers.base import Ranker, TrainableRanker
from kgreason.rankers.gat import GATEntityRanker, batch_graphs
from kgreason.rankers.graph import Neighbourhood
from kgreason.training.distributed import rank_and_world
from kgreason.training.resume import atomic_save
from kgreason.types import KBQASample

log = logging.getLogger(__name__)


@dataclass
class RankerExample:
    """One ranking decision on a gold path.

    Attributes:
        sample_id, question: the question.
        hop: the path step (0 from the topic entity).
        graph: the centre's neighbourhood; its candidates are what is ranked.
        gold: candidate node indices that lead on to an answer (non-empty).
        qtype: the question type, for per-type reports.
    """

    sample_id: str
    question: str
    hop: int
    graph: Neighbourhood
    gold: list[int]
    qtype: str | None = None

    @property
    def gold_nodes(self) -> set[str]:
        return {self.graph.nodes[i] for i in self.gold}


def ranker_examples(kb: KnowledgeBase, samples: Sequence[KBQASample], centres_per_hop: int = 2,
                    max_neighbours: int = 200, context: int = 8, progress: bool = True) -> tuple[list[RankerExample], int]:
    """Gold-path ranking examples of ``samples`` (those with a relation path).

    Args:
        kb: the knowledge base.
        samples: questions; those without a relation path or a path to an answer are skipped.
        centres_per_hop: at most this many gold centres per hop (a 2-hop question
            through three films yields three hop-1 decisions; the first ones are kept).
        max_neighbours: candidates per neighbourhood (:meth:`Neighbourhood.from_kb`).
        context: second-ring edges per candidate (0 for none).
        progress: show a progress bar.

    Returns:
        ``(examples, dropped)``: ``dropped`` counts decisions whose gold entities all
        fell outside the ``max_neighbours`` candidates.
    """
    out: list[RankerExample] = []
    dropped = 0
    for s in tqdm(samples, desc="ranker examples", disable=not progress):
        per_hop: dict[int, int] = {}
        for h in gold_walk(kb, s):
            if per_hop.get(h.hop, 0) >= centres_per_hop:
                continue
            per_hop[h.hop] = per_hop.get(h.hop, 0) + 1
            g = Neighbourhood.from_kb(kb, h.centre, max_neighbours=max_neighbours, context=context)
            cand = set(g.candidates)
            gold = [i for i, n in enumerate(g.nodes) if n in h.gold and i in cand]
            if not gold:
                dropped += 1
                continue
            out.append(RankerExample(s.id, s.question, h.hop, g, gold, (s.meta or {}).get("qtype") or s.level))
    return out, dropped


def rank_example(ranker: Ranker, ex: RankerExample) -> list[str]:
    """``ex``'s candidate node ids as ``ranker`` orders them, best first (any :class:`Ranker`:
    a trainable one reads the graph, others the candidates' texts)."""
    texts = ex.graph.candidate_texts()
    ctx = ex.graph if isinstance(ranker, TrainableRanker) else None
    scores = ranker.score(ex.question, texts, context=ctx).tolist()
    order = sorted(range(len(texts)), key=lambda i: -scores[i])
    return [ex.graph.nodes[ex.graph.candidates[i]] for i in order]


def evaluate_ranker(ranker: Ranker, examples: Sequence[RankerExample], ks: Sequence[int] = (1, 3, 10),
                    by: Callable[[RankerExample], str] | None = None) -> dict[str, Any]:
    """Recall@k and MRR of the gold entities over ``examples`` (optionally per group).

    Returns:
        ``{"all": report, <group>: report, ...}`` with :func:`~kgreason.eval.ranking.ranking_report`'s keys.
    """
    runs = [(rank_example(ranker, ex), ex.gold_nodes) for ex in examples]
    out: dict[str, Any] = {"all": ranking_report(runs, ks)}
    if by is not None:
        groups: dict[str, list] = {}
        for ex, run in zip(examples, runs, strict=True):
            groups.setdefault(by(ex), []).append(run)
        out.update({g: ranking_report(r, ks) for g, r in sorted(groups.items())})
    return out


class RankerLitModule(L.LightningModule):
    """Cross-entropy training of a :class:`GATEntityRanker` on relevant / irrelevant labels.

    Batches are featurised graphs (:meth:`GATEntityRanker.featurize` with a ``y`` per
    node, 1 for gold candidates); :meth:`featurize` builds them once, since the text
    encoder is frozen.

    Args:
        ranker: the ranker to train (its parameters are this module's).
        lr, weight_decay: AdamW settings.

    Paper: KG-Reasoner (paper 001) Eq. 4, cross-entropy with one-hot labels.
    """

    def __init__(self, ranker: GATEntityRanker, lr: float = 1e-3, weight_decay: float = 1e-4):
        super().__init__()
        self.ranker = ranker
        self.lr = lr
        self.weight_decay = weight_decay

    @staticmethod
    def featurize(ranker: GATEntityRanker, examples: Sequence[RankerExample], progress: bool = True) -> list:
        graphs = []
        for ex in tqdm(examples, desc="featurise", disable=not progress):
            d = ranker.featurize(ex.question, ex.graph)
            y = torch.zeros(len(ex.graph.nodes), dtype=torch.long)
            y[ex.gold] = 1
            d.y = y
            graphs.append(d)
        return graphs

    def loss(self, batch: Any) -> Tensor:
        logits = self.ranker.logits_batch(batch)
        return torch.nn.functional.cross_entropy(logits, batch.y[batch.candidate_mask])

    def training_step(self, batch: Any, batch_idx: int) -> Tensor:
        loss = self.loss(batch)
        self.log("ranker/loss", loss, prog_bar=True, batch_size=int(batch.num_graphs))
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("ranker/val_loss", self.loss(batch), prog_bar=True, batch_size=int(batch.num_graphs))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.ranker.parameters(), lr=self.lr, weight_decay=self.weight_decay)


def graph_loader(graphs: Sequence, batch_size: int, shuffle: bool, seed: int = 0) -> DataLoader:
    """Batches of featurised graphs (disjoint unions)."""
    return DataLoader(list(graphs), batch_size=batch_size, shuffle=shuffle, collate_fn=batch_graphs,
                      generator=torch.Generator().manual_seed(seed))


def fit_ranker(ranker: GATEntityRanker, train: Sequence[RankerExample], epochs: int = 10, batch_size: int = 16,
               lr: float = 1e-3, seed: int = 0, trainer_kw: dict[str, Any] | None = None,
               progress: bool = True) -> dict[str, float]:
    """Train ``ranker`` on ``train`` with :class:`RankerLitModule`; returns timing figures."""
    if not train:
        raise ConfigError("no ranker training examples: the questions have no relation paths that reach an answer")
    L.seed_everything(seed, workers=True, verbose=False)
    t0 = time.perf_counter()
    graphs = RankerLitModule.featurize(ranker, train, progress=progress)
    t1 = time.perf_counter()
    kw = {k: v for k, v in (trainer_kw or {}).items() if k in ("accelerator", "devices", "precision", "default_root_dir")}
    trainer = L.Trainer(max_epochs=epochs, logger=False, enable_checkpointing=False, enable_progress_bar=progress,
                        enable_model_summary=False, **kw)
    trainer.fit(RankerLitModule(ranker, lr=lr), graph_loader(graphs, batch_size, shuffle=True, seed=seed))
    ranker.eval()
    return {"featurise_s": t1 - t0, "train_s": time.perf_counter() - t1, "examples": len(train), "epochs": epochs}


def train_entity_ranker(train: Sequence[KBQASample], make_env: Any, out: Path, trainer_kw: dict[str, Any],
                        from_run: Path | None = None, epochs: int = 10, batch_size: int = 16, lr: float = 1e-3,
                        held_out: float = 0.2, centres_per_hop: int = 2, context: int = 8,
                        max_neighbours: int = 200, seed: int = 0, ks: Sequence[int] = (1, 3, 10)) -> dict[str, Any]:
    """The ranker-training stage: fit the env factory's :class:`GATEntityRanker` on gold paths.

    The training questions are split by question (``held_out`` of them are kept out of
    training and report recall@k / MRR); the trained weights go to ``out/ranker.pt`` and
    the figures to ``out/ranker.json``. A ranker already trained is loaded instead: the one
    of ``from_run`` (the run a ``checkpoint=`` policy comes from: the policy was trained
    with it, and a cross-KG evaluation must not fit one on the KG it is scored on), copied
    into ``out``; else ``out/ranker.pt`` (a resumed run, or ``stage=eval`` in the run's
    folder).

    Raises:
        ConfigError: the factory holds no trainable ranker.
    """
    ranker = getattr(make_env, "ranker", None)
    if not isinstance(ranker, GATEntityRanker):
        raise ConfigError(f"ranker_training=gat trains a GATEntityRanker, but the environment's ranker is "
                          f"{type(ranker).__name__}; use ranker=gat or ranker_training=none")
    if not 0.0 <= held_out < 1.0:
        raise ConfigError(f"held_out={held_out}: choose a fraction in [0, 1)")
    out = Path(out)
    for run in (Path(from_run) if from_run else None, out):
        if run is not None and (run / "ranker.pt").is_file():
            return _load_ranker(ranker, run, out)
    if from_run:
        log.warning("the checkpoint's run %s holds no ranker.pt: training a ranker on this run's training "
                    "questions (the policy was not trained with it)", from_run)
    qs = list(train)
    random.Random(seed).shuffle(qs)
    cut = int(len(qs) * held_out)
    kw = {"centres_per_hop": centres_per_hop, "context": context, "max_neighbours": max_neighbours}
    tr, dropped = ranker_examples(make_env.kb, qs[cut:], **kw)
    figures: dict[str, Any] = {"dropped": dropped, **fit_ranker(ranker, tr, epochs, batch_size, lr, seed, trainer_kw)}
    if cut:
        ho, _ = ranker_examples(make_env.kb, qs[:cut], **kw)
        if ho:
            figures["held_out"] = evaluate_ranker(ranker, ho, ks)["all"]
    if rank_and_world()[0] == 0:  # under trainer=ddp every process holds the same synchronised weights
        out.mkdir(parents=True, exist_ok=True)
        # atomic: a resumed run loads this file, so a crash must not leave half of it
        atomic_save(ranker.state_dict(), out / "ranker.pt")
        (out / "ranker.json").write_text(json.dumps(figures, indent=2))
    return figures


def _load_ranker(ranker: GATEntityRanker, run: Path, out: Path) -> dict[str, Any]:
    """Load ``run``'s trained ranker into ``ranker``, copied into ``out`` when ``run`` is another
    folder (so that ``out`` can be evaluated again alone); its figures, plus ``loaded``."""
    ranker.load_state_dict(torch.load(run / "ranker.pt", map_location="cpu"))  # the env ranks on the CPU
    ranker.eval()
    saved = run / "ranker.json"
    figures = json.loads(saved.read_text()) if saved.is_file() else {}
    if run.resolve() != out.resolve() and rank_and_world()[0] == 0:
        out.mkdir(parents=True, exist_ok=True)
        atomic_save(ranker.state_dict(), out / "ranker.pt")
        (out / "ranker.json").write_text(json.dumps(figures, indent=2))
    return {**figures, "loaded": str(run / "ranker.pt")}
