"""Datasets normalised to :class:`~kgreason.types.KBQASample`, and the demo KG."""

from kgreason.data.datasets import DATASETS, load_dataset, metaqa_path, register_dataset
from kgreason.data.demo import load_demo_kb
from kgreason.data.splits import load_splits, sample_subset, stratified_subset, train_eval_split

__all__ = ["DATASETS", "load_dataset", "load_demo_kb", "load_splits", "metaqa_path", "register_dataset", "sample_subset",
           "stratified_subset", "train_eval_split"]
