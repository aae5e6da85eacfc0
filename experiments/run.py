"""Train and evaluate a method: ``python experiments/run.py method=kg_r1 preset=smoke``.

Ablations swap one group: ``python experiments/run.py -m method=kg_r1 preset=smoke reward=kg_r1,f1``.
The stages and the configs live in the package (:mod:`kgreason.pipeline`,
``kgreason/conf``); ``kgreason-run`` is the same command from an installed wheel.
"""

from kgreason.pipeline import cli

if __name__ == "__main__":
    cli()
