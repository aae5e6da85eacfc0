"""Cap the memory a query engine's process may take, so one query cannot exhaust the host.

A timeout bounds a query's time, not its memory: a dozen chained ``BIND(CONCAT(?a, ?a)
AS ?b)`` double a string each time and reach gigabytes within seconds, as does a
``GROUP_CONCAT`` over a cross product. On a shared machine the kernel's OOM killer may
then pick the training process instead of the engine. Under ``RLIMIT_DATA`` (heap and
private anonymous mappings, Linux ≥ 4.7) the engine's allocation fails instead: the
embedded store's worker dies (:mod:`kgreason.kb.query_process`, that query becomes a
``KBQueryError``) and a served store's process exits and is restarted by its owner
(:class:`~kgreason.kb.servers.ServedKB`).

Run as a module, this file starts a command under the limit:
``python -m kgreason.kb.limits --data-mb 4096 -- oxigraph serve-read-only ...``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys

#: the embedded store's worker: at least this much, more for a large store (see :func:`worker_limit_mb`)
WORKER_MIN_MB = 2048
#: an Oxigraph server reading its store from disk
SERVER_MB = 4096


def worker_limit_mb(store_bytes: int) -> int:
    """The worker's cap for an in-memory store whose N-Quads dump has ``store_bytes``:
    loaded, such a store took 3.7x its dump (MetaQA: 25 MB of N-Quads, 93 MB of data), so
    8x it plus 1 GiB leaves room for any honest query.

    >>> worker_limit_mb(25 << 20)
    2048
    >>> worker_limit_mb(1 << 30)
    9216
    """
    return max(WORKER_MIN_MB, 1024 + 8 * (store_bytes >> 20))


def set_data_limit(mb: int | None) -> None:
    """Limit this process (and what it execs) to ``mb`` MiB of data; ``None``: no limit."""
    if mb is None:
        return
    soft_hard = (mb << 20, mb << 20)
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY and hard < soft_hard[1]:
        soft_hard = (hard, hard)
    resource.setrlimit(resource.RLIMIT_DATA, soft_hard)


def limited(cmd: list[str], mb: int | None) -> list[str]:
    """The command line that runs ``cmd`` under a data limit of ``mb`` MiB (``None``: ``cmd``)."""
    if mb is None:
        return cmd
    return [sys.executable, "-m", "kgreason.kb.limits", "--data-mb", str(mb), "--", *cmd]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m kgreason.kb.limits")
    ap.add_argument("--data-mb", type=int, required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    set_data_limit(args.data_mb)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
