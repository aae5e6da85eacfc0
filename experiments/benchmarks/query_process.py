"""What a killable query costs: embedded Oxigraph's timed queries in a worker process vs here.

    python experiments/benchmarks/query_process.py [--n 200]

``OxigraphKB.select`` with a time budget runs the query in a worker process that a timeout
kills (kgreason/kb/query_process.py); before, it ran on a thread of this process and a
timed-out query kept running. Side by side on the demo KG, the same queries run here
(``_select`` with no budget: the engine call alone) and through the worker: median
milliseconds per query and the ratio, for one-row lookups, 100-row answers, 1,000-row
answers and an aggregate; then the worker's start-up time and the time from a timeout to
the next answer (a new worker).
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import median_ms

from kgreason.data.demo import load_demo_kb
from kgreason.kb import KBTimeout

NS = "http://rdf.freebase.com/ns/"
QUERIES = {
    "1 row": f"SELECT ?n WHERE {{ ?s <{NS}type.object.name> ?n }} LIMIT 1",
    "100 rows": f"SELECT ?s ?n WHERE {{ ?s <{NS}type.object.name> ?n }} LIMIT 100",
    "1,000 rows": "SELECT ?s ?r ?o WHERE { ?s ?r ?o } LIMIT 1000",
    "COUNT": f"SELECT (COUNT(*) AS ?c) WHERE {{ ?s <{NS}type.object.type> ?t }}",
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="repetitions per query")
    args = ap.parse_args()
    kb = load_demo_kb()
    t0 = time.perf_counter()
    kb.select(QUERIES["1 row"])
    start_ms = (time.perf_counter() - t0) * 1000
    print(f"demo KG, {len(kb)} triples; {args.n} runs per query; medians in ms\n")
    print("| query | in this process | worker process | ratio |")
    print("|---|---|---|---|")
    for name, q in QUERIES.items():
        here = median_ms(kb._select, [(q, None, 10_001)] * args.n)
        worker = median_ms(kb.select, [(q,)] * args.n)
        print(f"| {name} | {here:.2f} | {worker:.2f} | {worker / here:.1f}× |")
    recover = []
    for _ in range(3):
        try:
            kb.select("SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }", timeout_s=0.1)
        except KBTimeout:
            t0 = time.perf_counter()
            kb.select(QUERIES["1 row"])
            recover.append((time.perf_counter() - t0) * 1000)
    print(f"\nfirst timed query (starts the worker): {start_ms:.0f} ms; "
          f"next answer after a timeout (a new worker): median {statistics.median(recover):.0f} ms")
    kb.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
