"""Answer F1 over a one-to-one matching: same-name gold entities are not collapsed."""

from __future__ import annotations

import itertools
import random

from kgreason.eval.metrics import _max_matching, exact_match, precision_recall_f1
from kgreason.types import Entity

PARIS_FR, PARIS_TX = Entity("m.05qtj", "Paris"), Entity("m.0ftwv", "Paris")


def test_one_paris_recalls_one_of_two_gold_parises():
    assert precision_recall_f1(["Paris"], [PARIS_FR, PARIS_TX]) == (1.0, 0.5, 2 / 3)
    assert precision_recall_f1([PARIS_FR], [PARIS_FR, PARIS_TX])[1] == 0.5
    assert precision_recall_f1([PARIS_FR, PARIS_TX], [PARIS_FR, PARIS_TX]) == (1.0, 1.0, 1.0)
    assert exact_match(["Paris"], [PARIS_FR, PARIS_TX]) == 0.0


def test_repeats_still_count_once():
    assert precision_recall_f1(["Paris", "paris", PARIS_FR], [PARIS_FR]) == (1.0, 1.0, 1.0)
    assert precision_recall_f1([Entity("Paris", "Paris"), PARIS_FR], [PARIS_FR]) == (1.0, 1.0, 1.0)


def _brute_force(edges: list[set[int]], n_gold: int) -> int:
    slots = list(range(n_gold)) + [None] * len(edges)  # a prediction may stay unmatched
    return max(sum(j in e for e, j in zip(edges, perm, strict=True))
               for perm in itertools.permutations(slots, len(edges)))


def test_matching_is_maximum_on_random_graphs():
    rng = random.Random(0)
    for _ in range(300):
        n_p, n_g = rng.randint(1, 5), rng.randint(1, 5)
        pk = [{f"k{j}" for j in range(n_g) if rng.random() < 0.4} for _ in range(n_p)]
        gk = [{f"k{j}"} for j in range(n_g)]
        assert _max_matching(pk, gk) == _brute_force([{int(k[1:]) for k in p} for p in pk], n_g)


def test_a_long_augmenting_chain_needs_no_recursion():
    n = 5000  # prediction i fits gold i and i+1; greedy order forces augmenting paths
    pk = [{f"g{i}", f"g{i + 1}"} for i in range(n)]
    gk = [{f"g{i}"} for i in range(n + 1)]
    assert _max_matching(pk[::-1], gk) == n
