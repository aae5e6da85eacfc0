"""Start and stop local SPARQL servers on loopback (Oxigraph server, Virtuoso).

Both are context managers owning one process, stopped by PID. They bind 127.0.0.1 only.

Example::

    with OxigraphServer.from_file("kg.nt") as srv:
        kb = SparqlEndpointKB(srv.url)
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from kgreason.errors import KBQueryError, KBUnavailable
from kgreason.kb import limits, netns
from kgreason.kb.base import Row
from kgreason.kb.endpoint import SparqlEndpointKB

log = logging.getLogger(__name__)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, timeout_s: float, log: Path | None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-800:] if log and log.exists() else ""
            raise KBUnavailable(f"server exited with code {proc.returncode}: {tail}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise KBUnavailable(f"server did not answer {url} within {timeout_s}s")


def _stop(proc: subprocess.Popen | None, timeout_s: float = 10.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class OxigraphServer:
    """``oxigraph serve-read-only`` over a store directory (needs the ``oxigraph`` wheel).

    ``timeout_s`` is the server's own limit per query: a client that gave up on a query
    (``KBTimeout``) does not stop it, the server's limit does. ``sandbox`` runs it in a
    network namespace of its own with its port relayed to 127.0.0.1
    (:mod:`kgreason.kb.netns`), so a federated query that got past the guard reaches no
    host: ``None`` where the host can, ``True`` always, ``False`` never.
    ``memory_limit_mb`` caps its data (:mod:`kgreason.kb.limits`): a query that builds
    gigabytes ends the server, which its owner restarts, not the host's memory (``None``:
    no cap).
    """

    def __init__(self, location: str | Path, port: int | None = None, timeout_s: float | None = 30,
                 sandbox: bool | None = None, memory_limit_mb: int | None = limits.SERVER_MB):
        self.binary = shutil.which("oxigraph") or _venv_bin("oxigraph")
        if self.binary is None:
            raise KBUnavailable("the `oxigraph` binary is missing: pip install oxigraph")
        self.location = Path(location)
        self.port = port or free_port()
        self.timeout_s = timeout_s
        self.sandbox = netns.wanted(sandbox)
        self.memory_limit_mb = memory_limit_mb
        self.proc: subprocess.Popen | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        #: times :meth:`restart` brought the server back
        self.restarts = 0

    @classmethod
    def from_file(cls, rdf_file: str | Path, **kw) -> OxigraphServer:
        """Load ``rdf_file`` into a fresh temporary store directory."""
        tmp = tempfile.TemporaryDirectory(prefix="kgr-oxigraph-")
        binary = shutil.which("oxigraph") or _venv_bin("oxigraph")
        if binary is None:
            tmp.cleanup()
            raise KBUnavailable("the `oxigraph` binary is missing: pip install oxigraph")
        subprocess.run(
            [binary, "load", "--location", tmp.name, "--file", str(rdf_file)],
            check=True, capture_output=True,
        )
        srv = cls(tmp.name, **kw)
        srv._tmp = tmp
        return srv

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/query"

    def start(self) -> OxigraphServer:
        cmd = [self.binary, "serve-read-only", "--location", str(self.location),
               "--bind", f"127.0.0.1:{self.port}"]
        if self.timeout_s:
            cmd += ["--timeout-s", str(math.ceil(self.timeout_s))]  # the CLI takes whole seconds
        cmd = limits.limited(cmd, self.memory_limit_mb)
        fds: tuple[int, ...] = ()
        socks = []
        if self.sandbox:
            cmd, fds, socks = netns.sandboxed({self.port: self.port}, cmd)
        try:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=fds)
        finally:
            for sock in socks:
                sock.close()
        _wait_http(self.url + "?query=ASK%7B%7D", self.proc, 30, None)
        return self

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exited(self, within_s: float = 0.0) -> bool:
        """Whether the server's process has ended, waiting up to ``within_s`` for it (its
        connections close a moment before a dying process is reaped)."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout=within_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def restart(self) -> None:
        """Start the server again on the same port and store after its process died.

        Raises:
            KBUnavailable: it does not come back, naming the server and its exit code.
        """
        code = self.proc.returncode if self.proc is not None else None
        _stop(self.proc)
        try:
            self.start()
        except (KBUnavailable, OSError) as e:
            raise KBUnavailable(f"the Oxigraph server on 127.0.0.1:{self.port} died (exit code {code}) and did "
                                f"not come back: {e}") from None
        self.restarts += 1
        log.warning("the Oxigraph server on 127.0.0.1:%d died (exit code %s); restarted (%d so far)",
                    self.port, code, self.restarts)

    def kb(self, **kw) -> ServedKB:
        """A :class:`~kgreason.kb.SparqlEndpointKB` on this server that restarts it when it
        died and asks again, once (``kw`` as for the endpoint KB)."""
        return ServedKB(self, **kw)

    def __enter__(self) -> OxigraphServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServedKB(SparqlEndpointKB):
    """The endpoint KB of a server this process owns (:meth:`OxigraphServer.kb`).

    A query that finds the server gone (``KBUnavailable`` and its process exited) restarts
    it and is asked again, once; a query the server died answering (it was alive when the
    query was sent: an allocation past its memory cap) restarts it and is a
    ``KBQueryError``, not asked again. A server that does not come back stops the run with
    a ``KBUnavailable`` naming it. Queries known to kill it never reach it: the read-only
    guard refuses them first (:mod:`kgreason.kb.guard`).
    """

    def __init__(self, owner: OxigraphServer, **kw):
        super().__init__(owner.url, **kw)
        self.owner = owner

    def _select(self, sparql: str, timeout_s: float | None, limit: int) -> list[Row]:
        was_alive = self.owner.alive
        try:
            return super()._select(sparql, timeout_s, limit)
        except KBUnavailable:
            if not self.owner.exited(within_s=1.0):
                raise  # up but unreachable or failing: not ours to mend
        code = self.owner.proc.poll() if self.owner.proc is not None else None
        self.owner.restart()
        if was_alive:  # it died answering this query: asked again, the query would kill it again
            raise KBQueryError(f"the KB server died running this query (exit code {code}); it was restarted and "
                               "the query is not asked again")
        return super()._select(sparql, timeout_s, limit)


_VIRTUOSO_INI = """\
[Database]
DatabaseFile = {d}/virtuoso.db
ErrorLogFile = {d}/virtuoso.log
LockFile = {d}/virtuoso.lck
TransactionFile = {d}/virtuoso.trx
xa_persistent_file = {d}/virtuoso.pxa
TempStorage = TempDatabase
[TempDatabase]
DatabaseFile = {d}/virtuoso-temp.db
TransactionFile = {d}/virtuoso-temp.trx
[Parameters]
ServerPort = 127.0.0.1:{isql}
DisableUnixSocket = 1
DirsAllowed = ., {d}/load
NumberOfBuffers = {buffers}
MaxDirtyBuffers = {dirty}
MaxClientConnections = 20
ThreadsPerQuery = 2
MaxQueryMem = {query_mem}M
[HTTPServer]
ServerPort = 127.0.0.1:{http}
ServerRoot = {d}/vsp
ServerThreads = 20
MaxClientConnections = 20
[SPARQL]
ResultSetMaxRows = {max_rows}
MaxQueryExecutionTime = {max_exec}
MaxQueryCostEstimationTime = 400
"""


class VirtuosoServer:
    """A throw-away Virtuoso 7 instance on loopback, loaded with one RDF file.

    Needs ``virtuoso-t`` and ``isql-vt`` (Debian: ``virtuoso-opensource-7-bin``).

    Args:
        rdf_file: N-Triples/Turtle file to load into ``graph``.
        graph: the named graph IRI queries should use with ``FROM``.
        result_max_rows: Virtuoso's ``ResultSetMaxRows`` (silent truncation above it).
        sandbox: run in a network namespace of its own (:mod:`kgreason.kb.netns`), so
            built-ins such as ``bif:http_get`` reach no host, not even this machine's
            loopback; the HTTP and isql ports are relayed to 127.0.0.1. ``False`` runs
            it unisolated (hosts without namespaces; the guard still refuses such calls).
        query_mem_mb: Virtuoso's ``MaxQueryMem``, the memory one query may take.
        memory_limit_mb: the process's data cap (:mod:`kgreason.kb.limits`); by default
            its buffers plus twice ``query_mem_mb`` plus 1 GiB. Unbounded, one query that
            doubles a string 34 times took it past 24 GB of this 24 GB host.

    Raises:
        KBUnavailable: Virtuoso is not installed, or ``sandbox`` on a host without
            network namespaces.
    """

    def __init__(self, rdf_file: str | Path, graph: str = "http://kgreason.org/graph",
                 result_max_rows: int = 1_000_000, max_exec_s: int = 60,
                 buffers: int = 170_000, sandbox: bool = True, query_mem_mb: int = 1024,
                 memory_limit_mb: int | None = None):
        self.virtuoso = shutil.which("virtuoso-t")
        self.isql = shutil.which("isql-vt")
        if not self.virtuoso or not self.isql:
            raise KBUnavailable(
                "Virtuoso is not installed: apt-get install virtuoso-opensource-7-bin"
            )
        self.rdf_file = Path(rdf_file)
        self.graph = graph
        self.result_max_rows = result_max_rows
        self.max_exec_s = max_exec_s
        self.buffers = buffers
        self.sandbox = sandbox
        self.query_mem_mb = query_mem_mb
        # its buffers (about 9 KB each) are allocated at start; queries get the rest
        self.memory_limit_mb = memory_limit_mb if memory_limit_mb is not None else \
            buffers * 9 // 1024 + 2 * query_mem_mb + 1024
        self.http_port = free_port()
        self.isql_port = free_port()
        self.proc: subprocess.Popen | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/sparql"

    def _isql(self, stmt: str) -> str:
        out = subprocess.run(
            [self.isql, f"127.0.0.1:{self.isql_port}", "dba", "dba", f"exec={stmt}"],
            capture_output=True, text=True, timeout=600,
        )
        if out.returncode != 0 or "*** Error" in out.stdout + out.stderr:
            raise KBUnavailable(f"isql failed on {stmt!r}: {out.stdout[-400:]} {out.stderr[-400:]}")
        return out.stdout

    def start(self) -> VirtuosoServer:
        self._tmp = tempfile.TemporaryDirectory(prefix="kgr-virtuoso-")
        d = Path(self._tmp.name)
        (d / "load").mkdir()
        (d / "vsp").mkdir()
        shutil.copy(self.rdf_file, d / "load" / self.rdf_file.name)
        (d / "virtuoso.ini").write_text(_VIRTUOSO_INI.format(
            d=d, isql=self.isql_port, http=self.http_port, max_rows=self.result_max_rows,
            max_exec=self.max_exec_s, buffers=self.buffers, dirty=self.buffers * 3 // 4,
            query_mem=self.query_mem_mb,
        ))
        cmd = limits.limited([self.virtuoso, "+foreground", "+configfile", str(d / "virtuoso.ini")],
                             self.memory_limit_mb)
        fds: tuple[int, ...] = ()
        socks = []
        if self.sandbox:  # the same port numbers inside the namespace and outside
            cmd, fds, socks = netns.sandboxed({p: p for p in (self.http_port, self.isql_port)}, cmd)
        try:
            self.proc = subprocess.Popen(cmd, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         pass_fds=fds)
        finally:
            for sock in socks:
                sock.close()
        try:
            _wait_http(self.url + "?query=ASK%7B%7D", self.proc, 90, d / "virtuoso.log")
            self._isql(f"ld_dir('{d}/load', '{self.rdf_file.name}', '{self.graph}');")
            self._isql("rdf_loader_run();")
            self._isql("checkpoint;")
            state = self._isql("SELECT ll_state, ll_error FROM DB.DBA.load_list;")
            if "NULL" not in state:
                raise KBUnavailable(f"Virtuoso load failed: {state[-400:]}")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(KBUnavailable, subprocess.TimeoutExpired, OSError):
                self._isql("checkpoint;")
        _stop(self.proc, timeout_s=20)
        self.proc = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> VirtuosoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _venv_bin(name: str) -> str | None:
    import sys

    p = Path(sys.executable).parent / name
    return str(p) if p.exists() and os.access(p, os.X_OK) else None
