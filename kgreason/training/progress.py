"""A progress bar for the RL stage: its total is the RL iterations, not ``?``."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.callbacks import TQDMProgressBar


class IterationProgressBar(TQDMProgressBar):
    """Lightning's bar over RL iterations (one per batch of questions).

    The RL stage trains on one epoch of an endless question stream, whose length Lightning
    cannot know; bounding the epoch instead (``limit_train_batches``) would end a resumed
    run whose checkpoint was taken on what was then the last batch.

    Args:
        iterations: the RL iterations the run makes in all (a resumed run's bar starts
            at the iterations already done).
    """

    def __init__(self, iterations: int, **kw: Any):
        super().__init__(**kw)
        self.iterations = iterations

    @property
    def total_train_batches(self) -> int:
        return self.iterations

    def _label(self) -> None:
        self.train_progress_bar.total = self.iterations
        self.train_progress_bar.set_description("RL iterations")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        super().on_train_start(trainer, pl_module)
        self._label()  # a run resumed mid-epoch gets no epoch start
        # resumed: start at the iterations done (its rate then counts only this run's)
        self.train_progress_bar.n = self.train_progress_bar.initial = getattr(pl_module, "iteration", 0)

    def on_train_epoch_start(self, trainer: Any, *args: Any) -> None:
        super().on_train_epoch_start(trainer, *args)
        self._label()
