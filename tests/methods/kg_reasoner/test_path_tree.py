"""KG-Reasoner's explored path tree on the paper's Figure 4 shape (6 entities)."""

from __future__ import annotations

from kgreason.methods.kg_reasoner.path_tree import PathTree


def figure_4():
    # e1 → {e2, e3}; e2 → {e4, e5, e6}; the path e1 → e2 → e5 turns out wrong
    t = PathTree("e1")
    t.expand(["e2", "e3"])
    t.visit("e2")
    t.expand(["e5", "e4", "e6"])
    t.visit("e5")
    return t


def test_backtrack_offers_the_parents_next_best_candidates_in_rank_order():
    t = figure_4()
    assert t.backtrack() == ("e2", "e4") and t.current.entity == "e2"
    t.visit("e4")
    assert t.backtrack() == ("e2", "e6")
    assert [n.entity for n in t.root.children["e2"].children.values() if n.dead] == ["e5", "e4"]


def test_an_exhausted_parent_climbs_to_the_topic_entity_and_stops_there():
    t = figure_4()
    assert t.backtrack() == ("e2", "e4")
    assert t.backtrack() == ("e2", "e6")  # the offer of e4 turned down: the next one
    assert t.backtrack() == ("e1", "e3") and t.root.children["e2"].dead
    assert t.backtrack() == ("e1", None) and t.current is t.root
    assert t.backtrack() == ("e1", None)  # idempotent at the top


def test_no_cycles_and_jumps_back_along_the_path():
    t = PathTree("a")
    t.expand(["b"])
    t.visit("b")
    t.expand(["a", "c"])  # the topic entity is a neighbour of b: never offered
    t.visit("c")
    assert t.backtrack() == ("a", None)  # b offers neither c (dead) nor a (on the path)
    assert t.current is t.root and t.root.children["b"].dead
    t2 = PathTree("a")
    t2.expand(["b"])
    t2.visit("b")
    assert t2.locate("a") is t2.root and t2.locate("z") is None
    assert t2.visit("b") is not t2.root.children["b"]  # b under b: a new node, its own branch
