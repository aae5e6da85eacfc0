"""KG-R1 action time vs the raw backend call it makes, on embedded Oxigraph over MetaQA.

    python experiments/benchmarks/env_overhead.py [--n 300]

Each action is timed through ``KGEnv.step`` (parse, resolve the topic entity, query,
name, format, truncate, record the turn) and compared with the bare
``relations_out`` / ``tails`` call, median of one call each, in one run.
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import SHARED_DATA, metaqa_kb_file, metaqa_sample_heads

from kgreason.envs import make_env
from kgreason.kb import load_metaqa_kb
from kgreason.types import Entity, KBQASample


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--data", default=str(SHARED_DATA))
    args = ap.parse_args()
    kb_file = metaqa_kb_file(args.data)
    kb = load_metaqa_kb(kb_file)
    ents = metaqa_sample_heads(kb_file, args.n)
    env = make_env("kg_r1", kb, max_turns=10 ** 6)
    rows = []
    for fn, raw in (("get_tail_relations", lambda e, r: kb.relations_out(e)),
                    ("get_tail_entities", lambda e, r: kb.tails(e, r))):
        t_env, t_raw = [], []
        for e in ents:
            rel = kb.relations_out(e)[0]
            env.reset(KBQASample(id=e, question="?", topic_entities=[Entity(e, e)]))
            call = f'get_tail_relations("{e}")' if fn == "get_tail_relations" else f'get_tail_entities("{e}", "{rel}")'
            text = f"<think>look</think><kg-query>{call}</kg-query>"
            t0 = time.perf_counter()
            raw(e, rel)
            t_raw.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            r = env.step(text)
            t_env.append(time.perf_counter() - t0)
            assert r.info["error"] is None, r.observation
        rows.append((fn, statistics.median(t_raw) * 1e3, statistics.median(t_env) * 1e3))
    print(f"MetaQA KG on embedded Oxigraph, {args.n} random entities, medians")
    print("| action | raw backend call ms | KGEnv.step ms | ratio |\n|---|---|---|---|")
    for fn, a, b in rows:
        print(f"| {fn} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
