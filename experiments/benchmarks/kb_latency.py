"""Median latency of the one-hop helpers per backend on the MetaQA KG, side by side.

    python experiments/benchmarks/kb_latency.py [--n 300] [--data ../shared/data]

Backends: embedded Oxigraph (default), in-memory triple store, Oxigraph server and
Virtuoso over HTTP (each started on loopback by this script; skipped when missing; Virtuoso
both unisolated and in its own network namespace, the relay's cost side by side).
Prints a Markdown table with medians in milliseconds and ratios to embedded Oxigraph.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import SHARED_DATA, median_ms, metaqa_kb_file, metaqa_sample_heads

from kgreason.kb import (
    METAQA,
    SparqlEndpointKB,
    load_metaqa_kb,
    netns,
    read_metaqa_triples,
    write_ntriples,
)
from kgreason.kb.servers import OxigraphServer, VirtuosoServer


def measure(kb, ents, pairs) -> tuple[float, float]:
    for e in ents[:20]:  # warm-up (Virtuoso compiles each new query text)
        kb.relations_out(e)
    return median_ms(kb.relations_out, [(e,) for e in ents]), median_ms(kb.tails, pairs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--data", default=str(SHARED_DATA))
    args = ap.parse_args()
    kb_file = metaqa_kb_file(args.data)
    t0 = time.perf_counter()
    emb = load_metaqa_kb(kb_file)
    load_s = time.perf_counter() - t0
    ents = metaqa_sample_heads(kb_file, args.n)
    pairs = [(e, emb.relations_out(e)[0]) for e in ents]
    rows = [("embedded Oxigraph", *measure(emb, ents, pairs), f"{load_s:.1f} s load")]
    t0 = time.perf_counter()
    ts = load_metaqa_kb(kb_file, backend="triplestore")
    rows.append(("triple store (dicts)", *measure(ts, ents, pairs), f"{time.perf_counter() - t0:.1f} s load"))
    with tempfile.TemporaryDirectory() as d:
        nt = Path(d) / "metaqa.nt"
        write_ntriples(read_metaqa_triples(kb_file), nt, schema=METAQA)
        if shutil.which("oxigraph") or (Path(sys.executable).parent / "oxigraph").exists():
            t0 = time.perf_counter()
            with OxigraphServer.from_file(nt) as srv:
                rows.append(("Oxigraph server (HTTP)",
                             *measure(SparqlEndpointKB(srv.url, schema=METAQA), ents, pairs),
                             f"{time.perf_counter() - t0:.1f} s load+start"))
        if shutil.which("virtuoso-t"):
            # unisolated, and in its own network namespace behind the port relay (the default)
            for sandbox in [False] + [True] * netns.available():
                t0 = time.perf_counter()
                with VirtuosoServer(nt, sandbox=sandbox) as srv:
                    rows.append((f"Virtuoso 7 (HTTP{', network namespace' if sandbox else ''})",
                                 *measure(SparqlEndpointKB(srv.url, schema=METAQA), ents, pairs),
                                 f"{time.perf_counter() - t0:.1f} s load+start"))
    base_r, base_t = rows[0][1], rows[0][2]
    print(f"MetaQA KG, {args.n} random head entities, median of one call each")
    print("| backend | relations_out ms | tails ms | × embedded (relations_out / tails) | setup |")
    print("|---|---|---|---|---|")
    for name, r, t, note in rows:
        print(f"| {name} | {r:.3f} | {t:.3f} | {r / base_r:.2f} / {t / base_t:.2f} | {note} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
