"""Datasets normalised to :class:`~kgreason.types.KBQASample`, and the demo KG."""

from kgreason.data.datasets import DATASETS, load_dataset, metaqa_path, register_dataset
from kgreason.data.demo import load_demo_kb
from kgreason.data.splits import sample_subset, train_eval_split

__all__ = ["DATASETS", "load_dataset", "load_demo_kb", "metaqa_path", "register_dataset", "sample_subset",
           "train_eval_split"]
