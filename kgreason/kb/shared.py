"""One KB server for every process of a data-parallel run (``kb=shared_oxigraph``).

``trainer=ddp`` runs one process per device, and every process builds the run's parts,
its KB among them: with an embedded store each process holds a copy of the KB. Here the
process the user started loads the KB once into an Oxigraph server
(:class:`~kgreason.kb.servers.OxigraphServer`, read-only, loopback) and publishes the
server's URL in the environment (:data:`SHARED_KB_ENV`, by served file); the processes Lightning's DDP
launcher starts at the first fit inherit that environment and connect to the same server
(a :class:`~kgreason.kb.SparqlEndpointKB`) instead of loading a store.

Who does what:

- the owner (the process that found no URL in the environment) starts the server, restarts
  it when it dies (:class:`~kgreason.kb.servers.ServedKB`), and stops it when it exits;
- every other process only connects. A query that finds the server gone is retried
  (the endpoint's retries with back-off), then is a typed
  :class:`~kgreason.errors.KBUnavailable` naming the URL, which ends that process's run
  like any other KB failure; once the owner's next query has restarted the server, the
  others' queries reach it again on the same URL.

Launchers that start every process at once (``torchrun``, SLURM's ``srun``) give no process
the chance to publish first: start one server for the job (``oxigraph serve-read-only``, or
Virtuoso) and point every process at it with ``kb=sparql_endpoint kb.url=...``, or set
:data:`SHARED_KB_ENV` for all of them.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import tempfile
from pathlib import Path

from kgreason.errors import DatasetError
from kgreason.kb.base import KnowledgeBase
from kgreason.kb.endpoint import SparqlEndpointKB
from kgreason.kb.schema import KBSchema, as_schema
from kgreason.kb.servers import OxigraphServer

log = logging.getLogger(__name__)

#: the environment variable that carries the shared servers to the other processes: JSON,
#: the served file (or ``demo``) → the server's URL
SHARED_KB_ENV = "KGREASON_SHARED_KB"

#: the servers this process owns, by served file (a sweep's jobs run in one process)
_OWNED: dict[str, OxigraphServer] = {}


def _published() -> dict[str, str]:
    try:
        found = json.loads(os.environ.get(SHARED_KB_ENV) or "{}")
    except json.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def shared_oxigraph_kb(path: str | Path | None = None, schema: KBSchema | str | dict = "freebase",
                       timeout_s: float = 30.0) -> KnowledgeBase:
    """The run's KB on one Oxigraph server shared by its processes.

    Args:
        path: an RDF file (N-Triples, Turtle, ...) to serve; None serves the demo KG.
        schema: the KB's schema (a name of :data:`kgreason.kb.schema.SCHEMAS` or its fields).
        timeout_s: the server's limit per query and the client's wait.

    Returns:
        In the owner, the served KB (it restarts the server when it dies); elsewhere an
        endpoint KB on the URL the environment carries for the same file.
    """
    schema = as_schema(schema)
    if path is not None and not Path(path).is_file():
        raise DatasetError(f"RDF file not found: {path} (kb.path)")
    key = "demo" if path is None else str(Path(path).resolve())
    server = _OWNED.get(key)
    if server is None:
        url = _published().get(key)
        if url:  # a process the owner started: connect
            log.info("KB: connected to the run's server at %s", url)
            return SparqlEndpointKB(url, timeout_s=timeout_s, schema=schema)
        server = _serve(path, timeout_s)
        log.info("KB: serving %s at %s for this run's processes", key, server.url)
        _OWNED[key] = server
        os.environ[SHARED_KB_ENV] = json.dumps({**_published(), key: server.url})
    return server.kb(timeout_s=timeout_s, schema=schema)


def _serve(path: str | Path | None, timeout_s: float) -> OxigraphServer:
    with tempfile.TemporaryDirectory(prefix="kgr-shared-kb-") as tmp:
        if path is None:
            from kgreason.data.demo import write_demo_ntriples

            path = Path(tmp) / "demo.nt"
            write_demo_ntriples(path)
        # the server reads a store directory of its own, loaded from the file
        server = OxigraphServer.from_file(path, timeout_s=timeout_s)
    server.start()
    atexit.register(server.stop)
    return server
