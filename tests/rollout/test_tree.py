"""Tree rollouts (ISP/DTPO Algorithm 1) with scripted branches on the demo KG."""

from __future__ import annotations

import random

import pytest

from kgreason.envs import make_env
from kgreason.rollout import Engine, Generation, TreeRollout

PACINO = "m.0riq63z"
NODE = f"<think>explore</think><node>{PACINO}</node>"
BIRTH = f"<think>birth place</think><sparql>SELECT ?x WHERE {{ ns:{PACINO} ns:people.person.place_of_birth ?x }}</sparql>"
BIRTH_AGAIN = (f"<think>same result, other words</think><sparql>SELECT DISTINCT ?x WHERE {{ ns:{PACINO} "
               "ns:people.person.place_of_birth ?x . }</sparql>")
NATION = f"<think>nationality</think><sparql>SELECT ?x WHERE {{ ns:{PACINO} ns:people.person.nationality ?x }}</sparql>"
EMPTY = f"<think>guess</think><sparql>SELECT ?x WHERE {{ ns:{PACINO} ns:no.such.relation ?x }}</sparql>"
BROKEN = "<think>oops</think><sparql>SELECT ?x WHERE { </sparql>"
PROSE = "I think the answer is somewhere."
ANSWER = "<think>done</think><answer>\\boxed{United States}</answer>"


class DepthScript(Engine):
    """Depth d, j-th copy of a prompt → ``scripts[d][j % len]`` (depth = observations so far)."""

    def __init__(self, tokenizer, scripts):
        self.tok, self.scripts = tokenizer, scripts

    def generate(self, prompts, stop=(), max_new_tokens=256, greedy=False):
        out, seen = [], {}
        for p in prompts:
            key = tuple(p)
            j = seen[key] = seen.get(key, -1) + 1
            text = self.tok.decode(list(p)).rsplit("<|im_start|>assistant", 1)[-1]
            depth = text.count("</relation>") + text.count("</information>")
            options = self.scripts[min(depth, len(self.scripts) - 1)]
            t = options[j % len(options)]
            out.append(Generation(self.tok(t, add_special_tokens=False)["input_ids"], t, "stop"))
        return out


def grow(tok, kb, sample, scripts, k, depth=3, **kw):
    ro = TreeRollout(DepthScript(tok, scripts), tok, lambda m: tok.apply_chat_template(
        m, tokenize=True, add_generation_prompt=True)["input_ids"], k=k, max_depth=depth, **kw)
    env = make_env("isp_dtpo", kb, max_turns=depth, cache_kb=True)
    return ro.run([env], [sample])


def test_duplicate_observations_are_pruned_and_failures_kept(tok, demo_oxigraph, pacino):
    scripts = [[NODE, NODE, BIRTH, BIRTH_AGAIN, EMPTY, EMPTY, BROKEN, PROSE], [ANSWER]]
    (tree,), stats = grow(tok, demo_oxigraph, pacino, scripts, k=8)
    first = [tree.nodes[c] for c in tree.nodes[0].children]
    # NODE twice → one; BIRTH and BIRTH_AGAIN give one result; 4 failures (3 SPARQL, prose) kept
    assert [n.kind for n in first].count("node") == 1 and [n.kind for n in first].count("sparql") == 4
    assert sum(n.failed for n in first) == 4 and len(first) == 6
    assert stats.by_depth[1]["pruned"] == 2 and stats.by_depth[1]["branches"] == 8
    # the two successful children are expanded; each answers identically 8 times → one leaf each
    answered = [n for n in tree.leaves() if n.answered]
    assert len(answered) == 2 and all(n.answer[0].id == "m.0dlu3t4" for n in answered)
    assert stats.cache_hits > 0  # the duplicated node/query ran once
    assert stats.effective_branches == pytest.approx(stats.kept / stats.expansions)
    traj = tree.trajectory(answered[0].id)
    traj.check_token_fields()
    assert sum(traj.loss_mask) == sum(len(n.gen_ids) for n in tree.path(answered[0].id))


def test_pruning_never_drops_a_distinct_success_or_any_failure(tok, demo_oxigraph, pacino):
    pool = [NODE, BIRTH, BIRTH_AGAIN, NATION, EMPTY, BROKEN, PROSE]
    rng = random.Random(0)
    for _ in range(4):
        branch = [rng.choice(pool) for _ in range(6)]
        (tree,), _ = grow(tok, demo_oxigraph, pacino, [branch, [ANSWER]], k=6, depth=2)
        kids = [tree.nodes[c] for c in tree.nodes[0].children]
        n_fail = sum(t in (EMPTY, BROKEN, PROSE) for t in branch)
        assert sum(n.failed for n in kids) == n_fail
        distinct = {"node"} & {("node" if t == NODE else None) for t in branch}
        distinct |= {("birth" if t in (BIRTH, BIRTH_AGAIN) else "nation") for t in branch if t in (BIRTH, BIRTH_AGAIN, NATION)}
        ok = [n for n in kids if not n.failed]
        assert len(ok) == len(distinct) and len({n.result_key for n in ok}) == len(ok)


def test_the_error_filter_drops_repeated_failures_and_only_those(tok, demo_oxigraph, pacino):
    """``dedup_failures`` (RQ2's "w error filter"): a failed output repeated word for word is
    kept once; distinct failures and successes are as without it."""
    branch = [EMPTY, EMPTY, BROKEN, BROKEN, PROSE, NODE, NODE, BIRTH]
    (tree,), stats = grow(tok, demo_oxigraph, pacino, [branch, [ANSWER]], k=8, depth=2, dedup_failures=True)
    kids = [tree.nodes[c] for c in tree.nodes[0].children]
    assert sorted(n.text for n in kids if n.failed) == sorted([EMPTY, BROKEN, PROSE])
    assert [n.kind for n in kids if not n.failed] == ["node", "sparql"]
    assert stats.by_depth[1]["pruned"] == 3
    (kept,), _ = grow(tok, demo_oxigraph, pacino, [branch, [ANSWER]], k=8, depth=2)
    assert sum(n.failed for n in (kept.nodes[c] for c in kept.nodes[0].children)) == 5


def test_without_pruning_every_branch_is_kept(tok, demo_oxigraph, pacino):
    (tree,), stats = grow(tok, demo_oxigraph, pacino, [[NODE, NODE, BIRTH, BIRTH_AGAIN], [ANSWER]], k=4,
                          depth=2, prune=False)
    assert len(tree.nodes[0].children) == 4 and stats.pruned == 0


def test_depth_limit_forces_an_end(tok, demo_oxigraph, pacino):
    (tree,), stats = grow(tok, demo_oxigraph, pacino, [[NODE], [NODE], [NODE]], k=2, depth=2)
    assert max(n.depth for n in tree.nodes) == 2 and all(n.finished for n in tree.leaves())
