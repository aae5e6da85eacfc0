"""The mixing matrix: every combination of the shipped options along six axes, judged by the
parts' declarations and, where allowed, played.

Axes: action space (``env``) × ``reward`` × ``rollout`` × ``ranker`` × ``cold_start`` ×
KB backend (the demo KG on embedded Oxigraph, TSV and RDF-file copies of it, MetaQA with
its questions). A cell is **refused** when :func:`kgreason.compat.problems` names a
problem, else **allowed**; :func:`play` plays an allowed cell for real: the env passes
:func:`~kgreason.testing.check_env`, the action space's gold policy plays a question,
the cell's rollout replays that episode through the real experience source with the
cell's reward (which must not be zero on every sample), and the cell's cold start builds
at least one episode. A cell whose ranker reads the action space's candidates through an
adapter (a graph ranker on a flat list) counts as **adapted**.

``python -m kgreason.matrix`` prints the counts and the table of docs/architecture.md.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from kgreason.compat import Composition, option_names, option_node, problems
from kgreason.config import compose_config
from kgreason.rollout.engine import Engine, Generation
from kgreason.types import KBQASample, Trajectory

#: the KB backends of the matrix: the kb option and the data option each uses
KBS = {"demo": ("demo", "demo"), "tsv": ("tsv", "demo"), "rdf": ("rdf", "demo"), "metaqa": ("metaqa", "metaqa_1hop")}
#: the objective a rollout kind trains with (the objective is not an axis: it follows the rollout)
OBJECTIVE = {"linear": "grpo", "tree": "tree_step"}


@dataclass(frozen=True)
class Cell:
    """One combination of options (``ranker="none"``: no ranker)."""

    env: str
    reward: str
    rollout: str
    ranker: str
    cold_start: str
    kb: str

    def __str__(self) -> str:
        return " ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


def axes() -> dict[str, list[str]]:
    """The values of each axis."""
    return {"env": option_names("env"), "reward": option_names("reward"), "rollout": option_names("rollout"),
            "ranker": ["none", *option_names("ranker")], "cold_start": option_names("cold_start"), "kb": list(KBS)}


def kb_copies(folder: str | Path) -> dict[str, dict[str, Any]]:
    """The demo KG written as TSV and as N-Triples in ``folder``: the ``kb`` node of each copy."""
    from kgreason.data.demo import write_demo_ntriples
    from kgreason.data.demo.kg import build_demo_kg

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    nt = folder / "demo.nt"
    write_demo_ntriples(nt)
    literal = set()
    with open(folder / "demo.tsv", "w", encoding="utf-8") as f:
        for h, r, t in build_demo_kg().triples:
            if not isinstance(t, str):
                literal.add(r)
                t = t.value
            f.write(f"{h}\t{r}\t{t}\n")
    return {"tsv": {"path": str(folder / "demo.tsv"), "schema": "freebase", "literal_relations": sorted(literal)},
            "rdf": {"path": str(nt), "schema": "freebase"}}


class Matrix:
    """The matrix over one base config (``preset=smoke``), with the KB copies in ``folder``.

    Args:
        folder: where the TSV and RDF copies of the demo KG are written.
        metaqa: include the MetaQA column (its files are read from the shared data).
    """

    def __init__(self, folder: str | Path, metaqa: bool = True):
        self.kbs = {k: v for k, v in KBS.items() if metaqa or k != "metaqa"}
        copies = kb_copies(folder)
        self.base = {kb: self._base(kb_option, data_option, copies.get(kb))
                     for kb, (kb_option, data_option) in self.kbs.items()}
        self._verdicts: dict[Cell, list[str]] = {}
        self._adapted: dict[Cell, bool] = {}

    @staticmethod
    def _base(kb_option: str, data_option: str, copy: dict[str, Any] | None) -> DictConfig:
        overrides = ["preset=smoke", f"kb={kb_option}", f"data={data_option}"]
        if data_option == "metaqa_1hop":
            overrides.append("data.hops=[1,2]")
        cfg = compose_config(overrides)
        OmegaConf.set_struct(cfg, False)  # the cells set groups the base leaves out (ranker)
        if copy:
            cfg.kb.update(copy)
        return cfg

    def cells(self) -> Iterator[Cell]:
        a = axes()
        a["kb"] = list(self.kbs)
        for values in itertools.product(*a.values()):
            yield Cell(*values)

    def config(self, cell: Cell) -> DictConfig:
        """The composed config of ``cell``."""
        cfg = self.base[cell.kb].copy()
        cfg.env = option_node("env", cell.env)
        cfg.reward = option_node("reward", cell.reward)
        cfg.rollout = option_node("rollout", cell.rollout)
        cfg.objective = option_node("objective", OBJECTIVE[cell.rollout])
        cfg.ranker = None if cell.ranker == "none" else option_node("ranker", cell.ranker)
        cfg.cold_start = option_node("cold_start", cell.cold_start)
        return cfg

    def composition(self, cell: Cell) -> Composition:
        """The declarations of ``cell``'s parts (read from the option files, no config composed)."""
        base = self.base[cell.kb]
        return Composition.of(env=option_node("env", cell.env), rollout=option_node("rollout", cell.rollout),
                              ranker=None if cell.ranker == "none" else option_node("ranker", cell.ranker),
                              reward=option_node("reward", cell.reward),
                              objective=option_node("objective", OBJECTIVE[cell.rollout]),
                              cold_start=option_node("cold_start", cell.cold_start),
                              ranker_training=base.ranker_training, kb=base.kb, data=base.data)

    def judge(self, cell: Cell) -> list[str]:
        """Why ``cell`` is refused (``[]``: allowed)."""
        if cell not in self._verdicts:
            c = self.composition(cell)  # read once: the verdict and the adapter flag share it
            self._verdicts[cell] = problems(c)
            offered = set(c.space_facts.get("contexts") or ())
            self._adapted[cell] = bool(c.ranker is not None and offered
                                       and not offered & set(c.ranker_facts.get("contexts") or ()))
        return self._verdicts[cell]

    def adapted(self, cell: Cell) -> bool:
        """Whether ``cell``'s ranker reads the action space's candidates through an adapter."""
        self.judge(cell)
        return self._adapted[cell]


# ----------------------------------------------------------------------------- playing
class ReplayEngine(Engine):
    """An engine that writes a scripted episode's turns: for a prompt, the next turn of the
    episode whose question it holds (the turns already in the prompt are skipped).

    Args:
        tokenizer: the policy's tokenizer (prompts are decoded with it).
        episodes: question text → the policy turns to write, in order.
    """

    def __init__(self, tokenizer: Any, episodes: dict[str, Sequence[str]]):
        self.tokenizer = tokenizer
        self.episodes = {q: list(t) for q, t in sorted(episodes.items(), key=lambda kv: -len(kv[0]))}

    def generate(self, prompts: Sequence[Sequence[int]], stop: Sequence[str] = (),
                 max_new_tokens: int = 256, greedy: bool = False) -> list[Generation]:
        out = []
        for ids in prompts:
            text = self.tokenizer.decode(list(ids))
            turns = next((t for q, t in self.episodes.items() if q in text), None)
            if turns is None:
                raise KeyError(f"no scripted episode for a prompt ending {text[-200:]!r}")
            k = 0
            while k < len(turns) - 1 and turns[k] in text:
                k += 1
            out.append(Generation(self.tokenizer(turns[k], add_special_tokens=False)["input_ids"], turns[k], "stop"))
        return out


@dataclass
class Played:
    """What playing a cell gave (``error``: why it failed, else ``None``)."""

    rewards: list[float]
    cold_start_episodes: int | None
    error: str | None = None


class Player:
    """Plays allowed cells, building each KB, ranker, data split and policy once.

    Args:
        matrix: the matrix whose configs it plays.
        questions: questions tried per (action space, KB) until the gold policy plays one.
    """

    def __init__(self, matrix: Matrix, questions: int = 12):
        from hydra.utils import instantiate

        self.m = matrix
        self.questions = questions
        self.policy = instantiate(next(iter(matrix.base.values())).model.policy)
        self._cache: dict[Any, Any] = {}

    def _once(self, key: Any, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _kb(self, kb: str) -> Any:
        from hydra.utils import instantiate

        return self._once(("kb", kb), lambda: instantiate(self.m.base[kb].kb))

    def _ranker(self, ranker: str) -> Any:
        from hydra.utils import instantiate

        return self._once(("ranker", ranker), lambda: None if ranker == "none" else instantiate(option_node("ranker", ranker)))

    def _train(self, kb: str) -> list[KBQASample]:
        from hydra.utils import instantiate

        def load() -> list[KBQASample]:
            cfg = self.m.base[kb].data.copy()
            cfg.train_limit = 40
            return list(instantiate(cfg)[0])

        return self._once(("train", kb), load)

    def make_env(self, cell: Cell) -> Callable[[], Any]:
        from hydra.utils import instantiate

        cfg = self.m.config(cell)
        return self._once(("env", cell.env, cell.ranker, cell.kb), lambda: instantiate(
            cfg.env, kb=self._kb(cell.kb), ranker=self._ranker(cell.ranker)))

    def gold(self, cell: Cell) -> tuple[KBQASample, Trajectory] | None:
        """A question of the cell's KB its action space's gold policy answers, with the episode."""
        from kgreason.envs import ACTION_SPACES
        from kgreason.eval import f1
        from kgreason.testing import GOLD_POLICIES

        def find() -> tuple[KBQASample, Trajectory] | None:
            make_env = self.make_env(cell)
            space = ACTION_SPACES.name_of(str(self.m.config(cell).env.space._target_))
            play = GOLD_POLICIES.get(str(space))
            for s in self._train(cell.kb)[: self.questions]:
                t = play(make_env(), s, random.Random(0))
                if t is not None and f1(t.answer, s.answers) == 1.0:
                    return s, t
            return None

        return self._once(("gold", cell.env, cell.ranker, cell.kb), find)

    def contract(self, cell: Cell) -> None:
        """``check_env`` on the cell's environment (once per action space, ranker and KB)."""
        from kgreason.testing import check_env

        def check() -> bool:
            gold = self.gold(cell)
            check_env(self.make_env(cell)(), gold[0] if gold else None)
            return True

        self._once(("contract", cell.env, cell.ranker, cell.kb), check)

    def cold_start(self, cell: Cell) -> int:
        """Episodes the cell's cold start builds from a few questions."""
        from hydra.utils import instantiate

        def build() -> int:
            cs = instantiate(self.m.config(cell).cold_start, _convert_="all")
            return len(cs.build(self._train(cell.kb)[: self.questions], self.make_env(cell), self.policy))

        return self._once(("cold_start", cell.cold_start, cell.env, cell.ranker, cell.kb), build)

    def play(self, cell: Cell) -> Played:
        """Play an allowed cell (see the module docstring)."""
        from hydra.utils import instantiate

        try:
            self.contract(cell)
            gold = self.gold(cell)
            if gold is None:
                return Played([], None, f"the gold policy answers none of the first {self.questions} questions")
            sample, episode = gold
            cfg = self.m.config(cell)
            engine = ReplayEngine(self.policy.tokenizer, {sample.question: [t.text for t in episode.turns]})
            source = instantiate(cfg.rollout, engine=engine, policy=self.policy, reward=instantiate(cfg.reward),
                                 max_new_tokens=512, _convert_="all")
            exp = source.collect([sample], self.make_env(cell), step=0)
            rewards = [t.reward for t in exp.samples]
            n_cold = self.cold_start(cell)
        except Exception as e:  # noqa: BLE001 - a cell that crashes is reported, with its cause
            return Played([], None, f"{type(e).__name__}: {e}")
        if not any(rewards):
            return Played(rewards, n_cold, "the reward is 0 on every sample of a gold episode")
        if n_cold == 0 and cell.cold_start != "none":
            return Played(rewards, n_cold, "the cold start built no episode")
        return Played(rewards, n_cold)


# ----------------------------------------------------------------------------- the table
def summary(matrix: Matrix) -> dict[str, Any]:
    """Counts of allowed, refused and adapted cells, and the allowed cells per action space."""
    counts: Counter[str] = Counter()
    by_space: dict[str, Counter[str]] = {}
    for cell in matrix.cells():
        refused = bool(matrix.judge(cell))
        key = "refused" if refused else "allowed"
        counts[key] += 1
        row = by_space.setdefault(cell.env, Counter())
        row[key] += 1
        if not refused and matrix.adapted(cell):
            counts["adapted"] += 1
            row["adapted"] += 1
        if not refused:
            for axis in ("reward", "rollout", "ranker", "cold_start", "kb"):
                row[f"{axis}={getattr(cell, axis)}"] += 1
    return {"counts": dict(counts), "by_space": by_space}


def markdown(matrix: Matrix) -> str:
    """The table of docs/architecture.md: for each action space, the options each axis allows."""
    s = summary(matrix)
    a = axes()
    lines = ["| action space | allowed | refused | adapted | rewards | rollouts | rankers | cold starts | KBs |",
             "|---|---|---|---|---|---|---|---|---|"]
    for space, row in sorted(s["by_space"].items()):
        cols = [", ".join(v for v in a[axis] if row[f"{axis}={v}"]) or "—"
                for axis in ("reward", "rollout", "ranker", "cold_start")]
        kbs = ", ".join(k for k in matrix.kbs if row[f"kb={k}"]) or "—"
        lines.append(f"| `{space}` | {row['allowed']} | {row['refused']} | {row['adapted']} | " + " | ".join(cols)
                     + f" | {kbs} |")
    c = s["counts"]
    lines.append(f"| **all** | **{c.get('allowed', 0)}** | **{c.get('refused', 0)}** | **{c.get('adapted', 0)}** "
                 "| | | | | |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(prog="python -m kgreason.matrix", description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-metaqa", action="store_true", help="leave the MetaQA column out")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        print(markdown(Matrix(tmp, metaqa=not args.no_metaqa)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
